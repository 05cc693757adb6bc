//! What identifies a run and how it was set up, and what was read back.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use crate::config::RunConfig;
use crate::model::IntervalStats;
use crate::summary::Summary;

/// Facts about a host that matter to a benchmark.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostFacts {
    pub hostname: String,
    pub kernel: String,
    pub cpus: u64,
    pub mem_total_bytes: u64,
    pub fd_limit_soft: Option<u64>,
    pub fd_limit_hard: Option<u64>,
}

impl HostFacts {
    /// This host's facts, from /proc and the process's own limits.
    pub fn current() -> HostFacts {
        let read = |path: &str| {
            std::fs::read_to_string(path)
                .map(|s| s.trim().to_string())
                .unwrap_or_default()
        };
        let mem_total_bytes = read("/proc/meminfo")
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024);
        let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile);
        HostFacts {
            hostname: read("/proc/sys/kernel/hostname"),
            kernel: read("/proc/sys/kernel/osrelease"),
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get() as u64),
            mem_total_bytes,
            fd_limit_soft: limit.current,
            fd_limit_hard: limit.maximum,
        }
    }
}

/// One of several gun hosts running one experiment together.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// The run group: the shards' common name.
    pub group: String,
    pub index: u32,
    pub count: u32,
}

/// A run's identity and setup, written when it starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunMeta {
    pub id: String,
    pub name: String,
    pub experiment: Option<String>,
    pub labels: BTreeMap<String, String>,
    pub shard: Option<Shard>,
    pub tool_version: String,
    /// Wall-clock time of time zero (request 0's intended send time), Unix nanoseconds.
    pub started_at_ns: i64,
    pub interval_ns: u64,
    pub config: RunConfig,
    pub gun_host: HostFacts,
}

impl RunMeta {
    /// A new run id: a UUID v7, so that ids sort by creation time.
    pub fn new_id() -> String {
        uuid::Uuid::now_v7().to_string()
    }
}

/// The first 18 characters of a run id (`01a1fbf3-93ea-71a6`), enough to name it in `runs show`;
/// cut at a character, whatever a foreign store holds.
pub fn short_id(id: &str) -> &str {
    id.char_indices().nth(18).map_or(id, |(at, _)| &id[..at])
}

/// Where a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Started and not finished: still going, or killed before it could say.
    Running,
    /// Ran to its end.
    Complete,
    /// Stopped early (Ctrl-C, --max-lateness, a failure); everything recorded until then is kept.
    Incomplete,
    /// An experiment's cell that failed (its target would not start, failed its verification,
    /// or exited mid-run): the reason is the stop reason; whatever was recorded is kept.
    Failed,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Complete => "complete",
            RunStatus::Incomplete => "incomplete",
            RunStatus::Failed => "failed",
        }
    }

    pub fn parse(text: &str) -> Self {
        match text {
            "complete" => RunStatus::Complete,
            "incomplete" => RunStatus::Incomplete,
            "failed" => RunStatus::Failed,
            _ => RunStatus::Running,
        }
    }
}

/// The alignment of a probe's clock with the gun's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClockAlignment {
    /// Probe monotonic clock minus the gun's, ns.
    pub offset_ns: i64,
    /// How far off `offset_ns` may be: half the shortest ping round trip, ns.
    pub uncertainty_ns: u64,
    /// Probe wall clock minus the gun's, ns.
    pub wall_offset_ns: i64,
}

/// A probe a run subscribed to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeMeta {
    pub index: u32,
    pub address: String,
    pub host: probe::sample::HostInfo,
    pub clock: Option<ClockAlignment>,
}

/// One interval as stored.
#[derive(Debug, Clone)]
pub struct StoredInterval {
    /// Offset of the interval's start from time zero, ns.
    pub start_ns: i64,
    pub length_ns: i64,
    pub stats: IntervalStats,
}

/// A probe record as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredRecord {
    pub seq: u64,
    /// On the run's timeline: ns from time zero on the gun's clock.
    pub t_ns: i64,
    pub record: probe::protocol::Record,
}

/// Records that should be there and are not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredGap {
    pub from_seq: u64,
    /// Inclusive; `None` when the end is unknown (the link never came back).
    pub to_seq: Option<u64>,
    pub t_ns: i64,
    pub reason: String,
}

/// A probe's part of a run.
#[derive(Debug, Clone)]
pub struct StoredProbe {
    pub meta: ProbeMeta,
    pub records: Vec<StoredRecord>,
    pub gaps: Vec<StoredGap>,
}

/// A run read back: everything it recorded.
#[derive(Debug, Clone)]
pub struct StoredRun {
    pub meta: RunMeta,
    pub status: RunStatus,
    pub stop_reason: Option<String>,
    pub ended_at_ns: Option<i64>,
    pub summary: Option<Summary>,
    pub warnings: Vec<String>,
    pub intervals: Vec<StoredInterval>,
    pub probes: Vec<StoredProbe>,
}

/// A run in a list: its identity and headline figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunListing {
    pub id: String,
    pub name: String,
    pub experiment: Option<String>,
    pub labels: BTreeMap<String, String>,
    pub shard: Option<Shard>,
    pub status: RunStatus,
    pub started_at_ns: i64,
    pub target: String,
    pub load: String,
    pub summary: Option<Summary>,
    /// The highest RSS and FD count the target's probe saw (its tree's totals); never its
    /// database's or a watched group's.
    pub peak_rss_bytes: Option<u64>,
    pub peak_fds: Option<u64>,
}

/// A label that is not `KEY=VALUE`: the text as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected KEY=VALUE, such as target=node, not {0:?}")]
pub struct LabelError(pub String);

/// A `KEY=VALUE` label from a command line.
pub fn parse_label(text: &str) -> Result<(String, String), LabelError> {
    match text.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.trim().to_string())),
        _ => Err(LabelError(text.to_string())),
    }
}

/// Which runs to list.
#[derive(Debug, Clone, Default)]
pub struct RunFilter {
    pub experiment: Option<String>,
    /// Every pair must match.
    pub labels: BTreeMap<String, String>,
    pub group: Option<String>,
}

/// How a run ended, for its row.
#[derive(Debug, Clone)]
pub struct Finish {
    pub status: RunStatus,
    pub stop_reason: Option<String>,
    /// Wall-clock end, Unix ns.
    pub ended_at_ns: i64,
    pub summary: Option<Summary>,
    pub warnings: Vec<String>,
    /// Final clock offsets (probe monotonic − gun monotonic) per probe, to realign records.
    pub clock_offsets: Vec<(u32, i64)>,
    /// The gun's monotonic time of time zero.
    pub zero_mono_ns: i64,
}

/// This host's clock, Unix nanoseconds (0 before 1970, `i64::MAX` past 2262): the one clock
/// reading runs, searches and guns' orders are stamped with.
pub fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}
