//! The targets' database: `targets/schema.sql` applied (idempotent), `users` emptied before each
//! cell, and its rows counted to check that inserts really happened.

use sqlx::{Connection, PgConnection};

/// `targets/schema.sql`, compiled in so that a runner away from the checkout still has it.
pub const SCHEMA: &str = include_str!("../../../targets/schema.sql");

async fn connect(url: &str) -> Result<PgConnection, String> {
    PgConnection::connect(url)
        .await
        .map_err(|e| format!("cannot reach the targets' database: {e}"))
}

/// Applies the schema.
pub async fn apply_schema(url: &str) -> Result<(), String> {
    let mut conn = connect(url).await?;
    let applied = sqlx::raw_sql(sqlx::AssertSqlSafe(SCHEMA))
        .execute(&mut conn)
        .await
        .map(|_| ())
        .map_err(|e| format!("cannot apply targets/schema.sql: {e}"));
    let _ = conn.close().await;
    applied
}

/// Empties `users` (and restarts its ids), so that each cell starts from the same table.
pub async fn empty_users(url: &str) -> Result<(), String> {
    let mut conn = connect(url).await?;
    let done = sqlx::raw_sql("TRUNCATE users RESTART IDENTITY")
        .execute(&mut conn)
        .await
        .map(|_| ())
        .map_err(|e| format!("cannot empty users: {e}"));
    let _ = conn.close().await;
    done
}

/// `SELECT count(*) FROM users`.
pub async fn count_users(url: &str) -> Result<i64, String> {
    let mut conn = connect(url).await?;
    let count = sqlx::query_scalar::<_, i64>("SELECT count(*) FROM users")
        .fetch_one(&mut conn)
        .await
        .map_err(|e| format!("cannot count the rows of users: {e}"));
    let _ = conn.close().await;
    count
}
