//! `loadgen history`: an experiment's sittings from the store, the change points across them,
//! in words, JSON or Markdown; exit 4 when one of the last N sittings made a measure worse
//! (`--fail-within N`: a change point whose first sitting after it is one of them, or a
//! possible change there that too few sittings follow yet to confirm).

use std::io::Write;

use analysis::history::divisive::Null;
use analysis::history::{self, Config};
use store::Store;

use crate::cli::{HistoryArgs, HistoryFormat, HistoryNull};
use crate::{Error, RunEnd};

/// Runs `loadgen history`.
pub async fn run(args: &HistoryArgs) -> Result<RunEnd, Error> {
    let store = Store::open(&args.db).await?;
    // The experiment's file (its latest run's) sets what a bare `loadgen history` judges: its
    // references, measures and level; a flag given overrides each.
    let defined = store
        .experiments()
        .await?
        .into_iter()
        .find(|r| r.name == args.experiment)
        .map(|r| r.definition);
    let asked = Asked::of(args, defined.as_ref());
    let selection = history::read::Selection {
        references: &asked.references,
        measures: &asked.measures,
    };
    let history = history::read::history(&store, &args.experiment, asked.config, selection).await?;
    store.close().await;
    if history.sittings.is_empty() && history.unplaced == 0 {
        return Err(Error::NothingKept {
            experiment: args.experiment.clone(),
            store: redact::text(&args.db),
        });
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
        return Err(Error::NoReference {
            reference: missing.clone(),
            experiment: args.experiment.clone(),
            targets: targets.into_iter().map(str::to_string).collect(),
        });
    }
    let text = match args.output {
        // Names and revisions come from the store: each line shown as itself, its escapes
        // written out rather than obeyed.
        HistoryFormat::Text => crate::output::shown(&history.to_text()),
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
    Ok(match args.fail_within {
        Some(n) if gated(&history, n as usize) => RunEnd::Regression,
        _ => RunEnd::Completed,
    })
}

/// What the history judges: the flags given, else the experiment file's.
struct Asked {
    config: Config,
    references: Vec<String>,
    measures: Vec<analysis::ab::Measure>,
}

impl Asked {
    fn of(args: &HistoryArgs, defined: Option<&store::experiment::Definition>) -> Asked {
        let config = Config {
            level: args
                .level
                .or(defined.and_then(|d| d.history_level))
                .unwrap_or(0.05),
            min_segment: args.min_segment as usize,
            min_change: args.min_change,
            null: match args.null {
                HistoryNull::Normal => Null::Normal,
                HistoryNull::Permutation => Null::Permutation,
            },
        };
        let references = if args.references.is_empty() && !args.raw {
            defined.map(|d| d.references.clone()).unwrap_or_default()
        } else {
            args.references.clone()
        };
        let measures = if args.measures.is_empty() {
            defined
                .map(|d| {
                    d.history_measures
                        .iter()
                        .filter_map(|m| m.parse().ok())
                        .collect()
                })
                .unwrap_or_default()
        } else {
            args.measures.clone()
        };
        Asked {
            config,
            references,
            measures,
        }
    }
}

/// `--fail-within N`: says on standard error each change that made a measure worse in the
/// last `n` sittings (or a possible one there), and whether there was any.
fn gated(history: &history::History, n: usize) -> bool {
    let worse = history.worse_within(n);
    let within = match n {
        1 => "the last sitting".to_string(),
        n => format!("the last {n} sittings"),
    };
    for (series, change, more) in &worse {
        let how = match more {
            None => "A change".to_string(),
            Some(1) => "A possible change (1 more sitting confirms or dismisses it)".to_string(),
            Some(more) => {
                format!("A possible change ({more} more sittings confirm or dismiss it)")
            }
        };
        eprintln!(
            "{how} made {} worse in {within}, {}: ×{:.3} ({:.3}–{:.3}).",
            redact::printable(&series.key.text()),
            redact::printable(&history.between(change)),
            change.ratio,
            change.low,
            change.high
        );
    }
    !worse.is_empty()
}
