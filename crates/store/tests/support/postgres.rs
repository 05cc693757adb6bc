//! A real PostgreSQL database of the test's own: on the server the test script started
//! (`SHOWDOWN_TEST_POSTGRES_URL`), or on a throwaway cluster of its own (see `pgcluster`).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub struct TestPostgres {
    /// A URL to a database of this test's own.
    pub url: String,
    _scratch: pgcluster::Scratch,
}

impl TestPostgres {
    pub async fn start() -> TestPostgres {
        let scratch = pgcluster::Scratch::new().unwrap_or_else(|e| panic!("{e}"));
        TestPostgres {
            url: scratch.url.clone(),
            _scratch: scratch,
        }
    }
}
