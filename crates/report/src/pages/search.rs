//! A capacity search's page: what it found and why it ends there, its charts, every step.

use std::collections::HashMap;
use std::sync::Arc;

use analysis::capacity::{Search, Status};
use maud::{html, Markup};

use super::layout::{charts, layout};
use crate::charts::Chart;
use crate::figures::RunFigures;
use crate::knee::Found;
use crate::paths::{run_path, search_path};
use analysis::ab::functions::percent;

/// The capacity in a sentence.
pub fn finding(s: &Search) -> String {
    match (s.status, s.capacity, s.estimate()) {
        (Status::GeneratorLimited | Status::AboveMaximum | Status::BelowMinimum, Some(cap), _)
        | (_, Some(cap), None) => format!(
            "at least {cap} req/s within {} ({})",
            s.slo,
            s.only_at_least()
                .unwrap_or_else(|| format!("its highest pass: {}", s.status.as_str()))
        ),
        (_, Some(_), Some(e)) => format!("{} = {} within {}", s.settings.figure(), e.text(), s.slo),
        (status, None, _) => format!("not found within {} ({})", s.slo, status.as_str()),
    }
}

/// How the steps' requests arrived, in a sentence: capacity depends on it.
fn arrivals(s: &Search) -> String {
    match s.settings.arrival {
        Some(a @ analysis::capacity::Arrival::Batched { .. }) => format!(
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

/// The calibration check: its verdict, each level's passes against its range, the halves, the
/// search run again.
fn check(c: &analysis::capacity::check::Check) -> Markup {
    html! {
        h2 { "Calibration check" }
        p.answer { strong { "The check " (c.outcome.said()) "." } }
        p.meta { "After the search, " (c.blocks) " blocks of one step at each of the ends of C_0.5's 95 % interval and C_0.75, C_0.5 and C_0.25 of its fitted curve (fixed before the first block ran), each block in a seeded random order, every step with the search's window, warm-up and drain. A level's range holds the passes of a server whose C_0.5 lies anywhere in the figure's 95 % interval (" (format!("{:.0}–{:.0}", c.claim.low, c.claim.high)) " req/s), so that a figure whose interval holds fails the check at most " (format!("{:.0}", analysis::capacity::check::FALSE_FAIL * 100.0)) " % of the time; the halves test asks whether passes changed over the check." }
        div.scroll { table {
            thead { tr { th { "level" } th { "rate (req/s)" } th { "fitted pass probability" } th { "passed" } th { "range" } th { "pass probability allowed" } th { "" } } }
            tbody { @for l in &c.levels { tr {
                td { (l.name) }
                td.num { (format!("{:.0}", l.rate)) }
                td.num { (format!("{:.2}", l.p)) }
                td.num { (l.passes) " of " (l.runs) }
                td.num { (l.low) "–" (l.high) }
                td.num { (format!("{:.2}–{:.2}", l.allowed.0, l.allowed.1)) }
                td { @match l.side() { -1 => "fewer: the server passed less often", 1 => "more: the server passed more often", _ => "within" } }
            } } }
        } }
        @if let Some(h) = &c.halves {
            p { "Halves: " (h.first.0) " of " (h.first.1) " steps passed in the first half of the blocks, " (h.second.0) " of " (h.second.1) " in the second (z = " (format!("{:+.2}", h.z)) "): " @if h.differ() { "the passes changed: the sitting moved under the check." } @else { "alike." } }
        }
        @if let Some(a) = &c.again {
            p { "Searched again after the check: " a href={ "../" (search_path(&a.id)) } { (a.id) } ", C_0.5 = "
                @match (a.rate, a.low, a.high) {
                    (Some(r), Some(l), Some(h)) => { (format!("{r:.0} req/s (95 % interval {l:.0}–{h:.0})")) }
                    (Some(r), _, _) => { (format!("{r:.0} req/s (no 95 % interval)")) }
                    _ => { "no figure" }
                }
                "." }
        }
    }
}

/// What grew with the rate at the knee: the sentence, each named function's shares and µs a
/// request on either side with its interval (or, when none is named, the largest few, within
/// noise), and the differential flame graph drawn from the same estimates.
fn knee(found: &Found, graph: Option<&super::FlameGraph>) -> Markup {
    let Some(k) = found.knee() else {
        return html! {
            @if let Some(why) = found.why_not() {
                h2 { "At the knee: what grew with the rate" }
                p.meta { (why) }
            }
        };
    };
    let f = &k.functions;
    let named = f.named().count();
    let shown: Vec<&analysis::ab::functions::FunctionChange> = if named > 0 {
        f.named().collect()
    } else {
        f.own
            .iter()
            .take(f.tested.min(analysis::ab::functions::knee::SHOWN))
            .collect()
    };
    let shares = |name: &str| k.shares.iter().find(|s| s.name == name);
    html! {
        h2 { "At the knee: what grew with the rate" }
        p.answer id="knee" { (k.sentence()) "." }
        p.meta { "Each function's CPU per request at each step (the step's CPU per request over its judged window × the function's share of that window's samples), the failing steps' mean against the passing steps', over the " (f.rounds) " valid profiled steps within a factor of " (analysis::ab::functions::knee::WINDOW) " of C_0.5 (" (format!("{:.0}", k.capacity)) " req/s): " (k.passing.text()) " passing, " (k.failing.text()) " failing, each step weighed by its samples. Its interval is Student's t on the two groups' pooled spread. A function is named when its change is beyond noise with every function tested at once (Benjamini–Hochberg, 5 % false discovery rate); its interval is then adjusted for the functions tested. The steps ran one after the other, and a host that slowed a step makes every function cost more there and the step likelier to fail: so each step's figures are first divided by its size factor (the median, over the functions with " (analysis::ab::functions::knee::SIZE_SAMPLES) " samples or more and a sample in every step, of its CPU per request there over its geometric mean across the steps), and a function named grew beyond the server as a whole; the server's own change is read as measured." }
        div.scroll { table {
            thead { tr { th { "function (its own code)" } th { "share of the samples: passing → failing" } th { "µs a request, passing" } th { "failing" } th { "change (interval)" } th { "" } } }
            tbody { @for c in &shown { tr {
                td { code { (c.name) } }
                td.num { @if let Some(s) = shares(&c.name) { (percent(s.passing)) " → " (percent(s.failing)) } @else { "—" } }
                td.num { (format!("{:.1}", c.baseline_us)) }
                td.num { (format!("{:.1}", c.candidate_us)) }
                td.num { (c.figure()) }
                td { @if c.named { (if c.difference_us > 0.0 { "grew" } else { "fell" }) " beyond noise (" (format!("{:.2} %", c.level * 100.0)) " interval)" } @else { "within noise (95 % interval)" } }
            } } }
        } }
        @if let Some(g) = graph {
            (super::flame_inline(g, "knee-flame", "The failing steps' call paths, each as wide as its mean CPU per request there, coloured where it differs from the passing steps' beyond noise."))
        }
    }
}

pub fn search_page(
    s: &Search,
    charts_: &[Chart],
    runs: &HashMap<String, Arc<RunFigures>>,
    found: &Found,
    graph: Option<&super::FlameGraph>,
) -> Markup {
    let body = html! {
        h1 { "Capacity: " (s.name) }
        p.meta { "Target " code { (s.target) } ". SLO " code { (s.slo.to_string()) } ". From "
            (s.settings.start) " req/s, steps of " (s.settings.step_s) " s after " (s.settings.warmup_s)
            " s of warm-up; a coarse bracket to " (s.settings.resolution * 100.0) " %, then steps up and down beside the knee until the 95 % interval is within ±" (s.settings.until * 100.0) " %. "
            (arrivals(s)) }
        p.answer { strong { "Capacity: " (finding(s)) "." } }
        @if s.estimate().is_some() { p.checked { "How far to trust it: " (analysis::capacity::CHECKED) "." } }
        @if let Some(w) = s.estimate().and_then(|e| e.wide_knee()) { div.warnings { p { (w) "." } } }
        @for e in s.estimates.iter().skip(1) { p { "Also C_" (e.p) " ≈ " (e.text()) " (" (analysis::capacity::ALSO_CHECKED) ")." } }
        @if s.estimate().is_some() { p { "What it promises: " (s.settings.promise()) "." } }
        p { "Why it ends there: " (s.reason) }
        @if let Some(w) = &s.warmed { p { "Before its first step the server was " (w.text()) "." } }
        @if let Some(d) = &s.drift { p { "Drift: " (d.text()) "." } }
        @if let Some(c) = &s.check { (check(c)) }
        p { "The figure is this sitting's: " (analysis::capacity::sitting(&s.steps).unwrap_or_else(|| "the host was not read over its steps".into())) "." }
        @if let Some((rate, why)) = crate::knee::cited_limit(s, runs, found) {
            p { "What limited the server at " (rate) " req/s, the step that ended the search, as its probes (the server's, its database's and the watched groups', over the step's judged window) saw it: " (super::why(&why)) }
        }
        (knee(found, graph))
        (charts(charts_))
        h2 { "Steps" }
        p.meta { "Each step is one window judged on its own figures: it passes when every SLO term's figure is within its bound and 99 % of the rate was served; a step whose queue grew until its last third broke the SLO (or that served under 99 % of the rate) fails as unstable; a queue that grew without breaking it is said in the why. A step where the generator was the limit is invalid: left out of the estimate, and the search bisects below it for the highest rate the generator drives validly. C_p is estimated from every valid step together (a logistic curve of the pass probability against the log of the rate, with a 95 % profile-likelihood interval, widened when steps close in time vary together). Each term's 95 % interval (batch means over the window's intervals) is shown beside its figure, for the reader; it does not decide the step." }
        div.scroll {
            table {
                thead { tr { th { "step" } th { "phase" } th { "offered (req/s)" } th { "verdict" } th { "served (req/s)" }
                    @for t in &s.slo.terms { th { (t.figure.to_string()) " [95 %]" } }
                    th { "server CPU (%)" } th { "drained before (s)" } th { "steal (%)" } th { "why" } } }
                tbody {
                    @for step in &s.steps {
                        @let cpu = step.run_id.as_ref().and_then(|id| runs.get(id)).and_then(|r| crate::search::step_cpu(s, step, r));
                        tr {
                            td { @if let Some(id) = &step.run_id { a href={ "../" (run_path(id)) } { (step.number) } } @else { (step.number) } }
                            td { @if step.fine { "knee" } @else { "coarse" } }
                            td.num { (step.rate) }
                            td { (step.judgement.verdict.as_str()) }
                            td.num { (format!("{:.0}", step.judgement.achieved)) }
                            @for t in &step.judgement.terms {
                                td.num { (t.term.value_text(t.value)) " [" (t.term.value_text(t.low)) "–" (t.term.value_text(t.high)) "]" }
                            }
                            td.num { @if let Some(c) = cpu { (format!("{:.0}", c.cpu_pct)) } @else { "—" } }
                            td.num { @if let Some(d) = step.drained_s { (format!("{d:.1}")) } @else { "—" } }
                            td.num { @if let Some(h) = step.host { (format!("{:.1}", h.steal_pct)) } @else { "—" } }
                            td {
                                (step.judgement.reason)
                                @if let Some(q) = &step.judgement.queue { br; (q) " (said, not failed: the SLO held)" }
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
