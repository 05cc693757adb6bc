//! The experiment file: what to run, as data (TOML). Every field is documented in
//! docs/experiments.md; unknown fields are errors, so that a typo is not silently ignored.
//!
//! A cell's load is the file's `[load]`, then the target's own `load` table, then the named
//! load its `load` axis value picks from `[loads.NAME]`, then the scalar axis values (rate,
//! connections, …): each layer sets only the fields it names.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use probe::cpus::CpuList;
use serde::{Deserialize, Deserializer, Serialize};

/// An experiment file, as read.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ExperimentFile {
    /// The experiment's name in the store and on its page.
    pub name: String,
    /// The question it answers, in one sentence (on its page).
    pub question: String,
    /// Where it comes from (a write-up), shown on its page.
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default = "one")]
    pub repetitions: u32,
    /// Load sent before each cell's measured run, at the cell's load, kept as a run of its own
    /// (label `phase=warmup`) and left out of the cell's figures.
    #[serde(default, deserialize_with = "duration")]
    pub warmup: Duration,
    /// Pause between cells.
    #[serde(default, deserialize_with = "duration")]
    pub cooldown: Duration,
    #[serde(default = "probe_interval", deserialize_with = "duration")]
    pub probe_interval: Duration,
    /// The probe of each local target also samples its on-CPU call stacks (`probe --profile`):
    /// every run gets a flame graph, every comparison differential ones.
    #[serde(default)]
    pub profile: bool,
    /// Stacks sampled a second on each CPU when profiling (`probe --profile-hz`), 1 to 1000;
    /// 99 when not given. Short runs of a light server need more than 99 for a function's
    /// change to show beyond noise.
    #[serde(default)]
    pub profile_hz: Option<u32>,
    /// Probe history kept before and after each measured run.
    #[serde(default = "pre_roll", deserialize_with = "duration")]
    pub pre_roll: Duration,
    #[serde(default = "post_roll", deserialize_with = "duration")]
    pub post_roll: Duration,
    #[serde(default)]
    pub placement: Placement,
    /// The targets' database. The built-in targets always get one; targets started by command
    /// get one only when the file has this table.
    #[serde(default)]
    pub database: Option<Database>,
    #[serde(rename = "target")]
    pub targets: Vec<TargetSpec>,
    /// Checks every target started by command or reached by URL must pass before it is
    /// measured (besides its own `[[target.check]]`).
    #[serde(default, rename = "check")]
    pub checks: Vec<CheckSpec>,
    pub load: LoadSpec,
    #[serde(default)]
    pub loads: BTreeMap<String, LoadSpec>,
    /// Every cell a capacity search instead of a fixed load: the highest rate each target
    /// sustains within the SLO (`loadgen capacity`).
    pub search: Option<SearchSpec>,
    /// Two builds compared at the load's fixed rate, a gate for a pull request: every
    /// repetition a round running each once, in a random order.
    pub compare: Option<CompareSpec>,
    /// Axis name → values, in the file's order (the first axis other than `target` is the
    /// x-axis of the page's charts across settings). An axis that is not one of the known ones
    /// is a parameter: its value replaces `{NAME}` in the load's path, body and mix.
    #[serde(default)]
    pub matrix: toml::Table,
    /// Other processes of the system under test (a proxy, a cache), each watched by a probe of
    /// its own beside every local target and drawn as its own group.
    #[serde(default, rename = "watch")]
    pub watches: Vec<WatchSpec>,
    /// Gun hosts that fire every cell together over SSH, instead of this machine.
    pub guns: Option<crate::guns::GunsSpec>,
    /// How `loadgen history` and the history page read the file's sittings.
    #[serde(default)]
    pub history: HistorySpec,
}

/// `[history]`: how the sittings of this file are read across nights (docs/history.md).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HistorySpec {
    /// Targets of the file run as references (a CPU spin, a pointer chase, system calls): each
    /// other target's history is divided, sitting by sitting, by the one that tracks it best.
    #[serde(default)]
    pub references: Vec<String>,
    /// The measures `loadgen history` judges by default (`["cpu"]`; all of capacity, cpu,
    /// rss, p50 and p99 when empty): each series is tested at the level divided among those
    /// judged, so a nightly gate on fewer finds smaller changes and calls fewer false ones.
    #[serde(default)]
    pub measures: Vec<String>,
    /// The chance of calling a change where none happened, over every series judged (0.05
    /// when absent): `loadgen history`'s `--level` by default.
    pub level: Option<f64>,
}

/// A variable of the user's environment that an experiment file reads, and the field that
/// reads it (`[database] url_env`, a load's `headers_env`, a target's `pass_env`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variable {
    pub name: String,
    pub field: String,
}

impl ExperimentFile {
    /// Every load the file writes, with the table it is written in.
    fn load_specs(&self) -> Vec<(String, &LoadSpec)> {
        let mut out = vec![("[load]".to_string(), &self.load)];
        out.extend(
            self.loads
                .iter()
                .map(|(name, load)| (format!("[loads.{name}]"), load)),
        );
        out.extend(self.targets.iter().filter_map(|t| {
            let load = t.load.as_ref()?;
            Some((format!("target {:?}: load", t.name), load))
        }));
        out
    }

    /// Whether a cell's rate is a share of a capacity (`"60%"`): in the rate axis, or a load's.
    pub fn has_shares(&self) -> bool {
        let share = |v: &toml::Value| {
            v.as_str()
                .is_some_and(|t| matches!(t.parse(), Ok(Rate::Share(_))))
        };
        let in_axis = match self.matrix.get("rate") {
            Some(toml::Value::Array(rates)) => rates.iter().any(share),
            _ => false,
        };
        in_axis
            || self
                .load_specs()
                .iter()
                .any(|(_, load)| load.share().is_some())
    }

    /// Every variable of the user's environment the file reads, in the file's order.
    pub fn variables(&self) -> Vec<Variable> {
        let mut out = Vec::new();
        if let Some(name) = &self.database().url_env {
            out.push(Variable {
                name: name.clone(),
                field: "[database] url_env".into(),
            });
        }
        for (table, load) in self.load_specs() {
            if let Some(name) = &load.headers_env {
                out.push(Variable {
                    name: name.clone(),
                    field: format!("{table} headers_env"),
                });
            }
        }
        for t in &self.targets {
            out.extend(t.pass_env.iter().map(|name| Variable {
                name: name.clone(),
                field: format!("target {:?}: pass_env", t.name),
            }));
        }
        out
    }

    /// Refuses a file that reads the store's variable, or any variable the user did not name on
    /// the command line too (`confirmed`, from `--pass-env NAME`): a file from someone else could
    /// otherwise send whatever the user's shell holds to a server of its choosing, as a header, a
    /// database URL or a target's environment, and no rule on names knows every secret's
    /// (`HTTPS_PROXY`, `SLACK_WEBHOOK`, `DB_PW`, …).
    pub fn check_variables(&self, confirmed: &[String]) -> Result<(), VariableError> {
        for v in self.variables() {
            if v.name == crate::environment::STORE {
                return Err(VariableError::Store {
                    field: v.field,
                    name: v.name,
                });
            }
            if !confirmed.contains(&v.name) {
                return Err(VariableError::Unconfirmed {
                    field: v.field,
                    secret: crate::environment::looks_secret(&v.name),
                    name: redact::printable(&v.name),
                });
            }
        }
        Ok(())
    }
}

/// A variable a file reads that the user did not give it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VariableError {
    #[error("{field}: names {name}, the store's URL, which Showdown never gives a file: name another variable")]
    Store { field: String, name: String },
    /// `name` as it may be printed; `secret`: its name says it may hold one.
    #[error("{field}: names {name}, {}: a file you did not write could send it to a server of its choosing; if you mean it, run again with --pass-env {name}", if *.secret { "which may hold a secret" } else { "a variable of your environment" })]
    Unconfirmed {
        field: String,
        name: String,
        secret: bool,
    },
}

impl ExperimentFile {
    /// The files of the user's machine the runner reads for this file and sends or runs: its
    /// `[database] schema` (run as SQL in the targets' database) and the remote probes' CA
    /// certificates, each with the field that names it.
    pub fn read_files(&self) -> Vec<(String, PathBuf)> {
        let mut out = Vec::new();
        if let Some(schema) = &self.database().schema {
            out.push(("[database] schema".to_string(), schema.clone()));
        }
        for t in &self.targets {
            if let Some(ca) = &t.probe_ca {
                out.push((format!("target {:?}: probe_ca", t.name), ca.clone()));
            }
        }
        out
    }
}

impl ExperimentFile {
    /// The files of the user's machine the runner writes for this file where the file says:
    /// its Kubernetes guns' `manifest`. Held inside the file's directory as the files it reads
    /// are ([`inside`]).
    pub fn written_files(&self) -> Vec<(String, PathBuf)> {
        self.guns
            .as_ref()
            .and_then(|g| g.kubernetes.as_ref())
            .and_then(|k| k.manifest.as_deref())
            .map(|m| ("[guns] kubernetes manifest".to_string(), PathBuf::from(m)))
            .into_iter()
            .collect()
    }
}

/// Why a file an experiment file names is not read; each says the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NamedFileError {
    #[error("{path} passes through the symbolic link {link}, which is never followed: name the file itself, inside the experiment file's directory")]
    Link { path: String, link: String },
    #[error("{0} is outside the experiment file's directory: a file reads and writes only what lies beside it; name it relative to the file, inside its directory")]
    Outside(String),
}

/// `path`, a file an experiment file names, resolved in the file's directory `dir`: refused when
/// it leaves that directory (an absolute path, a `..`) or passes through a symbolic link, so that
/// a file copied from someone else cannot make the runner read `~/.aws/credentials` or
/// `/etc/shadow` and send it on (as SQL, as a certificate).
pub fn inside(dir: &Path, path: &Path) -> Result<PathBuf, NamedFileError> {
    use std::path::Component;
    let shown = |p: &Path| redact::printable(&p.display().to_string());
    let mut at = dir.to_path_buf();
    for part in path.components() {
        match part {
            Component::Normal(name) => {
                at.push(name);
                if std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink()) {
                    return Err(NamedFileError::Link {
                        path: shown(path),
                        link: shown(&at),
                    });
                }
            }
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) | Component::ParentDir => {
                return Err(NamedFileError::Outside(shown(path)));
            }
        }
    }
    Ok(at)
}

/// A process of the system under test beside the target and its database, found on this host
/// by exactly one of its port, its PID, or its command (a regular expression on its name and
/// command line).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct WatchSpec {
    /// As pages name it.
    pub name: String,
    pub port: Option<u16>,
    pub pid: Option<i32>,
    pub command: Option<String>,
}

impl WatchSpec {
    /// How a probe finds it (the file was checked: exactly one is given and the pattern is
    /// valid).
    pub fn selector(&self) -> Option<probe::selector::Selector> {
        use probe::selector::Selector;
        match (self.port, self.pid, &self.command) {
            (Some(port), None, None) => Some(Selector::Port(port)),
            (None, Some(pid), None) => Some(Selector::Pid(pid)),
            (None, None, Some(re)) => regex::Regex::new(re).ok().map(Selector::Name),
            _ => None,
        }
    }
}

/// Where local processes run.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Placement {
    /// `taskset -c` CPU list for the generator, e.g. `"0"`.
    pub gun_cpus: Option<CpuList>,
    /// `taskset -c` CPU list for local targets, e.g. `"1"`.
    pub target_cpus: Option<CpuList>,
}

/// Why `--ref TARGET=REF` cannot be applied to a file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SetRefError {
    /// `names`: the file's targets, in words.
    #[error(
        "--ref {target}={reference}: the file has no target {target:?} (its targets: {names})"
    )]
    NoTarget {
        target: String,
        reference: String,
        names: String,
    },
    #[error("--ref {target}={reference}: {target:?} is not started by command; ref is for a server built from your source")]
    NotCommand { target: String, reference: String },
    #[error("--ref {target}=…: {source}")]
    Ref {
        target: String,
        #[source]
        source: crate::checkout::RefError,
    },
}

impl ExperimentFile {
    /// Builds and runs `target` from its source at `reference` instead of the file's `ref`
    /// (`loadgen experiment run --ref baseline=origin/$BASE`): a pull request's base branch,
    /// which a file cannot know.
    pub fn set_ref(&mut self, target: &str, reference: &str) -> Result<(), SetRefError> {
        let names: Vec<&str> = self.targets.iter().map(|t| t.name.as_str()).collect();
        let names = names.join(", ");
        let Some(t) = self.targets.iter_mut().find(|t| t.name == target) else {
            return Err(SetRefError::NoTarget {
                target: target.to_string(),
                reference: reference.to_string(),
                names,
            });
        };
        if t.kind() != TargetKind::Command {
            return Err(SetRefError::NotCommand {
                target: target.to_string(),
                reference: reference.to_string(),
            });
        }
        crate::checkout::check_ref(reference).map_err(|source| SetRefError::Ref {
            target: target.to_string(),
            source,
        })?;
        t.git_ref = Some(reference.to_string());
        Ok(())
    }

    /// `[database]`, or its defaults when the file has none.
    pub fn database(&self) -> &Database {
        const DEFAULT: Database = Database {
            url: None,
            url_env: None,
            cpus: None,
            pool: None,
            timeout_ms: None,
            env: None,
            schema: None,
            reset: None,
        };
        self.database.as_ref().unwrap_or(&DEFAULT)
    }
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Database {
    /// A database of yours for the targets; without it (or `url_env`), a throwaway cluster.
    /// The runner empties its `users` table before every cell, so it must be one Showdown
    /// made (`targets/schema.sql` marks it).
    pub url: Option<String>,
    /// The environment variable holding that URL (`"DATABASE_URL"`), to keep a password out of
    /// the file. The runner reads no variable the file does not name.
    pub url_env: Option<String>,
    /// Where a throwaway cluster runs: a `taskset` CPU list (by default the targets' CPUs, so
    /// that the database never takes the generator's).
    pub cpus: Option<CpuList>,
    /// `DB_POOL` for every target (each stack's default, 60, when absent).
    pub pool: Option<u32>,
    /// `DB_TIMEOUT_MS` for every target.
    pub timeout_ms: Option<u64>,
    /// The variable a target started by command finds the database's URL in
    /// (`DATABASE_URL` when absent).
    pub env: Option<String>,
    /// SQL applied once before the matrix (relative to the file), for targets started by
    /// command; the built-in targets get `targets/schema.sql`.
    pub schema: Option<PathBuf>,
    /// SQL run before every cell of a target started by command (e.g. `TRUNCATE items`), so
    /// that each starts from the same tables.
    pub reset: Option<String>,
}

/// A contestant: one of `targets/` (by name), a server of yours started by `command`, or a
/// remote one (`url` and `probe`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TargetSpec {
    /// The contestant's name in the matrix and on the page.
    pub name: String,
    /// The `targets/run` name, when it differs from `name`.
    pub run: Option<String>,
    /// Your server's command line, run without a shell: `["node", "server.js"]`. `{port}` in
    /// it (or in `env`) is the port the runner chose for it; `{loadgen}` as its first word is
    /// the runner's own `loadgen` (`["{loadgen}", "target", …]`, its built-in target).
    pub command: Option<Vec<String>>,
    /// Where `command` and `build` run, relative to the experiment file (its directory when
    /// absent).
    pub cwd: Option<PathBuf>,
    /// Build and run this target from its source at a git commit (`"origin/main"`, a tag, a
    /// commit): `cwd`'s repository is cloned with `--shared` into a temporary directory and the
    /// commit checked out there, the user's repository only read. `cwd` is then the same
    /// directory inside that checkout.
    #[serde(rename = "ref")]
    pub git_ref: Option<String>,
    /// Run once before the matrix, in `cwd` (e.g. `["npm", "ci"]`); a failure is the target's.
    pub build: Option<Vec<String>>,
    /// How long `build` may take before it is stopped and the target fails (10 min when
    /// absent).
    #[serde(default, deserialize_with = "some_duration")]
    pub build_timeout: Option<Duration>,
    /// Variables of your environment this target (and its build) is given, by name
    /// (`["NODE_OPTIONS"]`): besides a small base (`PATH`, `HOME`, the locale, …) and its
    /// `env`, a started process gets nothing of the runner's environment.
    #[serde(default)]
    pub pass_env: Vec<String>,
    /// The port `command` listens on, when it is fixed; else write `{port}` where it goes.
    pub port: Option<u16>,
    /// A path that answers 2xx once the server is ready (`"/health"`); without it, ready is
    /// the port accepting connections.
    pub ready: Option<String>,
    /// How long a server may take to be ready (30 s when absent).
    #[serde(default, deserialize_with = "some_duration")]
    pub ready_timeout: Option<Duration>,
    /// After SIGTERM, how long before SIGKILL (10 s when absent).
    #[serde(default, deserialize_with = "some_duration")]
    pub stop_grace: Option<Duration>,
    /// What it is verified against: `"showdown"` (targets/CONTRACT.md, the built-in targets'
    /// default) or `"declared"` (the file's checks only, the default of the others).
    pub contract: Option<Contract>,
    /// Checks for this target only.
    #[serde(default, rename = "check")]
    pub checks: Vec<CheckSpec>,
    /// Environment values (`CLUSTER`, `GOROUTINE`, … for the built-ins; anything for a
    /// command).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// A remote target's base URL, e.g. `http://10.0.1.5:8080`.
    pub url: Option<String>,
    /// The probe watching a remote target, `HOST:PORT`.
    pub probe: Option<String>,
    pub probe_token_file: Option<PathBuf>,
    /// The remote probe's TLS: its certificate's SHA-256 fingerprint, or a CA file (PEM).
    pub probe_fingerprint: Option<String>,
    pub probe_ca: Option<PathBuf>,
    /// Hold a local target to this many CPUs (a cgroup CPU quota where the machine allows).
    pub cpus: Option<f64>,
    /// Hold a local target to this much memory, e.g. `"1GiB"` (a cgroup memory limit).
    pub memory: Option<String>,
    /// Load fields that differ for this target (e.g. its own rate).
    pub load: Option<LoadSpec>,
}

/// What a target is held to before it is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Contract {
    /// `targets/CONTRACT.md`, every endpoint.
    Showdown,
    /// The file's `[[check]]` and `[[target.check]]` only.
    Declared,
}

/// Where a target comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetKind {
    /// One of `targets/`, started by `targets/run`.
    Builtin,
    /// A server of the user's, started by its command line.
    Command,
    /// Running elsewhere, reached by URL and watched by its own probe.
    Remote,
}

/// One declared check: a request and what must come back.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CheckSpec {
    /// `GET` when absent.
    pub method: Option<String>,
    pub path: String,
    pub body: Option<String>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The status expected (any 2xx when absent).
    pub status: Option<u16>,
    /// JSON fields the body must have (`"id"`, or `"user.id"` for a nested one).
    #[serde(default)]
    pub json_has: Vec<String>,
    /// JSON fields the body must have with these values.
    #[serde(default)]
    pub json_equals: BTreeMap<String, toml::Value>,
    /// A query whose count must grow by `burst` when the request is sent `burst` times
    /// (`"SELECT count(*) FROM items"`): the writes really happened. Needs `[database]`.
    pub rows_added: Option<String>,
    /// How many times the request is sent for `rows_added` (20 when absent).
    pub burst: Option<u32>,
}

impl CheckSpec {
    /// `GET /path → 200`, as the page lists it.
    pub fn title(&self) -> String {
        let status = self
            .status
            .map(|s| s.to_string())
            .unwrap_or_else(|| "2xx".into());
        let rows = match (&self.rows_added, self.burst) {
            (Some(_), b) => format!(", ×{} adds rows", b.unwrap_or(DEFAULT_BURST)),
            _ => String::new(),
        };
        format!(
            "{} {} → {status}{rows}",
            self.method.as_deref().unwrap_or("GET"),
            self.path
        )
    }
}

/// Requests of a `rows_added` burst when the check names none.
pub const DEFAULT_BURST: u32 = 20;

impl TargetSpec {
    pub fn kind(&self) -> TargetKind {
        match (&self.url, &self.command) {
            (Some(_), _) => TargetKind::Remote,
            (None, Some(_)) => TargetKind::Command,
            (None, None) => TargetKind::Builtin,
        }
    }

    pub fn is_remote(&self) -> bool {
        self.kind() == TargetKind::Remote
    }

    /// What it is held to: the file's word, else the full contract for a built-in target and
    /// the declared checks for the others.
    pub fn contract(&self) -> Contract {
        self.contract.unwrap_or(match self.kind() {
            TargetKind::Builtin => Contract::Showdown,
            _ => Contract::Declared,
        })
    }

    /// Whether `{port}` appears in its command line or environment.
    pub fn wants_a_port(&self) -> bool {
        self.command
            .iter()
            .flatten()
            .chain(self.env.values())
            .any(|a| a.contains(PORT_PLACEHOLDER))
    }

    /// The `targets/run` name of a local target.
    pub fn run_name(&self) -> &str {
        self.run.as_deref().unwrap_or(&self.name)
    }
}

/// `[history] references`: targets of the file, each once, and at least one target that is
/// not a reference (whose history they divide).
fn check_history(file: &ExperimentFile) -> Result<(), Invalid> {
    let references = &file.history.references;
    let names: Vec<&str> = file.targets.iter().map(|t| t.name.as_str()).collect();
    for (i, r) in references.iter().enumerate() {
        if !names.contains(&r.as_str()) {
            return Err(Invalid::new(format!(
                "[history] references: {r:?} is not a [[target]] of the file ({}): name a target run as a reference",
                names.join(", ")
            )));
        }
        if references[..i].contains(r) {
            return Err(Invalid::new(format!(
                "[history] references: {r:?} is named twice: name it once"
            )));
        }
    }
    if !references.is_empty() && names.iter().all(|n| references.iter().any(|r| r == n)) {
        return Err(Invalid::new(
            "[history] references names every target: leave out the targets whose history they divide",
        ));
    }
    for (i, m) in file.history.measures.iter().enumerate() {
        match m.parse::<analysis::ab::Measure>() {
            Ok(analysis::ab::Measure::Pss) | Err(_) => {
                return Err(Invalid::new(format!(
                    "[history] measures: {:?} is not a measure a history follows: write some of \"capacity\", \"cpu\", \"rss\", \"p50\", \"p99\"",
                    redact::printable(m)
                )))
            }
            Ok(_) if file.history.measures[..i].contains(m) => {
                return Err(Invalid::new(format!(
                    "[history] measures: {m:?} is named twice: name it once"
                )))
            }
            Ok(_) => {}
        }
    }
    if let Some(level) = file.history.level {
        if !(level > 0.0 && level < 0.5) {
            return Err(Invalid::new(format!(
                "[history] level = {level} is not a chance between 0 and 0.5: write e.g. level = 0.05"
            )));
        }
    }
    Ok(())
}

/// `[search]`: what `loadgen capacity` looks for in every cell.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SearchSpec {
    /// The SLO's terms: `["p99<=10ms", "errors<=0.1%"]`.
    pub slo: Vec<String>,
    /// The first rate (by default, half what a short closed loop served).
    pub start: Option<f64>,
    /// The bracket's width at which a search stops, `"5%"`.
    pub resolution: Option<String>,
    /// Each step's measured window (`10s` when absent).
    #[serde(default, deserialize_with = "some_duration")]
    pub step: Option<Duration>,
    /// The load before each step's window (`2s` when absent).
    #[serde(default, deserialize_with = "some_duration")]
    pub warmup: Option<Duration>,
    /// The longest the server is warmed before the first step, until its median latency stops
    /// trending (`2m` when absent, `0s`: not warmed).
    #[serde(default, deserialize_with = "some_duration")]
    pub settle: Option<Duration>,
    pub min_rate: Option<f64>,
    pub max_rate: Option<f64>,
    pub max_steps: Option<u64>,
    /// The figure is C_p: the rate a window meets the SLO at with probability p (0.5 when
    /// absent; 0.05 to 0.95).
    pub p: Option<f64>,
    /// Stop a search once C_p's 95 % interval is within ± this share of it, `"5%"` (the
    /// default, as `loadgen capacity --until`).
    pub until: Option<String>,
    /// Start no new step of a search after this long (`"5m"`; none when absent); the search
    /// then says what it reached. Scaled by `--scale` as its steps are.
    #[serde(default, deserialize_with = "some_duration")]
    pub budget: Option<Duration>,
    /// Compare the targets as interleaved ratios: at each setting and repetition, every
    /// target's search runs at once, this many rounds of one step of each in a random order
    /// (all targets up), each pair compared by the ratio of their capacities with its 95 %
    /// interval over the rounds. Absent: each target searched on its own, one after another.
    pub rounds: Option<u32>,
    /// After each search, a calibration check of this many blocks (4 to 200; as
    /// `loadgen capacity --check`). Not with rounds.
    pub check: Option<u32>,
}

/// `[compare]`: did the candidate make the server slower or hungrier than the baseline? At a
/// fixed rate each repetition is a round: every compared target runs the load once, in a
/// random order, and each measure's ratio candidate ÷ baseline is judged over the rounds
/// (`analysis::ab`). With `[search]` rounds, the builds' searches are compared in those rounds
/// (capacity), and a share of their capacities in the rate axis is a fixed rate, the same for
/// every build, compared in `repetitions` rounds.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CompareSpec {
    /// The target the candidate is held to (e.g. the base branch's build).
    pub baseline: String,
    /// The target under test (e.g. the pull request's build).
    pub candidate: String,
    /// An A/A control: a target that runs the baseline's very build. The host's noise
    /// between two runs of one build: the smallest change this sitting could tell.
    pub control: Option<String>,
    /// The most each gated measure may change, `"cpu=5%,p99=10%"` (cpu, rss, pss, p50, p99 at
    /// a fixed rate; capacity, which may fall, of searches); see [`CompareSpec::allowed`].
    pub max_regression: Option<String>,
    /// `"fresh"` (the default): every run a process of its own, started and warmed in its
    /// round, so what differs between two processes of one build is in the rounds' spread;
    /// `"kept"`: each build started once and kept up through the rounds (quicker, for a server
    /// slow to start, but a process's own difference then reads as its build's).
    #[serde(default)]
    pub processes: analysis::ab::Processes,
    /// `"auto"`: the rounds run until every gated measure is decided, read after each round
    /// with a confidence sequence that holds at every look (`analysis::ab::sequential`), from
    /// `min_rounds` to `max_rounds`, within `budget`; the file's `repetitions` are then not
    /// read. Absent: the file's `repetitions` are the rounds, read once.
    pub rounds: Option<String>,
    /// With `rounds = "auto"`: the rounds before the first look (5 when absent, 3 at least;
    /// the confidence sequence bounds nothing before 5).
    pub min_rounds: Option<u32>,
    /// With `rounds = "auto"`: the most rounds (40 when absent).
    pub max_rounds: Option<u32>,
    /// With `rounds = "auto"`: the time the rounds may take (`"15m"`); no round starts that
    /// the rounds so far say would end past it.
    #[serde(default, deserialize_with = "some_duration")]
    pub budget: Option<Duration>,
}

/// A gate's rounds read after every round (`[compare] rounds = "auto"`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AutoRounds {
    pub min: u32,
    pub max: u32,
    pub budget: Option<Duration>,
}

impl CompareSpec {
    /// The rounds read after every round, when the file says `rounds = "auto"`.
    pub fn auto(&self) -> Option<AutoRounds> {
        (self.rounds.as_deref() == Some("auto")).then(|| AutoRounds {
            min: self.min_rounds.unwrap_or(5),
            max: self.max_rounds.unwrap_or(40),
            budget: self.budget,
        })
    }

    /// The measures gated and the change each may make: capacity, by the searches of `file`
    /// compared in rounds (a `[search]` with rounds), and the others, by its runs at a fixed
    /// rate (a rate in requests a second without `[search]`, or a share of the capacities
    /// found, `rate = ["search", "60%"]`). When `max_regression` is absent: capacity within
    /// 5 %, CPU per request and peak memory within 5 %, each where the file measures it.
    pub fn allowed(
        &self,
        file: &ExperimentFile,
    ) -> Result<(analysis::ab::Allowed, analysis::ab::Allowed), AllowedError> {
        use analysis::ab::Allowed;
        let searches = file.search.is_some();
        let at_rate = !searches || file.has_shares();
        let (capacity, fixed) = match &self.max_regression {
            Some(text) => text
                .parse::<Allowed>()
                .map_err(AllowedError::Unreadable)?
                .split(),
            None => (
                if searches {
                    Allowed::capacity()
                } else {
                    Allowed::none()
                },
                if at_rate {
                    Allowed::default()
                } else {
                    Allowed::none()
                },
            ),
        };
        if !capacity.is_empty() && !searches {
            return Err(AllowedError::CapacityWithoutSearches);
        }
        if !fixed.is_empty() && !at_rate {
            return Err(AllowedError::FixedWithoutRate(fixed));
        }
        Ok((capacity, fixed))
    }

    /// The compared targets: baseline, candidate, then the control if any.
    pub fn targets(&self) -> Vec<&str> {
        let mut out = vec![self.baseline.as_str(), self.candidate.as_str()];
        out.extend(self.control.as_deref());
        out
    }
}

/// Why `[compare] max_regression` cannot gate this file's comparison.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AllowedError {
    #[error("[compare] max_regression: {0}")]
    Unreadable(#[source] analysis::ab::AllowedError),
    #[error("[compare] max_regression: capacity is gated by searches compared in rounds: add [search] with slo and rounds (and no fixed rate), or gate cpu, rss, pss, p50 or p99 at this fixed rate")]
    CapacityWithoutSearches,
    /// The measures gated at a fixed rate.
    #[error("[compare] max_regression: {0} is measured at a fixed rate, and this comparison of searches runs none: add a share of the capacities found to the rate axis ([matrix] rate = [\"search\", \"60%\"]), or gate capacity alone")]
    FixedWithoutRate(analysis::ab::Allowed),
}

/// Open loop or closed loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Open,
    Closed,
}

/// One weighted request of a mix.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MixEntry {
    pub path: String,
    #[serde(default = "one")]
    pub weight: u32,
    pub method: Option<String>,
    pub body: Option<String>,
}

/// A load, or the fields of one that a layer changes.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LoadSpec {
    /// `open` (a rate) or `closed` (connections that each send when answered); by default
    /// open when a rate or steps are given.
    pub mode: Option<Mode>,
    pub method: Option<String>,
    pub path: Option<String>,
    pub headers: Option<BTreeMap<String, String>>,
    /// A variable of your environment holding more headers, one `Name: value` a line (e.g.
    /// `"API_HEADERS"`, to keep a token out of the file): only the variable named here is read,
    /// so an exported `SHOWDOWN_HEADERS` reaches no target unless the file asks (and the user
    /// confirms it: `--pass-env SHOWDOWN_HEADERS`).
    pub headers_env: Option<String>,
    /// A body template (`{{seq}}`, `{{hex:N}}`, … as in `loadgen attack --body`).
    pub body: Option<String>,
    /// Weighted requests instead of one `path`.
    pub mix: Option<Vec<MixEntry>>,
    /// Requests per second (open loop), or with `[search]` a share of the capacity the
    /// experiment's search of the same target and requests finds (`"80%"`).
    pub rate: Option<Rate>,
    /// Rates one after another, each for `step_duration` (open loop).
    pub steps: Option<Vec<f64>>,
    #[serde(default, deserialize_with = "some_duration")]
    pub step_duration: Option<Duration>,
    /// Open loop: the most connections the pool may hold (wrk2's `-c`); closed loop: the
    /// connections, each with one request in flight (hey's `-c`).
    pub connections: Option<u64>,
    #[serde(default, deserialize_with = "some_duration")]
    pub duration: Option<Duration>,
    /// Requests in all (with `duration`, whichever comes first).
    pub requests: Option<u64>,
    #[serde(default, deserialize_with = "some_duration")]
    pub timeout: Option<Duration>,
    pub threads: Option<usize>,
    /// Open loop: release requests on a grid of this width instead of each at its own time
    /// (`loadgen attack --batch`, as wrk2 paces in 1 ms batches): a quarter of the CPU a
    /// request, each up to one window late, recorded.
    #[serde(default, deserialize_with = "some_duration")]
    pub batch: Option<Duration>,
    /// Open loop: `"uniform"` (the default) or `"poisson"` arrivals (`loadgen attack
    /// --arrival`): exponential gaps, each request at its own instant.
    pub arrival: Option<store::vocabulary::ArrivalProcess>,
    /// The SLO each measured run of this load is judged against on its whole-run figures
    /// (`loadgen attack --slo`): `["p99<=10ms", "errors<=0.1%", "cpu<=70%"]`. Its verdict is on
    /// the page beside the cell's figures.
    pub slo: Option<Vec<String>>,
}

impl LoadSpec {
    /// This load with the fields `over` sets replaced.
    pub fn with(&self, over: &LoadSpec) -> LoadSpec {
        fn pick<T: Clone>(over: &Option<T>, base: &Option<T>) -> Option<T> {
            over.clone().or_else(|| base.clone())
        }
        LoadSpec {
            mode: pick(&over.mode, &self.mode),
            method: pick(&over.method, &self.method),
            path: pick(&over.path, &self.path),
            headers: pick(&over.headers, &self.headers),
            headers_env: pick(&over.headers_env, &self.headers_env),
            body: pick(&over.body, &self.body),
            mix: pick(&over.mix, &self.mix),
            rate: pick(&over.rate, &self.rate),
            steps: pick(&over.steps, &self.steps),
            step_duration: pick(&over.step_duration, &self.step_duration),
            connections: pick(&over.connections, &self.connections),
            duration: pick(&over.duration, &self.duration),
            requests: pick(&over.requests, &self.requests),
            timeout: pick(&over.timeout, &self.timeout),
            threads: pick(&over.threads, &self.threads),
            batch: pick(&over.batch, &self.batch),
            arrival: pick(&over.arrival, &self.arrival),
            slo: pick(&over.slo, &self.slo),
        }
    }

    /// The rate in requests a second, when it is one (not a share still to resolve).
    pub fn per_second(&self) -> Option<f64> {
        match self.rate {
            Some(Rate::PerSecond(r)) => Some(r),
            _ => None,
        }
    }

    /// The share of a capacity the rate is, when it is one.
    pub fn share(&self) -> Option<f64> {
        match self.rate {
            Some(Rate::Share(s)) => Some(s),
            _ => None,
        }
    }

    /// What the server is asked, whatever the rate: two cells with the same requests (and the
    /// same target and environment) have the same capacity.
    pub fn requests(&self) -> String {
        serde_json::json!([
            self.method,
            self.path,
            self.headers,
            self.headers_env,
            self.body,
            self.mix
        ])
        .to_string()
    }

    /// Open or closed, as given or as implied.
    pub fn mode(&self) -> Mode {
        match self.mode {
            Some(m) => m,
            None if self.rate.is_some() || self.steps.is_some() => Mode::Open,
            None => Mode::Closed,
        }
    }
}

/// A load's rate: requests a second, or a share of a measured capacity (`"80%"`), so that
/// "near each server's maximum" means the same on any host.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rate {
    PerSecond(f64),
    /// A fraction: `"80%"` is 0.8.
    Share(f64),
}

/// The largest share of a capacity a rate may be: beyond it, the cell only measures overload.
pub const MAX_SHARE: f64 = 5.0;

/// A rate that is neither requests a second nor a share: the text as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("rate {0:?} is neither requests a second nor a share of the capacity: write e.g. 2000 or \"80%\" (above 0 %, at most {most:.0} %)", most = MAX_SHARE * 100.0)]
pub struct RateError(pub String);

impl std::str::FromStr for Rate {
    type Err = RateError;

    /// `"80%"`, or a number of requests a second.
    fn from_str(text: &str) -> Result<Rate, RateError> {
        let t = text.trim();
        let why = || RateError(text.to_string());
        match t.strip_suffix('%') {
            Some(p) => {
                let share = p.trim().parse::<f64>().map_err(|_| why())? / 100.0;
                if share > 0.0 && share <= MAX_SHARE {
                    Ok(Rate::Share(share))
                } else {
                    Err(why())
                }
            }
            None => match t.parse::<f64>() {
                Ok(r) if r.is_finite() => Ok(Rate::PerSecond(r)),
                _ => Err(why()),
            },
        }
    }
}

impl std::fmt::Display for Rate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rate::PerSecond(r) => write!(f, "{r}"),
            Rate::Share(s) => {
                // 57 % is 0.57, which × 100 is 56.99999999999999: two decimals at most.
                let p = format!("{:.2}", s * 100.0);
                write!(f, "{}%", p.trim_end_matches('0').trim_end_matches('.'))
            }
        }
    }
}

impl Serialize for Rate {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Rate::PerSecond(r) => s.serialize_f64(*r),
            Rate::Share(_) => s.serialize_str(&self.to_string()),
        }
    }
}

impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Rate, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Rate;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("requests a second (2000) or a share of the capacity (\"80%\")")
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Rate, E> {
                Ok(Rate::PerSecond(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Rate, E> {
                Ok(Rate::PerSecond(v as f64))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Rate, E> {
                Ok(Rate::PerSecond(v as f64))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Rate, E> {
                v.parse().map_err(E::custom)
            }
        }
        d.deserialize_any(Visitor)
    }
}

fn one() -> u32 {
    1
}
impl ExperimentFile {
    /// What a local target's probe profiles, when the file asks it to.
    pub fn profile_config(&self) -> Option<probe::profile::ProfileConfig> {
        self.profile.then(|| probe::profile::ProfileConfig {
            hz: self.profile_hz.unwrap_or(probe::profile::DEFAULT_HZ),
            ..Default::default()
        })
    }
}

fn probe_interval() -> Duration {
    Duration::from_millis(100)
}
fn pre_roll() -> Duration {
    Duration::from_secs(1)
}
fn post_roll() -> Duration {
    Duration::from_secs(2)
}

pub(crate) fn duration<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let text = String::deserialize(d)?;
    humantime::parse_duration(&text).map_err(|e| {
        serde::de::Error::custom(format!(
            "{text:?} is not a duration ({e}): write e.g. \"30s\" or \"500ms\""
        ))
    })
}

pub(crate) fn some_duration<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    duration(d).map(Some)
}

/// Where the runner writes the port it chose for a target started by command.
pub const PORT_PLACEHOLDER: &str = "{port}";
/// A command's first word that runs the runner's own `loadgen` (its built-in target as a
/// reference, say): the same build as the generator, found whether or not it is on PATH.
pub const LOADGEN_PLACEHOLDER: &str = "{loadgen}";

/// Why a file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("cannot read the experiment file {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not UTF-8 text")]
    NotText { path: PathBuf },
    /// The TOML parser's message, on one line.
    #[error("{path}: {message}")]
    Toml { path: PathBuf, message: String },
    #[error("{path}: {why}")]
    Invalid { path: PathBuf, why: Invalid },
}

/// What a file says that serde cannot refuse: names that must exist, fields that do not go
/// together, values that make no sense. A message rather than a variant each: the check has
/// some seventy, built from many shapes of table, field and value, each naming the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Invalid(String);

impl Invalid {
    fn new(message: impl Into<String>) -> Invalid {
        Invalid(message.into())
    }
}

/// An experiment file read and checked, with the hash of its bytes.
#[derive(Debug, Clone)]
pub struct Experiment {
    pub path: PathBuf,
    pub file: ExperimentFile,
    /// SHA-256 of the file's bytes, hex: finished cells are found again by it.
    pub hash: String,
}

/// The axes a matrix may have, beside `target`, `load` and `env.NAME`.
pub const SCALAR_AXES: [&str; 7] = [
    "rate",
    "connections",
    "requests",
    "duration",
    "path",
    "method",
    "steps",
];

impl Experiment {
    pub fn read(path: &Path) -> Result<Experiment, FileError> {
        let bytes = std::fs::read(path).map_err(|source| FileError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let text = String::from_utf8(bytes.clone()).map_err(|_| FileError::NotText {
            path: path.to_path_buf(),
        })?;
        let file: ExperimentFile = toml::from_str(&text).map_err(|e| FileError::Toml {
            path: path.to_path_buf(),
            message: crate::flatten(&e.to_string()),
        })?;
        check(&file).map_err(|why| FileError::Invalid {
            path: path.to_path_buf(),
            why,
        })?;
        use sha2::Digest;
        Ok(Experiment {
            path: path.to_path_buf(),
            hash: hex::encode(sha2::Sha256::digest(&bytes)),
            file,
        })
    }
}

/// Checks what serde cannot: names that must exist, values that must make sense.
fn check(file: &ExperimentFile) -> Result<(), Invalid> {
    if file.name.trim().is_empty() || file.question.trim().is_empty() {
        return Err(Invalid::new("name and question must not be empty"));
    }
    if file.targets.is_empty() {
        return Err(Invalid::new("no [[target]]: name at least one"));
    }
    check_history(file)?;
    if file.repetitions == 0 {
        return Err(Invalid::new("repetitions must be at least 1"));
    }
    check_profile(file)?;
    check_database(file)?;
    check_names(file)?;
    if let Some(guns) = &file.guns {
        check_guns(file, guns)?;
    }
    check_watches(&file.watches)?;
    let mut names = std::collections::BTreeSet::new();
    for t in &file.targets {
        if !names.insert(t.name.as_str()) {
            return Err(Invalid::new(format!("two targets are named {:?}", t.name)));
        }
        check_target(t, file.database.is_some())?;
    }
    for c in &file.checks {
        check_check(c, file.database.is_some())
            .map_err(|e| Invalid::new(format!("[[check]] {e}")))?;
    }
    if let Some(search) = &file.search {
        check_searched(file, search)?;
    }
    if let Some(compare) = &file.compare {
        check_compare(file, compare)?;
    }
    check_matrix(file, &names)
}

/// `profile_hz`: 1 to 1000 samples a second, and only with `profile = true`.
fn check_profile(file: &ExperimentFile) -> Result<(), Invalid> {
    match file.profile_hz {
        Some(hz) if !(1..=1000).contains(&hz) => Err(Invalid::new(format!(
            "profile_hz = {hz}: give 1 to 1000 samples a second"
        ))),
        Some(_) if !file.profile => Err(Invalid::new(
            "profile_hz without profile = true: add profile = true, or drop profile_hz",
        )),
        _ => Ok(()),
    }
}

/// `[database]`: a URL or the variable holding one (not both), its `env` a variable name,
/// `cpus` only for the throwaway PostgreSQL.
fn check_database(file: &ExperimentFile) -> Result<(), Invalid> {
    let database = file.database();
    if database.url.is_some() && database.url_env.is_some() {
        return Err(Invalid::new("[database]: give url or url_env, not both"));
    }
    if database
        .env
        .as_deref()
        .is_some_and(|v| !is_variable_name(v))
    {
        return Err(Invalid::new(
            "[database] env must be a variable name, e.g. \"DATABASE_URL\"",
        ));
    }
    if database.cpus.is_some() && (database.url.is_some() || database.url_env.is_some()) {
        return Err(Invalid::new("[database] cpus places the throwaway PostgreSQL: a database of yours (url, url_env) runs where you put it"));
    }
    Ok(())
}

/// Every load's headers valid HTTP headers, every variable's name a variable name.
fn check_names(file: &ExperimentFile) -> Result<(), Invalid> {
    for (table, load) in file.load_specs() {
        for (name, value) in load.headers.iter().flatten() {
            if !is_header(name, value) {
                return Err(Invalid::new(format!(
                    "{table} headers: {name:?} is not a valid HTTP header (a name of letters, digits and -, a value of visible characters)"
                )));
            }
        }
    }
    for variable in file.variables() {
        if !is_variable_name(&variable.name) {
            return Err(Invalid::new(format!(
                "{}: {:?} is not a variable name",
                variable.field, variable.name
            )));
        }
    }
    Ok(())
}

/// `[guns]`: its own checks; no search from Kubernetes pods; every target remote.
fn check_guns(file: &ExperimentFile, guns: &crate::guns::GunsSpec) -> Result<(), Invalid> {
    guns.check().map_err(|e| Invalid::new(e.to_string()))?;
    if guns.kubernetes.is_some() && file.search.is_some() {
        return Err(Invalid::new("[search] with [guns] kubernetes: a search runs as a loadgen capacity of its own, which cannot take over the runner's pods; run the search's cells from SSH guns, or the search alone with loadgen capacity from a Job of its own (docs/guns.md)"));
    }
    if let Some(t) = file.targets.iter().find(|t| !t.is_remote()) {
        return Err(Invalid::new(format!(
            "target {:?}: with [guns], every target is remote (url and probe): the guns reach a target and its probe by address, not this machine's loopback",
            t.name
        )));
    }
    Ok(())
}

/// `[search]`: its own checks; the search chooses the rates, so the matrix has no steps axis,
/// and its rate axis holds only "search" and shares of the capacity found.
fn check_searched(file: &ExperimentFile, search: &SearchSpec) -> Result<(), Invalid> {
    check_search(search)?;
    if file.matrix.contains_key("steps") {
        return Err(Invalid::new(
            "[search] chooses the rates: drop the steps axis",
        ));
    }
    if let Some(toml::Value::Array(rates)) = file.matrix.get("rate") {
        for v in rates {
            let fits = v.as_str().is_some_and(|t| {
                t == analysis::capacity::SEARCH_RATE || matches!(t.parse(), Ok(Rate::Share(_)))
            });
            if !fits {
                return Err(Invalid::new(format!("matrix.rate: {v} with [search]: the search chooses the rates; the axis may hold \"search\" (the cell that searches) and shares of the capacity it finds, such as \"80%\"")));
            }
        }
    }
    Ok(())
}

/// `[compare]`: its targets the file's (all of them, each named once), a fixed rate of an open
/// loop (enough rounds for an interval is the plan's check: `--repetitions` may change them).
fn check_compare(file: &ExperimentFile, compare: &CompareSpec) -> Result<(), Invalid> {
    compare
        .allowed(file)
        .map_err(|e| Invalid::new(e.to_string()))?;
    check_compare_targets(file, compare)?;
    if let Some(search) = &file.search {
        if search.rounds.is_none() {
            return Err(Invalid::new("[compare] with [search] gates capacity from searches compared in interleaved rounds: add rounds = 16 to [search]"));
        }
    }
    check_compare_rounds(file, compare)?;
    check_compare_load(file)
}

/// `[compare]`'s targets: each a `[[target]]`, named once, and every target one of them.
fn check_compare_targets(file: &ExperimentFile, compare: &CompareSpec) -> Result<(), Invalid> {
    let named = compare.targets();
    for (i, name) in named.iter().enumerate() {
        if !file.targets.iter().any(|t| t.name == *name) {
            return Err(Invalid::new(format!(
                "[compare] names {name:?}, which is no [[target]]'s name"
            )));
        }
        if named[..i].contains(name) {
            return Err(Invalid::new(format!(
                "[compare] names {name:?} twice: an A/A control is a target of its own that runs the baseline's build"
            )));
        }
    }
    if let Some(t) = file
        .targets
        .iter()
        .find(|t| !named.contains(&t.name.as_str()))
    {
        return Err(Invalid::new(format!(
            "[compare] compares its baseline, its candidate and its control only: target {:?} is none of them (drop it, or compare it in a file of its own)",
            t.name
        )));
    }
    Ok(())
}

/// `[compare]`'s `rounds`: absent (with no min_rounds, max_rounds or budget) or `"auto"` with
/// sane bounds, and `"auto"` only where a fixed rate is run.
fn check_compare_rounds(file: &ExperimentFile, compare: &CompareSpec) -> Result<(), Invalid> {
    match compare.rounds.as_deref() {
        None if compare.min_rounds.is_some()
            || compare.max_rounds.is_some()
            || compare.budget.is_some() =>
        {
            Err(Invalid::new(
                "[compare] min_rounds, max_rounds and budget go with rounds = \"auto\": add it, or drop them (the file's repetitions are then the rounds)",
            ))
        }
        None => Ok(()),
        Some("auto") => check_compare_auto(file, compare),
        Some(other) => Err(Invalid::new(format!(
            "[compare] rounds = {:?}: write rounds = \"auto\" (read after every round until decided), or leave it out and give repetitions",
            redact::printable(other)
        ))),
    }
}

/// `rounds = "auto"`: min_rounds and max_rounds in order and in bounds, and a fixed rate to
/// read rounds at.
fn check_compare_auto(file: &ExperimentFile, compare: &CompareSpec) -> Result<(), Invalid> {
    let auto = compare.auto().unwrap_or(AutoRounds {
        min: 5,
        max: 40,
        budget: None,
    });
    if (auto.min as usize) < analysis::ab::MIN_ROUNDS || auto.max < auto.min || auto.max > 1000 {
        return Err(Invalid::new(format!(
            "[compare] rounds = \"auto\" looks from min_rounds ({}) to max_rounds ({}): give {} ≤ min_rounds ≤ max_rounds ≤ 1000",
            auto.min,
            auto.max,
            analysis::ab::MIN_ROUNDS
        )));
    }
    if file.search.is_some() && !file.has_shares() {
        return Err(Invalid::new(
            "[compare] rounds = \"auto\" reads rounds at a fixed rate (or a share of the capacities found); a comparison of searches runs [search] rounds: set those instead",
        ));
    }
    Ok(())
}

/// `[compare]`'s load: run from this machine, the same for every build, one fixed rate of an
/// open loop (unless searches are compared).
fn check_compare_load(file: &ExperimentFile) -> Result<(), Invalid> {
    if file.guns.is_some() {
        return Err(Invalid::new(
            "[compare] runs from this machine: drop [guns]",
        ));
    }
    if let Some(t) = file.targets.iter().find(|t| t.load.is_some()) {
        return Err(Invalid::new(format!(
            "target {:?}: [compare] runs every build at the same load: drop the target's own load",
            t.name
        )));
    }
    for (table, load) in file
        .load_specs()
        .into_iter()
        .filter(|_| file.search.is_none())
    {
        let fixed = load.mode() == Mode::Open && matches!(load.rate, Some(Rate::PerSecond(_)));
        if !fixed || load.steps.is_some() {
            return Err(Invalid::new(format!(
                "{table}: [compare] measures every build at one fixed rate of an open loop, below both capacities: give rate = N (requests a second), without steps"
            )));
        }
    }
    Ok(())
}

/// `[[watch]]`: each named once, found by exactly one of port, pid or command.
fn check_watches(watches: &[WatchSpec]) -> Result<(), Invalid> {
    let mut watched = std::collections::BTreeSet::new();
    for w in watches {
        if w.name.trim().is_empty() || !watched.insert(w.name.as_str()) {
            return Err(Invalid::new(format!(
                "[[watch]] {:?}: give each a name of its own (as pages will say it)",
                w.name
            )));
        }
        let given = [w.port.is_some(), w.pid.is_some(), w.command.is_some()];
        if given.iter().filter(|g| **g).count() != 1 {
            return Err(Invalid::new(format!(
                "[[watch]] {:?}: find it by exactly one of port, pid or command",
                w.name
            )));
        }
        if let Some(Err(e)) = w.command.as_deref().map(regex::Regex::new) {
            return Err(Invalid::new(format!(
                "[[watch]] {:?}: command is not a valid regular expression: {}",
                w.name,
                crate::flatten(&e.to_string())
            )));
        }
    }
    Ok(())
}

/// One `[[target]]`: how it runs, where it is watched, what it is given.
fn check_target(t: &TargetSpec, has_database: bool) -> Result<(), Invalid> {
    check_kind(t, has_database)?;
    check_target_place(t)?;
    if t.probe_token_file.is_some() && t.probe_fingerprint.is_none() && t.probe_ca.is_none() {
        return Err(Invalid::new(format!(
            "target {:?}: probe_token_file needs probe_fingerprint or probe_ca: a token is only sent over TLS that checks the probe is the one you mean",
            t.name
        )));
    }
    if t.is_remote() && !t.pass_env.is_empty() {
        return Err(Invalid::new(format!(
            "target {:?}: pass_env is for a target the runner starts; a remote one has its own environment",
            t.name
        )));
    }
    check_pass_env(t)?;
    if let Some(memory) = &t.memory {
        crate::limits::parse_bytes(memory)
            .map_err(|e| Invalid::new(format!("target {:?}: memory: {e}", t.name)))?;
    }
    if t.cpus.is_some_and(|c| !(c > 0.0 && c <= 1024.0)) {
        return Err(Invalid::new(format!(
            "target {:?}: cpus must be above 0 and at most 1024",
            t.name
        )));
    }
    Ok(())
}

/// A target's `url` and `probe`: both or neither, neither empty; a local built-in one named in
/// targets/.
fn check_target_place(t: &TargetSpec) -> Result<(), Invalid> {
    let given = |v: &Option<String>| v.as_deref().is_some_and(|v| !v.trim().is_empty());
    if t.url.is_some() && !given(&t.url) || t.probe.is_some() && !given(&t.probe) {
        return Err(Invalid::new(format!(
            "target {:?}: url and probe must not be empty: a base URL such as \"http://10.0.1.5:8080\" and a \"HOST:PORT\"",
            t.name
        )));
    }
    match (&t.url, &t.probe) {
        (Some(_), None) => Err(Invalid::new(format!(
            "target {:?} is remote (url) but names no probe: add probe = \"HOST:PORT\"",
            t.name
        ))),
        (None, Some(_)) => Err(Invalid::new(format!(
            "target {:?} has a probe but no url: a local target is watched by the runner's own probe",
            t.name
        ))),
        (None, None)
            if t.kind() == TargetKind::Builtin
                && !crate::targets::NAMES.contains(&t.run_name()) =>
        {
            Err(Invalid::new(format!(
                "target {:?}: no such target in targets/ (use one of {}, or run = \"…\", or command = [\"…\"] for a server of yours, or url and probe for a remote one)",
                t.name,
                crate::targets::NAMES.join(", ")
            )))
        }
        _ => Ok(()),
    }
}

/// A target's `pass_env`: variable names, none Showdown keeps from targets.
fn check_pass_env(t: &TargetSpec) -> Result<(), Invalid> {
    for name in &t.pass_env {
        if !is_variable_name(name) {
            return Err(Invalid::new(format!(
                "target {:?}: pass_env: {name:?} is not a variable name",
                t.name
            )));
        }
        if crate::environment::NEVER.contains(&name.as_str()) {
            return Err(Invalid::new(format!(
                "target {:?}: pass_env names {name}, which Showdown never gives a target (it holds the store's URL or your headers)",
                t.name
            )));
        }
    }
    Ok(())
}

/// `[matrix]`: every axis a list of values the file can use.
fn check_matrix(
    file: &ExperimentFile,
    names: &std::collections::BTreeSet<&str>,
) -> Result<(), Invalid> {
    for (axis, values) in &file.matrix {
        if axis == "env" {
            check_env_axis(values)?;
            continue;
        }
        let toml::Value::Array(values) = values else {
            return Err(Invalid::new(format!(
                "matrix.{axis} must be a list of values"
            )));
        };
        if values.is_empty() {
            return Err(Invalid::new(format!("matrix.{axis} is empty")));
        }
        match axis.as_str() {
            "target" => {
                for v in values {
                    let name = v.as_str().unwrap_or_default();
                    if !names.contains(name) {
                        return Err(Invalid::new(format!(
                            "matrix.target: {v} is not a [[target]] name"
                        )));
                    }
                }
            }
            "load" => {
                for v in values {
                    let name = v.as_str().unwrap_or_default();
                    if !file.loads.contains_key(name) {
                        return Err(Invalid::new(format!(
                            "matrix.load: {v} is not a [loads.NAME] table"
                        )));
                    }
                }
            }
            a if SCALAR_AXES.contains(&a) => {}
            parameter => check_parameter_axis(file, parameter)?,
        }
    }
    Ok(())
}

/// `matrix.env`: a table of variables, each a list of values.
fn check_env_axis(values: &toml::Value) -> Result<(), Invalid> {
    let toml::Value::Table(vars) = values else {
        return Err(Invalid::new(
            "matrix.env must be a table: write env.NAME = [values]",
        ));
    };
    for (var, values) in vars {
        match values {
            toml::Value::Array(v) if !v.is_empty() => {}
            _ => {
                return Err(Invalid::new(format!(
                    "matrix.env.{var} must be a list of values"
                )))
            }
        }
    }
    Ok(())
}

/// An axis that is none of the known ones: a parameter some load writes as `{NAME}`.
fn check_parameter_axis(file: &ExperimentFile, parameter: &str) -> Result<(), Invalid> {
    let placeholder = format!("{{{parameter}}}");
    let mentions = |l: &LoadSpec| {
        l.path.as_deref().is_some_and(|p| p.contains(&placeholder))
            || l.body.as_deref().is_some_and(|b| b.contains(&placeholder))
            || l.mix.iter().flatten().any(|m| {
                m.path.contains(&placeholder)
                    || m.body.as_deref().is_some_and(|b| b.contains(&placeholder))
            })
    };
    let used = mentions(&file.load)
        || file.loads.values().any(mentions)
        || file
            .targets
            .iter()
            .filter_map(|t| t.load.as_ref())
            .any(mentions);
    if !used {
        return Err(Invalid::new(format!(
            "matrix.{parameter}: not an axis (use target, load, env.NAME, one of {}, or a parameter written {placeholder} in the load's path or body)",
            SCALAR_AXES.join(", ")
        )));
    }
    Ok(())
}

fn is_variable_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// What each kind of target may and must say.
fn check_kind(t: &TargetSpec, has_database: bool) -> Result<(), Invalid> {
    let name = &t.name;
    let only_command = [
        ("cwd", t.cwd.is_some()),
        ("ref", t.git_ref.is_some()),
        ("build", t.build.is_some()),
        ("build_timeout", t.build_timeout.is_some()),
        ("port", t.port.is_some()),
        ("ready_timeout", t.ready_timeout.is_some()),
        ("stop_grace", t.stop_grace.is_some()),
    ];
    match t.kind() {
        TargetKind::Command => {
            let Some(command) = &t.command else {
                return Ok(());
            };
            check_command(t, command)?;
        }
        TargetKind::Remote | TargetKind::Builtin => {
            if let Some((field, _)) = only_command.iter().find(|(_, given)| *given) {
                return Err(Invalid::new(format!(
                    "target {name:?}: {field} is for a server started by command (command = [\"…\"])"
                )));
            }
        }
    }
    if t.kind() == TargetKind::Builtin && t.ready.is_some() {
        return Err(Invalid::new(format!(
            "target {name:?}: ready is for a server started by command or a remote one; a built-in target says when it is ready"
        )));
    }
    if let Some(ready) = &t.ready {
        if !ready.starts_with('/') {
            return Err(Invalid::new(format!(
                "target {name:?}: ready must be a path, e.g. \"/health\""
            )));
        }
    }
    for c in &t.checks {
        check_check(c, has_database)
            .map_err(|e| Invalid::new(format!("target {name:?}: [[target.check]] {e}")))?;
    }
    Ok(())
}

/// A server started by command: a program to run, a build to run if any, a ref to build
/// from, where it listens; no run, no contract of the built-in targets.
fn check_command(t: &TargetSpec, command: &[String]) -> Result<(), Invalid> {
    let name = &t.name;
    if command.first().is_none_or(|p| p.trim().is_empty()) {
        return Err(Invalid::new(format!(
            "target {name:?}: command is empty: write the program and its arguments, e.g. [\"node\", \"server.js\"]"
        )));
    }
    if t.run.is_some() {
        return Err(Invalid::new(format!(
            "target {name:?}: run names a built-in target, command starts your own: give one"
        )));
    }
    if t.build
        .as_ref()
        .is_some_and(|b| b.first().is_none_or(|p| p.trim().is_empty()))
    {
        return Err(Invalid::new(format!(
            "target {name:?}: build is empty: drop it, or write the program and its arguments"
        )));
    }
    if let Some(r) = &t.git_ref {
        crate::checkout::check_ref(r).map_err(|e| Invalid::new(format!("target {name:?}: {e}")))?;
    }
    if t.port.is_none() && !t.wants_a_port() {
        return Err(Invalid::new(format!(
            "target {name:?}: say where it listens: port = N, or {PORT_PLACEHOLDER} in its command or env for a port the runner chooses"
        )));
    }
    if t.port == Some(0) {
        return Err(Invalid::new(format!(
            "target {name:?}: port 0 is not a port to reach: write {PORT_PLACEHOLDER} where the port goes for one the runner chooses"
        )));
    }
    if t.contract == Some(Contract::Showdown) {
        return Err(Invalid::new(format!(
            "target {name:?}: contract = \"showdown\" is for the built-in targets and remote ones; a command's server is held to its checks"
        )));
    }
    Ok(())
}

fn check_check(c: &CheckSpec, has_database: bool) -> Result<(), Invalid> {
    let what = c.title();
    if !c.path.starts_with('/') {
        return Err(Invalid::new(format!("{what}: path must start with /")));
    }
    if let Some(m) = &c.method {
        if m.parse::<http::Method>().is_err() || m.is_empty() {
            return Err(Invalid::new(format!("{what}: {m:?} is not an HTTP method")));
        }
    }
    if c.status.is_some_and(|s| !(100..=599).contains(&s)) {
        return Err(Invalid::new(format!("{what}: status must be in 100..=599")));
    }
    if c.rows_added.is_some() && !has_database {
        return Err(Invalid::new(format!(
            "{what}: rows_added counts rows in the targets' database: add a [database] table (empty for a throwaway PostgreSQL)"
        )));
    }
    if c.burst.is_some() && c.rows_added.is_none() {
        return Err(Invalid::new(format!(
            "{what}: burst is the number of requests of rows_added: add rows_added or drop burst"
        )));
    }
    if c.burst.is_some_and(|b| b == 0 || b > 10_000) {
        return Err(Invalid::new(format!("{what}: burst must be in 1..=10000")));
    }
    for (header, value) in &c.headers {
        if !is_header(header, value) {
            return Err(Invalid::new(format!(
                "{what}: header {header:?} is not a valid HTTP header"
            )));
        }
    }
    Ok(())
}

/// Whether `name: value` is an HTTP header a request can carry.
pub fn is_header(name: &str, value: &str) -> bool {
    http::HeaderName::try_from(name).is_ok() && http::HeaderValue::try_from(value).is_ok()
}

fn check_search(search: &SearchSpec) -> Result<(), Invalid> {
    check_search_slo(search)?;
    if let Some(r) = &search.resolution {
        order::percent(r).map_err(|why| Invalid::new(format!("[search] resolution: {why}")))?;
    }
    if let Some(u) = &search.until {
        order::percent(u).map_err(|why| Invalid::new(format!("[search] until: {why}")))?;
    }
    if let Some(p) = search.p {
        order::probability(&p.to_string())
            .map_err(|why| Invalid::new(format!("[search] p: {why}")))?;
    }
    if search.budget.is_some_and(|b| b.is_zero()) {
        return Err(Invalid::new(
            "[search] budget is 0: give a time such as \"5m\", or leave it out",
        ));
    }
    if let Some(n) = search.check {
        let most = analysis::capacity::check::MAX_BLOCKS;
        if !(4..=most).contains(&n) {
            return Err(Invalid::new(format!(
                "[search] check is {n} blocks: give 4 to {most}, or leave it out"
            )));
        }
        if search.rounds.is_some() {
            return Err(Invalid::new("[search] check follows a search of one target: drop check, or rounds (a comparison's rounds are its own check)"));
        }
    }
    check_search_bounds(search)
}

/// `[search] slo`: not empty, every term one a search can judge.
fn check_search_slo(search: &SearchSpec) -> Result<(), Invalid> {
    if search.slo.is_empty() {
        return Err(Invalid::new(
            "[search] slo is empty: write e.g. slo = [\"p99<=10ms\", \"errors<=0.1%\"]",
        ));
    }
    for term in &search.slo {
        let parsed = term.parse::<analysis::capacity::Term>().map_err(|e| {
            Invalid::new(format!(
                "[search] slo: {:?}: {}; {}",
                term,
                e.why,
                analysis::capacity::slo::GRAMMAR
            ))
        })?;
        analysis::capacity::slo::search_term(&parsed)
            .map_err(|why| Invalid::new(format!("[search] slo: {why}; give it as a load's slo")))?;
    }
    Ok(())
}

/// `[search]`'s step and warm-up within an hour, its rates above 0 and in order.
fn check_search_bounds(search: &SearchSpec) -> Result<(), Invalid> {
    let hour = Duration::from_secs(3600);
    if search
        .step
        .is_some_and(|s| s < Duration::from_millis(100) || s > hour)
    {
        return Err(Invalid::new("[search] step lasts from 100ms to 1h"));
    }
    if search.warmup.is_some_and(|w| w > hour) {
        return Err(Invalid::new("[search] warmup lasts at most 1h"));
    }
    let positive = |v: Option<f64>| v.is_none_or(|v| v > 0.0 && v.is_finite());
    if !positive(search.start) || !positive(search.min_rate) || !positive(search.max_rate) {
        return Err(Invalid::new(
            "[search] start, min_rate and max_rate are rates above 0",
        ));
    }
    if let (Some(lo), Some(hi)) = (search.min_rate, search.max_rate) {
        if lo > hi {
            return Err(Invalid::new("[search] min_rate is above max_rate"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(toml: &str) -> Result<ExperimentFile, Invalid> {
        let file: ExperimentFile = toml::from_str(toml).map_err(|e| Invalid::new(e.to_string()))?;
        check(&file).map(|()| file)
    }

    fn with_target(target: &str) -> String {
        format!(
            "name = \"x\"\nquestion = \"q\"\n[load]\npath = \"/\"\nrate = 1\nduration = \"1s\"\n[[target]]\nname = \"mine\"\n{target}"
        )
    }

    /// `[history] references` names targets of the file, each once, and leaves at least one
    /// target to divide; each mistake is refused in one line that names it.
    #[test]
    fn history_references_are_targets_of_the_file_and_not_all_of_them() {
        let two = "command = [\"./server\", \"{port}\"]\n[[target]]\nname = \"spin\"\ncommand = [\"./spin\", \"{port}\"]\n";
        let file = read(&format!(
            "{}\n[history]\nreferences = [\"spin\"]",
            with_target(two)
        ))
        .unwrap();
        assert_eq!(file.history.references, ["spin"]);
        assert!(read(&with_target(two))
            .unwrap()
            .history
            .references
            .is_empty());
        for (references, said) in [
            (
                "[\"spinn\"]",
                "\"spinn\" is not a [[target]] of the file (mine, spin)",
            ),
            ("[\"spin\", \"spin\"]", "\"spin\" is named twice"),
            ("[\"spin\", \"mine\"]", "names every target"),
        ] {
            let err = read(&format!(
                "{}\n[history]\nreferences = {references}",
                with_target(two)
            ))
            .unwrap_err()
            .to_string();
            assert!(err.contains(said) && !err.contains('\n'), "{err}");
        }
        let err = read(&format!(
            "{}\n[history]\nreference = [\"spin\"]",
            with_target(two)
        ))
        .unwrap_err()
        .to_string();
        assert!(err.contains("unknown field `reference`"), "{err}");
    }

    #[test]
    fn a_ref_is_for_a_command_and_the_flag_sets_it_on_a_named_one() {
        let command = "command = [\"./server\", \"{port}\"]\n";
        let file = read(&with_target(&format!("{command}ref = \"origin/main\""))).unwrap();
        assert_eq!(file.targets[0].git_ref.as_deref(), Some("origin/main"));
        let err = read(&with_target("run = \"go\"\nref = \"main\""))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("ref is for a server started by command"),
            "{err}"
        );
        let err = read(&with_target(&format!("{command}ref = \"-x\"")))
            .unwrap_err()
            .to_string();
        assert!(err.contains("is not a git revision"), "{err}");

        let mut file = read(&with_target(command)).unwrap();
        file.set_ref("mine", "origin/release-2").unwrap();
        assert_eq!(file.targets[0].git_ref.as_deref(), Some("origin/release-2"));
        let err = file.set_ref("theirs", "main").unwrap_err().to_string();
        assert!(
            err.contains("no target \"theirs\" (its targets: mine)"),
            "{err}"
        );
        let err = file
            .set_ref("mine", "--upload-pack=x")
            .unwrap_err()
            .to_string();
        assert!(err.contains("is not a git revision"), "{err}");
        let mut builtin = read(&with_target("run = \"go\"")).unwrap();
        assert!(builtin
            .set_ref("mine", "main")
            .unwrap_err()
            .to_string()
            .contains("not started by command"));
    }

    #[test]
    fn a_comparison_names_the_files_targets_at_one_fixed_rate_with_enough_rounds() {
        let file = |top: &str, compare: &str, load: &str, extra: &str| {
            read(&format!(
                "name = \"x\"\nquestion = \"q\"\n{top}\n[compare]\n{compare}\n[load]\npath = \"/\"\nduration = \"1s\"\n{load}\n[[target]]\nname = \"main\"\nrun = \"go\"\n[[target]]\nname = \"pr\"\nrun = \"go\"\n{extra}"
            ))
        };
        let pair = "baseline = \"main\"\ncandidate = \"pr\"";
        let ok = file("repetitions = 8", pair, "rate = 500", "").unwrap();
        let compare = ok.compare.clone().unwrap();
        assert_eq!(compare.targets(), ["main", "pr"]);
        let none = analysis::ab::Allowed::none();
        assert_eq!(
            compare.allowed(&ok).unwrap(),
            (none.clone(), analysis::ab::Allowed::default())
        );
        // Capacity: searches compared in rounds, gated on capacity alone (5 % when not told).
        let searched = "repetitions = 1\n[search]\nslo = [\"p99<=10ms\"]\nrounds = 16";
        let ok = file(searched, pair, "", "").unwrap();
        assert_eq!(
            ok.compare.as_ref().unwrap().allowed(&ok).unwrap(),
            (analysis::ab::Allowed::capacity(), none.clone())
        );
        // Both: the searches gate capacity, a share of their capacities the rest.
        let both = file(
            "repetitions = 8\n[search]\nslo = [\"p99<=10ms\"]\nrounds = 16",
            pair,
            "",
            "[matrix]\nrate = [\"search\", \"60%\"]",
        )
        .unwrap();
        let (capacity, fixed) = both.compare.as_ref().unwrap().allowed(&both).unwrap();
        assert_eq!(
            (capacity, fixed),
            (
                analysis::ab::Allowed::capacity(),
                analysis::ab::Allowed::default()
            )
        );
        for (top, compare, load, extra, says) in [
            (
                "repetitions = 8",
                "baseline = \"main\"\ncandidate = \"nope\"",
                "rate = 500",
                "",
                "\"nope\", which is no [[target]]",
            ),
            (
                "repetitions = 8",
                "baseline = \"main\"\ncandidate = \"main\"",
                "rate = 500",
                "",
                "names \"main\" twice",
            ),
            (
                "repetitions = 8",
                pair,
                "rate = 500",
                "[[target]]\nname = \"third\"\nrun = \"go\"\n",
                "target \"third\" is none of them",
            ),
            (
                "repetitions = 8",
                pair,
                "rate = \"80%\"",
                "",
                "one fixed rate of an open loop",
            ),
            (
                "repetitions = 8",
                pair,
                "mode = \"closed\"\nconnections = 10",
                "",
                "one fixed rate of an open loop",
            ),
            (
                "repetitions = 8",
                &format!("{pair}\nmax_regression = \"cpu=5\""),
                "rate = 500",
                "",
                "max_regression: \"5\" for cpu needs its % sign",
            ),
            (
                "repetitions = 8",
                &format!("{pair}\nmax_regression = \"capacity=5%\""),
                "rate = 500",
                "",
                "gated by searches compared in rounds",
            ),
            (
                searched,
                &format!("{pair}\nmax_regression = \"cpu=5%\""),
                "",
                "",
                "cpu=5% is measured at a fixed rate, and this comparison of searches runs none: add a share",
            ),
            (
                "repetitions = 8\n[search]\nslo = [\"p99<=10ms\"]",
                pair,
                "rate = 500",
                "",
                "add rounds = 16 to [search]",
            ),
        ] {
            let e = file(top, compare, load, extra).unwrap_err().to_string();
            assert!(e.contains(says), "{says}: {e}");
        }
    }

    #[test]
    fn guns_fire_at_remote_targets_named_by_ssh_or_a_lab() {
        let remote = "url = \"http://10.0.1.5:8080\"\nprobe = \"10.0.1.5:7700\"\n";
        let guns = |g: &str, target: &str| read(&format!("{}\n[guns]\n{g}", with_target(target)));
        let file = guns("ssh = [\"admin@gun1\", \"gun2\"]\nthreads = 2\n", remote).unwrap();
        let spec = file.guns.unwrap();
        assert_eq!(spec.ssh, ["admin@gun1", "gun2"]);
        assert_eq!(spec.clock_tolerance, fleet::CLOCK_TOLERANCE);
        assert!(guns("from = \"twin\"\n", remote).is_ok());
        let local = guns("ssh = [\"gun1\"]\n", "run = \"go\"\n")
            .unwrap_err()
            .to_string();
        assert!(local.contains("every target is remote"), "{local}");
        let none = guns("threads = 2\n", remote).unwrap_err().to_string();
        assert!(none.contains("name the guns"), "{none}");
        let both = guns("ssh = [\"g\"]\nfrom = \"twin\"\n", remote)
            .unwrap_err()
            .to_string();
        assert!(both.contains("not both"), "{both}");
        let option = guns("ssh = [\"-oProxyCommand=x\"]\n", remote)
            .unwrap_err()
            .to_string();
        assert!(option.contains("not an SSH destination"), "{option}");
        let empty = read(&with_target("url = \"\"\nprobe = \"h:1\"\n"))
            .unwrap_err()
            .to_string();
        assert!(empty.contains("must not be empty"), "{empty}");
    }

    #[test]
    fn guns_as_a_kubernetes_job_are_checked_before_anything_listens() {
        let remote = "url = \"http://10.0.1.5:8080\"\nprobe = \"10.0.1.5:7700\"\n";
        let guns = |g: &str| read(&format!("{}\n[guns]\n{g}", with_target(remote)));
        let k = |fields: &str| {
            guns(&format!(
                "kubernetes = {{ count = 3, image = \"me/loadgen:1\", listen = \"0.0.0.0:7411\"{fields} }}\n"
            ))
        };
        let file = k(", advertise = \"10.0.0.5:7411\", wait = \"2m\", apply = true").unwrap();
        match file.guns.unwrap().guns().hosts {
            order::GunHosts::Kubernetes(spec) => {
                assert_eq!(spec.count, 3);
                assert_eq!(spec.wait_ns, Some(120_000_000_000));
                assert!(spec.apply);
            }
            other => panic!("{other:?}"),
        }
        for (fields, says) in [
            (", count = 0", "duplicate key"),
            (", job = \"Guns\"", "is not a Kubernetes name"),
            (", cpus = 0", "whole number of CPUs"),
            (", memory = \"1.5Gi\"", "not a quantity"),
            (", advertise = \"10.0.0.5\"", "is not host:port"),
            (", wait = \"soon\"", "is not a duration"),
            (", token = \"x\"", "unknown field"),
            (
                ", manifest = \"/tmp/x.yaml\"",
                "outside the experiment file's directory",
            ),
            (
                ", manifest = \"../x.yaml\"",
                "outside the experiment file's directory",
            ),
        ] {
            let e = k(fields).unwrap_err().to_string();
            assert!(e.contains(says), "{fields}: {e}");
        }
        let zero = guns("kubernetes = { count = 0, image = \"i\", listen = \"h:1\" }\n")
            .unwrap_err()
            .to_string();
        assert!(zero.contains("count must be 1 to 1000"), "{zero}");
        let huge = guns("kubernetes = { count = 4294967295, image = \"i\", listen = \"h:1\" }\n")
            .unwrap_err()
            .to_string();
        assert!(huge.contains("count must be 1 to 1000"), "{huge}");
        let both =
            guns("ssh = [\"g\"]\nkubernetes = { count = 1, image = \"i\", listen = \"h:1\" }\n")
                .unwrap_err()
                .to_string();
        assert!(both.contains("names the guns alone"), "{both}");
    }

    #[test]
    fn a_profiles_rate_is_one_to_a_thousand_and_only_with_profile() {
        let top = |top: &str| read(&format!("{top}\n{}", with_target("run = \"go\"\n")));
        let file = top("profile = true\nprofile_hz = 999").unwrap();
        assert_eq!(file.profile_config().map(|p| p.hz), Some(999));
        let plain = top("profile = true").unwrap();
        assert_eq!(
            plain.profile_config().map(|p| p.hz),
            Some(probe::profile::DEFAULT_HZ)
        );
        assert_eq!(top("").unwrap().profile_config(), None);
        let fast = top("profile = true\nprofile_hz = 5000")
            .unwrap_err()
            .to_string();
        assert!(fast.contains("give 1 to 1000 samples a second"), "{fast}");
        let alone = top("profile_hz = 999").unwrap_err().to_string();
        assert!(alone.contains("add profile = true"), "{alone}");
    }

    #[test]
    fn other_processes_are_watched_by_exactly_one_of_port_pid_or_command() {
        let watch = |w: &str| {
            read(&format!(
                "{}\n[[watch]]\n{w}",
                with_target("run = \"go\"\n")
            ))
        };
        let file = watch("name = \"cache\"\nport = 6379\n").unwrap();
        assert!(matches!(
            file.watches[0].selector(),
            Some(probe::selector::Selector::Port(6379))
        ));
        let file = watch("name = \"proxy\"\ncommand = \"^nginx\"\n").unwrap();
        assert!(matches!(
            file.watches[0].selector(),
            Some(probe::selector::Selector::Name(_))
        ));
        let both = watch("name = \"cache\"\nport = 6379\npid = 4\n")
            .unwrap_err()
            .to_string();
        assert!(
            both.contains("exactly one of port, pid or command"),
            "{both}"
        );
        let bad = watch("name = \"proxy\"\ncommand = \"(\"\n")
            .unwrap_err()
            .to_string();
        assert!(bad.contains("not a valid regular expression"), "{bad}");
        let unnamed = watch("name = \"\"\npid = 4\n").unwrap_err().to_string();
        assert!(unnamed.contains("a name of its own"), "{unnamed}");
    }

    #[test]
    fn a_search_judges_latency_and_errors_and_leaves_the_servers_figures_to_a_loads_slo() {
        let file = |search: &str| {
            read(&format!(
                "name = \"x\"\nquestion = \"q\"\n[load]\npath = \"/\"\nslo = [\"cpu<=70%\"]\n[search]\n{search}\n[[target]]\nname = \"mine\"\nrun = \"go\"\n"
            ))
        };
        assert!(file("slo = [\"p99<=10ms\", \"errors<=0.1%\"]").is_ok());
        let server = file("slo = [\"p99<=10ms\", \"cpu<=70%\"]")
            .unwrap_err()
            .to_string();
        assert!(
            server.contains("cpu<=70% is the server's own figure over a whole run")
                && server.contains("give it as a load's slo"),
            "{server}"
        );
        let bad = file("slo = [\"p99<=fast\"]").unwrap_err().to_string();
        assert!(bad.contains("or the server's cpu<=70%"), "{bad}");
    }

    #[test]
    fn a_searchs_p_until_and_budget_read_as_loadgen_capacitys_flags_and_bad_ones_are_named() {
        let file = |more: &str| {
            read(&format!(
                "name = \"x\"\nquestion = \"q\"\n[load]\npath = \"/\"\n[search]\nslo = [\"p99<=10ms\"]\n{more}\n[[target]]\nname = \"mine\"\nrun = \"go\"\n"
            ))
        };
        let ok = file("p = 0.9\nuntil = \"10%\"\nbudget = \"5m\"").unwrap();
        let search = ok.search.unwrap();
        assert_eq!(search.p, Some(0.9));
        assert_eq!(search.until.as_deref(), Some("10%"));
        assert_eq!(search.budget, Some(Duration::from_secs(300)));
        for (more, said) in [
            (
                "until = \"ten\"",
                "[search] until: \"ten\" is not a percentage",
            ),
            (
                "until = \"0%\"",
                "[search] until: \"0%\" is not a percentage",
            ),
            (
                "resolution = \"100%\"",
                "[search] resolution: \"100%\" is not a percentage",
            ),
            (
                "p = 1.0",
                "[search] p: '1' is not a probability a search can aim at",
            ),
            ("p = 0.01", "give one from 0.05 to 0.95"),
            ("budget = \"0s\"", "[search] budget is 0"),
            ("check = 2", "[search] check is 2 blocks"),
            (
                "check = 30\nrounds = 16",
                "[search] check follows a search of one target",
            ),
        ] {
            let err = file(more).unwrap_err().to_string();
            assert!(err.contains(said), "{more}: {err}");
        }
    }

    #[test]
    fn a_server_started_by_command_reads_and_defaults_to_its_checks() {
        let file = read(&with_target(
            "command = [\"python3\", \"-m\", \"http.server\", \"{port}\"]\nready = \"/\"\n[[target.check]]\npath = \"/\"\n",
        ))
        .unwrap();
        let t = &file.targets[0];
        assert_eq!(t.kind(), TargetKind::Command);
        assert_eq!(t.contract(), Contract::Declared);
        assert!(t.wants_a_port());
        assert_eq!(t.checks[0].title(), "GET / → 2xx");
        let builtin = read(&with_target("run = \"go\"\n")).unwrap();
        assert_eq!(builtin.targets[0].contract(), Contract::Showdown);
    }

    #[test]
    fn bad_targets_and_checks_are_one_line_naming_the_fix() {
        for (target, says) in [
            ("command = []", "command is empty"),
            ("command = [\"srv\"]", "say where it listens"),
            ("command = [\"srv\"]\nport = 0", "port 0 is not a port to reach"),
            ("command = [\"srv\", \"{port}\"]\nrun = \"go\"", "give one"),
            ("command = [\"srv\", \"{port}\"]\ncontract = \"showdown\"", "held to its checks"),
            ("command = [\"srv\", \"{port}\"]\nready = \"health\"", "ready must be a path"),
            ("run = \"go\"\nport = 80", "port is for a server started by command"),
            ("url = \"http://h:1\"\nprobe = \"h:2\"\nbuild = [\"make\"]", "build is for a server started by command"),
            ("command = [\"srv\", \"{port}\"]\n[[target.check]]\npath = \"x\"", "path must start with /"),
            ("command = [\"srv\", \"{port}\"]\n[[target.check]]\npath = \"/\"\nstatus = 99", "status must be in"),
            ("command = [\"srv\", \"{port}\"]\n[[target.check]]\npath = \"/\"\nrows_added = \"SELECT 1\"", "add a [database] table"),
            ("command = [\"srv\", \"{port}\"]\n[[target.check]]\npath = \"/\"\nburst = 3", "burst is the number"),
            ("command = [\"srv\", \"{port}\"]\n[[target.check]]\npath = \"/\"\nmethod = \"GE T\"", "not an HTTP method"),
            ("command = [\"srv\", \"{port}\"]\n[[target.check]]\npath = \"/\"\nheaders = { \"a b\" = \"c\" }", "not a valid HTTP header"),
        ] {
            let error = read(&with_target(target))
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(error.contains(says), "{target:?}: {error}");
            assert!(!error.contains('\n'), "one line: {error}");
        }
    }
}
