//! Moving runs from one store into another: `loadgen runs import FILE`, for a run that was
//! spooled to a local file because its store was down, and the writer's own return of a spool
//! to the store once it answers again.
//!
//! Rows are copied page by page (256 intervals, 1,024 records at a time), so a long run moves in
//! bounded memory. Every insert skips what the store has already: rows written before an outage
//! stay as they are, a file imported twice adds nothing, and nothing is counted twice. A run the
//! store never saw is created first; the run's end (status, summary, warnings) is written last,
//! when the file has one.

use std::path::Path;

use crate::db::{self, Store, StoreError};
use crate::run::Finish;
use crate::run::{RunFilter, RunStatus};

/// What one import did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Imported {
    pub run_id: String,
    /// The store had not seen the run at all.
    pub created: bool,
    /// Rows read from the file (those the store had already were skipped).
    pub rows: u64,
    /// How the run stands in the file: a run spooled during an outage and never finished
    /// (its generator was killed) stays `running`.
    pub status: RunStatus,
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
        let imported = copy_run(&from, into, &listing.id).await;
        done.push(imported.map_err(|e| {
            StoreError::Unusable(format!(
                "importing run {} from {}: {e}",
                listing.id,
                path.display()
            ))
        })?);
    }
    from.close().await;
    Ok(done)
}

/// Copies run `id` from `from` into `into`: the run (created if missing), its intervals,
/// probes, records and gaps, then its end if it has one.
pub(crate) async fn copy_run(from: &Store, into: &Store, id: &str) -> Result<Imported, StoreError> {
    let run = from.load_run_streaming(id, |_| {}).await?;
    let created = !into.has_run(id).await?;
    if created {
        into.create_run(&run.meta).await?;
    }
    let rows = copy_rows(from, into, id, None).await?;
    if run.status != RunStatus::Running {
        let finish = Finish {
            status: run.status,
            stop_reason: run.stop_reason,
            ended_at_ns: run.ended_at_ns.unwrap_or(run.meta.started_at_ns),
            summary: run.summary,
            warnings: run.warnings,
            // The file's records are on the run's timeline already.
            clock_offsets: Vec::new(),
            zero_mono_ns: 0,
        };
        db::write_finish(into, id, &finish).await?;
    }
    Ok(Imported {
        run_id: id.to_string(),
        created,
        rows,
        status: run.status,
    })
}

/// Copies the rows of run `id` (which `into` holds already), page by page. With `patience`,
/// each page must be written within it, or the copy ends with an error (a store that takes the
/// connection and stalls must not hold a run's writer); what was written stays, and a copy
/// started again writes each row once.
pub(crate) async fn copy_rows(
    from: &Store,
    into: &Store,
    id: &str,
    patience: Option<std::time::Duration>,
) -> Result<u64, StoreError> {
    let mut rows = 0u64;
    let mut after = None;
    loop {
        let page = from.intervals_after(id, after, 256).await?;
        let Some(last) = page.last() else { break };
        after = Some(last.stats.index);
        within(patience, async {
            let mut tx = into.pool().begin().await?;
            for interval in &page {
                db::insert_interval(&mut tx, id, interval).await?;
            }
            tx.commit().await
        })
        .await?;
        rows += page.len() as u64;
    }
    for probe in from.probe_metas(id).await? {
        let gaps = from.gaps(id, probe.index).await?;
        within(patience, async {
            let mut tx = into.pool().begin().await?;
            db::upsert_probe(&mut tx, id, &probe).await?;
            for gap in &gaps {
                db::insert_gap(&mut tx, id, probe.index, gap).await?;
            }
            tx.commit().await
        })
        .await?;
        rows += gaps.len() as u64;
        let mut after = None;
        loop {
            let page = from.records_after(id, probe.index, after, 1024).await?;
            let Some(last) = page.last() else { break };
            after = Some(last.seq);
            within(patience, async {
                let mut tx = into.pool().begin().await?;
                for record in &page {
                    db::insert_record(&mut tx, id, probe.index, record).await?;
                }
                tx.commit().await
            })
            .await?;
            rows += page.len() as u64;
        }
    }
    Ok(rows)
}

/// `work`, within `patience` when given (a page not written in time is the pool's time-out).
async fn within(
    patience: Option<std::time::Duration>,
    work: impl std::future::Future<Output = Result<(), sqlx::Error>>,
) -> Result<(), sqlx::Error> {
    match patience {
        Some(limit) => tokio::time::timeout(limit, work)
            .await
            .unwrap_or(Err(sqlx::Error::PoolTimedOut)),
        None => work.await,
    }
}
