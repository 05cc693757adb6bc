//! Where the CPU grew at a search's knee: each function's CPU per request against the offered
//! rate over the steps around the capacity, a trend tested for every function at once, and
//! the call tree's paths estimated the same way, so that the search can say *what grew as the
//! rate rose* (a lock's spin, the garbage collector, the kernel's accept path) and draw it.
//!
//! **The steps.** Every valid step of the search with a profile whose rate lies within a
//! factor of [`WINDOW`] of the capacity (C_0.5): the passing steps below the knee and the
//! failing ones above it, the fine steps beside it among them. A step's figure for a function
//! is its CPU per request there, µs: the step's CPU per request over its judged window × the
//! function's share of the samples of that window ([`Sampled`]).
//!
//! **The estimand.** The change in a function's CPU per request from the passing steps' mean
//! rate to the failing steps' mean rate, on the straight line fitted to its steps: the slope ×
//! the distance between the two rates. The line is weighted least squares, each step weighed
//! by N / c² for its N samples and its CPU per request c (the inverse of its figure's sampling
//! variance when the function's share does not change: a step at a quarter of the rate has a
//! quarter of the samples). Its interval is Student's t on the slope's standard error (the
//! residuals' scale), n − 2 degrees of freedom for n steps; its p-value tests the slope against
//! none. The steps are runs of their own, one after the other: what the host did between them
//! is in the residuals (and so in the interval) only as far as it is not in step with the
//! rate. A search's fine steps go up and down beside the knee, which keeps the two apart; a
//! host that drifts in one direction over a search that only climbs would be read as a trend.
//!
//! **Many functions at once.** Every function with [`MIN_SAMPLES`] samples of its own over the
//! steps is tested (one with fewer is a sample or two a step, too far from a normal spread for
//! Student's t; how many samples a function has is independent of its trend when it has none,
//! so the choice keeps the tests' level), and those
//! named as changed are the Benjamini–Hochberg selection at [`super::FDR`], their intervals at
//! the false-coverage-rate level, exactly as for a gate ([`super`]); the call tree's paths
//! likewise ([`super::paths`]). The proof is this module's simulated searches.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::{paths, select, widen, Estimate, FunctionChange, Functions, Part, Sampled};

/// The steps compared lie within this factor of the capacity, either side.
pub const WINDOW: f64 = 2.0;

/// Steps needed (profiled, within the window): a line through them has two degrees of
/// freedom left at least.
pub const MIN_STEPS: usize = 4;

/// Own samples over the steps a function needs to be tested.
pub const MIN_SAMPLES: u64 = 50;

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
    /// Steps within the window left out: no profile, or no CPU per request.
    pub unprofiled: usize,
    /// Each function's change from the passing steps' mean rate to the failing steps' (the
    /// "baseline" the passing steps, the "candidate" the failing ones, each its fitted value;
    /// `rounds` the steps fitted), and the call tree's. Its `own` holds the `tested` functions
    /// first, then those with fewer than [`MIN_SAMPLES`] samples, not tested (p-value 1).
    pub functions: Functions,
    /// The named functions' shares of the samples in each group, in the order named.
    pub shares: Vec<Share>,
}

/// A function's fitted change over `steps` (rate, profile) from `rates.0` to `rates.1`.
fn fitted(
    name: &str,
    part: Part,
    steps: &[(f64, &Sampled)],
    rates: (f64, f64),
    count: impl Fn(&Sampled) -> u64,
) -> FunctionChange {
    let xs: Vec<f64> = steps.iter().map(|(r, _)| *r).collect();
    let ys: Vec<f64> = steps
        .iter()
        .map(|(_, run)| run.per_request(count(run)).unwrap_or(0.0))
        .collect();
    // A step's figure is its share of N samples × its CPU per request c: under a function's
    // constant share π, its variance is c²·π(1 − π)/N, so each step weighs N / c².
    let ws: Vec<f64> = steps
        .iter()
        .map(|(_, run)| run.samples as f64 / (run.cpu_us * run.cpu_us))
        .collect();
    let sw: f64 = ws.iter().sum();
    let mean = |vs: &[f64]| vs.iter().zip(&ws).map(|(v, w)| v * w).sum::<f64>() / sw;
    let (mx, my) = (mean(&xs), mean(&ys));
    let sxx: f64 = xs.iter().zip(&ws).map(|(x, w)| w * (x - mx).powi(2)).sum();
    let sxy: f64 = (0..xs.len())
        .map(|i| ws[i] * (xs[i] - mx) * (ys[i] - my))
        .sum();
    let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    let at = |x: f64| my + slope * (x - mx);
    let rss: f64 = (0..xs.len())
        .map(|i| ws[i] * (ys[i] - at(xs[i])).powi(2))
        .sum();
    let df = steps.len() - 2;
    let se_slope = if sxx > 0.0 {
        (rss / df as f64 / sxx).sqrt()
    } else {
        0.0
    };
    let distance = rates.1 - rates.0;
    Estimate {
        baseline_us: at(rates.0),
        candidate_us: at(rates.1),
        difference_us: slope * distance,
        se: se_slope * distance,
        df,
    }
    .change(name, part)
}

/// What grew with the rate at the knee of a search whose capacity is `capacity` (C_0.5), from
/// its valid `steps`: `None` with fewer than [`MIN_STEPS`] profiled steps within the window,
/// or without a passing step below a failing one there.
pub fn knee(steps: &[KneeStep], capacity: f64) -> Option<Knee> {
    if !(capacity.is_finite() && capacity > 0.0) {
        return None;
    }
    let within: Vec<&KneeStep> = steps
        .iter()
        .filter(|s| s.rate >= capacity / WINDOW && s.rate <= capacity * WINDOW)
        .collect();
    let used: Vec<(f64, bool, &Sampled)> = within
        .iter()
        .filter_map(|s| Some((s.rate, s.passed, s.run?)))
        .filter(|(_, _, run)| run.per_request(0).is_some())
        .collect();
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
    let rates = (passing.mean, failing.mean);
    let points: Vec<(f64, &Sampled)> = used.iter().map(|(r, _, run)| (*r, *run)).collect();
    let df = points.len() - 2;
    let names: BTreeSet<&str> = points
        .iter()
        .flat_map(|(_, run)| run.own.keys())
        .map(String::as_str)
        .collect();
    let samples_of = |name: &str| -> u64 {
        points
            .iter()
            .map(|(_, run)| run.own.get(name).copied().unwrap_or(0))
            .sum()
    };
    // A function with few samples is not tested: its figures are a sample or two a step, too
    // far from a normal spread for Student's t; which functions are is independent of any
    // trend under none.
    let (many, few): (Vec<&str>, Vec<&str>) = names
        .iter()
        .partition(|name| samples_of(name) >= MIN_SAMPLES);
    let own_fitted = |name: &str| {
        fitted(name, Part::Own, &points, rates, |run| {
            run.own.get(name).copied().unwrap_or(0)
        })
    };
    let mut own: Vec<FunctionChange> = many.iter().map(|name| own_fitted(name)).collect();
    select(&mut own, df);
    let by_size = |a: &FunctionChange, b: &FunctionChange| {
        b.named
            .cmp(&a.named)
            .then(b.difference_us.abs().total_cmp(&a.difference_us.abs()))
    };
    own.sort_by(by_size);
    let tested = own.len();
    // Those not tested after, with no p-value of their own.
    let mut untested: Vec<FunctionChange> = few
        .iter()
        .map(|name| FunctionChange {
            p: 1.0,
            ..own_fitted(name)
        })
        .collect();
    untested.sort_by(by_size);
    own.extend(untested);
    let total = own
        .iter()
        .filter(|c| c.named)
        .map(|c| {
            let mut t = fitted(&c.name, Part::Total, &points, rates, |run| {
                run.total.get(&c.name).copied().unwrap_or(0)
            });
            widen(&mut t, c.level, df);
            t
        })
        .collect();
    let runs: Vec<&Sampled> = points.iter().map(|(_, run)| *run).collect();
    let tree = paths::tree(&runs, df, |name, count| {
        fitted(name, Part::Total, &points, rates, count)
    });
    let root = fitted(paths::ROOT, Part::Total, &points, rates, |run| run.samples);
    let pooled = |passed: bool, count: &dyn Fn(&Sampled) -> u64| {
        let (mut part, mut all) = (0u64, 0u64);
        for (_, _, run) in used.iter().filter(|(_, p, _)| *p == passed) {
            part += count(run);
            all += run.samples;
        }
        if all == 0 {
            0.0
        } else {
            part as f64 / all as f64
        }
    };
    let shares = own
        .iter()
        .filter(|c| c.named)
        .map(|c| {
            let count = |run: &Sampled| run.own.get(&c.name).copied().unwrap_or(0);
            Share {
                name: c.name.clone(),
                passing: pooled(true, &count),
                failing: pooled(false, &count),
            }
        })
        .collect();
    let unnamed = |run: &Sampled| run.unnamed;
    Some(Knee {
        capacity,
        passing,
        failing,
        unprofiled: within.len() - used.len(),
        functions: Functions {
            rounds: points.len(),
            unprofiled: within.len() - used.len(),
            tested,
            cpu_difference_us: root.difference_us,
            unnamed: (pooled(true, &unnamed), pooled(false, &unnamed)),
            own,
            total,
            tree: Some(tree),
        },
        shares,
    })
}

/// "6.1 %", "0.42 %".
fn percent(share: f64) -> String {
    let p = share * 100.0;
    if p >= 10.0 {
        format!("{p:.0} %")
    } else if p >= 1.0 {
        format!("{p:.1} %")
    } else {
        format!("{p:.2} %")
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

    /// A function's change in words: "`wait_for_lock` grew from 6.1 % to 19 % of the samples,
    /// +24.0 µs a request (interval +18.2 µs to +29.8 µs)".
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
                    " from {} to {} of the samples,",
                    percent(s.passing),
                    percent(s.failing)
                )
            })
            .unwrap_or_default();
        format!("`{}` {verb}{shares} {} a request", c.name, c.figure())
    }

    /// For the limit's sentence: "at the knee `wait_for_lock` grew from 6.1 % to 19 % of its
    /// samples (+24.0 µs a request)"; `None` when nothing grew beyond noise.
    pub fn cited(&self) -> Option<String> {
        let c = self.grew().next()?;
        let s = self.share(&c.name)?;
        Some(format!(
            "at the knee `{}` grew from {} to {} of its samples ({} a request)",
            c.name,
            percent(s.passing),
            percent(s.failing),
            super::signed_us(c.difference_us)
        ))
    }

    /// What grew with the rate, in a sentence: "From the passing steps (5 steps at 640–800
    /// req/s) to the failing ones (4 steps at 830–1000 req/s) the server's CPU per request
    /// grew +30.1 µs: `wait_for_lock` grew from …; nothing else moved beyond noise (312
    /// functions' own CPU tested over 9 steps, each against the rate; 5 % false discovery
    /// rate, intervals adjusted for the functions tested)".
    pub fn sentence(&self) -> String {
        let f = &self.functions;
        let few = f.own.len() - f.tested;
        let tested = format!(
            "{} functions' own CPU tested over {} steps, each a line against the rate{}{}",
            f.tested,
            f.rounds,
            if few > 0 {
                format!(", {few} with fewer than {MIN_SAMPLES} samples over them not")
            } else {
                String::new()
            },
            if self.unprofiled > 0 {
                format!(" ({} left out: a step without a profile)", self.unprofiled)
            } else {
                String::new()
            }
        );
        let head = format!(
            "From the passing steps ({}) to the failing ones ({}) the server's CPU per request \
             moved {} on the line fitted to them",
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
        s.push_str(&f.unnamed_said());
        s
    }
}

#[cfg(test)]
mod tests;
