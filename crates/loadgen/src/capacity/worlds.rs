//! The worlds grid: the search's and the comparison's 95 % intervals checked on simulated
//! worlds that are not the easy one ([`super::world::Regime`]): knees 2, 10 and 30 % wide
//! (10 → 90 %), a host whose speed moves over 60 s so that steps close in time pass or fail
//! together (a dispersion φ about 1, 2 and 3), a trend of 7.5 % over 5 minutes, and steps of
//! 1 s after 0.3 s, a gate's. Each cell's coverage is a share of searches (or comparisons)
//! whose interval holds the truth, a missing end counting as a miss, with its Wilson interval.
//!
//! The suite runs two cells: a gate's steps on a moving host at a sharp knee, where the
//! intervals hold, and a knee 10 % wide on a host that moves as much, where the search's held
//! only once read against t over its clusters; the whole grid is
//! `cargo test --release -p loadgen --lib worlds_grid -- --ignored --nocapture`
//! (docs/benchmarks/capacity.md, "The worlds grid"; `WORLDS_SEARCHES=1` for the searches
//! alone, `WORLDS_RATIOS=1` for the comparisons alone, `WORLDS_N`, `WORLDS_KNEES`, `WORLDS_HOSTS`, `WORLDS_TRENDS` to choose the cells).

use super::compare::{compare, Interleave};
use super::search::{search, Plan};
use super::world::{on_two_threads, plan_in, Regime, Truth, World};
use analysis::capacity::compare::{Difference, Ratio};
use analysis::capacity::interval;

/// A share of `n` with its 95 % Wilson interval, as printed: "95.1 % (93.6–96.3)".
fn share(k: usize, n: usize) -> String {
    match interval::ratio(k as u64, n as u64) {
        Some(e) => format!(
            "{:.1} % ({:.1}–{:.1})",
            100.0 * e.value,
            100.0 * e.low,
            100.0 * e.high
        ),
        None => "–".into(),
    }
}

/// The median of `values` (0 when empty).
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

/// `n` comparisons in `regime` of a server against one `speed` times as fast on the same host,
/// `rounds` rounds each, from seed `first`: each comparison's ratio.
pub fn comparisons(regime: Regime, speed: f64, n: u64, first: u64, rounds: u32) -> Vec<Ratio> {
    comparisons_with(regime, speed, n, first, rounds, None)
        .into_iter()
        .map(|(r, _)| r)
        .collect()
}

/// [`comparisons`] read at `looks` where given, each with the rounds it ran.
pub fn comparisons_with(
    regime: Regime,
    speed: f64,
    n: u64,
    first: u64,
    rounds: u32,
    looks: Option<analysis::capacity::compare::Looks>,
) -> Vec<(Ratio, u32)> {
    let seeds: Vec<u64> = (first..first + n).collect();
    on_two_threads(&seeds, |rt, seed| {
        let a = World::in_regime(seed, regime);
        let b = a.beside(speed);
        let plans: Vec<Plan> = ["a", "b"]
            .iter()
            .map(|name| {
                let mut p = plan_in(0.5, seed, &regime);
                p.name = (*name).into();
                p.id = format!("{name}-{seed}");
                p.max_steps = 1_000;
                p
            })
            .collect();
        let interleave = Interleave {
            id: format!("c-{seed}"),
            rounds,
            budget: None,
            seed,
            looks,
            between: None,
        };
        rt.block_on(compare(plans, &mut [a, b], &interleave))
            .ok()
            .and_then(|c| c.ratios.into_iter().next().map(|r| (r, c.rounds)))
    })
    .into_iter()
    .flatten()
    .collect()
}

/// Of `ratios`: how many hold `truth` (both ends present), how many say a difference.
pub fn held(ratios: &[Ratio], truth: f64) -> (usize, usize) {
    let holds = ratios
        .iter()
        .filter(|r| r.low.is_some_and(|l| l <= truth) && r.high.is_some_and(|h| truth <= h))
        .count();
    let differ = ratios
        .iter()
        .filter(|r| matches!(r.difference(), Difference::Higher | Difference::Lower))
        .count();
    (holds, differ)
}

/// A cell's searches.
pub struct Searched {
    /// Of how many, how many had both ends, and how many held their truth.
    pub n: usize,
    pub shown: usize,
    pub held: usize,
    /// Of the same searches, how many held the true C_0.9 in the interval of the C_0.9 read
    /// from their curve (the "Also" figure of a search for C_0.5), a missing end a miss.
    pub nine_held: usize,
    /// How many read their knee wider than [`analysis::capacity::fit::WIDE_KNEE`] (and so
    /// carried its warning).
    pub wide: usize,
    /// The medians of the dispersion read, the half-width and the steps.
    pub dispersion: f64,
    pub half_width: f64,
    pub steps: f64,
}

/// `n` searches in `regime` from seed `first`, each judged against its own truth (C_0.5 over
/// the drifts its steps met).
pub fn searches(regime: Regime, n: u64, first: u64) -> Searched {
    let truth = Truth::new(4_000, 11, &regime);
    let seeds: Vec<u64> = (first..first + n).collect();
    let done = on_two_threads(&seeds, |rt, seed| {
        let mut world = World::in_regime(seed, regime);
        let s = rt
            .block_on(search(plan_in(0.5, seed, &regime), &mut world))
            .ok()?;
        let c = world.truth_of(&s, 0.5, &truth);
        let e = s.estimate()?;
        let shown = e.low.is_some() && e.high.is_some();
        let holds = e.low.is_some_and(|l| l <= c) && e.high.is_some_and(|h| c <= h);
        let nine = world.truth_of(&s, 0.9, &truth);
        let nine_holds = s
            .estimates
            .get(1)
            .is_some_and(|e| e.low.is_some_and(|l| l <= nine) && e.high.is_some_and(|h| nine <= h));
        Some((
            shown,
            holds,
            nine_holds,
            e.dispersion,
            e.half_width().unwrap_or(1.0),
            s.steps.len() as f64,
            e.wide_knee().is_some(),
        ))
    });
    let done: Vec<_> = done
        .into_iter()
        .map(|d| d.unwrap_or((false, false, false, 1.0, 1.0, 0.0, false)))
        .collect();
    Searched {
        n: done.len(),
        shown: done.iter().filter(|d| d.0).count(),
        held: done.iter().filter(|d| d.1).count(),
        nine_held: done.iter().filter(|d| d.2).count(),
        wide: done.iter().filter(|d| d.6).count(),
        dispersion: median(done.iter().map(|d| d.3).collect()),
        half_width: median(done.iter().map(|d| d.4).collect()),
        steps: median(done.iter().map(|d| d.5).collect()),
    }
}

/// Of `ratios`, how many have both ends.
pub fn shown(ratios: &[Ratio]) -> usize {
    ratios
        .iter()
        .filter(|r| r.low.is_some() && r.high.is_some())
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The grid's knees, hosts and trends: all of them, or those `WORLDS_KNEES`, `WORLDS_HOSTS`,
    /// `WORLDS_TRENDS` name (comma-separated numbers).
    fn listed(var: &str, all: &[f64]) -> Vec<f64> {
        std::env::var(var)
            .ok()
            .map(|v| v.split(',').filter_map(|x| x.trim().parse().ok()).collect())
            .unwrap_or_else(|| all.to_vec())
    }
    fn grid_knees() -> Vec<f64> {
        listed("WORLDS_KNEES", &[0.02, 0.10, 0.30])
    }
    fn grid_hosts() -> Vec<f64> {
        listed("WORLDS_HOSTS", &[0.0, 1.0, 2.5])
    }
    fn grid_trends() -> Vec<f64> {
        listed("WORLDS_TRENDS", &[0.0, 0.075])
    }

    /// `n` searches of `regime` from seed `first`: C_0.5's interval holds the truth in a share
    /// of them within `band`, a missing end a miss.
    fn searches_hold(regime: Regime, n: u64, first: u64, band: std::ops::RangeInclusive<f64>) {
        let found = searches(regime, n, first);
        let coverage = found.held as f64 / n as f64;
        eprintln!("C_0.5 held {}", share(found.held, found.n));
        assert!(band.contains(&coverage), "C_0.5 coverage {coverage}");
    }

    #[test]
    #[cfg_attr(
        debug_assertions,
        ignore = "hundreds of simulated searches: run with --release"
    )]
    fn on_a_gates_steps_with_a_moving_host_the_intervals_hold_what_they_claim() {
        // Steps of 1 s after 0.3 s, a knee 2 % wide, a host that moves 2 % over a minute and
        // trends 7.5 % over five: C_0.5's interval holds the truth (over the drifts its steps
        // met) in 93–99.5 % of searches, a missing end a miss; an A/A comparison's interval,
        // where it is shown (in at least 85 %), holds 1 in at least 95 %.
        let regime = Regime::gate(0.02, 2.5, 0.075);
        let n = 300;
        searches_hold(regime, n, 7_000, 0.93..=0.995);
        let aa = comparisons(regime, 1.0, n, 8_000, 16);
        let shown = shown(&aa);
        let (holds, _) = held(&aa, 1.0);
        eprintln!(
            "A/A: shown {}, held where shown {}",
            share(shown, n as usize),
            share(holds, shown)
        );
        assert!(shown as f64 >= 0.85 * n as f64, "shown {shown} of {n}");
        assert!(
            holds as f64 >= 0.95 * shown as f64,
            "held {holds} of {shown}"
        );
    }

    #[test]
    #[cfg_attr(
        debug_assertions,
        ignore = "hundreds of simulated searches: run with --release"
    )]
    fn at_a_knee_ten_percent_wide_on_a_moving_host_the_searchs_interval_holds() {
        // A knee 10 % wide, a host that moves as much over a minute (steps close in time vary
        // together about twice as much as independent ones): C_0.5's interval, read against t
        // over its clusters, holds the truth in 92–98 % of searches, a missing end a miss. Read
        // against χ²₁, as before, it held in 89.0 % of these same 300.
        // Seeds of its own: the grid's cell of the same world (seed 100,000) chose the method.
        searches_hold(Regime::gate(0.10, 1.0, 0.0), 300, 1_100_000, 0.92..=0.98);
    }

    #[test]
    #[cfg_attr(
        debug_assertions,
        ignore = "hundreds of simulated comparisons: run with --release"
    )]
    fn at_a_knee_ten_percent_wide_on_a_moving_host_a_paired_ratio_is_given_and_holds() {
        // A knee 10 % wide, a host that moves as much over a minute, 16 rounds: the ratio read
        // over its paired rounds holds 1 (A/A) in at least 88 % of comparisons, a missing end a
        // miss, and says a server 1.1× as fast is higher in at least half. Read as two figures'
        // dispersions over clusters of four rounds, as before, it held in 70.0 % and said
        // higher in 28.7 % (the grid, 2026-11-28).
        let regime = Regime::gate(0.10, 1.0, 0.0);
        let n = 300;
        // Seeds of its own: the grid's cell of the same world (200,000 and 300,000) chose the
        // method.
        let aa = comparisons(regime, 1.0, n, 1_200_000, 16);
        let (holds, _) = held(&aa, 1.0);
        let ab = comparisons(regime, 1.1, n, 1_300_000, 16);
        let (_, higher) = held(&ab, 1.1);
        eprintln!(
            "A/A held {}, A/B said higher {}",
            share(holds, aa.len()),
            share(higher, ab.len())
        );
        assert!(holds as f64 >= 0.88 * n as f64, "A/A held {holds} of {n}");
        assert!(
            higher as f64 >= 0.5 * n as f64,
            "A/B higher {higher} of {n}"
        );
    }

    #[test]
    #[cfg_attr(
        debug_assertions,
        ignore = "hundreds of simulated searches: run with --release"
    )]
    fn a_knee_wider_than_the_grid_proves_is_warned_of_and_a_sharp_one_is_not() {
        // A knee 2 % wide on a still host: few searches read it wider than 10 %. A knee 30 %
        // wide (where the interval held in 52–87 %): most do, and say so. Measured: 0 of 200
        // and 129 of 200 (the rest read sharper than they are: their steps few beside it).
        let sharp = searches(Regime::gate(0.02, 0.0, 0.0), 200, 2_300_000);
        let wide = searches(Regime::gate(0.30, 0.0, 0.0), 200, 2_400_000);
        eprintln!(
            "read wider than 10 %: {} of {} at a knee 2 % wide, {} of {} at 30 %",
            sharp.wide, sharp.n, wide.wide, wide.n
        );
        assert!(
            sharp.wide as f64 <= 0.05 * sharp.n as f64,
            "sharp: {}",
            sharp.wide
        );
        assert!(
            wide.wide as f64 >= 0.6 * wide.n as f64,
            "wide: {}",
            wide.wide
        );
    }

    #[test]
    #[cfg_attr(
        debug_assertions,
        ignore = "hundreds of simulated comparisons: run with --release"
    )]
    fn a_comparison_read_as_its_rounds_come_holds_95_percent_and_stops_early() {
        // The gate's world (a knee 2 % wide, a host moving 2.5 times as much over a minute),
        // read at 8, 16, 32 and 64 rounds, each look at 98.75 %, stopping once the ratio is
        // decided (its interval excludes 1 or lies within ±5 %): A/A intervals hold 1 in at
        // least 95 %, and a server 1.1× as fast is said higher in most, before the most rounds.
        let regime = Regime::gate(0.02, 2.5, 0.0);
        let looks = analysis::capacity::compare::Looks {
            most: 64,
            margin: 0.05,
        };
        let n = 200;
        let rounds_of = |done: &[(Ratio, u32)]| {
            let mut r: Vec<u32> = done.iter().map(|(_, r)| *r).collect();
            r.sort_unstable();
            r.get(r.len() / 2).copied().unwrap_or(0)
        };
        let aa = comparisons_with(regime, 1.0, n, 2_100_000, 64, Some(looks));
        let ab = comparisons_with(regime, 1.1, n, 2_200_000, 64, Some(looks));
        let (aa_held, _) = held(&aa.iter().map(|(r, _)| r.clone()).collect::<Vec<_>>(), 1.0);
        let ab_ratios: Vec<Ratio> = ab.iter().map(|(r, _)| r.clone()).collect();
        let (ab_held, higher) = held(&ab_ratios, 1.1);
        let decided = |done: &[(Ratio, u32)]| done.iter().filter(|(r, _)| looks.decided(r)).count();
        eprintln!(
            "sequential, looks at {:?} each at {:.4}: A/A held {} (decided {} of {n}, median {} rounds); \
             A/B 1.1 held {}, said higher {} (decided {}, median {} rounds)",
            looks.at(),
            looks.confidence(),
            share(aa_held, aa.len()),
            decided(&aa),
            rounds_of(&aa),
            share(ab_held, ab.len()),
            share(higher, ab.len()),
            decided(&ab),
            rounds_of(&ab),
        );
        assert!(
            aa_held as f64 >= 0.95 * n as f64,
            "A/A held {aa_held} of {n}"
        );
        assert!(
            ab_held as f64 >= 0.95 * n as f64,
            "A/B held {ab_held} of {n}"
        );
        assert!(
            higher as f64 >= 0.8 * n as f64,
            "A/B higher {higher} of {n}"
        );
        assert!(rounds_of(&ab) < 64, "A/B median rounds {}", rounds_of(&ab));
    }

    #[test]
    #[ignore = "the worlds grid for docs/benchmarks/capacity.md: cargo test --release -p loadgen --lib worlds_grid -- --ignored --nocapture"]
    fn worlds_grid() {
        let n = std::env::var("WORLDS_N")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1_000u64);
        eprintln!("| knee | host | trend | φ̂ | C_0.5 held | C_0.5 held where shown | ± | steps | C_0.9 held | A/A held | A/A held where shown | A/B 1.1 held | A/B held where shown | A/B said higher |");
        eprintln!("|---:|---:|---:|---:|---|---|---:|---:|---|---|---|---|---|---|");
        for knee in grid_knees() {
            for host in grid_hosts() {
                for trend in grid_trends() {
                    let regime = Regime::gate(knee, host, trend);
                    // WORLDS_RATIOS=1: the comparisons alone, the searches left out.
                    let alone = if std::env::var_os("WORLDS_RATIOS").is_some() {
                        0
                    } else {
                        n
                    };
                    let s = searches(regime, alone, 100_000);
                    // WORLDS_SEARCHES=1: the searches alone, the comparisons left out.
                    let pairs = if std::env::var_os("WORLDS_SEARCHES").is_some() {
                        0
                    } else {
                        n
                    };
                    let aa = comparisons(regime, 1.0, pairs, 200_000, 16);
                    let ab = comparisons(regime, 1.1, pairs, 300_000, 16);
                    let (aa_held, _) = held(&aa, 1.0);
                    let (ab_held, ab_differ) = held(&ab, 1.1);
                    eprintln!(
                        "| {:.0} % | {host} | {:.1} % | {:.2} | {} | {} | {:.1} % | {:.0} | {} | {} | {} | {} | {} | {} |",
                        knee * 100.0,
                        trend * 100.0,
                        s.dispersion,
                        share(s.held, s.n),
                        share(s.held, s.shown),
                        s.half_width * 100.0,
                        s.steps,
                        share(s.nine_held, s.n),
                        share(aa_held, aa.len()),
                        share(aa_held, shown(&aa)),
                        share(ab_held, ab.len()),
                        share(ab_held, shown(&ab)),
                        share(ab_differ, ab.len()),
                    );
                }
            }
        }
    }
}
