//! A gate that runs until it can decide: the rounds' mean log-ratio read after every round with
//! an interval that holds at every look at once (a confidence sequence), so that stopping as
//! soon as it decides keeps the stated error rate, where a t interval read after each round
//! would not (it would call a regression that is not there far more often than 5 %).
//!
//! **The sequence.** For rounds whose log-ratios are independent draws of N(μ, σ²), σ unknown,
//! Lai's (1976) confidence sequence: for a value m, the likelihood ratio of the rounds' scale-
//! invariant content, a standardised effect δ = (μ − m)/σ drawn from N(0, 1/c) against δ = 0
//! (the right-Haar prior on σ), is
//!
//! ```text
//! M_n(m) = √(c/(n + c)) · (Σy² / (Σy² − (Σy)²/(n + c)))^{n/2},   y_i = x_i − m,
//! ```
//!
//! a nonnegative martingale with M_1 = 1 when m = μ (Pérez-Ortiz, Lardy, de Heide and Grünwald,
//! "E-statistics, group invariance and anytime-valid testing", 2024; Wang and Ramdas,
//! "Anytime-valid t-tests and confidence sequences for Gaussian means with unknown variance",
//! 2025). By Ville's inequality it reaches 1/α with chance at most α, ever, so {m : M_n(m) <
//! 1/α} holds μ at every n at once with chance 1 − α. With S the rounds' sum of squares about
//! their mean and K = (√((n + c)/c)/α)^{2/n}, it is the mean ± √(S(K − 1) ÷ (n(1 − Kc/(n+c)))),
//! the whole line while Kc ≥ n + c.
//!
//! **c** sets where it is narrowest: [`C`] makes it narrowest near 10 rounds, where a gate of
//! a few percent on a noisy server decides. At 10 rounds it is 1.7× the width of the t interval
//! read once; that is what looking after every round costs.

/// The prior precision of the standardised effect: the sequence is narrowest about here.
pub const C: f64 = 1.0;

/// The confidence sequence's interval for the mean of `xs` at level `1 − alpha`, holding at
/// every `n` at once; `None` with fewer than 2 values or no spread, and the whole line (±∞)
/// while the rounds are too few to bound it.
pub fn interval(xs: &[f64], alpha: f64) -> Option<(f64, f64)> {
    let n = xs.len();
    if n < 2 || xs.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let nf = n as f64;
    let mean = xs.iter().sum::<f64>() / nf;
    let s: f64 = xs.iter().map(|x| (x - mean).powi(2)).sum();
    if s <= 0.0 {
        return None;
    }
    let half = half_width(s, nf, alpha);
    Some((mean - half, mean + half))
}

/// The sequence's half-width at `n` rounds whose sum of squares about their mean is `s`.
pub fn half_width(s: f64, n: f64, alpha: f64) -> f64 {
    let k = (((n + C) / C).sqrt() / alpha).powf(2.0 / n);
    let room = 1.0 - k * C / (n + C);
    if room <= 0.0 {
        return f64::INFINITY;
    }
    (s * (k - 1.0) / (n * room)).sqrt()
}

/// The rounds in all (these and more) after which the sequence would lie on one side of
/// `edge` (a log-ratio), were the rounds to come like these (their mean and spread): the
/// answer to "how many more rounds would decide it?", at most `most`.
pub fn rounds_to_decide(xs: &[f64], edge: f64, alpha: f64, most: usize) -> Option<usize> {
    let n = xs.len();
    if n < 2 || xs.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let nf = n as f64;
    let mean = xs.iter().sum::<f64>() / nf;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (nf - 1.0);
    let gap = (mean - edge).abs();
    if var <= 0.0 || gap == 0.0 {
        return None;
    }
    (n..=most).find(|&m| {
        let mf = m as f64;
        half_width(var * (mf - 1.0), mf, alpha) < gap
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capacity::random::Rng;

    /// Simulated gates: rounds drawn N(μ, σ²) and the sequence read after every round from the
    /// 3rd to the 40th; the chance that any of those 38 looks misses μ is at most 5 %, where
    /// the t interval read at every look misses it in about a quarter of gates.
    #[test]
    fn it_holds_the_mean_at_every_look_at_once() {
        let mut rng = Rng::new(76);
        let gates = 4000;
        let (mut missed, mut t_missed) = (0, 0);
        for _ in 0..gates {
            let (mu, sigma) = (0.03, 0.08);
            let mut xs = Vec::new();
            let (mut out, mut t_out) = (false, false);
            for n in 1..=40 {
                xs.push(mu + sigma * rng.normal());
                if n < 3 {
                    continue;
                }
                if let Some((lo, hi)) = interval(&xs, 0.05) {
                    out |= !(lo <= mu && mu <= hi);
                }
                let m = xs.iter().sum::<f64>() / n as f64;
                let sd = (xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt();
                let t = crate::capacity::batch::t975(n - 1) * sd / (n as f64).sqrt();
                t_out |= (m - mu).abs() > t;
            }
            missed += usize::from(out);
            t_missed += usize::from(t_out);
        }
        let rate = missed as f64 / gates as f64;
        eprintln!(
            "missed at some look: the sequence {missed} of {gates}, the t interval {t_missed}"
        );
        // 5 % and its Monte Carlo error (0.34 points at 1 SE).
        assert!(rate <= 0.058, "{missed} of {gates}");
        assert!(t_missed > 4 * missed, "{t_missed} against {missed}");
    }

    /// Its width against the t interval's at a few round counts, and against a hand computation
    /// at n = 10, s² = 0.01 (K = (√11/0.05)^{0.2} = 2.3139, half-width √(0.09·1.3139 ÷
    /// (10·(1 − 2.3139/11))) = 0.1224).
    #[test]
    fn its_width_is_the_closed_form_and_a_price_on_the_t_interval() {
        let s = 0.01 * 9.0;
        let half = half_width(s, 10.0, 0.05);
        assert!((half - 0.1224).abs() < 5e-4, "{half}");
        let t = crate::capacity::batch::t975(9) * 0.1 / 10f64.sqrt();
        let price = half / t;
        assert!((1.3..1.9).contains(&price), "{price}");
        assert!(half_width(0.01, 2.0, 0.05).is_infinite());
        // Narrowing with rounds, as a t interval does, at about the same rate.
        assert!(half_width(0.01 * 39.0, 40.0, 0.05) < half_width(0.01 * 19.0, 20.0, 0.05));
    }

    /// How many rounds would decide: the first count at which the width, at the rounds' own
    /// spread, falls below the mean's distance from the edge; none within the most asked for
    /// when the mean sits on the edge.
    #[test]
    fn the_rounds_to_decide_are_where_the_width_falls_below_the_gap() {
        let xs = [0.0, 0.16, 0.08, 0.08, 0.0, 0.16, 0.08, 0.08];
        let edge = 0.05f64.ln_1p();
        let m = rounds_to_decide(&xs, edge, 0.05, 500).unwrap();
        assert!(m > xs.len(), "{m}");
        let var = xs.iter().map(|x| (x - 0.08).powi(2)).sum::<f64>() / 7.0;
        let gap = 0.08 - edge;
        let width = |m: usize| half_width(var * (m as f64 - 1.0), m as f64, 0.05);
        assert!(width(m) < gap && width(m - 1) >= gap, "{m}");
        let on_edge = [edge + 0.01, edge - 0.01, edge + 0.0101, edge - 0.0101];
        assert!(rounds_to_decide(&on_edge, edge, 0.05, 500).is_none());
    }
}
