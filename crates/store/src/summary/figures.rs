//! The summary's figures, as the JSON summary holds them (`"schema":
//! "showdown.loadgen.summary/1"`): what was sent and answered, the latencies corrected and
//! not, the bytes, the statuses and errors, the generator's own lateness and cost, and why to
//! doubt them. Built by `Summary::new`, what held the run back decided by `diagnosis`; its
//! warnings worded by `analysis::warnings`, its text by `analysis::summary`.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::vocabulary::LimitedBy;

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
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RequestFigures {
    /// An open loop's offered rate, req/s: what its schedule asked for (absent for a closed
    /// loop, and from runs kept before it was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offered: Option<f64>,
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

/// The achieved gaps between sends against the intended exponential ones (Poisson arrivals):
/// each worker's gaps, rescaled by the schedule's rate to mean 1, pooled.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct ArrivalFit {
    /// Kolmogorov–Smirnov distance: the largest difference between the share of gaps up to any
    /// length achieved and intended (0–1; 0.01 is one point of the distribution).
    pub ks: f64,
    /// Where it is, in units of the mean gap (0.1: among gaps a tenth of the mean).
    pub at_mean_gaps: f64,
    /// Its sign there: achieved − intended share of gaps up to that length (below zero: too
    /// few short gaps, sends spaced apart; above: too many, sends released together).
    pub excess: f64,
    /// How many gaps it rests on.
    pub gaps: u64,
    /// The distance exponential gaps of this count exceed with 5 % chance (1.358/√n).
    pub critical: f64,
}

/// Beyond this distance the sends are not called Poisson, however many gaps show it: 5 points
/// of the distribution, what sends released a wake-up late (tens of µs here) move it by.
pub const ARRIVAL_KS_LIMIT: f64 = 0.05;

impl ArrivalFit {
    /// From the signed largest difference, where it is (in mean gaps), and the gaps counted.
    pub fn new(excess: f64, at_mean_gaps: f64, gaps: u64) -> Self {
        ArrivalFit {
            ks: excess.abs(),
            at_mean_gaps,
            excess,
            gaps,
            critical: 1.358 / (gaps.max(1) as f64).sqrt(),
        }
    }

    /// Whether the sends were as Poisson as intended: within the test's 5 % distance, or within
    /// [`ARRIVAL_KS_LIMIT`] when so many gaps make the test see differences of no consequence.
    pub fn as_intended(&self) -> bool {
        self.ks <= self.critical.max(ARRIVAL_KS_LIMIT)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GeneratorFigures {
    /// The generator's CPUs ("0-1"), where they were read: what its diagnosis names.
    #[serde(default)]
    pub cpus: String,
    /// The connection pool's cap (0 in runs kept before it was kept here).
    #[serde(default)]
    pub max_connections: usize,
    /// The pacing window, ns (0: paced request by request).
    #[serde(default)]
    pub batch_ns: u64,
    /// Actual − intended send time, over all requests sent.
    pub lateness: LatencyStats,
    /// Whether sends were late enough to matter: more than 1 % of the requests sent (and at
    /// least 20) left over 1 ms (plus any pacing window, `batch_ns`) after their time. The
    /// figures then describe less load than scheduled (see `warnings` and `limited_by`).
    pub behind: bool,
    /// Requests sent over 1 ms (plus any pacing window, `batch_ns`) after their time.
    #[serde(default)]
    pub late: u64,
    /// When behind, what held the sends back, from measurements: `generator` (a worker thread
    /// saturated its core), `generator cpus shared` (the generator's CPUs were busy with other
    /// processes), `connection cap` (requests waited for the pool's cap, which the rate
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
    /// The share of every CPU's time the hypervisor gave other guests over the attack (0–1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal: Option<f64>,
    /// How long after it was due the first request left (actual − intended send time, on the
    /// generator's clock): a gun's start against its run group's T0, the skew between guns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_late_ns: Option<i64>,
    /// Poisson arrivals: how far the gaps between the sends were from exponential.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrivals: Option<ArrivalFit>,
    /// Requests sent in a later interval than the one they were due in.
    pub sent_late_beyond_interval: u64,
    /// Requests that found the pool at its cap (`max_connections`) and waited for a connection.
    pub waited_for_connection: u64,
    pub connections_opened: u64,
    /// Requests sent again on a new connection because the server closed the reused one as
    /// they went out (counted once among the requests, timed from their first send).
    #[serde(default)]
    pub resent: u64,
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

impl GeneratorFigures {
    /// The share of the generator's CPUs other processes took during the attack (0–1): how
    /// busy they were less the generator's own share (all of it when that was not read).
    pub fn others_share(&self) -> Option<f64> {
        Some((self.cpus_busy? - self.own_share.unwrap_or(0.0)).max(0.0))
    }
}

/// The whole summary. Serialized as is for loadgen's JSON output, and stored with each run.
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
    /// The corrected latencies' p50, p99 and p99.9 after the run's warm-up, each with its 95 %
    /// interval over batch means or why it has none (absent from runs kept before it was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tails: Option<Tails>,
    /// Whether the figures can be trusted on the machine that made them, and why not
    /// (absent from runs kept before it was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validity: Option<super::validity::Validity>,
}

/// A run's latency quantiles after its warm-up, each with a 95 % interval that holds on
/// correlated latencies (batch means) or the reason it has none (`analysis::tail`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Tails {
    /// What was dropped from the run's start before the quantiles were read, seconds.
    pub warmup_s: f64,
    /// The requests read (after the warm-up).
    pub requests: u64,
    /// Each quantile read.
    pub figures: Vec<TailFigure>,
}

/// One latency quantile of a run and its interval.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TailFigure {
    /// The quantile, in percent (99.0 for the p99).
    pub percentile: f64,
    /// The quantile of the corrected latencies after the warm-up, ns.
    pub value_ns: u64,
    /// Its 95 % interval, or why none is shown.
    pub interval: TailInterval,
}

/// A quantile's 95 % interval, or the reason it has none: each check is fixed in advance.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TailInterval {
    /// The interval, ns, read over this many consecutive batches.
    Bounded {
        low_ns: u64,
        high_ns: u64,
        batches: u32,
    },
    /// Fewer recorded intervals after the warm-up than the batches need.
    Short { intervals: u32, needed: u32 },
    /// Too few requests above the quantile: each batch needs its share, `needed` in all.
    Few { requests: u64, needed: u64 },
    /// The requests above the quantile come in clumps: their counts across the slots spread
    /// `dispersion` × as much as independent ones would, leaving about `clumps` a batch.
    Clumped { dispersion: f64, clumps: f64 },
    /// The spread of five batches' figures against ten's (their means' variances): latencies
    /// correlated for longer than a batch.
    Grows { ratio: f64, limit: f64 },
    /// The batches' figures correlated one to the next (lag-1).
    Correlated { lag1: f64, limit: f64 },
    /// The figure moved from the run's first third to its last, ns.
    Trend { first_ns: u64, last_ns: u64 },
}
