//! Where the search goes next: ×2 from the start until a step fails (÷2 while the first ones
//! fail), then bisection between the highest pass and the lowest fail until the bracket is
//! within the resolution. Pure: the steps' verdicts in, the next rate or the end out.

use store::capacity::{Settings, Status};

/// The highest rate that passed and the lowest that did not, so far.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Bracket {
    pub pass: Option<f64>,
    pub fail: Option<f64>,
}

/// What to do after a step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Next {
    Try(f64),
    Done(Status),
}

impl Bracket {
    /// Takes a step's outcome at `rate` and says what comes next.
    pub fn after(&mut self, rate: f64, passed: bool, settings: &Settings) -> Next {
        if passed {
            self.pass = Some(self.pass.map_or(rate, |p| p.max(rate)));
        } else {
            self.fail = Some(self.fail.map_or(rate, |f| f.min(rate)));
        }
        match (self.pass, self.fail) {
            (Some(pass), Some(fail)) if fail <= pass => {
                // A fail below a pass (noise, or a server that got worse): the fail is the
                // news, and the search goes on below it.
                self.pass = None;
                self.after_fail_only(fail, settings)
            }
            (Some(pass), Some(fail)) => {
                if (fail - pass) / pass <= settings.resolution + 1e-9 {
                    Next::Done(Status::Found)
                } else {
                    Next::Try(round((pass + fail) / 2.0))
                }
            }
            (Some(pass), None) => {
                if pass >= settings.max_rate {
                    Next::Done(Status::AboveMaximum)
                } else {
                    Next::Try(round((pass * 2.0).min(settings.max_rate)))
                }
            }
            (None, Some(fail)) => self.after_fail_only(fail, settings),
            (None, None) => Next::Try(settings.start),
        }
    }

    fn after_fail_only(&self, fail: f64, settings: &Settings) -> Next {
        if fail <= settings.min_rate {
            Next::Done(Status::BelowMinimum)
        } else {
            Next::Try(round((fail / 2.0).max(settings.min_rate)))
        }
    }
}

/// A rate to three significant figures (a whole number from 100 up): steps read as typed.
pub fn round(rate: f64) -> f64 {
    if rate <= 0.0 || !rate.is_finite() {
        return rate;
    }
    let digits = rate.log10().floor() as i32;
    let unit = 10f64.powi((digits - 2).max(0));
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
        }
    }

    /// The search against a server whose capacity is `truth`: the steps it takes.
    fn search(truth: f64) -> (Bracket, Next, usize) {
        let s = settings();
        let mut b = Bracket::default();
        let mut rate = s.start;
        for steps in 1..50 {
            match b.after(rate, rate <= truth, &s) {
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
    fn rates_read_as_typed() {
        assert_eq!(round(4_837.2), 4_840.0);
        assert_eq!(round(97.4), 97.0);
        assert_eq!(round(12_345.0), 12_300.0);
        assert_eq!(round(3.4), 3.0);
    }
}
