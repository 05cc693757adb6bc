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
//! ```

use std::collections::BTreeMap;

use maud::{html, Markup, PreEscaped, DOCTYPE};
use store::summary::format_ns;

use crate::charts::Chart;
use crate::compare::Comparison;
use crate::figures::{Headline, ProbeFigures, RunFigures};
use crate::plot::{color, css_color};
use crate::tables::{self, format_bytes, Cell, Table};

/// A name for a file: lowercase letters, digits and dashes, then a short hash of the full text
/// so that two names that differ only in punctuation get two files.
pub fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
        if out.len() >= 48 {
            break;
        }
    }
    let trimmed = out.trim_end_matches('-');
    // FNV-1a: stable across versions and platforms, unlike std's hasher.
    let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{trimmed}-{:08x}", hash as u32)
}

/// A run's page: its id as the file name when the id is one Showdown makes (a UUID), else a
/// slug of it, so that an id from a foreign store (`../../x`) never leaves `runs/`.
pub fn run_path(id: &str) -> String {
    let plain = !id.is_empty()
        && id.len() <= 64
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        && !id.starts_with('-');
    if plain {
        format!("runs/{id}.html")
    } else {
        format!("runs/{}.html", slug(id))
    }
}

pub fn group_path(group: &str) -> String {
    format!("groups/{}.html", slug(group))
}

/// The page of a run as figures have it: a merged run group's, or a run's.
pub fn page_of(run: &RunFigures) -> String {
    match &run.shard {
        Some(s) if s.group == run.id => group_path(&s.group),
        _ => run_path(&run.id),
    }
}

pub fn label_path(key: &str, value: &str) -> String {
    format!("labels/{}.html", slug(&format!("{key}={value}")))
}

pub fn comparison_path(title: &str) -> String {
    format!("compare/{}.html", slug(title))
}

pub fn experiment_path(name: &str) -> String {
    format!("experiments/{}.html", slug(name))
}

/// The title of an experiment's automatic comparison.
pub fn experiment_comparison_title(experiment: &str) -> String {
    format!("experiment {experiment}")
}

const CSS: &str = r#"
:root { color-scheme: light; --fg: #1d1d1f; --muted: #666; --line: #ddd; --warn: #b3261e; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: #fff; }
header { padding: .6rem 1rem; border-bottom: 1px solid var(--line); background: #fafafa; }
header a { font-weight: 600; color: inherit; text-decoration: none; }
main { max-width: 1520px; margin: 0 auto; padding: 0 1rem 3rem; }
h1 { font-size: 1.5rem; margin: 1rem 0 .3rem; overflow-wrap: anywhere; }
h2 { font-size: 1.2rem; margin: 2rem 0 .6rem; border-bottom: 1px solid var(--line); padding-bottom: .2rem; overflow-wrap: anywhere; }
.meta { color: var(--muted); margin: 0 0 1rem; overflow-wrap: anywhere; }
a { color: #0b57d0; }
code, pre { font: 13px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
pre { background: #f6f6f6; padding: .8rem; overflow-x: auto; border-radius: 4px; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; margin: .4rem 0 1rem; }
th, td { padding: .25rem .6rem; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
th { background: #f6f6f6; font-weight: 600; white-space: nowrap; }
td.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.better { color: #146c2e; } td.worse { color: var(--warn); }
.warnings { border: 2px solid var(--warn); background: #fdecea; padding: .6rem 1rem; border-radius: 4px; margin: 1rem 0; }
.warnings h2 { color: var(--warn); border: 0; margin: 0 0 .3rem; }
.warnings li { margin: .2rem 0; }
.badge { display: inline-block; padding: 0 .45rem; border-radius: 3px; font-size: .85em; background: #eee; }
.badge.complete { background: #e3f4e6; color: #146c2e; } .badge.incomplete { background: #fff0d6; color: #8a5300; }
.badge.running { background: #eee; color: #444; } .badge.warn, .badge.failed { background: #fdecea; color: var(--warn); }
.question { font-size: 1.1rem; margin: .2rem 0 .6rem; }
ul.answers li { margin: .35rem 0; }
td.failed { color: var(--warn); }
.chip { display: inline-block; padding: 0 .45rem; margin: 0 .2rem .2rem 0; border: 1px solid var(--line); border-radius: 10px; font-size: .85em; text-decoration: none; }
.swatch { display: inline-block; width: 1.6em; height: .6em; border-radius: 2px; margin-right: .4em; vertical-align: middle; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(min(100%, 560px), 1fr)); gap: 1rem 1.5rem; }
figure { margin: 0; min-width: 0; }
figure .plot { overflow-x: auto; }
figure svg { display: block; width: 100%; min-width: 480px; height: auto; }
figcaption { color: var(--muted); font-size: .88em; margin-top: .2rem; }
.empty { border: 1px dashed var(--line); color: var(--muted); padding: 2rem 1rem; text-align: center; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; margin: .4rem 0 1rem; }
dl.facts dt { color: var(--muted); } dl.facts dd { margin: 0; overflow-wrap: anywhere; }
footer { color: var(--muted); font-size: .85em; text-align: center; padding: 1rem; border-top: 1px solid var(--line); }
"#;

/// A page: `root` is the way back to the site's root from the page (`""` or `"../"`).
fn layout(title: &str, root: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · Showdown" }
                style { (PreEscaped(CSS)) }
            }
            body {
                header { a href={ (root) "index.html" } { "Showdown" } " · " (title) }
                main { (body) }
                footer { "Drawn by Showdown report " (env!("CARGO_PKG_VERSION")) " from the runs in the store." }
            }
        }
    }
}

fn chart(c: &Chart) -> Markup {
    html! {
        figure id=(c.id) {
            @match &c.svg {
                // plotters escapes the text it writes into the SVG.
                Some(svg) => div.plot { (PreEscaped(svg)) },
                None => div.empty { (c.title) ": nothing to draw" },
            }
            figcaption { (c.caption) }
        }
    }
}

fn charts(list: &[Chart]) -> Markup {
    html! { div.charts { @for c in list { (chart(c)) } } }
}

fn status(status: &str) -> Markup {
    let text = match status {
        "running" => "running, or killed",
        other => other,
    };
    html! { span class={ "badge " (status) } { (text) } }
}

fn label_chips(labels: &BTreeMap<String, String>, root: &str) -> Markup {
    html! {
        @for (k, v) in labels {
            a.chip href={ (root) (label_path(k, v)) } { (k) "=" (v) }
        }
    }
}

/// A table; right-aligned numbers, ratios coloured by whether they are better.
fn table(t: &Table) -> Markup {
    html! {
        div.scroll {
            table {
                thead { tr { @for c in &t.columns { th { (c.title) } } } }
                tbody {
                    @for row in &t.rows {
                        tr { @for cell in row { (cell_html(cell)) } }
                    }
                }
            }
        }
    }
}

fn cell_html(cell: &Cell) -> Markup {
    let class = match (cell, cell.verdict()) {
        (Cell::Text(_) | Cell::Named { .. }, _) => None,
        (_, Some(true)) => Some("n better"),
        (_, Some(false)) => Some("n worse"),
        _ => Some("n"),
    };
    html! { td class=[class] { (cell.display()) } }
}

/// The runs table of the index and the label pages.
fn runs_table(headlines: &[Headline], root: &str) -> Markup {
    let t = tables::runs(headlines);
    // Columns shown (the id is a link, labels are chips; the rest as the table has them).
    let shown = [6usize, 7, 8, 9, 10, 11, 12, 13];
    html! {
        div.scroll {
            table {
                thead {
                    tr {
                        th { "run" } th { "status" } th { "started" }
                        @for &i in &shown { th { (t.columns[i].title) } }
                        th { "warnings" }
                    }
                }
                tbody {
                    @for (h, row) in headlines.iter().zip(&t.rows) {
                        tr {
                            td {
                                a href={ (root) (run_path(&h.id)) } { (h.name) }
                                br;
                                code { (h.id.get(..13).unwrap_or(&h.id)) }
                                " "
                                (label_chips(&h.labels, root))
                                @if let Some(group) = &h.group {
                                    a.chip href={ (root) (group_path(group)) } { "group " (group) }
                                }
                            }
                            td { (status(&h.status)) }
                            td { (h.started) }
                            @for &i in &shown { (cell_html(&row[i])) }
                            td.n {
                                @if h.warnings > 0 { span.badge.warn { "⚠ " (h.warnings) } } @else { "—" }
                            }
                        }
                    }
                }
            }
        }
    }
}

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
    /// Pages that could not be drawn: (what, why). Shown on the index, never silently dropped.
    pub failures: Vec<(String, String)>,
}

pub fn index(site: &SiteIndex) -> Markup {
    let mut experiments: BTreeMap<Option<&str>, Vec<Headline>> = BTreeMap::new();
    for h in &site.runs {
        experiments
            .entry(h.experiment.as_deref())
            .or_default()
            .push(h.clone());
    }
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
        @if !labels.is_empty() {
            p { "By label: " @for ((k, v), n) in &labels { a.chip href=(label_path(k, v)) { (k) "=" (v) " (" (n) ")" } } }
        }
        @if !site.experiments.is_empty() {
            h2 { "Experiments" }
            ul { @for (name, question, path) in &site.experiments { li { a href=(path) { (name) } " — " (question) } } }
        }
        @if !site.comparisons.is_empty() {
            h2 { "Comparisons" }
            ul { @for (title, path, n) in &site.comparisons { li { a href=(path) { (title) } " — " (n) " runs" } } }
        }
        @if !site.groups.is_empty() {
            h2 { "Run groups (several gun hosts)" }
            ul { @for (name, n) in &site.groups { li { a href=(group_path(name)) { (name) } " — " (n) " shards, merged" } } }
        }
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
    };
    layout("Runs", "", body)
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

/// A run's page (or a run group's, merged).
pub fn run_page(run: &RunFigures, load: &[Chart], probes: &[Vec<Chart>]) -> Markup {
    let body = html! {
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
        h2 { "Summary" }
        pre { (run.summary.to_text()) }
        h2 { "Latency percentiles" }
        p.meta {
            (run.summary.latency.corrected.count) " requests completed. Corrected latency counts from each request's intended send time (what users of an open system see); service time from its actual send (what wrk and hey show). HdrHistogram, 3 significant digits."
        }
        (table(&tables::percentiles(run)))
        h2 { "Load" }
        (charts(load))
        @for (i, (probe, charts_of_probe)) in run.probes.iter().zip(probes).enumerate() {
            h2 { "Target, as probe " (i + 1) " saw it: " (probe.label) }
            (probe_facts(probe))
            (charts(charts_of_probe))
            @if !probe.events.is_empty() {
                details {
                    summary { (probe.events.len()) @if probe.events.len() == 1 { " event" } @else { " events" } }
                    table { @for (t, what) in &probe.events { tr { td.n { (format!("{t:.3}")) " s" } td { (what) } } } }
                }
            }
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

fn probe_facts(p: &ProbeFigures) -> Markup {
    html! {
        dl.facts {
            dt { "host" } dd { (p.host.hostname) ", " (p.host.cpus) " cores, " (format_bytes(p.host.mem_total_bytes as f64)) ", kernel " (p.host.kernel) }
            dt { "watching" } dd { (p.host.selector) }
            dt { "samples" } dd { (p.samples) ", every " (format_ns(p.host.interval_ns)) " (probe " (p.host.probe_version) ")" }
            @if let Some(c) = &p.clock {
                dt { "clock" } dd { "aligned with the gun's to ±" (format_ns(c.uncertainty_ns)) " (offset " (format!("{:+.3}", c.offset_ns as f64 / 1e6)) " ms)" }
            }
            @if let (Some(rss), Some(fds)) = (p.peak_rss_bytes, p.peak_fds) {
                dt { "peaks" } dd { "RSS " (format_bytes(rss as f64)) ", " (fds) " FDs" }
            }
        }
    }
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
            dt { "command" } dd { code { (redact::command_line(&c.command_line).join(" ")) } }
            dt { "gun host" } dd { (g.hostname) ", " (g.cpus) " cores, " (format_bytes(g.mem_total_bytes as f64)) ", kernel " (g.kernel) }
        }
        details { summary { "Everything else loadgen recorded" } pre { (details) } }
    }
}

pub fn comparison_page(c: &Comparison, list: &[Chart]) -> Markup {
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
    }
}

/// What an experiment's page links to beside its runs.
#[derive(Debug, Clone, Default)]
pub struct ExperimentLinks {
    /// Per setting (by its text), the comparison page of its targets.
    pub comparisons: BTreeMap<String, String>,
}

/// `2.10 ms (1.90–2.40)`: a cell's median and its spread over repetitions.
fn spread_text(metric: crate::experiment::Metric, s: Option<crate::experiment::Spread>) -> String {
    use crate::experiment::Metric;
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

/// An experiment's page.
pub fn experiment_page(
    fig: &crate::experiment::ExperimentFigures,
    across: &[(String, Vec<Chart>)],
    overlays: &[Vec<Chart>],
    links: &ExperimentLinks,
) -> Markup {
    use crate::experiment::{setting_text, Metric};
    let r = &fig.record;
    let d = &r.definition;
    let done = fig.cells.iter().map(|c| c.runs.len()).sum::<usize>();
    let failed = fig.cells.iter().map(|c| c.failed.len()).sum::<usize>();
    let expected = fig.cells.len() * d.repetitions as usize;
    let failed_targets: Vec<_> = r.verification.iter().filter(|v| !v.passed).collect();
    // How each target was held to a host size (a cgroup, or why not), from its runs' labels.
    let mut held: BTreeMap<&str, &str> = BTreeMap::new();
    for c in &fig.cells {
        for run in &c.runs {
            if let Some(h) = run.labels.get(store::vocabulary::label::HELD) {
                held.insert(&c.target, h);
            }
        }
    }
    let matrix_metrics = [
        Metric::Throughput,
        Metric::P50,
        Metric::P99,
        Metric::Max,
        Metric::ErrorRate,
        Metric::Cpu,
        Metric::PeakRss,
    ];
    let writeup_metrics = [
        Metric::Throughput,
        Metric::Mean,
        Metric::Stdev,
        Metric::P99,
        Metric::ErrorRate,
        Metric::PerThousand,
    ];
    let body = html! {
        h1 { "Experiment " (r.name) }
        p.question { strong { (r.question) } }
        p.meta {
            @if let Some(source) = &d.source { (source) br; }
            (d.targets.len()) " targets × " (fig.settings.len()) " settings × " (d.repetitions) " repetitions: "
            (done) " of " (expected) " runs complete"
            @if failed > 0 { ", " span.badge.failed { (failed) " failed" } }
            @if done + failed < expected { ", " (expected - done - failed) " not run yet" }
            ". File " code { (r.file_label) } @if r.scale != 1.0 { ", scaled ×" (r.scale) " (a quick look, not the full experiment)" } "."
            br; (d.placement) "."
            @for (target, held) in &held { br; (target) ": held by " (held) "." }
            @if fig.warmups > 0 { br; (fig.warmups) " warm-up runs are kept apart and left out of every figure." }
            @if fig.older > 0 { br; (fig.older) " runs of earlier versions of the file (or other scales) are not shown here; the index lists them." }
        }
        @if !failed_targets.is_empty() {
            div.warnings {
                h2 { "Targets not measured: they failed verification" }
                ul {
                    @for v in &failed_targets {
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
        h2 { "Answers" }
        ul.answers { @for s in &fig.settings { li { (fig.sentence(s)) } } }
        h2 { "The matrix" }
        p.meta { "Each cell: the median over repetitions, and (lowest–highest) when they differ. Latencies are corrected (from intended send times), in ms; throughput counts successful responses per second; CPU is the target's process tree (100 = one core)." }
        div.scroll {
            table {
                thead { tr { th { "target" } @for s in &fig.settings { th { (setting_text(s)) } } } }
                tbody {
                    @for target in &d.targets {
                        tr {
                            th { span.swatch style={ "background:" (css_color(fig.color_of(target))) } {} (target) }
                            @for s in &fig.settings {
                                @let cell = fig.cells.iter().find(|c| &c.target == target && &c.setting == s);
                                @match cell {
                                    Some(c) if !c.runs.is_empty() => td {
                                        @for m in matrix_metrics {
                                            small { (m.title()) } ": " (spread_text(m, c.spread(m))) br;
                                        }
                                        @if !c.failed.is_empty() { span.badge.failed { (c.failed.len()) " failed" } }
                                    },
                                    Some(c) if !c.failed.is_empty() => td.failed { "FAILED: " (c.failed[0].1) },
                                    _ => td { "not run yet" },
                                }
                            }
                        }
                    }
                }
            }
        }
        h2 { "As the write-ups tabled it" }
        p.meta { "RPS (successful responses per second), mean latency and its standard deviation (002's tables), error rate and time per 1,000 requests (003's slides)." }
        div.scroll {
            table {
                thead { tr { th { "setting" } th { "target" } @for m in writeup_metrics { th { (m.title()) } } } }
                tbody {
                    @for c in &fig.cells {
                        tr {
                            td { (setting_text(&c.setting)) }
                            td { (c.target) }
                            @if c.runs.is_empty() {
                                td.failed colspan=(writeup_metrics.len()) {
                                    @if let Some((_, why)) = c.failed.first() { "FAILED: " (why) } @else { "not run yet" }
                                }
                            } @else {
                                @for m in writeup_metrics { td.n { (spread_text(m, c.spread(m))) } }
                            }
                        }
                    }
                }
            }
        }
        @for (heading, list) in across {
            h2 { (heading) }
            (charts(list))
        }
        @for (setting, list) in fig.settings.iter().zip(overlays) {
            h2 { "At " (setting_text(setting)) }
            p { (fig.sentence(setting)) }
            p.meta {
                @if let Some(path) = links.comparisons.get(&setting_text(setting)) {
                    a href={ "../" (path) } { "Compare these targets' runs" } " · "
                }
                "Runs: "
                @for c in fig.cells_of(setting) {
                    @for (i, run) in c.runs.iter().enumerate() {
                        a.chip href={ "../" (run_path(&run.id)) } { (c.target) " #" (run.labels.get(store::vocabulary::label::REPETITION).cloned().unwrap_or_else(|| (i + 1).to_string())) }
                    }
                    @for (run, _) in &c.failed {
                        a.chip href={ "../" (run_path(&run.id)) } { (c.target) " (" (run.status.as_str()) ")" }
                    }
                }
            }
            (charts(list))
        }
        h2 { "Every run's summary" }
        details {
            summary { "Vegeta-style summaries of the " (done) " complete runs (the showdown write-up's shape)" }
            @for c in &fig.cells {
                @for run in &c.runs {
                    h3 { a href={ "../" (run_path(&run.id)) } { (run.name) } }
                    pre { (run.summary.to_text()) }
                }
            }
        }
        @if !r.verification.is_empty() {
            h2 { "Verification against targets/CONTRACT.md" }
            div.scroll {
                table {
                    thead { tr { th { "target" } th { "result" } th { "checks" } } }
                    tbody {
                        @for v in &r.verification {
                            tr {
                                td { (v.target) }
                                td { @if v.passed { span.badge.complete { "passed" } } @else { span.badge.failed { "failed" } } }
                                td { @for (check, outcome) in &v.checks { (check) ": " (outcome) br; } }
                            }
                        }
                    }
                }
            }
        }
        h2 { "The experiment file" }
        details { summary { "As run" } pre { (d.file) } }
    };
    layout(&format!("Experiment {}", r.name), "../", body)
}
