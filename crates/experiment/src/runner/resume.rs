//! Where each cell of a plan stands, from the store: done, failed (with its reason), started
//! and not finished, or still to run. A cell is found again by the file's content, the scale,
//! its key and its repetition, so a changed file starts afresh, and within its sitting (the
//! label `sitting`), so that `--again` starts a sitting of its own.

use std::collections::BTreeMap;

use store::run::{RunFilter, RunListing, RunStatus};
use store::vocabulary::{label, Phase};
use store::Store;

use crate::file::Experiment;
use crate::plan::Plan;

/// The labels every run of the experiment carries, beside its cell's: the file, the scale,
/// and the sitting (none only for a sitting begun before sittings were labelled).
pub(super) fn plan_labels(
    experiment: &Experiment,
    plan: &Plan,
    sitting: Option<&str>,
) -> Vec<(String, String)> {
    let mut labels = vec![
        (label::FILE.into(), Plan::file_label(experiment)),
        (label::SCALE.into(), plan.scale.to_string()),
    ];
    if let Some(id) = sitting {
        labels.push((label::SITTING.into(), id.to_string()));
    }
    labels
}

/// The sitting a run of this file and scale belongs to: a new one when `again` (the runner
/// asks for one for a comparison too, whose rounds all run again each time) or when none is
/// kept; else the latest kept, so that an interrupted sitting is resumed and a finished one
/// left as it is. `None` for a sitting begun before sittings were labelled, which is resumed
/// as it was.
pub async fn sitting(
    store: &Store,
    experiment: &Experiment,
    plan: &Plan,
    again: bool,
) -> Result<Option<String>, store::StoreError> {
    let new = || Some(uuid::Uuid::now_v7().to_string());
    if again {
        return Ok(new());
    }
    let mut filter = RunFilter {
        experiment: Some(experiment.file.name.clone()),
        ..Default::default()
    };
    filter.labels.extend(plan_labels(experiment, plan, None));
    let runs = store.list_runs(&filter).await?;
    // Ids are UUID v7s: the highest began last.
    let latest = runs
        .iter()
        .filter_map(|r| r.labels.get(label::SITTING))
        .max()
        .cloned();
    Ok(match latest {
        Some(id) => Some(id),
        None if runs.is_empty() => new(),
        None => None,
    })
}

/// Where each cell stands.
#[derive(Debug, Clone, PartialEq)]
pub enum CellState {
    Pending,
    Done {
        run: String,
    },
    Failed {
        run: String,
        reason: String,
    },
    /// Started and not finished (interrupted, or killed): redone by the next `run`.
    Unfinished {
        run: String,
    },
}

/// Each cell's state, from the store.
pub async fn states(
    store: &Store,
    experiment: &Experiment,
    plan: &Plan,
    sitting: Option<&str>,
) -> Result<Vec<CellState>, store::StoreError> {
    let runs = cell_runs(store, experiment, plan, sitting).await?;
    let mut by_cell = best_by_cell(runs);
    let mut out = Vec::new();
    for cell in &plan.cells {
        let key = (cell.key(), cell.repetition.to_string());
        let mut state = by_cell.remove(&key).unwrap_or(CellState::Pending);
        if let CellState::Failed { run, reason } = &mut state {
            if let Ok(r) = store.load_run_streaming(run, |_| {}).await {
                *reason = r.stop_reason.unwrap_or_default();
            }
        }
        out.push(state);
    }
    Ok(out)
}

/// The sitting's measured runs, and each of its searches as one run of its cell.
async fn cell_runs(
    store: &Store,
    experiment: &Experiment,
    plan: &Plan,
    sitting: Option<&str>,
) -> Result<Vec<RunListing>, store::StoreError> {
    let mut filter = RunFilter {
        experiment: Some(experiment.file.name.clone()),
        ..Default::default()
    };
    for (k, v) in plan_labels(experiment, plan, sitting) {
        filter.labels.insert(k, v);
    }
    filter
        .labels
        .insert(label::PHASE.into(), Phase::Measure.as_str().into());
    let mut runs = store.list_runs(&filter).await?;
    // A search's cell stands where its search does: the steps are its runs.
    filter
        .labels
        .insert(label::PHASE.into(), Phase::Step.as_str().into());
    let steps = store.list_runs(&filter).await?;
    runs.extend(searched(store, steps).await?);
    Ok(runs)
}

/// The searches the `steps` are of, each as one run: under the search's id, with its status as
/// the search stands (a step of no search kept is left out).
async fn searched(
    store: &Store,
    steps: Vec<RunListing>,
) -> Result<Vec<RunListing>, store::StoreError> {
    use analysis::capacity::Status;
    let searches = if steps.is_empty() {
        Vec::new()
    } else {
        analysis::capacity::searches(store).await?
    };
    let mut runs = Vec::new();
    for mut run in steps {
        let Some(search) = run
            .labels
            .get(analysis::capacity::label::SEARCH)
            .and_then(|id| searches.iter().find(|s| &s.id == id))
        else {
            continue;
        };
        run.status = match search.status {
            Status::Running | Status::Interrupted => RunStatus::Incomplete,
            Status::GeneratorLimited if search.capacity.is_none() => RunStatus::Failed,
            _ => RunStatus::Complete,
        };
        run.id = search.id.clone();
        runs.push(run);
    }
    Ok(runs)
}

/// The best each cell came to in `runs` (done over failed over unfinished), by its key and
/// repetition.
fn best_by_cell(runs: Vec<RunListing>) -> BTreeMap<(String, String), CellState> {
    let mut by_cell: BTreeMap<(String, String), CellState> = BTreeMap::new();
    for run in runs {
        let (Some(cell), Some(rep)) = (
            run.labels.get(label::CELL),
            run.labels.get(label::REPETITION),
        ) else {
            continue;
        };
        let state = match run.status {
            RunStatus::Complete => CellState::Done { run: run.id },
            RunStatus::Failed => CellState::Failed {
                reason: String::new(),
                run: run.id,
            },
            _ => CellState::Unfinished { run: run.id },
        };
        let key = (cell.clone(), rep.clone());
        // The best a cell came to: done over failed over unfinished.
        let rank = |s: &CellState| match s {
            CellState::Done { .. } => 3,
            CellState::Failed { .. } => 2,
            CellState::Unfinished { .. } => 1,
            CellState::Pending => 0,
        };
        if by_cell
            .get(&key)
            .is_none_or(|old| rank(&state) >= rank(old))
        {
            by_cell.insert(key, state);
        }
    }
    by_cell
}
