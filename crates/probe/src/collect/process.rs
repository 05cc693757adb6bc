//! One process's figures: a [`Watched`] process and its reads, the FDs by kind, the tree's
//! members from a scan of every process's parent.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::os::fd::OwnedFd;
use std::os::unix::fs::FileExt;

use procfs::process::{Process, Stat};
use procfs::FromRead;

use crate::collect::{field, pread_all, ProcRoot, SystemFacts};
use crate::cpus::CpuList;
use crate::sample::{FdKinds, ProcessSample, ThreadStates};

/// User and system clock ticks (`stat` fields 14 and 15), to split CPU time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ticks {
    pub user: u64,
    pub system: u64,
}

/// One process's figures at one tick.
#[derive(Debug)]
pub struct Reading {
    pub sample: ProcessSample,
    /// From a full read only.
    pub ticks: Option<Ticks>,
}

/// The process has exited (or cannot be read any more).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gone;

/// Whether the kernel keeps a running CPU total for a watched process.
///
/// Reading another process's CPU clock walks all its threads (about 0.25 µs each here, 25 µs
/// for 100 threads, half a tick at 100 Hz) unless a process-wide CPU timer is armed on it:
/// then the kernel keeps the group's total in three atomic counters, added to as each thread
/// runs, and the read takes those (3–7 µs here). The figure is the same, since both sum the
/// threads' runtime as of their last scheduler update, except that an update landing while
/// the timer is armed can be missed: at most a tick, 4 ms, once. So a sampler watching a
/// process with many threads arms a timer on its CPU clock that will not fire (100 years of
/// its CPU time), as `RLIMIT_CPU` or `setitimer(ITIMER_PROF)` in the target would. The
/// process pays one atomic add per scheduler update of its threads; the timer is deleted
/// with the handle.
#[derive(Debug)]
enum CpuTotal {
    NotArmed,
    Armed(#[allow(dead_code)] ArmedTimer),
    /// No CPU clock, or the kernel refused the timer: the walk it is.
    Unavailable,
}

impl CpuTotal {
    /// From how many threads the timer is worth it: below, the walk costs no more than the
    /// read of the counters.
    const THREADS: i64 = 16;

    fn arm(&mut self, clock: Option<nix::time::ClockId>) {
        use nix::sys::signal::{SigEvent, SigevNotify, Signal};
        use nix::sys::time::TimeSpec;
        use nix::sys::timer::{Expiration, Timer, TimerSetTimeFlags};
        if !matches!(self, CpuTotal::NotArmed) {
            return;
        }
        // A timer that notifies nothing (`SIGEV_NONE`) is not armed, so the kernel keeps no
        // total; this one would send `SIGURG`, ignored by default, after 100 years of CPU.
        let armed = clock.and_then(|clock| {
            let notify = SigEvent::new(SigevNotify::SigevSignal {
                signal: Signal::SIGURG,
                si_value: 0,
            });
            let mut timer = Timer::new(clock, notify).ok()?;
            let far = TimeSpec::new(100 * 365 * 86_400, 0);
            timer
                .set(Expiration::OneShot(far), TimerSetTimeFlags::empty())
                .ok()?;
            Some(timer)
        });
        *self = match armed {
            Some(timer) => CpuTotal::Armed(ArmedTimer(timer)),
            None => CpuTotal::Unavailable,
        };
    }
}

/// A POSIX timer, held only to be deleted when dropped.
#[derive(Debug)]
struct ArmedTimer(#[allow(dead_code)] nix::sys::timer::Timer);

// SAFETY: a POSIX timer belongs to the process, not to the thread that created it
// (timer_create(2)): for a timer that sends a signal, glibc's `timer_t` is the kernel's timer
// ID, which any thread may delete. nix leaves `Timer` without `Send` only because `timer_t` is
// a pointer type; the sampler is built on one thread and runs on another.
#[allow(unsafe_code)]
unsafe impl Send for ArmedTimer {}

/// A process being watched.
#[derive(Debug)]
pub struct Watched {
    proc: Process,
    pub pid: i32,
    /// `stat` field 22: with the PID, the process's identity.
    pub start_ticks: u64,
    /// Parent and name at the last full read (or the opening one), given by quick reads too.
    pub ppid: i32,
    pub comm: String,
    cpu_clock: Option<nix::time::ClockId>,
    /// A far-off timer on the process CPU clock, armed by the sampler (see [`CpuTotal`]).
    cpu_total: CpuTotal,
    /// `stat`, `io` and `statm`, kept open: re-reading an open file saves an open and a close
    /// per tick, and reads of a process that has exited fail rather than reach a new owner of
    /// the PID.
    stat_file: File,
    io_file: Option<File>,
    statm_file: File,
    /// `fd` and `task`, opened `O_PATH`: their `fstat` gives the FD count (`st_size`, Linux
    /// ≥ 6.2) and the thread count (`st_nlink` − 2) without a path lookup, 1 µs where a
    /// `statat` costs 10 and a `stat` read, which sums faults and CPU over every thread, 20.
    fd_dir: Option<OwnedFd>,
    /// Kept only if its count matched `stat`'s when the process was opened.
    task_dir: Option<OwnedFd>,
    /// `task/PID/children`, if the kernel has it (`CONFIG_PROC_CHILDREN`).
    children_file: Option<File>,
    /// The figures that this probe may not read of this process (see [`Watched::unreadable`]).
    unreadable: Vec<&'static str>,
    buf: RefCell<Vec<u8>>,
}

impl Watched {
    /// Opens `/proc/PID` and reads the start time.
    pub fn open(root: &ProcRoot, pid: i32) -> Result<Self, Gone> {
        let dir = root.path.join(pid.to_string());
        let proc = Process::new_with_root(dir.clone()).map_err(|_| Gone)?;
        let stat_file = File::open(dir.join("stat")).map_err(|_| Gone)?;
        let io_file = File::open(dir.join("io")).ok();
        let statm_file = File::open(dir.join("statm")).map_err(|_| Gone)?;
        let open_path = |name: &str| {
            use rustix::fs::{Mode, OFlags};
            rustix::fs::open(
                dir.join(name),
                OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .ok()
        };
        let children_file = File::open(dir.join(format!("task/{pid}/children"))).ok();
        let cpu_clock = if root.is_system() {
            nix::time::clock_getcpuclockid(nix::unistd::Pid::from_raw(pid)).ok()
        } else {
            None
        };
        let mut watched = Watched {
            proc,
            pid,
            start_ticks: 0,
            ppid: 0,
            comm: String::new(),
            cpu_clock,
            cpu_total: CpuTotal::NotArmed,
            stat_file,
            io_file,
            statm_file,
            fd_dir: open_path("fd"),
            task_dir: None,
            children_file,
            unreadable: Vec::new(),
            buf: RefCell::new(Vec::with_capacity(16 * 1024)),
        };
        let stat = watched.stat()?;
        watched.start_ticks = stat.starttime;
        watched.ppid = stat.ppid;
        watched.comm.clone_from(&stat.comm);
        let task_dir = open_path("task");
        if task_dir.as_ref().and_then(thread_count) == Some(stat.num_threads.max(0) as u64) {
            watched.task_dir = task_dir;
        }
        // What needs the right to trace the process (its user's, or CAP_SYS_PTRACE).
        let readable = |name: &str| File::open(dir.join(name)).is_ok();
        if watched.io_file.is_none() {
            watched.unreadable.push("storage I/O (io)");
        }
        if std::fs::read_dir(dir.join("fd")).is_err() {
            watched.unreadable.push("FDs by kind and TCP states (fd)");
        }
        if watched.fd_count().is_none() {
            watched.unreadable.push("open FDs");
        }
        if !readable("smaps_rollup") {
            watched.unreadable.push("PSS and USS (smaps_rollup)");
        }
        Ok(watched)
    }

    fn stat(&self) -> Result<Stat, Gone> {
        let mut buf = self.buf.borrow_mut();
        pread_all(&self.stat_file, &mut buf).map_err(|_| Gone)?;
        if buf.is_empty() {
            return Err(Gone);
        }
        Stat::from_read(&buf[..]).map_err(|_| Gone)
    }

    /// `io`: `read_bytes` and `write_bytes`, if readable.
    fn io(&self) -> Option<(u64, u64)> {
        let mut buf = self.buf.borrow_mut();
        pread_all(self.io_file.as_ref()?, &mut buf).ok()?;
        let text = std::str::from_utf8(&buf).ok()?;
        Some((field(text, "read_bytes:")?, field(text, "write_bytes:")?))
    }

    /// This tick's figures (the rest of the sample is left at its default); `Gone` once the
    /// process has exited. A `full` read adds what `stat` and `io` give (faults, bytes read
    /// and written, the user/system ticks, and the current parent and name), which costs three
    /// walks over the process's threads instead of one; without the process CPU clock or the
    /// thread count from `task`, every read is full.
    pub fn read(&mut self, facts: &SystemFacts, full: bool) -> Result<Reading, Gone> {
        let quick = !full && self.cpu_clock.is_some();
        let threads = match &self.task_dir {
            Some(dir) if quick => thread_count(dir),
            _ => None,
        };
        let Some(threads) = threads else {
            return self.read_full(facts);
        };
        let (size, resident) = statm_pages(&self.statm_file).ok_or(Gone)?;
        let sample = ProcessSample {
            pid: self.pid,
            ppid: self.ppid,
            start_ticks: self.start_ticks,
            comm: self.comm.clone(),
            cpu_ns: self.cpu_clock_ns()?.ok_or(Gone)?,
            rss_bytes: resident * facts.page_size,
            vsize_bytes: size * facts.page_size,
            threads,
            fds: self.fd_count(),
            ..Default::default()
        };
        Ok(Reading {
            sample,
            ticks: None,
        })
    }

    fn read_full(&mut self, facts: &SystemFacts) -> Result<Reading, Gone> {
        let stat = self.stat()?;
        if stat.starttime != self.start_ticks {
            return Err(Gone);
        }
        self.ppid = stat.ppid;
        self.comm.clone_from(&stat.comm);
        if stat.num_threads >= CpuTotal::THREADS {
            self.cpu_total.arm(self.cpu_clock);
        }
        let cpu_ns = match self.cpu_clock_ns()? {
            Some(ns) => ns,
            None => (stat.utime + stat.stime) * 1_000_000_000 / facts.ticks_per_second.max(1),
        };
        let io = self.io();
        // `statm`, not `stat`: `stat` reads the per-CPU RSS counters (Linux ≥ 6.2) without
        // summing them, `statm` sums them on recent kernels (168 KiB apart for a `sleep` here).
        let (size, resident) = statm_pages(&self.statm_file).ok_or(Gone)?;
        let sample = ProcessSample {
            pid: self.pid,
            ppid: stat.ppid,
            start_ticks: self.start_ticks,
            comm: stat.comm,
            cpu_ns,
            rss_bytes: resident * facts.page_size,
            vsize_bytes: size * facts.page_size,
            threads: stat.num_threads.max(0) as u64,
            fds: self.fd_count(),
            minor_faults: Some(stat.minflt),
            major_faults: Some(stat.majflt),
            read_bytes: io.map(|io| io.0),
            write_bytes: io.map(|io| io.1),
            ..Default::default()
        };
        let ticks = Ticks {
            user: stat.utime,
            system: stat.stime,
        };
        Ok(Reading {
            sample,
            ticks: Some(ticks),
        })
    }

    /// The process CPU clock in ns, if this probe has it; `Gone` if the process has exited.
    fn cpu_clock_ns(&self) -> Result<Option<u64>, Gone> {
        match self.cpu_clock.map(nix::time::clock_gettime) {
            Some(Ok(ts)) => Ok(Some(
                ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64,
            )),
            // A dead process's clock fails: it is gone.
            Some(Err(_)) => Err(Gone),
            None => Ok(None),
        }
    }

    /// Open FDs: `st_size` of the `fd` directory, or (before Linux 6.2, where it is 0) its
    /// entries counted; `None` where neither may be read (never a 0 that was not there).
    fn fd_count(&self) -> Option<u64> {
        match self.fd_dir.as_ref().map(rustix::fs::fstat) {
            Some(Ok(st)) if st.st_size > 0 => Some(st.st_size as u64),
            _ => self.proc.fd_count().ok().map(|n| n as u64),
        }
    }

    /// The figures this probe may not read of this process, in words: reading a process's
    /// `io`, `fd` links and `smaps_rollup` needs the right to trace it (the same user, or
    /// CAP_SYS_PTRACE); the rest of `/proc` does not.
    pub fn unreadable(&self) -> &[&'static str] {
        &self.unreadable
    }

    /// Children forked by the main thread (`task/PID/children`): cheap enough for every tick.
    /// Children of other threads are found by the slow full scan ([`parents`]).
    pub fn children(&self) -> Vec<i32> {
        let mut buf = self.buf.borrow_mut();
        match &self.children_file {
            Some(file) if pread_all(file, &mut buf).is_ok() => String::from_utf8_lossy(&buf)
                .split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The command line, space-separated and redacted (a target started with `--password X`
    /// or a `DATABASE_URL` on its command line does not stream it); empty for kernel threads
    /// or without permission.
    pub fn cmdline(&self) -> String {
        self.proc
            .cmdline()
            .map(|c| redact::command_line_with(&c, &redact::ANY_PROGRAM).join(" "))
            .unwrap_or_default()
    }

    /// Whether it runs a program (`exe` resolves): a kernel thread or a zombie does not. One
    /// that does with an empty command line is caught mid-exec.
    pub fn has_program(&self) -> bool {
        self.proc.exe().is_ok()
    }

    /// `status`: `VmHWM` of the process; and of its threads, summed: context switches
    /// (`task/TID/status`), time runnable but waiting for a CPU (`task/TID/schedstat` field 2)
    /// and their states (`task/TID/stat` field 3). The threads' files are kept open in `files`
    /// from one pass to the next.
    pub fn peak_rss_and_threads(
        &self,
        root: &ProcRoot,
        files: &mut ThreadFiles,
    ) -> (Option<u64>, Option<ThreadFigures>) {
        let dir = root.path.join(self.pid.to_string());
        let status = std::fs::read_to_string(dir.join("status")).ok();
        let peak = status
            .as_deref()
            .and_then(|text| field(text, "VmHWM:"))
            .map(|kb| kb * 1024);
        let Ok(tasks) = std::fs::read_dir(dir.join("task")) else {
            return (peak, None);
        };
        let mut out = ThreadFigures {
            cpus_allowed: status.as_deref().and_then(cpus_allowed),
            ..Default::default()
        };
        let (mut delays, mut states) = (Some(0u64), Some(ThreadStates::default()));
        for task in tasks.flatten() {
            let Some(tid) = task
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<i32>().ok())
            else {
                continue;
            };
            let path = task.path();
            let thread = (self.pid, tid);
            if let Some((voluntary, involuntary)) =
                files.read(&path, thread, ThreadFile::Status, |text| {
                    (
                        field(text, "voluntary_ctxt_switches:").unwrap_or(0),
                        field(text, "nonvoluntary_ctxt_switches:").unwrap_or(0),
                    )
                })
            {
                out.switches.0 += voluntary;
                out.switches.1 += involuntary;
            }
            // A kernel without schedstats, or a thread gone meanwhile: no figure, not 0.
            delays = delays
                .zip(
                    files
                        .read(&path, thread, ThreadFile::Schedstat, |t| {
                            t.split_whitespace().nth(1)?.parse::<u64>().ok()
                        })
                        .flatten(),
                )
                .map(|(a, b)| a + b);
            states = states
                .zip(
                    files
                        .read(&path, thread, ThreadFile::Stat, state_of)
                        .flatten(),
                )
                .map(|(a, b)| a + b);
        }
        out.run_delay_ns = delays;
        out.states = states;
        (peak, Some(out))
    }

    /// `limits`: "Max open files", soft and hard (`None` for unlimited).
    pub fn fd_limits(&self) -> (Option<u64>, Option<u64>) {
        use procfs::process::LimitValue;
        let value = |v: LimitValue| match v {
            LimitValue::Value(n) => Some(n),
            LimitValue::Unlimited => None,
        };
        match self.proc.limits() {
            Ok(l) => (
                value(l.max_open_files.soft_limit),
                value(l.max_open_files.hard_limit),
            ),
            Err(_) => (None, None),
        }
    }

    /// FDs by kind (a `readlink` per FD) and the inodes of its sockets.
    pub fn fd_kinds(&self, root: &ProcRoot) -> Option<(FdKinds, HashSet<u64>)> {
        use rustix::fs::{Mode, OFlags};
        // One `readlinkat` per descriptor, relative to the open `fd` directory, into one
        // buffer: procfs's iterator opens, stats and closes each link too (four calls each).
        let path = root.path.join(self.pid.to_string()).join("fd");
        let dir_fd = rustix::fs::open(
            &path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .ok()?;
        let dir = rustix::fs::Dir::read_from(&dir_fd).ok()?;
        let mut kinds = FdKinds::default();
        let mut sockets = HashSet::new();
        let mut link = Vec::with_capacity(256);
        for entry in dir {
            let Ok(entry) = entry else { break };
            let name = entry.file_name();
            if !name.to_bytes().first().is_some_and(u8::is_ascii_digit) {
                continue;
            }
            match rustix::fs::readlinkat(&dir_fd, name, std::mem::take(&mut link)) {
                Ok(target) => {
                    link = target.into_bytes();
                    classify_fd(&link, &mut kinds, &mut sockets);
                }
                // Closed since the directory was listed.
                Err(_) => link = Vec::with_capacity(256),
            }
        }
        Some((kinds, sockets))
    }

    /// `smaps_rollup`: PSS and USS (private clean + private dirty), bytes.
    pub fn pss_uss(&self) -> Option<(u64, u64)> {
        let rollup = self.proc.smaps_rollup().ok()?;
        let map = &rollup.memory_map_rollup.0.first()?.extension.map;
        let get = |k: &str| map.get(k).copied().unwrap_or(0);
        Some((get("Pss"), get("Private_Clean") + get("Private_Dirty")))
    }
}

/// Size and resident pages from an open `statm` (its first two fields).
pub fn statm_pages(file: &File) -> Option<(u64, u64)> {
    let mut buf = [0u8; 256];
    let n = file.read_at(&mut buf, 0).ok()?;
    let mut fields = std::str::from_utf8(&buf[..n]).ok()?.split_whitespace();
    Some((fields.next()?.parse().ok()?, fields.next()?.parse().ok()?))
}

/// Threads of a process from its open `task` directory: the kernel adds them to the
/// directory's two links (`proc_task_getattr`). `None` once the process has none.
fn thread_count(task_dir: &OwnedFd) -> Option<u64> {
    let links = rustix::fs::fstat(task_dir).ok()?.st_nlink as u64;
    links.checked_sub(2).filter(|&n| n > 0)
}

/// Counts one descriptor by the target its `/proc/PID/fd` link names.
fn classify_fd(target: &[u8], kinds: &mut FdKinds, sockets: &mut HashSet<u64>) {
    let inode = |rest: &[u8]| {
        let digits = rest.strip_suffix(b"]")?;
        std::str::from_utf8(digits).ok()?.parse::<u64>().ok()
    };
    if let Some(rest) = target.strip_prefix(b"socket:[") {
        kinds.socket += 1;
        if let Some(n) = inode(rest) {
            sockets.insert(n);
        }
    } else if target.starts_with(b"pipe:[") {
        kinds.pipe += 1;
    } else if let Some(name) = target.strip_prefix(b"anon_inode:") {
        match name {
            b"[eventpoll]" => kinds.epoll += 1,
            b"[eventfd]" => kinds.eventfd += 1,
            b"[timerfd]" => kinds.timerfd += 1,
            _ => kinds.other += 1,
        }
    } else if target.starts_with(b"/") {
        // Files, directories, devices, and memfds (`/memfd:NAME`).
        kinds.file += 1;
    } else {
        kinds.other += 1;
    }
}

/// Every process's parent, from a scan of `/proc/*/stat` (the slow way to find a tree).
pub fn parents(root: &ProcRoot) -> HashMap<i32, i32> {
    let mut buf = String::new();
    root.pids()
        .into_iter()
        .filter_map(|pid| {
            use std::io::Read;
            buf.clear();
            File::open(root.path.join(pid.to_string()).join("stat"))
                .ok()?
                .read_to_string(&mut buf)
                .ok()?;
            Some((pid, ppid_of_stat(&buf)?))
        })
        .collect()
}

/// Field 4 of `stat`, read after the last `)` (the name may hold spaces and parentheses).
fn ppid_of_stat(text: &str) -> Option<i32> {
    text[text.rfind(')')? + 1..]
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// A thread's file that a slow pass reads.
#[derive(Debug, Clone, Copy)]
pub enum ThreadFile {
    Status = 0,
    Schedstat = 1,
    Stat = 2,
}

impl ThreadFile {
    fn name(self) -> &'static str {
        match self {
            ThreadFile::Status => "status",
            ThreadFile::Schedstat => "schedstat",
            ThreadFile::Stat => "stat",
        }
    }
}

/// Every watched thread's `status`, `schedstat` and `stat`, kept open from one slow pass to the
/// next and read again from their start: opening a /proc file walks its path and finds its task
/// again, about half of what the read of a thread's `stat` costs (docs/benchmarks/probe.md). A
/// thread gone, or its ID taken by another, fails the read of the old file, which is then
/// opened again by name. At most a quarter of the open-file limit (and 3,072) is kept; the
/// threads beyond are opened for each read. [`ThreadFiles::pass`] forgets the threads a pass
/// did not read.
#[derive(Debug)]
pub struct ThreadFiles {
    kept: HashMap<(i32, i32), [Option<File>; 3]>,
    read: HashSet<(i32, i32)>,
    limit: usize,
    buf: Vec<u8>,
}

impl Default for ThreadFiles {
    fn default() -> Self {
        let open = rustix::process::getrlimit(rustix::process::Resource::Nofile)
            .current
            .unwrap_or(u64::MAX);
        ThreadFiles {
            kept: HashMap::new(),
            read: HashSet::new(),
            limit: (open / 4).min(3072) as usize,
            buf: Vec::new(),
        }
    }
}

impl ThreadFiles {
    /// Reads `which` of `thread` (PID, TID) in `dir` and hands its text to `parse`; `None`
    /// when it cannot be read (the thread gone, or not a text).
    pub fn read<T>(
        &mut self,
        dir: &std::path::Path,
        thread: (i32, i32),
        which: ThreadFile,
        parse: impl FnOnce(&str) -> T,
    ) -> Option<T> {
        self.read.insert(thread);
        let keep = self.kept.contains_key(&thread) || self.kept.len() * 3 < self.limit;
        if !keep {
            let file = File::open(dir.join(which.name())).ok()?;
            pread_all(&file, &mut self.buf).ok()?;
            return std::str::from_utf8(&self.buf).ok().map(parse);
        }
        let slot = &mut self.kept.entry(thread).or_default()[which as usize];
        if slot
            .as_ref()
            .is_none_or(|f| pread_all(f, &mut self.buf).is_err())
        {
            *slot = File::open(dir.join(which.name())).ok();
            pread_all(slot.as_ref()?, &mut self.buf).ok()?;
        }
        std::str::from_utf8(&self.buf).ok().map(parse)
    }

    /// Ends a pass: the files of threads it did not read are closed.
    pub fn pass(&mut self) {
        let read = std::mem::take(&mut self.read);
        self.kept.retain(|thread, _| read.contains(thread));
    }

    /// Whether `thread`'s files are kept open.
    pub fn keeps(&self, thread: (i32, i32)) -> bool {
        self.kept.contains_key(&thread)
    }
}

/// What a pass over a process's threads found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThreadFigures {
    /// Voluntary and involuntary context switches.
    pub switches: (u64, u64),
    /// Time runnable but waiting for a CPU, ns (`None` when a thread's could not be read).
    pub run_delay_ns: Option<u64>,
    pub states: Option<ThreadStates>,
    /// CPUs the process may run on (`status`: `Cpus_allowed_list`, its affinity and cpuset).
    pub cpus_allowed: Option<CpuList>,
}

/// The CPUs process `pid` may run on now.
pub fn cpus_of(root: &ProcRoot, pid: i32) -> Option<CpuList> {
    let status = std::fs::read_to_string(root.path.join(pid.to_string()).join("status")).ok()?;
    cpus_allowed(&status)
}

/// The CPUs `Cpus_allowed_list:` names ("0-1,3").
fn cpus_allowed(status: &str) -> Option<CpuList> {
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?
        .trim();
    list.parse::<CpuList>().ok().filter(|l| !l.is_empty())
}

/// One thread's state from its `stat` (the field after the parenthesised name), as a count.
fn state_of(stat: &str) -> Option<ThreadStates> {
    let state = stat
        .get(stat.rfind(')')? + 1..)?
        .split_whitespace()
        .next()?;
    let mut s = ThreadStates::default();
    match state {
        "R" => s.running = 1,
        "D" => s.blocked = 1,
        // S, I (idle kernel thread), and the stopped or traced: not waiting for a CPU.
        _ => s.sleeping = 1,
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::field;

    #[test]
    fn allowed_cpus_are_counted_from_their_list() {
        assert_eq!(
            cpus_allowed("Name:\tx\nCpus_allowed_list:\t0-1,3\n").map(|l| l.len()),
            Some(3)
        );
        assert_eq!(
            cpus_allowed("Cpus_allowed_list:\t1\n").map(|l| l.len()),
            Some(1)
        );
        assert_eq!(cpus_allowed("Cpus_allowed_list:\t3-1\n"), None);
        assert_eq!(cpus_allowed("Name:\tx\n"), None);
    }

    #[test]
    fn a_threads_state_is_read_past_a_name_with_parentheses() {
        let running = state_of("42 (we (ird) R name) R 7 42").unwrap();
        assert_eq!(running.running, 1);
        assert_eq!(state_of("42 (db) D 7").unwrap().blocked, 1);
        assert_eq!(state_of("42 (x) S 7").unwrap().sleeping, 1);
        assert_eq!(state_of("garbage"), None);
    }

    #[test]
    fn the_parent_is_read_past_a_name_with_parentheses() {
        assert_eq!(ppid_of_stat("42 (we (ird) name) S 7 42 42 0 -1"), Some(7));
    }

    #[test]
    fn status_fields_are_found_at_line_starts_only() {
        let text = "Name:\tx\nvoluntary_ctxt_switches:\t12\nnonvoluntary_ctxt_switches:\t3\n";
        assert_eq!(field(text, "voluntary_ctxt_switches:"), Some(12));
        assert_eq!(field(text, "nonvoluntary_ctxt_switches:"), Some(3));
        assert_eq!(field(text, "VmHWM:"), None);
    }

    #[test]
    fn a_threads_kept_files_read_its_figures_as_they_are_now_and_close_when_it_ends() {
        let root = ProcRoot::default();
        let pid = std::process::id() as i32;
        let me = Watched::open(&root, pid).unwrap();
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let worker = std::thread::spawn(move || {
            tid_tx
                .send(rustix::thread::gettid().as_raw_nonzero().get())
                .unwrap();
            // Spin 30 ms when told, and say so; end when the sender is dropped.
            while go_rx.recv().is_ok() {
                let until = std::time::Instant::now() + std::time::Duration::from_millis(30);
                while std::time::Instant::now() < until {
                    std::hint::spin_loop();
                }
                done_tx.send(()).unwrap();
            }
        });
        let tid = tid_rx.recv().unwrap();
        let thread = (pid, tid);
        let dir = root.path.join(format!("{pid}/task/{tid}"));
        let mut files = ThreadFiles::default();
        let run_ns = |files: &mut ThreadFiles| {
            files
                .read(&dir, thread, ThreadFile::Schedstat, |t| {
                    t.split_whitespace().next()?.parse::<u64>().ok()
                })
                .flatten()
        };
        let Some(first) = run_ns(&mut files) else {
            return; // a kernel without schedstats
        };
        assert!(files.keeps(thread));
        go_tx.send(()).unwrap();
        done_rx.recv().unwrap();
        let second = run_ns(&mut files).unwrap();
        // The same open file, read again: the figure of now, not the one of its opening.
        assert!(second >= first + 10_000_000, "{first} then {second}");
        // A pass over the process keeps its threads' files; one after the thread ended
        // closes them.
        me.peak_rss_and_threads(&root, &mut files);
        files.pass();
        assert!(files.keeps(thread));
        drop(go_tx);
        worker.join().unwrap();
        me.peak_rss_and_threads(&root, &mut files);
        files.pass();
        assert!(!files.keeps(thread));
        assert!(files.keeps((pid, pid)));
    }

    #[test]
    fn this_process_reads_as_itself() {
        // A sleep is a voluntary switch: a test process fresh from its start may not have
        // blocked yet (nextest runs each test in one of its own), and its count would read 0.
        std::thread::sleep(std::time::Duration::from_millis(2));
        let root = ProcRoot::default();
        let mut me = Watched::open(&root, std::process::id() as i32).unwrap();
        let full = me.read(&SystemFacts::current(), true).unwrap().sample;
        assert!(full.threads >= 1);
        assert!(full.rss_bytes > 1 << 20);
        assert!(full.fds.is_some_and(|n| n >= 3));
        assert!(full.cpu_ns > 0);
        let (kinds, _) = me.fd_kinds(&ProcRoot::default()).unwrap();
        let mut files = ThreadFiles::default();
        let (peak, threads) = me.peak_rss_and_threads(&root, &mut files);
        assert!(peak.unwrap() >= full.rss_bytes);
        let threads = threads.unwrap();
        assert!(threads.switches.0 > 0);
        // This thread is running as it reads itself.
        let states = threads.states.unwrap();
        assert!(states.running >= 1, "{states:?}");
        assert_eq!(
            states.running + states.sleeping + states.blocked,
            std::fs::read_dir("/proc/self/task").unwrap().count() as u64
        );
        // Where the kernel keeps schedstats, the delay is a figure (it may be 0 on an idle
        // host); where it does not, it is missing, never a made-up 0.
        let kept = std::fs::read_to_string("/proc/self/schedstat").is_ok();
        assert_eq!(threads.run_delay_ns.is_some(), kept);
        assert!(kinds.file + kinds.pipe + kinds.socket + kinds.other + kinds.epoll >= 3);
    }

    #[test]
    fn a_quick_read_gives_what_a_full_one_does() {
        // A process whose figures hold still while both reads are taken.
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(200));
        let facts = SystemFacts::current();
        let mut watched = Watched::open(&ProcRoot::default(), child.id() as i32).unwrap();
        let full = watched.read(&facts, true).unwrap();
        let quick = watched.read(&facts, false).unwrap();
        let _ = child.kill();
        let _ = child.wait();
        assert!(full.ticks.is_some() && quick.ticks.is_none());
        let (f, q) = (full.sample, quick.sample);
        assert_eq!(f.comm, "sleep");
        assert!(f.minor_faults.is_some() && q.minor_faults.is_none());
        assert_eq!((&q.comm, q.ppid), (&f.comm, f.ppid));
        assert_eq!((q.threads, q.fds), (f.threads, f.fds));
        assert_eq!((q.rss_bytes, q.vsize_bytes), (f.rss_bytes, f.vsize_bytes));
        assert!(q.cpu_ns >= f.cpu_ns);
        // Once it has exited, it is gone.
        assert_eq!(watched.read(&facts, false).unwrap_err(), Gone);
    }

    #[test]
    fn a_process_with_many_threads_has_its_cpu_total_kept_while_watched() {
        // 20 threads sharing a core through the GIL: the total moves on every read.
        let spin = "import threading, time\n\
            def spin():\n    end = time.time() + 30\n    while time.time() < end: pass\n\
            for _ in range(19): threading.Thread(target=spin, daemon=True).start()\n\
            time.sleep(30)\n";
        let mut child = std::process::Command::new("python3")
            .args(["-c", spin])
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let facts = SystemFacts::current();
        let mut watched = Watched::open(&ProcRoot::default(), pid).unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while watched.read(&facts, true).unwrap().sample.threads < 20 {
            assert!(
                std::time::Instant::now() < deadline,
                "the threads never started"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        // The timer is this process's, on the target's CPU clock (`/proc/PID/timers`).
        let clock = format!("ClockID: {}", (!(pid as i64) << 3) | 2);
        let timers = || std::fs::read_to_string("/proc/self/timers").unwrap_or_default();
        assert!(matches!(watched.cpu_total, CpuTotal::Armed(_)));
        assert!(timers().contains(&clock), "{}", timers());
        // The kept total is the threads' runtime summed (`task/*/schedstat`, field 1, ns),
        // as the walk gives it: read between two readings of the total, it lies between them
        // (give or take one scheduler update, 4 ms, that can land while the timer is armed).
        let before = watched.read(&facts, false).unwrap().sample.cpu_ns;
        let mut threads_ns = 0;
        for task in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
            let schedstat = std::fs::read_to_string(task.unwrap().path().join("schedstat"));
            let first = schedstat
                .unwrap_or_default()
                .split(' ')
                .next()
                .map(str::to_owned);
            threads_ns += first.and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
        }
        let after = watched.read(&facts, false).unwrap().sample.cpu_ns;
        assert!(before <= after && after > 0);
        let update = 4_000_000;
        assert!(
            (before.saturating_sub(update)..=after + update).contains(&threads_ns),
            "threads {threads_ns} ns, total {before}..{after} ns"
        );
        // Dropping the handle deletes the timer.
        drop(watched);
        let _ = child.kill();
        let _ = child.wait();
        assert!(!timers().contains(&clock), "{}", timers());
    }

    #[test]
    fn fd_links_are_counted_by_kind() {
        let mut kinds = FdKinds::default();
        let mut sockets = HashSet::new();
        for link in [
            &b"socket:[4242]"[..],
            b"socket:[7]",
            b"pipe:[99]",
            b"anon_inode:[eventpoll]",
            b"anon_inode:[eventfd]",
            b"anon_inode:[timerfd]",
            b"anon_inode:inotify",
            b"/var/log/x.log (deleted)",
            b"/memfd:buf (deleted)",
            b"/dev/null",
            b"net:[4026531840]",
        ] {
            classify_fd(link, &mut kinds, &mut sockets);
        }
        assert_eq!(
            (
                kinds.socket,
                kinds.pipe,
                kinds.epoll,
                kinds.eventfd,
                kinds.timerfd
            ),
            (2, 1, 1, 1, 1)
        );
        assert_eq!((kinds.file, kinds.other), (3, 2));
        assert_eq!(sockets, HashSet::from([4242, 7]));
    }

    #[test]
    fn a_missing_process_is_gone() {
        let root = ProcRoot::default();
        assert_eq!(Watched::open(&root, i32::MAX).err(), Some(Gone));
    }
}
