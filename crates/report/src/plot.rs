//! SVG charts, drawn with plotters' SVG backend from the model's specs ([`crate::model::chart`]:
//! lines, bands, axes, colours as plain data, turned into plotters' own here).
//!
//! Three kinds, a function each: a chart over the run's timeline ([`time_chart`]: every time
//! chart of a page shares one x range, with the time before and after the attack shaded, so
//! that the charts line up when read one under another), the HdrHistogram percentile
//! distribution ([`distribution_chart`]: x = 1 / (1 − p) on a log scale, labelled 90 %, 99 %,
//! 99.9 % …) and a figure across settings ([`xy_chart`]). The legend is drawn under the plot,
//! never over the data, and wraps however many runs a comparison has. Text in an SVG is
//! escaped by plotters. Nothing here knows the pages that show these charts.

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::downsample;
use crate::model::chart::{percentile_x_max, y_top, Line, Rgb, TimeChart, XAxis, XyChart, XyFrame};
use crate::model::number::{number, percentile_label};

/// The model's colour as plotters'.
fn rgb(c: Rgb) -> RGBColor {
    RGBColor(c.0, c.1, c.2)
}

/// The drawing's width in SVG units; pages scale it to the screen.
pub const WIDTH: u32 = 720;
const PLOT_HEIGHT: u32 = 330;
const LEGEND_ROW: u32 = 20;
const FONT: &str = "sans-serif";
/// Buckets per series when downsampling: about one per two pixels of plot width.
const BUCKETS: usize = 320;

const SHADE: RGBColor = RGBColor(0xee, 0xee, 0xee);
const GRID: RGBColor = RGBColor(0xdd, 0xdd, 0xdd);
const MARKER: RGBColor = RGBColor(0x99, 0x99, 0x99);

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
        if let Some(attack) = chart.attack {
            shade_outside_attack(&mut c, attack, (x0, x1), y1).map_err(&err)?;
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
        draw_markers_and_bands(&mut c, chart, (x0, x1), y1).map_err(&err)?;
        for line in lines {
            draw_line(&mut c, line, true).map_err(&err)?;
        }
        draw_legend(&legend, lines).map_err(&err)?;
        root.present().map_err(&err)?;
    }
    Ok(svg)
}

/// Shades the timeline before and after the attack, `attack` being its start and end.
fn shade_outside_attack<DB, X>(
    c: &mut ChartContext<'_, DB, Cartesian2d<X, plotters::coord::types::RangedCoordf64>>,
    attack: (f64, f64),
    (x0, x1): (f64, f64),
    y1: f64,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>>
where
    DB: DrawingBackend,
    X: Ranged<ValueType = f64>,
{
    let (a0, a1) = attack;
    let shaded = [(x0, a0.max(x0)), (a1.min(x1), x1)];
    c.draw_series(
        shaded
            .into_iter()
            .filter(|(from, to)| to > from)
            .map(|(from, to)| Rectangle::new([(from, 0.0), (to, y1)], SHADE.filled())),
    )?;
    Ok(())
}

/// Draws a time chart's markers within the x range, a rule each, and its bands, each piece of
/// a band's envelope a shaded polygon.
fn draw_markers_and_bands<DB, X>(
    c: &mut ChartContext<'_, DB, Cartesian2d<X, plotters::coord::types::RangedCoordf64>>,
    chart: &TimeChart<'_>,
    (x0, x1): (f64, f64),
    y1: f64,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>>
where
    DB: DrawingBackend,
    X: Ranged<ValueType = f64>,
{
    c.draw_series(
        chart
            .markers
            .iter()
            .filter(|t| (x0..=x1).contains(*t))
            .map(|&t| PathElement::new(vec![(t, 0.0), (t, y1)], MARKER.stroke_width(1))),
    )?;
    for band in &chart.bands {
        for piece in downsample::envelope(&band.points, BUCKETS) {
            let outline: Vec<(f64, f64)> = piece
                .iter()
                .map(|&(x, _, hi)| (x, hi))
                .chain(piece.iter().rev().map(|&(x, lo, _)| (x, lo)))
                .collect();
            c.draw_series(std::iter::once(Polygon::new(
                outline,
                rgb(band.color).mix(0.18).filled(),
            )))?;
        }
    }
    Ok(())
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
        let style = rgb(line.color).stroke_width(2);
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
                .map(|&p| Circle::new(p, radius, rgb(line.color).filled())),
        )?;
        c.draw_series(line.spread.iter().map(|&(x, low, high)| {
            PathElement::new(vec![(x, low), (x, high)], rgb(line.color).stroke_width(1))
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
    let style = rgb(line.color).stroke_width(2);
    let pieces = if cut_gaps {
        downsample::for_drawing(&line.points, BUCKETS)
    } else {
        vec![line.points.clone()]
    };
    for segment in pieces {
        if line.filled {
            c.draw_series(
                AreaSeries::new(
                    segment.iter().copied(),
                    0.0,
                    rgb(line.color).mix(0.75).filled(),
                )
                .border_style(rgb(line.color).stroke_width(1)),
            )?;
            continue;
        }
        if line.step {
            c.draw_series(LineSeries::new(
                steps(&segment),
                rgb(line.color).stroke_width(1),
            ))?;
            c.draw_series(
                segment
                    .iter()
                    .map(|&p| Circle::new(p, 2, rgb(line.color).filled())),
            )?;
            continue;
        }
        if segment.len() == 1 {
            c.draw_series(
                segment
                    .iter()
                    .map(|&p| Circle::new(p, 2, rgb(line.color).filled())),
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
        let style = rgb(line.color).stroke_width(3);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::chart::examples::{against_rate, p99_steps};
    use crate::model::chart::{color, PALETTE};

    #[test]
    fn a_log_y_axis_is_labelled_at_the_models_ticks() {
        let spec = against_rate(
            true,
            vec![p99_steps(), Line::rule("capacity", PALETTE[7], 2400.0)],
        );
        assert_eq!(XyFrame::of(&spec).y_ticks()[..3], [1.0, 2.0, 5.0]);
        // The SVG labels its y axis at the model's values (the x axis, linear from about 770
        // to 2,830, has none of these), and its rule runs from the axis's foot to its top.
        let svg = xy_chart(&spec).unwrap();
        let texts: Vec<&str> = svg
            .split("<text")
            .skip(1)
            .filter_map(|t| {
                t.split_once('>')
                    .and_then(|(_, rest)| rest.split_once("</text>"))
            })
            .map(|(text, _)| text.trim())
            .collect();
        for label in ["1", "2", "5", "10", "20", "50", "100", "200", "500"] {
            assert!(texts.contains(&label), "y label {label}: {texts:?}");
        }
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
