//! `--hdr-log FILE`: the per-interval histograms as a standard HdrHistogram interval log,
//! written as the run goes (the format is `store::hdrlog`'s). Compressing happens on a thread of
//! its own, off the aggregator's path.

use std::fs::File;
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::SystemTime;

use store::hdrlog::LogWriter;
use store::model::IntervalStats;

use crate::engine::attack::{IntervalSink, Span};

/// Writes an interval log as the run goes.
#[derive(Debug)]
pub struct HdrLogSink {
    path: PathBuf,
    comment: String,
    /// The file, until the run starts and the writer thread takes it.
    file: Option<BufWriter<File>>,
    tx: Option<mpsc::Sender<(Span, Box<IntervalStats>)>>,
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

impl IntervalSink for HdrLogSink {
    fn name(&self) -> String {
        format!("the HDR log {}", self.path.display())
    }

    fn begin(&mut self, start: SystemTime) -> io::Result<()> {
        let Some(out) = self.file.take() else {
            return Ok(());
        };
        let mut log = LogWriter::new(out, start, &self.comment)?;
        let (tx, rx) = mpsc::channel::<(Span, Box<IntervalStats>)>();
        let writer = std::thread::Builder::new()
            .name("hdr-log".into())
            .spawn(move || {
                for (span, stats) in rx {
                    log.write_interval(span.start, span.length, &stats)?;
                }
                log.finish().map(drop)
            })?;
        self.tx = Some(tx);
        self.writer = Some(writer);
        Ok(())
    }

    fn interval(&mut self, span: Span, stats: &IntervalStats) -> io::Result<()> {
        let sent = self
            .tx
            .as_ref()
            .is_some_and(|tx| tx.send((span, Box::new(stats.clone()))).is_ok());
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
