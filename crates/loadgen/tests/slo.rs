//! `loadgen attack --slo`: a run judged against an SLO on its whole-run figures, its verdict in
//! one line and in the JSON, and its exit code: 0 met, 4 missed, 5 the generator was the limit
//! (the run cannot say), 2 a term a run cannot judge.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::{Child, Command, Output};

use common::exclusive;

const LOADGEN: &str = env!("CARGO_BIN_EXE_loadgen");

/// The built-in target spending 1 ms of CPU a request, one at a time; killed when dropped.
struct Target(Child, String);

impl Drop for Target {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn target() -> Target {
    let (child, addr) = common::loadgen_target(Command::new(LOADGEN), &["--work", "1ms"]);
    Target(child, format!("http://{addr}/"))
}

fn attack(url: &str, args: &[&str]) -> Output {
    let out = Command::new(LOADGEN)
        .args(["attack", url, "--no-store", "-d", "2s"])
        .args(args)
        .output()
        .unwrap();
    eprintln!(
        "--- stdout\n{}--- stderr\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn a_run_judged_against_its_slo_exits_0_when_met_and_4_when_missed() {
    let _cpu = exclusive();
    let t = target();
    let met = attack(
        &t.1,
        &["-r", "200", "--slo", "p99<=100ms", "--slo", "errors<=1%"],
    );
    assert_eq!(met.status.code(), Some(0));
    let said = String::from_utf8_lossy(&met.stdout);
    let line = said.lines().last().unwrap();
    assert!(
        line.starts_with("SLO met: p99 ") && line.contains("<= 100ms, errors 0 % <= 1 %"),
        "{line}"
    );
    // A bound no server meets: missed, with the figure beside the bound.
    let missed = attack(
        &t.1,
        &["-r", "200", "--slo", "p99<=1us", "--output", "json"],
    );
    assert_eq!(missed.status.code(), Some(4));
    let json: serde_json::Value = serde_json::from_slice(&missed.stdout).unwrap();
    assert_eq!(json["slo"]["outcome"], "missed");
    let p99 = json["latency"]["corrected"]["p99_ns"].as_f64().unwrap();
    assert_eq!(json["slo"]["terms"][0]["value"].as_f64().unwrap(), p99);
    assert!(p99 > 1_000.0);
}

#[test]
fn a_run_the_generator_held_back_cannot_say_and_exits_5() {
    let _cpu = exclusive();
    let t = target();
    // One connection cannot carry 3,000 req/s to a server that takes 1 ms a request: the
    // requests wait for the connection cap, and the figures describe less load than asked.
    let out = attack(
        &t.1,
        &["-r", "3000", "--max-connections", "1", "--slo", "p99<=10s"],
    );
    assert_eq!(out.status.code(), Some(5));
    let said = String::from_utf8_lossy(&out.stdout);
    let line = said.lines().last().unwrap();
    assert!(
        line.starts_with("SLO inconclusive: the generator was the limit, not the server"),
        "{line}"
    );
}

#[test]
fn a_term_a_run_does_not_keep_is_refused_in_one_line() {
    let out = Command::new(LOADGEN)
        .args([
            "attack",
            "http://127.0.0.1:9/",
            "-r",
            "1",
            "-d",
            "1s",
            "--slo",
            "p97<=10ms",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("a run keeps p50, p90, p95, p99 and p99.9, not p97"),
        "{said}"
    );
}
