//! `loadgen capacity`: the highest constant rate a server sustains within an SLO.
//!
//! From a start (or half of what a short closed loop served), ×2 until a step fails, then
//! bisection until the bracket is within the resolution. Each step warms up, measures a window
//! and is judged on it (`store::capacity::judge`: confidence intervals on each SLO term, the
//! queue's growth, the generator's own limits); an uncertain step runs again, longer; after a
//! step that did not pass, the search waits for the server to drain. A step the generator
//! could not drive is a ceiling the search bisects below, so that "at least N" is said only at
//! the generator's measured limit. Every step is kept as an ordinary run, and the search
//! itself after each step, so that Ctrl-C or a failure keeps the bracket so far.
//!
//! - [`search`]: the loop, as a value: a plan and a way to run steps in, the search out.
//! - [`repeat`]: searches repeated until their median's interval is narrow enough, or a
//!   budget is spent.
//! - [`bracket`]: where the search goes next, from the verdicts.
//! - [`step`]: one step run and judged by the generator; the recovery between steps; the
//!   first rate's estimate.
//! - [`guns`]: the same from gun hosts over SSH, each step a run group judged merged.
//! - [`words`]: the search in words.

pub mod bracket;
pub mod guns;
pub mod repeat;
pub mod search;
#[cfg(test)]
mod simulated;
pub(crate) mod step;
pub mod words;

pub use repeat::{repeat, Repeat};
pub use search::{search, Event, Plan, Stepped, Steps};
pub use words::text;

/// Now, in ns since the Unix epoch (a search's timestamps).
pub use store::run::now_ns;
