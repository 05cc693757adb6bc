//! A comparison order run: the order's target and each of its `against` searched interleaved,
//! one step of each per round in a random order, compared by the ratios of their figures; each
//! search kept as its order says (labelled `compare=ID`). `loadgen capacity --against` and
//! `loadgen order` both run comparisons here.

use std::time::Duration;

use analysis::capacity::compare::{Between, Compared};
use analysis::capacity::label;
use store::Store;

use super::search::{searched_slo, settings, target, Live};
use crate::capacity::{self, bracket, step::Stepper, Interleave, Plan};
use crate::engine::shutdown::Shutdown;
use crate::error::Error;
use crate::keep::Keeping;
use crate::prepare::{self, Sending};

/// `order` sent to `against` instead: each URL's scheme, host and port replaced, kept as
/// `against` says (its own name, id and labels, or the order's labels), watched by its own
/// probes only.
fn aimed(order: &order::Order, against: &order::Against) -> order::Order {
    let mut aimed = order.clone();
    for entry in &mut aimed.requests.entries {
        entry.url = order::Secret(retarget(entry.url.expose(), against.origin.expose()));
    }
    aimed.probes = against.probes.clone();
    match &against.keeping {
        Some(k) => {
            aimed.keeping.name = Some(k.name.clone());
            aimed.keeping.run_id = Some(k.run_id.clone());
            aimed.keeping.labels = k.labels.clone();
        }
        None => {
            aimed.keeping.name = None;
            aimed.keeping.run_id = None;
        }
    }
    aimed
}

/// `url` with its origin replaced by `origin`: its path and query kept ("/" without one).
fn retarget(url: &str, origin: &str) -> String {
    let rest = url.find("://").map_or(url, |at| &url[at + 3..]);
    let path = rest.find(['/', '?']).map_or("/", |p| &rest[p..]);
    if path.starts_with('?') {
        format!("{origin}/{path}")
    } else {
        format!("{origin}{path}")
    }
}

/// Runs the comparison `wanted` describes: the order's target and each of `against`, its
/// ratios widened by `between` (the spread between processes of one build) where it was read.
pub async fn compare(
    order: &order::Order,
    wanted: &order::Search,
    shutdown: &Shutdown,
    command_line: &[String],
    between: Option<Between>,
) -> Result<Compared, Error> {
    if wanted.guns.is_some() {
        return Err(prepare::Refusal::CompareWithGuns.into());
    }
    let slo = searched_slo(wanted)?;
    let (orders, sendings, keepings) = each_target(order, wanted, command_line)?;
    let id = store::RunMeta::new_id();
    let store = match &keepings[0].store_url {
        Some(url) => Some(Store::open(url).await?),
        None => None,
    };
    let targets: Vec<String> = sendings.iter().map(target).collect();
    let names = names(&orders, &targets);
    let warmup = Duration::from_nanos(wanted.warmup_ns);
    let mut lives = Vec::with_capacity(sendings.len());
    let mut plans = Vec::with_capacity(sendings.len());
    for (((sending, target), name), mut keeping) in
        sendings.iter().zip(&targets).zip(&names).zip(keepings)
    {
        let search_id = name_search(&mut keeping, &id, name);
        let stepper = Stepper {
            sending,
            keeping,
            slo: &slo,
            warmup,
            shutdown,
        };
        plans.push(plan_of(wanted, &stepper, search_id, name, target).await?);
        lives.push(Live {
            stepper,
            store: store.clone(),
            name: Some(name.clone()),
        });
    }
    let rounds = rounds_said(wanted);
    eprintln!(
        "Comparing {} of {} targets within {slo}: {rounds}, one step of each per round in a random order",
        plans[0].settings.figure(),
        plans.len(),
    );
    let mut interleave = interleave_of(wanted, &id);
    interleave.between = between;
    capacity::compare(plans, &mut lives, &interleave).await
}

/// Labels `keeping` with the comparison `id` and names its search (of `name`, unless the
/// keeping names it): the search's id, the keeping's own or a new one.
fn name_search(keeping: &mut Keeping, id: &str, name: &str) -> String {
    keeping.labels.insert(label::COMPARE.into(), id.to_string());
    let search_id = keeping.run_id.take().unwrap_or_else(store::RunMeta::new_id);
    keeping.name = Some(
        keeping
            .name
            .take()
            .unwrap_or_else(|| format!("capacity of {name}")),
    );
    search_id
}

/// How the rounds go, as the comparison's first line says: so many, or read at looks.
fn rounds_said(wanted: &order::Search) -> String {
    if wanted.sequential {
        format!(
            "up to {} rounds, read at {} and stopped once decided",
            wanted.rounds,
            analysis::capacity::compare::Looks {
                most: wanted.rounds,
                margin: wanted.until,
            }
            .at()
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(", ")
        )
    } else {
        format!("{} rounds", wanted.rounds)
    }
}

/// The rounds of the comparison `id`, seeded by its id, read at looks when `wanted` is
/// sequential.
fn interleave_of(wanted: &order::Search, id: &str) -> Interleave {
    Interleave {
        id: id.to_string(),
        rounds: wanted.rounds,
        budget: wanted.budget_ns.map(Duration::from_nanos),
        seed: analysis::capacity::random::seed_of(id),
        looks: wanted
            .sequential
            .then_some(analysis::capacity::compare::Looks {
                most: wanted.rounds,
                margin: wanted.until,
            }),
        between: None,
    }
}

/// Each target's order, sending and keeping, in the comparison's order.
type EachTarget = (Vec<order::Order>, Vec<Sending>, Vec<Keeping>);

/// The order of each target (the order's own, then each `against` aimed at its origin), its
/// requests' sending, and how its search is kept: the order's id, name and labels for the
/// first, each other's own (or the order's labels), each watched by its own probes.
fn each_target(
    order: &order::Order,
    wanted: &order::Search,
    command_line: &[String],
) -> Result<EachTarget, Error> {
    let mut orders = vec![order.clone()];
    orders.extend(wanted.against.iter().map(|a| aimed(order, a)));
    let sendings = orders
        .iter()
        .map(|o| Sending::of(&o.requests, &o.pacing))
        .collect::<Result<Vec<_>, _>>()?;
    let keepings = orders
        .iter()
        .map(|o| prepare::keeping(o, command_line))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((orders, sendings, keepings))
}

/// Each search's name: its keeping's when every target has one (an experiment's cells),
/// otherwise its origin (numbered when one is entered twice, an A/A control).
fn names(orders: &[order::Order], targets: &[String]) -> Vec<String> {
    let named: Option<Vec<String>> = orders.iter().map(|o| o.keeping.name.clone()).collect();
    named.unwrap_or_else(|| {
        targets
            .iter()
            .enumerate()
            .map(|(i, t)| {
                if targets.iter().filter(|o| *o == t).count() > 1 {
                    format!("{t} #{}", i + 1)
                } else {
                    t.clone()
                }
            })
            .collect()
    })
}

/// The plan of one target's search (`id`, `name`, of `target`) in the comparison `wanted`,
/// from the order's first rate or what a short closed loop served.
async fn plan_of(
    wanted: &order::Search,
    stepper: &Stepper<'_>,
    id: String,
    name: &str,
    target: &str,
) -> Result<Plan, Error> {
    let start = match wanted.start {
        Some(rate) => rate,
        None => {
            eprintln!(
                "Estimating a first rate for {name}: a closed loop of 16 connections for 2 s…"
            );
            stepper.estimate().await?.ok_or_else(|| Error::NoAnswer {
                target: target.to_string(),
            })?
        }
    };
    let seed = analysis::capacity::random::seed_of(&id);
    Ok(Plan {
        id,
        name: name.to_string(),
        experiment: stepper.keeping.experiment.clone(),
        target: target.to_string(),
        labels: stepper.keeping.labels.clone(),
        slo: stepper.slo.clone(),
        settings: settings(
            wanted,
            stepper.sending,
            bracket::round(start.clamp(wanted.min_rate, wanted.max_rate)),
            seed,
        ),
        max_steps: wanted.max_steps.max(u64::from(wanted.rounds)),
        budget: None,
        step: Duration::from_nanos(wanted.step_ns),
        resumed: Vec::new(),
        warm: super::search::warm(wanted),
        started_at_ns: capacity::now_ns(),
    })
}

#[cfg(test)]
mod tests {
    use super::retarget;

    #[test]
    fn another_origin_gets_the_same_paths() {
        let to = "http://127.0.0.1:9090";
        assert_eq!(
            retarget("http://127.0.0.1:8080/now?x=1", to),
            "http://127.0.0.1:9090/now?x=1"
        );
        assert_eq!(
            retarget("https://example.test", to),
            "http://127.0.0.1:9090/"
        );
        assert_eq!(retarget("http://a:1?q", to), "http://127.0.0.1:9090/?q");
        assert_eq!(retarget("http://[::1]:81/x", to), "http://127.0.0.1:9090/x");
    }
}
