//! The parts every page is made of: the layout and its CSS, charts, tables, chips, a status.

use std::collections::BTreeMap;

use maud::{html, Markup, PreEscaped, DOCTYPE};

use crate::charts::Chart;
use crate::figures::Headline;
use crate::model::number::RULES;
use crate::paths::{group_path, label_path, run_path};
use crate::tables::{self, Cell, Table};

pub(super) const CSS: &str = r#"
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
thead th { white-space: normal; min-width: 4rem; }
td.why { min-width: 16rem; max-width: 28rem; }
details.finding > summary { cursor: pointer; }
details.finding > p { color: var(--muted); font-size: .9em; margin: .3rem 0 .4rem 1rem; }
td.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.better { color: #146c2e; } td.worse { color: var(--warn); }
.warnings { border: 2px solid var(--warn); background: #fdecea; padding: .6rem 1rem; border-radius: 4px; margin: 1rem 0; }
.warnings h2 { color: var(--warn); border: 0; margin: 0 0 .3rem; }
.warnings li { margin: .2rem 0; }
.validity { border-left: 4px solid var(--muted); padding: .1rem 1rem; margin: 1rem 0; }
.validity.valid { border-color: #2e7d32; }
.validity.degraded { border-color: var(--warn); }
.validity.not-measurable { border-color: var(--warn); background: #fdecea; }
.validity h2 { border: 0; margin: .3rem 0; }
.badge { display: inline-block; padding: 0 .45rem; border-radius: 3px; font-size: .85em; background: #eee; }
.badge.complete { background: #e3f4e6; color: #146c2e; } .badge.incomplete { background: #fff0d6; color: #8a5300; }
.badge.running { background: #eee; color: #444; } .badge.warn, .badge.failed { background: #fdecea; color: var(--warn); }
.question { font-size: 1.1rem; margin: .2rem 0 .6rem; }
ul.answers li { margin: .35rem 0; }
ul.answers li.worse strong { color: var(--warn); } ul.answers li.better strong { color: #146c2e; }
td.failed { color: var(--warn); }
.chip { display: inline-block; padding: 0 .45rem; margin: 0 .2rem .2rem 0; border: 1px solid var(--line); border-radius: 10px; font-size: .85em; text-decoration: none; }
.swatch { display: inline-block; width: 1.6em; height: .6em; border-radius: 2px; margin-right: .4em; vertical-align: middle; }
.flame { width: 100%; min-height: 24rem; border: 1px solid #ddd; }
details.flame-window { margin: .8rem 0; }
details.flame-window > summary { cursor: pointer; font-weight: 600; }
.flame-live svg { border: 1px solid #ddd; background: #fff; }
.flame-live g:hover rect { stroke: #333; }
.flame-modes label { margin-right: 1rem; }
figure.flame-figure { margin: .6rem 0; }
figure.flame-figure.live > svg, figure.flame-figure.live > object { display: none; }
.flame-graph-live svg { border: 1px solid #ddd; background: #fff; }
.flame-graph-live g[data-box] { cursor: pointer; }
.flame-graph-live g:hover rect { stroke: #333; }
.flame-tools { font-size: .88em; margin: .2rem 0; }
.flame-said { color: var(--muted); }
@media print { figure.flame-figure.live > svg, figure.flame-figure.live > object { display: block; } .flame-graph-live { display: none; } }
.matrix { max-height: 80vh; overflow: auto; }
.matrix th:first-child { position: sticky; left: 0; z-index: 1; background: #f6f6f6; }
.matrix thead th { position: sticky; top: 0; z-index: 2; }
.matrix thead th:first-child { z-index: 3; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(min(100%, 560px), 1fr)); gap: 1rem 1.5rem; }
figure { margin: 0; min-width: 0; }
figure .plot { overflow-x: auto; }
figure svg { display: block; width: 100%; min-width: 480px; height: auto; }
figcaption { color: var(--muted); font-size: .88em; margin-top: .2rem; }
.empty { border: 1px dashed var(--line); color: var(--muted); padding: 2rem 1rem; text-align: center; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; margin: .4rem 0 1rem; }
dl.facts dt { color: var(--muted); } dl.facts dd { margin: 0; overflow-wrap: anywhere; }
footer { color: var(--muted); font-size: .85em; text-align: center; padding: 1rem; border-top: 1px solid var(--line); }
figure.live > .plot { display: none; }
.live-chart { min-width: 320px; }
.live-chart .u-legend { font-size: .8em; }
@media print { figure.live > .plot { display: block; } .live-chart { display: none; } }
.index-controls { margin: .6rem 0; }
.index-controls input[type=search] { padding: .2rem .4rem; min-width: 22rem; margin-right: 1rem; }
#show-warmups:not(:checked) ~ .listing tr.warmup { display: none; }
#show-bookkeeping:not(:checked) ~ .listing .chip.bk { display: none; }
tr.filtered { display: none; }
table.sortable th { cursor: pointer; }
th[aria-sort=ascending]::after { content: " ▲"; } th[aria-sort=descending]::after { content: " ▼"; }
.heatmap svg { min-width: 480px; }
.heatmap-live rect[data-count]:hover { stroke: #333; }
.heatmap-hover { color: var(--muted); font-size: .88em; margin: .2rem 0 0; min-height: 1.3em; font-variant-numeric: tabular-nums; }
"#;

/// A page: `root` is the way back to the site's root from the page (`""` or `"../"`).
pub(super) fn layout(title: &str, root: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · Showdown" }
                style { (PreEscaped(CSS)) }
                link rel="stylesheet" href={ (root) "assets/uPlot.min.css" };
                // How the script writes numbers, the table the SVG's axes follow (`<` escaped
                // by `NumberRules::json`): carried once, read once by the script.
                script id="number-rules" type="application/json" { (PreEscaped(RULES.json())) }
                script defer src={ (root) "assets/uPlot.iife.min.js" } {}
                script defer src={ (root) "assets/showdown.js" } {}
            }
            body {
                header { a href={ (root) "index.html" } { "Showdown" } " · " (title) }
                main { (body) }
                footer { "Drawn by Showdown report " (env!("CARGO_PKG_VERSION")) " from the runs in the store." }
            }
        }
    }
}

pub(super) fn chart(c: &Chart) -> Markup {
    html! {
        figure id=(c.id) data-chart=[c.data.as_ref().map(|d| d.kind())] {
            @match &c.svg {
                // plotters escapes the text it writes into the SVG.
                Some(svg) => div.plot { (PreEscaped(svg)) },
                None => div.empty { (c.title) ": nothing to draw" },
            }
            // The model the interactive chart draws (`<` escaped by `ChartData::json`).
            @if let Some(data) = &c.data {
                script.chart-data type="application/json" { (PreEscaped(data.json())) }
            }
            figcaption { (c.caption) }
        }
    }
}

pub(super) fn charts(list: &[Chart]) -> Markup {
    html! { div.charts { @for c in list { (chart(c)) } } }
}

pub(super) fn status(status: &str) -> Markup {
    let text = match status {
        "running" => "running, or killed",
        other => other,
    };
    html! { span class={ "badge " (status) } { (text) } }
}

pub(super) fn label_chips(labels: &BTreeMap<String, String>, root: &str) -> Markup {
    html! {
        @for (k, v) in labels {
            // The runner's bookkeeping (file, scale, phase…) is hidden on the index until asked.
            @let class = if store::vocabulary::label::is_bookkeeping(k) { "chip bk" } else { "chip" };
            a class=(class) href={ (root) (label_path(k, v)) } { (k) "=" (v) }
        }
    }
}

/// A table; right-aligned numbers, ratios coloured by whether they are better.
pub(super) fn table(t: &Table) -> Markup {
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

pub(super) fn cell_html(cell: &Cell) -> Markup {
    let class = match (cell, cell.verdict()) {
        (Cell::Text(_) | Cell::Named { .. }, _) => None,
        (_, Some(true)) => Some("n better"),
        (_, Some(false)) => Some("n worse"),
        _ => Some("n"),
    };
    html! { td class=[class] { (cell.display()) } }
}

/// A cell of a sortable table: with its raw value, for sorting by a click on the header.
pub(super) fn sortable_cell(cell: &Cell) -> Markup {
    let raw = match cell {
        Cell::Number(v, _) if v.is_finite() => Some(format!("{v}")),
        Cell::Ratio { factor, .. } if factor.is_finite() => Some(format!("{factor}")),
        _ => None,
    };
    let class = match cell {
        Cell::Text(_) | Cell::Named { .. } => None,
        _ => Some("n"),
    };
    html! { td class=[class] data-v=[raw] { (cell.display()) } }
}

/// The runs table of the index and the label pages.
pub(super) fn runs_table(headlines: &[Headline], root: &str) -> Markup {
    let t = tables::runs(headlines);
    // Columns shown (the id is a link, labels are chips; the rest as the table has them).
    let shown = [6usize, 7, 8, 9, 10, 11, 12, 13];
    html! {
        div.scroll {
            table.sortable {
                thead {
                    tr {
                        th { "run" } th { "status" } th { "started" }
                        @for &i in &shown { th { (t.columns[i].title) } }
                        th { "warnings" }
                    }
                }
                tbody {
                    @for (h, row) in headlines.iter().zip(&t.rows) {
                        @let warmup = store::vocabulary::Phase::of(&h.labels) == Some(store::vocabulary::Phase::Warmup);
                        tr class=[warmup.then_some("warmup")] data-search=(search_text(h)) {
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
                            @for &i in &shown { (sortable_cell(&row[i])) }
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

/// What the index's filter matches a run on: its name, id, experiment and labels.
fn search_text(h: &Headline) -> String {
    let mut text = format!(
        "{} {} {}",
        h.name,
        h.id,
        h.experiment.as_deref().unwrap_or("")
    );
    for (k, v) in &h.labels {
        text.push_str(&format!(" {k}={v}"));
    }
    text.to_lowercase()
}
