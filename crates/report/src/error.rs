//! What can go wrong while drawing the pages.

use std::io;
use std::path::PathBuf;

use store::StoreError;

/// A failure of `report`, worded for the person who ran it.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot write {path}: {source} (is --out a directory you can write to?)")]
    Write { path: PathBuf, source: io::Error },
    #[error("the comparison {0:?} picks no runs: list them with `loadgen runs list` and give ids, names, or labels they carry")]
    EmptyComparison(String),
    #[error("writing CSV failed: {0}")]
    Csv(#[from] csv::Error),
    #[error("cannot write to stdout: {0}")]
    Output(io::Error),
    #[error("{0}")]
    Plot(#[from] crate::plot::PlotError),
    #[error("cannot draw {0}")]
    Draw(String),
}
