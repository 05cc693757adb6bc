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
