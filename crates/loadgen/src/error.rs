//! The errors `loadgen` reports to its user, each naming what to fix; among them [`Refusal`],
//! why an order is refused, and the bounds it names.

use std::io;
use std::path::PathBuf;

use thiserror::Error;

use crate::engine::attack::AttackError;
use crate::engine::request::RequestError;
use crate::engine::schedule::ScheduleError;

#[derive(Debug, Error)]
pub enum Error {
    /// Flags that do not go together, are missing, or have a bad value: each refusal its own
    /// [`UsageError`], all of them exit 2.
    #[error(transparent)]
    Usage(#[from] UsageError),
    /// An order refused for what it asks, whether it came from the flags, an experiment's cell
    /// or a pipe (`prepare`'s checks, and a search's).
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// Programs an experiment file needs that this host lacks (`experiment::tools`): `missing`
    /// holds each one not found, with what for and where it was looked for.
    #[error("{}", experiment::tools::missing(.missing).unwrap_or_default())]
    MissingTools {
        missing: Vec<experiment::tools::Needed>,
    },
    /// The experiment file cannot be read, or says something that cannot be run.
    #[error(transparent)]
    ExperimentFile(#[from] experiment::file::FileError),
    /// The file's matrix cannot be planned (with `--scale`, `--repetitions` and `--only`).
    #[error("{}: {error}", .file.display())]
    Plan {
        file: PathBuf,
        #[source]
        error: experiment::plan::PlanError,
    },
    /// The experiment's run failed (its setup, the store, a target).
    #[error(transparent)]
    Experiment(#[from] experiment::runner::Error),
    /// No `loadgen` to run the experiment's orders with (or to copy to the guns).
    #[error("{0}")]
    FindLoadgen(#[source] fleet::FleetError),
    #[error("cannot pin to CPUs {cpus} (placement.gun_cpus): {source}")]
    Pin {
        cpus: String,
        #[source]
        source: rustix::io::Errno,
    },
    /// An output file asked for (`--markdown`, `--junit`, `--json`).
    #[error("cannot write {}: {source}", .path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot write {}: {source}", .path.display())]
    WriteJson {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// An answer printed as JSON.
    #[error("{0}")]
    Json(#[source] serde_json::Error),
    /// A task of the runtime that ended without its answer.
    #[error("{0}")]
    Task(#[from] tokio::task::JoinError),
    /// A token file named by `--probe-token-file` that is not read.
    #[error("--probe-token-file: {0}")]
    TokenFile(#[source] probe::Error),
    #[error("--probe-ca: cannot read the CA certificates {}: {source}", .path.display())]
    ProbeCa {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// A target that answered nothing to the estimate of a first rate.
    #[error("{target} answered nothing to a closed loop of 16 connections in 2 s: is it up? (or give --start)")]
    NoAnswer { target: String },
    /// A gun's share of a step failed.
    #[error("{gun}: {why}")]
    Shot {
        gun: String,
        #[source]
        why: fleet::ShotError,
    },
    /// Stopped while the guns were made ready: nothing was measured.
    #[error("stopped while the guns were made ready: nothing was measured")]
    GunsStopped,
    #[error("{gun} printed no summary: {said}")]
    NoSummary { gun: String, said: String },
    #[error("step {step}'s run group {group} has no summary")]
    GroupWithoutSummary { step: u32, group: String },
    /// `loadgen gun`'s request, read from standard input over SSH.
    #[error("gun: {0} (this command is the experiment runner's, over SSH)")]
    GunRequest(#[source] order::OrderError),
    /// A pod's gun, dialling its runner.
    #[error("gun: {0}")]
    Dial(#[source] fleet::kubernetes::agent::AgentError),
    #[error("this loadgen: {0}")]
    Exe(#[source] io::Error),
    #[error("cannot read {}: {source}", .path.display())]
    ReadExe {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// The file a gun's order names for its store.
    #[error("gun: cannot read {path}: {source}")]
    GunStoreFile {
        path: String,
        #[source]
        source: io::Error,
    },
    #[error("gun: {0} sets no SHOWDOWN_DB")]
    GunNoStore(String),
    #[error("gun: cannot run {}: {source}", .path.display())]
    GunRun {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("gun: {0}")]
    GunWait(#[source] io::Error),
    #[error(transparent)]
    Request(#[from] RequestError),
    #[error(transparent)]
    Schedule(#[from] ScheduleError),
    #[error(transparent)]
    Attack(#[from] AttackError),
    #[error("cannot create the HDR log {path}: {source}; check --hdr-log")]
    HdrLog {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot start the built-in target: {0}")]
    Target(io::Error),
    #[error("cannot start the runtime: {0}")]
    Runtime(io::Error),
    #[error("cannot print the summary: {0}")]
    Output(io::Error),
    #[error(transparent)]
    Store(#[from] store::StoreError),
    /// A comparison whose builds were not all measured (one did not build, start or pass its
    /// checks): exit 1, never "inconclusive". `cell` and `why` are the first failed cell and
    /// its failure, `failed` how many cells failed.
    #[error(
        "the comparison could not measure every build: {}: {} ({failed} cell{} failed; see above)",
        redact::printable(.cell),
        redact::printable(.why),
        plural(.failed)
    )]
    Unmeasured {
        cell: String,
        why: String,
        failed: usize,
    },
    /// `loadgen history` of an experiment the store holds nothing of (exit 1: what a store
    /// holds, as docs/history.md says). `store` is the store's URL as printed, its password
    /// out.
    #[error(
        "nothing of experiment {:?} is kept in {store}: `loadgen runs list` shows what is, and `loadgen experiment run FILE --again` adds a sitting",
        redact::printable(.experiment)
    )]
    NothingKept { experiment: String, store: String },
    /// A `--reference` of `loadgen history` that is none of the history's `targets` (exit 1,
    /// as docs/history.md says).
    #[error(
        "no target {:?} in the history of {}: --reference names one of its targets ({})",
        redact::printable(.reference),
        redact::printable(.experiment),
        .targets.join(", ")
    )]
    NoReference {
        reference: String,
        experiment: String,
        targets: Vec<String>,
    },
    /// `loadgen selftest` on a host where no timer (timerfd) could be made: the host's
    /// failure, not the command line's (exit 1).
    #[error("could not make a timer (timerfd) on this machine")]
    NoTimer,
    /// `loadgen selftest` stopped (Ctrl-C) in one of its attacks, before anything was kept
    /// (exit 1, as [`Error::GunsStopped`]). `why` is the stop's reason.
    #[error("the self-test was stopped: {why}")]
    SelftestStopped { why: String },
    #[error("order: {0}")]
    Order(#[from] order::OrderError),
    /// The guns refused (their spec, their lab, a gun), or not reached.
    #[error(transparent)]
    Guns(#[from] fleet::FleetError),
    #[error("the probe at {address}: {message}")]
    Probe { address: String, message: String },
    #[error("the run is kept, but drawing its report failed: {0}")]
    Report(#[from] report::ReportError),
    #[error("cannot write {path}: {source}; check --out")]
    Export {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl Error {
    /// The exit code this error ends a command with: 2 for a bad command line (flags that do
    /// not go together or are missing, a value that cannot be used, a file a flag names that is
    /// not there, the environment variable standing for a flag), as clap's own refusals; 1 for
    /// anything else (what a file says, a store, a target, a gun, the host). `command_line` is false for `loadgen order` and
    /// `loadgen gun`, whose orders come from a pipe: there a refused order is 1.
    pub fn exit_code(&self, command_line: bool) -> u8 {
        use Refusal as R;
        let bad = match self {
            Error::Usage(_) => return 2,
            _ if !command_line => false,
            Error::Refused(r) => matches!(
                r,
                R::Connections { .. }
                    | R::Timeout
                    | R::PoissonBatched
                    | R::Threads(_)
                    | R::PoissonClosed
                    | R::ClosedWithoutEnd
                    | R::RateWithoutEnd
                    | R::Interval
                    | R::Shard
                    | R::TokenWithoutTrust
                    | R::ProbesWithoutStore
                    | R::Fingerprint(_)
                    | R::RateRange
                    | R::CheckBlocks { .. }
                    | R::CompareWithGuns
            ),
            Error::Schedule(_) => true,
            Error::Request(e) => matches!(
                e,
                RequestError::BadUrl { .. }
                    | RequestError::UserInfo { .. }
                    | RequestError::BadHeader(_)
                    | RequestError::BadMethod(_)
                    | RequestError::Template { .. }
                    | RequestError::TwoBodies
                    // A file a flag names that is not there to read.
                    | RequestError::BodyFile { .. }
                    | RequestError::TargetsFile { .. }
            ),
            // The same, for the files `--hdr-log`, `--probe-token-file` and `--probe-ca` name.
            Error::HdrLog { .. } | Error::TokenFile(_) | Error::ProbeCa { .. } => true,
            Error::Attack(AttackError::StartAt(_)) => true,
            Error::Store(store::StoreError::BadUrl { .. }) => true,
            Error::Guns(fleet::FleetError::UnsharedStore) => true,
            _ => false,
        };
        if bad {
            2
        } else {
            1
        }
    }
}

/// "s" after "cell" unless there is one.
fn plural(n: &usize) -> &'static str {
    if *n == 1 {
        ""
    } else {
        "s"
    }
}

/// A command line that cannot be run, each refusal its own variant (all exit 2, as clap's own
/// refusals): flags that do not go together, a flag missing beside another, a value the
/// command cannot use. Each message names the flag to fix.
#[derive(Debug, Error)]
pub enum UsageError {
    /// `attack` (or `capacity`) with neither a URL nor `--targets`.
    #[error("give a URL to attack, or --targets FILE")]
    NoRequests,
    /// `--ramp` without `--duration`.
    #[error("--ramp needs --duration, e.g. --ramp 100:5000 --duration 60s")]
    RampNeedsDuration,
    /// `--steps` without `--step-duration`.
    #[error("--steps needs --step-duration, e.g. --step-duration 30s")]
    StepsNeedStepDuration,
    /// `demo --stall` as long as `--stall-every`, or longer.
    #[error("--stall must be shorter than --stall-every, e.g. --stall 100ms --stall-every 1s")]
    StallNotShorter,
    /// `selftest --omission` under 10 s.
    #[error("--omission must be at least 10s (ten freezes of the target), e.g. --omission 20s")]
    OmissionTooShort,
    /// `attack --slo` with a term of the server's own figures (`term`), and no `--probe` to
    /// read it.
    #[error("--slo {term}: the server's own figure, read by the probe that watches it: give --probe HOST:PORT (`probe serve --pid PID` on the server's host)")]
    ServerTermWithoutProbe { term: analysis::capacity::Term },
    /// `experiment --ref TARGET=REF` that cannot be set on the file.
    #[error("{0}")]
    Ref(#[source] experiment::file::SetRefError),
    /// `--scale` or `--only` that the experiment `file`'s matrix cannot be planned with.
    #[error("{}: {error}", .file.display())]
    PlanFlags {
        file: PathBuf,
        #[source]
        error: experiment::plan::PlanError,
    },
    /// `--repetitions` that the experiment `file`'s matrix cannot be planned with.
    #[error("{}: --repetitions: {error}", .file.display())]
    Repetitions {
        file: PathBuf,
        #[source]
        error: experiment::plan::PlanError,
    },
}

/// The open loop's default connection cap.
pub const DEFAULT_MAX_CONNECTIONS: usize = 10_000;

/// The most worker threads an order may ask for, from a flag, a file or a pipe.
pub const MAX_THREADS: u64 = 1024;

/// The most connections an order may ask for (a cap, a closed loop's, those opened first).
pub const MAX_CONNECTIONS: u64 = 1_000_000;

/// Why an order is refused, whether it came from the flags, an experiment's cell or a pipe:
/// what it asks does not go together or is out of bounds. A message that names a flag names
/// the way a command line asks for it; an experiment file's own checks refuse most of these
/// first, in the file's words.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// `what`: the order's field (`max_connections`, `ready_connections`, `connections`).
    #[error("{what} {n} is more than {MAX_CONNECTIONS} connections: ask for fewer")]
    Connections { what: &'static str, n: u64 },
    #[error("the timeout (--timeout, or a load's timeout) must be above 0, e.g. 30s")]
    Timeout,
    #[error("--arrival poisson sends each request at its own instant: drop --batch (a grid would release its arrivals together)")]
    PoissonBatched,
    #[error("threads {0} is more than {MAX_THREADS}: ask for fewer (one a CPU is plenty)")]
    Threads(u32),
    #[error("--arrival poisson needs an open loop: give --rate instead of --connections")]
    PoissonClosed,
    #[error("a closed loop needs an end: add --requests N or --duration D")]
    ClosedWithoutEnd,
    #[error("a closed loop needs a connection")]
    NoConnection,
    #[error("--rate needs an end: add --duration D or --requests N")]
    RateWithoutEnd,
    #[error("--interval must be at least 10ms, e.g. --interval 1s")]
    Interval,
    #[error("a shard is I/N with 0 <= I < N, such as 0/2")]
    Shard,
    #[error("--probe-token-file needs --probe-fingerprint or --probe-ca: a token is only sent over TLS that checks the probe is the one you mean")]
    TokenWithoutTrust,
    /// The file on a gun that names the store.
    #[error("the store is the one {0} sets on a gun: only `loadgen gun` reads it")]
    GunStore(String),
    #[error("--probe keeps the probes' samples with the run: drop --no-store")]
    ProbesWithoutStore,
    #[error(transparent)]
    Fingerprint(probe::tls::TlsError),
    #[error("--probe-ca: {0}")]
    ProbeTls(#[source] probe::tls::TlsError),
    #[error("not an attack")]
    NotAnAttack,
    #[error("not a search")]
    NotASearch,
    #[error("a comparison (against) is run by `loadgen capacity --against`, not from an order of one search")]
    AgainstInSearch,
    /// A term of the server's own figures, which a search's steps cannot judge.
    #[error(transparent)]
    ServerTerm(#[from] analysis::capacity::slo::ServerTerm),
    #[error("--min-rate is above --max-rate: give a range that holds rates")]
    RateRange,
    #[error("check is {check} blocks: give 4 to {most} (0: no check)")]
    CheckBlocks { check: u32, most: u32 },
    #[error("a check follows one search: give searches = 1 with check, or no check")]
    CheckOfSearches,
    #[error("a comparison (--against) runs from this host's generator: drop --gun (a comparison across guns is not built yet)")]
    CompareWithGuns,
    #[error("a comparison needs two targets or more, each with its steps")]
    TooFewToCompare,
    #[error("gun: this order is a search with guns of its own; a gun fires one share of a step, the runner spreads a search over the guns itself")]
    GunsOnAGun,
}
