//! Profiles: a process that burns its CPU in one known function (`fixtures/burn.c`, built here
//! with frame pointers) is watched with profiling on; its profile must name the function and
//! agree with the sampler's CPU figure. Run as the target's user with the profiling drop-in's
//! capabilities (`user.conf` + `profile.conf`), the probe profiles it; as another user with the
//! base unit's none, it says in one event that it cannot profile and in another which figures
//! it may not read, and samples the rest as before.
#![allow(clippy::unwrap_used)]

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use probe::profile::ProfileConfig;
use probe::protocol::Record;
use probe::sample::{EventKind, Profile};
use probe::selector::Selector;

/// The target's user in the test with users.
const NOBODY: u32 = 65534;
/// A user that owns nothing here.
const STRANGER: u32 = 65533;

/// `burn.c` built into `dir`.
fn build_burn(dir: &Path) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/burn.c");
    let binary = dir.join("burn");
    let status = Command::new("cc")
        .args(["-O2", "-fno-omit-frame-pointer", "-o"])
        .arg(&binary)
        .arg(&source)
        .status()
        .unwrap();
    assert!(status.success(), "cc failed on {}", source.display());
    binary
}

/// The burner running for `seconds`, once it has started burning.
fn burning(binary: &Path, seconds: u32) -> Child {
    burning_as(binary, seconds, None)
}

/// The burner running for `seconds` as user `uid` (setpriv), once it has started burning.
fn burning_as(binary: &Path, seconds: u32, uid: Option<u32>) -> Child {
    let mut command = match uid {
        Some(uid) => {
            let mut c = Command::new("setpriv");
            c.arg(format!("--reuid={uid}"))
                .arg(format!("--regid={uid}"))
                .arg("--clear-groups")
                .arg(binary);
            c
        }
        None => Command::new(binary),
    };
    let mut child = command
        .arg(seconds.to_string())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "burning");
    child
}

fn profiles(records: &[(u64, Record)]) -> Vec<Profile> {
    records
        .iter()
        .filter_map(|(_, r)| match r {
            Record::Profile(p) => Some((**p).clone()),
            _ => None,
        })
        .collect()
}

/// The share of `profiles`' samples whose innermost frame is `function`.
fn share_in(profiles: &[Profile], function: &str) -> f64 {
    let total: u64 = profiles.iter().map(|p| p.samples).sum();
    let in_it: u64 = profiles
        .iter()
        .flat_map(|p| p.folded())
        .filter(|(stack, _)| stack.rsplit(';').next() == Some(function))
        .map(|(_, n)| n)
        .sum();
    assert!(total > 0, "no samples in {} profiles", profiles.len());
    in_it as f64 / total as f64
}

#[test]
fn a_process_burning_in_one_function_is_named_in_its_profile_and_its_cpu_agrees() {
    let dir = tempfile::tempdir().unwrap();
    let mut burn = burning(&build_burn(dir.path()), 10);
    let mut config = common::config(Selector::Pid(burn.id() as i32), 100);
    config.profile = Some(ProfileConfig::default());
    let records = common::sample_for(config, Duration::from_millis(5_500));
    let _ = burn.kill();
    let _ = burn.wait();

    let unavailable: Vec<_> = common::events(&records)
        .into_iter()
        .filter(|e| matches!(e.kind, EventKind::ProfileUnavailable { .. }))
        .collect();
    assert!(unavailable.is_empty(), "{unavailable:?}");
    // The first record covers the time before the tree was known; the last may be cut short.
    let all = profiles(&records);
    assert!(all.len() >= 4, "{} profiles in 5.5 s", all.len());
    let steady = &all[1..all.len() - 1];
    let share = share_in(steady, "burn_sha256");
    let first: Vec<(String, u64)> = steady[0].folded().collect();
    assert!(
        share >= 0.7,
        "{:.0} % of samples in burn_sha256: {first:?}",
        share * 100.0,
    );
    assert!(
        first[0].0.starts_with("burn;burn;") && first[0].0.contains(";main;burn_sha256"),
        "process, thread, then main calling burn_sha256: {first:?}"
    );
    assert_eq!(steady.iter().map(|p| p.lost).sum::<u64>(), 0);

    // The profile's CPU (the samples' periods) against the sampler's (the process CPU clock),
    // over the same span.
    let from = steady[0].mono_ns - steady[0].interval_ns;
    let to = steady[steady.len() - 1].mono_ns;
    let profiled_pct =
        steady.iter().map(|p| p.cpu_ns).sum::<u64>() as f64 / (to - from) as f64 * 100.0;
    let cpu: Vec<f64> = common::samples(&records)
        .iter()
        .filter(|s| s.mono_ns > from && s.mono_ns <= to)
        .filter_map(|s| s.total.as_ref().and_then(|t| t.cpu_pct))
        .collect();
    let sampled_pct = cpu.iter().sum::<f64>() / cpu.len() as f64;
    assert!(
        (profiled_pct - sampled_pct).abs() <= 10.0,
        "profile says {profiled_pct:.1} % of a core, the sampler {sampled_pct:.1} %"
    );
}

/// `probe record --profile` of the burner as user `uid` with `caps` (setpriv's spelling, after
/// `-all`); what it recorded.
fn record_as(uid: u32, burn: &Child, caps: &str, dir: &Path) -> Vec<Record> {
    let out = dir.join(format!("as-{uid}-{}.jsonl", caps.len()));
    let status = Command::new("setpriv")
        .arg(format!("--reuid={uid}"))
        .arg(format!("--regid={uid}"))
        .arg("--clear-groups")
        .arg(format!("--inh-caps=-all{caps}"))
        .arg(format!("--ambient-caps=-all{caps}"))
        .arg(env!("CARGO_BIN_EXE_probe"))
        .args([
            "record",
            "--profile",
            "--duration",
            "3s",
            "--format",
            "jsonl",
            "--pid",
        ])
        .arg(burn.id().to_string())
        .arg("--out")
        .arg(&out)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&status.stderr).to_string();
    assert!(status.status.success(), "{said}");
    std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn the_targets_user_profiles_it_with_the_drop_ins_capabilities_and_a_stranger_without_says_what_it_misses(
) {
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipped: needs root to become another user");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let binary = build_burn(dir.path());
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let mut burn = burning_as(&binary, 12, Some(NOBODY));

    // The target's user with profile.conf's capabilities (crates/probe/systemd/).
    let records = record_as(NOBODY, &burn, ",+perfmon,+syslog", dir.path());
    let all: Vec<Profile> = records
        .iter()
        .filter_map(|r| match r {
            Record::Profile(p) => Some((**p).clone()),
            _ => None,
        })
        .collect();
    assert!(all.len() >= 2, "{records:?}");
    let share = share_in(&all[1..], "burn_sha256");
    assert!(share >= 0.7, "{:.0} % in burn_sha256", share * 100.0);

    // Another user with the base unit's nothing (and the kernel's default paranoia): one event
    // for the profile, one naming the figures it may not read; samples go on, FDs counted.
    let paranoid: i32 = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let records = record_as(STRANGER, &burn, "", dir.path());
    let _ = burn.kill();
    let _ = burn.wait();
    let samples = records
        .iter()
        .filter(|r| matches!(r, Record::Sample(_)))
        .count();
    assert!(samples >= 20, "{samples} samples in 3 s");
    let unreadable: Vec<&Vec<String>> = records
        .iter()
        .filter_map(|r| match r {
            Record::Event(e) => match &e.kind {
                EventKind::Unreadable {
                    figures, reason, ..
                } => {
                    assert!(reason.contains("user.conf"), "{reason}");
                    Some(figures)
                }
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(unreadable.len(), 1, "{records:?}");
    assert!(
        unreadable[0].iter().any(|f| f.contains("io")),
        "{unreadable:?}"
    );
    for r in &records {
        if let Record::Sample(s) = r {
            let root = &s.processes[0];
            assert_eq!(
                root.read_bytes, None,
                "io is not readable: no figure, not 0"
            );
            assert!(
                root.fds.is_some(),
                "the FD count needs no privilege: {root:?}"
            );
        }
    }
    let refused: Vec<&String> = records
        .iter()
        .filter_map(|r| match r {
            Record::Event(e) => match &e.kind {
                EventKind::ProfileUnavailable { reason } => Some(reason),
                _ => None,
            },
            _ => None,
        })
        .collect();
    if paranoid > 0 {
        assert_eq!(refused.len(), 1, "{records:?}");
        assert!(
            refused[0].contains("CAP_PERFMON") && refused[0].contains("perf_event_paranoid"),
            "{}",
            refused[0]
        );
        assert!(!records.iter().any(|r| matches!(r, Record::Profile(_))));
    }
}
