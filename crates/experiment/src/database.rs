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

/// What went wrong with the targets' database; every message names the step and the fix.
#[derive(Debug, thiserror::Error)]
pub enum DatabaseError {
    /// Redacted: the driver's message may quote the URL.
    #[error("cannot reach the targets' database: {0}")]
    Unreachable(String),
    #[error("cannot {step}: {error}")]
    Query {
        step: &'static str,
        error: sqlx::Error,
    },
    #[error("the database {url} has a table users that Showdown did not make: the runner empties users before every cell, so it will not touch this one; name an empty database of Showdown's own in [database] url, or drop [database] for a throwaway PostgreSQL")]
    NotOurs { url: String },
}

impl DatabaseError {
    fn query(step: &'static str) -> impl FnOnce(sqlx::Error) -> DatabaseError {
        move |error| DatabaseError::Query { step, error }
    }
}

async fn connect(url: &str) -> Result<PgConnection, DatabaseError> {
    PgConnection::connect_with(&options(url)?)
        .await
        .map_err(|e| DatabaseError::Unreachable(redact::text(&e.to_string())))
}

/// How to reach the targets' database: the URL's own words and nothing of the user's. Its
/// password is the URL's, or none: libpq's `PGPASSWORD` and `~/.pgpass` are never read for it
/// (a file naming `postgres://me@their-host/db` would otherwise get the user's password for
/// the asking, in clear if the server asks so).
pub fn options(url: &str) -> Result<sqlx::postgres::PgConnectOptions, DatabaseError> {
    let unreadable = || {
        DatabaseError::Unreachable(format!(
            "{} is not a PostgreSQL URL: write postgres://USER:PASSWORD@HOST:PORT/DATABASE",
            redact::printable(&redact::text(url))
        ))
    };
    let mut parsed = url::Url::parse(url).map_err(|_| unreadable())?;
    let password = parsed.password().map(str::to_string);
    let keyword_password = parsed
        .query_pairs()
        .find(|(k, _)| k == "password")
        .map(|(_, v)| v.into_owned());
    // A stand-in password while sqlx reads the URL, so that it never looks in ~/.pgpass.
    parsed.set_password(Some("x")).map_err(|()| unreadable())?;
    let options: sqlx::postgres::PgConnectOptions =
        parsed.as_str().parse().map_err(|_| unreadable())?;
    let password = keyword_password.or(password.map(|p| percent_decode(&p)));
    Ok(options.password(password.as_deref().unwrap_or("")))
}

/// A URL's percent-encoded password, decoded (`p%40ss` is `p@ss`).
fn percent_decode(text: &str) -> String {
    url::form_urlencoded::parse(format!("p={}", text.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

/// How `targets/schema.sql` marks the table it made (the start of its comment).
pub const MARK: &str = "showdown:";

/// Whether `users` exists, and whether it carries Showdown's mark.
async fn users_table(conn: &mut PgConnection) -> Result<Option<bool>, DatabaseError> {
    let comment: Option<(Option<String>,)> = sqlx::query_as(
        "SELECT obj_description(c.oid, 'pg_class') FROM pg_class c \
         WHERE c.relname = 'users' AND c.relkind = 'r' AND pg_table_is_visible(c.oid)",
    )
    .fetch_optional(&mut *conn)
    .await
    .map_err(DatabaseError::query("look for the users table"))?;
    Ok(comment.map(|(c,)| c.is_some_and(|c| c.starts_with(MARK))))
}

fn not_ours(url: &str) -> DatabaseError {
    DatabaseError::NotOurs {
        url: redact::text(url),
    }
}

/// Applies the schema, unless the database holds a `users` table Showdown did not make.
pub async fn apply_schema(url: &str) -> Result<(), DatabaseError> {
    let mut conn = connect(url).await?;
    if users_table(&mut conn).await? == Some(false) {
        let _ = conn.close().await;
        return Err(not_ours(url));
    }
    let applied = sqlx::raw_sql(sqlx::AssertSqlSafe(SCHEMA))
        .execute(&mut conn)
        .await
        .map(|_| ())
        .map_err(DatabaseError::query("apply targets/schema.sql"));
    let _ = conn.close().await;
    applied
}

/// Empties `users` (and restarts its ids), so that each cell starts from the same table; only
/// a `users` that carries Showdown's mark.
pub async fn empty_users(url: &str) -> Result<(), DatabaseError> {
    let mut conn = connect(url).await?;
    if users_table(&mut conn).await? != Some(true) {
        let _ = conn.close().await;
        return Err(not_ours(url));
    }
    let done = sqlx::raw_sql("TRUNCATE users RESTART IDENTITY")
        .execute(&mut conn)
        .await
        .map(|_| ())
        .map_err(DatabaseError::query("empty users"));
    let _ = conn.close().await;
    done
}

/// `SELECT count(*) FROM users`.
pub async fn count_users(url: &str) -> Result<i64, DatabaseError> {
    let mut conn = connect(url).await?;
    let count = sqlx::query_scalar::<_, i64>("SELECT count(*) FROM users")
        .fetch_one(&mut conn)
        .await
        .map_err(DatabaseError::query("count the rows of users"));
    let _ = conn.close().await;
    count
}

/// Runs SQL of the experiment file's (its `schema`, its `reset`) as it is written.
pub async fn execute(url: &str, sql: &str, step: &'static str) -> Result<(), DatabaseError> {
    let mut conn = connect(url).await?;
    let done = sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_string()))
        .execute(&mut conn)
        .await
        .map(|_| ())
        .map_err(DatabaseError::query(step));
    let _ = conn.close().await;
    done
}

/// The number a counting query of the file's returns (`SELECT count(*) FROM items`).
pub async fn count(url: &str, sql: &str) -> Result<i64, DatabaseError> {
    let mut conn = connect(url).await?;
    let count = sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(sql.to_string()))
        .fetch_one(&mut conn)
        .await
        .map_err(DatabaseError::query("run rows_added's query"));
    let _ = conn.close().await;
    count
}
