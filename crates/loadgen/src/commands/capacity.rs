//! `loadgen capacity`: the flags' order, the search run (`execute::search`: its steps printed
//! and kept as they end), its summary, where it was kept.

use analysis::capacity::Status;

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
    print_out(
        args.output,
        || capacity::words::repeated(&repeated),
        &repeated,
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
