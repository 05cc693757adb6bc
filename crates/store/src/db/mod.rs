//! The database: one code path for SQLite and PostgreSQL through sqlx's `Any` driver.
//!
//! - `open`: opening a store (created when it is a new SQLite file, the schema applied), and
//!   saying in one line why one cannot be used (not SQLite, damaged, someone else's, the wrong
//!   password, nobody listening, a full disk).
//! - `read`: runs listed, resolved and read back (streaming their intervals), page by page.
//! - `write`: the statements that write a run; every insert skips a row the store has already,
//!   so a batch written twice adds only what is new.

mod open;
mod read;
mod write;

pub use open::{Store, StoreError, DEFAULT_URL};
pub(crate) use write::{insert_gap, insert_interval, insert_record, upsert_probe, write_finish};

pub(crate) fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

pub(crate) fn to_u64(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

pub(crate) fn json<T: serde::Serialize>(value: &T) -> String {
    // Our own types always serialize.
    serde_json::to_string(value).unwrap_or_default()
}

pub(crate) fn parse_json<T: serde::de::DeserializeOwned>(
    id: &str,
    what: &str,
    text: &str,
) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt {
        id: id.to_string(),
        what: what.to_string(),
        message: e.to_string(),
    })
}
