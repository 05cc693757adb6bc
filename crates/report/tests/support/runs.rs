//! Runs written into a real store the way loadgen writes them, with figures chosen so that the
//! tests know what every page must show: a latency spike, errors, a probe with a hole in its
//! records, a process tree that grows, and text that must be escaped.
#![allow(dead_code, clippy::unwrap_used)]

use probe::protocol::Record;
use probe::sample::{Event, EventKind, FdKinds, HostInfo, ProcessSample, Sample, TcpSockets};
use store::model::{ErrorKind, IntervalStats};
use store::run::{
    ClockAlignment, HostFacts, ProbeMeta, RunConfig, Shard, StoredGap, StoredInterval, StoredRecord,
};
use store::summary::{RunFacts, Summary};
use store::{Finish, RunMeta, RunStatus, RunWriter, Store};

pub const HOSTILE: &str = "<script>alert('labels')</script>";
pub const HOSTILE_COMM: &str = "<img src=x onerror=alert(1)>";
pub const SECONDS: u64 = 30;
/// Probe samples per second (10 Hz, as the probe's default).
pub const HZ: u64 = 10;

/// What a fixture run looks like.
#[derive(Clone)]
pub struct Spec {
    pub name: &'static str,
    pub labels: Vec<(&'static str, String)>,
    pub experiment: Option<&'static str>,
    /// Base latency, µs; interval 17 has a 5 s spike.
    pub base_us: u64,
    pub rate: u64,
    pub finished: bool,
    pub shard: Option<Shard>,
    pub probe: bool,
    /// Length of the attack (one interval per second).
    pub seconds: u64,
    /// Folded stacks the probe's profile finds every second, when it profiles.
    pub profile: Option<&'static [(&'static str, u64)]>,
    /// One more stack, and its samples, in the profile's records of these seconds only.
    pub burst: Option<(&'static str, u64, std::ops::RangeInclusive<u64>)>,
    /// An open loop (a fixed rate) or a closed one (as fast as answers come).
    pub open_loop: bool,
    /// A second probe beside the target's: its database ([`DATABASE`]).
    pub database: bool,
    /// The target's cgroup quota (0.5 CPUs) ran out in this share of its periods.
    pub throttled: Option<f64>,
    /// The server fell behind: 20 % of the rate unserved, 5,000 sends late, the generator's
    /// reason "server accept".
    pub fell_behind: bool,
}

/// The database beside a target, as a probe of its own sees it: 60 processes, each resident on
/// 25 MiB of which 24 are the shared buffers (PSS 1 MiB each): 60 MiB in all, where RSS
/// summed reads 1,500 MiB. Together 0.05 cores.
pub const DATABASE: (u64, u64, u64) = (60, 25 << 20, 1 << 20);

impl Spec {
    pub fn new(name: &'static str, base_us: u64) -> Self {
        Spec {
            name,
            labels: Vec::new(),
            experiment: Some("node-vs-go"),
            base_us,
            rate: 200,
            finished: true,
            shard: None,
            probe: true,
            seconds: SECONDS,
            profile: None,
            burst: None,
            open_loop: true,
            database: false,
            throttled: None,
            fell_behind: false,
        }
    }

    pub fn profiled(mut self, stacks: &'static [(&'static str, u64)]) -> Self {
        self.profile = Some(stacks);
        self
    }

    /// `stack` sampled `n` times more in the records of `seconds` (a GC, a freeze).
    pub fn burst(
        mut self,
        stack: &'static str,
        n: u64,
        seconds: std::ops::RangeInclusive<u64>,
    ) -> Self {
        self.burst = Some((stack, n, seconds));
        self
    }

    pub fn label(mut self, k: &'static str, v: &str) -> Self {
        self.labels.push((k, v.to_string()));
        self
    }
}

/// A deterministic sequence (an LCG), so that the fixtures are the same on every run.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

fn interval(index: u64, spec: &Spec, lcg: &mut Lcg) -> StoredInterval {
    let mut stats = IntervalStats::new(index, 30_000_000_000);
    for _ in 0..spec.rate {
        let jitter = lcg.next() % (spec.base_us * 1000);
        let mut latency = spec.base_us * 1000 + jitter;
        if index == 17 && lcg.next().is_multiple_of(10) {
            latency = 5_000_000_000;
        }
        stats.corrected.record(latency).unwrap();
        stats.service.record(latency / 3 + 1000).unwrap();
        stats.first_byte.record(latency / 4 + 1000).unwrap();
        stats.lateness.record(20_000 + jitter % 50_000).unwrap();
        stats.status.add(200, 1);
    }
    let errors = if index == 20 { 7 } else { 0 };
    stats.errors.add(ErrorKind::Refused, errors);
    stats.requests = spec.rate + errors;
    stats.sent = spec.rate + errors;
    stats.responses = spec.rate;
    stats.ok = spec.rate;
    stats.bytes_in = 21 * spec.rate;
    stats.in_flight = 3;
    stats.connections_open = 4;
    StoredInterval {
        start_ns: index as i64 * 1_000_000_000,
        length_ns: 1_000_000_000,
        stats,
    }
}

fn process(pid: i32, comm: &str, cpu: f64, rss: u64, slow: bool, n: u64) -> ProcessSample {
    ProcessSample {
        pid,
        ppid: 1,
        comm: comm.into(),
        cpu_ns: n * 10_000_000,
        cpu_pct: Some(cpu),
        rss_bytes: rss,
        threads: 7,
        fds: Some(40 + n % 3),
        voluntary_ctxt_switches: slow.then_some(n * 50),
        involuntary_ctxt_switches: slow.then_some(n * 2),
        fd_limit_soft: slow.then_some(1024),
        fd_limit_hard: slow.then_some(4096),
        fd_kinds: slow.then(|| FdKinds {
            socket: 30,
            file: 5,
            pipe: 2,
            epoll: 1,
            eventfd: 1,
            ..Default::default()
        }),
        tcp: slow.then(|| TcpSockets {
            established: 25,
            time_wait: 3,
            listen: 1,
            accept_queue: 2,
            ..Default::default()
        }),
        // Saturation: 30 ms a second waiting for a CPU, on one allowed CPU.
        run_delay_ns: slow.then_some(n * 3_000_000),
        cpus_allowed: slow.then_some(1),
        ..Default::default()
    }
}

/// Probe sample `n`: the tree's RSS steps up at 10 s; sample 155 has a one-sample RSS spike
/// (the peak); from 20 s a second process (a worker) joins.
pub fn probe_sample(n: u64, zero_mono: u64) -> Record {
    let mono = zero_mono + n * (1_000_000_000 / HZ);
    let rss = if n == 155 {
        400 << 20
    } else if n < 100 {
        50 << 20
    } else {
        80 << 20
    };
    let slow = n.is_multiple_of(10);
    let mut processes = vec![process(100, "node", 40.0 + (n % 7) as f64, rss, slow, n)];
    if n >= 200 {
        processes.push(process(101, HOSTILE_COMM, 20.0, 30 << 20, slow, n));
    }
    let mut total = processes[0].clone();
    total.pid = 100;
    for p in &processes[1..] {
        total.cpu_pct = Some(total.cpu_pct.unwrap_or(0.0) + p.cpu_pct.unwrap_or(0.0));
        total.rss_bytes += p.rss_bytes;
        total.fds = total.fds.zip(p.fds).map(|(a, b)| a + b);
        total.threads += p.threads;
    }
    Record::Sample(Box::new(Sample {
        scheduled_mono_ns: mono,
        mono_ns: mono,
        wall_ns: mono,
        interval_ns: 1_000_000_000 / HZ,
        missed_ticks: 0,
        target_pid: Some(100),
        processes,
        total: Some(total),
        host: Some(probe::sample::HostSample {
            cpu_pct: Some(90.0),
            ..Default::default()
        }),
        cgroup: None,
        database: None,
        probe: Default::default(),
    }))
}

/// Writes a run as loadgen would, and returns its id.
pub async fn write(store: &Store, spec: &Spec, started_at_ns: i64) -> String {
    let meta = RunMeta {
        id: RunMeta::new_id(),
        name: spec.name.into(),
        experiment: spec.experiment.map(String::from),
        labels: spec
            .labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
        shard: spec.shard.clone(),
        tool_version: "test".into(),
        started_at_ns,
        interval_ns: 1_000_000_000,
        config: RunConfig {
            target: format!("GET http://127.0.0.1:8080/now?who={HOSTILE}"),
            load: format!(
                "open loop, constant {} req/s for {}s",
                spec.rate, spec.seconds
            ),
            open_loop: spec.open_loop,
            threads: 1,
            max_connections: 100,
            timeout_ns: 30_000_000_000,
            command_line: vec!["loadgen".into(), "attack".into(), HOSTILE.into()],
            details: serde_json::json!({ "note": HOSTILE }),
            ..Default::default()
        },
        gun_host: HostFacts {
            hostname: "gun".into(),
            kernel: "6.1".into(),
            cpus: 2,
            mem_total_bytes: 8 << 30,
            fd_limit_soft: Some(1024),
            fd_limit_hard: Some(4096),
        },
    };
    store.create_run(&meta).await.unwrap();
    let writer = RunWriter::start(store, &meta.id);
    let mut lcg = Lcg(spec.base_us);
    let mut totals = IntervalStats::new(0, 30_000_000_000);
    for i in 0..spec.seconds {
        let interval = interval(i, spec, &mut lcg);
        totals.accumulate(&interval.stats);
        writer.interval(interval);
    }
    let zero_mono = 50_000_000_000u64;
    if spec.probe {
        writer.probe(ProbeMeta {
            index: 0,
            address: "10.0.0.5:7700".into(),
            host: HostInfo {
                profile_hz: spec.profile.map(|_| 99),
                ..api_host("--port 8080")
            },
            clock: Some(ClockAlignment {
                offset_ns: 0,
                uncertainty_ns: 40_000,
                wall_offset_ns: 0,
            }),
        });
        let mut seq = 0;
        for n in 0..spec.seconds * HZ {
            // A hole: samples 250 to 269 were lost with the link.
            if (250..270).contains(&n) {
                seq += 1;
                continue;
            }
            let t_ns = (n * (1_000_000_000 / HZ)) as i64;
            let mut record = probe_sample(n, zero_mono);
            if let (Some(share), Record::Sample(s)) = (spec.throttled, &mut record) {
                s.cgroup = Some(quota(n, share));
            }
            writer.record(0, StoredRecord { seq, t_ns, record });
            seq += 1;
        }
        writer.record(
            0,
            StoredRecord {
                seq,
                t_ns: 20_000_000_000,
                record: Record::Event(Event {
                    mono_ns: zero_mono + 20_000_000_000,
                    wall_ns: 0,
                    kind: EventKind::ProcessStarted {
                        pid: 101,
                        ppid: 100,
                        comm: HOSTILE_COMM.into(),
                    },
                }),
            },
        );
        if spec.database {
            write_database(&writer, spec, zero_mono);
        }
        for k in 1..=spec.seconds {
            let Some(stacks) = spec.profile else { break };
            let mut stacks = stacks.to_vec();
            if let Some((stack, n, seconds)) = &spec.burst {
                if seconds.contains(&k) {
                    stacks.push((stack, *n));
                }
            }
            seq += 1;
            let samples = stacks.iter().map(|(_, n)| n).sum();
            writer.record(
                0,
                StoredRecord {
                    seq,
                    t_ns: (k * 1_000_000_000) as i64,
                    record: Record::Profile(Box::new({
                        let mut p = probe::sample::Profile {
                            mono_ns: zero_mono + k * 1_000_000_000,
                            wall_ns: 0,
                            interval_ns: 1_000_000_000,
                            hz: 99,
                            samples,
                            cpu_ns: samples * 10_101_010,
                            lost: 0,
                            ..Default::default()
                        };
                        p.set_folded(stacks.iter().map(|(s, n)| (s.to_string(), *n)));
                        p
                    })),
                },
            );
        }
        writer.gap(
            0,
            StoredGap {
                from_seq: 250,
                to_seq: Some(269),
                t_ns: 25_000_000_000,
                reason: format!("link lost: {HOSTILE}"),
            },
        );
    }
    let notes = vec![format!("a note with {HOSTILE}")];
    let mut summary = Summary::new(&RunFacts {
        config: &meta.config,
        started: std::time::UNIX_EPOCH + std::time::Duration::from_nanos(started_at_ns as u64),
        interval: std::time::Duration::from_secs(1),
        totals: &totals,
        attack: std::time::Duration::from_secs(spec.seconds),
        wait: std::time::Duration::from_millis(5),
        cpu: std::time::Duration::from_millis(300),
        peak_rss_bytes: Some(9 << 20),
        stopped: None,
        notes: notes.clone(),
        generator: Default::default(),
    });
    analysis::warnings::fill(&mut summary, &notes);
    if spec.fell_behind {
        let g = &mut summary.generator;
        g.behind = true;
        g.late = 5_000;
        g.limited_by = Some(store::vocabulary::LimitedBy::ServerAccept);
        summary.requests.throughput = 0.8 * summary.requests.rate;
    }
    let finish = Finish {
        status: RunStatus::Complete,
        stop_reason: None,
        ended_at_ns: started_at_ns + (spec.seconds as i64 + 1) * 1_000_000_000,
        summary: Some(summary),
        warnings: vec![],
        clock_offsets: vec![(0, 0)],
        zero_mono_ns: zero_mono as i64,
    };
    if spec.finished {
        let report = writer.finish(finish).await;
        assert_eq!(report.rows_failed, 0, "{report:?}");
    } else {
        // Killed: the rows are flushed, no summary is written.
        drop(writer);
        tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    }
    meta.id
}

/// The target's cgroup: a quota of 0.5 CPUs that ran out in `share` of its periods (10 a
/// tick), cumulative at sample `n`.
fn quota(n: u64, share: f64) -> probe::sample::CgroupCpu {
    probe::sample::CgroupCpu {
        path: "/showdown/target".into(),
        periods: n * 10,
        throttled_periods: (n as f64 * 10.0 * share) as u64,
        quota_cpus: Some(0.5),
        ..Default::default()
    }
}

/// The API host of the fixture as a probe there describes it, found by `selector`.
fn api_host(selector: &str) -> HostInfo {
    HostInfo {
        hostname: "api".into(),
        kernel: "6.1".into(),
        cpus: 2,
        mem_total_bytes: 4 << 30,
        probe_version: "test".into(),
        selector: selector.into(),
        interval_ns: 1_000_000_000 / HZ,
        ..Default::default()
    }
}

/// The database's probe ([`DATABASE`]), index 1, every tick; every member's PSS read each
/// second, as the slow collectors would.
fn write_database(writer: &RunWriter, spec: &Spec, zero_mono: u64) {
    let (n, rss, pss) = DATABASE;
    writer.probe(ProbeMeta {
        index: 1,
        address: "in-process".into(),
        host: HostInfo {
            role: probe::sample::Role::Database,
            name: Some("PostgreSQL".into()),
            ..api_host("--pid 4000")
        },
        clock: None,
    });
    for k in 0..spec.seconds * HZ {
        let mono = zero_mono + k * (1_000_000_000 / HZ);
        let slow = k % 10 == 0;
        let processes: Vec<ProcessSample> = (0..n)
            .map(|i| ProcessSample {
                pid: 4000 + i as i32,
                comm: "postgres".into(),
                // 0.05 cores among them.
                cpu_ns: k * 100_000_000 / 20 / n,
                cpu_pct: Some(5.0 / n as f64),
                rss_bytes: rss,
                pss_bytes: slow.then_some(pss),
                threads: 1,
                cpus_allowed: Some(2),
                run_delay_ns: slow.then_some(0),
                ..Default::default()
            })
            .collect();
        let mut total = ProcessSample {
            pid: 4000,
            comm: "postgres".into(),
            cpus_allowed: Some(2),
            ..Default::default()
        };
        for p in &processes {
            total.cpu_ns += p.cpu_ns;
            total.rss_bytes += p.rss_bytes;
            total.threads += 1;
        }
        total.cpu_pct = Some(5.0);
        writer.record(
            1,
            StoredRecord {
                seq: k,
                t_ns: (k * (1_000_000_000 / HZ)) as i64,
                record: Record::Sample(Box::new(Sample {
                    scheduled_mono_ns: mono,
                    mono_ns: mono,
                    wall_ns: mono,
                    interval_ns: 1_000_000_000 / HZ,
                    missed_ticks: 0,
                    target_pid: Some(4000),
                    processes,
                    total: Some(total),
                    host: None,
                    cgroup: None,
                    database: None,
                    probe: Default::default(),
                })),
            },
        );
    }
}
