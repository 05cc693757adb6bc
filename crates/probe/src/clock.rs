//! The probe host's clocks, in nanoseconds.

use rustix::time::{clock_gettime, ClockId};

/// `CLOCK_MONOTONIC`.
pub fn mono_ns() -> u64 {
    read(ClockId::Monotonic)
}

/// The wall clock, since the Unix epoch.
pub fn wall_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// CPU time of the calling thread.
pub fn thread_cpu_ns() -> u64 {
    read(ClockId::ThreadCPUTime)
}

/// CPU time of this whole process.
pub fn process_cpu_ns() -> u64 {
    read(ClockId::ProcessCPUTime)
}

fn read(clock: ClockId) -> u64 {
    let ts = clock_gettime(clock);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
