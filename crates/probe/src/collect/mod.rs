//! Reading /proc: one process's figures (`process`), the host's (`host`), the CPU controller
//! of the target's cgroup (`cgroup`: quota, throttling, pressure). The TCP states of a
//! process's sockets are the `sockets` module's.
//!
//! A [`Watched`] process holds an open descriptor of its `/proc/PID` directory (procfs does the
//! `openat`), so every read goes to that process and fails once it has exited, even if its PID
//! is reused. Per-tick collectors run at every tick: the process CPU clock, `statm`, and the FD
//! and thread counts from `fstat` of the open `fd` and `task` directories; `stat` and `io`, which
//! walk every thread of the process, at most every 100 ms ([`Watched::read`]). Slow ones
//! (`status` of every thread, `readlink` of every FD, the TCP states, `limits`,
//! `smaps_rollup`) only when the sampler's budget allows. The root directory is configurable
//! ([`ProcRoot`]) so that tests can point the probe at a fixture tree.

mod cgroup;
pub(crate) mod host;
mod process;

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

pub use cgroup::CgroupFiles;
pub use host::{host_facts, HostFiles};
pub use process::{
    cpus_of, parents, statm_pages, Gone, Reading, ThreadFigures, ThreadFile, ThreadFiles, Ticks,
    Watched,
};

/// Where /proc is: the system's, or a fixture tree for tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcRoot {
    path: PathBuf,
}

impl Default for ProcRoot {
    fn default() -> Self {
        ProcRoot {
            path: PathBuf::from("/proc"),
        }
    }
}

impl ProcRoot {
    pub fn at(path: impl Into<PathBuf>) -> Self {
        ProcRoot { path: path.into() }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether this is the running kernel's /proc (only then do the process CPU clocks and
    /// this process's own PID mean anything).
    pub fn is_system(&self) -> bool {
        self.path == Path::new("/proc")
    }

    /// The PIDs of all processes.
    pub fn pids(&self) -> Vec<i32> {
        let Ok(dir) = std::fs::read_dir(&self.path) else {
            return Vec::new();
        };
        dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .collect()
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }
}

/// Page size and clock ticks, read once.
#[derive(Debug, Clone, Copy)]
pub struct SystemFacts {
    pub page_size: u64,
    pub ticks_per_second: u64,
}

impl SystemFacts {
    pub fn current() -> Self {
        SystemFacts {
            page_size: procfs::page_size(),
            ticks_per_second: procfs::ticks_per_second(),
        }
    }

    /// What procfs's parsers need to know (only ticks and page size matter here).
    pub fn info(&self) -> procfs::ExplicitSystemInfo {
        procfs::ExplicitSystemInfo {
            boot_time_secs: 0,
            ticks_per_second: self.ticks_per_second,
            page_size: self.page_size,
            is_little_endian: cfg!(target_endian = "little"),
        }
    }
}

/// Reads a whole /proc file from offset 0 into `buf`. The kernel regenerates the content at
/// each read from the start, so an open file can be read again and again; and these files come
/// whole in one read when the buffer is large enough, so a short read ends it (one system call
/// where a read-until-empty loop would need two).
/// How many CPUs the host has online: the `cpuN` lines of `stat`.
pub fn online_cpus(root: &ProcRoot) -> Option<u64> {
    let stat = std::fs::read_to_string(root.file("stat")).ok()?;
    let n = crate::cpus::Ticks::parse(&stat).per_cpu.len() as u64;
    (n > 0).then_some(n)
}

pub(crate) fn pread_all(file: &File, buf: &mut Vec<u8>) -> io::Result<()> {
    buf.clear();
    loop {
        if buf.capacity() - buf.len() < 4096 {
            buf.reserve(buf.capacity().max(16 * 1024));
        }
        let start = buf.len();
        buf.resize(buf.capacity(), 0);
        let n = file.read_at(&mut buf[start..], start as u64)?;
        buf.truncate(start + n);
        if start + n < buf.capacity() {
            return Ok(());
        }
    }
}

/// The number after `key` on its line (`status`, `io`, `meminfo` style: `Key:   123 kB`).
pub(crate) fn field(text: &str, key: &str) -> Option<u64> {
    let at = text.find(key)?;
    // The key must start a line.
    if at > 0 && text.as_bytes()[at - 1] != b'\n' {
        let rest = &text[at + key.len()..];
        return field(rest, key);
    }
    text[at + key.len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}
