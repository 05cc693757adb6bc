//! One monotonic clock for the whole generator, in nanoseconds.
//!
//! Every time the generator records (intended, sent, first byte, completed) comes from
//! `CLOCK_MONOTONIC`, the clock that `timerfd` sleeps on, so a deadline computed from the schedule
//! can be handed to the kernel as is. [`Anchor`] ties this clock to wall time once per run, for
//! logs and for lining runs up with probe samples.

use std::time::{Duration, SystemTime};

use rustix::time::{clock_gettime, ClockId};

/// Nanoseconds on `CLOCK_MONOTONIC` (time since boot, excluding suspend).
pub type Nanos = u64;

/// Reads `CLOCK_MONOTONIC` (through the vDSO: no system call, about 20 ns).
pub fn now() -> Nanos {
    let ts = clock_gettime(ClockId::Monotonic);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CPU time (user + system) consumed so far by the calling thread.
pub fn thread_cpu() -> Duration {
    let ts = clock_gettime(ClockId::ThreadCPUTime);
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// CPU time (user + system) consumed so far by every thread of this process.
pub fn process_cpu() -> Duration {
    let ts = clock_gettime(ClockId::ProcessCPUTime);
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// A pair of readings of the monotonic and the wall clock, taken together, so that monotonic
/// times can be shown as wall-clock times.
#[derive(Debug, Clone, Copy)]
pub struct Anchor {
    pub mono: Nanos,
    pub wall: SystemTime,
}

impl Anchor {
    pub fn now() -> Self {
        Anchor {
            mono: now(),
            wall: SystemTime::now(),
        }
    }

    /// The wall-clock time of the monotonic instant `mono`.
    pub fn wall_of(&self, mono: Nanos) -> SystemTime {
        if mono >= self.mono {
            self.wall + Duration::from_nanos(mono - self.mono)
        } else {
            self.wall - Duration::from_nanos(self.mono - mono)
        }
    }
}

/// Converts a duration to whole nanoseconds, saturating at `u64::MAX` (about 584 years).
pub fn nanos(d: Duration) -> Nanos {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_clock_advances_with_real_time() {
        let a = now();
        std::thread::sleep(Duration::from_millis(5));
        let b = now();
        assert!(
            b - a >= 5_000_000,
            "slept 5 ms but the clock moved {} ns",
            b - a
        );
    }

    #[test]
    fn anchor_maps_both_ways() {
        let anchor = Anchor::now();
        let later = anchor.wall_of(anchor.mono + 1_500_000_000);
        let earlier = anchor.wall_of(anchor.mono - 500_000_000);
        assert_eq!(
            later.duration_since(anchor.wall).ok(),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            anchor.wall.duration_since(earlier).ok(),
            Some(Duration::from_millis(500))
        );
    }
}
