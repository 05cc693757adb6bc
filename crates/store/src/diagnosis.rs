//! What held a run back when its sends ran late: the decision ([`cause`], from the run's
//! measurements, kept as the summary's `limited_by`) and the thresholds it rests on. Its
//! explanation with its figures, the flags to change, and what an experiment makes of it are
//! the analysis crate's, above this one (`analysis::warnings`).
//!
//! The causes, in the order they are tested: a worker thread of the generator saturated its
//! core; the generator's CPUs were saturated (by its own threads, still the generator, or by
//! other processes); the generator started its schedule late (its first send after its time,
//! the requests due meanwhile at least half of the late ones); requests waited for a free
//! connection (because the cap is too low for the rate even at the server's fastest pace, or
//! because the server slowed down: Little's law at its fastest response tells which); new
//! connections were slow to be accepted (a SYN retransmitted: the server's accept queue was
//! full); else no measurement explains it.

use hdrhistogram::Histogram;

use crate::model::IntervalStats;
use crate::vocabulary::LimitedBy;

/// Above this share of a core, a generator thread is saturated; above this share of its CPUs'
/// time, the generator's CPUs are.
pub const SATURATED: f64 = 0.9;

/// When the generator's CPUs were saturated, the share of their time that other processes
/// must have taken to be blamed for it (else the generator's own threads are).
pub const OTHERS_TO_BLAME: f64 = 0.25;

/// A connection that took this long to establish needed a SYN retransmission (Linux's initial
/// retransmission timeout is 1 s): the server's accept queue was full.
pub const SYN_RETRANSMISSION_NS: u64 = 900_000_000;

/// What a diagnosis reads of a run that fell behind.
#[derive(Debug)]
pub struct Evidence<'a> {
    pub totals: &'a IntervalStats,
    /// Requests sent later than the limit after their time.
    pub late: u64,
    /// From time zero to the last request sent, s.
    pub attack_s: f64,
    pub max_connections: usize,
    /// The busiest worker thread's share of a core.
    pub busiest_thread: Option<f64>,
    /// How busy the generator's CPUs were, every process counted.
    pub cpus_busy: Option<f64>,
    /// The generator's own share of those CPUs' time.
    pub own_share: Option<f64>,
    /// Time to establish each new connection.
    pub connect: Option<&'a Histogram<u64>>,
    /// Connections that took a SYN retransmission.
    pub slow_connects: u64,
    /// Lateness beyond which a send counts as late, ns.
    pub limit_ns: u64,
    /// The first request's actual send − its intended time, ns.
    pub start_late_ns: Option<i64>,
}

/// Connections `rate` req/s needs if every response took `fastest_ns` (Little's law).
pub fn needed_connections(rate: f64, fastest_ns: u64) -> f64 {
    rate * fastest_ns as f64 / 1e9
}

/// What held the sends back, from the measurements.
pub fn cause(e: &Evidence<'_>) -> LimitedBy {
    let t = e.totals;
    if e.busiest_thread.is_some_and(|b| b >= SATURATED) {
        return LimitedBy::Generator;
    }
    if let Some(busy) = e.cpus_busy.filter(|&b| b >= SATURATED) {
        // The generator's own threads count as the generator: only when other processes took a
        // fair share of its CPUs are they to blame.
        return if busy - e.own_share.unwrap_or(0.0) < OTHERS_TO_BLAME {
            LimitedBy::Generator
        } else {
            LimitedBy::GeneratorCpusShared
        };
    }
    let rate = if e.attack_s > 0.0 {
        t.requests as f64 / e.attack_s
    } else {
        0.0
    };
    // A start later than the limit makes every request due meanwhile late: the cause when
    // those are at least half of the late ones.
    if let Some(start) = e.start_late_ns.filter(|&s| s > e.limit_ns as i64) {
        if 2.0 * rate * start as f64 / 1e9 >= e.late as f64 {
            return LimitedBy::LateStart;
        }
    }
    if t.waited_for_connection > 0 && t.waited_for_connection * 2 >= e.late {
        // The pool filled. Little's law at the server's fastest response says how many
        // connections the rate needs if the server kept that pace: if the cap is well above it,
        // the pool filled because the server slowed down, not because the cap is small.
        let needed = needed_connections(rate, t.service.min()).max(1.0);
        return if !t.service.is_empty() && e.max_connections as f64 >= 2.0 * needed {
            LimitedBy::ServerResponses
        } else {
            LimitedBy::ConnectionCap
        };
    }
    if e.slow_connects > 0
        || e.connect
            .is_some_and(|h| h.value_at_quantile(0.99) > e.limit_ns)
    {
        return LimitedBy::ServerAccept;
    }
    LimitedBy::Unknown
}
