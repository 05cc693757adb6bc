//! The gates of the comparisons a sitting ran, judged once its schedule ends and kept for the
//! experiment's page: `[compare]`'s rounds at a fixed rate from their kept runs (`analysis::ab`),
//! and searches compared in `[search]` rounds from their capacities.

use std::collections::BTreeMap;

use analysis::ab::{Gate, Reading, Rounds};
use store::run::{RunMeta, StoredRun};

use super::cell::Searched;
use super::options::{Error, RunReport};
use super::Cells;
use crate::file::CompareSpec;
use crate::plan::Cell;

/// A comparison run in this sitting, to judge once the schedule ends.
pub(super) enum Comparison {
    /// `[compare]`'s rounds at a fixed rate: one setting's cells as they ran (a share made its
    /// rate), the rounds' numbers, each kept run's id by (target, repetition), and a share's
    /// words (`80%`) with the capacity it was taken of.
    Rounds {
        cells: Vec<Cell>,
        rounds: Vec<u32>,
        runs: BTreeMap<(String, u32), String>,
        share: Option<(String, f64)>,
        /// Read once, or after every round (`rounds = "auto"`), and why it stopped there.
        reading: Reading,
        stopped: Option<String>,
    },
    /// Searches compared in `[search]` rounds: one setting and repetition's cells, and what
    /// the comparison returned.
    Searches {
        cells: Vec<Cell>,
        searched: Searched,
    },
}

impl Cells<'_> {
    /// Judges each comparison `compared` in the order they ran, keeps its gate for the
    /// experiment's page (as printed) and returns it in `report`.
    pub(super) async fn judge(
        &self,
        compared: Vec<Comparison>,
        report: &mut RunReport,
    ) -> Result<(), Error> {
        let Some(compare) = &self.plan.compare else {
            return Ok(());
        };
        for comparison in compared {
            let (cells, gate) = match comparison {
                Comparison::Rounds {
                    cells,
                    rounds,
                    runs,
                    share,
                    reading,
                    stopped,
                } => {
                    let mut gate = self
                        .rounds_gate(&cells, &rounds, compare, &runs, share.as_ref(), reading)
                        .await?;
                    gate.stopped = stopped;
                    (cells, gate)
                }
                Comparison::Searches { cells, searched } => {
                    let past = self.past_gates(&cells).await?;
                    let gate = self.capacity_gate(&cells, compare, &searched, &past)?;
                    (cells, gate)
                }
            };
            analysis::ab::put_gate(
                self.store,
                &kept_gate(self.experiment, self.plan, &cells, &gate),
            )
            .await?;
            report.gates.push(gate);
        }
        Ok(())
    }

    /// The gate of the rounds' kept runs (`runs`, by target and round).
    async fn rounds_gate(
        &self,
        cells: &[Cell],
        round_numbers: &[u32],
        compare: &CompareSpec,
        runs: &BTreeMap<(String, u32), String>,
        share: Option<&(String, f64)>,
        reading: Reading,
    ) -> Result<Gate, Error> {
        let (_, allowed) = compare.allowed(&self.experiment.file)?;
        let mut loaded: BTreeMap<String, StoredRun> = BTreeMap::new();
        for id in runs.values() {
            loaded.insert(id.clone(), self.store.load_run(id).await?);
        }
        let of = |name: &str| -> Vec<Option<&StoredRun>> {
            round_numbers
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
        let mut gate = Gate::judge(
            (
                &compare.baseline,
                &compare.candidate,
                compare.control.as_deref(),
            ),
            &rounds_load(&load.to_string(), cells, share),
            &rounds,
            &allowed,
            compare.processes,
            reading,
        );
        gate.revisions = self.launcher.checkouts.texts(compare.targets());
        Ok(gate)
    }

    /// The gate of a comparison of searches (`[compare]` with `[search]` rounds): the
    /// candidate's capacity ÷ the baseline's, judged against the share it may fall.
    fn capacity_gate(
        &self,
        cells: &[Cell],
        compare: &CompareSpec,
        searched: &Searched,
        past: &[Gate],
    ) -> Result<Gate, Error> {
        let (allowed, _) = compare.allowed(&self.experiment.file)?;
        let slo = self
            .plan
            .search
            .as_ref()
            .map(|s| s.slo.join(", "))
            .unwrap_or_default();
        let mut load = format!("capacity searches within {slo}");
        // The setting's axes but the rate (the search's own).
        let axes = cells
            .first()
            .map(|c| c.axes_but(Some("rate")))
            .unwrap_or_default();
        if !axes.is_empty() {
            load = format!("{load} ({})", axes.join(" "));
        }
        let id = |name: &str| searched.id(name).unwrap_or_default();
        let mut gate = Gate::of_capacities(
            (
                &compare.baseline,
                &compare.candidate,
                compare.control.as_deref(),
            ),
            (
                id(&compare.baseline),
                id(&compare.candidate),
                compare.control.as_deref().map(id),
            ),
            &load,
            &searched.compared,
            &allowed,
            past,
        );
        gate.revisions = self.launcher.checkouts.texts(compare.targets());
        Ok(gate)
    }
}

impl Cells<'_> {
    /// The gates kept of this experiment at the setting of `cells` in earlier sittings: where
    /// their A/A controls are, the spread between processes of one build is read from them.
    async fn past_gates(&self, cells: &[Cell]) -> Result<Vec<Gate>, Error> {
        let setting = setting_of(cells);
        Ok(analysis::ab::gates(self.store, &self.experiment.file.name)
            .await?
            .into_iter()
            .filter(|g| g.setting == setting)
            .map(|g| g.gate)
            .collect())
    }
}

/// The load of rounds at a fixed rate as a gate says it: as the runs were sent, with the
/// setting's axes; a share's rate said as what it was taken of.
fn rounds_load(sent: &str, cells: &[Cell], share: Option<&(String, f64)>) -> String {
    let skip = share.map(|_| "rate");
    let mut said = cells.first().map(|c| c.axes_but(skip)).unwrap_or_default();
    if let Some((share, capacity)) = share {
        said.push(format!(
            "{share} of {capacity:.0} req/s, the lowest of the builds' capacities"
        ));
    }
    if said.is_empty() {
        sent.to_string()
    } else {
        format!("{sent} ({})", said.join(", "))
    }
}

/// The setting of `cells` in words, as a gate is kept with it ("" without axes).
fn setting_of(cells: &[Cell]) -> String {
    cells
        .first()
        .filter(|c| !c.setting.is_empty())
        .map(|c| c.setting_text())
        .unwrap_or_default()
}

/// A sitting's gate as kept for the experiment's page, with its setting, file and scale.
fn kept_gate(
    experiment: &crate::file::Experiment,
    plan: &crate::plan::Plan,
    cells: &[Cell],
    gate: &Gate,
) -> analysis::ab::KeptGate {
    analysis::ab::KeptGate {
        id: RunMeta::new_id(),
        experiment: experiment.file.name.clone(),
        setting: setting_of(cells),
        file_label: crate::plan::Plan::file_label(experiment),
        scale: plan.scale,
        judged_at_ns: store::run::now_ns(),
        gate: gate.clone(),
    }
}
