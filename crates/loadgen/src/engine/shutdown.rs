//! Stopping a run early is a value passed in, not a global.
//!
//! [`Shutdown`] is cloned into every worker. The first [`Shutdown::stop`] (Ctrl-C, or the
//! generator falling further behind than `--max-lateness` allows) stops the schedule and gives
//! requests in flight a grace period; [`Shutdown::abort`] (a second Ctrl-C) ends them now. Either
//! way, everything recorded so far is kept and reported.

use std::sync::{Arc, Mutex};

use tokio::sync::watch;

/// Where a run is in stopping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// Keep to the schedule.
    Running,
    /// Send nothing more; let requests in flight finish within the grace period.
    Finish,
    /// End requests in flight now.
    Abort,
}

/// A handle to stop a run, shared by whoever may stop it.
#[derive(Debug, Clone)]
pub struct Shutdown {
    state: Arc<watch::Sender<Stop>>,
    reason: Arc<Mutex<Option<String>>>,
}

impl Default for Shutdown {
    fn default() -> Self {
        Self::new()
    }
}

impl Shutdown {
    pub fn new() -> Self {
        let (tx, _) = watch::channel(Stop::Running);
        Shutdown {
            state: Arc::new(tx),
            reason: Arc::new(Mutex::new(None)),
        }
    }

    /// Stops sending; the first reason given is the one reported.
    pub fn stop(&self, reason: &str) {
        if let Ok(mut r) = self.reason.lock() {
            r.get_or_insert_with(|| reason.to_string());
        }
        self.state.send_if_modified(|s| {
            let changed = *s == Stop::Running;
            if changed {
                *s = Stop::Finish;
            }
            changed
        });
    }

    /// Ends requests in flight at once (after a stop, or instead of one).
    pub fn abort(&self, reason: &str) {
        if let Ok(mut r) = self.reason.lock() {
            r.get_or_insert_with(|| reason.to_string());
        }
        self.state.send_replace(Stop::Abort);
    }

    pub fn state(&self) -> Stop {
        *self.state.borrow()
    }

    /// Why the run was stopped, if it was.
    pub fn reason(&self) -> Option<String> {
        self.reason.lock().ok().and_then(|r| r.clone())
    }

    pub fn subscribe(&self) -> watch::Receiver<Stop> {
        self.state.subscribe()
    }

    /// Turns true once the run is stopped (or aborted): what a generator fired through
    /// `fleet::Firing` is told. Needs a tokio runtime.
    pub fn stopping(&self) -> watch::Receiver<bool> {
        let (tx, rx) = watch::channel(self.state() != Stop::Running);
        let mut states = self.subscribe();
        tokio::spawn(async move {
            while states.changed().await.is_ok() {
                if *states.borrow() != Stop::Running {
                    let _ = tx.send(true);
                    return;
                }
            }
        });
        rx
    }
}

/// The next of Ctrl-C, SIGTERM or SIGHUP, named for the user.
async fn next_signal(
    term: &mut tokio::signal::unix::Signal,
    hup: &mut tokio::signal::unix::Signal,
) -> Option<&'static str> {
    tokio::select! {
        r = tokio::signal::ctrl_c() => r.ok().map(|()| "Ctrl-C"),
        r = term.recv() => r.map(|()| "SIGTERM"),
        r = hup.recv() => r.map(|()| "SIGHUP (the terminal closed)"),
    }
}

impl Shutdown {
    /// Stops on Ctrl-C, SIGTERM or SIGHUP, and aborts on a second.
    pub fn on_signals(&self) {
        let shutdown = self.clone();
        use tokio::signal::unix::{signal, SignalKind};
        tokio::spawn(async move {
            // Ctrl-C, a `kill` (SIGTERM) and a closed terminal or SSH session (SIGHUP) all stop the
            // same way: what is recorded is kept, and what was started (targets, a throwaway
            // PostgreSQL, cgroups, temporary directories) is taken down.
            let (Ok(mut term), Ok(mut hup)) = (
                signal(SignalKind::terminate()),
                signal(SignalKind::hangup()),
            ) else {
                return;
            };
            let Some(first) = next_signal(&mut term, &mut hup).await else {
                return;
            };
            eprintln!(
            "\nInterrupted ({first}): sending no more requests, waiting for those in flight (interrupt again to stop now)."
        );
            shutdown.stop(&format!("interrupted by {first}"));
            if let Some(second) = next_signal(&mut term, &mut hup).await {
                shutdown.abort(&format!("interrupted twice ({second})"));
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn stop_then_abort_keeps_the_first_reason() {
        let s = Shutdown::new();
        let mut rx = s.subscribe();
        assert_eq!(s.state(), Stop::Running);
        s.stop("interrupted");
        rx.changed().await.unwrap();
        assert_eq!(*rx.borrow_and_update(), Stop::Finish);
        s.stop("again");
        s.abort("second interrupt");
        rx.changed().await.unwrap();
        assert_eq!(*rx.borrow(), Stop::Abort);
        assert_eq!(s.reason().as_deref(), Some("interrupted"));
    }
}
