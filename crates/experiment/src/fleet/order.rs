//! What the runner and `loadgen gun` say to each other over SSH: an [`Order`] on the gun's
//! standard input (one JSON line), and a [`Check`] on its standard output.
//!
//! Everything secret travels in the order, never on a command line: the store's URL, the
//! headers, the requests (a query or a body may hold a key), the probe's token. The gun
//! writes the files into a private directory of its own and removes it when the attack ends.
//! Standard input stays open for the whole attack: when it closes (the runner stopped it, or
//! the SSH connection was lost) the gun stops its attack as Ctrl-C would.

use serde::{Deserialize, Serialize};

/// Where [`Order::args`] name the gun's private directory (`{files}/targets.toml`).
pub const FILES: &str = "{files}";

/// One attack for one gun.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Order {
    /// `loadgen` arguments (`attack …` or `capacity …`), with [`FILES`] for the files below.
    pub args: Vec<String>,
    /// The attack's environment beside the gun's base one: `SHOWDOWN_DB`, `SHOWDOWN_HEADERS`.
    pub env: Vec<(String, String)>,
    /// Files for the attack (name, contents), written with mode 0600.
    pub files: Vec<(String, String)>,
    /// `taskset -c` on the gun.
    pub cpus: Option<String>,
    /// A file on the gun that sets `SHOWDOWN_DB=…` (the lab's `/etc/showdown/store.env`),
    /// instead of the runner's store URL: where the gun reaches the store by another address.
    pub store_env_file: Option<String>,
}

/// What `loadgen gun --check` says of the gun.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Check {
    pub version: String,
    /// SHA-256 of the `loadgen` binary: the same build, not only the same version.
    pub build: String,
    /// `uname -m`'s answer, for a copy that can run there.
    pub arch: String,
    /// The CPUs the gun may run on.
    pub cpus: String,
    /// Its clock when it answered (Unix nanoseconds).
    pub now_ns: i64,
    /// Whether the target answered a TCP connection from the gun, and if not, why.
    pub reach: Option<Result<(), String>>,
}
