//! An experiment's history across sittings: when a server changed, and by how much.
//!
//! A **sitting** is what one `loadgen experiment run` made (its runs and searches carry the
//! label `sitting`), or, outside the runner, the runs and searches sharing a `revision` label
//! (`--label revision=…` on `attack` and `capacity`). Each sitting gives every series one
//! point: a **series** is one target, one setting (the cell without its target) and one
//! measure (capacity within the SLO, CPU per request, memory, latency), its point the geometric
//! mean of the sitting's runs of that cell (a search's fitted capacity), with its variance where
//! the sitting knows one (a search's interval, or the spread of two or more repetitions).
//!
//! **Change points** are found on each series' logarithm by E-divisive means ([`divisive`]),
//! each split held against draws of the null (normal sittings, or each segment's own shuffled)
//! at the history's level divided among its series
//! (Bonferroni: a history of twelve series at 5 % tests each at 0.42 %), with at least
//! [`Config::min_segment`] sittings either side. A change's **size** is the ratio of the
//! random-effects levels ([`pool`]) of the sittings either side, between the changes around it,
//! with its 95 % interval; a change smaller than [`Config::min_change`] is not one, nor is one
//! whose interval holds 1 (the split's test and its size disagree on a direction).
//!
//! **References.** With references named (`--reference spin`), each target's series is divided
//! sitting by sitting by the reference that tracks it best ([`reference`]), so that the host's
//! drift from sitting to sitting, which moves both, is taken out before changes are sought.
//!
//! **A change too recent to confirm** ([`tail`]): the last sittings, fewer than
//! [`Config::min_segment`], held against the level since the last change; a **possible**
//! change, said with the sittings it still needs, and held against `--fail-within` too.
//!
//! **The host** in each sitting ([`host`]): steal, the CPUs' clock and a load from memory,
//! read over its steps and runs and shown beside its figures.
//!
//! Modules: [`divisive`] (the cut), [`pool`] (the levels), [`reference`] (sittings made
//! comparable), [`host`] (the host in each sitting), [`read`] (a history from the store),
//! [`text`] (the history in words and in Markdown).

pub mod divisive;
pub mod host;
pub mod pool;
pub mod read;
pub mod reference;
pub mod serial;
pub mod tail;
pub mod text;

use serde::{Deserialize, Serialize};

use crate::ab::Measure;
use pool::Pooled;

/// How a history is judged.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Config {
    /// The chance of calling a change in a history where none happened, over all its series.
    pub level: f64,
    /// The fewest sittings either side of a change.
    pub min_segment: usize,
    /// The smallest change called one, as a share (0.02: 2 %).
    pub min_change: f64,
    /// What a split is held against.
    #[serde(default)]
    pub null: divisive::Null,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            level: 0.05,
            min_segment: 3,
            min_change: 0.0,
            null: divisive::Null::Normal,
        }
    }
}

/// One sitting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sitting {
    pub id: String,
    /// When its first run started, Unix ns.
    pub started_at_ns: i64,
    /// The revisions its targets were built at (`origin/main at 1a2b3c4d5e6f`), each once.
    pub revisions: Vec<String>,
    /// The host over it, where its steps or runs read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<host::SittingHost>,
}

/// What a series is of.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Key {
    pub target: String,
    /// The cell's setting without its target (`rate=2000`), "" without axes.
    pub setting: String,
    pub measure: Measure,
}

impl Key {
    /// "node, rate=2000: CPU per request".
    pub fn text(&self) -> String {
        let at = if self.setting.is_empty() {
            String::new()
        } else {
            format!(", {}", self.setting)
        };
        format!("{}{at}: {}", self.target, self.measure.title())
    }
}

/// One sitting's figure of a series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Its sitting's index in [`History::sittings`].
    pub sitting: usize,
    /// The target's revision in that sitting, if it was built at one.
    pub revision: Option<String>,
    /// The figure, in the measure's unit (geometric mean of its runs).
    pub value: f64,
    /// The variance of its logarithm, where the sitting knows it.
    pub variance: Option<f64>,
    /// The runs (or searches) it is of.
    pub runs: usize,
}

impl Point {
    /// Its 95 % interval in the measure's unit, where the sitting knows its variance: for the
    /// mean of two or more runs, Student's t on their number less one (exact for normal
    /// logarithms); for one search, the normal's 1.96 (its variance read from the search's own
    /// 95 % interval, which this gives back). `None` for a point divided by a reference, whose
    /// variance adds two sittings' and has no stated degrees of freedom.
    pub fn interval(&self, divided: bool) -> Option<(f64, f64)> {
        let v = self.variance.filter(|v| v.is_finite() && *v > 0.0)?;
        if divided || !(self.value.is_finite() && self.value > 0.0) {
            return None;
        }
        let q = if self.runs >= 2 {
            pool::t975((self.runs - 1) as f64)
        } else {
            1.959_964
        };
        let half = q * v.sqrt();
        let log = self.value.ln();
        Some(((log - half).exp(), (log + half).exp()))
    }
}

/// A change point of a series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// The first point after it (an index in the series' points).
    pub at: usize,
    /// The sittings either side (indices in [`History::sittings`]).
    pub before_sitting: usize,
    pub after_sitting: usize,
    /// The target's revisions either side, where it was built at one.
    pub before_revision: Option<String>,
    pub after_revision: Option<String>,
    /// The p-value of the split against the null, and the level it was tested at.
    pub p: f64,
    pub tested_at: f64,
    /// After ÷ before, with its 95 % interval.
    pub ratio: f64,
    pub low: f64,
    pub high: f64,
    /// Whether the measure got worse (capacity down; CPU, memory or latency up).
    pub worse: bool,
}

/// A series judged: its points, its change points, and the level between them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    pub key: Key,
    /// How it was made comparable across sittings, when references were named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub normalised: Option<reference::Normalised>,
    pub points: Vec<Point>,
    pub changes: Vec<Change>,
    /// A change the last sittings suggest, too recent for a change point ([`tail`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub possible: Option<tail::Possible>,
    /// The levels between changes, of the logarithm: one more than the changes (none with fewer
    /// than two points).
    pub segments: Vec<Pooled>,
}

/// A series' level now, in its measure's unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Level {
    pub value: f64,
    /// Its 95 % interval.
    pub low: f64,
    pub high: f64,
    /// Where a new sitting's figure falls, 95 % of the time (3 sittings or more).
    pub predict: Option<(f64, f64)>,
}

impl Series {
    /// A figure of this series in words: in its measure's unit, or, divided by a reference,
    /// as a multiple of the reference's ("1.042× spin").
    pub fn value_text(&self, value: f64) -> String {
        match self.normalised.as_ref().and_then(|n| n.reference.as_ref()) {
            Some(reference) => format!("{value:.3}× {reference}"),
            None => self.key.measure.value_text(value),
        }
    }

    /// The level of the sittings since the last change.
    pub fn level(&self) -> Option<Level> {
        let p = self.segments.last()?;
        Some(Level {
            value: p.mean.exp(),
            low: p.low.exp(),
            high: p.high.exp(),
            predict: p.predict.map(|(l, h)| (l.exp(), h.exp())),
        })
    }
}

/// An experiment's history, judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct History {
    pub experiment: String,
    /// Oldest first.
    pub sittings: Vec<Sitting>,
    pub series: Vec<Series>,
    pub config: Config,
    /// The draws of the null each split was held against.
    pub permutations: usize,
    /// Runs and searches of the experiment in no sitting (kept before sittings were labelled,
    /// with no revision label either): not in the history.
    pub unplaced: usize,
    /// The lag-1 correlation of consecutive sittings within the series' segments, which the
    /// null carries (none with too few sittings to read it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serial: Option<serial::Serial>,
}

/// A series before it is judged.
#[derive(Debug, Clone, PartialEq)]
pub struct Raw {
    pub key: Key,
    pub points: Vec<Point>,
}

impl History {
    /// `series` judged against `config`, each target's divided by the reference of
    /// `references` that tracks it best.
    pub fn judge(
        experiment: &str,
        sittings: Vec<Sitting>,
        series: Vec<Raw>,
        unplaced: usize,
        config: Config,
        references: &[String],
    ) -> History {
        let series = reference::normalise(series, references);
        let tested = series.len().max(1);
        let level = config.level / tested as f64;
        // Enough draws that the level can be reached ten times over.
        let permutations = ((10.0 / level).ceil() as usize).max(999);
        // Cut once with independent sittings, measure the lag-1 correlation left within the
        // segments of every series, and cut again with a null that carries it.
        let judged = |rho: f64| -> Vec<Series> {
            series
                .iter()
                .map(|(raw, normalised)| Series {
                    normalised: normalised.clone(),
                    ..judge_series(raw.clone(), &config, level, permutations, rho)
                })
                .collect()
        };
        let first = judged(0.0);
        let serial = serial::within(&first);
        let series = match serial {
            Some(s) if s.rho > 0.0 => judged(s.rho),
            _ => first,
        };
        History {
            experiment: experiment.to_string(),
            sittings,
            series,
            config,
            permutations,
            unplaced,
            serial,
        }
    }

    /// The changes that made a measure worse whose first worse sitting is one of the last
    /// `n`: change points, and possible changes too recent to confirm (`Some` with the
    /// sittings each still needs). `n = 1`: the last sitting made a measure worse.
    pub fn worse_within(&self, n: usize) -> Vec<(&Series, &Change, Option<usize>)> {
        let first = self.sittings.len().saturating_sub(n);
        self.series
            .iter()
            .flat_map(|s| {
                let confirmed = s.changes.iter().map(move |c| (s, c, None));
                let possible = s.possible.iter().map(move |p| (s, &p.change, Some(p.more)));
                confirmed.chain(possible)
            })
            .filter(|(_, c, _)| c.worse && c.after_sitting >= first)
            .collect()
    }
}

/// Whether a higher figure of `measure` is worse.
fn higher_is_worse(measure: Measure) -> bool {
    measure != Measure::Capacity
}

/// The levels of the segments of `points` cut at `cuts` (log scale).
fn segments(points: &[Point], cuts: &[usize]) -> Vec<Option<Pooled>> {
    let mut bounds = vec![0];
    bounds.extend_from_slice(cuts);
    bounds.push(points.len());
    bounds
        .windows(2)
        .map(|w| {
            let part = &points[w[0]..w[1]];
            let y: Vec<f64> = part.iter().map(|p| p.value.ln()).collect();
            let v: Option<Vec<f64>> = part.iter().map(|p| p.variance).collect();
            pool::pool(&y, v.as_deref())
        })
        .collect()
}

/// `after ÷ before` with its 95 % interval (Welch–Satterthwaite degrees of freedom).
fn ratio(before: &Pooled, after: &Pooled) -> (f64, f64, f64) {
    let d = after.mean - before.mean;
    let (a, b) = (before.se_used.powi(2), after.se_used.powi(2));
    let se = (a + b).sqrt();
    let df = if a + b > 0.0 {
        (a + b).powi(2) / (a * a / before.df + b * b / after.df)
    } else {
        before.df + after.df
    };
    let t = pool::t975(df);
    (d.exp(), (d - t * se).exp(), (d + t * se).exp())
}

fn judge_series(raw: Raw, config: &Config, level: f64, permutations: usize, rho: f64) -> Series {
    let Raw { key, points } = raw;
    let logs: Vec<f64> = points.iter().map(|p| p.value.ln()).collect();
    let divisive = divisive::Config {
        level,
        permutations,
        null: config.null,
        min_segment: config.min_segment,
        seed: crate::capacity::random::seed_of(&key.text()),
        rho,
    };
    let mut splits = divisive::changes(&logs, &divisive);
    drop_small_changes(&mut splits, &points, config);
    let cuts: Vec<usize> = splits.iter().map(|s| s.at).collect();
    let levels: Vec<Pooled> = segments(&points, &cuts).into_iter().flatten().collect();
    let changes = changes_at(&splits, &levels, &points, level, key.measure);
    let start = cuts.last().copied().unwrap_or(0);
    let possible = tail::possible(
        &points,
        start,
        config.min_segment,
        config.min_change,
        level,
        higher_is_worse(key.measure),
    );
    Series {
        key,
        normalised: None,
        points,
        changes,
        possible,
        segments: levels,
    }
}

/// Drops the changes too small to be ones from `splits`, the smallest first.
fn drop_small_changes(splits: &mut Vec<divisive::Split>, points: &[Point], config: &Config) {
    // A change smaller than the least called one is not one, nor is one whose size's 95 %
    // interval holds 1 (no change: the split's test and its size disagree, as for a level
    // moved 0.3 % in a reference whose sittings barely vary): drop the smallest such, re-pool,
    // until every change left is large enough and sure of its direction.
    loop {
        let cuts: Vec<usize> = splits.iter().map(|s| s.at).collect();
        let levels = segments(points, &cuts);
        let small = levels
            .windows(2)
            .enumerate()
            .filter_map(|(i, w)| {
                let (Some(a), Some(b)) = (&w[0], &w[1]) else {
                    return Some((i, 0.0));
                };
                let size = ((b.mean - a.mean).exp() - 1.0).abs();
                let (_, low, high) = ratio(a, b);
                (size < config.min_change || (low <= 1.0 && 1.0 <= high)).then_some((i, size))
            })
            .min_by(|a, b| a.1.total_cmp(&b.1));
        match small {
            Some((i, _)) => {
                splits.remove(i);
            }
            None => break,
        }
    }
}

/// The changes at `splits`, each the ratio of the levels either side of it.
fn changes_at(
    splits: &[divisive::Split],
    levels: &[Pooled],
    points: &[Point],
    level: f64,
    measure: Measure,
) -> Vec<Change> {
    splits
        .iter()
        .zip(levels.windows(2))
        .map(|(split, w)| {
            let (r, low, high) = ratio(&w[0], &w[1]);
            let before = &points[split.at - 1];
            let after = &points[split.at];
            Change {
                at: split.at,
                before_sitting: before.sitting,
                after_sitting: after.sitting,
                before_revision: before.revision.clone(),
                after_revision: after.revision.clone(),
                p: split.p,
                tested_at: level,
                ratio: r,
                low,
                high,
                worse: (r > 1.0) == higher_is_worse(measure),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
