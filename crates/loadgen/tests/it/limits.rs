//! Servers of known limits at fixed rates past their knees, as the seed experiments run them:
//! the experiment page says what limited each one, from its probes, not the generator's reason
//! for sending late; and every figure labelled with a target is that target's own, with its
//! database shown beside it as a group of its own.
//!
//! One Go server (`targets/go/cmd/limited`) with its limit built in, four ways: spinning its
//! one CPU, the same held to half a CPU by a cgroup quota, holding a pool of 2 connections
//! 5 ms a request in `pg_sleep`, and running a CPU-heavy query a request on a PostgreSQL alone
//! on CPU 1. Generator on CPU 0, servers and PostgreSQL on CPU 1.
//!
//! The rates are past the servers' knees, and the generator must keep them: the test waits (up
//! to a minute) for other processes to leave the machine quiet, and where they do not, or
//! take the generator's CPU again while the cells run, says "not measurable here" and asserts
//! nothing of the limits.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use store::run::RunFilter;
use store::vocabulary::label;
use store::{RunStatus, Store};

use crate::{common, fits};

const LOADGEN: &str = env!("CARGO_BIN_EXE_loadgen");

/// The server of known limits, built from the Go target's module into `dir`.
fn build_limited(dir: &Path) -> PathBuf {
    let module = concat!(env!("CARGO_MANIFEST_DIR"), "/../../targets/go");
    let out = dir.join("limited");
    let status = Command::new("go")
        .args(["build", "-o"])
        .arg(&out)
        .arg("./cmd/limited")
        .current_dir(module)
        .status()
        .expect("go is installed (the README's test command checks)");
    assert!(status.success(), "go build ./cmd/limited failed");
    out
}

fn file(bin: &Path) -> String {
    let bin = bin.display();
    format!(
        r#"
name = "limits"
question = "Does the page say what limited each server?"
pre_roll = "500ms"
post_roll = "500ms"

[placement]
gun_cpus = "0"
target_cpus = "1"

[database]
env = "DATABASE_URL"
cpus = "1"

# 1 ms of CPU a request: about 1,000 req/s on its one CPU.
[[target]]
name = "spin"
command = ["{bin}"]
env = {{ PORT = "{{port}}", LIMIT = "cpu", WORK_US = "1000" }}
ready = "/healthz"

# The same, held to half a CPU: about 500 req/s.
[[target]]
name = "quota"
command = ["{bin}"]
env = {{ PORT = "{{port}}", LIMIT = "cpu", WORK_US = "1000" }}
ready = "/healthz"
cpus = 0.5

# 2 connections, each held 5 ms a request: 400 req/s.
[[target]]
name = "pool"
command = ["{bin}"]
env = {{ PORT = "{{port}}", LIMIT = "pool", POOL = "2", SLEEP_MS = "5" }}
ready = "/healthz"
load = {{ rate = 1200 }}

# A query of 60,000 rows of arithmetic a request, 16 connections: PostgreSQL's CPU.
[[target]]
name = "query"
command = ["{bin}"]
env = {{ PORT = "{{port}}", LIMIT = "query", POOL = "16", QUERY_ROWS = "60000" }}
ready = "/healthz"
load = {{ rate = 800 }}

[load]
path = "/work"
rate = 2000
duration = "4s"
timeout = "2s"
"#
    )
}

/// The sentence of `target` in the answers of the experiment page.
fn answer<'a>(page: &'a str, target: &str) -> &'a str {
    let answers = &page[page.find("<ul class=\"answers\">").expect("answers")..];
    let answers = &answers[..answers.find("</ul>").unwrap()];
    let at = answers
        .find(&format!(" {target} did not hold up: "))
        .unwrap_or_else(|| panic!("{target} held up? {answers}"));
    let sentence = &answers[at..];
    &sentence[..sentence
        .find(". ")
        .or(sentence.find(".<"))
        .unwrap_or(sentence.len())]
}

/// The servers, as `file` names them.
const TARGETS: [&str; 4] = ["spin", "quota", "pool", "query"];

#[test]
fn every_did_not_hold_up_names_what_limited_the_server() {
    let work = tempfile::tempdir().unwrap();
    let bin = build_limited(work.path());
    // What limited a server is read at rates past its knee, which the generator on CPU 0 must
    // send on time: beside other processes it cannot (its cells fail as the generator's, which
    // is right), so the test waits for a quiet machine (60 s at most), and measures anyway.
    common::wait_for_quiet("what limited each server", Duration::from_secs(60));
    let path = work.path().join("limits.toml");
    std::fs::write(&path, file(&bin)).unwrap();
    let db = format!("sqlite://{}/runs.db", work.path().display());
    let site = work.path().join("site");
    let out = Command::new(LOADGEN)
        .args(["experiment", "run"])
        .arg(&path)
        .args(["--db", &db, "--report"])
        .arg(&site)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{said}");
    // A run held back with the machine still busy is excused below, once every other cell
    // was checked; anything else that failed the experiment fails the test.
    let excused = !out.status.success() && common::not_measurable_here(&said);
    if !excused {
        assert!(out.status.success(), "{said}");
    }

    // A server's measured run, each. A run that other processes held back (they took the
    // generator's CPU, or paused it as its schedule began) is kept failed, and its cell
    // measured again once the CPU is quiet: left out here. A cell held back both times was
    // not measured: other processes took the machine while it ran.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let store = rt.block_on(Store::open(&db)).unwrap();
    let runs = common::final_runs(
        rt.block_on(store.list_runs(&RunFilter {
            experiment: Some("limits".into()),
            ..Default::default()
        }))
        .unwrap(),
    );
    // Every cell not held back first; a held-back one is excused only on a machine still busy,
    // and on a quiet one fails below with the rest.
    let (held, rest): (Vec<_>, Vec<_>) = runs.iter().partition(|r| common::held_back(r));
    let excused = !held.is_empty() && (excused || common::not_measurable_here(&said));
    for r in rest.iter().chain(if excused { &[][..] } else { &held[..] }) {
        assert_eq!(
            r.status,
            RunStatus::Complete,
            "{}: {:?}\n{said}",
            r.name,
            r.summary.as_ref().map(|s| &s.generator)
        );
    }
    if excused {
        return;
    }
    let mut measured: Vec<&str> = runs
        .iter()
        .filter_map(|r| r.labels.get(label::TARGET).map(String::as_str))
        .collect();
    measured.sort_unstable();
    let mut expected = TARGETS.to_vec();
    expected.sort_unstable();
    assert_eq!(measured, expected, "a measured run a server");
    assert_eq!(runs.len(), TARGETS.len(), "a measured run a server");
    // Every target's figures are its own: the Go server's memory, never PostgreSQL's.
    for r in &runs {
        let rss = r.peak_rss_bytes.expect("the target's probe read its RSS");
        assert!(
            rss < 200 << 20,
            "{}: {} MiB is not a small Go server's",
            r.name,
            rss >> 20
        );
    }

    let page_path = std::fs::read_dir(site.join("experiments"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let page = std::fs::read_to_string(&page_path).unwrap();
    for (target, limit) in [
        ("spin", "limited by its CPU: "),
        ("quota", "limited by its CPU quota: throttled in "),
        ("pool", "limited by its pool of connections to PostgreSQL: "),
        ("query", "limited by PostgreSQL's CPU"),
    ] {
        // A run held back and measured again is on the page as a failed repetition, after
        // the limit its measured run found.
        let sentence = answer(&page, target);
        assert!(
            sentence.starts_with(&format!(" {target} did not hold up: {limit}")),
            "{target}: {sentence}"
        );
        // The server's limit first; the generator's lateness only as its consequence.
        assert!(!sentence.contains("held back by"), "{sentence}");
    }
    // The evidence of each, one click away.
    assert_eq!(
        page.matches("<summary>What limited ").count(),
        8,
        "twice each: the answers and the setting's paragraph"
    );
    let beside = &page[page
        .find("<h2>Beside the targets</h2>")
        .expect("the database beside")..];
    assert!(beside.contains("<th>PostgreSQL</th>"), "{beside}");
    assert!(beside.contains("(PSS of "), "{beside}");

    // The page and each server's run page fit a 1,280-px window: a verdict is a sentence,
    // its evidence one click away.
    let mut pages = vec![page_path];
    for e in std::fs::read_dir(site.join("runs")).unwrap() {
        pages.push(e.unwrap().path());
    }
    fits::assert_fit(&pages, 1280, work.path());
    for r in &runs {
        let run_page = std::fs::read_to_string(site.join("runs").join(format!("{}.html", r.id)))
            .unwrap_or_else(|e| panic!("{}: no run page ({e})", r.name));
        assert!(
            run_page.contains("<dt>limited by</dt>"),
            "{}: its run page says what limited its server",
            r.name
        );
    }
}
