//! Helpers for loadgen's tests: plans from command lines, runs, and servers that misbehave.
#![allow(dead_code, clippy::unwrap_used)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;
use std::time::Duration;

use clap::Parser;
use loadgen::attack::{attack, AttackPlan, IntervalSink, RunOutcome};
use loadgen::cli::{Cli, Command};
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
        Command::Demo(_) => unreachable!(),
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
    let outcome = rt.block_on(attack(plan, shutdown, sinks)).unwrap();
    (loadgen::attack::summarize(plan, &outcome), outcome)
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
