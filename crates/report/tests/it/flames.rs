//! Every flame graph is drawn twice from one value, a `FlameData`: as SVG by `report::flame`
//! (the page's picture without script, and the file beside the page) and by the pages' script
//! (`flameSvg` in `assets/showdown.js`, run here in Node with the harness of its own tests,
//! `tools/js/test/harness.js`), which adds the zoom and the search. Unzoomed, the two drawings
//! are the same text, character for character, for each kind of graph: a run's profile (with a
//! path too narrow to draw, and names that must be escaped), a run's stacks against another's,
//! and a gate's call paths drawn from their estimates.

use std::collections::BTreeMap;

use analysis::ab::functions::{call_tree, compare, Functions, Sampled};
use report::model::flame::FlameData;

fn folded(stacks: &[(&str, u64)]) -> BTreeMap<String, u64> {
    stacks.iter().map(|(s, n)| (s.to_string(), *n)).collect()
}

/// The script's drawing of `data`, unzoomed, with nothing searched for.
fn scripts(data: &FlameData) -> String {
    super::numbers::script_writes("script.flameSvg(input, 0, '')", data)
}

fn same_drawing(kind: &str, data: &FlameData) {
    let rust = report::flame::svg(data);
    let script = scripts(data);
    assert!(rust.contains("<rect"), "{kind}: no box drawn: {rust}");
    assert_eq!(rust, script, "{kind}: the script draws it otherwise");
}

/// A round of a gate's run: `parse` 60 µs, `hash` 20 µs + `added`, `log` 20 µs a request.
fn round(added: f64, k: u64) -> Sampled {
    let jitter = |salt: u64| ((k * 7919 + salt * 104_729) % 9) as i64 - 4;
    let count = |us: f64, salt: u64| ((us * 5.0) as i64 + jitter(salt)) as u64;
    let stacks = [
        (vec!["main", "serve", "parse<&str>"], count(60.0, 1)),
        (vec!["main", "serve", "hash"], count(20.0 + added, 2)),
        (vec!["main", "log"], count(20.0, 3)),
    ];
    let cpu = (100.0 + added) * (1.0 + 0.004 * jitter(4) as f64);
    Sampled::of(stacks.iter().map(|(s, n)| (s.as_slice(), *n)), cpu)
}

#[test]
fn the_svg_and_the_script_draw_every_kind_of_flame_graph_alike() {
    let run = folded(&[
        (
            "node;main;main;handle;<img src=x onerror=\"alert(1)\">",
            7_000,
        ),
        ("node;main;main;handle;hash 🔥 ünïcode", 2_345),
        ("node;main;main;handle", 654),
        ("node;main;main;a_rare;deeper", 1),
        ("node;libuv;uv__io_poll", 1_000),
        // An empty frame (a stack written `a;;b`): no label in either drawing.
        ("node;libuv;;epoll_wait", 500),
    ]);
    let profile = FlameData::of_folded(
        "Where the CPU went: node",
        vec!["11,000 samples".into()],
        &run,
    );
    assert!(profile.hidden > 0.0, "the rare path is too narrow to draw");
    same_drawing("a run's profile", &profile);

    let cluster = folded(&[
        ("node (worker);w;main;handle;hash 🔥 ünïcode", 5_000),
        ("node (worker);w;main;handle", 2_000),
        ("node (worker);w;main;0x7f3a11", 300),
    ]);
    let between = FlameData::between("#2 against #1", vec![], ("#1", "#2"), &run, &cluster);
    same_drawing("a differential", &between);

    let rounds: Vec<(Sampled, Sampled)> = (0..8)
        .map(|k| (round(0.0, k), round(40.0, k + 100)))
        .collect();
    let pairs: Vec<_> = rounds.iter().map(|(a, b)| (Some(a), Some(b))).collect();
    let functions = Functions {
        tree: call_tree(&pairs),
        ..compare(&pairs).unwrap()
    };
    let gate = FlameData::of_estimates(&functions, ("main", "pr"), "8 rounds").unwrap();
    same_drawing("a gate's estimates", &gate);
}
