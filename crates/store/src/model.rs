//! What is recorded about requests over one interval, and how intervals add up.
//!
//! An [`IntervalStats`] holds counters and four HdrHistograms for the requests that reached a
//! milestone during one interval of the run: the `requests` issued by the schedule and the
//! lateness of those `sent` are counted when they are sent; responses, errors, bytes in and the
//! latency histograms when the request completes. Each worker thread fills its own; the
//! aggregator adds them up ([`IntervalStats::merge`]), and the run's totals are the sum of all
//! intervals. Histograms add exactly, so nothing is lost by splitting the work across threads,
//! or, later, across gun hosts.
//!
//! All times are nanoseconds. Histograms resolve 1 µs (the lowest discernible value is 1,000 ns)
//! with 3 significant digits, and grow beyond their initial top (the request timeout) rather
//! than clamp, so that a corrected latency longer than the timeout is still exact.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde::Serialize;

/// Why a request did not get a successful response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The connection was refused (nothing listens on the port).
    Refused,
    /// Another failure to connect: unreachable, out of file descriptors, …
    Connect,
    /// The TLS handshake failed.
    Tls,
    /// The connection was reset or closed before the response was complete.
    Reset,
    /// No complete response within `--timeout`.
    Timeout,
    /// The server sent something that is not HTTP.
    Protocol,
    /// The response started but its body could not be read.
    BodyRead,
    /// A 4xx status.
    Http4xx,
    /// A 5xx status.
    Http5xx,
    /// Still in flight when the run was interrupted and its grace period ran out.
    Cancelled,
}

impl ErrorKind {
    pub const ALL: [ErrorKind; 10] = [
        ErrorKind::Refused,
        ErrorKind::Connect,
        ErrorKind::Tls,
        ErrorKind::Reset,
        ErrorKind::Timeout,
        ErrorKind::Protocol,
        ErrorKind::BodyRead,
        ErrorKind::Http4xx,
        ErrorKind::Http5xx,
        ErrorKind::Cancelled,
    ];

    /// The name used in summaries and JSON.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Refused => "refused",
            ErrorKind::Connect => "connect",
            ErrorKind::Tls => "tls",
            ErrorKind::Reset => "reset",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Protocol => "protocol",
            ErrorKind::BodyRead => "body_read",
            ErrorKind::Http4xx => "http_4xx",
            ErrorKind::Http5xx => "http_5xx",
            ErrorKind::Cancelled => "cancelled",
        }
    }

    fn slot(self) -> usize {
        self as usize
    }
}

/// Counts per [`ErrorKind`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ErrorCounts([u64; ErrorKind::ALL.len()]);

impl ErrorCounts {
    pub fn add(&mut self, kind: ErrorKind, n: u64) {
        self.0[kind.slot()] += n;
    }

    pub fn get(&self, kind: ErrorKind) -> u64 {
        self.0[kind.slot()]
    }

    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// The kinds that occurred, with their counts.
    pub fn nonzero(&self) -> impl Iterator<Item = (ErrorKind, u64)> + '_ {
        ErrorKind::ALL
            .iter()
            .map(|&k| (k, self.get(k)))
            .filter(|&(_, n)| n > 0)
    }

    fn merge(&mut self, other: &ErrorCounts) {
        for (a, b) in self.0.iter_mut().zip(other.0.iter()) {
            *a += b;
        }
    }
}

/// Counts per HTTP status code (100–599; anything else counts as 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusCounts(Box<[u64; 600]>);

impl Default for StatusCounts {
    fn default() -> Self {
        StatusCounts(Box::new([0; 600]))
    }
}

impl StatusCounts {
    pub fn add(&mut self, status: u16, n: u64) {
        let slot = if (100..600).contains(&status) {
            status as usize
        } else {
            0
        };
        self.0[slot] += n;
    }

    /// The codes seen, in order, with their counts.
    pub fn to_map(&self) -> BTreeMap<u16, u64> {
        self.0
            .iter()
            .enumerate()
            .filter(|&(_, &n)| n > 0)
            .map(|(code, &n)| (code as u16, n))
            .collect()
    }

    fn merge(&mut self, other: &StatusCounts) {
        for (a, b) in self.0.iter_mut().zip(other.0.iter()) {
            *a += b;
        }
    }
}

/// Lowest discernible value of every histogram: 1 µs.
pub const HISTOGRAM_LOWEST_NS: u64 = 1_000;
/// Significant digits of every histogram.
pub const HISTOGRAM_SIGFIG: u8 = 3;

/// A latency histogram in nanoseconds, resolving 1 µs, sized for values up to `high_ns` and
/// growing beyond it when needed.
pub fn new_histogram(high_ns: u64) -> Histogram<u64> {
    let high = high_ns.max(2 * HISTOGRAM_LOWEST_NS);
    let mut h = Histogram::new_with_bounds(HISTOGRAM_LOWEST_NS, high, HISTOGRAM_SIGFIG)
        .expect("constant bounds: lowest 1000 ≥ 1, high ≥ 2 × lowest, 3 significant digits");
    h.auto(true);
    h
}

/// Everything recorded during one interval (or, merged, over a whole run).
#[derive(Debug, Clone)]
pub struct IntervalStats {
    /// Interval number: it covers `[start + index × interval, start + (index + 1) × interval)`.
    pub index: u64,
    /// Requests the schedule issued (for a closed loop: requests started).
    pub requests: u64,
    /// Requests written to a connection.
    pub sent: u64,
    /// Requests answered with an HTTP response (any status).
    pub responses: u64,
    /// Responses with a 2xx or 3xx status.
    pub ok: u64,
    /// Response body bytes received.
    pub bytes_in: u64,
    /// Request body bytes sent.
    pub bytes_out: u64,
    pub status: StatusCounts,
    pub errors: ErrorCounts,
    /// Completion − intended send time: the latency a user of the server sees.
    pub corrected: Histogram<u64>,
    /// Completion − actual send time: what a closed-loop tool would report.
    pub service: Histogram<u64>,
    /// Response headers received − actual send time.
    pub first_byte: Histogram<u64>,
    /// Actual send time − intended send time: how far the generator fell behind.
    pub lateness: Histogram<u64>,
    /// Requests sent in a later interval than the one they were due in.
    pub sent_late_beyond_interval: u64,
    /// Requests that found the pool at `--max-connections` and waited for a connection.
    pub waited_for_connection: u64,
    /// New connections established.
    pub connections_opened: u64,
    /// Requests sent again on a new connection because the server closed the reused one as
    /// they went out (each counted once in `sent`).
    pub resent: u64,
    /// The most requests in flight at once during the interval, in the whole gun process
    /// (summed over gun hosts when shards are merged: then at most that).
    pub in_flight: u64,
    /// The most connections open at once during the interval, likewise.
    pub connections_open: u64,
}

impl IntervalStats {
    /// An empty interval whose histograms are sized for `high_ns` (the request timeout).
    pub fn new(index: u64, high_ns: u64) -> Self {
        IntervalStats {
            index,
            requests: 0,
            sent: 0,
            responses: 0,
            ok: 0,
            bytes_in: 0,
            bytes_out: 0,
            status: StatusCounts::default(),
            errors: ErrorCounts::default(),
            corrected: new_histogram(high_ns),
            service: new_histogram(high_ns),
            first_byte: new_histogram(high_ns),
            lateness: new_histogram(high_ns),
            sent_late_beyond_interval: 0,
            waited_for_connection: 0,
            connections_opened: 0,
            resent: 0,
            in_flight: 0,
            connections_open: 0,
        }
    }

    /// Adds another gun host's (shard's) figures for the same interval: gauges add, since the
    /// hosts' peaks may coincide. (Threads of one gun use [`IntervalStats::merge_threads`]; a
    /// total over time, [`IntervalStats::accumulate`].)
    pub fn merge(&mut self, other: &IntervalStats) {
        self.add_counts(other);
        self.in_flight += other.in_flight;
        self.connections_open += other.connections_open;
    }

    /// Adds another worker thread's figures for the same interval: each thread's gauges are
    /// already the process-wide peaks it saw, so the highest is the peak.
    pub fn merge_threads(&mut self, other: &IntervalStats) {
        self.add_counts(other);
        self.in_flight = self.in_flight.max(other.in_flight);
        self.connections_open = self.connections_open.max(other.connections_open);
    }

    /// Adds a later interval to a run total: counts and histograms add, gauges keep their peak.
    pub fn accumulate(&mut self, other: &IntervalStats) {
        self.add_counts(other);
        self.in_flight = self.in_flight.max(other.in_flight);
        self.connections_open = self.connections_open.max(other.connections_open);
    }

    fn add_counts(&mut self, other: &IntervalStats) {
        self.requests += other.requests;
        self.sent += other.sent;
        self.responses += other.responses;
        self.ok += other.ok;
        self.bytes_in += other.bytes_in;
        self.bytes_out += other.bytes_out;
        self.status.merge(&other.status);
        self.errors.merge(&other.errors);
        // Adding histograms fails only if the target cannot grow, and these all auto-resize.
        let _ = self.corrected.add(&other.corrected);
        let _ = self.service.add(&other.service);
        let _ = self.first_byte.add(&other.first_byte);
        let _ = self.lateness.add(&other.lateness);
        self.sent_late_beyond_interval += other.sent_late_beyond_interval;
        self.waited_for_connection += other.waited_for_connection;
        self.connections_opened += other.connections_opened;
        self.resent += other.resent;
    }

    /// Requests that ended one way or another: a response, or an error without one.
    pub fn finished(&self) -> u64 {
        self.responses + self.errors_without_response()
    }

    /// Errors that are not a status code (an HTTP error status still is a response).
    pub fn errors_without_response(&self) -> u64 {
        self.errors.total()
            - self.errors.get(ErrorKind::Http4xx)
            - self.errors.get(ErrorKind::Http5xx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_intervals_give_the_same_percentiles_as_one() {
        let mut whole = IntervalStats::new(0, 30_000_000_000);
        let mut a = IntervalStats::new(0, 30_000_000_000);
        let mut b = IntervalStats::new(0, 30_000_000_000);
        for v in 1..=10_000u64 {
            let ns = v * 1_000 + v % 7;
            whole.corrected.record(ns).unwrap();
            if v % 3 == 0 { &mut a } else { &mut b }
                .corrected
                .record(ns)
                .unwrap();
        }
        a.errors.add(ErrorKind::Timeout, 2);
        b.errors.add(ErrorKind::Timeout, 3);
        a.status.add(201, 5);
        b.status.add(201, 1);
        b.status.add(503, 1);
        a.merge(&b);
        for q in [0.5, 0.9, 0.99, 0.999, 1.0] {
            assert_eq!(
                a.corrected.value_at_quantile(q),
                whole.corrected.value_at_quantile(q)
            );
        }
        assert_eq!(a.errors.get(ErrorKind::Timeout), 5);
        assert_eq!(a.status.to_map(), BTreeMap::from([(201, 6), (503, 1)]));
    }

    #[test]
    fn histograms_resolve_microseconds_and_grow_past_the_timeout() {
        let mut h = new_histogram(1_000_000_000);
        h.record(1_234_000).unwrap();
        h.record(5_000_000_000).unwrap();
        assert_eq!(h.min(), h.lowest_equivalent(1_234_000));
        assert!((h.value_at_quantile(0.5) as f64 - 1_234_000.0).abs() < 1_234.0);
        assert!((h.max() as f64 - 5e9).abs() / 5e9 < 0.001);
    }

    #[test]
    fn gauges_add_across_threads_but_peak_over_time() {
        let mut t0 = IntervalStats::new(0, 1_000_000);
        t0.in_flight = 3;
        let mut t1 = IntervalStats::new(0, 1_000_000);
        t1.in_flight = 4;
        t0.merge(&t1);
        assert_eq!(t0.in_flight, 7);
        let mut total = IntervalStats::new(0, 1_000_000);
        total.accumulate(&t0);
        total.accumulate(&t1);
        assert_eq!(total.in_flight, 7);
    }
}
