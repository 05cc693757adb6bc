//! A cluster under a temporary directory whose path holds a space and a quote: pg_ctl hands its
//! options to a shell, so the socket directory must reach the server as one word.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use pgcluster::{Cluster, Options};

/// Run by the test below in a process of its own whose TMPDIR it chose.
#[test]
#[ignore = "run by a_cluster_starts_under_a_temporary_directory_with_a_space_and_a_quote"]
fn start_under_tmpdir() {
    let tmp = std::env::temp_dir();
    let cluster = Cluster::start(&Options::default()).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        cluster.dir().starts_with(&tmp),
        "{}",
        cluster.dir().display()
    );
    cluster.create_database("app").unwrap();
    assert_eq!(cluster.psql("app", "SELECT 40 + 2").unwrap(), "42");
}

#[test]
fn a_cluster_starts_under_a_temporary_directory_with_a_space_and_a_quote() {
    let parent = tempfile::tempdir().unwrap();
    let odd = parent.path().join("my tmp's");
    std::fs::create_dir(&odd).unwrap();
    if rustix::process::geteuid().is_root() {
        // The server runs as postgres, which must reach its directory.
        use std::os::unix::fs::PermissionsExt;
        for dir in [parent.path(), odd.as_path()] {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "tmpdir::start_under_tmpdir",
            "--ignored",
            "--nocapture",
        ])
        .env("TMPDIR", &odd)
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{said}");
    assert!(said.contains("1 passed"), "{said}");
}
