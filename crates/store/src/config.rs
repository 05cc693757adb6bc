//! How a run was configured: what it sent and how, as the summary and the pages describe it,
//! redacted before it is kept. Its own module, so that the summary (which reads it) and the
//! run's record (which holds a summary) do not import each other.

use serde::{Deserialize, Serialize};

/// How the attack was configured: the fields the report uses, and the rest as loadgen states it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunConfig {
    /// The request(s), e.g. `POST http://10.0.1.5:8080/users`.
    pub target: String,
    /// e.g. `open loop, constant 2000 req/s for 30s`.
    pub load: String,
    pub open_loop: bool,
    pub h2: bool,
    pub threads: usize,
    pub max_connections: usize,
    pub batch_ns: u64,
    /// An open loop's arrival process (`None`: a closed loop, or a run kept before it was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrival: Option<crate::vocabulary::Arrival>,
    pub timeout_ns: u64,
    /// An open loop's offered rate, req/s: what its schedule (this gun's share of it) asks
    /// for over its length, or its rate when it has no length (`None`: a closed loop, or a run
    /// kept before it was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offered_rps: Option<f64>,
    /// The command line that ran it.
    pub command_line: Vec<String>,
    /// Everything else about the attack (requests, schedule, flags), as loadgen describes it.
    pub details: serde_json::Value,
}

impl RunConfig {
    /// The configuration as it may be kept and shown: every secret out (see [`redact`]).
    pub fn redacted(&self) -> RunConfig {
        let mut details = self.details.clone();
        redact::json(&mut details);
        RunConfig {
            target: redact::text(&self.target),
            load: redact::text(&self.load),
            command_line: redact::command_line(&self.command_line),
            details,
            ..self.clone()
        }
    }
}
