//! Helpers for loadgen's tests: plans from command lines, runs, and servers that misbehave.
#![allow(dead_code, clippy::unwrap_used)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;
use std::time::Duration;

use clap::Parser;
use loadgen::cli::{Cli, Command};
use loadgen::engine::attack::{attack, AttackPlan, IntervalSink, RunOutcome};
use loadgen::{Shutdown, Summary};

/// Tests that measure rates or latencies take this lock so that they do not share the two
/// CPUs with each other.
pub fn exclusive() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// The plan `loadgen attack ARGS…` would run.
pub fn plan(args: &[&str]) -> AttackPlan {
    let mut argv = vec!["loadgen", "attack"];
    argv.extend_from_slice(args);
    let cli = Cli::try_parse_from(&argv).unwrap_or_else(|e| panic!("{argv:?}: {e}"));
    match cli.command {
        Command::Attack(a) => a.plan().unwrap_or_else(|e| panic!("{argv:?}: {e}")),
        _ => unreachable!("not an attack"),
    }
}

/// Runs a plan to its end on a fresh runtime.
pub fn run(plan: &AttackPlan) -> (Summary, RunOutcome) {
    run_with(plan, &Shutdown::new(), &mut [])
}

pub fn run_with(
    plan: &AttackPlan,
    shutdown: &Shutdown,
    sinks: &mut [&mut dyn IntervalSink],
) -> (Summary, RunOutcome) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let zero = loadgen::engine::attack::time_zero(None).unwrap();
    let outcome = rt.block_on(attack(plan, zero, shutdown, sinks)).unwrap();
    let mut summary = loadgen::engine::attack::summarize(plan, &outcome);
    analysis::warnings::fill(&mut summary, &outcome.warnings);
    (summary, outcome)
}

/// A port on which nothing listens.
pub fn closed_port() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap()
}

/// A TCP server that answers every connection with `respond` (given what it read), on a
/// thread, until the test ends. `respond` returns the bytes to write before closing; `None`
/// closes at once.
pub fn raw_server(respond: fn(&[u8]) -> Option<Vec<u8>>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            thread::spawn(move || {
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                let mut buf = vec![0u8; 16 * 1024];
                let mut got = Vec::new();
                // Read up to the end of the request head.
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
                if let Some(bytes) = respond(&got) {
                    let _ = stream.write_all(&bytes);
                }
            });
        }
    });
    addr
}

/// A server that reads requests and resets the connection (RST) without answering.
pub fn resetting_server() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            set_linger_zero(&stream);
            drop(stream);
        }
    });
    addr
}

fn set_linger_zero(stream: &std::net::TcpStream) {
    // SO_LINGER {on, 0 s} makes close() reset the connection.
    let fd = rustix::fd::AsFd::as_fd(stream);
    let _ = rustix::net::sockopt::set_socket_linger(fd, Some(Duration::ZERO));
}

/// Runs `serve` on every connection accepted on a fresh loopback port, on a thread with a
/// runtime of its own, until the test ends.
pub fn serve_each<F, Fut>(serve: F) -> SocketAddr
where
    F: Fn(tokio::net::TcpStream) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream));
            }
        });
    });
    addr
}

/// An HTTP server (hyper) that records every request body, for template tests.
pub struct BodyRecorder {
    pub addr: SocketAddr,
    pub bodies: Arc<Mutex<Vec<Vec<u8>>>>,
}

pub fn body_recorder() -> BodyRecorder {
    use http_body_util::{BodyExt, Full};
    use hyper::service::service_fn;
    let bodies: Arc<Mutex<Vec<Vec<u8>>>> = Arc::default();
    let store = bodies.clone();
    let addr = serve_each(move |stream| {
        let store = store.clone();
        async move {
            let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                let store = store.clone();
                async move {
                    let body = req.into_body().collect().await?.to_bytes();
                    store.lock().unwrap().push(body.to_vec());
                    Ok::<_, hyper::Error>(hyper::Response::new(Full::new(
                        bytes::Bytes::from_static(b"created"),
                    )))
                }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
        }
    });
    BodyRecorder { addr, bodies }
}

/// A runtime of its own with a listener on a free loopback port, for servers in tests.
fn runtime_and_listener() -> (tokio::runtime::Runtime, tokio::net::TcpListener) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    (runtime, listener)
}

/// A probe serving on a loopback port (optionally with its clock shifted on purpose).
pub struct LocalProbe {
    pub addr: SocketAddr,
    _probe: probe::server::RunningProbe,
    _runtime: tokio::runtime::Runtime,
}

pub fn local_probe(
    selector: probe::selector::Selector,
    clock_shift_ns: i64,
    max_records: usize,
) -> LocalProbe {
    let serve_config = probe::server::ServeConfig {
        clock_shift_ns,
        ..Default::default()
    };
    local_probe_with(selector, serve_config, max_records)
}

/// A probe serving with `serve_config` (a token, TLS) on a loopback port.
pub fn local_probe_with(
    selector: probe::selector::Selector,
    serve_config: probe::server::ServeConfig,
    max_records: usize,
) -> LocalProbe {
    local_probe_profiling(selector, serve_config, max_records, None)
}

/// A probe on a loopback port, profiling its target's stacks at `profile_hz` samples a second
/// if given.
pub fn local_probe_profiling(
    selector: probe::selector::Selector,
    serve_config: probe::server::ServeConfig,
    max_records: usize,
    profile_hz: Option<u32>,
) -> LocalProbe {
    let config = probe::sampler::SamplerConfig {
        interval: Duration::from_millis(50),
        clock_shift_ns: serve_config.clock_shift_ns,
        profile: profile_hz.map(|hz| probe::profile::ProfileConfig {
            hz,
            ..Default::default()
        }),
        ..probe::sampler::SamplerConfig::new(selector)
    };
    let sampler = probe::sampler::Sampler::new(config).unwrap();
    let (runtime, listener) = runtime_and_listener();
    let probe = {
        let _in = runtime.enter();
        probe::server::RunningProbe::start(sampler, listener, serve_config, max_records, 64 << 20)
            .unwrap()
    };
    LocalProbe {
        addr: probe.addr,
        _probe: probe,
        _runtime: runtime,
    }
}

/// A TCP proxy to `upstream` whose link can be cut (every connection dropped, new ones
/// refused) and restored.
pub struct CuttableLink {
    pub addr: SocketAddr,
    up: Arc<std::sync::atomic::AtomicBool>,
    generation: Arc<std::sync::atomic::AtomicU64>,
    _runtime: tokio::runtime::Runtime,
}

impl CuttableLink {
    pub fn new(upstream: SocketAddr) -> Self {
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
        let (runtime, listener) = runtime_and_listener();
        let addr = listener.local_addr().unwrap();
        let up = Arc::new(AtomicBool::new(true));
        let generation = Arc::new(AtomicU64::new(0));
        let (up2, gen2) = (up.clone(), generation.clone());
        runtime.spawn(async move {
            loop {
                let Ok((mut client, _)) = listener.accept().await else {
                    return;
                };
                if !up2.load(Ordering::SeqCst) {
                    continue; // dropped: the connection is refused as good as closed
                }
                let born = gen2.load(Ordering::SeqCst);
                let gen3 = gen2.clone();
                tokio::spawn(async move {
                    let Ok(mut server) = tokio::net::TcpStream::connect(upstream).await else {
                        return;
                    };
                    let copy = tokio::io::copy_bidirectional(&mut client, &mut server);
                    let cut = async {
                        while gen3.load(Ordering::SeqCst) == born {
                            tokio::time::sleep(Duration::from_millis(5)).await;
                        }
                    };
                    tokio::select! { _ = copy => {}, _ = cut => {} }
                });
            }
        });
        CuttableLink {
            addr,
            up,
            generation,
            _runtime: runtime,
        }
    }

    pub fn cut(&self) {
        self.up.store(false, std::sync::atomic::Ordering::SeqCst);
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    pub fn restore(&self) {
        self.up.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Runs `loadgen attack ARGS…` in-process, keeping the run; returns what it came to.
pub fn execute(args: &[&str]) -> loadgen::keep::Executed {
    let mut argv = vec!["loadgen", "attack"];
    argv.extend_from_slice(args);
    let cli = Cli::try_parse_from(&argv).unwrap_or_else(|e| panic!("{argv:?}: {e}"));
    let Command::Attack(a) = cli.command else {
        unreachable!()
    };
    let plan = a.plan().unwrap();
    let command_line: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
    let keeping = a.keeping(&command_line).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(loadgen::keep::execute(&plan, &keeping, &Shutdown::new()))
        .unwrap_or_else(|e| panic!("{argv:?}: {e}"))
}

/// Reads a run back from a store.
pub fn load_run(url: &str, id: &str) -> store::StoredRun {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let store = store::Store::open(url).await.unwrap();
        store.load_run(id).await.unwrap()
    })
}

/// The `loadgen` binary run to its end with `args`.
pub fn loadgen(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_loadgen"))
        .args(args)
        .output()
        .unwrap()
}

/// `loadgen target ARGS` as a process of its own (its stdin a pipe, so that it ends with the
/// test), started by `command` (`loadgen` itself, or `taskset -c N loadgen`); the process and
/// the address it printed, once it listens.
pub fn loadgen_target(
    mut command: std::process::Command,
    args: &[&str],
) -> (std::process::Child, String) {
    use std::io::BufRead;
    use std::process::Stdio;
    let mut child = command
        .arg("target")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let Some(addr) = line.trim().strip_prefix("listening on ") else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("loadgen target said {line:?}");
    };
    (child, addr.to_string())
}

/// The command line of every running process that holds one of `needles` (its arguments
/// joined by spaces): what `ps` shows any local user.
pub fn command_lines_holding(needles: &[&str]) -> Vec<String> {
    holding(needles).into_iter().map(|(_, c)| c).collect()
}

/// Every process but `except` whose environment holds one of `needles` (as root, any
/// process's; else this user's dumpable ones), with its command line.
pub fn environments_holding(needles: &[&str], except: &[i32]) -> Vec<String> {
    let me = std::process::id() as i32;
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            if pid == me || except.contains(&pid) {
                return None;
            }
            let env = String::from_utf8_lossy(&std::fs::read(e.path().join("environ")).ok()?)
                .into_owned();
            let c = std::fs::read(e.path().join("cmdline")).ok()?;
            needles
                .iter()
                .any(|n| env.contains(n))
                .then(|| String::from_utf8_lossy(&c).replace('\0', " "))
        })
        .collect()
}

/// The same processes, killed (SIGKILL) once found: a test that finds one left asserts on what
/// it found without leaving it running.
pub fn end_holding(needles: &[&str]) -> Vec<String> {
    holding(needles)
        .into_iter()
        .map(|(pid, c)| {
            if let Some(pid) = rustix::process::Pid::from_raw(pid) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
            c
        })
        .collect()
}

fn holding(needles: &[&str]) -> Vec<(i32, String)> {
    let me = std::process::id() as i32;
    std::fs::read_dir("/proc")
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| {
                    let pid: i32 = e.file_name().to_str()?.parse().ok()?;
                    let c = std::fs::read(e.path().join("cmdline")).ok()?;
                    Some((pid, String::from_utf8_lossy(&c).replace('\0', " ")))
                })
                .filter(|(pid, c)| *pid != me && needles.iter().any(|n| c.contains(n)))
                .collect()
        })
        .unwrap_or_default()
}

/// `probe serve` as the service runs it: a process of its own on loopback `port`, watching
/// `pid`, with `args` more (`--pss`); ready once it listens. The binary is the one `cargo test
/// --workspace` builds beside loadgen's.
pub fn probe_serve(pid: u32, port: u16, args: &[&str]) -> std::process::Child {
    let binary = std::path::Path::new(env!("CARGO_BIN_EXE_loadgen")).with_file_name("probe");
    assert!(
        binary.exists(),
        "{} is missing: cargo build --release -p probe",
        binary.display()
    );
    let child = std::process::Command::new(binary)
        .args(["serve", "--pid", &pid.to_string()])
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the probe never listened"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

/// Whether what a test measures is not measurable on this host now: the run's output `said`
/// that other processes held the generator back (its CPUs shared, or a late start), after the
/// runner had waited for quiet and measured once more, and the generator's CPUs `cpus` (a
/// taskset list) are still at least 50 % busy with other processes, read over 2 s after the
/// run. Then the test says "not measurable here" and why, and asserts nothing more; on a quiet
/// host a run held back is the test's failure (the check cannot excuse what it did not see).
pub fn not_measurable_here(said: &str, cpus: &str) -> bool {
    use probe::cpus::{busy_between, CpuList, Ticks};
    let cause = said.lines().find(|l| {
        l.contains("Cause: other processes on the generator's CPUs")
            || l.contains("Cause: a late start")
    });
    let Some(cause) = cause else {
        return false;
    };
    let list: CpuList = cpus.parse().unwrap();
    let before = Ticks::now().unwrap().of(&list);
    std::thread::sleep(Duration::from_secs(2));
    let after = Ticks::now().unwrap().of(&list);
    let busy = busy_between(before, after).unwrap_or(0.0);
    if busy < 0.5 {
        return false;
    }
    eprintln!(
        "not measurable here: CPU {cpus} is {:.0} % busy with other processes; the run said: {}",
        busy * 100.0,
        cause.trim()
    );
    true
}
