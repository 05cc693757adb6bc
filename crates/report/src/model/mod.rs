//! A chart as data: its series, axes, units and marks, the one model both drawings render.
//! [`chart`] holds a chart's spec (lines, bands, axes, colours as plain data), what the pages'
//! builders write; from it each chart is made once as [`ChartData`], and that one value is
//! drawn twice: by `plot` as SVG with plotters, the page's picture, for print and with
//! JavaScript off, and, embedded in the page as JSON, by the interactive chart (uPlot,
//! vendored in `assets`): hover for values, and on time charts one crosshair and one zoom
//! for every chart of the page. Every chart of the pages has one: over time, by percentile,
//! across settings. A run's latency heatmap is data here too ([`heatmap`]), drawn by the
//! crate's `heatmap` module and, from its JSON, by the pages' script; a flame graph is data
//! here too ([`flame`]: a run's profile, two runs' stacks, a gate's estimated call paths), drawn
//! by the crate's `flame` module; how a number is written on a chart and beside it is
//! [`number`].
//!
//! The model sits below its drawings: nothing here imports a renderer (`plot`, `heatmap`,
//! `flame`), and the renderers import nothing from the pages that use them (held by
//! `crates/loadgen/tests/architecture.rs`).

pub mod chart;
pub mod flame;
pub mod heatmap;
mod json;
pub mod number;

use serde::Serialize;

pub use chart::{
    color, css_color, stacked, Band, Line, Rgb, TimeChart, XAxis, XyChart, XyFrame, PALETTE,
};

/// Slices a series is cut into on the timeline (min/max per slice, so that a peak survives):
/// at most this many,
const BUCKETS: usize = 1000;
/// and about this many points a chart, shared by its series,
const CHART_POINTS: usize = 6000;
/// but never fewer slices than this: one per two pixels of the SVG's plot, which draws these
/// same points, so that a chart of many series keeps the detail of a chart of a few (a 20-run
/// comparison's chart then carries up to 12,800 points, not 6,000: its page stays within a few
/// megabytes).
const MIN_BUCKETS: usize = 320;

/// What the x axis is: the kind of chart.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum XAxisData {
    /// Seconds on the run's timeline: every time chart of a page shares its crosshair and zoom.
    Time,
    /// x = 1 / (1 − p) on a log scale, labelled 90 %, 99 % …
    Percentile,
    /// A setting's values (a rate), on a log scale when they span more than a decade and a half.
    Numbers { log: bool },
    /// Names in order at x = 0, 1, 2 …
    Names { names: Vec<String> },
}

/// A chart as both its drawings read it: the SVG (`plot`), and, as JSON in the page, the
/// interactive chart.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ChartData {
    pub title: String,
    pub x_axis: XAxisData,
    pub x_label: String,
    pub y_label: String,
    /// The x range drawn (on a time chart, seconds on the run's timeline).
    pub x_range: (f64, f64),
    /// The y range drawn, where it is fixed (from 0, or a log axis's); a time chart has none:
    /// its SVG is drawn from 0 to a little above its highest point ([`ChartData::y_drawn`]),
    /// and the page fits it to the window shown.
    pub y_range: Option<(f64, f64)>,
    /// The y axis on a log scale (latencies spanning more than a decade and a half).
    pub y_log: bool,
    /// A log y axis's labelled values, as the SVG has them (1, 2, 5 times powers of ten).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub y_ticks: Vec<f64>,
    /// The attack's window: the rest is shaded.
    pub attack: Option<(f64, f64)>,
    /// Moments marked with a vertical line (probe events).
    pub markers: Vec<f64>,
    pub series: Vec<SeriesData>,
    /// Spreads shaded under the series (p50–p99).
    pub bands: Vec<BandData>,
}

/// A band: its low and high edges at each x (null where it has a gap), as drawn.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct BandData {
    pub name: String,
    /// `#rrggbb` in the JSON.
    #[serde(serialize_with = "css")]
    pub color: Rgb,
    pub x: Vec<f64>,
    pub low: Vec<Option<f64>>,
    pub high: Vec<Option<f64>>,
}

impl BandData {
    fn of(band: &Band, buckets: usize) -> BandData {
        let (x, edges) = joined(crate::downsample::envelope(&band.points, buckets), |p| p.0);
        BandData {
            name: band.name.clone(),
            color: band.color,
            x,
            low: edges.iter().map(|e| e.map(|p| round(p.1))).collect(),
            high: edges.iter().map(|e| e.map(|p| round(p.2))).collect(),
        }
    }

    /// The band as drawn: its pieces between gaps, each point (x, low, high).
    pub fn pieces(&self) -> Vec<Vec<(f64, f64, f64)>> {
        let edges = self.low.iter().zip(&self.high);
        split(self.x.iter().zip(edges).map(|(&x, edges)| match edges {
            (Some(low), Some(high)) => Some((x, *low, *high)),
            _ => None,
        }))
    }
}

/// A colour as the JSON has it: `#rrggbb`.
fn css<S: serde::Serializer>(c: &Rgb, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&css_color(*c))
}

/// Points laid end to end, `None` at each gap, as the pieces between the gaps.
fn split<T>(points: impl IntoIterator<Item = Option<T>>) -> Vec<Vec<T>> {
    let mut out = Vec::new();
    let mut piece = Vec::new();
    for p in points {
        match p {
            Some(p) => piece.push(p),
            None if !piece.is_empty() => out.push(std::mem::take(&mut piece)),
            None => {}
        }
    }
    if !piece.is_empty() {
        out.push(piece);
    }
    out
}

/// Pieces laid end to end as the page's script draws them: each point's x (rounded) and the
/// point, with a gap (`None`) at the first x of every piece after the first, where the line or
/// band stops.
fn joined<T: Copy>(pieces: Vec<Vec<T>>, x_of: impl Fn(&T) -> f64) -> (Vec<f64>, Vec<Option<T>>) {
    let mut x = Vec::new();
    let mut points = Vec::new();
    for (i, piece) in pieces.into_iter().enumerate() {
        if let (true, Some(first)) = (i > 0, piece.first()) {
            x.push(round(x_of(first)));
            points.push(None);
        }
        for p in piece {
            x.push(round(x_of(&p)));
            points.push(Some(p));
        }
    }
    (x, points)
}

/// One series: its points (`y` null where the series has a gap), as drawn.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SeriesData {
    pub name: String,
    /// `#rrggbb` in the JSON.
    #[serde(serialize_with = "css")]
    pub color: Rgb,
    pub dashed: bool,
    pub step: bool,
    pub filled: bool,
    /// A marker at each point; with `markers_only`, nothing joins them.
    pub points: bool,
    pub markers_only: bool,
    /// The spread over repetitions at some x: (x, lowest, highest), a vertical bar.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub spread: Vec<(f64, f64, f64)>,
    pub x: Vec<f64>,
    pub y: Vec<Option<f64>>,
    /// A stack's layer: its own value at each x (`y` is the stack's sum up to it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub own: Option<Vec<Option<f64>>>,
    /// A vertical rule at its one x across the whole y axis (a capacity marked), drawn by the
    /// page's script: its y is the axis's top, no figure.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub rule: bool,
}

/// Six significant digits: what a reader can tell apart, in a fraction of the bytes.
fn round(v: f64) -> f64 {
    if v == 0.0 || !v.is_finite() {
        return v;
    }
    let digits = 6 - (v.abs().log10().floor() as i32 + 1);
    let scale = 10f64.powi(digits);
    (v * scale).round() / scale
}

impl SeriesData {
    /// On the timeline: cut at its gaps, at most `2 × buckets` points.
    fn of(line: &Line, buckets: usize) -> SeriesData {
        SeriesData::from_pieces(line, crate::downsample::for_drawing(&line.points, buckets))
    }

    /// Across settings or percentiles: every point, none a gap (a distribution's points are
    /// as many as its histogram's buckets; a setting's one per setting).
    fn whole(line: &Line) -> SeriesData {
        let mut points = line.points.clone();
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        SeriesData::from_pieces(line, vec![crate::downsample::min_max(&points, BUCKETS)])
    }

    fn from_pieces(line: &Line, pieces: Vec<Vec<(f64, f64)>>) -> SeriesData {
        let (x, points) = joined(pieces, |p| p.0);
        let y: Vec<Option<f64>> = points.iter().map(|p| p.map(|p| round(p.1))).collect();
        let own = line.own.as_ref().map(|own| {
            let at: std::collections::HashMap<u64, f64> =
                own.iter().map(|&(x, v)| (round(x).to_bits(), v)).collect();
            x.iter()
                .zip(&y)
                .map(|(px, py)| py.and_then(|_| at.get(&px.to_bits()).map(|&v| round(v))))
                .collect()
        });
        SeriesData {
            own,
            name: line.name.clone(),
            color: line.color,
            dashed: line.dashed,
            step: line.step,
            filled: line.filled,
            points: false,
            markers_only: line.markers_only,
            spread: line
                .spread
                .iter()
                .map(|&(x, lo, hi)| (round(x), round(lo), round(hi)))
                .collect(),
            x,
            y,
            rule: false,
        }
    }
}

impl ChartData {
    /// The model of a time chart: each series and band cut at its gaps and thinned to its
    /// share of the chart's points, each slice's lowest and highest kept.
    pub fn of(spec: &TimeChart<'_>) -> ChartData {
        let drawn = spec.lines.iter().filter(|l| !l.points.is_empty()).count()
            + 2 * spec.bands.iter().filter(|b| !b.points.is_empty()).count();
        let buckets = (CHART_POINTS / (2 * drawn.max(1))).clamp(MIN_BUCKETS, BUCKETS);
        ChartData {
            title: spec.title.to_string(),
            x_axis: XAxisData::Time,
            x_label: "time since the attack started (s)".into(),
            y_label: spec.y_label.to_string(),
            x_range: spec.x_range,
            y_range: None,
            y_log: false,
            y_ticks: Vec::new(),
            attack: spec.attack,
            markers: spec.markers.clone(),
            series: spec
                .lines
                .iter()
                .filter(|l| !l.points.is_empty())
                .map(|l| SeriesData::of(l, buckets))
                .collect(),
            bands: spec
                .bands
                .iter()
                .filter(|b| !b.points.is_empty())
                .map(|b| BandData::of(b, buckets))
                .collect(),
        }
    }

    /// The model of a latency distribution (x = 1 / (1 − p)).
    pub fn distribution(title: &str, lines: &[Line]) -> ChartData {
        let series: Vec<SeriesData> = lines
            .iter()
            .filter(|l| !l.points.is_empty())
            .map(SeriesData::whole)
            .collect();
        ChartData {
            title: title.to_string(),
            x_axis: XAxisData::Percentile,
            x_label: "percentile".into(),
            y_label: "latency (ms)".into(),
            x_range: (1.0, chart::percentile_x_max(lines)),
            y_range: Some((0.0, chart::y_top(lines))),
            y_log: false,
            y_ticks: Vec::new(),
            attack: None,
            markers: Vec::new(),
            series,
            bands: Vec::new(),
        }
    }

    /// The model of a chart across settings (p99 against rate), a marker at each point.
    pub fn xy(spec: &XyChart<'_>) -> ChartData {
        let frame = XyFrame::of(spec);
        let series: Vec<SeriesData> = spec
            .lines
            .iter()
            .filter(|l| !l.points.is_empty())
            .map(|l| match l.points.first() {
                Some(&(x, _)) if l.rule => SeriesData {
                    rule: true,
                    ..SeriesData::whole(&Line {
                        points: vec![(x, frame.y.1)],
                        ..l.clone()
                    })
                },
                _ => SeriesData {
                    points: true,
                    ..SeriesData::whole(l)
                },
            })
            .collect();
        let x_axis = match &spec.x {
            XAxis::Names(names) => XAxisData::Names {
                names: names.clone(),
            },
            XAxis::Numbers => XAxisData::Numbers { log: frame.log },
        };
        ChartData {
            title: spec.title.to_string(),
            x_axis,
            x_label: spec.x_label.to_string(),
            y_label: spec.y_label.to_string(),
            x_range: frame.x,
            y_range: Some(frame.y),
            y_log: frame.y_log,
            y_ticks: frame.y_ticks(),
            attack: None,
            markers: Vec::new(),
            series,
            bands: Vec::new(),
        }
    }

    /// The y range the SVG draws: the fixed one where the chart has one, else (a time chart)
    /// from 0 to a little above its highest point (the page fits its own to the window shown).
    pub fn y_drawn(&self) -> (f64, f64) {
        self.y_range.unwrap_or_else(|| {
            let figures = self.series.iter().filter(|s| !s.rule);
            let values = figures.flat_map(|s| s.y.iter().flatten().copied());
            (0.0, chart::top(values))
        })
    }

    /// A series as drawn: its pieces between gaps, each point (x, y); a rule, from the foot of
    /// the y axis to its top.
    pub fn pieces(&self, series: &SeriesData) -> Vec<Vec<(f64, f64)>> {
        match series.x.first() {
            Some(&x) if series.rule => {
                let (low, high) = self.y_drawn();
                vec![vec![(x, low), (x, high)]]
            }
            _ => split(
                series
                    .x
                    .iter()
                    .zip(&series.y)
                    .map(|(&x, y)| y.map(|y| (x, y))),
            ),
        }
    }

    /// The kind of chart, as the page's markup names it (`time`, `percentile`, `numbers`,
    /// `names`).
    pub fn kind(&self) -> &'static str {
        match self.x_axis {
            XAxisData::Time => "time",
            XAxisData::Percentile => "percentile",
            XAxisData::Numbers { .. } => "numbers",
            XAxisData::Names { .. } => "names",
        }
    }

    /// As JSON inside a `<script type="application/json">`: `<`, `>` and `&` written as
    /// JSON escapes, so that no name in it ends the element or reads as markup.
    pub fn json(&self) -> String {
        json::in_script(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_series_keeps_its_values_its_gaps_and_its_peaks() {
        let mut points: Vec<(f64, f64)> = (0..5000).map(|i| (i as f64 * 0.1, 1.0)).collect();
        points[2500].1 = 99.0;
        // A gap: no sample between 100 s and 200 s.
        points.retain(|(x, _)| !(100.0..200.0).contains(x));
        let line = Line::new(String::from("cpu </script>"), PALETTE[0], points);
        let spec = TimeChart {
            title: "t",
            y_label: "CPU (%)",
            x_range: (0.0, 500.0),
            attack: Some((0.0, 490.0)),
            lines: vec![line],
            bands: Vec::new(),
            markers: vec![3.0],
        };
        let data = ChartData::of(&spec);
        let s = &data.series[0];
        assert!(s.x.len() <= 2 * BUCKETS + 4, "{}", s.x.len());
        assert!(s.y.contains(&Some(99.0)), "the peak was lost");
        assert_eq!(s.y.iter().filter(|v| v.is_none()).count(), 1, "one gap");
        let gap = s.y.iter().position(Option::is_none).unwrap();
        assert!(s.x[gap] >= 200.0 && s.x[gap - 1] < 100.0);
        // The SVG draws the same points: two pieces, none bridging the gap or reading 0 in it,
        // on an axis up to a little above the peak.
        let pieces = data.pieces(s);
        assert_eq!(pieces.len(), 2, "the gap cuts the drawn line in two");
        assert!(pieces[0].last().unwrap().0 < 100.0 && pieces[1][0].0 >= 200.0);
        assert_eq!(pieces.iter().map(Vec::len).sum::<usize>(), s.x.len() - 1);
        assert_eq!(data.y_drawn(), (0.0, 99.0 * 1.08));
        assert!(!data.json().contains("</script>") && !data.json().contains('<'));
        let back: serde_json::Value = serde_json::from_str(&data.json()).unwrap();
        assert_eq!(back["series"][0]["name"], "cpu </script>");
        assert_eq!(round(0.123456789), 0.123457);
        assert_eq!(round(123456789.0), 123457000.0);
    }

    #[test]
    fn bands_layers_and_every_kind_of_axis_are_in_the_model() {
        // p50 and p99 of 3,000 intervals, a hole between 1,000 s and 1,500 s.
        let xs: Vec<f64> = (0..3000)
            .map(f64::from)
            .filter(|x| !(1000.0..1500.0).contains(x))
            .collect();
        let p50 = Line::new("p50", PALETTE[0], xs.iter().map(|&x| (x, 1.0)).collect());
        let mut p99_points: Vec<(f64, f64)> = xs.iter().map(|&x| (x, 2.0)).collect();
        p99_points[2000].1 = 50.0;
        let p99 = Line::new("p99", PALETTE[1], p99_points);
        let spec = TimeChart {
            title: "latency",
            y_label: "ms",
            x_range: (0.0, 3000.0),
            attack: None,
            bands: vec![Band::between("p50–p99", PALETTE[1], &p50, &p99)],
            lines: vec![p50, p99],
            markers: Vec::new(),
        };
        let data = ChartData::of(&spec);
        let band = &data.bands[0];
        assert_eq!(data.kind(), "time");
        assert!(band.x.len() <= 2 * BUCKETS + 4, "{}", band.x.len());
        assert_eq!(
            band.low.iter().filter(|v| v.is_none()).count(),
            1,
            "one gap"
        );
        assert!(band.high.contains(&Some(50.0)), "the widest spread kept");
        assert!(band.low.iter().flatten().all(|&v| v == 1.0));
        let pieces = band.pieces();
        assert_eq!(pieces.len(), 2, "the band is drawn in two pieces");
        assert_eq!(pieces.iter().map(Vec::len).sum::<usize>(), band.x.len() - 1);

        // A stack's layer: drawn as the sum, read as its own value.
        let stacked = stacked(vec![
            Line::new("cpu", PALETTE[2], vec![(0.0, 2.0), (1.0, 3.0)]),
            Line::new("lock", PALETTE[3], vec![(0.0, 5.0), (1.0, 1.0)]),
        ]);
        let spec = TimeChart {
            lines: stacked,
            bands: Vec::new(),
            ..spec
        };
        let data = ChartData::of(&spec);
        let lock = data.series.iter().find(|s| s.name == "lock").unwrap();
        assert_eq!(lock.y, [Some(7.0), Some(4.0)]);
        assert_eq!(lock.own, Some(vec![Some(5.0), Some(1.0)]));

        // By percentile: x up to the next decade.
        let dist = ChartData::distribution(
            "by percentile",
            &[Line::new(
                "corrected",
                PALETTE[0],
                vec![(1.0, 0.1), (2.0, 0.2), (1234.0, 9.0)],
            )],
        );
        assert_eq!((dist.kind(), dist.x_range), ("percentile", (1.0, 10_000.0)));
        assert_eq!(dist.series[0].x, [1.0, 2.0, 1234.0]);

        // Across settings: names or numbers (a log scale beyond a decade and a half), a marker
        // at each point, the spread kept.
        let mut line = Line::new("go", PALETTE[0], vec![(100.0, 1.0), (10_000.0, 3.0)]);
        line.spread = vec![(100.0, 0.5, 1.5)];
        let across = |x: XAxis, lines: Vec<Line>| {
            ChartData::xy(&XyChart {
                title: "p99 against rate",
                x_label: "rate",
                y_label: "ms",
                x,
                y_log: false,
                lines,
            })
        };
        let numbers = across(XAxis::Numbers, vec![line.clone()]);
        assert_eq!(numbers.x_axis, XAxisData::Numbers { log: true });
        // The range the SVG draws: a little wider than the settings, up to the highest bar.
        assert_eq!(numbers.x_range, (100.0 / 1.3, 10_000.0 * 1.3));
        assert_eq!(numbers.y_range, Some((0.0, 3.0 * 1.08)));
        assert!(numbers.series[0].points && !numbers.series[0].markers_only);
        assert_eq!(numbers.series[0].spread, [(100.0, 0.5, 1.5)]);
        let names = across(
            XAxis::Names(vec!["small".into(), "large".into()]),
            vec![Line::new("go", PALETTE[0], vec![(0.0, 1.0), (1.0, 2.0)])],
        );
        assert_eq!(names.kind(), "names");
        assert_eq!(names.x_range, (-0.5, 1.5));
        assert!(names.json().contains("\"names\":[\"small\",\"large\"]"));
    }

    #[test]
    fn latencies_spanning_decades_are_drawn_on_a_log_scale_with_the_capacity_across_them() {
        // A search's p99 against rate: steps near a 10 ms bound and one overloaded step at
        // 1,250 ms. On a linear axis from 0 the steps near the bound would sit on its floor.
        let p99 = chart::examples::p99_steps();
        let chart = chart::examples::against_rate;
        let knee = Line::rule("capacity", PALETTE[7], 2400.0);
        let spec = chart(true, vec![p99.clone(), knee.clone()]);
        let frame = XyFrame::of(&spec);
        assert!(frame.y_log);
        assert_eq!(frame.y, (0.8 / 1.3, 1250.0 * 1.3));
        // Labelled at 1, 2 and 5 times each power of ten, no more: the SVG and the page alike.
        let ticks = [1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0];
        assert_eq!(frame.y_ticks(), ticks);
        let model = ChartData::xy(&spec);
        // The rule's own y is no figure: it is drawn across the axis, whatever its scale.
        assert_eq!(
            model.pieces(&model.series[1]),
            [vec![(2400.0, 0.8 / 1.3), (2400.0, 1250.0 * 1.3)]]
        );
        assert!(model.y_log);
        assert_eq!(model.y_range, Some(frame.y));
        assert_eq!(model.y_ticks, ticks);
        // The page's script draws the rule across its axis: one x, flagged.
        assert!(model.series[1].rule && !model.series[1].points);
        assert_eq!(model.series[1].x, [2400.0]);
        assert!(model.json().contains("\"rule\":true"));
        assert!(!model.series[0].rule && !model.json().contains("\"rule\":false"));
        // Within a decade and a half, or for a figure that is not a latency, or with a zero
        // (no failed request), the axis stays linear from 0, up to a little above the highest.
        let near = Line::new("p99", PALETTE[0], vec![(1000.0, 0.8), (2000.0, 20.0)]);
        let linear = XyFrame::of(&chart(true, vec![near, knee.clone()]));
        assert!(!linear.y_log && linear.y_ticks().is_empty());
        assert_eq!(linear.y, (0.0, 20.0 * 1.08));
        assert!(!XyFrame::of(&chart(false, vec![p99.clone()])).y_log);
        let zero = Line::new("errors", PALETTE[0], vec![(1000.0, 0.0), (2000.0, 50.0)]);
        assert!(!XyFrame::of(&chart(true, vec![zero])).y_log);
        assert_eq!(
            ChartData::xy(&chart(false, vec![p99, knee])).series[1].y,
            [Some(round(1250.0 * 1.08))]
        );
    }
}
