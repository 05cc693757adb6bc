//! Where the target's CPU went in a run: the probe's profiles of the attack window folded into
//! one set of stacks (for the flame graph), the functions that took most, and the share of the
//! top few over time, in the CPU chart's unit (100 = one core).

use std::collections::{BTreeMap, HashMap};

use probe::sample::Profile;

use crate::series::Series;

/// Functions listed in the table.
const TOP: usize = 15;
/// Functions drawn over time.
const OVER_TIME: usize = 5;

/// Distinct stacks one run's profile keeps, and the bytes of their names: a target that names
/// new functions all the time (a JIT minting fresh names, a hostile one) would otherwise grow
/// the report's memory and its pages without end. Samples of the stacks beyond are counted in
/// one, named for them ([`OTHER_STACKS`]).
pub const MAX_STACKS: usize = 20_000;
pub const MAX_STACK_TEXT: usize = 16 << 20;

/// The stack that holds the samples of the stacks past [`MAX_STACKS`].
pub const OTHER_STACKS: &str =
    "[other stacks, past the 20000 distinct stacks a run's profile keeps]";

/// One function's part of the window's samples.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionShare {
    pub name: String,
    /// Samples with the function innermost (its own code).
    pub self_samples: u64,
    /// Samples with the function anywhere on the stack (it or what it called).
    pub total_samples: u64,
}

/// A probe's profile of one run's attack window.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProfileFigures {
    pub hz: u32,
    /// Profile records in the window.
    pub records: usize,
    pub samples: u64,
    /// The tree's CPU as the profile saw it (s).
    pub cpu_s: f64,
    /// Samples the kernel dropped in the window (of every process).
    pub lost: u64,
    /// Every stack of the window and its samples (`process;thread;frame;…`).
    pub folded: BTreeMap<String, u64>,
    /// The functions with the most samples of their own, most first.
    pub top: Vec<FunctionShare>,
    /// The top functions' own CPU per record (100 = one core).
    pub over_time: Vec<Series>,
    /// Every distinct stack of the window once, as `folded` names them: what `slices` index.
    pub stacks: Vec<String>,
    /// Each record's stacks on the run's timeline, in time order: what a window of the run
    /// (a freeze, a step) is drawn from.
    pub slices: Vec<ProfileSlice>,
    /// Stacks of the records past [`MAX_STACKS`] (or [`MAX_STACK_TEXT`]), counted in one: one
    /// for each record a stack was left out of (their names are not kept, nor counted apart).
    pub stacks_left_out: usize,
}

/// The stacks one profile record sampled, and the stretch of the run it covers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProfileSlice {
    /// Seconds on the run's timeline: the record covers `(from, to]`.
    pub from: f64,
    pub to: f64,
    /// (index into [`ProfileFigures::stacks`], samples): an hour of records holds each stack's
    /// name once, not once a second.
    pub counts: Vec<(u32, u64)>,
}

impl ProfileFigures {
    /// Each function's own samples (innermost) as a percentage of the window's.
    pub fn own_shares(&self) -> HashMap<&str, f64> {
        own_samples(&self.folded)
            .into_iter()
            .map(|(f, n)| (f, self.percent(n)))
            .collect()
    }

    /// The share of the window's samples, in percent.
    pub fn percent(&self, samples: u64) -> f64 {
        if self.samples == 0 {
            0.0
        } else {
            samples as f64 * 100.0 / self.samples as f64
        }
    }
}

/// Collects profile records as they come; [`Accumulator::finish`] makes the figures.
#[derive(Debug, Default)]
pub struct Accumulator {
    window: (f64, f64),
    figures: ProfileFigures,
    /// Per record: its time, the CPU one sample stands for in percent of a core, and its
    /// samples by innermost function.
    timeline: Vec<(f64, f64, HashMap<String, u64>)>,
    /// Where each stack is in `figures.stacks`, and its samples so far (`folded`, at the end).
    stack_index: HashMap<String, u32>,
    stack_samples: Vec<u64>,
    /// Bytes of the stacks' names kept.
    stack_text: usize,
    /// The stack that counts those past the cap, once there is one.
    other: Option<u32>,
}

impl Accumulator {
    /// Keeps the records that end within `window` (s on the run's timeline).
    pub fn new(window: (f64, f64)) -> Self {
        Accumulator {
            window,
            ..Default::default()
        }
    }

    pub fn add(&mut self, t: f64, p: &Profile) {
        // A record covers the second before its time.
        if t <= self.window.0 || t > self.window.1 + 0.5 {
            return;
        }
        let f = &mut self.figures;
        f.hz = p.hz;
        f.records += 1;
        f.samples += p.samples;
        f.cpu_s += p.cpu_ns as f64 / 1e9;
        f.lost += p.lost;
        let mut leaves: HashMap<String, u64> = HashMap::new();
        let mut counts = Vec::with_capacity(p.stacks.len());
        for (stack, n) in p.folded() {
            let index = match self.stack_index.get(&stack) {
                Some(&i) => i,
                None if f.stacks.len() < MAX_STACKS
                    && self.stack_text + stack.len() <= MAX_STACK_TEXT =>
                {
                    let i = f.stacks.len() as u32;
                    self.stack_text += stack.len();
                    f.stacks.push(stack.clone());
                    self.stack_index.insert(stack.clone(), i);
                    self.stack_samples.push(0);
                    i
                }
                None => {
                    f.stacks_left_out += 1;
                    let i = *self.other.get_or_insert_with(|| {
                        f.stacks.push(OTHER_STACKS.to_string());
                        self.stack_samples.push(0);
                        (f.stacks.len() - 1) as u32
                    });
                    self.stack_samples[i as usize] += n;
                    counts.push((i, n));
                    continue;
                }
            };
            if let Some(leaf) = function_frames(&stack).last() {
                *leaves.entry(leaf.to_string()).or_default() += n;
            }
            self.stack_samples[index as usize] += n;
            counts.push((index, n));
        }
        let seconds = p.interval_ns as f64 / 1e9;
        f.slices.push(ProfileSlice {
            from: t - seconds,
            to: t,
            counts,
        });
        let pct_per_sample = if p.hz > 0 && seconds > 0.0 {
            100.0 / (f64::from(p.hz) * seconds)
        } else {
            0.0
        };
        self.timeline.push((t, pct_per_sample, leaves));
    }

    /// The figures, or `None` when no profile record fell in the window.
    pub fn finish(self) -> Option<ProfileFigures> {
        let mut f = self.figures;
        if f.records == 0 {
            return None;
        }
        f.folded = f.stacks.iter().cloned().zip(self.stack_samples).collect();
        // Each function's own samples and its total (once per stack, however often a recursive
        // function appears in it), counted as the gate counts them; no CPU per request here.
        let counted = analysis::ab::functions::Sampled::of_functions(
            f.folded
                .iter()
                .map(|(stack, &n)| (function_frames(stack), n)),
            0.0,
        );
        let mut top: Vec<FunctionShare> = counted
            .own
            .iter()
            .map(|(name, &n)| FunctionShare {
                name: name.clone(),
                self_samples: n,
                total_samples: counted.total.get(name).copied().unwrap_or(n),
            })
            .collect();
        top.sort_by(|a, b| {
            b.self_samples
                .cmp(&a.self_samples)
                .then_with(|| a.name.cmp(&b.name))
        });
        top.truncate(TOP);
        f.over_time = top
            .iter()
            .take(OVER_TIME)
            .map(|share| Series {
                name: share.name.clone(),
                points: self
                    .timeline
                    .iter()
                    .map(|(t, pct, leaves)| {
                        (
                            *t,
                            leaves.get(&share.name).copied().unwrap_or(0) as f64 * pct,
                        )
                    })
                    .collect(),
            })
            .collect();
        f.top = top;
        Some(f)
    }
}

/// Each function's own samples: the stacks it is innermost in.
fn own_samples(folded: &BTreeMap<String, u64>) -> HashMap<&str, u64> {
    let mut own: HashMap<&str, u64> = HashMap::new();
    for (stack, &n) in folded {
        if let Some(leaf) = function_frames(stack).last() {
            *own.entry(leaf).or_default() += n;
        }
    }
    own
}

/// A folded stack's function frames: without the process and the thread that open it.
pub fn function_frames(stack: &str) -> Vec<&str> {
    stack.split(';').skip(2).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(stacks: &[(&str, u64)]) -> Profile {
        let mut p = Profile {
            hz: 100,
            interval_ns: 1_000_000_000,
            samples: stacks.iter().map(|s| s.1).sum(),
            ..Default::default()
        };
        p.set_folded(stacks.iter().map(|(s, n)| (s.to_string(), *n)));
        p
    }

    #[test]
    fn self_and_total_shares_and_the_window() {
        let mut acc = Accumulator::new((0.0, 2.0));
        let p = profile(&[
            ("srv;main;main;handle;hash", 60),
            ("srv;main;main;handle;hash;hash", 10),
            ("srv;main;main;handle", 20),
            ("srv;gc;gc_mark", 10),
        ]);
        acc.add(-0.5, &p); // the pre-roll: left out
        acc.add(1.0, &p);
        acc.add(2.0, &p);
        acc.add(4.0, &p); // the post-roll: left out
        let f = acc.finish().unwrap();
        assert_eq!((f.records, f.samples), (2, 200));
        let hash = f.top.iter().find(|s| s.name == "hash").unwrap();
        assert_eq!((hash.self_samples, hash.total_samples), (140, 140));
        let handle = f.top.iter().find(|s| s.name == "handle").unwrap();
        assert_eq!((handle.self_samples, handle.total_samples), (40, 180));
        assert_eq!(f.top[0].name, "hash");
        assert!((f.percent(hash.self_samples) - 70.0).abs() < 1e-9);
        // 70 samples of hash a second at 100 Hz: 70 % of a core.
        assert_eq!(f.over_time[0].points, vec![(1.0, 70.0), (2.0, 70.0)]);
        // Each record a slice of the timeline, its stacks named once for the whole window.
        assert_eq!(f.stacks.len(), 4);
        assert_eq!(f.slices.len(), 2);
        assert_eq!((f.slices[1].from, f.slices[1].to), (1.0, 2.0));
        assert_eq!(f.slices[0].counts, f.slices[1].counts);
        assert_eq!(f.slices[0].counts.iter().map(|c| c.1).sum::<u64>(), 100);
        assert!(Accumulator::new((0.0, 1.0)).finish().is_none());
    }

    #[test]
    fn a_target_minting_new_names_every_second_is_kept_within_the_cap() {
        // Every record a thousand stacks never seen before, for longer than the cap holds.
        let mut acc = Accumulator::new((0.0, 100.0));
        let records = MAX_STACKS / 1000 + 5;
        for r in 0..records {
            let names: Vec<String> = (0..1000)
                .map(|i| format!("srv;main;jit_{r}_{i}_{}", "x".repeat(40)))
                .collect();
            let stacks: Vec<(&str, u64)> = names.iter().map(|s| (s.as_str(), 1)).collect();
            acc.add(1.0 + r as f64, &profile(&stacks));
        }
        let f = acc.finish().unwrap();
        assert_eq!(
            f.stacks.len(),
            MAX_STACKS + 1,
            "the cap and the one that counts the rest"
        );
        assert_eq!(f.stacks_left_out, records * 1000 - MAX_STACKS);
        // Every sample is still counted, the rest under a name that says what it is.
        assert_eq!(f.folded.values().sum::<u64>(), (records * 1000) as u64);
        assert_eq!(f.folded[OTHER_STACKS], (records * 1000 - MAX_STACKS) as u64);
        assert!(OTHER_STACKS.contains(&MAX_STACKS.to_string()));
    }
}
