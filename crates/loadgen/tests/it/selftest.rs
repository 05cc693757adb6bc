//! `loadgen selftest`: the real binary measures this machine, holds coordinated omission to its
//! known truth, keeps what it found, and the page of a run on this host cites it.
#![allow(clippy::unwrap_used)]

use std::process::Command;

use loadgen::commands::target::{TargetConfig, TargetServer};
use store::selftest::SelfTest;

use crate::common::exclusive;

#[test]
fn a_selftest_holds_omission_to_its_truth_and_the_pages_of_its_hosts_runs_cite_it() {
    let _cpu = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("showdown.db").display());
    let out = Command::new(env!("CARGO_BIN_EXE_loadgen"))
        .args(["selftest", "--db", &db, "--omission", "10s"])
        .args(["--pacing-step", "1s", "--output", "json"])
        .env_remove("SHOWDOWN_DB")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let t: SelfTest = serde_json::from_str(&said).unwrap();
    // The freezes' truth: 90 ms and the server's normal latency; the corrected p99 within 2 %,
    // the service time's far below it (what a tool timing from the send reports).
    let o = &t.omission;
    assert!(o.held(), "{o:?}");
    assert!((90_000_000..91_000_000).contains(&o.truth_p99_ns), "{o:?}");
    assert!(o.service_p99_ns < o.truth_p99_ns / 10, "{o:?}");
    assert!(t.floor.vdso && t.floor.wakeup_late_p50_ns <= t.floor.wakeup_late_p99_ns);
    // Pacing: the rates tried rise, each clean one at most the unthrottled rate's share, and
    // the last clean one is the figure.
    let p = &t.pacing;
    assert!(p.unthrottled_rps > 1_000.0, "{p:?}");
    assert!(!p.tried.is_empty() && p.ratio() <= 1.0, "{p:?}");
    let clean = p.tried.iter().filter(|(_, c, _)| *c).map(|(r, _, _)| *r);
    assert_eq!(clean.fold(0.0, f64::max), p.clean_rps, "{p:?}");
    // A run on this host, drawn: its page cites the self-test beside its validity.
    let target = TargetServer::start(TargetConfig::default()).unwrap();
    let site = dir.path().join("site");
    let run = Command::new(env!("CARGO_BIN_EXE_loadgen"))
        .args(["attack", &target.url("/now"), "-r", "200", "-d", "1s"])
        .args(["--db", &db, "--report", site.to_str().unwrap()])
        .env_remove("SHOWDOWN_DB")
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let page = std::fs::read_dir(site.join("runs"))
        .unwrap()
        .filter_map(Result::ok)
        .find(|e| e.path().extension().is_some_and(|x| x == "html"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .unwrap();
    assert!(page.contains("<h2>Validity</h2>"), "no validity panel");
    assert!(
        page.contains("This host's self-test (loadgen selftest, ")
            && page.contains(&format!("{:.1} % off, held", o.error * 100.0)),
        "the page does not cite the self-test"
    );
}
