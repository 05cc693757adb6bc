//! What the guns are made ready from ([`Preparing`]), and what the caller's environment says of
//! their files ([`Settings`]): below the preparation and every transport, which open from it.

use std::path::{Path, PathBuf};

/// What to make ready.
#[derive(Debug, Clone, Copy)]
pub struct Preparing<'a> {
    /// The guns, as an order names them.
    pub guns: &'a order::Guns,
    /// Where a lab's relative paths are read from: the experiment file's directory, or the
    /// current one for flags.
    pub dir: &'a Path,
    /// This machine's `loadgen`, installed on a gun whose own is not this build.
    pub local: &'a Path,
    /// A URL every gun must reach (the first target).
    pub reach: Option<&'a str>,
    /// What the caller's environment says of the guns' files.
    pub settings: &'a Settings,
}

/// What the caller's environment says of the guns' files, read by the binary and passed in
/// as values: the library reads no variable of its own.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    /// Where `scripts/twin.sh` keeps its state, for the guns `from = "twin"`
    /// (`TWIN_STATE_DIR`); `None`: its own default, `/run/showdown-twin`.
    pub twin_state: Option<PathBuf>,
    /// With Kubernetes guns the runner does not apply, the file the pods' Secret is written
    /// to, mode 0600 (`SHOWDOWN_GUNS_SECRET_FILE`); `None`: it is not written.
    pub secret_file: Option<PathBuf>,
}
