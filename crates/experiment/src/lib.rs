//! `experiment`: Showdown's experiments, from the contestants to the pages that answer a
//! question.
//!
//! Modules:
//!
//! - [`file`](mod@file): the experiment file (TOML) read and checked.
//! - [`checkout`]: a target's source at a git `ref`, cloned apart from the user's repository.
//! - [`plan`]: the matrix expanded into cells, in the order they run (with `[search] rounds`,
//!   the searches of a setting and repetition run together, as one comparison; with
//!   `[compare]`, a setting's every target and repetition, as the rounds of a gate).
//! - [`gun`]: each attack as the `order::Order` its generator is told (this machine's `loadgen
//!   order`, or the guns' shards of it: the `fleet` crate).
//! - [`guns`]: `[guns]`, the gun hosts as the file names them, turned into the fleet's
//!   `order::Guns`.
//! - [`environment`]: what every process the runner starts is given, built from nothing
//!   (`custody::environment`, re-exported).
//! - `limits`: holding a local target to a host size with a cgroup.
//! - [`declared`]: the checks a file declares, for servers Showdown did not write.
//! - [`ports`]: who listens on a target's port (its own processes, or someone else).
//! - [`runner`]: the scheduler: the cells' needs made ready, the cells run one by one through
//!   a `Firing` (this machine's generator, the guns, or a test's fake), kept, resumed; what it
//!   does said as typed events.
//! - [`targets`]: a contestant started (one of `targets/` by name, or a server by its command
//!   line), read ready, stopped with SIGTERM.
//! - [`tools`]: the programs the file needs on this host (toolchains, `initdb`, `ssh`), found
//!   before anything starts.
//! - [`verify`]: a running target held to `targets/CONTRACT.md` before it is measured.
//! - [`database`]: the targets' schema, emptied and counted.
//! - [`http`]: one-off HTTP exchanges for those checks.
//! - [`upstream`]: the local page that `/proxy` fetches.
//! - [`watch`]: the target's database watched beside it (its process, and its backends' wait
//!   events over SQL).

pub mod checkout;
pub mod database;
pub mod declared;
pub mod file;
pub mod gun;
pub mod guns;
pub mod http;
mod limits;
pub mod plan;
pub mod ports;
pub mod runner;
pub mod targets;
pub mod tools;
pub mod upstream;
pub mod verify;
pub mod watch;

pub use custody::environment;

/// Several lines made one: what a TOML parser prints spans lines, an error here is one line.
pub fn flatten(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
