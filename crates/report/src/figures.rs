//! What the pages show, computed from a stored run: tables and time series.
//!
//! Everything a page draws comes from here, so that the tables the tests check and the figures
//! in the plots are the same numbers. Times are seconds on the run's timeline (0 = the first
//! request's intended send time; negative in the probes' pre-roll).

use std::collections::BTreeMap;
use std::time::{Duration, UNIX_EPOCH};

use probe::protocol::Record;
use probe::sample::{EventKind, ProcessSample};
use serde::Serialize;
use store::model::IntervalStats;
use store::run::{RunConfig, RunStatus, StoredInterval, StoredRun};
use store::summary::{RunFacts, Summary};

/// Bytes in a MiB, the unit of every memory chart.
const MIB: f64 = 1_048_576.0;

pub use crate::series::Series;

/// The percentiles of the HDR percentile table: label and quantile.
pub const PERCENTILES: [(&str, f64); 8] = [
    ("p50", 0.5),
    ("p75", 0.75),
    ("p90", 0.9),
    ("p95", 0.95),
    ("p99", 0.99),
    ("p99.9", 0.999),
    ("p99.99", 0.9999),
    ("max", 1.0),
];

/// One row of the HDR percentile table, nanoseconds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PercentileRow {
    pub percentile: &'static str,
    pub quantile: f64,
    pub corrected_ns: u64,
    pub service_ns: u64,
}

/// The load over time, one point per interval (at its middle).
#[derive(Debug, Clone, Default)]
pub struct LoadSeries {
    /// Corrected latency per interval: p50, p90, p99, max (ms).
    pub latency: Vec<Series>,
    /// Requests per second: sent, successful, errors.
    pub rates: Vec<Series>,
    /// The generator: p99 send lateness (ms), requests in flight, connections open.
    pub lateness: Series,
    pub in_flight: Series,
    pub connections: Series,
    /// Corrected and service latency, a column an interval, counts by log-latency bin.
    pub heatmaps: [crate::model::heatmap::Heatmap; 2],
}

/// What one probe saw, over time.
#[derive(Debug, Clone, Default)]
pub struct ProbeFigures {
    /// e.g. `api on 10.0.0.5:7700 (--port 8080)`.
    pub label: String,
    pub host: probe::sample::HostInfo,
    pub clock: Option<store::run::ClockAlignment>,
    /// The tree's totals.
    pub cpu: Series,
    pub rss_mib: Series,
    pub threads: Series,
    pub fds: Series,
    /// FDs by kind (from the slow collectors' samples).
    pub fd_kinds: Vec<Series>,
    /// TCP sockets by state, and the accept queue.
    pub tcp: Vec<Series>,
    /// Context switches per second, voluntary and involuntary.
    pub switches: Vec<Series>,
    pub host_cpu: Series,
    /// CPU % of each member of the tree, when there are several.
    pub members: Vec<Series>,
    /// RSS (MiB) of each member of the tree, when there are several, in `members`' order.
    pub members_rss: Vec<Series>,
    /// Events, with their time and a short description.
    pub events: Vec<(f64, String)>,
    /// Stretches of missing records: (time, description).
    pub gaps: Vec<(f64, String)>,
    pub samples: usize,
    /// The tree's memory, the most it reached, as a page states it beside the group's name.
    pub memory: Option<Memory>,
    pub peak_fds: Option<u64>,
    pub fd_limits: (Option<u64>, Option<u64>),
    /// Where the tree's CPU went in the attack window, when the probe profiled.
    pub profile: Option<crate::profile::ProfileFigures>,
    /// Time its threads waited for a CPU, % of a core (from the slow collector's passes).
    pub run_wait: Series,
    /// Its cgroup's quota periods that ended throttled, %.
    pub throttled: Series,
    /// What limited it over the load's window, from these figures.
    pub saturation: Option<analysis::saturation::Saturation>,
    /// A database's backends as it reported them: connected, and active by what they waited
    /// on (in [`probe::sample::WaitClass::ALL`]'s order); empty for other probes.
    pub connected: Series,
    pub active: Vec<Series>,
    /// Its activity's means over the load's window.
    pub activity: Option<analysis::system::Activity>,
}

/// A group of processes' memory at its peak, and how it was counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Memory {
    pub bytes: u64,
    pub counted: Counted,
}

/// How a group's memory was counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counted {
    /// One process: its resident set.
    Rss,
    /// Several processes: each one's proportional set size (a page shared by n processes
    /// counted 1/n in each), summed: what the group holds, its shared pages once.
    Pss { processes: usize },
    /// Several processes whose PSS could not be read: their RSS summed, which counts a
    /// shared page once in each, an upper bound.
    RssSummed { processes: usize },
}

impl Counted {
    /// Its name beside a figure: "RSS", "PSS of 12 processes".
    pub fn name(&self) -> String {
        match self {
            Counted::Rss => "RSS".into(),
            Counted::Pss { processes } => format!("PSS of {processes} processes"),
            Counted::RssSummed { processes } => format!("RSS of {processes} processes summed"),
        }
    }
}

impl Memory {
    /// How it was counted, for a cell's title or a note: "PSS of 12 processes".
    pub fn how(&self) -> String {
        match self.counted {
            Counted::Rss => "RSS of one process".into(),
            Counted::Pss { processes } => format!(
                "PSS summed over {processes} processes (each shared page counted once)"
            ),
            Counted::RssSummed { processes } => format!(
                "RSS summed over {processes} processes, PSS not readable: pages they share are counted once in each, so this is an upper bound"
            ),
        }
    }
}

/// The peak of a tree's memory over its samples: a sample of one process counts its RSS; one of
/// several, the sum of their PSS where every one's has been read (the probe reads PSS in its
/// slow passes, each process's last reading standing until its next), else their RSS summed
/// (said).
#[derive(Debug, Default)]
struct MemoryPeak {
    single: Option<u64>,
    pss: Option<(u64, usize)>,
    rss_summed: Option<(u64, usize)>,
    /// Each process's last PSS read, by PID and start time.
    last_pss: std::collections::HashMap<(i32, u64), u64>,
}

impl MemoryPeak {
    fn add(&mut self, s: &probe::sample::Sample, total: &ProcessSample) {
        for p in &s.processes {
            if let Some(pss) = p.pss_bytes {
                self.last_pss.insert((p.pid, p.start_ticks), pss);
            }
        }
        let n = s.processes.len();
        if n <= 1 {
            self.single = self.single.max(Some(total.rss_bytes));
            return;
        }
        let pss: Option<u64> = s
            .processes
            .iter()
            .map(|p| self.last_pss.get(&(p.pid, p.start_ticks)).copied())
            .sum();
        if let Some(pss) = pss {
            if self.pss.is_none_or(|(b, _)| pss > b) {
                self.pss = Some((pss, n));
            }
        }
        if self.rss_summed.is_none_or(|(b, _)| total.rss_bytes > b) {
            self.rss_summed = Some((total.rss_bytes, n));
        }
    }

    /// The highest of the tree's figures over the samples, and how that one was counted.
    fn finish(self) -> Option<Memory> {
        let several = match (self.pss, self.rss_summed) {
            (Some((bytes, processes)), _) => Some(Memory {
                bytes,
                counted: Counted::Pss { processes },
            }),
            (None, Some((bytes, processes))) => Some(Memory {
                bytes,
                counted: Counted::RssSummed { processes },
            }),
            (None, None) => None,
        };
        let one = self.single.map(|bytes| Memory {
            bytes,
            counted: Counted::Rss,
        });
        match (several, one) {
            (Some(s), Some(o)) if o.bytes > s.bytes => Some(o),
            (Some(s), _) => Some(s),
            (None, o) => o,
        }
    }
}

impl ProbeFigures {
    /// What it watches, as a page names it: the target, or the participant's name.
    pub fn watching(&self) -> String {
        match (&self.host.name, self.host.role) {
            (Some(name), _) => name.clone(),
            (None, probe::sample::Role::Target) => "the target".into(),
            (None, role) => role.as_str().into(),
        }
    }
}

/// Everything the pages say about one run.
#[derive(Debug, Clone)]
pub struct RunFigures {
    pub id: String,
    pub name: String,
    pub experiment: Option<String>,
    pub labels: BTreeMap<String, String>,
    pub status: RunStatus,
    pub stop_reason: Option<String>,
    /// RFC 3339, to the second.
    pub started: String,
    /// Wall-clock time of time zero, Unix ns.
    pub started_at_ns: i64,
    pub summary: Summary,
    /// Whether `summary` was computed here, the run having ended without one.
    pub summary_recomputed: bool,
    pub percentiles: Vec<PercentileRow>,
    /// Corrected and service latency by percentile: (1 / (1 − p), ms).
    pub distribution: Vec<Series>,
    pub load: LoadSeries,
    pub probes: Vec<ProbeFigures>,
    /// The attack window on the timeline (s).
    pub attack: (f64, f64),
    /// The whole timeline covered (s), pre-roll and post-roll included.
    pub span: (f64, f64),
    pub config: RunConfig,
    pub gun_host: store::run::HostFacts,
    pub warnings: Vec<String>,
    pub shard: Option<store::run::Shard>,
    /// The target and its database over the load's window: what limited the target.
    pub system: Option<analysis::system::System>,
    /// A run group's shards, one a gun host (their own pages and figures), so that a slow gun
    /// is seen beside the merged figures rather than inside them.
    pub guns: Vec<std::sync::Arc<RunFigures>>,
    /// The newest `loadgen selftest` kept of the host the run was made on, which its page
    /// cites beside the run's validity.
    pub selftest: Option<store::selftest::SelfTest>,
}

impl RunFigures {
    /// The probe watching the target: every figure labelled with the target is its alone,
    /// never its database's nor a watched group's.
    pub fn target_probe(&self) -> Option<&ProbeFigures> {
        self.probes
            .iter()
            .find(|p| p.host.role == probe::sample::Role::Target)
    }

    /// The probes watching what ran beside the target (its database, the watched groups),
    /// each a group of its own.
    pub fn beside(&self) -> impl Iterator<Item = &ProbeFigures> {
        self.probes
            .iter()
            .filter(|p| p.host.role != probe::sample::Role::Target)
    }

    /// The target's memory at its peak (see [`Memory`]).
    pub fn target_memory(&self) -> Option<Memory> {
        self.target_probe().and_then(|p| p.memory)
    }

    /// The target's memory at its peak, in bytes.
    pub fn peak_rss_bytes(&self) -> Option<u64> {
        self.target_memory().map(|m| m.bytes)
    }

    /// Whether the server did not hold up in this run: its sends were held back by the server
    /// (its responses or its accepts), or over 1 % of its requests failed (timeouts under
    /// overload, where the generator kept its schedule by opening connections). Then a page
    /// says what limited it.
    pub fn struggled(&self) -> bool {
        let s = &self.summary;
        let failing = s.requests.total > 0 && 1.0 - s.requests.success_ratio > 0.01;
        s.held_back_by_server() || failing
    }

    /// The target's open FDs at their peak.
    pub fn peak_fds(&self) -> Option<u64> {
        self.target_probe().and_then(|p| p.peak_fds)
    }
}

/// Intervals folded as they are read: the run's totals and the load's series. Nothing else
/// of an interval is kept (its histograms are large; see `Store::load_run_streaming`).
#[derive(Debug)]
pub struct IntervalFold {
    totals: IntervalStats,
    load: LoadSeries,
    /// End of the last interval on the timeline (s).
    last_end: f64,
}

impl Default for IntervalFold {
    fn default() -> Self {
        let named = |names: &[&str]| names.iter().map(|n| Series::new(n)).collect();
        IntervalFold {
            totals: IntervalStats::new(0, 0),
            load: LoadSeries {
                latency: named(&["p50", "p90", "p99", "max"]),
                rates: named(&["sent/s", "successful/s", "errors/s"]),
                lateness: Series::new("p99 send lateness"),
                in_flight: Series::new("in flight"),
                connections: Series::new("connections open"),
                heatmaps: [
                    crate::model::heatmap::Heatmap::new("corrected"),
                    crate::model::heatmap::Heatmap::new("service"),
                ],
            },
            last_end: 0.0,
        }
    }
}

impl IntervalFold {
    /// Adds the next interval, one point per series at the interval's middle.
    pub fn add(&mut self, i: &StoredInterval) {
        let s = &i.stats;
        self.totals.accumulate(s);
        self.last_end = self.last_end.max((i.start_ns + i.length_ns) as f64 / 1e9);
        let seconds = (i.length_ns as f64 / 1e9).max(1e-9);
        let t = (i.start_ns as f64 + i.length_ns as f64 / 2.0) / 1e9;
        let out = &mut self.load;
        if !s.corrected.is_empty() {
            for (series, q) in out.latency.iter_mut().zip([0.5, 0.9, 0.99, 1.0]) {
                series
                    .points
                    .push((t, ms(s.corrected.value_at_quantile(q))));
            }
        }
        for (series, v) in out.rates.iter_mut().zip([s.sent, s.ok, s.errors.total()]) {
            series.points.push((t, v as f64 / seconds));
        }
        if !s.lateness.is_empty() {
            out.lateness
                .points
                .push((t, ms(s.lateness.value_at_quantile(0.99))));
        }
        out.in_flight.points.push((t, s.in_flight as f64));
        out.connections.points.push((t, s.connections_open as f64));
        let span = (
            i.start_ns as f64 / 1e9,
            (i.start_ns + i.length_ns) as f64 / 1e9,
        );
        out.heatmaps[0].add(span, &s.corrected);
        out.heatmaps[1].add(span, &s.service);
    }

    /// The run's totals so far: every interval added up.
    pub fn totals(&self) -> &IntervalStats {
        &self.totals
    }
}

/// The figures of a run, read from the store one interval at a time.
pub async fn load(store: &store::Store, id: &str) -> Result<RunFigures, store::StoreError> {
    let mut fold = IntervalFold::default();
    let run = store.load_run_streaming(id, |i| fold.add(&i)).await?;
    let mut figures = finish(&run, fold);
    figures.selftest = store.latest_selftest(&figures.gun_host.hostname).await?;
    Ok(figures)
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// The figures of a stored run with its intervals in memory (e.g. a merged run group).
pub fn of(run: &StoredRun) -> RunFigures {
    let mut fold = IntervalFold::default();
    for i in &run.intervals {
        fold.add(i);
    }
    finish(run, fold)
}

/// The figures, once every interval is folded in.
fn finish(run: &StoredRun, fold: IntervalFold) -> RunFigures {
    let IntervalFold {
        totals,
        load,
        last_end,
    } = fold;
    let (summary, recomputed) = summary_of(run, &totals, last_end);
    let attack_end = summary.duration.attack_s.max(0.0);
    let percentiles = percentile_rows(&totals);
    let distribution = vec![
        distribution("corrected", &totals.corrected),
        distribution("service", &totals.service),
    ];
    let probes = run_probes(run, last_end, attack_end);
    let system = system_of(&probes);
    let span = span_of(&probes, last_end.max(attack_end));
    let warnings = run_warnings(run, &summary, recomputed, &probes);
    let started = UNIX_EPOCH + Duration::from_nanos(run.meta.started_at_ns.max(0) as u64);
    RunFigures {
        id: run.meta.id.clone(),
        name: run.meta.name.clone(),
        experiment: run.meta.experiment.clone(),
        labels: run.meta.labels.clone(),
        status: run.status,
        stop_reason: run.stop_reason.clone(),
        started: humantime::format_rfc3339_seconds(started).to_string(),
        started_at_ns: run.meta.started_at_ns,
        summary,
        summary_recomputed: recomputed,
        percentiles,
        distribution,
        load,
        probes,
        attack: (0.0, attack_end),
        span,
        config: run.meta.config.clone(),
        gun_host: run.meta.gun_host.clone(),
        warnings,
        shard: run.meta.shard.clone(),
        system,
        guns: Vec::new(),
        selftest: None,
    }
}

/// The run's summary, its tails and validity filled in where it lacks them; recomputed from
/// the intervals (and so said) where the run stored none.
fn summary_of(run: &StoredRun, totals: &IntervalStats, last_end: f64) -> (Summary, bool) {
    let (mut summary, recomputed) = match &run.summary {
        Some(s) => (s.clone(), false),
        None => (recompute_summary(run, totals, last_end), true),
    };
    if summary.tails.is_none() {
        summary.tails = analysis::tail::of_run(run);
    }
    if summary.validity.is_none() {
        summary.validity = Some(analysis::validity::judge(&summary, None));
    }
    (summary, recomputed)
}

/// The rows of the HDR percentile table.
fn percentile_rows(totals: &IntervalStats) -> Vec<PercentileRow> {
    PERCENTILES
        .iter()
        .map(|&(label, q)| PercentileRow {
            percentile: label,
            quantile: q,
            corrected_ns: quantile(&totals.corrected, q),
            service_ns: quantile(&totals.service, q),
        })
        .collect()
}

/// Each probe's figures up to `last_end` or the load's end, whichever is later, what limited
/// the server read over the load's window.
fn run_probes(run: &StoredRun, last_end: f64, attack_end: f64) -> Vec<ProbeFigures> {
    run.probes
        .iter()
        .map(|p| {
            let mut f = probe_figures(p, (0.0, last_end.max(attack_end)));
            // What limited the server is asked of the load's window, not the quiet after it.
            f.saturation = analysis::saturation::Saturation::of(p, 0, (attack_end * 1e9) as i64);
            f.activity = analysis::system::Activity::of(p, 0, (attack_end * 1e9) as i64);
            f
        })
        .collect()
}

/// The system as a whole, from every probe's host, saturation and activity.
fn system_of(probes: &[ProbeFigures]) -> Option<analysis::system::System> {
    analysis::system::System::from_parts(
        probes
            .iter()
            .map(|p| (&p.host, p.saturation.clone(), p.activity.clone())),
    )
}

/// The timeline shown: from 0 to `end`, widened to every probe's first and last CPU point.
fn span_of(probes: &[ProbeFigures], end: f64) -> (f64, f64) {
    let mut span = (0.0f64, end);
    for p in probes {
        if let (Some(first), Some(last)) = (p.cpu.points.first(), p.cpu.points.last()) {
            span.0 = span.0.min(first.0);
            span.1 = span.1.max(last.0);
        }
    }
    span
}

/// The summary's warnings, then the run's not among them, a recomputed summary's first, and
/// every probe's gaps.
fn run_warnings(
    run: &StoredRun,
    summary: &Summary,
    recomputed: bool,
    probes: &[ProbeFigures],
) -> Vec<String> {
    let mut warnings = summary.warnings.clone();
    for w in &run.warnings {
        if !warnings.contains(w) {
            warnings.push(w.clone());
        }
    }
    if recomputed {
        warnings.insert(
            0,
            "NO SUMMARY WAS STORED: the run did not finish (killed, or still running). The figures come from the intervals it kept."
                .into(),
        );
    }
    for p in probes {
        for (_, gap) in &p.gaps {
            warnings.push(format!("{}: {gap}", p.label));
        }
    }
    warnings
}

fn quantile(h: &hdrhistogram::Histogram<u64>, q: f64) -> u64 {
    if h.is_empty() {
        0
    } else {
        h.value_at_quantile(q)
    }
}

/// A summary for a run that ended without one, from what it kept, its warnings worded.
fn recompute_summary(run: &StoredRun, totals: &IntervalStats, last_end: f64) -> Summary {
    let started = UNIX_EPOCH + Duration::from_nanos(run.meta.started_at_ns.max(0) as u64);
    let mut summary = Summary::new(&RunFacts {
        config: &run.meta.config,
        started,
        interval: Duration::from_nanos(run.meta.interval_ns),
        totals,
        attack: store::group::stored_secs(last_end),
        wait: Duration::ZERO,
        cpu: Duration::ZERO,
        peak_rss_bytes: None,
        stopped: run.stop_reason.clone(),
        notes: Vec::new(),
        generator: Default::default(),
    });
    analysis::warnings::fill(&mut summary, &[]);
    summary
}

/// Latency by percentile, on the x axis HdrHistogram's charts use: 1 / (1 − p), so that 90 %,
/// 99 %, 99.9 % … are evenly spaced on a log scale.
fn distribution(name: &str, h: &hdrhistogram::Histogram<u64>) -> Series {
    let mut s = Series::new(name);
    if h.is_empty() {
        return s;
    }
    // Ten points per decade of 1 / (1 − p), up to the last request's.
    let limit = (h.len() as f64).max(10.0);
    let mut x: f64 = 1.0;
    while x <= limit {
        let p = 1.0 - 1.0 / x;
        s.points.push((x, ms(h.value_at_quantile(p))));
        x *= 10f64.powf(0.1);
    }
    s.points.push((limit, ms(h.max())));
    s
}

/// A probe's figures; its profile is of `window`, the attack (s on the run's timeline).
fn probe_figures(probe: &store::run::StoredProbe, window: (f64, f64)) -> ProbeFigures {
    let mut f = no_figures(probe);
    let mut reading = Reading {
        profile: crate::profile::Accumulator::new(window),
        memory: MemoryPeak::default(),
        members: BTreeMap::new(),
        members_rss: BTreeMap::new(),
        switches: None,
        delay: None,
        periods: None,
    };
    let gap_times: Vec<f64> = probe.gaps.iter().map(|g| g.t_ns as f64 / 1e9).collect();
    for r in &probe.records {
        let t = r.t_ns as f64 / 1e9;
        // A rate is taken between consecutive samples only, never across lost records.
        let lost_since = |t0: f64| gap_times.iter().any(|&g| g > t0 && g <= t);
        if reading.switches.is_some_and(|(t0, _, _)| lost_since(t0)) {
            reading.switches = None;
        }
        if reading.delay.is_some_and(|(t0, _)| lost_since(t0)) {
            reading.delay = None;
            reading.periods = None;
        }
        match &r.record {
            Record::Event(e) => f.events.push((t, describe_event(&e.kind))),
            Record::Profile(p) => reading.profile.add(t, p),
            Record::Sample(s) => reading.sample(&mut f, t, s),
        }
    }
    f.memory = reading.memory.finish();
    f.members = reading.members.into_values().collect();
    f.members_rss = reading.members_rss.into_values().collect();
    f.profile = reading.profile.finish();
    f.host_cpu.points = trailing_mean(&f.host_cpu.points, 1.0);
    for g in &probe.gaps {
        let what = match g.to_seq {
            Some(to) => format!(
                "{} probe records missing (#{}–#{}): {}",
                to - g.from_seq + 1,
                g.from_seq,
                to,
                g.reason
            ),
            None => format!(
                "probe records missing from #{} on: {}",
                g.from_seq, g.reason
            ),
        };
        f.gaps.push((g.t_ns as f64 / 1e9, what));
    }
    f
}

/// A probe's figures before its records are read: its label, its host, and each series named.
fn no_figures(probe: &store::run::StoredProbe) -> ProbeFigures {
    let host = &probe.meta.host;
    let named = |names: &[&str]| names.iter().map(|n| Series::new(n)).collect();
    ProbeFigures {
        label: format!(
            "{} ({} on {})",
            probe.meta.address, host.selector, host.hostname
        ),
        host: host.clone(),
        clock: probe.meta.clock,
        cpu: Series::new("CPU"),
        rss_mib: Series::new("RSS"),
        threads: Series::new("threads"),
        fds: Series::new("open FDs"),
        host_cpu: Series::new("host CPU"),
        run_wait: Series::new("waiting for a CPU"),
        throttled: Series::new("quota throttled"),
        connected: Series::new("connected"),
        active: probe::sample::WaitClass::ALL
            .iter()
            .map(|c| Series::new(c.label()))
            .collect(),
        fd_kinds: named(&["sockets", "files", "pipes", "epoll", "eventfd", "other"]),
        tcp: named(&[
            "established",
            "time_wait",
            "close_wait",
            "syn_recv",
            "accept queue",
        ]),
        switches: named(&["voluntary/s", "involuntary/s"]),
        ..Default::default()
    }
}

/// What reading a probe's records carries from one to the next: its profile, its memory's
/// peak, each process's series, and the counters whose rates are read between samples.
struct Reading {
    profile: crate::profile::Accumulator,
    memory: MemoryPeak,
    members: BTreeMap<i32, Series>,
    members_rss: BTreeMap<i32, Series>,
    /// (time, voluntary, involuntary) switches at the last sample having them.
    switches: Option<(f64, u64, u64)>,
    /// (time, run delay ns) at the last sample having it.
    delay: Option<(f64, u64)>,
    /// (periods, throttled periods) at the last sample having them.
    periods: Option<(u64, u64)>,
}

impl Reading {
    /// A sample at `t` into the figures.
    fn sample(&mut self, f: &mut ProbeFigures, t: f64, s: &probe::sample::Sample) {
        f.samples += 1;
        if let Some(cpu) = s.host.as_ref().and_then(|h| h.cpu_pct) {
            f.host_cpu.points.push((t, cpu));
        }
        if let Some(c) = &s.cgroup {
            if let Some((p0, t0)) = self.periods {
                let periods = c.periods.saturating_sub(p0);
                let throttled = c.throttled_periods.saturating_sub(t0);
                // No period passed: no quota (or no runnable thread), nothing to draw.
                if periods > 0 {
                    f.throttled
                        .points
                        .push((t, 100.0 * throttled as f64 / periods as f64));
                }
            }
            self.periods = Some((c.periods, c.throttled_periods));
        }
        if let Some(a) = &s.database {
            f.connected.points.push((t, a.backends as f64));
            for (series, &n) in f.active.iter_mut().zip(a.active.iter()) {
                series.points.push((t, n as f64));
            }
        }
        let Some(total) = &s.total else { return };
        if let Some(delay) = total.run_delay_ns {
            if let Some((t0, d0)) = self.delay.filter(|(t0, _)| t > *t0) {
                let cores = delay.saturating_sub(d0) as f64 / 1e9 / (t - t0);
                f.run_wait.points.push((t, 100.0 * cores));
            }
            self.delay = Some((t, delay));
        }
        add_totals(f, t, total, &mut self.switches);
        self.memory.add(s, total);
        // A database's backends come and go by the dozen: its total says enough.
        if s.processes.len() > 1 && f.host.role != probe::sample::Role::Database {
            for p in &s.processes {
                let name = || Series::new(&format!("{} {}", p.pid, p.comm));
                if let Some(cpu) = p.cpu_pct {
                    self.members
                        .entry(p.pid)
                        .or_insert_with(name)
                        .points
                        .push((t, cpu));
                }
                self.members_rss
                    .entry(p.pid)
                    .or_insert_with(name)
                    .points
                    .push((t, p.rss_bytes as f64 / MIB));
            }
        }
    }
}

/// Each point replaced by the mean of the points in the `window` seconds up to it. The host's
/// CPU comes from /proc/stat's clock ticks (100 per second per core): over 100 ms it moves in
/// steps of 10 % of a core, and a mean over a second shows the load rather than the steps.
fn trailing_mean(points: &[(f64, f64)], window: f64) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(points.len());
    let (mut start, mut sum) = (0, 0.0);
    for (i, &(t, v)) in points.iter().enumerate() {
        sum += v;
        while points[start].0 <= t - window {
            sum -= points[start].1;
            start += 1;
        }
        out.push((t, sum / (i + 1 - start) as f64));
    }
    out
}

fn add_totals(
    f: &mut ProbeFigures,
    t: f64,
    total: &ProcessSample,
    previous: &mut Option<(f64, u64, u64)>,
) {
    if let Some(cpu) = total.cpu_pct {
        f.cpu.points.push((t, cpu));
    }
    f.rss_mib.points.push((t, total.rss_bytes as f64 / MIB));
    f.threads.points.push((t, total.threads as f64));
    if let Some(fds) = total.fds {
        f.fds.points.push((t, fds as f64));
        f.peak_fds = f.peak_fds.max(Some(fds));
    }
    if total.fd_limit_soft.is_some() {
        f.fd_limits = (total.fd_limit_soft, total.fd_limit_hard);
    }
    if let Some(k) = &total.fd_kinds {
        for (series, v) in f.fd_kinds.iter_mut().zip([
            k.socket,
            k.file,
            k.pipe,
            k.epoll,
            k.eventfd,
            k.timerfd + k.other,
        ]) {
            series.points.push((t, v as f64));
        }
    }
    if let Some(tcp) = &total.tcp {
        for (series, v) in f.tcp.iter_mut().zip([
            tcp.established,
            tcp.time_wait,
            tcp.close_wait,
            tcp.syn_recv,
            tcp.accept_queue,
        ]) {
            series.points.push((t, v as f64));
        }
    }
    if let (Some(v), Some(n)) = (
        total.voluntary_ctxt_switches,
        total.involuntary_ctxt_switches,
    ) {
        if let Some((t0, v0, n0)) = *previous {
            let dt = t - t0;
            if dt > 0.0 && v >= v0 && n >= n0 {
                f.switches[0].points.push((t, (v - v0) as f64 / dt));
                f.switches[1].points.push((t, (n - n0) as f64 / dt));
            }
        }
        *previous = Some((t, v, n));
    }
}

fn describe_event(kind: &EventKind) -> String {
    match kind {
        EventKind::Attached { pid, comm, .. } => format!("attached to {comm} ({pid})"),
        EventKind::TargetExited { pid } => format!("target {pid} exited"),
        EventKind::ProcessStarted { pid, comm, .. } => format!("{comm} ({pid}) started"),
        EventKind::ProcessExited { pid } => format!("process {pid} exited"),
        EventKind::MissedTicks { count } => format!("{count} samples missed"),
        EventKind::ProfileUnavailable { reason } => format!("no profile: {reason}"),
        EventKind::Unreadable {
            pid,
            figures,
            reason,
        } => format!("not read of {pid}: {} ({reason})", figures.join(", ")),
    }
}

/// A run's headline figures, as the index lists them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Headline {
    pub id: String,
    pub name: String,
    pub experiment: Option<String>,
    pub labels: BTreeMap<String, String>,
    pub status: String,
    pub started: String,
    pub target: String,
    pub load: String,
    /// The run group when this run is one gun host's shard.
    pub group: Option<String>,
    pub rate: f64,
    pub throughput: f64,
    pub success_ratio: f64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
    pub peak_rss_bytes: Option<u64>,
    pub peak_fds: Option<u64>,
    pub warnings: usize,
}

impl RunFigures {
    pub fn headline(&self) -> Headline {
        let s = &self.summary;
        Headline {
            id: self.id.clone(),
            name: self.name.clone(),
            experiment: self.experiment.clone(),
            labels: self.labels.clone(),
            status: self.status.as_str().to_string(),
            started: self.started.clone(),
            target: self.config.target.clone(),
            load: self.config.load.clone(),
            group: self.shard.as_ref().map(|s| s.group.clone()),
            rate: s.requests.rate,
            throughput: s.requests.throughput,
            success_ratio: s.requests.success_ratio,
            p50_ns: s.latency.corrected.p50_ns,
            p99_ns: s.latency.corrected.p99_ns,
            max_ns: s.latency.corrected.max_ns,
            peak_rss_bytes: self.peak_rss_bytes(),
            peak_fds: self.peak_fds(),
            warnings: self.warnings.len(),
        }
    }
}

impl ProbeFigures {
    /// CPU time the tree used within `window` (s): CPU % integrated over the samples in it.
    /// Each sample's CPU % covers the time since the one before.
    pub fn cpu_seconds_in(&self, window: (f64, f64)) -> Option<f64> {
        let mut total = None;
        for w in self.cpu.points.windows(2) {
            let ((t0, _), (t1, pct)) = (w[0], w[1]);
            let from = t0.max(window.0);
            let to = t1.min(window.1);
            if to > from {
                *total.get_or_insert(0.0) += pct / 100.0 * (to - from);
            }
        }
        total
    }

    /// The mean CPU % of the tree within `window`.
    pub fn mean_cpu_in(&self, window: (f64, f64)) -> Option<f64> {
        let length = window.1 - window.0;
        (length > 0.0)
            .then(|| self.cpu_seconds_in(window))
            .flatten()
            .map(|s| 100.0 * s / length)
    }

    pub fn peak_threads(&self) -> Option<f64> {
        self.threads.max_y()
    }

    /// The most established TCP connections seen.
    pub fn peak_established(&self) -> Option<f64> {
        self.tcp.first().and_then(Series::max_y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB_U: u64 = 1 << 20;

    /// A sample of processes with these (RSS, PSS) in MiB, and their total.
    fn tree(members: &[(u64, Option<u64>)]) -> (probe::sample::Sample, ProcessSample) {
        let processes: Vec<ProcessSample> = members
            .iter()
            .enumerate()
            .map(|(i, &(rss, pss))| ProcessSample {
                pid: i as i32 + 1,
                rss_bytes: rss * MIB_U,
                pss_bytes: pss.map(|p| p * MIB_U),
                ..Default::default()
            })
            .collect();
        let total = ProcessSample {
            rss_bytes: processes.iter().map(|p| p.rss_bytes).sum(),
            ..Default::default()
        };
        let sample = probe::sample::Sample {
            scheduled_mono_ns: 0,
            mono_ns: 0,
            wall_ns: 0,
            interval_ns: 100_000_000,
            missed_ticks: 0,
            target_pid: Some(1),
            processes,
            total: Some(total.clone()),
            host: None,
            cgroup: None,
            database: None,
            probe: Default::default(),
        };
        (sample, total)
    }

    #[test]
    fn a_group_that_shares_pages_is_counted_by_pss_not_rss_summed() {
        // 60 backends, each resident on 25 MiB of which 24 are the shared buffers.
        let mut peak = MemoryPeak::default();
        let backends = vec![(25, Some(1)); 60];
        let (s, t) = tree(&backends);
        peak.add(&s, &t);
        // Between slow passes each process's last reading stands.
        let (s, t) = tree(&vec![(25, None); 60]);
        peak.add(&s, &t);
        // A process that joined and was never read leaves the sum unknown: not counted.
        let mut joined = vec![(25, None); 60];
        joined.push((500, None));
        let (s, t) = tree(&joined);
        peak.add(&s, &t);
        assert_eq!(
            peak.finish(),
            Some(Memory {
                bytes: 60 * MIB_U,
                counted: Counted::Pss { processes: 60 }
            })
        );
        // Where PSS could never be read, RSS summed, said to be an upper bound.
        let mut peak = MemoryPeak::default();
        let (s, t) = tree(&[(25, None), (30, None)]);
        peak.add(&s, &t);
        let m = peak.finish().unwrap();
        assert_eq!(m.bytes, 55 * MIB_U);
        assert_eq!(m.counted, Counted::RssSummed { processes: 2 });
        assert!(m.how().contains("upper bound"), "{}", m.how());
        // One process: its RSS.
        let mut peak = MemoryPeak::default();
        for rss in [60, 65, 62] {
            let (s, t) = tree(&[(rss, Some(rss - 3))]);
            peak.add(&s, &t);
        }
        assert_eq!(
            peak.finish(),
            Some(Memory {
                bytes: 65 * MIB_U,
                counted: Counted::Rss
            })
        );
    }

    #[test]
    fn cpu_time_integrates_each_sample_over_the_time_before_it() {
        let probe = ProbeFigures {
            cpu: Series {
                name: "CPU".into(),
                points: vec![(0.0, 50.0), (1.0, 50.0), (2.0, 100.0)],
            },
            ..Default::default()
        };
        assert_eq!(probe.cpu_seconds_in((0.0, 2.0)), Some(1.5));
        assert_eq!(probe.cpu_seconds_in((0.5, 2.0)), Some(1.25));
        assert_eq!(probe.mean_cpu_in((0.0, 2.0)), Some(75.0));
        assert_eq!(
            probe.cpu_seconds_in((5.0, 6.0)),
            None,
            "no sample in the window"
        );
        assert_eq!(ProbeFigures::default().mean_cpu_in((0.0, 1.0)), None);
    }

    #[test]
    fn the_trailing_mean_covers_the_second_before_each_point() {
        let points = [(0.0, 0.0), (0.5, 10.0), (1.0, 20.0), (1.5, 30.0)];
        assert_eq!(
            trailing_mean(&points, 1.0),
            vec![(0.0, 0.0), (0.5, 5.0), (1.0, 15.0), (1.5, 25.0)]
        );
        assert!(trailing_mean(&[], 1.0).is_empty());
    }
}
