//! `loadgen capacity URL --against ORIGIN`: the searches of several targets interleaved, one
//! step of each per round, compared by the ratios of their figures; printed, and each search
//! kept (labelled `compare=ID`) as any search is.

use analysis::capacity::{label, Status};

use super::capacity::{kept, print_out};
use crate::capacity;
use crate::cli::CapacityArgs;
use crate::execute::compare;
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
    let compared = compare(&order, wanted, shutdown, command_line).await?;
    print_out(
        args.output,
        || capacity::words::compared(&compared),
        &compared,
    )?;
    if let Some(url) = store_url {
        let ids: Vec<&str> = compared.searches.iter().map(|s| s.id.as_str()).collect();
        let line = format!(
            "Kept as searches {} in {}, labelled {}={}",
            ids.join(", "),
            redact::text(&url),
            label::COMPARE,
            compared.id
        );
        kept(args, &url, &line, &ids).await?;
    }
    let stopped = compared
        .searches
        .iter()
        .any(|s| s.status == Status::Interrupted);
    Ok(if stopped {
        RunEnd::Stopped
    } else {
        RunEnd::Completed
    })
}
