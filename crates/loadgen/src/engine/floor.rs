//! What this machine can time, measured once a process on a thread of its own: what one
//! reading of the clock costs against one system call (whether `clock_gettime` is answered in
//! user space), and what a timed wake-up costs and how late it comes, paced as the generator
//! paces (a `timerfd` armed at an absolute deadline, the thread's timer slack cut to 1 ns).
//! A run is judged against it (`analysis::validity`), and `loadgen selftest` prints it.

use std::sync::OnceLock;

use rustix::time::{
    timerfd_create, timerfd_settime, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags,
};
use store::summary::Floor;

use crate::engine::clock::{self, Nanos};
use crate::engine::timer::{once_at, precise_thread};

/// Clock readings timed in each of three rounds (the fastest round kept).
const READINGS: u32 = 20_000;
/// Timed wake-ups measured, this far apart: about 50 ms in all.
const WAKEUPS: u32 = 200;
const WAKE_GAP_NS: u64 = 200_000;

/// The floor of this process, once measured.
static FLOOR: OnceLock<Option<Floor>> = OnceLock::new();

/// A wake-up's cost and lateness before the floor is measured (these VMs: 15–18 µs of CPU,
/// 18–22 µs late at p50).
const SPIN_UNMEASURED: Nanos = 20_000;
/// The longest a worker waits for a send by polling the clock, however slow wake-ups are here.
const SPIN_MAX: Nanos = 100_000;

/// The machine's floor, measured the first time it is asked for in this process (about 60 ms),
/// `None` where a timer could not be made.
pub fn measured() -> Option<&'static Floor> {
    FLOOR
        .get_or_init(|| std::thread::spawn(measure).join().ok().flatten())
        .as_ref()
}

/// How soon a send must be due for a worker to wait for it by polling the clock rather than
/// sleep: a timed wake-up's CPU or its p50 lateness, whichever is more. A shorter sleep costs
/// more CPU than the wait it saves and wakes after the send was due. From the floor where this
/// process has measured it (never measured here: that would delay a schedule's start), else
/// [`SPIN_UNMEASURED`]; at most [`SPIN_MAX`].
pub fn spin_window() -> Nanos {
    FLOOR
        .get()
        .and_then(Option::as_ref)
        .map_or(SPIN_UNMEASURED, |f| {
            f.wakeup_cpu_ns.max(f.wakeup_late_p50_ns).round() as Nanos
        })
        .min(SPIN_MAX)
}

/// Measures the floor on the calling thread (whose timer slack it cuts).
pub fn measure() -> Option<Floor> {
    precise_thread();
    let clock_read_ns = per_call(|| {
        std::hint::black_box(clock::now());
    });
    // The thread's CPU clock is never answered by the vDSO: a system call of the same shape.
    let syscall_ns = per_call(|| {
        std::hint::black_box(clock::thread_cpu());
    });
    let (wakeup_cpu_ns, mut late) = wakeups()?;
    late.sort_unstable();
    let at = |q: f64| late[((late.len() as f64 - 1.0) * q).round() as usize] as f64;
    Some(Floor {
        clock_source: std::fs::read_to_string(
            "/sys/devices/system/clocksource/clocksource0/current_clocksource",
        )
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty()),
        clock_read_ns,
        syscall_ns,
        vdso: clock_read_ns < 0.5 * syscall_ns,
        wakeups: WAKEUPS,
        wakeup_cpu_ns,
        wakeup_late_p50_ns: at(0.5),
        wakeup_late_p99_ns: at(0.99),
    })
}

/// What one call of `f` costs, ns: the fastest of three rounds of [`READINGS`] calls.
fn per_call(mut f: impl FnMut()) -> f64 {
    (0..3)
        .map(|_| {
            let start = clock::now();
            for _ in 0..READINGS {
                f();
            }
            clock::now().saturating_sub(start) as f64 / f64::from(READINGS)
        })
        .fold(f64::INFINITY, f64::min)
}

/// [`WAKEUPS`] sleeps on a blocking `timerfd` to absolute deadlines: the thread's CPU time a
/// wake-up costs (arming, sleeping, reading the clock), ns, and each wake-up's lateness, ns.
fn wakeups() -> Option<(f64, Vec<u64>)> {
    let fd = timerfd_create(TimerfdClockId::Monotonic, TimerfdFlags::CLOEXEC).ok()?;
    let mut late = Vec::with_capacity(WAKEUPS as usize);
    let mut expiries = [0u8; 8];
    let cpu_before = clock::thread_cpu();
    for _ in 0..WAKEUPS {
        let deadline = clock::now() + WAKE_GAP_NS;
        timerfd_settime(&fd, TimerfdTimerFlags::ABSTIME, &once_at(deadline)).ok()?;
        rustix::io::read(&fd, &mut expiries).ok()?;
        late.push(clock::now().saturating_sub(deadline));
    }
    let cpu = clock::thread_cpu().saturating_sub(cpu_before);
    Some((cpu.as_nanos() as f64 / f64::from(WAKEUPS), late))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_floor_is_measured_and_a_wake_up_is_never_early() {
        let f = measure().unwrap();
        eprintln!("{f:?}");
        assert_eq!(f.wakeups, WAKEUPS);
        assert!(f.clock_read_ns > 0.0 && f.syscall_ns > 0.0);
        assert!(f.wakeup_late_p50_ns <= f.wakeup_late_p99_ns);
        assert!(f.wakeup_cpu_ns > 0.0);
        // A process asks once: the second answer is the first.
        assert!(std::ptr::eq(measured().unwrap(), measured().unwrap()));
        // Once measured, a send is polled for within a wake-up's CPU or p50 lateness here.
        let m = measured().unwrap();
        let window = m.wakeup_cpu_ns.max(m.wakeup_late_p50_ns).round() as Nanos;
        assert_eq!(spin_window(), window.min(SPIN_MAX));
    }
}
