//! The summary as text, in the spirit of Vegeta's `report`, and durations in words.

use std::fmt::Write as _;
use std::time::Duration;

use super::figures::{LatencyStats, Summary, LATENESS_LIMIT_NS};

impl LatencyStats {
    pub(crate) fn row(&self) -> String {
        if self.count == 0 {
            return "no requests".into();
        }
        [
            self.min_ns,
            self.mean_ns,
            self.p50_ns,
            self.p90_ns,
            self.p95_ns,
            self.p99_ns,
            self.p999_ns,
            self.max_ns,
        ]
        .iter()
        .map(|&ns| format_ns(ns))
        .collect::<Vec<_>>()
        .join(", ")
    }
}

impl Summary {
    /// The summary as text, for a terminal.
    pub fn to_text(&self) -> String {
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
            self.latency.corrected.row(),
        );
        row(
            &mut s,
            "  service",
            "from actual send (what wrk/hey show)",
            self.latency.service.row(),
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

/// A duration in nanoseconds as a short human figure: `312µs`, `1.23ms`, `4.31s`.
pub fn format_ns(ns: u64) -> String {
    let ns = ns as f64;
    let (value, unit) = if ns < 1e3 {
        (ns, "ns")
    } else if ns < 1e6 {
        (ns / 1e3, "µs")
    } else if ns < 1e9 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e9, "s")
    };
    let digits = if value >= 100.0 {
        0
    } else if value >= 10.0 {
        1
    } else {
        2
    };
    format!("{value:.digits$}{unit}")
}

fn format_secs(s: f64) -> String {
    format_ns((s * 1e9).round() as u64)
}

/// A `Duration` in the same short form.
pub fn format_duration(d: Duration) -> String {
    format_ns(nanos(d))
}

/// Whole nanoseconds of a duration, saturating.
pub fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
