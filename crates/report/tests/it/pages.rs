//! The pages drawn from runs in a real store: their tables equal the stored figures, their SVGs
//! are well-formed and carry the expected series, and text from the runs is escaped.
#![allow(clippy::unwrap_used)]

use crate::postgres;
use crate::runs;

use std::path::{Path, PathBuf};

use clap::Parser;
use report::figures::PERCENTILES;
use report::model::heatmap::HeatmapData;
use report::pages;
use report::site::{self, SiteOptions};
use runs::{Spec, HOSTILE, HOSTILE_COMM, SECONDS};
use store::model::IntervalStats;
use store::run::{RunFilter, Shard};
use store::summary::format_ns;
use store::Store;

const T0: i64 = 1_795_000_000_000_000_000;

struct Fixture {
    _dir: tempfile::TempDir,
    db: String,
    store: Store,
    site: PathBuf,
    node: String,
    go: String,
    killed: String,
}

/// Node and Go at 2000 req/s (one experiment), a run that was killed, and a run group of two
/// shards; the site drawn with one explicit comparison.
async fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/showdown.db", dir.path().display());
    let store = Store::open(&db).await.unwrap();
    let node = Spec::new("node 2000", 800)
        .label("target", "node")
        .label("rate", "2000")
        .label("note", HOSTILE);
    let node = runs::write(&store, &node, T0).await;
    let go = Spec::new("go 2000", 300)
        .label("target", "go")
        .label("rate", "2000");
    let go = runs::write(&store, &go, T0 + 60_000_000_000).await;
    let mut killed = Spec::new("killed run", 500);
    killed.finished = false;
    killed.experiment = None;
    let killed = runs::write(&store, &killed, T0 + 120_000_000_000).await;
    for index in 0..2 {
        let mut shard = Spec::new("eu shard", 400).label("target", "rust");
        shard.experiment = Some("multi-gun");
        shard.shard = Some(Shard {
            group: "eu".into(),
            index,
            count: 2,
        });
        runs::write(&store, &shard, T0 + 180_000_000_000).await;
    }
    let site = dir.path().join("site");
    let options = SiteOptions {
        out: site.clone(),
        filter: RunFilter::default(),
        only: Vec::new(),
        comparisons: vec![format!("{node},{go},{killed}").parse().unwrap()],
    };
    let written = site::write(&store, &options).await.unwrap();
    assert!(written.failures.is_empty(), "{:?}", written.failures);
    Fixture {
        _dir: dir,
        db,
        store,
        site,
        node,
        go,
        killed,
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn pages_of(site: &Path) -> Vec<PathBuf> {
    let mut out = vec![site.join("index.html")];
    for dir in ["runs", "groups", "compare", "labels"] {
        for entry in std::fs::read_dir(site.join(dir)).unwrap() {
            out.push(entry.unwrap().path());
        }
    }
    out
}

/// The part of a page from `<figure id="ID">` to its end.
fn figure<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html
        .find(&format!("<figure id=\"{id}\""))
        .unwrap_or_else(|| panic!("no figure {id}"));
    let end = start + html[start..].find("</figure>").unwrap();
    &html[start..end]
}

fn svgs(html: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(start) = rest.find("<svg") {
        let end = start + rest[start..].find("</svg>").unwrap() + "</svg>".len();
        out.push(&rest[start..end]);
        rest = &rest[end..];
    }
    out
}

async fn totals(store: &Store, id: &str) -> IntervalStats {
    let run = store.load_run(id).await.unwrap();
    let mut totals = IntervalStats::new(0, 30_000_000_000);
    for i in &run.intervals {
        totals.accumulate(&i.stats);
    }
    totals
}

fn percentile_row(label: &str, corrected: u64, service: u64) -> String {
    format!(
        "<tr><td>{label}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
        format_ns(corrected),
        format_ns(service)
    )
}

#[tokio::test]
async fn tables_equal_the_stored_figures() {
    let f = fixture().await;
    for id in [&f.node, &f.go, &f.killed] {
        let page = read(&f.site.join(pages::run_path(id)));
        let totals = totals(&f.store, id).await;
        for (label, q) in PERCENTILES {
            let row = percentile_row(
                label,
                totals.corrected.value_at_quantile(q),
                totals.service.value_at_quantile(q),
            );
            assert!(page.contains(&row), "run {id} has no row {row}");
        }
    }
    // And equal to the summary loadgen stored, which the page also prints.
    let run = f.store.load_run(&f.node).await.unwrap();
    let summary = run.summary.unwrap();
    let page = read(&f.site.join(pages::run_path(&f.node)));
    for (label, ns) in [
        ("p50", summary.latency.corrected.p50_ns),
        ("p99", summary.latency.corrected.p99_ns),
        ("p99.9", summary.latency.corrected.p999_ns),
        ("max", summary.latency.corrected.max_ns),
    ] {
        assert!(
            page.contains(&format!(
                "<tr><td>{label}</td><td class=\"n\">{}</td>",
                format_ns(ns)
            )),
            "{label}"
        );
    }
    assert!(
        summary.latency.corrected.max_ns >= 5_000_000_000,
        "the fixture's spike is the maximum"
    );
    assert!(page.contains(&summary.requests.total.to_string()));
    // Saturation beside utilization: the server kept up, so its figures, not a verdict; the
    // threads' wait (30 ms a second while one process, 60 with two) drawn on the CPU chart.
    let saturation = &page[page.find("<dt>saturation</dt>").expect("a saturation row")..];
    let saturation = &saturation[..saturation.find("</dd>").unwrap()];
    assert!(saturation.contains("of its cpus: 1.00)"), "{saturation}");
    assert!(saturation.contains("a second for a CPU"), "{saturation}");
    assert!(saturation.contains("accept queue up to"), "{saturation}");
    assert!(!page.contains("<dt>limited by</dt>"));
    assert!(page.contains("its threads waiting for a CPU"));

    // The index's headline figures.
    let index = read(&f.site.join("index.html"));
    let node_row = &index[index.find(&pages::run_path(&f.node)).unwrap()..];
    let node_row = &node_row[..node_row.find("</tr>").unwrap()];
    for figure in [
        format!("{:.1}/s", summary.requests.rate),
        format_ns(summary.latency.corrected.p50_ns),
        format_ns(summary.latency.corrected.p99_ns),
        format_ns(summary.latency.corrected.max_ns),
    ] {
        assert!(
            node_row.contains(&figure),
            "index row of node lacks {figure}: {node_row}"
        );
    }
    assert!(
        node_row.contains("400.0 MiB"),
        "the peak RSS is the one-sample spike: {node_row}"
    );
}

#[tokio::test]
async fn a_run_that_did_not_finish_says_so() {
    let f = fixture().await;
    let page = read(&f.site.join(pages::run_path(&f.killed)));
    assert!(
        page.contains("NO SUMMARY WAS STORED"),
        "the page must say the summary is recomputed"
    );
    assert!(page.contains("running, or killed"));
    let index = read(&f.site.join("index.html"));
    assert!(index.contains("Runs without an experiment"));
}

#[tokio::test]
async fn comparisons_set_runs_side_by_side_with_ratios() {
    let f = fixture().await;
    let node = f.store.load_run(&f.node).await.unwrap().summary.unwrap();
    let go = f.store.load_run(&f.go).await.unwrap().summary.unwrap();
    let cli = report::Cli::try_parse_from([
        "report",
        "--db",
        &f.db,
        "--compare",
        &format!("{},{}", f.node, f.go),
        "--format",
        "json",
    ])
    .unwrap();
    let text = report::print_tables(&f.store, &cli, &RunFilter::default())
        .await
        .unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let rows = json
        .as_object()
        .unwrap()
        .values()
        .next()
        .unwrap()
        .as_array()
        .unwrap();
    let p99 = rows.iter().find(|r| r["metric"] == "p99_ns").unwrap();
    assert_eq!(p99["node 2000"], node.latency.corrected.p99_ns);
    assert_eq!(p99["go 2000"], go.latency.corrected.p99_ns);
    let ratio = p99["go 2000 / node 2000"].as_f64().unwrap();
    let expected = go.latency.corrected.p99_ns as f64 / node.latency.corrected.p99_ns as f64;
    assert!((ratio - expected).abs() < 1e-12, "{ratio} vs {expected}");
    let cpu = rows
        .iter()
        .find(|r| r["metric"] == "target_cpu_pct")
        .unwrap();
    assert!(cpu["node 2000"].as_f64().unwrap() > 40.0, "{cpu}");

    // The experiment's own comparison, made without asking, with the ratio in words.
    let page = read(
        &f.site
            .join(pages::comparison_path(&pages::experiment_comparison_title(
                "node-vs-go",
            ))),
    );
    let row = &page[page.find("<td>latency p50</td>").unwrap()..];
    let row = &row[..row.find("</tr>").unwrap()];
    let words = report::tables::ratio_text(
        go.latency.corrected.p50_ns as f64 / node.latency.corrected.p50_ns as f64,
    );
    assert!(words.ends_with("lower"), "{words}");
    assert!(row.contains(&words) && row.contains("better"), "{row}");
    // One colour per run in every chart: run 1 blue, run 2 orange.
    for svg in svgs(&page) {
        roxmltree::Document::parse(svg).unwrap();
    }
    let p99_chart = figure(&page, "p99");
    assert!(p99_chart.contains("#1 node 2000") && p99_chart.contains("#2 go 2000"));
    let explicit = read(&f.site.join(pages::comparison_path(&format!(
        "{},{},{}",
        f.node, f.go, f.killed
    ))));
    assert!(
        explicit.contains("killed run"),
        "the explicit comparison has its three runs"
    );
}

#[tokio::test]
async fn svgs_are_well_formed_and_carry_their_series() {
    let f = fixture().await;
    for page in pages_of(&f.site) {
        let html = read(&page);
        for svg in svgs(&html) {
            if let Err(e) = roxmltree::Document::parse(svg) {
                panic!("{}: an SVG is not well-formed: {e}", page.display());
            }
        }
    }
    let page = read(&f.site.join(pages::run_path(&f.node)));
    let texts = |id: &str| -> Vec<String> {
        let svg = svgs(figure(&page, id))[0];
        let doc = roxmltree::Document::parse(svg).unwrap();
        doc.descendants()
            .filter(|n| n.has_tag_name("text"))
            .filter_map(|n| n.text())
            .map(|t| t.trim().to_string())
            .collect()
    };
    let latency = texts("latency");
    for series in [
        "p50",
        "p90",
        "p99",
        "max",
        "Latency over time",
        "corrected latency (ms)",
    ] {
        assert!(
            latency.iter().any(|t| t == series),
            "latency chart lacks {series}: {latency:?}"
        );
    }
    let distribution = texts("distribution");
    for label in ["90%", "99%", "99.9%", "corrected", "service"] {
        assert!(
            distribution.iter().any(|t| t == label),
            "distribution lacks {label}: {distribution:?}"
        );
    }
    for (id, series) in [
        ("requests", "errors/s"),
        ("probe-0-cpu", "the target's process tree"),
        ("probe-0-fds", "sockets"),
        ("probe-0-tcp", "accept queue"),
        ("probe-0-switches", "involuntary/s"),
        ("probe-0-members", &format!("101 {HOSTILE_COMM}")),
    ] {
        let texts = texts(id);
        assert!(
            texts.iter().any(|t| t == series),
            "{id} lacks {series}: {texts:?}"
        );
    }

    // The RSS line: 300 samples less a 20-sample hole drawn as two pieces, the one-sample
    // spike kept by the downsampling.
    let svg = svgs(figure(&page, "probe-0-rss"))[0];
    let doc = roxmltree::Document::parse(svg).unwrap();
    let lines: Vec<Vec<(f64, f64)>> = doc
        .descendants()
        .filter(|n| {
            n.has_tag_name("polyline")
                && n.attribute("stroke")
                    .is_some_and(|s| s.eq_ignore_ascii_case("#1f77b4"))
        })
        .map(|n| {
            n.attribute("points")
                .unwrap()
                .split_whitespace()
                .map(|p| {
                    let (x, y) = p.split_once(',').unwrap();
                    (x.parse().unwrap(), y.parse().unwrap())
                })
                .collect()
        })
        .filter(|l: &Vec<(f64, f64)>| l.len() > 2)
        .collect();
    assert_eq!(
        lines.len(),
        2,
        "the hole in the probe's records cuts the line in two"
    );
    let ys: Vec<f64> = lines.iter().flatten().map(|p| p.1).collect();
    let top = ys.iter().copied().fold(f64::MAX, f64::min);
    let mut sorted = ys.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    assert!(
        median - top > 150.0,
        "the spike is drawn far above the rest: top {top}, median {median}"
    );
    assert!(
        page.contains("20 probe records missing"),
        "the hole is listed among the warnings"
    );
}

#[tokio::test]
async fn text_from_runs_is_escaped() {
    let f = fixture().await;
    for page in pages_of(&f.site) {
        let html = read(&page);
        // The only scripts: the site's own two (beside the pages), the charts' models and the
        // heatmaps' data, JSON in which no `</` can end the element.
        let allowed = [
            "<script defer src=\"../assets/uPlot.iife.min.js\"></script>".to_string(),
            "<script defer src=\"../assets/showdown.js\"></script>".to_string(),
            "<script defer src=\"assets/uPlot.iife.min.js\"></script>".to_string(),
            "<script defer src=\"assets/showdown.js\"></script>".to_string(),
            // The numbers' one rule table, which the script reads.
            format!(
                "<script id=\"number-rules\" type=\"application/json\">{}</script>",
                report::model::number::RULES.json()
            ),
        ];
        let mut rest = html.clone();
        for a in &allowed {
            rest = rest.replace(a.as_str(), "");
        }
        for (at, _) in rest.match_indices("<script") {
            let tag = &rest[at..at + rest[at..].find('>').unwrap() + 1];
            assert!(
                tag == "<script class=\"chart-data\" type=\"application/json\">"
                    || tag == "<script class=\"heatmap-data\" type=\"application/json\">",
                "{}: a script tag got through: {tag}",
                page.display()
            );
            let body = &rest[at + tag.len()..];
            let body = &body[..body.find("</script>").unwrap()];
            assert!(
                !body.contains('<'),
                "{}: markup in a chart's model",
                page.display()
            );
            assert!(serde_json::from_str::<serde_json::Value>(body).is_ok());
        }
        // Every chart drawn has its model (the heatmaps draw their own cells).
        let drawn = html.matches("<div class=\"plot\">").count()
            - html.matches("<figure class=\"heatmap\"").count();
        assert_eq!(
            html.matches("<script class=\"chart-data\"").count(),
            drawn,
            "{}: a chart without its model",
            page.display()
        );
        assert_eq!(
            html.matches("<script class=\"heatmap-data\"").count(),
            html.matches("<figure class=\"heatmap\"").count(),
            "{}: a heatmap without its data",
            page.display()
        );
        assert!(
            !html.contains("<img"),
            "{}: an img tag got through",
            page.display()
        );
    }
    let page = read(&f.site.join(pages::run_path(&f.node)));
    assert!(
        page.contains("&lt;script&gt;alert('labels')&lt;/script&gt;")
            || page.contains("&lt;script&gt;alert(&#39;labels&#39;)")
    );
    // In an SVG legend, plotters escapes it.
    assert!(page.contains("&lt;img src=x onerror=alert(1)&gt;"));
    let label = read(&f.site.join(pages::label_path("note", HOSTILE)));
    assert!(label.contains("node 2000") && !label.contains("go 2000"));
}

/// The heatmaps' data in a run's page, what its script draws them from, is the run's heatmaps:
/// it parses back to the `HeatmapData` its SVG is drawn from, its cells add up to its total
/// (corrected latency's, the run's completed requests), and the SVG has a cell for each of its
/// non-zero counts.
#[tokio::test]
async fn the_heatmaps_data_in_a_page_is_the_runs_heatmaps() {
    let f = fixture().await;
    let page = read(&f.site.join(pages::run_path(&f.node)));
    let run = report::figures::load(&f.store, &f.node).await.unwrap();
    for (map, kind) in run.load.heatmaps.iter().zip(["corrected", "service"]) {
        let start = page
            .find(&format!("<figure class=\"heatmap\" id=\"heatmap-{kind}\""))
            .unwrap_or_else(|| panic!("no {kind} heatmap"));
        let section = &page[start..start + page[start..].find("</figure>").unwrap()];
        let tag = "<script class=\"heatmap-data\" type=\"application/json\">";
        let body = &section[section.find(tag).unwrap() + tag.len()..];
        let json = &body[..body.find("</script>").unwrap()];
        let data: HeatmapData = serde_json::from_str(json).unwrap();
        assert_eq!(Some(&data), map.data().as_ref(), "{kind}");
        assert_eq!(data.kind, kind);
        let cells: Vec<u64> = data
            .columns
            .iter()
            .flat_map(|c| c.counts.iter().copied())
            .filter(|&n| n > 0)
            .collect();
        assert_eq!(cells.iter().sum::<u64>(), data.total, "{kind}");
        if kind == "corrected" {
            assert_eq!(data.total, run.summary.latency.corrected.count);
        }
        let svg = svgs(section)[0];
        let doc = roxmltree::Document::parse(svg).unwrap();
        let drawn: Vec<u64> = doc
            .descendants()
            .filter_map(|n| n.attribute("data-count"))
            .map(|c| c.parse().unwrap())
            .collect();
        assert_eq!(
            drawn, cells,
            "{kind}: the SVG's cells are the data's, in its order"
        );
    }
}

#[tokio::test]
async fn groups_labels_and_experiments_get_pages() {
    let f = fixture().await;
    let group = read(&f.site.join(pages::group_path("eu")));
    assert!(
        group.contains("2 gun hosts&#39; shards, merged")
            || group.contains("2 gun hosts' shards, merged")
    );
    // The merged run counts both shards' requests.
    let requests = 2 * SECONDS * 200;
    assert!(
        group.contains(&format!("{requests} requests completed")),
        "merged totals"
    );
    let index = read(&f.site.join("index.html"));
    for text in [
        "Experiment node-vs-go",
        "Experiment multi-gun",
        "Run groups",
        "target=node (1)",
        "rate=2000 (2)",
    ] {
        assert!(index.contains(text), "the index lacks {text}");
    }
    let label = read(&f.site.join(pages::label_path("rate", "2000")));
    assert!(
        label.contains("Compare them"),
        "two runs share rate=2000: they get a comparison"
    );
}

#[tokio::test]
async fn tables_print_as_json_csv_and_markdown() {
    let f = fixture().await;
    let totals = totals(&f.store, &f.node).await;
    let tables = |format: &str| {
        let cli = report::Cli::try_parse_from([
            "report", "--db", &f.db, "--run", &f.node, "--output", format,
        ])
        .unwrap();
        let store = &f.store;
        async move {
            report::print_tables(store, &cli, &RunFilter::default())
                .await
                .unwrap()
        }
    };
    let json: serde_json::Value = serde_json::from_str(&tables("json").await).unwrap();
    let rows = json
        .as_object()
        .unwrap()
        .values()
        .next()
        .unwrap()
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(rows.len(), PERCENTILES.len());
    for (row, (label, q)) in rows.iter().zip(PERCENTILES) {
        assert_eq!(row["percentile"], label);
        assert_eq!(row["corrected_ns"], totals.corrected.value_at_quantile(q));
        assert_eq!(row["service_ns"], totals.service.value_at_quantile(q));
    }
    let csv = tables("csv").await;
    let p99 = totals.corrected.value_at_quantile(0.99);
    assert!(
        csv.starts_with("percentile,corrected_ns,service_ns\n"),
        "{csv}"
    );
    assert!(csv.contains(&format!("\np99,{p99},")), "{csv}");
    let markdown = tables("markdown").await;
    assert!(
        markdown.contains(&format!("| p99 | {} |", format_ns(p99))),
        "{markdown}"
    );

    // Without --run: the runs and their headline figures.
    let cli = report::Cli::try_parse_from([
        "report",
        "--db",
        &f.db,
        "--output",
        "csv",
        "--experiment",
        "node-vs-go",
    ])
    .unwrap();
    let filter = RunFilter {
        experiment: Some("node-vs-go".into()),
        ..Default::default()
    };
    let csv = report::print_tables(&f.store, &cli, &filter).await.unwrap();
    assert_eq!(csv.lines().count(), 3, "a header and two runs: {csv}");
}

#[tokio::test]
async fn bad_input_gets_a_clear_error() {
    let f = fixture().await;
    let cli = report::Cli::try_parse_from([
        "report",
        "--db",
        &f.db,
        "--compare",
        "no-such-run",
        "--out",
        f.site.to_str().unwrap(),
    ])
    .unwrap();
    let e = report::run_async(&cli).await.unwrap_err().to_string();
    assert!(
        e.contains("no-such-run") && e.contains("loadgen runs list"),
        "{e}"
    );
    let e = report::Cli::try_parse_from(["report", "--compare", "=x"])
        .unwrap_err()
        .to_string();
    assert!(e.contains("KEY=VALUE"), "{e}");
    let file = f.site.join("index.html");
    let cli =
        report::Cli::try_parse_from(["report", "--db", &f.db, "--out", file.to_str().unwrap()])
            .unwrap();
    let e = report::run_async(&cli).await.unwrap_err().to_string();
    assert!(e.contains("index.html") && e.contains("--out"), "{e}");
}

#[test]
fn the_binary_draws_the_site_and_says_where() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/showdown.db", dir.path().display());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let store = Store::open(&db).await.unwrap();
        runs::write(&store, &Spec::new("node 2000", 800), T0).await;
    });
    let out = dir.path().join("site");
    let result = std::process::Command::new(env!("CARGO_BIN_EXE_report"))
        .args(["--db", &db, "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&result.stdout);
    assert!(
        result.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&result.stderr)
    );
    assert!(
        stdout.contains("open ") && stdout.contains("index.html"),
        "{stdout}"
    );
    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_report"))
        .args(["--format", "pdf"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("pdf") && stderr.contains("markdown"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_draw_from_postgres_too() {
    let pg = postgres::TestPostgres::start().await;
    let store = Store::open(&pg.url).await.unwrap();
    let id = runs::write(&store, &Spec::new("node 2000", 800), T0).await;
    let dir = tempfile::tempdir().unwrap();
    let options = SiteOptions {
        out: dir.path().to_path_buf(),
        ..Default::default()
    };
    site::write(&store, &options).await.unwrap();
    let page = read(&dir.path().join(pages::run_path(&id)));
    let totals = totals(&store, &id).await;
    let row = percentile_row(
        "p99",
        totals.corrected.value_at_quantile(0.99),
        totals.service.value_at_quantile(0.99),
    );
    assert!(page.contains(&row), "{row}");
}

/// A store may hold run ids Showdown did not make (an imported or foreign store): the pages of
/// `../../escaped` and of a non-ASCII id stay inside the site, and the site is drawn.
#[tokio::test]
async fn run_ids_from_a_foreign_store_never_leave_the_site() {
    use store::run::{HostFacts, RunConfig, RunMeta, RunStatus};
    use store::{Finish, RunWriter};
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/showdown.db", dir.path().display());
    let store = Store::open(&db).await.unwrap();
    for (i, id) in ["../../escaped", "ü/../ñ\u{a0}id-that-is-long-and-not-ascii"]
        .into_iter()
        .enumerate()
    {
        let meta = RunMeta {
            id: id.into(),
            name: format!("foreign {i}"),
            experiment: None,
            labels: Default::default(),
            shard: None,
            tool_version: "test".into(),
            started_at_ns: T0 + i as i64,
            interval_ns: 1_000_000_000,
            config: RunConfig::default(),
            gun_host: HostFacts::default(),
        };
        store.create_run(&meta).await.unwrap();
        let report = RunWriter::start(&store, id)
            .finish(Finish {
                status: RunStatus::Complete,
                stop_reason: None,
                ended_at_ns: T0 + 1_000_000_000,
                summary: None,
                warnings: Vec::new(),
                clock_offsets: Vec::new(),
                zero_mono_ns: 0,
            })
            .await;
        assert!(report.first_error.is_none(), "{report:?}");
    }
    let out = dir.path().join("deep").join("site");
    let options = SiteOptions {
        out: out.clone(),
        filter: RunFilter::default(),
        only: Vec::new(),
        comparisons: Vec::new(),
    };
    let written = site::write(&store, &options).await.unwrap();
    assert_eq!(written.run_pages.len(), 2, "{:?}", written.failures);
    for page in written.run_pages.values() {
        let page = page.canonicalize().unwrap();
        assert!(
            page.starts_with(out.join("runs").canonicalize().unwrap()),
            "{} is outside the site",
            page.display()
        );
    }
    assert!(!dir.path().join("escaped.html").exists());
    assert!(!dir.path().join("deep").join("escaped.html").exists());
}

/// A profiled run whose target was on no CPU when sampled (an idle target, a run shorter than a
/// profile's second): the site is drawn, the page says there were no stacks, no empty graph.
#[tokio::test]
async fn a_profile_without_stacks_is_said_not_drawn() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/showdown.db", dir.path().display());
    let store = Store::open(&db).await.unwrap();
    let idle = runs::write(&store, &Spec::new("idle", 500).profiled(&[]), T0).await;
    let busy = runs::write(
        &store,
        &Spec::new("busy", 500).profiled(&[("srv;main;main;work", 50)]),
        T0 + 60_000_000_000,
    )
    .await;
    let out = dir.path().join("site");
    let site = site::write(
        &store,
        &SiteOptions {
            out: out.clone(),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert!(site.failures.is_empty(), "{:?}", site.failures);
    let page = std::fs::read_to_string(out.join(pages::run_path(&idle))).unwrap();
    assert!(page.contains("no stacks to draw"), "the page says why");
    assert!(!out
        .join(pages::run_path(&idle).replace(".html", ".flame-1.svg"))
        .exists());
    assert!(out
        .join(pages::run_path(&busy).replace(".html", ".flame-1.svg"))
        .exists());
}

/// A site folder may be shared: a symbolic link left at a page's name is replaced by the page,
/// never written through to the file it points at.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_at_a_pages_name_is_replaced_not_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&format!("sqlite://{}/runs.db", dir.path().display()))
        .await
        .unwrap();
    runs::write(&store, &Spec::new("node 2000", 800), T0).await;
    let victim = dir.path().join("victim.txt");
    std::fs::write(&victim, "the user's own file").unwrap();
    let site = dir.path().join("site");
    std::fs::create_dir(&site).unwrap();
    std::os::unix::fs::symlink(&victim, site.join("index.html")).unwrap();
    let options = SiteOptions {
        out: site.clone(),
        ..Default::default()
    };
    site::write(&store, &options).await.unwrap();
    assert_eq!(read(&victim), "the user's own file");
    let index = site.join("index.html");
    assert!(std::fs::symlink_metadata(&index).unwrap().is_file());
    assert!(read(&index).contains("<html"));
}
