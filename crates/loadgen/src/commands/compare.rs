//! `loadgen capacity URL --against ORIGIN`: the searches of several targets interleaved, one
//! step of each per round, compared by the ratios of their figures; printed, and each search
//! kept (labelled `compare=ID`) as any search is. Its ratios' intervals allow for how much two
//! processes of one build differ, read before its first round from the A/A comparisons
//! (`--same-build`) kept under its experiment, at every look and at the end.

use analysis::capacity::compare::{self as ratios, Between, Spread};
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
    let experiment = order.keeping.experiment.as_deref();
    let spread = spread_read(store_url.as_deref(), experiment).await?;
    let between = match &spread {
        Spread::Allowed { between, .. } => Some(*between),
        _ => None,
    };
    let mut compared = compare(&order, wanted, shutdown, command_line, between).await?;
    compared.spread = Some(spread);
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

/// The spread between processes of one build, read from the A/A comparisons kept under
/// `experiment` in the store at `url` (before this comparison's first round, so that a store
/// that cannot be read stops it before it runs), and whether it could be.
async fn spread_read(url: Option<&str>, experiment: Option<&str>) -> Result<Spread, Error> {
    let (Some(url), Some(experiment)) = (url, experiment) else {
        return Ok(Spread::Unnamed);
    };
    let store = store::Store::open(url).await?;
    let searches = analysis::capacity::searches(&store).await?;
    store.close().await;
    let earlier = ratios::same_build_ratios(&searches, experiment);
    let experiment = experiment.to_string();
    Ok(match Between::of_ratios(&earlier) {
        Some(between) => Spread::Allowed {
            between,
            experiment,
        },
        None => Spread::TooFew {
            sittings: earlier.iter().filter(|r| r.log_se().is_some()).count(),
            experiment,
        },
    })
}
