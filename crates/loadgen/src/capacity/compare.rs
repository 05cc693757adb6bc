//! Targets compared by interleaved searches: one step of every target per round, in a random
//! order within the round, until the rounds or the budget are spent; then the ratio of each
//! target's C_p to the first's, with its 95 % interval ([`analysis::capacity::compare`]). The
//! number of rounds is fixed before the first (no stopping when the ratio looks narrow), so
//! that the interval's coverage is the one checked below (and on the worlds grid, `worlds`);
//! or it is read at looks fixed before the first round ([`Looks`]: 8, 16, 32, … rounds), each
//! at the confidence that keeps 95 % over all of them, and stops at the first look where every
//! ratio is decided.

use std::time::{Duration, Instant};

use analysis::capacity::compare::{self as ratios, Between, Compared, Looks, Ratio};
use analysis::capacity::fit::CONFIDENCE;
use analysis::capacity::random::Rng;

use super::search::{Event, Plan, Searcher, Steps};
use crate::error::Error;

/// How the rounds go.
#[derive(Debug, Clone)]
pub struct Interleave {
    /// The comparison's id (its searches are labelled with it).
    pub id: String,
    /// Rounds to run.
    pub rounds: u32,
    /// Start no new round after this long.
    pub budget: Option<Duration>,
    /// Seeds the order within rounds.
    pub seed: u64,
    /// Read at looks, stopping once decided (`rounds` then the most), or once at the end.
    pub looks: Option<Looks>,
    /// The spread between processes of one build, read before the first round: every ratio,
    /// at every look and at the end, allows for it (`None`: the ratios are the processes').
    pub between: Option<Between>,
}

/// Each later search's ratio to the first's, its interval at `confidence`, widened by
/// `between` where it was read.
fn ratios_of(
    searches: &[&analysis::capacity::Search],
    confidence: f64,
    between: Option<&Between>,
) -> Vec<Ratio> {
    searches[1..]
        .iter()
        .filter_map(|s| ratios::ratio_at(s, searches[0], confidence))
        .map(|r| match between {
            Some(b) => r.widened(b),
            None => r,
        })
        .collect()
}

/// Runs the searches of `plans` interleaved, `steps[i]` running the steps of `plans[i]`.
pub async fn compare<S: Steps>(
    plans: Vec<Plan>,
    steps: &mut [S],
    interleave: &Interleave,
) -> Result<Compared, Error> {
    if plans.len() != steps.len() || plans.len() < 2 {
        return Err(crate::prepare::Refusal::TooFewToCompare.into());
    }
    let mut searchers: Vec<Searcher> = plans.into_iter().map(Searcher::new).collect();
    for (searcher, steps) in searchers.iter_mut().zip(steps.iter_mut()) {
        searcher.begin(steps).await?;
    }
    let started = Instant::now();
    let mut rng = Rng::new(interleave.seed);
    let mut round = 0u32;
    let reason = loop {
        if let Some(why) = stop_reason(&searchers, interleave, round, started) {
            break why;
        }
        round += 1;
        run_round(&mut searchers, steps, interleave, round, &mut rng).await?;
    };
    let searches = finish_all(searchers, steps, &reason).await?;
    let confidence = interleave.looks.map_or(CONFIDENCE, |l| l.confidence());
    let ratios = ratios_of(
        &searches.iter().collect::<Vec<_>>(),
        confidence,
        interleave.between.as_ref(),
    );
    Ok(Compared {
        id: interleave.id.clone(),
        rounds: round,
        searches,
        ratios,
        reason,
        spread: None,
    })
}

/// Why the comparison stops before round `round + 1`, or `None` while it goes on: a search
/// ended, every ratio decided at a look, the rounds or the budget spent.
fn stop_reason(
    searchers: &[Searcher],
    interleave: &Interleave,
    round: u32,
    started: Instant,
) -> Option<String> {
    if let Some(s) = searchers.iter().find(|s| s.ended()) {
        return Some(format!(
            "{}'s search ended after {round} rounds, so the rest stopped with it",
            s.search.name
        ));
    }
    let looks = interleave.looks.filter(|l| l.at().contains(&round));
    let between = interleave.between.as_ref();
    if let Some(why) = looks.and_then(|looks| decided(searchers, looks, round, between)) {
        return Some(why);
    }
    if round >= interleave.rounds {
        return Some(match interleave.looks {
            Some(_) => format!(
                "its {round} rounds, the most it may run, were run without deciding every ratio"
            ),
            None => format!("its {round} rounds were run"),
        });
    }
    if let Some(b) = interleave.budget.filter(|b| started.elapsed() >= *b) {
        return Some(format!(
            "its time budget of {} was spent after {round} rounds",
            humantime::format_duration(b)
        ));
    }
    None
}

/// At the look after round `round`: why the comparison stops, when every ratio (widened by
/// `between`, as the answer's will be) is decided.
fn decided(
    searchers: &[Searcher],
    looks: Looks,
    round: u32,
    between: Option<&Between>,
) -> Option<String> {
    let now: Vec<&analysis::capacity::Search> = searchers.iter().map(|s| &s.search).collect();
    let read = ratios_of(&now, looks.confidence(), between);
    if read.is_empty() || !read.iter().all(|r| looks.decided(r)) {
        return None;
    }
    let at = looks.at();
    let look = at.iter().position(|r| *r == round).map_or(0, |i| i + 1);
    Some(format!(
        "decided after {round} rounds, at look {look} of {} (each ratio's interval excludes 1 or lies within ±{:.0} % of it)",
        at.len(),
        looks.margin * 100.0
    ))
}

/// Round `round`: one step of every search, in an order drawn from `rng`.
async fn run_round<S: Steps>(
    searchers: &mut [Searcher],
    steps: &mut [S],
    interleave: &Interleave,
    round: u32,
    rng: &mut Rng,
) -> Result<(), Error> {
    let order = shuffled(searchers.len(), rng);
    let names: Vec<&str> = order
        .iter()
        .map(|&i| searchers[i].search.name.as_str())
        .collect();
    if let Some(first) = steps.first_mut() {
        first.event(Event::Round {
            number: round,
            of: interleave.rounds,
            order: &names,
        });
    }
    for i in order {
        searchers[i].step(&mut steps[i], false, Some(round)).await?;
    }
    Ok(())
}

/// Ends every search for `reason` and keeps it: the searches, in order.
async fn finish_all<S: Steps>(
    searchers: Vec<Searcher>,
    steps: &mut [S],
    reason: &str,
) -> Result<Vec<analysis::capacity::Search>, Error> {
    let mut searches = Vec::with_capacity(searchers.len());
    for (mut searcher, steps) in searchers.into_iter().zip(steps.iter_mut()) {
        searcher.close(&format!("the comparison ended: {reason}"));
        searches.push(searcher.finish(steps).await?);
    }
    Ok(searches)
}

/// 0..n in a random order (Fisher–Yates).
fn shuffled(n: usize, rng: &mut Rng) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = ((rng.uniform() * (i + 1) as f64) as usize).min(i);
        order.swap(i, j);
    }
    order
}

#[cfg(test)]
mod tests {
    use super::super::world::{plan, Regime, World};
    use super::*;
    use analysis::capacity::compare::Ratio;

    /// `n` comparisons of the first world's server against one `speed` times as fast on the
    /// same host, `rounds` rounds each, from seed `first`.
    fn comparisons(speed: f64, n: u64, first: u64, rounds: u32) -> Vec<Ratio> {
        super::super::worlds::comparisons(Regime::FIRST, speed, n, first, rounds)
    }

    /// The share of `ratios` whose interval holds `truth`, and of those that say a difference.
    fn held(ratios: &[Ratio], truth: f64) -> (f64, f64) {
        let n = ratios.len() as f64;
        let (holds, differ) = super::super::worlds::held(ratios, truth);
        (holds as f64 / n, differ as f64 / n)
    }

    #[test]
    #[cfg_attr(
        debug_assertions,
        ignore = "hundreds of simulated comparisons: run with --release"
    )]
    fn an_aa_comparison_holds_1_and_an_ab_one_sees_10_percent() {
        // A/A: the same server twice on one drifting host; 16 rounds each.
        let aa = comparisons(1.0, 400, 100, 16);
        assert_eq!(aa.len(), 400);
        let (coverage, differ) = held(&aa, 1.0);
        let mut widths: Vec<f64> = aa.iter().filter_map(Ratio::half_width).collect();
        widths.sort_by(f64::total_cmp);
        eprintln!(
            "A/A: interval holds 1 in {:.1} %, a difference said in {:.1} %; median ±{:.2} %",
            coverage * 100.0,
            differ * 100.0,
            widths[widths.len() / 2] * 100.0
        );
        assert!((0.93..=0.97).contains(&coverage), "A/A coverage {coverage}");
        // A/B: one 10 % faster.
        let ab = comparisons(1.1, 200, 10_000, 16);
        let (coverage, differ) = held(&ab, 1.1);
        eprintln!(
            "A/B (1.10): interval holds 1.10 in {:.1} %, says b is faster in {:.1} %",
            coverage * 100.0,
            differ * 100.0
        );
        assert!(coverage >= 0.92, "A/B coverage {coverage}");
        assert!(differ >= 0.9, "A/B power {differ}");
    }

    #[test]
    fn a_search_its_rounds_could_not_narrow_ends_with_its_comparison_not_out_of_steps() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let a = World::new(7);
        let b = a.beside(1.0);
        let plans: Vec<Plan> = ["a", "b"]
            .iter()
            .map(|name| {
                let mut p = plan(0.5, 7);
                p.name = (*name).into();
                p.id = format!("{name}-7");
                // Narrower than 8 rounds can make it.
                p.settings.until = 0.001;
                p
            })
            .collect();
        let interleave = Interleave {
            id: "c-7".into(),
            rounds: 8,
            budget: None,
            seed: 7,
            looks: None,
            between: None,
        };
        let c = rt
            .block_on(compare(plans, &mut [a, b], &interleave))
            .unwrap();
        for s in &c.searches {
            assert_eq!(
                s.status,
                analysis::capacity::Status::Compared,
                "{}",
                s.reason
            );
            assert_eq!(s.status.as_str(), "ended with its comparison");
            assert!(s.reason.starts_with("the comparison ended"), "{}", s.reason);
        }
        assert_eq!(c.ratios.len(), 1);
    }

    #[test]
    #[ignore = "figures for docs/benchmarks/capacity.md: cargo test --release -p loadgen --lib compare_figures -- --ignored --nocapture"]
    fn compare_figures() {
        for rounds in [8, 16, 32] {
            for (speed, n) in [(1.0, 1_000), (1.1, 500)] {
                let done = comparisons(speed, n, 50_000, rounds);
                let (coverage, differ) = held(&done, speed);
                let mut widths: Vec<f64> = done.iter().filter_map(Ratio::half_width).collect();
                widths.sort_by(f64::total_cmp);
                let none = done.iter().filter(|r| r.low.is_none()).count();
                eprintln!(
                    "{rounds} rounds, true ratio {speed}: {n} comparisons, the interval held it in {:.1} %, a difference said in {:.1} %, no interval in {none}; median ±{:.2} %",
                    coverage * 100.0,
                    differ * 100.0,
                    widths.get(widths.len() / 2).copied().unwrap_or(1.0) * 100.0
                );
            }
        }
    }
}
