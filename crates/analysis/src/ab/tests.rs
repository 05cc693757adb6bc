use super::*;
use crate::capacity::random::Rng;

/// A simulated host: each run's figure is the build's true value × e^(drift + noise), the
/// drift an Ornstein–Uhlenbeck process over runs (sd `drift`, correlation time 6 runs), the
/// noise independent per run (sd `noise`), and one run in 50 hit by a stall (+15 %). Each
/// round runs the builds in a random order. Returns each round's (baseline, candidate,
/// control) figures; the candidate's true value is `effect` × the baseline's.
fn sitting(rng: &mut Rng, rounds: usize, effect: f64, drift: f64, noise: f64) -> Vec<[f64; 3]> {
    let phi: f64 = (-1.0f64 / 6.0).exp();
    let mut level = drift * rng.normal();
    let mut out = Vec::new();
    for _ in 0..rounds {
        let mut order = [0usize, 1, 2];
        // Fisher–Yates.
        for i in (1..order.len()).rev() {
            let j = ((rng.uniform() * (i + 1) as f64) as usize).min(i);
            order.swap(i, j);
        }
        let mut round = [0.0; 3];
        for build in order {
            level = phi * level + drift * (1.0 - phi * phi).sqrt() * rng.normal();
            let stall = if rng.uniform() < 0.02 { 0.15 } else { 0.0 };
            let truth = if build == 1 { effect } else { 1.0 };
            round[build] = 40.0 * truth * (level + noise * rng.normal() + stall).exp();
        }
        out.push(round);
    }
    out
}

fn change(rounds: &[[f64; 3]], of: usize) -> Change {
    let pairs: Vec<(f64, f64)> = rounds.iter().map(|r| (r[0], r[of])).collect();
    Change::paired(&pairs).unwrap()
}

#[test]
fn the_interval_holds_the_true_ratio_in_95_percent_of_simulated_sittings() {
    let mut rng = Rng::new(43);
    for (effect, rounds) in [(1.0, 8), (1.10, 8), (1.10, 4), (0.9, 16)] {
        let trials = 4000;
        let mut held = 0;
        for _ in 0..trials {
            let c = change(&sitting(&mut rng, rounds, effect, 0.04, 0.02), 1);
            held += usize::from(c.low <= effect && effect <= c.high);
        }
        let coverage = held as f64 / trials as f64;
        assert!(
            (0.93..=0.97).contains(&coverage),
            "effect {effect}, {rounds} rounds: the interval held the truth in {:.1} %",
            coverage * 100.0
        );
    }
}

#[test]
fn an_unchanged_build_is_rarely_flagged_and_a_slower_one_is() {
    let mut rng = Rng::new(44);
    let trials = 2000;
    let (mut false_alarms, mut flagged) = (0, 0);
    for _ in 0..trials {
        let aa = sitting(&mut rng, 8, 1.0, 0.02, 0.01);
        false_alarms +=
            usize::from(Verdict::of(&change(&aa, 1), 0.05, None, Processes::Fresh).fails());
        let slower = sitting(&mut rng, 8, 1.10, 0.02, 0.01);
        flagged +=
            usize::from(Verdict::of(&change(&slower, 1), 0.05, None, Processes::Fresh).fails());
    }
    let rate = |n: usize| n as f64 / trials as f64;
    assert!(
        rate(false_alarms) <= 0.05,
        "false alarms {}",
        rate(false_alarms)
    );
    assert!(
        rate(flagged) >= 0.8,
        "a 10 % slower build flagged {}",
        rate(flagged)
    );
}

/// The gate's exit code over simulated sittings of 16 rounds with an A/A control, on the
/// X: a 9 % loss
/// of CPU per request exits 4 in at least 90 % of sittings; a candidate at the band's edge (5 %
/// more CPU) in at most 5 %; the identical build never.
#[test]
fn the_gates_exit_code_has_the_power_and_false_alarm_rate_it_claims() {
    let mut rng = Rng::new(56);
    let trials = 2000;
    let exit4 = |rng: &mut Rng, effect: f64| {
        (0..trials)
            .filter(|_| {
                let s = sitting(rng, 16, effect, 0.02, 0.015);
                let control = change(&s, 2);
                Verdict::of(&change(&s, 1), 0.05, Some(&control), Processes::Fresh).fails()
            })
            .count() as f64
            / trials as f64
    };
    let (power, edge, same) = (
        exit4(&mut rng, 1.09),
        exit4(&mut rng, 1.05),
        exit4(&mut rng, 1.0),
    );
    eprintln!("exit 4: 9 % loss {power}, 5 % (the edge) {edge}, none {same}");
    assert!(power >= 0.9, "a 9 % loss exited 4 in {power}");
    assert!(edge <= 0.05, "a 5 % loss exited 4 in {edge}");
    assert!(same <= 0.001, "an identical build exited 4 in {same}");
}

fn c(ratio: f64, low: f64, high: f64) -> Change {
    Change {
        ratio,
        low,
        high,
        rounds: 8,
        could_see: 0.03,
        df: None,
    }
}

#[test]
fn each_verdict_follows_the_interval_against_the_allowed_change() {
    assert_eq!(
        Verdict::of(&c(1.10, 1.07, 1.13), 0.05, None, Processes::Fresh),
        Verdict::Regression
    );
    assert_eq!(
        Verdict::of(&c(0.90, 0.87, 0.93), 0.05, None, Processes::Fresh),
        Verdict::Improvement
    );
    assert_eq!(
        Verdict::of(&c(1.02, 1.01, 1.04), 0.05, None, Processes::Fresh),
        Verdict::Within
    );
    // Better, but by less than a gate would notice: within, not an improvement.
    assert_eq!(
        Verdict::of(&c(0.994, 0.993, 0.995), 0.05, None, Processes::Fresh),
        Verdict::Within
    );
    assert_eq!(
        Verdict::of(&c(1.00, 0.98, 1.03), 0.05, None, Processes::Fresh),
        Verdict::NoChange
    );
    assert!(matches!(
        Verdict::of(&c(1.04, 1.01, 1.08), 0.05, None, Processes::Fresh),
        Verdict::TooNoisy { .. }
    ));
    assert!(matches!(
        Verdict::of(&c(1.00, 0.90, 1.10), 0.05, None, Processes::Fresh),
        Verdict::TooNoisy { .. }
    ));
    // An identical build that read apart (its interval excludes 1) vetoes a verdict that its
    // difference, allowed for, would undo.
    let aa = c(1.06, 1.03, 1.09);
    assert!(matches!(
        Verdict::of(&c(1.10, 1.07, 1.13), 0.05, Some(&aa), Processes::Kept),
        Verdict::TooNoisy { why } if why.contains("against itself read 1.060×") && why.contains("0.982–1.097") && why.contains("processes = \"fresh\"")
    ));
    // But not one it could not undo: 1.40 divided by the control's reach is still beyond 5 %.
    assert_eq!(
        Verdict::of(&c(1.40, 1.37, 1.43), 0.05, Some(&aa), Processes::Kept),
        Verdict::Regression
    );
    assert_eq!(
        Verdict::of(
            &c(1.10, 1.07, 1.13),
            0.05,
            Some(&c(1.0, 0.98, 1.02)),
            Processes::Fresh
        ),
        Verdict::Regression
    );
    // One that differs, but well within what is allowed (two processes' RSS), does not.
    assert_eq!(
        Verdict::of(
            &c(1.02, 1.01, 1.03),
            0.05,
            Some(&c(1.003, 1.003, 1.004)),
            Processes::Kept
        ),
        Verdict::Within
    );
    // A control that is only noisy (its interval holds 1, however wide) does not veto.
    assert_eq!(
        Verdict::of(
            &c(1.10, 1.07, 1.13),
            0.05,
            Some(&c(0.97, 0.80, 1.18)),
            Processes::Fresh
        ),
        Verdict::Regression
    );
}

/// The sitting the gate's users met (issue 56): a database-backed server whose candidate hashes
/// each request's input 150 times more, CPU per request gated at 5 %, eight rounds. Every round
/// read above 1, and the gate said "too noisy" (exit 5) because the A/A control was noisy.
#[test]
fn an_eleven_percent_cpu_regression_with_a_noisy_control_fails_the_gate() {
    let rounds = [1.151, 1.068, 1.231, 1.184, 1.118, 1.055, 1.005, 1.115];
    let change = Change::paired(&rounds.map(|r| (1.0, r))).unwrap();
    assert!(
        (change.ratio - 1.114).abs() < 0.002
            && (change.low - 1.054).abs() < 0.002
            && (change.high - 1.177).abs() < 0.002,
        "{change:?}"
    );
    let control = Change {
        rounds: 8,
        ..c(0.951, 0.806, 1.121)
    };
    let verdict = Verdict::of(&change, 0.05, Some(&control), Processes::Fresh);
    assert_eq!(verdict, Verdict::Regression);
    // As a gate: exit 4, and the control's noise looked into by round.
    let by_round: Vec<(usize, f64)> = [0.98, 0.97, 1.0, 0.81, 0.99, 0.96, 1.01, 0.93]
        .into_iter()
        .enumerate()
        .map(|(i, r)| (i + 1, r))
        .collect();
    let note = looked_into(&change, &control, &by_round);
    assert!(
        note.contains("3.0× as wide") && note.contains("round 4 read 0.810"),
        "{note}"
    );
    let gate = Gate {
        baseline: "main".into(),
        candidate: "pr".into(),
        control: Some("main again".into()),
        rounds: 8,
        processes: Processes::Fresh,
        load: "open loop, constant 500 req/s for 3s".into(),
        measures: vec![Judged {
            measure: Measure::Cpu,
            baseline: Some(1000.0),
            candidate: Some(1114.0),
            change: Some(change),
            control: Some(control),
            ratios: rounds.to_vec(),
            control_ratios: Vec::new(),
            allowed: Some(0.05),
            verdict,
            note,
        }],
        pages: None,
        revisions: Default::default(),
        functions: None,
        reading: Reading::Once,
        stopped: None,
        warnings: Vec::new(),
        process: None,
    };
    assert_eq!(gate.outcome(), Outcome::Regression);
    assert!(gate.measures[0].verdict_text().contains("round 4 read"));
}

/// The eight sittings of a capacity gate (docs/benchmarks/gate.md, sittings 8, 24, 25, 26,
/// 43, 46, 50 and 70) in which a 9 % lower capacity lay wholly below the −5 % band but the gate
/// exited 5, vetoed by the width of an A/A control whose interval held 1.
#[test]
fn the_eight_capacity_sittings_vetoed_by_a_wide_control_now_fail_the_gate() {
    let sittings = [
        (8, (0.910, 0.850, 0.947), (1.011, 0.945, 1.051)),
        (24, (0.914, 0.888, 0.938), (0.997, 0.966, 1.075)),
        (25, (0.911, 0.897, 0.924), (1.001, 0.941, 1.033)),
        (26, (0.914, 0.902, 0.926), (1.006, 0.987, 1.058)),
        (43, (0.912, 0.900, 0.923), (0.946, 0.831, 1.670)),
        (46, (0.919, 0.898, 0.938), (0.998, 0.967, 1.089)),
        (50, (0.917, 0.901, 0.933), (0.989, 0.949, 1.031)),
        (70, (0.909, 0.875, 0.932), (0.991, 0.585, 1.420)),
    ];
    for (sitting, (r, lo, hi), (ar, alo, ahi)) in sittings {
        let v = Verdict::of_capacity(&c(r, lo, hi), 0.05, Some(&c(ar, alo, ahi)));
        assert_eq!(v, Verdict::Regression, "sitting {sitting}");
    }
    // The same sittings' identical builds, judged as candidates, never fail.
    for (sitting, _, (ar, alo, ahi)) in sittings {
        let v = Verdict::of_capacity(&c(ar, alo, ahi), 0.05, None);
        assert!(!v.fails(), "sitting {sitting}: {v:?}");
    }
}

#[test]
fn the_ratio_over_rounds_is_their_geometric_mean_with_a_t_interval() {
    // log-ratios ln 1.1, ln 1.2, ln 1.0: mean ln 1.0967, sd 0.0912, t₀.₉₇₅(2) = 4.303.
    let ch = Change::paired(&[(10.0, 11.0), (10.0, 12.0), (20.0, 20.0)]).unwrap();
    let mean = ((1.1f64).ln() + (1.2f64).ln()) / 3.0;
    assert!((ch.ratio - mean.exp()).abs() < 1e-9);
    let logs = [(1.1f64).ln(), (1.2f64).ln(), 0.0];
    let sd = (logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / 2.0).sqrt();
    // t₀.₉₇₅(2) = 4.30265 (statrs's; tables print 4.303).
    let half = 4.302_652_729_7 * sd / 3f64.sqrt();
    assert!((ch.low - (mean - half).exp()).abs() < 1e-9);
    assert!((ch.high - (mean + half).exp()).abs() < 1e-9);
    assert_eq!(ch.rounds, 3);
    // Fewer than three rounds, or a value that is not positive, give none.
    assert!(Change::paired(&[(10.0, 11.0), (10.0, 12.0)]).is_none());
    assert!(Change::paired(&[(10.0, 11.0), (0.0, 12.0), (10.0, 10.0)]).is_none());
}

#[test]
fn the_allowed_changes_are_read_from_one_flag_with_clear_errors() {
    let a: Allowed = "cpu=5%, p99=10%".parse().unwrap();
    assert_eq!(a.0.get(&Measure::Cpu), Some(&0.05));
    assert_eq!(a.0.get(&Measure::P99), Some(&0.10));
    assert_eq!(a.to_string(), "cpu=5%,p99=10%");
    // Without max_regression: the measures a fixed rate holds steady, latency shown beside.
    assert_eq!(Allowed::default().to_string(), "cpu=5%,rss=5%");
    // Capacity beside the fixed-rate measures: each comparison takes its own.
    let (capacity, fixed) = "capacity=5%,cpu=5%,p99=10%"
        .parse::<Allowed>()
        .unwrap()
        .split();
    assert_eq!(capacity.to_string(), "capacity=5%");
    assert_eq!(fixed.to_string(), "cpu=5%,p99=10%");
    assert!("cpu=5%".parse::<Allowed>().unwrap().split().0.is_empty());
    for (bad, says) in [
        ("cpu=5", "needs its % sign"),
        ("cpu", "is not MEASURE=SHARE"),
        ("vsz=5%", "no measure \"vsz\""),
        ("cpu=-1%", "is not a share"),
        ("cpu=5%,cpu=6%", "given twice"),
        ("", "no measure to gate"),
    ] {
        let e = bad.parse::<Allowed>().unwrap_err().to_string();
        assert!(e.contains(says), "{bad:?}: {e}");
    }
}

#[test]
fn a_gate_says_pass_regression_or_inconclusive_in_words_markdown_and_junit() {
    let judged = |measure, verdict, allowed| Judged {
        measure,
        baseline: Some(40.0),
        candidate: Some(44.0),
        change: Some(c(1.10, 1.07, 1.13)),
        control: None,
        ratios: vec![1.1; 8],
        control_ratios: Vec::new(),
        allowed,
        verdict,
        note: String::new(),
    };
    let mut gate = Gate {
        baseline: "main".into(),
        candidate: "pr-12".into(),
        control: None,
        rounds: 8,
        processes: Processes::Fresh,
        load: "open loop, constant 2000 req/s for 10s".into(),
        measures: vec![
            judged(Measure::Cpu, Verdict::Regression, Some(0.05)),
            judged(Measure::P50, Verdict::Changed, None),
        ],
        pages: Some("pages/index.html".into()),
        revisions: BTreeMap::new(),
        functions: None,
        reading: Reading::Once,
        stopped: None,
        warnings: Vec::new(),
        process: None,
    };
    assert_eq!(gate.outcome(), Outcome::Regression);
    let md = gate.markdown();
    assert!(
        md.contains("❌ Showdown: regression: pr-12 against main, 8 interleaved rounds"),
        "{md}"
    );
    assert!(
        md.contains(
            "| CPU per request | 40.0 µs | 44.0 µs | 1.100× (1.070–1.130) | +5 % | regression"
        ),
        "{md}"
    );
    assert!(md.contains("pages/index.html"), "{md}");
    let xml = junit(std::slice::from_ref(&gate));
    assert!(
        xml.contains("tests=\"2\" failures=\"1\" skipped=\"0\""),
        "{xml}"
    );
    assert!(
        xml.contains("<failure message=\"regression: 1.100×"),
        "{xml}"
    );
    gate.measures[0].verdict = Verdict::TooNoisy {
        why: "a <noisy> host".into(),
    };
    assert_eq!(gate.outcome(), Outcome::Inconclusive);
    let xml = junit(std::slice::from_ref(&gate));
    assert!(xml.contains("skipped=\"1\""), "{xml}");
    assert!(xml.contains("a &lt;noisy&gt; host"), "{xml}");
    gate.measures[0].verdict = Verdict::NoChange;
    assert_eq!(gate.outcome(), Outcome::Pass);
    assert!(gate
        .text()
        .contains("no change detected (could see ≥ 3.0 %)"));
    // A baseline built from a ref says which commit it was, in every form the gate is read.
    gate.revisions
        .insert("main".into(), "origin/main at 1a2b3c4d5e6f".into());
    let said = "pr-12 against main (origin/main at 1a2b3c4d5e6f)";
    assert!(gate.headline().contains(said), "{}", gate.headline());
    assert!(gate.markdown().contains(said));
    assert!(junit(std::slice::from_ref(&gate)).contains(said));
    let json = serde_json::to_string(&gate).unwrap();
    let back: Gate = serde_json::from_str(&json).unwrap();
    assert_eq!(back.named("main"), "main (origin/main at 1a2b3c4d5e6f)");
}

/// The zero-width joiner that breaks a mention, a reference or a link in the Markdown.
const JOINER: &str = "\u{200D}";

/// A gate whose every name, ref, load and page came from a hostile experiment file.
fn hostile_gate() -> Gate {
    let judged = |measure, verdict| Judged {
        measure,
        baseline: Some(40.0),
        candidate: Some(44.0),
        change: Some(c(1.10, 1.07, 1.13)),
        control: Some(c(1.0, 0.98, 1.02)),
        ratios: vec![1.1; 8],
        control_ratios: Vec::new(),
        allowed: Some(0.05),
        verdict,
        note: String::new(),
    };
    let (baseline, candidate, control) = (
        "<img src=x onerror=alert(1)>",
        "[click](https://evil.example)",
        "@everyone #1",
    );
    Gate {
        baseline: baseline.into(),
        candidate: candidate.into(),
        control: Some(control.into()),
        rounds: 8,
        processes: Processes::Fresh,
        load: "![i](www.evil.example/x.png) <script>alert(1)</script>\r\n| a | b |\n- \tx`y \u{1b}[2K\u{0}\u{202e}\u{ffff}".into(),
        measures: vec![
            judged(Measure::Cpu, Verdict::Regression),
            judged(
                Measure::Rss,
                Verdict::Unmeasured {
                    why: "a|b\n# heading was not bounded by its server: [x](y) @team".into(),
                },
            ),
        ],
        pages: Some("pages/<b>x</b>\n/index.html".into()),
        revisions: BTreeMap::from([
            (baseline.into(), "a|b\n# heading".into()),
            (candidate.into(), "x`y\u{1b}[2K\u{0}".into()),
            (control.into(), "~~struck~~ **bold** &amp; $x$".into()),
        ]),
        functions: None,
        reading: Reading::Once,
        stopped: None,
        warnings: Vec::new(),
        process: None,
    }
}

/// `line` without its backslash-escaped characters (each backslash and the one after it).
fn unescaped(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            chars.next();
        } else {
            out.push(c);
        }
    }
    out
}

#[test]
fn a_hostile_name_ref_or_load_is_literal_text_in_the_markdown() {
    let md = hostile_gate().markdown();
    for raw in [
        "<img",
        "<script",
        "<b>",
        "](",
        "@everyone",
        "@team",
        "#1",
        "https://",
        "www.evil",
        "\u{1b}",
        "\u{0}",
        "\t",
        "\r",
        "\u{202e}",
        "\u{ffff}",
    ] {
        assert!(!md.contains(raw), "{raw:?} in the Markdown:\n{md}");
    }
    // Nothing that opens HTML, a link, a code span, emphasis, an entity or maths is left
    // unescaped (but the entities written for `<` and `>`); the only `#`s are the heading's.
    let bare = unescaped(&md).replace("&lt;", "").replace("&gt;", "");
    for c in "<>[]`*_{}~&$!".chars() {
        assert!(!bare.contains(c), "{c:?} unescaped in the Markdown:\n{md}");
    }
    assert_eq!(bare.matches('#').count(), 3, "{md}");
    // Every line is the gate's own: no field started a line, a heading or a table's row, and
    // every row has its 6 cells.
    let ours = [
        "### ❌ Showdown: regression: ",
        "| ",
        "|---|",
        "A/A control (",
        "Each round ",
        "The runs, drawn: ",
    ];
    for line in md.lines() {
        assert!(
            line.is_empty() || ours.iter().any(|o| line.starts_with(o)),
            "a field started the line {line:?}:\n{md}"
        );
        if line.starts_with('|') {
            assert_eq!(unescaped(line).matches('|').count(), 7, "{line}");
        }
    }
    assert_eq!(md.lines().filter(|l| l.starts_with('|')).count(), 4, "{md}");
    // The names are still there to read, escaped.
    for said in [
        format!(r"\[click\]\(https:{JOINER}//evil.example\) (x\`y\\u\{{1b\}}\[2K\\u\{{0\}})"),
        r"against &lt;img src=x onerror=alert\(1\)&gt; (a\|b\\u\{a\}\# heading)".into(),
        format!(r"A/A control (@{JOINER}everyone \#{JOINER}1 (\~\~{JOINER}struck\~\~ \*\*bold\*\* \&{JOINER}amp; \${JOINER}x\$) against &lt;img"),
        format!(r"| not measured: a\|b\\u\{{a\}}\# heading was not bounded by its server: \[x\]\(y\) @{JOINER}team |"),
        format!(r"interleaved rounds of \!\[i\]\(www.{JOINER}evil.example/x.png\) &lt;script&gt;"),
        r"\\u\{d\}\\u\{a\}\| a \| b \|\\u\{a\}- \\u\{9\}x\`y \\u\{1b\}\[2K\\u\{0\}\\u\{202e\}\\u\{ffff\} (each run".into(),
        r"The runs, drawn: pages/&lt;b&gt;x&lt;/b&gt;\\u\{a\}/index.html".into(),
    ] {
        assert!(md.contains(&said), "{said:?} not in the Markdown:\n{md}");
    }
}

#[test]
fn a_hostile_name_ref_or_load_leaves_the_junit_well_formed() {
    use std::io::Write as _;
    use std::process::{Command, Stdio};

    let gate = hostile_gate();
    let xml = junit(std::slice::from_ref(&gate));
    // Parsed by a real XML parser, which gives back the suite's name as it read it.
    let mut python = Command::new("python3")
        .args([
            "-c",
            "import sys, xml.dom.minidom; d = xml.dom.minidom.parseString(sys.stdin.buffer.read()); \
             sys.stdout.buffer.write(d.getElementsByTagName('testsuite')[0].getAttribute('name').encode())",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    python
        .stdin
        .take()
        .unwrap()
        .write_all(xml.as_bytes())
        .unwrap();
    let out = python.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "not well-formed XML: {}\n{xml}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The name whole: markup, tabs and line breaks as they were, what XML refuses as escapes.
    let plain = format!(
        "showdown compare {} against {}: {}",
        gate.named(&gate.candidate),
        gate.named(&gate.baseline),
        gate.load
    );
    let read = ['\u{1b}', '\u{0}', '\u{202e}', '\u{ffff}']
        .iter()
        .fold(plain, |name, c| {
            name.replace(*c, &format!("\\u{{{:x}}}", u32::from(*c)))
        });
    assert_eq!(String::from_utf8_lossy(&out.stdout), read, "{xml}");
    for said in [
        "&lt;img src=x onerror=alert(1)&gt; (a|b&#10;# heading)",
        "x`y\\u{1b}[2K\\u{0}",
        "&#13;&#10;| a | b |&#10;- &#9;x`y",
        "not measured: a|b&#10;# heading",
    ] {
        assert!(xml.contains(said), "{said:?} not in the XML:\n{xml}");
    }
}

#[test]
fn ordinary_names_refs_and_loads_read_as_they_are_in_the_markdown() {
    let gate = Gate {
        baseline: "go-1.2".into(),
        candidate: "rust/pr-12".into(),
        control: Some("go-1.2+again".into()),
        rounds: 8,
        processes: Processes::Fresh,
        load: "open loop, constant 2000 req/s for 10s, 50% of 1234 req/s".into(),
        measures: Vec::new(),
        pages: Some("out/site.v2/index.html".into()),
        revisions: BTreeMap::from([("go-1.2".into(), "origin/main at 1a2b3c4d5e6f".into())]),
        functions: None,
        reading: Reading::Once,
        stopped: None,
        warnings: Vec::new(),
        process: None,
    };
    let md = gate.markdown();
    for said in [
        "rust/pr-12 against go-1.2 (origin/main at 1a2b3c4d5e6f), 8 interleaved rounds of open loop, constant 2000 req/s for 10s, 50% of 1234 req/s (each run",
        "A/A control (go-1.2+again against go-1.2): no measure held",
        "The runs, drawn: out/site.v2/index.html",
    ] {
        assert!(md.contains(said), "{said:?} not in the Markdown:\n{md}");
    }
}

/// Capacity: lower is worse. Its verdict mirrors the others' around 1, its band
/// [1 − allowed, 1 ÷ (1 − allowed)].
#[test]
fn a_capacity_regresses_when_its_interval_lies_wholly_below_what_may_be_lost() {
    let v = |ratio, low, high| Verdict::of_capacity(&c(ratio, low, high), 0.05, None);
    assert_eq!(v(0.90, 0.87, 0.93), Verdict::Regression);
    assert_eq!(v(1.10, 1.07, 1.13), Verdict::Improvement);
    assert_eq!(v(1.00, 0.97, 1.03), Verdict::NoChange);
    assert_eq!(v(0.97, 0.96, 0.99), Verdict::Within);
    // Up to 5 % lower is allowed: 0.951 is not a regression, but an interval reaching 0.94 is
    // undecided.
    assert_eq!(v(0.97, 0.951, 0.99), Verdict::Within);
    assert!(matches!(v(0.97, 0.94, 0.99), Verdict::TooNoisy { .. }));
    // The baseline's search against itself that read apart makes undecided what its
    // difference could explain, and not what it could not.
    let aa = c(0.92, 0.90, 0.94);
    assert!(matches!(
        Verdict::of_capacity(&c(0.90, 0.88, 0.92), 0.05, Some(&aa)),
        Verdict::TooNoisy { why } if why.contains("against itself read 0.920×") && why.contains("searches")
    ));
    assert_eq!(
        Verdict::of_capacity(&c(0.80, 0.78, 0.82), 0.05, Some(&aa)),
        Verdict::Regression
    );
}

#[test]
fn a_comparison_of_capacities_is_a_gate_of_one_measure() {
    use crate::capacity::compare::{Compared, Ratio};
    let ratio = |of: &str, value: f64, interval: Option<(f64, f64)>| Ratio {
        of: of.into(),
        of_name: of.into(),
        to: "b".into(),
        to_name: "b".into(),
        p: 0.5,
        ratio: value,
        low: interval.map(|i| i.0),
        high: interval.map(|i| i.1),
        confidence: CONFIDENCE,
        rounds: 16,
        note: if interval.is_none() {
            "no 95 % interval: the steps do not bound it on both sides".into()
        } else {
            String::new()
        },
    };
    let compared_with = |cand: Option<(f64, f64)>, aa: (f64, f64, f64)| Compared {
        id: "x".into(),
        rounds: 16,
        searches: Vec::new(),
        ratios: vec![ratio("c", 0.85, cand), ratio("a", aa.0, Some((aa.1, aa.2)))],
        reason: String::new(),
        spread: None,
    };
    let compared = |cand: Option<(f64, f64)>| compared_with(cand, (1.01, 0.97, 1.05));
    let gate = Gate::of_capacities(
        ("base", "pr", Some("base-again")),
        ("b", "c", Some("a")),
        "a capacity search within p99<=10ms",
        &compared(Some((0.80, 0.90))),
        &Allowed::capacity(),
        &[],
    );
    assert_eq!(gate.outcome(), Outcome::Regression);
    assert_eq!(gate.rounds, 16);
    let j = &gate.measures[0];
    assert_eq!(j.measure, Measure::Capacity);
    assert_eq!(j.control.as_ref().map(|c| c.ratio), Some(1.01));
    assert!(
        gate.text().contains("capacity within the SLO"),
        "{}",
        gate.text()
    );
    assert!(gate.markdown().contains("0.850×"), "{}", gate.markdown());
    // No interval: not measured, so the gate is inconclusive, and says why.
    let gate = Gate::of_capacities(
        ("base", "pr", None),
        ("b", "c", None),
        "",
        &compared(None),
        &Allowed::capacity(),
        &[],
    );
    assert_eq!(gate.outcome(), Outcome::Inconclusive);
    assert!(
        gate.measures[0].verdict_text().contains("do not bound it"),
        "{}",
        gate.measures[0].verdict_text()
    );
    // Two past sittings' controls and this one's, each 2 % apart with a narrow interval: the
    // spread between processes is read from them, allowed for in both intervals, said, and
    // each past control is read as measured.
    let apart = compared_with(Some((0.80, 0.90)), (1.02, 1.015, 1.025));
    let past = Gate::of_capacities(
        ("base", "pr", Some("base-again")),
        ("b", "c", Some("a")),
        "",
        &apart,
        &Allowed::capacity(),
        &[],
    );
    assert!(past.process.is_none());
    let gate = Gate::of_capacities(
        ("base", "pr", Some("base-again")),
        ("b", "c", Some("a")),
        "",
        &apart,
        &Allowed::capacity(),
        &[past.clone(), past.clone()],
    );
    let past_gate = past;
    let b = gate.process.expect("read from three controls");
    assert_eq!(b.sittings, 3);
    let j = &gate.measures[0];
    let (c, aa) = (j.change.as_ref().unwrap(), j.control.as_ref().unwrap());
    assert!(c.low < 0.80 && c.high > 0.90, "{c:?}");
    assert!(aa.low < 1.0 && aa.high > 1.04, "{aa:?}");
    let back = gate.capacity_control().unwrap();
    assert!(
        (back.low - 1.015).abs() < 1e-9 && (back.high - 1.025).abs() < 1e-9,
        "{back:?}"
    );
    assert!(
        j.note.contains("processes of one build differ by"),
        "{}",
        j.note
    );
    assert!(gate.warnings.is_empty(), "{:?}", gate.warnings);
    // This sitting's control read no interval: the spread is read from the three past
    // sittings' controls (the processes still differ) and allowed for in the candidate's.
    let mut unbounded = apart.clone();
    unbounded.ratios[1] = ratio("a", 1.02, None);
    let gate = Gate::of_capacities(
        ("base", "pr", Some("base-again")),
        ("b", "c", Some("a")),
        "",
        &unbounded,
        &Allowed::capacity(),
        &[gate.clone(), gate.clone(), gate],
    );
    assert_eq!(gate.process.map(|b| b.sittings), Some(3));
    let c = gate.measures[0].change.as_ref().unwrap();
    assert!(c.low < 0.80 && c.high > 0.90, "{c:?}");
    // Without a control, nothing is read: the past spread belongs to the experiment's control.
    let gate = Gate::of_capacities(
        ("base", "pr", None),
        ("b", "c", None),
        "",
        &apart,
        &Allowed::capacity(),
        &[past_gate.clone(), past_gate.clone(), past_gate],
    );
    assert!(gate.process.is_none());
    // A search whose host drifted: its warning is the gate's, named by its build, on the
    // terminal and in the Markdown.
    let mut drifted: crate::capacity::Search =
        serde_json::from_str(include_str!("../capacity/testdata/users-go.json")).unwrap();
    drifted.id = "c".into();
    drifted.drift = Some(crate::capacity::Drift {
        first: 1_000.0,
        second: 900.0,
        ratio: 0.9,
        low: 0.85,
        high: 0.95,
        fitted: None,
    });
    let mut with_search = compared(Some((0.80, 0.90)));
    with_search.searches.push(drifted);
    let gate = Gate::of_capacities(
        ("base", "pr", Some("base-again")),
        ("b", "c", Some("a")),
        "",
        &with_search,
        &Allowed::capacity(),
        &[],
    );
    let said = "pr's search: WARNING: the host drifted within the search";
    assert!(
        gate.warnings.iter().any(|w| w.starts_with(said)),
        "{:?}",
        gate.warnings
    );
    assert!(gate.text().contains(said), "{}", gate.text());
    assert!(
        gate.markdown().contains(&format!("⚠️ {said}")),
        "{}",
        gate.markdown()
    );
}

/// A 3 s run of 3,000 requests whose server used half a core throughout, its probe reading
/// every 100 ms from 50 ms into the run: the samples span 2.9 s of its 3 s.
fn half_a_core_for_three_seconds() -> store::run::StoredRun {
    run_of(0.5, &[])
}

/// A 3 s run of 3,000 requests whose server used `cores` throughout, its probe reading every
/// 100 ms from 50 ms into the run, and profiling it each second: `stacks` (`process;thread;
/// frame;…`, samples) split over the three records.
fn run_of(cores: f64, stacks: &[(String, u64)]) -> store::run::StoredRun {
    use probe::protocol::Record;
    use probe::sample::{ProcessSample, Sample};
    use std::time::Duration;
    use store::model::IntervalStats;
    use store::run::{ProbeMeta, StoredProbe, StoredRecord};
    use store::summary::{RunFacts, Summary};

    let mut totals = IntervalStats::new(0, 3_000_000_000);
    for _ in 0..3_000 {
        totals.corrected.record(1_000_000).unwrap();
    }
    totals.requests = 3_000;
    totals.sent = 3_000;
    totals.responses = 3_000;
    totals.ok = 3_000;
    let config = store::run::RunConfig {
        open_loop: true,
        threads: 1,
        max_connections: 8,
        ..Default::default()
    };
    let summary = Summary::new(&RunFacts {
        config: &config,
        started: std::time::UNIX_EPOCH,
        interval: Duration::from_secs(1),
        totals: &totals,
        attack: Duration::from_secs(3),
        wait: Duration::ZERO,
        cpu: Duration::ZERO,
        peak_rss_bytes: None,
        stopped: None,
        notes: Vec::new(),
        generator: Default::default(),
    });
    let records = (0..30u64)
        .map(|i| {
            let t = 50_000_000 + i * 100_000_000;
            let row = ProcessSample {
                cpu_ns: (t as f64 * cores) as u64,
                rss_bytes: 8 << 20,
                cpus_allowed: Some(1),
                ..Default::default()
            };
            StoredRecord {
                seq: i,
                t_ns: t as i64,
                record: Record::Sample(Box::new(Sample {
                    scheduled_mono_ns: t,
                    mono_ns: t,
                    wall_ns: t,
                    interval_ns: 100_000_000,
                    missed_ticks: 0,
                    target_pid: Some(1),
                    processes: vec![row.clone()],
                    total: Some(row),
                    host: None,
                    cgroup: None,
                    database: None,
                    probe: Default::default(),
                })),
            }
        })
        .collect::<Vec<StoredRecord>>();
    let mut records = records;
    if !stacks.is_empty() {
        for second in 0..3u64 {
            let mut profile = probe::sample::Profile {
                interval_ns: 1_000_000_000,
                hz: 999,
                ..Default::default()
            };
            // Each record a third of every stack's samples (the first takes what is left).
            profile.set_folded(stacks.iter().map(|(stack, n)| {
                let third = n / 3;
                (
                    stack.clone(),
                    if second == 0 { n - 2 * third } else { third },
                )
            }));
            profile.samples = profile.stacks.iter().map(|(_, n)| n).sum();
            let t = (second + 1) * 1_000_000_000;
            records.push(StoredRecord {
                seq: 100 + second,
                t_ns: t as i64,
                record: Record::Profile(Box::new(profile)),
            });
        }
    }
    let mut run = store::group::empty("r");
    run.status = store::run::RunStatus::Complete;
    run.ended_at_ns = Some(3_000_000_000);
    run.summary = Some(summary);
    run.probes = vec![StoredProbe {
        meta: ProbeMeta {
            index: 0,
            address: "in-process".into(),
            host: Default::default(),
            clock: None,
        },
        records,
        gaps: Vec::new(),
    }];
    run
}

#[test]
fn cpu_per_request_is_the_servers_cpu_over_the_whole_run_per_request_answered() {
    // Half a core for 3 s over 3,000 requests: 500 µs each. The CPU between the probe's first
    // and last sample (2.9 s) over the run's requests would read 483 µs.
    let run = half_a_core_for_three_seconds();
    let cpu = Measure::Cpu.of(&run).unwrap();
    assert!((cpu - 500.0).abs() < 1.0, "{cpu} µs a request");
    assert_eq!(Measure::Rss.of(&run), Some((8u64 << 20) as f64));
}

/// Eight rounds of a server at 500 µs a request (`work` 450, `other` 50) against a candidate
/// that spends 100 µs more in a new function (whose name is markup, as a symbol may be): the
/// gate names that function alone, with an interval holding +100 µs, and writes its name as
/// literal Markdown.
#[test]
fn a_profiled_comparison_names_the_function_that_took_the_added_cpu() {
    let mut rng = Rng::new(581);
    let hostile = "hash_[x](https://e.example) @team";
    let mut runs = Vec::new();
    for _ in 0..8 {
        // The host's noise: the server's CPU and the profiler's draws move a little each run.
        let jitter = |rng: &mut Rng, n: f64| (n * (1.0 + 0.03 * rng.normal())).round() as u64;
        let stack = |f: &str| format!("server;main;main;{f}");
        let cores = 0.5 * (1.0 + 0.01 * rng.normal());
        let base = run_of(
            cores,
            &[
                (stack("work"), jitter(&mut rng, 2_700.0)),
                (stack("other"), jitter(&mut rng, 300.0)),
            ],
        );
        let cores = 0.6 * (1.0 + 0.01 * rng.normal());
        let cand = run_of(
            cores,
            &[
                (stack("work"), jitter(&mut rng, 2_700.0)),
                (stack("other"), jitter(&mut rng, 300.0)),
                (stack(hostile), jitter(&mut rng, 600.0)),
            ],
        );
        runs.push((base, cand));
    }
    let rounds = Rounds {
        baseline: runs.iter().map(|(a, _)| Some(a)).collect(),
        candidate: runs.iter().map(|(_, b)| Some(b)).collect(),
        control: None,
    };
    let gate = Gate::judge(
        ("main", "pr", None),
        "open loop, constant 1000 req/s for 3s",
        &rounds,
        &Allowed::none(),
        Processes::Fresh,
        crate::ab::Reading::Once,
    );
    let f = &gate.functions.as_ref().expect("profiled runs").candidate;
    assert_eq!((f.rounds, f.tested), (8, 3));
    let named: Vec<&functions::FunctionChange> = f.named().collect();
    assert_eq!(named.len(), 1, "{f:?}");
    assert_eq!(named[0].name, hostile);
    assert!(
        (named[0].low_us..=named[0].high_us).contains(&100.0),
        "{:?}",
        named[0]
    );
    let text = gate.text();
    assert!(
        text.contains("CPU per request by function: +") && text.contains(hostile),
        "{text}"
    );
    // In the Markdown the symbol is literal text: no link, no mention.
    let md = gate.markdown();
    let line = md
        .lines()
        .find(|l| l.starts_with("CPU per request by function"))
        .unwrap_or_else(|| panic!("{md}"));
    assert!(!line.contains("](") && !line.contains(" @team"), "{line}");
    assert!(junit(&[gate]).contains("by function: +"));
}

/// A gate read after every round (`rounds = "auto"`, from the 5th to the 40th, a 5 % band) on a
/// simulated server whose rounds' log-ratios spread by 4 % (a server with a database: ±8 % at
/// two SDs), stopping at the first look that decides: a 10 % regression is found in nearly
/// every gate, an identical build is almost never called one and mostly passes, and a build at
/// the band's edge is called a regression in at most 5 % (the confidence sequence holds at
/// every look). The t interval read the same way calls the edge a regression far more often.
#[test]
fn a_gate_read_after_every_round_keeps_its_error_rates() {
    let mut rng = Rng::new(7676);
    let gates = 2000;
    let (min, max, sigma, band) = (5, 40, 0.04, 0.05);
    let outcome = |truth: f64, reading: Reading, rng: &mut Rng| -> (usize, usize, f64) {
        let (mut regressions, mut passes, mut rounds) = (0, 0, 0usize);
        for _ in 0..gates {
            let mut pairs = Vec::new();
            for n in 1..=max {
                pairs.push((1.0, (truth.ln() + sigma * rng.normal()).exp()));
                if n < min {
                    continue;
                }
                let change = Change::paired_as(&pairs, reading).unwrap();
                let verdict = Verdict::of(&change, band, None, Processes::Fresh);
                if !verdict.undecided() || n == max {
                    regressions += usize::from(verdict.fails());
                    passes += usize::from(!verdict.fails() && !verdict.undecided());
                    rounds += n;
                    break;
                }
            }
        }
        (regressions, passes, rounds as f64 / gates as f64)
    };
    let slower = outcome(1.10, Reading::Sequential, &mut rng);
    let same = outcome(1.00, Reading::Sequential, &mut rng);
    let edge = outcome(1.05, Reading::Sequential, &mut rng);
    let edge_t = outcome(1.05, Reading::Once, &mut rng);
    eprintln!(
        "of {gates} gates: 1.10× regression {} (mean rounds {:.1}); 1.00× regression {}, pass {} ({:.1}); 1.05× regression {} ({:.1}); t read every round at 1.05×: {}",
        slower.0, slower.2, same.0, same.1, same.2, edge.0, edge.2, edge_t.0
    );
    assert!(slower.0 as f64 >= 0.95 * gates as f64, "{slower:?}");
    assert!(same.0 as f64 <= 0.01 * gates as f64, "{same:?}");
    assert!(same.1 as f64 >= 0.9 * gates as f64, "{same:?}");
    assert!(edge.0 as f64 <= 0.05 * gates as f64, "{edge:?}");
    assert!(edge_t.0 > 2 * edge.0.max(10), "{edge_t:?} against {edge:?}");
}

/// Student's t at every df, not a table to 30 and the normal beyond: the quantiles tables print
/// (to their three decimals), and above 30 df still above the normal's.
#[test]
fn t_quantiles_hold_at_every_df() {
    for (df, t975, t80) in [
        (1, 12.706, 1.376),
        (9, 2.262, 0.883),
        (30, 2.042, 0.854),
        (40, 2.021, 0.851),
        (60, 2.000, 0.848),
        (120, 1.980, 0.845),
    ] {
        let (a, b) = super::t_quantiles(df);
        assert!((a - t975).abs() < 5e-4, "{df}: {a}");
        assert!((b - t80).abs() < 5e-4, "{df}: {b}");
    }
    assert!(super::t_quantiles(31).0 > 2.03);
    assert_eq!(super::t_quantiles(0).0, f64::INFINITY);
}
