//! `loadgen runs list | show | export | delete | import`: the kept runs.

use std::io::Write;

use analysis::summary::SummaryText as _;
use store::run::{RunFilter, RunListing, StoredProbe, StoredRun};
use store::summary::format_ns;
use store::{Store, StoreError};

use crate::cli::{ExportFormat, OutputFormat, RunsArgs, RunsCommand};
use crate::Error;

/// Runs one `runs` command.
pub async fn run(args: &RunsArgs) -> Result<(), Error> {
    let store = Store::open(&args.db).await?;
    let mut out = std::io::stdout().lock();
    let print =
        |out: &mut dyn Write, text: String| out.write_all(text.as_bytes()).map_err(Error::Output);
    match &args.command {
        RunsCommand::List {
            experiment,
            labels,
            group,
            output,
        } => {
            let text = list(&store, experiment, labels, group, *output).await?;
            print(&mut out, text)
        }
        RunsCommand::Show { run, group, output } => {
            let run = load(&store, run.as_deref(), group.as_deref()).await?;
            let text = show(&run, *output)?;
            print(&mut out, text)
        }
        RunsCommand::Export {
            run,
            group,
            format,
            out: path,
        } => {
            let run = load(&store, run.as_deref(), group.as_deref()).await?;
            export(&run, *format, path, &mut out)
        }
        RunsCommand::Delete { run } => {
            let id = store.resolve(run).await?;
            store.delete_run(&id).await?;
            print(
                &mut out,
                crate::output::shown(&format!("deleted run {id}\n")),
            )
        }
        RunsCommand::Import { file } => {
            let imported = store::import::import_file(&store, file).await?;
            print(&mut out, crate::output::shown(&import_text(&imported)))
        }
    }
}

/// `runs list`: the kept runs that pass the filters, as `output` asks.
async fn list(
    store: &Store,
    experiment: &Option<String>,
    labels: &[(String, String)],
    group: &Option<String>,
    output: OutputFormat,
) -> Result<String, Error> {
    let filter = RunFilter {
        experiment: experiment.clone(),
        labels: labels.iter().cloned().collect(),
        group: group.clone(),
    };
    let runs = store.list_runs(&filter).await?;
    Ok(match output {
        OutputFormat::Json => json(&runs)?,
        OutputFormat::Text => crate::output::shown(&list_text(&runs)),
    })
}

/// `runs show`: the run, as `output` asks.
fn show(run: &StoredRun, output: OutputFormat) -> Result<String, Error> {
    Ok(match output {
        OutputFormat::Json => {
            let mut buf = Vec::new();
            store::export::json(run, &mut buf).map_err(Error::Output)?;
            String::from_utf8_lossy(&buf).into_owned() + "\n"
        }
        OutputFormat::Text => crate::output::shown(&show_text(run)),
    })
}

/// `runs export`: the run in `format`, written to `path`, or to `out` without one.
fn export(
    run: &StoredRun,
    format: ExportFormat,
    path: &Option<std::path::PathBuf>,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let mut buf = Vec::new();
    let written = match format {
        ExportFormat::Hdrlog => store::export::hdr_log(run, &mut buf),
        ExportFormat::IntervalsCsv => store::export::intervals_csv(run, &mut buf),
        ExportFormat::SamplesCsv => store::export::samples_csv(run, &mut buf),
        ExportFormat::Json => store::export::json(run, &mut buf),
    };
    written.map_err(Error::Output)?;
    match path {
        Some(path) => std::fs::write(path, &buf).map_err(|source| Error::Export {
            path: path.clone(),
            source,
        }),
        None => out.write_all(&buf).map_err(Error::Output),
    }
}

/// What `runs import` says of the runs it brought in.
fn import_text(imported: &[store::import::Imported]) -> String {
    let mut text = String::new();
    for i in imported {
        let how = match (i.created, i.status) {
            (_, store::RunStatus::Running) => {
                "its generator stopped before the end: kept as it was, still marked running"
            }
            (true, _) => "created",
            (false, _) => "completed",
        };
        text.push_str(&format!(
            "imported run {} ({how}; {} rows read, those the store had already skipped)\n",
            i.run_id, i.rows
        ));
    }
    if imported.is_empty() {
        text.push_str("no run in the file\n");
    }
    text
}

async fn load(
    store: &Store,
    run: Option<&str>,
    group: Option<&str>,
) -> Result<StoredRun, StoreError> {
    match (run, group) {
        (_, Some(group)) => analysis::group::load_group(store, group).await,
        (Some(run), None) => {
            let id = store.resolve(run).await?;
            store.load_run(&id).await
        }
        (None, None) => Err(StoreError::NoRun(String::new())),
    }
}

fn json<T: serde::Serialize>(value: &T) -> Result<String, Error> {
    serde_json::to_string_pretty(value)
        .map(|s| s + "\n")
        .map_err(|e| Error::Output(e.into()))
}

fn started(ns: i64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_nanos(ns.max(0) as u64);
    humantime::format_rfc3339_seconds(t).to_string()
}

fn list_text(runs: &[RunListing]) -> String {
    if runs.is_empty() {
        return "no runs kept yet: run loadgen attack (or loadgen demo)\n".into();
    }
    let mut out = format!(
        "{:<13} {:<20} {:<10} {:>9} {:>9} {:>9} {:>8}  {}\n",
        "ID", "STARTED", "STATUS", "RATE", "P50", "P99", "SUCCESS", "NAME"
    );
    for r in runs {
        let (rate, p50, p99, success) = match &r.summary {
            Some(s) => (
                format!("{:.0}/s", s.requests.rate),
                format_ns(s.latency.corrected.p50_ns),
                format_ns(s.latency.corrected.p99_ns),
                format!("{:.1}%", 100.0 * s.requests.success_ratio),
            ),
            None => ("-".into(), "-".into(), "-".into(), "-".into()),
        };
        let mut name = r.name.clone();
        if let Some(shard) = &r.shard {
            name.push_str(&format!(
                " [{} {}/{}]",
                shard.group, shard.index, shard.count
            ));
        }
        out.push_str(&format!(
            "{:<13} {:<20} {:<10} {:>9} {:>9} {:>9} {:>8}  {}\n",
            &r.id[..r.id.len().min(13)],
            started(r.started_at_ns),
            r.status.as_str(),
            rate,
            p50,
            p99,
            success,
            name
        ));
    }
    out
}

fn show_text(run: &StoredRun) -> String {
    let mut out = setup_text(run);
    for p in &run.probes {
        out.push_str(&probe_line(p));
    }
    out.push('\n');
    match &run.summary {
        Some(summary) => out.push_str(&summary.to_text()),
        None => out.push_str(&format!(
            "No summary: the run did not finish ({} intervals kept).\n",
            run.intervals.len()
        )),
    }
    out
}

/// `runs show`'s head: the run, how it ended, when, and how it was set up.
fn setup_text(run: &StoredRun) -> String {
    let m = &run.meta;
    let mut out = format!("Run          {} ({})\n", m.id, m.name);
    out.push_str(&format!("Status       {}", run.status.as_str()));
    if let Some(reason) = &run.stop_reason {
        out.push_str(&format!(": {reason}"));
    }
    out.push('\n');
    out.push_str(&format!("Started      {}\n", started(m.started_at_ns)));
    if let Some(e) = &m.experiment {
        out.push_str(&format!("Experiment   {e}\n"));
    }
    if !m.labels.is_empty() {
        let labels: Vec<String> = m.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        out.push_str(&format!("Labels       {}\n", labels.join(" ")));
    }
    if let Some(shard) = &m.shard {
        out.push_str(&format!(
            "Group        {} ({} shards)\n",
            shard.group, shard.count
        ));
    }
    out.push_str(&format!(
        "Gun host     {} · {} · {} CPUs · {:.1} GiB · FD limit {}\n",
        m.gun_host.hostname,
        m.gun_host.kernel,
        m.gun_host.cpus,
        m.gun_host.mem_total_bytes as f64 / (1u64 << 30) as f64,
        m.gun_host
            .fd_limit_soft
            .map_or("unlimited".into(), |v| v.to_string())
    ));
    out.push_str(&format!(
        "Command      {}\n",
        m.config.command_line.join(" ")
    ));
    out
}

/// `runs show`'s line for one probe: where it ran, what it kept, and its clock.
fn probe_line(p: &StoredProbe) -> String {
    let samples = p
        .records
        .iter()
        .filter(|r| matches!(r.record, probe::protocol::Record::Sample(_)))
        .count();
    let clock = p.meta.clock.map_or("not aligned".into(), |c| {
        format!(
            "offset {} ns ± {}",
            c.offset_ns,
            format_ns(c.uncertainty_ns)
        )
    });
    format!(
        "Probe {}      {} on {} ({}), {} samples, {} gaps, clock {}\n",
        p.meta.index,
        p.meta.address,
        p.meta.host.hostname,
        p.meta.host.selector,
        samples,
        p.gaps.len(),
        clock
    )
}
