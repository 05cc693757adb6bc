//! A capacity search's figures and charts: each SLO term's estimate with its 95 % interval
//! against the offered rate (the bound drawn as a line, the capacity marked), what was served
//! against what was offered, and the server's CPU (and CPU per request) against the rate, from
//! the probes of the step runs.

use std::collections::HashMap;
use std::sync::Arc;

use analysis::capacity::slo::Figure;
use analysis::capacity::{Search, Step};

use crate::charts::Chart;
use crate::figures::RunFigures;
use crate::model::{color, Line, XAxis, XyChart, PALETTE};
use crate::plot::PlotError;

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
    let cpu_pct = run.target_probe()?.mean_cpu_in(window)?;
    let cpu_s = cpu_pct / 100.0 * step.window_s;
    let served = step.judgement.achieved * step.window_s;
    Some(StepCpu {
        cpu_pct,
        per_cpu_second: (cpu_s > 0.0).then(|| served / cpu_s),
    })
}

/// A figure against the offered rate; `latency`: its y axis may be a log scale.
#[allow(clippy::too_many_arguments)]
fn xy(
    id: &str,
    title: &str,
    x_label: &str,
    y_label: &str,
    latency: bool,
    lines: Vec<Line>,
    caption: &str,
    empty: &str,
) -> Result<Chart, PlotError> {
    crate::charts::xy(
        id,
        XyChart {
            title,
            x_label,
            y_label,
            x: XAxis::Numbers,
            y_log: latency,
            lines,
        },
        caption,
        empty,
    )
}

/// A vertical dashed line at the capacity, across the chart.
fn knee(search: &Search) -> Option<Line> {
    Some(Line::rule("capacity", PALETTE[7], search.capacity?))
}

/// The search's charts: each SLO term against the offered rate, served against offered, and
/// the server's CPU and efficiency at each rate.
pub fn charts(
    search: &Search,
    runs: &HashMap<String, Arc<RunFigures>>,
) -> Result<Vec<Chart>, PlotError> {
    let mut steps: Vec<&Step> = search.steps.iter().collect();
    steps.sort_by(|a, b| a.rate.total_cmp(&b.rate));
    let (lo, hi) = steps.iter().fold((f64::MAX, 0.0f64), |(a, b), s| {
        (a.min(s.rate), b.max(s.rate))
    });
    let mut out = Vec::new();
    for (i, term) in search.slo.terms.iter().enumerate() {
        out.push(term_chart(search, &steps, i, term, (lo, hi))?);
    }
    let served: Vec<(f64, f64)> = steps
        .iter()
        .map(|s| (s.rate, s.judgement.achieved))
        .collect();
    let mut lines = vec![
        Line::new("served", color(0), served),
        Line::new("offered", PALETTE[7], vec![(lo, lo), (hi, hi)]).dashed(),
    ];
    lines.extend(knee(search));
    out.push(xy(
        "served",
        "Served against offered",
        "offered rate (req/s)",
        "requests finished per second",
        false,
        lines,
        "Requests finished per second within each step's window; on the dashed line, every request offered was served.",
        "No step finished.",
    )?);
    out.extend(cpu_charts(search, &steps, runs)?);
    Ok(out)
}

/// One term of the SLO against the offered rate: each step's estimate with its interval, the
/// bound dashed across the steps' rates `(lo, hi)`, the capacity found.
fn term_chart(
    search: &Search,
    steps: &[&Step],
    i: usize,
    term: &analysis::capacity::Term,
    (lo, hi): (f64, f64),
) -> Result<Chart, PlotError> {
    let errors = term.figure == Figure::Errors;
    let scale = |v: f64| drawn(term.figure, v);
    let mut points = Vec::new();
    let mut spread = Vec::new();
    for s in steps {
        if let Some(t) = s.judgement.terms.get(i).filter(|t| t.value.is_finite()) {
            points.push((s.rate, scale(t.value)));
            let high = if t.high.is_finite() { t.high } else { t.value };
            spread.push((s.rate, scale(t.low), scale(high)));
        }
    }
    let bound = scale(term.bound);
    let mut line = Line::new(term.figure.to_string(), color(0), points);
    line.spread = spread;
    let mut lines = vec![
        line,
        Line::new(
            format!("SLO {term}"),
            PALETTE[3],
            vec![(lo, bound), (hi, bound)],
        )
        .dashed(),
    ];
    lines.extend(knee(search));
    let (y_label, id) = if errors {
        ("failed requests (%)".to_string(), "errors".to_string())
    } else {
        (format!("{} latency (ms)", term.figure), format!("term-{i}"))
    };
    xy(
        &id,
        &format!("{} against the offered rate", term.figure),
        "offered rate (req/s)",
        &y_label,
        term.figure.is_latency(),
        lines,
        "Each step's estimate over its steady window, with its 95 % interval as a bar (batch means over the window's intervals: it holds on correlated latencies); the dashed red line is the SLO's bound, the grey one the capacity found.",
        "No step finished.",
    )
}

/// The server's CPU at each step's rate, and its requests per CPU-second, from its probe.
fn cpu_charts(
    search: &Search,
    steps: &[&Step],
    runs: &HashMap<String, Arc<RunFigures>>,
) -> Result<Vec<Chart>, PlotError> {
    let cpu: Vec<(f64, StepCpu)> = steps
        .iter()
        .filter_map(|s| {
            let run = runs.get(s.run_id.as_deref()?)?;
            Some((s.rate, step_cpu(search, s, run)?))
        })
        .collect();
    let pct: Vec<(f64, f64)> = cpu.iter().map(|(r, c)| (*r, c.cpu_pct)).collect();
    let mut lines = Vec::new();
    if !pct.is_empty() {
        lines.push(Line::new("server CPU", color(1), pct));
        lines.extend(knee(search));
    }
    let per: Vec<(f64, f64)> = cpu
        .iter()
        .filter_map(|(r, c)| Some((*r, c.per_cpu_second?)))
        .collect();
    let no_probe = "No probe watched the server: give --probe to see its CPU.";
    Ok(vec![
        xy(
            "cpu",
            "The server's CPU against the offered rate",
            "offered rate (req/s)",
            "CPU (% of one core)",
            false,
            lines,
            "The mean CPU of the server's process tree over each step's window, from the probe.",
            no_probe,
        )?,
        xy(
            "efficiency",
            "Requests per CPU-second against the offered rate",
            "offered rate (req/s)",
            "requests per CPU-second",
            false,
            vec![Line::new("requests per CPU-second", color(2), per)],
            "Requests served per second of the server's CPU: its efficiency at each rate.",
            no_probe,
        )?,
    ])
}

/// One target's capacity at one setting of an experiment, over its repetitions.
#[derive(Debug, Clone)]
pub struct TargetCapacity {
    pub target: String,
    /// Each repetition's search, in order.
    pub searches: Vec<Search>,
    /// Requests per CPU-second and peak RSS of the server at its capacity (the passing step
    /// nearest the figure, of the search nearest it), when a probe watched it.
    pub per_cpu_second: Option<f64>,
    pub peak_rss_bytes: Option<u64>,
    /// What limited the server at the nearest search's failing step (its probes' verdict over
    /// the step's judged window), and at what rate.
    pub limit: Option<(f64, analysis::saturation::Finding)>,
}

impl TargetCapacity {
    /// Why a capacity is only a lower bound: a search that ended at the generator's limit or
    /// at its highest rate, not at a failing step of the server's.
    pub fn only_at_least(&self) -> Option<String> {
        self.searches.iter().find_map(Search::only_at_least)
    }

    /// C_p of its searches' steps pooled (or, without passes and fails to bound it, the
    /// median of what they found).
    pub fn figure(&self) -> Option<f64> {
        self.agreed().map(|a| a.rate)
    }

    /// The figure with its 95 % interval, and what it rests on.
    pub fn agreed(&self) -> Option<analysis::capacity::Agreed> {
        analysis::capacity::agreed(&self.searches)
    }

    /// The search whose own figure is nearest the pooled one (the lower of two as near).
    pub fn nearest_search(&self) -> Option<&Search> {
        let m = self.figure()?;
        self.searches
            .iter()
            .filter(|s| s.capacity.is_some())
            .min_by(|a, b| {
                let distance = |s: &Search| s.capacity.map_or(f64::INFINITY, |c| (c - m).abs());
                distance(a).total_cmp(&distance(b)).then(
                    a.capacity
                        .unwrap_or(0.0)
                        .total_cmp(&b.capacity.unwrap_or(0.0)),
                )
            })
    }
}

/// An experiment's searches at one setting.
#[derive(Debug, Clone)]
pub struct SettingCapacity {
    /// `rate=…`-free setting text (`all` when the matrix has no other axis).
    pub setting: String,
    pub targets: Vec<TargetCapacity>,
    pub charts: Vec<Chart>,
}

/// Every search of an experiment's current file and scale, by setting and target.
pub fn experiment_capacity(
    record: &store::experiment::ExperimentRecord,
    searches: &[Search],
    runs: &HashMap<String, Arc<RunFigures>>,
) -> Result<Vec<SettingCapacity>, PlotError> {
    let mut settings = searches_by_setting(record, searches);
    for setting in &mut settings {
        for t in &mut setting.targets {
            read_at_capacity(t, runs);
        }
        setting.charts = setting_charts(setting)?;
    }
    Ok(settings)
}

/// The experiment's searches of its current file and scale, by setting and target in the order
/// they come, with nothing read of their runs yet.
fn searches_by_setting(
    record: &store::experiment::ExperimentRecord,
    searches: &[Search],
) -> Vec<SettingCapacity> {
    use store::vocabulary::label;
    let ours: Vec<&Search> = searches
        .iter()
        .filter(|s| {
            s.experiment.as_deref() == Some(record.name.as_str()) && record.shows(&s.labels)
        })
        .collect();
    let search_rate = format!("rate={}", analysis::capacity::SEARCH_RATE);
    let mut settings: Vec<SettingCapacity> = Vec::new();
    for s in ours {
        let target = s.labels.get(label::TARGET).cloned().unwrap_or_default();
        let setting = setting_of(s, &search_rate);
        let at = match settings.iter().position(|x| x.setting == setting) {
            Some(i) => i,
            None => {
                settings.push(SettingCapacity {
                    setting,
                    targets: Vec::new(),
                    charts: Vec::new(),
                });
                settings.len() - 1
            }
        };
        target_entry(&mut settings[at].targets, target)
            .searches
            .push(s.clone());
    }
    settings
}

/// A search's setting: its cell without its target and the search's rate, or `all`.
fn setting_of(s: &Search, search_rate: &str) -> String {
    use store::vocabulary::label;
    s.labels
        .get(label::CELL)
        .map(|c| {
            c.split(' ')
                .filter(|kv| !kv.starts_with("target=") && *kv != search_rate)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| "all".into())
}

/// A target's entry among a setting's, added (with no search yet) when it has none.
fn target_entry(targets: &mut Vec<TargetCapacity>, target: String) -> &mut TargetCapacity {
    match targets.iter().position(|x| x.target == target) {
        Some(i) => &mut targets[i],
        None => {
            targets.push(TargetCapacity {
                target,
                searches: Vec::new(),
                per_cpu_second: None,
                peak_rss_bytes: None,
                limit: None,
            });
            targets.last_mut().expect("just pushed")
        }
    }
}

/// A target's figures at its capacity, from the runs of its nearest search's steps: requests
/// per CPU-second and peak RSS at the passing step nearest the figure, and what limited it.
fn read_at_capacity(t: &mut TargetCapacity, runs: &HashMap<String, Arc<RunFigures>>) {
    let at_capacity = t.nearest_search().and_then(|s| {
        // The passing step nearest the figure (an estimate, not a step's rate).
        let c = s.capacity?;
        let step = s
            .steps
            .iter()
            .filter(|st| st.judgement.verdict.passed())
            .min_by(|a, b| (a.rate - c).abs().total_cmp(&(b.rate - c).abs()))?;
        let run = runs.get(step.run_id.as_deref()?)?;
        Some((step_cpu(s, step, run), run.peak_rss_bytes()))
    });
    if let Some((cpu, rss)) = at_capacity {
        t.per_cpu_second = cpu.and_then(|c| c.per_cpu_second);
        t.peak_rss_bytes = rss;
    }
    t.limit = t.nearest_search().and_then(|s| failed_step_limit(s, runs));
}

/// The lowest step that failed above the highest pass, and what limited the server there (its probes' figures, the target's and its
/// database's, over the step's load):
/// the resource the capacity ran out of.
pub fn failed_step_limit(
    s: &Search,
    runs: &HashMap<String, Arc<RunFigures>>,
) -> Option<(f64, analysis::saturation::Finding)> {
    let failed_at = s.failed_at?;
    // Its last run at that rate.
    let step = s.steps.iter().rev().find(|st| st.rate == failed_at)?;
    // As the search judged it, over the step's window after its warm-up; a step kept without
    // it is read from its run's figures over the whole load.
    if let Some(limit) = &step.limit {
        return Some((step.rate, limit.finding()));
    }
    let run = runs.get(step.run_id.as_ref()?)?;
    Some((step.rate, run.system.as_ref()?.finding()))
}

/// The capacities side by side (each target's figure, its 95 % interval as whiskers), and the
/// first SLO term's curve of the search nearest each target's figure, overlaid.
fn setting_charts(setting: &SettingCapacity) -> Result<Vec<Chart>, PlotError> {
    let mut out = vec![capacity_bars(setting)?];
    let first = setting
        .targets
        .iter()
        .flat_map(|t| t.searches.first())
        .next()
        .and_then(|s| s.slo.terms.first().copied());
    if let Some(term) = first {
        out.push(curves_chart(setting, term)?);
    }
    Ok(out)
}

/// A figure of the SLO's term in the unit its charts draw: errors in %, latencies in ms.
fn drawn(figure: Figure, value: f64) -> f64 {
    if figure == Figure::Errors {
        value * 100.0
    } else {
        value * 1e-6
    }
}

/// Each target's capacity at the setting, with its 95 % interval as whiskers.
fn capacity_bars(setting: &SettingCapacity) -> Result<Chart, PlotError> {
    let names: Vec<String> = setting.targets.iter().map(|t| t.target.clone()).collect();
    let mut line = Line::new(
        "capacity",
        color(0),
        setting
            .targets
            .iter()
            .enumerate()
            .filter_map(|(i, t)| Some((i as f64, t.figure()?)))
            .collect(),
    );
    line.markers_only = true;
    line.spread = setting
        .targets
        .iter()
        .enumerate()
        .filter_map(|(i, t)| {
            let a = t.agreed()?;
            Some((i as f64, a.low?, a.high?))
        })
        .collect();
    // Drawn from the model like every chart across settings: its SVG, and its JSON for the
    // page's script (hover for each target's figure and interval).
    let mut bars = crate::charts::xy(
        &format!("capacity-{}", crate::paths::slug(&setting.setting)),
        XyChart {
            title: "Capacity by target",
            x_label: "target",
            y_label: "capacity (req/s)",
            x: XAxis::Names(names),
            y_log: false,
            lines: vec![line],
        },
        "Each target's C_p from every step of its searches, with its 95 % interval as whiskers (none where the steps do not bound it).",
        "No search found a capacity yet.",
    )?;
    bars.title = format!("Capacity by target at {}", setting.setting);
    Ok(bars)
}

/// Every target's search nearest its figure, step by step, against the SLO's first `term`.
fn curves_chart(
    setting: &SettingCapacity,
    term: analysis::capacity::Term,
) -> Result<Chart, PlotError> {
    let mut curves = Vec::new();
    for (i, t) in setting.targets.iter().enumerate() {
        let Some(s) = t.nearest_search().or(t.searches.first()) else {
            continue;
        };
        let mut steps: Vec<&Step> = s.steps.iter().collect();
        steps.sort_by(|a, b| a.rate.total_cmp(&b.rate));
        let points: Vec<(f64, f64)> = steps
            .iter()
            .filter_map(|st| {
                let t = st.judgement.terms.first()?;
                t.value
                    .is_finite()
                    .then_some((st.rate, drawn(t.term.figure, t.value)))
            })
            .collect();
        curves.push(Line::new(t.target.clone(), color(i), points));
    }
    let (lo, hi) = curves
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.0))
        .fold((f64::MAX, 0.0f64), |(a, b), x| (a.min(x), b.max(x)));
    if lo <= hi {
        let bound = drawn(term.figure, term.bound);
        curves.push(
            Line::new(
                format!("SLO {term}"),
                PALETTE[3],
                vec![(lo, bound), (hi, bound)],
            )
            .dashed(),
        );
    }
    let unit = if term.figure == Figure::Errors {
        "%"
    } else {
        "ms"
    };
    xy(
        &format!("curves-{}", crate::paths::slug(&setting.setting)),
        &format!("{} against the offered rate, every target", term.figure),
        "offered rate (req/s)",
        &format!("{} ({unit})", term.figure),
        term.figure.is_latency(),
        curves,
        "Each target's search nearest its figure, step by step; the dashed line is the SLO's bound.",
        "No step finished.",
    )
}

/// The ratio of two figures' 95 % interval in words, from their own intervals (the searches
/// of two targets are independent: ln of the ratio has the variance of both summed), and
/// whether it excludes 1.
fn ratio_words(
    a: Option<analysis::capacity::Agreed>,
    b: Option<analysis::capacity::Agreed>,
) -> String {
    let (Some(a), Some(b)) = (a, b) else {
        return "no interval to weigh it against".into();
    };
    let bounded = |x: &analysis::capacity::Agreed| Some((x.rate, x.low?, x.high?));
    let Some((_, lo, hi)) = bounded(&a)
        .zip(bounded(&b))
        .and_then(|(a, b)| analysis::capacity::fit::ratio(a, b))
    else {
        return "no 95 % interval of both to weigh it against: not shown to differ".into();
    };
    let verdict = if lo > 1.0 || hi < 1.0 {
        "a difference"
    } else {
        "not shown to differ"
    };
    format!(
        "ratio 95 % interval {lo:.2}–{hi:.2}: {verdict}; their searches ran one after the other, so a host that changed between them is not in it"
    )
}

/// The ratio of two targets' searches that ran interleaved in one comparison (the same
/// `compare` label), with its 95 % interval over their rounds (`analysis::capacity::compare`);
/// each comparison of the two (a repetition each) said in turn. `None` when none of their
/// searches were compared with each other.
fn interleaved_words(best: &TargetCapacity, other: &TargetCapacity) -> Option<String> {
    let compare =
        |s: &analysis::capacity::Search| s.labels.get(analysis::capacity::label::COMPARE).cloned();
    let said: Vec<String> = best
        .searches
        .iter()
        .filter_map(|a| {
            let id = compare(a)?;
            let b = other
                .searches
                .iter()
                .find(|b| compare(b).as_ref() == Some(&id))?;
            let r = analysis::capacity::compare::ratio(a, b)?;
            let over = format!("{} interleaved rounds", r.rounds);
            Some(match (r.low, r.high) {
                (Some(lo), Some(hi)) => {
                    let verdict = match r.difference() {
                        analysis::capacity::compare::Difference::NotShown => "not shown to differ",
                        _ => "a difference",
                    };
                    format!(
                        "interleaved: {:.2}×, 95 % interval {lo:.2}–{hi:.2} over {over}: {verdict}",
                        r.ratio
                    )
                }
                _ => format!(
                    "interleaved: {:.2}× over {over}, no 95 % interval: {}",
                    r.ratio, r.note
                ),
            })
        })
        .collect();
    (!said.is_empty()).then(|| said.join("; "))
}

/// The answer at one setting, in the question's own figure: who sustains most within the SLO,
/// by how much, and whether the difference is beyond the spread over repetitions.
pub fn capacity_sentence(setting: &SettingCapacity, held: &str) -> String {
    let mut ranked: Vec<&TargetCapacity> = setting
        .targets
        .iter()
        .filter(|t| t.figure().is_some())
        .collect();
    ranked.sort_by(|a, b| {
        b.figure()
            .unwrap_or(0.0)
            .total_cmp(&a.figure().unwrap_or(0.0))
    });
    // "all" is the one setting of a matrix of targets alone: no "At all:".
    let at = match setting.setting.as_str() {
        "all" => String::new(),
        s => format!("At {s}: "),
    };
    let Some(best) = ranked.first() else {
        return format!("{at}No search found a capacity yet.");
    };
    let slo = slo_words(best);
    // What the targets ran on: the host size their searches' runs were held to.
    let held_by = best
        .searches
        .first()
        .and_then(|s| s.labels.get(store::vocabulary::label::HELD))
        .map(|h| format!(", held by {h}"));
    let held = held_by.as_deref().unwrap_or(held);
    let m = best.figure().unwrap_or(0.0);
    let spread = spread_words(best);
    let at_least = best.only_at_least();
    let mut text = match &at_least {
        Some(why) => format!(
            "{at}{} sustains at least {m:.0} req/s within {slo}{held} ({why}, so its capacity is beyond what this generator measures)",
            best.target
        ),
        None => format!(
            "{at}{} sustains {m:.0} req/s within {slo}{held} ({spread})",
            best.target
        ),
    };
    for other in ranked.iter().skip(1) {
        text.push_str(&against_words(best, other, at_least.is_some()));
    }
    let missing: Vec<&str> = setting
        .targets
        .iter()
        .filter(|t| t.figure().is_none())
        .map(|t| t.target.as_str())
        .collect();
    if !missing.is_empty() {
        text.push_str(&format!("; no capacity found for {}", missing.join(", ")));
    }
    text.push('.');
    text
}

/// The SLO a target's searches held it to, and their arrivals.
fn slo_words(best: &TargetCapacity) -> String {
    best.searches
        .first()
        .map(|s| {
            let arrival = s
                .settings
                .arrival
                .map_or(String::new(), |a| format!(", arrivals {}", a.text()));
            format!("{}{arrival}", s.slo)
        })
        .unwrap_or_default()
}

/// How the best target compares with another (nothing where the other has no figure): the
/// ratio of their figures and whether it is beyond their spread.
fn against_words(best: &TargetCapacity, other: &TargetCapacity, best_at_least: bool) -> String {
    let m = best.figure().unwrap_or(0.0);
    let o = other.figure().unwrap_or(0.0);
    if o <= 0.0 {
        return String::new();
    }
    let beyond = interleaved_words(best, other)
        .unwrap_or_else(|| ratio_words(best.agreed(), other.agreed()));
    let (at, own) = match (best_at_least, other.only_at_least()) {
        (_, Some(_)) => ("", " (at least)"),
        (true, None) => ("at least ", ""),
        (false, None) => ("", ""),
    };
    format!(
        ": {at}{:.2}× {}'s {o:.0}{own} ({beyond})",
        m / o,
        other.target
    )
}

/// What a target's figure rests on: its name and its 95 % interval over every step of its
/// searches, or why it has none.
fn spread_words(best: &TargetCapacity) -> String {
    let figure = best
        .searches
        .first()
        .map_or("C_0.5".into(), |s| s.settings.figure());
    match best.agreed() {
        Some(a) => match (a.low, a.high, a.half_width) {
            (Some(lo), Some(hi), Some(h)) => format!(
                "{figure}, 95 % interval {lo:.0}–{hi:.0}, ±{:.1} %, from {}",
                h * 100.0,
                if a.searches > 1 {
                    format!("{} searches' steps pooled", a.searches)
                } else {
                    "one search's steps".into()
                }
            ),
            _ => format!("{figure}, no 95 % interval: its steps do not bound it"),
        },
        None => figure,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacity_by_target_is_a_chart_of_the_model_or_says_why_not() {
        let setting = SettingCapacity {
            setting: "all".into(),
            targets: vec![TargetCapacity {
                target: "go".into(),
                searches: Vec::new(),
                per_cpu_second: None,
                peak_rss_bytes: None,
                limit: None,
            }],
            charts: Vec::new(),
        };
        let charts = setting_charts(&setting).unwrap();
        let bars = &charts[0];
        assert!(bars.id.starts_with("capacity-all"), "{}", bars.id);
        assert_eq!(bars.title, "Capacity by target at all");
        assert_eq!(bars.caption, "No search found a capacity yet.");
        assert!(bars.svg.is_none() && bars.data.is_none());
    }
}
