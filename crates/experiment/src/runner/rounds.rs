//! `[compare]`: two builds (and an A/A control) compared at one fixed rate in interleaved
//! rounds. Every compared target is started once and kept up, warmed once, and then every
//! repetition is a round that runs each target's cell once, in a random order; the gate
//! (`store::ab`) is judged from the runs kept.

use std::collections::BTreeMap;

use store::ab::{Gate, Rounds};
use store::capacity::random::Rng;
use store::run::{RunMeta, StoredRun};
use store::vocabulary::Phase;
use tokio::sync::watch;

use super::cell::{CellContext, Watched};
use super::firing::{measure_outcome, warmup_outcome, CellOutcome, Firing};
use super::options::Error;
use crate::file::{CompareSpec, TargetSpec};
use crate::plan::Cell;

/// The repetitions of `cells` (the rounds), ascending, each once.
fn repetitions(cells: &[&Cell]) -> Vec<u32> {
    let mut all: Vec<u32> = cells.iter().map(|c| c.repetition).collect();
    all.sort_unstable();
    all.dedup();
    all
}

/// A compared target while its rounds run.
struct Up<'c> {
    name: String,
    spec: TargetSpec,
    watched: Watched,
    /// Its cells by repetition.
    cells: BTreeMap<u32, &'c Cell>,
}

impl<F: Firing> CellContext<'_, F> {
    /// Runs `cells` (one setting's, every compared target and repetition) as `compare`'s
    /// rounds. Returns each cell's outcome, and the gate when every round ran.
    pub(super) async fn run_rounds(
        &self,
        cells: &[&Cell],
        compare: &CompareSpec,
        stop: &mut watch::Receiver<bool>,
    ) -> Result<(Vec<(String, CellOutcome)>, Option<Gate>), Error> {
        let mut outcomes = Vec::new();
        let mut up: Vec<Up> = Vec::new();
        for name in compare.targets() {
            let mine: BTreeMap<u32, &Cell> = cells
                .iter()
                .filter(|c| c.target == name)
                .map(|c| (c.repetition, *c))
                .collect();
            let Some(first) = mine.values().next().copied() else {
                continue;
            };
            let spec = self.spec(first)?.clone();
            let mut watched = match self.watch(first, &spec).await? {
                Ok(w) => w,
                Err(outcome) => {
                    self.fail_all(&mine, &outcome, &mut outcomes).await?;
                    continue;
                }
            };
            if let Some(failed) = self.wait_ready(first, &spec, &mut watched).await? {
                self.fail_all(&mine, &failed, &mut outcomes).await?;
                continue;
            }
            up.push(Up {
                name: name.to_string(),
                spec,
                watched,
                cells: mine,
            });
        }
        let mut runs: BTreeMap<(String, u32), String> = BTreeMap::new();
        let interrupted = self.rounds(&up, stop, &mut outcomes, &mut runs).await?;
        for u in up {
            let Some(last) = u.cells.values().last().copied() else {
                continue;
            };
            drop((u.watched.probes, u.watched.reader));
            let so_far = CellOutcome::Done;
            if let Some(CellOutcome::Failed(why)) =
                self.stop_target(last, u.watched.target, &so_far).await
            {
                // It exited during the rounds: none of its runs is to be trusted, and each of
                // its cells is kept failed (its run, if any, with the reason).
                outcomes.retain(|(key, _)| *key != last.key());
                for cell in u.cells.values() {
                    let id = runs.remove(&(u.name.clone(), cell.repetition));
                    self.keep_failed(cell, &why, id).await?;
                    outcomes.push((cell.key(), CellOutcome::Failed(why.clone())));
                }
            }
        }
        if interrupted {
            return Ok((outcomes, None));
        }
        let gate = self.judge(cells, compare, &runs).await?;
        Ok((outcomes, gate))
    }

    /// Warms each target once, then runs the rounds; whether they were interrupted.
    async fn rounds(
        &self,
        up: &[Up<'_>],
        stop: &mut watch::Receiver<bool>,
        outcomes: &mut Vec<(String, CellOutcome)>,
        runs: &mut BTreeMap<(String, u32), String>,
    ) -> Result<bool, Error> {
        let mut warm = vec![true; up.len()];
        if !self.plan.warmup.is_zero() {
            for (i, u) in up.iter().enumerate() {
                let Some(cell) = u.cells.values().next().copied() else {
                    continue;
                };
                let warmup = self.attack(
                    cell,
                    &u.spec,
                    &u.watched,
                    Phase::Warmup,
                    Some(self.plan.warmup),
                    RunMeta::new_id(),
                );
                match warmup_outcome(self.fire(&warmup, stop).await) {
                    CellOutcome::Done => {}
                    CellOutcome::Interrupted => return Ok(true),
                    failed => {
                        warm[i] = false;
                        self.fail_all(&u.cells, &failed, outcomes).await?;
                    }
                }
            }
        }
        let cells: Vec<&Cell> = up.iter().flat_map(|u| u.cells.values().copied()).collect();
        let mut rng = Rng::new(store::capacity::random::seed_of(&RunMeta::new_id()));
        for repetition in repetitions(&cells) {
            let mut order: Vec<usize> = (0..up.len()).filter(|&i| warm[i]).collect();
            for i in (1..order.len()).rev() {
                let j = ((rng.uniform() * (i + 1) as f64) as usize).min(i);
                order.swap(i, j);
            }
            for i in order {
                let u = &up[i];
                let Some(cell) = u.cells.get(&repetition).copied() else {
                    continue;
                };
                let id = RunMeta::new_id();
                let measure =
                    self.attack(cell, &u.spec, &u.watched, Phase::Measure, None, id.clone());
                let outcome = measure_outcome(self.fire(&measure, stop).await);
                match &outcome {
                    CellOutcome::Interrupted => return Ok(true),
                    CellOutcome::Done => {
                        runs.insert((u.name.clone(), repetition), id.clone());
                    }
                    CellOutcome::Failed(reason) => {
                        self.keep_failed(cell, reason, Some(id)).await?;
                    }
                }
                outcomes.push((cell.key(), outcome));
                if !self.plan.cooldown.is_zero() {
                    tokio::select! {
                        _ = tokio::time::sleep(self.plan.cooldown) => {}
                        _ = stop.changed() => {}
                    }
                }
            }
        }
        Ok(false)
    }

    /// Keeps every cell of `cells` failed as `outcome` says.
    async fn fail_all(
        &self,
        cells: &BTreeMap<u32, &Cell>,
        outcome: &CellOutcome,
        outcomes: &mut Vec<(String, CellOutcome)>,
    ) -> Result<(), Error> {
        let CellOutcome::Failed(reason) = outcome else {
            return Ok(());
        };
        for cell in cells.values() {
            self.keep_failed(cell, reason, None).await?;
            outcomes.push((cell.key(), outcome.clone()));
        }
        Ok(())
    }

    /// The gate of the rounds' kept runs.
    async fn judge(
        &self,
        cells: &[&Cell],
        compare: &CompareSpec,
        runs: &BTreeMap<(String, u32), String>,
    ) -> Result<Option<Gate>, Error> {
        let allowed = compare.allowed().map_err(Error::Setup)?;
        let mut loaded: BTreeMap<String, StoredRun> = BTreeMap::new();
        for id in runs.values() {
            loaded.insert(id.clone(), self.store.load_run(id).await?);
        }
        let repetitions = repetitions(cells);
        let of = |name: &str| -> Vec<Option<&StoredRun>> {
            repetitions
                .iter()
                .map(|r| {
                    runs.get(&(name.to_string(), *r))
                        .and_then(|id| loaded.get(id))
                })
                .collect()
        };
        let rounds = Rounds {
            baseline: of(&compare.baseline),
            candidate: of(&compare.candidate),
            control: compare.control.as_deref().map(of),
        };
        // The load as the runs were sent ("open loop, constant 2000 req/s for 10s").
        let load = loaded
            .values()
            .next()
            .map(|r| r.meta.config.load.clone())
            .unwrap_or_default();
        let setting = cells
            .first()
            .filter(|c| !c.setting.is_empty())
            .map(|c| c.setting_text());
        let load = match setting {
            Some(s) => format!("{load} ({s})"),
            None => load.to_string(),
        };
        Ok(Some(Gate::judge(
            (
                &compare.baseline,
                &compare.candidate,
                compare.control.as_deref(),
            ),
            &load,
            &rounds,
            &allowed,
        )))
    }
}
