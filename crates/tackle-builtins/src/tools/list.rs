//! PLACEHOLDER: the list tool (being written).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tackle_core::{AnyTool, Context, Tool, ToolFailure};

use super::ToolEnv;

/// Arguments of the list tool.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
pub struct ListInput {
    /// Directory.
    pub path: Option<String>,
}

/// Result.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
pub struct ListOutput {
    /// Text.
    pub output: String,
}

pub(crate) fn tool(_env: &ToolEnv) -> AnyTool {
    Tool::new("list", |_: ListInput, _: Context| async {
        Err::<ListOutput, _>(ToolFailure::new("placeholder"))
    })
    .erase()
}
