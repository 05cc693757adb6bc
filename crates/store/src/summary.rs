//! The end-of-run summary, as text (in the spirit of Vegeta's `report`) or JSON.
//!
//! Latency is shown twice: **corrected** (from the intended send time, what a user of the
//! server would have waited) and **service** (from the actual send time, what closed-loop tools
//! such as wrk, hey or ab report). The generator's own lateness and cost are part of the
//! summary, and any reason to doubt the figures is printed above them, not hidden.
//!
//! The JSON form is [`Summary`] serialized with serde; its fields are documented here and in
//! docs/loadgen.md ("JSON summary"). Times are integer nanoseconds (`_ns`), or seconds (`_s`) as floats.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::{Duration, SystemTime};

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::diagnosis::SYN_RETRANSMISSION_NS;
use crate::model::{ErrorKind, IntervalStats};
use crate::run::RunConfig;
use crate::vocabulary::LimitedBy;

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
    /// Other things that went wrong on the side, worded for the user.
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
    /// Time to establish each new connection (TCP, and TLS when used), ns.
    pub connect: Option<Histogram<u64>>,
}

/// Identifies this JSON layout; bumped when a field changes meaning or goes away.
pub const SCHEMA: &str = "showdown.loadgen.summary/1";

/// p99 send lateness beyond which the generator, not the server, is the bottleneck.
pub const LATENESS_LIMIT_NS: u64 = 1_000_000;

/// Percentiles of one histogram, in nanoseconds.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct LatencyStats {
    pub count: u64,
    pub min_ns: u64,
    pub mean_ns: u64,
    pub stdev_ns: u64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p95_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
}

impl LatencyStats {
    pub fn of(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return LatencyStats {
                count: 0,
                min_ns: 0,
                mean_ns: 0,
                stdev_ns: 0,
                p50_ns: 0,
                p90_ns: 0,
                p95_ns: 0,
                p99_ns: 0,
                p999_ns: 0,
                max_ns: 0,
            };
        }
        LatencyStats {
            count: h.len(),
            min_ns: h.min(),
            mean_ns: h.mean().round() as u64,
            stdev_ns: h.stdev().round() as u64,
            p50_ns: h.value_at_quantile(0.50),
            p90_ns: h.value_at_quantile(0.90),
            p95_ns: h.value_at_quantile(0.95),
            p99_ns: h.value_at_quantile(0.99),
            p999_ns: h.value_at_quantile(0.999),
            max_ns: h.max(),
        }
    }

    fn row(&self) -> String {
        if self.count == 0 {
            return "no requests".into();
        }
        [
            self.min_ns,
            self.mean_ns,
            self.p50_ns,
            self.p90_ns,
            self.p95_ns,
            self.p99_ns,
            self.p999_ns,
            self.max_ns,
        ]
        .iter()
        .map(|&ns| format_ns(ns))
        .collect::<Vec<_>>()
        .join(", ")
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RequestFigures {
    /// Requests issued by the schedule (closed loop: started).
    pub total: u64,
    /// Requests written to a connection.
    pub sent: u64,
    /// Requests answered with an HTTP response (any status).
    pub responses: u64,
    /// Responses with a 2xx or 3xx status.
    pub ok: u64,
    /// `total` / attack duration.
    pub rate: f64,
    /// `ok` / total duration.
    pub throughput: f64,
    /// `ok` / `total`.
    pub success_ratio: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DurationFigures {
    /// attack + wait.
    pub total_s: f64,
    /// From the first request's intended send time to the last request sent.
    pub attack_s: f64,
    /// From the last request sent to the last response.
    pub wait_s: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Latencies {
    /// Completion − intended send time.
    pub corrected: LatencyStats,
    /// Completion − actual send time.
    pub service: LatencyStats,
    /// Response headers − actual send time.
    pub first_byte: LatencyStats,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ByteFigures {
    pub in_total: u64,
    pub in_mean: f64,
    pub out_total: u64,
    pub out_mean: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GeneratorFigures {
    /// Actual − intended send time, over all requests sent.
    pub lateness: LatencyStats,
    /// Whether sends were late enough to matter: more than 1 % of the requests sent (and at
    /// least 20) left over 1 ms (plus any `--batch` window) after their time. The figures then
    /// describe less load than scheduled (see `warnings` and `limited_by`).
    pub behind: bool,
    /// Requests sent over 1 ms (plus any `--batch` window) after their time.
    #[serde(default)]
    pub late: u64,
    /// When behind, what held the sends back, from measurements: `generator` (a worker thread
    /// saturated its core), `generator cpus shared` (the generator's CPUs were busy with other
    /// processes), `connection cap` (requests waited for `--max-connections`, which the rate
    /// needs even at the server's fastest response), `server responses` (requests waited for
    /// a cap the rate would not have reached had the server kept its fastest pace: the server
    /// fell behind), `server accept` (new connections were slow to be accepted), or `unknown`.
    #[serde(default)]
    pub limited_by: Option<LimitedBy>,
    /// Time to establish each new connection (TCP, and TLS when used).
    #[serde(default)]
    pub connect: Option<LatencyStats>,
    /// Connections that took over 0.9 s to establish: a SYN retransmission, the server's
    /// accept queue full.
    #[serde(default)]
    pub slow_connects: u64,
    /// The busiest worker thread's CPU time as a share of one core (0–1).
    #[serde(default)]
    pub busiest_thread: Option<f64>,
    /// How busy the CPUs the generator may run on were during the attack, all processes (0–1).
    #[serde(default)]
    pub cpus_busy: Option<f64>,
    /// The generator's own share of those CPUs' time, all its threads (0–1).
    #[serde(default)]
    pub own_share: Option<f64>,
    /// Requests sent in a later interval than the one they were due in.
    pub sent_late_beyond_interval: u64,
    /// Requests that found the pool at `--max-connections` and waited for a connection.
    pub waited_for_connection: u64,
    pub connections_opened: u64,
    /// The most connections open at once during the run.
    pub peak_connections: u64,
    /// The most requests in flight at once during the run.
    pub peak_in_flight: u64,
    pub threads: usize,
    /// CPU time of the generator's threads.
    pub cpu_s: f64,
    pub cpu_per_request_us: f64,
    /// Peak resident memory of the process.
    pub peak_rss_bytes: Option<u64>,
}

/// The whole summary. Serialized as is for `--output json`, and stored with each run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    pub schema: String,
    pub tool: String,
    /// The request(s), e.g. `POST http://127.0.0.1:8080/users`.
    pub target: String,
    /// e.g. `open loop, constant 2000 req/s for 30s`.
    pub load: String,
    pub open_loop: bool,
    pub protocol: String,
    /// Wall-clock time of the first request's intended send time (RFC 3339).
    pub started_at: String,
    pub interval_s: f64,
    pub requests: RequestFigures,
    pub duration: DurationFigures,
    pub latency: Latencies,
    pub bytes: ByteFigures,
    pub status_codes: BTreeMap<String, u64>,
    pub errors: BTreeMap<String, u64>,
    pub generator: GeneratorFigures,
    /// Why the run ended before its schedule did, if it did.
    pub stopped: Option<String>,
    /// Reasons to read the figures with care, most important first.
    pub warnings: Vec<String>,
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

impl Summary {
    pub fn new(facts: &RunFacts<'_>) -> Self {
        let t = facts.totals;
        let attack = facts.attack.as_secs_f64();
        let wait = facts.wait.as_secs_f64();
        let lateness = LatencyStats::of(&t.lateness);
        let config = facts.config;
        let open = config.open_loop;
        // Batching makes requests up to one window late on purpose: only lateness beyond that
        // is the generator falling behind. A handful of late sends out of thousands is a
        // figure, not a reason to doubt the run.
        let limit = LATENESS_LIMIT_NS + facts.config.batch_ns;
        let late = if t.lateness.is_empty() || t.lateness.max() <= limit {
            0
        } else {
            t.lateness.count_between(limit + 1, t.lateness.max())
        };
        let behind = open && late > (t.sent / 100).max(20);
        let connect = facts.generator.connect.as_ref().filter(|h| !h.is_empty());
        let slow_connects = connect.map_or(0, |h| {
            if h.max() < SYN_RETRANSMISSION_NS {
                0
            } else {
                h.count_between(SYN_RETRANSMISSION_NS, h.max())
            }
        });
        let busiest_thread = facts.generator.busiest_thread;
        let cpus_busy = facts.generator.cpus_busy.as_ref().map(|(b, _)| *b);
        let own_share = facts.generator.own_share;
        let limited_by = behind.then(|| {
            crate::diagnosis::cause(&crate::diagnosis::Evidence {
                totals: t,
                late,
                attack_s: attack,
                max_connections: config.max_connections,
                busiest_thread,
                cpus_busy,
                own_share,
                connect,
                slow_connects,
                limit_ns: limit,
            })
        });
        let cpu_s = facts.cpu.as_secs_f64();
        let mut summary = Summary {
            schema: SCHEMA.into(),
            tool: concat!("showdown-loadgen ", env!("CARGO_PKG_VERSION")).into(),
            target: config.target.clone(),
            load: config.load.clone(),
            open_loop: open,
            protocol: if config.h2 { "h2" } else { "http/1.1" }.into(),
            started_at: humantime::format_rfc3339_millis(facts.started).to_string(),
            interval_s: facts.interval.as_secs_f64(),
            requests: RequestFigures {
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
            generator: GeneratorFigures {
                lateness,
                behind,
                late,
                limited_by,
                connect: connect.map(LatencyStats::of),
                slow_connects,
                busiest_thread,
                cpus_busy,
                own_share,
                sent_late_beyond_interval: t.sent_late_beyond_interval,
                waited_for_connection: t.waited_for_connection,
                connections_opened: t.connections_opened,
                peak_connections: t.connections_open,
                peak_in_flight: t.in_flight,
                threads: config.threads,
                cpu_s,
                cpu_per_request_us: ratio(cpu_s * 1e6, t.requests as f64),
                peak_rss_bytes: facts.peak_rss_bytes,
            },
            stopped: facts.stopped.clone(),
            warnings: Vec::new(),
        };
        summary.warnings = summary.compute_warnings(facts);
        summary
    }

    fn compute_warnings(&self, facts: &RunFacts<'_>) -> Vec<String> {
        let mut out = Vec::new();
        let g = &self.generator;
        if let Some(reason) = &self.stopped {
            out.push(format!(
                "STOPPED EARLY: {reason}. The figures cover what was recorded until then."
            ));
        }
        if g.behind {
            let share = 100.0 * g.late as f64 / self.requests.sent.max(1) as f64;
            let mut text = format!(
                "BEHIND SCHEDULE: {} requests ({share:.1} %) were sent over {} after their time (p99 lateness {}). \
                 Corrected latencies still count from the intended send times, but the server received less load than scheduled.",
                g.late,
                format_ns(LATENESS_LIMIT_NS + facts.config.batch_ns),
                format_ns(g.lateness.p99_ns),
            );
            let cpus = facts
                .generator
                .cpus_busy
                .as_ref()
                .map_or(String::new(), |(_, list)| list.clone());
            text.push(' ');
            text.push_str(&crate::diagnosis::explain(
                self,
                &cpus,
                facts.config.max_connections,
            ));
            out.push(text);
        }
        if !self.open_loop {
            out.push(
                "CLOSED LOOP: each connection waits for its response before sending again, so while the server \
                 stalls the load pauses with it and the latencies hide the queueing a real client would see. \
                 Use --rate for latencies that count from the intended send time."
                    .into(),
            );
        }
        let cancelled = facts.totals.errors.get(ErrorKind::Cancelled);
        if cancelled > 0 {
            out.push(format!(
                "{cancelled} requests were still in flight when the run ended; they are counted as errors of kind cancelled."
            ));
        }
        out.extend(facts.notes.iter().cloned());
        out
    }

    /// The summary as text, for a terminal.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        for w in &self.warnings {
            let _ = writeln!(s, "!! {w}");
        }
        if !self.warnings.is_empty() {
            s.push('\n');
        }
        let r = &self.requests;
        let d = &self.duration;
        let row = |s: &mut String, label: &str, fields: &str, values: String| {
            let line = format!("{label:<13} {fields:<38} {values}");
            let _ = writeln!(s, "{}", line.trim_end());
        };
        row(&mut s, "Target", "", self.target.clone());
        row(
            &mut s,
            "Load",
            "",
            format!(
                "{}, {} thread{}, {}",
                self.load,
                self.generator.threads,
                if self.generator.threads == 1 { "" } else { "s" },
                self.protocol
            ),
        );
        row(
            &mut s,
            "Requests",
            "[total, rate, throughput]",
            format!("{}, {:.2}, {:.2}", r.total, r.rate, r.throughput),
        );
        row(
            &mut s,
            "Duration",
            "[total, attack, wait]",
            format!(
                "{}, {}, {}",
                format_secs(d.total_s),
                format_secs(d.attack_s),
                format_secs(d.wait_s)
            ),
        );
        row(
            &mut s,
            "Latencies",
            "[min, mean, 50, 90, 95, 99, 99.9, max]",
            String::new(),
        );
        row(
            &mut s,
            "  corrected",
            "from intended send (what users see)",
            self.latency.corrected.row(),
        );
        row(
            &mut s,
            "  service",
            "from actual send (what wrk/hey show)",
            self.latency.service.row(),
        );
        row(
            &mut s,
            "Bytes In",
            "[total, mean]",
            format!("{}, {:.2}", self.bytes.in_total, self.bytes.in_mean),
        );
        row(
            &mut s,
            "Bytes Out",
            "[total, mean]",
            format!("{}, {:.2}", self.bytes.out_total, self.bytes.out_mean),
        );
        row(
            &mut s,
            "Success",
            "[ratio]",
            format!("{:.2}%", r.success_ratio * 100.0),
        );
        let codes: Vec<String> = self
            .status_codes
            .iter()
            .map(|(c, n)| format!("{c}:{n}"))
            .collect();
        row(&mut s, "Status Codes", "[code:count]", codes.join(" "));
        let errors: Vec<String> = self
            .errors
            .iter()
            .map(|(k, n)| format!("{k}:{n}"))
            .collect();
        row(
            &mut s,
            "Error Set",
            "[kind:count]",
            if errors.is_empty() {
                "none".into()
            } else {
                errors.join(" ")
            },
        );
        let g = &self.generator;
        if self.open_loop {
            row(
                &mut s,
                "Generator",
                "[lateness 50, 99, max]",
                if g.lateness.count == 0 {
                    "no requests sent".into()
                } else {
                    format!(
                        "{}, {}, {}",
                        format_ns(g.lateness.p50_ns),
                        format_ns(g.lateness.p99_ns),
                        format_ns(g.lateness.max_ns)
                    )
                },
            );
        } else {
            row(&mut s, "Generator", "", String::new());
        }
        if self.open_loop && g.late > 0 && !g.behind {
            row(
                &mut s,
                "",
                "",
                format!(
                    "{} requests ({:.2} %) sent over {} late: too few to doubt the run",
                    g.late,
                    100.0 * g.late as f64 / self.requests.sent.max(1) as f64,
                    format_ns(LATENESS_LIMIT_NS)
                ),
            );
        }
        if let Some(c) = &g.connect {
            let mut line = format!(
                "{}, {}, {}",
                format_ns(c.p50_ns),
                format_ns(c.p99_ns),
                format_ns(c.max_ns)
            );
            if g.slow_connects > 0 {
                let _ = write!(line, "; {} over 0.9 s (SYN retransmitted)", g.slow_connects);
            }
            row(&mut s, "Connect", "[time to connect 50, 99, max]", line);
        }
        let mut cost = format!(
            "cpu {} = {:.1}µs/request",
            format_secs(g.cpu_s),
            g.cpu_per_request_us
        );
        if let Some(b) = g.busiest_thread {
            let _ = write!(cost, " (busiest thread {:.0} % of a core)", b * 100.0);
        }
        if let Some(rss) = g.peak_rss_bytes {
            let _ = write!(cost, ", peak memory {:.1} MiB", rss as f64 / 1048576.0);
        }
        let _ = write!(
            cost,
            ", {} connections opened, peak in flight {}",
            g.connections_opened, g.peak_in_flight
        );
        row(&mut s, "", "", cost);
        s
    }
}

/// A duration in nanoseconds as a short human figure: `312µs`, `1.23ms`, `4.31s`.
pub fn format_ns(ns: u64) -> String {
    let ns = ns as f64;
    let (value, unit) = if ns < 1e3 {
        (ns, "ns")
    } else if ns < 1e6 {
        (ns / 1e3, "µs")
    } else if ns < 1e9 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e9, "s")
    };
    let digits = if value >= 100.0 {
        0
    } else if value >= 10.0 {
        1
    } else {
        2
    };
    format!("{value:.digits$}{unit}")
}

fn format_secs(s: f64) -> String {
    format_ns((s * 1e9).round() as u64)
}

/// A `Duration` in the same short form.
pub fn format_duration(d: Duration) -> String {
    format_ns(nanos(d))
}

/// Whole nanoseconds of a duration, saturating.
pub fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

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
            LatencyStats::of(&crate::model::new_histogram(1_000)).row(),
            "no requests"
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

    #[test]
    fn a_handful_of_late_sends_is_a_figure_not_an_alarm() {
        let s = summary_of(12, 0, GeneratorFacts::default());
        assert!(!s.generator.behind);
        assert_eq!(s.generator.late, 12);
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
        assert!(s
            .to_text()
            .contains("12 requests (0.04 %) sent over 1.00ms late: too few to doubt the run"));
    }

    #[test]
    fn lateness_is_blamed_on_what_the_measurements_show() {
        let busy = |thread: f64, cpus: f64| GeneratorFacts {
            busiest_thread: Some(thread),
            cpus_busy: Some((cpus, "0".into())),
            own_share: Some(thread),
            connect: None,
        };
        let cause = |s: Summary| (s.generator.limited_by, s.warnings[0].clone());
        let (by, text) = cause(summary_of(3_000, 0, busy(0.97, 0.98)));
        assert_eq!(by, Some(LimitedBy::Generator));
        assert!(
            text.contains("busiest worker thread was busy 97 %"),
            "{text}"
        );
        let (by, text) = cause(summary_of(3_000, 0, busy(0.2, 0.99)));
        assert_eq!(by, Some(LimitedBy::GeneratorCpusShared));
        assert!(
            text.contains("they were 99 % busy, of which the generator's own threads took 20 %"),
            "{text}"
        );
        // The generator's other threads (its aggregator, the store's writer) are the
        // generator: a busy CPU that it kept busy itself is not another process's doing.
        let own = GeneratorFacts {
            own_share: Some(0.85),
            ..busy(0.6, 0.92)
        };
        let (by, text) = cause(summary_of(3_000, 0, own));
        assert_eq!(by, Some(LimitedBy::Generator));
        assert!(
            text.contains("92 % busy, 85 % of their time taken by the generator's own threads"),
            "{text}"
        );
        assert!(text.contains("--batch 1ms"), "{text}");
        let (by, text) = cause(summary_of(3_000, 2_900, busy(0.2, 0.3)));
        assert_eq!(by, Some(LimitedBy::ConnectionCap));
        assert!(text.contains("--max-connections 8"), "{text}");
        let mut connect = crate::model::new_histogram(30_000_000_000);
        connect.record(200_000).unwrap();
        connect.record(1_020_000_000).unwrap();
        let slow = GeneratorFacts {
            connect: Some(connect),
            ..busy(0.2, 0.3)
        };
        let (by, text) = cause(summary_of(3_000, 0, slow));
        assert_eq!(by, Some(LimitedBy::ServerAccept));
        assert!(text.contains("1 connections took over 0.9 s"), "{text}");
        let (by, text) = cause(summary_of(3_000, 0, busy(0.2, 0.3)));
        assert_eq!(by, Some(LimitedBy::Unknown));
        assert!(text.contains("Cause not found"), "{text}");
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
        let text = &s.warnings[0];
        assert!(text.contains("the server fell behind"), "{text}");
        assert!(text.contains("--max-connections 10000"), "{text}");
        assert!(
            text.contains("the 1000 req/s sent would have needed about 10 connections"),
            "{text}"
        );
    }
}
