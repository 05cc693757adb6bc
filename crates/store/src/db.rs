//! The database: opening it (SQLite or Postgres, one code path through sqlx's `Any` driver),
//! its schema, and the statements that write and read runs.

use std::collections::BTreeMap;
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::any::{AnyPoolOptions, AnyRow};
use sqlx::{AnyPool, Row};
use thiserror::Error;

use crate::hdrlog;
use crate::model::{ErrorKind, IntervalStats};
use crate::run::{
    ClockAlignment, ProbeMeta, RunConfig, RunFilter, RunListing, RunMeta, RunStatus, Shard,
    StoredGap, StoredInterval, StoredProbe, StoredRecord, StoredRun,
};
use crate::summary::Summary;

/// The store used when none is named.
pub const DEFAULT_URL: &str = "sqlite://results/showdown.db";

/// The schema, embedded in the binary and applied on open.
static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// What went wrong with the store; each message says where to look.
#[derive(Debug, Error)]
pub enum StoreError {
    #[error("{url:?} is not a store URL: use sqlite://PATH or postgres://USER@HOST/DATABASE")]
    BadUrl { url: String },
    #[error("cannot create the directory for {path}: {source}")]
    Directory {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Unusable(String),
    #[error("cannot open the store {url}: {source}")]
    Open {
        url: String,
        #[source]
        source: sqlx::Error,
    },
    #[error("cannot bring the store {url} up to date: {source}")]
    Migrate {
        url: String,
        #[source]
        source: sqlx::migrate::MigrateError,
    },
    #[error("the store failed: {0}")]
    Query(#[from] sqlx::Error),
    #[error("no run {0} in the store: see `loadgen runs list`")]
    NoRun(String),
    #[error("{matches} runs match {given:?}: give more of the id (see `loadgen runs list`)")]
    Ambiguous { given: String, matches: usize },
    #[error("no run group {0} in the store: see `loadgen runs list`")]
    NoGroup(String),
    #[error("run {id} holds unreadable data ({what}): {message}")]
    Corrupt {
        id: String,
        what: String,
        message: String,
    },
}

/// An open store.
#[derive(Debug, Clone)]
pub struct Store {
    pool: AnyPool,
    url: String,
}

/// When `e` is SQLite failing for want of space (SQLITE_FULL, or an I/O error on a disk with
/// nothing left), one line that says so, with what is free and the fix.
fn disk_full(url: &str, e: &sqlx::Error) -> Option<String> {
    if !url.starts_with("sqlite:") {
        return None;
    }
    let sqlx::Error::Database(db) = e else {
        return None;
    };
    let code: i64 = db.code()?.parse().ok()?;
    // SQLITE_FULL is 13; SQLITE_IOERR (10) and its extended codes (n & 0xff == 10) are what a
    // full disk gives when SQLite cannot even grow its shared-memory file.
    if code & 0xff != 13 && code & 0xff != 10 {
        return None;
    }
    let path = Path::new(sqlite_path(url));
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let free = rustix::fs::statvfs(dir)
        .ok()
        .map(|s| s.f_bavail * s.f_frsize)?;
    if code & 0xff == 10 && free >= 1 << 20 {
        return None;
    }
    Some(format!(
        "the disk holding {} is full ({} KiB free): free some space, or point --db at a store on another disk",
        path.display(),
        free / 1024
    ))
}

/// The file of a `sqlite:` URL.
fn sqlite_path(url: &str) -> &str {
    url.trim_start_matches("sqlite://")
        .trim_start_matches("sqlite:")
        .split('?')
        .next()
        .unwrap_or_default()
}

/// How long opening a store may take before the user is told why it cannot be.
const OPEN_TIMEOUT: Duration = Duration::from_secs(5);

/// Refuses, before SQLite touches it, a file that is not a SQLite database or is shorter than
/// its header says (truncated): SQLite would fail on it only later, and sqlx's pool would
/// retry for half a minute before saying "pool timed out".
fn check_sqlite_file(path: &Path) -> Result<(), StoreError> {
    use std::io::Read;
    let Ok(mut file) = std::fs::File::open(path) else {
        return Ok(()); // a new store, or an error SQLite reports itself
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if len == 0 {
        return Ok(());
    }
    let shown = path.display();
    let mut header = [0u8; 100];
    let read = file.read(&mut header).unwrap_or(0);
    if read < 100 || &header[..16] != b"SQLite format 3\0" {
        return Err(StoreError::Unusable(format!(
            "{shown} is not a SQLite database (its first bytes are not SQLite's header): point --db at a Showdown store, or move the file away to start a new one"
        )));
    }
    let page_size = match u16::from_be_bytes([header[16], header[17]]) {
        1 => 65_536,
        n => u64::from(n),
    };
    let change_counter = &header[24..28];
    let valid_for = &header[92..96];
    let pages = u64::from(u32::from_be_bytes([
        header[28], header[29], header[30], header[31],
    ]));
    // With a write-ahead log beside it, the newest pages may live there, and the file's own
    // length says nothing.
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let has_wal = std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0);
    if !has_wal && change_counter == valid_for && pages > 0 && len < pages * page_size {
        return Err(StoreError::Unusable(format!(
            "{shown} is truncated ({len} bytes of the {} its header announces): restore it from a copy, or move it away to start a new store",
            pages * page_size
        )));
    }
    Ok(())
}

/// Opens one connection first, within [`OPEN_TIMEOUT`], so that a wrong password, a host that
/// does not answer, a damaged file or someone else's database is one clear line within
/// seconds, not a pool's time-out after half a minute, and nothing has been created yet.
async fn check_first_connection(
    url: &str,
    options: &sqlx::any::AnyConnectOptions,
) -> Result<(), StoreError> {
    use sqlx::ConnectOptions;
    let shown = redact::text(url);
    let mut conn = match tokio::time::timeout(OPEN_TIMEOUT, options.connect()).await {
        Err(_) => {
            return Err(StoreError::Unusable(format!(
                "the store {shown} did not answer within {OPEN_TIMEOUT:?}: is the host right and PostgreSQL running there, and does no firewall drop the connection?"
            )))
        }
        Ok(Err(e)) => {
            return Err(StoreError::Unusable(
                disk_full(url, &e).unwrap_or_else(|| explain_open_error(&shown, &e)),
            ))
        }
        Ok(Ok(conn)) => conn,
    };
    let tables = if url.starts_with("sqlite:") {
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
    } else {
        "SELECT CAST(table_name AS TEXT) FROM information_schema.tables WHERE table_schema = current_schema()"
    };
    let names: Vec<String> = match sqlx::query_scalar(tables).fetch_all(&mut conn).await {
        Ok(names) => names,
        Err(e) => {
            return Err(StoreError::Unusable(
                disk_full(url, &e).unwrap_or_else(|| explain_open_error(&shown, &e)),
            ))
        }
    };
    let _ = sqlx::Connection::close(conn).await;
    if !names.is_empty() && !names.iter().any(|n| n == "_sqlx_migrations") {
        let mut some: Vec<&str> = names.iter().map(String::as_str).take(3).collect();
        if names.len() > 3 {
            some.push("…");
        }
        return Err(StoreError::Unusable(format!(
            "{shown} is a database of something else (it holds tables {}) and not a Showdown store: point --db at a store, or at a new file or database",
            some.join(", ")
        )));
    }
    Ok(())
}

/// One line saying why a store could not be opened, and what to do.
fn explain_open_error(shown: &str, e: &sqlx::Error) -> String {
    if let sqlx::Error::Database(db) = e {
        let code = db.code().unwrap_or_default();
        let fix = match code.as_ref() {
            "28P01" => "the password was refused: check the password in --db (or SHOWDOWN_DB)",
            "28000" => "this user may not connect from here: check the user in --db, and pg_hba.conf",
            "3D000" => "the database does not exist: create it (createdb NAME) or fix its name in --db",
            "26" | "11" => "the file is not a usable SQLite database: point --db at a Showdown store, or move the file away to start a new one",
            _ => "",
        };
        if !fix.is_empty() {
            return format!("cannot open the store {shown}: {fix} ({})", db.message());
        }
    }
    if let sqlx::Error::Io(io) = e {
        return format!(
            "cannot reach the store {shown}: {io}: is PostgreSQL running there, and are the host and port in --db right?"
        );
    }
    format!("cannot open the store {shown}: {e}")
}

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn to_u64(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

impl Store {
    /// Opens the store at `url` (`sqlite://PATH`, created with its directory if missing, or
    /// `postgres://…`) and applies the schema.
    pub async fn open(url: &str) -> Result<Store, StoreError> {
        sqlx::any::install_default_drivers();
        let sqlite = url.starts_with("sqlite:");
        if !sqlite && !url.starts_with("postgres://") && !url.starts_with("postgresql://") {
            return Err(StoreError::BadUrl {
                url: redact::text(url),
            });
        }
        let mut connect_url = url.to_string();
        if sqlite {
            let path = sqlite_path(url).to_string();
            if path.is_empty() {
                return Err(StoreError::BadUrl {
                    url: redact::text(url),
                });
            }
            if let Some(dir) = Path::new(&path)
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
            {
                std::fs::create_dir_all(dir).map_err(|source| StoreError::Directory {
                    path: path.clone(),
                    source,
                })?;
            }
            if !connect_url.contains("mode=") {
                connect_url.push(if connect_url.contains('?') { '&' } else { '?' });
                connect_url.push_str("mode=rwc");
            }
        }
        if !sqlite && !connect_url.contains("statement-cache-capacity") {
            // sqlx's Any driver binds a NULL as INT4 and PostgreSQL keeps the parameter types
            // of a prepared statement's first execution: a cached INSERT first run with a NULL
            // (a probe's first sample has no CPU share yet) then refuses every 8-byte value
            // ("incorrect binary data format"). Unnamed statements take each execution's types.
            connect_url.push(if connect_url.contains('?') { '&' } else { '?' });
            connect_url.push_str("statement-cache-capacity=0");
        }
        let open_error = |source| StoreError::Open {
            url: redact::text(url),
            source,
        };
        let options = sqlx::any::AnyConnectOptions::from_str(&connect_url).map_err(open_error)?;
        if sqlite {
            check_sqlite_file(Path::new(sqlite_path(url)))?;
        }
        check_first_connection(url, &options).await?;
        let pool = AnyPoolOptions::new()
            .max_connections(if sqlite { 1 } else { 4 })
            .acquire_timeout(Duration::from_secs(10))
            .after_connect(move |conn, _| {
                Box::pin(async move {
                    if conn.backend_name() == "SQLite" {
                        // Several gun processes may write one file: wait for the lock rather
                        // than fail, and let readers read while a run is being written.
                        sqlx::query("PRAGMA busy_timeout = 10000")
                            .execute(&mut *conn)
                            .await?;
                        sqlx::query("PRAGMA journal_mode = WAL")
                            .execute(&mut *conn)
                            .await?;
                        sqlx::query("PRAGMA foreign_keys = ON")
                            .execute(&mut *conn)
                            .await?;
                    }
                    Ok(())
                })
            })
            .connect_with(options)
            .await
            .map_err(open_error)?;
        MIGRATOR
            .run(&pool)
            .await
            .map_err(|source| StoreError::Migrate {
                url: redact::text(url),
                source,
            })?;
        Ok(Store {
            pool,
            url: url.to_string(),
        })
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// Closes the store's connections (and with SQLite, its write-ahead log).
    pub async fn close(&self) {
        self.pool.close().await;
    }

    pub(crate) fn pool(&self) -> &AnyPool {
        &self.pool
    }

    /// Records that a run has started.
    pub async fn create_run(&self, meta: &RunMeta) -> Result<(), StoreError> {
        self.insert_run(meta)
            .await
            .map_err(|e| match self.disk_full(&e) {
                Some(full) => StoreError::Unusable(format!("{full}; nothing was sent")),
                None => StoreError::Query(e),
            })
    }

    /// Says so when `e` is the disk under a SQLite store being full: how much is free and what to do.
    pub fn disk_full(&self, e: &sqlx::Error) -> Option<String> {
        disk_full(&self.url, e)
    }

    async fn insert_run(&self, meta: &RunMeta) -> Result<(), sqlx::Error> {
        let mut tx = self.pool.begin().await?;
        let shard = meta.shard.as_ref();
        sqlx::query(
            "INSERT INTO runs (id, name, experiment, run_group, shard_index, shard_count, status, \
             tool_version, started_at_ns, interval_ns, config, gun_host) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
        )
        .bind(&meta.id)
        .bind(redact::text(&meta.name))
        .bind(meta.experiment.clone())
        .bind(shard.map(|s| s.group.clone()))
        .bind(i64::from(shard.map_or(0, |s| s.index)))
        .bind(i64::from(shard.map_or(1, |s| s.count)))
        .bind(RunStatus::Running.as_str())
        .bind(&meta.tool_version)
        .bind(meta.started_at_ns)
        .bind(to_i64(meta.interval_ns))
        .bind(json(&meta.config.redacted()))
        .bind(json(&meta.gun_host))
        .execute(&mut *tx)
        .await?;
        for (key, value) in &meta.labels {
            sqlx::query("INSERT INTO run_labels (run_id, key, value) VALUES ($1, $2, $3)")
                .bind(&meta.id)
                .bind(key)
                .bind(redact::env(key, value))
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Deletes a run and all it recorded; false if there was none.
    pub async fn delete_run(&self, id: &str) -> Result<bool, StoreError> {
        let mut tx = self.pool.begin().await?;
        // Children first: SQLite enforces the foreign keys only where asked to.
        for statement in [
            "DELETE FROM probe_gaps WHERE run_id = $1",
            "DELETE FROM probe_records WHERE run_id = $1",
            "DELETE FROM probes WHERE run_id = $1",
            "DELETE FROM intervals WHERE run_id = $1",
            "DELETE FROM run_labels WHERE run_id = $1",
        ] {
            sqlx::query(statement).bind(id).execute(&mut *tx).await?;
        }
        let deleted = sqlx::query("DELETE FROM runs WHERE id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        tx.commit().await?;
        Ok(deleted > 0)
    }

    /// The runs matching `filter`, oldest first.
    pub async fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunListing>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, name, experiment, run_group, shard_index, shard_count, status, \
             started_at_ns, config, summary FROM runs ORDER BY started_at_ns, id",
        )
        .fetch_all(&self.pool)
        .await?;
        let labels = self.all_labels().await?;
        let peaks: BTreeMap<String, (Option<i64>, Option<i64>)> = sqlx::query(
            "SELECT run_id, MAX(rss_bytes), MAX(fds) FROM probe_records WHERE kind = 'sample' GROUP BY run_id",
        )
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(|r| Ok((r.try_get::<String, _>(0)?, (r.try_get(1)?, r.try_get(2)?))))
        .collect::<Result<_, sqlx::Error>>()?;
        let mut out = Vec::new();
        for row in rows {
            let id: String = row.try_get("id")?;
            let run_labels = labels.get(&id).cloned().unwrap_or_default();
            let experiment: Option<String> = row.try_get("experiment")?;
            let shard = shard_of(&row)?;
            if filter
                .experiment
                .as_ref()
                .is_some_and(|e| experiment.as_ref() != Some(e))
                || filter
                    .group
                    .as_ref()
                    .is_some_and(|g| shard.as_ref().map(|s| &s.group) != Some(g))
                || filter
                    .labels
                    .iter()
                    .any(|(k, v)| run_labels.get(k) != Some(v))
            {
                continue;
            }
            let config: RunConfig =
                parse_json(&id, "config", &row.try_get::<String, _>("config")?)?;
            let summary: Option<String> = row.try_get("summary")?;
            let summary: Option<Summary> = match summary {
                Some(text) => Some(parse_json(&id, "summary", &text)?),
                None => None,
            };
            let (peak_rss, peak_fds) = peaks.get(&id).copied().unwrap_or((None, None));
            out.push(RunListing {
                name: row.try_get("name")?,
                experiment,
                labels: run_labels,
                shard,
                status: RunStatus::parse(&row.try_get::<String, _>("status")?),
                started_at_ns: row.try_get("started_at_ns")?,
                target: config.target,
                load: config.load,
                summary,
                peak_rss_bytes: peak_rss.map(to_u64),
                peak_fds: peak_fds.map(to_u64),
                id,
            });
        }
        Ok(out)
    }

    async fn all_labels(&self) -> Result<BTreeMap<String, BTreeMap<String, String>>, StoreError> {
        let mut out: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        for row in sqlx::query("SELECT run_id, key, value FROM run_labels")
            .fetch_all(&self.pool)
            .await?
        {
            out.entry(row.try_get("run_id")?)
                .or_default()
                .insert(row.try_get("key")?, row.try_get("value")?);
        }
        Ok(out)
    }

    /// Whether the store holds run `id` (exactly).
    pub async fn has_run(&self, id: &str) -> Result<bool, StoreError> {
        let row = sqlx::query("SELECT id FROM runs WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.is_some())
    }

    /// Finds a run by its id or by a unique prefix of it, or by its name if unique.
    pub async fn resolve(&self, id_or_name: &str) -> Result<String, StoreError> {
        let rows = sqlx::query("SELECT id FROM runs WHERE id = $1 OR name = $1 OR id LIKE $2")
            .bind(id_or_name)
            .bind(format!("{id_or_name}%"))
            .fetch_all(&self.pool)
            .await?;
        match rows.as_slice() {
            [one] => Ok(one.try_get("id")?),
            [] => Err(StoreError::NoRun(id_or_name.to_string())),
            many => Err(StoreError::Ambiguous {
                given: id_or_name.to_string(),
                matches: many.len(),
            }),
        }
    }

    /// Reads a whole run back.
    pub async fn load_run(&self, id: &str) -> Result<StoredRun, StoreError> {
        let mut intervals = Vec::new();
        let mut run = self
            .load_run_streaming(id, |interval| intervals.push(interval))
            .await?;
        run.intervals = intervals;
        Ok(run)
    }

    /// Reads a run back, handing its intervals one by one to `visit` instead of keeping them
    /// (`intervals` comes back empty). An interval's four HdrHistograms take up to a megabyte
    /// in memory (dense counts up to the timeout): an hour of intervals kept at once would
    /// take gigabytes, while a reader that folds them as they come needs only its own totals.
    pub async fn load_run_streaming(
        &self,
        id: &str,
        mut visit: impl FnMut(StoredInterval),
    ) -> Result<StoredRun, StoreError> {
        let row = sqlx::query("SELECT * FROM runs WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?
            .ok_or_else(|| StoreError::NoRun(id.to_string()))?;
        let labels = sqlx::query("SELECT key, value FROM run_labels WHERE run_id = $1")
            .bind(id)
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(|r| Ok((r.try_get("key")?, r.try_get("value")?)))
            .collect::<Result<BTreeMap<String, String>, sqlx::Error>>()?;
        let meta = RunMeta {
            id: id.to_string(),
            name: row.try_get("name")?,
            experiment: row.try_get("experiment")?,
            labels,
            shard: shard_of(&row)?,
            tool_version: row.try_get("tool_version")?,
            started_at_ns: row.try_get("started_at_ns")?,
            interval_ns: to_u64(row.try_get("interval_ns")?),
            config: parse_json(id, "config", &row.try_get::<String, _>("config")?)?,
            gun_host: parse_json(id, "gun_host", &row.try_get::<String, _>("gun_host")?)?,
        };
        let summary: Option<String> = row.try_get("summary")?;
        let summary = match summary {
            Some(text) => Some(parse_json(id, "summary", &text)?),
            None => None,
        };
        let warnings: Vec<String> =
            parse_json(id, "warnings", &row.try_get::<String, _>("warnings")?)?;
        // The rows hold the histograms compressed (a few hundred bytes each); only one is
        // decoded at a time.
        let rows = sqlx::query("SELECT * FROM intervals WHERE run_id = $1 ORDER BY idx")
            .bind(id)
            .fetch_all(&self.pool)
            .await?;
        for row in &rows {
            visit(interval_of(id, row)?);
        }
        drop(rows);
        let probes = self.load_probes(id).await?;
        Ok(StoredRun {
            meta,
            status: RunStatus::parse(&row.try_get::<String, _>("status")?),
            stop_reason: row.try_get("stop_reason")?,
            ended_at_ns: row.try_get("ended_at_ns")?,
            summary,
            warnings,
            intervals: Vec::new(),
            probes,
        })
    }

    async fn load_probes(&self, id: &str) -> Result<Vec<StoredProbe>, StoreError> {
        let mut out = Vec::new();
        for meta in self.probe_metas(id).await? {
            let records = self.records_after(id, meta.index, None, i64::MAX).await?;
            let gaps = self.gaps(id, meta.index).await?;
            out.push(StoredProbe {
                meta,
                records,
                gaps,
            });
        }
        Ok(out)
    }

    /// A run's probes, by index.
    pub(crate) async fn probe_metas(&self, id: &str) -> Result<Vec<ProbeMeta>, StoreError> {
        let mut out = Vec::new();
        for row in sqlx::query("SELECT * FROM probes WHERE run_id = $1 ORDER BY probe_idx")
            .bind(id)
            .fetch_all(&self.pool)
            .await?
        {
            let index: i64 = row.try_get("probe_idx")?;
            let offset: Option<i64> = row.try_get("clock_offset_ns")?;
            let uncertainty: Option<i64> = row.try_get("clock_uncertainty_ns")?;
            let wall: Option<i64> = row.try_get("wall_offset_ns")?;
            let clock = match (offset, uncertainty, wall) {
                (Some(offset_ns), Some(u), Some(wall_offset_ns)) => Some(ClockAlignment {
                    offset_ns,
                    uncertainty_ns: to_u64(u),
                    wall_offset_ns,
                }),
                _ => None,
            };
            out.push(ProbeMeta {
                index: u32::try_from(index).unwrap_or(u32::MAX),
                address: row.try_get("address")?,
                host: parse_json(id, "probe host", &row.try_get::<String, _>("host")?)?,
                clock,
            });
        }
        Ok(out)
    }

    /// Up to `limit` records of probe `probe` after sequence number `after`, in order.
    pub(crate) async fn records_after(
        &self,
        id: &str,
        probe: u32,
        after: Option<u64>,
        limit: i64,
    ) -> Result<Vec<StoredRecord>, StoreError> {
        sqlx::query(
            "SELECT seq, t_ns, body FROM probe_records WHERE run_id = $1 AND probe_idx = $2 \
             AND seq > $3 ORDER BY seq LIMIT $4",
        )
        .bind(id)
        .bind(i64::from(probe))
        .bind(after.map_or(-1, to_i64))
        .bind(limit)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(|r| {
            Ok(StoredRecord {
                seq: to_u64(r.try_get("seq")?),
                t_ns: r.try_get("t_ns")?,
                record: parse_json(id, "probe record", &r.try_get::<String, _>("body")?)?,
            })
        })
        .collect()
    }

    /// Probe `probe`'s gaps, in order.
    pub(crate) async fn gaps(&self, id: &str, probe: u32) -> Result<Vec<StoredGap>, StoreError> {
        sqlx::query(
            "SELECT from_seq, to_seq, t_ns, reason FROM probe_gaps WHERE run_id = $1 AND probe_idx = $2 ORDER BY from_seq",
        )
        .bind(id)
        .bind(i64::from(probe))
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(|r| {
            Ok(StoredGap {
                from_seq: to_u64(r.try_get("from_seq")?),
                to_seq: r.try_get::<Option<i64>, _>("to_seq")?.map(to_u64),
                t_ns: r.try_get("t_ns")?,
                reason: r.try_get("reason")?,
            })
        })
        .collect()
    }

    /// Up to `limit` intervals after index `after`, in order.
    pub(crate) async fn intervals_after(
        &self,
        id: &str,
        after: Option<u64>,
        limit: i64,
    ) -> Result<Vec<StoredInterval>, StoreError> {
        sqlx::query("SELECT * FROM intervals WHERE run_id = $1 AND idx > $2 ORDER BY idx LIMIT $3")
            .bind(id)
            .bind(after.map_or(-1, to_i64))
            .bind(limit)
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(|row| interval_of(id, row))
            .collect()
    }

    /// The ids of a run group's shards, by shard index.
    pub async fn group_members(&self, group: &str) -> Result<Vec<String>, StoreError> {
        let ids: Vec<String> =
            sqlx::query("SELECT id FROM runs WHERE run_group = $1 ORDER BY shard_index, id")
                .bind(group)
                .fetch_all(&self.pool)
                .await?
                .iter()
                .map(|r| r.try_get("id"))
                .collect::<Result<_, _>>()?;
        if ids.is_empty() {
            return Err(StoreError::NoGroup(group.to_string()));
        }
        Ok(ids)
    }
}

fn shard_of(row: &AnyRow) -> Result<Option<Shard>, sqlx::Error> {
    let group: Option<String> = row.try_get("run_group")?;
    Ok(match group {
        Some(group) => Some(Shard {
            group,
            index: row.try_get::<i64, _>("shard_index")? as u32,
            count: row.try_get::<i64, _>("shard_count")? as u32,
        }),
        None => None,
    })
}

pub(crate) fn json<T: serde::Serialize>(value: &T) -> String {
    // Our own types always serialize.
    serde_json::to_string(value).unwrap_or_default()
}

fn parse_json<T: serde::de::DeserializeOwned>(
    id: &str,
    what: &str,
    text: &str,
) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt {
        id: id.to_string(),
        what: what.to_string(),
        message: e.to_string(),
    })
}

fn interval_of(id: &str, row: &AnyRow) -> Result<StoredInterval, StoreError> {
    let corrupt = |what: &str, message: String| StoreError::Corrupt {
        id: id.to_string(),
        what: what.to_string(),
        message,
    };
    let histogram = |column: &str| -> Result<hdrhistogram::Histogram<u64>, StoreError> {
        let bytes: Vec<u8> = row.try_get(column)?;
        hdrlog::from_bytes(&bytes).map_err(|m| corrupt(column, m))
    };
    let count = |column: &str| -> Result<u64, StoreError> { Ok(to_u64(row.try_get(column)?)) };
    // Small placeholders: the stored histograms replace them below.
    let mut stats = IntervalStats::new(count("idx")?, 0);
    stats.requests = count("requests")?;
    stats.sent = count("sent")?;
    stats.responses = count("responses")?;
    stats.ok = count("ok")?;
    stats.bytes_in = count("bytes_in")?;
    stats.bytes_out = count("bytes_out")?;
    stats.sent_late_beyond_interval = count("sent_late_beyond_interval")?;
    stats.waited_for_connection = count("waited_for_connection")?;
    stats.connections_opened = count("connections_opened")?;
    stats.in_flight = count("in_flight")?;
    stats.connections_open = count("connections_open")?;
    let errors: BTreeMap<String, u64> =
        parse_json(id, "errors", &row.try_get::<String, _>("errors")?)?;
    for (name, n) in errors {
        let kind = ErrorKind::ALL
            .into_iter()
            .find(|k| k.name() == name)
            .ok_or_else(|| corrupt("errors", format!("unknown error kind {name}")))?;
        stats.errors.add(kind, n);
    }
    let codes: BTreeMap<u16, u64> = parse_json(
        id,
        "status codes",
        &row.try_get::<String, _>("status_codes")?,
    )?;
    for (code, n) in codes {
        stats.status.add(code, n);
    }
    stats.corrected = histogram("corrected")?;
    stats.service = histogram("service")?;
    stats.first_byte = histogram("first_byte")?;
    stats.lateness = histogram("lateness")?;
    Ok(StoredInterval {
        start_ns: row.try_get("start_ns")?,
        length_ns: row.try_get("length_ns")?,
        stats,
    })
}

/// Inserts one interval, unless the store has it already: a batch retried after its commit
/// succeeded but its answer was lost adds only what is missing.
pub(crate) async fn insert_interval(
    conn: &mut sqlx::AnyConnection,
    run_id: &str,
    interval: &StoredInterval,
) -> Result<(), sqlx::Error> {
    let s = &interval.stats;
    let errors: BTreeMap<&str, u64> = s.errors.nonzero().map(|(k, n)| (k.name(), n)).collect();
    let percentile = |q: f64| {
        if s.corrected.is_empty() {
            0
        } else {
            to_i64(s.corrected.value_at_quantile(q))
        }
    };
    sqlx::query(
        "INSERT INTO intervals (run_id, idx, start_ns, length_ns, requests, sent, responses, ok, \
         bytes_in, bytes_out, sent_late_beyond_interval, waited_for_connection, connections_opened, \
         in_flight, connections_open, errors, status_codes, corrected, service, first_byte, lateness, \
         corrected_p50_ns, corrected_p99_ns, corrected_max_ns) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, \
         $19, $20, $21, $22, $23, $24) ON CONFLICT DO NOTHING",
    )
    .bind(run_id)
    .bind(to_i64(s.index))
    .bind(interval.start_ns)
    .bind(interval.length_ns)
    .bind(to_i64(s.requests))
    .bind(to_i64(s.sent))
    .bind(to_i64(s.responses))
    .bind(to_i64(s.ok))
    .bind(to_i64(s.bytes_in))
    .bind(to_i64(s.bytes_out))
    .bind(to_i64(s.sent_late_beyond_interval))
    .bind(to_i64(s.waited_for_connection))
    .bind(to_i64(s.connections_opened))
    .bind(to_i64(s.in_flight))
    .bind(to_i64(s.connections_open))
    .bind(json(&errors))
    .bind(json(&s.status.to_map()))
    .bind(hdrlog::to_bytes(&s.corrected))
    .bind(hdrlog::to_bytes(&s.service))
    .bind(hdrlog::to_bytes(&s.first_byte))
    .bind(hdrlog::to_bytes(&s.lateness))
    .bind(percentile(0.5))
    .bind(percentile(0.99))
    .bind(if s.corrected.is_empty() { 0 } else { to_i64(s.corrected.max()) })
    .execute(conn)
    .await?;
    Ok(())
}

/// Inserts or updates a probe's description.
pub(crate) async fn upsert_probe(
    conn: &mut sqlx::AnyConnection,
    run_id: &str,
    probe: &ProbeMeta,
) -> Result<(), sqlx::Error> {
    sqlx::query("DELETE FROM probes WHERE run_id = $1 AND probe_idx = $2")
        .bind(run_id)
        .bind(i64::from(probe.index))
        .execute(&mut *conn)
        .await?;
    sqlx::query(
        "INSERT INTO probes (run_id, probe_idx, address, host, clock_offset_ns, clock_uncertainty_ns, wall_offset_ns) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(run_id)
    .bind(i64::from(probe.index))
    .bind(&probe.address)
    .bind(json(&probe.host))
    .bind(probe.clock.map(|c| c.offset_ns))
    .bind(probe.clock.map(|c| to_i64(c.uncertainty_ns)))
    .bind(probe.clock.map(|c| c.wall_offset_ns))
    .execute(conn)
    .await?;
    Ok(())
}

/// Inserts one probe record, unless the store has it already.
pub(crate) async fn insert_record(
    conn: &mut sqlx::AnyConnection,
    run_id: &str,
    probe: u32,
    record: &StoredRecord,
) -> Result<(), sqlx::Error> {
    use probe::protocol::Record;
    let (kind, mono, wall, total) = match &record.record {
        Record::Sample(s) => ("sample", s.mono_ns, s.wall_ns, s.total.as_ref()),
        Record::Event(e) => ("event", e.mono_ns, e.wall_ns, None),
    };
    sqlx::query(
        "INSERT INTO probe_records (run_id, probe_idx, seq, kind, t_ns, probe_mono_ns, wall_ns, \
         cpu_pct, rss_bytes, threads, fds, body) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) \
         ON CONFLICT DO NOTHING",
    )
    .bind(run_id)
    .bind(i64::from(probe))
    .bind(to_i64(record.seq))
    .bind(kind)
    .bind(record.t_ns)
    .bind(to_i64(mono))
    .bind(to_i64(wall))
    .bind(total.and_then(|t| t.cpu_pct))
    .bind(total.map(|t| to_i64(t.rss_bytes)))
    .bind(total.map(|t| to_i64(t.threads)))
    .bind(total.map(|t| to_i64(t.fds)))
    .bind(json(&record.record))
    .execute(conn)
    .await?;
    Ok(())
}

/// Inserts a gap, unless the store has it already.
pub(crate) async fn insert_gap(
    conn: &mut sqlx::AnyConnection,
    run_id: &str,
    probe: u32,
    gap: &StoredGap,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO probe_gaps (run_id, probe_idx, from_seq, to_seq, t_ns, reason) \
         SELECT $1, $2, $3, $4, $5, $6 WHERE NOT EXISTS (SELECT 1 FROM probe_gaps \
         WHERE run_id = $1 AND probe_idx = $2 AND from_seq = $3 AND t_ns = $5)",
    )
    .bind(run_id)
    .bind(i64::from(probe))
    .bind(to_i64(gap.from_seq))
    .bind(gap.to_seq.map(to_i64))
    .bind(gap.t_ns)
    .bind(redact::text(&gap.reason))
    .execute(conn)
    .await?;
    Ok(())
}

/// Marks the end of a run.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn finish_run(
    conn: &mut sqlx::AnyConnection,
    run_id: &str,
    status: RunStatus,
    stop_reason: Option<&str>,
    ended_at_ns: i64,
    summary: Option<&Summary>,
    warnings: &[String],
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE runs SET status = $2, stop_reason = $3, ended_at_ns = $4, summary = $5, warnings = $6 WHERE id = $1",
    )
    .bind(run_id)
    .bind(status.as_str())
    .bind(stop_reason.map(redact::text))
    .bind(ended_at_ns)
    .bind(summary.map(|s| {
        json(&Summary {
            target: redact::text(&s.target),
            stopped: s.stopped.as_deref().map(redact::text),
            warnings: s.warnings.iter().map(|w| redact::text(w)).collect(),
            ..s.clone()
        })
    }))
    .bind(json(&warnings.iter().map(|w| redact::text(w)).collect::<Vec<_>>()))
    .execute(conn)
    .await?;
    Ok(())
}

/// Moves a probe's records onto the run's timeline with the final clock offset:
/// `t = probe_mono − offset − time zero`.
pub(crate) async fn realign_probe(
    conn: &mut sqlx::AnyConnection,
    run_id: &str,
    probe: u32,
    offset_ns: i64,
    zero_mono_ns: i64,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE probe_records SET t_ns = probe_mono_ns - $3 - $4 WHERE run_id = $1 AND probe_idx = $2",
    )
    .bind(run_id)
    .bind(i64::from(probe))
    .bind(offset_ns)
    .bind(zero_mono_ns)
    .execute(conn)
    .await?;
    Ok(())
}
