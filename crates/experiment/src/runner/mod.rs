//! Running an experiment: its targets built and verified, then cell by cell (reset the
//! database, start the target, watch it with a probe, wait until it is ready, warm up,
//! measure, stop it, cool down),
//! every run kept with the labels of its cell; a failed cell kept as failed with its reason,
//! and the matrix goes on. Run again, it resumes: the cells already kept for this file's
//! content and scale are skipped.
//!
//! - `resume`: which cells are kept already, from the store.
//! - `setup`: what the cells share: the targets' database, their environment, their
//!   verification.
//! - `cell`: one cell, from starting its target to keeping its run.
//! - `share`: a cell's rate given as a share of the capacity its searches found.

use std::time::{Duration, Instant};

use store::experiment::{Definition, ExperimentRecord, Verification};
use store::Store;
use tokio::sync::watch;

use crate::file::{Experiment, TargetKind, TargetSpec};
use crate::plan::{Cell, CellKind, Plan};
use crate::upstream::Upstream;
mod cell;
mod resume;
mod setup;
mod share;

use cell::{cell_time, now_ns, CellContext, CellOutcome};
mod options;

pub use options::{Error, RunOptions, RunReport, Trust, SECRET};
pub use resume::{states, CellState};
use setup::{
    builds, database, database_cpus, failures, named_database, ports, verify_targets, Launcher,
};

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
            searched: plan.searched.clone(),
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
    mut stop: watch::Receiver<bool>,
) -> Result<RunReport, Error> {
    let started = Instant::now();
    let plan = crate::plan::plan(experiment, &options.plan)?;
    trusted(experiment, &options.trust, &options.db)?;
    // What an earlier runner killed outright left (its targets, its PostgreSQL) goes first.
    let swept = tokio::task::spawn_blocking(custody::sweep)
        .await
        .unwrap_or_default();
    for left in &swept.left {
        eprintln!("Note: {left}.");
    }
    for problem in &swept.problems {
        eprintln!("Warning: {problem}.");
    }
    let commands = experiment
        .file
        .targets
        .iter()
        .any(|t| t.kind() == TargetKind::Command);
    if commands && !custody::by_cgroup() {
        eprintln!(
            "Note: the servers started by command are held by {}.",
            custody::holding()
        );
    }
    if experiment.file.guns.is_some() && !options.db.starts_with("postgres") {
        return Err(Error::Setup(
            "[guns] write to one store every gun reaches: a PostgreSQL one (--db postgres://…, or SHOWDOWN_DB); a SQLite file cannot be shared".into(),
        ));
    }
    let store = Store::open(&options.db).await?;
    let states = states(&store, experiment, &plan).await?;
    // An unfinished search goes on under its own id, from its last finished step.
    let resume: std::collections::HashMap<(String, u32), String> = plan
        .cells
        .iter()
        .zip(&states)
        .filter_map(|(c, s)| match s {
            CellState::Unfinished { run } if c.kind == CellKind::Search => {
                Some(((c.key(), c.repetition), run.clone()))
            }
            _ => None,
        })
        .collect();
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
    let mut placement = placement_text(experiment);
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
    let needed_ref = &needed;
    let needs = |kind: TargetKind| {
        experiment
            .file
            .targets
            .iter()
            .filter(move |t| t.kind() == kind && needed_ref.contains(&t.name))
    };
    let builtins: Vec<&TargetSpec> = needs(TargetKind::Builtin).collect();
    let dir = if builtins.is_empty() {
        None
    } else {
        Some(crate::targets::directory()?)
    };
    let base = crate::environment::Base::current();
    if !base.withheld.is_empty() {
        eprintln!(
            "Note: {} not given to the builds and targets: a password is in it (name it in a target's pass_env to give it).",
            base.withheld.join(", ")
        );
    }
    if let Some(dir) = &dir {
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
            env: crate::environment::build(&base, &[], &[]),
            // A first build of the Rust target, or Go's modules from the network.
            timeout: Duration::from_secs(1800),
        };
        if let Err(why) = setup::build(&building, stop.clone()).await {
            if *stop.borrow() {
                report.interrupted = true;
                report.elapsed = started.elapsed();
                return Ok(report);
            }
            return Err(Error::Setup(format!("targets/build failed: {why}")));
        }
    }
    // A database when a built-in target is measured, or when the file has [database] and a
    // target of its own (started by command, or remote with rows to count) is.
    let wants_db = !builtins.is_empty()
        || (experiment.file.database.is_some()
            && (needs(TargetKind::Command).next().is_some()
                || needs(TargetKind::Remote).next().is_some()));
    let db = if wants_db {
        Some(database(experiment, !builtins.is_empty()).await?)
    } else {
        None
    };
    if let Some(process) = db.as_ref().and_then(|d| d.process.as_ref()) {
        let gun = experiment.file.placement.gun_cpus.as_ref();
        if let Some(shared) = crate::watch::shares_generator_cpus(process, gun) {
            eprintln!("Warning: {shared}.");
            placement.push_str(&format!("; {shared}"));
        }
    }
    let ports = ports(experiment, &needed)?;
    let built = builds(experiment, &needed, &ports, &stop).await;
    if *stop.borrow() {
        report.interrupted = true;
        report.elapsed = started.elapsed();
        return Ok(report);
    }
    let upstream = Upstream::start().map_err(|e| Error::Setup(format!("upstream: {e}")))?;
    // The guns, before the targets are checked: a remote target is checked through them.
    let fleet = match &experiment.file.guns {
        None => None,
        Some(guns) => {
            // Preparing the guns (connecting, copying a build) can take minutes: a stop
            // ends it at once, its SSH processes with it.
            let preparing = fleet(experiment, guns, &needed, &options.gun.loadgen);
            let mut stopping = stop.clone();
            let fleet = tokio::select! {
                prepared = preparing => prepared?,
                Ok(_) = stopping.wait_for(|s| *s) => {
                    report.interrupted = true;
                    report.elapsed = started.elapsed();
                    return Ok(report);
                }
            };
            for line in fleet.describe() {
                eprintln!("  {line}");
            }
            placement = format!(
                "{} gun hosts over SSH ({}){}; the targets remote",
                fleet.guns.len(),
                fleet
                    .guns
                    .iter()
                    .map(|g| g.link.destination.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                guns.cpus
                    .as_ref()
                    .map(|c| format!(", each generator held to CPU {c}"))
                    .unwrap_or_default()
            );
            Some(fleet)
        }
    };
    let mut reach = std::collections::BTreeMap::new();
    if let Some(fleet) = &fleet {
        for t in needs(TargetKind::Remote) {
            if let Some(url) = &t.url {
                let through = fleet
                    .reach(url)
                    .await
                    .map_err(|e| Error::Setup(e.to_string()))?;
                if &through != url {
                    eprintln!(
                        "  {} is checked where the guns reach it: through {} ({through})",
                        t.name,
                        fleet
                            .guns
                            .first()
                            .map(|g| g.link.destination.as_str())
                            .unwrap_or("")
                    );
                }
                reach.insert(t.name.clone(), through);
            }
        }
    }
    let launcher = Launcher {
        experiment,
        dir: dir.as_deref(),
        db: db.as_ref().map(|d| d.url.as_str()),
        db_process: db.as_ref().and_then(|d| d.process.clone()),
        upstream: &upstream,
        ports: &ports,
        reach,
    };
    let mut verification = verify_targets(&launcher, &needed, &built).await;
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
    // Its files (a cell's requests, the probes' token) go with it, even after a SIGKILL.
    let mut files = custody::Group::new("experiment files");
    files.remove_with(workdir.path().to_path_buf());
    let keys = cell::ProbeKeys::make(workdir.path())?;

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
        let mut context = CellContext {
            experiment,
            plan: &plan,
            options,
            store: &store,
            launcher: &launcher,
            placement: &placement,
            share: None,
            keys: &keys,
            fleet: fleet.as_ref(),
        };
        // A share's rate, from the searches kept by now (every search runs before any share).
        let resolved = match cell.kind {
            CellKind::Share { .. } => Some(share::resolve(&store, experiment, &plan, cell).await?),
            _ => None,
        };
        let outcome = match (verified, &resolved) {
            (Some(v), _) if !v.passed => {
                let reason = format!("{} failed verification: {}", cell.target, failures(&v));
                context.keep_failed(cell, &reason, None).await?;
                CellOutcome::Failed(reason)
            }
            (_, Some(Err(why))) => {
                let reason = format!("no rate for this cell: {why}");
                context.keep_failed(cell, &reason, None).await?;
                CellOutcome::Failed(reason)
            }
            (_, Some(Ok(resolved))) => {
                if options.live {
                    eprintln!();
                }
                let share = cell.load.rate.map(|r| r.to_string()).unwrap_or_default();
                eprintln!(
                    "  {share} of {}'s capacity ({:.0} req/s, the median of {} search{}): {:.0} req/s",
                    cell.target,
                    resolved.capacity,
                    resolved.searches,
                    if resolved.searches == 1 { "" } else { "es" },
                    resolved.cell.load.per_second().unwrap_or(0.0),
                );
                context.share = Some((share, resolved.capacity));
                context.run_cell(&resolved.cell, None, &mut stop).await?
            }
            _ => {
                let id = resume.get(&(cell.key(), cell.repetition)).cloned();
                context.run_cell(cell, id, &mut stop).await?
            }
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
    if let Some(fleet) = fleet {
        fleet.close().await;
    }
    report.elapsed = started.elapsed();
    Ok(report)
}

/// Refuses what a file asks for that the user has not confirmed: a variable whose name says it
/// may hold a secret, guns (where every order goes, and SSH with the file's config), and a
/// targets' database that is the store itself (the file's schema and the targets' writes would
/// land among the user's runs).
fn trusted(experiment: &Experiment, trust: &Trust, store: &str) -> Result<(), Error> {
    experiment
        .file
        .check_variables(&trust.pass_env)
        .map_err(Error::Setup)?;
    // The headers a load reads from the environment, checked before anything runs.
    for v in experiment.file.variables() {
        if v.field.ends_with("headers_env") {
            crate::gun::headers_from(&v.name).map_err(|e| Error::Setup(e.to_string()))?;
        }
    }
    if let Some(guns) = &experiment.file.guns {
        if !trust.guns {
            let config = guns
                .ssh_config
                .as_ref()
                .map(|c| format!(" with the SSH config {}", c.display()))
                .unwrap_or_default();
            return Err(Error::Setup(format!(
                "[guns]: this file sends every order over SSH to its own hosts{config}: see them in `loadgen experiment plan {}`, then run again with --trust-guns if they are yours",
                experiment.path.display()
            )));
        }
        // A lab's guns (terraform's, the twin's) read the store's URL from a file of their own.
        if guns.store_env_file.is_none() && guns.from.is_none() && !trust.send_store_url {
            return Err(Error::Setup(
                "[guns]: the guns need the store, and this runner's URL (with its password) is not sent by default: set store_env_file = \"/path/on/the/guns\" (a file there with SHOWDOWN_DB=…), or run again with --send-store-url".into(),
            ));
        }
    }
    if let Ok(Some(url)) = named_database(experiment) {
        if crate::watch::same_database(&url, store) {
            return Err(Error::Setup(
                "[database] names the store itself: the file's schema and the targets' writes would land among your runs; name another database".into(),
            ));
        }
    }
    Ok(())
}

/// The file's guns, connected and made ready; the first target they will fire at is reached
/// from each.
async fn fleet(
    experiment: &Experiment,
    guns: &crate::fleet::spec::GunsSpec,
    needed: &[String],
    loadgen: &std::path::Path,
) -> Result<crate::fleet::Fleet, Error> {
    let dir = experiment
        .path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let resolved = guns.resolve(dir).map_err(Error::Setup)?;
    let reach = experiment
        .file
        .targets
        .iter()
        .find(|t| needed.contains(&t.name))
        .and_then(|t| t.url.as_deref());
    eprintln!(
        "Preparing {} gun host(s) over SSH: {}",
        resolved.destinations.len(),
        resolved.destinations.join(", ")
    );
    crate::fleet::Fleet::prepare(
        &resolved,
        guns.cpus.as_ref(),
        guns.threads,
        guns.loadgen.as_deref(),
        guns.clock_tolerance,
        loadgen,
        reach,
    )
    .await
    .map_err(|e| Error::Setup(e.to_string()))
}

fn tempfile_dir() -> Result<tempfile::TempDir, Error> {
    tempfile::Builder::new()
        .prefix("showdown-experiment-")
        .tempdir()
        .map_err(|e| Error::Setup(format!("cannot make a temporary directory: {e}")))
}
