//! The CPU controller of the target's cgroup: its quota, how often the quota ran out
//! (throttling), and its CPU pressure. A server held to half a CPU reads "50 %" busy while
//! every period ends throttled: saturation its own CPU figure cannot show.
//!
//! The cgroup is the one `/proc/PID/cgroup` names for the root process: cgroup v2's `0::PATH`
//! under `/sys/fs/cgroup` (`cpu.stat`: `nr_periods`, `nr_throttled`, `throttled_usec`;
//! `cpu.max`; `cpu.pressure`), or v1's `cpu` controller line under `/sys/fs/cgroup/cpu,cpuacct`
//! or `/sys/fs/cgroup/cpu` (`cpu.stat`: `throttled_time` in ns; `cpu.cfs_quota_us`,
//! `cpu.cfs_period_us`). Paths are read as this probe's mount namespace sees them.

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::collect::{pread_all, ProcRoot};
use crate::sample::CgroupCpu;

/// Where cgroup file systems are mounted.
const CGROUP_ROOT: &str = "/sys/fs/cgroup";

/// The cgroup's files, kept open and re-read at each full tick.
#[derive(Debug)]
pub struct CgroupFiles {
    path: String,
    v1: bool,
    stat: File,
    quota: Quota,
    pressure: Option<File>,
    buf: Vec<u8>,
}

#[derive(Debug)]
enum Quota {
    /// `cpu.max`: "QUOTA PERIOD" or "max PERIOD".
    V2(Option<File>),
    /// `cpu.cfs_quota_us` (-1: unlimited) and `cpu.cfs_period_us`.
    V1(Option<(File, File)>),
}

/// The cgroup of `pid` that holds its CPU controller: (path as named, directory, v1?).
pub fn cpu_cgroup(cgroup_file: &str, mount: &Path) -> Option<(String, PathBuf, bool)> {
    // A v1 `cpu` controller, where there is one, is the one that throttles.
    for line in cgroup_file.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        if controllers.split(',').any(|c| c == "cpu") {
            let relative = path.trim_start_matches('/');
            for dir in ["cpu,cpuacct", "cpu"] {
                let full = mount.join(dir).join(relative);
                if full.join("cpu.stat").exists() {
                    return Some((path.to_string(), full, true));
                }
            }
        }
    }
    let path = cgroup_file
        .lines()
        .find_map(|line| line.strip_prefix("0::"))?;
    let full = mount.join(path.trim_start_matches('/'));
    full.join("cpu.stat")
        .exists()
        .then(|| (path.to_string(), full, false))
}

impl CgroupFiles {
    /// The CPU controller's files of `pid`'s cgroup, or `None` where there is none to read.
    pub fn open(root: &ProcRoot, pid: i32) -> Option<Self> {
        let text = std::fs::read_to_string(root.path.join(pid.to_string()).join("cgroup")).ok()?;
        Self::open_at(&text, Path::new(CGROUP_ROOT))
    }

    /// As [`open`](Self::open), from the text of `/proc/PID/cgroup` and a mount point.
    pub fn open_at(cgroup_file: &str, mount: &Path) -> Option<Self> {
        let (path, dir, v1) = cpu_cgroup(cgroup_file, mount)?;
        let stat = File::open(dir.join("cpu.stat")).ok()?;
        let quota = if v1 {
            Quota::V1(
                File::open(dir.join("cpu.cfs_quota_us"))
                    .ok()
                    .zip(File::open(dir.join("cpu.cfs_period_us")).ok()),
            )
        } else {
            Quota::V2(File::open(dir.join("cpu.max")).ok())
        };
        Some(CgroupFiles {
            path,
            v1,
            stat,
            quota,
            pressure: (!v1)
                .then(|| File::open(dir.join("cpu.pressure")).ok())
                .flatten(),
            buf: Vec::with_capacity(512),
        })
    }

    /// Its figures now (cumulative), or `None` if `cpu.stat` could not be read.
    pub fn read(&mut self) -> Option<CgroupCpu> {
        pread_all(&self.stat, &mut self.buf).ok()?;
        let stat = String::from_utf8_lossy(&self.buf).into_owned();
        let value = |key: &str| {
            stat.lines().find_map(|l| {
                l.strip_prefix(key)?
                    .strip_prefix(' ')?
                    .trim()
                    .parse::<u64>()
                    .ok()
            })
        };
        let throttled_ns = if self.v1 {
            value("throttled_time")
        } else {
            value("throttled_usec").map(|us| us * 1_000)
        };
        let mut out = CgroupCpu {
            path: self.path.clone(),
            periods: value("nr_periods").unwrap_or(0),
            throttled_periods: value("nr_throttled").unwrap_or(0),
            throttled_ns: throttled_ns.unwrap_or(0),
            quota_cpus: None,
            pressure_some_ns: None,
        };
        out.quota_cpus = match &self.quota {
            Quota::V2(Some(max)) => {
                pread_all(max, &mut self.buf).ok()?;
                parse_max(&String::from_utf8_lossy(&self.buf))
            }
            Quota::V1(Some((quota, period))) => {
                pread_all(quota, &mut self.buf).ok()?;
                let q: i64 = String::from_utf8_lossy(&self.buf).trim().parse().ok()?;
                pread_all(period, &mut self.buf).ok()?;
                let p: u64 = String::from_utf8_lossy(&self.buf).trim().parse().ok()?;
                (q > 0 && p > 0).then(|| q as f64 / p as f64)
            }
            _ => None,
        };
        if let Some(file) = &self.pressure {
            if pread_all(file, &mut self.buf).is_ok() {
                out.pressure_some_ns =
                    crate::collect::host::some_total_us(&String::from_utf8_lossy(&self.buf))
                        .map(|us| us * 1_000);
            }
        }
        Some(out)
    }
}

/// `cpu.max`: "50000 100000" → 0.5 CPUs; "max 100000" → unlimited.
fn parse_max(text: &str) -> Option<f64> {
    let mut words = text.split_whitespace();
    let quota: u64 = words.next()?.parse().ok()?;
    let period: u64 = words.next()?.parse().ok()?;
    (period > 0).then(|| quota as f64 / period as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quota_reads_as_cpus_and_max_as_none() {
        assert_eq!(parse_max("50000 100000\n"), Some(0.5));
        assert_eq!(parse_max("200000 100000"), Some(2.0));
        assert_eq!(parse_max("max 100000"), None);
    }

    /// A cgroup v2 directory with a quota, read through the same code as the real one.
    #[test]
    fn a_v2_cgroups_throttling_quota_and_pressure_are_read() {
        let mount = tempfile::tempdir().unwrap();
        let dir = mount.path().join("showdown/go");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("cpu.stat"),
            "usage_usec 900\nuser_usec 600\nsystem_usec 300\nnr_periods 40\nnr_throttled 30\nthrottled_usec 2500\n",
        )
        .unwrap();
        std::fs::write(dir.join("cpu.max"), "100000 100000\n").unwrap();
        std::fs::write(
            dir.join("cpu.pressure"),
            "some avg10=1.00 avg60=0.50 avg300=0.10 total=7000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=100\n",
        )
        .unwrap();
        let mut files = CgroupFiles::open_at("0::/showdown/go\n", mount.path()).expect("found");
        let c = files.read().unwrap();
        assert_eq!(c.path, "/showdown/go");
        assert_eq!((c.periods, c.throttled_periods), (40, 30));
        assert_eq!(c.throttled_ns, 2_500_000);
        assert_eq!(c.quota_cpus, Some(1.0));
        assert_eq!(c.pressure_some_ns, Some(7_000_000));
        // No cgroup file system there: nothing, not zeros.
        assert!(CgroupFiles::open_at("0::/elsewhere\n", mount.path()).is_none());
    }

    #[test]
    fn a_v1_cpu_controller_is_preferred_and_read_in_nanoseconds() {
        let mount = tempfile::tempdir().unwrap();
        let dir = mount.path().join("cpu,cpuacct/showdown-go");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("cpu.stat"),
            "nr_periods 10\nnr_throttled 4\nthrottled_time 123456\n",
        )
        .unwrap();
        std::fs::write(dir.join("cpu.cfs_quota_us"), "50000\n").unwrap();
        std::fs::write(dir.join("cpu.cfs_period_us"), "100000\n").unwrap();
        let text = "12:memory:/showdown-go\n4:cpu,cpuacct:/showdown-go\n0::/\n";
        let c = CgroupFiles::open_at(text, mount.path())
            .unwrap()
            .read()
            .unwrap();
        assert_eq!(
            (c.periods, c.throttled_periods, c.throttled_ns),
            (10, 4, 123_456)
        );
        assert_eq!(c.quota_cpus, Some(0.5));
        assert_eq!(c.pressure_some_ns, None);
    }
}
