//! Opening a store, and saying in one line why one cannot be used.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::any::AnyPoolOptions;
use sqlx::AnyPool;
use thiserror::Error;

/// The store used when none is named.
pub const DEFAULT_URL: &str = "sqlite://results/showdown.db";

/// The schema, embedded in the binary and applied on open.
static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// How often a migration that another process applied first is read again (SQLite), and how
/// long apart.
const MIGRATION_TRIES: u32 = 10;
const MIGRATION_RETRY: Duration = Duration::from_millis(100);

/// Brings the store's tables up to date. Two processes opening one new SQLite file at once (an
/// experiment's runner and `loadgen runs`, a test reading the store it is writing, guns) both
/// read it unmigrated, and the second's `CREATE TABLE` then fails on the first's table ("table
/// searches already exists"): sqlx's migrator takes no lock on SQLite (it does on PostgreSQL).
/// Read again once the first committed, what it applied is applied, and the rest runs.
async fn migrate(pool: &AnyPool, url: &str, sqlite: bool) -> Result<(), StoreError> {
    let mut tries = 1;
    loop {
        match MIGRATOR.run(pool).await {
            Ok(()) => return Ok(()),
            Err(sqlx::migrate::MigrateError::ExecuteMigration(..))
                if sqlite && tries < MIGRATION_TRIES =>
            {
                tries += 1;
                tokio::time::sleep(MIGRATION_RETRY).await;
            }
            Err(source) => {
                return Err(StoreError::Migrate {
                    url: redact::text(url),
                    source,
                })
            }
        }
    }
}

/// What went wrong with the store; each message says where to look.
#[derive(Debug, Error)]
pub enum StoreError {
    #[error("{url:?} is not a store URL: use sqlite://PATH or postgres://USER@HOST/DATABASE")]
    BadUrl { url: String },
    #[error("cannot create the store's file {path}: {source}")]
    File {
        path: String,
        #[source]
        source: std::io::Error,
    },
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
    pub(super) pool: AnyPool,
    pub(super) url: String,
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

/// A SQLite store's directory and file, made where missing: a store's runs are its owner's
/// (a URL, a header or a token a run named may be in them), so a directory made for it is
/// theirs alone (0700), as is a file made new (0600, before SQLite makes it with the umask's
/// mode; its -wal and -shm take the main file's; an empty file is a store SQLite starts).
fn make_sqlite_file(url: &str) -> Result<(), StoreError> {
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
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|source| StoreError::Directory {
                path: path.clone(),
                source,
            })?;
    }
    let file = Path::new(&path);
    if std::fs::symlink_metadata(file).is_err()
        && !path.starts_with(':')
        && !url.contains("mode=ro")
    {
        use std::os::unix::fs::OpenOptionsExt;
        let made = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(file);
        if let Err(source) = made {
            if source.kind() != std::io::ErrorKind::AlreadyExists {
                return Err(StoreError::File { path, source });
            }
        }
    }
    Ok(())
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
            make_sqlite_file(url)?;
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
        migrate(&pool, url, sqlite).await?;
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

    /// Says so when `e` is the disk under a SQLite store being full: how much is free and what to do.
    pub fn disk_full(&self, e: &sqlx::Error) -> Option<String> {
        disk_full(&self.url, e)
    }
}
