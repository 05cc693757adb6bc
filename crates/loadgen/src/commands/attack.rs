//! `loadgen attack`: the flags' order run, kept, summarized, and drawn when asked.

use crate::cli::AttackArgs;
use crate::error::UsageError;
use crate::output::{draw_report, print_kept, print_summary};
use crate::{keep, prepare, Error, RunEnd, Shutdown};

pub async fn run(
    args: &AttackArgs,
    shutdown: &Shutdown,
    command_line: &[String],
) -> Result<RunEnd, Error> {
    let order = args.order()?;
    let order::Work::Attack(attack) = &order.work else {
        return Err(prepare::Refusal::NotAnAttack.into());
    };
    let plan = prepare::attack(&order, attack)?;
    let mut keeping = prepare::keeping(&order, command_line)?;
    keeping.hdr_log = args.out.hdr_log.clone();
    let slo = analysis::capacity::Slo {
        terms: attack.slo.clone(),
    };
    if let Some(t) = slo.server_terms().next() {
        if keeping.probes.is_empty() {
            return Err(UsageError::ServerTermWithoutProbe { term: *t }.into());
        }
    }
    let done = keep::execute(&plan, &keeping, shutdown).await?;
    let server = match (slo.server_terms().next(), &done.run_id, &keeping.store_url) {
        (Some(_), Some(id), Some(url)) => server_over(url, id).await?,
        _ => None,
    };
    let verdict = (!slo.terms.is_empty())
        .then(|| analysis::capacity::judge::verdict(&slo, &done.summary, server.as_ref()));
    print_summary(&done.summary, verdict.as_ref(), args.out.output)?;
    print_kept(&done, &keeping, args.out.output);
    if let Some(dir) = &args.store.report {
        draw_report(dir, &done, &keeping, args.out.output).await?;
    }
    Ok(RunEnd::judged(&done.summary, verdict.as_ref()))
}

/// What the probe that watched the server read over the kept run `id`: its CPU against what it
/// may use, its throttling, its PSS and open files at their most (`None` without a target's
/// probe or its samples).
async fn server_over(
    url: &str,
    id: &str,
) -> Result<Option<analysis::saturation::Saturation>, Error> {
    let run = store::Store::open(url).await?.load_run(id).await?;
    let Some(end) = run
        .summary
        .as_ref()
        .map(|s| (s.duration.attack_s * 1e9) as i64)
    else {
        return Ok(None);
    };
    Ok(analysis::system::System::of(&run.probes, 0, end).map(|s| s.target))
}
