//! loadgen's integration tests, in one test binary (`loadgen::it` to cargo-nextest): one
//! module a former test file, built and linked once rather than once a file (docs/testing.md).

mod common;
#[path = "../../../report/tests/support/fits.rs"]
mod fits;
#[path = "../../../store/tests/support/postgres.rs"]
mod postgres;
#[path = "../../../report/tests/support/history.rs"]
mod synthetic;

mod architecture;
mod attack;
mod capacity;
mod cli;
mod diagnosis;
mod disk_full;
mod errors;
mod eventloop;
mod experiment;
mod faults;
mod hdr_log;
mod history;
mod hostile_input;
mod keep;
mod limits;
mod report;
mod secrets;
mod seed_experiments;
mod selftest;
mod slo;
mod store_down;
mod trust;
