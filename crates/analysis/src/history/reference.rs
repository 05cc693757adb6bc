//! Sittings made comparable: a target's figures divided by a reference's from the same sitting.
//!
//! A host's sittings differ (on a shared VM the same server's capacity moved 20–28 % between
//! sittings), and most of that moves every process on the host alike. A reference, a workload
//! that does not change (`loadgen target --work 1ms --work-kind spin|chase|syscall`), run in
//! every sitting beside the target on the target's CPU, moves with the host; the ratio target ÷
//! reference keeps what is the target's own. Each kind of reference is slowed by a different
//! part of the host (the core's clock, the caches and memory, the kernel's entries), so the one
//! that tracks a target best is chosen from the history itself: the one whose ratio varies least
//! from sitting to sitting over its first [`CALIBRATION`] sittings (the calibration), and the
//! choice is frozen there: the sittings after it are judged with the reference the calibration
//! chose, not one chosen on them, so a change in a later sitting cannot choose its own
//! reference. Where none varies less than the raw figure over the calibration, none tracks the
//! target, and its raw figures are judged, as said.
//!
//! **Spread** is the root mean square of successive differences of the logarithm, ÷ √2 (von
//! Neumann's): for sittings that vary about one level it estimates their SD, and a rare change
//! of level moves it little, so a change does not make a reference look worse than it is.

use serde::{Deserialize, Serialize};

use super::{Key, Point, Raw};

/// The fewest sittings a reference is chosen over.
pub const CALIBRATION: usize = 8;

/// How a series was made comparable across sittings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Normalised {
    /// The reference the figures are divided by, `None` where none tracked the target (or
    /// too few sittings held both).
    pub reference: Option<String>,
    /// The raw figure's spread from sitting to sitting (a share: 0.05 is 5 %) over the first
    /// [`CALIBRATION`] sittings, with three or more.
    pub raw_spread: Option<f64>,
    /// Each reference's ratio's spread over the first [`CALIBRATION`] sittings that held both,
    /// for those run in enough of the same sittings.
    pub spreads: Vec<(String, f64)>,
    /// Sittings that held both the target and the chosen reference, of the target's.
    pub sittings: usize,
}

/// Von Neumann's spread of `values`' logarithms; `None` with fewer than three.
pub fn spread(values: &[f64]) -> Option<f64> {
    if values.len() < 3 {
        return None;
    }
    let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
    let ms = logs.windows(2).map(|w| (w[1] - w[0]).powi(2)).sum::<f64>() / (logs.len() - 1) as f64;
    Some((ms / 2.0).sqrt())
}

/// `target` ÷ `reference`, sitting by sitting, over the sittings that hold both.
fn divided(target: &Raw, reference: &Raw) -> Vec<Point> {
    target
        .points
        .iter()
        .filter_map(|p| {
            let r = reference.points.iter().find(|r| r.sitting == p.sitting)?;
            Some(Point {
                sitting: p.sitting,
                revision: p.revision.clone(),
                value: p.value / r.value,
                variance: match (p.variance, r.variance) {
                    (Some(a), Some(b)) => Some(a + b),
                    _ => None,
                },
                runs: p.runs,
            })
        })
        .collect()
}

/// The series as they are judged with `references` given: each target's series divided by
/// the reference that tracks it best (the same setting and measure), or left raw where none
/// does; the references' own series kept as they are (the host's drift, seen).
pub fn normalise(series: Vec<Raw>, references: &[String]) -> Vec<(Raw, Option<Normalised>)> {
    if references.is_empty() {
        return series.into_iter().map(|s| (s, None)).collect();
    }
    let is_reference = |key: &Key| references.contains(&key.target);
    let refs: Vec<&Raw> = series.iter().filter(|s| is_reference(&s.key)).collect();
    let mut out = Vec::new();
    for s in &series {
        if is_reference(&s.key) {
            out.push((s.clone(), None));
            continue;
        }
        // The calibration: the first sittings, where the choice is made and frozen.
        let calibration = |points: &[Point]| -> Option<f64> {
            let mut points: Vec<&Point> = points.iter().collect();
            points.sort_by_key(|p| p.sitting);
            let values: Vec<f64> = points.iter().take(CALIBRATION).map(|p| p.value).collect();
            spread(&values)
        };
        let raw_spread = calibration(&s.points);
        let mut candidates: Vec<(String, f64, Vec<Point>)> = refs
            .iter()
            .filter(|r| r.key.setting == s.key.setting && r.key.measure == s.key.measure)
            .filter_map(|r| {
                let points = divided(s, r);
                if points.len() < CALIBRATION {
                    return None;
                }
                Some((r.key.target.clone(), calibration(&points)?, points))
            })
            .collect();
        candidates.sort_by(|a, b| a.1.total_cmp(&b.1));
        let spreads = candidates.iter().map(|(n, v, _)| (n.clone(), *v)).collect();
        match candidates.into_iter().next() {
            Some((name, best, points)) if raw_spread.is_some_and(|raw| best < raw) => {
                let key = Key {
                    target: format!("{} ÷ {name}", s.key.target),
                    ..s.key.clone()
                };
                let sittings = points.len();
                out.push((
                    Raw { key, points },
                    Some(Normalised {
                        reference: Some(name),
                        raw_spread,
                        spreads,
                        sittings,
                    }),
                ));
            }
            _ => out.push((
                s.clone(),
                Some(Normalised {
                    reference: None,
                    raw_spread,
                    spreads,
                    sittings: s.points.len(),
                }),
            )),
        }
    }
    out
}

impl Normalised {
    /// In words: "divided by the reference spin …: 1.2 % from sitting to sitting against 6.3 %
    /// raw; chase 2.0 %".
    pub fn text(&self) -> String {
        let raw = self
            .raw_spread
            .map_or(String::new(), |r| format!("{:.1} % ", r * 100.0));
        let others = |skip: Option<&String>| {
            let rest: Vec<String> = self
                .spreads
                .iter()
                .filter(|(n, _)| Some(n) != skip)
                .map(|(n, v)| format!("{n} {:.1} %", v * 100.0))
                .collect();
            if rest.is_empty() {
                String::new()
            } else {
                format!("; {}", rest.join(", "))
            }
        };
        match &self.reference {
            Some(r) => {
                let best = self
                    .spreads
                    .iter()
                    .find(|(n, _)| n == r)
                    .map_or(0.0, |(_, v)| *v);
                format!(
                    "divided by the reference {r} run in the same sittings ({} of them), chosen on the first {CALIBRATION} and frozen since: {:.1} % from sitting to sitting against {raw}raw{}",
                    self.sittings,
                    best * 100.0,
                    others(Some(r))
                )
            }
            None if self.spreads.is_empty() => format!(
                "raw figures ({raw}from sitting to sitting): no reference ran in {CALIBRATION} or more of its sittings"
            ),
            None => format!(
                "raw figures ({raw}from sitting to sitting over the first {CALIBRATION}): no reference tracks it{}",
                others(None)
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ab::Measure;
    use crate::capacity::random::Rng;

    fn raw(target: &str, values: &[f64]) -> Raw {
        Raw {
            key: Key {
                target: target.into(),
                setting: String::new(),
                measure: Measure::Capacity,
            },
            points: values
                .iter()
                .enumerate()
                .map(|(i, v)| Point {
                    sitting: i,
                    revision: None,
                    value: *v,
                    variance: None,
                    runs: 1,
                })
                .collect(),
        }
    }

    /// A host that drifts 10 % from sitting to sitting moves the target and the reference
    /// that shares its bottleneck alike: that reference is chosen, and the ratio varies by its
    /// own noise alone; one that does not share it (moved by something else) is not.
    #[test]
    fn the_reference_that_moves_with_the_target_is_chosen_and_removes_the_hosts_drift() {
        let mut rng = Rng::new(42);
        let n = 12;
        let (mut target, mut spin, mut chase) = (vec![], vec![], vec![]);
        for _ in 0..n {
            let core = 0.10 * rng.normal();
            let memory = 0.10 * rng.normal();
            target.push(1000.0 * (core + 0.01 * rng.normal()).exp());
            spin.push(900.0 * (core + 0.01 * rng.normal()).exp());
            chase.push(400.0 * (memory + 0.01 * rng.normal()).exp());
        }
        let series = vec![raw("go", &target), raw("spin", &spin), raw("chase", &chase)];
        let judged = normalise(series, &["spin".into(), "chase".into()]);
        let (go, how) = &judged[0];
        assert_eq!(go.key.target, "go ÷ spin");
        let how = how.as_ref().unwrap();
        assert_eq!(how.reference.as_deref(), Some("spin"));
        let normalised = spread(&go.points.iter().map(|p| p.value).collect::<Vec<_>>()).unwrap();
        let raw = how.raw_spread.unwrap();
        assert!(normalised < raw / 3.0, "{normalised} against {raw}");
        assert!(
            how.text().contains("divided by the reference spin"),
            "{}",
            how.text()
        );
        // The references are kept as they are: the host's drift, seen.
        assert_eq!(judged[1].0.key.target, "spin");
        assert!(judged[1].1.is_none());
    }

    /// The choice is made on the first sittings and frozen: a reference that tracks the target
    /// only after them (its bottleneck the target's from sitting 8 on) is not chosen, however
    /// well it tracks it over the whole history.
    #[test]
    fn the_reference_is_chosen_on_the_calibration_sittings_and_frozen() {
        let mut rng = Rng::new(43);
        let n = 24;
        let (mut target, mut spin, mut chase) = (vec![], vec![], vec![]);
        for i in 0..n {
            let core = 0.10 * rng.normal();
            let memory = 0.10 * rng.normal();
            let moved = if i < CALIBRATION { core } else { memory };
            target.push(1000.0 * (moved + 0.01 * rng.normal()).exp());
            spin.push(900.0 * (core + 0.01 * rng.normal()).exp());
            chase.push(400.0 * (memory + 0.01 * rng.normal()).exp());
        }
        let whole = |r: &[f64]| {
            let ratio: Vec<f64> = target.iter().zip(r).map(|(t, r)| t / r).collect();
            spread(&ratio).unwrap()
        };
        // Over all 24 sittings chase tracks the target better; over the first 8, spin.
        assert!(whole(&chase) < whole(&spin));
        let judged = normalise(
            vec![raw("go", &target), raw("spin", &spin), raw("chase", &chase)],
            &["spin".into(), "chase".into()],
        );
        let how = judged[0].1.as_ref().unwrap();
        assert_eq!(how.reference.as_deref(), Some("spin"));
        assert!(
            how.text()
                .contains("chosen on the first 8 and frozen since"),
            "{}",
            how.text()
        );
    }

    /// A target moved by nothing the references share is left raw, and says why; so is one
    /// with too few sittings beside a reference.
    #[test]
    fn no_reference_that_tracks_the_target_leaves_its_raw_figures() {
        let mut rng = Rng::new(7);
        let (mut target, mut spin) = (vec![], vec![]);
        for _ in 0..10 {
            target.push(1000.0 * (0.02 * rng.normal()).exp());
            spin.push(900.0 * (0.08 * rng.normal()).exp());
        }
        let judged = normalise(
            vec![raw("go", &target), raw("spin", &spin)],
            &["spin".into()],
        );
        let (go, how) = &judged[0];
        assert_eq!(go.key.target, "go");
        let how = how.as_ref().unwrap();
        assert_eq!(how.reference, None);
        assert!(
            how.text().contains("no reference tracks it; spin"),
            "{}",
            how.text()
        );

        let judged = normalise(
            vec![raw("go", &target[..5]), raw("spin", &spin[..5])],
            &["spin".into()],
        );
        let how = judged[0].1.as_ref().unwrap();
        assert_eq!(how.reference, None);
        assert!(
            how.text().contains("no reference ran in 8 or more"),
            "{}",
            how.text()
        );
    }
}
