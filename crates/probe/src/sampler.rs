//! Taking samples: a fixed-rate schedule, the process tree, deltas, and the slow collectors'
//! budget.
//!
//! [`run`] ticks at `start + k × interval` (not "sleep after work", which drifts), sleeping
//! with `clock_nanosleep` to the absolute time. A tick that cannot be taken on time is skipped
//! and counted: the next sample says how many were missed, and an event records it.
//!
//! [`Sampler::tick`] keeps one `ProcessState` per watched process, keyed by PID and checked
//! against the process's start time, so that a PID reused by another process is a new process,
//! and a process that is gone is dropped (with an event). The tree grows from the target: the
//! main thread's `children` file, and the slow collectors' full scan of parents.
//!
//! The slow collectors run on a thread of their own (`slow.rs`) within their CPU budget; their
//! results go into the first sample after each pass. A full tick, at most every 100 ms (every
//! tick at 10 Hz), also reads the host's figures, each process's `stat` and `io` (faults,
//! bytes, the user/system split: sums over every thread) and the main threads' `children`; the
//! ticks in between read only what changes fast (CPU, memory, threads, FDs). The probe's own
//! CPU use is in every sample.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rustix::time::Timespec;

use procfs::FromRead;

use nix::sched::sched_getaffinity;
use nix::unistd::Pid;

use crate::activity::ActivityFeed;
use crate::buffer::SharedBuffer;
use crate::canary::{Canary, Reading as CanaryReading};
use crate::clock::{mono_ns, process_cpu_ns, thread_cpu_ns, wall_ns};
use crate::collect::{self, CgroupFiles, HostFiles, ProcRoot, Reading, SystemFacts, Watched};
use crate::profile::{ProfileConfig, Profiler, Tree};
use crate::protocol::Record;
use crate::sample::{
    DbActivity, Event, EventKind, HostInfo, HostSample, ProbeCost, ProcessSample, Role, Sample,
};
use crate::selector::Selector;
use crate::slow::{SlowCollector, SlowConfig, SlowResults};

/// How the sampler works; the command line fills it in.
#[derive(Debug, Clone)]
pub struct SamplerConfig {
    pub selector: Selector,
    pub root: ProcRoot,
    pub interval: Duration,
    /// Watch the whole tree under the target (default), or the target alone.
    pub tree: bool,
    /// The slow collectors run at most this often.
    pub slow_interval: Duration,
    /// The slow collectors' share of one core they may use, e.g. 0.005.
    pub slow_budget: f64,
    /// Also read PSS and USS (`smaps_rollup`, costly).
    pub pss: bool,
    /// Added to every time the probe reports (tests of clock alignment only: a probe whose
    /// clock is off, on purpose).
    pub clock_shift_ns: i64,
    /// Also sample the tree's on-CPU call stacks (`--profile`).
    pub profile: Option<ProfileConfig>,
    /// Which participant the tree is, and its name as the user knows it.
    pub role: Role,
    pub name: Option<String>,
    /// The database's own account of its backends, when a reader feeds it.
    pub activity: Option<ActivityFeed>,
    /// Also run the wake-up canary on the target's CPUs (`--canary`), its cost in the host's
    /// figures (`HostSample::wake_ns`).
    pub canary: bool,
}

impl SamplerConfig {
    /// Watching `selector`'s process tree in the system's /proc with the command line's defaults:
    /// every 100 ms, slow collectors at most every second within 0.5 % of a core, no PSS.
    pub fn new(selector: Selector) -> Self {
        SamplerConfig {
            selector,
            root: ProcRoot::default(),
            interval: Duration::from_millis(100),
            tree: true,
            slow_interval: Duration::from_secs(1),
            slow_budget: 0.005,
            pss: false,
            clock_shift_ns: 0,
            profile: None,
            role: Role::Target,
            name: None,
            activity: None,
            canary: false,
        }
    }
}

/// Full ticks (the host's figures, `stat`, `io`, `children`) come at most this often.
pub const FULL_PERIOD: Duration = Duration::from_millis(100);

/// How long a target found mid-exec (empty command line) is waited for before it is attached
/// as it is.
const EXEC_WAIT_NS: u64 = 1_000_000_000;

/// The shortest and longest sampling intervals.
pub const MIN_INTERVAL: Duration = Duration::from_millis(10);
pub const MAX_INTERVAL: Duration = Duration::from_secs(60);

/// What the sampler remembers of one process between ticks.
#[derive(Debug)]
struct ProcessState {
    handle: Watched,
    /// CPU time and when it was read, for the next CPU %.
    previous: Option<(u64, u64)>,
    /// (time, utime, stime) readings of the last second or so, to split CPU into user/system.
    ticks: VecDeque<(u64, u64, u64)>,
    fd_limits: (Option<u64>, Option<u64>),
}

/// The wake-up canary of one target: running with its last reading, or not (it could not start).
#[derive(Debug)]
struct CanaryFor {
    pid: i32,
    running: Option<(Canary, CanaryReading)>,
}

impl CanaryFor {
    fn start(pid: i32) -> CanaryFor {
        let started = sched_getaffinity(Pid::from_raw(pid))
            .map_err(std::io::Error::from)
            .and_then(|cpus| Canary::start_on(Some(cpus)));
        let running = match started {
            Ok(canary) => {
                let first = canary.reading();
                Some((canary, first))
            }
            Err(e) => {
                tracing::warn!("no wake-up canary beside process {pid}: {e}");
                None
            }
        };
        CanaryFor { pid, running }
    }
}

/// The state of sampling between ticks.
#[derive(Debug)]
pub struct Sampler {
    config: SamplerConfig,
    facts: SystemFacts,
    myself: Option<i32>,
    /// The target (root of the tree), once attached.
    root: Option<i32>,
    processes: BTreeMap<i32, ProcessState>,
    next_resolve: u64,
    /// When the target was first found mid-exec and left for the next tick (for at most
    /// [`EXEC_WAIT_NS`]).
    exec_seen: Option<(i32, u64)>,
    slow: SlowCollector,
    host: Option<HostFiles>,
    /// The root's cgroup CPU controller, opened for the root it was found for.
    cgroup: Option<(i32, Option<CgroupFiles>)>,
    /// When the last database reading sent was read (wall ns).
    activity_sent: u64,
    next_full: u64,
    /// This process's `statm`, for its own memory.
    myself_statm: Option<std::fs::File>,
    own_rss_bytes: u64,
    previous_mono: Option<u64>,
    previous_own_cpu: Option<(u64, u64)>,
    /// The tree as the profiler should see it.
    profiled: Tree,
    /// The wake-up canary on the target's CPUs (`--canary`).
    canary: Option<CanaryFor>,
}

impl Sampler {
    /// A sampler, with its slow collectors' thread started.
    pub fn new(config: SamplerConfig) -> Result<Self, crate::error::Error> {
        let myself = config.root.is_system().then(|| std::process::id() as i32);
        let facts = SystemFacts::current();
        let slow = SlowCollector::start(SlowConfig {
            root: config.root.clone(),
            tree: config.tree,
            pss: config.pss,
            interval: config.slow_interval,
            budget: config.slow_budget,
        })
        .map_err(|source| crate::error::Error::Io {
            what: "start the slow collectors' thread".into(),
            source,
        })?;
        Ok(Sampler {
            facts,
            myself,
            root: None,
            processes: BTreeMap::new(),
            next_resolve: 0,
            exec_seen: None,
            slow,
            host: HostFiles::open(&config.root).ok(),
            cgroup: None,
            activity_sent: 0,
            next_full: 0,
            myself_statm: std::fs::File::open("/proc/self/statm").ok(),
            own_rss_bytes: 0,
            previous_mono: None,
            previous_own_cpu: None,
            profiled: Tree::default(),
            canary: None,
            config,
        })
    }

    /// The facts about this host sent to every subscriber.
    pub fn host_info(&self) -> HostInfo {
        let (hostname, kernel, file_max) = collect::host_facts(&self.config.root);
        let mem_total_bytes = procfs::Meminfo::from_file(self.config.root.file("meminfo"))
            .map(|m| m.mem_total)
            .unwrap_or(0);
        HostInfo {
            hostname,
            kernel,
            // The host's CPUs, not the ones this process may use: a probe pinned beside the
            // generator still watches a host of all its CPUs.
            cpus: collect::online_cpus(&self.config.root).unwrap_or_else(|| {
                std::thread::available_parallelism().map_or(1, |n| n.get() as u64)
            }),
            mem_total_bytes,
            file_max,
            clock_ticks: self.facts.ticks_per_second,
            page_size: self.facts.page_size,
            probe_version: env!("CARGO_PKG_VERSION").into(),
            selector: self.config.selector.to_string(),
            role: self.config.role,
            name: self.config.name.clone(),
            interval_ns: self.config.interval.as_nanos() as u64,
            profile_hz: self.config.profile.as_ref().map(|p| p.hz),
        }
    }

    /// Takes the sample due at `scheduled` (monotonic ns), `missed` ticks after the previous.
    pub fn tick(&mut self, scheduled: u64, missed: u64) -> (Sample, Vec<Event>) {
        let started_cpu = thread_cpu_ns();
        let mono = mono_ns();
        let wall = wall_ns();
        let (rows, mut events, full, slow_cpu_ns) = self.gather(mono, wall, missed);

        let host = if full {
            let wake_ns = self.wake_ns();
            self.host
                .as_mut()
                .and_then(|h| h.sample().ok())
                .map(|host| HostSample { wake_ns, ..host })
        } else {
            None
        };
        let cgroup = if full { self.read_cgroup() } else { None };
        let database = if full { self.read_activity(wall) } else { None };
        let interval_ns = self.previous_mono.map_or(0, |p| mono.saturating_sub(p));
        self.previous_mono = Some(mono);
        let total = total(&rows);
        let probe = self.own_cost(mono, started_cpu, slow_cpu_ns, full);
        let shift = |t: u64| t.saturating_add_signed(self.config.clock_shift_ns);
        for e in &mut events {
            e.mono_ns = shift(e.mono_ns);
            e.wall_ns = shift(e.wall_ns);
        }
        let sample = Sample {
            scheduled_mono_ns: shift(scheduled),
            mono_ns: shift(mono),
            wall_ns: shift(wall),
            interval_ns,
            missed_ticks: missed,
            target_pid: self.root,
            processes: rows,
            total,
            host,
            cgroup,
            database,
            probe,
        };
        (sample, events)
    }

    /// This tick's rows (root first) and events, with the tree brought up to date; also whether
    /// it is a full tick, and the CPU time of the slow pass whose figures it took.
    fn gather(
        &mut self,
        mono: u64,
        wall: u64,
        missed: u64,
    ) -> (Vec<ProcessSample>, Vec<Event>, bool, u64) {
        let mut events = Vec::new();
        let event = |kind| Event {
            mono_ns: mono,
            wall_ns: wall,
            kind,
        };
        if missed > 0 {
            events.push(event(EventKind::MissedTicks { count: missed }));
        }

        // Attach when there is no target (its exit is noticed below, by the regular read).
        let attached = self.attach(mono, &mut events, event);

        let full = mono >= self.next_full;
        if full {
            self.next_full =
                mono + FULL_PERIOD.as_nanos() as u64 - self.config.interval.as_nanos() as u64 / 2;
        }
        let slow = self.slow.take();
        let slow_arrived = slow.is_some();
        if self.config.tree && self.root.is_some() && (full || slow.is_some()) {
            let scanned = slow.as_ref().map(|r| r.tree.as_slice()).unwrap_or_default();
            self.grow_tree(scanned, full, &mut events, event);
        }

        // This tick's figures of every process; drop those that are gone.
        let (mut rows, gone) = self.read_rows(full, mono);
        // The watched set changes only here, at attaching and in `grow_tree`: tell the slow
        // collectors then (and at full ticks), not at every tick.
        let changed = full || slow_arrived || attached || !gone.is_empty();
        self.drop_gone(gone, &mut rows, &mut events, event);
        let slow_cpu_ns = slow.map_or(0, |r| self.apply_slow(r, &mut rows));
        if changed {
            self.watch_changed(attached);
        }
        (rows, events, full, slow_cpu_ns)
    }

    /// With `--canary`: what a wake-up cost on the target's CPUs since the last full tick. The
    /// canary is started once for each new target, on the CPUs it may run on (on this host's
    /// /proc only), and stopped when there is none; where it cannot start, one warning and no
    /// figure for that target.
    fn wake_ns(&mut self) -> Option<f64> {
        let root = self
            .root
            .filter(|_| self.config.canary && self.config.root.is_system());
        if self.canary.as_ref().map(|c| c.pid) != root {
            self.canary = root.map(CanaryFor::start);
            return None;
        }
        let (canary, last) = self.canary.as_mut()?.running.as_mut()?;
        let now = canary.reading();
        let cost = now.per_exchange_since(last);
        *last = now;
        cost
    }

    /// Looks for the target when there is none and it is time to; says whether it attached.
    fn attach(
        &mut self,
        mono: u64,
        events: &mut Vec<Event>,
        event: impl Fn(EventKind) -> Event,
    ) -> bool {
        if self.root.is_some() || mono < self.next_resolve {
            return false;
        }
        self.next_resolve = mono + self.resolve_period();
        let Some(pid) = self.config.selector.resolve(&self.config.root, self.myself) else {
            return false;
        };
        let opened = Watched::open(&self.config.root, pid);
        let cmdline = opened.as_ref().map(Watched::cmdline).unwrap_or_default();
        let first_seen = match self.exec_seen {
            Some((seen, at)) if seen == pid => at,
            _ => mono,
        };
        let mid_exec = cmdline.is_empty()
            && opened.as_ref().is_ok_and(Watched::has_program)
            && mono < first_seen + EXEC_WAIT_NS;
        if mid_exec {
            self.exec_seen = Some((pid, first_seen));
            // Caught between its parent's fork and the end of its exec (a target just
            // started): its name and command line are not yet its own. Look again at
            // the next tick (a program that blanked its own stays blank: attached
            // after a second of that).
            self.next_resolve = mono;
            return false;
        }
        let Ok(handle) = opened else {
            return false;
        };
        self.exec_seen = None;
        let fd_limits = handle.fd_limits();
        events.push(event(EventKind::Attached {
            pid,
            comm: handle.comm.clone(),
            cmdline,
            fd_limit_soft: fd_limits.0,
            fd_limit_hard: fd_limits.1,
        }));
        if let Some(kind) = unreadable(&handle, &[]) {
            events.push(event(kind));
        }
        self.root = Some(pid);
        self.processes
            .insert(pid, ProcessState::new(handle, fd_limits));
        true
    }

    /// This tick's row of every watched process, and the PIDs of those that could not be read.
    fn read_rows(&mut self, full: bool, mono: u64) -> (Vec<ProcessSample>, Vec<i32>) {
        let mut rows = Vec::with_capacity(self.processes.len());
        let mut gone = Vec::new();
        for (&pid, state) in self.processes.iter_mut() {
            match state.handle.read(&self.facts, full) {
                Ok(reading) => rows.push(state.complete(reading, mono)),
                Err(_) => gone.push(pid),
            }
        }
        (rows, gone)
    }

    /// Forgets the processes that are gone (the whole tree with the target), each with its
    /// event, and puts the root's row first.
    fn drop_gone(
        &mut self,
        gone: Vec<i32>,
        rows: &mut Vec<ProcessSample>,
        events: &mut Vec<Event>,
        event: impl Fn(EventKind) -> Event,
    ) {
        if self.root.is_some_and(|root| gone.contains(&root)) {
            // The target is gone: so is the tree under it. Look for the next one at once.
            let root = self.root.take().unwrap_or_default();
            events.push(event(EventKind::TargetExited { pid: root }));
            self.processes.clear();
            rows.clear();
            self.next_resolve = 0;
        } else {
            for pid in gone {
                self.processes.remove(&pid);
                events.push(event(EventKind::ProcessExited { pid }));
            }
        }
        // Root first, then by PID.
        if let Some(root) = self.root {
            if let Some(at) = rows.iter().position(|r| r.pid == root) {
                let row = rows.remove(at);
                rows.insert(0, row);
            }
        }
    }

    /// Tells the slow collectors and the profiler which processes are watched now.
    fn watch_changed(&mut self, attached: bool) {
        let identities = self
            .processes
            .iter()
            .map(|(&pid, state)| (pid, state.handle.start_ticks))
            .collect();
        self.slow.watch(self.root, identities, attached);
        self.profiled.set(self.root, self.processes.keys().copied());
    }

    /// The root's cgroup CPU controller now, opened anew when the root changes.
    fn read_cgroup(&mut self) -> Option<crate::sample::CgroupCpu> {
        let root = self.root?;
        if self.cgroup.as_ref().map(|(pid, _)| *pid) != Some(root) {
            self.cgroup = Some((root, CgroupFiles::open(&self.config.root, root)));
        }
        self.cgroup.as_mut()?.1.as_mut()?.read()
    }

    /// The database's latest reading, once, while fresh (a second).
    fn read_activity(&mut self, wall: u64) -> Option<DbActivity> {
        let read =
            self.config
                .activity
                .as_ref()?
                .newer_than(self.activity_sent, wall, 1_000_000_000)?;
        self.activity_sent = read.read_wall_ns;
        Some(read)
    }

    /// How often to look for the target while there is none.
    fn resolve_period(&self) -> u64 {
        (self.config.interval.max(Duration::from_millis(200))).as_nanos() as u64
    }

    /// Adds processes that joined the tree: children of the watched processes' main threads
    /// (at full ticks), and whatever the slow collectors' full scan found below the root.
    fn grow_tree(
        &mut self,
        scanned: &[i32],
        full: bool,
        events: &mut Vec<Event>,
        event: impl Fn(EventKind) -> Event,
    ) {
        let known: HashSet<i32> = self.processes.keys().copied().collect();
        let mut found: Vec<i32> = scanned
            .iter()
            .copied()
            .filter(|p| !known.contains(p))
            .collect();
        if full {
            for state in self.processes.values() {
                let children = state.handle.children();
                found.extend(children.into_iter().filter(|c| !known.contains(c)));
            }
        }
        found.sort_unstable();
        found.dedup();
        for pid in found {
            if Some(pid) == self.myself {
                continue;
            }
            let Ok(handle) = Watched::open(&self.config.root, pid) else {
                // Gone already, or this process is out of file descriptors: say which.
                if let Err(e) = std::fs::File::open("/dev/null") {
                    tracing::warn!("cannot watch PID {pid}, a member of the tree: {e} (raise the probe's open-file limit, e.g. LimitNOFILE)");
                }
                continue;
            };
            {
                events.push(event(EventKind::ProcessStarted {
                    pid,
                    ppid: handle.ppid,
                    comm: handle.comm.clone(),
                }));
                // Said again only when it differs from the root's (a worker of another user).
                let root = self
                    .root
                    .and_then(|r| self.processes.get(&r))
                    .map(|p| p.handle.unreadable().to_vec())
                    .unwrap_or_default();
                if let Some(kind) = unreadable(&handle, &root) {
                    events.push(event(kind));
                }
                let limits = handle.fd_limits();
                self.processes
                    .insert(pid, ProcessState::new(handle, limits));
            }
        }
    }

    /// Puts a slow pass's figures into this sample's rows; returns the pass's CPU time.
    fn apply_slow(&mut self, results: SlowResults, rows: &mut [ProcessSample]) -> u64 {
        for row in rows.iter_mut() {
            let Some(figures) = results.figures.get(&(row.pid, row.start_ticks)) else {
                continue;
            };
            row.peak_rss_bytes = figures.peak_rss_bytes;
            if let Some(threads) = &figures.threads {
                row.voluntary_ctxt_switches = Some(threads.switches.0);
                row.involuntary_ctxt_switches = Some(threads.switches.1);
                row.run_delay_ns = threads.run_delay_ns;
                row.thread_states = threads.states;
                row.cpus_allowed = threads.cpus_allowed.as_ref().map(|l| l.len() as u64);
                row.cpu_list = threads.cpus_allowed.clone();
            }
            (row.fd_limit_soft, row.fd_limit_hard) = figures.fd_limits;
            if let Some(state) = self.processes.get_mut(&row.pid) {
                state.fd_limits = figures.fd_limits;
            }
            row.fd_kinds = figures.fd_kinds.clone();
            row.tcp = figures.tcp.clone();
            if let Some((pss, uss)) = figures.pss_uss {
                row.pss_bytes = Some(pss);
                row.uss_bytes = Some(uss);
            }
        }
        results.cpu_ns
    }

    /// The probe's own CPU and RSS, read at full ticks (at 100 Hz, the CPU % of this process
    /// over the last 100 ms); this tick's CPU at every tick.
    fn own_cost(&mut self, mono: u64, started_cpu: u64, slow_cpu_ns: u64, full: bool) -> ProbeCost {
        let mut cpu_pct = None;
        if full {
            let process_cpu = process_cpu_ns();
            cpu_pct = self.previous_own_cpu.and_then(|(cpu, at)| {
                (mono > at)
                    .then(|| 100.0 * process_cpu.saturating_sub(cpu) as f64 / (mono - at) as f64)
            });
            self.previous_own_cpu = Some((process_cpu, mono));
            self.own_rss_bytes = self
                .myself_statm
                .as_ref()
                .and_then(collect::statm_pages)
                .map_or(0, |(_, resident)| resident * self.facts.page_size);
        }
        ProbeCost {
            cpu_pct,
            sample_cpu_ns: thread_cpu_ns().saturating_sub(started_cpu),
            slow_cpu_ns,
            rss_bytes: self.own_rss_bytes,
        }
    }
}

impl ProcessState {
    fn new(handle: Watched, fd_limits: (Option<u64>, Option<u64>)) -> Self {
        ProcessState {
            previous: None,
            ticks: VecDeque::new(),
            handle,
            fd_limits,
        }
    }

    /// Completes this tick's row for the process: CPU % since the previous tick, split into
    /// user and system, and the FD limits.
    fn complete(&mut self, reading: Reading, mono: u64) -> ProcessSample {
        let mut row = reading.sample;
        let cpu_pct = self.previous.and_then(|(cpu, at)| {
            (mono > at).then(|| 100.0 * row.cpu_ns.saturating_sub(cpu) as f64 / (mono - at) as f64)
        });
        self.previous = Some((row.cpu_ns, mono));
        if let Some(ticks) = reading.ticks {
            self.ticks.push_back((mono, ticks.user, ticks.system));
            while self.ticks.len() > 2 && mono - self.ticks[1].0 >= 1_000_000_000 {
                self.ticks.pop_front();
            }
        }
        // Split by the user/system ticks of the last second or so.
        if let (Some(pct), Some(&(_, u0, s0)), Some(&(_, u1, s1))) =
            (cpu_pct, self.ticks.front(), self.ticks.back())
        {
            let (du, ds) = (u1.saturating_sub(u0), s1.saturating_sub(s0));
            if du + ds > 0 {
                let user = du as f64 / (du + ds) as f64;
                row.user_pct = Some(pct * user);
                row.system_pct = Some(pct * (1.0 - user));
            }
        }
        row.cpu_pct = cpu_pct;
        (row.fd_limit_soft, row.fd_limit_hard) = self.fd_limits;
        row
    }
}

/// A sum where a missing figure counts as nothing, and two missing ones stay missing.
fn add<T: std::ops::Add<Output = T>>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    }
}

/// The event saying what of `handle`'s process may not be read, unless nothing or as `said`.
fn unreadable(handle: &Watched, said: &[&'static str]) -> Option<EventKind> {
    let figures = handle.unreadable();
    if figures.is_empty() || figures == said {
        return None;
    }
    let me = rustix::process::geteuid().as_raw();
    let owner = std::fs::metadata(format!("/proc/{}", handle.pid))
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m).to_string())
        .unwrap_or_else(|_| "?".into());
    Some(EventKind::Unreadable {
        pid: handle.pid,
        figures: figures.iter().map(|f| f.to_string()).collect(),
        reason: format!(
            "the probe (UID {me}) may not trace this process (UID {owner}): run the probe as the target's user (the unit's user.conf) or grant it CAP_SYS_PTRACE (ptrace.conf)"
        ),
    })
}

/// The tree's rows summed (limits are the root's).
fn total(rows: &[ProcessSample]) -> Option<ProcessSample> {
    let first = rows.first()?;
    let mut t = ProcessSample {
        pid: first.pid,
        ppid: first.ppid,
        start_ticks: first.start_ticks,
        comm: first.comm.clone(),
        fd_limit_soft: first.fd_limit_soft,
        fd_limit_hard: first.fd_limit_hard,
        ..Default::default()
    };
    // A total of the readable FDs alone would be a figure too small: none, if one is missing.
    t.fds = rows.iter().map(|r| r.fds).sum();
    for r in rows {
        t.cpu_ns += r.cpu_ns;
        t.cpu_pct = add(t.cpu_pct, r.cpu_pct);
        t.user_pct = add(t.user_pct, r.user_pct);
        t.system_pct = add(t.system_pct, r.system_pct);
        t.rss_bytes += r.rss_bytes;
        t.vsize_bytes += r.vsize_bytes;
        t.threads += r.threads;
        t.minor_faults = add(t.minor_faults, r.minor_faults);
        t.major_faults = add(t.major_faults, r.major_faults);
        t.read_bytes = add(t.read_bytes, r.read_bytes);
        t.write_bytes = add(t.write_bytes, r.write_bytes);
        t.peak_rss_bytes = add(t.peak_rss_bytes, r.peak_rss_bytes);
        t.voluntary_ctxt_switches = add(t.voluntary_ctxt_switches, r.voluntary_ctxt_switches);
        t.involuntary_ctxt_switches = add(t.involuntary_ctxt_switches, r.involuntary_ctxt_switches);
        t.run_delay_ns = add(t.run_delay_ns, r.run_delay_ns);
        t.cpus_allowed = t.cpus_allowed.max(r.cpus_allowed);
        t.cpu_list = match (t.cpu_list.take(), &r.cpu_list) {
            (Some(a), Some(b)) => Some(crate::cpus::CpuList::new(
                a.cpus().iter().chain(b.cpus()).copied().collect(),
            )),
            (a, b) => a.or_else(|| b.clone()),
        };
        t.thread_states = add(t.thread_states, r.thread_states);
        t.pss_bytes = add(t.pss_bytes, r.pss_bytes);
        t.uss_bytes = add(t.uss_bytes, r.uss_bytes);
        if let Some(k) = &r.fd_kinds {
            add_fd_kinds(&mut t.fd_kinds, k);
        }
        if let Some(k) = &r.tcp {
            add_tcp(&mut t.tcp, k);
        }
    }
    Some(t)
}

/// Adds a row's FDs by kind to the total's.
fn add_fd_kinds(total: &mut Option<crate::sample::FdKinds>, k: &crate::sample::FdKinds) {
    let s = total.get_or_insert_with(Default::default);
    s.socket += k.socket;
    s.file += k.file;
    s.pipe += k.pipe;
    s.epoll += k.epoll;
    s.eventfd += k.eventfd;
    s.timerfd += k.timerfd;
    s.other += k.other;
}

/// Adds a row's TCP sockets by state to the total's.
fn add_tcp(total: &mut Option<crate::sample::TcpSockets>, k: &crate::sample::TcpSockets) {
    let s = total.get_or_insert_with(Default::default);
    s.established += k.established;
    s.syn_sent += k.syn_sent;
    s.syn_recv += k.syn_recv;
    s.fin_wait1 += k.fin_wait1;
    s.fin_wait2 += k.fin_wait2;
    s.time_wait += k.time_wait;
    s.close += k.close;
    s.close_wait += k.close_wait;
    s.last_ack += k.last_ack;
    s.listen += k.listen;
    s.closing += k.closing;
    s.accept_queue += k.accept_queue;
}

/// A sampler running on a thread of its own into a buffer; stopped when dropped.
#[derive(Debug)]
pub struct Background {
    pub buffer: SharedBuffer,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    profiler: Option<Profiler>,
}

impl Background {
    /// Starts sampling into a new buffer holding at most `max_records` and `max_bytes`.
    pub fn start(
        sampler: Sampler,
        max_records: usize,
        max_bytes: usize,
    ) -> Result<Self, crate::error::Error> {
        let buffer = SharedBuffer::new(max_records, max_bytes);
        let profiler = match &sampler.config.profile {
            Some(config) => Some(
                Profiler::start(
                    config.clone(),
                    sampler.profiled.clone(),
                    buffer.clone(),
                    sampler.config.clock_shift_ns,
                )
                .map_err(|source| crate::error::Error::Io {
                    what: "start the profiling thread".into(),
                    source,
                })?,
            ),
            None => None,
        };
        let stop = Arc::new(AtomicBool::new(false));
        let thread = std::thread::Builder::new()
            .name("sampler".into())
            .spawn({
                let (buffer, stop) = (buffer.clone(), stop.clone());
                move || run(sampler, buffer, stop)
            })
            .map_err(|source| crate::error::Error::Io {
                what: "start the sampling thread".into(),
                source,
            })?;
        Ok(Background {
            buffer,
            stop,
            thread: Some(thread),
            profiler,
        })
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.profiler.take();
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Samples on a fixed-rate schedule into `buffer` until `stop` is set (checked at least every
/// 100 ms, however long the interval).
pub fn run(mut sampler: Sampler, buffer: SharedBuffer, stop: Arc<AtomicBool>) {
    let interval = (sampler.config.interval.as_nanos() as u64).max(1);
    let start = mono_ns();
    let mut tick: u64 = 0;
    let mut missed: u64 = 0;
    while !stop.load(Ordering::Relaxed) {
        let scheduled = start + tick * interval;
        let now = mono_ns();
        if now < scheduled {
            let nap = (scheduled - now).min(100_000_000);
            sleep_until(now + nap);
            continue;
        }
        // Ticks whose time has entirely passed cannot be taken on time: skip and count them.
        let late = (now - scheduled) / interval;
        if late > 0 {
            tick += late;
            missed += late;
        }
        let (sample, events) = sampler.tick(start + tick * interval, missed);
        missed = 0;
        let wake = !events.is_empty();
        let events = events.into_iter().map(|e| (e.mono_ns, Record::Event(e)));
        let sample = (sample.mono_ns, Record::Sample(Box::new(sample)));
        buffer.push_all(events.chain(std::iter::once(sample)), wake);
        tick += 1;
    }
    buffer.wake();
}

fn sleep_until(mono: u64) {
    let at = Timespec {
        tv_sec: (mono / 1_000_000_000) as i64,
        tv_nsec: (mono % 1_000_000_000) as i64,
    };
    let _ = rustix::thread::clock_nanosleep_absolute(rustix::thread::ClockId::Monotonic, &at);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(selector: Selector) -> SamplerConfig {
        SamplerConfig::new(selector)
    }

    #[test]
    fn a_missing_target_gives_host_samples_and_no_rows() {
        let mut s = Sampler::new(config(Selector::Pid(i32::MAX))).unwrap();
        let (sample, events) = s.tick(mono_ns(), 0);
        assert!(events.is_empty());
        assert_eq!(sample.target_pid, None);
        assert!(sample.processes.is_empty() && sample.total.is_none());
        assert!(sample.host.unwrap().mem_total_bytes > 0);
        // At 100 Hz, the host is read every tenth sample.
        let (next, _) = s.tick(mono_ns(), 0);
        assert!(next.host.is_none());
    }

    #[test]
    fn a_process_first_read_between_full_ticks_has_its_parent_and_name() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let facts = SystemFacts::current();
        let mut handle = Watched::open(&ProcRoot::default(), child.id() as i32).unwrap();
        let quick = handle.read(&facts, false).unwrap();
        let mut state = ProcessState::new(handle, (None, None));
        let row = state.complete(quick, mono_ns());
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(row.comm, "sleep");
        assert_eq!(row.ppid, std::process::id() as i32);
        assert_eq!(row.minor_faults, None);
    }

    #[test]
    fn with_the_canary_the_hosts_figures_say_what_a_wake_up_cost_on_the_targets_cpus() {
        let me = std::process::id() as i32;
        let figures = |canary: bool| {
            let mut s = Sampler::new(SamplerConfig {
                canary,
                ..config(Selector::Pid(me))
            })
            .unwrap();
            // The first full tick attaches and starts the canary; the next says what it cost.
            let (first, _) = s.tick(mono_ns(), 0);
            std::thread::sleep(Duration::from_millis(150));
            let (second, _) = s.tick(mono_ns(), 0);
            (first.host.unwrap().wake_ns, second.host.unwrap().wake_ns)
        };
        let (first, second) = figures(true);
        assert_eq!(first, None);
        let cost = second.unwrap();
        assert!(
            cost > 1_000.0 && cost < 4_000_000.0,
            "{cost} ns an exchange"
        );
        assert_eq!(figures(false), (None, None));
    }

    #[test]
    fn missed_ticks_are_reported() {
        let mut s = Sampler::new(config(Selector::Pid(i32::MAX))).unwrap();
        let (sample, events) = s.tick(mono_ns(), 3);
        assert_eq!(sample.missed_ticks, 3);
        assert_eq!(events[0].kind, EventKind::MissedTicks { count: 3 });
    }
}
