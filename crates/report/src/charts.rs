//! Which charts a page has, and what each draws: a run's charts, and a comparison's (one line
//! per run, in the run's colour).

use crate::compare::Comparison;
use crate::figures::{ProbeFigures, RunFigures, Series};
use crate::model::{self, color, Band, Line, Rgb, TimeChart, XyChart, PALETTE};
use crate::plot::{self, PlotError};

/// A chart on a page: an SVG, or why there is none.
#[derive(Debug, Clone)]
pub struct Chart {
    /// For the page's anchors: `latency`, `probe-0-cpu`.
    pub id: String,
    pub title: String,
    pub svg: Option<String>,
    /// One sentence under the chart: what it shows, or why it is empty.
    pub caption: String,
    /// The chart's model: what its SVG was drawn from, and the JSON the interactive chart
    /// drawn over the SVG reads.
    pub data: Option<model::ChartData>,
}

/// Series colours that read as their meaning: p50 blue, p90 green, p99 orange, max red.
const BLUE: Rgb = PALETTE[0];
const ORANGE: Rgb = PALETTE[1];
const GREEN: Rgb = PALETTE[2];
const RED: Rgb = PALETTE[3];
const PURPLE: Rgb = PALETTE[4];
const GREY: Rgb = PALETTE[7];
const DARK: Rgb = Rgb(0x33, 0x33, 0x33);

fn lines(series: &[Series], colors: &[Rgb]) -> Vec<Line> {
    series
        .iter()
        .zip(colors.iter().chain(PALETTE[5..].iter()).cycle())
        .map(|(s, &c)| Line::new(s.name.clone(), c, s.points.clone()))
        .collect()
}

/// Series the slow collectors sample (about once a second): steps with markers.
fn stepped_lines(series: &[Series], colors: &[Rgb]) -> Vec<Line> {
    lines(series, colors)
        .into_iter()
        .map(Line::stepped)
        .collect()
}

/// A chart from its model, made once from the builders' spec: the SVG drawn from it, and it,
/// for the page's JSON; or, with nothing to draw, neither and the caption saying why (`empty`).
fn drawn(id: &str, data: model::ChartData, caption: &str, empty: &str) -> Result<Chart, PlotError> {
    let title = data.title.clone();
    let (svg, data, caption) = if data.series.is_empty() {
        (None, None, empty)
    } else {
        (Some(plot::svg(&data)?), Some(data), caption)
    };
    Ok(Chart {
        id: id.to_string(),
        title,
        caption: caption.to_string(),
        svg,
        data,
    })
}

/// A time chart: its model, and its SVG drawn from it.
pub(crate) fn time(
    id: &str,
    spec: TimeChart<'_>,
    caption: &str,
    empty: &str,
) -> Result<Chart, PlotError> {
    drawn(id, model::ChartData::of(&spec), caption, empty)
}

/// A latency distribution (by percentile): its model, and its SVG drawn from it.
pub(crate) fn distribution(
    id: &str,
    title: &str,
    lines: Vec<Line>,
    caption: &str,
) -> Result<Chart, PlotError> {
    let data = model::ChartData::distribution(title, &lines);
    drawn(id, data, caption, "No request completed.")
}

/// A chart across settings (p99 against rate): its model, and its SVG drawn from it; the
/// caption says so where its y axis is drawn on a log scale.
pub(crate) fn xy(
    id: &str,
    spec: XyChart<'_>,
    caption: &str,
    empty: &str,
) -> Result<Chart, PlotError> {
    let data = model::ChartData::xy(&spec);
    if data.y_log {
        let caption = format!(
            "{caption} The y axis is a log scale: the latencies span more than a decade and a half, and on a linear one an overloaded step would flatten the rest."
        );
        drawn(id, data, &caption, empty)
    } else {
        drawn(id, data, caption, empty)
    }
}

const SHADED: &str = "Grey: before and after the attack (the probes' pre- and post-roll).";

/// The load's charts of one run.
pub fn load_charts(run: &RunFigures) -> Result<Vec<Chart>, PlotError> {
    let chart = |title, y_label, lines| TimeChart {
        title,
        y_label,
        x_range: run.span,
        attack: Some(run.attack),
        lines,
        bands: Vec::new(),
        markers: Vec::new(),
    };
    let no_requests = "No interval recorded a request.";
    let mut distribution_lines = lines(&run.distribution, &[BLUE, ORANGE]);
    if let Some(service) = distribution_lines.get_mut(1) {
        service.dashed = true;
    }
    Ok(vec![
        time(
            "latency",
            {
                let percentiles = lines(&run.load.latency, &[BLUE, GREEN, ORANGE, RED]);
                let mut spec = chart("Latency over time", "corrected latency (ms)", percentiles);
                // p50, p90, p99, max: from the median to the tail, and from the tail to the slowest.
                if let [p50, _, p99, max] = spec.lines.as_slice() {
                    spec.bands = vec![
                        Band::between("p50–p99", ORANGE, p50, p99),
                        Band::between("p99–max", RED, p99, max),
                    ];
                }
                spec
            },
            &format!("Per interval, from each request's intended send time; shaded, each interval's spread from p50 to p99 (orange) and from p99 to its slowest request (red). {SHADED}"),
            no_requests,
        )?,
        time(
            "requests",
            chart("Requests over time", "requests per second", lines(&run.load.rates, &[BLUE, GREEN, RED])),
            &format!("Sent, answered with a 2xx/3xx, and failed (any kind), per second of each interval. {SHADED}"),
            no_requests,
        )?,
        distribution(
            "distribution",
            "Latency by percentile",
            distribution_lines,
            "The whole run. Corrected latency counts from the intended send time; service time (dashed) from the actual send, as tools that ignore coordinated omission report it.",
        )?,
        time(
            "lateness",
            chart("Generator: send lateness", "p99 lateness (ms)", vec![Line::new(&run.load.lateness.name, PURPLE, run.load.lateness.points.clone())]),
            "How late the generator sent requests against their schedule. Over 1 ms, the generator, not the server, may be what the figures measure.",
            "Closed loop: requests have no schedule to be late for.",
        )?,
        time(
            "in-flight",
            chart(
                "Requests in flight and connections",
                "count",
                vec![
                    Line::new(&run.load.in_flight.name, BLUE, run.load.in_flight.points.clone()),
                    Line::new(&run.load.connections.name, GREY, run.load.connections.points.clone()),
                ],
            ),
            "The most at once during each interval. An open loop opens connections as the server slows down.",
            no_requests,
        )?,
    ])
}

/// One probe's charts: its tree's CPU, memory, threads, FDs, sockets and switches; each
/// process's CPU and memory; the top functions over time; a database's backends.
pub fn probe_charts(
    run: &RunFigures,
    index: usize,
    probe: &ProbeFigures,
) -> Result<Vec<Chart>, PlotError> {
    let markers: Vec<f64> = probe
        .events
        .iter()
        .filter(|(_, what)| !what.starts_with("attached"))
        .map(|(t, _)| *t)
        .collect();
    let p = ProbeCharts {
        run,
        probe,
        index,
        marks: if markers.is_empty() {
            ""
        } else {
            " Thin grey lines: processes starting or exiting (see the events)."
        },
        markers,
    };
    let backends = if probe.connected.points.is_empty() {
        None
    } else {
        Some(backends_chart(run, probe, &p.id("backends"))?)
    };
    // A database elsewhere (a managed one) is known only by what it says of itself.
    if probe.cpu.points.is_empty() {
        if let Some(chart) = backends {
            return Ok(vec![chart]);
        }
    }
    let mut out = p.tree()?;
    if !probe.members.is_empty() {
        out.extend(p.members()?);
    }
    if let Some(profile) = &probe.profile {
        out.push(p.time(
            "functions",
            "CPU by function",
            "CPU (%, 100 = one core)",
            lines(&profile.over_time, &PALETTE),
            &format!(
                "The five functions with the most samples of their own in the attack window: each second, its samples × the CPU one sample stands for ({} Hz per CPU), on the CPU chart's scale.",
                profile.hz
            ),
            "The profile has no samples of the target in the attack window.",
        )?);
    }
    out.extend(backends);
    Ok(out)
}

/// What every chart of one probe shares: its run's timeline, its events as markers.
struct ProbeCharts<'a> {
    run: &'a RunFigures,
    probe: &'a ProbeFigures,
    index: usize,
    markers: Vec<f64>,
    /// What the captions say of the markers, where there are any.
    marks: &'static str,
}

/// What a probe's chart says where it has no samples of the target.
const NO_SAMPLES: &str = "The probe sent no samples of the target (did it find the process?).";

impl ProbeCharts<'_> {
    /// The chart's id on the page.
    fn id(&self, name: &str) -> String {
        format!("probe-{}-{name}", self.index)
    }

    /// A chart of the probe's `lines` on the run's timeline, titled (with what it watched,
    /// where the run has several probes).
    fn time(
        &self,
        name: &str,
        title: &str,
        y_label: &str,
        lines: Vec<Line>,
        caption: &str,
        empty: &str,
    ) -> Result<Chart, PlotError> {
        let title = if self.run.probes.len() > 1 {
            format!("{title}: {}", self.probe.watching())
        } else {
            title.to_string()
        };
        let spec = TimeChart {
            title: &title,
            y_label,
            x_range: self.run.span,
            attack: Some(self.run.attack),
            lines,
            bands: Vec::new(),
            markers: self.markers.clone(),
        };
        time(&self.id(name), spec, caption, empty)
    }

    /// The whole tree's CPU (with the host's and its saturation), memory, threads, FDs, TCP
    /// sockets and context switches.
    fn tree(&self) -> Result<Vec<Chart>, PlotError> {
        let (probe, marks) = (self.probe, self.marks);
        let mut cpu = vec![
            Line::new(
                format!("{}'s process tree", probe.watching()),
                BLUE,
                probe.cpu.points.clone(),
            ),
            Line::new(
                format!("whole host ({} cores; 1 s mean)", probe.host.cpus),
                GREY,
                probe.host_cpu.points.clone(),
            ),
        ];
        // Saturation beside utilization, where the probe could read it.
        if !probe.run_wait.points.is_empty() {
            cpu.push(Line::new(
                "its threads waiting for a CPU",
                ORANGE,
                probe.run_wait.points.clone(),
            ));
        }
        if !probe.throttled.points.is_empty() {
            cpu.push(Line::new(
                "quota periods throttled (%)",
                RED,
                probe.throttled.points.clone(),
            ));
        }
        let mut fds = vec![Line::new("all", DARK, probe.fds.points.clone())];
        fds.extend(stepped_lines(
            &probe.fd_kinds,
            &[BLUE, GREEN, ORANGE, PURPLE, RED, GREY],
        ));
        let fd_limit = match probe.fd_limits.0 {
            Some(limit) => format!(" Soft limit per process: {limit}."),
            None => String::new(),
        };
        Ok(vec![
            self.time("cpu", "CPU", "CPU (%, 100 = one core)", cpu,
                &format!("The target's CPU comes from its CPU clock; the whole host's from /proc/stat's clock ticks, which miss short bursts on a mostly idle host, and include the load generator when both share a machine. Saturation, where the kernel shows it: the time the target's threads were runnable but waited for a CPU (schedstat, per second, 100 = one core's worth), and the share of its cgroup quota's periods that ended throttled. {SHADED}{marks}"),
                NO_SAMPLES)?,
            self.time("rss", "Memory (RSS)", "RSS (MiB)", vec![Line::new("resident set", BLUE, probe.rss_mib.points.clone())], &format!("Resident memory of the whole tree.{marks}"), NO_SAMPLES)?,
            self.time("threads", "Threads", "threads", vec![Line::new("threads", BLUE, probe.threads.points.clone())], &format!("Threads of the whole tree.{marks}"), NO_SAMPLES)?,
            self.time("fds", "File descriptors", "open FDs", fds,
                &format!("Open file descriptors, in all and by kind (kinds at the slow collectors' pace, about once a second: drawn as steps, a dot per sample).{fd_limit}{marks}"),
                NO_SAMPLES)?,
            self.time("tcp", "TCP sockets", "sockets", stepped_lines(&probe.tcp, &[BLUE, GREY, RED, ORANGE, PURPLE]),
                "The tree's TCP sockets by state, and connections waiting in the listen sockets' accept queues (sampled about once a second: steps, a dot per sample).",
                "No TCP figures: the slow collectors did not run (see the probe's --slow-budget).")?,
            self.time("switches", "Context switches", "context switches per second", stepped_lines(&probe.switches, &[BLUE, RED]),
                "Voluntary switches (waiting on I/O or a lock) and involuntary ones (preempted: more runnable threads than cores), per second between consecutive samples (about once a second; none across a gap).",
                "No context switch figures: the slow collectors did not run.")?,
        ])
    }

    /// Each process of the tree: its CPU and its memory.
    fn members(&self) -> Result<Vec<Chart>, PlotError> {
        let probe = self.probe;
        Ok(vec![
            self.time(
                "members",
                "CPU by process",
                "CPU (%, 100 = one core)",
                lines(&probe.members, &PALETTE),
                "Each process of the tree (e.g. the workers of a cluster).",
                "",
            )?,
            self.time(
                "members-rss",
                "Memory by process",
                "RSS (MiB)",
                lines(&probe.members_rss, &PALETTE),
                "Each process's resident memory, in the CPU chart's colours: a worker that grows alone shows here, where the tree's total hides it.",
                "",
            )?,
        ])
    }
}

/// What a database said of its backends: the active ones stacked by what they waited on, and
/// those connected.
fn backends_chart(run: &RunFigures, probe: &ProbeFigures, id: &str) -> Result<Chart, PlotError> {
    use probe::sample::WaitClass;
    let color = |c: WaitClass| match c {
        WaitClass::Cpu => GREEN,
        WaitClass::Lock => RED,
        WaitClass::LwLock => ORANGE,
        WaitClass::Io => PURPLE,
        WaitClass::Client => BLUE,
        WaitClass::Ipc => PALETTE[5],
        WaitClass::Timeout => GREY,
        WaitClass::Other => DARK,
    };
    let mut lines = model::stacked(
        WaitClass::ALL
            .iter()
            .zip(&probe.active)
            .map(|(&c, s)| Line::new(format!("active: {}", c.label()), color(c), s.points.clone()))
            .collect(),
    );
    lines.push(Line::new("connected", DARK, probe.connected.points.clone()).dashed());
    let title = format!("Backends by wait: {}", probe.watching());
    time(
        id,
        TimeChart {
            title: &title,
            y_label: "backends",
            x_range: run.span,
            attack: Some(run.attack),
            lines,
            bands: Vec::new(),
            markers: Vec::new(),
        },
        &format!("What {} said of its backends (pg_stat_activity, every 100 ms): the active ones stacked by what each waited on at that instant (on CPU: no wait event), and those connected (dashed). Backends waiting on Lock, LWLock or IO are the database's own saturation; Client is the server's side being slow to send or read; Timeout a sleep. A reading is a query run by one of its own backends: where the database has one CPU, that backend runs only when the others do not, so it sees active only those preempted mid-query; there its CPU chart's run-queue wait is the better witness. {SHADED}", probe.watching()),
        "",
    )
}

/// A comparison's charts of the load: id, title, y axis, a run's series, what it shows.
type LoadChart = (
    &'static str,
    &'static str,
    &'static str,
    fn(&RunFigures) -> Option<&Series>,
    &'static str,
);
const LOAD_CHARTS: [LoadChart; 3] = [
    (
        "p99",
        "p99 latency over time",
        "corrected latency (ms)",
        |r| r.load.latency.get(2),
        "Per interval, from intended send times.",
    ),
    (
        "p50",
        "Median latency over time",
        "corrected latency (ms)",
        |r| r.load.latency.first(),
        "Per interval, from intended send times.",
    ),
    (
        "throughput",
        "Throughput over time",
        "successful requests per second",
        |r| r.load.rates.get(1),
        "Responses with a 2xx/3xx status, per second of each interval.",
    ),
];

/// A comparison's charts of the target, from each run's first probe: id, title, y axis, the
/// probe's series.
type ProbeChart = (
    &'static str,
    &'static str,
    &'static str,
    fn(&ProbeFigures) -> &Series,
);
const PROBE_CHARTS: [ProbeChart; 4] = [
    ("cpu", "Target CPU", "CPU (%, 100 = one core)", |p| &p.cpu),
    ("rss", "Target memory (RSS)", "RSS (MiB)", |p| &p.rss_mib),
    ("threads", "Target threads", "threads", |p| &p.threads),
    ("fds", "Target open FDs", "open FDs", |p| &p.fds),
];

/// One line per run of a comparison, in the run's colour: the series `pick` takes from it.
fn run_lines(c: &Comparison, pick: &dyn Fn(&RunFigures) -> Option<&Series>) -> Vec<Line> {
    let names = c.run_names();
    c.runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            Line::new(
                format!("#{} {}", i + 1, names[i]),
                color(i),
                pick(r).map(|s| s.points.clone()).unwrap_or_default(),
            )
        })
        .collect()
}

/// A comparison's charts: one line per run, in the run's colour.
pub fn comparison_charts(c: &Comparison) -> Result<Vec<Chart>, PlotError> {
    let span = c.runs.iter().fold((0.0f64, 1.0f64), |s, r| {
        (s.0.min(r.span.0), s.1.max(r.span.1))
    });
    let attack_end = c.runs.iter().map(|r| r.attack.1).fold(0.0, f64::max);
    let per_run = |pick: &dyn Fn(&RunFigures) -> Option<&Series>| run_lines(c, pick);
    let chart = |title, y_label, lines| TimeChart {
        title,
        y_label,
        x_range: span,
        attack: Some((0.0, attack_end)),
        lines,
        bands: Vec::new(),
        markers: Vec::new(),
    };
    let no_probe = "None of these runs had a probe.";
    let first_probe = "From each run's first probe.";
    let mut out = Vec::new();
    for (id, title, y_label, pick, note) in LOAD_CHARTS {
        let lines = per_run(&pick);
        out.push(time(
            id,
            chart(title, y_label, lines),
            note,
            "No interval recorded a request.",
        )?);
    }
    out.push(distribution(
        "distribution",
        "Latency by percentile",
        per_run(&|r| r.distribution.first()),
        "Corrected latency over each whole run.",
    )?);
    for (id, title, y_label, pick) in PROBE_CHARTS {
        out.push(time(
            id,
            chart(title, y_label, per_run(&|r| r.target_probe().map(pick))),
            first_probe,
            no_probe,
        )?);
    }
    out.push(time(
        "established",
        chart(
            "Target's established TCP connections",
            "sockets",
            per_run(&|r| r.target_probe().and_then(|p| p.tcp.first()))
                .into_iter()
                .map(Line::stepped)
                .collect(),
        ),
        "From each run's first probe, about once a second (steps, a dot per sample).",
        "No TCP figures in these runs.",
    )?);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use crate::model::chart::examples::{against_rate, p99_steps};

    #[test]
    fn a_caption_says_the_y_axis_is_a_log_scale_only_where_it_is() {
        let said = |y_log: bool| {
            super::xy(
                "p99",
                against_rate(y_log, vec![p99_steps()]),
                "Each step.",
                "none",
            )
            .unwrap()
            .caption
        };
        assert!(said(true).contains("The y axis is a log scale"));
        assert_eq!(said(false), "Each step.");
    }
}
