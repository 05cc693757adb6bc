//! Whatever a user types or writes (flags, labels, experiment files, targets files,
//! templates), Showdown answers with a value or a one-line error, never a panic: arbitrary
//! and hostile strings fed to every parser of user input. Nothing here sends a request or
//! starts a process: the parsers only read.

use std::io::Write;

use clap::Parser;
use loadgen::{Cli, Command};
use proptest::prelude::*;

/// Words a user might type, hostile numbers among them.
fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "\\PC*",
        1 => ".*",
        2 => prop::sample::select(vec![
            "0", "-1", "1e300", "-1e300", "NaN", "inf", "18446744073709551616",
            "4294967296", "1000000000000y", "0s", "1ns", "1.5", "0-1,3", "2000", "a\u{a0}b",
            "http://u:p@127.0.0.1:9/", "http://127.0.0.1:0/", "http://[::1]:65536/",
            "Authorization: Bearer x", "{{seq}}", "{{hex:99999999999}}", "{{", "}}",
            "{{uuid", "{{hex:}}", "k=v", "=", "=v", "",
        ])
        .prop_map(str::to_string),
    ]
}

/// Flags of `loadgen attack`, each with a value from [`word`] where it takes one.
fn attack_args() -> impl Strategy<Value = Vec<String>> {
    let flag = prop::sample::select(vec![
        "--rate",
        "--duration",
        "--requests",
        "--connections",
        "--max-connections",
        "--steps",
        "--step-duration",
        "--ramp",
        "--threads",
        "--timeout",
        "--batch",
        "--grace",
        "--max-lateness",
        "--interval",
        "-H",
        "-m",
        "--body",
        "--name",
        "--label",
        "--experiment",
        "--run-id",
        "--shard",
        "--start-at",
        "--pre-roll",
        "--post-roll",
        "--probe",
        "--probe-fingerprint",
        "-kH",
        "-n",
        "-c",
        "-r",
        "-d",
    ]);
    prop::collection::vec((flag, word()), 0..6).prop_map(|pairs| {
        let mut args: Vec<String> = vec!["loadgen".into(), "attack".into(), "--no-store".into()];
        for (flag, value) in pairs {
            args.push(flag.to_string());
            args.push(value);
        }
        args.push("http://127.0.0.1:9/x".into());
        args
    })
}

/// A duration as a file may spell it, hostile ones included.
fn duration() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "1s",
            "0s",
            "1ns",
            "500ms",
            "1000000000000y",
            "584942417355y",
            "18446744073709551615s",
            "99999999999999999999s",
            "1e300s",
            "-1s",
        ])
        .prop_map(toml_string),
        word().prop_map(|w| toml_string(&w)),
    ]
}

/// A number as a file may hold it, hostile ones included.
fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "0",
            "-1",
            "1",
            "4294967295",
            "4294967296",
            "9223372036854775807",
            "1e300",
            "-1e300",
            "1e-300",
            "nan",
            "inf",
            "-inf",
            "0.5",
        ])
        .prop_map(str::to_string),
        any::<i64>().prop_map(|i| i.to_string()),
        any::<f64>().prop_map(|f| format!("{f:e}")),
    ]
}

/// An experiment file: the shape of a valid one, with one field of the file, one of its load,
/// its placement and its axis set to hostile values.
fn experiment_file() -> impl Strategy<Value = String> {
    let top = prop_oneof![
        Just("repetitions = 1".to_string()),
        number().prop_map(|v| format!("repetitions = {v}")),
        duration().prop_map(|v| format!("warmup = {v}")),
        duration().prop_map(|v| format!("cooldown = {v}")),
        duration().prop_map(|v| format!("probe_interval = {v}")),
        duration().prop_map(|v| format!("pre_roll = {v}")),
        duration().prop_map(|v| format!("post_roll = {v}")),
    ];
    let load = prop_oneof![
        3 => Just("rate = 100\nduration = \"1s\"\npath = \"/now\"".to_string()),
        1 => number().prop_map(|v| format!("rate = {v}\nduration = \"1s\"\npath = \"/now\"")),
        1 => duration().prop_map(|v| format!("rate = 100\nduration = {v}\npath = \"/now\"")),
        1 => number().prop_map(|v| format!("rate = 100\nrequests = {v}\npath = \"/now\"")),
        1 => number().prop_map(|v| format!("connections = {v}\nduration = \"1s\"\npath = \"/now\"")),
        1 => word().prop_map(|v| format!("rate = 100\nduration = \"1s\"\npath = {}", toml_string(&v))),
        1 => word().prop_map(|v| format!("rate = 100\nduration = \"1s\"\npath = \"/\"\nmethod = {}", toml_string(&v))),
        1 => word().prop_map(|v| format!("rate = 100\nduration = \"1s\"\npath = \"/\"\nbody = {}", toml_string(&v))),
        1 => number().prop_map(|v| format!("rate = 100\nduration = \"1s\"\npath = \"/\"\nthreads = {v}")),
        1 => duration().prop_map(|v| format!("rate = 100\nduration = \"1s\"\npath = \"/\"\ntimeout = {v}")),
        1 => (number(), duration()).prop_map(|(r, d)| format!("steps = [{r}, 2]\nstep_duration = {d}\npath = \"/\"")),
    ];
    let target = prop_oneof![
        2 => Just(String::new()),
        1 => number().prop_map(|v| format!("cpus = {v}")),
        1 => word().prop_map(|v| format!("memory = {}", toml_string(&v))),
        1 => word().prop_map(|v| format!("url = {}\nprobe = \"127.0.0.1:9\"", toml_string(&v))),
    ];
    let cpus = || {
        prop_oneof![
            4 => prop::sample::select(vec!["0", "1", "0-1", "2000", "1000", "0-1023", "1-0", "0,0"])
                .prop_map(str::to_string),
            1 => word(),
        ]
    };
    let axis = prop_oneof![Just("2000".to_string()), number()];
    (top, load, target, cpus(), cpus(), axis).prop_map(
        |(top, load, target, gun, target_cpus, axis)| {
            format!(
                "name = \"hostile\"\nquestion = \"does it panic?\"\n{top}\n\n\
                 [placement]\ngun_cpus = {}\ntarget_cpus = {}\n\n\
                 [[target]]\nname = \"node\"\n{target}\n\n\
                 [load]\n{load}\n\n\
                 [matrix]\nrate = [{axis}]\n",
                toml_string(&gun),
                toml_string(&target_cpus),
            )
        },
    )
}

fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// A targets file: valid shape, hostile values.
fn targets_file() -> impl Strategy<Value = String> {
    (word(), word(), any::<u64>(), any::<u64>(), word()).prop_map(|(url, method, w1, w2, body)| {
        format!(
            "[[request]]\nurl = {}\nmethod = {}\nweight = {}\nbody = {}\n\n\
             [[request]]\nurl = \"http://127.0.0.1:9/b\"\nweight = {}\n",
            toml_string(&url),
            toml_string(&method),
            w1.min(i64::MAX as u64),
            toml_string(&body),
            w2.min(i64::MAX as u64),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn attack_flags_give_a_plan_or_an_error(args in attack_args()) {
        if let Ok(cli) = Cli::try_parse_from(&args) {
            if let Command::Attack(attack) = cli.command {
                let _ = attack.plan();
                let _ = attack.keeping(&args);
            }
        }
    }

    #[test]
    fn labels_parse_or_are_refused(text in word()) {
        let _ = store::run::parse_label(&text);
    }

    #[test]
    fn templates_compile_or_are_refused(text in word()) {
        if let Ok(t) = loadgen::engine::template::Template::compile(&text) {
            let mut rng = rand::rng();
            let _ = t.render(u64::MAX, &mut rng);
        }
    }

    #[test]
    fn targets_files_give_a_mix_or_an_error(text in targets_file()) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("targets.toml");
        std::fs::write(&path, &text).unwrap();
        let options = loadgen::engine::request::RequestOptions::default();
        if let Ok(mix) = loadgen::engine::request::RequestMix::from_targets_file(&path, &options) {
            let _ = mix.pick(u64::MAX);
        }
    }
}

proptest! {
    // One in twenty or so of these files is valid; the rest are refused on the way.
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn experiment_files_plan_or_are_refused(text in experiment_file(), scale in word()) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hostile.toml");
        std::fs::File::create(&path).unwrap().write_all(text.as_bytes()).unwrap();
        if let Ok(experiment) = experiment::file::Experiment::read(&path) {
            let scale = scale.parse::<f64>().unwrap_or(1.0);
            let options = experiment::plan::PlanOptions { scale, ..Default::default() };
            if let Ok(plan) = experiment::plan::plan(&experiment, &options) {
                let _ = plan.estimate();
                let _ = loadgen::commands::experiment::plan_text(&experiment, &plan);
            }
        }
    }
}

#[test]
fn non_utf8_arguments_are_one_line_errors() {
    use std::os::unix::ffi::OsStrExt;
    let bad = std::ffi::OsStr::from_bytes(b"\xff\xfe");
    for args in [
        vec![std::ffi::OsStr::new("attack"), bad],
        vec![
            std::ffi::OsStr::new("attack"),
            std::ffi::OsStr::new("--body-file"),
            bad,
            std::ffi::OsStr::new("--rate"),
            std::ffi::OsStr::new("1"),
            std::ffi::OsStr::new("-n"),
            std::ffi::OsStr::new("1"),
            std::ffi::OsStr::new("--no-store"),
            std::ffi::OsStr::new("http://127.0.0.1:9/"),
        ],
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_loadgen"))
            .args(&args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(stderr.starts_with("Error: "), "{stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    }
}

/// Durations too long to mean anything (which once overflowed into a panic) are refused in one
/// line that names the range, on the command line and in an experiment's `[search]`.
#[test]
fn absurd_durations_are_one_line_errors() {
    for (args, needle) in [
        (
            &["capacity", "--step", "100000000h"][..],
            "from 100ms to 1h",
        ),
        (&["capacity", "--step", "1ms"][..], "from 100ms to 1h"),
        (&["capacity", "--warmup", "99999999999h"][..], "at most 1h"),
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_loadgen"))
            .args(args)
            .arg("http://127.0.0.1:9/")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("search.toml");
    std::fs::write(
        &file,
        "name = \"s\"\nquestion = \"q\"\n[[target]]\nname = \"rust\"\n[load]\npath = \"/\"\n[search]\nslo = [\"p99<=10ms\"]\nstep = \"100000000h\"\n",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_loadgen"))
        .args(["experiment", "plan"])
        .arg(&file)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.contains("step"), "{stderr}");
}
