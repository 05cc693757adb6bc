//! `store`: Showdown's run model and its storage.
//!
//! Modules:
//!
//! - [`model`]: what a run records per interval (counters and HdrHistograms) and how intervals
//!   add up, across threads, intervals and gun hosts.
//! - [`summary`]: the end-of-run figures (Vegeta-style text, or JSON) from a run's totals.
//! - [`hdrlog`]: HdrHistogram interval logs, and histograms in HdrHistogram's own format.

pub mod hdrlog;
pub mod model;
pub mod summary;
