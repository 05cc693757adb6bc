//! probe's integration tests, in one test binary (`probe::it` to cargo-nextest): one
//! module a former test file, built and linked once rather than once a file (docs/testing.md).

mod common;

mod accuracy;
mod cli;
mod profile;
mod stream;
mod tls;
