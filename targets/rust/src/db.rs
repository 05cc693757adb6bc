//! The database: a lazily connected `PgPool` (a database down at start is not an error) and
//! the one insert, each step bounded so that a request is answered within its timeout.

use std::time::Duration;

use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgPool, PgPoolOptions};
use sqlx::Postgres;

/// Why a statement did not run; every one is answered `503`.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// No pooled connection within the timeout, or the connection failed.
    #[error("database unavailable: {0}")]
    Unavailable(sqlx::Error),
    /// The database ran the statement and refused it.
    #[error("database error: {0}")]
    Refused(Box<dyn sqlx::error::DatabaseError>),
    #[error("database unavailable: no answer within {0:?}")]
    Timeout(Duration),
}

/// The pool: `size` connections at most; waiting for one ends after `timeout`. Connections are
/// not pinged before each use (Node's `pg` and Go's `pgx` do not either): one that failed is
/// dropped instead.
pub fn pool(url: &str, size: u32, timeout: Duration) -> Result<PgPool, sqlx::Error> {
    PgPoolOptions::new()
        .max_connections(size)
        .acquire_timeout(timeout)
        .test_before_acquire(false)
        .connect_lazy(url)
}

/// Runs one statement on a pooled connection within `timeout`; a connection whose statement
/// failed for any reason but the SQL itself, or did not finish in time, is closed rather than
/// returned to the pool, so that a database that went away and came back is reconnected to.
async fn with_connection<T>(
    pool: &PgPool,
    timeout: Duration,
    run: impl AsyncFnOnce(&mut PoolConnection<Postgres>) -> Result<T, sqlx::Error>,
) -> Result<T, DbError> {
    let mut conn = pool.acquire().await.map_err(DbError::Unavailable)?;
    match tokio::time::timeout(timeout, run(&mut conn)).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(sqlx::Error::Database(e))) => Err(DbError::Refused(e)),
        Ok(Err(e)) => {
            drop(conn.detach());
            Err(DbError::Unavailable(e))
        }
        Err(_) => {
            drop(conn.detach());
            Err(DbError::Timeout(timeout))
        }
    }
}

/// `INSERT INTO users … RETURNING id`.
pub async fn insert_user(
    pool: &PgPool,
    timeout: Duration,
    email: &str,
    password: &str,
) -> Result<i32, DbError> {
    with_connection(pool, timeout, async |conn| {
        sqlx::query_scalar("INSERT INTO users (email, password) VALUES ($1, $2) RETURNING id")
            .bind(email)
            .bind(password)
            .fetch_one(&mut **conn)
            .await
    })
    .await
}

/// `SELECT 1`, for `/healthz`.
pub async fn ping(pool: &PgPool, timeout: Duration) -> Result<(), DbError> {
    with_connection(pool, timeout, async |conn| {
        sqlx::query_scalar::<_, i32>("SELECT 1")
            .fetch_one(&mut **conn)
            .await
            .map(|_| ())
    })
    .await
}
