//! A throwaway PostgreSQL cluster: `initdb` in a temporary directory, `postgres` on a free
//! port, removed when dropped. The experiment runner uses one when an experiment names no
//! `DATABASE_URL`; the tests use one (or the server the test script started) for a database
//! of their own.
//!
//! Modules:
//!
//! - [`tools`]: finding PostgreSQL's programs, and running them as the `postgres` user when we
//!   are root (the server refuses to run as root).
//! - `cluster`: one cluster's life: start, stop, start again, SQL through `psql`, removal.
//! - `scratch`: a fresh database of one's own, on a shared server or a cluster of its own.

mod cluster;
mod scratch;
pub mod tools;

pub use cluster::{Cluster, Options};
pub use scratch::Scratch;

/// What went wrong, naming what to install or change.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("PostgreSQL's {0} was not found on this machine: install PostgreSQL (Debian: apt-get install postgresql), or set DATABASE_URL to a server of yours")]
    NotInstalled(&'static str),
    #[error("running as root, PostgreSQL must run as the `postgres` user, which does not exist: create it (useradd --system --no-create-home postgres) or install Debian's postgresql package")]
    NoPostgresUser,
    #[error("cannot {what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{what} failed: {output}")]
    Failed { what: String, output: String },
}
