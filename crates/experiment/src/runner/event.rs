//! What the runner says while it runs, as typed events, and the one printer that turns them
//! into lines on standard error (a test collects them instead).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One thing the runner says.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Event {
    /// What an earlier runner left, ended now.
    Left(String),
    /// What the sweep of an earlier runner's leftovers could not do.
    SweepProblem(String),
    /// How the servers started by command are held (without a cgroup of their own).
    HeldBy(String),
    /// A cell whose schedule the generator may not keep.
    ScheduleWarning(String),
    /// What a share of a capacity promises for its run ([`crate::plan::promises`]).
    SharePromise(String),
    NothingToRun {
        cells: usize,
        name: String,
        file: String,
        scale: f64,
    },
    Resuming {
        name: String,
        skipped: usize,
        cells: usize,
    },
    /// Variables withheld from the builds and targets.
    Withheld(Vec<String>),
    /// The database shares the generator's CPUs.
    SharesGeneratorCpus(String),
    /// The guns being made ready, and each as it was found.
    Guns(fleet::Progress),
    ReachedThrough {
        target: String,
        gun: String,
        through: String,
    },
    /// A cell starts.
    Cell {
        number: usize,
        total: usize,
        key: String,
        repetition: u32,
        left: usize,
        eta: Duration,
    },
    Share {
        share: String,
        target: String,
        capacity: f64,
        searches: usize,
        rate: f64,
    },
    CellFailed(String),
    /// A measured run that other processes held back, kept as failed and run again once the
    /// generator's CPUs were quiet (or the wait gave up).
    MeasureAgain {
        key: String,
        waited: super::quiet::Waited,
    },
    StopNote {
        target: String,
        how: String,
    },
    /// `DATABASE_URL` is exported but the file names no database.
    DatabaseUrlUnused,
    StartingDatabase {
        cpus: Option<String>,
    },
    /// A target's source checked out at its `ref`.
    CheckedOut {
        target: String,
        /// `origin/main at 1a2b3c4d5e6f`.
        revision: String,
        /// Where its `cwd` is in the checkout.
        cwd: String,
    },
    Building {
        target: String,
        /// The build's command line, redacted.
        command: String,
    },
    /// A line a build printed, redacted.
    BuildOutput {
        target: String,
        line: String,
    },
    Verified {
        target: String,
        against: String,
        /// Why it failed, if it did.
        failed: Option<String>,
    },
    /// The run is over.
    Finished,
}

/// The line an event is said in (`None`: nothing to say).
pub(super) fn line(event: &Event) -> Option<String> {
    Some(match event {
        Event::Guns(progress) => progress.to_string(),
        Event::ReachedThrough {
            target,
            gun,
            through,
        } => format!("  {target} is checked where the guns reach it: through {gun} ({through})"),
        Event::Cell {
            number,
            total,
            key,
            repetition,
            left,
            eta,
        } => format!(
            "[{number}/{total}] {key} (repetition {repetition}) · {left} left, about {} to go",
            humantime::format_duration(Duration::from_secs(eta.as_secs()))
        ),
        Event::Share {
            share,
            target,
            capacity,
            searches,
            rate,
        } => format!(
            "  {share} of {target}'s capacity ({capacity:.0} req/s, from {searches} search{}): {rate:.0} req/s",
            if *searches == 1 { "" } else { "es" },
        ),
        Event::CellFailed(reason) => format!("  cell failed: {reason}"),
        Event::MeasureAgain { key, waited } => format!(
            "  other processes held the generator back (its run kept as failed); waited for its CPUs to be quiet: {}; measuring {key} again",
            waited_text(waited)
        ),
        Event::StopNote { target, how } => format!("  note: stopping {target}: {how}"),
        Event::Finished => return None,
        Event::Left(_)
        | Event::SweepProblem(_)
        | Event::HeldBy(_)
        | Event::ScheduleWarning(_)
        | Event::SharePromise(_)
        | Event::NothingToRun { .. }
        | Event::Resuming { .. }
        | Event::Withheld(_)
        | Event::SharesGeneratorCpus(_)
        | Event::DatabaseUrlUnused
        | Event::StartingDatabase { .. }
        | Event::CheckedOut { .. }
        | Event::Building { .. }
        | Event::BuildOutput { .. }
        | Event::Verified { .. } => return setup_line(event),
    })
}

/// The line of an event of the run's setup, before its first cell (`None` for the others).
fn setup_line(event: &Event) -> Option<String> {
    Some(match event {
        Event::Left(left) => format!("Note: {left}."),
        Event::SweepProblem(problem) => format!("Warning: {problem}."),
        Event::HeldBy(holding) => {
            format!("Note: the servers started by command are held by {holding}.")
        }
        Event::ScheduleWarning(w) => {
            format!("Warning: the generator may not keep the schedule of {w}")
        }
        Event::SharePromise(w) => format!("Note: {w}."),
        Event::NothingToRun {
            cells,
            name,
            file,
            scale,
        } => format!(
            "All {cells} cells of {name} are kept already (file {file}, scale {scale}): nothing to run (--again runs them all again as a new sitting)."
        ),
        Event::Resuming {
            name,
            skipped,
            cells,
        } => format!("Resuming {name}: {skipped} of {cells} cells are kept already and skipped."),
        Event::Withheld(names) => format!(
            "Note: {} not given to the builds and targets: a password is in it (name it in a target's pass_env to give it).",
            names.join(", ")
        ),
        Event::SharesGeneratorCpus(shared) => format!("Warning: {shared}."),
        Event::DatabaseUrlUnused => "Note: DATABASE_URL is set but not used: this experiment file names no database (add url_env = \"DATABASE_URL\" under [database] to use it).".into(),
        Event::StartingDatabase { cpus } => format!(
            "Starting a throwaway PostgreSQL for the targets{}…",
            cpus.as_deref()
                .map(|c| format!(" on CPU {c}"))
                .unwrap_or_default()
        ),
        Event::CheckedOut {
            target,
            revision,
            cwd,
        } => format!("Checked out {target}'s source, {revision}, in {cwd} (your repository untouched)"),
        Event::Building { target, command } => format!("Building {target}: {command}"),
        Event::BuildOutput { target, line } => format!("  [{target} build] {line}"),
        Event::Verified {
            target,
            against,
            failed,
        } => format!(
            "Verified {target} against {against}: {}",
            match failed {
                None => "passed".to_string(),
                Some(why) => format!("FAILED ({why}): it will not be measured"),
            }
        ),
        _ => return None,
    })
}

/// How the wait for the generator's CPUs to be quiet ended, in words.
fn waited_text(waited: &super::quiet::Waited) -> String {
    match waited {
        super::quiet::Waited::Quiet(after) => {
            format!("they were quiet after {:.1} s", after.as_secs_f64())
        }
        super::quiet::Waited::StillBusy(busy) => format!(
            "they were still {:.0} % busy after {} s, so it goes again anyway",
            busy * 100.0,
            super::quiet::LONGEST.as_secs()
        ),
        super::quiet::Waited::Unknown => "this host does not say how busy they are".into(),
    }
}

/// Where events go: the printer, or a test's list.
#[derive(Debug, Clone)]
pub(super) struct Events {
    /// A terminal: a cell's line is rewritten in place.
    live: bool,
    /// A cell's line is on the terminal without its newline.
    open: Arc<AtomicBool>,
    collected: Option<Arc<Mutex<Vec<Event>>>>,
}

impl Events {
    /// The one printer: standard error.
    pub(super) fn printer(live: bool) -> Events {
        Events {
            live,
            open: Arc::new(AtomicBool::new(false)),
            collected: None,
        }
    }

    /// Events kept in a list, for a test to read.
    #[cfg(test)]
    pub(super) fn collect() -> (Events, Arc<Mutex<Vec<Event>>>) {
        let list = Arc::new(Mutex::new(Vec::new()));
        (
            Events {
                live: false,
                open: Arc::new(AtomicBool::new(false)),
                collected: Some(list.clone()),
            },
            list,
        )
    }

    pub(super) fn emit(&self, event: Event) {
        if let Some(list) = &self.collected {
            list.lock().unwrap_or_else(|e| e.into_inner()).push(event);
            return;
        }
        // One line each: a file's strings in it (names, commands, a target's output) cannot
        // erase, hide or forge what is printed around them.
        let text = line(&event).map(|t| redact::printable(&t));
        // Whatever is said next goes on a line of its own, after the live cell's line.
        if self.open.swap(false, Ordering::Relaxed) {
            eprintln!();
        }
        match (text, &event) {
            (Some(text), Event::Cell { .. }) if self.live => {
                eprint!("\r\x1b[2K{text}");
                self.open.store(true, Ordering::Relaxed);
            }
            (Some(text), _) => eprintln!("{text}"),
            (None, _) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lines_users_and_tests_read_are_said_as_before() {
        let said = |e: Event| line(&e).expect("a line");
        assert_eq!(
            said(Event::NothingToRun {
                cells: 4,
                name: "runner".into(),
                file: "f".into(),
                scale: 0.1
            }),
            "All 4 cells of runner are kept already (file f, scale 0.1): nothing to run (--again runs them all again as a new sitting)."
        );
        assert_eq!(
            said(Event::Resuming {
                name: "r".into(),
                skipped: 1,
                cells: 3
            }),
            "Resuming r: 1 of 3 cells are kept already and skipped."
        );
        assert_eq!(
            said(Event::Cell {
                number: 2,
                total: 4,
                key: "target=go".into(),
                repetition: 1,
                left: 2,
                eta: Duration::from_millis(61_500),
            }),
            "[2/4] target=go (repetition 1) · 2 left, about 1m 1s to go"
        );
        assert_eq!(
            said(Event::Share {
                share: "80%".into(),
                target: "go".into(),
                capacity: 1234.4,
                searches: 1,
                rate: 987.6
            }),
            "  80% of go's capacity (1234 req/s, from 1 search): 988 req/s"
        );
        assert_eq!(
            said(Event::Verified {
                target: "impostor".into(),
                against: "targets/CONTRACT.md".into(),
                failed: Some("GET /healthz".into())
            }),
            "Verified impostor against targets/CONTRACT.md: FAILED (GET /healthz): it will not be measured"
        );
        assert!(
            said(Event::DatabaseUrlUnused).starts_with("Note: DATABASE_URL is set but not used")
        );
        assert_eq!(line(&Event::Finished), None);
    }
}
