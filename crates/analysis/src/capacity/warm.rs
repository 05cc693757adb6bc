//! When a server has warmed. A fresh process is slower at first: its JIT compiles the hot paths
//! (V8 for minutes), its pools and caches fill. A search whose first steps run on a cold server
//! reads it low and says nothing, so before its first step the server is held at a fixed rate in
//! one-second samples until their median latency stops trending, or a bound passes.
//!
//! The rule, on each sample's median latency: over the last [`window`] samples (20 for a bound
//! of 2 min or more), the Theil–Sen line's change across them, relative to their median, is
//! within [`SMALL`], or within its own standard error (noise hides any trend smaller). A window
//! of fixed length slides on, so an exponential warm-up is followed until what is left of it
//! is small, and a server warm already is judged after one window.

use serde::{Deserialize, Serialize};

/// The fewest samples judged, in a warm-up of a short bound.
pub const LEAST: usize = 5;
/// The most samples a trend is read over.
pub const MOST: usize = 20;

/// The samples a trend is read over, for a warm-up of at most `longest_s` one-second samples:
/// a sixth of them, from [`LEAST`] to [`MOST`].
pub fn window(longest_s: u64) -> usize {
    usize::try_from(longest_s / 6)
        .unwrap_or(MOST)
        .clamp(LEAST, MOST)
}
/// A change across the window this small (relative) is no trend.
pub const SMALL: f64 = 0.03;

/// One sample of a warm-up: a second at the warm-up's rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// Median latency (corrected), ns.
    pub p50_ns: u64,
    /// 99th percentile (corrected), ns.
    pub p99_ns: u64,
}

/// The trend of the later half of a warm-up's samples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Trend {
    /// How many of the last samples the trend was read over.
    pub samples: usize,
    /// The Theil–Sen line's change across them, relative to their median (−0.08: falling 8 %).
    pub change: f64,
    /// Its standard error, from the spread about the line.
    pub se: f64,
}

impl Trend {
    /// Whether the trend is small, or within its own noise.
    pub fn flat(&self) -> bool {
        self.change.abs() <= SMALL.max(self.se)
    }
}

/// The trend of `p50` (each sample's median latency) over its last `window` samples, when
/// there are that many (and at least [`LEAST`]).
pub fn trend(p50: &[f64], window: usize) -> Option<Trend> {
    let n = window.max(LEAST);
    if p50.len() < n {
        return None;
    }
    let ys = &p50[p50.len() - n..];
    let level = median(ys.to_vec())?;
    if level <= 0.0 {
        return None;
    }
    let mut slopes = Vec::with_capacity(n * (n - 1) / 2);
    for i in 0..n {
        for j in i + 1..n {
            slopes.push((ys[j] - ys[i]) / (j - i) as f64);
        }
    }
    let slope = median(slopes)?;
    let xbar = (n - 1) as f64 / 2.0;
    let intercept = median(
        ys.iter()
            .enumerate()
            .map(|(i, y)| y - slope * i as f64)
            .collect(),
    )?;
    // The residuals' spread, robustly (1.4826 × their median absolute deviation).
    let sigma = 1.4826
        * median(
            ys.iter()
                .enumerate()
                .map(|(i, y)| (y - intercept - slope * i as f64).abs())
                .collect(),
        )?;
    let sxx: f64 = (0..n).map(|i| (i as f64 - xbar).powi(2)).sum();
    let span = (n - 1) as f64;
    Some(Trend {
        samples: n,
        change: slope * span / level,
        se: sigma / sxx.sqrt() * span / level,
    })
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() || v.iter().any(|x| !x.is_finite()) {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    })
}

/// How much the level moved from the first samples (up to [`LEAST`]) to the last window's
/// (`trend.samples`), relative (−0.31: fell 31 %).
pub fn moved(p50: &[f64], trend: &Trend) -> Option<f64> {
    let first = median(p50.iter().take(LEAST).copied().collect())?;
    let last = median(p50.iter().rev().take(trend.samples).copied().collect())?;
    (first > 0.0).then(|| last / first - 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capacity::random::Rng;

    /// A JIT's warm-up: the latency falls by `drop` with time constant `tau` seconds, with
    /// multiplicative noise of `noise` (sd, relative), one sample a second.
    fn jit(seconds: usize, drop: f64, tau: f64, noise: f64, rng: &mut Rng) -> Vec<f64> {
        (0..seconds)
            .map(|t| {
                let level = 1e6 * (1.0 - drop * (1.0 - (-(t as f64) / tau).exp()));
                level * (1.0 + noise * rng.normal())
            })
            .collect()
    }

    /// Where the rule stops a warm-up of a 2-minute bound: the first second it calls the
    /// samples flat.
    fn stops(p50: &[f64]) -> Option<usize> {
        let w = window(120);
        (w..=p50.len()).find(|&n| trend(&p50[..n], w).is_some_and(|t| t.flat()))
    }

    fn quantile(mut v: Vec<f64>, q: f64) -> f64 {
        v.sort_by(f64::total_cmp);
        v[((v.len() - 1) as f64 * q) as usize]
    }

    #[test]
    fn windows_grow_with_the_bound() {
        assert_eq!(window(120), MOST);
        assert_eq!(window(3600), MOST);
        assert_eq!(window(12), LEAST);
        assert_eq!(window(60), 10);
    }

    /// Warm already, 3 % or 10 % noise a second: judged after one window, nearly always.
    #[test]
    fn a_server_that_is_warm_already_is_judged_flat_after_one_window() {
        let mut rng = Rng::new(7);
        for noise in [0.03, 0.10] {
            let at: Vec<f64> = (0..200)
                .map(|_| stops(&jit(120, 0.0, 1.0, noise, &mut rng)).unwrap_or(999) as f64)
                .collect();
            assert!(quantile(at.clone(), 0.5) <= 21.0, "{noise}: {at:?}");
            assert!(quantile(at.clone(), 0.9) <= 30.0, "{noise}: {at:?}");
        }
    }

    /// A V8-like warm-up (31 % over a time constant of 30 s, 3 % noise a second): followed
    /// until little of the fall is left, within the 2-minute bound; a fast one (50 % over 3 s)
    /// soon after it ends.
    #[test]
    fn a_jit_warm_up_is_followed_until_little_is_left() {
        let mut rng = Rng::new(11);
        let (drop, tau) = (0.31, 30.0);
        let mut left = Vec::new();
        for _ in 0..200 {
            let at = stops(&jit(240, drop, tau, 0.03, &mut rng)).unwrap_or(240);
            // The share of the fall still to come, relative to the warm level.
            left.push(drop * (-(at as f64) / tau).exp() / (1.0 - drop));
            assert!(at <= 120, "stopped at {at} s");
        }
        eprintln!(
            "left when stopped: median {:.1} %, 90th percentile {:.1} %",
            quantile(left.clone(), 0.5) * 100.0,
            quantile(left.clone(), 0.9) * 100.0
        );
        assert!(quantile(left.clone(), 0.5) <= 0.065, "{left:?}");
        assert!(quantile(left.clone(), 0.9) <= 0.10, "{left:?}");
        let fast: Vec<f64> = (0..200)
            .map(|_| stops(&jit(120, 0.5, 3.0, 0.03, &mut rng)).unwrap_or(999) as f64)
            .collect();
        assert!(quantile(fast, 0.9) <= 36.0);
    }

    #[test]
    fn a_steady_climb_is_never_flat() {
        let p50: Vec<f64> = (0..120).map(|t| 1e6 * (1.0 + 0.004 * t as f64)).collect();
        assert_eq!(stops(&p50), None);
        let t = trend(&p50, window(120)).unwrap();
        assert!((t.change - 0.004 * 19.0 / 1.438).abs() < 0.005, "{t:?}");
        assert!(moved(&p50, &t).unwrap() > 0.3);
    }

    #[test]
    fn too_few_samples_or_nonsense_give_no_trend() {
        assert_eq!(trend(&[1.0, 2.0, 3.0], 5), None);
        assert_eq!(trend(&[0.0; 8], 5), None);
        assert_eq!(trend(&[1.0, f64::NAN, 1.0, 1.0, 1.0], 5), None);
    }
}
