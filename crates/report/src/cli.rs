//! The command line of `report` (and of `loadgen --report`, which draws the same site).

use std::path::PathBuf;

use clap::Parser;

use crate::compare::Selection;
use crate::tables::Format;

/// Draws static HTML pages (tables and SVG charts) from the runs in Showdown's store, or
/// prints their tables as JSON, CSV or Markdown.
#[derive(Debug, Clone, Parser)]
#[command(name = "report", version, about, long_about = None)]
pub struct Cli {
    /// The store: a SQLite file (sqlite://PATH) or a Postgres URL (postgres://…).
    #[arg(long, env = "SHOWDOWN_DB", hide_env_values = true, default_value = store::DEFAULT_URL, value_name = "URL")]
    pub db: String,

    /// The directory the pages go to (created if needed; pages already there are replaced).
    #[arg(long, default_value = "site", value_name = "DIR")]
    pub out: PathBuf,

    /// Only the runs of this experiment.
    #[arg(long, value_name = "NAME")]
    pub experiment: Option<String>,

    /// Only the runs carrying this label (repeat: all must match).
    #[arg(long = "label", value_name = "KEY=VALUE", value_parser = store::run::parse_label)]
    pub labels: Vec<(String, String)>,

    /// Only this run (id, id prefix or name; repeat for several). With --output, its tables.
    #[arg(long = "run", value_name = "RUN")]
    pub runs: Vec<String>,

    /// A comparison: run ids or names, KEY=VALUE labels, experiment=NAME or group=NAME,
    /// comma-separated (repeat for several). Every experiment gets one anyway.
    #[arg(long = "compare", value_name = "SPEC")]
    pub comparisons: Vec<Selection>,

    /// html: the pages. json, csv, markdown: print the tables instead (the runs' headline
    /// figures; with --run, each run's percentiles; with --compare, the comparisons). The same
    /// flag as loadgen's commands' `--output`; `--format` is still taken.
    #[arg(long = "output", alias = "format", value_enum, default_value_t = Format::Html)]
    pub format: Format,
}
