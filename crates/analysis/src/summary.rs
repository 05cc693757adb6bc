//! The end-of-run summary in words, for a terminal, in the spirit of Vegeta's `report`: any
//! reason to doubt the figures first, then the figures. The summary itself (its figures, its
//! JSON) is the store's, `store::summary::Summary`, a column of every run; its warnings are
//! worded by [`crate::warnings`] when the run is kept.

use std::fmt::Write as _;

use store::summary::{format_ns, LatencyStats, Summary, LATENESS_LIMIT_NS};

/// The summary as text, for a terminal (`summary.to_text()`).
pub trait SummaryText {
    fn to_text(&self) -> String;
}

impl SummaryText for Summary {
    fn to_text(&self) -> String {
        let mut s = String::new();
        for w in &self.warnings {
            let _ = writeln!(s, "!! {w}");
        }
        if !self.warnings.is_empty() {
            s.push('\n');
        }
        let rows = [
            what_ran(self),
            answers(self),
            generator(self),
            validity(self),
        ];
        for (label, fields, values) in rows.into_iter().flatten() {
            let line = format!("{label:<13} {fields:<38} {values}");
            let _ = writeln!(s, "{}", line.trim_end());
        }
        s
    }
}

/// One row of the summary: its label, what its figures are, the figures.
type Row = (&'static str, &'static str, String);

/// What was sent, to where, for how long, and the latencies.
fn what_ran(summary: &Summary) -> Vec<Row> {
    let r = &summary.requests;
    let d = &summary.duration;
    let threads = summary.generator.threads;
    vec![
        ("Target", "", summary.target.clone()),
        (
            "Load",
            "",
            format!(
                "{}, {threads} thread{}, {}",
                summary.load,
                if threads == 1 { "" } else { "s" },
                summary.protocol
            ),
        ),
        (
            "Requests",
            "[total, rate, throughput]",
            format!("{}, {:.2}, {:.2}", r.total, r.rate, r.throughput),
        ),
        (
            "Duration",
            "[total, attack, wait]",
            format!(
                "{}, {}, {}",
                format_secs(d.total_s),
                format_secs(d.attack_s),
                format_secs(d.wait_s)
            ),
        ),
        (
            "Latencies",
            "[min, mean, 50, 90, 95, 99, 99.9, max]",
            String::new(),
        ),
        (
            "  corrected",
            "from intended send (what users see)",
            latency_row(&summary.latency.corrected),
        ),
        (
            "  service",
            "from actual send (what wrk/hey show)",
            latency_row(&summary.latency.service),
        ),
    ]
    .into_iter()
    .chain(tails(summary))
    .collect()
}

/// The corrected p50, p99 and p99.9 after the warm-up with their 95 % intervals (batch
/// means), then why any has none.
fn tails(summary: &Summary) -> Vec<Row> {
    let Some(t) = &summary.tails else {
        return Vec::new();
    };
    let figures = t
        .figures
        .iter()
        .map(|f| format!("{} {}", format_ns(f.value_ns), crate::tail::bounds_text(f)))
        .collect::<Vec<_>>()
        .join(", ");
    let mut rows = vec![(
        "  tails",
        "[50, 99, 99.9] with 95 % intervals",
        format!("{figures}; warm-up {}", format_secs(t.warmup_s)),
    )];
    rows.extend(
        t.figures
            .iter()
            .filter_map(crate::tail::reason)
            .map(|why| ("", "", why)),
    );
    rows
}

/// What came back: bytes, the share answered, the status codes, the errors.
fn answers(summary: &Summary) -> Vec<Row> {
    let pairs = |list: Vec<String>| list.join(" ");
    let codes = pairs(
        summary
            .status_codes
            .iter()
            .map(|(c, n)| format!("{c}:{n}"))
            .collect(),
    );
    let errors = pairs(
        summary
            .errors
            .iter()
            .map(|(k, n)| format!("{k}:{n}"))
            .collect(),
    );
    let b = &summary.bytes;
    vec![
        (
            "Bytes In",
            "[total, mean]",
            format!("{}, {:.2}", b.in_total, b.in_mean),
        ),
        (
            "Bytes Out",
            "[total, mean]",
            format!("{}, {:.2}", b.out_total, b.out_mean),
        ),
        (
            "Success",
            "[ratio]",
            format!("{:.2}%", summary.requests.success_ratio * 100.0),
        ),
        ("Status Codes", "[code:count]", codes),
        (
            "Error Set",
            "[kind:count]",
            if errors.is_empty() {
                "none".into()
            } else {
                errors
            },
        ),
    ]
}

/// What the generator did: how late it sent, its arrivals, its connects, what it cost.
fn generator(summary: &Summary) -> Vec<Row> {
    let g = &summary.generator;
    let mut rows = Vec::new();
    let lateness = match (summary.open_loop, g.lateness.count) {
        (false, _) => String::new(),
        (true, 0) => "no requests sent".into(),
        (true, _) => format!(
            "{}, {}, {}",
            format_ns(g.lateness.p50_ns),
            format_ns(g.lateness.p99_ns),
            format_ns(g.lateness.max_ns)
        ),
    };
    let fields = if summary.open_loop {
        "[lateness 50, 99, max]"
    } else {
        ""
    };
    rows.push(("Generator", fields, lateness));
    if summary.open_loop && g.late > 0 && !g.behind {
        rows.push((
            "",
            "",
            format!(
                "{} requests ({:.2} %) sent over {} late: too few to doubt the run",
                g.late,
                100.0 * g.late as f64 / summary.requests.sent.max(1) as f64,
                format_ns(LATENESS_LIMIT_NS)
            ),
        ));
    }
    if let Some(f) = &g.arrivals {
        rows.push((
            "Arrivals",
            "[Poisson: gaps vs exponential]",
            format!(
                "KS distance {:.4} at {:.2}× the mean gap, over {} gaps ({}; 5 % critical {:.4})",
                f.ks,
                f.at_mean_gaps,
                f.gaps,
                if f.as_intended() {
                    "as intended"
                } else {
                    "NOT as intended"
                },
                f.critical
            ),
        ));
    }
    if let Some(c) = &g.connect {
        let mut line = format!(
            "{}, {}, {}",
            format_ns(c.p50_ns),
            format_ns(c.p99_ns),
            format_ns(c.max_ns)
        );
        if g.slow_connects > 0 {
            let _ = write!(line, "; {} over 0.9 s (SYN retransmitted)", g.slow_connects);
        }
        rows.push(("Connect", "[time to connect 50, 99, max]", line));
    }
    rows.push(("", "", cost(g)));
    rows
}

/// The run's verdict on this machine, then what it rests on.
fn validity(summary: &Summary) -> Vec<Row> {
    let Some(v) = &summary.validity else {
        return Vec::new();
    };
    vec![
        (
            "Validity",
            "[verdict; what it rests on]",
            crate::validity::verdict_text(v),
        ),
        ("", "", crate::validity::evidence_text(summary, v)),
    ]
}

/// What the generator cost: its CPU, busiest thread, memory and connections.
fn cost(g: &store::summary::GeneratorFigures) -> String {
    let mut cost = format!(
        "cpu {} = {:.1}µs/request",
        format_secs(g.cpu_s),
        g.cpu_per_request_us
    );
    if let Some(b) = g.busiest_thread {
        let _ = write!(cost, " (busiest thread {:.0} % of a core)", b * 100.0);
    }
    if let Some(rss) = g.peak_rss_bytes {
        let _ = write!(cost, ", peak memory {:.1} MiB", rss as f64 / 1048576.0);
    }
    let _ = write!(
        cost,
        ", {} connections opened, peak in flight {}",
        g.connections_opened, g.peak_in_flight
    );
    cost
}

/// A latency's figures in one row: min, mean, p50, p90, p95, p99, p99.9, max.
fn latency_row(stats: &LatencyStats) -> String {
    if stats.count == 0 {
        return "no requests".into();
    }
    [
        stats.min_ns,
        stats.mean_ns,
        stats.p50_ns,
        stats.p90_ns,
        stats.p95_ns,
        stats.p99_ns,
        stats.p999_ns,
        stats.max_ns,
    ]
    .iter()
    .map(|&ns| format_ns(ns))
    .collect::<Vec<_>>()
    .join(", ")
}

fn format_secs(s: f64) -> String {
    format_ns((s * 1e9).round() as u64)
}

#[cfg(test)]
pub(crate) mod tests {
    use std::time::{Duration, SystemTime};

    use store::model::IntervalStats;
    use store::summary::RunFacts;

    use super::*;

    #[test]
    fn a_latencys_row_reads_its_figures_or_says_none_were_made() {
        let mut h = store::model::new_histogram(1_000_000_000);
        for v in 1..=1000u64 {
            h.record(v * 1_000).unwrap();
        }
        let stats = LatencyStats::of(&h);
        let row = latency_row(&stats);
        assert!(row.ends_with(", 990µs, 999µs, 1.00ms"), "{row}");
        assert_eq!(row.split(", ").count(), 8, "{row}");
        assert_eq!(
            latency_row(&LatencyStats::of(&store::model::new_histogram(1_000))),
            "no requests"
        );
    }

    /// The summary of an open loop of 30,000 requests over 30 s, each answered in 1 ms, `late`
    /// of them sent 5 ms late, with what the generator measured of itself.
    pub(crate) fn summary_of(late: u64, generator: store::summary::GeneratorFacts) -> Summary {
        let mut totals = IntervalStats::new(0, 30_000_000_000);
        for i in 0..30_000u64 {
            let lateness = if i < late { 5_000_000 } else { 40_000 };
            totals.lateness.record(lateness).unwrap();
            totals.corrected.record(1_000_000).unwrap();
        }
        totals.requests = 30_000;
        totals.sent = 30_000;
        let config = store::run::RunConfig {
            open_loop: true,
            max_connections: 8,
            ..Default::default()
        };
        Summary::new(&RunFacts {
            config: &config,
            started: SystemTime::UNIX_EPOCH,
            interval: Duration::from_secs(1),
            totals: &totals,
            attack: Duration::from_secs(30),
            wait: Duration::ZERO,
            cpu: Duration::from_secs(1),
            peak_rss_bytes: None,
            stopped: None,
            notes: Vec::new(),
            generator,
        })
    }

    #[test]
    fn a_handful_of_late_sends_is_a_figure_not_an_alarm() {
        let s = summary_of(12, Default::default());
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
        assert!(s
            .to_text()
            .contains("12 requests (0.04 %) sent over 1.00ms late: too few to doubt the run"));
    }
}
