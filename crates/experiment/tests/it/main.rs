//! experiment's integration tests, in one test binary (`experiment::it` to cargo-nextest): one
//! module a former test file, built and linked once rather than once a file (docs/testing.md).

mod contract;
mod watch;
