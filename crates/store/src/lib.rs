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
//! - [`summary`]: the end-of-run figures (Vegeta-style text, or JSON) from a run's totals.
//! - [`diagnosis`]: what held a run back when it fell behind, and what to change.
//! - [`saturation`]: what limited the server, from a probe's figures over a window (its CPU,
//!   its quota, the run queue, steal, storage, the accept queue, or a wait).
//! - [`system`]: the target, its database and the watched groups together, and the verdict
//!   that names which ran out (the database's or a group's CPU, the database's locks and
//!   storage, the target's pool of connections, beside the target's own), as a finding: a
//!   short sentence and its evidence.
//! - [`capacity`]: capacity searches as kept: the SLO (latency and errors, and the server's
//!   own figures from its probe), a step judged on its point figures (`judge`, with
//!   batch-means intervals beside them, and a whole run against an SLO), C_p
//!   estimated from every step with its 95 % interval (`fit`), repeated searches pooled
//!   (`repeated`), targets compared by the ratio of their figures over interleaved rounds
//!   (`compare`), a figure's calibration check judged (`check`), the seeded generator of the
//!   up-and-down coin and the simulations (`random`).
//! - [`ab`]: two builds compared at a fixed rate over interleaved rounds (`[compare]`): each
//!   measure's ratio with its 95 % interval (paired over rounds, Student's t), its verdict
//!   against the change allowed and the A/A control, the gate in words, Markdown and JUnit
//!   (`text`), and each sitting's gate kept for the experiment's page (`kept`); or their
//!   capacities, from a comparison of searches (`Gate::of_capacities`).
//! - [`vocabulary`]: the words crates exchange: causes, check outcomes, phases, label names.
//! - [`hdrlog`]: HdrHistogram interval logs, and histograms in HdrHistogram's own format.
//! - [`import`]: a run saved locally while its store was down, brought back.

pub mod ab;
pub mod capacity;
mod config;
mod db;
pub mod diagnosis;
pub mod experiment;
pub mod export;
pub mod group;
pub mod hdrlog;
pub mod import;
pub mod model;
pub mod run;
pub mod saturation;
pub mod summary;
pub mod system;
pub mod vocabulary;
pub mod writer;

pub use db::{Store, StoreError, DEFAULT_URL};
pub use run::Finish;
pub use run::{RunFilter, RunMeta, RunStatus, StoredRun};
pub use writer::{RunWriter, WriteReport};
