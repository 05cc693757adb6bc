//! Profiling: where the watched tree spends its CPU, on the same clock and in the same stream as
//! the samples.
//!
//! A thread of its own reads the kernel's per-CPU `cpu-clock` samples ([`perf`]) every 100 ms,
//! keeps those of the tree's processes, and at the end of each interval (a second) names their
//! frames ([`symbols`], JITs' through [`perf_map`]) and folds them ([`fold`]) into one [`Profile`] record pushed into the
//! buffer with the samples: same sequence numbers, resume, gaps and TLS. Where the kernel
//! refuses, one [`EventKind::ProfileUnavailable`] says why and sampling goes on.

mod fold;
mod frame;
mod perf;
mod perf_map;
mod symbols;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::buffer::SharedBuffer;
use crate::clock::{mono_ns, wall_ns};
use crate::cpus::CpuList;
use crate::protocol::Record;
use crate::sample::{Event, EventKind, Profile};

pub use fold::OTHER_STACKS;

/// The default sampling frequency: not a multiple of common timer rates, so that sampling does
/// not march in step with periodic work.
pub const DEFAULT_HZ: u32 = 99;

/// How often the rings are read.
const READ_EVERY: Duration = Duration::from_millis(100);

/// What profiling does.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileConfig {
    /// Samples a second on each CPU.
    pub hz: u32,
    /// The span of one profile record.
    pub interval: Duration,
}

impl Default for ProfileConfig {
    fn default() -> Self {
        ProfileConfig {
            hz: DEFAULT_HZ,
            interval: Duration::from_secs(1),
        }
    }
}

/// The processes of the watched tree, as the sampler last saw them: the profiler keeps the
/// stacks of these and drops the rest.
#[derive(Debug, Clone, Default)]
pub struct Tree(Arc<Mutex<TreeView>>);

#[derive(Debug, Clone, Default)]
struct TreeView {
    root: Option<i32>,
    pids: HashSet<u32>,
}

impl Tree {
    /// The sampler's view after a change.
    pub fn set(&self, root: Option<i32>, pids: impl IntoIterator<Item = i32>) {
        let pids = pids
            .into_iter()
            .filter_map(|p| u32::try_from(p).ok())
            .collect();
        if let Ok(mut view) = self.0.lock() {
            *view = TreeView { root, pids };
        }
    }

    fn view(&self) -> TreeView {
        self.0.lock().map(|v| v.clone()).unwrap_or_default()
    }
}

/// The profiler's thread; stopped when dropped.
#[derive(Debug)]
pub struct Profiler {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Profiler {
    /// Starts profiling `tree` into `buffer`; `shift_ns` is added to the times it reports (as
    /// the sampler's clock shift, for tests).
    pub fn start(
        config: ProfileConfig,
        tree: Tree,
        buffer: SharedBuffer,
        shift_ns: i64,
    ) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let thread = std::thread::Builder::new().name("profiler".into()).spawn({
            let stop = stop.clone();
            move || run(&config, &tree, &buffer, &stop, shift_ns)
        })?;
        Ok(Profiler {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Profiler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

fn run(config: &ProfileConfig, tree: &Tree, buffer: &SharedBuffer, stop: &AtomicBool, shift: i64) {
    let shifted = |t: u64| t.saturating_add_signed(shift);
    let mut events = match perf::CpuEvents::open(CpuList::online().cpus(), config.hz) {
        Ok(e) => e,
        Err(reason) => {
            tracing::warn!("{reason}");
            let event = Event {
                mono_ns: shifted(mono_ns()),
                wall_ns: shifted(wall_ns()),
                kind: EventKind::ProfileUnavailable {
                    reason: reason.to_string(),
                },
            };
            buffer.push_all([(event.mono_ns, Record::Event(event))], true);
            return;
        }
    };
    let mut folder = fold::Folder::default();
    let mut symbols = symbols::Symbols::new();
    let mut names = Names::default();
    let interval = config.interval.as_nanos() as u64;
    let mut started = mono_ns();
    let mut lost = 0;
    let mut known: HashSet<u32> = HashSet::new();
    while !stop.load(Ordering::Relaxed) {
        std::thread::park_timeout(READ_EVERY);
        let view = tree.view();
        lost += events.drain(|s| {
            if view.pids.contains(&s.pid) {
                folder.add(&s);
            }
        });
        let now = mono_ns();
        if now < started + interval && !stop.load(Ordering::Relaxed) {
            continue;
        }
        for gone in known.difference(&view.pids) {
            symbols.forget(*gone);
            names.forget(*gone);
        }
        known.clone_from(&view.pids);
        let root = view.root.and_then(|r| u32::try_from(r).ok());
        let folded = folder.finish(&mut symbols, |pid, tid| {
            (names.process(pid, root), names.thread(pid, tid))
        });
        names.keep_seen();
        let mut profile = Profile {
            mono_ns: shifted(now),
            wall_ns: shifted(wall_ns()),
            interval_ns: now - started,
            hz: config.hz,
            samples: folded.samples,
            cpu_ns: folded.cpu_ns,
            lost: std::mem::take(&mut lost),
            ..Default::default()
        };
        profile.set_folded(folded.stacks);
        buffer.push_all(
            [(profile.mono_ns, Record::Profile(Box::new(profile)))],
            false,
        );
        started = now;
    }
}

/// Process and thread names (`comm`), read once each; a thread's is kept while it is sampled
/// (a server's pool that starts and ends threads would otherwise grow it for ever).
#[derive(Default)]
struct Names {
    processes: HashMap<u32, String>,
    threads: HashMap<(u32, u32), String>,
    seen: HashSet<(u32, u32)>,
}

impl Names {
    /// A process's name, marked when it is not the tree's root (a cluster's workers apart from
    /// its primary: they have the same `comm`).
    fn process(&mut self, pid: u32, root: Option<u32>) -> String {
        let comm = self
            .processes
            .entry(pid)
            .or_insert_with(|| comm(&format!("/proc/{pid}/comm")))
            .clone();
        if root.is_some_and(|r| r != pid) {
            format!("{comm} (child)")
        } else {
            comm
        }
    }

    fn thread(&mut self, pid: u32, tid: u32) -> String {
        self.seen.insert((pid, tid));
        self.threads
            .entry((pid, tid))
            .or_insert_with(|| comm(&format!("/proc/{pid}/task/{tid}/comm")))
            .clone()
    }

    /// Forgets the threads not sampled in the last profile.
    fn keep_seen(&mut self) {
        let seen = std::mem::take(&mut self.seen);
        self.threads.retain(|key, _| seen.contains(key));
    }

    fn forget(&mut self, pid: u32) {
        self.processes.remove(&pid);
        self.threads.retain(|(p, _), _| *p != pid);
    }
}

fn comm(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim_end().to_string())
        .unwrap_or_else(|_| "[exited]".into())
}
