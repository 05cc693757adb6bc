//! CPU work of a known length: chained SHA-256 over 32 bytes until this thread's own CPU clock
//! has advanced by the time asked, read every ~50 µs of work (batches sized by a calibration at
//! start). Counting CPU time rather than a fixed number of rounds keeps `M` ms at `M` ms when
//! the host's other CPU is busy (on a VM, a busy sibling makes every round slower).

use sha2::{Digest, Sha256};

/// Runs `rounds` chained SHA-256 rounds; the result keeps the work from being optimised away.
pub fn work(rounds: u64) -> [u8; 32] {
    let mut value = [7u8; 32];
    for _ in 0..rounds {
        value = Sha256::digest(value).into();
    }
    value
}

/// Spends `ms` of this thread's CPU time.
pub fn spend(ms: u64, rounds_per_ms: u64) {
    let batch = (rounds_per_ms / 20).max(1);
    let end = thread_cpu_ns() + ms * 1_000_000;
    while thread_cpu_ns() < end {
        std::hint::black_box(work(batch));
    }
}

fn thread_cpu_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// Rounds per ms of CPU: a warm-up, then about 100 ms of CPU measured.
pub fn calibrate() -> u64 {
    std::hint::black_box(work(10_000));
    let mut rounds = 0u64;
    let start = thread_cpu_ns();
    let mut batch = 1_000;
    loop {
        std::hint::black_box(work(batch));
        rounds += batch;
        let spent = thread_cpu_ns().saturating_sub(start);
        if spent >= 100_000_000 {
            return (rounds * 1_000_000 / spent).max(1);
        }
        batch = (batch * 2).min(100_000);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_time_asked_is_the_cpu_spent() {
        let rounds = calibrate();
        let start = thread_cpu_ns();
        spend(50, rounds);
        let ms = thread_cpu_ns().saturating_sub(start) as f64 / 1e6;
        assert!(
            (50.0..53.0).contains(&ms),
            "50 ms asked, {ms:.1} ms of CPU spent"
        );
    }
}
