//! Starting a contestant: one of `targets/` by name through `targets/run` (read ready by its
//! ready line), or a server of the user's by its command line (ready when its port is listened
//! on by its own processes and, if given, a path answers 2xx); in a group of its own that holds
//! every process it forks (`custody`), with an environment built from nothing
//! (`environment`), pinned to CPUs with `taskset` and held to a CPU quota and memory when
//! asked, its last output kept to explain a failure, stopped with SIGTERM and, after a grace,
//! its whole group killed. A server that daemonizes (its first process exits 0 while its
//! daemon listens) is followed to its daemon.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::{Child, Command};

use crate::limits::Held;
use crate::ports::Listener;

/// The names `targets/run` takes.
pub const NAMES: [&str; 5] = ["node", "node-cluster", "go", "go-goroutine", "rust"];

/// After SIGTERM, how long a target may take to exit before its group is killed.
pub const DEFAULT_STOP_GRACE: Duration = Duration::from_secs(10);

/// Lines of a target's output kept to explain a failure.
const TAIL_LINES: usize = 40;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("targets/run was not found: run from a Showdown checkout, or set SHOWDOWN_TARGETS to its targets/ directory")]
    NotFound,
    #[error("no target named {0:?}: use one of node, node-cluster, go, go-goroutine, rust")]
    UnknownName(String),
    #[error("cannot start target {name}: {source}")]
    Spawn {
        name: String,
        #[source]
        source: std::io::Error,
    },
    #[error("target {name} exited ({status}) before it was ready; its last output: {output}")]
    Exited {
        name: String,
        status: String,
        output: String,
    },
    #[error(
        "target {name} was not ready within {timeout:?} ({waiting}); its last output: {output}"
    )]
    NotReady {
        name: String,
        timeout: Duration,
        waiting: Box<Waiting>,
        output: String,
    },
    #[error("target {name}: port {port} is taken by another process: stop it, or give the target another port (or {{port}} for one the runner chooses)")]
    PortTaken { name: String, port: u16 },
    #[error("target {name}: port {port} is listened on by {who}, not by the target's own processes: nothing was sent to it; stop that process, or give the target another port")]
    PortNotOurs {
        name: String,
        port: u16,
        who: String,
    },
    #[error("target {name}: {program:?} was not found{where_}: install it, or fix command in the experiment file")]
    NoProgram {
        name: String,
        program: String,
        where_: String,
    },
    #[error("target {name}: the directory {cwd} does not exist: fix cwd in the experiment file")]
    NoDirectory { name: String, cwd: PathBuf },
}

/// What the runner waited for when a target's time to be ready ran out, and what it last saw.
#[derive(Debug, thiserror::Error)]
pub enum Waiting {
    #[error("a listening socket on port {0} (its ready line names it)")]
    Socket(u16),
    #[error("its ready line")]
    ReadyLine,
    #[error("GET {path} on port {port} to answer 2xx; last: {seen}")]
    Answer { path: String, port: u16, seen: Seen },
    #[error("port {port} to be listened on; last: {seen}")]
    Listened { port: u16, seen: Seen },
}

/// What a target's port or ready path last showed while it was waited for.
#[derive(Debug, thiserror::Error)]
pub enum Seen {
    #[error("nothing listens on port {0} yet")]
    Nobody(u16),
    #[error("status {0}")]
    Status(http::StatusCode),
    #[error(transparent)]
    Http(#[from] crate::http::HttpError),
}

/// How a target's stop went other than an exit 0 after SIGTERM (or a daemon gone in time).
#[derive(Debug, thiserror::Error)]
pub enum StopError {
    #[error("it had already exited ({})", .0.map(describe).unwrap_or_default())]
    AlreadyExited(Option<ExitStatus>),
    #[error("after SIGTERM it {}", describe(*.0))]
    AfterTerm(ExitStatus),
    #[error("cannot wait for it: {0}")]
    Wait(#[source] std::io::Error),
    #[error("it did not exit within {0:?} of SIGTERM: killed")]
    Killed(Duration),
    #[error("its daemon did not exit within {0:?} of SIGTERM: killed")]
    DaemonKilled(Duration),
}

/// The `targets/` directory: `SHOWDOWN_TARGETS`, or the first `targets/` holding a `run` script
/// above the current directory or above this executable.
pub fn directory() -> Result<PathBuf, Error> {
    if let Some(dir) = std::env::var_os("SHOWDOWN_TARGETS") {
        let dir = PathBuf::from(dir);
        return dir
            .join("run")
            .is_file()
            .then_some(dir)
            .ok_or(Error::NotFound);
    }
    let starts = [std::env::current_dir().ok(), std::env::current_exe().ok()];
    starts
        .into_iter()
        .flatten()
        .flat_map(|start| {
            start
                .ancestors()
                .map(|a| a.join("targets"))
                .collect::<Vec<_>>()
        })
        .find(|dir| dir.join("run").is_file() && dir.join("CONTRACT.md").is_file())
        .ok_or(Error::NotFound)
}

/// What to run.
#[derive(Debug, Clone)]
pub enum Program {
    /// A target of `targets/` (the directory given), by its `targets/run` name.
    Builtin { dir: PathBuf, name: String },
    /// A command line, run without a shell, in `cwd`, serving on `port`.
    Command {
        argv: Vec<String>,
        cwd: PathBuf,
        port: u16,
        /// A path that answers 2xx when it is ready; else the port accepting is ready.
        ready: Option<String>,
    },
}

/// How to start a target.
#[derive(Debug, Clone)]
pub struct Launch {
    pub name: String,
    pub program: Program,
    /// Contract settings and any other environment values (`PORT=0` unless given), on top of
    /// the base every started process gets (`crate::environment`).
    pub env: Vec<(String, String)>,
    /// Variables of the runner's environment passed on by name (the file's `pass_env`).
    pub pass_env: Vec<String>,
    /// A `taskset -c` CPU list to pin the target (and every process it forks) to.
    pub cpus: Option<String>,
    /// How long to wait until it is ready (a first start of a built-in may build it).
    pub ready_timeout: Duration,
    /// After SIGTERM, how long before SIGKILL.
    pub stop_grace: Duration,
    /// Hold it to this many CPUs and this much memory (a cgroup, where the machine allows).
    pub cpu_quota: Option<f64>,
    pub memory: Option<u64>,
}

impl Launch {
    /// A target of `dir` (the `targets/` directory), by name.
    pub fn builtin(dir: &Path, name: &str) -> Launch {
        Launch::of(
            name,
            Program::Builtin {
                dir: dir.to_path_buf(),
                name: name.to_string(),
            },
            Duration::from_secs(120),
        )
    }

    /// A server of the user's, by its command line.
    pub fn command(name: &str, program: Program, ready_timeout: Duration) -> Launch {
        Launch::of(name, program, ready_timeout)
    }

    fn of(name: &str, program: Program, ready_timeout: Duration) -> Launch {
        Launch {
            name: name.to_string(),
            program,
            env: Vec::new(),
            pass_env: Vec::new(),
            cpus: None,
            ready_timeout,
            stop_grace: DEFAULT_STOP_GRACE,
            cpu_quota: None,
            memory: None,
        }
    }

    /// Adds an environment value.
    pub fn env(mut self, name: &str, value: impl Into<String>) -> Launch {
        self.env.push((name.to_string(), value.into()));
        self
    }
}

/// What the ready line said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ready {
    pub pid: i32,
    pub port: u16,
    pub stack: String,
    pub workers: u32,
}

impl Ready {
    /// Parses `listening pid=PID port=PORT stack=STACK workers=N`.
    pub fn parse(line: &str) -> Option<Ready> {
        let rest = line.trim().strip_prefix("listening ")?;
        let field = |name: &str| {
            rest.split_whitespace()
                .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
        };
        Some(Ready {
            pid: field("pid")?.parse().ok()?,
            port: field("port")?.parse().ok()?,
            stack: field("stack")?.to_string(),
            workers: field("workers")?.parse().ok()?,
        })
    }
}

/// The last lines a target printed, on either stream.
#[derive(Debug, Clone, Default)]
pub struct Tail(Arc<Mutex<VecDeque<String>>>);

impl Tail {
    pub fn push(&self, line: String) {
        if let Ok(mut lines) = self.0.lock() {
            if lines.len() == TAIL_LINES {
                lines.pop_front();
            }
            lines.push_back(line);
        }
    }

    /// The lines, joined with " | " to fit one line of a report.
    pub fn text(&self) -> String {
        self.0
            .lock()
            .map(|l| l.iter().cloned().collect::<Vec<_>>().join(" | "))
            .unwrap_or_default()
    }
}

/// A running target.
#[derive(Debug)]
pub struct Target {
    pub name: String,
    pub ready: Ready,
    child: Child,
    tail: Tail,
    /// Every process it started, killed whole when it stops (or is dropped).
    group: custody::Group,
    /// The limits holding it, if any (removed after it stops).
    pub held: Held,
    /// After SIGTERM, how long before SIGKILL.
    pub stop_grace: Duration,
    /// Whether dying of the SIGTERM is a clean stop (a command's server: most do not catch it);
    /// a built-in target must exit 0, as the contract says.
    term_is_clean: bool,
    /// Its first process exited 0 before it was ready, leaving a daemon that serves.
    daemonized: bool,
}

/// How waiting for a target ended, short of its time running out.
enum Waited {
    Ready(Ready),
    /// Its first process exited, and nothing of the group serves.
    Exited,
    /// Someone else listens on its port.
    Foreign(String),
}

/// The command that starts `launch`: tethered (ended with the process that started it, even
/// one killed outright, held to its CPUs with everything it forks; its PID its own), its
/// environment built from nothing, its output piped.
fn command(launch: &Launch) -> Result<Command, Error> {
    let mut env = launch.env.clone();
    let tethered = |program: &std::ffi::OsStr| {
        fleet::tethered(program, launch.cpus.as_deref())
            .map(Command::from)
            .map_err(|source| Error::Spawn {
                name: launch.name.clone(),
                source,
            })
    };
    let mut command = match &launch.program {
        Program::Builtin { dir, name } => {
            if !NAMES.contains(&name.as_str()) {
                return Err(Error::UnknownName(name.clone()));
            }
            let mut command = tethered(dir.join("run").as_os_str())?;
            command.arg(name);
            if !env.iter().any(|(n, _)| n == "PORT") {
                env.push(("PORT".into(), "0".into()));
            }
            command
        }
        Program::Command {
            argv, cwd, port, ..
        } => {
            let program = find_program(&launch.name, argv, cwd, &launch.env)?;
            port_is_free(&launch.name, *port)?;
            let mut command = tethered(program.as_ref())?;
            command.args(argv.iter().skip(1)).current_dir(cwd);
            command
        }
    };
    let base = crate::environment::Base::current();
    crate::environment::apply(
        command.as_std_mut(),
        &crate::environment::build(&base, &env, &launch.pass_env),
    );
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    Ok(command)
}

/// Waits for a started target to be ready: a built-in one says so on its standard output
/// (its port, then checked to be its own), one started by command is waited for on its port
/// (or its ready check).
async fn wait(
    launch: &Launch,
    child: &mut tokio::process::Child,
    group: &custody::Group,
    stdout: tokio::process::ChildStdout,
    tail: &Tail,
) -> Result<Waited, Waiting> {
    match &launch.program {
        Program::Builtin { .. } => {
            let line = ready_line(stdout, tail.clone());
            match tokio::time::timeout(launch.ready_timeout, line).await {
                Ok(Some(ready)) => match crate::ports::listener(ready.port, &group.members()) {
                    Listener::Ours(_) => Ok(Waited::Ready(ready)),
                    Listener::Foreign(who) => Ok(Waited::Foreign(who)),
                    Listener::Nobody => Err(Waiting::Socket(ready.port)),
                },
                Ok(None) => Ok(Waited::Exited),
                Err(_) => Err(Waiting::ReadyLine),
            }
        }
        Program::Command { port, ready, .. } => {
            tokio::spawn(keep_lines(stdout, tail.clone()));
            wait_ready(child, group, *port, ready.as_deref(), launch.ready_timeout)
                .await
                .map(|waited| match waited {
                    Waited::Ready(ready) => Waited::Ready(Ready {
                        stack: launch.name.clone(),
                        ..ready
                    }),
                    other => other,
                })
        }
    }
}

impl Target {
    /// Starts `launch` and waits until it is ready.
    pub async fn start(launch: &Launch) -> Result<Target, Error> {
        let mut command = command(launch)?;
        // Its group, and the limits on it, before it starts: it and everything it forks are
        // held from its first instruction.
        let mut group = custody::Group::new(&launch.name);
        let held = Held::prepare(&mut group, launch.cpu_quota, launch.memory);
        group.hold(command.as_std_mut());
        let spawn_error = |source| Error::Spawn {
            name: launch.name.clone(),
            source,
        };
        let mut child = command.spawn().map_err(spawn_error)?;
        if let Some(pid) = child.id() {
            group.started(pid);
        }
        let tail = Tail::default();
        if let Some(stderr) = child.stderr.take() {
            tokio::spawn(keep_lines(stderr, tail.clone()));
        }
        let Some(stdout) = child.stdout.take() else {
            return Err(spawn_error(std::io::Error::other("no standard output")));
        };
        let waited = wait(launch, &mut child, &group, stdout, &tail).await;
        let port = match &launch.program {
            Program::Command { port, .. } => *port,
            Program::Builtin { .. } => 0,
        };
        let mut failed = match waited {
            Ok(Waited::Ready(ready)) => {
                let daemonized = child.try_wait().ok().flatten().is_some();
                return Ok(Target {
                    name: launch.name.clone(),
                    ready,
                    child,
                    tail,
                    group,
                    held,
                    stop_grace: launch.stop_grace,
                    term_is_clean: matches!(launch.program, Program::Command { .. }),
                    daemonized,
                });
            }
            Ok(Waited::Exited) => {
                let status = child.wait().await.map_err(spawn_error)?;
                Error::Exited {
                    name: launch.name.clone(),
                    status: describe(status),
                    output: String::new(),
                }
            }
            Ok(Waited::Foreign(who)) => Error::PortNotOurs {
                name: launch.name.clone(),
                port,
                who,
            },
            Err(waiting) => Error::NotReady {
                name: launch.name.clone(),
                timeout: launch.ready_timeout,
                waiting: Box::new(waiting),
                output: String::new(),
            },
        };
        // Whatever it had started goes with it (workers, a daemon, a half-started cluster).
        group.end();
        // Let the output readers catch up with what was printed last.
        tokio::time::sleep(Duration::from_millis(50)).await;
        if let Error::Exited { output, .. } | Error::NotReady { output, .. } = &mut failed {
            *output = tail.text();
        }
        Err(failed)
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.ready.port)
    }

    pub fn pid(&self) -> i32 {
        self.ready.pid
    }

    /// The last lines it printed.
    pub fn output(&self) -> String {
        self.tail.text()
    }

    /// How it ended, if it has: its first process's exit, or (a daemon's) its last process gone.
    pub fn exited(&mut self) -> Option<String> {
        let status = self.child.try_wait().ok().flatten()?;
        if !self.daemonized {
            return Some(describe(status));
        }
        self.group
            .members()
            .is_empty()
            .then(|| "its daemon's processes all exited".to_string())
    }

    /// Sends SIGTERM (to its first process, or to the daemon it left) and waits up to `grace`
    /// for it to exit; then kills whatever is left of its group. Returns how it exited: `Ok`
    /// for exit 0 after SIGTERM (or a daemon gone within the grace), else what happened.
    pub async fn stop(mut self, grace: Duration) -> Result<(), StopError> {
        use rustix::process::{kill_process, Pid, Signal};
        let first_running = self.child.try_wait().ok().flatten().is_none();
        if !first_running && (!self.daemonized || self.group.members().is_empty()) {
            let status = self.child.try_wait().ok().flatten();
            self.group.end();
            return Err(StopError::AlreadyExited(status));
        }
        if let Some(pid) = Pid::from_raw(self.ready.pid) {
            let _ = kill_process(pid, Signal::TERM);
        }
        let outcome = if first_running {
            match tokio::time::timeout(grace, self.child.wait()).await {
                Ok(Ok(status)) if status.success() || (self.term_is_clean && by_term(status)) => {
                    Ok(())
                }
                Ok(Ok(status)) => Err(StopError::AfterTerm(status)),
                Ok(Err(e)) => Err(StopError::Wait(e)),
                Err(_) => Err(StopError::Killed(grace)),
            }
        } else {
            let deadline = tokio::time::Instant::now() + grace;
            loop {
                if self.group.members().is_empty() {
                    break Ok(());
                }
                if tokio::time::Instant::now() >= deadline {
                    break Err(StopError::DaemonKilled(grace));
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        };
        // Workers, helpers, a daemon's children: nothing of it outlives the stop.
        self.group.end();
        outcome
    }
}

fn by_term(status: ExitStatus) -> bool {
    use std::os::unix::process::ExitStatusExt;
    status.signal() == Some(rustix::process::Signal::TERM.as_raw())
}

/// How a process ended, in words.
pub fn describe(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with code {code}"),
        (None, Some(signal)) => format!("was killed by signal {signal}"),
        _ => status.to_string(),
    }
}

/// Reads a built-in target's standard output up to its ready line, keeping the lines before
/// it, and the rest after it; `None` when the output ended first (it exited).
async fn ready_line(stdout: impl AsyncRead + Unpin + Send + 'static, tail: Tail) -> Option<Ready> {
    let mut lines = BufReader::new(stdout).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if let Some(ready) = Ready::parse(&line) {
            tokio::spawn(async move {
                while let Ok(Some(line)) = lines.next_line().await {
                    tail.push(line);
                }
            });
            return Some(ready);
        }
        tail.push(line);
    }
    None
}

/// Waits until a command's server is ready: its port is listened on by processes of its group
/// (and by no one else), then, with `ready`, `GET ready` answers 2xx. Its first process may
/// exit 0 meanwhile if it leaves a daemon in the group. `Err` (what it waited for and what it
/// last saw) when the time ran out.
async fn wait_ready(
    child: &mut Child,
    group: &custody::Group,
    port: u16,
    ready: Option<&str>,
    within: Duration,
) -> Result<Waited, Waiting> {
    let deadline = tokio::time::Instant::now() + within;
    let http = crate::http::Http::new(Duration::from_secs(2));
    loop {
        let first_running = match child.try_wait() {
            Ok(Some(status)) => status.success().then_some(false),
            _ => Some(true),
        };
        let members = group.members();
        if first_running.is_none() || members.is_empty() {
            return Ok(Waited::Exited);
        }
        let seen = match crate::ports::listener(port, &members) {
            Listener::Foreign(who) => return Ok(Waited::Foreign(who)),
            Listener::Nobody => Seen::Nobody(port),
            Listener::Ours(listening) => {
                // The target's PID for the probe: its first process while it runs (the root
                // of its tree), else the daemon that listens.
                let pid = match (first_running, child.id()) {
                    (Some(true), Some(first)) => first as i32,
                    _ => listening,
                };
                let done = Waited::Ready(Ready {
                    pid,
                    port,
                    stack: String::new(),
                    workers: 1,
                });
                match ready {
                    None => return Ok(done),
                    Some(path) => match http.get(&format!("http://127.0.0.1:{port}{path}")).await {
                        Ok(x) if x.status.is_success() => return Ok(done),
                        Ok(x) => Seen::Status(x.status),
                        Err(e) => e.into(),
                    },
                }
            }
        };
        if tokio::time::Instant::now() >= deadline {
            return Err(match ready {
                Some(path) => Waiting::Answer {
                    path: path.to_string(),
                    port,
                    seen,
                },
                None => Waiting::Listened { port, seen },
            });
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The program of a command line, as the kernel will find it: a path (relative to `cwd`), or
/// a name on `PATH` (the launch's own, else the runner's).
fn find_program(
    name: &str,
    argv: &[String],
    cwd: &Path,
    env: &[(String, String)],
) -> Result<PathBuf, Error> {
    if !cwd.is_dir() {
        return Err(Error::NoDirectory {
            name: name.to_string(),
            cwd: cwd.to_path_buf(),
        });
    }
    let program = argv.first().map(String::as_str).unwrap_or_default();
    let missing = |where_: String| Error::NoProgram {
        name: name.to_string(),
        program: program.to_string(),
        where_,
    };
    if program.contains('/') {
        // Absolute: the process runs in `cwd`, where a path relative to the runner's own
        // directory (an experiment file given as a relative path) would name nothing.
        let joined = cwd.join(program);
        let path = std::path::absolute(&joined).unwrap_or(joined);
        return if runnable(&path) {
            Ok(path)
        } else {
            Err(missing(format!(
                " (or is not executable) in {}",
                cwd.display()
            )))
        };
    }
    let path = env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| std::ffi::OsString::from(v))
        .or_else(|| std::env::var_os("PATH"))
        .unwrap_or_default();
    on_path(program, &path).ok_or_else(|| missing(" on PATH".into()))
}

/// `program` in the first directory of `path` (a `PATH` value) that holds it runnable.
pub(crate) fn on_path(program: &str, path: &std::ffi::OsStr) -> Option<PathBuf> {
    std::env::split_paths(path)
        .map(|dir| dir.join(program))
        .find(|p| runnable(p))
}

/// A file the kernel would run: a regular file with an execute bit.
pub(crate) fn runnable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Fails when something already listens on `port` (a server left from elsewhere would be
/// measured in the target's place).
fn port_is_free(name: &str, port: u16) -> Result<(), Error> {
    match std::net::TcpListener::bind(("127.0.0.1", port)) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => Err(Error::PortTaken {
            name: name.to_string(),
            port,
        }),
        Err(_) => Ok(()),
    }
}

async fn keep_lines(stream: impl AsyncRead + Unpin, tail: Tail) {
    let mut lines = BufReader::new(stream).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tail.push(line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_line_is_parsed_and_nothing_else_is() {
        assert_eq!(
            Ready::parse("listening pid=42 port=8080 stack=node workers=2"),
            Some(Ready {
                pid: 42,
                port: 8080,
                stack: "node".into(),
                workers: 2
            })
        );
        assert_eq!(Ready::parse("listening on 8080"), None);
        assert_eq!(Ready::parse("compute: 900 rounds"), None);
    }

    #[test]
    fn a_programs_path_relative_to_a_relative_cwd_is_found_from_inside_it() {
        use std::os::unix::fs::PermissionsExt;
        // `command = ["./server"]` with `cwd = "server"`, in a file given by a relative path:
        // the process starts inside the directory, so the program's path must not be
        // relative to the runner's.
        let dir = tempfile::tempdir_in(".").unwrap();
        let server = dir.path().join("server");
        std::fs::write(&server, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&server, std::fs::Permissions::from_mode(0o755)).unwrap();
        let relative = Path::new(dir.path().file_name().unwrap());
        let found = find_program("t", &["./server".into()], relative, &[]).unwrap();
        assert!(found.is_absolute(), "{}", found.display());
        assert!(found.is_file(), "{}", found.display());
        let missing = find_program("t", &["./nothing".into()], relative, &[]).unwrap_err();
        assert!(missing.to_string().contains("was not found"), "{missing}");
    }
}
