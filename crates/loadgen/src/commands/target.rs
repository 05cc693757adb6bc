//! The built-in target: a small HTTP server for the demo and for tests, on a loopback port.
//!
//! It runs on a thread of its own with a single-threaded runtime, so that a **stall** (the
//! thread sleeping, as a stop-the-world GC pause does) freezes everything: no accept, no read,
//! no response, exactly what a frozen server looks like from outside. It speaks HTTP/1.1 and
//! HTTP/2 (prior knowledge).
//!
//! Routes:
//!
//! | path            | answer                                                    |
//! |-----------------|-----------------------------------------------------------|
//! | `/status/{code}`| that status code                                          |
//! | `/delay/{ms}`   | 200 after `ms` milliseconds (awaited: other requests go on) |
//! | anything else   | 200 `{"now":<unix ms>}` after the configured service time, and the
//! |                 | configured work (CPU spent on the only thread: one request at a time) |
//!
//! Request bodies are read and discarded.

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::sync::oneshot;

use crate::engine::clock::{self, Nanos};

/// A periodic freeze of the whole server.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stall {
    /// Time from the start of one freeze to the start of the next.
    pub every: Duration,
    /// How long each freeze lasts.
    pub length: Duration,
}

/// What a request's `work` is made of: the references a history normalises a target's
/// figures by (`loadgen history --reference`), each slowed by a different part of a host.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum WorkKind {
    /// Arithmetic in registers ([`spin`]): the core's clock and its share of the core.
    #[default]
    Spin,
    /// A chase of dependent loads through 64 MiB in a random order ([`chase`]): the caches and
    /// memory, as a server walking its heap is slowed.
    Chase,
    /// System calls, one after another ([`syscalls`]): the kernel's entry and exit, as a
    /// server doing I/O is slowed (mitigations, a hypervisor's exits).
    Syscall,
}

/// How the built-in target behaves.
#[derive(Debug, Clone, Default)]
pub struct TargetConfig {
    /// Time each ordinary request takes (awaited, so requests overlap; 1 ms resolution).
    pub service_time: Duration,
    /// CPU each ordinary request spends on the server's only thread, which serves nothing
    /// else meanwhile: a server whose capacity is known, 1 / `work` requests a second.
    pub work: Duration,
    /// What the `work` is made of.
    pub work_kind: WorkKind,
    pub stall: Option<Stall>,
    /// Serve on two worker threads instead of one, each request's `work` done holding one
    /// lock they share, the other thread waiting for it by spinning ([`wait_for_lock`]): a
    /// server whose lock contention grows with its load, as a profile shows. A `stall` then
    /// freezes one of the two.
    pub lock: bool,
    /// Keep, for every request, its path and query and when its response was ready: the
    /// server-side truth that tests hold the generator's figures against.
    pub record_responses: bool,
}

/// What the target observed, for the demo's explanation and for tests.
#[derive(Debug, Default)]
pub struct TargetStats {
    pub requests: AtomicU64,
    in_flight: AtomicU64,
    pub peak_in_flight: AtomicU64,
    /// Arrival of the first and the latest request (monotonic ns; 0 before any).
    pub first_arrival: AtomicU64,
    pub last_arrival: AtomicU64,
    /// Start and end (monotonic ns) of every freeze so far.
    pub stalls: Mutex<Vec<(Nanos, Nanos)>>,
    /// With `record_responses`: each request's path and query, and when its response was ready.
    pub responses: Mutex<Vec<(String, Nanos)>>,
}

impl TargetStats {
    fn enter(&self) {
        let now = clock::now();
        let _ = self
            .first_arrival
            .compare_exchange(0, now, Ordering::Relaxed, Ordering::Relaxed);
        self.last_arrival.fetch_max(now, Ordering::Relaxed);
        self.requests.fetch_add(1, Ordering::Relaxed);
        let now = self.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
        self.peak_in_flight.fetch_max(now, Ordering::Relaxed);
    }

    fn leave(&self) {
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
    }

    /// Requests being handled right now.
    pub fn in_flight(&self) -> u64 {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// The arrival rate the server saw, from its first request to its latest (requests/s).
    pub fn arrival_rate(&self) -> f64 {
        let n = self.requests.load(Ordering::Relaxed);
        let span = self
            .last_arrival
            .load(Ordering::Relaxed)
            .saturating_sub(self.first_arrival.load(Ordering::Relaxed));
        if n < 2 || span == 0 {
            return 0.0;
        }
        (n - 1) as f64 / (span as f64 / 1e9)
    }

    /// The freezes recorded so far.
    pub fn stall_windows(&self) -> Vec<(Nanos, Nanos)> {
        self.stalls.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

/// A running built-in target; stopped when dropped.
#[derive(Debug)]
pub struct TargetServer {
    addr: SocketAddr,
    pub stats: Arc<TargetStats>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl TargetServer {
    /// Starts the target on `127.0.0.1`, on a free port.
    pub fn start(config: TargetConfig) -> io::Result<Self> {
        Self::start_on("127.0.0.1:0".parse().map_err(io::Error::other)?, config)
    }

    /// Starts the target on `addr` (port 0 for a free one).
    pub fn start_on(addr: SocketAddr, config: TargetConfig) -> io::Result<Self> {
        let listener = std::net::TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let stats = Arc::new(TargetStats::default());
        let (stop, stopped) = oneshot::channel();
        let runtime = if config.lock {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("target-worker")
                .enable_all()
                .build()?
        } else {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?
        };
        let thread_stats = stats.clone();
        let thread = std::thread::Builder::new()
            .name("target".into())
            .spawn(move || {
                runtime.block_on(serve(listener, config, thread_stats, stopped));
            })?;
        Ok(TargetServer {
            addr,
            stats,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT` followed by `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }
}

impl Drop for TargetServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn serve(
    listener: std::net::TcpListener,
    config: TargetConfig,
    stats: Arc<TargetStats>,
    mut stopped: oneshot::Receiver<()>,
) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    if let Some(stall) = config.stall {
        tokio::spawn(stall_periodically(stall, stats.clone()));
    }
    let builder = Arc::new(auto::Builder::new(TokioExecutor::new()));
    let lock = config.lock.then(|| Arc::new(AtomicBool::new(false)));
    loop {
        let accepted = tokio::select! {
            _ = &mut stopped => return,
            accepted = listener.accept() => accepted,
        };
        let (stream, _) = match accepted {
            Ok(conn) => conn,
            Err(_) => {
                // Out of descriptors or similar: back off instead of spinning.
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let (builder, stats) = (builder.clone(), stats.clone());
        let work = Work {
            service_time: config.service_time,
            cpu: config.work,
            kind: config.work_kind,
            lock: lock.clone(),
            record: config.record_responses,
        };
        tokio::spawn(async move {
            let service = service_fn(move |req| handle(req, work.clone(), stats.clone()));
            let _ = builder
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn stall_periodically(stall: Stall, stats: Arc<TargetStats>) {
    let mut ticks =
        tokio::time::interval_at(tokio::time::Instant::now() + stall.every, stall.every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let start = clock::now();
        // Blocks the server's only thread: nothing is served until it wakes.
        std::thread::sleep(stall.length);
        if let Ok(mut s) = stats.stalls.lock() {
            s.push((start, clock::now()));
        }
    }
}

/// A request's configured work: `work` of CPU on this thread, in a function of its own so
/// that a profile names it (`spin`, its own samples nearly all of them: the clock is read once
/// a microsecond or so, not in every turn of the loop).
#[inline(never)]
fn spin(work: Duration) {
    let until = std::time::Instant::now() + work;
    let mut x = 0u64;
    loop {
        for _ in 0..512 {
            x = std::hint::black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
        }
        if std::time::Instant::now() >= until {
            return;
        }
    }
}

/// A request's `work` as a pointer chase ([`WorkKind::Chase`]): dependent loads through
/// 64 MiB (`crate::chase`), the memory's latency.
#[inline(never)]
fn chase(work: Duration) {
    crate::chase::chase_for(work);
}

/// A request's `work` as system calls ([`WorkKind::Syscall`]): `getppid`, which the kernel
/// answers at once, so that the time is its entries and exits.
#[inline(never)]
fn syscalls(work: Duration) {
    let until = std::time::Instant::now() + work;
    loop {
        for _ in 0..16 {
            std::hint::black_box(rustix::process::getppid());
        }
        if std::time::Instant::now() >= until {
            return;
        }
    }
}

/// Waits for `lock` by spinning until it is free and taken, in a function of its own so that
/// a profile names the lock's contention (`wait_for_lock`): the longer the lock is held by the
/// other thread, the more of the server's CPU is spent here.
#[inline(never)]
fn wait_for_lock(lock: &AtomicBool) {
    while lock
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        while lock.load(Ordering::Relaxed) {
            std::hint::spin_loop();
        }
    }
}

/// How an ordinary request is served.
#[derive(Clone)]
struct Work {
    service_time: Duration,
    /// CPU spent on it ([`spin`], [`chase`] or [`syscalls`]).
    cpu: Duration,
    kind: WorkKind,
    /// The lock held while spending it, when the server has one.
    lock: Option<Arc<AtomicBool>>,
    record: bool,
}

async fn handle(
    req: Request<Incoming>,
    work: Work,
    stats: Arc<TargetStats>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (service_time, record) = (work.service_time, work.record);
    stats.enter();
    let target = req.uri().path_and_query().map(|p| p.to_string());
    let path = req.uri().path().to_string();
    // Read the body whatever it is; a client that goes away mid-body is its own business.
    let _ = req.into_body().collect().await;
    let response = if let Some(code) = path.strip_prefix("/status/") {
        let status = code
            .parse::<u16>()
            .ok()
            .and_then(|c| StatusCode::from_u16(c).ok())
            .unwrap_or(StatusCode::BAD_REQUEST);
        reply(status, Bytes::from(format!("{}\n", status.as_u16())))
    } else if let Some(ms) = path.strip_prefix("/delay/") {
        let ms = ms.parse::<u64>().unwrap_or(0);
        tokio::time::sleep(Duration::from_millis(ms)).await;
        reply(StatusCode::OK, Bytes::from_static(b"delayed\n"))
    } else {
        if !service_time.is_zero() {
            tokio::time::sleep(service_time).await;
        }
        if !work.cpu.is_zero() {
            let spend = |cpu| match work.kind {
                WorkKind::Spin => spin(cpu),
                WorkKind::Chase => chase(cpu),
                WorkKind::Syscall => syscalls(cpu),
            };
            match &work.lock {
                Some(lock) => {
                    wait_for_lock(lock);
                    spend(work.cpu);
                    lock.store(false, Ordering::Release);
                }
                None => spend(work.cpu),
            }
        }
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis();
        reply(StatusCode::OK, Bytes::from(format!("{{\"now\":{now}}}")))
    };
    stats.leave();
    if record {
        if let Ok(mut r) = stats.responses.lock() {
            r.push((target.unwrap_or_default(), clock::now()));
        }
    }
    Ok(response)
}

/// `loadgen target`: serves the built-in target until standard input closes (when it is a
/// pipe, as the demo holds it) or SIGTERM or Ctrl-C. The first line on standard output is
/// `listening on ADDRESS`.
pub async fn serve_until_stdin_closes(args: &crate::cli::TargetArgs) -> Result<(), crate::Error> {
    let stall = (!args.stall.is_zero()).then_some(Stall {
        every: args.stall_every,
        length: args.stall,
    });
    let server = TargetServer::start_on(
        args.listen,
        TargetConfig {
            service_time: args.service_time,
            work: args.work,
            work_kind: match args.work_kind {
                crate::cli::WorkKindArg::Spin => WorkKind::Spin,
                crate::cli::WorkKindArg::Chase => WorkKind::Chase,
                crate::cli::WorkKindArg::Syscall => WorkKind::Syscall,
            },
            stall,
            lock: args.lock,
            record_responses: false,
        },
    )
    .map_err(crate::Error::Target)?;
    println!("listening on {}", server.addr());
    use std::io::Write;
    let _ = std::io::stdout().flush();
    // Held by a pipe (the demo's), it ends when the pipe closes; otherwise (started as a
    // server of its own, stdin /dev/null or a terminal) at SIGTERM or Ctrl-C.
    let piped = rustix::fs::fstat(std::io::stdin()).is_ok_and(|st| {
        rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Fifo
    });
    // The pipe is read on a thread of its own, not the runtime's blocking pool: the runtime
    // waits for its blocking tasks when it shuts down, and a read that never returns would
    // hold a SIGTERM or a Ctrl-C up until the writer closes the pipe.
    let (closed_tx, closed_rx) = tokio::sync::oneshot::channel::<()>();
    // Without a pipe, the sender is kept here, unsent, until the server stops.
    let _not_piped = if piped {
        std::thread::Builder::new()
            .name("stdin".into())
            .spawn(move || {
                let mut sink = [0u8; 4096];
                while std::io::Read::read(&mut std::io::stdin(), &mut sink).is_ok_and(|n| n > 0) {}
                let _ = closed_tx.send(());
            })
            .map_err(crate::Error::Target)?;
        None
    } else {
        Some(closed_tx)
    };
    let stdin_closed = async {
        let _ = closed_rx.await;
    };
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(crate::Error::Target)?;
    tokio::select! {
        _ = stdin_closed => {}
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    drop(server);
    Ok(())
}

fn reply(status: StatusCode, body: Bytes) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = status;
    response
}
