//! A time chart as data: its series, axes, units and marks, the one model both drawings render.
//! The SVG (plotters, in `plot`) is the page's picture, for print and with JavaScript off; the
//! same model, embedded in the page as JSON, is what the interactive chart (uPlot, vendored in
//! `assets`) draws: hover for values, one crosshair and one zoom for every chart of the page.

use serde::Serialize;

use crate::plot::{css_color, Line, TimeChart};

/// Slices a series is cut into for the interactive chart (min/max per slice, so that a peak
/// survives): at most this many,
const BUCKETS: usize = 1000;
/// and at most this many points a chart, shared by its series: a 20-run comparison's page
/// stays within a few megabytes.
const CHART_POINTS: usize = 6000;

/// What the interactive chart draws.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ChartData {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    /// Seconds on the run's timeline.
    pub x_range: (f64, f64),
    /// The attack's window: the rest is shaded.
    pub attack: Option<(f64, f64)>,
    /// Moments marked with a vertical line (probe events).
    pub markers: Vec<f64>,
    pub series: Vec<SeriesData>,
}

/// One series: its points (`y` null where the series has a gap), as drawn.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SeriesData {
    pub name: String,
    /// `#rrggbb`.
    pub color: String,
    pub dashed: bool,
    pub step: bool,
    pub filled: bool,
    pub x: Vec<f64>,
    pub y: Vec<Option<f64>>,
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
    fn of(line: &Line, buckets: usize) -> SeriesData {
        let mut x = Vec::new();
        let mut y = Vec::new();
        for (i, piece) in crate::downsample::for_drawing(&line.points, buckets)
            .into_iter()
            .enumerate()
        {
            // A gap between pieces: the line stops there.
            if i > 0 {
                if let Some(&(px, _)) = piece.first() {
                    x.push(round(px));
                    y.push(None);
                }
            }
            for (px, py) in piece {
                x.push(round(px));
                y.push(Some(round(py)));
            }
        }
        SeriesData {
            name: line.name.clone(),
            color: css_color(line.color),
            dashed: line.dashed,
            step: line.step,
            filled: line.filled,
            x,
            y,
        }
    }
}

impl ChartData {
    /// The model of a time chart.
    pub fn of(spec: &TimeChart<'_>) -> ChartData {
        let drawn = spec.lines.iter().filter(|l| !l.points.is_empty()).count();
        let buckets = (CHART_POINTS / (2 * drawn.max(1))).clamp(50, BUCKETS);
        ChartData {
            title: spec.title.to_string(),
            x_label: "time since the attack started (s)".into(),
            y_label: spec.y_label.to_string(),
            x_range: spec.x_range,
            attack: spec.attack,
            markers: spec.markers.clone(),
            series: spec
                .lines
                .iter()
                .filter(|l| !l.points.is_empty())
                .map(|l| SeriesData::of(l, buckets))
                .collect(),
        }
    }

    /// As JSON inside a `<script type="application/json">`: `<`, `>` and `&` written as
    /// JSON escapes, so that no name in it ends the element or reads as markup.
    pub fn json(&self) -> String {
        serde_json::to_string(self)
            .unwrap_or_default()
            .replace('<', "\\u003c")
            .replace('>', "\\u003e")
            .replace('&', "\\u0026")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::PALETTE;

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
            markers: vec![3.0],
        };
        let data = ChartData::of(&spec);
        let s = &data.series[0];
        assert!(s.x.len() <= 2 * BUCKETS + 4, "{}", s.x.len());
        assert!(s.y.contains(&Some(99.0)), "the peak was lost");
        assert_eq!(s.y.iter().filter(|v| v.is_none()).count(), 1, "one gap");
        let gap = s.y.iter().position(Option::is_none).unwrap();
        assert!(s.x[gap] >= 200.0 && s.x[gap - 1] < 100.0);
        assert!(!data.json().contains("</script>") && !data.json().contains('<'));
        let back: serde_json::Value = serde_json::from_str(&data.json()).unwrap();
        assert_eq!(back["series"][0]["name"], "cpu </script>");
        assert_eq!(round(0.123456789), 0.123457);
        assert_eq!(round(123456789.0), 123457000.0);
    }
}
