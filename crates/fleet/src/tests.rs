//! A second transport is a file: [`Loopback`], a stand-in whose guns are tasks of this process
//! answering `GunRequest`s as `loadgen gun` does (its build, its CPUs, its clock off by a known
//! amount, an order's outcome), is made ready and fired by the same code as the SSH guns, with
//! no SSH anywhere.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use order::{GunCheck, GunRequest};
use store::run::now_ns;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::watch;

use crate::transport::{BoxFuture, Link, Session, Transport};
use crate::{FleetError, GunFault, Progress};

/// One stand-in gun: where it has which build, its CPUs, its clock's offset, and whether it
/// answers at all.
#[derive(Debug, Clone)]
struct StandIn {
    name: String,
    /// `loadgen` path there → the SHA-256 of the build at it.
    builds: Arc<Mutex<BTreeMap<String, String>>>,
    cpus: String,
    offset_ns: i64,
    silent: bool,
}

impl StandIn {
    fn new(name: &str, loadgen: &str, build: &str, offset_ns: i64) -> StandIn {
        StandIn {
            name: name.into(),
            builds: Arc::new(Mutex::new(BTreeMap::from([(
                loadgen.to_string(),
                build.to_string(),
            )]))),
            cpus: "0-3".into(),
            offset_ns,
            silent: false,
        }
    }

    fn build_at(&self, loadgen: &str) -> Option<String> {
        self.builds.lock().ok()?.get(loadgen).cloned()
    }

    /// `loadgen gun` at `loadgen` answering one request, as the real one does: its exit code.
    async fn answer(
        &self,
        loadgen: &str,
        input: DuplexStream,
        output: &mut DuplexStream,
        errors: &mut DuplexStream,
    ) -> Option<i32> {
        let Some(build) = self.build_at(loadgen) else {
            let _ = errors
                .write_all(format!("sh: {loadgen}: not found\n").as_bytes())
                .await;
            return Some(127);
        };
        if self.silent {
            // A gun that hangs: it never answers, and its session never ends.
            std::future::pending::<()>().await;
        }
        let mut lines = BufReader::new(input).lines();
        let Ok(Some(first)) = lines.next_line().await else {
            return Some(1);
        };
        let Ok(request) = order::read_line::<GunRequest>(first.as_bytes()) else {
            return Some(1);
        };
        match request {
            GunRequest::Check { reach } => {
                let check = GunCheck {
                    version: "stand-in".into(),
                    build,
                    arch: std::env::consts::ARCH.into(),
                    cpus: self.cpus.clone(),
                    now_ns: now_ns() + self.offset_ns,
                    reach: reach.map(|_| order::Reach::Reached),
                };
                let _ = output.write_all(&order::line(&check)).await;
            }
            GunRequest::Clock => {
                while let Ok(Some(_)) = lines.next_line().await {
                    let now = format!("{}\n", now_ns() + self.offset_ns);
                    if output.write_all(now.as_bytes()).await.is_err() {
                        break;
                    }
                }
            }
            GunRequest::Fire { order, .. } => {
                let outcome = order::Outcome {
                    version: order::VERSION,
                    summary: None,
                    search: None,
                    compared: None,
                    run_id: order.keeping.run_id.clone(),
                    stopped: false,
                };
                let _ = output.write_all(&order::line(&outcome)).await;
            }
        }
        Some(0)
    }
}

/// The stand-in's link to one gun.
#[derive(Debug)]
struct LoopbackLink(StandIn);

impl Link for LoopbackLink {
    fn name(&self) -> &str {
        &self.0.name
    }

    fn kind(&self) -> &'static str {
        "loopback"
    }

    fn program(&self) -> &'static str {
        "the stand-in"
    }

    fn session(&self, loadgen: &str) -> Result<Session, FleetError> {
        let (input, theirs_in) = tokio::io::duplex(64 << 10);
        let (theirs_out, output) = tokio::io::duplex(64 << 10);
        let (theirs_err, errors) = tokio::io::duplex(64 << 10);
        let (done, ended) = tokio::sync::oneshot::channel();
        let gun = self.0.clone();
        let loadgen = loadgen.to_string();
        let task = tokio::spawn(async move {
            let (mut out, mut err) = (theirs_out, theirs_err);
            let code = gun.answer(&loadgen, theirs_in, &mut out, &mut err).await;
            drop((out, err));
            let _ = done.send(code);
        });
        Ok(Session {
            input: Box::new(input),
            output: Box::new(output),
            errors: Box::new(errors),
            ended: Box::pin(async move { Ok::<_, std::io::Error>(ended.await.ok().flatten()) }),
            kill: Box::new(move || task.abort()),
        })
    }

    fn candidates(&self, asked: Option<&str>, build: &str) -> Vec<String> {
        vec![
            asked.unwrap_or("loadgen").to_string(),
            format!("/cache/loadgen-{}", &build[..16.min(build.len())]),
        ]
    }

    fn install<'a>(
        &'a self,
        _local: &'a Path,
        build: &'a str,
        _arch: Option<&'a str>,
    ) -> BoxFuture<'a, Result<String, FleetError>> {
        Box::pin(async move {
            let at = format!("/cache/loadgen-{}", &build[..16.min(build.len())]);
            if let Ok(mut builds) = self.0.builds.lock() {
                builds.insert(at.clone(), build.to_string());
            }
            Ok::<_, FleetError>(at)
        })
    }
}

/// The stand-in transport: its guns, in order.
#[derive(Debug)]
struct Loopback(Vec<StandIn>);

impl Transport for Loopback {
    fn over(&self) -> &'static str {
        "in this process"
    }

    fn names(&self) -> Vec<String> {
        self.0.iter().map(|g| g.name.clone()).collect()
    }

    fn hosts(&self) -> order::GunHosts {
        // A real second transport adds its own variant; SSH's shape carries the names here.
        order::GunHosts::Ssh {
            destinations: self.names(),
            config: None,
            from: None,
            terraform_dir: None,
        }
    }

    fn store_env_file(&self) -> Option<String> {
        None
    }

    fn open(&self, n: usize) -> BoxFuture<'_, Result<Box<dyn Link>, FleetError>> {
        Box::pin(async move {
            let gun = self.0.get(n).cloned().ok_or(FleetError::NoGuns)?;
            Ok::<_, FleetError>(Box::new(LoopbackLink(gun)) as Box<dyn Link>)
        })
    }
}

/// This machine's `loadgen` (a file of a few bytes) and its build.
fn local() -> (tempfile::TempDir, std::path::PathBuf, String) {
    let dir = tempfile::tempdir().expect("a directory");
    let path = dir.path().join("loadgen");
    std::fs::write(&path, b"this build").expect("a file");
    let build = crate::build_of(&path).expect("its hash");
    (dir, path, build)
}

async fn prepared(
    guns: Vec<StandIn>,
    local: &Path,
    stop: watch::Receiver<bool>,
) -> (Result<Option<crate::Fleet>, FleetError>, Vec<Progress>) {
    let asked = order::Guns {
        cpus: Some("1-2".into()),
        ..Default::default()
    };
    let settings = crate::Settings::default();
    let mut said = Vec::new();
    let fleet = crate::prepare_over(
        Box::new(Loopback(guns)),
        crate::Preparing {
            guns: &asked,
            dir: Path::new("."),
            local,
            reach: Some("http://10.0.0.1:8080"),
            settings: &settings,
        },
        stop,
        &mut |p| said.push(p),
    )
    .await;
    (fleet, said)
}

#[tokio::test]
async fn a_transport_of_its_own_is_made_ready_and_fired_by_the_same_code() {
    let (_dir, path, build) = local();
    let guns = vec![
        StandIn::new("g1", "loadgen", &build, 0),
        // An older build where it looks first: this one installed, then found.
        StandIn::new("g2", "loadgen", "0123456789abcdef-old", 3_000_000),
    ];
    let (_tx, stop) = watch::channel(false);
    let (fleet, said) = prepared(guns, &path, stop.clone()).await;
    let fleet = fleet.expect("ready").expect("not stopped");
    assert_eq!(
        said.first(),
        Some(&Progress::Preparing {
            over: "in this process",
            guns: vec!["g1".into(), "g2".into()],
        })
    );
    let lines: Vec<String> = said[1..].iter().map(ToString::to_string).collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines[0].starts_with("  gun g1: loadgen stand-in (this build), clock"),
        "{lines:?}"
    );
    assert!(lines[1].contains("(this build, copied)"), "{lines:?}");
    assert!(
        lines[1].ends_with(", the generator held to CPU 1-2"),
        "{lines:?}"
    );
    assert_eq!(fleet.names(), ["g1", "g2"]);
    // The clock's offset, within the uncertainty of its measurement.
    let g2 = &fleet.guns[1];
    assert!(
        (g2.offset_ns - 3_000_000).abs() <= g2.uncertainty_ns + 1_000_000,
        "{} ±{}",
        g2.offset_ns,
        g2.uncertainty_ns
    );
    assert!(g2.loadgen.starts_with("/cache/loadgen-"), "{}", g2.loadgen);
    // A volley: every gun its shard, each kept under an id of its own.
    let mut order = order::Order {
        version: order::VERSION,
        work: order::Work::Attack(order::Attack::new(order::Load::Closed {
            connections: 1,
            requests: Some(1),
            duration_ns: None,
        })),
        requests: order::Requests::default(),
        pacing: order::Pacing::default(),
        keeping: order::Keeping::default(),
        probes: None,
        shard: None,
    };
    order.keeping.run_id = Some("group".into());
    let shots = fleet
        .volley(&order, "group", stop, Some(Duration::from_secs(1)))
        .await
        .expect("fired");
    assert_eq!(shots.len(), 2);
    for (shot, gun) in shots.iter().zip(["g1", "g2"]) {
        assert_eq!(shot.gun, gun);
        let fired = shot.fired.as_ref().expect("an outcome");
        let kept = fired.outcome.as_ref().and_then(|o| o.run_id.clone());
        assert_eq!(kept.as_deref(), Some(shot.run_id.as_str()));
        assert_ne!(shot.run_id, "group");
    }
    assert_ne!(shots[0].run_id, shots[1].run_id);
    fleet.close().await;
}

#[tokio::test]
async fn a_gun_whose_clock_is_not_kept_or_cpus_are_not_its_own_is_refused_by_name() {
    let (_dir, path, build) = local();
    let (_tx, stop) = watch::channel(false);
    let guns = vec![
        StandIn::new("g1", "loadgen", &build, 0),
        StandIn::new("g2", "loadgen", &build, 200_000_000),
    ];
    let (fleet, _) = prepared(guns, &path, stop.clone()).await;
    match fleet {
        Err(FleetError::Remote {
            gun,
            why: GunFault::ClockOff { .. },
        }) => assert_eq!(gun, "g2"),
        other => panic!("{other:?}"),
    }
    let mut narrow = StandIn::new("g1", "loadgen", &build, 0);
    narrow.cpus = "0".into();
    let (fleet, _) = prepared(vec![narrow], &path, stop).await;
    let said = fleet.expect_err("refused").to_string();
    assert_eq!(
        said,
        "gun g1: [guns] cpus = 1-2, but it may run on CPU 0 only"
    );
}

#[tokio::test]
async fn a_stop_ends_the_preparation_at_once() {
    let (_dir, path, build) = local();
    let mut silent = StandIn::new("g1", "loadgen", &build, 0);
    silent.silent = true;
    let (tx, stop) = watch::channel(false);
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let _ = tx.send(true);
    });
    let started = std::time::Instant::now();
    let (fleet, _) = prepared(vec![silent], &path, stop).await;
    assert!(matches!(fleet, Ok(None)), "{fleet:?}");
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// A link with only what every transport must say: the rest is the trait's defaults.
#[derive(Debug)]
struct BareLink;

impl Link for BareLink {
    fn name(&self) -> &str {
        "g1"
    }

    fn kind(&self) -> &'static str {
        "bare"
    }

    fn program(&self) -> &'static str {
        "the bare link"
    }

    fn session(&self, _loadgen: &str) -> Result<Session, FleetError> {
        Err(FleetError::NoGuns)
    }
}

#[tokio::test]
async fn a_link_has_what_its_transport_does_not_do_by_default() {
    let link = BareLink;
    assert_eq!(
        link.candidates(Some("/opt/loadgen"), "abc"),
        ["/opt/loadgen"]
    );
    assert!(link.candidates(None, "abc").is_empty());
    assert!(!link.lost(Some(255)));
    let forwarded = link.forward("10.0.0.1", 8080).await.expect("no forward");
    assert_eq!(forwarded, None);
    let refused = link
        .install(Path::new("loadgen"), "abc", None)
        .await
        .expect_err("refused");
    assert_eq!(
        refused.to_string(),
        "gun g1: its loadgen is not this runner's build, and a bare link cannot install one: put this build there and name it in [guns] loadgen"
    );
    Box::new(link).close().await;
}

/// What a transport tells while its guns are made ready (a pod refused) reaches the caller's
/// callback between the guns announced and the guns ready, in the words it was printed in.
#[tokio::test]
async fn what_the_transport_tells_meanwhile_reaches_the_callback() {
    let (_dir, path, build) = local();
    let refused = Progress::PodRefused {
        peer: "10.0.0.9:4000".parse().expect("an address"),
        why: "index 7 is in already".into(),
    };
    let (told, heard) = tokio::sync::mpsc::unbounded_channel();
    told.send(refused.clone()).expect("heard");
    let (_tx, stop) = watch::channel(false);
    let asked = order::Guns::default();
    let settings = crate::Settings::default();
    let mut said = Vec::new();
    let fleet = crate::prepare::prepare_told(
        Box::new(Loopback(vec![StandIn::new("g1", "loadgen", &build, 0)])),
        heard,
        crate::Preparing {
            guns: &asked,
            dir: Path::new("."),
            local: &path,
            reach: None,
            settings: &settings,
        },
        stop,
        &mut |p| said.push(p),
    )
    .await
    .expect("ready")
    .expect("not stopped");
    assert!(
        matches!(said.first(), Some(Progress::Preparing { .. })),
        "{said:?}"
    );
    assert_eq!(said.get(1), Some(&refused), "{said:?}");
    assert!(matches!(said.get(2), Some(Progress::Ready(_))), "{said:?}");
    assert_eq!(
        refused.to_string(),
        "guns: a pod from 10.0.0.9:4000 refused: index 7 is in already"
    );
    fleet.close().await;
}

/// The Kubernetes transport's words, as it printed them before it told them.
#[test]
fn the_kubernetes_transports_words_are_kept() {
    let awaited = Progress::PodsAwaited {
        manifest: "/tmp/showdown-guns.yaml".into(),
        count: 2,
        listen: "0.0.0.0:7700".into(),
        wait: Duration::from_secs(300),
        namespace: "default".into(),
        job: "showdown-guns".into(),
    };
    assert_eq!(
        awaited.to_string(),
        "guns: the Job is in /tmp/showdown-guns.yaml; 2 pods are awaited on 0.0.0.0:7700 for 300s. Start them: kubectl apply -f /tmp/showdown-guns.yaml, the Secret (SHOWDOWN_GUNS_SECRET_FILE names a file to write it to, mode 0600), then kubectl -n default patch job showdown-guns --type=merge -p '{\"spec\":{\"suspend\":false}}'"
    );
    let applying = Progress::ApplyingJob {
        namespace: "default".into(),
        job: "showdown-guns".into(),
        count: 2,
        image: "registry.example/loadgen:0.2.0\u{1b}".into(),
        context: "kind-lab".into(),
    };
    assert_eq!(
        applying.to_string(),
        "guns: applying the Job default/showdown-guns (2 pods of registry.example/loadgen:0.2.0\\u{1b}) with kubectl's context kind-lab"
    );
}
