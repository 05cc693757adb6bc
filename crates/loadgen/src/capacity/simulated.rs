//! A simulated server for the search's unit tests: an M/M/1 queue whose sojourn times, in
//! order, are as correlated as a real queue's, judged by the real judge.

use std::time::Duration;

use std::collections::BTreeMap;

use analysis::capacity::warm::Sample;
use analysis::capacity::{judge, Search, Settings, Slo};
use store::model::IntervalStats;

use super::search::{Event, Plan, Stepped, Steps};
use crate::error::Error;

/// A server simulated as an M/M/1 queue (its sojourn times, in order, so that they are as
/// correlated as a real queue's), behind a generator that drives at most `generator`.
pub struct Simulated {
    /// The rate at which its p99 is 10 ms exactly: its true capacity for the SLO below.
    pub truth: f64,
    pub generator: f64,
    /// Each step's service rate is off by up to this share (a noisy host).
    pub noise: f64,
    pub recovers: bool,
    pub rng: analysis::capacity::random::Rng,
    pub kept: usize,
    pub said: Vec<String>,
}

impl Simulated {
    pub fn new(truth: f64) -> Self {
        Simulated {
            truth,
            generator: f64::INFINITY,
            noise: 0.0,
            recovers: true,
            rng: analysis::capacity::random::Rng::new(0x0123_4567_89ab_cdef),
            kept: 0,
            said: Vec::new(),
        }
    }

    fn uniform(&mut self) -> f64 {
        self.rng.uniform()
    }

    fn exponential(&mut self, rate: f64) -> f64 {
        self.rng.exponential(rate)
    }

    /// Ten one-second intervals of the queue offered `rate` req/s.
    fn window(&mut self, rate: f64) -> Vec<IntervalStats> {
        // Sojourn ~ Exp(μ − λ): p99 = ln 100 / (μ − λ) = 10 ms at λ = truth.
        let jitter = 1.0 + self.noise * (2.0 * self.uniform() - 1.0);
        let mu = (self.truth + 100f64.ln() / 0.010) * jitter;
        let mut wait = if rate < mu && self.uniform() < rate / mu {
            self.exponential(mu - rate)
        } else {
            0.0
        };
        (0..10)
            .map(|i| {
                let mut s = IntervalStats::new(i, 60_000_000_000);
                let n = rate.round() as u64;
                for _ in 0..n {
                    let sojourn = wait + self.exponential(mu);
                    wait = (sojourn - self.exponential(rate)).max(0.0);
                    let _ = s
                        .corrected
                        .record(((sojourn * 1e9) as u64).clamp(1, 59_000_000_000));
                }
                (s.requests, s.sent, s.responses, s.ok) = (n, n, n, n);
                s
            })
            .collect()
    }
}

impl Steps for Simulated {
    async fn run(
        &mut self,
        _: &Search,
        _: u32,
        rate: f64,
        window: Duration,
    ) -> Result<Option<Stepped>, Error> {
        let intervals = self.window(rate);
        let limited = (rate > self.generator)
            .then(|| "its thread's CPU was busy 100 % of the run".to_string());
        let judgement = judge::judge(&slo(), &intervals, 1.0, rate, limited);
        Ok(Some(Stepped {
            judgement,
            p50_ns: 1_000_000,
            run_id: None,
            window,
            limit: None,
            host: None,
        }))
    }

    async fn recover(&mut self, _: Option<u64>) -> Result<Option<Duration>, Error> {
        Ok(self.recovers.then_some(Duration::from_millis(500)))
    }

    async fn sample(&mut self, _: f64) -> Result<Option<Sample>, Error> {
        Ok(Some(Sample {
            p50_ns: 500_000,
            p99_ns: 1_000_000,
        }))
    }

    async fn keep(&mut self, _: &Search) -> Result<(), Error> {
        self.kept += 1;
        Ok(())
    }

    fn stopped(&self) -> bool {
        false
    }

    fn event(&mut self, event: Event<'_>) {
        self.said.push(super::words::event(event));
    }
}

pub fn slo() -> Slo {
    Slo {
        terms: vec!["p99<=10ms".parse().unwrap()],
    }
}

/// A search of the simulated server from `start`, to 5 %, its SLO p99 <= 10 ms.
pub fn plan(start: f64) -> Plan {
    Plan {
        id: "s1".into(),
        name: "simulated".into(),
        experiment: None,
        target: "simulated".into(),
        labels: BTreeMap::new(),
        slo: slo(),
        settings: Settings {
            start,
            resolution: 0.05,
            step_s: 10.0,
            warmup_s: 0.0,
            min_rate: 10.0,
            max_rate: 1_000_000.0,
            growth: 2.0,
            arrival: None,
            p: 0.5,
            until: 0.05,
            grid: 1.02,
            seed: 0,
        },
        max_steps: 30,
        budget: None,
        step: Duration::from_secs(10),
        resumed: Vec::new(),
        warm: Some(Duration::from_secs(120)),
        started_at_ns: 0,
    }
}

/// A step that passed or failed outright (no figures): for simulated servers that decide a
/// window by its rate alone.
pub fn point(pass: bool, rate: f64, window: Duration) -> Stepped {
    Stepped {
        judgement: analysis::capacity::Judgement {
            verdict: if pass {
                analysis::capacity::Verdict::Pass
            } else {
                analysis::capacity::Verdict::Fail
            },
            reason: String::new(),
            terms: Vec::new(),
            achieved: rate,
            requests: 0,
            queue: None,
        },
        p50_ns: 1_000_000,
        run_id: None,
        window,
        limit: None,
        host: None,
    }
}
