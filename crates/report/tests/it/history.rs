//! The history page: an experiment's sittings side by side, drawn from a store holding a
//! synthetic history (sixteen nightly sittings; go's capacity 8 % lower from sitting 7 and 5 %
//! higher from sitting 12, an A/A twin that never changed, and a spin reference that shares
//! the host's drift of 3 % from sitting to sitting), its file naming spin as its reference.
#![allow(clippy::unwrap_used)]

use analysis::capacity::random::Rng;
use report::pages;
use report::site::{self, SiteOptions};

use crate::browser::{open, BLUE};
use crate::synthetic::{keep, level, record, revision};

/// What each sitting's steps read of the host: steal creeping up, memory a little slower.
fn host(i: usize) -> Option<(f64, f64)> {
    Some((0.5 + 0.1 * i as f64, 95.0 + i as f64))
}

#[test]
fn a_history_page_shows_each_series_its_changes_and_the_host() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("history.db").display());
    let mut rng = Rng::new(11);
    let (mut go, mut twin, mut spin) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..16 {
        let drift = 0.03 * rng.normal();
        go.push(level(i) * (drift + 0.01 * rng.normal()).exp());
        twin.push(1000.0 * (drift + 0.01 * rng.normal()).exp());
        spin.push(2000.0 * (drift + 0.01 * rng.normal()).exp());
    }
    keep(
        &url,
        "nightly",
        &[("go", go), ("go-again", twin), ("spin", spin)],
        host,
    );
    record(&url, "nightly", &["go", "go-again", "spin"], &["spin"]);

    let out = dir.path().join("site");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let site = runtime.block_on(async {
        let store = store::Store::open(&url).await.unwrap();
        let site = site::write(
            &store,
            &SiteOptions {
                out: out.clone(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
        store.close().await;
        site
    });
    let page = out.join(pages::history_path("nightly"));
    let html = std::fs::read_to_string(&page)
        .unwrap_or_else(|e| panic!("no history page ({e}); failures: {:?}", site.failures));

    // The changes, divided by the reference the file names, between the right revisions.
    assert!(html.contains("History: nightly"), "{html}");
    assert!(html.contains("16 sittings"), "{html}");
    let regression = format!(
        "between sitting #6 ({}) and #7 ({})",
        revision(5),
        revision(6)
    );
    assert!(
        html.contains(&format!(
            "go ÷ spin: capacity within the SLO</strong>: worse {regression}"
        )),
        "{regression}\n{html}"
    );
    let improvement = format!(
        "better between sitting #11 ({}) and #12 ({})",
        revision(10),
        revision(11)
    );
    assert!(html.contains(&improvement), "{improvement}\n{html}");
    assert!(
        !html.contains("go-again ÷ spin: capacity within the SLO</strong>"),
        "the A/A twin changed: {html}"
    );
    // One chart per series, and the host's; the host in each sitting's row.
    for id in ["history-go-spin-capacity-within-the-slo", "history-host"] {
        assert!(
            html.contains(&format!("id=\"{id}")),
            "no chart {id}: {html}"
        );
    }
    assert!(
        html.matches("<figure").count() >= 4,
        "a chart per series and the host's"
    );
    assert!(
        html.contains("steal 2.0 %, 2445 MHz, a load from memory 110 ns (over 66 steps and runs)"),
        "sitting #16's host: {html}"
    );

    // The index and the experiment's own page lead to it.
    let index = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(
        index.contains(&pages::history_path("nightly")),
        "the index links the history"
    );

    // In a browser: drawn, not blank, nothing said on the console, the figures' blue on screen.
    let work = tempfile::tempdir().unwrap();
    let (dom, shot) = open(&page, work.path(), "history");
    assert!(dom.contains("Changes found"), "{dom}");
    assert!(
        shot.count(BLUE) > 300,
        "the figures' line is on the screen: {} blue pixels",
        shot.count(BLUE)
    );
}
