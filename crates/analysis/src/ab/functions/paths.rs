//! Where the CPU per request changed, call path by call path: [`super`]'s estimate for each
//! box of the call tree (a function reached through its callers, every process and thread
//! merged), so that a differential flame graph is drawn from estimates and not from shares: a
//! box as wide as the candidate's CPU per request on that path, coloured only where its change
//! is beyond noise.
//!
//! **The estimand.** For a code path and a build: the CPU per request, µs, of the samples whose
//! stack starts with that path (the path's innermost function and what it called from there),
//! the candidate's minus the baseline's, the mean over rounds of each round's difference, as
//! for a function ([`super`]). The root is the whole: the server's CPU per request.
//!
//! **Many paths at once.** Every path with a sample in a run compared is tested, the root among
//! them, and the paths named as changed are the Benjamini–Hochberg selection at [`super::FDR`] over
//! them all, their intervals at the false-coverage-rate level, as for the functions. A path's
//! samples hold its callees', so the tests are positively dependent, under which the
//! procedure keeps its rate (Benjamini and Yekutieli 2001). The proof is [`super::tests`]'
//! simulated sittings.

use std::collections::{BTreeSet, HashMap};

use serde::{Deserialize, Serialize};

use super::{select, FunctionChange, Sampled};

/// A path narrower in the candidate than this share of its CPU per request is not kept: in a
/// graph 1,200 pixels wide it would be under a pixel and a quarter.
pub const DRAWN_SHARE: f64 = 0.001;

/// The root's name: every sample.
pub const ROOT: &str = "all";

/// One box of the call tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathChange {
    /// Its caller's index in [`CallTree::paths`]; the root has none.
    pub parent: Option<usize>,
    /// Its innermost function (the root: [`ROOT`]), it and what it called on this path
    /// ([`Part::Total`]), in both builds.
    pub change: FunctionChange,
}

/// The call tree's paths, each with its change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallTree {
    /// Paths tested: each with a sample in a run compared (at a search's knee, with
    /// [`super::knee::MIN_SAMPLES`] over its steps), the root among them.
    pub tested: usize,
    /// The root first, then every path kept (at least [`DRAWN_SHARE`] of the candidate's CPU
    /// per request), each after its caller.
    pub paths: Vec<PathChange>,
    /// Paths named as changed that are not kept (the candidate runs them rarely or no more),
    /// and the one of them whose change is the largest.
    pub hidden_named: usize,
    pub hidden_largest: Option<FunctionChange>,
}

impl CallTree {
    /// The paths named as changed among those kept.
    pub fn named(&self) -> impl Iterator<Item = &PathChange> {
        self.paths.iter().filter(|p| p.change.named)
    }
}

/// The call tree of `runs` (every run compared), each path's change estimated by `estimate`
/// (its name, and how many of a run's samples are the path's); a path with fewer than
/// `min_samples` samples over the runs is not tested (its p-value 1, left out of the paths
/// the selection is made among).
pub(super) fn tree(
    runs: &[&Sampled],
    min_samples: u64,
    estimate: impl Fn(&str, &dyn Fn(&Sampled) -> u64) -> FunctionChange,
) -> CallTree {
    let keys: BTreeSet<&str> = runs
        .iter()
        .flat_map(|run| run.paths.keys())
        .map(String::as_str)
        .collect();
    let (mut changes, many) = estimated(runs, min_samples, &keys, estimate);
    let tested = selected(&mut changes, &many);
    let mut changes = changes.into_iter();
    let Some(root) = changes.next() else {
        return CallTree {
            tested,
            paths: Vec::new(),
            hidden_named: 0,
            hidden_largest: None,
        };
    };
    kept(tested, &keys, root, changes)
}

/// Each path's change by `estimate`, the root first, and whether the path has `min_samples`
/// samples over the runs, so is tested.
fn estimated(
    runs: &[&Sampled],
    min_samples: u64,
    keys: &BTreeSet<&str>,
    estimate: impl Fn(&str, &dyn Fn(&Sampled) -> u64) -> FunctionChange,
) -> (Vec<FunctionChange>, Vec<bool>) {
    // The root, then the paths in order: a caller's path sorts before every path it starts.
    let mut changes = vec![estimate(ROOT, &|run: &Sampled| run.samples)];
    let mut many = vec![true];
    for key in keys {
        let name = key.rsplit(';').next().unwrap_or(key);
        let count = |run: &Sampled| run.paths.get(*key).copied().unwrap_or(0);
        changes.push(estimate(name, &count));
        many.push(runs.iter().map(|run| count(run)).sum::<u64>() >= min_samples);
    }
    (changes, many)
}

/// The Benjamini–Hochberg selection among the changes tested (`many`), the others' p-values
/// set to 1; how many were tested.
fn selected(changes: &mut [FunctionChange], many: &[bool]) -> usize {
    let mut among: Vec<FunctionChange> = changes
        .iter()
        .zip(many)
        .filter(|(_, m)| **m)
        .map(|(c, _)| c.clone())
        .collect();
    select(&mut among);
    let tested = among.len();
    let mut among = among.into_iter();
    for (c, m) in changes.iter_mut().zip(many) {
        match m {
            true => {
                if let Some(selected) = among.next() {
                    *c = selected;
                }
            }
            false => c.p = 1.0,
        }
    }
    tested
}

/// The tree from its root and the paths' `changes` (in the order of `keys`): every path kept,
/// each after its caller, and how many named paths were not kept, with the largest of them.
fn kept(
    tested: usize,
    keys: &BTreeSet<&str>,
    root: FunctionChange,
    changes: impl Iterator<Item = FunctionChange>,
) -> CallTree {
    let least = root.candidate_us * DRAWN_SHARE;
    let mut index: HashMap<&str, usize> = HashMap::new();
    let mut paths = vec![PathChange {
        parent: None,
        change: root,
    }];
    let (mut hidden_named, mut hidden_largest): (usize, Option<FunctionChange>) = (0, None);
    for (key, change) in keys.iter().zip(changes) {
        // A caller's CPU holds its callees' in every run, so a kept path's caller is kept.
        let parent = match key.rsplit_once(';') {
            None => Some(0),
            Some((caller, _)) => index.get(caller).copied(),
        };
        match parent {
            Some(parent) if change.candidate_us >= least => {
                index.insert(key, paths.len());
                paths.push(PathChange {
                    parent: Some(parent),
                    change,
                });
            }
            _ if change.named => {
                hidden_named += 1;
                if hidden_largest
                    .as_ref()
                    .is_none_or(|h| change.difference_us.abs() > h.difference_us.abs())
                {
                    hidden_largest = Some(change);
                }
            }
            _ => {}
        }
    }
    CallTree {
        tested,
        paths,
        hidden_named,
        hidden_largest,
    }
}
