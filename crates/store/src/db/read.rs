//! Reading runs back: listed, resolved, read whole or streaming their intervals, and page by
//! page for a copy.

use std::collections::BTreeMap;

use sqlx::any::AnyRow;
use sqlx::Row;

use crate::db::{parse_json, to_i64, to_u64, Store, StoreError};
use crate::hdrlog;
use crate::model::{ErrorKind, IntervalStats};
use crate::run::{
    ClockAlignment, ProbeMeta, RunConfig, RunFilter, RunListing, RunMeta, RunStatus, Shard,
    StoredGap, StoredInterval, StoredProbe, StoredRecord, StoredRun,
};
use crate::summary::Summary;

impl Store {
    /// The runs matching `filter`, oldest first.
    pub async fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunListing>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, name, experiment, run_group, shard_index, shard_count, status, \
             started_at_ns, config, summary FROM runs ORDER BY started_at_ns, id",
        )
        .fetch_all(&self.pool)
        .await?;
        let labels = self.all_labels().await?;
        let peaks = self.target_peaks().await?;
        let mut out = Vec::new();
        for row in rows {
            let id: String = row.try_get("id")?;
            let run_labels = labels.get(&id).cloned().unwrap_or_default();
            let experiment: Option<String> = row.try_get("experiment")?;
            let shard = shard_of(&row)?;
            if filter
                .experiment
                .as_ref()
                .is_some_and(|e| experiment.as_ref() != Some(e))
                || filter
                    .group
                    .as_ref()
                    .is_some_and(|g| shard.as_ref().map(|s| &s.group) != Some(g))
                || filter
                    .labels
                    .iter()
                    .any(|(k, v)| run_labels.get(k) != Some(v))
            {
                continue;
            }
            let config: RunConfig =
                parse_json(&id, "config", &row.try_get::<String, _>("config")?)?;
            let summary: Option<String> = row.try_get("summary")?;
            let summary: Option<Summary> = match summary {
                Some(text) => Some(parse_json(&id, "summary", &text)?),
                None => None,
            };
            let (peak_rss, peak_fds) = peaks.get(&id).copied().unwrap_or((None, None));
            out.push(RunListing {
                name: row.try_get("name")?,
                experiment,
                labels: run_labels,
                shard,
                status: RunStatus::parse(&row.try_get::<String, _>("status")?),
                started_at_ns: row.try_get("started_at_ns")?,
                target: config.target,
                load: config.load,
                summary,
                peak_rss_bytes: peak_rss.map(to_u64),
                peak_fds: peak_fds.map(to_u64),
                id,
            });
        }
        Ok(out)
    }

    /// Each run's target's peak RSS and open FDs: the probes watching the target only, never
    /// its database's nor a watched group's (every figure labelled with a target is its own).
    async fn target_peaks(
        &self,
    ) -> Result<BTreeMap<String, (Option<i64>, Option<i64>)>, StoreError> {
        let mut targets = std::collections::BTreeSet::new();
        for row in sqlx::query("SELECT run_id, probe_idx, host FROM probes")
            .fetch_all(&self.pool)
            .await?
        {
            let run_id: String = row.try_get(0)?;
            // A probe whose facts cannot be read is no target's: its run is still listed.
            let host: Option<probe::sample::HostInfo> =
                serde_json::from_str(&row.try_get::<String, _>(2)?).ok();
            if host.is_some_and(|h| h.role == probe::sample::Role::Target) {
                targets.insert((run_id, row.try_get::<i64, _>(1)?));
            }
        }
        let mut peaks: BTreeMap<String, (Option<i64>, Option<i64>)> = BTreeMap::new();
        for row in sqlx::query(
            "SELECT run_id, probe_idx, MAX(rss_bytes), MAX(fds) FROM probe_records \
             WHERE kind = 'sample' GROUP BY run_id, probe_idx",
        )
        .fetch_all(&self.pool)
        .await?
        {
            let key: (String, i64) = (row.try_get(0)?, row.try_get(1)?);
            if !targets.contains(&key) {
                continue;
            }
            let (rss, fds): (Option<i64>, Option<i64>) = (row.try_get(2)?, row.try_get(3)?);
            let peak = peaks.entry(key.0).or_default();
            *peak = (peak.0.max(rss), peak.1.max(fds));
        }
        Ok(peaks)
    }

    async fn all_labels(&self) -> Result<BTreeMap<String, BTreeMap<String, String>>, StoreError> {
        let mut out: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        for row in sqlx::query("SELECT run_id, key, value FROM run_labels")
            .fetch_all(&self.pool)
            .await?
        {
            out.entry(row.try_get("run_id")?)
                .or_default()
                .insert(row.try_get("key")?, row.try_get("value")?);
        }
        Ok(out)
    }

    /// Whether the store holds run `id` (exactly).
    pub async fn has_run(&self, id: &str) -> Result<bool, StoreError> {
        let row = sqlx::query("SELECT id FROM runs WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.is_some())
    }

    /// Finds a run by its id or by a unique prefix of it, or by its name if unique.
    pub async fn resolve(&self, id_or_name: &str) -> Result<String, StoreError> {
        let rows = sqlx::query("SELECT id FROM runs WHERE id = $1 OR name = $1 OR id LIKE $2")
            .bind(id_or_name)
            .bind(format!("{id_or_name}%"))
            .fetch_all(&self.pool)
            .await?;
        match rows.as_slice() {
            [one] => Ok(one.try_get("id")?),
            [] => Err(StoreError::NoRun(id_or_name.to_string())),
            many => Err(StoreError::Ambiguous {
                given: id_or_name.to_string(),
                matches: many.len(),
            }),
        }
    }

    /// Reads a whole run back.
    pub async fn load_run(&self, id: &str) -> Result<StoredRun, StoreError> {
        let mut intervals = Vec::new();
        let mut run = self
            .load_run_streaming(id, |interval| intervals.push(interval))
            .await?;
        run.intervals = intervals;
        Ok(run)
    }

    /// Reads a run back, handing its intervals one by one to `visit` instead of keeping them
    /// (`intervals` comes back empty). An interval's four HdrHistograms take up to a megabyte
    /// in memory (dense counts up to the timeout): an hour of intervals kept at once would
    /// take gigabytes, while a reader that folds them as they come needs only its own totals.
    pub async fn load_run_streaming(
        &self,
        id: &str,
        mut visit: impl FnMut(StoredInterval),
    ) -> Result<StoredRun, StoreError> {
        let row = sqlx::query("SELECT * FROM runs WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?
            .ok_or_else(|| StoreError::NoRun(id.to_string()))?;
        let labels = sqlx::query("SELECT key, value FROM run_labels WHERE run_id = $1")
            .bind(id)
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(|r| Ok((r.try_get("key")?, r.try_get("value")?)))
            .collect::<Result<BTreeMap<String, String>, sqlx::Error>>()?;
        let meta = RunMeta {
            id: id.to_string(),
            name: row.try_get("name")?,
            experiment: row.try_get("experiment")?,
            labels,
            shard: shard_of(&row)?,
            tool_version: row.try_get("tool_version")?,
            started_at_ns: row.try_get("started_at_ns")?,
            interval_ns: to_u64(row.try_get("interval_ns")?),
            config: parse_json(id, "config", &row.try_get::<String, _>("config")?)?,
            gun_host: parse_json(id, "gun_host", &row.try_get::<String, _>("gun_host")?)?,
        };
        let summary: Option<String> = row.try_get("summary")?;
        let summary = match summary {
            Some(text) => Some(parse_json(id, "summary", &text)?),
            None => None,
        };
        let warnings: Vec<String> =
            parse_json(id, "warnings", &row.try_get::<String, _>("warnings")?)?;
        // The rows hold the histograms compressed (a few hundred bytes each); only one is
        // decoded at a time.
        let rows = sqlx::query("SELECT * FROM intervals WHERE run_id = $1 ORDER BY idx")
            .bind(id)
            .fetch_all(&self.pool)
            .await?;
        for row in &rows {
            visit(interval_of(id, row)?);
        }
        drop(rows);
        let probes = self.load_probes(id).await?;
        Ok(StoredRun {
            meta,
            status: RunStatus::parse(&row.try_get::<String, _>("status")?),
            stop_reason: row.try_get("stop_reason")?,
            ended_at_ns: row.try_get("ended_at_ns")?,
            summary,
            warnings,
            intervals: Vec::new(),
            probes,
        })
    }

    async fn load_probes(&self, id: &str) -> Result<Vec<StoredProbe>, StoreError> {
        let mut out = Vec::new();
        for meta in self.probe_metas(id).await? {
            let records = self.records_after(id, meta.index, None, i64::MAX).await?;
            let gaps = self.gaps(id, meta.index).await?;
            out.push(StoredProbe {
                meta,
                records,
                gaps,
            });
        }
        Ok(out)
    }

    /// A run's probes, by index.
    pub(crate) async fn probe_metas(&self, id: &str) -> Result<Vec<ProbeMeta>, StoreError> {
        let mut out = Vec::new();
        for row in sqlx::query("SELECT * FROM probes WHERE run_id = $1 ORDER BY probe_idx")
            .bind(id)
            .fetch_all(&self.pool)
            .await?
        {
            let index: i64 = row.try_get("probe_idx")?;
            let offset: Option<i64> = row.try_get("clock_offset_ns")?;
            let uncertainty: Option<i64> = row.try_get("clock_uncertainty_ns")?;
            let wall: Option<i64> = row.try_get("wall_offset_ns")?;
            let clock = match (offset, uncertainty, wall) {
                (Some(offset_ns), Some(u), Some(wall_offset_ns)) => Some(ClockAlignment {
                    offset_ns,
                    uncertainty_ns: to_u64(u),
                    wall_offset_ns,
                }),
                _ => None,
            };
            out.push(ProbeMeta {
                index: u32::try_from(index).unwrap_or(u32::MAX),
                address: row.try_get("address")?,
                host: parse_json(id, "probe host", &row.try_get::<String, _>("host")?)?,
                clock,
            });
        }
        Ok(out)
    }

    /// Up to `limit` records of probe `probe` after sequence number `after`, in order.
    pub(crate) async fn records_after(
        &self,
        id: &str,
        probe: u32,
        after: Option<u64>,
        limit: i64,
    ) -> Result<Vec<StoredRecord>, StoreError> {
        sqlx::query(
            "SELECT seq, t_ns, body FROM probe_records WHERE run_id = $1 AND probe_idx = $2 \
             AND seq > $3 ORDER BY seq LIMIT $4",
        )
        .bind(id)
        .bind(i64::from(probe))
        .bind(after.map_or(-1, to_i64))
        .bind(limit)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(|r| {
            Ok(StoredRecord {
                seq: to_u64(r.try_get("seq")?),
                t_ns: r.try_get("t_ns")?,
                record: parse_json(id, "probe record", &r.try_get::<String, _>("body")?)?,
            })
        })
        .collect()
    }

    /// Probe `probe`'s gaps, in order.
    pub(crate) async fn gaps(&self, id: &str, probe: u32) -> Result<Vec<StoredGap>, StoreError> {
        sqlx::query(
            "SELECT from_seq, to_seq, t_ns, reason FROM probe_gaps WHERE run_id = $1 AND probe_idx = $2 ORDER BY from_seq",
        )
        .bind(id)
        .bind(i64::from(probe))
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(|r| {
            Ok(StoredGap {
                from_seq: to_u64(r.try_get("from_seq")?),
                to_seq: r.try_get::<Option<i64>, _>("to_seq")?.map(to_u64),
                t_ns: r.try_get("t_ns")?,
                reason: r.try_get("reason")?,
            })
        })
        .collect()
    }

    /// Up to `limit` intervals after index `after`, in order.
    pub(crate) async fn intervals_after(
        &self,
        id: &str,
        after: Option<u64>,
        limit: i64,
    ) -> Result<Vec<StoredInterval>, StoreError> {
        sqlx::query("SELECT * FROM intervals WHERE run_id = $1 AND idx > $2 ORDER BY idx LIMIT $3")
            .bind(id)
            .bind(after.map_or(-1, to_i64))
            .bind(limit)
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(|row| interval_of(id, row))
            .collect()
    }

    /// The ids of a run group's shards, by shard index.
    pub async fn group_members(&self, group: &str) -> Result<Vec<String>, StoreError> {
        let ids: Vec<String> =
            sqlx::query("SELECT id FROM runs WHERE run_group = $1 ORDER BY shard_index, id")
                .bind(group)
                .fetch_all(&self.pool)
                .await?
                .iter()
                .map(|r| r.try_get("id"))
                .collect::<Result<_, _>>()?;
        if ids.is_empty() {
            return Err(StoreError::NoGroup(group.to_string()));
        }
        Ok(ids)
    }
}

fn shard_of(row: &AnyRow) -> Result<Option<Shard>, sqlx::Error> {
    let group: Option<String> = row.try_get("run_group")?;
    Ok(match group {
        Some(group) => Some(Shard {
            group,
            index: row.try_get::<i64, _>("shard_index")? as u32,
            count: row.try_get::<i64, _>("shard_count")? as u32,
        }),
        None => None,
    })
}

fn interval_of(id: &str, row: &AnyRow) -> Result<StoredInterval, StoreError> {
    let corrupt = |what: &str, message: String| StoreError::Corrupt {
        id: id.to_string(),
        what: what.to_string(),
        message,
    };
    let histogram = |column: &str| -> Result<hdrhistogram::Histogram<u64>, StoreError> {
        let bytes: Vec<u8> = row.try_get(column)?;
        hdrlog::from_bytes(&bytes).map_err(|e| corrupt(column, e.to_string()))
    };
    let count = |column: &str| -> Result<u64, StoreError> { Ok(to_u64(row.try_get(column)?)) };
    // Small placeholders: the stored histograms replace them below.
    let mut stats = IntervalStats::new(count("idx")?, 0);
    stats.requests = count("requests")?;
    stats.sent = count("sent")?;
    stats.responses = count("responses")?;
    stats.ok = count("ok")?;
    stats.bytes_in = count("bytes_in")?;
    stats.bytes_out = count("bytes_out")?;
    stats.sent_late_beyond_interval = count("sent_late_beyond_interval")?;
    stats.waited_for_connection = count("waited_for_connection")?;
    stats.connections_opened = count("connections_opened")?;
    stats.resent = count("resent")?;
    stats.in_flight = count("in_flight")?;
    stats.connections_open = count("connections_open")?;
    let errors: BTreeMap<String, u64> =
        parse_json(id, "errors", &row.try_get::<String, _>("errors")?)?;
    for (name, n) in errors {
        let kind = ErrorKind::ALL
            .into_iter()
            .find(|k| k.name() == name)
            .ok_or_else(|| corrupt("errors", format!("unknown error kind {name}")))?;
        stats.errors.add(kind, n);
    }
    let codes: BTreeMap<u16, u64> = parse_json(
        id,
        "status codes",
        &row.try_get::<String, _>("status_codes")?,
    )?;
    for (code, n) in codes {
        stats.status.add(code, n);
    }
    stats.corrected = histogram("corrected")?;
    stats.service = histogram("service")?;
    stats.first_byte = histogram("first_byte")?;
    stats.lateness = histogram("lateness")?;
    Ok(StoredInterval {
        start_ns: row.try_get("start_ns")?,
        length_ns: row.try_get("length_ns")?,
        stats,
    })
}
