//! An experiment's history from the store: its sittings, and each series' point in each.

use std::collections::{BTreeMap, BTreeSet};

use store::run::{RunFilter, RunListing, RunStatus, StoredRun};
use store::vocabulary::{label, Phase};
use store::{Store, StoreError};

use super::{host, Config, History, Key, Point, Raw, Sitting};
use crate::ab::Measure;
use crate::capacity::{self, Search, SEARCH_RATE};

/// The measures of a fixed-rate cell a history follows (PSS reads like RSS alone on a host).
pub const FIXED: [Measure; 4] = [Measure::Cpu, Measure::Rss, Measure::P50, Measure::P99];

/// Which sitting a run or search with these labels belongs to: its runner's sitting, else the
/// revision it was labelled with.
fn sitting_of(labels: &BTreeMap<String, String>) -> Option<&String> {
    labels
        .get(label::SITTING)
        .or_else(|| labels.get(label::REVISION))
}

/// The setting of a cell from its labels: every label that is neither bookkeeping nor the
/// target, the cell, or a search's own (its id, its step, the id of the comparison that
/// interleaved it, all new in every sitting; a search's `rate=search` said by its measure).
fn setting_of(labels: &BTreeMap<String, String>) -> String {
    labels
        .iter()
        .filter(|(k, v)| {
            !label::is_bookkeeping(k)
                && ![
                    label::TARGET,
                    label::CELL,
                    capacity::label::SEARCH,
                    capacity::label::STEP,
                    capacity::label::COMPARE,
                ]
                .contains(&k.as_str())
                && (k.as_str() != "rate" || v.as_str() != SEARCH_RATE)
        })
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// What one sitting gave one series, before it is one point.
#[derive(Default)]
struct Gathered {
    logs: Vec<f64>,
    /// The variance of each figure's logarithm, where it has one.
    variances: Vec<Option<f64>>,
    revision: Option<String>,
}

/// The sittings as found, and every series' figures in each.
#[derive(Default)]
struct Found {
    /// Sitting id → (earliest start, revisions).
    sittings: BTreeMap<String, (i64, BTreeSet<String>)>,
    figures: BTreeMap<Key, BTreeMap<String, Gathered>>,
    /// Sitting id → what its steps and runs read of the host.
    hosts: BTreeMap<String, host::Gather>,
    unplaced: usize,
}

impl Found {
    fn place(&mut self, labels: &BTreeMap<String, String>, started_at_ns: i64) -> Option<String> {
        let Some(id) = sitting_of(labels) else {
            self.unplaced += 1;
            return None;
        };
        let entry = self
            .sittings
            .entry(id.clone())
            .or_insert((started_at_ns, BTreeSet::new()));
        entry.0 = entry.0.min(started_at_ns);
        if let Some(r) = labels.get(label::REVISION) {
            entry.1.insert(r.clone());
        }
        Some(id.clone())
    }

    fn add(
        &mut self,
        key: Key,
        sitting: &str,
        value: f64,
        variance: Option<f64>,
        revision: Option<&String>,
    ) {
        if !(value.is_finite() && value > 0.0) {
            return;
        }
        let g = self
            .figures
            .entry(key)
            .or_default()
            .entry(sitting.to_string())
            .or_default();
        g.logs.push(value.ln());
        g.variances.push(variance);
        if g.revision.is_none() {
            g.revision = revision.cloned();
        }
    }
}

/// The series a history judges: its `measures` (all where empty), each target's divided by the
/// reference of `references` (targets of the experiment) that tracks it best.
#[derive(Debug, Clone, Copy, Default)]
pub struct Selection<'a> {
    pub references: &'a [String],
    pub measures: &'a [Measure],
}

/// The history of `experiment` as kept in `store`, its `selection` judged against `config`.
pub async fn history(
    store: &Store,
    experiment: &str,
    config: Config,
    selection: Selection<'_>,
) -> Result<History, StoreError> {
    let mut found = Found::default();
    gather_runs(store, experiment, &mut found).await?;
    gather_searches(store, experiment, &mut found).await?;
    Ok(judged(experiment, found, config, selection))
}

/// Places the experiment's measured runs in their sittings, with their fixed-rate figures.
async fn gather_runs(store: &Store, experiment: &str, found: &mut Found) -> Result<(), StoreError> {
    let runs = store
        .list_runs(&RunFilter {
            experiment: Some(experiment.to_string()),
            ..Default::default()
        })
        .await?;
    for listing in runs {
        // A search's steps are its figure's, not figures of their own; a warm-up is not one.
        let phase = Phase::of(&listing.labels);
        if listing.status != RunStatus::Complete
            || listing.labels.contains_key(capacity::label::SEARCH)
            || phase.is_some_and(|p| p != Phase::Measure)
        {
            continue;
        }
        let Some(sitting) = found.place(&listing.labels, listing.started_at_ns) else {
            continue;
        };
        let run = store.load_run(&listing.id).await?;
        found.hosts.entry(sitting.clone()).or_default().run(&run);
        found.add_fixed(&listing, &sitting, &run);
    }
    Ok(())
}

/// Places the experiment's capacity searches in their sittings, with the capacity each found.
async fn gather_searches(
    store: &Store,
    experiment: &str,
    found: &mut Found,
) -> Result<(), StoreError> {
    for mut search in capacity::searches(store).await? {
        if search.experiment.as_deref() != Some(experiment) {
            continue;
        }
        // Every sitting's figure by today's rule, from its steps: a search kept by an older
        // Showdown is not judged by the estimate it kept, so that a change in the rule is not
        // read as a change in the server.
        search.estimate_all();
        found.add_search(&search);
    }
    Ok(())
}

impl Found {
    /// Adds a run's fixed-rate figures, each to its series, in `sitting`.
    fn add_fixed(&mut self, listing: &RunListing, sitting: &str, run: &StoredRun) {
        let target = listing
            .labels
            .get(label::TARGET)
            .cloned()
            .unwrap_or_else(|| listing.target.clone());
        let setting = setting_of(&listing.labels);
        for measure in FIXED {
            if let Some(value) = measure.of(run) {
                let key = Key {
                    target: target.clone(),
                    setting: setting.clone(),
                    measure,
                };
                self.add(
                    key,
                    sitting,
                    value,
                    None,
                    listing.labels.get(label::REVISION),
                );
            }
        }
    }

    /// Places a search in its sitting, with what its steps read of the host and its figure.
    fn add_search(&mut self, search: &Search) {
        let Some(sitting) = self.place(&search.labels, search.started_at_ns) else {
            return;
        };
        let gather = self.hosts.entry(sitting.clone()).or_default();
        for h in search.steps.iter().filter_map(|s| s.host.as_ref()) {
            gather.step(h);
        }
        // The figure searched for, with its interval where the steps bound it both ways.
        let Some(fit) = search.estimates.first() else {
            return;
        };
        let variance = match (fit.low, fit.high) {
            (Some(low), Some(high)) if low > 0.0 && high > low => {
                Some(((high.ln() - low.ln()) / (2.0 * 1.959_964)).powi(2))
            }
            _ => None,
        };
        let target = search
            .labels
            .get(label::TARGET)
            .cloned()
            .unwrap_or_else(|| search.name.clone());
        let key = Key {
            target,
            setting: setting_of(&search.labels),
            measure: Measure::Capacity,
        };
        self.add(
            key,
            &sitting,
            fit.rate,
            variance,
            search.labels.get(label::REVISION),
        );
    }
}

fn judged(experiment: &str, found: Found, config: Config, selection: Selection<'_>) -> History {
    let mut order: Vec<(i64, String, BTreeSet<String>)> = found
        .sittings
        .into_iter()
        .map(|(id, (at, revisions))| (at, id, revisions))
        .collect();
    order.sort();
    let index: BTreeMap<String, usize> = order
        .iter()
        .enumerate()
        .map(|(i, (_, id, _))| (id.clone(), i))
        .collect();
    let sittings = order
        .into_iter()
        .map(|(at, id, revisions)| Sitting {
            host: found.hosts.get(&id).and_then(host::Gather::done),
            id,
            started_at_ns: at,
            revisions: revisions.into_iter().collect(),
        })
        .collect();
    let series = found
        .figures
        .into_iter()
        .filter(|(key, _)| {
            selection.measures.is_empty() || selection.measures.contains(&key.measure)
        })
        .map(|(key, by_sitting)| {
            let mut points: Vec<Point> = by_sitting
                .into_iter()
                .filter_map(|(id, g)| {
                    let sitting = *index.get(&id)?;
                    Some(point(sitting, g))
                })
                .collect();
            points.sort_by_key(|p| p.sitting);
            Raw { key, points }
        })
        .collect();
    History::judge(
        experiment,
        sittings,
        series,
        found.unplaced,
        config,
        selection.references,
    )
}

/// One sitting's figures of a series as one point: their geometric mean, with the variance of
/// its logarithm from their own (one figure) or their spread (two or more).
fn point(sitting: usize, g: Gathered) -> Point {
    let n = g.logs.len();
    let mean = g.logs.iter().sum::<f64>() / n as f64;
    let variance = if n >= 2 {
        let s2 = g.logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        (s2 > 0.0).then_some(s2 / n as f64)
    } else {
        g.variances.first().copied().flatten()
    };
    Point {
        sitting,
        revision: g.revision,
        value: mean.exp(),
        variance,
        runs: n,
    }
}
