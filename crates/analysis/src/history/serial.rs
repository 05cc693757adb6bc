//! How alike consecutive sittings are. A host's sittings one after another share its state
//! (the neighbours of the week, a kernel, a warm cache), so a series wanders in runs even where
//! nothing changed; a null of independent sittings calls such a run a change (14.5 % of
//! change-free histories at a nominal 5 % when the lag-1 correlation is 0.3). The correlation is
//! read within the segments a first cut leaves, pooled over every series of the history, and
//! corrected for the bias of a correlation read about each segment's own mean.

use serde::{Deserialize, Serialize};

use super::Series;

/// The lag-1 correlation read within the segments of a history's series.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Serial {
    /// Corrected for bias and held within 0–0.9: what the null carries.
    pub rho: f64,
    /// The sittings it was read from, over every segment of every series.
    pub sittings: usize,
}

/// The fewest sittings a segment must hold to add to the reading.
const LEAST: usize = 5;
/// The most the null carries: beyond it a series hardly holds information about changes.
const MOST: f64 = 0.9;

/// The pooled lag-1 correlation of the logarithms within `series`' segments (each about its own
/// mean), corrected for the bias of the mean removed (≈ −(1 + 3ρ)/n, Marriott and Pope 1954);
/// `None` when the segments of at least [`LEAST`] sittings hold fewer than 12 in all.
pub fn within(series: &[Series]) -> Option<Serial> {
    let (mut lagged, mut squares, mut sittings, mut segments) = (0.0, 0.0, 0usize, 0usize);
    for s in series {
        let mut bounds = vec![0];
        bounds.extend(s.changes.iter().map(|c| c.at));
        bounds.push(s.points.len());
        for w in bounds.windows(2) {
            let Some(part) = s.points.get(w[0]..w[1]) else {
                continue;
            };
            if part.len() < LEAST {
                continue;
            }
            let y: Vec<f64> = part.iter().map(|p| p.value.ln()).collect();
            if y.iter().any(|v| !v.is_finite()) {
                continue;
            }
            let mean = y.iter().sum::<f64>() / y.len() as f64;
            let e: Vec<f64> = y.iter().map(|v| v - mean).collect();
            lagged += e.windows(2).map(|p| p[0] * p[1]).sum::<f64>();
            squares += e.iter().map(|v| v * v).sum::<f64>();
            sittings += y.len();
            segments += 1;
        }
    }
    if sittings < 12 || squares <= 0.0 {
        return None;
    }
    let r = lagged / squares;
    let n = sittings as f64 / segments as f64;
    // Carried only when the reading shows it (above 1.645 standard errors, about 1/√N, one
    // sided): a history of few sittings reads ±0.25 where there is no correlation at all, and a
    // null that carried that noise would lose the changes it is there to find.
    let corrected = (r + 1.0 / n) / (1.0 - 3.0 / n);
    let shown = corrected > 1.645 / (sittings as f64).sqrt();
    let rho = if shown {
        corrected.clamp(0.0, MOST)
    } else {
        0.0
    };
    Some(Serial { rho, sittings })
}
