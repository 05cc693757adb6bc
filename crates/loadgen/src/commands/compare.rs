//! `loadgen capacity URL --against ORIGIN`: the searches of several targets interleaved, one
//! step of each per round, compared by the ratios of their figures; printed, and each search
//! kept (labelled `compare=ID`) as any search is. Its ratios' intervals allow for how much two
//! processes of one build differ, read from the A/A comparisons (`--same-build`) kept under
//! its experiment before it.

use analysis::capacity::compare::{self as ratios, Between, Compared, Spread};
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
    let mut order = args.order()?;
    if args.same_build {
        let (key, value) = ratios::SAME_BUILD;
        order.keeping.labels.insert(key.into(), value.into());
    }
    let Some(wanted) = order.search() else {
        return Err(prepare::Refusal::NotASearch.into());
    };
    let store_url = prepare::keeping(&order, command_line)?.store_url;
    let mut compared = compare(&order, wanted, shutdown, command_line).await?;
    let experiment = order.keeping.experiment.as_deref();
    allow_for_processes(&mut compared, store_url.as_deref(), experiment).await?;
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

/// Widens `compared`'s intervals by the spread between processes of one build, read from the
/// A/A comparisons kept under `experiment` in the store at `url` before it, and says whether
/// it could.
async fn allow_for_processes(
    compared: &mut Compared,
    url: Option<&str>,
    experiment: Option<&str>,
) -> Result<(), Error> {
    let (Some(url), Some(experiment)) = (url, experiment) else {
        compared.spread = Some(Spread::Unnamed);
        return Ok(());
    };
    let store = store::Store::open(url).await?;
    let searches = analysis::capacity::searches(&store).await?;
    let earlier = ratios::same_build_ratios(&searches, experiment, &compared.id);
    let experiment = experiment.to_string();
    compared.spread = Some(match Between::of_ratios(&earlier) {
        Some(between) => {
            for r in &mut compared.ratios {
                *r = r.widened(&between);
            }
            Spread::Allowed {
                between,
                experiment,
            }
        }
        None => Spread::TooFew {
            sittings: earlier.iter().filter(|r| r.log_se().is_some()).count(),
            experiment,
        },
    });
    Ok(())
}
