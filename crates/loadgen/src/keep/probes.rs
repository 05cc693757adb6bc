//! `--probe HOST:PORT`: following probes through a run and storing what they send.
//!
//! Before the attack, each probe is subscribed to with a pre-roll (`Start::Back`), and its
//! clock is compared with ours: a burst of pings, keeping the one with the shortest round trip
//! (`probe::client::ClockSync`). Then a task per probe stores every record with its time on the
//! run's timeline (`t = probe monotonic − offset − time zero`), pings every few seconds to refine
//! the offset, and, if the link breaks, reconnects and resumes after the last record it got. If
//! the probe no longer holds the records in between, the gap is stored as a gap; if the link
//! cannot be restored before the run ends, that is stored too. A link is dead when connecting
//! takes over `probe::client::CONNECT_TIMEOUT` or a ping goes unanswered for [`PONG_TIMEOUT`] (a frozen
//! probe, a half-open connection): it is dropped and restored like a broken one. A probe that
//! restarted meanwhile (a crash, an OOM kill under its unit's memory cap) numbers its records
//! afresh: its records are stored after the old ones, with the samples it never took between
//! them as a gap. After the attack, the links run on for the post-roll; then a last ping, whose
//! answer comes after every record sent before it, says that nothing is still on the way
//! (or, unanswered, stores what may be missing as a gap); the final offset realigns every
//! record of the probe.

use std::ops::ControlFlow;
use std::time::Duration;

use probe::client::{ClientError, ClockSync, Incoming, Subscriber};
use probe::protocol::Start;
use store::run::{ClockAlignment, ProbeMeta, StoredGap, StoredRecord};
use store::writer::WriterHandle;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::engine::clock::{self, Nanos};

/// Pings in the first burst, to align clocks before the attack.
const FIRST_PINGS: u32 = 8;
/// How often to ping during the run.
const PING_EVERY: Duration = Duration::from_secs(2);
/// A ping unanswered this long means the link or the probe is dead.
pub const PONG_TIMEOUT: Duration = Duration::from_secs(5);
/// At the end, how long the probe may take to answer the last ping.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);

/// A probe being followed.
#[derive(Debug)]
pub struct ProbeLink {
    pub index: u32,
    pub address: String,
    stop: watch::Sender<bool>,
    task: JoinHandle<LinkReport>,
}

/// What following a probe came to.
#[derive(Debug, Clone)]
pub struct LinkReport {
    pub meta: ProbeMeta,
    pub records: u64,
    pub gaps: u64,
    pub reconnections: u64,
    /// Something the user should know (a link lost for good, …).
    pub problem: Option<String>,
}

/// How to reach one probe.
#[derive(Debug, Clone)]
pub struct ProbeTarget {
    pub address: String,
    pub token: Option<String>,
    /// TLS, when the probe serves it (`--probe-fingerprint`, `--probe-ca`).
    pub tls: Option<probe::tls::ClientTls>,
}

/// A probe subscribed to and clock-aligned, not yet followed.
#[derive(Debug)]
pub struct Connected {
    index: u32,
    target: ProbeTarget,
    sub: Subscriber,
    held: Vec<Incoming>,
    pub meta: ProbeMeta,
}

impl Connected {
    /// Subscribes to the probe with `pre_roll` of history and aligns clocks.
    pub async fn connect(
        index: u32,
        target: ProbeTarget,
        pre_roll: Duration,
    ) -> Result<Self, ClientError> {
        let start = Start::Back {
            ns: clock::nanos(pre_roll),
        };
        let mut sub = Subscriber::connect_with(
            target.address.as_str(),
            target.token.as_deref(),
            target.tls.as_ref(),
            start,
            concat!("showdown-loadgen ", env!("CARGO_PKG_VERSION")),
        )
        .await?;
        // Align clocks before the first record is stored (records arriving meanwhile wait).
        let mut held = Vec::new();
        let align = async {
            for _ in 0..FIRST_PINGS {
                sub.ping().await?;
                loop {
                    match sub.next().await? {
                        Some(Incoming::Pong(_)) => break,
                        Some(other) => held.push(other),
                        None => return Err(ClientError::Closed),
                    }
                }
            }
            Ok(())
        };
        tokio::time::timeout(PONG_TIMEOUT, align)
            .await
            .unwrap_or(Err(ClientError::TimedOut {
                addr: target.address.clone(),
                secs: PONG_TIMEOUT.as_secs(),
            }))?;
        let meta = ProbeMeta {
            index,
            address: target.address.clone(),
            host: sub.host.clone(),
            clock: alignment(sub.clock()),
        };
        Ok(Connected {
            index,
            target,
            sub,
            held,
            meta,
        })
    }

    /// Follows the probe in the background, storing records through `writer` on a timeline
    /// whose time zero is `zero_mono` on our monotonic clock.
    pub fn follow(self, zero_mono: Nanos, writer: WriterHandle) -> ProbeLink {
        writer.probe(self.meta.clone());
        let (stop, stopped) = watch::channel(false);
        let follower = Follower {
            index: self.index,
            target: self.target,
            zero_mono,
            writer,
            meta: self.meta.clone(),
            clock: self.sub.clock().clone(),
            instance: self.sub.instance,
            interval_ns: self.sub.host.interval_ns,
            offset: 0,
            restarted: false,
            last_stored: None,
            awaiting_pong: None,
            last_seq: None,
            report: LinkReport {
                meta: self.meta,
                records: 0,
                gaps: 0,
                reconnections: 0,
                problem: None,
            },
        };
        let address = follower.target.address.clone();
        let task = tokio::spawn(follower.run(self.sub, self.held, stopped));
        ProbeLink {
            index: self.index,
            address,
            stop,
            task,
        }
    }
}

impl ProbeLink {
    /// Stops following and returns what happened, with the final clock alignment.
    pub async fn stop(self) -> LinkReport {
        let _ = self.stop.send(true);
        match self.task.await {
            Ok(report) => report,
            Err(e) => LinkReport {
                meta: ProbeMeta {
                    index: self.index,
                    address: self.address.clone(),
                    host: Default::default(),
                    clock: None,
                },
                records: 0,
                gaps: 0,
                reconnections: 0,
                problem: Some(format!(
                    "following the probe at {} failed: {e}",
                    self.address
                )),
            },
        }
    }
}

fn alignment(clock: &ClockSync) -> Option<ClockAlignment> {
    clock.best().map(|b| ClockAlignment {
        offset_ns: b.mono_offset_ns,
        uncertainty_ns: b.rtt_ns / 2,
        wall_offset_ns: b.wall_offset_ns,
    })
}

struct Follower {
    index: u32,
    target: ProbeTarget,
    zero_mono: Nanos,
    writer: WriterHandle,
    meta: ProbeMeta,
    clock: ClockSync,
    /// The probe's instance the current numbers belong to.
    instance: u64,
    /// The probe's sampling interval, to count the samples a restart cost.
    interval_ns: u64,
    /// Stored sequence number = the probe's + `offset`: a restarted probe numbers afresh, and
    /// its records go after the old ones.
    offset: i64,
    /// The probe restarted: the next record (or gap) sets `offset`.
    restarted: bool,
    /// The last record stored: its stored sequence number and time on the run's timeline.
    last_stored: Option<(u64, i64)>,
    /// When the oldest unanswered ping was sent.
    awaiting_pong: Option<tokio::time::Instant>,
    /// The last of the probe's own sequence numbers received, in this instance.
    last_seq: Option<u64>,
    report: LinkReport,
}

impl Follower {
    /// The run's timeline time of a probe's monotonic instant, with the best offset so far.
    fn t_ns(&self, probe_mono: u64) -> i64 {
        let offset = self.clock.best().map_or(0, |b| b.mono_offset_ns);
        probe_mono as i64 - offset - self.zero_mono as i64
    }

    /// The first record of a restarted probe, numbered `seq` and taken at `t_ns`: numbers it
    /// after the old ones, leaving room for the samples never taken between, stored as a gap.
    fn after_restart(&mut self, seq: u64, t_ns: Option<i64>) {
        self.restarted = false;
        let next = self.last_stored.map_or(0, |(s, _)| s + 1);
        let last_t = self.last_stored.map(|(_, t)| t);
        let lost = match (t_ns, last_t) {
            (Some(t), Some(last)) if self.interval_ns > 0 && t > last => {
                (((t - last) as f64 / self.interval_ns as f64).round() as u64).saturating_sub(1)
            }
            _ => 0,
        }
        .max(1);
        self.offset = (next + lost) as i64 - seq as i64;
        // Halfway through the time the probe was down: the records either side are moved onto
        // the final clock offset when the run ends (by µs or ms), and the gap must stay between
        // them, or a rate would be taken across the restart.
        let t = match (last_t, t_ns) {
            (Some(last), Some(first)) if first > last => last + (first - last) / 2,
            (Some(last), _) => last + 1,
            (None, _) => clock::now() as i64 - self.zero_mono as i64,
        };
        self.writer.gap(
            self.index,
            StoredGap {
                from_seq: next,
                to_seq: Some(next + lost - 1),
                t_ns: t,
                reason: "the probe restarted (a crash or a kill): the samples it would have taken meanwhile were never taken".into(),
            },
        );
        self.report.gaps += 1;
        self.report.problem.get_or_insert_with(|| {
            format!(
                "the probe at {} restarted during the run: about {lost} of its samples were never taken (a gap on its charts)",
                self.target.address
            )
        });
    }

    fn stored(&self, seq: u64) -> u64 {
        (seq as i64 + self.offset).max(0) as u64
    }

    fn take(&mut self, incoming: Incoming) {
        match incoming {
            Incoming::Record { seq, record } => {
                let t_ns = self.t_ns(record.mono_ns());
                if self.restarted {
                    self.after_restart(seq, Some(t_ns));
                }
                let stored = self.stored(seq);
                self.writer.record(
                    self.index,
                    StoredRecord {
                        seq: stored,
                        t_ns,
                        record,
                    },
                );
                self.last_seq = Some(seq);
                self.last_stored = Some((stored, t_ns));
                self.report.records += 1;
            }
            Incoming::Gap { from, to } => {
                if self.restarted {
                    self.after_restart(from, None);
                }
                self.gap(
                    self.stored(from),
                    Some(self.stored(to)),
                    "the probe no longer held these records (its buffer had moved on), or one was too large to send",
                );
                self.last_seq = Some(to);
                self.last_stored = Some((self.stored(to), self.last_stored.map_or(0, |(_, t)| t)));
            }
            Incoming::Pong(sample) => {
                self.clock.add(sample);
                self.awaiting_pong = None;
            }
        }
    }

    /// A gap noticed now; one whose end is unknown starts right after the last record kept,
    /// where the charts must be cut.
    fn gap(&mut self, from: u64, to: Option<u64>, reason: &str) {
        let now = clock::now() as i64 - self.zero_mono as i64;
        let t_ns = match (to, self.last_stored) {
            (None, Some((_, last))) => last + 1,
            _ => now,
        };
        self.writer.gap(
            self.index,
            StoredGap {
                from_seq: from,
                to_seq: to,
                t_ns,
                reason: reason.to_string(),
            },
        );
        self.report.gaps += 1;
    }

    /// The next stored number, for a gap that starts after the last record.
    fn next_stored(&self) -> u64 {
        self.last_stored.map_or(0, |(s, _)| s + 1)
    }

    /// Connects again, resuming after the last record of the same instance.
    async fn reconnect(&mut self) -> Result<Subscriber, ClientError> {
        let start = match self.last_seq {
            Some(seq) => Start::After {
                seq,
                instance: Some(self.instance),
            },
            None => Start::Oldest,
        };
        let sub = Subscriber::connect_with(
            self.target.address.as_str(),
            self.target.token.as_deref(),
            self.target.tls.as_ref(),
            start,
            "showdown-loadgen",
        )
        .await?;
        if sub.instance != self.instance {
            // A new run of the probe: its numbers start afresh, and it sent its oldest.
            self.instance = sub.instance;
            self.interval_ns = sub.host.interval_ns;
            self.restarted = true;
            self.last_seq = None;
        }
        Ok(sub)
    }

    /// At the end: a last ping, answered after every record the probe sent before it.
    async fn drain(&mut self, sub: &mut Subscriber) -> Result<(), ClientError> {
        sub.ping().await?;
        loop {
            match sub.next().await? {
                Some(Incoming::Pong(sample)) => {
                    self.take(Incoming::Pong(sample));
                    return Ok(());
                }
                Some(other) => self.take(other),
                None => return Err(ClientError::Closed),
            }
        }
    }

    async fn run(
        mut self,
        sub: Subscriber,
        held: Vec<Incoming>,
        mut stopped: watch::Receiver<bool>,
    ) -> LinkReport {
        for incoming in held {
            self.take(incoming);
        }
        let mut sub = Some(sub);
        let mut ping = tokio::time::interval(PING_EVERY);
        ping.tick().await;
        let mut backoff = Duration::from_millis(100);
        loop {
            let Some(current) = sub.as_mut() else {
                // The link is down: reconnect, resuming after the last record.
                match self.restore(&mut stopped, &mut backoff).await {
                    ControlFlow::Break(()) => break,
                    ControlFlow::Continue(restored) => sub = restored,
                }
                continue;
            };
            match self.listen(current, &mut stopped, &mut ping).await {
                Turn::Up => {}
                Turn::Lost => sub = None,
                Turn::Ended => break,
            }
        }
        self.meta.clock = alignment(&self.clock);
        self.writer.probe(self.meta.clone());
        self.report.meta = self.meta;
        self.report
    }

    /// A link that is down: connects again after `backoff`, or stores it as lost if the run ends.
    async fn restore(
        &mut self,
        stopped: &mut watch::Receiver<bool>,
        backoff: &mut Duration,
    ) -> ControlFlow<(), Option<Subscriber>> {
        tokio::select! {
            _ = stopped.changed() => {
                let from = self.next_stored();
                self.gap(from, None, "the link to the probe was lost and not restored before the run ended");
                self.report.problem = Some(format!(
                    "lost the link to the probe at {} and could not restore it before the end",
                    self.target.address
                ));
                return ControlFlow::Break(());
            }
            _ = tokio::time::sleep(*backoff) => {}
        }
        match self.reconnect().await {
            Ok(s) => {
                self.report.reconnections += 1;
                self.awaiting_pong = None;
                *backoff = Duration::from_millis(100);
                ControlFlow::Continue(Some(s))
            }
            Err(_) => {
                *backoff = (*backoff * 2).min(Duration::from_secs(2));
                ControlFlow::Continue(None)
            }
        }
    }

    /// One turn of a live link: a record taken, a ping sent, the link found dead, or the end.
    async fn listen(
        &mut self,
        current: &mut Subscriber,
        stopped: &mut watch::Receiver<bool>,
        ping: &mut tokio::time::Interval,
    ) -> Turn {
        let pong_due = self.awaiting_pong.map(|sent| sent + PONG_TIMEOUT);
        tokio::select! {
            _ = stopped.changed() => {
                let drained = tokio::time::timeout(DRAIN_TIMEOUT, self.drain(current)).await;
                if !matches!(drained, Ok(Ok(()))) {
                    let from = self.next_stored();
                    self.gap(from, None, "the probe did not answer at the end of the run: what it took after this may be missing");
                }
                Turn::Ended
            }
            _ = ping.tick() => {
                self.awaiting_pong.get_or_insert_with(tokio::time::Instant::now);
                match tokio::time::timeout(PONG_TIMEOUT, current.ping()).await {
                    Ok(Ok(())) => Turn::Up,
                    _ => Turn::Lost,
                }
            }
            _ = tokio::time::sleep_until(pong_due.unwrap_or_else(tokio::time::Instant::now)), if pong_due.is_some() => {
                // A frozen probe or a half-open link: drop it and connect again.
                self.awaiting_pong = None;
                Turn::Lost
            }
            incoming = current.next() => match incoming {
                Ok(Some(incoming)) => {
                    self.take(incoming);
                    Turn::Up
                }
                Ok(None) | Err(_) => Turn::Lost,
            },
        }
    }
}

/// What one turn of a live link came to.
enum Turn {
    /// The link is up: go on.
    Up,
    /// The link broke or is dead: drop it and connect again.
    Lost,
    /// The run ended.
    Ended,
}
