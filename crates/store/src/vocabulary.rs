//! The words one crate decides and another reads: why a run's sends were held back, how a
//! check of a target came out, what an experiment's runs are labelled with. Each is an enum or a
//! const here, serialized as the same text the JSON summary, the store and the pages have always
//! carried, and read back typed everywhere: never a string compared in three crates.

use std::fmt;

use serde::{Deserialize, Serialize};

/// What held a run's sends back when it fell behind its schedule, from measurements (see
/// `diagnosis.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum LimitedBy {
    /// The generator's own CPU: a worker thread saturated its core, or its threads together
    /// kept its CPUs busy.
    #[serde(rename = "generator")]
    Generator,
    /// Other processes took the generator's CPUs.
    #[serde(rename = "generator cpus shared")]
    GeneratorCpusShared,
    /// Requests waited for `--max-connections`, which the rate needs even at the server's
    /// fastest response.
    #[serde(rename = "connection cap")]
    ConnectionCap,
    /// Requests waited for a cap the rate would not have reached had the server kept its
    /// fastest pace: the server fell behind.
    #[serde(rename = "server responses")]
    ServerResponses,
    /// New connections were slow to be accepted (a full accept queue).
    #[serde(rename = "server accept")]
    ServerAccept,
    /// The generator began its schedule late (paused, or its host busy as it started), and
    /// the requests due meanwhile are most of those sent late.
    #[serde(rename = "late start")]
    LateStart,
    /// None of the measurements explains it.
    #[serde(rename = "unknown")]
    Unknown,
}

impl LimitedBy {
    /// The words the summary, the store and the pages use.
    pub fn as_str(self) -> &'static str {
        match self {
            LimitedBy::Generator => "generator",
            LimitedBy::GeneratorCpusShared => "generator cpus shared",
            LimitedBy::ConnectionCap => "connection cap",
            LimitedBy::ServerResponses => "server responses",
            LimitedBy::ServerAccept => "server accept",
            LimitedBy::LateStart => "late start",
            LimitedBy::Unknown => "unknown",
        }
    }

    /// Whether the generator, not the server, is to blame: such a run says nothing of the
    /// server, and an experiment's cell is failed rather than kept as the server's result.
    pub fn is_generator(self) -> bool {
        matches!(
            self,
            LimitedBy::Generator | LimitedBy::GeneratorCpusShared | LimitedBy::LateStart
        )
    }
}

impl fmt::Display for LimitedBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How one check of a target came out. Kept as text (`passed`, `failed: why`, `skipped: why`),
/// as stored experiments have it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Passed,
    Failed(String),
    Skipped(String),
}

impl Outcome {
    pub fn failed(&self) -> bool {
        matches!(self, Outcome::Failed(_))
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Passed => f.write_str("passed"),
            Outcome::Failed(why) => write!(f, "failed: {why}"),
            Outcome::Skipped(why) => write!(f, "skipped: {why}"),
        }
    }
}

impl Serialize for Outcome {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Outcome {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Ok(if text == "passed" {
            Outcome::Passed
        } else if let Some(why) = text.strip_prefix("failed: ") {
            Outcome::Failed(why.to_string())
        } else if let Some(why) = text.strip_prefix("skipped: ") {
            Outcome::Skipped(why.to_string())
        } else {
            Outcome::Failed(text)
        })
    }
}

/// What a run of an experiment's cell is: the warm-up before it, or the measured run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Left out of every figure.
    Warmup,
    Measure,
    /// A step of a capacity search: its figures are the search's, not a cell's.
    Step,
}

impl Phase {
    /// The phase a run's labels give, if they give one.
    pub fn of(labels: &std::collections::BTreeMap<String, String>) -> Option<Phase> {
        match labels.get(label::PHASE).map(String::as_str) {
            Some("warmup") => Some(Phase::Warmup),
            Some("measure") => Some(Phase::Measure),
            Some("step") => Some(Phase::Step),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Warmup => "warmup",
            Phase::Measure => "measure",
            Phase::Step => "step",
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The labels the experiment runner puts on every run of a cell, beside one per axis.
pub mod label {
    /// The contestant.
    pub const TARGET: &str = "target";
    /// A prefix of the experiment file's SHA-256: runs of another version of the file are
    /// another experiment's.
    pub const FILE: &str = "file";
    /// The `--scale` the cell ran at.
    pub const SCALE: &str = "scale";
    /// The cell without its repetition (`target=node rate=2000`).
    pub const CELL: &str = "cell";
    pub const REPETITION: &str = "repetition";
    /// A [`super::Phase`].
    pub const PHASE: &str = "phase";
    /// Where the generator, the targets and the database ran, in words.
    pub const PLACEMENT: &str = "placement";
    /// What held a local target to a host size (a cgroup), in words.
    pub const HELD: &str = "held";

    /// A cell whose rate is a share of a capacity: the share (`80%`), and the capacity in
    /// requests a second it was taken of (the median of its searches').
    pub const SHARE: &str = "share";
    pub const CAPACITY: &str = "capacity";

    /// A shard fired from a gun host over SSH: the gun (its SSH destination), and its clock's
    /// offset from the runner's as measured before the experiment (`+0.12 ms ±0.05 ms`).
    pub const GUN: &str = "gun";
    pub const GUN_CLOCK: &str = "gun-clock";

    /// The SLO a cell's measured run is held to (its load's `slo`), as `Slo` prints it
    /// (`p99<=10ms and cpu<=70%`).
    pub const SLO: &str = "slo";

    /// A target built from its source at a git `ref`: the ref and the commit it named
    /// (`origin/main at 1a2b3c4d5e6f`).
    pub const REVISION: &str = "revision";

    /// One sitting of an experiment: every run (and search) one `loadgen experiment run`
    /// made, until a sitting of its own is asked for again (`--again`), carries the same id
    /// (a UUID v7, so that ids sort by when the sitting began). What `loadgen history` lays on
    /// its time axis.
    pub const SITTING: &str = "sitting";

    /// Labels that say how a run was made, not what it measured: no page of their own.
    pub const BOOKKEEPING: [&str; 13] = [
        FILE, SCALE, PLACEMENT, HELD, PHASE, REPETITION, SHARE, CAPACITY, GUN, GUN_CLOCK, SLO,
        REVISION, SITTING,
    ];

    /// Whether a label is the experiment runner's bookkeeping rather than a setting.
    pub fn is_bookkeeping(key: &str) -> bool {
        BOOKKEEPING.contains(&key)
    }
}

/// The arrival process asked for (`loadgen --arrival`, an experiment's `[load] arrival`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ArrivalProcess {
    /// Evenly spaced (on the batch grid when there is one).
    #[default]
    Uniform,
    /// Exponential gaps: independent users.
    Poisson,
}

/// An arrival process that is neither of the two: the text as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected uniform or poisson, not {0:?}")]
pub struct UnknownArrival(pub String);

impl std::str::FromStr for ArrivalProcess {
    type Err = UnknownArrival;
    fn from_str(text: &str) -> Result<Self, UnknownArrival> {
        match text.trim().to_ascii_lowercase().as_str() {
            "uniform" => Ok(ArrivalProcess::Uniform),
            "poisson" => Ok(ArrivalProcess::Poisson),
            _ => Err(UnknownArrival(text.to_string())),
        }
    }
}

/// How a step's requests arrive: capacity depends on it (a server reads many requests per
/// wake-up from a batch, one from an evenly spaced send), so every figure says which.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "process", rename_all = "lowercase")]
pub enum Arrival {
    /// Each request sent at its own instant, evenly spaced.
    Uniform,
    /// Released together at the end of each window (wrk2's 1 ms grid).
    Batched { window_s: f64 },
    /// Exponential gaps, each request at its own instant: independent users.
    Poisson,
}

impl Arrival {
    /// From the generator's arrival process and batch window (zero: each at its own time).
    pub fn of(process: ArrivalProcess, window: std::time::Duration) -> Self {
        if process == ArrivalProcess::Poisson {
            Arrival::Poisson
        } else if window.is_zero() {
            Arrival::Uniform
        } else {
            Arrival::Batched {
                window_s: window.as_secs_f64(),
            }
        }
    }

    /// "evenly spaced", "in 1 ms batches" or "Poisson".
    pub fn text(self) -> String {
        match self {
            Arrival::Uniform => "evenly spaced".into(),
            // As `format_ns` writes it (1.00ms, 500µs), which this module cannot import.
            Arrival::Batched { window_s } if window_s >= 1e-3 => {
                format!("in {:.2}ms batches", window_s * 1e3)
            }
            Arrival::Batched { window_s } => format!("in {:.0}µs batches", window_s * 1e6),
            Arrival::Poisson => "Poisson (exponential gaps)".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_read_back_as_they_were_written() {
        for cause in [
            LimitedBy::Generator,
            LimitedBy::GeneratorCpusShared,
            LimitedBy::ConnectionCap,
            LimitedBy::ServerResponses,
            LimitedBy::ServerAccept,
            LimitedBy::Unknown,
        ] {
            let json = serde_json::to_string(&cause).unwrap();
            assert_eq!(json, format!("\"{}\"", cause.as_str()));
            assert_eq!(serde_json::from_str::<LimitedBy>(&json).unwrap(), cause);
        }
        for outcome in [
            Outcome::Passed,
            Outcome::Failed("status 500".into()),
            Outcome::Skipped("no database".into()),
        ] {
            let json = serde_json::to_string(&outcome).unwrap();
            assert_eq!(serde_json::from_str::<Outcome>(&json).unwrap(), outcome);
        }
        assert_eq!(
            serde_json::to_string(&Outcome::Failed("x".into())).unwrap(),
            "\"failed: x\""
        );
        assert_eq!(serde_json::to_string(&Phase::Warmup).unwrap(), "\"warmup\"");
    }
}
