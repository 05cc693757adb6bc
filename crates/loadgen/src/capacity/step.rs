//! One step of a search: a constant rate for the warm-up and the window, kept as an ordinary
//! run (labelled with the search and the step), its window's intervals judged against the SLO.
//! Also what lies between steps: the server's recovery, and the first rate's estimate.

use std::io;
use std::time::Duration;

use analysis::capacity::warm::Sample;
use analysis::capacity::{judge, Search, Slo};
use store::model::IntervalStats;
use store::summary::Summary;

use super::search::Stepped;
use crate::engine::attack::{IntervalSink, Load, Span};
use crate::engine::schedule::Schedule;
use crate::engine::shutdown::{Shutdown, Stop};
use crate::error::Error;
use crate::keep::{self, Keeping};
use crate::prepare::Sending;

/// Keeps every interval of a step in memory, with its place on the timeline, for its verdict.
#[derive(Default)]
struct Collect(Vec<(Span, IntervalStats)>);

impl IntervalSink for Collect {
    fn name(&self) -> String {
        "the step's verdict".into()
    }

    fn interval(&mut self, span: Span, stats: &IntervalStats) -> io::Result<()> {
        self.0.push((span, stats.clone()));
        Ok(())
    }
}

/// What steps share.
pub struct Stepper<'a> {
    /// The search's requests and pacing, checked once.
    pub sending: &'a Sending,
    /// How each step is kept: the store, the probes, the search's labels.
    pub keeping: Keeping,
    pub slo: &'a Slo,
    pub warmup: Duration,
    pub shutdown: &'a Shutdown,
}

/// Whether an interval (its start and length on the step's timeline) is in the step's steady
/// window: whole, after the warm-up and before the end (a hundredth of an interval's slack).
pub fn steady(
    start: Duration,
    length: Duration,
    warmup: Duration,
    window: Duration,
    interval: Duration,
) -> bool {
    let slack = interval / 100;
    start + slack >= warmup && start + length <= warmup + window + slack
}

/// What limited the server in a kept step's run, over the window the step was judged on (after
/// its warm-up, not the transient before it nor the drain after), from the target's, its
/// database's and the watched groups' probes; `None` without probes or a summary.
pub fn limit_of(
    run: &store::run::StoredRun,
    warmup: Duration,
    window: Duration,
) -> Option<analysis::capacity::StepLimit> {
    let end = (run.summary.as_ref()?.duration.attack_s * 1e9) as i64;
    let from = (warmup.as_nanos() as i64).min(end);
    let to = ((warmup + window).as_nanos() as i64).min(end);
    let f = analysis::system::System::of(&run.probes, from, to)?.finding();
    Some(analysis::capacity::StepLimit {
        limit: f.limit,
        short: f.short,
        why: f.evidence,
    })
}

/// The CPUs' mean clock from /proc/cpuinfo, MHz, where the kernel reports one.
fn cpu_mhz() -> Option<f64> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let clocks: Vec<f64> = info
        .lines()
        .filter(|l| l.starts_with("cpu MHz"))
        .filter_map(|l| l.split(':').nth(1)?.trim().parse().ok())
        .collect();
    (!clocks.is_empty()).then(|| clocks.iter().sum::<f64>() / clocks.len() as f64)
}

/// The host over a step, from its ticks before and after and the generator's own account.
fn host_over(
    before: Option<probe::cpus::Ticks>,
    after: Option<probe::cpus::Ticks>,
    summary: &Summary,
) -> Option<analysis::capacity::StepHost> {
    let (before, after) = (before?, after?);
    let total = after.all.1.checked_sub(before.all.1).filter(|t| *t > 0)? as f64;
    let busy = after.all.0.saturating_sub(before.all.0) as f64;
    let steal = after.steal.saturating_sub(before.steal) as f64;
    let others = summary.generator.others_share().map(|o| o * 100.0);
    Some(analysis::capacity::StepHost {
        steal_pct: 100.0 * steal / total,
        busy_pct: 100.0 * busy / total,
        cpu_mhz: cpu_mhz(),
        others_on_generator_pct: others,
        chase_ns: None,
    })
}

/// The intervals a step is recorded in: ten to a window, at most a second, at least 100 ms.
pub fn interval_for(window: Duration) -> Duration {
    (window / 10).clamp(Duration::from_millis(100), Duration::from_secs(1))
}

/// The connections a step opens before its first request: Little's law at the step's rate and
/// the SLO's longest latency bound (10 ms without one), what a passing step holds in flight
/// at most on average, so that its pool does not grow by hundreds in the first second (a
/// burst of connections that fills a server's accept queue and is blamed on its capacity).
/// The pool may still grow past it, up to `--max-connections`, while the server is slow.
pub fn ready_connections(rate: f64, slo: &Slo, max_connections: usize) -> usize {
    let bound_s = slo.latency_bound_ns().unwrap_or(10e6) / 1e9;
    let ready = (rate * bound_s).ceil();
    if ready.is_finite() && ready >= 1.0 {
        (ready as usize).min(max_connections)
    } else {
        1.min(max_connections)
    }
}

impl Stepper<'_> {
    /// Runs step `number` of `search` at `rate` for the warm-up and `window`, kept as a run
    /// labelled with the search and the step; `None` when stopped meanwhile.
    pub async fn run(
        &self,
        search: &Search,
        number: u32,
        rate: f64,
        window: Duration,
    ) -> Result<Option<Stepped>, Error> {
        let interval = interval_for(window);
        let load = Load::Open {
            schedule: Schedule::constant(rate, Some(self.warmup + window))?,
            requests: None,
        };
        let mut plan = self.sending.plan(load, interval, Duration::from_secs(3));
        plan.ready_connections = self
            .sending
            .ready_connections
            .unwrap_or_else(|| ready_connections(rate, self.slo, plan.max_connections));
        let mut keeping = self.keeping.clone();
        keeping.name = Some(format!("{} step {number}: {rate} req/s", search.name));
        keeping
            .labels
            .insert(analysis::capacity::label::SEARCH.into(), search.id.clone());
        keeping
            .labels
            .insert(analysis::capacity::label::STEP.into(), number.to_string());
        keeping.labels.insert("rate".into(), rate.to_string());
        let mut collect = Collect::default();
        let before = probe::cpus::Ticks::now();
        let done = keep::execute_with(&plan, &keeping, self.shutdown, &mut [&mut collect]).await?;
        let mut host = host_over(before, probe::cpus::Ticks::now(), &done.summary);
        if self.shutdown.state() != Stop::Running {
            return Ok(None);
        }
        // The memory's latency just after the step, while the server drains (a few ms of the
        // generator's CPU, none of the step's window).
        if let Some(h) = host.as_mut() {
            h.chase_ns = tokio::task::spawn_blocking(crate::chase::time_per_load)
                .await
                .ok();
        }
        let steady: Vec<IntervalStats> = collect
            .0
            .into_iter()
            .filter(|(span, _)| steady(span.start, span.length, self.warmup, window, interval))
            .map(|(_, stats)| stats)
            .collect();
        let judgement = judge::judge(
            self.slo,
            &steady,
            interval.as_secs_f64(),
            rate,
            judge::generator_limit(&done.summary),
        );
        Ok(Some(Stepped {
            judgement,
            p50_ns: done.summary.latency.corrected.p50_ns,
            run_id: done.run_id,
            window,
            limit: None,
            host,
        }))
    }

    /// A short run that is not kept: its median corrected latency, or `None` without answers.
    async fn sample(&self, load: Load) -> Result<Option<(u64, Summary)>, Error> {
        let plan = self
            .sending
            .plan(load, Duration::from_millis(500), Duration::from_secs(1));
        let done = keep::execute(&plan, &Keeping::default(), self.shutdown).await?;
        let s = done.summary;
        Ok((s.requests.ok > 0).then_some((s.latency.corrected.p50_ns, s)))
    }

    /// One second at `rate`, not kept: its median and p99 (corrected), or `None` without
    /// answers.
    pub async fn sample_at(&self, rate: f64) -> Result<Option<Sample>, Error> {
        let load = Load::Open {
            schedule: Schedule::constant(rate, Some(Duration::from_secs(1)))?,
            requests: None,
        };
        Ok(self.sample(load).await?.map(|(p50_ns, s)| Sample {
            p50_ns,
            p99_ns: s.latency.corrected.p99_ns,
        }))
    }

    /// Waits until the server has drained what an overloaded step left ([`recover`]), trickling
    /// from this host.
    pub async fn recover(&self, baseline_ns: Option<u64>) -> Result<Option<Duration>, Error> {
        recover(self.shutdown, baseline_ns, || async {
            let trickle = Load::Open {
                schedule: Schedule::constant(TRICKLE_RATE, Some(TRICKLE))?,
                requests: None,
            };
            Ok(self.sample(trickle).await?.map(|(p50, _)| p50))
        })
        .await
    }

    /// The first rate to try: half of what 16 connections of a closed loop served in 2 s.
    pub async fn estimate(&self) -> Result<Option<f64>, Error> {
        let closed = Load::Closed {
            connections: 16,
            requests: None,
            duration: Some(Duration::from_secs(2)),
        };
        Ok(self
            .sample(closed)
            .await?
            .map(|(_, s)| s.requests.throughput / 2.0)
            .filter(|r| *r >= 1.0))
    }
}

/// How many requests a second a recovery's trickle sends, and for how long.
pub const TRICKLE_RATE: f64 = 20.0;
pub const TRICKLE: Duration = Duration::from_millis(500);
/// The pause between two trickles that found the server still behind.
const BETWEEN_TRICKLES: Duration = Duration::from_millis(500);
/// The most trickles a recovery sends: about 30 s.
const TRICKLES: u32 = 30;

/// Waits until the server has drained what an overloaded step left: a trickle of requests
/// (`trickle` sends one and returns its median corrected latency, `None` without answers)
/// answers within twice `baseline_ns` (the first step's median) and a millisecond, or about
/// 30 s pass. The first trickle goes at once: a server that drained while the step ended is
/// not waited for; one still behind answers the trickle behind its queue, and is tried again
/// after a pause. Returns how long it took, or `None` if it never recovered or the search was
/// stopped.
pub async fn recover<F, Fut>(
    shutdown: &Shutdown,
    baseline_ns: Option<u64>,
    mut trickle: F,
) -> Result<Option<Duration>, Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Option<u64>, Error>>,
{
    let started = std::time::Instant::now();
    for attempt in 0..TRICKLES {
        if shutdown.state() != Stop::Running {
            return Ok(None);
        }
        if attempt > 0 {
            tokio::time::sleep(BETWEEN_TRICKLES).await;
        }
        let Some(p50) = trickle().await? else {
            continue;
        };
        match baseline_ns {
            None => return Ok(Some(started.elapsed())),
            Some(b) if p50 <= 2 * b + 1_000_000 => return Ok(Some(started.elapsed())),
            Some(_) => {}
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The trickles a recovery sends to a server whose median answers `p50s` in turn.
    fn trickles(p50s: &[u64]) -> (Option<Duration>, usize) {
        let shutdown = Shutdown::new();
        let sent = std::cell::Cell::new(0usize);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let took = rt
            .block_on(recover(&shutdown, Some(2_000_000), || {
                let n = sent.get();
                sent.set(n + 1);
                let p50 = p50s.get(n).or(p50s.last()).copied();
                async move { Ok(p50) }
            }))
            .unwrap();
        (took, sent.get())
    }

    #[test]
    fn a_drained_server_is_trickled_at_once_and_one_still_behind_until_it_answers() {
        // Drained when the step ended: one trickle, no pause before it.
        let (took, sent) = trickles(&[2_500_000]);
        assert_eq!(sent, 1);
        assert!(took.unwrap() < BETWEEN_TRICKLES, "{took:?}");
        // Behind for two trickles (answers past twice the baseline and a millisecond), then
        // drained: three trickles, two pauses.
        let (took, sent) = trickles(&[40_000_000, 5_100_000, 4_900_000]);
        assert_eq!(sent, 3);
        assert!(took.unwrap() >= 2 * BETWEEN_TRICKLES, "{took:?}");
    }

    #[test]
    fn a_steps_ready_connections_are_littles_law_at_its_rate_and_latency_bound() {
        let slo: Slo = "p99<=10ms and p50<=2ms and errors<=0.1%".parse().unwrap();
        assert_eq!(ready_connections(30_000.0, &slo, 10_000), 300);
        assert_eq!(ready_connections(4_320.0, &slo, 10_000), 44);
        assert_eq!(ready_connections(30_000.0, &slo, 64), 64);
        assert_eq!(ready_connections(5.0, &slo, 10_000), 1);
        let errors_only: Slo = "errors<=1%".parse().unwrap();
        assert_eq!(ready_connections(1_000.0, &errors_only, 10_000), 10);
    }
}
