//! An attack from start to end: workers out, intervals in, one outcome.
//!
//! [`attack`] starts the worker threads (see `worker.rs`), then gathers their intervals as they
//! close. An interval is complete once every worker has reported it; it is then merged, added to
//! the run's totals, and handed to the [`IntervalSink`]s (the HDR log, the live progress, and
//! whatever later records runs) in order. It also watches the generator's own lateness against
//! `--max-lateness`. Whatever stops the run, everything recorded up to then is in the outcome.

use std::collections::BTreeMap;
use std::io;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use thiserror::Error;
use tokio::sync::mpsc;

use crate::engine::arrivals::{GapFit, Process};
use crate::engine::client::{ClientError, Connector};
use crate::engine::clock::{self, thread_cpu, Anchor, Nanos};
use crate::engine::recorder::{Timing, WorkerMessage};
use crate::engine::request::RequestMix;
use crate::engine::schedule::Schedule;
use crate::engine::shutdown::Shutdown;
use crate::engine::workload::{share, RunShared, WorkerError, WorkerLoad};
use store::model::IntervalStats;

/// Open or closed loop, and when it ends.
#[derive(Debug, Clone)]
pub enum Load {
    /// Requests at the times the schedule says, whatever the server does; `requests` can end
    /// the run before the schedule does.
    Open {
        schedule: Schedule,
        requests: Option<u64>,
    },
    /// `connections` clients, each sending its next request when the previous one completes,
    /// until `requests` have been sent or `duration` has passed.
    Closed {
        connections: usize,
        requests: Option<u64>,
        duration: Option<Duration>,
    },
}

/// Everything an attack needs, validated.
#[derive(Debug, Clone)]
pub struct AttackPlan {
    pub mix: RequestMix,
    pub load: Load,
    pub threads: usize,
    /// Open loop: the most connections the pool may hold, over all threads.
    pub max_connections: usize,
    /// Open loop: connections opened at the start, before requests need them (up to
    /// `max_connections`), so that a rate's first second does not open hundreds at once. A
    /// search's steps size it by Little's law; 0 opens them on demand only.
    pub ready_connections: usize,
    pub h2: bool,
    pub insecure: bool,
    pub keepalive: bool,
    pub timeout: Duration,
    pub interval: Duration,
    /// How long requests in flight may finish after a stop.
    pub grace: Duration,
    /// Stop the run if an interval's p99 send lateness exceeds this.
    pub max_lateness: Option<Duration>,
    /// Open loop: release requests in batches on a grid of this length (zero: each at its own
    /// intended time). Each request may be up to one window late; that lateness is recorded.
    pub batch: Duration,
    /// Open loop: evenly spaced or Poisson arrivals.
    pub arrivals: Process,
    /// This gun's share of a run split across several gun hosts: shard `index` of `count`
    /// sends requests `index, index + count, …` (open loop), or its share of connections and
    /// requests (closed loop).
    pub shard: (u32, u32),
}

impl AttackPlan {
    /// `open loop, constant 2000 req/s for 30s` or `closed loop, 100 connections, 200000 requests`.
    pub fn describe_load(&self) -> String {
        match &self.load {
            Load::Open { schedule, requests } => {
                let mut text = format!("open loop, {}", schedule.describe());
                if let Some(n) = requests {
                    text.push_str(&format!(", at most {n} requests"));
                }
                text
            }
            Load::Closed {
                connections,
                requests,
                duration,
            } => {
                let mut text = format!("closed loop, {connections} connections");
                if let Some(n) = requests {
                    text.push_str(&format!(", {n} requests"));
                }
                if let Some(d) = duration {
                    text.push_str(&format!(", for {}", humantime::format_duration(*d)));
                }
                text
            }
        }
    }

    /// The request(s) sent, for display.
    pub fn describe_target(&self) -> String {
        let entries: Vec<_> = self.mix.entries().collect();
        if let [(spec, _)] = entries.as_slice() {
            return spec.describe();
        }
        let total: u64 = entries.iter().map(|(_, w)| w).sum();
        entries
            .iter()
            .map(|(spec, w)| {
                format!(
                    "{:.1}% {}",
                    100.0 * *w as f64 / total as f64,
                    spec.describe()
                )
            })
            .collect::<Vec<_>>()
            .join(" + ")
    }

    /// An open loop's offered rate, req/s: its schedule's requests over its length (its rate
    /// where it has none), this gun's share of it.
    pub fn offered_rps(&self) -> Option<f64> {
        let Load::Open { schedule, .. } = &self.load else {
            return None;
        };
        let whole = match schedule.duration().map(|d| d.as_secs_f64()) {
            Some(d) if d > 0.0 => schedule.count_at(d) / d,
            _ => schedule.peak_rate(),
        };
        Some(whole / f64::from(self.shard.1.max(1)))
    }

    pub fn is_open_loop(&self) -> bool {
        matches!(self.load, Load::Open { .. })
    }

    /// The attack as the store and the summary describe it (the caller adds the command line
    /// and anything else it knows).
    pub fn config(&self) -> store::run::RunConfig {
        store::run::RunConfig {
            target: self.describe_target(),
            load: self.describe_load(),
            open_loop: self.is_open_loop(),
            h2: self.h2,
            threads: self.threads,
            max_connections: self.max_connections,
            batch_ns: clock::nanos(self.batch),
            arrival: self
                .is_open_loop()
                .then(|| store::vocabulary::Arrival::of(self.arrivals, self.batch)),
            timeout_ns: clock::nanos(self.timeout),
            offered_rps: self.offered_rps(),
            command_line: Vec::new(),
            details: serde_json::Value::Null,
        }
    }
}

/// Where an interval sits on the run's timeline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Span {
    /// Offset of the interval's start from time zero of the run.
    pub start: Duration,
    /// Its length (the last interval may be shorter).
    pub length: Duration,
}

/// Receives each completed interval, in order.
pub trait IntervalSink {
    /// What to call this sink in a warning, e.g. `the HDR log results/run.hlog`.
    fn name(&self) -> String;
    /// The run is about to start; `start` is the wall-clock time of its time zero.
    fn begin(&mut self, _start: SystemTime) -> io::Result<()> {
        Ok(())
    }
    /// One interval of the run, merged over all workers.
    fn interval(&mut self, span: Span, stats: &IntervalStats) -> io::Result<()>;
    /// The run is over; `totals` covers all of it.
    fn finish(&mut self, _totals: &IntervalStats) -> io::Result<()> {
        Ok(())
    }
}

/// Why an attack could not start. Once it has started, nothing stops it but its end or a stop.
#[derive(Debug, Error)]
pub enum AttackError {
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error("cannot start worker threads: {0}")]
    Threads(io::Error),
    #[error("--start-at {0}: give a time a few seconds ahead, e.g. --start-at $(date -d '+10 seconds' --rfc-3339=seconds)")]
    StartAt(String),
}

/// What a finished (or stopped) attack recorded.
#[derive(Debug)]
pub struct RunOutcome {
    /// Every interval added up.
    pub totals: IntervalStats,
    /// Time zero of the run (request 0's intended send time) on both clocks.
    pub anchor: Anchor,
    pub interval: Duration,
    /// Number of intervals recorded.
    pub intervals: u64,
    pub timing: Timing,
    /// Why the run was stopped before its end, if it was.
    pub stopped: Option<String>,
    /// CPU time of the generator's threads.
    pub cpu: Duration,
    /// Peak resident memory of the whole process, if known.
    pub peak_rss_bytes: Option<u64>,
    /// Things that went wrong on the side (a sink that failed, a worker that could not start).
    pub warnings: Vec<String>,
    /// What the generator measured of itself and its connections, to diagnose lateness.
    pub generator: store::summary::GeneratorFacts,
}

/// Starts worker `index` on a thread of its own, with the engine its target needs: the event
/// loop for plain HTTP/1.1, hyper for TLS and HTTP/2. The thread reports through `tx` and
/// returns an error only if it could not start working (no runtime, no timer).
fn spawn(
    index: usize,
    shared: Arc<RunShared>,
    tx: mpsc::UnboundedSender<WorkerMessage>,
    shutdown: Shutdown,
) -> io::Result<std::thread::JoinHandle<Result<(), WorkerError>>> {
    std::thread::Builder::new()
        .name(format!("loadgen-{index}"))
        .spawn(move || {
            if shared.connector.plain_h1() {
                crate::engine::eventloop::run(index, shared, tx, shutdown)
            } else {
                crate::engine::hyper::run_thread(index, shared, tx, shutdown)
            }
        })
}

/// The end-of-run summary of `plan`'s run: its figures, and as its warnings the run's notes
/// alone. The warnings its figures call for are worded above the engine, by whoever keeps or
/// prints the run (`analysis::warnings::fill`, with the same notes).
pub fn summarize(plan: &AttackPlan, run: &RunOutcome) -> store::summary::Summary {
    store::summary::Summary::new(&store::summary::RunFacts {
        config: &plan.config(),
        started: run.anchor.wall,
        interval: run.interval,
        totals: &run.totals,
        attack: run.attack_duration(),
        wait: run.wait_duration(),
        cpu: run.cpu,
        peak_rss_bytes: run.peak_rss_bytes,
        stopped: run.stopped.clone(),
        notes: run.warnings.clone(),
        generator: run.generator.clone(),
    })
}

impl RunOutcome {
    /// From time zero to the last request sent.
    pub fn attack_duration(&self) -> Duration {
        let last = self.timing.last_sent.unwrap_or(self.anchor.mono);
        Duration::from_nanos(last.saturating_sub(self.anchor.mono))
    }

    /// From the last request sent to the last completion.
    pub fn wait_duration(&self) -> Duration {
        match (self.timing.last_sent, self.timing.last_completed) {
            (Some(sent), Some(done)) => Duration::from_nanos(done.saturating_sub(sent)),
            _ => Duration::ZERO,
        }
    }
}

/// How long after setup the first request is due: lets every worker thread start first.
pub const START_DELAY: Duration = Duration::from_millis(50);

/// Time zero of a run (request 0's intended send time): `START_DELAY` from now, or the
/// wall-clock time `at` (so that several gun hosts start together), which must be ahead.
pub fn time_zero(at: Option<SystemTime>) -> Result<Anchor, AttackError> {
    let now = Anchor::now();
    let delay = match at {
        None => START_DELAY,
        Some(at) => match at.duration_since(now.wall) {
            Ok(ahead) if ahead <= Duration::from_secs(24 * 3600) => ahead,
            Ok(_) => return Err(AttackError::StartAt("is more than a day ahead".into())),
            Err(_) => {
                return Err(AttackError::StartAt(format!(
                    "is already past (now is {})",
                    humantime::format_rfc3339_seconds(now.wall)
                )))
            }
        },
    };
    Ok(Anchor {
        mono: now.mono + clock::nanos(delay),
        wall: now.wall + delay,
    })
}

/// Runs the attack described by `plan` from time zero `anchor` until its end or until
/// `shutdown` stops it: its workers started, their intervals gathered into `sinks` as they
/// complete, and what the generator measured of itself.
pub async fn attack(
    plan: &AttackPlan,
    anchor: Anchor,
    shutdown: &Shutdown,
    sinks: &mut [&mut dyn IntervalSink],
) -> Result<RunOutcome, AttackError> {
    let connector = Connector::new(plan.mix.origin(), plan.h2, plan.insecure).await?;
    let shared = Arc::new(run_shared(plan, anchor, connector));
    let (threads, timeout, interval) = (shared.threads, shared.timeout, shared.interval);
    let (failed_sinks, warnings) = begin_sinks(sinks, anchor.wall);
    let meter = Meter::start();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let handles = start_workers(threads, &shared, tx, &mut rx, shutdown).await?;
    let mut gather = Gather::new(threads);
    let mut run = RunState {
        totals: IntervalStats::new(0, timeout),
        intervals: 0,
        interval,
        warnings,
        failed_sinks,
        max_lateness: plan.max_lateness.map(clock::nanos),
        shutdown,
    };
    let mut workers = Workers::new(timeout);
    while let Some(message) = rx.recv().await {
        workers.take(&message);
        for stats in gather.accept(message) {
            run.complete(stats, None, sinks);
        }
    }
    let end = clock::now();
    for stats in gather.flush() {
        run.complete(stats, Some(end.saturating_sub(anchor.mono)), sinks);
    }
    join_workers(handles, &mut run.warnings);
    run.finish_sinks(sinks);
    Ok(outcome(run, workers, &meter, anchor, interval, shutdown))
}

/// Tells each sink the run starts at `start`: which sinks failed to begin, and why.
fn begin_sinks(sinks: &mut [&mut dyn IntervalSink], start: SystemTime) -> (Vec<bool>, Vec<String>) {
    let mut failed_sinks = vec![false; sinks.len()];
    let mut warnings = Vec::new();
    for (i, sink) in sinks.iter_mut().enumerate() {
        if let Err(e) = sink.begin(start) {
            failed_sinks[i] = true;
            warnings.push(format!("could not start {}: {e}", sink.name()));
        }
    }
    (failed_sinks, warnings)
}

/// Starts the worker threads; if one cannot start, aborts and joins those that did.
async fn start_workers(
    threads: usize,
    shared: &Arc<RunShared>,
    tx: mpsc::UnboundedSender<WorkerMessage>,
    rx: &mut mpsc::UnboundedReceiver<WorkerMessage>,
    shutdown: &Shutdown,
) -> Result<Vec<std::thread::JoinHandle<Result<(), WorkerError>>>, AttackError> {
    let mut handles = Vec::with_capacity(threads);
    for index in 0..threads {
        match spawn(index, shared.clone(), tx.clone(), shutdown.clone()) {
            Ok(handle) => handles.push(handle),
            Err(e) => {
                shutdown.abort("could not start all worker threads");
                drop(tx);
                while rx.recv().await.is_some() {}
                for h in handles {
                    let _ = h.join();
                }
                return Err(AttackError::Threads(e));
            }
        }
    }
    drop(tx);
    Ok(handles)
}

/// Waits for every worker thread to end, adding to `warnings` what went wrong with any.
fn join_workers(
    handles: Vec<std::thread::JoinHandle<Result<(), WorkerError>>>,
    warnings: &mut Vec<String>,
) {
    for handle in handles {
        match handle.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => warnings.push(e.to_string()),
            Err(_) => warnings.push("a worker thread panicked; its last interval is lost".into()),
        }
    }
}

/// What the run recorded, with what the workers and the meter measured of the generator.
fn outcome(
    run: RunState<'_>,
    workers: Workers,
    meter: &Meter,
    anchor: Anchor,
    interval: Nanos,
    shutdown: &Shutdown,
) -> RunOutcome {
    let (cpus_busy, own_share, steal) = meter.read();
    RunOutcome {
        totals: run.totals,
        anchor,
        interval: Duration::from_nanos(interval),
        intervals: run.intervals,
        timing: workers.timing,
        stopped: shutdown.reason(),
        cpu: workers.cpu + thread_cpu().saturating_sub(meter.cpu_before),
        peak_rss_bytes: peak_rss_bytes(),
        warnings: run.warnings,
        generator: store::summary::GeneratorFacts {
            busiest_thread: workers.busiest,
            cpus_busy,
            own_share,
            steal,
            connect: (!workers.connect.is_empty()).then_some(workers.connect),
            arrivals: workers.gaps.as_ref().and_then(GapFit::fit),
            start_late_ns: workers.timing.start_late_ns(),
        },
    }
}

/// What every worker of `plan`'s run shares: its requests, its connector, this shard's part
/// of the load, its clock and its settings.
fn run_shared(plan: &AttackPlan, anchor: Anchor, connector: Connector) -> RunShared {
    let threads = plan.threads.max(1);
    let (shard, shards) = (plan.shard.0 as u64, plan.shard.1.max(1) as u64);
    let load = match &plan.load {
        Load::Open { schedule, requests } => WorkerLoad::Open {
            schedule: schedule.clone(),
            limit: *requests,
            max_connections: plan.max_connections.max(threads),
        },
        Load::Closed {
            connections,
            requests,
            duration,
        } => WorkerLoad::Closed {
            // This shard's share of the connections and of the requests.
            connections: share(*connections as u64, shards, shard) as usize,
            limit: requests.map(|n| share(n, shards, shard)),
            deadline: duration.map(|d| anchor.mono + clock::nanos(d)),
            next: AtomicU64::new(0),
        },
    };
    RunShared {
        mix: plan.mix.clone(),
        connector,
        load,
        start: anchor.mono,
        interval: clock::nanos(plan.interval).max(1_000_000),
        timeout: clock::nanos(plan.timeout).max(1),
        keepalive: plan.keepalive,
        threads,
        grace: plan.grace,
        batch: clock::nanos(plan.batch),
        arrivals: plan.arrivals,
        ready_connections: plan.ready_connections,
        gauges: Default::default(),
        shard,
        shards,
    }
}

/// What the workers said of themselves as they finished: their send timing, CPU, busiest
/// share of a core, connect times and arrival gaps, merged.
struct Workers {
    timing: Timing,
    cpu: Duration,
    busiest: Option<f64>,
    connect: hdrhistogram::Histogram<u64>,
    gaps: Option<GapFit>,
}

impl Workers {
    fn new(timeout: Nanos) -> Workers {
        Workers {
            timing: Timing::default(),
            cpu: Duration::ZERO,
            busiest: None,
            connect: store::model::new_histogram(timeout),
            gaps: None,
        }
    }

    /// Merges a worker's last message (every other message is its intervals').
    fn take(&mut self, message: &WorkerMessage) {
        let WorkerMessage::Done {
            timing,
            cpu,
            busy,
            connect,
            gaps,
            ..
        } = message
        else {
            return;
        };
        self.timing = self.timing.merge(*timing);
        self.cpu += *cpu;
        self.busiest = Some(self.busiest.map_or(*busy, |b| b.max(*busy)));
        let _ = self.connect.add(&**connect);
        if let Some(g) = gaps {
            match &mut self.gaps {
                Some(all) => all.merge(g),
                None => self.gaps = Some((**g).clone()),
            }
        }
    }
}

/// The generator's CPUs and its own CPU time, read when its workers start and again at the
/// end: how busy those CPUs were, and what share of them was the generator's own.
struct Meter {
    cpu_before: Duration,
    cpus: probe::cpus::CpuList,
    ticks_before: Option<probe::cpus::Ticks>,
    process_before: Duration,
    wall_before: Nanos,
}

impl Meter {
    fn start() -> Meter {
        let cpus = crate::engine::cpus::allowed();
        Meter {
            cpu_before: thread_cpu(),
            ticks_before: probe::cpus::Ticks::now(),
            cpus,
            process_before: clock::process_cpu(),
            wall_before: clock::now(),
        }
    }

    /// The CPUs' busy share (and which they were), this process's threads (workers, the
    /// aggregator, the store's writer) as a share of the same CPUs' time (what of it was the
    /// generator's own doing), and the share of every CPU's time the hypervisor stole.
    fn read(&self) -> (Option<(f64, String)>, Option<f64>, Option<f64>) {
        let pair = self.ticks_before.as_ref().zip(probe::cpus::Ticks::now());
        let cpus_busy = pair
            .as_ref()
            .and_then(|(before, after)| {
                crate::engine::cpus::busy_between(before.of(&self.cpus), after.of(&self.cpus))
            })
            .map(|busy| (busy, self.cpus.to_string()));
        let steal = pair.and_then(|(before, after)| {
            let total = after.all.1.checked_sub(before.all.1).filter(|t| *t > 0)?;
            Some(after.steal.saturating_sub(before.steal) as f64 / total as f64)
        });
        let cpu = clock::process_cpu()
            .saturating_sub(self.process_before)
            .as_secs_f64();
        let wall = clock::now().saturating_sub(self.wall_before) as f64 / 1e9;
        let own_share = (wall > 0.0 && !self.cpus.is_empty())
            .then(|| (cpu / (wall * self.cpus.len() as f64)).min(1.0));
        (cpus_busy, own_share, steal)
    }
}

struct RunState<'a> {
    totals: IntervalStats,
    intervals: u64,
    interval: Nanos,
    warnings: Vec<String>,
    failed_sinks: Vec<bool>,
    max_lateness: Option<Nanos>,
    shutdown: &'a Shutdown,
}

impl RunState<'_> {
    /// Tells each sink that has not failed that the run is over.
    fn finish_sinks(&mut self, sinks: &mut [&mut dyn IntervalSink]) {
        for (i, sink) in sinks.iter_mut().enumerate() {
            if !self.failed_sinks[i] {
                if let Err(e) = sink.finish(&self.totals) {
                    self.warnings
                        .push(format!("could not finish {}: {e}", sink.name()));
                }
            }
        }
    }

    /// Takes in one complete interval. `run_end` clips the last interval's length.
    fn complete(
        &mut self,
        stats: IntervalStats,
        run_end: Option<Nanos>,
        sinks: &mut [&mut dyn IntervalSink],
    ) {
        let start = stats.index * self.interval;
        let length = match run_end {
            Some(end) => end.saturating_sub(start).clamp(1, self.interval),
            None => self.interval,
        };
        let span = Span {
            start: Duration::from_nanos(start),
            length: Duration::from_nanos(length),
        };
        self.totals.accumulate(&stats);
        self.intervals += 1;
        for (i, sink) in sinks.iter_mut().enumerate() {
            if self.failed_sinks[i] {
                continue;
            }
            if let Err(e) = sink.interval(span, &stats) {
                self.failed_sinks[i] = true;
                self.warnings.push(format!(
                    "stopped writing {} at {}s: {e}",
                    sink.name(),
                    span.start.as_secs()
                ));
            }
        }
        if let Some(max) = self.max_lateness {
            let p99 = stats.lateness.value_at_quantile(0.99);
            if stats.sent > 0 && p99 > max {
                self.shutdown.stop(&format!(
                    "the generator fell behind: p99 send lateness {} in the interval at {}s, over --max-lateness {}",
                    store::summary::format_ns(p99),
                    span.start.as_secs(),
                    store::summary::format_ns(max),
                ));
            }
        }
    }
}

/// Merges workers' intervals and releases each once all workers have reported it.
#[derive(Debug)]
struct Gather {
    /// Highest interval index each worker has reported.
    reported: Vec<Option<u64>>,
    done: Vec<bool>,
    partial: BTreeMap<u64, IntervalStats>,
}

impl Gather {
    fn new(workers: usize) -> Self {
        Gather {
            reported: vec![None; workers],
            done: vec![false; workers],
            partial: BTreeMap::new(),
        }
    }

    fn accept(&mut self, message: WorkerMessage) -> Vec<IntervalStats> {
        match message {
            WorkerMessage::Interval { worker, stats } => {
                self.reported[worker] = Some(stats.index);
                match self.partial.get_mut(&stats.index) {
                    Some(merged) => merged.merge_threads(&stats),
                    None => {
                        self.partial.insert(stats.index, *stats);
                    }
                }
            }
            WorkerMessage::Done { worker, .. } => self.done[worker] = true,
        }
        let mut ready = Vec::new();
        while let Some(entry) = self.partial.first_entry() {
            let index = *entry.key();
            let all = (0..self.done.len())
                .all(|w| self.done[w] || self.reported[w].is_some_and(|r| r >= index));
            if !all {
                break;
            }
            ready.push(entry.remove());
        }
        ready
    }

    /// Whatever is left once every worker is gone (a worker that died mid-run).
    fn flush(&mut self) -> Vec<IntervalStats> {
        std::mem::take(&mut self.partial).into_values().collect()
    }
}

/// The process's peak resident set (VmHWM in /proc/self/status), in bytes.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::recorder::Timing;

    fn interval(worker: usize, index: u64, requests: u64) -> WorkerMessage {
        let mut stats = IntervalStats::new(index, 1_000_000);
        stats.requests = requests;
        WorkerMessage::Interval {
            worker,
            stats: Box::new(stats),
        }
    }

    fn done(worker: usize) -> WorkerMessage {
        WorkerMessage::Done {
            worker,
            timing: Timing::default(),
            cpu: Duration::ZERO,
            busy: 0.0,
            connect: Box::new(store::model::new_histogram(1_000)),
            gaps: None,
        }
    }

    #[test]
    fn an_interval_is_released_once_every_worker_reported_it() {
        let mut g = Gather::new(2);
        assert!(g.accept(interval(0, 0, 1)).is_empty());
        assert!(g.accept(interval(0, 1, 2)).is_empty());
        let ready = g.accept(interval(1, 0, 10));
        assert_eq!(
            ready
                .iter()
                .map(|s| (s.index, s.requests))
                .collect::<Vec<_>>(),
            [(0, 11)]
        );
        // Worker 1 finishes: interval 1 needs nobody else.
        assert!(g.accept(interval(1, 1, 20)).len() == 1);
        assert!(g.accept(done(1)).is_empty());
        let ready = g.accept(interval(0, 2, 3));
        assert_eq!(
            ready
                .iter()
                .map(|s| (s.index, s.requests))
                .collect::<Vec<_>>(),
            [(2, 3)]
        );
        assert!(g.flush().is_empty());
    }
}
