//! The slow collectors, on a thread of their own so that the fast ticks keep their schedule.
//!
//! Classifying 10,000 FDs takes about 40 ms, summing context switches, run-queue waits and
//! states a `status`, `schedstat` and `stat` read per thread, the TCP states a netlink dump (`sockets.rs`). Run inline, one such pass would make a
//! 10 ms sampler miss several ticks. Here the sampler tells this thread which processes it
//! watches ([`SlowCollector::watch`]); the thread measures them every `slow_interval`, less
//! often only if the passes would use more than `slow_budget` of a core ([`Budget`]), and posts
//! the results, which the sampler attaches to its next sample.
//!
//! A pass reads two tiers. The saturation figures (each thread's `schedstat`, state and
//! context switches, `VmHWM`, the FD limits) cost with the threads, not the load, and are what a
//! verdict is made of: they are read every pass, on a budget of their own ([`CORE_BUDGET`]
//! times `slow_budget`), from the threads' files kept open between passes
//! ([`collect::ThreadFiles`]). The FD classification, the TCP states and PSS cost with the
//! connections and the memory, which grow without bound under overload (10,000 sockets): they
//! are read only when what the saturation figures leave of `slow_budget` allows (at least half
//! of it, [`costly_share`]), so that the two tiers keep within the budget together and an
//! overloaded server's run-queue wait is still measured when its sockets are too many to
//! classify every second.
//!
//! The scan of every process's parent, which finds members of the tree that the per-tick
//! `children` files miss, costs with the host (a `stat` read per process) and not with the
//! target: it runs on a schedule and a budget of its own ([`SCAN_INTERVAL`]), so that a busy
//! host never delays the target's own figures.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use crate::clock::{mono_ns, thread_cpu_ns};
use crate::collect::{self, ProcRoot, ThreadFiles, Watched};
use crate::sample::{FdKinds, TcpSockets};
use crate::sockets::{SockDiag, TcpTable};

/// The scan of every process's parent comes at most this often, within its own budget.
pub const SCAN_INTERVAL: std::time::Duration = std::time::Duration::from_secs(5);

/// The saturation figures' budget, as a multiple of `slow_budget`: a server's threads are few
/// (a 60-backend PostgreSQL reads 180 small files a pass, about 1 ms), so they are read every
/// second where the costly figures may wait.
pub const CORE_BUDGET: f64 = 4.0;

/// A process, by PID and start time.
pub type Identity = (i32, u64);

/// The costly figures of one process.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SlowFigures {
    pub peak_rss_bytes: Option<u64>,
    pub threads: Option<collect::ThreadFigures>,
    pub fd_limits: (Option<u64>, Option<u64>),
    pub fd_kinds: Option<FdKinds>,
    pub tcp: Option<TcpSockets>,
    pub pss_uss: Option<(u64, u64)>,
}

/// What one slow pass found.
#[derive(Debug, Default)]
pub struct SlowResults {
    pub figures: HashMap<Identity, SlowFigures>,
    /// Every descendant of the root, from the full scan of parents (when watching a tree).
    pub tree: Vec<i32>,
    /// CPU time the pass took.
    pub cpu_ns: u64,
}

/// How the slow collectors work.
#[derive(Debug, Clone)]
pub struct SlowConfig {
    pub root: ProcRoot,
    pub tree: bool,
    pub pss: bool,
    pub interval: Duration,
    /// Share of one core, e.g. 0.005.
    pub budget: f64,
}

#[derive(Debug, Default)]
struct State {
    root: Option<i32>,
    targets: Vec<Identity>,
    /// Measure at once (a new target).
    now: bool,
    stop: bool,
    results: Option<SlowResults>,
}

#[derive(Debug, Default)]
struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The slow collectors' thread; stopped when dropped.
#[derive(Debug)]
pub struct SlowCollector {
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl SlowCollector {
    pub fn start(config: SlowConfig) -> std::io::Result<Self> {
        let shared = Arc::new(Shared::default());
        let thread = std::thread::Builder::new()
            .name("slow-collectors".into())
            .spawn({
                let shared = shared.clone();
                move || run(config, &shared)
            })?;
        Ok(SlowCollector {
            shared,
            thread: Some(thread),
        })
    }

    /// The processes to measure from now on; `now` asks for a pass at once.
    pub fn watch(&self, root: Option<i32>, targets: Vec<Identity>, now: bool) {
        let mut state = self.shared.lock();
        if state.root != root || state.targets != targets || now {
            state.root = root;
            state.targets = targets;
            state.now |= now;
            self.shared.wake.notify_one();
        }
    }

    /// The results of the last pass, if one finished since the last call.
    pub fn take(&self) -> Option<SlowResults> {
        self.shared.lock().results.take()
    }
}

impl Drop for SlowCollector {
    fn drop(&mut self) {
        self.shared.lock().stop = true;
        self.shared.wake.notify_one();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The passes' CPU budget as a bucket of credit, in ns of CPU: earned at `share` of the time
/// elapsed, spent by each pass, and a pass is due once the credit covers the last one's cost.
/// At most one pass's worth is saved, so a target that grows costly after a cheap hour is not
/// measured in a burst. The bucket starts full, as after an idle stretch: the start-up pass
/// is the one pass's worth saved, and every pass after it is paid for before it begins. Over
/// any stretch from the start, the passes use at most `share` of the time plus one pass.
#[derive(Debug)]
struct Budget {
    share: f64,
    credit: f64,
    at: u64,
    last_cost: f64,
    started: bool,
}

impl Budget {
    fn new(share: f64, now: u64) -> Self {
        Budget {
            share: share.max(1e-6),
            credit: 0.0,
            at: now,
            last_cost: 0.0,
            started: false,
        }
    }

    fn earn(&mut self, now: u64) {
        let earned = self.share * now.saturating_sub(self.at) as f64;
        self.credit = (self.credit + earned).min(self.last_cost);
        self.at = self.at.max(now);
    }

    /// A pass that began at `began` cost `cost` ns of CPU.
    fn spend(&mut self, began: u64, cost: u64) {
        self.earn(began);
        if !std::mem::replace(&mut self.started, true) {
            self.credit = cost as f64;
        }
        self.credit -= cost as f64;
        self.last_cost = cost as f64;
    }

    /// When the credit will cover a pass like the last one.
    fn next_due(&self) -> u64 {
        let short = (self.last_cost - self.credit).max(0.0);
        self.at + (short / self.share) as u64
    }
}

/// The costly figures' share of a core: `budget` less what the saturation figures took in
/// their last pass over one `interval`, and never less than half of `budget`.
fn costly_share(budget: f64, figures_ns: u64, interval: Duration) -> f64 {
    let figures = figures_ns as f64 / interval.as_nanos().max(1) as f64;
    (budget - figures).max(budget / 2.0).max(1e-6)
}

fn run(config: SlowConfig, shared: &Shared) {
    let mut passes = Passes::new(&config);
    while let Some((root, targets, now)) = passes.wait(&config, shared) {
        let mut results = SlowResults::default();
        let began = mono_ns();
        if now || began >= passes.next_figures || began >= passes.next_costly {
            passes.measure(&config, &targets, now, began, &mut results);
        }
        if config.tree && (now || began >= passes.next_scan) {
            if let Some(root) = root {
                passes.scan(&config, root, began, &mut results);
            }
        }
        shared.lock().results = Some(results);
    }
}

/// What the slow collectors' thread keeps between passes: the processes' open files, the
/// budgets, and when each tier is due next.
#[derive(Debug)]
struct Passes {
    handles: HashMap<Identity, (Watched, bool)>,
    pss_read: HashSet<Identity>,
    thread_files: ThreadFiles,
    diag: Option<SockDiag>,
    figures_budget: Budget,
    costly_budget: Budget,
    scan_budget: Budget,
    next_figures: u64,
    next_costly: u64,
    next_scan: u64,
}

impl Passes {
    /// Nothing open yet, every budget full, every tier due.
    fn new(config: &SlowConfig) -> Self {
        let diag = SockDiag::open().ok();
        let start = mono_ns();
        Passes {
            handles: HashMap::new(),
            pss_read: HashSet::new(),
            thread_files: ThreadFiles::default(),
            diag,
            figures_budget: Budget::new(config.budget * CORE_BUDGET, start),
            costly_budget: Budget::new(config.budget, start),
            scan_budget: Budget::new(config.budget, start),
            next_figures: 0,
            next_costly: 0,
            next_scan: 0,
        }
    }

    /// Waits until a pass is due: the root, the processes to measure and whether the pass was
    /// asked for at once; `None` once the thread is to stop.
    fn wait(
        &self,
        config: &SlowConfig,
        shared: &Shared,
    ) -> Option<(Option<i32>, Vec<Identity>, bool)> {
        let mut state = shared.lock();
        loop {
            if state.stop {
                return None;
            }
            let t = mono_ns();
            // A pass is due when either tier's budget allows: the costly figures come as
            // soon as theirs does, not at the next saturation pass after it.
            let next_pass = self.next_figures.min(self.next_costly);
            let due = state.now
                || (!state.targets.is_empty()
                    && (t >= next_pass || (config.tree && t >= self.next_scan)));
            if due {
                break;
            }
            let wait = if state.targets.is_empty() {
                Duration::from_secs(1)
            } else {
                let next = if config.tree {
                    next_pass.min(self.next_scan)
                } else {
                    next_pass
                };
                Duration::from_nanos(next.saturating_sub(t))
            };
            state = shared
                .wake
                .wait_timeout(state, wait)
                .map(|(s, _)| s)
                .unwrap_or_else(|e| e.into_inner().0);
        }
        let now = std::mem::take(&mut state.now);
        Some((state.root, state.targets.clone(), now))
    }

    /// A pass over `targets`: the saturation figures, and the costly ones when they are due
    /// (or `now`); then when each tier is due next.
    fn measure(
        &mut self,
        config: &SlowConfig,
        targets: &[Identity],
        now: bool,
        began: u64,
        results: &mut SlowResults,
    ) {
        let started = thread_cpu_ns();
        let costly = now || began >= self.next_costly;
        let mut costly_ns = 0;
        let wanted: HashSet<Identity> = targets.iter().copied().collect();
        self.handles.retain(|id, _| wanted.contains(id));
        self.pss_read.retain(|id| wanted.contains(id));
        let mut table: Option<TcpTable> = None;
        for &(pid, start) in targets {
            if let Some((figures, ns)) = self.measure_one(config, (pid, start), costly, &mut table)
            {
                costly_ns += ns;
                results.figures.insert((pid, start), figures);
            }
        }
        self.thread_files.pass();
        let cost = thread_cpu_ns().saturating_sub(started);
        results.cpu_ns += cost;
        let interval = began + config.interval.as_nanos() as u64;
        let figures_ns = cost.saturating_sub(costly_ns);
        self.figures_budget.spend(began, figures_ns);
        self.next_figures = self.figures_budget.next_due().max(interval);
        // The costly figures have what the saturation figures leave of `slow_budget`, and
        // at least half of it: with both, the slow passes keep within the budget.
        self.costly_budget.share = costly_share(config.budget, figures_ns, config.interval);
        if costly {
            self.costly_budget.spend(began, costly_ns);
        }
        self.next_costly = self.costly_budget.next_due().max(interval);
    }

    /// One process's figures in this pass, and the CPU time its costly figures took; `None`
    /// when it cannot be opened or is another process now.
    fn measure_one(
        &mut self,
        config: &SlowConfig,
        (pid, start): Identity,
        costly: bool,
        table: &mut Option<TcpTable>,
    ) -> Option<(SlowFigures, u64)> {
        let (handle, netlink) = match self.handles.get(&(pid, start)) {
            Some(h) => h,
            None => match Watched::open(&config.root, pid) {
                Ok(h) if h.start_ticks == start => {
                    let netlink = self
                        .diag
                        .as_ref()
                        .is_some_and(|d| d.sees(&config.root, pid));
                    self.handles.entry((pid, start)).or_insert((h, netlink))
                }
                _ => return None,
            },
        };
        let mut figures = measure_core(handle, config, &mut self.thread_files);
        // A process never measured for PSS is, at once: a group's memory is a sum
        // over every member, and one that joined since the last costly pass (a new
        // backend of a database) would leave the sum incomplete until the next.
        if config.pss && !costly && !self.pss_read.contains(&(pid, start)) {
            figures.pss_uss = handle.pss_uss();
        }
        if figures.pss_uss.is_some() || costly {
            self.pss_read.insert((pid, start));
        }
        let mut costly_ns = 0;
        if costly {
            let from = thread_cpu_ns();
            let table = match (*netlink, &mut self.diag) {
                (true, Some(d)) => {
                    if table.is_none() {
                        *table = d.dump().ok();
                    }
                    table.as_ref()
                }
                _ => None,
            };
            measure_costly(handle, table, config, &mut figures);
            costly_ns = thread_cpu_ns().saturating_sub(from);
        }
        Some((figures, costly_ns))
    }

    /// The scan of every process's parent for the tree below `root`, and when the next is due.
    fn scan(&mut self, config: &SlowConfig, root: i32, began: u64, results: &mut SlowResults) {
        let started = thread_cpu_ns();
        results.tree = descendants(&collect::parents(&config.root), root);
        let cost = thread_cpu_ns().saturating_sub(started);
        results.cpu_ns += cost;
        self.scan_budget.spend(began, cost);
        self.next_scan = self
            .scan_budget
            .next_due()
            .max(began + SCAN_INTERVAL.as_nanos() as u64);
    }
}

/// The saturation figures of one process: its threads' and its limits'.
fn measure_core(handle: &Watched, config: &SlowConfig, files: &mut ThreadFiles) -> SlowFigures {
    let (peak_rss_bytes, threads) = handle.peak_rss_and_threads(&config.root, files);
    SlowFigures {
        peak_rss_bytes,
        threads,
        fd_limits: handle.fd_limits(),
        ..Default::default()
    }
}

/// The figures that cost with the load: its FDs by kind, its TCP sockets, PSS.
fn measure_costly(
    handle: &Watched,
    table: Option<&TcpTable>,
    config: &SlowConfig,
    figures: &mut SlowFigures,
) {
    if let Some((kinds, sockets)) = handle.fd_kinds(&config.root) {
        figures.tcp = match table {
            Some(table) => Some(crate::sockets::count(table, &sockets)),
            None => crate::sockets::from_files(&config.root, handle.pid, &sockets),
        };
        figures.fd_kinds = Some(kinds);
    }
    if config.pss {
        figures.pss_uss = handle.pss_uss();
    }
}

/// The processes below `root`, given every process's parent.
fn descendants(parents: &HashMap<i32, i32>, root: i32) -> Vec<i32> {
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for (&pid, &parent) in parents {
        children.entry(parent).or_default().push(pid);
    }
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(pid) = stack.pop() {
        for &child in children.get(&pid).into_iter().flatten() {
            if child != root && !out.contains(&child) {
                out.push(child);
                stack.push(child);
            }
        }
    }
    out.sort_unstable();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descendants_are_found_at_any_depth() {
        let parents = HashMap::from([(10, 1), (11, 10), (12, 11), (13, 10), (20, 1)]);
        assert_eq!(descendants(&parents, 10), vec![11, 12, 13]);
        assert_eq!(descendants(&parents, 20), Vec::<i32>::new());
    }

    #[test]
    fn the_costly_figures_have_what_the_saturation_figures_leave_of_the_budget() {
        let ms = 1_000_000u64;
        let second = 1_000 * ms;
        let each = Duration::from_secs(1);
        // 0.5 % of a core; the saturation figures cost 1.6 ms a pass, every second (the
        // benchmark's 102 threads); classifying its 10,000 FDs, 35 ms.
        let (budget, figures, costly) = (0.005, 16 * ms / 10, 35 * ms);
        assert!((costly_share(budget, figures, each) - 0.0034).abs() < 1e-9);
        // Never less than half the budget, however dear the saturation figures.
        assert_eq!(costly_share(budget, 10 * ms, each), 0.0025);
        // Over ten minutes the two tiers spend the budget, give or take one pass of each.
        let mut costly_budget = Budget::new(budget, 0);
        let (mut spent, mut classified, mut next_costly) = (0u64, 0, 0u64);
        for t in (0..600).map(|s| s * second) {
            spent += figures;
            if t >= next_costly {
                costly_budget.spend(t, costly);
                spent += costly;
                classified += 1;
            }
            costly_budget.share = costly_share(budget, figures, each);
            next_costly = costly_budget.next_due().max(t + second);
        }
        let allowed = budget * (600 * second) as f64 + (costly + figures) as f64;
        assert!(
            spent as f64 <= allowed,
            "{spent} ns of CPU, {allowed} allowed"
        );
        // The FDs classified every 10 or 11 s: 35 ms at 0.34 % of a core.
        assert!((55..=60).contains(&classified), "{classified}");
    }

    #[test]
    fn the_budget_starts_full_and_pays_for_every_pass_after_the_first_in_advance() {
        let ms = 1_000_000;
        // 1 % of a core; a pass costs 40 ms of CPU: one every 4 s from the start, so a
        // figure is due every 4 s from the first second on (the start-up pass is the one
        // pass's worth a full bucket holds).
        let mut budget = Budget::new(0.01, 0);
        budget.spend(0, 40 * ms);
        assert_eq!(budget.next_due(), 4_000 * ms);
        budget.spend(4_000 * ms, 40 * ms);
        assert_eq!(budget.next_due(), 8_000 * ms);
        // A pass that comes early (a figure asked for now) is paid back before the next.
        budget.spend(5_000 * ms, 40 * ms);
        assert_eq!(budget.next_due(), 12_000 * ms);
        // An idle hour saves at most one pass: a target that turns costly is not measured in
        // a burst.
        budget.spend(3_600_000 * ms, 40 * ms);
        budget.spend(3_600_000 * ms, 400 * ms);
        assert_eq!(budget.next_due(), 3_600_000 * ms + 80_000 * ms);
    }

    #[test]
    fn a_pass_measures_the_targets_and_respects_the_schedule() {
        let me = std::process::id() as i32;
        let root = ProcRoot::default();
        let start = Watched::open(&root, me).unwrap().start_ticks;
        let slow = SlowCollector::start(SlowConfig {
            root,
            tree: true,
            pss: false,
            interval: Duration::from_secs(3600),
            budget: 0.005,
        })
        .unwrap();
        slow.watch(Some(me), vec![(me, start)], true);
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        let results = loop {
            if let Some(r) = slow.take() {
                break r;
            }
            assert!(std::time::Instant::now() < deadline, "no slow pass");
            std::thread::sleep(Duration::from_millis(5));
        };
        let mine = &results.figures[&(me, start)];
        assert!(mine.fd_kinds.is_some() && mine.peak_rss_bytes.is_some());
        assert!(results.cpu_ns > 0);
        // The next pass is an hour away.
        std::thread::sleep(Duration::from_millis(100));
        assert!(slow.take().is_none());
    }
}
