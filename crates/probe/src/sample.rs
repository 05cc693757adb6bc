//! What the probe reports: samples of the target's process tree and of the host, and events.
//!
//! A [`Sample`] is taken at every tick of the fixed-rate schedule. Fast figures (CPU, memory,
//! threads, FD count, faults, I/O) are in every sample; costly ones (FDs by kind, TCP sockets by
//! state, context switches, peak RSS, PSS/USS, FD limits) are `Some` only in the samples where
//! the slow collector measured them, so that their cost stays within the probe's CPU budget.
//! Counters (`cpu_ns`, faults, bytes, context switches) are cumulative since the process
//! started: consumers take differences, which survive a lost sample. CPU % over the interval is
//! given ready-made because it is the headline figure.
//!
//! Each field's source in /proc is named (see proc(5)).

use serde::{Deserialize, Serialize};

/// One tick of the probe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// When the tick was due, on the probe host's monotonic clock (ns).
    pub scheduled_mono_ns: u64,
    /// When the sample was actually taken, on the monotonic clock (ns).
    pub mono_ns: u64,
    /// When the sample was taken, wall clock (ns since the Unix epoch).
    pub wall_ns: u64,
    /// Time since the previous sample (ns); 0 for the first.
    pub interval_ns: u64,
    /// Ticks skipped since the previous sample because sampling ran late (never silent).
    pub missed_ticks: u64,
    /// The root of the watched tree, or `None` while no process matches the selector.
    pub target_pid: Option<i32>,
    /// One row per process of the tree, root first.
    pub processes: Vec<ProcessSample>,
    /// The tree's processes summed (`pid` is the root's; peaks are sums of peaks).
    pub total: Option<ProcessSample>,
    /// The host's figures, read at most every 100 ms (`None` in the samples in between: at
    /// 100 Hz, generating /proc/stat and /proc/meminfo would cost more than the rest).
    pub host: Option<HostSample>,
    /// The CPU controller of the root's cgroup, read with the host (`None` in between, and
    /// where the probe cannot read it).
    #[serde(default)]
    pub cgroup: Option<CgroupCpu>,
    /// What the watched database said of its backends, for a probe given a reading of it
    /// ([`crate::activity`]); only in the first full tick after each new reading.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub database: Option<DbActivity>,
    /// The probe's own cost.
    pub probe: ProbeCost,
}

/// One process at one tick.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessSample {
    pub pid: i32,
    /// `stat` field 4 (at the last full read: see `minor_faults`).
    pub ppid: i32,
    /// `stat` field 22 (clock ticks after boot): with `pid`, the process's identity.
    pub start_ticks: u64,
    /// `stat` field 2, without the parentheses.
    pub comm: String,
    /// CPU time of all its threads, ns (the process CPU clock, `clock_getcpuclockid(3)`; from
    /// `stat` fields 14 + 15 when that clock is not available).
    pub cpu_ns: u64,
    /// CPU over the last interval, 100 = one core; `None` on a process's first sample.
    pub cpu_pct: Option<f64>,
    /// `cpu_pct` split by the user/system ratio of `stat` fields 14 and 15 over about a second
    /// (clock ticks are too coarse to split a 100 ms interval on their own).
    pub user_pct: Option<f64>,
    pub system_pct: Option<f64>,
    /// `statm` field 2 × page size (exact, where `stat` field 24 leaves out what the per-CPU
    /// counters hold).
    pub rss_bytes: u64,
    /// `statm` field 1 × page size.
    pub vsize_bytes: u64,
    /// `st_nlink` − 2 of `/proc/PID/task` (`stat` field 20).
    pub threads: u64,
    /// Open file descriptors: `st_size` of `/proc/PID/fd` (Linux ≥ 6.2) or its entries;
    /// `None` where the probe may read neither (another user's process, an older kernel).
    pub fds: Option<u64>,
    /// `stat` fields 10 and 12. These and `io` sum over every thread, so they are read at
    /// most every 100 ms (every sample at 10 Hz, every tenth at 100 Hz): `None` in between.
    pub minor_faults: Option<u64>,
    pub major_faults: Option<u64>,
    /// `io`: `read_bytes`, `write_bytes` (storage I/O); `None` without permission, and
    /// between full reads.
    pub read_bytes: Option<u64>,
    pub write_bytes: Option<u64>,
    /// `status`: `VmHWM` (slow collector).
    pub peak_rss_bytes: Option<u64>,
    /// `status` of every thread: `voluntary_ctxt_switches`, `nonvoluntary_ctxt_switches`
    /// (slow collector).
    pub voluntary_ctxt_switches: Option<u64>,
    pub involuntary_ctxt_switches: Option<u64>,
    /// `limits`: "Max open files" (slow collector, and when first seen).
    pub fd_limit_soft: Option<u64>,
    pub fd_limit_hard: Option<u64>,
    /// FDs by what they point at, from `readlink` of each `/proc/PID/fd/N` (slow collector).
    pub fd_kinds: Option<FdKinds>,
    /// The process's TCP sockets by state, and its listening sockets' accept queues, from
    /// `net/tcp` and `net/tcp6` matched by socket inode (slow collector).
    pub tcp: Option<TcpSockets>,
    /// `smaps_rollup`: `Pss`, and `Private_Clean + Private_Dirty` as USS (only with `--pss`).
    pub pss_bytes: Option<u64>,
    pub uss_bytes: Option<u64>,
    /// Saturation: time its threads were runnable but waited for a CPU, ns, summed over them
    /// since each started (`task/TID/schedstat` field 2; slow collector). Its growth over an
    /// interval next to `cpu_ns`'s says how much more CPU the process wanted than it got.
    #[serde(default)]
    pub run_delay_ns: Option<u64>,
    /// Its threads by state at the slow collector's pass (`task/TID/stat` field 3).
    #[serde(default)]
    pub thread_states: Option<ThreadStates>,
    /// CPUs it may run on (`status`: `Cpus_allowed_list`; slow collector). In the tree's
    /// total, the most any member may.
    #[serde(default)]
    pub cpus_allowed: Option<u64>,
    /// Which CPUs those are; in the tree's total, every CPU a member may run on. With the
    /// database's, it tells whether the two competed for the same CPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_list: Option<crate::cpus::CpuList>,
}

/// Threads by scheduler state: on or waiting for a CPU, asleep, or in uninterruptible sleep.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadStates {
    /// `R`: running or runnable.
    pub running: u64,
    /// `S`, `I`: waiting for an event (a socket, a lock, a timer).
    pub sleeping: u64,
    /// `D`: uninterruptible, mostly storage I/O.
    pub blocked: u64,
}

impl std::ops::Add for ThreadStates {
    type Output = ThreadStates;
    fn add(self, other: ThreadStates) -> ThreadStates {
        ThreadStates {
            running: self.running + other.running,
            sleeping: self.sleeping + other.sleeping,
            blocked: self.blocked + other.blocked,
        }
    }
}

/// Which participant of the system under test a probe watches: a page draws each as its own
/// group, and a verdict weighs the database's saturation against the server's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// The server under test.
    #[default]
    Target,
    /// The server's database.
    Database,
    /// Anything else the server relies on (a proxy, a cache).
    Other,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Target => "target",
            Role::Database => "database",
            Role::Other => "other",
        }
    }
}

/// A role that is none of the three: the text as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown role {0:?}: use target, database or other")]
pub struct UnknownRole(pub String);

impl std::str::FromStr for Role {
    type Err = UnknownRole;
    fn from_str(s: &str) -> Result<Self, UnknownRole> {
        match s {
            "target" => Ok(Role::Target),
            "database" => Ok(Role::Database),
            "other" => Ok(Role::Other),
            _ => Err(UnknownRole(s.to_string())),
        }
    }
}

/// What a backend waited on, PostgreSQL's `wait_event_type` folded into the classes a
/// verdict tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WaitClass {
    /// No wait event: running on a CPU (or waiting for one).
    Cpu,
    /// A heavyweight lock (a row, a table).
    Lock,
    /// A lightweight lock (shared buffers, the WAL's insert locks).
    LwLock,
    /// Storage.
    Io,
    /// The client: reading its next command or sending it a result.
    Client,
    /// Another server process (a parallel worker, the WAL flush of a synchronous commit).
    Ipc,
    /// A timed sleep (`pg_sleep`, a vacuum delay).
    Timeout,
    /// Anything else (`Activity`, `BufferPin`, `Extension`).
    Other,
}

impl WaitClass {
    pub const ALL: [WaitClass; 8] = [
        WaitClass::Cpu,
        WaitClass::Lock,
        WaitClass::LwLock,
        WaitClass::Io,
        WaitClass::Client,
        WaitClass::Ipc,
        WaitClass::Timeout,
        WaitClass::Other,
    ];

    /// Its place in [`WaitClass::ALL`], and in every array of counts by class.
    pub fn index(self) -> usize {
        self as usize
    }

    /// PostgreSQL's `wait_event_type` (null: none) as a class.
    pub fn of(wait_event_type: Option<&str>) -> WaitClass {
        match wait_event_type {
            None => WaitClass::Cpu,
            Some("Lock") => WaitClass::Lock,
            Some("LWLock") => WaitClass::LwLock,
            Some("IO") => WaitClass::Io,
            Some("Client") => WaitClass::Client,
            Some("IPC") => WaitClass::Ipc,
            Some("Timeout") => WaitClass::Timeout,
            Some(_) => WaitClass::Other,
        }
    }

    /// As a page says it.
    pub fn label(self) -> &'static str {
        match self {
            WaitClass::Cpu => "on CPU",
            WaitClass::Lock => "Lock",
            WaitClass::LwLock => "LWLock",
            WaitClass::Io => "IO",
            WaitClass::Client => "Client",
            WaitClass::Ipc => "IPC",
            WaitClass::Timeout => "Timeout",
            WaitClass::Other => "other",
        }
    }
}

/// What PostgreSQL said of the backends of the watched database at one instant
/// (`pg_stat_activity`, `pg_stat_database`): its own introspection, readable over SQL where no
/// probe can run (a managed database).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DbActivity {
    /// When it was read (wall clock, ns): the query's time, not the tick's.
    pub read_wall_ns: u64,
    /// Client backends connected to the database.
    pub backends: u32,
    /// Of those, backends whose state the reading role may not see (other roles' sessions,
    /// without `pg_read_all_stats`): counted, never guessed.
    #[serde(default)]
    pub hidden: u32,
    /// The server's `max_connections`.
    pub max_connections: Option<u32>,
    /// Backends idle, and idle inside a transaction (holding its locks).
    pub idle: u32,
    pub idle_in_transaction: u32,
    /// Active backends, by what each waited on at that instant, in [`WaitClass::ALL`]'s order.
    pub active: [u32; 8],
    /// The next transaction ID the server will assign (`pg_current_snapshot()`'s xmax): its
    /// rate is write transactions a second, server-wide, exact and at once. (Not
    /// `pg_stat_database`'s commit counts: busy backends publish those seconds late, so under
    /// load they read a fraction of the truth.)
    pub next_xid: Option<u64>,
}

impl DbActivity {
    /// Active backends waiting on `class`.
    pub fn active_in(&self, class: WaitClass) -> u32 {
        self.active[class.index()]
    }
}

/// The CPU controller of the target's cgroup (v2 `cpu.stat`, `cpu.max`, `cpu.pressure`; v1
/// `cpu.stat`, `cpu.cfs_quota_us`), cumulative: a quota's throttling is saturation that the
/// process's own CPU figure hides (it reads "50 %" while every period ends throttled).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CgroupCpu {
    /// The cgroup, as `/proc/PID/cgroup` names it.
    pub path: String,
    /// Enforcement periods that had runnable tasks, and of those the ones that ran out of quota.
    pub periods: u64,
    pub throttled_periods: u64,
    /// Time throttled, ns.
    pub throttled_ns: u64,
    /// The quota in CPUs (`cpu.max` 50000/100000 → 0.5), `None` when unlimited.
    pub quota_cpus: Option<f64>,
    /// Time at least one task of the cgroup waited for a CPU, ns (`cpu.pressure` "some
    /// total", v2 with PSI only).
    pub pressure_some_ns: Option<u64>,
}

/// Open FDs by kind.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FdKinds {
    pub socket: u64,
    /// Regular files, directories and devices.
    pub file: u64,
    pub pipe: u64,
    pub epoll: u64,
    pub eventfd: u64,
    pub timerfd: u64,
    /// Other anonymous inodes (signalfd, inotify, io_uring, …).
    pub other: u64,
}

/// TCP sockets of one process.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TcpSockets {
    pub established: u64,
    pub syn_sent: u64,
    pub syn_recv: u64,
    pub fin_wait1: u64,
    pub fin_wait2: u64,
    pub time_wait: u64,
    pub close: u64,
    pub close_wait: u64,
    pub last_ack: u64,
    pub listen: u64,
    pub closing: u64,
    /// Connections waiting to be accepted, summed over the listening sockets (`rx_queue` of a
    /// LISTEN socket): the clearest sign of an event loop that cannot keep up.
    pub accept_queue: u64,
}

/// The host as a whole.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostSample {
    /// `stat`: busy share of all CPUs over the interval, 100 = one core (so 2 cores max 200).
    pub cpu_pct: Option<f64>,
    /// The same per core, 100 = that core fully busy.
    pub per_core_pct: Vec<f64>,
    /// `meminfo`: `MemAvailable`, `MemTotal`.
    pub mem_available_bytes: u64,
    pub mem_total_bytes: u64,
    /// `loadavg`: 1, 5 and 15 minutes.
    pub load: [f64; 3],
    /// `net/sockstat`: TCP sockets in use, orphaned, in TIME_WAIT, allocated.
    pub tcp_inuse: u64,
    pub tcp_orphan: u64,
    pub tcp_time_wait: u64,
    pub tcp_alloc: u64,
    /// `stat`: share of all CPUs' time the hypervisor gave other guests over the interval,
    /// 0–100 (a VM's lost CPU: its own figures read lower than the work it was asked to do).
    #[serde(default)]
    pub steal_pct: Option<f64>,
    /// `pressure/cpu` "some": share of the interval in which some task waited for a CPU,
    /// 0–100 (`None` without PSI).
    #[serde(default)]
    pub cpu_pressure_pct: Option<f64>,
    /// With `--canary`: what a wake-up cost on the target's CPUs since the previous host
    /// figures, ns of CPU an exchange of the wake-up canary (`probe::canary`); `None` without
    /// it, or before its first exchange.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wake_ns: Option<f64>,
}

/// What sampling costs the probe.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProbeCost {
    /// The probe process's CPU since the previous full tick (at most every 100 ms), 100 = one
    /// core; `None` between full ticks.
    pub cpu_pct: Option<f64>,
    /// CPU time this sample took (its reads, on the sampling thread).
    pub sample_cpu_ns: u64,
    /// CPU time of the slow collectors' pass whose figures are in this sample, if any (on
    /// their own thread).
    pub slow_cpu_ns: u64,
    pub rss_bytes: u64,
}

/// Something that happened to the watched processes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EventKind {
    /// A process matching the selector was found; the tree under it is now watched.
    Attached {
        pid: i32,
        comm: String,
        cmdline: String,
        fd_limit_soft: Option<u64>,
        fd_limit_hard: Option<u64>,
    },
    /// The watched root process exited (or its PID now belongs to another process).
    TargetExited { pid: i32 },
    /// A process joined the tree.
    ProcessStarted { pid: i32, ppid: i32, comm: String },
    /// A process of the tree exited.
    ProcessExited { pid: i32 },
    /// The sampler fell behind and skipped ticks.
    MissedTicks { count: u64 },
    /// Profiling was asked for and the kernel refused it (or stopped it): why, and the fix.
    /// Everything else is sampled as before.
    ProfileUnavailable { reason: String },
    /// Figures of a process that the probe may not read, and why: they are missing from its
    /// samples (never zero), and the fix.
    Unreadable {
        pid: i32,
        figures: Vec<String>,
        reason: String,
    },
}

/// Where the watched tree spent its CPU over one interval (about a second): on-CPU call stacks
/// sampled by the kernel's `cpu-clock` event, symbolized on the probe host and folded.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// The end of the interval, on the monotonic clock (ns).
    pub mono_ns: u64,
    pub wall_ns: u64,
    /// How long the interval was (ns): its stacks were sampled in `[mono_ns - interval_ns,
    /// mono_ns)`.
    pub interval_ns: u64,
    /// Samples a second asked of each CPU.
    pub hz: u32,
    /// The tree's samples in the interval (the stacks' counts summed).
    pub samples: u64,
    /// The CPU time those samples stand for (their periods summed, ns): the tree's CPU time as
    /// the profile sees it, to set against the sampler's `cpu_ns`.
    pub cpu_ns: u64,
    /// Samples the kernel dropped because the probe read its ring buffer too late (of every
    /// process on the CPU, not only the tree's): the profile is short by about that much.
    pub lost: u64,
    /// The frames the stacks name, each once: processes, threads and functions. Kernel frames
    /// end in `_[k]`; an address without a symbol is `[file+0xoffset]`, else `[unknown]` (or
    /// `[kernel]`): never the address itself.
    pub frames: Vec<String>,
    /// Each stack as indices into `frames`, outermost first (`process;thread;outermost
    /// function;…;innermost`), and how many samples ended in it; most samples first. A deep
    /// stack shares most of its frames with its neighbours: indices keep a second of a JIT's
    /// long names to a few kilobytes.
    pub stacks: Vec<(Vec<u32>, u64)>,
}

impl Profile {
    /// Each stack folded (`process;thread;frame;…`, the format flame graph tools read) with
    /// its samples; an index with no frame reads `?`.
    pub fn folded(&self) -> impl Iterator<Item = (String, u64)> + '_ {
        self.stacks.iter().map(|(indices, n)| {
            let names: Vec<&str> = indices
                .iter()
                .map(|&i| self.frames.get(i as usize).map_or("?", String::as_str))
                .collect();
            (names.join(";"), *n)
        })
    }

    /// Sets the stacks from folded lines (`process;thread;frame;…`), naming each frame once.
    pub fn set_folded(&mut self, folded: impl IntoIterator<Item = (String, u64)>) {
        let mut index: std::collections::HashMap<String, u32> = Default::default();
        self.frames.clear();
        self.stacks = folded
            .into_iter()
            .map(|(line, n)| {
                let indices = line
                    .split(';')
                    .map(|frame| {
                        *index.entry(frame.to_string()).or_insert_with(|| {
                            self.frames.push(frame.to_string());
                            (self.frames.len() - 1) as u32
                        })
                    })
                    .collect();
                (indices, n)
            })
            .collect();
    }
}

/// An event with its time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub mono_ns: u64,
    pub wall_ns: u64,
    #[serde(flatten)]
    pub kind: EventKind,
}

/// Facts about the probed host, sent once per connection.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostInfo {
    pub hostname: String,
    /// `uname -r`.
    pub kernel: String,
    pub cpus: u64,
    pub mem_total_bytes: u64,
    /// `sys/fs/file-max` (system-wide FD limit).
    pub file_max: Option<u64>,
    /// Clock ticks per second (`sysconf(_SC_CLK_TCK)`).
    pub clock_ticks: u64,
    pub page_size: u64,
    pub probe_version: String,
    /// How the probe picks its target, e.g. `--port 8080`.
    pub selector: String,
    /// Which participant of the system under test it watches.
    #[serde(default)]
    pub role: Role,
    /// The participant's name as the user knows it (`PostgreSQL`, `nginx`), if given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub interval_ns: u64,
    /// Samples a second of on-CPU stacks when the probe profiles (`--profile`), else `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_hz: Option<u32>,
}
