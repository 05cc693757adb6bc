//! The `probe` binary as a user runs it, and its systemd unit.
#![allow(clippy::unwrap_used)]

use crate::common;

use std::process::Command;
use std::time::{Duration, Instant};

fn probe(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_probe"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn mistakes_get_one_line_naming_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.token");
    std::fs::write(&empty, "\n").unwrap();
    let empty = empty.to_str().unwrap();
    let token = dir.path().join("probe.token");
    std::fs::write(&token, "a token\n").unwrap();
    let token = token.to_str().unwrap();
    let not_pem = dir.path().join("not.pem");
    std::fs::write(&not_pem, "hello").unwrap();
    let not_pem = not_pem.to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["serve"], "--port"),
        (&["serve", "--pid", "1", "--port", "80"], "cannot be used"),
        (&["serve", "--name", "(unclosed"], "--name"),
        (&["serve", "--pid", "1", "--interval", "1ms"], "--interval"),
        (&["serve", "--pid", "1", "--interval", "soon"], "duration"),
        (
            &["serve", "--pid", "1", "--listen", "0.0.0.0:7700"],
            "--token-file",
        ),
        (
            &[
                "serve",
                "--pid",
                "1",
                "--listen",
                "0.0.0.0:7700",
                "--token-file",
                token,
            ],
            "--tls-generate",
        ),
        (
            &[
                "serve",
                "--pid",
                "1",
                "--tls-cert",
                not_pem,
                "--tls-key",
                not_pem,
            ],
            "not.pem",
        ),
        (&["serve", "--pid", "1", "--tls-cert", not_pem], "--tls-key"),
        (
            &["top", "--connect", "127.0.0.1:1", "--fingerprint", "AB:CD"],
            "fingerprint",
        ),
        (
            &["serve", "--pid", "1", "--token-file", "/no/such/token"],
            "/no/such/token",
        ),
        (&["serve", "--pid", "1", "--token-file", empty], "empty"),
        (&["serve", "--pid", "1", "--slow-budget", "0"], "percentage"),
        (&["record", "--pid", "1"], "--out"),
        (&["canary", "--every", "5ms"], "--every"),
        (
            &["canary", "--duration", "1s", "--every", "2s"],
            "--duration",
        ),
        (&["canary", "--duration", "soon"], "duration"),
        (
            &["record", "--pid", "1", "--out", "/no/such/dir/x.csv"],
            "--out",
        ),
        (
            &["top", "--connect", "127.0.0.1:1", "--duration", "1s"],
            "127.0.0.1:1",
        ),
        // A token is never sent over a connection that does not check the probe's identity.
        (
            &["top", "--connect", "127.0.0.1:1", "--token-file", token],
            "--fingerprint or --ca",
        ),
    ];
    for (args, needle) in cases {
        let out = probe(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{args:?} printed {stderr:?}");
        assert!(lines[0].starts_with("Error: "), "{args:?}: {stderr}");
        assert!(
            lines[0].contains(needle),
            "{args:?}: {stderr} does not name {needle}"
        );
        assert!(!out.status.success());
    }
}

#[test]
fn the_canary_prints_a_line_of_its_exchanges_each_interval_and_stops_by_itself() {
    let started = Instant::now();
    let out = probe(&["canary", "--duration", "450ms", "--every", "150ms"]);
    assert!(out.status.success(), "{out:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 3, "{lines:?}");
    for line in &lines {
        // One exchange every 4 ms and a bit: up to 37 in 150 ms, and some on the busiest host.
        let exchanges = line["exchanges"].as_u64().unwrap();
        assert!((5..=38).contains(&exchanges), "{line}");
        let cost = line["cpu_ns_per_exchange"].as_f64().unwrap();
        assert!(cost > 1_000.0 && cost < 4_000_000.0, "{line}");
        assert!(line["wall_ns"].as_u64().unwrap() > 1_700_000_000_000_000_000);
    }
}

#[test]
fn record_writes_a_csv_row_per_process_and_sample() {
    let fixture = common::Fixture::spawn(&["--threads", "2", "--children", "1"]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("stats.csv");
    let status = probe(&[
        "record",
        "--pid",
        &fixture.pid().to_string(),
        "--interval",
        "100ms",
        "--duration",
        "1s",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let text = std::fs::read_to_string(&out).unwrap();
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let headers = reader.headers().unwrap().clone();
    for column in [
        "t_s",
        "time",
        "probe",
        "host",
        "pid",
        "cpu_pct",
        "rss_bytes",
        "threads",
        "fds",
        "fd_limit_soft",
        "accept_queue",
    ] {
        assert!(headers.iter().any(|h| h == column), "no column {column}");
    }
    let rows: Vec<csv::StringRecord> = reader.records().map(|r| r.unwrap()).collect();
    let pid = headers.iter().position(|h| h == "pid").unwrap();
    let threads = headers.iter().position(|h| h == "threads").unwrap();
    let totals = rows.iter().filter(|r| &r[pid] == "total").count();
    assert!(
        (9..=12).contains(&totals),
        "{totals} samples in 1 s at 100 ms"
    );
    let root_rows: Vec<_> = rows
        .iter()
        .filter(|r| r[pid] == fixture.pid().to_string())
        .collect();
    assert_eq!(root_rows.len(), totals);
    let expected_threads = fixture.ready["threads"].as_u64().unwrap().to_string();
    assert!(root_rows.iter().all(|r| r[threads] == expected_threads));
    // The child appears in the tree too.
    let child = fixture.ready["children"][0].as_i64().unwrap().to_string();
    assert!(rows.iter().any(|r| r[pid] == child), "the child's rows");
}

#[test]
fn the_systemd_unit_verifies() {
    let Ok(which) = Command::new("systemd-analyze").arg("--version").output() else {
        panic!(
            "systemd-analyze is needed (Debian: systemd); the README's test command installs it"
        );
    };
    assert!(which.status.success());
    let dir = tempfile::tempdir().unwrap();
    let unit = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/systemd/showdown-probe.service"
    ))
    .unwrap();
    let env = dir.path().join("env");
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/systemd/showdown-probe.env"),
        &env,
    )
    .unwrap();
    // The network-facing base grants nothing; each privilege comes from a drop-in of its own.
    let granted = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.starts_with("AmbientCapabilities=") || l.starts_with("SystemCallFilter="))
            .flat_map(|l| l.split_once('=').map(|(_, v)| v.to_string()))
            .flat_map(|v| v.split_whitespace().map(str::to_string).collect::<Vec<_>>())
            .filter(|v| v.starts_with("CAP_") || v == "perf_event_open")
            .collect()
    };
    assert!(
        granted(&unit).is_empty(),
        "the base unit grants {:?}",
        granted(&unit)
    );
    assert!(unit.contains("\nCapabilityBoundingSet=\n"), "{unit}");
    let drop_in = |name: &str| {
        std::fs::read_to_string(format!("{}/systemd/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
    };
    assert_eq!(
        granted(&drop_in("profile.conf")),
        ["CAP_PERFMON", "CAP_SYSLOG", "perf_event_open"]
    );
    // ProtectKernelLogs=yes in the base would take CAP_SYSLOG back out of the bounding set.
    assert!(unit.contains("\nProtectKernelLogs=yes\n"), "{unit}");
    assert!(
        drop_in("profile.conf").contains("\nProtectKernelLogs=no\n"),
        "profile.conf grants CAP_SYSLOG and must lift ProtectKernelLogs"
    );
    assert_eq!(
        granted(&drop_in("ptrace.conf")),
        ["CAP_DAC_READ_SEARCH", "CAP_SYS_PTRACE"]
    );
    assert!(granted(&drop_in("user.conf")).is_empty());
    // The same unit, pointing at this build and at the example environment file, alone and
    // with its drop-ins (a drop-in's lines are read after the unit's, as appended here).
    let unit = unit
        .replace("/usr/local/bin/probe", env!("CARGO_BIN_EXE_probe"))
        .replace("/etc/default/showdown-probe", env.to_str().unwrap());
    for drop_ins in [
        &[][..],
        &["user.conf"],
        &["profile.conf"],
        &["ptrace.conf"],
        &["user.conf", "profile.conf"],
    ] {
        let mut text = unit.clone();
        for name in drop_ins {
            text.push('\n');
            text.push_str(&drop_in(name));
        }
        let path = dir.path().join("showdown-probe.service");
        std::fs::write(&path, text).unwrap();
        let out = Command::new("systemd-analyze")
            .arg("verify")
            .arg(&path)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && stderr.trim().is_empty(),
            "systemd-analyze verify with {drop_ins:?}: {stderr}"
        );
    }
    // The example options are ones the probe accepts.
    let args = std::fs::read_to_string(&env).unwrap();
    let line = args
        .lines()
        .find_map(|l| l.strip_prefix("PROBE_ARGS="))
        .unwrap();
    let mut argv = vec!["serve"];
    argv.extend(line.split_whitespace());
    argv.push("--help");
    assert!(probe(&argv).status.success(), "{argv:?}");
}

/// A tree of hundreds of processes needs more open files than the usual soft limit of 1,024:
/// the unit raises the hard limit and the probe its soft limit to it at start.
#[test]
fn the_probe_raises_its_open_file_limit() {
    let unit = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/systemd/showdown-probe.service"
    ))
    .unwrap();
    assert!(unit.contains("\nLimitNOFILE=65536\n"), "{unit}");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("samples.csv");
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -Sn 256 && exec {} record --pid {} --out {}",
            env!("CARGO_BIN_EXE_probe"),
            std::process::id(),
            out.display()
        ))
        .spawn()
        .unwrap();
    let limits = format!("/proc/{}/limits", child.id());
    let deadline = Instant::now() + Duration::from_secs(5);
    let (soft, hard) = loop {
        let text = std::fs::read_to_string(&limits).unwrap_or_default();
        let line = text.lines().find(|l| l.starts_with("Max open files"));
        let fields: Vec<&str> = line
            .map(|l| l.split_whitespace().collect())
            .unwrap_or_default();
        // After the exec: the probe's own limits, not the shell's.
        let exe = std::fs::read_link(format!("/proc/{}/exe", child.id())).unwrap_or_default();
        if exe.ends_with("probe") && fields.len() >= 5 && fields[3] != "256" {
            break (fields[3].to_string(), fields[4].to_string());
        }
        assert!(
            Instant::now() < deadline,
            "the probe kept a soft limit of 256: {text}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(soft, hard);
}
