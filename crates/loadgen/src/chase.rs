//! A pointer chase through 64 MiB: dependent loads that miss the caches, so that their time is
//! the host's memory latency. The built-in target's `--work-kind chase` spends a request's work
//! on it (a reference whose speed is the memory's); a capacity search times a short one after
//! each step, the host's memory as a covariate of the step's figure (`StepHost::chase_ns`).

use std::time::{Duration, Instant};

/// The chain's size: well beyond the last-level caches of the hosts Showdown runs on.
const BYTES: usize = 64 << 20;

/// The chain: indices forming one cycle through all of them in a random order (Sattolo's
/// shuffle), so that every load depends on the one before and lands where no prefetcher
/// guessed. Made once per process, on first use (about a second).
pub fn chain() -> &'static [u32] {
    static CHAIN: std::sync::OnceLock<Vec<u32>> = std::sync::OnceLock::new();
    CHAIN.get_or_init(|| {
        let n = BYTES / std::mem::size_of::<u32>();
        let mut order: Vec<u32> = (0..n as u32).collect();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for i in (1..n).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            order.swap(i, (x % i as u64) as usize);
        }
        let mut next = vec![0u32; n];
        for w in 0..n {
            next[order[w] as usize] = order[(w + 1) % n];
        }
        next
    })
}

/// Walks the chain for `work`, in a function of its own so that a profile names it.
#[inline(never)]
pub fn chase_for(work: Duration) {
    let next = chain();
    let until = Instant::now() + work;
    let mut at = 0usize;
    loop {
        for _ in 0..64 {
            at = next.get(at).copied().unwrap_or(0) as usize;
        }
        std::hint::black_box(at);
        if Instant::now() >= until {
            return;
        }
    }
}

/// The loads a timing walks: about 2 ms where a load misses to memory (100 ns).
const TIMED_LOADS: usize = 20_000;

/// The time of one dependent load, ns: the median of five walks of [`TIMED_LOADS`], each
/// starting where the last ended (the median, so that one walk preempted by another process
/// does not stand for the memory). Blocking: about 10 ms, and the chain's making the first time.
pub fn time_per_load() -> f64 {
    let next = chain();
    let mut at = 0usize;
    let mut walks = [0.0f64; 5];
    for walk in walks.iter_mut() {
        let started = Instant::now();
        for _ in 0..TIMED_LOADS {
            at = next.get(at).copied().unwrap_or(0) as usize;
        }
        std::hint::black_box(at);
        *walk = started.elapsed().as_nanos() as f64 / TIMED_LOADS as f64;
    }
    walks.sort_by(f64::total_cmp);
    walks[2]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The chain is one cycle through every index: a walk of its length comes back to where it
    /// began and no sooner, so no load is served from a short loop in the caches.
    #[test]
    fn the_chain_is_one_cycle_through_all_of_it() {
        let next = chain();
        let n = next.len();
        assert_eq!(n, BYTES / 4);
        let mut at = 0usize;
        for step in 1..=n {
            at = next[at] as usize;
            if at == 0 {
                assert_eq!(step, n, "back at the start after {step} of {n} loads");
            }
        }
        assert_eq!(at, 0);
    }

    /// A load that misses the caches takes longer than an L1 hit (~1 ns) on any host.
    #[test]
    fn a_timed_load_misses_the_caches() {
        let ns = time_per_load();
        assert!(ns > 2.0 && ns < 10_000.0, "{ns} ns a load");
    }
}
