//! Capacity searches: C_p(T, w), the highest rate at which a window of T seconds after w
//! seconds meets an SLO with probability p. Each step of a search is an ordinary run (labelled
//! with the search's id and its step); this module holds the SLO ([`slo`]), a step judged on its
//! point figures ([`judge`], with each term's 95 % interval beside it: [`interval`] for
//! independent samples, [`batch`] for a window's correlated ones), C_p estimated from every
//! step with its 95 % interval ([`fit`]), repeated searches pooled ([`repeated`]), targets
//! compared by the ratio of their figures over interleaved rounds ([`compare`]), a figure's
//! calibration check ([`check`]), the seeded generator ([`random`]), when a server has warmed
//! ([`warm`]), what grew with the rate at the knee, from the steps' kept runs ([`knee`]), and
//! the search as kept, for its page.

pub mod batch;
pub mod check;
pub mod compare;
pub mod fit;
pub mod interval;
pub mod judge;
pub mod knee;
pub mod random;
pub mod repeated;
pub mod slo;
pub mod warm;

pub use judge::{Judgement, Verdict};
pub use repeated::{agreed, median, Agreed, Repeated};
use serde::{Deserialize, Serialize};
pub use slo::{Slo, Term};
use store::kept::SearchRow;
/// How a step's requests arrived (kept with the search).
pub use store::vocabulary::Arrival;
use store::{Store, StoreError};

/// Labels a search's runs carry.
pub mod label {
    /// The search's id.
    pub const SEARCH: &str = "search";
    /// The step's number, from 1.
    pub const STEP: &str = "step";
    /// The comparison's id, on the searches it interleaved (and their steps' runs).
    pub const COMPARE: &str = "compare";
}

/// How a search is run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    pub start: f64,
    /// The bracket's width at which the search stops, as a share of its low end.
    pub resolution: f64,
    /// The measured window of a step, s.
    pub step_s: f64,
    /// The warm-up before each window, s.
    pub warmup_s: f64,
    pub min_rate: f64,
    pub max_rate: f64,
    /// The factor the rate grows by (shrinks by) until a step fails (passes): 2 for a search
    /// from nothing, less for one repeated near a known capacity.
    #[serde(default = "doubling")]
    pub growth: f64,
    /// How each step's requests arrived; `None` for a search kept before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrival: Option<Arrival>,
    /// The figure searched for is C_p: the rate a window meets the SLO at with probability p.
    #[serde(default = "half")]
    pub p: f64,
    /// The search stops when C_p's 95 % interval is within ± this share of it.
    #[serde(default = "five_percent")]
    pub until: f64,
    /// The ratio between neighbouring rates of the steps near the knee (halved, in ln, when
    /// they do not tell passes from fails apart).
    #[serde(default = "two_percent")]
    pub grid: f64,
    /// Seeds the up-and-down rule's coin (for p other than 0.5), so that a resumed search
    /// replays its chain.
    #[serde(default)]
    pub seed: u64,
}

fn doubling() -> f64 {
    2.0
}

fn half() -> f64 {
    0.5
}

fn five_percent() -> f64 {
    0.05
}

fn two_percent() -> f64 {
    1.02
}

/// How often a window at C_p meets the SLO, in words: "one time in two", "nine times in ten",
/// "with probability 0.75".
pub fn how_often(p: f64) -> String {
    if (p - 0.5).abs() < 1e-9 {
        "one time in two".to_string()
    } else if (p - 0.9).abs() < 1e-9 {
        "nine times in ten".to_string()
    } else {
        format!("with probability {p}")
    }
}

impl Settings {
    /// What the figure promises a user, and what it does not: a run longer than a step's
    /// window must pass every window of its length.
    pub fn promise(&self) -> String {
        let how_often = how_often(self.p);
        format!(
            "at this rate a window of {} s, after {} s at the rate, meets the SLO {how_often}; a longer run at it must meet the SLO in every window of its length, so it meets it less often than that. For a run of your length held within the SLO, search with steps of that length (--step, or [search] step) and p = 0.9, and run at a share of that figure",
            self.step_s, self.warmup_s
        )
    }

    /// "C_0.5(T = 10 s, w = 2 s, Poisson arrivals)": the figure as defined, with what defines it.
    pub fn figure(&self) -> String {
        format!(
            "C_{}(T = {} s, w = {} s{})",
            self.p,
            self.step_s,
            self.warmup_s,
            self.arrival
                .map_or(String::new(), |a| format!(", arrivals {}", a.text()))
        )
    }
}

/// How far C_p moved from the first half of a search's steps beside the knee to the second:
/// each half fitted alone, the ratio second ÷ first with its 95 % interval (the halves'
/// variances of ln C_p summed). The fit assumes one curve over the sitting; this is its check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Drift {
    pub first: f64,
    pub second: f64,
    pub ratio: f64,
    pub low: f64,
    pub high: f64,
    /// Where the drift was shown: the figure's interval as fitted, before it was widened to
    /// hold both halves' figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fitted: Option<(Option<f64>, Option<f64>)>,
}

impl Drift {
    /// Whether its interval excludes no move at all.
    pub fn shown(&self) -> bool {
        self.low > 1.0 || self.high < 1.0
    }

    /// "C_p moved −1.2 % (95 % interval −3.0 to +0.7 %) from the first half of the steps beside
    /// the knee to the second: no drift shown".
    pub fn text(&self) -> String {
        let pct = |r: f64| format!("{:+.1}", (r - 1.0) * 100.0);
        format!(
            "it moved {} % (95 % interval {} to {} %) from the first half of the steps beside the knee to the second: {}",
            pct(self.ratio),
            pct(self.low),
            pct(self.high),
            self.warning().unwrap_or_else(|| "no drift shown".to_string())
        )
    }

    /// "WARNING: the host drifted within the search: …", where the drift is shown.
    pub fn warning(&self) -> Option<String> {
        self.shown().then(|| format!(
            "WARNING: the host drifted within the search: the figure is an average over the drifts its steps met, and its interval is widened to hold both halves' figures ({:.0} and {:.0} req/s); search again, or in a shorter sitting",
            self.first, self.second
        ))
    }
}

/// One step as kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// From 1.
    pub number: u32,
    pub rate: f64,
    /// The run it is kept as.
    pub run_id: Option<String>,
    /// The window it was judged over, s (longer when an uncertain step was run again).
    pub window_s: f64,
    pub judgement: Judgement,
    /// The runs of its earlier attempts, each uncertain and run again longer: kept, not judged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retried: Vec<String>,
    /// What limited the server in a step that did not pass, from its probes (the target's and
    /// its database's) over the step's load; `None` where no probe watched it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<StepLimit>,
    /// Whether it was a step near the knee (the up-and-down rule's), not the coarse bracket's.
    #[serde(default)]
    pub fine: bool,
    /// How long the server took to drain before it, after a step that did not pass (measured:
    /// a trickle of requests answered as fast as before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drained_s: Option<f64>,
    /// The host over the step, as the generator's host read it; `None` where it was not read
    /// (searches kept before, steps fired from gun hosts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<StepHost>,
    /// The round of an interleaved comparison it was run in (one step of every target per
    /// round, in a random order); `None` in a search of one target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<u32>,
}

/// The host over one step: part of the figure, since a capacity measured on a shared host is
/// that host's at that time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StepHost {
    /// The share of the host's CPU time the hypervisor gave to other guests, %.
    pub steal_pct: f64,
    /// How busy all the host's CPUs were, every process counted, %.
    pub busy_pct: f64,
    /// The CPUs' mean clock as the kernel reports it, MHz, where it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_mhz: Option<f64>,
    /// Of the generator's CPUs, the share other processes took, %.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub others_on_generator_pct: Option<f64>,
    /// One dependent load of a pointer chase through 64 MiB, timed on the generator's CPU
    /// just after the step, ns: the host's memory latency then (`None` in searches kept
    /// before it was timed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chase_ns: Option<f64>,
}

/// How the host varied over a search's steps, in a sentence ("over 17 steps, steal 0.2–1.4 %,
/// CPUs 2,445 MHz, other processes up to 3 % of the generator's CPUs"); `None` without any
/// step's host read.
pub fn sitting(steps: &[Step]) -> Option<String> {
    let hosts: Vec<&StepHost> = steps.iter().filter_map(|s| s.host.as_ref()).collect();
    let range = |v: Vec<f64>| {
        let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (lo.is_finite() && hi.is_finite()).then_some((lo, hi))
    };
    let (s_lo, s_hi) = range(hosts.iter().map(|h| h.steal_pct).collect())?;
    let mut parts = vec![format!(
        "steal {s_lo:.1}–{s_hi:.1} % of the host's CPU time"
    )];
    if let Some((b_lo, b_hi)) = range(hosts.iter().map(|h| h.busy_pct).collect()) {
        parts.push(format!("its CPUs {b_lo:.0}–{b_hi:.0} % busy"));
    }
    if let Some((m_lo, m_hi)) = range(hosts.iter().filter_map(|h| h.cpu_mhz).collect()) {
        parts.push(if (m_hi - m_lo).abs() < 1.0 {
            format!("clocked at {m_lo:.0} MHz")
        } else {
            format!("clocked at {m_lo:.0}–{m_hi:.0} MHz")
        });
    }
    if let Some((c_lo, c_hi)) = range(hosts.iter().filter_map(|h| h.chase_ns).collect()) {
        parts.push(format!("a load from memory {c_lo:.0}–{c_hi:.0} ns"));
    }
    if let Some((_, o_hi)) = range(
        hosts
            .iter()
            .filter_map(|h| h.others_on_generator_pct)
            .collect(),
    ) {
        parts.push(format!(
            "other processes took up to {o_hi:.1} % of the generator's CPUs"
        ));
    }
    Some(format!("over {} steps, {}", hosts.len(), parts.join(", ")))
}

/// The server warmed before a search's first judged step: a rate below the first step's, held
/// in one-second samples until their median latency stopped trending ([`warm`]: its
/// connections, pools and JIT warm), or the warm-up's bound passed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Warmed {
    pub rate: f64,
    pub seconds: f64,
    /// Whether the samples' median latency stopped trending.
    pub settled: bool,
    /// Each sample's p99 (corrected), ns.
    pub p99_ns: Vec<u64>,
    /// Each sample's median (corrected), ns (empty in searches kept before it was).
    #[serde(default)]
    pub p50_ns: Vec<u64>,
    /// The trend of the last samples, when there were enough.
    #[serde(default)]
    pub trend: Option<warm::Trend>,
}

impl Warmed {
    /// "warmed 74 s at 3,000 req/s: its median latency fell 31 % (1.92ms → 1.32ms), then
    /// held", "warmed 20 s at 243 req/s: its median latency held (1.21ms → 1.19ms)" for a
    /// server warm at once, or, where it did not settle, what that means for the figure.
    pub fn text(&self) -> String {
        let ns = store::summary::format_ns;
        let at = format!("warmed {:.0} s at {:.0} req/s", self.seconds, self.rate);
        let p50: Vec<f64> = self.p50_ns.iter().map(|&n| n as f64).collect();
        let (Some(trend), Some(first), Some(last)) =
            (self.trend, self.p50_ns.first(), self.p50_ns.last())
        else {
            // Too few samples to judge a trend, or a search kept before they were.
            let p99: Vec<String> = self.p99_ns.iter().map(|&n| ns(n)).collect();
            return format!("{at} (p99 of each second: {})", p99.join(" → "));
        };
        let moved = warm::moved(&p50, &trend).unwrap_or(0.0);
        let held = moved.abs() < warm::SMALL;
        let how = if held {
            format!("its median latency held ({} → {})", ns(*first), ns(*last))
        } else {
            format!(
                "its median latency {} {:.0} % ({} → {})",
                if moved < 0.0 { "fell" } else { "rose" },
                moved.abs() * 100.0,
                ns(*first),
                ns(*last)
            )
        };
        if self.settled && held {
            format!("{at}: {how}")
        } else if self.settled {
            format!("{at}: {how}, then held")
        } else {
            format!(
                "{at}: {how} and was still {} {:.0} % over its last {} s when the warm-up's bound passed: {NOT_SETTLED}",
                if trend.change < 0.0 { "falling" } else { "rising" },
                trend.change.abs() * 100.0,
                trend.samples
            )
        }
    }

    /// [`NOT_SETTLED`], where the server did not settle.
    pub fn warning(&self) -> Option<String> {
        (!self.settled).then(|| NOT_SETTLED.to_string())
    }
}

/// What a warm-up that did not settle means for the figure, and what to do.
pub const NOT_SETTLED: &str = "WARNING: the server had not settled, so the first steps may read it cold; warm it longer (--settle) or search again";

/// What a search's 95 % interval was checked on, said beside every figure: where it holds and
/// where it does not (docs/benchmarks/capacity.md, "The worlds grid").
pub const CHECKED: &str = "its 95 % interval was checked on simulated worlds: it held the truth in 94–98 % of searches at knees 2 % wide (10 → 90 %) and in 92–95 % at knees 10 % wide on a host moving up to as much; at knees 30 % wide, or a host moving 2.5 times the knee, in 52–87 %, mostly because the search's steps ran out before they bounded it (where shown it held in 88–97 %: docs/benchmarks/capacity.md, the worlds grid)";

/// How far the other figure of a search (C_0.9 of a search for C_0.5) was checked: read from
/// the fitted curve's shape away from where the steps were placed, it is approximate.
pub const ALSO_CHECKED: &str = "approximate: read from the fitted curve's shape away from the rates the search ran, so its interval rests on the curve being logistic; it held the true C_0.9 in 91–94 % of simulated searches for C_0.5 at knees 2 % wide, 83–85 % at 10 % and 40–70 % at 30 % (docs/benchmarks/capacity.md, the worlds grid). To rely on it, search for it (--p 0.9, or [search] p = 0.9)";

/// Steps that vary together (close in time) share a cluster of this many in the fit.
pub const CLUSTER: u32 = 4;

impl Step {
    /// Whether the server, not the generator, was judged: an invalid step says nothing of it.
    pub fn valid(&self) -> bool {
        self.judgement.verdict != Verdict::Invalid
    }
}

/// The resource a step ran out of, and the sentence that says so with its figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepLimit {
    pub limit: crate::saturation::Limit,
    /// The short sentence: the resource and the one or two figures that prove it (empty in
    /// searches kept before it was).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub short: String,
    /// The evidence: every figure read, what was ruled out and what was not measured.
    pub why: String,
}

impl StepLimit {
    /// As a finding: its short sentence, or (a step kept before steps kept one) the evidence's
    /// first clause.
    pub fn finding(&self) -> crate::saturation::Finding {
        let short = if self.short.is_empty() {
            self.why.split(';').next().unwrap_or(&self.why).to_string()
        } else {
            self.short.clone()
        };
        crate::saturation::Finding::new(self.limit, short, self.why.clone())
    }
}

/// How a search ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Running,
    /// The bracket reached the resolution.
    Found,
    /// The server missed the SLO at the lowest rate tried.
    BelowMinimum,
    /// The server passed at the highest rate allowed: its capacity is at least that.
    AboveMaximum,
    /// The generator was the limit: nothing is said of the server beyond the last pass.
    GeneratorLimited,
    /// Stopped by the user, or by a failure (the server went away); the bracket so far kept.
    Interrupted,
    /// Out of steps (or out of its time budget) before the interval was narrow enough.
    OutOfSteps,
    /// One of a comparison's searches, ended with the comparison (its rounds or budget spent)
    /// before its own interval was narrow enough: what the comparison answers is the ratio,
    /// whose interval is its own.
    Compared,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Running => "running",
            Status::Found => "found",
            Status::BelowMinimum => "below the lowest rate",
            Status::AboveMaximum => "above the highest rate",
            Status::GeneratorLimited => "generator-limited",
            Status::Interrupted => "interrupted",
            Status::OutOfSteps => "out of steps",
            Status::Compared => "ended with its comparison",
        }
    }
}

/// A search as kept: what it looked for, every step, and what it found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Search {
    pub id: String,
    pub name: String,
    /// The experiment it is a cell of, if any.
    pub experiment: Option<String>,
    /// What was searched (the URL or the targets file), redacted.
    pub target: String,
    pub slo: Slo,
    pub settings: Settings,
    pub steps: Vec<Step>,
    pub status: Status,
    /// The figure: C_p estimated from every step where passes and fails both bound it, else
    /// the highest rate that passed (a lower bound, see [`Search::only_at_least`]).
    pub capacity: Option<f64>,
    /// C_p estimated from every valid step, with its 95 % interval: the p searched for first,
    /// then the other of 0.5 and 0.9.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub estimates: Vec<fit::Fitted>,
    /// The highest rate that passed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub highest_pass: Option<f64>,
    /// How far the knee moved from the first half of the steps beside it to the second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift: Option<Drift>,
    /// How the server was warmed before the first step, when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmed: Option<Warmed>,
    /// Its calibration check, when one was asked for (`--check N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<check::Check>,
    /// The lowest rate that did not (after the highest pass).
    pub failed_at: Option<f64>,
    /// The lowest rate the generator could not drive validly, when a step found one: with
    /// `capacity` just below it and no fail between, the generator's limit, measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator_limit: Option<f64>,
    /// Why the search ended where it did, in one sentence.
    pub reason: String,
    /// The labels its runs carry beside `search` and `step` (an experiment's cell).
    pub labels: std::collections::BTreeMap<String, String>,
    pub started_at_ns: i64,
    pub updated_at_ns: i64,
}

/// The value of an experiment's `rate` axis that makes its cells the searches that shares of a
/// capacity (`"80%"`) are taken of.
pub const SEARCH_RATE: &str = "search";

/// The rate a share of a capacity is (0.8 of 66,300 req/s: 53,040), to a request a second and
/// at least one: what a share's cell is run at, and what its page says it was run at.
pub fn share_of(capacity: f64, share: f64) -> f64 {
    (capacity * share).round().max(1.0)
}

impl Search {
    /// Its valid steps as the fit sees them, clustered `cluster` apart (this search's number
    /// when searches are pooled).
    pub fn points(&self, cluster: Option<u32>) -> Vec<fit::Point> {
        self.steps
            .iter()
            .filter(|s| s.valid())
            .map(|s| fit::Point {
                rate: s.rate,
                pass: s.judgement.verdict.passed(),
                cluster: cluster.unwrap_or((s.number.saturating_sub(1)) / CLUSTER),
            })
            .collect()
    }

    /// C_p at the p searched for, with its interval, when estimated.
    pub fn estimate(&self) -> Option<&fit::Fitted> {
        self.estimates.first()
    }

    /// Where its figure does not hold what it claims, one line each with what to do: a knee
    /// wider than the interval was proven on, a host that drifted, a server that had not
    /// settled before the first step.
    pub fn warnings(&self) -> Vec<String> {
        [
            self.estimate().and_then(fit::Fitted::wide_knee),
            self.drift.as_ref().and_then(Drift::warning),
            self.warmed.as_ref().and_then(Warmed::warning),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// Estimates C_p at the p searched for and at the other of 0.5 and 0.9 from every valid
    /// step, and takes the figure from them (or the highest pass where they cannot bound it).
    pub fn estimate_all(&mut self) {
        let points = self.points(None);
        self.highest_pass = points
            .iter()
            .filter(|p| p.pass)
            .map(|p| p.rate)
            .fold(None, |m: Option<f64>, r| Some(m.map_or(r, |m| m.max(r))));
        let above = |rates: Vec<f64>| {
            rates
                .into_iter()
                .filter(|r| self.highest_pass.is_none_or(|h| *r > h))
                .fold(None, |m: Option<f64>, r| Some(m.map_or(r, |m| m.min(r))))
        };
        self.failed_at = above(points.iter().filter(|p| !p.pass).map(|p| p.rate).collect());
        self.generator_limit = above(
            self.steps
                .iter()
                .filter(|s| !s.valid())
                .map(|s| s.rate)
                .collect(),
        );
        let both = points.iter().any(|p| p.pass) && points.iter().any(|p| !p.pass);
        let other = if (self.settings.p - 0.5).abs() < 1e-9 {
            0.9
        } else {
            0.5
        };
        self.estimates = if both {
            [self.settings.p, other]
                .into_iter()
                .filter_map(|p| fit::fit(&points, p, true))
                .collect()
        } else {
            Vec::new()
        };
        self.drift = self.drift_test();
        self.widen_by_drift();
        self.capacity = match self.status {
            Status::GeneratorLimited | Status::AboveMaximum | Status::BelowMinimum => {
                self.highest_pass
            }
            _ => self.estimate().map(|e| e.rate).or(self.highest_pass),
        };
    }

    /// Where the drift test shows the host moved, C_p's interval widened to hold both halves'
    /// figures: the capacity the search read moved between them, and an interval fitted as one
    /// curve over the sitting does not allow for that.
    fn widen_by_drift(&mut self) {
        let Some(drift) = self.drift.as_mut().filter(|d| d.shown()) else {
            return;
        };
        let p = self.settings.p;
        let (lo, hi) = (drift.first.min(drift.second), drift.first.max(drift.second));
        if let Some(e) = self.estimates.iter_mut().find(|e| e.p == p) {
            drift.fitted = Some((e.low, e.high));
            e.low = e.low.map(|l| l.min(lo));
            e.high = e.high.map(|h| h.max(hi));
        }
    }

    /// The drift test: C_p of the first and second half of the valid steps beside the knee,
    /// each fitted alone; `None` with fewer than 12 of them or a half its fit cannot bound.
    pub fn drift_test(&self) -> Option<Drift> {
        let fine: Vec<fit::Point> = self
            .steps
            .iter()
            .filter(|s| s.fine && s.valid())
            .map(|s| fit::Point {
                rate: s.rate,
                pass: s.judgement.verdict.passed(),
                cluster: 0,
            })
            .collect();
        if fine.len() < 12 {
            return None;
        }
        let (a, b) = fine.split_at(fine.len() / 2);
        let half = |points: &[fit::Point]| {
            let f = fit::fit(points, self.settings.p, false)?;
            Some((f.rate, f.low?, f.high?))
        };
        let (first, second) = (half(a)?, half(b)?);
        let (ratio, low, high) = fit::ratio(second, first)?;
        Some(Drift {
            first: first.0,
            second: second.0,
            ratio,
            low,
            high,
            fitted: None,
        })
    }

    /// Why its capacity is only a lower bound: it ended at the generator's limit or at its
    /// highest rate, not at a failing step of the server's.
    pub fn only_at_least(&self) -> Option<String> {
        match self.status {
            Status::GeneratorLimited => Some(match self.generator_limit {
                Some(limit) => format!("the generator drives no more than {limit} req/s validly"),
                None => format!(
                    "the generator is the limit at {} req/s",
                    self.steps.last().map_or(0.0, |st| st.rate)
                ),
            }),
            Status::AboveMaximum => Some(format!(
                "it passed at the highest rate tried, {}",
                self.settings.max_rate
            )),
            _ => None,
        }
    }

    /// The bracket `[capacity, failed_at]` as a share of its low end.
    pub fn width(&self) -> Option<f64> {
        match (self.capacity, self.failed_at) {
            (Some(low), Some(high)) if low > 0.0 => Some((high - low) / low),
            _ => None,
        }
    }
}

/// Keeps (or replaces) a search, its target and name redacted as a run's are.
pub async fn put_search(store: &Store, s: &Search) -> Result<(), StoreError> {
    let mut kept = s.clone();
    kept.target = redact::text(&s.target);
    kept.name = redact::text(&s.name);
    let row = SearchRow {
        id: &kept.id,
        name: &kept.name,
        experiment: kept.experiment.as_deref(),
        status: kept.status.as_str(),
        started_at_ns: kept.started_at_ns,
        updated_at_ns: kept.updated_at_ns,
    };
    store.put_kept_search(&row, &kept).await
}

/// Every search kept, oldest first.
pub async fn searches(store: &Store) -> Result<Vec<Search>, StoreError> {
    store.kept_searches().await
}

/// One search, if kept.
pub async fn search(store: &Store, id: &str) -> Result<Option<Search>, StoreError> {
    Ok(searches(store).await?.into_iter().find(|s| s.id == id))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A warm-up's three wordings: fell then held, held from the start, and not settled.
    #[test]
    fn a_warm_up_says_how_the_latency_moved_in_one_of_three_ways() {
        let warmed = |p50_us: &[f64], settled: bool| {
            let p50: Vec<f64> = p50_us.iter().map(|u| u * 1e3).collect();
            Warmed {
                rate: 3000.0,
                seconds: p50.len() as f64,
                settled,
                p99_ns: p50.iter().map(|n| (n * 3.0) as u64).collect(),
                p50_ns: p50.iter().map(|&n| n as u64).collect(),
                trend: warm::trend(&p50, 20),
            }
            .text()
        };
        let fell: Vec<f64> = (0..60)
            .map(|i| 1320.0 + 600.0 * (-(i as f64) / 8.0).exp())
            .collect();
        let said = warmed(&fell, true);
        assert!(
            said.starts_with("warmed 60 s at 3000 req/s: its median latency fell ")
                && said.ends_with(", then held"),
            "{said}"
        );
        let flat: Vec<f64> = (0..20).map(|i| 1210.0 - i as f64).collect();
        let said = warmed(&flat, true);
        assert_eq!(
            said,
            "warmed 20 s at 3000 req/s: its median latency held (1.21ms → 1.19ms)"
        );
        let falling: Vec<f64> = (0..30).map(|i| 2000.0 - 20.0 * i as f64).collect();
        let said = warmed(&falling, false);
        assert!(
            said.contains("and was still falling ")
                && said.contains("WARNING: the server had not settled"),
            "{said}"
        );
    }

    #[test]
    fn the_sitting_is_said_from_every_step_the_host_was_read_over() {
        let step = |host: Option<StepHost>| Step {
            number: 1,
            rate: 1000.0,
            run_id: None,
            window_s: 10.0,
            judgement: Judgement {
                verdict: Verdict::Pass,
                reason: String::new(),
                terms: Vec::new(),
                achieved: 1000.0,
                requests: 0,
                queue: None,
            },
            retried: Vec::new(),
            limit: None,
            fine: false,
            drained_s: None,
            round: None,
            host,
        };
        let host = |steal_pct: f64, others: f64| {
            Some(StepHost {
                steal_pct,
                busy_pct: 60.0,
                cpu_mhz: Some(2445.4),
                others_on_generator_pct: Some(others),
                chase_ns: Some(80.0 + others),
            })
        };
        assert_eq!(sitting(&[step(None)]), None);
        let said = sitting(&[step(host(0.2, 1.0)), step(None), step(host(1.4, 3.0))]).unwrap();
        assert_eq!(
            said,
            "over 2 steps, steal 0.2–1.4 % of the host's CPU time, its CPUs 60–60 % busy, clocked at 2445 MHz, a load from memory 81–83 ns, other processes took up to 3.0 % of the generator's CPUs"
        );
    }
}
