//! Runs kept in the store, with the probes' samples on the run's timeline.
#![allow(clippy::unwrap_used)]

use crate::common;

use crate::postgres;

use std::collections::HashSet;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::{exclusive, execute, load_run, local_probe, CuttableLink};
use loadgen::commands::target::{TargetConfig, TargetServer};
use probe::protocol::Record;
use probe::sample::EventKind;
use probe::selector::Selector;
use store::model::IntervalStats;
use store::RunStatus;

fn sqlite(dir: &tempfile::TempDir) -> String {
    format!("sqlite://{}/results/showdown.db", dir.path().display())
}

#[test]
fn a_run_is_kept_with_its_intervals_and_summary() {
    let _cpu = exclusive();
    let target = TargetServer::start(TargetConfig::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite(&dir);
    let done = execute(&[
        "--rate",
        "500",
        "--duration",
        "2s",
        "--db",
        &db,
        "--name",
        "node 500",
        "--label",
        "target=node",
        "--label",
        "rate=500",
        "--experiment",
        "smoke",
        "-H",
        "Authorization: Bearer s3cret",
        &target.url("/now"),
    ]);
    let run = load_run(&db, done.run_id.as_ref().unwrap());
    assert_eq!(run.status, RunStatus::Complete);
    assert_eq!(run.meta.name, "node 500");
    assert_eq!(run.meta.experiment.as_deref(), Some("smoke"));
    assert_eq!(run.meta.labels.get("rate").map(String::as_str), Some("500"));
    assert_eq!(run.summary.as_ref(), Some(&done.summary));
    let mut totals = IntervalStats::new(0, 1);
    for i in &run.intervals {
        totals.accumulate(&i.stats);
    }
    assert_eq!(totals.requests, 1000);
    assert_eq!(
        totals.corrected.value_at_quantile(0.99),
        done.summary.latency.corrected.p99_ns
    );
    // A run shorter than 30 s is recorded in 100 ms intervals (its tails' slots).
    assert_eq!(run.intervals[1].start_ns, 100_000_000);
    let stored = serde_json::to_string(&run.meta.config).unwrap();
    assert!(
        !stored.contains("s3cret"),
        "a secret header was stored: {stored}"
    );
    assert!(run.meta.gun_host.cpus >= 1);
}

#[test]
fn probe_samples_land_on_the_run_timeline_even_with_a_shifted_clock() {
    let _cpu = exclusive();
    // The target is a process of its own, so that the probe can see it exit.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_loadgen"))
        .args(["target", "--listen", "127.0.0.1:0"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let url = format!(
        "http://{}/now",
        line.trim().strip_prefix("listening on ").unwrap()
    );
    // The probe's clocks run 5 s ahead of ours.
    let shift: i64 = 5_000_000_000;
    let probe = local_probe(Selector::Pid(child.id() as i32), shift, 100_000);
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite(&dir);
    let probe_addr = probe.addr.to_string();
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1500));
        let at = SystemTime::now();
        child.kill().unwrap();
        child.wait().unwrap();
        at
    });
    let done = execute(&[
        "--rate",
        "100",
        "--duration",
        "3s",
        "--db",
        &db,
        "--probe",
        &probe_addr,
        "--post-roll",
        "500ms",
        &url,
    ]);
    let killed_at = killer.join().unwrap();
    let run = load_run(&db, done.run_id.as_ref().unwrap());
    let probe = &run.probes[0];
    let clock = probe.meta.clock.unwrap();
    assert!(
        (clock.offset_ns - shift).unsigned_abs() <= clock.uncertainty_ns + 1,
        "offset {} ns ± {} for a 5 s shift",
        clock.offset_ns,
        clock.uncertainty_ns
    );
    assert!(clock.uncertainty_ns < 5_000_000);
    // Every sample sits where its (true) time falls on the run's timeline.
    let zero = run.meta.started_at_ns;
    let mut samples = 0;
    for r in &probe.records {
        if let Record::Sample(s) = &r.record {
            let truth = s.wall_ns as i64 - shift - zero;
            assert!(
                (r.t_ns - truth).abs() < 2_000_000,
                "sample at {} ns, truly at {truth} ns",
                r.t_ns
            );
            samples += 1;
        }
    }
    assert!(samples >= 40, "{samples} samples");
    // The target's exit, 1.5 s into the attack, is on the timeline 1.5 s in.
    let exited = probe
        .records
        .iter()
        .find(|r| matches!(&r.record, Record::Event(e) if matches!(e.kind, EventKind::TargetExited { .. })))
        .expect("the probe saw the target exit");
    let killed = killed_at.duration_since(UNIX_EPOCH).unwrap().as_nanos() as i64 - zero;
    assert!(
        (0..=120_000_000).contains(&(exited.t_ns - killed)),
        "killed at {killed} ns, exit recorded at {} ns",
        exited.t_ns
    );
    // Pre-roll and post-roll: samples before time zero and after the last request.
    assert!(probe.records.first().unwrap().t_ns < 0);
    // The export's samples CSV has `probe record`'s columns, and its times are the timeline's.
    let mut exported = Vec::new();
    store::export::samples_csv(&run, &mut exported).unwrap();
    let mut exported = csv::Reader::from_reader(exported.as_slice());
    let mut recorded = probe::record::RecordWriter::new(Vec::new(), probe::record::Format::Csv);
    let sample = probe
        .records
        .iter()
        .find(|r| matches!(r.record, Record::Sample(_)))
        .unwrap();
    recorded.write(&sample.record).unwrap();
    let recorded = recorded.into_inner().unwrap();
    let mut recorded = csv::Reader::from_reader(recorded.as_slice());
    assert_eq!(exported.headers().unwrap(), recorded.headers().unwrap());
    let first = exported.records().next().unwrap().unwrap();
    let t_s: f64 = first[0].parse().unwrap();
    assert!(t_s < 0.0, "the first sample is in the pre-roll: {t_s} s");
    assert!(
        done.summary.errors.contains_key("refused"),
        "requests after the kill were refused"
    );
}

/// Attacks for `seconds` with a probe of `history` records (20 Hz) behind a link that is cut
/// `after_ms` into the run for `for_ms`; returns the run as kept.
fn across_a_cut(
    history: usize,
    after_ms: u64,
    for_ms: u64,
    seconds: u64,
    extra: &[&str],
) -> (loadgen::keep::Executed, store::StoredRun) {
    let target = TargetServer::start(TargetConfig::default()).unwrap();
    let probe = local_probe(Selector::Pid(std::process::id() as i32), 0, history);
    let link = CuttableLink::new(probe.addr);
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite(&dir);
    let proxy = link.addr.to_string();
    let cutter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(after_ms));
        link.cut();
        std::thread::sleep(Duration::from_millis(for_ms));
        link.restore();
        link
    });
    let duration = format!("{seconds}s");
    let url = target.url("/now");
    let mut args = vec![
        "--rate",
        "100",
        "--duration",
        &duration,
        "--db",
        &db,
        "--probe",
        &proxy,
    ];
    args.extend_from_slice(extra);
    args.push(&url);
    let done = execute(&args);
    let _link = cutter.join().unwrap();
    let run = load_run(&db, done.run_id.as_ref().unwrap());
    (done, run)
}

#[test]
fn a_cut_probe_link_is_restored_and_nothing_is_lost() {
    let _cpu = exclusive();
    let (done, run) = across_a_cut(100_000, 1200, 1000, 4, &["--post-roll", "1s"]);
    assert!(done.probes[0].reconnections >= 1, "{:?}", done.probes[0]);
    let probe = &run.probes[0];
    assert!(probe.gaps.is_empty(), "{:?}", probe.gaps);
    let seqs: Vec<u64> = probe.records.iter().map(|r| r.seq).collect();
    let expected: Vec<u64> = (seqs[0]..=*seqs.last().unwrap()).collect();
    assert_eq!(seqs, expected, "every record once, across the cut");
    // The samples cover the whole attack at the probe's 20 Hz, cut or not.
    let during: Vec<i64> = probe
        .records
        .iter()
        .map(|r| r.t_ns)
        .filter(|t| (0..4_000_000_000).contains(t))
        .collect();
    assert!(
        during.len() >= 75,
        "{} samples during a 4 s attack",
        during.len()
    );
}

#[test]
fn records_the_probe_no_longer_holds_are_stored_as_a_gap() {
    let _cpu = exclusive();
    // A history of 10 records at 20 Hz: half a second, and the link is down for 1.5 s.
    let (_, run) = across_a_cut(10, 800, 1500, 3, &["--pre-roll", "0s"]);
    let probe = &run.probes[0];
    assert_eq!(probe.gaps.len(), 1, "{:?}", probe.gaps);
    let gap = &probe.gaps[0];
    let to = gap.to_seq.unwrap();
    assert!(to > gap.from_seq + 10, "{gap:?}");
    let seqs: HashSet<u64> = probe.records.iter().map(|r| r.seq).collect();
    assert!(
        (gap.from_seq..=to).all(|s| !seqs.contains(&s)),
        "records inside the gap"
    );
    assert!(
        seqs.contains(&(gap.from_seq - 1)) && seqs.contains(&(to + 1)),
        "the gap is exactly what is missing"
    );
    assert!(
        (1_000_000_000..3_500_000_000).contains(&gap.t_ns),
        "{gap:?}"
    );
}

#[test]
fn two_gun_processes_write_one_run_group_into_postgres() {
    let _cpu = exclusive();
    let target = TargetServer::start(TargetConfig {
        record_responses: true,
        ..Default::default()
    })
    .unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let pg = rt.block_on(postgres::TestPostgres::start());
    let start = SystemTime::now() + Duration::from_secs(3);
    let start = humantime::format_rfc3339_millis(start).to_string();
    let url = target.url("/now?seq={{seq}}");
    // Two gun processes at once, both waiting for --start-at.
    let guns: Vec<_> = (0..2)
        .map(|i| {
            std::process::Command::new(env!("CARGO_BIN_EXE_loadgen"))
                .args([
                    "attack",
                    "--rate",
                    "400",
                    "--duration",
                    "2s",
                    "--threads",
                    "1",
                ])
                .args([
                    "--db",
                    &pg.url,
                    "--run-group",
                    "g",
                    "--shard",
                    &format!("{i}/2"),
                    "--start-at",
                    &start,
                ])
                .args(["--output", "json", &url])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for gun in guns {
        let out = gun.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(summary["requests"]["total"], 400, "each shard sends half");
    }
    let served: Vec<u64> = target
        .stats
        .responses
        .lock()
        .unwrap()
        .iter()
        .map(|(path, _)| path.rsplit('=').next().unwrap().parse().unwrap())
        .collect();
    let unique: HashSet<u64> = served.iter().copied().collect();
    assert_eq!(
        served.len(),
        800,
        "both shards' requests reached the server"
    );
    assert_eq!(
        unique,
        (0..800).collect(),
        "the shards split the schedule: each request once"
    );
    let group = rt.block_on(async {
        let store = store::Store::open(&pg.url).await.unwrap();
        analysis::group::load_group(&store, "g").await.unwrap()
    });
    let summary = group.summary.unwrap();
    assert_eq!(summary.requests.total, 800);
    assert_eq!(summary.requests.ok, 800);
    assert_eq!(group.meta.shard.as_ref().unwrap().count, 2);
}

/// `probe serve` watching this test, sampling every 50 ms, on `port`.
fn probe_process(port: u16) -> std::process::Child {
    common::probe_serve(std::process::id(), port, &["--interval", "50ms"])
}

fn signal(child: &std::process::Child, signal: rustix::process::Signal) {
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, signal).unwrap();
}

/// A probe killed outright (as the OOM killer does under the unit's MemoryMax) and started
/// again numbers its records afresh: loadgen follows the new one from its first record, keeps
/// both, and stores the samples never taken between them as a gap.
#[test]
fn a_probe_killed_and_started_again_is_followed_across_the_restart() {
    let _cpu = exclusive();
    let target = TargetServer::start(TargetConfig::default()).unwrap();
    let port = common::closed_port().port();
    let mut first = probe_process(port);
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite(&dir);
    let restarter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1500));
        signal(&first, rustix::process::Signal::KILL);
        let _ = first.wait();
        std::thread::sleep(Duration::from_millis(500));
        probe_process(port)
    });
    let probe = format!("127.0.0.1:{port}");
    let url = target.url("/now");
    let done = execute(&[
        "--rate",
        "100",
        "--duration",
        "5s",
        "--db",
        &db,
        "--probe",
        &probe,
        "--post-roll",
        "1s",
        &url,
    ]);
    let mut second = restarter.join().unwrap();
    signal(&second, rustix::process::Signal::KILL);
    let _ = second.wait();
    let run = load_run(&db, done.run_id.as_ref().unwrap());
    let probe = &run.probes[0];
    let seqs: Vec<u64> = probe.records.iter().map(|r| r.seq).collect();
    assert!(
        seqs.windows(2).all(|w| w[0] < w[1]),
        "stored numbers only grow, never twice: {seqs:?}"
    );
    let restarts: Vec<_> = probe
        .gaps
        .iter()
        .filter(|g| g.reason.contains("restarted"))
        .collect();
    assert_eq!(restarts.len(), 1, "{:?}", probe.gaps);
    let gap = restarts[0];
    let to = gap.to_seq.unwrap();
    assert!(seqs.iter().all(|s| !(gap.from_seq..=to).contains(s)));
    let (before, after): (Vec<_>, Vec<_>) =
        probe.records.iter().partition(|r| r.seq < gap.from_seq);
    assert!(
        before.len() >= 20,
        "{} records before the kill",
        before.len()
    );
    assert!(
        after.len() >= 20,
        "{} records after the restart",
        after.len()
    );
    // The gap is where the probe was down: after the last old sample, before the first new.
    let last_before = before.iter().map(|r| r.t_ns).max().unwrap();
    let first_after = after.iter().map(|r| r.t_ns).min().unwrap();
    assert!(last_before < gap.t_ns && gap.t_ns <= first_after, "{gap:?}");
    // About half a second at 20 Hz went unsampled.
    assert!((5..=40).contains(&(to - gap.from_seq + 1)), "{gap:?}");
    assert!(done.probes[0]
        .problem
        .as_deref()
        .is_some_and(|p| p.contains("restarted")));
}

/// A probe that freezes (SIGSTOP: a stalled host, a half-open link) neither hangs the run nor
/// cuts its samples short in silence: the run ends on time and what is missing is a gap.
#[test]
fn a_frozen_probe_does_not_hold_the_run_and_ends_as_a_gap() {
    let _cpu = exclusive();
    let target = TargetServer::start(TargetConfig::default()).unwrap();
    let port = common::closed_port().port();
    let mut child = probe_process(port);
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite(&dir);
    let pid = child.id();
    let freezer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1000));
        let pid = rustix::process::Pid::from_raw(pid as i32).unwrap();
        rustix::process::kill_process(pid, rustix::process::Signal::STOP).unwrap();
    });
    let probe = format!("127.0.0.1:{port}");
    let url = target.url("/now");
    let started = std::time::Instant::now();
    let done = execute(&[
        "--rate",
        "100",
        "--duration",
        "3s",
        "--db",
        &db,
        "--probe",
        &probe,
        "--post-roll",
        "1s",
        &url,
    ]);
    let took = started.elapsed();
    freezer.join().unwrap();
    signal(&child, rustix::process::Signal::KILL);
    signal(&child, rustix::process::Signal::CONT);
    let _ = child.wait();
    // 3 s of load, 1 s of post-roll, at most 2 s for the last ping: the frozen probe cost no
    // more than that.
    assert!(took < Duration::from_secs(8), "the run took {took:?}");
    let run = load_run(&db, done.run_id.as_ref().unwrap());
    let probe = &run.probes[0];
    let last = probe.records.iter().map(|r| r.seq).max().unwrap();
    let open: Vec<_> = probe.gaps.iter().filter(|g| g.to_seq.is_none()).collect();
    assert_eq!(open.len(), 1, "{:?}", probe.gaps);
    assert_eq!(open[0].from_seq, last + 1, "{:?}", open[0]);
    let last_t = probe.records.iter().map(|r| r.t_ns).max().unwrap();
    assert!(
        last_t < 1_500_000_000 && open[0].t_ns == last_t + 1,
        "the samples end at the freeze ({last_t} ns) and the gap starts there: {:?}",
        open[0]
    );
}
