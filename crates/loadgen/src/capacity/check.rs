//! The calibration check run after a search (`--check N`): N blocks of one step at each of
//! the ends of C_0.5's interval and C_0.75, C_0.5 and C_0.25 of the search's fitted curve, each
//! block in a seeded random order, then a search run again; judged by
//! [`analysis::capacity::check`] and kept with the search.
//!
//! The rates are fixed before the first block runs, from the search's steps alone: the check's
//! own steps never enter its fit. Every step has the search's window and warm-up, and the same
//! drain after a step that did not pass, so that the check's steps meet the history the
//! search's did.

use analysis::capacity::check::{self, Again, Check, CheckStep, Claim, Outcome};
use analysis::capacity::fit;
use analysis::capacity::random::Rng;
use analysis::capacity::{Search, Verdict};

use super::search::{search, Event, Plan, Steps};
use crate::error::Error;

/// Seeds the blocks' order beside the search's own seed ("check").
const SALT: u64 = 0x0063_6865_636b;

/// What `found` claims (C_0.5 with its interval, from every valid step): `None` where its
/// fit does not bound C_0.5 on both sides (there is no figure to check).
pub fn claim(found: &Search) -> Option<Claim> {
    Claim::of(&fit::fit(&found.points(None), 0.5, true)?)
}

/// Runs `blocks` blocks of the check of `found` (searched as `plan` says), then the search
/// again under `again_id`; keeps the check with `found` after every step. Leaves `found`
/// unchecked where there is no figure to check.
pub async fn check(
    found: &mut Search,
    plan: &Plan,
    blocks: u32,
    steps: &mut impl Steps,
    again_id: String,
) -> Result<(), Error> {
    let Some(claim) = claim(found) else {
        return Ok(());
    };
    let seed = found.settings.seed ^ SALT;
    let mut done = Check {
        claim,
        blocks,
        seed,
        levels: check::levels(&claim, &[]),
        halves: None,
        steps: Vec::new(),
        again: None,
        outcome: Outcome::Unfinished,
    };
    let rates: Vec<(String, f64)> = done
        .levels
        .iter()
        .map(|l| (l.name.clone(), l.rate))
        .collect();
    steps.event(Event::Checking {
        blocks,
        rates: &rates,
    });
    let finished = run_blocks(found, plan, &mut done, &rates, steps).await?;
    done.halves = check::halves(&done.steps, blocks);
    if finished {
        let figure = found.capacity.unwrap_or(claim.rate);
        let mut again = plan.near(figure, again_id);
        again.name = format!("{} (searched again after its check)", plan.name);
        let searched = search(again, steps).await?;
        // Its C_0.5, as the claim's, whatever p it searched for.
        let e = fit::fit(&searched.points(None), 0.5, true);
        done.again = Some(Again {
            id: searched.id.clone(),
            rate: e.as_ref().map(|e| e.rate),
            low: e.as_ref().and_then(|e| e.low),
            high: e.as_ref().and_then(|e| e.high),
        });
    }
    done.outcome = check::outcome(
        &done.levels,
        done.halves.as_ref(),
        (Some(claim.low), Some(claim.high)),
        done.again.as_ref(),
        finished,
    );
    found.check = Some(done);
    steps.keep(found).await
}

/// The check's blocks, each of one step at every level in a seeded random order, the check
/// kept with `found` after each step; whether every block ran (the search was not stopped,
/// and the server recovered after every step that did not pass).
async fn run_blocks(
    found: &mut Search,
    plan: &Plan,
    done: &mut Check,
    rates: &[(String, f64)],
    steps: &mut impl Steps,
) -> Result<bool, Error> {
    let mut rng = Rng::new(done.seed);
    let first = found.steps.len() as u32;
    let mut baseline_ns = None;
    for block in 1..=done.blocks {
        let mut order: Vec<usize> = (0..rates.len()).collect();
        // Fisher–Yates, seeded: the order of this block's levels.
        for i in (1..order.len()).rev() {
            let j = ((rng.uniform() * (i + 1) as f64) as usize).min(i);
            order.swap(i, j);
        }
        for &level in &order {
            let Some(&(_, rate)) = rates.get(level) else {
                continue;
            };
            let number = first + done.steps.len() as u32 + 1;
            let Some(s) = (if steps.stopped() {
                None
            } else {
                steps.run(found, number, rate, plan.step).await?
            }) else {
                return Ok(false);
            };
            steps.event(Event::Stepped {
                number,
                rate,
                judgement: &s.judgement,
                again: false,
                limit: s.limit.as_ref(),
            });
            let verdict = s.judgement.verdict;
            if verdict == Verdict::Pass && baseline_ns.is_none() {
                baseline_ns = Some(s.p50_ns);
            }
            done.steps.push(CheckStep {
                block,
                level: level as u8,
                rate,
                pass: verdict.passed(),
                valid: verdict != Verdict::Invalid,
                run_id: s.run_id,
            });
            done.levels = check::levels(&done.claim, &done.steps);
            found.check = Some(done.clone());
            steps.keep(found).await?;
            if !verdict.passed() && steps.recover(baseline_ns).await?.is_none() {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::super::world::{on_two_threads, plan_in, Regime, World};
    use super::*;

    /// `n` searches of worlds of `regime`, each checked with `blocks` blocks: their outcomes.
    fn checked(regime: Regime, n: u64, blocks: u32) -> Vec<Option<Outcome>> {
        let seeds: Vec<u64> = (1..=n).collect();
        on_two_threads(&seeds, |rt, seed| {
            let mut world = World::in_regime(seed, regime);
            let mut plan = plan_in(0.5, seed, &regime);
            plan.max_steps = 200;
            rt.block_on(async {
                let mut found = search(plan.clone(), &mut world).await.ok()?;
                check(
                    &mut found,
                    &plan,
                    blocks,
                    &mut world,
                    format!("again-{seed}"),
                )
                .await
                .ok()?;
                found.check.map(|c| c.outcome)
            })
        })
    }

    fn count(outcomes: &[Option<Outcome>], wanted: &[Outcome]) -> usize {
        outcomes
            .iter()
            .filter(|o| o.is_some_and(|o| wanted.contains(&o)))
            .count()
    }

    #[test]
    fn a_check_holds_on_a_still_host_and_fails_or_voids_on_one_that_slows() {
        // A gate's steps at a knee 10 % wide on a still host: the figure's interval holds
        // about 90 % of the time (the worlds grid), and the check says so about as often.
        let still = checked(Regime::gate(0.10, 0.0, 0.0), 60, 30);
        let held = count(&still, &[Outcome::Held]);
        eprintln!("still host: {held} of 60 held, {still:?}");
        assert!(held >= 48, "{held} of 60 held on a still host");
        // The host slows 30 % over 5 minutes: the check sees passes fall, the figure read
        // high, or the search run again excluding the first.
        let slowing = checked(Regime::gate(0.10, 0.0, -0.30), 60, 30);
        let seen = count(
            &slowing,
            &[Outcome::Moved, Outcome::High, Outcome::Void, Outcome::Shape],
        );
        eprintln!("slowing host: {seen} of 60 seen, {slowing:?}");
        assert!(seen >= 45, "{seen} of 60 seen on a slowing host");
    }
}
