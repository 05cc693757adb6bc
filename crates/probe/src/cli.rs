//! The command line: `probe serve | record | top`, and the checks that turn it into a
//! [`SamplerConfig`]. Every mistake is one line naming the flag to fix.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgGroup, Args, Parser, Subcommand};

use crate::collect::ProcRoot;
use crate::error::Error;
use crate::record::Format;
use crate::sampler::{SamplerConfig, MAX_INTERVAL, MIN_INTERVAL};
use crate::selector::Selector;

/// Showdown's probe: samples a process tree from /proc and streams it to load generators.
#[derive(Debug, Parser)]
#[command(name = "probe", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Sample the target and stream the samples to subscribers over TCP (the service).
    Serve(Box<ServeArgs>),
    /// Sample the target into a CSV or JSON-lines file.
    Record(RecordArgs),
    /// Show the target live in the terminal (sampling here, or from a probe with --connect).
    Top(TopArgs),
    /// Measure what a wake-up costs on the CPUs this runs on, now (pin it beside a target with
    /// taskset): one JSON line every --every, for --duration.
    Canary(CanaryArgs),
}

/// `probe canary`: the wake-up canary (`probe::canary`) read at a fixed interval.
#[derive(Debug, Clone, Args)]
pub struct CanaryArgs {
    /// How long to run (it stops by itself).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "60s")]
    pub duration: Duration,

    /// How often to print what the exchanges since the last line cost (10ms at least).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "100ms")]
    pub every: Duration,
}

/// Which process to watch, and how.
#[derive(Debug, Clone, Args)]
#[command(group(ArgGroup::new("selector").multiple(false).args(["pid", "pidfile", "name", "port"])))]
pub struct TargetArgs {
    /// Watch this PID.
    #[arg(long, value_name = "PID")]
    pub pid: Option<i32>,

    /// Watch the PID written in this file (re-read when the process exits).
    #[arg(long, value_name = "FILE")]
    pub pidfile: Option<PathBuf>,

    /// Watch the process whose name or command line matches this regular expression.
    #[arg(long, value_name = "REGEX")]
    pub name: Option<String>,

    /// Watch the process listening on this TCP port.
    #[arg(long, value_name = "PORT")]
    pub port: Option<u16>,

    /// Watch the target alone, not the process tree under it.
    #[arg(long)]
    pub no_tree: bool,

    /// Time between samples, from 10ms to 60s.
    #[arg(long, value_name = "DURATION", default_value = "100ms", value_parser = parse_duration)]
    pub interval: Duration,

    /// The costly figures (FD kinds, sockets, context switches, peak RSS) at most this often.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_duration)]
    pub slow_interval: Duration,

    /// The costly figures may use at most this share of one core, in percent.
    #[arg(long, value_name = "PERCENT", default_value = "0.5", value_parser = parse_budget)]
    pub slow_budget: f64,

    /// Also measure PSS and USS (smaps_rollup; costly, on the slow schedule).
    #[arg(long)]
    pub pss: bool,

    /// Also measure what a wake-up costs on the target's CPUs (the wake-up canary, 1.5 % of one
    /// of them): `wake_ns` in the host's figures (every 100 ms at most).
    #[arg(long)]
    pub canary: bool,

    /// Also sample the tree's on-CPU call stacks (perf_event_open's cpu-clock event, kernel and
    /// user frames), named here and sent as a profile a second. Needs CAP_PERFMON or
    /// kernel.perf_event_paranoid <= 0; without them, one line and the samples go on.
    #[arg(long)]
    pub profile: bool,

    /// Stacks sampled a second on each CPU with --profile, from 1 to 1000.
    #[arg(long, value_name = "HZ", default_value_t = crate::profile::DEFAULT_HZ,
          value_parser = clap::value_parser!(u32).range(1..=1000), requires = "profile")]
    pub profile_hz: u32,

    /// Which participant the watched process is: target (the server under test), database,
    /// or other (a proxy, a cache); pages draw each as its own group.
    #[arg(long, value_name = "ROLE", default_value = "target")]
    pub role: crate::sample::Role,

    /// The participant's name on pages (e.g. PostgreSQL), if not the process's own.
    #[arg(long, value_name = "NAME")]
    pub called: Option<String>,

    /// Where /proc is (tests point this at fixture trees).
    #[arg(long, value_name = "DIR", default_value = "/proc", hide = true)]
    pub proc_root: PathBuf,
}

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub target: TargetArgs,

    /// Address to listen on. Beyond loopback, TLS and --token-file are required.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7700")]
    pub listen: SocketAddr,

    /// A file holding the token subscribers must present.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,

    /// TLS with this certificate (PEM; the chain, the probe's own first).
    #[arg(
        long,
        value_name = "FILE",
        requires = "tls_key",
        conflicts_with = "tls_generate"
    )]
    pub tls_cert: Option<PathBuf>,

    /// The private key of --tls-cert (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,

    /// TLS with a self-signed certificate kept in DIR (probe.crt, probe.key): made on first
    /// start, reused after; its SHA-256 fingerprint is printed for subscribers to pin.
    #[arg(long, value_name = "DIR")]
    pub tls_generate: Option<PathBuf>,

    /// A name or address the generated certificate is for, besides localhost, the loopback
    /// addresses, this host's name and the --listen address (repeatable; for --probe-ca users).
    #[arg(long = "tls-name", value_name = "NAME", requires = "tls_generate")]
    pub tls_names: Vec<String>,

    /// The most subscribers served at once.
    #[arg(long, value_name = "N", default_value = "16")]
    pub max_subscribers: usize,

    /// The most connections waiting to authenticate (TLS handshake, hello, a wrong token's
    /// delayed refusal); 8 at most from one address. They take no subscriber's slot.
    #[arg(long, value_name = "N", default_value = "64")]
    pub max_pending: usize,

    /// How much history to keep for subscribers that reconnect.
    #[arg(long, value_name = "DURATION", default_value = "1h", value_parser = parse_duration)]
    pub buffer: Duration,

    /// The most memory the history may use, in MiB.
    #[arg(long, value_name = "MIB", default_value = "64")]
    pub buffer_mib: usize,

    /// Shift the clock times this probe reports (tests of clock alignment only).
    #[arg(
        long,
        value_name = "NANOSECONDS",
        default_value = "0",
        hide = true,
        allow_hyphen_values = true
    )]
    pub clock_shift_ns_for_tests: i64,
}

#[derive(Debug, Clone, Args)]
pub struct RecordArgs {
    #[command(flatten)]
    pub target: TargetArgs,

    /// The file to write.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,

    /// csv or jsonl [default: from the file's extension, else csv].
    #[arg(long, value_enum)]
    pub format: Option<Format>,

    /// Stop after this long (else at Ctrl-C).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub duration: Option<Duration>,
}

#[derive(Debug, Clone, Args)]
pub struct TopArgs {
    #[command(flatten)]
    pub target: TargetArgs,

    /// Show what the probe at this address streams, instead of sampling here.
    #[arg(long, value_name = "ADDR", conflicts_with_all = ["pid", "pidfile", "name", "port"])]
    pub connect: Option<String>,

    /// The token of the probe at --connect.
    #[arg(long, value_name = "FILE", requires = "connect")]
    pub token_file: Option<PathBuf>,

    /// The probe at --connect uses TLS with the certificate of this SHA-256 fingerprint.
    #[arg(long, value_name = "HEX", requires = "connect", conflicts_with = "ca")]
    pub fingerprint: Option<String>,

    /// The probe at --connect uses TLS with a certificate this CA (PEM file) signed.
    #[arg(long, value_name = "FILE", requires = "connect")]
    pub ca: Option<PathBuf>,

    /// Stop after this long (else at Ctrl-C).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub duration: Option<Duration>,
}

/// A flag's value that does not read: the value as given (clap names the flag).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FlagValueError {
    #[error("expected a duration such as 100ms, 1s or 2m, not {0:?}")]
    Duration(String),
    #[error("expected a percentage of one core above 0, such as 0.5, not {0:?}")]
    Budget(String),
}

fn parse_duration(text: &str) -> Result<Duration, FlagValueError> {
    humantime::parse_duration(text).map_err(|_| FlagValueError::Duration(text.to_string()))
}

fn parse_budget(text: &str) -> Result<f64, FlagValueError> {
    match text.trim().trim_end_matches('%').parse::<f64>() {
        Ok(v) if v > 0.0 && v <= 100.0 => Ok(v),
        _ => Err(FlagValueError::Budget(text.to_string())),
    }
}

impl TargetArgs {
    /// The sampler's configuration, or what to fix.
    pub fn sampler_config(&self) -> Result<SamplerConfig, Error> {
        let selector = match (&self.pid, &self.pidfile, &self.name, &self.port) {
            (Some(pid), ..) => Selector::Pid(*pid),
            (_, Some(file), ..) => Selector::PidFile(file.clone()),
            (_, _, Some(name), _) => Selector::Name(regex::Regex::new(name).map_err(|e| {
                Error::Usage(format!(
                    "--name {name:?} is not a valid regular expression: {e}"
                ))
            })?),
            (_, _, _, Some(port)) => Selector::Port(*port),
            _ => {
                return Err(Error::Usage(
                    "choose the process to watch: --pid, --pidfile, --name or --port".into(),
                ))
            }
        };
        if !(MIN_INTERVAL..=MAX_INTERVAL).contains(&self.interval) {
            return Err(Error::Usage(format!(
                "--interval {} is out of range: use 10ms to 60s",
                humantime::format_duration(self.interval)
            )));
        }
        Ok(SamplerConfig {
            selector,
            root: ProcRoot::at(&self.proc_root),
            interval: self.interval,
            tree: !self.no_tree,
            slow_interval: self.slow_interval.max(self.interval),
            slow_budget: self.slow_budget / 100.0,
            pss: self.pss,
            clock_shift_ns: 0,
            profile: self.profile.then(|| crate::profile::ProfileConfig {
                hz: self.profile_hz,
                ..Default::default()
            }),
            role: self.role,
            name: self.called.clone(),
            activity: None,
            canary: self.canary,
        })
    }
}

/// Turns clap's multi-line error into one line: what is wrong, then where to look
/// (`program --help`). Shared by Showdown's binaries.
pub fn one_line(error: &clap::Error, program: &str) -> String {
    let rendered = error.render().to_string();
    let mut parts = Vec::new();
    for line in rendered.lines() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if line.starts_with("Usage:") || line.starts_with("For more information") {
            break;
        }
        parts.push(line.trim_start_matches("error:").trim().to_string());
    }
    let mut text = parts.join(" ");
    if text.ends_with(':') {
        text.pop();
    }
    format!("{text} (see {program} --help)")
}

/// Any error's text on one line (some libraries draw theirs over several).
pub fn flatten(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines.join("; ")
}
