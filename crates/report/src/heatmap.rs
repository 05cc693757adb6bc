//! A latency heatmap's SVG, from its data ([`crate::model::heatmap::HeatmapData`]): time on
//! x, latency on a log y, each cell's colour the count of requests that took that long in that
//! slice of the run.
//!
//! Drawn as SVG by hand rather than with plotters: every cell carries its exact count and range
//! (`data-count`, and a `<title>` a browser shows on hover, with JavaScript off too), which
//! plotters cannot write. The counts of all cells add up to the run's completed requests.
//!
//! This is the page's picture for print and for pages read without script. The page carries
//! the same data beside it as JSON, from which its script (`assets/showdown.js`) draws the same
//! cells, colours and axes (this module's geometry and colour scale, its twin), names the cell
//! under the pointer in a line below, and keeps only the columns of the time charts' window.
//! Both read only the data: its rows' edges, its columns' slices and counts.

use std::fmt::Write as _;

use crate::model::heatmap::HeatmapData;
use crate::model::number::{number, seconds};

const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 300.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 28.0;
const BOTTOM: f64 = 40.0;

/// The heatmap as an SVG document, titled `title`.
pub fn svg(map: &HeatmapData, title: &str) -> String {
    let frame = Frame::of(map);
    let (w, h) = (frame.w, frame.h);
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" class="heatmap" data-total="{}" font-family="sans-serif" font-size="11">"#,
        map.total
    );
    let _ = write!(
        out,
        r##"<text x="{LEFT}" y="16" font-size="13" font-weight="600">{}</text><rect x="{LEFT}" y="{TOP}" width="{w}" height="{h}" fill="#fafafa" stroke="#ccc"/>"##,
        escape(title)
    );
    cells(&mut out, map, &frame);
    // Axes: a label each decade, seconds along the run.
    latency_axis(&mut out, map, &frame);
    time_axis(&mut out, &frame);
    let _ = write!(
        out,
        r#"<text x="{}" y="{}" text-anchor="middle">time since the attack started (s)</text><text transform="translate(14 {}) rotate(-90)" text-anchor="middle">{} latency</text></svg>"#,
        LEFT + w / 2.0,
        HEIGHT - 6.0,
        TOP + h / 2.0,
        escape(&map.kind)
    );
    out
}

/// Where the heatmap is drawn: the run's time on x, the bins drawn on y, the plot's size.
struct Frame {
    t0: f64,
    t1: f64,
    w: f64,
    h: f64,
    low: usize,
    high: usize,
    row_h: f64,
}

impl Frame {
    /// The frame of `map`: from its first column's start to its last one's end, its rows.
    fn of(map: &HeatmapData) -> Frame {
        let columns = &map.columns;
        let (low, high) = map.rows;
        let t0 = columns.first().map_or(0.0, |c| c.from);
        let t1 = columns.last().map_or(1.0, |c| c.to).max(t0 + 1e-9);
        let (w, h) = (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
        let row_h = h / (high - low) as f64;
        Frame {
            t0,
            t1,
            w,
            h,
            low,
            high,
            row_h,
        }
    }

    /// Where time `t` (s) lies on x.
    fn x(&self, t: f64) -> f64 {
        LEFT + (t - self.t0) / (self.t1 - self.t0) * self.w
    }

    /// Where the bottom edge of `bin` lies on y.
    fn y(&self, bin: usize) -> f64 {
        TOP + self.h - (bin - self.low) as f64 * self.row_h
    }
}

/// Every cell with a request: its rect, shaded by its count on a log scale, with its count
/// and its range (row `i` of a column is bin `low + i`, from `edges[i]` to `edges[i + 1]`).
fn cells(out: &mut String, map: &HeatmapData, frame: &Frame) {
    let row_h = frame.row_h;
    let scale = (map.max as f64 + 1.0).ln();
    for column in &map.columns {
        let (start, end) = (column.from, column.to);
        let (x0, x1) = (frame.x(start), frame.x(end));
        let rows = column.counts.iter().zip(map.edges.windows(2));
        for (i, (&n, range)) in rows.enumerate() {
            if n == 0 {
                continue;
            }
            let shade = (n as f64 + 1.0).ln() / scale;
            let _ = write!(
                out,
                r#"<rect x="{x0:.2}" y="{:.2}" width="{:.2}" height="{row_h:.2}" fill="{}" data-count="{n}"><title>{} {} took {}–{}, from {} to {}.</title></rect>"#,
                frame.y(frame.low + i + 1),
                (x1 - x0).max(0.5),
                color(shade),
                number(n as f64),
                if n == 1 { "request" } else { "requests" },
                duration(range[0]),
                duration(range[1]),
                seconds(start),
                seconds(end),
            );
        }
    }
}

/// The latency axis: a tick and a label each decade (each bin a multiple of the bins a decade).
fn latency_axis(out: &mut String, map: &HeatmapData, frame: &Frame) {
    let per = (map.bins_per_decade as usize).max(1);
    for d in (frame.low / per)..=(frame.high / per) {
        let bin = d * per;
        let Some(&bottom) = bin.checked_sub(frame.low).and_then(|i| map.edges.get(i)) else {
            continue;
        };
        let yy = frame.y(bin);
        let _ = write!(
            out,
            r##"<line x1="{}" x2="{LEFT}" y1="{yy:.2}" y2="{yy:.2}" stroke="#999"/><text x="{}" y="{:.2}" text-anchor="end">{}</text>"##,
            LEFT - 4.0,
            LEFT - 6.0,
            yy + 4.0,
            duration(bottom)
        );
    }
}

/// The time axis: a tick and a label at round steps of seconds along the run.
fn time_axis(out: &mut String, frame: &Frame) {
    let h = frame.h;
    let step = nice_step((frame.t1 - frame.t0) / 8.0);
    let mut t = (frame.t0 / step).ceil() * step;
    while t <= frame.t1 + 1e-9 {
        let xx = frame.x(t);
        let _ = write!(
            out,
            r##"<line x1="{xx:.2}" x2="{xx:.2}" y1="{}" y2="{}" stroke="#999"/><text x="{xx:.2}" y="{}" text-anchor="middle">{}</text>"##,
            TOP + h,
            TOP + h + 4.0,
            TOP + h + 16.0,
            number(t)
        );
        t += step;
    }
}

/// Light yellow for one request, through orange and red, to dark purple for the most.
fn color(shade: f64) -> String {
    const STOPS: [(f64, [u8; 3]); 4] = [
        (0.0, [255, 237, 160]),
        (0.4, [253, 141, 60]),
        (0.7, [215, 25, 28]),
        (1.0, [73, 0, 106]),
    ];
    let s = shade.clamp(0.0, 1.0);
    let i = STOPS
        .iter()
        .rposition(|(at, _)| *at <= s)
        .unwrap_or(0)
        .min(2);
    let ((a, ca), (b, cb)) = (STOPS[i], STOPS[i + 1]);
    let f = ((s - a) / (b - a)).clamp(0.0, 1.0);
    let mix = |k: usize| (ca[k] as f64 + (cb[k] as f64 - ca[k] as f64) * f).round() as u8;
    format!("#{:02x}{:02x}{:02x}", mix(0), mix(1), mix(2))
}

fn nice_step(raw: f64) -> f64 {
    let raw = raw.max(1e-6);
    let p = 10f64.powf(raw.log10().floor());
    let m = raw / p;
    p * if m <= 1.0 {
        1.0
    } else if m <= 2.0 {
        2.0
    } else if m <= 5.0 {
        5.0
    } else {
        10.0
    }
}

/// A latency (ns) in the unit its size asks, its figure by the pages' one number rule
/// ([`number`]), as the page's script writes it: `100µs`, `177.8µs`, `1ms`, `42.17ms`, `1.5s`.
fn duration(ns: f64) -> String {
    if ns >= 1e9 - 0.5 {
        format!("{}s", number(ns / 1e9))
    } else if ns >= 1e6 - 0.5 {
        format!("{}ms", number(ns / 1e6))
    } else {
        format!("{}µs", number(ns / 1e3))
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::heatmap::examples::two_modes;

    #[test]
    fn every_request_is_in_one_cell_and_the_cells_add_up() {
        let svg = svg(&two_modes().data().unwrap(), "corrected <latency>");
        let doc = roxmltree::Document::parse(&svg).unwrap();
        let counts: u64 = doc
            .descendants()
            .filter_map(|n| n.attribute("data-count"))
            .map(|c| c.parse::<u64>().unwrap())
            .sum();
        assert_eq!(counts, 2000);
        assert!(
            svg.contains("100 requests took 42.17ms–56.23ms, from 1.00 s to 2.00 s."),
            "{svg}"
        );
        assert!(svg.contains("&lt;latency&gt;"));
    }

    #[test]
    fn durations_follow_the_pages_number_rule() {
        assert_eq!(duration(1e3), "1µs");
        assert_eq!(duration(316_227.0), "316.2µs");
        assert_eq!(duration(42_170_000.0), "42.17ms");
        assert_eq!(duration(999_999.7), "1ms");
        assert_eq!(duration(1.778e9), "1.778s");
    }
}
