//! The scheduler driven on a fake generator: remote targets (a loopback listener that accepts,
//! so readiness and verification are a TCP connect), a SQLite store in a temporary directory,
//! and a [`Fake`] that keeps the runs a generator would and can fall behind, lose a gun or be
//! stopped. No process is started: each test takes milliseconds.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use store::run::{Finish, HostFacts, RunConfig, RunMeta, RunStatus};
use store::vocabulary::{label, LimitedBy};
use store::{RunWriter, Store};
use tokio::sync::watch;

use super::event::{Event, Events};
use super::firing::{
    compare_outcome, measure_outcome, search_outcome, volley_outcome, warmup_outcome, Firing,
};
use super::*;
use crate::gun::Fired;
use fleet::{FleetError, Shot, ShotError};

/// What the fake does with one attack, by its run's name.
#[derive(Debug, Clone)]
enum Act {
    /// Runs to its end and is kept.
    Ok,
    /// Its generator could not keep the schedule.
    FellBehind,
    /// The user presses Ctrl-C while it runs.
    CtrlC,
    /// Gun `i`'s connection is lost during the volley.
    LoseGun(usize),
    /// A measured run whose corrected latency is this many nanoseconds (1 ms otherwise).
    Latency(u64),
    /// A comparison's search of this name ends at the generator's limit, with no pass.
    Limited,
    /// A comparison returns no search of this name.
    Unreturned,
    /// Other processes took the generator's CPUs in the first this many measured runs.
    HeldBack(usize),
}

struct Fake {
    store: Store,
    stop: watch::Sender<bool>,
    acts: HashMap<String, Act>,
    guns: usize,
    /// A comparison of searches' ratios to its first search, one for each other target in
    /// the order's `against`: (ratio, its 95 % interval's low and high ends).
    figures: Vec<(f64, f64, f64)>,
    /// (the attack's name, its phase), in the order fired.
    seen: Mutex<Vec<(String, String)>>,
}

impl Fake {
    fn summary(behind: bool) -> store::summary::Summary {
        Self::summary_of(behind, 1_000_000)
    }

    /// A one-request run's summary, its corrected latency `latency_ns`.
    fn summary_of(behind: bool, latency_ns: u64) -> store::summary::Summary {
        let mut totals = store::model::IntervalStats::new(0, 1_000_000_000);
        totals.lateness.record(40_000).expect("a lateness");
        totals.corrected.record(latency_ns).expect("a latency");
        totals.requests = 1;
        totals.sent = 1;
        let config = RunConfig {
            open_loop: true,
            ..Default::default()
        };
        let mut summary = store::summary::Summary::new(&store::summary::RunFacts {
            config: &config,
            started: UNIX_EPOCH,
            interval: Duration::from_secs(1),
            totals: &totals,
            attack: Duration::from_secs(1),
            wait: Duration::ZERO,
            cpu: Duration::ZERO,
            peak_rss_bytes: None,
            stopped: None,
            notes: Vec::new(),
            generator: Default::default(),
        });
        if behind {
            summary.generator.limited_by = Some(LimitedBy::Generator);
        }
        summary
    }

    /// Keeps `order`'s run complete with `summary`, as loadgen would.
    async fn keep(&self, order: &order::Order, summary: store::summary::Summary) {
        let k = &order.keeping;
        let id = k.run_id.clone().unwrap_or_default();
        let meta = RunMeta {
            id: id.clone(),
            name: Self::name(order),
            experiment: k.experiment.clone(),
            labels: k.labels.clone(),
            shard: None,
            tool_version: "test".into(),
            started_at_ns: now_ns(),
            interval_ns: 1_000_000_000,
            config: RunConfig::default(),
            gun_host: HostFacts::current(),
        };
        self.store.create_run(&meta).await.expect("the run kept");
        RunWriter::start(&self.store, &id)
            .finish(Finish {
                status: RunStatus::Complete,
                stop_reason: None,
                ended_at_ns: now_ns(),
                summary: Some(summary),
                warnings: Vec::new(),
                clock_offsets: Vec::new(),
                zero_mono_ns: 0,
            })
            .await;
    }

    fn name(order: &order::Order) -> String {
        order.keeping.name.clone().unwrap_or_default()
    }

    fn phase(order: &order::Order) -> String {
        order
            .keeping
            .labels
            .get(label::PHASE)
            .cloned()
            .unwrap_or_default()
    }

    /// What one generator's run came to.
    async fn shot(&self, order: &order::Order) -> Fired {
        let act = self
            .acts
            .get(&Self::name(order))
            .cloned()
            .unwrap_or(Act::Ok);
        let stopped = matches!(act, Act::CtrlC);
        let latency = match act {
            Act::Latency(ns) => ns,
            _ => 1_000_000,
        };
        let mut summary = Self::summary_of(matches!(act, Act::FellBehind), latency);
        if let Act::HeldBack(times) = act {
            let measured = self
                .seen
                .lock()
                .expect("seen")
                .iter()
                .filter(|(name, phase)| *name == Self::name(order) && phase == "measure")
                .count();
            if measured <= times {
                summary.generator.limited_by = Some(LimitedBy::GeneratorCpusShared);
            }
        }
        if stopped {
            let _ = self.stop.send(true);
        } else if Self::phase(order) == "measure" {
            self.keep(order, summary.clone()).await;
        }
        Fired {
            outcome: Some(order::Outcome {
                version: order::VERSION,
                summary: Some(summary),
                search: None,
                compared: (!stopped).then(|| self.compared(order)).flatten(),
                run_id: order.keeping.run_id.clone(),
                stopped,
            }),
            code: Some(if stopped { 3 } else { 0 }),
            said: String::new(),
        }
    }
}

impl Fake {
    /// What a comparison of searches (an order with `against`) returns: a search of every
    /// target (capacity 1,000 req/s times its figure) but those `Unreturned`, and each other
    /// target's ratio to the first as `figures` says.
    fn compared(&self, order: &order::Order) -> Option<analysis::capacity::compare::Compared> {
        use analysis::capacity::{compare, Status};
        let order::Work::Search(search) = &order.work else {
            return None;
        };
        if search.against.is_empty() {
            return None;
        }
        let first = order.keeping.run_id.clone().unwrap_or_default();
        let others = search.against.iter().filter_map(|a| a.keeping.as_ref());
        let searched = std::iter::once((Self::name(order), first.clone()))
            .chain(others.map(|k| (k.name.clone(), k.run_id.clone())));
        let mut compared = compare::Compared {
            id: "compared".into(),
            rounds: 16,
            searches: Vec::new(),
            ratios: Vec::new(),
            reason: "its 16 rounds run".into(),
            spread: None,
        };
        for (i, (name, id)) in searched.enumerate() {
            let figure = i.checked_sub(1).and_then(|i| self.figures.get(i).copied());
            let mut s = super::share::tests::search(
                Status::Compared,
                Some(1000.0 * figure.map_or(1.0, |f| f.0)),
            );
            (s.id, s.name) = (id.clone(), name.clone());
            match self.acts.get(&name) {
                Some(Act::Unreturned) => continue,
                Some(Act::Limited) => {
                    (s.status, s.capacity) = (Status::GeneratorLimited, None);
                    s.reason = "the generator was the limit at 500 req/s".into();
                }
                _ => {}
            }
            compared.searches.push(s);
            if let Some((ratio, low, high)) = figure {
                compared.ratios.push(compare::Ratio {
                    of: id,
                    of_name: name,
                    to: first.clone(),
                    to_name: Self::name(order),
                    p: 0.5,
                    ratio,
                    low: Some(low),
                    high: Some(high),
                    confidence: 0.95,
                    rounds: 16,
                    note: String::new(),
                });
            }
        }
        Some(compared)
    }
}

impl Firing for Fake {
    fn count(&self) -> usize {
        self.guns
    }

    fn guns(&self) -> Option<order::Guns> {
        (self.guns > 0).then(|| order::Guns {
            hosts: order::GunHosts::Ssh {
                destinations: (1..=self.guns).map(|i| format!("g{i}")).collect(),
                config: None,
                from: None,
                terraform_dir: None,
            },
            ..Default::default()
        })
    }

    async fn one(
        &self,
        order: &order::Order,
        _stop: watch::Receiver<bool>,
    ) -> Result<Fired, FleetError> {
        self.seen
            .lock()
            .expect("seen")
            .push((Self::name(order), Self::phase(order)));
        Ok(self.shot(order).await)
    }

    async fn volley(
        &self,
        order: &order::Order,
        group: &str,
        _stop: watch::Receiver<bool>,
        _length: Option<Duration>,
    ) -> Result<Vec<Shot>, FleetError> {
        self.seen
            .lock()
            .expect("seen")
            .push((Self::name(order), Self::phase(order)));
        let lost = match self.acts.get(&Self::name(order)) {
            Some(Act::LoseGun(i)) => Some(*i),
            _ => None,
        };
        let fired = self.shot(order).await;
        Ok((0..self.guns)
            .map(|i| Shot {
                gun: format!("g{}", i + 1),
                run_id: group.to_string(),
                fired: if lost == Some(i) {
                    Err(lost_link())
                } else {
                    Ok(fired.clone())
                },
            })
            .collect())
    }
}

/// A gun's link lost under its shard, as ssh says it.
fn lost_link() -> ShotError {
    ShotError::Lost {
        link: "SSH",
        said: "ssh exited 255".into(),
    }
}

/// A file of remote targets at a listener that accepts; its store; the figures its fake's
/// comparisons of searches return.
struct World {
    dir: tempfile::TempDir,
    experiment: crate::file::Experiment,
    db: String,
    figures: Vec<(f64, f64, f64)>,
}

/// Two remote targets, two repetitions each, at a fixed rate.
fn world() -> World {
    world_of(
        "repetitions = 2\n",
        &["a", "b"],
        "[load]\npath = \"/\"\nrate = 10\nduration = \"1s\"\n",
    )
}

/// The file `top`, the remote targets `targets`, then `tables`.
fn world_of(top: &str, targets: &[&str], tables: &str) -> World {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let addr = listener.local_addr().expect("its address");
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            drop(stream);
        }
    });
    let dir = tempfile::tempdir().expect("a directory");
    let file = dir.path().join("t.toml");
    let target = |name: &str| {
        format!("[[target]]\nname = \"{name}\"\nurl = \"http://{addr}\"\nprobe = \"127.0.0.1:9\"\ncontract = \"declared\"\n")
    };
    let targets: String = targets.iter().map(|t| target(t)).collect();
    std::fs::write(
        &file,
        format!(
            "name = \"sched\"\nquestion = \"Does the scheduler keep its order?\"\n{top}{targets}{tables}"
        ),
    )
    .expect("the file");
    let experiment = crate::file::Experiment::read(&file).expect("the file reads");
    let db = format!("sqlite://{}/runs.db", dir.path().display());
    World {
        dir,
        experiment,
        db,
        figures: Vec::new(),
    }
}

impl World {
    fn options(&self, retry_failed: bool) -> RunOptions {
        RunOptions {
            plan: Default::default(),
            db: self.db.clone(),
            retry_failed,
            again: false,
            gun: fleet::Local {
                loadgen: self.dir.path().join("no-loadgen"),
                cpus: None,
            },
            guns_settings: fleet::Settings::default(),
            live: false,
            trust: Default::default(),
        }
    }

    /// Runs the experiment on a fake that does `acts`, from `guns` guns: the report, what was
    /// fired (name, phase) and what was said.
    async fn run(
        &self,
        acts: &[(&str, Act)],
        guns: usize,
        retry_failed: bool,
    ) -> (RunReport, Vec<(String, String)>, Vec<Event>) {
        self.run_as(acts, guns, self.options(retry_failed)).await
    }

    /// [`World::run`] with `options`.
    async fn run_as(
        &self,
        acts: &[(&str, Act)],
        guns: usize,
        options: RunOptions,
    ) -> (RunReport, Vec<(String, String)>, Vec<Event>) {
        let (tx, rx) = watch::channel(false);
        let fake = Fake {
            store: Store::open(&self.db).await.expect("the store"),
            stop: tx,
            acts: acts
                .iter()
                .map(|(name, act)| (name.to_string(), act.clone()))
                .collect(),
            guns,
            figures: self.figures.clone(),
            seen: Mutex::new(Vec::new()),
        };
        let (events, said) = Events::collect();
        let report = run_with(&self.experiment, &options, &events, rx, Some(&fake))
            .await
            .expect("the run");
        let seen = fake.seen.into_inner().expect("seen");
        let said = said.lock().expect("said").clone();
        (report, seen, said)
    }
}

fn names(seen: &[(String, String)]) -> Vec<&str> {
    seen.iter().map(|(n, _)| n.as_str()).collect()
}

#[tokio::test]
async fn cells_run_in_the_plans_interleaved_order_and_a_second_run_skips_them() {
    let w = world();
    let started = SystemTime::now();
    let (report, seen, said) = w.run(&[], 0, false).await;
    assert_eq!(
        (report.ran, report.skipped, report.interrupted),
        (4, 0, false)
    );
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    // Repetitions alternate the targets' order, so neither always runs first.
    assert_eq!(
        names(&seen),
        [
            "sched target=a #1",
            "sched target=b #1",
            "sched target=b #2",
            "sched target=a #2"
        ]
    );
    assert!(seen.iter().all(|(_, phase)| phase == "measure"));
    assert_eq!(
        said.iter()
            .filter(|e| matches!(e, Event::Cell { .. }))
            .count(),
        4
    );
    assert!(said.contains(&Event::Finished));
    let (again, seen, said) = w.run(&[], 0, false).await;
    assert_eq!((again.ran, again.skipped), (0, 4));
    assert!(seen.is_empty());
    assert!(said
        .iter()
        .any(|e| matches!(e, Event::NothingToRun { cells: 4, .. })));
    assert!(started.elapsed().expect("time") < Duration::from_secs(60));
}

/// `--again` runs every cell again as a sitting of its own, which the history reads as its
/// next point; a run without it resumes the latest sitting, and says there is nothing to run
/// once that sitting is whole.
#[tokio::test]
async fn again_runs_every_cell_as_a_new_sitting_and_the_history_has_two() {
    let w = world();
    let (first, _, _) = w.run(&[], 0, false).await;
    assert_eq!(first.ran, 4);
    let again = RunOptions {
        again: true,
        ..w.options(false)
    };
    let (second, seen, _) = w.run_as(&[], 0, again).await;
    assert_eq!((second.ran, second.skipped), (4, 0));
    assert_eq!(seen.len(), 4);
    let (third, seen, said) = w.run(&[], 0, false).await;
    assert_eq!((third.ran, third.skipped), (0, 4));
    assert!(seen.is_empty());
    assert!(said
        .iter()
        .any(|e| matches!(e, Event::NothingToRun { cells: 4, .. })));

    let store = Store::open(&w.db).await.expect("the store");
    let runs = store
        .list_runs(&store::run::RunFilter::default())
        .await
        .expect("the runs");
    let sittings: std::collections::BTreeSet<&String> = runs
        .iter()
        .map(|r| {
            r.labels
                .get(label::SITTING)
                .expect("every run in a sitting")
        })
        .collect();
    assert_eq!(sittings.len(), 2, "{sittings:?}");
    let history =
        analysis::history::read::history(&store, "sched", Default::default(), Default::default())
            .await
            .expect("the history");
    assert_eq!(history.sittings.len(), 2);
    assert_eq!(history.unplaced, 0);
    assert!(!history.series.is_empty());
    for series in &history.series {
        assert_eq!(series.points.len(), 2, "{:?}", series.key);
        assert!(
            series.points.iter().all(|p| p.runs == 2),
            "two repetitions a sitting"
        );
    }
}

#[tokio::test]
async fn ctrl_c_stops_in_its_cell_and_the_next_run_resumes_there() {
    let w = world();
    let (report, seen, _) = w.run(&[("sched target=b #2", Act::CtrlC)], 0, false).await;
    assert!(report.interrupted);
    assert_eq!(report.ran, 2);
    assert!(report.failed.is_empty());
    assert_eq!(
        names(&seen).len(),
        3,
        "nothing fired after the stop: {seen:?}"
    );
    let (report, seen, said) = w.run(&[], 0, false).await;
    assert!(!report.interrupted);
    assert_eq!((report.ran, report.skipped), (2, 2));
    assert_eq!(names(&seen), ["sched target=b #2", "sched target=a #2"]);
    assert!(said.contains(&Event::Resuming {
        name: "sched".into(),
        skipped: 2,
        cells: 4
    }));
}

#[tokio::test]
async fn a_failed_cell_is_kept_with_its_reason_and_the_matrix_goes_on() {
    let w = world();
    let (report, _, said) = w
        .run(&[("sched target=a #1", Act::FellBehind)], 0, false)
        .await;
    assert_eq!(report.ran, 4);
    assert_eq!(report.failed.len(), 1);
    let (key, reason) = &report.failed[0];
    assert_eq!(key, "target=a");
    assert!(
        reason.starts_with("the generator could not keep the schedule"),
        "{reason}"
    );
    assert!(said.contains(&Event::CellFailed(reason.clone())));
    // Kept as failed: skipped next time, unless failed cells are retried.
    let (again, seen, _) = w.run(&[], 0, false).await;
    assert_eq!((again.ran, again.skipped), (0, 4));
    assert!(seen.is_empty());
    let (retried, seen, _) = w.run(&[], 0, true).await;
    assert_eq!((retried.ran, retried.skipped), (1, 3));
    assert_eq!(names(&seen), ["sched target=a #1"]);
}

#[tokio::test]
async fn a_run_other_processes_held_back_is_measured_again_once() {
    let w = world();
    // Held back once: kept as failed, measured again, the cell done.
    let (report, seen, said) = w
        .run(&[("sched target=a #1", Act::HeldBack(1))], 0, false)
        .await;
    assert_eq!(report.ran, 4);
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    let fired: Vec<_> = seen
        .iter()
        .filter(|(name, phase)| name == "sched target=a #1" && phase == "measure")
        .collect();
    assert_eq!(fired.len(), 2, "{seen:?}");
    assert!(
        said.iter()
            .any(|e| matches!(e, Event::MeasureAgain { key, .. } if key == "target=a")),
        "{said:?}"
    );
    let runs = Store::open(&w.db)
        .await
        .expect("the store")
        .list_runs(&store::RunFilter::default())
        .await
        .expect("the runs");
    let failed = runs
        .iter()
        .filter(|r| r.status == RunStatus::Failed)
        .count();
    assert_eq!(failed, 1, "the held-back run is kept, as failed");
    // Held back twice: the cell fails (once again is all it gets), and a generator that its
    // own work limited is not measured again at all.
    let w = world();
    let (report, seen, _) = w
        .run(
            &[
                ("sched target=a #1", Act::HeldBack(2)),
                ("sched target=b #1", Act::FellBehind),
            ],
            0,
            false,
        )
        .await;
    assert_eq!(report.failed.len(), 2, "{:?}", report.failed);
    let measured = |name: &str| {
        seen.iter()
            .filter(|(n, phase)| n == name && phase == "measure")
            .count()
    };
    assert_eq!(
        (measured("sched target=a #1"), measured("sched target=b #1")),
        (2, 1)
    );
}

#[tokio::test]
async fn a_lost_gun_fails_its_cell_and_names_the_gun() {
    let w = world();
    let (report, seen, _) = w
        .run(&[("sched target=b #1", Act::LoseGun(1))], 2, false)
        .await;
    assert_eq!(report.ran, 4);
    assert_eq!(
        report.failed,
        [(
            "target=b".to_string(),
            "gun g2 (2/2): the SSH connection was lost: ssh exited 255".to_string()
        )]
    );
    assert_eq!(
        seen.len(),
        4,
        "every cell fired once, as a volley: {seen:?}"
    );
}

fn fired(outcome: Option<order::Outcome>) -> Fired {
    Fired {
        outcome,
        code: Some(0),
        said: "its last words".into(),
    }
}

fn outcome(stopped: bool, behind: bool) -> Option<order::Outcome> {
    Some(order::Outcome {
        version: order::VERSION,
        summary: Some(Fake::summary(behind)),
        search: None,
        compared: None,
        run_id: None,
        stopped,
    })
}

#[test]
fn what_a_generator_came_to_decides_its_cell() {
    use CellOutcome::*;
    assert_eq!(measure_outcome(Ok(None)), Interrupted);
    assert_eq!(
        measure_outcome(Ok(Some(fired(outcome(true, false))))),
        Interrupted
    );
    assert_eq!(
        measure_outcome(Ok(Some(fired(outcome(false, false))))),
        Done
    );
    assert!(matches!(
        measure_outcome(Ok(Some(fired(outcome(false, true))))),
        Failed(why) if why.starts_with("the generator could not keep the schedule")
    ));
    assert!(matches!(
        measure_outcome(Ok(Some(fired(None)))),
        Failed(why) if why == "loadgen could not run (exit 0): its last words"
    ));
    assert_eq!(warmup_outcome(Ok(Some(fired(outcome(false, false))))), Done);
    assert!(matches!(
        warmup_outcome(Ok(Some(fired(None)))),
        Failed(why) if why == "the warm-up failed: its last words"
    ));
    // A search that printed no search could not run; one stopped is interrupted.
    assert!(matches!(
        search_outcome(Ok(Some(fired(outcome(false, false))))),
        Failed(_)
    ));
    assert_eq!(
        search_outcome(Ok(Some(fired(outcome(true, false))))),
        Interrupted
    );
    let shot = |gun: &str, fired: Result<Fired, ShotError>| Shot {
        gun: gun.into(),
        run_id: "r".into(),
        fired,
    };
    let ok = || Ok(fired(outcome(false, false)));
    assert_eq!(
        volley_outcome(Ok(vec![shot("g1", ok()), shot("g2", ok())]), false),
        Done
    );
    assert_eq!(
        volley_outcome(
            Ok(vec![shot("g1", ok()), shot("g2", Err(lost_link()))]),
            false
        ),
        Failed("gun g2 (2/2): the SSH connection was lost: ssh exited 255".into())
    );
    // Cut short because the user stopped the runner: interrupted, to run again.
    assert_eq!(
        volley_outcome(
            Ok(vec![shot("g1", ok()), shot("g2", Err(lost_link()))]),
            true
        ),
        Interrupted
    );
    assert!(matches!(
        volley_outcome(Ok(vec![shot("g1", Ok(fired(outcome(true, false))))]), false),
        Failed(why) if why.starts_with("gun g1 (1/1) stopped early")
    ));
    assert!(matches!(
        volley_outcome(Ok(vec![shot("g1", Ok(fired(outcome(false, true))))]), false),
        Failed(why) if why.starts_with("gun g1 (1/1) fell behind")
    ));
}

/// A comparison's outcome that returned `searches`, each `(id, status, capacity)`.
fn compared(
    searches: &[(&str, analysis::capacity::Status, Option<f64>)],
) -> Option<order::Outcome> {
    let searches = searches
        .iter()
        .map(|&(id, status, capacity)| {
            let mut s = super::share::tests::search(status, capacity);
            s.id = id.into();
            s.reason = format!("{id} ended {}", status.as_str());
            s
        })
        .collect();
    let compared = analysis::capacity::compare::Compared {
        id: "c".into(),
        rounds: 16,
        searches,
        ratios: Vec::new(),
        reason: "its rounds run".into(),
        spread: None,
    };
    outcome(false, false).map(|o| order::Outcome {
        compared: Some(compared),
        ..o
    })
}

#[test]
fn each_search_of_a_comparison_is_judged_as_its_own_cell() {
    use analysis::capacity::Status;
    use CellOutcome::*;
    let ids = ["s1".to_string(), "s2".to_string(), "s3".to_string()];
    // Stopped, or the runner stopped: every search interrupted, to run again.
    assert_eq!(
        compare_outcome(Ok(None), &ids),
        [Interrupted, Interrupted, Interrupted]
    );
    assert_eq!(
        compare_outcome(Ok(Some(fired(outcome(true, false)))), &ids),
        [Interrupted, Interrupted, Interrupted]
    );
    // Not run, or run without a comparison to show: every search failed with why.
    let gun = crate::gun::GunError::Search("no such SLO".into());
    assert_eq!(
        compare_outcome(Err(gun), &ids),
        vec![Failed("the search: no such SLO".into()); 3]
    );
    assert_eq!(
        compare_outcome(Ok(Some(fired(outcome(false, false)))), &ids),
        vec![Failed("loadgen could not run (exit 0): its last words".into()); 3]
    );
    // Each search on its own: found, or at least what the generator could drive, is a
    // result; the generator's limit with no pass below it is not; one not returned failed.
    let came = compared(&[
        ("s2", Status::GeneratorLimited, None),
        ("s1", Status::Compared, Some(1000.0)),
        ("s9", Status::Found, Some(900.0)),
    ]);
    assert_eq!(
        compare_outcome(Ok(Some(fired(came))), &ids),
        [
            Done,
            Failed("s2 ended generator-limited".into()),
            Failed("the comparison returned no search of this target (its rounds run)".into())
        ]
    );
    let at_least = compared(&[
        ("s1", Status::Found, Some(1000.0)),
        ("s2", Status::GeneratorLimited, Some(1500.0)),
    ]);
    assert_eq!(
        compare_outcome(Ok(Some(fired(at_least))), &ids[..2]),
        [Done, Done]
    );
}

/// `[compare]` of `a` (the baseline), `b` (the candidate) and `c` (the A/A control) at a fixed
/// rate, in eight rounds, p50 gated at 10 %.
fn compared_world() -> World {
    world_of(
        "repetitions = 8\n",
        &["a", "b", "c"],
        "[compare]\nbaseline = \"a\"\ncandidate = \"b\"\ncontrol = \"c\"\nmax_regression = \"p50=10%\"\n[load]\npath = \"/\"\nrate = 10\nduration = \"1s\"\n",
    )
}

/// Every repetition of `target` measured at `latency`.
fn latencies(target: &str, latency: impl Fn(u32) -> u64) -> Vec<(String, Act)> {
    (1..=8)
        .map(|r| {
            (
                format!("sched target={target} #{r}"),
                Act::Latency(latency(r)),
            )
        })
        .collect()
}

fn acts_of(acts: &[(String, Act)]) -> Vec<(&str, Act)> {
    acts.iter().map(|(n, a)| (n.as_str(), a.clone())).collect()
}

/// The judged p50 of a gate.
fn p50(gate: &analysis::ab::Gate) -> &analysis::ab::Judged {
    gate.measures
        .iter()
        .find(|j| j.measure == analysis::ab::Measure::P50)
        .expect("p50 judged")
}

#[tokio::test]
async fn compared_rounds_run_every_build_once_a_round_each_round_in_a_random_order() {
    let w = compared_world();
    let (report, seen, said) = w.run(&[], 0, false).await;
    assert_eq!((report.ran, report.interrupted), (24, false));
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    assert!(seen.iter().all(|(_, phase)| phase == "measure"), "{seen:?}");
    // Round r runs repetition r of every build, before round r + 1 begins.
    let rounds: Vec<Vec<&str>> = names(&seen).chunks(3).map(<[&str]>::to_vec).collect();
    assert_eq!(rounds.len(), 8, "{seen:?}");
    for (r, round) in rounds.iter().enumerate() {
        let mut sorted = round.clone();
        sorted.sort_unstable();
        let want: Vec<String> = ["a", "b", "c"]
            .iter()
            .map(|t| format!("sched target={t} #{}", r + 1))
            .collect();
        assert_eq!(sorted, want, "round {}: {seen:?}", r + 1);
    }
    // In a random order: eight rounds all alike would happen once in 6⁷.
    let order = |round: &Vec<&str>| -> Vec<char> {
        round
            .iter()
            .map(|n| n.chars().nth(13).unwrap_or('?'))
            .collect()
    };
    assert!(
        rounds.iter().any(|r| order(r) != order(&rounds[0])),
        "every round in one order: {seen:?}"
    );
    // One event a setting: its rounds run as one step of the schedule.
    assert_eq!(
        said.iter()
            .filter(|e| matches!(e, Event::Cell { .. }))
            .count(),
        1
    );
    // The gate, judged from the eight rounds' runs, is returned and kept for the page.
    let [gate] = report.gates.as_slice() else {
        panic!("one gate: {:?}", report.gates)
    };
    assert_eq!(
        (gate.baseline.as_str(), gate.candidate.as_str()),
        ("a", "b")
    );
    assert_eq!(gate.control.as_deref(), Some("c"));
    assert_eq!(gate.rounds, 8);
    assert_eq!(gate.processes, analysis::ab::Processes::Fresh);
    let store = Store::open(&w.db).await.expect("the store");
    let kept = analysis::ab::gates(&store, "sched")
        .await
        .expect("the gates");
    assert_eq!(kept.len(), 1);
    assert_eq!(&kept[0].gate, gate);
    // A comparison is one sitting's: run again, every round runs again, judged anew.
    let (again, seen, _) = w.run(&[], 0, false).await;
    assert_eq!((again.ran, again.skipped, seen.len()), (24, 0, 24));
    assert_eq!(again.gates.len(), 1);
    assert_eq!(
        analysis::ab::gates(&store, "sched")
            .await
            .expect("the gates")
            .len(),
        2
    );
}

#[tokio::test]
async fn compared_rounds_judge_an_unchanged_build_a_slower_one_and_a_noisy_one() {
    use analysis::ab::{Outcome, Verdict};
    let w = compared_world();
    // The A/A control the baseline's build, 2 % either side of it by round; the candidate the
    // same as the baseline, 25 % slower, or apart by round.
    let control = latencies("c", |r| if r % 2 == 0 { 1_020_000 } else { 980_000 });
    for (candidate, outcome) in [
        (latencies("b", |_| 1_000_000), Outcome::Pass),
        (latencies("b", |_| 1_250_000), Outcome::Regression),
        (
            latencies("b", |r| if r % 2 == 0 { 1_500_000 } else { 700_000 }),
            Outcome::Inconclusive,
        ),
    ] {
        let acts = [candidate, control.clone()].concat();
        let (report, _, _) = w.run(&acts_of(&acts), 0, false).await;
        let [gate] = report.gates.as_slice() else {
            panic!("one gate: {:?}", report.gates)
        };
        assert_eq!(gate.outcome(), outcome, "{gate:?}");
        let judged = p50(gate);
        // The control's runs against the baseline's, round by round: it holds.
        let aa = judged.control.as_ref().expect("the control's ratio");
        assert!(!aa.differs(), "the A/A control holds: {aa:?}");
        assert_eq!(judged.control_ratios.len(), 8);
        for (i, ratio) in judged.control_ratios.iter().enumerate() {
            let want = if i % 2 == 1 { 1.02 } else { 0.98 };
            assert!((ratio - want).abs() < 0.005, "round {}: {ratio}", i + 1);
        }
        assert_eq!(judged.ratios.len(), 8);
        match outcome {
            Outcome::Pass => assert_eq!(judged.verdict, Verdict::NoChange),
            Outcome::Regression => {
                assert_eq!(judged.verdict, Verdict::Regression);
                let change = judged.change.as_ref().expect("a change");
                assert!((change.ratio - 1.25).abs() < 0.01, "{change:?}");
            }
            Outcome::Inconclusive => {
                assert!(
                    matches!(judged.verdict, Verdict::TooNoisy { .. }),
                    "{judged:?}"
                )
            }
        }
    }
}

#[tokio::test]
async fn a_failed_round_fails_its_cell_and_the_gate_is_judged_without_it() {
    let w = compared_world();
    let (report, seen, _) = w
        .run(&[("sched target=b #3", Act::FellBehind)], 0, false)
        .await;
    assert_eq!(
        (report.ran, report.interrupted, seen.len()),
        (24, false, 24)
    );
    let [(key, reason)] = report.failed.as_slice() else {
        panic!("one failed cell: {:?}", report.failed)
    };
    assert_eq!(key, "target=b");
    assert!(
        reason.starts_with("the generator could not keep the schedule"),
        "{reason}"
    );
    let [gate] = report.gates.as_slice() else {
        panic!("one gate: {:?}", report.gates)
    };
    // Eight rounds run; the candidate's third is not among the pairs judged.
    assert_eq!(gate.rounds, 8);
    let judged = p50(gate);
    assert_eq!(judged.ratios.len(), 7);
    assert_eq!(judged.control_ratios.len(), 8);
    assert_eq!(judged.change.as_ref().map(|c| c.rounds), Some(7));
    // Its run is kept failed, with the reason.
    let store = Store::open(&w.db).await.expect("the store");
    let plan = crate::plan::plan(&w.experiment, &Default::default()).expect("the plan");
    let sitting = sitting(&store, &w.experiment, &plan, false)
        .await
        .expect("the sitting");
    let states = states(&store, &w.experiment, &plan, sitting.as_deref())
        .await
        .expect("the states");
    assert_eq!(
        states
            .iter()
            .filter(|s| matches!(s, CellState::Failed { .. }))
            .count(),
        1
    );
}

/// `[compare]` of `a`, `b` and `c` (as [`compared_world`]) by their capacities: their
/// searches compared in `[search]` rounds, capacity gated at 5 % (the default).
fn searched_world(figures: Vec<(f64, f64, f64)>) -> World {
    let mut w = world_of(
        "repetitions = 1\n",
        &["a", "b", "c"],
        "[search]\nslo = [\"p99<=10ms\"]\nrounds = 16\n[compare]\nbaseline = \"a\"\ncandidate = \"b\"\ncontrol = \"c\"\n[load]\npath = \"/\"\nduration = \"1s\"\n",
    );
    w.figures = figures;
    w
}

#[tokio::test]
async fn searches_compared_in_rounds_are_one_order_and_their_capacities_are_gated() {
    use analysis::ab::{Measure, Outcome, Verdict};
    // (the candidate's ratio to the baseline, then the control's), and what the gate says.
    let held = (1.0, 0.97, 1.03);
    for (candidate, outcome) in [
        ((1.0, 0.98, 1.02), Outcome::Pass),
        ((0.80, 0.76, 0.84), Outcome::Regression),
        ((0.96, 0.90, 1.02), Outcome::Inconclusive),
    ] {
        let w = searched_world(vec![candidate, held]);
        let (report, seen, said) = w.run(&[], 0, false).await;
        assert_eq!((report.ran, report.interrupted), (3, false));
        assert!(report.failed.is_empty(), "{:?}", report.failed);
        // One order: the baseline's search, with the candidate's and the control's against it.
        assert_eq!(
            seen,
            [("sched target=a #1".to_string(), "step".to_string())]
        );
        let cell = said.iter().find_map(|e| match e {
            Event::Cell { key, .. } => Some(key.as_str()),
            _ => None,
        });
        assert_eq!(cell, Some("target=a + target=b + target=c"));
        let [gate] = report.gates.as_slice() else {
            panic!("one gate: {:?}", report.gates)
        };
        assert_eq!(gate.outcome(), outcome, "{gate:?}");
        assert_eq!(gate.rounds, 16);
        let [judged] = gate.measures.as_slice() else {
            panic!("capacity alone: {:?}", gate.measures)
        };
        assert_eq!(judged.measure, Measure::Capacity);
        assert_eq!(judged.baseline, Some(1000.0));
        assert_eq!(judged.candidate, Some(1000.0 * candidate.0));
        let control = judged.control.as_ref().expect("the control's ratio");
        assert_eq!((control.low, control.high), (0.97, 1.03));
        if outcome == Outcome::Inconclusive {
            assert!(
                matches!(judged.verdict, Verdict::TooNoisy { .. }),
                "{judged:?}"
            );
        }
        let store = Store::open(&w.db).await.expect("the store");
        let kept = analysis::ab::gates(&store, "sched")
            .await
            .expect("the gates");
        assert_eq!(kept.len(), 1);
        assert_eq!(&kept[0].gate, gate);
    }
}

#[tokio::test]
async fn a_search_a_comparison_could_not_finish_fails_its_own_cell() {
    use analysis::ab::{Outcome, Verdict};
    let w = searched_world(vec![(0.98, 0.95, 1.01), (1.0, 0.97, 1.03)]);
    let (report, _, _) = w
        .run(
            &[
                ("sched target=b #1", Act::Unreturned),
                ("sched target=c #1", Act::Limited),
            ],
            0,
            false,
        )
        .await;
    assert_eq!(report.ran, 3);
    assert_eq!(
        report.failed,
        [
            (
                "target=b".to_string(),
                "the comparison returned no search of this target (its 16 rounds run)".to_string()
            ),
            (
                "target=c".to_string(),
                "the generator was the limit at 500 req/s".to_string()
            )
        ]
    );
    // The gate is still judged from what came back, and says the candidate was not measured.
    let [gate] = report.gates.as_slice() else {
        panic!("one gate: {:?}", report.gates)
    };
    assert_eq!(gate.outcome(), Outcome::Inconclusive);
    assert!(matches!(
        gate.measures[0].verdict,
        Verdict::Unmeasured { .. }
    ));
}

#[tokio::test]
async fn a_comparison_of_searches_stopped_is_interrupted_whole_and_judges_no_gate() {
    let w = searched_world(vec![(1.0, 0.98, 1.02), (1.0, 0.97, 1.03)]);
    let (report, _, _) = w.run(&[("sched target=a #1", Act::CtrlC)], 0, false).await;
    assert!(report.interrupted);
    assert_eq!(report.ran, 0);
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    assert!(report.gates.is_empty(), "{:?}", report.gates);
}
#[tokio::test]
async fn compared_rounds_stopped_midway_judge_no_gate() {
    let w = compared_world();
    let (report, seen, _) = w.run(&[("sched target=a #4", Act::CtrlC)], 0, false).await;
    assert!(report.interrupted);
    assert!(report.gates.is_empty(), "{:?}", report.gates);
    assert!(
        names(&seen).iter().all(|n| !n.ends_with("#5")),
        "nothing fired after the stop: {seen:?}"
    );
    let store = Store::open(&w.db).await.expect("the store");
    assert!(analysis::ab::gates(&store, "sched")
        .await
        .expect("the gates")
        .is_empty());
}

/// A gate's round whose run other processes held back is kept as failed and measured again in
/// its round once the generator's CPUs are quiet, as a cell of its own is; held back twice, the
/// round's cell fails. With fresh processes and kept ones alike.
#[tokio::test]
async fn a_round_other_processes_held_back_is_measured_again_once() {
    for processes in ["fresh", "kept"] {
        let world = || {
            world_of(
                "repetitions = 8\n",
                &["a", "b", "c"],
                &format!("[compare]\nbaseline = \"a\"\ncandidate = \"b\"\ncontrol = \"c\"\nprocesses = \"{processes}\"\nmax_regression = \"p50=10%\"\n[load]\npath = \"/\"\nrate = 10\nduration = \"1s\"\n"),
            )
        };
        let w = world();
        let (report, seen, said) = w
            .run(&[("sched target=b #3", Act::HeldBack(1))], 0, false)
            .await;
        assert_eq!(report.ran, 24, "{processes}");
        assert!(report.failed.is_empty(), "{processes}: {:?}", report.failed);
        let measured = |name: &str| {
            seen.iter()
                .filter(|(n, phase)| n == name && phase == "measure")
                .count()
        };
        assert_eq!(measured("sched target=b #3"), 2, "{processes}: {seen:?}");
        assert!(
            said.iter()
                .any(|e| matches!(e, Event::MeasureAgain { key, .. } if key == "target=b")),
            "{processes}: {said:?}"
        );
        let [gate] = report.gates.as_slice() else {
            panic!("one gate: {:?}", report.gates)
        };
        assert_eq!(gate.rounds, 8, "{processes}: every round counted");
        // Held back twice: the round's cell fails, kept with its reason.
        let w = world();
        let (report, seen, _) = w
            .run(&[("sched target=b #3", Act::HeldBack(2))], 0, false)
            .await;
        assert_eq!(report.failed.len(), 1, "{processes}: {:?}", report.failed);
        assert_eq!(
            seen.iter()
                .filter(|(n, phase)| n == "sched target=b #3" && phase == "measure")
                .count(),
            2,
            "{processes}"
        );
    }
}

#[tokio::test]
async fn fresh_processes_are_warmed_every_round_and_kept_ones_once() {
    for processes in ["fresh", "kept"] {
        let w = world_of(
            "repetitions = 8\nwarmup = \"1s\"\n",
            &["a", "b", "c"],
            &format!("[compare]\nbaseline = \"a\"\ncandidate = \"b\"\ncontrol = \"c\"\nprocesses = \"{processes}\"\n[load]\npath = \"/\"\nrate = 10\nduration = \"1s\"\n"),
        );
        let (report, seen, _) = w.run(&[], 0, false).await;
        assert_eq!(report.ran, 24, "{processes}");
        assert!(report.failed.is_empty(), "{processes}: {:?}", report.failed);
        let phase = |p: &str| seen.iter().filter(|(_, q)| q == p).count();
        assert_eq!(phase("measure"), 24, "{processes}: {seen:?}");
        match processes {
            // Each run a process of its own: warmed just before it is measured.
            "fresh" => {
                assert_eq!(phase("warmup"), 24, "{seen:?}");
                for pair in seen.chunks(2) {
                    let [(warmed, w), (measured, m)] = pair else {
                        panic!("{seen:?}")
                    };
                    assert_eq!((w.as_str(), m.as_str()), ("warmup", "measure"));
                    assert_eq!(warmed, &format!("{measured} (warmup)"));
                }
            }
            // Each build started and warmed once, before the first round.
            _ => {
                assert_eq!(phase("warmup"), 3, "{seen:?}");
                assert!(seen[..3].iter().all(|(_, p)| p == "warmup"), "{seen:?}");
            }
        }
        let [gate] = report.gates.as_slice() else {
            panic!("one gate: {:?}", report.gates)
        };
        let kept = processes == "kept";
        assert_eq!(gate.processes == analysis::ab::Processes::Kept, kept);
    }
}

#[tokio::test]
async fn search_rounds_run_each_repetitions_searches_as_one_order_in_the_plans_order() {
    let w = world_of(
        "repetitions = 2\n",
        &["a", "b"],
        "[search]\nslo = [\"p99<=10ms\"]\nrounds = 16\n[load]\npath = \"/\"\nduration = \"1s\"\n",
    );
    let (report, seen, said) = w.run(&[], 0, false).await;
    assert_eq!((report.ran, report.interrupted), (4, false));
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    // One order a repetition, its first search the plan's first of that repetition (the
    // targets' order alternates), the other against it; no gate without [compare].
    assert_eq!(
        seen,
        [
            ("sched target=a #1".to_string(), "step".to_string()),
            ("sched target=b #2".to_string(), "step".to_string())
        ]
    );
    let steps: Vec<&str> = said
        .iter()
        .filter_map(|e| match e {
            Event::Cell { key, .. } => Some(key.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(steps, ["target=a + target=b", "target=b + target=a"]);
    assert!(report.gates.is_empty(), "{:?}", report.gates);
}
