//! Intervals that hold on correlated latencies: batch means over a window's consecutive
//! batches. Requests under load are not independent (a queue, a GC pause, a stalled connection
//! spread one slow moment over many requests), so the order-statistic interval of
//! [`super::interval`], exact for independent samples, is far too narrow near saturation. Here
//! the window is cut into consecutive batches (a whole number of its intervals each), the
//! figure is estimated in each batch, and Student's t over the batches' estimates gives the
//! spread of the window's figure; batches much longer than the correlation make their
//! estimates nearly independent whatever the samples are. The interval printed is the wider of
//! that and the independent one, centred on the figure of the whole window.
//!
//! The confidence is about the figure of the process the window sampled (the server's p99 at
//! this rate, were the step run for ever under the same conditions), not about other windows:
//! a server whose conditions drift between steps is judged by the search's repetitions.

use hdrhistogram::Histogram;

use super::interval::{self, Estimate};

/// Fewer batches than this cannot bound a figure's spread: the interval has no upper end.
pub const MIN_BATCHES: usize = 5;

/// At most this many batches: more adds little and shortens each below the correlation.
pub const MAX_BATCHES: usize = 10;

/// Student's t for a two-sided 95 % interval with `df` degrees of freedom (statrs's, at every
/// df: was a table to 30 df and the normal's 1.96 beyond, 2–4 % narrow from 31 to 60 df).
pub(crate) fn t975(df: usize) -> f64 {
    match df {
        0 => f64::INFINITY,
        d => crate::ab::functions::t_quantile(0.975, d as f64),
    }
}

/// Consecutive batches of `parts` (a window's intervals, in order), as many as
/// [`MAX_BATCHES`] allows with each holding at least `least` samples (`count` of a part).
pub fn batches<T>(parts: &[T], least: u64, count: impl Fn(&T) -> u64) -> Vec<Vec<&T>> {
    let total: u64 = parts.iter().map(&count).sum();
    let wanted = MAX_BATCHES
        .min(parts.len())
        .min((total / least.max(1)) as usize)
        .max(1);
    // Equal shares of the window's samples: a batch closes once it holds its share.
    let share = total as f64 / wanted as f64;
    let mut out: Vec<Vec<&T>> = vec![Vec::new()];
    let mut seen = 0u64;
    for part in parts {
        let current = out.len();
        if let Some(last) = out.last_mut() {
            last.push(part);
        }
        seen += count(part);
        if seen as f64 >= share * current as f64 - 1e-9 && out.len() < wanted {
            out.push(Vec::new());
        }
    }
    out.retain(|b| !b.is_empty());
    // A last batch short of `least` joins the one before it.
    if out.len() > 1
        && out
            .last()
            .is_some_and(|b| b.iter().map(|p| count(p)).sum::<u64>() < least)
    {
        if let Some(last) = out.pop() {
            if let Some(before) = out.last_mut() {
                before.extend(last);
            }
        }
    }
    out
}

/// Student's t interval of the batches' `estimates` around `centre` (the whole window's
/// figure): `None` with fewer than [`MIN_BATCHES`].
pub(crate) fn spread(centre: f64, estimates: &[f64]) -> Option<(f64, f64)> {
    let k = estimates.len();
    if k < MIN_BATCHES {
        return None;
    }
    let mean = estimates.iter().sum::<f64>() / k as f64;
    let var = estimates.iter().map(|e| (e - mean).powi(2)).sum::<f64>() / (k - 1) as f64;
    let half = t975(k - 1) * (var / k as f64).sqrt();
    Some((centre - half, centre + half))
}

/// The wider of the independent interval and the batches' one; with too few batches to say,
/// the independent low end and no upper end.
pub(crate) fn widest(independent: Estimate, batched: Option<(f64, f64)>) -> Estimate {
    match batched {
        Some((low, high)) => Estimate {
            value: independent.value,
            low: independent.low.min(low.max(0.0)),
            high: independent.high.max(high),
        },
        None => Estimate {
            high: f64::INFINITY,
            ..independent
        },
    }
}

/// The `q` quantile (0–1) of the union of `parts` (a window's consecutive histograms), with an
/// interval that holds on correlated samples; `None` without samples.
pub fn quantile(parts: &[&Histogram<u64>], q: f64) -> Option<Estimate> {
    // Each batch holds enough samples for its own quantile to be more than its maximum.
    let least = (2.0 / (1.0 - q).max(1e-9)).ceil() as u64;
    latency(
        parts,
        least,
        |h| interval::quantile(h, q),
        |h| h.value_at_quantile(q) as f64,
    )
}

/// The mean of the union of `parts`, with an interval that holds on correlated samples.
pub fn mean(parts: &[&Histogram<u64>]) -> Option<Estimate> {
    latency(parts, 1, interval::mean, Histogram::mean)
}

/// A latency figure of the union of `parts`: `whole` gives it with its independent interval,
/// `each` the figure of one batch of at least `least` samples.
fn latency(
    parts: &[&Histogram<u64>],
    least: u64,
    whole: impl Fn(&Histogram<u64>) -> Option<Estimate>,
    each: impl Fn(&Histogram<u64>) -> f64,
) -> Option<Estimate> {
    let merged = merge(parts.iter().copied())?;
    let independent = whole(&merged)?;
    let estimates: Vec<f64> = batches(parts, least, |h| h.len())
        .into_iter()
        .filter_map(|b| merge(b.into_iter().copied()))
        .map(|h| each(&h))
        .collect();
    let mut e = widest(independent, spread(independent.value, &estimates));
    // No latency figure lies below the window's fastest request.
    e.low = e.low.max(merged.lowest_equivalent(merged.min()) as f64);
    Some(e)
}

/// The ratio of failed to finished requests over `parts` (each a batch's `(failed,
/// finished)`), with an interval that holds when failures come in bursts.
pub fn ratio(parts: &[(u64, u64)]) -> Option<Estimate> {
    let (failed, finished) = parts
        .iter()
        .fold((0, 0), |(f, n), (pf, pn)| (f + pf, n + pn));
    let independent = interval::ratio(failed, finished)?;
    let estimates: Vec<f64> = batches(parts, 1, |p| p.1)
        .into_iter()
        .map(|b| {
            let (f, n) = b.iter().fold((0, 0), |(f, n), p| (f + p.0, n + p.1));
            f as f64 / n.max(1) as f64
        })
        .collect();
    let mut e = widest(independent, spread(independent.value, &estimates));
    e.high = e.high.min(1.0);
    Some(e)
}

/// The union of `parts` (histograms of one run); `None` where it holds nothing.
pub(crate) fn merge<'a>(
    parts: impl IntoIterator<Item = &'a Histogram<u64>>,
) -> Option<Histogram<u64>> {
    let mut parts = parts.into_iter();
    let mut merged = parts.next()?.clone();
    for p in parts {
        // Histograms of one run share their bounds: adding cannot fail; if it did, the
        // figure would rest on fewer samples, never on made-up ones.
        let _ = merged.add(p);
    }
    (!merged.is_empty()).then_some(merged)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::capacity::random::Rng;

    /// A window of `n` latencies (ns) cut into ten consecutive intervals.
    fn window(latencies: impl Iterator<Item = f64>, n: usize) -> Vec<Histogram<u64>> {
        let mut parts: Vec<Histogram<u64>> = (0..10)
            .map(|_| store::model::new_histogram(1_000_000_000_000))
            .collect();
        for (i, l) in latencies.take(n).enumerate() {
            parts[i * 10 / n].record(l.max(1.0) as u64).unwrap();
        }
        parts
    }

    /// How often of `windows` the p99 interval holds `truth`, for windows `make` draws.
    fn coverage(windows: usize, truth: f64, mut make: impl FnMut() -> Vec<Histogram<u64>>) -> f64 {
        let mut held = 0;
        for _ in 0..windows {
            let parts = make();
            let refs: Vec<&Histogram<u64>> = parts.iter().collect();
            let e = quantile(&refs, 0.99).unwrap();
            if e.low <= truth && truth <= e.high {
                held += 1;
            }
        }
        held as f64 / windows as f64
    }

    /// Sojourn times (ns) of an M/M/1 queue at utilisation `rho`, service mean 100 µs, from
    /// its stationary state (Lindley's recursion).
    fn mm1(rng: &mut Rng, rho: f64) -> impl Iterator<Item = f64> + '_ {
        let mu = 1.0 / 100_000.0;
        let lambda = rho * mu;
        // The stationary wait: 0 with probability 1 − ρ, else exponential with rate μ − λ.
        let mut wait = if rng.uniform() < rho {
            rng.exponential(mu - lambda)
        } else {
            0.0
        };
        std::iter::from_fn(move || {
            let service = rng.exponential(mu);
            let sojourn = wait + service;
            wait = (sojourn - rng.exponential(lambda)).max(0.0);
            Some(sojourn)
        })
    }

    #[test]
    fn the_p99_interval_holds_the_truth_for_a_queue_near_saturation() {
        let mut rng = Rng::new(0x5eed_cafe);
        for (rho, n) in [(0.5, 50_000), (0.8, 100_000)] {
            // The sojourn of M/M/1 is exponential with rate μ − λ.
            let truth = (100.0f64).ln() / ((1.0 - rho) / 100_000.0);
            let held = coverage(200, truth, || window(mm1(&mut rng, rho), n));
            eprintln!("M/M/1 at {rho}: {:.1} %", held * 100.0);
            assert!(
                (0.90..=0.995).contains(&held),
                "M/M/1 at {rho}: held the true p99 in {:.1} % of windows",
                held * 100.0
            );
            // The order-statistic interval alone, on the same queue, holds it far less often:
            // what this module is for.
            let naive = {
                let mut held = 0;
                for _ in 0..100 {
                    let parts = window(mm1(&mut rng, rho), n);
                    let merged = merge(parts.iter()).unwrap();
                    let e = interval::quantile(&merged, 0.99).unwrap();
                    held += usize::from(e.low <= truth && truth <= e.high);
                }
                held as f64 / 100.0
            };
            eprintln!("M/M/1 at {rho}, independent: {:.1} %", naive * 100.0);
            assert!(naive < held, "rho {rho}: naive {naive}, batched {held}");
        }
    }

    #[test]
    fn the_p99_interval_holds_the_truth_for_an_autoregressive_series() {
        // x(t) = φ·x(t−1) + e(t): stationary normal with sd σ/√(1 − φ²); latency 5 ms + x.
        let (phi, sigma) = (0.95f64, 100_000.0f64);
        let sd = sigma / (1.0 - phi * phi).sqrt();
        let truth = 5_000_000.0 + 2.326_348 * sd;
        let mut rng = Rng::new(0xa5a5_1234);
        let held = coverage(200, truth, || {
            let mut x = sd * rng.normal();
            let series = std::iter::from_fn(|| {
                x = phi * x + sigma * rng.normal();
                Some(5_000_000.0 + x)
            });
            window(series.take(50_000).collect::<Vec<_>>().into_iter(), 50_000)
        });
        eprintln!("AR(1): {:.1} %", held * 100.0);
        assert!(
            (0.90..=0.995).contains(&held),
            "AR(1): held the true p99 in {:.1} % of windows",
            held * 100.0
        );
    }

    #[test]
    fn a_window_whose_queue_builds_gets_a_wide_interval_not_a_point() {
        // Latency rising steadily through the window: every batch's p99 differs.
        let parts = window((0..20_000).map(|i| 1e6 + 50.0 * i as f64), 20_000);
        let refs: Vec<&Histogram<u64>> = parts.iter().collect();
        let e = quantile(&refs, 0.99).unwrap();
        assert!(e.high - e.low > 0.2 * e.value, "{e:?}");
    }

    #[test]
    fn batches_are_consecutive_and_each_holds_enough_samples() {
        let counts: Vec<u64> = vec![50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50];
        let b = batches(&counts, 100, |c| *c);
        assert_eq!(b.len(), 6);
        assert!(b.iter().all(|b| b.iter().copied().sum::<u64>() >= 100));
        // Too few samples for the batches a bound needs: no upper end.
        let few = batches(&counts, 1_000, |c| *c);
        assert_eq!(few.len(), 1);
        let parts = window((0..500).map(|i| 1e6 + i as f64), 500);
        let refs: Vec<&Histogram<u64>> = parts.iter().collect();
        assert!(quantile(&refs, 0.99).unwrap().high.is_infinite());
    }

    #[test]
    fn bursts_of_errors_widen_the_error_ratios_interval() {
        // 1 % errors overall, all of them in one interval of ten.
        let bursty: Vec<(u64, u64)> = (0..10)
            .map(|i| (if i == 3 { 100 } else { 0 }, 1_000))
            .collect();
        let steady: Vec<(u64, u64)> = (0..10).map(|_| (10, 1_000)).collect();
        let (b, s) = (ratio(&bursty).unwrap(), ratio(&steady).unwrap());
        assert!((b.value - 0.01).abs() < 1e-9 && (s.value - 0.01).abs() < 1e-9);
        assert!(b.high > 1.5 * s.high, "bursty {b:?}, steady {s:?}");
    }
}
