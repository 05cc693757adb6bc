//! `probe record --out FILE`: samples to a CSV or JSON-lines file, with no gun host needed.
//!
//! The successor to the shell script of the write-ups (`ps` and `ls` once a second into a CSV).
//! CSV has one row per process per sample plus a `total` row (the tree summed); empty cells are
//! figures not measured in that sample (the slow collectors') or not available. The same
//! schema ([`SampleRow`]) is what `loadgen runs export --format samples-csv` writes, so a script
//! written for one reads the other. Events go to
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

/// One process in one sample as one CSV row: the one schema of a sample in a file.
#[derive(Debug, Serialize)]
pub struct SampleRow<'a> {
    /// Seconds on the timeline: since the first sample (`probe record`), or from the run's
    /// time zero, negative in the pre-roll (a stored run's export).
    t_s: f64,
    /// RFC 3339 wall-clock time of the sample, on the probe host's clock.
    time: String,
    /// The probe's index in its run (0 for `probe record`).
    probe: u32,
    /// The host the probe ran on.
    host: &'a str,
    /// Which group of the system under test the probe watched: `target`, the database's name,
    /// or a watched group's (each group's rows are its own; nothing sums across groups).
    group: &'a str,
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
    fds: Option<u64>,
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
    /// With `--canary`: what a wake-up cost on the target's CPUs, ns of CPU an exchange (last,
    /// so that the columns before keep their places).
    host_wake_ns: Option<f64>,
}

/// Writes records as they come.
pub enum RecordWriter<W: Write> {
    Csv {
        csv: Box<csv::Writer<W>>,
        /// The first sample's wall clock: `t_s` counts from it.
        first_wall_ns: Option<u64>,
        /// This host's name, for the `host` column.
        host: String,
    },
    Jsonl(W),
}

impl<W: Write> std::fmt::Debug for RecordWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let format = match self {
            RecordWriter::Csv { .. } => Format::Csv,
            RecordWriter::Jsonl(_) => Format::Jsonl,
        };
        f.debug_struct("RecordWriter")
            .field("format", &format)
            .finish()
    }
}

impl<W: Write> RecordWriter<W> {
    pub fn new(out: W, format: Format) -> Self {
        match format {
            Format::Csv => RecordWriter::Csv {
                csv: Box::new(csv::Writer::from_writer(out)),
                first_wall_ns: None,
                host: crate::collect::host_facts(&crate::collect::ProcRoot::default()).0,
            },
            Format::Jsonl => RecordWriter::Jsonl(out),
        }
    }

    /// Writes one record (events and profiles are not written in CSV).
    pub fn write(&mut self, record: &Record) -> std::io::Result<()> {
        match self {
            RecordWriter::Jsonl(out) => {
                serde_json::to_writer(&mut *out, record)?;
                out.write_all(b"\n")
            }
            RecordWriter::Csv {
                csv,
                first_wall_ns,
                host,
            } => {
                let Record::Sample(sample) = record else {
                    return Ok(());
                };
                let first = *first_wall_ns.get_or_insert(sample.wall_ns);
                let of = RowsOf {
                    t_s: sample.wall_ns.saturating_sub(first) as f64 / 1e9,
                    probe: 0,
                    host,
                    group: "target",
                };
                for row in sample_rows(sample, of) {
                    csv.serialize(row)?;
                }
                Ok(())
            }
        }
    }

    /// The output, flushed (for writing into memory).
    pub fn into_inner(self) -> std::io::Result<W> {
        match self {
            RecordWriter::Csv { csv, .. } => csv.into_inner().map_err(|e| e.into_error()),
            RecordWriter::Jsonl(mut out) => out.flush().map(|()| out),
        }
    }

    pub fn flush(&mut self) -> std::io::Result<()> {
        match self {
            RecordWriter::Csv { csv, .. } => csv.flush(),
            RecordWriter::Jsonl(out) => out.flush(),
        }
    }
}

/// Where a sample's rows come from and where they sit on the timeline.
#[derive(Debug, Clone, Copy)]
pub struct RowsOf<'a> {
    pub t_s: f64,
    pub probe: u32,
    pub host: &'a str,
    pub group: &'a str,
}

/// A sample's rows: the `total` row first, then one per process.
pub fn sample_rows<'a>(
    sample: &'a Sample,
    of: RowsOf<'a>,
) -> impl Iterator<Item = SampleRow<'a>> + 'a {
    sample
        .total
        .iter()
        .map(|t| ("total".to_string(), t))
        .chain(sample.processes.iter().map(|p| (p.pid.to_string(), p)))
        .map(move |(pid, p)| row(sample, p, pid, of))
}

fn row<'a>(sample: &Sample, p: &'a ProcessSample, pid: String, of: RowsOf<'a>) -> SampleRow<'a> {
    let wall = std::time::UNIX_EPOCH + std::time::Duration::from_nanos(sample.wall_ns);
    SampleRow {
        t_s: (of.t_s * 1000.0).round() / 1000.0,
        time: humantime::format_rfc3339_millis(wall).to_string(),
        probe: of.probe,
        host: of.host,
        group: of.group,
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
        host_wake_ns: sample.host.as_ref().and_then(|h| h.wake_ns).map(f64::round),
    }
}

fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}
