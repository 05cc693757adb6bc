//! A stored run as files other tools read: an HdrHistogram interval log, CSV, JSON.

use std::io::{self, Write};
use std::time::{Duration, UNIX_EPOCH};

use serde::Serialize;

use crate::hdrlog::{self, LogWriter};
use crate::run::{ProbeMeta, RunMeta, RunStatus, StoredGap, StoredRun};
use crate::summary::Summary;

/// The load's intervals as an HdrHistogram interval log (see `hdrlog`).
pub fn hdr_log(run: &StoredRun, out: impl Write) -> io::Result<()> {
    let start = UNIX_EPOCH + Duration::from_nanos(run.meta.started_at_ns.max(0) as u64);
    let comment = format!(
        "Showdown run {} ({}): {} · {}",
        run.meta.id, run.meta.name, run.meta.config.target, run.meta.config.load
    );
    let mut log = LogWriter::new(out, start, &comment)?;
    for i in &run.intervals {
        let start = Duration::from_nanos(i.start_ns.max(0) as u64);
        let length = Duration::from_nanos(i.length_ns.max(0) as u64);
        log.write_interval(start, length, &i.stats)?;
    }
    log.finish().map(drop)
}

#[derive(Serialize)]
struct IntervalRow {
    /// Offset of the interval's start from time zero, seconds.
    start_s: f64,
    length_s: f64,
    requests: u64,
    sent: u64,
    responses: u64,
    ok: u64,
    errors: u64,
    bytes_in: u64,
    bytes_out: u64,
    in_flight: u64,
    connections_open: u64,
    corrected_p50_ms: Option<f64>,
    corrected_p90_ms: Option<f64>,
    corrected_p99_ms: Option<f64>,
    corrected_max_ms: Option<f64>,
    service_p50_ms: Option<f64>,
    service_p99_ms: Option<f64>,
    lateness_p99_ms: Option<f64>,
}

fn ms(h: &hdrhistogram::Histogram<u64>, q: f64) -> Option<f64> {
    (!h.is_empty()).then(|| h.value_at_quantile(q) as f64 / 1e6)
}

/// The load's intervals as CSV: one row per interval, percentiles in milliseconds.
pub fn intervals_csv(run: &StoredRun, out: impl Write) -> io::Result<()> {
    let mut csv = csv::Writer::from_writer(out);
    for i in &run.intervals {
        let s = &i.stats;
        csv.serialize(IntervalRow {
            start_s: i.start_ns as f64 / 1e9,
            length_s: i.length_ns as f64 / 1e9,
            requests: s.requests,
            sent: s.sent,
            responses: s.responses,
            ok: s.ok,
            errors: s.errors.total(),
            bytes_in: s.bytes_in,
            bytes_out: s.bytes_out,
            in_flight: s.in_flight,
            connections_open: s.connections_open,
            corrected_p50_ms: ms(&s.corrected, 0.5),
            corrected_p90_ms: ms(&s.corrected, 0.9),
            corrected_p99_ms: ms(&s.corrected, 0.99),
            corrected_max_ms: ms(&s.corrected, 1.0),
            service_p50_ms: ms(&s.service, 0.5),
            service_p99_ms: ms(&s.service, 0.99),
            lateness_p99_ms: ms(&s.lateness, 0.99),
        })?;
    }
    csv.flush()
}

/// The probes' samples as CSV: one row per process (and a `total` row) per sample, in the
/// schema `probe record` writes ([`probe::record::SampleRow`]).
pub fn samples_csv(run: &StoredRun, out: impl Write) -> io::Result<()> {
    use probe::protocol::Record;
    let mut csv = csv::Writer::from_writer(out);
    for probe in &run.probes {
        let host = &probe.meta.host;
        let group = host
            .name
            .clone()
            .unwrap_or_else(|| host.role.as_str().to_string());
        for stored in &probe.records {
            let Record::Sample(sample) = &stored.record else {
                continue;
            };
            let of = probe::record::RowsOf {
                t_s: stored.t_ns as f64 / 1e9,
                probe: probe.meta.index,
                host: &host.hostname,
                group: &group,
            };
            for row in probe::record::sample_rows(sample, of) {
                csv.serialize(row)?;
            }
        }
    }
    csv.flush()
}

#[derive(Serialize)]
struct JsonRun<'a> {
    schema: &'static str,
    meta: &'a RunMeta,
    status: RunStatus,
    stop_reason: &'a Option<String>,
    ended_at_ns: Option<i64>,
    summary: &'a Option<Summary>,
    warnings: &'a [String],
    intervals: Vec<JsonInterval>,
    probes: Vec<JsonProbe<'a>>,
}

#[derive(Serialize)]
struct JsonInterval {
    index: u64,
    start_ns: i64,
    length_ns: i64,
    requests: u64,
    sent: u64,
    responses: u64,
    ok: u64,
    bytes_in: u64,
    bytes_out: u64,
    errors: std::collections::BTreeMap<&'static str, u64>,
    status_codes: std::collections::BTreeMap<u16, u64>,
    in_flight: u64,
    connections_open: u64,
    /// HdrHistograms, V2 + DEFLATE, base64: readable by any HdrHistogram implementation.
    corrected: String,
    service: String,
    first_byte: String,
    lateness: String,
}

#[derive(Serialize)]
struct JsonProbe<'a> {
    meta: &'a ProbeMeta,
    records: Vec<serde_json::Value>,
    gaps: &'a [StoredGap],
}

/// The whole run as one JSON document (schema `showdown.run/1`).
pub fn json(run: &StoredRun, out: impl Write) -> io::Result<()> {
    use base64::Engine;
    let b64 = |h: &hdrhistogram::Histogram<u64>| {
        base64::engine::general_purpose::STANDARD.encode(hdrlog::to_bytes(h))
    };
    let doc = JsonRun {
        schema: "showdown.run/1",
        meta: &run.meta,
        status: run.status,
        stop_reason: &run.stop_reason,
        ended_at_ns: run.ended_at_ns,
        summary: &run.summary,
        warnings: &run.warnings,
        intervals: run
            .intervals
            .iter()
            .map(|i| JsonInterval {
                index: i.stats.index,
                start_ns: i.start_ns,
                length_ns: i.length_ns,
                requests: i.stats.requests,
                sent: i.stats.sent,
                responses: i.stats.responses,
                ok: i.stats.ok,
                bytes_in: i.stats.bytes_in,
                bytes_out: i.stats.bytes_out,
                errors: i
                    .stats
                    .errors
                    .nonzero()
                    .map(|(k, n)| (k.name(), n))
                    .collect(),
                status_codes: i.stats.status.to_map(),
                in_flight: i.stats.in_flight,
                connections_open: i.stats.connections_open,
                corrected: b64(&i.stats.corrected),
                service: b64(&i.stats.service),
                first_byte: b64(&i.stats.first_byte),
                lateness: b64(&i.stats.lateness),
            })
            .collect(),
        probes: run
            .probes
            .iter()
            .map(|p| JsonProbe {
                meta: &p.meta,
                records: p
                    .records
                    .iter()
                    .map(|r| {
                        let mut v = serde_json::to_value(&r.record).unwrap_or_default();
                        if let Some(obj) = v.as_object_mut() {
                            obj.insert("seq".into(), r.seq.into());
                            obj.insert("t_ns".into(), r.t_ns.into());
                        }
                        v
                    })
                    .collect(),
                gaps: &p.gaps,
            })
            .collect(),
    };
    serde_json::to_writer_pretty(out, &doc).map_err(io::Error::other)
}
