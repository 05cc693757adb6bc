//! `loadgen capacity` against servers whose capacity is known by construction: the built-in
//! target spending a fixed CPU time per request on its only thread (one request at a time, so
//! it serves at most 1 / work a second), pinned to a CPU of its own while the generator has the
//! other. The search's C_0.5 must land within 10 % of the truth with a 95 % interval within
//! ±5 %; a hog on the generator's CPU must make the steps invalid, never a lower capacity; a
//! step above capacity whose queue builds slowly must fail as unstable (it serves less than
//! 99 % of the rate) even when its p99 is inside the SLO.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::process::{Child, Command};

use analysis::capacity::{Arrival, Repeated, Search, Status, Verdict};
use common::exclusive;

const LOADGEN: &str = env!("CARGO_BIN_EXE_loadgen");

/// The built-in target, pinned to CPU 1, spending `work` per request; killed when dropped.
struct Target {
    child: Child,
    url: String,
}

impl Target {
    fn start(work: &str) -> Target {
        Target::with(&["--work", work])
    }

    /// The built-in target with `args` (e.g. `--work 1ms --lock`), pinned to CPU 1.
    fn with(args: &[&str]) -> Target {
        let mut taskset = Command::new("taskset");
        taskset.args(["-c", "1", LOADGEN]);
        let (child, addr) = common::loadgen_target(taskset, args);
        Target {
            child,
            url: format!("http://{addr}/"),
        }
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `loadgen ARGS` on CPU 0.
fn on_cpu0(args: &[&str]) -> std::process::Output {
    let out = Command::new("taskset")
        .args(["-c", "0", LOADGEN])
        .args(args)
        .output()
        .unwrap();
    eprintln!(
        "loadgen {args:?}\n--- stdout\n{}--- stderr\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    common::heard(&String::from_utf8_lossy(&out.stdout));
    common::heard(&String::from_utf8_lossy(&out.stderr));
    out
}

/// The search `loadgen capacity URL ARGS` finds, from its JSON.
fn capacity(url: &str, args: &[&str]) -> Search {
    searches(url, args)
        .searches
        .into_iter()
        .next()
        .expect("one search")
}

/// The searches `loadgen capacity URL ARGS` runs and what they agree on, from its JSON.
fn searches(url: &str, args: &[&str]) -> Repeated {
    let mut all = vec!["capacity", url, "--no-store", "--output", "json"];
    all.extend_from_slice(args);
    let out = on_cpu0(&all);
    serde_json::from_slice(&out.stdout).expect("the searches as JSON")
}

/// The most the target serves: what 16 connections of a closed loop get from it, the higher of
/// two 3 s readings (what the suite's host takes only lowers a reading).
fn truth(url: &str) -> f64 {
    reading(url).max(reading(url))
}

/// What 16 connections of a closed loop get from the target in 3 s.
fn reading(url: &str) -> f64 {
    let out = on_cpu0(&[
        "attack",
        url,
        "-c",
        "16",
        "-d",
        "3s",
        "--no-store",
        "--output",
        "json",
    ]);
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    summary["requests"]["throughput"].as_f64().unwrap()
}

#[test]
fn the_capacity_found_is_within_ten_percent_of_the_truth() {
    let _cpu = exclusive();
    common::unless_held_back(|| {
        let target = Target::start("1ms");
        let before = truth(&target.url);
        let repeated = searches(
            &target.url,
            &[
                "--slo",
                "p99<=20ms",
                // 1 %, not 0.1 %: showing 0.1 % takes 7,680 requests a step (8 s windows here),
                // and the test is about the knee, not the error bound.
                "--slo",
                "errors<=1%",
                "--step",
                "2s",
                "--warmup",
                "500ms",
                // The built-in target is warm at once: one short window of the warm-up.
                "--settle",
                "10s",
                // The default 30 steps: once in CI a search of this target ended at ±9.5 % after
                // 25 steps beside its knee, on a host the suite shares (a knee wider than the
                // simulated worlds' sharp one: docs/benchmarks/capacity.md, the worlds grid).
                "--max-steps",
                "45",
            ],
        );
        // The truth read before and after the search, the higher kept: a closed loop reads the
        // target's ceiling or less, and what the suite's host takes only lowers it (a CI run read
        // 819 req/s before a search that found 984, ±0.4 %).
        let after = truth(&target.url);
        let truth = before.max(after);
        assert!(
            (700.0..1_050.0).contains(&truth),
            "1 ms a request: {before} and {after} req/s at most"
        );
        // One search: C_0.5 of 2 s windows, estimated from every step, with its 95 % interval.
        assert_eq!(repeated.searches.len(), 1, "{}", repeated.stopped);
        let agreed = repeated.capacity.clone().unwrap();
        assert_eq!(agreed.searches, 1);
        assert!(
            (agreed.rate - truth).abs() / truth <= 0.10,
            "C_0.5 {} req/s, truly {truth}",
            agreed.rate
        );
        let search = repeated.searches.into_iter().next().unwrap();
        assert_eq!(search.status, Status::Found, "{}", search.reason);
        // How the requests arrived is kept with the search: evenly spaced, without --batch.
        assert_eq!(search.settings.arrival, Some(Arrival::Uniform));
        let found = search.capacity.unwrap();
        assert!(
            (found - truth).abs() / truth <= 0.10,
            "found {found} req/s, truly {truth}"
        );
        // Its interval is 95 %, within the ±5 % asked, and said in the words of the figure.
        let e = search.estimate().unwrap();
        assert_eq!((e.p, e.confidence, e.rate), (0.5, 0.95, found));
        assert!(e.within(0.05), "{e:?}: {}", search.reason);
        assert!(
            search
                .reason
                .contains("95 % interval of C_0.5(T = 2 s, w = 0.5 s"),
            "{}",
            search.reason
        );
        assert!(search.steps.iter().filter(|s| s.fine).count() >= 12);
        for step in &search.steps {
            let (verdict, rate) = (step.judgement.verdict, step.rate);
            if rate > truth * 1.05 {
                assert_ne!(
                    verdict,
                    Verdict::Pass,
                    "{rate} req/s is past the truth {truth}"
                );
            }
        }
    });
}

#[test]
fn a_step_whose_queue_builds_slowly_fails_as_unstable_though_its_p99_is_inside_the_slo() {
    let _cpu = exclusive();
    common::unless_held_back(|| {
        // 2 ms a request: at most 500 req/s. At 5 % more, the queue grows by 25 requests a second,
        // 50 ms of latency a second: over 3 s, well inside a 2 s SLO.
        let target = Target::start("2ms");
        let truth = truth(&target.url);
        let rate = format!("{:.0}", truth * 1.05);
        let search = capacity(
            &target.url,
            &[
                "--slo",
                "p99<=2s",
                "--step",
                "3s",
                "--warmup",
                "500ms",
                // The built-in target is warm at once: one short window of the warm-up.
                "--settle",
                "10s",
                "--start",
                &rate,
                "--min-rate",
                &rate,
                "--max-rate",
                &rate,
            ],
        );
        let first = &search.steps[0].judgement;
        assert_eq!(first.verdict, Verdict::Unstable, "{}", first.reason);
        assert!(
            first.terms[0].value < 2e9,
            "its p99 alone would have passed: {first:?}"
        );
        assert_eq!(search.status, Status::BelowMinimum);
        assert!(
            search.capacity.is_none(),
            "never a capacity from a step above it"
        );
    });
}

#[test]
fn a_hog_on_the_generators_cpu_makes_the_search_find_the_generators_limit_not_the_servers() {
    let _cpu = exclusive();
    let target = Target::start("0s");
    // Two busy loops on the generator's CPU: it gets a third of it.
    let hogs: Vec<Child> = (0..2)
        .map(|_| {
            Command::new("taskset")
                .args(["-c", "0", "sh", "-c", "while :; do :; done"])
                .spawn()
                .unwrap()
        })
        .collect();
    let search = capacity(
        &target.url,
        &[
            "--slo",
            "p99<=10ms",
            "--step",
            "2s",
            "--warmup",
            "500ms",
            // The built-in target is warm at once: one short window of the warm-up.
            "--settle",
            "10s",
            "--start",
            "40000",
            "--threads",
            "1",
            // The generator's limit to within 20 %: enough to show it measured, in few steps.
            "--resolution",
            "20%",
        ],
    );
    for mut h in hogs {
        let _ = h.kill();
        let _ = h.wait();
    }
    assert_eq!(search.status, Status::GeneratorLimited, "{}", search.reason);
    assert!(
        search.reason.contains("the generator is the limit"),
        "{}",
        search.reason
    );
    // The generator's limit is measured: the lowest invalid step, with the capacity (the
    // server passed there) just below it, within the resolution.
    let limit = search.generator_limit.expect("the generator's limit");
    let invalid = search
        .steps
        .iter()
        .find(|st| st.rate == limit)
        .expect("the step at the limit");
    assert_eq!(invalid.judgement.verdict, Verdict::Invalid);
    if let Some(cap) = search.capacity {
        assert!(
            cap < limit && (limit - cap) / cap <= 0.20 + 1e-9,
            "at least {cap}, generator's limit {limit}: {}",
            search.reason
        );
    }
}

#[test]
fn a_bad_slo_is_one_line_that_gives_the_grammar() {
    let out = std::process::Command::new(LOADGEN)
        .args(["capacity", "http://127.0.0.1:9/", "--slo", "p99<10ms"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("write FIGURE<=BOUND: p99<=10ms"), "{said}");
}

/// The comparison `loadgen capacity URL --against ORIGIN… ARGS` runs, from its JSON.
fn compared(url: &str, against: &[String], args: &[&str]) -> analysis::capacity::compare::Compared {
    let mut all = vec!["capacity", url, "--no-store", "--output", "json"];
    for origin in against {
        all.extend(["--against", origin.as_str()]);
    }
    all.extend_from_slice(args);
    let out = on_cpu0(&all);
    serde_json::from_slice(&out.stdout).expect("the comparison as JSON")
}

/// Short steps of the built-in target: p99 ≤ 20 ms and errors ≤ 1 %, 1 s steps after 300 ms.
fn short_steps() -> Vec<&'static str> {
    vec![
        "--slo",
        "p99<=20ms",
        "--slo",
        "errors<=1%",
        "--step",
        "1s",
        "--warmup",
        "300ms",
        // The built-in target is warm at once: one short window of the warm-up.
        "--settle",
        "10s",
    ]
}

/// The flags of the suite's comparisons of the built-in target: 1 s steps, `rounds` rounds.
fn comparison_args(rounds: &str) -> Vec<&str> {
    let mut args = short_steps();
    args.extend(["--start", "500", "--rounds", rounds]);
    args
}

/// The comparison at 12 rounds; where a ratio has no interval (it says more rounds would
/// narrow it) or one wider than ±15 %, the comparison is run again as the user would, at twice
/// the rounds. At 12 rounds of 1 s about one ratio in ten has a figure whose 12 steps (three
/// clusters) do not bound it on both sides, an honest "no interval", not a claim of difference.
fn settled(url: &str, against: &[String]) -> analysis::capacity::compare::Compared {
    let run = |rounds: &str| compared(url, against, &comparison_args(rounds));
    let first = run("12");
    assert_eq!(first.rounds, 12, "{}", first.reason);
    let mut answered = true;
    for r in &first.ratios {
        match r.half_width() {
            // An answer to act on: a difference, or none within ±15 %.
            Some(h) if h <= 0.15 => {}
            // An interval too wide to say either (once in CI: 0.824×, 95 % interval
            // 0.465–1.379, a stall of the shared host in one of three clusters): a user runs
            // more rounds.
            Some(_) => answered = false,
            None => {
                assert!(
                    r.text().contains("more rounds would narrow it"),
                    "{}",
                    r.text()
                );
                answered = false;
            }
        }
    }
    if answered {
        return first;
    }
    let again = run("24");
    assert_eq!(again.rounds, 24, "{}", again.reason);
    again
}

/// A comparison read as its rounds come (`--sequential`): a server 0.8× as fast is decided
/// lower at a look before the most rounds, its interval read at the look's confidence and said
/// to hold 95 % however the rounds stopped.
#[test]
fn a_sequential_comparison_stops_once_it_is_decided() {
    let _cpu = exclusive();
    common::unless_held_back(|| {
        let (a, b) = (Target::start("1ms"), Target::start("1250us"));
        let origin = b.url.trim_end_matches('/').to_string();
        let mut args = comparison_args("32");
        args.push("--sequential");
        let c = compared(&a.url, &[origin], &args);
        let r = &c.ratios[0];
        assert!(c.reason.starts_with("decided after "), "{}", c.reason);
        assert!(c.rounds < 32 && [8, 16].contains(&c.rounds), "{}", c.reason);
        assert!((r.confidence - (1.0 - 0.05 / 3.0)).abs() < 1e-9, "{r:?}");
        assert_eq!(
            r.difference(),
            analysis::capacity::compare::Difference::Lower,
            "{}",
            r.text()
        );
        assert!(
            r.text()
                .contains("95 % interval however the rounds stopped"),
            "{}",
            r.text()
        );
    });
}

/// One sitting of three targets taking turns on CPU 1: the first (1 ms a request), a slower
/// server (1.25 ms: 0.8× the first's capacity) and the first again (its A/A control).
#[test]
fn a_slower_server_compares_lower_and_a_server_against_itself_is_not_shown_to_differ() {
    let _cpu = exclusive();
    common::unless_held_back(|| {
        let (a, b) = (Target::start("1ms"), Target::start("1250us"));
        let origin = |t: &Target| t.url.trim_end_matches('/').to_string();
        let sitting = settled(&a.url, &[origin(&b), origin(&a)]);
        assert_eq!(sitting.searches.len(), 3);
        // Every round ran one step of each, and every step says its round.
        for s in &sitting.searches {
            let rounds: Vec<u32> = s.steps.iter().map(|st| st.round.unwrap()).collect();
            assert_eq!(
                rounds,
                (1..=sitting.rounds).collect::<Vec<u32>>(),
                "{}",
                s.name
            );
        }
        assert_eq!(sitting.ratios.len(), 2);
        let r = &sitting.ratios[0];
        assert_eq!(
            (r.of.as_str(), r.to.as_str()),
            (
                sitting.searches[1].id.as_str(),
                sitting.searches[0].id.as_str()
            )
        );
        assert_eq!(r.confidence, 0.95);
        assert!((0.72..=0.88).contains(&r.ratio), "{r:?}");
        assert_eq!(
            r.difference(),
            analysis::capacity::compare::Difference::Lower,
            "{}",
            r.text()
        );
        // A/A: the first target against itself.
        let r = &sitting.ratios[1];
        assert_eq!(
            (r.of.as_str(), r.to.as_str()),
            (
                sitting.searches[2].id.as_str(),
                sitting.searches[0].id.as_str()
            )
        );
        // The same origin twice is told apart by its place in the comparison.
        assert!(
            r.of_name.ends_with("#3") && r.to_name.ends_with("#1"),
            "{r:?}"
        );
        assert!((0.95..=1.05).contains(&r.ratio), "{}", r.text());
        assert_eq!(
            r.difference(),
            analysis::capacity::compare::Difference::NotShown,
            "{}",
            r.text()
        );
        assert!(r.text().contains("not shown to differ"), "{}", r.text());
    });
}

#[test]
fn against_takes_an_origin_not_a_url_with_a_path() {
    let out = std::process::Command::new(LOADGEN)
        .args([
            "capacity",
            "http://127.0.0.1:9/now",
            "--slo",
            "p99<=10ms",
            "--against",
            "http://127.0.0.1:10/now",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("--against takes an origin"), "{said}");
}

/// `loadgen capacity` of the built-in target at `url` with a check of ten blocks, kept in `db`,
/// in JSON. Windows of half a second (the check's steps are the search's): the check is the same
/// on a curve of any window, and its 86 steps or so take half the time. No error bound: 1 % is
/// not shown by the few hundred requests of a low step's window.
fn checked<'a>(url: &'a str, db: &'a str) -> Vec<&'a str> {
    vec![
        "capacity",
        url,
        "--slo",
        "p99<=20ms",
        "--step",
        "500ms",
        "--warmup",
        "200ms",
        // The built-in target is warm at once: one short window of the warm-up.
        "--settle",
        "10s",
        "--max-steps",
        "45",
        "--check",
        "10",
        "--db",
        db,
        "--output",
        "json",
    ]
}

/// `--check`: after the search, blocks of one step at the ends of C_0.5's interval and at
/// C_0.75, C_0.5 and C_0.25 of its curve, each block in a random order, then the search again;
/// the check kept with the search and shown on its page. On the built-in target every level's
/// passes lie in the range a figure whose interval holds allows; the sitting may move under a
/// check (a VM's did by 2 % in five minutes: docs/benchmarks/capacity.md), which the check says
/// as "moved" or "void", never as a wrong figure.
#[test]
fn a_check_runs_blocks_at_the_five_levels_and_finds_the_built_in_targets_figure_within_range() {
    let _cpu = exclusive();
    common::unless_held_back(|| {
        let target = Target::start("1ms");
        let dir = tempfile::tempdir().unwrap();
        let db = format!("sqlite://{}", dir.path().join("store.db").display());
        let site = dir.path().join("site");
        let mut args = checked(&target.url, &db);
        args.extend(["--report", site.to_str().unwrap()]);
        let out = on_cpu0(&args);
        assert!(out.status.success());
        let repeated: Repeated = serde_json::from_slice(&out.stdout).unwrap();
        let search = repeated.searches.first().unwrap();
        let check = search.check.as_ref().expect("a check of a found figure");
        use analysis::capacity::check::Outcome;
        // Pre-registered: five levels, lowest rate first, every block ran each once. Ten blocks:
        // with fewer, every level's range may hold every count and the check then says only "too
        // few blocks" (four blocks did); its simulated worlds test its power.
        assert_eq!(check.levels.len(), 5);
        assert!(check.levels.windows(2).all(|w| w[0].rate <= w[1].rate));
        assert!(check.levels.iter().all(|l| l.runs == 10), "{check:?}");
        assert_eq!(check.steps.len(), 50);
        for l in &check.levels {
            assert!(
                (l.low..=l.high).contains(&l.passes),
                "{} passed {} of {}, outside {}–{}",
                l.name,
                l.passes,
                l.runs,
                l.low,
                l.high
            );
        }
        assert!(
            matches!(
                check.outcome,
                Outcome::Held | Outcome::Moved | Outcome::Void
            ),
            "{:?}",
            check.outcome
        );
        // The search run again is kept as a search of its own; the check's steps are runs.
        let again = check.again.as_ref().expect("the search again");
        let page =
            std::fs::read_to_string(site.join(report::pages::search_path(&search.id))).unwrap();
        assert!(page.contains("Calibration check"), "{page}");
        assert!(page.contains(&again.id));
        assert!(check.steps.iter().all(|s| s.run_id.is_some()));
        // The check's steps never enter the figure: the search's own steps are all its fit has.
        assert_eq!(
            search.estimate().map(|e| e.steps),
            Some(search.steps.iter().filter(|s| s.valid()).count())
        );
    });
}

/// `--check` can fail: the built-in target's capacity halves half-way through the check (a busy
/// loop starts beside it on its CPU after the fifth block, and ends with the check's last step,
/// before the search runs again). The blocks' second half passes less often than their first,
/// and the check fails, never "held".
#[test]
fn a_check_fails_on_a_server_whose_capacity_moves_under_it() {
    use analysis::capacity::check::Outcome;
    use std::io::BufRead;
    let _cpu = exclusive();
    common::unless_held_back(|| {
        let target = Target::start("1ms");
        let dir = tempfile::tempdir().unwrap();
        let db = format!("sqlite://{}", dir.path().join("store.db").display());
        let mut child = Command::new("taskset")
            .args(["-c", "0", LOADGEN])
            .args(checked(&target.url, &db))
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let json = std::thread::spawn(move || std::io::read_to_string(stdout).unwrap());
        let blocks = 10;
        let levels = 5;
        let mut checked = None::<usize>;
        let mut hog: Option<Child> = None;
        let mut said = String::new();
        for line in std::io::BufReader::new(child.stderr.take().unwrap()).lines() {
            let line = line.unwrap();
            said.push_str(&line);
            said.push('\n');
            if line.starts_with("Calibration check:") {
                checked = Some(0);
                continue;
            }
            let Some(n) = checked.as_mut() else { continue };
            if !line.starts_with("  step ") {
                continue;
            }
            *n += 1;
            if *n == blocks / 2 * levels {
                // Bounded: the loop ends by itself after 5 minutes if this test dies first (one
                // process, taskset's exec of bash: killing it ends the loop).
                hog = Some(
                    Command::new("taskset")
                        .args([
                            "-c",
                            "1",
                            "bash",
                            "-c",
                            "while [ $SECONDS -lt 300 ]; do :; done",
                        ])
                        .spawn()
                        .unwrap(),
                );
            }
            if *n == blocks * levels {
                if let Some(mut h) = hog.take() {
                    let _ = h.kill();
                    let _ = h.wait();
                }
            }
        }
        if let Some(mut h) = hog.take() {
            let _ = h.kill();
            let _ = h.wait();
        }
        let status = child.wait().unwrap();
        let json = json.join().unwrap();
        eprintln!("--- stdout\n{json}--- stderr\n{said}");
        common::heard(&json);
        common::heard(&said);
        assert!(status.success());
        let repeated: Repeated = serde_json::from_str(&json).unwrap();
        let check = repeated.searches[0].check.as_ref().expect("a check");
        assert_eq!(check.steps.len(), blocks * levels, "every block ran");
        let halves = check.halves.as_ref().expect("halves");
        // The loop ran through the second half: it passed no more often than the first (where the
        // first half's passes were few too, both may read 0 of 25, as one CI run's did).
        assert!(
            halves.second.0 <= halves.first.0 && halves.z <= 0.0,
            "the second half passed no more often: {halves:?}"
        );
        if check.outcome == Outcome::Moved {
            assert!(halves.second.0 < halves.first.0, "{halves:?}");
        }
        // The check fails, never "held": the halves differ ("moved"), or, where the knee is so
        // sharp that the first half's passes were few too, every level passed less often than the
        // figure allows ("figure high"), or the search run again excludes the first ("void": a
        // host that moved during the first search too, as one CI run's did, 705 req/s against
        // about 990). Where it is not void, the search again (the loop ended) agrees with the first.
        assert!(
            matches!(
                check.outcome,
                Outcome::Moved | Outcome::High | Outcome::Void
            ),
            "{}",
            check.text()
        );
        if check.outcome != Outcome::Void {
            let again = check.again.as_ref().expect("the search again");
            let (low, high) = (again.low.unwrap(), again.high.unwrap());
            let first = repeated.searches[0].capacity.unwrap();
            assert!(
                (low * 0.9..=high * 1.1).contains(&first),
                "{again:?} against {first}"
            );
        }
        // What the terminal prints after the figure (as text; JSON carries the outcome).
        assert!(
            ["void, the sitting moved", "failed, the figure reads high"]
                .iter()
                .any(|w| check.text().contains(w)),
            "{}",
            check.text()
        );
    });
}

#[test]
fn a_check_of_fewer_than_four_blocks_or_of_a_comparison_is_refused_in_one_line() {
    for args in [
        vec!["--check", "2"],
        vec!["--check", "10", "--against", "http://127.0.0.1:9"],
        vec!["--check", "10", "--searches", "3"],
    ] {
        let out = std::process::Command::new(LOADGEN)
            .args(["capacity", "http://127.0.0.1:9/", "--slo", "p99<=10ms"])
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("--check"), "{args:?}: {err}");
    }
}

/// `loadgen capacity` with a probe that profiles the server and a store: what grew with the
/// rate at the knee is read back from the steps' kept runs and said, on the terminal and in the
/// JSON. The server is the built-in target's two worker threads sharing one lock (the one
/// that waits spinning for it), so the lock's frame is among the functions read.
#[test]
fn a_profiled_search_says_what_grew_at_its_knee_on_the_terminal_and_in_its_json() {
    let _cpu = exclusive();
    let target = Target::with(&["--work", "1ms", "--lock"]);
    let probe = common::local_probe_profiling(
        probe::selector::Selector::Pid(target.child.id() as i32),
        probe::server::ServeConfig::default(),
        100_000,
        // As the experiment's knee test: 999 samples a second, so that 1 s steps hold enough.
        Some(999),
    );
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/runs.db", dir.path().display());
    let addr = probe.addr.to_string();
    let mut args = vec!["capacity", target.url.as_str()];
    args.extend(short_steps());
    args.extend([
        // Enough steps beside the knee to compare its sides (the default 30 took 146 s with
        // 3 s of pre- and post-roll; at 14 the lock was named in 1 of 4 searches).
        "--max-steps",
        "24",
        "--probe",
        &addr,
        "--profile",
        "--pre-roll",
        "200ms",
        "--post-roll",
        "200ms",
        "--db",
        &db,
        "--output",
        "json",
    ]);
    let out = on_cpu0(&args);
    assert!(out.status.success());
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let id = answer["searches"][0]["id"]
        .as_str()
        .expect("a search")
        .to_string();
    let knee = &answer["knees"][&id];
    assert_eq!(knee["found"], "knee", "{knee}");
    // The functions were read from the steps' profiles and tested. Which of them is named is
    // the knee's own test's (`ab::functions::knee`) and the experiment's
    // (`a_search_of_a_server_whose_lock_contention_grows_names_the_lock_at_the_knee`): in CI
    // one search of 24 steps named the spin loop and `clock_gettime` rather than the lock.
    let functions = &knee["functions"];
    assert!(functions["tested"].as_u64().unwrap_or(0) > 0, "{functions}");
    assert!(
        functions["own"]
            .as_array()
            .is_some_and(|own| own.iter().any(|f| f["name"]
                .as_str()
                .is_some_and(|n| n.ends_with("::wait_for_lock")))),
        "the lock's frame is not among the functions read: {functions}"
    );
    // In words, as the terminal says it.
    let found: analysis::capacity::knee::Found = serde_json::from_value(knee.clone()).unwrap();
    let said = found.text().expect("said");
    assert!(
        said.starts_with("At the knee: From the passing steps")
            && said.contains("functions' own CPU tested over"),
        "{said}"
    );
}
