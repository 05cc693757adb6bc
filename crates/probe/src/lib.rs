//! `probe`, Showdown's instrument on the API host: samples the target's process tree from
//! /proc at a fixed rate and streams the samples to load generators over TCP.
//!
//! Modules:
//!
//! - [`cli`]: the command line (`serve`, `record`, `top`) and its checks.
//! - [`selector`]: finding the target by PID, PID file, name or listening port.
//! - [`collect`]: reading /proc, one process or the host, and the target's cgroup CPU controller,
//!   fast and slow collectors.
//! - [`sampler`]: the fixed-rate schedule, the process tree, deltas.
//! - `slow`: the costly collectors on their own thread, within a CPU budget; [`sockets`]: TCP
//!   states by netlink `sock_diag`.
//! - [`profile`]: on-CPU call stacks of the tree (`perf_event_open`'s `cpu-clock`), named and
//!   folded a second at a time.
//! - [`activity`]: a database's own account of its backends, read by the runner over SQL and
//!   carried in the database probe's samples.
//! - [`sample`]: what a sample, an event and a profile hold, field by field.
//! - [`buffer`]: the bounded, sequence-numbered history that subscribers read and resume from.
//! - [`protocol`]: the versioned wire format, documented message by message.
//! - [`server`]: `probe serve`, with tokens, caps and back-off.
//! - [`client`]: the subscriber side, with clock-offset estimation (used by loadgen).
//! - [`record`]: `probe record` to CSV or JSON lines; `top`: `probe top`.
//! - [`tls`]: the stream's TLS: certificates, fingerprints, pinning; [`token`]: a token file,
//!   read one way everywhere.
//! - `error`: what went wrong in `probe`'s commands ([`Error`]), below every module that
//!   reports it.
//! - [`canary`]: the wake-up canary, what a wake-up costs on these CPUs now (`probe canary`).
//! - [`clock`]: the host's clocks in nanoseconds; [`cpus`]: CPU lists and `/proc/stat`'s ticks,
//!   read here once for every crate; [`files`]: a file written whole in place of its name (a
//!   key, a token, a manifest, a page), never through a link.

pub mod activity;
pub mod buffer;
pub mod canary;
pub mod cli;
pub mod client;
pub mod clock;
pub mod collect;
pub mod cpus;
mod error;
pub mod files;
pub mod profile;
pub mod protocol;
pub mod record;
pub mod sample;
pub mod sampler;
pub mod selector;
pub mod server;
mod slow;
pub mod sockets;
pub mod tls;
pub mod token;
mod top;

use std::io::Write;

use crate::buffer::SharedBuffer;
use crate::cli::{CanaryArgs, Cli, Command, RecordArgs, ServeArgs, TopArgs};
use crate::client::{Incoming, Subscriber};
use crate::error::io_error;
pub use crate::error::Error;
use crate::protocol::{Record, Start};
use crate::record::{Format, RecordWriter};
use crate::sampler::{Background, Sampler};

/// Runs a parsed command line until it ends or is interrupted (SIGINT or SIGTERM).
pub fn run(cli: Cli) -> Result<(), Error> {
    raise_fd_limit();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(io_error("start the runtime"))?;
    match cli.command {
        Command::Serve(args) => runtime.block_on(serve(*args)),
        Command::Record(args) => runtime.block_on(record(args)),
        Command::Top(args) => runtime.block_on(top(args)),
        Command::Canary(args) => canary(&args),
    }
}

/// `probe canary`: a JSON line every `--every` with the exchanges since the last one and their
/// CPU each, until `--duration` has passed.
fn canary(args: &CanaryArgs) -> Result<(), Error> {
    if args.every < std::time::Duration::from_millis(10) || args.every > args.duration {
        return Err(Error::Usage(format!(
            "--every {:?} must be 10ms at least and no longer than --duration {:?}",
            args.every, args.duration
        )));
    }
    let canary = canary::Canary::start().map_err(io_error("start the canary's threads"))?;
    let end = std::time::Instant::now() + args.duration;
    let mut last = canary.reading();
    let mut out = std::io::stdout().lock();
    let mut next = std::time::Instant::now();
    while next < end {
        next = (next + args.every).min(end);
        std::thread::sleep(next.saturating_duration_since(std::time::Instant::now()));
        let now = canary.reading();
        let line = serde_json::json!({
            "wall_ns": clock::wall_ns(),
            "exchanges": now.exchanges - last.exchanges,
            "cpu_ns_per_exchange": now.per_exchange_since(&last),
        });
        writeln!(out, "{line}")
            .and_then(|()| out.flush())
            .map_err(io_error("write to standard output"))?;
        last = now;
    }
    Ok(())
}

/// Makes this process not dumpable (`PR_SET_DUMPABLE` 0): its `/proc/PID/environ`, `mem`, `fd`
/// and the like are root's alone, so a target or a build running as the same user cannot read
/// the store's URL, a header or a probe token from it, and no core dump holds them. A process
/// that holds a secret calls it first thing; `exec` makes the next program dumpable again, so
/// every long-lived binary calls it itself. The watched servers do not: their figures come
/// from those files.
pub fn keep_secrets_in() {
    let _ = rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable);
}

/// Raises the soft limit on open files to the hard one. The probe keeps files and directories
/// open for every process it watches (five each), so a tree of a few hundred processes would
/// not fit in the usual soft limit of 1,024; loadgen needs a connection per request in flight.
pub fn raise_fd_limit() {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current < limit.maximum {
        limit.current = limit.maximum;
        let _ = setrlimit(Resource::Nofile, limit);
    }
}

/// Reads a token file: its content without surrounding whitespace, not empty.
pub fn read_token(path: &std::path::Path) -> Result<String, Error> {
    Ok(token::read(path)?)
}

/// Resolves when the process is asked to stop.
async fn interrupted() {
    use tokio::signal::unix::{signal, SignalKind};
    let Ok(mut term) = signal(SignalKind::terminate()) else {
        let _ = tokio::signal::ctrl_c().await;
        return;
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

async fn serve(args: ServeArgs) -> Result<(), Error> {
    let token = args.token_file.as_deref().map(read_token).transpose()?;
    let tls = server_tls(&args)?;
    if !args.listen.ip().is_loopback() && (token.is_none() || tls.is_none()) {
        return Err(Error::Usage(format!(
            "listening on {} exposes the samples beyond this host: add --token-file FILE and TLS (--tls-cert FILE --tls-key FILE, or --tls-generate DIR)",
            args.listen
        )));
    }
    let mut config = args.target.sampler_config()?;
    config.clock_shift_ns = args.clock_shift_ns_for_tests;
    let interval = config.interval;
    let sampler = Sampler::new(config)?;
    let host = sampler.host_info();
    let records = (args.buffer.as_nanos() / interval.as_nanos().max(1)) as usize + 1024;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(io_error(format!(
            "listen on {} (change --listen)",
            args.listen
        )))?;
    let selector = host.selector.clone();
    let serve_config = server::ServeConfig {
        token,
        max_subscribers: args.max_subscribers,
        max_pending: args.max_pending,
        clock_shift_ns: args.clock_shift_ns_for_tests,
        tls: tls.as_ref().map(|t| t.config.clone()),
        ..Default::default()
    };
    let running = server::RunningProbe::start(
        sampler,
        listener,
        serve_config,
        records,
        args.buffer_mib.max(1) << 20,
    )?;
    tracing::info!(
        "probe {} listening on {}{}, watching {selector}",
        env!("CARGO_PKG_VERSION"),
        running.addr,
        if tls.is_some() { " (TLS)" } else { "" }
    );
    interrupted().await;
    drop(running);
    tracing::info!("probe stopped");
    Ok(())
}

/// The TLS set-up `probe serve` was asked for; a generated certificate's fingerprint is printed
/// on standard output (for the operator to pass to loadgen) and logged.
fn server_tls(args: &ServeArgs) -> Result<Option<tls::ServerTls>, Error> {
    if let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) {
        let tls = tls::ServerTls::from_pem_files(cert, key)?;
        tracing::info!(
            "TLS certificate {} sha256 fingerprint {}",
            cert.display(),
            tls.fingerprint
        );
        return Ok(Some(tls));
    }
    let Some(dir) = &args.tls_generate else {
        return Ok(None);
    };
    let mut names = vec!["localhost".to_string(), "127.0.0.1".into(), "::1".into()];
    if let Ok(host) = std::fs::read_to_string("/proc/sys/kernel/hostname") {
        names.push(host.trim().to_string());
    }
    if !args.listen.ip().is_unspecified() {
        names.push(args.listen.ip().to_string());
    }
    names.extend(args.tls_names.iter().cloned());
    names.retain(|n| !n.is_empty());
    names.dedup();
    let (tls, made) = tls::ServerTls::generate_or_load(dir, &names)?;
    let what = if made { "generated" } else { "kept" };
    tracing::info!(
        "TLS certificate {what} in {} (for {}) sha256 fingerprint {}",
        dir.display(),
        names.join(", "),
        tls.fingerprint
    );
    println!("probe TLS fingerprint (sha256): {}", tls.fingerprint);
    Ok(Some(tls))
}

/// `probe top --connect`'s TLS, from --fingerprint or --ca.
fn client_tls(args: &TopArgs) -> Result<Option<tls::ClientTls>, Error> {
    let trust = match (&args.fingerprint, &args.ca) {
        (Some(fp), _) => tls::Trust::Fingerprint(tls::parse_fingerprint(fp)?),
        (None, Some(ca)) => tls::Trust::Ca(ca.clone()),
        (None, None) => return Ok(None),
    };
    Ok(Some(tls::ClientTls::new(&trust)?))
}

async fn record(args: RecordArgs) -> Result<(), Error> {
    let config = args.target.sampler_config()?;
    let format = args.format.unwrap_or_else(|| Format::for_path(&args.out));
    let file = std::fs::File::create(&args.out).map_err(io_error(format!(
        "create {} (check --out)",
        args.out.display()
    )))?;
    let mut writer = RecordWriter::new(std::io::BufWriter::new(file), format);
    // The writer drains the buffer twice a second: 1,024 records hold 10 s of samples at
    // 100 Hz should the disk stall.
    let sampling = Background::start(Sampler::new(config)?, 1024, 64 << 20)?;
    sampling
        .buffer
        .set_wake_gap(std::time::Duration::from_millis(500));
    let until = async {
        match args.duration {
            Some(d) => tokio::time::sleep(d).await,
            None => std::future::pending().await,
        }
    };
    let write_error = drain(&sampling.buffer, until, |record| {
        if let Record::Event(e) = record {
            tracing::info!("{}", serde_json::to_string(&e.kind).unwrap_or_default());
        }
        writer.write(record)
    })
    .await;
    drop(sampling);
    writer
        .flush()
        .map_err(io_error(format!("write {}", args.out.display())))?;
    write_error.map_err(io_error(format!("write {}", args.out.display())))
}

/// Hands every record of `buffer` to `each` until `until` resolves or the process is
/// interrupted; then hands over what is left.
async fn drain(
    buffer: &SharedBuffer,
    until: impl std::future::Future<Output = ()>,
    mut each: impl FnMut(&Record) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let mut appended = buffer.subscribe();
    // From the first record: the buffer is this command's own, and what its threads pushed
    // before this ran (the target attached, the profiler refused) belongs in the output too.
    let mut cursor = buffer.with(|b| b.oldest_seq());
    tokio::pin!(until);
    let interrupt = interrupted();
    tokio::pin!(interrupt);
    loop {
        let stop = tokio::select! {
            _ = appended.changed() => false,
            _ = &mut until => true,
            _ = &mut interrupt => true,
        };
        let records = match buffer.with(|b| b.read(cursor, usize::MAX)) {
            buffer::Read::Records(r) => r,
            buffer::Read::Gap { from, to } => {
                tracing::warn!(
                    "{} records were dropped before they could be written: the writer fell behind",
                    to + 1 - from
                );
                cursor = to + 1;
                Vec::new()
            }
        };
        cursor += records.len() as u64;
        for (_, record) in records {
            each(&record)?;
        }
        if stop {
            return Ok(());
        }
    }
}

async fn top(args: TopArgs) -> Result<(), Error> {
    let mut screen = top::Screen::default();
    let mut stdout = std::io::stdout();
    let mut draw = |text: String| {
        // Home, clear, draw.
        let _ = write!(stdout, "\x1b[H\x1b[2J{text}");
        let _ = stdout.flush();
    };
    let until = async {
        match args.duration {
            Some(d) => tokio::time::sleep(d).await,
            None => std::future::pending().await,
        }
    };
    if let Some(addr) = &args.connect {
        let tls = client_tls(&args)?;
        if args.token_file.is_some() && tls.is_none() {
            return Err(Error::Usage(
                "--token-file needs --fingerprint or --ca: a token is only sent over TLS that checks the probe is the one you mean".into(),
            ));
        }
        let token = args.token_file.as_deref().map(read_token).transpose()?;
        let mut sub = Subscriber::connect_with(
            addr.as_str(),
            token.as_deref(),
            tls.as_ref(),
            Start::Back { ns: 5_000_000_000 },
            "probe top",
        )
        .await?;
        let host = sub.host.clone();
        tokio::pin!(until);
        loop {
            let incoming = tokio::select! {
                _ = &mut until => return Ok(()),
                _ = interrupted() => return Ok(()),
                incoming = sub.next() => incoming?,
            };
            match incoming {
                Some(Incoming::Record { record, .. }) => {
                    if let Some(text) = screen.update(&record, &host) {
                        draw(text);
                    }
                }
                Some(_) => {}
                None => return Err(crate::client::ClientError::Closed.into()),
            }
        }
    }
    let config = args.target.sampler_config()?;
    let sampler = Sampler::new(config)?;
    let host = sampler.host_info();
    let sampling = Background::start(sampler, 1024, 16 << 20)?;
    let _ = drain(&sampling.buffer, until, |record| {
        if let Some(text) = screen.update(record, &host) {
            draw(text);
        }
        Ok(())
    })
    .await;
    Ok(())
}
