//! The database watched beside the target, against a real PostgreSQL and real processes: what
//! `pg_stat_activity` says of backends blocked on a lock and of one idle in its transaction, and
//! a database process on the generator's CPUs said in the placement.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use std::time::{Duration, Instant};

use probe::sample::WaitClass;
use probe::selector::Selector;
use sqlx::{Connection, PgConnection};

#[tokio::test]
async fn backends_blocked_on_a_lock_and_one_idle_in_its_transaction_are_read_as_such() {
    let db = tokio::task::spawn_blocking(|| pgcluster::Scratch::new().expect("a database"))
        .await
        .unwrap();
    let mut holder = PgConnection::connect(&db.url).await.unwrap();
    sqlx::query("CREATE TABLE held (id int)")
        .execute(&mut holder)
        .await
        .unwrap();
    sqlx::query("BEGIN").execute(&mut holder).await.unwrap();
    sqlx::query("LOCK TABLE held IN ACCESS EXCLUSIVE MODE")
        .execute(&mut holder)
        .await
        .unwrap();
    // Two clients wait for the table, each on a connection of its own.
    let mut waiters = Vec::new();
    for _ in 0..2 {
        let url = db.url.clone();
        waiters.push(tokio::spawn(async move {
            let mut c = PgConnection::connect(&url).await.unwrap();
            sqlx::query("SELECT count(*) FROM held")
                .execute(&mut c)
                .await
                .unwrap();
        }));
    }
    let mut reader = PgConnection::connect(&db.url).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let seen = loop {
        let a = experiment::watch::read_activity(&mut reader).await.unwrap();
        if a.active_in(WaitClass::Lock) >= 2 || Instant::now() > deadline {
            break a;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(seen.active_in(WaitClass::Lock), 2, "{seen:?}");
    assert_eq!(seen.idle_in_transaction, 1, "the holder: {seen:?}");
    assert_eq!(seen.backends, 3, "the reader leaves itself out: {seen:?}");
    assert_eq!(seen.hidden, 0, "{seen:?}");
    assert!(seen.max_connections.is_some_and(|m| m >= 3));
    // Writes are counted as they get their transaction IDs, at once.
    let before = seen.next_xid.unwrap();
    sqlx::query("COMMIT").execute(&mut holder).await.unwrap();
    for w in waiters {
        w.await.unwrap();
    }
    for _ in 0..5 {
        sqlx::query("INSERT INTO held VALUES (1)")
            .execute(&mut holder)
            .await
            .unwrap();
    }
    let after = experiment::watch::read_activity(&mut reader).await.unwrap();
    assert!(
        after.next_xid.unwrap() >= before + 5,
        "{before} → {:?}",
        after.next_xid
    );
    assert_eq!(after.active_in(WaitClass::Lock), 0);
}

#[test]
fn a_database_on_the_generators_cpus_is_said() {
    // A process pinned to CPU 0 stands for a database: the generator on CPU 0 shares it; one
    // elsewhere does not.
    /// Ended when dropped, the test failing or not.
    struct Sleeper(std::process::Child);
    impl Drop for Sleeper {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let sleeper = Sleeper(
        Command::new("taskset")
            .args(["-c", "0", "sleep", "30"])
            .spawn()
            .unwrap(),
    );
    std::thread::sleep(Duration::from_millis(200));
    let process = Selector::Pid(sleeper.0.id() as i32);
    let on = |cpus: &str| {
        experiment::watch::shares_generator_cpus(&process, Some(&cpus.parse().unwrap()))
    };
    let said = on("0").expect("shares CPU 0");
    assert!(
        said.starts_with("the database ran on CPU 0, sharing the generator's CPU 0"),
        "{said}"
    );
    if probe::cpus::CpuList::online().len() > 1 {
        assert_eq!(on("1"), None);
    }
    drop(sleeper);
}
