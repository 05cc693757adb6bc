//! store's integration tests, in one test binary (`store::it` to cargo-nextest): one
//! module a former test file, built and linked once rather than once a file (docs/testing.md).

#[path = "../support/postgres.rs"]
mod postgres;

mod store;
mod unusable;
