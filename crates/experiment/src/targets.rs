//! The contestants of `targets/`: finding them, starting one by name through `targets/run`
//! (pinned to CPUs with `taskset` when asked), reading its ready line, keeping its last output
//! to explain a failure, and stopping it with SIGTERM as the contract says.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::{Child, Command};

use crate::limits::Held;

/// The names `targets/run` takes.
pub const NAMES: [&str; 5] = ["node", "node-cluster", "go", "go-goroutine", "rust"];

/// The settings of the contract; those a launch does not give are removed from the target's
/// environment, so that the runner's own environment cannot leak into a measurement.
pub const SETTINGS: [&str; 9] = [
    "PORT",
    "HOST",
    "DATABASE_URL",
    "DB_POOL",
    "DB_TIMEOUT_MS",
    "UPSTREAM_URL",
    "SECRET",
    "CLUSTER",
    "GOROUTINE",
];

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
    #[error("target {name} printed no ready line within {timeout:?}; its last output: {output}")]
    NotReady {
        name: String,
        timeout: Duration,
        output: String,
    },
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

/// How to start a target.
#[derive(Debug, Clone)]
pub struct Launch {
    pub name: String,
    /// Contract settings and any other environment values (`PORT=0` unless given).
    pub env: Vec<(String, String)>,
    /// A `taskset -c` CPU list to pin the target (and every process it forks) to.
    pub cpus: Option<String>,
    /// How long to wait for the ready line (a first start may build the target).
    pub ready_timeout: Duration,
    /// Hold it to this many CPUs and this much memory (a cgroup, where the machine allows).
    pub cpu_quota: Option<f64>,
    pub memory: Option<u64>,
}

impl Launch {
    pub fn new(name: &str) -> Launch {
        Launch {
            name: name.to_string(),
            env: Vec::new(),
            cpus: None,
            ready_timeout: Duration::from_secs(120),
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
    fn push(&self, line: String) {
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
    /// The cgroup holding it, if any (removed after it stops).
    pub held: Held,
}

impl Target {
    /// Starts `launch` from `dir` (the `targets/` directory) and waits for its ready line.
    pub async fn start(dir: &Path, launch: &Launch) -> Result<Target, Error> {
        if !NAMES.contains(&launch.name.as_str()) {
            return Err(Error::UnknownName(launch.name.clone()));
        }
        // setpriv: the target is ended with the process that started it, even one killed
        // outright; taskset pins it and everything it forks. Both exec, so the PID stays the
        // target's own.
        let mut command = Command::new("setpriv");
        command.args(["--pdeathsig", "TERM", "--"]);
        if let Some(cpus) = &launch.cpus {
            command.args(["taskset", "-c", cpus]);
        }
        command.arg(dir.join("run")).arg(&launch.name);
        for name in SETTINGS {
            if !launch.env.iter().any(|(n, _)| n == name) {
                command.env_remove(name);
            }
        }
        if !launch.env.iter().any(|(n, _)| n == "PORT") {
            command.env("PORT", "0");
        }
        command
            .envs(launch.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let spawn_error = |source| Error::Spawn {
            name: launch.name.clone(),
            source,
        };
        let mut child = command.spawn().map_err(spawn_error)?;
        // Into its cgroup at once, before it forks workers, so that they are held too.
        let held = match child.id() {
            Some(pid) if launch.cpu_quota.is_some() || launch.memory.is_some() => Held::apply(
                pid as i32,
                launch.cpu_quota,
                launch.memory,
                &format!("showdown-{}-{pid}", launch.name),
            ),
            _ => Held::default(),
        };
        let tail = Tail::default();
        if let Some(stderr) = child.stderr.take() {
            tokio::spawn(keep_lines(stderr, tail.clone()));
        }
        let Some(stdout) = child.stdout.take() else {
            return Err(spawn_error(std::io::Error::other("no standard output")));
        };
        let mut lines = BufReader::new(stdout).lines();
        let wait_ready = async {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(ready) = Ready::parse(&line) {
                    return Some(ready);
                }
                tail.push(line);
            }
            None
        };
        let ready = tokio::time::timeout(launch.ready_timeout, wait_ready).await;
        match ready {
            Ok(Some(ready)) => {
                let rest = tail.clone();
                tokio::spawn(async move {
                    while let Ok(Some(line)) = lines.next_line().await {
                        rest.push(line);
                    }
                });
                Ok(Target {
                    name: launch.name.clone(),
                    ready,
                    child,
                    tail,
                    held,
                })
            }
            Ok(None) => {
                let status = child.wait().await.map_err(spawn_error)?;
                // Let the standard error reader catch up with what was printed last.
                tokio::time::sleep(Duration::from_millis(50)).await;
                Err(Error::Exited {
                    name: launch.name.clone(),
                    status: describe(status),
                    output: tail.text(),
                })
            }
            Err(_) => {
                kill_group(&child);
                Err(Error::NotReady {
                    name: launch.name.clone(),
                    timeout: launch.ready_timeout,
                    output: tail.text(),
                })
            }
        }
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

    /// Its exit status, if it has exited.
    pub fn exited(&mut self) -> Option<String> {
        self.child.try_wait().ok().flatten().map(describe)
    }

    /// Sends SIGTERM and waits up to `grace` for the target to exit; past that, kills its
    /// process group. Returns how it exited: `Ok` for exit 0 after SIGTERM, else what happened.
    pub async fn stop(mut self, grace: Duration) -> Result<(), String> {
        if let Some(status) = self.child.try_wait().ok().flatten() {
            return Err(format!("it had already exited ({})", describe(status)));
        }
        if let Some(pid) = rustix::process::Pid::from_raw(self.ready.pid) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
        match tokio::time::timeout(grace, self.child.wait()).await {
            Ok(Ok(status)) if status.success() => {
                kill_group(&self.child);
                Ok(())
            }
            Ok(Ok(status)) => {
                kill_group(&self.child);
                Err(format!("after SIGTERM it {}", describe(status)))
            }
            Ok(Err(e)) => Err(format!("cannot wait for it: {e}")),
            Err(_) => {
                kill_group(&self.child);
                Err(format!(
                    "it did not exit within {grace:?} of SIGTERM: killed"
                ))
            }
        }
    }
}

/// Kills what is left of the target's process group (a cluster's workers, a wrapper).
fn kill_group(child: &Child) {
    if let Some(pid) = child
        .id()
        .and_then(|id| rustix::process::Pid::from_raw(id as i32))
    {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}

fn describe(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with code {code}"),
        (None, Some(signal)) => format!("was killed by signal {signal}"),
        _ => status.to_string(),
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
}
