//! What `loadgen selftest` measured of a machine, kept one row a self-test (the `selftests`
//! table) and read back by the pages of runs made on the same host.

use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::db::{json, parse_json, Store, StoreError};
use crate::summary::validity::Floor;

/// One self-test of a machine.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SelfTest {
    /// A UUID v7.
    pub id: String,
    /// The hostname, as each run's `gun_host` names it.
    pub host: String,
    pub kernel: String,
    pub cpus: u64,
    /// When it ran, ns since the Unix epoch.
    pub measured_at_ns: i64,
    /// The clock and a timed wake-up.
    pub floor: Floor,
    /// The coordinated-omission check against a server that freezes.
    pub omission: OmissionCheck,
    /// The most one generator thread paces cleanly.
    pub pacing: PacingCheck,
}

/// Corrected latency against its known truth: a server that freezes for `stall_ns` every
/// `every_ns`, attacked open-loop over a few connections (as wrk holds), whose requests due
/// during a freeze wait for its rest: the true p99 is the freeze's share past the 1 % plus the
/// server's normal latency.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct OmissionCheck {
    pub rate: f64,
    pub seconds: f64,
    pub connections: usize,
    pub stall_ns: u64,
    pub every_ns: u64,
    /// The true p99: S·(1 − 0.01·P/S) plus the normal latency (the service time's p50).
    pub truth_p99_ns: u64,
    /// The corrected p99 measured.
    pub corrected_p99_ns: u64,
    /// The service time's p99: what a tool that starts its clock at the send reports.
    pub service_p99_ns: u64,
    /// |measured − truth| ÷ truth.
    pub error: f64,
    /// The bound it is held to (0.02).
    pub limit: f64,
}

impl OmissionCheck {
    pub fn held(&self) -> bool {
        self.error <= self.limit
    }
}

/// One thread against the built-in target: its closed-loop rate unthrottled, and the highest
/// open-loop rate it sent on time (no BEHIND SCHEDULE, sends p99 under 1 ms late).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PacingCheck {
    pub unthrottled_rps: f64,
    pub unthrottled_connections: usize,
    /// The highest rate tried that was paced cleanly (0 when none was).
    pub clean_rps: f64,
    /// Each rate tried and whether it was paced cleanly, with its sends' p99 lateness.
    pub tried: Vec<(f64, bool, u64)>,
}

impl PacingCheck {
    /// Paced cleanly ÷ unthrottled.
    pub fn ratio(&self) -> f64 {
        if self.unthrottled_rps > 0.0 {
            self.clean_rps / self.unthrottled_rps
        } else {
            0.0
        }
    }
}

impl Store {
    /// Keeps a self-test.
    pub async fn put_selftest(&self, t: &SelfTest) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO selftests (id, host, measured_at_ns, body) VALUES ($1, $2, $3, $4)",
        )
        .bind(&t.id)
        .bind(&t.host)
        .bind(t.measured_at_ns)
        .bind(json(t))
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// The newest self-test of `host` kept, if any.
    pub async fn latest_selftest(&self, host: &str) -> Result<Option<SelfTest>, StoreError> {
        let row = sqlx::query(
            "SELECT id, body FROM selftests WHERE host = $1 \
             ORDER BY measured_at_ns DESC, id DESC LIMIT 1",
        )
        .bind(host)
        .fetch_optional(self.pool())
        .await?;
        let Some(row) = row else { return Ok(None) };
        let id: String = row.try_get("id")?;
        let body: String = row.try_get("body")?;
        Ok(Some(parse_json(
            &format!("of self-test {id}"),
            "body",
            &body,
        )?))
    }
}
