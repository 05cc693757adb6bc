//! `store`: Showdown's run model and its storage.
//!
//! A run is the load (per-interval counters and HdrHistograms), the probe samples and events
//! of the hosts it watched, on one timeline, and everything needed to reproduce it. loadgen
//! writes runs; the report reads them; neither depends on the other.
//!
//! Modules:
//!
//! - [`model`]: what a run records per interval and how intervals add up, across threads,
//!   intervals and gun hosts.
//! - [`run`]: a run's identity and setup, and a run as read back.
//! - `db`: the database (SQLite by default, or Postgres; one schema and one code path), its
//!   migrations, and reading runs.
//! - [`experiment`]: what an experiment's page needs beyond its runs.
//! - [`writer`]: writing a run as it goes, in batches, off the hot path.
//! - [`group`]: several gun hosts' shards of one run, merged exactly.
//! - [`export`]: a run as an HdrHistogram interval log, CSV or JSON.
//! - [`summary`]: the end-of-run figures (JSON, and their text in `analysis::summary`) from a
//!   run's totals, with the warnings kept beside them (worded by `analysis::warnings`); its
//!   tails and its validity (the verdict and the machine's floor, `summary::validity`) as
//!   `analysis` judged them.
//! - [`diagnosis`]: what held a run back when it fell behind, decided from its measurements
//!   (said in words, with what to change, by `analysis::warnings`).
//! - [`selftest`]: what `loadgen selftest` measured of a machine (its clock, a timed wake-up,
//!   coordinated omission against its truth, pacing), one row a self-test, read back by host.
//! - [`kept`]: capacity searches and comparisons' gates as kept: the columns of their rows and
//!   a JSON body whose type (and whose judging) is the `analysis` crate's, above this one.
//! - [`vocabulary`]: the words crates exchange: causes, check outcomes, phases, label names.
//! - [`hdrlog`]: HdrHistogram interval logs, and histograms in HdrHistogram's own format.
//! - [`import`]: a run saved locally while its store was down, brought back.

mod config;
mod db;
pub mod diagnosis;
pub mod experiment;
pub mod export;
pub mod group;
pub mod hdrlog;
pub mod import;
pub mod kept;
pub mod model;
pub mod run;
pub mod selftest;
pub mod summary;
pub mod vocabulary;
pub mod writer;

pub use db::{Store, StoreError, DEFAULT_URL};
pub use run::Finish;
pub use run::{RunFilter, RunMeta, RunStatus, StoredRun};
pub use writer::{RunWriter, WriteReport};
