//! Where the search goes next: ×2 (the settings' growth) from the start until a step fails (÷2
//! while the first ones fail), then bisection between the highest pass and the lowest fail until the bracket is
//! within the resolution. A step the generator could not drive (invalid) is a ceiling too: the
//! search bisects below it, so that it finds the highest rate the generator drives validly and
//! goes on judging the server there, instead of stopping at the generator's first wobble.
//! Pure: the steps' outcomes in, the next rate or the end out.

use analysis::capacity::{Settings, Status, Verdict};

/// The highest rate that passed, the lowest the server did not sustain, and the lowest the
/// generator could not drive, so far.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Bracket {
    pub pass: Option<f64>,
    pub fail: Option<f64>,
    pub invalid: Option<f64>,
}

/// What to do after a step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Next {
    Try(f64),
    Done(Status),
}

impl Bracket {
    /// Takes a step's verdict at `rate` and says what comes next.
    pub fn after(&mut self, rate: f64, verdict: Verdict, settings: &Settings) -> Next {
        match verdict {
            Verdict::Pass => self.pass = Some(self.pass.map_or(rate, |p| p.max(rate))),
            Verdict::Invalid => self.invalid = Some(self.invalid.map_or(rate, |i| i.min(rate))),
            _ => self.fail = Some(self.fail.map_or(rate, |f| f.min(rate))),
        }
        if let (Some(pass), Some(invalid)) = (self.pass, self.invalid) {
            // The generator drove a rate above one it could not: that one was a wobble.
            if invalid <= pass {
                self.invalid = None;
            }
        }
        if let (Some(pass), Some(fail)) = (self.pass, self.fail) {
            // A fail below a pass (noise, or a server that got worse): the fail is the news,
            // and the search goes on below it.
            if fail <= pass {
                self.pass = None;
            }
        }
        let ceiling = match (self.fail, self.invalid) {
            (Some(f), Some(i)) if i < f => Some((i, Status::GeneratorLimited)),
            (Some(f), _) => Some((f, Status::Found)),
            (None, Some(i)) => Some((i, Status::GeneratorLimited)),
            (None, None) => None,
        };
        match (self.pass, ceiling) {
            (Some(pass), Some((ceiling, status))) => {
                if (ceiling - pass) / pass <= settings.resolution + 1e-9 {
                    Next::Done(status)
                } else {
                    Next::Try(round((pass + ceiling) / 2.0))
                }
            }
            (Some(pass), None) => {
                if pass >= settings.max_rate {
                    Next::Done(Status::AboveMaximum)
                } else {
                    Next::Try(round((pass * settings.growth).min(settings.max_rate)))
                }
            }
            (None, Some((ceiling, status))) => {
                if ceiling <= settings.min_rate {
                    Next::Done(if status == Status::Found {
                        Status::BelowMinimum
                    } else {
                        status
                    })
                } else {
                    Next::Try(round((ceiling / settings.growth).max(settings.min_rate)))
                }
            }
            (None, None) => Next::Try(settings.start),
        }
    }
}

/// A rate to three significant figures (a whole number from 100 up): steps read as typed.
pub fn round(rate: f64) -> f64 {
    to_figures(rate, 3)
}

/// A rate to `figures` significant figures, a whole number at least 1.
pub fn to_figures(rate: f64, figures: i32) -> f64 {
    if rate <= 0.0 || !rate.is_finite() {
        return rate;
    }
    let digits = rate.log10().floor() as i32;
    let unit = 10f64.powi((digits + 1 - figures).max(0));
    ((rate / unit).round() * unit).max(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> Settings {
        Settings {
            start: 500.0,
            resolution: 0.05,
            step_s: 1.0,
            warmup_s: 0.0,
            min_rate: 10.0,
            max_rate: 100_000.0,
            growth: 2.0,
            arrival: None,
            p: 0.5,
            until: 0.05,
            grid: 1.02,
            seed: 0,
        }
    }

    /// The search against a server whose capacity is `truth`: the steps it takes.
    fn search(truth: f64) -> (Bracket, Next, usize) {
        search_with(truth, f64::INFINITY)
    }

    /// The same with a generator that drives at most `generator` req/s validly.
    fn search_with(truth: f64, generator: f64) -> (Bracket, Next, usize) {
        let s = settings();
        let mut b = Bracket::default();
        let mut rate = s.start;
        for steps in 1..50 {
            let verdict = if rate > generator {
                Verdict::Invalid
            } else if rate <= truth {
                Verdict::Pass
            } else {
                Verdict::Fail
            };
            match b.after(rate, verdict, &s) {
                Next::Try(r) => rate = r,
                done => return (b, done, steps),
            }
        }
        panic!("no end");
    }

    #[test]
    fn the_bracket_closes_on_the_truth_within_the_resolution() {
        for truth in [37.0, 480.0, 500.0, 2_345.0, 9_600.0, 41_000.0] {
            let (b, done, steps) = search(truth);
            assert_eq!(done, Next::Done(Status::Found), "{truth}");
            let (pass, fail) = (b.pass.unwrap(), b.fail.unwrap());
            assert!(pass <= truth && truth < fail, "{truth}: {pass}–{fail}");
            assert!(
                (fail - pass) / pass <= 0.05 + 0.01,
                "{truth}: {pass}–{fail}"
            );
            assert!(steps <= 15, "{truth}: {steps} steps");
        }
    }

    #[test]
    fn the_ends_are_said() {
        assert_eq!(search(5.0).1, Next::Done(Status::BelowMinimum));
        assert_eq!(search(1e9).1, Next::Done(Status::AboveMaximum));
    }

    #[test]
    fn an_invalid_step_is_a_ceiling_the_search_bisects_below() {
        // The server sustains 60,000; the generator drives 40,000: "at least" within 5 % of
        // what the generator drives, not the last pass before its first invalid step.
        let (b, done, steps) = search_with(60_000.0, 40_000.0);
        assert_eq!(done, Next::Done(Status::GeneratorLimited));
        let (pass, invalid) = (b.pass.unwrap(), b.invalid.unwrap());
        assert!(pass <= 40_000.0 && 40_000.0 < invalid, "{pass}–{invalid}");
        assert!(pass >= 40_000.0 / 1.05 - 1.0, "{pass}");
        assert!(steps <= 15, "{steps} steps");
        // Below what the generator drives, the server's own knee is found as ever.
        let (b, done, _) = search_with(30_000.0, 40_000.0);
        assert_eq!(done, Next::Done(Status::Found));
        assert!(b.pass.unwrap() <= 30_000.0 && 30_000.0 < b.fail.unwrap());
        // A generator that cannot drive even the lowest rate: said, with no capacity.
        let (b, done, _) = search_with(30_000.0, 5.0);
        assert_eq!(done, Next::Done(Status::GeneratorLimited));
        assert_eq!(b.pass, None);
    }

    #[test]
    fn a_pass_above_an_invalid_step_forgets_the_wobble() {
        let s = settings();
        let mut b = Bracket::default();
        assert_eq!(b.after(1_000.0, Verdict::Pass, &s), Next::Try(2_000.0));
        assert_eq!(b.after(2_000.0, Verdict::Invalid, &s), Next::Try(1_500.0));
        assert_eq!(b.after(1_500.0, Verdict::Pass, &s), Next::Try(1_750.0));
        // The generator now drives 2,000 after all: the ceiling goes, doubling resumes.
        b.invalid = Some(1_600.0);
        assert_eq!(b.after(1_700.0, Verdict::Pass, &s), Next::Try(3_400.0));
        assert_eq!(b.invalid, None);
    }

    #[test]
    fn rates_read_as_typed() {
        assert_eq!(round(4_837.2), 4_840.0);
        assert_eq!(round(97.4), 97.0);
        assert_eq!(round(12_345.0), 12_300.0);
        assert_eq!(round(3.4), 3.0);
    }
}
