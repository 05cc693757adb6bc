//! Names for addresses, read on the probe host where the binaries are: ELF symbols of the
//! process's mappings and `/proc/kallsyms` for the kernel by `blazesym`, and the
//! `/tmp/perf-PID.map` files that JITs write (V8 with `--perf-basic-prof-only-functions`) by
//! [`super::perf_map`], which reads the target's file with care.
//!
//! An address without a symbol is named by its file and offset (`[libc.so.6+0x9a270]`), the
//! same in every run, so that differential flame graphs line up; else `[unknown]`, or
//! `[kernel]` for the kernel: never the address itself (a kernel address would give away
//! where KASLR put the kernel).
//!
//! Names are cached per process and address: a second's stacks repeat the same few hundred
//! addresses. Every [`FORGET_AFTER`] the cache is emptied and the symbolizer made anew (it keeps
//! every file it opened), so that a JIT that moved its code is read again and what was kept for
//! binaries no longer mapped goes; the cache is also emptied whenever it holds [`MAX_NAMES`].

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use blazesym::symbolize::source::{Kernel, Process, Source};
use blazesym::symbolize::{Input, Symbolized, Symbolizer};
use blazesym::{MaybeDefault, Pid};

use super::frame::clean;
use super::perf_map::PerfMaps;

/// How long a name is trusted.
const FORGET_AFTER: Duration = Duration::from_secs(60);
/// At most this many names are cached.
const MAX_NAMES: usize = 100_000;
/// The name of a user address with no symbol and no file.
const UNKNOWN: &str = "[unknown]";
/// The name of a kernel address with no symbol.
const KERNEL: &str = "[kernel]";

/// The process whose addresses are asked for, or the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Space {
    User(u32),
    Kernel,
}

pub(super) struct Symbols {
    symbolizer: Symbolizer,
    normalizer: blazesym::normalize::Normalizer,
    names: HashMap<(Space, u64), Arc<str>>,
    perf_maps: PerfMaps,
    since: Instant,
    /// Binaries are opened through `/proc/PID/map_files` (which sees into containers and
    /// deleted files, and needs CAP_CHECKPOINT_RESTORE or CAP_SYS_ADMIN), else by the paths
    /// in `/proc/PID/maps`.
    map_files: bool,
}

impl Symbols {
    pub fn new() -> Self {
        Symbols {
            symbolizer: Symbolizer::new(),
            normalizer: normalizer(),
            names: HashMap::new(),
            perf_maps: PerfMaps::default(),
            since: Instant::now(),
            map_files: map_files_readable(),
        }
    }

    /// Looks up every address of `addrs` not known yet in `space`, in one call.
    pub fn learn(&mut self, space: Space, addrs: &mut Vec<u64>) {
        if self.since.elapsed() > FORGET_AFTER || self.names.len() >= MAX_NAMES {
            self.names.clear();
            self.symbolizer = Symbolizer::new();
            self.normalizer = normalizer();
            self.since = Instant::now();
        }
        addrs.sort_unstable();
        addrs.dedup();
        addrs.retain(|a| !self.names.contains_key(&(space, *a)));
        if addrs.is_empty() {
            return;
        }
        let source = match space {
            Space::User(pid) => {
                let mut process = Process::new(Pid::from(pid));
                // Function names are what a flame graph shows: DWARF would add lines and
                // inlined frames at many times the cost.
                process.debug_syms = false;
                process.map_files = self.map_files;
                process.perf_map = false;
                Source::Process(process)
            }
            Space::Kernel => Source::Kernel(Kernel {
                vmlinux: MaybeDefault::None,
                debug_syms: false,
                ..Kernel::default()
            }),
        };
        let found = self
            .symbolizer
            .symbolize(&source, Input::AbsAddr(addrs.as_slice()))
            .unwrap_or_default();
        let mut unnamed = Vec::new();
        for (i, &addr) in addrs.iter().enumerate() {
            match found.get(i) {
                Some(Symbolized::Sym(sym)) => {
                    self.names.insert((space, addr), clean(&sym.name).into());
                }
                _ => unnamed.push(addr),
            }
        }
        // No symbol: the JIT's name, else the file and the offset in it where there is one
        // (the same in every run, unlike the address); never a neighbour's name.
        let Space::User(pid) = space else {
            for addr in unnamed {
                self.names.insert((space, addr), KERNEL.into());
            }
            return;
        };
        let jitted = self.perf_maps.names(pid, &unnamed);
        let mut left = Vec::new();
        for (addr, name) in unnamed.into_iter().zip(jitted) {
            match name {
                Some(name) => {
                    self.names.insert((space, addr), name);
                }
                None => left.push(addr),
            }
        }
        let placed = self.places(pid, &left);
        for (i, addr) in left.into_iter().enumerate() {
            let name = placed
                .get(i)
                .cloned()
                .flatten()
                .map_or(UNKNOWN.into(), Arc::from);
            self.names.insert((space, addr), name);
        }
    }

    /// `[file+0xoffset]` for each of `addrs` (sorted) that lies in a mapped file.
    fn places(&self, pid: u32, addrs: &[u64]) -> Vec<Option<String>> {
        use blazesym::normalize::{NormalizeOpts, UserMeta};
        if addrs.is_empty() {
            return Vec::new();
        }
        let opts = NormalizeOpts {
            sorted_addrs: true,
            map_files: false,
            ..Default::default()
        };
        let Ok(out) = self
            .normalizer
            .normalize_user_addrs_opts(Pid::from(pid), addrs, &opts)
        else {
            return Vec::new();
        };
        out.outputs
            .iter()
            .map(|&(offset, meta)| match out.meta.get(meta) {
                Some(UserMeta::Elf(elf)) => {
                    let file = elf.path.file_name()?.to_string_lossy();
                    Some(clean(&format!("[{file}+{offset:#x}]")))
                }
                _ => None,
            })
            .collect()
    }

    /// The name learnt for `addr` (`[unknown]` or `[kernel]` if it was never asked for).
    pub fn name(&self, space: Space, addr: u64) -> Arc<str> {
        self.names.get(&(space, addr)).cloned().unwrap_or_else(|| {
            match space {
                Space::User(_) => UNKNOWN,
                Space::Kernel => KERNEL,
            }
            .into()
        })
    }

    /// Names an address without asking the binaries (tests).
    #[cfg(test)]
    pub fn teach(&mut self, space: Space, addr: u64, name: &str) {
        self.names.insert((space, addr), name.into());
    }

    /// Forgets a process that is gone.
    pub fn forget(&mut self, pid: u32) {
        self.names
            .retain(|(space, _), _| *space != Space::User(pid));
        self.perf_maps.forget(pid);
    }
}

/// Finds files and offsets; made anew with the symbolizer.
fn normalizer() -> blazesym::normalize::Normalizer {
    blazesym::normalize::Normalizer::builder()
        .enable_build_ids(false)
        .build()
}

/// Whether this process may open `/proc/PID/map_files` entries (tried on its own).
fn map_files_readable() -> bool {
    std::fs::read_dir("/proc/self/map_files")
        .ok()
        .and_then(|mut entries| entries.next())
        .and_then(Result::ok)
        .is_some_and(|entry| std::fs::File::open(entry.path()).is_ok())
}
