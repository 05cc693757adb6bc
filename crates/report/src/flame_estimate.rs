//! A gate's differential flame graph, drawn from its estimates and not from two profiles'
//! shares ([`analysis::ab::functions::CallTree`]): each box a code path, as wide as the
//! candidate's CPU per request on it (µs, the mean over the rounds), red where it grew beyond
//! noise, blue where it shrank beyond noise, grey where its change is within noise however its
//! share moved; hovering a box gives both builds' µs a request and the interval of its change.
//!
//! Written by hand (with maud, which escapes every name) rather than by inferno: inferno
//! colours a box by its samples' difference and titles it by function name, and this graph's
//! colour and title are each path's own estimate. The page shows this very SVG inline, and
//! writes it beside the page as a file: the two cannot disagree.

use analysis::ab::functions::{signed_us, CallTree, FunctionChange, Functions, FDR};
use maud::{html, Markup};

/// The graph's width, pixels.
const WIDTH: f64 = 1200.0;
/// Left and right margins, pixels.
const MARGIN: f64 = 10.0;
/// A box's height, pixels.
const ROW: f64 = 17.0;
/// Where the boxes start below the title and its four lines.
const TOP: f64 = 93.0;
/// The label's font: monospace, about this wide a character.
const CHAR: f64 = 6.7;

/// "12.3 µs", without a sign.
fn plain_us(v: f64) -> String {
    signed_us(v).trim_start_matches(['+', '−']).to_string()
}

/// A box's fill: grey within noise; red (grew) or blue (shrank) beyond it, deeper the larger
/// its change beside the largest named change (`largest`).
fn fill(c: &FunctionChange, largest: f64) -> String {
    if !c.named {
        return "rgb(221,221,221)".into();
    }
    let t = if largest > 0.0 {
        (c.difference_us.abs() / largest).clamp(0.0, 1.0)
    } else {
        1.0
    };
    let pale = (215.0 - 175.0 * t).round() as u8;
    if c.difference_us > 0.0 {
        format!("rgb(255,{pale},{pale})")
    } else {
        format!("rgb({pale},{pale},255)")
    }
}

/// What hovering a box says.
fn title(c: &FunctionChange, names: (&str, &str)) -> String {
    let verdict = if c.named {
        format!("beyond noise ({:.1} % interval)", c.level * 100.0)
    } else {
        "within noise (95 % interval)".to_string()
    };
    format!(
        "{}\n{}: {} a request, {}: {} (it and what it called on this path)\nchange {} ({} to {}): {verdict}",
        c.name,
        names.0,
        plain_us(c.baseline_us),
        names.1,
        plain_us(c.candidate_us),
        signed_us(c.difference_us),
        signed_us(c.low_us),
        signed_us(c.high_us),
    )
}

/// A box's label cut to fit `width` pixels; none when under three characters fit.
fn label(name: &str, width: f64) -> Option<String> {
    let fits = ((width - 6.0) / CHAR).floor();
    if fits < 3.0 {
        return None;
    }
    let fits = fits as usize;
    if name.chars().count() <= fits {
        Some(name.to_string())
    } else {
        Some(name.chars().take(fits - 1).chain(['…']).collect())
    }
}

/// Each path's box: x, width (pixels) and depth (the root 0).
fn layout(tree: &CallTree) -> Vec<(f64, f64, usize)> {
    let root = tree.paths.first().map_or(0.0, |p| p.change.candidate_us);
    let scale = if root > 0.0 {
        (WIDTH - 2.0 * MARGIN) / root
    } else {
        0.0
    };
    let mut boxes = vec![(MARGIN, root * scale, 0usize); tree.paths.len()];
    // Where each box's next callee starts: callees follow their caller in the list.
    let mut next = boxes.iter().map(|b| b.0).collect::<Vec<f64>>();
    for (i, p) in tree.paths.iter().enumerate().skip(1) {
        let Some(parent) = p.parent.filter(|&q| q < i) else {
            continue;
        };
        let width = p.change.candidate_us * scale;
        boxes[i] = (next[parent], width, boxes[parent].2 + 1);
        next[parent] += width;
        next[i] = boxes[i].0;
    }
    boxes
}

/// The differential flame graph of `functions` (the candidate's against the baseline's;
/// `names` the two, "main" and "pr", "the passing steps" and "the failing steps"; `over` what
/// the estimates are over, "8 rounds"), as an SVG document; `None` without a call tree.
pub fn svg(functions: &Functions, names: (&str, &str), over: &str) -> Option<String> {
    let tree = functions.tree.as_ref().filter(|t| !t.paths.is_empty())?;
    let boxes = layout(tree);
    let depth = boxes.iter().map(|b| b.2).max().unwrap_or(0);
    let height = TOP + (depth + 1) as f64 * ROW + MARGIN;
    let largest = tree
        .named()
        .map(|p| p.change.difference_us.abs())
        .fold(0.0, f64::max);
    let root = &tree.paths[0].change;
    let named = tree.named().count();
    let lines = [
        format!(
            "Each box a call path, as wide as the CPU per request on it in {} ({} in all).",
            names.1,
            plain_us(root.candidate_us),
        ),
        format!(
            "Red: more than in {}, blue: less, beyond noise; grey: within noise.",
            names.0
        ),
        format!(
            "{named} of {} call paths named as changed ({:.0} % false discovery rate, {over}); hover a box for the µs a request of both and its interval.",
            tree.tested,
            FDR * 100.0,
        ),
        match &tree.hidden_largest {
            Some(h) => format!(
                "{} more changed beyond noise but are too narrow in {} to draw; the largest: {} {}.",
                tree.hidden_named,
                names.1,
                h.name,
                h.figure()
            ),
            None => String::new(),
        },
    ];
    let markup: Markup = html! {
        svg xmlns="http://www.w3.org/2000/svg" class="estimated-flame" width="100%"
            viewBox=(format!("0 0 {WIDTH} {height}")) font-family="monospace" font-size="11" {
            text x=(MARGIN) y="18" font-size="14" font-weight="bold" {
                "Where the CPU per request changed: " (names.1) " against " (names.0)
            }
            @for (i, line) in lines.iter().enumerate() {
                text x=(MARGIN) y=(36 + 15 * i) font-size="11" fill="rgb(60,60,60)" { (line) }
            }
            @for (p, (x, w, d)) in tree.paths.iter().zip(&boxes) {
                @let y = TOP + (depth - d) as f64 * ROW;
                g class=(if p.change.named { "changed" } else { "noise" }) {
                    title { (title(&p.change, names)) }
                    rect x=(format!("{x:.2}")) y=(y) width=(format!("{:.2}", w.max(0.5))) height=(ROW - 1.0)
                        rx="2" fill=(fill(&p.change, largest)) {}
                    @if let Some(l) = label(&p.change.name, *w) {
                        text x=(format!("{:.2}", x + 3.0)) y=(y + ROW - 5.0) { (l) }
                    }
                }
            }
        }
    };
    Some(markup.into_string())
}

#[cfg(test)]
mod tests;
