//! The command line: `loadgen attack …` and `loadgen demo …`, parsed by clap and checked into an
//! [`AttackPlan`]. Every mistake becomes one line that names the flag and the fix.

use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgGroup, Args, Parser, Subcommand, ValueEnum};

use crate::engine::arrivals::Process;
use crate::engine::attack::AttackPlan;
use crate::engine::request::{self, RequestOptions};
use crate::error::{Error, UsageError};
use crate::keep::Keeping;

/// What the tools read from the environment, listed in `loadgen --help` and its man page.
pub const ENVIRONMENT: &str = "\
Environment:
  SHOWDOWN_DB        the store, as --db (sqlite://FILE or postgres://…)
  SHOWDOWN_HEADERS   request headers, one per line, as -H: a token kept off the command line
  SHOWDOWN_TARGETS   the targets/ directory an experiment file's built-in targets come from
                     (else the first targets/ holding a run script, here or above)
  SHOWDOWN_LOADGEN   the loadgen binary the experiment runner starts (else this one)
  DATABASE_URL       (or the name in an experiment file's url_env) the database it names
  XDG_RUNTIME_DIR    where the runner's leases are kept, so that the next run ends what a
                     killed one started (else TMPDIR/showdown-UID)
  SHOWDOWN_GUNS_SECRET_FILE  with Kubernetes guns the runner does not apply, the file
                     (mode 0600) it writes the pods' Secret to
  JOB_COMPLETION_INDEX, NODE_NAME, POD_NAME  a gun pod's index, node and name (set by
                     Kubernetes for loadgen gun --dial)";

/// What to add to clap's refusal of `--connections` beside an open loop's flags: the word
/// means a closed loop on the command line (hey's `-c`), while in an experiment file beside a
/// rate it is the pool's cap (wrk2's `-c`), which the command line spells `--max-connections`.
pub fn hint(error: &clap::Error) -> Option<&'static str> {
    let text = error.to_string();
    // `capacity --rate`: a search chooses its rates; clap's nearest flag (`--targets`) is not
    // what was meant.
    if error.kind() == clap::error::ErrorKind::UnknownArgument
        && text.contains("'--rate'")
        && text.contains("capacity")
    {
        return Some(
            "capacity searches for the rate: give --start R for its first (and --min-rate, \
             --max-rate); a fixed rate is `loadgen attack --rate R`",
        );
    }
    let open = [
        "--rate",
        "--steps",
        "--ramp",
        "--max-connections",
        "--ready-connections",
        "--batch",
    ];
    (error.kind() == clap::error::ErrorKind::ArgumentConflict
        && text.contains("--connections")
        && open.iter().any(|flag| text.contains(flag)))
    .then_some(
        "--connections is a closed loop of that many connections (hey -c); an open loop's pool \
         of at most N connections (wrk2 -c, and an experiment file's connections beside a rate) \
         is --max-connections N",
    )
}

/// Showdown's load generator: open-loop, coordinated-omission-aware HTTP load.
#[derive(Debug, Parser)]
#[command(
    name = "loadgen",
    version,
    about,
    propagate_version = true,
    after_help = ENVIRONMENT
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Attack a URL (or the requests of a targets file), keep the run, print a summary.
    Attack(Box<AttackArgs>),
    /// Attack a built-in target that freezes periodically, watched by a probe; nothing to install.
    Demo(Box<DemoArgs>),
    /// Measure what this machine can time (about 2 minutes, loopback only): its clock and
    /// timed wake-ups, corrected latency against a server that freezes (its true p99 known),
    /// and the most one thread paces cleanly against what it sends unthrottled. Kept in the
    /// store; the pages of runs on this host cite it.
    Selftest(SelftestArgs),
    /// List, show, export or delete kept runs.
    Runs(RunsArgs),
    /// Find C_p: the highest constant rate at which a step's window meets an SLO (p99, errors, …)
    /// with probability p.
    ///
    /// C_p(T, w) is the highest constant rate at which a window of T (--step) after w (--warmup)
    /// at that rate meets the SLO with probability p (--p): at C_0.5 one window in two passes.
    /// A run longer than T at that rate must meet the SLO in every window of its length, so it
    /// meets it less often. For a run of D held within the SLO, search with --step D and
    /// --p 0.9, and run at a share of that figure (80 %).
    Capacity(Box<CapacityArgs>),
    /// Run an experiment file: its targets, its matrix of cells, its pages.
    Experiment(ExperimentArgs),
    /// An experiment's sittings in the order they ran: each series' figure in each (capacity
    /// within the SLO, CPU per request, memory, latency), the change points found across them,
    /// each named by the revisions between which it happened, with its size and 95 % interval.
    History(HistoryArgs),
    /// Print a shell's completions for loadgen: `source <(loadgen completions bash)`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print loadgen's manual page (roff): `loadgen man > loadgen.1 && man ./loadgen.1`.
    Man,
    /// Serve the built-in target on its own (the demo starts it this way).
    #[command(hide = true)]
    Target(TargetArgs),
    /// A gun host's side of an experiment fired over SSH: its request on standard input.
    #[command(hide = true)]
    Gun(GunArgs),
    /// Run one order read from standard input (one JSON line: how the experiment runner and
    /// the guns start a generator), and print its outcome as one JSON line.
    #[command(hide = true)]
    Order,
}

/// `loadgen gun`: what the experiment runner starts on a gun host over SSH (docs/guns.md); what
/// to do comes on its standard input (`order::GunRequest`), never as flags. With `--dial`, a
/// Kubernetes Job's pod: it connects out to the runner and runs each session it is asked for.
#[derive(Debug, Clone, Args)]
pub struct GunArgs {
    /// The runner, host:port, to dial (a pod of the Job the runner rendered).
    #[arg(long, value_name = "HOST:PORT", requires = "secrets")]
    pub dial: Option<String>,
    /// The directory of the Job's Secret: its token and the runner's fingerprint.
    #[arg(long, value_name = "DIR", requires = "dial")]
    pub secrets: Option<PathBuf>,
}

/// `loadgen history`: an experiment's history from the store.
#[derive(Debug, Clone, Args)]
pub struct HistoryArgs {
    /// The store: sqlite://PATH or postgres://USER@HOST/DATABASE.
    #[arg(long, value_name = "URL", env = "SHOWDOWN_DB", hide_env_values = true, default_value = store::DEFAULT_URL)]
    pub db: String,

    /// The experiment (its file's `name`, or the --experiment its runs were kept under).
    #[arg(long, value_name = "NAME")]
    pub experiment: String,

    /// Exit 4 when one of the last N sittings made a measure worse: the first sitting after a
    /// change point, or after a possible change too recent to confirm (`--fail-within 1`: the
    /// last sitting did; a nightly job's gate).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub fail_within: Option<u32>,

    /// The chance of calling a change where none happened, over all the history's series
    /// [default: the file's `[history] level`, else 0.05].
    #[arg(long, value_name = "P", value_parser = parse_level)]
    pub level: Option<f64>,

    /// The fewest sittings either side of a change.
    #[arg(long, value_name = "N", default_value = "3", value_parser = clap::value_parser!(u32).range(2..))]
    pub min_segment: u32,

    /// Judge only this measure (repeatable): capacity, cpu, rss, p50, p99 [default: the file's
    /// `[history] measures`, else all]. Each series is tested at the level divided among those
    /// judged, so fewer find smaller changes.
    #[arg(long = "measure", value_name = "MEASURE", value_parser = parse_history_measure)]
    pub measures: Vec<analysis::ab::Measure>,

    /// A reference target of the experiment (repeatable): each other target's figures are
    /// divided, sitting by sitting, by those of the reference that varies least beside them
    /// over 8 sittings or more, taking out the host's drift (`loadgen target --work-kind`).
    /// Without it, the references the experiment file names in `[history] references`.
    #[arg(long = "reference", value_name = "TARGET", conflicts_with = "raw")]
    pub references: Vec<String>,

    /// Judge every target's own figures, not divided by the references the file names.
    #[arg(long)]
    pub raw: bool,

    /// The smallest change called one, in percent (2: a change under 2 % is not one).
    #[arg(long, value_name = "PCT", default_value = "0", value_parser = parse_percent_change)]
    pub min_change: f64,

    /// What a split is held against: normal (sittings drawn from a normal distribution, which
    /// finds a change in a short history) or permutation (each segment's own sittings shuffled:
    /// no distribution assumed, but a short history cannot reach a small p-value).
    #[arg(long, value_enum, default_value_t = HistoryNull::Normal)]
    pub null: HistoryNull,

    /// How to print it.
    #[arg(long, value_enum, default_value_t = HistoryFormat::Text)]
    pub output: HistoryFormat,
}

/// `loadgen target --work-kind` (the target's `WorkKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WorkKindArg {
    Spin,
    Chase,
    Syscall,
}

/// `loadgen history --null`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HistoryNull {
    Normal,
    Permutation,
}

/// How `loadgen history` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HistoryFormat {
    Text,
    Json,
    /// Tables for a CI job's summary or a pull request.
    Markdown,
}

fn parse_history_measure(text: &str) -> Result<analysis::ab::Measure, String> {
    use analysis::ab::Measure;
    match text.parse::<Measure>() {
        Ok(Measure::Pss) => {
            Err("a history follows rss, not pss (which reads like rss on one host)".into())
        }
        Ok(m) => Ok(m),
        Err(_) => Err(format!(
            "expected capacity, cpu, rss, p50 or p99, not {text:?}"
        )),
    }
}

fn parse_level(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(p) if p > 0.0 && p < 0.5 => Ok(p),
        _ => Err(format!(
            "expected a probability between 0 and 0.5, such as 0.05, not {text:?}"
        )),
    }
}

fn parse_percent_change(text: &str) -> Result<f64, String> {
    match text.trim_end_matches('%').parse::<f64>() {
        Ok(p) if (0.0..100.0).contains(&p) => Ok(p / 100.0),
        _ => Err(format!(
            "expected a percentage from 0 to under 100, such as 2, not {text:?}"
        )),
    }
}

/// Where a run is kept, and under what name.
#[derive(Debug, Clone, Args)]
pub struct StoreArgs {
    /// The store: sqlite://PATH (created on first use) or postgres://USER@HOST/DATABASE.
    #[arg(long, value_name = "URL", env = "SHOWDOWN_DB", hide_env_values = true, default_value = store::DEFAULT_URL)]
    pub db: String,

    /// Do not keep the run.
    #[arg(long)]
    pub no_store: bool,

    /// A name for the run [default: the target and the load].
    #[arg(long)]
    pub name: Option<String>,

    /// A label for comparing runs, KEY=VALUE (repeatable), e.g. --label target=node --label rate=3000.
    #[arg(long = "label", value_name = "KEY=VALUE", value_parser = store::run::parse_label)]
    pub labels: Vec<(String, String)>,

    /// The experiment this run belongs to.
    #[arg(long, value_name = "NAME")]
    pub experiment: Option<String>,

    /// The id to keep the run under (a UUID; the experiment runner names its cells' runs
    /// this way) [default: a new UUID v7].
    #[arg(long, value_name = "UUID", value_parser = parse_run_id)]
    pub run_id: Option<String>,

    /// After the run, draw the report's pages (all kept runs) into DIR and say where this
    /// run's page is.
    #[arg(long, value_name = "DIR", conflicts_with = "no_store")]
    pub report: Option<PathBuf>,
}

/// The probes that watch the servers during the run.
#[derive(Debug, Clone, Args)]
pub struct ProbeArgs {
    /// A probe to subscribe to, HOST:PORT (repeatable: the API host, the database host).
    #[arg(long = "probe", value_name = "HOST:PORT")]
    pub probes: Vec<String>,

    /// The probes' token (required when they listen beyond loopback).
    #[arg(long, value_name = "FILE")]
    pub probe_token_file: Option<PathBuf>,

    /// The probes use TLS: pin their certificate by its SHA-256 fingerprint (what `probe
    /// serve --tls-generate` printed).
    #[arg(long, value_name = "HEX", conflicts_with = "probe_ca")]
    pub probe_fingerprint: Option<String>,

    /// The probes use TLS: trust certificates this CA signed (PEM; the probe's own certificate
    /// works too), for the host name or address in --probe.
    #[arg(long, value_name = "FILE")]
    pub probe_ca: Option<PathBuf>,

    /// Probe samples to keep from before the first request.
    #[arg(long, value_name = "DURATION", default_value = "3s", value_parser = parse_duration)]
    pub pre_roll: Duration,

    /// How long to keep the probes' samples after the last response.
    #[arg(long, value_name = "DURATION", default_value = "3s", value_parser = parse_duration)]
    pub post_roll: Duration,

    /// Require the probes' profiles (on-CPU call stacks: a flame graph on the run's page): a
    /// probe not started with `probe serve --profile` is refused in one line before the attack.
    #[arg(long, requires = "probes")]
    pub profile: bool,
}

/// One of several gun hosts running one experiment together.
#[derive(Debug, Clone, Args)]
pub struct ShardArgs {
    /// The run group: the same name on every gun host.
    #[arg(long, value_name = "NAME", requires_all = ["shard", "start_at"])]
    pub run_group: Option<String>,

    /// This gun host's part, I/N (0-based): it sends requests I, I+N, I+2N… of the schedule.
    #[arg(long, value_name = "I/N", value_parser = parse_shard, requires = "run_group")]
    pub shard: Option<(u32, u32)>,

    /// When the attack starts (time zero), the same on every gun host: RFC 3339, e.g.
    /// 2026-11-21T10:00:00Z.
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub start_at: Option<std::time::SystemTime>,
}

#[derive(Debug, Clone, Args)]
pub struct RunsArgs {
    #[command(subcommand)]
    pub command: RunsCommand,

    /// The store.
    #[arg(long, value_name = "URL", env = "SHOWDOWN_DB", hide_env_values = true, default_value = store::DEFAULT_URL, global = true)]
    pub db: String,
}

#[derive(Debug, Clone, Subcommand)]
pub enum RunsCommand {
    /// The kept runs, oldest first.
    List {
        /// Only this experiment's runs.
        #[arg(long)]
        experiment: Option<String>,
        /// Only runs with this label, KEY=VALUE (repeatable).
        #[arg(long = "label", value_name = "KEY=VALUE", value_parser = store::run::parse_label)]
        labels: Vec<(String, String)>,
        /// Only this run group's shards.
        #[arg(long, value_name = "NAME")]
        group: Option<String>,
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        output: OutputFormat,
    },
    /// A run's summary, setup and probes (by id, id prefix or name; or a whole group).
    Show {
        /// The run (id, unique id prefix, or unique name).
        #[arg(required_unless_present = "group")]
        run: Option<String>,
        /// A run group: its shards merged.
        #[arg(long, value_name = "NAME", conflicts_with = "run")]
        group: Option<String>,
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        output: OutputFormat,
    },
    /// A run as an HdrHistogram interval log, CSV or JSON.
    Export {
        #[arg(required_unless_present = "group")]
        run: Option<String>,
        #[arg(long, value_name = "NAME", conflicts_with = "run")]
        group: Option<String>,
        #[arg(long, value_enum)]
        format: ExportFormat,
        /// Write here instead of standard output.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Delete a run and everything it recorded.
    Delete { run: String },
    /// Bring runs saved to a local file (when the store was down) into the store (--db).
    Import {
        /// The file loadgen named when it saved the run (results/unsaved/RUN_ID.db).
        file: PathBuf,
    },
}

#[derive(Debug, Clone, Args)]
pub struct ExperimentArgs {
    #[command(subcommand)]
    pub command: ExperimentCommand,
}

#[derive(Debug, Clone, Subcommand)]
pub enum ExperimentCommand {
    /// Run the cells not kept yet (resumes an interrupted run), then draw the pages.
    Run {
        #[command(flatten)]
        cells: CellArgs,
        /// Redo the cells kept as failed too.
        #[arg(long)]
        retry_failed: bool,
        /// Run every cell again as a new sitting (the next point of the experiment's history,
        /// `loadgen history`), rather than resume the latest sitting.
        #[arg(long)]
        again: bool,
        /// Draw the pages (this experiment's and every kept run's) into DIR at the end.
        #[arg(long, value_name = "DIR", default_value = "site")]
        report: PathBuf,
        /// Draw no pages.
        #[arg(long, conflicts_with = "report")]
        no_report: bool,
        /// With [compare]: write the verdict as Markdown to FILE, appended (a pull request's
        /// comment, or "$GITHUB_STEP_SUMMARY").
        #[arg(long, value_name = "FILE")]
        markdown: Option<PathBuf>,
        /// With [compare]: write the verdict as JUnit XML to FILE (replaced).
        #[arg(long, value_name = "FILE")]
        junit: Option<PathBuf>,
        /// With [compare]: write the verdicts as JSON to FILE (replaced): each measure's
        /// values, ratio, interval, verdict and every round's ratio.
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
        #[command(flatten)]
        trust: TrustArgs,
    },
    /// The cells in the order they run, about how long it takes, and everything the file
    /// would run, read or send, and to where.
    Plan {
        #[command(flatten)]
        cells: CellArgs,
        #[command(flatten)]
        trust: TrustArgs,
    },
    /// Which cells are kept, failed or still to run.
    Status {
        #[command(flatten)]
        cells: CellArgs,
    },
}

/// What the user confirms of what an experiment file asks for (a file from someone else is
/// data until then; `experiment plan` shows it all).
#[derive(Debug, Clone, Default, Args)]
pub struct TrustArgs {
    /// Let the file read this variable of your environment (its [database] url_env, a load's headers_env, a target's pass_env; repeatable): a file reads none you do not name.
    #[arg(long = "pass-env", value_name = "NAME")]
    pub pass_env: Vec<String>,
    /// Use the file's [database] url (or url_env): connect to it and run the file's schema, reset and rows_added SQL there. Its password comes from the URL only, never from PGPASSWORD or ~/.pgpass.
    #[arg(long)]
    pub trust_database: bool,
    /// Send the token in FILE (one line) to remote target NAME's probe (repeatable); a file's own probe_token_file is never read.
    #[arg(long = "probe-token-file", value_name = "NAME=FILE", value_parser = token_file_arg)]
    pub probe_tokens: Vec<(String, PathBuf)>,
    /// Use the file's [guns]: every order goes over SSH to the hosts it names, with its ssh_config, signed in by your SSH agent.
    #[arg(long)]
    pub trust_guns: bool,
    /// Let the file's [guns] ssh_config reach the guns through a ProxyCommand or ProxyJump (your bastion).
    #[arg(long)]
    pub trust_ssh_proxy: bool,
    /// Send this runner's store URL (its password included) to guns that have no store_env_file of their own.
    #[arg(long)]
    pub send_store_url: bool,
}

/// A flag's value that does not read: what the flag wants, and the value given (clap names
/// the flag, and reports it as a usage error: exit 2).
#[derive(Debug, thiserror::Error)]
pub enum FlagValueError {
    /// The value as it may be printed.
    #[error("{0:?} is not NAME=FILE: write the remote target's name, '=', and the file holding its probe's token")]
    TokenFile(String),
    #[error("{0:?} is not a URL: give an origin such as http://127.0.0.1:8081")]
    NotAUrl(String),
    #[error("{0:?} is not an http(s) origin: give one such as http://127.0.0.1:8081")]
    NotAnOrigin(String),
    #[error("{0:?} has a path: --against takes an origin (http://host:port), and sends it the first target's requests")]
    OriginPath(String),
    #[error(
        "expected a whole number of check blocks from 4 to {most} (0: no check), not {text:?}"
    )]
    Check { text: String, most: u32 },
    #[error("expected a whole number of rounds from {min} to 1000 (the ratio's interval needs {min} or more)", min = order::MIN_ROUNDS)]
    Rounds,
    #[error("expected terraform, twin or kubernetes, not {0:?}")]
    GunSource(String),
    /// `--kubernetes` fields that the order's `[guns] kubernetes` does not read (an unknown
    /// field, a value of the wrong type): serde's message, on one line.
    #[error("{}", one_line(.0))]
    KubernetesFields(#[source] toml::de::Error),
    /// `--kubernetes` fields that read but cannot be run (`fleet::kubernetes::check`).
    #[error("{0}")]
    Kubernetes(#[source] fleet::kubernetes::KubeError),
    #[error("expected a duration such as 30s, 500ms or 2m, not {0:?}")]
    Duration(String),
    #[error("a step lasts from 100ms to 1h, not {0:?}")]
    Step(String),
    #[error("a warm-up lasts at most 1h, not {0:?}")]
    Warmup(String),
    #[error("expected requests per second above 0, such as 2000, not {0:?}")]
    Rate(String),
    #[error("expected a list of requests per second such as 2000,3000,5000, not {0:?}")]
    StepRate(String),
    #[error("expected FROM:TO in requests per second, such as 100:5000, not {0:?}")]
    Ramp(String),
    #[error("expected a number of connections from 1 to {most}, not {0:?}", most = crate::prepare::MAX_CONNECTIONS)]
    Connections(String),
    #[error("expected a number of threads from 1 to {most}, not {0:?}", most = crate::prepare::MAX_THREADS)]
    Threads(String),
    #[error("expected I/N with 0 <= I < N, such as 0/2, not {0:?}")]
    Shard(String),
    #[error("expected an RFC 3339 time such as 2026-11-21T10:00:00Z, not {0:?}")]
    Time(String),
    #[error("expected a number of requests above 0, not {0:?}")]
    Count(String),
    #[error("'{0}' is not a number of searches: give 1 to 100")]
    Searches(String),
    /// An SLO term that does not parse: why, then the grammar.
    #[error("{}; {}", .0.why, analysis::capacity::slo::GRAMMAR)]
    Slo(analysis::capacity::slo::SloError),
    /// A term of the server's own figures given to a search.
    #[error(transparent)]
    ServerTerm(#[from] analysis::capacity::slo::ServerTerm),
    /// A percentile a run does not keep.
    #[error("a run keeps p50, p90, p95, p99 and p99.9, not p{0}: bound one of those (a search, `loadgen capacity`, judges any)")]
    Percentile(f64),
    #[error("{0:?} is not a UUID")]
    RunId(String),
}

/// `NAME=FILE` of `--probe-token-file`.
fn token_file_arg(text: &str) -> Result<(String, PathBuf), FlagValueError> {
    match text.split_once('=') {
        Some((name, file)) if !name.is_empty() && !file.is_empty() => {
            Ok((name.to_string(), PathBuf::from(file)))
        }
        _ => Err(FlagValueError::TokenFile(redact::printable(text))),
    }
}

/// The experiment file and which of its cells.
#[derive(Debug, Clone, Args)]
pub struct CellArgs {
    /// The experiment file (TOML; see experiments/).
    pub file: PathBuf,
    /// Multiply rates, durations and request counts by F, for a quick look (e.g. 0.1).
    #[arg(long, value_name = "F", default_value = "1")]
    pub scale: f64,
    /// Instead of the file's repetitions.
    #[arg(long, value_name = "N")]
    pub repetitions: Option<u32>,
    /// Only the cells with this value, KEY=VALUE (repeatable: values of one KEY are alternatives, different KEYs must all match; KEY an axis, target or repetition).
    #[arg(long = "only", value_name = "KEY=VALUE", value_parser = store::run::parse_label)]
    pub only: Vec<(String, String)>,
    /// Build and run target NAME from its source at git REF (a branch, tag or commit; checked out apart, your repository untouched), instead of the file's ref (repeatable).
    #[arg(long = "ref", value_name = "NAME=REF", value_parser = store::run::parse_label)]
    pub refs: Vec<(String, String)>,
    /// The store.
    #[arg(long, value_name = "URL", env = "SHOWDOWN_DB", hide_env_values = true, default_value = store::DEFAULT_URL)]
    pub db: String,
}

/// What `runs export` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// The load's intervals as an HdrHistogram interval log.
    Hdrlog,
    /// The load's intervals as CSV.
    IntervalsCsv,
    /// The probes' samples as CSV.
    SamplesCsv,
    /// Everything, as one JSON document.
    Json,
}

/// The built-in target, alone.
#[derive(Debug, Clone, Args)]
pub struct TargetArgs {
    /// Address to listen on (port 0 for a free one; the address is printed on standard output).
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: std::net::SocketAddr,
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = parse_duration)]
    pub stall: Duration,
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_duration)]
    pub stall_every: Duration,
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = parse_duration)]
    pub service_time: Duration,
    /// CPU spent per request on the target's only thread (one request at a time): a server
    /// whose capacity is 1 / DURATION requests a second.
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = parse_duration)]
    pub work: Duration,
    /// Serve on two worker threads, each request's --work done holding one lock they share,
    /// the other thread spinning for it (`wait_for_lock`): a server whose lock contention
    /// grows with its load.
    #[arg(long, requires = "work")]
    pub lock: bool,
    /// What --work is made of: spin (arithmetic), chase (dependent loads through 64 MiB, missing
    /// the caches) or syscall (system calls): the references a history's figures are
    /// normalised by (`loadgen history --reference`).
    #[arg(
        long,
        value_name = "KIND",
        value_enum,
        default_value = "spin",
        requires = "work"
    )]
    pub work_kind: WorkKindArg,
}

/// `loadgen selftest`: what this machine can time.
#[derive(Debug, Clone, Args)]
pub struct SelftestArgs {
    /// The store to keep the self-test in: sqlite://PATH or postgres://USER@HOST/DATABASE.
    #[arg(long, value_name = "URL", env = "SHOWDOWN_DB", hide_env_values = true, default_value = store::DEFAULT_URL)]
    pub db: String,

    /// Do not keep the self-test.
    #[arg(long)]
    pub no_store: bool,

    /// How long the coordinated-omission check attacks the freezing server (at least 10 s:
    /// ten freezes).
    #[arg(long, value_name = "DURATION", default_value = "20s", value_parser = parse_duration)]
    pub omission: Duration,

    /// How long each pacing run lasts.
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = parse_duration)]
    pub pacing_step: Duration,

    /// Print as text or as one JSON object.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub output: OutputFormat,
}

/// How to print the summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Text,
    Json,
}

/// Flags that shape how requests are sent, shared by `attack` and `demo`.
#[derive(Debug, Clone, Args)]
pub struct OutputArgs {
    /// Summary format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub output: OutputFormat,

    /// Write the per-interval histograms to FILE as an HdrHistogram interval log.
    #[arg(long, value_name = "FILE")]
    pub hdr_log: Option<PathBuf>,

    /// Length of one interval of the per-interval figures [default: 1s, or 100ms for runs
    /// shorter than 30s, so that their tails' intervals have ten batches to read].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub interval: Option<Duration>,
}

impl OutputArgs {
    /// The interval asked for, or the default for a run of `duration` (unknown: 1 s).
    pub fn interval_for(&self, duration: Option<Duration>) -> Duration {
        self.interval.unwrap_or(match duration {
            Some(d) if d < Duration::from_secs(30) => Duration::from_millis(100),
            _ => Duration::from_secs(1),
        })
    }
}

/// What to send, and how: the request and the connections, shared by `attack` and `capacity`.
#[derive(Debug, Clone, Args)]
#[command(group(ArgGroup::new("what").required(true).args(["url", "targets"])))]
pub struct RequestArgs {
    /// The URL to attack, e.g. http://127.0.0.1:8080/users.
    pub url: Option<String>,

    /// A TOML file of requests with weights, instead of a URL.
    #[arg(long, value_name = "FILE", conflicts_with = "url")]
    pub targets: Option<PathBuf>,

    /// HTTP method.
    #[arg(short = 'm', long)]
    pub method: Option<String>,

    /// A request header, 'Name: value' (repeatable). Or in SHOWDOWN_HEADERS, one per line, to
    /// keep a token off the command line (which every local user can read).
    #[arg(
        short = 'H',
        long = "header",
        value_name = "HEADER",
        env = "SHOWDOWN_HEADERS",
        value_delimiter = '\n',
        hide_env_values = true
    )]
    pub headers: Vec<String>,

    /// Request body; {{seq}}, {{uuid}}, {{hex:N}}, {{unix}}, {{unix_ms}} are filled in per request.
    #[arg(long, conflicts_with = "body_file")]
    pub body: Option<String>,

    /// Read the request body (a template, like --body) from FILE.
    #[arg(long, value_name = "FILE")]
    pub body_file: Option<PathBuf>,

    /// Open loop: the most connections to open, over all threads [default: 10000].
    #[arg(long, value_name = "N", value_parser = parse_connections)]
    pub max_connections: Option<usize>,

    /// Open loop: open N connections before the first request instead of as requests need
    /// them (a first second that opens hundreds at once fills a server's accept queue). A
    /// search's steps open Little's law's count at each rate and its latency bound unless
    /// this is given.
    #[arg(long, value_name = "N", value_parser = parse_connections)]
    pub ready_connections: Option<usize>,

    /// Open loop: release requests in batches every WINDOW instead of each at its own
    /// microsecond; fewer wake-ups, less CPU, each request up to WINDOW late (recorded as
    /// lateness and counted in corrected latency). wrk2 paces this way with 1ms.
    #[arg(long, value_name = "WINDOW", default_value = "0s", value_parser = parse_duration)]
    pub batch: Duration,

    /// Open loop: how requests arrive. uniform: evenly spaced (on the --batch grid when set);
    /// poisson: exponential gaps, each request at its own instant, as independent users send
    /// (the achieved gaps are checked against exponential: "Arrivals" in the summary).
    #[arg(long, value_name = "PROCESS", default_value = "uniform")]
    pub arrival: Process,

    /// Close each connection after one request.
    #[arg(long)]
    pub no_keepalive: bool,

    /// Worker threads, each with its share of the rate [default: the number of CPUs available].
    #[arg(long, value_name = "N", value_parser = parse_threads)]
    pub threads: Option<usize>,

    /// Use HTTP/2 (prior knowledge on http://, ALPN on https://).
    #[arg(long)]
    pub h2: bool,

    /// Accept any TLS certificate (self-signed test servers).
    #[arg(short = 'k', long)]
    pub insecure: bool,

    /// Give up on a request this long after sending it; it counts as an error of kind timeout.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    pub timeout: Duration,
}

#[derive(Debug, Clone, Args)]
#[command(group(ArgGroup::new("load").required(true).args(["rate", "steps", "ramp", "connections"])))]
pub struct AttackArgs {
    #[command(flatten)]
    pub request: RequestArgs,

    /// A term of an SLO the run is judged against on its whole-run figures (repeatable):
    /// p99<=10ms, p99.9<=50ms, mean<=5ms, errors<=0.1%, and the server's own from --probe:
    /// cpu<=70% (of what it may use), throttled<=1%, pss<=512MiB, fds<=10000 (at their most).
    /// Exit 4 when missed, 5 when the run cannot say (the generator was the limit).
    #[arg(long = "slo", value_name = "TERM", value_parser = parse_attack_slo_term)]
    pub slo: Vec<analysis::capacity::Term>,

    /// Open loop at a constant rate (requests per second), with --duration or --requests.
    #[arg(short = 'r', long, value_name = "REQ/S", value_parser = parse_rate)]
    pub rate: Option<f64>,

    /// Open loop in steps: rates one after another on one connection pool, e.g. 2000,3000,5000.
    #[arg(long, value_name = "REQ/S,…", value_delimiter = ',', value_parser = parse_step_rate, requires = "step_duration")]
    pub steps: Vec<f64>,

    /// How long each of --steps lasts.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, requires = "steps")]
    pub step_duration: Option<Duration>,

    /// Open loop with a rate ramping linearly over --duration, e.g. 100:5000.
    #[arg(long, value_name = "FROM:TO", value_parser = parse_ramp, requires = "duration")]
    pub ramp: Option<(f64, f64)>,

    /// Closed loop: this many connections, each sending when its previous request completes.
    #[arg(short = 'c', long, value_name = "N", value_parser = parse_connections, conflicts_with_all = ["max_connections", "ready_connections", "batch"])]
    pub connections: Option<usize>,

    /// How long to attack.
    #[arg(short = 'd', long, value_name = "DURATION", value_parser = parse_duration, conflicts_with = "steps")]
    pub duration: Option<Duration>,

    /// How many requests to send (the run ends at this count or --duration, whichever is first).
    #[arg(short = 'n', long, value_name = "N", value_parser = parse_count)]
    pub requests: Option<u64>,

    /// Stop the run when an interval's p99 send lateness exceeds this.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub max_lateness: Option<Duration>,

    /// After Ctrl-C, how long requests in flight may finish.
    #[arg(long, value_name = "DURATION", default_value = "3s", value_parser = parse_duration)]
    pub grace: Duration,

    #[command(flatten)]
    pub out: OutputArgs,

    #[command(flatten)]
    pub store: StoreArgs,

    #[command(flatten)]
    pub probe: ProbeArgs,

    #[command(flatten)]
    pub shard: ShardArgs,
}

/// `loadgen capacity`: the highest constant rate served within an SLO.
#[derive(Debug, Clone, Args)]
pub struct CapacityArgs {
    #[command(flatten)]
    pub request: RequestArgs,

    /// A term of the SLO every step must meet (repeatable): p99<=10ms, p99.9<=50ms, mean<=5ms,
    /// errors<=0.1% (latencies are corrected: from each request's intended send time).
    #[arg(long = "slo", value_name = "TERM", required = true, value_parser = parse_search_slo_term)]
    pub slo: Vec<analysis::capacity::Term>,

    /// The first rate tried [default: half of what a short closed loop of 16 connections served].
    #[arg(long, value_name = "REQ/S", value_parser = parse_rate)]
    pub start: Option<f64>,

    /// How narrow the coarse bracket (last pass, first fail) gets, as a share of its low end,
    /// before the steps beside the knee begin.
    #[arg(long, value_name = "PERCENT", default_value = "8%", value_parser = order::percent)]
    pub resolution: f64,

    /// The figure is C_p: the highest rate at which a window meets the SLO with probability p
    /// (0.5: one window in two; 0.9: nine in ten). Both are estimated; the search aims at
    /// this one.
    #[arg(long = "p", value_name = "P", default_value = "0.5", value_parser = order::probability)]
    pub p: f64,

    /// The measured window of each step (100ms to 1h).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_step)]
    pub step: Duration,

    /// The load before each step's window, left out of its verdict (at most 1h).
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = parse_warmup)]
    pub warmup: Duration,

    /// Before the first step, the server is held at half the first step's rate until its
    /// median latency stops trending (a JIT, pools and caches warming), at most this long
    /// (0: not warmed; at most 1h).
    #[arg(long, value_name = "DURATION", default_value = "2m", value_parser = parse_warmup)]
    pub settle: Duration,

    /// The lowest rate to try.
    #[arg(long, value_name = "REQ/S", default_value = "1", value_parser = parse_rate)]
    pub min_rate: f64,

    /// The highest rate to try.
    #[arg(long, value_name = "REQ/S", default_value = "1000000", value_parser = parse_rate)]
    pub max_rate: f64,

    /// The most steps to run.
    #[arg(long, value_name = "N", default_value = "30", value_parser = parse_count)]
    pub max_steps: u64,

    /// Repeat the search up to N times (each after the first starting near the figure so far),
    /// their steps pooled into one estimate, until its 95 % interval is within --until.
    #[arg(long, value_name = "N", default_value = "1", value_parser = parse_searches)]
    pub searches: u32,

    /// Stop once C_p's 95 % interval is within ± this share of it.
    #[arg(long, value_name = "PERCENT", default_value = "5%", value_parser = order::percent)]
    pub until: f64,

    /// Start no new step after this long (e.g. 5m): the search then says what it reached.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub budget: Option<Duration>,

    /// Compare with another target (repeatable): its origin (http://host:port), sent the same
    /// requests. The searches run interleaved, one step of each per round in a random order,
    /// and each is compared with the first by the ratio of their figures (95 % interval over
    /// rounds). The first target given again is an A/A control. --probe watches the first
    /// target only: the others' steps are kept without a probe's diagnosis.
    #[arg(long, value_name = "ORIGIN", value_parser = parse_origin, conflicts_with = "searches")]
    pub against: Vec<String>,

    /// After the search, check its figure: N blocks of one step at each of five rates fixed
    /// before the first block, the two ends of C_0.5's 95 % interval and C_0.75, C_0.5 and
    /// C_0.25 of its fitted curve (each block in a seeded random order), then the search
    /// again. Says
    /// whether the server passed as often as the fit says (and which way not), on the search's
    /// page too. 30 blocks tell a figure 5 % off at a knee 10 % wide.
    #[arg(long, value_name = "N", default_value = "0", value_parser = parse_check, conflicts_with_all = ["searches", "against"])]
    pub check: u32,

    /// The rounds of a comparison (--against): one step of every target each (with
    /// --sequential, the most it may run).
    #[arg(long, value_name = "N", default_value = "16", value_parser = parse_rounds, requires = "against")]
    pub rounds: u32,

    /// Read a comparison (--against) at 8, 16, 32, … rounds up to --rounds, and stop at the
    /// first look where every ratio is decided: its interval excludes 1, or lies within
    /// ± --until of it. Each look's intervals are read at 1 − 5 % ÷ (the looks), so the answer
    /// holds 95 % however the rounds stopped.
    #[arg(long, requires = "against")]
    pub sequential: bool,

    /// The targets are processes of one build (an A/A comparison): its ratios are kept as
    /// such, and every comparison kept later under the same --experiment reads from them how
    /// much two processes of one build differ, and allows for it in its intervals (from 3 of
    /// them kept; without, it says its intervals hold for its processes only). Needs
    /// --experiment: the name its A/A comparisons are read under.
    #[arg(long, requires_all = ["against", "experiment"])]
    pub same_build: bool,

    /// Summary format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub output: OutputFormat,

    #[command(flatten)]
    pub store: StoreArgs,

    #[command(flatten)]
    pub probe: ProbeArgs,

    #[command(flatten)]
    pub guns: GunsArgs,
}

/// An origin for --against: http(s)://host[:port], no path beyond "/", no query.
fn parse_origin(text: &str) -> Result<String, FlagValueError> {
    let uri: http::Uri = text
        .parse()
        .map_err(|_| FlagValueError::NotAUrl(text.to_string()))?;
    let scheme = uri.scheme_str().unwrap_or_default();
    if !matches!(scheme, "http" | "https") || uri.host().is_none() {
        return Err(FlagValueError::NotAnOrigin(text.to_string()));
    }
    if uri.path() != "/" || uri.query().is_some() {
        return Err(FlagValueError::OriginPath(text.to_string()));
    }
    Ok(text.trim_end_matches('/').to_string())
}

fn parse_check(text: &str) -> Result<u32, FlagValueError> {
    let most = analysis::capacity::check::MAX_BLOCKS;
    match text.parse::<u32>() {
        Ok(n) if n == 0 || (4..=most).contains(&n) => Ok(n),
        _ => Err(FlagValueError::Check {
            text: text.to_string(),
            most,
        }),
    }
}

fn parse_rounds(text: &str) -> Result<u32, FlagValueError> {
    match text.parse::<u32>() {
        Ok(n) if (order::MIN_ROUNDS..=1_000).contains(&n) => Ok(n),
        _ => Err(FlagValueError::Rounds),
    }
}

/// Gun hosts over SSH that fire every step together (docs/guns.md).
#[derive(Debug, Clone, Default, Args)]
pub struct GunsArgs {
    /// A gun host, by SSH destination (user@host, or a Host of your SSH config); repeatable.
    /// Every step is split across the guns and judged on their merged histograms.
    #[arg(long = "gun", value_name = "DESTINATION", conflicts_with = "guns_from")]
    pub guns: Vec<String>,
    /// The guns of a lab instead: `terraform` (its outputs) or `twin` (scripts/twin.sh); or
    /// `kubernetes`: the pods of a Job this command renders, as --kubernetes says.
    #[arg(long, value_name = "SOURCE", value_parser = parse_gun_source, requires_if("kubernetes", "kubernetes"))]
    pub guns_from: Option<GunsFrom>,
    /// With --guns-from kubernetes: the Job, as `[guns] kubernetes` writes it, comma-separated:
    /// count=3,image=IMAGE,listen=HOST:PORT[,advertise=HOST:PORT][,namespace=NS][,job=NAME]
    /// [,cpus=N][,memory=1Gi][,manifest=FILE][,wait=5m][,apply] (docs/guns.md).
    #[arg(long, value_name = "FIELDS", value_parser = parse_kubernetes)]
    pub kubernetes: Option<order::Kubernetes>,
    /// With --guns-from terraform: the lab's directory [default: terraform].
    #[arg(long, value_name = "DIR")]
    pub terraform_dir: Option<PathBuf>,
    /// `ssh -F`: an SSH config instead of yours.
    #[arg(long, value_name = "FILE")]
    pub ssh_config: Option<PathBuf>,
    /// The CPUs each gun's generator is held to (taskset on the gun).
    #[arg(long, value_name = "LIST")]
    pub gun_cpus: Option<probe::cpus::CpuList>,
    /// Threads of each gun's generator.
    #[arg(long, value_name = "N")]
    pub gun_threads: Option<u32>,
    /// loadgen on the guns [default: this build, copied when theirs differs].
    #[arg(long, value_name = "PATH")]
    pub gun_loadgen: Option<String>,
    /// A file on each gun that sets SHOWDOWN_DB (the lab's: /etc/showdown/store.env).
    #[arg(long, value_name = "FILE")]
    pub gun_store_env: Option<String>,
}

impl GunsArgs {
    /// The guns these flags name, if any.
    pub fn guns(&self) -> Option<order::Guns> {
        (!self.guns.is_empty() || self.guns_from.is_some()).then(|| order::Guns {
            hosts: match (self.guns_from, &self.kubernetes) {
                (Some(GunsFrom::Kubernetes), Some(k)) => order::GunHosts::Kubernetes(k.clone()),
                (from, _) => order::GunHosts::Ssh {
                    destinations: self.guns.clone(),
                    config: self.ssh_config.as_ref().map(|p| p.display().to_string()),
                    from: match from {
                        Some(GunsFrom::Lab(lab)) => Some(lab),
                        _ => None,
                    },
                    terraform_dir: self.terraform_dir.as_ref().map(|p| p.display().to_string()),
                },
            },
            cpus: self.gun_cpus.as_ref().map(ToString::to_string),
            threads: self.gun_threads,
            loadgen: self.gun_loadgen.clone(),
            store_env_file: self.gun_store_env.clone(),
            clock_tolerance_ns: None,
        })
    }
}

/// Where `--guns-from` finds the guns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GunsFrom {
    Lab(order::Lab),
    Kubernetes,
}

fn parse_gun_source(text: &str) -> Result<GunsFrom, FlagValueError> {
    match text {
        "terraform" => Ok(GunsFrom::Lab(order::Lab::Terraform)),
        "twin" => Ok(GunsFrom::Lab(order::Lab::Twin)),
        "kubernetes" => Ok(GunsFrom::Kubernetes),
        _ => Err(FlagValueError::GunSource(text.to_string())),
    }
}

/// `--kubernetes count=3,image=…,listen=…,apply`: the fields of `[guns] kubernetes`, read by
/// the order's own serde, so each field is named once, there (an unknown one is refused with
/// the list of those it knows). A value that is a whole number is an integer, `true` or
/// `false` a boolean, anything else text; a field alone (`apply`, or `apply=`) is `true`.
fn parse_kubernetes(text: &str) -> Result<order::Kubernetes, FlagValueError> {
    let mut fields = toml::Table::new();
    for field in text.split(',').map(str::trim).filter(|f| !f.is_empty()) {
        let (key, value) = match field.split_once('=') {
            // A field alone, or with nothing after its `=` (`apply`, `apply=`), is `true`.
            None => (field, toml::Value::Boolean(true)),
            Some((key, "")) => (key, toml::Value::Boolean(true)),
            Some((key, value)) => (key, kubernetes_value(value)),
        };
        fields.insert(key.to_string(), value);
    }
    let k = <order::Kubernetes as serde::Deserialize>::deserialize(toml::Value::Table(fields))
        .map_err(FlagValueError::KubernetesFields)?;
    fleet::kubernetes::check(&k).map_err(FlagValueError::Kubernetes)?;
    Ok(k)
}

/// serde's message, on one line (toml puts the field it was reading on a line of its own).
fn one_line(error: &toml::de::Error) -> String {
    error.to_string().lines().collect::<Vec<_>>().join(" ")
}

/// One `key=value` of `--kubernetes` as TOML would type it: a whole number, a boolean, or text.
fn kubernetes_value(value: &str) -> toml::Value {
    if let Ok(n) = value.parse::<i64>() {
        return toml::Value::Integer(n);
    }
    match value {
        "true" => toml::Value::Boolean(true),
        "false" => toml::Value::Boolean(false),
        text => toml::Value::String(text.to_string()),
    }
}

#[derive(Debug, Clone, Args)]
pub struct DemoArgs {
    /// Open-loop rate against the built-in target.
    #[arg(short = 'r', long, value_name = "REQ/S", default_value = "2000", value_parser = parse_rate)]
    pub rate: f64,

    /// The probe also samples the target's on-CPU call stacks: the run's page gets a flame
    /// graph (needs root, CAP_PERFMON or kernel.perf_event_paranoid <= 0).
    #[arg(long)]
    pub profile: bool,

    /// How long to attack.
    #[arg(short = 'd', long, value_name = "DURATION", default_value = "5s", value_parser = parse_duration)]
    pub duration: Duration,

    /// How long each freeze of the target lasts (0 for none).
    #[arg(long, value_name = "DURATION", default_value = "100ms", value_parser = parse_duration)]
    pub stall: Duration,

    /// Time between the starts of two freezes.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_duration)]
    pub stall_every: Duration,

    /// Time the target takes per request when not frozen.
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = parse_duration)]
    pub service_time: Duration,

    /// Connections the generator may open: a small fixed pool, as wrk or hey use.
    #[arg(long, value_name = "N", default_value = "8", value_parser = parse_connections)]
    pub max_connections: usize,

    /// Worker threads of the generator.
    #[arg(long, value_name = "N", default_value = "1", value_parser = parse_threads)]
    pub threads: usize,

    #[command(flatten)]
    pub out: OutputArgs,

    #[command(flatten)]
    pub store: StoreArgs,
}

fn parse_duration(text: &str) -> Result<Duration, FlagValueError> {
    humantime::parse_duration(text).map_err(|_| FlagValueError::Duration(text.to_string()))
}

/// The longest step or warm-up of a capacity search: longer ones are a typo (and a step is
/// doubled when uncertain, which must not overflow).
pub const MAX_STEP: Duration = Duration::from_secs(3600);

fn parse_step(text: &str) -> Result<Duration, FlagValueError> {
    let d = parse_duration(text)?;
    if d < Duration::from_millis(100) || d > MAX_STEP {
        return Err(FlagValueError::Step(text.to_string()));
    }
    Ok(d)
}

fn parse_warmup(text: &str) -> Result<Duration, FlagValueError> {
    let d = parse_duration(text)?;
    if d > MAX_STEP {
        return Err(FlagValueError::Warmup(text.to_string()));
    }
    Ok(d)
}

fn parse_rate(text: &str) -> Result<f64, FlagValueError> {
    match text.trim().parse::<f64>() {
        Ok(r) if r.is_finite() && r > 0.0 => Ok(r),
        _ => Err(FlagValueError::Rate(text.to_string())),
    }
}

fn parse_step_rate(text: &str) -> Result<f64, FlagValueError> {
    match text.trim().parse::<f64>() {
        Ok(r) if r.is_finite() && r >= 0.0 => Ok(r),
        _ => Err(FlagValueError::StepRate(text.to_string())),
    }
}

fn parse_ramp(text: &str) -> Result<(f64, f64), FlagValueError> {
    let bad = || FlagValueError::Ramp(text.to_string());
    let (from, to) = text.split_once(':').ok_or_else(bad)?;
    let from: f64 = from.trim().parse().map_err(|_| bad())?;
    let to: f64 = to.trim().parse().map_err(|_| bad())?;
    if !(from.is_finite() && to.is_finite()) || from < 0.0 || to < 0.0 || from + to <= 0.0 {
        return Err(bad());
    }
    Ok((from, to))
}

fn parse_connections(text: &str) -> Result<usize, FlagValueError> {
    use crate::prepare::MAX_CONNECTIONS;
    match text.trim().parse::<usize>() {
        Ok(n) if n >= 1 && n as u64 <= MAX_CONNECTIONS => Ok(n),
        _ => Err(FlagValueError::Connections(text.to_string())),
    }
}

fn parse_threads(text: &str) -> Result<usize, FlagValueError> {
    use crate::prepare::MAX_THREADS;
    match text.trim().parse::<usize>() {
        Ok(n) if n >= 1 && n as u64 <= MAX_THREADS => Ok(n),
        _ => Err(FlagValueError::Threads(text.to_string())),
    }
}

fn parse_shard(text: &str) -> Result<(u32, u32), FlagValueError> {
    let bad = || FlagValueError::Shard(text.to_string());
    let (i, n) = text.split_once('/').ok_or_else(bad)?;
    let (i, n): (u32, u32) = (
        i.trim().parse().map_err(|_| bad())?,
        n.trim().parse().map_err(|_| bad())?,
    );
    if n == 0 || i >= n {
        return Err(bad());
    }
    Ok((i, n))
}

fn parse_time(text: &str) -> Result<std::time::SystemTime, FlagValueError> {
    humantime::parse_rfc3339_weak(text.trim()).map_err(|_| FlagValueError::Time(text.to_string()))
}

fn parse_count(text: &str) -> Result<u64, FlagValueError> {
    match text.trim().parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(FlagValueError::Count(text.to_string())),
    }
}

pub use crate::prepare::{default_threads, DEFAULT_MAX_CONNECTIONS};

impl RequestArgs {
    /// The requests these flags send: a URL's, or a targets file's (read now, bodies too).
    pub fn requests(&self) -> Result<order::Requests, Error> {
        let options = RequestOptions {
            method: self.method.clone(),
            headers: Vec::new(),
            body: self.body.clone(),
            body_file: self.body_file.clone(),
        };
        let entries = match (&self.url, &self.targets) {
            (_, Some(file)) => request::read_targets(file, self.method.as_deref())?,
            (Some(url), None) => vec![request::one_request(url, &options)?],
            (None, None) => return Err(UsageError::NoRequests.into()),
        };
        Ok(order::Requests {
            entries,
            headers: self.headers.iter().cloned().map(order::Secret).collect(),
        })
    }

    /// How they are sent.
    pub fn pacing(&self) -> order::Pacing {
        order::Pacing {
            threads: self.threads.map(|t| t as u32),
            max_connections: self.max_connections.map(|c| c as u64),
            ready_connections: self.ready_connections.map(|c| c as u64),
            batch_ns: order::nanos(self.batch),
            arrival: self.arrival,
            keepalive: !self.no_keepalive,
            h2: self.h2,
            insecure: self.insecure,
            timeout_ns: order::nanos(self.timeout),
        }
    }

    /// What the run is called by default: its URL, or its targets file.
    pub fn target(&self) -> String {
        match (&self.url, &self.targets) {
            (Some(url), _) => url.clone(),
            (None, Some(file)) => file.display().to_string(),
            (None, None) => String::new(),
        }
    }
}

impl AttackArgs {
    /// The order these flags give.
    pub fn order(&self) -> Result<order::Order, Error> {
        let load = if let Some(connections) = self.connections {
            order::Load::Closed {
                connections: connections as u64,
                requests: self.requests,
                duration_ns: self.duration.map(order::nanos),
            }
        } else {
            let schedule = if let Some(rate) = self.rate {
                order::Schedule::Constant {
                    rate,
                    duration_ns: self.duration.map(order::nanos),
                }
            } else if let Some((from, to)) = self.ramp {
                let duration = self.duration.ok_or(UsageError::RampNeedsDuration)?;
                order::Schedule::Ramp {
                    from,
                    to,
                    duration_ns: order::nanos(duration),
                }
            } else {
                let Some(step) = self.step_duration else {
                    return Err(UsageError::StepsNeedStepDuration.into());
                };
                order::Schedule::Steps {
                    rates: self.steps.clone(),
                    each_ns: order::nanos(step),
                }
            };
            order::Load::Open {
                schedule,
                requests: self.requests,
            }
        };
        Ok(order::Order {
            version: order::VERSION,
            work: order::Work::Attack(order::Attack {
                load,
                interval_ns: order::nanos(self.out.interval_for(self.duration)),
                grace_ns: order::nanos(self.grace),
                max_lateness_ns: self.max_lateness.map(order::nanos),
                start_at_ns: self.shard.start_at.map(crate::prepare::unix_ns),
                slo: self.slo.clone(),
            }),
            requests: self.request.requests()?,
            pacing: self.request.pacing(),
            keeping: self.store.order_keeping(),
            probes: self.probe.probes()?,
            shard: self.shard.shard(),
        })
    }

    /// Checks the flags together and builds the plan.
    pub fn plan(&self) -> Result<AttackPlan, Error> {
        let order = self.order()?;
        match &order.work {
            order::Work::Attack(attack) => crate::prepare::attack(&order, attack),
            order::Work::Search(_) => Err(crate::prepare::Refusal::NotAnAttack.into()),
        }
    }

    /// How the run is kept and watched.
    pub fn keeping(&self, command_line: &[String]) -> Result<Keeping, Error> {
        let mut keeping = crate::prepare::keeping(&self.order()?, command_line)?;
        keeping.hdr_log = self.out.hdr_log.clone();
        Ok(keeping)
    }
}

impl CapacityArgs {
    /// The order these flags give.
    pub fn order(&self) -> Result<order::Order, Error> {
        if self.min_rate > self.max_rate {
            return Err(crate::prepare::Refusal::RateRange.into());
        }
        Ok(order::Order {
            version: order::VERSION,
            work: order::Work::Search(Box::new(order::Search {
                slo: self.slo.clone(),
                start: self.start,
                resolution: self.resolution,
                p: self.p,
                step_ns: order::nanos(self.step),
                warmup_ns: order::nanos(self.warmup),
                settle_ns: order::nanos(self.settle),
                min_rate: self.min_rate,
                max_rate: self.max_rate,
                max_steps: self.max_steps,
                searches: self.searches,
                until: self.until,
                budget_ns: self.budget.map(order::nanos),
                guns: self.guns.guns(),
                against: self.against.iter().map(order::Against::at).collect(),
                rounds: self.rounds,
                sequential: self.sequential,
                check: self.check,
            })),
            requests: self.request.requests()?,
            pacing: self.request.pacing(),
            keeping: self.store.order_keeping(),
            probes: self.probe.probes()?,
            shard: None,
        })
    }
}

impl ProbeArgs {
    /// The probes these flags name, their token and certificate read now; `None` without one.
    pub fn probes(&self) -> Result<Option<order::Probes>, Error> {
        crate::prepare::check_probe_trust(
            self.probe_token_file.is_some(),
            self.probe_fingerprint.is_some() || self.probe_ca.is_some(),
        )?;
        let probes = order::Probes::read(order::ProbesAt {
            addresses: &self.probes,
            token_file: self.probe_token_file.as_deref(),
            fingerprint: self.probe_fingerprint.as_deref(),
            ca: self.probe_ca.as_deref(),
        })
        .map_err(|e| match e {
            order::ProbesError::Token(e) => Error::TokenFile(probe::Error::from(e)),
            order::ProbesError::Ca { path, error } => Error::ProbeCa {
                path,
                source: error,
            },
        })?;
        Ok(probes.map(|p| order::Probes {
            pre_roll_ns: order::nanos(self.pre_roll),
            post_roll_ns: order::nanos(self.post_roll),
            profile: self.profile,
            ..p
        }))
    }
}

impl ShardArgs {
    /// This gun's part of a run group, when the flags name one.
    pub fn shard(&self) -> Option<order::Shard> {
        match (&self.run_group, self.shard) {
            (Some(group), Some((index, count))) => Some(order::Shard {
                group: group.clone(),
                index,
                count,
            }),
            _ => None,
        }
    }
}

fn parse_searches(text: &str) -> Result<u32, FlagValueError> {
    match text.parse::<u32>() {
        Ok(n) if (1..=100).contains(&n) => Ok(n),
        _ => Err(FlagValueError::Searches(text.to_string())),
    }
}

fn parse_slo_term(text: &str) -> Result<analysis::capacity::Term, FlagValueError> {
    text.parse().map_err(FlagValueError::Slo)
}

/// A term a search's steps can judge: a latency or the errors, not the server's own figures.
fn parse_search_slo_term(text: &str) -> Result<analysis::capacity::Term, FlagValueError> {
    let term = parse_slo_term(text)?;
    analysis::capacity::slo::search_term(&term)?;
    Ok(term)
}

/// A term `attack` can judge: its figure among those a run keeps (p50, p90, p95, p99, p99.9,
/// mean, errors).
fn parse_attack_slo_term(text: &str) -> Result<analysis::capacity::Term, FlagValueError> {
    let term = parse_slo_term(text)?;
    match term.figure {
        analysis::capacity::slo::Figure::Percentile(q)
            if ![50.0, 90.0, 95.0, 99.0, 99.9]
                .iter()
                .any(|k| (k - q).abs() < 1e-9) =>
        {
            Err(FlagValueError::Percentile(q))
        }
        _ => Ok(term),
    }
}

fn parse_run_id(text: &str) -> Result<String, FlagValueError> {
    uuid::Uuid::parse_str(text)
        .map(|u| u.hyphenated().to_string())
        .map_err(|_| FlagValueError::RunId(text.to_string()))
}

impl StoreArgs {
    /// Where and under what name the run is kept, as an order says it.
    pub fn order_keeping(&self) -> order::Keeping {
        order::Keeping {
            store: (!self.no_store).then(|| order::StoreAt::Url {
                url: order::Secret(self.db.clone()),
            }),
            name: self.name.clone(),
            experiment: self.experiment.clone(),
            run_id: self.run_id.clone(),
            labels: self.labels.iter().cloned().collect(),
        }
    }

    /// Where and under what name the run is kept (the demo's, which runs no order).
    pub fn keeping(&self, command_line: &[String]) -> Result<Keeping, Error> {
        Ok(Keeping {
            store_url: (!self.no_store).then(|| self.db.clone()),
            name: self.name.clone(),
            experiment: self.experiment.clone(),
            run_id: self.run_id.clone(),
            labels: self.labels.iter().cloned().collect(),
            command_line: redact::command_line(command_line),
            ..Default::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::attack::Load;

    /// The redaction reads loadgen's command lines with `redact::LOADGEN`: it must know every
    /// short flag that takes a value, or `-kX secret` would be read as flags.
    #[test]
    fn the_redaction_knows_every_short_flag_that_takes_a_value() {
        use clap::CommandFactory;
        fn walk(command: &clap::Command, shorts: &mut Vec<char>, headers: &mut Vec<String>) {
            for arg in command.get_arguments() {
                let takes_value = arg.get_num_args().is_some_and(|n| n.takes_values())
                    || arg.get_action().takes_values();
                if let (Some(c), true) = (arg.get_short(), takes_value) {
                    shorts.push(c);
                }
                if arg.get_id() == "headers" {
                    headers.extend(arg.get_long().map(str::to_string));
                }
            }
            for sub in command.get_subcommands() {
                walk(sub, shorts, headers);
            }
        }
        let (mut shorts, mut headers) = (Vec::new(), Vec::new());
        walk(&Cli::command(), &mut shorts, &mut headers);
        shorts.sort_unstable();
        shorts.dedup();
        headers.sort_unstable();
        headers.dedup();
        let mut known = redact::LOADGEN.short_values.to_vec();
        known.sort_unstable();
        assert_eq!(shorts, known, "redact::LOADGEN.short_values is out of date");
        assert_eq!(
            headers,
            redact::LOADGEN.long_headers,
            "the header flag's long name"
        );
    }

    /// The plan, or what the user is told (clap's error in its one line, or the plan's).
    fn parse(args: &[&str]) -> Result<AttackPlan, Box<dyn std::error::Error>> {
        let mut argv = vec!["loadgen", "attack"];
        argv.extend_from_slice(args);
        let cli = Cli::try_parse_from(argv).map_err(|e| probe::cli::one_line(&e, "loadgen"))?;
        match cli.command {
            Command::Attack(a) => Ok(a.plan()?),
            _ => Err("not an attack".into()),
        }
    }

    const URL: &str = "http://127.0.0.1:1/x";

    #[test]
    fn the_seed_experiments_parse() {
        let p = parse(&[
            "--rate",
            "3000",
            "--duration",
            "30s",
            "-m",
            "POST",
            "--body",
            "{}",
            URL,
        ])
        .unwrap();
        assert!(
            matches!(&p.load, Load::Open { schedule, .. } if schedule.total_requests() == Some(90_000))
        );
        let p = parse(&["--steps", "2000,3000,5000", "--step-duration", "30s", URL]).unwrap();
        assert!(
            matches!(&p.load, Load::Open { schedule, .. } if schedule.total_requests() == Some(300_000))
        );
        let p = parse(&["-c", "100", "-n", "200000", URL]).unwrap();
        assert!(matches!(
            p.load,
            Load::Closed {
                connections: 100,
                requests: Some(200_000),
                ..
            }
        ));
        let p = parse(&["--ramp", "0:1000", "-d", "10s", URL]).unwrap();
        assert!(
            matches!(&p.load, Load::Open { schedule, .. } if schedule.total_requests() == Some(5000))
        );
    }

    #[test]
    fn mistakes_are_one_line_naming_the_fix() {
        let cases: &[(&[&str], &str)] = &[
            (&["--rate", "abc", "-d", "1s", URL], "--rate"),
            (&["--rate", "0", "-d", "1s", URL], "above 0"),
            (&["--rate", "10", URL], "--duration"),
            (&["-c", "10", URL], "--requests"),
            (
                &["--rate", "10", "-c", "5", "-n", "1", URL],
                "cannot be used",
            ),
            (&["-d", "1s", URL], "--rate"),
            (&["--rate", "10", "-d", "forever", URL], "duration such as"),
            (&["--steps", "1,2", URL], "--step-duration"),
            (&["--ramp", "5", "-d", "1s", URL], "FROM:TO"),
            (&["--rate", "10", "-d", "1s", "ftp://x"], "http://"),
            (
                &["--rate", "10", "-d", "1s", "-H", "bad", URL],
                "Name: value",
            ),
            (
                &["--rate", "10", "-d", "1s", "--body", "{{nope}}", URL],
                "{{seq}}",
            ),
            (
                &["--rate", "10", "-d", "1s", "--threads", "0", URL],
                "threads",
            ),
            (&["--rate", "10", "-d", "1s"], "URL"),
        ];
        for (args, needle) in cases {
            let e = parse(args).unwrap_err().to_string();
            assert!(!e.contains('\n'), "{args:?} gave a multi-line error: {e}");
            assert!(
                e.to_lowercase().contains(&needle.to_lowercase()),
                "{args:?}: {e:?} does not mention {needle:?}"
            );
        }
    }

    /// `--kubernetes` reads the fields of `[guns] kubernetes` by the order's own serde: the
    /// docs' example, a duration for `wait`, `apply` alone; an unknown field is named with
    /// those it knows, a wrong value with its field, in one line.
    #[test]
    fn the_kubernetes_flag_reads_the_orders_own_fields() {
        let k = parse_kubernetes(
            "count=3,image=registry.example/showdown/loadgen:0.2.0,listen=0.0.0.0:7411,advertise=203.0.113.9:7411,cpus=4,memory=2Gi,wait=90s,apply",
        )
        .unwrap();
        assert_eq!(
            (k.count, k.cpus, k.memory.as_deref(), k.wait_ns, k.apply),
            (3, Some(4), Some("2Gi"), Some(90_000_000_000), true)
        );
        assert_eq!(k.image, "registry.example/showdown/loadgen:0.2.0");
        assert_eq!(k.advertise.as_deref(), Some("203.0.113.9:7411"));
        let k = parse_kubernetes("count=1,image=i,listen=h:1,apply=false").unwrap();
        assert!(!k.apply && k.wait_ns.is_none());
        let k = parse_kubernetes("count=1,image=i,listen=h:1,apply=,memory=1073741824").unwrap();
        assert!(k.apply);
        assert_eq!(k.memory.as_deref(), Some("1073741824"));
        for (text, says) in [
            (
                "count=3,image=i,listen=h:1,token=x",
                "unknown field `token`",
            ),
            ("count=3,image=i,listen=h:1,token=x", "`wait`"),
            ("count=three,image=i,listen=h:1", "count"),
            ("count=3,image=i,listen=h:1,wait=soon", "is not a duration"),
            ("count=3,image=i,listen=h:1,wait=300", "under a second"),
            ("count=3,image=i,listen=h:1,memory=-5", "a quantity such as"),
            ("image=i,listen=h:1", "missing field `count`"),
            ("count=0,image=i,listen=h:1", "count must be 1 to"),
            ("count=3,image=i,listen=h", "is not host:port"),
        ] {
            let e = parse_kubernetes(text).unwrap_err().to_string();
            assert!(e.contains(says), "{text}: {e}");
            assert!(!e.contains('\n'), "{text}: {e}");
        }
    }
}
