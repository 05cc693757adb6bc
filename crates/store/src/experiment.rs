//! Experiments as kept: what an experiment's page needs beyond its runs (the question, the file
//! and scale it last ran from, the axes, and each target's verification).

use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::db::{Store, StoreError};
use crate::vocabulary::Outcome;

/// One experiment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentRecord {
    pub name: String,
    pub question: String,
    /// The label `file` its current runs carry (a prefix of the file's SHA-256).
    pub file_label: String,
    /// The label `scale` its current runs carry.
    pub scale: f64,
    pub definition: Definition,
    pub verification: Vec<Verification>,
    pub updated_at_ns: i64,
}

impl ExperimentRecord {
    /// Whether a run or search with `labels` is of what this experiment's page shows: the
    /// file and scale it last ran from, and its latest sitting (where sittings are labelled).
    pub fn shows(&self, labels: &std::collections::BTreeMap<String, String>) -> bool {
        use crate::vocabulary::label;
        labels.get(label::FILE) == Some(&self.file_label)
            && labels.get(label::SCALE) == Some(&self.scale.to_string())
            && self
                .definition
                .sitting
                .as_ref()
                .is_none_or(|s| labels.get(label::SITTING) == Some(s))
    }
}

/// The experiment as run, for its page.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Definition {
    /// Where it comes from (a write-up).
    pub source: Option<String>,
    /// The targets, in the file's order.
    pub targets: Vec<String>,
    /// The axes other than `target`, in the file's order, with their values as labels.
    pub axes: Vec<(String, Vec<String>)>,
    pub repetitions: u32,
    /// How the targets were placed and held (CPUs, cgroup), in words.
    pub placement: String,
    /// The file itself, as TOML text.
    pub file: String,
    /// The settings (axis, value) whose cells are capacity searches: answered in capacity,
    /// apart from the fixed loads (a share of a capacity among them).
    #[serde(default)]
    pub searched: Vec<Vec<(String, String)>>,
    /// The targets are a `[compare]`'s builds: each searched setting's searches run once (in
    /// the search's rounds, not the repetitions), and a share of capacity is one rate for
    /// every build, of the lowest of their capacities.
    #[serde(default)]
    pub compared: bool,
    /// The sitting its page shows (the latest run of the file): the runs of earlier sittings
    /// are the history's (`loadgen history`). `None` for experiments kept before sittings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sitting: Option<String>,
    /// The targets the file's `[history]` names as references: each other target's history
    /// divided by the one that tracks it best (`loadgen history`, the history page).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub references: Vec<String>,
    /// The measures the file's `[history]` judges by default (`cpu`, `p99`, …; all when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history_measures: Vec<String>,
    /// The file's `[history] level`, where it sets one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_level: Option<f64>,
}

impl Definition {
    /// The definition as it may be kept and shown: the file's secrets (a target's `SECRET`, a
    /// `DATABASE_URL`'s password, an `Authorization` header) out (see the `redact` crate).
    pub fn redacted(&self) -> Definition {
        use redact::text;
        Definition {
            source: self.source.as_deref().map(text),
            targets: self.targets.iter().map(|t| text(t)).collect(),
            axes: self
                .axes
                .iter()
                .map(|(name, values)| {
                    (
                        name.clone(),
                        values.iter().map(|v| redact::env(name, v)).collect(),
                    )
                })
                .collect(),
            repetitions: self.repetitions,
            placement: text(&self.placement),
            file: redact::toml_file(&self.file),
            searched: self
                .searched
                .iter()
                .map(|setting| {
                    setting
                        .iter()
                        .map(|(name, v)| (name.clone(), redact::env(name, v)))
                        .collect()
                })
                .collect(),
            compared: self.compared,
            sitting: self.sitting.clone(),
            references: self.references.iter().map(|t| text(t)).collect(),
            history_measures: self.history_measures.clone(),
            history_level: self.history_level,
        }
    }
}

/// The checks as they may be kept: an outcome may quote what a target answered.
fn redacted_checks(checks: &[Verification]) -> Vec<Verification> {
    checks
        .iter()
        .map(|v| Verification {
            target: redact::text(&v.target),
            passed: v.passed,
            against: v.against,
            checks: v
                .checks
                .iter()
                .map(|(name, outcome)| {
                    let kept = match outcome {
                        Outcome::Passed => Outcome::Passed,
                        Outcome::Failed(why) => Outcome::Failed(redact::text(why)),
                        Outcome::Skipped(why) => Outcome::Skipped(redact::text(why)),
                    };
                    // A check is named for its request, which may carry a key.
                    (redact::text(name), kept)
                })
                .collect(),
        })
        .collect()
}

/// What a target was held to before it was measured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Against {
    /// `targets/CONTRACT.md` (the built-in targets).
    #[default]
    Contract,
    /// The checks its experiment file declares (a server Showdown did not write).
    Declared,
}

impl Against {
    /// In words, for the page.
    pub fn text(self) -> &'static str {
        match self {
            Against::Contract => "targets/CONTRACT.md",
            Against::Declared => "the file's checks",
        }
    }
}

/// How one target fared against what it was held to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verification {
    pub target: String,
    pub passed: bool,
    /// Kept runs from before this field read as `Contract`, which is what they were held to.
    #[serde(default)]
    pub against: Against,
    /// (check, how it came out).
    pub checks: Vec<(String, Outcome)>,
}

impl Store {
    /// Keeps (or replaces) an experiment.
    pub async fn put_experiment(&self, e: &ExperimentRecord) -> Result<(), StoreError> {
        let mut tx = self.pool().begin().await?;
        sqlx::query("DELETE FROM experiments WHERE name = $1")
            .bind(&e.name)
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "INSERT INTO experiments (name, question, file_label, scale, definition, verification, updated_at_ns) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(&e.name)
        .bind(&e.question)
        .bind(&e.file_label)
        .bind(e.scale)
        .bind(serde_json::to_string(&e.definition.redacted()).unwrap_or_default())
        .bind(serde_json::to_string(&redacted_checks(&e.verification)).unwrap_or_default())
        .bind(e.updated_at_ns)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Every experiment kept, by name.
    pub async fn experiments(&self) -> Result<Vec<ExperimentRecord>, StoreError> {
        let rows = sqlx::query(
            "SELECT name, question, file_label, scale, definition, verification, updated_at_ns \
             FROM experiments ORDER BY name",
        )
        .fetch_all(self.pool())
        .await?;
        let mut out = Vec::new();
        for row in rows {
            let name: String = row.try_get("name")?;
            let parse = |column: &str, text: String| StoreError::Corrupt {
                id: format!("of experiment {name}"),
                what: column.to_string(),
                message: text,
            };
            let definition: String = row.try_get("definition")?;
            let verification: String = row.try_get("verification")?;
            out.push(ExperimentRecord {
                question: row.try_get("question")?,
                file_label: row.try_get("file_label")?,
                scale: row.try_get("scale")?,
                definition: serde_json::from_str(&definition)
                    .map_err(|e| parse("definition", e.to_string()))?,
                verification: serde_json::from_str(&verification)
                    .map_err(|e| parse("verification", e.to_string()))?,
                updated_at_ns: row.try_get("updated_at_ns")?,
                name,
            });
        }
        Ok(out)
    }

    /// One experiment, if kept.
    pub async fn experiment(&self, name: &str) -> Result<Option<ExperimentRecord>, StoreError> {
        Ok(self
            .experiments()
            .await?
            .into_iter()
            .find(|e| e.name == name))
    }

    /// Marks a run failed, with why (an experiment's cell whose target failed).
    pub async fn fail_run(
        &self,
        id: &str,
        reason: &str,
        ended_at_ns: i64,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE runs SET status = $1, stop_reason = $2, ended_at_ns = COALESCE(ended_at_ns, $3) WHERE id = $4",
        )
        .bind(crate::run::RunStatus::Failed.as_str())
        .bind(redact::text(reason))
        .bind(ended_at_ns)
        .bind(id)
        .execute(self.pool())
        .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// An experiment's page is its latest sitting's: a run of the same file and scale in an
    /// earlier sitting is the history's, not the page's; kept before sittings, every run of the
    /// file and scale is.
    #[test]
    fn the_page_shows_its_latest_sitting_of_its_file_and_scale() {
        let mut record = ExperimentRecord {
            name: "e".into(),
            question: "?".into(),
            file_label: "f1".into(),
            scale: 1.0,
            definition: Definition {
                sitting: Some("s2".into()),
                ..Default::default()
            },
            verification: Vec::new(),
            updated_at_ns: 0,
        };
        let run = |file: &str, scale: &str, sitting: Option<&str>| {
            let mut l = labels(&[("file", file), ("scale", scale)]);
            if let Some(s) = sitting {
                l.insert("sitting".into(), s.into());
            }
            l
        };
        assert!(record.shows(&run("f1", "1", Some("s2"))));
        assert!(
            !record.shows(&run("f1", "1", Some("s1"))),
            "an earlier sitting"
        );
        assert!(
            !record.shows(&run("f1", "1", None)),
            "a run kept before sittings"
        );
        assert!(!record.shows(&run("f0", "1", Some("s2"))), "another file");
        assert!(
            !record.shows(&run("f1", "0.1", Some("s2"))),
            "another scale"
        );
        record.definition.sitting = None;
        assert!(record.shows(&run("f1", "1", Some("s1"))));
        assert!(record.shows(&run("f1", "1", None)));
    }
}
