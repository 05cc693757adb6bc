//! Searches and comparisons' gates as kept: each a row of the columns the store looks them up
//! and orders them by, and a JSON body. What the body is (a capacity search, a gate) and how it
//! is judged is the analysis crate's (`analysis::capacity::Search`, `analysis::ab::Gate`); the
//! store keeps it as given, so its caller redacts it first (`analysis::capacity::put_search`,
//! `analysis::ab::put_gate` do).

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::db::{json, parse_json, Store, StoreError};

/// A search's columns beside its body (the `searches` table).
#[derive(Debug, Clone, Copy)]
pub struct SearchRow<'a> {
    pub id: &'a str,
    pub name: &'a str,
    /// The experiment it is a cell of, if any.
    pub experiment: Option<&'a str>,
    /// Where it ended, in words (`running`, `found`…).
    pub status: &'a str,
    pub started_at_ns: i64,
    pub updated_at_ns: i64,
}

/// One sitting's gate, and where it belongs (the `gates` table): `G` is the gate itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeptGate<G> {
    pub id: String,
    pub experiment: String,
    /// The setting compared at, in words ("" without axes).
    pub setting: String,
    /// The file and scale its runs are labelled with.
    pub file_label: String,
    pub scale: f64,
    pub judged_at_ns: i64,
    pub gate: G,
}

impl Store {
    /// Keeps (or replaces) a search: its columns, and its body as given.
    pub async fn put_kept_search<B: Serialize>(
        &self,
        row: &SearchRow<'_>,
        body: &B,
    ) -> Result<(), StoreError> {
        let body = json(body);
        let mut tx = self.pool().begin().await?;
        sqlx::query("DELETE FROM searches WHERE id = $1")
            .bind(row.id)
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "INSERT INTO searches (id, name, experiment, status, started_at_ns, updated_at_ns, body) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(row.id)
        .bind(row.name)
        .bind(row.experiment)
        .bind(row.status)
        .bind(row.started_at_ns)
        .bind(row.updated_at_ns)
        .bind(body)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Every search's body kept, oldest first.
    pub async fn kept_searches<B: DeserializeOwned>(&self) -> Result<Vec<B>, StoreError> {
        let rows = sqlx::query("SELECT id, body FROM searches ORDER BY started_at_ns, id")
            .fetch_all(self.pool())
            .await?;
        let mut out = Vec::new();
        for row in rows {
            let id: String = row.try_get("id")?;
            let body: String = row.try_get("body")?;
            out.push(parse_json(&format!("of search {id}"), "body", &body)?);
        }
        Ok(out)
    }

    /// Keeps a sitting's gate, its setting redacted as a run's names are (the gate as given).
    pub async fn put_kept_gate<G: Serialize>(&self, kept: &KeptGate<G>) -> Result<(), StoreError> {
        let body = json(&kept.gate);
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
    pub async fn kept_gates<G: DeserializeOwned>(
        &self,
        experiment: &str,
    ) -> Result<Vec<KeptGate<G>>, StoreError> {
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
            let gate = parse_json(&format!("of gate {id}"), "body", &body)?;
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
