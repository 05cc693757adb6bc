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

/// Why the leases' directory cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum LeaseDirError {
    #[error("cannot make {}: {source}", .dir.display())]
    Make {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not a directory of this user's that only it may write: remove it, or set XDG_RUNTIME_DIR to one", .0.display())]
    NotOwn(PathBuf),
}

/// Makes `dir` if it is not there, and checks it is this user's and that no one else may
/// write it (another user could have made it first, in a shared TMPDIR, to plant links).
pub fn ensure(dir: &Path) -> Result<(), LeaseDirError> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    let uid = rustix::process::geteuid().as_raw();
    let _ = std::fs::DirBuilder::new().mode(0o700).create(dir);
    let meta = std::fs::symlink_metadata(dir).map_err(|source| LeaseDirError::Make {
        dir: dir.to_path_buf(),
        source,
    })?;
    if !meta.is_dir() || meta.uid() != uid || meta.permissions().mode() & 0o022 != 0 {
        return Err(LeaseDirError::NotOwn(dir.to_path_buf()));
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
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Left {
    /// The runner's PID.
    pub runner: i32,
    /// Each group found with processes still running, and how many.
    pub ended: Vec<(String, usize)>,
    /// Paths removed.
    pub removed: Vec<PathBuf>,
    /// Processes found in a group's process group that could not be proven the group's (its
    /// leader gone, so the group's number may be a stranger's now), left running: by group,
    /// their PIDs.
    pub unproven: Vec<(String, Vec<i32>)>,
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
        )?;
        for (name, pids) in &self.unproven {
            let pids: Vec<String> = pids.iter().map(i32::to_string).collect();
            write!(
                f,
                "; processes {} in the process group of {name} were left running: its leader is gone, so they cannot be told from a stranger's that got its number (end them yourself if they are yours)",
                pids.join(", ")
            )?;
        }
        Ok(())
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
        if !left.ended.is_empty() || !left.removed.is_empty() || !left.unproven.is_empty() {
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
                    ..Left::default()
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
        ..Left::default()
    };
    for group in lease.groups.values() {
        let ended = end_group(group, Some(lease.runner), Duration::from_secs(5));
        if ended.found > 0 {
            left.ended.push((group.name.clone(), ended.found));
        }
        if !ended.unproven.is_empty() {
            left.unproven.push((group.name.clone(), ended.unproven));
        }
        for path in &group.paths {
            if remove_path(path) {
                left.removed.push(path.clone());
            }
        }
    }
    if let Some(dir) = lease
        .cgroup_dir
        .as_ref()
        .filter(|d| names_runner(d, lease.runner))
    {
        crate::cgroup::kill_and_remove(dir, Duration::from_secs(5));
    }
    left
}

/// What ending a group came to.
#[derive(Debug, Default)]
pub(crate) struct Ended {
    /// Processes killed.
    pub found: usize,
    /// Processes of its process group left running, not provably its own.
    pub unproven: Vec<i32>,
}

/// Kills a group's processes: its cgroups' (named for its runner: a cgroup is proof), those it
/// recorded (each only if still the one recorded), and its process group's. A process group's
/// number cannot be handed out again while any process is in it, so while its leader (the
/// recorded one, a zombie included) holds it, every member is the group's. Once the leader is
/// gone, the group may have emptied and its number gone to a stranger's group since: a sweep
/// of a dead runner's (`runner` given) then leaves the members it cannot prove its own, and
/// says so. A live runner's own group, ended as it ends, is killed whole.
pub(crate) fn end_group(group: &GroupRecord, runner: Option<Identity>, within: Duration) -> Ended {
    let mut ended = Ended::default();
    for dir in &group.cgroups {
        if runner.is_none_or(|r| names_runner(dir, r)) {
            ended.found += crate::cgroup::kill_and_remove(dir, within);
        }
    }
    let mut others: Vec<Identity> = group.processes.clone();
    if let Some(leader) = group.leader {
        let members = in_process_group(leader.pid, leader.start_ticks);
        if runner.is_none() || leader.holds_its_pid() {
            others.extend(members);
        } else {
            others.extend(members.iter().filter(|m| group.processes.contains(m)));
            ended.unproven = members
                .iter()
                .filter(|m| !group.processes.contains(m))
                .map(|m| m.pid)
                .collect();
        }
    }
    others.sort_by_key(|p| p.pid);
    others.dedup();
    for p in &others {
        if p.signal(rustix::process::Signal::KILL) {
            ended.found += 1;
        }
    }
    ended
}

/// Whether a cgroup's path is one a runner makes (`…/runner-PID-START/…`, or a v1 hierarchy's
/// `showdown-PID-START-…`): a lease names no other cgroup to kill.
fn names_runner(dir: &Path, runner: Identity) -> bool {
    let (pid, start) = (runner.pid, runner.start_ticks);
    dir.iter().any(|part| {
        part.to_str().is_some_and(|p| {
            p == format!("runner-{pid}-{start}")
                || p.starts_with(&format!("showdown-{pid}-{start}-"))
        })
    })
}

/// Removes a file or a directory tree; true if there was one.
fn remove_path(path: &Path) -> bool {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path).is_ok(),
        Ok(_) => std::fs::remove_file(path).is_ok(),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    /// A dead runner's lease naming one group led by `leader`, in a directory of its own.
    fn lease_of(leader: Identity) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let runner = Identity {
            pid: i32::MAX - 1,
            start_ticks: 1,
        };
        let lease = Lease {
            runner,
            cgroup_dir: None,
            groups: BTreeMap::from([(
                0,
                GroupRecord {
                    name: "target".into(),
                    leader: Some(leader),
                    ..Default::default()
                },
            )]),
        };
        lease.save(dir.path()).unwrap();
        dir
    }

    #[test]
    fn a_sweep_kills_a_process_group_only_while_its_recorded_leader_holds_the_number() {
        // A stranger's group, led by a process whose PID a dead runner's lease recorded for an
        // earlier process (started a tick before it): the number was handed out again.
        let mut stranger = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let pid = stranger.id() as i32;
        let now = Identity::of(pid).unwrap();
        let reused = Identity {
            pid,
            start_ticks: now.start_ticks.saturating_sub(1),
        };
        let dir = lease_of(reused);
        let swept = sweep_in(dir.path(), None);
        assert!(now.alive(), "a stranger's group was killed: {swept:?}");
        let left = &swept.left;
        assert!(
            left.iter()
                .any(|l| l.unproven == [("target".to_string(), vec![pid])]),
            "the sweep says what it left: {left:?}"
        );
        assert!(left[0].to_string().contains("left running"), "{}", left[0]);
        // The same group with its leader as recorded is the runner's, and is ended.
        let dir = lease_of(now);
        sweep_in(dir.path(), None);
        let status = stranger.wait().unwrap();
        assert!(!status.success(), "the recorded leader's group was ended");
    }

    #[test]
    fn a_lease_names_no_cgroup_but_its_runners() {
        let runner = Identity {
            pid: 42,
            start_ticks: 7,
        };
        assert!(names_runner(
            Path::new("/sys/fs/cgroup/showdown/runner-42-7/3-target"),
            runner
        ));
        assert!(names_runner(
            Path::new("/sys/fs/cgroup/cpu/showdown-42-7-3-target"),
            runner
        ));
        for other in [
            "/sys/fs/cgroup/user.slice",
            "/sys/fs/cgroup/showdown/runner-42-70/3-target",
            "/sys/fs/cgroup/cpu/showdown-42-77-3-target",
        ] {
            assert!(!names_runner(Path::new(other), runner), "{other}");
        }
    }
}
