//! The capacity repeated searches agree on: one estimate of C_p from every valid step of every
//! search, pooled ([`super::fit`]), each search a cluster, so that a sitting whose knee moved
//! from one search to the next widens the interval by as much as the searches disagree. One
//! confidence level, 95 %, as everywhere; where the steps do not bound the figure on both
//! sides, no interval is shown.

use serde::{Deserialize, Serialize};

use super::fit::{self, Fitted};
use super::Search;

/// The confidence of every interval.
pub const CONFIDENCE: f64 = fit::CONFIDENCE;

/// The capacity of repeated searches: C_p of their steps pooled, and its interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Agreed {
    /// C_p estimated from every search's steps (or, where passes and fails do not both bound
    /// it, the median of the searches' own figures).
    pub rate: f64,
    /// Its 95 % interval; `None` where the steps do not bound it.
    pub low: Option<f64>,
    pub high: Option<f64>,
    /// 0.95 when there is an interval.
    pub confidence: Option<f64>,
    /// The interval's larger side as a share of the figure (±).
    pub half_width: Option<f64>,
    /// How many searches it rests on.
    pub searches: usize,
    /// The spread of the searches' own figures: (highest − lowest) ÷ lowest.
    pub spread: Option<f64>,
}

/// The median of `found` (the mean of the two middle ones of an even count: of 16,400 and
/// 19,500, 17,950, not the better of the two).
pub fn median(found: &[f64]) -> Option<f64> {
    let mut v = found.to_vec();
    v.sort_by(f64::total_cmp);
    let upper = *v.get(v.len() / 2)?;
    if v.len() % 2 == 1 {
        return Some(upper);
    }
    let lower = *v.get(v.len() / 2 - 1)?;
    Some((lower + upper) / 2.0)
}

/// C_p of `searches`' valid steps pooled (at the first search's p), each search a cluster.
pub fn pooled(searches: &[Search]) -> Option<Fitted> {
    let p = searches.first()?.settings.p;
    // One search's steps are clustered by time within it, several searches' by search.
    let points: Vec<fit::Point> = match searches {
        [one] => one.points(None),
        _ => searches
            .iter()
            .enumerate()
            .flat_map(|(i, s)| s.points(Some(i as u32)))
            .collect(),
    };
    let passes = points.iter().filter(|p| p.pass).count();
    if passes == 0 || passes == points.len() {
        return None;
    }
    fit::fit(&points, p, true)
}

/// What `searches` agree on; `None` when none found a figure.
pub fn agreed(searches: &[Search]) -> Option<Agreed> {
    let found: Vec<f64> = searches.iter().filter_map(|s| s.capacity).collect();
    let at_least = searches.iter().any(|s| s.only_at_least().is_some());
    let fitted = pooled(searches).filter(|_| !at_least);
    let rate = fitted.as_ref().map(|f| f.rate).or_else(|| median(&found))?;
    let (lo, hi) = (
        found.iter().copied().reduce(f64::min),
        found.iter().copied().reduce(f64::max),
    );
    let bounded = fitted.as_ref().and_then(|f| Some((f.low?, f.high?)));
    Some(Agreed {
        rate,
        low: bounded.map(|b| b.0),
        high: bounded.map(|b| b.1),
        confidence: bounded.map(|_| CONFIDENCE),
        half_width: fitted.as_ref().and_then(Fitted::half_width),
        searches: searches.len(),
        spread: match (lo, hi) {
            (Some(lo), Some(hi)) if found.len() > 1 && lo > 0.0 => Some((hi - lo) / lo),
            _ => None,
        },
    })
}

impl Agreed {
    /// The figure in words: "66,400 req/s (6 searches' steps pooled; 95 % interval
    /// 64,100–68,800, ±3.6 %)".
    pub fn text(&self) -> String {
        let rests = match self.searches {
            1 => "one search".to_string(),
            n => format!("{n} searches' steps pooled"),
        };
        match (self.low, self.high, self.half_width) {
            (Some(low), Some(high), Some(h)) => format!(
                "{:.0} req/s ({rests}; 95 % interval {low:.0}–{high:.0}, ±{:.1} %)",
                self.rate,
                h * 100.0
            ),
            _ => format!(
                "{:.0} req/s ({rests}; no 95 % interval: the steps do not bound it on both sides)",
                self.rate
            ),
        }
    }

    /// Whether the 95 % interval is within ±`until`.
    pub fn within(&self, until: f64) -> bool {
        self.confidence.is_some() && self.half_width.is_some_and(|h| h <= until + 1e-9)
    }
}

/// Repeated searches of one capacity, as `loadgen capacity --output json` prints them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Repeated {
    /// What they agree on; `None` when none found a capacity.
    pub capacity: Option<Agreed>,
    /// Why the figure is only a lower bound (the generator's limit, the highest rate), if so.
    pub at_least: Option<String>,
    /// Why the searches stopped where they did, in one sentence.
    pub stopped: String,
    pub searches: Vec<Search>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_of_an_even_count_is_the_mean_of_the_middle_two() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[19_500.0]), Some(19_500.0));
        assert_eq!(median(&[19_500.0, 16_400.0]), Some(17_950.0));
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
    }
}
