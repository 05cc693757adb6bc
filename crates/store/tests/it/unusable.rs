//! Stores that cannot be used: one line within seconds that names the problem and the fix,
//! and nothing created or changed. Files that are not SQLite, truncated or damaged ones,
//! someone else's database, a PostgreSQL that refuses the password, a port nobody listens on,
//! and a server that accepts the connection and never answers.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use store::Store;

/// Opens `url`, expecting a refusal within a few seconds; returns its message.
async fn refused(url: &str) -> String {
    let started = Instant::now();
    let result = Store::open(url).await;
    let took = started.elapsed();
    let message = match result {
        Ok(_) => panic!("{url} was opened"),
        Err(e) => e.to_string(),
    };
    assert!(
        took < Duration::from_secs(7),
        "{url}: {took:?} to say {message}"
    );
    assert_eq!(message.lines().count(), 1, "{message}");
    message
}

/// A real store with a few tables' worth of pages, closed.
async fn good_store(path: &Path) -> Vec<u8> {
    let url = format!("sqlite://{}", path.display());
    let store = Store::open(&url).await.unwrap();
    store.close().await;
    // Fold the write-ahead log in, as a store copied elsewhere would be.
    let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
    sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
    std::fs::read(path).unwrap()
}

#[tokio::test]
async fn files_that_are_not_stores_are_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let good = good_store(&dir.path().join("good.db")).await;
    assert!(good.len() > 3 * 4096, "the store spans several pages");
    let other = dir.path().join("other.db");
    {
        let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}?mode=rwc", other.display()))
            .await
            .unwrap();
        sqlx::query("CREATE TABLE customers (id INTEGER)")
            .execute(&pool)
            .await
            .unwrap();
        pool.close().await;
    }
    let mut damaged = good.clone();
    for (i, b) in damaged.iter_mut().enumerate().skip(4096) {
        *b = (i * 7919 % 251) as u8;
    }
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "random.db",
            (0..5000u32).map(|i| (i * 31 % 256) as u8).collect(),
            "not a SQLite database",
        ),
        (
            "text.db",
            b"hello, I am a text file".to_vec(),
            "not a SQLite database",
        ),
        ("truncated.db", good[..good.len() / 2].to_vec(), "truncated"),
        ("damaged.db", damaged, "not a usable SQLite database"),
    ];
    for (name, bytes, says) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, &bytes).unwrap();
        let message = refused(&format!("sqlite://{}", path.display())).await;
        assert!(message.contains(says), "{name}: {message}");
        assert!(
            message.contains("move") || message.contains("restore"),
            "{name} names a fix: {message}"
        );
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "{name} was changed");
    }
    let before = std::fs::read(&other).unwrap();
    let message = refused(&format!("sqlite://{}", other.display())).await;
    assert!(
        message.contains("customers") && message.contains("not a Showdown store"),
        "{message}"
    );
    assert_eq!(
        std::fs::read(&other).unwrap(),
        before,
        "someone else's database was changed"
    );
}

#[tokio::test]
async fn postgres_that_cannot_be_used_is_explained_quickly() {
    // A port nobody listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let message = refused(&format!("postgres://showdown:pw@127.0.0.1:{port}/runs")).await;
    assert!(
        message.contains("cannot reach") && message.contains("--db"),
        "{message}"
    );
    assert!(
        !message.contains(":pw@"),
        "the password is not printed: {message}"
    );

    // A server that accepts and never answers (a hung host, a wrong service).
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let message = refused(&format!("postgres://showdown@127.0.0.1:{port}/runs")).await;
    assert!(message.contains("did not answer"), "{message}");
    drop(silent);

    // A real PostgreSQL that asks for a password and is given the wrong one.
    let cluster = pgcluster::Cluster::start(&pgcluster::Options::default()).unwrap();
    cluster
        .psql("postgres", "CREATE ROLE runner LOGIN PASSWORD 'right'")
        .unwrap();
    cluster
        .psql("postgres", "CREATE DATABASE runs OWNER runner")
        .unwrap();
    let hba = cluster.dir().join("data/pg_hba.conf");
    std::fs::write(&hba, "local all all trust\nhost all postgres 127.0.0.1/32 trust\nhost all all 127.0.0.1/32 scram-sha-256\n").unwrap();
    cluster.psql("postgres", "SELECT pg_reload_conf()").unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let base = format!("127.0.0.1:{}/runs", cluster.port());
    let message = refused(&format!("postgres://runner:wrong@{base}")).await;
    assert!(message.contains("password was refused"), "{message}");
    assert!(
        !message.contains("wrong@"),
        "the password is not printed: {message}"
    );
    let message = refused(&format!(
        "postgres://runner:right@127.0.0.1:{}/nosuchdb",
        cluster.port()
    ))
    .await;
    assert!(
        message.contains("does not exist") && message.contains("createdb"),
        "{message}"
    );
    let tables = cluster
        .psql(
            "runs",
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'",
        )
        .unwrap();
    assert_eq!(tables.trim(), "0", "nothing was created");
    let store = Store::open(&format!("postgres://runner:right@{base}"))
        .await
        .unwrap();
    store.close().await;
}
