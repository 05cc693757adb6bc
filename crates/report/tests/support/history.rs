//! A synthetic history kept in a store, for the tests of `loadgen history` and of the history
//! page: nightly sittings of an experiment, each with one kept search of each target (a real
//! search's body with its figures replaced), its sitting and revision labelled, and the host
//! its steps read.
#![allow(clippy::unwrap_used, dead_code)]

use serde_json::{json, Value};

pub const DAY_NS: i64 = 86_400_000_000_000;

/// The revision main was at in sitting `i` (a new commit every night).
pub fn revision(i: usize) -> String {
    format!("origin/main at {:012x}", 0xa1b2_c3d4_0000u64 + i as u64)
}

/// A target's level in sitting `i` of a history with two changes: 8 % less capacity from
/// sitting 6 (from 0), 5 % more from sitting 11.
pub fn level(i: usize) -> f64 {
    match i {
        0..6 => 1000.0,
        6..11 => 1000.0 / 1.08,
        _ => 1000.0 / 1.08 * 1.05,
    }
}

/// What the host read in sitting `i`'s steps: (steal %, a load from memory, ns).
pub type Host = fn(usize) -> Option<(f64, f64)>;

/// A kept search of `target` in sitting `i` of `experiment` with capacity `rate` (±1 % its
/// interval), its steps' host as `host` says.
fn search(
    template: &Value,
    experiment: &str,
    target: &str,
    i: usize,
    rate: f64,
    host: Host,
) -> Value {
    let mut s = template.clone();
    s["id"] = json!(format!("0190aaaa-0000-7000-8000-{i:06}{target}"));
    s["name"] = json!(format!("{experiment} target={target} #1"));
    s["experiment"] = json!(experiment);
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
    // Steps whose fit is `rate` (the history fits each search again from its steps): two at
    // each of 11 rates 0.4 % apart around it, passing below and failing above, one of the two
    // either way at the middle three, so that the fit's curve is symmetric about `rate`.
    let (pass, fail) = (template["steps"][1].clone(), template["steps"][0].clone());
    let mut steps = Vec::new();
    for k in -5i32..=5 {
        for again in [false, true] {
            let passed = k < 0 && !(k == -1 && again) || ((0..=1).contains(&k) && !again);
            let mut step = if passed { pass.clone() } else { fail.clone() };
            let number = steps.len() + 1;
            step["number"] = json!(number);
            step["round"] = json!(number);
            step["rate"] = json!(rate * (1.0 + 0.004 * f64::from(k)));
            steps.push(step);
        }
    }
    s["steps"] = json!(steps);
    s["started_at_ns"] = json!(1_790_000_000_000_000_000i64 + i as i64 * DAY_NS);
    s["updated_at_ns"] = s["started_at_ns"].clone();
    if let Some((steal, chase)) = host(i) {
        for step in s["steps"].as_array_mut().unwrap() {
            step["host"] = json!({
                "steal_pct": steal, "busy_pct": 60.0, "cpu_mhz": 2445.0, "chase_ns": chase
            });
        }
    }
    s
}

/// `f` run to its end on a runtime of its own.
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

/// No host read.
pub fn no_host(_: usize) -> Option<(f64, f64)> {
    None
}

/// Keeps one search of each target in each sitting of `experiment`, with the capacities given.
pub fn keep(url: &str, experiment: &str, figures: &[(&str, Vec<f64>)], host: Host) {
    let template: Value = serde_json::from_str(include_str!(
        "../../../analysis/src/capacity/testdata/users-go.json"
    ))
    .unwrap();
    block_on(async {
        let store = store::Store::open(url).await.unwrap();
        for (target, rates) in figures {
            for (i, rate) in rates.iter().enumerate() {
                let body = search(&template, experiment, target, i, *rate, host);
                let id = body["id"].as_str().unwrap().to_string();
                let name = body["name"].as_str().unwrap().to_string();
                let at = body["started_at_ns"].as_i64().unwrap();
                let row = store::kept::SearchRow {
                    id: &id,
                    name: &name,
                    experiment: Some(experiment),
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

/// Keeps `experiment`'s record, as the runner does, its file naming `references` in
/// `[history] references`.
pub fn record(url: &str, experiment: &str, targets: &[&str], references: &[&str]) {
    block_on(async {
        let store = store::Store::open(url).await.unwrap();
        let record = store::experiment::ExperimentRecord {
            name: experiment.into(),
            question: "Since which commit did go get slower?".into(),
            file_label: "f1".into(),
            scale: 1.0,
            definition: store::experiment::Definition {
                targets: targets.iter().map(|t| t.to_string()).collect(),
                references: references.iter().map(|t| t.to_string()).collect(),
                history_measures: Vec::new(),
                history_level: None,
                ..Default::default()
            },
            verification: Vec::new(),
            updated_at_ns: 1_790_000_000_000_000_000,
        };
        store.put_experiment(&record).await.unwrap();
        store.close().await;
    });
}
