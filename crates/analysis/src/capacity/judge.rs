//! A step's verdict, from its measurements: one window, one pass or one fail, on the window's
//! own point figures (the steady window only, after the warm-up). It passes when each SLO
//! term's figure is within its bound, at least 99 % of the offered rate was served, and no queue
//! built up far enough to break the SLO in the window's last third; it is invalid when the
//! generator, not the server, was the limit. What the search estimates is the probability of a
//! pass at each rate ([`super::fit`]), so a step is not asked to prove anything on its own:
//! each term's 95 % interval (batch means, [`super::batch`]) is kept beside its figure for the
//! page, and a queue that grew without breaking the SLO is said, not failed.

use serde::{Deserialize, Serialize};

use super::batch;
use super::interval::Estimate;
use super::slo::{Figure, Measured, Outcome, RunVerdict, Slo, Term};
use crate::saturation::Saturation;
use store::model::IntervalStats;
use store::summary::Summary;
use store::vocabulary::LimitedBy;

/// Below this share of the offered rate finished within the window, the server did not keep up.
pub use store::summary::KEPT_UP;

/// Latency grew across the window when its last third's median is this many times its first
/// third's (and at least [`GROWTH_FLOOR_NS`] more).
pub const GROWTH: f64 = 1.5;
pub const GROWTH_FLOOR_NS: f64 = 1_000_000.0;
/// Requests in flight count as a growing queue only when they grew by at least this much work
/// at the offered rate (Little's law: 5 ms deep): a window's peaks bounce by tens of requests
/// with bursty (Poisson) arrivals or a generator reading late, where a real overload of 1 %
/// piles up hundreds over a window.
pub const IN_FLIGHT_FLOOR_S: f64 = 0.005;

/// How one step came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Every term's figure within its bound, the rate served, no queue breaking the SLO.
    Pass,
    /// A term's figure beyond its bound.
    Fail,
    /// Less than 99 % of the offered rate was served, or a queue built up until the window's
    /// last third broke the SLO.
    Unstable,
    /// A term's interval straddled its bound (searches kept before steps were judged on
    /// their point figures): it counted as failed.
    Uncertain,
    /// The generator was the limit: the step says nothing of the server.
    Invalid,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Unstable => "fail (unstable)",
            Verdict::Uncertain => "uncertain",
            Verdict::Invalid => "invalid",
        }
    }

    /// Whether the rate was served within the SLO.
    pub fn passed(self) -> bool {
        self == Verdict::Pass
    }
}

/// One term as measured: the estimate with its interval, and how it compares with the bound.
/// An unbounded end (too few samples) is kept as `null`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TermResult {
    pub term: Term,
    #[serde(with = "unbounded")]
    pub value: f64,
    #[serde(with = "unbounded")]
    pub low: f64,
    #[serde(with = "unbounded")]
    pub high: f64,
    pub verdict: Verdict,
}

/// An f64 that may be infinite (JSON has no infinity): `null` for it.
mod unbounded {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        if v.is_finite() {
            s.serialize_f64(*v)
        } else {
            s.serialize_none()
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::INFINITY))
    }
}

/// A step judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judgement {
    pub verdict: Verdict,
    /// Why, in one sentence with the figures.
    pub reason: String,
    pub terms: Vec<TermResult>,
    /// Requests finished per second within the window.
    pub achieved: f64,
    /// Requests in the window.
    pub requests: u64,
    /// A queue that grew within the window without breaking the SLO, in words: said, not failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<String>,
}

/// Why the generator, not the server, limited a step's run, if it did: its own CPU, other
/// processes on its CPUs, the connection cap, or Poisson arrivals it could not send as such.
pub fn generator_limit(summary: &Summary) -> Option<String> {
    // Poisson arrivals it could not send as Poisson: the step measured other arrivals.
    if let Some(f) = summary.generator.arrivals.filter(|f| !f.as_intended()) {
        return Some(format!(
            "its sends were not Poisson: {:.1} % {} gaps up to {:.2}× the mean than exponential ones ({:.1} µs of its CPU a request)",
            f.ks * 100.0,
            if f.excess < 0.0 { "fewer" } else { "more" },
            f.at_mean_gaps,
            summary.generator.cpu_per_request_us
        ));
    }
    let limit = summary.generator.limited_by?;
    (limit.is_generator() || limit == LimitedBy::ConnectionCap).then(|| {
        crate::warnings::generator_fell_behind(summary)
            .unwrap_or_else(|| format!("requests were held back by the {limit}"))
    })
}

/// The run of `summary` judged against every term of `slo` on its whole-run figures, the
/// server's own (`cpu`, `throttled`, `pss`, `fds`) from `server`, what the probe that watched
/// it read over the run. Inconclusive when the run was stopped early, when the generator was
/// its limit ([`generator_limit`]: the figures describe less load than asked), or when a
/// term's figure is not among the run's.
pub fn verdict(slo: &Slo, summary: &Summary, server: Option<&Saturation>) -> RunVerdict {
    let terms: Vec<Measured> = slo
        .terms
        .iter()
        .map(|t| Measured {
            term: *t,
            value: if t.figure.is_server() {
                server.and_then(|s| t.of_server(s))
            } else {
                t.of(summary)
            },
        })
        .collect();
    let missed = terms
        .iter()
        .any(|m| m.value.is_some_and(|v| v > m.term.bound));
    let why = if summary.requests.total == 0 {
        "no request was sent".to_string()
    } else if let Some(stopped) = &summary.stopped {
        format!("the run was stopped early ({stopped})")
    } else if let Some(limit) = generator_limit(summary) {
        format!("the generator was the limit, not the server: {limit}")
    } else if let Some(m) = terms.iter().find(|m| m.value.is_none()) {
        unread(m.term.figure, server)
    } else {
        String::new()
    };
    let outcome = match (why.is_empty(), missed) {
        (false, _) => Outcome::Inconclusive,
        (true, true) => Outcome::Missed,
        (true, false) => Outcome::Met,
    };
    RunVerdict {
        outcome,
        terms,
        why,
    }
}

/// Why a run has no figure for a term of `figure`.
fn unread(figure: Figure, server: Option<&Saturation>) -> String {
    match (figure, server) {
        (f, None) if f.is_server() => format!(
            "{f} is the server's own figure, and no probe watched it over the run (give --probe, with a store)"
        ),
        (Figure::Cpu, Some(_)) => {
            "the probe did not read what CPU the server may use (its quota or its CPUs)".into()
        }
        (Figure::Throttled, Some(_)) => {
            "the server has no CPU quota, so nothing throttled it: drop throttled, or give it a quota".into()
        }
        (Figure::Pss, Some(_)) => {
            "the probe did not read the server's PSS (run it with --pss; it needs to read /proc/PID/smaps_rollup)".into()
        }
        (Figure::Fds, Some(_)) => "the probe could not read the server's open files".into(),
        (f, _) => format!("a run keeps p50, p90, p95, p99 and p99.9, not {f}"),
    }
}

/// Judges the window `intervals` (each `interval_s` long) of a step offered `offered` req/s;
/// `generator_limit` is why the generator limited the step's run, if it did
/// ([`generator_limit`]).
pub fn judge(
    slo: &Slo,
    intervals: &[IntervalStats],
    interval_s: f64,
    offered: f64,
    generator_limit: Option<String>,
) -> Judgement {
    let mut total = IntervalStats::new(0, 1_000_000_000);
    for i in intervals {
        total.accumulate(i);
    }
    let seconds = intervals.len() as f64 * interval_s;
    let finished = total.finished();
    let achieved = if seconds > 0.0 {
        finished as f64 / seconds
    } else {
        0.0
    };
    let terms: Vec<TermResult> = slo.window_terms().map(|t| term(t, intervals)).collect();
    let queue = growth(intervals, offered);
    let (verdict, reason) = match generator_limit {
        Some(why) => (Verdict::Invalid, why),
        None => not_served(finished, achieved, offered)
            .or_else(|| failed_term(&terms))
            .or_else(|| {
                let grew = queue.as_deref()?;
                queue_broke(slo, intervals, grew)
            })
            .unwrap_or_else(|| (Verdict::Pass, format!("{} held", slo))),
    };
    Judgement {
        verdict,
        reason,
        terms,
        achieved,
        requests: total.requests,
        queue,
    }
}

/// The step's verdict if the rate was not served: nothing finished, or too little.
fn not_served(finished: u64, achieved: f64, offered: f64) -> Option<(Verdict, String)> {
    if finished == 0 {
        return Some((
            Verdict::Fail,
            "no request finished within the window".into(),
        ));
    }
    (achieved < KEPT_UP * offered).then(|| {
        (
            Verdict::Unstable,
            format!(
                "served {achieved:.0} req/s of the {offered:.0} offered ({:.1} %): the server did not keep up",
                100.0 * achieved / offered
            ),
        )
    })
}

/// The step's verdict if a term's figure was beyond its bound: the first such term's.
fn failed_term(terms: &[TermResult]) -> Option<(Verdict, String)> {
    let t = terms.iter().find(|t| t.verdict == Verdict::Fail)?;
    Some((
        Verdict::Fail,
        format!(
            "{} was {} (95 % interval {}–{}), beyond {}",
            t.term.figure,
            t.term.value_text(t.value),
            t.term.value_text(t.low),
            t.term.value_text(t.high),
            t.term
        ),
    ))
}

/// The step's verdict if the queue that `grew` broke the SLO in the window's last third.
fn queue_broke(slo: &Slo, intervals: &[IntervalStats], grew: &str) -> Option<(Verdict, String)> {
    // The whole window met the SLO; its last third alone shows whether the queue had
    // grown far enough to break it by the window's end.
    let last = &intervals[intervals.len() - intervals.len() / 3..];
    let t = slo
        .window_terms()
        .map(|t| term(t, last))
        .find(|t| t.verdict == Verdict::Fail)?;
    Some((
        Verdict::Unstable,
        format!(
            "{grew}, and {} of its last third was {}, beyond {}",
            t.term.figure,
            t.term.value_text(t.value),
            t.term
        ),
    ))
}

fn term(t: &Term, intervals: &[IntervalStats]) -> TermResult {
    let latencies: Vec<&hdrhistogram::Histogram<u64>> =
        intervals.iter().map(|i| &i.corrected).collect();
    let estimate = match t.figure {
        Figure::Percentile(q) => batch::quantile(&latencies, q / 100.0),
        Figure::Mean => batch::mean(&latencies),
        // The server's figures are a whole run's (`verdict`), not a window's.
        Figure::Cpu | Figure::Throttled | Figure::Pss | Figure::Fds => None,
        Figure::Errors => {
            let parts: Vec<(u64, u64)> = intervals
                .iter()
                .map(|i| (i.finished().saturating_sub(i.ok), i.finished()))
                .collect();
            batch::ratio(&parts)
        }
    };
    let Estimate { value, low, high } = estimate.unwrap_or(Estimate {
        value: f64::INFINITY,
        low: f64::INFINITY,
        high: f64::INFINITY,
    });
    // Errors bounded by 0 % pass only with none at all: no interval can show a zero rate.
    let verdict = if t.figure == Figure::Errors && t.bound == 0.0 {
        if value == 0.0 {
            Verdict::Pass
        } else {
            Verdict::Fail
        }
    } else if value <= t.bound {
        Verdict::Pass
    } else {
        Verdict::Fail
    };
    TermResult {
        term: *t,
        value,
        low,
        high,
        verdict,
    }
}

/// Whether the queue grew across the window: the median latency of its last third well above
/// its first third's, rising through the middle, or the requests in flight doing the same.
fn growth(intervals: &[IntervalStats], offered: f64) -> Option<String> {
    if intervals.len() < 3 {
        return None;
    }
    let third = intervals.len() / 3;
    let parts = [
        &intervals[..third],
        &intervals[third..intervals.len() - third],
        &intervals[intervals.len() - third..],
    ];
    let median = |part: &[IntervalStats]| {
        let mut h = store::model::new_histogram(1_000_000_000);
        for i in part {
            let _ = h.add(&i.corrected);
        }
        h.value_at_quantile(0.5) as f64
    };
    let [first, middle, last] = parts.map(median);
    if last > GROWTH * first + GROWTH_FLOOR_NS && middle >= first {
        return Some(format!(
            "latency grew within the window (median {} in its first third, {} in its last): a queue was building",
            store::summary::format_ns(first as u64),
            store::summary::format_ns(last as u64)
        ));
    }
    let flight = |part: &[IntervalStats]| {
        part.iter().map(|i| i.in_flight as f64).sum::<f64>() / part.len().max(1) as f64
    };
    let [first, middle, last] = parts.map(flight);
    if last > 2.0 * first + 2.0 && last - first >= offered * IN_FLIGHT_FLOOR_S && middle >= first {
        return Some(format!(
            "requests in flight grew within the window ({first:.0} on average in its first third, {last:.0} in its last): a queue was building"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::tests::summary_of;

    fn window(latencies_ms: &[&[u64]], requests: u64) -> Vec<IntervalStats> {
        latencies_ms
            .iter()
            .enumerate()
            .map(|(i, lat)| {
                let mut s = IntervalStats::new(i as u64, 10_000_000_000);
                for &ms in *lat {
                    s.corrected.record(ms * 1_000_000).unwrap();
                }
                s.requests = requests;
                s.responses = lat.len() as u64;
                s.ok = lat.len() as u64;
                s
            })
            .collect()
    }

    fn slo(text: &str) -> Slo {
        Slo {
            terms: vec![text.parse().unwrap()],
        }
    }

    #[test]
    fn a_term_passes_or_fails_on_its_figure_with_its_interval_kept_beside() {
        let steady: Vec<u64> = (1..=1000).map(|i| 1 + i % 10).collect();
        let w = window(&[steady.as_slice(); 10], 1000);
        let pass = judge(&slo("p99<=20ms"), &w, 1.0, 1000.0, None);
        assert_eq!(pass.verdict, Verdict::Pass, "{}", pass.reason);
        let fail = judge(&slo("p99<=5ms"), &w, 1.0, 1000.0, None);
        assert_eq!(fail.verdict, Verdict::Fail, "{}", fail.reason);
        assert!(fail.reason.contains("95 % interval"), "{}", fail.reason);
        // p99 of 1..=10 ms is 10 ms: within 11 ms, its interval kept around it.
        let near = judge(&slo("p99<=11ms"), &w, 1.0, 1000.0, None);
        assert_eq!(near.verdict, Verdict::Pass, "{}", near.reason);
        let t = &near.terms[0];
        assert!(
            t.low <= t.value && t.value <= t.high && t.value <= 11e6,
            "{t:?}"
        );
    }

    #[test]
    fn requests_in_flight_that_grow_are_said_not_failed_while_the_slo_holds() {
        // 1,000 req/s answered in 2 ms, in flight 18 → 51 over the window (the rust target's
        // step at 29,600 req/s: in flight 107 → 286, p99 3.3 ms, failed before): a pass.
        let steady = vec![2u64; 1000];
        let mut w = window(&[steady.as_slice(); 6], 1000);
        for (n, i) in w.iter_mut().enumerate() {
            i.in_flight = [18, 30, 51][n / 2];
        }
        let j = judge(&slo("p99<=10ms"), &w, 1.0, 1000.0, None);
        assert_eq!(j.verdict, Verdict::Pass, "{}", j.reason);
        let said = j.queue.unwrap_or_default();
        assert!(said.contains("requests in flight grew"), "{said}");
    }

    #[test]
    fn a_queue_fails_a_step_only_once_its_last_third_breaks_the_slo() {
        // Latency rising 1 → 9 ms over nine intervals: a queue building, the SLO held.
        let rising: Vec<Vec<u64>> = (0..9).map(|i| vec![1 + i; 100]).collect();
        let parts: Vec<&[u64]> = rising.iter().map(Vec::as_slice).collect();
        let j = judge(&slo("p99<=20ms"), &window(&parts, 100), 1.0, 100.0, None);
        assert_eq!(j.verdict, Verdict::Pass, "{}", j.reason);
        assert!(j.queue.is_some_and(|q| q.contains("latency grew")));
        // The same with five requests of 50 ms at its end: 0.6 % of the window (its p99 holds),
        // 1.7 % of its last third (whose p99 does not).
        let mut late = rising.clone();
        late[8][..5].fill(50);
        let parts: Vec<&[u64]> = late.iter().map(Vec::as_slice).collect();
        let j = judge(&slo("p99<=20ms"), &window(&parts, 100), 1.0, 100.0, None);
        assert_eq!(j.verdict, Verdict::Unstable, "{}", j.reason);
        assert!(
            j.reason.contains("of its last third was 50"),
            "{}",
            j.reason
        );
        // Less than 99 % of the offered rate served fails whatever the percentiles.
        let short = vec![2u64; 95];
        let w = window(&[&short, &short, &short], 100);
        let j = judge(&slo("p99<=1s"), &w, 1.0, 100.0, None);
        assert_eq!(j.verdict, Verdict::Unstable);
        assert!(j.reason.contains("did not keep up"), "{}", j.reason);
    }

    #[test]
    fn a_step_the_generator_limited_is_invalid() {
        let steady = vec![1u64; 100];
        let w = window(&[&steady, &steady, &steady], 100);
        let j = judge(&slo("p99<=1s"), &w, 1.0, 100.0, Some("its CPU".into()));
        assert_eq!(j.verdict, Verdict::Invalid);
    }

    #[test]
    fn an_slo_term_reads_its_figure_from_a_summary() {
        let s = summary_of(0, Default::default());
        let of = |t: &str| t.parse::<Term>().unwrap().of(&s);
        let p99 = of("p99<=1ms").unwrap();
        assert!((p99 - 1_000_000.0).abs() < 1_000.0, "{p99}");
        assert_eq!(of("mean<=1ms"), Some(s.latency.corrected.mean_ns as f64));
        assert_eq!(of("errors<=1%"), Some(1.0 - s.requests.success_ratio));
        assert_eq!(
            of("p99.5<=1ms"),
            None,
            "a percentile the summary does not keep"
        );
    }

    #[test]
    fn poisson_sends_that_were_not_poisson_limit_a_step() {
        let fit = |excess: f64, gaps: u64| store::summary::GeneratorFacts {
            arrivals: Some(store::summary::ArrivalFit::new(excess, 0.09, gaps)),
            ..Default::default()
        };
        assert!(generator_limit(&summary_of(0, fit(-0.03, 80_000))).is_none());
        let why = generator_limit(&summary_of(0, fit(-0.08, 80_000))).unwrap();
        assert!(
            why.starts_with("its sends were not Poisson: 8.0 % fewer"),
            "{why}"
        );
    }
}
