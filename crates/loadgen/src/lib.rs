//! `loadgen`, Showdown's gun: open-loop HTTP load that measures latency from the moment each
//! request was due, and says so when it cannot keep its schedule.
//!
//! Modules, in the order a request meets them:
//!
//! - [`cli`]: the command line, checked into an [`attack::AttackPlan`].
//! - [`schedule`]: the rate schedule — when request *i* is due (pure maths).
//! - [`request`], [`template`]: what to send — a URL or a weighted targets file, with
//!   per-request values in bodies and paths.
//! - [`attack`]: starts the worker threads and gathers their intervals into one outcome.
//! - `worker`: one thread's pacer (or closed-loop clients) and connection pool.
//! - [`timer`]: sleeping to a deadline with microsecond precision (timerfd).
//! - [`client`]: connections (TCP, TLS, HTTP/1.1, HTTP/2) and one exchange at a time.
//! - [`recorder`]: per-thread, per-interval counters and HdrHistograms (the model is the
//!   `store` crate's).
//! - [`hdrlog`]: the HdrHistogram interval log as the run goes; [`progress`]: the live line on a
//!   terminal. The end-of-run summary is `store::summary`'s.
//! - [`shutdown`]: stopping a run early without losing what it recorded.
//! - [`recording`]: keeping a run in the store, with the probes' samples ([`probes`]).
//! - [`runs`]: `loadgen runs list | show | export | delete`.
//! - [`experiments`]: `loadgen experiment run | plan | status FILE` (the runner is the
//!   `experiment` crate's).
//! - [`target`], [`demo`]: the built-in target and `loadgen demo`.
//! - [`clock`]: the one monotonic clock everything is timed with; [`cpus`]: how busy the
//!   generator's CPUs were, to tell why sends ran late.

pub mod attack;
pub mod cli;
pub mod client;
pub mod clock;
pub mod cpus;
pub mod demo;
pub mod error;
mod eventloop;
pub mod experiments;
mod h1response;
pub mod hdrlog;
pub mod probes;
pub mod progress;
pub mod recorder;
pub mod recording;
pub mod request;
pub mod runs;
pub mod schedule;
pub mod shutdown;
pub mod target;
pub mod template;
pub mod timer;
mod worker;

use std::io::Write;

pub use attack::{attack, AttackPlan, IntervalSink, Load, RunOutcome, Span};
pub use cli::{Cli, Command, OutputArgs, OutputFormat};
pub use error::Error;
pub use shutdown::Shutdown;
pub use store::summary::Summary;

/// How a run ended, for the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunEnd {
    /// The schedule (or request count) ran to its end.
    Completed,
    /// Stopped early, by Ctrl-C or `--max-lateness`; everything recorded was still reported.
    Stopped,
}

impl RunEnd {
    pub fn of(summary: &Summary) -> Self {
        if summary.stopped.is_some() {
            RunEnd::Stopped
        } else {
            RunEnd::Completed
        }
    }

    /// 0 when the run completed, 3 when it was stopped early.
    pub fn exit_code(self) -> u8 {
        match self {
            RunEnd::Completed => 0,
            RunEnd::Stopped => 3,
        }
    }
}

/// Runs a parsed command line. `shutdown` is triggered by Ctrl-C (once: stop and let requests
/// in flight finish; twice: end them now).
pub fn run(cli: Cli, shutdown: Shutdown) -> Result<RunEnd, Error> {
    probe::raise_fd_limit();
    // Lossy: a non-UTF-8 argument that clap accepted (a path) must not panic here.
    let command_line: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(Error::Runtime)?;
    runtime.block_on(async {
        stop_on_ctrl_c(shutdown.clone());
        match cli.command {
            Command::Attack(args) => {
                let plan = args.plan()?;
                let keeping = args.keeping(&command_line)?;
                let done = recording::execute(&plan, &args.out, &keeping, &shutdown).await?;
                print_summary(&done.summary, args.out.output)?;
                print_kept(&done, &keeping, args.out.output);
                if let Some(dir) = &args.store.report {
                    draw_report(dir, &done, &keeping, args.out.output).await?;
                }
                Ok(RunEnd::of(&done.summary))
            }
            Command::Demo(args) => demo::run(&args, &shutdown, &command_line).await,
            Command::Runs(args) => runs::run(&args).await.map(|()| RunEnd::Completed),
            Command::Experiment(args) => experiments::run(&args, &shutdown).await,
            Command::Target(args) => target::serve_until_stdin_closes(&args)
                .await
                .map(|()| RunEnd::Completed),
        }
    })
}

/// Says where the run was kept (on standard error with JSON, so that standard output stays JSON).
pub fn print_kept(done: &recording::Executed, keeping: &recording::Keeping, format: OutputFormat) {
    let (Some(id), Some(url)) = (&done.run_id, &keeping.store_url) else {
        return;
    };
    let line = format!(
        "Kept as run {id} in {}: loadgen runs show {}",
        redact::text(url),
        store::run::short_id(id)
    );
    match format {
        OutputFormat::Text => println!("\n{line}"),
        OutputFormat::Json => eprintln!("{line}"),
    }
}

/// Draws the report's pages from the store the run was kept in, and says where its page is.
pub async fn draw_report(
    dir: &std::path::Path,
    done: &recording::Executed,
    keeping: &recording::Keeping,
    format: OutputFormat,
) -> Result<(), Error> {
    let (Some(id), Some(url)) = (&done.run_id, &keeping.store_url) else {
        return Ok(());
    };
    let site = draw_site(url, dir).await?;
    let page = site.run_pages.get(id).unwrap_or(&site.index);
    let line = format!("Report: open {}", page.display());
    match format {
        OutputFormat::Text => println!("{line}"),
        OutputFormat::Json => eprintln!("{line}"),
    }
    Ok(())
}

/// Draws every page of the store at `url` into `dir`, saying on standard error which could not
/// be drawn.
pub async fn draw_site(url: &str, dir: &std::path::Path) -> Result<report::Site, Error> {
    let store = store::Store::open(url).await?;
    let options = report::SiteOptions {
        out: dir.to_path_buf(),
        ..Default::default()
    };
    let site = report::site::write(&store, &options).await?;
    for (what, why) in &site.failures {
        eprintln!("{what} could not be drawn: {why}");
    }
    Ok(site)
}

/// Prints the summary on standard output.
pub fn print_summary(summary: &Summary, format: OutputFormat) -> Result<(), Error> {
    let mut out = std::io::stdout().lock();
    let text = match format {
        OutputFormat::Text => summary.to_text(),
        OutputFormat::Json => {
            serde_json::to_string_pretty(summary).map_err(|e| Error::Output(e.into()))? + "\n"
        }
    };
    out.write_all(text.as_bytes()).map_err(Error::Output)
}

/// The next of Ctrl-C, SIGTERM or SIGHUP, named for the user.
async fn next_signal(
    term: &mut tokio::signal::unix::Signal,
    hup: &mut tokio::signal::unix::Signal,
) -> Option<&'static str> {
    tokio::select! {
        r = tokio::signal::ctrl_c() => r.ok().map(|()| "Ctrl-C"),
        r = term.recv() => r.map(|()| "SIGTERM"),
        r = hup.recv() => r.map(|()| "SIGHUP (the terminal closed)"),
    }
}

fn stop_on_ctrl_c(shutdown: Shutdown) {
    use tokio::signal::unix::{signal, SignalKind};
    tokio::spawn(async move {
        // Ctrl-C, a `kill` (SIGTERM) and a closed terminal or SSH session (SIGHUP) all stop the
        // same way: what is recorded is kept, and what was started (targets, a throwaway
        // PostgreSQL, cgroups, temporary directories) is taken down.
        let (Ok(mut term), Ok(mut hup)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
        ) else {
            return;
        };
        let Some(first) = next_signal(&mut term, &mut hup).await else {
            return;
        };
        eprintln!(
            "\nInterrupted ({first}): sending no more requests, waiting for those in flight (interrupt again to stop now)."
        );
        shutdown.stop(&format!("interrupted by {first}"));
        if let Some(second) = next_signal(&mut term, &mut hup).await {
            shutdown.abort(&format!("interrupted twice ({second})"));
        }
    });
}
