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
//! instead of vetoing. Each is read at Student's t on Satterthwaite's degrees of freedom, s² on
//! the rounds less one and 2σ² on its own ([`Between::effective`]), as a comparison's ratios
//! are ([`Between::widening`], the one function both call): σ² is itself read from a few
//! sittings, and taken as known (t on the rounds less one) the interval was too narrow where
//! they were few or read loosely. The widened change carries those degrees of freedom
//! ([`Change::df`]), so [`Between::narrow`] reads it back exactly to the interval as measured.
//! The proof is [`tests`]: simulated sittings at the band's edge.

use super::functions::t_quantile;
use super::{Change, CONFIDENCE};

/// The spread is the one a comparison of searches reads from its A/A comparisons: one type,
/// one estimate.
pub use crate::capacity::compare::{Between, MIN_SITTINGS};

/// Student's t at 97.5 % (a 95 % interval's) on `df` degrees of freedom.
fn t975(df: f64) -> f64 {
    t_quantile(0.5 + CONFIDENCE / 2.0, df)
}

impl Change {
    /// The degrees of freedom of its rounds' own error: the rounds less one.
    fn own_df(&self) -> f64 {
        self.rounds.saturating_sub(1).max(1) as f64
    }

    /// The standard error of the mean log-ratio behind the interval, read at Student's t on
    /// the degrees of freedom its interval was read at ([`Change::df`]; the rounds less one
    /// where it has none).
    fn log_se(&self) -> f64 {
        let t = t975(self.df.unwrap_or_else(|| self.own_df()));
        (self.high / self.low).ln().abs() / (2.0 * t)
    }

    /// The interval about the same centre ± `half` in ln, read at `df` (the rounds less one
    /// where `None`).
    fn about_centre(&self, half: f64, df: Option<f64>) -> Change {
        let centre = (self.low * self.high).sqrt();
        Change::of_interval_at(
            self.ratio,
            centre * (-half).exp(),
            centre * half.exp(),
            self.rounds,
            df,
        )
    }
}

impl Between {
    /// The spread read from `controls`, each sitting's A/A control as measured (before any
    /// widening): `None` with fewer than [`MIN_SITTINGS`].
    pub fn read(controls: &[Change]) -> Option<Between> {
        let logs: Vec<(f64, f64, f64)> = controls
            .iter()
            .map(|c| (c.ratio.ln(), c.log_se(), c.own_df()))
            .collect();
        Between::of_logs(&logs)
    }

    /// `change` (a ratio of two builds' processes, as measured) widened by two processes'
    /// spread: a standard error of √(se² + 2σ²) in ln about its centre, read at Student's t on
    /// Satterthwaite's degrees of freedom ([`Between::widening`]), which it carries
    /// ([`Change::df`]). As it was where no spread was read (σ = 0).
    pub fn widen(&self, change: &Change) -> Change {
        match self.widening(change.log_se(), change.own_df(), CONFIDENCE) {
            Some(widened) => change.about_centre(widened.t * widened.se, Some(widened.df)),
            None => change.clone(),
        }
    }

    /// `change` as measured, from its interval widened by [`Between::widen`]: its standard
    /// error read at the t it was widened at (its [`Change::df`]; the rounds less one in gates
    /// kept before it carried one, which were widened at that t), less 2σ², and read again at
    /// t on its rounds less one.
    pub fn narrow(&self, change: &Change) -> Change {
        // What `widen` left as it was (no spread read) is given back as it is.
        if self.sd <= 0.0 || self.sittings == 0 {
            return change.clone();
        }
        let wide = change.log_se();
        let se = (wide * wide - 2.0 * self.sd * self.sd).max(0.0).sqrt();
        change.about_centre(t975(change.own_df()) * se, None)
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

    /// At the band's edge as above, but the spread read from the fewest sittings it is read
    /// from ([`MIN_SITTINGS`]: two past controls and this one's), processes differing by 2 %
    /// and 16 rounds of 1 % each: 2σ² then rests on about 2 degrees of freedom (its median
    /// `effective`). Taken as known (Student's t on the rounds less one, as the gate read it
    /// before) the gate called a regression in about 6 % of sittings (124 of 2000 in a replica
    /// of this simulation); at t on Satterthwaite's degrees of freedom, in about 2 % (44).
    #[test]
    fn a_spread_read_from_the_fewest_sittings_keeps_the_edge_at_its_rate() {
        let mut rng = Rng::new(78);
        let (sd, se, rounds, allowed) = (0.02, 0.01, 16, 0.05);
        let sittings = 2000;
        // The gate's widening before: σ² taken as known, t on the rounds less one.
        let as_known = |b: &Between, c: &Change| {
            let se = c.log_se();
            c.about_centre(
                t975(c.own_df()) * (se * se + 2.0 * b.sd * b.sd).sqrt(),
                None,
            )
        };
        let regression = |v: &Verdict| matches!(v, Verdict::Regression);
        let (mut plain, mut known, mut with, mut effective) = (0, 0, 0, Vec::new());
        for _ in 0..sittings {
            let mut controls: Vec<Change> = (1..MIN_SITTINGS)
                .map(|_| sitting(&mut rng, 1.0, sd, se, rounds).1)
                .collect();
            let (cand, aa) = sitting(&mut rng, 1.0 - allowed, sd, se, rounds);
            controls.push(aa.clone());
            let between = Between::read(&controls).unwrap();
            assert_eq!(between.sittings, MIN_SITTINGS);
            effective.push(between.effective);
            plain += usize::from(regression(&Verdict::of_capacity(&cand, allowed, Some(&aa))));
            known += usize::from(regression(&Verdict::of_capacity(
                &as_known(&between, &cand),
                allowed,
                Some(&as_known(&between, &aa)),
            )));
            with += usize::from(regression(&Verdict::of_capacity(
                &between.widen(&cand),
                allowed,
                Some(&between.widen(&aa)),
            )));
        }
        effective.sort_by(f64::total_cmp);
        eprintln!(
            "at the edge, the spread read from {MIN_SITTINGS} sittings (its df: median {:.2}): \
             exit 4 in {plain} of {sittings} as read, {known} with σ² taken as known (t on the \
             rounds less one), {with} at t on Satterthwaite's df",
            effective[sittings / 2]
        );
        assert!(
            with as f64 <= 0.05 * sittings as f64,
            "Satterthwaite's t: {with} of {sittings} (σ² taken as known: {known})"
        );
        assert!(
            with < known,
            "Satterthwaite's t {with}, σ² as known {known}"
        );
    }

    /// Processes differing by 0.8 %, read from five sittings.
    fn read_from_five() -> Between {
        Between {
            sd: 0.008,
            sittings: 5,
            effective: 5.0,
        }
    }

    /// Widening and narrowing by the same spread give back the interval measured.
    #[test]
    fn widening_is_undone_by_narrowing() {
        let c = Change::of_interval(0.97, 0.95, 0.99, 16);
        let b = read_from_five();
        let w = b.widen(&c);
        assert!(w.low < c.low && w.high > c.high);
        let back = b.narrow(&w);
        assert!((back.low - c.low).abs() < 1e-9 && (back.high - c.high).abs() < 1e-9);
        assert!(Between::read(&[c.clone(), c.clone()]).is_none());
        // The widened interval is read at Satterthwaite's t, which it carries, wider than the
        // rounds' own (σ² read from five sittings is not known); read back, it has none.
        let df = w.df.unwrap();
        assert!(df > 1.0 && df < 15.0 + 5.0, "{w:?}");
        let se = c.log_se();
        let as_known = t975(15.0) * (se * se + 2.0 * b.sd * b.sd).sqrt();
        assert!(
            (w.high / w.low).ln() / 2.0 > as_known * (1.0 + 1e-6),
            "{w:?}"
        );
        assert_eq!(back.df, None);
        // No spread read: as it was.
        let none = Between {
            sd: 0.0,
            sittings: 5,
            effective: 0.0,
        };
        assert_eq!(none.widen(&c), c);
    }

    /// A gate kept before a widened change carried its degrees of freedom was widened at t on
    /// its rounds less one: it reads so (no `df`), and narrows back to the interval measured.
    #[test]
    fn a_change_widened_before_it_carried_its_df_narrows_back() {
        let c = Change::of_interval(0.97, 0.95, 0.99, 16);
        let b = read_from_five();
        let se = c.log_se();
        let kept = c.about_centre(t975(15.0) * (se * se + 2.0 * b.sd * b.sd).sqrt(), None);
        let text = serde_json::to_string(&kept).unwrap();
        assert!(!text.contains("df"), "{text}");
        let read: Change = serde_json::from_str(&text).unwrap();
        assert_eq!(read.df, None);
        let back = b.narrow(&read);
        assert!((back.low - c.low).abs() < 1e-9 && (back.high - c.high).abs() < 1e-9);
        // A widened change keeps its df through the store.
        let w = b.widen(&c);
        let again: Change = serde_json::from_str(&serde_json::to_string(&w).unwrap()).unwrap();
        assert_eq!(again.df, w.df);
        let back = b.narrow(&again);
        assert!((back.low - c.low).abs() < 1e-9 && (back.high - c.high).abs() < 1e-9);
    }
}
