//! What one generator's run came to ([`Fired`]): its outcome, read from its standard output,
//! and its last words, from its standard error. Why a run could not be fired at all is a
//! [`crate::FleetError`]; why a gun's shard came to nothing, a [`crate::ShotError`].

use tokio::io::{AsyncRead, AsyncReadExt};

/// The most of a generator's standard output kept: its one outcome line (`order::MAX_LINE`)
/// and the newline after it.
pub(crate) const KEEP_OUTPUT: usize = order::MAX_LINE as usize + 1;

/// The most of a generator's standard error kept: its last words, the tail of it.
pub(crate) const KEEP_ERRORS: usize = 64 << 10;

/// What a generator, a gun or a pod wrote on `from`, read to its end but kept within `keep`
/// bytes (its head for an outcome, its tail for last words): a peer that writes without end
/// costs the runner no more memory than that, and is still drained so that it never blocks.
pub(crate) async fn read_capped<R: AsyncRead + Unpin>(
    from: &mut R,
    keep: usize,
    tail: bool,
) -> Vec<u8> {
    let mut kept = Vec::new();
    let mut chunk = vec![0u8; 64 << 10];
    loop {
        let n = match from.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let read = chunk.get(..n).unwrap_or_default();
        if tail {
            kept.extend_from_slice(read);
            if kept.len() > keep {
                kept.drain(..kept.len() - keep);
            }
        } else if kept.len() < keep {
            let room = keep - kept.len();
            kept.extend_from_slice(read.get(..room.min(n)).unwrap_or_default());
        }
    }
    kept
}

/// What one attack came to.
#[derive(Debug, Clone)]
pub struct Fired {
    /// What `loadgen order` printed, when it printed one.
    pub outcome: Option<order::Outcome>,
    /// loadgen's exit code (0 done, 3 stopped early; see docs/loadgen.md): read only to say
    /// why there is no outcome.
    pub code: Option<i32>,
    /// What it said on standard error (its last lines).
    pub said: String,
}

impl Fired {
    /// What a loadgen's output says: its outcome on standard output, its last lines on
    /// standard error.
    pub fn of(stdout: &[u8], stderr: &[u8], code: Option<i32>) -> Fired {
        let said = String::from_utf8_lossy(stderr);
        let said: Vec<&str> = said.lines().rev().take(10).collect();
        let said = said.into_iter().rev().collect::<Vec<_>>().join(" | ");
        Fired {
            outcome: order::read_line(stdout).ok(),
            code,
            said,
        }
    }

    /// An attack's summary.
    pub fn summary(&self) -> Option<&store::summary::Summary> {
        self.outcome.as_ref().and_then(|o| o.summary.as_ref())
    }

    /// A search's result (the first search's).
    pub fn search(&self) -> Option<&analysis::capacity::Search> {
        self.outcome.as_ref().and_then(order::Outcome::first_search)
    }

    /// Stopped before its end.
    pub fn stopped(&self) -> bool {
        self.outcome.as_ref().is_some_and(|o| o.stopped)
    }

    /// Why there is no outcome: how loadgen ended, and what it said.
    pub fn why_not(&self) -> String {
        format!(
            "loadgen could not run ({}): {}",
            match self.code {
                Some(code) => format!("exit {code}"),
                None => "killed".into(),
            },
            self.said
        )
    }
}

#[cfg(test)]
mod capped_tests {
    #![allow(clippy::unwrap_used)]

    /// A peer that writes 10 MiB keeps only the head (or the tail) asked for, read to its end.
    #[tokio::test]
    async fn output_beyond_the_cap_is_read_and_dropped() {
        let bytes: Vec<u8> = (0..10 << 20).map(|i| (i % 251) as u8).collect();
        let head = super::read_capped(&mut &bytes[..], 1000, false).await;
        assert_eq!(head, bytes[..1000]);
        let tail = super::read_capped(&mut &bytes[..], 1000, true).await;
        assert_eq!(tail, bytes[bytes.len() - 1000..]);
        let short = super::read_capped(&mut &b"ok\n"[..], 1000, true).await;
        assert_eq!(short, b"ok\n");
    }
}
