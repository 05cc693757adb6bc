//! What one generator's run came to ([`Fired`]): its outcome, read from its standard output,
//! and its last words, from its standard error. Why a run could not be fired at all is a
//! [`crate::FleetError`]; why a gun's shard came to nothing, a [`crate::ShotError`].

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
