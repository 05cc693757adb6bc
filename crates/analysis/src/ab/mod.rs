//! Did a change make a server slower or hungrier? Two builds, a baseline and a candidate, run
//! at the same fixed rate in interleaved rounds (every build once a round, in a random order),
//! each measure answered as the ratio candidate ÷ baseline with its 95 % interval over rounds,
//! and judged against the change allowed. Or their capacities within an SLO, from searches
//! compared in interleaved rounds ([`Gate::of_capacities`]: the ratio's interval is the
//! comparison's, `capacity::compare`), judged with the band mirrored, since lower is worse.
//!
//! **The estimand.** For each measure (CPU per request, peak PSS, a latency percentile), the
//! ratio of the candidate's to the baseline's typical (geometric-mean) value over runs of this
//! length, on this host, in this sitting.
//!
//! **The estimate.** Each round gives one ratio; the answer is their geometric mean (the mean of
//! the log-ratios) and its interval Student's t over the rounds' log-ratios (rounds − 1 degrees
//! of freedom). Paired by round, what the host does from one round to the next (drift, a noisy
//! neighbour, a warmer cache) cancels; in a random order within the round, what it does inside
//! one favours neither build. The proof is [`tests`]' simulated host: slow drift, correlated
//! noise, a rare stall, both with and without a real change. A gate read after every round
//! (`[compare] rounds = "auto"`, [`Reading::Sequential`]) takes its interval from a confidence
//! sequence instead ([`sequential`]), which holds at every look at once.
//!
//! **Processes.** Two *processes* of one build differ (their memory layout, how far a
//! garbage collector let the heap grow, which core each lands on): two of the example's Go
//! server held 12.0 and 12.8 MiB through a whole sitting. With [`Processes::Fresh`] (the
//! default) every run is a process of its own, started and warmed for it, so that difference
//! is in the rounds' spread and the interval holds it. With [`Processes::Kept`] each build is
//! one process for the whole sitting: quicker, but a process's own difference then reads as
//! the build's. An A/A control (the baseline entered twice) checks the design either way: when
//! its interval excludes 1, identical builds read apart here, and a verdict that difference
//! could explain is "too noisy" ([`Verdict::controlled`]). Its width alone vetoes nothing (the
//! candidate's interval carries the noise of its own rounds); a control much noisier than the
//! candidate is looked into, by round, and said beside the verdict ([`looked_into`]).

pub mod functions;
mod kept;
pub mod process;
pub mod sequential;
pub(crate) mod text;

pub use kept::{gates, put_gate, KeptGate};
pub use text::junit;

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::capacity::compare::Compared;
use store::run::StoredRun;

/// The confidence of every interval here.
pub const CONFIDENCE: f64 = 0.95;

/// The fewest rounds that give an interval.
pub const MIN_ROUNDS: usize = 3;

/// How a gate's rounds are read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Reading {
    /// Once, when the rounds the file asks for have run: Student's t over the rounds.
    #[default]
    Once,
    /// After every round, until every gated measure is decided (`[compare] rounds = "auto"`):
    /// a confidence sequence ([`sequential`]), which holds at every look at once.
    Sequential,
}

/// How the builds' processes are run in a comparison.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Processes {
    /// Each run a process of its own, started, warmed and stopped in its round: what differs
    /// between two processes of one build is in the rounds' spread.
    #[default]
    Fresh,
    /// Each build one process, started and warmed once and kept up through the rounds.
    Kept,
}

impl Processes {
    pub fn as_str(self) -> &'static str {
        match self {
            Processes::Fresh => "fresh",
            Processes::Kept => "kept",
        }
    }
}

/// What a comparison measures of each run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Measure {
    /// The server's CPU per request answered, µs (its probe's CPU rate over the run × the run's
    /// length ÷ requests answered).
    Cpu,
    /// The server's RSS at its most over the run, bytes: its pages whole, whoever else maps
    /// them.
    Rss,
    /// The server's PSS at its most over the run, bytes: a page shared with another process
    /// counted by halves, so it reads lower while a twin of the same binary runs beside it.
    Pss,
    /// The median corrected latency, ns.
    P50,
    /// The 99th percentile of the corrected latency, ns.
    P99,
    /// The capacity within the search's SLO, requests a second, from searches compared in
    /// interleaved rounds (`[compare]` with `[search] rounds`): lower is worse.
    Capacity,
}

impl Measure {
    /// The measures of runs at a fixed rate.
    pub const FIXED: [Measure; 5] = [
        Measure::Cpu,
        Measure::Rss,
        Measure::Pss,
        Measure::P50,
        Measure::P99,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Measure::Cpu => "cpu",
            Measure::Rss => "rss",
            Measure::Pss => "pss",
            Measure::P50 => "p50",
            Measure::P99 => "p99",
            Measure::Capacity => "capacity",
        }
    }

    /// "CPU per request", for sentences.
    pub fn title(self) -> &'static str {
        match self {
            Measure::Cpu => "CPU per request",
            Measure::Rss => "peak memory (RSS)",
            Measure::Pss => "peak memory (PSS)",
            Measure::P50 => "p50 latency",
            Measure::P99 => "p99 latency",
            Measure::Capacity => "capacity within the SLO",
        }
    }

    /// One run's value of this measure, `None` when the run does not hold it (no probe, no
    /// requests answered).
    pub fn of(self, run: &StoredRun) -> Option<f64> {
        let summary = run.summary.as_ref()?;
        let positive = |v: f64| (v.is_finite() && v > 0.0).then_some(v);
        match self {
            // A search's figure, of all of its steps: no one run holds it.
            Measure::Capacity => None,
            Measure::P50 => positive(summary.latency.corrected.p50_ns as f64),
            Measure::P99 => positive(summary.latency.corrected.p99_ns as f64),
            Measure::Cpu | Measure::Rss | Measure::Pss => {
                let end = (summary.duration.attack_s * 1e9) as i64;
                let server = crate::system::System::of(&run.probes, 0, end)?.target;
                match self {
                    Measure::Rss => positive(server.rss_peak? as f64),
                    Measure::Pss => positive(server.pss_peak? as f64),
                    _ => {
                        // The server's CPU rate over its probe's samples in the run, times the
                        // run's length, per request answered. Not the CPU between the first and
                        // the last sample: a probe reads every 100 ms, so its samples span up
                        // to 0.2 s less than the run, and that CPU over every request of the
                        // run read 3 % low in a 3 s run (against /proc, docs/gate.md).
                        let answered = summary.requests.responses as f64;
                        positive(server.cpu_cores * summary.duration.attack_s * 1e6 / answered)
                    }
                }
            }
        }
    }

    /// `value` in this measure's unit: "41.2 µs", "63.1 MiB", "1.52 ms".
    pub fn value_text(self, value: f64) -> String {
        match self {
            Measure::Cpu => format!("{value:.1} µs"),
            Measure::Rss | Measure::Pss => format!("{:.1} MiB", value / (1024.0 * 1024.0)),
            Measure::P50 | Measure::P99 => {
                if value >= 1e6 {
                    format!("{:.2} ms", value / 1e6)
                } else {
                    format!("{:.0} µs", value / 1e3)
                }
            }
            Measure::Capacity => format!("{value:.0} req/s"),
        }
    }
}

impl fmt::Display for Measure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A measure a comparison does not have: the name as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no measure {0:?}: the measures are cpu (CPU per request), rss and pss (peak memory), p50 and p99 at a fixed rate, and capacity (a [search] with rounds)")]
pub struct UnknownMeasure(pub String);

/// Why a `max_regression` (`cpu=5%,p99=10%`) does not read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AllowedError {
    #[error("{0:?} is not MEASURE=SHARE: write e.g. cpu=5%,p99=10%")]
    NotAPair(String),
    #[error(transparent)]
    Measure(#[from] UnknownMeasure),
    #[error("{share:?} for {measure} is not a share from 0% to 1000%, e.g. 5%")]
    Share { share: String, measure: Measure },
    #[error("{share:?} for {measure} needs its % sign, e.g. {measure}={value}%")]
    NoPercentSign {
        share: String,
        measure: Measure,
        value: f64,
    },
    #[error("{0} is given twice")]
    Twice(Measure),
    #[error("no measure to gate: write e.g. cpu=5%,p99=10%")]
    Empty,
}

impl FromStr for Measure {
    type Err = UnknownMeasure;

    fn from_str(s: &str) -> Result<Measure, UnknownMeasure> {
        match s.trim().to_ascii_lowercase().as_str() {
            "cpu" => Ok(Measure::Cpu),
            "rss" | "memory" => Ok(Measure::Rss),
            "pss" => Ok(Measure::Pss),
            "p50" => Ok(Measure::P50),
            "p99" => Ok(Measure::P99),
            "capacity" => Ok(Measure::Capacity),
            other => Err(UnknownMeasure(other.to_string())),
        }
    }
}

/// The change allowed per measure, as shares (0.05: 5 % more): the measures gated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Allowed(pub BTreeMap<Measure, f64>);

impl Default for Allowed {
    /// CPU per request and peak memory (RSS) within 5 %: the measures a fixed rate holds
    /// steady. Latency is shown beside them and gated only when asked (`p99=10%`): at a rate
    /// well below capacity a p99 is a handful of requests a run, and on the project's VM the
    /// baseline against itself read 1.056× (0.988–1.129) over 48 rounds.
    fn default() -> Allowed {
        Allowed(BTreeMap::from([(Measure::Cpu, 0.05), (Measure::Rss, 0.05)]))
    }
}

impl Allowed {
    /// Capacity within 5 %: what a comparison of searches gates when not told.
    pub fn capacity() -> Allowed {
        Allowed(BTreeMap::from([(Measure::Capacity, 0.05)]))
    }

    /// Nothing gated: every measure shown, none judged against a bound.
    pub fn none() -> Allowed {
        Allowed(BTreeMap::new())
    }

    /// The measures a comparison of searches gates (capacity), and those its runs at a fixed
    /// rate gate (the others): one `max_regression` read by both.
    pub fn split(self) -> (Allowed, Allowed) {
        let (capacity, fixed) = self
            .0
            .into_iter()
            .partition(|(m, _)| *m == Measure::Capacity);
        (Allowed(capacity), Allowed(fixed))
    }

    /// Whether no measure is gated.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl FromStr for Allowed {
    type Err = AllowedError;

    /// `cpu=5%,p99=10%`: each measure gated and the most it may grow.
    fn from_str(s: &str) -> Result<Allowed, AllowedError> {
        let mut allowed = BTreeMap::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let Some((name, share)) = part.split_once('=') else {
                return Err(AllowedError::NotAPair(part.to_string()));
            };
            let measure: Measure = name.parse()?;
            let share = share.trim();
            let number = share.strip_suffix('%').unwrap_or(share).trim();
            let value: f64 = number
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite() && *v >= 0.0 && *v <= 1000.0)
                .ok_or_else(|| AllowedError::Share {
                    share: share.to_string(),
                    measure,
                })?;
            if !share.ends_with('%') {
                return Err(AllowedError::NoPercentSign {
                    share: share.to_string(),
                    measure,
                    value,
                });
            }
            if allowed.insert(measure, value / 100.0).is_some() {
                return Err(AllowedError::Twice(measure));
            }
        }
        if allowed.is_empty() {
            return Err(AllowedError::Empty);
        }
        Ok(Allowed(allowed))
    }
}

impl fmt::Display for Allowed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .0
            .iter()
            .map(|(m, a)| format!("{m}={}%", a * 100.0))
            .collect();
        f.write_str(&parts.join(","))
    }
}

/// Why a comparison of searches gives no change of capacity to judge.
#[derive(Debug, thiserror::Error)]
enum NoChange {
    #[error("the comparison gave no ratio of the two")]
    NoRatio,
    #[error("the rounds gave no interval of the ratio")]
    NoInterval,
    /// The comparison's own note on why it has no interval.
    #[error("{0}")]
    Noted(String),
}

/// One measure's ratio over rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// The geometric mean of the rounds' ratios.
    pub ratio: f64,
    /// Its 95 % interval's ends.
    pub low: f64,
    pub high: f64,
    pub rounds: usize,
    /// The smallest change these rounds would show 80 % of the time (at 95 % confidence), as a
    /// share: (t₀.₉₇₅ + t₀.₈) × the standard error of the mean log-ratio.
    pub could_see: f64,
    /// The degrees of freedom of the Student's t its interval was read at, where not its
    /// rounds less one: a capacity's interval widened by the spread between processes of one
    /// build ([`process::Between::widen`]: Satterthwaite's), which
    /// [`process::Between::narrow`] reads back to the interval as measured. Absent in every
    /// other change (read at t on the rounds less one, or a confidence sequence's), and in
    /// gates kept before it was (widened then at t on the rounds less one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub df: Option<f64>,
}

/// Each round's log-ratio, candidate ÷ baseline, of the pairs whose values are both positive.
fn log_ratios(pairs: &[(f64, f64)]) -> Vec<f64> {
    pairs
        .iter()
        .filter(|(a, b)| *a > 0.0 && *b > 0.0 && a.is_finite() && b.is_finite())
        .map(|(a, b)| (b / a).ln())
        .collect()
}

/// Student's t quantiles for 95 % two-sided and 80 % one-sided, `df` degrees of freedom.
fn t_quantiles(df: usize) -> (f64, f64) {
    let t80 = match df {
        0 => f64::INFINITY,
        d => functions::t_quantile(0.80, d as f64),
    };
    (crate::capacity::batch::t975(df), t80)
}

impl Change {
    /// The ratio over `pairs` read as `reading` says: once ([`Change::paired`]), or after every
    /// round, its interval the confidence sequence's ([`sequential`]).
    pub fn paired_as(pairs: &[(f64, f64)], reading: Reading) -> Option<Change> {
        let once = Change::paired(pairs)?;
        match reading {
            Reading::Once => Some(once),
            Reading::Sequential => {
                let (low, high) = sequential::interval(&log_ratios(pairs), 1.0 - CONFIDENCE)
                    .unwrap_or((f64::NEG_INFINITY, f64::INFINITY));
                Some(Change {
                    low: low.exp(),
                    high: high.exp(),
                    ..once
                })
            }
        }
    }

    /// The ratio over `pairs` (each round's baseline and candidate value): `None` with fewer
    /// than [`MIN_ROUNDS`] rounds holding both, or a value that is not positive.
    pub fn paired(pairs: &[(f64, f64)]) -> Option<Change> {
        let logs = log_ratios(pairs);
        let n = logs.len();
        if n < MIN_ROUNDS {
            return None;
        }
        let mean = logs.iter().sum::<f64>() / n as f64;
        let var = logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        let se = (var / n as f64).sqrt();
        let (t975, t80) = t_quantiles(n - 1);
        Some(Change {
            ratio: mean.exp(),
            low: (mean - t975 * se).exp(),
            high: (mean + t975 * se).exp(),
            rounds: n,
            could_see: ((t975 + t80) * se).exp() - 1.0,
            df: None,
        })
    }

    /// A ratio and its 95 % interval estimated otherwise (capacities compared: the profile
    /// likelihood of their ratio over `rounds`). What it could see is read off the interval's
    /// width as though it were Student's t over the rounds' log-ratios: an approximation.
    pub fn of_interval(ratio: f64, low: f64, high: f64, rounds: usize) -> Change {
        Change::of_interval_at(ratio, low, high, rounds, None)
    }

    /// A ratio and its 95 % interval read at Student's t on `df` degrees of freedom (on its
    /// rounds less one where `None`, as [`Change::of_interval`]): what it could see is read off
    /// the interval's width at the same t.
    pub(crate) fn of_interval_at(
        ratio: f64,
        low: f64,
        high: f64,
        rounds: usize,
        df: Option<f64>,
    ) -> Change {
        let (t975, t80) = match df {
            Some(df) => (
                functions::t_quantile(0.975, df),
                functions::t_quantile(0.80, df),
            ),
            None => t_quantiles(rounds.saturating_sub(1).max(1)),
        };
        let se = (high / low).ln().abs() / (2.0 * t975);
        Change {
            ratio,
            low,
            high,
            rounds,
            could_see: ((t975 + t80) * se).exp() - 1.0,
            df,
        }
    }

    /// Whether the interval excludes 1: a difference.
    pub fn differs(&self) -> bool {
        self.low > 1.0 || self.high < 1.0
    }

    /// "1.083× (95 % interval 1.061–1.105)".
    pub fn text(&self) -> String {
        format!(
            "{:.3}× (95 % interval {:.3}–{:.3})",
            self.ratio, self.low, self.high
        )
    }
}

/// What one measure's comparison says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// The interval lies wholly beyond the allowed change.
    Regression,
    /// The interval lies wholly below the allowed band (below 1 ÷ (1 + allowed)): the
    /// candidate is better by more than the change a gate would notice.
    Improvement,
    /// A change shown, but within ± what is allowed (the interval wholly inside it).
    Within,
    /// The interval holds 1 and lies within what is allowed.
    NoChange,
    /// The interval reaches past the allowed change without lying beyond it, or the A/A
    /// control differed: more rounds, or a quieter host, would tell.
    TooNoisy { why: String },
    /// Not gated: a change shown (either way), without a bound to judge it on.
    Changed,
    /// The runs do not hold this measure.
    Unmeasured { why: String },
}

impl Verdict {
    /// A change on `allowed` (a share), with the A/A control's change of the same measure,
    /// from runs of `processes`.
    pub fn of(
        change: &Change,
        allowed: f64,
        control: Option<&Change>,
        processes: Processes,
    ) -> Verdict {
        let why = match processes {
            Processes::Kept => "two processes of one build differ here by more than the rounds show: run each in a process of its own (processes = \"fresh\")",
            Processes::Fresh => "one build's runs differ here by more than that: add rounds, or run on a quieter host",
        };
        Verdict::in_band(change, allowed, control, 1.0 + allowed, why)
    }

    /// A capacity's change (candidate ÷ baseline, where lower is worse) on `allowed`, the
    /// share it may fall (0.05: to 95 % of the baseline's), with the A/A control's.
    pub fn of_capacity(change: &Change, allowed: f64, control: Option<&Change>) -> Verdict {
        let why = "one build's searches differ here by more than that: add rounds, or run on a quieter host";
        // The band [1 − allowed, 1 ÷ (1 − allowed)], its worse end the lower.
        let worse = 1.0 / (1.0 - allowed.min(0.99));
        Verdict::in_band(change, allowed, control, 1.0 / worse, why)
    }

    /// The verdict of `change` against the band between `worse` and `1 / worse` (its ends
    /// reciprocal; beyond `worse` a regression, beyond the other end an improvement), with the
    /// A/A control's change `control` ([`Verdict::controlled`]).
    fn in_band(
        change: &Change,
        allowed: f64,
        control: Option<&Change>,
        worse: f64,
        aa_why: &str,
    ) -> Verdict {
        let own = Verdict::against(change, allowed, worse);
        match control {
            Some(c) => Verdict::controlled(own, change, c, allowed, worse, aa_why),
            None => own,
        }
    }

    /// The A/A control's say on `own`, the verdict of `change` alone. The control vetoes only
    /// on evidence that identical builds read apart here: its interval excludes 1. Its width
    /// alone does not: a control whose interval reaches past the band but holds 1 says its
    /// own rounds were noisy, while the candidate's interval already carries the noise of the
    /// rounds it was measured in (the same rounds, the same host). Where identical builds did
    /// differ, the candidate's interval is divided by the control's (the difference allowed
    /// for either way: `low ÷ control's high` to `high ÷ control's low`), and the verdict
    /// stands only if that wider interval gives the same answer (a regression still a
    /// regression, a pass still a pass); otherwise it is too noisy to tell.
    fn controlled(
        own: Verdict,
        change: &Change,
        control: &Change,
        allowed: f64,
        worse: f64,
        aa_why: &str,
    ) -> Verdict {
        if !control.differs() || matches!(own, Verdict::TooNoisy { .. }) {
            return own;
        }
        let wider = Change {
            low: change.low / control.high,
            high: change.high / control.low,
            ..change.clone()
        };
        let passes = |v: &Verdict| {
            matches!(
                v,
                Verdict::NoChange | Verdict::Within | Verdict::Improvement
            )
        };
        let allowed_for = Verdict::against(&wider, allowed, worse);
        let stands = (own.fails() && allowed_for.fails()) || (passes(&own) && passes(&allowed_for));
        if stands {
            return own;
        }
        Verdict::TooNoisy {
            why: format!(
                "the baseline against itself read {}: identical builds differed here, and with that difference allowed for this build's interval is {:.3}–{:.3}, which the {:.0} % allowed does not decide: {aa_why}",
                control.text(),
                wider.low,
                wider.high,
                allowed * 100.0
            ),
        }
    }

    /// The verdict of `change` alone against the band between `worse` and `1 / worse`.
    fn against(change: &Change, allowed: f64, worse: f64) -> Verdict {
        let (low_end, high_end) = (worse.min(1.0 / worse), worse.max(1.0 / worse));
        let (beyond_worse, beyond_better) = if worse > 1.0 {
            (change.low > high_end, change.high < low_end)
        } else {
            (change.high < low_end, change.low > high_end)
        };
        if beyond_worse {
            Verdict::Regression
        } else if beyond_better {
            Verdict::Improvement
        } else if change.high <= high_end && change.low >= low_end {
            if change.differs() {
                Verdict::Within
            } else {
                Verdict::NoChange
            }
        } else {
            Verdict::TooNoisy {
                why: format!(
                    "its interval reaches past the {:.0} % allowed: add rounds, or run on a quieter host",
                    allowed * 100.0
                ),
            }
        }
    }

    /// Whether this verdict fails a gate (a regression).
    pub fn fails(&self) -> bool {
        matches!(self, Verdict::Regression)
    }

    /// Whether the gate cannot tell (too noisy, or not measured when gated).
    pub fn undecided(&self) -> bool {
        matches!(self, Verdict::TooNoisy { .. } | Verdict::Unmeasured { .. })
    }
}

/// One measure of a comparison: the builds' typical values, their ratio and its verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judged {
    pub measure: Measure,
    /// The geometric means over rounds.
    pub baseline: Option<f64>,
    pub candidate: Option<f64>,
    pub change: Option<Change>,
    /// The A/A control's (the baseline against itself), when there is one.
    pub control: Option<Change>,
    /// Each round's ratio candidate ÷ baseline, in the rounds' order (rounds without both
    /// left out), and the control's ÷ baseline.
    #[serde(default)]
    pub ratios: Vec<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub control_ratios: Vec<f64>,
    /// The change allowed, when this measure is gated.
    pub allowed: Option<f64>,
    pub verdict: Verdict,
    /// What was looked into beside the verdict: an A/A control much noisier than the
    /// candidate, and the round that made it so ([`looked_into`]).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

/// How many times wider (in ln) than the candidate's interval the A/A control's may be before
/// the gate looks into why.
pub const NOISY_CONTROL: f64 = 2.0;

/// What a gate says of an A/A control whose interval is over [`NOISY_CONTROL`] times as wide
/// (in ln) as the candidate's: such a control does not veto a verdict (see
/// [`Verdict::controlled`]), but its noise came from somewhere, most often one round (a cold
/// start, a stall of the host, a database's vacuum). `rounds` are the control's ratios by
/// round number (from 1), where the runs held the measure; empty where there are none (a
/// capacity's searches). Empty when the control is not much noisier.
pub fn looked_into(change: &Change, control: &Change, rounds: &[(usize, f64)]) -> String {
    let width = |c: &Change| (c.high / c.low).ln();
    let (own, aa) = (width(change), width(control));
    let noisier = aa.is_finite() && own.is_finite() && own > 0.0 && aa > NOISY_CONTROL * own;
    if !noisier {
        return String::new();
    }
    let times = aa / own;
    let mut sorted: Vec<f64> = rounds.iter().map(|r| r.1).filter(|r| *r > 0.0).collect();
    sorted.sort_by(f64::total_cmp);
    let Some(&median) = sorted.get(sorted.len() / 2) else {
        return format!(
            "the A/A control's interval is {times:.1}× as wide as the candidate's: its steps, on the comparison's page, show which rounds read apart"
        );
    };
    let off = |r: f64| (r / median).ln().abs();
    let worst = rounds
        .iter()
        .filter(|r| r.1 > 0.0)
        .max_by(|a, b| off(a.1).total_cmp(&off(b.1)));
    match worst {
        Some(&(round, ratio)) => format!(
            "the A/A control's interval is {times:.1}× as wide as the candidate's: its round {round} read {ratio:.3} where its median round read {median:.3}; look at that round's runs (a cold start, a stall of the host, a database's vacuum)"
        ),
        None => String::new(),
    }
}

/// A comparison of two builds, judged: what a CI job reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Gate {
    pub baseline: String,
    pub candidate: String,
    /// The A/A control's name, when there is one.
    pub control: Option<String>,
    /// Rounds run (each with every build once).
    pub rounds: usize,
    /// Whether each run was a fresh process, or each build one kept up.
    #[serde(default)]
    pub processes: Processes,
    /// The load each run was ("open loop, constant 2000 req/s for 10s").
    pub load: String,
    pub measures: Vec<Judged>,
    /// Where the pages are, when drawn.
    #[serde(default)]
    pub pages: Option<String>,
    /// What a build was built from, where its target had a git `ref`
    /// (`origin/main at 1a2b3c4d5e6f`), by target name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub revisions: BTreeMap<String, String>,
    /// Where the CPU per request changed, function by function, when the runs were profiled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub functions: Option<ByFunction>,
    /// How its rounds were read: once, or after every round until decided.
    #[serde(default)]
    pub reading: Reading,
    /// Why a gate read after every round stopped where it did ("decided after 9 rounds", or
    /// the budget spent and how many more rounds would decide).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// A capacity gate's spread between processes of one build, read from the A/A controls of
    /// its experiment's sittings and allowed for in its intervals ([`process`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<process::Between>,
    /// Where a figure it compared does not hold what it claims, one line each, by build
    /// ("pr's search: WARNING: its knee reads 24 % wide …"): a capacity gate's searches'
    /// [`crate::capacity::Search::warnings`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// A comparison's CPU per request by function ([`functions`]): the candidate against the
/// baseline, and the A/A control against it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ByFunction {
    pub candidate: functions::Functions,
    #[serde(default)]
    pub control: Option<functions::Functions>,
}

impl ByFunction {
    /// From the rounds' runs: `None` unless at least [`MIN_ROUNDS`] rounds' baseline and
    /// candidate runs were both profiled.
    fn of(rounds: &Rounds) -> Option<ByFunction> {
        let sampled = |runs: &[Option<&StoredRun>]| -> Vec<Option<functions::Sampled>> {
            runs.iter()
                .map(|r| r.and_then(functions::Sampled::of_run))
                .collect()
        };
        let baseline = sampled(&rounds.baseline);
        fn paired<'a>(
            a: &'a [Option<functions::Sampled>],
            b: &'a [Option<functions::Sampled>],
        ) -> Vec<(
            Option<&'a functions::Sampled>,
            Option<&'a functions::Sampled>,
        )> {
            a.iter()
                .zip(b)
                .map(|(a, b)| (a.as_ref(), b.as_ref()))
                .collect()
        }
        let runs = sampled(&rounds.candidate);
        let pairs = paired(&baseline, &runs);
        // The candidate's call tree is drawn; the control's sentence says what it named.
        let candidate = functions::Functions {
            tree: functions::call_tree(&pairs),
            ..functions::compare(&pairs)?
        };
        let control = rounds
            .control
            .as_ref()
            .and_then(|c| functions::compare(&paired(&baseline, &sampled(c))));
        Some(ByFunction { candidate, control })
    }
}

/// The runs of a comparison: each round's run of every build (a round missing a build's run is
/// left out of that build's pairs).
#[derive(Debug, Default)]
pub struct Rounds<'a> {
    pub baseline: Vec<Option<&'a StoredRun>>,
    pub candidate: Vec<Option<&'a StoredRun>>,
    pub control: Option<Vec<Option<&'a StoredRun>>>,
}

/// The geometric mean of the positive values.
fn geomean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let logs: Vec<f64> = values.filter(|v| *v > 0.0).map(f64::ln).collect();
    (!logs.is_empty()).then(|| (logs.iter().sum::<f64>() / logs.len() as f64).exp())
}

/// Each round's number (from 1) and (baseline, other) values of `measure`, where both runs
/// hold it.
fn by_round(
    measure: Measure,
    baseline: &[Option<&StoredRun>],
    other: &[Option<&StoredRun>],
) -> Vec<(usize, (f64, f64))> {
    baseline
        .iter()
        .zip(other)
        .enumerate()
        .filter_map(|(i, (a, b))| Some((i + 1, (measure.of((*a)?)?, measure.of((*b)?)?))))
        .collect()
}

/// Each round's (baseline, other) values of `measure`, where both runs hold it.
fn pairs(
    measure: Measure,
    baseline: &[Option<&StoredRun>],
    other: &[Option<&StoredRun>],
) -> Vec<(f64, f64)> {
    by_round(measure, baseline, other)
        .into_iter()
        .map(|(_, p)| p)
        .collect()
}

impl Gate {
    /// Judges every measure of `rounds` (runs of `processes`); the gated ones are `allowed`'s.
    pub fn judge(
        names: (&str, &str, Option<&str>),
        load: &str,
        rounds: &Rounds,
        allowed: &Allowed,
        processes: Processes,
        reading: Reading,
    ) -> Gate {
        let measures = Measure::FIXED
            .iter()
            .map(|&measure| Gate::judged(measure, rounds, allowed, processes, reading))
            .collect();
        Gate {
            baseline: names.0.into(),
            candidate: names.1.into(),
            control: names.2.map(str::to_string),
            rounds: rounds.baseline.len(),
            processes,
            load: load.into(),
            measures,
            pages: None,
            revisions: BTreeMap::new(),
            functions: ByFunction::of(rounds),
            reading,
            stopped: None,
            process: None,
            warnings: Vec::new(),
        }
    }

    /// One measure of `rounds` judged: the builds' typical values, the change and the
    /// control's, the verdict and what was looked into.
    fn judged(
        measure: Measure,
        rounds: &Rounds,
        allowed: &Allowed,
        processes: Processes,
        reading: Reading,
    ) -> Judged {
        let ab = pairs(measure, &rounds.baseline, &rounds.candidate);
        let change = Change::paired_as(&ab, reading);
        let aa = rounds
            .control
            .as_ref()
            .map(|c| pairs(measure, &rounds.baseline, c))
            .unwrap_or_default();
        let control = Change::paired_as(&aa, reading);
        let ratios = |p: &[(f64, f64)]| p.iter().map(|(a, b)| b / a).collect();
        let gated = allowed.0.get(&measure).copied();
        let verdict = Gate::verdict_of(
            measure,
            &ab,
            change.as_ref(),
            gated,
            control.as_ref(),
            processes,
        );
        let note = Gate::control_note(measure, rounds, change.as_ref(), control.as_ref());
        Judged {
            measure,
            baseline: geomean(ab.iter().map(|p| p.0)),
            candidate: geomean(ab.iter().map(|p| p.1)),
            change,
            control,
            ratios: ratios(&ab),
            control_ratios: ratios(&aa),
            allowed: gated,
            verdict,
            note,
        }
    }

    /// A measure's verdict: against its allowed change where it is gated, else whether it
    /// changed; unmeasured where its rounds (`ab`, those that held it) gave no change.
    fn verdict_of(
        measure: Measure,
        ab: &[(f64, f64)],
        change: Option<&Change>,
        gated: Option<f64>,
        control: Option<&Change>,
        processes: Processes,
    ) -> Verdict {
        match (change, gated) {
            (Some(change), Some(allowed)) => Verdict::of(change, allowed, control, processes),
            // Not gated: shown, not judged against a bound.
            (Some(change), None) if change.differs() => Verdict::Changed,
            (Some(_), None) => Verdict::NoChange,
            (None, _) => Verdict::Unmeasured {
                why: if ab.is_empty() {
                    format!("no run held its {}", measure.title())
                } else {
                    format!(
                        "{} rounds held it in both builds; an interval needs {MIN_ROUNDS}",
                        ab.len()
                    )
                },
            },
        }
    }

    /// What was looked into beside a measure's verdict, where it has an A/A control
    /// ([`looked_into`], on the control's ratios by round).
    fn control_note(
        measure: Measure,
        rounds: &Rounds,
        change: Option<&Change>,
        control: Option<&Change>,
    ) -> String {
        match (change, control, &rounds.control) {
            (Some(change), Some(control), Some(c)) => {
                let by: Vec<(usize, f64)> = by_round(measure, &rounds.baseline, c)
                    .into_iter()
                    .map(|(round, (a, b))| (round, b / a))
                    .collect();
                looked_into(change, control, &by)
            }
            _ => String::new(),
        }
    }

    /// Whether every gated measure is decided (a regression, an improvement, within the band
    /// or no change): a gate read after every round stops here.
    pub fn decided(&self) -> bool {
        self.gated().all(|j| !j.verdict.undecided())
    }

    /// The rounds in all that the undecided gated measures would need, were the rounds to come
    /// like these (at most `most`): for each, the rounds after which the confidence sequence
    /// would lie on one side of the nearer end of its band.
    pub fn rounds_to_decide(&self, most: usize) -> Option<usize> {
        self.gated()
            .filter(|j| j.verdict.undecided())
            .map(|j| {
                let logs: Vec<f64> = j
                    .ratios
                    .iter()
                    .filter(|r| **r > 0.0)
                    .map(|r| r.ln())
                    .collect();
                let edge = j.allowed.map_or(0.0, f64::ln_1p);
                let mean = logs.iter().sum::<f64>() / logs.len().max(1) as f64;
                let nearer = if (mean - edge).abs() < (mean + edge).abs() {
                    edge
                } else {
                    -edge
                };
                sequential::rounds_to_decide(&logs, nearer, 1.0 - CONFIDENCE, most)
            })
            .try_fold(0, |most_needed, needed| Some(most_needed.max(needed?)))
    }

    /// Its A/A control of capacity as measured (before any spread between processes was
    /// allowed for), where it has one.
    pub fn capacity_control(&self) -> Option<Change> {
        let judged = self
            .measures
            .iter()
            .find(|j| j.measure == Measure::Capacity)?;
        let control = judged.control.as_ref()?;
        Some(match &self.process {
            Some(b) => b.narrow(control),
            None => control.clone(),
        })
    }

    /// The capacities of searches compared in interleaved rounds, judged: the baseline's search
    /// is `ids.0`, the first of `compared` (its ratios are each other search's ÷ the first's);
    /// `allowed`'s capacity is the share the candidate's may fall (not gated when absent).
    ///
    /// `past` are the gates kept of the same experiment and setting before: where the gate has
    /// an A/A control and they and this one hold [`process::MIN_SITTINGS`] controls of
    /// capacity with intervals, the spread between processes of one build is read from them
    /// and allowed for in the candidate's and the control's intervals ([`process`]).
    pub fn of_capacities(
        names: (&str, &str, Option<&str>),
        ids: (&str, &str, Option<&str>),
        load: &str,
        compared: &Compared,
        allowed: &Allowed,
        past: &[Gate],
    ) -> Gate {
        let gated = allowed.0.get(&Measure::Capacity).copied();
        let (candidate, control, process) = Gate::capacity_changes(ids, compared, past);
        let note = Gate::capacity_note(candidate.as_ref().ok(), control.as_ref(), process.as_ref());
        let verdict = Gate::capacity_verdict(&candidate, gated, control.as_ref());
        Gate {
            baseline: names.0.into(),
            candidate: names.1.into(),
            control: names.2.map(str::to_string),
            rounds: compared.rounds as usize,
            processes: Processes::Kept,
            load: load.into(),
            measures: vec![Judged {
                measure: Measure::Capacity,
                baseline: Gate::capacity_of(compared, ids.0),
                candidate: Gate::capacity_of(compared, ids.1),
                change: candidate.ok(),
                control,
                ratios: Vec::new(),
                control_ratios: Vec::new(),
                allowed: gated,
                verdict,
                note,
            }],
            pages: None,
            process,
            revisions: BTreeMap::new(),
            functions: None,
            reading: Reading::Once,
            stopped: None,
            warnings: Gate::search_warnings(names, ids, compared),
        }
    }

    /// The capacity search `id` read, where it read one.
    fn capacity_of(compared: &Compared, id: &str) -> Option<f64> {
        compared
            .searches
            .iter()
            .find(|s| s.id == id)
            .and_then(|s| s.capacity)
    }

    /// The change of capacity of search `of` against the baseline's search `to`, from the
    /// comparison's ratio of the two.
    fn capacity_change(compared: &Compared, to: &str, of: &str) -> Result<Change, NoChange> {
        let r = compared
            .ratios
            .iter()
            .find(|r| r.of == of && r.to == to)
            .ok_or(NoChange::NoRatio)?;
        match (r.low, r.high) {
            (Some(low), Some(high)) => {
                Ok(Change::of_interval(r.ratio, low, high, r.rounds as usize))
            }
            _ if r.note.is_empty() => Err(NoChange::NoInterval),
            _ => Err(NoChange::Noted(r.note.clone())),
        }
    }

    /// The candidate's and the control's changes of capacity, each widened by the spread
    /// between processes of one build where it was read, and that spread.
    fn capacity_changes(
        ids: (&str, &str, Option<&str>),
        compared: &Compared,
        past: &[Gate],
    ) -> (
        Result<Change, NoChange>,
        Option<Change>,
        Option<process::Between>,
    ) {
        let candidate = Gate::capacity_change(compared, ids.0, ids.1);
        let control = ids
            .2
            .map(|of| Gate::capacity_change(compared, ids.0, of))
            .and_then(Result::ok);
        // Read where the experiment has a control, from the past sittings' and this one's where
        // it has an interval (a control whose search read no interval leaves the spread to the
        // others: the processes still differ).
        let process = ids.2.and_then(|_| {
            let mut controls: Vec<Change> =
                past.iter().filter_map(Gate::capacity_control).collect();
            controls.extend(control.clone());
            process::Between::read(&controls)
        });
        let (candidate, control) = match &process {
            Some(b) => (candidate.map(|c| b.widen(&c)), control.map(|c| b.widen(&c))),
            None => (candidate, control),
        };
        (candidate, control, process)
    }

    /// What was looked into beside a capacity's verdict ([`looked_into`]), with the spread
    /// between processes allowed for, where it was.
    fn capacity_note(
        candidate: Option<&Change>,
        control: Option<&Change>,
        process: Option<&process::Between>,
    ) -> String {
        let mut note = match (candidate, control) {
            (Some(c), Some(aa)) => looked_into(c, aa, &[]),
            _ => String::new(),
        };
        if let Some(b) = process {
            note = if note.is_empty() {
                b.text()
            } else {
                format!("{note}; {}", b.text())
            };
        }
        note
    }

    /// A capacity's verdict: against the share it may fall where it is gated, else whether it
    /// changed; unmeasured, and why, where the comparison gave no change.
    fn capacity_verdict(
        candidate: &Result<Change, NoChange>,
        gated: Option<f64>,
        control: Option<&Change>,
    ) -> Verdict {
        match (candidate, gated) {
            (Ok(c), Some(allowed)) => Verdict::of_capacity(c, allowed, control),
            (Ok(c), None) if c.differs() => Verdict::Changed,
            (Ok(_), None) => Verdict::NoChange,
            (Err(why), _) => Verdict::Unmeasured {
                why: why.to_string(),
            },
        }
    }

    /// Each search's warnings, one line each, by the name of its build.
    fn search_warnings(
        names: (&str, &str, Option<&str>),
        ids: (&str, &str, Option<&str>),
        compared: &Compared,
    ) -> Vec<String> {
        let names_by_id = |id: &str| match id {
            _ if id == ids.0 => Some(names.0),
            _ if id == ids.1 => Some(names.1),
            _ if Some(id) == ids.2 => names.2,
            _ => None,
        };
        compared
            .searches
            .iter()
            .flat_map(|s| {
                let name = names_by_id(s.id.as_str()).unwrap_or(s.name.as_str());
                s.warnings()
                    .into_iter()
                    .map(move |w| format!("{name}'s search: {w}"))
            })
            .collect()
    }

    /// The gated measures.
    pub fn gated(&self) -> impl Iterator<Item = &Judged> {
        self.measures.iter().filter(|j| j.allowed.is_some())
    }

    /// What the gate says as a whole.
    pub fn outcome(&self) -> Outcome {
        if self.gated().any(|j| j.verdict.fails()) {
            Outcome::Regression
        } else if self.gated().any(|j| j.verdict.undecided()) {
            Outcome::Inconclusive
        } else {
            Outcome::Pass
        }
    }
}

/// A gate's answer, and its exit code (docs: README, "A gate for pull requests").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// No gated measure regressed, and each was decided.
    Pass,
    /// A gated measure regressed beyond what is allowed.
    Regression,
    /// None regressed, but one could not be decided (too noisy, or not measured).
    Inconclusive,
}

#[cfg(test)]
mod tests;
