//! SVG charts, drawn with plotters' SVG backend from the model: a chart's [`ChartData`], the
//! same value the page carries as JSON for its script (series already thinned and cut at their
//! gaps, bands, axes, colours as plain data, turned into plotters' own here), so that the
//! picture and the interactive chart cannot disagree.
//!
//! Three kinds, a function each ([`svg`] picks a chart's): a chart over the run's timeline
//! ([`time_chart`]: every time chart of a page shares one x range, with the time before and
//! after the attack shaded, so that the charts line up when read one under another), the
//! HdrHistogram percentile distribution ([`distribution_chart`]: x = 1 / (1 − p) on a log scale, labelled 90 %, 99 %,
//! 99.9 % …) and a figure across settings ([`xy_chart`]). The legend is drawn under the plot,
//! never over the data, and wraps however many runs a comparison has. Text in an SVG is
//! escaped by plotters. Nothing here knows the pages that show these charts.

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::model::chart::Rgb;
use crate::model::number::{number, percentile_label};
use crate::model::{ChartData, SeriesData, XAxisData};

/// The model's colour as plotters'.
fn rgb(c: Rgb) -> RGBColor {
    RGBColor(c.0, c.1, c.2)
}

/// The drawing's width in SVG units; pages scale it to the screen.
pub const WIDTH: u32 = 720;
const PLOT_HEIGHT: u32 = 330;
const LEGEND_ROW: u32 = 20;
const FONT: &str = "sans-serif";

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

/// The chart as an SVG document, drawn as its kind of chart is.
pub fn svg(chart: &ChartData) -> Result<String, PlotError> {
    match chart.x_axis {
        XAxisData::Time => time_chart(chart),
        XAxisData::Percentile => distribution_chart(chart),
        XAxisData::Numbers { .. } | XAxisData::Names { .. } => xy_chart(chart),
    }
}

/// A chart over the run's timeline as an SVG document.
pub fn time_chart(chart: &ChartData) -> Result<String, PlotError> {
    let err = failed(&chart.title);
    let (x0, mut x1) = chart.x_range;
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    let (y0, y1) = chart.y_drawn();
    let mut svg = String::new();
    {
        let (root, legend) = canvas(&mut svg, &chart.series);
        root.fill(&WHITE).map_err(&err)?;
        let mut c = ChartBuilder::on(&root)
            .caption(&chart.title, (FONT, 17))
            .margin(8)
            .margin_right(20)
            .x_label_area_size(36)
            .y_label_area_size(64)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(&err)?;
        if let Some(attack) = chart.attack {
            shade_outside_attack(&mut c, attack, (x0, x1), (y0, y1)).map_err(&err)?;
        }
        c.configure_mesh()
            .x_desc(chart.x_label.as_str())
            .y_desc(chart.y_label.as_str())
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
        draw_markers_and_bands(&mut c, chart, (x0, x1), (y0, y1)).map_err(&err)?;
        for series in &chart.series {
            draw_line(&mut c, &chart.pieces(series), series).map_err(&err)?;
        }
        draw_legend(&legend, &chart.series).map_err(&err)?;
        root.present().map_err(&err)?;
    }
    Ok(svg)
}

/// Shades the timeline before and after the attack, `attack` being its start and end.
fn shade_outside_attack<DB, X>(
    c: &mut ChartContext<'_, DB, Cartesian2d<X, plotters::coord::types::RangedCoordf64>>,
    attack: (f64, f64),
    (x0, x1): (f64, f64),
    (y0, y1): (f64, f64),
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
            .map(|(from, to)| Rectangle::new([(from, y0), (to, y1)], SHADE.filled())),
    )?;
    Ok(())
}

/// Draws a time chart's markers within the x range, a rule each, and its bands, each piece of
/// a band's envelope a shaded polygon.
fn draw_markers_and_bands<DB, X>(
    c: &mut ChartContext<'_, DB, Cartesian2d<X, plotters::coord::types::RangedCoordf64>>,
    chart: &ChartData,
    (x0, x1): (f64, f64),
    (y0, y1): (f64, f64),
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
            .map(|&t| PathElement::new(vec![(t, y0), (t, y1)], MARKER.stroke_width(1))),
    )?;
    for band in &chart.bands {
        for piece in band.pieces() {
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

/// The latency distribution: x = 1 / (1 − p) on a log scale, from 1 to the next power of ten
/// above its last point (the model's x range).
pub fn distribution_chart(chart: &ChartData) -> Result<String, PlotError> {
    let err = failed(&chart.title);
    let ((x0, x1), (y0, y1)) = (chart.x_range, chart.y_drawn());
    let mut svg = String::new();
    {
        let (root, legend) = canvas(&mut svg, &chart.series);
        root.fill(&WHITE).map_err(&err)?;
        let mut c = ChartBuilder::on(&root)
            .caption(&chart.title, (FONT, 17))
            .margin(8)
            .margin_right(24)
            .x_label_area_size(36)
            .y_label_area_size(64)
            .build_cartesian_2d((x0..x1).log_scale(), y0..y1)
            .map_err(&err)?;
        c.configure_mesh()
            .x_desc(chart.x_label.as_str())
            .y_desc(chart.y_label.as_str())
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
        for series in &chart.series {
            draw_line(&mut c, &chart.pieces(series), series).map_err(&err)?;
        }
        draw_legend(&legend, &chart.series).map_err(&err)?;
        root.present().map_err(&err)?;
    }
    Ok(svg)
}

/// The chart across settings as an SVG document.
pub fn xy_chart(chart: &ChartData) -> Result<String, PlotError> {
    let err = failed(&chart.title);
    let ((x0, x1), (y0, y1)) = (chart.x_range, chart.y_drawn());
    let numbers = |x: &f64| number(*x);
    let log_y = || (y0..y1).log_scale().with_key_points(chart.y_ticks.clone());
    let log_x = matches!(chart.x_axis, XAxisData::Numbers { log: true });
    let mut svg = String::new();
    {
        let (root, legend) = canvas(&mut svg, &chart.series);
        root.fill(&WHITE).map_err(&err)?;
        let drawn = match &chart.x_axis {
            XAxisData::Names { names } => {
                let label = |x: &f64| {
                    let i = x.round();
                    if (x - i).abs() < 1e-6 && i >= 0.0 {
                        names.get(i as usize).cloned().unwrap_or_default()
                    } else {
                        String::new()
                    }
                };
                if chart.y_log {
                    xy_in(&root, chart, x0..x1, log_y(), &label)
                } else {
                    xy_in(&root, chart, x0..x1, y0..y1, &label)
                }
            }
            _ => match (log_x, chart.y_log) {
                (true, true) => xy_in(&root, chart, (x0..x1).log_scale(), log_y(), &numbers),
                (true, false) => xy_in(&root, chart, (x0..x1).log_scale(), y0..y1, &numbers),
                (false, true) => xy_in(&root, chart, x0..x1, log_y(), &numbers),
                (false, false) => xy_in(&root, chart, x0..x1, y0..y1, &numbers),
            },
        };
        drawn.map_err(&err)?;
        draw_legend(&legend, &chart.series).map_err(&err)?;
        root.present().map_err(&err)?;
    }
    Ok(svg)
}

/// The chart's axes, grid and series on the scales given.
fn xy_in<X, Y>(
    root: &Area<'_>,
    chart: &ChartData,
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
    let mut c = xy_builder(root, &chart.title).build_cartesian_2d(x, y)?;
    let labels = match &chart.x_axis {
        XAxisData::Names { names } => names.len().max(2) * 2 + 1,
        _ => 10,
    };
    c.configure_mesh()
        .x_desc(chart.x_label.as_str())
        .y_desc(chart.y_label.as_str())
        .bold_line_style(GRID)
        .max_light_lines(0)
        .x_labels(labels)
        .y_labels(6)
        .x_label_formatter(x_label)
        .y_label_formatter(&|v| number(*v))
        .label_style((FONT, 13))
        .axis_desc_style((FONT, 14))
        .draw()?;
    draw_xy_series(&mut c, chart)
}

/// Draws the series of a chart across settings: a line through each one's points (none for
/// markers only; a rule across the y axis), a marker at each point, a bar for each spread.
fn draw_xy_series<DB, X, Y>(
    c: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    chart: &ChartData,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>>
where
    DB: DrawingBackend,
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    for series in &chart.series {
        let color = rgb(series.color);
        let style = color.stroke_width(2);
        let radius = if series.markers_only { 5 } else { 3 };
        for piece in chart.pieces(series) {
            if series.markers_only {
                // Nothing joins them.
            } else if series.dashed {
                c.draw_series(DashedLineSeries::new(piece.iter().copied(), 6, 4, style))?;
            } else {
                c.draw_series(LineSeries::new(piece.iter().copied(), style))?;
            }
            c.draw_series(
                piece
                    .iter()
                    .map(|&p| Circle::new(p, radius, color.filled())),
            )?;
        }
        c.draw_series(series.spread.iter().map(|&(x, low, high)| {
            PathElement::new(vec![(x, low), (x, high)], color.stroke_width(1))
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
fn canvas<'a>(svg: &'a mut String, series: &[SeriesData]) -> (Area<'a>, Area<'a>) {
    let rows = legend_layout(names(series)).last().map_or(0, |e| e.row + 1);
    let height = PLOT_HEIGHT + LEGEND_ROW * rows as u32 + 6;
    let root = SVGBackend::with_string(svg, (WIDTH, height)).into_drawing_area();
    root.split_vertically(PLOT_HEIGHT)
}

/// Draws a series as its `pieces` (the model's, cut where data is missing on the timeline).
fn draw_line<DB, X>(
    c: &mut ChartContext<'_, DB, Cartesian2d<X, plotters::coord::types::RangedCoordf64>>,
    pieces: &[Vec<(f64, f64)>],
    line: &SeriesData,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>>
where
    DB: DrawingBackend,
    X: Ranged<ValueType = f64>,
{
    let style = rgb(line.color).stroke_width(2);
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
                steps(segment),
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

/// The series' names, as their legend's entries.
fn names(series: &[SeriesData]) -> impl Iterator<Item = &str> {
    series.iter().map(|s| s.name.as_str())
}

/// Where each legend entry goes: left to right, wrapping. Text is not measured (no fonts are
/// loaded), so widths are estimated generously from the character count.
fn legend_layout<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<LegendEntry> {
    let (start, end) = (64, WIDTH as i32 - 12);
    let mut x = start;
    let mut row = 0;
    let mut out = Vec::new();
    for name in names {
        let width = 34 + 7 * legend_name(name).chars().count() as i32;
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

/// Draws the legend: a stroke of each series' colour and its name.
fn draw_legend(
    area: &Area<'_>,
    series: &[SeriesData],
) -> Result<(), DrawingAreaErrorKind<std::io::Error>> {
    for (line, entry) in series.iter().zip(legend_layout(names(series))) {
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
    use crate::model::{Line, XAxis, XyChart, PALETTE};

    /// The texts of an SVG, trimmed.
    fn texts(svg: &str) -> Vec<&str> {
        svg.split("<text")
            .skip(1)
            .filter_map(|t| {
                t.split_once('>')
                    .and_then(|(_, rest)| rest.split_once("</text>"))
            })
            .map(|(text, _)| text.trim())
            .collect()
    }

    #[test]
    fn a_log_y_axis_is_labelled_at_the_models_ticks() {
        let spec = against_rate(
            true,
            vec![p99_steps(), Line::rule("capacity", PALETTE[7], 2400.0)],
        );
        let data = ChartData::xy(&spec);
        assert_eq!(data.y_ticks[..3], [1.0, 2.0, 5.0]);
        // The SVG labels its y axis at the model's values (the x axis, linear from about 770
        // to 2,830, has none of these), and its rule runs from the axis's foot to its top.
        let svg = xy_chart(&data).unwrap();
        let texts = texts(&svg);
        for label in ["1", "2", "5", "10", "20", "50", "100", "200", "500"] {
            assert!(texts.contains(&label), "y label {label}: {texts:?}");
        }
    }

    #[test]
    fn the_svg_and_the_json_of_a_chart_are_one_model() {
        // Names on x and latencies spanning decades on a log y: every number the SVG writes
        // is a label of its y axis.
        let spec = XyChart {
            title: "p99 by target",
            x_label: "target",
            y_label: "p99 latency (ms)",
            x: XAxis::Names(vec!["go".into(), "node".into()]),
            y_log: true,
            lines: vec![
                Line::new("p99", PALETTE[0], vec![(0.0, 0.8), (1.0, 1250.0)]),
                Line::new("no figure", PALETTE[1], Vec::new()),
            ],
        };
        let data = ChartData::xy(&spec);
        let svg = svg(&data).unwrap();
        let json: serde_json::Value = serde_json::from_str(&data.json()).unwrap();
        // The SVG's y labels are the JSON's ticks, on the JSON's range.
        let mut ticks: Vec<String> = json["y_ticks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| number(t.as_f64().unwrap()))
            .collect();
        let texts = texts(&svg);
        let mut labels: Vec<String> = texts
            .iter()
            .filter(|t| t.parse::<f64>().is_ok())
            .map(|t| t.to_string())
            .collect();
        ticks.sort();
        labels.sort();
        assert!(ticks.len() >= 6, "{ticks:?}");
        assert_eq!(labels, ticks);
        let top = json["y_range"][1].as_f64().unwrap();
        assert!((top - data.y_drawn().1).abs() < 1e-9, "{top}");
        // Its legend names the JSON's series, and only those: a line with no points is in
        // neither.
        let series = json["series"].as_array().unwrap();
        assert_eq!(series.len(), 1);
        assert_eq!(series[0]["color"], "#1f77b4");
        assert!(texts.contains(&"p99") && !texts.contains(&"no figure"));
        assert!(texts.contains(&"go") && texts.contains(&"node"));
    }

    #[test]
    fn legends_wrap() {
        let names: Vec<String> = (0..20).map(|i| format!("run number {i} of many")).collect();
        let layout = legend_layout(names.iter().map(String::as_str));
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
