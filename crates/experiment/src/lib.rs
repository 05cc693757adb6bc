//! `experiment`: Showdown's experiments, from the contestants to the pages that answer a
//! question.
//!
//! Modules:
//!
//! - [`targets`]: the contestants of `targets/`, started by name through `targets/run`, read
//!   ready, stopped with SIGTERM.
//! - [`verify`]: a running target held to `targets/CONTRACT.md` before it is measured.
//! - [`database`]: the targets' schema, emptied and counted.
//! - [`http`]: one-off HTTP exchanges for those checks.
//! - [`upstream`]: the local page that `/proxy` fetches.
//! - [`limits`]: holding a local target to a host size with a cgroup.

pub mod database;
pub mod http;
pub mod limits;
pub mod targets;
pub mod upstream;
pub mod verify;
