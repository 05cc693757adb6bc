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

/// Below this many CPUs' worth of other work, the machine is quiet: what an idle desktop's
/// daemons and the suite's waiting tests leave; a fifth of a CPU, under the quarter of a
/// generator's CPU time that its diagnosis blames on other processes
/// (`store::diagnosis::OTHERS_TO_BLAME`) even if all of it landed on the generator's CPU,
/// however many CPUs the machine has.
pub const QUIET: f64 = 0.2;

/// Each reading's window while waiting for quiet.
const QUIET_WINDOW: Duration = Duration::from_secs(2);

/// This thread's CPU time so far, in clock ticks (the unit of /proc/stat): `utime` and
/// `stime`, fields 14 and 15 of proc(5)'s `/proc/[pid]/stat`, read from
/// `/proc/thread-self/stat`; 0 where it cannot be read.
fn own_ticks() -> u64 {
    let Ok(stat) = std::fs::read_to_string("/proc/thread-self/stat") else {
        return 0;
    };
    // The command name (field 2) may hold spaces and parentheses: count from its end.
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return 0;
    };
    rest.split_whitespace()
        .skip(11)
        .take(2)
        .map(|field| field.parse::<u64>().unwrap_or(0))
        .sum()
}

/// How many CPUs' worth of work other than this thread ran over the next `window`:
/// /proc/stat's busy ticks less this thread's own, over its total ticks, times the CPUs online.
/// Called where the test has nothing of its own running, it is what other processes (and,
/// under plain `cargo test`, other tests of this binary) take. `None` where /proc/stat cannot
/// be read.
pub fn others_busy(window: Duration) -> Option<f64> {
    let cpus = probe::cpus::CpuList::online().len().max(1) as f64;
    Some(others_share(window)? * cpus)
}

/// The share (0–1) of the machine's CPU time, every CPU counted, that work other than this
/// thread took over the next `window` ([`others_busy`]).
fn others_share(window: Duration) -> Option<f64> {
    use probe::cpus::Ticks;
    let (before, own_before) = (Ticks::now()?.all, own_ticks());
    std::thread::sleep(window);
    let (after, own_after) = (Ticks::now()?.all, own_ticks());
    let busy = after
        .0
        .checked_sub(before.0)?
        .saturating_sub(own_after.saturating_sub(own_before));
    let total = after.1.checked_sub(before.1)?;
    (total > 0).then(|| busy as f64 / total as f64)
}

/// Waits, at most `longest`, until the machine is quiet (other work under [`QUIET`] CPUs' worth
/// over a window of 2 s), before a test measures `what` ("what limited each server") with
/// the generator's schedule. Each wait is said on standard error, and so is a machine that
/// never got quiet: the test then measures anyway, and only a run that other processes did
/// hold back, on a machine still busy after it, is "not measurable here"
/// ([`not_measurable_here`]); a test that could measure is never skipped for a busy start.
/// Call it where the test has nothing of its own running yet (its servers built, none
/// started).
pub fn wait_for_quiet(what: &str, longest: Duration) {
    let cpus = probe::cpus::CpuList::online().len();
    let started = std::time::Instant::now();
    let mut said = false;
    loop {
        let Some(busy) = others_busy(QUIET_WINDOW) else {
            eprintln!("cannot read /proc/stat: measuring {what} without waiting for quiet");
            return;
        };
        if busy < QUIET {
            if said {
                eprintln!(
                    "quiet after {:.0} s (other processes {busy:.2} CPUs busy): measuring {what}",
                    started.elapsed().as_secs_f64(),
                );
            }
            return;
        }
        if started.elapsed() >= longest {
            eprintln!(
                "still busy after {} s: other processes keep {busy:.2} of its {cpus} CPUs busy (quiet is under {QUIET}); measuring {what} anyway (a run they hold back is said not measurable here)",
                longest.as_secs(),
            );
            return;
        }
        if !said {
            eprintln!(
                "waiting up to {} s for the machine to be quiet before measuring {what}: other processes keep {busy:.2} of its {cpus} CPUs busy (quiet is under {QUIET})",
                longest.as_secs(),
            );
            said = true;
        }
    }
}

/// At least this many CPUs' worth of other work after a run they held back makes what the test
/// measures not measurable here: half a CPU (a hog on the generator's CPU), as the check read
/// the generator's CPU alone before.
pub const BUSY: f64 = 0.5;

/// Whether a line of an `experiment run`'s output names, as what held a generator back, other
/// processes (on its CPUs, or pausing it as its schedule began): the causes for which the
/// runner measures a cell again once the generator's CPUs are quiet ([`held_back`]).
fn names_the_host(line: &str) -> bool {
    line.contains("Cause: other processes on the generator's CPUs")
        || line.contains("Cause: a late start")
}

/// Whether a line says that a search found the generator's limit, not the server's: "not
/// bounded by its server: generator-limited" (an experiment's gate), "the generator drives no
/// more than 978 req/s validly" (`loadgen capacity`). A search's steps held back by other
/// processes end that way; on a quiet host the built-in target's and the contestants' searches
/// never do, and [`not_measurable_here`] excuses it only on a host still busy after the run.
fn limited_by_the_generator(line: &str) -> bool {
    line.contains("generator-limited") || line.contains("the generator drives no more than")
}

/// Whether what a test measures is not measurable on this host now: the run's output `said`
/// that other processes held the generator back (its CPUs shared, or a late start), or that a
/// search found the generator's limit ([`limited_by_the_generator`]), after the
/// runner had waited for quiet and measured once more, and other processes still take at least
/// [`BUSY`] CPUs' worth, read over 2 s after the run (every CPU: an unpinned
/// process that shared the generator's CPU during the run moves to whichever CPU the run's
/// servers left free once they stop, so the generator's CPU alone may read idle). Then the test
/// says "not measurable here" and why, and asserts nothing more; on a quiet host a run held
/// back is the test's failure (the check cannot excuse what it did not see).
pub fn not_measurable_here(said: &str) -> bool {
    let Some(cause) = said
        .lines()
        .find(|l| names_the_host(l) || limited_by_the_generator(l))
    else {
        return false;
    };
    let busy = others_busy(Duration::from_secs(2)).unwrap_or(0.0);
    if busy < BUSY {
        return false;
    }
    eprintln!(
        "not measurable here: other processes keep {busy:.2} CPUs busy after the run (at least {BUSY} excuses a run they held back); the run said: {}",
        cause.trim()
    );
    true
}

thread_local! {
    /// What this thread's runs said, for [`unless_held_back`].
    static HEARD: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// Keeps what a run `said` (its output: its terminal lines, its JSON), so that a test run under
/// [`unless_held_back`] can tell a failure of its own from a host that held the run back.
pub fn heard(said: &str) {
    HEARD.with(|h| {
        let mut h = h.borrow_mut();
        h.push_str(said);
        h.push('\n');
    });
}

/// Runs a test's `body`, which measures with the generator's schedule (a search, a comparison,
/// a saturated generator). Where it fails, and a run it made said ([`heard`]) that other
/// processes held its generator back while they still keep the host busy
/// ([`not_measurable_here`]), the test says "not measurable here" and asserts nothing more:
/// under a CPU hog a search finds the generator's limit ("the generator drives no more than
/// 978 req/s validly"), not the server's. On a quiet host, or where no run said so, the failure
/// stands; a test whose assertions held is never excused, only a failure is read.
pub fn unless_held_back(body: impl FnOnce()) {
    HEARD.with(|h| h.borrow_mut().clear());
    let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body));
    let Err(panic) = failed else { return };
    let said = HEARD.with(|h| std::mem::take(&mut *h.borrow_mut()));
    if !not_measurable_here(&said) {
        std::panic::resume_unwind(panic);
    }
}

/// Whether every cell an `experiment run` printed as failed (`  failed: CELL: WHY`) failed
/// because other processes held its generator back, and at least one did: cells that say
/// nothing of what a test is about, only of the host.
pub fn failed_only_for_the_host(said: &str) -> bool {
    let failed: Vec<&str> = said
        .lines()
        .filter(|l| l.starts_with("  failed: "))
        .collect();
    !failed.is_empty() && failed.iter().all(|l| names_the_host(l))
}

/// Whether an `experiment run`'s output `said` ran `cells` cells of which `failed` failed, a
/// cell that failed only because other processes held its generator back (after the runner
/// waited for quiet and measured it again) counted as run, not as failed, where the machine is
/// still busy after it ([`not_measurable_here`]): for a test that is not about timing, such a
/// cell is the host's doing; on a quiet machine it is a failure like any other.
pub fn ran_cells(said: &str, cells: usize, failed: usize) -> bool {
    let host = said
        .lines()
        .filter(|l| l.starts_with("  failed: ") && names_the_host(l))
        .count();
    let host = if host > 0 && not_measurable_here(said) {
        host
    } else {
        0
    };
    said.contains(&format!("{cells} cells run ({} failed)", failed + host))
}

/// Whether a kept run is one other processes held back: failed, with a summary whose
/// generator fell behind because of them (they took its CPUs, or paused it as its schedule
/// began), the runs the experiment runner measures again once the generator's CPUs are quiet.
pub fn held_back(run: &store::run::RunListing) -> bool {
    use store::vocabulary::LimitedBy;
    run.status == store::RunStatus::Failed
        && run.summary.as_ref().is_some_and(|s| {
            matches!(
                s.generator.limited_by,
                Some(LimitedBy::GeneratorCpusShared | LimitedBy::LateStart)
            )
        })
}

/// An experiment's measured runs without those superseded: a run other processes held back
/// ([`held_back`]) is kept failed, and its cell measured again once the generator's CPUs are
/// quiet; such a run is left out where a later run of the same cell and repetition exists, so
/// that each cell counts its last run alone, as on a quiet host.
pub fn final_runs(runs: Vec<store::run::RunListing>) -> Vec<store::run::RunListing> {
    use store::vocabulary::label::{CELL, REPETITION};
    let superseded: Vec<bool> = runs
        .iter()
        .map(|r| {
            held_back(r)
                && r.labels.contains_key(CELL)
                && runs.iter().any(|o| {
                    o.started_at_ns > r.started_at_ns
                        && o.labels.get(CELL) == r.labels.get(CELL)
                        && o.labels.get(REPETITION) == r.labels.get(REPETITION)
                })
        })
        .collect();
    runs.into_iter()
        .zip(superseded)
        .filter(|(_, superseded)| !superseded)
        .map(|(run, _)| run)
        .collect()
}
