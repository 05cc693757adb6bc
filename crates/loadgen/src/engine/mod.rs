//! The load, from plain values: no flags, no store, no probe.
//!
//! In the order a request meets it:
//!
//! - [`schedule`]: when request *i* is due (pure maths); [`arrivals`]: each worker's
//!   requests on the schedule's grid or as a Poisson process, and how Poisson the sends
//!   were; [`request`], [`template`]: what to
//!   send, a URL or a weighted mix, with per-request values.
//! - [`attack`](mod@attack): the [`AttackPlan`] (validated values), the worker threads started, their
//!   intervals gathered into one [`RunOutcome`] and handed to the [`IntervalSink`]s.
//! - `workload`: what every worker of a run shares, and the rules both engines follow: each
//!   thread's share of the rate and of the connections, the stride of its requests, the batch
//!   window, the grid intervals close on, a closed loop's next request.
//! - `eventloop`: a worker for plain HTTP/1.1, its own epoll set and timerfd, one wake-up per
//!   request; `h1response` reads its responses. `hyper`: a worker for TLS and HTTP/2, a
//!   single-threaded tokio runtime with hyper's client (`client`).
//! - `recorder`: each worker's per-interval counters and HdrHistograms.
//! - `timer`: sleeping to a deadline with microsecond precision; [`clock`]: the one
//!   monotonic clock; `cpus`: how busy the generator's CPUs were; [`shutdown`]: stopping a
//!   run early without losing what it recorded; [`floor`]: what this machine can time (a
//!   clock reading against a system call, a timed wake-up's CPU and lateness), measured once
//!   a process, what a run's validity is judged against.

pub mod arrivals;
pub mod attack;
mod client;
pub mod clock;
mod cpus;
mod eventloop;
pub mod floor;
mod h1response;
mod hyper;
mod recorder;
pub mod request;
pub mod schedule;
pub mod shutdown;
pub mod template;
mod timer;
mod workload;

pub use attack::{attack, summarize, time_zero, AttackPlan, IntervalSink, Load, RunOutcome, Span};
