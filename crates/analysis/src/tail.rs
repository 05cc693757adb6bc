//! A run's latency quantiles (p50, p99, p99.9) with 95 % intervals that hold on correlated
//! latencies, or the reason a run cannot give one.
//!
//! **What the confidence is about.** The quantile of the process the run sampled after its
//! warm-up: the server's p99 at this load, were the run continued for ever under the same
//! conditions. Not another run's figure: a host that moves between runs is judged by repeating
//! them (the gate, the capacity search's repetitions).
//!
//! **The method: batch means.** Latencies under load are correlated (a queue, a pause, a
//! stalled connection spreads one slow moment over many requests), so the order-statistic
//! interval, exact for independent samples, is far too narrow. The run's recorded intervals are
//! kept as at most [`SLOTS`] consecutive slots ([`Slots`]); after the warm-up (the first
//! second) they are cut into ten consecutive batches of (nearly) equal length where each would
//! hold at least [`TEN_BATCHES_FROM`] requests, else five. The
//! quantile is read in each batch, and Student's t over the batches' figures gives the spread
//! of the whole figure; the interval is the wider of that and the independent one, about the
//! figure of the whole run after its warm-up.
//!
//! **Checks fixed in advance,** each of which prints the reason instead of an interval:
//! - at least ten slots after the warm-up (`Short`);
//! - each batch holds [`BATCH_LEAST`] requests and [`EXCEEDANCES`] above the quantile (`Few`);
//! - each batch holds [`CLUMPS`] clumps above it: the requests above the quantile over their
//!   counts' dispersion across the slots (`Clumped`). Near saturation the requests above a
//!   tail quantile come in long clumps (one slow spell), and a batch of a few clumps says
//!   little: on simulated queues the p99 intervals of runs that passed every other check held
//!   the truth in 80 % of runs at ρ 0.8 (M/M/1, 30,000 requests) and in 11 % at ρ 0.9 with
//!   heavy-tailed service;
//! - the variance of five batches' mean is at most [`GROWTH_LIMIT`] × ten batches' (latencies
//!   correlated longer than a batch make it grow, `Grows`), each less the histogram's rounding
//!   of a batch's figure (a bucket's width, uniform), which does not shrink with the batch;
//! - the batches' figures are not correlated one to the next (lag-1 at most 1.645 ÷
//!   √batches, `Correlated`);
//! - no trend from the first third of the batches to the last (Student's t at 5 %, `Trend`).
//!
//! The coverage where an interval is shown is proven on simulated queues in [`tests`]
//! (`cargo test --release -p analysis tail -- --nocapture` prints the grid): pooled 94.0 %
//! (4,577 of 4,870 shown), the worst cell 89.9 % (the p50 of 10,000 requests at ρ 0.8), the p99
//! of M/M/1 at ρ 0.5 shown in 207 and 258 of 300 runs of 30,000 and 100,000 requests, holding
//! in 91.8 % and 93.0 %. A tail quantile near saturation gets no interval at all on a run of
//! 100,000 requests: the honest answer there is to repeat the run.

use hdrhistogram::Histogram;
use store::summary::{format_ns, thousands, TailFigure, TailInterval, Tails};

use crate::capacity::batch::{merge, spread, t975, widest};
use crate::capacity::interval;

/// At most this many slots are kept: when full, neighbours merge (so a run past its first
/// 80 slots always has 40 to 80, and ten batches of them differ by at most a quarter).
pub const SLOTS: usize = 80;

/// The percentiles a run's tails are read at.
pub const PERCENTILES: [f64; 3] = [50.0, 99.0, 99.9];

/// Each batch holds at least this many requests above the quantile.
pub const EXCEEDANCES: u64 = 20;

/// Each batch holds at least this many requests, whatever the quantile: shorter runs say too
/// little of a queue's state (simulated at ρ 0.9, runs of 3,000 requests held their p50 in
/// 47–83 % of runs with every other check passed).
pub const BATCH_LEAST: u64 = 1_000;

/// Ten batches where each would hold this many requests; five otherwise.
pub const TEN_BATCHES_FROM: u64 = 5_000;

/// Each batch holds at least this many clumps of requests above the quantile, reckoned as the
/// requests above it over their counts' dispersion across the slots (at 20, no p99 interval
/// was shown on any simulated queue; at 1, those shown at ρ 0.8 held the truth in 70 %).
pub const CLUMPS: f64 = 5.0;

/// Five batches' mean may vary at most this many times as much as ten batches'.
pub const GROWTH_LIMIT: f64 = 1.5;

/// What is dropped from a run's start: connections opening, caches and queues filling.
pub const WARMUP_NS: u64 = 1_000_000_000;

/// A run's corrected latencies in at most [`SLOTS`] consecutive slots of its recorded
/// intervals after the warm-up: when the slots are full, each pair merges and a slot holds
/// twice as many intervals. Bounded in memory whatever the run's length: the slot being filled
/// is a histogram (three significant digits, about 90 KB from 1 µs to 1 s), the others are kept
/// serialized (HdrHistogram's V2 encoding, a few KB each).
#[derive(Debug, Clone)]
pub struct Slots {
    /// Each closed slot, V2-serialized (empty where it could not be).
    closed: Vec<Vec<u8>>,
    /// The slot being filled and its place.
    open: Option<(usize, Histogram<u64>)>,
    /// Recorded intervals a slot holds.
    width: u64,
    /// The first interval after the warm-up.
    first: u64,
    /// The last interval taken in, counted from `first`.
    last: Option<u64>,
    interval_ns: u64,
}

/// A slot's histogram: three significant digits, growing to any latency.
fn slot() -> Histogram<u64> {
    let lowest = store::model::HISTOGRAM_LOWEST_NS;
    let mut h = Histogram::new_with_bounds(lowest, 1_000_000_000, 3)
        .expect("constant bounds: lowest 1000 ≥ 1, high ≥ 2 × lowest, 3 significant digits");
    h.auto(true);
    h
}

/// `h` in V2 (empty bytes where it cannot be: the slot then reads as empty, never as made up).
fn pack(h: &Histogram<u64>) -> Vec<u8> {
    use hdrhistogram::serialization::{Serializer, V2Serializer};
    let mut out = Vec::new();
    match V2Serializer::new().serialize(h, &mut out) {
        Ok(_) => out,
        Err(_) => Vec::new(),
    }
}

/// A slot back from V2 (an empty one from empty or unreadable bytes).
fn unpack(bytes: &[u8]) -> Histogram<u64> {
    use hdrhistogram::serialization::Deserializer;
    let mut h = if bytes.is_empty() {
        slot()
    } else {
        Deserializer::new()
            .deserialize(&mut std::io::Cursor::new(bytes))
            .unwrap_or_else(|_| slot())
    };
    h.auto(true);
    h
}

impl Slots {
    /// Slots for a run recorded in intervals of `interval_ns`.
    pub fn new(interval_ns: u64) -> Slots {
        let interval_ns = interval_ns.max(1);
        Slots {
            closed: Vec::new(),
            open: None,
            width: 1,
            first: WARMUP_NS.div_ceil(interval_ns),
            last: None,
            interval_ns,
        }
    }

    /// Takes in interval `index`'s corrected latencies (intervals in order; one left out
    /// counts as empty).
    pub fn add(&mut self, index: u64, corrected: &Histogram<u64>) {
        let Some(after) = index.checked_sub(self.first) else {
            return;
        };
        while after / self.width >= SLOTS as u64 {
            self.halve();
        }
        let at = (after / self.width) as usize;
        self.last = Some(self.last.map_or(after, |l| l.max(after)));
        if self.open.as_ref().is_none_or(|(o, _)| *o != at) {
            self.close();
            let h = self.closed.get(at).map_or_else(slot, |b| unpack(b));
            self.open = Some((at, h));
        }
        if let Some((_, h)) = self.open.as_mut() {
            // Recorded values are within a slot's growing range: adding cannot fail; were it
            // to, the figure would rest on fewer samples, never on made-up ones.
            let _ = h.add(corrected);
        }
    }

    /// The open slot serialized into its place.
    fn close(&mut self) {
        if let Some((at, h)) = self.open.take() {
            while self.closed.len() <= at {
                self.closed.push(Vec::new());
            }
            self.closed[at] = pack(&h);
        }
    }

    /// Each pair of slots merged into one.
    fn halve(&mut self) {
        self.close();
        let slots = std::mem::take(&mut self.closed);
        self.closed = slots
            .chunks(2)
            .map(|pair| {
                let mut a = unpack(&pair[0]);
                if let Some(b) = pair.get(1) {
                    let _ = a.add(unpack(b));
                }
                pack(&a)
            })
            .collect();
        self.width *= 2;
    }

    /// The whole slots, as histograms: a last slot the run ended within is left out.
    fn read(&self) -> Vec<Histogram<u64>> {
        let mut slots: Vec<Histogram<u64>> = self.closed.iter().map(|b| unpack(b)).collect();
        if let Some((at, h)) = &self.open {
            while slots.len() <= *at {
                slots.push(slot());
            }
            slots[*at] = h.clone();
        }
        if matches!(self.last, Some(last) if (last + 1) % self.width != 0) {
            slots.pop();
        }
        slots
    }

    /// The run's tails: each of [`PERCENTILES`] with its interval or why it has none; `None`
    /// where nothing was answered after the warm-up.
    pub fn tails(&self) -> Option<Tails> {
        let slots = self.read();
        let whole = merge(slots.iter())?;
        // Cut once for every quantile: ten batches and five (both where there are ten slots).
        let cut = Cut {
            slots: &slots,
            ten: batches(&slots, 10),
            five: batches(&slots, 5),
        };
        Some(Tails {
            warmup_s: (self.first * self.interval_ns) as f64 / 1e9,
            requests: whole.len(),
            figures: PERCENTILES
                .iter()
                .map(|&p| figure(&cut, &whole, p))
                .collect(),
        })
    }
}

/// The tails of a kept run, read from its stored intervals: for runs kept before a summary held
/// them, and for a group's shards merged as they are read.
pub fn of_run(run: &store::run::StoredRun) -> Option<Tails> {
    let interval_ns = Some(run.meta.interval_ns).filter(|&n| n > 0)?;
    let mut slots = Slots::new(interval_ns);
    for i in &run.intervals {
        let index = u64::try_from(i.start_ns).ok()? / interval_ns;
        slots.add(index, &i.stats.corrected);
    }
    slots.tails()
}

/// Slots cut into `n` consecutive batches of (nearly) equal length.
fn batches(slots: &[Histogram<u64>], n: usize) -> Vec<Histogram<u64>> {
    let k = slots.len();
    (0..n)
        .filter_map(|i| merge(slots[i * k / n..(i + 1) * k / n].iter()))
        .collect()
}

/// The quantile `p` (percent) of `whole`, the union of `slots`, with its interval or why none.
/// A run's slots, and cut into ten and five consecutive batches.
struct Cut<'a> {
    slots: &'a [Histogram<u64>],
    ten: Vec<Histogram<u64>>,
    five: Vec<Histogram<u64>>,
}

fn figure(cut: &Cut<'_>, whole: &Histogram<u64>, p: f64) -> TailFigure {
    let q = p / 100.0;
    let value_ns = whole.value_at_quantile(q);
    TailFigure {
        percentile: p,
        value_ns,
        interval: interval_of(cut, whole, q, value_ns),
    }
}

/// The requests a batch must hold for [`EXCEEDANCES`] above quantile `q`, and at least
/// [`BATCH_LEAST`].
fn per_batch(q: f64) -> u64 {
    // Less a hair, so that 20 ÷ 0.001 reads 20,000, not 20,001.
    ((EXCEEDANCES as f64 / (1.0 - q).max(1e-9) - 1e-6).ceil() as u64).max(BATCH_LEAST)
}

fn interval_of(cut: &Cut<'_>, whole: &Histogram<u64>, q: f64, figure: u64) -> TailInterval {
    let n = whole.len();
    if cut.slots.len() < 10 {
        return TailInterval::Short {
            intervals: cut.slots.len() as u32,
            needed: 10,
        };
    }
    let (chosen, count) = if n / 10 >= TEN_BATCHES_FROM.max(per_batch(q)) {
        (&cut.ten, 10)
    } else {
        (&cut.five, 5)
    };
    let least = chosen.iter().map(Histogram::len).min().unwrap_or(0);
    if chosen.len() < count || least < per_batch(q) {
        return TailInterval::Few {
            requests: n,
            needed: per_batch(q) * count as u64,
        };
    }
    let dispersion = dispersion(cut.slots, figure);
    let above = least as f64 * (1.0 - q);
    if above < CLUMPS * dispersion {
        return TailInterval::Clumped {
            dispersion,
            clumps: above / dispersion,
        };
    }
    let at = |b: &[Histogram<u64>]| -> Vec<f64> {
        b.iter().map(|h| h.value_at_quantile(q) as f64).collect()
    };
    let figures = at(chosen);
    // A batch's figure is a bucket's edge: it carries the histogram's rounding, a uniform error
    // over the bucket's width, beside its sampling error.
    let width = (whole.highest_equivalent(figure) - whole.lowest_equivalent(figure) + 1) as f64;
    if let Some(why) = checks(
        &at(&cut.ten),
        &at(&cut.five),
        &figures,
        width * width / 12.0,
    ) {
        return why;
    }
    let Some(independent) = interval::quantile(whole, q) else {
        return TailInterval::Few {
            requests: n,
            needed: per_batch(q) * count as u64,
        };
    };
    let e = widest(independent, spread(figure as f64, &figures));
    let floor = whole.lowest_equivalent(whole.min()) as f64;
    TailInterval::Bounded {
        low_ns: e.low.max(floor).max(0.0) as u64,
        high_ns: if e.high.is_finite() {
            e.high.ceil() as u64
        } else {
            u64::MAX
        },
        batches: count as u32,
    }
}

/// The checks, in order: the spread grows from ten batches to five; the chosen batches'
/// figures correlated one to the next; a trend from their first third to their last.
/// `rounding` is the variance the histogram's buckets add to each batch's figure: it does not
/// shrink as batches grow, so it is taken out of both spreads, and a growth must exceed it.
/// (Without it, a server whose p50 holds within a bucket or two, the built-in target's at 1 ms,
/// read five batches' spread twice ten batches' in 10 of 13 runs.)
fn checks(ten: &[f64], five: &[f64], chosen: &[f64], rounding: f64) -> Option<TailInterval> {
    let of_mean = |f: &[f64]| (moments(f).1 - rounding).max(0.0) / f.len() as f64;
    let (v10, v5) = (of_mean(ten), of_mean(five));
    if ten.len() == 10 && five.len() == 5 && v5 > GROWTH_LIMIT * v10 + rounding / 5.0 {
        return Some(TailInterval::Grows {
            ratio: if v10 > 0.0 { v5 / v10 } else { f64::INFINITY },
            limit: GROWTH_LIMIT,
        });
    }
    let k = chosen.len();
    let limit = 1.645 / (k as f64).sqrt();
    let lag1 = lag_one(chosen);
    if lag1 > limit {
        return Some(TailInterval::Correlated { lag1, limit });
    }
    let third = k.div_ceil(3);
    let (first, last) = (&chosen[..third], &chosen[k - third..]);
    let (mf, ml) = (moments(first).0, moments(last).0);
    let sd = moments(chosen).1.sqrt();
    let se = sd * (2.0 / third as f64).sqrt();
    if se > 0.0 && ((ml - mf) / se).abs() > t975(k - 1) {
        return Some(TailInterval::Trend {
            first_ns: mf.max(0.0) as u64,
            last_ns: ml.max(0.0) as u64,
        });
    }
    None
}

/// How clumped the requests above `threshold` are: the variance of their counts across the
/// slots over their mean (about 1 where they come independently, the clumps' size-weighted mean
/// size where they come in clumps), at least 1.
fn dispersion(slots: &[Histogram<u64>], threshold: u64) -> f64 {
    let counts: Vec<f64> = slots
        .iter()
        .map(|h| {
            let top = h.max();
            if top > threshold {
                h.count_between(h.next_non_equivalent(threshold), top) as f64
            } else {
                0.0
            }
        })
        .collect();
    let (mean, var) = moments(&counts);
    if mean > 0.0 {
        (var / mean).max(1.0)
    } else {
        1.0
    }
}

/// The mean and the (n − 1) variance.
fn moments(f: &[f64]) -> (f64, f64) {
    let n = f.len() as f64;
    if f.is_empty() {
        return (0.0, 0.0);
    }
    let mean = f.iter().sum::<f64>() / n;
    let var = if f.len() > 1 {
        f.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (mean, var)
}

/// The lag-1 autocorrelation of `f` (0 where it does not vary).
fn lag_one(f: &[f64]) -> f64 {
    let (mean, _) = moments(f);
    let den: f64 = f.iter().map(|x| (x - mean).powi(2)).sum();
    if den <= 0.0 {
        return 0.0;
    }
    f.windows(2)
        .map(|w| (w[0] - mean) * (w[1] - mean))
        .sum::<f64>()
        / den
}

/// "p99" for 99.0, "p99.9" for 99.9.
fn named(p: f64) -> String {
    format!("p{p}")
}

/// "[3.80ms–4.52ms]", or "no interval" where the figure has none.
pub fn bounds_text(f: &TailFigure) -> String {
    match f.interval {
        TailInterval::Bounded {
            low_ns, high_ns, ..
        } if high_ns == u64::MAX => format!("[{}–unbounded]", format_ns(low_ns)),
        TailInterval::Bounded {
            low_ns, high_ns, ..
        } => format!("[{}–{}]", format_ns(low_ns), format_ns(high_ns)),
        _ => "no interval".into(),
    }
}

/// Why `f` has no interval, in words with what to do ("p99.9: no interval: 18,000 requests
/// …"), or `None` where it has one.
pub fn reason(f: &TailFigure) -> Option<String> {
    let p = named(f.percentile);
    let why = match &f.interval {
        TailInterval::Bounded { .. } => return None,
        TailInterval::Short { intervals, needed } => format!(
            "{intervals} recorded intervals after the warm-up, {needed} needed: run longer, or record shorter intervals (--interval 100ms)"
        ),
        TailInterval::Few { requests, needed } => format!(
            "{} requests after the warm-up, {} needed for {EXCEEDANCES} above the {p} and {BATCH_LEAST} in all in each batch: run longer",
            thousands(*requests as f64),
            thousands(*needed as f64)
        ),
        TailInterval::Clumped { dispersion, clumps } => format!(
            "the requests above the {p} come in clumps (their counts spread {dispersion:.0}× as much as independent ones would), about {clumps:.1} clumps a batch where {CLUMPS} are needed: latencies correlated longer than the run allows; run longer, or repeat the run"
        ),
        TailInterval::Grows { ratio, limit } => format!(
            "latencies correlated longer than the run allows (five batches' {p}s spread {ratio:.1}× as much as ten batches', over {limit}×): repeat the run, or run longer"
        ),
        TailInterval::Correlated { lag1, limit } => format!(
            "latencies correlated longer than the run allows (the batches' {p}s correlated one to the next, lag-1 {lag1:.2} over {limit:.2}): repeat the run, or run longer"
        ),
        TailInterval::Trend { first_ns, last_ns } => format!(
            "the {p} moved from {} in the run's first third to {} in its last: the server did not settle; repeat the run, or warm it first",
            format_ns(*first_ns),
            format_ns(*last_ns)
        ),
    };
    Some(format!("{p}: no interval: {why}"))
}

#[cfg(test)]
mod tests;
