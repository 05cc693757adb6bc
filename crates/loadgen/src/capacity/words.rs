//! The search in words: a line per step as it ends, and the whole search as text.

use store::capacity::{Judgement, Search, Status};

use super::search::Event;

/// One line for an event of the loop (what `loadgen capacity` prints on standard error).
pub fn event(event: Event<'_>) -> String {
    match event {
        Event::Resumed { after } => format!("Resuming the search after its step {after}"),
        Event::Searched {
            number,
            capacity,
            agreed,
        } => format!(
            "Search {number}: {}; so far {}",
            capacity.map_or("no capacity".into(), |c| format!("{c} req/s")),
            agreed.map_or("nothing found".into(), |a| a.text())
        ),
        Event::Stepped {
            number,
            rate,
            judgement,
            again,
        } => step_line(number, rate, judgement, again),
    }
}

fn step_line(number: u32, rate: f64, j: &Judgement, again: bool) -> String {
    let terms: Vec<String> = j
        .terms
        .iter()
        .map(|t| {
            format!(
                "{} {} [{}–{}]",
                t.term.figure,
                t.term.value_text(t.value),
                t.term.value_text(t.low),
                t.term.value_text(t.high)
            )
        })
        .collect();
    format!(
        "  step {number}: {rate} req/s: {}{} ({}; served {:.0} req/s){}",
        j.verdict.as_str(),
        if terms.is_empty() {
            String::new()
        } else {
            format!(", {}", terms.join(", "))
        },
        j.reason,
        j.achieved,
        if again { ": again, twice as long" } else { "" }
    )
}

/// The search in words: the capacity with its bracket, why the next step failed, every step.
pub fn text(search: &Search) -> String {
    let mut out = String::new();
    let slo = &search.slo;
    match (search.status, search.capacity) {
        (Status::Found, Some(cap)) => out.push_str(&format!(
            "Capacity: {cap} req/s within {slo} (bracket {cap}–{} req/s, {:.1} %)\n",
            search.failed_at.unwrap_or(cap),
            search.width().unwrap_or(0.0) * 100.0
        )),
        (Status::GeneratorLimited, Some(cap)) => out.push_str(&format!(
            "Capacity: at least {cap} req/s within {slo} (the generator's limit: it could not drive {} req/s validly)\n",
            search.generator_limit.map_or("more".into(), |l| l.to_string())
        )),
        (_, Some(cap)) => out.push_str(&format!(
            "Capacity: at least {cap} req/s within {slo} ({})\n",
            search.status.as_str()
        )),
        (_, None) => out.push_str(&format!(
            "Capacity: not found within {slo} ({})\n",
            search.status.as_str()
        )),
    }
    out.push_str(&format!("Why it ends there: {}\n", search.reason));
    if let Some(a) = search.settings.arrival {
        out.push_str(&format!("Arrivals: {}\n", a.text()));
    }
    out.push('\n');
    let headers: Vec<String> = search
        .slo
        .terms
        .iter()
        .map(|t| format!("{} [95 %]", t.figure))
        .collect();
    out.push_str(&format!(
        "{:>4}  {:>10}  {:<16}  {:>10}  {}\n",
        "step",
        "req/s",
        "verdict",
        "served",
        headers.join("  ")
    ));
    for s in &search.steps {
        let terms: Vec<String> = s
            .judgement
            .terms
            .iter()
            .map(|t| {
                format!(
                    "{} [{}–{}]",
                    t.term.value_text(t.value),
                    t.term.value_text(t.low),
                    t.term.value_text(t.high)
                )
            })
            .collect();
        out.push_str(&format!(
            "{:>4}  {:>10}  {:<16}  {:>10.0}  {}\n",
            s.number,
            s.rate,
            s.judgement.verdict.as_str(),
            s.judgement.achieved,
            terms.join("  ")
        ));
    }
    out
}
