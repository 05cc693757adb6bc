//! An experiment's history across sittings as charts: each series' figure sitting by sitting
//! (with its 95 % interval where the sitting knows one), the level between its changes, and
//! each change marked where it happened; and the host in each sitting. What the history page
//! shows (`pages::history_page`); the history itself is `analysis::history`'s.

use analysis::ab::Measure;
use analysis::history::{History, Series};

use crate::charts::Chart;
use crate::model::{Line, Rgb, XAxis, XyChart, PALETTE};
use crate::plot::PlotError;

const FIGURE: Rgb = PALETTE[0];
const LEVEL: Rgb = PALETTE[7];
const WORSE: Rgb = PALETTE[3];
const BETTER: Rgb = PALETTE[2];

/// A sitting on the x axis: `#5`, with its revision's last 7 characters where it has one
/// (`#5 40005ab`).
pub fn sitting_names(h: &History) -> Vec<String> {
    h.sittings
        .iter()
        .enumerate()
        .map(|(i, s)| match s.revisions.first() {
            Some(r) => {
                let tail: String = r
                    .chars()
                    .rev()
                    .take(7)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect();
                format!("#{} {tail}", i + 1)
            }
            None => format!("#{}", i + 1),
        })
        .collect()
}

/// What a series' figures are divided by to be drawn, and the y axis' name: `µs`, `MiB`,
/// `ms`, `req/s`; a multiple of the reference for a series divided by one.
fn unit(s: &Series) -> (f64, String) {
    if let Some(r) = s.normalised.as_ref().and_then(|n| n.reference.as_ref()) {
        return (1.0, format!("× {r}"));
    }
    match s.key.measure {
        Measure::Cpu => (1.0, "µs".into()),
        Measure::Rss | Measure::Pss => (1024.0 * 1024.0, "MiB".into()),
        Measure::P50 | Measure::P99 => (1e6, "ms".into()),
        Measure::Capacity => (1.0, "req/s".into()),
    }
}

/// The series' name on the page: `go ÷ spin: capacity within the SLO` (a series divided by a
/// reference is named so by its key).
pub fn series_title(s: &Series) -> String {
    s.key.text()
}

/// One series' chart: its figure in each sitting, the level of the sittings between its
/// changes (dashed, a bar at each end for its 95 % interval), and a rule at each change.
pub fn series_chart(h: &History, s: &Series) -> Result<Chart, PlotError> {
    let (scale, unit) = unit(s);
    let divided = s.normalised.as_ref().is_some_and(|n| n.reference.is_some());
    let x = |sitting: usize| sitting as f64;
    let mut figure = Line::new(
        "each sitting's figure (a bar: its 95 % interval)",
        FIGURE,
        s.points
            .iter()
            .map(|p| (x(p.sitting), p.value / scale))
            .collect(),
    );
    // Sittings are separate measurements, and a series may miss one (a target that did not
    // start): nothing drawn between them, so no line bridges a sitting with no figure.
    figure.markers_only = true;
    figure.spread = s
        .points
        .iter()
        .filter_map(|p| {
            let (lo, hi) = p.interval(divided)?;
            Some((x(p.sitting), lo / scale, hi / scale))
        })
        .collect();
    let mut lines = vec![figure];
    lines.extend(levels(s, scale));
    lines.extend(change_rules(s));
    let title = series_title(s);
    let caption = format!(
        "{} sittings. A bar on a figure is its 95 % interval, where the sitting knows one{}; the dashed line is the random-effects level of the sittings between changes, its bars that level's 95 % interval; a rule marks each change found, and a possible change too recent to confirm.",
        s.points.len(),
        if divided {
            " (none for a figure divided by a reference)"
        } else {
            ""
        }
    );
    crate::charts::xy(
        &crate::paths::slug(&format!("history {title}")),
        XyChart {
            title: &title,
            x_label: "sitting (oldest first)",
            y_label: &unit,
            x: XAxis::Names(sitting_names(h)),
            y_log: false,
            lines,
        },
        &caption,
        "No sitting has this figure.",
    )
}

/// The level of the sittings between changes, each a dashed line with its 95 % interval as a
/// bar at each end (figures divided by `scale`).
fn levels(s: &Series, scale: f64) -> Vec<Line> {
    let x = |sitting: usize| sitting as f64;
    // The segments' bounds: the points between changes.
    let mut bounds: Vec<usize> = vec![0];
    bounds.extend(s.changes.iter().map(|c| c.at));
    bounds.push(s.points.len());
    let mut lines = Vec::new();
    for (w, segment) in bounds.windows(2).zip(&s.segments) {
        let (Some(first), Some(last)) = (s.points.get(w[0]), s.points.get(w[1].saturating_sub(1)))
        else {
            continue;
        };
        let (level, lo, hi) = (
            segment.mean.exp() / scale,
            segment.low.exp() / scale,
            segment.high.exp() / scale,
        );
        let mut l = Line::new(
            format!(
                "level of #{}–#{}: {} ({}–{})",
                first.sitting + 1,
                last.sitting + 1,
                s.value_text(segment.mean.exp()),
                s.value_text(segment.low.exp()),
                s.value_text(segment.high.exp())
            ),
            LEVEL,
            vec![(x(first.sitting), level), (x(last.sitting), level)],
        )
        .dashed();
        l.spread = vec![(x(first.sitting), lo, hi), (x(last.sitting), lo, hi)];
        lines.push(l);
    }
    lines
}

/// A rule between the sittings of each change found, and of a possible change too recent to
/// confirm.
fn change_rules(s: &Series) -> Vec<Line> {
    let between =
        |c: &analysis::history::Change| (c.before_sitting as f64 + c.after_sitting as f64) / 2.0;
    let colour = |worse: bool| if worse { WORSE } else { BETTER };
    let word = |worse: bool| if worse { "worse" } else { "better" };
    let mut lines: Vec<Line> = s
        .changes
        .iter()
        .map(|c| {
            Line::rule(
                format!(
                    "{}: ×{:.3} ({:.3}–{:.3})",
                    word(c.worse),
                    c.ratio,
                    c.low,
                    c.high
                ),
                colour(c.worse),
                between(c),
            )
        })
        .collect();
    if let Some(p) = &s.possible {
        let c = &p.change;
        lines.push(Line::rule(
            format!(
                "possibly {}: ×{:.3} ({:.3}–{:.3}), {} more to confirm",
                word(c.worse),
                c.ratio,
                c.low,
                c.high,
                p.more
            ),
            colour(c.worse),
            between(c),
        ));
    }
    lines
}

/// The host in each sitting, on one axis: steal (%), a load from memory (ns ÷ 100) and how
/// far the CPUs' clock was from the first sitting's (%); `None` where no sitting read the host.
pub fn host_chart(h: &History) -> Result<Option<Chart>, PlotError> {
    let hosts: Vec<(usize, &analysis::history::host::SittingHost)> = h
        .sittings
        .iter()
        .enumerate()
        .filter_map(|(i, s)| Some((i, s.host.as_ref()?)))
        .collect();
    if hosts.is_empty() {
        return Ok(None);
    }
    let steal: Vec<(f64, f64)> = hosts
        .iter()
        .filter_map(|(i, host)| Some((*i as f64, host.steal_pct?)))
        .collect();
    let chase: Vec<(f64, f64)> = hosts
        .iter()
        .filter_map(|(i, host)| Some((*i as f64, host.chase_ns? / 100.0)))
        .collect();
    let first_mhz = hosts.iter().find_map(|(_, host)| host.cpu_mhz);
    let clock: Vec<(f64, f64)> = hosts
        .iter()
        .filter_map(|(i, host)| {
            let base = first_mhz?;
            Some((*i as f64, 100.0 * (host.cpu_mhz? / base - 1.0).abs()))
        })
        .collect();
    let mut lines = vec![Line::new(
        "steal (% of the host's CPU time)",
        PALETTE[3],
        steal,
    )];
    if !chase.is_empty() {
        lines.push(Line::new(
            "a load from memory (ns ÷ 100)",
            PALETTE[4],
            chase,
        ));
    }
    if clock.iter().any(|c| c.1 > 0.0) {
        lines.push(Line::new(
            "the CPUs' clock, off its first sitting's (%)",
            PALETTE[1],
            clock,
        ));
    }
    crate::charts::xy(
        "history-host",
        XyChart {
            title: "The host in each sitting",
            x_label: "sitting (oldest first)",
            y_label: "steal %, ns ÷ 100, clock %",
            x: XAxis::Names(sitting_names(h)),
            y_log: false,
            lines,
        },
        "The mean over each sitting's search steps and fixed-rate runs: steal from /proc/stat, the clock from /proc/cpuinfo, a load from memory timed by a pointer chase through 64 MiB on the generator's CPU after each step. A change in every series at once, with one here, is the host's.",
        "No sitting read the host.",
    )
    .map(Some)
}
