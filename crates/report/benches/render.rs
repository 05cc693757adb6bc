//! How long the pages take to draw and how big they get, for a long run and a wide comparison.
//!
//! `cargo bench -p report --bench render` writes into a temporary SQLite store a one-hour run
//! (3,600 one-second intervals, 36,000 probe samples at 10 Hz) and twenty 10-minute runs of one
//! experiment, draws their pages, and prints the time of each step, the pages' sizes, and how
//! long headless Chromium takes to open them against a page with no chart. Set
//! `SHOWDOWN_BENCH_QUICK=1` for a short run of the same steps.
#![allow(clippy::unwrap_used)]

#[path = "../tests/support/runs.rs"]
mod runs;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use report::compare::Comparison;
use report::site::{self, SiteOptions};
use report::{charts, figures, pages};
use runs::Spec;
use store::run::RunFilter;
use store::Store;

const T0: i64 = 1_795_000_000_000_000_000;

fn mb(bytes: usize) -> String {
    format!("{:.2} MB", bytes as f64 / 1e6)
}

fn largest_svg(html: &str) -> usize {
    html.split("<svg")
        .skip(1)
        .map(|s| s.find("</svg>").unwrap_or(s.len()))
        .max()
        .unwrap_or(0)
}

/// Wall time of headless Chromium opening `page` and taking a screenshot, best of three.
fn browser_seconds(page: &Path, work: &Path) -> Option<f64> {
    let mut best = f64::MAX;
    for i in 0..3 {
        let start = Instant::now();
        let status = Command::new("chromium")
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--no-first-run",
                "--window-size=1280,2400",
            ])
            .arg(format!(
                "--user-data-dir={}",
                work.join(format!("profile{i}")).display()
            ))
            .arg(format!("--screenshot={}", work.join("shot.png").display()))
            .arg(format!("file://{}", page.display()))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .ok()?;
        if !status.success() {
            return None;
        }
        best = best.min(start.elapsed().as_secs_f64());
    }
    Some(best)
}

fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(0.0, |kib| kib / 1024.0)
}

fn main() {
    match std::env::var("SHOWDOWN_BENCH_DB") {
        Ok(db) => render(&db),
        Err(_) => prepare_and_measure(),
    }
}

/// Writes the fixtures, then measures the drawing in a process of its own, so that its peak
/// RSS is the drawing's alone.
fn prepare_and_measure() {
    let quick = std::env::var_os("SHOWDOWN_BENCH_QUICK").is_some();
    let (long_seconds, wide_runs, wide_seconds) =
        if quick { (300, 5, 60) } else { (3600, 20, 600) };
    let work = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/showdown.db", work.path().display());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let store = Store::open(&db).await.unwrap();
        // Profiled as a busy server is: 200 stacks a second, 24 frames deep.
        let mut long = Spec::new("one hour", 800).profiled(bench_stacks());
        long.seconds = long_seconds;
        long.experiment = Some("long");
        let started = Instant::now();
        runs::write(&store, &long, T0).await;
        println!(
            "stored a {long_seconds} s run ({} probe samples) in {:.2} s",
            long_seconds * runs::HZ,
            started.elapsed().as_secs_f64()
        );
        for i in 0..wide_runs {
            let mut spec = Spec::new("wide", 200 + 40 * i as u64)
                .label("rate", &format!("{}", 1000 + 250 * i));
            spec.seconds = wide_seconds;
            spec.experiment = Some("wide");
            runs::write(&store, &spec, T0 + (i as i64 + 1) * 4_000_000_000_000).await;
        }
        println!("stored {wide_runs} runs of {wide_seconds} s");
    });
    for phase in ["long", "wide", "index", "site"] {
        let status = Command::new(std::env::current_exe().unwrap())
            .env("SHOWDOWN_BENCH_DB", &db)
            .env("SHOWDOWN_BENCH_PHASE", phase)
            .env("SHOWDOWN_BENCH_WORK", work.path())
            .status()
            .unwrap();
        assert!(status.success());
    }
    let empty = work.path().join("empty.html");
    std::fs::write(
        &empty,
        "<!DOCTYPE html><html><body><p>no chart</p></body></html>",
    )
    .unwrap();
    let pages = work.path().join("pages/runs");
    let (long_page, wide_page, index_page) = (
        pages.join("long.html"),
        pages.join("wide.html"),
        pages.join("index.html"),
    );
    match (browser_seconds(&empty, work.path()), browser_seconds(&long_page, work.path()), browser_seconds(&wide_page, work.path()), browser_seconds(&index_page, work.path())) {
        (Some(base), Some(long), Some(wide), Some(index)) => println!(
            "chromium, open, draw the interactive charts and screenshot (best of 3): page without charts {base:.2} s, long run page {long:.2} s (+{:.2}), comparison {wide:.2} s (+{:.2}), index of 200 runs {index:.2} s (+{:.2})",
            long - base,
            wide - base,
            index - base
        ),
        _ => println!("chromium not found: the browser's times are not measured"),
    }
    let flame_page = pages.join("long-flame.html");
    if flame_page.exists() {
        if let (Some(page), Some(opened)) = (
            browser_seconds(&long_page, work.path()),
            browser_seconds(&flame_page, work.path()),
        ) {
            println!(
                "the long run page with its window flame graph opened (its data loaded and the whole run's stacks drawn): {opened:.2} s, +{:.2} s over the page",
                opened - page
            );
        }
    }
}

/// 200 distinct stacks of 24 frames sharing their outer frames, as a server's handlers do.
fn bench_stacks() -> &'static [(&'static str, u64)] {
    let stacks: Vec<(&'static str, u64)> = (0..200)
        .map(|i| {
            let mut frames = vec!["node".to_string(), "node".to_string()];
            frames.extend((0..22).map(|d| format!("handler_{}_{d}", i / (1 + d * 8))));
            let stack: &'static str = Box::leak(frames.join(";").into_boxed_str());
            (stack, 1 + (i % 5) as u64)
        })
        .collect();
    Box::leak(stacks.into_boxed_slice())
}

/// A page written where a site has it (`runs/`), its assets beside (`assets/`): the browser
/// times the interactive charts too.
fn write_page(work: &std::path::Path, name: &str, html: &str) {
    let root = work.join("pages");
    std::fs::create_dir_all(root.join("runs")).unwrap();
    std::fs::create_dir_all(root.join("assets")).unwrap();
    for (path, bytes) in report::assets::FILES {
        std::fs::write(root.join(path), bytes).unwrap();
    }
    // The index sits at the root: its links and assets are relative to it.
    let html = if name == "index.html" {
        html.replace("\"assets/", "\"../assets/")
    } else {
        html.to_string()
    };
    std::fs::write(root.join("runs").join(name), html).unwrap();
}

/// One phase of drawing, in this process alone.
fn render(db: &str) {
    let phase = std::env::var("SHOWDOWN_BENCH_PHASE").unwrap_or_default();
    let work = PathBuf::from(std::env::var("SHOWDOWN_BENCH_WORK").unwrap());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let store = Store::open(db).await.unwrap();
        let experiment = |name: &str| RunFilter { experiment: Some(name.into()), ..Default::default() };
        match phase.as_str() {
            "long" => {
                let id = store.list_runs(&experiment("long")).await.unwrap()[0].id.clone();
                let started = Instant::now();
                let figures = figures::load(&store, &id).await.unwrap();
                let loaded = started.elapsed().as_secs_f64();
                let started = Instant::now();
                let load = charts::load_charts(&figures).unwrap();
                let probes = vec![charts::probe_charts(&figures, 0, &figures.probes[0]).unwrap()];
                let html = pages::run_page(&figures, &load, &probes, &[]).into_string();
                let drawn = started.elapsed().as_secs_f64();
                println!(
                    "long run page: read and figures {loaded:.2} s, charts and HTML {drawn:.3} s, peak RSS {:.0} MiB; page {}, {} charts, largest SVG {}",
                    peak_rss_mib(),
                    mb(html.len()),
                    html.matches("<svg").count(),
                    mb(largest_svg(&html))
                );
                write_page(&work, "long.html", &html);
                if let Some(profile) = &figures.probes[0].profile {
                    let started = Instant::now();
                    let data = report::flame_data::ProfileData::of(profile).unwrap();
                    let script = data.script("long.flame-1.js");
                    // The same page with the panel open: the browser loads the file and draws
                    // the whole hour's stacks before its screenshot.
                    write_page(&work, "long.flame-1.js", &script);
                    let flames = [pages::Flames {
                        whole: None,
                        by_window: Some("long.flame-1.js".into()),
                    }];
                    let opened = pages::run_page(&figures, &load, &probes, &flames)
                        .into_string()
                        .replacen("<details class=\"flame-window\"", "<details open class=\"flame-window\"", 1);
                    write_page(&work, "long-flame.html", &opened);
                    println!(
                        "its window flame graph's data (a file beside the page, loaded when opened): {} records of {} stacks in {} slices, {} in {:.3} s",
                        profile.records,
                        data.stacks.len(),
                        data.slices.len(),
                        mb(script.len()),
                        started.elapsed().as_secs_f64()
                    );
                }
            }
            "wide" => {
                let listed = store.list_runs(&experiment("wide")).await.unwrap();
                let started = Instant::now();
                let mut wide = Vec::new();
                for l in &listed {
                    wide.push(Arc::new(figures::load(&store, &l.id).await.unwrap()));
                }
                let read = started.elapsed().as_secs_f64();
                let comparison = Comparison { title: "wide".into(), runs: wide };
                let started = Instant::now();
                let list = charts::comparison_charts(&comparison).unwrap();
                let html = pages::comparison_page(&comparison, &list, &[]).into_string();
                let drawn = started.elapsed().as_secs_f64();
                println!(
                    "comparison of {} runs: read and figures {read:.2} s, charts and HTML {drawn:.3} s, peak RSS {:.0} MiB; page {}, largest SVG {}",
                    listed.len(),
                    peak_rss_mib(),
                    mb(html.len()),
                    mb(largest_svg(&html))
                );
                write_page(&work, "wide.html", &html);
            }
            "index" => {
                // The index of 200 runs: the stored runs' headlines, repeated.
                let listed = store.list_runs(&RunFilter::default()).await.unwrap();
                let mut heads = Vec::new();
                for l in &listed {
                    heads.push(figures::load(&store, &l.id).await.unwrap().headline());
                }
                let mut index = pages::SiteIndex::default();
                for i in 0..200 {
                    let mut h = heads[i % heads.len()].clone();
                    h.id = format!("{i:04}-{}", h.id);
                    index.runs.push(h);
                }
                let html = pages::index(&index).into_string();
                println!("index of {} runs: page {}", index.runs.len(), mb(html.len()));
                write_page(&work, "index.html", &html);
            }
            _ => {
                let started = Instant::now();
                let options = SiteOptions { out: work.join("site"), ..Default::default() };
                let site = site::write(&store, &options).await.unwrap();
                println!(
                    "whole site: {} pages, {} in {:.2} s, peak RSS {:.0} MiB",
                    site.pages,
                    mb(site.bytes as usize),
                    started.elapsed().as_secs_f64(),
                    peak_rss_mib()
                );
            }
        }
    });
}
