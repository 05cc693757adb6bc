//! Gates as kept: each sitting's verdict of a comparison, as the command printed it, for the
//! experiment's page.

use serde::{Deserialize, Serialize};
use sqlx::Row;

use super::Gate;
use crate::db::{Store, StoreError};

/// One sitting's gate, and where it belongs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeptGate {
    pub id: String,
    pub experiment: String,
    /// The setting compared at, in words ("" without axes).
    pub setting: String,
    /// The file and scale its runs are labelled with.
    pub file_label: String,
    pub scale: f64,
    pub judged_at_ns: i64,
    pub gate: Gate,
}

impl Store {
    /// Keeps a sitting's gate, its names redacted as a run's are.
    pub async fn put_gate(&self, kept: &KeptGate) -> Result<(), StoreError> {
        let mut gate = kept.gate.clone();
        gate.baseline = redact::text(&gate.baseline);
        gate.candidate = redact::text(&gate.candidate);
        gate.control = gate.control.as_deref().map(redact::text);
        gate.load = redact::text(&gate.load);
        gate.pages = None;
        let body = crate::db::json(&gate);
        sqlx::query(
            "INSERT INTO gates (id, experiment, setting, file_label, scale, judged_at_ns, body) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(&kept.id)
        .bind(&kept.experiment)
        .bind(redact::text(&kept.setting))
        .bind(&kept.file_label)
        .bind(kept.scale)
        .bind(kept.judged_at_ns)
        .bind(body)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// Every gate kept of `experiment`, oldest first.
    pub async fn gates(&self, experiment: &str) -> Result<Vec<KeptGate>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, experiment, setting, file_label, scale, judged_at_ns, body FROM gates \
             WHERE experiment = $1 ORDER BY judged_at_ns, id",
        )
        .bind(experiment)
        .fetch_all(self.pool())
        .await?;
        let mut out = Vec::new();
        for row in rows {
            let id: String = row.try_get("id")?;
            let body: String = row.try_get("body")?;
            let gate = crate::db::parse_json(&format!("of gate {id}"), "body", &body)?;
            out.push(KeptGate {
                experiment: row.try_get("experiment")?,
                setting: row.try_get("setting")?,
                file_label: row.try_get("file_label")?,
                scale: row.try_get("scale")?,
                judged_at_ns: row.try_get("judged_at_ns")?,
                gate,
                id,
            });
        }
        Ok(out)
    }
}
