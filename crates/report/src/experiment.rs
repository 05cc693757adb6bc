//! An experiment's page: its cells (a target × a setting), each over its repetitions, the
//! figures that answer its question with their spread, the charts across settings and per
//! setting, and one computed sentence per setting.
//!
//! The runs are the experiment's measured runs (label `phase=measure`) of the file and scale it
//! last ran at, in its latest sitting (labels `file`, `scale` and `sitting`: `ExperimentRecord::
//! shows`); warm-ups, earlier sittings and older files' runs are left out.

use analysis::ab::functions::percent;
use analysis::saturation::Finding;
use std::collections::BTreeMap;
use std::sync::Arc;
use store::vocabulary::{LimitedBy, Phase};

use store::experiment::ExperimentRecord;
use store::run::RunStatus;

use crate::charts::Chart;
use crate::figures::RunFigures;
/// A rate with thousands separated, as every page writes one: 12,200.
pub use crate::model::number::thousands;
use crate::model::{color, Line, Rgb, TimeChart, XAxis, XyChart};
use crate::plot::PlotError;

/// A setting: (axis, value) for every axis, in axis order.
pub type Setting = Vec<(String, String)>;

/// One target at one setting, over its repetitions.
#[derive(Debug, Clone)]
pub struct CellFigures {
    pub target: String,
    pub setting: Setting,
    /// The repetitions that completed.
    pub runs: Vec<Arc<RunFigures>>,
    /// Those that failed or did not finish: (run, why).
    pub failed: Vec<(Arc<RunFigures>, String)>,
}

/// A group of processes beside a target, over a cell's repetitions.
#[derive(Debug, Clone)]
pub struct Group {
    /// As the user knows it (`PostgreSQL`, a `[[watch]]` name).
    pub name: String,
    /// Its mean CPU over the load, % of one core.
    pub cpu: Option<Spread>,
    /// Its memory at its peak, bytes.
    pub memory: Option<Spread>,
    pub counted: Option<crate::figures::Counted>,
}

/// A figure over a cell's repetitions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub n: usize,
}

impl Spread {
    fn of(mut values: Vec<f64>) -> Option<Spread> {
        values.retain(|v| v.is_finite());
        if values.is_empty() {
            return None;
        }
        let median = analysis::capacity::median(&values)?;
        values.sort_by(f64::total_cmp);
        let n = values.len();
        Some(Spread {
            median,
            min: values[0],
            max: values[n - 1],
            n,
        })
    }

    /// Whether two spreads do not overlap.
    pub fn apart(&self, other: &Spread) -> bool {
        self.max < other.min || other.max < self.min
    }
}

/// The figures a cell is judged by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Successful responses per second.
    Throughput,
    P50,
    P99,
    Max,
    Mean,
    Stdev,
    /// Share of requests that failed, 0–1.
    ErrorRate,
    /// The target's mean CPU over the attack (%, 100 = one core).
    Cpu,
    PeakRss,
    PeakThreads,
    PeakFds,
    /// Seconds per 1,000 requests (the 003 slides' figure).
    PerThousand,
}

impl Metric {
    /// A latency: its chart across settings may be drawn on a log scale.
    pub fn is_latency(self) -> bool {
        matches!(
            self,
            Metric::P50 | Metric::P99 | Metric::Max | Metric::Mean | Metric::Stdev
        )
    }

    /// The value for one run (latencies in ms).
    pub fn of(self, r: &RunFigures) -> Option<f64> {
        let s = &r.summary;
        let ms = |ns: u64| ns as f64 / 1e6;
        let c = &s.latency.corrected;
        let probe = r.target_probe();
        match self {
            Metric::Throughput => Some(s.requests.throughput),
            Metric::P50 => (c.count > 0).then(|| ms(c.p50_ns)),
            Metric::P99 => (c.count > 0).then(|| ms(c.p99_ns)),
            Metric::Max => (c.count > 0).then(|| ms(c.max_ns)),
            Metric::Mean => (c.count > 0).then(|| ms(c.mean_ns)),
            Metric::Stdev => (c.count > 0).then(|| ms(c.stdev_ns)),
            Metric::ErrorRate => (s.requests.total > 0).then_some(1.0 - s.requests.success_ratio),
            Metric::Cpu => probe.and_then(|p| p.mean_cpu_in(r.attack)),
            Metric::PeakRss => r.peak_rss_bytes().map(|b| b as f64),
            Metric::PeakThreads => probe.and_then(|p| p.peak_threads()),
            Metric::PeakFds => r.peak_fds().map(|f| f as f64),
            Metric::PerThousand => (s.requests.total > 0)
                .then(|| s.duration.total_s / s.requests.total as f64 * 1000.0),
        }
    }

    /// Its name and unit, for tables and axes.
    pub fn title(self) -> &'static str {
        match self {
            Metric::Throughput => "throughput (req/s)",
            Metric::P50 => "p50 latency (ms)",
            Metric::P99 => "p99 latency (ms)",
            Metric::Max => "max latency (ms)",
            Metric::Mean => "mean latency (ms)",
            Metric::Stdev => "latency std. dev. (ms)",
            Metric::ErrorRate => "errors (%)",
            Metric::Cpu => "target CPU, mean (%)",
            Metric::PeakRss => "target peak memory (MiB)",
            Metric::PeakThreads => "target peak threads",
            Metric::PeakFds => "target peak open FDs",
            Metric::PerThousand => "time per 1,000 requests (s)",
        }
    }

    /// The value as drawn and tabled (errors as a percentage, RSS in MiB).
    pub fn shown(self, v: f64) -> f64 {
        match self {
            Metric::ErrorRate => v * 100.0,
            Metric::PeakRss => v / 1048576.0,
            _ => v,
        }
    }

    /// Whether less is better.
    pub fn lower_is_better(self) -> bool {
        !matches!(self, Metric::Throughput)
    }
}

impl CellFigures {
    /// A figure's median and spread over the completed repetitions.
    pub fn spread(&self, m: Metric) -> Option<Spread> {
        Spread::of(self.runs.iter().filter_map(|r| m.of(r)).collect())
    }

    /// What ran beside the target (its database, each watched group), each a group of its
    /// own, never in the target's figures: its name, its mean CPU over the load (%, 100 = one
    /// core) and its memory at its peak, each over the repetitions, and how that memory was
    /// counted.
    pub fn beside(&self) -> Vec<Group> {
        let mut names: Vec<String> = Vec::new();
        for r in &self.runs {
            for p in r.beside() {
                if !names.contains(&p.watching()) {
                    names.push(p.watching());
                }
            }
        }
        names
            .into_iter()
            .map(|name| {
                // (run, its probe of this group), for every run that watched it.
                let watched: Vec<(&Arc<RunFigures>, &crate::figures::ProbeFigures)> = self
                    .runs
                    .iter()
                    .filter_map(|r| Some((r, r.beside().find(|p| p.watching() == name)?)))
                    .collect();
                let probes: Vec<&crate::figures::ProbeFigures> =
                    watched.iter().map(|(_, p)| *p).collect();
                let cpu = Spread::of(
                    watched
                        .iter()
                        .filter_map(|(r, p)| p.mean_cpu_in(r.attack))
                        .collect(),
                );
                let memory = Spread::of(
                    probes
                        .iter()
                        .filter_map(|p| p.memory.map(|m| m.bytes as f64))
                        .collect(),
                );
                let counted = probes
                    .iter()
                    .rev()
                    .find_map(|p| p.memory.map(|m| m.counted));
                Group {
                    name,
                    cpu,
                    memory,
                    counted,
                }
            })
            .collect()
    }

    /// The repetition whose p99 is the median one: the run drawn for the cell.
    pub fn representative(&self) -> Option<&Arc<RunFigures>> {
        let mut by_p99: Vec<&Arc<RunFigures>> = self.runs.iter().collect();
        by_p99.sort_by(|a, b| {
            let (a, b) = (Metric::P99.of(a), Metric::P99.of(b));
            a.unwrap_or(f64::MAX).total_cmp(&b.unwrap_or(f64::MAX))
        });
        by_p99.get(by_p99.len().saturating_sub(1) / 2).copied()
    }

    /// The SLO the file held this cell's measured runs to (its load's `slo`, kept as a label).
    pub fn own_slo(&self) -> Option<analysis::capacity::Slo> {
        self.runs
            .iter()
            .find_map(|r| r.labels.get(store::vocabulary::label::SLO)?.parse().ok())
    }

    /// "met its SLO in its run: p99 2.93ms <= 10.0ms, cpu 17.1 % <= 70.0 %" (the median
    /// repetition's figures), when every repetition's run met `slo` on its whole-run figures
    /// and the server's from its probe; `None` otherwise (what it missed is said by
    /// [`CellFigures::why_fell`]).
    pub fn slo_met(&self, slo: &analysis::capacity::Slo) -> Option<String> {
        let verdicts: Vec<analysis::capacity::slo::RunVerdict> = self
            .runs
            .iter()
            .map(|r| {
                let server = r.system.as_ref().map(|s| &s.target);
                analysis::capacity::judge::verdict(slo, &r.summary, server)
            })
            .collect();
        let all_met = !verdicts.is_empty()
            && self.failed.is_empty()
            && verdicts
                .iter()
                .all(|v| v.outcome == analysis::capacity::slo::Outcome::Met);
        if !all_met {
            return None;
        }
        let median = self
            .representative()
            .and_then(|m| self.runs.iter().position(|r| Arc::ptr_eq(r, m)))
            .and_then(|i| verdicts.get(i))?;
        let figures: Vec<String> = median.terms.iter().map(|m| m.text()).collect();
        Some(format!(
            "met its SLO in {}: {}",
            if verdicts.len() > 1 {
                format!("all {} repetitions", verdicts.len())
            } else {
                "its run".to_string()
            },
            figures.join(", ")
        ))
    }

    /// Why the target did not hold up here, if it did not, as one sentence (see
    /// [`CellFigures::why_fell`]).
    pub fn fell_over(&self, slo: Option<&analysis::capacity::Slo>) -> Option<String> {
        self.why_fell(slo).map(|f| f.text())
    }

    /// Why the target did not hold up here, if it did not: what limited the server first (the
    /// verdict of its probes over each repetition's load, the one most repetitions share), then
    /// what showed it: failed repetitions, errors, the file's SLO broken (the median over
    /// repetitions beyond a term's bound), the offered rate not served. When the generator was
    /// the limit, that alone: such a cell says nothing of the server. Late sends the server is
    /// not to blame for are a [`CellFigures::note`], not a failure.
    pub fn why_fell(&self, slo: Option<&analysis::capacity::Slo>) -> Option<Fell> {
        let mut symptoms = Vec::new();
        if !self.failed.is_empty() {
            symptoms.push(format!(
                "{} of {} repetitions failed ({})",
                self.failed.len(),
                self.failed.len() + self.runs.len(),
                self.failed[0].1
            ));
        }
        let errors = self.spread(Metric::ErrorRate).filter(|e| e.median > 0.001);
        let mut server: Vec<String> = errors.map(|e| self.errors_text(e)).into_iter().collect();
        let (broken, broke) = self.slo_broken(slo, errors.is_some());
        server.extend(broken);
        server.extend(self.unserved());
        if symptoms.is_empty() && server.is_empty() {
            return None;
        }
        // The repetitions that did not hold up, and what limited each.
        let struggling: Vec<&Arc<RunFigures>> = self
            .runs
            .iter()
            .zip(&broke)
            .filter(|(r, broke)| {
                **broke
                    || r.struggled()
                    || (errors.is_some() && Metric::ErrorRate.of(r).is_some_and(|e| e > 0.001))
            })
            .map(|(r, _)| r)
            .collect();
        let cause = self.cause(&struggling);
        // Repetitions that failed outright say why themselves: a limit is sought only where
        // the server was loaded past what it held.
        let overloaded = !server.is_empty() || !struggling.is_empty();
        if !matches!(cause, Some(Cause::Generator(_))) {
            symptoms.extend(server);
        }
        Some(Fell {
            cause: cause.filter(|_| overloaded),
            overloaded,
            measured: self.runs.iter().any(|r| r.system.is_some()),
            symptoms,
        })
    }

    /// "2.1 % of requests failed (timeout 40, connect 2)": the median error rate, and the
    /// errors of every repetition by kind.
    fn errors_text(&self, e: Spread) -> String {
        let kinds: BTreeMap<&str, u64> = self
            .runs
            .iter()
            .flat_map(|r| r.summary.errors.iter().map(|(k, v)| (k.as_str(), *v)))
            .fold(BTreeMap::new(), |mut m, (k, v)| {
                *m.entry(k).or_default() += v;
                m
            });
        let kinds: Vec<String> = kinds.iter().map(|(k, v)| format!("{k} {v}")).collect();
        format!(
            "{} of requests failed ({})",
            percent(e.median),
            kinds.join(", ")
        )
    }

    /// Each term of the SLO the repetitions' median broke (errors left out where `errors_said`
    /// already), and which repetitions broke any term.
    fn slo_broken(
        &self,
        slo: Option<&analysis::capacity::Slo>,
        errors_said: bool,
    ) -> (Vec<String>, Vec<bool>) {
        let mut said = Vec::new();
        let mut broke = vec![false; self.runs.len()];
        // A term's figure of a run: from its requests, or the server's from its probe.
        let value = |term: &analysis::capacity::Term, r: &RunFigures| {
            if term.figure.is_server() {
                r.system.as_ref().and_then(|s| term.of_server(&s.target))
            } else {
                term.of(&r.summary)
            }
        };
        for term in slo.iter().flat_map(|s| &s.terms) {
            for (i, r) in self.runs.iter().enumerate() {
                broke[i] |= value(term, r).is_some_and(|v| v > term.bound);
            }
            if errors_said && term.figure == analysis::capacity::slo::Figure::Errors {
                continue;
            }
            let broken = Spread::of(self.runs.iter().filter_map(|r| value(term, r)).collect())
                .filter(|v| v.median > term.bound);
            if let Some(v) = broken {
                said.push(format!(
                    "{} {} broke the SLO's {term}{}",
                    term.figure,
                    term.value_text(v.median),
                    if v.n > 1 {
                        format!(" (the median of {} repetitions)", v.n)
                    } else {
                        String::new()
                    }
                ));
            }
        }
        (said, broke)
    }

    /// The server fell behind the rate offered: its sends went late because of it.
    fn unserved(&self) -> Option<String> {
        let unserved: Vec<&Arc<RunFigures>> = self.runs.iter().filter(|r| fell_behind(r)).collect();
        unserved.first().map(|r| format!(
            "the rate offered was not kept in {} of {} repetitions: {} of its sends left over 1 ms late, because the server was behind",
            unserved.len(),
            self.runs.len(),
            r.summary.generator.late
        ))
    }

    /// What limited the repetitions that did not hold up: the generator where it held most of
    /// them back, else the finding most of them share.
    fn cause(&self, struggling: &[&Arc<RunFigures>]) -> Option<Cause> {
        let generator: Vec<&&Arc<RunFigures>> = struggling
            .iter()
            .filter(|r| {
                r.summary.generator.behind
                    && r.summary
                        .generator
                        .limited_by
                        .is_some_and(LimitedBy::is_generator)
            })
            .collect();
        if !struggling.is_empty() && 2 * generator.len() > struggling.len() {
            let cause = generator[0]
                .summary
                .generator
                .limited_by
                .unwrap_or(LimitedBy::Unknown);
            return Some(Cause::Generator(format!(
                "the generator was the limit, not the server: in {} of {} repetitions its sends fell behind, held back by {cause}, so this cell says nothing of the server (give the generator CPUs of its own, or more threads)",
                generator.len(),
                self.runs.len()
            )));
        }
        let findings: Vec<Finding> = struggling
            .iter()
            .filter_map(|r| r.system.as_ref().map(|s| s.finding()))
            .collect();
        modal(&findings).map(|(finding, agreeing)| Cause::Server {
            finding,
            agreeing,
            of: struggling.len(),
        })
    }

    /// Late sends that are not the server's doing (the generator, its CPUs, the connection
    /// cap), or whose cause the run could not tell: a figure, not a failure.
    pub fn note(&self) -> Option<String> {
        let late: Vec<&Arc<RunFigures>> = self
            .runs
            .iter()
            .filter(|r| r.summary.generator.behind && !fell_behind(r))
            .collect();
        let first = late.first()?;
        let sends: u64 = late.iter().map(|r| r.summary.generator.late).sum();
        let cause = match first.summary.generator.limited_by {
            Some(LimitedBy::Unknown) | None => String::new(),
            Some(cause) => format!(", held back by {cause}"),
        };
        Some(format!(
            "{sends} sends left over 1 ms late in {} of {} repetitions{cause}",
            late.len(),
            self.runs.len()
        ))
    }
}

/// Why a cell did not hold up: what limited the server (or the generator) first, then what
/// showed it.
#[derive(Debug, Clone)]
pub struct Fell {
    pub cause: Option<Cause>,
    /// Whether the server was loaded past what it held (not only repetitions that failed).
    pub overloaded: bool,
    /// Whether a probe watched the server in any repetition.
    pub measured: bool,
    /// Failed repetitions, errors, the SLO broken, the rate not kept.
    pub symptoms: Vec<String>,
}

/// What limited a cell that did not hold up.
#[derive(Debug, Clone)]
pub enum Cause {
    /// The server: the finding most of its struggling repetitions share, and in how many.
    Server {
        finding: Finding,
        agreeing: usize,
        of: usize,
    },
    /// The generator, in words: nothing is said of the server.
    Generator(String),
}

impl Fell {
    /// One sentence: the limit first, then the symptoms.
    pub fn text(&self) -> String {
        let mut parts = Vec::new();
        match &self.cause {
            Some(Cause::Server {
                finding,
                agreeing,
                of,
            }) => parts.push(format!(
                "limited by {}{}",
                finding.short,
                if agreeing < of {
                    format!(" (in {agreeing} of the {of} repetitions that did not hold up)")
                } else {
                    String::new()
                }
            )),
            Some(Cause::Generator(words)) => parts.push(words.clone()),
            None if !self.overloaded => {}
            None if self.measured => {
                parts.push("what limited the server was not found by its probes".into())
            }
            None => parts.push("what limited it was not measured (no probe watched it)".into()),
        }
        parts.extend(self.symptoms.iter().cloned());
        parts.join("; ")
    }

    /// The finding behind the sentence, for its evidence.
    pub fn finding(&self) -> Option<&Finding> {
        match &self.cause {
            Some(Cause::Server { finding, .. }) => Some(finding),
            _ => None,
        }
    }
}

/// The finding most of `findings` share (by the resource named), the first of those, and how
/// many share it.
fn modal(findings: &[Finding]) -> Option<(Finding, usize)> {
    let count = |f: &Finding| findings.iter().filter(|g| g.limit == f.limit).count();
    let best = findings
        .iter()
        .enumerate()
        .max_by(|(i, a), (j, b)| count(a).cmp(&count(b)).then(j.cmp(i)))?
        .1;
    Some((best.clone(), count(best)))
}

/// Whether the server fell behind the rate this run offered (see
/// [`store::summary::Summary::server_fell_behind`]).
fn fell_behind(r: &RunFigures) -> bool {
    r.config.open_loop && r.summary.server_fell_behind()
}

/// Where the last-ranked target's CPU went that a better-ranked one's of the same kind did not:
/// the function whose own share of the profile's samples is most above the other's. Only
/// between profiles of the same program (the same process name, a cluster's workers counted as
/// their primary: node against node-cluster, go against go-goroutine), where the same function
/// means the same code; with enough samples (200 each) for a difference of 5 points or more to
/// mean something; and never a kernel frame or an address without a name, whose share says
/// more about the sampling than about the server.
fn where_the_last_lost(ranked: &[(&CellFigures, Spread)]) -> Option<String> {
    let profile = |c: &CellFigures| {
        c.representative()
            .and_then(|r| r.target_probe())
            .and_then(|p| p.profile.clone())
            .filter(|p| p.samples >= 200)
    };
    let program = |p: &crate::profile::ProfileFigures| {
        p.folded
            .keys()
            .next()
            .and_then(|s| s.split(';').next())
            .map(|s| s.trim_end_matches(" (child)").to_string())
    };
    let ((last, _), better) = ranked.split_last()?;
    let l = profile(last)?;
    let (other, o) = better.iter().find_map(|(c, _)| {
        let p = profile(c)?;
        (program(&p) == program(&l)).then_some((*c, p))
    })?;
    let (os, ls) = (o.own_shares(), l.own_shares());
    let named = |f: &str| !f.ends_with("_[k]") && !f.starts_with("0x") && !f.starts_with('[');
    let gain = |f: &str, share: f64| share - os.get(f).copied().unwrap_or(0.0);
    let (function, share) = ls
        .iter()
        .filter(|(f, _)| named(f))
        .max_by(|x, y| gain(x.0, *x.1).total_cmp(&gain(y.0, *y.1)))?;
    let against = os.get(function).copied().unwrap_or(0.0);
    (share - against >= 5.0).then(|| {
        format!(
            "Where their CPU went: {} spent {share:.0} % of its samples in {function} itself, {} {against:.0} %.",
            last.target, other.target
        )
    })
}

/// Everything an experiment's page shows.
#[derive(Debug, Clone)]
pub struct ExperimentFigures {
    pub record: ExperimentRecord,
    /// Every setting, in axis order (one empty setting when the matrix has no axis).
    pub settings: Vec<Setting>,
    /// Setting-major, targets in the file's order.
    pub cells: Vec<CellFigures>,
    /// Warm-up runs kept apart.
    pub warmups: usize,
    /// Runs of earlier files or scales, not shown.
    pub older: usize,
    /// The SLO the experiment's searches judged by: its fixed-rate cells (shares of a capacity)
    /// are held to it too.
    pub slo: Option<analysis::capacity::Slo>,
    /// A comparison's gates (`[compare]`) of the current file and scale, oldest first.
    pub gates: Vec<analysis::ab::KeptGate>,
}

/// The experiment's figures from the runs read for the site.
pub fn figures(record: &ExperimentRecord, runs: &[Arc<RunFigures>]) -> ExperimentFigures {
    let settings = answered_settings(record);
    let (mine, warmups, older) = shown_runs(record, runs);
    let cells = cells_of_runs(record, &settings, &mine);
    ExperimentFigures {
        record: record.clone(),
        settings,
        cells,
        warmups,
        older,
        slo: None,
        gates: Vec::new(),
    }
}

/// Every setting of the matrix, in axis order, but the searches' (answered in capacity).
fn answered_settings(record: &ExperimentRecord) -> Vec<Setting> {
    let mut settings: Vec<Setting> = vec![Vec::new()];
    for (axis, values) in &record.definition.axes {
        settings = settings
            .into_iter()
            .flat_map(|s| {
                values.iter().map(move |v| {
                    let mut s = s.clone();
                    s.push((axis.clone(), v.clone()));
                    s
                })
            })
            .collect();
    }
    // The searches' settings are answered in capacity (crate::search), not here.
    settings.retain(|s| !record.definition.searched.contains(s));
    settings
}

/// The experiment's runs the page shows, with how many warm-ups and how many older runs were
/// left out: (shown, warm-ups, older).
fn shown_runs<'a>(
    record: &ExperimentRecord,
    runs: &'a [Arc<RunFigures>],
) -> (Vec<&'a Arc<RunFigures>>, usize, usize) {
    let mut warmups = 0;
    let mut older = 0;
    let mut mine: Vec<&Arc<RunFigures>> = Vec::new();
    for r in runs
        .iter()
        .filter(|r| r.experiment.as_deref() == Some(&record.name))
    {
        if !record.shows(&r.labels) {
            older += 1;
        } else if Phase::of(&r.labels) == Some(Phase::Warmup) {
            warmups += 1;
        } else if Phase::of(&r.labels) != Some(Phase::Step) {
            // A search's steps are the search's figures (its page, and the capacity section).
            mine.push(r);
        }
    }
    (mine, warmups, older)
}

/// A cell for every target at every setting, setting-major, of the runs shown.
fn cells_of_runs(
    record: &ExperimentRecord,
    settings: &[Setting],
    mine: &[&Arc<RunFigures>],
) -> Vec<CellFigures> {
    let mut cells = Vec::new();
    for setting in settings {
        for target in &record.definition.targets {
            let of_cell: Vec<&Arc<RunFigures>> = mine
                .iter()
                .copied()
                .filter(|r| {
                    r.labels.get("target") == Some(target)
                        && setting.iter().all(|(k, v)| r.labels.get(k) == Some(v))
                })
                .collect();
            let mut cell = CellFigures {
                target: target.clone(),
                setting: setting.clone(),
                runs: Vec::new(),
                failed: Vec::new(),
            };
            for r in of_cell {
                add_run(&mut cell, r);
            }
            cells.push(cell);
        }
    }
    cells
}

/// A run into its cell: among its repetitions when it completed, else among the failed, with why.
fn add_run(cell: &mut CellFigures, r: &Arc<RunFigures>) {
    match r.status {
        RunStatus::Complete => cell.runs.push(r.clone()),
        RunStatus::Failed | RunStatus::Incomplete => cell.failed.push((
            r.clone(),
            r.stop_reason.clone().unwrap_or_else(|| "incomplete".into()),
        )),
        RunStatus::Running => cell.failed.push((
            r.clone(),
            "did not finish (killed, or still running)".into(),
        )),
    }
}

/// `rate=2000 connections=100`, or `all settings` for a matrix of targets alone.
pub fn setting_text(setting: &Setting) -> String {
    if setting.is_empty() {
        return "all settings".into();
    }
    setting
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The rates a setting's shares of capacity became: "Each ran at 80% of its own capacity: go
/// 47,520 req/s (of 59,400), node 35,040 (of 43,800)." In a comparison (`compared`), one rate
/// for every build, of the lowest of their capacities.
fn shares(cells: &[&CellFigures], compared: bool) -> Option<String> {
    use store::vocabulary::label;
    let mut share = None;
    let mut lowest = None;
    let mut rates = Vec::new();
    for c in cells {
        let Some(run) = c.runs.first() else { continue };
        let (Some(s), Some(capacity)) = (
            run.labels.get(label::SHARE),
            run.labels
                .get(label::CAPACITY)
                .and_then(|v| v.parse::<f64>().ok()),
        ) else {
            continue;
        };
        let fraction = s.trim_end_matches('%').parse::<f64>().ok()? / 100.0;
        share = Some(s.clone());
        lowest = Some((analysis::capacity::share_of(capacity, fraction), capacity));
        rates.push(format!(
            "{} {} req/s (of {})",
            c.target,
            thousands(analysis::capacity::share_of(capacity, fraction)),
            thousands(capacity)
        ));
    }
    if compared {
        let (rate, capacity) = lowest?;
        return Some(format!(
            "Every build ran at {} req/s, {} of {} req/s, the lowest of their capacities within the SLO (each build's search in this sitting).",
            thousands(rate),
            share?,
            thousands(capacity)
        ));
    }
    Some(format!(
        "Each ran at {} of its own capacity within the SLO, as this experiment's searches measured it (C_p of their steps pooled): {}.",
        share?,
        rates.join(", ")
    ))
}

fn short_ms(ms: f64) -> String {
    if ms >= 1000.0 {
        format!("{:.2} s", ms / 1000.0)
    } else if ms >= 10.0 {
        format!("{ms:.0} ms")
    } else {
        format!("{ms:.2} ms")
    }
}

impl ExperimentFigures {
    /// The cells of one setting, in target order.
    pub fn cells_of(&self, setting: &Setting) -> Vec<&CellFigures> {
        self.cells
            .iter()
            .filter(|c| &c.setting == setting)
            .collect()
    }

    /// The figure a setting's question is answered in: throughput when its cells ran closed
    /// loops (how much each served), latency at a fixed rate otherwise.
    pub fn answer_metric(&self, setting: &Setting) -> Metric {
        let closed = self
            .cells_of(setting)
            .iter()
            .flat_map(|c| &c.runs)
            .any(|r| !r.config.open_loop);
        if closed {
            Metric::Throughput
        } else {
            Metric::P99
        }
    }

    /// One computed sentence per setting, in the question's own figure: which target had the
    /// lowest p99 at a fixed rate, or served the most in a closed loop, by how much, whether
    /// that is more than the spread between repetitions, what the targets ran on, and who did
    /// not hold up.
    pub fn sentence(&self, setting: &Setting) -> String {
        let cells = self.cells_of(setting);
        let metric = self.answer_metric(setting);
        let mut ranked: Vec<(&CellFigures, Spread)> = cells
            .iter()
            .filter_map(|c| c.spread(metric).map(|s| (*c, s)))
            .collect();
        ranked.sort_by(|a, b| a.1.median.total_cmp(&b.1.median));
        if !metric.lower_is_better() {
            ranked.reverse();
        }
        let mut out = format!("At {}: {}", setting_text(setting), ranking(metric, &ranked));
        if let Some(why) = where_the_last_lost(&ranked) {
            out.push(' ');
            out.push_str(&why);
        }
        if let Some(shares) = shares(&cells, self.record.definition.compared) {
            out.push(' ');
            out.push_str(&shares);
        }
        if let Some(on) = self.ran_on(&cells) {
            out.push_str(&format!(" Each target {on}."));
        }
        for c in &cells {
            let own = c.own_slo();
            if let Some(why) = c.fell_over(own.as_ref().or(self.slo.as_ref())) {
                out.push_str(&format!(" {} did not hold up: {why}.", c.target));
            } else if let Some(note) = c.note() {
                out.push_str(&format!(" {}: {note}.", c.target));
            }
            if let Some(met) = own.as_ref().and_then(|slo| c.slo_met(slo)) {
                out.push_str(&format!(" {} {met}.", c.target));
            }
        }
        out
    }

    /// For each target of a setting that did not hold up, what limited it: the finding behind
    /// its sentence, whose evidence a page shows one click away.
    pub fn evidence(&self, setting: &Setting) -> Vec<(String, Finding)> {
        self.cells_of(setting)
            .iter()
            .filter_map(|c| {
                let own = c.own_slo();
                let fell = c.why_fell(own.as_ref().or(self.slo.as_ref()))?;
                Some((c.target.clone(), fell.finding()?.clone()))
            })
            .collect()
    }

    /// What the targets of these cells ran on, from their runs' labels: the CPUs they were
    /// pinned to and what they were held to.
    fn ran_on(&self, cells: &[&CellFigures]) -> Option<String> {
        use store::vocabulary::label;
        let run = cells.iter().flat_map(|c| c.runs.first()).next()?;
        let pinned = run
            .labels
            .get(label::PLACEMENT)
            .and_then(|p| p.split(", ").find(|part| part.starts_with("local targets")))
            .map(|p| p.trim_start_matches("local targets ").to_string());
        let held = run
            .labels
            .get(label::HELD)
            .map(|h| match h.split_once(": ") {
                Some((kind, limits)) if kind.starts_with("cgroup") => format!("held to {limits}"),
                _ => h.clone(),
            });
        match (pinned, held) {
            (Some(p), Some(h)) => Some(format!("{p}, {h}")),
            (Some(p), None) => Some(p),
            (None, Some(h)) => Some(h),
            (None, None) => None,
        }
    }

    /// The targets' colours: a target keeps its colour on every chart.
    pub fn color_of(&self, target: &str) -> Rgb {
        let i = self
            .record
            .definition
            .targets
            .iter()
            .position(|t| t == target)
            .unwrap_or(0);
        color(i)
    }

    /// The charts across settings: each figure against the first axis, a line per target,
    /// one set per value of the other axes.
    pub fn across(&self) -> Result<Vec<(String, Vec<Chart>)>, PlotError> {
        let Some(axis) = self.across_axis() else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for group in self.other_axes() {
            out.push(self.across_group(&axis, group)?);
        }
        Ok(out)
    }

    /// The first axis as the charts across settings draw it, or none when it has fewer than
    /// two values answered here.
    fn across_axis(&self) -> Option<AcrossAxis> {
        let (axis, values) = self.record.definition.axes.first()?;
        // The values answered here (a search's are answered in capacity).
        let values: Vec<String> = values
            .iter()
            .filter(|v| {
                self.settings
                    .iter()
                    .any(|s| s.first().map(|(_, x)| x) == Some(*v))
            })
            .cloned()
            .collect();
        if values.len() < 2 {
            return None;
        }
        let numbers: Option<Vec<f64>> = values
            .iter()
            .map(|v| v.trim_end_matches('%').parse::<f64>().ok())
            .collect();
        // Shares of a capacity (`rate = "80%"`): each target's own.
        let x_label = if axis == "rate" && values.iter().all(|v| v.ends_with('%')) {
            "rate (% of each target's capacity)".to_string()
        } else {
            axis.clone()
        };
        let (x_axis, xs) = match numbers {
            Some(xs) => (XAxis::Numbers, xs),
            None => (
                XAxis::Names(values.clone()),
                (0..values.len()).map(|i| i as f64).collect(),
            ),
        };
        Some(AcrossAxis {
            name: axis.clone(),
            values,
            xs,
            x_axis,
            x_label,
        })
    }

    /// The other axes' combinations, in the order of the settings.
    fn other_axes(&self) -> Vec<Setting> {
        let mut groups: Vec<Setting> = Vec::new();
        for s in &self.settings {
            let rest: Setting = s.iter().skip(1).cloned().collect();
            if !groups.contains(&rest) {
                groups.push(rest);
            }
        }
        groups
    }

    /// The charts against the first axis at one combination of the other axes, under their
    /// heading.
    fn across_group(
        &self,
        axis: &AcrossAxis,
        group: Setting,
    ) -> Result<(String, Vec<Chart>), PlotError> {
        let name = &axis.name;
        let mut list = Vec::new();
        for metric in [
            Metric::P99,
            Metric::Mean,
            Metric::Throughput,
            Metric::ErrorRate,
            Metric::Cpu,
            Metric::PeakRss,
        ] {
            let lines = self.across_lines(axis, &group, metric);
            let title = format!("{} against {name}", metric.title());
            list.push(crate::charts::xy(
                &crate::paths::slug(&format!("across {} {}", setting_text(&group), title)),
                XyChart {
                    title: &title,
                    x_label: &axis.x_label,
                    y_label: metric.title(),
                    x: axis.x_axis.clone(),
                    y_log: metric.is_latency(),
                    lines,
                },
                "The median over repetitions; a bar spans the lowest to the highest.",
                "No completed run has this figure.",
            )?);
        }
        let heading = if group.is_empty() {
            format!("Against {name}")
        } else {
            format!("Against {name}, at {}", setting_text(&group))
        };
        Ok((heading, list))
    }

    /// One figure against the first axis at one combination of the other axes, a line per
    /// target: the median over repetitions, with their range.
    fn across_lines(&self, axis: &AcrossAxis, group: &Setting, metric: Metric) -> Vec<Line> {
        let mut lines = Vec::new();
        for target in &self.record.definition.targets {
            let mut line = Line::new(target.clone(), self.color_of(target), Vec::new());
            for (value, x) in axis.values.iter().zip(&axis.xs) {
                let mut setting = vec![(axis.name.clone(), value.clone())];
                setting.extend(group.iter().cloned());
                let cell = self
                    .cells
                    .iter()
                    .find(|c| &c.target == target && c.setting == setting);
                if let Some(s) = cell.and_then(|c| c.spread(metric)) {
                    line.points.push((*x, metric.shown(s.median)));
                    if s.n > 1 {
                        line.spread
                            .push((*x, metric.shown(s.min), metric.shown(s.max)));
                    }
                }
            }
            lines.push(line);
        }
        lines
    }

    /// One setting's charts: every target's representative run on one time axis.
    pub fn overlay(&self, setting: &Setting) -> Result<Vec<Chart>, PlotError> {
        let runs: Vec<(&str, &Arc<RunFigures>)> = self
            .cells_of(setting)
            .iter()
            .filter_map(|c| c.representative().map(|r| (c.target.as_str(), r)))
            .collect();
        let o = Overlay {
            fig: self,
            setting: setting_text(setting),
            span: runs.iter().fold((0.0f64, 1.0f64), |s, (_, r)| {
                (s.0.min(r.span.0), s.1.max(r.span.1))
            }),
            attack_end: runs.iter().map(|(_, r)| r.attack.1).fold(0.0, f64::max),
            runs,
        };
        let name = &o.setting;
        let (fds, fd_caption) = o.fds();
        let p99 = o.per(&|r| {
            r.load
                .latency
                .get(2)
                .map(|s| s.points.clone())
                .unwrap_or_default()
        });
        Ok(vec![
            o.time("p99", format!("p99 latency over time, {name}"), "corrected latency (ms)", p99,
                format!("Per interval, from intended send times. {WHICH}"))?,
            o.time("cpu", format!("Target CPU, {name}"), "CPU (%, 100 = one core)", o.probe_series(|p| &p.cpu),
                format!("The whole process tree. {WHICH}"))?,
            o.time("rss", format!("Target memory (RSS), {name}"), "RSS (MiB)", o.probe_series(|p| &p.rss_mib), WHICH.to_string())?,
            o.time("threads", format!("Target threads, {name}"), "threads", o.probe_series(|p| &p.threads), WHICH.to_string())?,
            o.time("fds", format!("Target open FDs, {name}"), "open FDs", fds, fd_caption)?,
            crate::charts::distribution(
                &o.id("distribution"),
                &format!("Latency by percentile, {name}"),
                o.per(&|r| r.distribution.first().map(|s| s.points.clone()).unwrap_or_default()),
                "Corrected latency over each whole run, on HdrHistogram's axis (1/(1−p), log scale).",
            )?,
        ])
    }
}

/// The first axis as the charts across settings draw it: its values answered here, where each
/// lies on the x axis, and the axis's label.
struct AcrossAxis {
    name: String,
    values: Vec<String>,
    xs: Vec<f64>,
    x_axis: XAxis,
    x_label: String,
}

/// Which run of each target an overlay draws.
const WHICH: &str = "Each target's median repetition (by p99); grey: before and after the load.";

/// One setting's targets drawn over each other: each target's representative run, on a
/// timeline spanning them all.
struct Overlay<'a> {
    fig: &'a ExperimentFigures,
    setting: String,
    runs: Vec<(&'a str, &'a Arc<RunFigures>)>,
    span: (f64, f64),
    attack_end: f64,
}

impl Overlay<'_> {
    fn id(&self, what: &str) -> String {
        crate::paths::slug(&format!("{} {what}", self.setting))
    }

    /// A target's line, in its colour.
    fn line(&self, target: &str, points: Vec<(f64, f64)>) -> Line {
        Line::new(target.to_string(), self.fig.color_of(target), points)
    }

    /// A line a target, of what `pick` reads of its run.
    fn per(&self, pick: &dyn Fn(&RunFigures) -> Vec<(f64, f64)>) -> Vec<Line> {
        self.runs
            .iter()
            .map(|(t, r)| self.line(t, pick(r)))
            .collect()
    }

    /// A line a target, of a series of its target's probe.
    fn probe_series(
        &self,
        pick: fn(&crate::figures::ProbeFigures) -> &crate::figures::Series,
    ) -> Vec<Line> {
        self.per(&|r: &RunFigures| {
            r.target_probe()
                .map(|p| pick(p).points.clone())
                .unwrap_or_default()
        })
    }

    fn time(
        &self,
        what: &str,
        title: String,
        y: &str,
        lines: Vec<Line>,
        caption: String,
    ) -> Result<Chart, PlotError> {
        crate::charts::time(
            &self.id(what),
            TimeChart {
                title: &title,
                y_label: y,
                x_range: self.span,
                attack: Some((0.0, self.attack_end)),
                lines,
                bands: Vec::new(),
                markers: Vec::new(),
            },
            &caption,
            "Nothing to draw: no run, or no probe.",
        )
    }

    /// Each target's open FDs, with its FD limits dashed where they are near enough to be
    /// drawn (else named in the caption), and the caption.
    fn fds(&self) -> (Vec<Line>, String) {
        let mut fds = self.probe_series(|p| &p.fds);
        let fd_max = fds
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.1))
            .fold(0.0, f64::max);
        let mut limits_text = Vec::new();
        for (target, r) in &self.runs {
            let Some(p) = r.target_probe() else { continue };
            for (name, limit) in [("soft", p.fd_limits.0), ("hard", p.fd_limits.1)] {
                let Some(limit) = limit else { continue };
                let limit = limit as f64;
                if limit <= fd_max.max(1.0) * 4.0 {
                    let mut line = self
                        .line(target, vec![(self.span.0, limit), (self.span.1, limit)])
                        .dashed();
                    line.name = format!("{target} {name} limit");
                    fds.push(line);
                } else {
                    limits_text.push(format!("{target}'s {name} limit {limit:.0}"));
                }
            }
        }
        let caption = if limits_text.is_empty() {
            format!("Open FDs of each target's process tree; dashed: the FD limits. {WHICH}")
        } else {
            format!(
                "Open FDs of each target's process tree; {} far above, not drawn. {WHICH}",
                limits_text.join(", ")
            )
        };
        (fds, caption)
    }
}

/// The targets ranked by `metric` (best first): the best, the others against it as factors
/// (with the p99 each throughput came with), and whether the first two differ by more than
/// their repetitions spread.
fn ranking(metric: Metric, ranked: &[(&CellFigures, Spread)]) -> String {
    let show = |v: f64| ranked_figure(metric, v);
    let (best, b, rest) = match ranked {
        [] => return "no target completed a run.".into(),
        [(only, s)] => {
            return format!(
                "only {} completed: {}{}.",
                only.target,
                show(s.median),
                with_p99(metric, only)
            )
        }
        [(best, b), rest @ ..] => (best, b, rest),
    };
    let others = against_the_best(metric, b, rest);
    let verb = match metric {
        Metric::Throughput => "served the most",
        _ => "had the lowest p99",
    };
    let mut out = format!(
        "{} {verb}, {}{}, against {}",
        best.target,
        show(b.median),
        with_p99(metric, best),
        others.join(", ")
    );
    let (second, s2) = &rest[0];
    out.push_str(&spread_verdict(metric, b, second, s2));
    out.push('.');
    out
}

/// A figure of a ranking: a throughput in req/s, a latency in ms or s.
fn ranked_figure(metric: Metric, v: f64) -> String {
    match metric {
        Metric::Throughput => format!("{} req/s", thousands(v)),
        _ => short_ms(v),
    }
}

/// With the throughput, the latency it came with: " at p99 4.2 ms"; nothing for other figures.
fn with_p99(metric: Metric, c: &CellFigures) -> String {
    match (metric, c.spread(Metric::P99)) {
        (Metric::Throughput, Some(p)) => format!(" at p99 {}", short_ms(p.median)),
        _ => String::new(),
    }
}

/// The targets after the best, each with its figure and its factor against the best's `b`.
fn against_the_best(metric: Metric, b: &Spread, rest: &[(&CellFigures, Spread)]) -> Vec<String> {
    rest.iter()
        .map(|(c, s)| {
            let factor = match metric {
                Metric::Throughput if s.median > 0.0 => {
                    format!("{:.1}× fewer", b.median / s.median)
                }
                Metric::Throughput => "none served".into(),
                _ if b.median > 0.0 => format!("{:.1}×", s.median / b.median),
                _ => "∞×".into(),
            };
            format!(
                "{} {} ({factor}){}",
                c.target,
                ranked_figure(metric, s.median),
                with_p99(metric, c)
            )
        })
        .collect()
}

/// Whether the best (`b`) and the second differ by more than their repetitions spread: the
/// ranking's last clause.
fn spread_verdict(metric: Metric, b: &Spread, second: &CellFigures, s2: &Spread) -> String {
    let show = |v: f64| ranked_figure(metric, v);
    let ranges = format!(
        "{}–{} against {}–{}",
        show(b.min),
        show(b.max),
        show(s2.min),
        show(s2.max)
    );
    if b.n < 2 || s2.n < 2 {
        "; one repetition each, so no spread to compare the difference with".to_string()
    } else if b.apart(s2) {
        format!(
            "; the difference with {} is larger than the spread between repetitions ({ranges})",
            second.target
        )
    } else {
        format!(
            "; but the repetitions overlap ({ranges}): the difference with {} is within the spread",
            second.target
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spreads_take_the_median_and_the_range() {
        let s = Spread::of(vec![3.0, 1.0, 2.0]).unwrap_or(Spread {
            median: 0.0,
            min: 0.0,
            max: 0.0,
            n: 0,
        });
        assert_eq!((s.median, s.min, s.max, s.n), (2.0, 1.0, 3.0, 3));
        let even = Spread::of(vec![1.0, 4.0]).map(|s| s.median);
        assert_eq!(even, Some(2.5));
        assert_eq!(Spread::of(vec![f64::NAN]), None);
        let a = Spread {
            median: 1.0,
            min: 0.9,
            max: 1.1,
            n: 3,
        };
        let b = Spread {
            median: 2.0,
            min: 1.8,
            max: 2.2,
            n: 3,
        };
        let c = Spread {
            median: 1.05,
            min: 1.0,
            max: 1.9,
            n: 3,
        };
        assert!(a.apart(&b) && !a.apart(&c) && !c.apart(&b));
    }
}
