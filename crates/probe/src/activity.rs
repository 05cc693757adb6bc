//! A database's own account of its backends, handed to a sampler by whoever can read it (the
//! experiment runner holds the database's URL; the probe never does): the latest reading waits
//! here and rides in the next full tick's sample, so it is on the load's timeline with the
//! database's CPU and run-queue figures, and reaches the store the way every sample does.

use std::sync::{Arc, Mutex};

use crate::sample::DbActivity;

/// The latest reading, shared between the reader and the sampler.
#[derive(Debug, Clone, Default)]
pub struct ActivityFeed(Arc<Mutex<Option<DbActivity>>>);

impl ActivityFeed {
    pub fn new() -> Self {
        Self::default()
    }

    /// Replaces the latest reading.
    pub fn publish(&self, activity: DbActivity) {
        if let Ok(mut latest) = self.0.lock() {
            *latest = Some(activity);
        }
    }

    /// The latest reading, if it is newer than `after` (wall ns) and no older than `fresh`
    /// before `now` (wall ns): a reader that stalled leaves a gap, never a repeated figure.
    pub fn newer_than(&self, after: u64, now: u64, fresh: u64) -> Option<DbActivity> {
        let latest = self.0.lock().ok()?;
        latest
            .as_ref()
            .filter(|a| a.read_wall_ns > after && now.saturating_sub(a.read_wall_ns) <= fresh)
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reading_rides_once_and_only_while_fresh() {
        let feed = ActivityFeed::new();
        assert_eq!(feed.newer_than(0, 10, 5), None);
        feed.publish(DbActivity {
            read_wall_ns: 100,
            backends: 3,
            ..Default::default()
        });
        assert_eq!(feed.newer_than(0, 102, 5).map(|a| a.backends), Some(3));
        // Already sent: not again.
        assert_eq!(feed.newer_than(100, 103, 5), None);
        // Stale: the reader stopped.
        assert_eq!(feed.newer_than(0, 200, 5), None);
    }
}
