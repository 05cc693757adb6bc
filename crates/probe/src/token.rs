//! A probe's token file, read the one way every side reads it: a regular file named directly (a
//! symbolic link is refused: `probe.token` linked to a credentials file would send those), of
//! one line of at most [`MAX`] printable ASCII characters. Whatever else a file holds is not
//! a token, and its contents are never quoted in the error.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The longest token read, in bytes (a 256-bit key is 64 hex characters).
pub const MAX: usize = 512;

/// Why a token file was refused; each names the file and the fix, never its contents.
#[derive(Debug, thiserror::Error)]
pub enum TokenFileError {
    #[error("cannot read the token file {path}: {error}{hint}")]
    Open {
        path: String,
        error: std::io::Error,
        hint: &'static str,
    },
    #[error("the token file {0} is not a regular file: name the token file itself")]
    NotAFile(String),
    #[error("the token file {0} is empty: put a long random string in it")]
    Empty(String),
    #[error("the token file {0} holds more than one line of at most 512 printable characters, so it is not a token: name the file that holds only the token")]
    NotAToken(String),
}

/// The token in `path`, trimmed of the whitespace around it.
pub fn read(path: &Path) -> Result<String, TokenFileError> {
    let shown = || redact::printable(&path.display().to_string());
    let file = std::fs::OpenOptions::new()
        .read(true)
        // Not through a link; a FIFO or a device opened without waiting, then refused.
        .custom_flags((rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK).bits() as i32)
        .open(path)
        .map_err(|error| TokenFileError::Open {
            path: shown(),
            hint: if error.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) {
                " (it is a symbolic link, which is never followed: name the file it points to)"
            } else {
                ""
            },
            error,
        })?;
    let metadata = file.metadata().map_err(|error| TokenFileError::Open {
        path: shown(),
        error,
        hint: "",
    })?;
    if !metadata.is_file() {
        return Err(TokenFileError::NotAFile(shown()));
    }
    let mut bytes = Vec::with_capacity(MAX + 2);
    file.take(MAX as u64 + 2)
        .read_to_end(&mut bytes)
        .map_err(|error| TokenFileError::Open {
            path: shown(),
            error,
            hint: "",
        })?;
    let text = bytes.trim_ascii();
    if text.is_empty() {
        return Err(TokenFileError::Empty(shown()));
    }
    if text.len() > MAX || !text.iter().all(|b| (0x20..0x7f).contains(b)) {
        return Err(TokenFileError::NotAToken(shown()));
    }
    // Printable ASCII throughout, so it is UTF-8.
    Ok(String::from_utf8_lossy(text).into_owned())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn only_a_regular_file_of_one_printable_line_is_a_token() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("probe.token");
        std::fs::write(&good, "  s3cr3t-token-0123456789\n").unwrap();
        assert_eq!(read(&good).unwrap(), "s3cr3t-token-0123456789");

        let credentials = dir.path().join("credentials");
        std::fs::write(
            &credentials,
            "[default]\naws_secret_access_key = AWSSECRET\n",
        )
        .unwrap();
        let linked = dir.path().join("linked.token");
        std::os::unix::fs::symlink(&good, &linked).unwrap();
        let error = read(&linked).unwrap_err().to_string();
        assert!(error.contains("symbolic link"), "{error}");

        let error = read(&credentials).unwrap_err().to_string();
        assert!(error.contains("not a token"), "{error}");
        assert!(!error.contains("AWSSECRET"), "{error}");

        let long = dir.path().join("long.token");
        std::fs::write(&long, "x".repeat(MAX + 1)).unwrap();
        assert!(matches!(read(&long), Err(TokenFileError::NotAToken(_))));
        std::fs::write(&long, "x".repeat(MAX)).unwrap();
        assert_eq!(read(&long).unwrap().len(), MAX);

        let empty = dir.path().join("empty.token");
        std::fs::write(&empty, "\n\n").unwrap();
        assert!(matches!(read(&empty), Err(TokenFileError::Empty(_))));
        assert!(matches!(read(dir.path()), Err(TokenFileError::NotAFile(_))));
    }
}
