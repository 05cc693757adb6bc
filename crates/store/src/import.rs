//! Moving runs from one store into another: `loadgen runs import FILE`, for a run that was
//! saved to a local file because its store was down at the end of the run.
//!
//! Rows already in the store stay; the file holds exactly what the store did not get (the
//! writer saves only unwritten rows), so the import adds them, then the run's end. A run the
//! store never saw is created first. Importing the same file twice is refused by the store's
//! keys, not silently doubled.

use std::path::Path;

use crate::db::{Store, StoreError};
use crate::run::RunFilter;
use crate::writer::{Finish, RunWriter};

/// What one import did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Imported {
    pub run_id: String,
    /// The store had not seen the run at all.
    pub created: bool,
    pub rows: u64,
}

/// Imports every run of the SQLite file at `path` into `into`.
pub async fn import_file(into: &Store, path: &Path) -> Result<Vec<Imported>, StoreError> {
    if !path.is_file() {
        return Err(StoreError::Unusable(format!(
            "{} is not a file: give the file loadgen named when it saved the run",
            path.display()
        )));
    }
    let from = Store::open(&format!("sqlite://{}", path.display())).await?;
    let mut done = Vec::new();
    for listing in from.list_runs(&RunFilter::default()).await? {
        let run = from.load_run(&listing.id).await?;
        let created = !into.has_run(&run.meta.id).await?;
        if created {
            into.create_run(&run.meta).await?;
        }
        let writer = RunWriter::start(into, &run.meta.id);
        let mut rows = 0u64;
        for interval in run.intervals {
            writer.interval(interval);
            rows += 1;
        }
        for probe in run.probes {
            let index = probe.meta.index;
            writer.probe(probe.meta);
            for record in probe.records {
                writer.record(index, record);
                rows += 1;
            }
            for gap in probe.gaps {
                writer.gap(index, gap);
                rows += 1;
            }
        }
        let report = writer
            .finish(Finish {
                status: run.status,
                stop_reason: run.stop_reason,
                ended_at_ns: run.ended_at_ns.unwrap_or(run.meta.started_at_ns),
                summary: run.summary,
                warnings: run.warnings,
                // The file's records are on the run's timeline already.
                clock_offsets: Vec::new(),
                zero_mono_ns: 0,
            })
            .await;
        if let Some(problem) = report.first_error {
            return Err(StoreError::Unusable(format!(
                "importing run {} from {}: {problem}",
                run.meta.id,
                path.display()
            )));
        }
        done.push(Imported {
            run_id: run.meta.id,
            created,
            rows,
        });
    }
    from.close().await;
    Ok(done)
}
