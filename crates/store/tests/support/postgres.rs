//! A real, throwaway PostgreSQL server for tests.
//!
//! With `SHOWDOWN_TEST_POSTGRES_URL` set (the test script starts one server for the whole run),
//! each test gets a fresh database on that server. Without it, the test starts its own cluster
//! with `initdb` and `pg_ctl` (from PATH or /usr/lib/postgresql/*/bin) in a temporary directory
//! on a free port, as the `postgres` user when run as root, and stops it when dropped.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct TestPostgres {
    /// A URL to a database of this test's own.
    pub url: String,
    cluster: Option<(tempfile::TempDir, PathBuf)>,
}

fn tool(name: &str) -> PathBuf {
    if let Ok(found) = Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {name}"))
        .output()
    {
        let path = String::from_utf8_lossy(&found.stdout).trim().to_string();
        if !path.is_empty() {
            return PathBuf::from(path);
        }
    }
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|d| {
            d.flatten()
                .map(|e| e.path().join("bin").join(name))
                .collect()
        })
        .unwrap_or_default();
    versions.sort();
    versions.pop().filter(|p| p.exists()).unwrap_or_else(|| {
        panic!("{name} not found: install PostgreSQL (the README's test command does)")
    })
}

/// Runs a PostgreSQL tool, as the `postgres` user if we are root.
fn run_as_postgres(program: &Path, args: &[&str]) {
    let root = rustix_uid() == 0;
    let mut cmd = if root {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    };
    let out = cmd.args(args).output().expect("run a PostgreSQL tool");
    assert!(
        out.status.success(),
        "{} {args:?} failed: {}{}",
        program.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn rustix_uid() -> u32 {
    // Our own uid, from /proc.
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl TestPostgres {
    pub async fn start() -> TestPostgres {
        let (server, cluster) = match std::env::var("SHOWDOWN_TEST_POSTGRES_URL") {
            Ok(url) => (url, None),
            Err(_) => {
                let dir = tempfile::tempdir().unwrap();
                if rustix_uid() == 0 {
                    let ok = Command::new("chown")
                        .arg("postgres:")
                        .arg(dir.path())
                        .status()
                        .unwrap();
                    assert!(ok.success(), "chown the cluster's directory to postgres");
                }
                let data = dir.path().join("data");
                let port = free_port();
                run_as_postgres(
                    &tool("initdb"),
                    &[
                        "-D",
                        data.to_str().unwrap(),
                        "-A",
                        "trust",
                        "-U",
                        "postgres",
                        "--no-sync",
                        "-E",
                        "UTF8",
                    ],
                );
                let options = format!(
                    "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
                    dir.path().display()
                );
                let log = dir.path().join("log");
                run_as_postgres(
                    &tool("pg_ctl"),
                    &[
                        "-D",
                        data.to_str().unwrap(),
                        "-o",
                        &options,
                        "-l",
                        log.to_str().unwrap(),
                        "-w",
                        "start",
                    ],
                );
                (
                    format!("postgres://postgres@127.0.0.1:{port}/postgres"),
                    Some((dir, data)),
                )
            }
        };
        // A database of this test's own.
        let name = format!("t_{}", uuid_like());
        sqlx::any::install_default_drivers();
        let mut admin = <sqlx::AnyConnection as sqlx::Connection>::connect(&server)
            .await
            .unwrap();
        sqlx::Executor::execute(
            &mut admin,
            sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")),
        )
        .await
        .unwrap();
        let base = server.rsplit_once('/').map(|(b, _)| b).unwrap_or(&server);
        TestPostgres {
            url: format!("{base}/{name}"),
            cluster,
        }
    }
}

fn uuid_like() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{:x}{:x}", nanos, std::process::id())
}

impl Drop for TestPostgres {
    fn drop(&mut self) {
        if let Some((_dir, data)) = self.cluster.take() {
            run_as_postgres(
                &tool("pg_ctl"),
                &["-D", data.to_str().unwrap(), "-m", "immediate", "stop"],
            );
        }
    }
}
