//! Where a comparison's CPU went: each function's CPU per request in each build, from the
//! probe's on-CPU profile of every run of the rounds, compared round by round with an
//! interval, and the functions that changed beyond noise named at a stated false discovery
//! rate.
//!
//! **The estimand.** For a function (by name, every process and thread of the target merged)
//! and a build: its CPU per request, µs, the server's CPU per request × the share of the
//! profile's samples with the function innermost (its own code, [`Part::Own`]) or anywhere on
//! the stack (it and what it called, [`Part::Total`]). The answer is the candidate's minus the
//! baseline's, as the mean over rounds of each round's difference: on this host, at this
//! load, in this sitting. In this unit a function that did not change reads 0 even when
//! another grew and took a larger share of the samples.
//!
//! **The estimate.** Each round gives one difference; the answer is their mean and its
//! interval Student's t over the rounds (rounds − 1 degrees of freedom), paired by round as
//! the gate's measures are ([`super::Change::paired`]). What differs from one run to the next
//! (which samples the profiler happened to take, the host's noise, the process) is in the
//! rounds' spread, so the interval holds it.
//!
//! **Many functions at once.** A profile names hundreds of functions; at 95 % each, a few would
//! read as changed by chance alone. Every function with [`MIN_SAMPLES`] own samples over the
//! runs compared is tested (its rounds' differences, a moderated t against none: its variance
//! shrunk towards the trend of the others' in their level, [`moderated`]), and the functions
//! *named* as changed are the Benjamini–Hochberg selection at a false discovery rate of
//! [`FDR`]: of the functions named, on average 5 % or fewer did not change. A named function's
//! interval is the false-coverage-rate interval of Benjamini and Yekutieli (2005): at level
//! 1 − R·0.05/m for R named of m tested, so that of the intervals shown for named functions, on
//! average 5 % or fewer miss their function's change. A function not named has its plain 95 %
//! interval, and
//! the smallest change its rounds would have shown ([`FunctionChange::could_see_us`]). The
//! proof is [`tests`]' simulated profiles: a host whose CPU per request moves from run to
//! run, hundreds of functions sampled at a few thousand samples a run, with and without one
//! function's real change.

use std::collections::{BTreeMap, BTreeSet};

use probe::protocol::Record;
use probe::sample::Role;
use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};
use store::run::StoredRun;

use super::MIN_ROUNDS;

pub mod knee;
pub mod moderated;
mod paths;
pub use paths::{CallTree, PathChange, DRAWN_SHARE};

/// The false discovery rate of the functions named as changed, and the false coverage rate of
/// their intervals.
pub const FDR: f64 = 0.05;

/// Own samples over the runs compared a function needs to be tested: one with fewer is a
/// sample or two a run, too far from a normal spread for Student's t; how many samples a
/// function has is independent of its change when it has none, so the choice keeps the tests'
/// level.
pub const MIN_SAMPLES: u64 = 50;

/// The confidence of a function's interval when it is not named.
pub const CONFIDENCE: f64 = 0.95;

/// The share of a build's samples without a symbol (their innermost frame `[…]`) past which
/// the answer says it could not name where that CPU went.
pub const UNNAMED_SAID: f64 = 0.05;

/// Which of a function's samples: its own code, or it and what it called.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Part {
    /// Samples with the function innermost.
    Own,
    /// Samples with the function anywhere on the stack (once a stack, however it recurses).
    Total,
}

/// One run's profile as the estimate reads it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sampled {
    /// The run's samples (every stack's count summed).
    pub samples: u64,
    /// Each function's samples of its own (innermost).
    pub own: BTreeMap<String, u64>,
    /// Each function's samples anywhere on the stack.
    pub total: BTreeMap<String, u64>,
    /// Each code path's samples (its frames outermost first, joined by `;`): the samples of
    /// the stacks that start with it, the call tree's boxes.
    pub paths: BTreeMap<String, u64>,
    /// Samples whose innermost frame has no symbol (`[unknown]`, `[file+0x…]`).
    pub unnamed: u64,
    /// The server's CPU per request answered in the run, µs.
    pub cpu_us: f64,
}

/// Adds `n` to `key`'s count, allocating its name only the first time it is seen.
fn add(counts: &mut BTreeMap<String, u64>, key: &str, n: u64) {
    match counts.get_mut(key) {
        Some(c) => *c += n,
        None => {
            counts.insert(key.to_string(), n);
        }
    }
}

/// Whether a frame is named by a symbol: the probe writes one it could not name in brackets.
fn named_frame(frame: &str) -> bool {
    !frame.starts_with('[')
}

impl Sampled {
    /// A run's profile from its stacks, each its function frames (outermost first, without the
    /// process and the thread) and its samples, and the run's CPU per request, µs: its
    /// functions' samples and its call paths' ([`Sampled::paths`]).
    pub fn of<'a, S>(stacks: impl IntoIterator<Item = (S, u64)>, cpu_us: f64) -> Sampled
    where
        S: AsRef<[&'a str]>,
    {
        Sampled::count(stacks, cpu_us, true)
    }

    /// [`Sampled::of`] without the call paths: each function's own and total samples alone,
    /// for a page's table of functions.
    pub fn of_functions<'a, S>(stacks: impl IntoIterator<Item = (S, u64)>, cpu_us: f64) -> Sampled
    where
        S: AsRef<[&'a str]>,
    {
        Sampled::count(stacks, cpu_us, false)
    }

    fn count<'a, S>(stacks: impl IntoIterator<Item = (S, u64)>, cpu_us: f64, paths: bool) -> Sampled
    where
        S: AsRef<[&'a str]>,
    {
        let mut run = Sampled {
            cpu_us,
            ..Sampled::default()
        };
        for (frames, n) in stacks {
            let frames = frames.as_ref();
            let Some(innermost) = frames.last() else {
                continue;
            };
            run.samples += n;
            add(&mut run.own, innermost, n);
            if !named_frame(innermost) {
                run.unnamed += n;
            }
            let distinct: BTreeSet<&str> = frames.iter().copied().collect();
            for f in distinct {
                add(&mut run.total, f, n);
            }
            if paths {
                let mut path = String::new();
                for (i, f) in frames.iter().enumerate() {
                    if i > 0 {
                        path.push(';');
                    }
                    path.push_str(f);
                    add(&mut run.paths, &path, n);
                }
            }
        }
        run
    }

    /// A kept run's profile: the target's probe's profile records of the attack (a record
    /// covers the second before its time, so those up to half a second past the end are in),
    /// the process and the thread of each stack left out, and the run's CPU per request
    /// ([`super::Measure::Cpu`]). `None` when the run holds no profile or no CPU per request.
    pub fn of_run(run: &StoredRun) -> Option<Sampled> {
        let cpu_us = super::Measure::Cpu.of(run)?;
        let end = (run.summary.as_ref()?.duration.attack_s * 1e9) as i64 + 500_000_000;
        Sampled::of_records(run, |t_ns, _| t_ns > 0 && t_ns <= end, cpu_us)
    }

    /// The target's probe's profile records of `run` that `keep` (by a record's time and the
    /// span before it that it covers, ns), the process and the thread of each stack left out,
    /// with `cpu_us` a request: `None` without a sample.
    pub fn of_records(
        run: &StoredRun,
        keep: impl Fn(i64, i64) -> bool,
        cpu_us: f64,
    ) -> Option<Sampled> {
        let probe = run
            .probes
            .iter()
            .find(|p| p.meta.host.role == Role::Target)?;
        let folded: Vec<(String, u64)> = probe
            .records
            .iter()
            .filter_map(|r| match &r.record {
                Record::Profile(p) if keep(r.t_ns, p.interval_ns as i64) => Some(p.folded()),
                _ => None,
            })
            .flatten()
            .collect();
        let stacks = folded
            .iter()
            .map(|(stack, n)| (stack.split(';').skip(2).collect::<Vec<&str>>(), *n));
        let sampled = Sampled::of(stacks, cpu_us);
        (sampled.samples > 0).then_some(sampled)
    }

    /// A function's CPU per request in this run, µs, from its `count` of the run's samples:
    /// `None` where the run has no samples or no CPU per request.
    fn per_request(&self, count: u64) -> Option<f64> {
        (self.samples > 0 && self.cpu_us.is_finite() && self.cpu_us > 0.0)
            .then(|| self.cpu_us * count as f64 / self.samples as f64)
    }

    fn counts(&self, part: Part) -> &BTreeMap<String, u64> {
        match part {
            Part::Own => &self.own,
            Part::Total => &self.total,
        }
    }
}

/// One function's change between two builds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionChange {
    pub name: String,
    pub part: Part,
    /// Its CPU per request in each build, µs: the mean over the rounds compared.
    pub baseline_us: f64,
    pub candidate_us: f64,
    /// The candidate's minus the baseline's, µs a request: the mean of the rounds'.
    pub difference_us: f64,
    /// The interval's ends, µs: at the false-coverage-rate level where the function is named,
    /// else 95 %.
    pub low_us: f64,
    pub high_us: f64,
    /// The interval's level (0.95, or higher for a named function).
    pub level: f64,
    /// The two-sided p-value of the rounds' differences against none (Student's t).
    pub p: f64,
    /// Named as changed: in the Benjamini–Hochberg selection at [`FDR`].
    pub named: bool,
    /// The smallest change these rounds would show 80 % of the time at 95 %, µs a request:
    /// (t₀.₉₇₅ + t₀.₈) × the standard error of the mean difference.
    pub could_see_us: f64,
    /// The degrees of freedom of its Student's t (the rounds less one for a gate's).
    #[serde(default)]
    pub df: f64,
}

/// Where the CPU per request changed between two builds, function by function.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Functions {
    /// Rounds compared: both builds' runs profiled, with samples and a CPU per request.
    pub rounds: usize,
    /// Rounds left out: a run of either build without a profile (or without samples).
    pub unprofiled: usize,
    /// Functions tested (with [`MIN_SAMPLES`] own samples over the runs compared): the first
    /// `tested` of `own`.
    pub tested: usize,
    /// The degrees of freedom of the prior the tested functions' variances were shrunk
    /// towards (infinite: the trend alone), `None` where they were not moderated.
    #[serde(default)]
    pub prior: Option<f64>,
    /// The server's CPU per request, candidate minus baseline, µs: the mean of the rounds'.
    pub cpu_difference_us: f64,
    /// The share of each build's samples without a symbol (mean over its runs).
    pub unnamed: (f64, f64),
    /// Every function tested, of its own samples: named first, then by the size of the change.
    pub own: Vec<FunctionChange>,
    /// The named functions' totals (they and what they called), each at its function's
    /// level.
    pub total: Vec<FunctionChange>,
    /// The same estimate for each code path of the call tree ([`call_tree`]): what a
    /// differential flame graph is drawn from; the candidate's alone is kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree: Option<CallTree>,
}

/// Student's t's quantile at `q` with `df` degrees of freedom (any, not only whole ones).
pub(crate) fn t_quantile(q: f64, df: f64) -> f64 {
    StudentsT::new(0.0, 1.0, df).map_or(f64::INFINITY, |t| t.inverse_cdf(q))
}

/// Mean, standard error and degrees of freedom of `xs`.
fn mean_se(xs: &[f64]) -> (f64, f64, usize) {
    let n = xs.len();
    let mean = xs.iter().sum::<f64>() / n as f64;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    (mean, (var / n as f64).sqrt(), n - 1)
}

/// One function's change over `rounds` (each round's baseline and candidate run).
fn change(name: &str, part: Part, rounds: &[(&Sampled, &Sampled)]) -> FunctionChange {
    estimate(name, part, rounds, |run| {
        run.counts(part).get(name).copied().unwrap_or(0)
    })
}

/// The change over `rounds` of what takes `count` of a run's samples, named `name`.
fn estimate(
    name: &str,
    part: Part,
    rounds: &[(&Sampled, &Sampled)],
    count: impl Fn(&Sampled) -> u64,
) -> FunctionChange {
    estimated(rounds, count).change(name, part)
}

/// The change over `rounds` of what takes `count` of a run's samples, before it is tested.
fn estimated(rounds: &[(&Sampled, &Sampled)], count: impl Fn(&Sampled) -> u64) -> Estimate {
    let at = |run: &Sampled| run.per_request(count(run)).unwrap_or(0.0);
    let base: Vec<f64> = rounds.iter().map(|(a, _)| at(a)).collect();
    let cand: Vec<f64> = rounds.iter().map(|(_, b)| at(b)).collect();
    let diffs: Vec<f64> = base.iter().zip(&cand).map(|(a, b)| b - a).collect();
    let (mean, se, df) = mean_se(&diffs);
    let avg = |xs: &[f64]| xs.iter().sum::<f64>() / xs.len() as f64;
    Estimate {
        baseline_us: avg(&base),
        candidate_us: avg(&cand),
        difference_us: mean,
        se,
        df: df as f64,
    }
}

/// A change estimated with a standard error on `df` degrees of freedom (Student's t), before
/// any function is named.
struct Estimate {
    baseline_us: f64,
    candidate_us: f64,
    difference_us: f64,
    se: f64,
    df: f64,
}

impl Estimate {
    /// Its 95 % interval, its two-sided p-value against none and the smallest change it would
    /// show, for the function `name`.
    fn change(self, name: &str, part: Part) -> FunctionChange {
        let Estimate {
            baseline_us,
            candidate_us,
            difference_us: mean,
            se,
            df,
        } = self;
        let p = if se > 0.0 {
            StudentsT::new(0.0, 1.0, df).map_or(1.0, |t| 2.0 * (1.0 - t.cdf((mean / se).abs())))
        } else if mean == 0.0 {
            1.0
        } else {
            0.0
        };
        let t975 = t_quantile(0.975, df);
        let half = t975 * se;
        FunctionChange {
            name: name.to_string(),
            part,
            baseline_us,
            candidate_us,
            difference_us: mean,
            low_us: mean - half,
            high_us: mean + half,
            level: CONFIDENCE,
            p,
            named: false,
            could_see_us: (t975 + t_quantile(0.8, df)) * se,
            df,
        }
    }
}

/// The inverse of the symmetric `k`×`k` matrix `a` (row-major), `None` when it is singular
/// (a pivot under a billionth of its diagonal's).
pub(super) fn inverse(a: &[f64], k: usize) -> Option<Vec<f64>> {
    let mut m = a.to_vec();
    let mut inv: Vec<f64> = (0..k * k)
        .map(|i| if i / k == i % k { 1.0 } else { 0.0 })
        .collect();
    for col in 0..k {
        let pivot =
            (col..k).max_by(|&i, &j| m[i * k + col].abs().total_cmp(&m[j * k + col].abs()))?;
        let scale = a[col * k + col].abs().max(f64::MIN_POSITIVE);
        if m[pivot * k + col].abs() <= 1e-9 * scale {
            return None;
        }
        for c in 0..k {
            m.swap(col * k + c, pivot * k + c);
            inv.swap(col * k + c, pivot * k + c);
        }
        let d = m[col * k + col];
        for c in 0..k {
            m[col * k + c] /= d;
            inv[col * k + c] /= d;
        }
        for r in (0..k).filter(|&r| r != col) {
            let f = m[r * k + col];
            for c in 0..k {
                m[r * k + c] -= f * m[col * k + c];
                inv[r * k + c] -= f * inv[col * k + c];
            }
        }
    }
    Some(inv)
}

/// Names the Benjamini–Hochberg selection at [`FDR`] among `changes` and widens the named
/// ones' intervals to the false-coverage-rate level 1 − R·FDR/m.
fn select(changes: &mut [FunctionChange]) {
    let m = changes.len();
    let mut ps: Vec<f64> = changes.iter().map(|c| c.p).collect();
    ps.sort_by(f64::total_cmp);
    let cut = ps
        .iter()
        .enumerate()
        .rev()
        .find(|(k, p)| **p <= (k + 1) as f64 / m as f64 * FDR)
        .map(|(_, p)| *p);
    let Some(cut) = cut else {
        return;
    };
    let named = changes.iter().filter(|c| c.p <= cut).count();
    let level = 1.0 - named as f64 * FDR / m as f64;
    for c in changes.iter_mut().filter(|c| c.p <= cut) {
        c.named = true;
        widen(c, level);
    }
}

/// Every function of `many` tested at once (its estimate by `estimate`, the variances
/// moderated across them, the Benjamini–Hochberg selection named), named first, then by the
/// size of the change; then those of `few`, not tested (p-value 1); with the prior's degrees of
/// freedom where the variances were moderated.
fn tested(
    many: &[&str],
    few: &[&str],
    estimate: impl Fn(&str) -> Estimate,
    part: Part,
    moderate: bool,
) -> (Vec<FunctionChange>, Option<f64>) {
    let mut estimates: Vec<Estimate> = many.iter().map(|name| estimate(name)).collect();
    let prior = moderate
        .then(|| moderated::moderate(&mut estimates))
        .flatten()
        .map(|p| p.df.min(1e6));
    let mut own: Vec<FunctionChange> = estimates
        .into_iter()
        .zip(many)
        .map(|(e, name)| e.change(name, part))
        .collect();
    select(&mut own);
    let by_size = |a: &FunctionChange, b: &FunctionChange| {
        b.named
            .cmp(&a.named)
            .then(b.difference_us.abs().total_cmp(&a.difference_us.abs()))
    };
    own.sort_by(by_size);
    let mut untested: Vec<FunctionChange> = few
        .iter()
        .map(|name| FunctionChange {
            p: 1.0,
            ..estimate(name).change(name, part)
        })
        .collect();
    untested.sort_by(by_size);
    own.extend(untested);
    (own, prior)
}

/// Widens `c`'s 95 % interval (Student's t on its degrees of freedom) to `level`.
fn widen(c: &mut FunctionChange, level: f64) {
    let t = t_quantile(1.0 - (1.0 - level) / 2.0, c.df);
    let se = (c.high_us - c.difference_us) / t_quantile(0.975, c.df);
    c.level = level;
    c.low_us = c.difference_us - t * se;
    c.high_us = c.difference_us + t * se;
}

/// The rounds compared: both runs profiled, with samples and a CPU per request; `None` with
/// fewer than [`MIN_ROUNDS`].
fn compared<'a>(
    rounds: &[(Option<&'a Sampled>, Option<&'a Sampled>)],
) -> Option<Vec<(&'a Sampled, &'a Sampled)>> {
    let pairs: Vec<(&Sampled, &Sampled)> = rounds
        .iter()
        .filter_map(|(a, b)| Some(((*a)?, (*b)?)))
        .filter(|(a, b)| a.per_request(0).is_some() && b.per_request(0).is_some())
        .collect();
    (pairs.len() >= MIN_ROUNDS).then_some(pairs)
}

/// The call tree's changes over the same rounds as [`compare`]'s ([`paths`]): what the
/// differential flame graph is drawn from, `None` where [`compare`] gives none.
pub fn call_tree(rounds: &[(Option<&Sampled>, Option<&Sampled>)]) -> Option<CallTree> {
    compared(rounds).map(|pairs| {
        let runs: Vec<&Sampled> = pairs.iter().flat_map(|(a, b)| [*a, *b]).collect();
        paths::tree(&runs, 0, |name, count| {
            estimate(name, Part::Total, &pairs, count)
        })
    })
}

/// The functions' changes over a comparison's rounds (each round's baseline run and candidate
/// run, `None` where a run has no profile): `None` with fewer than [`MIN_ROUNDS`] rounds in
/// which both runs were profiled.
pub fn compare(rounds: &[(Option<&Sampled>, Option<&Sampled>)]) -> Option<Functions> {
    compare_with(rounds, true)
}

/// [`compare`], the variances moderated or each function's own.
fn compare_with(
    rounds: &[(Option<&Sampled>, Option<&Sampled>)],
    moderate: bool,
) -> Option<Functions> {
    let pairs = compared(rounds)?;
    let names: BTreeSet<&str> = pairs
        .iter()
        .flat_map(|(a, b)| a.own.keys().chain(b.own.keys()))
        .map(String::as_str)
        .collect();
    let samples_of = |name: &str| -> u64 {
        pairs
            .iter()
            .flat_map(|(a, b)| [a, b])
            .map(|run| run.own.get(name).copied().unwrap_or(0))
            .sum()
    };
    let (many, few): (Vec<&str>, Vec<&str>) = names
        .iter()
        .partition(|name| samples_of(name) >= MIN_SAMPLES);
    let (own, prior) = tested(
        &many,
        &few,
        |name| estimated(&pairs, |run| run.own.get(name).copied().unwrap_or(0)),
        Part::Own,
        moderate,
    );
    // A named function's total, at its own figure's level: it too is shown because it was
    // selected.
    let total = own
        .iter()
        .filter(|c| c.named)
        .map(|c| {
            let mut t = change(&c.name, Part::Total, &pairs);
            widen(&mut t, c.level);
            t
        })
        .collect();
    let n = pairs.len() as f64;
    let unnamed = |runs: &mut dyn Iterator<Item = &Sampled>| {
        runs.map(|s| s.unnamed as f64 / s.samples as f64)
            .sum::<f64>()
            / n
    };
    Some(Functions {
        tree: None,
        rounds: pairs.len(),
        unprofiled: rounds.len() - pairs.len(),
        tested: many.len(),
        prior,
        cpu_difference_us: pairs.iter().map(|(a, b)| b.cpu_us - a.cpu_us).sum::<f64>() / n,
        unnamed: (
            unnamed(&mut pairs.iter().map(|p| p.0)),
            unnamed(&mut pairs.iter().map(|p| p.1)),
        ),
        own,
        total,
    })
}

/// A share (0–1) as a percentage a reader can use: never "0.0 %" for something that was there.
pub fn percent(share: f64) -> String {
    let p = share * 100.0;
    if p >= 10.0 {
        format!("{p:.0} %")
    } else if p >= 0.1 {
        format!("{p:.1} %")
    } else {
        format!("{p:.2} %")
    }
}

/// "+102.3 µs", "−4.1 µs", "+0.85 µs".
pub fn signed_us(us: f64) -> String {
    let sign = if us < 0.0 { "−" } else { "+" };
    let a = us.abs();
    if a >= 10.0 {
        format!("{sign}{a:.1} µs")
    } else {
        format!("{sign}{a:.2} µs")
    }
}

impl FunctionChange {
    /// "+102.3 µs (interval +96.0 µs to +108.1 µs)".
    pub fn figure(&self) -> String {
        format!(
            "{} (interval {} to {})",
            signed_us(self.difference_us),
            signed_us(self.low_us),
            signed_us(self.high_us)
        )
    }
}

impl Functions {
    /// The largest change a function's figures could have hidden, µs a request: the noisiest
    /// function's [`FunctionChange::could_see_us`].
    pub fn could_hide_us(&self) -> f64 {
        self.own
            .iter()
            .take(self.tested)
            .map(|c| c.could_see_us)
            .filter(|v| v.is_finite())
            .fold(0.0_f64, f64::max)
    }

    /// ", their variances moderated (shrunk towards their trend in the function's level, 12
    /// degrees of freedom)", or nothing where they were not.
    pub fn moderation_said(&self) -> String {
        match self.prior {
            Some(d0) if d0 >= 1e4 => ", their variances moderated (each the trend of the \
                 functions' variances in their level, but a function noisier than it)"
                .to_string(),
            Some(d0) => format!(
                ", their variances moderated (shrunk towards the trend of the functions' \
                 variances in their level, worth {d0:.0} degrees of freedom)"
            ),
            None => String::new(),
        }
    }

    /// "; 7 % and 6 % of the samples had no symbol (…): where that CPU went is not said", or
    /// nothing when both builds' shares are under [`UNNAMED_SAID`].
    pub fn unnamed_said(&self) -> String {
        let (a, b) = self.unnamed;
        if a.max(b) > UNNAMED_SAID {
            format!(
                "; {:.0} % and {:.0} % of the samples had no symbol (a JIT without a perf map, \
                 a binary stripped): where that CPU went is not said",
                a * 100.0,
                b * 100.0
            )
        } else {
            String::new()
        }
    }

    /// The named functions.
    pub fn named(&self) -> impl Iterator<Item = &FunctionChange> {
        self.own.iter().filter(|c| c.named)
    }

    /// The sentence that says where the CPU per request changed: "+102.3 µs of the +107.0 µs a
    /// request: `main.hashPassword` +102.3 µs (interval +96.0 µs to +108.1 µs), +105.0 µs
    /// (interval …) with what it called; nothing else moved beyond noise (312 functions' own CPU tested over 8 rounds; 5 % false discovery
    /// rate, intervals adjusted for the functions tested)".
    pub fn sentence(&self) -> String {
        let named: Vec<&FunctionChange> = self.named().collect();
        let few = self.own.len() - self.tested;
        let tested = format!(
            "{} functions' own CPU tested over {} rounds{}{}{}",
            self.tested,
            self.rounds,
            if few > 0 {
                format!(", {few} with fewer than {MIN_SAMPLES} samples over them not")
            } else {
                String::new()
            },
            if self.unprofiled > 0 {
                format!(" ({} left out: a run without a profile)", self.unprofiled)
            } else {
                String::new()
            },
            self.moderation_said()
        );
        let mut s = if named.is_empty() {
            format!(
                "no function's CPU per request moved beyond noise ({tested}; the noisiest \
                 could have hidden a change of {} a request)",
                signed_us(self.could_hide_us()).trim_start_matches('+')
            )
        } else {
            let sum: f64 = named.iter().map(|c| c.difference_us).sum();
            let list: Vec<String> = named
                .iter()
                .map(|c| {
                    let with = self
                        .total
                        .iter()
                        .find(|t| t.name == c.name)
                        .map(|t| format!(", {} with what it called", t.figure()))
                        .unwrap_or_default();
                    format!("`{}` {}{with}", c.name, c.figure())
                })
                .collect();
            format!(
                "{} of the {} a request: {}; nothing else moved beyond noise ({tested}; 5 % \
                 false discovery rate, intervals adjusted for the functions tested)",
                signed_us(sum),
                signed_us(self.cpu_difference_us),
                list.join(", ")
            )
        };
        s.push_str(&self.unnamed_said());
        s
    }
}

#[cfg(test)]
mod tests;
