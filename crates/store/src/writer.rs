//! Writing a run as it goes, off the hot path.
//!
//! A [`RunWriter`] takes intervals, probe records and gaps on an unbounded channel (sending
//! never blocks the attack) and writes them from a task of its own, in one transaction per
//! batch: whatever arrived within 250 ms, up to 1,024 rows. [`RunWriter::finish`] writes what is
//! left, realigns the probes' records with their final clock offsets, and marks the run
//! complete or incomplete.
//!
//! Writes are idempotent: a batch whose commit succeeded but whose answer was lost is written
//! again, and the store keeps the rows it has and adds the rest.
//!
//! A store that goes away (PostgreSQL stopped, the network cut) loses nothing, in bounded
//! memory. With a [`Fallback`] (loadgen's runs), the first batch that cannot be written opens a
//! spool, a local SQLite file (`results/unsaved/RUN_ID.db`, the run's setup first), and every
//! batch goes there as it comes, so a generator killed during the outage leaves all it had
//! spooled. Once a second the writer asks whether the store answers; when it does, the spool is
//! copied into it page by page and removed. At the end the writer waits up to
//! [`FINISH_PATIENCE`] for a store that is still down; then the run's end goes into the spool,
//! for `loadgen runs import`. Without a fallback (an import), or when the spool file cannot be
//! opened either, unwritten batches wait in memory, at most [`MEMORY_ROWS`] of them (the rest
//! counted as lost and said). A store that is only slow (a write past a second, but a ping
//! answered) is waited for, not spooled around.
//! A batch the database refuses for what it holds is counted and reported, never silently
//! dropped; the rows before and after it are still written.

use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::db::{self, write_finish, Store};
use crate::run::{Finish, ProbeMeta, RunMeta, StoredGap, StoredInterval, StoredRecord};

/// What the writer managed to do.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteReport {
    pub rows_written: u64,
    pub rows_failed: u64,
    /// The first failure, worded for the user.
    pub first_error: Option<String>,
    /// Batches retried because the store could not be reached.
    pub retries: u64,
    /// Where the run went when the store stayed down (import it with `loadgen runs import`).
    pub saved_to: Option<PathBuf>,
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
/// How long one write may wait for the store before it counts as unreachable.
const WRITE_PATIENCE: Duration = Duration::from_secs(5);
/// The same, when the rows can go to a spool meanwhile.
const SPOOL_PATIENCE: Duration = Duration::from_secs(1);
/// How long the end of a run waits for a store that is down before saving the run locally.
pub const FINISH_PATIENCE: Duration = Duration::from_secs(15);
/// The most rows kept in memory while neither the store nor a spool file takes them (a few
/// minutes of a run's intervals and probe records): past it, rows are counted as lost, so that
/// an outage cannot grow the generator's memory without bound.
pub const MEMORY_ROWS: usize = 20_000;

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

/// Where a run goes when its store stays down: a SQLite file in `dir`, named for the run.
#[derive(Debug, Clone)]
pub struct Fallback {
    pub meta: RunMeta,
    pub dir: PathBuf,
}

impl RunWriter {
    /// Starts writing run `run_id` (already created) on the current runtime.
    pub fn start(store: &Store, run_id: &str) -> Self {
        Self::start_with(store, run_id, None)
    }

    /// As [`RunWriter::start`], saving the run to a local file if the store stays down.
    pub fn start_with(store: &Store, run_id: &str, fallback: Option<Fallback>) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(write_loop(store.clone(), run_id.to_string(), rx, fallback));
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

/// Whether a failure is the store being out of reach (worth a retry), not the rows.
fn unreachable(e: &sqlx::Error) -> bool {
    matches!(
        e,
        sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::Protocol(_)
            | sqlx::Error::WorkerCrashed
    ) || matches!(e, sqlx::Error::Database(d) if d.code().is_some_and(|c| c.starts_with("57P") || c.starts_with("08")))
}

/// Where batches go while the store is out of reach.
enum Spool {
    /// Nowhere yet: the store takes them.
    Idle,
    /// Kept in memory, in order (no fallback file).
    Memory(Vec<Op>),
    /// A local SQLite file holding the run's setup and every batch since the outage began.
    File { local: Store, path: PathBuf },
}

impl Spool {
    fn active(&self) -> bool {
        !matches!(self, Spool::Idle)
    }

    /// Takes `batch` (the store could not), opening the spool file first if need be.
    async fn push(
        &mut self,
        fallback: Option<&Fallback>,
        run_id: &str,
        batch: Vec<Op>,
        report: &mut WriteReport,
    ) {
        // No spool file yet (or none could be opened before): try to open one, and move what
        // waits in memory into it.
        if let (Spool::Idle | Spool::Memory(_), Some(fallback)) = (&*self, fallback) {
            match open_spool(fallback).await {
                Ok((local, path)) => {
                    if let Spool::Memory(pending) = std::mem::replace(self, Spool::Idle) {
                        let n = pending.len() as u64;
                        if let Err(e) = write_batch(&local, run_id, &pending).await {
                            report.rows_failed += n;
                            report.first_error.get_or_insert_with(|| {
                                format!("could not spool {n} rows locally: {e}")
                            });
                        }
                    }
                    *self = Spool::File { local, path };
                }
                Err(e) => {
                    report.first_error.get_or_insert_with(|| {
                        format!("the store is out of reach, and so is its spool: {e}")
                    });
                }
            }
        }
        match self {
            Spool::File { local, .. } => {
                let n = batch.len() as u64;
                if let Err(e) = write_batch(local, run_id, &batch).await {
                    report.rows_failed += n;
                    report
                        .first_error
                        .get_or_insert_with(|| format!("could not spool {n} rows locally: {e}"));
                }
            }
            Spool::Memory(pending) => keep_in_memory(pending, batch, report),
            Spool::Idle => {
                let mut pending = Vec::new();
                keep_in_memory(&mut pending, batch, report);
                *self = Spool::Memory(pending);
            }
        }
    }

    /// Moves what is spooled into `store`, if it answers now; true when the spool is empty.
    async fn restore(&mut self, store: &Store, run_id: &str, report: &mut WriteReport) -> bool {
        match self {
            Spool::Idle => true,
            Spool::Memory(pending) => {
                flush(store, run_id, pending, report).await;
                if pending.is_empty() {
                    *self = Spool::Idle;
                }
                !self.active()
            }
            Spool::File { local, path } => {
                if !answers(store).await {
                    return false;
                }
                match crate::import::copy_rows(local, store, run_id, Some(WRITE_PATIENCE)).await {
                    Ok(rows) => {
                        report.rows_written += rows;
                        local.close().await;
                        let _ = std::fs::remove_file(&*path);
                        *self = Spool::Idle;
                        true
                    }
                    Err(_) => false,
                }
            }
        }
    }
}

/// Keeps `batch` in memory, up to [`MEMORY_ROWS`]; what does not fit is counted as lost,
/// except a probe's description and the run's end, which are always kept (a handful per run).
fn keep_in_memory(pending: &mut Vec<Op>, batch: Vec<Op>, report: &mut WriteReport) {
    let mut lost = 0;
    for op in batch {
        if pending.len() < MEMORY_ROWS || matches!(op, Op::Probe(_) | Op::Finish(_)) {
            pending.push(op);
        } else {
            lost += 1;
        }
    }
    if lost > 0 {
        report.rows_failed += lost as u64;
        report.first_error = Some(format!(
            "{}; with no spool file either, at most {MEMORY_ROWS} rows wait in memory, and {} rows past them were lost",
            report.first_error.take().unwrap_or_else(|| "the store is out of reach".into()),
            report.rows_failed
        ));
    }
}

/// Why the run could not be kept in a spool file.
#[derive(Debug, thiserror::Error)]
enum SpoolError {
    #[error("cannot make {}: {source}", .dir.display())]
    Directory {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Store(#[from] crate::db::StoreError),
    #[error(transparent)]
    Write(#[from] sqlx::Error),
}

/// Opens (or creates) the spool file for the run, with the run's setup in it.
async fn open_spool(fallback: &Fallback) -> Result<(Store, PathBuf), SpoolError> {
    std::fs::create_dir_all(&fallback.dir).map_err(|source| SpoolError::Directory {
        dir: fallback.dir.clone(),
        source,
    })?;
    let path = fallback.dir.join(format!("{}.db", fallback.meta.id));
    let local = Store::open(&format!("sqlite://{}", path.display())).await?;
    if !local.has_run(&fallback.meta.id).await? {
        local.create_run(&fallback.meta).await?;
    }
    Ok((local, path))
}

/// Whether the store answers a trivial query within a quarter of a second.
async fn answers(store: &Store) -> bool {
    answers_within(store, Duration::from_millis(250)).await
}

async fn answers_within(store: &Store, within: Duration) -> bool {
    let ping = sqlx::query("SELECT 1").execute(store.pool());
    matches!(tokio::time::timeout(within, ping).await, Ok(Ok(_)))
}

/// How often a spooling writer asks whether the store is back.
const RESTORE_EVERY: Duration = Duration::from_secs(1);

async fn write_loop(
    store: Store,
    run_id: String,
    mut rx: mpsc::UnboundedReceiver<Op>,
    fallback: Option<Fallback>,
) -> WriteReport {
    let mut finish = None;
    let next_restore = tokio::time::Instant::now();
    // With a spool, a store that does not answer within a second is out of reach for now: the
    // batch goes to the spool (a store that was only slow gets it again from there, and keeps
    // one copy), so that at most a second of rows waits in memory.
    let patience = if fallback.is_some() {
        SPOOL_PATIENCE
    } else {
        WRITE_PATIENCE
    };
    let mut writing = Writing {
        store,
        run_id,
        fallback,
        patience,
        spool: Spool::Idle,
        report: WriteReport::default(),
        next_restore,
    };
    while let Some(first) = rx.recv().await {
        let mut batch = next_batch(first, &mut rx).await;
        if let Some(Op::Finish(f)) = batch.last() {
            finish = Some((**f).clone());
            batch.pop();
        }
        writing.take(batch).await;
        if finish.is_some() {
            break;
        }
    }
    let Some(finish) = finish else {
        return writing.report;
    };
    if writing.record_end(&finish).await {
        return writing.report;
    }
    writing.save_end(&finish).await
}

/// Gathers a batch from `first` on: whatever arrives within [`BATCH_WAIT`], up to
/// [`BATCH_ROWS`] rows, and nothing past the run's end.
async fn next_batch(first: Op, rx: &mut mpsc::UnboundedReceiver<Op>) -> Vec<Op> {
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
    batch
}

/// What the write loop carries from batch to batch.
struct Writing {
    store: Store,
    run_id: String,
    fallback: Option<Fallback>,
    /// How long a write waits for the store before the batch is spooled.
    patience: Duration,
    spool: Spool,
    report: WriteReport,
    /// When a spooling writer next asks whether the store is back.
    next_restore: tokio::time::Instant,
}

impl Writing {
    /// Takes one batch: into the spool while there is one, else into the store.
    async fn take(&mut self, batch: Vec<Op>) {
        if self.spool.active() {
            // Rows first, then (once a second) whether the store is back: a check waits for an
            // answer, and rows must not wait in memory meanwhile.
            self.spool_batch(batch).await;
            if tokio::time::Instant::now() >= self.next_restore {
                self.spool
                    .restore(&self.store, &self.run_id, &mut self.report)
                    .await;
                self.next_restore = tokio::time::Instant::now() + RESTORE_EVERY;
            }
        } else if !batch.is_empty() {
            self.write(batch).await;
        }
    }

    /// Puts `batch` in the spool (the store could not take it).
    async fn spool_batch(&mut self, batch: Vec<Op>) {
        self.spool
            .push(
                self.fallback.as_ref(),
                &self.run_id,
                batch,
                &mut self.report,
            )
            .await;
    }

    /// Writes `batch` into the store; spools it if the store is out of reach, counts it if
    /// the database refuses it.
    async fn write(&mut self, batch: Vec<Op>) {
        let n = batch.len() as u64;
        let write = write_batch(&self.store, &self.run_id, &batch);
        let mut written = tokio::time::timeout(self.patience, write)
            .await
            .unwrap_or(Err(sqlx::Error::PoolTimedOut));
        // Slow is not gone: a store that answers a ping gets the batch again, with the
        // patience of a store that cannot be spooled around.
        if matches!(written, Err(sqlx::Error::PoolTimedOut))
            && self.patience < WRITE_PATIENCE
            && answers_within(&self.store, SPOOL_PATIENCE).await
        {
            written = write_with_patience(write_batch(&self.store, &self.run_id, &batch)).await;
        }
        match written {
            Ok(()) => self.report.rows_written += n,
            Err(e) if unreachable(&e) => {
                self.report.retries += 1;
                self.report
                    .first_error
                    .get_or_insert_with(|| format!("the store is out of reach: {e}"));
                self.next_restore = tokio::time::Instant::now() + RESTORE_EVERY;
                self.spool_batch(batch).await;
            }
            Err(e) => refused(&self.store, &e, n, &mut self.report),
        }
    }

    /// Empties the spool and writes the run's end, trying for up to [`FINISH_PATIENCE`]; true
    /// when done (written or refused), false when the store stayed down.
    async fn record_end(&mut self, finish: &Finish) -> bool {
        let give_up = tokio::time::Instant::now() + FINISH_PATIENCE;
        loop {
            if self
                .spool
                .restore(&self.store, &self.run_id, &mut self.report)
                .await
            {
                match write_with_patience(write_finish(&self.store, &self.run_id, finish)).await {
                    Ok(()) => return true,
                    Err(e) if unreachable(&e) => {
                        self.report
                            .first_error
                            .get_or_insert_with(|| format!("the store is out of reach: {e}"));
                    }
                    Err(e) => {
                        self.report.rows_failed += 1;
                        self.report.first_error.get_or_insert_with(|| {
                            format!("could not record the end of the run: {e}")
                        });
                        return true;
                    }
                }
            }
            if tokio::time::Instant::now() >= give_up {
                return false;
            }
            tokio::time::sleep(RESTORE_EVERY).await;
            self.report.retries += 1;
        }
    }

    /// The store stayed down: the run's end goes into the spool, for `runs import`.
    async fn save_end(self, finish: &Finish) -> WriteReport {
        let Writing {
            fallback,
            spool,
            mut report,
            ..
        } = self;
        match (&fallback, spool) {
            (Some(fallback), spool) => {
                let pending = match spool {
                    Spool::Memory(pending) => pending,
                    _ => Vec::new(),
                };
                match save_locally(fallback, &pending, finish).await {
                    Ok(path) => report.saved_to = Some(path),
                    Err(e) => {
                        report.rows_failed += pending.len() as u64 + 1;
                        report.first_error = Some(format!(
                            "{}; saving the run locally failed too: {e}",
                            report.first_error.take().unwrap_or_default()
                        ));
                    }
                }
            }
            (None, Spool::Memory(pending)) => report.rows_failed += pending.len() as u64 + 1,
            (None, _) => report.rows_failed += 1,
        }
        report
    }
}

/// Counts a batch the database refused for what it holds.
fn refused(store: &Store, e: &sqlx::Error, n: u64, report: &mut WriteReport) {
    report.rows_failed += n;
    report
        .first_error
        .get_or_insert_with(|| match store.disk_full(e) {
            Some(full) => format!("could not store {n} rows of the run: {full}"),
            None => format!("could not store {n} rows of the run: {e}"),
        });
}

/// Writes the pending rows, in batches; keeps them if the store is out of reach, drops (and
/// counts) a batch the database refuses.
async fn flush(store: &Store, run_id: &str, pending: &mut Vec<Op>, report: &mut WriteReport) {
    while !pending.is_empty() {
        let n = pending.len().min(BATCH_ROWS);
        match write_with_patience(write_batch(store, run_id, &pending[..n])).await {
            Ok(()) => {
                report.rows_written += n as u64;
                pending.drain(..n);
            }
            Err(e) if unreachable(&e) => {
                report.retries += 1;
                report
                    .first_error
                    .get_or_insert_with(|| format!("the store is out of reach: {e}"));
                return;
            }
            Err(e) => {
                refused(store, &e, n as u64, report);
                pending.drain(..n);
            }
        }
    }
}

async fn write_with_patience(
    write: impl std::future::Future<Output = Result<(), sqlx::Error>>,
) -> Result<(), sqlx::Error> {
    tokio::time::timeout(WRITE_PATIENCE, write)
        .await
        .unwrap_or(Err(sqlx::Error::PoolTimedOut))
}

/// Writes the run's setup (if the spool does not hold it yet), `pending` and its end into the
/// spool file; returns the file.
async fn save_locally(
    fallback: &Fallback,
    pending: &[Op],
    finish: &Finish,
) -> Result<PathBuf, SpoolError> {
    let (local, path) = open_spool(fallback).await?;
    for chunk in pending.chunks(BATCH_ROWS) {
        write_batch(&local, &fallback.meta.id, chunk).await?;
    }
    write_finish(&local, &fallback.meta.id, finish).await?;
    local.close().await;
    Ok(path)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::RunStatus;

    fn gap(n: u64) -> Op {
        Op::Gap(
            0,
            StoredGap {
                from_seq: n,
                to_seq: Some(n),
                t_ns: 0,
                reason: "test".into(),
            },
        )
    }

    /// With neither the store nor a spool file, memory holds at most MEMORY_ROWS rows; the
    /// rest are counted and said lost, and the run's end is never one of them.
    #[test]
    fn rows_waiting_in_memory_are_capped_and_the_end_is_kept() {
        let mut pending = Vec::new();
        let mut report = WriteReport::default();
        keep_in_memory(
            &mut pending,
            (0..MEMORY_ROWS as u64 - 5).map(gap).collect(),
            &mut report,
        );
        assert_eq!((pending.len(), report.rows_failed), (MEMORY_ROWS - 5, 0));
        let mut batch: Vec<Op> = (0..20).map(gap).collect();
        batch.push(Op::Finish(Box::new(Finish {
            status: RunStatus::Complete,
            stop_reason: None,
            ended_at_ns: 0,
            summary: None,
            warnings: Vec::new(),
            clock_offsets: Vec::new(),
            zero_mono_ns: 0,
        })));
        keep_in_memory(&mut pending, batch, &mut report);
        assert_eq!(pending.len(), MEMORY_ROWS + 1);
        assert!(matches!(pending.last(), Some(Op::Finish(_))));
        assert_eq!(report.rows_failed, 15);
        let said = report.first_error.unwrap_or_default();
        assert!(said.contains("15 rows past them were lost"), "{said}");
    }
}
