//! Why a request was not served, as the status and `{"error": …}` message it is answered with.
//! Every handler returns `Result<Reply, Failure>`; the dispatch turns a `Failure` into its reply.

use std::time::Duration;

use http::StatusCode;

use crate::db::DbError;
use crate::reply::{self, Reply};

/// Request bodies over this are answered `413`.
pub const MAX_BODY: usize = 64 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum Failure {
    #[error("{name} is missing: ask for ?{name}=N with N in 0..={max}")]
    MissingParameter { name: &'static str, max: u64 },
    #[error("{name} must be an integer in 0..={max}")]
    BadParameter { name: &'static str, max: u64 },
    #[error("{0} is missing")]
    MissingField(&'static str),
    #[error("{0} is empty")]
    EmptyField(&'static str),
    #[error("{0} is over 255 characters")]
    LongField(&'static str),
    #[error("{0} must be a string")]
    NotAString(&'static str),
    #[error("body over {MAX_BODY} bytes")]
    BodyTooLarge,
    #[error("cannot read the body: {0}")]
    Body(String),
    #[error("the body must be a JSON object")]
    NotAnObject,
    #[error("the body is not JSON: {0}")]
    NotJson(serde_json::Error),
    /// The environment variable that would have configured it.
    #[error("no {what} configured (set {variable})")]
    NotConfigured {
        what: &'static str,
        variable: &'static str,
    },
    #[error(transparent)]
    Database(#[from] DbError),
    #[error("upstream: {0}")]
    Upstream(String),
    #[error("upstream: answered {0}")]
    UpstreamStatus(StatusCode),
    #[error("upstream: no answer within {0:?}")]
    UpstreamTimeout(Duration),
}

impl Failure {
    /// The status `targets/CONTRACT.md` gives each.
    pub fn status(&self) -> StatusCode {
        match self {
            Failure::BodyTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Failure::NotConfigured { .. } | Failure::Database(_) => StatusCode::SERVICE_UNAVAILABLE,
            Failure::Upstream(_) | Failure::UpstreamStatus(_) | Failure::UpstreamTimeout(_) => {
                StatusCode::BAD_GATEWAY
            }
            _ => StatusCode::BAD_REQUEST,
        }
    }

    pub fn reply(&self) -> Reply {
        reply::error(self.status(), self.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_failure_has_the_contracts_status() {
        let cases = [
            (
                Failure::MissingParameter { name: "ms", max: 1 },
                StatusCode::BAD_REQUEST,
            ),
            (Failure::BodyTooLarge, StatusCode::PAYLOAD_TOO_LARGE),
            (
                Failure::NotConfigured {
                    what: "database",
                    variable: "DATABASE_URL",
                },
                StatusCode::SERVICE_UNAVAILABLE,
            ),
            (
                Failure::Database(DbError::Timeout(Duration::from_secs(1))),
                StatusCode::SERVICE_UNAVAILABLE,
            ),
            (
                Failure::UpstreamStatus(StatusCode::INTERNAL_SERVER_ERROR),
                StatusCode::BAD_GATEWAY,
            ),
        ];
        for (failure, status) in cases {
            assert_eq!(failure.status(), status, "{failure}");
            assert_eq!(failure.reply().status(), status);
        }
    }
}
