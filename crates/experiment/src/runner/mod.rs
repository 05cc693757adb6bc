//! Running an experiment: its targets built and verified, then cell by cell (reset the
//! database, start the target, watch it with a probe, wait until it is ready, warm up,
//! measure, stop it, cool down),
//! every run kept with the labels of its cell; a failed cell kept as failed with its reason,
//! and the matrix goes on. Run again, it resumes: the cells already kept for this file's
//! content and scale are skipped.
//!
//! The public [`run`] sweeps what an earlier runner left, then schedules: `run_with` plans,
//! skips what is kept, makes the cells' needs ready (`prepare`: builds, database, guns,
//! verification), and runs the rest step by step (`Cells`: the plan names each step's kind, a
//! cell alone, searches together or a gate's rounds), each fired through a [`Firing`] (this
//! machine's generator, the guns, or a test's fake), then judges the comparisons run
//! (`gates`), saying what it does as typed events (`event`) that one printer writes.
//!
//! - `firing`: what fires a cell's attacks, and what their results mean for the cell.
//! - `event`: what the runner says, and the printer.
//! - `resume`: which cells are kept already, from the store.
//! - `setup`: what the cells share: the targets' database, their environment, their
//!   verification.
//! - `cell`: one cell, from starting its target to keeping its run.
//! - `rounds`: `[compare]`'s cells, every compared target up at once and every repetition a
//!   round in a random order; with `rounds = "auto"` judged after each round until decided.
//! - `quiet`: waiting for the generator's CPUs to be quiet before a held-back run goes again.
//! - `gates`: the gates of the comparisons run (rounds, or searches compared in rounds),
//!   judged once the schedule ends and kept for the experiment's page.
//! - `share`: a cell's rate given as a share of the capacity its searches found (in a
//!   `[compare]`, one rate for every build, of the lowest of their capacities).

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use store::experiment::{Definition, ExperimentRecord, Verification};
use store::Store;
use tokio::sync::watch;

use crate::file::{Experiment, TargetKind, TargetSpec};
use crate::plan::{Cell, CellKind, Plan, Step, StepKind};
use crate::upstream::Upstream;
mod cell;
mod event;
mod firing;
mod gates;
mod quiet;
mod resume;
mod rounds;
mod setup;
mod share;
#[cfg(test)]
mod tests;

use cell::{now_ns, CellContext, Searched};
use event::{Event, Events};
use firing::CellOutcome;
pub use firing::{Firing, Hosts};
use gates::Comparison;
pub use setup::{resolve_refs, user_cwd};
mod options;

pub use options::BuildError;
pub use options::{Error, Refusal, RunOptions, RunReport, SetupError, Trust, SECRET};
pub use resume::{sitting, states, CellState};
pub use setup::LaunchError;
use setup::{
    builds, database, database_cpus, failures, file_dir, named_database, ports, verify_targets,
    Launcher,
};

/// The experiment's page record: its question, its axes, how its targets fared.
fn record(
    experiment: &Experiment,
    plan: &Plan,
    sitting: Option<&str>,
    placement: &str,
    verification: Vec<Verification>,
) -> ExperimentRecord {
    ExperimentRecord {
        name: experiment.file.name.clone(),
        question: experiment.file.question.clone(),
        file_label: Plan::file_label(experiment),
        scale: plan.scale,
        definition: Definition {
            source: experiment.file.source.clone(),
            targets: plan.targets.clone(),
            axes: plan
                .axes
                .iter()
                .map(|a| {
                    (
                        a.key.clone(),
                        a.values.iter().map(crate::plan::label_value).collect(),
                    )
                })
                .collect(),
            repetitions: plan.repetitions,
            placement: placement.to_string(),
            file: std::fs::read_to_string(&experiment.path).unwrap_or_default(),
            searched: plan.searched.clone(),
            compared: plan.compare.is_some(),
            sitting: sitting.map(str::to_string),
            references: experiment.file.history.references.clone(),
            history_measures: experiment.file.history.measures.clone(),
            history_level: experiment.file.history.level,
        },
        verification,
        updated_at_ns: now_ns(),
    }
}

/// Where things run, in words, for every run's labels and the page.
fn placement_text(experiment: &Experiment) -> String {
    let p = &experiment.file.placement;
    let gun = match &p.gun_cpus {
        Some(c) => format!("generator pinned to CPU {c}"),
        None => "generator on any CPU".into(),
    };
    let target = match &p.target_cpus {
        Some(c) => format!("local targets pinned to CPU {c}"),
        None => "local targets on any CPU".into(),
    };
    // The host's CPUs, not this process's: the runner pins itself to the generator's.
    let cpus = probe::cpus::CpuList::online().len();
    // The built-in targets always have a database; the others when the file asks for one.
    let uses_database = experiment.file.database.is_some()
        || experiment
            .file
            .targets
            .iter()
            .any(|t| t.kind() == TargetKind::Builtin);
    let database = match named_database(experiment) {
        _ if !uses_database => String::new(),
        Ok(Some(_)) => ", the targets' database yours".to_string(),
        _ => match database_cpus(experiment) {
            Some(c) => format!(", a throwaway PostgreSQL on CPU {c}"),
            None => ", a throwaway PostgreSQL on any CPU".into(),
        },
    };
    format!("{gun}, {target}{database}, on one {cpus}-CPU host (the probe and the runner share the generator's CPUs)")
}

/// Runs the experiment's remaining cells.
pub async fn run(
    experiment: &Experiment,
    options: &RunOptions,
    stop: watch::Receiver<bool>,
) -> Result<RunReport, Error> {
    let events = Events::printer(options.live);
    sweep(experiment, &events).await;
    run_with(experiment, options, &events, stop, None::<&fleet::Local>).await
}

/// What an earlier runner killed outright left (its targets, its PostgreSQL) goes first.
async fn sweep(experiment: &Experiment, events: &Events) {
    let swept = tokio::task::spawn_blocking(custody::sweep)
        .await
        .unwrap_or_default();
    for left in swept.left {
        events.emit(Event::Left(left.to_string()));
    }
    for problem in swept.problems {
        events.emit(Event::SweepProblem(problem.to_string()));
    }
    let commands = experiment
        .file
        .targets
        .iter()
        .any(|t| t.kind() == TargetKind::Command);
    if commands && !custody::by_cgroup() {
        events.emit(Event::HeldBy(custody::holding().to_string()));
    }
}

/// The cells to run, in the plan's order (kept ones skipped, failed ones too unless
/// `retry_failed`), and the id of each unfinished search to go on with.
fn todo_of<'p>(
    plan: &'p Plan,
    states: &[CellState],
    retry_failed: bool,
) -> (Vec<&'p Cell>, HashMap<(String, u32), String>) {
    let resume = plan
        .cells
        .iter()
        .zip(states)
        .filter_map(|(c, s)| match s {
            CellState::Unfinished { run } if c.kind == CellKind::Search => {
                Some(((c.key(), c.repetition), run.clone()))
            }
            _ => None,
        })
        .collect();
    let todo = plan
        .cells
        .iter()
        .zip(states)
        .filter(|(_, s)| match s {
            // A comparison is one sitting's: its rounds all run again, each time.
            _ if plan.compare.is_some() => true,
            CellState::Done { .. } => false,
            CellState::Failed { .. } => retry_failed,
            _ => true,
        })
        .map(|(c, _)| c)
        .collect();
    (todo, resume)
}

/// `run` after the sweep; `fake` fires the cells instead of `options.gun` and the guns.
async fn run_with<F: Firing>(
    experiment: &Experiment,
    options: &RunOptions,
    events: &Events,
    mut stop: watch::Receiver<bool>,
    fake: Option<&F>,
) -> Result<RunReport, Error> {
    let started = Instant::now();
    let plan = crate::plan::plan(experiment, &options.plan)?;
    let store = open_store(experiment, options).await?;
    let (sitting, states) = standing(&store, experiment, &plan, options.again).await?;
    let (todo, resume) = todo_of(&plan, &states, options.retry_failed);
    let mut report = RunReport {
        skipped: plan.cells.len() - todo.len(),
        ..Default::default()
    };
    let mut placement = placement_text(experiment);
    say_plan(&plan, events);
    if todo.is_empty() {
        nothing_to_run(
            experiment,
            &plan,
            sitting.as_deref(),
            &store,
            &placement,
            events,
        )
        .await?;
        return Ok(report);
    }
    if report.skipped > 0 {
        events.emit(Event::Resuming {
            name: experiment.file.name.clone(),
            skipped: report.skipped,
            cells: plan.cells.len(),
        });
    }
    let to_run = Sitting {
        experiment,
        options,
        events,
        plan: &plan,
        store: &store,
        sitting: sitting.as_deref(),
        todo: &todo,
        resume: &resume,
    };
    to_run
        .prepare_and_run(&mut placement, started, fake, &mut report, &mut stop)
        .await?;
    Ok(report)
}

/// Refuses what the user has not confirmed, then opens the store (one the guns can reach too,
/// when the file has guns).
async fn open_store(experiment: &Experiment, options: &RunOptions) -> Result<Store, Error> {
    trusted(experiment, &options.trust, &options.db)?;
    if experiment.file.guns.is_some() {
        fleet::needs_shared_store(Some(&options.db))?;
    }
    Ok(Store::open(&options.db).await?)
}

/// The sitting this run belongs to (a new one when `again`), and where each cell of the plan
/// stands in it.
async fn standing(
    store: &Store,
    experiment: &Experiment,
    plan: &Plan,
    again: bool,
) -> Result<(Option<String>, Vec<CellState>), Error> {
    // A comparison is one sitting's: its rounds all run again, each time.
    let again = again || plan.compare.is_some();
    let sitting = resume::sitting(store, experiment, plan, again).await?;
    let states = states(store, experiment, plan, sitting.as_deref()).await?;
    Ok((sitting, states))
}

/// Says the plan's warnings, and the shares it promises.
fn say_plan(plan: &Plan, events: &Events) {
    for warning in &plan.warnings {
        events.emit(Event::ScheduleWarning(warning.to_string()));
    }
    for promise in &plan.promises {
        events.emit(Event::SharePromise(promise.to_string()));
    }
}

/// A sitting with cells to run: the experiment, how it is run, its plan, the store, the
/// sitting's id, the cells to run and the searches to go on with.
struct Sitting<'a> {
    experiment: &'a Experiment,
    options: &'a RunOptions,
    events: &'a Events,
    plan: &'a Plan,
    store: &'a Store,
    sitting: Option<&'a str>,
    todo: &'a [&'a Cell],
    resume: &'a HashMap<(String, u32), String>,
}

impl Sitting<'_> {
    /// Makes ready what the cells need (`placement` then says where they run), then runs them,
    /// fired by `fake` when given; `report` says how it went.
    async fn prepare_and_run<F: Firing>(
        &self,
        placement: &mut String,
        started: Instant,
        fake: Option<&F>,
        report: &mut RunReport,
        stop: &mut watch::Receiver<bool>,
    ) -> Result<(), Error> {
        let Some(mut prepared) = prepare(
            self.experiment,
            self.options,
            self.plan,
            self.todo,
            placement,
            self.events,
            stop,
        )
        .await?
        else {
            report.interrupted = true;
            report.elapsed = started.elapsed();
            return Ok(());
        };
        self.run_prepared(&mut prepared, placement, started, fake, report, stop)
            .await
    }

    /// Runs the cells with what `prepare` made ready: the targets verified and the experiment's
    /// record kept, then each step fired until the end or a stop, and the guns closed;
    /// `report.elapsed` is set before the run's working directory is removed.
    async fn run_prepared<F: Firing>(
        &self,
        prepared: &mut Prepared,
        placement: &str,
        started: Instant,
        fake: Option<&F>,
        report: &mut RunReport,
        stop: &mut watch::Receiver<bool>,
    ) -> Result<(), Error> {
        let launcher = prepared.launcher(self.experiment);
        let verification = self.verified(&launcher, prepared, placement).await?;
        let answers = Answers::of(self.experiment, self.plan, self.sitting);
        let workdir = tempfile_dir()?;
        // Its files (the probes' token and keys) go with it, even after a SIGKILL.
        let mut files = custody::Group::new("experiment files");
        files.remove_with(workdir.path().to_path_buf());
        let keys = cell::ProbeKeys::make(workdir.path())?;
        let cells = Cells {
            experiment: self.experiment,
            plan: self.plan,
            options: self.options,
            store: self.store,
            launcher: &launcher,
            placement,
            keys: &keys,
            verification: &verification,
            resume: self.resume,
            answers: &answers,
            events: self.events,
        };
        cells
            .fired(self.todo, fake, prepared.fleet.as_ref(), report, stop)
            .await?;
        self.events.emit(Event::Finished);
        if let Some(fleet) = prepared.fleet.take() {
            fleet.close().await;
        }
        report.elapsed = started.elapsed();
        Ok(())
    }

    /// The targets verified, and the page's record kept: this sitting's, with how its targets
    /// fared.
    async fn verified(
        &self,
        launcher: &Launcher<'_>,
        prepared: &Prepared,
        placement: &str,
    ) -> Result<Vec<Verification>, Error> {
        let experiment = self.experiment;
        let verification =
            verification(experiment, self.store, launcher, prepared, self.events).await?;
        self.store
            .put_experiment(&record(
                experiment,
                self.plan,
                self.sitting,
                placement,
                verification.clone(),
            ))
            .await?;
        Ok(verification)
    }
}

/// Says there is nothing left to run, and keeps the experiment's record when it has none yet.
async fn nothing_to_run(
    experiment: &Experiment,
    plan: &Plan,
    sitting: Option<&str>,
    store: &Store,
    placement: &str,
    events: &Events,
) -> Result<(), Error> {
    events.emit(Event::NothingToRun {
        cells: plan.cells.len(),
        name: experiment.file.name.clone(),
        file: Plan::file_label(experiment),
        scale: plan.scale,
    });
    if store.experiment(&experiment.file.name).await?.is_none() {
        store
            .put_experiment(&record(experiment, plan, sitting, placement, Vec::new()))
            .await?;
    }
    Ok(())
}

/// What the cells ask of the experiment file, read from it once as their needs are made
/// ready: below the scheduler, a cell takes these answers, not the file.
pub(super) struct Answers {
    /// The experiment's name, on each run and search.
    pub(super) name: String,
    /// The file's label, the scale and the sitting, on each run (`resume::plan_labels`).
    pub(super) plan_labels: Vec<(String, String)>,
    /// The file's directory, where a remote probe's CA must lie.
    pub(super) dir: std::path::PathBuf,
    pub(super) targets: Vec<TargetSpec>,
    /// The other processes the file names, each watched by a probe of its own.
    pub(super) watches: Vec<crate::file::WatchSpec>,
    pub(super) probe_interval: Duration,
    /// What a local target's probe profiles, if it does.
    pub(super) profile: Option<probe::profile::ProfileConfig>,
    /// The SQL run before each cell of a target started by command, to reset its tables.
    pub(super) reset: Option<String>,
    /// The generator's CPUs (`None`: any), watched for quiet before a run is measured again.
    pub(super) gun_cpus: Option<probe::cpus::CpuList>,
}

impl Answers {
    fn of(experiment: &Experiment, plan: &Plan, sitting: Option<&str>) -> Answers {
        let file = &experiment.file;
        Answers {
            name: file.name.clone(),
            plan_labels: resume::plan_labels(experiment, plan, sitting),
            dir: file_dir(experiment),
            targets: file.targets.clone(),
            watches: file.watches.clone(),
            probe_interval: file.probe_interval,
            profile: file.profile_config(),
            reset: file.database().reset.clone(),
            gun_cpus: file.placement.gun_cpus.clone(),
        }
    }
}

/// What the cells share, made ready before the first: the targets built, their database,
/// their ports and upstream, the guns and where they reach each remote target.
struct Prepared {
    dir: Option<std::path::PathBuf>,
    db: Option<setup::TargetsDatabase>,
    upstream: Upstream,
    ports: BTreeMap<String, u16>,
    reach: BTreeMap<String, String>,
    fleet: Option<fleet::Fleet>,
    needed: Vec<String>,
    built: setup::Built,
    /// The targets' sources at their `ref`s, kept until the last cell ends.
    checkouts: crate::checkout::Checkouts,
    /// The `loadgen` binary, for `{loadgen}` in a target's command.
    loadgen: std::path::PathBuf,
}

impl Prepared {
    fn launcher<'a>(&'a self, experiment: &'a Experiment) -> Launcher<'a> {
        Launcher {
            experiment,
            dir: self.dir.as_deref(),
            db: self.db.as_ref().map(|d| d.url.as_str()),
            db_process: self.db.as_ref().and_then(|d| d.process.clone()),
            upstream: &self.upstream,
            ports: &self.ports,
            checkouts: &self.checkouts,
            reach: self.reach.clone(),
            loadgen: &self.loadgen,
        }
    }
}

/// Makes ready what the cells to run need: their targets verified; local ones built, a
/// database, an upstream; the guns. `None` when stopped meanwhile.
async fn prepare(
    experiment: &Experiment,
    options: &RunOptions,
    plan: &Plan,
    todo: &[&Cell],
    placement: &mut String,
    events: &Events,
    stop: &watch::Receiver<bool>,
) -> Result<Option<Prepared>, Error> {
    let needed = needed_targets(plan, todo);
    let builtins = needs(experiment, &needed, TargetKind::Builtin);
    let Some(dir) = builtins_ready(&builtins, stop, events).await? else {
        return Ok(None);
    };
    let own = !needs(experiment, &needed, TargetKind::Command).is_empty()
        || !needs(experiment, &needed, TargetKind::Remote).is_empty();
    let db = targets_database(experiment, !builtins.is_empty(), own, placement, events).await?;
    let ports = ports(experiment, &needed)?;
    let checkouts = setup::checkouts(experiment, &needed, events).await?;
    let built = builds(experiment, &needed, &ports, &checkouts, stop, events).await;
    if *stop.borrow() {
        return Ok(None);
    }
    let upstream = Upstream::start().map_err(SetupError::Upstream)?;
    // The guns, before the targets are checked: a remote target is checked through them.
    let Some(fleet) = guns_ready(experiment, &needed, options, placement, events, stop).await?
    else {
        return Ok(None);
    };
    let reach = match &fleet {
        Some(fleet) => {
            reach(
                fleet,
                &needs(experiment, &needed, TargetKind::Remote),
                events,
            )
            .await?
        }
        None => BTreeMap::new(),
    };
    Ok(Some(Prepared {
        dir,
        db,
        upstream,
        ports,
        reach,
        fleet,
        needed,
        built,
        checkouts,
        loadgen: options.gun.loadgen.clone(),
    }))
}

/// The plan's targets a cell of `todo` measures, in the plan's order.
fn needed_targets(plan: &Plan, todo: &[&Cell]) -> Vec<String> {
    plan.targets
        .iter()
        .filter(|t| todo.iter().any(|c| &c.target == *t))
        .cloned()
        .collect()
}

/// The file's targets of `kind` among those `needed`.
fn needs<'e>(
    experiment: &'e Experiment,
    needed: &[String],
    kind: TargetKind,
) -> Vec<&'e TargetSpec> {
    experiment
        .file
        .targets
        .iter()
        .filter(|t| t.kind() == kind && needed.contains(&t.name))
        .collect()
}

/// `targets/` when built-in targets are measured (`builtins`), each of them built; the
/// variables the environment withholds said. `None` when stopped meanwhile.
async fn builtins_ready(
    builtins: &[&TargetSpec],
    stop: &watch::Receiver<bool>,
    events: &Events,
) -> Result<Option<Option<std::path::PathBuf>>, Error> {
    let dir = if builtins.is_empty() {
        None
    } else {
        Some(crate::targets::directory()?)
    };
    let base = crate::environment::Base::current();
    if !base.withheld.is_empty() {
        events.emit(Event::Withheld(base.withheld.clone()));
    }
    if let Some(dir) = &dir {
        if build_builtins(dir, builtins, &base, stop, events).await? {
            return Ok(None);
        }
    }
    Ok(Some(dir))
}

/// The file's guns made ready when it has some (`placement` then theirs): `None` when stopped
/// meanwhile, `Some(None)` without guns.
async fn guns_ready(
    experiment: &Experiment,
    needed: &[String],
    options: &RunOptions,
    placement: &mut String,
    events: &Events,
    stop: &watch::Receiver<bool>,
) -> Result<Option<Option<fleet::Fleet>>, Error> {
    let Some(guns) = &experiment.file.guns else {
        return Ok(Some(None));
    };
    match ready_guns(experiment, guns, needed, options, events, stop).await? {
        None => Ok(None),
        Some((fleet, text)) => {
            *placement = text;
            Ok(Some(Some(fleet)))
        }
    }
}

/// The targets' database, when one is wanted: a built-in target is measured (`builtin`), or
/// the file has [database] and a target of its own (`own`: started by command, or remote with
/// rows to count) is. A throwaway cluster on the generator's CPUs is said, and `placement`
/// says so.
async fn targets_database(
    experiment: &Experiment,
    builtin: bool,
    own: bool,
    placement: &mut String,
    events: &Events,
) -> Result<Option<setup::TargetsDatabase>, Error> {
    let wanted = builtin || (experiment.file.database.is_some() && own);
    if !wanted {
        return Ok(None);
    }
    let db = database(experiment, builtin, events).await?;
    if let Some(process) = &db.process {
        let gun = experiment.file.placement.gun_cpus.as_ref();
        if let Some(shared) = crate::watch::shares_generator_cpus(process, gun) {
            events.emit(Event::SharesGeneratorCpus(shared.clone()));
            placement.push_str(&format!("; {shared}"));
        }
    }
    Ok(Some(db))
}

/// `targets/build` of the built-in targets measured; `true` when stopped meanwhile.
async fn build_builtins(
    dir: &std::path::Path,
    builtins: &[&TargetSpec],
    base: &crate::environment::Base,
    stop: &watch::Receiver<bool>,
    events: &Events,
) -> Result<bool, Error> {
    let mut names: Vec<String> = builtins.iter().map(|t| t.run_name().to_string()).collect();
    names.sort_unstable();
    names.dedup();
    let argv: Vec<String> = std::iter::once(dir.join("build").display().to_string())
        .chain(names)
        .collect();
    let building = setup::Building {
        name: "targets",
        argv: &argv,
        cwd: dir,
        env: crate::environment::build(base, &[], &[]),
        // A first build of the Rust target, or Go's modules from the network.
        timeout: Duration::from_secs(1800),
    };
    match setup::build(&building, stop.clone(), events).await {
        Ok(()) => Ok(false),
        Err(_) if *stop.borrow() => Ok(true),
        Err(why) => Err(Error::BuiltinBuild(why)),
    }
}

/// The file's guns made ready (the first target they will fire at reached from each), and the
/// placement they make; `None` when stopped meanwhile.
async fn ready_guns(
    experiment: &Experiment,
    guns: &crate::guns::GunsSpec,
    needed: &[String],
    options: &RunOptions,
    events: &Events,
    stop: &watch::Receiver<bool>,
) -> Result<Option<(fleet::Fleet, String)>, Error> {
    let reach = experiment
        .file
        .targets
        .iter()
        .find(|t| needed.contains(&t.name))
        .and_then(|t| t.url.as_deref());
    let (guns_order, dir) = (guns.guns(), file_dir(experiment));
    let preparing = fleet::Preparing {
        guns: &guns_order,
        dir: &dir,
        local: &options.gun.loadgen,
        reach,
        settings: &options.guns_settings,
    };
    let Some(fleet) = fleet::prepare(preparing, stop.clone(), &mut |progress| {
        events.emit(Event::Guns(progress))
    })
    .await?
    else {
        return Ok(None);
    };
    let placement = format!(
        "{} gun hosts {} ({}){}; the targets remote",
        fleet.count(),
        fleet.over(),
        fleet.names().join(", "),
        guns.cpus
            .as_ref()
            .map(|c| format!(", each generator held to CPU {c}"))
            .unwrap_or_default()
    );
    Ok(Some((fleet, placement)))
}

/// Where the guns reach each remote target (a port forward through the first, when only the
/// guns reach it).
async fn reach(
    fleet: &fleet::Fleet,
    remote: &[&TargetSpec],
    events: &Events,
) -> Result<BTreeMap<String, String>, Error> {
    let mut reach = BTreeMap::new();
    for t in remote {
        if let Some(url) = &t.url {
            let through = fleet.reach(url).await?;
            if &through != url {
                events.emit(Event::ReachedThrough {
                    target: t.name.clone(),
                    gun: fleet
                        .names()
                        .first()
                        .map(|g| g.to_string())
                        .unwrap_or_default(),
                    through: through.clone(),
                });
            }
            reach.insert(t.name.clone(), through);
        }
    }
    Ok(reach)
}

/// The targets verified, and what earlier runs found of the others: for the experiment's
/// record.
async fn verification(
    experiment: &Experiment,
    store: &Store,
    launcher: &Launcher<'_>,
    prepared: &Prepared,
    events: &Events,
) -> Result<Vec<Verification>, Error> {
    let mut verification =
        verify_targets(launcher, &prepared.needed, &prepared.built, events).await;
    // Keep what earlier runs found of the targets not verified this time.
    if let Some(kept) = store.experiment(&experiment.file.name).await? {
        if kept.file_label == Plan::file_label(experiment) {
            for v in kept.verification {
                if !verification.iter().any(|n| n.target == v.target) {
                    verification.push(v);
                }
            }
        }
    }
    Ok(verification)
}

/// The cells to run, and what they share.
struct Cells<'a> {
    experiment: &'a Experiment,
    plan: &'a Plan,
    options: &'a RunOptions,
    store: &'a Store,
    launcher: &'a Launcher<'a>,
    placement: &'a str,
    keys: &'a cell::ProbeKeys,
    verification: &'a [Verification],
    resume: &'a HashMap<(String, u32), String>,
    answers: &'a Answers,
    events: &'a Events,
}

impl Cells<'_> {
    /// Runs `todo` fired by `fake` when given, else by this machine's generator with the
    /// guns of `fleet` when the file has them, or by this machine's alone.
    async fn fired<F: Firing>(
        &self,
        todo: &[&Cell],
        fake: Option<&F>,
        fleet: Option<&fleet::Fleet>,
        report: &mut RunReport,
        stop: &mut watch::Receiver<bool>,
    ) -> Result<(), Error> {
        match (fake, fleet) {
            (Some(fake), _) => self.run(todo, fake, report, stop).await,
            (None, Some(fleet)) => {
                let hosts = Hosts {
                    local: &self.options.gun,
                    fleet,
                };
                self.run(todo, &hosts, report, stop).await
            }
            (None, None) => self.run(todo, &self.options.gun, report, stop).await,
        }
    }

    /// Runs `todo` in order, each step fired by `firing`, until the end or a stop; then judges
    /// the comparisons run (their gates kept for the page even when a step failed).
    async fn run<F: Firing>(
        &self,
        todo: &[&Cell],
        firing: &F,
        report: &mut RunReport,
        stop: &mut watch::Receiver<bool>,
    ) -> Result<(), Error> {
        let mut compared = Vec::new();
        let ran = self
            .schedule(todo, firing, report, stop, &mut compared)
            .await;
        let judged = self.judge(compared, report).await;
        ran.and(judged)
    }

    /// The schedule: each step of `todo` (of the kind the plan says) run in turn and its
    /// cells' outcomes counted, until the end or a stop; the comparisons run go to `compared`.
    async fn schedule<F: Firing>(
        &self,
        todo: &[&Cell],
        firing: &F,
        report: &mut RunReport,
        stop: &mut watch::Receiver<bool>,
        compared: &mut Vec<Comparison>,
    ) -> Result<(), Error> {
        let mut left_time: Duration = todo.iter().fold(Duration::ZERO, |sum, c| {
            sum.saturating_add(self.plan.cell_time(c))
        });
        let began = store::run::now_ns();
        // The cells already run with another (a comparison's), by key and repetition.
        let mut ran: Vec<(String, u32)> = Vec::new();
        for (done, cell) in todo.iter().enumerate() {
            if ran.contains(&(cell.key(), cell.repetition)) {
                continue;
            }
            if *stop.borrow() {
                report.interrupted = true;
                break;
            }
            let step = crate::plan::step(self.plan, todo, cell);
            ran.extend(step.cells.iter().map(|c| (c.key(), c.repetition)));
            let left = todo
                .iter()
                .filter(|c| !ran.contains(&(c.key(), c.repetition)))
                .count();
            self.announce(
                &step,
                (done + 1, todo.len()),
                cell.repetition,
                left,
                left_time,
            );
            let since = searched_since(cell, &ran, began);
            let (outcomes, comparison) = self.step(&step, since, firing, stop).await?;
            compared.extend(comparison);
            if self.count(outcomes, report) {
                report.interrupted = true;
                break;
            }
            for c in &step.cells {
                left_time = left_time.saturating_sub(self.plan.cell_time(c));
            }
            if left > 0 && !self.plan.cooldown.is_zero() {
                tokio::select! {
                    _ = tokio::time::sleep(self.plan.cooldown) => {}
                    _ = stop.changed() => {}
                }
            }
        }
        Ok(())
    }

    /// Says a step begins: its `(number, total)`, its cells' keys, its repetition, how many
    /// cells are left after it and about how long they take.
    fn announce(
        &self,
        step: &Step<'_>,
        (number, total): (usize, usize),
        repetition: u32,
        left: usize,
        eta: Duration,
    ) {
        let mut keys: Vec<String> = Vec::new();
        for key in step.cells.iter().map(|c| c.key()) {
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        self.events.emit(Event::Cell {
            number,
            total,
            key: keys.join(" + "),
            repetition,
            left,
            eta,
        });
    }

    /// Runs one step as its kind says: its cells' outcomes, and the comparison it ran (to
    /// judge once the schedule ends). `since`: a share's searches were begun then, in this
    /// sitting.
    async fn step<F: Firing>(
        &self,
        step: &Step<'_>,
        since: Option<i64>,
        firing: &F,
        stop: &mut watch::Receiver<bool>,
    ) -> Result<(Vec<(String, CellOutcome)>, Option<Comparison>), Error> {
        match (step.kind, &self.plan.compare) {
            (StepKind::Rounds, Some(compare)) => {
                self.compared(&step.cells, compare, since, firing, stop)
                    .await
            }
            (StepKind::Searches, compare) => {
                let (outcomes, searched) = self.together(&step.cells, firing, stop).await?;
                let comparison =
                    searched
                        .filter(|_| compare.is_some())
                        .map(|searched| Comparison::Searches {
                            cells: step.cells.iter().map(|c| (*c).clone()).collect(),
                            searched,
                        });
                Ok((outcomes, comparison))
            }
            _ => {
                let mut outcomes = Vec::new();
                for cell in &step.cells {
                    outcomes.push((cell.key(), self.one(cell, firing, stop).await?));
                }
                Ok((outcomes, None))
            }
        }
    }

    /// Counts a step's outcomes into `report` (each failed cell said); whether one was
    /// interrupted.
    fn count(&self, outcomes: Vec<(String, CellOutcome)>, report: &mut RunReport) -> bool {
        let mut interrupted = false;
        for (key, outcome) in outcomes {
            match outcome {
                CellOutcome::Done => report.ran += 1,
                CellOutcome::Failed(reason) => {
                    report.ran += 1;
                    self.events.emit(Event::CellFailed(reason.clone()));
                    report.failed.push((key, reason));
                }
                CellOutcome::Interrupted => interrupted = true,
            }
        }
        interrupted
    }

    /// The searches of one setting and repetition compared in interleaved rounds: a target
    /// that failed verification is refused on its own (its cell kept failed), the others run
    /// together.
    /// With `[compare]`, the baseline's search is the first (the reference of the ratios),
    /// then the candidate's and the control's.
    async fn together<F: Firing>(
        &self,
        cells: &[&Cell],
        firing: &F,
        stop: &mut watch::Receiver<bool>,
    ) -> Result<(Vec<(String, CellOutcome)>, Option<Searched>), Error> {
        let (mut outcomes, mut up) = self.refuse_unverified(cells, firing, stop).await?;
        if let Some(compare) = &self.plan.compare {
            let order = compare.targets();
            up.sort_by_key(|c| order.iter().position(|t| *t == c.target));
        }
        let context = self.context(firing);
        let (more, searched) = context.run_together(&up, stop).await?;
        outcomes.extend(more);
        Ok((outcomes, searched))
    }

    /// One setting's cells compared in rounds (`[compare]`): a target that failed
    /// verification is refused on its own (its cells kept failed), the others run the rounds.
    /// A share of the searches' capacities is first made one rate for every build (of the
    /// lowest capacity; of searches begun `since`, when given); when there is none to take,
    /// every cell is kept failed with why.
    async fn compared<F: Firing>(
        &self,
        cells: &[&Cell],
        compare: &crate::file::CompareSpec,
        since: Option<i64>,
        firing: &F,
        stop: &mut watch::Receiver<bool>,
    ) -> Result<(Vec<(String, CellOutcome)>, Option<Comparison>), Error> {
        let (mut outcomes, up) = self.refuse_unverified(cells, firing, stop).await?;
        let mut context = self.context(firing);
        let shared = match up.first().map(|c| &c.kind) {
            Some(CellKind::Share { .. }) => Some(
                share::resolve_compared(self.store, self.experiment, self.plan, &up, since).await?,
            ),
            _ => None,
        };
        let resolved: Vec<Cell> = match shared {
            None => up.iter().map(|c| (*c).clone()).collect(),
            Some(Err(why)) => {
                let reason = format!("no rate for this cell: {why}");
                for cell in &up {
                    context.keep_failed(cell, &reason, None).await?;
                    outcomes.push((cell.key(), CellOutcome::Failed(reason.clone())));
                }
                return Ok((outcomes, None));
            }
            Some(Ok(shared)) => {
                let share = up
                    .first()
                    .and_then(|c| c.load.rate)
                    .map(|r| r.to_string())
                    .unwrap_or_default();
                self.events.emit(Event::Share {
                    share: share.clone(),
                    target: shared.of.clone(),
                    capacity: shared.capacity,
                    searches: 1,
                    rate: shared
                        .cells
                        .first()
                        .and_then(|c| c.load.per_second())
                        .unwrap_or(0.0),
                });
                context.share = Some((share, shared.capacity));
                shared.cells
            }
        };
        let up: Vec<&Cell> = resolved.iter().collect();
        let (_, allowed) = compare.allowed(&self.experiment.file)?;
        let (more, comparison) = context.run_rounds(&up, compare, &allowed, stop).await?;
        outcomes.extend(more);
        Ok((outcomes, comparison))
    }

    /// Of cells to run together, those whose target failed verification, each refused on its
    /// own (kept failed): their outcomes, and the cells left to run.
    async fn refuse_unverified<'c, F: Firing>(
        &self,
        cells: &[&'c Cell],
        firing: &F,
        stop: &mut watch::Receiver<bool>,
    ) -> Result<(Vec<(String, CellOutcome)>, Vec<&'c Cell>), Error> {
        let refused = |c: &&Cell| {
            self.verification
                .iter()
                .any(|v| v.target == c.target && !v.passed)
        };
        let mut outcomes = Vec::new();
        for cell in cells.iter().copied().filter(refused) {
            outcomes.push((cell.key(), self.one(cell, firing, stop).await?));
        }
        let up = cells.iter().copied().filter(|c| !refused(c)).collect();
        Ok((outcomes, up))
    }

    fn context<'f, F: Firing>(&'f self, firing: &'f F) -> CellContext<'f, F> {
        CellContext {
            answers: self.answers,
            plan: self.plan,
            options: self.options,
            store: self.store,
            launcher: self.launcher,
            placement: self.placement,
            share: None,
            keys: self.keys,
            firing,
            events: self.events,
        }
    }

    /// One cell: refused when its target failed verification or its share has no rate;
    /// otherwise run.
    async fn one<F: Firing>(
        &self,
        cell: &Cell,
        firing: &F,
        stop: &mut watch::Receiver<bool>,
    ) -> Result<CellOutcome, Error> {
        let verified = self.verification.iter().find(|v| v.target == cell.target);
        let mut context = self.context(firing);
        // A share's rate, from the searches kept by now (every search runs before any share).
        let resolved = match cell.kind {
            CellKind::Share { .. } => {
                Some(share::resolve(self.store, self.experiment, self.plan, cell).await?)
            }
            _ => None,
        };
        Ok(match (verified, &resolved) {
            (Some(v), _) if !v.passed => {
                let reason = format!("{} failed verification: {}", cell.target, failures(v));
                context.keep_failed(cell, &reason, None).await?;
                CellOutcome::Failed(reason)
            }
            (_, Some(Err(why))) => {
                let reason = format!("no rate for this cell: {why}");
                context.keep_failed(cell, &reason, None).await?;
                CellOutcome::Failed(reason)
            }
            (_, Some(Ok(resolved))) => {
                let share = cell.load.rate.map(|r| r.to_string()).unwrap_or_default();
                self.events.emit(Event::Share {
                    share: share.clone(),
                    target: cell.target.clone(),
                    capacity: resolved.capacity,
                    searches: resolved.searches,
                    rate: resolved.cell.load.per_second().unwrap_or(0.0),
                });
                context.share = Some((share, resolved.capacity));
                context.run_cell(&resolved.cell, None, stop).await?
            }
            _ => {
                let id = self.resume.get(&(cell.key(), cell.repetition)).cloned();
                context.run_cell(cell, id, stop).await?
            }
        })
    }
}

/// `began`, when `cell` is a share of searches among those run in this sitting (`ran`): a share
/// of searches run now is of theirs alone.
fn searched_since(cell: &Cell, ran: &[(String, u32)], began: i64) -> Option<i64> {
    match &cell.kind {
        CellKind::Share { searches } => ran
            .iter()
            .any(|(key, _)| searches.contains(key))
            .then_some(began),
        _ => None,
    }
}

/// Refuses what a file asks for that the user has not confirmed: a variable whose name says it
/// may hold a secret, guns (where every order goes, and SSH with the file's config), and a
/// targets' database that is the store itself (the file's schema and the targets' writes would
/// land among the user's runs).
fn trusted(experiment: &Experiment, trust: &Trust, store: &str) -> Result<(), Error> {
    experiment.file.check_variables(&trust.pass_env)?;
    // The headers a load reads from the environment, checked before anything runs.
    for v in experiment.file.variables() {
        if v.field.ends_with("headers_env") {
            crate::gun::headers_from(&v.name).map_err(Refusal::Headers)?;
        }
    }
    probe_tokens(experiment, trust)?;
    for (field, path) in experiment
        .file
        .read_files()
        .into_iter()
        .chain(experiment.file.written_files())
    {
        crate::file::inside(&file_dir(experiment), &path)
            .map_err(|error| Refusal::NamedFile { field, error })?;
    }
    if let Some(guns) = &experiment.file.guns {
        trusted_guns(experiment, guns, trust)?;
    }
    trusted_database(experiment, trust, store)
}

/// Refuses guns the user has not confirmed (`--trust-guns`), the store's URL sent to them
/// unasked, and an SSH config that would run what it names.
fn trusted_guns(
    experiment: &Experiment,
    guns: &crate::guns::GunsSpec,
    trust: &Trust,
) -> Result<(), Error> {
    if let (false, Some(k)) = (trust.guns, &guns.kubernetes) {
        let job = fleet::kubernetes::job_in_words(k, &file_dir(experiment))
            .map_err(fleet::FleetError::from)?;
        return Err(Refusal::KubernetesGuns {
            job,
            file: experiment.path.clone(),
        }
        .into());
    }
    if !trust.guns {
        return Err(Refusal::SshGuns {
            ssh_config: guns.ssh_config.clone(),
            file: experiment.path.clone(),
        }
        .into());
    }
    // A lab's guns (terraform's, the twin's) read the store's URL from a file of their own.
    if guns.store_env_file.is_none() && guns.from.is_none() && !trust.send_store_url {
        return Err(Refusal::StoreUrlUnsent.into());
    }
    if let Some(config) = &guns.ssh_config {
        let refused = fleet::ssh::read_config(config)
            .and_then(|text| fleet::ssh::config_refusal(config, &text, trust.ssh_proxy));
        if let Err(refusal) = refused {
            return Err(Refusal::SshConfig(refusal).into());
        }
    }
    Ok(())
}

/// Refuses a targets' database that is the store itself, and one the file names that the user
/// has not confirmed (`--trust-database`).
fn trusted_database(experiment: &Experiment, trust: &Trust, store: &str) -> Result<(), Error> {
    if let Ok(Some(url)) = named_database(experiment) {
        if crate::watch::same_database(&url, store) {
            return Err(Refusal::DatabaseIsStore.into());
        }
    }
    let database = experiment.file.database();
    if (database.url.is_some() || database.url_env.is_some()) && !trust.database {
        let named = match (&database.url, &database.url_env) {
            (Some(url), _) => redact::printable(&redact::text(url)),
            (None, Some(var)) => format!("${}", redact::printable(var)),
            (None, None) => String::new(),
        };
        return Err(Refusal::Database {
            named,
            file: experiment.path.clone(),
        }
        .into());
    }
    Ok(())
}

/// A remote target's probe token is read only from a file the user named on the command line
/// (`--probe-token-file NAME=FILE`), and sent only over TLS that checks the probe: a file's own
/// `probe_token_file` would send whatever it names (a link to a credentials file) to the probe
/// address the file chose.
fn probe_tokens(experiment: &Experiment, trust: &Trust) -> Result<(), Error> {
    let targets = &experiment.file.targets;
    for (name, file) in &trust.probe_tokens {
        match targets.iter().find(|t| t.name == *name) {
            Some(t) if t.is_remote() && (t.probe_fingerprint.is_some() || t.probe_ca.is_some()) => {
                // Read now, so that a file that is no token is refused before anything is sent.
                probe::token::read(file).map_err(|error| Refusal::ProbeTokenFile {
                    target: name.clone(),
                    error,
                })?;
            }
            Some(t) if t.is_remote() => {
                return Err(Refusal::ProbeUnchecked {
                    target: name.clone(),
                }
                .into())
            }
            _ => {
                return Err(Refusal::NoRemoteTarget {
                    target: name.clone(),
                }
                .into())
            }
        }
    }
    for t in targets.iter().filter(|t| t.is_remote()) {
        let Some(file) = &t.probe_token_file else {
            continue;
        };
        if !trust.probe_tokens.iter().any(|(name, _)| *name == t.name) {
            return Err(Refusal::ProbeTokenFileUnconfirmed {
                target: t.name.clone(),
                file: file.clone(),
                probe: t.probe.clone(),
            }
            .into());
        }
    }
    Ok(())
}

fn tempfile_dir() -> Result<tempfile::TempDir, Error> {
    tempfile::Builder::new()
        .prefix("showdown-experiment-")
        .tempdir()
        .map_err(|e| SetupError::TempDir(e).into())
}
