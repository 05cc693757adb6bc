//! The lease: one file per runner (`runner-PID-START.json` in the runtime directory) naming what
//! it started and must end (each group's cgroups, leader and other processes) and the paths it
//! must remove (a throwaway PostgreSQL's directory). It is written again, whole and atomically
//! (a new file renamed over the old), whenever a group comes or goes, and removed when the
//! last one goes.
//!
//! A runner killed outright (SIGKILL, the machine's OOM killer) cannot end what it started.
//! The next runner [`sweep`]s: for each lease whose runner is gone (no process with its PID
//! and start time), it ends the processes that are still the ones recorded, removes the
//! cgroups and paths, and removes the lease, saying what it found.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::identity::{in_process_group, Identity};

/// What one group holds, as kept in the lease.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct GroupRecord {
    pub name: String,
    /// Its cgroups (ours, and v1 ones holding its limits).
    #[serde(default)]
    pub cgroups: Vec<PathBuf>,
    /// The process started first, whose process group the others are in unless they left it.
    #[serde(default)]
    pub leader: Option<Identity>,
    /// Processes found outside it (a database server that started a session of its own).
    #[serde(default)]
    pub processes: Vec<Identity>,
    /// Files and directories to remove with it.
    #[serde(default)]
    pub paths: Vec<PathBuf>,
}

/// A runner's lease.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Lease {
    pub runner: Identity,
    /// Its runners' cgroup directory (the parent of its groups' cgroups), if it made one.
    #[serde(default)]
    pub cgroup_dir: Option<PathBuf>,
    #[serde(default)]
    pub groups: BTreeMap<u64, GroupRecord>,
}

/// Where leases are kept: `$XDG_RUNTIME_DIR/showdown`, else `TMPDIR/showdown-UID`. It is
/// made when a lease is written and removed when the last one goes, so that a run leaves
/// nothing in TMPDIR.
pub fn directory() -> PathBuf {
    let uid = rustix::process::geteuid().as_raw();
    match std::env::var_os("XDG_RUNTIME_DIR").filter(|d| Path::new(d).is_dir()) {
        Some(runtime) => PathBuf::from(runtime).join("showdown"),
        None => std::env::temp_dir().join(format!("showdown-{uid}")),
    }
}

/// Makes `dir` if it is not there, and checks it is this user's and that no one else may
/// write it (another user could have made it first, in a shared TMPDIR, to plant links).
pub fn ensure(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    let uid = rustix::process::geteuid().as_raw();
    let _ = std::fs::DirBuilder::new().mode(0o700).create(dir);
    let meta = std::fs::symlink_metadata(dir)
        .map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
    if !meta.is_dir() || meta.uid() != uid || meta.permissions().mode() & 0o022 != 0 {
        return Err(format!(
            "{} is not a directory of this user's that only it may write: remove it, or set XDG_RUNTIME_DIR to one",
            dir.display()
        ));
    }
    Ok(())
}

impl Lease {
    pub fn file_name(runner: &Identity) -> String {
        format!("runner-{}-{}.json", runner.pid, runner.start_ticks)
    }

    /// Writes the lease into `dir`, or removes it when it holds nothing (and `dir` with it
    /// when no other runner's lease is there).
    pub fn save(&self, dir: &Path) -> std::io::Result<()> {
        let path = dir.join(Self::file_name(&self.runner));
        if self.groups.is_empty() {
            let removed = match std::fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            };
            let _ = std::fs::remove_dir(dir);
            return removed;
        }
        ensure(dir).map_err(std::io::Error::other)?;
        let temporary = dir.join(format!(".{}.new", Self::file_name(&self.runner)));
        let text = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        std::fs::write(&temporary, text)?;
        std::fs::rename(&temporary, &path)
    }
}

/// What one dead runner had left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Left {
    /// The runner's PID.
    pub runner: i32,
    /// Each group found with processes still running, and how many.
    pub ended: Vec<(String, usize)>,
    /// Paths removed.
    pub removed: Vec<PathBuf>,
}

impl std::fmt::Display for Left {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts: Vec<String> = self
            .ended
            .iter()
            .map(|(name, n)| format!("{name} ({n} process{})", if *n == 1 { "" } else { "es" }))
            .collect();
        parts.extend(self.removed.iter().map(|p| p.display().to_string()));
        write!(
            f,
            "a runner that was killed (PID {}) had left {}: ended and removed",
            self.runner,
            parts.join(", ")
        )
    }
}

/// What a sweep found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Swept {
    /// The runners that had left something, and what.
    pub left: Vec<Left>,
    /// What could not be looked at (a lease that was not readable), in words.
    pub problems: Vec<String>,
}

/// Ends what runners that are gone left: the leases in `dir` whose runner is not alive, and
/// the cgroups under `cgroup_parent` named for runners that are not (their lease lost).
pub(crate) fn sweep_in(dir: &Path, cgroup_parent: Option<&Path>) -> Swept {
    let mut swept = Swept::default();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return swept;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !(name.starts_with("runner-") && name.ends_with(".json")) {
            continue;
        }
        let path = entry.path();
        let lease: Lease = match std::fs::read(&path)
            .map_err(|e| e.to_string())
            .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
        {
            Ok(lease) => lease,
            Err(e) => {
                swept.problems.push(format!(
                    "{} cannot be read ({e}): remove it",
                    path.display()
                ));
                continue;
            }
        };
        if lease.runner.alive() {
            continue;
        }
        let left = end(&lease);
        if !left.ended.is_empty() || !left.removed.is_empty() {
            swept.left.push(left);
        }
        let _ = std::fs::remove_file(&path);
    }
    // Only when empty: another runner's lease keeps it.
    let _ = std::fs::remove_dir(dir);
    if let Some(parent) = cgroup_parent {
        for (runner, dir) in runner_cgroups(parent) {
            if runner.alive() {
                continue;
            }
            let found = crate::cgroup::kill_and_remove(&dir, Duration::from_secs(5));
            if found > 0 {
                swept.left.push(Left {
                    runner: runner.pid,
                    ended: vec![(dir.display().to_string(), found)],
                    removed: Vec::new(),
                });
            }
        }
    }
    swept
}

/// The runners' cgroup directories under `parent`: `PID-START`.
fn runner_cgroups(parent: &Path) -> Vec<(Identity, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name();
            let (pid, start) = name.to_str()?.strip_prefix("runner-")?.split_once('-')?;
            let runner = Identity {
                pid: pid.parse().ok()?,
                start_ticks: start.parse().ok()?,
            };
            Some((runner, e.path()))
        })
        .collect()
}

/// Ends everything a dead runner's lease names.
fn end(lease: &Lease) -> Left {
    let mut left = Left {
        runner: lease.runner.pid,
        ended: Vec::new(),
        removed: Vec::new(),
    };
    for group in lease.groups.values() {
        let n = end_group(group, Duration::from_secs(5));
        if n > 0 {
            left.ended.push((group.name.clone(), n));
        }
        for path in &group.paths {
            if remove_path(path) {
                left.removed.push(path.clone());
            }
        }
    }
    if let Some(dir) = &lease.cgroup_dir {
        crate::cgroup::kill_and_remove(dir, Duration::from_secs(5));
    }
    left
}

/// Kills a group's processes (its cgroups', its process group's, the others it recorded, each
/// only if still the one recorded) and removes its cgroups; returns how many there were.
pub(crate) fn end_group(group: &GroupRecord, within: Duration) -> usize {
    let mut found = 0;
    for dir in &group.cgroups {
        found += crate::cgroup::kill_and_remove(dir, within);
    }
    let mut others: Vec<Identity> = group.processes.clone();
    if let Some(leader) = group.leader {
        others.extend(in_process_group(leader.pid, leader.start_ticks));
    }
    others.sort_by_key(|p| p.pid);
    others.dedup();
    for p in &others {
        if p.signal(rustix::process::Signal::KILL) {
            found += 1;
        }
    }
    found
}

/// Removes a file or a directory tree; true if there was one.
fn remove_path(path: &Path) -> bool {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path).is_ok(),
        Ok(_) => std::fs::remove_file(path).is_ok(),
        Err(_) => false,
    }
}
