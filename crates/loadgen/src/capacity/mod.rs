//! `loadgen capacity`: C_p(T, w), the highest constant rate at which a window of T seconds,
//! after w seconds at that rate, meets an SLO with probability p.
//!
//! From a start (or half of what a short closed loop served), ×2 until a step fails, then
//! bisection until the bracket is within the resolution; then steps up and down beside the knee
//! on a fine grid. Every step has the same warm-up and window and is one pass or one fail on its
//! point figures (`analysis::capacity::judge`); C_p is estimated from all of them with a 95 %
//! interval (`analysis::capacity::fit`), and the search stops when that interval is narrow enough.
//! After a step that did not pass, the search waits for the server to drain. A step the
//! generator could not drive is a ceiling the search bisects below, so that "at least N" is said
//! only at the generator's measured limit. Every step is kept as an ordinary run, and the search
//! itself after each step, so that Ctrl-C or a failure keeps the steps so far.
//!
//! - [`search`]: the loop, as a value: a plan and a way to run steps in, the search out.
//! - [`compare`]: several targets' searches interleaved in rounds, compared by the ratios of
//!   their figures.
//! - [`repeat`]: searches repeated, their steps pooled into one estimate, until its interval
//!   is narrow enough or a budget is spent.
//! - [`check`]: a search's calibration check: blocks of one step at five rates of its fit
//!   (the two ends of C_0.5's interval, C_0.75, C_0.5 and C_0.25), then the search again.
//! - [`bracket`]: where the coarse search goes next, from the verdicts.
//! - [`updown`]: where the steps beside the knee go: the biased-coin up-and-down rule.
//! - [`step`]: one step run and judged by the generator; the recovery between steps; the
//!   first rate's estimate.
//! - [`guns`]: the same from gun hosts (`fleet::Firing`), each step a run group judged merged.
//! - [`words`]: the search in words.
//! - `simulated`, `world`, `worlds` (tests only): the simulated servers and worlds the search's
//!   and the comparison's intervals are checked on, and the worlds grid.

pub mod bracket;
pub mod check;
pub mod compare;
pub mod guns;
pub mod repeat;
pub mod search;
#[cfg(test)]
mod simulated;
pub(crate) mod step;
pub mod updown;
pub mod words;
#[cfg(test)]
mod world;
#[cfg(test)]
mod worlds;

pub use compare::{compare, Interleave};
pub use repeat::{repeat, Repeat};
pub use search::{search, Event, Plan, Searcher, Stepped, Steps};
pub use words::text;

/// Now, in ns since the Unix epoch (a search's timestamps).
pub use store::run::now_ns;
