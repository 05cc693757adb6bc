//! 95 % confidence intervals that need no assumption about the latency distribution, as Lancet
//! (USENIX ATC '19) computes them: for a percentile, the order statistics whose ranks bracket it
//! with 95 % probability under the binomial law of how many samples fall below the true
//! quantile; for the error ratio, Wilson's score interval; for the mean, the normal one.
//! Values come from the step's HdrHistogram, rounded outward (the low end to the lowest value
//! its bucket stands for, the high end to the highest), so an interval is never narrower than
//! the data says.

use hdrhistogram::Histogram;

/// z for a two-sided 95 % interval.
const Z: f64 = 1.959_963_984_540_054;

/// Above this many samples' variance, the normal approximation of the binomial is exact enough.
const NORMAL_ABOVE: f64 = 50.0;

/// A value and its 95 % interval; `high` is infinite when the samples cannot bound it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    pub value: f64,
    pub low: f64,
    pub high: f64,
}

/// The 1-based ranks (low, high) of the order statistics bracketing the `q` quantile of `n`
/// samples with 95 % confidence; `high` may exceed `n` (no upper bound) and `low` be 0 (none
/// below).
pub fn quantile_ranks(n: u64, q: f64) -> (u64, u64) {
    let nf = n as f64;
    let variance = nf * q * (1.0 - q);
    if variance >= NORMAL_ABOVE {
        let spread = Z * variance.sqrt();
        let low = (nf * q - spread).floor().max(0.0) as u64;
        let high = (nf * q + spread).ceil() as u64 + 1;
        return (low, high);
    }
    // Exact: P(X(l) <= ξ) = P(B >= l), P(X(u) >= ξ) = P(B <= u - 1), B ~ Binomial(n, q).
    let ln_q = q.ln();
    let ln_p = (1.0 - q).ln();
    let ln_n = ln_gamma(nf + 1.0);
    let pmf = |k: u64| {
        let kf = k as f64;
        (ln_n - ln_gamma(kf + 1.0) - ln_gamma(nf - kf + 1.0) + kf * ln_q + (nf - kf) * ln_p).exp()
    };
    let mut cdf = 0.0;
    let mut low = 0;
    let mut high = n + 1;
    for k in 0..=n {
        let before = cdf;
        cdf += pmf(k);
        // B <= k - 1 has probability `before`: X(k) is a lower bound while that is at most 2.5 %.
        if before <= 0.025 {
            low = k;
        }
        if cdf >= 0.975 {
            high = k + 1;
            break;
        }
    }
    (low, high)
}

/// The fewest samples for which the `q` quantile's interval has an upper end.
pub fn samples_to_bound(q: f64) -> u64 {
    let mut n = 10;
    while quantile_ranks(n, q).1 > n && n < 100_000_000 {
        n = n * 5 / 4 + 1;
    }
    n
}

/// The value of the `rank`-th smallest sample (1-based): its bucket's lowest value for a lower
/// bound (`upper` false), its highest for an upper bound.
fn value_at_rank(h: &Histogram<u64>, rank: u64, upper: bool) -> f64 {
    if rank == 0 {
        return 0.0;
    }
    if rank > h.len() {
        return f64::INFINITY;
    }
    let mut seen = 0;
    for v in h.iter_recorded() {
        seen += v.count_at_value();
        if seen >= rank {
            let at = v.value_iterated_to();
            return if upper {
                h.highest_equivalent(at) as f64
            } else {
                h.lowest_equivalent(at) as f64
            };
        }
    }
    f64::INFINITY
}

/// The `q` quantile (0–1) of `h` and its interval; `None` without samples.
pub fn quantile(h: &Histogram<u64>, q: f64) -> Option<Estimate> {
    let n = h.len();
    if n == 0 {
        return None;
    }
    let (low, high) = quantile_ranks(n, q);
    Some(Estimate {
        value: h.value_at_quantile(q) as f64,
        low: value_at_rank(h, low, false),
        high: value_at_rank(h, high, true),
    })
}

/// The mean of `h` and its normal interval; `None` without samples.
pub fn mean(h: &Histogram<u64>) -> Option<Estimate> {
    let n = h.len();
    if n == 0 {
        return None;
    }
    let spread = Z * h.stdev() / (n as f64).sqrt();
    Some(Estimate {
        value: h.mean(),
        low: (h.mean() - spread).max(0.0),
        high: h.mean() + spread,
    })
}

/// `failed` of `n` as a ratio with Wilson's interval; `None` when `n` is 0.
pub fn ratio(failed: u64, n: u64) -> Option<Estimate> {
    if n == 0 {
        return None;
    }
    let nf = n as f64;
    let p = failed as f64 / nf;
    let z2 = Z * Z;
    let centre = (p + z2 / (2.0 * nf)) / (1.0 + z2 / nf);
    let spread = Z * (p * (1.0 - p) / nf + z2 / (4.0 * nf * nf)).sqrt() / (1.0 + z2 / nf);
    Some(Estimate {
        value: p,
        low: if failed == 0 {
            0.0
        } else {
            (centre - spread).max(0.0)
        },
        high: (centre + spread).min(1.0),
    })
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7, n = 9: 15 significant digits).
fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + G + 0.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uniform(n: u64) -> Histogram<u64> {
        // 1..=n µs, each once: the q quantile is q·n µs.
        let mut h = store::model::new_histogram(10_000_000_000);
        for v in 1..=n {
            h.record(v * 1_000).unwrap();
        }
        h
    }

    #[test]
    fn ln_gamma_is_the_factorial() {
        for (n, fact) in [(1.0, 1.0), (5.0, 24.0), (11.0, 3_628_800.0)] {
            assert!((ln_gamma(n) - f64::ln(fact)).abs() < 1e-10, "{n}");
        }
    }

    #[test]
    fn ranks_bracket_the_quantile_as_the_binomial_says() {
        // The median of 100 samples: the textbook ranks are 40 and 61.
        let (low, high) = quantile_ranks(100, 0.5);
        assert!(
            (39..=41).contains(&low) && (60..=62).contains(&high),
            "{low} {high}"
        );
        // p99 of 100 samples: no sample bounds it from above.
        assert!(quantile_ranks(100, 0.99).1 > 100);
        // p99 of a million: within a few ranks of 990,000 either way (about ±195).
        let (low, high) = quantile_ranks(1_000_000, 0.99);
        assert!(
            low < 990_000 && high > 990_000 && high - low < 400,
            "{low} {high}"
        );
        // The exact and the normal forms agree where they meet.
        let exact = quantile_ranks(2_000, 0.97); // variance 58: normal
        let small = quantile_ranks(1_500, 0.97); // variance 44: exact
        assert!(exact.0 < 1_940 && exact.1 > 1_940);
        assert!(small.0 < 1_455 && small.1 > 1_455 && small.1 - small.0 < 40);
    }

    #[test]
    fn a_percentiles_interval_holds_the_truth_and_narrows_with_samples() {
        for n in [1_000u64, 10_000, 100_000] {
            let h = uniform(n);
            let e = quantile(&h, 0.99).unwrap();
            let truth = 0.99 * n as f64 * 1_000.0;
            assert!(
                e.low <= truth && truth <= e.high,
                "n={n}: {e:?} around {truth}"
            );
            let width = (e.high - e.low) / truth;
            assert!(width < 40.0 / (n as f64).sqrt(), "n={n}: width {width}");
        }
        // Coverage: over many samples of a known distribution, the interval holds the true p90
        // about 95 % of the time (at least 90 % of 200 draws).
        let mut rng_state = 12345u64;
        let mut next = || {
            rng_state ^= rng_state << 13;
            rng_state ^= rng_state >> 7;
            rng_state ^= rng_state << 17;
            (rng_state % 1_000_000) + 1
        };
        let truth = 900_000.0 * 1_000.0;
        let mut held = 0;
        for _ in 0..200 {
            let mut h = store::model::new_histogram(10_000_000_000);
            for _ in 0..2_000 {
                h.record(next() * 1_000).unwrap();
            }
            let e = quantile(&h, 0.9).unwrap();
            if e.low <= truth && truth <= e.high {
                held += 1;
            }
        }
        assert!(
            held >= 180,
            "the interval held the truth {held} times of 200"
        );
    }

    #[test]
    fn enough_samples_bound_a_percentile() {
        let n = samples_to_bound(0.99);
        assert!((290..=500).contains(&n), "{n}");
        assert!(quantile_ranks(n, 0.99).1 <= n);
        assert!(samples_to_bound(0.999) > 10 * samples_to_bound(0.99) / 2);
    }

    #[test]
    fn the_error_ratios_interval_is_wilsons() {
        let none = ratio(0, 10_000).unwrap();
        assert_eq!(none.low, 0.0);
        assert!((none.high - 3.84 / 10_003.84).abs() < 1e-5, "{none:?}");
        let some = ratio(50, 1_000).unwrap();
        assert!(
            some.low < 0.05 && some.high > 0.05 && some.high < 0.07,
            "{some:?}"
        );
        assert!(ratio(0, 0).is_none());
    }
}
