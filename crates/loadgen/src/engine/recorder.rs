//! Each worker thread's recording: events in, closed intervals out.
//!
//! A [`Recorder`] belongs to one worker thread (no locks on the hot path). It keeps the current
//! interval's [`IntervalStats`]; every event carries its own timestamp, and an event past the
//! interval's end first closes it and sends it to the aggregator, so that a request lands in the
//! interval of the moment it happened, exactly, however late the thread's ticker runs. The
//! ticker closes intervals in which nothing happened. Memory stays flat: a closed interval leaves
//! the thread at once.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hdrhistogram::Histogram;
use tokio::sync::mpsc::UnboundedSender;

use crate::engine::arrivals::GapFit;
use crate::engine::clock::Nanos;
use store::model::{ErrorKind, IntervalStats};

/// Requests in flight and connections open in the whole process, shared by the workers, so
/// that each interval's peaks are true peaks: every worker records the process-wide count it
/// sees when it adds one, and the highest such count is the peak, however many threads.
#[derive(Debug, Default)]
pub struct Gauges {
    in_flight: AtomicU64,
    connections: AtomicU64,
}

impl Gauges {
    fn add(counter: &AtomicU64, n: u64) -> u64 {
        counter.fetch_add(n, Ordering::Relaxed) + n
    }

    fn sub(counter: &AtomicU64, n: u64) {
        counter.fetch_sub(n, Ordering::Relaxed);
    }
}

/// What worker threads tell the aggregator.
#[derive(Debug)]
pub enum WorkerMessage {
    /// A closed interval of one worker.
    Interval {
        worker: usize,
        stats: Box<IntervalStats>,
    },
    /// The worker has finished; every interval it recorded was sent before this.
    Done {
        worker: usize,
        timing: Timing,
        /// CPU time the worker's thread used.
        cpu: Duration,
        /// That CPU time as a share of the thread's life (1 = a whole core all along).
        busy: f64,
        /// Time to establish each of its new connections, ns.
        connect: Box<Histogram<u64>>,
        /// Poisson arrivals: the gaps between its sends.
        gaps: Option<Box<GapFit>>,
    },
}

/// When a worker sent its first and last requests and saw its last completion.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timing {
    pub first_sent: Option<Nanos>,
    /// When the first request sent was due.
    pub first_intended: Option<Nanos>,
    pub last_sent: Option<Nanos>,
    pub last_completed: Option<Nanos>,
}

impl Timing {
    /// How long after it was due the run's first request left: a generator's own start against
    /// its time zero (on its clock).
    pub fn start_late_ns(&self) -> Option<i64> {
        let (sent, due) = (self.first_sent?, self.first_intended?);
        Some(i64::try_from(sent).ok()? - i64::try_from(due).ok()?)
    }

    /// Combines two workers' timings.
    pub fn merge(self, other: Timing) -> Timing {
        fn pick(a: Option<Nanos>, b: Option<Nanos>, f: fn(Nanos, Nanos) -> Nanos) -> Option<Nanos> {
            match (a, b) {
                (Some(a), Some(b)) => Some(f(a, b)),
                (a, b) => a.or(b),
            }
        }
        Timing {
            first_sent: pick(self.first_sent, other.first_sent, Nanos::min),
            first_intended: pick(self.first_intended, other.first_intended, Nanos::min),
            last_sent: pick(self.last_sent, other.last_sent, Nanos::max),
            last_completed: pick(self.last_completed, other.last_completed, Nanos::max),
        }
    }
}

/// How a request ended, as seen by the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exchange {
    /// When the request was handed to the connection.
    pub sent: Nanos,
    /// When the response headers were received.
    pub first_byte: Option<Nanos>,
    /// When the response was complete, the error happened, or the timeout expired.
    pub completed: Nanos,
    pub status: Option<u16>,
    pub bytes_in: u64,
    pub error: Option<ErrorKind>,
}

/// One worker's recording state.
#[derive(Debug)]
pub struct Recorder {
    worker: usize,
    start: Nanos,
    interval: Nanos,
    high_ns: u64,
    current: Box<IntervalStats>,
    out: UnboundedSender<WorkerMessage>,
    /// This worker's requests dispatched and not yet finished.
    pub in_flight: u64,
    /// This worker's connections currently open.
    pub connections_open: u64,
    gauges: Arc<Gauges>,
    /// The highest process-wide counts seen in the current interval.
    peak_in_flight: u64,
    peak_connections: u64,
    connect: Box<Histogram<u64>>,
    born: Nanos,
    /// The thread's CPU time when this recorder was made: its busy share counts from then.
    born_cpu: Duration,
    timing: Timing,
    finished: bool,
    gaps: Option<Box<GapFit>>,
}

impl Recorder {
    /// `start` is the run's time zero (request 0's intended send time); `interval` the length
    /// of an interval; `high_ns` the size the histograms start with (the timeout).
    pub fn new(
        worker: usize,
        start: Nanos,
        interval: Nanos,
        high_ns: u64,
        out: UnboundedSender<WorkerMessage>,
        gauges: Arc<Gauges>,
    ) -> Self {
        Recorder {
            worker,
            start,
            interval: interval.max(1),
            high_ns,
            current: Box::new(IntervalStats::new(0, high_ns)),
            out,
            in_flight: 0,
            connections_open: 0,
            peak_in_flight: 0,
            peak_connections: 0,
            gauges,
            connect: Box::new(store::model::new_histogram(high_ns)),
            born: crate::engine::clock::now(),
            born_cpu: crate::engine::clock::thread_cpu(),
            timing: Timing::default(),
            finished: false,
            gaps: None,
        }
    }

    /// Also fits the gaps between sends (Poisson arrivals).
    pub(crate) fn with_gaps(mut self, gaps: GapFit) -> Self {
        self.gaps = Some(Box::new(gaps));
        self
    }

    /// Fewer requests in flight, here and in the process.
    fn ended(&mut self, count: u64) {
        let n = count.min(self.in_flight);
        self.in_flight -= n;
        Gauges::sub(&self.gauges.in_flight, n);
    }

    fn index_of(&self, t: Nanos) -> u64 {
        t.saturating_sub(self.start) / self.interval
    }

    /// Closes every interval that ended at or before `now`.
    pub fn roll_to(&mut self, now: Nanos) {
        let target = self.index_of(now);
        while self.current.index < target {
            self.emit(self.current.index + 1);
        }
    }

    fn emit(&mut self, next: u64) {
        if self.finished {
            return;
        }
        let mut closed = std::mem::replace(
            &mut self.current,
            Box::new(IntervalStats::new(next, self.high_ns)),
        );
        closed.in_flight = self.peak_in_flight;
        closed.connections_open = self.peak_connections;
        // The next interval starts at the level this one ends at.
        self.peak_in_flight = self.gauges.in_flight.load(Ordering::Relaxed);
        self.peak_connections = self.gauges.connections.load(Ordering::Relaxed);
        // The aggregator only goes away when the run is being torn down: nothing to keep then.
        let _ = self.out.send(WorkerMessage::Interval {
            worker: self.worker,
            stats: closed,
        });
    }

    /// The schedule issued a request.
    pub fn requested(&mut self, now: Nanos) {
        self.roll_to(now);
        self.current.requests += 1;
        self.in_flight += 1;
        let now_in_flight = Gauges::add(&self.gauges.in_flight, 1);
        self.peak_in_flight = self.peak_in_flight.max(now_in_flight);
    }

    /// A request was written to a connection at `sent`; it was due at `intended`.
    pub fn sent(&mut self, sent: Nanos, intended: Nanos, body_bytes: u64) {
        self.roll_to(sent);
        self.timing.first_sent.get_or_insert(sent);
        self.timing.first_intended.get_or_insert(intended);
        self.timing.last_sent = Some(sent);
        if let Some(gaps) = &mut self.gaps {
            gaps.sent(sent);
        }
        let due_index = self.index_of(intended);
        let s = &mut self.current;
        s.sent += 1;
        s.bytes_out += body_bytes;
        let _ = s.lateness.record(sent.saturating_sub(intended));
        if due_index < s.index {
            s.sent_late_beyond_interval += 1;
        }
    }

    /// A request that was sent has ended (response, error or timeout).
    pub fn finished(&mut self, intended: Nanos, exchange: &Exchange) {
        self.roll_to(exchange.completed);
        self.ended(1);
        self.timing.last_completed = self.timing.last_completed.max(Some(exchange.completed));
        let s = &mut self.current;
        s.bytes_in += exchange.bytes_in;
        if let Some(status) = exchange.status {
            s.responses += 1;
            s.status.add(status, 1);
            match status {
                200..=399 => {}
                400..=499 => s.errors.add(ErrorKind::Http4xx, 1),
                _ => s.errors.add(ErrorKind::Http5xx, 1),
            }
        }
        // Latency is recorded for every response (any status) and for a timeout, at the
        // timeout: its latency is at least that. A broken exchange has no latency to record.
        if matches!(exchange.error, None | Some(ErrorKind::Timeout)) {
            let _ = s
                .corrected
                .record(exchange.completed.saturating_sub(intended));
            let _ = s
                .service
                .record(exchange.completed.saturating_sub(exchange.sent));
        }
        match exchange.error {
            None => {
                if (200..=399).contains(&exchange.status.unwrap_or(0)) {
                    s.ok += 1;
                }
                if let Some(first) = exchange.first_byte {
                    let _ = s.first_byte.record(first.saturating_sub(exchange.sent));
                }
            }
            Some(kind) => s.errors.add(kind, 1),
        }
    }

    /// A request ended without being sent (no connection could be made, or it waited for one
    /// past its timeout). A timeout is recorded at `now − intended`.
    pub fn failed_unsent(&mut self, now: Nanos, intended: Nanos, kind: ErrorKind) {
        self.roll_to(now);
        self.ended(1);
        let s = &mut self.current;
        s.errors.add(kind, 1);
        if kind == ErrorKind::Timeout {
            let _ = s.corrected.record(now.saturating_sub(intended));
        }
    }

    /// Requests still in flight when the run was cut short.
    pub fn cancelled(&mut self, now: Nanos, count: u64) {
        self.roll_to(now);
        self.ended(count);
        self.current.errors.add(ErrorKind::Cancelled, count);
    }

    /// The request found the pool full and waits for a connection.
    pub fn waited_for_connection(&mut self, now: Nanos) {
        self.roll_to(now);
        self.current.waited_for_connection += 1;
    }

    /// A request is sent again on a new connection: the server closed the reused one as it
    /// went out.
    pub fn resent(&mut self, now: Nanos) {
        self.roll_to(now);
        self.current.resent += 1;
    }

    /// A new connection was established, `took` after the attempt began.
    pub fn connection_opened(&mut self, now: Nanos, took: Nanos) {
        self.roll_to(now);
        self.current.connections_opened += 1;
        self.connections_open += 1;
        let open = Gauges::add(&self.gauges.connections, 1);
        self.peak_connections = self.peak_connections.max(open);
        let _ = self.connect.record(took);
    }

    /// A connection was closed.
    pub fn connection_closed(&mut self) {
        if self.connections_open > 0 {
            self.connections_open -= 1;
            Gauges::sub(&self.gauges.connections, 1);
        }
    }

    /// Sends the last, partial interval and says the worker is done. Nothing is recorded after.
    /// `polled` is CPU time the thread spent waiting for a send by polling the clock: spent,
    /// but not work, so its busy share leaves it out.
    pub fn finish(&mut self, now: Nanos, cpu: Duration, polled: Duration) {
        self.roll_to(now);
        self.emit(self.current.index + 1);
        self.finished = true;
        let _ = self.out.send(WorkerMessage::Done {
            worker: self.worker,
            timing: self.timing,
            cpu,
            // A share of one core: CPU time since this recorder was made (on this thread),
            // less what it spent polling the clock, over the time since then.
            busy: (cpu
                .saturating_sub(self.born_cpu)
                .saturating_sub(polled)
                .as_secs_f64()
                / (now.saturating_sub(self.born).max(1) as f64 / 1e9))
                .min(1.0),
            connect: std::mem::replace(&mut self.connect, Box::new(store::model::new_histogram(1))),
            gaps: self.gaps.take(),
        });
    }
}

#[cfg(test)]
mod tests {
    use tokio::sync::mpsc;

    use super::*;

    const MS: u64 = 1_000_000;

    fn intervals(rx: &mut mpsc::UnboundedReceiver<WorkerMessage>) -> Vec<IntervalStats> {
        let mut out = Vec::new();
        while let Ok(m) = rx.try_recv() {
            if let WorkerMessage::Interval { stats, .. } = m {
                out.push(*stats);
            }
        }
        out
    }

    #[test]
    fn events_land_in_the_interval_they_happened_in() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let start = 1_000 * MS;
        let mut r = Recorder::new(0, start, 1_000 * MS, 30_000 * MS, tx, Default::default());
        r.requested(start);
        r.sent(start + 2 * MS, start, 10);
        // Completes 2.5 s later: intervals 0 and 1 are closed on the way.
        let done = Exchange {
            sent: start + 2 * MS,
            first_byte: Some(start + 2_400 * MS),
            completed: start + 2_500 * MS,
            status: Some(201),
            bytes_in: 27,
            error: None,
        };
        r.finished(start, &done);
        r.finish(start + 2_600 * MS, Duration::ZERO, Duration::ZERO);
        let iv = intervals(&mut rx);
        assert_eq!(
            iv.iter().map(|s| s.index).collect::<Vec<_>>(),
            vec![0, 1, 2]
        );
        assert_eq!((iv[0].requests, iv[0].sent, iv[0].responses), (1, 1, 0));
        assert_eq!(iv[0].in_flight, 1);
        assert_eq!((iv[2].responses, iv[2].ok, iv[2].bytes_in), (1, 1, 27));
        let corrected = iv[2].corrected.value_at_quantile(1.0);
        let service = iv[2].service.value_at_quantile(1.0);
        assert!((corrected as f64 - 2.5e9).abs() < 2.5e6, "{corrected}");
        assert!((service as f64 - 2.498e9).abs() < 2.5e6, "{service}");
        // The peak of each interval: the request was in flight in all three.
        assert_eq!(
            iv.iter().map(|s| s.in_flight).collect::<Vec<_>>(),
            [1, 1, 1]
        );
    }

    #[test]
    fn a_send_past_its_interval_is_counted_as_late() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut r = Recorder::new(0, 0, 1_000 * MS, 30_000 * MS, tx, Default::default());
        r.requested(999 * MS);
        r.sent(1_001 * MS, 999 * MS, 0);
        r.finish(1_002 * MS, Duration::ZERO, Duration::ZERO);
        let iv = intervals(&mut rx);
        assert_eq!(iv[1].sent_late_beyond_interval, 1);
        assert!((iv[1].lateness.max() as f64 - 2e6).abs() < 2e3);
    }

    #[test]
    fn errors_are_counted_by_kind_and_timeouts_recorded_at_the_timeout() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut r = Recorder::new(0, 0, 1_000 * MS, 100 * MS, tx, Default::default());
        for _ in 0..4 {
            r.requested(0);
        }
        r.failed_unsent(MS, 0, ErrorKind::Refused);
        let base = Exchange {
            sent: 0,
            first_byte: None,
            completed: 100 * MS,
            status: None,
            bytes_in: 0,
            error: Some(ErrorKind::Timeout),
        };
        r.finished(0, &base);
        r.finished(
            0,
            &Exchange {
                status: Some(503),
                error: None,
                completed: 3 * MS,
                ..base
            },
        );
        r.cancelled(200 * MS, 1);
        r.finish(200 * MS, Duration::ZERO, Duration::ZERO);
        let s = &intervals(&mut rx)[0];
        assert_eq!(s.errors.get(ErrorKind::Refused), 1);
        assert_eq!(s.errors.get(ErrorKind::Timeout), 1);
        assert_eq!(s.errors.get(ErrorKind::Http5xx), 1);
        assert_eq!(s.errors.get(ErrorKind::Cancelled), 1);
        assert_eq!((s.responses, s.ok), (1, 0));
        assert_eq!(
            s.corrected.len(),
            2,
            "the timeout and the 503 have latencies; refused has none"
        );
        assert!((s.corrected.max() as f64 - 100e6).abs() < 1e5);
        assert_eq!(s.finished(), 4);
        assert_eq!(s.in_flight, 4, "the peak, not the count at the end");
    }
}
