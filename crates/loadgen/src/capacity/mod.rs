//! `loadgen capacity`: the highest constant rate a server sustains within an SLO.
//!
//! From `--start` (or half of what a short closed loop served), ×2 until a step fails, then
//! bisection until the bracket is within `--resolution`. Each step warms up, measures a window
//! and is judged on it (`store::capacity::judge`: confidence intervals on each SLO term, the
//! queue's growth, the generator's own limits); an uncertain step runs again, longer; after a
//! step that did not pass, the search waits for the server to drain. Every step is kept as an
//! ordinary run, and the search itself after each step, so that Ctrl-C or a failure keeps the
//! bracket so far.
//!
//! - [`bracket`]: where the search goes next, from the verdicts.
//! - `step`: one step run and judged; the recovery between steps; the first rate's estimate.

pub mod bracket;
mod step;

use std::time::Duration;

use store::capacity::{Search, Settings, Slo, Status, Step, Verdict};
use store::Store;

use crate::cli::CapacityArgs;
use crate::engine::shutdown::{Shutdown, Stop};
use crate::keep::Keeping;
use crate::Error;
use bracket::{Bracket, Next};
use step::Stepper;

/// An uncertain step is run again this many times, each with a window twice as long.
const RETRIES: u32 = 2;

/// Runs the search `args` describe, keeping it (and reporting each step on standard error).
pub async fn search(
    args: &CapacityArgs,
    keeping: Keeping,
    shutdown: &Shutdown,
) -> Result<Search, Error> {
    let slo = Slo {
        terms: args.slo.clone(),
    };
    // The caller's --run-id names the search (the experiment runner's cell); its steps get
    // ids of their own.
    let mut keeping = keeping;
    let id = keeping.run_id.take().unwrap_or_else(store::RunMeta::new_id);
    let target = match (&args.request.url, &args.request.targets) {
        (Some(url), _) => url.clone(),
        (None, Some(file)) => file.display().to_string(),
        (None, None) => String::new(),
    };
    if args.min_rate > args.max_rate {
        return Err(Error::Usage(
            "--min-rate is above --max-rate: give a range that holds rates".into(),
        ));
    }
    let store = match &keeping.store_url {
        Some(url) => Some(Store::open(url).await?),
        None => None,
    };
    keeping
        .labels
        .insert(store::capacity::label::SEARCH.into(), id.clone());
    let mut stepper = Stepper {
        request: &args.request,
        keeping,
        slo: &slo,
        warmup: args.warmup,
        shutdown,
    };
    let start = match args.start {
        Some(rate) => rate,
        None => {
            eprintln!("Estimating a first rate: a closed loop of 16 connections for 2 s…");
            stepper.estimate().await?.ok_or_else(|| {
                Error::Usage(format!(
                    "{target} answered nothing to a closed loop of 16 connections in 2 s: is it up? (or give --start)"
                ))
            })?
        }
    };
    let start = bracket::round(start.clamp(args.min_rate, args.max_rate));
    let settings = Settings {
        start,
        resolution: args.resolution,
        step_s: args.step.as_secs_f64(),
        warmup_s: args.warmup.as_secs_f64(),
        min_rate: args.min_rate,
        max_rate: args.max_rate,
    };
    let now = now_ns();
    let mut search = Search {
        id,
        name: stepper
            .keeping
            .name
            .clone()
            .unwrap_or_else(|| format!("capacity of {target}")),
        experiment: stepper.keeping.experiment.clone(),
        target,
        slo: slo.clone(),
        settings: settings.clone(),
        steps: Vec::new(),
        status: Status::Running,
        capacity: None,
        failed_at: None,
        reason: String::new(),
        labels: stepper
            .keeping
            .labels
            .iter()
            .filter(|(k, _)| k.as_str() != store::capacity::label::SEARCH)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        started_at_ns: now,
        updated_at_ns: now,
    };
    stepper.keeping.name = Some(search.name.clone());
    let mut bracket = Bracket::default();
    let mut rate = start;
    // A search kept under this id and not finished (killed, interrupted) goes on from its last
    // finished step, with the bracket its steps made.
    if let Some(kept) = match &store {
        Some(store) => store.search(&search.id).await?,
        None => None,
    } {
        if matches!(kept.status, Status::Running | Status::Interrupted) && kept.slo == slo {
            eprintln!(
                "Resuming search {} after its step {}",
                kept.id,
                kept.steps.len()
            );
            search.steps = kept.steps;
            search.started_at_ns = kept.started_at_ns;
            for step in &search.steps {
                if let Next::Try(r) =
                    bracket.after(step.rate, step.judgement.verdict.passed(), &settings)
                {
                    rate = r;
                }
            }
        }
    }
    eprintln!(
        "Searching the capacity of {} within {slo}: from {start} req/s, steps of {} after {} of warm-up, to {} %",
        search.target,
        humantime::format_duration(args.step),
        humantime::format_duration(args.warmup),
        args.resolution * 100.0
    );
    let mut baseline_ns: Option<u64> = None;
    let outcome = loop {
        if search.steps.len() as u64 >= args.max_steps {
            break Ok(Status::OutOfSteps);
        }
        let number = search.steps.len() as u32 + 1;
        // Long enough for every term to be decided at this rate, within four times --step.
        let needed = Duration::try_from_secs_f64(slo.samples_needed() as f64 / rate)
            .unwrap_or(Duration::MAX);
        let mut window = needed.clamp(args.step, args.step.saturating_mul(4));
        let mut stepped = None;
        let mut retried = Vec::new();
        for attempt in 0..=RETRIES {
            match stepper.run(number, rate, window).await {
                Ok(Some(s)) => {
                    let again = s.judgement.verdict == Verdict::Uncertain && attempt < RETRIES;
                    report(number, rate, &s.judgement, again);
                    if again {
                        retried.extend(s.run_id.clone());
                    }
                    stepped = Some(s);
                    if !again {
                        break;
                    }
                    window = window.saturating_mul(2);
                }
                Ok(None) => break,
                Err(e) => {
                    stepped = None;
                    search.reason = format!("step {number} at {rate} req/s could not run: {e}");
                    break;
                }
            }
        }
        let Some(s) = stepped else {
            break Err(if search.reason.is_empty() {
                "interrupted".to_string()
            } else {
                search.reason.clone()
            });
        };
        let verdict = s.judgement.verdict;
        if verdict == Verdict::Pass && baseline_ns.is_none() {
            baseline_ns = Some(s.summary.latency.corrected.p50_ns);
        }
        search.steps.push(Step {
            number,
            rate,
            run_id: s.run_id.clone(),
            window_s: s.window.as_secs_f64(),
            judgement: s.judgement.clone(),
            retried,
        });
        if verdict == Verdict::Invalid {
            break Ok(Status::GeneratorLimited);
        }
        let next = bracket.after(rate, verdict.passed(), &settings);
        search.capacity = bracket.pass;
        search.failed_at = bracket.fail;
        search.updated_at_ns = now_ns();
        if let Some(store) = &store {
            store.put_search(&search).await?;
        }
        match next {
            Next::Done(status) => break Ok(status),
            Next::Try(r) => rate = r,
        }
        if !verdict.passed() {
            match stepper.recover(baseline_ns).await? {
                Some(_) => {}
                None if shutdown.state() != Stop::Running => break Err("interrupted".into()),
                None => {
                    break Err(
                        "the server did not recover within 30 s of an overloaded step".into(),
                    )
                }
            }
        }
    };
    search.status = match &outcome {
        Ok(status) => *status,
        Err(_) => Status::Interrupted,
    };
    search.reason = reason(&search, outcome.err());
    search.updated_at_ns = now_ns();
    if let Some(store) = &store {
        store.put_search(&search).await?;
    }
    Ok(search)
}

/// One line per step on standard error, as it ends.
fn report(number: u32, rate: f64, j: &store::capacity::Judgement, again: bool) {
    let terms: Vec<String> = j
        .terms
        .iter()
        .map(|t| {
            format!(
                "{} {} [{}–{}]",
                t.term.figure,
                t.term.value_text(t.value),
                t.term.value_text(t.low),
                t.term.value_text(t.high)
            )
        })
        .collect();
    eprintln!(
        "  step {number}: {rate} req/s: {}{} ({}; served {:.0} req/s){}",
        j.verdict.as_str(),
        if terms.is_empty() {
            String::new()
        } else {
            format!(", {}", terms.join(", "))
        },
        j.reason,
        j.achieved,
        if again { ": again, twice as long" } else { "" }
    );
}

/// Why the search ended where it did, in one sentence.
fn reason(search: &Search, error: Option<String>) -> String {
    let last_fail = search
        .steps
        .iter()
        .rfind(|s| Some(s.rate) == search.failed_at);
    let next_failed = last_fail.map(|s| {
        format!(
            "at {} req/s, {}: {}",
            s.rate,
            s.judgement.verdict.as_str(),
            s.judgement.reason
        )
    });
    let last = search.steps.last();
    match (search.status, error) {
        (_, Some(e)) => format!("{e}; the bracket so far is kept"),
        (Status::GeneratorLimited, _) => format!(
            "the generator is the limit at {} req/s, not the server: {}",
            last.map_or(0.0, |s| s.rate),
            last.map_or(String::new(), |s| s.judgement.reason.clone())
        ),
        (Status::BelowMinimum, _) => format!(
            "the server missed the SLO already at {} req/s: {}",
            last.map_or(0.0, |s| s.rate),
            last.map_or(String::new(), |s| s.judgement.reason.clone())
        ),
        (Status::AboveMaximum, _) => format!(
            "the server met the SLO at --max-rate {} req/s: its capacity is at least that",
            search.settings.max_rate
        ),
        (_, None) => next_failed.unwrap_or_default(),
    }
}

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

/// The search in words: the capacity with its bracket, why the next step failed, every step.
pub fn text(search: &Search) -> String {
    let mut out = String::new();
    let slo = &search.slo;
    match (search.status, search.capacity) {
        (Status::Found, Some(cap)) => out.push_str(&format!(
            "Capacity: {cap} req/s within {slo} (bracket {cap}–{} req/s, {:.1} %)\n",
            search.failed_at.unwrap_or(cap),
            search.width().unwrap_or(0.0) * 100.0
        )),
        (_, Some(cap)) => out.push_str(&format!(
            "Capacity: at least {cap} req/s within {slo} ({})\n",
            search.status.as_str()
        )),
        (_, None) => out.push_str(&format!(
            "Capacity: not found within {slo} ({})\n",
            search.status.as_str()
        )),
    }
    out.push_str(&format!("Why it ends there: {}\n\n", search.reason));
    let headers: Vec<String> = search
        .slo
        .terms
        .iter()
        .map(|t| format!("{} [95 %]", t.figure))
        .collect();
    out.push_str(&format!(
        "{:>4}  {:>10}  {:<16}  {:>10}  {}\n",
        "step",
        "req/s",
        "verdict",
        "served",
        headers.join("  ")
    ));
    for s in &search.steps {
        let terms: Vec<String> = s
            .judgement
            .terms
            .iter()
            .map(|t| {
                format!(
                    "{} [{}–{}]",
                    t.term.value_text(t.value),
                    t.term.value_text(t.low),
                    t.term.value_text(t.high)
                )
            })
            .collect();
        out.push_str(&format!(
            "{:>4}  {:>10}  {:<16}  {:>10.0}  {}\n",
            s.number,
            s.rate,
            s.judgement.verdict.as_str(),
            s.judgement.achieved,
            terms.join("  ")
        ));
    }
    out
}

/// How long a search at these settings takes at most per step (for the experiment runner).
pub fn step_time(settings: &Settings) -> Duration {
    Duration::try_from_secs_f64(settings.warmup_s + settings.step_s).unwrap_or(Duration::MAX)
}
