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
use super::firing::{measure_outcome, search_outcome, volley_outcome, warmup_outcome, Firing};
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
}

struct Fake {
    store: Store,
    stop: watch::Sender<bool>,
    acts: HashMap<String, Act>,
    guns: usize,
    /// (the attack's name, its phase), in the order fired.
    seen: Mutex<Vec<(String, String)>>,
}

impl Fake {
    fn summary(behind: bool) -> store::summary::Summary {
        let mut totals = store::model::IntervalStats::new(0, 1_000_000_000);
        totals.lateness.record(40_000).expect("a lateness");
        totals.corrected.record(1_000_000).expect("a latency");
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

    /// Keeps `order`'s run complete, as loadgen would.
    async fn keep(&self, order: &order::Order) {
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
                summary: None,
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
        if stopped {
            let _ = self.stop.send(true);
        } else if Self::phase(order) == "measure" {
            self.keep(order).await;
        }
        Fired {
            outcome: Some(order::Outcome {
                version: order::VERSION,
                summary: Some(Self::summary(matches!(act, Act::FellBehind))),
                search: None,
                compared: None,
                run_id: order.keeping.run_id.clone(),
                stopped,
            }),
            code: Some(if stopped { 3 } else { 0 }),
            said: String::new(),
        }
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

/// A file of two remote targets at a listener that accepts, two repetitions each; its store.
struct World {
    dir: tempfile::TempDir,
    experiment: crate::file::Experiment,
    db: String,
}

fn world() -> World {
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
    std::fs::write(
        &file,
        format!(
            "name = \"sched\"\nquestion = \"Does the scheduler keep its order?\"\nrepetitions = 2\n{}{}[load]\npath = \"/\"\nrate = 10\nduration = \"1s\"\n",
            target("a"),
            target("b")
        ),
    )
    .expect("the file");
    let experiment = crate::file::Experiment::read(&file).expect("the file reads");
    let db = format!("sqlite://{}/runs.db", dir.path().display());
    World {
        dir,
        experiment,
        db,
    }
}

impl World {
    fn options(&self, retry_failed: bool) -> RunOptions {
        RunOptions {
            plan: Default::default(),
            db: self.db.clone(),
            retry_failed,
            gun: fleet::Local {
                loadgen: self.dir.path().join("no-loadgen"),
                cpus: None,
            },
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
        let (tx, rx) = watch::channel(false);
        let fake = Fake {
            store: Store::open(&self.db).await.expect("the store"),
            stop: tx,
            acts: acts
                .iter()
                .map(|(name, act)| (name.to_string(), act.clone()))
                .collect(),
            guns,
            seen: Mutex::new(Vec::new()),
        };
        let (events, said) = Events::collect();
        let report = run_with(
            &self.experiment,
            &self.options(retry_failed),
            &events,
            rx,
            Some(&fake),
        )
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
