//! A cgroup v2 of our own, where the machine lets us make one: on the v2 hierarchy (mounted at
//! `/sys/fs/cgroup`, or at `/sys/fs/cgroup/unified` beside v1's), under `showdown/` at its
//! root when we are root, else under our own cgroup when it was delegated to us (it is ours,
//! and its `cgroup.subtree_control` is empty, so that processes may join its children).
//!
//! Nothing but membership is asked of it: every process a member forks is a member, whatever
//! process group or session it moves to, so a server that daemonizes cannot leave. Killing it
//! is `cgroup.kill` (Linux 5.14), or `SIGKILL` to each member until none is left.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Where the v2 hierarchy is mounted, from `/proc/self/mountinfo`.
pub(crate) fn v2_mount() -> Option<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    info.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        (right.split_whitespace().next()? == "cgroup2")
            .then(|| left.split_whitespace().nth(4).map(PathBuf::from))
            .flatten()
    })
}

/// This process's cgroup on the v2 hierarchy (`0::/PATH` in `/proc/self/cgroup`).
fn own_path() -> Option<String> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("0::"))
        .map(|p| p.trim_start_matches('/').to_string())
}

/// The directory our runners' cgroups go in, if the machine lets us make them.
pub(crate) fn parent() -> Option<PathBuf> {
    let mount = v2_mount()?;
    if rustix::process::geteuid().is_root() {
        let dir = mount.join("showdown");
        return (std::fs::create_dir_all(&dir).is_ok() && writable(&dir)).then_some(dir);
    }
    let own = mount.join(own_path()?);
    let delegated = writable(&own.join("cgroup.procs"))
        && writable(&own)
        && std::fs::read_to_string(own.join("cgroup.subtree_control"))
            .is_ok_and(|c| c.trim().is_empty());
    delegated.then_some(own)
}

fn writable(path: &Path) -> bool {
    rustix::fs::access(path, rustix::fs::Access::WRITE_OK).is_ok()
}

/// The processes in a cgroup (v1 or v2), by `cgroup.procs`.
pub(crate) fn members(dir: &Path) -> Vec<i32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

/// Every cgroup at and below `dir`, deepest first (the order they can be removed in).
fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                out.extend(tree(&e.path()));
            }
        }
    }
    out.push(dir.to_path_buf());
    out
}

/// Kills every process in `dir` and its children, waits (up to `within`) until they are gone,
/// and removes the cgroups. Returns how many processes it found.
pub(crate) fn kill_and_remove(dir: &Path, within: Duration) -> usize {
    if !dir.is_dir() {
        return 0;
    }
    let cgroups = tree(dir);
    let found: usize = cgroups.iter().map(|d| members(d).len()).sum();
    let kill_file = dir.join("cgroup.kill");
    let deadline = Instant::now() + within;
    loop {
        let left = all_members(dir);
        if left.is_empty() || Instant::now() >= deadline {
            break;
        }
        if std::fs::write(&kill_file, "1").is_err() {
            // Before Linux 5.14 (or a v1 cgroup): one by one, until a fork race is won.
            for pid in left
                .iter()
                .filter_map(|&p| rustix::process::Pid::from_raw(p))
            {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    for d in &cgroups {
        // Empty once its last member has been reaped by its parent: a moment after the kill.
        for _ in 0..100 {
            if std::fs::remove_dir(d).is_ok() || !d.exists() {
                break;
            }
            if Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    found
}

/// The processes in `dir` and the cgroups below it.
pub(crate) fn all_members(dir: &Path) -> Vec<i32> {
    tree(dir).iter().flat_map(|d| members(d)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_v2_mount_is_found_where_the_kernel_has_one() {
        let has_v2 = std::fs::read_to_string("/proc/self/mountinfo")
            .is_ok_and(|m| m.contains(" - cgroup2 "));
        assert_eq!(v2_mount().is_some(), has_v2);
        if let Some(m) = v2_mount() {
            assert!(m.join("cgroup.procs").exists(), "{}", m.display());
        }
    }
}
