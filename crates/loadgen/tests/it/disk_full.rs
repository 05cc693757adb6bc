//! A SQLite store on a disk that fills up (a 2 MiB tmpfs of the test's own): a run that cannot
//! start says so before sending anything; a run whose disk fills mid-way prints its figures in
//! full with a warning that names the cause; the runs already stored stay intact.
#![allow(clippy::unwrap_used)]

use crate::common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{exclusive, loadgen};
use loadgen::commands::target::{TargetConfig, TargetServer};

/// A small tmpfs, unmounted on drop.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    /// `None` when this process may not mount (not root): the test says so and stops.
    fn mount() -> Option<SmallDisk> {
        let dir = tempfile::tempdir().unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=2m", "tmpfs"])
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(SmallDisk { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Fills what is left with a file (removed by `free`).
    fn fill(&self) {
        let mut f = std::fs::File::create(self.filler()).unwrap();
        let block = vec![0u8; 4096];
        while f.write_all(&block).is_ok() {}
        let _ = f.sync_all();
    }

    fn free(&self) {
        let _ = std::fs::remove_file(self.filler());
    }

    fn filler(&self) -> PathBuf {
        self.path().join("filler")
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

#[test]
fn a_full_disk_is_named_and_nothing_stored_is_damaged() {
    let _cpu = exclusive();
    let Some(disk) = SmallDisk::mount() else {
        eprintln!("SKIPPED: mounting a tmpfs needs root (scripts/test.sh runs as root in CI)");
        return;
    };
    let target = TargetServer::start(TargetConfig::default()).unwrap();
    let url = target.url("/now");
    let db = format!("sqlite://{}/runs.db", disk.path().display());

    let first = loadgen(&[
        "attack",
        "--rate",
        "200",
        "--duration",
        "1s",
        "--db",
        &db,
        "--name",
        "first",
        &url,
    ]);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let show =
        |db: &str| loadgen(&["runs", "show", "first", "--db", db, "--output", "json"]).stdout;
    let first_stored = show(&db);
    assert!(!first_stored.is_empty());

    // Full before the run: refused before anything is sent.
    disk.fill();
    let sent_before = target
        .stats
        .requests
        .load(std::sync::atomic::Ordering::Relaxed);
    let refused = loadgen(&[
        "attack",
        "--rate",
        "200",
        "--duration",
        "1s",
        "--db",
        &db,
        &url,
    ]);
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert_eq!(said.lines().count(), 1, "{said}");
    assert!(said.contains("is full") && said.contains("--db"), "{said}");
    assert_eq!(
        target
            .stats
            .requests
            .load(std::sync::atomic::Ordering::Relaxed),
        sent_before,
        "nothing was sent"
    );
    disk.free();

    // Full in the middle of the run: the figures in full, the cause named.
    let gun = Command::new(env!("CARGO_BIN_EXE_loadgen"))
        .args([
            "attack",
            "--rate",
            "1000",
            "--duration",
            "4s",
            "--db",
            &db,
            "--output",
            "json",
            &url,
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    disk.fill();
    let out = gun.wait_with_output().unwrap();
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(
        summary["requests"]["ok"], 4000,
        "the figures in full: {summary}"
    );
    let warnings = summary["warnings"].to_string();
    assert!(
        warnings.contains("STORE FAILED") && warnings.contains("is full"),
        "{warnings}"
    );
    disk.free();

    // What was stored before is intact.
    assert_eq!(
        show(&db),
        first_stored,
        "the first run reads back as it was"
    );
    let check = loadgen(&["runs", "list", "--db", &db]);
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
}
