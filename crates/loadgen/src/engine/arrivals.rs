//! How an open loop's requests arrive, and how closely the sends followed that.
//!
//! The schedule's count `C(t)` (see `schedule`) turns any rate into a clock that ticks once
//! per request. **Uniform** arrivals sit on its whole numbers: request `i` is due at `C⁻¹(i)`,
//! and worker `k` of `W` (threads × shards) takes every `W`-th of them. **Poisson** arrivals
//! (independent users, as Lancet and mutilate offer) sit where the gaps in count space are
//! exponential with mean 1: time rescaling maps them to a Poisson process of rate `r(t)`,
//! whatever the schedule's shape. Each worker draws its own process, gaps exponential with
//! mean `W` (rate `r(t)/W`), and `W` independent Poisson processes superpose into one of rate
//! `r(t)`. Their count is random, with mean `C(T)`; every request still gets a number unique
//! across workers from the worker's stride.
//!
//! [`GapFit`] checks what was achieved: each worker's actual sends, mapped to count space and
//! divided by `W`, should have exponential gaps of mean 1 again. Their probability transforms
//! `1 − e^(−gap)` are then uniform on [0, 1); binned finely they add up across workers, and
//! the Kolmogorov–Smirnov statistic `D` (the largest distance between the achieved and the
//! intended distribution of gaps) comes from the bins to within one bin's width.

use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use crate::engine::clock::Nanos;
use crate::engine::schedule::Schedule;
use store::summary::ArrivalFit;

/// The arrival process of an open loop: uniform or Poisson.
pub use store::vocabulary::ArrivalProcess as Process;

/// One worker's next request: its number and where it sits in count space.
#[derive(Debug)]
pub(crate) struct Arrivals {
    seq: u64,
    step: u64,
    /// Poisson: the point of count space of the next request, and the worker's generator.
    poisson: Option<(f64, SmallRng)>,
}

/// An exponential draw with mean 1.
fn exponential(rng: &mut SmallRng) -> f64 {
    // `random` is in [0, 1): 1 − it is in (0, 1], whose log is finite.
    -(1.0 - rng.random::<f64>()).ln()
}

impl Arrivals {
    /// A worker's arrivals: its first request number and the step to its next (its stride).
    pub(crate) fn new(process: Process, (first, step): (u64, u64)) -> Self {
        Arrivals::with(process, (first, step), SmallRng::from_rng(&mut rand::rng()))
    }

    /// As [`Arrivals::new`], its Poisson draws from `rng` (a test's seeded one).
    fn with(process: Process, (first, step): (u64, u64), mut rng: SmallRng) -> Self {
        let poisson = (process == Process::Poisson).then(|| {
            let at = step as f64 * exponential(&mut rng);
            (at, rng)
        });
        Arrivals {
            seq: first,
            step,
            poisson,
        }
    }

    /// The next request's number.
    pub(crate) fn seq(&self) -> u64 {
        self.seq
    }

    /// When the next request is due, from the start, or `None` when the schedule has ended.
    pub(crate) fn due(&self, schedule: &Schedule) -> Option<Duration> {
        match &self.poisson {
            None => schedule.due(self.seq),
            Some((at, _)) => schedule.due_at(*at),
        }
    }

    /// On to the worker's next request.
    pub(crate) fn advance(&mut self) {
        self.seq += self.step;
        if let Some((at, rng)) = &mut self.poisson {
            *at += self.step as f64 * exponential(rng);
        }
    }
}

/// Bins of the probability transform: one bin is 0.024 % of the distribution, below the
/// 5 % critical distance of the KS test up to millions of gaps.
const BINS: usize = 4096;

/// One worker's achieved gaps, against exponential.
#[derive(Debug, Clone)]
pub(crate) struct GapFit {
    schedule: Schedule,
    start: Nanos,
    /// Threads × shards: each worker's gaps in count space have mean this.
    workers: f64,
    last: Option<f64>,
    bins: Box<[u64]>,
}

impl GapFit {
    pub(crate) fn new(schedule: Schedule, start: Nanos, workers: u64) -> Self {
        GapFit {
            schedule,
            start,
            workers: workers.max(1) as f64,
            last: None,
            bins: vec![0; BINS].into_boxed_slice(),
        }
    }

    /// A request went out at `sent`.
    pub(crate) fn sent(&mut self, sent: Nanos) {
        let at = self
            .schedule
            .count_at(sent.saturating_sub(self.start) as f64 / 1e9);
        if let Some(last) = self.last.replace(at) {
            let gap = ((at - last) / self.workers).max(0.0);
            let p = 1.0 - (-gap).exp();
            let bin = ((p * BINS as f64) as usize).min(BINS - 1);
            self.bins[bin] += 1;
        }
    }

    /// Adds another worker's gaps.
    pub(crate) fn merge(&mut self, other: &GapFit) {
        for (a, b) in self.bins.iter_mut().zip(other.bins.iter()) {
            *a += b;
        }
    }

    /// The KS distance of all gaps so far from exponential, or `None` with too few to say.
    pub(crate) fn fit(&self) -> Option<ArrivalFit> {
        ks(&self.bins)
    }
}

/// The Kolmogorov–Smirnov statistic of binned probability transforms against uniform: the
/// largest distance at a bin edge (the true one is within a bin's width of it).
fn ks(bins: &[u64]) -> Option<ArrivalFit> {
    let n: u64 = bins.iter().sum();
    if n < 20 {
        return None;
    }
    let mut below = 0u64;
    // The signed difference with the largest size, and the bin edge where it is.
    let (mut d, mut at): (f64, f64) = (0.0, 0.0);
    for (i, count) in bins.iter().enumerate() {
        below += count;
        let edge = (i + 1) as f64 / bins.len() as f64;
        let diff = below as f64 / n as f64 - edge;
        if diff.abs() > d.abs() {
            (d, at) = (diff, edge);
        }
    }
    // The edge's gap in units of the mean gap: F(g) = 1 − e^(−g).
    let gap = if at >= 1.0 {
        f64::INFINITY
    } else {
        -(1.0 - at).ln()
    };
    Some(ArrivalFit::new(d, gap, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn constant(rate: f64, secs: u64) -> Schedule {
        Schedule::constant(rate, Some(Duration::from_secs(secs))).unwrap()
    }

    /// Every due time of `workers` workers' arrivals, merged, each worker's draws seeded (the
    /// same every run: a test of a distribution that fails once in 2,000 runs by chance would
    /// fail a suite now and then).
    fn all_due(process: Process, schedule: &Schedule, workers: u64) -> Vec<f64> {
        let mut out = Vec::new();
        for k in 0..workers {
            let rng = SmallRng::seed_from_u64(0x5eed_0000 + k);
            let mut a = Arrivals::with(process, (k, workers), rng);
            while let Some(due) = a.due(schedule) {
                out.push(due.as_secs_f64());
                a.advance();
            }
        }
        out.sort_by(f64::total_cmp);
        out
    }

    #[test]
    fn uniform_arrivals_are_the_schedules_own() {
        let s = constant(1_000.0, 2);
        let due = all_due(Process::Uniform, &s, 3);
        assert_eq!(due.len(), 2_000);
        assert!((due[1] - due[0] - 0.001).abs() < 1e-9);
    }

    #[test]
    fn poisson_arrivals_superpose_into_the_rate_with_exponential_gaps() {
        // 20,000 req/s for 5 s from 4 workers: 100,000 arrivals expected (sd 316).
        let s = constant(20_000.0, 5);
        let due = all_due(Process::Poisson, &s, 4);
        assert!(
            (due.len() as f64 - 100_000.0).abs() < 1_600.0,
            "{}",
            due.len()
        );
        // The merged gaps are exponential with mean 50 µs: their KS distance is small.
        let mut fit = GapFit::new(s.clone(), 0, 1);
        for t in &due {
            fit.sent((t * 1e9) as Nanos);
        }
        let f = fit.fit().unwrap();
        // 1.5 × the 5 % distance: exceeded by chance once in 2,000 runs.
        assert!(f.ks < 1.5 * f.critical, "{f:?}");
        // About e⁻¹ of the gaps are longer than the mean.
        let longer = due.windows(2).filter(|w| w[1] - w[0] > 50e-6).count() as f64;
        assert!((longer / due.len() as f64 - (-1f64).exp()).abs() < 0.01);
    }

    #[test]
    fn poisson_arrivals_follow_a_ramp() {
        // 0 → 20,000 req/s over 4 s: a quarter of the 40,000 arrivals in the first half.
        let s = Schedule::ramp(0.0, 20_000.0, Duration::from_secs(4)).unwrap();
        let due = all_due(Process::Poisson, &s, 2);
        let first_half = due.iter().filter(|&&t| t < 2.0).count() as f64;
        assert!((due.len() as f64 - 40_000.0).abs() < 800.0, "{}", due.len());
        assert!((first_half / due.len() as f64 - 0.25).abs() < 0.01);
        // Time rescaling: their gaps in count space are exponential, ramp and all.
        let mut fit = GapFit::new(s, 0, 1);
        for t in &due {
            fit.sent((t * 1e9) as Nanos);
        }
        let f = fit.fit().unwrap();
        // 1.5 × the 5 % distance: exceeded by chance once in 2,000 runs.
        assert!(f.ks < 1.5 * f.critical, "{f:?}");
    }

    #[test]
    fn evenly_spaced_or_clumped_sends_are_told_from_exponential() {
        let s = constant(10_000.0, 2);
        let mut even = GapFit::new(s.clone(), 0, 1);
        for i in 0..20_000u64 {
            even.sent(i * 100_000);
        }
        // Every gap has the mean: the distribution is a step at 1 − 1/e.
        let f = even.fit().unwrap();
        assert!((f.ks - (1.0 - (-1f64).exp())).abs() < 0.01, "{f:?}");
        // Too few gaps shorter than the mean, all of them: the largest miss is just below it.
        assert!(
            f.excess < 0.0 && (f.at_mean_gaps - 1.0).abs() < 0.01,
            "{f:?}"
        );
        // Poisson arrivals released on a 1 ms grid: ten at a time, 1 ms apart.
        let mut clumped = GapFit::new(s, 0, 1);
        let mut a = Arrivals::new(Process::Poisson, (0, 1));
        let schedule = constant(10_000.0, 2);
        while let Some(due) = a.due(&schedule) {
            let t = due.as_nanos() as u64;
            clumped.sent(t.div_ceil(1_000_000) * 1_000_000);
            a.advance();
        }
        let f = clumped.fit().unwrap();
        assert!(f.ks > 0.5 && f.ks > 10.0 * f.critical, "{f:?}");
        // Too many gaps of zero.
        assert!(f.excess > 0.5, "{f:?}");
    }

    #[test]
    fn gaps_of_several_workers_add_up() {
        let s = constant(10_000.0, 2);
        let mut a = GapFit::new(s.clone(), 0, 2);
        let mut b = GapFit::new(s, 0, 2);
        for i in 0..100u64 {
            a.sent(i * 200_000);
            b.sent(i * 200_000 + 100_000);
        }
        a.merge(&b);
        assert_eq!(a.fit().unwrap().gaps, 198);
    }
}
