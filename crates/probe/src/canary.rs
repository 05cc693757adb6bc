//! The wake-up canary: what one wake-up costs, now, on the CPUs it runs on.
//!
//! A server that answers a few hundred requests a second spends much of its CPU being woken:
//! a request arrives on an idle CPU, the thread is scheduled, its caches are cold, it answers
//! and sleeps again. On a virtual machine that cost moves with what the host does: on the
//! project's 2-vCPU VM the Go contestant's CPU per request (POST /users, PostgreSQL beside it)
//! moved by 13–20 % from one 4-second run to the next, and the database's with it (their
//! ratios correlated 0.97), while a loop of arithmetic on the same CPU moved by 2 %.
//!
//! The canary does what such a request does, at a fixed rate and a small cost: one thread
//! sleeps [`PAUSE`], wakes a second over a socket pair, which touches [`TOUCHED`] bytes and
//! answers with its own CPU time. The two threads' CPU time per exchange is the host's price
//! of a wake-up over the same seconds the target ran; a figure per request divided by it no
//! longer carries the host's swings (docs/benchmarks/gate.md, "Where the spread comes from").
//! It costs about 60 µs of CPU every 4 ms here: 1.5 % of one CPU.

use std::io::{Read, Write};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::sched::{sched_setaffinity, CpuSet};
use nix::unistd::Pid;
use serde::Serialize;

use crate::clock::thread_cpu_ns;

/// The pause before each exchange: long enough for the CPU to go idle between two, as a
/// server's does between requests at a few hundred a second.
pub const PAUSE: Duration = Duration::from_millis(4);

/// What the answering thread touches each exchange, a cache line at a time.
pub const TOUCHED: usize = 64 * 1024;

/// How long [`Canary::start_on`] waits for the first exchange.
const FIRST_EXCHANGE: Duration = Duration::from_secs(2);

/// The canary's totals since its first exchange: exchanges, and the CPU its two threads spent
/// on them, published together after each.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Reading {
    pub exchanges: u64,
    pub cpu_ns: u64,
}

impl Reading {
    /// The CPU an exchange cost between `earlier` and this reading, in ns; `None` when no
    /// exchange happened in between.
    pub fn per_exchange_since(&self, earlier: &Reading) -> Option<f64> {
        let exchanges = self.exchanges.checked_sub(earlier.exchanges)?;
        let cpu = self.cpu_ns.checked_sub(earlier.cpu_ns)?;
        (exchanges > 0).then(|| cpu as f64 / exchanges as f64)
    }
}

/// What the two threads share: the totals and their thread ids.
#[derive(Default)]
struct Shared {
    totals: Mutex<Reading>,
    tids: [AtomicI32; 2],
}

/// A running canary; dropping it stops both threads (within one [`PAUSE`]).
pub struct Canary {
    shared: Arc<Shared>,
    /// The asking end, to shut down at the drop: both threads' reads and writes then fail.
    socket: UnixStream,
    threads: Vec<JoinHandle<()>>,
}

impl Canary {
    /// Starts the two threads where this thread may run (pin it with `taskset` beside the
    /// target).
    pub fn start() -> std::io::Result<Canary> {
        Canary::start_on(None)
    }

    /// Starts the two threads on `cpus` (those a target may run on, `sched_getaffinity`), or
    /// where this thread may run; returns after their first exchange, so that readings from
    /// here on hold exchanges alone, not the threads' start. An error if the kernel refuses
    /// the CPUs, or no exchange came within two seconds.
    pub fn start_on(cpus: Option<CpuSet>) -> std::io::Result<Canary> {
        let (asker, answerer) = UnixStream::pair()?;
        let socket = asker.try_clone()?;
        let shared = Arc::new(Shared::default());
        let spawn = |name: &str, index: usize, body: Box<dyn FnOnce(&Shared) + Send>| {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name(name.into())
                .spawn(move || {
                    shared.tids[index].store(nix::unistd::gettid().as_raw(), Ordering::Release);
                    if let Some(cpus) = cpus {
                        if sched_setaffinity(Pid::from_raw(0), &cpus).is_err() {
                            return; // the start below sees no exchange, and says so
                        }
                    }
                    body(&shared)
                })
        };
        let threads = vec![
            spawn("canary-answer", 1, Box::new(move |s| answer(answerer, s)))?,
            spawn("canary-ask", 0, Box::new(move |s| ask(asker, s)))?,
        ];
        let canary = Canary {
            shared,
            socket,
            threads,
        };
        let started = Instant::now();
        while canary.reading().exchanges == 0 {
            if started.elapsed() > FIRST_EXCHANGE {
                return Err(std::io::Error::other(
                    "the canary's threads made no exchange in 2 s: the CPUs asked for may not be this process's to use",
                ));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(canary)
    }

    /// The totals so far.
    pub fn reading(&self) -> Reading {
        self.shared
            .totals
            .lock()
            .map(|totals| *totals)
            .unwrap_or_default()
    }

    /// The two threads' ids (the asker's, the answerer's); 0 before each has started.
    pub fn thread_ids(&self) -> [i32; 2] {
        [0, 1].map(|i| self.shared.tids[i].load(Ordering::Acquire))
    }
}

impl std::fmt::Debug for Canary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Canary")
            .field("reading", &self.reading())
            .finish()
    }
}

impl Drop for Canary {
    fn drop(&mut self) {
        // Both threads' next read or write fails: they end (the asker after its pause).
        let _ = self.socket.shutdown(Shutdown::Both);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

/// Sleeps, wakes the answerer, waits for its answer (its CPU time so far) and publishes both
/// threads' totals with the count; until the socket is shut down.
fn ask(mut stream: UnixStream, shared: &Shared) {
    let mut answer = [0u8; 8];
    loop {
        std::thread::sleep(PAUSE);
        if stream.write_all(&[1]).is_err() || stream.read_exact(&mut answer).is_err() {
            return;
        }
        let cpu_ns = thread_cpu_ns() + u64::from_le_bytes(answer);
        if let Ok(mut totals) = shared.totals.lock() {
            totals.exchanges += 1;
            totals.cpu_ns = cpu_ns;
        }
    }
}

/// Woken by each byte: touches its memory and answers with its CPU time so far; until the
/// socket closes.
fn answer(mut stream: UnixStream, _: &Shared) {
    let mut touched = vec![1u8; TOUCHED];
    let mut byte = [0u8; 1];
    while stream.read_exact(&mut byte).is_ok() {
        for line in touched.chunks_mut(64) {
            line[0] = line[0].wrapping_add(1);
        }
        std::hint::black_box(&touched);
        if stream.write_all(&thread_cpu_ns().to_le_bytes()).is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_canary_exchanges_at_its_pace_costs_cpu_and_stops_when_dropped() {
        let canary = Canary::start().unwrap();
        let first = canary.reading();
        assert!(first.exchanges >= 1, "started after its first exchange");
        std::thread::sleep(Duration::from_millis(400));
        let second = canary.reading();
        let tids = canary.thread_ids();
        drop(canary);
        // One exchange every 4 ms and a bit: at most 100 in 400 ms, and many even on a busy host.
        let exchanges = second.exchanges - first.exchanges;
        assert!((20..=100).contains(&exchanges), "{exchanges} exchanges");
        let cost = second.per_exchange_since(&first).unwrap();
        // Two wake-ups and 1,024 cache lines: more than a microsecond, far less than the pause.
        assert!(
            cost > 1_000.0 && cost < 4_000_000.0,
            "{cost} ns an exchange"
        );
        assert_eq!(second.per_exchange_since(&second), None);
        for tid in tids {
            assert!(
                !std::path::Path::new(&format!("/proc/self/task/{tid}")).exists(),
                "thread {tid} outlived the canary"
            );
        }
    }

    #[test]
    fn a_canary_started_on_a_cpu_runs_there() {
        let allowed = nix::sched::sched_getaffinity(Pid::from_raw(0)).unwrap();
        let cpu = (0..CpuSet::count())
            .find(|&c| allowed.is_set(c).unwrap_or(false))
            .unwrap();
        let mut one = CpuSet::new();
        one.set(cpu).unwrap();
        let canary = Canary::start_on(Some(one)).unwrap();
        for tid in canary.thread_ids() {
            let set = nix::sched::sched_getaffinity(Pid::from_raw(tid)).unwrap();
            let on: Vec<usize> = (0..CpuSet::count())
                .filter(|&c| set.is_set(c).unwrap_or(false))
                .collect();
            assert_eq!(on, [cpu], "thread {tid}");
        }
    }
}
