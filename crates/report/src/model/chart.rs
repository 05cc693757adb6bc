//! A chart as data, before anything draws it: its lines and bands, its axes and the colours
//! of its series, as the pages' builders write them. Each is made into one
//! [`super::ChartData`], which both the SVG (`plot`) and the pages' script draw. Nothing here
//! knows how a chart is drawn.

/// A colour as plain data: red, green, blue. The renderer turns it into its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rgb(pub u8, pub u8, pub u8);

/// Colours for runs and series: strong ones first, paler ones after; a consistent colour per
/// run across every chart of a comparison.
pub const PALETTE: [Rgb; 20] = [
    Rgb(0x1f, 0x77, 0xb4),
    Rgb(0xff, 0x7f, 0x0e),
    Rgb(0x2c, 0xa0, 0x2c),
    Rgb(0xd6, 0x27, 0x28),
    Rgb(0x94, 0x67, 0xbd),
    Rgb(0x8c, 0x56, 0x4b),
    Rgb(0xe3, 0x77, 0xc2),
    Rgb(0x7f, 0x7f, 0x7f),
    Rgb(0xbc, 0xbd, 0x22),
    Rgb(0x17, 0xbe, 0xcf),
    Rgb(0xae, 0xc7, 0xe8),
    Rgb(0xff, 0xbb, 0x78),
    Rgb(0x98, 0xdf, 0x8a),
    Rgb(0xff, 0x98, 0x96),
    Rgb(0xc5, 0xb0, 0xd5),
    Rgb(0xc4, 0x9c, 0x94),
    Rgb(0xf7, 0xb6, 0xd2),
    Rgb(0xc7, 0xc7, 0xc7),
    Rgb(0xdb, 0xdb, 0x8d),
    Rgb(0x9e, 0xda, 0xe5),
];

/// The colour of the `i`th run or series.
pub fn color(i: usize) -> Rgb {
    PALETTE[i % PALETTE.len()]
}

/// `#rrggbb`, for the pages' legends and tables and the pages' script.
pub fn css_color(c: Rgb) -> String {
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

/// One line of a chart.
#[derive(Debug, Clone)]
pub struct Line {
    pub name: String,
    pub color: Rgb,
    pub points: Vec<(f64, f64)>,
    /// Dashed, to tell a second family of lines (e.g. service time) from the first.
    pub dashed: bool,
    /// Drawn as steps with a marker at each point: for series sampled seconds apart (the slow
    /// collectors'), where a straight line between two samples would show a ramp that was
    /// never measured.
    pub step: bool,
    /// The spread over repetitions at each point, (x, low, high), drawn as a vertical bar.
    pub spread: Vec<(f64, f64, f64)>,
    /// Markers only, no line between them: for points of different things (targets).
    pub markers_only: bool,
    /// Filled down to zero: a layer of a stack (see [`stacked`]).
    pub filled: bool,
    /// A layer's own values, where `points` are the stack's sums up to it: what a reader
    /// hovering the layer asks for.
    pub own: Option<Vec<(f64, f64)>>,
    /// A vertical rule at its first point's x across the whole y axis, whatever its scale (a
    /// capacity marked on a chart across settings): its y values are not figures.
    pub rule: bool,
}

impl Line {
    pub fn new(name: impl Into<String>, color: Rgb, points: Vec<(f64, f64)>) -> Self {
        Line {
            name: name.into(),
            color,
            points,
            dashed: false,
            step: false,
            spread: Vec::new(),
            markers_only: false,
            filled: false,
            own: None,
            rule: false,
        }
    }

    /// A dashed vertical rule at `x`, across the whole y axis of a chart across settings.
    pub fn rule(name: impl Into<String>, color: Rgb, x: f64) -> Self {
        Line {
            rule: true,
            ..Line::new(name, color, vec![(x, 0.0)]).dashed()
        }
    }

    /// The same line, drawn as steps with markers.
    pub fn stepped(mut self) -> Self {
        self.step = true;
        self
    }

    /// The same line, dashed.
    pub fn dashed(mut self) -> Self {
        self.dashed = true;
        self
    }
}

/// Series drawn as a stack: each layer is its series added to those before it, filled down to
/// zero, and the layers are listed (and painted) top first, so each shows its own band.
pub fn stacked(layers: Vec<Line>) -> Vec<Line> {
    let mut sums: Vec<(f64, f64)> = Vec::new();
    let mut out = Vec::new();
    for mut line in layers {
        if line.points.iter().all(|p| p.1 == 0.0) {
            continue;
        }
        sums = if sums.is_empty() {
            line.points.clone()
        } else {
            sums.iter()
                .zip(line.points.iter())
                .map(|(a, b)| (b.0, a.1 + b.1))
                .collect()
        };
        line.own = Some(std::mem::replace(&mut line.points, sums.clone()));
        line.filled = true;
        out.push(line);
    }
    out.reverse();
    out
}

/// The spread between two series over time (p50–p99 of each interval), shaded under the lines:
/// where a line shows one percentile, a band shows how far apart two were.
#[derive(Debug, Clone)]
pub struct Band {
    pub name: String,
    pub color: Rgb,
    /// (x, low, high), sorted by x.
    pub points: Vec<(f64, f64, f64)>,
}

impl Band {
    /// Between two series of the same instants (each interval's percentiles): only the instants
    /// both have.
    pub fn between(name: impl Into<String>, color: Rgb, low: &Line, high: &Line) -> Band {
        let highs: std::collections::HashMap<u64, f64> =
            high.points.iter().map(|&(x, y)| (x.to_bits(), y)).collect();
        Band {
            name: name.into(),
            color,
            points: low
                .points
                .iter()
                .filter_map(|&(x, lo)| highs.get(&x.to_bits()).map(|&hi| (x, lo, hi)))
                .collect(),
        }
    }
}

/// A chart over the run's timeline.
#[derive(Debug, Clone)]
pub struct TimeChart<'a> {
    pub title: &'a str,
    /// The y axis, with its unit: `latency (ms)`.
    pub y_label: &'a str,
    /// Seconds on the run's timeline.
    pub x_range: (f64, f64),
    /// The attack window; the rest of the range is shaded.
    pub attack: Option<(f64, f64)>,
    pub lines: Vec<Line>,
    /// Spreads shaded under the lines.
    pub bands: Vec<Band>,
    /// Moments to mark with a thin vertical line (probe events).
    pub markers: Vec<f64>,
}

/// The end of a distribution's x axis: the next power of ten above its last point, so that the
/// last label is a round percentile.
pub fn percentile_x_max(lines: &[Line]) -> f64 {
    let x_max = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.0))
        .fold(10.0f64, f64::max);
    10f64.powf(x_max.log10().ceil())
}

/// The x axis of a chart across settings.
#[derive(Debug, Clone, PartialEq)]
pub enum XAxis {
    /// Numbers; on a log scale when they span more than a decade and a half.
    Numbers,
    /// Names in order, evenly spaced (x = 0, 1, 2 …).
    Names(Vec<String>),
}

/// A figure against a setting (p99 against rate): one line per target, a marker at each
/// setting, and a bar for the spread over repetitions.
#[derive(Debug, Clone)]
pub struct XyChart<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    pub x: XAxis,
    /// Latencies: drawn on a log scale when they span more than a decade and a half, so that
    /// one overloaded step at a second does not flatten every step near a 10 ms bound onto 0.
    pub y_log: bool,
    pub lines: Vec<Line>,
}

/// Where a chart across settings is drawn, the same for its SVG and its interactive chart: the
/// x range (a little wider than the settings, or half a step beyond names), whether on a log
/// scale (settings spanning more than a decade and a half), and the y range: from 0 to a little
/// above the highest figure or bar, or, for latencies spanning more than a decade and a half,
/// on a log scale a little beyond the lowest and the highest.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct XyFrame {
    pub x: (f64, f64),
    pub log: bool,
    pub y: (f64, f64),
    pub y_log: bool,
}

/// How far apart the lowest and the highest values must be for a log scale.
const LOG_SPAN: f64 = 30.0;

impl XyFrame {
    pub fn of(chart: &XyChart<'_>) -> XyFrame {
        let figures = || chart.lines.iter().filter(|l| !l.rule);
        let xs = chart
            .lines
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.0));
        let (lo, hi) = xs.fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
        let (lo, hi) = if lo <= hi { (lo, hi) } else { (0.0, 1.0) };
        let log = matches!(chart.x, XAxis::Numbers) && lo > 0.0 && hi / lo >= LOG_SPAN;
        let x = match &chart.x {
            XAxis::Names(names) => (-0.5, names.len().max(1) as f64 - 0.5),
            XAxis::Numbers if log => (lo / 1.3, hi * 1.3),
            XAxis::Numbers => {
                let pad = ((hi - lo) * 0.06).max(if hi == lo { 1.0 } else { 0.0 });
                (lo - pad, hi + pad)
            }
        };
        let ys: Vec<f64> = figures()
            .flat_map(|l| {
                let points = l.points.iter().map(|p| p.1);
                points.chain(l.spread.iter().flat_map(|s| [s.1, s.2]))
            })
            .filter(|v| v.is_finite())
            .collect();
        let (y_lo, y_hi) = ys
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), &y| (a.min(y), b.max(y)));
        let y_log = chart.y_log && !ys.is_empty() && y_lo > 0.0 && y_hi / y_lo >= LOG_SPAN;
        let y = if y_log {
            (y_lo / 1.3, y_hi * 1.3)
        } else {
            let top = figures()
                .flat_map(|l| l.spread.iter().map(|s| s.2))
                .fold(y_top(figures()), |a, b| a.max(b * 1.08));
            (0.0, top)
        };
        XyFrame { x, log, y, y_log }
    }

    /// The labelled values of a log y axis: 1, 2 and 5 times each power of ten within its
    /// range (none on a linear axis, where the drawing picks its own).
    pub fn y_ticks(&self) -> Vec<f64> {
        if !self.y_log {
            return Vec::new();
        }
        let (lo, hi) = self.y;
        let mut out = Vec::new();
        let mut decade = 10f64.powf(lo.log10().floor());
        while decade <= hi {
            for m in [1.0, 2.0, 5.0] {
                let v = decade * m;
                if v >= lo && v <= hi {
                    out.push(v);
                }
            }
            decade *= 10.0;
        }
        out
    }
}

/// The top of the y axis: a little above the highest point, and never an empty range.
pub fn y_top<'a>(lines: impl IntoIterator<Item = &'a Line>) -> f64 {
    top(lines.into_iter().flat_map(|l| l.points.iter().map(|p| p.1)))
}

/// The top of a y axis from 0 showing `values`: a little above the highest, and never an
/// empty range.
pub fn top(values: impl IntoIterator<Item = f64>) -> f64 {
    let max = values
        .into_iter()
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    if max > 0.0 {
        max * 1.08
    } else {
        1.0
    }
}

/// Charts the tests of the model and of its renderers draw alike.
#[cfg(test)]
pub(crate) mod examples {
    use super::*;

    /// A search's p99 against rate: steps near a 10 ms bound and one overloaded step at
    /// 1,250 ms.
    pub(crate) fn p99_steps() -> Line {
        Line::new(
            "p99",
            PALETTE[0],
            vec![
                (1000.0, 0.8),
                (2000.0, 2.5),
                (2400.0, 9.0),
                (2600.0, 1250.0),
            ],
        )
    }

    /// `lines` against the offered rate, latencies on a log scale where they span decades
    /// (`y_log`).
    pub(crate) fn against_rate(y_log: bool, lines: Vec<Line>) -> XyChart<'static> {
        XyChart {
            title: "p99 against the offered rate",
            x_label: "offered rate (req/s)",
            y_label: "p99 latency (ms)",
            x: XAxis::Numbers,
            y_log,
            lines,
        }
    }
}
