//! Workspace trust from the command line: `tackle trust` shows what trusting the project's
//! configuration enables and records it; an interactive `tackle call` asks once on the terminal.

use std::io::{BufRead, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;
use tackle_host::config::{self, Config};
use tackle_host::{ProjectTrust, TrustStore};

/// The trust record of the data directory the command uses (`--data-dir`, else the default,
/// as `main` resolved it); one that trusts nothing when no data directory is known.
pub(crate) fn store(data_dir: Option<&Path>) -> TrustStore {
    match data_dir {
        Some(dir) => TrustStore::in_data_dir(dir),
        None => TrustStore::nothing(),
    }
}

/// `tackle trust`: prints what trusting this project's configuration enables, then records it.
pub(crate) fn trust_command(
    root: &Path,
    flag: Option<&Path>,
    store: &TrustStore,
) -> anyhow::Result<ExitCode> {
    let config = config::load(root, flag, store).map_err(|problems| {
        anyhow::Error::new(problems).context("invalid configuration; nothing was trusted")
    })?;
    let Some(trust) = config.trust() else {
        println!(
            "{} has no project configuration (.tackle/config.json, opencode.json, \
             .tackle/tools/*.json); there is nothing to trust",
            root.display()
        );
        return Ok(ExitCode::SUCCESS);
    };
    for line in what_trust_enables(trust) {
        println!("{line}");
    }
    record(store, trust)?;
    println!(
        "Trusted {} (configuration {}). A change to it asks again.",
        trust.root.display(),
        trust.hash
    );
    Ok(ExitCode::SUCCESS)
}

/// What trusting the configuration enables and what stays ignored even then, one line each:
/// what `tackle trust` prints and what `serve` asks the person through the client.
pub(crate) fn what_trust_enables(trust: &ProjectTrust) -> Vec<String> {
    let enables = trust.describe();
    let mut lines = if enables.is_empty() {
        vec![
            "Nothing in this project's configuration waits for trust: it only narrows what \
             may run."
                .to_owned(),
        ]
    } else {
        std::iter::once("Trusting this project's configuration enables:".to_owned())
            .chain(enables)
            .collect()
    };
    let never: Vec<String> = trust
        .ignored()
        .filter(|held| held.reason == tackle_host::trust::HeldReason::NeverGranted)
        .map(|held| format!("  {held}"))
        .collect();
    if !never.is_empty() {
        lines.push("Ignored even when trusted:".to_owned());
        lines.extend(never);
    }
    lines
}

pub(crate) fn record(store: &TrustStore, trust: &ProjectTrust) -> anyhow::Result<()> {
    store
        .record(&trust.root, &trust.hash)
        .context("cannot record the trust decision in the data directory")
}

/// For an interactive `tackle call`: when the project's configuration waits for trust, shows
/// what trusting enables on stderr and asks once. A yes is recorded, and the configuration is
/// read again with it; anything else keeps the untrusted parts ignored for this run.
pub(crate) fn ask_on_terminal(
    config: Config,
    root: &Path,
    flag: Option<&Path>,
    store: &TrustStore,
) -> anyhow::Result<Config> {
    let Some(trust) = config.trust().filter(|trust| trust.needs_trust()) else {
        return Ok(config);
    };
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(
        stderr,
        "This project's configuration is not trusted. Trusting it enables:"
    );
    for line in trust.describe() {
        let _ = writeln!(stderr, "{line}");
    }
    let _ = write!(
        stderr,
        "Trust it (recorded until it changes)? [y]es / [N]o, ignore those settings "
    );
    let _ = stderr.flush();
    let mut answer = String::new();
    let read = std::io::stdin().lock().read_line(&mut answer);
    if read.is_err() || !matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes") {
        return Ok(config);
    }
    record(store, trust)?;
    config::load(root, flag, store)
        .map_err(|problems| anyhow::Error::new(problems).context("invalid configuration"))
}

/// What `config check` adds about trust: the ignored settings, each with why, and the remedy.
pub(crate) fn check_lines(config: &Config) -> Vec<String> {
    let Some(trust) = config.trust() else {
        return Vec::new();
    };
    let ignored: Vec<String> = trust.ignored().map(|held| format!("  {held}")).collect();
    let mut lines = Vec::new();
    if trust.needs_trust() {
        lines.push(format!(
            "project configuration: not trusted; run `tackle trust --root {}` to apply what \
             is ignored:",
            trust.root.display()
        ));
    } else if trust.trusted {
        lines.push(format!("project configuration: trusted ({})", trust.hash));
    } else {
        lines.push("project configuration: nothing in it waits for trust".to_owned());
    }
    if !ignored.is_empty() {
        if !trust.needs_trust() {
            lines.push("ignored:".to_owned());
        }
        lines.extend(ignored);
    }
    lines
}

/// What `config check --json` adds about trust.
pub(crate) fn check_json(config: &Config) -> serde_json::Value {
    match config.trust() {
        None => serde_json::Value::Null,
        Some(trust) => serde_json::json!({
            "root": trust.root.display().to_string(),
            "hash": trust.hash.as_str(),
            "trusted": trust.trusted,
            "files": trust.files.iter().map(|f| f.path.display().to_string()).collect::<Vec<_>>(),
            "ignored": trust.ignored().map(tackle_host::trust::Held::to_json).collect::<Vec<_>>(),
        }),
    }
}
