//! The system under test as a whole: the target and its database, each watched by a probe of
//! its own, and the verdict that names which of them ran out, with both one's figures.
//!
//! The database is weighed by its processes (CPU against what it may use, run-queue wait,
//! where a probe could watch them) and by what PostgreSQL said of its backends
//! (`pg_stat_activity`: active backends by wait event, read wherever it runs). A server whose
//! own CPU is not saturated is limited by the database when the database's CPU is, or when
//! its backends wait on locks or storage; with the database measured and neither, the wait is
//! inside the server (a pool, a lock, a sleep).

use probe::sample::{HostInfo, Role, WaitClass};
use serde::{Deserialize, Serialize};

use crate::saturation::{
    delta, mean, samples_in, Finding, Limit, Saturation, CPU_SATURATED, RUN_QUEUE, RUN_QUEUE_FLOOR,
};
use store::run::StoredProbe;

/// Backends waiting on locks or storage, on average, for the database to be the limit: at
/// least one, and at least half of those active.
pub const DB_WAITING: f64 = 1.0;

/// Busy (active, or idle inside a transaction) at least this share of the connected backends,
/// on average over the readings: every connection of the pool busy. Not 1: `pg_stat_activity`
/// is read at instants, and a connection handed back between two requests reads idle for the
/// moment the server takes to give it to the next, longer when the server waits for a CPU
/// under overload, and a connection its client closed on a timeout reads idle while the pool
/// opens the next (a pool of 2 held 5 ms a request, 1,200 req/s offered with 2 s timeouts:
/// 70–87 % busy over six sittings on the 2-vCPU VM, the database idle, the server's CPU at a
/// quarter). The finding says the figure, so a reader can weigh it; it is sought only after
/// the server's own CPU and the database's CPU and locks were ruled out.
pub const POOL_BUSY: f64 = 0.6;

/// What the database said of its backends over a window, as means of its readings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Activity {
    pub readings: usize,
    /// Client backends connected, and the server's limit.
    pub backends: f64,
    pub max_connections: Option<u32>,
    /// Backends whose state the reading role could not see.
    pub hidden: f64,
    pub idle_in_transaction: f64,
    /// Active backends by what they waited on, in [`WaitClass::ALL`]'s order.
    pub active: [f64; 8],
    /// Write transactions a second, server-wide (transaction IDs assigned).
    pub writes_per_s: Option<f64>,
    /// The share of the connected backends busy (active, or idle inside a transaction), the
    /// mean over the readings that had any: a pool filling at the start weighs no less than
    /// a full one.
    #[serde(default)]
    pub busy_share: Option<f64>,
}

impl Activity {
    /// The readings in `probe`'s samples between `from_ns` and `to_ns`; `None` without any.
    pub fn of(probe: &StoredProbe, from_ns: i64, to_ns: i64) -> Option<Activity> {
        let samples = samples_in(probe, from_ns, to_ns);
        let readings: Vec<&probe::sample::DbActivity> =
            samples.iter().filter_map(|s| s.database.as_ref()).collect();
        if readings.is_empty() {
            return None;
        }
        let avg = |f: &dyn Fn(&probe::sample::DbActivity) -> f64| {
            mean(readings.iter().map(|a| f(a))).unwrap_or(0.0)
        };
        let mut active = [0.0; 8];
        for (i, slot) in active.iter_mut().enumerate() {
            *slot = avg(&|a| a.active[i] as f64);
        }
        Some(Activity {
            readings: readings.len(),
            backends: avg(&|a| a.backends as f64),
            max_connections: readings.iter().rev().find_map(|a| a.max_connections),
            hidden: avg(&|a| a.hidden as f64),
            idle_in_transaction: avg(&|a| a.idle_in_transaction as f64),
            active,
            writes_per_s: delta(&samples, |s| s.database.as_ref()?.next_xid)
                .filter(|(_, secs)| *secs >= 1.0)
                .map(|(n, secs)| n / secs),
            busy_share: mean(readings.iter().filter(|a| a.backends > 0).map(|a| {
                let busy = a.active.iter().sum::<u32>() + a.idle_in_transaction;
                f64::from(busy.min(a.backends)) / f64::from(a.backends)
            })),
        })
    }

    /// Active backends waiting on `class`, on average.
    pub fn active_in(&self, class: WaitClass) -> f64 {
        self.active[class.index()]
    }

    pub fn active_total(&self) -> f64 {
        self.active.iter().sum()
    }

    /// The locks or storage its backends waited on, when that is the most they did: the class
    /// most waited on of the three, and the three's sum.
    pub fn contended(&self) -> Option<(WaitClass, f64)> {
        let classes = [WaitClass::Lock, WaitClass::LwLock, WaitClass::Io];
        let waiting: f64 = classes.iter().map(|&c| self.active_in(c)).sum();
        let top = classes
            .into_iter()
            .max_by(|a, b| self.active_in(*a).total_cmp(&self.active_in(*b)))?;
        (waiting >= DB_WAITING && waiting >= 0.5 * self.active_total()).then_some((top, waiting))
    }

    /// Backends holding their connection busy on average: active, or idle inside a
    /// transaction.
    pub fn busy(&self) -> f64 {
        self.active_total() + self.idle_in_transaction
    }

    /// The share of its connected backends that were busy, when nearly all were: the
    /// clients' pool (or whatever holds those connections) was the limit.
    pub fn pool_busy(&self) -> Option<f64> {
        let busy = self
            .busy_share
            .unwrap_or_else(|| self.busy() / self.backends.max(f64::MIN_POSITIVE));
        (self.backends >= 1.0 && self.hidden < 0.05 && busy >= POOL_BUSY).then_some(busy)
    }

    /// Its figures in one phrase: backends, active ones by wait, write transactions.
    pub fn figures(&self) -> String {
        let mut by_wait: Vec<(WaitClass, f64)> = WaitClass::ALL
            .iter()
            .map(|&c| (c, self.active_in(c)))
            .filter(|(_, n)| *n >= 0.05)
            .collect();
        by_wait.sort_by(|a, b| b.1.total_cmp(&a.1));
        let waits: Vec<String> = by_wait
            .iter()
            .map(|(c, n)| format!("{n:.1} {}", c.label()))
            .collect();
        let mut text = format!(
            "{:.1} backends{}, {:.1} active{}",
            self.backends,
            self.max_connections
                .map(|m| format!(" of its {m}"))
                .unwrap_or_default(),
            self.active_total(),
            if waits.is_empty() {
                String::new()
            } else {
                format!(" ({})", waits.join(", "))
            }
        );
        if self.idle_in_transaction >= 0.05 {
            text.push_str(&format!(
                ", {:.1} idle in a transaction",
                self.idle_in_transaction
            ));
        }
        if self.hidden >= 0.05 {
            text.push_str(&format!(
                ", {:.1} of other roles not visible (grant pg_read_all_stats)",
                self.hidden
            ));
        }
        if let Some(t) = self.writes_per_s {
            text.push_str(&format!(
                ", {t:.0} write transactions a second (server-wide)"
            ));
        }
        text
    }
}

/// A participant beside the target (its database), as far as it could be measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Participant {
    /// As the user knows it (`PostgreSQL`).
    pub name: String,
    /// Its processes' figures, where a probe watched them on their host.
    pub saturation: Option<Saturation>,
    /// What it said of itself.
    pub activity: Option<Activity>,
}

impl Participant {
    /// Its figures in one line, each only where it was measured.
    pub fn figures(&self) -> String {
        let mut parts = Vec::new();
        if let Some(s) = &self.saturation {
            parts.push(s.figures());
        }
        if let Some(a) = &self.activity {
            parts.push(a.figures());
        }
        if parts.is_empty() {
            parts.push("nothing measured".into());
        }
        format!("{}: {}", self.name, parts.join("; "))
    }
}

/// The target, its database and the other processes the file watches, over one window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct System {
    pub target: Saturation,
    pub database: Option<Participant>,
    /// The `[[watch]]` groups, each weighed like the database's processes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub others: Vec<Participant>,
}

impl System {
    /// The figures of a run's probes between `from_ns` and `to_ns`: the target's (the first
    /// probe watching a target), its database's and the other groups'; `None` without the
    /// target's.
    pub fn of(probes: &[StoredProbe], from_ns: i64, to_ns: i64) -> Option<System> {
        System::from_parts(probes.iter().map(|p| {
            (
                &p.meta.host,
                Saturation::of(p, from_ns, to_ns),
                Activity::of(p, from_ns, to_ns),
            )
        }))
    }

    /// The same from each probe's facts and figures, already read over the window.
    pub fn from_parts<'a>(
        parts: impl IntoIterator<Item = (&'a HostInfo, Option<Saturation>, Option<Activity>)>,
    ) -> Option<System> {
        let mut target = None;
        let mut database = None;
        let mut others = Vec::new();
        for (host, saturation, activity) in parts {
            let participant = |default: &str| Participant {
                name: host.name.clone().unwrap_or_else(|| default.into()),
                saturation: saturation.clone(),
                activity: activity.clone(),
            };
            match host.role {
                Role::Target if target.is_none() => target = saturation.clone(),
                Role::Database if database.is_none() => {
                    database = Some(participant("the database"))
                }
                Role::Other => others.push(participant("a watched group")),
                _ => {}
            }
        }
        Some(System {
            target: target?,
            database,
            others,
        })
    }

    /// The CPUs both the target and a participant (`s`) may run on, where both lists were
    /// read and they share any.
    fn shared_cpus(&self, s: &Saturation) -> Option<probe::cpus::CpuList> {
        let shared = self.target.cpus.as_ref()?.intersection(s.cpus.as_ref()?);
        (!shared.is_empty()).then_some(shared)
    }

    /// Every participant's figures, each where measured.
    pub fn figures(&self) -> String {
        let mut parts = vec![self.target.figures()];
        parts.extend(
            self.database
                .iter()
                .chain(&self.others)
                .map(Participant::figures),
        );
        parts.join("; ")
    }

    /// Which resource limited the target, and the sentence that says so with the figures of
    /// the target and of what ran beside it.
    pub fn verdict(&self) -> (Limit, String) {
        let f = self.finding();
        (f.limit, f.evidence)
    }

    /// Which resource limited the target: its short sentence and its evidence. In order: the
    /// target's quota or CPU; the database's CPU, then each watched group's; the database's
    /// locks or storage; the database's or a group's processes queued for their CPUs; the
    /// target's connections to the database, every one busy (only then: connections held by a
    /// slow database are busy too); CPUs the target shares with one of them; the target's own
    /// verdict.
    pub fn finding(&self) -> Finding {
        let own = self.target.finding();
        if self.database.is_none() && self.others.is_empty() {
            return own;
        }
        let evidence = self
            .database
            .iter()
            .chain(&self.others)
            .map(Participant::figures)
            .collect::<Vec<_>>()
            .join("; ");
        if matches!(own.limit, Limit::Quota | Limit::Cpu) {
            return Finding {
                evidence: format!("{}; {evidence}", own.evidence),
                ..own
            };
        }
        let beside = Beside {
            server: self.target.usage_by("the server"),
            evidence,
            all: self
                .database
                .iter()
                .map(|d| (d, Limit::DatabaseCpu))
                .chain(self.others.iter().map(|o| (o, Limit::OtherCpu)))
                .collect(),
        };
        self.saturated(&beside)
            .or_else(|| self.database_waited(&beside))
            .or_else(|| self.queued(&beside))
            .or_else(|| self.pool(&beside))
            .or_else(|| self.shared_run_queue(&own, &beside))
            .unwrap_or_else(|| self.own(own, &beside.evidence))
    }

    /// A participant busy as much as it may be.
    fn saturated(&self, b: &Beside<'_>) -> Option<Finding> {
        let (server, evidence) = (&b.server, &b.evidence);
        b.all.iter().find_map(|&(p, limit)| {
            let s = p.saturation.as_ref()?;
            let share = s.cpu_share().filter(|&x| x >= CPU_SATURATED)?;
            let name = &p.name;
            Some(Finding::new(
                limit,
                format!("{name}'s CPU: {} ({:.0} %)", s.used_short(), share * 100.0),
                format!(
                    "{name}'s CPU: it used {:.2} cores, {:.0} % of what it may use, while {server}; {evidence}",
                    s.cpu_cores,
                    share * 100.0
                ),
            ))
        })
    }

    /// The database's backends waiting on its locks or its storage.
    fn database_waited(&self, b: &Beside<'_>) -> Option<Finding> {
        let (server, evidence) = (&b.server, &b.evidence);
        let db = self.database.as_ref()?;
        let a = db.activity.as_ref()?;
        let (class, waiting) = a.contended()?;
        let name = &db.name;
        let what = match class {
            WaitClass::Io => "storage",
            _ => "locks",
        };
        Some(Finding::new(
            Limit::DatabaseWait,
            format!(
                "{name}'s {what}: {waiting:.1} of its {:.1} active backends waited on them",
                a.active_total()
            ),
            format!(
                "{name}'s {what}: {waiting:.1} of its {:.1} active backends on average waited on locks or storage, most on {}, while {server}; {evidence}",
                a.active_total(),
                class.label()
            ),
        ))
    }

    /// A participant's own processes queued for its CPUs, longer than the target's threads
    /// did for theirs: on CPUs of its own, or on CPUs it shares with the target where it ran
    /// more than the target did (the shared CPU went mostly to it: a query of milliseconds a
    /// request, the server's few microseconds beside it).
    fn queued(&self, b: &Beside<'_>) -> Option<Finding> {
        let (server, evidence) = (&b.server, &b.evidence);
        b.all.iter().find_map(|&(p, limit)| {
            let s = p.saturation.as_ref()?;
            let shared = self.shared_cpus(s);
            let wait = s.run_delay_cores.filter(|&w| {
                w >= RUN_QUEUE_FLOOR
                    && w >= RUN_QUEUE * s.cpu_cores
                    && w > self.target.run_delay_cores.unwrap_or(0.0)
                    && (shared.is_none() || s.cpu_cores > self.target.cpu_cores)
            })?;
            let name = &p.name;
            let there = match &shared {
                Some(cpus) => format!(" (CPU {cpus}, which the server shares with it)"),
                None => String::new(),
            };
            Some(Finding::new(
                limit,
                format!("{name}'s CPU{there}: its processes waited {wait:.2} s a second for one"),
                format!(
                    "{name}'s CPU{there}: its processes waited {wait:.2} s a second for a CPU ({:.0} % of the time they ran), more of them runnable at once than CPUs to run them; it used {:.2} cores, {:.0} % of what it may use, while {server}; {evidence}",
                    100.0 * wait / s.cpu_cores.max(f64::MIN_POSITIVE),
                    s.cpu_cores,
                    s.cpu_share().unwrap_or(0.0) * 100.0
                ),
            ))
        })
    }

    /// Its connections to the database all busy, the database neither saturated nor queued
    /// for its CPUs (then they were busy because it was slow): a pool.
    fn pool(&self, b: &Beside<'_>) -> Option<Finding> {
        let (server, evidence) = (&b.server, &b.evidence);
        let db = self.database.as_ref()?;
        let a = db.activity.as_ref()?;
        let busy = a.pool_busy()?;
        let name = &db.name;
        Some(Finding::new(
            Limit::Pool,
            format!(
                "its pool of connections to {name}: {:.1} of {:.1} busy on average",
                a.busy(),
                a.backends
            ),
            format!(
                "a wait inside the server: its connections to {name}, {:.1} of {:.1} busy on average ({:.0} %), while {server}; {evidence}",
                a.busy(),
                a.backends,
                busy * 100.0
            ),
        ))
    }

    /// The target's threads waited for CPUs a participant's processes also ran on: the
    /// busiest such participant is named.
    fn shared_run_queue(&self, own: &Finding, b: &Beside<'_>) -> Option<Finding> {
        let evidence = &b.evidence;
        let wait = self
            .target
            .run_delay_cores
            .filter(|_| own.limit == Limit::RunQueue)?;
        let (p, s, shared) = b
            .all
            .iter()
            .filter_map(|(p, _)| {
                let s = p.saturation.as_ref()?;
                Some((p, s, self.shared_cpus(s)?))
            })
            .max_by(|a, b| a.1.cpu_cores.total_cmp(&b.1.cpu_cores))?;
        let name = &p.name;
        Some(Finding::new(
            Limit::RunQueue,
            format!("CPU {shared}, shared with {name}: its threads waited {wait:.2} s a second for it"),
            format!(
                "CPU {shared}, which it shares with {name}: its threads waited {wait:.2} s a second for a CPU ({:.0} % of the time they ran) while {name} ran {:.2} cores there; {}; {evidence}",
                100.0 * wait / self.target.cpu_cores.max(f64::MIN_POSITIVE),
                s.cpu_cores,
                self.target.usage(),
            ),
        ))
    }

    /// The target's own verdict, with what ran beside it; a wait, where it is one, said as
    /// the server's own (measured, and the database not saturated).
    fn own(&self, own: Finding, evidence: &str) -> Finding {
        match (own.limit, &self.database) {
            (Limit::Wait, Some(db)) => Finding::new(
                Limit::Wait,
                format!(
                    "a wait inside the server: it used {}, {} not saturated",
                    self.target.used_short(),
                    db.name
                ),
                format!(
                    "a wait inside the server (a pool, a lock, a sleep): {}, with {}; {} was not saturated ({evidence})",
                    self.target.usage(),
                    self.target.ruled_out(),
                    db.name
                ),
            ),
            _ => Finding {
                evidence: format!("{}; {evidence}", own.evidence),
                ..own
            },
        }
    }
}

/// What ran beside the target, for a finding about it: how the server was loaded (said in
/// every finding), the participants' figures, and each participant with the limit its CPU
/// is (the database's, or another group's).
struct Beside<'a> {
    server: String,
    evidence: String,
    all: Vec<(&'a Participant, Limit)>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use probe::protocol::Record;
    use probe::sample::{DbActivity, HostInfo, ProcessSample, Sample};
    use store::run::{ProbeMeta, StoredRecord};

    /// A probe of `role` whose tree used `cores` (of 1 CPU) for 10 s, with run-queue wait
    /// measured (none), and `activity` in every sample when given.
    fn probe(role: Role, cores: Option<f64>, activity: Option<DbActivity>) -> StoredProbe {
        let records = (0..=10u64)
            .map(|i| StoredRecord {
                seq: i,
                t_ns: (i * 1_000_000_000) as i64,
                record: Record::Sample(Box::new(Sample {
                    scheduled_mono_ns: i * 1_000_000_000,
                    mono_ns: i * 1_000_000_000,
                    wall_ns: i * 1_000_000_000,
                    interval_ns: 1_000_000_000,
                    missed_ticks: 0,
                    target_pid: cores.map(|_| 1),
                    processes: Vec::new(),
                    total: cores.map(|c| ProcessSample {
                        cpu_ns: (i as f64 * c * 1e9) as u64,
                        cpus_allowed: Some(1),
                        run_delay_ns: Some(i * 1_000_000),
                        ..Default::default()
                    }),
                    host: None,
                    cgroup: None,
                    database: activity.clone().map(|mut a| {
                        a.read_wall_ns = i * 1_000_000_000;
                        a.next_xid = Some(i * 500);
                        a
                    }),
                    probe: Default::default(),
                })),
            })
            .collect();
        StoredProbe {
            meta: ProbeMeta {
                index: 0,
                address: "in-process".into(),
                host: HostInfo {
                    cpus: 2,
                    role,
                    name: (role == Role::Database).then(|| "PostgreSQL".into()),
                    ..Default::default()
                },
                clock: None,
            },
            records,
            gaps: Vec::new(),
        }
    }

    fn backends(active: [u32; 8]) -> DbActivity {
        DbActivity {
            backends: 60,
            max_connections: Some(100),
            active,
            ..Default::default()
        }
    }

    /// The system these probes saw, each tree one process (its row is its total, as the
    /// tests shaped it).
    fn system(probes: &[StoredProbe]) -> System {
        let mut probes = probes.to_vec();
        for p in &mut probes {
            for r in &mut p.records {
                if let Record::Sample(s) = &mut r.record {
                    s.processes = s.total.iter().cloned().collect();
                }
            }
        }
        System::of(&probes, 0, 10_000_000_000).unwrap()
    }

    fn verdict(probes: &[StoredProbe]) -> (Limit, String) {
        system(probes).verdict()
    }

    #[test]
    fn a_database_at_its_cpu_is_named_with_the_servers_figures() {
        let (limit, text) = verdict(&[
            probe(Role::Target, Some(0.46), None),
            probe(
                Role::Database,
                Some(0.96),
                Some(backends([9, 0, 0, 0, 0, 0, 0, 0])),
            ),
        ]);
        assert_eq!(limit, Limit::DatabaseCpu, "{text}");
        assert!(
            text.starts_with("PostgreSQL's CPU: it used 0.96 cores, 96 % of what it may use, while the server used 0.46 cores, 46 %"),
            "{text}"
        );
        assert!(
            text.contains(
                "60.0 backends of its 100, 9.0 active (9.0 on CPU), 500 write transactions a second (server-wide)"
            ),
            "{text}"
        );
    }

    #[test]
    fn backends_waiting_on_locks_name_the_database_even_where_no_probe_runs() {
        // A managed database: no process here, only what it says.
        let (limit, text) = verdict(&[
            probe(Role::Target, Some(0.3), None),
            probe(
                Role::Database,
                None,
                Some(backends([1, 7, 1, 0, 0, 0, 0, 0])),
            ),
        ]);
        assert_eq!(limit, Limit::DatabaseWait, "{text}");
        assert!(text.starts_with("PostgreSQL's locks: 8.0 of its 9.0 active backends on average waited on locks or storage, most on Lock"), "{text}");
    }

    #[test]
    fn with_the_database_measured_and_idle_the_wait_is_the_servers_own() {
        // A pool of 2 connections, each held 5 ms a request in a sleep.
        let (limit, text) = verdict(&[
            probe(Role::Target, Some(0.2), None),
            probe(
                Role::Database,
                Some(0.05),
                Some(DbActivity {
                    backends: 2,
                    active: [0, 0, 0, 0, 0, 0, 2, 0],
                    ..Default::default()
                }),
            ),
        ]);
        assert_eq!(limit, Limit::Pool, "{text}");
        assert!(
            text.starts_with("a wait inside the server: its connections to PostgreSQL, 2.0 of 2.0 busy on average (100 %)"),
            "{text}"
        );
        assert!(
            text.contains("2.0 backends, 2.0 active (2.0 Timeout)"),
            "{text}"
        );
        // Connections mostly idle, the database idle: the server's own wait, said so.
        let (limit, text) = verdict(&[
            probe(Role::Target, Some(0.2), None),
            probe(
                Role::Database,
                Some(0.05),
                Some(DbActivity {
                    backends: 20,
                    active: [1, 0, 0, 0, 0, 0, 0, 0],
                    ..Default::default()
                }),
            ),
        ]);
        assert_eq!(limit, Limit::Wait, "{text}");
        assert!(
            text.starts_with("a wait inside the server (a pool, a lock, a sleep)"),
            "{text}"
        );
        assert!(
            text.contains("PostgreSQL was not saturated (PostgreSQL: CPU 0.05 cores"),
            "{text}"
        );
    }

    #[test]
    fn a_saturated_server_is_named_first_with_its_databases_figures_beside() {
        let (limit, text) = verdict(&[
            probe(Role::Target, Some(0.97), None),
            probe(
                Role::Database,
                Some(0.95),
                Some(backends([3, 0, 0, 0, 0, 0, 0, 0])),
            ),
        ]);
        assert_eq!(limit, Limit::Cpu, "{text}");
        assert!(text.contains("; PostgreSQL: CPU 0.95 cores"), "{text}");
    }

    #[test]
    fn a_run_queue_on_the_cpus_the_database_shares_names_the_sharing() {
        let with_cpus = |mut p: StoredProbe, list: &str| {
            for r in &mut p.records {
                if let Record::Sample(s) = &mut r.record {
                    if let Some(t) = &mut s.total {
                        t.cpu_list = list.parse().ok();
                        // Waiting half the time it runs.
                        t.run_delay_ns = Some(t.cpu_ns / 2);
                    }
                }
            }
            p
        };
        let (limit, text) = verdict(&[
            with_cpus(probe(Role::Target, Some(0.36), None), "1"),
            with_cpus(probe(Role::Database, Some(0.23), None), "1"),
        ]);
        assert_eq!(limit, Limit::RunQueue, "{text}");
        assert!(
            text.starts_with("CPU 1, which it shares with PostgreSQL: its threads waited 0.18 s a second for a CPU (50 % of the time they ran) while PostgreSQL ran 0.23 cores there; it used 0.36 cores"),
            "{text}"
        );
        // Apart, the run queue is the server's own affair.
        let (_, text) = verdict(&[
            with_cpus(probe(Role::Target, Some(0.36), None), "1"),
            with_cpus(probe(Role::Database, Some(0.23), None), "0"),
        ]);
        assert!(text.starts_with("the run queue"), "{text}");
    }

    #[test]
    fn a_shared_cpu_that_went_mostly_to_the_database_is_the_databases() {
        // A query of milliseconds a request: PostgreSQL ran 0.60 cores of CPU 1, its 16
        // backends queued 5.5 s a second for it; the server, beside it, 0.18 cores.
        let shape = |mut p: StoredProbe, wait_per_cpu: f64| {
            for r in &mut p.records {
                if let Record::Sample(s) = &mut r.record {
                    if let Some(t) = &mut s.total {
                        t.cpu_list = "1".parse().ok();
                        t.run_delay_ns = Some((t.cpu_ns as f64 * wait_per_cpu) as u64);
                    }
                }
            }
            p
        };
        let f = system(&[
            shape(probe(Role::Target, Some(0.18), None), 6.3),
            shape(probe(Role::Database, Some(0.60), None), 9.2),
        ])
        .finding();
        assert_eq!(f.limit, Limit::DatabaseCpu, "{}", f.evidence);
        assert!(
            f.short.starts_with("PostgreSQL's CPU (CPU 1, which the server shares with it): its processes waited 5.52 s a second"),
            "{}",
            f.short
        );
    }

    #[test]
    fn a_database_whose_processes_queue_for_its_own_cpu_is_its_cpu() {
        // 0.79 of its CPU by its clock, yet its backends waited 2 s a second for it: the
        // database ran out of CPU (on CPUs the target does not use).
        let mut db = probe(Role::Database, Some(0.79), None);
        for r in &mut db.records {
            if let Record::Sample(s) = &mut r.record {
                if let Some(t) = &mut s.total {
                    t.run_delay_ns = Some(t.cpu_ns * 2);
                    t.cpu_list = "1".parse().ok();
                }
            }
        }
        let (limit, text) = verdict(&[probe(Role::Target, Some(0.07), None), db]);
        assert_eq!(limit, Limit::DatabaseCpu, "{text}");
        assert!(
            text.starts_with("PostgreSQL's CPU: its processes waited 1.58 s a second for a CPU (200 % of the time they ran)"),
            "{text}"
        );
    }

    #[test]
    fn backends_queued_on_a_lock_are_named_before_their_cpu_wait() {
        // Waking one another at each release, they also queue for the CPU: the lock is why.
        let mut db = probe(
            Role::Database,
            Some(0.27),
            Some(backends([0, 17, 2, 0, 0, 0, 1, 0])),
        );
        for r in &mut db.records {
            if let Record::Sample(s) = &mut r.record {
                if let Some(t) = &mut s.total {
                    t.run_delay_ns = Some(t.cpu_ns * 3 / 2);
                }
            }
        }
        let (limit, text) = verdict(&[probe(Role::Target, Some(0.1), None), db]);
        assert_eq!(limit, Limit::DatabaseWait, "{text}");
        assert!(
            text.starts_with("PostgreSQL's locks: 19.0 of its 20.0 active backends on average waited on locks or storage, most on Lock"),
            "{text}"
        );
    }

    #[test]
    fn a_pool_of_two_read_busy_between_requests_is_still_the_pool() {
        // Under overload a pool of 2 held 5 ms a request reads 1.7 busy on average: a
        // connection handed back reads idle for the moment before the next request takes it.
        let readings = |i: u64| DbActivity {
            backends: 2,
            active: if i % 10 < 7 {
                [0, 0, 0, 0, 0, 0, 2, 0]
            } else {
                [0, 0, 0, 0, 0, 0, 1, 0]
            },
            ..Default::default()
        };
        let mut db = probe(Role::Database, Some(0.04), None);
        for (i, r) in db.records.iter_mut().enumerate() {
            if let Record::Sample(s) = &mut r.record {
                s.database = Some(readings(i as u64));
            }
        }
        let f = system(&[probe(Role::Target, Some(0.3), None), db]).finding();
        assert_eq!(f.limit, Limit::Pool, "{}", f.evidence);
        assert_eq!(
            f.short,
            "its pool of connections to PostgreSQL: 1.7 of 2.0 busy on average"
        );
        assert!(
            f.evidence
                .contains("2.0 backends, 1.7 active (1.7 Timeout)"),
            "{}",
            f.evidence
        );
    }

    #[test]
    fn a_watched_group_is_weighed_like_the_database() {
        let mut cache = probe(Role::Other, Some(0.95), None);
        cache.meta.host.name = Some("redis".into());
        let f = system(&[probe(Role::Target, Some(0.2), None), cache]).finding();
        assert_eq!(f.limit, Limit::OtherCpu, "{}", f.evidence);
        assert_eq!(
            f.short,
            "redis's CPU: 0.95 of the 1.00 cores it may use (95 %)"
        );
        assert!(
            f.evidence.contains("while the server used 0.20 cores"),
            "{}",
            f.evidence
        );
    }

    #[test]
    fn the_short_sentence_names_the_resource_and_its_deciding_figure() {
        let f = system(&[
            probe(Role::Target, Some(0.46), None),
            probe(
                Role::Database,
                Some(0.96),
                Some(backends([9, 0, 0, 0, 0, 0, 0, 0])),
            ),
        ])
        .finding();
        assert_eq!(
            f.short,
            "PostgreSQL's CPU: 0.96 of the 1.00 cores it may use (96 %)"
        );
        // The evidence holds every figure; the short sentence only the deciding ones.
        assert!(
            f.evidence.contains("60.0 backends of its 100"),
            "{}",
            f.evidence
        );
        assert!(!f.short.contains("backends"));
    }

    #[test]
    fn without_a_database_probe_the_targets_verdict_stands() {
        let p = [probe(Role::Target, Some(0.97), None)];
        let system = system(&p);
        assert_eq!(system.verdict(), system.target.verdict());
    }
}
