//! `probe top`: one screen, refreshed at every sample, for a human in a terminal.
//!
//! The figures measured by the slow collectors (sockets, context switches, peak RSS) are shown
//! as of their last measurement.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::protocol::Record;
use crate::sample::{HostInfo, ProcessSample, Sample};

/// What the screen remembers between samples.
#[derive(Debug, Default)]
pub struct Screen {
    /// Last slow figures per PID (and `-1` for the total).
    slow: HashMap<i32, ProcessSample>,
    /// The last few events, newest last.
    events: Vec<String>,
    /// The host's figures as of their last reading.
    host: crate::sample::HostSample,
}

impl Screen {
    /// Takes a record in; returns the screen to draw after a sample.
    pub fn update(&mut self, record: &Record, host: &HostInfo) -> Option<String> {
        match record {
            Record::Event(e) => {
                let wall = std::time::UNIX_EPOCH + std::time::Duration::from_nanos(e.wall_ns);
                let text = serde_json::to_string(&e.kind).unwrap_or_default();
                self.events.push(format!(
                    "{} {text}",
                    humantime::format_rfc3339_seconds(wall)
                ));
                let excess = self.events.len().saturating_sub(5);
                self.events.drain(..excess);
                None
            }
            Record::Sample(s) => Some(self.render(s, host)),
            Record::Profile(_) => None,
        }
    }

    fn remember(&mut self, key: i32, row: &ProcessSample) -> ProcessSample {
        let known = self.slow.entry(key).or_default();
        if row.tcp.is_some() {
            known.tcp = row.tcp.clone();
        }
        if row.fd_kinds.is_some() {
            known.fd_kinds = row.fd_kinds.clone();
        }
        if row.peak_rss_bytes.is_some() {
            known.peak_rss_bytes = row.peak_rss_bytes;
        }
        if row.voluntary_ctxt_switches.is_some() {
            known.voluntary_ctxt_switches = row.voluntary_ctxt_switches;
            known.involuntary_ctxt_switches = row.involuntary_ctxt_switches;
        }
        known.clone()
    }

    fn render(&mut self, s: &Sample, host: &HostInfo) -> String {
        let mut out = String::new();
        self.write_header(&mut out, s, host);
        self.write_table(&mut out, s);
        self.write_footer(&mut out, s);
        out
    }

    /// The title line and the host's line (its figures as of their last reading).
    fn write_header(&mut self, out: &mut String, s: &Sample, host: &HostInfo) {
        let wall = std::time::UNIX_EPOCH + std::time::Duration::from_nanos(s.wall_ns);
        let target = match (s.target_pid, s.processes.first()) {
            (Some(pid), Some(root)) => format!("pid {pid} ({})", root.comm),
            _ => "no process matches yet".into(),
        };
        let _ = writeln!(
            out,
            "probe top · {} on {} · {target} · {} · every {}",
            host.selector,
            host.hostname,
            humantime::format_rfc3339_seconds(wall),
            humantime::format_duration(std::time::Duration::from_nanos(host.interval_ns))
        );
        if let Some(host) = &s.host {
            self.host = host.clone();
        }
        let h = &self.host;
        let _ = writeln!(
            out,
            "host: cpu {} of {}%  mem {} available of {}  load {:.2} {:.2} {:.2}  tcp in use {} time-wait {}",
            pct(h.cpu_pct),
            host.cpus * 100,
            bytes(h.mem_available_bytes),
            bytes(h.mem_total_bytes),
            h.load[0],
            h.load[1],
            h.load[2],
            h.tcp_inuse,
            h.tcp_time_wait
        );
    }

    /// The table of processes, a row each and one for the total (of more than one).
    fn write_table(&mut self, out: &mut String, s: &Sample) {
        let _ = writeln!(
            out,
            "\n{:>8} {:>8} {:<16} {:>7} {:>7} {:>7} {:>9} {:>9} {:>7} {:>6} {:>8} {:>6} {:>6} {:>7}",
            "PID", "PPID", "COMM", "CPU%", "USER%", "SYS%", "RSS", "PEAK RSS", "THREADS", "FDS", "SOCKETS", "ESTAB", "TWAIT", "ACCEPTQ"
        );
        let rows: Vec<(String, ProcessSample)> = s
            .processes
            .iter()
            .map(|p| (p.pid.to_string(), p.clone()))
            .chain(
                s.total
                    .iter()
                    .filter(|_| s.processes.len() > 1)
                    .map(|t| ("total".to_string(), t.clone())),
            )
            .collect();
        for (label, p) in rows {
            let key = if label == "total" { -1 } else { p.pid };
            let slow = self.remember(key, &p);
            write_row(out, &label, &p, &slow);
        }
    }

    /// The root's FD limits, the probe's own cost, and the last events.
    fn write_footer(&self, out: &mut String, s: &Sample) {
        if let Some(root) = s.processes.first() {
            let _ = writeln!(
                out,
                "\nFD limits: soft {} hard {}",
                root.fd_limit_soft
                    .map_or("unlimited".into(), |v| v.to_string()),
                root.fd_limit_hard
                    .map_or("unlimited".into(), |v| v.to_string())
            );
        }
        let _ = writeln!(
            out,
            "probe: {} CPU, {} per sample, {} missed ticks",
            pct(s.probe.cpu_pct),
            humantime::format_duration(std::time::Duration::from_micros(
                s.probe.sample_cpu_ns / 1000
            )),
            s.missed_ticks
        );
        if !self.events.is_empty() {
            let _ = writeln!(out, "\nevents:");
            for e in &self.events {
                let _ = writeln!(out, "  {e}");
            }
        }
    }
}

/// One row of the table: `p`'s figures, with the slow ones as of their last measurement.
fn write_row(out: &mut String, label: &str, p: &ProcessSample, slow: &ProcessSample) {
    let _ = writeln!(
        out,
        "{:>8} {:>8} {:<16} {:>7} {:>7} {:>7} {:>9} {:>9} {:>7} {:>6} {:>8} {:>6} {:>6} {:>7}",
        label,
        if label == "total" {
            String::new()
        } else {
            p.ppid.to_string()
        },
        truncate(&p.comm, 16),
        pct(p.cpu_pct),
        pct(p.user_pct),
        pct(p.system_pct),
        bytes(p.rss_bytes),
        slow.peak_rss_bytes.map(bytes).unwrap_or_default(),
        p.threads,
        p.fds.map(|n| n.to_string()).unwrap_or_default(),
        slow.fd_kinds
            .as_ref()
            .map(|k| k.socket.to_string())
            .unwrap_or_default(),
        slow.tcp
            .as_ref()
            .map(|t| t.established.to_string())
            .unwrap_or_default(),
        slow.tcp
            .as_ref()
            .map(|t| t.time_wait.to_string())
            .unwrap_or_default(),
        slow.tcp
            .as_ref()
            .map(|t| t.accept_queue.to_string())
            .unwrap_or_default(),
    );
}

fn pct(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.1}")).unwrap_or_else(|| "-".into())
}

fn bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{b}B")
    } else {
        format!("{v:.1}{}", UNITS[unit])
    }
}

fn truncate(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_at_a_glance() {
        assert_eq!(bytes(512), "512B");
        assert_eq!(bytes(110 * 1024 * 1024), "110.0MiB");
        assert_eq!(pct(None), "-");
        assert_eq!(pct(Some(35.24)), "35.2");
    }
}
