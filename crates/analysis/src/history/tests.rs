//! The change points against simulated histories: a known shift found where it happened,
//! noise not cut (the false-positive rate over many draws), and a change's interval holding
//! the true change.

use super::*;
use crate::capacity::random::Rng;

/// A simulated history's series: `n` sittings, a level that steps by the factors `shifts`
/// (at the sittings given), each sitting drifting by SD `drift` (the host's, between
/// sittings) and measured with SD `noise` (known to the sitting when `known`).
struct World {
    n: usize,
    shifts: Vec<(usize, f64)>,
    drift: f64,
    noise: f64,
    known: bool,
    /// The drift's lag-1 correlation from one sitting to the next (0: independent).
    rho: f64,
}

impl World {
    fn level(&self, i: usize) -> f64 {
        self.shifts
            .iter()
            .filter(|(at, _)| i >= *at)
            .map(|(_, f)| f.ln())
            .sum()
    }

    fn draw(&self, rng: &mut Rng, measure: Measure) -> Raw {
        // Correlated sittings: the drift an AR(1) series, as the null's draws are.
        let mut wander = Vec::new();
        if self.rho > 0.0 {
            wander = vec![0.0; self.n];
            divisive::ar1(&mut wander, self.rho, rng);
        }
        let points = (0..self.n)
            .map(|i| Point {
                sitting: i,
                revision: Some(format!("r{i}")),
                value: (1000f64.ln()
                    + self.level(i)
                    + self.drift * wander.get(i).copied().unwrap_or_else(|| rng.normal())
                    + if self.rho > 0.0 && self.noise == 0.0 {
                        0.0
                    } else {
                        self.noise * rng.normal()
                    })
                .exp(),
                variance: self.known.then_some(self.noise * self.noise),
                runs: 1,
            })
            .collect();
        Raw {
            key: Key {
                target: "go".into(),
                setting: String::new(),
                measure,
            },
            points,
        }
    }

    fn sittings(&self) -> Vec<Sitting> {
        (0..self.n)
            .map(|i| Sitting {
                id: format!("s{i}"),
                started_at_ns: i as i64,
                revisions: vec![format!("r{i}")],
                host: None,
            })
            .collect()
    }
}

fn judge(world: &World, rng: &mut Rng, measure: Measure, config: Config) -> History {
    History::judge(
        "sim",
        world.sittings(),
        vec![world.draw(rng, measure)],
        0,
        config,
        &[],
    )
}

/// Without a change, a history is cut no more often than its level says: 2000 histories of
/// 16 sittings at 5 %, each drawn with the host's drift.
#[test]
fn noise_alone_is_cut_no_more_often_than_the_level() {
    let world = World {
        n: 16,
        shifts: vec![],
        drift: 0.03,
        noise: 0.01,
        known: true,
        rho: 0.0,
    };
    let mut rng = Rng::new(7);
    let draws = 2000;
    let cut = (0..draws)
        .filter(|_| {
            !judge(&world, &mut rng, Measure::Capacity, Config::default()).series[0]
                .changes
                .is_empty()
        })
        .count();
    let rate = cut as f64 / draws as f64;
    eprintln!("noise: {cut} of {draws} histories cut");
    // 5 % with its Monte Carlo error (±1 point at 2 SE). Measured: 73 of 2000 (112 before the
    // null carried the correlation read within the segments).
    assert!(rate <= 0.065, "{cut} of {draws} noise histories were cut");
}

/// The world: 16 sittings on a host drifting 1 % between sittings and measuring
/// with 1 % error (a reference-normalised figure's spread), an 8 % regression at sitting 6 and
/// a 5 % improvement at sitting 11. Both are found at their sittings in most histories (the
/// 5 % one, 3.5 SDs, is placed one sitting off in about one in ten), nothing is found away
/// from them, and each change's interval holds its true size.
#[test]
fn a_regression_and_an_improvement_are_found_at_their_sittings() {
    let world = World {
        n: 16,
        shifts: vec![(6, 1.0 / 1.08), (11, 1.05)],
        drift: 0.01,
        noise: 0.01,
        known: true,
        rho: 0.0,
    };
    let mut rng = Rng::new(11);
    let draws = 200;
    let (mut exact, mut near, mut elsewhere, mut held, mut intervals) = (0, 0, 0, 0, 0);
    for _ in 0..draws {
        let h = judge(&world, &mut rng, Measure::Capacity, Config::default());
        let s = &h.series[0];
        let at: Vec<usize> = s.changes.iter().map(|c| c.at).collect();
        let close = |truth: usize| at.iter().any(|a| a.abs_diff(truth) <= 1);
        if at == [6, 11] {
            exact += 1;
        }
        if close(6) && close(11) {
            near += 1;
        }
        if at.iter().any(|a| a.abs_diff(6) > 1 && a.abs_diff(11) > 1) || at.len() > 2 {
            elsewhere += 1;
        }
        for c in &s.changes {
            let truth = match c.at {
                6 => 1.0 / 1.08,
                11 => 1.05,
                _ => continue,
            };
            intervals += 1;
            if c.low <= truth && truth <= c.high {
                held += 1;
            }
            assert_eq!(c.worse, c.at == 6, "{c:?}");
            assert_eq!(
                c.before_revision.as_deref(),
                Some(&*format!("r{}", c.at - 1))
            );
            assert_eq!(c.after_revision.as_deref(), Some(&*format!("r{}", c.at)));
        }
    }
    eprintln!(
        "changes: {exact} exact, {near} within a sitting, {elsewhere} elsewhere; intervals held {held} of {intervals}"
    );
    // Measured: 144 exact, 167 within a sitting, 4 elsewhere, the intervals held 312 of 332
    // (161, 185 and 1 with the independent null, before the null carried the correlation read
    // within the series' segments: one series of 16 sittings reads it only roughly, and what
    // it reads costs a little power).
    assert!(
        exact >= 135,
        "both changes found at their sittings in {exact} of {draws}"
    );
    assert!(
        near >= 160,
        "both found within a sitting in {near} of {draws}"
    );
    assert!(
        elsewhere <= 14,
        "{elsewhere} of {draws} had a change found elsewhere"
    );
    let coverage = held as f64 / intervals as f64;
    assert!(coverage >= 0.93, "the intervals held {held} of {intervals}");
}

/// A change smaller than the least asked for is not called, and its sittings are pooled into
/// one level.
#[test]
fn a_change_below_the_least_asked_for_is_not_one() {
    let world = World {
        n: 16,
        shifts: vec![(8, 1.04)],
        drift: 0.005,
        noise: 0.005,
        known: true,
        rho: 0.0,
    };
    let mut rng = Rng::new(3);
    let found = judge(&world, &mut rng, Measure::Cpu, Config::default());
    assert_eq!(
        found.series[0].changes.len(),
        1,
        "{:?}",
        found.series[0].changes
    );
    let c = &found.series[0].changes[0];
    assert_eq!(c.at, 8);
    assert!(c.worse, "CPU per request up is worse");
    let mut rng = Rng::new(3);
    let config = Config {
        min_change: 0.06,
        ..Config::default()
    };
    let quiet = judge(&world, &mut rng, Measure::Cpu, config);
    assert!(quiet.series[0].changes.is_empty());
    assert_eq!(quiet.series[0].segments.len(), 1);
    assert_eq!(quiet.series[0].segments[0].k, 16);
}

/// Sittings without an interval of their own (one run each) are pooled by their spread: the
/// change is still found, and its interval is a real one.
#[test]
fn sittings_without_their_own_interval_are_judged_by_their_spread() {
    let world = World {
        n: 12,
        shifts: vec![(6, 1.10)],
        drift: 0.01,
        noise: 0.01,
        known: false,
        rho: 0.0,
    };
    let mut rng = Rng::new(5);
    let h = judge(&world, &mut rng, Measure::P99, Config::default());
    let s = &h.series[0];
    assert_eq!(s.changes.len(), 1, "{:?}", s.changes);
    let c = &s.changes[0];
    assert_eq!(c.at, 6);
    assert!(c.low > 1.0 && c.low < 1.10 && c.high > 1.10, "{c:?}");
}

/// CI's question: a change that made things worse in the last N sittings, and not one that
/// made them better or lies further back.
#[test]
fn the_last_sittings_are_asked_for_changes_that_made_things_worse() {
    let worse_late = World {
        n: 12,
        shifts: vec![(9, 0.85)],
        drift: 0.005,
        noise: 0.005,
        known: true,
        rho: 0.0,
    };
    let mut rng = Rng::new(9);
    let h = judge(&worse_late, &mut rng, Measure::Capacity, Config::default());
    assert_eq!(h.worse_within(3).len(), 1);
    assert!(
        h.worse_within(2).is_empty(),
        "the change is 3 sittings back"
    );
    let better = World {
        shifts: vec![(9, 1.15)],
        ..worse_late
    };
    let h = judge(&better, &mut rng, Measure::Capacity, Config::default());
    assert_eq!(h.series[0].changes.len(), 1);
    assert!(h.worse_within(3).is_empty(), "more capacity is better");
}

/// The split's statistic: highest where the mean moved, and none for a segment too short to
/// hold two segments of the least size.
#[test]
fn the_energy_statistic_peaks_where_the_mean_moved() {
    let x = [1.0, 1.1, 0.9, 1.0, 1.05, 2.0, 2.1, 1.9, 2.0];
    let (at, _, q) = divisive::best_split(&x, 2).unwrap();
    assert_eq!(at, 5);
    assert!(q > 0.0);
    assert!(divisive::best_split(&x[..3], 2).is_none());
}

/// A history of four series of 16 sittings correlated one to the next (ρ = 0.3), the first
/// series' level divided by `first_falls` from sitting 8 on.
fn correlated(rng: &mut Rng, first_falls: f64) -> History {
    let world = World {
        n: 16,
        shifts: vec![],
        drift: 0.03,
        noise: 0.0,
        known: false,
        rho: 0.3,
    };
    let sittings = world.sittings();
    let series: Vec<Raw> = (0..4)
        .map(|i| {
            let mut raw = world.draw(rng, Measure::Capacity);
            raw.key.target = format!("t{i}");
            if i == 0 {
                for p in raw.points.iter_mut().skip(8) {
                    p.value /= first_falls;
                }
            }
            raw
        })
        .collect();
    History::judge("sim", sittings, series, 0, Config::default(), &[])
}

/// Sittings correlated one to the next (ρ = 0.3), no change: 16 sittings, four series a
/// history (capacity of two targets, CPU and p99 of one, as a nightly has), at 5 % over the
/// history. The null carries the correlation read within the segments: histories cut ≤ 7 %
/// (measured 25 of 400; was 14.5 % with independent draws, for one series).
#[test]
fn sittings_correlated_one_to_the_next_are_not_cut_as_changes() {
    let mut rng = Rng::new(31);
    let draws = 400;
    let mut cut = 0;
    let mut rhos = Vec::new();
    for _ in 0..draws {
        let h = correlated(&mut rng, 1.0);
        rhos.push(h.serial.map_or(0.0, |s| s.rho));
        if h.series.iter().any(|s| !s.changes.is_empty()) {
            cut += 1;
        }
    }
    rhos.sort_by(f64::total_cmp);
    eprintln!(
        "rho 0.3: {cut} of {draws} histories cut; rho read: median {:.2}",
        rhos[draws / 2]
    );
    assert!(cut as f64 / draws as f64 <= 0.07, "{cut} of {draws}");
}

/// The same correlated sittings with a 10 % regression at sitting 8 in one series (3.3 times the
/// sittings' SD): found within a sitting of where it happened in more than half the histories.
/// The correlation costs power: measured 120 of 200, where the independent null, which also
/// cut 14.5 % of change-free histories, found 174.
#[test]
fn a_change_among_correlated_sittings_is_still_found() {
    let mut rng = Rng::new(37);
    let draws = 200;
    let found = (0..draws)
        .filter(|_| {
            correlated(&mut rng, 1.10).series[0]
                .changes
                .iter()
                .any(|c| c.at.abs_diff(8) <= 1)
        })
        .count();
    eprintln!(
        "a 10 % change among correlated sittings: found at its sitting in {found} of {draws}"
    );
    assert!(found as f64 / draws as f64 >= 0.5, "{found} of {draws}");
}
