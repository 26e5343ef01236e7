//! What the command prints: the model's view of a settlement, its JSON record, and tool lists.

use serde_json::{Value, json};
use tackle_core::Content;
use tackle_registry::{Outcome, Settlement, Turn};

/// The text the model would see, or `None` when the outcome is for the host.
///
/// Text parts are joined with a newline; media parts become a one-line placeholder. A success
/// with no content shows its structured output, as the model would see it.
pub(crate) fn model_text(settlement: &Settlement) -> Option<String> {
    let result = settlement.model_result()?;
    if result.content.is_empty() {
        return Some(match result.structured {
            Some(Value::Null) | None => String::new(),
            Some(Value::String(text)) => text,
            Some(value) => value.to_string(),
        });
    }
    let parts: Vec<String> = result.content.iter().map(content_line).collect();
    Some(parts.join("\n"))
}

fn content_line(content: &Content) -> String {
    match content {
        Content::Text { text } => text.clone(),
        Content::Media {
            mime_type,
            data_base64,
            ..
        } => format!("[media: {mime_type}, {} bytes base64]", data_base64.len()),
    }
}

/// The operational problem for stderr, when the outcome is not a model result.
pub(crate) fn operational_problem(settlement: &Settlement) -> Option<String> {
    match &settlement.outcome {
        Outcome::Success(_) | Outcome::Error(_) => None,
        Outcome::Interrupted(why) => Some(format!("{settlement}: the call was interrupted: {why}")),
        Outcome::Defect(defect) => Some(format!("{settlement}: {defect}")),
    }
}

/// The whole settlement as pretty JSON.
pub(crate) fn settlement_json(settlement: &Settlement) -> anyhow::Result<String> {
    let defect = match &settlement.outcome {
        Outcome::Defect(defect) => Some(defect.to_string()),
        _ => None,
    };
    let record = json!({
        "identity": settlement.identity,
        "tool": settlement.tool,
        "registration": settlement.registration.map(|r| r.get()),
        "outcome": settlement.outcome.kind(),
        "defect": defect,
        "model_result": settlement.model_result(),
        "managed": settlement.managed,
        "timings": timings_ms(&settlement.timings),
        "adjustments": settlement.adjustments,
        "annotations": settlement.annotations,
    });
    Ok(serde_json::to_string_pretty(&record)?)
}

/// Each phase's duration as milliseconds (fractions to the microsecond), under `<phase>_ms`.
fn timings_ms(timings: &tackle_core::PhaseTimings) -> serde_json::Value {
    let ms = |d: std::time::Duration| (d.as_micros() as f64) / 1000.0;
    json!({
        "resolve_ms": ms(timings.resolve),
        "decode_ms": ms(timings.decode),
        "execute_ms": ms(timings.execute),
        "encode_ms": ms(timings.encode),
        "project_ms": ms(timings.project),
        "bound_ms": ms(timings.bound),
    })
}

/// One line per advertised tool: `name: first line of description`, sorted by name.
pub(crate) fn tools_plain(turn: &Turn) -> String {
    let mut lines: Vec<String> = turn
        .tools()
        .iter()
        .map(|tool| {
            let description = tool.definition().description.lines().next().unwrap_or("");
            format!("{}: {description}", tool.name())
        })
        .collect();
    lines.sort();
    lines.join("\n")
}

/// The advertised tools as a JSON array of `{name, description, inputSchema}`.
pub(crate) fn tools_json(turn: &Turn) -> anyhow::Result<String> {
    let tools: Vec<Value> = turn
        .tools()
        .iter()
        .map(|tool| {
            let definition = tool.definition();
            json!({
                "name": tool.name(),
                "description": &*definition.description,
                "inputSchema": definition.input_schema(),
            })
        })
        .collect();
    Ok(serde_json::to_string_pretty(&tools)?)
}

/// The tools of a turn materialized for a provider, in that provider's tool-definition shape.
/// A tool the provider cannot express was left out of the turn; it is reported on stderr.
pub(crate) fn tools_provider(turn: &Turn) -> anyhow::Result<String> {
    for error in turn.incompatible() {
        eprintln!("tackle: skipped a tool: {error}");
    }
    Ok(serde_json::to_string_pretty(&serde_json::Value::Array(
        turn.export(),
    ))?)
}

/// Unix milliseconds as `YYYY-MM-DD HH:MM:SS UTC`.
pub(crate) fn timestamp(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

#[cfg(test)]
mod timestamp_tests {
    #[test]
    fn timestamps_are_civil_utc() {
        assert_eq!(super::timestamp(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(
            super::timestamp(1_795_693_478_000),
            "2026-11-26 11:44:38 UTC"
        );
        assert_eq!(super::timestamp(951_782_400_000), "2000-02-29 00:00:00 UTC");
    }
}
