//! An order's search or comparison run, from its values (the engine's steps, the store, the
//! guns); the commands above only turn flags into the order, call these and print the answer.
//!
//! - [`search`](mod@search): one target's search, repeated as the order asks, from this
//!   machine's generator or the guns.
//! - [`compare`](mod@compare): several targets' searches interleaved in rounds and compared.

pub mod compare;
pub mod search;

pub use compare::compare;
pub use search::search;
