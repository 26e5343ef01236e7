//! The question tool: asks the user multiple-choice questions through the host's
//! [`QuestionAsker`] and returns the chosen labels.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use tackle_core::names::Permission;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tackle_core::{AnyTool, Context, State, Tool, ToolFailure};

use super::ToolEnv;
use crate::gate::Ask;

#[cfg(test)]
mod tests;

/// The longest header, in characters.
pub const MAX_HEADER_CHARS: usize = 30;

const DESCRIPTION: &str = "Ask the user questions and wait for the answers.\n\
- Use it when you need the user's preference or a decision you cannot make from the code: \
which approach to take, what to name something, which of several readings of a request is meant.\n\
- Each question has a header (a label of at most 30 characters), the question, options (each a \
label of 1-5 words and a description) and multiple (true to allow several choices).\n\
- Put the recommended option first and say so in its description.\n\
- Ask several related questions in one call rather than one after another.\n\
- The user may dismiss the questions; then continue without an answer, or ask differently.";

/// One choice offered for a question.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QuestionOption {
    /// The choice as the user sees it, in 1-5 words.
    #[schemars(length(min = 1))]
    pub label: String,
    /// What choosing it means.
    pub description: String,
}

/// One question for the user.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Question {
    /// A short label for the question, at most 30 characters.
    #[schemars(length(min = 1, max = 30))]
    pub header: String,
    /// The full question.
    #[schemars(length(min = 1))]
    pub question: String,
    /// The choices offered.
    pub options: Vec<QuestionOption>,
    /// True when the user may choose several options.
    #[serde(default)]
    pub multiple: bool,
}

/// How the user responded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// The chosen labels, one list per question, in question order. An empty list means the
    /// question was left unanswered.
    Answered(Vec<Vec<String>>),
    /// The user dismissed the questions without answering.
    Dismissed,
}

/// The future a [`QuestionAsker`] returns.
pub type AskFuture<'a> = Pin<Box<dyn Future<Output = Answer> + Send + 'a>>;

/// The host's way of putting questions to the user.
///
/// Be careful when:
/// - implementing `ask`. The tool drops the future when the call is cancelled, so clean up
///   anything shown to the user on drop rather than after the await.
pub trait QuestionAsker: Send + Sync + 'static {
    /// Shows `questions` to the user of `session` and resolves with the answers.
    fn ask<'a>(&'a self, session: &'a str, questions: &'a [Question]) -> AskFuture<'a>;
}

/// Arguments of the question tool.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QuestionInput {
    /// The questions to ask, in order.
    #[schemars(length(min = 1))]
    pub questions: Vec<Question>,
}

/// The answer to one question.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QuestionAnswer {
    /// The question's header.
    pub header: String,
    /// The labels the user chose; empty when the question was left unanswered.
    pub labels: Vec<String>,
}

/// The result of the question tool.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QuestionOutput {
    /// What the model reads.
    pub output: String,
    /// True when the user dismissed the questions.
    pub dismissed: bool,
    /// The answers, one per question, in order; empty when dismissed.
    pub answers: Vec<QuestionAnswer>,
}

pub(crate) fn tool(env: &ToolEnv, asker: Arc<dyn QuestionAsker>) -> AnyTool {
    Tool::with_state(DESCRIPTION, (env.clone(), asker), ask)
        .with_projection(super::project_output)
        .with_concurrency(tackle_core::Concurrency::Exclusive)
        .erase()
}

async fn ask(
    State((env, asker)): State<(ToolEnv, Arc<dyn QuestionAsker>)>,
    input: QuestionInput,
    cx: Context,
) -> Result<QuestionOutput, ToolFailure> {
    let (env, asker, cx) = (&env, asker.as_ref(), &cx);
    validate(&input.questions)?;
    env.gate
        .ask(
            cx,
            Ask::new(Permission::QUESTION.as_str(), ["*"]).with_metadata(serde_json::json!({
                "questions": input.questions,
            })),
        )
        .await?;
    let count = input.questions.len();
    let noun = if count == 1 { "question" } else { "questions" };
    cx.set_title(format!("Asking {count} {noun}"));
    let answer = tokio::select! {
        answer = asker.ask(cx.session().as_str(), &input.questions) => answer,
        () = cx.cancellation().cancelled() => {
            return Err(ToolFailure::new("The call was interrupted before the user answered."));
        }
    };
    cx.set_title(format!("Asked {count} {noun}"));
    Ok(match answer {
        Answer::Dismissed => QuestionOutput {
            output: "The user dismissed the questions without answering. Continue without an \
answer, or ask differently if you cannot go on without one."
                .to_owned(),
            dismissed: true,
            answers: Vec::new(),
        },
        Answer::Answered(chosen) => {
            let mut chosen = chosen.into_iter();
            let answers: Vec<QuestionAnswer> = input
                .questions
                .iter()
                .map(|q| QuestionAnswer {
                    header: q.header.clone(),
                    labels: chosen.next().unwrap_or_default(),
                })
                .collect();
            let mut output = String::from("The user answered:\n");
            for answer in &answers {
                let labels = if answer.labels.is_empty() {
                    "(no answer)".to_owned()
                } else {
                    answer.labels.join(", ")
                };
                output.push_str(&format!("{}: {labels}\n", answer.header));
            }
            output.push_str("Continue with these answers in mind.");
            QuestionOutput {
                output,
                dismissed: false,
                answers,
            }
        }
    })
}

/// Refuses questions the user could not be shown well, listing every problem.
fn validate(questions: &[Question]) -> Result<(), ToolFailure> {
    let mut problems = Vec::new();
    if questions.is_empty() {
        problems.push("- `questions`: give at least one question".to_owned());
    }
    for (i, q) in questions.iter().enumerate() {
        let chars = q.header.chars().count();
        if q.header.trim().is_empty() {
            problems.push(format!("- `questions[{i}].header`: must not be empty"));
        } else if chars > MAX_HEADER_CHARS {
            problems.push(format!(
                "- `questions[{i}].header`: `{}` is {chars} characters, over the limit of \
{MAX_HEADER_CHARS}",
                q.header
            ));
        }
        if q.question.trim().is_empty() {
            problems.push(format!("- `questions[{i}].question`: must not be empty"));
        }
        for (j, option) in q.options.iter().enumerate() {
            if option.label.trim().is_empty() {
                problems.push(format!(
                    "- `questions[{i}].options[{j}].label`: must not be empty"
                ));
            }
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    Err(ToolFailure::new(format!(
        "The questions were not asked:\n{}",
        problems.join("\n")
    ))
    .with_hint("Fix these fields and call question again."))
}
