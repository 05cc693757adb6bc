//! A service-level objective: terms such as `p99<=10ms`, `mean<=5ms`, `errors<=0.1%`, every one
//! of which a step must meet to pass.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// What a term bounds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Figure {
    /// A percentile of the corrected latency (from each request's intended send time), 0–100.
    Percentile(f64),
    /// The mean corrected latency.
    Mean,
    /// The share of requests that failed (an error, or a status other than 2xx/3xx).
    Errors,
}

/// One term: a figure at most a bound.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Term {
    pub figure: Figure,
    /// Nanoseconds for a latency, a ratio (0–1) for errors.
    pub bound: f64,
}

/// Every term, all of which must hold.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Slo {
    pub terms: Vec<Term>,
}

/// An SLO term that does not parse: the message gives the grammar.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "--slo {text:?}: {why}; write FIGURE<=BOUND: p99<=10ms, p99.9<=50ms, mean<=5ms, errors<=0.1%"
)]
pub struct SloError {
    pub text: String,
    pub why: String,
}

impl FromStr for Term {
    type Err = SloError;

    fn from_str(text: &str) -> Result<Term, SloError> {
        let error = |why: &str| SloError {
            text: text.to_string(),
            why: why.to_string(),
        };
        let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let (figure, bound) = compact.split_once("<=").ok_or_else(|| error("no <="))?;
        let figure = match figure.to_ascii_lowercase().as_str() {
            "mean" | "avg" => Figure::Mean,
            "errors" | "error" | "error_rate" => Figure::Errors,
            p => {
                let q: f64 = p
                    .strip_prefix('p')
                    .and_then(|q| q.parse().ok())
                    .ok_or_else(|| {
                        error(&format!(
                            "{figure:?} is not p50, p99, p99.9, mean or errors"
                        ))
                    })?;
                if !(q > 0.0 && q < 100.0) {
                    return Err(error("a percentile is above 0 and below 100"));
                }
                Figure::Percentile(q)
            }
        };
        let bound = match figure {
            Figure::Errors => {
                let pct = bound
                    .strip_suffix('%')
                    .ok_or_else(|| error("an error bound is a percentage, e.g. 0.1%"))?;
                let pct: f64 = pct
                    .parse()
                    .ok()
                    .filter(|p: &f64| (0.0..=100.0).contains(p))
                    .ok_or_else(|| error("an error bound is a percentage from 0% to 100%"))?;
                pct / 100.0
            }
            _ => {
                let d = humantime::parse_duration(bound)
                    .map_err(|_| error(&format!("{bound:?} is not a duration such as 10ms")))?;
                if d.is_zero() {
                    return Err(error("a latency bound is above 0"));
                }
                d.as_nanos() as f64
            }
        };
        Ok(Term { figure, bound })
    }
}

impl fmt::Display for Figure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Figure::Percentile(q) => write!(f, "p{q}"),
            Figure::Mean => f.write_str("mean"),
            Figure::Errors => f.write_str("errors"),
        }
    }
}

impl Slo {
    /// The fewest requests a window needs for every term to be decidable: enough to bound each
    /// percentile from above, and to show an error ratio below its bound with none observed
    /// (twice over, for a margin).
    pub fn samples_needed(&self) -> u64 {
        self.terms
            .iter()
            .map(|t| match t.figure {
                // Enough for the independent interval's upper end twice over, and for every
                // batch of the window to hold twice the samples its own quantile needs.
                Figure::Percentile(q) => (2 * super::interval::samples_to_bound(q / 100.0)).max(
                    super::batch::MAX_BATCHES as u64 * (2.0 / (1.0 - q / 100.0)).ceil() as u64,
                ),
                Figure::Errors if t.bound > 0.0 => (2.0 * 3.84 / t.bound).ceil() as u64,
                _ => 30,
            })
            .max()
            .unwrap_or(30)
    }
}

impl Term {
    /// This term's figure in a run's summary: the mean, the error ratio, or a percentile the
    /// summary keeps (50, 90, 95, 99, 99.9; another needs the run's histogram: `None`).
    pub fn of(&self, s: &crate::summary::Summary) -> Option<f64> {
        let l = &s.latency.corrected;
        let ns = match self.figure {
            Figure::Errors => return Some(1.0 - s.requests.success_ratio),
            Figure::Mean => l.mean_ns,
            Figure::Percentile(q) => {
                [
                    (50.0, l.p50_ns),
                    (90.0, l.p90_ns),
                    (95.0, l.p95_ns),
                    (99.0, l.p99_ns),
                    (99.9, l.p999_ns),
                ]
                .into_iter()
                .find(|(at, _)| (at - q).abs() < 1e-9)?
                .1
            }
        };
        Some(ns as f64)
    }

    /// A value of this term's figure in words (`9.8 ms`, `0.05 %`).
    pub fn value_text(&self, value: f64) -> String {
        match self.figure {
            Figure::Errors => format!("{} %", trim(value * 100.0)),
            _ if value.is_infinite() => "unbounded".into(),
            _ => crate::summary::text::format_ns(value.max(0.0) as u64),
        }
    }
}

impl fmt::Display for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.figure {
            Figure::Errors => write!(f, "errors<={}%", trim(self.bound * 100.0)),
            _ => write!(
                f,
                "{}<={}",
                self.figure,
                humantime::format_duration(Duration::from_nanos(self.bound as u64))
            ),
        }
    }
}

impl fmt::Display for Slo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let terms: Vec<String> = self.terms.iter().map(ToString::to_string).collect();
        f.write_str(&terms.join(" and "))
    }
}

/// How a run stands against an SLO.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Every term's figure within its bound, on a run that drove what it was asked.
    Met,
    /// A term's figure beyond its bound.
    Missed,
    /// The run cannot say: the generator was the limit, it was stopped early, or a figure is
    /// not among the run's.
    Inconclusive,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Met => "met",
            Outcome::Missed => "missed",
            Outcome::Inconclusive => "inconclusive",
        }
    }
}

/// One term against a run's figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    pub term: Term,
    /// The run's figure (ns for a latency, 0–1 for errors); `None` where the run has none.
    pub value: Option<f64>,
}

impl Measured {
    /// "p99 3.1ms <= 10ms", "errors 0.5 % > 0.1 %".
    pub fn text(&self) -> String {
        let bound = self.term.value_text(self.term.bound);
        match self.value {
            Some(v) if v <= self.term.bound => {
                format!(
                    "{} {} <= {bound}",
                    self.term.figure,
                    self.term.value_text(v)
                )
            }
            Some(v) => format!("{} {} > {bound}", self.term.figure, self.term.value_text(v)),
            None => format!("{} not measured", self.term.figure),
        }
    }
}

/// A whole run judged against an SLO on its figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunVerdict {
    pub outcome: Outcome,
    pub terms: Vec<Measured>,
    /// Why it is inconclusive, when it is.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub why: String,
}

impl RunVerdict {
    /// "SLO met: p99 3.1ms <= 10ms, errors 0 % <= 0.1 %", or what it missed, or why it cannot
    /// say.
    pub fn text(&self) -> String {
        let terms: Vec<String> = self.terms.iter().map(Measured::text).collect();
        let terms = terms.join(", ");
        match self.outcome {
            Outcome::Inconclusive => format!("SLO inconclusive: {} ({terms})", self.why),
            o => format!("SLO {}: {terms}", o.as_str()),
        }
    }
}

/// A number without trailing zeros: 0.1, 1, 2.5.
fn trim(v: f64) -> String {
    let s = format!("{v:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_read_and_print_as_written() {
        for (text, shown) in [
            ("p99<=10ms", "p99<=10ms"),
            ("p99.9 <= 50ms", "p99.9<=50ms"),
            ("mean<=5ms", "mean<=5ms"),
            ("errors<=0.1%", "errors<=0.1%"),
            ("errors<=0%", "errors<=0%"),
        ] {
            let term: Term = text.parse().unwrap();
            assert_eq!(term.to_string(), shown);
        }
        let t: Term = "p99<=10ms".parse().unwrap();
        assert_eq!((t.figure, t.bound), (Figure::Percentile(99.0), 1e7));
    }

    #[test]
    fn bad_terms_name_the_grammar() {
        for bad in [
            "p99<10ms",
            "p100<=1ms",
            "q99<=1ms",
            "p99<=fast",
            "errors<=1",
            "errors<=200%",
            "p99<=0ms",
        ] {
            let e = bad.parse::<Term>().unwrap_err().to_string();
            assert!(e.contains("write FIGURE<=BOUND"), "{bad}: {e}");
        }
    }
}
