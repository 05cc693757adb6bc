//! A search's steps fired from gun hosts over SSH ([`experiment::fleet`]): each step's rate
//! split across the guns from one start, kept as a run group, and judged on the group's
//! merged histograms and on every gun's own validity, so that the guns together are the
//! generator whose limit a search may reach. Recovery and the first estimate are a trickle
//! from the first gun (the target may be reachable from the guns only).

use std::time::Duration;

use experiment::fleet::Fleet;
use store::capacity::{judge, Search, Slo};
use store::model::IntervalStats;
use store::Store;

use super::search::{Event, Stepped, Steps};
use super::step::interval_for;
use crate::cli::{ProbeArgs, RequestArgs};
use crate::engine::shutdown::{Shutdown, Stop};
use crate::Error;

/// An order's environment: (name, value).
type Env = Vec<(String, String)>;

/// The guns' steps.
#[derive(Debug)]
pub struct Volleys<'a> {
    pub fleet: Fleet,
    pub store: Store,
    pub store_url: String,
    pub request: &'a RequestArgs,
    pub probe: &'a ProbeArgs,
    pub slo: &'a Slo,
    pub warmup: Duration,
    pub shutdown: &'a Shutdown,
    pub experiment: Option<String>,
    pub labels: Vec<(String, String)>,
    /// Where the requests file is written (private to this user).
    pub dir: tempfile::TempDir,
    /// Each step's highest rate every gun kept its schedule at, for the guns it would take.
    pub valid: Option<f64>,
}

fn ms(d: Duration) -> String {
    format!("{}ms", d.as_millis().max(1))
}

impl Volleys<'_> {
    /// Turns true when the user stops the search: the guns' standard input closes.
    fn stop(&self) -> tokio::sync::watch::Receiver<bool> {
        let (tx, rx) = tokio::sync::watch::channel(self.shutdown.state() != Stop::Running);
        let mut states = self.shutdown.subscribe();
        tokio::spawn(async move {
            while states.changed().await.is_ok() {
                if *states.borrow() != Stop::Running {
                    let _ = tx.send(true);
                    return;
                }
            }
        });
        rx
    }

    /// The requests as `loadgen attack` flags for the guns, and their environment: the
    /// requests in a file (a query or a body may hold a key), the headers in the environment.
    fn requests(&self) -> Result<(Vec<String>, Env), Error> {
        let r = self.request;
        let mut args = Vec::new();
        let mut push = |a: &[&str]| args.extend(a.iter().map(|s| s.to_string()));
        match (&r.url, &r.targets) {
            (_, Some(file)) => push(&["--targets", &file.display().to_string()]),
            (Some(url), None) => {
                let mut request = toml::Table::new();
                request.insert("url".into(), url.clone().into());
                if let Some(m) = &r.method {
                    request.insert("method".into(), m.clone().into());
                }
                let body = match (&r.body, &r.body_file) {
                    (Some(b), _) => Some(b.clone()),
                    (None, Some(f)) => Some(std::fs::read_to_string(f).map_err(|e| {
                        Error::Usage(format!(
                            "--body-file {}: {e} (the guns get a body as UTF-8 text)",
                            f.display()
                        ))
                    })?),
                    _ => None,
                };
                if let Some(b) = body {
                    request.insert("body".into(), b.into());
                }
                let mut file = toml::Table::new();
                file.insert("request".into(), vec![toml::Value::Table(request)].into());
                let path = self.dir.path().join("requests.toml");
                let text = toml::to_string(&file).map_err(|e| Error::Usage(e.to_string()))?;
                experiment::gun::write_private(&path, text.as_bytes())
                    .map_err(|e| Error::Usage(format!("{}: {e}", path.display())))?;
                push(&["--targets", &path.display().to_string()]);
            }
            (None, None) => return Err(Error::Usage("no URL and no --targets".into())),
        }
        if let Some(c) = r.max_connections {
            push(&["--max-connections", &c.to_string()]);
        }
        if !r.batch.is_zero() {
            push(&["--batch", &format!("{}us", r.batch.as_micros().max(1))]);
        }
        if r.arrival == crate::engine::arrivals::Process::Poisson {
            push(&["--arrival", "poisson"]);
        }
        if r.no_keepalive {
            push(&["--no-keepalive"]);
        }
        if let Some(t) = r.threads {
            push(&["--threads", &t.to_string()]);
        }
        if r.h2 {
            push(&["--h2"]);
        }
        if r.insecure {
            push(&["--insecure"]);
        }
        push(&["--timeout", &ms(r.timeout)]);
        let mut env = vec![("SHOWDOWN_DB".to_string(), self.store_url.clone())];
        if !r.headers.is_empty() {
            env.push(("SHOWDOWN_HEADERS".into(), r.headers.join("\n")));
        }
        Ok((args, env))
    }

    /// The probes' flags (the first gun subscribes for the group).
    fn probes(&self) -> Vec<String> {
        let p = self.probe;
        let mut args = Vec::new();
        for a in &p.probes {
            args.extend(["--probe".to_string(), a.clone()]);
        }
        if !p.probes.is_empty() {
            args.extend(["--pre-roll".into(), ms(p.pre_roll)]);
            args.extend(["--post-roll".into(), ms(p.post_roll)]);
            if let Some(t) = &p.probe_token_file {
                args.extend(["--probe-token-file".into(), t.display().to_string()]);
            }
            if let Some(f) = &p.probe_fingerprint {
                args.extend(["--probe-fingerprint".into(), f.clone()]);
            }
            if let Some(ca) = &p.probe_ca {
                args.extend(["--probe-ca".into(), ca.display().to_string()]);
            }
        }
        args
    }

    /// A short run from the first gun, not kept: its summary.
    async fn trickle(&self, load: &[&str]) -> Result<Option<store::summary::Summary>, Error> {
        let (requests, mut env) = self.requests()?;
        env.retain(|(k, _)| k != "SHOWDOWN_DB");
        let mut args: Vec<String> = vec!["attack".into()];
        args.extend(load.iter().map(|s| s.to_string()));
        args.extend(requests);
        args.extend(["--no-store".into(), "--output".into(), "json".into()]);
        let fired = self
            .fleet
            .single(&args, env, self.stop())
            .await
            .map_err(|e| Error::Usage(e.to_string()))?;
        Ok(fired.summary.filter(|s| s.requests.ok > 0))
    }

    /// The first rate to try: half of what 16 connections of a closed loop from the first
    /// gun served in 2 s (the server's pace, whichever gun asks).
    pub async fn estimate(&self) -> Result<Option<f64>, Error> {
        let served = self
            .trickle(&["--connections", "16", "--duration", "2s"])
            .await?;
        Ok(served
            .map(|s| s.requests.throughput / 2.0)
            .filter(|r| *r >= 1.0))
    }

    /// How many guns a rate the guns could not drive would take, at what each drove validly.
    pub fn more_guns(&self, search: &Search) -> Option<String> {
        let limit = search.generator_limit?;
        let valid = self.valid?;
        let n = self.fleet.guns.len();
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

impl Steps for Volleys<'_> {
    async fn run(
        &mut self,
        search: &Search,
        number: u32,
        rate: f64,
        window: Duration,
    ) -> Result<Option<Stepped>, Error> {
        let interval = interval_for(window);
        let group = store::RunMeta::new_id();
        let (requests, env) = self.requests()?;
        let mut args: Vec<String> = vec![
            "attack".into(),
            "--rate".into(),
            rate.to_string(),
            "--duration".into(),
            ms(self.warmup + window),
            "--interval".into(),
            ms(interval),
            "--name".into(),
            format!("{} step {number}: {rate} req/s", search.name),
            "--label".into(),
            format!("{}={}", store::capacity::label::SEARCH, search.id),
            "--label".into(),
            format!("{}={number}", store::capacity::label::STEP),
            "--label".into(),
            format!("rate={rate}"),
        ];
        if let Some(e) = &self.experiment {
            args.extend(["--experiment".into(), e.clone()]);
        }
        for (k, v) in &self.labels {
            if k != "rate" {
                args.extend(["--label".into(), format!("{k}={v}")]);
            }
        }
        args.extend(requests);
        args.extend(self.probes());
        args.extend(["--output".into(), "json".into()]);
        let shots = self
            .fleet
            .volley(&args, env, &group, self.stop(), None)
            .await
            .map_err(|e| Error::Usage(e.to_string()))?;
        if self.shutdown.state() != Stop::Running {
            return Ok(None);
        }
        let count = shots.len();
        let mut limit = None;
        for (i, shot) in shots.iter().enumerate() {
            let gun = format!("gun {} ({}/{count})", shot.gun, i + 1);
            let fired = shot
                .fired
                .as_ref()
                .map_err(|why| Error::Usage(format!("{gun}: {why}")))?;
            let summary = fired
                .summary
                .as_ref()
                .ok_or_else(|| Error::Usage(format!("{gun} printed no summary: {}", fired.said)))?;
            if limit.is_none() {
                limit = judge::generator_limit(summary).map(|why| format!("{gun}: {why}"));
            }
        }
        if limit.is_none() {
            self.valid = Some(self.valid.map_or(rate, |v| v.max(rate)));
        }
        let merged = store::group::load_group(&self.store, &group).await?;
        let Some(summary) = merged.summary.clone() else {
            return Err(Error::Usage(format!(
                "step {number}'s run group {group} has no summary"
            )));
        };
        let judgement = judge::judge(
            self.slo,
            &steady(&merged, self.warmup, window),
            interval.as_secs_f64(),
            rate,
            limit,
        );
        let step_limit = (judgement.verdict != store::capacity::Verdict::Pass)
            .then(|| super::step::limit_of(&merged, self.warmup, window))
            .flatten();
        Ok(Some(Stepped {
            judgement,
            p50_ns: summary.latency.corrected.p50_ns,
            run_id: Some(group),
            window,
            limit: step_limit,
        }))
    }

    async fn recover(&mut self, baseline_ns: Option<u64>) -> Result<bool, Error> {
        for _ in 0..30 {
            if self.shutdown.state() != Stop::Running {
                return Ok(false);
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
            let Some(s) = self
                .trickle(&["--rate", "20", "--duration", "500ms"])
                .await?
            else {
                continue;
            };
            match baseline_ns {
                None => return Ok(true),
                Some(b) if s.latency.corrected.p50_ns <= 2 * b + 1_000_000 => return Ok(true),
                Some(_) => {}
            }
        }
        Ok(false)
    }

    async fn keep(&mut self, search: &Search) -> Result<(), Error> {
        self.store.put_search(search).await?;
        Ok(())
    }

    fn stopped(&self) -> bool {
        self.shutdown.state() != Stop::Running
    }

    fn event(&mut self, event: Event<'_>) {
        eprintln!("{}", super::words::event(event));
    }
}

/// The directory for the guns' requests file.
pub fn private_dir() -> Result<tempfile::TempDir, Error> {
    tempfile::Builder::new()
        .prefix("showdown-guns-")
        .tempdir_in(std::env::temp_dir())
        .map_err(|e| Error::Usage(format!("cannot make a private directory: {e}")))
}
