//! Running an experiment: its targets verified, then cell by cell (start the target, empty
//! `users`, watch it with a probe, wait for health, warm up, measure, stop it, cool down),
//! every run kept with the labels of its cell; a failed cell kept as failed with its reason,
//! and the matrix goes on. Run again, it resumes: the cells already kept for this file's
//! content and scale are skipped.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use store::experiment::{Definition, ExperimentRecord, Verification};
use store::run::{HostFacts, RunConfig, RunFilter, RunMeta, RunStatus};
use store::vocabulary::{label, Outcome, Phase};
use store::Store;
use tokio::sync::watch;

use crate::file::{Experiment, TargetSpec};
use crate::gun::{Attack, Gun};
use crate::http::Http;
use crate::plan::{Cell, Plan, PlanOptions};
use crate::targets::{Launch, Target};
use crate::upstream::Upstream;
use crate::verify::{self, Expect};

/// The SECRET every local target gets (`/encrypt`'s key; not a credential).
pub const SECRET: &str = "showdown-experiment-secret";

/// How to run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub plan: PlanOptions,
    /// The store the runs go to.
    pub db: String,
    /// Redo the cells kept as failed.
    pub retry_failed: bool,
    pub gun: Gun,
    /// Show a live line (on a terminal).
    pub live: bool,
}

/// Where each cell stands.
#[derive(Debug, Clone, PartialEq)]
pub enum CellState {
    Pending,
    Done {
        run: String,
    },
    Failed {
        run: String,
        reason: String,
    },
    /// Started and not finished (interrupted, or killed): redone by the next `run`.
    Unfinished {
        run: String,
    },
}

/// What a `run` did.
#[derive(Debug, Clone, Default)]
pub struct RunReport {
    pub ran: usize,
    pub skipped: usize,
    pub failed: Vec<(String, String)>,
    pub interrupted: bool,
    pub elapsed: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Plan(String),
    #[error(transparent)]
    Store(#[from] store::StoreError),
    #[error(transparent)]
    Targets(#[from] crate::targets::Error),
    #[error(transparent)]
    Database(#[from] pgcluster::Error),
    #[error("{0}")]
    Setup(String),
}

/// The labels every run of the experiment carries, beside its cell's.
fn plan_labels(experiment: &Experiment, plan: &Plan) -> Vec<(String, String)> {
    vec![
        (label::FILE.into(), Plan::file_label(experiment)),
        (label::SCALE.into(), plan.scale.to_string()),
    ]
}

/// Each cell's state, from the store.
pub async fn states(
    store: &Store,
    experiment: &Experiment,
    plan: &Plan,
) -> Result<Vec<CellState>, store::StoreError> {
    let mut filter = RunFilter {
        experiment: Some(experiment.file.name.clone()),
        ..Default::default()
    };
    for (k, v) in plan_labels(experiment, plan) {
        filter.labels.insert(k, v);
    }
    filter
        .labels
        .insert(label::PHASE.into(), Phase::Measure.as_str().into());
    let runs = store.list_runs(&filter).await?;
    let mut by_cell: BTreeMap<(String, String), CellState> = BTreeMap::new();
    for run in runs {
        let (Some(cell), Some(rep)) = (
            run.labels.get(label::CELL),
            run.labels.get(label::REPETITION),
        ) else {
            continue;
        };
        let state = match run.status {
            RunStatus::Complete => CellState::Done { run: run.id },
            RunStatus::Failed => CellState::Failed {
                reason: String::new(),
                run: run.id,
            },
            _ => CellState::Unfinished { run: run.id },
        };
        let key = (cell.clone(), rep.clone());
        // The best a cell came to: done over failed over unfinished.
        let rank = |s: &CellState| match s {
            CellState::Done { .. } => 3,
            CellState::Failed { .. } => 2,
            CellState::Unfinished { .. } => 1,
            CellState::Pending => 0,
        };
        if by_cell
            .get(&key)
            .is_none_or(|old| rank(&state) >= rank(old))
        {
            by_cell.insert(key, state);
        }
    }
    let mut out = Vec::new();
    for cell in &plan.cells {
        let key = (cell.key(), cell.repetition.to_string());
        let mut state = by_cell.remove(&key).unwrap_or(CellState::Pending);
        if let CellState::Failed { run, reason } = &mut state {
            if let Ok(r) = store.load_run_streaming(run, |_| {}).await {
                *reason = r.stop_reason.unwrap_or_default();
            }
        }
        out.push(state);
    }
    Ok(out)
}

/// The experiment's page record: its question, its axes, how its targets fared.
fn record(
    experiment: &Experiment,
    plan: &Plan,
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
        },
        verification,
        updated_at_ns: now_ns(),
    }
}

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
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
    let database = match named_database(experiment) {
        Ok(Some(_)) => "the targets' database yours".to_string(),
        _ => match database_cpus(experiment) {
            Some(c) => format!("a throwaway PostgreSQL on CPU {c}"),
            None => "a throwaway PostgreSQL on any CPU".into(),
        },
    };
    format!("{gun}, {target}, {database}, on one {cpus}-CPU host (the probe and the runner share the generator's CPUs)")
}

/// The database the local targets use: the file's, `DATABASE_URL`, or a throwaway cluster.
struct TargetsDatabase {
    url: String,
    _cluster: Option<pgcluster::Cluster>,
}

/// The database the file names (`url`, or the variable `url_env` names), if it names one.
/// No other variable is read: a `DATABASE_URL` exported for something else is never used.
fn named_database(experiment: &Experiment) -> Result<Option<String>, Error> {
    let file = &experiment.file.database;
    match (&file.url, &file.url_env) {
        (Some(url), _) => Ok(Some(url.clone())),
        (None, Some(var)) => match std::env::var(var) {
            Ok(url) if !url.is_empty() => Ok(Some(url)),
            _ => Err(Error::Setup(format!(
                "[database] url_env names {var}, which is not set: export it, or drop [database] for a throwaway PostgreSQL"
            ))),
        },
        (None, None) => Ok(None),
    }
}

/// Where the throwaway PostgreSQL runs: the file's `[database] cpus`, else beside the targets.
fn database_cpus(experiment: &Experiment) -> Option<String> {
    let file = &experiment.file;
    file.database
        .cpus
        .as_ref()
        .or(file.placement.target_cpus.as_ref())
        .map(ToString::to_string)
}

async fn database(experiment: &Experiment) -> Result<TargetsDatabase, Error> {
    let db = match named_database(experiment)? {
        Some(url) => TargetsDatabase {
            url,
            _cluster: None,
        },
        None => {
            if std::env::var_os("DATABASE_URL").is_some() {
                eprintln!("Note: DATABASE_URL is set but not used: this experiment file names no database (add url_env = \"DATABASE_URL\" under [database] to use it).");
            }
            let cpus = database_cpus(experiment);
            eprintln!(
                "Starting a throwaway PostgreSQL for the targets{}…",
                cpus.as_deref()
                    .map(|c| format!(" on CPU {c}"))
                    .unwrap_or_default()
            );
            let options = pgcluster::Options {
                cpus,
                ..pgcluster::Options::default()
            };
            let cluster = tokio::task::spawn_blocking(move || pgcluster::Cluster::start(&options))
                .await
                .map_err(|e| Error::Setup(e.to_string()))??;
            TargetsDatabase {
                url: cluster.url("postgres"),
                _cluster: Some(cluster),
            }
        }
    };
    crate::database::apply_schema(&db.url)
        .await
        .map_err(Error::Setup)?;
    Ok(db)
}

/// The environment every local target gets.
fn target_launch(
    experiment: &Experiment,
    spec: &TargetSpec,
    env: &BTreeMap<String, String>,
    db: &str,
    upstream: &Upstream,
) -> Launch {
    let file = &experiment.file;
    let mut launch = Launch::new(spec.run_name())
        .env("DATABASE_URL", db)
        .env("UPSTREAM_URL", upstream.url())
        .env("SECRET", SECRET);
    if let Some(pool) = file.database.pool {
        launch = launch.env("DB_POOL", pool.to_string());
    }
    if let Some(t) = file.database.timeout_ms {
        launch = launch.env("DB_TIMEOUT_MS", t.to_string());
    }
    for (k, v) in env {
        launch = launch.env(k, v.clone());
    }
    launch.cpus = file.placement.target_cpus.as_ref().map(ToString::to_string);
    launch.cpu_quota = spec.cpus;
    launch.memory = spec
        .memory
        .as_deref()
        .and_then(|m| crate::limits::parse_bytes(m).ok());
    launch
}

/// Checks every target of the plan against the contract; a local one is started for it.
async fn verify_targets(
    experiment: &Experiment,
    names: &[String],
    db: Option<&str>,
    upstream: &Upstream,
) -> Vec<Verification> {
    let dir = crate::targets::directory();
    let mut out = Vec::new();
    for name in names {
        let Some(spec) = experiment.file.targets.iter().find(|t| &t.name == name) else {
            continue;
        };
        let checks = match &spec.url {
            Some(url) => {
                let expect = Expect {
                    database_url: None,
                    secret: None,
                    upstream_body: None,
                };
                Ok(verify::verify(url.trim_end_matches('/'), &expect).await)
            }
            None => match (&dir, db) {
                (Ok(dir), Some(db)) => {
                    let launch = target_launch(experiment, spec, &spec.env, db, upstream);
                    match Target::start(dir, &launch).await {
                        Ok(target) => {
                            let expect = Expect {
                                database_url: Some(db.to_string()),
                                secret: Some(SECRET.into()),
                                upstream_body: Some(upstream.body.clone()),
                            };
                            let verdict = verify::verify(&target.base_url(), &expect).await;
                            let _ = target.stop(Duration::from_secs(15)).await;
                            Ok(verdict)
                        }
                        Err(e) => Err(e.to_string()),
                    }
                }
                (Err(e), _) => Err(e.to_string()),
                (_, None) => Err("no database".into()),
            },
        };
        let v = match checks {
            Ok(verdict) => Verification {
                target: name.clone(),
                passed: verdict.passed(),
                checks: verdict
                    .checks
                    .iter()
                    .map(|c| (c.name.to_string(), c.outcome.clone()))
                    .collect(),
            },
            Err(why) => Verification {
                target: name.clone(),
                passed: false,
                checks: vec![("start".into(), Outcome::Failed(why))],
            },
        };
        eprintln!(
            "Verified {name} against targets/CONTRACT.md: {}",
            if v.passed {
                "passed".to_string()
            } else {
                format!("FAILED ({}): it will not be measured", failures(&v))
            }
        );
        out.push(v);
    }
    out
}

fn failures(v: &Verification) -> String {
    v.checks
        .iter()
        .filter_map(|(c, o)| match o {
            Outcome::Failed(why) => Some(format!("{c}: {why}")),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Runs the experiment's remaining cells.
pub async fn run(
    experiment: &Experiment,
    options: &RunOptions,
    mut stop: watch::Receiver<bool>,
) -> Result<RunReport, Error> {
    let started = Instant::now();
    let plan = crate::plan::plan(experiment, &options.plan).map_err(Error::Plan)?;
    let store = Store::open(&options.db).await?;
    let states = states(&store, experiment, &plan).await?;
    let todo: Vec<&Cell> = plan
        .cells
        .iter()
        .zip(&states)
        .filter(|(_, s)| match s {
            CellState::Done { .. } => false,
            CellState::Failed { .. } => options.retry_failed,
            _ => true,
        })
        .map(|(c, _)| c)
        .collect();
    let mut report = RunReport {
        skipped: plan.cells.len() - todo.len(),
        ..Default::default()
    };
    let placement = placement_text(experiment);
    for warning in &plan.warnings {
        eprintln!("Warning: the generator may not keep the schedule of {warning}");
    }
    if todo.is_empty() {
        eprintln!(
            "All {} cells of {} are kept already (file {}, scale {}): nothing to run.",
            plan.cells.len(),
            experiment.file.name,
            Plan::file_label(experiment),
            plan.scale
        );
        if store.experiment(&experiment.file.name).await?.is_none() {
            store
                .put_experiment(&record(experiment, &plan, &placement, Vec::new()))
                .await?;
        }
        return Ok(report);
    }
    if report.skipped > 0 {
        eprintln!(
            "Resuming {}: {} of {} cells are kept already and skipped.",
            experiment.file.name,
            report.skipped,
            plan.cells.len()
        );
    }

    // What the targets of the cells to run need: verified; local ones built, a database,
    // an upstream.
    let needed: Vec<String> = plan
        .targets
        .iter()
        .filter(|t| todo.iter().any(|c| &c.target == *t))
        .cloned()
        .collect();
    let local: Vec<&TargetSpec> = experiment
        .file
        .targets
        .iter()
        .filter(|t| !t.is_remote() && needed.contains(&t.name))
        .collect();
    let dir = if local.is_empty() {
        None
    } else {
        Some(crate::targets::directory()?)
    };
    if let Some(dir) = &dir {
        let mut names: Vec<&str> = local.iter().map(|t| t.run_name()).collect();
        names.dedup();
        let built = tokio::process::Command::new(dir.join("build"))
            .args(&names)
            .status()
            .await
            .map_err(|e| Error::Setup(format!("cannot run targets/build: {e}")))?;
        if !built.success() {
            return Err(Error::Setup(
                "targets/build failed (its output above says why)".into(),
            ));
        }
    }
    let db = if local.is_empty() {
        None
    } else {
        Some(database(experiment).await?)
    };
    let upstream = Upstream::start().map_err(|e| Error::Setup(format!("upstream: {e}")))?;
    let mut verification = verify_targets(
        experiment,
        &needed,
        db.as_ref().map(|d| d.url.as_str()),
        &upstream,
    )
    .await;
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
    store
        .put_experiment(&record(experiment, &plan, &placement, verification.clone()))
        .await?;
    let workdir = tempfile_dir()?;

    let total = todo.len();
    let mut left_time: Duration = todo.iter().map(|c| cell_time(c, &plan)).sum();
    for (done, cell) in todo.into_iter().enumerate() {
        if *stop.borrow() {
            report.interrupted = true;
            break;
        }
        let line = format!(
            "[{}/{total}] {} (repetition {}) · {} left, about {} to go",
            done + 1,
            cell.key(),
            cell.repetition,
            total - done - 1,
            humantime::format_duration(Duration::from_secs(left_time.as_secs()))
        );
        if options.live {
            eprint!("\r\x1b[2K{line}");
        } else {
            eprintln!("{line}");
        }
        let verified = verification
            .iter()
            .find(|v| v.target == cell.target)
            .cloned();
        let context = CellContext {
            experiment,
            plan: &plan,
            options,
            store: &store,
            dir: dir.as_deref(),
            db: db.as_ref().map(|d| d.url.as_str()),
            upstream: &upstream,
            workdir: workdir.path(),
            placement: &placement,
        };
        let outcome = match verified {
            Some(v) if !v.passed => {
                let reason = format!("{} failed verification: {}", cell.target, failures(&v));
                context.keep_failed(cell, &reason, None).await?;
                CellOutcome::Failed(reason)
            }
            _ => context.run_cell(cell, &mut stop).await?,
        };
        match outcome {
            CellOutcome::Done => report.ran += 1,
            CellOutcome::Failed(reason) => {
                report.ran += 1;
                if options.live {
                    eprintln!();
                }
                eprintln!("  cell failed: {reason}");
                report.failed.push((cell.key(), reason));
            }
            CellOutcome::Interrupted => {
                report.interrupted = true;
                break;
            }
        }
        left_time = left_time.saturating_sub(cell_time(cell, &plan));
        if done + 1 < total && !plan.cooldown.is_zero() {
            tokio::select! {
                _ = tokio::time::sleep(plan.cooldown) => {}
                _ = stop.changed() => {}
            }
        }
    }
    if options.live {
        eprintln!();
    }
    report.elapsed = started.elapsed();
    Ok(report)
}

fn tempfile_dir() -> Result<tempfile::TempDir, Error> {
    tempfile::Builder::new()
        .prefix("showdown-experiment-")
        .tempdir()
        .map_err(|e| Error::Setup(format!("cannot make a temporary directory: {e}")))
}

fn cell_time(cell: &Cell, plan: &Plan) -> Duration {
    cell.load_time() + plan.warmup + plan.post_roll + plan.cooldown + Duration::from_secs(2)
}

enum CellOutcome {
    Done,
    Failed(String),
    Interrupted,
}

struct CellContext<'a> {
    experiment: &'a Experiment,
    plan: &'a Plan,
    options: &'a RunOptions,
    store: &'a Store,
    dir: Option<&'a std::path::Path>,
    db: Option<&'a str>,
    upstream: &'a Upstream,
    workdir: &'a std::path::Path,
    placement: &'a str,
}

impl CellContext<'_> {
    fn spec(&self, cell: &Cell) -> Result<&TargetSpec, Error> {
        self.experiment
            .file
            .targets
            .iter()
            .find(|t| t.name == cell.target)
            .ok_or(Error::Plan(format!("no target {}", cell.target)))
    }

    fn labels(&self, cell: &Cell, phase: Phase, held: &str) -> Vec<(String, String)> {
        let mut labels = vec![(label::TARGET.to_string(), cell.target.clone())];
        labels.extend(cell.setting.iter().cloned());
        labels.extend(plan_labels(self.experiment, self.plan));
        labels.push((label::CELL.into(), cell.key()));
        labels.push((label::REPETITION.into(), cell.repetition.to_string()));
        labels.push((label::PHASE.into(), phase.as_str().into()));
        labels.push((label::PLACEMENT.into(), self.placement.to_string()));
        if !held.is_empty() {
            labels.push((label::HELD.into(), held.to_string()));
        }
        labels
    }

    fn run_name(&self, cell: &Cell) -> String {
        format!(
            "{} {} #{}",
            self.experiment.file.name,
            cell.key(),
            cell.repetition
        )
    }

    /// Keeps a cell that could not be measured as a failed run, with its reason.
    async fn keep_failed(
        &self,
        cell: &Cell,
        reason: &str,
        id: Option<String>,
    ) -> Result<(), Error> {
        let id = match id {
            Some(id) if self.store.load_run_streaming(&id, |_| {}).await.is_ok() => id,
            _ => {
                let id = RunMeta::new_id();
                let meta = RunMeta {
                    id: id.clone(),
                    name: self.run_name(cell),
                    experiment: Some(self.experiment.file.name.clone()),
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
                        timeout_ns: 0,
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

    async fn run_cell(
        &self,
        cell: &Cell,
        stop: &mut watch::Receiver<bool>,
    ) -> Result<CellOutcome, Error> {
        let spec = self.spec(cell)?;
        let run_id = RunMeta::new_id();
        // Start the target (or find the remote one healthy), watched by a probe.
        let mut target = None;
        let mut probe = None;
        let (base, probe_addr) = match (&spec.url, self.dir, self.db) {
            (Some(url), _, _) => (url.trim_end_matches('/').to_string(), spec.probe.clone()),
            (None, Some(dir), Some(db)) => {
                let launch = target_launch(self.experiment, spec, &cell.env, db, self.upstream);
                let t = match Target::start(dir, &launch).await {
                    Ok(t) => t,
                    Err(e) => {
                        let reason = format!("the target did not start: {e}");
                        self.keep_failed(cell, &reason, None).await?;
                        return Ok(CellOutcome::Failed(reason));
                    }
                };
                crate::database::empty_users(db)
                    .await
                    .map_err(Error::Setup)?;
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .map_err(|e| Error::Setup(format!("probe: {e}")))?;
                let mut config =
                    probe::sampler::SamplerConfig::new(probe::selector::Selector::Pid(t.pid()));
                config.interval = self.experiment.file.probe_interval;
                let running = probe::sampler::Sampler::new(config)
                    .and_then(|s| {
                        probe::server::RunningProbe::start(
                            s,
                            listener,
                            probe::server::ServeConfig::default(),
                            64 * 1024,
                            64 << 20,
                        )
                    })
                    .map_err(|e| Error::Setup(format!("probe: {e}")))?;
                let addr = running.addr.to_string();
                probe = Some(running);
                let base = t.base_url();
                target = Some(t);
                (base, Some(addr))
            }
            _ => {
                return Err(Error::Setup(
                    "local targets need targets/ and a database".into(),
                ))
            }
        };
        let held = target
            .as_ref()
            .map(|t| t.held.description.clone())
            .unwrap_or_default();
        if let Err(why) = healthy(&base, Duration::from_secs(30)).await {
            let output = target.as_ref().map(|t| t.output()).unwrap_or_default();
            let reason =
                format!("{base}/healthz never answered 200: {why}; its last output: {output}");
            if let Some(t) = target {
                let _ = t.stop(Duration::from_secs(15)).await;
            }
            self.keep_failed(cell, &reason, None).await?;
            return Ok(CellOutcome::Failed(reason));
        }
        let attack = |phase: Phase, only_for: Option<Duration>, id: String| Attack {
            base_url: base.clone(),
            load: cell.load.clone(),
            only_for,
            db: self.options.db.clone(),
            experiment: self.experiment.file.name.clone(),
            name: if phase == Phase::Measure {
                self.run_name(cell)
            } else {
                format!("{} ({phase})", self.run_name(cell))
            },
            run_id: id,
            labels: self.labels(cell, phase, &held),
            probe: if phase == Phase::Measure {
                probe_addr.clone()
            } else {
                None
            },
            probe_token_file: spec.probe_token_file.clone(),
            probe_fingerprint: spec.probe_fingerprint.clone(),
            probe_ca: spec.probe_ca.clone(),
            pre_roll: self.plan.pre_roll,
            post_roll: self.plan.post_roll,
            workdir: self.workdir.to_path_buf(),
        };
        let mut outcome = CellOutcome::Done;
        if !self.plan.warmup.is_zero() {
            let warmup = attack(Phase::Warmup, Some(self.plan.warmup), RunMeta::new_id());
            match self.fire(&warmup, stop).await {
                Ok(Some(fired)) if fired.code == Some(0) => {}
                Ok(Some(fired)) => {
                    outcome = CellOutcome::Failed(format!("the warm-up failed: {}", fired.said))
                }
                Ok(None) => outcome = CellOutcome::Interrupted,
                Err(e) => outcome = CellOutcome::Failed(e),
            }
        }
        let mut measured_id = None;
        if matches!(outcome, CellOutcome::Done) {
            let measure = attack(Phase::Measure, None, run_id.clone());
            measured_id = Some(run_id.clone());
            outcome = match self.fire(&measure, stop).await {
                Ok(None) => CellOutcome::Interrupted,
                Ok(Some(fired)) => match fired.code {
                    Some(0) => match fired
                        .summary
                        .as_ref()
                        .and_then(store::diagnosis::generator_fell_behind)
                    {
                        Some(why) => CellOutcome::Failed(why),
                        None => CellOutcome::Done,
                    },
                    Some(3) => CellOutcome::Interrupted,
                    _ => CellOutcome::Failed(format!("loadgen could not run: {}", fired.said)),
                },
                Err(e) => CellOutcome::Failed(e),
            };
        }
        drop(probe);
        if let Some(mut t) = target {
            if let Some(how) = t.exited() {
                outcome = CellOutcome::Failed(format!(
                    "the target {how} during the run; its last output: {}",
                    t.output()
                ));
            } else if let Err(how) = t.stop(Duration::from_secs(15)).await {
                eprintln!("  note: stopping {}: {how}", cell.target);
            }
        }
        if let CellOutcome::Failed(reason) = &outcome {
            self.keep_failed(cell, reason, measured_id).await?;
        }
        Ok(outcome)
    }

    /// Fires one attack; `None` when the experiment was interrupted meanwhile.
    async fn fire(
        &self,
        attack: &Attack,
        stop: &mut watch::Receiver<bool>,
    ) -> Result<Option<crate::gun::Fired>, String> {
        if *stop.borrow() {
            return Ok(None);
        }
        let fired = self.options.gun.fire(attack, stop.clone()).await?;
        Ok((!*stop.borrow()).then_some(fired))
    }
}

/// Waits until `GET /healthz` answers 200.
async fn healthy(base: &str, within: Duration) -> Result<(), String> {
    let http = Http::new(Duration::from_secs(5));
    let deadline = Instant::now() + within;
    let mut last = String::new();
    while Instant::now() < deadline {
        match http.get(&format!("{base}/healthz")).await {
            Ok(x) if x.status == 200 => return Ok(()),
            Ok(x) => last = format!("status {}", x.status),
            Err(e) => last = e,
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Err(last)
}
