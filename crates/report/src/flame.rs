//! Flame graphs as SVG, from their data ([`crate::model::flame::FlameData`]): a run's profile,
//! a run's stacks against another's, and a gate's (or a knee's) call paths from their
//! estimates are all drawn here, the same way: the root at the bottom, each box on its caller,
//! as wide as its share of the root, its name cut to fit, its hover text as its `<title>`.
//! Written with maud, which escapes every name. The pages' script draws the same data to the
//! same SVG, character for character (`flameSvg` in `assets/showdown.js`, held to it by
//! `tests/it/flames.rs`), and adds a zoom and a search.

use maud::{html, Markup};

use crate::model::flame::{FlameBox, FlameData};
use crate::model::number::fixed;

/// The graph's width, pixels.
pub const WIDTH: f64 = 1200.0;
/// Left and right margins, pixels.
pub const MARGIN: f64 = 10.0;
/// A box's height, pixels.
pub const ROW: f64 = 17.0;
/// The label's font: monospace, about this wide a character.
const CHAR: f64 = 6.7;

/// Where the boxes start: below the title and its lines, where it has them.
fn top(data: &FlameData) -> f64 {
    if data.title.is_empty() && data.lines.is_empty() {
        4.0
    } else {
        33.0 + 15.0 * data.lines.len() as f64
    }
}

/// A box's label cut to fit `width` pixels; none when under three characters fit, or for an
/// empty name (as the script has it).
fn label(name: &str, width: f64) -> Option<String> {
    let fits = ((width - 6.0) / CHAR).floor();
    if fits < 3.0 || name.is_empty() {
        return None;
    }
    let fits = fits as usize;
    if name.chars().count() <= fits {
        Some(name.to_string())
    } else {
        Some(name.chars().take(fits - 1).chain(['…']).collect())
    }
}

/// Box `i`: its `<g>` with its title, rectangle and label (its coordinates written by the
/// numbers' rule, as the pages' script writes them).
fn drawn(data: &FlameData, i: usize, b: &FlameBox, y: f64) -> Markup {
    let span = WIDTH - 2.0 * MARGIN;
    let (x, w) = (MARGIN + b.start * span, b.width * span);
    let name = data.name(b);
    html! {
        g class=[b.class] data-frame=(name) data-n=[b.n.map(f64::round)]
            data-delta=[b.delta.map(|d| fixed(d, 4))] data-box=(i) {
            title { (b.title) }
            rect x=(fixed(x, 2)) y=(y) width=(fixed(w.max(0.5), 2)) height=(ROW - 1.0)
                rx="2" fill=(b.fill) {}
            @if let Some(l) = label(name, w) {
                text x=(fixed(x + 3.0, 2)) y=(y + ROW - 5.0) { (l) }
            }
        }
    }
}

/// `data` as an SVG document: its title and lines above, its boxes below, and the share of the
/// root too narrow to draw where there is one.
pub fn svg(data: &FlameData) -> String {
    let depth = f64::from(data.depth());
    let top = top(data);
    let height = top + (depth + 1.0) * ROW + if data.hidden > 0.0 { 16.0 } else { 4.0 };
    let hidden = (data.hidden > 0.0).then(|| {
        format!(
            "Paths narrower than a quarter of a pixel, {} % of the whole together, are not drawn.",
            fixed(data.hidden * 100.0, 2)
        )
    });
    let markup: Markup = html! {
        svg xmlns="http://www.w3.org/2000/svg" class="flame-graph" width="100%"
            viewBox=(format!("0 0 {WIDTH} {height}")) font-family="monospace" font-size="11" {
            @if !data.title.is_empty() {
                text x=(MARGIN) y="18" font-size="14" font-weight="bold" { (data.title) }
            }
            @for (i, line) in data.lines.iter().enumerate() {
                text x=(MARGIN) y=(36 + 15 * i) font-size="11" fill="rgb(60,60,60)" { (line) }
            }
            @for (i, b) in data.boxes.iter().enumerate() {
                (drawn(data, i, b, top + (depth - f64::from(b.depth)) * ROW))
            }
            @if let Some(h) = hidden {
                text x=(MARGIN) y=(height - 4.0) font-size="10" fill="rgb(90,90,90)" { (h) }
            }
        }
    };
    markup.into_string()
}

#[cfg(test)]
mod tests;
