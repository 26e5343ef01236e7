//! The phase clock measures real time, never runs backwards, and laps add up.

use std::time::{Duration, Instant};

use super::{Stopwatch, Tick};

/// `measured` is within 1% (plus a microsecond) of `[low, high]`.
fn assert_between(measured: Duration, low: Duration, high: Duration) {
    let slack = Duration::from_micros(1);
    assert!(
        measured.mul_f64(1.01) + slack >= low && measured <= high.mul_f64(1.01) + slack,
        "{measured:?} is not within [{low:?}, {high:?}]"
    );
}

#[test]
fn a_duration_is_the_real_time_between_two_readings() {
    for pause in [Duration::from_millis(2), Duration::from_millis(60)] {
        let outer_start = Instant::now();
        let start = Tick::now();
        std::thread::sleep(pause);
        let end = Tick::now();
        let outer = outer_start.elapsed();
        // The readings are at least `pause` apart and at most `outer`.
        assert_between(start.until(end), pause, outer);
    }
}

#[test]
fn readings_never_run_backwards() {
    let mut previous = Tick::now();
    for _ in 0..100_000 {
        let now = Tick::now();
        assert!(now >= previous, "{now:?} came after {previous:?}");
        previous = now;
    }
    let later = Tick::now();
    std::thread::sleep(Duration::from_millis(1));
    assert_eq!(Tick::now().until(later), Duration::ZERO);
}

#[test]
fn readings_on_another_thread_are_on_the_same_clock() {
    let outer_start = Instant::now();
    let start = Tick::now();
    let end = std::thread::spawn(|| {
        std::thread::sleep(Duration::from_millis(5));
        Tick::now()
    })
    .join()
    .unwrap();
    let outer = outer_start.elapsed();
    assert_between(start.until(end), Duration::from_millis(5), outer);
}

#[test]
fn laps_cover_the_whole_time_without_gaps() {
    let outer_start = Instant::now();
    let mut stopwatch = Stopwatch::start();
    let first = stopwatch.last;
    let mut laps = Duration::ZERO;
    for pause in [0, 3, 0, 7] {
        std::thread::sleep(Duration::from_millis(pause));
        laps += stopwatch.lap();
    }
    let outer = outer_start.elapsed();
    let whole = first.until(stopwatch.last);
    // Each lap rounds to the nanosecond on its own.
    let rounding = Duration::from_nanos(4);
    assert!(
        laps.abs_diff(whole) <= rounding,
        "laps {laps:?}, whole {whole:?}"
    );
    assert_between(whole, Duration::from_millis(10), outer);
}
