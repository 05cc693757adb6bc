//! The Rust contestant: the contract of `targets/CONTRACT.md` on hyper 1.x and tokio, with
//! sqlx's `PgPool`, as a Rust team would write it for production.
//!
//! - `settings`: the environment, checked at start.
//! - `routes`: one function per endpoint, and the dispatch by method and path.
//! - `db`: the pool and the one insert, each bounded by `DB_TIMEOUT_MS`.
//! - `query`: the query string, percent-decoded; `failure`: why a request was not served, and
//!   the status it is answered with.
//! - `compute`: calibrated CPU work; `encrypt`: AES-256-CBC; `reply`: JSON responses.
//!
//! `main` binds, prints the ready line, serves each connection on its own task, and on SIGTERM
//! or SIGINT stops accepting and lets the connections finish (at most 10 s).

mod compute;
mod db;
mod encrypt;
mod failure;
mod query;
mod reply;
mod routes;
mod settings;

use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::signal::unix::{signal, SignalKind};

/// In-flight requests get this long after SIGTERM before the process exits anyway.
const DRAIN: Duration = Duration::from_secs(10);

fn main() -> std::process::ExitCode {
    let settings = match settings::Settings::from_env() {
        Ok(s) => s,
        Err(message) => {
            eprintln!("Error: {message}");
            return std::process::ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("Error: cannot start the runtime: {e}");
            return std::process::ExitCode::from(1);
        }
    };
    match runtime.block_on(serve(settings)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("Error: {message}");
            std::process::ExitCode::from(1)
        }
    }
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
enum StartError {
    #[error("cannot listen on {host}:{port}: {error} (change PORT or HOST)")]
    Listen {
        host: std::net::IpAddr,
        port: u16,
        error: std::io::Error,
    },
    #[error("cannot make the pool from DATABASE_URL: {0}: fix DATABASE_URL")]
    Pool(sqlx::Error),
    #[error("cannot {0}: {1}")]
    Io(&'static str, std::io::Error),
}

async fn serve(settings: settings::Settings) -> Result<(), StartError> {
    let listener = tokio::net::TcpListener::bind((settings.host, settings.port))
        .await
        .map_err(|error| StartError::Listen {
            host: settings.host,
            port: settings.port,
            error,
        })?;
    let port = listener
        .local_addr()
        .map_err(|e| StartError::Io("read the listening address", e))?
        .port();
    let rounds = compute::calibrate();
    eprintln!("compute: {rounds} SHA-256 rounds per ms of CPU");
    let app = Arc::new(routes::App::new(settings, rounds).map_err(StartError::Pool)?);
    println!(
        "listening pid={} port={port} stack=rust workers=1",
        std::process::id()
    );
    use std::io::Write;
    let _ = std::io::stdout().flush();

    let mut term =
        signal(SignalKind::terminate()).map_err(|e| StartError::Io("catch SIGTERM", e))?;
    let mut int = signal(SignalKind::interrupt()).map_err(|e| StartError::Io("catch SIGINT", e))?;
    let graceful = GracefulShutdown::new();
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors, usually: back off instead of spinning.
                    eprintln!("accept: {e}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
            _ = term.recv() => break,
            _ = int.recv() => break,
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let service = service_fn(move |request| {
            let app = app.clone();
            async move { Ok::<_, std::convert::Infallible>(app.handle(request).await) }
        });
        let connection = http1::Builder::new().serve_connection(TokioIo::new(stream), service);
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            let _ = connection.await;
        });
    }
    drop(listener);
    eprintln!("stopping: finishing the requests in flight");
    if tokio::time::timeout(DRAIN, graceful.shutdown())
        .await
        .is_err()
    {
        eprintln!("stopping: requests still in flight after {DRAIN:?}, closing them");
    }
    Ok(())
}
