//! `--report DIR`: a run ends with its page, drawn from what was kept.
#![allow(clippy::unwrap_used)]

use crate::common;

use common::exclusive;
use store::summary::{format_ns, Summary};

#[test]
fn the_demo_ends_with_a_page_to_open() {
    let _cpu = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/showdown.db", dir.path().display());
    let site = dir.path().join("site");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_loadgen"))
        .args([
            "demo",
            "--rate",
            "500",
            "--duration",
            "2s",
            "--output",
            "json",
            "--db",
            &db,
        ])
        .arg("--report")
        .arg(&site)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let summary: Summary = serde_json::from_slice(&out.stdout).unwrap();
    let page = stderr
        .lines()
        .find_map(|l| l.strip_prefix("Report: open "))
        .unwrap_or_else(|| panic!("no page named: {stderr}"));
    let html = std::fs::read_to_string(page).unwrap();
    // The page's table is the summary's figures.
    for (label, ns) in [
        ("p50", summary.latency.corrected.p50_ns),
        ("p90", summary.latency.corrected.p90_ns),
        ("p99", summary.latency.corrected.p99_ns),
        ("max", summary.latency.corrected.max_ns),
    ] {
        let row = format!("<tr><td>{label}</td><td class=\"n\">{}</td>", format_ns(ns));
        assert!(html.contains(&row), "the page lacks {row}");
    }
    assert!(html.contains(&summary.requests.total.to_string()));
    // The probe watched the target: its charts are drawn.
    for chart in [
        "latency",
        "requests",
        "distribution",
        "probe-0-cpu",
        "probe-0-rss",
        "probe-0-fds",
    ] {
        // Every chart carries its model for the interactive chart, named by its kind.
        let kind = if chart == "distribution" {
            "percentile"
        } else {
            "time"
        };
        let figure =
            format!("<figure id=\"{chart}\" data-chart=\"{kind}\"><div class=\"plot\"><svg");
        assert!(html.contains(&figure), "the page lacks the {chart} chart");
    }
    let index = std::fs::read_to_string(site.join("index.html")).unwrap();
    let file = std::path::Path::new(page)
        .file_name()
        .unwrap()
        .to_string_lossy();
    assert!(index.contains(&*file), "the index links to the run");
}
