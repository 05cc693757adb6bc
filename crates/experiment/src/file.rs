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
    /// Probe history kept before and after each measured run.
    #[serde(default = "pre_roll", deserialize_with = "duration")]
    pub pre_roll: Duration,
    #[serde(default = "post_roll", deserialize_with = "duration")]
    pub post_roll: Duration,
    #[serde(default)]
    pub placement: Placement,
    #[serde(default)]
    pub database: Database,
    #[serde(rename = "target")]
    pub targets: Vec<TargetSpec>,
    pub load: LoadSpec,
    #[serde(default)]
    pub loads: BTreeMap<String, LoadSpec>,
    /// Axis name → values, in the file's order (the first axis other than `target` is the
    /// x-axis of the page's charts across settings). An axis that is not one of the known ones
    /// is a parameter: its value replaces `{NAME}` in the load's path, body and mix.
    #[serde(default)]
    pub matrix: toml::Table,
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
}

/// A contestant: local (a name from `targets/`) or remote (`url` and `probe`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TargetSpec {
    /// The contestant's name in the matrix and on the page.
    pub name: String,
    /// The `targets/run` name, when it differs from `name`.
    pub run: Option<String>,
    /// Environment values for a local target (`CLUSTER`, `GOROUTINE`, …).
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

impl TargetSpec {
    pub fn is_remote(&self) -> bool {
        self.url.is_some()
    }

    /// The `targets/run` name of a local target.
    pub fn run_name(&self) -> &str {
        self.run.as_deref().unwrap_or(&self.name)
    }
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
    /// A body template (`{{seq}}`, `{{hex:N}}`, … as in `loadgen attack --body`).
    pub body: Option<String>,
    /// Weighted requests instead of one `path`.
    pub mix: Option<Vec<MixEntry>>,
    /// Requests per second (open loop).
    pub rate: Option<f64>,
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
        }
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

fn one() -> u32 {
    1
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

fn duration<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let text = String::deserialize(d)?;
    humantime::parse_duration(&text).map_err(|e| {
        serde::de::Error::custom(format!(
            "{text:?} is not a duration ({e}): write e.g. \"30s\" or \"500ms\""
        ))
    })
}

fn some_duration<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    duration(d).map(Some)
}

/// Why a file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("cannot read the experiment file {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
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
        let invalid = |message: String| FileError::Invalid {
            path: path.to_path_buf(),
            message,
        };
        let text =
            String::from_utf8(bytes.clone()).map_err(|_| invalid("not UTF-8 text".into()))?;
        let file: ExperimentFile =
            toml::from_str(&text).map_err(|e| invalid(crate::flatten(&e.to_string())))?;
        check(&file).map_err(invalid)?;
        use sha2::Digest;
        Ok(Experiment {
            path: path.to_path_buf(),
            hash: hex::encode(sha2::Sha256::digest(&bytes)),
            file,
        })
    }
}

/// Checks what serde cannot: names that must exist, values that must make sense.
fn check(file: &ExperimentFile) -> Result<(), String> {
    if file.name.trim().is_empty() || file.question.trim().is_empty() {
        return Err("name and question must not be empty".into());
    }
    if file.targets.is_empty() {
        return Err("no [[target]]: name at least one".into());
    }
    if file.repetitions == 0 {
        return Err("repetitions must be at least 1".into());
    }
    if file.database.url.is_some() && file.database.url_env.is_some() {
        return Err("[database]: give url or url_env, not both".into());
    }
    if file.database.cpus.is_some()
        && (file.database.url.is_some() || file.database.url_env.is_some())
    {
        return Err("[database] cpus places the throwaway PostgreSQL: a database of yours (url, url_env) runs where you put it".into());
    }
    let mut names = std::collections::BTreeSet::new();
    for t in &file.targets {
        if !names.insert(t.name.as_str()) {
            return Err(format!("two targets are named {:?}", t.name));
        }
        match (&t.url, &t.probe) {
            (Some(_), None) => {
                return Err(format!(
                    "target {:?} is remote (url) but names no probe: add probe = \"HOST:PORT\"",
                    t.name
                ))
            }
            (None, Some(_)) => {
                return Err(format!(
                    "target {:?} has a probe but no url: a local target is watched by the runner's own probe",
                    t.name
                ))
            }
            (None, None) if !crate::targets::NAMES.contains(&t.run_name()) => {
                return Err(format!(
                    "target {:?}: no such target in targets/ (use one of {}, or run = \"…\", or url and probe for a remote one)",
                    t.name,
                    crate::targets::NAMES.join(", ")
                ))
            }
            _ => {}
        }
        if t.probe_token_file.is_some() && t.probe_fingerprint.is_none() && t.probe_ca.is_none() {
            return Err(format!(
                "target {:?}: probe_token_file needs probe_fingerprint or probe_ca: a token is only sent over TLS that checks the probe is the one you mean",
                t.name
            ));
        }
        if let Some(memory) = &t.memory {
            crate::limits::parse_bytes(memory)
                .map_err(|e| format!("target {:?}: memory: {e}", t.name))?;
        }
        if t.cpus.is_some_and(|c| !(c > 0.0 && c <= 1024.0)) {
            return Err(format!(
                "target {:?}: cpus must be above 0 and at most 1024",
                t.name
            ));
        }
    }
    for (axis, values) in &file.matrix {
        if axis == "env" {
            let toml::Value::Table(vars) = values else {
                return Err("matrix.env must be a table: write env.NAME = [values]".into());
            };
            for (var, values) in vars {
                match values {
                    toml::Value::Array(v) if !v.is_empty() => {}
                    _ => return Err(format!("matrix.env.{var} must be a list of values")),
                }
            }
            continue;
        }
        let toml::Value::Array(values) = values else {
            return Err(format!("matrix.{axis} must be a list of values"));
        };
        if values.is_empty() {
            return Err(format!("matrix.{axis} is empty"));
        }
        match axis.as_str() {
            "target" => {
                for v in values {
                    let name = v.as_str().unwrap_or_default();
                    if !names.contains(name) {
                        return Err(format!("matrix.target: {v} is not a [[target]] name"));
                    }
                }
            }
            "load" => {
                for v in values {
                    let name = v.as_str().unwrap_or_default();
                    if !file.loads.contains_key(name) {
                        return Err(format!("matrix.load: {v} is not a [loads.NAME] table"));
                    }
                }
            }
            a if SCALAR_AXES.contains(&a) => {}
            parameter => {
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
                    return Err(format!(
                        "matrix.{parameter}: not an axis (use target, load, env.NAME, one of {}, or a parameter written {placeholder} in the load's path or body)",
                        SCALAR_AXES.join(", ")
                    ));
                }
            }
        }
    }
    Ok(())
}
