//! A search order run: its checks, its store opened (and a search kept under its id gone on
//! with), the guns made ready when it has them, its steps fired by this machine's generator
//! ([`Live`], each step printed on standard error and kept as it ends) or the guns', repeated
//! as it asks. `loadgen capacity` and `loadgen order` both run searches here.

use std::collections::BTreeMap;
use std::time::Duration;

use analysis::capacity::warm::Sample;
use analysis::capacity::{Arrival, Repeated, Search, Settings, Slo, Status, Verdict};
use store::Store;

use crate::capacity::{self, bracket, step::Stepper, Event, Plan, Repeat, Stepped, Steps};
use crate::engine::shutdown::Shutdown;
use crate::engine::shutdown::Stop;
use crate::error::Error;
use crate::keep::Keeping;
use crate::prepare::{self, Sending};

/// The generator's steps, printed on standard error and kept in the store as they end.
pub(crate) struct Live<'a> {
    pub stepper: Stepper<'a>,
    pub store: Option<Store>,
    /// The target's name before each line it prints, in a comparison.
    pub name: Option<String>,
}

impl Steps for Live<'_> {
    async fn run(
        &mut self,
        search: &Search,
        number: u32,
        rate: f64,
        window: Duration,
    ) -> Result<Option<Stepped>, Error> {
        let mut stepped = self.stepper.run(search, number, rate, window).await?;
        // A step that did not pass: what the server ran out of, from its probes' records.
        if let (Some(s), Some(store)) = (&mut stepped, &self.store) {
            if let (false, Some(id)) = (s.judgement.verdict == Verdict::Pass, &s.run_id) {
                s.limit = step_limit(store, id, self.stepper.warmup, window).await;
            }
        }
        Ok(stepped)
    }

    async fn recover(&mut self, baseline_ns: Option<u64>) -> Result<Option<Duration>, Error> {
        self.stepper.recover(baseline_ns).await
    }

    async fn sample(&mut self, rate: f64) -> Result<Option<Sample>, Error> {
        self.stepper.sample_at(rate).await
    }

    async fn keep(&mut self, search: &Search) -> Result<(), Error> {
        if let Some(store) = &self.store {
            analysis::capacity::put_search(store, search).await?;
        }
        Ok(())
    }

    fn stopped(&self) -> bool {
        self.stepper.shutdown.state() != Stop::Running
    }

    fn event(&mut self, event: Event<'_>) {
        let line = capacity::words::event(event);
        // A comparison's lines name their target; its rounds are the comparison's own.
        match &self.name {
            Some(name) if !matches!(event, Event::Round { .. }) => eprint!(
                "{}",
                crate::output::shown(&format!("  [{name}] {}", line.trim_start()))
            ),
            _ => eprint!("{}", crate::output::shown(&line)),
        }
    }
}

/// What limited the server in the kept run `id`, over its judged window.
async fn step_limit(
    store: &Store,
    id: &str,
    warmup: Duration,
    window: Duration,
) -> Option<analysis::capacity::StepLimit> {
    capacity::step::limit_of(&store.load_run(id).await.ok()?, warmup, window)
}

/// What a search is called by default: its one URL, or its mix.
pub(crate) fn target(sending: &Sending) -> String {
    match sending.mix.specs() {
        [one] => format!("{}{}", sending.mix.origin(), one.path_text),
        many => format!(
            "{} kinds of request to {}",
            many.len(),
            sending.mix.origin()
        ),
    }
}

/// The SLO a search's steps are judged on; `Err` names a term they cannot judge (the
/// server's own figures are a whole run's).
pub(crate) fn searched_slo(wanted: &order::Search) -> Result<Slo, Error> {
    for t in &wanted.slo {
        analysis::capacity::slo::search_term(t).map_err(prepare::Refusal::from)?;
    }
    Ok(Slo {
        terms: wanted.slo.clone(),
    })
}

/// Runs the searches `order` describes (`wanted`, its work), keeping them (and reporting each
/// step on standard error).
pub async fn search(
    order: &order::Order,
    wanted: &order::Search,
    shutdown: &Shutdown,
    command_line: &[String],
) -> Result<Repeated, Error> {
    if !wanted.against.is_empty() {
        return Err(prepare::Refusal::AgainstInSearch.into());
    }
    let slo = searched_slo(wanted)?;
    let mut keeping = prepare::keeping(order, command_line)?;
    let sending = Sending::of(&order.requests, &order.pacing)?;
    let naming = naming_of(&mut keeping, target(&sending));
    bounded(wanted)?;
    let store = store_of(&keeping, wanted.guns.is_some()).await?;
    let stepper = Stepper {
        sending: &sending,
        keeping,
        slo: &slo,
        warmup: Duration::from_nanos(wanted.warmup_ns),
        shutdown,
    };
    let mut volleys = volleys_of(wanted, order, store.as_ref(), &stepper, &naming).await?;
    // The guns are closed on every way out, so that each is told goodbye (a Job's pods end
    // well rather than find their connection lost).
    let searched = async {
        let start = first_rate(wanted, volleys.as_ref(), &stepper, &naming.target).await?;
        let plan = plan_for(wanted, &sending, &slo, start, naming);
        repeated(plan, wanted, store, stepper, volleys.as_mut()).await
    }
    .await;
    if let Some(v) = volleys {
        v.firing.close().await;
    }
    searched
}

/// What a search is called, labelled and kept under.
struct Naming {
    id: String,
    name: String,
    target: String,
    labels: BTreeMap<String, String>,
    experiment: Option<String>,
}

/// The naming of a search of `target` kept as `keeping` says, which is left naming it.
fn naming_of(keeping: &mut Keeping, target: String) -> Naming {
    // The caller's run id names the search (the experiment runner's cell); its steps get
    // ids of their own.
    let id = keeping.run_id.take().unwrap_or_else(store::RunMeta::new_id);
    let labels = keeping.labels.clone();
    let name = keeping
        .name
        .clone()
        .unwrap_or_else(|| format!("capacity of {target}"));
    keeping.name = Some(name.clone());
    let experiment = keeping.experiment.clone();
    Naming {
        id,
        name,
        target,
        labels,
        experiment,
    }
}

/// The search's steps fired from its guns, when it has them and a store they share.
async fn volleys_of<'a>(
    wanted: &order::Search,
    order: &'a order::Order,
    store: Option<&Store>,
    stepper: &Stepper<'a>,
    naming: &Naming,
) -> Result<Option<Volleys<'a>>, Error> {
    let (Some(guns), Some(store), Some(url)) = (&wanted.guns, store, &stepper.keeping.store_url)
    else {
        return Ok(None);
    };
    Ok(Some(capacity::guns::Volleys {
        firing: ready_guns(guns, order, stepper.shutdown).await?,
        store: store.clone(),
        store_url: url.clone(),
        template: order,
        slo: stepper.slo,
        warmup: stepper.warmup,
        shutdown: stepper.shutdown,
        experiment: naming.experiment.clone(),
        labels: naming.labels.clone(),
        valid: None,
    }))
}

/// The plan of the search `naming` names, from `start` req/s (rounded, within its bounds).
fn plan_for(
    wanted: &order::Search,
    sending: &Sending,
    slo: &Slo,
    start: f64,
    naming: Naming,
) -> Plan {
    let start = bracket::round(start.clamp(wanted.min_rate, wanted.max_rate));
    let seed = analysis::capacity::random::seed_of(&naming.id);
    Plan {
        id: naming.id,
        name: naming.name,
        experiment: naming.experiment,
        target: naming.target,
        labels: naming.labels,
        slo: slo.clone(),
        settings: settings(wanted, sending, start, seed),
        max_steps: wanted.max_steps,
        budget: wanted.budget_ns.map(Duration::from_nanos),
        step: Duration::from_nanos(wanted.step_ns),
        resumed: Vec::new(),
        warm: warm(wanted),
        started_at_ns: capacity::now_ns(),
    }
}

/// Runs `plan` (a search kept under its id and not finished gone on with) as `wanted` repeats
/// it, its steps fired by `stepper` and kept in `store`, or from the guns.
async fn repeated(
    mut plan: Plan,
    wanted: &order::Search,
    store: Option<Store>,
    stepper: Stepper<'_>,
    volleys: Option<&mut Volleys<'_>>,
) -> Result<Repeated, Error> {
    if let Some(store) = &store {
        resume(&mut plan, store).await?;
    }
    eprintln!(
        "Searching {} of {} within {}: from {} req/s, until its 95 % interval is within ±{} %",
        plan.settings.figure(),
        plan.target,
        plan.slo,
        plan.settings.start,
        wanted.until * 100.0
    );
    let repeat = Repeat {
        searches: wanted.searches,
        until: wanted.until,
        budget: wanted.budget_ns.map(Duration::from_nanos),
        check: wanted.check,
    };
    let Some(volleys) = volleys else {
        return capacity::repeat(
            plan,
            repeat,
            &mut Live {
                stepper,
                store,
                name: None,
            },
            store::RunMeta::new_id,
        )
        .await;
    };
    from_guns(plan, repeat, volleys).await
}

/// The store a search is kept in, if any; with guns, one they share.
async fn store_of(keeping: &Keeping, guns: bool) -> Result<Option<Store>, Error> {
    let store = match &keeping.store_url {
        Some(url) => Some(Store::open(url).await?),
        None => None,
    };
    if guns {
        fleet::needs_shared_store(keeping.store_url.as_deref())?;
    }
    Ok(store)
}

/// A search's own bounds checked: its rates' range, its calibration check's blocks.
fn bounded(wanted: &order::Search) -> Result<(), Error> {
    if wanted.min_rate > wanted.max_rate {
        return Err(prepare::Refusal::RateRange.into());
    }
    let most = analysis::capacity::check::MAX_BLOCKS;
    if wanted.check != 0 && (wanted.check < 4 || wanted.check > most) {
        return Err(prepare::Refusal::CheckBlocks {
            check: wanted.check,
            most,
        }
        .into());
    }
    if wanted.check != 0 && wanted.searches > 1 {
        return Err(prepare::Refusal::CheckOfSearches.into());
    }
    Ok(())
}

/// The search's guns made ready, each reaching the order's first target.
async fn ready_guns(
    guns: &order::Guns,
    order: &order::Order,
    shutdown: &Shutdown,
) -> Result<fleet::Fleet, Error> {
    let local = crate::environment::find_loadgen()?;
    let settings = crate::environment::guns_settings();
    let preparing = fleet::Preparing {
        guns,
        dir: std::path::Path::new("."),
        local: &local,
        reach: order.requests.entries.first().map(|r| r.url.expose()),
        settings: &settings,
    };
    // A gun's name, node and version come from the gun: shown, not obeyed.
    let prepared = fleet::prepare(preparing, shutdown.stopping(), &mut |progress| {
        eprint!("{}", crate::output::shown(&progress.to_string()))
    })
    .await?;
    prepared.ok_or(Error::GunsStopped)
}

/// The search's first rate: the order's, or what a short closed loop served (from the guns,
/// when it has them).
async fn first_rate(
    wanted: &order::Search,
    volleys: Option<&Volleys<'_>>,
    stepper: &Stepper<'_>,
    target: &str,
) -> Result<f64, Error> {
    if let Some(rate) = wanted.start {
        return Ok(rate);
    }
    eprintln!("Estimating a first rate: a closed loop of 16 connections for 2 s…");
    let estimate = match volleys {
        Some(v) => v.estimate().await?,
        None => stepper.estimate().await?,
    };
    estimate.ok_or_else(|| Error::NoAnswer {
        target: target.to_string(),
    })
}

/// A search kept under `plan`'s id and not finished (killed, interrupted) goes on from its
/// last finished step, with the bracket its steps made.
async fn resume(plan: &mut Plan, store: &Store) -> Result<(), Error> {
    let Some(kept) = analysis::capacity::search(store, &plan.id).await? else {
        return Ok(());
    };
    // Only the same search goes on: the same SLO and settings (its start aside, which the
    // first search chose). Steps measured otherwise are not mixed into it. (The target is
    // the id's to say: an experiment's requests file is a new path each time.)
    let same = kept.slo == plan.slo
        && kept.settings
            == Settings {
                start: kept.settings.start,
                ..plan.settings.clone()
            };
    if matches!(kept.status, Status::Running | Status::Interrupted) {
        if same {
            plan.resumed = kept.steps;
            plan.started_at_ns = kept.started_at_ns;
        } else {
            eprintln!(
                "Note: the search kept as {} was run with another SLO or settings: this one starts afresh under that id.",
                plan.id
            );
        }
    }
    Ok(())
}

/// The searches repeated from the guns; one the guns could not take further says how many
/// guns it would take.
async fn from_guns(
    plan: Plan,
    repeat: Repeat,
    volleys: &mut Volleys<'_>,
) -> Result<Repeated, Error> {
    let mut repeated = capacity::repeat(plan, repeat, volleys, store::RunMeta::new_id).await?;
    for search in &mut repeated.searches {
        if search.status == Status::GeneratorLimited {
            if let Some(more) = volleys.more_guns(search) {
                search.reason = format!("{}; {more}", search.reason);
                analysis::capacity::put_search(&volleys.store, search).await?;
            }
        }
    }
    Ok(repeated)
}

/// A search's steps fired from its guns.
type Volleys<'a> = capacity::guns::Volleys<'a, fleet::Fleet>;

/// How long `wanted` warms its server before the first step at most (`None`: not at all).
pub(crate) fn warm(wanted: &order::Search) -> Option<Duration> {
    (wanted.settle_ns > 0).then(|| Duration::from_nanos(wanted.settle_ns))
}

/// The settings of a search `wanted` of `sending`'s requests from `start` with `seed`.
pub(crate) fn settings(
    wanted: &order::Search,
    sending: &Sending,
    start: f64,
    seed: u64,
) -> Settings {
    Settings {
        start,
        resolution: wanted.resolution,
        step_s: Duration::from_nanos(wanted.step_ns).as_secs_f64(),
        warmup_s: Duration::from_nanos(wanted.warmup_ns).as_secs_f64(),
        min_rate: wanted.min_rate,
        max_rate: wanted.max_rate,
        growth: 2.0,
        arrival: Some(Arrival::of(sending.arrivals, sending.batch)),
        p: wanted.p,
        until: wanted.until,
        grid: 1.02,
        seed,
    }
}
