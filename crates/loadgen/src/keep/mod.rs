//! Keeping a run: the store, the probes, and the attack between them.
//!
//! [`execute`] creates the HDR log, opens the store and subscribes to the probes first (so that
//! a wrong path, URL or probe is reported before any load is sent), fixes time zero, records that the
//! run has started, then attacks with the store among the interval sinks, waits out the
//! post-roll while the probes keep reporting, and records the end: complete, or incomplete with
//! the reason (Ctrl-C, `--max-lateness`, a failure), keeping all that was recorded either way.
//!
//! - [`probes`]: following probes through a run and storing what they send.
//! - [`hdrlog`]: the per-interval histograms as an HdrHistogram interval log.
//! - `progress`: the live line on a terminal.
//! - `tails`: the run's p50, p99 and p99.9 with their intervals, taken in as intervals close.

pub mod hdrlog;
pub mod probes;
mod progress;
mod tails;

use std::collections::BTreeMap;
use std::io;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use store::run::{HostFacts, RunConfig, Shard, StoredInterval};
use store::summary::Summary;
use store::writer::WriterHandle;
use store::{Finish, RunMeta, RunStatus, RunWriter, Store};

use crate::engine::attack::{self, AttackPlan, IntervalSink, Load, Span};
use crate::engine::shutdown::{Shutdown, Stop};
use crate::error::Error;
use crate::keep::hdrlog::HdrLogSink;
use crate::keep::probes::{Connected, LinkReport, ProbeTarget};
use crate::keep::progress::Progress;
use crate::keep::tails::TailSink;

/// How a run is kept and what watches it (from the command line).
#[derive(Debug, Clone, Default)]
pub struct Keeping {
    /// The store to keep the run in, or none.
    pub store_url: Option<String>,
    pub name: Option<String>,
    pub experiment: Option<String>,
    /// The id to keep the run under, when the caller chose it.
    pub run_id: Option<String>,
    pub labels: BTreeMap<String, String>,
    pub probes: Vec<ProbeTarget>,
    pub pre_roll: Duration,
    pub post_roll: Duration,
    /// Every probe must profile (`--profile`).
    pub profile: bool,
    pub shard: Option<Shard>,
    /// Wall-clock time zero (for shards starting together).
    pub start_at: Option<SystemTime>,
    /// The command line, with secrets already taken out.
    pub command_line: Vec<String>,
    /// Where to write the per-interval histograms as an HdrHistogram interval log.
    pub hdr_log: Option<std::path::PathBuf>,
}

/// What a run came to.
#[derive(Debug)]
pub struct Executed {
    pub summary: Summary,
    /// The run's id in the store, if it was kept.
    pub run_id: Option<String>,
    pub probes: Vec<LinkReport>,
}

/// Sends each interval to the store's writer.
struct StoreSink(WriterHandle);

impl IntervalSink for StoreSink {
    fn name(&self) -> String {
        "the store".into()
    }

    fn interval(&mut self, span: Span, stats: &store::model::IntervalStats) -> io::Result<()> {
        self.0.interval(StoredInterval {
            start_ns: span.start.as_nanos() as i64,
            length_ns: span.length.as_nanos() as i64,
            stats: stats.clone(),
        });
        Ok(())
    }
}

/// Runs `plan`, keeping it as `keeping` says.
pub async fn execute(
    plan: &AttackPlan,
    keeping: &Keeping,
    shutdown: &Shutdown,
) -> Result<Executed, Error> {
    execute_with(plan, keeping, shutdown, &mut []).await
}

/// [`execute`], with more sinks for the intervals (a capacity step judges its own).
pub async fn execute_with(
    plan: &AttackPlan,
    keeping: &Keeping,
    shutdown: &Shutdown,
    extra: &mut [&mut dyn IntervalSink],
) -> Result<Executed, Error> {
    let mut hdr_log = hdr_log(plan, keeping)?;
    let store = open_store(keeping).await?;
    let connected = connect_probes(keeping).await?;
    let anchor = attack::time_zero(keeping.start_at)?;
    let (writer, run_id) = start_writer(plan, keeping, store.as_ref(), anchor.wall).await?;
    let links: Vec<_> = match &writer {
        Some(w) => connected
            .into_iter()
            .map(|c| c.follow(anchor.mono, w.handle()))
            .collect(),
        None => Vec::new(),
    };
    let mut progress = Progress::for_terminal(expected_duration(plan));
    let mut store_sink = writer.as_ref().map(|w| StoreSink(w.handle()));
    let mut tails = TailSink::new(plan.interval);
    let mut sinks = gather_sinks(
        &mut tails,
        &mut hdr_log,
        &mut store_sink,
        &mut progress,
        extra,
    );
    let outcome = attack::attack(plan, anchor, shutdown, &mut sinks).await;
    if let Some(p) = &progress {
        p.clear();
    }
    let probes = post_roll(links, keeping, shutdown).await;
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(e) => {
            // The attack could not start: the run is kept as a failed one.
            keep_failed(writer, e.to_string(), &probes, anchor.mono).await;
            return Err(e.into());
        }
    };
    let summary = conclude(plan, outcome, &tails, writer, &probes, anchor.mono).await;
    Ok(Executed {
        summary,
        run_id,
        probes,
    })
}

/// The store the run is kept in, if there is one.
async fn open_store(keeping: &Keeping) -> Result<Option<Store>, Error> {
    Ok(match &keeping.store_url {
        Some(url) => Some(Store::open(url).await?),
        None => None,
    })
}

/// The run recorded as started in the store, if there is one: its writer and its id.
async fn start_writer(
    plan: &AttackPlan,
    keeping: &Keeping,
    store: Option<&Store>,
    zero: SystemTime,
) -> Result<(Option<RunWriter>, Option<String>), Error> {
    let Some(store) = store else {
        return Ok((None, None));
    };
    let meta = run_meta(plan, keeping, zero);
    store.create_run(&meta).await?;
    let fallback = store::writer::Fallback {
        meta: meta.clone(),
        dir: std::path::PathBuf::from(UNSAVED_DIR),
    };
    Ok((
        Some(RunWriter::start_with(store, &meta.id, Some(fallback))),
        Some(meta.id),
    ))
}

/// How long the load is meant to last, if it says.
fn expected_duration(plan: &AttackPlan) -> Option<Duration> {
    match &plan.load {
        Load::Open { schedule, .. } => schedule.duration(),
        Load::Closed { duration, .. } => *duration,
    }
}

/// Every sink the intervals go to: the tails, the HDR log, the store, the progress, the caller's.
fn gather_sinks<'a>(
    tails: &'a mut TailSink,
    hdr_log: &'a mut Option<HdrLogSink>,
    store_sink: &'a mut Option<StoreSink>,
    progress: &'a mut Option<Progress>,
    extra: &'a mut [&mut dyn IntervalSink],
) -> Vec<&'a mut dyn IntervalSink> {
    let mut sinks: Vec<&'a mut dyn IntervalSink> = vec![tails];
    if let Some(h) = hdr_log.as_mut() {
        sinks.push(h);
    }
    if let Some(s) = store_sink.as_mut() {
        sinks.push(s);
    }
    if let Some(p) = progress.as_mut() {
        sinks.push(p);
    }
    for sink in extra.iter_mut() {
        sinks.push(&mut **sink);
    }
    sinks
}

/// Keeps a run whose attack could not start as a failed one, stopped for `stop_reason`.
async fn keep_failed(
    writer: Option<RunWriter>,
    stop_reason: String,
    probes: &[LinkReport],
    zero_mono: u64,
) {
    if let Some(writer) = writer {
        let failed = finish(
            RunStatus::Incomplete,
            Some(stop_reason),
            None,
            probes,
            zero_mono,
        );
        writer.finish(failed).await;
    }
}

/// The run's summary (with the probes' problems, its tails, its validity), its end stored.
async fn conclude(
    plan: &AttackPlan,
    mut outcome: attack::RunOutcome,
    tails: &TailSink,
    writer: Option<RunWriter>,
    probes: &[LinkReport],
    zero_mono: u64,
) -> Summary {
    outcome
        .warnings
        .extend(probes.iter().filter_map(|p| p.problem.clone()));
    let mut summary = attack::summarize(plan, &outcome);
    analysis::warnings::fill(&mut summary, &outcome.warnings);
    summary.tails = tails.tails();
    // What this machine can time, measured once a process after its first attack (about
    // 60 ms): measured before, it delayed the schedule's start (a gate's 2 s runs at 500 req/s
    // started 34 ms late and fell behind).
    let floor = crate::engine::floor::measured();
    summary.validity = Some(analysis::validity::judge(&summary, floor));
    if let Some(writer) = writer {
        let status = if outcome.stopped.is_some() {
            RunStatus::Incomplete
        } else {
            RunStatus::Complete
        };
        let done = finish(
            status,
            outcome.stopped.clone(),
            Some(summary.clone()),
            probes,
            zero_mono,
        );
        let report = writer.finish(done).await;
        summary.warnings.extend(store_warning(report));
    }
    summary
}

/// The HdrHistogram interval log the run writes (`--hdr-log`), headed by what it measured.
fn hdr_log(plan: &AttackPlan, keeping: &Keeping) -> Result<Option<HdrLogSink>, Error> {
    let Some(path) = &keeping.hdr_log else {
        return Ok(None);
    };
    let comment = format!(
        "showdown-loadgen {}: {} · {}",
        env!("CARGO_PKG_VERSION"),
        plan.describe_target(),
        plan.describe_load()
    );
    HdrLogSink::create(path, &comment)
        .map(Some)
        .map_err(|source| Error::HdrLog {
            path: path.clone(),
            source,
        })
}

/// Each probe connected (its pre-roll asked for), and able to profile where the run must.
async fn connect_probes(keeping: &Keeping) -> Result<Vec<Connected>, Error> {
    let mut connected = Vec::new();
    for (index, target) in keeping.probes.iter().enumerate() {
        let link = Connected::connect(index as u32, target.clone(), keeping.pre_roll)
            .await
            .map_err(|e| Error::Probe {
                address: target.address.clone(),
                message: e.to_string(),
            })?;
        if keeping.profile && link.meta.host.profile_hz.is_none() {
            return Err(Error::Probe {
                address: target.address.clone(),
                message: "it does not profile: restart it with `probe serve --profile …` (CAP_PERFMON or root), or drop --profile".into(),
            });
        }
        connected.push(link);
    }
    Ok(connected)
}

/// The post-roll: the probes keep reporting how the server settles (not after an abort);
/// then each link stopped, with what it kept.
async fn post_roll(
    links: Vec<probes::ProbeLink>,
    keeping: &Keeping,
    shutdown: &Shutdown,
) -> Vec<LinkReport> {
    if !links.is_empty() && shutdown.state() != Stop::Abort {
        let mut stop = shutdown.subscribe();
        tokio::select! {
            _ = tokio::time::sleep(keeping.post_roll) => {}
            _ = stop.wait_for(|s| *s == Stop::Abort) => {}
        }
    }
    let mut probes = Vec::new();
    for link in links {
        probes.push(link.stop().await);
    }
    probes
}

/// What the summary says of a store that was down or failed while the run was written.
fn store_warning(report: store::writer::WriteReport) -> Option<String> {
    let error = report.first_error.as_deref().unwrap_or("unreachable");
    if let Some(path) = &report.saved_to {
        Some(format!(
            "THE STORE WAS DOWN at the end of the run ({error}): the run is saved in {}; bring it in with `loadgen runs import {} --db URL` once the store is back.",
            path.display(),
            path.display()
        ))
    } else if report.rows_failed == 0 && report.retries > 0 {
        Some(format!(
            "The store was out of reach during the run ({error}); every row was written once it came back."
        ))
    } else if report.rows_failed > 0 {
        report.first_error.as_ref().map(|problem| {
            format!(
                "THE STORE FAILED: {problem} ({} of {} rows not kept).",
                report.rows_failed,
                report.rows_failed + report.rows_written
            )
        })
    } else {
        None
    }
}

/// Where a run goes when its store is down at the end (relative to the working directory).
pub const UNSAVED_DIR: &str = "results/unsaved";

fn finish(
    status: RunStatus,
    stop_reason: Option<String>,
    summary: Option<Summary>,
    probes: &[LinkReport],
    zero_mono: u64,
) -> Finish {
    Finish {
        status,
        stop_reason,
        ended_at_ns: unix_ns(SystemTime::now()),
        warnings: summary
            .as_ref()
            .map(|s| s.warnings.clone())
            .unwrap_or_default(),
        summary,
        clock_offsets: probes
            .iter()
            .filter_map(|p| Some((p.meta.index, p.meta.clock?.offset_ns)))
            .collect(),
        zero_mono_ns: zero_mono as i64,
    }
}

fn unix_ns(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

/// The run's identity and setup, as stored.
fn run_meta(plan: &AttackPlan, keeping: &Keeping, zero: SystemTime) -> RunMeta {
    let name = keeping
        .name
        .clone()
        .unwrap_or_else(|| format!("{} · {}", plan.describe_target(), plan.describe_load()));
    RunMeta {
        id: keeping.run_id.clone().unwrap_or_else(RunMeta::new_id),
        name,
        experiment: keeping.experiment.clone(),
        labels: keeping.labels.clone(),
        shard: keeping.shard.clone(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        started_at_ns: unix_ns(zero),
        interval_ns: crate::engine::clock::nanos(plan.interval),
        config: run_config(plan, keeping),
        gun_host: gun_host(),
    }
}

fn run_config(plan: &AttackPlan, keeping: &Keeping) -> RunConfig {
    let requests: Vec<serde_json::Value> = plan
        .mix
        .entries()
        .map(|(spec, weight)| {
            let headers: BTreeMap<String, String> = spec
                .headers
                .iter()
                .map(|(name, value)| {
                    let value = value.to_str().unwrap_or("");
                    let value =
                        if redact::is_secret_name(name.as_str()) || redact::is_credential(value) {
                            redact::REDACTED
                        } else {
                            value
                        };
                    (name.to_string(), value.to_string())
                })
                .collect();
            serde_json::json!({
                "method": spec.method.as_str(),
                "url": format!("{}{}", spec.origin, spec.path_text),
                "headers": headers,
                "weight": weight,
            })
        })
        .collect();
    RunConfig {
        command_line: keeping.command_line.clone(),
        details: serde_json::json!({
            "requests": requests,
            "keepalive": plan.keepalive,
            "insecure": plan.insecure,
            "interval_ns": crate::engine::clock::nanos(plan.interval),
            "grace_ns": crate::engine::clock::nanos(plan.grace),
            "max_lateness_ns": plan.max_lateness.map(crate::engine::clock::nanos),
            "shard": plan.shard,
            "probes": keeping.probes.iter().map(|p| p.address.clone()).collect::<Vec<_>>(),
            "pre_roll_ns": crate::engine::clock::nanos(keeping.pre_roll),
            "post_roll_ns": crate::engine::clock::nanos(keeping.post_roll),
        }),
        ..plan.config()
    }
}

/// This host's facts.
pub fn gun_host() -> HostFacts {
    HostFacts::current()
}
