//! What a command or a session said, and times in words, for the guns' messages.

/// The last non-empty line of what a command or a session said.
pub(crate) fn last_line(said: &str) -> Option<String> {
    said.lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .map(str::to_string)
}

pub(crate) fn ms(ns: i64) -> String {
    format!("{:.2} ms", ns as f64 / 1e6)
}

pub(crate) fn signed_ms(ns: i64) -> String {
    format!("{:+.2} ms", ns as f64 / 1e6)
}
