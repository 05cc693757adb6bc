//! What a command prints and draws at the end: the summary, where the run was kept, its page.

use std::io::Write;

use crate::cli::OutputFormat;
use crate::error::Error;
use crate::keep::{Executed, Keeping};
use crate::Summary;
use analysis::summary::SummaryText as _;

/// Text for a terminal whose names came from a store, a file or a gun: each line shown as
/// itself, its escapes (a clear-screen, a cursor move, a bidirectional override) written out
/// rather than obeyed, the line breaks kept.
pub fn shown(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        out.push_str(&redact::printable(line));
        out.push('\n');
    }
    out
}

/// How to run this program again as typed: `loadgen` when that is what `PATH` finds, else this
/// executable's path (relative to the working directory when it is below it), as after
/// `cargo run`, which leaves `loadgen` off `PATH`.
pub fn program() -> String {
    let Ok(exe) = std::env::current_exe() else {
        return "loadgen".into();
    };
    let on_path = std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths).any(|dir| {
            std::fs::canonicalize(dir.join("loadgen"))
                .is_ok_and(|found| std::fs::canonicalize(&exe).is_ok_and(|me| me == found))
        })
    });
    if on_path {
        return "loadgen".into();
    }
    let relative = std::env::current_dir()
        .ok()
        .and_then(|cwd| exe.strip_prefix(cwd).ok().map(std::path::Path::to_path_buf));
    match relative {
        Some(path) => path.display().to_string(),
        None => exe.display().to_string(),
    }
}

/// Says where the run was kept (on standard error with JSON, so that standard output stays JSON).
pub fn print_kept(done: &Executed, keeping: &Keeping, format: OutputFormat) {
    let (Some(id), Some(url)) = (&done.run_id, &keeping.store_url) else {
        return;
    };
    let line = format!(
        "Kept as run {id} in {}: {} runs show {}",
        redact::text(url),
        program(),
        store::run::short_id(id)
    );
    match format {
        OutputFormat::Text => println!("\n{line}"),
        OutputFormat::Json => eprintln!("{line}"),
    }
}

/// Draws the report's pages from the store the run was kept in, and says where its page is.
pub async fn draw_report(
    dir: &std::path::Path,
    done: &Executed,
    keeping: &Keeping,
    format: OutputFormat,
) -> Result<(), Error> {
    let (Some(id), Some(url)) = (&done.run_id, &keeping.store_url) else {
        return Ok(());
    };
    let site = draw_site(url, dir).await?;
    let page = site.run_pages.get(id).unwrap_or(&site.index);
    let line = format!("Report: open {}", page.display());
    match format {
        OutputFormat::Text => println!("{line}"),
        OutputFormat::Json => eprintln!("{line}"),
    }
    Ok(())
}

/// Draws every page of the store at `url` into `dir`, saying on standard error which could not
/// be drawn.
pub async fn draw_site(url: &str, dir: &std::path::Path) -> Result<report::Site, Error> {
    let store = store::Store::open(url).await?;
    let options = report::SiteOptions {
        out: dir.to_path_buf(),
        ..Default::default()
    };
    let site = report::site::write(&store, &options).await?;
    for (what, why) in &site.failures {
        eprintln!("{what} could not be drawn: {why}");
    }
    Ok(site)
}

/// Prints the summary on standard output.
pub fn print_summary(
    summary: &Summary,
    verdict: Option<&analysis::capacity::slo::RunVerdict>,
    format: OutputFormat,
) -> Result<(), Error> {
    let mut out = std::io::stdout().lock();
    let text = match format {
        OutputFormat::Text => match verdict {
            Some(v) => format!("{}{}\n", summary.to_text(), v.text()),
            None => summary.to_text(),
        },
        OutputFormat::Json => {
            // The summary's fields, and the verdict beside them as "slo".
            let mut value = serde_json::to_value(summary).map_err(|e| Error::Output(e.into()))?;
            if let (Some(v), Some(fields)) = (verdict, value.as_object_mut()) {
                fields.insert(
                    "slo".into(),
                    serde_json::to_value(v).map_err(|e| Error::Output(e.into()))?,
                );
            }
            serde_json::to_string_pretty(&value).map_err(|e| Error::Output(e.into()))? + "\n"
        }
    };
    out.write_all(text.as_bytes()).map_err(Error::Output)
}
