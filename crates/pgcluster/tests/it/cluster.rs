//! A real cluster: created, queried, stopped, started again on the same port with its data,
//! and removed when dropped.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use pgcluster::{Cluster, Options};

#[test]
fn a_cluster_lives_stops_comes_back_and_is_removed() {
    let mut cluster = Cluster::start(&Options::default()).unwrap_or_else(|e| panic!("{e}"));
    let dir = cluster.dir().to_path_buf();
    cluster.create_database("app").unwrap();
    cluster
        .psql("app", "CREATE TABLE t (x int); INSERT INTO t VALUES (42)")
        .unwrap();
    assert_eq!(cluster.psql("app", "SELECT x FROM t").unwrap(), "42");
    assert!(cluster.pids().len() >= 2, "the postmaster and its children");

    let port = cluster.port();
    cluster.stop().unwrap();
    let down = cluster.psql("app", "SELECT 1").unwrap_err().to_string();
    assert!(down.contains("psql"), "{down}");
    cluster.start_again().unwrap();
    assert_eq!(cluster.port(), port);
    assert_eq!(cluster.psql("app", "SELECT x FROM t").unwrap(), "42");

    drop(cluster);
    assert!(!dir.exists(), "{} is left behind", dir.display());
}

#[test]
fn a_bad_statement_says_what_failed() {
    let cluster = Cluster::start(&Options::default()).unwrap_or_else(|e| panic!("{e}"));
    let error = cluster.psql("postgres", "SELEC 1").unwrap_err().to_string();
    assert!(error.contains("syntax error"), "{error}");
}

/// Nobody else on the machine gets in: without the password, over TCP and over the Unix
/// socket, the server refuses; with the URL's, it answers. The password file is gone.
#[test]
fn only_the_password_in_the_url_gets_in() {
    let cluster = Cluster::start(&Options::default()).unwrap_or_else(|e| panic!("{e}"));
    let psql = pgcluster::tools::find("psql").unwrap();
    let url = cluster.url("postgres");
    let (scheme, rest) = url.split_once("://").unwrap();
    let (userinfo, host) = rest.split_once('@').unwrap();
    let (user, password) = userinfo.split_once(':').unwrap();
    assert_eq!(password.len(), 32, "a generated password");
    let try_as = |target: &str, password: Option<&str>| {
        let mut c = std::process::Command::new(&psql);
        c.args(["-X", "-A", "-t", "-w", "-c", "SELECT 1", "-d", target])
            .env_remove("PGPASSWORD");
        if let Some(p) = password {
            c.env("PGPASSWORD", p);
        }
        let out = c.output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let tcp = format!("{scheme}://{user}@{host}");
    let (ok, said) = try_as(&tcp, None);
    assert!(
        !ok && said.contains("password"),
        "TCP without a password: {said}"
    );
    let (ok, _) = try_as(&tcp, Some("wrong"));
    assert!(!ok, "TCP with a wrong password");
    let socket = format!(
        "host={} port={} user=postgres dbname=postgres",
        cluster.dir().display(),
        cluster.port()
    );
    let (ok, said) = try_as(&socket, None);
    assert!(
        !ok && said.contains("password"),
        "the Unix socket without a password: {said}"
    );
    let (ok, said) = try_as(&socket, Some(password));
    assert!(ok, "the socket with the password: {said}");
    let (ok, said) = try_as(&tcp, Some(password));
    assert!(ok, "TCP with the password: {said}");
    assert!(!cluster.dir().join("pwfile").exists());
}

/// A cluster placed on a CPU list runs there, every process of it.
#[test]
fn a_placed_cluster_runs_on_its_cpus() {
    let options = Options {
        cpus: Some("0".into()),
        ..Options::default()
    };
    let cluster = Cluster::start(&options).unwrap_or_else(|e| panic!("{e}"));
    for pid in cluster.pids() {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let allowed = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .unwrap()
            .trim()
            .to_string();
        assert_eq!(allowed, "0", "PID {pid}");
    }
}
