//! Live progress on a terminal: one line, refreshed as each interval closes.
//!
//! Shown only when standard output is a terminal, so that a summary piped to a file or a JSON
//! consumer gets nothing but the summary.

use std::io::{self, IsTerminal};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::engine::attack::{IntervalSink, Span};
use store::model::{ErrorKind, IntervalStats};
use store::summary::format_ns;

/// The live line. Implements [`IntervalSink`] so the attack feeds it like any other.
#[derive(Debug)]
pub struct Progress {
    bar: ProgressBar,
    errors: u64,
}

impl Progress {
    /// A progress line if standard output is a terminal, else `None`. `expected` is the
    /// attack's planned length, when it has one.
    pub fn for_terminal(expected: Option<Duration>) -> Option<Self> {
        if !io::stdout().is_terminal() {
            return None;
        }
        let bar = match expected {
            Some(d) => ProgressBar::new(d.as_secs().max(1)),
            None => ProgressBar::new_spinner(),
        };
        let template = if expected.is_some() {
            "{elapsed_precise} [{bar:20}] {msg}"
        } else {
            "{elapsed_precise} {spinner} {msg}"
        };
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_draw_target(ProgressDrawTarget::stderr());
        bar.enable_steady_tick(Duration::from_millis(250));
        bar.set_message("starting…");
        Some(Progress { bar, errors: 0 })
    }

    /// Removes the line before the summary is printed.
    pub fn clear(&self) {
        self.bar.finish_and_clear();
    }
}

impl IntervalSink for Progress {
    fn name(&self) -> String {
        "the progress line".into()
    }

    fn interval(&mut self, span: Span, stats: &IntervalStats) -> io::Result<()> {
        let seconds = span.length.as_secs_f64().max(1e-9);
        self.errors += stats.errors.total() - stats.errors.get(ErrorKind::Cancelled);
        let p99 = if stats.corrected.is_empty() {
            "-".into()
        } else {
            format_ns(stats.corrected.value_at_quantile(0.99))
        };
        self.bar.set_position((span.start + span.length).as_secs());
        self.bar.set_message(format!(
            "sent {:.0}/s · ok {:.0}/s · in flight {} · errors {} · p99 {}",
            stats.sent as f64 / seconds,
            stats.ok as f64 / seconds,
            stats.in_flight,
            self.errors,
            p99
        ));
        Ok(())
    }
}
