//! A run group read as one run, its merged summary's warnings worded: the store merges the
//! shards of a group exactly (`store::group`) and computes its summary's figures again; the
//! warnings those figures call for, and the flags to change, are [`crate::warnings`]'s, put
//! here before the shards' own notes. Every reader of a group (the pages, `loadgen runs`, a
//! capacity search fired from several guns) reads it through this module.

use store::run::StoredRun;
use store::{Store, StoreError};

/// Reads every shard of `group` from `store` and merges them into one run, its summary's
/// warnings worded.
pub async fn load_group(store: &Store, group: &str) -> Result<StoredRun, StoreError> {
    Ok(worded(store::group::load_group(store, group).await?))
}

/// Merges shards (at least one) into one run named after the group, as
/// `store::group::merge` does, its summary's warnings worded.
pub fn merge(group: &str, runs: Vec<StoredRun>) -> StoredRun {
    worded(store::group::merge(group, runs))
}

/// A merged run whose summary's warnings are those its figures call for, then the run's own
/// notes (each shard's, named): the merged summary's stop reason is the group's.
fn worded(mut run: StoredRun) -> StoredRun {
    if let Some(summary) = run.summary.as_mut() {
        crate::warnings::fill(summary, &run.warnings);
    }
    run
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two shards, the first stopped early, the second with a note: the group's summary says
    /// the stop first, then what its figures call for, then the second shard's note, named by
    /// its index (from 0, as a shard's `index` is; the first shard's own notes are the merged
    /// run's, unnamed).
    #[test]
    fn a_groups_summary_says_its_warnings_then_its_shards_notes() {
        let mut first = store::group::empty("a");
        first.stop_reason = Some("interrupted".into());
        let mut second = store::group::empty("b");
        second.warnings = vec!["a probe's link was lost".into()];
        let merged = merge("g", vec![first, second]);
        let summary = merged.summary.unwrap();
        assert_eq!(
            summary.warnings.first().map(String::as_str),
            Some("STOPPED EARLY: interrupted. The figures cover what was recorded until then."),
            "{:?}",
            summary.warnings
        );
        assert!(
            summary
                .warnings
                .iter()
                .any(|w| w.starts_with("CLOSED LOOP")),
            "{:?}",
            summary.warnings
        );
        assert_eq!(
            summary.warnings.last().map(String::as_str),
            Some("shard 1: a probe's link was lost"),
            "{:?}",
            summary.warnings
        );
        assert_eq!(merged.warnings, ["shard 1: a probe's link was lost"]);
        // A group of no shard has no summary to word.
        assert!(merge("none", Vec::new()).summary.is_none());
    }
}
