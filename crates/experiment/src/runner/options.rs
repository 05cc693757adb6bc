//! What a run of an experiment is given, and what can stop it.

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
    #[error("{0}")]
    Setup(String),
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
