//! The capacity repeated searches agree on. On a shared host the capacity of a server is a
//! distribution (the knee moves from minute to minute), so the answer is the median of the
//! searches' capacities with a confidence interval for that median: distribution-free, from
//! the order statistics (the interval `[x(k), x(n+1−k)]` holds the true median with the
//! probability the binomial law with p = ½ gives), so it needs no assumption about how the
//! searches spread. Fewer than six searches cannot give 95 %: the interval is then the
//! searches' whole range with the confidence it really has (75 % for three), said as such.

use serde::{Deserialize, Serialize};

use super::Search;

/// The confidence the median's interval aims at.
pub const CONFIDENCE: f64 = 0.95;

/// The capacity of repeated searches: their median and its interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Agreed {
    /// The median of the capacities found (of an even count, the mean of the middle two).
    pub median: f64,
    /// The median's interval; `None` from a single search (its repeatability unmeasured).
    pub low: Option<f64>,
    pub high: Option<f64>,
    /// The probability the interval holds the true median (0.95, or less with few searches).
    pub confidence: Option<f64>,
    /// The interval's larger side as a share of the median (±).
    pub half_width: Option<f64>,
    /// How many searches' capacities it rests on.
    pub searches: usize,
    /// The spread of those capacities: (highest − lowest) ÷ lowest.
    pub spread: Option<f64>,
}

/// The median of `found` (the mean of the two middle ones of an even count: of 16,400 and
/// 19,500, 17,950, not the better of the two), as pages and shares use it.
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

/// P(B ≤ k) for B ~ Binomial(n, ½).
fn below(n: usize, k: usize) -> f64 {
    let mut term = 0.5f64.powi(n as i32);
    let mut sum = 0.0;
    for i in 0..=k.min(n) {
        if i > 0 {
            term *= (n - i + 1) as f64 / i as f64;
        }
        sum += term;
    }
    sum
}

/// The 1-based rank `k` of the interval `[x(k), x(n+1−k)]` for the median of `n` values, and
/// its confidence: the largest `k` reaching [`CONFIDENCE`], else 1 with what it reaches.
pub fn median_ranks(n: usize) -> Option<(usize, f64)> {
    if n < 2 {
        return None;
    }
    let coverage = |k: usize| 1.0 - 2.0 * below(n, k - 1);
    let mut best = (1, coverage(1));
    for k in 2..=n / 2 {
        let c = coverage(k);
        if c < CONFIDENCE {
            break;
        }
        best = (k, c);
    }
    Some(best)
}

/// What `found` (each search's capacity) agree on; `None` without any.
pub fn agreed(found: &[f64]) -> Option<Agreed> {
    let m = median(found)?;
    let mut v = found.to_vec();
    v.sort_by(f64::total_cmp);
    let interval = median_ranks(v.len())
        .and_then(|(k, confidence)| Some((*v.get(k - 1)?, *v.get(v.len() - k)?, confidence)));
    let (lo, hi) = (v.first().copied(), v.last().copied());
    Some(Agreed {
        median: m,
        low: interval.map(|i| i.0),
        high: interval.map(|i| i.1),
        confidence: interval.map(|i| i.2),
        half_width: interval
            .filter(|_| m > 0.0)
            .map(|(low, high, _)| (m - low).max(high - m) / m),
        searches: v.len(),
        spread: match (lo, hi) {
            (Some(lo), Some(hi)) if v.len() > 1 && lo > 0.0 => Some((hi - lo) / lo),
            _ => None,
        },
    })
}

impl Agreed {
    /// The figure in words: "66,400 req/s (median of 6 searches; 95 % interval 64,100–68,800,
    /// ±3.6 %)".
    pub fn text(&self) -> String {
        let rests = match self.searches {
            1 => "one search: its repeatability is not measured".to_string(),
            n => format!("median of {n} searches"),
        };
        match (self.low, self.high, self.confidence, self.half_width) {
            (Some(low), Some(high), Some(c), Some(h)) => format!(
                "{:.0} req/s ({rests}; {:.0} % interval {low:.0}–{high:.0}, ±{:.1} %)",
                self.median,
                c * 100.0,
                h * 100.0
            ),
            _ => format!("{:.0} req/s ({rests})", self.median),
        }
    }

    /// Whether the interval is as narrow as `until` (±, a share) at the full confidence.
    pub fn within(&self, until: f64) -> bool {
        self.confidence.is_some_and(|c| c >= CONFIDENCE - 1e-9)
            && self.half_width.is_some_and(|h| h <= until + 1e-9)
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

    #[test]
    fn the_medians_interval_has_the_confidence_the_binomial_gives() {
        // The textbook ranks: n = 3 → the range at 75 %; 6 → the range at 96.9 %; 9 → ranks 2
        // and 8 at 96.1 %; 20 → ranks 6 and 15 at 95.9 %.
        let close = |a: f64, b: f64| (a - b).abs() < 1e-3;
        let (k, c) = median_ranks(3).unwrap();
        assert!(k == 1 && close(c, 0.75), "{k} {c}");
        let (k, c) = median_ranks(6).unwrap();
        assert!(k == 1 && close(c, 0.96875), "{k} {c}");
        let (k, c) = median_ranks(9).unwrap();
        assert!(k == 2 && close(c, 0.9609), "{k} {c}");
        let (k, c) = median_ranks(20).unwrap();
        assert!(k == 6 && close(c, 0.9586), "{k} {c}");
        assert_eq!(median_ranks(1), None);
    }

    #[test]
    fn the_interval_holds_the_true_median_as_often_as_it_says() {
        // Searches drawn from a skewed distribution (exponential, median ln 2): over many sets
        // of 9, the interval holds the true median about 96 % of the time.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut uniform = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ((state >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        };
        let truth = std::f64::consts::LN_2;
        let mut held = 0;
        for _ in 0..2_000 {
            let found: Vec<f64> = (0..9).map(|_| -uniform().ln()).collect();
            let a = agreed(&found).unwrap();
            held += usize::from(a.low.unwrap() <= truth && truth <= a.high.unwrap());
        }
        let coverage = held as f64 / 2_000.0;
        assert!((0.94..=0.98).contains(&coverage), "{coverage}");
    }

    #[test]
    fn the_figure_says_what_it_rests_on() {
        let one = agreed(&[66_400.0]).unwrap();
        assert_eq!(one.low, None);
        assert!(one.text().contains("one search"), "{}", one.text());
        assert!(!one.within(0.05));
        let six = agreed(&[64_000.0, 65_000.0, 66_000.0, 66_800.0, 67_000.0, 68_000.0]).unwrap();
        assert_eq!(six.median, 66_400.0);
        assert_eq!((six.low, six.high), (Some(64_000.0), Some(68_000.0)));
        assert!(six.within(0.05), "{six:?}");
        assert!(
            six.text().contains("97 % interval 64000–68000"),
            "{}",
            six.text()
        );
        // Three searches tightly together are still only a 75 % interval: not within.
        let three = agreed(&[66_000.0, 66_100.0, 66_200.0]).unwrap();
        assert!(!three.within(0.05));
        assert!(three.text().contains("75 % interval"), "{}", three.text());
    }
}
