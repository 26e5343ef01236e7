//! The sweep marker: who sweeps, and when.

use super::*;

const MINUTE: Duration = Duration::from_secs(60);

fn date(marker: &Path, when: SystemTime) {
    File::options()
        .write(true)
        .open(marker)
        .unwrap()
        .set_modified(when)
        .unwrap();
}

fn modified(marker: &Path) -> SystemTime {
    std::fs::metadata(marker).unwrap().modified().unwrap()
}

#[test]
fn the_first_claim_creates_the_marker_and_the_next_within_the_interval_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join(MARKER);
    assert!(claim(&marker, 10 * MINUTE));
    assert!(marker.is_file());
    assert!(!claim(&marker, 10 * MINUTE));
}

#[test]
fn a_marker_older_than_the_interval_is_claimed_and_dated_now() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join(MARKER);
    File::create(&marker).unwrap();
    let old = SystemTime::now() - 11 * MINUTE;
    date(&marker, old);
    assert!(claim(&marker, 10 * MINUTE));
    assert!(modified(&marker) > old + 10 * MINUTE);
    assert!(!claim(&marker, 10 * MINUTE));
}

#[test]
fn a_marker_dated_in_the_future_does_not_stop_the_sweeps() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join(MARKER);
    File::create(&marker).unwrap();
    date(&marker, SystemTime::now() + 60 * MINUTE);
    assert!(claim(&marker, 10 * MINUTE));
    assert!(modified(&marker) <= SystemTime::now());
}

#[test]
fn a_marker_that_cannot_be_written_still_lets_the_sweeps_run() {
    let dir = tempfile::tempdir().unwrap();
    // A directory where the marker's parent should be: nothing can be created there.
    let marker = dir.path().join("missing").join(MARKER);
    assert!(claim(&marker, 10 * MINUTE));
    assert!(claim(&marker, 10 * MINUTE));
}
