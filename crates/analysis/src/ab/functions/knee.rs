//! Where the CPU grew at a search's knee: each function's CPU per request in the failing
//! steps around the capacity against the passing ones, over the steps (each a run of its own),
//! tested for every function at once, and the call tree's paths estimated the same way, so
//! that the search can say *what grew as the rate rose* past the knee (a lock's spin, the
//! garbage collector, the kernel's accept path) and draw it.
//!
//! **The steps.** Every valid step of the search with a profile whose rate lies within a
//! factor of [`WINDOW`] of the capacity (C_0.5): the passing steps, most below the knee, and
//! the failing ones, most above it, the fine steps beside it among them. A step's figure for
//! a function is its CPU per request there, µs: the step's CPU per request over its judged
//! window × the function's share of the samples of that window ([`Sampled`]).
//!
//! **The estimand.** The failing steps' mean CPU per request of the function minus the
//! passing steps': what it spends more a request where the server no longer meets the SLO
//! than where it still does, at rates a few per cent apart, each step weighed by N / c² for
//! its N samples and its CPU per request c (the inverse of its figure's sampling variance when
//! the function's share does not change: a step at half the rate has half the samples). Its
//! interval and p-value are Student's t on the groups' pooled weighted spread, n − 2 degrees
//! of freedom for n steps (weighted least squares on whether a step failed). Not a line
//! against the rate: at a knee a server often flips (a lock
//! convoy, a collector that no longer keeps up) rather than drifts, passing at one step and
//! failing at the next at the same rate, and a line through such steps reads the flip as
//! noise (on the suite's locked server, a line named the lock in 1 of 3 searches). The steps
//! ran one after the other: what the host did between them is in the groups' spreads, and
//! so in the interval, as far as it did not make the steps fail; a host that slowed and so
//! made steps fail reads as every function grown.
//!
//! **Many functions at once.** Every function with [`MIN_SAMPLES`] samples of its own over the
//! steps is tested (one with fewer is a sample or two a step, too far from a normal spread for
//! Student's t; how many samples a function has is independent of its change when it has
//! none, so the choice keeps the tests' level), and those named as changed are the
//! Benjamini–Hochberg selection at [`super::FDR`], their intervals at the false-coverage-rate
//! level, exactly as for a gate ([`super`]); the call tree's paths likewise
//! ([`super::paths`]). The proof is this module's simulated searches.
//!
//! **A host that makes steps fail.** The steps ran one after the other, and where the host
//! slowed a step (another process, a neighbour on the hypervisor, the memory system) every
//! function costs more there by the host's factor, and the step is likelier to fail: read as
//! it is, every function grows from the passing steps to the failing ones. So each step's
//! figures are first divided by its size factor ([`size_factors`]): the median, over the
//! functions with [`SIZE_SAMPLES`] samples or more and a sample in every step, of the
//! function's CPU per request there over its geometric mean across the steps (the median of
//! ratios of RNA-seq's DESeq). What a function then grows by is what it grew beyond the server
//! as a whole; the server's own change (`whole`) is estimated on the figures as read.
//!
use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::{inverse, paths, percent, widen, Estimate, FunctionChange, Functions, Part, Sampled};

/// The steps compared lie within this factor of the capacity, either side.
pub const WINDOW: f64 = 2.0;

/// How much a function's share of the samples must rise from the passing steps to the failing
/// ones for the limit to cite it as what grew: a quarter (and its growth a tenth of the
/// server's). A function whose CPU per request grew
/// while its share held grew with the server as a whole.
pub const CITED_SHARE_GROWTH: f64 = 1.25;

/// Steps needed (profiled, within the window), a passing one and a failing one among them:
/// two degrees of freedom left at least for the spread.
pub const MIN_STEPS: usize = 5;

/// Own samples over the steps a function needs to be tested.
pub use super::MIN_SAMPLES;

/// Own samples over the steps a function needs to count in the steps' size factors.
pub const SIZE_SAMPLES: u64 = 200;

/// Functions the size factors need: with fewer, the steps are compared as read.
pub const SIZE_FUNCTIONS: usize = 5;

/// Functions shown when none is named: those that moved most.
pub const SHOWN: usize = 5;

/// One step of a search as the knee reads it.
#[derive(Debug, Clone, Copy)]
pub struct KneeStep<'a> {
    /// Its offered rate, req/s.
    pub rate: f64,
    /// Whether it met the SLO.
    pub passed: bool,
    /// Its profile over its judged window, with its CPU per request there; `None` without one.
    pub run: Option<&'a Sampled>,
}

/// A group of steps: how many, and their rates.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Group {
    pub steps: usize,
    /// Their lowest, mean and highest rates, req/s.
    pub low: f64,
    pub mean: f64,
    pub high: f64,
}

impl Group {
    fn of(rates: &[f64]) -> Group {
        Group {
            steps: rates.len(),
            low: rates.iter().copied().fold(f64::INFINITY, f64::min),
            mean: rates.iter().sum::<f64>() / rates.len() as f64,
            high: rates.iter().copied().fold(0.0, f64::max),
        }
    }

    /// "5 steps at 640–800 req/s", "1 step at 900 req/s".
    pub fn text(&self) -> String {
        let steps = if self.steps == 1 { "step" } else { "steps" };
        if self.low == self.high {
            format!("{} {steps} at {:.0} req/s", self.steps, self.low)
        } else {
            format!(
                "{} {steps} at {:.0}–{:.0} req/s",
                self.steps, self.low, self.high
            )
        }
    }
}

/// A named function's share of the samples, pooled over each group's steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Share {
    pub name: String,
    /// Its own samples over all the samples, 0–1: the passing steps', the failing steps'.
    pub passing: f64,
    pub failing: f64,
}

/// What grew with the rate at a search's knee.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Knee {
    /// The capacity the window is centred on, req/s.
    pub capacity: f64,
    pub passing: Group,
    pub failing: Group,
    /// Each function's change from the passing steps to the failing ones (the "baseline" the
    /// passing steps' mean, the "candidate" the failing steps'; `rounds` the steps compared),
    /// and the call tree's. Its `own` holds the `tested` functions
    /// first, then those with fewer than [`MIN_SAMPLES`] samples, not tested (p-value 1).
    pub functions: Functions,
    /// The named functions' shares of the samples in each group, in the order named (where
    /// none is named, the [`SHOWN`] tested functions that moved most).
    pub shares: Vec<Share>,
    /// The server's CPU per request from the passing steps to the failing ones, as read (the
    /// functions' changes are beyond it: each step scaled by its size factor).
    #[serde(default)]
    pub whole: Option<FunctionChange>,
    /// The steps' size factors, where they could be read.
    #[serde(default)]
    pub scaled: Option<Scaled>,
}

/// The steps' size factors: how many functions they were read on, and their range.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Scaled {
    pub functions: usize,
    pub low: f64,
    pub high: f64,
}

/// Each run's size factor: the median over the functions with [`SIZE_SAMPLES`] own samples or
/// more and a sample in every run of the function's CPU per request in the run over its
/// geometric mean across the runs, the factors scaled to a geometric mean of 1; `None` with
/// fewer than [`SIZE_FUNCTIONS`] such functions. With the functions read on.
pub fn size_factors(runs: &[&Sampled]) -> Option<(Vec<f64>, usize)> {
    let names: BTreeSet<&str> = runs
        .iter()
        .flat_map(|run| run.own.keys())
        .map(String::as_str)
        .collect();
    // Each function's log CPU per request in every run, about its mean over the runs.
    let logs: Vec<Vec<f64>> = names
        .iter()
        .filter_map(|name| {
            let counts: Vec<u64> = runs
                .iter()
                .map(|run| run.own.get(*name).copied().unwrap_or(0))
                .collect();
            if counts.iter().sum::<u64>() < SIZE_SAMPLES || counts.contains(&0) {
                return None;
            }
            let logs: Vec<f64> = runs
                .iter()
                .zip(&counts)
                .map(|(run, n)| run.per_request(*n).map(f64::ln))
                .collect::<Option<_>>()?;
            let mean = logs.iter().sum::<f64>() / logs.len() as f64;
            Some(logs.iter().map(|l| l - mean).collect())
        })
        .collect();
    if logs.len() < SIZE_FUNCTIONS {
        return None;
    }
    let medians: Vec<f64> = (0..runs.len())
        .map(|j| {
            let mut r: Vec<f64> = logs.iter().map(|l| l[j]).collect();
            r.sort_by(f64::total_cmp);
            let m = r.len() / 2;
            if r.len() % 2 == 1 {
                r[m]
            } else {
                (r[m - 1] + r[m]) / 2.0
            }
        })
        .collect();
    let centre = medians.iter().sum::<f64>() / medians.len() as f64;
    Some((
        medians.iter().map(|m| (m - centre).exp()).collect(),
        logs.len(),
    ))
}

/// The steps as every function's estimate sees them: the same for each function, so made
/// once. Each step's rate (centred, in units of the steps' spread), whether it failed, and its
/// weight N / c² for its N samples and its CPU per request c; the model's columns (1, failed
/// and, where it can be told apart, the rate), the inverse of their weighted cross-products,
/// and the variance factor of the contrast: the failing steps' fitted mean minus the passing
/// steps'.
struct Design<'a> {
    runs: Vec<&'a Sampled>,
    passed: Vec<bool>,
    /// (rate, failed, weight).
    rows: Vec<[f64; 3]>,
    /// Columns in the model: 3 with the rate, 2 without it, 0 when neither can be fitted.
    k: usize,
    inverse: Vec<f64>,
    /// g′ (X′WX)⁻¹ g for the contrast g.
    contrast: f64,
    df: f64,
}

impl<'a> Design<'a> {
    fn of(steps: &[(f64, bool, &'a Sampled)]) -> Design<'a> {
        let rows = Self::centred_rows(steps);
        let mean_rate = |failed: f64| {
            let (mut w, mut wx) = (0.0, 0.0);
            for r in rows.iter().filter(|r| r[1] == failed) {
                w += r[2];
                wx += r[2] * r[0];
            }
            wx / w
        };
        let g = [0.0, 1.0, mean_rate(1.0) - mean_rate(0.0)];
        let n = rows.len() as f64;
        let fit = |k: usize| -> Option<(Vec<f64>, f64)> {
            let mut a = vec![0.0; k * k];
            for r in &rows {
                let x = [1.0, r[1], r[0]];
                for i in 0..k {
                    for j in 0..k {
                        a[i * k + j] += r[2] * x[i] * x[j];
                    }
                }
            }
            let inv = inverse(&a, k)?;
            let contrast = (0..k)
                .flat_map(|i| (0..k).map(move |j| (i, j)))
                .map(|(i, j)| g[i] * inv[i * k + j] * g[j])
                .sum();
            Some((inv, contrast))
        };
        let (k, (inverse, contrast)) = match fit(3).filter(|_| n - 3.0 >= 1.0) {
            Some(f) => (3, f),
            None => match fit(2) {
                Some(f) => (2, f),
                None => (0, (Vec::new(), 0.0)),
            },
        };
        Design {
            runs: steps.iter().map(|(_, _, run)| *run).collect(),
            passed: steps.iter().map(|(_, p, _)| *p).collect(),
            rows,
            k,
            inverse,
            contrast,
            df: n - if k == 0 { 2.0 } else { k as f64 },
        }
    }

    /// Each step's (rate, failed, weight), its rate centred on the steps' weighted mean and in
    /// units of the farthest step from it.
    fn centred_rows(steps: &[(f64, bool, &'a Sampled)]) -> Vec<[f64; 3]> {
        let mut rows: Vec<[f64; 3]> = steps
            .iter()
            .map(|(rate, passed, run)| {
                let w = run.samples as f64 / (run.cpu_us * run.cpu_us);
                [*rate, if *passed { 0.0 } else { 1.0 }, w]
            })
            .collect();
        let sw: f64 = rows.iter().map(|r| r[2]).sum();
        let centre = rows.iter().map(|r| r[0] * r[2]).sum::<f64>() / sw;
        let spread = rows
            .iter()
            .map(|r| (r[0] - centre).abs())
            .fold(0.0, f64::max)
            .max(f64::MIN_POSITIVE);
        for r in &mut rows {
            r[0] = (r[0] - centre) / spread;
        }
        rows
    }

    /// A function's change: the failing steps' weighted mean CPU per request minus the passing
    /// steps', its standard error from weighted least squares of the steps' figures on the
    /// model's columns (the rate takes up what grew smoothly within each group, the failing
    /// what flipped), Student's t on n − 3 degrees of freedom (n − 2 where the rate and the
    /// failing cannot be told apart, each group at one rate).
    fn compared(&self, name: &str, part: Part, count: impl Fn(&Sampled) -> u64) -> FunctionChange {
        self.estimate(count).change(name, part)
    }

    /// [`Design::compared`] before it is tested.
    fn estimate(&self, count: impl Fn(&Sampled) -> u64) -> Estimate {
        let ys: Vec<f64> = self
            .runs
            .iter()
            .map(|run| run.per_request(count(run)).unwrap_or(0.0))
            .collect();
        let mean = |failed: f64| {
            let (mut w, mut wy) = (0.0, 0.0);
            for (r, y) in self.rows.iter().zip(&ys).filter(|(r, _)| r[1] == failed) {
                w += r[2];
                wy += r[2] * y;
            }
            wy / w
        };
        let (mp, mf) = (mean(0.0), mean(1.0));
        let k = self.k;
        let se = if k == 0 {
            0.0
        } else {
            let mut b = vec![0.0; k];
            for (r, y) in self.rows.iter().zip(&ys) {
                let x = [1.0, r[1], r[0]];
                for (i, bi) in b.iter_mut().enumerate() {
                    *bi += r[2] * x[i] * y;
                }
            }
            let beta: Vec<f64> = (0..k)
                .map(|i| (0..k).map(|j| self.inverse[i * k + j] * b[j]).sum())
                .collect();
            let rss: f64 = self
                .rows
                .iter()
                .zip(&ys)
                .map(|(r, y)| {
                    let x = [1.0, r[1], r[0]];
                    let fitted: f64 = (0..k).map(|i| beta[i] * x[i]).sum();
                    r[2] * (y - fitted).powi(2)
                })
                .sum();
            (rss / self.df * self.contrast).max(0.0).sqrt()
        };
        Estimate {
            baseline_us: mp,
            candidate_us: mf,
            difference_us: mf - mp,
            se,
            df: self.df,
        }
    }

    /// A share of the samples pooled over the passing (or the failing) steps.
    fn pooled(&self, passed: bool, count: &dyn Fn(&Sampled) -> u64) -> f64 {
        let (mut part, mut all) = (0u64, 0u64);
        for (run, _) in self
            .runs
            .iter()
            .zip(&self.passed)
            .filter(|(_, p)| **p == passed)
        {
            part += count(run);
            all += run.samples;
        }
        if all == 0 {
            0.0
        } else {
            part as f64 / all as f64
        }
    }
}

/// What grew with the rate at the knee of a search whose capacity is `capacity` (C_0.5), from
/// its valid `steps`: `None` with fewer than [`MIN_STEPS`] profiled steps within the window,
/// or without a passing step below a failing one there.
pub fn knee(steps: &[KneeStep], capacity: f64) -> Option<Knee> {
    if !(capacity.is_finite() && capacity > 0.0) {
        return None;
    }
    let (within, used) = profiled(steps, capacity);
    let (passing, failing) = groups(&used)?;
    let raw = Design::of(&used);
    let runs: Vec<&Sampled> = used.iter().map(|(_, _, run)| *run).collect();
    let sized = size_factors(&runs);
    let scaled_runs = scaled(&runs, sized.as_ref().map(|(f, _)| f.as_slice()));
    let scaled_steps: Vec<(f64, bool, &Sampled)> = used
        .iter()
        .zip(&scaled_runs)
        .map(|((rate, passed, _), run)| (*rate, *passed, run))
        .collect();
    let design = Design::of(&scaled_steps);
    let whole = raw.compared(paths::ROOT, Part::Total, |run| run.samples);
    let (functions, shares) = changes(&design, within - used.len(), whole.difference_us);
    Some(Knee {
        capacity,
        passing,
        failing,
        functions,
        shares,
        whole: Some(whole),
        scaled: sized.map(|(factors, functions)| Scaled {
            functions,
            low: factors.iter().copied().fold(f64::INFINITY, f64::min),
            high: factors.iter().copied().fold(0.0, f64::max),
        }),
    })
}

/// The steps within the window about the capacity: how many, and those of them profiled with
/// a CPU per request, each with its rate and whether it passed.
fn profiled<'a>(steps: &[KneeStep<'a>], capacity: f64) -> (usize, Vec<(f64, bool, &'a Sampled)>) {
    let within: Vec<&KneeStep> = steps
        .iter()
        .filter(|s| s.rate >= capacity / WINDOW && s.rate <= capacity * WINDOW)
        .collect();
    let used: Vec<(f64, bool, &Sampled)> = within
        .iter()
        .filter_map(|s| Some((s.rate, s.passed, s.run?)))
        .filter(|(_, _, run)| run.per_request(0).is_some())
        .collect();
    (within.len(), used)
}

/// The passing steps and the failing ones: `None` with fewer than [`MIN_STEPS`] steps, without
/// one of each, or where the failing ones' mean rate is not above the passing ones'.
fn groups(used: &[(f64, bool, &Sampled)]) -> Option<(Group, Group)> {
    let rates_of = |passed: bool| -> Vec<f64> {
        used.iter()
            .filter(|(_, p, _)| *p == passed)
            .map(|(r, _, _)| *r)
            .collect()
    };
    let (pass_rates, fail_rates) = (rates_of(true), rates_of(false));
    if used.len() < MIN_STEPS || pass_rates.is_empty() || fail_rates.is_empty() {
        return None;
    }
    let (passing, failing) = (Group::of(&pass_rates), Group::of(&fail_rates));
    if failing.mean <= passing.mean {
        return None;
    }
    Some((passing, failing))
}

/// Every function's change over the scaled steps, the named ones' totals and the call tree's,
/// with the shares of the samples shown; `unprofiled` the steps left out, `cpu_difference_us`
/// the server's change as read.
fn changes(
    design: &Design<'_>,
    unprofiled: usize,
    cpu_difference_us: f64,
) -> (Functions, Vec<Share>) {
    let (many, few) = by_samples(design);
    let (own, prior) = super::tested(
        &many,
        &few,
        |name| design.estimate(|run| run.own.get(name).copied().unwrap_or(0)),
        Part::Own,
        true,
    );
    let tested = many.len();
    let total = totals(design, &own);
    let tree = paths::tree(&design.runs, MIN_SAMPLES, |name, count| {
        design.compared(name, Part::Total, count)
    });
    let shares = shares(design, &own, tested);
    let unnamed = |run: &Sampled| run.unnamed;
    let functions = Functions {
        rounds: design.runs.len(),
        unprofiled,
        tested,
        prior,
        cpu_difference_us,
        unnamed: (
            design.pooled(true, &unnamed),
            design.pooled(false, &unnamed),
        ),
        own,
        total,
        tree: Some(tree),
    };
    (functions, shares)
}

/// The functions with [`MIN_SAMPLES`] own samples or more over the steps, to be tested, and
/// those with fewer, not.
fn by_samples<'d>(design: &'d Design<'_>) -> (Vec<&'d str>, Vec<&'d str>) {
    let names: BTreeSet<&str> = design
        .runs
        .iter()
        .flat_map(|run| run.own.keys())
        .map(String::as_str)
        .collect();
    let samples_of = |name: &str| -> u64 {
        design
            .runs
            .iter()
            .map(|run| run.own.get(name).copied().unwrap_or(0))
            .sum()
    };
    // A function with few samples is not tested: its figures are a sample or two a step, too
    // far from a normal spread for Student's t; which functions are is independent of any
    // trend under none.
    let (many, few): (Vec<&str>, Vec<&str>) = names
        .iter()
        .partition(|name| samples_of(name) >= MIN_SAMPLES);
    (many, few)
}

/// The named functions' totals (they and what they called), each at its function's level.
fn totals(design: &Design<'_>, own: &[FunctionChange]) -> Vec<FunctionChange> {
    own.iter()
        .filter(|c| c.named)
        .map(|c| {
            let mut t = design.compared(&c.name, Part::Total, |run| {
                run.total.get(&c.name).copied().unwrap_or(0)
            });
            widen(&mut t, c.level);
            t
        })
        .collect()
}

/// Each run with its CPU per request divided by its size factor (`None`: as it was).
fn scaled(runs: &[&Sampled], factors: Option<&[f64]>) -> Vec<Sampled> {
    match factors {
        Some(factors) => runs
            .iter()
            .zip(factors)
            .map(|(run, f)| Sampled {
                cpu_us: run.cpu_us / f,
                ..(*run).clone()
            })
            .collect(),
        None => runs.iter().map(|run| (*run).clone()).collect(),
    }
}

/// The share of the samples of the named functions (or, where none is named, of the five
/// tested that moved most) in the passing steps and in the failing ones.
fn shares(design: &Design<'_>, own: &[FunctionChange], tested: usize) -> Vec<Share> {
    let named = own.iter().filter(|c| c.named).count();
    own.iter()
        .take(if named > 0 { named } else { tested.min(SHOWN) })
        .map(|c| {
            let count = |run: &Sampled| run.own.get(&c.name).copied().unwrap_or(0);
            Share {
                name: c.name.clone(),
                passing: design.pooled(true, &count),
                failing: design.pooled(false, &count),
            }
        })
        .collect()
}

/// "×1.83" of `b` against `a`.
fn times(a: f64, b: f64) -> String {
    if a > 0.0 {
        format!("×{:.2}", b / a)
    } else {
        "from none".into()
    }
}

impl Knee {
    /// The named functions whose CPU per request grew with the rate, largest first.
    pub fn grew(&self) -> impl Iterator<Item = &FunctionChange> {
        self.functions.named().filter(|c| c.difference_us > 0.0)
    }

    fn share(&self, name: &str) -> Option<&Share> {
        self.shares.iter().find(|s| s.name == name)
    }

    /// A function's change in words: "`wait_for_lock` grew +24.0 µs a request (interval +18.2
    /// µs to +29.8 µs; 6.1 % of the samples passing, 19 % failing)".
    fn said(&self, c: &FunctionChange) -> String {
        let verb = if c.difference_us > 0.0 {
            "grew"
        } else {
            "fell"
        };
        let shares = self
            .share(&c.name)
            .map(|s| {
                format!(
                    "; {} of the samples passing, {} failing",
                    percent(s.passing),
                    percent(s.failing)
                )
            })
            .unwrap_or_default();
        format!(
            "`{}` {verb} {} a request (interval {} to {}{shares})",
            c.name,
            super::signed_us(c.difference_us),
            super::signed_us(c.low_us),
            super::signed_us(c.high_us)
        )
    }

    /// The named function that grew most whose share of the samples also rose by
    /// [`CITED_SHARE_GROWTH`] or more and whose growth is a tenth or more of the server's: one
    /// that grew more than the server as a whole, and by enough to account for it.
    fn grew_more(&self) -> Option<(&FunctionChange, &Share)> {
        let whole = self.whole().map_or(0.0, |(a, b)| b - a);
        self.grew().find_map(|c| {
            let s = self.share(&c.name)?;
            (s.failing > 0.0
                && s.failing >= s.passing * CITED_SHARE_GROWTH
                && c.difference_us >= 0.1 * whole)
                .then_some((c, s))
        })
    }

    /// Functions grew, none more than the server as a whole: its requests cost more where it
    /// fails, every function in proportion.
    pub fn in_proportion(&self) -> bool {
        self.whole_grew() && self.grew_more().is_none()
    }

    /// The server's CPU per request, the passing steps' and the failing steps', µs, as read.
    fn whole(&self) -> Option<(f64, f64)> {
        let c = self.server()?;
        Some((c.baseline_us, c.candidate_us))
    }

    /// The server's change as read (older knees: the call tree's root).
    fn server(&self) -> Option<&FunctionChange> {
        match &self.whole {
            Some(c) => Some(c),
            None => Some(&self.functions.tree.as_ref()?.paths.first()?.change),
        }
    }

    /// The server's CPU per request grew beyond noise from the passing steps to the failing
    /// ones (its 95 % interval above 0).
    fn whole_grew(&self) -> bool {
        self.server().is_some_and(|c| c.low_us > 0.0)
    }

    /// For the limit's sentence: "at the knee `wait_for_lock` grew from 6.1 % to 19 % of its
    /// samples (+24.0 µs a request)"; where functions grew but none more than the whole, "at
    /// the knee the server's CPU per request grew +807.5 µs (×1.83), its functions in
    /// proportion"; `None` when nothing grew beyond noise.
    pub fn cited(&self) -> Option<String> {
        if let Some((c, s)) = self.grew_more() {
            return Some(format!(
                "at the knee `{}` grew from {} to {} of its samples ({} a request)",
                c.name,
                percent(s.passing),
                percent(s.failing),
                super::signed_us(c.difference_us)
            ));
        }
        if !self.whole_grew() {
            return None;
        }
        let (a, b) = self.whole()?;
        Some(format!(
            "at the knee the server's CPU per request grew {} ({}), its functions in \
             proportion",
            super::signed_us(b - a),
            times(a, b)
        ))
    }

    /// What grew with the rate, in a sentence: "From the passing steps (5 steps at 640–800
    /// req/s) to the failing ones (4 steps at 830–1000 req/s) the server's CPU per request
    /// grew +30.1 µs: `wait_for_lock` grew from …; nothing else moved beyond noise (312
    /// functions' own CPU tested over 9 steps, each against the rate; 5 % false discovery
    /// rate, intervals adjusted for the functions tested)".
    pub fn sentence(&self) -> String {
        let f = &self.functions;
        let tested = self.tested_said();
        let head = format!(
            "From the passing steps ({}) to the failing ones ({}) the server's CPU per request \
             moved {}",
            self.passing.text(),
            self.failing.text(),
            super::signed_us(f.cpu_difference_us)
        );
        let named: Vec<&FunctionChange> = f.named().collect();
        let mut s = if named.is_empty() {
            format!(
                "{head}; no function's CPU per request moved with the rate beyond noise \
                 ({tested}; the noisiest could have hidden a change of {} a request)",
                super::signed_us(f.could_hide_us()).trim_start_matches('+')
            )
        } else {
            let list: Vec<String> = named.iter().map(|c| self.said(c)).collect();
            format!(
                "{head}: {}; nothing else moved beyond noise ({tested}; 5 % false discovery \
                 rate, intervals adjusted for the functions tested)",
                list.join(", ")
            )
        };
        if self.in_proportion() {
            s.push_str(&format!(
                "; no function's share of the samples rose by a quarter with a tenth of the \
                 growth: the requests cost more \
                 as a whole where the server fails ({} a request), every function in \
                 proportion (requests queued, retried or timed out, or the host), not one \
                 function",
                self.whole()
                    .map_or_else(|| "—".into(), |(a, b)| times(a, b))
            ));
        }
        s.push_str(&f.unnamed_said());
        s
    }

    /// What was tested, for the sentence: "312 functions' own CPU tested over 9 steps, the
    /// failing against the passing", and how the steps were scaled.
    fn tested_said(&self) -> String {
        let f = &self.functions;
        let few = f.own.len() - f.tested;
        let tested = format!(
            "{} functions' own CPU tested over {} steps, the failing against the passing{}{}",
            f.tested,
            f.rounds,
            if few > 0 {
                format!(", {few} with fewer than {MIN_SAMPLES} samples over them not")
            } else {
                String::new()
            },
            if self.functions.unprofiled > 0 {
                format!(
                    " ({} left out: a step without a profile)",
                    self.functions.unprofiled
                )
            } else {
                String::new()
            },
        ) + &f.moderation_said();
        match &self.scaled {
            Some(s) => format!(
                "{tested}, each step's figures over its size factor ({:.2}–{:.2}, the median \
                 ratio over {} functions) so that a host that slowed steps cancels",
                s.low, s.high, s.functions
            ),
            None => format!(
                "{tested}, the steps as read (fewer than {SIZE_FUNCTIONS} functions with \
                 {SIZE_SAMPLES} samples in every step to scale them by: a host that slowed \
                 steps reads as every function grown)"
            ),
        }
    }
}

#[cfg(test)]
mod tests;
