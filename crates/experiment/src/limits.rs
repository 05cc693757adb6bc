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

/// Why a target is not held to its size (the run says it, and pins the CPUs only).
#[derive(Debug, thiserror::Error)]
enum HoldError {
    #[error(transparent)]
    Controllers(#[from] custody::ControllerError),
    #[error("cannot write {value} to {}: {source}", .path.display())]
    Write {
        path: PathBuf,
        value: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot create {}: {source}", .dir.display())]
    Create {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Neither hierarchy would do.
    #[error("{v2}; {v1}")]
    Neither {
        v2: Box<HoldError>,
        v1: Box<HoldError>,
    },
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

/// The cgroups holding a target to its size: removed when dropped (the target stopped and its
/// group ended before).
#[derive(Debug, Default)]
pub struct Held {
    /// What holds the target, for the run's labels and the page: e.g. `cgroup v1: 1 CPU quota,
    /// memory 1.0 GiB`, or why nothing does.
    pub description: String,
    /// v1 cgroups made for it (a v2 one is its group's own, removed with the group).
    dirs: Vec<PathBuf>,
    held: bool,
}

impl Held {
    /// Sets the limits asked for on `group`, before its first process starts, so that it and
    /// every process it forks are held from the start: in the group's own cgroup v2 where that
    /// hierarchy has the `cpu` and `memory` controllers, else in cgroups of the v1 `cpu` and
    /// `memory` hierarchies that the process joins with the group's.
    pub fn prepare(group: &mut custody::Group, cpus: Option<f64>, memory: Option<u64>) -> Held {
        if cpus.is_none() && memory.is_none() {
            return Held::default();
        }
        let asked = describe(cpus, memory);
        let v2 = group
            .with_controllers(&["cpu", "memory"])
            .map_err(HoldError::from)
            .and_then(|dir| apply_v2(&dir, cpus, memory).map(|()| ("cgroup v2", Vec::new())));
        let result = match v2 {
            Ok(done) => Ok(done),
            Err(v2_why)
                if PathBuf::from("/sys/fs/cgroup/cpu").is_dir()
                    && PathBuf::from("/sys/fs/cgroup/memory").is_dir() =>
            {
                apply_v1(&group.unique_name(), cpus, memory)
                    .map(|dirs| ("cgroup v1", dirs))
                    .map_err(|v1_why| HoldError::Neither {
                        v2: Box::new(v2_why),
                        v1: Box::new(v1_why),
                    })
            }
            Err(v2_why) => Err(v2_why),
        };
        match result {
            Ok((kind, dirs)) => {
                for dir in &dirs {
                    group.join_also(dir.clone());
                }
                Held {
                    description: format!("{kind}: {asked}"),
                    dirs,
                    held: true,
                }
            }
            Err(why) => Held {
                description: format!("not held to {asked} ({why}): CPU pinning only"),
                dirs: Vec::new(),
                held: false,
            },
        }
    }

    /// Whether a cgroup holds the target.
    pub fn is_held(&self) -> bool {
        self.held
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

fn write(path: PathBuf, value: String) -> Result<(), HoldError> {
    match std::fs::write(&path, &value) {
        Ok(()) => Ok(()),
        Err(source) => Err(HoldError::Write {
            path,
            value,
            source,
        }),
    }
}

fn apply_v2(
    dir: &std::path::Path,
    cpus: Option<f64>,
    memory: Option<u64>,
) -> Result<(), HoldError> {
    if let Some(c) = cpus {
        write(
            dir.join("cpu.max"),
            format!("{} {PERIOD_US}", (c * PERIOD_US as f64) as u64),
        )?;
    }
    if let Some(m) = memory {
        write(dir.join("memory.max"), m.to_string())?;
    }
    Ok(())
}

fn apply_v1(name: &str, cpus: Option<f64>, memory: Option<u64>) -> Result<Vec<PathBuf>, HoldError> {
    let mut dirs = Vec::new();
    let made = |dir: &PathBuf, dirs: &mut Vec<PathBuf>| {
        std::fs::create_dir_all(dir)
            .map(|()| dirs.push(dir.clone()))
            .map_err(|source| HoldError::Create {
                dir: dir.clone(),
                source,
            })
    };
    let result = (|| {
        if let Some(c) = cpus {
            let dir = PathBuf::from("/sys/fs/cgroup/cpu").join(name);
            made(&dir, &mut dirs)?;
            write(dir.join("cpu.cfs_period_us"), PERIOD_US.to_string())?;
            write(
                dir.join("cpu.cfs_quota_us"),
                ((c * PERIOD_US as f64) as u64).to_string(),
            )?;
        }
        if let Some(m) = memory {
            let dir = PathBuf::from("/sys/fs/cgroup/memory").join(name);
            made(&dir, &mut dirs)?;
            write(dir.join("memory.limit_in_bytes"), m.to_string())?;
        }
        Ok(())
    })();
    match result {
        Ok(()) => Ok(dirs),
        Err(why) => {
            for dir in &dirs {
                let _ = std::fs::remove_dir(dir);
            }
            Err(why)
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        // A cgroup can be removed once empty; the target's group was ended before this.
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
