//! Gates as kept: each sitting's verdict of a comparison, as the command printed it, for the
//! experiment's page. The store keeps the row (`store::kept`); the gate is redacted here first.

use store::{Store, StoreError};

use super::Gate;

/// One sitting's gate, and where it belongs.
pub type KeptGate = store::kept::KeptGate<Gate>;

/// Keeps a sitting's gate, its names redacted as a run's are.
pub async fn put_gate(store: &Store, kept: &KeptGate) -> Result<(), StoreError> {
    let mut gate = kept.gate.clone();
    gate.baseline = redact::text(&gate.baseline);
    gate.candidate = redact::text(&gate.candidate);
    gate.control = gate.control.as_deref().map(redact::text);
    gate.load = redact::text(&gate.load);
    gate.pages = None;
    store
        .put_kept_gate(&KeptGate {
            id: kept.id.clone(),
            experiment: kept.experiment.clone(),
            setting: kept.setting.clone(),
            file_label: kept.file_label.clone(),
            scale: kept.scale,
            judged_at_ns: kept.judged_at_ns,
            gate,
        })
        .await
}

/// Every gate kept of `experiment`, oldest first.
pub async fn gates(store: &Store, experiment: &str) -> Result<Vec<KeptGate>, StoreError> {
    store.kept_gates(experiment).await
}

#[cfg(test)]
mod tests {
    use super::super::{Allowed, Outcome, Processes, Rounds};
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_comparisons_gates_are_kept_in_order_and_redacted() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&format!("sqlite://{}/s.db", dir.path().display()))
            .await
            .unwrap();
        // A gate of no rounds: every measure "not measured", the outcome inconclusive.
        let gate = Gate::judge(
            ("main", "pr?token=hunter2hunter2", None),
            "open loop, constant 500 req/s for 10s",
            &Rounds::default(),
            &Allowed::default(),
            Processes::Fresh,
            crate::ab::Reading::Once,
        );
        let kept = |id: &str, at: i64| KeptGate {
            id: id.into(),
            experiment: "gate".into(),
            setting: String::new(),
            file_label: "abc".into(),
            scale: 1.0,
            judged_at_ns: at,
            gate: gate.clone(),
        };
        put_gate(&store, &kept("later", 2_000)).await.unwrap();
        put_gate(&store, &kept("earlier", 1_000)).await.unwrap();
        let kept = gates(&store, "gate").await.unwrap();
        let ids: Vec<&str> = kept.iter().map(|g| g.id.as_str()).collect();
        assert_eq!(ids, ["earlier", "later"]);
        assert_eq!(kept[0].gate.outcome(), Outcome::Inconclusive);
        assert_eq!(kept[0].gate.measures, gate.measures);
        assert!(
            !kept[0].gate.candidate.contains("hunter2"),
            "{:?}",
            kept[0].gate.candidate
        );
        assert!(gates(&store, "another").await.unwrap().is_empty());
    }
}
