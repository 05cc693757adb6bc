//! The graphs as drawn. A gate's: its candidate added 40 µs a request to one function
//! (`hash`), over 8 rounds with the host's noise: that path and its callers are red, the
//! functions that did not change are grey although their share of the samples fell, and every
//! box sits on its caller. A run's and a differential's: their functions named, escaped, and
//! every box on its caller.

use std::collections::BTreeMap;

use super::*;
use analysis::ab::functions::{call_tree, compare, Functions, Sampled};

/// A run: `parse` 60 µs, `hash` 20 µs + `added`, `log` 20 µs a request, each sampled at 5 a
/// µs, give or take the round's jitter.
fn run(added: f64, k: u64) -> Sampled {
    let jitter = |salt: u64| ((k * 7919 + salt * 104_729) % 9) as i64 - 4;
    let count = |us: f64, salt: u64| ((us * 5.0) as i64 + jitter(salt)) as u64;
    let hash = 20.0 + added;
    let stacks = [
        (vec!["main", "serve", "parse<&str>"], count(60.0, 1)),
        (vec!["main", "serve", "hash"], count(hash, 2)),
        (vec!["main", "log"], count(20.0, 3)),
    ];
    let cpu = (100.0 + added) * (1.0 + 0.004 * jitter(4) as f64);
    Sampled::of(stacks.iter().map(|(s, n)| (s.as_slice(), *n)), cpu)
}

fn graph(added: f64) -> (Functions, String) {
    let runs: Vec<(Sampled, Sampled)> =
        (0..8).map(|k| (run(0.0, k), run(added, k + 100))).collect();
    let rounds: Vec<_> = runs.iter().map(|(a, b)| (Some(a), Some(b))).collect();
    let f = Functions {
        tree: call_tree(&rounds),
        ..compare(&rounds).unwrap()
    };
    let svg = svg(&FlameData::of_estimates(&f, ("main", "slower"), "8 rounds").unwrap());
    (f, svg)
}

/// Each box's (name, fill, x, width, y).
fn boxes(svg: &str) -> Vec<(String, String, f64, f64, f64)> {
    let doc = roxmltree::Document::parse(svg).unwrap();
    doc.descendants()
        .filter(|n| n.has_tag_name("g"))
        .map(|g| {
            let title = g.children().find(|c| c.has_tag_name("title")).unwrap();
            let rect = g.children().find(|c| c.has_tag_name("rect")).unwrap();
            let num = |a: &str| rect.attribute(a).unwrap().parse::<f64>().unwrap();
            // The frame's name, which is also its title's first line on a gate's graph.
            let name = g.attribute("data-frame").unwrap();
            assert!(title.text().unwrap().starts_with(name));
            (
                name.to_string(),
                rect.attribute("fill").unwrap().to_string(),
                num("x"),
                num("width"),
                num("y"),
            )
        })
        .collect()
}

#[test]
fn only_the_paths_that_changed_beyond_noise_are_coloured() {
    let (_, svg) = graph(40.0);
    let b = boxes(&svg);
    let fill = |name: &str| b.iter().find(|x| x.0 == name).unwrap().1.clone();
    for changed in ["all", "main", "serve", "hash"] {
        assert!(
            fill(changed).starts_with("rgb(255,"),
            "{changed}: {}",
            fill(changed)
        );
    }
    // parse's share fell from 60 % to 43 %, its µs a request did not move: grey, not blue.
    assert_eq!(fill("parse<&str>"), "rgb(221,221,221)");
    assert_eq!(fill("log"), "rgb(221,221,221)");
    // The hover says both builds' µs and the interval.
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let hash = doc
        .descendants()
        .filter(|n| n.has_tag_name("title"))
        .map(|n| n.text().unwrap().to_string())
        .find(|t| t.starts_with("hash\n"))
        .unwrap();
    assert!(
        hash.contains("main: 20.") && hash.contains("slower: 60."),
        "{hash}"
    );
    assert!(
        hash.contains("change +40.") && hash.contains("beyond noise"),
        "{hash}"
    );
    assert!(svg.contains("named as changed"), "{svg}");
}

#[test]
fn every_box_sits_on_its_caller_and_is_as_wide_as_its_cpu() {
    let (f, svg) = graph(40.0);
    let b = boxes(&svg);
    let tree = f.tree.as_ref().unwrap();
    assert_eq!(b.len(), tree.paths.len());
    let root_width = b[0].3;
    for (p, (name, _, x, w, y)) in tree.paths.iter().zip(&b) {
        assert_eq!(*name, p.change.name);
        let expected = p.change.candidate_us / tree.paths[0].change.candidate_us * root_width;
        assert!(
            (w - expected.max(0.5)).abs() < 0.02,
            "{name}: {w} against {expected}"
        );
        if let Some(parent) = p.parent {
            let (_, _, px, pw, py) = &b[parent];
            assert!(
                *x >= px - 0.01 && x + w <= px + pw + 0.02,
                "{name} outside its caller"
            );
            assert!(
                (py - y - ROW).abs() < 1e-9,
                "{name} not one row above its caller"
            );
        }
    }
}

#[test]
fn an_unchanged_build_draws_every_box_grey() {
    let (f, svg) = graph(0.0);
    assert_eq!(f.tree.as_ref().unwrap().named().count(), 0);
    assert!(
        boxes(&svg).iter().all(|b| b.1 == "rgb(221,221,221)"),
        "{svg}"
    );
    assert!(svg.contains("0 of "), "{svg}");
}

fn folded(stacks: &[(&str, u64)]) -> BTreeMap<String, u64> {
    stacks.iter().map(|(s, n)| (s.to_string(), *n)).collect()
}

#[test]
fn a_runs_graph_names_its_functions_escaped_and_sits_every_box_on_its_caller() {
    let run = folded(&[
        ("srv;main;main;handle;<img src=x>", 70),
        ("srv;main;main;handle", 30),
    ]);
    let data = FlameData::of_folded("Where the CPU went", vec!["100 samples".into()], &run);
    let svg = svg(&data);
    assert!(!svg.contains("<img"), "a name is text, not markup");
    let b = boxes(&svg);
    let names: Vec<&str> = b.iter().map(|x| x.0.as_str()).collect();
    assert_eq!(
        names,
        ["all", "srv", "main", "main", "handle", "<img src=x>"]
    );
    assert!(b[5].0.starts_with("<img") && svg.contains("(70 samples, 70.00 %)"));
    for pair in b.windows(2) {
        let ((_, _, px, pw, py), (_, _, x, w, y)) = (&pair[0], &pair[1]);
        assert!((py - y - ROW).abs() < 1e-9 && *x >= px - 0.01 && x + w <= px + pw + 0.02);
    }
    assert!((b[0].3 - (WIDTH - 2.0 * MARGIN)).abs() < 1e-9);
    assert!((b[5].3 - 0.7 * b[0].3).abs() < 0.01);
}

#[test]
fn a_differential_is_drawn_from_the_same_data_its_boxes_coloured_by_change() {
    let before = folded(&[
        ("srv;main;main;handle;hash", 70),
        ("srv;main;main;handle", 30),
    ]);
    let after = folded(&[
        ("srv (child);w;main;handle;hash", 20),
        ("srv (child);w;main;handle", 80),
    ]);
    let data = FlameData::between("d", vec![], ("first", "second"), &before, &after);
    let svg = svg(&data);
    assert!(!svg.contains("srv"), "process frames are left out");
    let hash = boxes(&svg).into_iter().find(|b| b.0 == "hash").unwrap();
    assert_eq!(
        hash.1, "rgb(55,55,255)",
        "the largest fall, the deepest blue"
    );
    assert!(
        svg.contains("20.00 % in second; 70.00 % in first: −50.00 points"),
        "{svg}"
    );
}
