//! What a cell's attacks came to, and what that means for the cell.
//!
//! A cell's attacks are fired through a [`fleet::Firing`] (re-exported as [`Firing`]): this
//! machine's `loadgen order` (`fleet::Local`), the gun hosts with it ([`Hosts`]), or a test's
//! fake. The judgements ([`search_outcome`], [`compare_outcome`], [`warmup_outcome`],
//! [`measure_outcome`], [`volley_outcome`]) turn what came back into the cell's outcome, as
//! pure functions.

use fleet::{Fired, Shot};
pub use fleet::{Firing, Hosts};

use crate::gun::GunError;

/// What a cell came to.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum CellOutcome {
    Done,
    Failed(String),
    Interrupted,
}

/// A search cell's outcome from its generator's result (`None`: the experiment was stopped).
pub(super) fn search_outcome(fired: Result<Option<Fired>, GunError>) -> CellOutcome {
    match fired {
        Ok(None) => CellOutcome::Interrupted,
        Ok(Some(fired)) if fired.stopped() => CellOutcome::Interrupted,
        Ok(Some(fired)) => match fired.search() {
            Some(s) => judged(s),
            None => CellOutcome::Failed(fired.why_not()),
        },
        Err(e) => CellOutcome::Failed(e.to_string()),
    }
}

/// Each search's outcome of a comparison (in the order of `ids`, its searches' ids) from its
/// generator's result: a search judged as a search cell's, one the comparison did not return
/// failed with why.
pub(super) fn compare_outcome(
    fired: Result<Option<Fired>, GunError>,
    ids: &[String],
) -> Vec<CellOutcome> {
    let all = |outcome: CellOutcome| ids.iter().map(|_| outcome.clone()).collect();
    let fired = match fired {
        Ok(None) => return all(CellOutcome::Interrupted),
        Ok(Some(fired)) if fired.stopped() => return all(CellOutcome::Interrupted),
        Ok(Some(fired)) => fired,
        Err(e) => return all(CellOutcome::Failed(e.to_string())),
    };
    let Some(compared) = fired.outcome.as_ref().and_then(|o| o.compared.as_ref()) else {
        return all(CellOutcome::Failed(fired.why_not()));
    };
    ids.iter()
        .map(|id| match compared.searches.iter().find(|s| &s.id == id) {
            Some(s) => judged(s),
            None => CellOutcome::Failed(format!(
                "the comparison returned no search of this target ({})",
                compared.reason
            )),
        })
        .collect()
}

/// A finished search's outcome: at the generator's measured limit with a pass below it, the
/// search found "at least", a result; with no pass, nothing.
fn judged(s: &analysis::capacity::Search) -> CellOutcome {
    match s.status {
        analysis::capacity::Status::GeneratorLimited if s.capacity.is_none() => {
            CellOutcome::Failed(s.reason.clone())
        }
        _ => CellOutcome::Done,
    }
}

/// A warm-up's outcome: `Done` to go on with the measured run.
pub(super) fn warmup_outcome(fired: Result<Option<Fired>, GunError>) -> CellOutcome {
    match fired {
        Ok(Some(fired)) if fired.summary().is_some() && !fired.stopped() => CellOutcome::Done,
        Ok(Some(fired)) => CellOutcome::Failed(format!("the warm-up failed: {}", fired.said)),
        Ok(None) => CellOutcome::Interrupted,
        Err(e) => CellOutcome::Failed(e.to_string()),
    }
}

/// Whether other processes held a fired run's generator back (they took its CPUs, or paused
/// it as its schedule began): a run to measure again once its CPUs are quiet.
pub(super) fn held_back(fired: &Result<Option<Fired>, GunError>) -> bool {
    matches!(fired, Ok(Some(f)) if f
        .summary()
        .is_some_and(analysis::warnings::host_held_the_generator_back))
}

/// A measured run's outcome: done unless the generator fell behind, could not run, or was
/// stopped.
pub(super) fn measure_outcome(fired: Result<Option<Fired>, GunError>) -> CellOutcome {
    match fired {
        Ok(None) => CellOutcome::Interrupted,
        Ok(Some(fired)) if fired.stopped() => CellOutcome::Interrupted,
        Ok(Some(fired)) => match fired.summary() {
            Some(summary) => match analysis::warnings::generator_fell_behind(summary) {
                Some(why) => CellOutcome::Failed(why),
                None => CellOutcome::Done,
            },
            None => CellOutcome::Failed(fired.why_not()),
        },
        Err(e) => CellOutcome::Failed(e.to_string()),
    }
}

/// What the guns' shards of one attack came to, together: valid only when every gun ran its
/// share to the end and kept its schedule; the first gun that did not is named. A gun's work
/// cut short because the user stopped the runner (`stopped`) is an interrupted cell, to run
/// again, not a failed one.
pub(super) fn volley_outcome(shots: Result<Vec<Shot>, GunError>, stopped: bool) -> CellOutcome {
    let shots = match shots {
        Ok(shots) => shots,
        Err(_) if stopped => return CellOutcome::Interrupted,
        Err(e) => return CellOutcome::Failed(e.to_string()),
    };
    let count = shots.len();
    for (i, shot) in shots.iter().enumerate() {
        let gun = format!("gun {} ({}/{count})", shot.gun, i + 1);
        match &shot.fired {
            Err(_) if stopped => return CellOutcome::Interrupted,
            Err(why) => return CellOutcome::Failed(format!("{gun}: {why}")),
            Ok(fired) if fired.stopped() && stopped => return CellOutcome::Interrupted,
            Ok(fired) if fired.stopped() => {
                return CellOutcome::Failed(format!("{gun} stopped early: {}", fired.said))
            }
            Ok(fired) => match fired.summary() {
                None => {
                    return CellOutcome::Failed(format!("{gun} printed no summary: {}", fired.said))
                }
                Some(summary) => {
                    if let Some(why) = analysis::warnings::generator_fell_behind(summary) {
                        return CellOutcome::Failed(format!("{gun} fell behind: {why}"));
                    }
                }
            },
        }
    }
    if stopped {
        CellOutcome::Interrupted
    } else {
        CellOutcome::Done
    }
}
