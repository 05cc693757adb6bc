//! `report`: Showdown's pages, charts and tables, from the runs in the store.
//!
//! Data flows one way through it: stored run → [`figures`] (every number a page shows) →
//! [`tables`] and [`charts`] → [`pages`] → files written by [`site`].
//!
//! Modules:
//!
//! - [`experiment`]: an experiment's cells over their repetitions, its charts and sentences.
//! - [`figures`]: a stored run's tables and time series, on the run's timeline; `series`: a
//!   named series of points, what they and the charts hold.
//! - [`tables`]: the table model, its formats (HTML cells, JSON, CSV, Markdown) and the run tables.
//! - [`compare`]: choosing runs to set side by side, and the comparison table with its ratios.
//! - [`charts`]: which charts each page has and what each one draws.
//! - [`model`]: a chart as data, below everything that draws it: [`model::chart`], what a
//!   builder asks for (lines, bands, axes; colours as plain [`model::Rgb`]), turned once into
//!   [`model::ChartData`], the one value both the SVG and the interactive chart draw, and
//!   [`model::heatmap`], a run's latency heatmap (time × log latency × count) from its
//!   intervals' histograms; [`model::number`], how a number is written on a chart and beside
//!   it, by one rule table ([`model::number::RULES`]) that every page carries and the script
//!   reads (both held to `tests/numbers.json`).
//! - Its renderers, which import the model and nothing from the pages above them: `plot`,
//!   a `ChartData`'s SVG with plotters; [`heatmap`], a heatmap's SVG written by hand (each cell's
//!   count in it), for pages read without script: the page's script draws the same
//!   `HeatmapData`, carried beside it as JSON; [`flame`], every flame graph's SVG from its
//!   [`model::flame::FlameData`] (a run's profile, a run's stacks against another's, a gate's or a
//!   knee's call paths from their estimates), which the pages' script draws to the same SVG and
//!   zooms; the pages' script (`assets/showdown.js`) draws each chart's `ChartData`.
//! - [`history`]: an experiment's history across sittings (`analysis::history`) as charts:
//!   each series sitting by sitting with its levels and changes, and the host in each sitting.
//! - [`knee`]: what grew with the rate at a search's knee, its steps' kept runs read by
//!   `analysis::capacity::knee::read` (as `loadgen capacity` reads them), its differential flame graph, and
//!   the limit's sentence citing it.
//! - [`flame_data`]: a profile's stacks per slice of the run, the data the page's window
//!   flame graph draws (the window the charts are zoomed to, and it against the rest).
//! - [`assets`]: the files beside the pages (uPlot, vendored and pinned; the pages' script).
//! - `downsample`: fewer points per line without losing a peak or bridging a gap.
//! - [`pages`]: the HTML templates (maud) and the site's layout; `paths`, where each page lives
//!   and the slug of a name, below the pages and the charts that link and name files by it.
//! - [`site`]: reading the runs and writing every page.
//! - `cli`, `error`: the command line and what can go wrong.

pub mod assets;
pub mod charts;
mod cli;
pub mod compare;
mod downsample;
mod error;
pub mod experiment;
pub mod figures;
pub mod flame;
pub mod flame_data;
pub mod heatmap;
pub mod history;
pub mod knee;
pub mod model;
pub mod pages;
mod paths;
mod plot;
pub mod profile;
pub mod search;
mod series;
pub mod site;
pub mod tables;

use std::io::Write;

pub use cli::Cli;
pub use error::ReportError;
/// How a number and a percentile are written on a chart, by the SVG and the pages' script alike.
pub use model::number::{number, percentile, percentile_label};
pub use site::{Site, SiteOptions};
use store::run::RunFilter;
use store::Store;
use tables::{Format, Table};

/// What a `report` command did.
#[derive(Debug)]
pub enum Outcome {
    /// The pages were written.
    Site(Site),
    /// The tables were printed.
    Tables,
}

/// Runs one `report` command.
pub fn run(cli: &Cli) -> Result<Outcome, ReportError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(ReportError::Output)?;
    runtime.block_on(run_async(cli))
}

/// [`run`], on the caller's runtime.
pub async fn run_async(cli: &Cli) -> Result<Outcome, ReportError> {
    let store = Store::open(&cli.db).await?;
    let filter = RunFilter {
        experiment: cli.experiment.clone(),
        labels: cli.labels.iter().cloned().collect(),
        group: None,
    };
    if cli.format == Format::Html {
        let options = SiteOptions {
            out: cli.out.clone(),
            filter,
            only: cli.runs.clone(),
            comparisons: cli.comparisons.clone(),
        };
        return Ok(Outcome::Site(site::write(&store, &options).await?));
    }
    let text = print_tables(&store, cli, &filter).await?;
    std::io::stdout()
        .lock()
        .write_all(text.as_bytes())
        .map_err(ReportError::Output)?;
    Ok(Outcome::Tables)
}

/// The tables an `--output` other than html asks for, as text.
pub async fn print_tables(
    store: &Store,
    cli: &Cli,
    filter: &RunFilter,
) -> Result<String, ReportError> {
    let mut named: Vec<(String, Table)> = Vec::new();
    for id in &cli.runs {
        let id = store.resolve(id).await?;
        let run = figures::load(store, &id).await?;
        named.push((
            format!("percentiles of {} ({})", run.name, run.id),
            tables::percentiles(&run),
        ));
    }
    for selection in &cli.comparisons {
        let runs = compare::load(store, selection, &mut Default::default()).await?;
        if runs.is_empty() {
            return Err(ReportError::EmptyComparison(selection.spec.clone()));
        }
        let c = compare::Comparison {
            title: selection.spec.clone(),
            runs,
        };
        named.push((format!("comparison {}", c.title), compare::table(&c)));
    }
    if named.is_empty() {
        let mut headlines = Vec::new();
        for listing in store.list_runs(filter).await? {
            headlines.push(figures::load(store, &listing.id).await?.headline());
        }
        named.push(("runs".into(), tables::runs(&headlines)));
    }
    let refs: Vec<(&str, &Table)> = named.iter().map(|(n, t)| (n.as_str(), t)).collect();
    Ok(tables::print(&refs, cli.format)?)
}
