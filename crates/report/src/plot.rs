//! SVG charts, drawn with plotters' SVG backend.
//!
//! Two kinds: a chart over the run's timeline (every time chart of a page shares one x range,
//! with the time before and after the attack shaded, so that the charts line up when read one
//! under another) and the HdrHistogram percentile distribution (x = 1 / (1 − p) on a log
//! scale, labelled 90 %, 99 %, 99.9 % …). The legend is drawn under the plot, never over the
//! data, and wraps however many runs a comparison has. Text in an SVG is escaped by plotters.

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::downsample;

/// The drawing's width in SVG units; pages scale it to the screen.
pub const WIDTH: u32 = 720;
const PLOT_HEIGHT: u32 = 330;
const LEGEND_ROW: u32 = 20;
const FONT: &str = "sans-serif";
/// Buckets per series when downsampling: about one per two pixels of plot width.
const BUCKETS: usize = 320;

/// Colours for runs and series: strong ones first, paler ones after; a consistent colour per
/// run across every chart of a comparison.
pub const PALETTE: [RGBColor; 20] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x7f, 0x7f, 0x7f),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x17, 0xbe, 0xcf),
    RGBColor(0xae, 0xc7, 0xe8),
    RGBColor(0xff, 0xbb, 0x78),
    RGBColor(0x98, 0xdf, 0x8a),
    RGBColor(0xff, 0x98, 0x96),
    RGBColor(0xc5, 0xb0, 0xd5),
    RGBColor(0xc4, 0x9c, 0x94),
    RGBColor(0xf7, 0xb6, 0xd2),
    RGBColor(0xc7, 0xc7, 0xc7),
    RGBColor(0xdb, 0xdb, 0x8d),
    RGBColor(0x9e, 0xda, 0xe5),
];

/// The colour of the `i`th run or series.
pub fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// `#rrggbb`, for the pages' legends and tables.
pub fn css_color(c: RGBColor) -> String {
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

const SHADE: RGBColor = RGBColor(0xee, 0xee, 0xee);
const GRID: RGBColor = RGBColor(0xdd, 0xdd, 0xdd);
const MARKER: RGBColor = RGBColor(0x99, 0x99, 0x99);

/// One line of a chart.
#[derive(Debug, Clone)]
pub struct Line {
    pub name: String,
    pub color: RGBColor,
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
    pub fn new(name: impl Into<String>, color: RGBColor, points: Vec<(f64, f64)>) -> Self {
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
    pub fn rule(name: impl Into<String>, color: RGBColor, x: f64) -> Self {
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
    pub color: RGBColor,
    /// (x, low, high), sorted by x.
    pub points: Vec<(f64, f64, f64)>,
}

impl Band {
    /// Between two series of the same instants (each interval's percentiles): only the instants
    /// both have.
    pub fn between(name: impl Into<String>, color: RGBColor, low: &Line, high: &Line) -> Band {
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

/// Step-after: each value holds until the next sample.
fn steps(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(points.len() * 2);
    for (i, &p) in points.iter().enumerate() {
        if i > 0 {
            out.push((p.0, points[i - 1].1));
        }
        out.push(p);
    }
    out
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

/// Why a chart could not be drawn (plotters' own error, as text).
#[derive(Debug, thiserror::Error)]
#[error("drawing the chart {title:?} failed: {message}")]
pub struct PlotError {
    pub title: String,
    pub message: String,
}

fn failed<E: std::fmt::Display>(title: &str) -> impl Fn(E) -> PlotError + '_ {
    move |e| PlotError {
        title: title.to_string(),
        message: e.to_string(),
    }
}

/// Whether a chart would have anything to show.
pub fn has_data(lines: &[Line]) -> bool {
    lines.iter().any(|l| !l.points.is_empty())
}

/// The chart as an SVG document.
pub fn time_chart(chart: &TimeChart<'_>) -> Result<String, PlotError> {
    let err = failed(chart.title);
    let (x0, mut x1) = chart.x_range;
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    let lines = &chart.lines;
    let y1 = y_top(&chart.lines);
    let mut svg = String::new();
    {
        let (root, legend) = canvas(&mut svg, lines);
        root.fill(&WHITE).map_err(&err)?;
        let mut c = ChartBuilder::on(&root)
            .caption(chart.title, (FONT, 17))
            .margin(8)
            .margin_right(20)
            .x_label_area_size(36)
            .y_label_area_size(64)
            .build_cartesian_2d(x0..x1, 0f64..y1)
            .map_err(&err)?;
        if let Some((a0, a1)) = chart.attack {
            let shaded = [(x0, a0.max(x0)), (a1.min(x1), x1)];
            c.draw_series(
                shaded
                    .into_iter()
                    .filter(|(from, to)| to > from)
                    .map(|(from, to)| Rectangle::new([(from, 0.0), (to, y1)], SHADE.filled())),
            )
            .map_err(&err)?;
        }
        c.configure_mesh()
            .x_desc("time since the attack started (s)")
            .y_desc(chart.y_label)
            .bold_line_style(GRID)
            .max_light_lines(0)
            .x_labels(10)
            .y_labels(6)
            .y_label_formatter(&|v| number(*v))
            .x_label_formatter(&|v| number(*v))
            .label_style((FONT, 13))
            .axis_desc_style((FONT, 14))
            .draw()
            .map_err(&err)?;
        c.draw_series(
            chart
                .markers
                .iter()
                .filter(|t| (x0..=x1).contains(*t))
                .map(|&t| PathElement::new(vec![(t, 0.0), (t, y1)], MARKER.stroke_width(1))),
        )
        .map_err(&err)?;
        for band in &chart.bands {
            for piece in downsample::envelope(&band.points, BUCKETS) {
                let outline: Vec<(f64, f64)> = piece
                    .iter()
                    .map(|&(x, _, hi)| (x, hi))
                    .chain(piece.iter().rev().map(|&(x, lo, _)| (x, lo)))
                    .collect();
                c.draw_series(std::iter::once(Polygon::new(
                    outline,
                    band.color.mix(0.18).filled(),
                )))
                .map_err(&err)?;
            }
        }
        for line in lines {
            draw_line(&mut c, line, true).map_err(&err)?;
        }
        draw_legend(&legend, lines).map_err(&err)?;
        root.present().map_err(&err)?;
    }
    Ok(svg)
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

/// The latency distribution: x = 1 / (1 − p) on a log scale up to [`percentile_x_max`].
pub fn distribution_chart(title: &str, lines: &[Line]) -> Result<String, PlotError> {
    let err = failed(title);
    let x_max = percentile_x_max(lines);
    let y1 = y_top(lines);
    let mut svg = String::new();
    {
        let (root, legend) = canvas(&mut svg, lines);
        root.fill(&WHITE).map_err(&err)?;
        let mut c = ChartBuilder::on(&root)
            .caption(title, (FONT, 17))
            .margin(8)
            .margin_right(24)
            .x_label_area_size(36)
            .y_label_area_size(64)
            .build_cartesian_2d((1f64..x_max).log_scale(), 0f64..y1)
            .map_err(&err)?;
        c.configure_mesh()
            .x_desc("percentile")
            .y_desc("latency (ms)")
            .bold_line_style(GRID)
            .max_light_lines(0)
            .x_labels(12)
            .y_labels(6)
            .x_label_formatter(&|x| percentile_label(*x))
            .y_label_formatter(&|v| number(*v))
            .label_style((FONT, 13))
            .axis_desc_style((FONT, 14))
            .draw()
            .map_err(&err)?;
        for line in lines {
            draw_line(&mut c, line, false).map_err(&err)?;
        }
        draw_legend(&legend, lines).map_err(&err)?;
        root.present().map_err(&err)?;
    }
    Ok(svg)
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

    /// The line as drawn in this frame: a rule from the bottom of the y axis to its top.
    pub fn placed<'l>(&self, line: &'l Line) -> std::borrow::Cow<'l, Line> {
        match line.points.first() {
            Some(&(x, _)) if line.rule => std::borrow::Cow::Owned(Line {
                points: vec![(x, self.y.0), (x, self.y.1)],
                ..line.clone()
            }),
            _ => std::borrow::Cow::Borrowed(line),
        }
    }
}

/// The chart across settings as an SVG document.
pub fn xy_chart(chart: &XyChart<'_>) -> Result<String, PlotError> {
    let err = failed(chart.title);
    let frame = XyFrame::of(chart);
    let ((x0, x1), (y0, y1)) = (frame.x, frame.y);
    let numbers = |x: &f64| number(*x);
    let log_y = || (y0..y1).log_scale().with_key_points(frame.y_ticks());
    let mut svg = String::new();
    {
        let (root, legend) = canvas(&mut svg, &chart.lines);
        root.fill(&WHITE).map_err(&err)?;
        let drawn = match &chart.x {
            XAxis::Numbers => match (frame.log, frame.y_log) {
                (true, true) => xy_in(
                    &root,
                    chart,
                    &frame,
                    (x0..x1).log_scale(),
                    log_y(),
                    &numbers,
                ),
                (true, false) => {
                    xy_in(&root, chart, &frame, (x0..x1).log_scale(), y0..y1, &numbers)
                }
                (false, true) => xy_in(&root, chart, &frame, x0..x1, log_y(), &numbers),
                (false, false) => xy_in(&root, chart, &frame, x0..x1, y0..y1, &numbers),
            },
            XAxis::Names(names) => {
                let label = |x: &f64| {
                    let i = x.round();
                    if (x - i).abs() < 1e-6 && i >= 0.0 {
                        names.get(i as usize).cloned().unwrap_or_default()
                    } else {
                        String::new()
                    }
                };
                if frame.y_log {
                    xy_in(&root, chart, &frame, x0..x1, log_y(), &label)
                } else {
                    xy_in(&root, chart, &frame, x0..x1, y0..y1, &label)
                }
            }
        };
        drawn.map_err(&err)?;
        draw_legend(&legend, &chart.lines).map_err(&err)?;
        root.present().map_err(&err)?;
    }
    Ok(svg)
}

/// The chart's axes, grid and lines on the scales given.
fn xy_in<X, Y>(
    root: &Area<'_>,
    chart: &XyChart<'_>,
    frame: &XyFrame,
    x: X,
    y: Y,
    x_label: &dyn Fn(&f64) -> String,
) -> Result<(), DrawingAreaErrorKind<std::io::Error>>
where
    X: AsRangedCoord<Value = f64>,
    Y: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let mut c = xy_builder(root, chart.title).build_cartesian_2d(x, y)?;
    let labels = match &chart.x {
        XAxis::Names(names) => names.len().max(2) * 2 + 1,
        XAxis::Numbers => 10,
    };
    c.configure_mesh()
        .x_desc(chart.x_label)
        .y_desc(chart.y_label)
        .bold_line_style(GRID)
        .max_light_lines(0)
        .x_labels(labels)
        .y_labels(6)
        .x_label_formatter(x_label)
        .y_label_formatter(&|v| number(*v))
        .label_style((FONT, 13))
        .axis_desc_style((FONT, 14))
        .draw()?;
    for line in &chart.lines {
        let line = frame.placed(line);
        let style = line.color.stroke_width(2);
        if line.markers_only {
            // Nothing joins them.
        } else if line.dashed {
            c.draw_series(DashedLineSeries::new(
                line.points.iter().copied(),
                6,
                4,
                style,
            ))?;
        } else {
            c.draw_series(LineSeries::new(line.points.iter().copied(), style))?;
        }
        let radius = if line.markers_only { 5 } else { 3 };
        c.draw_series(
            line.points
                .iter()
                .map(|&p| Circle::new(p, radius, line.color.filled())),
        )?;
        c.draw_series(line.spread.iter().map(|&(x, low, high)| {
            PathElement::new(vec![(x, low), (x, high)], line.color.stroke_width(1))
        }))?;
    }
    Ok(())
}

fn xy_builder<'a, 'b>(root: &'a Area<'b>, title: &str) -> ChartBuilder<'a, 'b, SVGBackend<'b>> {
    let mut b = ChartBuilder::on(root);
    b.caption(title, (FONT, 17))
        .margin(8)
        .margin_right(24)
        .x_label_area_size(36)
        .y_label_area_size(64);
    b
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// The drawing: the plot on top, the legend's rows under it.
fn canvas<'a>(svg: &'a mut String, lines: &[Line]) -> (Area<'a>, Area<'a>) {
    let rows = legend_layout(lines).last().map_or(0, |e| e.row + 1);
    let height = PLOT_HEIGHT + LEGEND_ROW * rows as u32 + 6;
    let root = SVGBackend::with_string(svg, (WIDTH, height)).into_drawing_area();
    root.split_vertically(PLOT_HEIGHT)
}

/// Draws a line; on the timeline (`cut_gaps`) it is cut where data is missing.
fn draw_line<DB, X>(
    c: &mut ChartContext<'_, DB, Cartesian2d<X, plotters::coord::types::RangedCoordf64>>,
    line: &Line,
    cut_gaps: bool,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>>
where
    DB: DrawingBackend,
    X: Ranged<ValueType = f64>,
{
    let style = line.color.stroke_width(2);
    let pieces = if cut_gaps {
        downsample::for_drawing(&line.points, BUCKETS)
    } else {
        vec![line.points.clone()]
    };
    for segment in pieces {
        if line.filled {
            c.draw_series(
                AreaSeries::new(segment.iter().copied(), 0.0, line.color.mix(0.75).filled())
                    .border_style(line.color.stroke_width(1)),
            )?;
            continue;
        }
        if line.step {
            c.draw_series(LineSeries::new(steps(&segment), line.color.stroke_width(1)))?;
            c.draw_series(
                segment
                    .iter()
                    .map(|&p| Circle::new(p, 2, line.color.filled())),
            )?;
            continue;
        }
        if segment.len() == 1 {
            c.draw_series(
                segment
                    .iter()
                    .map(|&p| Circle::new(p, 2, line.color.filled())),
            )?;
        } else if line.dashed {
            c.draw_series(DashedLineSeries::new(segment.iter().copied(), 6, 4, style))?;
        } else {
            c.draw_series(LineSeries::new(segment.iter().copied(), style))?;
        }
    }
    Ok(())
}

struct LegendEntry {
    row: usize,
    x: i32,
}

/// Where each legend entry goes: left to right, wrapping. Text is not measured (no fonts are
/// loaded), so widths are estimated generously from the character count.
fn legend_layout(lines: &[Line]) -> Vec<LegendEntry> {
    let (start, end) = (64, WIDTH as i32 - 12);
    let mut x = start;
    let mut row = 0;
    let mut out = Vec::new();
    for line in lines {
        let width = 34 + 7 * legend_name(&line.name).chars().count() as i32;
        if x > start && x + width > end {
            row += 1;
            x = start;
        }
        out.push(LegendEntry { row, x });
        x += width;
    }
    out
}

/// A legend's text, at most 48 characters: a long name loses its middle, since runs' names
/// often share a beginning and differ at the end (`… (rate=2000)`).
fn legend_name(name: &str) -> String {
    const LIMIT: usize = 48;
    let chars: Vec<char> = name.chars().collect();
    if chars.len() <= LIMIT {
        return name.to_string();
    }
    let head = 18;
    let tail = LIMIT - head - 1;
    chars[..head]
        .iter()
        .chain(['…'].iter())
        .chain(chars[chars.len() - tail..].iter())
        .collect()
}

fn draw_legend(
    area: &Area<'_>,
    lines: &[Line],
) -> Result<(), DrawingAreaErrorKind<std::io::Error>> {
    for (line, entry) in lines.iter().zip(legend_layout(lines)) {
        let y = (entry.row as u32 * LEGEND_ROW) as i32 + 10;
        let style = line.color.stroke_width(3);
        area.draw(&PathElement::new(
            vec![(entry.x, y), (entry.x + 22, y)],
            style,
        ))?;
        area.draw(&Text::new(
            legend_name(&line.name),
            (entry.x + 28, y - 7),
            (FONT, 13).into_font().color(&BLACK),
        ))?;
    }
    Ok(())
}

/// The top of the y axis: a little above the highest point, and never an empty range.
pub fn y_top<'a>(lines: impl IntoIterator<Item = &'a Line>) -> f64 {
    let max = lines
        .into_iter()
        .flat_map(|l| l.points.iter().map(|p| p.1))
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    if max > 0.0 {
        max * 1.08
    } else {
        1.0
    }
}

/// A number as both drawings write it, the SVG's axes here and the pages' script's `fmt`
/// (`assets/showdown.js`, held to this by `tests/it/numbers.rs`): `--` for none, `0`, four
/// significant digits below 10,000 (`0.25`, `12.5`, `1235`), whole and thousands-separated from
/// 10,000 (`25,000`, `3,200,000`).
pub fn number(v: f64) -> String {
    if !v.is_finite() {
        return "--".into();
    }
    if v == 0.0 {
        return "0".into();
    }
    if v.abs() >= 1e4 {
        return thousands(v.round());
    }
    // Four significant digits, then the shortest text of that number (as JavaScript's
    // `String(Number(v.toPrecision(4)))`).
    let magnitude = v.abs().log10().floor() as i32;
    let decimals = usize::try_from(3 - magnitude).unwrap_or(0);
    let rounded: f64 = format!("{v:.decimals$}").parse().unwrap_or(v);
    if rounded.abs() < 1e-6 {
        format!("{rounded:e}")
    } else {
        format!("{rounded}")
    }
}

/// A whole number with a comma between each three digits: `25,000`.
fn thousands(v: f64) -> String {
    let digits = format!("{:.0}", v.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if v < 0.0 {
        out.insert(0, '-');
    }
    out
}

/// The label of x = 1 / (1 − p) on the distribution chart: `90%`, `99.9%`; only at powers of ten.
pub fn percentile_label(x: f64) -> String {
    let decades = x.log10();
    if (decades - decades.round()).abs() > 1e-6 {
        return String::new();
    }
    let nines = decades.round() as i32;
    match nines {
        0 => "0%".into(),
        1 => "90%".into(),
        2 => "99%".into(),
        n => format!("99.{}%", "9".repeat((n - 2) as usize)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_labels_are_the_pages_numbers() {
        assert_eq!(number(0.0), "0");
        assert_eq!(number(0.25), "0.25");
        assert_eq!(number(12.5), "12.5");
        assert_eq!(number(12.0), "12");
        assert_eq!(number(1500.0), "1500");
        assert_eq!(number(1234.56), "1235");
        assert_eq!(number(25_000.0), "25,000");
        assert_eq!(number(3_200_000.0), "3,200,000");
        assert_eq!(number(-2.0), "-2");
        assert_eq!(number(f64::NAN), "--");
    }

    #[test]
    fn percentile_labels_fall_on_decades() {
        assert_eq!(percentile_label(1.0), "0%");
        assert_eq!(percentile_label(10.0), "90%");
        assert_eq!(percentile_label(100.0), "99%");
        assert_eq!(percentile_label(100_000.0), "99.999%");
        assert_eq!(percentile_label(20.0), "");
    }

    #[test]
    fn legends_wrap() {
        let lines: Vec<Line> = (0..20)
            .map(|i| {
                Line::new(
                    format!("run number {i} of many"),
                    color(i),
                    vec![(0.0, 1.0)],
                )
            })
            .collect();
        let layout = legend_layout(&lines);
        assert!(layout.last().map_or(0, |e| e.row) >= 4);
        assert!(layout.iter().all(|e| e.x < WIDTH as i32));
        assert_eq!(legend_name(&"x".repeat(100)).chars().count(), 48);
        let long = "demo: built-in target freezing like a GC pause (rate=2000)";
        assert_eq!(
            legend_name(long),
            "demo: built-in tar…g like a GC pause (rate=2000)"
        );
    }
}
