//! The knee of a search on its page: each step's profile over its judged window and its CPU
//! per request there, read from the step's run figures, for [`analysis::capacity::knee`] to
//! say which functions' CPU per request grew with the rate around the capacity, and its
//! differential flame graph of the failing steps against the passing ones.

use std::collections::HashMap;
use std::sync::Arc;

use analysis::ab::functions::knee::Knee;
use analysis::ab::functions::Sampled;
use analysis::capacity::{Search, Step};

use crate::figures::RunFigures;
use crate::profile::function_frames;

pub use analysis::capacity::knee::Found;

/// A step's profile over its judged window (after its warm-up: the probe's records that
/// overlap it), with its CPU per request there: `None` when its run holds no profile or its
/// probe no CPU.
fn step_sampled(search: &Search, step: &Step, run: &RunFigures) -> Option<Sampled> {
    let cpu = crate::search::step_cpu(search, step, run)?;
    let cpu_us = 1e6 / cpu.per_cpu_second?;
    let profile = run.target_probe()?.profile.as_ref()?;
    let from = search.settings.warmup_s;
    let to = from + step.window_s;
    // A record covers (from, to], a second as the probe sends them: those that overlap the
    // window, which a step as short as a second or two cannot do better than.
    let mut counts: HashMap<u32, u64> = HashMap::new();
    for slice in &profile.slices {
        if slice.to > from && slice.from < to {
            for (i, n) in &slice.counts {
                *counts.entry(*i).or_default() += n;
            }
        }
    }
    let stacks: Vec<(Vec<&str>, u64)> = counts
        .iter()
        .filter_map(|(i, n)| Some((function_frames(profile.stacks.get(*i as usize)?), *n)))
        .collect();
    let sampled = Sampled::of(stacks, cpu_us);
    (sampled.samples > 0).then_some(sampled)
}

/// What grew with the rate at `search`'s knee, from its steps' runs in `runs`.
pub fn of(search: &Search, runs: &HashMap<String, Arc<RunFigures>>) -> Found {
    analysis::capacity::knee::of(search, |step| {
        let run = runs.get(step.run_id.as_deref()?)?;
        step_sampled(search, step, run)
    })
}

/// The knee's differential flame graph: the failing steps against the passing ones.
pub fn svg(k: &Knee) -> Option<String> {
    crate::flame_estimate::svg(
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
