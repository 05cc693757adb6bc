//! Holding a local target to a host size (the write-ups' 1-CPU, 1 GiB API host): a cgroup with
//! a CPU quota and a memory limit where the machine lets us make one (cgroup v2, or the v1
//! `cpu` and `memory` hierarchies), else nothing but the CPU pinning, and the run says which.

use std::path::PathBuf;

/// The CFS period the quota is a share of.
const PERIOD_US: u64 = 100_000;

/// A memory size that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    #[error("{0:?} is not a size: write e.g. \"1GiB\" or \"512MiB\"")]
    NotANumber(String),
    #[error("{text:?}: unknown unit {unit:?} (use KiB, MiB or GiB)")]
    Unit { text: String, unit: String },
}

/// `"1GiB"`, `"512MiB"`, `"1G"`, `"1000000"` → bytes.
pub fn parse_bytes(text: &str) -> Result<u64, SizeError> {
    let t = text.trim();
    let split = t
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let number: f64 = number
        .parse()
        .map_err(|_| SizeError::NotANumber(text.to_string()))?;
    let factor: u64 = match unit.trim() {
        "" | "B" => 1,
        "K" | "KiB" | "k" => 1 << 10,
        "M" | "MiB" => 1 << 20,
        "G" | "GiB" => 1 << 30,
        "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        other => {
            return Err(SizeError::Unit {
                text: text.to_string(),
                unit: other.to_string(),
            })
        }
    };
    Ok((number * factor as f64) as u64)
}

/// The cgroup a target was put in, removed when dropped (once its processes are gone).
#[derive(Debug, Default)]
pub struct Held {
    /// What holds the target, for the run's labels and the page: e.g. `cgroup v1: 1 CPU quota,
    /// memory 1.0 GiB`, or why nothing does.
    pub description: String,
    dirs: Vec<PathBuf>,
}

impl Held {
    /// Puts `pid` (just started, before it forks) in a new cgroup with the limits asked for.
    pub fn apply(pid: i32, cpus: Option<f64>, memory: Option<u64>, name: &str) -> Held {
        if cpus.is_none() && memory.is_none() {
            return Held::default();
        }
        let asked = describe(cpus, memory);
        let v2 = PathBuf::from("/sys/fs/cgroup");
        let result =
            if controllers_v2(&v2).is_some_and(|c| c.contains("cpu") && c.contains("memory")) {
                apply_v2(&v2.join(name), pid, cpus, memory).map(|dirs| ("cgroup v2", dirs))
            } else if PathBuf::from("/sys/fs/cgroup/cpu").is_dir()
                && PathBuf::from("/sys/fs/cgroup/memory").is_dir()
            {
                apply_v1(name, pid, cpus, memory).map(|dirs| ("cgroup v1", dirs))
            } else {
                Err("no cgroup with cpu and memory controllers here".into())
            };
        match result {
            Ok((kind, dirs)) => Held {
                description: format!("{kind}: {asked}"),
                dirs,
            },
            Err(why) => Held {
                description: format!("not held to {asked} ({why}): CPU pinning only"),
                dirs: Vec::new(),
            },
        }
    }

    /// Whether a cgroup holds the target.
    pub fn is_held(&self) -> bool {
        !self.dirs.is_empty()
    }
}

fn describe(cpus: Option<f64>, memory: Option<u64>) -> String {
    let mut parts = Vec::new();
    if let Some(c) = cpus {
        parts.push(format!("{c} CPU quota"));
    }
    if let Some(m) = memory {
        parts.push(format!("memory {:.1} GiB", m as f64 / (1u64 << 30) as f64));
    }
    parts.join(", ")
}

fn controllers_v2(root: &std::path::Path) -> Option<String> {
    let controllers = std::fs::read_to_string(root.join("cgroup.controllers")).ok()?;
    let subtree = std::fs::read_to_string(root.join("cgroup.subtree_control")).unwrap_or_default();
    // Enable what is available but not yet delegated to children.
    for c in ["cpu", "memory"] {
        if controllers.contains(c) && !subtree.contains(c) {
            let _ = std::fs::write(root.join("cgroup.subtree_control"), format!("+{c}"));
        }
    }
    std::fs::read_to_string(root.join("cgroup.subtree_control")).ok()
}

fn write(path: PathBuf, value: String) -> Result<(), String> {
    std::fs::write(&path, &value)
        .map_err(|e| format!("cannot write {value} to {}: {e}", path.display()))
}

fn apply_v2(
    dir: &std::path::Path,
    pid: i32,
    cpus: Option<f64>,
    memory: Option<u64>,
) -> Result<Vec<PathBuf>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let dirs = vec![dir.to_path_buf()];
    if let Some(c) = cpus {
        write(
            dir.join("cpu.max"),
            format!("{} {PERIOD_US}", (c * PERIOD_US as f64) as u64),
        )?;
    }
    if let Some(m) = memory {
        write(dir.join("memory.max"), m.to_string())?;
    }
    write(dir.join("cgroup.procs"), pid.to_string())?;
    Ok(dirs)
}

fn apply_v1(
    name: &str,
    pid: i32,
    cpus: Option<f64>,
    memory: Option<u64>,
) -> Result<Vec<PathBuf>, String> {
    let mut dirs = Vec::new();
    if let Some(c) = cpus {
        let dir = PathBuf::from("/sys/fs/cgroup/cpu").join(name);
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        write(dir.join("cpu.cfs_period_us"), PERIOD_US.to_string())?;
        write(
            dir.join("cpu.cfs_quota_us"),
            ((c * PERIOD_US as f64) as u64).to_string(),
        )?;
        write(dir.join("cgroup.procs"), pid.to_string())?;
        dirs.push(dir);
    }
    if let Some(m) = memory {
        let dir = PathBuf::from("/sys/fs/cgroup/memory").join(name);
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        write(dir.join("memory.limit_in_bytes"), m.to_string())?;
        write(dir.join("cgroup.procs"), pid.to_string())?;
        dirs.push(dir);
    }
    Ok(dirs)
}

impl Drop for Held {
    fn drop(&mut self) {
        // A cgroup can be removed once empty; the target was stopped before this.
        for dir in &self.dirs {
            for _ in 0..50 {
                if std::fs::remove_dir(dir).is_ok() || !dir.exists() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(parse_bytes("1GiB"), Ok(1 << 30));
        assert_eq!(parse_bytes("512MiB"), Ok(512 << 20));
        assert_eq!(parse_bytes("1.5G"), Ok(3 << 29));
        assert_eq!(parse_bytes("1000"), Ok(1000));
        assert!(parse_bytes("lots").unwrap_or_default() == 0);
        assert!(parse_bytes("1TB").is_err());
    }
}
