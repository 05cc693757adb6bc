//! Comparisons: which runs go side by side, and the table that sets them against each other.
//!
//! A comparison is chosen on the command line (`--compare SPEC`) or made for every experiment
//! that has more than one run. SPEC is a comma-separated list of picks:
//!
//! - a run id (or its unique prefix) or a run name: that run;
//! - `KEY=VALUE`: the runs carrying that label (several such pairs must all match);
//! - `experiment=NAME`: the runs of that experiment;
//! - `group=NAME`: a run group's shards, merged into one run.
//!
//! Runs picked by id or by group are added to those the labels match. The runs are ordered by
//! start time; the first is the baseline every ratio is against.

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::Arc;

use store::run::RunFilter;
use store::{Store, StoreError};

use crate::figures::{self, RunFigures};
use crate::tables::{Better, Cell, Column, Table, Unit};

/// One pick of a comparison's spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pick {
    Run(String),
    Group(String),
    Experiment(String),
    Label(String, String),
}

/// A comparison as asked for on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// As typed: the comparison's title.
    pub spec: String,
    pub picks: Vec<Pick>,
}

/// Why a `--compare` spec does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectionError {
    /// The pick as given.
    #[error("{0:?} has no label name before '=': write KEY=VALUE")]
    NoLabelName(String),
    #[error("an empty comparison: give run ids, names or KEY=VALUE labels, comma-separated")]
    Empty,
}

impl FromStr for Selection {
    type Err = SelectionError;

    fn from_str(spec: &str) -> Result<Self, SelectionError> {
        let mut picks = Vec::new();
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            picks.push(match part.split_once('=') {
                Some(("group", name)) if !name.is_empty() => Pick::Group(name.to_string()),
                Some(("experiment", name)) if !name.is_empty() => {
                    Pick::Experiment(name.to_string())
                }
                Some((key, value)) if !key.is_empty() => {
                    Pick::Label(key.to_string(), value.to_string())
                }
                Some(_) => return Err(SelectionError::NoLabelName(part.to_string())),
                None => Pick::Run(part.to_string()),
            });
        }
        if picks.is_empty() {
            return Err(SelectionError::Empty);
        }
        Ok(Selection {
            spec: spec.to_string(),
            picks,
        })
    }
}

/// The figures of the runs a selection picks, in start order. Runs already in `cache` are
/// not read again; those read are added to it.
pub async fn load(
    store: &Store,
    selection: &Selection,
    cache: &mut HashMap<String, Arc<RunFigures>>,
) -> Result<Vec<Arc<RunFigures>>, StoreError> {
    let mut filter = RunFilter::default();
    let mut by_label = false;
    let mut ids: Vec<String> = Vec::new();
    let mut runs: Vec<Arc<RunFigures>> = Vec::new();
    for pick in &selection.picks {
        match pick {
            Pick::Run(id) => ids.push(store.resolve(id).await?),
            Pick::Group(name) => {
                let group = analysis::group::load_group(store, name).await?;
                let merged = Arc::new(figures::of(&group));
                cache.insert(merged.id.clone(), merged.clone());
                runs.push(merged);
            }
            Pick::Experiment(name) => {
                filter.experiment = Some(name.clone());
                by_label = true;
            }
            Pick::Label(key, value) => {
                filter.labels.insert(key.clone(), value.clone());
                by_label = true;
            }
        }
    }
    if by_label {
        ids.extend(store.list_runs(&filter).await?.into_iter().map(|l| l.id));
    }
    for id in ids {
        if runs.iter().any(|r| r.id == id) {
            continue;
        }
        let run = match cache.get(&id) {
            Some(run) => run.clone(),
            None => {
                let run = Arc::new(figures::load(store, &id).await?);
                cache.insert(id, run.clone());
                run
            }
        };
        runs.push(run);
    }
    runs.sort_by_key(|r| r.started_at_ns);
    Ok(runs)
}

/// Runs side by side.
#[derive(Debug, Clone)]
pub struct Comparison {
    pub title: String,
    pub runs: Vec<Arc<RunFigures>>,
}

impl Comparison {
    /// What each run is called in legends and columns: its name; where two runs share one,
    /// with the labels that tell them apart (`rate=2000`), or else the end of its id.
    pub fn run_names(&self) -> Vec<String> {
        let shared_by_all =
            |k: &String, v: &String| self.runs.iter().all(|r| r.labels.get(k) == Some(v));
        let with_labels: Vec<String> = self
            .runs
            .iter()
            .map(|r| {
                let differing: Vec<String> = r
                    .labels
                    .iter()
                    .filter(|(k, v)| !shared_by_all(k, v))
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect();
                if differing.is_empty() || !has_twin(&self.runs, &r.name) {
                    r.name.clone()
                } else {
                    format!("{} ({})", r.name, differing.join(" "))
                }
            })
            .collect();
        with_labels
            .iter()
            .zip(&self.runs)
            .map(|(name, r)| {
                if with_labels.iter().filter(|n| *n == name).count() > 1 {
                    let tail = &r.id[r.id.len().saturating_sub(6)..];
                    format!("{name} ({tail})")
                } else {
                    name.clone()
                }
            })
            .collect()
    }
}

fn has_twin(runs: &[Arc<RunFigures>], name: &str) -> bool {
    runs.iter().filter(|r| r.name == name).count() > 1
}

/// One row of the comparison table.
struct Metric {
    key: &'static str,
    title: &'static str,
    unit: Unit,
    better: Better,
    value: fn(&RunFigures) -> Option<f64>,
}

const METRICS: &[Metric] = &[
    Metric {
        key: "requests",
        title: "requests",
        unit: Unit::Count,
        better: Better::Neither,
        value: |r| Some(r.summary.requests.total as f64),
    },
    Metric {
        key: "rate",
        title: "rate",
        unit: Unit::PerSecond,
        better: Better::Neither,
        value: |r| Some(r.summary.requests.rate),
    },
    Metric {
        key: "throughput",
        title: "throughput",
        unit: Unit::PerSecond,
        better: Better::Higher,
        value: |r| Some(r.summary.requests.throughput),
    },
    Metric {
        key: "success_ratio",
        title: "success",
        unit: Unit::Ratio,
        better: Better::Higher,
        value: |r| Some(r.summary.requests.success_ratio),
    },
    Metric {
        key: "errors",
        title: "errors",
        unit: Unit::Count,
        better: Better::Lower,
        value: |r| Some(r.summary.errors.values().sum::<u64>() as f64),
    },
    Metric {
        key: "p50_ns",
        title: "latency p50",
        unit: Unit::Nanos,
        better: Better::Lower,
        value: |r| nonzero(r.summary.latency.corrected.p50_ns),
    },
    Metric {
        key: "p90_ns",
        title: "latency p90",
        unit: Unit::Nanos,
        better: Better::Lower,
        value: |r| nonzero(r.summary.latency.corrected.p90_ns),
    },
    Metric {
        key: "p99_ns",
        title: "latency p99",
        unit: Unit::Nanos,
        better: Better::Lower,
        value: |r| nonzero(r.summary.latency.corrected.p99_ns),
    },
    Metric {
        key: "p999_ns",
        title: "latency p99.9",
        unit: Unit::Nanos,
        better: Better::Lower,
        value: |r| nonzero(r.summary.latency.corrected.p999_ns),
    },
    Metric {
        key: "max_ns",
        title: "latency max",
        unit: Unit::Nanos,
        better: Better::Lower,
        value: |r| nonzero(r.summary.latency.corrected.max_ns),
    },
    Metric {
        key: "service_p99_ns",
        title: "service time p99",
        unit: Unit::Nanos,
        better: Better::Lower,
        value: |r| nonzero(r.summary.latency.service.p99_ns),
    },
    Metric {
        key: "lateness_p99_ns",
        title: "generator lateness p99",
        unit: Unit::Nanos,
        better: Better::Neither,
        value: |r| {
            r.summary
                .open_loop
                .then_some(r.summary.generator.lateness.p99_ns as f64)
        },
    },
    Metric {
        key: "target_cpu_pct",
        title: "target CPU, mean over the attack",
        unit: Unit::Percent,
        better: Better::Lower,
        value: |r| r.target_probe().and_then(|p| p.mean_cpu_in(r.attack)),
    },
    Metric {
        key: "target_cpu_per_request_us",
        title: "target CPU per successful request",
        unit: Unit::Micros,
        better: Better::Lower,
        value: cpu_per_request_us,
    },
    Metric {
        key: "peak_rss_bytes",
        title: "target peak memory (RSS; PSS for a tree of several processes)",
        unit: Unit::Bytes,
        better: Better::Lower,
        value: |r| r.peak_rss_bytes().map(|b| b as f64),
    },
    Metric {
        key: "peak_threads",
        title: "peak threads",
        unit: Unit::Count,
        better: Better::Neither,
        value: |r| r.target_probe().and_then(|p| p.peak_threads()),
    },
    Metric {
        key: "peak_fds",
        title: "peak open FDs",
        unit: Unit::Count,
        better: Better::Neither,
        value: |r| r.target_probe().and_then(|p| p.peak_fds).map(|n| n as f64),
    },
    Metric {
        key: "peak_established",
        title: "peak established TCP",
        unit: Unit::Count,
        better: Better::Neither,
        value: |r| r.target_probe().and_then(|p| p.peak_established()),
    },
];

fn nonzero(ns: u64) -> Option<f64> {
    (ns > 0).then_some(ns as f64)
}

fn cpu_per_request_us(r: &RunFigures) -> Option<f64> {
    let seconds = r.target_probe()?.cpu_seconds_in(r.attack)?;
    let ok = r.summary.requests.ok;
    (ok > 0).then(|| seconds * 1e6 / ok as f64)
}

/// The table: a row per figure, a column per run, and after each run but the first its ratio
/// to the first.
pub fn table(c: &Comparison) -> Table {
    let names = c.run_names();
    let mut columns = vec![Column::new("metric", "figure"), Column::new("unit", "unit")];
    for (i, name) in names.iter().enumerate() {
        columns.push(Column::new(name.clone(), name.clone()));
        if i > 0 {
            columns.push(Column::new(
                format!("{name} / {}", names[0]),
                format!("vs {}", names[0]),
            ));
        }
    }
    let mut rows = Vec::new();
    for m in METRICS {
        let values: Vec<Option<f64>> = c.runs.iter().map(|r| (m.value)(r)).collect();
        if values.iter().all(Option::is_none) {
            continue;
        }
        let mut row = vec![
            Cell::Named {
                key: m.key.into(),
                title: m.title.into(),
            },
            Cell::text(m.unit.name()),
        ];
        for (i, v) in values.iter().enumerate() {
            row.push(Cell::number(*v, m.unit));
            if i > 0 {
                row.push(match (values[0], v) {
                    (Some(base), Some(v)) if base > 0.0 && v.is_finite() => Cell::Ratio {
                        factor: v / base,
                        better: m.better,
                    },
                    _ => Cell::Missing,
                });
            }
        }
        rows.push(row);
    }
    Table { columns, rows }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse() {
        let s: Selection = "0193a1b2, rate=2000,target=node".parse().unwrap();
        assert_eq!(
            s.picks,
            vec![
                Pick::Run("0193a1b2".into()),
                Pick::Label("rate".into(), "2000".into()),
                Pick::Label("target".into(), "node".into()),
            ]
        );
        let s: Selection = "experiment=node-vs-go,group=eu".parse().unwrap();
        assert_eq!(
            s.picks,
            vec![
                Pick::Experiment("node-vs-go".into()),
                Pick::Group("eu".into())
            ]
        );
        assert!(""
            .parse::<Selection>()
            .unwrap_err()
            .to_string()
            .contains("empty comparison"));
        assert!("=x"
            .parse::<Selection>()
            .unwrap_err()
            .to_string()
            .contains("KEY=VALUE"));
    }
}
