//! Faults injected by Toxiproxy (Shopify's, a real TCP proxy; `scripts/test.sh` installs it)
//! between loadgen and the target: latency, a bandwidth cap, connections reset, data
//! swallowed, the proxy disabled and enabled again. Each run completes on schedule, and each
//! fault shows as what it is: in the latencies, or as errors of the right kind.
#![allow(clippy::unwrap_used)]

mod common;

use std::net::{SocketAddr, TcpListener};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::exclusive;
use loadgen::target::{TargetConfig, TargetServer};
use serde_json::{json, Value};

/// A toxiproxy-server of the test's own, killed on drop.
struct Toxiproxy {
    api: String,
    child: Child,
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
            api: format!("http://127.0.0.1:{port}"),
            child,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "toxiproxy-server did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        proxy
    }

    /// One call to its HTTP API (curl: a one-off request, not what is measured).
    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let mut curl = Command::new("curl");
        curl.args([
            "-sS",
            "--max-time",
            "5",
            "-X",
            method,
            &format!("{}{path}", self.api),
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
    let addr = toxi.proxy("target", upstream);

    // Added latency: every answer 30 ms later, the schedule held.
    toxi.toxic(
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
    toxi.clear("target", "latency");

    // A bandwidth cap of 1 KB/s on one connection, answers of ~130 bytes at 20/s (2.6 KB/s):
    // answers queue up, and the corrected latency shows the queue growing.
    toxi.toxic("target", "bandwidth", "downstream", json!({"rate": 1}));
    let s = attack(addr, 20, 2, &["--timeout", "10s", "--max-connections", "1"]);
    assert_eq!(s["requests"]["ok"], 40, "{s}");
    let p99 = s["latency"]["corrected"]["p99_ns"].as_u64().unwrap();
    assert!(
        p99 > 1_000_000_000,
        "a 1 KB/s link shows in the tail: p99 {p99} ns: {s}"
    );
    toxi.clear("target", "bandwidth");

    // Connections reset: errors counted as resets, every request accounted for.
    toxi.toxic("target", "reset_peer", "upstream", json!({"timeout": 0}));
    let s = attack(addr, 100, 1, &[]);
    assert!(errors(&s, "reset") > 0, "resets counted as such: {s}");
    assert_eq!(s["requests"]["total"], 100, "{s}");
    toxi.clear("target", "reset_peer");

    // Data swallowed (the `timeout` toxic with no end): requests time out, counted as such.
    toxi.toxic("target", "timeout", "downstream", json!({"timeout": 0}));
    let s = attack(addr, 50, 1, &["--timeout", "300ms"]);
    assert!(errors(&s, "timeout") > 0, "time-outs counted as such: {s}");
    assert_eq!(s["requests"]["ok"], 0, "{s}");
    toxi.clear("target", "timeout");

    // The proxy disabled mid-run, then enabled again: refusals while it is down, answers
    // before and after, and the schedule held throughout.
    let toggler = {
        let api = toxi.api.clone();
        std::thread::spawn(move || {
            let t = Toxiproxy {
                api,
                child: Command::new("true").spawn().unwrap(),
            };
            std::thread::sleep(Duration::from_millis(700));
            t.enable("target", false);
            std::thread::sleep(Duration::from_millis(800));
            t.enable("target", true);
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
