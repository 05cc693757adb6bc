//! The rate schedule: when is request *i* due?
//!
//! An open-loop attack is defined by a request rate over time, `r(t)` requests per second. The
//! schedule answers one question, [`Schedule::due`]: at what offset from the start of the attack
//! is request `i` (counting from 0) intended to be sent? Latency is measured from that instant,
//! whatever happens to the request afterwards, which is what makes the figures immune to
//! coordinated omission.
//!
//! # The maths
//!
//! Let `C(t) = ∫₀ᵗ r(s) ds` be the number of requests the schedule asks for up to time `t`.
//! Request `i` is due at the instant the count reaches `i`: `due(i) = C⁻¹(i)`. Request 0 is due
//! at `t = 0`; with a constant rate `r` request `i` is due at `i / r`.
//!
//! A schedule is a sequence of segments, each of duration `D` with a rate that moves linearly
//! from `r₀` to `r₁` (a constant segment has `r₀ = r₁`; a step schedule is several constant
//! segments; a ramp is one segment with `r₀ ≠ r₁`). With `Nₖ` the count at the start `Tₖ` of
//! segment `k` and `s` the time into it:
//!
//! ```text
//! C(Tₖ + s) = Nₖ + r₀·s + a·s²      where a = (r₁ − r₀) / (2·D)
//! ```
//!
//! so request `i` with `Nₖ ≤ i < Nₖ₊₁` and `x = i − Nₖ` is due at `Tₖ + s`, where `s` solves
//! `a·s² + r₀·s − x = 0`:
//!
//! ```text
//! s = x / r₀                              if a = 0 (constant rate)
//! s = 2·x / (r₀ + √(r₀² + 4·a·x))         otherwise
//! ```
//!
//! The second form is the usual quadratic root rewritten so that it neither cancels
//! catastrophically when `a` is tiny nor divides by zero when `r₀ = 0`; it holds for ramps down
//! (`a < 0`) too, because `r₀² + 4·a·x ≥ r₁² ≥ 0` inside the segment.
//!
//! A schedule with a total duration `T` sends the requests due before `T`: `⌈C(T)⌉` of them
//! (2,000 req/s for 30 s is exactly 60,000 requests). The last segment of a schedule may be
//! open-ended (constant rate, no duration), in which case a request count ends the attack.

use std::time::Duration;

use thiserror::Error;

/// Why a schedule could not be built; each message names the flag to fix.
#[derive(Debug, Error, PartialEq)]
pub enum ScheduleError {
    #[error("rate {0} is not a positive number of requests per second: give e.g. --rate 2000")]
    BadRate(f64),
    #[error("a step or ramp needs a duration above zero: give e.g. --step-duration 30s")]
    ZeroDuration,
    #[error("the schedule never sends a request: give at least one rate above zero")]
    Empty,
    #[error("rate {0} req/s is more than one request per nanosecond: lower --rate")]
    TooFast(f64),
}

/// One piece of the schedule: the rate moves linearly from `rate_start` to `rate_end` over
/// `duration` (seconds; infinite for an open-ended last segment).
#[derive(Debug, Clone, PartialEq)]
struct Segment {
    start: f64,
    duration: f64,
    rate_start: f64,
    rate_end: f64,
    /// Requests due before this segment starts (`Nₖ`).
    count_before: f64,
}

impl Segment {
    fn count(&self) -> f64 {
        if self.duration.is_infinite() {
            f64::INFINITY
        } else {
            (self.rate_start + self.rate_end) / 2.0 * self.duration
        }
    }

    /// `a` of the module docs: half the rate's change per second (0 when constant).
    fn acceleration(&self) -> f64 {
        if self.duration.is_infinite() {
            0.0
        } else {
            (self.rate_end - self.rate_start) / (2.0 * self.duration)
        }
    }

    /// Time into the segment at which `x` requests of it have become due (see module docs).
    fn offset_of(&self, x: f64) -> f64 {
        if x <= 0.0 {
            return 0.0;
        }
        let a = self.acceleration();
        if a == 0.0 {
            x / self.rate_start
        } else {
            let disc = (self.rate_start * self.rate_start + 4.0 * a * x).max(0.0);
            2.0 * x / (self.rate_start + disc.sqrt())
        }
    }
}

/// A request-rate schedule: constant, steps, or linear ramp. Pure: it only does arithmetic.
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    segments: Vec<Segment>,
}

/// The most requests per second a schedule may ask for: one per nanosecond is beyond any
/// HTTP client, and keeps `due` exact in `u64` nanoseconds.
const MAX_RATE: f64 = 1e9;

fn check_rate(rate: f64, allow_zero: bool) -> Result<f64, ScheduleError> {
    if !rate.is_finite() || rate < 0.0 || (!allow_zero && rate == 0.0) {
        return Err(ScheduleError::BadRate(rate));
    }
    if rate > MAX_RATE {
        return Err(ScheduleError::TooFast(rate));
    }
    Ok(rate)
}

impl Schedule {
    /// `rate` requests per second, for `duration` or, without one, until a request count or
    /// Ctrl-C ends the attack.
    pub fn constant(rate: f64, duration: Option<Duration>) -> Result<Self, ScheduleError> {
        let rate = check_rate(rate, false)?;
        let duration = match duration {
            Some(d) if d.is_zero() => return Err(ScheduleError::ZeroDuration),
            Some(d) => d.as_secs_f64(),
            None => f64::INFINITY,
        };
        Self::from_pieces(&[(rate, rate, duration)])
    }

    /// Constant rates one after another, each for its own duration; a rate of 0 is a pause.
    pub fn steps(steps: &[(f64, Duration)]) -> Result<Self, ScheduleError> {
        let mut pieces = Vec::with_capacity(steps.len());
        for &(rate, duration) in steps {
            let rate = check_rate(rate, true)?;
            if duration.is_zero() {
                return Err(ScheduleError::ZeroDuration);
            }
            pieces.push((rate, rate, duration.as_secs_f64()));
        }
        Self::from_pieces(&pieces)
    }

    /// A rate moving linearly from `from` to `to` over `duration` (either end may be 0).
    pub fn ramp(from: f64, to: f64, duration: Duration) -> Result<Self, ScheduleError> {
        let from = check_rate(from, true)?;
        let to = check_rate(to, true)?;
        if duration.is_zero() {
            return Err(ScheduleError::ZeroDuration);
        }
        Self::from_pieces(&[(from, to, duration.as_secs_f64())])
    }

    fn from_pieces(pieces: &[(f64, f64, f64)]) -> Result<Self, ScheduleError> {
        let mut segments = Vec::with_capacity(pieces.len());
        let (mut start, mut count_before) = (0.0, 0.0);
        for &(rate_start, rate_end, duration) in pieces {
            let segment = Segment {
                start,
                duration,
                rate_start,
                rate_end,
                count_before,
            };
            start += duration;
            count_before += segment.count();
            segments.push(segment);
        }
        if count_before <= 0.0 {
            return Err(ScheduleError::Empty);
        }
        Ok(Schedule { segments })
    }

    /// Offset from the start of the attack at which request `i` is due, or `None` if the
    /// schedule ends before it.
    pub fn due(&self, i: u64) -> Option<Duration> {
        if self.total_requests().is_some_and(|total| i >= total) {
            return None;
        }
        self.due_at(i as f64)
    }

    /// Offset at which the count `C(t)` reaches `x` (any point of count space, not only a
    /// whole request: Poisson arrivals are placed there), or `None` past the schedule's end.
    pub fn due_at(&self, x: f64) -> Option<Duration> {
        if x.is_nan() || x < 0.0 || self.total_count().is_some_and(|total| x >= total) {
            return None;
        }
        // Segments are few (a handful of steps): a linear scan beats a binary search here.
        let segment = self
            .segments
            .iter()
            .rev()
            .find(|s| s.count_before <= x && s.count() > 0.0)?;
        let seconds = segment.start + segment.offset_of(x - segment.count_before);
        let within = if segment.duration.is_finite() {
            seconds.min(segment.start + segment.duration)
        } else {
            seconds
        };
        Some(Duration::from_nanos((within * 1e9).round() as u64))
    }

    /// `C(T)`, the count at the schedule's end, or `None` when it is open-ended.
    fn total_count(&self) -> Option<f64> {
        let last = self.segments.last()?;
        last.duration
            .is_finite()
            .then(|| last.count_before + last.count())
    }

    /// `C(t)`: how many requests the schedule has asked for `t` seconds into the attack (its
    /// total after the end). A send at `t` sits at this point of count space, where the gaps
    /// of a Poisson process of any rate are exponential with mean 1 (time rescaling).
    pub fn count_at(&self, t: f64) -> f64 {
        let t = t.max(0.0);
        let Some(s) = self.segments.iter().rev().find(|s| s.start <= t) else {
            return 0.0;
        };
        let into = (t - s.start).min(s.duration);
        s.count_before + s.rate_start * into + s.acceleration() * into * into
    }

    /// How many requests the whole schedule sends, `⌈C(T)⌉`, or `None` when it is open-ended.
    pub fn total_requests(&self) -> Option<u64> {
        let total = self.total_count()?;
        // Forgive the rounding error of summing rate × duration (2000 × 30 must give 60000,
        // not 60001).
        Some((total - 1e-6).ceil().max(0.0) as u64)
    }

    /// The schedule's total length, or `None` when it is open-ended.
    pub fn duration(&self) -> Option<Duration> {
        let last = self.segments.last()?;
        if last.duration.is_infinite() {
            None
        } else {
            Some(Duration::from_secs_f64(last.start + last.duration))
        }
    }

    /// The intended rate at `t` seconds into the attack (0 after the end).
    pub fn rate_at(&self, t: f64) -> f64 {
        for s in &self.segments {
            if t >= s.start && t < s.start + s.duration {
                if s.duration.is_infinite() {
                    return s.rate_start;
                }
                return s.rate_start + (s.rate_end - s.rate_start) * (t - s.start) / s.duration;
            }
        }
        0.0
    }

    /// The highest rate the schedule reaches, for sizing and for the summary.
    pub fn peak_rate(&self) -> f64 {
        self.segments
            .iter()
            .map(|s| s.rate_start.max(s.rate_end))
            .fold(0.0, f64::max)
    }

    /// A short human description, e.g. `constant 2000 req/s for 30s` or
    /// `steps 2000/3000/5000 req/s × 30s`.
    pub fn describe(&self) -> String {
        let secs = |d: f64| humantime::format_duration(Duration::from_secs_f64(d)).to_string();
        match self.segments.as_slice() {
            [s] if s.rate_start == s.rate_end && s.duration.is_infinite() => {
                format!("constant {} req/s", fmt_rate(s.rate_start))
            }
            [s] if s.rate_start == s.rate_end => {
                format!(
                    "constant {} req/s for {}",
                    fmt_rate(s.rate_start),
                    secs(s.duration)
                )
            }
            [s] => format!(
                "ramp {} → {} req/s over {}",
                fmt_rate(s.rate_start),
                fmt_rate(s.rate_end),
                secs(s.duration)
            ),
            many => {
                let rates: Vec<String> = many.iter().map(|s| fmt_rate(s.rate_start)).collect();
                let same = many.windows(2).all(|w| w[0].duration == w[1].duration);
                if same {
                    format!(
                        "steps {} req/s × {} each",
                        rates.join("/"),
                        secs(many[0].duration)
                    )
                } else {
                    let parts: Vec<String> = many
                        .iter()
                        .map(|s| format!("{}@{}", fmt_rate(s.rate_start), secs(s.duration)))
                        .collect();
                    format!("steps {} req/s", parts.join(", "))
                }
            }
        }
    }
}

fn fmt_rate(rate: f64) -> String {
    if rate.fract() == 0.0 {
        format!("{rate:.0}")
    } else {
        format!("{rate}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(d: Option<Duration>) -> f64 {
        d.map(|d| d.as_secs_f64()).unwrap_or(f64::NAN)
    }

    #[test]
    fn constant_rate_spaces_requests_evenly() {
        let s = Schedule::constant(2000.0, Some(Duration::from_secs(30))).unwrap();
        assert_eq!(s.due(0), Some(Duration::ZERO));
        assert_eq!(s.due(1), Some(Duration::from_micros(500)));
        assert_eq!(s.due(2000), Some(Duration::from_secs(1)));
        assert_eq!(s.total_requests(), Some(60_000));
        assert_eq!(s.due(59_999), Some(Duration::from_nanos(29_999_500_000)));
        assert_eq!(s.due(60_000), None);
    }

    #[test]
    fn fractional_rates_and_durations_round_the_count_up() {
        // 2.5 req/s for 1 s: requests at 0, 0.4 and 0.8 s are all before the end.
        let s = Schedule::constant(2.5, Some(Duration::from_secs(1))).unwrap();
        assert_eq!(s.total_requests(), Some(3));
        assert!((secs(s.due(2)) - 0.8).abs() < 1e-9);
        assert_eq!(s.due(3), None);
    }

    #[test]
    fn open_ended_schedule_never_runs_out() {
        let s = Schedule::constant(10_000.0, None).unwrap();
        assert_eq!(s.total_requests(), None);
        assert_eq!(s.duration(), None);
        assert_eq!(s.due(1_000_000_000), Some(Duration::from_secs(100_000)));
    }

    #[test]
    fn steps_continue_where_the_previous_step_ended() {
        let step = Duration::from_secs(30);
        let s = Schedule::steps(&[(2000.0, step), (3000.0, step), (5000.0, step)]).unwrap();
        assert_eq!(s.total_requests(), Some(60_000 + 90_000 + 150_000));
        // First request of the second step is due exactly when the step starts ...
        assert_eq!(s.due(60_000), Some(Duration::from_secs(30)));
        // ... and then every 1/3000 s.
        assert!((secs(s.due(60_003)) - 30.001).abs() < 1e-9);
        assert_eq!(s.due(150_000), Some(Duration::from_secs(60)));
        assert!((secs(s.due(150_005)) - 60.001).abs() < 1e-9);
        assert_eq!(s.due(300_000), None);
        assert_eq!(s.duration(), Some(Duration::from_secs(90)));
    }

    #[test]
    fn a_zero_step_is_a_pause() {
        let second = Duration::from_secs(1);
        let s = Schedule::steps(&[(10.0, second), (0.0, second), (10.0, second)]).unwrap();
        assert_eq!(s.total_requests(), Some(20));
        assert!((secs(s.due(9)) - 0.9).abs() < 1e-9);
        assert_eq!(s.due(10), Some(Duration::from_secs(2)));
    }

    #[test]
    fn ramp_up_follows_the_integral_of_the_rate() {
        // r(t) = 100·t over 10 s: C(t) = 50·t², so request i is due at √(i/50).
        let s = Schedule::ramp(0.0, 1000.0, Duration::from_secs(10)).unwrap();
        assert_eq!(s.total_requests(), Some(5000));
        for i in [0u64, 1, 50, 200, 1250, 4999] {
            let expected = (i as f64 / 50.0).sqrt();
            assert!((secs(s.due(i)) - expected).abs() < 1e-9, "request {i}");
        }
        assert_eq!(s.due(5000), None);
    }

    #[test]
    fn ramp_down_is_the_mirror_of_ramp_up() {
        // r(t) = 1000 − 100·t over 10 s: C(t) = 1000·t − 50·t², so due(i) = 10 − √(100 − i/50).
        let s = Schedule::ramp(1000.0, 0.0, Duration::from_secs(10)).unwrap();
        assert_eq!(s.total_requests(), Some(5000));
        for i in [0u64, 1, 2500, 4000, 4999] {
            let expected = 10.0 - (100.0 - i as f64 / 50.0).sqrt();
            assert!((secs(s.due(i)) - expected).abs() < 1e-6, "request {i}");
        }
    }

    #[test]
    fn due_times_never_go_backwards() {
        let s = Schedule::steps(&[
            (1000.0, Duration::from_millis(1500)),
            (7.0, Duration::from_millis(300)),
            (12_345.0, Duration::from_secs(1)),
        ])
        .unwrap();
        let total = s.total_requests().unwrap();
        let mut last = Duration::ZERO;
        for i in 0..total {
            let due = s.due(i).unwrap();
            assert!(due >= last, "request {i} due at {due:?}, before {last:?}");
            assert!(due < Duration::from_millis(2800));
            last = due;
        }
    }

    #[test]
    fn rate_at_reports_the_intended_rate() {
        let s = Schedule::ramp(100.0, 300.0, Duration::from_secs(2)).unwrap();
        assert!((s.rate_at(1.0) - 200.0).abs() < 1e-9);
        assert_eq!(s.rate_at(2.5), 0.0);
        assert_eq!(s.peak_rate(), 300.0);
    }

    #[test]
    fn bad_schedules_are_refused_with_the_fix() {
        assert_eq!(
            Schedule::constant(0.0, None),
            Err(ScheduleError::BadRate(0.0))
        );
        assert_eq!(
            Schedule::constant(-5.0, None),
            Err(ScheduleError::BadRate(-5.0))
        );
        assert!(matches!(
            Schedule::constant(f64::NAN, None),
            Err(ScheduleError::BadRate(_))
        ));
        assert_eq!(
            Schedule::constant(10.0, Some(Duration::ZERO)),
            Err(ScheduleError::ZeroDuration)
        );
        assert_eq!(
            Schedule::steps(&[(0.0, Duration::from_secs(1))]),
            Err(ScheduleError::Empty)
        );
        assert_eq!(
            Schedule::constant(2e9, None),
            Err(ScheduleError::TooFast(2e9))
        );
        assert!(ScheduleError::BadRate(0.0)
            .to_string()
            .ends_with("give e.g. --rate 2000"));
    }

    #[test]
    fn descriptions_read_like_the_command_line() {
        let step = Duration::from_secs(30);
        let s = Schedule::steps(&[(2000.0, step), (3000.0, step)]).unwrap();
        assert_eq!(s.describe(), "steps 2000/3000 req/s × 30s each");
        let c = Schedule::constant(2000.0, Some(step)).unwrap();
        assert_eq!(c.describe(), "constant 2000 req/s for 30s");
        let r = Schedule::ramp(10.0, 20.5, step).unwrap();
        assert_eq!(r.describe(), "ramp 10 → 20.5 req/s over 30s");
    }
}
