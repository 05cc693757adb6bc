//! `--hdr-log`: a standard interval log that other HdrHistogram implementations read back with
#![allow(clippy::unwrap_used)]
//! the same figures.

use crate::common;

use std::process::Command;

use common::{exclusive, plan, run_with};
use hdrhistogram::Histogram;
use loadgen::commands::target::{Stall, TargetConfig, TargetServer};
use loadgen::engine::attack::IntervalSink;
use loadgen::keep::hdrlog::HdrLogSink;
use loadgen::Shutdown;
use store::hdrlog::read_log;

/// A run against a freezing target (so percentiles spread out), logged to a file.
fn logged_run(dir: &std::path::Path) -> (std::path::PathBuf, loadgen::engine::RunOutcome) {
    let target = TargetServer::start(TargetConfig {
        stall: Some(Stall {
            every: std::time::Duration::from_millis(400),
            length: std::time::Duration::from_millis(40),
        }),
        ..Default::default()
    })
    .unwrap();
    let path = dir.join("run.hlog");
    let p = plan(&[
        "--rate",
        "1000",
        "--duration",
        "2s",
        "--interval",
        "500ms",
        "--max-connections",
        "4",
        &target.url("/"),
    ]);
    let mut sink = HdrLogSink::create(&path, "test run").unwrap();
    let sinks: &mut [&mut dyn IntervalSink] = &mut [&mut sink];
    let (_, outcome) = run_with(&p, &Shutdown::new(), sinks);
    drop(sink);
    (path, outcome)
}

#[test]
fn the_log_reads_back_into_the_run_totals() {
    let _cpu = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let (path, outcome) = logged_run(dir.path());
    let text = std::fs::read(&path).unwrap();
    let head = String::from_utf8_lossy(&text[..200]).to_string();
    assert!(
        head.starts_with("#[Histogram log format version 1.3]"),
        "{head}"
    );
    let logged = read_log(&text).unwrap();
    for (tag, total) in [
        ("corrected", &outcome.totals.corrected),
        ("service", &outcome.totals.service),
        ("lateness", &outcome.totals.lateness),
    ] {
        let mut merged: Histogram<u64> = store::model::new_histogram(1_000_000_000);
        let parts: Vec<_> = logged
            .iter()
            .filter(|h| h.tag.as_deref() == Some(tag))
            .collect();
        assert_eq!(
            parts.len() as u64,
            outcome.intervals,
            "{tag}: one histogram per interval"
        );
        for part in &parts {
            merged.add(&part.histogram).unwrap();
        }
        assert_eq!(merged.len(), total.len(), "{tag}: count");
        for q in [0.5, 0.9, 0.99, 0.999, 1.0] {
            assert_eq!(
                merged.value_at_quantile(q),
                total.value_at_quantile(q),
                "{tag} at {q}"
            );
        }
        // Intervals are consecutive half seconds.
        for (i, part) in parts.iter().enumerate().take(parts.len() - 1) {
            assert_eq!(
                part.start.as_millis(),
                500 * i as u128,
                "{tag} interval {i}"
            );
            assert_eq!(part.length.as_millis(), 500);
        }
    }
}

#[test]
fn hdrhistogram_py_reads_the_same_percentiles() {
    let _cpu = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let (path, outcome) = logged_run(dir.path());
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/read_hdr_log.py");
    let output = Command::new("python3")
        .arg(script)
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "HdrHistogram_py could not read the log (pip install hdrhistogram; the README's test \
         command installs it): {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let read: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let start = read["start_time"].as_f64().unwrap();
    let wall = outcome
        .anchor
        .wall
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert!(
        (start - wall).abs() < 0.002,
        "StartTime {start} vs the run's time zero {wall}"
    );
    for (tag, total) in [
        ("corrected", &outcome.totals.corrected),
        ("service", &outcome.totals.service),
    ] {
        let figures = &read["tags"][tag];
        assert_eq!(
            figures["intervals"].as_u64(),
            Some(outcome.intervals),
            "{tag}"
        );
        assert_eq!(figures["count"].as_u64(), Some(total.len()), "{tag}");
        assert_eq!(figures["max"].as_u64(), Some(total.max()), "{tag}");
        assert_eq!(figures["min"].as_u64(), Some(total.min()), "{tag}");
        for (key, q) in [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p999", 0.999)] {
            assert_eq!(
                figures[key].as_u64(),
                Some(total.value_at_quantile(q)),
                "{tag} {key}: HdrHistogram_py against ours"
            );
        }
    }
}
