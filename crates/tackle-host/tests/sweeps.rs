//! A host sweeps old retained outputs and bash spools when it starts, on a thread of its own,
//! and only the first host of each interval sweeps a data directory.

use std::fs::File;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use tackle_host::{Approvals, HostBuilder};

const DAY: Duration = Duration::from_secs(24 * 60 * 60);

/// Builds (and drops) a one-shot host over `root` with its data in `data`.
fn start_host(root: &Path, data: &Path) {
    let host = HostBuilder::new(root)
        .data_dir(data)
        .home(None)
        .approvals(Approvals::AllowOnce)
        .snapshots(false)
        .background_jobs(false)
        .search_index(false)
        .build()
        .unwrap();
    drop(host);
}

/// Writes `path` with a modification time `age` ago.
fn write_aged(path: &Path, age: Duration) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, b"old").unwrap();
    let file = File::options().write(true).open(path).unwrap();
    file.set_modified(SystemTime::now() - age).unwrap();
}

/// Waits up to ten seconds for every path in `paths` to be gone.
fn wait_gone(paths: &[&Path]) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while paths.iter().any(|path| path.exists()) {
        assert!(
            Instant::now() < deadline,
            "the sweep never removed {paths:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_host_sweeps_old_outputs_and_spools_once_per_interval() {
    let root = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let output = data.path().join("tool-output").join("ab".repeat(32));
    let spool = data.path().join("spool").join("bash-old.log");
    let young = data.path().join("tool-output").join("cd".repeat(32));
    write_aged(&output, 8 * DAY);
    write_aged(&spool, 2 * DAY);
    write_aged(&young, Duration::ZERO);

    start_host(root.path(), data.path());
    wait_gone(&[&output, &spool]);
    assert!(young.exists(), "an output younger than the retention stays");
    let marker = data.path().join("swept");
    let dated = std::fs::metadata(&marker).unwrap().modified().unwrap();

    // The next host within the interval leaves the sweeps to the first.
    write_aged(&output, 8 * DAY);
    start_host(root.path(), data.path());
    std::thread::sleep(Duration::from_millis(200));
    assert!(output.exists(), "a second sweep ran within the interval");
    assert_eq!(
        std::fs::metadata(&marker).unwrap().modified().unwrap(),
        dated
    );

    // Once the interval has passed, the next host sweeps again.
    File::options()
        .write(true)
        .open(&marker)
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(11 * 60))
        .unwrap();
    start_host(root.path(), data.path());
    wait_gone(&[&output]);
}
