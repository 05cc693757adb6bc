//! The generator of each cell: the same `loadgen attack` a user would type, built from the
//! cell's load, run as a process of its own (pinned with `taskset` to the gun's CPUs, and
//! ended with the runner by `setpriv --pdeathsig`), its JSON summary read back.
//!
//! Secrets never go on its command line, which every local user can read in `ps`: the store's
//! URL (with its password) goes in `SHOWDOWN_DB` and the headers (an `Authorization` among
//! them) in `SHOWDOWN_HEADERS`, the environment only the runner's user can read; the requests
//! (their URLs, with any query, and bodies) in a targets file in the runner's private working
//! directory. Its environment is built from nothing ([`crate::environment`]): an exported
//! `SHOWDOWN_HEADERS` of the user's never reaches it, only the headers the file gives or names
//! with `headers_env`.
//!
//! A process of its own, rather than the engine in this process: the generator's CPU and
//! memory figures are its own, a crash or a kill ends one cell and not the experiment, and the
//! cell's run is kept by exactly the code that keeps any other run.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use crate::file::{LoadSpec, Mode};
use serde::{Deserialize, Serialize};

/// How to start the generator.
#[derive(Debug, Clone)]
pub struct Gun {
    /// The `loadgen` binary.
    pub loadgen: PathBuf,
    /// `taskset -c` CPU list, if pinned.
    pub cpus: Option<String>,
}

/// One attack of a cell (its warm-up or its measured run).
#[derive(Debug, Clone)]
pub struct Attack {
    pub base_url: String,
    pub load: LoadSpec,
    /// Instead of the load's own length (a warm-up).
    pub only_for: Option<Duration>,
    pub db: String,
    pub experiment: String,
    pub name: String,
    pub run_id: String,
    pub labels: Vec<(String, String)>,
    /// The probes to subscribe to: the target's, then its database's.
    pub probes: Vec<String>,
    pub probe_token_file: Option<PathBuf>,
    pub probe_fingerprint: Option<String>,
    pub probe_ca: Option<PathBuf>,
    pub pre_roll: Duration,
    pub post_roll: Duration,
    /// Where a mix's targets file is written.
    pub workdir: PathBuf,
    /// A capacity search (`loadgen capacity`) instead of a fixed load.
    pub search: Option<crate::file::SearchSpec>,
    /// A search's gun hosts (`--gun …` flags, [`crate::fleet::Fleet::flags`]).
    pub guns: Vec<String>,
}

fn secs(d: Duration) -> String {
    format!("{}ms", d.as_millis().max(1))
}

fn rate(r: f64) -> String {
    if r.fract() == 0.0 {
        format!("{}", r as u64)
    } else {
        format!("{r}")
    }
}

/// The headers in the variable `var` (a load's `headers_env`), one `Name: value` a line. A
/// line that is not a header is named by its place, never shown: it may be the secret itself,
/// and the reason a run or a cell failed is kept and published.
pub fn headers_from(var: &str) -> Result<Vec<String>, GunError> {
    let value = std::env::var(var).map_err(|_| GunError::HeadersEnv(var.to_string()))?;
    let mut lines = Vec::new();
    for (n, line) in value.lines().map(str::trim).enumerate() {
        if line.is_empty() {
            continue;
        }
        match line.split_once(':') {
            Some((name, value)) if crate::file::is_header(name.trim(), value.trim()) => {
                lines.push(line.to_string());
            }
            _ => return Err(GunError::HeaderLine(var.to_string(), n + 1)),
        }
    }
    Ok(lines)
}

/// What a generator is handed on its standard input (`loadgen attack --secrets-stdin`), never
/// in its environment or on its command line: the store's URL and the headers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Secrets {
    #[serde(default)]
    pub db: Option<String>,
    #[serde(default)]
    pub headers: Vec<String>,
}

impl Secrets {
    /// The most the line may weigh.
    const LIMIT: u64 = 1 << 20;

    /// From an attack's variables ([`Attack::env`]): `SHOWDOWN_DB`, `SHOWDOWN_HEADERS` (one
    /// header a line).
    pub fn of(env: &[(String, String)]) -> Secrets {
        let mut secrets = Secrets::default();
        for (name, value) in env {
            match name.as_str() {
                "SHOWDOWN_DB" => secrets.db = Some(value.clone()),
                "SHOWDOWN_HEADERS" => {
                    secrets.headers.extend(
                        value
                            .lines()
                            .filter(|l| !l.trim().is_empty())
                            .map(str::to_string),
                    );
                }
                _ => {}
            }
        }
        secrets
    }

    /// One JSON line.
    pub fn line(&self) -> Vec<u8> {
        let mut line = serde_json::to_vec(self).unwrap_or_else(|_| b"{}".to_vec());
        line.push(b'\n');
        line
    }

    /// Reads the line (up to 1 MiB); its text is never repeated in an error.
    pub fn read(input: impl std::io::BufRead) -> Result<Secrets, String> {
        let mut line = String::new();
        std::io::BufRead::read_line(&mut input.take(Self::LIMIT), &mut line)
            .map_err(|e| format!("cannot read standard input: {e}"))?;
        if line.trim().is_empty() {
            return Err("nothing on standard input: this flag is the experiment runner's".into());
        }
        serde_json::from_str(&line).map_err(|e| {
            format!(
                "standard input is not the runner's secrets (line {}, column {})",
                e.line(),
                e.column()
            )
        })
    }
}

/// Gives `command` (`[setpriv …] loadgen attack|capacity …`) the flag that makes it read
/// [`Secrets`] from its standard input, after the subcommand.
pub fn with_secrets_flag(args: &[String]) -> Vec<String> {
    let mut out = args.to_vec();
    let at = usize::from(!out.is_empty());
    out.insert(at, "--secrets-stdin".into());
    out
}

impl Attack {
    /// What goes in the generator's environment: the store (`SHOWDOWN_DB`) and the headers
    /// (`SHOWDOWN_HEADERS`, one per line; loadgen adds them to every request, of a mix too):
    /// the load's own, and those of the variable its `headers_env` names.
    pub fn env(&self) -> Result<Vec<(String, String)>, GunError> {
        let mut env = vec![("SHOWDOWN_DB".to_string(), self.db.clone())];
        let mut lines: Vec<String> = self
            .load
            .headers
            .iter()
            .flatten()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        if let Some(var) = &self.load.headers_env {
            lines.extend(headers_from(var)?);
        }
        if !lines.is_empty() {
            env.push(("SHOWDOWN_HEADERS".to_string(), lines.join("\n")));
        }
        Ok(env)
    }

    /// The `loadgen attack` arguments: nothing secret (see [`Attack::env`]).
    pub fn args(&self) -> Result<Vec<String>, GunError> {
        if let Some(search) = &self.search {
            return self.capacity_args(search);
        }
        let load = &self.load;
        if let Some(share @ crate::file::Rate::Share(_)) = load.rate {
            return Err(GunError::Share(share));
        }
        let mut args: Vec<String> = vec!["attack".into()];
        let mut push = |a: &[&str]| args.extend(a.iter().map(|s| s.to_string()));
        match (load.mode(), self.only_for) {
            (Mode::Open, Some(d)) => {
                let r = load
                    .per_second()
                    .or_else(|| load.steps.as_ref().and_then(|s| s.first().copied()))
                    .unwrap_or(1.0);
                push(&["--rate", &rate(r), "--duration", &secs(d)]);
            }
            (Mode::Open, None) => {
                if let Some(steps) = &load.steps {
                    let list: Vec<String> = steps.iter().map(|r| rate(*r)).collect();
                    push(&["--steps", &list.join(",")]);
                    if let Some(d) = load.step_duration {
                        push(&["--step-duration", &secs(d)]);
                    }
                } else if let Some(r) = load.per_second() {
                    push(&["--rate", &rate(r)]);
                    if let Some(d) = load.duration {
                        push(&["--duration", &secs(d)]);
                    }
                }
                if let Some(n) = load.requests {
                    push(&["--requests", &n.to_string()]);
                }
            }
            (Mode::Closed, only_for) => {
                let c = load.connections.unwrap_or(1).to_string();
                push(&["--connections", &c]);
                match only_for {
                    Some(d) => push(&["--duration", &secs(d)]),
                    None => {
                        if let Some(d) = load.duration {
                            push(&["--duration", &secs(d)]);
                        }
                        if let Some(n) = load.requests {
                            push(&["--requests", &n.to_string()]);
                        }
                    }
                }
            }
        }
        if load.mode() == Mode::Open {
            self.open_args(&mut args);
        }
        self.request_args(&mut args)?;
        Ok(args)
    }

    /// `loadgen capacity`'s arguments: the search, then the requests as for an attack.
    fn capacity_args(&self, search: &crate::file::SearchSpec) -> Result<Vec<String>, GunError> {
        let mut args: Vec<String> = vec!["capacity".into()];
        let mut push = |a: &[&str]| args.extend(a.iter().map(|s| s.to_string()));
        for term in &search.slo {
            push(&["--slo", term]);
        }
        if let Some(r) = search.start {
            push(&["--start", &rate(r)]);
        }
        if let Some(r) = &search.resolution {
            push(&["--resolution", r.trim()]);
        }
        if let Some(d) = search.step {
            push(&["--step", &secs(d)]);
        }
        if let Some(d) = search.warmup {
            push(&["--warmup", &secs(d)]);
        }
        if let Some(r) = search.min_rate {
            push(&["--min-rate", &rate(r)]);
        }
        if let Some(r) = search.max_rate {
            push(&["--max-rate", &rate(r)]);
        }
        if let Some(n) = search.max_steps {
            push(&["--max-steps", &n.to_string()]);
        }
        self.open_args(&mut args);
        self.request_args(&mut args)?;
        args.extend(self.guns.iter().cloned());
        Ok(args)
    }

    /// An open loop's pool cap and pacing.
    fn open_args(&self, args: &mut Vec<String>) {
        let load = &self.load;
        let mut push = |a: &[&str]| args.extend(a.iter().map(|s| s.to_string()));
        if let Some(c) = load.connections {
            push(&["--max-connections", &c.to_string()]);
        }
        if let Some(b) = load.batch.filter(|b| !b.is_zero()) {
            push(&["--batch", &format!("{}us", b.as_micros().max(1))]);
        }
        if load.arrival == Some(store::vocabulary::ArrivalProcess::Poisson) {
            push(&["--arrival", "poisson"]);
        }
    }

    /// What every run of a cell takes: the requests, the store's labels, the probe, the URL.
    fn request_args(&self, args: &mut Vec<String>) -> Result<(), GunError> {
        let load = &self.load;
        let mut push = |a: &[&str]| args.extend(a.iter().map(|s| s.to_string()));
        if let Some(t) = load.timeout {
            push(&["--timeout", &secs(t)]);
        }
        if let Some(t) = load.threads {
            push(&["--threads", &t.to_string()]);
        }
        // The requests go in a file of the runner's private directory: a URL's query and a
        // body may hold a key, and a command line is anyone's to read.
        let file = self.workdir.join(format!("{}.targets.toml", self.run_id));
        write_private(&file, self.targets_file().as_bytes()).map_err(|error| GunError::Write {
            path: file.clone(),
            error,
        })?;
        push(&["--targets", &file.display().to_string()]);
        push(&["--experiment", &self.experiment]);
        push(&["--name", &self.name, "--run-id", &self.run_id]);
        for (k, v) in &self.labels {
            push(&["--label", &format!("{k}={v}")]);
        }
        for p in &self.probes {
            push(&["--probe", p]);
        }
        if !self.probes.is_empty() {
            push(&["--pre-roll", &secs(self.pre_roll)]);
            push(&["--post-roll", &secs(self.post_roll)]);
            if let Some(t) = &self.probe_token_file {
                push(&["--probe-token-file", &t.display().to_string()]);
            }
            if let Some(f) = &self.probe_fingerprint {
                push(&["--probe-fingerprint", f]);
            }
            if let Some(ca) = &self.probe_ca {
                push(&["--probe-ca", &ca.display().to_string()]);
            }
        }
        push(&["--output", "json"]);
        Ok(())
    }

    /// The load's requests (its mix, or its one path) as loadgen's targets file (TOML).
    fn targets_file(&self) -> String {
        let one = [crate::file::MixEntry {
            path: self.load.path.clone().unwrap_or_else(|| "/".into()),
            weight: 1,
            method: None,
            body: None,
        }];
        let entries = self.load.mix.as_deref().unwrap_or(&one);
        let mut requests = Vec::new();
        for entry in entries {
            let mut t = toml::Table::new();
            t.insert(
                "url".into(),
                format!("{}{}", self.base_url, entry.path).into(),
            );
            t.insert("weight".into(), i64::from(entry.weight).into());
            let method = entry.method.clone().or_else(|| self.load.method.clone());
            if let Some(m) = method {
                t.insert("method".into(), m.into());
            }
            if let Some(b) = entry.body.clone().or_else(|| self.load.body.clone()) {
                t.insert("body".into(), b.into());
            }
            requests.push(toml::Value::Table(t));
        }
        let mut file = toml::Table::new();
        file.insert("request".into(), requests.into());
        toml::to_string(&file).unwrap_or_default()
    }
}

/// Writes a file only its owner may read (a request's query and body, a probe's token).
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?
        .write_all(bytes)
}

/// Why an attack could not be fired (not why it failed: that is [`Fired`]).
#[derive(Debug, thiserror::Error)]
pub enum GunError {
    #[error("cannot write {path}: {error}")]
    Write {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("cannot run {path}: {error}")]
    Spawn {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("loadgen: {0}")]
    Wait(std::io::Error),
    #[error("cannot find this executable: {0}")]
    NoExe(std::io::Error),
    #[error("no loadgen binary found: build it (cargo build --release -p loadgen) or set SHOWDOWN_LOADGEN")]
    NoLoadgen,
    #[error("the rate {0} is a share of a capacity not yet resolved to requests a second")]
    Share(crate::file::Rate),
    #[error("headers_env names {0}, which is not set: export it (one 'Name: value' a line), or drop headers_env")]
    HeadersEnv(String),
    #[error("headers_env {0}: line {1} is not a header 'Name: value' (its text is not shown, it may be a secret): fix that line of {0}")]
    HeaderLine(String, usize),
}

/// What one attack came to.
#[derive(Debug, Clone)]
pub struct Fired {
    /// The JSON summary, when loadgen printed one.
    pub summary: Option<store::summary::Summary>,
    /// The search, when it was one (`loadgen capacity`).
    pub search: Option<store::capacity::Search>,
    /// loadgen's exit code (0 done, 3 stopped early; see docs/loadgen.md).
    pub code: Option<i32>,
    /// What it said on standard error (its last lines).
    pub said: String,
}

impl Gun {
    /// Runs one attack to its end; when `stop` turns true meanwhile, interrupts it (SIGINT,
    /// as Ctrl-C would: loadgen keeps what it recorded and exits 3).
    pub async fn fire(
        &self,
        attack: &Attack,
        mut stop: tokio::sync::watch::Receiver<bool>,
    ) -> Result<Fired, GunError> {
        let args = with_secrets_flag(&attack.args()?);
        let secrets = Secrets::of(&attack.env()?);
        let mut command = tokio::process::Command::new("setpriv");
        command.args(["--pdeathsig", "TERM", "--"]);
        if let Some(cpus) = &self.cpus {
            command.args(["taskset", "-c", cpus]);
        }
        command.arg(&self.loadgen).args(&args);
        let base = crate::environment::Base::current();
        crate::environment::apply(&mut command, &crate::environment::build(&base, &[], &[]));
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut group = custody::Group::new(&format!("generator of {}", attack.name));
        group.hold(command.as_std_mut());
        let mut child = command.spawn().map_err(|error| GunError::Spawn {
            path: self.loadgen.clone(),
            error,
        })?;
        if let Some(pid) = child.id() {
            group.started(pid);
        }
        if let Some(mut input) = child.stdin.take() {
            use tokio::io::AsyncWriteExt;
            // A generator that ended before reading says why on its standard error.
            let _ = input.write_all(&secrets.line()).await;
        }
        let pid = child.id();
        let output = child.wait_with_output();
        tokio::pin!(output);
        let out = loop {
            tokio::select! {
                out = &mut output => break out,
                changed = stop.changed() => {
                    if changed.is_err() || *stop.borrow() {
                        if let Some(pid) = pid.and_then(|p| rustix::process::Pid::from_raw(p as i32)) {
                            let _ = rustix::process::kill_process(pid, rustix::process::Signal::INT);
                        }
                        break (&mut output).await;
                    }
                }
            }
        }
        .map_err(GunError::Wait)?;
        Ok(Fired::of(&out.stdout, &out.stderr, out.status.code()))
    }
}

impl Fired {
    /// What a loadgen's output says: its JSON on standard output, its last lines on standard
    /// error.
    pub fn of(stdout: &[u8], stderr: &[u8], code: Option<i32>) -> Fired {
        let said = String::from_utf8_lossy(stderr);
        let said: Vec<&str> = said.lines().rev().take(10).collect();
        let said = said.into_iter().rev().collect::<Vec<_>>().join(" | ");
        Fired {
            summary: serde_json::from_slice(stdout).ok(),
            search: serde_json::from_slice::<store::capacity::Repeated>(stdout)
                .ok()
                .and_then(|r| r.searches.into_iter().next()),
            code,
            said,
        }
    }
}

/// The `loadgen` binary: `SHOWDOWN_LOADGEN`, or this executable if it is loadgen, or a
/// `loadgen` next to it (or one directory up, as from a test binary in `target/…/deps`).
pub fn find_loadgen() -> Result<PathBuf, GunError> {
    if let Some(p) = std::env::var_os("SHOWDOWN_LOADGEN") {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe().map_err(GunError::NoExe)?;
    if exe.file_name().is_some_and(|n| n == "loadgen") {
        return Ok(exe);
    }
    let candidates = [
        exe.parent().map(|d| d.join("loadgen")),
        exe.parent()
            .and_then(Path::parent)
            .map(|d| d.join("loadgen")),
    ];
    candidates
        .into_iter()
        .flatten()
        .find(|p| p.is_file())
        .ok_or(GunError::NoLoadgen)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::file::Rate;
    use store::vocabulary::ArrivalProcess;

    #[test]
    fn the_files_arrival_process_reaches_the_guns_command_line() {
        let dir = tempfile::tempdir().unwrap();
        let load = LoadSpec {
            path: Some("/now".into()),
            rate: Some(Rate::PerSecond(100.0)),
            duration: Some(Duration::from_secs(1)),
            arrival: Some(ArrivalProcess::Poisson),
            ..Default::default()
        };
        let attack = Attack {
            base_url: "http://127.0.0.1:8080".into(),
            load,
            only_for: None,
            db: "sqlite:///tmp/unused.db".into(),
            experiment: "e".into(),
            name: "n".into(),
            run_id: "r".into(),
            labels: Vec::new(),
            probes: Vec::new(),
            probe_token_file: None,
            probe_fingerprint: None,
            probe_ca: None,
            pre_roll: Duration::ZERO,
            post_roll: Duration::ZERO,
            workdir: dir.path().to_path_buf(),
            search: None,
            guns: Vec::new(),
        };
        let args = attack.args().unwrap();
        assert!(
            args.windows(2).any(|w| w == ["--arrival", "poisson"]),
            "{args:?}"
        );
        let uniform = Attack {
            load: LoadSpec {
                arrival: Some(ArrivalProcess::Uniform),
                ..attack.load.clone()
            },
            ..attack
        };
        assert!(!uniform.args().unwrap().contains(&"--arrival".to_string()));
    }
}
