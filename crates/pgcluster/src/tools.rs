//! PostgreSQL's programs, found on `PATH` or in Debian's `/usr/lib/postgresql/VERSION/bin`
//! (the newest version), and run as the `postgres` user when this process is root.

use std::path::PathBuf;
use std::process::{Command, Output};

use crate::Error;

/// The path of a PostgreSQL program (`initdb`, `pg_ctl`, `psql`).
pub fn find(name: &'static str) -> Result<PathBuf, Error> {
    if let Some(path) = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    }) {
        return Ok(path);
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|dir| {
            dir.flatten()
                .filter_map(|e| {
                    let version = e.file_name().to_str()?.parse().ok()?;
                    let path = e.path().join("bin").join(name);
                    path.is_file().then_some((version, path))
                })
                .collect()
        })
        .unwrap_or_default();
    versions.sort();
    versions
        .pop()
        .map(|(_, path)| path)
        .ok_or(Error::NotInstalled(name))
}

/// Whether this process runs as root, from `/proc/self/status`.
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("Uid:"))?;
            line.split_whitespace().nth(2)?.parse::<u32>().ok()
        })
        == Some(0)
}

/// Whether the `postgres` user exists.
fn postgres_user_exists() -> bool {
    std::fs::read_to_string("/etc/passwd")
        .map(|p| p.lines().any(|l| l.starts_with("postgres:")))
        .unwrap_or(false)
}

/// A command for `program`, wrapped in `runuser -u postgres --` when we are root, with an
/// environment of its own: the search path, the locale and the time zone of ours, nothing else
/// (the caller's store URL, headers or cloud keys would otherwise sit in every backend's
/// `/proc/PID/environ`).
pub fn command(program: &std::path::Path) -> Result<Command, Error> {
    let mut c = if is_root() {
        if !postgres_user_exists() {
            return Err(Error::NoPostgresUser);
        }
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    };
    clean_env(&mut c);
    Ok(c)
}

/// Gives `c` only `PATH`, `TZ`, `TMPDIR`, `LANG` and the `LC_*` of this process.
fn clean_env(c: &mut Command) {
    c.env_clear();
    c.envs(std::env::vars_os().filter(|(name, _)| {
        name.to_str().is_some_and(|n| {
            matches!(n, "PATH" | "TZ" | "TMPDIR" | "LANG" | "LANGUAGE") || n.starts_with("LC_")
        })
    }));
}

/// As [`command`], on the CPUs of `cpus` (a `taskset` list) when given: the processes it
/// starts inherit them.
pub fn command_on(program: &std::path::Path, cpus: Option<&str>) -> Result<Command, Error> {
    let inner = command(program)?;
    let Some(cpus) = cpus else {
        return Ok(inner);
    };
    let mut c = Command::new("taskset");
    c.args(["-c", cpus])
        .arg(inner.get_program())
        .args(inner.get_args());
    clean_env(&mut c);
    Ok(c)
}

/// Runs a command to its end; an exit other than 0 is an error carrying its output.
pub fn run(mut command: Command, what: &str) -> Result<Output, Error> {
    let output = command.output().map_err(|source| Error::Io {
        what: what.to_string(),
        source,
    })?;
    if output.status.success() {
        return Ok(output);
    }
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    Err(Error::Failed {
        what: what.to_string(),
        output: text.split_whitespace().collect::<Vec<_>>().join(" "),
    })
}
