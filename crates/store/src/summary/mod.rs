//! The end-of-run summary, as JSON (and as text for a terminal, in the spirit of Vegeta's `report`:
//! `analysis::summary`).
//!
//! Latency is shown twice: **corrected** (from the intended send time, what a user of the
//! server would have waited) and **service** (from the actual send time, what closed-loop tools
//! such as wrk, hey or ab report). The generator's own lateness and cost are part of the
//! summary, and any reason to doubt the figures is printed above them, not hidden: those
//! reasons, worded from the figures with the flags to change, are `analysis::warnings`'s.
//!
//! The JSON form is [`Summary`] serialized with serde; its fields are documented here and in
//! docs/loadgen.md ("JSON summary"). Times are integer nanoseconds (`_ns`), or seconds (`_s`) as floats.

pub(crate) mod figures;
pub(crate) mod text;
pub mod validity;

use std::time::{Duration, SystemTime};

use hdrhistogram::Histogram;

pub use figures::{
    ArrivalFit, ByteFigures, DurationFigures, GeneratorFigures, Latencies, LatencyStats,
    RequestFigures, Summary, TailFigure, TailInterval, Tails, ARRIVAL_KS_LIMIT, LATENESS_LIMIT_NS,
    SCHEMA,
};
pub use text::{format_duration, format_ns, nanos, thousands};
pub use validity::{Flaw, Floor, Validity, Verdict};

use crate::config::RunConfig;
use crate::diagnosis::SYN_RETRANSMISSION_NS;
use crate::model::IntervalStats;

/// What a summary is made from: how the run was set up, what it recorded, and how it went.
/// loadgen fills it in at the end of a run; the report from a stored run.
#[derive(Debug, Clone)]
pub struct RunFacts<'a> {
    /// How the attack was set up (target, load, threads, connection cap, batching window).
    pub config: &'a RunConfig,
    /// Wall-clock time of the run's time zero.
    pub started: SystemTime,
    pub interval: Duration,
    pub totals: &'a IntervalStats,
    /// From time zero to the last request sent.
    pub attack: Duration,
    /// From the last request sent to the last response.
    pub wait: Duration,
    /// CPU time of the generator.
    pub cpu: Duration,
    pub peak_rss_bytes: Option<u64>,
    /// Why the run stopped early, if it did.
    pub stopped: Option<String>,
    /// Other things that went wrong on the side, worded for the user: the summary's warnings
    /// until `analysis::warnings::fill` puts those its figures call for before them.
    pub notes: Vec<String>,
    /// What the generator measured of itself and its connections (absent for a summary
    /// recomputed from stored intervals).
    pub generator: GeneratorFacts,
}

/// What the generator measured of itself and its connections, to tell why sends were late.
#[derive(Debug, Clone, Default)]
pub struct GeneratorFacts {
    /// The busiest worker thread's CPU time over its life, as a share of one core (0–1).
    pub busiest_thread: Option<f64>,
    /// How busy the CPUs the generator may run on were over the attack, every process counted
    /// (0–1), and which CPUs those are (`0-1`).
    pub cpus_busy: Option<(f64, String)>,
    /// How much of those CPUs' time the generator's own process took (all its threads, 0–1):
    /// busy CPUs are another process's doing only for the rest.
    pub own_share: Option<f64>,
    /// The share of every CPU's time the hypervisor gave other guests over the attack (0–1).
    pub steal: Option<f64>,
    /// Time to establish each new connection (TCP, and TLS when used), ns.
    pub connect: Option<Histogram<u64>>,
    /// Poisson arrivals: the achieved gaps against exponential.
    pub arrivals: Option<ArrivalFit>,
    /// The first request's actual send − its intended time, ns (on the generator's clock).
    pub start_late_ns: Option<i64>,
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

/// Below this share of the offered rate answered, the server did not keep up (a run's
/// verdict, and a capacity search step's).
pub const KEPT_UP: f64 = 0.99;

impl Summary {
    /// Whether an open loop's server fell behind the rate offered: sends held back by its
    /// responses or its accepts, and under 99 % of the offered rate answered (as a capacity
    /// search asks). The offered rate is the requests the schedule issued over its own length
    /// (the attack's, less the lateness of its last send, at most the largest). Sends held up a
    /// little by a full pool while every request is answered are late, not unserved.
    pub fn server_fell_behind(&self) -> bool {
        let g = &self.generator;
        if !self.held_back_by_server() {
            return false;
        }
        let scheduled = self.duration.attack_s - g.lateness.max_ns as f64 / 1e9;
        if scheduled <= 0.0 {
            return true;
        }
        let offered = self.requests.total as f64 / scheduled;
        self.requests.throughput < KEPT_UP * offered
    }

    /// Whether sends ran late, held back by the server (its responses or its accepts), however
    /// much of the offered rate it still answered.
    pub fn held_back_by_server(&self) -> bool {
        let g = &self.generator;
        g.behind
            && matches!(
                g.limited_by,
                Some(
                    crate::vocabulary::LimitedBy::ServerResponses
                        | crate::vocabulary::LimitedBy::ServerAccept
                )
            )
    }

    /// The summary of a run from what it recorded and how it went: its figures, what held it
    /// back if it fell behind (`generator.limited_by`), and as its warnings the notes alone.
    /// The warnings its figures call for, and the flags to change, are worded above the store:
    /// `analysis::warnings::fill` puts them before the notes.
    pub fn new(facts: &RunFacts<'_>) -> Self {
        let t = facts.totals;
        let attack = facts.attack.as_secs_f64();
        let wait = facts.wait.as_secs_f64();
        let config = facts.config;
        Summary {
            schema: SCHEMA.into(),
            tool: concat!("showdown-loadgen ", env!("CARGO_PKG_VERSION")).into(),
            target: config.target.clone(),
            load: config.load.clone(),
            open_loop: config.open_loop,
            protocol: if config.h2 { "h2" } else { "http/1.1" }.into(),
            started_at: humantime::format_rfc3339_millis(facts.started).to_string(),
            interval_s: facts.interval.as_secs_f64(),
            requests: RequestFigures {
                offered: config.offered_rps,
                total: t.requests,
                sent: t.sent,
                responses: t.responses,
                ok: t.ok,
                rate: ratio(t.requests as f64, attack),
                throughput: ratio(t.ok as f64, attack + wait),
                success_ratio: ratio(t.ok as f64, t.requests as f64),
            },
            duration: DurationFigures {
                total_s: attack + wait,
                attack_s: attack,
                wait_s: wait,
            },
            latency: Latencies {
                corrected: LatencyStats::of(&t.corrected),
                service: LatencyStats::of(&t.service),
                first_byte: LatencyStats::of(&t.first_byte),
            },
            bytes: ByteFigures {
                in_total: t.bytes_in,
                in_mean: ratio(t.bytes_in as f64, t.responses as f64),
                out_total: t.bytes_out,
                out_mean: ratio(t.bytes_out as f64, t.sent as f64),
            },
            status_codes: t
                .status
                .to_map()
                .into_iter()
                .map(|(code, n)| (code.to_string(), n))
                .collect(),
            errors: t
                .errors
                .nonzero()
                .map(|(kind, n)| (kind.name().to_string(), n))
                .collect(),
            generator: generator_figures(facts),
            stopped: facts.stopped.clone(),
            warnings: facts.notes.clone(),
            tails: None,
            validity: None,
        }
    }
}

/// The generator's figures of a run: its sends' lateness, whether it fell behind and what
/// held it back, its connections, CPU and memory.
fn generator_figures(facts: &RunFacts<'_>) -> GeneratorFigures {
    let t = facts.totals;
    let config = facts.config;
    let g = &facts.generator;
    // Batching makes requests up to one window late on purpose: only lateness beyond that
    // is the generator falling behind. A handful of late sends out of thousands is a
    // figure, not a reason to doubt the run.
    let limit = LATENESS_LIMIT_NS + config.batch_ns;
    let late = beyond(&t.lateness, limit + 1);
    let behind = config.open_loop && late > (t.sent / 100).max(20);
    let connect = g.connect.as_ref().filter(|h| !h.is_empty());
    let slow_connects = connect.map_or(0, |h| beyond(h, SYN_RETRANSMISSION_NS));
    let cpus_busy = g.cpus_busy.as_ref().map(|(b, _)| *b);
    let limited_by = behind.then(|| {
        crate::diagnosis::cause(&crate::diagnosis::Evidence {
            totals: t,
            late,
            attack_s: facts.attack.as_secs_f64(),
            max_connections: config.max_connections,
            busiest_thread: g.busiest_thread,
            cpus_busy,
            own_share: g.own_share,
            connect,
            slow_connects,
            limit_ns: limit,
            start_late_ns: g.start_late_ns,
        })
    });
    let cpu_s = facts.cpu.as_secs_f64();
    GeneratorFigures {
        cpus: g
            .cpus_busy
            .as_ref()
            .map_or(String::new(), |(_, list)| list.clone()),
        max_connections: config.max_connections,
        batch_ns: config.batch_ns,
        lateness: LatencyStats::of(&t.lateness),
        behind,
        late,
        limited_by,
        connect: connect.map(LatencyStats::of),
        slow_connects,
        busiest_thread: g.busiest_thread,
        cpus_busy,
        own_share: g.own_share,
        steal: g.steal,
        arrivals: g.arrivals,
        start_late_ns: g.start_late_ns,
        sent_late_beyond_interval: t.sent_late_beyond_interval,
        waited_for_connection: t.waited_for_connection,
        connections_opened: t.connections_opened,
        resent: t.resent,
        peak_connections: t.connections_open,
        peak_in_flight: t.in_flight,
        threads: config.threads,
        cpu_s,
        cpu_per_request_us: ratio(cpu_s * 1e6, t.requests as f64),
        peak_rss_bytes: facts.peak_rss_bytes,
    }
}

/// How many values of `h` are at least `from`.
fn beyond(h: &hdrhistogram::Histogram<u64>, from: u64) -> u64 {
    if h.is_empty() || h.max() < from {
        0
    } else {
        h.count_between(from, h.max())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnosis::needed_connections;
    use crate::vocabulary::LimitedBy;

    #[test]
    fn durations_read_at_a_glance() {
        assert_eq!(format_ns(0), "0.00ns");
        assert_eq!(format_ns(312_000), "312µs");
        assert_eq!(format_ns(1_234_567), "1.23ms");
        assert_eq!(format_ns(30_001_000_000), "30.0s");
        assert_eq!(format_ns(4_310_000_000), "4.31s");
        assert_eq!(format_duration(Duration::from_micros(48)), "48.0µs");
    }

    #[test]
    fn latency_stats_read_the_histogram() {
        let mut h = crate::model::new_histogram(1_000_000_000);
        for v in 1..=1000u64 {
            h.record(v * 1_000).unwrap();
        }
        let s = LatencyStats::of(&h);
        assert_eq!(s.count, 1000);
        assert_eq!(s.p50_ns, h.value_at_quantile(0.5));
        assert!((s.p99_ns as f64 - 990_000.0).abs() < 1_000.0);
        assert!((s.mean_ns as f64 - 500_500.0).abs() < 1_000.0);
        assert_eq!(
            LatencyStats::of(&crate::model::new_histogram(1_000)).count,
            0
        );
    }

    /// 30,000 requests at `lateness_us`, `late` of them 5 ms late, with what the generator
    /// measured of itself.
    fn summary_of(late: u64, waited: u64, generator: GeneratorFacts) -> Summary {
        let mut totals = IntervalStats::new(0, 30_000_000_000);
        for i in 0..30_000u64 {
            let lateness = if i < late { 5_000_000 } else { 40_000 };
            totals.lateness.record(lateness).unwrap();
            totals.corrected.record(1_000_000).unwrap();
        }
        totals.requests = 30_000;
        totals.sent = 30_000;
        totals.waited_for_connection = waited;
        summary_over_30s(&totals, 8, generator)
    }

    /// The summary of an open loop of 30 s with these totals and connection cap.
    fn summary_over_30s(
        totals: &IntervalStats,
        max_connections: usize,
        generator: GeneratorFacts,
    ) -> Summary {
        let config = RunConfig {
            open_loop: true,
            max_connections,
            ..Default::default()
        };
        Summary::new(&RunFacts {
            config: &config,
            started: SystemTime::UNIX_EPOCH,
            interval: Duration::from_secs(1),
            totals,
            attack: Duration::from_secs(30),
            wait: Duration::ZERO,
            cpu: Duration::from_secs(1),
            peak_rss_bytes: None,
            stopped: None,
            notes: Vec::new(),
            generator,
        })
    }

    /// 1,000 req/s for 30 s: a start 1 s late makes the 1,000 requests due meanwhile late,
    /// which are most of the 1,500 late: a late start, the generator's doing. A start 5 ms late
    /// explains 5 of them: the cause is elsewhere.
    #[test]
    fn a_late_start_that_explains_the_late_sends_is_named() {
        let late_start = |start_late_ns: i64| GeneratorFacts {
            start_late_ns: Some(start_late_ns),
            ..Default::default()
        };
        let s = summary_of(1_500, 0, late_start(1_000_000_000));
        assert!(s.generator.behind);
        assert_eq!(s.generator.limited_by, Some(LimitedBy::LateStart));
        assert_eq!(s.generator.start_late_ns, Some(1_000_000_000));
        let s = summary_of(1_500, 0, late_start(5_000_000));
        assert_eq!(s.generator.limited_by, Some(LimitedBy::Unknown));
    }

    #[test]
    fn a_handful_of_late_sends_is_a_figure_not_an_alarm() {
        let s = summary_of(12, 0, GeneratorFacts::default());
        assert!(!s.generator.behind);
        assert_eq!(s.generator.late, 12);
        assert_eq!(s.generator.limited_by, None);
    }

    /// The store words no warning of its own: a summary's warnings are its notes until the
    /// analysis crate words those its figures call for.
    #[test]
    fn a_summary_holds_its_notes_alone_as_its_warnings() {
        let totals = IntervalStats::new(0, 30_000_000_000);
        let config = RunConfig::default();
        let s = Summary::new(&RunFacts {
            config: &config,
            started: SystemTime::UNIX_EPOCH,
            interval: Duration::from_secs(1),
            totals: &totals,
            attack: Duration::from_secs(1),
            wait: Duration::ZERO,
            cpu: Duration::ZERO,
            peak_rss_bytes: None,
            stopped: Some("interrupted".into()),
            notes: vec!["a sink failed".into()],
            generator: GeneratorFacts::default(),
        });
        assert_eq!(s.stopped.as_deref(), Some("interrupted"));
        assert!(!s.open_loop);
        assert_eq!(s.warnings, ["a sink failed"]);
    }

    #[test]
    fn lateness_is_blamed_on_what_the_measurements_show() {
        let busy = |thread: f64, cpus: f64| GeneratorFacts {
            busiest_thread: Some(thread),
            cpus_busy: Some((cpus, "0".into())),
            own_share: Some(thread),
            connect: None,
            arrivals: None,
            start_late_ns: None,
            steal: None,
        };
        let cause = |s: Summary| s.generator.limited_by;
        assert_eq!(
            cause(summary_of(3_000, 0, busy(0.97, 0.98))),
            Some(LimitedBy::Generator)
        );
        assert_eq!(
            cause(summary_of(3_000, 0, busy(0.2, 0.99))),
            Some(LimitedBy::GeneratorCpusShared)
        );
        // The generator's other threads (its aggregator, the store's writer) are the
        // generator: a busy CPU that it kept busy itself is not another process's doing.
        let own = GeneratorFacts {
            own_share: Some(0.85),
            ..busy(0.6, 0.92)
        };
        assert_eq!(cause(summary_of(3_000, 0, own)), Some(LimitedBy::Generator));
        assert_eq!(
            cause(summary_of(3_000, 2_900, busy(0.2, 0.3))),
            Some(LimitedBy::ConnectionCap)
        );
        let mut connect = crate::model::new_histogram(30_000_000_000);
        connect.record(200_000).unwrap();
        connect.record(1_020_000_000).unwrap();
        let slow = GeneratorFacts {
            connect: Some(connect),
            ..busy(0.2, 0.3)
        };
        let s = summary_of(3_000, 0, slow);
        assert_eq!(s.generator.limited_by, Some(LimitedBy::ServerAccept));
        assert_eq!(s.generator.slow_connects, 1);
        assert_eq!(
            cause(summary_of(3_000, 0, busy(0.2, 0.3))),
            Some(LimitedBy::Unknown)
        );
    }

    #[test]
    fn a_full_pool_is_the_servers_doing_when_its_fastest_pace_needed_far_fewer() {
        // 1,000 req/s whose fastest response took 10 ms need 10 connections at that pace.
        let waited = |cap: usize| {
            let mut totals = IntervalStats::new(0, 30_000_000_000);
            for i in 0..30_000u64 {
                let late = if i < 3_000 { 5_000_000 } else { 40_000 };
                totals.lateness.record(late).unwrap();
                totals.service.record(10_000_000 + i * 100_000).unwrap();
                totals.corrected.record(10_000_000 + i * 100_000).unwrap();
            }
            (totals.requests, totals.sent, totals.ok) = (30_000, 30_000, 30_000);
            totals.waited_for_connection = 2_900;
            summary_over_30s(&totals, cap, GeneratorFacts::default())
        };
        // A cap of 15 is under twice that: the cap.
        assert_eq!(
            waited(15).generator.limited_by,
            Some(LimitedBy::ConnectionCap)
        );
        // A cap of 10,000 would have carried the rate fifty times over: the server slowed.
        let s = waited(10_000);
        assert_eq!(s.generator.limited_by, Some(LimitedBy::ServerResponses));
        assert!(
            (needed_connections(s.requests.rate, s.latency.service.min_ns) - 10.0).abs() < 0.1,
            "{} req/s, fastest {} ns",
            s.requests.rate,
            s.latency.service.min_ns
        );
    }

    #[test]
    fn a_server_falls_behind_only_when_it_leaves_the_offered_rate_unanswered() {
        // Sends held back by a full pool of slow responses, every request answered within the
        // run: late, not unserved.
        let run = |ok: u64, attack_s: u64, lateness_ns: u64| {
            let mut totals = IntervalStats::new(0, 30_000_000_000);
            for i in 0..30_000u64 {
                let late = if i < 3_000 { lateness_ns } else { 40_000 };
                totals.lateness.record(late).unwrap();
                totals.service.record(10_000_000 + i * 100_000).unwrap();
                totals.corrected.record(10_000_000 + i * 100_000).unwrap();
            }
            (totals.requests, totals.sent, totals.ok) = (30_000, 30_000, ok);
            totals.waited_for_connection = 2_900;
            let config = RunConfig {
                open_loop: true,
                max_connections: 10_000,
                ..Default::default()
            };
            Summary::new(&RunFacts {
                config: &config,
                started: SystemTime::UNIX_EPOCH,
                interval: Duration::from_secs(1),
                totals: &totals,
                attack: Duration::from_secs(attack_s),
                wait: Duration::ZERO,
                cpu: Duration::from_secs(1),
                peak_rss_bytes: None,
                stopped: None,
                notes: Vec::new(),
                generator: GeneratorFacts::default(),
            })
        };
        let served = run(30_000, 30, 5_000_000);
        assert_eq!(
            served.generator.limited_by,
            Some(LimitedBy::ServerResponses)
        );
        assert!(!served.server_fell_behind());
        // 1,000 req/s offered for 30 s, the last sends 15 s late: 667 answered a second.
        let behind = run(30_000, 45, 15_000_000_000);
        assert_eq!(
            behind.generator.limited_by,
            Some(LimitedBy::ServerResponses)
        );
        assert!(behind.server_fell_behind());
    }

    #[test]
    fn the_arrivals_fit_is_kept_with_the_summary() {
        let fit = |excess: f64, gaps: u64| GeneratorFacts {
            arrivals: Some(ArrivalFit::new(excess, 0.09, gaps)),
            ..Default::default()
        };
        let within = summary_of(0, 0, fit(-0.03, 80_000));
        assert!(within.generator.arrivals.unwrap().as_intended());
        let spaced = summary_of(0, 0, fit(-0.08, 80_000));
        assert!(!spaced.generator.arrivals.unwrap().as_intended());
        // Few gaps: only what the test can tell from chance counts.
        let few = summary_of(0, 0, fit(0.08, 200));
        assert!(few.generator.arrivals.unwrap().as_intended());
        // Kept with the run: the JSON summary carries it.
        let json = serde_json::to_value(&spaced).unwrap();
        assert_eq!(json["generator"]["arrivals"]["gaps"], 80_000);
    }
}
