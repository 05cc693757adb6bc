//! An experiment's page, drawn from runs in a real store the way the experiment runner keeps
//! them: its sentences, its matrix and write-up tables equal the runs' figures over their
//! repetitions, a failed repetition shows as one, warm-ups and older files' runs stay out, and
//! its charts carry a line per target.
#![allow(clippy::unwrap_used)]

use crate::experiment_runs;
use crate::runs;

use experiment_runs::{drawn, drawn_closed};
use report::experiment::{Metric, Spread};
use runs::HOSTILE;

#[tokio::test]
async fn the_page_answers_from_every_repetition_and_says_what_failed() {
    let d = drawn().await;
    let page = &d.page;
    assert!(!page.contains(HOSTILE), "the question is escaped");
    assert!(page.contains("Which is faster, &lt;script&gt;"));
    // One sentence per setting: fast is lower, beyond the spread.
    assert!(
        page.contains("At rate=100: fast had the lowest p99")
            && page
                .contains("the difference with slow is larger than the spread between repetitions"),
        "{}",
        &page[page.find("Answers").unwrap()..][..800]
    );
    // The failed repetition, in the sentence and the matrix.
    assert!(page.contains(
        "slow did not hold up: 1 of 2 repetitions failed (the target exited with code 1)"
    ));
    assert!(page.contains("1 failed"));
    // Counts: 8 measured runs, one failed; the warm-up and the older file's run left out.
    assert!(page.contains("7 of 8 runs complete"), "run counts");
    assert!(page.contains("1 warm-up runs are kept apart"));
    assert!(page.contains("1 runs of earlier sittings, earlier versions of the file"));
    // The older file's 50 ms run would put a 50-something ms p99 on the page.
    assert!(
        !page.contains("(50."),
        "the older file's run is not in any figure"
    );
}

#[tokio::test]
async fn the_tables_hold_the_median_and_spread_of_the_stored_runs() {
    let d = drawn().await;
    // fast at 100 req/s: the throughput of its two repetitions, as stored.
    let mut throughputs = Vec::new();
    let mut p99s = Vec::new();
    for (id, target, rate) in &d.ids {
        if *target == "fast" && *rate == 100 {
            let run = d.store.load_run(id).await.unwrap();
            let s = run.summary.unwrap();
            throughputs.push(s.requests.throughput);
            p99s.push(s.latency.corrected.p99_ns as f64 / 1e6);
        }
    }
    assert_eq!(throughputs.len(), 2);
    let median = (throughputs[0] + throughputs[1]) / 2.0;
    let text = format!("{median:.0}");
    assert!(
        d.page.contains(&text),
        "throughput median {text} on the page"
    );
    p99s.sort_by(f64::total_cmp);
    let p99 = Spread {
        median: (p99s[0] + p99s[1]) / 2.0,
        min: p99s[0],
        max: p99s[1],
        n: 2,
    };
    let shown = |v: f64| {
        if v >= 100.0 {
            format!("{v:.0}")
        } else if v >= 10.0 {
            format!("{v:.1}")
        } else {
            format!("{v:.2}")
        }
    };
    let cell = format!(
        "{} ({}–{})",
        shown(Metric::P99.shown(p99.median)),
        shown(p99.min),
        shown(p99.max)
    );
    assert!(d.page.contains(&cell), "fast's p99 at 100: {cell}");
}

#[tokio::test]
async fn charts_are_svg_with_a_line_per_target() {
    let d = drawn().await;
    let mut rest = d.page.as_str();
    let mut svgs = 0;
    while let Some(start) = rest.find("<svg") {
        let end = start + rest[start..].find("</svg>").unwrap() + 6;
        let svg = &rest[start..end];
        roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("{e}: {svg:.200}"));
        svgs += 1;
        rest = &rest[end..];
    }
    // 6 figures against rate, and 6 per setting for 2 settings.
    assert!(svgs >= 18, "{svgs} charts");
    let across = &d.page[d.page.find("Against rate").unwrap()..];
    let first = &across[across.find("<svg").unwrap()..across.find("</svg>").unwrap()];
    let texts: Vec<&str> = first
        .split("<text")
        .skip(1)
        .filter_map(|t| Some(t[t.find('>')? + 1..t.find("</text>")?].trim()))
        .collect();
    assert!(
        texts.contains(&"fast") && texts.contains(&"slow"),
        "a legend entry per target: {texts:?}"
    );
}

/// A closed loop's question is how much each target serves: the sentence answers in
/// throughput, with the latency at that throughput and what the targets ran on.
#[tokio::test]
async fn a_closed_loop_is_answered_in_throughput() {
    let d = drawn_closed().await;
    let page = &d.page;
    let answers = &page[page.find("<ul class=\"answers\">").unwrap()..];
    let answer = &answers[..answers.find("</ul>").unwrap()];
    assert!(
        answer.contains("At connections=10: fast served the most, 400 req/s at p99 ")
            && answer.contains("against slow 100 req/s (4.0× fewer) at p99 ")
            && answer.contains("Each target pinned to CPU 1, held to 1 CPU quota, memory 1.0 GiB."),
        "{answer}"
    );
    assert!(!answer.contains("had the lowest p99"), "{answer}");
    // The profiles say where slow's CPU went that fast's did not.
    assert!(
        answer.contains("Where their CPU went: slow spent 72 % of its samples in json_encode_slowly itself, fast 0 %."),
        "{answer}"
    );
}
