//! `loadgen history` on a store holding a synthetic history: sixteen nightly sittings of a
//! `go` target whose capacity fell 8 % at one revision and rose 5 % at a later one, beside an
//! A/A control that never changed, each sitting's figure drawn about its level with 1 % of
//! noise. The changes are found at their revisions, the control is left alone, and the exit
//! code answers "did something get worse lately?".
#![allow(clippy::unwrap_used)]

use analysis::capacity::random::Rng;
use serde_json::{json, Value};

const SITTINGS: usize = 16;
const DAY_NS: i64 = 86_400_000_000_000;

/// The revision main was at in sitting `i` (a new commit every night).
fn revision(i: usize) -> String {
    format!("origin/main at {:012x}", 0xa1b2_c3d4_0000u64 + i as u64)
}

/// A kept search of `target` in sitting `i` with capacity `rate` (±1 % its interval), from a
/// real search's body with its figures replaced.
fn search(template: &Value, target: &str, i: usize, rate: f64) -> Value {
    let mut s = template.clone();
    s["id"] = json!(format!("0190aaaa-0000-7000-8000-{i:06}{target}"));
    s["name"] = json!(format!("nightly target={target} #1"));
    s["experiment"] = json!("nightly");
    s["labels"] = json!({
        "target": target,
        "rate": "search",
        "sitting": format!("0190aaaa-0000-7000-8000-{i:012}"),
        "revision": revision(i),
    });
    s["estimates"] = json!([{
        "p": 0.5, "rate": rate, "low": rate * 0.99, "high": rate * 1.01,
        "confidence": 0.95, "dispersion": 1.0, "steps": 20, "passes": 10
    }]);
    s["capacity"] = json!(rate);
    s["started_at_ns"] = json!(1_790_000_000_000_000_000i64 + i as i64 * DAY_NS);
    s["updated_at_ns"] = s["started_at_ns"].clone();
    s
}

/// Keeps one search of each target in each sitting, with the capacities given.
fn keep(url: &str, figures: &[(&str, Vec<f64>)]) {
    let template: Value = serde_json::from_str(include_str!(
        "../../../analysis/src/capacity/testdata/users-go.json"
    ))
    .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let store = store::Store::open(url).await.unwrap();
        for (target, rates) in figures {
            for (i, rate) in rates.iter().enumerate() {
                let body = search(&template, target, i, *rate);
                let id = body["id"].as_str().unwrap().to_string();
                let name = body["name"].as_str().unwrap().to_string();
                let at = body["started_at_ns"].as_i64().unwrap();
                let row = store::kept::SearchRow {
                    id: &id,
                    name: &name,
                    experiment: Some("nightly"),
                    status: "found",
                    started_at_ns: at,
                    updated_at_ns: at,
                };
                store.put_kept_search(&row, &body).await.unwrap();
            }
        }
        store.close().await;
    });
}

/// go's level in sitting `i`: 8 % less capacity from sitting 6, 5 % more from sitting 11.
fn level(i: usize) -> f64 {
    match i {
        0..6 => 1000.0,
        6..11 => 1000.0 / 1.08,
        _ => 1000.0 / 1.08 * 1.05,
    }
}

fn keep_history(url: &str) {
    let mut rng = Rng::new(20261130);
    let (mut go, mut control) = (Vec::new(), Vec::new());
    for i in 0..SITTINGS {
        go.push(level(i) * (0.01 * rng.normal()).exp());
        control.push(1000.0 * (0.01 * rng.normal()).exp());
    }
    keep(url, &[("go", go), ("go-again", control)]);
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
        said.contains(
            "A change made go: capacity within the SLO worse within the last 10 sittings"
        ),
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
    keep(&url, &[("go", go), ("spin", spin), ("chase", chase)]);
    let history = |more: &[&str]| {
        let mut args = vec!["history", "--db", &url, "--experiment", "nightly"];
        args.extend_from_slice(more);
        crate::common::loadgen(&args)
    };
    let out = history(&["--reference", "spin", "--reference", "chase"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("go ÷ spin: capacity within the SLO: 16 sittings"),
        "{text}"
    );
    assert!(
        text.contains("divided by the reference spin run in the same sittings (16 of them)"),
        "{text}"
    );
    let regression = format!(
        "worse  between sitting #6 ({}) and #7 ({})",
        revision(5),
        revision(6)
    );
    assert!(text.contains(&regression), "{regression}\n{text}");

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
