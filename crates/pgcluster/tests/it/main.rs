//! pgcluster's integration tests, in one test binary (`pgcluster::it` to cargo-nextest): one
//! module a former test file, built and linked once rather than once a file (docs/testing.md).

mod cluster;
mod tmpdir;
