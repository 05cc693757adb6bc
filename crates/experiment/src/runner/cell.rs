//! One cell: its target started (or a remote one found healthy) and watched by a probe, the
//! warm-up and the measured run fired as `loadgen order` processes, the target stopped; a cell
//! that could not be measured is kept as failed with its reason.

use std::time::Duration;

use store::run::{HostFacts, RunConfig, RunMeta};
use store::vocabulary::{label, Phase};
use store::Store;
use tokio::sync::watch;

use super::event::{Event, Events};
use super::firing::{
    compare_outcome, held_back, measure_outcome, search_outcome, volley_outcome, warmup_outcome,
    CellOutcome, Firing,
};
use super::options::{Error, RunOptions, SetupError};
use super::setup::Launcher;
use super::Answers;
use crate::file::{Contract, TargetKind, TargetSpec};
use crate::gun::Attack;
use crate::http::reachable;
use crate::plan::{Cell, CellKind, Plan};
use crate::targets::Target;

/// Searches compared in interleaved rounds, as they ran: the comparison (its first search the
/// reference of its ratios) and each target's search id, in that order.
pub(super) struct Searched {
    pub compared: analysis::capacity::compare::Compared,
    pub ids: Vec<(String, String)>,
}

impl Searched {
    /// The search id of `target`'s search.
    pub fn id(&self, target: &str) -> Option<&str> {
        self.ids
            .iter()
            .find(|(t, _)| t == target)
            .map(|(_, id)| id.as_str())
    }
}

/// A cell's target while it is measured, and what watches it: the target the runner started
/// (none for a remote one), the probes it started (the target's, its database's, the watched
/// groups') and the reader of the database's activity, all live until the cell ends.
pub(super) struct Watched {
    pub(super) target: Option<Target>,
    pub(super) probes: Vec<probe::server::RunningProbe>,
    pub(super) reader: Option<crate::watch::ActivityReader>,
    /// Where the generator sends its requests.
    pub(super) base: String,
    /// The probes the generator subscribes to.
    pub(super) probe_addrs: Vec<String>,
}

pub(super) struct CellContext<'a, F: Firing> {
    /// What the cells ask of the experiment file.
    pub(super) answers: &'a Answers,
    pub(super) plan: &'a Plan,
    pub(super) options: &'a RunOptions,
    pub(super) store: &'a Store,
    pub(super) launcher: &'a Launcher<'a>,
    pub(super) placement: &'a str,
    /// A share cell's share (`80%`) and the capacity (req/s) its rate was taken of.
    pub(super) share: Option<(String, f64)>,
    /// What the probes of local targets ask of their subscribers.
    pub(super) keys: &'a ProbeKeys,
    /// What fires the cell's attacks: this machine's generator, or the gun hosts with it.
    pub(super) firing: &'a F,
    pub(super) events: &'a Events,
}

/// The token and TLS certificate of the probes the runner starts for local targets: made
/// once a run, in its private working directory, so that no other local user can read the
/// probe's stream (a target's command lines, its process tree) or take its subscriber slots.
pub(super) struct ProbeKeys {
    token: String,
    token_file: std::path::PathBuf,
    tls: probe::tls::ServerTls,
}

impl ProbeKeys {
    pub(super) fn make(workdir: &std::path::Path) -> Result<ProbeKeys, Error> {
        let mut bytes = [0u8; 24];
        rustix::rand::getrandom(&mut bytes, rustix::rand::GetRandomFlags::empty())
            .map_err(SetupError::ProbeTokenDraw)?;
        let token = hex::encode(bytes);
        let token_file = workdir.join("probe.token");
        crate::gun::write_private(&token_file, token.as_bytes()).map_err(|source| {
            SetupError::ProbeTokenWrite {
                path: token_file.clone(),
                source,
            }
        })?;
        let (tls, _) = probe::tls::ServerTls::generate_or_load(
            &workdir.join("probe-tls"),
            &["localhost".into(), "127.0.0.1".into()],
        )
        .map_err(SetupError::ProbeTls)?;
        Ok(ProbeKeys {
            token,
            token_file,
            tls,
        })
    }
}

impl<F: Firing> CellContext<'_, F> {
    pub(super) fn spec(&self, cell: &Cell) -> Result<&TargetSpec, Error> {
        self.answers
            .targets
            .iter()
            .find(|t| t.name == cell.target)
            .ok_or(Error::Plan(crate::plan::PlanError::NoTarget(
                cell.target.clone(),
            )))
    }

    fn labels(&self, cell: &Cell, phase: Phase, held: &str) -> Vec<(String, String)> {
        let mut labels = vec![(label::TARGET.to_string(), cell.target.clone())];
        labels.extend(cell.setting.iter().cloned());
        labels.extend(self.answers.plan_labels.iter().cloned());
        labels.push((label::CELL.into(), cell.key()));
        labels.push((label::REPETITION.into(), cell.repetition.to_string()));
        labels.push((label::PHASE.into(), phase.as_str().into()));
        labels.push((label::PLACEMENT.into(), self.placement.to_string()));
        if let Some(revision) = self.launcher.checkouts.revision(&cell.target) {
            labels.push((label::REVISION.into(), revision.text()));
        }
        if !held.is_empty() {
            labels.push((label::HELD.into(), held.to_string()));
        }
        if let Some((share, capacity)) = &self.share {
            labels.push((label::SHARE.into(), share.clone()));
            labels.push((label::CAPACITY.into(), capacity.to_string()));
        }
        if let (Phase::Measure, Ok(Some(slo))) = (phase, cell.slo()) {
            labels.push((label::SLO.into(), slo.to_string()));
        }
        labels
    }

    fn run_name(&self, cell: &Cell) -> String {
        format!("{} {} #{}", self.answers.name, cell.key(), cell.repetition)
    }

    /// A measured run that other processes held back, kept as failed with `reason` (under
    /// `id`): waits for the generator's CPUs to be quiet (at most [`super::quiet::LONGEST`]) and
    /// says that `cell` is measured again; `false` where the user stopped meanwhile.
    pub(super) async fn quiet_again(
        &self,
        cell: &Cell,
        reason: &str,
        id: Option<String>,
        stop: &mut watch::Receiver<bool>,
    ) -> Result<bool, Error> {
        self.keep_failed(cell, reason, id).await?;
        let gun_cpus = self.answers.gun_cpus.as_ref();
        let waited = tokio::select! {
            waited = super::quiet::wait(gun_cpus, super::quiet::LONGEST) => waited,
            _ = stop.changed() => return Ok(false),
        };
        self.events.emit(Event::MeasureAgain {
            key: cell.key(),
            waited,
        });
        Ok(true)
    }

    /// Keeps a cell that could not be measured as a failed run, with its reason.
    pub(super) async fn keep_failed(
        &self,
        cell: &Cell,
        reason: &str,
        id: Option<String>,
    ) -> Result<(), Error> {
        // A cell fired from several guns is their run group: each shard kept says why.
        if let Some(group) = &id {
            let members = match self.store.group_members(group).await {
                Ok(members) => members,
                // No gun kept a shard (none started): the cell is kept as a run of its own.
                Err(store::StoreError::NoGroup(_)) => Vec::new(),
                Err(e) => return Err(e.into()),
            };
            if !members.is_empty() {
                for member in members {
                    self.store.fail_run(&member, reason, now_ns()).await?;
                }
                return Ok(());
            }
        }
        let id = match id {
            Some(id) if self.store.load_run_streaming(&id, |_| {}).await.is_ok() => id,
            _ => {
                let id = RunMeta::new_id();
                let meta = RunMeta {
                    id: id.clone(),
                    name: self.run_name(cell),
                    experiment: Some(self.answers.name.clone()),
                    labels: self.labels(cell, Phase::Measure, "").into_iter().collect(),
                    shard: None,
                    tool_version: env!("CARGO_PKG_VERSION").into(),
                    started_at_ns: now_ns(),
                    interval_ns: 1_000_000_000,
                    config: RunConfig {
                        target: cell.target.clone(),
                        load: format!("{:?}", cell.load.mode()).to_lowercase() + " loop (not run)",
                        open_loop: cell.load.mode() == crate::file::Mode::Open,
                        h2: false,
                        threads: 0,
                        max_connections: 0,
                        batch_ns: 0,
                        arrival: None,
                        timeout_ns: 0,
                        offered_rps: None,
                        command_line: Vec::new(),
                        details: serde_json::to_value(&cell.load).unwrap_or_default(),
                    },
                    gun_host: HostFacts::current(),
                };
                self.store.create_run(&meta).await?;
                id
            }
        };
        self.store.fail_run(&id, reason, now_ns()).await?;
        Ok(())
    }

    /// Runs one cell; `resume` is the id of its search left unfinished, to go on with.
    pub(super) async fn run_cell(
        &self,
        cell: &Cell,
        resume: Option<String>,
        stop: &mut watch::Receiver<bool>,
    ) -> Result<CellOutcome, Error> {
        let spec = self.spec(cell)?;
        let run_id = resume.unwrap_or_else(RunMeta::new_id);
        let mut w = match self.watch(cell, spec).await? {
            Ok(w) => w,
            Err(outcome) => return Ok(outcome),
        };
        if let Some(failed) = self.wait_ready(cell, spec, &mut w).await? {
            return Ok(failed);
        }
        if cell.kind == CellKind::Search {
            return self.search_alone(cell, spec, w, run_id, stop).await;
        }
        let (mut outcome, measured_id) = match self.warm_up(cell, spec, &w, stop).await {
            CellOutcome::Done => self.measure_cell(cell, spec, &w, run_id, stop).await?,
            other => (other, None),
        };
        drop((w.probes, w.reader));
        if let Some(failed) = self.stop_target(cell, w.target, &outcome).await {
            outcome = failed;
        }
        if let CellOutcome::Failed(reason) = &outcome {
            self.keep_failed(cell, reason, measured_id).await?;
        }
        Ok(outcome)
    }

    /// A search cell, its target watched in `w`: its steps warm up on their own, and the cell
    /// is the search (under `run_id`); the target stopped after.
    async fn search_alone(
        &self,
        cell: &Cell,
        spec: &TargetSpec,
        w: Watched,
        run_id: String,
        stop: &mut watch::Receiver<bool>,
    ) -> Result<CellOutcome, Error> {
        let searched = self.attack(cell, spec, &w, Phase::Step, None, run_id);
        let outcome = search_outcome(self.fire(&searched, stop).await);
        self.end_search(cell, w, outcome).await
    }

    /// The cell's warm-up, when the plan has one: `Done` when it passed or there is none.
    async fn warm_up(
        &self,
        cell: &Cell,
        spec: &TargetSpec,
        w: &Watched,
        stop: &mut watch::Receiver<bool>,
    ) -> CellOutcome {
        if self.plan.warmup.is_zero() {
            return CellOutcome::Done;
        }
        let warmup = self.attack(
            cell,
            spec,
            w,
            Phase::Warmup,
            Some(self.plan.warmup),
            RunMeta::new_id(),
        );
        match self.volley(&warmup, stop).await {
            Some(CellOutcome::Failed(why)) => {
                CellOutcome::Failed(format!("the warm-up failed: {why}"))
            }
            Some(other) => other,
            None => warmup_outcome(self.fire(&warmup, stop).await),
        }
    }

    /// The cell's measured run (under `run_id`), measured once more when other processes held
    /// it back: its outcome, and the id of the run to keep failed when it failed (`None` when
    /// kept so already).
    async fn measure_cell(
        &self,
        cell: &Cell,
        spec: &TargetSpec,
        w: &Watched,
        mut run_id: String,
        stop: &mut watch::Receiver<bool>,
    ) -> Result<(CellOutcome, Option<String>), Error> {
        let mut outcome = CellOutcome::Done;
        let mut measured_id = None;
        let mut again = true;
        while matches!(outcome, CellOutcome::Done) {
            let measure = self.attack(cell, spec, w, Phase::Measure, None, run_id.clone());
            measured_id = Some(run_id.clone());
            let held;
            (outcome, held) = match self.volley(&measure, stop).await {
                Some(outcome) => (outcome, false),
                None => {
                    let fired = self.fire(&measure, stop).await;
                    let held = held_back(&fired);
                    (measure_outcome(fired), held)
                }
            };
            // Other processes held the generator back: the run is kept as failed, and the cell
            // measured once more when the generator's CPUs are quiet.
            let CellOutcome::Failed(reason) = &outcome else {
                break;
            };
            if !(held && again) {
                break;
            }
            if !self
                .quiet_again(cell, reason, measured_id.take(), stop)
                .await?
            {
                outcome = CellOutcome::Interrupted;
                break;
            }
            again = false;
            run_id = RunMeta::new_id();
            outcome = CellOutcome::Done;
        }
        Ok((outcome, measured_id))
    }

    /// Runs the searches of `cells` (one setting and repetition, a target each) as one
    /// comparison: every target started and watched at once, one order whose search is the
    /// first's with the others `against` it, each search kept under its own cell's labels. A
    /// target that does not start fails its own cell; the others are compared without it (a
    /// lone one searched as its cell would be alone). One outcome for the cells run; and the
    /// comparison, when one ran, with each target's search id.
    pub(super) async fn run_together(
        &self,
        cells: &[&Cell],
        stop: &mut watch::Receiver<bool>,
    ) -> Result<(Vec<(String, CellOutcome)>, Option<Searched>), Error> {
        let (mut outcomes, up) = self.start_each(cells).await?;
        let Some(((first, spec, w), others)) = up.split_first() else {
            return Ok((outcomes, None));
        };
        // Each target's search under an id of its own, kept with its own cell's labels.
        let ids: Vec<String> = up.iter().map(|_| RunMeta::new_id()).collect();
        let mut attack = self.attack(first, spec, w, Phase::Step, None, ids[0].clone());
        attack.against = others
            .iter()
            .zip(&ids[1..])
            .map(|((cell, spec, w), id)| self.attack(cell, spec, w, Phase::Step, None, id.clone()))
            .collect();
        let fired = self.fire(&attack, stop).await;
        let compared = match &fired {
            Ok(Some(f)) if !others.is_empty() => {
                f.outcome.as_ref().and_then(|o| o.compared.clone())
            }
            _ => None,
        };
        let searched = compared.map(|compared| Searched {
            compared,
            ids: up
                .iter()
                .zip(&ids)
                .map(|((cell, _, _), id)| (cell.target.clone(), id.clone()))
                .collect(),
        });
        let each = if others.is_empty() {
            vec![search_outcome(fired)]
        } else {
            compare_outcome(fired, &ids)
        };
        for ((cell, _, w), outcome) in up.into_iter().zip(each) {
            let own = self.end_search(cell, w, outcome).await?;
            outcomes.push((cell.key(), own));
        }
        Ok((outcomes, searched))
    }

    /// Each of `cells` started, watched and ready: the outcomes of those that were not (kept
    /// failed), and the others, each with its target's spec and what watches it.
    async fn start_each<'c>(
        &self,
        cells: &[&'c Cell],
    ) -> Result<
        (
            Vec<(String, CellOutcome)>,
            Vec<(&'c Cell, &TargetSpec, Watched)>,
        ),
        Error,
    > {
        let mut outcomes = Vec::new();
        let mut up = Vec::new();
        for &cell in cells {
            let spec = self.spec(cell)?;
            let mut w = match self.watch(cell, spec).await? {
                Ok(w) => w,
                Err(outcome) => {
                    outcomes.push((cell.key(), outcome));
                    continue;
                }
            };
            if let Some(failed) = self.wait_ready(cell, spec, &mut w).await? {
                outcomes.push((cell.key(), failed));
                continue;
            }
            up.push((cell, spec, w));
        }
        Ok((outcomes, up))
    }

    /// Ends a search cell with its `outcome`: what watched it dropped, its target stopped (one
    /// that exited during the run fails the cell), and the cell kept as failed when it failed.
    async fn end_search(
        &self,
        cell: &Cell,
        w: Watched,
        outcome: CellOutcome,
    ) -> Result<CellOutcome, Error> {
        drop((w.probes, w.reader));
        let outcome = self
            .stop_target(cell, w.target, &outcome)
            .await
            .unwrap_or(outcome);
        if let CellOutcome::Failed(reason) = &outcome {
            self.keep_failed(cell, reason, None).await?;
        }
        Ok(outcome)
    }

    /// Starts the cell's target (or finds the remote one), watched by the runner's probes;
    /// `Err` with the cell's outcome when it did not start (kept as failed).
    pub(super) async fn watch(
        &self,
        cell: &Cell,
        spec: &TargetSpec,
    ) -> Result<Result<Watched, CellOutcome>, Error> {
        // Start the target (or find the remote one ready), watched by a probe.
        let kind = spec.kind();
        if kind == TargetKind::Remote {
            return Ok(Ok(Watched {
                target: None,
                probes: Vec::new(),
                reader: None,
                base: spec
                    .url
                    .as_deref()
                    .unwrap_or_default()
                    .trim_end_matches('/')
                    .to_string(),
                probe_addrs: spec.probe.iter().cloned().collect(),
            }));
        }
        self.reset_tables(kind).await?;
        let t = match self.start_target(cell, spec).await? {
            Ok(t) => t,
            Err(outcome) => return Ok(Err(outcome)),
        };
        self.watch_local(t).await.map(Ok)
    }

    /// Each cell starts from the same tables: the built-ins' `users` emptied, the file's
    /// `reset` run for the others (a target of `kind`).
    async fn reset_tables(&self, kind: TargetKind) -> Result<(), Error> {
        match (kind, self.launcher.db, &self.answers.reset) {
            (TargetKind::Builtin, Some(db), _) => crate::database::empty_users(db).await?,
            (TargetKind::Command, Some(db), Some(reset)) => {
                crate::database::execute(db, reset, "run [database] reset").await?
            }
            _ => {}
        }
        Ok(())
    }

    /// Starts the cell's local target; `Err` with the cell's outcome when it did not start
    /// (kept as failed).
    async fn start_target(
        &self,
        cell: &Cell,
        spec: &TargetSpec,
    ) -> Result<Result<Target, CellOutcome>, Error> {
        let started = match self.launcher.launch(spec, &cell.env) {
            Ok(launch) => Target::start(&launch)
                .await
                .map_err(super::setup::LaunchError::from),
            Err(why) => Err(why),
        };
        match started {
            Ok(t) => Ok(Ok(t)),
            Err(e) => {
                let reason = format!("the target did not start: {e}");
                self.keep_failed(cell, &reason, None).await?;
                Ok(Err(CellOutcome::Failed(reason)))
            }
        }
    }

    /// The local target `t` watched by the probes the runner starts: its own, its database's
    /// (with the reader of the database's activity) and the file's other processes'.
    async fn watch_local(&self, t: Target) -> Result<Watched, Error> {
        let mut config =
            probe::sampler::SamplerConfig::new(probe::selector::Selector::Pid(t.pid()));
        config.profile = self.answers.profile.clone();
        let mut probes = vec![self.start_probe(config).await?];
        let reader = self.watch_database(&mut probes).await?;
        // The other processes the file names, each a group of its own.
        for w in &self.answers.watches {
            let Some(selector) = w.selector() else {
                continue;
            };
            let mut config = probe::sampler::SamplerConfig::new(selector);
            config.role = probe::sample::Role::Other;
            config.name = Some(w.name.clone());
            probes.push(self.start_probe(config).await?);
        }
        let probe_addrs = probes.iter().map(|p| p.addr.to_string()).collect();
        Ok(Watched {
            base: t.base_url(),
            target: Some(t),
            probes,
            reader,
            probe_addrs,
        })
    }

    /// The targets' database beside its target: its processes where they run here (a probe
    /// added to `probes`), and the reader of what PostgreSQL says of its backends wherever it
    /// runs.
    async fn watch_database(
        &self,
        probes: &mut Vec<probe::server::RunningProbe>,
    ) -> Result<Option<crate::watch::ActivityReader>, Error> {
        let Some(url) = self.launcher.db else {
            return Ok(None);
        };
        let feed = probe::activity::ActivityFeed::new();
        let reader = crate::watch::ActivityReader::start(url, feed.clone()).await;
        let selector = self
            .launcher
            .db_process
            .clone()
            .unwrap_or(probe::selector::Selector::Elsewhere);
        let mut config = probe::sampler::SamplerConfig::new(selector);
        config.role = probe::sample::Role::Database;
        config.name = Some("PostgreSQL".into());
        config.activity = reader.is_some().then_some(feed);
        if self.launcher.db_process.is_some() || reader.is_some() {
            probes.push(self.start_probe(config).await?);
        }
        Ok(reader)
    }

    /// Waits until the target answers as its contract says; `Some` failed outcome (kept, the
    /// target stopped) when it does not.
    pub(super) async fn wait_ready(
        &self,
        cell: &Cell,
        spec: &TargetSpec,
        w: &mut Watched,
    ) -> Result<Option<CellOutcome>, Error> {
        // A built-in (or one held to the contract) answers /healthz; a server started by
        // command was ready when it started; a remote one is asked as the file says.
        let ready = match (spec.kind(), spec.contract()) {
            (TargetKind::Command, _) => Ok(()),
            (_, Contract::Showdown) => {
                reachable(
                    &self.checked(spec, &w.base),
                    Some("/healthz"),
                    Duration::from_secs(30),
                )
                .await
            }
            (_, Contract::Declared) => {
                let checked = self.checked(spec, &w.base);
                reachable(&checked, spec.ready.as_deref(), Duration::from_secs(30)).await
            }
        };
        let Err(why) = ready else {
            return Ok(None);
        };
        let output = w.target.as_ref().map(|t| t.output()).unwrap_or_default();
        let reason = format!("{} was not ready: {why}; its last output: {output}", w.base);
        if let Some(t) = w.target.take() {
            let grace = t.stop_grace;
            let _ = t.stop(grace).await;
        }
        self.keep_failed(cell, &reason, None).await?;
        Ok(Some(CellOutcome::Failed(reason)))
    }

    /// One attack of the cell: its warm-up, its measured run, or its search.
    pub(super) fn attack(
        &self,
        cell: &Cell,
        spec: &TargetSpec,
        w: &Watched,
        phase: Phase,
        only_for: Option<Duration>,
        id: String,
    ) -> Attack {
        let held = w
            .target
            .as_ref()
            .map(|t| t.held.description.clone())
            .unwrap_or_default();
        let (probe_token_file, probe_fingerprint) = self.probe_keys(spec);
        Attack {
            base_url: w.base.clone(),
            load: cell.load.clone(),
            only_for,
            db: self.options.db.clone(),
            experiment: self.answers.name.clone(),
            name: if phase == Phase::Warmup {
                format!("{} ({phase})", self.run_name(cell))
            } else {
                self.run_name(cell)
            },
            run_id: id,
            labels: self.labels(cell, phase, &held),
            probes: if phase != Phase::Warmup {
                w.probe_addrs.clone()
            } else {
                Vec::new()
            },
            probe_token_file,
            probe_fingerprint,
            // Checked before the run to lie in the file's directory (`runner::trusted`).
            probe_ca: spec
                .probe_ca
                .as_ref()
                .and_then(|ca| crate::file::inside(&self.answers.dir, ca).ok()),
            pre_roll: self.plan.pre_roll,
            post_roll: self.plan.post_roll,
            search: (phase == Phase::Step)
                .then(|| self.plan.search.clone())
                .flatten(),
            guns: self.firing.guns(),
            against: Vec::new(),
        }
    }

    /// The token file and the fingerprint the generator subscribes to `spec`'s probes with: a
    /// local target's the run's own, a remote one's as the user and the file name them.
    fn probe_keys(&self, spec: &TargetSpec) -> (Option<std::path::PathBuf>, Option<String>) {
        match spec.kind() {
            // The user's file (`--probe-token-file`), never the experiment file's own.
            TargetKind::Remote => (
                self.options
                    .trust
                    .probe_tokens
                    .iter()
                    .find(|(name, _)| *name == spec.name)
                    .map(|(_, file)| file.clone()),
                spec.probe_fingerprint.clone(),
            ),
            _ => (
                Some(self.keys.token_file.clone()),
                Some(self.keys.tls.fingerprint.clone()),
            ),
        }
    }

    /// Stops the cell's target; a target that exited during the run fails the cell (the
    /// outcome to keep instead is returned).
    pub(super) async fn stop_target(
        &self,
        cell: &Cell,
        target: Option<Target>,
        outcome: &CellOutcome,
    ) -> Option<CellOutcome> {
        let mut t = target?;
        if let Some(how) = t.exited() {
            let failed = CellOutcome::Failed(format!(
                "the target {how} during the run; its last output: {}",
                t.output()
            ));
            return (!matches!(outcome, CellOutcome::Failed(_))).then_some(failed);
        }
        let grace = t.stop_grace;
        if let Err(how) = t.stop(grace).await {
            self.events.emit(Event::StopNote {
                target: cell.target.clone(),
                how: how.to_string(),
            });
        }
        None
    }

    /// Where the runner itself reaches the cell's target: a remote one as the launcher says
    /// (through the first gun, with `[guns]`), a local one at `base`.
    fn checked(&self, spec: &TargetSpec, base: &str) -> String {
        match spec.kind() {
            TargetKind::Remote => self.launcher.reached(spec),
            _ => base.to_string(),
        }
    }

    /// Starts a probe of the cell, serving on a loopback port of its own with the run's keys.
    async fn start_probe(
        &self,
        mut config: probe::sampler::SamplerConfig,
    ) -> Result<probe::server::RunningProbe, Error> {
        config.interval = self.answers.probe_interval;
        // A group of processes that share pages (a cluster's workers, a database's backends)
        // is measured by PSS, within the slow collectors' budget: RSS summed counts a shared
        // page once in each.
        config.pss = true;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(SetupError::ProbeListen)?;
        probe::sampler::Sampler::new(config)
            .and_then(|s| {
                probe::server::RunningProbe::start(
                    s,
                    listener,
                    probe::server::ServeConfig {
                        token: Some(self.keys.token.clone()),
                        tls: Some(self.keys.tls.config.clone()),
                        ..Default::default()
                    },
                    64 * 1024,
                    64 << 20,
                )
            })
            .map_err(|e| Error::Setup(SetupError::ProbeStart(e)))
    }

    /// Fires one attack from this machine's generator; `None` when the experiment was
    /// interrupted meanwhile.
    pub(super) async fn fire(
        &self,
        attack: &Attack,
        stop: &mut watch::Receiver<bool>,
    ) -> Result<Option<crate::gun::Fired>, crate::gun::GunError> {
        if *stop.borrow() {
            return Ok(None);
        }
        let order = attack.order()?;
        let fired = self.firing.one(&order, stop.clone()).await?;
        Ok((!*stop.borrow()).then_some(fired))
    }

    /// Fires `attack` from every gun and judges the shards together; `None` without guns.
    async fn volley(
        &self,
        attack: &Attack,
        stop: &mut watch::Receiver<bool>,
    ) -> Option<CellOutcome> {
        self.firing.guns()?;
        if *stop.borrow() {
            return Some(CellOutcome::Interrupted);
        }
        let shots = match attack.order() {
            Ok(order) => self
                .firing
                .volley(&order, &attack.run_id, stop.clone(), attack.length())
                .await
                .map_err(crate::gun::GunError::from),
            Err(e) => Err(e),
        };
        let stopped = *stop.borrow();
        Some(volley_outcome(shots, stopped))
    }
}

pub(super) use store::run::now_ns;
