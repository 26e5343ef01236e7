//! PLACEHOLDER: the apply_patch tool (being written).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tackle_core::{AnyTool, Context, Tool, ToolFailure};

use super::ToolEnv;

/// Arguments.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplyPatchInput {
    /// Patch.
    pub patch_text: String,
}

/// One file.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
pub struct PatchedFile {
    /// Path.
    pub path: String,
}

/// Result.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
pub struct ApplyPatchOutput {
    /// Text.
    pub output: String,
    /// Files.
    pub files: Vec<PatchedFile>,
}

pub(crate) fn tool(_env: &ToolEnv) -> AnyTool {
    Tool::new("apply_patch", |_: ApplyPatchInput, _: Context| async {
        Err::<ApplyPatchOutput, _>(ToolFailure::new("placeholder"))
    })
    .erase()
}
