//! What limited the server: the USE method's question (for every resource, utilization,
//! saturation, errors) asked of one probe's records over a window, and answered in one
//! sentence with its figures.
//!
//! From the samples at the window's ends (cumulative counters) and those between (levels):
//! the watched tree's CPU in cores against what it may use (its cgroup quota, else the CPUs
//! it may run on); how often the quota ran out (throttled periods); the time its threads were
//! runnable but waited for a CPU (run-queue delay, from schedstat); the hypervisor's steal; threads in uninterruptible sleep; the accept queue. The verdict is
//! the first resource found saturated, in that order of evidence, or, with none and the CPU
//! well below its allowance, a wait inside or beyond the server (a pool, a lock, a database),
//! which only a watch of those can name.

use probe::protocol::Record;
use serde::{Deserialize, Serialize};

use store::run::StoredProbe;

/// Busy at least this share of what it may use: the CPU is the limit.
pub const CPU_SATURATED: f64 = 0.9;
/// Throttled in at least this share of the quota's periods: the quota is the limit.
pub const THROTTLED: f64 = 0.25;
/// Runnable but waiting for a CPU at least this share of the time it ran: more of its threads
/// wanted a CPU at once than it had.
pub const RUN_QUEUE: f64 = 0.2;
/// ... and at least this long a second (s/s, a tenth of a CPU's time): a nearly idle server's
/// few milliseconds of wait are a large share of next to nothing, not what limited it.
pub const RUN_QUEUE_FLOOR: f64 = 0.1;
/// Stolen by the hypervisor at least this share of the host's CPU time.
pub const STEAL: f64 = 0.1;
/// Below this share of its allowance, with nothing saturated, the server waited on something.
pub const WAITING: f64 = 0.6;

/// The resource that limited a server, as the probe's figures show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Limit {
    /// Its own CPU: busy as much as it may be.
    Cpu,
    /// Its cgroup's quota: throttled in many periods.
    Quota,
    /// The run queue: its threads waited for a CPU, more of them runnable at once than CPUs to
    /// run them (its own threads waking together, or other processes').
    RunQueue,
    /// The hypervisor took the CPU.
    Steal,
    /// Storage: threads in uninterruptible sleep.
    Io,
    /// Connections waited to be accepted.
    AcceptQueue,
    /// The database's CPU: busy as much as it may be.
    DatabaseCpu,
    /// The database's backends waited on its locks or its storage.
    DatabaseWait,
    /// Every connection of its pool to the database busy (active, or idle inside a
    /// transaction), the database itself not saturated.
    Pool,
    /// Another process of the system under test (a `[[watch]]` group): its CPU busy as much as
    /// it may be, or its processes queued for a CPU.
    OtherCpu,
    /// Nothing of its own saturated, its CPU well below what it may use: it waited on
    /// something (a pool, a lock, a downstream).
    Wait,
    /// None of the figures explains it.
    NotFound,
}

/// What limited a server, said twice: a short sentence with the one or two figures that prove
/// it (for a table's cell, an answer), and the evidence behind it (every figure read, what was
/// ruled out and what was not measured), one click away on a page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub limit: Limit,
    /// "its CPU quota: throttled in 97 % of its periods".
    pub short: String,
    pub evidence: String,
}

impl Finding {
    pub(crate) fn new(limit: Limit, short: String, evidence: String) -> Finding {
        Finding {
            limit,
            short,
            evidence,
        }
    }
}

/// The figures of one probe over a window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Saturation {
    /// The span of the probe's samples within the window, s: up to a sampling interval short
    /// of the window at each end, so a rate times it is not the window's total (take the
    /// window's own length for that).
    pub seconds: f64,
    /// The tree's CPU, in cores.
    pub cpu_cores: f64,
    /// What it may use, in cores, and whence ("quota" or "cpus").
    pub allowance: Option<(f64, String)>,
    /// Share of the quota's periods throttled.
    pub throttled: Option<f64>,
    /// Time runnable but waiting for a CPU, in cores (seconds waited a second).
    pub run_delay_cores: Option<f64>,
    /// The host's CPU time stolen by the hypervisor, mean share 0–1. (Not its busy share:
    /// /proc/stat's clock ticks miss most of a VM's short bursts, so it reads low.)
    pub steal: Option<f64>,
    /// Threads in uninterruptible sleep, mean over the slow collector's passes.
    pub blocked_threads: Option<f64>,
    /// Connections waiting to be accepted, the most seen.
    pub accept_queue: Option<u64>,
    /// The CPUs its processes may run on, as last read.
    #[serde(default)]
    pub cpus: Option<probe::cpus::CpuList>,
    /// Its processes' PSS summed, the most read over the window (the slow collectors' passes).
    #[serde(default)]
    pub pss_peak: Option<u64>,
    /// Its processes' open file descriptors summed, the most read.
    #[serde(default)]
    pub fds_peak: Option<u64>,
    /// Its processes' RSS summed, the most read over the window (every sample).
    #[serde(default)]
    pub rss_peak: Option<u64>,
}

/// `probe`'s samples between `from_ns` and `to_ns` on the run's timeline.
pub(crate) fn samples_in(
    probe: &StoredProbe,
    from_ns: i64,
    to_ns: i64,
) -> Vec<&probe::sample::Sample> {
    probe
        .records
        .iter()
        .filter(|r| r.t_ns >= from_ns && r.t_ns <= to_ns)
        .filter_map(|r| match &r.record {
            Record::Sample(s) => Some(&**s),
            _ => None,
        })
        .collect()
}

/// The change of a cumulative figure between the first and last sample having it.
pub(crate) fn delta<F: Fn(&probe::sample::Sample) -> Option<u64>>(
    samples: &[&probe::sample::Sample],
    get: F,
) -> Option<(f64, f64)> {
    let first = samples.iter().find_map(|s| Some((get(s)?, s.mono_ns)))?;
    let last = samples
        .iter()
        .rev()
        .find_map(|s| Some((get(s)?, s.mono_ns)))?;
    (last.1 > first.1).then(|| {
        (
            last.0.saturating_sub(first.0) as f64,
            (last.1 - first.1) as f64 / 1e9,
        )
    })
}

/// The rate a second of a cumulative figure of a tree's processes: each process's growth within
/// the span of the readings, summed, over that span. A process read before the span began
/// grew from its first reading to its last; one that started within the span grew all it had
/// at its last reading (a backend a pool opened under overload, read once before its client
/// timed out and closed it, still counts what it did). Not the tree's total's change: a
/// process that exits takes its figure out of the total (a pool closing an idle connection
/// would read as negative CPU), and a figure the slow collectors read for some processes in
/// one pass and others in the next would mix them. `None` when nothing grew measurably over a
/// span (one reading in all).
pub(crate) fn tree_rate<F: Fn(&probe::sample::ProcessSample) -> Option<u64>>(
    samples: &[&probe::sample::Sample],
    get: F,
) -> Option<f64> {
    // (first value, its time, last value, its time) by process identity.
    let mut span: std::collections::HashMap<(i32, u64), (u64, u64, u64, u64)> =
        std::collections::HashMap::new();
    for s in samples {
        for p in &s.processes {
            if let Some(v) = get(p) {
                span.entry((p.pid, p.start_ticks))
                    .and_modify(|e| (e.2, e.3) = (v, s.mono_ns))
                    .or_insert((v, s.mono_ns, v, s.mono_ns));
            }
        }
    }
    // Over the span of the readings (every sample's for CPU; the slow passes' for the rest).
    let from = span.values().map(|e| e.1).min()?;
    let to = span.values().map(|e| e.3).max()?;
    (to > from).then(|| {
        let grown: f64 = span
            .iter()
            .map(|(&(_, start_ticks), &(v0, t0, v1, _))| {
                // `stat`'s start time is in clock ticks after boot (USER_HZ, 100 a second on
                // every Linux the probe runs on), the readings' times on the monotonic clock.
                let started_ns = start_ticks.saturating_mul(1_000_000_000 / USER_HZ);
                let since = if t0 > from && started_ns > from && started_ns <= t0 {
                    0
                } else {
                    v0
                };
                v1.saturating_sub(since) as f64
            })
            .sum();
        grown / ((to - from) as f64 / 1e9)
    })
}

/// Clock ticks a second in `/proc/PID/stat` (the kernel's fixed USER_HZ).
const USER_HZ: u64 = 100;

pub(crate) fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values.fold((0.0, 0u32), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / n as f64)
}

/// What the tree may use, in cores, and whence, as last read in `settings`: its cgroup's quota,
/// else the CPUs it may run on.
fn allowance_of(settings: &[&probe::sample::Sample]) -> Option<(f64, String)> {
    let quota = settings
        .iter()
        .rev()
        .find_map(|s| s.cgroup.as_ref()?.quota_cpus);
    let cpus = settings
        .iter()
        .rev()
        .find_map(|s| s.total.as_ref()?.cpus_allowed);
    quota
        .map(|q| (q, "quota".to_string()))
        .or_else(|| cpus.map(|c| (c as f64, "cpus".to_string())))
}

/// The share of the quota's periods throttled over `samples`.
fn throttled_of(samples: &[&probe::sample::Sample]) -> Option<f64> {
    let periods = delta(samples, |s| s.cgroup.as_ref().map(|c| c.periods));
    let throttled = delta(samples, |s| s.cgroup.as_ref().map(|c| c.throttled_periods));
    periods
        .zip(throttled)
        .filter(|((p, _), _)| *p > 0.0)
        .map(|((p, _), (t, _))| t / p)
}

impl Saturation {
    /// The figures of `probe`'s samples between `from_ns` and `to_ns` on the run's timeline;
    /// `None` with fewer than two samples there.
    pub fn of(probe: &StoredProbe, from_ns: i64, to_ns: i64) -> Option<Saturation> {
        let samples = samples_in(probe, from_ns, to_ns);
        let (_, seconds) = delta(&samples, |s| s.total.as_ref().map(|t| t.cpu_ns))?;
        let cpu_ns_per_s = tree_rate(&samples, |p| Some(p.cpu_ns))?;
        // What it may use is a setting, not a rate: as last read by the window's end. The slow
        // collectors that read the CPUs it may run on pass at most once a second, within their
        // CPU budget, so a short window of a busy host can hold none of their passes.
        let settings = samples_in(probe, i64::MIN, to_ns);
        let allowance = allowance_of(&settings);
        let throttled = throttled_of(&samples);
        let run_delay_cores = tree_rate(&samples, |p| p.run_delay_ns).map(|ns| ns / 1e9);
        let hosts: Vec<&probe::sample::HostSample> =
            samples.iter().filter_map(|s| s.host.as_ref()).collect();
        Some(Saturation {
            seconds,
            cpu_cores: cpu_ns_per_s / 1e9,
            allowance,
            throttled,
            run_delay_cores,
            steal: mean(hosts.iter().filter_map(|h| h.steal_pct).map(|p| p / 100.0)),
            blocked_threads: mean(
                samples
                    .iter()
                    .filter_map(|s| s.total.as_ref()?.thread_states)
                    .map(|t| t.blocked as f64),
            ),
            accept_queue: samples
                .iter()
                .filter_map(|s| s.total.as_ref()?.tcp.as_ref().map(|t| t.accept_queue))
                .max(),
            cpus: settings
                .iter()
                .rev()
                .find_map(|s| s.total.as_ref()?.cpu_list.clone()),
            pss_peak: samples
                .iter()
                .filter_map(|s| s.total.as_ref()?.pss_bytes)
                .max(),
            fds_peak: samples.iter().filter_map(|s| s.total.as_ref()?.fds).max(),
            rss_peak: samples
                .iter()
                .filter_map(|s| Some(s.total.as_ref()?.rss_bytes))
                .max(),
        })
    }

    /// The tree's CPU as a share of what it may use.
    pub fn cpu_share(&self) -> Option<f64> {
        self.allowance
            .as_ref()
            .filter(|(a, _)| *a > 0.0)
            .map(|(a, _)| self.cpu_cores / a)
    }

    /// Its figures in one line, each only where the probe could read it.
    pub fn figures(&self) -> String {
        let pct = |x: f64| format!("{:.0} %", x * 100.0);
        let mut parts = vec![match (&self.allowance, self.cpu_share()) {
            (Some((a, whence)), Some(share)) => format!(
                "CPU {:.2} cores ({} of its {whence}: {a:.2})",
                self.cpu_cores,
                pct(share)
            ),
            _ => format!("CPU {:.2} cores", self.cpu_cores),
        }];
        if let Some(t) = self.throttled {
            parts.push(format!("quota throttled in {} of periods", pct(t)));
        }
        if let Some(w) = self.run_delay_cores {
            parts.push(format!("waited {w:.2} s a second for a CPU"));
        }
        if let Some(s) = self.steal {
            parts.push(format!("{} stolen", pct(s)));
        }
        if let Some(d) = self.blocked_threads {
            parts.push(format!("{d:.1} threads in D"));
        }
        if let Some(q) = self.accept_queue {
            parts.push(format!("accept queue up to {q}"));
        }
        parts.join("; ")
    }

    /// Its CPU against its allowance, as a verdict says it ("it used 0.46 cores, 46 % of its
    /// quota (1.00 CPUs)").
    pub fn usage(&self) -> String {
        self.usage_by("it")
    }

    /// The same, said of `who` ("the server used …").
    pub fn usage_by(&self, who: &str) -> String {
        match (&self.allowance, self.cpu_share()) {
            (Some((a, whence)), Some(share)) => format!(
                "{who} used {:.2} cores, {:.0} % of its {} ({a:.2} {})",
                self.cpu_cores,
                share * 100.0,
                whence,
                if whence == "quota" {
                    "CPUs"
                } else {
                    "may run on"
                }
            ),
            _ => format!("{who} used {:.2} cores", self.cpu_cores),
        }
    }

    /// What its figures rule out, and what was not measured: only what was read is ruled out.
    pub fn ruled_out(&self) -> String {
        let checks = self.checks();
        let said: Vec<String> = checks
            .iter()
            .filter(|(read, _)| *read)
            .map(|(_, what)| format!("no {what}"))
            .collect();
        let unread = self.unmeasured();
        let mut ruled_out = if said.is_empty() {
            "nothing else measured".to_string()
        } else {
            said.join(", ")
        };
        if !unread.is_empty() && !said.is_empty() {
            ruled_out.push_str(&format!(" ({} not measured)", unread.join(", ")));
        }
        ruled_out
    }

    /// Which resource limited the server, and the sentence that says so with its figures.
    pub fn verdict(&self) -> (Limit, String) {
        let f = self.finding();
        (f.limit, f.evidence)
    }

    /// What it used, short: "0.46 of the 1.00 cores it may use".
    pub fn used_short(&self) -> String {
        match &self.allowance {
            Some((a, _)) => format!("{:.2} of the {a:.2} cores it may use", self.cpu_cores),
            None => format!("{:.2} cores", self.cpu_cores),
        }
    }

    /// Which resource limited the server: its short sentence and its evidence.
    pub fn finding(&self) -> Finding {
        let cpu = self.usage();
        if let Some(found) = self.cpu_finding(&cpu) {
            return found;
        }
        if let Some(found) = self.host_finding(&cpu) {
            return found;
        }
        self.no_finding(&cpu)
    }

    /// The CPU as the limit, if it was: its quota, its cores, or its run queue (`cpu`: its
    /// usage as a verdict says it).
    fn cpu_finding(&self, cpu: &str) -> Option<Finding> {
        let pct = |x: f64| format!("{:.0} %", x * 100.0);
        if let Some(t) = self.throttled.filter(|&t| t >= THROTTLED) {
            return Some(Finding::new(
                Limit::Quota,
                format!(
                    "its CPU quota: throttled in {} of its periods, {}",
                    pct(t),
                    self.used_short()
                ),
                format!(
                    "its CPU quota: throttled in {} of the quota's periods; {cpu}",
                    pct(t)
                ),
            ));
        }
        if let Some(share) = self.cpu_share().filter(|&s| s >= CPU_SATURATED) {
            return Some(Finding::new(
                Limit::Cpu,
                format!("its CPU: {} ({})", self.used_short(), pct(share)),
                format!("its CPU: {cpu}"),
            ));
        }
        let wait = self
            .run_delay_cores
            .filter(|&w| w >= RUN_QUEUE_FLOOR && w >= RUN_QUEUE * self.cpu_cores)?;
        Some(Finding::new(
            Limit::RunQueue,
            format!("the run queue: its threads waited {wait:.2} s a second for a CPU"),
            format!(
                "the run queue: its threads waited {:.2} s a second for a CPU ({} of the time they ran), more of them runnable at once than CPUs to run them (its own threads waking together, or other processes'); {cpu}",
                wait,
                pct(wait / self.cpu_cores)
            ),
        ))
    }

    /// The host as the limit, if it was: steal, storage, or the accept queue.
    fn host_finding(&self, cpu: &str) -> Option<Finding> {
        let pct = |x: f64| format!("{:.0} %", x * 100.0);
        if let Some(steal) = self.steal.filter(|&s| s >= STEAL) {
            return Some(Finding::new(
                Limit::Steal,
                format!("the hypervisor: {} of the CPU time stolen", pct(steal)),
                format!(
                    "the hypervisor: {} of the host's CPU time stolen; {cpu}",
                    pct(steal)
                ),
            ));
        }
        if let Some(d) = self.blocked_threads.filter(|&d| d >= 1.0) {
            return Some(Finding::new(
                Limit::Io,
                format!("storage: {d:.1} threads on average in uninterruptible sleep"),
                format!("storage: {d:.1} threads on average in uninterruptible sleep (D); {cpu}"),
            ));
        }
        let q = self.accept_queue.filter(|&q| q > 0)?;
        Some(Finding::new(
            Limit::AcceptQueue,
            format!("accepting connections: up to {q} waited to be accepted"),
            format!("accepting connections: up to {q} waited in the accept queue; {cpu}"),
        ))
    }

    /// With nothing saturated: a wait beyond the server, or nothing found.
    fn no_finding(&self, cpu: &str) -> Finding {
        let ruled_out = self.ruled_out();
        match self.cpu_share() {
            // A wait is named only once contention for CPUs was measured and ruled out.
            Some(share) if share < WAITING && self.run_delay_cores.is_some() => Finding::new(
                Limit::Wait,
                format!(
                    "a wait inside or beyond the server: it used {}, nothing of its own saturated",
                    self.used_short()
                ),
                format!(
                    "a wait inside or beyond the server (a pool, a lock, a database): {cpu}, with {ruled_out}"
                ),
            ),
            _ => Finding::new(
                Limit::NotFound,
                format!(
                    "not found: it used {}{}",
                    self.used_short(),
                    match self.unmeasured().as_slice() {
                        [] => String::new(),
                        unread => format!(", {} not measured", unread.join(", ")),
                    }
                ),
                format!("not found: {cpu}, with {ruled_out}"),
            ),
        }
    }

    /// The saturation figures the probe could not read over the window.
    fn unmeasured(&self) -> Vec<&'static str> {
        self.checks()
            .into_iter()
            .filter(|(read, _)| !*read)
            .map(|(_, what)| what)
            .collect()
    }

    fn checks(&self) -> [(bool, &'static str); 5] {
        [
            (self.throttled.is_some(), "quota throttling"),
            (self.run_delay_cores.is_some(), "run-queue wait"),
            (self.steal.is_some(), "steal"),
            (self.blocked_threads.is_some(), "storage wait"),
            (self.accept_queue.is_some(), "accept queue"),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use probe::sample::{CgroupCpu, HostSample, ProcessSample, Sample, ThreadStates};
    use store::run::{ProbeMeta, StoredRecord};

    /// A probe whose tree used `cores` of CPU for 10 s, with these extra figures.
    fn probe(cores: f64, shape: impl Fn(u64, &mut Sample)) -> StoredProbe {
        let records = (0..=10u64)
            .map(|i| {
                let mut s = Sample {
                    scheduled_mono_ns: i * 1_000_000_000,
                    mono_ns: i * 1_000_000_000,
                    wall_ns: i * 1_000_000_000,
                    interval_ns: 1_000_000_000,
                    missed_ticks: 0,
                    target_pid: Some(1),
                    processes: Vec::new(),
                    cgroup: None,
                    database: None,
                    probe: Default::default(),
                    total: Some(ProcessSample {
                        cpu_ns: (i as f64 * cores * 1e9) as u64,
                        cpus_allowed: Some(2),
                        thread_states: Some(ThreadStates {
                            running: 1,
                            sleeping: 5,
                            blocked: 0,
                        }),
                        ..Default::default()
                    }),
                    host: Some(HostSample {
                        cpu_pct: Some(100.0),
                        steal_pct: Some(0.0),
                        ..Default::default()
                    }),
                };
                shape(i, &mut s);
                // A tree of one process, unless the shape made its rows.
                if s.processes.is_empty() {
                    s.processes = s.total.iter().cloned().collect();
                }
                StoredRecord {
                    seq: i,
                    t_ns: (i * 1_000_000_000) as i64,
                    record: Record::Sample(Box::new(s)),
                }
            })
            .collect();
        let meta = ProbeMeta {
            index: 0,
            address: "in-process".into(),
            host: probe::sample::HostInfo {
                cpus: 2,
                ..Default::default()
            },
            clock: None,
        };
        StoredProbe {
            meta,
            records,
            gaps: Vec::new(),
        }
    }

    fn verdict(p: &StoredProbe) -> (Limit, String) {
        Saturation::of(p, 0, 10_000_000_000).unwrap().verdict()
    }

    fn quota(i: u64, s: &mut Sample, throttled_per_s: u64) {
        s.cgroup = Some(CgroupCpu {
            periods: i * 10,
            throttled_periods: i * throttled_per_s,
            quota_cpus: Some(1.0),
            ..Default::default()
        });
    }

    #[test]
    fn a_quota_that_runs_out_is_named_before_the_cpu_it_caps() {
        let (limit, text) = verdict(&probe(0.98, |i, s| quota(i, s, 9)));
        assert_eq!(limit, Limit::Quota, "{text}");
        assert!(
            text.starts_with("its CPU quota: throttled in 90 %"),
            "{text}"
        );
        assert!(
            text.contains("0.98 cores, 98 % of its quota (1.00 CPUs)"),
            "{text}"
        );
    }

    #[test]
    fn a_busy_cpu_within_its_allowance_is_the_limit() {
        let (limit, text) = verdict(&probe(1.9, |_, _| {}));
        assert_eq!(limit, Limit::Cpu, "{text}");
        assert!(
            text.contains("95 % of its cpus (2.00 may run on)"),
            "{text}"
        );
    }

    #[test]
    fn the_cpus_it_may_use_are_as_last_read_when_no_slow_pass_fell_in_the_window() {
        // Pinned to one CPU, read at 0 s only (the slow collectors' one pass); the window is 5–10 s.
        let p = probe(0.99, |i, s| {
            if let Some(t) = &mut s.total {
                t.cpus_allowed = (i == 0).then_some(1);
                if i > 0 {
                    t.thread_states = None;
                }
            }
        });
        let (limit, text) = Saturation::of(&p, 5_000_000_000, 10_000_000_000)
            .unwrap()
            .verdict();
        assert_eq!(limit, Limit::Cpu, "{text}");
        assert!(
            text.contains("99 % of its cpus (1.00 may run on)"),
            "{text}"
        );
    }

    #[test]
    fn waiting_in_the_run_queue_is_named_with_the_wait() {
        let (limit, text) = verdict(&probe(0.5, |i, s| {
            if let Some(t) = &mut s.total {
                t.run_delay_ns = Some(i * 300_000_000);
            }
        }));
        assert_eq!(limit, Limit::RunQueue, "{text}");
        assert!(
            text.contains("waited 0.30 s a second for a CPU (60 %"),
            "{text}"
        );
    }

    #[test]
    fn a_half_idle_server_with_nothing_saturated_waited_on_something() {
        let (limit, text) = verdict(&probe(0.46, |i, s| {
            quota(i, s, 0);
            if let Some(t) = &mut s.total {
                t.run_delay_ns = Some(i * 10_000_000);
            }
        }));
        assert_eq!(limit, Limit::Wait, "{text}");
        assert!(text.contains("46 % of its quota"), "{text}");
        assert!(
            text.contains("no quota throttling, no run-queue wait"),
            "{text}"
        );
        // Busier, but short of saturation: not found, never a guess.
        let (limit, _) = verdict(&probe(1.4, |_, _| {}));
        assert_eq!(limit, Limit::NotFound);
    }

    #[test]
    fn steal_storage_and_the_accept_queue_are_named_with_their_figures() {
        let (limit, text) = verdict(&probe(0.5, |_, s| {
            if let Some(h) = &mut s.host {
                h.steal_pct = Some(20.0);
            }
        }));
        assert_eq!(
            (limit, text.contains("20 % of the host's CPU time stolen")),
            (Limit::Steal, true)
        );
        let (limit, _) = verdict(&probe(0.5, |_, s| {
            if let Some(t) = &mut s.total {
                t.thread_states = Some(ThreadStates {
                    running: 0,
                    sleeping: 3,
                    blocked: 2,
                });
            }
        }));
        assert_eq!(limit, Limit::Io);
        let (limit, text) = verdict(&probe(0.5, |i, s| {
            if let Some(t) = &mut s.total {
                t.tcp = Some(probe::sample::TcpSockets {
                    accept_queue: i,
                    ..Default::default()
                });
            }
        }));
        assert_eq!(
            (limit, text.contains("up to 10 waited")),
            (Limit::AcceptQueue, true)
        );
    }

    #[test]
    fn the_figures_read_in_one_line_and_leave_out_what_was_not_read() {
        let s = Saturation::of(&probe(0.46, |i, s| quota(i, s, 0)), 0, 10_000_000_000).unwrap();
        assert_eq!(
            s.figures(),
            "CPU 0.46 cores (46 % of its quota: 1.00); quota throttled in 0 % of periods; 0 % stolen; 0.0 threads in D"
        );
    }

    #[test]
    fn what_was_not_measured_is_not_ruled_out() {
        let (_, text) = verdict(&probe(0.4, |_, s| {
            s.host = None;
            if let Some(t) = &mut s.total {
                t.thread_states = None;
            }
        }));
        assert!(
            text.ends_with("with nothing else measured") || text.contains("not measured"),
            "{text}"
        );
        assert!(!text.contains("no steal"), "{text}");
        assert!(text.starts_with("not found"), "{text}");
    }

    #[test]
    fn a_process_leaving_the_tree_does_not_take_its_cpu_out_of_the_window() {
        // Two backends at 0.25 cores each; the second exits halfway: the tree used 0.375 cores
        // on average, where its total would read 0 (it fell by what the leaver had).
        let p = probe(0.0, |i, s| {
            let row = |pid: i32, cpu: u64| ProcessSample {
                pid,
                cpu_ns: cpu,
                cpus_allowed: Some(2),
                ..Default::default()
            };
            s.processes = vec![row(1, 10_000_000_000 + i * 250_000_000)];
            if i <= 5 {
                s.processes.push(row(2, 20_000_000_000 + i * 250_000_000));
            }
            s.total = Some(ProcessSample {
                cpu_ns: s.processes.iter().map(|p| p.cpu_ns).sum(),
                cpus_allowed: Some(2),
                ..Default::default()
            });
        });
        let s = Saturation::of(&p, 0, 10_000_000_000).unwrap();
        assert!((s.cpu_cores - 0.375).abs() < 1e-9, "{}", s.cpu_cores);
    }

    #[test]
    fn a_process_born_in_the_window_and_read_once_counts_what_it_did() {
        // A backend opened at 5 s (after the window began) waited 1.6 s for a CPU before its
        // only reading at 6 s, then closed: that wait was in the window, and counts. One
        // there all along waited 0.1 s a second.
        let p = probe(0.0, |i, s| {
            let row = |pid: i32, start_ticks: u64, delay: u64| ProcessSample {
                pid,
                start_ticks,
                cpu_ns: i * 100_000_000,
                run_delay_ns: Some(delay),
                cpus_allowed: Some(2),
                ..Default::default()
            };
            s.processes = vec![row(1, 0, 50_000_000_000 + i * 100_000_000)];
            if i == 6 {
                s.processes.push(row(2, 500, 1_600_000_000));
            }
            s.total = Some(s.processes[0].clone());
        });
        let s = Saturation::of(&p, 0, 10_000_000_000).unwrap();
        let wait = s.run_delay_cores.unwrap();
        assert!((wait - 0.26).abs() < 1e-9, "{wait}");
    }

    #[test]
    fn fewer_than_two_samples_say_nothing() {
        assert!(Saturation::of(&probe(1.0, |_, _| {}), 0, 500_000_000).is_none());
    }
}
