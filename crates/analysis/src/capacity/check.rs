//! The calibration check of a search's figure: does the server pass as often as the search's
//! figure, with its interval, says it will?
//!
//! After the search, N blocks of one-step searches are run at five rates fixed before the first
//! block runs (pre-registered): C_0.75, C_0.5 and C_0.25 of the search's fitted curve, and the
//! two ends of C_0.5's 95 % interval. Each block runs them in a seeded random order, every step
//! with the search's window and warm-up and the same drain after a step that did not pass.
//! Where the curve is the server's, the three pass about 0.75 N, 0.5 N and 0.25 N times; at
//! the interval's low end a server whose C_0.5 lies in the interval passes at least half the
//! time, at its high end at most half. The search claims its figure only within its interval,
//! so each level's range allows every pass probability the interval allows there
//! ([`Claim::allowed`]: the fitted curve slid from the interval's low end to its high): the
//! check tests the claim the search made, and a figure whose interval holds the truth fails
//! it at most 5 % of the time. The three levels of the curve test its shape at a knee wider
//! than the interval; the interval's ends test the interval at a knee sharper than it. Six
//! tests, each at 5 % ÷ 6 (Bonferroni):
//!
//! - each level's pass count against its exact binomial range ([`range`]) at the ends of what
//!   the interval allows;
//! - the second half of the blocks against the first, the five levels pooled as strata
//!   (Cochran–Mantel–Haenszel, [`halves`]): passes that fell (or rose) over the check are a
//!   host or a server that moved, which the figure cannot hold.
//!
//! A search run at once after the check ([`Again`]) voids it when its 95 % interval and the
//! first search's exclude each other: the sitting moved under the check.
//!
//! What it cannot say: the slope is the fit's (its own uncertainty not allowed for), and a few
//! blocks allow nearly any count (below about 20 blocks no count fails a level: the outcome
//! says so).

use serde::{Deserialize, Serialize};

/// The share of a calibrated figure's checks that fail, at most.
pub const FALSE_FAIL: f64 = 0.05;

/// How many tests the check makes (five ranges, the halves): each at [`FALSE_FAIL`] ÷ this.
pub const TESTS: f64 = 6.0;

/// The levels checked, lowest rate first: C_0.5's interval's low end, C_0.75, C_0.5, C_0.25,
/// the interval's high end.
pub const LEVELS: usize = 5;

/// The probabilities of the curve's three levels.
const CURVE: [f64; 3] = [0.75, 0.5, 0.25];

/// The most blocks a check runs.
pub const MAX_BLOCKS: u32 = 200;

/// One step of the check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckStep {
    /// The block it ran in, from 1.
    pub block: u32,
    /// The level whose rate it ran at (0 to [`LEVELS`] − 1, lowest rate first).
    pub level: u8,
    pub rate: f64,
    pub pass: bool,
    /// Whether the generator drove the rate validly: a step it could not is left out.
    pub valid: bool,
    /// The run it is kept as.
    pub run_id: Option<String>,
}

/// What a search claims, which its check tests: C_0.5 with its 95 % interval, on a curve of
/// the fitted slope.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Claim {
    /// C_0.5 and its interval, req/s.
    pub rate: f64,
    pub low: f64,
    pub high: f64,
    /// The curve's slope β in ln rate ([`super::fit::Fitted::slope`]).
    pub slope: f64,
}

fn logit(p: f64) -> f64 {
    (p / (1.0 - p)).ln()
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

impl Claim {
    /// The claim of a fit of C_0.5; `None` without both ends or a finite slope.
    pub fn of(f: &super::fit::Fitted) -> Option<Claim> {
        let (low, high, slope) = (f.low?, f.high?, f.slope?);
        ((f.p - 0.5).abs() < 1e-9 && slope.is_finite() && slope > 0.0 && low > 0.0).then_some(
            Claim {
                rate: f.rate,
                low,
                high,
                slope,
            },
        )
    }

    /// C_q on the fitted curve.
    pub fn rate(&self, q: f64) -> f64 {
        self.rate * (-logit(q) / self.slope).exp()
    }

    /// Level `i`'s name and rate (lowest rate first); `None` past the last.
    pub fn level(&self, i: usize) -> Option<(String, f64)> {
        match i {
            0 => Some(("C_0.5's low end".into(), self.low)),
            1..=3 => {
                let q = CURVE.get(i - 1)?;
                Some((format!("C_{q}"), self.rate(*q)))
            }
            4 => Some(("C_0.5's high end".into(), self.high)),
            _ => None,
        }
    }

    /// The pass probability the fitted curve gives `rate`.
    pub fn fitted(&self, rate: f64) -> f64 {
        sigmoid(self.slope * (self.rate / rate).ln())
    }

    /// The pass probabilities at `rate` that the interval allows: the curve with its C_0.5 at
    /// the interval's low end, then at its high end.
    pub fn allowed(&self, rate: f64) -> (f64, f64) {
        let at = |c50: f64| sigmoid(self.slope * (c50 / rate).ln());
        (at(self.low), at(self.high))
    }
}

/// One level of the check: its rate and how often it passed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Level {
    /// "C_0.75", "C_0.5's low end", …
    pub name: String,
    /// The pass probability the search's fit gives this rate.
    pub p: f64,
    pub rate: f64,
    /// The pass probabilities the figure's interval allows at this rate.
    pub allowed: (f64, f64),
    pub runs: u32,
    pub passes: u32,
    /// The range the passes of a figure whose interval holds lie in with probability at least
    /// 1 − [`FALSE_FAIL`] ÷ [`TESTS`]: the exact binomial range's low end at the lowest
    /// probability allowed, its high end at the highest.
    pub low: u32,
    pub high: u32,
}

impl Level {
    /// −1: fewer passes than the range holds (the server passes less often there than the
    /// figure says), +1: more, 0: within.
    pub fn side(&self) -> i8 {
        if self.passes < self.low {
            -1
        } else if self.passes > self.high {
            1
        } else {
            0
        }
    }
}

/// The passes of the blocks' second half against their first, the levels as strata.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Halves {
    /// Passes and runs in each half, all levels together.
    pub first: (u32, u32),
    pub second: (u32, u32),
    /// The Cochran–Mantel–Haenszel statistic (signed: negative when passes fell), continuity
    /// corrected, standard normal where nothing moved.
    pub z: f64,
}

impl Halves {
    /// Whether the halves differ at [`FALSE_FAIL`] ÷ [`TESTS`], two-sided.
    pub fn differ(&self) -> bool {
        self.z.abs() > Z_CHECK
    }
}

/// The search run again after the check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Again {
    pub id: String,
    pub rate: Option<f64>,
    pub low: Option<f64>,
    pub high: Option<f64>,
}

/// What the check found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Every count within its range, the halves alike, the second search agreeing.
    Held,
    /// Fewer passes than the fit says at some level, more at none: the figure reads high.
    High,
    /// More passes at some level, fewer at none: the figure reads low.
    Low,
    /// Fewer at one level, more at another: the curve's shape is off (its slope).
    Shape,
    /// Passes fell (or rose) from the first half of the blocks to the second: the server or
    /// its host moved during the check.
    Moved,
    /// The search run again excludes the first one's interval: the sitting moved.
    Void,
    /// The check did not finish its blocks (stopped, or the generator could not drive a level).
    Unfinished,
    /// Every level's range held every count it could have: too few blocks to tell.
    Few,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Held => "held",
            Outcome::High => "figure high",
            Outcome::Low => "figure low",
            Outcome::Shape => "curve off",
            Outcome::Moved => "moved",
            Outcome::Void => "void",
            Outcome::Unfinished => "unfinished",
            Outcome::Few => "too few blocks",
        }
    }
}

/// A search's calibration check, as kept with it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// What it tests.
    pub claim: Claim,
    /// The blocks asked for.
    pub blocks: u32,
    /// Seeds each block's order.
    pub seed: u64,
    pub levels: Vec<Level>,
    pub halves: Option<Halves>,
    pub steps: Vec<CheckStep>,
    pub again: Option<Again>,
    pub outcome: Outcome,
}

/// Two-sided normal quantile at 1 − 0.0125 / 2.
const Z_CHECK: f64 = 2.497_705_474_412_87;

/// ln of n choose k.
fn ln_choose(n: u32, k: u32) -> f64 {
    let ln_fact = |m: u32| (1..=m).map(|i| f64::from(i).ln()).sum::<f64>();
    ln_fact(n) - ln_fact(k) - ln_fact(n - k)
}

/// The exact central range of Binomial(n, p) at level 1 − `alpha`: `low` the least count with
/// P(X < low) ≤ α/2 < P(X ≤ low), `high` the greatest with P(X > high) ≤ α/2 < P(X ≥ high).
pub fn range(n: u32, p: f64, alpha: f64) -> (u32, u32) {
    let pmf: Vec<f64> = (0..=n)
        .map(|k| {
            (ln_choose(n, k) + f64::from(k) * p.ln() + f64::from(n - k) * (1.0 - p).ln()).exp()
        })
        .collect();
    let mut below = 0.0;
    let mut low = 0;
    for (k, m) in pmf.iter().enumerate() {
        if below + m > alpha / 2.0 {
            low = k as u32;
            break;
        }
        below += m;
    }
    let mut above = 0.0;
    let mut high = n;
    for (k, m) in pmf.iter().enumerate().rev() {
        if above + m > alpha / 2.0 {
            high = k as u32;
            break;
        }
        above += m;
    }
    (low, high)
}

/// The levels' rates (rounded to a request a second, as run) and their counts from the
/// check's valid steps, each with its range.
pub fn levels(claim: &Claim, steps: &[CheckStep]) -> Vec<Level> {
    (0..LEVELS)
        .filter_map(|i| claim.level(i).map(|l| (i, l)))
        .map(|(i, (name, rate))| {
            let rate = rate.round().max(1.0);
            let at: Vec<&CheckStep> = steps
                .iter()
                .filter(|s| s.valid && usize::from(s.level) == i)
                .collect();
            let runs = at.len() as u32;
            let passes = at.iter().filter(|s| s.pass).count() as u32;
            let allowed = claim.allowed(rate);
            let alpha = FALSE_FAIL / TESTS;
            Level {
                name,
                p: claim.fitted(rate),
                rate,
                allowed,
                runs,
                passes,
                low: range(runs, allowed.0, alpha).0,
                high: range(runs, allowed.1, alpha).1,
            }
        })
        .collect()
}

/// The second half of `blocks` blocks against the first, each level a stratum; `None` with
/// fewer than four blocks.
pub fn halves(steps: &[CheckStep], blocks: u32) -> Option<Halves> {
    if blocks < 4 {
        return None;
    }
    let split = blocks / 2;
    let (mut first, mut second) = ((0u32, 0u32), (0u32, 0u32));
    let (mut diff, mut var) = (0.0, 0.0);
    for i in 0..LEVELS {
        let at = steps
            .iter()
            .filter(|s| s.valid && usize::from(s.level) == i && s.block <= blocks);
        let (mut a, mut n1, mut t, mut n) = (0.0, 0.0, 0.0, 0.0);
        for s in at {
            let pass = f64::from(u8::from(s.pass));
            n += 1.0;
            t += pass;
            if s.block > split {
                a += pass;
                n1 += 1.0;
                second.0 += u32::from(s.pass);
                second.1 += 1;
            } else {
                first.0 += u32::from(s.pass);
                first.1 += 1;
            }
        }
        if n < 2.0 {
            continue;
        }
        // The second half's passes, hypergeometric given the level's total.
        diff += a - n1 * t / n;
        var += n1 * (n - n1) * t * (n - t) / (n * n * (n - 1.0));
    }
    let z = if var > 0.0 {
        diff.signum() * (diff.abs() - 0.5).max(0.0) / var.sqrt()
    } else {
        0.0
    };
    Some(Halves { first, second, z })
}

/// Whether two intervals exclude each other (one lies wholly above the other).
fn apart(a: (Option<f64>, Option<f64>), b: (Option<f64>, Option<f64>)) -> bool {
    matches!((a.1, b.0), (Some(high), Some(low)) if high < low)
        || matches!((b.1, a.0), (Some(high), Some(low)) if high < low)
}

/// The outcome of a check of a figure whose interval is `first`, from its levels, halves and
/// the search run again; `finished` when every block ran.
pub fn outcome(
    levels: &[Level],
    halves: Option<&Halves>,
    first: (Option<f64>, Option<f64>),
    again: Option<&Again>,
    finished: bool,
) -> Outcome {
    if again.is_some_and(|a| apart(first, (a.low, a.high))) {
        return Outcome::Void;
    }
    if !finished || levels.iter().any(|l| l.runs == 0) {
        return Outcome::Unfinished;
    }
    if halves.is_some_and(Halves::differ) {
        return Outcome::Moved;
    }
    if levels.iter().all(|l| l.low == 0 && l.high == l.runs) {
        return Outcome::Few;
    }
    let low = levels.iter().any(|l| l.side() < 0);
    let high = levels.iter().any(|l| l.side() > 0);
    match (low, high) {
        (false, false) => Outcome::Held,
        (true, false) => Outcome::High,
        (false, true) => Outcome::Low,
        (true, true) => Outcome::Shape,
    }
}

impl Outcome {
    /// What the outcome means, in a sentence.
    pub fn said(self) -> &'static str {
        match self {
            Outcome::Held => "held: the server passed as often as the figure and its interval allow at every level",
            Outcome::High => "failed, the figure reads high: the server passed less often than its interval allows",
            Outcome::Low => "failed, the figure reads low: the server passed more often than its interval allows",
            Outcome::Shape => "failed, the curve is off: fewer passes than allowed at one level and more at another (the knee is wider or sharper than fitted)",
            Outcome::Moved => "void, the sitting moved: passes changed from the first half of the blocks to the second",
            Outcome::Void => "void, the sitting moved: the search run again after the check excludes the first one's interval",
            Outcome::Unfinished => "unfinished: not every block ran",
            Outcome::Few => "could not tell: at every level its range holds any count of so few blocks (30 or more can)",
        }
    }
}

impl Check {
    /// The check in words: its verdict, then each level's count against its range.
    pub fn text(&self) -> String {
        let runs = self.levels.first().map_or(0, |l| l.runs);
        let head = self.outcome.said();
        let mut out = format!(
            "Calibration check ({} blocks of one step at C_0.5's interval's ends and at C_0.75, C_0.5 and C_0.25 of its curve, each block in a seeded random order; a figure whose interval holds fails it at most {:.0} % of the time): {head}.",
            runs.max(self.blocks),
            FALSE_FAIL * 100.0
        );
        for l in &self.levels {
            out.push_str(&format!(
                "\n  {} = {:.0} req/s (fitted pass probability {:.2}) passed {} of {} (range {}–{}, for a pass probability of {:.2}–{:.2}){}",
                l.name,
                l.rate,
                l.p,
                l.passes,
                l.runs,
                l.low,
                l.high,
                l.allowed.0,
                l.allowed.1,
                match l.side() {
                    -1 => ", fewer",
                    1 => ", more",
                    _ => "",
                }
            ));
        }
        if let Some(h) = &self.halves {
            out.push_str(&format!(
                "\n  halves: {} of {} passed in the first, {} of {} in the second (z = {:+.2}{})",
                h.first.0,
                h.first.1,
                h.second.0,
                h.second.1,
                h.z,
                if h.differ() { ", moved" } else { ", alike" }
            ));
        }
        if let Some(a) = &self.again {
            let figure = match (a.rate, a.low, a.high) {
                (Some(r), Some(l), Some(h)) => {
                    format!("{r:.0} req/s (95 % interval {l:.0}–{h:.0})")
                }
                (Some(r), _, _) => format!("{r:.0} req/s (no 95 % interval)"),
                _ => "no figure".into(),
            };
            out.push_str(&format!("\n  searched again ({}): {figure}", a.id));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capacity::random::Rng;

    #[test]
    fn a_range_holds_its_share_of_draws_and_no_more_than_needed() {
        // Binomial(30, 0.5) at 95 %: 10–20 (P(X ≤ 9) = 0.021, P(X ≤ 10) = 0.049).
        assert_eq!(range(30, 0.5, 0.05), (10, 20));
        // At 0.75: P(X ≤ 17) = 0.022, so 18; the top is 27 (P(X ≥ 28) = 0.011, ≥ 27: 0.037).
        assert_eq!(range(30, 0.75, 0.05), (18, 27));
        assert_eq!(range(0, 0.5, 0.05), (0, 0));
        // Simulated: a calibrated count falls outside its 1.25 % range at most 1.25 % of the
        // time.
        let mut rng = Rng::new(5);
        let (lo, hi) = range(20, 0.25, 0.0125);
        let outside = (0..20_000)
            .filter(|_| {
                let k = (0..20).filter(|_| rng.uniform() < 0.25).count() as u32;
                k < lo || k > hi
            })
            .count();
        assert!(outside <= 250, "{outside} of 20,000");
    }

    /// A sharp claim (±1 % at a knee 10 % wide), so that the levels are nearly the fit's.
    const CLAIM: Claim = Claim {
        rate: 1000.0,
        low: 990.0,
        high: 1010.0,
        slope: 43.9,
    };

    fn steps(rng: &mut Rng, blocks: u32, pass: &impl Fn(f64, u32) -> f64) -> Vec<CheckStep> {
        (1..=blocks)
            .flat_map(|block| (0..LEVELS).map(move |i| (block, i)))
            .map(|(block, i)| {
                let rate = CLAIM.level(i).map_or(0.0, |l| l.1);
                CheckStep {
                    block,
                    level: i as u8,
                    rate,
                    pass: rng.uniform() < pass(rate, block),
                    valid: true,
                    run_id: None,
                }
            })
            .collect()
    }

    fn judged(steps: &[CheckStep], blocks: u32) -> Outcome {
        outcome(
            &levels(&CLAIM, steps),
            halves(steps, blocks).as_ref(),
            (Some(1.0), Some(2.0)),
            None,
            true,
        )
    }

    /// How many of `n` checks of `blocks` blocks end in `wanted` on a server whose pass
    /// probability at a rate (in a block) is `truth`.
    fn share(
        rng: &mut Rng,
        n: usize,
        blocks: u32,
        wanted: Outcome,
        truth: impl Fn(f64, u32) -> f64,
    ) -> usize {
        let found = (0..n)
            .filter(|_| judged(&steps(rng, blocks, &truth), blocks) == wanted)
            .count();
        eprintln!("{wanted:?}: {found} of {n}");
        found
    }

    /// A knee of slope `slope` with its C_0.5 at `c50`.
    fn curve(c50: f64, slope: f64) -> impl Fn(f64, u32) -> f64 {
        move |rate, _| 1.0 / (1.0 + (-(slope * (c50 / rate).ln())).exp())
    }

    #[test]
    fn a_figure_whose_interval_holds_fails_few_checks_and_a_wrong_one_says_which_way() {
        let mut rng = Rng::new(11);
        // The truth at the figure, and at either end of its interval.
        for c50 in [1000.0, 990.0, 1010.0] {
            let held = share(&mut rng, 2_000, 30, Outcome::Held, curve(c50, CLAIM.slope));
            assert!(held >= 1_900, "{c50}: {held} of 2,000 held");
        }
        // The truth 5 % below the figure (five times its interval's half-width): it reads high.
        // (Every level's rate is within 2.6 % of the figure.)
        let high = share(&mut rng, 400, 30, Outcome::High, curve(950.0, CLAIM.slope));
        assert!(high >= 360, "{high} of 400");
        let low = share(&mut rng, 400, 30, Outcome::Low, curve(1050.0, CLAIM.slope));
        assert!(low >= 360, "{low} of 400");
        // Fewer passes than allowed at C_0.75 and more at C_0.25 (5 and 25 of 30), the
        // interval's ends and C_0.5 as the fit says: the knee is not the fitted one.
        let counted: Vec<CheckStep> = (1..=30)
            .flat_map(|block| (0..LEVELS).map(move |i| (block, i)))
            .map(|(block, i)| CheckStep {
                block,
                level: i as u8,
                rate: CLAIM.level(i).map_or(0.0, |l| l.1),
                pass: match i {
                    1 => block % 6 == 0,
                    3 => block % 6 != 0,
                    0 => block % 4 != 0,
                    4 => block % 4 == 0,
                    _ => block % 2 == 0,
                },
                valid: true,
                run_id: None,
            })
            .collect();
        assert_eq!(judged(&counted, 30), Outcome::Shape);
        // Five blocks: no count could fail a level, and the check says it cannot tell.
        let few = steps(&mut rng, 5, &curve(1000.0, CLAIM.slope));
        assert_eq!(judged(&few, 5), Outcome::Few);
        // A server that slowed by 5 % halfway through: passes fell.
        let slowed = curve(950.0, CLAIM.slope);
        let at = curve(1000.0, CLAIM.slope);
        let moved = share(&mut rng, 400, 30, Outcome::Moved, |rate, block| {
            if block > 15 {
                slowed(rate, block)
            } else {
                at(rate, block)
            }
        });
        assert!(moved >= 320, "{moved} of 400");
    }

    #[test]
    fn a_search_run_again_that_excludes_the_first_voids_the_check() {
        let again = |low, high| Again {
            id: "b".into(),
            rate: Some(1.0),
            low: Some(low),
            high: Some(high),
        };
        let first = (Some(900.0), Some(1100.0));
        assert_eq!(
            outcome(&[], None, first, Some(&again(1150.0, 1300.0)), true),
            Outcome::Void
        );
        assert_ne!(
            outcome(&[], None, first, Some(&again(1050.0, 1300.0)), true),
            Outcome::Void
        );
        assert_eq!(outcome(&[], None, first, None, false), Outcome::Unfinished);
    }
}
