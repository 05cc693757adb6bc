//! Sleeping until a deadline with microsecond precision.
//!
//! tokio's timers have a 1 ms resolution: pacing with them alone would send requests up to a
//! millisecond late (which is why wrk2's corrected p50 never drops below about 1 ms). Here a
//! `timerfd` on `CLOCK_MONOTONIC` is armed at the absolute deadline, so the kernel wakes the
//! runtime's `epoll` exactly then; tokio only has to notice that the descriptor became
//! readable. Because the deadline is absolute, the time spent arming the timer is not added to
//! the wait.
//!
//! [`precise_thread`] also cuts the thread's timer slack (default 50 µs, the leeway the kernel
//! may add to a sleep to batch wake-ups) to 1 ns, which keeps `epoll_wait`'s own timeout precise.

use std::io;
use std::num::NonZeroU64;
use std::os::fd::OwnedFd;

use rustix::time::{
    timerfd_create, timerfd_settime, Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags,
    Timespec,
};
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

use crate::engine::clock::{self, Nanos};

/// Asks the kernel not to add slack to this thread's sleeps.
pub fn precise_thread() {
    // Best effort: without it sleeps are up to 50 µs later, which the lateness figures show.
    let _ = rustix::thread::set_current_timer_slack(NonZeroU64::new(1));
}

/// A one-shot expiry at the monotonic instant `deadline` (ns), for `TFD_TIMER_ABSTIME`.
pub fn once_at(deadline: Nanos) -> Itimerspec {
    Itimerspec {
        it_interval: Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
        it_value: Timespec {
            tv_sec: (deadline / 1_000_000_000) as i64,
            tv_nsec: (deadline % 1_000_000_000) as i64,
        },
    }
}

/// A one-shot timer on `CLOCK_MONOTONIC`, for use on one runtime thread.
#[derive(Debug)]
pub struct PreciseTimer {
    fd: AsyncFd<OwnedFd>,
}

impl PreciseTimer {
    /// Creates the timer; must be called inside a tokio runtime with I/O enabled.
    pub fn new() -> io::Result<Self> {
        let fd = timerfd_create(
            TimerfdClockId::Monotonic,
            TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
        )?;
        // SAFETY: `fd` is a freshly created descriptor that the `AsyncFd` owns for its whole
        // life (an `OwnedFd`, never duplicated nor closed elsewhere), so it stays open and
        // refers to the same timer until the `AsyncFd` is dropped.
        #[allow(unsafe_code)]
        let fd = unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE)? };
        Ok(PreciseTimer { fd })
    }

    /// Returns at `deadline` (monotonic nanoseconds) or, if it has passed, at once.
    pub async fn sleep_until(&self, deadline: Nanos) -> io::Result<()> {
        if clock::now() >= deadline {
            return Ok(());
        }
        let at = once_at(deadline);
        // Arming resets the expiry count, so the count is never read: one system call less
        // per request. Every expiry wakes epoll again (edge-triggered) whatever the count.
        timerfd_settime(self.fd.get_ref(), TimerfdTimerFlags::ABSTIME, &at)?;
        loop {
            self.fd.readable().await?.clear_ready();
            if clock::now() >= deadline {
                return Ok(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn wakes_at_the_deadline_not_before() {
        precise_thread();
        let timer = PreciseTimer::new().unwrap();
        // Precision is measured by the benchmark (bench/loadgen.sh); here, correctness: never
        // early, and re-armable many times without reading the expiry count.
        for _ in 0..200 {
            let deadline = clock::now() + 300_000;
            timer.sleep_until(deadline).await.unwrap();
            assert!(
                clock::now() >= deadline,
                "a sleep returned before its deadline"
            );
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_past_deadline_returns_at_once() {
        let timer = PreciseTimer::new().unwrap();
        let before = clock::now();
        timer.sleep_until(before - 1).await.unwrap();
        timer.sleep_until(0).await.unwrap();
        assert!(clock::now() - before < 1_000_000);
    }
}
