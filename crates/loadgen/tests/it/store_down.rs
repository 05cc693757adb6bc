//! The store's PostgreSQL stopped in the middle of a run: what could not be written is kept
//! and written when it comes back; if it stays down past the end, the run is saved to a local
//! file and `loadgen runs import` brings it in. The attack's figures are printed in full either
//! way, and nothing is counted twice.
#![allow(clippy::unwrap_used)]

use crate::common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::{exclusive, load_run};
use loadgen::commands::target::{TargetConfig, TargetServer};
use store::model::IntervalStats;
use store::RunStatus;

/// Starts `loadgen attack` (200 req/s for 4 s) into `db`, from `dir`.
fn gun(dir: &std::path::Path, db: &str, url: &str) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_loadgen"))
        .current_dir(dir)
        .args([
            "attack",
            "--rate",
            "200",
            "--duration",
            "4s",
            "--threads",
            "1",
        ])
        .args(["--db", db, "--output", "json", url])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn summary_of(child: std::process::Child) -> serde_json::Value {
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        summary["requests"]["ok"], 800,
        "the attack's figures in full: {summary}"
    );
    summary
}

fn stored_requests(db: &str, id: &str) -> (RunStatus, u64, usize) {
    let run = load_run(db, id);
    let mut totals = IntervalStats::new(0, 1);
    for i in &run.intervals {
        totals.accumulate(&i.stats);
    }
    (run.status, totals.requests, run.intervals.len())
}

fn run_id(summary_stderr_dir: &std::path::Path, db: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_loadgen"))
        .current_dir(summary_stderr_dir)
        .args(["runs", "list", "--db", db, "--output", "json"])
        .output()
        .unwrap();
    let runs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    runs.as_array().unwrap().last().unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn a_store_stopped_mid_run_gets_every_row_when_it_comes_back() {
    let _cpu = exclusive();
    let target = TargetServer::start(TargetConfig::default()).unwrap();
    let mut pg = pgcluster::Cluster::start(&pgcluster::Options::default()).unwrap();
    pg.create_database("runs").unwrap();
    let db = pg.url("runs");
    let dir = tempfile::tempdir().unwrap();
    let child = gun(dir.path(), &db, &target.url("/now"));
    // Down for 6 s: longer than one write waits (5 s), past the end of the run (4 s), within
    // the time the end of a run waits for its store (15 s).
    std::thread::sleep(Duration::from_millis(1200));
    pg.stop().unwrap();
    std::thread::sleep(Duration::from_secs(6));
    pg.start_again().unwrap();
    let summary = summary_of(child);
    let warnings = summary["warnings"].to_string();
    assert!(
        warnings.contains("out of reach") && !warnings.contains("FAILED"),
        "{warnings}"
    );
    let id = run_id(dir.path(), &db);
    let (status, requests, intervals) = stored_requests(&db, &id);
    assert_eq!(status, RunStatus::Complete);
    assert_eq!(requests, 800, "every interval kept once");
    assert!(intervals >= 4, "{intervals} intervals");
    let left: Vec<_> = std::fs::read_dir(dir.path().join("results/unsaved"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(
        left.is_empty(),
        "the spool went back into the store and was removed: {left:?}"
    );
}

#[test]
fn a_store_down_past_the_end_gets_the_run_from_a_local_file() {
    let _cpu = exclusive();
    let target = TargetServer::start(TargetConfig::default()).unwrap();
    let mut pg = pgcluster::Cluster::start(&pgcluster::Options::default()).unwrap();
    pg.create_database("runs").unwrap();
    let db = pg.url("runs");
    let dir = tempfile::tempdir().unwrap();
    let child = gun(dir.path(), &db, &target.url("/now"));
    std::thread::sleep(Duration::from_millis(1200));
    pg.stop().unwrap();
    let summary = summary_of(child);
    let warnings = summary["warnings"].to_string();
    assert!(warnings.contains("runs import"), "{warnings}");
    let saved: Vec<_> = std::fs::read_dir(dir.path().join("results/unsaved"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "db"))
        .collect();
    assert_eq!(saved.len(), 1, "{saved:?}");
    assert!(
        warnings.contains(saved[0].file_name().unwrap().to_str().unwrap()),
        "the warning names the file: {warnings}"
    );

    pg.start_again().unwrap();
    let import = |expect_ok: bool| {
        let out = Command::new(env!("CARGO_BIN_EXE_loadgen"))
            .args(["runs", "import", saved[0].to_str().unwrap(), "--db", &db])
            .output()
            .unwrap();
        assert_eq!(
            out.status.success(),
            expect_ok,
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let said = import(true);
    assert!(
        said.contains("imported run") && said.contains("completed"),
        "{said}"
    );
    let id = run_id(dir.path(), &db);
    let (status, requests, _) = stored_requests(&db, &id);
    assert_eq!(status, RunStatus::Complete);
    assert_eq!(
        requests, 800,
        "the rows written before the outage and the file's, once each"
    );
    // A second import adds nothing: the store keeps the rows it has.
    import(true);
    assert_eq!(stored_requests(&db, &id).1, 800);
}

/// loadgen killed while its store is down: everything it had spooled is in the local file
/// (nothing waited in memory for the end), and `runs import` brings it in.
#[test]
fn a_generator_killed_during_an_outage_leaves_its_rows_in_the_spool() {
    let _cpu = exclusive();
    let target = TargetServer::start(TargetConfig::default()).unwrap();
    let mut pg = pgcluster::Cluster::start(&pgcluster::Options::default()).unwrap();
    pg.create_database("runs").unwrap();
    let db = pg.url("runs");
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_loadgen"))
        .current_dir(dir.path())
        .args([
            "attack",
            "--rate",
            "200",
            "--duration",
            "20s",
            "--threads",
            "1",
        ])
        .args(["--db", &db, "--output", "json", &target.url("/now")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    pg.stop().unwrap();
    // Six seconds of outage, then the generator is killed outright.
    std::thread::sleep(Duration::from_secs(6));
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::KILL).unwrap();
    let _ = child.wait();
    let spooled: Vec<_> = std::fs::read_dir(dir.path().join("results/unsaved"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "db"))
        .collect();
    assert_eq!(spooled.len(), 1, "{spooled:?}");
    pg.start_again().unwrap();
    let id = run_id(dir.path(), &db);
    let (_, before, _) = stored_requests(&db, &id);
    let out = Command::new(env!("CARGO_BIN_EXE_loadgen"))
        .args(["runs", "import", spooled[0].to_str().unwrap(), "--db", &db])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("still marked running"), "{said}");
    let (status, after, intervals) = stored_requests(&db, &id);
    assert_eq!(status, RunStatus::Running, "killed: it never ended");
    // 7.5 s at 200 req/s: every second closed before the kill is kept but the last, at most
    // a second of rows waiting for a store that no longer answers.
    assert!(intervals >= 6, "{intervals} intervals");
    assert!(
        after >= 1200 && after > before,
        "{before} stored before, {after} after"
    );
}
