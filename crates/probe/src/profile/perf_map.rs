//! The perf maps that JITs write (`/tmp/perf-PID.map`: one `START SIZE name` line per compiled
//! function, only ever appended to), read by the profiler itself rather than by `blazesym`,
//! because the file is the target's and the probe may be privileged:
//!
//! - it is opened beneath the target's own root (`/proc/PID/root`, `RESOLVE_IN_ROOT`), never
//!   following a link out of it, without blocking (`O_NONBLOCK`: a FIFO planted there would
//!   otherwise hang the profiler), and kept only if it is a regular file owned by one of the
//!   target's users;
//! - it is read incrementally, from where the last read stopped, at most [`READ_BUDGET`] bytes
//!   a time and once a [`REFRESH_EVERY`] per process;
//! - what is kept is bounded for all maps together ([`MAX_ENTRIES`] functions, [`MAX_NAME_BYTES`]
//!   of names), each map getting its share; the oldest functions go first (a JIT's newest code
//!   is the code that runs).

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustix::fs::{FileType, Mode, OFlags, ResolveFlags};

/// Functions kept for all maps together.
pub(super) const MAX_ENTRIES: usize = 200_000;
/// Bytes of names kept for all maps together.
pub(super) const MAX_NAME_BYTES: usize = 16 << 20;
/// A name longer than this is cut (V8's are a few hundred bytes at most).
const MAX_NAME: usize = 512;
/// At most this much of a map is read at a time, so that a huge one cannot stall a profile.
const READ_BUDGET: usize = 4 << 20;
/// A map is read again at most this often.
const REFRESH_EVERY: Duration = Duration::from_secs(1);
/// A line longer than this is not a perf map's line: it is skipped.
const MAX_LINE: usize = 4096;

/// One compiled function.
#[derive(Debug, Clone)]
struct Function {
    end: u64,
    name: Arc<str>,
    /// When it was read (larger is newer), for eviction.
    order: u64,
}

/// One process's map, as far as it was read.
#[derive(Default)]
struct Map {
    file: Option<std::fs::File>,
    /// Why there is none, once said.
    refused: Option<String>,
    /// A line begun but not finished by the last read.
    partial: Vec<u8>,
    /// Skipping the rest of a line that was too long.
    skipping: bool,
    functions: BTreeMap<u64, Function>,
    name_bytes: usize,
    next_order: u64,
    read_at: Option<Instant>,
}

/// Every watched process's perf map.
#[derive(Default)]
pub(super) struct PerfMaps {
    maps: HashMap<u32, Map>,
}

impl PerfMaps {
    /// Names for `addrs` of process `pid` from its perf map (read further first if it is due).
    pub fn names(&mut self, pid: u32, addrs: &[u64]) -> Vec<Option<Arc<str>>> {
        let shares = self.maps.len().max(1);
        let map = self.maps.entry(pid).or_default();
        if map.read_at.is_none_or(|t| t.elapsed() >= REFRESH_EVERY) {
            map.read_at = Some(Instant::now());
            if map.file.is_none() && map.refused.is_none() {
                match open(pid) {
                    Ok(file) => map.file = Some(file),
                    Err(why) => {
                        if why.said {
                            tracing::warn!("perf map of PID {pid} not read: {}", why.reason);
                        }
                        map.refused = Some(why.reason);
                    }
                }
            }
            map.read_more();
            map.bound(MAX_ENTRIES / shares, MAX_NAME_BYTES / shares);
        }
        addrs.iter().map(|&a| map.name(a)).collect()
    }

    /// Why `pid`'s map is not read, if it is not.
    #[cfg(test)]
    pub fn refused(&self, pid: u32) -> Option<&str> {
        self.maps.get(&pid).and_then(|m| m.refused.as_deref())
    }

    /// Forgets a process that is gone (and closes its map).
    pub fn forget(&mut self, pid: u32) {
        self.maps.remove(&pid);
    }
}

impl Map {
    fn name(&self, addr: u64) -> Option<Arc<str>> {
        let (_, f) = self.functions.range(..=addr).next_back()?;
        (addr < f.end).then(|| f.name.clone())
    }

    /// Reads what was appended since the last read, up to the budget.
    fn read_more(&mut self) {
        let Some(file) = self.file.as_mut() else {
            return;
        };
        let mut chunk = Vec::new();
        let budget = READ_BUDGET as u64;
        if let Err(e) = file.by_ref().take(budget).read_to_end(&mut chunk) {
            self.refused = Some(format!("reading it failed: {e}"));
            self.file = None;
            return;
        }
        let mut rest = chunk.as_slice();
        while let Some(end) = rest.iter().position(|&b| b == b'\n') {
            let (line, tail) = rest.split_at(end);
            rest = tail.get(1..).unwrap_or_default();
            if std::mem::take(&mut self.skipping) {
                self.partial.clear();
                continue;
            }
            if self.partial.is_empty() {
                self.add(line);
            } else {
                let mut whole = std::mem::take(&mut self.partial);
                whole.extend_from_slice(line);
                self.add(&whole);
            }
        }
        if !self.skipping {
            self.partial.extend_from_slice(rest);
            if self.partial.len() > MAX_LINE {
                self.partial.clear();
                self.skipping = true;
            }
        }
    }

    /// Adds one line (`START SIZE name`, hexadecimal, with or without `0x`); others are skipped.
    fn add(&mut self, line: &[u8]) {
        let Some(line) = std::str::from_utf8(line)
            .ok()
            .filter(|l| l.len() <= MAX_LINE)
        else {
            return;
        };
        let mut fields = line.splitn(3, ' ');
        let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok();
        let (Some(start), Some(size), Some(name)) = (
            fields.next().and_then(hex),
            fields.next().and_then(hex),
            fields.next(),
        ) else {
            return;
        };
        let name = name.trim_end();
        if size == 0 || name.is_empty() {
            return;
        }
        let mut cut = name.len().min(MAX_NAME);
        while !name.is_char_boundary(cut) {
            cut -= 1;
        }
        let name: Arc<str> = super::frame::clean(&name[..cut]).into();
        self.name_bytes += name.len();
        let order = self.next_order;
        self.next_order += 1;
        let function = Function {
            end: start.saturating_add(size),
            name,
            order,
        };
        if let Some(old) = self.functions.insert(start, function) {
            self.name_bytes -= old.name.len();
        }
    }

    /// Drops the oldest functions until at most three quarters of each limit are held, once
    /// either is passed (so that eviction runs once per quarter of the limit read, not per line).
    fn bound(&mut self, entries: usize, bytes: usize) {
        if self.functions.len() <= entries && self.name_bytes <= bytes {
            return;
        }
        let mut orders: Vec<(u64, usize)> = self
            .functions
            .values()
            .map(|f| (f.order, f.name.len()))
            .collect();
        orders.sort_unstable_by_key(|o| std::cmp::Reverse(o.0));
        let (keep_entries, keep_bytes) = (entries / 4 * 3, bytes / 4 * 3);
        let mut kept_bytes = 0;
        let mut oldest_kept = u64::MAX;
        for (i, (order, len)) in orders.iter().enumerate() {
            if i >= keep_entries || kept_bytes + len > keep_bytes {
                break;
            }
            kept_bytes += len;
            oldest_kept = *order;
        }
        self.functions.retain(|_, f| f.order >= oldest_kept);
        self.name_bytes = self.functions.values().map(|f| f.name.len()).sum();
    }
}

/// Why a map is not read; `said` when it is worth a log line (there is one, but it is refused).
struct Refused {
    reason: String,
    said: bool,
}

/// Opens `pid`'s perf map beneath its root, checked as the module says.
fn open(pid: u32) -> Result<std::fs::File, Refused> {
    let quiet = |reason: String| Refused {
        reason,
        said: false,
    };
    let root: OwnedFd = rustix::fs::open(
        format!("/proc/{pid}/root"),
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| quiet(format!("its root cannot be opened ({e}): the probe needs to run as its user, or with CAP_SYS_PTRACE")))?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .map_err(|e| quiet(format!("its status cannot be read ({e})")))?;
    let (inner_pid, users) = ids(&status, pid);
    let path = format!("tmp/perf-{inner_pid}.map");
    let fd = rustix::fs::openat2(
        &root,
        &path,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::IN_ROOT | ResolveFlags::NO_MAGICLINKS,
    )
    .map_err(|e| Refused {
        said: e != rustix::io::Errno::NOENT,
        reason: format!("/{path} cannot be opened beneath its root ({e})"),
    })?;
    let stat = rustix::fs::fstat(&fd).map_err(|e| quiet(format!("/{path}: {e}")))?;
    let refused = |what: String| Refused {
        reason: format!("/{path} is {what}: not read"),
        said: true,
    };
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Err(refused("not a regular file".into()));
    }
    if !users.contains(&stat.st_uid) {
        return Err(refused(format!(
            "owned by UID {}, not by the process's user",
            stat.st_uid
        )));
    }
    Ok(std::fs::File::from(fd))
}

/// The process's PID in its own namespace (the one in its map's name) and its user IDs
/// (real, effective, saved, filesystem), from its `status`.
fn ids(status: &str, pid: u32) -> (u32, Vec<u32>) {
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| {
                v.split_whitespace()
                    .filter_map(|n| n.parse().ok())
                    .collect::<Vec<u32>>()
            })
            .unwrap_or_default()
    };
    let inner = field("NSpid:").last().copied().unwrap_or(pid);
    (inner, field("Uid:"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn map_of(lines: &str) -> Map {
        let mut map = Map::default();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("perf.map");
        std::fs::write(&path, lines).unwrap();
        map.file = Some(std::fs::File::open(&path).unwrap());
        map.read_more();
        map
    }

    #[test]
    fn names_an_address_inside_a_function_and_none_beside_it() {
        let map = map_of("1000 100 LazyCompile:*handle app.js:3\n0x2000 0x10 Builtin:Call\n");
        assert_eq!(
            map.name(0x1000).as_deref(),
            Some("LazyCompile:*handle app.js:3")
        );
        assert_eq!(
            map.name(0x10ff).as_deref(),
            Some("LazyCompile:*handle app.js:3")
        );
        assert_eq!(map.name(0x1100), None);
        assert_eq!(map.name(0x2008).as_deref(), Some("Builtin:Call"));
        assert_eq!(map.name(0xfff), None);
    }

    #[test]
    fn a_line_written_in_two_reads_is_read_whole_and_garbage_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("perf.map");
        let mut writer = std::fs::File::create(&path).unwrap();
        writer.write_all(b"zz not hex\n1000 10 fir").unwrap();
        let mut map = Map {
            file: Some(std::fs::File::open(&path).unwrap()),
            ..Map::default()
        };
        map.read_more();
        assert_eq!(map.name(0x1000), None);
        writer.write_all(b"st;one\n").unwrap();
        writer.write_all(&vec![b'x'; MAX_LINE * 2]).unwrap();
        writer.write_all(b"\n3000 10 second\n").unwrap();
        map.read_more();
        assert_eq!(map.name(0x1001).as_deref(), Some("first:one"));
        assert_eq!(map.name(0x3001).as_deref(), Some("second"));
        assert_eq!(map.functions.len(), 2);
    }

    #[test]
    fn a_map_that_keeps_growing_holds_its_newest_functions_within_the_limits() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("perf.map");
        let mut writer = std::fs::File::create(&path).unwrap();
        let mut map = Map {
            file: Some(std::fs::File::open(&path).unwrap()),
            ..Map::default()
        };
        // A JIT recompiling for ever: 50 reads of 20,000 new functions each.
        let (limit, bytes) = (30_000, 1 << 20);
        for round in 0..50u64 {
            let mut text = String::new();
            for i in 0..20_000u64 {
                let start = (round * 20_000 + i) * 0x100;
                text.push_str(&format!(
                    "{start:x} 80 LazyCompile:*fn{round}_{i} app.js:1\n"
                ));
            }
            writer.write_all(text.as_bytes()).unwrap();
            map.read_more();
            map.bound(limit, bytes);
            assert!(map.functions.len() <= limit && map.name_bytes <= bytes);
        }
        let newest = (49 * 20_000 + 19_999) * 0x100;
        assert_eq!(
            map.name(newest).as_deref(),
            Some("LazyCompile:*fn49_19999 app.js:1")
        );
        assert_eq!(map.name(0x100), None, "the oldest went first");
    }

    #[test]
    fn ids_read_the_namespace_pid_and_every_uid() {
        let status = "Name:\tnode\nUid:\t1000\t1001\t1002\t1003\nNSpid:\t4242\t7\n";
        assert_eq!(ids(status, 4242), (7, vec![1000, 1001, 1002, 1003]));
        assert_eq!(ids("Name:\tx\n", 9), (9, vec![]));
    }

    /// A process of our own to own perf maps planted for it.
    fn sleeper() -> std::process::Child {
        std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap()
    }

    #[test]
    fn a_fifo_planted_as_the_map_is_refused_at_once() {
        let mut child = sleeper();
        let pid = child.id();
        let path = format!("/tmp/perf-{pid}.map");
        let _ = std::fs::remove_file(&path);
        rustix::fs::mkfifoat(rustix::fs::CWD, &path, Mode::from_raw_mode(0o600)).unwrap();
        let started = Instant::now();
        let mut maps = PerfMaps::default();
        assert_eq!(maps.names(pid, &[0x1000]), vec![None]);
        let took = started.elapsed();
        let refused = maps.refused(pid).map(str::to_string);
        let _ = std::fs::remove_file(&path);
        let _ = child.kill();
        let _ = child.wait();
        assert!(took < Duration::from_secs(2), "{took:?}");
        assert!(refused.unwrap().contains("not a regular file"));
    }

    #[test]
    fn a_link_or_another_users_file_is_refused_and_the_process_own_is_read() {
        let mut child = sleeper();
        let pid = child.id();
        let path = format!("/tmp/perf-{pid}.map");
        let secret = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(secret.path(), "1000 10 not_yours\n").unwrap();
        let _ = std::fs::remove_file(&path);
        std::os::unix::fs::symlink(secret.path(), &path).unwrap();
        let mut maps = PerfMaps::default();
        let linked = maps.names(pid, &[0x1000]);
        let link_refused = maps.refused(pid).map(str::to_string);
        std::fs::remove_file(&path).unwrap();

        std::fs::write(&path, "1000 10 mine\n").unwrap();
        let mut maps = PerfMaps::default();
        let own = maps.names(pid, &[0x1000]);
        let foreign = if rustix::process::geteuid().is_root() {
            rustix::fs::chown(&path, Some(rustix::fs::Uid::from_raw(65534)), None).unwrap();
            let mut maps = PerfMaps::default();
            Some((
                maps.names(pid, &[0x1000]),
                maps.refused(pid).map(str::to_string),
            ))
        } else {
            None
        };
        let _ = std::fs::remove_file(&path);
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(linked, vec![None]);
        assert!(link_refused.unwrap().contains("cannot be opened"));
        assert_eq!(own, vec![Some("mine".into())]);
        if let Some((names, why)) = foreign {
            assert_eq!(names, vec![None]);
            assert!(why.unwrap().contains("owned by UID 65534"));
        }
    }
}
