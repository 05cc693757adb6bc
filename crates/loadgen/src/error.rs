//! The errors `loadgen` reports to its user, each naming what to fix.

use std::io;
use std::path::PathBuf;

use thiserror::Error;

use crate::engine::attack::AttackError;
use crate::engine::request::RequestError;
use crate::engine::schedule::ScheduleError;

#[derive(Debug, Error)]
pub enum Error {
    /// Flags that do not go together, or are missing.
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Request(#[from] RequestError),
    #[error(transparent)]
    Schedule(#[from] ScheduleError),
    #[error(transparent)]
    Attack(#[from] AttackError),
    #[error("cannot create the HDR log {path}: {source}; check --hdr-log")]
    HdrLog {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot start the built-in target: {0}")]
    Target(io::Error),
    #[error("cannot start the runtime: {0}")]
    Runtime(io::Error),
    #[error("cannot print the summary: {0}")]
    Output(io::Error),
    #[error(transparent)]
    Store(#[from] store::StoreError),
    /// A comparison whose builds were not all measured (one did not build, start or pass its
    /// checks): exit 1, never "inconclusive".
    #[error("{0}")]
    Unmeasured(String),
    #[error("order: {0}")]
    Order(#[from] order::OrderError),
    #[error(transparent)]
    Guns(#[from] experiment::fleet::FleetError),
    #[error("the probe at {address}: {message}")]
    Probe { address: String, message: String },
    #[error("the run is kept, but drawing its report failed: {0}")]
    Report(#[from] report::ReportError),
    #[error("cannot write {path}: {source}; check --out")]
    Export {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}
