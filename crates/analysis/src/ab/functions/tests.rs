//! The estimator on simulated profiles: a server of 300 functions whose CPU per request falls
//! off by rank (a few take most of it, a long tail a sample or two a run), on the host of
//! [`super::super::tests`]' simulated sittings (the CPU per request drifts from run to run, an
//! Ornstein–Uhlenbeck process of sd 4 % and correlation time 6 runs, plus 2 % of noise a run,
//! and one run in 50 stalled, +15 %; each round's builds in a random order), each run's profile
//! 3,000 samples drawn at the functions' true shares, 8 rounds a sitting; with and without a
//! real change to one function.

use super::*;
use crate::capacity::random::Rng;

pub(super) const FUNCTIONS: usize = 300;
const SAMPLES: usize = 3_000;
const ROUNDS: usize = 8;
/// The server's CPU per request, µs, before any change.
const CPU_US: f64 = 200.0;

/// Each function's CPU per request, µs: rank i takes a share ∝ 1 / (i + 1)^1.1.
pub(super) fn server() -> Vec<f64> {
    let w: Vec<f64> = (0..FUNCTIONS)
        .map(|i| 1.0 / ((i + 1) as f64).powf(1.1))
        .collect();
    let sum: f64 = w.iter().sum();
    w.iter().map(|x| x / sum * CPU_US).collect()
}

/// Function i's stack: `main`, one of ten callers, then the function itself.
fn stack(i: usize) -> Vec<String> {
    vec!["main".into(), format!("caller{}", i % 10), format!("f{i}")]
}

/// One run of a server whose functions take `us` µs a request, on a host at `host` (its
/// factor on every function's CPU): its profile of [`SAMPLES`] samples at the true shares.
fn run(rng: &mut Rng, us: &[f64], host: f64) -> Sampled {
    sampled(rng, us, host, SAMPLES)
}

/// [`run`] with `samples` samples.
pub(super) fn sampled(rng: &mut Rng, us: &[f64], host: f64, samples: usize) -> Sampled {
    let sum: f64 = us.iter().sum();
    let mut cumulative = Vec::with_capacity(us.len());
    let mut acc = 0.0;
    for u in us {
        acc += u / sum;
        cumulative.push(acc);
    }
    let mut counts = vec![0u64; us.len()];
    for _ in 0..samples {
        let x = rng.uniform();
        let i = cumulative.partition_point(|c| *c < x).min(us.len() - 1);
        counts[i] += 1;
    }
    let stacks: Vec<(Vec<String>, u64)> = counts
        .iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .map(|(i, n)| (stack(i), *n))
        .collect();
    let frames: Vec<(Vec<&str>, u64)> = stacks
        .iter()
        .map(|(s, n)| (s.iter().map(String::as_str).collect(), *n))
        .collect();
    Sampled::of(frames, sum * host)
}

/// A sitting of [`ROUNDS`] rounds, the candidate's function `changed` taking `delta` µs more,
/// compared function by function.
fn sitting(rng: &mut Rng, changed: usize, delta: f64) -> Functions {
    let runs = sitting_runs(rng, changed, delta);
    compare(&paired(&runs)).unwrap()
}

/// The same sitting's call tree, with its functions' figures.
fn sitting_tree(rng: &mut Rng, changed: usize, delta: f64) -> (Functions, CallTree) {
    let runs = sitting_runs(rng, changed, delta);
    let rounds = paired(&runs);
    (compare(&rounds).unwrap(), call_tree(&rounds).unwrap())
}

fn paired(runs: &[(Sampled, Sampled)]) -> Vec<(Option<&Sampled>, Option<&Sampled>)> {
    runs.iter().map(|(a, b)| (Some(a), Some(b))).collect()
}

/// Each round's (baseline, candidate) runs of such a sitting.
fn sitting_runs(rng: &mut Rng, changed: usize, delta: f64) -> Vec<(Sampled, Sampled)> {
    sitting_runs_noisy(rng, changed, delta, None)
}

/// [`sitting_runs`], with `noisy`'s function (its rank, and the sd of its log) drawn afresh
/// for each run: a function far noisier than the others.
fn sitting_runs_noisy(
    rng: &mut Rng,
    changed: usize,
    delta: f64,
    noisy: Option<(usize, f64)>,
) -> Vec<(Sampled, Sampled)> {
    let base = server();
    let mut cand = base.clone();
    cand[changed] += delta;
    let run = |rng: &mut Rng, us: &[f64], host: f64| {
        let mut us = us.to_vec();
        if let Some((i, sd)) = noisy {
            us[i] *= (sd * rng.normal()).exp();
        }
        run(rng, &us, host)
    };
    let phi: f64 = (-1.0f64 / 6.0).exp();
    let mut level = 0.04 * rng.normal();
    let runs: Vec<(Sampled, Sampled)> = (0..ROUNDS)
        .map(|_| {
            let mut host = |rng: &mut Rng| {
                level = phi * level + 0.04 * (1.0 - phi * phi).sqrt() * rng.normal();
                let stall = if rng.uniform() < 0.02 { 0.15 } else { 0.0 };
                (level + 0.02 * rng.normal() + stall).exp()
            };
            if rng.uniform() < 0.5 {
                let hb = host(rng);
                let hc = host(rng);
                (run(rng, &base, hb), run(rng, &cand, hc))
            } else {
                let hc = host(rng);
                let hb = host(rng);
                (run(rng, &base, hb), run(rng, &cand, hc))
            }
        })
        .collect();
    runs
}

fn own<'a>(f: &'a Functions, name: &str) -> &'a FunctionChange {
    f.own.iter().find(|c| c.name == name).unwrap()
}

#[test]
fn a_functions_own_and_total_samples_count_a_recursing_stack_once() {
    let run = Sampled::of(
        [
            (vec!["main", "walk", "walk", "hash"], 6),
            (vec!["main", "walk"], 2),
            (vec!["main", "[unknown]"], 2),
            (vec![], 5),
        ],
        100.0,
    );
    assert_eq!(run.samples, 10);
    assert_eq!(run.own["hash"], 6);
    assert_eq!(run.own["walk"], 2);
    assert_eq!(run.total["walk"], 8);
    assert_eq!(run.total["main"], 10);
    assert_eq!(run.unnamed, 2);
    // hash: 60 % of the samples of a run at 100 µs a request.
    assert_eq!(run.per_request(run.own["hash"]), Some(60.0));
}

/// The changed function (rank 20: 1.3 µs a request before, 11.3 after, 5 % of the server's
/// CPU) is named in every sitting, with an interval that holds its change at least as often as
/// the intervals' level promises; an unchanged function's plain 95 % interval holds 0 about 95
/// times in 100.
#[test]
fn a_changed_function_is_named_and_its_interval_holds_its_change() {
    let mut rng = Rng::new(58);
    let (sittings, delta) = (300, 10.0);
    let (mut named, mut held, mut quiet_held) = (0, 0, 0);
    for _ in 0..sittings {
        let f = sitting(&mut rng, 20, delta);
        let c = own(&f, "f20");
        if c.named {
            named += 1;
            held += usize::from((c.low_us..=c.high_us).contains(&delta));
        }
        // Rank 5 (about 10 µs a request) did not change.
        let q = own(&f, "f5");
        quiet_held += usize::from((q.low_us..=q.high_us).contains(&0.0));
        assert!(f.total.iter().any(|t| t.name == "f20"), "{f:?}");
    }
    eprintln!(
        "f20 +{delta} µs: named in {named} of {sittings}, its interval held it in {held}; \
         f5's 95 % interval held 0 in {quiet_held}"
    );
    assert_eq!(named, sittings, "named in {named} of {sittings}");
    assert!(held as f64 >= 0.93 * named as f64, "held {held} of {named}");
    // 95 % of 300: 285, binomial sd 3.8.
    assert!(
        (274..=296).contains(&quiet_held),
        "0 held {quiet_held} of {sittings}"
    );
}

/// With no change (an A/A sitting), a sitting names a function at most about 5 times in 100
/// (under the null, the false discovery rate is the chance of naming any); with one real
/// change, the functions named that did not change are on average at most about 5 % of those
/// named.
#[test]
fn noise_names_no_function_but_at_the_false_discovery_rate() {
    let mut rng = Rng::new(5858);
    let sittings = 300;
    let any = (0..sittings)
        .filter(|_| sitting(&mut rng, 20, 0.0).named().count() > 0)
        .count();
    // 5 % of 300: 15, binomial sd 3.8.
    assert!(
        any <= 26,
        "A/A sittings naming a function: {any} of {sittings}"
    );
    let mut false_share = 0.0;
    for _ in 0..sittings {
        let f = sitting(&mut rng, 20, 10.0);
        let named: Vec<&FunctionChange> = f.named().collect();
        let wrong = named.iter().filter(|c| c.name != "f20").count();
        false_share += wrong as f64 / named.len().max(1) as f64;
    }
    let fdr = false_share / sittings as f64;
    eprintln!("A/A sittings naming a function: {any} of {sittings}; false discovery rate {fdr:.4}");
    assert!(fdr <= 0.07, "false discovery rate {fdr}");
}

/// The variances moderated across the functions (a trend in the function's level, its prior
/// degrees of freedom estimated) against each function's own seven degrees of freedom, on the
/// same sittings: A/A sittings name a function at most 5 times in 100; the intervals are
/// narrower (the 95 % ones of the functions tested, and a named function's at its
/// false-coverage-rate level) and a small change is named more often.
#[test]
fn moderated_variances_narrow_the_intervals_and_keep_the_rate() {
    let mut rng = Rng::new(5959);
    let sittings = 300;
    let (mut any, mut any_plain) = (0, 0);
    let mut ratios = Vec::new();
    let (mut priors, mut hides) = (Vec::new(), Vec::new());
    for _ in 0..sittings {
        let runs = sitting_runs(&mut rng, 20, 0.0);
        let (m, p) = (
            compare_with(&paired(&runs), true).unwrap(),
            compare_with(&paired(&runs), false).unwrap(),
        );
        any += usize::from(m.named().count() > 0);
        any_plain += usize::from(p.named().count() > 0);
        priors.push(m.prior.unwrap_or(0.0));
        hides.push(m.could_hide_us() / p.could_hide_us());
        for c in &m.own[..m.tested] {
            let plain = own(&p, &c.name);
            if plain.high_us > plain.difference_us {
                ratios.push((c.high_us - c.difference_us) / (plain.high_us - plain.difference_us));
            }
        }
    }
    let median = |xs: &mut Vec<f64>| {
        xs.sort_by(f64::total_cmp);
        xs[xs.len() / 2]
    };
    let width = median(&mut ratios);
    let prior = median(&mut priors);
    let hide = median(&mut hides);
    // A small change, +1 µs a request (0.5 % of the server's CPU): how often named, and the
    // named interval's width where both name it.
    let (mut named, mut named_plain, mut held) = (0, 0, 0);
    let mut named_ratios = Vec::new();
    for _ in 0..sittings {
        let runs = sitting_runs(&mut rng, 20, 1.0);
        let (m, p) = (
            compare_with(&paired(&runs), true).unwrap(),
            compare_with(&paired(&runs), false).unwrap(),
        );
        let (c, q) = (own(&m, "f20"), own(&p, "f20"));
        named += usize::from(c.named);
        named_plain += usize::from(q.named);
        if c.named {
            held += usize::from((c.low_us..=c.high_us).contains(&1.0));
        }
        if c.named && q.named {
            named_ratios.push((c.high_us - c.low_us) / (q.high_us - q.low_us));
        }
    }
    let named_width = if named_ratios.is_empty() {
        f64::NAN
    } else {
        median(&mut named_ratios)
    };
    eprintln!(
        "A/A naming a function: {any} of {sittings} moderated, {any_plain} each its own; \
         prior df median {prior:.1}; 95 % intervals {width:.3}× as wide (median); could have \
         hidden {hide:.3}× as much; +1 µs named \
         in {named} (held in {held}) against {named_plain}, its interval {named_width:.3}× as \
         wide where both named it"
    );
    // 5 % of 300: 15, binomial sd 3.8.
    assert!(any <= 15 + 8, "A/A naming: {any} of {sittings}");
    assert!(width <= 0.9, "95 % intervals {width:.3}× as wide");
    assert!(hide <= 0.9, "could have hidden {hide:.3}× as much");
    assert!(
        named >= 2 * named_plain,
        "named {named} against {named_plain}"
    );
    assert!(
        named_width <= 0.8,
        "named intervals {named_width:.3}× as wide"
    );
    assert!(held as f64 >= 0.93 * named as f64, "held {held} of {named}");
}

/// A function far noisier than the others (rank 10, 4 µs a request, its CPU per request
/// varying 40 % from run to run) is not named by its own noise: it keeps its own variance.
#[test]
fn a_function_noisier_than_the_others_keeps_its_own_spread() {
    let mut rng = Rng::new(6060);
    let sittings = 300;
    let (mut any, mut noisy_named) = (0, 0);
    for _ in 0..sittings {
        let runs = sitting_runs_noisy(&mut rng, 20, 0.0, Some((10, 0.4)));
        let f = compare(&paired(&runs)).unwrap();
        any += usize::from(f.named().count() > 0);
        noisy_named += usize::from(own(&f, "f10").named);
    }
    eprintln!(
        "A/A with a noisy function: {any} of {sittings} named one, the noisy one {noisy_named}"
    );
    assert!(any <= 15 + 8, "A/A naming: {any} of {sittings}");
    assert!(
        noisy_named <= 5,
        "the noisy function named in {noisy_named}"
    );
}

#[test]
fn the_sentence_names_the_change_and_what_was_tested_and_what_had_no_symbol() {
    let mut rng = Rng::new(7);
    let f = sitting(&mut rng, 20, 10.0);
    let s = f.sentence();
    assert!(s.contains("`f20` +"), "{s}");
    assert!(s.contains("nothing else moved beyond noise"), "{s}");
    assert!(s.contains("functions' own CPU tested over 8 rounds"), "{s}");
    assert!(s.contains("5 % false discovery rate"), "{s}");
    let quiet = sitting(&mut rng, 20, 0.0);
    if quiet.named().count() == 0 {
        assert!(
            quiet
                .sentence()
                .starts_with("no function's CPU per request moved"),
            "{}",
            quiet.sentence()
        );
    }
    // A build whose samples are a third without a symbol: said, not guessed.
    let mut stripped = f.clone();
    stripped.unnamed = (0.0, 0.33);
    assert!(stripped
        .sentence()
        .contains("33 % of the samples had no symbol"));
}

#[test]
fn rounds_without_a_profile_are_left_out_and_said() {
    let mut rng = Rng::new(9);
    let us = server();
    let runs: Vec<Sampled> = (0..8).map(|_| run(&mut rng, &us, 1.0)).collect();
    let unprofiled = Sampled::default();
    let rounds = vec![
        (Some(&runs[0]), Some(&runs[1])),
        (Some(&runs[2]), None),
        (Some(&unprofiled), Some(&runs[3])),
        (Some(&runs[4]), Some(&runs[5])),
        (Some(&runs[6]), Some(&runs[7])),
    ];
    let f = compare(&rounds).unwrap();
    assert_eq!((f.rounds, f.unprofiled), (3, 2));
    assert!(f
        .sentence()
        .contains("(2 left out: a run without a profile)"));
    assert!(
        compare(&rounds[..3]).is_none(),
        "one round of both: no interval"
    );
}

/// The call tree (what the differential flame graph is drawn from): the changed function's
/// path and its callers' are named, with intervals that hold the change; every kept path comes
/// after its caller and is no wider than it; paths off the changed branch are named at most at
/// the false discovery rate, and an A/A sitting names a path about 5 times in 100.
#[test]
fn the_call_tree_names_the_changed_path_and_its_callers_and_noise_only_at_the_rate() {
    let mut rng = Rng::new(5800);
    let (sittings, delta) = (200, 10.0);
    let changed = ["all", "main", "caller0", "f20"];
    let (mut named, mut held, mut false_share) = (0, 0, 0.0);
    for _ in 0..sittings {
        let (f, tree) = sitting_tree(&mut rng, 20, delta);
        assert_eq!(tree.paths[0].parent, None);
        for (i, p) in tree.paths.iter().enumerate().skip(1) {
            let parent = p.parent.unwrap();
            assert!(parent < i, "{p:?}");
            let caller = &tree.paths[parent].change;
            assert!(
                p.change.candidate_us <= caller.candidate_us + 1e-9,
                "{p:?} {caller:?}"
            );
        }
        // The whole is the server's CPU per request.
        assert!((tree.paths[0].change.difference_us - f.cpu_difference_us).abs() < 1e-9);
        let leaf = tree
            .paths
            .iter()
            .find(|p| p.change.name == "f20")
            .expect("f20's path is kept");
        if leaf.change.named {
            named += 1;
            held += usize::from((leaf.change.low_us..=leaf.change.high_us).contains(&delta));
        }
        let all: Vec<&PathChange> = tree.named().collect();
        let wrong = all
            .iter()
            .filter(|p| !changed.contains(&p.change.name.as_str()))
            .count();
        false_share += wrong as f64 / all.len().max(1) as f64;
        assert!(tree.tested >= tree.paths.len());
    }
    let aa = (0..sittings)
        .filter(|_| sitting_tree(&mut rng, 20, 0.0).1.named().count() > 0)
        .count();
    let fdr = false_share / sittings as f64;
    eprintln!(
        "path of f20 +{delta} µs: named in {named} of {sittings}, held in {held}; \
         false discovery rate {fdr:.4}; A/A sittings naming a path: {aa} of {sittings}"
    );
    assert!(named >= sittings - 2, "named in {named} of {sittings}");
    assert!(held as f64 >= 0.93 * named as f64, "held {held} of {named}");
    assert!(fdr <= 0.07, "false discovery rate {fdr}");
    // 5 % of 200: 10, binomial sd 3.1.
    assert!(aa <= 19, "A/A sittings naming a path: {aa} of {sittings}");
}
