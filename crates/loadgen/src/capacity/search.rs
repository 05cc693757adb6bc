//! The search loop as a value: a [`Plan`] (the SLO, the bounds, what is searched) and a way to
//! run one step ([`Steps`]) in, the [`Search`] out. It prints nothing and touches no store
//! itself: it tells its [`Steps`] what happened, so the command line, the experiment runner and
//! the unit tests' simulated servers drive the same loop.
//!
//! Two phases: the coarse bracket ([`super::bracket`]: ×2 until a step fails, then bisection
//! until the bracket is within the resolution) finds the knee; the up-and-down chain
//! ([`super::updown`]) then spends the steps beside it. After every step C_p is estimated from
//! all valid steps ([`analysis::capacity::fit`]); the search stops when its 95 % interval is within
//! `until`, after at least [`MIN_FINE`] steps near the knee with [`MIN_EACH`] passes and fails,
//! or when its steps or its time run out. Every step has the same window and warm-up, so that
//! every step measures the one figure C_p(T, w).

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use analysis::capacity::warm::{self, Sample};
use analysis::capacity::{Judgement, Search, Settings, Slo, Status, Step, Verdict, Warmed};

use super::bracket::{Bracket, Next};
use super::updown::Chain;
use crate::error::Error;

/// The search does not stop before this many valid steps near the knee.
pub const MIN_FINE: usize = 12;
/// Nor before this many passes and this many fails among all its steps.
pub const MIN_EACH: usize = 3;

/// What a search looks for, and within what.
#[derive(Debug, Clone)]
pub struct Plan {
    pub id: String,
    pub name: String,
    pub experiment: Option<String>,
    /// What is searched (the URL or the targets file), for the words and the page.
    pub target: String,
    /// The labels its runs carry beside `search` and `step`.
    pub labels: BTreeMap<String, String>,
    pub slo: Slo,
    /// Its start, resolution and bounds (the start already chosen).
    pub settings: Settings,
    pub max_steps: u64,
    /// Start no new step after this long.
    pub budget: Option<Duration>,
    /// The measured window of every step (T).
    pub step: Duration,
    /// Steps already run by an earlier attempt of the same search (kept, interrupted): the
    /// search goes on after them, with the bracket they made.
    pub resumed: Vec<Step>,
    /// The longest to warm the server before the first step, until its latency stops trending
    /// (`None`: not warmed, as a search repeated right after another, whose steps left it warm).
    pub warm: Option<Duration>,
    pub started_at_ns: i64,
}

impl Plan {
    /// A search after this one: from a little below the figure so far (`rate`), growing by
    /// small factors, under `id` (repeated searches, and a check's search again).
    pub fn near(&self, rate: f64, id: String) -> Plan {
        let resolution = self.settings.resolution;
        let mut plan = self.clone();
        plan.id = id;
        plan.resumed = Vec::new();
        plan.warm = None;
        plan.started_at_ns = super::now_ns();
        plan.settings.start = super::bracket::round(
            (rate * (1.0 - 2.0 * resolution)).clamp(self.settings.min_rate, self.settings.max_rate),
        );
        plan.settings.growth = (1.0 + 4.0 * resolution).max(1.05).min(self.settings.growth);
        plan
    }
}

/// A step as run: its verdict and what the next ones need from it.
#[derive(Debug, Clone)]
pub struct Stepped {
    pub judgement: Judgement,
    /// The median corrected latency of its window, ns: a passing step's is the server's
    /// unloaded pace that recovery is measured against.
    pub p50_ns: u64,
    pub run_id: Option<String>,
    /// The window it was judged over.
    pub window: Duration,
    /// What limited the server, when it did not pass and probes watched it.
    pub limit: Option<analysis::capacity::StepLimit>,
    /// The host over the step, where it was read.
    pub host: Option<analysis::capacity::StepHost>,
}

/// What the loop tells its caller as it goes.
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    Resumed {
        after: usize,
    },
    /// The server was warmed before the first step.
    Warmed {
        warmed: &'a Warmed,
    },
    /// A search of repeated ones ended: its capacity, and what they agree on so far.
    Searched {
        number: usize,
        capacity: Option<f64>,
        agreed: Option<&'a analysis::capacity::Agreed>,
    },
    /// A calibration check begins: its blocks, and its levels (name, req/s).
    Checking {
        blocks: u32,
        rates: &'a [(String, f64)],
    },
    /// A round of a comparison begins: its targets in the order they step.
    Round {
        number: u32,
        of: u32,
        order: &'a [&'a str],
    },
    Stepped {
        number: u32,
        rate: f64,
        judgement: &'a Judgement,
        again: bool,
        /// What limited the server, when it did not pass and probes watched it.
        limit: Option<&'a analysis::capacity::StepLimit>,
    },
}

/// A way to run the steps of a search: the real generator, or a simulated server.
pub trait Steps {
    /// Runs step `number` of `search` (its id and name label the step's run) at `rate`
    /// req/s, judged over `window` after its warm-up; `None` when stopped meanwhile.
    fn run(
        &mut self,
        search: &Search,
        number: u32,
        rate: f64,
        window: Duration,
    ) -> impl Future<Output = Result<Option<Stepped>, Error>>;

    /// Waits until the server has drained what a step that did not pass left it with: how long
    /// it took, or `None` when it did not within its time, or the search was stopped.
    fn recover(
        &mut self,
        baseline_ns: Option<u64>,
    ) -> impl Future<Output = Result<Option<Duration>, Error>>;

    /// A second at `rate` that is not a step (not kept, not judged): its median and p99, or
    /// `None` without answers.
    fn sample(&mut self, rate: f64) -> impl Future<Output = Result<Option<Sample>, Error>>;

    /// Keeps the search so far (after every step, and at its end).
    fn keep(&mut self, search: &Search) -> impl Future<Output = Result<(), Error>>;

    /// Whether the user stopped the search.
    fn stopped(&self) -> bool;

    /// Hears what the loop did.
    fn event(&mut self, event: Event<'_>);
}

/// Where the search is: bracketing the knee, or stepping up and down beside it.
#[derive(Debug)]
enum Phase {
    Coarse(Bracket),
    Fine { chain: Chain, invalid: u32 },
}

impl Phase {
    /// Takes `step` (the last of `search`'s) and says what comes next; `stop` lets the
    /// estimate end the search (not while a resumed search replays its kept steps).
    fn after(&mut self, step: &Step, search: &Search, stop: bool) -> Next {
        let settings = &search.settings;
        match self {
            Phase::Coarse(bracket) => {
                match bracket.after(step.rate, step.judgement.verdict, settings) {
                    Next::Done(Status::Found) => {
                        let pass = bracket.pass.unwrap_or(step.rate);
                        let chain = Chain::new(pass, settings.grid, settings.p, settings.seed);
                        let next = chain.rate();
                        *self = Phase::Fine { chain, invalid: 0 };
                        Next::Try(next)
                    }
                    next => next,
                }
            }
            Phase::Fine { chain, invalid } => {
                if !step.valid() {
                    *invalid += 1;
                    if *invalid >= 2 {
                        return Next::Done(Status::GeneratorLimited);
                    }
                }
                chain.after(step.judgement.verdict.passed());
                if stop && enough(search) {
                    Next::Done(Status::Found)
                } else {
                    Next::Try(chain.rate().clamp(settings.min_rate, settings.max_rate))
                }
            }
        }
    }

    fn fine(&self) -> bool {
        matches!(self, Phase::Fine { .. })
    }
}

/// Whether the estimate is good enough to stop: its interval within `until`, on enough steps
/// near the knee, passes and fails.
fn enough(search: &Search) -> bool {
    balanced(search)
        && search
            .estimate()
            .is_some_and(|e| e.within(search.settings.until))
}

/// Whether `search` has [`MIN_FINE`] valid steps beside the knee and [`MIN_EACH`] passes and
/// fails.
fn balanced(search: &Search) -> bool {
    let fine = search.steps.iter().filter(|s| s.fine && s.valid()).count();
    let points = search.points(None);
    let passes = points.iter().filter(|p| p.pass).count();
    fine >= MIN_FINE && passes >= MIN_EACH && points.len() - passes >= MIN_EACH
}

/// Warms the server at `rate` in one-second samples until their median latency stops
/// trending ([`analysis::capacity::warm`]), at most `longest`.
async fn warm(
    steps: &mut impl Steps,
    rate: f64,
    longest: Duration,
) -> Result<Option<Warmed>, Error> {
    let mut p50_ns: Vec<u64> = Vec::new();
    let mut p99_ns: Vec<u64> = Vec::new();
    let mut trend = None;
    let mut settled = false;
    for _ in 0..longest.as_secs().max(1) {
        if steps.stopped() {
            return Ok(None);
        }
        let Some(sample) = steps.sample(rate).await? else {
            continue;
        };
        p50_ns.push(sample.p50_ns);
        p99_ns.push(sample.p99_ns);
        let p50: Vec<f64> = p50_ns.iter().map(|&n| n as f64).collect();
        trend = warm::trend(&p50, warm::window(longest.as_secs()));
        settled = trend.is_some_and(|t| t.flat());
        if settled {
            break;
        }
    }
    if p99_ns.is_empty() {
        return Ok(None);
    }
    Ok(Some(Warmed {
        rate,
        seconds: p99_ns.len() as f64,
        settled,
        p99_ns,
        p50_ns,
        trend,
    }))
}

/// Runs the search `plan` describes with `steps`.
pub async fn search(plan: Plan, steps: &mut impl Steps) -> Result<Search, Error> {
    let mut searcher = Searcher::new(plan);
    searcher.begin(steps).await?;
    while !searcher.ended() {
        searcher.step(steps, true, None).await?;
    }
    searcher.finish(steps).await
}

/// A search one step at a time, so that a comparison can interleave the steps of several:
/// [`Searcher::begin`] (the kept steps replayed, the server warmed), [`Searcher::step`] until
/// [`Searcher::ended`], then [`Searcher::finish`].
#[derive(Debug)]
pub struct Searcher {
    pub search: Search,
    phase: Phase,
    rate: f64,
    max_steps: u64,
    budget: Option<Duration>,
    window: Duration,
    warm: Option<Duration>,
    resumed: usize,
    started: std::time::Instant,
    baseline_ns: Option<u64>,
    drained: Option<Duration>,
    outcome: Option<Result<Status, Cut>>,
}

/// Why a search stopped before it ended by itself (it is kept interrupted, and says so).
#[derive(Debug, thiserror::Error)]
enum Cut {
    #[error("interrupted")]
    Interrupted,
    /// `error`: what the step's run said.
    #[error("step {number} at {rate} req/s could not run: {error}")]
    Step {
        number: u32,
        rate: f64,
        error: String,
    },
    #[error("the server did not recover within 30 s of an overloaded step")]
    NoRecovery,
}

impl Searcher {
    /// The search of `plan`, its kept steps (if any) replayed into its bracket and chain.
    pub fn new(plan: Plan) -> Searcher {
        let settings = plan.settings.clone();
        let mut search = Search {
            id: plan.id,
            name: plan.name,
            experiment: plan.experiment,
            target: plan.target,
            slo: plan.slo.clone(),
            settings: settings.clone(),
            steps: Vec::new(),
            status: Status::Running,
            capacity: None,
            estimates: Vec::new(),
            highest_pass: None,
            drift: None,
            failed_at: None,
            generator_limit: None,
            warmed: None,
            check: None,
            reason: String::new(),
            labels: plan.labels,
            started_at_ns: plan.started_at_ns,
            updated_at_ns: plan.started_at_ns,
        };
        let mut phase = Phase::Coarse(Bracket::default());
        let mut rate = settings.start;
        for step in &plan.resumed {
            search.steps.push(step.clone());
            if let Next::Try(r) = phase.after(step, &search, false) {
                rate = r;
            }
        }
        if !plan.resumed.is_empty() {
            search.estimate_all();
        }
        Searcher {
            search,
            phase,
            rate,
            max_steps: plan.max_steps,
            budget: plan.budget,
            window: plan.step,
            warm: plan.warm,
            resumed: plan.resumed.len(),
            started: std::time::Instant::now(),
            baseline_ns: None,
            drained: None,
            outcome: None,
        }
    }

    /// Says where a resumed search goes on from, or warms the server before a fresh one.
    pub async fn begin(&mut self, steps: &mut impl Steps) -> Result<(), Error> {
        if self.resumed > 0 {
            steps.event(Event::Resumed {
                after: self.resumed,
            });
        } else if let Some(longest) = self.warm {
            let rate = super::bracket::round(self.rate / 2.0);
            self.search.warmed = warm(steps, rate, longest).await?;
            if let Some(w) = &self.search.warmed {
                steps.event(Event::Warmed { warmed: w });
            }
        }
        Ok(())
    }

    /// Whether the search has ended (its steps or budget spent, found, or stopped).
    pub fn ended(&self) -> bool {
        self.outcome.is_some()
    }

    /// Runs its next step (in `round` of a comparison), keeps it, and waits for the server to
    /// drain after a step that did not pass; `stop` lets the estimate end the search.
    pub async fn step(
        &mut self,
        steps: &mut impl Steps,
        stop: bool,
        round: Option<u32>,
    ) -> Result<(), Error> {
        if self.spent() {
            return Ok(());
        }
        let (number, rate) = (self.search.steps.len() as u32 + 1, self.rate);
        let Some(s) = self.run_step(steps, number, rate).await else {
            return Ok(());
        };
        steps.event(Event::Stepped {
            number,
            rate,
            judgement: &s.judgement,
            again: false,
            limit: s.limit.as_ref(),
        });
        let verdict = s.judgement.verdict;
        if verdict == Verdict::Pass && self.baseline_ns.is_none() {
            self.baseline_ns = Some(s.p50_ns);
        }
        let step = self.step_of(s, number, rate, round);
        self.search.steps.push(step.clone());
        // A search that may end on its estimate is estimated after every step; one of a
        // comparison (which ends on its rounds) at its end.
        if stop {
            self.search.estimate_all();
        }
        let next = self.phase.after(&step, &self.search, stop);
        self.search.updated_at_ns = super::now_ns();
        steps.keep(&self.search).await?;
        match next {
            Next::Done(status) => {
                self.outcome = Some(Ok(status));
                return Ok(());
            }
            Next::Try(r) => self.rate = r,
        }
        if !verdict.passed() {
            self.drain(steps).await?;
        }
        Ok(())
    }

    /// Whether it has ended, or ends now because its steps or its time budget are spent.
    fn spent(&mut self) -> bool {
        if self.outcome.is_some() {
            return true;
        }
        if self.search.steps.len() as u64 >= self.max_steps {
            self.outcome = Some(Ok(Status::OutOfSteps));
            return true;
        }
        if let Some(budget) = self.budget.filter(|b| self.started.elapsed() >= *b) {
            self.search.reason = format!(
                "its time budget of {} was spent",
                humantime::format_duration(budget)
            );
            self.outcome = Some(Ok(Status::OutOfSteps));
            return true;
        }
        false
    }

    /// Runs step `number` at `rate`: `None` (the search cut) when it was stopped or could
    /// not run.
    async fn run_step(
        &mut self,
        steps: &mut impl Steps,
        number: u32,
        rate: f64,
    ) -> Option<Stepped> {
        match steps.run(&self.search, number, rate, self.window).await {
            Ok(Some(s)) => Some(s),
            Ok(None) => {
                self.outcome = Some(Err(Cut::Interrupted));
                None
            }
            Err(e) => {
                self.outcome = Some(Err(Cut::Step {
                    number,
                    rate,
                    error: e.to_string(),
                }));
                None
            }
        }
    }

    /// The step `s` as the search keeps it (number `number` at `rate`, in `round`).
    fn step_of(&mut self, s: Stepped, number: u32, rate: f64, round: Option<u32>) -> Step {
        Step {
            number,
            rate,
            run_id: s.run_id,
            window_s: s.window.as_secs_f64(),
            judgement: s.judgement,
            retried: Vec::new(),
            limit: s.limit,
            fine: self.phase.fine(),
            drained_s: self.drained.take().map(|d| d.as_secs_f64()),
            host: s.host,
            round,
        }
    }

    /// Waits for the server to drain after a step that did not pass; the search is cut when
    /// it does not (or was stopped meanwhile).
    async fn drain(&mut self, steps: &mut impl Steps) -> Result<(), Error> {
        self.drained = steps.recover(self.baseline_ns).await?;
        if self.drained.is_none() {
            self.outcome = Some(Err(if steps.stopped() {
                Cut::Interrupted
            } else {
                Cut::NoRecovery
            }));
        }
        Ok(())
    }

    /// Ends the search where it is (as `status` when it had not ended by itself), says why,
    /// and keeps it.
    pub async fn finish(mut self, steps: &mut impl Steps) -> Result<Search, Error> {
        let outcome = self.outcome.take().unwrap_or(Ok(Status::OutOfSteps));
        let mut search = self.search;
        search.status = match &outcome {
            Ok(status) => *status,
            Err(_) => Status::Interrupted,
        };
        search.estimate_all();
        search.reason = reason(&search, outcome.err());
        search.updated_at_ns = super::now_ns();
        steps.keep(&search).await?;
        Ok(search)
    }

    /// Ends a search that has not ended by itself (a comparison's rounds are spent): found
    /// where its estimate is within `until` on enough steps, else ended with its comparison
    /// (not "out of steps": the comparison's answer is the ratio, not this search's figure),
    /// for `why`.
    pub fn close(&mut self, why: &str) {
        if self.outcome.is_some() {
            return;
        }
        self.search.estimate_all();
        let found = enough(&self.search);
        if !found {
            self.search.reason = why.to_string();
        }
        self.outcome = Some(Ok(if found {
            Status::Found
        } else {
            Status::Compared
        }));
    }
}

/// Why the search ended where it did, in one sentence.
fn reason(search: &Search, error: Option<Cut>) -> String {
    let last = search.steps.last();
    let interval = |e: &analysis::capacity::fit::Fitted| {
        e.half_width().map_or_else(
            || "not bounded on both sides yet".to_string(),
            |h| format!("±{:.1} %", h * 100.0),
        )
    };
    let fine = search.steps.iter().filter(|s| s.fine && s.valid()).count();
    match (search.status, error) {
        (_, Some(e)) => format!("{e}; the steps so far are kept"),
        (Status::GeneratorLimited, _) => match (search.highest_pass, search.generator_limit) {
            (Some(pass), Some(limit)) => format!(
                "the generator is the limit, not the server: it drove {pass} req/s validly and the server met the SLO there, but not {limit} req/s ({})",
                search
                    .steps
                    .iter()
                    .rfind(|s| s.rate == limit)
                    .map_or(String::new(), |s| s.judgement.reason.clone())
            ),
            _ => format!(
                "the generator is the limit at {} req/s, not the server: {}",
                last.map_or(0.0, |s| s.rate),
                last.map_or(String::new(), |s| s.judgement.reason.clone())
            ),
        },
        (Status::BelowMinimum, _) => format!(
            "the server missed the SLO already at {} req/s: {}",
            last.map_or(0.0, |s| s.rate),
            last.map_or(String::new(), |s| s.judgement.reason.clone())
        ),
        (Status::AboveMaximum, _) => format!(
            "the server met the SLO at --max-rate {} req/s: its capacity is at least that",
            search.settings.max_rate
        ),
        (Status::Found, None) => format!(
            "the 95 % interval of {} is {} after {} steps ({fine} beside the knee), within the ±{:.1} % asked",
            search.settings.figure(),
            search.estimate().map_or("unbounded".into(), interval),
            search.steps.len(),
            search.settings.until * 100.0
        ),
        (_, None) => {
            let spent = if search.reason.is_empty() {
                format!("its {} steps were spent", search.steps.len())
            } else {
                search.reason.clone()
            };
            format!(
                "{spent} before the 95 % interval was within ±{:.1} %: it is {} ({fine} steps beside the knee)",
                search.settings.until * 100.0,
                search.estimate().map_or("not estimated".into(), interval)
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::simulated::{plan, Simulated};
    use super::*;

    fn run(sim: &mut Simulated, start: f64) -> Search {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(search(plan(start), sim)).unwrap()
    }

    #[test]
    fn the_knee_of_a_queue_is_found_within_the_resolution() {
        let mut sim = Simulated::new(4_000.0);
        let s = run(&mut sim, 500.0);
        assert_eq!(s.status, Status::Found, "{}", s.reason);
        // The figure is C_0.5 from every step, its 95 % interval within ±5 % and around it.
        let e = s.estimate().unwrap();
        let cap = s.capacity.unwrap();
        assert_eq!(cap, e.rate);
        assert!((cap / 4_000.0 - 1.0).abs() < 0.05, "{cap}");
        assert!(
            e.within(0.05) && e.low.unwrap() < cap && cap < e.high.unwrap(),
            "{e:?}"
        );
        assert_eq!(s.estimates[1].p, 0.9);
        assert!(s.estimates[1].rate < cap);
        // Coarse steps, then at least twelve beside the knee, each one window of the same T.
        let fine = s.steps.iter().filter(|st| st.fine).count();
        assert!(fine >= MIN_FINE, "{fine}");
        assert!(s.steps.iter().all(|st| st.window_s == 10.0));
        assert!(
            s.reason
                .contains("95 % interval of C_0.5(T = 10 s, w = 0 s)"),
            "{}",
            s.reason
        );
        // The server was warmed first, until its samples' median latency was seen not to
        // trend (one window of a 2-minute bound), and said so.
        let w = s.warmed.as_ref().unwrap();
        assert!(w.settled && w.seconds == 20.0 && w.rate == 250.0, "{w:?}");
        assert!(
            sim.said[0].contains("warmed 20 s at 250 req/s: its median latency held"),
            "{:?}",
            sim.said
        );
        // Every step was said and kept, and the end too.
        assert_eq!(sim.said.len(), s.steps.len() + 1);
        assert_eq!(sim.kept, s.steps.len() + 1);
        // Beside the figure, how far its interval was checked to hold, and where it is not.
        let said = super::super::text(&s);
        assert!(
            said.contains("Checked: its 95 % interval was checked on simulated worlds")
                && said.contains("in 52–87 %, mostly because the search's steps ran out"),
            "{said}"
        );
        // The other figure, C_0.9 read from the curve away from the steps, says it is
        // approximate and how far it was checked.
        assert!(
            said.contains("Also: C_0.9 ≈ ")
                && said.contains("(approximate: read from the fitted curve's shape")
                && said.contains("search for it (--p 0.9"),
            "{said}"
        );
    }

    #[test]
    fn at_the_generators_limit_the_search_bisects_below_it_and_says_at_least() {
        // The server sustains 16,000; the generator drives 10,000: the capacity is "at least"
        // what the generator drives (within the resolution), not the last pass before its
        // first invalid step (8,000 from a start of 500).
        let mut sim = Simulated::new(16_000.0);
        sim.generator = 10_000.0;
        let s = run(&mut sim, 500.0);
        assert_eq!(s.status, Status::GeneratorLimited, "{}", s.reason);
        let cap = s.capacity.unwrap();
        assert!((0.9 * 10_000.0..=10_000.0).contains(&cap), "{cap}");
        assert!(s.generator_limit.unwrap() > 10_000.0);
        assert!(
            s.reason.contains("the generator is the limit"),
            "{}",
            s.reason
        );
        assert!(s.reason.contains("its thread's CPU"), "{}", s.reason);
        assert!(s.only_at_least().is_some());
        assert!(
            super::super::text(&s).contains(&format!("Capacity: at least {cap} req/s")),
            "{}",
            super::super::text(&s)
        );
        // Below the generator's limit the server's own knee is found as ever.
        let mut sim = Simulated::new(6_000.0);
        sim.generator = 10_000.0;
        let s = run(&mut sim, 500.0);
        assert_eq!(s.status, Status::Found, "{}", s.reason);
    }

    #[test]
    fn a_noisy_host_moves_the_figure_but_the_search_still_ends_near_the_knee() {
        for seed in 1..=3u64 {
            let mut sim = Simulated::new(4_000.0);
            sim.noise = 0.03;
            sim.rng =
                analysis::capacity::random::Rng::new(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            let s = run(&mut sim, 500.0);
            assert_eq!(s.status, Status::Found, "{}", s.reason);
            let cap = s.capacity.unwrap();
            assert!((cap / 4_000.0 - 1.0).abs() < 0.15, "seed {seed}: {cap}");
        }
    }

    #[test]
    fn a_server_that_does_not_recover_ends_the_search_with_the_bracket_kept() {
        let mut sim = Simulated::new(4_000.0);
        sim.recovers = false;
        let s = run(&mut sim, 500.0);
        assert_eq!(s.status, Status::Interrupted);
        assert!(s.reason.contains("did not recover"), "{}", s.reason);
        assert!(
            s.reason.contains("the steps so far are kept"),
            "{}",
            s.reason
        );
        // It stopped after its first step that did not pass, with the passes before it.
        let last = s.steps.last().unwrap();
        assert!(!last.judgement.verdict.passed());
        assert!(s.steps[..s.steps.len() - 1]
            .iter()
            .all(|st| st.judgement.verdict.passed()));
        // The figure is estimated from the steps kept, between the last pass and the fail,
        // and its interval says how little two steps tell.
        let pass = s.steps.iter().rev().nth(1).map(|st| st.rate).unwrap();
        assert_eq!(s.highest_pass, Some(pass));
        let cap = s.capacity.unwrap();
        assert!(pass < cap && cap < last.rate, "{cap}");
        assert!(!s.estimate().unwrap().within(0.05));
    }

    #[test]
    fn a_resumed_search_goes_on_from_its_bracket() {
        let mut first = Simulated::new(4_000.0);
        first.recovers = false;
        let cut = run(&mut first, 500.0);
        let mut plan = plan(500.0);
        plan.resumed = cut.steps.clone();
        let mut sim = Simulated::new(4_000.0);
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let s = rt.block_on(search(plan, &mut sim)).unwrap();
        assert_eq!(s.status, Status::Found, "{}", s.reason);
        assert_eq!(s.steps[..cut.steps.len()], cut.steps[..]);
        assert!(sim.said[0].contains("Resuming"), "{:?}", sim.said);
        // The next step is the bisection the kept ones called for, not the start again.
        assert_ne!(s.steps[cut.steps.len()].rate, 500.0);
    }

    /// A server whose knee is `before` req/s until step `change`, then `after`: a window
    /// passes exactly when its rate is within the knee.
    struct Moving {
        before: f64,
        after: f64,
        change: u32,
    }

    impl Steps for Moving {
        async fn run(
            &mut self,
            _: &Search,
            number: u32,
            rate: f64,
            window: Duration,
        ) -> Result<Option<Stepped>, Error> {
            let knee = if number < self.change {
                self.before
            } else {
                self.after
            };
            Ok(Some(super::super::simulated::point(
                rate <= knee,
                rate,
                window,
            )))
        }

        async fn recover(&mut self, _: Option<u64>) -> Result<Option<Duration>, Error> {
            Ok(Some(Duration::from_millis(500)))
        }

        async fn sample(&mut self, _: f64) -> Result<Option<Sample>, Error> {
            Ok(None)
        }

        async fn keep(&mut self, _: &Search) -> Result<(), Error> {
            Ok(())
        }

        fn stopped(&self) -> bool {
            false
        }

        fn event(&mut self, _: Event<'_>) {}
    }

    #[test]
    fn a_knee_that_moves_within_the_search_is_shown_by_the_drift_test() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let mut fixed = plan(500.0);
        fixed.max_steps = 40;
        fixed.settings.until = 0.001;
        let run = |after: f64| {
            let mut server = Moving {
                before: 4_000.0,
                after,
                change: 20,
            };
            rt.block_on(search(fixed.clone(), &mut server)).unwrap()
        };
        let steady = run(4_000.0);
        let d = steady.drift.clone().unwrap();
        assert!(!d.shown(), "{d:?}");
        assert!(d.text().ends_with("no drift shown"), "{}", d.text());
        // 10 % faster from step 20 on: the second half's knee is beyond the first's.
        let moved = run(4_400.0);
        let d = moved.drift.clone().unwrap();
        assert!(d.shown() && d.ratio > 1.05, "{d:?}");
        assert!(super::super::text(&moved).contains("Drift: it moved +"));
        // Its interval widened to hold both halves' figures, the fitted one kept, and said.
        let e = moved.estimate().unwrap();
        let (low, high) = (e.low.unwrap(), e.high.unwrap());
        assert!(
            low <= d.first.min(d.second) && high >= d.first.max(d.second),
            "{e:?} {d:?}"
        );
        assert!(d.fitted.is_some(), "{d:?}");
        assert!(
            d.text().contains("WARNING: the host drifted") && d.text().contains("widened"),
            "{}",
            d.text()
        );
        assert!(steady.drift.as_ref().is_some_and(|d| d.fitted.is_none()));
    }
}
