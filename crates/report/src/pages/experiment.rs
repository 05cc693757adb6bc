//! An experiment's page: its question answered setting by setting, the matrix, the write-ups'
//! own tables, the charts across settings and per setting, and its runs.

use analysis::summary::SummaryText as _;
use maud::{html, Markup};

use super::layout::{charts, layout};
use crate::paths::page_of;
use std::collections::BTreeMap;

use crate::charts::Chart;
use crate::experiment::{setting_text, CellFigures, ExperimentFigures, Group, Metric, Setting};
use crate::model::css_color;
use crate::search::SettingCapacity;

/// What an experiment's page links to beside its runs.
#[derive(Debug, Clone, Default)]
pub struct ExperimentLinks {
    /// Per setting (by its text), the comparison page of its targets.
    pub comparisons: BTreeMap<String, String>,
    /// Per setting (as its gates are kept), the differential flame graph of its latest gate.
    pub gate_flames: BTreeMap<String, super::FlameGraph>,
    /// The experiment's history page, relative to the site's root, where it has two sittings
    /// or more.
    pub history: Option<String>,
}

/// `2.10 ms (1.90–2.40)`: a cell's median and its spread over repetitions.
fn spread_text(metric: Metric, s: Option<crate::experiment::Spread>) -> String {
    let Some(s) = s else { return "—".into() };
    let f = |v: f64| {
        let v = metric.shown(v);
        match metric {
            Metric::Throughput | Metric::PeakThreads | Metric::PeakFds => format!("{v:.0}"),
            Metric::ErrorRate | Metric::Cpu => format!("{v:.1}"),
            Metric::PeakRss => format!("{v:.1}"),
            _ if v >= 100.0 => format!("{v:.0}"),
            _ if v >= 10.0 => format!("{v:.1}"),
            _ => format!("{v:.2}"),
        }
    };
    if s.n > 1 && (s.max - s.min).abs() > f64::EPSILON {
        format!("{} ({}–{})", f(s.median), f(s.min), f(s.max))
    } else {
        f(s.median)
    }
}

/// A failure's first clause, for a table cell (the whole text is one click away).
fn short(reason: &str) -> String {
    let first = reason.split([':', ';']).next().unwrap_or(reason).trim();
    if first.chars().count() > 80 {
        first.chars().take(77).collect::<String>() + "…"
    } else {
        first.to_string()
    }
}

/// The figures behind each "did not hold up" of a setting's answer, one click away.
fn evidence(fig: &ExperimentFigures, setting: &Setting) -> Markup {
    html! {
        @for (target, f) in fig.evidence(setting) {
            details.finding {
                summary { "What limited " (target) ": the figures" }
                p { (f.evidence) }
            }
        }
    }
}

/// "2026-11-26 20:41:07 UTC", for a sitting's time.
fn when(ns: i64) -> String {
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_nanos(ns.max(0) as u64);
    humantime::format_rfc3339_seconds(at)
        .to_string()
        .replace('T', " ")
        .replace('Z', " UTC")
}

/// A comparison's answer (`[compare]`): each setting's latest gate as the command printed it,
/// measure by measure, and the sittings before it.
fn gates(kept: &[analysis::ab::KeptGate], flames: &BTreeMap<String, super::FlameGraph>) -> Markup {
    use analysis::ab::Outcome;
    let mut settings: Vec<&str> = kept.iter().map(|k| k.setting.as_str()).collect();
    settings.sort_unstable();
    settings.dedup();
    html! {
        h2 { "Answers: the gate" }
        @for setting in &settings {
            @let of: Vec<&analysis::ab::KeptGate> = kept.iter().filter(|k| k.setting == *setting).collect();
            @if let Some(last) = of.last() {
                @let g = &last.gate;
                @let outcome = g.outcome();
                p.answer {
                    @match outcome {
                        Outcome::Pass => span.badge.complete { "pass" },
                        Outcome::Regression => span.badge.failed { "regression" },
                        Outcome::Inconclusive => span.badge.incomplete { "inconclusive" },
                    }
                    " " (g.headline())
                    @if !setting.is_empty() { " — " (setting) }
                    br;
                    small { "Judged " (when(last.judged_at_ns)) ". " (g.method()) " The exit code was " (match outcome { Outcome::Pass => 0, Outcome::Regression => 4, Outcome::Inconclusive => 5 }) "." }
                }
                div.scroll {
                    table.gate {
                        thead { tr {
                            th { "measure" }
                            th { (g.baseline) @if g.baseline != "baseline" { " (baseline)" } }
                            th { (g.candidate) @if g.candidate != "candidate" { " (candidate)" } }
                            th { "candidate ÷ baseline (95 % interval)" } th { "allowed" } th { "verdict" }
                            @if let Some(control) = &g.control { th { (control) " ÷ " (g.baseline) " (A/A, 95 %)" } }
                            th { "each round's ratio" }
                        } }
                        tbody {
                            @for j in &g.measures {
                                @let (a, b) = j.values();
                                tr {
                                    th { (j.measure.title()) }
                                    td.num { (a) } td.num { (b) }
                                    td.num { @if let Some(c) = &j.change { (format!("{:.3}× ({:.3}–{:.3})", c.ratio, c.low, c.high)) } @else { "none" } }
                                    td.num { (j.allowed_text()) }
                                    td.why { (j.verdict_text()) }
                                    @if g.control.is_some() { td.num { @if let Some(c) = &j.control { (format!("{:.3}× ({:.3}–{:.3})", c.ratio, c.low, c.high)) } @else { "none" } } }
                                    td { small {
                                        @if j.measure == analysis::ab::Measure::Capacity { "none: each capacity is fitted from all of its search's steps" }
                                        @else { (j.ratios.iter().map(|r| format!("{r:.3}")).collect::<Vec<_>>().join(" ")) }
                                    } }
                                }
                            }
                        }
                    }
                }
                @for line in g.by_function() { p.meta { (line) } }
                @if let Some(flame) = flames.get(*setting) {
                    (super::flame_inline(flame, "gate-flame", "The candidate's call paths, coloured where their CPU per request changed beyond noise."))
                }
                @if of.len() > 1 {
                    details {
                        summary { (of.len() - 1) " earlier sittings of this file (their runs are in the matrix below too)" }
                        ul { @for k in of.iter().rev().skip(1) { li { (when(k.judged_at_ns)) ": " (k.gate.headline()) } } }
                    }
                }
            }
        }
    }
}

/// What ran of an experiment, and what is to run: its header's counts.
struct Counts {
    /// Complete runs of its fixed loads, and failed ones.
    done: usize,
    failed: usize,
    /// Runs its fixed loads are to have (0 where only searches ran).
    expected: usize,
    /// Searches finished, and to finish.
    searched: usize,
    to_search: usize,
    /// Whether its fixed loads are shown: always without searches, and beside them once one
    /// of them has a run.
    fixed: bool,
}

impl Counts {
    fn of(fig: &ExperimentFigures, capacity: &[SettingCapacity]) -> Counts {
        let d = &fig.record.definition;
        let done = fig.cells.iter().map(|c| c.runs.len()).sum::<usize>();
        let failed = fig.cells.iter().map(|c| c.failed.len()).sum::<usize>();
        let searched: usize = capacity
            .iter()
            .flat_map(|c| &c.targets)
            .map(|t| t.searches.len())
            .sum();
        // A comparison's searches run once a setting (the search's rounds are theirs).
        let search_repetitions = if d.compared {
            1
        } else {
            d.repetitions as usize
        };
        let to_search = if capacity.is_empty() {
            0
        } else {
            (d.searched.len() * d.targets.len() * search_repetitions).max(searched)
        };
        let fixed = capacity.is_empty()
            || fig
                .cells
                .iter()
                .any(|c| !c.runs.is_empty() || !c.failed.is_empty());
        // Searches are counted apart from the fixed loads' runs (shares of a capacity).
        let expected = if fixed {
            fig.cells.len() * d.repetitions as usize
        } else {
            0
        };
        Counts {
            done,
            failed,
            expected,
            searched,
            to_search,
            fixed,
        }
    }
}

/// How each target was held to a host size (a cgroup, or why not), from its runs' labels.
fn held(fig: &ExperimentFigures) -> BTreeMap<&str, &str> {
    let mut held = BTreeMap::new();
    for c in &fig.cells {
        for run in &c.runs {
            if let Some(h) = run.labels.get(store::vocabulary::label::HELD) {
                held.insert(c.target.as_str(), h.as_str());
            }
        }
    }
    held
}

/// What the targets ran on, for every answer: ", held by …" where all were held one way.
fn held_text(held: &BTreeMap<&str, &str>) -> String {
    let mut kinds: Vec<&&str> = held.values().collect();
    kinds.dedup();
    match kinds.as_slice() {
        [one] => format!(", held by {one}"),
        _ => String::new(),
    }
}

/// An experiment's page: a plan of sections, each over its part of the figures.
pub fn experiment_page(
    fig: &ExperimentFigures,
    across: &[(String, Vec<Chart>)],
    overlays: &[Vec<Chart>],
    links: &ExperimentLinks,
    capacity: &[SettingCapacity],
) -> Markup {
    let counts = Counts::of(fig, capacity);
    let held = held(fig);
    let body = html! {
        (header(fig, links, capacity, &counts, &held))
        (unmeasured(fig))
        @if !capacity.is_empty() { (capacity_answers(capacity, &held_text(&held))) }
        @if !fig.gates.is_empty() { (gates(&fig.gates, &links.gate_flames)) }
        @if counts.fixed {
            (fixed_answers(fig, capacity))
            (matrix(fig))
            (beside(fig))
            (as_tabled(fig))
            @for (heading, list) in across {
                h2 { (heading) }
                (charts(list))
            }
            @for (setting, list) in fig.settings.iter().zip(overlays) {
                (at_setting(fig, links, setting, list))
            }
        }
        (summaries(fig, counts.done))
        (verification(fig))
        h2 { "The experiment file" }
        details { summary { "As run" } pre { (fig.record.definition.file) } }
    };
    layout(&format!("Experiment {}", fig.record.name), "../", body)
}

/// The question, what ran of it and on what, and where its history is.
fn header(
    fig: &ExperimentFigures,
    links: &ExperimentLinks,
    capacity: &[SettingCapacity],
    n: &Counts,
    held: &BTreeMap<&str, &str>,
) -> Markup {
    let r = &fig.record;
    let d = &r.definition;
    let settings = fig.settings.len()
        + if capacity.is_empty() {
            0
        } else {
            d.searched.len()
        };
    let not_run = n.expected.saturating_sub(n.done + n.failed) + (n.to_search - n.searched);
    html! {
        h1 { "Experiment " (r.name) }
        p.question { strong { (r.question) } }
        p.meta {
            @if let Some(source) = &d.source { (source) br; }
            (d.targets.len()) " targets × " (settings) " settings × " (d.repetitions) " repetitions: "
            @if n.to_search > 0 { (n.searched) " of " (n.to_search) " searches finished" @if n.expected > 0 { ", " } }
            @if n.expected > 0 { (n.done) " of " (n.expected) " runs complete" }
            @if n.failed > 0 { ", " span.badge.failed { (n.failed) " failed" } }
            @if not_run > 0 { ", " (not_run) " not run yet" }
            ". File " code { (r.file_label) } @if r.scale != 1.0 { ", scaled ×" (r.scale) " (a quick look, not the full experiment)" } "."
            br; (d.placement) "."
            @for (target, held) in held { br; (target) ": held by " (held) "." }
            @if fig.warmups > 0 { br; (fig.warmups) " warm-up runs are kept apart and left out of every figure." }
            @if fig.older > 0 { br; (fig.older) " runs of earlier sittings, earlier versions of the file or other scales are not shown here: the index lists them, and " code { "loadgen history --experiment " (r.name) } " sets the sittings side by side." }
            @if let Some(path) = &links.history { br; a href={ "../" (path) } { "Its history" } ": every sitting side by side, and the changes across them." }
        }
    }
}

/// The targets that failed verification, and why: they were not measured.
fn unmeasured(fig: &ExperimentFigures) -> Markup {
    let failed: Vec<_> = fig
        .record
        .verification
        .iter()
        .filter(|v| !v.passed)
        .collect();
    html! {
        @if !failed.is_empty() {
            div.warnings {
                h2 { "Targets not measured: they failed verification" }
                ul {
                    @for v in &failed {
                        li { strong { (v.target) } ": "
                            @for (check, outcome) in &v.checks {
                                @if let store::vocabulary::Outcome::Failed(why) = outcome {
                                    (check) " — " (why) "; "
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The searches' answers: a sentence a setting, a row a target, and their charts.
fn capacity_answers(capacity: &[SettingCapacity], held_text: &str) -> Markup {
    html! {
        h2 { "Answers: capacity within the SLO" }
        ul.answers { @for c in capacity { li { (crate::search::capacity_sentence(c, held_text)) } } }
        div.scroll {
            table {
                thead { tr { th { "setting" } th { "target" } th { "capacity (req/s)" } th { "95 % interval" } th { "each search's figure" } th { "requests per CPU-second at capacity" } th { "target peak memory at capacity" } th { "limited by (the step that ended its search)" } th { "searches" } } }
                tbody {
                    @for c in capacity {
                        @for t in &c.targets {
                            tr {
                                td { (c.setting) }
                                th { (t.target) }
                                td.num { @if let Some(m) = t.figure() { (format!("{m:.0}")) } @else { "—" } }
                                td.num { @if let Some((lo, hi)) = t.agreed().and_then(|a| Some((a.low?, a.high?))) { (format!("{lo:.0}–{hi:.0}")) } @else { "none" } }
                                td { @for s in &t.searches { @if let Some(c) = s.capacity { (format!("{c:.0}")) } @else { (s.status.as_str()) } br; } }
                                td.num { @if let Some(v) = t.per_cpu_second { (format!("{v:.0}")) } @else { "—" } }
                                td.num { @if let Some(b) = t.peak_rss_bytes { (crate::tables::format_bytes(b as f64)) } @else { "—" } }
                                td.why { @if let Some((rate, f)) = &t.limit { (super::why_at(&crate::experiment::thousands(*rate), f)) } @else { "—" } }
                                td { @for s in &t.searches { a href={ "../" (crate::pages::search_path(&s.id)) } { (s.status.as_str()) } " " } }
                            }
                        }
                    }
                }
            }
        }
        @for c in capacity { (charts(&c.charts)) }
    }
}

/// The fixed loads' answers, a sentence a setting with what limited each target.
fn fixed_answers(fig: &ExperimentFigures, capacity: &[SettingCapacity]) -> Markup {
    html! {
        h2 { @if capacity.is_empty() && fig.gates.is_empty() { "Answers" } @else if fig.gates.is_empty() { "Answers: at fixed rates" } @else { "Beside the gate: the runs, setting by setting" } }
        ul.answers { @for s in &fig.settings { li { (fig.sentence(s)) (evidence(fig, s)) } } }
    }
}

/// The figures a matrix cell shows.
const MATRIX: [Metric; 7] = [
    Metric::Throughput,
    Metric::P50,
    Metric::P99,
    Metric::Max,
    Metric::ErrorRate,
    Metric::Cpu,
    Metric::PeakRss,
];

/// Targets by settings, each cell its runs' medians and spreads.
fn matrix(fig: &ExperimentFigures) -> Markup {
    html! {
        h2 { "The matrix" }
        p.meta { "Each cell: the median over repetitions, and (lowest–highest) when they differ. Latencies are corrected (from intended send times), in ms; throughput counts successful responses per second; CPU is the target's process tree (100 = one core); memory is its RSS, or its processes' PSS summed where it is a tree of several (a cluster's workers share pages). The database and the watched groups are never counted in a target's figures: they are beside the matrix." }
        div.scroll.matrix {
            table {
                thead { tr { th { "target" } @for s in &fig.settings { th { (setting_text(s)) } } } }
                tbody {
                    @for target in &fig.record.definition.targets {
                        tr {
                            th { span.swatch style={ "background:" (css_color(fig.color_of(target))) } {} (target) }
                            @for s in &fig.settings {
                                @let cell = fig.cells.iter().find(|c| &c.target == target && &c.setting == s);
                                @match cell {
                                    Some(c) if !c.runs.is_empty() => td {
                                        @for m in MATRIX {
                                            small { (m.title()) } ": " (spread_text(m, c.spread(m))) br;
                                        }
                                        @if !c.failed.is_empty() { span.badge.failed { (c.failed.len()) " failed" } }
                                    },
                                    Some(c) if !c.failed.is_empty() => td.failed { details { summary { "FAILED: " (short(&c.failed[0].1)) } (c.failed[0].1) } },
                                    _ => td { "not run yet" },
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// What ran beside each target (a database, watched groups), never counted in its figures.
fn beside(fig: &ExperimentFigures) -> Markup {
    let beside: Vec<(&CellFigures, Group)> = fig
        .cells
        .iter()
        .flat_map(|c| c.beside().into_iter().map(move |g| (c, g)))
        .collect();
    html! {
        @if !beside.is_empty() {
        h2 { "Beside the targets" }
        p.meta { "What ran beside each target, each a group of its own: its figures are never counted in the target's. CPU is the group's mean over the load (100 = one core); memory its peak, PSS where its processes share pages (a database's backends share its buffers: RSS summed would count them once in each)." }
        div.scroll {
            table {
                thead { tr { th { "setting" } th { "target" } th { "group" } th { "CPU, mean (%)" } th { "peak memory" } } }
                tbody {
                    @for (c, g) in &beside {
                        tr {
                            td { (setting_text(&c.setting)) }
                            td { (c.target) }
                            th { (g.name) }
                            td.num { (spread_text(Metric::Cpu, g.cpu)) }
                            td.num {
                                @if let Some(m) = g.memory {
                                    (crate::tables::format_bytes(m.median))
                                    @if let Some(counted) = g.counted { " " small { "(" (counted.name()) ")" } }
                                } @else { "—" }
                            }
                        }
                    }
                }
            }
        }
        }
    }
}

/// The figures the write-ups tabled.
const WRITEUPS: [Metric; 6] = [
    Metric::Throughput,
    Metric::Mean,
    Metric::Stdev,
    Metric::P99,
    Metric::ErrorRate,
    Metric::PerThousand,
];

/// The cells as the write-ups tabled them.
fn as_tabled(fig: &ExperimentFigures) -> Markup {
    html! {
        h2 { "As the write-ups tabled it" }
        p.meta { "RPS (successful responses per second), mean latency and its standard deviation (002's tables), error rate and time per 1,000 requests (003's slides)." }
        div.scroll {
            table {
                thead { tr { th { "setting" } th { "target" } @for m in WRITEUPS { th { (m.title()) } } } }
                tbody {
                    @for c in &fig.cells {
                        tr {
                            td { (setting_text(&c.setting)) }
                            td { (c.target) }
                            @if c.runs.is_empty() {
                                td.failed colspan=(WRITEUPS.len()) {
                                    @if let Some((_, why)) = c.failed.first() { details { summary { "FAILED: " (short(why)) } (why) } } @else { "not run yet" }
                                }
                            } @else {
                                @for m in WRITEUPS { td.n { (spread_text(m, c.spread(m))) } }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// One setting: its answer, links to its comparison and its runs, and its charts.
fn at_setting(
    fig: &ExperimentFigures,
    links: &ExperimentLinks,
    setting: &Setting,
    list: &[Chart],
) -> Markup {
    let profiled = fig.cells_of(setting).iter().any(|c| {
        c.runs
            .iter()
            .any(|r| r.probes.iter().any(|p| p.profile.is_some()))
    });
    html! {
        h2 { "At " (setting_text(setting)) }
        p { (fig.sentence(setting)) } (evidence(fig, setting))
        p.meta {
            @if let Some(path) = links.comparisons.get(&setting_text(setting)) {
                a href={ "../" (path) } {
                    "Compare these targets' runs"
                    @if profiled { ", and where their CPU went (flame graphs)" }
                } " · "
            }
            "Runs: "
            @for c in fig.cells_of(setting) {
                @for (i, run) in c.runs.iter().enumerate() {
                    a.chip href={ "../" (page_of(run)) } { (c.target) " #" (run.labels.get(store::vocabulary::label::REPETITION).cloned().unwrap_or_else(|| (i + 1).to_string())) }
                }
                @for (run, _) in &c.failed {
                    a.chip href={ "../" (page_of(run)) } { (c.target) " (" (run.status.as_str()) ")" }
                }
            }
        }
        (charts(list))
    }
}

/// Every complete run's summary, as the showdown write-up printed its runs.
fn summaries(fig: &ExperimentFigures, done: usize) -> Markup {
    html! {
        h2 { "Every run's summary" }
        details {
            summary { "Vegeta-style summaries of the " (done) " complete runs (the showdown write-up's shape)" }
            @for c in &fig.cells {
                @for run in &c.runs {
                    h3 { a href={ "../" (page_of(run)) } { (run.name) } }
                    pre { (run.summary.to_text()) }
                }
            }
        }
    }
}

/// What each target was held to before it was measured, and how it did.
fn verification(fig: &ExperimentFigures) -> Markup {
    let r = &fig.record;
    html! {
        @if !r.verification.is_empty() {
            h2 { "Verification" }
            p.meta { "Before it is measured, each target is held to targets/CONTRACT.md (the built-in targets) or to the checks its experiment file declares (servers Showdown did not write). A target that fails is not measured." }
            div.scroll {
                table {
                    thead { tr { th { "target" } th { "held to" } th { "result" } th { "checks" } } }
                    tbody {
                        @for v in &r.verification {
                            tr {
                                td { (v.target) }
                                td { (v.against.text()) }
                                td { @if v.passed { span.badge.complete { "passed" } } @else { span.badge.failed { "failed" } } }
                                td { @for (check, outcome) in &v.checks { (check) ": " (outcome) br; } }
                            }
                        }
                    }
                }
            }
        }
    }
}
