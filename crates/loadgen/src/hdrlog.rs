//! `--hdr-log FILE`: the per-interval histograms as a standard HdrHistogram interval log.
//!
//! The format is the one HdrHistogram's Java `HistogramLogWriter` writes and every
//! implementation reads (Java's `HistogramLogProcessor`, HdrHistogram_py, hdrhistogram-go, the
//! Rust crate): a version comment, `StartTime` and `BaseTime` headers (the wall-clock time of the
//! run's time zero), the CSV legend, then one line per interval and tag:
//!
//! ```text
//! Tag=corrected,0.000,1.000,1.234,HISTFAAAA…
//! ```
//!
//! with the interval's start (seconds from `BaseTime`), its length, its maximum in milliseconds
//! and the histogram in V2 format, DEFLATE-compressed, base64-encoded. Values are nanoseconds.
//! Each interval has three histograms, tagged `corrected` (completion − intended send time),
//! `service` (completion − actual send time) and `lateness` (actual − intended send time). Java's
//! processor reads one tag at a time: `HistogramLogProcessor -i run.hlog -tag corrected`.
//!
//! Writing (compressing) happens on a thread of its own, off the aggregator's path.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::Histogram;

use crate::attack::{IntervalSink, Span};
use crate::stats::IntervalStats;

/// The tags written for each interval, in order.
pub const TAGS: [&str; 3] = ["corrected", "service", "lateness"];

struct Entry {
    span: Span,
    histograms: [Histogram<u64>; 3],
}

/// Writes an interval log as the run goes.
#[derive(Debug)]
pub struct HdrLogSink {
    path: PathBuf,
    comment: String,
    /// The file, until the run starts and the writer thread takes it.
    file: Option<BufWriter<File>>,
    tx: Option<mpsc::Sender<Entry>>,
    writer: Option<JoinHandle<io::Result<()>>>,
}

impl HdrLogSink {
    /// Creates `path` now, so that a path that cannot be written is reported before the attack.
    /// `comment` describes the run; it goes into the log's header.
    pub fn create(path: &Path, comment: &str) -> io::Result<Self> {
        let file = File::create(path)?;
        Ok(HdrLogSink {
            path: path.to_path_buf(),
            comment: comment.to_string(),
            file: Some(BufWriter::new(file)),
            tx: None,
            writer: None,
        })
    }

    fn close(&mut self) -> io::Result<()> {
        drop(self.tx.take());
        match self.writer.take() {
            Some(handle) => handle
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("the HDR log writer panicked"))),
            None => Ok(()),
        }
    }
}

fn write_header(out: &mut BufWriter<File>, start: SystemTime, comment: &str) -> io::Result<()> {
    let start_secs = start
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64();
    writeln!(out, "#[Histogram log format version 1.3]")?;
    for line in comment.lines() {
        writeln!(out, "#{line}")?;
    }
    writeln!(
        out,
        "#Values are nanoseconds; tags: corrected, service, lateness"
    )?;
    writeln!(
        out,
        "#[StartTime: {start_secs:.3} (seconds since epoch), {}]",
        humantime::format_rfc3339_millis(start)
    )?;
    writeln!(out, "#[BaseTime: {start_secs:.3} (seconds since epoch)]")?;
    writeln!(
        out,
        "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\""
    )?;
    out.flush()
}

fn write_entries(mut out: BufWriter<File>, rx: mpsc::Receiver<Entry>) -> io::Result<()> {
    let mut serializer = V2DeflateSerializer::new();
    {
        // Milliseconds in the max column, as Java's writer does for nanosecond values.
        let mut log = IntervalLogWriterBuilder::new()
            .with_max_value_divisor(1e6)
            .begin_log_with(&mut out, &mut serializer)?;
        for entry in rx {
            for (tag, h) in TAGS.iter().zip(entry.histograms.iter()) {
                log.write_histogram(h, entry.span.start, entry.span.length, Tag::new(tag))
                    .map_err(|e| io::Error::other(format!("{e:?}")))?;
            }
        }
    }
    out.flush()
}

impl IntervalSink for HdrLogSink {
    fn name(&self) -> String {
        format!("the HDR log {}", self.path.display())
    }

    fn begin(&mut self, start: SystemTime) -> io::Result<()> {
        let Some(mut out) = self.file.take() else {
            return Ok(());
        };
        write_header(&mut out, start, &self.comment)?;
        let (tx, rx) = mpsc::channel::<Entry>();
        let writer = std::thread::Builder::new()
            .name("hdr-log".into())
            .spawn(move || write_entries(out, rx))?;
        self.tx = Some(tx);
        self.writer = Some(writer);
        Ok(())
    }

    fn interval(&mut self, span: Span, stats: &IntervalStats) -> io::Result<()> {
        let entry = Entry {
            span,
            histograms: [
                stats.corrected.clone(),
                stats.service.clone(),
                stats.lateness.clone(),
            ],
        };
        let sent = self.tx.as_ref().is_some_and(|tx| tx.send(entry).is_ok());
        if sent {
            Ok(())
        } else {
            // The writer stopped: its error says why.
            Err(self
                .close()
                .err()
                .unwrap_or_else(|| io::Error::other("the HDR log writer stopped")))
        }
    }

    fn finish(&mut self, _totals: &IntervalStats) -> io::Result<()> {
        self.close()
    }
}

impl Drop for HdrLogSink {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

/// One histogram read back from an interval log.
#[derive(Debug)]
pub struct LoggedHistogram {
    pub tag: Option<String>,
    pub start: Duration,
    pub length: Duration,
    pub histogram: Histogram<u64>,
}

/// Reads an interval log (any implementation's) back into histograms.
pub fn read_log(text: &[u8]) -> Result<Vec<LoggedHistogram>, String> {
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    use hdrhistogram::serialization::Deserializer;
    let mut deserializer = Deserializer::new();
    let mut out = Vec::new();
    for entry in IntervalLogIterator::new(text) {
        let entry = entry.map_err(|e| format!("malformed interval log: {e:?}"))?;
        if let LogEntry::Interval(h) = entry {
            let bytes = base64_decode(h.encoded_histogram())?;
            let histogram: Histogram<u64> = deserializer
                .deserialize(&mut &bytes[..])
                .map_err(|e| format!("bad histogram in interval log: {e:?}"))?;
            out.push(LoggedHistogram {
                tag: h.tag().map(|t| t.as_str().to_string()),
                start: h.start_timestamp(),
                length: h.duration(),
                histogram,
            });
        }
    }
    Ok(out)
}

fn base64_decode(text: &str) -> Result<Vec<u8>, String> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| format!("bad base64 in interval log: {e}"))
}
