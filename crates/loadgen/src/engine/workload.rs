//! What every worker of a run shares, and the rules both engines (`eventloop` for plain
//! HTTP/1.1, `hyper` for TLS and HTTP/2) follow, written once:
//!
//! - the load's shape ([`WorkerLoad`]) and the run's constants ([`RunShared`]);
//! - each worker's share of the connections (as evenly as possible), and of the schedule:
//!   with `T` threads and `S` shards, worker `k` of shard `s` sends requests
//!   `s + S·k, s + S·k + S·T, …`, so that together they follow the schedule exactly
//!   ([`RunShared::stride`]);
//! - the batch window: a request due at `t` is released at `t` rounded up to the window
//!   ([`RunShared::release_at`]; each up to one window late, recorded as lateness);
//! - the grid intervals close on: at `start + n·interval`, a little after, for events stamped
//!   just before ([`RunShared::next_roll`]);
//! - a closed loop's next request number, unique across workers and shards ([`claim`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::engine::arrivals::{Arrivals, GapFit, Process};
use crate::engine::client::Connector;
use crate::engine::clock::{self, Nanos};
use crate::engine::recorder::{Recorder, WorkerMessage};
use crate::engine::request::RequestMix;
use crate::engine::schedule::Schedule;
use crate::engine::shutdown::Stop;

/// An interval is closed this long past its end, for events stamped just before it.
pub(crate) const ROLL_SLACK: Nanos = 200_000;

/// Poisson arrivals wake this long before a request is due and poll (reading responses) until
/// its instant: a timer wakes a thread 20–90 µs late on these VMs (p50 22 µs, p99 88 µs
/// measured), and arrivals closer together than that would otherwise leave together, burstier
/// than Poisson.
/// Evenly spaced sends do not need it: a constant delay keeps their spacing.
pub(crate) const POISSON_LEAD: Nanos = 50_000;

/// The shape of the load, shared by all workers.
#[derive(Debug)]
pub(crate) enum WorkerLoad {
    Open {
        schedule: Schedule,
        /// Stop after this many requests even if the schedule goes on.
        limit: Option<u64>,
        /// This worker's share of `--max-connections` is computed from it.
        max_connections: usize,
    },
    Closed {
        connections: usize,
        limit: Option<u64>,
        deadline: Option<Nanos>,
        /// The next request number to claim, shared by all clients of all workers.
        next: AtomicU64,
    },
}

/// What every worker of a run shares (read-only but for the closed loop's claim counter).
#[derive(Debug)]
pub(crate) struct RunShared {
    pub mix: RequestMix,
    pub connector: Connector,
    pub load: WorkerLoad,
    /// Time zero of the run: request 0's intended send time.
    pub start: Nanos,
    pub interval: Nanos,
    pub timeout: Nanos,
    pub keepalive: bool,
    pub threads: usize,
    /// This gun's shard of the run, and how many there are.
    pub shard: u64,
    pub shards: u64,
    pub grace: Duration,
    /// Release requests on a grid of this many nanoseconds instead of each at its own time
    /// (0: each at its own time). Trades precision (each request up to one window late,
    /// recorded as lateness) for fewer wake-ups.
    pub batch: Nanos,
    /// Evenly spaced or Poisson arrivals (open loop).
    pub arrivals: Process,
    /// Open loop: connections opened at the start, before requests need them, over all
    /// workers (see [`AttackPlan::ready_connections`](crate::engine::attack::AttackPlan)).
    pub ready_connections: usize,
    /// Requests in flight and connections open across all workers, for true peaks.
    pub gauges: Arc<crate::engine::recorder::Gauges>,
}

impl RunShared {
    /// Worker `index`'s recorder.
    pub(crate) fn recorder(
        &self,
        index: usize,
        tx: mpsc::UnboundedSender<WorkerMessage>,
    ) -> Recorder {
        let rec = Recorder::new(
            index,
            self.start,
            self.interval,
            self.timeout,
            tx,
            self.gauges.clone(),
        );
        match &self.load {
            WorkerLoad::Open { schedule, .. } if self.arrivals == Process::Poisson => {
                let (_, workers) = self.stride(index);
                rec.with_gaps(GapFit::new(schedule.clone(), self.start, workers))
            }
            _ => rec,
        }
    }

    /// Worker `index`'s open-loop arrivals.
    pub(crate) fn arrivals(&self, index: usize) -> Arrivals {
        Arrivals::new(self.arrivals, self.stride(index))
    }
}

/// A request the schedule has issued.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Job {
    pub seq: u64,
    pub intended: Nanos,
    /// When it was first sent, for a request sent again on a new connection because the
    /// server closed the reused one as it went out (see `Engine::resend`): counted and timed
    /// from that first send.
    pub resent_from: Option<Nanos>,
}

impl RunShared {
    /// Worker `index`'s share of the connections: of `--max-connections` (open loop, at least
    /// one), or of the closed loop's connections.
    pub(crate) fn max_connections(&self, index: usize) -> usize {
        match &self.load {
            WorkerLoad::Open {
                max_connections, ..
            } => share(*max_connections as u64, self.threads as u64, index as u64).max(1) as usize,
            WorkerLoad::Closed { connections, .. } => {
                share(*connections as u64, self.threads as u64, index as u64) as usize
            }
        }
    }

    /// Worker `index`'s share of the connections to open before requests need them (open
    /// loop only).
    pub(crate) fn ready_connections(&self, index: usize) -> usize {
        match &self.load {
            WorkerLoad::Open { .. } => share(
                self.ready_connections as u64,
                self.threads as u64,
                index as u64,
            ) as usize,
            WorkerLoad::Closed { .. } => 0,
        }
    }

    /// Worker `index`'s first request number of an open loop, and the step to its next.
    pub(crate) fn stride(&self, index: usize) -> (u64, u64) {
        (
            self.shard + self.shards * index as u64,
            self.threads as u64 * self.shards,
        )
    }

    /// When a request due at `intended` is released: then, or at the end of its batch window.
    pub(crate) fn release_at(&self, intended: Nanos) -> Nanos {
        match self.batch {
            0 => intended,
            window => intended.div_ceil(window) * window,
        }
    }

    /// How long before a request's release a worker wakes to spin to it (see [`POISSON_LEAD`]).
    pub(crate) fn lead(&self) -> Nanos {
        match self.arrivals {
            Process::Poisson => POISSON_LEAD,
            Process::Uniform => 0,
        }
    }

    /// When the interval under way at `now` is closed.
    pub(crate) fn next_roll(&self, now: Nanos) -> Nanos {
        let interval = self.interval.max(1);
        self.start + (now.saturating_sub(self.start) / interval + 1) * interval + ROLL_SLACK
    }
}

/// Part `index` of `total` split among `parts` as evenly as possible (connections among
/// threads, connections and requests among shards).
pub(crate) fn share(total: u64, parts: u64, index: u64) -> u64 {
    let parts = parts.max(1);
    total / parts + u64::from(index < total % parts)
}

/// Claims the next request of a closed loop, if the run goes on.
pub(crate) fn claim(shared: &RunShared, stop: Stop) -> Option<u64> {
    let WorkerLoad::Closed {
        limit,
        deadline,
        next,
        ..
    } = &shared.load
    else {
        return None;
    };
    if stop != Stop::Running || deadline.is_some_and(|d| clock::now() >= d) {
        return None;
    }
    let local = next.fetch_add(1, Ordering::Relaxed);
    if limit.is_some_and(|n| local >= n) {
        return None;
    }
    // Request numbers stay unique across shards.
    Some(shared.shard + shared.shards * local)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_are_shared_out_evenly() {
        assert_eq!(
            (0..3).map(|i| share(10, 3, i)).collect::<Vec<_>>(),
            vec![4, 3, 3]
        );
        assert_eq!((0..4).map(|i| share(2, 4, i)).sum::<u64>(), 2);
    }
}

/// Why a worker thread stopped working: a warning of its run, whose other workers go on.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    #[error("worker {index}: cannot start its runtime: {source}")]
    Runtime {
        index: usize,
        #[source]
        source: std::io::Error,
    },
    #[error("worker {index}: cannot pace requests: {source}")]
    Pace {
        index: usize,
        #[source]
        source: std::io::Error,
    },
    #[error("worker {index}: cannot set up its event loop: {source}")]
    EventLoopSetup {
        index: usize,
        #[source]
        source: rustix::io::Errno,
    },
    #[error("worker {index}: its event loop failed: {source}")]
    EventLoop {
        index: usize,
        #[source]
        source: rustix::io::Errno,
    },
}
