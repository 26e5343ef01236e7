//! The sweeps a host starts with: retained outputs, bash spools and session temp directories
//! past their age, removed on one background thread, at most once per interval per data
//! directory.
//!
//! Every host used to start three threads for them. A one-shot `tackle call` is a whole process
//! per call, and a thread costs it about 70 microseconds to start on a small VM, so the sweeps
//! share one thread, and a marker file in the data directory (`swept`) lets only the first host
//! of each interval run them. What they remove is days old; a delay of minutes changes nothing.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tackle_builtins::tools::bash;
use tackle_sandbox::Sandboxes;
use tackle_store::{DEFAULT_RETENTION, FsOutputStore};

/// How often the sweeps of one data directory run, at most.
pub(crate) const SWEEP_INTERVAL: Duration = Duration::from_secs(10 * 60);

/// The marker whose modification time says when the sweeps last started.
const MARKER: &str = "swept";

/// What a host sweeps.
pub(crate) struct Sweeps {
    /// The data directory, where the marker lives.
    pub(crate) data_dir: PathBuf,
    pub(crate) outputs: FsOutputStore,
    pub(crate) spool_dir: PathBuf,
    pub(crate) sandboxes: Arc<Sandboxes>,
}

impl Sweeps {
    /// Starts the sweeps on a thread of their own when none started in the last `interval`;
    /// whether they were started.
    pub(crate) fn start_when_due(self, interval: Duration) -> bool {
        if !claim(&self.data_dir.join(MARKER), interval) {
            return false;
        }
        let started = std::thread::Builder::new()
            .name("tackle-sweep".to_owned())
            .spawn(move || self.run());
        if let Err(error) = &started {
            tracing::warn!(%error, "could not start the sweeps");
        }
        started.is_ok()
    }

    /// Runs every sweep here; a failed one is logged.
    fn run(&self) {
        match self.outputs.sweep(DEFAULT_RETENTION) {
            Ok(report) => tracing::debug!(
                deleted = report.deleted,
                kept = report.kept,
                abandoned = report.abandoned,
                "swept retained tool output"
            ),
            Err(error) => tracing::warn!(%error, "sweeping retained tool output failed"),
        }
        bash::sweep_spools(&self.spool_dir, bash::SPOOL_MAX_AGE);
        self.sandboxes.sweep(tackle_sandbox::TEMP_MAX_AGE);
    }
}

/// True when the marker at `marker` is missing, older than `interval` or dated in the future (a
/// clock set back must not stop the sweeps); then it is dated now, so the hosts that start next
/// skip them. Two hosts starting at the same moment may both sweep, which is harmless.
fn claim(marker: &Path, interval: Duration) -> bool {
    let now = SystemTime::now();
    let recent = std::fs::metadata(marker)
        .and_then(|metadata| metadata.modified())
        .is_ok_and(|modified| now.duration_since(modified).is_ok_and(|age| age < interval));
    if recent {
        return false;
    }
    let dated = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(marker)
        .and_then(|file| file.set_modified(now));
    if let Err(error) = dated {
        // Sweeping every time is the safe side of a marker that cannot be written.
        tracing::debug!(%error, marker = %marker.display(), "cannot date the sweep marker");
    }
    true
}

#[cfg(test)]
mod tests;
