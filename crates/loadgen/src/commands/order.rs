//! `loadgen order`: one [`order::Order`] read from standard input (how the experiment runner
//! and a gun start a generator), run, and its [`order::Outcome`] printed on standard output as
//! one JSON line; everything else goes to standard error. Exit 0 when it ran to its end, 3 when
//! it was stopped (a signal), as `attack` does. A search with other targets `against` it is
//! a comparison, its answer in the outcome's `compared`.

use crate::cli::OutputFormat;
use crate::{keep, prepare, Error, RunEnd, Shutdown};

pub async fn run(shutdown: &Shutdown, command_line: &[String]) -> Result<RunEnd, Error> {
    let order =
        tokio::task::spawn_blocking(|| order::Order::read(std::io::stdin().lock())).await??;
    let outcome = fire(&order, shutdown, command_line).await?;
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(&order::line(&outcome))
        .and_then(|()| out.flush())
        .map_err(Error::Output)?;
    Ok(if outcome.stopped {
        RunEnd::Stopped
    } else {
        RunEnd::Completed
    })
}

/// Runs an order to its end (or its stop).
pub async fn fire(
    order: &order::Order,
    shutdown: &Shutdown,
    command_line: &[String],
) -> Result<order::Outcome, Error> {
    match &order.work {
        order::Work::Attack(attack) => {
            let plan = prepare::attack(order, attack)?;
            let keeping = prepare::keeping(order, command_line)?;
            let done = keep::execute(&plan, &keeping, shutdown).await?;
            crate::output::print_kept(&done, &keeping, OutputFormat::Json);
            Ok(order::Outcome {
                version: order::VERSION,
                stopped: done.summary.stopped.is_some(),
                summary: Some(done.summary),
                search: None,
                compared: None,
                run_id: done.run_id,
            })
        }
        order::Work::Search(search) if !search.against.is_empty() => {
            let compared =
                crate::execute::compare(order, search, shutdown, command_line, None).await?;
            Ok(order::Outcome {
                version: order::VERSION,
                stopped: compared
                    .searches
                    .iter()
                    .any(|s| s.status == analysis::capacity::Status::Interrupted),
                run_id: compared.searches.first().map(|s| s.id.clone()),
                summary: None,
                search: None,
                compared: Some(compared),
            })
        }
        order::Work::Search(search) => {
            let repeated = crate::execute::search(order, search, shutdown, command_line).await?;
            Ok(order::Outcome {
                version: order::VERSION,
                stopped: repeated.searches.last().map(|s| s.status)
                    == Some(analysis::capacity::Status::Interrupted),
                run_id: repeated.searches.first().map(|s| s.id.clone()),
                summary: None,
                search: Some(repeated),
                compared: None,
            })
        }
    }
}
