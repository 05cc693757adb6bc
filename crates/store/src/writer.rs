//! Writing a run as it goes, off the hot path.
//!
//! A [`RunWriter`] takes intervals, probe records and gaps on an unbounded channel (sending
//! never blocks the attack) and writes them from a task of its own, in one transaction per
//! batch: whatever arrived within 250 ms, up to 1,024 rows. [`RunWriter::finish`] writes what is
//! left, realigns the probes' records with their final clock offsets, and marks the run
//! complete or incomplete. A failed batch is counted and reported, never silently dropped; the
//! rows before and after it are still written.

use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::db::{self, Store};
use crate::run::{ProbeMeta, RunStatus, StoredGap, StoredInterval, StoredRecord};
use crate::summary::Summary;

/// How a run ended, for its row.
#[derive(Debug, Clone)]
pub struct Finish {
    pub status: RunStatus,
    pub stop_reason: Option<String>,
    /// Wall-clock end, Unix ns.
    pub ended_at_ns: i64,
    pub summary: Option<Summary>,
    pub warnings: Vec<String>,
    /// Final clock offsets (probe monotonic − gun monotonic) per probe, to realign records.
    pub clock_offsets: Vec<(u32, i64)>,
    /// The gun's monotonic time of time zero.
    pub zero_mono_ns: i64,
}

/// What the writer managed to do.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteReport {
    pub rows_written: u64,
    pub rows_failed: u64,
    /// The first failure, worded for the user.
    pub first_error: Option<String>,
}

#[derive(Debug)]
enum Op {
    Interval(Box<StoredInterval>),
    Probe(Box<ProbeMeta>),
    Record(u32, Box<StoredRecord>),
    Gap(u32, StoredGap),
    Finish(Box<Finish>),
}

const BATCH_ROWS: usize = 1024;
const BATCH_WAIT: Duration = Duration::from_millis(250);

/// Writes one run in the background. Rows are sent through its [`WriterHandle`] (it derefs
/// to one), and [`RunWriter::finish`] ends the run.
#[derive(Debug)]
pub struct RunWriter {
    run_id: String,
    handle: WriterHandle,
    task: JoinHandle<WriteReport>,
}

impl std::ops::Deref for RunWriter {
    type Target = WriterHandle;

    fn deref(&self) -> &WriterHandle {
        &self.handle
    }
}

impl RunWriter {
    /// Starts writing run `run_id` (already created) on the current runtime.
    pub fn start(store: &Store, run_id: &str) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(write_loop(store.clone(), run_id.to_string(), rx));
        RunWriter {
            run_id: run_id.to_string(),
            handle: WriterHandle { tx },
            task,
        }
    }

    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// A handle that can send records from another task.
    pub fn handle(&self) -> WriterHandle {
        self.handle.clone()
    }

    /// Writes what is left and the run's end; returns what was written and what failed.
    pub async fn finish(self, finish: Finish) -> WriteReport {
        let _ = self.handle.tx.send(Op::Finish(Box::new(finish)));
        drop(self.handle);
        match self.task.await {
            Ok(report) => report,
            Err(e) => WriteReport {
                rows_failed: 1,
                first_error: Some(format!("the store writer stopped: {e}")),
                ..Default::default()
            },
        }
    }
}

/// Sends probe records and gaps to a [`RunWriter`] from another task.
#[derive(Debug, Clone)]
pub struct WriterHandle {
    tx: mpsc::UnboundedSender<Op>,
}

// A send fails only once the task has ended, which `finish` then reports.
impl WriterHandle {
    pub fn interval(&self, interval: StoredInterval) {
        let _ = self.tx.send(Op::Interval(Box::new(interval)));
    }

    pub fn probe(&self, probe: ProbeMeta) {
        let _ = self.tx.send(Op::Probe(Box::new(probe)));
    }

    pub fn record(&self, probe: u32, record: StoredRecord) {
        let _ = self.tx.send(Op::Record(probe, Box::new(record)));
    }

    pub fn gap(&self, probe: u32, gap: StoredGap) {
        let _ = self.tx.send(Op::Gap(probe, gap));
    }
}

async fn write_loop(
    store: Store,
    run_id: String,
    mut rx: mpsc::UnboundedReceiver<Op>,
) -> WriteReport {
    let mut report = WriteReport::default();
    let mut finish = None;
    while let Some(first) = rx.recv().await {
        let mut batch = vec![first];
        let deadline = tokio::time::Instant::now() + BATCH_WAIT;
        while batch.len() < BATCH_ROWS && !matches!(batch.last(), Some(Op::Finish(_))) {
            tokio::select! {
                op = rx.recv() => match op {
                    Some(op) => batch.push(op),
                    None => break,
                },
                _ = tokio::time::sleep_until(deadline) => break,
            }
        }
        if let Some(Op::Finish(f)) = batch.last() {
            finish = Some((**f).clone());
            batch.pop();
        }
        if !batch.is_empty() {
            let rows = batch.len() as u64;
            match write_batch(&store, &run_id, &batch).await {
                Ok(()) => report.rows_written += rows,
                Err(e) => {
                    report.rows_failed += rows;
                    report.first_error.get_or_insert_with(|| {
                        format!("could not store {rows} rows of the run: {e}")
                    });
                }
            }
        }
        if finish.is_some() {
            break;
        }
    }
    if let Some(finish) = finish {
        if let Err(e) = write_finish(&store, &run_id, &finish).await {
            report.rows_failed += 1;
            report
                .first_error
                .get_or_insert_with(|| format!("could not record the end of the run: {e}"));
        }
    }
    report
}

async fn write_batch(store: &Store, run_id: &str, batch: &[Op]) -> Result<(), sqlx::Error> {
    let mut tx = store.pool().begin().await?;
    for op in batch {
        match op {
            Op::Interval(i) => db::insert_interval(&mut tx, run_id, i).await?,
            Op::Probe(p) => db::upsert_probe(&mut tx, run_id, p).await?,
            Op::Record(probe, r) => db::insert_record(&mut tx, run_id, *probe, r).await?,
            Op::Gap(probe, g) => db::insert_gap(&mut tx, run_id, *probe, g).await?,
            Op::Finish(_) => {}
        }
    }
    tx.commit().await
}

async fn write_finish(store: &Store, run_id: &str, finish: &Finish) -> Result<(), sqlx::Error> {
    let mut tx = store.pool().begin().await?;
    for &(probe, offset) in &finish.clock_offsets {
        db::realign_probe(&mut tx, run_id, probe, offset, finish.zero_mono_ns).await?;
    }
    db::finish_run(
        &mut tx,
        run_id,
        finish.status,
        finish.stop_reason.as_deref(),
        finish.ended_at_ns,
        finish.summary.as_ref(),
        &finish.warnings,
    )
    .await?;
    tx.commit().await
}
