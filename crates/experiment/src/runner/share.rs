//! A cell whose rate is a share of a capacity (`rate = "80%"`): its rate in requests a second,
//! from the searches of the same target and requests this experiment has kept, so that "near
//! each server's maximum" is the same point of its curve on any host.
//!
//! The capacity taken is C_p of the finished searches' steps pooled, as the experiment's page shows
//! it. A search that says only "at least" (the generator was the limit, or the highest rate
//! passed), or that found none (the SLO missed at the lowest rate), gives no capacity to take
//! a share of: the cell is failed with that reason rather than run at a rate that means
//! something else.

use store::capacity::{Search, Status};
use store::vocabulary::label;
use store::Store;

use crate::file::{Experiment, Rate};
use crate::plan::{Cell, CellKind, Plan};

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
) -> Result<Result<Resolved, String>, store::StoreError> {
    let CellKind::Share { searches: keys } = &cell.kind else {
        return Ok(Err("not a share of a capacity".into()));
    };
    let file = Plan::file_label(experiment);
    let scale = plan.scale.to_string();
    let searches: Vec<Search> = store
        .searches()
        .await?
        .into_iter()
        .filter(|s| {
            s.experiment.as_deref() == Some(experiment.file.name.as_str())
                && s.labels.get(label::FILE) == Some(&file)
                && s.labels.get(label::SCALE) == Some(&scale)
                && s.labels.get(label::CELL).is_some_and(|c| keys.contains(c))
        })
        .collect();
    Ok(of(cell, &searches))
}

/// The share of the median capacity `searches` found.
fn of(cell: &Cell, searches: &[Search]) -> Result<Resolved, String> {
    let share = cell.load.share().unwrap_or(1.0);
    let what = format!("{}'s capacity on these requests", cell.target);
    let finished: Vec<&Search> = searches
        .iter()
        .filter(|s| !matches!(s.status, Status::Running | Status::Interrupted))
        .collect();
    if finished.is_empty() {
        return Err(format!(
            "no search of {what} has finished: run its cells first ({}), then this one again with --retry-failed",
            match &cell.kind {
                CellKind::Share { searches } => searches.join(", "),
                _ => String::new(),
            }
        ));
    }
    if let Some(why) = finished.iter().find_map(|s| s.only_at_least()) {
        return Err(format!(
            "{what} is beyond what was measured ({why}): {:.0} % of it cannot be set",
            share * 100.0
        ));
    }
    if let Some(s) = finished.iter().find(|s| s.status == Status::BelowMinimum) {
        return Err(format!(
            "{} missed the SLO already at the lowest rate tried ({:.0} req/s): no capacity to take {:.0} % of",
            cell.target, s.settings.min_rate, share * 100.0
        ));
    }
    let owned: Vec<Search> = finished.iter().map(|s| (*s).clone()).collect();
    let Some(agreed) = store::capacity::agreed(&owned) else {
        return Err(format!("no search of {what} found a capacity"));
    };
    let capacity = agreed.rate;
    let mut resolved = cell.clone();
    resolved.load.rate = Some(Rate::PerSecond(store::capacity::share_of(capacity, share)));
    Ok(Resolved {
        cell: resolved,
        capacity,
        searches: agreed.searches,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn search(status: Status, capacity: Option<f64>) -> Search {
        Search {
            id: "s".into(),
            name: "s".into(),
            experiment: None,
            target: "t".into(),
            slo: store::capacity::Slo {
                terms: vec!["p99<=10ms".parse().unwrap()],
            },
            settings: store::capacity::Settings {
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
            let why = of(&share_cell(), &searches).unwrap_err();
            assert!(why.contains(says), "{why}");
        }
    }
}
