//! Change points in a series by E-divisive means (Matteson & James, "A nonparametric approach
//! for multiple change point analysis of multivariate data", JASA 2014), the method Apache Otava
//! (Hunter) is built on, with its permutation test of significance.
//!
//! For a segment split at τ into X (before) and Y (after), of m and n points, the divergence is
//! the energy statistic with α = 1 (Y runs from τ to a κ searched too):
//!
//! ```text
//! Ê(X, Y) = 2/(mn) Σ|x − y| − 1/C(m,2) Σ_{i<k} |x_i − x_k| − 1/C(n,2) Σ_{j<l} |y_j − y_l|
//! Q̂(τ)    = mn/(m+n) · Ê(X, Y)
//! ```
//!
//! Ê is zero in expectation when X and Y come from one distribution and grows with any
//! difference between them (their means first of all), so no distribution is assumed. The
//! series is cut by binary segmentation: the split of highest Q̂ over every current segment is
//! tested, and kept if significant; then again, until a test fails.
//!
//! **The test.** The statistic is Q̂ ÷ the pooled SD within the two sides it compared (as a
//! two-sample t divides by it), the highest over every segment. Under
//! no further change it is held against draws of the null, each redrawing every segment and
//! taking the highest statistic as the search did; the p-value is (1 + the draws reaching the
//! observed) ÷ (1 + draws). The null is normal sittings by default ([`Null::Normal`]: the
//! statistic divided by the SD needs no scale), or each segment's own sittings shuffled
//! ([`Null::Permutation`], Matteson and James's, which assumes no distribution but cannot give a
//! short history a small p-value). A split is kept when p ≤ the level. The draws come from a
//! seed, so a history read twice says the same. Hunter (Otava) holds its splits against a
//! Student's t-test of the two sides instead, which is not calibrated for the split having been
//! chosen as the best: these draws choose it the same way.
//!
//! The sums are read from prefix sums of the distances, so a segment of n points costs O(n²)
//! per permutation.

use crate::capacity::random::Rng;

/// What a split's statistic is held against.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Null {
    /// Sittings drawn from a normal distribution of each segment's length (the logarithm of a
    /// sitting's figure, drift and error together, is close to normal): the statistic is
    /// divided by an SD, so the null needs no scale. Its p-values go as low as the
    /// draws allow, so a change is found in a short history too.
    #[default]
    Normal,
    /// Each segment's own sittings shuffled within it: no distribution assumed, but with n
    /// sittings no p-value falls below the chance that a shuffle puts a bump's sittings together
    /// (4 of 12: 1.8 %), too high for a level shared among many series.
    Permutation,
}

/// How a series is cut.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Config {
    /// A split is kept when its p-value is at most this.
    pub level: f64,
    /// Draws of the null per test: the smallest p-value is 1 ÷ (1 + this).
    pub permutations: usize,
    pub null: Null,
    /// The fewest points a segment may hold (at least 2, for the within-segment sums).
    pub min_segment: usize,
    pub seed: u64,
    /// The lag-1 correlation of consecutive sittings the normal null carries (0: independent):
    /// a host's sittings one after another are alike, and a null without it cuts their runs.
    pub rho: f64,
}

/// A change point: the series changed between point `at − 1` and point `at`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Split {
    pub at: usize,
    /// Q̂ at the split, ÷ the pooled SD within its two sides.
    pub statistic: f64,
    /// Its p-value against the null.
    pub p: f64,
}

/// The change points of `x` in order of position.
pub fn changes(x: &[f64], config: &Config) -> Vec<Split> {
    let min = config.min_segment.max(2);
    let mut rng = Rng::new(config.seed);
    let mut cuts: Vec<Split> = Vec::new();
    // The bounds of the current segments: [0, cut₁, …, n].
    let mut bounds = vec![0, x.len()];
    while let Some((at, statistic)) = best(x, &bounds, min) {
        let p = null_p(x, &bounds, min, statistic, config, &mut rng);
        if p > config.level {
            break;
        }
        cuts.push(Split { at, statistic, p });
        bounds.push(at);
        bounds.sort_unstable();
    }
    cuts.sort_by_key(|s| s.at);
    cuts
}

/// The best split over every segment between consecutive `bounds`: (where, Q̂ ÷ the SD
/// within its sides, so that segments of different spread compare).
fn best(x: &[f64], bounds: &[usize], min: usize) -> Option<(usize, f64)> {
    bounds
        .windows(2)
        .filter_map(|w| {
            let segment = &x[w[0]..w[1]];
            let (at, end, q) = best_split(segment, min)?;
            Some((
                w[0] + at,
                studentized(q, &segment[..at], &segment[at..end])?,
            ))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

/// `q` ÷ the pooled SD within the two sides it compared (as a two-sample t divides by it), so
/// that the statistic needs no scale; `None` where neither side varies.
fn studentized(q: f64, x: &[f64], y: &[f64]) -> Option<f64> {
    let squares = |side: &[f64]| {
        let mean = side.iter().sum::<f64>() / side.len() as f64;
        side.iter().map(|v| (v - mean).powi(2)).sum::<f64>()
    };
    let df = (x.len() + y.len()).saturating_sub(2) as f64;
    let sd = ((squares(x) + squares(y)) / df).sqrt();
    (sd > 0.0).then(|| q / sd)
}

/// The split of one segment with the highest Q̂, at least `min` points either side: (τ, κ, Q̂),
/// X running from the segment's start to τ, Y from τ to κ ≤ its end (Matteson and James search κ
/// too, so that a level that moves and comes back, a bump, is seen at its start).
///
/// With `P[k][t]` = Σ_{i<t} |x_k − x_i|, the sums move in O(1) as κ grows: Y's gains
/// `P[κ][κ] − P[κ][τ]`, the between sum `P[κ][τ]`; X's grows by `P[τ][τ]` as τ does.
pub fn best_split(x: &[f64], min: usize) -> Option<(usize, usize, f64)> {
    let n = x.len();
    let min = min.max(2);
    if n < 2 * min {
        return None;
    }
    let prefix: Vec<Vec<f64>> = x
        .iter()
        .map(|xk| {
            let mut row = Vec::with_capacity(n + 1);
            let mut sum = 0.0;
            row.push(0.0);
            for xi in x {
                sum += (xk - xi).abs();
                row.push(sum);
            }
            row
        })
        .collect();
    let mut top: Option<(usize, usize, f64)> = None;
    // Within X: pairs i < k < τ.
    let mut within_x = 0.0;
    for tau in 1..=n - min {
        within_x += prefix[tau - 1][tau - 1];
        if tau < min {
            continue;
        }
        let m = tau as f64;
        let (mut within_y, mut between) = (0.0, 0.0);
        for kappa in tau + 1..=n {
            let j = kappa - 1;
            within_y += prefix[j][j] - prefix[j][tau];
            between += prefix[j][tau];
            let k = kappa - tau;
            if k < min {
                continue;
            }
            let kf = k as f64;
            let e = 2.0 * between / (m * kf)
                - within_x / (m * (m - 1.0) / 2.0)
                - within_y / (kf * (kf - 1.0) / 2.0);
            let q = m * kf / (m + kf) * e;
            if top.is_none_or(|(_, _, t)| q > t) {
                top = Some((tau, kappa, q));
            }
        }
    }
    top
}

/// The p-value of the highest statistic `observed` over the segments between `bounds`: the
/// share of draws of the null (normal sittings, or each segment's own shuffled) whose highest
/// reaches it, counting the observed one.
fn null_p(
    x: &[f64],
    bounds: &[usize],
    min: usize,
    observed: f64,
    config: &Config,
    rng: &mut Rng,
) -> f64 {
    let mut drawn = x.to_vec();
    let mut reached = 0usize;
    for _ in 0..config.permutations {
        for w in bounds.windows(2) {
            let segment = &mut drawn[w[0]..w[1]];
            match config.null {
                Null::Normal => ar1(segment, config.rho, rng),
                Null::Permutation => shuffle(segment, rng),
            }
        }
        let top = best(&drawn, bounds, min)
            .map(|(_, q)| q)
            .unwrap_or(f64::NEG_INFINITY);
        // A tie counts as reaching it (ties are near-certain only when points repeat).
        if top >= observed - 1e-12 * observed.abs() {
            reached += 1;
        }
    }
    (1 + reached) as f64 / (1 + config.permutations) as f64
}

/// Fills `xs` with a stationary AR(1) series of unit variance and lag-1 correlation `rho`.
pub(super) fn ar1(xs: &mut [f64], rho: f64, rng: &mut Rng) {
    let innovation = (1.0 - rho * rho).max(0.0).sqrt();
    let mut last = rng.normal();
    for (i, v) in xs.iter_mut().enumerate() {
        if i > 0 {
            last = rho * last + innovation * rng.normal();
        }
        *v = last;
    }
}

/// Fisher–Yates.
fn shuffle(xs: &mut [f64], rng: &mut Rng) {
    for i in (1..xs.len()).rev() {
        let j = ((rng.uniform() * (i + 1) as f64) as usize).min(i);
        xs.swap(i, j);
    }
}
