//! An order made ready: the one place where an [`order::Order`] (from the flags of `attack` or
//! `capacity`, from the experiment runner, from a gun's SSH session) becomes the engine's plan
//! and the way its run is kept. Every check of what an order asks lives here, so that a flag, a
//! cell of an experiment file and an order over SSH are refused with the same line.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::engine::arrivals::Process;
use crate::engine::attack::{AttackPlan, Load};
use crate::engine::request::RequestMix;
use crate::engine::schedule::Schedule;
use crate::error::Error;
use crate::keep::probes::ProbeTarget;
use crate::keep::Keeping;

pub use crate::error::{Refusal, DEFAULT_MAX_CONNECTIONS, MAX_CONNECTIONS, MAX_THREADS};

/// `n` connections, refused above [`MAX_CONNECTIONS`] whatever the order came from.
fn connections(n: u64, what: &'static str) -> Result<usize, Error> {
    usize::try_from(n)
        .ok()
        .filter(|_| n <= MAX_CONNECTIONS)
        .ok_or(Error::Refused(Refusal::Connections { what, n }))
}

/// The number of CPUs this process may run on.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// What to send and how: an order's requests and pacing, checked, for any load (an attack's,
/// every step of a search, a trickle between them).
#[derive(Debug, Clone)]
pub struct Sending {
    pub mix: RequestMix,
    pub threads: usize,
    pub max_connections: usize,
    /// Opened before the first request (a search's steps: Little's law when `None`).
    pub ready_connections: Option<usize>,
    pub h2: bool,
    pub insecure: bool,
    pub keepalive: bool,
    pub timeout: Duration,
    pub batch: Duration,
    pub arrivals: Process,
}

impl Sending {
    pub fn of(requests: &order::Requests, pacing: &order::Pacing) -> Result<Sending, Error> {
        if pacing.timeout_ns == 0 {
            return Err(Refusal::Timeout.into());
        }
        if pacing.arrival == Process::Poisson && pacing.batch_ns > 0 {
            return Err(Refusal::PoissonBatched.into());
        }
        if let Some(t) = pacing.threads.filter(|t| u64::from(*t) > MAX_THREADS) {
            return Err(Refusal::Threads(t).into());
        }
        Ok(Sending {
            mix: RequestMix::from_order(requests)?,
            threads: pacing
                .threads
                .map_or_else(default_threads, |t| (t as usize).max(1)),
            max_connections: match pacing.max_connections {
                Some(c) => connections(c, "max_connections")?,
                None => DEFAULT_MAX_CONNECTIONS,
            },
            ready_connections: pacing
                .ready_connections
                .map(|c| connections(c, "ready_connections"))
                .transpose()?,
            h2: pacing.h2,
            insecure: pacing.insecure,
            keepalive: pacing.keepalive,
            timeout: Duration::from_nanos(pacing.timeout_ns),
            batch: Duration::from_nanos(pacing.batch_ns),
            arrivals: pacing.arrival,
        })
    }

    /// A plan of `load` with these requests and connections.
    pub fn plan(&self, load: Load, interval: Duration, grace: Duration) -> AttackPlan {
        let closed = matches!(load, Load::Closed { .. });
        AttackPlan {
            mix: self.mix.clone(),
            load,
            threads: self.threads,
            max_connections: self.max_connections,
            ready_connections: self.ready_connections.unwrap_or(0),
            h2: self.h2,
            insecure: self.insecure,
            keepalive: self.keepalive,
            timeout: self.timeout,
            interval,
            grace,
            max_lateness: None,
            // A closed loop sends when answered: no grid, no arrival process.
            batch: if closed { Duration::ZERO } else { self.batch },
            arrivals: if closed {
                Process::default()
            } else {
                self.arrivals
            },
            shard: (0, 1),
        }
    }
}

/// The engine's load for an order's.
pub fn load(load: &order::Load, arrival: Process) -> Result<Load, Error> {
    Ok(match load {
        order::Load::Closed {
            connections,
            requests,
            duration_ns,
        } => {
            if arrival == Process::Poisson {
                return Err(Refusal::PoissonClosed.into());
            }
            if requests.is_none() && duration_ns.is_none() {
                return Err(Refusal::ClosedWithoutEnd.into());
            }
            if *connections == 0 {
                return Err(Refusal::NoConnection.into());
            }
            Load::Closed {
                connections: self::connections(*connections, "connections")?,
                requests: *requests,
                duration: duration_ns.map(Duration::from_nanos),
            }
        }
        order::Load::Open { schedule, requests } => {
            let schedule = match schedule {
                order::Schedule::Constant { rate, duration_ns } => {
                    if requests.is_none() && duration_ns.is_none() {
                        return Err(Refusal::RateWithoutEnd.into());
                    }
                    Schedule::constant(*rate, duration_ns.map(Duration::from_nanos))?
                }
                order::Schedule::Ramp {
                    from,
                    to,
                    duration_ns,
                } => Schedule::ramp(*from, *to, Duration::from_nanos(*duration_ns))?,
                order::Schedule::Steps { rates, each_ns } => {
                    let steps: Vec<(f64, Duration)> = rates
                        .iter()
                        .map(|&r| (r, Duration::from_nanos(*each_ns)))
                        .collect();
                    Schedule::steps(&steps)?
                }
            };
            Load::Open {
                schedule,
                requests: *requests,
            }
        }
    })
}

/// The plan of an attack order.
pub fn attack(order: &order::Order, attack: &order::Attack) -> Result<AttackPlan, Error> {
    let load = load(&attack.load, order.pacing.arrival)?;
    if attack.interval_ns < 10_000_000 {
        return Err(Refusal::Interval.into());
    }
    let sending = Sending::of(&order.requests, &order.pacing)?;
    let mut plan = sending.plan(
        load,
        Duration::from_nanos(attack.interval_ns),
        Duration::from_nanos(attack.grace_ns),
    );
    plan.max_lateness = attack.max_lateness_ns.map(Duration::from_nanos);
    plan.shard = order.shard.as_ref().map_or((0, 1), |s| (s.index, s.count));
    if plan.shard.1 == 0 || plan.shard.0 >= plan.shard.1 {
        return Err(Refusal::Shard.into());
    }
    Ok(plan)
}

/// A token is only sent over TLS that checks the probe is the one meant.
pub fn check_probe_trust(token: bool, trust: bool) -> Result<(), Error> {
    if token && !trust {
        return Err(Refusal::TokenWithoutTrust.into());
    }
    Ok(())
}

/// How an order's run is kept and watched; `command_line` is what was typed (redacted here).
pub fn keeping(order: &order::Order, command_line: &[String]) -> Result<Keeping, Error> {
    let k = &order.keeping;
    let store_url = match &k.store {
        None => None,
        Some(order::StoreAt::Url { url }) => Some(url.expose().to_string()),
        Some(order::StoreAt::GunFile { path }) => {
            return Err(Refusal::GunStore(path.clone()).into())
        }
    };
    let mut keeping = Keeping {
        store_url,
        name: k.name.clone(),
        experiment: k.experiment.clone(),
        run_id: k.run_id.clone(),
        labels: k.labels.clone(),
        command_line: redact::command_line(command_line),
        ..Default::default()
    };
    if let Some(p) = order.probes.as_ref().filter(|p| !p.addresses.is_empty()) {
        if keeping.store_url.is_none() {
            return Err(Refusal::ProbesWithoutStore.into());
        }
        check_probe_trust(p.token.is_some(), p.trust.is_some())?;
        let trust = match &p.trust {
            Some(order::ProbeTrust::Fingerprint { hex }) => Some(probe::tls::Trust::Fingerprint(
                probe::tls::parse_fingerprint(hex).map_err(Refusal::Fingerprint)?,
            )),
            Some(order::ProbeTrust::Ca { pem }) => Some(probe::tls::Trust::CaPem(pem.clone())),
            None => None,
        };
        let tls = trust
            .map(|t| probe::tls::ClientTls::new(&t))
            .transpose()
            .map_err(Refusal::ProbeTls)?;
        let token = p.token.as_ref().map(|t| t.expose().trim().to_string());
        keeping.probes = p
            .addresses
            .iter()
            .map(|address| ProbeTarget {
                address: address.clone(),
                token: token.clone(),
                tls: tls.clone(),
            })
            .collect();
        keeping.pre_roll = Duration::from_nanos(p.pre_roll_ns);
        keeping.post_roll = Duration::from_nanos(p.post_roll_ns);
        keeping.profile = p.profile;
    }
    if let Some(s) = &order.shard {
        keeping.shard = Some(store::run::Shard {
            group: s.group.clone(),
            index: s.index,
            count: s.count,
        });
    }
    if let order::Work::Attack(order::Attack {
        start_at_ns: Some(at),
        ..
    }) = &order.work
    {
        keeping.start_at = Some(UNIX_EPOCH + Duration::from_nanos((*at).max(0) as u64));
    }
    Ok(keeping)
}

/// An instant as an order carries it.
pub fn unix_ns(at: SystemTime) -> i64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn requests() -> order::Requests {
        order::Requests {
            entries: vec![order::Request {
                url: order::Secret("http://127.0.0.1:9/".into()),
                weight: 1,
                method: None,
                headers: Default::default(),
                body: order::Secret(String::new()),
            }],
            headers: Vec::new(),
        }
    }

    fn refused(pacing: order::Pacing) -> String {
        match Sending::of(&requests(), &pacing) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("{pacing:?} was taken"),
        }
    }

    /// An order from a file or a pipe is held to the flags' limits.
    #[test]
    fn an_order_asking_for_too_many_threads_or_connections_is_refused() {
        let threads = refused(order::Pacing {
            threads: Some(5000),
            ..order::Pacing::default()
        });
        assert!(
            threads.contains("threads 5000 is more than 1024"),
            "{threads}"
        );
        let cap = refused(order::Pacing {
            max_connections: Some(MAX_CONNECTIONS + 1),
            ..order::Pacing::default()
        });
        assert!(cap.contains("max_connections 1000001"), "{cap}");
        let closed = order::Load::Closed {
            connections: u64::MAX,
            requests: Some(1),
            duration_ns: None,
        };
        let error = load(&closed, Process::default())
            .err()
            .map(|e| e.to_string());
        assert!(
            error
                .as_deref()
                .is_some_and(|e| e.contains("more than 1000000 connections")),
            "{error:?}"
        );
        assert!(Sending::of(
            &requests(),
            &order::Pacing {
                threads: Some(1024),
                max_connections: Some(MAX_CONNECTIONS),
                ..order::Pacing::default()
            }
        )
        .is_ok());
    }
}
