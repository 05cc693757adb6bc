//! The system under test beyond the target: its database, watched by a probe of its own (its
//! processes' CPU, run-queue wait, threads by state) and by what PostgreSQL says of its
//! backends (`pg_stat_activity`'s wait events, the transaction IDs it assigns). The latter is
//! read here, over SQL, because only the runner holds the database's URL: the probe is handed
//! the readings, never the URL.

use std::time::Duration;

use probe::activity::ActivityFeed;
use probe::cpus::CpuList;
use probe::sample::DbActivity;
use probe::selector::Selector;
use sqlx::{ConnectOptions, PgConnection, Row};

/// How often PostgreSQL is asked: the probe's full tick, so every full sample can carry one.
pub const ACTIVITY_PERIOD: Duration = Duration::from_millis(100);

/// The database's server process, where it runs on this host: the throwaway cluster's
/// postmaster, or whatever listens on the port of a URL that names this host (a socket
/// directory, `localhost`, a loopback address). `None` for a database elsewhere, which is
/// known only by what it says of itself.
pub fn local_process(url: &str, postmaster: Option<i32>) -> Option<Selector> {
    if let Some(pid) = postmaster {
        return Some(Selector::Pid(pid));
    }
    let options = crate::database::options(url).ok()?;
    is_this_host(options.get_host()).then(|| Selector::Port(options.get_port()))
}

/// Whether a PostgreSQL host is this machine: a socket directory, `localhost`, a loopback
/// address.
fn is_this_host(host: &str) -> bool {
    host.starts_with('/')
        || host == "localhost"
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Whether two PostgreSQL URLs name one database (its server and its name; the user and the
/// password aside), however they are spelt: `postgres://` or `postgresql://`, the port given
/// or implied, this machine by any of its names.
pub fn same_database(a: &str, b: &str) -> bool {
    let key = |url: &str| {
        let o = crate::database::options(url).ok()?;
        let host = if is_this_host(o.get_host()) {
            "this host".to_string()
        } else {
            o.get_host().to_ascii_lowercase()
        };
        Some((host, o.get_port(), o.get_database().map(str::to_string)))
    };
    (a.starts_with("postgres") && b.starts_with("postgres"))
        && matches!((key(a), key(b)), (Some(x), Some(y)) if x == y)
}

/// Where the database's server ran against the generator's CPUs (`None`: anywhere): a
/// sentence for the placement when they share any, since the database's work then competes
/// with the load's and both read slower. `None` when they do not, or where it is not here.
pub fn shares_generator_cpus(process: &Selector, gun: Option<&CpuList>) -> Option<String> {
    let root = probe::collect::ProcRoot::default();
    let pid = process.resolve(&root, None)?;
    let db = probe::collect::cpus_of(&root, pid)?;
    let gun = gun.cloned().unwrap_or_else(CpuList::online);
    let shared = db.intersection(&gun);
    (!shared.is_empty()).then(|| {
        format!(
            "the database ran on CPU {db}, sharing the generator's CPU {shared}: its work competes with the load's (pin it apart with [database] cpus, or taskset for yours)"
        )
    })
}

/// One reading of the database's backends (its own connection left out).
const ACTIVITY: &str = "SELECT \
    count(*)::int8, \
    count(*) FILTER (WHERE state IS NULL)::int8, \
    count(*) FILTER (WHERE state = 'idle')::int8, \
    count(*) FILTER (WHERE state LIKE 'idle in transaction%')::int8, \
    count(*) FILTER (WHERE state = 'active' AND wait_event_type IS NULL)::int8, \
    count(*) FILTER (WHERE state = 'active' AND wait_event_type = 'Lock')::int8, \
    count(*) FILTER (WHERE state = 'active' AND wait_event_type = 'LWLock')::int8, \
    count(*) FILTER (WHERE state = 'active' AND wait_event_type = 'IO')::int8, \
    count(*) FILTER (WHERE state = 'active' AND wait_event_type = 'Client')::int8, \
    count(*) FILTER (WHERE state = 'active' AND wait_event_type = 'IPC')::int8, \
    count(*) FILTER (WHERE state = 'active' AND wait_event_type = 'Timeout')::int8, \
    count(*) FILTER (WHERE state = 'active' AND wait_event_type NOT IN \
        ('Lock', 'LWLock', 'IO', 'Client', 'IPC', 'Timeout'))::int8, \
    current_setting('max_connections')::int8, \
    pg_snapshot_xmax(pg_current_snapshot())::text::int8 \
    FROM pg_stat_activity \
    WHERE backend_type = 'client backend' AND datname = current_database() \
    AND pid <> pg_backend_pid()";

/// Asks PostgreSQL once.
pub async fn read_activity(conn: &mut PgConnection) -> Result<DbActivity, sqlx::Error> {
    let row = sqlx::query(ACTIVITY).fetch_one(&mut *conn).await?;
    let n = |i: usize| -> Result<u32, sqlx::Error> {
        let v: i64 = row.try_get(i)?;
        Ok(u32::try_from(v.max(0)).unwrap_or(u32::MAX))
    };
    // Columns 4 to 11: active backends in `probe::sample::WaitClass::ALL`'s order.
    let mut active = [0u32; 8];
    for (i, slot) in active.iter_mut().enumerate() {
        *slot = n(4 + i)?;
    }
    let next_xid: Option<i64> = row.try_get(13)?;
    Ok(DbActivity {
        read_wall_ns: wall_ns(),
        backends: n(0)?,
        hidden: n(1)?,
        max_connections: Some(n(12)?),
        idle: n(2)?,
        idle_in_transaction: n(3)?,
        active,
        next_xid: next_xid.and_then(|t| u64::try_from(t).ok()),
    })
}

fn wall_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// Reads the database's activity into a feed every [`ACTIVITY_PERIOD`] until dropped.
/// How long the database has to take the watcher's connection.
const CONNECT_PATIENCE: std::time::Duration = std::time::Duration::from_secs(5);
/// How long one read of `pg_stat_activity` may take: a reading late by more says nothing of
/// the second it was asked for.
const QUERY_PATIENCE: std::time::Duration = std::time::Duration::from_secs(2);

#[derive(Debug)]
pub struct ActivityReader {
    task: tokio::task::JoinHandle<()>,
}

impl ActivityReader {
    /// Connects and starts reading; a database that cannot be asked is said once (redacted)
    /// and leaves the feed empty: the pages then say the wait events were not read.
    pub async fn start(url: &str, feed: ActivityFeed) -> Option<ActivityReader> {
        // The URL's password only, never PGPASSWORD's or ~/.pgpass's (`database::options`).
        let options = match crate::database::options(url) {
            Ok(o) => o.disable_statement_logging(),
            Err(e) => {
                eprintln!("  note: the database's activity is not read: {e}");
                return None;
            }
        };
        // A database that takes the connection and never answers must not hold the cell.
        let mut conn = match tokio::time::timeout(CONNECT_PATIENCE, options.connect()).await {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => {
                eprintln!(
                    "  note: the database's activity is not read: {}",
                    redact::text(&e.to_string())
                );
                return None;
            }
            Err(_) => {
                eprintln!(
                    "  note: the database's activity is not read: no answer within {}s",
                    CONNECT_PATIENCE.as_secs()
                );
                return None;
            }
        };
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(ACTIVITY_PERIOD);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                tick.tick().await;
                let read = tokio::time::timeout(QUERY_PATIENCE, read_activity(&mut conn)).await;
                match read {
                    Ok(Ok(a)) => feed.publish(a),
                    Err(_) => {
                        eprintln!(
                            "  note: the database's activity stopped being read: no answer within {}s",
                            QUERY_PATIENCE.as_secs()
                        );
                        return;
                    }
                    Ok(Err(e)) => {
                        eprintln!(
                            "  note: the database's activity stopped being read: {}",
                            redact::text(&e.to_string())
                        );
                        return;
                    }
                }
            }
        });
        Some(ActivityReader { task })
    }
}

impl Drop for ActivityReader {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_database_is_known_however_its_url_is_spelled() {
        let store = "postgres://runs:pw@localhost/showdown_runs";
        for same in [
            "postgresql://other@127.0.0.1:5432/showdown_runs",
            "postgres://localhost/showdown_runs?sslmode=disable",
            "postgres://[::1]:5432/showdown_runs",
        ] {
            assert!(same_database(same, store), "{same}");
        }
        for other in [
            "postgres://localhost/app",
            "postgres://localhost:5433/showdown_runs",
            "postgres://db.lab/showdown_runs",
            "sqlite://runs.db",
        ] {
            assert!(!same_database(other, store), "{other}");
        }
    }

    #[tokio::test]
    async fn a_database_that_takes_the_connection_and_never_answers_is_given_up() {
        // A listener nobody serves: the kernel accepts the connection, nothing answers.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!(
            "postgres://app@127.0.0.1:{}/app?sslmode=disable",
            silent.local_addr().unwrap().port()
        );
        let feed = ActivityFeed::default();
        let reader = tokio::time::timeout(
            CONNECT_PATIENCE + std::time::Duration::from_secs(5),
            ActivityReader::start(&url, feed),
        )
        .await
        .expect("the watcher gave up within its patience");
        assert!(reader.is_none());
    }

    #[test]
    fn a_database_on_this_host_is_watched_by_its_port() {
        let port = |url: &str| match local_process(url, None) {
            Some(Selector::Port(p)) => Some(p),
            _ => None,
        };
        assert_eq!(port("postgres://u@localhost/db"), Some(5432));
        assert_eq!(port("postgres://u@127.0.0.1:6543/db"), Some(6543));
        assert_eq!(port("postgres://u@[::1]:6000/db"), Some(6000));
        assert_eq!(port("postgres://u@db.example.com/db"), None);
        assert!(matches!(
            local_process("postgres://u@db.example.com/db", Some(42)),
            Some(Selector::Pid(42))
        ));
    }
}
