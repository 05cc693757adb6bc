//! When sends run late, the summary names the cause the measurements show, and only then: the
//! generator's CPU (a worker thread saturated), the generator's CPUs taken by another process,
//! the connection cap, or a server slow to accept connections. And the peaks it reports are
//! true peaks, not the count at the end of an interval.
#![allow(clippy::unwrap_used)]

use crate::common;

use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use analysis::summary::SummaryText as _;
use common::{exclusive, plan, run};
use loadgen::commands::target::{Stall, TargetConfig, TargetServer};

const LOADGEN: &str = env!("CARGO_BIN_EXE_loadgen");

/// `loadgen attack ARGS… --output json --no-store`, pinned to CPU 0, parsed.
fn attack_pinned(args: &[&str]) -> serde_json::Value {
    let out = Command::new("taskset")
        .args([
            "-c",
            "0",
            LOADGEN,
            "attack",
            "--output",
            "json",
            "--no-store",
        ])
        .args(args)
        .output()
        .unwrap();
    common::heard(&String::from_utf8_lossy(&out.stdout));
    common::heard(&String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Busy loops pinned to CPU 0 at a high priority, ended when dropped (and by themselves after
/// 20 s). `nice` and `taskset` exec the loop, so the child's PID is the loop's.
struct Hogs(Vec<Child>);

impl Hogs {
    fn start(n: usize) -> Hogs {
        Hogs(
            (0..n)
                .map(|_| {
                    Command::new("nice")
                        .args(["-n", "-10", "taskset", "-c", "0"])
                        .args(["bash", "-c", "while [ $SECONDS -lt 20 ]; do :; done"])
                        .stdout(Stdio::null())
                        .spawn()
                        .unwrap()
                })
                .collect(),
        )
    }
}

impl Drop for Hogs {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[test]
fn a_cpu_hog_on_the_generators_cpu_is_named() {
    let _cpu = exclusive();
    let target = TargetServer::start(TargetConfig::default()).unwrap();
    let hogs = Hogs::start(3);
    std::thread::sleep(Duration::from_millis(200));
    let s = attack_pinned(&[
        "--rate",
        "3000",
        "--duration",
        "2s",
        "--threads",
        "1",
        &target.url("/now"),
    ]);
    drop(hogs);
    let g = &s["generator"];
    assert_eq!(g["behind"], true, "{s:#}");
    assert_eq!(g["limited_by"], "generator cpus shared", "{s:#}");
    let warning = s["warnings"][0].as_str().unwrap();
    assert!(
        warning.contains("other processes on the generator's CPUs")
            && warning.contains("of which the generator's own threads took"),
        "{warning}"
    );
    // The run's verdict: degraded, its sends held back by the CPUs it shared.
    let v = &s["validity"];
    assert_eq!(v["verdict"], "degraded", "{v:#}");
    assert!(
        v["flaws"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["kind"] == "behind" && f["by"] == "generator cpus shared"),
        "{v:#}"
    );
}

#[test]
fn a_saturated_generator_thread_is_named() {
    let _cpu = exclusive();
    common::unless_held_back(|| {
        let target = TargetServer::start(TargetConfig::default()).unwrap();
        // Far more than one thread can send, and each request costs the generator far more than
        // the server (32 KiB of random hex to render, which the server only reads past): the
        // generator is the bottleneck, busy all along, and behind. Its pool is capped well above
        // what the server's pace needs and well below the server's accept queue: uncapped, a
        // generator that falls behind opens hundreds of connections at once, and a SYN dropped
        // from a full queue makes the server's accepts the cause instead.
        let body = "{{hex:4096}}".repeat(8);
        let s = attack_pinned(&[
            "--rate",
            "150000",
            "--duration",
            "400ms",
            "--threads",
            "1",
            "--max-connections",
            "64",
            "-m",
            "POST",
            "--body",
            &body,
            &target.url("/now"),
        ]);
        let g = &s["generator"];
        assert_eq!(g["limited_by"], "generator", "{s:#}");
        assert!(g["busiest_thread"].as_f64().unwrap() >= 0.9, "{s:#}");
        let kinds: Vec<&str> = s["validity"]["flaws"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|f| f["kind"].as_str())
            .collect();
        assert_eq!(s["validity"]["verdict"], "degraded", "{s:#}");
        assert!(
            kinds.contains(&"behind") && kinds.contains(&"busy_thread"),
            "{kinds:?}"
        );
    });
}

#[test]
fn a_slow_server_does_not_make_the_generator_busy() {
    let _cpu = exclusive();
    let target = TargetServer::start(TargetConfig::default()).unwrap();
    // Each answer takes 300 ms: about 900 requests in flight at 3,000 req/s, each on its own
    // connection. A response not in at the wake-ups soon after its request wakes the thread
    // when it comes; read again at every wake-up until then, 900 sockets 3,000 times a second
    // would keep the thread busy and late, and the summary would blame the generator.
    let s = attack_pinned(&[
        "--rate",
        "3000",
        "--duration",
        "2s",
        "--threads",
        "1",
        &target.url("/delay/300"),
    ]);
    let g = &s["generator"];
    assert!(g["peak_in_flight"].as_u64().unwrap() >= 600, "{s:#}");
    // Before, 83 % busy and behind; now 15 % here. (Requests that wait for one of the 900
    // connections to open can still be a little late, which is not the generator's doing.)
    assert!(g["busiest_thread"].as_f64().unwrap() < 0.5, "{s:#}");
    assert_ne!(g["limited_by"], "generator", "{s:#}");
    assert_eq!(s["requests"]["ok"], 6000, "{s:#}");
}

#[test]
fn a_connection_cap_is_named() {
    let _cpu = exclusive();
    let target = TargetServer::start(TargetConfig::default()).unwrap();
    let p = plan(&[
        "--rate",
        "400",
        "--duration",
        "1s",
        "--max-connections",
        "2",
        "--threads",
        "1",
        &target.url("/delay/20"),
    ]);
    let (s, _) = run(&p);
    assert_eq!(
        s.generator.limited_by,
        Some(store::vocabulary::LimitedBy::ConnectionCap),
        "{}",
        s.to_text()
    );
    assert!(
        s.warnings[0].contains("--max-connections 2"),
        "{}",
        s.to_text()
    );
}

#[test]
fn a_server_slow_to_accept_is_named() {
    let _cpu = exclusive();
    // A listen backlog of 1, one accept every 50 ms, a connection per request: SYNs beyond the
    // queue are dropped and retransmitted a second later.
    let fd = rustix::net::socket(
        rustix::net::AddressFamily::INET,
        rustix::net::SocketType::STREAM,
        None,
    )
    .unwrap();
    rustix::net::bind(&fd, &"127.0.0.1:0".parse::<std::net::SocketAddr>().unwrap()).unwrap();
    rustix::net::listen(&fd, 1).unwrap();
    let listener = std::net::TcpListener::from(fd);
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || loop {
        std::thread::sleep(Duration::from_millis(50));
        let Ok((mut stream, _)) = listener.accept() else {
            return;
        };
        let mut buf = [0u8; 2048];
        let _ = stream.read(&mut buf);
        let _ = stream
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok");
    });
    let p = plan(&[
        "--rate",
        "60",
        "--duration",
        "2s",
        "--timeout",
        "6s",
        "--threads",
        "1",
        &format!("http://{addr}/"),
    ]);
    let (s, _) = run(&p);
    let text = s.to_text();
    assert_eq!(
        s.generator.limited_by,
        Some(store::vocabulary::LimitedBy::ServerAccept),
        "{text}"
    );
    assert!(s.generator.slow_connects > 0, "{text}");
    assert!(text.contains("SYN retransmitted"), "{text}");
}

#[test]
fn peak_in_flight_is_the_true_peak_not_the_count_at_an_interval_end() {
    let _cpu = exclusive();
    // Frozen for 300 ms once a second: about 60 requests pile up at 200 req/s, and are all
    // answered well before the single 5 s interval ends.
    let target = TargetServer::start(TargetConfig {
        stall: Some(Stall {
            every: Duration::from_secs(1),
            length: Duration::from_millis(300),
        }),
        ..Default::default()
    })
    .unwrap();
    let p = plan(&[
        "--rate",
        "200",
        "--duration",
        "2s",
        "--threads",
        "2",
        "--interval",
        "5s",
        &target.url("/now"),
    ]);
    let (s, outcome) = run(&p);
    let text = s.to_text();
    assert!(s.generator.peak_in_flight >= 45, "{text}");
    assert!(
        s.generator.peak_connections >= 45,
        "a connection per request held: {text}"
    );
    assert!(
        outcome.totals.in_flight >= 45,
        "the interval keeps its peak"
    );
}
