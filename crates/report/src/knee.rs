//! The knee of a search on its page: what [`analysis::capacity::knee`] reads of its steps'
//! kept runs (which functions' CPU per request grew with the rate around the capacity), its
//! differential flame graph of the failing steps against the passing ones, and the limit's
//! sentence citing it.

use std::collections::HashMap;
use std::sync::Arc;

use analysis::ab::functions::knee::Knee;
use analysis::capacity::Search;

use crate::figures::RunFigures;

pub use analysis::capacity::knee::Found;

/// What grew with the rate at `search`'s knee, its steps' runs read from `store` by
/// [`analysis::capacity::knee::read`] (the terminal's reader too), where the site's figures
/// (`runs`) show a profile in one of them.
pub async fn of(
    store: &store::Store,
    search: &Search,
    runs: &HashMap<String, Arc<RunFigures>>,
) -> Result<Found, store::StoreError> {
    analysis::capacity::knee::read(store, search, |id| {
        runs.get(id)
            .and_then(|r| r.target_probe())
            .is_some_and(|p| p.profile.is_some())
    })
    .await
}

/// The knee's differential flame graph: the failing steps against the passing ones.
pub fn graph(k: &Knee) -> Option<crate::model::flame::FlameData> {
    crate::model::flame::FlameData::of_estimates(
        &k.functions,
        ("the passing steps", "the failing steps"),
        &format!(
            "{} steps, the failing against the passing",
            k.functions.rounds
        ),
    )
}

/// [`crate::search::failed_step_limit`], its short sentence citing what grew with the rate at the knee
/// (`found`) when something did: "its CPU: 0.91 of the 1.00 cores it may use (91 %); at the knee
/// `wait_for_lock` grew from 0.07 % to 38 % of its samples (+204.1 µs a request)".
pub fn cited_limit(
    s: &Search,
    runs: &HashMap<String, Arc<RunFigures>>,
    found: &Found,
) -> Option<(f64, analysis::saturation::Finding)> {
    let (rate, mut finding) = crate::search::failed_step_limit(s, runs)?;
    if let Some(cited) = found.knee().and_then(|k| k.cited()) {
        finding.short = format!("{}; {cited}", finding.short);
    }
    Some((rate, finding))
}

/// Each target's limit at an experiment's setting (`settings`, as
/// [`crate::search::experiment_capacity`] found them) citing what grew at the knee of its
/// search nearest its figure (`knees`: each search's, by its id).
pub fn cite_limits(
    settings: &mut [crate::search::SettingCapacity],
    runs: &HashMap<String, Arc<RunFigures>>,
    knees: &HashMap<String, Found>,
) {
    for t in settings.iter_mut().flat_map(|s| s.targets.iter_mut()) {
        if let Some(s) = t.nearest_search() {
            let found = knees.get(&s.id).unwrap_or(&Found::NoCapacity);
            t.limit = cited_limit(s, runs, found);
        }
    }
}
