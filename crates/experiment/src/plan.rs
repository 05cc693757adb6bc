//! From an experiment file to its cells: the matrix's settings × its targets × repetitions,
//! in the order they run, each with its load resolved, scaled and checked.
//!
//! Order: repetition by repetition; within one, setting by setting (the last axis changing
//! fastest) and, for each setting, every target one after another, so that the targets of a
//! setting run close together in time. Even repetitions run the settings and the targets in
//! reverse, so that a drift of the machine over time does not always fall on the same one.
//! When a cell's rate is a share of a capacity (`rate = "80%"`), every search of every
//! repetition runs first, so that each repetition of a share runs at the same rate: that share
//! of the median capacity its searches found.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::file::{Experiment, LoadSpec, Mode, Rate};

/// One axis of the matrix, in the file's order: `rate`, `env.CLUSTER`, `load`, ….
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    pub key: String,
    pub values: Vec<toml::Value>,
}

/// What one cell runs.
#[derive(Debug, Clone)]
pub struct Cell {
    /// Its place in the plan, from 1.
    pub number: usize,
    /// The `[[target]]` name.
    pub target: String,
    /// The setting: (axis, value) for every axis but `target`, in axis order.
    pub setting: Vec<(String, String)>,
    /// From 1.
    pub repetition: u32,
    /// The load, resolved and scaled.
    pub load: LoadSpec,
    /// The target's environment beyond the runner's: the target's `env` and `env.NAME` axes.
    pub env: BTreeMap<String, String>,
    pub kind: CellKind,
}

/// What a cell runs.
#[derive(Debug, Clone, PartialEq)]
pub enum CellKind {
    /// Its load as given: a rate, steps, or a closed loop.
    Fixed,
    /// A capacity search (`[search]`): the highest rate within the SLO.
    Search,
    /// A fixed rate that is a share of the capacity found by the search cells keyed here (the
    /// same target, environment and requests; in every repetition).
    Share { searches: Vec<String> },
}

pub use analysis::capacity::SEARCH_RATE;

impl Cell {
    /// The SLO its measured runs are judged against (its load's `slo`), if it has one; `Err`
    /// names a term that does not parse, with the grammar.
    pub fn slo(
        &self,
    ) -> Result<Option<analysis::capacity::Slo>, analysis::capacity::slo::SloError> {
        let Some(terms) = &self.load.slo else {
            return Ok(None);
        };
        let terms = terms
            .iter()
            .map(|t| t.parse())
            .collect::<Result<Vec<analysis::capacity::Term>, _>>()?;
        Ok(Some(analysis::capacity::Slo { terms }))
    }

    /// `target=node rate=2000`: the cell without its repetition, the same in every repetition.
    pub fn key(&self) -> String {
        std::iter::once(format!("target={}", self.target))
            .chain(self.setting.iter().map(|(k, v)| format!("{k}={v}")))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The setting's `axis=value` pairs, but `skip`'s (a comparison's own rate, said apart).
    pub fn axes_but(&self, skip: Option<&str>) -> Vec<String> {
        self.setting
            .iter()
            .filter(|(k, _)| Some(k.as_str()) != skip)
            .map(|(k, v)| format!("{k}={v}"))
            .collect()
    }

    /// The setting alone, `rate=2000` (`all` when the matrix has no other axis).
    pub fn setting_text(&self) -> String {
        if self.setting.is_empty() {
            return "all".into();
        }
        self.axes_but(None).join(" ")
    }

    /// How long its measured run lasts at most.
    pub fn load_time(&self) -> Duration {
        load_time(&self.load)
    }
}

fn load_time(load: &LoadSpec) -> Duration {
    if let (Some(steps), Some(d)) = (&load.steps, load.step_duration) {
        return d.saturating_mul(u32::try_from(steps.len()).unwrap_or(u32::MAX));
    }
    match (load.duration, load.requests, load.per_second()) {
        (Some(d), _, _) => d,
        (None, Some(n), Some(rate)) if rate > 0.0 => {
            Duration::try_from_secs_f64(n as f64 / rate).unwrap_or(Duration::MAX)
        }
        _ => Duration::ZERO,
    }
}

/// Why a plan cannot be made from a file and its options, in words that name the fix.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    #[error("--scale {0:?} must be above 0 and at most {MAX_SCALE}")]
    Scale(f64),
    #[error("[compare] needs 3 repetitions or more (each is a round; 8 is a good start), not {0}")]
    CompareRounds(u32),
    #[error("[compare] of searches runs each setting's searches once, in [search] rounds; repetitions ({0}) count the rounds of a share of their capacities (rate = [\"search\", \"60%\"]), and there is none: drop repetitions, or add a share")]
    SearchRepetitions(u32),
    #[error("repetitions must be at most {MAX_REPETITIONS} (the file's, or --repetitions)")]
    Repetitions,
    #[error("{field}: {error}")]
    Cpus {
        field: &'static str,
        error: probe::cpus::CpuListError,
    },
    #[error("the matrix makes {0} cells, more than the {MAX_CELLS} a plan may hold: fewer axes, values or repetitions")]
    TooManyCells(usize),
    #[error("no cell matches --only: see `loadgen experiment plan FILE`")]
    NoCellMatches,
    #[error("no target {0:?}")]
    NoTarget(String),
    #[error("matrix.{key}: {value} is not {what}")]
    AxisValue {
        key: String,
        value: String,
        what: &'static str,
    },
    #[error("cell {cell}: {why}")]
    Cell { cell: String, why: LoadError },
    #[error("cell {0}: its rate is a share of a capacity, but no cell searches that target with the same requests, environment and other axes: add one whose load has no rate (or \"search\" to the rate axis)")]
    NoSearchForShare(String),
    #[error("cell {cell}: slo {why}")]
    Slo {
        cell: String,
        why: analysis::capacity::slo::SloError,
    },
    #[error("[search] rounds = {0}: a comparison runs from {MIN_ROUNDS} to {MAX_ROUNDS} rounds")]
    Rounds(u32),
    #[error("[search] rounds interleaves the targets' searches from this host's generator: drop [guns], or drop rounds to search each target on its own")]
    RoundsWithGuns,
    #[error("[search] rounds sends every target the same requests: {0} and {1} have different loads at {2}; give them one load, or drop rounds")]
    RoundsLoads(String, String, String),
    #[error("[search] rounds sends every target the same requests at its own origin: target {0}'s url has a path ({1}); give it at its origin, or drop rounds")]
    RoundsPath(String, String),
}

/// The most rounds a comparison runs.
pub const MAX_ROUNDS: u32 = 1000;
pub use analysis::capacity::compare::MIN_ROUNDS;

/// What is missing or contradictory in a cell's load.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    #[error("the load has no path and no mix")]
    NoPath,
    #[error("path {0:?} does not start with /: a path is added to the target's URL, so it could send the requests (and their headers) to another port or host; write it from its first /")]
    RelativePath(String),
    #[error("an open loop needs a duration or a request count")]
    OpenWithoutBound,
    #[error("steps need a step_duration")]
    StepsWithoutDuration,
    #[error("give a rate or steps, not both")]
    RateAndSteps,
    #[error("an open loop needs a rate above 0 or steps")]
    NoRate,
    #[error("batch paces an open loop (a rate): a closed loop has no schedule")]
    BatchInClosedLoop,
    #[error("arrival = \"poisson\" sends each request at its own instant: remove batch, or the arrival line")]
    PoissonBatched,
    #[error("arrival shapes an open loop (a rate): a closed loop has no arrivals to shape")]
    ArrivalInClosedLoop,
    #[error("a closed loop needs connections")]
    NoConnections,
    #[error("a closed loop needs a duration (with requests, it bounds the run)")]
    ClosedWithoutDuration,
    #[error("[search] chooses the rates: drop rate, steps and mode = \"closed\" from the load, or give the rate as a share of the capacity found (rate = \"80%\")")]
    RateInSearch,
    #[error("its rate is a share of a capacity, which a search measures: add a [search] table, or give the rate in requests a second")]
    ShareWithoutSearch,
    #[error("a rate given as a share of a capacity needs a duration (how long the requests last is known only once the capacity is)")]
    ShareWithoutDuration,
}

/// The largest `--scale`: beyond it durations and rates stop meaning anything.
pub const MAX_SCALE: f64 = 1000.0;
/// The most repetitions, and cells, a plan may hold.
pub const MAX_REPETITIONS: u32 = 1000;
pub const MAX_CELLS: usize = 100_000;

/// How to cut the plan.
#[derive(Debug, Clone)]
pub struct PlanOptions {
    /// Multiplies rates, durations and request counts (a quick look: `0.1`).
    pub scale: f64,
    /// Instead of the file's repetitions.
    pub repetitions: Option<u32>,
    /// Only the cells with every one of these (axis or `target` or `repetition`, value).
    pub only: Vec<(String, String)>,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            scale: 1.0,
            repetitions: None,
            only: Vec::new(),
        }
    }
}

/// The cells of an experiment, in order.
#[derive(Debug, Clone)]
pub struct Plan {
    pub axes: Vec<Axis>,
    /// The targets in the matrix, in the file's order.
    pub targets: Vec<String>,
    pub repetitions: u32,
    pub scale: f64,
    pub cells: Vec<Cell>,
    /// Warm-up and cool-down, scaled.
    pub warmup: Duration,
    pub cooldown: Duration,
    /// The probes' history before and after each measured run, scaled (at least 0.5 s).
    pub pre_roll: Duration,
    pub post_roll: Duration,
    /// Cells this host's generator is unlikely to keep up with, and why (see [`capacity`]).
    pub warnings: Vec<String>,
    /// What each share of a capacity promises for its run, where that is less than a user
    /// would read into it (see [`promises`]).
    pub promises: Vec<String>,
    /// The file's `[search]`, its step, warm-up and budget scaled, for the cells that search.
    pub search: Option<crate::file::SearchSpec>,
    /// The settings whose cells search (of the whole matrix, before `--only`).
    pub searched: Vec<Vec<(String, String)>>,
    /// The file's `[compare]`: each setting's cells, every repetition a round, run together.
    pub compare: Option<crate::file::CompareSpec>,
}

/// A search's steps, for estimates, when it runs alone: it ends when its interval is within
/// ±5 % (or at `max_steps`, 30), which took 18 steps at the median of the simulated searches
/// (docs/benchmarks/capacity.md) and 17–20 in four real ones of the Go server. (With `rounds`,
/// each target runs one step a round.)
pub const SEARCH_STEPS: u32 = 18;

/// What a search's step costs beside its window and warm-up: starting and judging it, and, after
/// a step that failed, the server's drain. Measured on the project's VM: 1 s a step in four
/// searches of 10 s steps (18 steps in 3.9 minutes), 2 s in 40 steps of 1 s interleaved in
/// rounds (140 s), 1.5–3.4 s in the Go server's A/A comparisons of 5 s steps.
pub const STEP_OVERHEAD: Duration = Duration::from_secs(2);

/// How `estimate` counts a search, said beside it: a search's length is not known before it
/// runs.
pub const SEARCH_ESTIMATE: &str = "each search counted at 18 steps, as a median search takes, or its rounds; a search ends when its interval is within its --until, or at its step limit";

impl Plan {
    /// Whether `[compare]` gates capacity: its builds' searches compared in rounds (a
    /// `[search]` with rounds), each setting and repetition one comparison.
    pub fn compares_searches(&self) -> bool {
        self.compare.is_some() && self.search.as_ref().is_some_and(|s| s.rounds.is_some())
    }

    /// About how long one cell's load lasts: its own, or a search's steps.
    pub fn cell_load_time(&self, cell: &Cell) -> Duration {
        match self
            .search
            .as_ref()
            .filter(|_| cell.kind == CellKind::Search)
        {
            Some(s) => {
                // Saturating: a file's "1000000y" is a long time, not a panic.
                let step = s
                    .step
                    .unwrap_or(Duration::from_secs(10))
                    .saturating_add(s.warmup.unwrap_or(Duration::from_secs(2)))
                    .saturating_add(STEP_OVERHEAD);
                let alone = s.max_steps.map_or(SEARCH_STEPS, |m| {
                    u32::try_from(m).unwrap_or(u32::MAX).min(SEARCH_STEPS)
                });
                // A check runs a step at each of five rates a block, then the search again.
                let checked = s
                    .check
                    .map_or(0, |blocks| blocks.saturating_mul(5).saturating_add(alone));
                let count = s.rounds.unwrap_or(alone).saturating_add(checked);
                let steps = step.saturating_mul(count);
                // A budget ends a search at its first step begun past it.
                s.budget
                    .map_or(steps, |b| steps.min(b.saturating_add(step)))
            }
            None => cell.load_time(),
        }
    }
}

/// The generator's CPU for one request of an open loop on the 2-vCPU VM Showdown is measured on
/// (`bench/loadgen.py`): paced one by one, a wake-up per request (30 µs, most of it the
/// machine's wake-up floor); in 1 ms batches, 9 µs.
pub const PRECISE_US: f64 = 30.0;
pub const BATCH_US: f64 = 9.0;
/// Past this share of its CPUs, the generator is warned about.
pub const GENERATOR_MARGIN: f64 = 0.8;

/// The open-loop cells whose rate the generator, on its CPUs, would not keep at the costs above:
/// one line each (once per setting, not per repetition), naming what to change.
pub fn capacity(experiment: &Experiment, cells: &[Cell]) -> Vec<String> {
    let cpus = experiment
        .file
        .placement
        .gun_cpus
        .as_ref()
        .map_or_else(|| probe::cpus::CpuList::online().len(), |c| c.len())
        .max(1);
    let mut out: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for cell in cells {
        if cell.load.mode() != Mode::Open || !seen.insert(cell.key()) {
            continue;
        }
        let rate = cell
            .load
            .per_second()
            .into_iter()
            .chain(cell.load.steps.iter().flatten().copied())
            .fold(0.0f64, f64::max);
        let batched = cell.load.batch.is_some_and(|b| !b.is_zero());
        let per_request = if batched { BATCH_US } else { PRECISE_US };
        let cores = rate * per_request / 1e6;
        if cores > GENERATOR_MARGIN * cpus as f64 {
            let fix = if batched {
                "give the generator more CPUs (placement.gun_cpus) or lower the rate"
            } else {
                "pace in batches (batch = \"1ms\", as wrk2 does) or give the generator more CPUs (placement.gun_cpus)"
            };
            out.push(format!(
                "{}: {rate:.0} req/s {} needs about {cores:.1} of the generator's {cpus} CPU{} (about {per_request:.0} µs a request on a 2-vCPU VM): {fix}",
                cell.key(),
                if batched { "in batches" } else { "paced one by one" },
                if cpus == 1 { "" } else { "s" },
            ));
        }
    }
    out
}

/// One line for each share of a capacity whose run is longer than the search's windows or
/// whose figure is met less than nine times in ten: a share of C_p(T, w) is a share of the rate
/// at which one window of T seconds meets the SLO with probability p, not of a rate a run of
/// the cell's length holds within it (at 80 % of a C_0.5 of 5 s windows, a database-backed
/// server broke p99 ≤ 20 ms in both of its 15 s runs), and what to set for one that is.
pub fn promises(plan: &Plan) -> Vec<String> {
    let Some(search) = &plan.search else {
        return Vec::new();
    };
    let step = search.step.unwrap_or(Duration::from_secs(10));
    let p = search.p.unwrap_or(0.5);
    let mut out: Vec<String> = Vec::new();
    for cell in &plan.cells {
        let (Some(share), Some(run)) = (cell.load.share(), cell.load.duration) else {
            continue;
        };
        if run <= step && p >= 0.9 - 1e-9 {
            continue;
        }
        let line = format!(
            "{:.0} % of C_{p} (windows of {}): at C_{p} one window of {} meets the SLO {}, and a run of {} at a share of it is not promised to; for a run held within the SLO, search with [search] step = \"{}\" and p = 0.9",
            share * 100.0,
            humantime::format_duration(step),
            humantime::format_duration(step),
            analysis::capacity::how_often(p),
            humantime::format_duration(run),
            humantime::format_duration(run.max(step)),
        );
        if !out.contains(&line) {
            out.push(line);
        }
    }
    out
}

impl Plan {
    /// Labels that tie a run to this plan: the file's content and the scale.
    pub fn file_label(experiment: &Experiment) -> String {
        experiment.hash[..12].to_string()
    }

    /// About how long the plan takes: each cell's load, warm-up, post-roll, cool-down, and a
    /// few seconds to start and stop its target.
    pub fn estimate(&self) -> Duration {
        self.cells.iter().fold(Duration::ZERO, |sum, c| {
            sum.saturating_add(self.cell_time(c))
        })
    }

    /// About how long one cell takes: its load, warm-up, post-roll, cool-down, and a few
    /// seconds to start and stop its target (saturating at the longest duration).
    pub fn cell_time(&self, cell: &Cell) -> Duration {
        self.cell_load_time(cell)
            .saturating_add(self.warmup)
            .saturating_add(self.post_roll)
            .saturating_add(self.cooldown)
            .saturating_add(Duration::from_secs(2))
    }
}

/// A value as a label: `2000`, `0.5`, `/now`, `2000,3000`.
pub fn label_value(value: &toml::Value) -> String {
    match value {
        toml::Value::String(s) => s.clone(),
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Float(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", *f as i64),
        toml::Value::Float(f) => f.to_string(),
        toml::Value::Boolean(b) => b.to_string(),
        toml::Value::Array(a) => a.iter().map(label_value).collect::<Vec<_>>().join(","),
        other => other.to_string(),
    }
}

/// The matrix's axes but `target`, in the file's order (`env.NAME` for environment axes).
pub fn axes(experiment: &Experiment) -> Vec<Axis> {
    let mut axes = Vec::new();
    for (key, values) in &experiment.file.matrix {
        match (key.as_str(), values) {
            ("target", _) => {}
            ("env", toml::Value::Table(vars)) => {
                for (var, values) in vars {
                    if let toml::Value::Array(v) = values {
                        axes.push(Axis {
                            key: format!("env.{var}"),
                            values: v.clone(),
                        });
                    }
                }
            }
            (_, toml::Value::Array(v)) => axes.push(Axis {
                key: key.clone(),
                values: v.clone(),
            }),
            _ => {}
        }
    }
    axes
}

/// Expands the matrix into cells.
pub fn plan(experiment: &Experiment, options: &PlanOptions) -> Result<Plan, PlanError> {
    let file = &experiment.file;
    bounds(experiment, options)?;
    let axes = axes(experiment);
    let targets = target_names(experiment);
    let repetitions = repetitions(experiment, options)?;
    // The count first: four axes of a hundred values must be refused, not built.
    let count = axes
        .iter()
        .fold(1usize, |n, a| n.saturating_mul(a.values.len()))
        .saturating_mul(targets.len())
        .saturating_mul(repetitions as usize);
    if count > MAX_CELLS {
        return Err(PlanError::TooManyCells(count));
    }
    let all = every_cell(experiment, &axes, &targets, repetitions, options.scale)?;
    let searched = searched_settings(&all);
    let mut cells: Vec<Cell> = all.into_iter().filter(|c| options.selects(c)).collect();
    for (i, c) in cells.iter_mut().enumerate() {
        c.number = i + 1;
    }
    if cells.is_empty() {
        return Err(PlanError::NoCellMatches);
    }
    let mut plan = Plan {
        axes,
        targets,
        repetitions,
        scale: options.scale,
        warmup: scale_duration(file.warmup, options.scale),
        cooldown: scale_duration(file.cooldown, options.scale),
        pre_roll: roll(file.pre_roll, options.scale),
        post_roll: roll(file.post_roll, options.scale),
        warnings: capacity(experiment, &cells),
        promises: Vec::new(),
        search: file.search.clone().map(|s| scaled_search(s, options.scale)),
        searched,
        cells,
        compare: file.compare.clone(),
    };
    plan.promises = promises(&plan);
    Ok(plan)
}

/// The targets the plan runs: the matrix's `target` axis, else every `[[target]]`.
fn target_names(experiment: &Experiment) -> Vec<String> {
    let file = &experiment.file;
    match file.matrix.get("target") {
        Some(toml::Value::Array(names)) => names.iter().map(label_value).collect(),
        _ => file.targets.iter().map(|t| t.name.clone()).collect(),
    }
}

/// Every cell of the whole matrix in the order they run, before `--only` cuts it: shares tied
/// to their searches, and searches run in rounds checked.
fn every_cell(
    experiment: &Experiment,
    axes: &[Axis],
    targets: &[String],
    repetitions: u32,
    scale: f64,
) -> Result<Vec<Cell>, PlanError> {
    let file = &experiment.file;
    let settings = settings(axes);
    let mut all = Vec::new();
    for repetition in 1..=repetitions {
        let mut settings_order: Vec<&Vec<(String, toml::Value)>> = settings.iter().collect();
        let mut targets_order: Vec<&String> = targets.iter().collect();
        // Every other repetition in reverse: what runs first is not always the same.
        if repetition % 2 == 0 {
            settings_order.reverse();
            targets_order.reverse();
        }
        for setting in settings_order {
            for target in &targets_order {
                all.push(cell(experiment, target, setting, repetition, scale)?);
            }
        }
    }
    if file.compare.is_some() && file.search.is_some() {
        // Each setting's searches once: a comparison's rounds are [search]'s.
        all.retain(|c: &Cell| c.kind != CellKind::Search || c.repetition == 1);
    }
    let all = shares(all)?;
    interleavable(experiment, &all)?;
    Ok(all)
}

/// The settings that have a search, each once, in the order they run.
fn searched_settings(all: &[Cell]) -> Vec<Vec<(String, String)>> {
    let mut searched: Vec<Vec<(String, String)>> = Vec::new();
    for c in all.iter().filter(|c| c.kind == CellKind::Search) {
        if !searched.contains(&c.setting) {
            searched.push(c.setting.clone());
        }
    }
    searched
}

/// The scale, the repetitions and the CPUs named: within bounds, and on this host.
fn bounds(experiment: &Experiment, options: &PlanOptions) -> Result<(), PlanError> {
    let file = &experiment.file;
    if !(options.scale > 0.0 && options.scale <= MAX_SCALE) {
        return Err(PlanError::Scale(options.scale));
    }
    if options.repetitions.is_some_and(|r| r > MAX_REPETITIONS)
        || file.repetitions > MAX_REPETITIONS
    {
        return Err(PlanError::Repetitions);
    }
    for (field, cpus) in [
        ("placement.gun_cpus", &file.placement.gun_cpus),
        ("placement.target_cpus", &file.placement.target_cpus),
        ("database.cpus", &file.database().cpus),
    ] {
        if let Some(cpus) = cpus {
            cpus.clone()
                .on_this_host()
                .map_err(|error| PlanError::Cpus { field, error })?;
        }
    }
    Ok(())
}

/// How many times each cell runs: `--repetitions`, a gate's most rounds when it is read after
/// every round (the runner stops once it is decided), or the file's. A comparison at a fixed
/// rate needs its fewest rounds; one of searches has its rounds in `[search]`.
fn repetitions(experiment: &Experiment, options: &PlanOptions) -> Result<u32, PlanError> {
    let file = &experiment.file;
    let auto = file.compare.as_ref().and_then(|c| c.auto());
    let repetitions = options
        .repetitions
        .or(auto.map(|a| a.max))
        .unwrap_or(file.repetitions)
        .max(1);
    if file.compare.is_some()
        && (file.search.is_none() || file.has_shares())
        && (repetitions as usize) < analysis::ab::MIN_ROUNDS
    {
        return Err(PlanError::CompareRounds(repetitions));
    }
    if file.compare.is_some() && file.search.is_some() && !file.has_shares() && repetitions > 1 {
        return Err(PlanError::SearchRepetitions(repetitions));
    }
    Ok(repetitions)
}

/// Every setting: the odometer over the axes, the last one turning fastest.
fn settings(axes: &[Axis]) -> Vec<Vec<(String, toml::Value)>> {
    let mut settings: Vec<Vec<(String, toml::Value)>> = vec![Vec::new()];
    for axis in axes {
        settings = settings
            .into_iter()
            .flat_map(|s| {
                axis.values.iter().map(move |v| {
                    let mut s = s.clone();
                    s.push((axis.key.clone(), v.clone()));
                    s
                })
            })
            .collect();
    }
    settings
}

/// `[search]` at `scale`: its step, warm-up, settling bound and budget scaled, each kept above
/// the least it can work with.
fn scaled_search(mut s: crate::file::SearchSpec, scale: f64) -> crate::file::SearchSpec {
    let scaled = |d: Duration, least: Duration| d.mul_f64(scale).max(least);
    s.step = Some(scaled(
        s.step.unwrap_or(Duration::from_secs(10)),
        Duration::from_secs(1),
    ));
    s.warmup = Some(scaled(
        s.warmup.unwrap_or(Duration::from_secs(2)),
        Duration::from_millis(200),
    ));
    // The warm-up's bound: 0 stays 0 (not warmed), and a bound keeps room for the fewest
    // samples judged.
    s.settle = Some(match s.settle.unwrap_or(Duration::from_secs(120)) {
        d if d.is_zero() => d,
        d => scaled(d, Duration::from_secs(5)),
    });
    s.budget = s
        .budget
        .map(|b| scale_duration(b, scale).max(Duration::from_secs(1)));
    s
}

impl PlanOptions {
    /// Whether `--only` selects `cell`: every key given must match; values given for the same
    /// key are alternatives.
    fn selects(&self, cell: &Cell) -> bool {
        let matches = |k: &str, v: &String| match k {
            "target" => &cell.target == v,
            "repetition" => &cell.repetition.to_string() == v,
            _ => cell.setting.iter().any(|(ck, cv)| ck == k && cv == v),
        };
        self.only.iter().all(|(k, _)| {
            self.only
                .iter()
                .filter(|(other, _)| other == k)
                .any(|(_, v)| matches(k, v))
        })
    }
}

/// With `[search] rounds`, the searches of a setting and repetition run as one comparison:
/// from this host's generator, each target sent the same requests at its own origin.
fn interleavable(experiment: &Experiment, cells: &[Cell]) -> Result<(), PlanError> {
    let file = &experiment.file;
    let Some(rounds) = file.search.as_ref().and_then(|s| s.rounds) else {
        return Ok(());
    };
    if !(MIN_ROUNDS..=MAX_ROUNDS).contains(&rounds) {
        return Err(PlanError::Rounds(rounds));
    }
    if file.guns.is_some() {
        return Err(PlanError::RoundsWithGuns);
    }
    for t in &file.targets {
        if let Some(url) = &t.url {
            let rest = url.split_once("://").map_or(url.as_str(), |(_, r)| r);
            if rest
                .find('/')
                .is_some_and(|at| !rest[at..].trim_matches('/').is_empty())
            {
                return Err(PlanError::RoundsPath(t.name.clone(), url.clone()));
            }
        }
    }
    let searches: Vec<&Cell> = cells
        .iter()
        .filter(|c| c.kind == CellKind::Search)
        .collect();
    for (i, a) in searches.iter().enumerate() {
        for b in &searches[i + 1..] {
            if a.setting == b.setting && a.repetition == b.repetition && a.load != b.load {
                return Err(PlanError::RoundsLoads(
                    a.target.clone(),
                    b.target.clone(),
                    a.setting_text(),
                ));
            }
        }
    }
    Ok(())
}

/// The cells run together with `cell`, in `cells`' order: with `[compare]` at a fixed rate (or
/// a share of the searches' capacities), its setting's (every target, every repetition: the
/// rounds); with `[search]` rounds (a `[compare]` of searches too), its setting and
/// repetition's searches (every target); `cell` alone otherwise.
pub fn together<'c>(plan: &Plan, cells: &[&'c Cell], cell: &'c Cell) -> Vec<&'c Cell> {
    if plan.compare.is_some() && cell.kind != CellKind::Search {
        // A comparison: the setting's every target and repetition (its rounds).
        return cells
            .iter()
            .copied()
            .filter(|c| c.setting == cell.setting)
            .collect();
    }
    let interleaved = plan.search.as_ref().is_some_and(|s| s.rounds.is_some());
    if !interleaved || cell.kind != CellKind::Search {
        return vec![cell];
    }
    cells
        .iter()
        .copied()
        .filter(|c| {
            c.kind == CellKind::Search
                && c.setting == cell.setting
                && c.repetition == cell.repetition
        })
        .collect()
}

/// How one step of the schedule runs its cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepKind {
    /// `[compare]` at a fixed rate (or a share of the searches' capacities): a setting's every
    /// target and repetition, as a gate's rounds.
    Rounds,
    /// Searches of one setting and repetition run together, as one comparison (`[search]`
    /// rounds, and a `[compare]` of searches).
    Searches,
    /// One cell on its own.
    One,
}

/// One step of the schedule: the cells run together with a cell ([`together`]), and how.
#[derive(Debug)]
pub struct Step<'c> {
    pub kind: StepKind,
    pub cells: Vec<&'c Cell>,
}

/// The step of the schedule that `cell`, the first of `cells` not yet run, begins.
pub fn step<'c>(plan: &Plan, cells: &[&'c Cell], cell: &'c Cell) -> Step<'c> {
    let together = together(plan, cells, cell);
    let kind = if plan.compare.is_some() && cell.kind != CellKind::Search {
        StepKind::Rounds
    } else if together.len() > 1 || plan.compares_searches() {
        StepKind::Searches
    } else {
        StepKind::One
    };
    Step {
        kind,
        cells: together,
    }
}

/// Ties each share to its searches (the whole matrix's, before `--only` cuts it: a search kept
/// from an earlier run counts) and runs every search first. A share's searches are those of the
/// same target, environment and requests, at the same values of every axis but `rate` and
/// `load` (at 10 connections, the capacity found over 10 connections).
fn shares(mut cells: Vec<Cell>) -> Result<Vec<Cell>, PlanError> {
    /// What a cell's capacity depends on, as one comparable text.
    fn same(c: &Cell) -> String {
        let axes: Vec<&(String, String)> = c
            .setting
            .iter()
            .filter(|(k, _)| k != "rate" && k != "load")
            .collect();
        format!("{}\n{:?}\n{}\n{axes:?}", c.target, c.env, c.load.requests())
    }
    let searched: Vec<(String, String)> = cells
        .iter()
        .filter(|c| c.kind == CellKind::Search)
        .map(|c| (c.key(), same(c)))
        .collect();
    let mut any = false;
    for cell in &mut cells {
        let mine = same(cell);
        if let CellKind::Share { searches } = &mut cell.kind {
            any = true;
            for (key, theirs) in &searched {
                if theirs == &mine && !searches.contains(key) {
                    searches.push(key.clone());
                }
            }
            if searches.is_empty() {
                return Err(PlanError::NoSearchForShare(cell.key()));
            }
        }
    }
    if any {
        // A stable sort: the searches in their order, then the shares in theirs.
        cells.sort_by_key(|c| c.kind != CellKind::Search);
    }
    Ok(cells)
}

/// `d × scale`, or the longest duration where that overflows (a file's "1000000y").
fn scale_duration(d: Duration, scale: f64) -> Duration {
    Duration::try_from_secs_f64(d.as_secs_f64() * scale).unwrap_or(Duration::MAX)
}

fn roll(d: Duration, scale: f64) -> Duration {
    if scale == 1.0 {
        d
    } else {
        scale_duration(d, scale)
            .max(Duration::from_millis(500))
            .min(d)
    }
}

fn cell(
    experiment: &Experiment,
    target: &str,
    setting: &[(String, toml::Value)],
    repetition: u32,
    scale: f64,
) -> Result<Cell, PlanError> {
    let at = at_setting(experiment, target, setting)?;
    let mut load = scaled(&at.load.with(&at.scalars), scale);
    if at.searches {
        load.rate = None;
    }
    fill_parameters(&mut load, &at.parameters);
    let cell = Cell {
        number: 0,
        target: target.to_string(),
        setting: setting
            .iter()
            .map(|(k, v)| (k.clone(), label_value(v)))
            .collect(),
        repetition,
        kind: match (&experiment.file.search, load.share()) {
            (None, _) => CellKind::Fixed,
            (Some(_), None) => CellKind::Search,
            (Some(_), Some(_)) => CellKind::Share {
                searches: Vec::new(),
            },
        },
        load,
        env: at.env,
    };
    check_cell(&cell)?;
    Ok(cell)
}

/// `target`'s load and environment at `setting`: the file's load, the target's own, then each
/// axis's value.
fn at_setting(
    experiment: &Experiment,
    target: &str,
    setting: &[(String, toml::Value)],
) -> Result<At, PlanError> {
    let file = &experiment.file;
    let spec = file
        .targets
        .iter()
        .find(|t| t.name == target)
        .ok_or_else(|| PlanError::NoTarget(target.to_string()))?;
    let mut load = file.load.clone();
    if let Some(own) = &spec.load {
        load = load.with(own);
    }
    let mut at = At {
        load,
        env: spec.env.clone(),
        scalars: LoadSpec::default(),
        searches: false,
        parameters: Vec::new(),
    };
    for (key, value) in setting {
        at.apply(file, key, value)?;
    }
    Ok(at)
}

/// Puts each parameter's value for its `{axis}` in the load's paths and bodies.
fn fill_parameters(load: &mut LoadSpec, parameters: &[(String, String)]) {
    for (placeholder, value) in parameters {
        let put = |text: &mut String| *text = text.replace(placeholder, value);
        load.path.iter_mut().for_each(put);
        load.body.iter_mut().for_each(put);
        for entry in load.mix.iter_mut().flatten() {
            put(&mut entry.path);
            entry.body.iter_mut().for_each(put);
        }
    }
}

/// A cell's load checked for what it runs (a search, a fixed load), and its SLO parsed.
fn check_cell(cell: &Cell) -> Result<(), PlanError> {
    let checked = match (relative_path(&cell.load), &cell.kind) {
        (Some(path), _) => Err(LoadError::RelativePath(redact::printable(path))),
        (None, CellKind::Search) => check_search_load(&cell.load),
        (None, CellKind::Fixed) if cell.load.share().is_some() => {
            Err(LoadError::ShareWithoutSearch)
        }
        (None, _) => check_load(&cell.load),
    };
    checked.map_err(|why| PlanError::Cell {
        cell: cell.key(),
        why,
    })?;
    cell.slo().map_err(|why| PlanError::Slo {
        cell: cell.key(),
        why,
    })?;
    Ok(())
}

/// A cell's load as its setting's values make it: the load (a named one), the scalars set by
/// axes, its environment, whether it is the cell that searches, and the placeholders to fill.
struct At {
    load: LoadSpec,
    env: std::collections::BTreeMap<String, String>,
    scalars: LoadSpec,
    searches: bool,
    /// `{axis}` and its value, for the paths and bodies.
    parameters: Vec<(String, String)>,
}

impl At {
    /// One axis's `value` at this setting.
    fn apply(
        &mut self,
        file: &crate::file::ExperimentFile,
        key: &str,
        value: &toml::Value,
    ) -> Result<(), PlanError> {
        let bad = |what: &'static str| PlanError::AxisValue {
            key: key.to_string(),
            value: value.to_string(),
            what,
        };
        let scalars = &mut self.scalars;
        match key {
            "load" => {
                let name = value.as_str().unwrap_or_default();
                if let Some(named) = file.loads.get(name) {
                    self.load = self.load.with(named);
                }
            }
            "rate" => match value.as_str() {
                Some(SEARCH_RATE) if file.search.is_some() => self.searches = true,
                Some(text) => {
                    let rate = text.parse::<Rate>().map_err(|_| {
                        bad("a rate: a number, a share of the capacity (\"80%\"), or \"search\" with [search]")
                    })?;
                    scalars.rate = Some(rate);
                }
                None => scalars.rate = Some(Rate::PerSecond(number(value).ok_or(bad("a number"))?)),
            },
            "connections" => scalars.connections = Some(count(value).ok_or(bad("a count"))?),
            "requests" => scalars.requests = Some(count(value).ok_or(bad("a count"))?),
            "duration" => {
                let text = value.as_str().ok_or(bad("a duration such as \"30s\""))?;
                scalars.duration =
                    Some(humantime::parse_duration(text).map_err(|_| bad("a duration"))?);
            }
            "path" => scalars.path = Some(value.as_str().ok_or(bad("a path"))?.to_string()),
            "method" => scalars.method = Some(value.as_str().ok_or(bad("a method"))?.to_string()),
            "steps" => {
                let steps = value.as_array().ok_or(bad("a list of rates"))?;
                scalars.steps = Some(
                    steps
                        .iter()
                        .map(number)
                        .collect::<Option<Vec<f64>>>()
                        .ok_or(bad("a list of rates"))?,
                );
            }
            other => match other.strip_prefix("env.") {
                Some(var) => {
                    self.env.insert(var.to_string(), label_value(value));
                }
                None => self
                    .parameters
                    .push((format!("{{{other}}}"), label_value(value))),
            },
        }
        Ok(())
    }
}

fn number(v: &toml::Value) -> Option<f64> {
    v.as_float().or_else(|| v.as_integer().map(|i| i as f64))
}

fn count(v: &toml::Value) -> Option<u64> {
    v.as_integer().and_then(|i| u64::try_from(i).ok())
}

/// Rates, durations and request counts × `scale` (a rate at least 1/s, a duration at least
/// 1 s, a count at least 1). A share of a capacity stays: the capacity is measured.
fn scaled(load: &LoadSpec, scale: f64) -> LoadSpec {
    if scale == 1.0 {
        return load.clone();
    }
    let time =
        |d: Option<Duration>| d.map(|d| scale_duration(d, scale).max(Duration::from_secs(1)));
    LoadSpec {
        rate: load.rate.map(|r| match r {
            Rate::PerSecond(r) => Rate::PerSecond((r * scale).round().max(1.0)),
            share => share,
        }),
        steps: load
            .steps
            .as_ref()
            .map(|s| s.iter().map(|r| (r * scale).round().max(1.0)).collect()),
        step_duration: time(load.step_duration),
        duration: time(load.duration),
        requests: load
            .requests
            .map(|n| ((n as f64 * scale).round() as u64).max(1)),
        ..load.clone()
    }
}

/// The load's first path (its own, or a mix entry's) that does not start with `/`: the
/// request's URL is the target's base and the path, so `path = "1/"` after port 808 would go
/// to port 8081, and `@evil.example/` to another host, the headers with it.
fn relative_path(load: &LoadSpec) -> Option<&str> {
    load.path
        .iter()
        .map(String::as_str)
        .chain(load.mix.iter().flatten().map(|m| m.path.as_str()))
        .find(|p| !p.starts_with('/'))
}

/// A search's load: the requests, and no rate (the search picks them).
fn check_search_load(load: &LoadSpec) -> Result<(), LoadError> {
    if load.path.is_none() && load.mix.is_none() {
        return Err(LoadError::NoPath);
    }
    if load.rate.is_some() || load.steps.is_some() || load.mode == Some(Mode::Closed) {
        return Err(LoadError::RateInSearch);
    }
    Ok(())
}

fn check_load(load: &LoadSpec) -> Result<(), LoadError> {
    if load.path.is_none() && load.mix.is_none() {
        return Err(LoadError::NoPath);
    }
    let poisson = load.arrival == Some(store::vocabulary::ArrivalProcess::Poisson);
    if poisson && load.batch.is_some_and(|b| !b.is_zero()) {
        return Err(LoadError::PoissonBatched);
    }
    match load.mode() {
        Mode::Open => match (&load.rate, &load.steps) {
            (Some(Rate::Share(_)), None) => {
                if load.duration.is_none() {
                    return Err(LoadError::ShareWithoutDuration);
                }
            }
            (Some(Rate::PerSecond(r)), None) if *r > 0.0 => {
                if load.duration.is_none() && load.requests.is_none() {
                    return Err(LoadError::OpenWithoutBound);
                }
            }
            (None, Some(steps)) if !steps.is_empty() => {
                if load.step_duration.is_none() {
                    return Err(LoadError::StepsWithoutDuration);
                }
            }
            (Some(_), Some(_)) => return Err(LoadError::RateAndSteps),
            _ => return Err(LoadError::NoRate),
        },
        Mode::Closed => {
            if load.batch.is_some() {
                return Err(LoadError::BatchInClosedLoop);
            }
            if load.arrival.is_some() {
                return Err(LoadError::ArrivalInClosedLoop);
            }
            if load.connections.unwrap_or(0) == 0 {
                return Err(LoadError::NoConnections);
            }
            if load.duration.is_none() {
                return Err(LoadError::ClosedWithoutDuration);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn experiment(load: &str) -> Experiment {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("e.toml");
        std::fs::write(
            &path,
            format!(
                "name = \"e\"\nquestion = \"q?\"\n[placement]\ngun_cpus = \"0\"\n[[target]]\nname = \"go\"\n[load]\npath = \"/now\"\nduration = \"30s\"\n{load}\n"
            ),
        )
        .unwrap();
        Experiment::read(&path).unwrap()
    }

    const SEARCH: &str = "[search]\nslo = [\"p99<=10ms\"]\n";

    #[test]
    fn a_comparisons_rounds_are_its_settings_every_target_and_repetition() {
        let e = experiment(
            "rate = 500\n[[target]]\nname = \"pr\"\nrun = \"go\"\n[compare]\nbaseline = \"go\"\ncandidate = \"pr\"\n[matrix]\npath = [\"/a\", \"/b\"]\n",
        );
        let mut options = PlanOptions {
            repetitions: Some(3),
            ..PlanOptions::default()
        };
        let p = plan(&e, &options).unwrap();
        let cells: Vec<&Cell> = p.cells.iter().collect();
        let together: Vec<(String, u32)> = together(&p, &cells, cells[0])
            .iter()
            .map(|c| (c.key(), c.repetition))
            .collect();
        assert_eq!(together.len(), 6, "{together:?}");
        assert!(
            together.iter().all(|(k, _)| k.ends_with("path=/a")),
            "{together:?}"
        );
        options.repetitions = Some(2);
        assert_eq!(plan(&e, &options).unwrap_err(), PlanError::CompareRounds(2));
    }

    #[test]
    fn a_comparison_of_searches_runs_them_once_then_its_share_in_repetitions_rounds() {
        let file = |rates: &str| {
            experiment(&format!(
                "[[target]]\nname = \"pr\"\nrun = \"go\"\n[compare]\nbaseline = \"go\"\ncandidate = \"pr\"\n{SEARCH}rounds = 12\n[matrix]\nrate = [{rates}]\n"
            ))
        };
        let options = PlanOptions {
            repetitions: Some(4),
            ..PlanOptions::default()
        };
        let p = plan(&file("\"search\", \"60%\""), &options).unwrap();
        let cells: Vec<&Cell> = p.cells.iter().collect();
        let keys = |of: &[&Cell]| -> Vec<String> {
            of.iter()
                .map(|c| format!("{} #{}", c.key(), c.repetition))
                .collect()
        };
        // The searches first, once: one comparison of both builds in [search]'s rounds.
        assert_eq!(
            keys(&together(&p, &cells, cells[0])),
            ["target=go rate=search #1", "target=pr rate=search #1"]
        );
        // Then the share: every build and repetition, the rounds of one comparison.
        let share = together(&p, &cells, cells[2]);
        assert_eq!(share.len(), 8, "{:?}", keys(&share));
        assert!(share
            .iter()
            .all(|c| matches!(c.kind, CellKind::Share { .. })));
        assert_eq!(p.cells.len(), 10);
        // Without a share, repetitions would be searches run again: refused, saying why.
        let err = plan(&file("\"search\""), &options).unwrap_err();
        assert_eq!(err, PlanError::SearchRepetitions(4));
        assert!(err.to_string().contains("drop repetitions, or add a share"));
        let once = PlanOptions {
            repetitions: Some(1),
            ..PlanOptions::default()
        };
        assert_eq!(plan(&file("\"search\""), &once).unwrap().cells.len(), 2);
        // A share's rounds are as many as any comparison at a fixed rate needs.
        assert_eq!(
            plan(&file("\"search\", \"60%\""), &once).unwrap_err(),
            PlanError::CompareRounds(1)
        );
    }

    #[test]
    fn rounds_search_every_target_of_a_setting_together_with_one_load() {
        let file = |rounds: u32, node: &str| {
            experiment(&format!(
                "[search]\nslo = [\"p99<=10ms\"]\nrounds = {rounds}\n[[target]]\nname = \"node\"\n{node}[matrix]\nconnections = [10, 100]\n"
            ))
        };
        let p = plan(&file(12, ""), &PlanOptions::default()).unwrap();
        let cells: Vec<&Cell> = p.cells.iter().collect();
        let together: Vec<String> = together(&p, &cells, cells[0])
            .iter()
            .map(|c| c.key())
            .collect();
        assert_eq!(
            together,
            ["target=go connections=10", "target=node connections=10"]
        );
        // The time a comparison takes: a step of each target per round.
        assert_eq!(
            p.cell_load_time(cells[0]),
            Duration::from_secs(14) * 12,
            "{:?}",
            p.search
        );
        assert_eq!(
            plan(&file(4, ""), &PlanOptions::default()).unwrap_err(),
            PlanError::Rounds(4)
        );
        let other = "[target.load]\npath = \"/other\"\n";
        let err = plan(&file(12, other), &PlanOptions::default()).unwrap_err();
        assert!(
            err.to_string()
                .contains("go and node have different loads at connections=10"),
            "{err}"
        );
    }

    #[test]
    fn a_searchs_budget_scales_as_its_steps_and_bounds_the_cells_estimate() {
        let e = experiment(
            "[search]\nslo = [\"p99<=10ms\"]\nstep = \"10s\"\nbudget = \"40s\"\n[[target]]\nname = \"node\"\n[matrix]\nrate = [\"search\"]\n",
        );
        let half = PlanOptions {
            scale: 0.5,
            ..Default::default()
        };
        let p = plan(&e, &half).unwrap();
        let search = p.search.as_ref().unwrap();
        assert_eq!(search.budget, Some(Duration::from_secs(20)));
        // Steps of 5 s + 1 s of warm-up + 2 s besides: eighteen would be 144 s, the budget
        // ends the search at its first step begun past 20 s.
        assert_eq!(p.cell_load_time(&p.cells[0]), Duration::from_secs(28));
        let p = plan(&e, &PlanOptions::default()).unwrap();
        assert_eq!(p.cell_load_time(&p.cells[0]), Duration::from_secs(54));
        // Without a budget, 18 steps of 14 s: the four searches of 10 s steps measured took
        // 3.6-4.3 minutes.
        let e = experiment(
            "[search]\nslo = [\"p99<=10ms\"]\n[[target]]\nname = \"node\"\n[matrix]\nrate = [\"search\"]\n",
        );
        let p = plan(&e, &PlanOptions::default()).unwrap();
        assert_eq!(p.cell_load_time(&p.cells[0]), Duration::from_secs(18 * 14));
    }

    #[test]
    fn a_cells_time_saturates_instead_of_overflowing() {
        // Each at most what a duration holds, their sum past it: the runner's estimate of
        // the time left once panicked on such a file.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("e.toml");
        std::fs::write(
            &path,
            "name = \"e\"\nquestion = \"q?\"\nwarmup = \"500000000000y\"\ncooldown = \"500000000000y\"\n[[target]]\nname = \"go\"\n[load]\npath = \"/\"\nrate = 10\nduration = \"500000000000y\"\n",
        )
        .unwrap();
        let e = Experiment::read(&path).unwrap();
        let p = plan(&e, &PlanOptions::default()).unwrap();
        assert_eq!(p.cell_time(&p.cells[0]), Duration::MAX);
        assert_eq!(p.estimate(), Duration::MAX);
    }

    #[test]
    fn a_share_of_a_figure_for_shorter_windows_says_what_it_does_not_promise() {
        // Runs of 30 s at 80 % of a C_0.5 of 10 s windows: one line, naming what to search for.
        let e = experiment(&format!(
            "{SEARCH}[[target]]\nname = \"node\"\n[matrix]\nrate = [\"search\", \"80%\"]\n"
        ));
        let p = plan(&e, &PlanOptions::default()).unwrap();
        assert_eq!(p.promises.len(), 1, "{:?}", p.promises);
        let line = &p.promises[0];
        assert!(
            line.starts_with("80 % of C_0.5 (windows of 10s): at C_0.5 one window of 10s meets the SLO one time in two")
                && line.contains("a run of 30s")
                && line.ends_with("[search] step = \"30s\" and p = 0.9"),
            "{line}"
        );
        // Searched for as it says: nothing to say.
        let e = experiment(
            "[search]\nslo = [\"p99<=10ms\"]\nstep = \"30s\"\np = 0.9\n[[target]]\nname = \"node\"\n[matrix]\nrate = [\"search\", \"80%\"]\n",
        );
        let p = plan(&e, &PlanOptions::default()).unwrap();
        assert!(p.promises.is_empty(), "{:?}", p.promises);
    }

    #[test]
    fn a_share_of_capacity_runs_after_every_search_at_an_unscaled_share() {
        let e = experiment(&format!(
            "batch = \"1ms\"\n{SEARCH}[[target]]\nname = \"node\"\n[matrix]\nrate = [\"search\", \"80%\"]\nconnections = [10, 100]\n"
        ));
        let options = PlanOptions {
            scale: 0.5,
            repetitions: Some(2),
            ..Default::default()
        };
        let p = plan(&e, &options).unwrap();
        let kinds: Vec<String> = p
            .cells
            .iter()
            .map(|c| format!("{} #{}", c.key(), c.repetition))
            .collect();
        // Every search of both repetitions first, each repetition in its own order.
        assert_eq!(
            kinds,
            [
                "target=go rate=search connections=10 #1",
                "target=node rate=search connections=10 #1",
                "target=go rate=search connections=100 #1",
                "target=node rate=search connections=100 #1",
                "target=node rate=search connections=100 #2",
                "target=go rate=search connections=100 #2",
                "target=node rate=search connections=10 #2",
                "target=go rate=search connections=10 #2",
                "target=go rate=80% connections=10 #1",
                "target=node rate=80% connections=10 #1",
                "target=go rate=80% connections=100 #1",
                "target=node rate=80% connections=100 #1",
                "target=node rate=80% connections=100 #2",
                "target=go rate=80% connections=100 #2",
                "target=node rate=80% connections=10 #2",
                "target=go rate=80% connections=10 #2",
            ]
        );
        let share = &p.cells[8];
        assert_eq!(
            share.kind,
            CellKind::Share {
                searches: vec!["target=go rate=search connections=10".into()]
            },
            "the capacity found over the same connections"
        );
        assert_eq!(share.load.share(), Some(0.8), "a share is not scaled");
        assert_eq!(share.load.duration, Some(Duration::from_secs(15)));
        assert_eq!(p.searched.len(), 2);
        // --only a share still finds its searches in the whole matrix.
        let only = plan(
            &e,
            &PlanOptions {
                only: vec![("rate".into(), "80%".into())],
                ..Default::default()
            },
        )
        .unwrap();
        assert!(only
            .cells
            .iter()
            .all(|c| matches!(c.kind, CellKind::Share { .. })));
        // Two values of one key are either; keys together are both.
        let only = |pairs: &[(&str, &str)]| {
            plan(
                &e,
                &PlanOptions {
                    only: pairs
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                    repetitions: Some(1),
                    ..Default::default()
                },
            )
            .map(|p| p.cells.len())
        };
        let go = only(&[("target", "go")]).unwrap();
        let node = only(&[("target", "node")]).unwrap();
        assert_eq!(
            only(&[("target", "go"), ("target", "node")]).unwrap(),
            go + node
        );
        let go_share = only(&[("target", "go"), ("rate", "80%")]).unwrap();
        assert!(go_share > 0 && go_share < go);
    }

    #[test]
    fn a_matrix_of_too_many_cells_is_refused_before_it_is_built() {
        // 100^4 settings: counted, not built (building them would take gigabytes).
        let values: Vec<String> = (0..100).map(|i| i.to_string()).collect();
        let list = values.join(", ");
        let e = experiment(&format!(
            "rate = 100\nbody = \"{{a}}{{b}}{{c}}{{d}}\"\n[matrix]\na = [{list}]\nb = [{list}]\nc = [{list}]\nd = [{list}]\n"
        ));
        let refused = plan(&e, &PlanOptions::default());
        assert!(
            matches!(refused, Err(PlanError::TooManyCells(100_000_000))),
            "{refused:?}"
        );
    }

    #[test]
    fn a_share_needs_a_search_of_the_same_requests() {
        let without = plan(&experiment("rate = \"80%\""), &PlanOptions::default());
        assert!(matches!(
            without,
            Err(PlanError::Cell {
                why: LoadError::ShareWithoutSearch,
                ..
            })
        ));
        let other = plan(
            &experiment(&format!(
                "{SEARCH}[loads.search]\npath = \"/users\"\n[loads.near]\nrate = \"80%\"\n[matrix]\nload = [\"search\", \"near\"]\n"
            )),
            &PlanOptions::default(),
        );
        assert_eq!(
            other.err(),
            Some(PlanError::NoSearchForShare("target=go load=near".into()))
        );
        let error = PlanError::NoSearchForShare("target=go load=near".into()).to_string();
        assert!(error.contains("add one whose load has no rate"), "{error}");
    }

    #[test]
    fn rates_read_as_requests_a_second_or_shares() {
        assert_eq!("80%".parse::<Rate>(), Ok(Rate::Share(0.8)));
        assert_eq!(" 2000 ".parse::<Rate>(), Ok(Rate::PerSecond(2000.0)));
        assert_eq!(Rate::Share(0.57).to_string(), "57%");
        assert_eq!(Rate::Share(0.125).to_string(), "12.5%");
        for bad in ["0%", "-5%", "600%", "fast", "80 %%", "inf"] {
            let why = bad.parse::<Rate>().unwrap_err().to_string();
            assert!(why.contains("write e.g. 2000 or \"80%\""), "{bad}: {why}");
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("e.toml");
        std::fs::write(
            &path,
            format!("name = \"e\"\nquestion = \"q?\"\n[[target]]\nname = \"go\"\n[load]\npath = \"/\"\n{SEARCH}[matrix]\nrate = [\"search\", 2000]\n"),
        )
        .unwrap();
        let error = Experiment::read(&path).err().unwrap().to_string();
        assert!(error.contains("the axis may hold \"search\""), "{error}");
    }

    #[test]
    fn the_plan_says_which_rates_the_generator_cannot_keep() {
        let paced = plan(&experiment("rate = 40000"), &PlanOptions::default()).unwrap();
        assert_eq!(paced.warnings.len(), 1, "{:?}", paced.warnings);
        assert!(
            paced.warnings[0].contains("needs about 1.2 of the generator's 1 CPU")
                && paced.warnings[0].contains("batch = \"1ms\""),
            "{:?}",
            paced.warnings
        );
        let batched = plan(
            &experiment("rate = 40000\nbatch = \"1ms\""),
            &PlanOptions::default(),
        )
        .unwrap();
        assert!(batched.warnings.is_empty(), "{:?}", batched.warnings);
        let closed = plan(
            &experiment("mode = \"closed\"\nconnections = 1000"),
            &PlanOptions::default(),
        )
        .unwrap();
        assert!(closed.warnings.is_empty());
        let bad = plan(
            &experiment("mode = \"closed\"\nconnections = 10\nbatch = \"1ms\""),
            &PlanOptions::default(),
        );
        assert!(matches!(
            bad,
            Err(PlanError::Cell {
                why: LoadError::BatchInClosedLoop,
                ..
            })
        ));
        let bad = plan(
            &experiment("rate = 1000\narrival = \"poisson\"\nbatch = \"1ms\""),
            &PlanOptions::default(),
        );
        assert!(matches!(
            bad,
            Err(PlanError::Cell {
                why: LoadError::PoissonBatched,
                ..
            })
        ));
        let bad = plan(
            &experiment("mode = \"closed\"\nconnections = 10\narrival = \"poisson\""),
            &PlanOptions::default(),
        );
        assert!(matches!(
            bad,
            Err(PlanError::Cell {
                why: LoadError::ArrivalInClosedLoop,
                ..
            })
        ));
    }
}
