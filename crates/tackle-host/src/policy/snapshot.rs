//! The snapshot layer: a snapshot before and after every call that may change files (every
//! tool but the read-only ones), and a change row when they differ, so the call can be undone.
//!
//! It runs last before a call (after name repair and aliases, so the name is the tool's) and
//! first after it. Snapshots are incremental, so a call that changed nothing costs a walk of
//! the tree's metadata. A snapshot that fails is logged and never fails the call.

use std::collections::HashMap;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use parking_lot::Mutex;
use tackle_core::names::ToolName;
use tackle_core::{Concurrency, Context, Settlement, ToolFailure};
use tackle_registry::{CallDraft, Layer, Turn};
use tackle_store::Snapshots;

pub(crate) struct SnapshotLayer {
    snapshots: Arc<Snapshots>,
    /// The snapshot taken before each running call.
    before: Mutex<HashMap<CallKey, String>>,
}

/// A running call: its session, call ID and sub-call index.
type CallKey = (String, String, Option<u32>);

impl SnapshotLayer {
    pub(crate) fn new(snapshots: Arc<Snapshots>) -> Self {
        Self {
            snapshots,
            before: Mutex::default(),
        }
    }

    async fn take(&self) -> Option<String> {
        let snapshots = self.snapshots.clone();
        match tokio::task::spawn_blocking(move || snapshots.take()).await {
            Ok(Ok(id)) => Some(id),
            Ok(Err(error)) => {
                tracing::warn!(%error, "a snapshot failed; this call cannot be undone");
                None
            }
            Err(_) => None,
        }
    }
}

fn key(cx: &Context) -> CallKey {
    let identity = cx.identity();
    (
        identity.session.as_str().to_owned(),
        identity.call.as_str().to_owned(),
        identity.sub_call,
    )
}

impl Layer for SnapshotLayer {
    fn before<'a>(
        &'a self,
        turn: &'a Turn,
        cx: &'a Context,
        call: &'a mut CallDraft,
    ) -> BoxFuture<'a, Result<(), ToolFailure>> {
        Box::pin(async move {
            // `batch` is not bracketed: each of its sub-calls is.
            if call.name() == ToolName::BATCH.as_str() {
                return Ok(());
            }
            // Unknown names and read-only tools change nothing.
            let may_write = turn
                .get(call.name())
                .is_some_and(|tool| tool.definition().concurrency != Concurrency::ReadOnly);
            if !may_write {
                return Ok(());
            }
            if let Some(id) = self.take().await {
                self.before.lock().insert(key(cx), id);
            }
            Ok(())
        })
    }

    fn after<'a>(
        &'a self,
        _turn: &'a Turn,
        cx: &'a Context,
        settlement: &'a mut Settlement,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let Some(before) = self.before.lock().remove(&key(cx)) else {
                return;
            };
            let Some(after) = self.take().await else {
                return;
            };
            if after == before {
                return;
            }
            let identity = cx.identity();
            let call = match identity.sub_call {
                Some(index) => format!("{}#{index}", identity.call.as_str()),
                None => identity.call.as_str().to_owned(),
            };
            let recorded = self.snapshots.record(
                identity.session.as_str(),
                identity.assistant_message.as_str(),
                &call,
                &settlement.tool,
                &before,
                &after,
            );
            match recorded {
                Ok(_) => settlement
                    .annotations
                    .push(format!("snapshot: {before} -> {after}")),
                Err(error) => tracing::warn!(%error, "recording a change failed"),
            }
        })
    }
}
