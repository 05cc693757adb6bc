//! The whiteboard rules of docs/architecture.md ("The order", and the engine below the rest),
//! checked on the source. A generator is told a typed order, never flags: no loadgen flag of a
//! generator's command is written as an argument anywhere but `cli.rs`, and no flag type
//! (`*Args`) reaches below the commands (the engine, the keeping, the capacity search and the
//! order's preparation take plain values). The engine knows nothing above it, and the store
//! nothing of the analysis above it.

use std::path::{Path, PathBuf};

use clap::CommandFactory;

fn crates() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("crates/")
        .to_path_buf()
}

/// Every `.rs` file under `dir`.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("a source directory").flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The long flags of the commands that run a generator: `attack`, `capacity`, `gun`, `order`.
fn generator_flags() -> Vec<String> {
    let cli = loadgen::Cli::command();
    let mut flags: Vec<String> = cli
        .get_subcommands()
        .filter(|c| ["attack", "capacity", "gun", "order"].contains(&c.get_name()))
        .flat_map(|c| c.get_arguments())
        .filter_map(|a| a.get_long())
        .filter(|l| !["help", "version"].contains(l))
        .map(|l| format!("\"--{l}\""))
        .collect();
    flags.sort();
    flags.dedup();
    flags
}

#[test]
fn no_generator_flag_is_written_outside_the_command_line_parser() {
    let flags = generator_flags();
    assert!(flags.len() > 40, "the generator's flags: {flags:?}");
    let mut found = Vec::new();
    for dir in ["loadgen/src", "experiment/src", "order/src"] {
        for file in sources(&crates().join(dir)) {
            if file.ends_with("loadgen/src/cli.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&file).expect("a source file");
            for (n, line) in text.lines().enumerate() {
                for flag in &flags {
                    if line.contains(flag.as_str()) {
                        found.push(format!("{}:{}: {flag}", file.display(), n + 1));
                    }
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "a loadgen flag written as an argument outside cli.rs (build an order::Order instead):\n{}",
        found.join("\n")
    );
}

#[test]
fn no_flag_type_reaches_below_the_commands() {
    let src = crates().join("loadgen/src");
    let mut below = Vec::new();
    for dir in ["engine", "keep", "capacity"] {
        below.extend(sources(&src.join(dir)));
    }
    below.push(src.join("prepare.rs"));
    below.extend(sources(&crates().join("order/src")));
    let mut found = Vec::new();
    for file in below {
        let text = std::fs::read_to_string(&file).expect("a source file");
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if code.contains("crate::cli") || code.contains("Args") && !code.contains("args(") {
                found.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "flags below the commands (take the order's or the plan's values):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_engine_knows_nothing_above_it() {
    let above = [
        "crate::keep",
        "crate::commands",
        "crate::cli",
        "crate::capacity",
        "crate::prepare",
        "report::",
        "experiment::",
        "analysis::",
        "store::Store",
        "store::db",
    ];
    let mut found = Vec::new();
    for file in sources(&crates().join("loadgen/src/engine")) {
        let text = std::fs::read_to_string(&file).expect("a source file");
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for name in above {
                if code.contains(name) {
                    found.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "the engine imports what is above it:\n{}",
        found.join("\n")
    );
}

/// The tests that measure time, rates or CPU shares take `exclusive()` (or, in the experiment
/// tests, `one_search_at_a_time()`) under `cargo test`; under cargo-nextest, which runs tests of
/// different binaries side by side, the same tests are named in `.config/nextest.toml` to run
/// alone. Every such test is named there, in its binary's block, and every name there is such a
/// test: one forgotten would measure beside the others.
#[test]
fn every_test_that_measures_time_runs_alone_under_nextest() {
    let config = std::fs::read_to_string(crates().join("../.config/nextest.toml"))
        .expect(".config/nextest.toml");
    let alone = config
        .split("threads-required = \"num-test-threads\"\n")
        .nth(1)
        .and_then(|o| o.split("filter = '''").nth(1))
        .and_then(|f| f.split("'''").next())
        .expect("an override whose tests run alone");
    // Last, one after another: a test that needs every slot, met in the middle of the queue,
    // holds every test behind it until the running ones end.
    assert!(
        config.contains("threads-required = \"num-test-threads\"\npriority = -50\n"),
        "the timing tests' override must run them last (priority = -50)"
    );
    let (mut timing, mut beside) = (Vec::new(), Vec::new());
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(crates())
        .expect("crates/")
        .flatten()
        .map(|e| e.path().join("tests"))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for dir in dirs {
        let krate = dir
            .parent()
            .and_then(|p| p.file_name())
            .and_then(|n| n.to_str())
            .expect("a crate's name")
            .to_string();
        // A crate's test files: `tests/NAME.rs` is binary NAME; `tests/it/NAME.rs` is module
        // NAME of the binary `it`, whose tests nextest names `NAME::test`.
        let mut files = Vec::new();
        for (sub, binary) in [(dir.clone(), None), (dir.join("it"), Some("it"))] {
            let Ok(entries) = std::fs::read_dir(&sub) else {
                continue;
            };
            files.extend(entries.flatten().map(|e| (e.path(), binary)));
        }
        for (path, binary) in files {
            // This file names the locks in its own text.
            if path.extension().is_none_or(|e| e != "rs") || path.ends_with("architecture.rs") {
                continue;
            }
            let stem = path.file_stem().and_then(|s| s.to_str()).expect("a name");
            let (binary, prefix) = match binary {
                Some(it) => (it.to_string(), format!("{stem}::")),
                None => (stem.to_string(), String::new()),
            };
            let text = std::fs::read_to_string(&path).expect("a test file");
            for test in text.split("#[test]").skip(1) {
                let name = test
                    .split("fn ")
                    .nth(1)
                    .and_then(|rest| rest.split('(').next())
                    .expect("a test's name")
                    .trim()
                    .to_string();
                if test.contains("exclusive()") || test.contains("one_search_at_a_time()") {
                    timing.push((format!("{krate}::{binary}"), format!("{prefix}{name}")));
                } else if test.contains("beside()") {
                    beside.push(format!("{prefix}{name}"));
                }
            }
        }
    }
    assert!(timing.len() > 40, "the timing tests found: {timing:?}");
    let mut missing = Vec::new();
    for (binary, name) in &timing {
        let block = alone
            .split(&format!("binary_id({binary}) & ("))
            .nth(1)
            .and_then(|rest| rest.split("\n    )").next());
        if !block.is_some_and(|b| b.contains(&format!("test(={name})"))) {
            missing.push(format!("{binary}: {name}"));
        }
    }
    assert!(
        missing.is_empty(),
        "timing tests not run alone by .config/nextest.toml (add them to its alone override):\n{}",
        missing.join("\n")
    );
    // The tests that load the CPUs without measuring a capacity (`beside()`) take two slots,
    // so that two of them, or one and a simulation or a contestant, never run together.
    let heavy = config
        .split("\nthreads-required = 2\n")
        .next()
        .and_then(|before| before.rsplit("filter = '''").next())
        .expect("an override of heavy tests");
    assert!(beside.len() >= 5, "the tests beside the others: {beside:?}");
    let light: Vec<&String> = beside
        .iter()
        .filter(|n| !heavy.contains(&format!("test(={n})")))
        .collect();
    assert!(
        light.is_empty(),
        "tests that load the CPUs run as light ones (name them in .config/nextest.toml's \
         override with threads-required = 2): {light:?}"
    );
    let named = alone.matches("test(=").count();
    assert_eq!(
        named,
        timing.len(),
        ".config/nextest.toml names tests to run alone that take no lock: remove them"
    );
}

/// The error type's second argument in every `Result<…>` written on `line` (generic arguments
/// split at the top level), e.g. `String` in `Result<Vec<u8>, String>`.
fn result_errors(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in line.match_indices("Result<") {
        let rest = &line[at + "Result<".len()..];
        let (mut depth, mut comma, mut end) = (0i32, None, None);
        for (i, c) in rest.char_indices() {
            match c {
                '<' | '(' => depth += 1,
                '>' | ')' if depth == 0 => {
                    end = Some(i);
                    break;
                }
                '>' | ')' => depth -= 1,
                ',' if depth == 0 => comma = Some(i),
                _ => {}
            }
        }
        if let (Some(c), Some(e)) = (comma, end) {
            out.push(rest[c + 1..e].trim().to_string());
        }
    }
    out
}

/// One error policy (docs/architecture.md, "Errors"): a library says what went wrong in a typed
/// error, never in a `String` a caller can only print. No public signature returns
/// `Result<_, String>`, and the few left inside a module are counted.
#[test]
fn no_public_signature_returns_a_string_error() {
    let mut public = Vec::new();
    let mut private = Vec::new();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(crates())
        .expect("crates/")
        .flatten()
        .map(|e| e.path().join("src"))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for dir in dirs {
        for file in sources(&dir) {
            let text = std::fs::read_to_string(&file).expect("a source file");
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                if !result_errors(code).iter().any(|e| e == "String") {
                    continue;
                }
                let at = format!("{}:{}: {}", file.display(), n + 1, line.trim());
                if code.trim_start().starts_with("pub") {
                    public.push(at);
                } else {
                    private.push(at);
                }
            }
        }
    }
    assert!(
        public.is_empty(),
        "public signatures with a String error (give them a thiserror type):\n{}",
        public.join("\n")
    );
    assert!(
        private.len() <= 10,
        "{} private Result<_, String> (at most 10, each wrapped by its caller):\n{}",
        private.len(),
        private.join("\n")
    );
}

#[test]
fn a_results_error_type_is_read_at_the_top_level_of_its_arguments() {
    assert_eq!(
        result_errors("fn f() -> Result<BTreeMap<String, String>, Error> {"),
        ["Error"]
    );
    assert_eq!(
        result_errors("pub fn g(x: Result<(u8, String), String>) -> Result<Vec<u8>, String>"),
        ["String", "String"]
    );
    assert!(result_errors("type R = io::Result<()>;").is_empty());
}

/// The guns are a crate of their own below the runner (docs/architecture.md): `fleet` depends
/// on neither the runner nor loadgen, and loadgen reaches the guns through `fleet`, never
/// through the runner's crate.
#[test]
fn the_guns_are_reached_through_the_fleet_crate_alone() {
    let manifest = std::fs::read_to_string(crates().join("fleet/Cargo.toml")).expect("fleet");
    for above in ["experiment", "loadgen", "report"] {
        assert!(
            !manifest
                .lines()
                .any(|l| l.trim_start().starts_with(&format!("{above} "))),
            "crates/fleet depends on {above}, which is above it"
        );
    }
    let mut found = Vec::new();
    for file in sources(&crates().join("loadgen/src")) {
        let text = std::fs::read_to_string(&file).expect("a source file");
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if code.contains("experiment::fleet") || code.contains("experiment::gun::Gun") {
                found.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "loadgen reaches the guns through the runner's crate (use fleet::…):\n{}",
        found.join("\n")
    );
}

/// The store keeps runs; the analysis crate above it judges them (docs/architecture.md): `store`
/// depends on no crate that judges, shows or drives runs, and `analysis` on none above it.
#[test]
fn the_store_keeps_and_the_analysis_above_it_judges() {
    let depends = |krate: &str, on: &str| {
        let manifest = std::fs::read_to_string(crates().join(krate).join("Cargo.toml"))
            .expect("a crate's manifest");
        manifest
            .lines()
            .any(|l| l.trim_start().starts_with(&format!("{on} ")))
    };
    let mut found = Vec::new();
    for above in [
        "analysis",
        "order",
        "fleet",
        "report",
        "experiment",
        "loadgen",
    ] {
        if depends("store", above) {
            found.push(format!(
                "crates/store depends on {above}, which is above it"
            ));
        }
    }
    for above in ["order", "fleet", "report", "experiment", "loadgen"] {
        if depends("analysis", above) {
            found.push(format!(
                "crates/analysis depends on {above}, which is above it"
            ));
        }
    }
    assert!(
        depends("analysis", "store"),
        "crates/analysis judges the store's runs"
    );
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// A chart is data first (docs/architecture.md, "report: a chart is data first"): the report's
/// chart model imports none of its renderers, and the renderers (plotters' SVG, the heatmap's
/// hand-written SVG, the flame graphs' hand-written SVG) import the model and nothing from the pages and
/// figures that use them.
#[test]
fn the_charts_renderers_draw_the_model_and_know_nothing_above_it() {
    let report = crates().join("report/src");
    let code_of = |file: &Path| -> Vec<(usize, String)> {
        let text = std::fs::read_to_string(file).expect("a source file");
        text.lines()
            .enumerate()
            .map(|(n, line)| (n + 1, line.split("//").next().unwrap_or("").to_string()))
            .collect()
    };
    let mut found = Vec::new();
    let renderers = ["plot.rs", "heatmap.rs", "flame.rs"];
    let above = [
        "crate::pages",
        "crate::site",
        "crate::charts",
        "crate::search",
        "crate::compare",
        "crate::experiment",
        "crate::figures",
        "crate::tables",
        "crate::cli",
    ];
    for name in renderers {
        let file = report.join(name);
        for (n, code) in code_of(&file) {
            for a in above {
                if code.contains(a) {
                    found.push(format!("{}:{n}: {}", file.display(), code.trim()));
                }
            }
        }
    }
    let renderer_paths = ["crate::plot", "crate::heatmap", "crate::flame", "plotters"];
    let model = sources(&report.join("model"));
    assert!(!model.is_empty(), "crates/report/src/model/");
    for file in model {
        for (n, code) in code_of(&file) {
            for r in renderer_paths {
                if code.contains(r) {
                    found.push(format!("{}:{n}: {}", file.display(), code.trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "the chart model imports a renderer, or a renderer what is above it (a chart is data \
         in report::model, drawn by plot, heatmap, flame):\n{}",
        found.join("\n")
    );
}
