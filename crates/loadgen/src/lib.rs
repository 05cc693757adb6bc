//! `loadgen`, Showdown's gun: open-loop HTTP load that measures latency from the moment each
//! request was due, and says so when it cannot keep its schedule.
//!
//! Five module trees, a pointer chase, the order that drives them, and the command line above them:
//!
//! - [`engine`]: the load itself, from plain values (an [`engine::AttackPlan`]): the schedule,
//!   the requests, the worker threads (an epoll loop for plain HTTP/1.1, hyper for TLS and
//!   HTTP/2) under one set of rules ([`engine`]'s `workload`), their recorders, and the
//!   attack that gathers them into one outcome. It knows nothing of flags, stores or probes.
//! - [`keep`]: keeping a run: the store, the probes' samples on the run's timeline, the HDR
//!   log and the live line, around one attack.
//! - [`capacity`]: C_p(T, w), the highest rate at which a window meets an SLO with probability
//!   p, as a loop over a plan and a way to run steps (the generator's, the guns' through the
//!   `fleet` crate's `Firing`, or a simulated server's in its tests); several targets'
//!   searches interleaved and compared as ratios.
//! - [`chase`]: a pointer chase through 64 MiB, the built-in target's `--work-kind chase` and
//!   the memory's latency timed after each step of a search.
//! - `execute`: a search order or a comparison order run from its values: its checks, the
//!   store opened, the guns made ready, its steps printed and kept as they end (`loadgen
//!   capacity` and `loadgen order` both call it).
//! - [`commands`]: what `loadgen` does: `attack`, `capacity`, `demo`, `experiment`, `runs`,
//!   the built-in `target`, and the hidden `gun` and `order` (a typed order on standard input).
//! - [`prepare`]: the one place an [`order::Order`] (from the flags, the experiment runner or
//!   a gun) becomes the engine's plan, a search's sending and the way a run is kept.
//! - [`cli`]: the flags, checked and turned into an [`order::Order`] (`attack`, `capacity`)
//!   or the plain values the others take; `output` prints summaries and draws pages; `error`
//!   is what goes wrong, in words, at the bottom of the crate (an order's refusals and the
//!   bounds they name are there, so that every module reaches it without climbing);
//!   `environment` reads the variables the guns' side needs (`SHOWDOWN_LOADGEN`,
//!   `TWIN_STATE_DIR`, `SHOWDOWN_GUNS_SECRET_FILE`), beside it, for `fleet` reads none.

pub mod capacity;
pub mod chase;
pub mod cli;
pub mod commands;
pub mod engine;
mod environment;
mod error;
mod execute;
pub mod keep;
mod output;
pub mod prepare;

pub use cli::{Cli, Command, OutputArgs, OutputFormat};
pub use engine::shutdown::Shutdown;
pub use error::{Error, UsageError};
pub use store::summary::Summary;

/// How a run ended, for the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunEnd {
    /// The schedule (or request count) ran to its end.
    Completed,
    /// Stopped early, by Ctrl-C or `--max-lateness`; everything recorded was still reported.
    Stopped,
    /// Ran to its end and missed its SLO.
    SloMissed,
    /// Ran to its end, and cannot say whether it met its SLO (the generator was the limit).
    SloInconclusive,
    /// A comparison's candidate regressed beyond what is allowed (`[compare]`).
    Regression,
    /// A comparison cannot tell (too noisy, or a gated measure not measured).
    CompareInconclusive,
}

impl RunEnd {
    pub fn of(summary: &Summary) -> Self {
        if summary.stopped.is_some() {
            RunEnd::Stopped
        } else {
            RunEnd::Completed
        }
    }

    /// How a run judged against `verdict` ended: stopped early first, then the verdict.
    pub fn judged(
        summary: &Summary,
        verdict: Option<&analysis::capacity::slo::RunVerdict>,
    ) -> Self {
        use analysis::capacity::slo::Outcome;
        match (RunEnd::of(summary), verdict.map(|v| v.outcome)) {
            (RunEnd::Stopped, _) => RunEnd::Stopped,
            (_, Some(Outcome::Missed)) => RunEnd::SloMissed,
            (_, Some(Outcome::Inconclusive)) => RunEnd::SloInconclusive,
            (end, _) => end,
        }
    }

    /// 0 when the run completed (and met its SLO, or passed its comparison), 3 when it was
    /// stopped early, 4 when it missed its SLO or regressed, 5 when it cannot say.
    pub fn exit_code(self) -> u8 {
        match self {
            RunEnd::Completed => 0,
            RunEnd::Stopped => 3,
            RunEnd::SloMissed | RunEnd::Regression => 4,
            RunEnd::SloInconclusive | RunEnd::CompareInconclusive => 5,
        }
    }
}

/// Runs a parsed command line. `shutdown` is triggered by Ctrl-C, SIGTERM or SIGHUP (once:
/// stop and let requests in flight finish; twice: end them now).
pub fn run(cli: Cli, shutdown: Shutdown) -> Result<RunEnd, Error> {
    probe::raise_fd_limit();
    if !matches!(cli.command, cli::Command::Target(_)) {
        probe::keep_secrets_in();
    }
    // Lossy: a non-UTF-8 argument that clap accepted (a path) must not panic here.
    let command_line: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(Error::Runtime)?;
    runtime.block_on(async {
        shutdown.on_signals();
        commands::run(cli.command, &shutdown, &command_line).await
    })
}
