//! Where the steps near the knee go: the biased-coin up-and-down rule (Durham & Flournoy 1994)
//! on a geometric grid of rates. After a fail, one level down; after a pass, one level up with
//! probability b = (1 − p)/p, else stay (p ≥ ½; for p < ½ the mirror image). At the level
//! where a window passes with probability π the chain moves up as often as down only when
//! π·b = 1 − π, so it settles around C_p and spends its steps where they say most of it. With
//! p = ½ (b = 1) it is Dixon & Mood's rule, and no coin is thrown.
//!
//! When the steps near the knee never mix (every pass below every fail, four turns between two
//! neighbouring levels), the knee is narrower than the grid: the grid is halved (in ln), down to
//! [`FINEST`], from the highest of those passes.
//!
//! When the knee is far above where the chain starts (the coarse bracket was wrong: one window
//! failed on a fluke), one level a step would climb for the whole budget. From the
//! [`CLIMB_AFTER`]th move up since the last fail the chain climbs faster, 1, 2, 4, … levels more
//! a move, until a window fails: at C_p the moves up before a fail number that many about once
//! in 64 (each step fails with probability 1 − p and moves up with p·b = 1 − p), and cost one
//! level. Pure: outcomes in, the next rate out; the coin
//! is seeded, so a resumed search replays its chain.

/// The finest grid: neighbouring rates 0.25 % apart.
pub const FINEST: f64 = 1.0025;

/// Moves up since the last fail from which the chain climbs faster.
pub const CLIMB_AFTER: u32 = 6;

/// The chain of steps near the knee.
#[derive(Debug, Clone, PartialEq)]
pub struct Chain {
    /// The rate of level 0.
    base: f64,
    /// The ratio between neighbouring levels.
    ratio: f64,
    level: i32,
    p: f64,
    rng: analysis::capacity::random::Rng,
    /// The outcomes at this grid, in order: (level, pass).
    here: Vec<(i32, bool)>,
    /// Moves up since the last fail.
    ups: u32,
}

impl Chain {
    /// A chain whose level 0 is `pass` (the coarse bracket's highest pass), starting one level
    /// up, with neighbouring rates `ratio` apart.
    pub fn new(pass: f64, ratio: f64, p: f64, seed: u64) -> Chain {
        Chain {
            base: pass,
            ratio: ratio.max(FINEST),
            level: 1,
            p: p.clamp(0.05, 0.95),
            rng: analysis::capacity::random::Rng::new(seed),
            here: vec![(0, true)],
            ups: 0,
        }
    }

    /// The rate of the next step: four significant figures, so that a fine grid is not
    /// rounded away.
    pub fn rate(&self) -> f64 {
        round4(self.base * self.ratio.powi(self.level))
    }

    /// The grid's ratio now.
    pub fn ratio(&self) -> f64 {
        self.ratio
    }

    fn coin(&mut self, probability: f64) -> bool {
        self.rng.uniform() < probability
    }

    /// Takes the outcome of the step at [`Chain::rate`] and moves.
    pub fn after(&mut self, pass: bool) {
        self.here.push((self.level, pass));
        let (up, down) = if self.p >= 0.5 {
            (pass && self.coin((1.0 - self.p) / self.p), !pass)
        } else {
            (pass, !pass && self.coin(self.p / (1.0 - self.p)))
        };
        if !pass {
            self.ups = 0;
        }
        if up {
            self.ups += 1;
            let faster = self.ups.saturating_sub(CLIMB_AFTER - 1).min(10);
            self.level += 1 + ((1i32 << faster) >> 1);
        } else if down {
            self.level -= 1;
        }
        self.refine();
    }

    /// Halves the grid when its steps separate cleanly at two neighbouring levels.
    fn refine(&mut self) {
        if self.ratio <= FINEST * 1.000_001 {
            return;
        }
        let highest_pass = self.here.iter().filter(|h| h.1).map(|h| h.0).max();
        let lowest_fail = self.here.iter().filter(|h| !h.1).map(|h| h.0).min();
        let (Some(pass), Some(fail)) = (highest_pass, lowest_fail) else {
            return;
        };
        let turns = self.here.windows(2).filter(|w| w[0].1 != w[1].1).count();
        if fail == pass + 1 && turns >= 4 {
            self.base *= self.ratio.powi(pass);
            self.ratio = self.ratio.sqrt().max(FINEST);
            self.level = 1;
            self.here = vec![(0, true)];
        }
    }
}

/// A rate to four significant figures.
pub fn round4(rate: f64) -> f64 {
    super::bracket::to_figures(rate, 4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sharp_knee_refines_the_grid_and_the_chain_stays_beside_it() {
        // Every rate below 10,000 passes, every rate above fails.
        let mut chain = Chain::new(9_500.0, 1.02, 0.5, 1);
        let mut rates = Vec::new();
        for _ in 0..40 {
            let rate = chain.rate();
            rates.push(rate);
            chain.after(rate <= 10_000.0);
        }
        assert!(chain.ratio() < 1.006, "{}", chain.ratio());
        let last: Vec<f64> = rates[30..].to_vec();
        assert!(
            last.iter().all(|r| (r / 10_000.0 - 1.0).abs() < 0.01),
            "{last:?}"
        );
    }

    #[test]
    fn the_biased_coin_settles_where_nine_windows_in_ten_pass() {
        // A knee 20 % wide: π(λ) falls linearly from 1 at 9,000 to 0 at 11,000 req/s; C_0.9
        // is 9,200. The chain's median rate sits within two grid steps of it.
        let pi = |r: f64| ((11_000.0 - r) / 2_000.0).clamp(0.0, 1.0);
        let mut chain = Chain::new(9_000.0, 1.02, 0.9, 7);
        let mut rng = analysis::capacity::random::Rng::new(0x1234_5678);
        let mut rates = Vec::new();
        for _ in 0..3_000 {
            let rate = chain.rate();
            rates.push(rate);
            chain.after(rng.uniform() < pi(rate));
        }
        rates.sort_by(f64::total_cmp);
        let median = rates[rates.len() / 2];
        assert!((median / 9_200.0 - 1.0).abs() < 0.04, "{median}");
    }

    #[test]
    fn a_knee_far_above_the_start_is_reached_in_a_few_steps() {
        // The bracket ended at 5,000 on a fluke; every rate up to 12,000 passes.
        let mut chain = Chain::new(5_000.0, 1.02, 0.5, 3);
        let mut steps = 0;
        while chain.rate() <= 12_000.0 {
            chain.after(true);
            steps += 1;
        }
        assert!(steps <= 12, "{steps} steps to climb 2.4×");
        // One fail, and it steps one level at a time again.
        chain.after(false);
        let at = chain.rate();
        chain.after(true);
        assert!(
            (chain.rate() / at - 1.02).abs() < 0.001,
            "{at} → {}",
            chain.rate()
        );
    }

    #[test]
    fn rates_keep_four_figures() {
        assert_eq!(round4(66_123.0), 66_120.0);
        assert_eq!(round4(987.6), 988.0);
    }
}
