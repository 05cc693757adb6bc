//! The store against real databases: a temporary SQLite file, and a throwaway PostgreSQL.
#![allow(clippy::unwrap_used)]

use crate::postgres;

use probe::protocol::Record;
use probe::sample::{Event, EventKind, HostInfo, ProcessSample, Sample};
use store::model::{ErrorKind, IntervalStats};
use store::run::{
    ClockAlignment, HostFacts, ProbeMeta, RunConfig, Shard, StoredGap, StoredInterval, StoredRecord,
};
use store::summary::{RunFacts, Summary};
use store::{Finish, RunFilter, RunMeta, RunStatus, RunWriter, Store};

/// Runs `test` against a fresh SQLite file and a fresh PostgreSQL database.
async fn on_both<F, Fut>(test: F)
where
    F: Fn(Store) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let dir = tempfile::tempdir().unwrap();
    let sqlite = format!("sqlite://{}/nested/dir/showdown.db", dir.path().display());
    test(Store::open(&sqlite).await.unwrap()).await;
    let pg = postgres::TestPostgres::start().await;
    test(Store::open(&pg.url).await.unwrap()).await;
}

fn meta(name: &str, labels: &[(&str, &str)], shard: Option<Shard>) -> RunMeta {
    RunMeta {
        id: RunMeta::new_id(),
        name: name.into(),
        experiment: Some("node-vs-go".into()),
        labels: labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        shard,
        tool_version: "test".into(),
        started_at_ns: 1_795_000_000_000_000_000,
        interval_ns: 1_000_000_000,
        config: RunConfig {
            target: "POST http://api:8080/users".into(),
            load: "open loop, constant 3000 req/s for 30s".into(),
            open_loop: true,
            threads: 2,
            max_connections: 10_000,
            timeout_ns: 30_000_000_000,
            command_line: vec!["loadgen".into(), "attack".into()],
            details: serde_json::json!({"rate": 3000}),
            ..Default::default()
        },
        gun_host: HostFacts {
            hostname: "gun".into(),
            kernel: "6.1".into(),
            cpus: 4,
            mem_total_bytes: 16 << 30,
            fd_limit_soft: Some(1024),
            fd_limit_hard: Some(524288),
        },
    }
}

/// An interval whose corrected latencies are `values` (ns).
fn interval(index: u64, values: &[u64]) -> StoredInterval {
    let mut stats = IntervalStats::new(index, 30_000_000_000);
    for &v in values {
        stats.corrected.record(v).unwrap();
        stats.service.record(v / 2).unwrap();
        stats.status.add(201, 1);
    }
    stats.requests = values.len() as u64;
    stats.sent = values.len() as u64;
    stats.responses = values.len() as u64;
    stats.ok = values.len() as u64;
    stats.bytes_in = 27 * values.len() as u64;
    stats.errors.add(ErrorKind::Timeout, index);
    stats.connections_opened = 2 + index;
    stats.resent = index;
    StoredInterval {
        start_ns: index as i64 * 1_000_000_000,
        length_ns: 1_000_000_000,
        stats,
    }
}

fn sample(mono_ns: u64, rss: u64) -> Record {
    let row = ProcessSample {
        pid: 42,
        comm: "node".into(),
        cpu_pct: Some(37.5),
        rss_bytes: rss,
        threads: 11,
        fds: Some(120),
        ..Default::default()
    };
    Record::Sample(Box::new(Sample {
        scheduled_mono_ns: mono_ns,
        mono_ns,
        wall_ns: mono_ns + 7,
        interval_ns: 100_000_000,
        missed_ticks: 0,
        target_pid: Some(42),
        processes: vec![row.clone()],
        total: Some(row),
        host: None,
        cgroup: None,
        database: None,
        probe: Default::default(),
    }))
}

fn summary_of(totals: &IntervalStats) -> Summary {
    let config = RunConfig {
        target: "t".into(),
        load: "l".into(),
        open_loop: true,
        threads: 1,
        max_connections: 1,
        ..Default::default()
    };
    Summary::new(&RunFacts {
        config: &config,
        started: std::time::UNIX_EPOCH,
        interval: std::time::Duration::from_secs(1),
        totals,
        attack: std::time::Duration::from_secs(3),
        wait: Default::default(),
        cpu: Default::default(),
        peak_rss_bytes: None,
        stopped: None,
        notes: vec![],
        generator: Default::default(),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_round_trips() {
    on_both(|store| async move {
        let meta = meta("node 3000", &[("target", "node"), ("rate", "3000")], None);
        store.create_run(&meta).await.unwrap();
        let writer = RunWriter::start(&store, &meta.id);
        let intervals: Vec<StoredInterval> = (0..3)
            .map(|i| {
                interval(
                    i,
                    &(1..=1000).map(|v| v * 1_000 * (i + 1)).collect::<Vec<_>>(),
                )
            })
            .collect();
        for i in &intervals {
            writer.interval(i.clone());
        }
        let host = HostInfo {
            hostname: "api".into(),
            cpus: 1,
            ..Default::default()
        };
        writer.probe(ProbeMeta {
            index: 0,
            address: "10.0.0.5:7700".into(),
            host: host.clone(),
            clock: Some(ClockAlignment {
                offset_ns: 500,
                uncertainty_ns: 40,
                wall_offset_ns: -3,
            }),
        });
        let zero_mono = 10_000_000_000i64;
        for seq in 0..20u64 {
            let mono = 9_500_000_000 + seq * 100_000_000;
            writer.record(
                0,
                StoredRecord {
                    seq,
                    t_ns: 0,
                    record: sample(mono, 1000 + seq),
                },
            );
        }
        let event = Record::Event(Event {
            mono_ns: 11_000_000_000,
            wall_ns: 1,
            kind: EventKind::TargetExited { pid: 42 },
        });
        writer.record(
            0,
            StoredRecord {
                seq: 20,
                t_ns: 0,
                record: event.clone(),
            },
        );
        let gap = StoredGap {
            from_seq: 21,
            to_seq: Some(25),
            t_ns: 1_100_000_000,
            reason: "evicted".into(),
        };
        writer.gap(0, gap.clone());
        let mut totals = IntervalStats::new(0, 30_000_000_000);
        for i in &intervals {
            totals.accumulate(&i.stats);
        }
        let summary = summary_of(&totals);
        let report = writer
            .finish(Finish {
                status: RunStatus::Complete,
                stop_reason: None,
                ended_at_ns: meta.started_at_ns + 3_000_000_000,
                summary: Some(summary.clone()),
                warnings: vec!["a warning".into()],
                clock_offsets: vec![(0, 500)],
                zero_mono_ns: zero_mono,
            })
            .await;
        assert_eq!(report.rows_failed, 0, "{report:?}");

        let run = store.load_run(&meta.id).await.unwrap();
        assert_eq!(run.meta, meta);
        assert_eq!(run.status, RunStatus::Complete);
        assert_eq!(run.summary.as_ref(), Some(&summary));
        assert_eq!(run.warnings, vec!["a warning".to_string()]);
        assert_eq!(run.intervals.len(), 3);
        for (got, want) in run.intervals.iter().zip(&intervals) {
            assert_eq!(got.start_ns, want.start_ns);
            assert_eq!(
                got.stats.corrected, want.stats.corrected,
                "histograms are stored exactly"
            );
            assert_eq!(got.stats.service, want.stats.service);
            assert_eq!(got.stats.errors, want.stats.errors);
            assert_eq!(got.stats.status, want.stats.status);
            assert_eq!(
                (got.stats.requests, got.stats.bytes_in),
                (want.stats.requests, want.stats.bytes_in)
            );
            assert_eq!(
                (got.stats.connections_opened, got.stats.resent),
                (want.stats.connections_opened, want.stats.resent),
                "connections and resends are kept"
            );
        }
        let probe = &run.probes[0];
        assert_eq!(probe.meta.host, host);
        assert_eq!(probe.meta.clock.unwrap().offset_ns, 500);
        assert_eq!(probe.records.len(), 21);
        assert_eq!(probe.gaps, vec![gap]);
        // Records were realigned to the final clock offset: t = probe_mono − offset − zero.
        assert_eq!(probe.records[0].t_ns, 9_500_000_000 - 500 - zero_mono);
        assert_eq!(probe.records[20].record, event);
        assert_eq!(probe.records[3].record, sample(9_800_000_000, 1003));

        // Listed, filtered by label, resolved by prefix and name, and deleted.
        let listed = store.list_runs(&RunFilter::default()).await.unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].peak_rss_bytes, Some(1019));
        assert_eq!(listed[0].peak_fds, Some(120));
        let mut filter = RunFilter::default();
        filter.labels.insert("target".into(), "go".into());
        assert!(store.list_runs(&filter).await.unwrap().is_empty());
        filter.labels.insert("target".into(), "node".into());
        assert_eq!(store.list_runs(&filter).await.unwrap().len(), 1);
        assert_eq!(store.resolve(&meta.id[..8]).await.unwrap(), meta.id);
        assert_eq!(store.resolve("node 3000").await.unwrap(), meta.id);
        assert!(store.delete_run(&meta.id).await.unwrap());
        assert!(store.load_run(&meta.id).await.is_err());
        assert!(!store.delete_run(&meta.id).await.unwrap());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_run_keeps_what_it_recorded() {
    on_both(|store| async move {
        // Stopped early: marked incomplete, with its reason and its intervals.
        let stopped = meta("stopped", &[], None);
        store.create_run(&stopped).await.unwrap();
        let writer = RunWriter::start(&store, &stopped.id);
        for i in 0..3 {
            writer.interval(interval(i, &[1_000_000]));
        }
        writer
            .finish(Finish {
                status: RunStatus::Incomplete,
                stop_reason: Some("interrupted by Ctrl-C".into()),
                ended_at_ns: stopped.started_at_ns + 2,
                summary: None,
                warnings: vec![],
                clock_offsets: vec![],
                zero_mono_ns: 0,
            })
            .await;
        let run = store.load_run(&stopped.id).await.unwrap();
        assert_eq!(run.status, RunStatus::Incomplete);
        assert_eq!(run.stop_reason.as_deref(), Some("interrupted by Ctrl-C"));
        assert_eq!(run.intervals.len(), 3);

        // Killed: the writer never finished. What was flushed is there; the run says running.
        let killed = meta("killed", &[], None);
        store.create_run(&killed).await.unwrap();
        let writer = RunWriter::start(&store, &killed.id);
        writer.interval(interval(0, &[5_000]));
        tokio::time::sleep(std::time::Duration::from_millis(600)).await;
        drop(writer);
        let run = store.load_run(&killed.id).await.unwrap();
        assert_eq!(run.status, RunStatus::Running);
        assert_eq!(run.intervals.len(), 1);
    })
    .await;
}

/// A batch whose commit succeeded but whose answer was lost is written again: the store keeps
/// what it has and adds what is new, instead of refusing the whole batch (new rows included).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_written_twice_adds_only_what_is_new() {
    on_both(|store| async move {
        let run = meta("retried", &[], None);
        store.create_run(&run).await.unwrap();
        let gap = store::run::StoredGap {
            from_seq: 3,
            to_seq: Some(4),
            t_ns: 1_000,
            reason: "evicted".into(),
        };
        for retried in [false, true] {
            let writer = RunWriter::start(&store, &run.id);
            writer.probe(ProbeMeta {
                index: 0,
                address: "10.0.0.5:7700".into(),
                host: HostInfo::default(),
                clock: None,
            });
            writer.interval(interval(0, &[1_000_000]));
            writer.interval(interval(1, &[2_000_000]));
            writer.record(
                0,
                StoredRecord {
                    seq: 1,
                    t_ns: 10,
                    record: sample(10, 1 << 20),
                },
            );
            writer.gap(0, gap.clone());
            if retried {
                // The retry carries the rows that followed too.
                writer.interval(interval(2, &[3_000_000]));
                writer.record(
                    0,
                    StoredRecord {
                        seq: 2,
                        t_ns: 20,
                        record: sample(20, 1 << 20),
                    },
                );
            }
            let report = writer
                .finish(Finish {
                    status: RunStatus::Complete,
                    stop_reason: None,
                    ended_at_ns: run.started_at_ns + 3,
                    summary: None,
                    warnings: vec![],
                    clock_offsets: vec![],
                    zero_mono_ns: 0,
                })
                .await;
            assert_eq!(report.rows_failed, 0, "{report:?}");
        }
        let kept = store.load_run(&run.id).await.unwrap();
        let indexes: Vec<u64> = kept.intervals.iter().map(|i| i.stats.index).collect();
        assert_eq!(indexes, vec![0, 1, 2]);
        assert_eq!(kept.probes[0].records.len(), 2);
        assert_eq!(kept.probes[0].gaps.len(), 1);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shards_merge_into_the_percentiles_of_all_requests() {
    on_both(|store| async move {
        // Latencies spread over four orders of magnitude; shard by alternating requests.
        let values: Vec<u64> = (1..=20_000u64)
            .map(|i| (i * i) % 50_000_000 + 1_000)
            .collect();
        let mut whole = IntervalStats::new(0, 30_000_000_000);
        for &v in &values {
            whole.corrected.record(v).unwrap();
        }
        for index in 0..2u32 {
            let shard = Shard {
                group: "g1".into(),
                index,
                count: 2,
            };
            let gun = format!("gun{index}");
            let m = meta("shard", &[("target", "go"), ("gun", &gun)], Some(shard));
            store.create_run(&m).await.unwrap();
            let writer = RunWriter::start(&store, &m.id);
            let mine: Vec<u64> = values
                .iter()
                .copied()
                .skip(index as usize)
                .step_by(2)
                .collect();
            // Two intervals per shard: the merge adds index by index, then over time.
            writer.interval(interval(0, &mine[..mine.len() / 3]));
            writer.interval(interval(1, &mine[mine.len() / 3..]));
            let mut totals = IntervalStats::new(0, 30_000_000_000);
            totals.accumulate(&interval(0, &mine).stats);
            writer
                .finish(Finish {
                    status: RunStatus::Complete,
                    stop_reason: None,
                    ended_at_ns: 0,
                    summary: Some(summary_of(&totals)),
                    warnings: vec![],
                    clock_offsets: vec![],
                    zero_mono_ns: 0,
                })
                .await;
        }
        let group = store::group::load_group(&store, "g1").await.unwrap();
        assert_eq!(group.intervals.len(), 2);
        let mut merged = IntervalStats::new(0, 30_000_000_000);
        for i in &group.intervals {
            merged.accumulate(&i.stats);
        }
        assert_eq!(merged.corrected.len(), values.len() as u64);
        for q in [0.0, 0.25, 0.5, 0.9, 0.99, 0.999, 0.9999, 1.0] {
            assert_eq!(
                merged.corrected.value_at_quantile(q),
                whole.corrected.value_at_quantile(q),
                "q={q}"
            );
        }
        let summary = group.summary.unwrap();
        assert_eq!(summary.requests.total, values.len() as u64);
        assert_eq!(
            summary.latency.corrected.p99_ns,
            whole.corrected.value_at_quantile(0.99)
        );
        assert_eq!(group.meta.shard.unwrap().count, 2);
        // What every shard says, the group says; one gun's name is not the group's.
        assert_eq!(
            group.meta.labels.into_iter().collect::<Vec<_>>(),
            [("target".to_string(), "go".to_string())]
        );
        assert!(store::group::load_group(&store, "no-such-group")
            .await
            .is_err());
    })
    .await;
}

#[tokio::test]
async fn bad_urls_and_unknown_runs_say_what_to_do() {
    let e = Store::open("mysql://x/y").await.unwrap_err().to_string();
    assert!(
        e.contains("sqlite://PATH") && e.contains("postgres://"),
        "{e}"
    );
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&format!("sqlite://{}/s.db", dir.path().display()))
        .await
        .unwrap();
    let e = store.load_run("nope").await.unwrap_err().to_string();
    assert!(e.contains("loadgen runs list"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_comparisons_gates_are_kept_in_order_and_redacted() {
    use store::kept::KeptGate;
    // The gate's body is the analysis crate's (`analysis::ab::Gate`, redacted there); the store
    // keeps it as given, and redacts the setting it files it under.
    on_both(|store| async move {
        let kept = |id: &str, at: i64| KeptGate {
            id: id.into(),
            experiment: "gate".into(),
            setting: "pr?token=hunter2hunter2".into(),
            file_label: "abc".into(),
            scale: 1.0,
            judged_at_ns: at,
            gate: serde_json::json!({"outcome": "inconclusive"}),
        };
        store.put_kept_gate(&kept("later", 2_000)).await.unwrap();
        store.put_kept_gate(&kept("earlier", 1_000)).await.unwrap();
        let gates: Vec<KeptGate<serde_json::Value>> = store.kept_gates("gate").await.unwrap();
        let ids: Vec<&str> = gates.iter().map(|g| g.id.as_str()).collect();
        assert_eq!(ids, ["earlier", "later"]);
        assert_eq!(
            gates[0].gate,
            serde_json::json!({"outcome": "inconclusive"})
        );
        assert!(
            !gates[0].setting.contains("hunter2"),
            "{:?}",
            gates[0].setting
        );
        let none: Vec<KeptGate<serde_json::Value>> = store.kept_gates("another").await.unwrap();
        assert!(none.is_empty());
    })
    .await;
}

/// A SQLite store made new is its owner's alone, whatever the umask: the file 0600 (its -wal
/// and -shm take its mode) and a directory made for it 0700; a store already there keeps its own.
#[tokio::test]
async fn a_new_sqlite_store_is_its_owners_alone() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new/deeper/runs.db");
    let store = Store::open(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    store.close().await;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(&dir.path().join("new")), 0o700);
    assert_eq!(mode(&dir.path().join("new/deeper")), 0o700);
    let shared = dir.path().join("shared.db");
    std::fs::write(&shared, b"").unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o640)).unwrap();
    Store::open(&format!("sqlite://{}", shared.display()))
        .await
        .unwrap()
        .close()
        .await;
    assert_eq!(mode(&shared), 0o640, "a store already there keeps its mode");
}

/// Two processes opening one new SQLite file at once both find it unmigrated; the second's
/// `CREATE TABLE` met the first's table and it failed to open ("table searches already
/// exists", an experiment's test reading the store its runner was creating). Twenty new files,
/// each opened twice at once: every open succeeds, and each file holds its tables once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_new_sqlite_file_opened_twice_at_once_opens_twice() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..20 {
        let url = format!("sqlite://{}/race-{i}.db", dir.path().display());
        let (a, b) = tokio::join!(Store::open(&url), Store::open(&url));
        let (a, b) = (a.unwrap(), b.unwrap());
        assert!(a.list_runs(&Default::default()).await.unwrap().is_empty());
        assert!(b.list_runs(&Default::default()).await.unwrap().is_empty());
    }
}
