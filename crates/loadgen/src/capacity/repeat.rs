//! Searches repeated, their steps pooled. On a shared host one search answers for one stretch
//! of a knee that moves; several spread over the sitting, and their steps pooled into one
//! estimate of C_p, each search a cluster ([`analysis::capacity::repeated`]), give an interval as
//! wide as the searches disagree. After the first, each search starts a little below the figure
//! so far and grows by small factors, so that it takes few steps to reach the knee. They stop
//! when the pooled 95 % interval is within `until` (after two searches at least), when the
//! searches allowed have run, when the budget is spent, or at once when a search can say only
//! "at least" (repeating cannot narrow a lower bound).

use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use analysis::capacity::{agreed, Agreed, Repeated, Status};

use super::search::{search, Event, Plan, Steps};
use crate::error::Error;

/// How far searches are repeated.
#[derive(Debug, Clone, Copy)]
pub struct Repeat {
    /// The most searches to run (1: a single search, its repeatability unmeasured).
    pub searches: u32,
    /// Stop when the median's 95 % interval is within ± this share of it.
    pub until: f64,
    /// Start no new search after this long.
    pub budget: Option<Duration>,
    /// Blocks of a calibration check after a single search (0: none).
    pub check: u32,
}

/// Runs `first`, then searches after it as `repeat` says, each with an id `new_id` gives.
pub async fn repeat(
    first: Plan,
    repeat: Repeat,
    steps: &mut impl Steps,
    mut new_id: impl FnMut() -> String,
) -> Result<Repeated, Error> {
    let started = Instant::now();
    let mut searches = Vec::new();
    let mut plan = first.clone();
    let mut capacity: Option<Agreed>;
    let mut at_least: Option<String>;
    let stopped = loop {
        let number = searches.len() + 1;
        let done = search(plan.clone(), steps).await?;
        let (status, found) = (done.status, done.capacity);
        at_least = done.only_at_least();
        searches.push(done);
        capacity = agreed(&searches);
        steps.event(Event::Searched {
            number,
            capacity: found,
            agreed: capacity.as_ref(),
        });
        let next = after_search(
            number,
            status,
            at_least.as_deref(),
            capacity.as_ref(),
            repeat,
            started,
        );
        match next {
            ControlFlow::Break(why) => break why,
            ControlFlow::Continue(rate) => plan = first.near(rate, new_id()),
        }
        plan.name = format!("{} (search {})", first.name, number + 1);
    };
    if repeat.check > 0 {
        if let [found] = searches.as_mut_slice() {
            super::check::check(found, &first, repeat.check, steps, new_id()).await?;
        }
    }
    Ok(Repeated {
        capacity,
        at_least,
        stopped,
        searches,
    })
}

/// After search `number` (its `status`, what it can say only `at_least`, what the searches so
/// far agree on): why they stop, or the figure so far that the next one starts near.
fn after_search(
    number: usize,
    status: Status,
    at_least: Option<&str>,
    capacity: Option<&Agreed>,
    repeat: Repeat,
    started: Instant,
) -> ControlFlow<String, f64> {
    if status == Status::Interrupted {
        return ControlFlow::Break("interrupted: the searches so far are kept".to_string());
    }
    if let Some(why) = at_least {
        return ControlFlow::Break(format!(
            "{why}: the capacity is only a lower bound, and repeating cannot narrow it"
        ));
    }
    let Some(so_far) = capacity else {
        return ControlFlow::Break("no search found a capacity".to_string());
    };
    if repeat.searches <= 1 {
        return ControlFlow::Break("one search was asked for (--searches 3 or more weighs the sitting's drift in the interval)".into());
    }
    if number >= 2 && so_far.within(repeat.until) {
        return ControlFlow::Break(format!(
            "the pooled 95 % interval is within ±{:.1} % after {number} searches",
            repeat.until * 100.0
        ));
    }
    if number as u32 >= repeat.searches {
        return ControlFlow::Break(format!(
            "the {} searches allowed have run{}",
            repeat.searches,
            short_of(so_far, repeat.until)
        ));
    }
    if let Some(budget) = repeat.budget {
        if started.elapsed() >= budget {
            return ControlFlow::Break(format!(
                "the budget of {} was spent after {number} searches{}",
                humantime::format_duration(budget),
                short_of(so_far, repeat.until)
            ));
        }
    }
    ControlFlow::Continue(so_far.rate)
}

/// What the figure reached, when it is short of `until`.
fn short_of(a: &Agreed, until: f64) -> String {
    match a.half_width {
        Some(h) => format!(
            ": the pooled 95 % interval is ±{:.1} % (asked: ±{:.1} %)",
            h * 100.0,
            until * 100.0
        ),
        None => ": the steps do not bound a 95 % interval".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::simulated::{plan, Simulated};
    use super::*;

    fn run(sim: &mut Simulated, r: Repeat) -> Repeated {
        let mut n = 1;
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(repeat(plan(500.0), r, sim, || {
            n += 1;
            format!("s{n}")
        }))
        .unwrap()
    }

    #[test]
    fn searches_repeat_until_the_pooled_interval_is_narrow_and_each_starts_near_it() {
        let mut sim = Simulated::new(4_000.0);
        sim.noise = 0.04;
        let r = run(
            &mut sim,
            Repeat {
                searches: 12,
                until: 0.02,
                budget: None,
                check: 0,
            },
        );
        let a = r.capacity.clone().unwrap();
        assert!(a.within(0.02), "{a:?}: {}", r.stopped);
        assert!(r.stopped.contains("within ±2.0 %"), "{}", r.stopped);
        assert!(r.searches.len() >= 2, "{}", r.searches.len());
        assert!((a.rate / 4_000.0 - 1.0).abs() < 0.08, "{a:?}");
        assert_eq!(a.confidence, Some(0.95));
        // The searches after the first start near the figure and take fewer coarse steps.
        let coarse = |s: &analysis::capacity::Search| s.steps.iter().filter(|st| !st.fine).count();
        let first = coarse(&r.searches[0]);
        for s in &r.searches[1..] {
            assert!(
                s.settings.start > 3_000.0 && s.settings.growth < 1.5,
                "{s:?}"
            );
            assert!(coarse(s) < first, "{} ≥ {first}", coarse(s));
        }
        let ids: Vec<&str> = r.searches.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids[..2], ["s1", "s2"]);
        assert!(
            sim.said.iter().any(|l| l.starts_with("Search 2:")),
            "{:?}",
            sim.said
        );
    }

    #[test]
    fn searches_allowed_run_out_with_what_the_interval_reached() {
        let mut sim = Simulated::new(4_000.0);
        sim.noise = 0.04;
        let r = run(
            &mut sim,
            Repeat {
                searches: 2,
                until: 0.001,
                budget: None,
                check: 0,
            },
        );
        assert_eq!(r.searches.len(), 2);
        assert!(
            r.stopped.contains("the 2 searches allowed have run"),
            "{}",
            r.stopped
        );
        // What the pooled interval reached, or that two searches (two clusters, read against
        // t with one degree of freedom) do not bound one.
        assert!(
            r.stopped.contains("pooled 95 % interval is ±")
                || r.stopped.contains("the steps do not bound a 95 % interval"),
            "{}",
            r.stopped
        );
    }

    #[test]
    fn a_lower_bound_is_not_repeated() {
        let mut sim = Simulated::new(16_000.0);
        sim.generator = 10_000.0;
        let r = run(
            &mut sim,
            Repeat {
                searches: 6,
                until: 0.05,
                budget: None,
                check: 0,
            },
        );
        assert_eq!(r.searches.len(), 1);
        assert!(r.at_least.is_some());
        assert!(r.stopped.contains("cannot narrow"), "{}", r.stopped);
    }
}
