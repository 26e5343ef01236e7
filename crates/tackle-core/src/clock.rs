//! The phase clock: cheap monotonic readings for settlement's phase timings, with nothing to
//! calibrate at start-up.
//!
//! On x86-64 with an invariant time-stamp counter a reading is one `RDTSC` (about a third of a
//! `clock_gettime` on a virtual machine). Ticks become nanoseconds only when a duration is asked
//! for, at the ratio between the counter and [`Instant`] since the first reading: measured again
//! at each conversion while that span is short, then kept. Elsewhere a reading is an [`Instant`].

use std::sync::OnceLock;
#[cfg(target_arch = "x86_64")]
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// One reading of the phase clock. Only the difference of two readings means anything.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Tick(u64);

impl Tick {
    /// The clock now.
    pub(crate) fn now() -> Self {
        match Source::get() {
            #[cfg(target_arch = "x86_64")]
            Source::Counter(_) => Tick(counter()),
            Source::Monotonic(anchor) => Tick(nanos(anchor.elapsed())),
        }
    }

    /// The time from `self` to `later`; zero when `later` is not later.
    pub(crate) fn until(self, later: Tick) -> Duration {
        let delta = later.0.saturating_sub(self.0);
        match Source::get() {
            #[cfg(target_arch = "x86_64")]
            Source::Counter(anchor) => {
                // Rounded to the nearest nanosecond; `as` saturates.
                let nanos = delta as f64 * nanos_per_tick(anchor) + 0.5;
                Duration::from_nanos(nanos as u64)
            }
            Source::Monotonic(_) => Duration::from_nanos(delta),
        }
    }
}

/// Times consecutive phases: each lap starts where the previous one ended, so one reading per
/// boundary covers both sides of it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stopwatch {
    last: Tick,
}

impl Stopwatch {
    /// A stopwatch whose first lap starts now.
    pub(crate) fn start() -> Self {
        Self { last: Tick::now() }
    }

    /// The time since the previous lap ended (or the start); the next lap starts now.
    pub(crate) fn lap(&mut self) -> Duration {
        let now = Tick::now();
        let lap = self.last.until(now);
        self.last = now;
        lap
    }
}

/// Where readings come from, chosen at the first reading.
enum Source {
    /// The invariant time-stamp counter, with its reading and [`Instant`] at the first reading.
    #[cfg(target_arch = "x86_64")]
    Counter(Pair),
    /// Nanoseconds since this instant.
    Monotonic(Instant),
}

impl Source {
    fn get() -> &'static Source {
        static SOURCE: OnceLock<Source> = OnceLock::new();
        SOURCE.get_or_init(Source::detect)
    }

    #[cfg(target_arch = "x86_64")]
    fn detect() -> Source {
        if invariant_counter() {
            Source::Counter(Pair::read())
        } else {
            Source::Monotonic(Instant::now())
        }
    }

    #[cfg(not(target_arch = "x86_64"))]
    fn detect() -> Source {
        Source::Monotonic(Instant::now())
    }
}

fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

/// Once the counter has been compared with [`Instant`] over this long, the ratio is kept: two
/// readings a few tens of nanoseconds apart then err by about a millionth.
#[cfg(target_arch = "x86_64")]
const SETTLE_AFTER: Duration = Duration::from_millis(50);

/// The kept ratio, as `f64` bits; zero until it is settled.
#[cfg(target_arch = "x86_64")]
static SETTLED_NANOS_PER_TICK: AtomicU64 = AtomicU64::new(0);

/// Nanoseconds per counter tick, measured against [`Instant`] since `anchor`.
#[cfg(target_arch = "x86_64")]
fn nanos_per_tick(anchor: &Pair) -> f64 {
    let settled = SETTLED_NANOS_PER_TICK.load(Ordering::Relaxed);
    if settled != 0 {
        return f64::from_bits(settled);
    }
    let now = Pair::read();
    let ticks = now.ticks.saturating_sub(anchor.ticks);
    if ticks == 0 {
        // No tick has passed since the anchor, so every difference to convert is zero.
        return 0.0;
    }
    let elapsed = now.at.duration_since(anchor.at);
    let ratio = elapsed.as_nanos() as f64 / ticks as f64;
    if elapsed >= SETTLE_AFTER {
        SETTLED_NANOS_PER_TICK.store(ratio.to_bits(), Ordering::Relaxed);
    }
    ratio
}

/// A counter reading and an [`Instant`] taken together.
#[cfg(target_arch = "x86_64")]
struct Pair {
    ticks: u64,
    at: Instant,
}

#[cfg(target_arch = "x86_64")]
impl Pair {
    /// Reads both, taking the counter on either side of the [`Instant`] and keeping the midpoint
    /// of the closest of three tries (a try can be interrupted by the scheduler).
    fn read() -> Pair {
        let mut best: Option<(u64, Pair)> = None;
        for _ in 0..3 {
            let before = counter();
            let at = Instant::now();
            let after = counter();
            let width = after.saturating_sub(before);
            if best
                .as_ref()
                .is_none_or(|(narrowest, _)| width < *narrowest)
            {
                let ticks = before + width / 2;
                best = Some((width, Pair { ticks, at }));
            }
        }
        best.expect("three tries").1
    }
}

/// True when the CPU's time-stamp counter runs at a constant rate in every power state (CPUID
/// leaf 0x8000_0007, EDX bit 8), so ticks measure time.
#[cfg(target_arch = "x86_64")]
fn invariant_counter() -> bool {
    use std::arch::x86_64::__cpuid;
    const POWER_MANAGEMENT_LEAF: u32 = 0x8000_0007;
    const INVARIANT_TSC: u32 = 1 << 8;
    __cpuid(0x8000_0000).eax >= POWER_MANAGEMENT_LEAF
        && __cpuid(POWER_MANAGEMENT_LEAF).edx & INVARIANT_TSC != 0
}

/// The time-stamp counter.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
fn counter() -> u64 {
    // SAFETY: RDTSC reads a register and touches no memory. It faults only in a process that
    // asked the kernel to trap it (`PR_SET_TSC`), which tackle never does.
    unsafe { std::arch::x86_64::_rdtsc() }
}

#[cfg(test)]
mod tests;
