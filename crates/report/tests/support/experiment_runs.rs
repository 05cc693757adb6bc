//! An experiment kept the way the runner keeps one, drawn: fast (300 µs) and slow (3 ms) at 100
//! and 200 req/s, two repetitions each, slow's second repetition at 200 failed, a warm-up and a
//! run of an older file beside them.
#![allow(dead_code, clippy::unwrap_used)]

use super::runs::{self, Spec, HOSTILE};
use report::site::{self, SiteOptions};
use store::experiment::{Definition, ExperimentRecord, Verification};
use store::Store;

const T0: i64 = 1_795_000_000_000_000_000;

fn cell(target: &'static str, rate: u64, base_us: u64, rep: u32, phase: &str, file: &str) -> Spec {
    let mut spec = Spec::new("cell", base_us)
        .label("target", target)
        .label("rate", &rate.to_string())
        .label("repetition", &rep.to_string())
        .label("cell", &format!("target={target} rate={rate}"))
        .label("phase", phase)
        .label("file", file)
        .label("scale", "1");
    spec.experiment = Some("exp");
    spec.rate = rate;
    spec.seconds = 5;
    spec
}

pub struct Drawn {
    pub dir: tempfile::TempDir,
    pub page: String,
    pub page_path: std::path::PathBuf,
    pub store: Store,
    pub ids: Vec<(String, &'static str, u64)>,
}

pub async fn drawn() -> Drawn {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/showdown.db", dir.path().display());
    let store = Store::open(&db).await.unwrap();
    let mut at = T0;
    let mut ids = Vec::new();
    for rep in 1..=2 {
        for rate in [100, 200] {
            for (target, base) in [
                ("fast", 300 + 40 * rep as u64),
                ("slow", 3000 + 100 * rep as u64),
            ] {
                at += 10_000_000_000;
                let id =
                    runs::write(&store, &cell(target, rate, base, rep, "measure", "f1"), at).await;
                if target == "slow" && rate == 200 && rep == 2 {
                    store
                        .fail_run(&id, "the target exited with code 1", at)
                        .await
                        .unwrap();
                }
                ids.push((id, target, rate));
            }
        }
    }
    runs::write(&store, &cell("fast", 100, 300, 1, "warmup", "f1"), at + 1).await;
    runs::write(
        &store,
        &cell("fast", 100, 50_000, 1, "measure", "f0-older"),
        at + 2,
    )
    .await;
    store
        .put_experiment(&ExperimentRecord {
            name: "exp".into(),
            question: format!("Which is faster, {HOSTILE}?"),
            file_label: "f1".into(),
            scale: 1.0,
            definition: Definition {
                searched: Vec::new(),
                compared: false,
                sitting: None,
                references: Vec::new(),
                history_measures: Vec::new(),
                history_level: None,
                source: Some("a test".into()),
                targets: vec!["fast".into(), "slow".into()],
                axes: vec![("rate".into(), vec!["100".into(), "200".into()])],
                repetitions: 2,
                placement: "generator pinned to CPU 0".into(),
                file: "name = \"exp\"".into(),
            },
            verification: vec![Verification {
                against: store::experiment::Against::Contract,
                target: "fast".into(),
                passed: true,
                checks: vec![("GET /now".into(), store::vocabulary::Outcome::Passed)],
            }],
            updated_at_ns: at,
        })
        .await
        .unwrap();
    draw(dir, store, ids, "exp").await
}

/// The site drawn from `store`, and experiment `name`'s page.
async fn draw(
    dir: tempfile::TempDir,
    store: Store,
    ids: Vec<(String, &'static str, u64)>,
    name: &str,
) -> Drawn {
    let out = dir.path().join("site");
    let site = site::write(
        &store,
        &SiteOptions {
            out,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let page_path = site.experiment_pages[name].clone();
    let page = std::fs::read_to_string(&page_path).unwrap();
    Drawn {
        dir,
        page,
        page_path,
        store,
        ids,
    }
}

/// Where fast and slow spend their CPU: slow in a function of its own.
const FAST_STACKS: &[(&str, u64)] = &[
    ("srv;main;main;handle", 200),
    ("srv;main;main;handle;parse", 50),
];
const SLOW_STACKS: &[(&str, u64)] = &[
    ("srv;main;main;handle", 60),
    ("srv;main;main;handle;parse", 10),
    ("srv;main;main;handle;json_encode_slowly", 180),
];

/// A closed-loop experiment: fast answers four times as many requests as slow over 10
/// connections, two repetitions each, each held to one CPU and profiled.
pub async fn drawn_closed() -> Drawn {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/showdown.db", dir.path().display());
    let store = Store::open(&db).await.unwrap();
    let mut at = T0;
    let mut ids = Vec::new();
    for rep in 1..=2u32 {
        for (target, base, served, stacks) in [
            ("fast", 300, 400, FAST_STACKS),
            ("slow", 3000, 100, SLOW_STACKS),
        ] {
            at += 10_000_000_000;
            let mut spec = Spec::new("closed cell", base + 20 * rep as u64)
                .label("target", target)
                .label("connections", "10")
                .label("repetition", &rep.to_string())
                .label("cell", &format!("target={target} connections=10"))
                .label("phase", "measure")
                .label("file", "c1")
                .label("scale", "1")
                .label(
                    "placement",
                    "generator pinned to CPU 0, local targets pinned to CPU 1, on one 2-CPU host",
                )
                .label("held", "cgroup v2: 1 CPU quota, memory 1.0 GiB");
            spec.experiment = Some("closed");
            spec.rate = served;
            spec.seconds = 5;
            spec.open_loop = false;
            spec.profile = Some(stacks);
            ids.push((runs::write(&store, &spec, at).await, target, 10));
        }
    }
    store
        .put_experiment(&ExperimentRecord {
            name: "closed".into(),
            question: "Which serves more over 10 connections?".into(),
            file_label: "c1".into(),
            scale: 1.0,
            definition: Definition {
                searched: Vec::new(),
                compared: false,
                sitting: None,
                references: Vec::new(),
                history_measures: Vec::new(),
                history_level: None,
                source: None,
                targets: vec!["fast".into(), "slow".into()],
                axes: vec![("connections".into(), vec!["10".into()])],
                repetitions: 2,
                placement: "generator pinned to CPU 0".into(),
                file: "name = \"closed\"".into(),
            },
            verification: Vec::new(),
            updated_at_ns: at,
        })
        .await
        .unwrap();
    draw(dir, store, ids, "closed").await
}
