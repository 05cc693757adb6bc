//! The run's tails with their 95 % intervals (`analysis::tail`), taken in as its intervals
//! close: the corrected latencies after the warm-up, in at most 80 slots.

use std::io;

use analysis::tail::Slots;
use store::model::IntervalStats;
use store::summary::Tails;

use crate::engine::attack::{IntervalSink, Span};

/// The sink that keeps a run's slots.
pub struct TailSink(Slots);

impl TailSink {
    /// For a run recorded in intervals of `interval`.
    pub fn new(interval: std::time::Duration) -> TailSink {
        TailSink(Slots::new(
            u64::try_from(interval.as_nanos()).unwrap_or(u64::MAX),
        ))
    }

    /// The tails read from what was taken in (`None` where nothing was answered after the
    /// warm-up).
    pub fn tails(&self) -> Option<Tails> {
        self.0.tails()
    }
}

impl IntervalSink for TailSink {
    fn name(&self) -> String {
        "the tails' intervals".into()
    }

    fn interval(&mut self, _span: Span, stats: &IntervalStats) -> io::Result<()> {
        self.0.add(stats.index, &stats.corrected);
        Ok(())
    }
}
