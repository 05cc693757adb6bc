//! What went wrong in `probe`'s commands, in words that say what to fix.

use thiserror::Error;

use crate::client::ClientError;
use crate::{tls, token};

/// What went wrong, in words that say what to fix.
#[derive(Debug, Error)]
pub enum Error {
    #[error("{0}")]
    Usage(String),
    #[error("cannot {what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error(transparent)]
    Tls(#[from] tls::TlsError),
    /// A token file that cannot be read, or holds no token.
    #[error(transparent)]
    Token(#[from] token::TokenFileError),
}

/// The `Io` error of doing `what`, for `map_err`.
pub(crate) fn io_error(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
    let what = what.into();
    move |source| Error::Io { what, source }
}
