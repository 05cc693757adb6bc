//! The guns made ready, once for both callers (the experiment runner's `[guns]`, `loadgen
//! capacity --gun`): checked, resolved into their transport, every gun opened and made ready at
//! once, their CPUs and clocks held to what was asked, each described. A stop ends it at once
//! (its links with it); what it does, and what the transport says meanwhile (a Job's pods
//! awaited, a pod refused: sent on a channel the transport is given when it is opened, [`of`]),
//! is told to the caller's callback ([`Progress`]), which the caller words its own way. What
//! the caller's environment says of the guns' files comes in as values
//! ([`Settings`](crate::Settings)).

use std::time::Duration;

use tokio::sync::{mpsc, watch};

use crate::backend::backend;
use crate::error::{FleetError, GunFault};
use crate::preparing::Preparing;
use crate::progress::Progress;
use crate::ready::{build_of, CLOCK_TOLERANCE};
use crate::ready::{ready, ReadyGun};
use crate::transport::Transport;
use crate::volley::Fleet;

/// What can be checked of `guns` before anything is opened (what serde cannot).
pub fn check(guns: &order::Guns) -> Result<(), FleetError> {
    check_hosts(&guns.hosts)?;
    if guns.threads == Some(0) {
        return Err(FleetError::Threads);
    }
    if guns.clock_tolerance_ns == Some(0) {
        return Err(FleetError::ClockTolerance);
    }
    cpus(guns)?;
    Ok(())
}

fn cpus(guns: &order::Guns) -> Result<Option<probe::cpus::CpuList>, FleetError> {
    guns.cpus
        .as_deref()
        .map(str::parse)
        .transpose()
        .map_err(FleetError::Cpus)
}

/// Checks the guns, opens their transport, and makes every gun ready (see the crate's doc);
/// `None` when `stop` turned true meanwhile (every link opened so far is ended).
pub async fn prepare(
    preparing: Preparing<'_>,
    stop: watch::Receiver<bool>,
    progress: &mut (dyn FnMut(Progress) + Send),
) -> Result<Option<Fleet>, FleetError> {
    check(preparing.guns)?;
    let (told, said) = mpsc::unbounded_channel();
    let transport = of(preparing, told)?;
    prepare_told(transport, said, preparing, stop, progress).await
}

/// [`prepare`] over a transport already opened (a test's), which tells nothing of its own
/// meanwhile.
pub async fn prepare_over(
    transport: Box<dyn Transport>,
    preparing: Preparing<'_>,
    stop: watch::Receiver<bool>,
    progress: &mut (dyn FnMut(Progress) + Send),
) -> Result<Option<Fleet>, FleetError> {
    let (_, said) = mpsc::unbounded_channel();
    prepare_told(transport, said, preparing, stop, progress).await
}

/// [`prepare_over`], what the transport tells meanwhile (`said`: the pods awaited, one
/// refused) passed on to `progress` as it comes.
pub(crate) async fn prepare_told(
    transport: Box<dyn Transport>,
    mut said: mpsc::UnboundedReceiver<Progress>,
    preparing: Preparing<'_>,
    stop: watch::Receiver<bool>,
    progress: &mut (dyn FnMut(Progress) + Send),
) -> Result<Option<Fleet>, FleetError> {
    progress(Progress::Preparing {
        over: transport.over(),
        guns: transport.names(),
    });
    // Connecting and installing a build can take minutes: a stop ends it at once, the links
    // opened so far with it.
    let mut stopping = stop;
    let readying = ready_all(transport, preparing);
    tokio::pin!(readying);
    let readied = loop {
        tokio::select! {
            prepared = &mut readying => break prepared,
            Ok(_) = stopping.wait_for(|s| *s) => return Ok(None),
            Some(told) = said.recv() => progress(told),
        }
    };
    // What was told just before the end, said before the end itself.
    while let Ok(told) = said.try_recv() {
        progress(told);
    }
    let fleet = readied?;
    for line in fleet.describe() {
        progress(Progress::Ready(line));
    }
    Ok(Some(fleet))
}

/// Every gun of `transport` opened and made ready at once; the first refusal, by the guns'
/// order, ends them all.
async fn ready_all(
    transport: Box<dyn Transport>,
    preparing: Preparing<'_>,
) -> Result<Fleet, FleetError> {
    let guns = preparing.guns;
    let cpus = cpus(guns)?;
    let tolerance = guns
        .clock_tolerance_ns
        .map_or(CLOCK_TOLERANCE, Duration::from_nanos);
    let build = build_of(preparing.local).map_err(|error| FleetError::Read {
        path: preparing.local.to_path_buf(),
        error,
    })?;
    let opening = &*transport;
    let readying =
        (0..opening.names().len()).map(|n| ready_one(opening, n, preparing, &build, cpus.as_ref()));
    let readied = futures_util::future::join_all(readying).await;
    let ready_guns = all_or_none(readied, tolerance).await?;
    Ok(Fleet {
        guns: ready_guns,
        over: transport.over(),
        hosts: transport.hosts(),
        cpus: guns.cpus.clone(),
        threads: guns.threads,
        store_env_file: guns
            .store_env_file
            .clone()
            .or_else(|| transport.store_env_file()),
        loadgen: guns.loadgen.clone(),
        clock_tolerance_ns: guns.clock_tolerance_ns,
        _transport: transport,
    })
}

/// Gun `n` of `opening` opened and made ready; refused when it lacks `cpus` (its link closed).
async fn ready_one(
    opening: &dyn Transport,
    n: usize,
    preparing: Preparing<'_>,
    build: &str,
    cpus: Option<&probe::cpus::CpuList>,
) -> Result<ReadyGun, FleetError> {
    let link = opening.open(n).await?;
    let gun = ready(
        link,
        preparing.local,
        build,
        preparing.guns.loadgen.as_deref(),
        preparing.reach,
    )
    .await?;
    if let Some(cpus) = cpus {
        let have: probe::cpus::CpuList = gun.check.cpus.parse().unwrap_or_default();
        if cpus.intersection(&have).len() != cpus.len() {
            let why = GunFault::Cpus {
                asked: cpus.to_string(),
                have: gun.check.cpus.clone(),
            };
            let name = gun.link.name().to_string();
            gun.link.close().await;
            return Err(FleetError::remote(&name, why));
        }
    }
    Ok(gun)
}

/// The guns readied, or the first refusal by the guns' order (then the first clock off by
/// more than `tolerance`), every ready gun's link closed with it.
async fn all_or_none(
    readied: Vec<Result<ReadyGun, FleetError>>,
    tolerance: Duration,
) -> Result<Vec<ReadyGun>, FleetError> {
    let mut ready_guns = Vec::new();
    let mut first_error = None;
    for readied in readied {
        match readied {
            Ok(gun) => ready_guns.push(gun),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    let refused = first_error.or_else(|| {
        ready_guns
            .iter()
            .find(|g| g.offset_ns.unsigned_abs() as u128 > tolerance.as_nanos())
            .map(|g| {
                FleetError::remote(
                    g.link.name(),
                    GunFault::ClockOff {
                        offset_ns: g.offset_ns,
                        tolerance,
                    },
                )
            })
    });
    if let Some(e) = refused {
        for g in ready_guns {
            g.link.close().await;
        }
        return Err(e);
    }
    Ok(ready_guns)
}

/// The transport the guns of `preparing` name, their lab read from its `dir` (an experiment
/// file's directory; the current one for flags), with its settings, opened by their backend
/// (chosen by `backend::backend`, the one place a transport is chosen). What it tells while
/// the guns are made ready goes to `told`.
pub fn of(
    preparing: Preparing<'_>,
    told: mpsc::UnboundedSender<Progress>,
) -> Result<Box<dyn Transport>, FleetError> {
    backend(&preparing.guns.hosts).open(preparing, told)
}

/// What the transport an order's guns name can check before anything is opened (its
/// backend's check).
fn check_hosts(hosts: &order::GunHosts) -> Result<(), FleetError> {
    backend(hosts).check()
}

/// The guns keep their shards in one store that every gun reaches: refused unless `url` is a
/// PostgreSQL one (a SQLite file cannot be shared, and no store is none).
pub fn needs_shared_store(url: Option<&str>) -> Result<(), FleetError> {
    match url {
        Some(url) if url.starts_with("postgres") => Ok(()),
        _ => Err(FleetError::UnsharedStore),
    }
}
