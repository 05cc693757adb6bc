//! Several gun hosts, one experiment: shards of a run group, merged.
//!
//! Each gun host runs its part of one order (`order::Order::for_shard`; by hand, `loadgen attack
//! --run-group NAME --shard i/N --start-at TIME`): the same schedule from the same wall-clock
//! time zero, shard `i` sending requests `i, i+N, i+2N…`.
//! Each writes its own run. Reading the group adds the shards' intervals index by index:
//! counters add and HdrHistograms add exactly, so the merged percentiles are those of all the
//! requests together. Probe data is kept once per probe (every shard may have subscribed to the
//! same probe).

use std::collections::BTreeMap;
use std::time::{Duration, UNIX_EPOCH};

use crate::db::{Store, StoreError};
use crate::model::IntervalStats;
use crate::run::{RunStatus, Shard, StoredInterval, StoredProbe, StoredRun};
use crate::summary::{RunFacts, Summary};

/// Reads every shard of `group` and merges them into one run. Its summary's warnings are the
/// shards' notes alone: `analysis::group::load_group` words the rest.
pub async fn load_group(store: &Store, group: &str) -> Result<StoredRun, StoreError> {
    let mut runs = Vec::new();
    for id in store.group_members(group).await? {
        runs.push(store.load_run(&id).await?);
    }
    Ok(merge(group, runs))
}

/// Merges shards (at least one) into one run named after the group, its summary computed
/// again from the merged intervals; the summary's warnings are the merged run's `warnings`
/// (each shard's, named) alone, until `analysis::group::merge` words the rest.
pub fn merge(group: &str, runs: Vec<StoredRun>) -> StoredRun {
    let count = runs.len() as u32;
    let mut runs = runs.into_iter();
    let Some(mut merged) = runs.next() else {
        return empty(group);
    };
    let mut shard_summaries: Vec<Option<Summary>> = vec![merged.summary.take()];
    let mut by_index: BTreeMap<u64, StoredInterval> = merged
        .intervals
        .drain(..)
        .map(|i| (i.stats.index, i))
        .collect();
    let timeout = merged.meta.config.timeout_ns;
    for (n, run) in runs.enumerate() {
        shard_summaries.push(add_shard(&mut merged, &mut by_index, n, run));
    }
    merged.intervals = by_index.into_values().collect();
    merged.meta.name = group.to_string();
    merged.meta.id = group.to_string();
    merged.meta.shard = Some(Shard {
        group: group.to_string(),
        index: 0,
        count,
    });
    let summary = merged_summary(&merged, &shard_summaries, timeout);
    merged.summary = Some(summary);
    merged
}

/// Adds shard `n + 1` to `merged`, its intervals to `by_index`; returns the shard's summary.
fn add_shard(
    merged: &mut StoredRun,
    by_index: &mut BTreeMap<u64, StoredInterval>,
    n: usize,
    run: StoredRun,
) -> Option<Summary> {
    add_intervals(by_index, run.intervals);
    add_probes(&mut merged.probes, run.probes);
    // The group's labels are those all its shards share (not the first gun's name).
    merged
        .meta
        .labels
        .retain(|k, v| run.meta.labels.get(k) == Some(v));
    merged.status = worst(merged.status, run.status);
    merged.stop_reason = merged.stop_reason.take().or(run.stop_reason);
    merged.ended_at_ns = merged.ended_at_ns.max(run.ended_at_ns);
    merged.meta.config.threads += run.meta.config.threads;
    merged.warnings.extend(
        run.warnings
            .into_iter()
            .map(|w| format!("shard {}: {w}", n + 1)),
    );
    run.summary
}

/// Adds a shard's intervals to the group's, index by index.
fn add_intervals(by_index: &mut BTreeMap<u64, StoredInterval>, intervals: Vec<StoredInterval>) {
    for interval in intervals {
        match by_index.get_mut(&interval.stats.index) {
            Some(known) => {
                known.stats.merge(&interval.stats);
                known.length_ns = known.length_ns.max(interval.length_ns);
            }
            None => {
                by_index.insert(interval.stats.index, interval);
            }
        }
    }
}

/// Adds a shard's probes the group does not have yet (same address, same host), numbered on.
fn add_probes(probes: &mut Vec<StoredProbe>, shard: Vec<StoredProbe>) {
    for probe in shard {
        let seen = probes.iter().any(|p| {
            p.meta.address == probe.meta.address && p.meta.host.hostname == probe.meta.host.hostname
        });
        if !seen {
            let mut probe = probe;
            probe.meta.index = probes.len() as u32;
            probes.push(probe);
        }
    }
}

/// The merged run's summary, from its merged intervals and its shards' summaries.
fn merged_summary(
    merged: &StoredRun,
    shard_summaries: &[Option<Summary>],
    timeout: u64,
) -> Summary {
    let mut totals = IntervalStats::new(0, timeout);
    for i in &merged.intervals {
        totals.accumulate(&i.stats);
    }
    let secs = |f: fn(&Summary) -> f64| shard_summaries.iter().flatten().map(f).fold(0.0, f64::max);
    Summary::new(&RunFacts {
        config: &merged.meta.config,
        started: UNIX_EPOCH + Duration::from_nanos(merged.meta.started_at_ns.max(0) as u64),
        interval: Duration::from_nanos(merged.meta.interval_ns),
        totals: &totals,
        attack: stored_secs(secs(|s| s.duration.attack_s)),
        wait: stored_secs(secs(|s| s.duration.wait_s)),
        cpu: stored_secs(
            shard_summaries
                .iter()
                .flatten()
                .map(|s| s.generator.cpu_s)
                .sum(),
        ),
        peak_rss_bytes: shard_summaries
            .iter()
            .flatten()
            .filter_map(|s| s.generator.peak_rss_bytes)
            .max(),
        stopped: merged.stop_reason.clone(),
        notes: merged.warnings.clone(),
        generator: Default::default(),
    })
}

/// Seconds read from a store, as a duration: a store shared with others may hold anything, and
/// a negative, NaN or endless figure must not panic a reader (`Duration::from_secs_f64` does).
pub fn stored_secs(secs: f64) -> Duration {
    if secs.is_finite() && secs > 0.0 {
        Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX)
    } else if secs == f64::INFINITY {
        Duration::MAX
    } else {
        Duration::ZERO
    }
}

fn worst(a: RunStatus, b: RunStatus) -> RunStatus {
    use RunStatus::*;
    match (a, b) {
        (Failed, _) | (_, Failed) => Failed,
        (Incomplete, _) | (_, Incomplete) => Incomplete,
        (Running, _) | (_, Running) => Running,
        _ => Complete,
    }
}

/// A run named `group` with nothing in it yet (the tests build theirs on it too).
pub fn empty(group: &str) -> StoredRun {
    StoredRun {
        meta: crate::run::RunMeta {
            id: group.to_string(),
            name: group.to_string(),
            experiment: None,
            labels: Default::default(),
            shard: None,
            tool_version: String::new(),
            started_at_ns: 0,
            interval_ns: 1_000_000_000,
            config: Default::default(),
            gun_host: Default::default(),
        },
        status: RunStatus::Running,
        stop_reason: None,
        ended_at_ns: None,
        summary: None,
        warnings: Vec::new(),
        intervals: Vec::new(),
        probes: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_from_a_store_never_panic_a_reader() {
        assert_eq!(stored_secs(1.5), Duration::from_millis(1500));
        assert_eq!(stored_secs(-3.0), Duration::ZERO);
        assert_eq!(stored_secs(f64::NAN), Duration::ZERO);
        assert_eq!(stored_secs(f64::INFINITY), Duration::MAX);
        assert_eq!(stored_secs(1e300), Duration::MAX);
    }
}
