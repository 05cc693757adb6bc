//! `loadgen experiment`: the runner end to end with real targets (the Rust one, quick to start),
//! a real PostgreSQL and the `loadgen` binary itself: every cell kept with its labels and probe
//! samples, a cell whose target will not start kept as failed with its reason while the matrix
//! goes on, a target that fails verification not measured, and an interrupted run resumed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use store::run::{RunFilter, RunStatus};
use store::Store;

const LOADGEN: &str = env!("CARGO_BIN_EXE_loadgen");

/// The `experiment` command with a store and a database of the test's own.
fn experiment(args: &[&str], db: &str, targets_db: &str) -> Output {
    let out = Command::new(LOADGEN)
        .arg("experiment")
        .args(args)
        .args(["--db", db])
        .env("DATABASE_URL", targets_db)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    eprintln!(
        "loadgen experiment {args:?}\n--- stdout\n{}--- stderr\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn write(dir: &Path, name: &str, toml: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, toml).unwrap();
    path.display().to_string()
}

async fn measured(db: &str, experiment: &str) -> Vec<store::run::RunListing> {
    let store = Store::open(db).await.unwrap();
    let mut filter = RunFilter {
        experiment: Some(experiment.into()),
        ..Default::default()
    };
    filter.labels.insert("phase".into(), "measure".into());
    store.list_runs(&filter).await.unwrap()
}

/// The one experiment page drawn into `site`.
fn experiment_page(site: &Path) -> String {
    let mut pages = std::fs::read_dir(site.join("experiments")).unwrap();
    std::fs::read_to_string(pages.next().unwrap().unwrap().path()).unwrap()
}

const FILE: &str = r#"
name = "runner"
question = "Does the runner keep every cell?"
repetitions = 2
warmup = "1s"
pre_roll = "500ms"
post_roll = "500ms"

[database]
url_env = "DATABASE_URL"

[[target]]
name = "rust"

[load]
method = "POST"
path = "/users"
headers = { "Content-Type" = "application/json" }
body = '{"email":"u{{seq}}@example.com","password":"{{hex:8}}"}'
rate = 300
duration = "1s"

# DB_POOL=0 is a setting the target refuses at start: those cells fail, the others go on.
[matrix]
env.DB_POOL = ["5", "0"]
"#;

#[test]
fn every_cell_is_kept_a_failed_one_with_its_reason_and_a_second_run_skips_them() {
    let work = tempfile::tempdir().unwrap();
    let pg = pgcluster::Scratch::new().unwrap();
    let db = format!("sqlite://{}/runs.db", work.path().display());
    let file = write(work.path(), "runner.toml", FILE);
    let site = work.path().join("site");

    let out = experiment(
        &["run", &file, "--report", site.to_str().unwrap()],
        &db,
        &pg.url,
    );
    assert!(out.status.success(), "{}", text(&out));
    let said = text(&out);
    assert!(said.contains("4 cells run (2 failed)"), "{said}");

    let rt = tokio::runtime::Runtime::new().unwrap();
    let runs = rt.block_on(measured(&db, "runner"));
    assert_eq!(runs.len(), 4, "one measured run per cell");
    for run in &runs {
        for key in [
            "target",
            "env.DB_POOL",
            "repetition",
            "cell",
            "file",
            "scale",
            "phase",
        ] {
            assert!(run.labels.contains_key(key), "{key} in {:?}", run.labels);
        }
        match run.labels["env.DB_POOL"].as_str() {
            "5" => {
                assert_eq!(run.status, RunStatus::Complete, "{run:?}");
                let s = run.summary.as_ref().unwrap();
                assert_eq!(s.requests.ok, 300, "every request answered 201");
                assert!(run.peak_rss_bytes.is_some(), "probe samples were kept");
            }
            _ => assert_eq!(run.status, RunStatus::Failed, "{run:?}"),
        }
    }
    let store = rt.block_on(Store::open(&db)).unwrap();
    let failed = runs.iter().find(|r| r.status == RunStatus::Failed).unwrap();
    let failed = rt.block_on(store.load_run(&failed.id)).unwrap();
    let reason = failed.stop_reason.unwrap();
    assert!(
        reason.contains("did not start") && reason.contains("DB_POOL"),
        "the reason names the problem, with the target's last output: {reason}"
    );
    let warmups = rt.block_on(store.list_runs(&RunFilter {
        experiment: Some("runner".into()),
        labels: [("phase".to_string(), "warmup".to_string())].into(),
        ..Default::default()
    }));
    assert_eq!(warmups.unwrap().len(), 2, "a warm-up per measured cell");

    // The page answers from the two good cells and shows the failed ones.
    let page = experiment_page(&site);
    assert!(page.contains("Does the runner keep every cell?"));
    assert!(
        page.contains("FAILED: the target did not start"),
        "the failed cell is on the page"
    );

    // Run again: everything is kept; nothing runs. Then the failed cells only, on request.
    let started = Instant::now();
    let again = experiment(&["run", &file, "--no-report"], &db, &pg.url);
    assert!(again.status.success());
    assert!(
        text(&again).contains("All 4 cells of runner are kept already"),
        "{}",
        text(&again)
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    let retry = experiment(
        &["run", &file, "--no-report", "--retry-failed"],
        &db,
        &pg.url,
    );
    assert!(
        text(&retry).contains("2 cells run (2 failed), 2 kept already"),
        "{}",
        text(&retry)
    );

    let status = experiment(&["status", &file], &db, &pg.url);
    let status = text(&status);
    assert!(
        status.contains("2 done, 2 failed, 0 unfinished, 0 to run"),
        "{status}"
    );
}

#[test]
fn a_target_that_fails_verification_is_not_measured_and_the_page_says_why() {
    let work = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/runs.db", work.path().display());
    // A server that answers everything 200 "hello": not the contract.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for mut stream in listener.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\nconnection: close\r\n\r\nhello",
            );
        }
    });
    let file = write(
        work.path(),
        "remote.toml",
        &format!(
            r#"
name = "remote"
question = "Is a server that is not the contract measured?"
[[target]]
name = "impostor"
url = "http://{addr}"
probe = "127.0.0.1:9"
[load]
path = "/now"
rate = 100
duration = "1s"
"#
        ),
    );
    let site = work.path().join("site");
    let out = experiment(&["run", &file, "--report", site.to_str().unwrap()], &db, "");
    assert!(out.status.success(), "{}", text(&out));
    let said = text(&out);
    assert!(
        said.contains("Verified impostor against targets/CONTRACT.md: FAILED"),
        "{said}"
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    let runs = rt.block_on(measured(&db, "remote"));
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].status, RunStatus::Failed);
    assert!(runs[0].summary.is_none(), "no load was sent");
    let page = experiment_page(&site);
    assert!(page.contains("Targets not measured: they failed verification"));
    assert!(page.contains("GET /healthz"), "the failed check is named");
}

#[test]
fn an_interrupted_run_resumes_with_the_cell_it_stopped_in() {
    let work = tempfile::tempdir().unwrap();
    let pg = pgcluster::Scratch::new().unwrap();
    let db = format!("sqlite://{}/runs.db", work.path().display());
    let file = write(
        work.path(),
        "resume.toml",
        r#"
name = "resume"
question = "Does an interrupted experiment go on where it stopped?"
pre_roll = "500ms"
post_roll = "500ms"
[database]
url_env = "DATABASE_URL"
[[target]]
name = "rust"
[load]
path = "/now"
duration = "2s"
[matrix]
rate = [100, 200, 300]
"#,
    );
    let child = Command::new(LOADGEN)
        .args(["experiment", "run", &file, "--no-report", "--db", &db])
        .env("DATABASE_URL", &pg.url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupt once the first cell is kept, in the middle of the second.
    let rt = tokio::runtime::Runtime::new().unwrap();
    // Generous: the first cell starts PostgreSQL and verifies the target before any load.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let done = rt.block_on(async {
            if !Path::new(&db[9..]).exists() {
                return 0;
            }
            measured(&db, "resume")
                .await
                .iter()
                .filter(|r| r.status == RunStatus::Complete)
                .count()
        });
        if done >= 1 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no cell was kept within two minutes"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_millis(1500));
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(3), "stopped early: {}", text(&out));
    assert!(
        text(&out).contains("Interrupted: run `loadgen experiment run"),
        "{}",
        text(&out)
    );

    let again = experiment(&["run", &file, "--no-report"], &db, &pg.url);
    let said = text(&again);
    assert!(again.status.success(), "{said}");
    assert!(
        said.contains("1 of 3 cells are kept already and skipped"),
        "{said}"
    );
    let runs = rt.block_on(measured(&db, "resume"));
    let complete = runs
        .iter()
        .filter(|r| r.status == RunStatus::Complete)
        .count();
    assert_eq!(complete, 3, "every cell done in the end: {runs:?}");
    assert!(
        runs.iter().any(|r| r.status == RunStatus::Incomplete),
        "the interrupted cell's run is kept, marked incomplete"
    );
}

/// Someone's database with a `users` table of their own and rows in it.
fn someone_elses_database() -> pgcluster::Scratch {
    let pg = pgcluster::Scratch::new().unwrap();
    let psql = pgcluster::tools::find("psql").unwrap();
    let out = Command::new(psql)
        .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", &pg.url, "-c"])
        .arg("CREATE TABLE users (id serial PRIMARY KEY, name text); INSERT INTO users (name) VALUES ('ada'), ('grace'), ('edsger')")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    pg
}

fn users_in(pg: &pgcluster::Scratch) -> String {
    let psql = pgcluster::tools::find("psql").unwrap();
    let out = Command::new(psql)
        .args([
            "-X",
            "-A",
            "-t",
            "-d",
            &pg.url,
            "-c",
            "SELECT string_agg(name, ',' ORDER BY id) FROM users",
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

const QUICK: &str = r#"
name = "quick"
question = "Which database does the runner use?"
pre_roll = "500ms"
post_roll = "500ms"
[[target]]
name = "rust"
[load]
method = "POST"
path = "/users"
headers = { "Content-Type" = "application/json" }
body = '{"email":"u{{seq}}@example.com","password":"p"}'
rate = 100
duration = "1s"
"#;

/// `DATABASE_URL` exported in the shell for something else is never used, let alone emptied:
/// a file that names no database gets a throwaway PostgreSQL of its own.
#[test]
fn a_database_url_in_the_environment_is_never_touched() {
    let work = tempfile::tempdir().unwrap();
    let theirs = someone_elses_database();
    let db = format!("sqlite://{}/runs.db", work.path().display());
    let file = write(work.path(), "quick.toml", QUICK);
    let out = experiment(&["run", &file, "--no-report"], &db, &theirs.url);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("DATABASE_URL is set but not used"), "{said}");
    assert!(said.contains("1 cells run (0 failed)"), "{said}");
    assert_eq!(
        users_in(&theirs),
        "ada,grace,edsger",
        "their rows are untouched"
    );
}

/// A database the file names, holding a `users` table Showdown did not make, is refused in one
/// line before anything is applied or emptied.
#[test]
fn a_named_database_with_someone_elses_users_table_is_refused() {
    let work = tempfile::tempdir().unwrap();
    let theirs = someone_elses_database();
    let db = format!("sqlite://{}/runs.db", work.path().display());
    let file = write(
        work.path(),
        "named.toml",
        &QUICK.replace(
            "[[target]]",
            "[database]\nurl_env = \"DATABASE_URL\"\n[[target]]",
        ),
    );
    let out = experiment(&["run", &file, "--no-report"], &db, &theirs.url);
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{said}");
    let error: Vec<&str> = said.lines().filter(|l| l.starts_with("Error:")).collect();
    assert_eq!(error.len(), 1, "{said}");
    assert!(
        error[0].contains("has a table users that Showdown did not make"),
        "{said}"
    );
    assert!(!error[0].contains(&theirs.url), "no URL in clear: {said}");
    assert_eq!(
        users_in(&theirs),
        "ada,grace,edsger",
        "their rows are untouched"
    );
}

/// SIGTERM (a `kill`) and SIGHUP (a closed SSH session) stop an experiment as Ctrl-C does:
/// the throwaway PostgreSQL is stopped and every temporary directory removed.
#[test]
fn sigterm_and_sighup_take_down_what_the_runner_started() {
    for signal in [rustix::process::Signal::TERM, rustix::process::Signal::HUP] {
        let work = tempfile::tempdir().unwrap();
        let tmp = work.path().join("tmp");
        std::fs::create_dir(&tmp).unwrap();
        let db = format!("sqlite://{}/runs.db", work.path().display());
        let file = write(
            work.path(),
            "long.toml",
            &QUICK.replace("duration = \"1s\"", "duration = \"30s\""),
        );
        let child = Command::new(LOADGEN)
            .args(["experiment", "run", &file, "--no-report", "--db", &db])
            .env("TMPDIR", &tmp)
            .env_remove("DATABASE_URL")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Signalled once the cell's load is under way.
        let rt = tokio::runtime::Runtime::new().unwrap();
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let running = Path::new(&db[9..]).exists()
                && rt
                    .block_on(measured(&db, "quick"))
                    .iter()
                    .any(|r| r.status == RunStatus::Running);
            if running {
                break;
            }
            assert!(Instant::now() < deadline, "the cell never started");
            std::thread::sleep(Duration::from_millis(200));
        }
        std::thread::sleep(Duration::from_millis(1500));
        let started: Vec<String> = std::fs::read_dir(&tmp)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            started.iter().any(|n| n.starts_with("showdown-pg-")),
            "the throwaway PostgreSQL lives in TMPDIR: {started:?}"
        );
        let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
        rustix::process::kill_process(pid, signal).unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(3), "{signal:?}: {}", text(&out));
        let left: Vec<_> = std::fs::read_dir(&tmp)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert!(left.is_empty(), "{signal:?} left {left:?}");
        let tmp_text = tmp.to_string_lossy().into_owned();
        let survivors: Vec<String> = std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
            .filter(|c| c.contains(&tmp_text))
            .collect();
        assert!(
            survivors.is_empty(),
            "{signal:?}: still running: {survivors:?}"
        );
    }
}
