//! The knee of a search, function by function: each step's profile over its judged window and
//! its CPU per request there, read from the step's run, for
//! [`analysis::ab::functions::knee`] to say which functions' CPU per request grew with the
//! rate around the capacity, and its differential flame graph of the failing steps against
//! the passing ones.

use std::collections::HashMap;
use std::sync::Arc;

use analysis::ab::functions::knee::{self, Knee, KneeStep};
use analysis::ab::functions::Sampled;
use analysis::capacity::{Search, Step};

use crate::figures::RunFigures;
use crate::profile::function_frames;

/// The knee, or why there is none.
#[derive(Debug, Clone, PartialEq)]
pub enum Found {
    Knee(Box<Knee>),
    /// No step of the search was profiled.
    Unprofiled,
    /// Too few profiled steps around the capacity, or none failing above a pass there.
    TooFew,
    /// The search has no C_0.5 (nor a capacity) to centre the steps on.
    NoCapacity,
}

impl Found {
    pub fn knee(&self) -> Option<&Knee> {
        match self {
            Found::Knee(k) => Some(k),
            _ => None,
        }
    }

    /// Why the page shows no knee, in a sentence.
    pub fn why_not(&self) -> Option<String> {
        match self {
            Found::Knee(_) => None,
            Found::Unprofiled => Some(
                "Its steps were not profiled: with profile = true in the experiment's file (or \
                 its probe started with --profile), this says which functions' CPU per request \
                 grew with the rate at the knee."
                    .into(),
            ),
            Found::TooFew => Some(format!(
                "Too few profiled steps around the capacity to say what grew with the rate: it \
                 takes {} valid steps within a factor of {} of C_0.5, a passing one below a \
                 failing one.",
                knee::MIN_STEPS,
                knee::WINDOW
            )),
            Found::NoCapacity => None,
        }
    }
}

/// The rate the knee is centred on: C_0.5 where it was estimated, else the search's figure.
fn centre(search: &Search) -> Option<f64> {
    search
        .estimates
        .iter()
        .find(|e| e.p == 0.5)
        .map(|e| e.rate)
        .or(search.capacity)
}

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
    let Some(capacity) = centre(search) else {
        return Found::NoCapacity;
    };
    let valid: Vec<&Step> = search.steps.iter().filter(|s| s.valid()).collect();
    let sampled: Vec<(f64, bool, Option<Sampled>)> = valid
        .iter()
        .map(|s| {
            let run = s.run_id.as_ref().and_then(|id| runs.get(id));
            (
                s.rate,
                s.judgement.verdict.passed(),
                run.and_then(|r| step_sampled(search, s, r)),
            )
        })
        .collect();
    if sampled.iter().all(|(_, _, s)| s.is_none()) {
        return Found::Unprofiled;
    }
    let steps: Vec<KneeStep> = sampled
        .iter()
        .map(|(rate, passed, run)| KneeStep {
            rate: *rate,
            passed: *passed,
            run: run.as_ref(),
        })
        .collect();
    match knee::knee(&steps, capacity) {
        Some(k) => Found::Knee(Box::new(k)),
        None => Found::TooFew,
    }
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
