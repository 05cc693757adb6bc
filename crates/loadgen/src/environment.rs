//! The environment variables the runner reads for its guns, read here so that the `fleet`
//! crate reads none: they reach it as typed settings ([`fleet::Settings`]) and arguments. (A
//! gun pod's own, `JOB_COMPLETION_INDEX`, `POD_NAME` and `NODE_NAME`, are read where `loadgen
//! gun --dial` starts, `commands::gun`, and handed to `fleet::kubernetes::agent`.)

use std::path::PathBuf;

use crate::error::Error;

/// This machine's `loadgen`, for the runner and the guns ([`fleet::find_loadgen`]): the one
/// `SHOWDOWN_LOADGEN` names, else found beside this executable.
pub(crate) fn find_loadgen() -> Result<PathBuf, Error> {
    let asked = std::env::var_os("SHOWDOWN_LOADGEN").map(PathBuf::from);
    fleet::find_loadgen(asked.as_deref()).map_err(Error::FindLoadgen)
}

/// What the environment says of the guns' files ([`fleet::Settings`]): the twin's state
/// (`TWIN_STATE_DIR`) and the file a Job's Secret is written to when the runner does not apply
/// it (`SHOWDOWN_GUNS_SECRET_FILE`).
pub(crate) fn guns_settings() -> fleet::Settings {
    let path = |var: &str| std::env::var_os(var).map(PathBuf::from);
    fleet::Settings {
        twin_state: path("TWIN_STATE_DIR"),
        secret_file: path("SHOWDOWN_GUNS_SECRET_FILE"),
    }
}
