//! What a run of an experiment is given, and what can stop it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::plan::PlanOptions;

/// The SECRET every local target gets (`/encrypt`'s key; not a credential).
pub const SECRET: &str = "showdown-experiment-secret";

/// How to run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub plan: PlanOptions,
    /// The store the runs go to.
    pub db: String,
    /// Redo the cells kept as failed.
    pub retry_failed: bool,
    /// Run every cell again as a new sitting (the next point of the experiment's history),
    /// rather than resume the latest.
    pub again: bool,
    /// This machine's generator.
    pub gun: fleet::Local,
    /// What the environment says of the guns' files (the twin's state, where a Job's Secret
    /// is written), read by the binary.
    pub guns_settings: fleet::Settings,
    /// Show a live line (on a terminal).
    pub live: bool,
    /// What the user confirmed of what the file asks for.
    pub trust: Trust,
}

/// What the user confirmed on the command line of what an experiment file asks for: until
/// then a file, perhaps someone else's, is data, not a key to the user's machine.
#[derive(Debug, Clone, Default)]
pub struct Trust {
    /// Variables of the user's environment the file may read (`--pass-env NAME`): its
    /// `[database] url_env`, a load's `headers_env`, a target's `pass_env`.
    pub pass_env: Vec<String>,
    /// The file's own database (`[database] url` or `url_env`): the runner connects to it and
    /// runs the file's `schema`, `reset` and `rows_added` SQL there (`--trust-database`).
    pub database: bool,
    /// A remote target's probe token, read from a file the user named (`--probe-token-file
    /// TARGET=FILE`): a file's own `probe_token_file` is never read, since its contents go to the
    /// probe address the file names.
    pub probe_tokens: Vec<(String, std::path::PathBuf)>,
    /// The file's `[guns]`: its hosts get every order, SSH runs with its `ssh_config`, and
    /// the user's SSH agent signs in to them (`--trust-guns`).
    pub guns: bool,
    /// A `ProxyCommand` or `ProxyJump` in the file's `[guns] ssh_config` (`--trust-ssh-proxy`).
    pub ssh_proxy: bool,
    /// Guns with no `store_env_file` of their own get this runner's store URL, its password
    /// included (`--send-store-url`).
    pub send_store_url: bool,
}

/// What a `run` did.
#[derive(Debug, Clone, Default)]
pub struct RunReport {
    pub ran: usize,
    pub skipped: usize,
    pub failed: Vec<(String, String)>,
    pub interrupted: bool,
    pub elapsed: Duration,
    /// `[compare]`'s verdicts, one per setting whose rounds all ran.
    pub gates: Vec<analysis::ab::Gate>,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Plan(#[from] crate::plan::PlanError),
    #[error(transparent)]
    Store(#[from] store::StoreError),
    #[error(transparent)]
    Targets(#[from] crate::targets::Error),
    #[error(transparent)]
    Database(#[from] pgcluster::Error),
    #[error(transparent)]
    TargetsDatabase(#[from] crate::database::DatabaseError),
    /// Something this host was to make ready for the run (the probes, a port, a directory, the
    /// upstream, the targets' database) could not be.
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// What the file or the command line asks for is refused before anything runs.
    #[error(transparent)]
    Refused(#[from] Refusal),
    #[error("{error} (in {})", .file.display())]
    Checkout {
        #[source]
        error: Box<crate::checkout::CheckoutError>,
        file: std::path::PathBuf,
    },
    #[error("targets/build failed: {0}")]
    BuiltinBuild(#[source] BuildError),
    #[error(transparent)]
    Compare(#[from] crate::file::AllowedError),
    #[error(transparent)]
    Variables(#[from] crate::file::VariableError),
    /// The guns could not be made ready (or a file's SSH config is refused).
    #[error(transparent)]
    Guns(#[from] fleet::FleetError),
}

/// What this host could not make ready for a run: the probes' keys and the probes themselves,
/// a free port, a working directory, the upstream, the targets' database.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// The upstream the targets call could not be started.
    #[error("upstream: {0}")]
    Upstream(#[source] std::io::Error),
    /// The run's private working directory could not be made.
    #[error("cannot make a temporary directory: {0}")]
    TempDir(#[source] std::io::Error),
    /// No port could be asked of the kernel for a target started by command.
    #[error("cannot find a free port: {0}")]
    FreePort(#[source] std::io::Error),
    /// Every port tried for a target started by command was taken.
    #[error("cannot find a free port")]
    NoFreePort,
    /// The random token of the probes the runner starts could not be drawn.
    #[error("cannot draw a token for the probes: {0}")]
    ProbeTokenDraw(#[source] rustix::io::Errno),
    /// The probes' token could not be written to the run's working directory.
    #[error("cannot write {}: {source}", .path.display())]
    ProbeTokenWrite {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The probes' TLS certificate could not be made or loaded.
    #[error("probe TLS: {0}")]
    ProbeTls(#[source] probe::tls::TlsError),
    /// A probe's loopback port could not be bound.
    #[error("probe: {0}")]
    ProbeListen(#[source] std::io::Error),
    /// A probe could not be started (its sampler, or its server).
    #[error("probe: {0}")]
    ProbeStart(#[source] probe::Error),
    /// `[database] url_env` names a variable that is not set (or is empty).
    #[error("[database] url_env names {var}, which is not set: export it, or drop [database] for a throwaway PostgreSQL")]
    DatabaseUrlEnv { var: String },
    /// The task starting the throwaway PostgreSQL ended without its answer.
    #[error(transparent)]
    DatabaseTask(tokio::task::JoinError),
    /// The file's `[database] schema` could not be read; `file` is the experiment file.
    #[error("[database] schema: cannot read {}: {source}: fix schema in {}", .path.display(), .file.display())]
    SchemaUnread {
        path: PathBuf,
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// What the runner refuses before anything runs: what an experiment file asks for that the user
/// has not confirmed on the command line (`--trust-guns`, `--trust-database`,
/// `--send-store-url`, `--probe-token-file`), that would not be safe even so, or a
/// `--probe-token-file` that does not fit the file. `file` is the experiment file, for the
/// `loadgen experiment plan` that shows what it asks; `target` a target's name as given.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// The request headers a load reads from the environment (`headers_env`).
    #[error(transparent)]
    Headers(crate::gun::GunError),
    /// A file the experiment file names (`field`, such as `[database] schema`) that is not read
    /// or written: outside its directory, or through a link.
    #[error("{field}: {error}")]
    NamedFile {
        field: String,
        #[source]
        error: crate::file::NamedFileError,
    },
    /// `[guns] kubernetes` without `--trust-guns`; `job` says what the file renders.
    #[error("[guns] kubernetes: this file renders {job} and sends them every order: see it in `loadgen experiment plan {}`, then run again with --trust-guns if it is yours", .file.display())]
    KubernetesGuns { job: String, file: PathBuf },
    /// SSH guns without `--trust-guns`, with the file's `ssh_config` if it gives one.
    #[error("[guns]: this file sends every order over SSH to its own hosts{}: see them in `loadgen experiment plan {}`, then run again with --trust-guns if they are yours", with_ssh_config(.ssh_config.as_deref()), .file.display())]
    SshGuns {
        ssh_config: Option<PathBuf>,
        file: PathBuf,
    },
    /// Guns with no store of their own, and no `--send-store-url`.
    #[error("[guns]: the guns need the store, and this runner's URL (with its password) is not sent by default: set store_env_file = \"/path/on/the/guns\" (a file there with SHOWDOWN_DB=…), or run again with --send-store-url")]
    StoreUrlUnsent,
    /// The file's `[guns] ssh_config`, unread or refused (a `ProxyCommand` without
    /// `--trust-ssh-proxy`, say).
    #[error("{}", redact::printable(&.0.to_string()))]
    SshConfig(#[source] fleet::ssh::SshError),
    /// `[database]` names the store itself.
    #[error("[database] names the store itself: the file's schema and the targets' writes would land among your runs; name another database")]
    DatabaseIsStore,
    /// `[database]` names a database of its own, and no `--trust-database`; `named` is its URL
    /// redacted, or `$VAR`, as it may be shown.
    #[error("[database]: this file names a database of its own ({named}): the runner would connect to it and run the file's schema, reset and rows_added SQL there; see them in `loadgen experiment plan {}`, then run again with --trust-database if it is yours", .file.display())]
    Database { named: String, file: PathBuf },
    /// The token file `--probe-token-file TARGET=FILE` names is not read, or holds no token.
    #[error("--probe-token-file {}: {error}", redact::printable(.target))]
    ProbeTokenFile {
        target: String,
        #[source]
        error: probe::token::TokenFileError,
    },
    /// `--probe-token-file` for a remote target whose probe nothing checks (no
    /// `probe_fingerprint`, no `probe_ca`).
    #[error("--probe-token-file {}: target {:?} has no probe_fingerprint or probe_ca, so its token would go to a probe nobody checked: add one to the file", redact::printable(.target), redact::printable(.target))]
    ProbeUnchecked { target: String },
    /// `--probe-token-file` for a name that is no remote target of the file.
    #[error("--probe-token-file {}: the file has no remote target of that name: name one with url and probe", redact::printable(.target))]
    NoRemoteTarget { target: String },
    /// A remote target's own `probe_token_file` (`file`), not confirmed by a
    /// `--probe-token-file`; `probe` is the address its contents would go to.
    #[error("target {:?}: probe_token_file: the runner would send the contents of {} to {}, an address the file chose; if that file holds only its probe's token, run again with --probe-token-file {}={}", redact::printable(.target), redact::printable(&.file.display().to_string()), redact::printable(.probe.as_deref().unwrap_or("its probe")), redact::printable(.target), redact::printable(&.file.display().to_string()))]
    ProbeTokenFileUnconfirmed {
        target: String,
        file: PathBuf,
        probe: Option<String>,
    },
}

/// `" with the SSH config FILE"` when the guns give one, for [`Refusal::SshGuns`].
fn with_ssh_config(config: Option<&Path>) -> String {
    config
        .map(|c| format!(" with the SSH config {}", c.display()))
        .unwrap_or_default()
}

/// Why a build did not succeed; `command` is its command line as it may be shown.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("build is empty")]
    Empty,
    #[error("cannot run {program:?} in {}: {source}", .cwd.display())]
    Run {
        program: String,
        cwd: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot wait for {program:?}: {source}")]
    Wait {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{command} was interrupted (the run was stopped)")]
    Interrupted { command: String },
    #[error("{command} {}; its last output: {output}", crate::targets::describe(*.status))]
    Failed {
        command: String,
        status: std::process::ExitStatus,
        output: String,
    },
    #[error("{command} did not finish within its build_timeout of {}: stopped; its last output: {output}", humantime::format_duration(*.timeout))]
    Timeout {
        command: String,
        timeout: Duration,
        output: String,
    },
}
