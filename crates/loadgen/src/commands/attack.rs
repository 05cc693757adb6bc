//! `loadgen attack`: the flags' order run, kept, summarized, and drawn when asked.

use crate::cli::AttackArgs;
use crate::output::{draw_report, print_kept, print_summary};
use crate::{keep, prepare, Error, RunEnd, Shutdown};

pub async fn run(
    args: &AttackArgs,
    shutdown: &Shutdown,
    command_line: &[String],
) -> Result<RunEnd, Error> {
    let order = args.order()?;
    let order::Work::Attack(attack) = &order.work else {
        return Err(Error::Usage("not an attack".into()));
    };
    let plan = prepare::attack(&order, attack)?;
    let mut keeping = prepare::keeping(&order, command_line)?;
    keeping.hdr_log = args.out.hdr_log.clone();
    let done = keep::execute(&plan, &keeping, shutdown).await?;
    let verdict = (!attack.slo.is_empty()).then(|| {
        let slo = store::capacity::Slo {
            terms: attack.slo.clone(),
        };
        store::capacity::judge::verdict(&slo, &done.summary)
    });
    print_summary(&done.summary, verdict.as_ref(), args.out.output)?;
    print_kept(&done, &keeping, args.out.output);
    if let Some(dir) = &args.store.report {
        draw_report(dir, &done, &keeping, args.out.output).await?;
    }
    Ok(RunEnd::judged(&done.summary, verdict.as_ref()))
}
