//! `loadgen history` on a store holding a synthetic history: sixteen nightly sittings of a
//! `go` target whose capacity fell 8 % at one revision and rose 5 % at a later one, beside an
//! A/A control that never changed, each sitting's figure drawn about its level with 1 % of
//! noise. The changes are found at their revisions, the control is left alone, and the exit
//! code answers "did something get worse lately?".
#![allow(clippy::unwrap_used)]

use analysis::capacity::random::Rng;
use serde_json::Value;

use crate::synthetic::{keep, level, no_host, record, revision};

const SITTINGS: usize = 16;

fn keep_history(url: &str) {
    let mut rng = Rng::new(20261130);
    let (mut go, mut control) = (Vec::new(), Vec::new());
    for i in 0..SITTINGS {
        go.push(level(i) * (0.01 * rng.normal()).exp());
        control.push(1000.0 * (0.01 * rng.normal()).exp());
    }
    keep(
        url,
        "nightly",
        &[("go", go), ("go-again", control)],
        no_host,
    );
}

#[test]
fn a_history_names_the_revisions_a_server_changed_between_and_gates_on_the_last_sittings() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("history.db").display());
    keep_history(&url);

    // `loadgen history` of the store's "nightly", with `more` flags.
    let history = |more: &[&str]| {
        let mut args = vec!["history", "--db", &url, "--experiment", "nightly"];
        args.extend_from_slice(more);
        crate::common::loadgen(&args)
    };
    let out = history(&[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("History of nightly: 16 sittings"), "{text}");
    // The regression, between the revisions of sittings 6 and 7 (5 and 6 from 0).
    let regression = format!(
        "worse  between sitting #6 ({}) and #7 ({}): ×0.9",
        revision(5),
        revision(6)
    );
    assert!(text.contains(&regression), "{regression}\n{text}");
    let improvement = format!(
        "better between sitting #11 ({}) and #12 ({}): ×1.0",
        revision(10),
        revision(11)
    );
    assert!(text.contains(&improvement), "{improvement}\n{text}");
    assert!(
        text.contains("go-again: capacity within the SLO: 16 sittings, no change"),
        "the A/A control changed: {text}"
    );

    // JSON: the same changes, with their sizes' intervals holding the true ones.
    let out = history(&["--output", "json"]);
    let h: Value = serde_json::from_slice(&out.stdout).unwrap();
    let series = h["series"].as_array().unwrap();
    let go = series.iter().find(|s| s["key"]["target"] == "go").unwrap();
    let changes = go["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 2, "{go}");
    for (c, truth, at) in [(&changes[0], 1.0 / 1.08, 6), (&changes[1], 1.05, 11)] {
        assert_eq!(c["at"], at);
        let (low, high) = (c["low"].as_f64().unwrap(), c["high"].as_f64().unwrap());
        assert!(low <= truth && truth <= high, "{c}");
    }

    // Markdown, for a job's summary.
    let out = history(&["--output", "markdown"]);
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(
        md.contains("| go: capacity within the SLO | ❌ worse |"),
        "{md}"
    );

    // The gate: the regression is 10 sittings back, the improvement 5: nothing worse in the
    // last 5, the regression within the last 10.
    let gate = |n: &str| history(&["--fail-within", n]);
    assert_eq!(gate("5").status.code(), Some(0));
    let out = gate("10");
    assert_eq!(out.status.code(), Some(4));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("A change made go: capacity within the SLO worse in the last 10 sittings"),
        "{said}"
    );

    // An experiment the store does not hold: one line that says so and what to do.
    let out = crate::common::loadgen(&["history", "--db", &url, "--experiment", "nightlly"]);
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("nothing of experiment \"nightlly\" is kept") && said.lines().count() == 1,
        "{said}"
    );
}

/// A host whose sittings differ by 8 % hides an 8 % regression in the raw figures; a spin
/// reference run in the same sittings moves with the host, and divided by it the regression is
/// found at its revision, the reference's spread said against the raw one.
#[test]
fn a_reference_run_in_every_sitting_takes_out_the_hosts_drift() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("history.db").display());
    let mut rng = Rng::new(5);
    let (mut go, mut spin, mut chase) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..SITTINGS {
        let host = 0.08 * rng.normal();
        go.push(level(i) * (host + 0.01 * rng.normal()).exp());
        spin.push(2000.0 * (host + 0.01 * rng.normal()).exp());
        // Slowed by something else than the server is.
        chase.push(300.0 * (0.08 * rng.normal()).exp());
    }
    keep(
        &url,
        "nightly",
        &[("go", go), ("spin", spin), ("chase", chase)],
        no_host,
    );
    let history = |more: &[&str]| {
        let mut args = vec!["history", "--db", &url, "--experiment", "nightly"];
        args.extend_from_slice(more);
        crate::common::loadgen(&args)
    };
    let out = history(&["--reference", "spin", "--reference", "chase"]);
    let text = String::from_utf8_lossy(&out.stdout);
    eprintln!("{text}");
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("go ÷ spin: capacity within the SLO: 16 sittings"),
        "{text}"
    );
    assert!(
        text.contains("divided by the reference spin run in the same sittings (16 of them), chosen on the first 8 and frozen since"),
        "{text}"
    );
    let regression = format!(
        "worse  between sitting #6 ({}) and #7 ({})",
        revision(5),
        revision(6)
    );
    assert!(text.contains(&regression), "{regression}\n{text}");

    // The file names its references (`[history] references`): the history divides by them
    // unasked, and `--raw` judges the targets' own figures.
    record(
        &url,
        "nightly",
        &["go", "spin", "chase"],
        &["spin", "chase"],
    );
    let out = history(&[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("go ÷ spin: capacity within the SLO"),
        "{text}"
    );
    let out = history(&["--raw"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success()
            && text.contains("go: capacity within the SLO: 16 sittings")
            && !text.contains('÷'),
        "{text}"
    );

    // A reference the history does not hold: said, with the targets it does.
    let out = history(&["--reference", "spinn"]);
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("no target \"spinn\" in the history of nightly")
            && said.contains("chase, go, spin"),
        "{said}"
    );
}

/// The nightly job's gate, `--fail-within 1`: a last sitting 15 % below the nine before it is a
/// possible change (too recent for a change point, which needs three sittings after it), said
/// with the sittings it still needs, and it fails the gate that night; the night after, the
/// change's first sitting is two back, so `--fail-within 1` passes and `--fail-within 2` fails.
#[test]
fn a_last_sitting_that_made_a_measure_worse_fails_the_nightly_gate_that_night() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("history.db").display());
    let mut rng = Rng::new(75);
    let mut go: Vec<f64> = (0..10)
        .map(|_| 1000.0 * (0.01 * rng.normal()).exp())
        .collect();
    let control: Vec<f64> = (0..11)
        .map(|_| 1000.0 * (0.01 * rng.normal()).exp())
        .collect();
    go[9] /= 1.15;
    keep(
        &url,
        "nightly",
        &[("go", go.clone()), ("go-again", control[..10].to_vec())],
        no_host,
    );
    let history = |more: &[&str]| {
        let mut args = vec!["history", "--db", &url, "--experiment", "nightly"];
        args.extend_from_slice(more);
        crate::common::loadgen(&args)
    };
    let out = history(&["--fail-within", "1"]);
    let said = String::from_utf8_lossy(&out.stderr);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(4), "{text}\n{said}");
    let night = format!(
        "A possible change (2 more sittings confirm or dismiss it) made go: capacity within the \
         SLO worse in the last sitting, between sitting #9 ({}) and #10 ({})",
        revision(8),
        revision(9)
    );
    assert!(said.contains(&night), "{said}");
    assert_eq!(said.lines().count(), 1, "the control is not named: {said}");
    assert!(
        text.contains("possibly worse between sitting #9")
            && text.contains("needs 2 more sittings to confirm"),
        "{text}"
    );
    let md = String::from_utf8_lossy(&history(&["--output", "markdown"]).stdout).to_string();
    assert!(
        md.contains(
            "| go: capacity within the SLO | ⚠️ possibly worse: needs 2 more sittings to confirm |"
        ),
        "{md}"
    );

    // The next night reads as low: the change is now two sittings back.
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("history.db").display());
    go.push(1000.0 / 1.15 * (0.01 * rng.normal()).exp());
    keep(
        &url,
        "nightly",
        &[("go", go), ("go-again", control)],
        no_host,
    );
    let history = |more: &[&str]| {
        let mut args = vec!["history", "--db", &url, "--experiment", "nightly"];
        args.extend_from_slice(more);
        crate::common::loadgen(&args)
    };
    assert_eq!(history(&["--fail-within", "1"]).status.code(), Some(0));
    let out = history(&["--fail-within", "2"]);
    assert_eq!(out.status.code(), Some(4));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("(1 more sitting confirms or dismisses it)"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
