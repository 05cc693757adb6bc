//! `[compare]`: two builds (and an A/A control) compared at one fixed rate in interleaved
//! rounds: every repetition a round that runs each target's cell once, in a random order (a
//! share of the searches' capacities is such a rate once resolved: `share::resolve_compared`). With
//! `processes = "fresh"` (the default) each run is a process of its own, started, warmed and
//! stopped in its round; with `"kept"` each target is started and warmed once and kept up
//! through the rounds. The runs kept are the comparison that `gates` judges once the schedule
//! ends. With `rounds = "auto"` the runs kept so far are judged after every round from
//! `min_rounds` on, read with a confidence sequence, and the rounds stop once every gated
//! measure is decided, at `max_rounds`, or before a round the budget would not hold.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use analysis::ab::{Allowed, Gate, Processes, Reading, Rounds};
use analysis::capacity::random::Rng;
use store::run::RunMeta;
use store::vocabulary::Phase;
use tokio::sync::watch;

use super::cell::{CellContext, Watched};
use super::firing::{held_back, measure_outcome, warmup_outcome, CellOutcome, Firing};
use super::gates::Comparison;
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

/// The indices `0..n` in a random order (Fisher–Yates).
fn shuffled(rng: &mut Rng, mut order: Vec<usize>) -> Vec<usize> {
    for i in (1..order.len()).rev() {
        let j = ((rng.uniform() * (i + 1) as f64) as usize).min(i);
        order.swap(i, j);
    }
    order
}

/// A compared target: its spec and its cells by repetition.
struct Build<'c> {
    name: String,
    spec: TargetSpec,
    cells: BTreeMap<u32, &'c Cell>,
}

/// A process of a compared target, up, and the cells it serves.
struct Up<'b, 'c> {
    build: &'b Build<'c>,
    watched: Watched,
    cells: BTreeMap<u32, &'c Cell>,
}

/// What a comparison's runs came to so far: each cell's outcome, and each kept run's id by
/// (target, repetition).
#[derive(Default)]
struct Tally {
    outcomes: Vec<(String, CellOutcome)>,
    runs: BTreeMap<(String, u32), String>,
}

/// A gate read after every round: what it is held to, and when its rounds began.
struct Looks<'a> {
    compare: &'a CompareSpec,
    allowed: &'a Allowed,
    auto: crate::file::AutoRounds,
    began: Instant,
    /// Why the rounds stopped where they did, once they did.
    stopped: Option<String>,
}

impl<F: Firing> CellContext<'_, F> {
    /// Runs `cells` (one setting's, every compared target and repetition) as `compare`'s
    /// rounds. Returns each cell's outcome, and the comparison to judge when every round ran.
    pub(super) async fn run_rounds(
        &self,
        cells: &[&Cell],
        compare: &CompareSpec,
        allowed: &Allowed,
        stop: &mut watch::Receiver<bool>,
    ) -> Result<(Vec<(String, CellOutcome)>, Option<Comparison>), Error> {
        let mut builds = Vec::new();
        for name in compare.targets() {
            let mine: BTreeMap<u32, &Cell> = cells
                .iter()
                .filter(|c| c.target == name)
                .map(|c| (c.repetition, *c))
                .collect();
            let Some(first) = mine.values().next().copied() else {
                continue;
            };
            builds.push(Build {
                name: name.to_string(),
                spec: self.spec(first)?.clone(),
                cells: mine,
            });
        }
        let mut tally = Tally::default();
        let mut rng = Rng::new(analysis::capacity::random::seed_of(&RunMeta::new_id()));
        let rounds = repetitions(cells);
        let mut looks = compare.auto().map(|auto| Looks {
            compare,
            allowed,
            auto,
            began: Instant::now(),
            stopped: None,
        });
        let interrupted = match compare.processes {
            Processes::Kept => {
                self.kept(&builds, &rounds, &mut rng, stop, &mut tally, &mut looks)
                    .await?
            }
            Processes::Fresh => {
                self.fresh(&builds, &rounds, &mut rng, stop, &mut tally, &mut looks)
                    .await?
            }
        };
        if interrupted {
            // Said as such, so that the sitting is reported stopped (to run again), not run.
            let key = cells.first().map(|c| c.key()).unwrap_or_default();
            tally.outcomes.push((key, CellOutcome::Interrupted));
            return Ok((tally.outcomes, None));
        }
        // The rounds that ran: a gate read after every round may have stopped early.
        let ran: Vec<u32> = rounds
            .into_iter()
            .filter(|r| tally.runs.keys().any(|(_, round)| round == r))
            .collect();
        let reading = looks
            .as_ref()
            .map_or(Reading::Once, |_| Reading::Sequential);
        let comparison = Comparison::Rounds {
            cells: cells.iter().map(|c| (*c).clone()).collect(),
            rounds: ran,
            runs: tally.runs,
            share: self.share.clone(),
            reading,
            stopped: looks.and_then(|l| l.stopped),
        };
        Ok((tally.outcomes, Some(comparison)))
    }

    /// Every build started and warmed once, kept up through the rounds; whether they were
    /// interrupted.
    async fn kept(
        &self,
        builds: &[Build<'_>],
        rounds: &[u32],
        rng: &mut Rng,
        stop: &mut watch::Receiver<bool>,
        tally: &mut Tally,
        looks: &mut Option<Looks<'_>>,
    ) -> Result<bool, Error> {
        let mut up = Vec::new();
        for b in builds {
            match self.start(b, b.cells.clone()).await? {
                Ok(u) => up.push(u),
                Err(failed) => self.unstarted(&b.cells, &failed, tally).await?,
            }
        }
        let mut warm = vec![true; up.len()];
        let mut interrupted = false;
        for (i, u) in up.iter().enumerate() {
            match self.warm(u, stop).await {
                CellOutcome::Done => {}
                CellOutcome::Interrupted => interrupted = true,
                failed => {
                    warm[i] = false;
                    self.fail_all(&u.cells, &failed, tally).await?;
                }
            }
            if interrupted {
                break;
            }
        }
        if !interrupted {
            'rounds: for (done, &repetition) in rounds.iter().enumerate() {
                let order = (0..up.len()).filter(|&i| warm[i]).collect();
                for i in shuffled(rng, order) {
                    if self.measure(&up[i], repetition, stop, tally).await? {
                        interrupted = true;
                        break 'rounds;
                    }
                }
                if self
                    .looked(looks, builds, &rounds[..=done], rounds.len(), tally)
                    .await?
                {
                    break;
                }
            }
        }
        for u in up {
            self.finish(u, tally).await?;
        }
        Ok(interrupted)
    }

    /// Every run a process of its own: in each round, each build in a random order started,
    /// warmed, measured and stopped; whether they were interrupted. A build that does not
    /// start is not tried again: its cells from that round on fail with its reason.
    async fn fresh(
        &self,
        builds: &[Build<'_>],
        rounds: &[u32],
        rng: &mut Rng,
        stop: &mut watch::Receiver<bool>,
        tally: &mut Tally,
        looks: &mut Option<Looks<'_>>,
    ) -> Result<bool, Error> {
        let mut dead = vec![false; builds.len()];
        for (done, &repetition) in rounds.iter().enumerate() {
            let order = (0..builds.len()).filter(|&i| !dead[i]).collect();
            for i in shuffled(rng, order) {
                let b = &builds[i];
                let Some(cell) = b.cells.get(&repetition).copied() else {
                    continue;
                };
                if *stop.borrow() {
                    return Ok(true);
                }
                let u = match self.start(b, BTreeMap::from([(repetition, cell)])).await? {
                    Ok(u) => u,
                    Err(failed) => {
                        dead[i] = true;
                        let left = b.cells.range(repetition..).map(|(r, c)| (*r, *c)).collect();
                        self.unstarted(&left, &failed, tally).await?;
                        continue;
                    }
                };
                let interrupted = match self.warm(&u, stop).await {
                    CellOutcome::Done => self.measure(&u, repetition, stop, tally).await?,
                    CellOutcome::Interrupted => true,
                    failed => {
                        self.fail_all(&u.cells, &failed, tally).await?;
                        false
                    }
                };
                self.finish(u, tally).await?;
                if interrupted {
                    return Ok(true);
                }
            }
            if self
                .looked(looks, builds, &rounds[..=done], rounds.len(), tally)
                .await?
            {
                break;
            }
        }
        Ok(false)
    }

    /// A gate read after every round, after the rounds `ran`: whether to stop here (every
    /// gated measure decided, or the budget would not hold another round), its reason kept in
    /// `looks`. At the last of `planned` rounds, why it ends undecided, if it does.
    async fn looked(
        &self,
        looks: &mut Option<Looks<'_>>,
        builds: &[Build<'_>],
        ran: &[u32],
        planned: usize,
        tally: &Tally,
    ) -> Result<bool, Error> {
        let Some(looks) = looks.as_mut() else {
            return Ok(false);
        };
        let done = ran.len();
        if done < looks.auto.min as usize {
            return Ok(false);
        }
        let gate = self.gate_so_far(looks, builds, ran, tally).await?;
        if gate.decided() {
            looks.stopped = Some(format!(
                "Read after every round from round {}: decided after {done} rounds (of at most {planned}).",
                looks.auto.min
            ));
            return Ok(true);
        }
        let more = |gate: &Gate| match gate.rounds_to_decide(10_000) {
            Some(n) => format!("about {n} rounds in all would decide it at this spread"),
            None => {
                "no number of rounds like these would decide it (the ratio sits on the band's edge)"
                    .into()
            }
        };
        let elapsed = looks.began.elapsed();
        let per_round = elapsed / done as u32;
        if let Some(budget) = looks.auto.budget {
            if done < planned && elapsed + per_round > budget {
                looks.stopped = Some(format!(
                    "Read after every round: undecided when the budget of {} was spent, after {done} rounds ({} each); {}.",
                    humantime::format_duration(budget),
                    humantime::format_duration(Duration::from_secs(per_round.as_secs().max(1))),
                    more(&gate)
                ));
                return Ok(true);
            }
        }
        if done == planned {
            looks.stopped = Some(format!(
                "Read after every round: undecided at the most rounds, {planned}; {}.",
                more(&gate)
            ));
        }
        Ok(false)
    }

    /// The gate of the rounds `ran` so far, read as a confidence sequence.
    async fn gate_so_far(
        &self,
        looks: &Looks<'_>,
        builds: &[Build<'_>],
        ran: &[u32],
        tally: &Tally,
    ) -> Result<Gate, Error> {
        let mut loaded: BTreeMap<String, store::run::StoredRun> = BTreeMap::new();
        for ((name, round), id) in &tally.runs {
            if ran.contains(round) && builds.iter().any(|b| &b.name == name) {
                loaded.insert(id.clone(), self.store.load_run(id).await?);
            }
        }
        let of = |name: &str| -> Vec<Option<&store::run::StoredRun>> {
            ran.iter()
                .map(|r| {
                    tally
                        .runs
                        .get(&(name.to_string(), *r))
                        .and_then(|id| loaded.get(id))
                })
                .collect()
        };
        let rounds = Rounds {
            baseline: of(&looks.compare.baseline),
            candidate: of(&looks.compare.candidate),
            control: looks.compare.control.as_deref().map(of),
        };
        Ok(Gate::judge(
            (
                &looks.compare.baseline,
                &looks.compare.candidate,
                looks.compare.control.as_deref(),
            ),
            "",
            &rounds,
            looks.allowed,
            looks.compare.processes,
            Reading::Sequential,
        ))
    }

    /// Starts a process of `build` to serve `cells`, ready; or why it did not start (kept as
    /// the first cell's failure).
    async fn start<'b, 'c>(
        &self,
        build: &'b Build<'c>,
        cells: BTreeMap<u32, &'c Cell>,
    ) -> Result<Result<Up<'b, 'c>, CellOutcome>, Error> {
        let Some(first) = cells.values().next().copied() else {
            return Ok(Err(CellOutcome::Failed("no cell to run".into())));
        };
        let mut watched = match self.watch(first, &build.spec).await? {
            Ok(w) => w,
            Err(outcome) => return Ok(Err(outcome)),
        };
        if let Some(failed) = self.wait_ready(first, &build.spec, &mut watched).await? {
            return Ok(Err(failed));
        }
        Ok(Ok(Up {
            build,
            watched,
            cells,
        }))
    }

    /// The file's warm-up of a process just up (none when the file sets none).
    async fn warm(&self, u: &Up<'_, '_>, stop: &mut watch::Receiver<bool>) -> CellOutcome {
        let Some(cell) = u.cells.values().next().copied() else {
            return CellOutcome::Done;
        };
        if self.plan.warmup.is_zero() {
            return CellOutcome::Done;
        }
        let warmup = self.attack(
            cell,
            &u.build.spec,
            &u.watched,
            Phase::Warmup,
            Some(self.plan.warmup),
            RunMeta::new_id(),
        );
        warmup_outcome(self.fire(&warmup, stop).await)
    }

    /// Runs `u`'s cell of `repetition` (then the file's cool-down); whether it was interrupted.
    async fn measure(
        &self,
        u: &Up<'_, '_>,
        repetition: u32,
        stop: &mut watch::Receiver<bool>,
        tally: &mut Tally,
    ) -> Result<bool, Error> {
        let Some(cell) = u.cells.get(&repetition).copied() else {
            return Ok(false);
        };
        // A run other processes held back is kept as failed, and the build measured once more
        // in this round when the generator's CPUs are quiet, as a cell of its own is.
        let mut id = RunMeta::new_id();
        let mut again = true;
        let outcome = loop {
            let measure = self.attack(
                cell,
                &u.build.spec,
                &u.watched,
                Phase::Measure,
                None,
                id.clone(),
            );
            let fired = self.fire(&measure, stop).await;
            let retry = held_back(&fired) && again;
            let outcome = measure_outcome(fired);
            let reason = match &outcome {
                CellOutcome::Failed(reason) if retry => Some(reason.clone()),
                _ => None,
            };
            let Some(reason) = reason else {
                break outcome;
            };
            if !self
                .quiet_again(cell, &reason, Some(id.clone()), stop)
                .await?
            {
                break CellOutcome::Interrupted;
            }
            again = false;
            id = RunMeta::new_id();
        };
        match &outcome {
            CellOutcome::Interrupted => return Ok(true),
            CellOutcome::Done => {
                tally.runs.insert((u.build.name.clone(), repetition), id);
            }
            CellOutcome::Failed(reason) => {
                self.keep_failed(cell, reason, Some(id)).await?;
            }
        }
        tally.outcomes.push((cell.key(), outcome));
        if !self.plan.cooldown.is_zero() {
            tokio::select! {
                _ = tokio::time::sleep(self.plan.cooldown) => {}
                _ = stop.changed() => {}
            }
        }
        Ok(false)
    }

    /// Stops `u`'s process. One that exited while it served its cells fails each of them
    /// (its runs, if any, kept failed with the reason): none of them is to be trusted.
    async fn finish(&self, u: Up<'_, '_>, tally: &mut Tally) -> Result<(), Error> {
        let Some(last) = u.cells.values().last().copied() else {
            return Ok(());
        };
        drop((u.watched.probes, u.watched.reader));
        let Some(CellOutcome::Failed(why)) = self
            .stop_target(last, u.watched.target, &CellOutcome::Done)
            .await
        else {
            return Ok(());
        };
        // This process's outcomes are the last of its key: one a cell at most.
        let key = last.key();
        for _ in 0..u.cells.len() {
            if let Some(at) = tally.outcomes.iter().rposition(|(k, _)| *k == key) {
                tally.outcomes.remove(at);
            }
        }
        for cell in u.cells.values() {
            let id = tally.runs.remove(&(u.build.name.clone(), cell.repetition));
            self.keep_failed(cell, &why, id).await?;
            tally
                .outcomes
                .push((cell.key(), CellOutcome::Failed(why.clone())));
        }
        Ok(())
    }

    /// `cells` of a process that did not start: the first kept failed already (by
    /// [`Self::start`]), the others kept failed with its reason.
    async fn unstarted(
        &self,
        cells: &BTreeMap<u32, &Cell>,
        outcome: &CellOutcome,
        tally: &mut Tally,
    ) -> Result<(), Error> {
        let mut rest = cells.clone();
        if let Some((_, first)) = rest.pop_first() {
            tally.outcomes.push((first.key(), outcome.clone()));
        }
        self.fail_all(&rest, outcome, tally).await
    }

    /// Keeps every cell of `cells` failed as `outcome` says.
    async fn fail_all(
        &self,
        cells: &BTreeMap<u32, &Cell>,
        outcome: &CellOutcome,
        tally: &mut Tally,
    ) -> Result<(), Error> {
        let CellOutcome::Failed(reason) = outcome else {
            return Ok(());
        };
        for cell in cells.values() {
            self.keep_failed(cell, reason, None).await?;
            tally.outcomes.push((cell.key(), outcome.clone()));
        }
        Ok(())
    }
}
