//! The HTML pages, from maud templates (every piece of text from a run is escaped).
//!
//! Pages are static and self-contained: one HTML file each, its CSS and its SVG charts inline,
//! no script and nothing fetched from the network, so that a page opens from disk, from any
//! static host, or from an e-mail attachment. Links between pages are relative.
//!
//! The site's layout:
//!
//! ```text
//! index.html                  every run, grouped by experiment
//! runs/<id>.html              one run
//! groups/<slug>.html          a run group's shards, merged (several gun hosts)
//! compare/<slug>.html         a comparison (chosen with --compare, or one per experiment)
//! labels/<slug>.html          the runs carrying one label
//! experiments/<slug>.html     an experiment: its question answered from its cells
//! searches/<id>.html          a capacity search: what it found, its steps
//! history/<slug>.html         an experiment's sittings side by side, the changes across them
//! ```

use std::collections::BTreeMap;

use analysis::summary::SummaryText as _;
use maud::{html, Markup, PreEscaped};
use store::summary::format_ns;

use crate::charts::Chart;
use crate::compare::Comparison;
use crate::figures::{Headline, ProbeFigures, RunFigures};
use crate::model::heatmap::HeatmapData;
use crate::model::{color, css_color};
use crate::tables::{self, format_bytes, Cell, Table};

mod experiment;
mod history;
mod layout;
mod search;

pub use crate::paths::{
    comparison_path, experiment_comparison_title, experiment_path, group_path, history_path,
    label_path, page_of, run_path, search_path, slug,
};
pub use experiment::{experiment_page, ExperimentLinks};
pub use history::{history_page, HistoryCharts};
pub use search::{finding, search_page};

use layout::{charts, label_chips, layout, runs_table, status, table};

/// What the index lists.
#[derive(Debug, Clone, Default)]
pub struct SiteIndex {
    pub runs: Vec<Headline>,
    /// Comparisons and their pages: (title, path, number of runs).
    pub comparisons: Vec<(String, String, usize)>,
    /// Run groups: (name, shards).
    pub groups: Vec<(String, usize)>,
    /// Experiments run from a file: (name, question, page).
    pub experiments: Vec<(String, String, String)>,
    /// Experiments' histories across sittings: (name, page).
    pub histories: Vec<(String, String)>,
    /// Capacity searches: (name, what they found, page).
    pub searches: Vec<(String, String, String)>,
    /// Pages that could not be drawn: (what, why). Shown on the index, never silently dropped.
    pub failures: Vec<(String, String)>,
}

/// The site's index: what could not be drawn, the labels, the experiments, searches,
/// comparisons and groups, then every run by experiment.
pub fn index(site: &SiteIndex) -> Markup {
    let body = html! {
        h1 { "Runs" }
        p.meta { (site.runs.len()) " runs kept in the store, newest last in each experiment." }
        @if !site.failures.is_empty() {
            div.warnings {
                h2 { "Pages that could not be drawn" }
                ul { @for (what, why) in &site.failures { li { (what) ": " (why) } } }
            }
        }
        @if site.runs.is_empty() {
            p { "No runs yet: run " code { "cargo run -p loadgen -- demo" } " or " code { "loadgen attack" } ", then draw the pages again." }
        }
        (index_links(site))
        (index_runs(site))
    };
    layout("Runs", "", body)
}

/// The index's links: by label, then each experiment, search, comparison and run group.
fn index_links(site: &SiteIndex) -> Markup {
    let mut labels: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for h in &site.runs {
        for (k, v) in h
            .labels
            .iter()
            .filter(|(k, _)| !store::vocabulary::label::is_bookkeeping(k))
        {
            *labels.entry((k.as_str(), v.as_str())).or_default() += 1;
        }
    }
    html! {
        @if !labels.is_empty() {
            p { "By label: " @for ((k, v), n) in &labels { a.chip href=(label_path(k, v)) { (k) "=" (v) " (" (n) ")" } } }
        }
        @if !site.experiments.is_empty() {
            h2 { "Experiments" }
            ul { @for (name, question, path) in &site.experiments { li { a href=(path) { (name) } " — " (question)
                @if let Some((_, history)) = site.histories.iter().find(|(n, _)| n == name) { " · " a href=(history) { "its history" } }
            } } }
        }
        @if !site.searches.is_empty() {
            h2 { "Capacity searches" }
            ul { @for (name, found, path) in &site.searches { li { a href=(path) { (name) } " — " (found) } } }
        }
        @if !site.comparisons.is_empty() {
            h2 { "Comparisons" }
            ul { @for (title, path, n) in &site.comparisons { li { a href=(path) { (title) } " — " (n) " runs" } } }
        }
        @if !site.groups.is_empty() {
            h2 { "Run groups (several gun hosts)" }
            ul { @for (name, n) in &site.groups { li { a href=(group_path(name)) { (name) } " — " (n) " shards, merged" } } }
        }
    }
}

/// Every run, by experiment: warm-ups and the runner's bookkeeping labels hidden until asked
/// (plain CSS, so it works with JavaScript off); the filter and the sorting need the script.
fn index_runs(site: &SiteIndex) -> Markup {
    let mut experiments: BTreeMap<Option<&str>, Vec<Headline>> = BTreeMap::new();
    for h in &site.runs {
        experiments
            .entry(h.experiment.as_deref())
            .or_default()
            .push(h.clone());
    }
    let warmups = site
        .runs
        .iter()
        .filter(|h| {
            store::vocabulary::Phase::of(&h.labels) == Some(store::vocabulary::Phase::Warmup)
        })
        .count();
    html! {
        @if !site.runs.is_empty() {
            @if warmups > 0 {
                input #show-warmups type="checkbox";
                label for="show-warmups" { "show the " (warmups) " warm-ups" }
                " · "
            }
            input #show-bookkeeping type="checkbox";
            label for="show-bookkeeping" { "show the runner's bookkeeping labels" }
            div.index-controls { input #filter type="search" hidden placeholder="filter runs: name, experiment, label (rate=3000)…" aria-label="filter runs"; }
        }
        div.listing {
        @for (experiment, runs) in &experiments {
            @match experiment {
                Some(name) => {
                    h2 { "Experiment " (name) }
                    @if site.experiments.iter().any(|(n, _, _)| n == name) {
                        p { a href=(experiment_path(name)) { "Its page: the question, answered from these runs" } }
                    } @else if runs.len() > 1 {
                        p { a href=(comparison_path(&experiment_comparison_title(name))) { "Compare these " (runs.len()) " runs" } }
                    }
                }
                None => h2 { "Runs without an experiment" },
            }
            (runs_table(runs, ""))
        }
        }
    }
}

/// The runs carrying one label, with the path of the comparison of exactly these runs.
pub fn label_page(key: &str, value: &str, runs: &[Headline], comparison: Option<&str>) -> Markup {
    let title = format!("Runs labelled {key}={value}");
    let body = html! {
        h1 { (title) }
        p.meta {
            (runs.len()) " runs. "
            @if let Some(path) = comparison {
                a href={ "../" (path) } { "Compare them" }
            } @else if runs.len() > 1 {
                "Too many to compare at once: pick some with " code { "report --compare ID,ID,…" } "."
            }
        }
        (runs_table(runs, "../"))
    };
    layout(&title, "../", body)
}

/// A probe's flame graphs beside its run's page: the whole attack window's (its SVG and its
/// data), and the data of the one that follows the charts' window (a script).
#[derive(Debug, Clone, Default)]
pub struct Flames {
    pub whole: Option<FlameFile>,
    pub by_window: Option<String>,
}

/// A flame graph beside its page, named relative to it: its SVG, which the page embeds, and its
/// data (a script that files it under its own name), which the page's script draws with a zoom
/// and a search.
#[derive(Debug, Clone, Default)]
pub struct FlameFile {
    pub svg: String,
    pub data: String,
}

/// A flame graph small enough to show inline (a gate's, a knee's): its SVG and its data (JSON)
/// in the page, and the same SVG as a file beside it, named relative to it.
#[derive(Debug, Clone, Default)]
pub struct FlameGraph {
    pub file: String,
    pub svg: String,
    pub json: String,
}

/// `f` embedded from beside the page, drawn again from its data by the page's script.
fn flame_file(f: &FlameFile, what: &str) -> Markup {
    html! {
        figure.flame-figure data-src=(f.data) data-key=(f.data) {
            object.flame type="image/svg+xml" data=(f.svg) { a href=(f.svg) { (what) } }
        }
    }
}

/// `g` shown inline, drawn again from its data by the page's script; `class` names the kind,
/// `caption` says what it shows.
pub fn flame_inline(g: &FlameGraph, class: &str, caption: &str) -> Markup {
    html! {
        figure class=(format!("flame-figure {class}")) {
            (PreEscaped(&g.svg))
            script type="application/json" class="flame-data" { (PreEscaped(&g.json)) }
            figcaption { (caption) " " a href=(g.file) { "The same graph as an SVG file" } "." }
        }
    }
}

/// What the page's script adds to a flame graph.
const FLAME_TOOLS: &str = "With the page's script, click a box to zoom to it (the root, or \"Whole graph\", to zoom out) and type in the search box to mark the functions whose names hold it, with their share of the whole.";

/// A run's page (or a run group's, merged): a plan of sections.
pub fn run_page(
    run: &RunFigures,
    load: &[Chart],
    probes: &[Vec<Chart>],
    flames: &[Flames],
) -> Markup {
    let body = html! {
        (run_header(run))
        (validity_section(run))
        h2 { "Summary" }
        pre { (run.summary.to_text()) }
        @if !run.guns.is_empty() { (guns_section(run)) }
        h2 { "Latency percentiles" }
        p.meta {
            (run.summary.latency.corrected.count) " requests completed. Corrected latency counts from each request's intended send time (what users of an open system see); service time from its actual send (what wrk and hey show). HdrHistogram, 3 significant digits."
        }
        (table(&tables::percentiles(run)))
        h2 { "Load" }
        (charts(load))
        (heatmaps(run))
        @for (i, (probe, charts_of_probe)) in run.probes.iter().zip(probes).enumerate() {
            (probe_section(run, i, probe, charts_of_probe, flames.get(i).cloned().unwrap_or_default()))
        }
        @if run.probes.is_empty() {
            h2 { "Target" }
            p { "No probe watched the target in this run: add " code { "--probe HOST:PORT" } " to see its CPU, memory, threads, FDs and sockets on the same timeline." }
        }
        h2 { "Configuration" }
        (configuration(run))
    };
    layout(&run.name, "../", body)
}

/// The run's name, id, start, status, experiment and shard, its labels and its warnings.
fn run_header(run: &RunFigures) -> Markup {
    html! {
        h1 { (run.name) }
        p.meta {
            "run " code { (run.id) } " · started " (run.started) " · " (status(run.status.as_str()))
            @if let Some(e) = &run.experiment { " · experiment " (e) }
            @if let Some(s) = &run.shard {
                @if s.group == run.id {
                    " · " (s.count) " gun hosts' shards, merged"
                } @else {
                    " · shard " (s.index + 1) "/" (s.count) " of " a href={ "../" (group_path(&s.group)) } { "group " (s.group) }
                }
            }
            @if let Some(why) = &run.stop_reason { " · stopped: " (why) }
            br;
            (label_chips(&run.labels, "../"))
        }
        @if !run.warnings.is_empty() {
            div.warnings {
                h2 { "⚠ Warnings" }
                ul { @for w in &run.warnings { li { (w) } } }
            }
        }
    }
}

/// The run's verdict on the machine that made it, and what it rests on.
fn validity_section(run: &RunFigures) -> Markup {
    let Some(v) = &run.summary.validity else {
        return html! {};
    };
    let class = match v.verdict {
        store::summary::Verdict::Valid => "validity valid",
        store::summary::Verdict::Degraded => "validity degraded",
        store::summary::Verdict::NotMeasurable => "validity not-measurable",
    };
    html! {
        section class=(class) {
            h2 { "Validity" }
            p { strong { (analysis::validity::verdict_text(v)) } }
            p.meta { (analysis::validity::evidence_text(&run.summary, v)) }
            @if v.floor.is_none() {
                p.meta { "Judged on the run alone: what this machine's clock and wake-ups cost was not measured with it (a run kept before it was, or shards merged)." }
            }
            @match &run.selftest {
                Some(t) => p.meta { (analysis::validity::selftest_text(t)) },
                None => p.meta { "No self-test of " (run.gun_host.hostname) " is kept: " code { "loadgen selftest" } " measures what it can time (about 30 seconds), and this page then cites it." },
            }
        }
    }
}

/// A merged run's guns: each one's page, their start's skew, their figures side by side.
fn guns_section(run: &RunFigures) -> Markup {
    html! {
        h2 { "Guns" }
        p.meta {
            "The run's " (run.guns.len()) " gun hosts each sent one request in " (run.guns.len()) " of one schedule from one start; the figures above are their histograms added, exactly. The cell counts only when every gun kept its schedule. Each gun's own page: "
            @for (i, g) in run.guns.iter().enumerate() {
                @if i > 0 { ", " }
                a href={ "../" (run_path(&g.id)) } { (g.labels.get(store::vocabulary::label::GUN).cloned().unwrap_or_else(|| format!("shard {}", i + 1))) }
            }
            "."
        }
        @if let Some((first, last)) = tables::guns_skew(run) {
            p.meta.skew {
                "Skew: the guns' first sends left " (fmt_ms(first)) " to " (fmt_ms(last)) " after T0, a spread of " strong { (fmt_ms(last - first)) } ". Each gun's T0 is the group's start on its own clock, corrected by the offset measured before the first cell (its \"clock\"); a spread beyond the offsets' uncertainty is the guns' own lateness."
            }
        }
        (table(&tables::guns(run)))
    }
}

/// The latency heatmaps, corrected beside service time, where the run has them: each one's
/// SVG (the picture for print and without script) and, beside it, its data, from which the
/// page's script draws it again (a cell named on hover, the columns of the charts' window).
fn heatmaps(run: &RunFigures) -> Markup {
    let maps: Vec<(HeatmapData, String, String)> = run
        .load
        .heatmaps
        .iter()
        .filter_map(|m| m.data())
        .map(|d| {
            let title = format!("{} latency, count by time and latency", d.kind);
            let svg = crate::heatmap::svg(&d, &title);
            (d, title, svg)
        })
        .collect();
    html! {
        @if !maps.is_empty() {
            h2 { "Latency heatmap" }
            p.meta { "Every completed request in one cell: its slice of the run (an interval) and its latency (eight bins a decade, log scale); the darker, the more requests. Percentile lines hide what this shows: two modes, a slow tail that comes and goes. Hover a cell for its count and its ranges; a zoom on the charts above keeps only the heatmaps' columns in its window. Corrected latency (from the intended send) beside service time (from the actual send)." }
            div.charts {
                @for (data, title, svg) in &maps {
                    figure.heatmap id={ "heatmap-" (data.kind) } data-title=(title) {
                        div.plot { (PreEscaped(svg)) }
                        // The data the page's script draws it from (`<` escaped by
                        // `HeatmapData::json`).
                        script.heatmap-data type="application/json" { (PreEscaped(data.json())) }
                    }
                }
            }
        }
    }
}

/// What probe `i` saw: its facts, its charts, its profile, its events.
fn probe_section(
    run: &RunFigures,
    i: usize,
    probe: &ProbeFigures,
    charts_of_probe: &[Chart],
    flames: Flames,
) -> Markup {
    html! {
        h2 {
            @match probe.host.role {
                probe::sample::Role::Target => { "Target" }
                _ => { (probe.watching()) }
            }
            ", as probe " (i + 1) " saw it: " (probe.label)
        }
        (probe_facts(probe, run.system.as_ref().filter(|_| run.struggled())))
        (charts(charts_of_probe))
        (profile_section(probe, flames))
        @if !probe.events.is_empty() {
            details {
                summary { (probe.events.len()) @if probe.events.len() == 1 { " event" } @else { " events" } }
                table { @for (t, what) in &probe.events { tr { td.n { (format!("{t:.3}")) " s" } td { (what) } } } }
            }
        }
    }
}

/// Where the tree's CPU went: the flame graphs (files beside the page), the top functions, and
/// how the profile's CPU compares with the sampler's; or why there is none.
fn profile_section(p: &ProbeFigures, flames: Flames) -> Markup {
    let unavailable = p.events.iter().find(|(_, e)| e.starts_with("no profile: "));
    let Some(f) = &p.profile else {
        return html! {
            h3 { "Where its CPU went" }
            @if let Some((_, why)) = unavailable {
                p { (why) }
            } @else if p.host.profile_hz.is_some() {
                p { "The probe profiled, but none of its profiles fell in the attack window." }
            } @else {
                p.meta { "No profile: start the probe with " code { "--profile" } " (or " code { "profile = true" } " in an experiment file) to see the target's on-CPU call stacks here, as a flame graph, beside these charts." }
            }
        };
    };
    let sampled_cpu_s = cpu_seconds(&p.cpu.points);
    if f.samples == 0 {
        return html! {
            h3 { "Where its CPU went" }
            p { "The probe profiled (" (f.records) " profiles in the attack window), but the target was on no CPU when the kernel sampled: no stacks to draw." }
        };
    }
    html! {
        h3 { "Where its CPU went" }
        p.meta {
            (f.samples) " stacks sampled in the attack window (" (f.hz) " Hz per CPU, kernel and user frames), standing for "
            (format!("{:.2}", f.cpu_s)) " s of CPU"
            @if let Some(s) = sampled_cpu_s { " (the CPU clock says " (format!("{s:.2}")) " s)" }
            "."
            @if f.lost > 0 { " " strong { (f.lost) " samples were lost" } " (the probe read the kernel's ring late): shares are of what was kept." }
            " Frames come from frame pointers: a function built without them hides its caller; an address without a symbol is shown as its file and offset, or hex. The " code { "cpu-clock" } " event is a timer: time the kernel spends with interrupts off is charged where it turns them on again (" code { "_raw_spin_unlock_irqrestore_[k]" } " and the like)."
        }
        @if let Some(f) = &flames.whole {
            (flame_file(f, "the flame graph"))
            p.meta { "Each box is a function, as wide as its share of the samples; above it, what it called. Process and thread at the bottom, kernel frames end in " code { "_[k]" } ". " (FLAME_TOOLS) " " a href=(f.svg) { "Open it alone" } "." }
        }
        @if let Some(file) = &flames.by_window {
            details.flame-window data-src=(file) data-key=(file) {
                summary { "The stacks of the charts' window, alone or against the rest of the run" }
                p.meta { "Drag on any chart of the page to pick a window (a freeze, a step); this graph then shows the stacks sampled in it, or, against the rest, each function coloured by how its share of the samples changed: red, a larger share in the window; blue, a smaller one. The profile comes in slices of one record (a second; several merged on a long run): a slice counts when its middle is in the window. Drawn by the page's script from " code { (file) } ", beside the page." }
                div.flame-live {}
            }
        }
        @if !f.top.is_empty() {
            div.scroll { table {
                thead { tr { th { "function" } th { "self" } th { "total" } } }
                tbody { @for t in &f.top { tr {
                    td { code { (t.name) } }
                    td.n { (format!("{:.1} %", f.percent(t.self_samples))) }
                    td.n { (format!("{:.1} %", f.percent(t.total_samples))) }
                } } }
            } }
            p.meta { "Self: samples in the function's own code; total: with what it called. Shares of the tree's samples in the attack window." }
        }
    }
}

/// Where the runs' CPU went, side by side: the top functions' own shares in each profiled run,
/// and the differential flame graphs against the first.
fn profile_comparison(c: &Comparison, names: &[String], diffs: &[(usize, FlameFile)]) -> Markup {
    let profiles: Vec<(usize, &crate::profile::ProfileFigures)> = c
        .runs
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            r.probes
                .first()
                .and_then(|p| p.profile.as_ref())
                .map(|p| (i, p))
        })
        .collect();
    if profiles.is_empty() {
        return html! {};
    }
    // The functions that are in any run's top ten, by their largest share.
    let mut functions: Vec<(String, f64)> = Vec::new();
    for (_, p) in &profiles {
        for t in p.top.iter().take(10) {
            let share = p.percent(t.self_samples);
            match functions.iter_mut().find(|(n, _)| *n == t.name) {
                Some(f) => f.1 = f.1.max(share),
                None => functions.push((t.name.clone(), share)),
            }
        }
    }
    functions.sort_by(|a, b| b.1.total_cmp(&a.1));
    // Each run's own shares, worked out once for the whole table.
    let own: Vec<std::collections::HashMap<&str, f64>> =
        profiles.iter().map(|(_, p)| p.own_shares()).collect();
    html! {
        h2 { "Where their CPU went" }
        p.meta { "Each function's own share of the target's sampled stacks in the attack window (its first probe's profile). A function that takes a larger share in one run is where that run spends what the other does not." }
        div.scroll { table {
            thead { tr { th { "function" } @for (i, _) in &profiles { th { "#" (i + 1) } } } }
            tbody { @for (name, _) in &functions { tr {
                td { code { (name) } }
                @for shares in &own { td.n { (format!("{:.1} %", shares.get(name.as_str()).copied().unwrap_or(0.0))) } }
            } } }
        } }
        @for (i, f) in diffs {
            h3 { "#" (i + 1) " " (names[*i]) " against #" (profiles[0].0 + 1) " " (names[profiles[0].0]) }
            (flame_file(f, "the differential flame graph"))
            p.meta { "The second run's stacks, by code path (all processes and threads together), each path's share of its run's samples against the first's: red where its share (with what it called) grew, blue where it shrank. " (FLAME_TOOLS) " " a href=(f.svg) { "Open it alone" } "." }
        }
    }
}

/// CPU seconds under a CPU % series (100 = one core), from each point's interval.
fn cpu_seconds(points: &[(f64, f64)]) -> Option<f64> {
    let s: f64 = points
        .windows(2)
        .filter(|w| w[1].0 > 0.0)
        .map(|w| (w[1].0 - w[0].0) * w[1].1 / 100.0)
        .sum();
    (points.len() > 1).then_some(s)
}

/// What limited a server: its short sentence, its evidence one click away (a `details` works
/// without JavaScript and prints open).
pub(crate) fn why(f: &analysis::saturation::Finding) -> Markup {
    html! {
        details.finding {
            summary { (f.short) }
            p { (f.evidence) }
        }
    }
}

/// The same, at the rate of the step it was read at (as the page writes a rate: "12,200").
pub(crate) fn why_at(rate: &str, f: &analysis::saturation::Finding) -> Markup {
    html! {
        details.finding {
            summary { "at " (rate) " req/s: " (f.short) }
            p { (f.evidence) }
        }
    }
}

/// The probe's facts; `limited`: the target and its database, when the server fell behind in
/// this run, so what limited it is said (with the target's facts).
fn probe_facts(p: &ProbeFigures, limited: Option<&analysis::system::System>) -> Markup {
    let target = p.host.role == probe::sample::Role::Target;
    html! {
        dl.facts {
            dt { "host" } dd { (p.host.hostname) ", " (p.host.cpus) " cores, " (format_bytes(p.host.mem_total_bytes as f64)) ", kernel " (p.host.kernel) }
            dt { "watching" } dd { (p.watching()) " (" (p.host.selector) ")" }
            dt { "samples" } dd { (p.samples) ", every " (format_ns(p.host.interval_ns)) " (probe " (p.host.probe_version) ")" }
            @if let Some(c) = &p.clock {
                dt { "clock" } dd { "aligned with the gun's to ±" (format_ns(c.uncertainty_ns)) " (offset " (format!("{:+.3}", c.offset_ns as f64 / 1e6)) " ms)" }
            }
            @match (limited.filter(|_| target), &p.saturation) {
                (Some(system), _) => { dt { "limited by" } dd { (why(&system.finding())) } }
                (None, Some(s)) => { dt { "saturation" } dd { (s.figures()) } }
                (None, None) => {}
            }
            @if let Some(a) = &p.activity {
                dt { "backends" } dd { (a.figures()) " (means of " (a.readings) " readings of pg_stat_activity)" }
            }
            @if let Some(m) = p.memory {
                dt { "peaks" } dd {
                    span title=(m.how()) { "memory " (format_bytes(m.bytes as f64)) " (" (m.counted.name()) ")" } ", "
                    @match p.peak_fds {
                        Some(fds) => { (fds) " FDs" }
                        None => { "FDs not readable by the probe" }
                    }
                }
            }
        }
    }
}

/// How close the sends came to Poisson, when they were meant to be.
fn arrival_fit(run: &RunFigures) -> String {
    run.summary.generator.arrivals.map_or(String::new(), |f| {
        format!(
            "; the gaps between sends were within {:.1} % of exponential at every length ({}, KS over {} gaps)",
            f.ks * 100.0,
            if f.as_intended() { "as intended" } else { "NOT as intended" },
            f.gaps
        )
    })
}

fn configuration(run: &RunFigures) -> Markup {
    let c = &run.config;
    let g = &run.gun_host;
    let details = serde_json::to_string_pretty(&c.details).unwrap_or_default();
    html! {
        dl.facts {
            dt { "target" } dd { (c.target) }
            dt { "load" } dd { (c.load) }
            dt { "loop" } dd { @if c.open_loop { "open (latency from intended send times)" } @else { "closed (latencies hide queueing)" } }
            dt { "protocol" } dd { @if c.h2 { "HTTP/2" } @else { "HTTP/1.1" } }
            dt { "threads" } dd { (c.threads) }
            dt { "max connections" } dd { (c.max_connections) }
            dt { "timeout" } dd { (format_ns(c.timeout_ns)) }
            @if c.batch_ns > 0 { dt { "batch" } dd { (format_ns(c.batch_ns)) } }
            @if let Some(a) = c.arrival { dt { "arrivals" } dd { (a.text()) (arrival_fit(run)) } }
            dt { "command" } dd { code { (redact::command_line(&c.command_line).join(" ")) } }
            dt { "gun host" } dd { (g.hostname) ", " (g.cpus) " cores, " (format_bytes(g.mem_total_bytes as f64)) ", kernel " (g.kernel) }
        }
        details { summary { "Everything else loadgen recorded" } pre { (details) } }
    }
}

pub fn comparison_page(c: &Comparison, list: &[Chart], diffs: &[(usize, FlameFile)]) -> Markup {
    let names = c.run_names();
    let t = crate::compare::table(c);
    let body = html! {
        h1 { "Comparison: " (c.title) }
        p.meta { (c.runs.len()) " runs. Ratios are against the first run, " (names.first().map(String::as_str).unwrap_or("")) "; green is better, red worse." }
        div.scroll {
            table {
                thead { tr { th { "run" } th { "load" } th { "labels" } th { "status" } } }
                tbody {
                    @for (i, r) in c.runs.iter().enumerate() {
                        tr {
                            td { span.swatch style={ "background:" (css_color(color(i))) } {} "#" (i + 1) " " a href={ "../" (page_of(r)) } { (names[i]) } }
                            td { (r.config.load) }
                            td { (label_chips(&r.labels, "../")) }
                            td { (status(r.status.as_str())) @if !r.warnings.is_empty() { " " span.badge.warn { "⚠ " (r.warnings.len()) } } }
                        }
                    }
                }
            }
        }
        (comparison_table(c, &t))
        (charts(list))
        (profile_comparison(c, &names, diffs))
    };
    layout(&format!("Comparison: {}", c.title), "../", body)
}

/// The comparison table as a page shows it: a column per run, headed by its number and colour
/// (the list above names them), each value with its ratio to the first run's under it.
fn comparison_table(c: &Comparison, t: &Table) -> Markup {
    // Columns: figure, unit, run 1, then value and ratio for each further run.
    let value = |i: usize| if i == 0 { 2 } else { 2 * i + 1 };
    html! {
        div.scroll {
            table {
                thead {
                    tr {
                        th { "figure" }
                        @for i in 0..c.runs.len() {
                            th { span.swatch style={ "background:" (css_color(color(i))) } {} "#" (i + 1) }
                        }
                    }
                }
                tbody {
                    @for row in &t.rows {
                        tr {
                            td { (row[0].display()) }
                            @for i in 0..c.runs.len() {
                                @let ratio = if i > 0 { row.get(value(i) + 1) } else { None };
                                @let class = match ratio.and_then(Cell::verdict) {
                                    Some(true) => "n better",
                                    Some(false) => "n worse",
                                    None => "n",
                                };
                                td class=(class) {
                                    (row.get(value(i)).map(Cell::display).unwrap_or_default())
                                    @if let Some(r) = ratio.filter(|r| !matches!(r, Cell::Missing)) {
                                        br; small { (r.display()) }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Nanoseconds as milliseconds, two decimals, signed when negative.
fn fmt_ms(ns: i64) -> String {
    format!("{:.2} ms", ns as f64 / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_safe_and_distinct() {
        assert!(slug("Node vs Go @ 2000/s").starts_with("node-vs-go-2000-s-"));
        assert_ne!(slug("a b"), slug("a-b"));
        let s = slug("../../etc/passwd<script>");
        assert!(
            s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'),
            "{s}"
        );
        assert_eq!(slug("x"), slug("x"));
        // 128 bits of the name's hash: 32 hex digits after the readable part.
        let hash = slug("x").rsplit('-').next().unwrap_or_default().to_string();
        assert_eq!(hash.len(), 32, "{hash}");
    }
}
