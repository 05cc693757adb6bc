//! A service-level objective: terms such as `p99<=10ms`, `mean<=5ms`, `errors<=0.1%`, every one
//! of which a step must meet to pass; and the server's own figures, read by the probe that
//! watched it on the run's clock (`cpu<=70%`, `throttled<=1%`, `pss<=512MiB`, `fds<=10000`),
//! which a whole run is judged on beside its latency.

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
    /// The server's CPU as a share of what it may use (its quota, or the CPUs it may run on),
    /// 0–1, over the run.
    Cpu,
    /// The share of its CPU quota's periods it was throttled in, 0–1.
    Throttled,
    /// Its processes' proportional set size, the most read, bytes.
    Pss,
    /// Its processes' open file descriptors, the most read.
    Fds,
}

impl Figure {
    /// Read by the probe that watched the server, not from the generator's requests.
    pub fn is_server(self) -> bool {
        matches!(
            self,
            Figure::Cpu | Figure::Throttled | Figure::Pss | Figure::Fds
        )
    }

    /// A latency (a percentile or the mean), nanoseconds: drawn in ms, and on a log scale
    /// where its steps span decades.
    pub fn is_latency(self) -> bool {
        matches!(self, Figure::Percentile(_) | Figure::Mean)
    }

    /// A share (0–1), written as a percentage.
    fn is_share(self) -> bool {
        matches!(self, Figure::Errors | Figure::Cpu | Figure::Throttled)
    }
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

/// The grammar of a term, as an error names it.
pub const GRAMMAR: &str = "write FIGURE<=BOUND: p99<=10ms, p99.9<=50ms, mean<=5ms, errors<=0.1%, or the server's cpu<=70%, throttled<=1%, pss<=512MiB, fds<=10000";

/// An SLO term that does not parse: the message gives the grammar.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--slo {text:?}: {why}; {GRAMMAR}")]
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
            "cpu" => Figure::Cpu,
            "throttled" => Figure::Throttled,
            "pss" | "memory" => Figure::Pss,
            "fds" => Figure::Fds,
            p => {
                let q: f64 = p
                    .strip_prefix('p')
                    .and_then(|q| q.parse().ok())
                    .ok_or_else(|| {
                        error(&format!(
                            "{figure:?} is not p50, p99, p99.9, mean, errors, cpu, throttled, pss or fds"
                        ))
                    })?;
                if !(q > 0.0 && q < 100.0) {
                    return Err(error("a percentile is above 0 and below 100"));
                }
                Figure::Percentile(q)
            }
        };
        let bound = match figure {
            f if f.is_share() => {
                let pct = bound.strip_suffix('%').ok_or_else(|| {
                    error(&format!("a bound of {f} is a percentage, e.g. {f}<=1%"))
                })?;
                let pct: f64 = pct
                    .parse()
                    .ok()
                    .filter(|p: &f64| (0.0..=100.0).contains(p))
                    .ok_or_else(|| {
                        error(&format!("a bound of {f} is a percentage from 0% to 100%"))
                    })?;
                pct / 100.0
            }
            Figure::Pss => bytes(bound)
                .filter(|b| *b > 0.0)
                .ok_or_else(|| error(&format!("{bound:?} is not a size above 0 such as 512MiB")))?,
            Figure::Fds => bound
                .parse::<u64>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| error(&format!("{bound:?} is not a count above 0 such as 10000")))?
                as f64,
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

/// A term of the server's own figures given to a search, which judges latency and errors.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0} is the server's own figure over a whole run: judge it with `loadgen attack --slo {0}` and a probe (a search's steps judge latency and errors)")]
pub struct ServerTerm(pub Term);

/// Whether a search's steps can judge `term`: a latency or the errors, not the server's own
/// figures (a whole run's, `loadgen attack --slo`); `Err` says so in one line.
pub fn search_term(term: &Term) -> Result<(), ServerTerm> {
    if term.figure.is_server() {
        return Err(ServerTerm(*term));
    }
    Ok(())
}

/// A size in bytes: `512MiB`, `1.5GiB`, `800MB`, `4096` (bytes).
fn bytes(text: &str) -> Option<f64> {
    let at = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(at);
    let n: f64 = number.parse().ok()?;
    let scale = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "kib" | "k" => 1024.0,
        "mib" | "m" => 1024.0 * 1024.0,
        "gib" | "g" => 1024.0 * 1024.0 * 1024.0,
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        _ => return None,
    };
    Some(n * scale)
}

impl fmt::Display for Figure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Figure::Percentile(q) => write!(f, "p{q}"),
            Figure::Mean => f.write_str("mean"),
            Figure::Errors => f.write_str("errors"),
            Figure::Cpu => f.write_str("cpu"),
            Figure::Throttled => f.write_str("throttled"),
            Figure::Pss => f.write_str("pss"),
            Figure::Fds => f.write_str("fds"),
        }
    }
}

impl Slo {
    /// The terms a window of requests is judged on: all but the server's own figures.
    pub fn window_terms(&self) -> impl Iterator<Item = &Term> {
        self.terms.iter().filter(|t| !t.figure.is_server())
    }

    /// The terms read from the probe that watched the server.
    pub fn server_terms(&self) -> impl Iterator<Item = &Term> {
        self.terms.iter().filter(|t| t.figure.is_server())
    }

    /// The longest latency a term allows (a percentile's or the mean's bound), ns.
    pub fn latency_bound_ns(&self) -> Option<f64> {
        self.terms
            .iter()
            .filter(|t| matches!(t.figure, Figure::Percentile(_) | Figure::Mean))
            .map(|t| t.bound)
            .reduce(f64::max)
    }

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
    pub fn of(&self, s: &store::summary::Summary) -> Option<f64> {
        let l = &s.latency.corrected;
        let ns = match self.figure {
            Figure::Errors => return Some(1.0 - s.requests.success_ratio),
            Figure::Cpu | Figure::Throttled | Figure::Pss | Figure::Fds => return None,
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

    /// This term's figure of the server over a run, from the probe that watched it (`None`:
    /// not read, or not a figure of the server).
    pub fn of_server(&self, s: &crate::saturation::Saturation) -> Option<f64> {
        match self.figure {
            Figure::Cpu => s.cpu_share(),
            Figure::Throttled => s.throttled,
            Figure::Pss => s.pss_peak.map(|b| b as f64),
            Figure::Fds => s.fds_peak.map(|n| n as f64),
            _ => None,
        }
    }

    /// A value of this term's figure in words (`9.8 ms`, `0.05 %`, `65.2 MiB`, `120`).
    pub fn value_text(&self, value: f64) -> String {
        match self.figure {
            Figure::Cpu | Figure::Throttled => format!("{:.1} %", value * 100.0),
            Figure::Errors => format!("{} %", trim(value * 100.0)),
            Figure::Pss => format!("{} MiB", trim((value / 1048576.0 * 10.0).round() / 10.0)),
            Figure::Fds => format!("{value:.0}"),
            _ if value.is_infinite() => "unbounded".into(),
            _ => store::summary::format_ns(value.max(0.0) as u64),
        }
    }
}

impl fmt::Display for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.figure {
            fig if fig.is_share() => write!(f, "{fig}<={}%", trim(self.bound * 100.0)),
            Figure::Pss => write!(f, "pss<={}MiB", trim(self.bound / 1048576.0)),
            Figure::Fds => write!(f, "fds<={:.0}", self.bound),
            _ => write!(
                f,
                "{}<={}",
                self.figure,
                humantime::format_duration(Duration::from_nanos(self.bound as u64))
            ),
        }
    }
}

impl FromStr for Slo {
    type Err = SloError;

    /// An SLO as it prints: its terms joined by " and ".
    fn from_str(text: &str) -> Result<Slo, SloError> {
        let terms = text
            .split(" and ")
            .map(str::parse)
            .collect::<Result<Vec<Term>, _>>()?;
        Ok(Slo { terms })
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
            ("cpu<=70%", "cpu<=70%"),
            ("throttled <= 1%", "throttled<=1%"),
            ("pss<=512MiB", "pss<=512MiB"),
            ("memory<=1GiB", "pss<=1024MiB"),
            ("fds<=10000", "fds<=10000"),
        ] {
            let term: Term = text.parse().unwrap();
            assert_eq!(term.to_string(), shown);
            // Only a percentile or the mean is a latency (drawn in ms, on a log scale where
            // it spans decades).
            assert_eq!(
                term.figure.is_latency(),
                ["p99", "mean"].iter().any(|f| text.starts_with(f)),
                "{text}"
            );
        }
        let t: Term = "p99<=10ms".parse().unwrap();
        assert_eq!((t.figure, t.bound), (Figure::Percentile(99.0), 1e7));
        let t: Term = "pss<=512MiB".parse().unwrap();
        assert_eq!((t.figure, t.bound), (Figure::Pss, 512.0 * 1048576.0));
        assert_eq!(t.value_text(65.2 * 1048576.0), "65.2 MiB");
        let t: Term = "cpu<=70%".parse().unwrap();
        assert_eq!(
            (t.figure, t.bound, t.figure.is_server()),
            (Figure::Cpu, 0.7, true)
        );
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
            "cpu<=70",
            "cpu<=170%",
            "pss<=lots",
            "pss<=512XB",
            "fds<=0",
            "fds<=1.5",
        ] {
            let e = bad.parse::<Term>().unwrap_err().to_string();
            assert!(e.contains("write FIGURE<=BOUND"), "{bad}: {e}");
        }
    }
}
