//! `loadgen capacity`: the search, its summary, where it was kept.

use crate::capacity;
use crate::cli::{CapacityArgs, OutputFormat};
use crate::{Error, RunEnd, Shutdown};

pub async fn run(
    args: &CapacityArgs,
    shutdown: &Shutdown,
    command_line: &[String],
) -> Result<RunEnd, Error> {
    let keeping = args.probe.keeping(args.store.keeping(command_line)?)?;
    let store_url = keeping.store_url.clone();
    let search = capacity::search(args, keeping, shutdown).await?;
    match args.output {
        OutputFormat::Text => print!("{}", capacity::text(&search)),
        OutputFormat::Json => println!(
            "{}",
            serde_json::to_string_pretty(&search).map_err(|e| Error::Usage(e.to_string()))?
        ),
    }
    if let Some(url) = store_url {
        let line = format!(
            "Kept as search {} in {}: its steps are runs labelled search={}",
            search.id,
            redact::text(&url),
            search.id
        );
        match args.output {
            OutputFormat::Text => println!("\n{line}"),
            OutputFormat::Json => eprintln!("{line}"),
        }
        if let Some(dir) = &args.store.report {
            crate::output::draw_site(&url, dir).await?;
            eprintln!(
                "Report: open {}",
                dir.join(report::pages::search_path(&search.id)).display()
            );
        }
    }
    Ok(match search.status {
        store::capacity::Status::Interrupted => RunEnd::Stopped,
        _ => RunEnd::Completed,
    })
}
