//! A latency heatmap's SVG, from its data ([`crate::model::heatmap::HeatmapData`]): time on
//! x, latency on a log y, each cell's colour the count of requests that took that long in that
//! slice of the run.
//!
//! Drawn as SVG by hand rather than with plotters: every cell carries its exact count and range
//! (`data-count`, and a `<title>` a browser shows on hover, with JavaScript off too), which
//! plotters cannot write. The counts of all cells add up to the run's completed requests.

use std::fmt::Write as _;

use crate::model::heatmap::{edge, HeatmapData, BINS_PER_DECADE};

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
    latency_axis(&mut out, &frame);
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
        let t0 = columns.first().map_or(0.0, |c| c.0 .0);
        let t1 = columns.last().map_or(1.0, |c| c.0 .1).max(t0 + 1e-9);
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
/// and its range.
fn cells(out: &mut String, map: &HeatmapData, frame: &Frame) {
    let row_h = frame.row_h;
    let scale = (map.max as f64 + 1.0).ln();
    for ((start, end), counts) in &map.columns {
        let (x0, x1) = (frame.x(*start), frame.x(*end));
        for (bin, &n) in counts.iter().enumerate().take(frame.high).skip(frame.low) {
            if n == 0 {
                continue;
            }
            let shade = (n as f64 + 1.0).ln() / scale;
            let _ = write!(
                out,
                r#"<rect x="{x0:.2}" y="{:.2}" width="{:.2}" height="{row_h:.2}" fill="{}" data-count="{n}"><title>{n} requests took {}–{} from {start:.1} s to {end:.1} s</title></rect>"#,
                frame.y(bin + 1),
                (x1 - x0).max(0.5),
                color(shade),
                duration(edge(bin)),
                duration(edge(bin + 1)),
            );
        }
    }
}

/// The latency axis: a tick and a label each decade.
fn latency_axis(out: &mut String, frame: &Frame) {
    let per = BINS_PER_DECADE as usize;
    for d in (frame.low / per)..=(frame.high / per) {
        let bin = d * per;
        let yy = frame.y(bin);
        let _ = write!(
            out,
            r##"<line x1="{}" x2="{LEFT}" y1="{yy:.2}" y2="{yy:.2}" stroke="#999"/><text x="{}" y="{:.2}" text-anchor="end">{}</text>"##,
            LEFT - 4.0,
            LEFT - 6.0,
            yy + 4.0,
            duration(edge(bin))
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
            short(t)
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

fn short(t: f64) -> String {
    if (t - t.round()).abs() < 1e-6 {
        format!("{}", t.round())
    } else {
        format!("{t:.1}")
    }
}

/// `1µs`, `316µs`, `10ms`, `1.78s`.
fn duration(ns: f64) -> String {
    let (v, unit) = if ns >= 1e9 {
        (ns / 1e9, "s")
    } else if ns >= 1e6 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e3, "µs")
    };
    let text = format!("{:.3}", v);
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{}{unit}", Number(text))
}

/// Three significant digits of a number already written with three decimals.
struct Number<'a>(&'a str);

impl std::fmt::Display for Number<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let v: f64 = self.0.parse().unwrap_or(0.0);
        let digits = if v >= 100.0 {
            0
        } else if v >= 10.0 {
            1
        } else {
            2
        };
        let text = format!("{v:.digits$}");
        let text = if text.contains('.') {
            text.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            text
        };
        f.write_str(&text)
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
            svg.contains("100 requests took 42.2ms–56.2ms from 1.0 s to 2.0 s"),
            "{svg}"
        );
        assert!(svg.contains("&lt;latency&gt;"));
    }

    #[test]
    fn durations_have_three_significant_digits() {
        assert_eq!(duration(1e3), "1µs");
        assert_eq!(duration(316_227.0), "316µs");
        assert_eq!(duration(1.778e9), "1.78s");
    }
}
