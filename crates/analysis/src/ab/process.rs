//! The spread between processes of one build, for a capacity gate that keeps one process per
//! build through its rounds.
//!
//! **Why.** A comparison of searches runs every build as one process kept up through all its
//! rounds, so the rounds' spread holds what the host did from round to round but not how two
//! processes of one build differ (where the allocator put things, which core the scheduler
//! chose, a JIT's choices): 0.5–1 % of capacity here. The candidate's interval leaves it out,
//! and at the band's edge a gate then calls a regression more often than it says. The A/A
//! control holds exactly that difference: two processes of the baseline's build.
//!
//! **The estimate.** Each sitting's control reads ln r = the difference of two processes'
//! ln capacities plus its rounds' noise, so E[(ln r)²] = s² + 2σ², where s is the control's
//! standard error (from its interval) and σ² the variance of one process's ln capacity about
//! its build's. Pooled over the experiment's sittings (its past gates in the store, and this
//! one's), each weighted by its precision 1 ÷ s²: DerSimonian and Laird's moment estimator,
//! with the A/A's mean known to be 0 ([`Between::of_logs`]), from [`MIN_SITTINGS`] sittings.
//!
//! **Its use.** The candidate's and the control's intervals are widened to a standard error of
//! √(s² + 2σ²) about their centres: the candidate's because its two processes differ by that
//! much beside any change, the control's because two processes of one build do, so the control
//! calibrates (it excludes 1 only where identical builds differ beyond what processes do)
//! instead of vetoing. The proof is [`tests`]: simulated sittings at the band's edge.

use super::functions::t_quantile;
use super::Change;

/// The spread is the one a comparison of searches reads from its A/A comparisons: one type,
/// one estimate.
pub use crate::capacity::compare::{Between, MIN_SITTINGS};

impl Change {
    /// The standard error of the mean log-ratio behind the interval (Student's t on the
    /// rounds less one).
    fn log_se(&self) -> f64 {
        self.log_se_at(self.t975())
    }

    /// Student's t at 97.5 % on the rounds less one.
    fn t975(&self) -> f64 {
        t_quantile(0.975, self.rounds.saturating_sub(1).max(1) as f64)
    }

    fn log_se_at(&self, t: f64) -> f64 {
        (self.high / self.low).ln().abs() / (2.0 * t)
    }

    /// The interval about the same centre with a standard error of √(se² + `add`) in ln.
    fn with_variance(&self, add: f64) -> Change {
        let t = self.t975();
        let se = self.log_se_at(t);
        let wider = (se * se + add).max(0.0).sqrt();
        let centre = (self.low * self.high).sqrt();
        Change::of_interval(
            self.ratio,
            centre * (-t * wider).exp(),
            centre * (t * wider).exp(),
            self.rounds,
        )
    }
}

impl Between {
    /// The spread read from `controls`, each sitting's A/A control as measured (before any
    /// widening): `None` with fewer than [`MIN_SITTINGS`].
    pub fn read(controls: &[Change]) -> Option<Between> {
        let logs: Vec<(f64, f64, f64)> = controls
            .iter()
            .map(|c| {
                let df = c.rounds.saturating_sub(1).max(1) as f64;
                (c.ratio.ln(), c.log_se(), df)
            })
            .collect();
        Between::of_logs(&logs)
    }

    /// `change` (a ratio of two builds' processes) widened by two processes' spread.
    pub fn widen(&self, change: &Change) -> Change {
        change.with_variance(2.0 * self.sd * self.sd)
    }

    /// `change` as measured, from its interval widened by [`Between::widen`].
    pub fn narrow(&self, change: &Change) -> Change {
        change.with_variance(-2.0 * self.sd * self.sd)
    }

    /// "processes of one build differ by 0.7 % (read from 8 sittings' A/A controls), allowed
    /// for in both intervals".
    pub fn text(&self) -> String {
        format!(
            "processes of one build differ by {:.2} % (its sd, read from {} sittings' A/A controls), allowed for in the candidate's and the control's intervals",
            self.sd * 100.0,
            self.sittings
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Change, Verdict};
    use super::*;
    use crate::capacity::random::Rng;

    /// One simulated sitting's changes: the candidate at `truth` × its processes' difference,
    /// the control at its own, each read over `rounds` rounds with a standard error `se` of
    /// ln (its interval Student's t, its spread estimated from the rounds).
    fn sitting(rng: &mut Rng, truth: f64, sd: f64, se: f64, rounds: usize) -> (Change, Change) {
        let base = sd * rng.normal();
        let cand = truth.ln() + sd * rng.normal() - base;
        let aa = sd * rng.normal() - base;
        let df = (rounds - 1) as f64;
        let t = t_quantile(0.975, df);
        let read = |rng: &mut Rng, centre: f64| {
            // The rounds' mean and their spread's estimate (χ² on df).
            let mean = centre + se * rng.normal();
            let chi2: f64 = (0..rounds - 1).map(|_| rng.normal().powi(2)).sum();
            let s = se * (chi2 / df).sqrt();
            Change::of_interval(
                mean.exp(),
                (mean - t * s).exp(),
                (mean + t * s).exp(),
                rounds,
            )
        };
        (read(rng, cand), read(rng, aa))
    }

    /// At the band's edge (a candidate 0.95× the baseline, 5 % allowed), processes differing by
    /// 1 % and 16 rounds of 1 % each: read without the spread between processes the gate calls
    /// a regression in about one in twelve; with it read from the sittings before, at most one
    /// in twenty. An identical build's control then excludes 1 at its own 5 % (the control
    /// calibrates), where as read it excluded 1 wherever two processes differed.
    #[test]
    fn the_spread_between_processes_read_from_past_controls_keeps_the_edge_at_its_rate() {
        let mut rng = Rng::new(77);
        let (sd, se, rounds, allowed) = (0.01, 0.01, 16, 0.05);
        let sittings = 2000;
        let past = 8;
        let (mut plain, mut with, mut sds) = (0, 0, Vec::new());
        for _ in 0..sittings {
            let history: Vec<Change> = (0..past)
                .map(|_| sitting(&mut rng, 1.0, sd, se, rounds).1)
                .collect();
            let (cand, aa) = sitting(&mut rng, 1.0 - allowed, sd, se, rounds);
            let mut controls = history;
            controls.push(aa.clone());
            let between = Between::read(&controls).unwrap();
            sds.push(between.sd);
            let regression = |v: &Verdict| matches!(v, Verdict::Regression);
            plain += usize::from(regression(&Verdict::of_capacity(&cand, allowed, Some(&aa))));
            with += usize::from(regression(&Verdict::of_capacity(
                &between.widen(&cand),
                allowed,
                Some(&between.widen(&aa)),
            )));
        }
        // An identical build, judged the same two ways: how often it passes, and how often its
        // control excludes 1 (identical builds read apart: the control's veto).
        let (mut passed, mut passed_with, mut apart, mut apart_with) = (0, 0, 0, 0);
        let passes = |v: &Verdict| {
            matches!(
                v,
                Verdict::NoChange | Verdict::Within | Verdict::Improvement
            )
        };
        for _ in 0..sittings {
            let history: Vec<Change> = (0..past)
                .map(|_| sitting(&mut rng, 1.0, sd, se, rounds).1)
                .collect();
            let (cand, aa) = sitting(&mut rng, 1.0, sd, se, rounds);
            let mut controls = history;
            controls.push(aa.clone());
            let between = Between::read(&controls).unwrap();
            let wide = between.widen(&aa);
            passed += usize::from(passes(&Verdict::of_capacity(&cand, allowed, Some(&aa))));
            passed_with += usize::from(passes(&Verdict::of_capacity(
                &between.widen(&cand),
                allowed,
                Some(&wide),
            )));
            apart += usize::from(aa.differs());
            apart_with += usize::from(wide.differs());
        }
        eprintln!(
            "an identical build: passed {passed} of {sittings} as read (its control apart in \
             {apart}), {passed_with} with the spread (apart in {apart_with})"
        );
        // The control excludes 1 at about its 5 %, not at every process difference.
        assert!(
            apart_with as f64 <= 0.07 * sittings as f64,
            "control apart {apart_with}"
        );
        sds.sort_by(f64::total_cmp);
        let median = sds[sds.len() / 2];
        eprintln!(
            "at the edge: exit 4 in {plain} of {sittings} as read, {with} with the spread between \
             processes (its sd read: median {:.3} %, truth 1 %)",
            median * 100.0
        );
        assert!(plain as f64 >= 0.06 * sittings as f64, "as read {plain}");
        assert!(with as f64 <= 0.05 * sittings as f64, "with it {with}");
    }

    /// Widening and narrowing by the same spread give back the interval measured.
    #[test]
    fn widening_is_undone_by_narrowing() {
        let c = Change::of_interval(0.97, 0.95, 0.99, 16);
        let b = Between {
            sd: 0.008,
            sittings: 5,
            effective: 5.0,
        };
        let w = b.widen(&c);
        assert!(w.low < c.low && w.high > c.high);
        let back = b.narrow(&w);
        assert!((back.low - c.low).abs() < 1e-9 && (back.high - c.high).abs() < 1e-9);
        assert!(Between::read(&[c.clone(), c.clone()]).is_none());
    }
}
