//! The end-of-run summary in words, for a terminal, in the spirit of Vegeta's `report`: any
//! reason to doubt the figures first, then the figures. The summary itself (its figures, its
//! warnings, its JSON) is the store's, `store::summary::Summary`, a column of every run.

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
        let r = &self.requests;
        let d = &self.duration;
        let row = |s: &mut String, label: &str, fields: &str, values: String| {
            let line = format!("{label:<13} {fields:<38} {values}");
            let _ = writeln!(s, "{}", line.trim_end());
        };
        row(&mut s, "Target", "", self.target.clone());
        row(
            &mut s,
            "Load",
            "",
            format!(
                "{}, {} thread{}, {}",
                self.load,
                self.generator.threads,
                if self.generator.threads == 1 { "" } else { "s" },
                self.protocol
            ),
        );
        row(
            &mut s,
            "Requests",
            "[total, rate, throughput]",
            format!("{}, {:.2}, {:.2}", r.total, r.rate, r.throughput),
        );
        row(
            &mut s,
            "Duration",
            "[total, attack, wait]",
            format!(
                "{}, {}, {}",
                format_secs(d.total_s),
                format_secs(d.attack_s),
                format_secs(d.wait_s)
            ),
        );
        row(
            &mut s,
            "Latencies",
            "[min, mean, 50, 90, 95, 99, 99.9, max]",
            String::new(),
        );
        row(
            &mut s,
            "  corrected",
            "from intended send (what users see)",
            latency_row(&self.latency.corrected),
        );
        row(
            &mut s,
            "  service",
            "from actual send (what wrk/hey show)",
            latency_row(&self.latency.service),
        );
        row(
            &mut s,
            "Bytes In",
            "[total, mean]",
            format!("{}, {:.2}", self.bytes.in_total, self.bytes.in_mean),
        );
        row(
            &mut s,
            "Bytes Out",
            "[total, mean]",
            format!("{}, {:.2}", self.bytes.out_total, self.bytes.out_mean),
        );
        row(
            &mut s,
            "Success",
            "[ratio]",
            format!("{:.2}%", r.success_ratio * 100.0),
        );
        let codes: Vec<String> = self
            .status_codes
            .iter()
            .map(|(c, n)| format!("{c}:{n}"))
            .collect();
        row(&mut s, "Status Codes", "[code:count]", codes.join(" "));
        let errors: Vec<String> = self
            .errors
            .iter()
            .map(|(k, n)| format!("{k}:{n}"))
            .collect();
        row(
            &mut s,
            "Error Set",
            "[kind:count]",
            if errors.is_empty() {
                "none".into()
            } else {
                errors.join(" ")
            },
        );
        let g = &self.generator;
        if self.open_loop {
            row(
                &mut s,
                "Generator",
                "[lateness 50, 99, max]",
                if g.lateness.count == 0 {
                    "no requests sent".into()
                } else {
                    format!(
                        "{}, {}, {}",
                        format_ns(g.lateness.p50_ns),
                        format_ns(g.lateness.p99_ns),
                        format_ns(g.lateness.max_ns)
                    )
                },
            );
        } else {
            row(&mut s, "Generator", "", String::new());
        }
        if self.open_loop && g.late > 0 && !g.behind {
            row(
                &mut s,
                "",
                "",
                format!(
                    "{} requests ({:.2} %) sent over {} late: too few to doubt the run",
                    g.late,
                    100.0 * g.late as f64 / self.requests.sent.max(1) as f64,
                    format_ns(LATENESS_LIMIT_NS)
                ),
            );
        }
        if let Some(f) = &g.arrivals {
            row(
                &mut s,
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
            );
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
            row(&mut s, "Connect", "[time to connect 50, 99, max]", line);
        }
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
        row(&mut s, "", "", cost);
        s
    }
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
