//! `--probe HOST:PORT`: following probes through a run and storing what they send.
//!
//! Before the attack, each probe is subscribed to with a pre-roll (`Start::Back`), and its
//! clock is compared with ours: a burst of pings, keeping the one with the shortest round trip
//! (`probe::client::ClockSync`). Then a task per probe stores every record with its time on the
//! run's timeline (`t = probe monotonic − offset − time zero`), pings every few seconds to refine
//! the offset, and, if the link breaks, reconnects and resumes after the last record it got. If
//! the probe no longer holds the records in between, the gap is stored as a gap; if the link
//! cannot be restored before the run ends, that is stored too. After the attack, the links run
//! on for the post-roll, then stop; the final offset realigns every record of the probe.

use std::time::Duration;

use probe::client::{ClientError, ClockSync, Incoming, Subscriber};
use probe::protocol::{Record, Start};
use store::run::{ClockAlignment, ProbeMeta, StoredGap, StoredRecord};
use store::writer::WriterHandle;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::clock::{self, Nanos};

/// Pings in the first burst, to align clocks before the attack.
const FIRST_PINGS: u32 = 8;
/// How often to ping during the run.
const PING_EVERY: Duration = Duration::from_secs(2);

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
    last_seq: Option<u64>,
    report: LinkReport,
}

impl Follower {
    /// The run's timeline time of a probe's monotonic instant, with the best offset so far.
    fn t_ns(&self, probe_mono: u64) -> i64 {
        let offset = self.clock.best().map_or(0, |b| b.mono_offset_ns);
        probe_mono as i64 - offset - self.zero_mono as i64
    }

    fn take(&mut self, incoming: Incoming) {
        match incoming {
            Incoming::Record { seq, record } => {
                let mono = match &record {
                    Record::Sample(s) => s.mono_ns,
                    Record::Event(e) => e.mono_ns,
                };
                let t_ns = self.t_ns(mono);
                self.writer
                    .record(self.index, StoredRecord { seq, t_ns, record });
                self.last_seq = Some(seq);
                self.report.records += 1;
            }
            Incoming::Gap { from, to } => {
                self.gap(
                    from,
                    Some(to),
                    "the probe's buffer no longer held these records",
                );
                self.last_seq = Some(to);
            }
            Incoming::Pong(sample) => self.clock.add(sample),
        }
    }

    fn gap(&mut self, from: u64, to: Option<u64>, reason: &str) {
        let t_ns = clock::now() as i64 - self.zero_mono as i64;
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
                tokio::select! {
                    _ = stopped.changed() => {
                        let from = self.last_seq.map_or(0, |s| s + 1);
                        self.gap(from, None, "the link to the probe was lost and not restored before the run ended");
                        self.report.problem = Some(format!(
                            "lost the link to the probe at {} and could not restore it before the end",
                            self.target.address
                        ));
                        break;
                    }
                    _ = tokio::time::sleep(backoff) => {}
                }
                let start = match self.last_seq {
                    Some(seq) => Start::After { seq },
                    None => Start::Oldest,
                };
                match Subscriber::connect_with(
                    self.target.address.as_str(),
                    self.target.token.as_deref(),
                    self.target.tls.as_ref(),
                    start,
                    "showdown-loadgen",
                )
                .await
                {
                    Ok(s) => {
                        self.report.reconnections += 1;
                        backoff = Duration::from_millis(100);
                        sub = Some(s);
                    }
                    Err(_) => backoff = (backoff * 2).min(Duration::from_secs(2)),
                }
                continue;
            };
            tokio::select! {
                _ = stopped.changed() => break,
                _ = ping.tick() => {
                    if current.ping().await.is_err() {
                        sub = None;
                    }
                }
                incoming = current.next() => match incoming {
                    Ok(Some(incoming)) => self.take(incoming),
                    Ok(None) | Err(_) => sub = None,
                },
            }
        }
        self.meta.clock = alignment(&self.clock);
        self.writer.probe(self.meta.clone());
        self.report.meta = self.meta;
        self.report
    }
}
