//! `loadgen attack`: one run, kept, summarized, and drawn when asked.

use crate::cli::AttackArgs;
use crate::output::{draw_report, print_kept, print_summary};
use crate::{keep, Error, RunEnd, Shutdown};

pub async fn run(
    args: &AttackArgs,
    shutdown: &Shutdown,
    command_line: &[String],
) -> Result<RunEnd, Error> {
    let plan = args.plan()?;
    let keeping = args.keeping(command_line)?;
    let done = keep::execute(&plan, &keeping, shutdown).await?;
    print_summary(&done.summary, args.out.output)?;
    print_kept(&done, &keeping, args.out.output);
    if let Some(dir) = &args.store.report {
        draw_report(dir, &done, &keeping, args.out.output).await?;
    }
    Ok(RunEnd::of(&done.summary))
}
