//! report's integration tests, in one test binary (`report::it` to cargo-nextest): one
//! module a former test file, built and linked once rather than once a file (docs/testing.md).

#[path = "../support/experiment_runs.rs"]
mod experiment_runs;
#[path = "../support/fits.rs"]
mod fits;
#[path = "../../../store/tests/support/postgres.rs"]
mod postgres;
#[path = "../support/runs.rs"]
mod runs;
#[path = "../support/history.rs"]
mod synthetic;

mod browser;
mod experiment;
mod flames;
mod history;
mod numbers;
mod pages;
mod truth;
