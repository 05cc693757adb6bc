//! A search's steps fired from gun hosts (the `fleet` crate), through its `Firing` seam: each
//! step's rate split across the guns from one start, kept as a run group, and judged on the
//! group's merged histograms and on every gun's own validity, so that the guns together are
//! the generator whose limit a search may reach. Recovery and the first estimate are a trickle
//! from the first gun (the target may be reachable from the guns only).

use std::collections::BTreeMap;
use std::time::Duration;

use analysis::capacity::warm::Sample;
use analysis::capacity::{judge, Search, Slo};
use fleet::Firing;
use store::model::IntervalStats;
use store::Store;

use super::search::{Event, Stepped, Steps};
use super::step::interval_for;
use crate::engine::shutdown::{Shutdown, Stop};
use crate::error::Error;

/// The guns' steps, fired by `firing` (the guns: `fleet::Fleet`).
#[derive(Debug)]
pub struct Volleys<'a, F: Firing> {
    pub firing: F,
    pub store: Store,
    pub store_url: String,
    /// The search's order: its requests, pacing and probes are every step's.
    pub template: &'a order::Order,
    pub slo: &'a Slo,
    pub warmup: Duration,
    pub shutdown: &'a Shutdown,
    pub experiment: Option<String>,
    pub labels: BTreeMap<String, String>,
    /// Each step's highest rate every gun kept its schedule at, for the guns it would take.
    pub valid: Option<f64>,
}

impl<F: Firing> Volleys<'_, F> {
    /// Turns true when the user stops the search: the guns' standard input closes.
    fn stop(&self) -> tokio::sync::watch::Receiver<bool> {
        self.shutdown.stopping()
    }

    /// The search's order with `load` as its work.
    fn with_load(&self, load: order::Load, interval: Duration, grace: Duration) -> order::Order {
        let mut o = self.template.clone();
        o.work = order::Work::Attack(order::Attack {
            load,
            interval_ns: order::nanos(interval),
            grace_ns: order::nanos(grace),
            max_lateness_ns: None,
            start_at_ns: None,
            slo: Vec::new(),
        });
        o.shard = None;
        o
    }

    /// A short run from the first gun, not kept: its summary.
    async fn trickle(&self, load: order::Load) -> Result<Option<store::summary::Summary>, Error> {
        let mut o = self.with_load(load, Duration::from_millis(500), Duration::from_secs(1));
        o.keeping = order::Keeping::default();
        o.probes = None;
        let fired = self.firing.one(&o, self.stop()).await?;
        Ok(fired.summary().filter(|s| s.requests.ok > 0).cloned())
    }

    /// The first rate to try: half of what 16 connections of a closed loop from the first
    /// gun served in 2 s (the server's pace, whichever gun asks).
    pub async fn estimate(&self) -> Result<Option<f64>, Error> {
        let served = self
            .trickle(order::Load::Closed {
                connections: 16,
                requests: None,
                duration_ns: Some(2_000_000_000),
            })
            .await?;
        Ok(served
            .map(|s| s.requests.throughput / 2.0)
            .filter(|r| *r >= 1.0))
    }

    /// How many guns a rate the guns could not drive would take, at what each drove validly.
    pub fn more_guns(&self, search: &Search) -> Option<String> {
        let limit = search.generator_limit?;
        let valid = self.valid?;
        let n = self.firing.count();
        let each = valid / n as f64;
        if each <= 0.0 {
            return None;
        }
        let needed = (limit / each).ceil() as usize;
        Some(format!(
            "the {n} guns kept their schedule up to {valid} req/s, about {each:.0} each: {limit} req/s would take about {needed} guns ({} more)",
            needed.saturating_sub(n).max(1)
        ))
    }
}

/// The steady window's intervals (as one generator's step has them).
fn steady(run: &store::run::StoredRun, warmup: Duration, window: Duration) -> Vec<IntervalStats> {
    let interval = Duration::from_nanos(run.meta.interval_ns);
    let at = |ns: i64| Duration::from_nanos(ns.max(0) as u64);
    run.intervals
        .iter()
        .filter(|i| super::step::steady(at(i.start_ns), at(i.length_ns), warmup, window, interval))
        .map(|i| i.stats.clone())
        .collect()
}

impl<F: Firing> Volleys<'_, F> {
    /// Step `number` of `search`'s order: `rate` req/s over the warm-up and `window`, its
    /// run kept in the store under the step's name and labels.
    fn step_order(
        &self,
        search: &Search,
        number: u32,
        rate: f64,
        window: Duration,
        interval: Duration,
    ) -> order::Order {
        let load = order::Load::Open {
            schedule: order::Schedule::Constant {
                rate,
                duration_ns: Some(order::nanos(self.warmup + window)),
            },
            requests: None,
        };
        let mut step = self.with_load(load, interval, Duration::from_secs(3));
        if step.pacing.ready_connections.is_none() {
            // Little's law for the whole rate, shared by the guns.
            let cap = step
                .pacing
                .max_connections
                .map_or(usize::MAX, |c| c as usize);
            let all = super::step::ready_connections(rate, self.slo, cap);
            let guns = self.firing.count().max(1);
            step.pacing.ready_connections = Some(all.div_ceil(guns) as u64);
        }
        let mut labels = self.labels.clone();
        labels.remove("rate");
        labels.insert(analysis::capacity::label::SEARCH.into(), search.id.clone());
        labels.insert(analysis::capacity::label::STEP.into(), number.to_string());
        labels.insert("rate".into(), rate.to_string());
        step.keeping = order::Keeping {
            store: Some(order::StoreAt::Url {
                url: order::Secret(self.store_url.clone()),
            }),
            name: Some(format!("{} step {number}: {rate} req/s", search.name)),
            experiment: self.experiment.clone(),
            run_id: None,
            labels,
        };
        step
    }

    /// Step `number`'s run group `group`, merged from the store and judged over its steady
    /// window; `limit` is the generator limit a gun met.
    async fn judged(
        &self,
        number: u32,
        rate: f64,
        window: Duration,
        interval: Duration,
        group: String,
        limit: Option<String>,
    ) -> Result<Stepped, Error> {
        let merged = analysis::group::load_group(&self.store, &group).await?;
        let Some(summary) = merged.summary.clone() else {
            return Err(Error::GroupWithoutSummary {
                step: number,
                group,
            });
        };
        let judgement = judge::judge(
            self.slo,
            &steady(&merged, self.warmup, window),
            interval.as_secs_f64(),
            rate,
            limit,
        );
        let step_limit = (judgement.verdict != analysis::capacity::Verdict::Pass)
            .then(|| super::step::limit_of(&merged, self.warmup, window))
            .flatten();
        Ok(Stepped {
            judgement,
            p50_ns: summary.latency.corrected.p50_ns,
            run_id: Some(group),
            window,
            limit: step_limit,
            host: None,
        })
    }
}

/// The first generator limit the guns' shots met, as `gun …: why`; an error for a gun that
/// fired nothing or sent no summary.
fn shots_limit(shots: Vec<fleet::Shot>) -> Result<Option<String>, Error> {
    let count = shots.len();
    let mut limit = None;
    for (i, shot) in shots.into_iter().enumerate() {
        let gun = format!("gun {} ({}/{count})", shot.gun, i + 1);
        let fired = match shot.fired {
            Ok(fired) => fired,
            Err(why) => return Err(Error::Shot { gun, why }),
        };
        let summary = fired.summary().ok_or_else(|| Error::NoSummary {
            gun: gun.clone(),
            said: fired.said.clone(),
        })?;
        if limit.is_none() {
            limit = judge::generator_limit(summary).map(|why| format!("{gun}: {why}"));
        }
    }
    Ok(limit)
}

impl<F: Firing> Steps for Volleys<'_, F> {
    async fn run(
        &mut self,
        search: &Search,
        number: u32,
        rate: f64,
        window: Duration,
    ) -> Result<Option<Stepped>, Error> {
        let interval = interval_for(window);
        let group = store::RunMeta::new_id();
        let step = self.step_order(search, number, rate, window, interval);
        let shots = self.firing.volley(&step, &group, self.stop(), None).await?;
        if self.shutdown.state() != Stop::Running {
            return Ok(None);
        }
        let limit = shots_limit(shots)?;
        if limit.is_none() {
            self.valid = Some(self.valid.map_or(rate, |v| v.max(rate)));
        }
        let stepped = self
            .judged(number, rate, window, interval, group, limit)
            .await?;
        Ok(Some(stepped))
    }

    async fn sample(&mut self, rate: f64) -> Result<Option<Sample>, Error> {
        let load = order::Load::Open {
            schedule: order::Schedule::Constant {
                rate,
                duration_ns: Some(1_000_000_000),
            },
            requests: None,
        };
        Ok(self.trickle(load).await?.map(|s| Sample {
            p50_ns: s.latency.corrected.p50_ns,
            p99_ns: s.latency.corrected.p99_ns,
        }))
    }

    async fn recover(&mut self, baseline_ns: Option<u64>) -> Result<Option<Duration>, Error> {
        let shutdown = self.shutdown;
        let this = &*self;
        super::step::recover(shutdown, baseline_ns, || async move {
            let trickle = order::Load::Open {
                schedule: order::Schedule::Constant {
                    rate: super::step::TRICKLE_RATE,
                    duration_ns: Some(super::step::TRICKLE.as_nanos() as u64),
                },
                requests: None,
            };
            Ok(this
                .trickle(trickle)
                .await?
                .map(|s| s.latency.corrected.p50_ns))
        })
        .await
    }

    async fn keep(&mut self, search: &Search) -> Result<(), Error> {
        analysis::capacity::put_search(&self.store, search).await?;
        Ok(())
    }

    fn stopped(&self) -> bool {
        self.shutdown.state() != Stop::Running
    }

    fn event(&mut self, event: Event<'_>) {
        eprint!("{}", crate::output::shown(&super::words::event(event)));
    }
}
