//! Waiting for the generator's CPUs to be quiet. A measured run that other processes held back
//! (they took the generator's CPUs, or paused it as its schedule began) says nothing of the
//! server; on a laptop with a browser open that is a moment, not the host. Such a run is kept
//! as failed and run once more, after the generator's CPUs have been quiet for a moment or
//! the wait's bound has passed.

use std::time::{Duration, Instant};

use probe::cpus::{busy_between, CpuList, Ticks};

/// The busy share of the generator's CPUs under which they count as quiet: what the target,
/// idle between runs, and the runner's own probes leave.
pub(super) const QUIET: f64 = 0.25;
/// The longest wait before the run goes again anyway (2 s in this crate's tests, whose
/// scheduler runs on a fake generator while the suite keeps the host busy).
pub(super) const LONGEST: Duration = Duration::from_secs(if cfg!(test) { 2 } else { 30 });
/// Each reading's window.
const WINDOW: Duration = Duration::from_millis(500);

/// How a wait ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Waited {
    /// The CPUs were quiet after this long.
    Quiet(Duration),
    /// Still this busy (0–1) when the wait gave up.
    StillBusy(f64),
    /// This host has no /proc/stat to read.
    Unknown,
}

/// Busy and total clock ticks of `cpus` (every CPU when `None`), now.
fn ticks(cpus: Option<&CpuList>) -> Option<(u64, u64)> {
    let t = Ticks::now()?;
    Some(cpus.map_or(t.all, |list| t.of(list)))
}

/// Waits until a window of `cpus` (the generator's; every CPU when it is not pinned) is less
/// than [`QUIET`] busy, at most `longest`.
pub(super) async fn wait(cpus: Option<&CpuList>, longest: Duration) -> Waited {
    let started = Instant::now();
    let Some(mut before) = ticks(cpus) else {
        return Waited::Unknown;
    };
    let mut busy = 1.0;
    while started.elapsed() < longest {
        tokio::time::sleep(WINDOW).await;
        let Some(after) = ticks(cpus) else {
            return Waited::Unknown;
        };
        if let Some(share) = busy_between(before, after) {
            busy = share;
            if busy < QUIET {
                return Waited::Quiet(started.elapsed());
            }
        }
        before = after;
    }
    Waited::StillBusy(busy)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On a host this test keeps busy on every CPU, the wait gives up at its bound with the
    /// share it read (whether a host is ever quiet is not the test's to say).
    #[tokio::test(flavor = "multi_thread")]
    async fn a_wait_ends_at_its_bound_on_a_busy_host() {
        let cpus = CpuList::online();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let spinners: Vec<_> = (0..cpus.len())
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut x = 1u64;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        x = std::hint::black_box(x.wrapping_mul(6364136223846793005));
                    }
                })
            })
            .collect();
        let busy = wait(Some(&cpus), Duration::from_millis(1600)).await;
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for s in spinners {
            s.join().unwrap();
        }
        match busy {
            Waited::StillBusy(share) => assert!(share >= QUIET, "{share}"),
            other => panic!("every CPU spun, yet: {other:?}"),
        }
    }
}
