//! A cell whose rate is a share of a capacity (`rate = "80%"`): its rate in requests a second,
//! from the searches of the same target and requests this experiment has kept, so that "near
//! each server's maximum" is the same point of its curve on any host.
//!
//! The capacity taken is C_p of the finished searches' steps pooled, as the experiment's page shows
//! it. A search that says only "at least" (the generator was the limit, or the highest rate
//! passed), or that found none (the SLO missed at the lowest rate), gives no capacity to take
//! a share of: the cell is failed with that reason rather than run at a rate that means
//! something else.
//!
//! In a `[compare]`, a share is one rate for every compared build: of the lowest of their
//! capacities, each its latest search's ([`resolve_compared`]).

use analysis::capacity::{Search, Status};
use store::vocabulary::label;
use store::Store;

use crate::file::{Experiment, Rate};
use crate::plan::{Cell, CellKind, Plan};

/// Why a share of a capacity has no rate: the cell is kept failed with it.
#[derive(Debug, thiserror::Error)]
pub(super) enum NoRate {
    #[error("not a share of a capacity")]
    NotAShare,
    /// `searches`: the keys of the search cells to run first.
    #[error("no search of {target}'s capacity on these requests has finished: run its cells first ({searches}), then this one again with --retry-failed")]
    Unfinished { target: String, searches: String },
    #[error("{target}'s capacity on these requests is beyond what was measured ({why}): {:.0} % of it cannot be set", .share * 100.0)]
    Beyond {
        target: String,
        why: String,
        share: f64,
    },
    #[error("{target} missed the SLO already at the lowest rate tried ({min_rate:.0} req/s): no capacity to take {:.0} % of", .share * 100.0)]
    BelowMinimum {
        target: String,
        min_rate: f64,
        share: f64,
    },
    #[error("no search of {0}'s capacity on these requests found a capacity")]
    NoCapacity(String),
    #[error("no build to compare")]
    NoBuild,
}

/// The share's rate and what it was taken of.
#[derive(Debug, Clone)]
pub(super) struct Resolved {
    /// The cell with its rate in requests a second.
    pub(super) cell: Cell,
    pub(super) capacity: f64,
    /// How many searches the capacity is pooled from.
    pub(super) searches: usize,
}

/// The share cell's rate from the kept searches, or why there is none.
pub(super) async fn resolve(
    store: &Store,
    experiment: &Experiment,
    plan: &Plan,
    cell: &Cell,
) -> Result<Result<Resolved, NoRate>, store::StoreError> {
    let CellKind::Share { searches: keys } = &cell.kind else {
        return Ok(Err(NoRate::NotAShare));
    };
    let searches = kept(store, experiment, plan, keys).await?;
    Ok(of(cell, &searches))
}

/// The rate of a comparison's share (`[compare]` with `[search]` rounds): one rate for every
/// build, the share of the lowest of their capacities, so that each runs below its own. Each
/// build's capacity is its latest finished search's, not pooled with earlier sittings': a
/// build under test changes between them. With `since` (the searches ran in this sitting, which
/// began then), only a search begun since counts: one that failed now leaves no capacity,
/// rather than an earlier sitting's.
pub(super) async fn resolve_compared(
    store: &Store,
    experiment: &Experiment,
    plan: &Plan,
    cells: &[&Cell],
    since: Option<i64>,
) -> Result<Result<Shared, NoRate>, store::StoreError> {
    let mut keys: Vec<String> = Vec::new();
    for cell in cells {
        if let CellKind::Share { searches } = &cell.kind {
            keys.extend(searches.iter().cloned());
        }
    }
    let searches = kept(store, experiment, plan, &keys).await?;
    Ok(of_lowest(cells, &searches, since))
}

/// The share of the lowest of `cells`' builds' capacities, each its latest finished search's
/// of `searches` (begun `since`, when given).
fn of_lowest(cells: &[&Cell], searches: &[Search], since: Option<i64>) -> Result<Shared, NoRate> {
    let mut lowest: Option<(Resolved, String)> = None;
    let mut seen: Vec<&str> = Vec::new();
    for cell in cells {
        if seen.contains(&cell.target.as_str()) {
            continue;
        }
        seen.push(&cell.target);
        let CellKind::Share { searches: keys } = &cell.kind else {
            return Err(NoRate::NotAShare);
        };
        let latest = searches
            .iter()
            .filter(|s| s.labels.get(label::CELL).is_some_and(|c| keys.contains(c)))
            .filter(|s| since.is_none_or(|t| s.started_at_ns >= t))
            .filter(|s| !matches!(s.status, Status::Running | Status::Interrupted))
            .max_by_key(|s| s.started_at_ns)
            .cloned();
        let resolved = of(cell, latest.as_slice())?;
        if lowest
            .as_ref()
            .is_none_or(|(l, _)| resolved.capacity < l.capacity)
        {
            lowest = Some((resolved, cell.target.clone()));
        }
    }
    let (lowest, of_target) = lowest.ok_or(NoRate::NoBuild)?;
    let rate = lowest.cell.load.rate;
    let cells = cells
        .iter()
        .map(|c| {
            let mut c = (*c).clone();
            c.load.rate = rate;
            c
        })
        .collect();
    Ok(Shared {
        cells,
        capacity: lowest.capacity,
        of: of_target,
    })
}

/// A comparison's share: its cells at one rate, and the capacity it is a share of.
#[derive(Debug, Clone)]
pub(super) struct Shared {
    /// The cells, each at the rate in requests a second.
    pub(super) cells: Vec<Cell>,
    /// The lowest of the compared builds' capacities (req/s).
    pub(super) capacity: f64,
    /// Whose capacity that is.
    pub(super) of: String,
}

/// The finished and unfinished searches kept by this experiment file at this scale, of the
/// cells keyed `keys`.
async fn kept(
    store: &Store,
    experiment: &Experiment,
    plan: &Plan,
    keys: &[String],
) -> Result<Vec<Search>, store::StoreError> {
    let file = Plan::file_label(experiment);
    let scale = plan.scale.to_string();
    Ok(analysis::capacity::searches(store)
        .await?
        .into_iter()
        .filter(|s| {
            s.experiment.as_deref() == Some(experiment.file.name.as_str())
                && s.labels.get(label::FILE) == Some(&file)
                && s.labels.get(label::SCALE) == Some(&scale)
                && s.labels.get(label::CELL).is_some_and(|c| keys.contains(c))
        })
        .collect())
}

/// The share of the median capacity `searches` found.
fn of(cell: &Cell, searches: &[Search]) -> Result<Resolved, NoRate> {
    let share = cell.load.share().unwrap_or(1.0);
    let finished: Vec<&Search> = searches
        .iter()
        .filter(|s| !matches!(s.status, Status::Running | Status::Interrupted))
        .collect();
    if finished.is_empty() {
        return Err(NoRate::Unfinished {
            target: cell.target.clone(),
            searches: match &cell.kind {
                CellKind::Share { searches } => searches.join(", "),
                _ => String::new(),
            },
        });
    }
    if let Some(why) = finished.iter().find_map(|s| s.only_at_least()) {
        return Err(NoRate::Beyond {
            target: cell.target.clone(),
            why,
            share,
        });
    }
    if let Some(s) = finished.iter().find(|s| s.status == Status::BelowMinimum) {
        return Err(NoRate::BelowMinimum {
            target: cell.target.clone(),
            min_rate: s.settings.min_rate,
            share,
        });
    }
    let owned: Vec<Search> = finished.iter().map(|s| (*s).clone()).collect();
    let Some(agreed) = analysis::capacity::agreed(&owned) else {
        return Err(NoRate::NoCapacity(cell.target.clone()));
    };
    let capacity = agreed.rate;
    let mut resolved = cell.clone();
    resolved.load.rate = Some(Rate::PerSecond(analysis::capacity::share_of(
        capacity, share,
    )));
    Ok(Resolved {
        cell: resolved,
        capacity,
        searches: agreed.searches,
    })
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A search of `status` that found `capacity`, as its tests and the scheduler's need one.
    pub(in crate::runner) fn search(status: Status, capacity: Option<f64>) -> Search {
        Search {
            id: "s".into(),
            name: "s".into(),
            experiment: None,
            target: "t".into(),
            slo: analysis::capacity::Slo {
                terms: vec!["p99<=10ms".parse().unwrap()],
            },
            settings: analysis::capacity::Settings {
                start: 100.0,
                resolution: 0.05,
                step_s: 1.0,
                warmup_s: 1.0,
                min_rate: 10.0,
                max_rate: 1e6,
                growth: 2.0,
                arrival: None,
                p: 0.5,
                until: 0.05,
                grid: 1.02,
                seed: 0,
            },
            steps: Vec::new(),
            status,
            capacity,
            estimates: Vec::new(),
            highest_pass: capacity,
            drift: None,
            warmed: None,
            check: None,
            failed_at: capacity.map(|c| c * 1.05),
            generator_limit: None,
            reason: String::new(),
            labels: Default::default(),
            started_at_ns: 0,
            updated_at_ns: 0,
        }
    }

    fn share_cell() -> Cell {
        Cell {
            number: 1,
            target: "go".into(),
            setting: vec![("rate".into(), "80%".into())],
            repetition: 1,
            load: crate::file::LoadSpec {
                rate: Some(Rate::Share(0.8)),
                ..Default::default()
            },
            env: Default::default(),
            kind: CellKind::Share {
                searches: vec!["target=go rate=search".into()],
            },
        }
    }

    #[test]
    fn a_share_is_of_the_median_of_the_finished_searches() {
        let found = of(
            &share_cell(),
            &[
                search(Status::Found, Some(1000.0)),
                search(Status::OutOfSteps, Some(900.0)),
                search(Status::Found, Some(1200.0)),
                search(Status::Interrupted, Some(50.0)),
            ],
        )
        .unwrap();
        assert_eq!(found.capacity, 1000.0);
        assert_eq!(found.searches, 3);
        assert_eq!(found.cell.load.per_second(), Some(800.0));
        // Of two, their mean: not the better one.
        let two = of(
            &share_cell(),
            &[
                search(Status::Found, Some(1000.0)),
                search(Status::Found, Some(1200.0)),
            ],
        )
        .unwrap();
        assert_eq!(two.capacity, 1100.0);
        assert_eq!(two.cell.load.per_second(), Some(880.0));
    }

    #[test]
    fn a_comparisons_share_is_one_rate_of_the_lowest_builds_latest_search() {
        let of_build = |target: &str, capacity: f64, started: i64| {
            let mut s = search(Status::Found, Some(capacity));
            s.labels
                .insert(label::CELL.into(), format!("target={target} rate=search"));
            s.started_at_ns = started;
            s
        };
        let cell = |target: &str| {
            let mut c = share_cell();
            c.target = target.into();
            c.kind = CellKind::Share {
                searches: vec![format!("target={target} rate=search")],
            };
            c
        };
        let (base, pr) = (cell("base"), cell("pr"));
        let cells = [&base, &pr, &base, &pr];
        // base: 2,000 now, 500 in an earlier sitting; pr: 1,500 now.
        let kept = [
            of_build("base", 500.0, 1),
            of_build("pr", 1500.0, 20),
            of_build("base", 2000.0, 10),
        ];
        let shared = of_lowest(&cells, &kept, None).unwrap();
        assert_eq!((shared.capacity, shared.of.as_str()), (1500.0, "pr"));
        assert_eq!(shared.cells.len(), 4);
        assert!(shared
            .cells
            .iter()
            .all(|c| c.load.per_second() == Some(1200.0)));
        // Searches run in this sitting (begun at 15): base's of today failed, so none is taken.
        let why = of_lowest(&cells, &kept, Some(15)).unwrap_err().to_string();
        assert!(why.contains("no search of base's capacity"), "{why}");
        // A build beyond what was measured gives no rate for any.
        let limited = [
            of_build("base", 2000.0, 10),
            Search {
                status: Status::GeneratorLimited,
                ..of_build("pr", 1500.0, 20)
            },
        ];
        let why = of_lowest(&cells, &limited, None).unwrap_err().to_string();
        assert!(why.contains("pr's capacity"), "{why}");
    }

    #[test]
    fn no_share_is_taken_of_a_capacity_not_measured() {
        for (searches, says) in [
            (vec![], "has finished"),
            (vec![search(Status::Running, Some(1000.0))], "has finished"),
            (
                vec![
                    search(Status::Found, Some(1000.0)),
                    search(Status::GeneratorLimited, Some(1500.0)),
                ],
                "the generator is the limit",
            ),
            (
                vec![search(Status::BelowMinimum, None)],
                "missed the SLO already at the lowest rate tried (10 req/s)",
            ),
        ] {
            let why = of(&share_cell(), &searches).unwrap_err().to_string();
            assert!(why.contains(says), "{why}");
        }
    }
}
