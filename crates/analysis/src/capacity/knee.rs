//! A search's knee, function by function: each step's profile over its judged window and its
//! CPU per request there, read from the step's kept run, for [`crate::ab::functions::knee`] to
//! say which functions' CPU per request grew with the rate around the capacity. `loadgen
//! capacity` prints it and puts it in its JSON; the report draws it on the search's page.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use store::run::StoredRun;

use super::{Search, Step};
use crate::ab::functions::knee::{self, Knee, KneeStep};
use crate::ab::functions::Sampled;

/// The knee, or why there is none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "found", rename_all = "snake_case")]
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

    /// Why there is no knee, in a sentence; `None` where there is one, or no capacity to
    /// centre it on (nothing to say).
    pub fn why_not(&self) -> Option<String> {
        match self {
            Found::Knee(_) | Found::NoCapacity => None,
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
        }
    }

    /// For a terminal: "At the knee: From the passing steps … grew …", or why there is no
    /// knee; `None` where there is nothing to say.
    pub fn text(&self) -> Option<String> {
        match self {
            Found::Knee(k) => Some(format!("At the knee: {}.", k.sentence())),
            _ => self.why_not().map(|w| format!("At the knee: {w}")),
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

/// What grew with the rate at `search`'s knee, each valid step read by `sampled` (its profile
/// over its judged window with its CPU per request there, `None` without one).
pub fn of(search: &Search, sampled: impl Fn(&Step) -> Option<Sampled>) -> Found {
    let Some(capacity) = centre(search) else {
        return Found::NoCapacity;
    };
    let read: Vec<(f64, bool, Option<Sampled>)> = search
        .steps
        .iter()
        .filter(|s| s.valid())
        .map(|s| (s.rate, s.judgement.verdict.passed(), sampled(s)))
        .collect();
    if read.iter().all(|(_, _, s)| s.is_none()) {
        return Found::Unprofiled;
    }
    let steps: Vec<KneeStep> = read
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

/// The knee of `search` from its steps' kept runs (`runs`, by id).
pub fn of_runs(search: &Search, runs: &HashMap<String, StoredRun>) -> Found {
    of(search, |step| {
        let run = runs.get(step.run_id.as_deref()?)?;
        step_sampled(search, step, run)
    })
}

/// The knee of `search`, its steps' runs read from `store` one search at a time (the one reader
/// of a step's window: the terminal and the page say the same figures). Where `profiled` says
/// no step's run holds a profile, nothing is read.
pub async fn read(
    store: &store::Store,
    search: &Search,
    profiled: impl Fn(&str) -> bool,
) -> Result<Found, store::StoreError> {
    let ids: Vec<&str> = search
        .steps
        .iter()
        .filter_map(|s| s.run_id.as_deref())
        .collect();
    if !ids.iter().any(|id| profiled(id)) {
        return Ok(of(search, |_| None));
    }
    let mut runs = HashMap::new();
    for id in ids {
        runs.insert(id.to_string(), store.load_run(id).await?);
    }
    Ok(of_runs(search, &runs))
}

/// A step's profile over its judged window (after its warm-up: the target's probe's profile
/// records that overlap it, a record covering the interval before its time), with the
/// server's CPU per request there (its CPU over the window ÷ the rate it answered): `None`
/// when its run holds no profile or its probe no CPU.
pub fn step_sampled(search: &Search, step: &Step, run: &StoredRun) -> Option<Sampled> {
    let from_ns = (search.settings.warmup_s * 1e9) as i64;
    let to_ns = from_ns + (step.window_s * 1e9) as i64;
    let cores = crate::system::System::of(&run.probes, from_ns, to_ns)?
        .target
        .cpu_cores;
    let achieved = step.judgement.achieved;
    if !(cores > 0.0 && achieved > 0.0) {
        return None;
    }
    let cpu_us = 1e6 * cores / achieved;
    Sampled::of_records(
        run,
        |t_ns, span_ns| t_ns > from_ns && t_ns.saturating_sub(span_ns) < to_ns,
        cpu_us,
    )
}
