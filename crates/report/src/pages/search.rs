//! A capacity search's page: what it found and why it ends there, its charts, every step.

use std::collections::HashMap;
use std::sync::Arc;

use maud::{html, Markup};
use store::capacity::{Search, Status};

use super::layout::{charts, layout};
use super::paths::run_path;
use crate::charts::Chart;
use crate::figures::RunFigures;

/// The capacity in a sentence.
pub fn finding(s: &Search) -> String {
    match (s.status, s.capacity) {
        (Status::Found, Some(cap)) => format!(
            "{cap} req/s within {} (bracket {cap}–{} req/s, {:.1} % wide)",
            s.slo,
            s.failed_at.unwrap_or(cap),
            s.width().unwrap_or(0.0) * 100.0
        ),
        (status, Some(cap)) => format!(
            "at least {cap} req/s within {} ({})",
            s.slo,
            s.only_at_least()
                .unwrap_or_else(|| status.as_str().to_string())
        ),
        (status, None) => format!("not found within {} ({})", s.slo, status.as_str()),
    }
}

/// How the steps' requests arrived, in a sentence: capacity depends on it.
fn arrivals(s: &Search) -> String {
    match s.settings.arrival {
        Some(a @ store::capacity::Arrival::Batched { .. }) => format!(
            "Arrivals {} (wrk2's grid: the server may read many requests per wake-up).",
            a.text()
        ),
        Some(a) => format!(
            "Arrivals {}: each request sent at its own instant.",
            a.text()
        ),
        None => "How requests arrived was not recorded with this search.".into(),
    }
}

pub fn search_page(
    s: &Search,
    charts_: &[Chart],
    runs: &HashMap<String, Arc<RunFigures>>,
) -> Markup {
    let body = html! {
        h1 { "Capacity: " (s.name) }
        p.meta { "Target " code { (s.target) } ". SLO " code { (s.slo.to_string()) } ". From "
            (s.settings.start) " req/s, steps of " (s.settings.step_s) " s after " (s.settings.warmup_s)
            " s of warm-up, until the bracket is within " (s.settings.resolution * 100.0) " %. "
            (arrivals(s)) }
        p.answer { strong { "Capacity: " (finding(s)) "." } }
        p { "Why it ends there: " (s.reason) }
        @if let Some((rate, why)) = crate::search::failed_step_limit(s, runs) {
            p { "What limited the server at " (rate) " req/s, the step that ended the search, as its probes (the server's, its database's and the watched groups', over the step's judged window) saw it: " (super::why(&why)) }
        }
        (charts(charts_))
        h2 { "Steps" }
        p.meta { "A step passes when the 95 % interval of every SLO term lies within its bound; it fails when one lies wholly beyond; uncertain steps are run again longer; a step whose queue grew within its window (or that served under 99 % of the rate) fails as unstable; a step where the generator was the limit is invalid, and the search bisects below it for the highest rate the generator drives validly. Intervals are batch means over the window's consecutive intervals, so they hold on correlated latencies (a queue, a pause), not only on independent requests." }
        div.scroll {
            table {
                thead { tr { th { "step" } th { "offered (req/s)" } th { "verdict" } th { "served (req/s)" }
                    @for t in &s.slo.terms { th { (t.figure.to_string()) " [95 %]" } }
                    th { "server CPU (%)" } th { "why" } } }
                tbody {
                    @for step in &s.steps {
                        @let cpu = step.run_id.as_ref().and_then(|id| runs.get(id)).and_then(|r| crate::search::step_cpu(s, step, r));
                        tr {
                            td { @if let Some(id) = &step.run_id { a href={ "../" (run_path(id)) } { (step.number) } } @else { (step.number) } }
                            td.num { (step.rate) }
                            td { (step.judgement.verdict.as_str()) }
                            td.num { (format!("{:.0}", step.judgement.achieved)) }
                            @for t in &step.judgement.terms {
                                td.num { (t.term.value_text(t.value)) " [" (t.term.value_text(t.low)) "–" (t.term.value_text(t.high)) "]" }
                            }
                            td.num { @if let Some(c) = cpu { (format!("{:.0}", c.cpu_pct)) } @else { "—" } }
                            td {
                                (step.judgement.reason)
                                @if let Some(l) = &step.limit { br; "limited by " (super::why(&l.finding())) }
                            }
                        }
                    }
                }
            }
        }
    };
    layout(&format!("Capacity: {}", s.name), "../", body)
}
