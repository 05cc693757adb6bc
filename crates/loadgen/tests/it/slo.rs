//! `loadgen attack --slo`: a run judged against an SLO on its whole-run figures, its verdict in
//! one line and in the JSON, and its exit code: 0 met, 4 missed, 5 the generator was the limit
//! (the run cannot say), 2 a term a run cannot judge; the server's own figures from its probe.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

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

/// `probe serve` watching `pid` on a free loopback port, PSS on; killed when dropped.
struct Probe(Child, String);

impl Drop for Probe {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn probe(pid: u32) -> Probe {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = common::probe_serve(pid, port, &["--pss", "--interval", "100ms"]);
    Probe(child, format!("127.0.0.1:{port}"))
}

#[test]
fn the_servers_own_figures_from_its_probe_are_judged_beside_its_latency() {
    let _cpu = exclusive();
    let t = target();
    let p = probe(t.0.id());
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/runs.db", dir.path().display());
    let judged = |slo: &[&str]| {
        let mut args = vec![
            "-r", "300", "--probe", &p.1, "--db", &db, "--output", "json",
        ];
        for term in slo {
            args.extend(["--slo", term]);
        }
        let out = Command::new(LOADGEN)
            .args(["attack", &t.1, "-d", "3s"])
            .args(&args)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stderr).to_string();
        let json: serde_json::Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {said}"));
        (out.status.code(), json["slo"].clone(), said)
    };
    // 300 req/s of 1 ms each: about 0.3 of a core, of the CPUs it may run on.
    let (code, slo, said) = judged(&["p99<=1s", "cpu<=95%", "pss<=4GiB", "fds<=10000"]);
    assert_eq!(code, Some(0), "{slo}\n{said}");
    let value = |slo: &serde_json::Value, i: usize| slo["terms"][i]["value"].as_f64().unwrap();
    let cpus = std::thread::available_parallelism().unwrap().get() as f64;
    let cpu = value(&slo, 1);
    assert!(
        (0.15 / cpus..=0.6 / cpus).contains(&cpu),
        "300 ms of CPU a second over {cpus} CPUs: {cpu}"
    );
    // The built-in target's own memory and files: megabytes, and a handful.
    assert!((1e6..=1e9).contains(&value(&slo, 2)), "{slo}");
    assert!((3.0..=1000.0).contains(&value(&slo, 3)), "{slo}");
    // A CPU bound it cannot meet: missed, exit 4, with the figure beside the bound.
    let (code, slo, _) = judged(&["cpu<=1%"]);
    assert_eq!(code, Some(4), "{slo}");
    assert_eq!(slo["outcome"], "missed");
    // Without a probe, a server term is refused before anything is sent.
    let out = Command::new(LOADGEN)
        .args([
            "attack",
            &t.1,
            "-r",
            "10",
            "-d",
            "1s",
            "--no-store",
            "--slo",
            "fds<=100",
        ])
        .output()
        .unwrap();
    // A bad command line: exit 2.
    assert_eq!(out.status.code(), Some(2));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("fds<=100: the server's own figure"), "{said}");
}
