//! What the cells of a run share: the targets' database (named by the file, or a throwaway
//! cluster), the builds and ports of the servers started by command, how each local target is
//! launched, and each target verified (the contract, or the file's checks) before it is
//! measured.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use store::experiment::{Against, Verification};
use store::vocabulary::Outcome;

use super::event::{Event, Events};
use super::options::{BuildError, Error, Refusal, SetupError, SECRET};
use crate::checkout::{Checkouts, Wanted};
use crate::declared;
use crate::file::{
    CheckSpec, Contract, Experiment, TargetKind, TargetSpec, LOADGEN_PLACEHOLDER, PORT_PLACEHOLDER,
};
use crate::targets::{Launch, Program, Target};
use crate::upstream::Upstream;
use crate::verify::{self, Expect, Verdict};

/// The database the local targets use: the file's, `DATABASE_URL`, or a throwaway cluster.
pub(super) struct TargetsDatabase {
    pub(super) url: String,
    /// Its server's process where it runs on this host, for a probe of its own.
    pub(super) process: Option<probe::selector::Selector>,
    _cluster: Option<pgcluster::Cluster>,
}

/// The database the file names (`url`, or the variable `url_env` names), if it names one.
/// No other variable is read: a `DATABASE_URL` exported for something else is never used.
pub(super) fn named_database(experiment: &Experiment) -> Result<Option<String>, Error> {
    let file = experiment.file.database();
    match (&file.url, &file.url_env) {
        (Some(url), _) => Ok(Some(url.clone())),
        (None, Some(var)) => match std::env::var(var) {
            Ok(url) if !url.is_empty() => Ok(Some(url)),
            _ => Err(SetupError::DatabaseUrlEnv { var: var.clone() }.into()),
        },
        (None, None) => Ok(None),
    }
}

/// Where the throwaway PostgreSQL runs: the file's `[database] cpus`, else beside the targets.
pub(super) fn database_cpus(experiment: &Experiment) -> Option<String> {
    let file = &experiment.file;
    file.database()
        .cpus
        .as_ref()
        .or(file.placement.target_cpus.as_ref())
        .map(ToString::to_string)
}

/// Makes (or names) the targets' database and applies the schemas the targets need:
/// `targets/schema.sql` for the built-in ones, the file's `schema` for the others.
pub(super) async fn database(
    experiment: &Experiment,
    builtins: bool,
    events: &Events,
) -> Result<TargetsDatabase, Error> {
    let db = match named_database(experiment)? {
        Some(url) => TargetsDatabase {
            process: crate::watch::local_process(&url, None),
            url,
            _cluster: None,
        },
        None => {
            if std::env::var_os("DATABASE_URL").is_some() {
                events.emit(Event::DatabaseUrlUnused);
            }
            let cpus = database_cpus(experiment);
            events.emit(Event::StartingDatabase { cpus: cpus.clone() });
            let options = pgcluster::Options {
                cpus,
                ..pgcluster::Options::default()
            };
            let cluster = tokio::task::spawn_blocking(move || pgcluster::Cluster::start(&options))
                .await
                .map_err(SetupError::DatabaseTask)??;
            TargetsDatabase {
                url: cluster.url("postgres"),
                process: cluster.postmaster().map(probe::selector::Selector::Pid),
                _cluster: Some(cluster),
            }
        }
    };
    if builtins {
        crate::database::apply_schema(&db.url).await?;
    }
    if let Some(schema) = &experiment.file.database().schema {
        let path = crate::file::inside(&file_dir(experiment), schema).map_err(|error| {
            Refusal::NamedFile {
                field: "[database] schema".into(),
                error,
            }
        })?;
        let sql = std::fs::read_to_string(&path).map_err(|source| SetupError::SchemaUnread {
            path: path.clone(),
            file: experiment.path.clone(),
            source,
        })?;
        crate::database::execute(&db.url, &sql, "apply [database] schema").await?;
    }
    Ok(db)
}

/// Where a target started by command builds and runs: its `cwd` (relative to the file), or
/// the same directory in the checkout of its `ref`.
pub(super) fn target_cwd(
    experiment: &Experiment,
    spec: &TargetSpec,
    checkouts: &Checkouts,
) -> PathBuf {
    match checkouts.revision(&spec.name) {
        Some(revision) => revision.cwd.clone(),
        None => user_cwd(experiment, spec),
    }
}

/// A target's `cwd` in the user's tree.
pub fn user_cwd(experiment: &Experiment, spec: &TargetSpec) -> PathBuf {
    file_dir(experiment).join(spec.cwd.as_deref().unwrap_or(Path::new(".")))
}

/// The directory the file's relative paths (`cwd`, `schema`) start from.
pub(super) fn file_dir(experiment: &Experiment) -> PathBuf {
    match experiment.path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The port each target started by command serves on: its own `port`, or one the runner chose
/// (free now, and none given twice), for `{port}`.
pub(super) fn ports(
    experiment: &Experiment,
    names: &[String],
) -> Result<BTreeMap<String, u16>, Error> {
    let mut ports = BTreeMap::new();
    let commands = experiment
        .file
        .targets
        .iter()
        .filter(|t| t.kind() == TargetKind::Command && names.contains(&t.name));
    let fixed: Vec<u16> = commands.clone().filter_map(|t| t.port).collect();
    for t in commands {
        let port = match t.port {
            Some(p) => p,
            None => free_port(|p| fixed.contains(&p) || ports.values().any(|&q| q == p))?,
        };
        ports.insert(t.name.clone(), port);
    }
    Ok(ports)
}

/// A port nothing listens on now, and that `taken` does not claim, chosen below the kernel's
/// ephemeral range ([`below_ephemeral`]): a port from that range (what binding port 0 gives) can
/// be taken as the source port of one of this host's own connections (the generator's, a
/// probe's, a check's) between its choice and the target's bind, and the target then fails to
/// start (a sitting of five interleaved targets lost one target so).
fn free_port(taken: impl Fn(u16) -> bool) -> Result<u16, Error> {
    let (low, high) = below_ephemeral(
        std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
            .ok()
            .as_deref(),
    );
    let mut x = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0x9e37_79b9, |d| d.as_nanos() as u64)
        ^ (u64::from(std::process::id()) << 32);
    for _ in 0..200 {
        let port = if low < high {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            low + (x % u64::from(high - low)) as u16
        } else {
            // No room below the ephemeral range: one the kernel picks.
            std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .map_err(SetupError::FreePort)?
                .port()
        };
        if !taken(port) && std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return Ok(port);
        }
    }
    Err(SetupError::NoFreePort.into())
}

/// The ports the runner chooses from, `[low, high)`: from 10000 up to the first of the
/// ephemeral range (`ip_local_port_range`'s first number; 32768, Linux's default, when it
/// cannot be read). Empty when that range starts at 11000 or lower.
fn below_ephemeral(range: Option<&str>) -> (u16, u16) {
    let first = range
        .and_then(|r| r.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    if first > 11000 {
        (10000, first)
    } else {
        (0, 0)
    }
}

/// The checkouts of the targets in `names` with a `ref` (none without one): each said as it
/// is made. A ref that names nothing is an error of the file, before anything is built.
pub(super) async fn checkouts(
    experiment: &Experiment,
    names: &[String],
    events: &Events,
) -> Result<Checkouts, Error> {
    let wanted = wanted(experiment, names);
    let env = crate::environment::build(&crate::environment::Base::current(), &[], &[]);
    let checkouts = Checkouts::make(&wanted, &env)
        .await
        .map_err(|error| Error::Checkout {
            error: Box::new(error),
            file: experiment.path.clone(),
        })?;
    for (target, revision) in checkouts.revisions() {
        events.emit(Event::CheckedOut {
            target: target.clone(),
            revision: revision.text(),
            cwd: revision.cwd.display().to_string(),
        });
    }
    Ok(checkouts)
}

/// The targets in `names` with a `ref`, as the checkouts want them.
fn wanted<'a>(experiment: &'a Experiment, names: &[String]) -> Vec<Wanted<'a>> {
    experiment
        .file
        .targets
        .iter()
        .filter(|t| names.contains(&t.name))
        .filter_map(|t| {
            Some(Wanted {
                target: &t.name,
                cwd: user_cwd(experiment, t),
                reference: t.git_ref.as_deref()?,
            })
        })
        .collect()
}

/// The commit each `ref` of the targets in `names` names, checking nothing out: (target, ref,
/// commit), what `experiment plan` says; a ref that names nothing is the error a run would
/// meet.
pub async fn resolve_refs(
    experiment: &Experiment,
    names: &[String],
) -> Result<Vec<(String, String, String)>, Error> {
    let wanted = wanted(experiment, names);
    let env = crate::environment::build(&crate::environment::Base::current(), &[], &[]);
    crate::checkout::resolve(&wanted, &env)
        .await
        .map_err(|error| Error::Checkout {
            error: Box::new(error),
            file: experiment.path.clone(),
        })
}

/// How long a `build` may run when the file sets no `build_timeout`.
const BUILD_TIMEOUT: Duration = Duration::from_secs(600);

/// How each target's `build` went, by target name.
pub(super) type Built = BTreeMap<String, Result<(), BuildError>>;

/// Why a local target was not started.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error("the built-in targets need targets/")]
    NoTargetsDirectory,
    #[error("the built-in targets need a database")]
    NoDatabase,
    #[error("no port for {0}")]
    NoPort(String),
    #[error("{0} is remote: nothing to start")]
    Remote(String),
    #[error(transparent)]
    Start(#[from] crate::targets::Error),
}

/// Runs each `build` of the targets started by command, once, in its `cwd`, with the target's
/// environment (the base, its `env` with `{port}` placed, its `pass_env`); its output goes to
/// standard error as it comes, and the last lines are kept for the page when it fails. A build
/// past its `build_timeout`, or when the run is stopped (Ctrl-C, SIGTERM, SIGHUP), is ended
/// with every process it started.
pub(super) async fn builds(
    experiment: &Experiment,
    names: &[String],
    ports: &BTreeMap<String, u16>,
    checkouts: &Checkouts,
    stop: &tokio::sync::watch::Receiver<bool>,
    events: &Events,
) -> Built {
    let mut out = BTreeMap::new();
    for t in &experiment.file.targets {
        let (Some(argv), true) = (&t.build, names.contains(&t.name)) else {
            continue;
        };
        let cwd = target_cwd(experiment, t, checkouts);
        let port = ports.get(&t.name).map(u16::to_string).unwrap_or_default();
        let env: Vec<(String, String)> = t
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.replace(PORT_PLACEHOLDER, &port)))
            .collect();
        let what = Building {
            name: &t.name,
            argv,
            cwd: &cwd,
            env: crate::environment::build(&crate::environment::Base::current(), &env, &t.pass_env),
            timeout: t.build_timeout.unwrap_or(BUILD_TIMEOUT),
        };
        events.emit(Event::Building {
            target: t.name.clone(),
            command: redact::command_line_with(argv, &redact::ANY_PROGRAM).join(" "),
        });
        out.insert(t.name.clone(), build(&what, stop.clone(), events).await);
        if *stop.borrow() {
            break;
        }
    }
    out
}

/// One build to run.
pub(super) struct Building<'a> {
    pub(super) name: &'a str,
    pub(super) argv: &'a [String],
    pub(super) cwd: &'a Path,
    pub(super) env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
    pub(super) timeout: Duration,
}

/// Runs one build in a group of its own, ended whole on a timeout or a stop.
pub(super) async fn build(
    what: &Building<'_>,
    mut stop: tokio::sync::watch::Receiver<bool>,
    events: &Events,
) -> Result<(), BuildError> {
    let shown = || redact::command_line_with(what.argv, &redact::ANY_PROGRAM).join(" ");
    let Some((program, args)) = what.argv.split_first() else {
        return Err(BuildError::Empty);
    };
    let (mut group, mut child) = spawn_build(what, program, args)?;
    let tail = crate::targets::Tail::default();
    let readers = echo_output(what.name, &mut child, &tail, events);
    let ended = tokio::select! {
        status = child.wait() => Some(status.map_err(|source| BuildError::Wait {
            program: program.clone(),
            source,
        })?),
        _ = tokio::time::sleep(what.timeout) => None,
        _ = until_stopped(&mut stop) => {
            group.end();
            for r in readers {
                r.abort();
            }
            return Err(BuildError::Interrupted { command: shown() });
        }
    };
    // Nothing it started outlives it: a daemon it left, a hung child after a timeout.
    group.end();
    for r in readers {
        let _ = tokio::time::timeout(Duration::from_secs(2), r).await;
    }
    match ended {
        Some(status) if status.success() => Ok(()),
        Some(status) => Err(BuildError::Failed {
            command: shown(),
            status,
            output: tail.text(),
        }),
        None => Err(BuildError::Timeout {
            command: shown(),
            timeout: what.timeout,
            output: tail.text(),
        }),
    }
}

/// Starts the build's `program` with `args`, its output piped, in a group of its own.
fn spawn_build(
    what: &Building<'_>,
    program: &str,
    args: &[String],
) -> Result<(custody::Group, tokio::process::Child), BuildError> {
    let mut command = tokio::process::Command::new(program);
    command.args(args).current_dir(what.cwd);
    crate::environment::apply(command.as_std_mut(), &what.env);
    command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let mut group = custody::Group::new(&format!("build of {}", what.name));
    group.hold(command.as_std_mut());
    let child = command.spawn().map_err(|source| BuildError::Run {
        program: program.to_string(),
        cwd: what.cwd.to_path_buf(),
        source,
    })?;
    if let Some(pid) = child.id() {
        group.started(pid);
    }
    Ok((group, child))
}

/// The readers of the build's standard output and error, each line said as it comes and kept
/// in `tail`.
fn echo_output(
    name: &str,
    child: &mut tokio::process::Child,
    tail: &crate::targets::Tail,
    events: &Events,
) -> Vec<tokio::task::JoinHandle<()>> {
    let mut readers = Vec::new();
    if let Some(out) = child.stdout.take() {
        readers.push(tokio::spawn(echo(
            name.to_string(),
            out,
            tail.clone(),
            events.clone(),
        )));
    }
    if let Some(err) = child.stderr.take() {
        readers.push(tokio::spawn(echo(
            name.to_string(),
            err,
            tail.clone(),
            events.clone(),
        )));
    }
    readers
}

/// Says each line of a build's `stream` as it comes (redacted), and keeps it in `tail`.
async fn echo(
    name: String,
    stream: impl tokio::io::AsyncRead + Unpin,
    tail: crate::targets::Tail,
    events: Events,
) {
    use tokio::io::AsyncBufReadExt;
    let mut lines = tokio::io::BufReader::new(stream).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let line = redact::text(&line);
        events.emit(Event::BuildOutput {
            target: name.clone(),
            line: line.clone(),
        });
        tail.push(line);
    }
}

/// Ends when `stop` says the run is stopped; never once no one can say so.
async fn until_stopped(stop: &mut tokio::sync::watch::Receiver<bool>) {
    while !*stop.borrow() {
        if stop.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// What starting a local target takes: `targets/` for the built-in ones, the database, the
/// upstream of `/proxy`, and the ports of those started by command.
pub(super) struct Launcher<'a> {
    pub(super) experiment: &'a Experiment,
    pub(super) dir: Option<&'a Path>,
    pub(super) db: Option<&'a str>,
    /// The database's server process, where it runs here.
    pub(super) db_process: Option<probe::selector::Selector>,
    pub(super) upstream: &'a Upstream,
    pub(super) ports: &'a BTreeMap<String, u16>,
    /// The checkouts of the targets with a `ref`.
    pub(super) checkouts: &'a Checkouts,
    /// A remote target's base URL as the runner reaches it, where not its own (through the
    /// first gun, with `[guns]`).
    pub(super) reach: BTreeMap<String, String>,
    /// The `loadgen` binary, for `{loadgen}` in a target's command.
    pub(super) loadgen: &'a Path,
}

impl Launcher<'_> {
    /// Where the runner's own checks reach the remote target `spec`.
    pub(super) fn reached(&self, spec: &TargetSpec) -> String {
        self.reach
            .get(&spec.name)
            .cloned()
            .unwrap_or_else(|| spec.url.clone().unwrap_or_default())
            .trim_end_matches('/')
            .to_string()
    }
}

impl Launcher<'_> {
    /// How to start `spec` with `env` (its own, or a cell's).
    pub(super) fn launch(
        &self,
        spec: &TargetSpec,
        env: &BTreeMap<String, String>,
    ) -> Result<Launch, LaunchError> {
        let file = &self.experiment.file;
        let mut launch = match spec.kind() {
            TargetKind::Builtin => self.launch_builtin(spec, env)?,
            TargetKind::Command => self.launch_command(spec, env)?,
            TargetKind::Remote => return Err(LaunchError::Remote(spec.name.clone())),
        };
        launch.pass_env.clone_from(&spec.pass_env);
        launch.cpus = file.placement.target_cpus.as_ref().map(ToString::to_string);
        launch.cpu_quota = spec.cpus;
        launch.memory = spec
            .memory
            .as_deref()
            .and_then(|m| crate::limits::parse_bytes(m).ok());
        Ok(launch)
    }

    /// How to start the built-in target `spec` from `targets/`, with the database, the
    /// upstream and `env`.
    fn launch_builtin(
        &self,
        spec: &TargetSpec,
        env: &BTreeMap<String, String>,
    ) -> Result<Launch, LaunchError> {
        let file = &self.experiment.file;
        let dir = self.dir.ok_or(LaunchError::NoTargetsDirectory)?;
        let db = self.db.ok_or(LaunchError::NoDatabase)?;
        let mut launch = Launch::builtin(dir, spec.run_name())
            .env("DATABASE_URL", db)
            .env("UPSTREAM_URL", self.upstream.url())
            .env("SECRET", SECRET);
        if let Some(pool) = file.database().pool {
            launch = launch.env("DB_POOL", pool.to_string());
        }
        if let Some(t) = file.database().timeout_ms {
            launch = launch.env("DB_TIMEOUT_MS", t.to_string());
        }
        if file.profile {
            // Node then writes the perf map that names its JIT frames.
            launch = launch.env("PROFILE", "1");
        }
        for (k, v) in env {
            launch = launch.env(k, v.clone());
        }
        Ok(launch)
    }

    /// How to start the target `spec` by its command, `{port}` and `{loadgen}` placed, with the
    /// database (when the file has one) and `env`.
    fn launch_command(
        &self,
        spec: &TargetSpec,
        env: &BTreeMap<String, String>,
    ) -> Result<Launch, LaunchError> {
        let file = &self.experiment.file;
        let port = *self
            .ports
            .get(&spec.name)
            .ok_or_else(|| LaunchError::NoPort(spec.name.clone()))?;
        let place = |text: &str| text.replace(PORT_PLACEHOLDER, &port.to_string());
        let loadgen = self.loadgen.to_string_lossy();
        let argv: Vec<String> = spec
            .command
            .iter()
            .flatten()
            .enumerate()
            .map(|(i, a)| match i {
                0 if a == LOADGEN_PLACEHOLDER => loadgen.to_string(),
                _ => place(a),
            })
            .collect();
        let cwd = target_cwd(self.experiment, spec, self.checkouts);
        let program = Program::Command {
            argv,
            cwd,
            port,
            ready: spec.ready.clone(),
        };
        let mut launch = Launch::command(
            &spec.name,
            program,
            spec.ready_timeout.unwrap_or(Duration::from_secs(30)),
        );
        if let (Some(db), Some(_)) = (self.db, &file.database) {
            let var = file.database().env.as_deref().unwrap_or("DATABASE_URL");
            launch = launch.env(var, db);
        }
        for (k, v) in env {
            launch = launch.env(k, place(v));
        }
        if let Some(grace) = spec.stop_grace {
            launch.stop_grace = grace;
        }
        Ok(launch)
    }
}

/// The checks a target is held to beside the contract: the file's shared `[[check]]` (for the
/// targets not held to the contract) and its own.
fn declared_checks(experiment: &Experiment, spec: &TargetSpec) -> Vec<CheckSpec> {
    let shared = match spec.contract() {
        Contract::Declared => experiment.file.checks.clone(),
        Contract::Showdown => Vec::new(),
    };
    shared
        .into_iter()
        .chain(spec.checks.iter().cloned())
        .collect()
}

/// Verifies every target of the plan: a local one is started for it (after its build).
pub(super) async fn verify_targets(
    launcher: &Launcher<'_>,
    names: &[String],
    builds: &Built,
    events: &Events,
) -> Vec<Verification> {
    let experiment = launcher.experiment;
    let mut out = Vec::new();
    for name in names {
        let Some(spec) = experiment.file.targets.iter().find(|t| &t.name == name) else {
            continue;
        };
        let against = match spec.contract() {
            Contract::Showdown => Against::Contract,
            Contract::Declared => Against::Declared,
        };
        let mut verdict = Verdict::default();
        if let Some(built) = builds.get(name) {
            verdict.record("build", built.as_ref().map(|_| ()));
        }
        if verdict.passed() {
            verify_one(launcher, spec, &mut verdict).await;
        }
        let v = Verification {
            target: name.clone(),
            passed: verdict.passed(),
            against,
            checks: verdict
                .checks
                .iter()
                .map(|c| (c.name.clone(), c.outcome.clone()))
                .collect(),
        };
        events.emit(Event::Verified {
            target: name.clone(),
            against: against.text().to_string(),
            failed: (!v.passed).then(|| failures(&v)),
        });
        out.push(v);
    }
    out
}

/// Starts (or reaches) one target and adds its checks to `verdict`.
async fn verify_one(launcher: &Launcher<'_>, spec: &TargetSpec, verdict: &mut Verdict) {
    let experiment = launcher.experiment;
    let declared = declared_checks(experiment, spec);
    let contract = spec.contract() == Contract::Showdown;
    if spec.kind() == TargetKind::Remote {
        let base = &launcher.reached(spec);
        if contract {
            verdict
                .checks
                .extend(verify::verify(base, &Expect::default()).await.checks);
        } else {
            verdict.record(
                "ready",
                crate::http::reachable(base, spec.ready.as_deref(), Duration::from_secs(10)).await,
            );
        }
        if verdict.passed() {
            verdict
                .checks
                .extend(declared::check(base, &declared, launcher.db).await.checks);
        }
        return;
    }
    let started = match launcher.launch(spec, &spec.env) {
        Ok(launch) => Target::start(&launch).await.map_err(LaunchError::from),
        Err(why) => Err(why),
    };
    let target = match started {
        Ok(t) => t,
        Err(why) => return verdict.record("start", Err(why)),
    };
    verdict.record("start", Ok::<(), LaunchError>(()));
    let base = target.base_url();
    if contract {
        let expect = Expect {
            database_url: launcher.db.map(str::to_string),
            secret: Some(SECRET.into()),
            upstream_body: Some(launcher.upstream.body.clone()),
        };
        verdict
            .checks
            .extend(verify::verify(&base, &expect).await.checks);
    }
    verdict
        .checks
        .extend(declared::check(&base, &declared, launcher.db).await.checks);
    if !verdict.passed() {
        let output = target.output();
        if !output.is_empty() {
            verdict.record("its last output", Err(output));
        }
    }
    let grace = target.stop_grace;
    let _ = target.stop(grace).await;
}

/// The failed checks of `v`, as they may be printed or kept (a check's name or answer may
/// carry a key).
pub(super) fn failures(v: &Verification) -> String {
    let text = v
        .checks
        .iter()
        .filter_map(|(c, o)| match o {
            Outcome::Failed(why) => Some(format!("{c}: {why}")),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("; ");
    redact::text(&text)
}

#[cfg(test)]
mod port_tests {
    use super::*;

    #[test]
    fn ports_are_chosen_below_the_ephemeral_range() {
        assert_eq!(below_ephemeral(Some("32768\t60999\n")), (10000, 32768));
        assert_eq!(below_ephemeral(Some("40000 65000")), (10000, 40000));
        assert_eq!(below_ephemeral(None), (10000, 32768));
        assert_eq!(below_ephemeral(Some("1024 65535")), (0, 0));
        let (low, high) = below_ephemeral(
            std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
                .ok()
                .as_deref(),
        );
        let chosen: Vec<u16> = (0..20).map(|_| free_port(|_| false).unwrap()).collect();
        if low < high {
            assert!(chosen.iter().all(|p| (low..high).contains(p)), "{chosen:?}");
        }
        // What `taken` claims is never chosen.
        let first = chosen[0];
        assert!((0..20).all(|_| free_port(|p| p == first).unwrap() != first));
    }
}
