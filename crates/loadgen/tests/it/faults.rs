//! Faults injected by Toxiproxy (Shopify's, a real TCP proxy; `scripts/test.sh` installs it)
//! between loadgen and the target: latency, a bandwidth cap, connections reset, data
//! swallowed, the proxy disabled and enabled again. Each run completes on schedule, and each
//! fault shows as what it is: in the latencies, or as errors of the right kind. The same
//! faults between the probe and loadgen lose no sample; a target killed and started again on
//! its port is followed by the probe and shows on the run's page.
#![allow(clippy::unwrap_used)]

use crate::common;

use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{exclusive, execute, load_run, local_probe, local_probe_profiling};
use loadgen::commands::target::{TargetConfig, TargetServer};
use probe::protocol::Record;
use probe::sample::EventKind;
use probe::selector::Selector;
use serde_json::{json, Value};

/// A toxiproxy-server of the test's own, killed on drop.
struct Toxiproxy {
    api: Api,
    child: Child,
}

/// Toxiproxy's HTTP API, which a thread of the test can drive while a run goes on.
#[derive(Clone)]
struct Api {
    base: String,
}

impl Drop for Toxiproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Toxiproxy {
    fn start() -> Toxiproxy {
        let port = free_port();
        let child = Command::new("toxiproxy-server")
            .args(["-host", "127.0.0.1", "-port", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("toxiproxy-server: {e}: run scripts/test.sh, which installs it (go install github.com/Shopify/toxiproxy/v2/cmd/server)"));
        let proxy = Toxiproxy {
            api: Api {
                base: format!("http://127.0.0.1:{port}"),
            },
            child,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "toxiproxy-server did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        proxy
    }
}

impl Api {
    /// One call to its HTTP API (curl: a one-off request, not what is measured).
    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let mut curl = Command::new("curl");
        curl.args([
            "-sS",
            "--max-time",
            "5",
            "-X",
            method,
            &format!("{}{path}", self.base),
        ]);
        if let Some(body) = body {
            curl.args([
                "-H",
                "Content-Type: application/json",
                "-d",
                &body.to_string(),
            ]);
        }
        let out = curl.output().unwrap();
        assert!(
            out.status.success(),
            "{method} {path}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
    }

    /// A proxy from a free loopback port to `upstream`; returns its address.
    fn proxy(&self, name: &str, upstream: SocketAddr) -> SocketAddr {
        let listen: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        self.call(
            "POST",
            "/proxies",
            Some(json!({"name": name, "listen": listen.to_string(), "upstream": upstream.to_string()})),
        );
        listen
    }

    fn toxic(&self, proxy: &str, kind: &str, stream: &str, attributes: Value) {
        self.call(
            "POST",
            &format!("/proxies/{proxy}/toxics"),
            Some(json!({"name": kind, "type": kind, "stream": stream, "attributes": attributes})),
        );
    }

    fn clear(&self, proxy: &str, kind: &str) {
        self.call("DELETE", &format!("/proxies/{proxy}/toxics/{kind}"), None);
    }

    fn enable(&self, proxy: &str, enabled: bool) {
        self.call(
            "POST",
            &format!("/proxies/{proxy}"),
            Some(json!({"enabled": enabled})),
        );
    }
}

/// `loadgen attack` (the binary) at `rate` for `secs` through `addr`; its JSON summary.
fn attack(addr: SocketAddr, rate: u32, secs: u32, extra: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_loadgen"))
        .args(["attack", "--no-store", "--output", "json", "--threads", "1"])
        .args([
            "--rate",
            &rate.to_string(),
            "--duration",
            &format!("{secs}s"),
        ])
        .args(extra)
        .arg(format!("http://{addr}/now"))
        .output()
        .unwrap();
    assert!(
        !out.stdout.is_empty(),
        "loadgen printed no summary: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn errors(summary: &Value, kind: &str) -> u64 {
    summary["errors"][kind].as_u64().unwrap_or(0)
}

#[test]
fn faults_between_loadgen_and_the_target_show_as_what_they_are() {
    let _cpu = exclusive();
    let target = TargetServer::start(TargetConfig::default()).unwrap();
    let upstream: SocketAddr = target
        .url("")
        .trim_start_matches("http://")
        .parse()
        .unwrap();
    let toxi = Toxiproxy::start();
    let addr = toxi.api.proxy("target", upstream);

    // Added latency: every answer 30 ms later, the schedule held.
    toxi.api.toxic(
        "target",
        "latency",
        "downstream",
        json!({"latency": 30, "jitter": 0}),
    );
    let s = attack(addr, 100, 2, &[]);
    assert_eq!(s["requests"]["ok"], 200, "{s}");
    let p50 = s["latency"]["corrected"]["p50_ns"].as_u64().unwrap();
    assert!(
        (30_000_000..80_000_000).contains(&p50),
        "p50 {p50} ns under a 30 ms toxic: {s}"
    );
    assert_eq!(s["generator"]["behind"], false, "{s}");
    toxi.api.clear("target", "latency");

    // A bandwidth cap of 1 KB/s on one connection, answers of ~130 bytes at 20/s (2.6 KB/s):
    // answers queue up, and the corrected latency shows the queue growing.
    toxi.api
        .toxic("target", "bandwidth", "downstream", json!({"rate": 1}));
    let s = attack(addr, 20, 2, &["--timeout", "10s", "--max-connections", "1"]);
    assert_eq!(s["requests"]["ok"], 40, "{s}");
    let p99 = s["latency"]["corrected"]["p99_ns"].as_u64().unwrap();
    assert!(
        p99 > 1_000_000_000,
        "a 1 KB/s link shows in the tail: p99 {p99} ns: {s}"
    );
    toxi.api.clear("target", "bandwidth");

    // Connections reset: errors counted as resets, every request accounted for.
    toxi.api
        .toxic("target", "reset_peer", "upstream", json!({"timeout": 0}));
    let s = attack(addr, 100, 1, &[]);
    assert!(errors(&s, "reset") > 0, "resets counted as such: {s}");
    assert_eq!(s["requests"]["total"], 100, "{s}");
    toxi.api.clear("target", "reset_peer");

    // Data swallowed (the `timeout` toxic with no end): requests time out, counted as such.
    toxi.api
        .toxic("target", "timeout", "downstream", json!({"timeout": 0}));
    let s = attack(addr, 50, 1, &["--timeout", "300ms"]);
    assert!(errors(&s, "timeout") > 0, "time-outs counted as such: {s}");
    assert_eq!(s["requests"]["ok"], 0, "{s}");
    toxi.api.clear("target", "timeout");

    // The proxy disabled mid-run, then enabled again: refusals while it is down, answers
    // before and after, and the schedule held throughout.
    let toggler = {
        let api = toxi.api.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(700));
            api.enable("target", false);
            std::thread::sleep(Duration::from_millis(800));
            api.enable("target", true);
        })
    };
    let s = attack(addr, 100, 3, &["--max-connections", "8"]);
    toggler.join().unwrap();
    let down = errors(&s, "refused") + errors(&s, "reset") + errors(&s, "connect");
    assert!(
        down > 0,
        "the outage shows as refused or reset connections: {s}"
    );
    assert!(
        s["requests"]["ok"].as_u64().unwrap() > 100,
        "answers before and after: {s}"
    );
    assert_eq!(
        s["requests"]["total"], 300,
        "every request of the schedule sent: {s}"
    );
}

#[test]
fn faults_on_the_probe_link_lose_no_sample_and_no_profile() {
    let _cpu = exclusive();
    let target = TargetServer::start(TargetConfig::default()).unwrap();
    let probe = local_probe_profiling(
        Selector::Pid(std::process::id() as i32),
        Default::default(),
        100_000,
        Some(probe::profile::DEFAULT_HZ),
    );
    let toxi = Toxiproxy::start();
    let link = toxi.api.proxy("probe", probe.addr).to_string();
    let api = toxi.api.clone();
    let faults = std::thread::spawn(move || {
        // 0.8 s in: every frame from the probe 300 ms late for a second; then the link is
        // dropped (every connection closed, new ones refused) for a second.
        std::thread::sleep(Duration::from_millis(800));
        api.toxic(
            "probe",
            "latency",
            "downstream",
            json!({"latency": 300, "jitter": 0}),
        );
        std::thread::sleep(Duration::from_millis(1000));
        api.clear("probe", "latency");
        api.enable("probe", false);
        std::thread::sleep(Duration::from_millis(1000));
        api.enable("probe", true);
    });
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/showdown.db", dir.path().display());
    let url = target.url("/now");
    let done = execute(&[
        "--rate",
        "100",
        "--duration",
        "4s",
        "--db",
        &db,
        "--probe",
        &link,
        "--post-roll",
        "1s",
        "--profile",
        &url,
    ]);
    faults.join().unwrap();
    assert_eq!(done.summary.requests.ok, 400, "{:?}", done.summary.requests);
    assert!(done.probes[0].reconnections >= 1, "{:?}", done.probes[0]);
    let run = load_run(&db, done.run_id.as_ref().unwrap());
    let probe = &run.probes[0];
    assert!(probe.gaps.is_empty(), "{:?}", probe.gaps);
    let seqs: Vec<u64> = probe.records.iter().map(|r| r.seq).collect();
    let expected: Vec<u64> = (seqs[0]..=*seqs.last().unwrap()).collect();
    assert_eq!(seqs, expected, "every record once, across the faults");
    let during = probe
        .records
        .iter()
        .filter(|r| matches!(r.record, Record::Sample(_)) && (0..4_000_000_000).contains(&r.t_ns))
        .count();
    assert!(during >= 75, "{during} samples (20 Hz) during a 4 s attack");
    // The profiles came through the same faults: one a second, each second once.
    let profiles: Vec<(u64, u64)> = probe
        .records
        .iter()
        .filter_map(|r| match &r.record {
            Record::Profile(p) => Some((p.mono_ns - p.interval_ns, p.mono_ns)),
            _ => None,
        })
        .collect();
    assert!(profiles.len() >= 4, "{} profiles in 5 s", profiles.len());
    assert!(
        profiles.windows(2).all(|w| w[1].0 >= w[0].1),
        "profiles tile the time, none doubled: {profiles:?}"
    );
}

#[test]
fn profiles_asked_of_a_probe_that_does_not_profile_are_one_line() {
    let target = TargetServer::start(TargetConfig::default()).unwrap();
    let probe = local_probe(Selector::Pid(std::process::id() as i32), 0, 1_000);
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_loadgen"))
        .args([
            "attack",
            "--rate",
            "10",
            "--duration",
            "1s",
            "--profile",
            "--probe",
        ])
        .arg(probe.addr.to_string())
        .arg("--db")
        .arg(format!("sqlite://{}/s.db", dir.path().display()))
        .arg(target.url("/now"))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert_eq!(said.trim().lines().count(), 1, "{said}");
    assert!(
        said.contains("does not profile") && said.contains("probe serve --profile"),
        "{said}"
    );
}

/// `loadgen target` as a process of its own on `port`, once it listens.
fn own_target(port: u16) -> Child {
    let listen = format!("127.0.0.1:{port}");
    common::loadgen_target(
        Command::new(env!("CARGO_BIN_EXE_loadgen")),
        &["--listen", &listen],
    )
    .0
}

/// Whether any page under `dir` holds every one of `needles`.
fn a_page_holds(dir: &Path, needles: &[&str]) -> bool {
    std::fs::read_dir(dir).unwrap().any(|entry| {
        let path = entry.unwrap().path();
        if path.is_dir() {
            return a_page_holds(&path, needles);
        }
        path.extension().is_some_and(|e| e == "html")
            && std::fs::read_to_string(&path)
                .is_ok_and(|page| needles.iter().all(|n| page.contains(n)))
    })
}

#[test]
fn a_target_killed_and_started_again_is_followed_and_drawn() {
    let _cpu = exclusive();
    let port = free_port();
    let first = own_target(port);
    let first_pid = first.id() as i32;
    let probe = local_probe(Selector::Port(port), 0, 100_000);
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/showdown.db", dir.path().display());
    let site = dir.path().join("site");
    let run_id = "5d0a7c1e-3b4f-4e8a-9c2d-1f6e8b7a9c01";
    let restarter = std::thread::spawn(move || {
        let mut first = first;
        std::thread::sleep(Duration::from_millis(1500));
        first.kill().unwrap();
        first.wait().unwrap();
        std::thread::sleep(Duration::from_millis(1000));
        own_target(port)
    });
    let out = Command::new(env!("CARGO_BIN_EXE_loadgen"))
        .current_dir(dir.path())
        .args(["attack", "--output", "json", "--threads", "1"])
        .args(["--rate", "200", "--duration", "5s", "--post-roll", "500ms"])
        .args(["--db", &db, "--run-id", run_id, "--report"])
        .arg(&site)
        .args(["--probe", &probe.addr.to_string()])
        .arg(format!("http://127.0.0.1:{port}/now"))
        .output()
        .unwrap();
    let mut second = restarter.join().unwrap();
    let second_pid = second.id() as i32;
    let _ = second.kill();
    let _ = second.wait();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let s: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no JSON summary ({e}): {stderr}"));

    // The schedule held through the outage; the second of it shows as refusals (and the
    // connections open at the kill as resets), the rest as answers.
    assert_eq!(s["requests"]["total"], 1000, "{s}");
    assert!(errors(&s, "refused") >= 100, "refusals while down: {s}");
    assert!(
        s["requests"]["ok"].as_u64().unwrap() >= 650,
        "answers before and after: {s}"
    );

    // The probe saw the first process exit and attached to the second, in that order, where
    // they happened on the run's timeline.
    let run = load_run(&db, run_id);
    let at = |wanted: &dyn Fn(&EventKind) -> bool| {
        run.probes[0]
            .records
            .iter()
            .find_map(|r| match &r.record {
                Record::Event(e) if wanted(&e.kind) => Some(r.t_ns),
                _ => None,
            })
            .unwrap_or_else(|| panic!("events: {:?}", run.probes[0].records.len()))
    };
    let exited = at(&|k| matches!(k, EventKind::TargetExited { pid } if *pid == first_pid));
    let attached = at(&|k| matches!(k, EventKind::Attached { pid, .. } if *pid == second_pid));
    assert!(
        (800_000_000..2_000_000_000).contains(&exited),
        "exit at {exited} ns"
    );
    assert!(
        exited < attached && attached < 4_000_000_000,
        "exit at {exited} ns, attached at {attached} ns"
    );

    // Both are drawn on the run's page.
    assert!(
        a_page_holds(
            &site,
            &[
                &format!("target {first_pid} exited"),
                &format!("({second_pid})")
            ]
        ),
        "the run page shows the exit and the new process; loadgen said: {stderr}"
    );
}
