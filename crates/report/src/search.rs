//! A capacity search's figures and charts: each SLO term's estimate with its 95 % interval
//! against the offered rate (the bound drawn as a line, the capacity marked), what was served
//! against what was offered, and the server's CPU (and CPU per request) against the rate, from
//! the probes of the step runs.

use std::collections::HashMap;
use std::sync::Arc;

use store::capacity::slo::Figure;
use store::capacity::{Search, Step};

use crate::charts::Chart;
use crate::figures::RunFigures;
use crate::plot::{self, color, Line, PlotError, XAxis, XyChart};

/// What the probes saw of the server during one step's window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepCpu {
    /// The tree's mean CPU, % of one core.
    pub cpu_pct: f64,
    /// Requests served per CPU-second of the server.
    pub per_cpu_second: Option<f64>,
}

/// The server's CPU in a step's window, from its run's first probe.
pub fn step_cpu(search: &Search, step: &Step, run: &RunFigures) -> Option<StepCpu> {
    let from = search.settings.warmup_s;
    let window = (from, from + step.window_s);
    let cpu_pct = run.probes.first()?.mean_cpu_in(window)?;
    let cpu_s = cpu_pct / 100.0 * step.window_s;
    let served = step.judgement.achieved * step.window_s;
    Some(StepCpu {
        cpu_pct,
        per_cpu_second: (cpu_s > 0.0).then(|| served / cpu_s),
    })
}

fn xy(
    id: &str,
    title: &str,
    x_label: &str,
    y_label: &str,
    lines: Vec<Line>,
    caption: &str,
    empty: &str,
) -> Result<Chart, PlotError> {
    let svg = if plot::has_data(&lines) {
        Some(plot::xy_chart(&XyChart {
            title,
            x_label,
            y_label,
            x: XAxis::Numbers,
            lines,
        })?)
    } else {
        None
    };
    Ok(Chart {
        id: id.to_string(),
        title: title.to_string(),
        caption: if svg.is_some() { caption } else { empty }.to_string(),
        svg,
    })
}

/// A vertical dashed line at the capacity, from 0 to `top`.
fn knee(search: &Search, top: f64) -> Option<Line> {
    let cap = search.capacity?;
    Some(Line::new("capacity", plot::PALETTE[7], vec![(cap, 0.0), (cap, top)]).dashed())
}

/// The search's charts.
pub fn charts(
    search: &Search,
    runs: &HashMap<String, Arc<RunFigures>>,
) -> Result<Vec<Chart>, PlotError> {
    let mut steps: Vec<&Step> = search.steps.iter().collect();
    steps.sort_by(|a, b| a.rate.total_cmp(&b.rate));
    let rates = || steps.iter().map(|s| s.rate);
    let (lo, hi) = rates().fold((f64::MAX, 0.0f64), |(a, b), r| (a.min(r), b.max(r)));
    let mut out = Vec::new();
    for (i, term) in search.slo.terms.iter().enumerate() {
        let errors = term.figure == Figure::Errors;
        let scale = if errors { 100.0 } else { 1e-6 };
        let mut points = Vec::new();
        let mut spread = Vec::new();
        for s in &steps {
            if let Some(t) = s.judgement.terms.get(i).filter(|t| t.value.is_finite()) {
                points.push((s.rate, t.value * scale));
                let high = if t.high.is_finite() { t.high } else { t.value };
                spread.push((s.rate, t.low * scale, high * scale));
            }
        }
        let bound = term.bound * scale;
        let top = spread.iter().map(|s| s.2).fold(bound, f64::max) * 1.1;
        let mut line = Line::new(term.figure.to_string(), color(0), points);
        line.spread = spread;
        let mut lines = vec![
            line,
            Line::new(
                format!("SLO {term}"),
                plot::PALETTE[3],
                vec![(lo, bound), (hi, bound)],
            )
            .dashed(),
        ];
        lines.extend(knee(search, top));
        let (y_label, id) = if errors {
            ("failed requests (%)".to_string(), "errors".to_string())
        } else {
            (format!("{} latency (ms)", term.figure), format!("term-{i}"))
        };
        out.push(xy(
            &id,
            &format!("{} against the offered rate", term.figure),
            "offered rate (req/s)",
            &y_label,
            lines,
            "Each step's estimate over its steady window, with its 95 % interval as a bar (distribution-free, from the order statistics); the dashed red line is the SLO's bound, the grey one the capacity found.",
            "No step finished.",
        )?);
    }
    let served: Vec<(f64, f64)> = steps
        .iter()
        .map(|s| (s.rate, s.judgement.achieved))
        .collect();
    let mut lines = vec![
        Line::new("served", color(0), served),
        Line::new("offered", plot::PALETTE[7], vec![(lo, lo), (hi, hi)]).dashed(),
    ];
    lines.extend(knee(search, hi * 1.1));
    out.push(xy(
        "served",
        "Served against offered",
        "offered rate (req/s)",
        "requests finished per second",
        lines,
        "Requests finished per second within each step's window; on the dashed line, every request offered was served.",
        "No step finished.",
    )?);
    let cpu: Vec<(f64, StepCpu)> = steps
        .iter()
        .filter_map(|s| {
            let run = runs.get(s.run_id.as_deref()?)?;
            Some((s.rate, step_cpu(search, s, run)?))
        })
        .collect();
    let pct: Vec<(f64, f64)> = cpu.iter().map(|(r, c)| (*r, c.cpu_pct)).collect();
    let top = pct.iter().map(|p| p.1).fold(0.0, f64::max) * 1.1;
    let mut lines = Vec::new();
    if !pct.is_empty() {
        lines.push(Line::new("server CPU", color(1), pct));
        lines.extend(knee(search, top.max(1.0)));
    }
    out.push(xy(
        "cpu",
        "The server's CPU against the offered rate",
        "offered rate (req/s)",
        "CPU (% of one core)",
        lines,
        "The mean CPU of the server's process tree over each step's window, from the probe.",
        "No probe watched the server: give --probe to see its CPU.",
    )?);
    let per: Vec<(f64, f64)> = cpu
        .iter()
        .filter_map(|(r, c)| Some((*r, c.per_cpu_second?)))
        .collect();
    out.push(xy(
        "efficiency",
        "Requests per CPU-second against the offered rate",
        "offered rate (req/s)",
        "requests per CPU-second",
        vec![Line::new("requests per CPU-second", color(2), per)],
        "Requests served per second of the server's CPU: its efficiency at each rate.",
        "No probe watched the server: give --probe to see its CPU.",
    )?);
    Ok(out)
}
