//! The targets' database: `targets/schema.sql` applied (idempotent), `users` emptied before each
//! cell, and its rows counted to check that inserts really happened.
//!
//! Emptying a table is destructive, so the runner empties only a `users` that Showdown made:
//! the schema marks it with a comment ([`MARK`]), and a `users` without the mark (someone's
//! own table in a database named by mistake) is refused in one line, before the schema is
//! applied and before anything is emptied.

use sqlx::{Connection, PgConnection};

/// `targets/schema.sql`, compiled in so that a runner away from the checkout still has it.
pub const SCHEMA: &str = include_str!("../../../targets/schema.sql");

async fn connect(url: &str) -> Result<PgConnection, String> {
    PgConnection::connect(url)
        .await
        .map_err(|e| redact::text(&format!("cannot reach the targets' database: {e}")))
}

/// How `targets/schema.sql` marks the table it made (the start of its comment).
pub const MARK: &str = "showdown:";

/// Whether `users` exists, and whether it carries Showdown's mark.
async fn users_table(conn: &mut PgConnection) -> Result<Option<bool>, String> {
    let comment: Option<(Option<String>,)> = sqlx::query_as(
        "SELECT obj_description(c.oid, 'pg_class') FROM pg_class c \
         WHERE c.relname = 'users' AND c.relkind = 'r' AND pg_table_is_visible(c.oid)",
    )
    .fetch_optional(&mut *conn)
    .await
    .map_err(|e| format!("cannot look for the users table: {e}"))?;
    Ok(comment.map(|(c,)| c.is_some_and(|c| c.starts_with(MARK))))
}

fn not_ours(url: &str) -> String {
    format!(
        "the database {} has a table users that Showdown did not make: the runner empties users before every cell, so it will not touch this one; name an empty database of Showdown's own in [database] url, or drop [database] for a throwaway PostgreSQL",
        redact::text(url)
    )
}

/// Applies the schema, unless the database holds a `users` table Showdown did not make.
pub async fn apply_schema(url: &str) -> Result<(), String> {
    let mut conn = connect(url).await?;
    if users_table(&mut conn).await? == Some(false) {
        let _ = conn.close().await;
        return Err(not_ours(url));
    }
    let applied = sqlx::raw_sql(sqlx::AssertSqlSafe(SCHEMA))
        .execute(&mut conn)
        .await
        .map(|_| ())
        .map_err(|e| format!("cannot apply targets/schema.sql: {e}"));
    let _ = conn.close().await;
    applied
}

/// Empties `users` (and restarts its ids), so that each cell starts from the same table; only
/// a `users` that carries Showdown's mark.
pub async fn empty_users(url: &str) -> Result<(), String> {
    let mut conn = connect(url).await?;
    if users_table(&mut conn).await? != Some(true) {
        let _ = conn.close().await;
        return Err(not_ours(url));
    }
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
