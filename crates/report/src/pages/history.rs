//! An experiment's history page: every sitting of it side by side, the changes found across
//! them with the revisions between which each happened, each series' chart, and the host in
//! each sitting (`loadgen history` in words; `analysis::history` judges it).

use std::collections::BTreeMap;

use analysis::history::text::when;
use analysis::history::{History, Series};
use maud::{html, Markup};

use super::layout::{charts, layout};
use crate::charts::Chart;
use crate::history::series_title;
use crate::paths::experiment_path;

/// A history's charts, drawn: one per series (in the history's order), and the host's.
#[derive(Debug, Clone, Default)]
pub struct HistoryCharts {
    pub series: Vec<Chart>,
    pub host: Option<Chart>,
}

/// "×0.930 (0.918–0.942), p = 0.0020".
fn change_text(c: &analysis::history::Change) -> String {
    format!(
        "×{:.3} ({:.3}–{:.3}), p = {:.4}",
        c.ratio, c.low, c.high, c.p
    )
}

/// The series' row: its sittings, changes, level now and what a new sitting would read.
fn row(s: &Series) -> Markup {
    let level = s.level();
    html! {
        tr {
            td { (series_title(s)) }
            td.n { (s.points.len()) }
            td.n { (s.changes.len()) }
            td.n { @match &level {
                Some(l) => { (s.value_text(l.value)) " (" (s.value_text(l.low)) "–" (s.value_text(l.high)) ")" }
                None => { "too few sittings" }
            } }
            td.n { @match level.and_then(|l| l.predict) {
                Some((lo, hi)) => { (s.value_text(lo)) "–" (s.value_text(hi)) }
                None => { "—" }
            } }
            td { @match &s.normalised { Some(n) => { (n.text()) } None => { "its own figures" } } }
        }
    }
}

/// A section of the page: the series of one measure at one setting, each with its chart.
type Section<'a> = Vec<(&'a Series, Option<&'a Chart>)>;

/// The page of `h`, the history of the experiment whose question is `question`.
pub fn history_page(h: &History, question: &str, drawn: &HistoryCharts) -> Markup {
    let sections = by_measure_and_setting(h, drawn);
    let body = html! {
        h1 { "History: " (h.experiment) }
        p.question { (question) }
        p.meta {
            a href={ "../" (experiment_path(&h.experiment)) } { "The experiment's page" } " shows its latest sitting. "
            @match (h.sittings.first(), h.sittings.last()) {
                (Some(first), Some(last)) => { (h.sittings.len()) " sittings, " (when(first.started_at_ns)) " to " (when(last.started_at_ns)) "." }
                _ => { "No sitting kept yet." }
            }
            @if h.unplaced > 0 { " " (h.unplaced) " runs or searches of it are in no sitting (kept before sittings were labelled, with no revision label): not in the history." }
        }
        h2 { "Changes found" }
        (changes_found(h))
        p.meta { (h.method()) }
        p.meta { "The same in a terminal, as JSON, or as Markdown for a CI job's summary: " code { "loadgen history --experiment " (h.experiment) " [--output json|markdown] [--fail-within N]" } "." }
        @for ((measure, setting), list) in &sections {
            (section(measure, setting, list))
        }
        h2 { "The sittings" }
        @if let Some(c) = &drawn.host { (charts(std::slice::from_ref(c))) }
        (sittings_table(h))
    };
    layout(&format!("History: {}", h.experiment), "../", body)
}

/// Series by measure and setting, in the history's order, each with its chart.
fn by_measure_and_setting<'a>(
    h: &'a History,
    drawn: &'a HistoryCharts,
) -> BTreeMap<(String, String), Section<'a>> {
    let mut sections: BTreeMap<(String, String), Section<'_>> = BTreeMap::new();
    for (i, s) in h.series.iter().enumerate() {
        sections
            .entry((s.key.measure.title().to_string(), s.key.setting.clone()))
            .or_default()
            .push((s, drawn.series.get(i)));
    }
    sections
}

/// The changes found across the sittings: those too recent to confirm, then those found.
fn changes_found(h: &History) -> Markup {
    let changes: Vec<(&Series, &analysis::history::Change)> = h
        .series
        .iter()
        .flat_map(|s| s.changes.iter().map(move |c| (s, c)))
        .collect();
    let possible: Vec<(&Series, &analysis::history::tail::Possible)> = h
        .series
        .iter()
        .filter_map(|s| s.possible.as_ref().map(|p| (s, p)))
        .collect();
    html! {
        @if !possible.is_empty() {
            ul.answers { @for (s, p) in &possible {
                li class=(if p.change.worse { "worse" } else { "better" }) {
                    strong { (series_title(s)) } ": possibly " (if p.change.worse { "worse " } else { "better " }) (h.between(&p.change)) ": " (change_text(&p.change))
                    "; too recent to confirm: " (p.more) (if p.more == 1 { " more sitting" } else { " more sittings" }) " confirm or dismiss it."
                }
            } }
        }
        @if changes.is_empty() {
            p.answer { strong { "No change point in any series." } }
        } @else {
            ul.answers { @for (s, c) in &changes {
                li class=(if c.worse { "worse" } else { "better" }) {
                    strong { (series_title(s)) } ": " (if c.worse { "worse " } else { "better " }) (h.between(c)) ": " (change_text(c))
                }
            } }
        }
    }
}

/// A section's heading, its series' table and their charts.
fn section(measure: &str, setting: &str, list: &Section<'_>) -> Markup {
    html! {
        h2 { (measure) @if !setting.is_empty() { ", " (setting) } }
        div.scroll { table {
            thead { tr { th { "series" } th { "sittings" } th { "changes" } th { "level now (95 %)" } th { "a new sitting (95 %)" } th { "judged on" } } }
            tbody { @for (s, _) in list { (row(s)) } }
        } }
        (charts(&list.iter().filter_map(|(_, c)| c.cloned()).collect::<Vec<_>>()))
    }
}

/// The sittings' table: when each began, its revisions and the host it ran on.
fn sittings_table(h: &History) -> Markup {
    html! {
        div.scroll { table {
            thead { tr { th { "sitting" } th { "began" } th { "revisions" } th { "the host" } } }
            tbody { @for (i, s) in h.sittings.iter().enumerate() { tr {
                td { "#" (i + 1) }
                td { (when(s.started_at_ns)) }
                td { @if s.revisions.is_empty() { "—" } @else { (s.revisions.join(", ")) } }
                td { @match &s.host { Some(host) => { (host.text()) } None => { "not read" } } }
            } } }
        } }
    }
}
