//! One throwaway cluster's life: `initdb` into a temporary directory, the server on a free
//! port with its socket in that directory, stop and start again (the tests of a database that
//! goes away), SQL through `psql`, and removal when dropped.
//!
//! Nobody else on the machine may use it: every connection, over TCP and the Unix socket,
//! needs the superuser's password (SCRAM-SHA-256), drawn at random for each cluster and given
//! to `initdb` in a file of mode 0600 that is removed once read. Only its URL carries it (pass
//! that to children in their environment, never on a command line); `psql` gets it through
//! `PGPASSWORD`.

use std::net::{IpAddr, Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{tools, Error};

/// How to start a cluster.
#[derive(Debug, Clone)]
pub struct Options {
    /// The address it listens on (127.0.0.1 unless another host must reach it).
    pub listen: IpAddr,
    /// The port; `None` takes a free one.
    pub port: Option<u16>,
    /// `max_connections`: a pool of 60 per target, and the tests' own connections.
    pub max_connections: u32,
    /// Further `-c NAME=VALUE` settings of the server.
    pub settings: Vec<(String, String)>,
    /// A `taskset` CPU list the server runs on (its processes inherit it); `None` leaves it
    /// where this process may run.
    pub cpus: Option<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            listen: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: None,
            max_connections: 300,
            settings: Vec::new(),
            cpus: None,
        }
    }
}

/// A running (or stopped) throwaway cluster; dropping it stops the server at once and removes
/// its directory.
#[derive(Debug)]
pub struct Cluster {
    dir: tempfile::TempDir,
    data: PathBuf,
    listen: IpAddr,
    port: u16,
    options: String,
    pg_ctl: PathBuf,
    psql: PathBuf,
    running: bool,
    /// The superuser's password, in the URL only.
    password: String,
    cpus: Option<String>,
    /// Its processes (the postmaster starts a session of its own) and its directory.
    group: custody::Group,
}

/// `text` as one word of a POSIX shell: in single quotes, a quote of its own closed, escaped and
/// opened again.
fn shell_word(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

impl Cluster {
    /// Creates a cluster and starts its server, trying another free port if the first one was
    /// taken meanwhile.
    pub fn start(options: &Options) -> Result<Cluster, Error> {
        let initdb = tools::find("initdb")?;
        let pg_ctl = tools::find("pg_ctl")?;
        let psql = tools::find("psql")?;
        let dir = tempfile::Builder::new()
            .prefix("showdown-pg-")
            .tempdir()
            .map_err(|source| Error::Io {
                what: "create a directory for PostgreSQL".into(),
                source,
            })?;
        if tools::is_root() {
            let mut chown = Command::new("chown");
            chown.arg("postgres:").arg(dir.path());
            tools::command(Path::new("true"))?; // fails early, naming the fix, without the user
            tools::run(chown, "give the cluster's directory to the postgres user")?;
        }
        let mut group = custody::Group::new("postgres");
        group.remove_with(dir.path().to_path_buf());
        let data = dir.path().join("data");
        let password = Cluster::init_data(&initdb, dir.path(), &data, &group)?;
        let cluster = Cluster {
            data,
            listen: options.listen,
            port: 0,
            options: String::new(),
            pg_ctl,
            psql,
            running: false,
            password,
            cpus: options.cpus.clone(),
            dir,
            group,
        };
        cluster.start_first(options)
    }

    /// `initdb` into `data`, the superuser's password (returned) given to it in a file of mode
    /// 0600 in `dir` that is removed once read.
    fn init_data(
        initdb: &Path,
        dir: &Path,
        data: &Path,
        group: &custody::Group,
    ) -> Result<String, Error> {
        let password = random_password()?;
        let pwfile = dir.join("pwfile");
        write_private(&pwfile, &password)?;
        let mut init = tools::command(initdb)?;
        init.arg("-D")
            .arg(data)
            .args([
                "-A",
                "scram-sha-256",
                "-U",
                "postgres",
                "--no-sync",
                "-E",
                "UTF8",
            ])
            .arg(format!("--pwfile={}", pwfile.display()));
        group.hold(&mut init);
        let initialized = tools::run(init, "initdb");
        let _ = std::fs::remove_file(&pwfile);
        initialized?;
        Ok(password)
    }

    /// The new cluster's server started on `options.port`, or on a free port: another free one
    /// tried if that was taken meanwhile, three in all.
    fn start_first(mut self, options: &Options) -> Result<Cluster, Error> {
        let mut attempts = 0;
        loop {
            attempts += 1;
            self.port = match options.port {
                Some(port) => port,
                None => free_port(options.listen)?,
            };
            self.options = self.server_options(options);
            match self.start_again() {
                Ok(()) => return Ok(self),
                // Another process may have taken the free port meanwhile.
                Err(_) if options.port.is_none() && attempts < 3 => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// The server's settings for pg_ctl's `-o`, on the cluster's port and socket directory.
    fn server_options(&self, options: &Options) -> String {
        // pg_ctl hands `-o` to a shell: each word quoted, so that a TMPDIR with a space
        // (or a setting's value) stays one argument.
        let mut settings = format!(
            "-p {} -k {} -c listen_addresses={} -c fsync=off -c max_connections={}",
            self.port,
            shell_word(&self.dir.path().display().to_string()),
            options.listen,
            options.max_connections
        );
        for (name, value) in &options.settings {
            settings.push_str(&format!(" -c {}", shell_word(&format!("{name}={value}"))));
        }
        settings
    }

    /// The server's URL for `database`.
    pub fn url(&self, database: &str) -> String {
        let host = match self.listen {
            IpAddr::V6(v6) => format!("[{v6}]"),
            v4 => v4.to_string(),
        };
        format!(
            "postgres://postgres:{}@{host}:{}/{database}",
            self.password, self.port
        )
    }

    /// The server's URL for `database` without the password, to show.
    fn url_without_password(&self, database: &str) -> String {
        let host = match self.listen {
            IpAddr::V6(v6) => format!("[{v6}]"),
            v4 => v4.to_string(),
        };
        format!("postgres://postgres@{host}:{}/{database}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The directory that holds the data, the socket and the log.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn is_running(&self) -> bool {
        self.running
    }

    /// Stops the server (fast shutdown: open sessions are ended), keeping its data.
    pub fn stop(&mut self) -> Result<(), Error> {
        let mut stop = tools::command(&self.pg_ctl)?;
        stop.arg("-D")
            .arg(&self.data)
            .args(["-m", "fast", "-w", "stop"]);
        tools::run(stop, "stop PostgreSQL")?;
        self.running = false;
        Ok(())
    }

    /// Starts the server again, on the same port, with the same data.
    pub fn start_again(&mut self) -> Result<(), Error> {
        let mut start = tools::command_on(&self.pg_ctl, self.cpus.as_deref())?;
        start
            .arg("-D")
            .arg(&self.data)
            .arg("-o")
            .arg(&self.options)
            .arg("-l")
            .arg(self.dir.path().join("log"))
            .args(["-w", "-t", "30", "start"]);
        self.group.hold(&mut start);
        tools::run(start, "start PostgreSQL").map_err(|e| self.with_log(e))?;
        self.running = true;
        // The postmaster leaves pg_ctl's process group: named, so that it is ended with the
        // group even where no cgroup holds it.
        if let Some(postmaster) = self.postmaster() {
            self.group.also(postmaster);
        }
        Ok(())
    }

    /// The postmaster's PID (from `postmaster.pid`), while it runs.
    pub fn postmaster(&self) -> Option<i32> {
        std::fs::read_to_string(self.data.join("postmaster.pid"))
            .ok()
            .and_then(|s| s.lines().next()?.trim().parse::<i32>().ok())
    }

    /// The server's processes: the postmaster (from `postmaster.pid`) and its children.
    pub fn pids(&self) -> Vec<i32> {
        let Some(postmaster) = self.postmaster() else {
            return Vec::new();
        };
        let mut pids = vec![postmaster];
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<i32>().ok())
            else {
                continue;
            };
            let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            // Field 4, after the parenthesised name (which may hold spaces).
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<i32>().ok());
            if ppid == Some(postmaster) {
                pids.push(pid);
            }
        }
        pids
    }

    /// Freezes every process of the server (SIGSTOP): connections stay open and nothing
    /// answers, the way a database host that hangs looks from its clients.
    pub fn freeze(&self) {
        self.signal(rustix::process::Signal::STOP);
    }

    /// Lets a frozen server go on (SIGCONT).
    pub fn thaw(&self) {
        self.signal(rustix::process::Signal::CONT);
    }

    fn signal(&self, signal: rustix::process::Signal) {
        for pid in self.pids() {
            if let Some(pid) = rustix::process::Pid::from_raw(pid) {
                let _ = rustix::process::kill_process(pid, signal);
            }
        }
    }

    /// Runs SQL in `database` through `psql` (stopping at the first error) and returns what it
    /// printed, unaligned and without headers.
    pub fn psql(&self, database: &str, sql: &str) -> Result<String, Error> {
        let mut psql = Command::new(&self.psql);
        psql.args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d"])
            .arg(self.url_without_password(database))
            .arg("-c")
            .arg(sql)
            .env("PGPASSWORD", &self.password);
        let out = tools::run(psql, &format!("psql {sql:?}"))?;
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    /// Creates an empty database.
    pub fn create_database(&self, name: &str) -> Result<(), Error> {
        self.psql("postgres", &format!("CREATE DATABASE \"{name}\""))
            .map(|_| ())
    }

    /// The last lines of the server's log, to explain a failure.
    pub fn log_tail(&self, lines: usize) -> String {
        let log = std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default();
        let all: Vec<&str> = log.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    fn with_log(&self, error: Error) -> Error {
        match error {
            Error::Failed { what, output } => Error::Failed {
                what,
                output: format!("{output} | log: {}", self.log_tail(5).replace('\n', " | ")),
            },
            other => other,
        }
    }
}

/// 32 random hexadecimal digits, from the kernel's generator.
fn random_password() -> Result<String, Error> {
    let mut bytes = [0u8; 16];
    rustix::rand::getrandom(&mut bytes, rustix::rand::GetRandomFlags::empty()).map_err(|e| {
        Error::Io {
            what: "draw a password for PostgreSQL".into(),
            source: e.into(),
        }
    })?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Writes `text` to a new file that only its owner may read (the `postgres` user's when we are
/// root, for `initdb` to read it).
fn write_private(path: &Path, text: &str) -> Result<(), Error> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let io = |source| Error::Io {
        what: format!("write {}", path.display()),
        source,
    };
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(io)?;
    file.write_all(text.as_bytes()).map_err(io)?;
    if tools::is_root() {
        let mut chown = Command::new("chown");
        chown.arg("postgres:").arg(path);
        tools::run(chown, "give the password file to the postgres user")?;
    }
    Ok(())
}

fn free_port(listen: IpAddr) -> Result<u16, Error> {
    TcpListener::bind((listen, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|source| Error::Io {
            what: format!("find a free port on {listen}"),
            source,
        })
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if self.running {
            self.thaw();
            if let Ok(mut stop) = tools::command(&self.pg_ctl) {
                stop.arg("-D")
                    .arg(&self.data)
                    .args(["-m", "immediate", "-w", "stop"]);
                let _ = stop.output();
            }
        }
        // Whatever is left of it (a server that would not stop), and its directory.
        self.group.end();
    }
}
