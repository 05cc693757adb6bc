//! The contract suite: every target (Node, Node cluster, Go, Go with a goroutine, Rust) held to
//! `targets/CONTRACT.md` against a real PostgreSQL and a local upstream: the verification the
//! experiment runner does, then what it cannot do quickly: `/delay`'s timing, `/compute`'s CPU
//! as the probe measures it on the process tree, a cluster's workers, a database stopped and
//! frozen, SIGTERM with requests in flight, and a short loadgen run under the probe.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use experiment::http::Http;
use experiment::targets::{self, Launch, Target};
use experiment::upstream::Upstream;
use experiment::{database, verify};

/// Timing and CPU checks want the two CPUs to themselves: one target at a time here, and under
/// cargo-nextest alone on the machine (`.config/nextest.toml` names every test that takes this).
fn exclusive() -> MutexGuard<'static, ()> {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

const SECRET: &str = "contract-suite-secret";

struct Fixture {
    db: pgcluster::Scratch,
    upstream: Upstream,
}

impl Fixture {
    async fn new() -> Fixture {
        let db = tokio::task::spawn_blocking(|| pgcluster::Scratch::new().expect("a database"))
            .await
            .unwrap();
        database::apply_schema(&db.url).await.expect("the schema");
        Fixture {
            db,
            upstream: Upstream::start().expect("the upstream"),
        }
    }

    fn launch(&self, name: &str) -> Launch {
        Launch::builtin(&dir(), name)
            .env("DATABASE_URL", self.db.url.clone())
            .env("UPSTREAM_URL", self.upstream.url())
            .env("SECRET", SECRET)
            .env("DB_POOL", "20")
            .env("DB_TIMEOUT_MS", "2000")
    }

    fn expect(&self) -> verify::Expect {
        verify::Expect {
            database_url: Some(self.db.url.clone()),
            secret: Some(SECRET.into()),
            upstream_body: Some(self.upstream.body.clone()),
        }
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn dir() -> PathBuf {
    targets::directory().expect("targets/")
}

async fn start(launch: &Launch) -> Target {
    match Target::start(launch).await {
        Ok(t) => t,
        Err(e) => panic!("{e}"),
    }
}

/// The whole contract for one target, as the suite runs it for each.
fn whole_contract(name: &str) {
    runtime().block_on(async {
        let fx = Fixture::new().await;
        let target = start(&fx.launch(name)).await;
        let base = target.base_url();

        let verdict = verify::verify(&base, &fx.expect()).await;
        assert!(verdict.passed(), "{name}: {}", verdict.failures());
        assert!(
            verdict
                .checks
                .iter()
                .all(|c| c.outcome == verify::Outcome::Passed),
            "{name}: every check ran: {:?}",
            verdict.checks
        );

        delay_is_on_time(&base).await;
        compute_costs_the_cpu_asked(name, &target, &base).await;
        survives_a_short_load(name, &target, &fx).await;
        sigterm_finishes_requests_in_flight(name, target).await;
    });
}

/// `/delay?ms=50`: the median of 7 answers within a few ms of 50.
async fn delay_is_on_time(base: &str) {
    let http = Http::new(Duration::from_secs(5));
    let mut times = Vec::new();
    for _ in 0..7 {
        let x = http.get(&format!("{base}/delay?ms=50")).await.unwrap();
        assert_eq!(x.status, 200);
        times.push(x.elapsed.as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    let median = times[3];
    assert!(
        (50.0..56.0).contains(&median),
        "/delay?ms=50 answered after {median:.1} ms (median of {times:?})"
    );
}

/// The process tree's CPU time, as the probe reads it.
fn tree_cpu_ns(sampler: &mut probe::sampler::Sampler) -> (u64, probe::sample::Sample) {
    let sample = sampler.tick(probe::clock::mono_ns(), 0).0;
    let cpu = sample.total.as_ref().map(|t| t.cpu_ns).unwrap_or(0);
    (cpu, sample)
}

fn sampler_for(pid: i32) -> probe::sampler::Sampler {
    let config = probe::sampler::SamplerConfig::new(probe::selector::Selector::Pid(pid));
    probe::sampler::Sampler::new(config).unwrap()
}

/// 10 × `/compute?ms=40`: the tree spends 400 ms of CPU, within 20 %.
async fn compute_costs_the_cpu_asked(name: &str, target: &Target, base: &str) {
    let mut sampler = sampler_for(target.pid());
    let http = Http::new(Duration::from_secs(10));
    // Let start-up work (JIT, calibration in the workers) settle first.
    for _ in 0..4 {
        http.get(&format!("{base}/compute?ms=1")).await.unwrap();
    }
    let (before, _) = tree_cpu_ns(&mut sampler);
    for _ in 0..10 {
        let x = http.get(&format!("{base}/compute?ms=40")).await.unwrap();
        assert_eq!(x.status, 200);
    }
    let (after, _) = tree_cpu_ns(&mut sampler);
    let ms = (after - before) as f64 / 1e6;
    assert!(
        (320.0..=480.0).contains(&ms),
        "{name}: 10 × /compute?ms=40 cost {ms:.0} ms of CPU, not 400 ± 20 %"
    );
}

fn loadgen() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let bin = exe.parent().unwrap().parent().unwrap().join("loadgen");
    assert!(
        bin.exists(),
        "{} is missing: cargo build --release -p loadgen (cargo test --workspace builds it)",
        bin.display()
    );
    bin
}

/// loadgen at 2,000 POST /users per second for 2 s, the probe watching: no errors, every row
/// inserted, probe samples kept with the run.
async fn survives_a_short_load(name: &str, target: &Target, fx: &Fixture) {
    database::empty_users(&fx.db.url).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let probe = probe::server::RunningProbe::start(
        sampler_for(target.pid()),
        listener,
        probe::server::ServeConfig::default(),
        4096,
        16 << 20,
    )
    .unwrap();
    let store_dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/runs.db", store_dir.path().display());
    let out = tokio::process::Command::new(loadgen())
        .args(["attack", "--rate", "2000", "--duration", "2s", "-m", "POST"])
        .args(["-H", "Content-Type: application/json", "--body"])
        .arg(r#"{"email":"user{{seq}}@example.com","password":"{{hex:24}}"}"#)
        .args(["--probe", &probe.addr.to_string(), "--pre-roll", "0s"])
        .args(["--post-roll", "1s", "--db", &db, "--output", "json"])
        .args(["--name", &format!("contract {name}")])
        .arg(format!("{}/users", target.base_url()))
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{name}: loadgen failed: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let requests = &summary["requests"];
    assert_eq!(requests["total"], 4000, "{name}: {stdout}");
    assert_eq!(
        requests["ok"], 4000,
        "{name}: errors under load: {}",
        summary["errors"]
    );
    assert_eq!(database::count_users(&fx.db.url).await.unwrap(), 4000);
    let store = store::Store::open(&db).await.unwrap();
    let runs = store.list_runs(&Default::default()).await.unwrap();
    let run = store.load_run(&runs[0].id).await.unwrap();
    let samples = run.probes.first().map(|p| p.records.len()).unwrap_or(0);
    assert!(
        samples >= 20,
        "{name}: {samples} probe records kept, 2 s at 10 Hz expected"
    );
}

/// SIGTERM while 4 slow requests are in flight: all 4 answered 200, then exit 0.
async fn sigterm_finishes_requests_in_flight(name: &str, target: Target) {
    let base = target.base_url();
    let http = Http::new(Duration::from_secs(10));
    let requests: Vec<_> = (0..4)
        .map(|_| {
            let http = http.clone();
            let url = format!("{base}/delay?ms=800");
            tokio::spawn(async move { http.get(&url).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(250)).await;
    let started = Instant::now();
    let stopped = target.stop(Duration::from_secs(15)).await;
    for request in requests {
        let x = request.await.unwrap();
        let x =
            x.unwrap_or_else(|e| panic!("{name}: a request in flight at SIGTERM was lost: {e}"));
        assert_eq!(x.status, 200, "{name}: in flight at SIGTERM");
    }
    assert!(stopped.is_ok(), "{name}: SIGTERM: {stopped:?}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{name}: took {:?} to stop",
        started.elapsed()
    );
}

#[test]
fn node_holds_the_contract() {
    let _one = exclusive();
    whole_contract("node");
}

#[test]
fn node_cluster_holds_the_contract() {
    let _one = exclusive();
    whole_contract("node-cluster");
}

#[test]
fn go_holds_the_contract() {
    let _one = exclusive();
    whole_contract("go");
}

#[test]
fn go_goroutine_holds_the_contract() {
    let _one = exclusive();
    whole_contract("go-goroutine");
}

#[test]
fn rust_holds_the_contract() {
    let _one = exclusive();
    whole_contract("rust");
}

/// A cluster has the workers it says, as the probe sees them under the primary; `auto` is one
/// per CPU; the pool is divided among them.
#[test]
fn node_cluster_has_its_workers() {
    let _one = exclusive();
    runtime().block_on(async {
        let cpus = std::thread::available_parallelism().unwrap().get();
        for (cluster, workers) in [("auto", cpus), ("3", 3)] {
            let target =
                start(&Launch::builtin(&dir(), "node-cluster").env("CLUSTER", cluster)).await;
            assert_eq!(target.ready.workers as usize, workers, "CLUSTER={cluster}");
            let mut sampler = sampler_for(target.pid());
            let (_, sample) = tree_cpu_ns(&mut sampler);
            let children = sample
                .processes
                .iter()
                .filter(|p| p.ppid == target.pid())
                .count();
            assert_eq!(
                children, workers,
                "CLUSTER={cluster}: {:?}",
                sample.processes
            );
            target.stop(Duration::from_secs(15)).await.unwrap();
        }
    });
}

/// The database stopped: `503` within the timeout, `/healthz` says so; started again: `201`
/// without a restart. Frozen (SIGSTOP, connections open, nothing answers): `503` within the
/// timeout, never a hang; thawed: `201` again.
fn database_outage(name: &str) {
    runtime().block_on(async {
        let mut cluster = pgcluster::Cluster::start(&Default::default()).unwrap();
        let url = cluster.url("postgres");
        database::apply_schema(&url).await.unwrap();
        let target = start(
            &Launch::builtin(&dir(), name)
                .env("DATABASE_URL", url.clone())
                .env("DB_TIMEOUT_MS", "1000"),
        )
        .await;
        let base = target.base_url();
        let http = Http::new(Duration::from_secs(10));
        let post = || async {
            http.post(
                &format!("{base}/users"),
                br#"{"email":"a@example.com","password":"p"}"#,
            )
            .await
            .unwrap()
        };
        assert_eq!(post().await.status, 201, "{name}: database up");

        cluster.stop().unwrap();
        for _ in 0..3 {
            let x = post().await;
            assert_eq!(x.status, 503, "{name}: database stopped: {:?}", x.body);
            assert!(
                x.elapsed < Duration::from_millis(2500),
                "{name}: 503 after {:?}",
                x.elapsed
            );
        }
        let x = http.get(&format!("{base}/healthz")).await.unwrap();
        assert_eq!(x.status, 503, "{name}: /healthz with the database stopped");
        assert_eq!(http.get(&format!("{base}/now")).await.unwrap().status, 200);

        cluster.start_again().unwrap();
        back_to_201(name, &post).await;

        cluster.freeze();
        let x = post().await;
        cluster.thaw();
        assert_eq!(x.status, 503, "{name}: database frozen: {:?}", x.body);
        assert!(
            x.elapsed < Duration::from_millis(3000),
            "{name}: 503 after {:?} with DB_TIMEOUT_MS=1000",
            x.elapsed
        );
        back_to_201(name, &post).await;
        target.stop(Duration::from_secs(15)).await.unwrap();
    });
}

async fn back_to_201<F, Fut>(name: &str, post: &F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = experiment::http::Exchange>,
{
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let x = post().await;
        if x.status == 201 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{name}: still {} 15 s after the database came back: {:?}",
            x.status,
            x.body
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[test]
fn node_survives_a_database_outage() {
    let _one = exclusive();
    database_outage("node");
}

#[test]
fn node_cluster_survives_a_database_outage() {
    let _one = exclusive();
    database_outage("node-cluster");
}

#[test]
fn go_survives_a_database_outage() {
    let _one = exclusive();
    database_outage("go");
}

#[test]
fn rust_survives_a_database_outage() {
    let _one = exclusive();
    database_outage("rust");
}

/// A setting that cannot be used ends the target at start, exit code 2, naming the variable.
#[test]
fn bad_settings_stop_every_target_at_start() {
    let _one = exclusive();
    runtime().block_on(async {
        for name in targets::NAMES {
            for (var, value) in [
                ("PORT", "eighty"),
                ("DB_POOL", "0"),
                ("DATABASE_URL", "mysql://x"),
            ] {
                let error = Target::start(&Launch::builtin(&dir(), name).env(var, value))
                    .await
                    .err()
                    .unwrap_or_else(|| panic!("{name} started with {var}={value}"));
                let text = error.to_string();
                assert!(
                    text.contains("exited with code 2") && text.contains(var),
                    "{name} with {var}={value}: {text}"
                );
            }
        }
    });
}

/// Each stack's `/compute` under load, profiled as `profile = true` starts it (`PROFILE=1`):
/// most of the tree's samples are in stacks through the function that does the work, named:
/// for Node a JIT frame named through V8's perf map, in a cluster's workers; for Go and Rust
/// their own functions, walked by frame pointers.
#[test]
fn compute_is_named_in_each_stacks_profile() {
    let _one = exclusive();
    // (target, CLUSTER, a frame every working stack passes through, where the samples are)
    let cases = [
        ("node", None, "work /", "node;"),
        ("node-cluster", Some("2"), "work /", "node (child);"),
        ("go", None, "main.spend", "showdown-target"),
        (
            "rust",
            None,
            "showdown_target_rust::routes::App::compute",
            "showdown-target",
        ),
    ];
    runtime().block_on(async {
        for (name, cluster, frame, root) in cases {
            let mut launch = Launch::builtin(&dir(), name).env("PROFILE", "1");
            if let Some(n) = cluster {
                launch = launch.env("CLUSTER", n);
            }
            let target = start(&launch).await;
            let base = target.base_url();
            let http = Http::new(Duration::from_secs(10));
            // Past the JIT's first tiers, then sampled.
            for _ in 0..50 {
                http.get(&format!("{base}/compute?ms=2")).await.unwrap();
            }
            let mut config =
                probe::sampler::SamplerConfig::new(probe::selector::Selector::Pid(target.pid()));
            config.profile = Some(probe::profile::ProfileConfig::default());
            let sampling = probe::sampler::Background::start(
                probe::sampler::Sampler::new(config).unwrap(),
                4096,
                64 << 20,
            )
            .unwrap();
            // Two clients, 3 s, at most 1,500 requests each.
            let until = Instant::now() + Duration::from_secs(3);
            let clients: Vec<_> = (0..2)
                .map(|_| {
                    let (http, url) = (http.clone(), format!("{base}/compute?ms=2"));
                    tokio::spawn(async move {
                        for _ in 0..1500 {
                            if Instant::now() > until {
                                break;
                            }
                            http.get(&url).await.unwrap();
                        }
                    })
                })
                .collect();
            for c in clients {
                c.await.unwrap();
            }
            tokio::time::sleep(Duration::from_millis(1200)).await;
            let buffer = sampling.buffer.clone();
            drop(sampling);
            target.stop(Duration::from_secs(15)).await.unwrap();
            let records = match buffer.with(|b| b.read(0, usize::MAX)) {
                probe::buffer::Read::Records(r) => r,
                probe::buffer::Read::Gap { .. } => panic!("{name}: records lost"),
            };
            let stacks: Vec<(String, u64)> = records
                .iter()
                .filter_map(|(_, r)| match &**r {
                    probe::protocol::Record::Profile(p) => Some(p.folded().collect::<Vec<_>>()),
                    _ => None,
                })
                .flatten()
                .collect();
            let total: u64 = stacks.iter().map(|(_, n)| n).sum();
            let through: u64 = stacks
                .iter()
                // A JIT frame (`JS:*work /…/compute.js:55:14`, `^` at the baseline tier) is
                // named only through the perf map.
                .filter(|(s, _)| s.contains(frame) && s.starts_with(root))
                .filter(|(s, _)| !frame.starts_with("work") || s.contains(";JS:"))
                .map(|(_, n)| n)
                .sum();
            let mut top = stacks.clone();
            top.sort_by_key(|s| std::cmp::Reverse(s.1));
            assert!(
                total >= 100 && through * 2 >= total,
                "{name}: {through} of {total} samples through {frame:?} in {root:?}; most: {:#?}",
                &top[..top.len().min(3)]
            );
        }
    });
}
