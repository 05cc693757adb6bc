//! HdrHistogram interval logs: the per-interval histograms in the format every HdrHistogram
//! implementation reads (Java's `HistogramLogProcessor`, HdrHistogram_py, the Rust crate).
//!
//! A log has a version comment, `StartTime` and `BaseTime` headers (the wall-clock time of the
//! run's time zero), the CSV legend, then one line per interval and tag:
//!
//! ```text
//! Tag=corrected,0.000,1.000,1.284,HISTFAAAA…
//! ```
//!
//! with the interval's start (seconds from `BaseTime`), its length, its maximum in milliseconds
//! and the histogram in V2 format, DEFLATE-compressed, base64-encoded. Values are nanoseconds.
//! Each interval has three histograms, tagged `corrected` (completion − intended send time),
//! `service` (completion − actual send time) and `lateness` (actual − intended send time).
//! Java's processor reads one tag at a time: `HistogramLogProcessor -i run.hlog -tag corrected`.

use std::io::{self, Write};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

use crate::model::IntervalStats;

/// The tags written for each interval, in order.
pub const TAGS: [&str; 3] = ["corrected", "service", "lateness"];

/// Writes an interval log to `W`.
pub struct LogWriter<W: Write> {
    out: W,
    serializer: V2DeflateSerializer,
    bytes: Vec<u8>,
}

impl<W: Write> std::fmt::Debug for LogWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogWriter").finish_non_exhaustive()
    }
}

impl<W: Write> LogWriter<W> {
    /// Writes the headers: `start` is the wall-clock time of the run's time zero, `comment`
    /// describes the run.
    pub fn new(mut out: W, start: SystemTime, comment: &str) -> io::Result<Self> {
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
        Ok(LogWriter {
            out,
            serializer: V2DeflateSerializer::new(),
            bytes: Vec::new(),
        })
    }

    /// One histogram line.
    pub fn write(
        &mut self,
        start: Duration,
        length: Duration,
        tag: &str,
        h: &Histogram<u64>,
    ) -> io::Result<()> {
        self.bytes.clear();
        self.serializer
            .serialize(h, &mut self.bytes)
            .map_err(|e| io::Error::other(format!("{e:?}")))?;
        let encoded = base64::engine::general_purpose::STANDARD.encode(&self.bytes);
        // The max column is for people reading the log: milliseconds, as Java's writer does.
        writeln!(
            self.out,
            "Tag={tag},{:.3},{:.3},{:.3},{encoded}",
            start.as_secs_f64(),
            length.as_secs_f64(),
            h.max() as f64 / 1e6
        )
    }

    /// The three histograms of one interval.
    pub fn write_interval(
        &mut self,
        start: Duration,
        length: Duration,
        stats: &IntervalStats,
    ) -> io::Result<()> {
        for (tag, h) in TAGS
            .iter()
            .zip([&stats.corrected, &stats.service, &stats.lateness])
        {
            self.write(start, length, tag, h)?;
        }
        Ok(())
    }

    /// Flushes and returns the output.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
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

/// Why an interval log does not read back.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("malformed interval log: {0:?}")]
    Malformed(hdrhistogram::serialization::interval_log::LogIteratorError),
    #[error("bad base64 in interval log: {0}")]
    Base64(#[source] base64::DecodeError),
    #[error("bad histogram in interval log: {0}")]
    Histogram(#[source] HistogramError),
}

/// Why stored bytes are not a histogram.
#[derive(Debug, thiserror::Error)]
pub enum HistogramError {
    #[error("bad stored histogram: truncated header")]
    TruncatedHeader,
    #[error("bad stored histogram: shorter than its header says")]
    Short,
    #[error("bad stored histogram: cannot inflate: {0}")]
    Inflate(#[source] io::Error),
    #[error("bad stored histogram: inflates to more than 64 MiB")]
    TooLarge,
    #[error("bad stored histogram: not HdrHistogram's V2 encoding")]
    NotV2,
    #[error("bad stored histogram: {0:?}")]
    Decode(hdrhistogram::serialization::DeserializeError),
}

/// Reads an interval log (any implementation's) back into histograms.
pub fn read_log(text: &[u8]) -> Result<Vec<LoggedHistogram>, LogError> {
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    let mut out = Vec::new();
    for entry in IntervalLogIterator::new(text) {
        let entry = entry.map_err(LogError::Malformed)?;
        if let LogEntry::Interval(h) = entry {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(h.encoded_histogram())
                .map_err(LogError::Base64)?;
            let histogram = from_bytes(&bytes).map_err(LogError::Histogram)?;
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

/// A histogram as HdrHistogram's V2 format, DEFLATE-compressed (how the store keeps them).
pub fn to_bytes(h: &Histogram<u64>) -> Vec<u8> {
    let mut out = Vec::new();
    // Serializing to memory fails only on a histogram too large for the format's counts.
    let _ = V2DeflateSerializer::new().serialize(h, &mut out);
    out
}

/// V2's cookies: plain, and DEFLATE-compressed (HdrHistogram's encoding spec: the base with
/// the word size, 8 bytes, in bits 4 to 7).
const V2_COOKIE: u32 = 0x1c84_9303 | 0x10;
const V2_DEFLATE_COOKIE: u32 = 0x1c84_9304 | 0x10;
/// V2's header after the cookie: payload length, normalizing offset, digits, lowest, highest,
/// integer-to-double ratio.
const V2_HEADER: usize = 4 + 4 + 4 + 4 + 8 + 8 + 8;
/// The most a stored histogram may decompress to: a full-range histogram at 5 digits
/// encodes in a few MB; more is a damaged or hostile blob.
const MAX_DECODED: u64 = 64 << 20;

/// A histogram from [`to_bytes`] (or any V2 / V2 + DEFLATE encoding). The lengths its header
/// claims are checked against the bytes there really are before anything is allocated for
/// them: a 40-byte blob claiming a 4 GiB payload is an error, not a 4 GiB allocation.
pub fn from_bytes(bytes: &[u8]) -> Result<Histogram<u64>, HistogramError> {
    let be32 = |b: &[u8], at: usize| {
        b.get(at..at + 4)
            .and_then(|w| w.try_into().ok())
            .map(u32::from_be_bytes)
    };
    let plain: std::borrow::Cow<'_, [u8]> = match be32(bytes, 0) {
        Some(V2_COOKIE) => bytes.into(),
        Some(V2_DEFLATE_COOKIE) => {
            use std::io::Read;
            let claimed = be32(bytes, 4).ok_or(HistogramError::TruncatedHeader)? as usize;
            let deflated = bytes
                .get(8..8usize.saturating_add(claimed))
                .ok_or(HistogramError::Short)?;
            let mut inflated = Vec::new();
            flate2::read::ZlibDecoder::new(deflated)
                .take(MAX_DECODED + 1)
                .read_to_end(&mut inflated)
                .map_err(HistogramError::Inflate)?;
            if inflated.len() as u64 > MAX_DECODED {
                return Err(HistogramError::TooLarge);
            }
            inflated.into()
        }
        _ => return Err(HistogramError::NotV2),
    };
    if be32(&plain, 0) != Some(V2_COOKIE) {
        return Err(HistogramError::NotV2);
    }
    let payload = be32(&plain, 4).ok_or(HistogramError::TruncatedHeader)? as usize;
    if payload > plain.len().saturating_sub(V2_HEADER) {
        return Err(HistogramError::Short);
    }
    let mut h: Histogram<u64> = Deserializer::new()
        .deserialize(&mut &plain[..])
        .map_err(HistogramError::Decode)?;
    h.auto(true);
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::new_histogram;

    #[test]
    fn a_written_log_reads_back() {
        let mut stats = IntervalStats::new(0, 1_000_000_000);
        for v in [1_000u64, 2_000_000, 3_000_000_000] {
            stats.corrected.record(v).unwrap();
            stats.service.record(v / 2).unwrap();
        }
        let start = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let mut log = LogWriter::new(Vec::new(), start, "a test").unwrap();
        log.write_interval(Duration::ZERO, Duration::from_secs(1), &stats)
            .unwrap();
        log.write_interval(Duration::from_secs(1), Duration::from_millis(500), &stats)
            .unwrap();
        let text = log.finish().unwrap();
        let back = read_log(&text).unwrap();
        assert_eq!(back.len(), 6);
        assert_eq!(back[0].tag.as_deref(), Some("corrected"));
        assert_eq!(back[3].start, Duration::from_secs(1));
        assert_eq!(back[3].length, Duration::from_millis(500));
        assert_eq!(back[0].histogram.max(), stats.corrected.max());
        assert_eq!(back[1].histogram.len(), 3);
        let line = String::from_utf8(text).unwrap();
        // The max column is the top of the max value's bucket (3 significant digits), in ms.
        assert!(
            line.contains("Tag=corrected,0.000,1.000,3001.025,"),
            "{line}"
        );
    }

    #[test]
    fn stored_histograms_round_trip() {
        let mut h = new_histogram(30_000_000_000);
        for v in (1..10_000u64).map(|v| v * 7_919) {
            h.record(v).unwrap();
        }
        let back = from_bytes(&to_bytes(&h)).unwrap();
        assert_eq!(back, h);
        assert!(from_bytes(b"not a histogram").is_err());
        // A header claiming 4 GiB of payload over 40 bytes: refused without allocating it.
        let mut hostile = Vec::new();
        hostile.extend_from_slice(&V2_COOKIE.to_be_bytes());
        hostile.extend_from_slice(&u32::MAX.to_be_bytes());
        hostile.extend_from_slice(&[0; 32]);
        assert_eq!(hostile.len(), 40);
        let err = from_bytes(&hostile).unwrap_err().to_string();
        assert!(err.contains("shorter than its header says"), "{err}");
        // The same inside a DEFLATE wrapper.
        let mut wrapped = Vec::new();
        wrapped.extend_from_slice(&V2_DEFLATE_COOKIE.to_be_bytes());
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut z, &hostile).unwrap();
        let inner = z.finish().unwrap();
        wrapped.extend_from_slice(&(inner.len() as u32).to_be_bytes());
        wrapped.extend_from_slice(&inner);
        assert!(from_bytes(&wrapped).is_err());
        let mut claims_more = wrapped.clone();
        claims_more[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(from_bytes(&claims_more).is_err());
    }
}
