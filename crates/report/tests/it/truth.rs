//! Page truth: a fixture whose truths are known, and every figure the pages, the listing and
//! the exports show of it held to the truth it names. Two targets at a fixed rate, each
//! watched with its database beside it (60 processes sharing their buffers: 60 MiB of PSS,
//! 1,500 MiB of RSS summed); `node`'s quota ran out in 90 % of its periods and it fell behind
//! (the generator's reason: "server accept"); `go` kept its rate, 7 connections refused.
#![allow(clippy::unwrap_used)]

use crate::runs;

use report::pages;
use report::site::{self, SiteOptions};
use runs::Spec;
use store::experiment::{Definition, ExperimentRecord};
use store::run::RunFilter;
use store::Store;

const T0: i64 = 1_795_000_000_000_000_000;
const MIB: u64 = 1 << 20;

fn cell(target: &'static str) -> Spec {
    let mut spec = Spec::new("cell", 800)
        .label("target", target)
        .label("rate", "2000")
        .label("repetition", "1")
        .label("cell", &format!("target={target} rate=2000"))
        .label("phase", "measure")
        .label("file", "t1")
        .label("scale", "1");
    spec.experiment = Some("truth");
    spec.seconds = 30;
    spec.database = true;
    spec
}

struct Drawn {
    _dir: tempfile::TempDir,
    site: std::path::PathBuf,
    store: Store,
    node: String,
    go: String,
}

async fn drawn() -> Drawn {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/showdown.db", dir.path().display());
    let store = Store::open(&db).await.unwrap();
    let mut node = cell("node");
    node.throttled = Some(0.9);
    node.fell_behind = true;
    let node = runs::write(&store, &node, T0).await;
    let go = runs::write(&store, &cell("go"), T0 + 60_000_000_000).await;
    store
        .put_experiment(&ExperimentRecord {
            name: "truth".into(),
            question: "Whose figures are these?".into(),
            file_label: "t1".into(),
            scale: 1.0,
            definition: Definition {
                searched: Vec::new(),
                compared: false,
                sitting: None,
                references: Vec::new(),
                history_measures: Vec::new(),
                history_level: None,
                source: None,
                targets: vec!["node".into(), "go".into()],
                axes: vec![("rate".into(), vec!["2000".into()])],
                repetitions: 1,
                placement: "generator pinned to CPU 0".into(),
                file: "name = \"truth\"".into(),
            },
            verification: Vec::new(),
            updated_at_ns: T0,
        })
        .await
        .unwrap();
    let site = dir.path().join("site");
    site::write(
        &store,
        &SiteOptions {
            out: site.clone(),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    Drawn {
        _dir: dir,
        site,
        store,
        node,
        go,
    }
}

fn read(path: &std::path::Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

/// The text of the element that starts at `from` in `page`, up to `to`.
fn between<'a>(page: &'a str, from: &str, to: &str) -> &'a str {
    let start = page
        .find(from)
        .unwrap_or_else(|| panic!("no {from:?} in the page"));
    let rest = &page[start..];
    &rest[..rest.find(to).unwrap_or(rest.len())]
}

#[tokio::test]
async fn every_figure_is_the_one_it_names() {
    let d = drawn().await;
    // The target's own peak: its one process's 400 MiB spike (the fixture's), never the
    // database's 1,500 MiB of RSS summed.
    let truth_target = 400 * MIB;

    // The listing (the index, `runs list`): the target's probe only.
    let listed = d
        .store
        .list_runs(&RunFilter {
            experiment: Some("truth".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    for r in &listed {
        assert_eq!(r.peak_rss_bytes, Some(truth_target), "{}", r.id);
    }

    // The experiment page.
    let page = read(&d.site.join(pages::experiment_path("truth")));
    let matrix = between(&page, "<h2>The matrix</h2>", "</table>");
    assert_eq!(
        matrix
            .matches("target peak memory (MiB)</small>: 400.0")
            .count(),
        2,
        "each target's memory is its own: {matrix}"
    );
    assert!(!matrix.contains("1500"), "{matrix}");
    let beside = between(&page, "<h2>Beside the targets</h2>", "</table>");
    assert_eq!(
        beside
            .matches("60.0 MiB <small>(PSS of 60 processes)</small>")
            .count(),
        2,
        "the database beside each, by PSS: {beside}"
    );
    // CPU of the database: 5 % of a core, its own figure.
    assert_eq!(beside.matches(">5.0<").count(), 2, "{beside}");

    // What limited node, first, from its probes; nothing of the generator's reason.
    let answers = between(&page, "<ul class=\"answers\">", "</ul>");
    assert!(
        answers.contains(
            "node did not hold up: limited by its CPU quota: throttled in 90 % of its periods"
        ),
        "{answers}"
    );
    assert!(
        answers.contains("5000 of its sends left over 1 ms late, because the server was behind"),
        "{answers}"
    );
    assert!(!answers.contains("held back by"), "{answers}");
    // go's 7 refused connections (0.12 % of its requests) are over the 0.1 % an answer
    // allows: it too did not hold up, and what its probes saw is said (connections waiting to
    // be accepted: the fixture's accept queue of 2).
    assert!(
        answers.contains("go did not hold up: limited by accepting connections: up to 2 waited"),
        "{answers}"
    );
    let evidence = between(
        &page,
        "<summary>What limited node: the figures</summary>",
        "</p>",
    );
    assert!(
        evidence.contains("PostgreSQL: CPU 0.05 cores"),
        "the database's figures in the evidence: {evidence}"
    );

    // node's run page: what limited it, and its memory as counted.
    let run = read(&d.site.join(pages::run_path(&d.node)));
    let limited = between(&run, "<dt>limited by</dt>", "</dd>");
    assert!(
        limited.contains("<summary>its CPU quota: throttled in 90 % of its periods"),
        "{limited}"
    );
    assert!(
        run.contains("memory 400.0 MiB (RSS)"),
        "the target's peaks, counted as said"
    );
    // The database's facts on the same page: its own memory, by PSS.
    assert!(run.contains("memory 60.0 MiB (PSS of 60 processes)"));
    // go kept its rate and failed under 1 % of its requests: its run page gives its figures,
    // no verdict.
    let go = read(&d.site.join(pages::run_path(&d.go)));
    assert!(!go.contains("<dt>limited by</dt>"));

    // The index's row: the target's memory.
    let index = read(&d.site.join("index.html"));
    let row = between(&index, &pages::run_path(&d.node), "</tr>");
    assert!(row.contains("400.0 MiB"), "{row}");

    // The samples CSV: each row names its group; nothing sums across them.
    let stored = d.store.load_run(&d.node).await.unwrap();
    let mut csv = Vec::new();
    store::export::samples_csv(&stored, &mut csv).unwrap();
    let mut reader = csv::Reader::from_reader(csv.as_slice());
    let headers = reader.headers().unwrap().clone();
    let group = headers.iter().position(|h| h == "group").unwrap();
    let pid = headers.iter().position(|h| h == "pid").unwrap();
    let rss = headers.iter().position(|h| h == "rss_bytes").unwrap();
    let mut database_total_max = 0u64;
    let mut target_total_max = 0u64;
    for row in reader.records() {
        let row = row.unwrap();
        if &row[pid] != "total" {
            continue;
        }
        let v: u64 = row[rss].parse().unwrap();
        match &row[group] {
            "PostgreSQL" => database_total_max = database_total_max.max(v),
            "target" => target_total_max = target_total_max.max(v),
            other => panic!("a group not in the fixture: {other}"),
        }
    }
    assert_eq!(target_total_max, truth_target);
    assert_eq!(database_total_max, 60 * 25 * MIB);
}
