//! `loadgen history`: an experiment's sittings from the store, the change points across them,
//! in words, JSON or Markdown; exit 4 when a change that made a measure worse is recent
//! (`--fail-within N`).

use std::io::Write;

use analysis::history::divisive::Null;
use analysis::history::{self, Config};
use store::Store;

use crate::cli::{HistoryArgs, HistoryFormat, HistoryNull};
use crate::{Error, RunEnd};

/// Runs `loadgen history`.
pub async fn run(args: &HistoryArgs) -> Result<RunEnd, Error> {
    let store = Store::open(&args.db).await?;
    let config = Config {
        level: args.level,
        min_segment: args.min_segment as usize,
        min_change: args.min_change,
        null: match args.null {
            HistoryNull::Normal => Null::Normal,
            HistoryNull::Permutation => Null::Permutation,
        },
    };
    // The references asked for, else those the experiment's file names (its latest run's).
    let references = if args.references.is_empty() && !args.raw {
        store
            .experiments()
            .await?
            .into_iter()
            .find(|r| r.name == args.experiment)
            .map(|r| r.definition.references)
            .unwrap_or_default()
    } else {
        args.references.clone()
    };
    let selection = history::read::Selection {
        references: &references,
        measures: &args.measures,
    };
    let history = history::read::history(&store, &args.experiment, config, selection).await?;
    store.close().await;
    if history.sittings.is_empty() && history.unplaced == 0 {
        return Err(Error::Usage(format!(
            "nothing of experiment {:?} is kept in {}: `loadgen runs list` shows what is, and \
             `loadgen experiment run FILE --again` adds a sitting",
            redact::printable(&args.experiment),
            redact::text(&args.db)
        )));
    }
    let targets: std::collections::BTreeSet<&str> = history
        .series
        .iter()
        .map(|s| s.key.target.split(" ÷ ").next().unwrap_or_default())
        .collect();
    // A reference the file names but no sitting ran yet is left to the history, which says
    // that no reference tracks the target; one asked for by name must be there.
    if let Some(missing) = args
        .references
        .iter()
        .find(|r| !targets.contains(r.as_str()))
    {
        return Err(Error::Usage(format!(
            "no target {:?} in the history of {}: --reference names one of its targets ({})",
            redact::printable(missing),
            redact::printable(&args.experiment),
            targets.into_iter().collect::<Vec<_>>().join(", ")
        )));
    }
    let text = match args.output {
        HistoryFormat::Text => history.to_text(),
        HistoryFormat::Markdown => history.to_markdown(),
        HistoryFormat::Json => {
            let mut json = serde_json::to_string_pretty(&history).map_err(Error::Json)?;
            json.push('\n');
            json
        }
    };
    std::io::stdout()
        .lock()
        .write_all(text.as_bytes())
        .map_err(Error::Output)?;
    let Some(n) = args.fail_within else {
        return Ok(RunEnd::Completed);
    };
    let worse = history.worse_within(n as usize);
    if worse.is_empty() {
        return Ok(RunEnd::Completed);
    }
    for (series, change) in worse {
        eprintln!(
            "A change made {} worse within the last {n} sittings, {}: ×{:.3} ({:.3}–{:.3}).",
            series.key.text(),
            history.between(change),
            change.ratio,
            change.low,
            change.high
        );
    }
    Ok(RunEnd::Regression)
}
