//! The todo tools: todowrite replaces the session's todo list and todoread returns it.
//!
//! The list lives in session state under the key `todo`, as JSON, so it survives a restart and a
//! compaction of the transcript. Without a session state store, both tools share one in-memory
//! map, keyed by session.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use tackle_core::names::Permission;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tackle_core::{AnyTool, Context, SessionState, SessionStateError, State, Tool, ToolFailure};

use super::ToolEnv;
use crate::gate::Ask;

#[cfg(test)]
mod tests;

/// The session state key that holds the todo list.
pub(crate) const TODO_KEY: &str = "todo";

const WRITE_DESCRIPTION: &str = "Replace your todo list for this session.\n\
- Send the whole list every time: items you leave out are removed.\n\
- Each item has content (what to do), status (pending, in_progress, completed, cancelled) and \
priority (high, medium, low). id is optional; items without one are numbered.\n\
- Use it for tasks with three or more steps, or when the user gives you several things to do.\n\
- Keep one item in_progress at a time. Mark an item completed as soon as it is done, not in \
batches.\n\
- The list is kept by the runtime, so it survives a long session; read it back with todoread.";

const READ_DESCRIPTION: &str = "Read your todo list for this session, as last written with \
todowrite. Use it to see what is left to do, for example after a long stretch of work.";

/// The state of a todo item.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started yet.
    Pending,
    /// Being worked on now.
    InProgress,
    /// Done.
    Completed,
    /// No longer needed.
    Cancelled,
}

impl TodoStatus {
    /// True for items still to do: pending or in progress.
    pub fn is_open(self) -> bool {
        matches!(self, TodoStatus::Pending | TodoStatus::InProgress)
    }

    fn mark(self) -> &'static str {
        match self {
            TodoStatus::Pending => "[ ]",
            TodoStatus::InProgress => "[>]",
            TodoStatus::Completed => "[x]",
            TodoStatus::Cancelled => "[-]",
        }
    }
}

/// How important a todo item is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TodoPriority {
    /// Do it first.
    High,
    /// The usual priority.
    Medium,
    /// Do it when the rest is done.
    Low,
}

impl TodoPriority {
    fn as_str(self) -> &'static str {
        match self {
            TodoPriority::High => "high",
            TodoPriority::Medium => "medium",
            TodoPriority::Low => "low",
        }
    }
}

/// One todo item as the model writes it.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TodoItem {
    /// What to do, in a short imperative sentence.
    #[schemars(length(min = 1))]
    pub content: String,
    /// pending, in_progress, completed or cancelled.
    pub status: TodoStatus,
    /// high, medium or low.
    pub priority: TodoPriority,
    /// A stable id for the item. Items without one are numbered 1, 2, 3, ...
    #[serde(default)]
    pub id: Option<String>,
}

/// One stored todo item.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Todo {
    /// The item's id.
    pub id: String,
    /// What to do.
    pub content: String,
    /// The item's state.
    pub status: TodoStatus,
    /// The item's priority.
    pub priority: TodoPriority,
}

/// Arguments of the todowrite tool.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TodoWriteInput {
    /// The whole new todo list, in order. An empty list clears it.
    pub todos: Vec<TodoItem>,
}

/// Arguments of the todoread tool: none.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TodoReadInput {}

/// The result of the todowrite and todoread tools.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TodoOutput {
    /// What the model reads.
    pub output: String,
    /// The session's todo list, in order.
    pub todos: Vec<Todo>,
    /// How many items are pending or in progress.
    pub open: usize,
}

/// Session state kept in memory, for hosts that provide no store.
#[derive(Debug, Default)]
pub(crate) struct MemoryTodos {
    values: Mutex<HashMap<(String, String), String>>,
}

impl SessionState for MemoryTodos {
    fn get(&self, session: &str, key: &str) -> Result<Option<String>, SessionStateError> {
        let values = self.values.lock().unwrap_or_else(|e| e.into_inner());
        Ok(values.get(&(session.to_owned(), key.to_owned())).cloned())
    }

    fn put(&self, session: &str, key: &str, value: Option<&str>) -> Result<(), SessionStateError> {
        let mut values = self.values.lock().unwrap_or_else(|e| e.into_inner());
        let key = (session.to_owned(), key.to_owned());
        match value {
            Some(value) => values.insert(key, value.to_owned()),
            None => values.remove(&key),
        };
        Ok(())
    }
}

/// The todowrite and todoread tools over one store: the environment's session state, or a fresh
/// in-memory map the two tools share.
pub(crate) fn tools(env: &ToolEnv) -> (AnyTool, AnyTool) {
    let store: Arc<dyn SessionState> = match &env.state {
        Some(state) => state.clone(),
        None => Arc::new(MemoryTodos::default()),
    };
    let write = Tool::with_state(WRITE_DESCRIPTION, (env.clone(), store.clone()), write)
        .with_projection(super::project_output)
        .with_concurrency(tackle_core::Concurrency::Exclusive)
        .erase();
    let read = Tool::with_state(READ_DESCRIPTION, store, read)
        .with_projection(super::project_output)
        .with_concurrency(tackle_core::Concurrency::ReadOnly)
        .erase();
    (write, read)
}

async fn write(
    State((env, store)): State<(ToolEnv, Arc<dyn SessionState>)>,
    input: TodoWriteInput,
    cx: Context,
) -> Result<TodoOutput, ToolFailure> {
    let (env, store, cx) = (&env, store.as_ref(), &cx);
    let todos = number(input.todos)?;
    env.gate
        .ask(cx, Ask::new(Permission::TODOWRITE.as_str(), ["*"]))
        .await?;
    let session = cx.session().as_str();
    let saved = if todos.is_empty() {
        store.put(session, TODO_KEY, None)
    } else {
        let json = serde_json::to_string(&todos)
            .map_err(|e| ToolFailure::new(format!("The todo list was not saved: {e}.")))?;
        store.put(session, TODO_KEY, Some(&json))
    };
    saved.map_err(|e| {
        ToolFailure::new(format!("The todo list was not saved: {e}."))
            .with_hint("Keep track of the plan in your replies, and call todowrite again later.")
    })?;
    let open = count_open(&todos);
    cx.set_title(open_title(open));
    let mut output = if todos.is_empty() {
        "Cleared the todo list.".to_owned()
    } else {
        format!("Saved {}:\n{}", summary(&todos, open), render(&todos))
    };
    let active = todos
        .iter()
        .filter(|t| t.status == TodoStatus::InProgress)
        .count();
    if active > 1 {
        output.push_str(&format!(
            "\n\nNote: {active} items are in_progress. Keep one item in_progress at a time: \
finish it, mark it completed, then start the next."
        ));
    }
    Ok(TodoOutput {
        output,
        todos,
        open,
    })
}

async fn read(
    State(store): State<Arc<dyn SessionState>>,
    _: TodoReadInput,
    cx: Context,
) -> Result<TodoOutput, ToolFailure> {
    let (store, cx) = (store.as_ref(), &cx);
    let todos = load(store, cx.session().as_str())?;
    let open = count_open(&todos);
    cx.set_title(open_title(open));
    let output = if todos.is_empty() {
        "The todo list is empty. Use todowrite to plan multi-step work.".to_owned()
    } else {
        format!("{}:\n{}", summary(&todos, open), render(&todos))
    };
    Ok(TodoOutput {
        output,
        todos,
        open,
    })
}

/// The stored todo list of `session`; empty when there is none.
pub(crate) fn load(store: &dyn SessionState, session: &str) -> Result<Vec<Todo>, ToolFailure> {
    let stored = store.get(session, TODO_KEY).map_err(|e| {
        ToolFailure::new(format!("The todo list could not be read: {e}."))
            .with_hint("Rely on the plan in your earlier replies, or call todoread again later.")
    })?;
    match stored {
        None => Ok(Vec::new()),
        Some(json) => serde_json::from_str(&json).map_err(|_| {
            ToolFailure::new("The stored todo list is damaged and could not be read.")
                .with_hint("Write the whole list again with todowrite.")
        }),
    }
}

/// Checks the items and gives every item an id: the given one, or the smallest unused number.
fn number(items: Vec<TodoItem>) -> Result<Vec<Todo>, ToolFailure> {
    let mut problems = Vec::new();
    let mut taken = BTreeSet::new();
    for (i, item) in items.iter().enumerate() {
        if item.content.trim().is_empty() {
            problems.push(format!("- `todos[{i}].content`: must not be empty"));
        }
        if let Some(id) = &item.id {
            if id.trim().is_empty() {
                problems.push(format!("- `todos[{i}].id`: must not be empty"));
            } else if !taken.insert(id.clone()) {
                problems.push(format!(
                    "- `todos[{i}].id`: `{id}` is used by an earlier item"
                ));
            }
        }
    }
    if !problems.is_empty() {
        return Err(ToolFailure::new(format!(
            "The todo list was not saved:\n{}",
            problems.join("\n")
        ))
        .with_hint("Fix these items and send the whole list again."));
    }
    let mut next = 1usize;
    let todos = items
        .into_iter()
        .map(|item| {
            let id = item.id.unwrap_or_else(|| {
                while taken.contains(&next.to_string()) {
                    next += 1;
                }
                let id = next.to_string();
                taken.insert(id.clone());
                id
            });
            Todo {
                id,
                content: item.content.trim().to_owned(),
                status: item.status,
                priority: item.priority,
            }
        })
        .collect();
    Ok(todos)
}

fn count_open(todos: &[Todo]) -> usize {
    todos.iter().filter(|t| t.status.is_open()).count()
}

/// The title of a call: `3 open todos`.
fn open_title(open: usize) -> String {
    match open {
        1 => "1 open todo".to_owned(),
        n => format!("{n} open todos"),
    }
}

/// `4 todos (3 open)`.
fn summary(todos: &[Todo], open: usize) -> String {
    let noun = if todos.len() == 1 { "todo" } else { "todos" };
    format!("{} {noun} ({open} open)", todos.len())
}

/// One line per item, `[x] content (high, id 1)`, followed by the legend.
pub(crate) fn render(todos: &[Todo]) -> String {
    let mut text = String::new();
    for todo in todos {
        text.push_str(&format!(
            "{} {} ({}, id {})\n",
            todo.status.mark(),
            todo.content.replace('\n', " "),
            todo.priority.as_str(),
            todo.id
        ));
    }
    text.push_str("([ ] pending, [>] in_progress, [x] completed, [-] cancelled)");
    text
}
