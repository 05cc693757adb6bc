//! `analysis`: Showdown's judgements of stored runs, above the store that keeps them.
//!
//! The store (`store`) keeps runs and says what they recorded; this crate judges them and says
//! so in words: whether a server kept within an SLO and at what rate it stops (capacity),
//! whether a change made it slower or hungrier (the gate), and what limited it. Nothing here
//! writes a row of its own: a search or a gate is kept through `store::kept` (the row and its
//! JSON body), after it is redacted here.
//!
//! Modules:
//!
//! - [`summary`]: the end-of-run summary in words, for a terminal (`SummaryText::to_text`).
//! - [`warnings`]: a run's warnings in words, most important first (`fill`, `of`): what held
//!   it back as the store decided it (`store::diagnosis`), said with the figures that show it
//!   and the flags to change (`behind`, `explain`), and what an experiment makes of it
//!   (`generator_fell_behind`, `host_held_the_generator_back`).
//! - [`group`]: a run group read as one run (`load_group`), its shards merged by the store and
//!   its summary's warnings worded here.
//! - [`tail`]: a run's p50, p99 and p99.9 after its warm-up, each with a 95 % interval over
//!   batch means of its recorded intervals kept in at most 20 slots (`Slots`), or the check
//!   that failed instead (too short, too few, correlated longer than the run, a trend).
//! - [`validity`]: whether a run's figures can be trusted on the machine that made them, one
//!   verdict (valid, degraded with its reasons, not measurable below what a timed wake-up is
//!   late here) and what it rests on (rates, lateness, the generator's CPUs, steal, the clock).
//! - [`saturation`]: what limited the server, from a probe's figures over a window (its CPU,
//!   its quota, the run queue, steal, storage, the accept queue, or a wait).
//! - [`system`]: the target, its database and the watched groups together, and the verdict
//!   that names which ran out (the database's or a group's CPU, the database's locks and
//!   storage, the target's pool of connections, beside the target's own), as a finding: a
//!   short sentence and its evidence.
//! - [`capacity`]: capacity searches: the SLO (latency and errors, and the server's own
//!   figures from its probe), a step judged on its point figures (`judge`, with batch-means
//!   intervals beside them, and a whole run against an SLO), C_p estimated from every step
//!   with its 95 % interval (`fit`), repeated searches pooled (`repeated`), targets compared by
//!   the ratio of their figures over interleaved rounds (`compare`), a figure's calibration
//!   check judged (`check`), the seeded generator of the up-and-down coin and the simulations
//!   (`random`), when a server has warmed (`warm`: its latency's trend over a sliding
//!   window); and the search as kept (`put_search`, `searches`).
//! - [`ab`]: two builds compared at a fixed rate over interleaved rounds (`[compare]`): each
//!   measure's ratio with its 95 % interval (paired over rounds, Student's t), its verdict
//!   against the change allowed and the A/A control, the gate in words, Markdown and JUnit
//!   (`text`), and each sitting's gate kept for the experiment's page (`kept`); or their
//!   capacities, from a comparison of searches (`Gate::of_capacities`, the spread between
//!   processes of one build read from the sittings' A/A controls, `process`); where the runs were
//!   profiled, each function's CPU per request compared over the rounds, the changed ones
//!   named at a 5 % false discovery rate (`functions`), their variances moderated across them
//!   (`functions::moderated`), and each call path's the same way, what
//!   the differential flame graph is drawn from (`functions::paths`); and at a profiled
//!   search's knee, each function's and path's CPU per request in its failing steps against
//!   its passing ones, the same way, each step scaled by its size factor (`functions::knee`),
//!   read from the search's steps' kept runs by `capacity::knee`.
//! - [`history`]: an experiment across its sittings: each series' figure per sitting (capacity,
//!   CPU per request, memory, latency), the change points found across them by E-divisive
//!   means, each split held against draws of the null (`divisive`, carrying the lag-1
//!   correlation read within the segments, `serial`), each change's size from the random-effects
//!   levels either side (`pool`), read from the store (`read`) and said in words and Markdown
//!   (`text`).
//!
//! What stays in the store, and why: the run model and everything a row holds. The end-of-run
//! [`store::summary::Summary`] (its figures, and its warnings as kept) is a column of every run
//! and is computed again when a run group's shards are merged as they are read
//! (`store::group`), so its figures, and the decision of what held a run back
//! (`store::diagnosis::cause`), live with the run model; its warnings in words, with the flags
//! to change (`warnings`, filled for a merged group by `group`), and its text for a terminal
//! (`summary`) are here.

pub mod ab;
pub mod capacity;
pub mod group;
pub mod history;
pub mod saturation;
pub mod summary;
pub mod system;
pub mod tail;
pub mod validity;
pub mod warnings;
