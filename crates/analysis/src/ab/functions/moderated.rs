//! The functions' variances shrunk towards each other: a moderated t (Smyth 2004, limma), so
//! that a function's test borrows the spread of the hundreds tested beside it instead of
//! trusting its own seven degrees of freedom.
//!
//! **The prior.** Every function's squared standard error s² (all on the same design: the same
//! rounds, or the same steps, so with the same degrees of freedom d) is read as s₀²(m) × an F
//! draw on d and d₀ degrees of freedom, where s₀²(m) is a trend in the function's level m (its
//! CPU per request): the variance of a function's figure grows with its level, linearly for
//! the profiler's sampling and as its square for the host's drift, so a single prior would
//! shrink a small function towards a large one's spread. Smyth's moments: ln s² − ψ(d/2) +
//! ln(d/2) has mean ln s₀² − ψ(d₀/2) + ln(d₀/2) and variance ψ′(d/2) + ψ′(d₀/2); the mean is
//! fitted as a quadratic in ln m by least squares, and d₀ from the residuals' variance less
//! ψ′(d/2) (infinite where that is not positive: the functions' variances no more spread than
//! their own sampling, so the trend alone).
//!
//! **The moderated t.** s̃² = (d₀ s₀²(m) + d s²) / (d₀ + d), on d₀ + d degrees of freedom. Under
//! the model it is exactly Student's t; where the model is off the proof is the simulated
//! sittings of [`super::tests`] and [`super::knee`]'s.
//!
//! **A function noisier than the others** (a collector, a cache that comes and goes) would be
//! shrunk towards a spread it does not have, and named by its own noise. So a function whose
//! s² is above its prior beyond chance (s² / s₀²(m) past the 99th percentile of F on d and d₀
//! degrees of freedom) keeps its own variance and degrees of freedom: one in a hundred under
//! the model, every such function where the model is off.
//!
//! Fewer than [`MIN_FUNCTIONS`] functions with a spread, and the estimates are left as they are.

use statrs::distribution::{ChiSquared, ContinuousCDF, FisherSnedecor};
use statrs::function::gamma::digamma;

use super::{inverse, Estimate};

/// Functions needed to fit the prior (its trend has three coefficients).
pub const MIN_FUNCTIONS: usize = 10;

/// The chance beyond which a function's own spread is told apart from its prior's: it then
/// keeps its own.
const OWN_SPREAD: f64 = 0.01;

/// The moderated t's degrees of freedom at most: where d₀ is infinite, Student's t is the
/// normal to this precision.
const MAX_DF: f64 = 10_000.0;

/// The prior the functions' variances were shrunk towards.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prior {
    /// Its degrees of freedom, d₀ (infinite: the trend alone).
    pub df: f64,
    /// Functions it was fitted on.
    pub functions: usize,
}

/// ψ′(x), the trigamma function, for x > 0: the recurrence ψ′(x) = ψ′(x + 1) + 1/x² up to 10,
/// then its asymptotic series.
fn trigamma(x: f64) -> f64 {
    let (mut x, mut sum) = (x, 0.0);
    while x < 10.0 {
        sum += 1.0 / (x * x);
        x += 1.0;
    }
    let x2 = 1.0 / (x * x);
    sum + 1.0 / x
        + x2 / 2.0
        + x2 / x * (1.0 / 6.0 - x2 * (1.0 / 30.0 - x2 * (1.0 / 42.0 - x2 / 30.0)))
}

/// The x with ψ′(x) = y, for y > 0 (ψ′ falls from infinity to 0): bisection on ln x.
fn trigamma_inverse(y: f64) -> f64 {
    let (mut lo, mut hi) = (-20.0f64, 20.0f64);
    for _ in 0..200 {
        let mid = (lo + hi) / 2.0;
        if trigamma(mid.exp()) > y {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    ((lo + hi) / 2.0).exp()
}

/// Least squares of `ys` on (1, x, x²): its three coefficients, `None` where singular.
fn quadratic(xs: &[f64], ys: &[f64]) -> Option<[f64; 3]> {
    let mut a = [0.0; 9];
    let mut b = [0.0; 3];
    for (x, y) in xs.iter().zip(ys) {
        let row = [1.0, *x, x * x];
        for i in 0..3 {
            b[i] += row[i] * y;
            for j in 0..3 {
                a[i * 3 + j] += row[i] * row[j];
            }
        }
    }
    let inv = inverse(&a, 3)?;
    let beta = [0, 1, 2].map(|i| (0..3).map(|j| inv[i * 3 + j] * b[j]).sum::<f64>());
    beta.iter().all(|v| v.is_finite()).then_some(beta)
}

/// A function's level: its CPU per request, the mean of the two sides.
fn level(e: &Estimate) -> f64 {
    (e.baseline_us.abs() + e.candidate_us.abs()) / 2.0
}

/// Shrinks every estimate's standard error towards the trend of the others' and gives it the
/// moderated t's degrees of freedom; the prior, `None` where there were too few functions to
/// fit it (the estimates then as they were). Every estimate must have the same degrees of
/// freedom.
pub(super) fn moderate(estimates: &mut [Estimate]) -> Option<Prior> {
    let d = estimates.first()?.df;
    if !(d.is_finite() && d > 0.0) || estimates.iter().any(|e| e.df != d) {
        return None;
    }
    let fitted: Vec<(f64, f64)> = estimates
        .iter()
        .filter(|e| e.se > 0.0 && level(e) > 0.0)
        .map(|e| {
            (
                level(e).ln(),
                (e.se * e.se).ln() - digamma(d / 2.0) + (d / 2.0).ln(),
            )
        })
        .collect();
    let n = fitted.len();
    if n < MIN_FUNCTIONS {
        return None;
    }
    let (xs, ys): (Vec<f64>, Vec<f64>) = fitted.iter().copied().unzip();
    let beta = quadratic(&xs, &ys)?;
    let trend = |x: f64| beta[0] + beta[1] * x + beta[2] * x * x;
    let residual = xs
        .iter()
        .zip(&ys)
        .map(|(x, y)| (y - trend(*x)).powi(2))
        .sum::<f64>()
        / (n - 3) as f64;
    let excess = residual - trigamma(d / 2.0);
    let d0 = if excess > 0.0 {
        2.0 * trigamma_inverse(excess)
    } else {
        f64::INFINITY
    };
    // E ln s² = ln s₀² − ψ(d₀/2) + ln(d₀/2) + (ψ(d/2) − ln(d/2)); the last is in ys already.
    let offset = if d0.is_finite() {
        digamma(d0 / 2.0) - (d0 / 2.0).ln()
    } else {
        0.0
    };
    // A level of none (a function absent from both sides' runs) takes the smallest fitted.
    let floor = xs.iter().copied().fold(f64::INFINITY, f64::min);
    for e in estimates.iter_mut() {
        let x = if level(e) > 0.0 { level(e).ln() } else { floor };
        let prior = (trend(x) + offset).exp();
        let s2 = e.se * e.se;
        if above(s2 / prior, d, d0) {
            continue;
        }
        let (var, df) = if d0.is_finite() {
            ((d0 * prior + d * s2) / (d0 + d), d0 + d)
        } else {
            (prior, f64::INFINITY)
        };
        e.se = var.sqrt();
        e.df = df.min(MAX_DF);
    }
    Some(Prior {
        df: d0,
        functions: n,
    })
}

/// Whether a ratio `f` of a function's s² to its prior's is past the upper [`OWN_SPREAD`]
/// tail of F on `d` and `d0` degrees of freedom (χ²/d where `d0` is infinite).
fn above(f: f64, d: f64, d0: f64) -> bool {
    let tail = if d0.is_finite() {
        FisherSnedecor::new(d, d0).map_or(0.0, |dist| 1.0 - dist.cdf(f))
    } else {
        ChiSquared::new(d).map_or(0.0, |dist| 1.0 - dist.cdf(f * d))
    };
    tail < OWN_SPREAD
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trigamma_matches_known_values_and_inverts() {
        // ψ′(1) = π²/6, ψ′(1/2) = π²/2.
        let pi2 = std::f64::consts::PI.powi(2);
        assert!((trigamma(1.0) - pi2 / 6.0).abs() < 1e-10);
        assert!((trigamma(0.5) - pi2 / 2.0).abs() < 1e-10);
        assert!((trigamma(10.0) - 0.105_166_335_681_685_1).abs() < 1e-12);
        for x in [0.3, 1.0, 3.5, 20.0, 400.0] {
            assert!((trigamma_inverse(trigamma(x)) / x - 1.0).abs() < 1e-9);
        }
    }
}
