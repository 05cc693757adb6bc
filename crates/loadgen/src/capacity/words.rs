//! The search in words: a line per step as it ends, the whole search as text, and repeated
//! searches with the figure their steps agree on, pooled.

use analysis::capacity::judge::TermResult;
use analysis::capacity::{Judgement, Repeated, Search, Status};

use super::search::Event;

/// One line for an event of the loop (what `loadgen capacity` prints on standard error).
pub fn event(event: Event<'_>) -> String {
    match event {
        Event::Resumed { after } => format!("Resuming the search after its step {after}"),
        Event::Warmed { warmed } => format!("  The server {}", warmed.text()),
        Event::Checking { blocks, rates } => format!(
            "Calibration check: {blocks} blocks of one step at {}, each block in a seeded random order; then the search again",
            rates
                .iter()
                .map(|(name, r)| format!("{name} {r:.0} req/s"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Event::Round { number, of, order } => {
            format!("Round {number} of {of}: {}", order.join(", then "))
        }
        Event::Searched {
            number,
            capacity,
            agreed,
        } => format!(
            "Search {number}: {}; so far {}",
            capacity.map_or("no capacity".into(), |c| format!("{c:.0} req/s")),
            agreed.map_or("nothing found".into(), |a| a.text())
        ),
        Event::Stepped {
            number,
            rate,
            judgement,
            again,
            limit,
        } => {
            let line = step_line(number, rate, judgement, again);
            match limit {
                Some(l) => format!("{line}\n    limited by {}", l.why),
                None => line,
            }
        }
    }
}

/// A term as measured: "1.15ms [861µs–1.45ms]".
fn measured(t: &TermResult) -> String {
    format!(
        "{} [{}–{}]",
        t.term.value_text(t.value),
        t.term.value_text(t.low),
        t.term.value_text(t.high)
    )
}

fn step_line(number: u32, rate: f64, j: &Judgement, again: bool) -> String {
    let terms: Vec<String> = j
        .terms
        .iter()
        .map(|t| format!("{} {}", t.term.figure, measured(t)))
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

/// The searches in words: one alone as ever; several with the figure they agree on first.
pub fn repeated(repeated: &Repeated) -> String {
    let [search] = repeated.searches.as_slice() else {
        let mut out = match &repeated.capacity {
            Some(a) => format!(
                "Capacity: {}{}\n",
                if repeated.at_least.is_some() {
                    "at least "
                } else {
                    ""
                },
                a.text()
            ),
            None => "Capacity: not found\n".to_string(),
        };
        out.push_str(&format!(
            "Why the searches end there: {}\n",
            repeated.stopped
        ));
        for (i, s) in repeated.searches.iter().enumerate() {
            out.push_str(&format!("\nSearch {} ({}):\n{}", i + 1, s.id, text(s)));
        }
        return out;
    };
    text(search)
}

/// The search in words: the figure with its 95 % interval, why it ends there, every step.
pub fn text(search: &Search) -> String {
    let mut out = headline(search);
    out.push_str(&notes(search));
    out.push('\n');
    out.push_str(&steps_table(search));
    out
}

/// The figure's line: the capacity with its interval, at least a rate, or not found.
fn headline(search: &Search) -> String {
    let slo = &search.slo;
    match (search.status, search.capacity) {
        (Status::GeneratorLimited, Some(cap)) => format!(
            "Capacity: at least {cap} req/s within {slo} (the generator's limit: it could not drive {} req/s validly)\n",
            search.generator_limit.map_or("more".into(), |l| l.to_string())
        ),
        (Status::AboveMaximum | Status::BelowMinimum, Some(cap)) => format!(
            "Capacity: at least {cap} req/s within {slo} ({})\n",
            search.status.as_str()
        ),
        (_, Some(cap)) => match search.estimate() {
            Some(e) => format!(
                "Capacity: {} = {} within {slo}\n",
                search.settings.figure(),
                e.text()
            ),
            None => format!(
                "Capacity: at least {cap} req/s within {slo} (its highest pass: no fail bounds it; {})\n",
                search.status.as_str()
            ),
        },
        (_, None) => format!(
            "Capacity: not found within {slo} ({})\n",
            search.status.as_str()
        ),
    }
}

/// What the figure is checked against and promises, why the search ends there, and what it
/// found of the server and the host on the way: a line each.
fn notes(search: &Search) -> String {
    let mut out = String::new();
    if search.estimate().is_some() {
        out.push_str(&format!("Checked: {}\n", analysis::capacity::CHECKED));
        if let Some(w) = search.estimate().and_then(|e| e.wide_knee()) {
            out.push_str(&format!("{w}\n"));
        }
    }
    for e in search.estimates.iter().skip(1) {
        out.push_str(&format!(
            "Also: C_{} ≈ {} ({})\n",
            e.p,
            e.text(),
            analysis::capacity::ALSO_CHECKED
        ));
    }
    if search.estimate().is_some() {
        out.push_str(&format!(
            "What it promises: {}\n",
            search.settings.promise()
        ));
    }
    out.push_str(&format!("Why it ends there: {}\n", search.reason));
    if let Some(w) = &search.warmed {
        out.push_str(&format!(
            "Before its first step the server was {}\n",
            w.text()
        ));
    }
    if let Some(d) = &search.drift {
        out.push_str(&format!("Drift: {}\n", d.text()));
    }
    if let Some(c) = &search.check {
        out.push_str(&format!("{}\n", c.text()));
    }
    if let Some(h) = analysis::capacity::sitting(&search.steps) {
        out.push_str(&format!("This sitting: {h}\n"));
    }
    if let Some(a) = search.settings.arrival {
        out.push_str(&format!("Arrivals: {}\n", a.text()));
    }
    out
}

/// Every step of the search: its rate, verdict, what was served and each SLO term measured.
fn steps_table(search: &Search) -> String {
    let headers: Vec<String> = search
        .slo
        .terms
        .iter()
        .map(|t| format!("{} [95 %]", t.figure))
        .collect();
    let mut out = format!(
        "{:>4}  {:<6}  {:>10}  {:<16}  {:>10}  {}\n",
        "step",
        "phase",
        "req/s",
        "verdict",
        "served",
        headers.join("  ")
    );
    for s in &search.steps {
        let terms: Vec<String> = s.judgement.terms.iter().map(measured).collect();
        out.push_str(&format!(
            "{:>4}  {:<6}  {:>10}  {:<16}  {:>10.0}  {}\n",
            s.number,
            if s.fine { "knee" } else { "coarse" },
            s.rate,
            s.judgement.verdict.as_str(),
            s.judgement.achieved,
            terms.join("  ")
        ));
    }
    out
}

/// A comparison in words: its ratios first, then each target's search.
pub fn compared(c: &analysis::capacity::compare::Compared) -> String {
    let mut out = String::new();
    let figure = c
        .searches
        .first()
        .map_or(String::new(), |s| s.settings.figure());
    out.push_str(&format!(
        "Compared: {figure} of {} targets, interleaved over {} rounds (a step of each per round, in a random order)\n",
        c.searches.len(),
        c.rounds
    ));
    for r in &c.ratios {
        out.push_str(&format!("  {}\n", r.text()));
    }
    if c.ratios.is_empty() {
        out.push_str("  no ratio: the searches gave no figures to divide\n");
    }
    if let Some(spread) = &c.spread {
        out.push_str(&format!("  {}\n", spread.text()));
    }
    out.push_str(&format!("Why it ends there: {}\n", c.reason));
    for s in &c.searches {
        out.push_str(&format!("\n== {} (search {}) ==\n", s.name, s.id));
        out.push_str(&text(s));
    }
    out
}
