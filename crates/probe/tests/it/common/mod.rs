//! Helpers for the probe's tests: fixture processes with known figures, and sampling them.
#![allow(dead_code, clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use probe::buffer::{Read, SharedBuffer};
use probe::client::{Incoming, Subscriber};
use probe::protocol::{ProbeMessage, Record};
use probe::sample::{Event, Sample};
use probe::sampler::{Background, Sampler, SamplerConfig};
use probe::selector::Selector;
use probe::server::{serve, ServeConfig};
use serde_json::Value;

/// Tests that measure CPU take this lock so that they do not compete with each other.
pub fn exclusive() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// A running `tests/support/fixture.py`; ended (with its children) when dropped.
pub struct Fixture {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    pub ready: Value,
}

impl Fixture {
    pub fn spawn(args: &[&str]) -> Fixture {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/fixture.py");
        let mut child = Command::new("python3")
            .arg(script)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs the fixture");
        let stdin = child.stdin.take();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let ready: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
        Fixture {
            child,
            stdin,
            stdout,
            ready,
        }
    }

    pub fn pid(&self) -> i32 {
        self.ready["pid"].as_i64().unwrap() as i32
    }

    /// The next line the fixture prints (e.g. the RSS step).
    pub fn next_line(&mut self) -> Value {
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    }

    /// Ends the fixture and waits for it.
    pub fn stop(&mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        self.stop();
    }
}

pub fn config(selector: Selector, interval_ms: u64) -> SamplerConfig {
    SamplerConfig {
        interval: Duration::from_millis(interval_ms),
        slow_interval: Duration::from_millis(500),
        slow_budget: 0.05,
        ..SamplerConfig::new(selector)
    }
}

/// Every record in `buffer` from sequence number `from`, decoded.
pub fn records(buffer: &SharedBuffer, from: u64) -> Vec<(u64, Record)> {
    // Through the wire format, as a subscriber would see them.
    match buffer.with(|b| b.read_encoded(from, usize::MAX, usize::MAX)) {
        Read::Records(r) => r
            .iter()
            .map(|json| match serde_json::from_slice(json).unwrap() {
                ProbeMessage::Record { seq, record } => (seq, record),
                other => panic!("{other:?}"),
            })
            .collect(),
        Read::Gap { from, to } => panic!("gap {from}..={to}"),
    }
}

pub fn samples(records: &[(u64, Record)]) -> Vec<Sample> {
    records
        .iter()
        .filter_map(|(_, r)| match r {
            Record::Sample(s) => Some((**s).clone()),
            _ => None,
        })
        .collect()
}

pub fn events(records: &[(u64, Record)]) -> Vec<Event> {
    records
        .iter()
        .filter_map(|(_, r)| match r {
            Record::Event(e) => Some(e.clone()),
            _ => None,
        })
        .collect()
}

/// Samples with `config` for `duration` and returns what was recorded.
pub fn sample_for(config: SamplerConfig, duration: Duration) -> Vec<(u64, Record)> {
    let background = Background::start(Sampler::new(config).unwrap(), 100_000, 256 << 20).unwrap();
    std::thread::sleep(duration);
    let buffer = background.buffer.clone();
    drop(background);
    records(&buffer, 0)
}

/// Waits until `f` finds what it looks for in the records so far, or panics after `timeout`.
pub fn wait_for<T>(
    buffer: &SharedBuffer,
    timeout: Duration,
    what: &str,
    mut f: impl FnMut(&[(u64, Record)]) -> Option<T>,
) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(found) = f(&records(buffer, buffer.with(|b| b.oldest_seq()))) {
            return found;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether the peer closes `stream` (or breaks it) within `limit`, reading and discarding
/// whatever it sends first: a probe must not hold a hostile connection open.
pub async fn closes_within<S: tokio::io::AsyncRead + Unpin>(
    stream: &mut S,
    limit: Duration,
) -> bool {
    use tokio::io::AsyncReadExt;
    let mut buf = vec![0u8; 4096];
    tokio::time::timeout(limit, async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await
    .is_ok()
}

/// A probe serving on a free loopback port, sampling this test process.
pub struct Served {
    pub addr: SocketAddr,
    _background: Background,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

pub async fn served(serve_config: ServeConfig, interval_ms: u64, max_records: usize) -> Served {
    let sampler = Sampler::new(config(
        Selector::Pid(std::process::id() as i32),
        interval_ms,
    ))
    .unwrap();
    let host = sampler.host_info();
    let background = Background::start(sampler, max_records, 64 << 20).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel();
    tokio::spawn(serve(
        listener,
        background.buffer.clone(),
        host,
        serve_config,
        async {
            let _ = stopped.await;
        },
    ));
    Served {
        addr,
        _background: background,
        stop: Some(stop),
    }
}

/// Reads records until `n` have arrived; returns their sequence numbers and any gaps.
pub async fn read_records(sub: &mut Subscriber, n: usize) -> (Vec<u64>, Vec<(u64, u64)>) {
    let (mut seqs, mut gaps) = (Vec::new(), Vec::new());
    while seqs.len() < n {
        match tokio::time::timeout(Duration::from_secs(5), sub.next())
            .await
            .unwrap()
            .unwrap()
        {
            Some(Incoming::Record { seq, .. }) => seqs.push(seq),
            Some(Incoming::Gap { from, to }) => gaps.push((from, to)),
            Some(Incoming::Pong(_)) => {}
            None => panic!("the probe closed the stream"),
        }
    }
    (seqs, gaps)
}
