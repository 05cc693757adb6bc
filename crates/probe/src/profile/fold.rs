//! Folding a second's sampled stacks into `process;thread;frame;…;frame count` lines, the
//! format flame graph tools read, with names learnt on the way.

use std::collections::HashMap;

use super::frame::clean;
use super::perf::RawSample;
use super::symbols::{Space, Symbols};

/// Markers the kernel puts in a call chain: everything from `PERF_CONTEXT_MAX` up.
const CONTEXT_MAX: u64 = -4095i64 as u64;
const CONTEXT_KERNEL: u64 = -128i64 as u64;
const CONTEXT_USER: u64 = -512i64 as u64;

/// One record's stacks stay within about this many bytes of JSON (each frame once, the stacks
/// as indices), well inside the protocol's 1 MiB frame; the rarest stacks beyond it are
/// counted together, by name.
const MAX_STACK_BYTES: usize = 512 << 10;
/// The frame that stands for the stacks left out by [`MAX_STACK_BYTES`].
pub const OTHER_STACKS: &str = "[rarer stacks, left out of this record]";

/// One process's thread's stack, addresses innermost first as sampled.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Key {
    pid: u32,
    tid: u32,
    kernel: Vec<u64>,
    user: Vec<u64>,
}

/// What a folded interval says, ready for the record.
#[derive(Debug, Default)]
pub(super) struct Folded {
    pub samples: u64,
    pub cpu_ns: u64,
    pub stacks: Vec<(String, u64)>,
}

#[derive(Default)]
pub(super) struct Folder {
    counts: HashMap<Key, u64>,
    samples: u64,
    cpu_ns: u64,
}

impl Folder {
    /// Counts one sample of the watched tree.
    pub fn add(&mut self, sample: &RawSample<'_>) {
        let (mut kernel, mut user) = (Vec::new(), Vec::new());
        let mut context = CONTEXT_USER;
        for (i, &addr) in sample.chain.iter().enumerate() {
            if addr >= CONTEXT_MAX {
                context = addr;
                continue;
            }
            // Past the first frame of each context, addresses are where calls return to:
            // one byte back is inside the call, so inside the calling function.
            let first = i == 0 || sample.chain.get(i - 1).is_some_and(|&a| a >= CONTEXT_MAX);
            let addr = if first { addr } else { addr.saturating_sub(1) };
            match context {
                CONTEXT_KERNEL => kernel.push(addr),
                CONTEXT_USER => user.push(addr),
                // Hypervisor and guest frames are not the server's.
                _ => {}
            }
        }
        *self
            .counts
            .entry(Key {
                pid: sample.pid,
                tid: sample.tid,
                kernel,
                user,
            })
            .or_default() += 1;
        self.samples += 1;
        self.cpu_ns += sample.period;
    }

    /// The interval's stacks, named, most samples first; the folder starts afresh. `who`
    /// names a process and its thread, the stack's first two frames.
    pub fn finish(
        &mut self,
        symbols: &mut Symbols,
        mut who: impl FnMut(u32, u32) -> (String, String),
    ) -> Folded {
        let counts = std::mem::take(&mut self.counts);
        let mut wanted: HashMap<Space, Vec<u64>> = HashMap::new();
        for key in counts.keys() {
            wanted
                .entry(Space::User(key.pid))
                .or_default()
                .extend(&key.user);
            wanted.entry(Space::Kernel).or_default().extend(&key.kernel);
        }
        for (space, mut addrs) in wanted {
            symbols.learn(space, &mut addrs);
        }
        let mut merged: HashMap<String, u64> = HashMap::new();
        for (key, count) in counts {
            let (process, thread) = who(key.pid, key.tid);
            let mut line = clean(&process);
            line.push(';');
            line.push_str(&clean(&thread));
            for &addr in key.user.iter().rev() {
                line.push(';');
                line.push_str(&symbols.name(Space::User(key.pid), addr));
            }
            for &addr in key.kernel.iter().rev() {
                line.push(';');
                line.push_str(&symbols.name(Space::Kernel, addr));
                line.push_str("_[k]");
            }
            *merged.entry(line).or_default() += count;
        }
        let mut stacks: Vec<(String, u64)> = merged.into_iter().collect();
        stacks.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let mut bytes = 0;
        let mut named = std::collections::HashSet::new();
        if let Some(cut) = stacks.iter().position(|(s, _)| {
            // The stack's own brackets and count.
            bytes += 24;
            for frame in s.split(';') {
                // An index, and the frame's name the first time, as JSON writes it: a `"`
                // or a `\` takes two bytes there.
                bytes += 6;
                if named.insert(frame) {
                    bytes += frame.len() + json_escapes(frame) + 4;
                }
            }
            bytes > MAX_STACK_BYTES
        }) {
            let rest: u64 = stacks.drain(cut..).map(|(_, n)| n).sum();
            stacks.push((OTHER_STACKS.to_string(), rest));
        }
        let folded = Folded {
            samples: self.samples,
            cpu_ns: self.cpu_ns,
            stacks,
        };
        self.samples = 0;
        self.cpu_ns = 0;
        folded
    }
}

/// How many bytes JSON adds to `text` by escaping it (`"` and `\` become two; control
/// characters, which frame names never hold, six).
fn json_escapes(text: &str) -> usize {
    text.bytes()
        .map(|b| match b {
            b'"' | b'\\' => 1,
            0..=0x1f => 5,
            _ => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_frames_sit_above_user_frames_and_return_addresses_step_back() {
        let mut folder = Folder::default();
        let chain = [
            CONTEXT_KERNEL,
            0xffff_0010,
            0xffff_0020,
            CONTEXT_USER,
            0x1000,
            0x2001,
        ];
        for _ in 0..3 {
            folder.add(&RawSample {
                pid: 7,
                tid: 8,
                period: 10_000_000,
                chain: &chain,
            });
        }
        let mut symbols = Symbols::new();
        symbols.teach(Space::User(7), 0x1000, "burn");
        symbols.teach(Space::User(7), 0x2000, "main");
        symbols.teach(Space::Kernel, 0xffff_0010, "clear_page");
        symbols.teach(Space::Kernel, 0xffff_001f, "do_fault");
        let folded = folder.finish(&mut symbols, |_, _| ("srv".into(), "main".into()));
        assert_eq!(folded.samples, 3);
        assert_eq!(folded.cpu_ns, 30_000_000);
        // Outermost first; the leaf of each context as sampled, its callers one byte back.
        let (line, count) = &folded.stacks[0];
        assert_eq!(*count, 3);
        assert_eq!(line, "srv;main;main;burn;do_fault_[k];clear_page_[k]");
        assert_eq!(
            folder
                .finish(&mut symbols, |_, _| ("srv".into(), "main".into()))
                .samples,
            0
        );
    }

    #[test]
    fn names_full_of_quotes_keep_a_record_inside_one_frame() {
        // A target that names its functions with `"` (each written `\"` in JSON), a new
        // name for every stack: the record still fits the protocol's frame, the rest counted.
        let mut folder = Folder::default();
        let mut symbols = Symbols::new();
        for i in 0..4_000u64 {
            let addr = 0x10_0000 + i * 16;
            symbols.teach(Space::User(7), addr, &format!("f{i}{}", "\"".repeat(300)));
            folder.add(&RawSample {
                pid: 7,
                tid: 7,
                period: 1_000_000,
                chain: &[CONTEXT_USER, addr],
            });
        }
        let folded = folder.finish(&mut symbols, |_, _| ("srv".into(), "main".into()));
        assert_eq!(folded.stacks.iter().map(|(_, n)| n).sum::<u64>(), 4_000);
        assert_eq!(folded.stacks.last().unwrap().0, OTHER_STACKS);
        let mut profile = crate::sample::Profile::default();
        profile.set_folded(folded.stacks);
        let json = serde_json::to_vec(&profile).unwrap();
        assert!(
            json.len() < crate::protocol::MAX_FRAME - 4096,
            "{} bytes",
            json.len()
        );
    }

    #[test]
    fn a_record_names_each_frame_once_and_folds_back_the_same() {
        let lines = vec![
            ("srv;main;main;handle;hash".to_string(), 7),
            ("srv;main;main;handle".to_string(), 2),
        ];
        let mut profile = crate::sample::Profile::default();
        profile.set_folded(lines.clone());
        assert_eq!(profile.frames, ["srv", "main", "handle", "hash"]);
        assert_eq!(profile.stacks[0].0, [0, 1, 1, 2, 3]);
        assert_eq!(profile.folded().collect::<Vec<_>>(), lines);
    }
}
