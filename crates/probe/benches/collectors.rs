//! CPU cost of each collector, per call, against a live process.
//!
//!     cargo bench -p probe --bench collectors -- [PID]
//!
//! Without a PID it measures itself. Costs are CPU time of this thread (not wall time), the
//! median of several rounds.

use std::time::Duration;

use probe::clock::{mono_ns, thread_cpu_ns};
use probe::collect::{self, HostFiles, ProcRoot, SystemFacts, Watched};
use probe::sampler::{Sampler, SamplerConfig};
use probe::selector::Selector;

fn cost(rounds: usize, mut f: impl FnMut()) -> Duration {
    let mut samples: Vec<u64> = (0..rounds)
        .map(|_| {
            let t = thread_cpu_ns();
            f();
            thread_cpu_ns() - t
        })
        .collect();
    samples.sort_unstable();
    Duration::from_nanos(samples[samples.len() / 2])
}

fn main() {
    let pid: i32 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(std::process::id() as i32);
    let root = ProcRoot::default();
    let facts = SystemFacts::current();
    let mut w = Watched::open(&root, pid).expect("the process to measure must exist");
    let fast = w.read(&facts, true).expect("readable").sample;
    println!(
        "process {pid} ({}): {} threads, {:?} FDs",
        fast.comm, fast.threads, fast.fds
    );
    let n = 200;
    let row =
        |name: &str, d: Duration| println!("  {name:<34} {:>9.1} µs", d.as_nanos() as f64 / 1e3);
    row(
        "per tick (cpu, statm, fd and thread count)",
        cost(n, || {
            let _ = std::hint::black_box(w.read(&facts, false));
        }),
    );
    row(
        "full (and stat, io)",
        cost(n, || {
            let _ = std::hint::black_box(w.read(&facts, true));
        }),
    );
    row(
        "  children of the main thread",
        cost(n, || {
            let _ = std::hint::black_box(w.children());
        }),
    );
    let mut host = HostFiles::open(&root).expect("/proc is readable");
    row(
        "host (stat, meminfo, loadavg, sockstat, pressure/cpu)",
        cost(n, || {
            let _ = std::hint::black_box(host.sample());
        }),
    );
    let mut thread_files = probe::collect::ThreadFiles::default();
    row(
        "slow: status, schedstat and stat of every thread (kept open)",
        cost(20, || {
            let _ = std::hint::black_box(w.peak_rss_and_threads(&root, &mut thread_files));
            thread_files.pass();
        }),
    );
    if let Some(mut cgroup) = probe::collect::CgroupFiles::open(&root, std::process::id() as i32) {
        row(
            "cgroup CPU controller (cpu.stat, quota, pressure)",
            cost(n, || {
                let _ = std::hint::black_box(cgroup.read());
            }),
        );
    }
    row(
        "slow: limits",
        cost(20, || {
            let _ = std::hint::black_box(w.fd_limits());
        }),
    );
    row(
        "slow: fd kinds (readlink each fd)",
        cost(5, || {
            let _ = std::hint::black_box(w.fd_kinds(&root));
        }),
    );
    let sockets = w.fd_kinds(&root).map(|(_, s)| s).unwrap_or_default();
    if let Ok(mut diag) = probe::sockets::SockDiag::open() {
        row(
            "slow: tcp sockets by state (sock_diag)",
            cost(5, || {
                let table = diag.dump().unwrap_or_default();
                let _ = std::hint::black_box(probe::sockets::count(&table, &sockets));
            }),
        );
    }
    row(
        "slow: tcp sockets by state (net/tcp)",
        cost(5, || {
            let _ = std::hint::black_box(probe::sockets::from_files(&root, pid, &sockets));
        }),
    );
    row(
        "slow: pss/uss (smaps_rollup)",
        cost(5, || {
            let _ = std::hint::black_box(w.pss_uss());
        }),
    );
    row(
        "slow: full scan of parents",
        cost(5, || {
            let _ = std::hint::black_box(collect::parents(&root));
        }),
    );
    let mut sampler = Sampler::new(SamplerConfig {
        interval: Duration::from_millis(10),
        tree: false,
        slow_interval: Duration::from_secs(3600),
        ..SamplerConfig::new(Selector::Pid(pid))
    })
    .expect("the sampler starts");
    // The first tick attaches and runs the slow collectors; time the ones after.
    let _ = sampler.tick(mono_ns(), 0);
    row(
        "whole tick (target alone, no slow)",
        cost(n, || {
            let _ = std::hint::black_box(sampler.tick(mono_ns(), 0));
        }),
    );
}
