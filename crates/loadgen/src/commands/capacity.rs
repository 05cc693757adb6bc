//! `loadgen capacity`: the flags' order, the search run (`execute::search`: its steps printed
//! and kept as they end), its summary, where it was kept.

use std::collections::BTreeMap;

use analysis::capacity::knee::{self, Found};
use analysis::capacity::repeated::Repeated;
use analysis::capacity::Status;
use serde::Serialize;

use crate::capacity;
use crate::cli::{CapacityArgs, OutputFormat};
use crate::execute::search;
use crate::prepare;
use crate::{Error, RunEnd, Shutdown};

pub async fn run(
    args: &CapacityArgs,
    shutdown: &Shutdown,
    command_line: &[String],
) -> Result<RunEnd, Error> {
    let order = args.order()?;
    let Some(wanted) = order.search() else {
        return Err(prepare::Refusal::NotASearch.into());
    };
    let store_url = prepare::keeping(&order, command_line)?.store_url;
    let repeated = search(&order, wanted, shutdown, command_line).await?;
    let knees = match (&store_url, order.probes.is_some()) {
        (Some(url), true) => knees(url, &repeated).await?,
        _ => BTreeMap::new(),
    };
    print_out(
        args.output,
        || with_knees(capacity::words::repeated(&repeated), &knees, &repeated),
        &Answer {
            repeated: &repeated,
            knees: &knees,
        },
    )?;
    if let Some(url) = store_url {
        let ids: Vec<&str> = repeated.searches.iter().map(|s| s.id.as_str()).collect();
        let line = format!(
            "Kept as search{} {} in {}: {} steps are runs labelled search=ID",
            if ids.len() == 1 { "" } else { "es" },
            ids.join(", "),
            redact::text(&url),
            if ids.len() == 1 { "its" } else { "their" },
        );
        kept(args, &url, &line, &ids).await?;
    }
    Ok(match repeated.searches.last().map(|s| s.status) {
        Some(Status::Interrupted) => RunEnd::Stopped,
        _ => RunEnd::Completed,
    })
}

/// A search's answer as JSON: the searches, and what grew with the rate at each one's knee
/// (by search id; absent without a probe or a store to read the steps' runs back from).
#[derive(Serialize)]
struct Answer<'a> {
    #[serde(flatten)]
    repeated: &'a Repeated,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    knees: &'a BTreeMap<String, Found>,
}

/// What grew with the rate at each search's knee, from its steps' runs kept in the store at
/// `url` (the probes' profiles and CPU over each step's window).
async fn knees(url: &str, repeated: &Repeated) -> Result<BTreeMap<String, Found>, Error> {
    let store = store::Store::open(url).await?;
    let mut out = BTreeMap::new();
    for search in &repeated.searches {
        out.insert(
            search.id.clone(),
            knee::read(&store, search, |_| true).await?,
        );
    }
    Ok(out)
}

/// The searches' text, then what grew at each one's knee (or why that cannot be said).
fn with_knees(mut text: String, knees: &BTreeMap<String, Found>, repeated: &Repeated) -> String {
    for search in &repeated.searches {
        let Some(said) = knees.get(&search.id).and_then(Found::text) else {
            continue;
        };
        if repeated.searches.len() > 1 {
            text.push_str(&format!("\nSearch {}: {said}\n", search.id));
        } else {
            text.push_str(&format!("\n{said}\n"));
        }
    }
    text
}

/// Prints a search's or a comparison's answer: `text()` as text, or `value` as JSON.
pub(super) fn print_out(
    format: OutputFormat,
    text: impl FnOnce() -> String,
    value: &impl serde::Serialize,
) -> Result<(), Error> {
    match format {
        OutputFormat::Text => print!("{}", text()),
        OutputFormat::Json => println!(
            "{}",
            serde_json::to_string_pretty(value).map_err(Error::Json)?
        ),
    }
    Ok(())
}

/// Says where searches `ids` were kept (`line`: on standard output after text, on standard
/// error beside JSON), and draws their pages with `--report`.
pub(super) async fn kept(
    args: &CapacityArgs,
    url: &str,
    line: &str,
    ids: &[&str],
) -> Result<(), Error> {
    match args.output {
        OutputFormat::Text => println!("\n{line}"),
        OutputFormat::Json => eprintln!("{line}"),
    }
    if let Some(dir) = &args.store.report {
        crate::output::draw_site(url, dir).await?;
        for id in ids {
            eprintln!(
                "Report: open {}",
                dir.join(report::pages::search_path(id)).display()
            );
        }
    }
    Ok(())
}
