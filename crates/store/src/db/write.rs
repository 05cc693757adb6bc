//! Writing runs: created, their rows inserted (each skipped when the store has it already, so
//! a batch retried after a commit whose answer was lost adds what is new), realigned on the
//! probes' final clock offsets, ended, deleted.

use std::collections::BTreeMap;

use crate::db::{json, to_i64, Store, StoreError};
use crate::hdrlog;
use crate::run::{Finish, ProbeMeta, RunMeta, RunStatus, StoredGap, StoredInterval, StoredRecord};
use crate::summary::Summary;

impl Store {
    /// Records that a run has started.
    pub async fn create_run(&self, meta: &RunMeta) -> Result<(), StoreError> {
        self.insert_run(meta)
            .await
            .map_err(|e| match self.disk_full(&e) {
                Some(full) => StoreError::Unusable(format!("{full}; nothing was sent")),
                None => StoreError::Query(e),
            })
    }

    async fn insert_run(&self, meta: &RunMeta) -> Result<(), sqlx::Error> {
        let mut tx = self.pool.begin().await?;
        let shard = meta.shard.as_ref();
        sqlx::query(
            "INSERT INTO runs (id, name, experiment, run_group, shard_index, shard_count, status, \
             tool_version, started_at_ns, interval_ns, config, gun_host) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
        )
        .bind(&meta.id)
        .bind(redact::text(&meta.name))
        .bind(meta.experiment.clone())
        .bind(shard.map(|s| s.group.clone()))
        .bind(i64::from(shard.map_or(0, |s| s.index)))
        .bind(i64::from(shard.map_or(1, |s| s.count)))
        .bind(RunStatus::Running.as_str())
        .bind(&meta.tool_version)
        .bind(meta.started_at_ns)
        .bind(to_i64(meta.interval_ns))
        .bind(json(&meta.config.redacted()))
        .bind(json(&meta.gun_host))
        .execute(&mut *tx)
        .await?;
        for (key, value) in &meta.labels {
            sqlx::query("INSERT INTO run_labels (run_id, key, value) VALUES ($1, $2, $3)")
                .bind(&meta.id)
                .bind(key)
                .bind(redact::env(key, value))
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Deletes a run and all it recorded; false if there was none.
    pub async fn delete_run(&self, id: &str) -> Result<bool, StoreError> {
        let mut tx = self.pool.begin().await?;
        // Children first: SQLite enforces the foreign keys only where asked to.
        for statement in [
            "DELETE FROM probe_gaps WHERE run_id = $1",
            "DELETE FROM probe_records WHERE run_id = $1",
            "DELETE FROM probes WHERE run_id = $1",
            "DELETE FROM intervals WHERE run_id = $1",
            "DELETE FROM run_labels WHERE run_id = $1",
        ] {
            sqlx::query(statement).bind(id).execute(&mut *tx).await?;
        }
        let deleted = sqlx::query("DELETE FROM runs WHERE id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        tx.commit().await?;
        Ok(deleted > 0)
    }
}

/// Inserts one interval, unless the store has it already: a batch retried after its commit
/// succeeded but its answer was lost adds only what is missing.
pub(crate) async fn insert_interval(
    conn: &mut sqlx::AnyConnection,
    run_id: &str,
    interval: &StoredInterval,
) -> Result<(), sqlx::Error> {
    let s = &interval.stats;
    let errors: BTreeMap<&str, u64> = s.errors.nonzero().map(|(k, n)| (k.name(), n)).collect();
    let percentile = |q: f64| {
        if s.corrected.is_empty() {
            0
        } else {
            to_i64(s.corrected.value_at_quantile(q))
        }
    };
    sqlx::query(
        "INSERT INTO intervals (run_id, idx, start_ns, length_ns, requests, sent, responses, ok, \
         bytes_in, bytes_out, sent_late_beyond_interval, waited_for_connection, connections_opened, \
         in_flight, connections_open, errors, status_codes, corrected, service, first_byte, lateness, \
         corrected_p50_ns, corrected_p99_ns, corrected_max_ns, resent) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, \
         $19, $20, $21, $22, $23, $24, $25) ON CONFLICT DO NOTHING",
    )
    .bind(run_id)
    .bind(to_i64(s.index))
    .bind(interval.start_ns)
    .bind(interval.length_ns)
    .bind(to_i64(s.requests))
    .bind(to_i64(s.sent))
    .bind(to_i64(s.responses))
    .bind(to_i64(s.ok))
    .bind(to_i64(s.bytes_in))
    .bind(to_i64(s.bytes_out))
    .bind(to_i64(s.sent_late_beyond_interval))
    .bind(to_i64(s.waited_for_connection))
    .bind(to_i64(s.connections_opened))
    .bind(to_i64(s.in_flight))
    .bind(to_i64(s.connections_open))
    .bind(json(&errors))
    .bind(json(&s.status.to_map()))
    .bind(hdrlog::to_bytes(&s.corrected))
    .bind(hdrlog::to_bytes(&s.service))
    .bind(hdrlog::to_bytes(&s.first_byte))
    .bind(hdrlog::to_bytes(&s.lateness))
    .bind(percentile(0.5))
    .bind(percentile(0.99))
    .bind(if s.corrected.is_empty() { 0 } else { to_i64(s.corrected.max()) })
    .bind(to_i64(s.resent))
    .execute(conn)
    .await?;
    Ok(())
}

/// Inserts or updates a probe's description.
pub(crate) async fn upsert_probe(
    conn: &mut sqlx::AnyConnection,
    run_id: &str,
    probe: &ProbeMeta,
) -> Result<(), sqlx::Error> {
    sqlx::query("DELETE FROM probes WHERE run_id = $1 AND probe_idx = $2")
        .bind(run_id)
        .bind(i64::from(probe.index))
        .execute(&mut *conn)
        .await?;
    sqlx::query(
        "INSERT INTO probes (run_id, probe_idx, address, host, clock_offset_ns, clock_uncertainty_ns, wall_offset_ns) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(run_id)
    .bind(i64::from(probe.index))
    .bind(&probe.address)
    .bind(json(&probe.host))
    .bind(probe.clock.map(|c| c.offset_ns))
    .bind(probe.clock.map(|c| to_i64(c.uncertainty_ns)))
    .bind(probe.clock.map(|c| c.wall_offset_ns))
    .execute(conn)
    .await?;
    Ok(())
}

/// Inserts one probe record, unless the store has it already.
pub(crate) async fn insert_record(
    conn: &mut sqlx::AnyConnection,
    run_id: &str,
    probe: u32,
    record: &StoredRecord,
) -> Result<(), sqlx::Error> {
    use probe::protocol::Record;
    let (kind, mono, wall, total) = match &record.record {
        Record::Sample(s) => ("sample", s.mono_ns, s.wall_ns, s.total.as_ref()),
        Record::Event(e) => ("event", e.mono_ns, e.wall_ns, None),
        Record::Profile(p) => ("profile", p.mono_ns, p.wall_ns, None),
    };
    sqlx::query(
        "INSERT INTO probe_records (run_id, probe_idx, seq, kind, t_ns, probe_mono_ns, wall_ns, \
         cpu_pct, rss_bytes, threads, fds, body) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) \
         ON CONFLICT DO NOTHING",
    )
    .bind(run_id)
    .bind(i64::from(probe))
    .bind(to_i64(record.seq))
    .bind(kind)
    .bind(record.t_ns)
    .bind(to_i64(mono))
    .bind(to_i64(wall))
    .bind(total.and_then(|t| t.cpu_pct))
    .bind(total.map(|t| to_i64(t.rss_bytes)))
    .bind(total.map(|t| to_i64(t.threads)))
    .bind(total.and_then(|t| t.fds.map(to_i64)))
    .bind(json(&record.record))
    .execute(conn)
    .await?;
    Ok(())
}

/// Inserts a gap, unless the store has it already.
pub(crate) async fn insert_gap(
    conn: &mut sqlx::AnyConnection,
    run_id: &str,
    probe: u32,
    gap: &StoredGap,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO probe_gaps (run_id, probe_idx, from_seq, to_seq, t_ns, reason) \
         SELECT $1, $2, $3, $4, $5, $6 WHERE NOT EXISTS (SELECT 1 FROM probe_gaps \
         WHERE run_id = $1 AND probe_idx = $2 AND from_seq = $3 AND t_ns = $5)",
    )
    .bind(run_id)
    .bind(i64::from(probe))
    .bind(to_i64(gap.from_seq))
    .bind(gap.to_seq.map(to_i64))
    .bind(gap.t_ns)
    .bind(redact::text(&gap.reason))
    .execute(conn)
    .await?;
    Ok(())
}

/// Marks the end of a run.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn finish_run(
    conn: &mut sqlx::AnyConnection,
    run_id: &str,
    status: RunStatus,
    stop_reason: Option<&str>,
    ended_at_ns: i64,
    summary: Option<&Summary>,
    warnings: &[String],
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE runs SET status = $2, stop_reason = $3, ended_at_ns = $4, summary = $5, warnings = $6 WHERE id = $1",
    )
    .bind(run_id)
    .bind(status.as_str())
    .bind(stop_reason.map(redact::text))
    .bind(ended_at_ns)
    .bind(summary.map(|s| {
        json(&Summary {
            target: redact::text(&s.target),
            stopped: s.stopped.as_deref().map(redact::text),
            warnings: s.warnings.iter().map(|w| redact::text(w)).collect(),
            ..s.clone()
        })
    }))
    .bind(json(&warnings.iter().map(|w| redact::text(w)).collect::<Vec<_>>()))
    .execute(conn)
    .await?;
    Ok(())
}

/// Moves a probe's records onto the run's timeline with the final clock offset:
/// `t = probe_mono − offset − time zero`.
pub(crate) async fn realign_probe(
    conn: &mut sqlx::AnyConnection,
    run_id: &str,
    probe: u32,
    offset_ns: i64,
    zero_mono_ns: i64,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE probe_records SET t_ns = probe_mono_ns - $3 - $4 WHERE run_id = $1 AND probe_idx = $2",
    )
    .bind(run_id)
    .bind(i64::from(probe))
    .bind(offset_ns)
    .bind(zero_mono_ns)
    .execute(conn)
    .await?;
    Ok(())
}

/// Writes a run's end in one transaction: its probes' records realigned on their final clock
/// offsets, then its status, reason, summary and warnings.
pub(crate) async fn write_finish(
    store: &Store,
    run_id: &str,
    finish: &Finish,
) -> Result<(), sqlx::Error> {
    let mut tx = store.pool().begin().await?;
    for &(probe, offset) in &finish.clock_offsets {
        realign_probe(&mut tx, run_id, probe, offset, finish.zero_mono_ns).await?;
    }
    finish_run(
        &mut tx,
        run_id,
        finish.status,
        finish.stop_reason.as_deref(),
        finish.ended_at_ns,
        finish.summary.as_ref(),
        &finish.warnings,
    )
    .await?;
    tx.commit().await
}
