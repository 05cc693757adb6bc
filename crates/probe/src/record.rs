//! `probe record --out FILE`: samples to a CSV or JSON-lines file, with no gun host needed.
//!
//! The successor to the shell script of the write-ups (`ps` and `ls` once a second into a CSV).
//! CSV has one row per process per sample plus a `total` row (the tree summed); empty cells are
//! figures not measured in that sample (the slow collectors') or not available. Events go to
//! the log on standard error. JSON lines has one object per line: every record as the probe
//! streams it (`{"record":"sample",…}` or `{"record":"event",…}`).

use std::io::Write;

use serde::Serialize;

use crate::protocol::Record;
use crate::sample::{ProcessSample, Sample};

/// The output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Csv,
    Jsonl,
}

impl Format {
    /// `jsonl`/`json`/`ndjson` files get JSON lines, anything else CSV.
    pub fn for_path(path: &std::path::Path) -> Self {
        match path.extension().and_then(|e| e.to_str()) {
            Some("jsonl" | "json" | "ndjson") => Format::Jsonl,
            _ => Format::Csv,
        }
    }
}

/// One CSV row.
#[derive(Debug, Serialize)]
struct Row<'a> {
    /// RFC 3339 wall-clock time of the sample.
    time: String,
    /// Seconds since the first sample.
    elapsed_s: f64,
    /// A PID, or `total` for the tree summed.
    pid: String,
    comm: &'a str,
    cpu_pct: Option<f64>,
    user_pct: Option<f64>,
    system_pct: Option<f64>,
    rss_bytes: u64,
    peak_rss_bytes: Option<u64>,
    vsize_bytes: u64,
    threads: u64,
    fds: u64,
    fd_limit_soft: Option<u64>,
    fd_limit_hard: Option<u64>,
    fd_sockets: Option<u64>,
    fd_files: Option<u64>,
    fd_pipes: Option<u64>,
    fd_epoll: Option<u64>,
    tcp_established: Option<u64>,
    tcp_time_wait: Option<u64>,
    tcp_close_wait: Option<u64>,
    tcp_syn_recv: Option<u64>,
    tcp_listen: Option<u64>,
    accept_queue: Option<u64>,
    voluntary_ctxt_switches: Option<u64>,
    involuntary_ctxt_switches: Option<u64>,
    minor_faults: Option<u64>,
    major_faults: Option<u64>,
    read_bytes: Option<u64>,
    write_bytes: Option<u64>,
    pss_bytes: Option<u64>,
    uss_bytes: Option<u64>,
    host_cpu_pct: Option<f64>,
    host_mem_available_bytes: Option<u64>,
    missed_ticks: u64,
    probe_cpu_pct: Option<f64>,
}

/// Writes records as they come.
pub struct RecordWriter<W: Write> {
    format: Format,
    csv: Option<csv::Writer<W>>,
    out: Option<W>,
    first_wall_ns: Option<u64>,
}

impl<W: Write> std::fmt::Debug for RecordWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordWriter")
            .field("format", &self.format)
            .finish()
    }
}

impl<W: Write> RecordWriter<W> {
    pub fn new(out: W, format: Format) -> Self {
        match format {
            Format::Csv => RecordWriter {
                format,
                csv: Some(csv::Writer::from_writer(out)),
                out: None,
                first_wall_ns: None,
            },
            Format::Jsonl => RecordWriter {
                format,
                csv: None,
                out: Some(out),
                first_wall_ns: None,
            },
        }
    }

    /// Writes one record (events are not written in CSV).
    pub fn write(&mut self, record: &Record) -> std::io::Result<()> {
        if let Some(out) = self.out.as_mut() {
            serde_json::to_writer(&mut *out, record)?;
            return out.write_all(b"\n");
        }
        if let (Some(csv), Record::Sample(sample)) = (self.csv.as_mut(), record) {
            let first = *self.first_wall_ns.get_or_insert(sample.wall_ns);
            let elapsed = sample.wall_ns.saturating_sub(first) as f64 / 1e9;
            if let Some(total) = &sample.total {
                csv.serialize(row(sample, total, "total".into(), elapsed))?;
            }
            for p in &sample.processes {
                csv.serialize(row(sample, p, p.pid.to_string(), elapsed))?;
            }
        }
        Ok(())
    }

    pub fn flush(&mut self) -> std::io::Result<()> {
        match (self.csv.as_mut(), self.out.as_mut()) {
            (Some(csv), _) => csv.flush(),
            (_, Some(out)) => out.flush(),
            _ => Ok(()),
        }
    }
}

fn row<'a>(sample: &Sample, p: &'a ProcessSample, pid: String, elapsed: f64) -> Row<'a> {
    let wall = std::time::UNIX_EPOCH + std::time::Duration::from_nanos(sample.wall_ns);
    Row {
        time: humantime::format_rfc3339_millis(wall).to_string(),
        elapsed_s: (elapsed * 1000.0).round() / 1000.0,
        pid,
        comm: &p.comm,
        cpu_pct: p.cpu_pct.map(round2),
        user_pct: p.user_pct.map(round2),
        system_pct: p.system_pct.map(round2),
        rss_bytes: p.rss_bytes,
        peak_rss_bytes: p.peak_rss_bytes,
        vsize_bytes: p.vsize_bytes,
        threads: p.threads,
        fds: p.fds,
        fd_limit_soft: p.fd_limit_soft,
        fd_limit_hard: p.fd_limit_hard,
        fd_sockets: p.fd_kinds.as_ref().map(|k| k.socket),
        fd_files: p.fd_kinds.as_ref().map(|k| k.file),
        fd_pipes: p.fd_kinds.as_ref().map(|k| k.pipe),
        fd_epoll: p.fd_kinds.as_ref().map(|k| k.epoll),
        tcp_established: p.tcp.as_ref().map(|t| t.established),
        tcp_time_wait: p.tcp.as_ref().map(|t| t.time_wait),
        tcp_close_wait: p.tcp.as_ref().map(|t| t.close_wait),
        tcp_syn_recv: p.tcp.as_ref().map(|t| t.syn_recv),
        tcp_listen: p.tcp.as_ref().map(|t| t.listen),
        accept_queue: p.tcp.as_ref().map(|t| t.accept_queue),
        voluntary_ctxt_switches: p.voluntary_ctxt_switches,
        involuntary_ctxt_switches: p.involuntary_ctxt_switches,
        minor_faults: p.minor_faults,
        major_faults: p.major_faults,
        read_bytes: p.read_bytes,
        write_bytes: p.write_bytes,
        pss_bytes: p.pss_bytes,
        uss_bytes: p.uss_bytes,
        host_cpu_pct: sample.host.as_ref().and_then(|h| h.cpu_pct).map(round2),
        host_mem_available_bytes: sample.host.as_ref().map(|h| h.mem_available_bytes),
        missed_ticks: sample.missed_ticks,
        probe_cpu_pct: sample.probe.cpu_pct.map(round2),
    }
}

fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}
