//! Foreign code gets nothing it was not given, and nothing is left running: an experiment whose
//! `build` prints its environment and whose servers (one plain, one that daemonizes) dump their
//! environment and every request's headers, run from a shell full of secrets (the store's URL,
//! `DATABASE_URL`, `PGPASSWORD`, `AWS_*`, `SSH_AUTH_SOCK`, an exported `SHOWDOWN_HEADERS`, a proxy
//! with a password). While it runs, no process's command line holds the load's body or query;
//! after it, no secret is in the store or the pages and the daemon is gone.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::common;
use common::{command_lines_holding, end_holding, environments_holding};

const LOADGEN: &str = env!("CARGO_BIN_EXE_loadgen");

/// A server that dumps its environment at start and each request's headers, optionally
/// daemonizing first (double fork, new session: the first process exits 0 at once).
const SERVER: &str = r#"
import http.server, json, os, sys
port, out = int(sys.argv[1]), sys.argv[2]
if len(sys.argv) > 3:
    if os.fork():
        os._exit(0)
    os.setsid()
    if os.fork():
        os._exit(0)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
with open(out + ".env", "w") as f:
    json.dump(dict(os.environ), f)
class H(http.server.BaseHTTPRequestHandler):
    def answer(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        with open(out + ".headers", "a") as f:
            f.write(json.dumps(dict(self.headers)) + "\n")
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")
    do_GET = answer
    do_POST = answer
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
"#;

/// Each secret of the user's shell, as a value no other string in the test contains.
const SECRETS: [(&str, &str); 9] = [
    ("SHOWDOWN_DB", "postgres://runs:STOREPASS1@127.0.0.1:1/runs"),
    ("DATABASE_URL", "postgres://app:DBPASS2@127.0.0.1:1/app"),
    ("PGPASSWORD", "PGSECRET3"),
    ("AWS_SECRET_ACCESS_KEY", "AWSSECRET4"),
    ("AWS_ACCESS_KEY_ID", "AKIAAWSKEY5"),
    ("SSH_AUTH_SOCK", "/tmp/AGENTSOCK6"),
    ("SHOWDOWN_HEADERS", "Authorization: Bearer LEAKED7"),
    ("https_proxy", "http://proxy:PROXYPASS8@127.0.0.1:9/"),
    ("GITHUB_TOKEN", "GHTOKEN9"),
];

/// What the file gives on purpose: the headers of `headers_env`, a query and a body.
const GIVEN_HEADER: &str = "X-Api-Key: APIKEY321";
const QUERY_SECRET: &str = "QUERYSECRET123";
const BODY_SECRET: &str = "BODYSECRET456";

/// Every file under `dir` whose bytes hold one of `needles`, with the needle.
fn files_holding(dir: &Path, needles: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(bytes) = std::fs::read(&path) {
                let text = String::from_utf8_lossy(&bytes);
                for n in needles {
                    if text.contains(n) {
                        found.push(format!("{}: {n}", path.display()));
                    }
                }
            }
        }
    }
    found
}

#[test]
fn foreign_code_gets_only_what_it_was_given_and_nothing_is_left_running() {
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let server = work.path().join("server.py");
    std::fs::write(&server, SERVER).unwrap();
    let (server, out_dir) = (server.display().to_string(), out.display().to_string());
    let site = work.path().join("site");
    let db = format!("sqlite://{}/runs.db", work.path().display());
    let file = work.path().join("trust.toml");
    std::fs::write(
        &file,
        format!(
            r#"
name = "trust"
question = "Does foreign code get only what it is given?"
pre_roll = "200ms"
post_roll = "200ms"

[[target]]
name = "plain"
command = ["python3", "{server}", "{{port}}", "{out_dir}/plain"]
build = ["sh", "-c", "env > {out_dir}/build.env"]
pass_env = ["NODE_OPTIONS"]
ready = "/ready"

[[target]]
name = "daemon"
command = ["python3", "{server}", "{{port}}", "{out_dir}/daemon", "--daemon"]
ready = "/ready"

[[check]]
path = "/ready"
status = 200

[load]
method = "POST"
path = "/x?api_key={QUERY_SECRET}"
body = "{BODY_SECRET}"
headers = {{ "X-Visible" = "yes" }}
headers_env = "API_HEADERS"
# 15 sends a cell, for 3 s: a run is behind schedule only when over 20 of its sends (and over
# 1 %) leave late, so however busy the host, the generator cannot fail these cells; what the
# code is given does not depend on how many requests it gets.
rate = 5
duration = "3s"
"#
        ),
    )
    .unwrap();

    let mut command = Command::new(LOADGEN);
    command
        .args(["experiment", "run"])
        .arg(&file)
        .args(["--db", &db, "--report"])
        .arg(&site)
        .args(["--pass-env", "API_HEADERS", "--pass-env", "NODE_OPTIONS"])
        .env("NODE_OPTIONS", "--max-old-space-size=64")
        .env("API_HEADERS", GIVEN_HEADER)
        .stdin(Stdio::null());
    for (name, value) in SECRETS {
        command.env(name, value);
    }
    // Watch every command line, and every environment but the runner's own (the user's
    // shell), while the experiment runs: the store's URL and the headers reach the generator
    // on its standard input.
    let child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let runner = child.id() as i32;
    let running = Arc::new(AtomicBool::new(true));
    let watcher = std::thread::spawn({
        let running = running.clone();
        move || {
            let (mut on_lines, mut in_env) = (Vec::new(), Vec::new());
            while running.load(Ordering::Relaxed) {
                on_lines.extend(command_lines_holding(&[
                    QUERY_SECRET,
                    BODY_SECRET,
                    "APIKEY321",
                ]));
                // The runner itself (the user's shell's environment), and a fork of it that
                // has not yet run what it starts, hold the user's variables: not a leak.
                in_env.extend(
                    environments_holding(&["APIKEY321", "STOREPASS1"], &[runner])
                        .into_iter()
                        .filter(|line| !line.contains(" experiment run ")),
                );
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            (on_lines, in_env)
        }
    });
    let output = child.wait_with_output().unwrap();
    running.store(false, Ordering::Relaxed);
    let (on_command_lines, in_environments) = watcher.join().unwrap();
    assert!(
        in_environments.is_empty(),
        "the store's URL or the headers in an environment: {in_environments:?}"
    );
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{said}");
    assert!(said.contains("2 cells run (0 failed)"), "{said}");
    assert!(
        on_command_lines.is_empty(),
        "the load's secrets on a command line: {on_command_lines:?}"
    );
    // The proxy's password is a credential in a base variable: left out, and said.
    assert!(
        said.contains("Note: https_proxy not given to the builds and targets"),
        "{said}"
    );

    // The build and both servers: their base, what they were given, none of the secrets.
    let secret_values: Vec<&str> = SECRETS.iter().map(|(_, v)| *v).collect();
    for (name, passed) in [("build", true), ("plain", true), ("daemon", false)] {
        let path = out.join(format!("{name}.env"));
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{name} did not dump its environment ({e}): {said}"));
        for (variable, value) in SECRETS {
            assert!(
                !text.contains(value)
                    && !text.contains(&format!("{variable}="))
                    && !text.contains(&format!("\"{variable}\"")),
                "{name} was given {variable}: {text}"
            );
        }
        assert!(text.contains("PATH"), "{name}: {text}");
        assert_eq!(
            text.contains("--max-old-space-size=64"),
            passed,
            "NODE_OPTIONS reaches only the target that passes it: {name}: {text}"
        );
        assert!(!text.contains("APIKEY321"), "{name}: {text}");
    }
    // Every request the servers saw: the file's headers and those of the variable it names,
    // never the exported SHOWDOWN_HEADERS.
    for name in ["plain", "daemon"] {
        let headers = std::fs::read_to_string(out.join(format!("{name}.headers"))).unwrap();
        let lines: Vec<&str> = headers.lines().collect();
        assert!(lines.len() >= 15, "{name}: {} requests", lines.len());
        assert!(!headers.contains("LEAKED7"), "{name} got SHOWDOWN_HEADERS");
        let load: Vec<&&str> = lines
            .iter()
            .filter(|l| l.to_ascii_lowercase().contains("x-visible"))
            .collect();
        assert!(load.len() >= 15, "{name}: {} load requests", load.len());
        assert!(
            load.iter().all(|l| l.contains("APIKEY321")),
            "{name}: the file's headers_env is sent with each request"
        );
    }

    // Nothing of the servers is left, the daemon included.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let left = end_holding(&[&server]);
    assert!(left.is_empty(), "still running: {left:?}");

    // No secret, given or not, is kept in the store or drawn in the pages.
    let mut needles = secret_values.clone();
    needles.extend(["APIKEY321", QUERY_SECRET]);
    needles.retain(|n| !n.starts_with("/tmp"));
    let kept = files_holding(work.path(), &needles)
        .into_iter()
        .filter(|f| !f.contains("/out/") && !f.contains("trust.toml"))
        .collect::<Vec<_>>();
    assert!(kept.is_empty(), "secrets kept: {kept:?}");
}

/// A `build` that hangs is stopped at its `build_timeout`, and what a build leaves running in
/// the background is ended with it; the target fails in one line and the others are measured.
#[test]
fn a_build_that_hangs_is_stopped_and_leaves_nothing_running() {
    let work = tempfile::tempdir().unwrap();
    let marker = work.path().join("marker");
    std::fs::create_dir(&marker).unwrap();
    let marker = marker.display().to_string();
    let db = format!("sqlite://{}/runs.db", work.path().display());
    let file = work.path().join("builds.toml");
    std::fs::write(
        &file,
        format!(
            r#"
name = "builds"
question = "Is a build held to its time?"
pre_roll = "200ms"
post_roll = "200ms"

[[target]]
name = "hangs"
command = ["python3", "-m", "http.server", "{{port}}", "--bind", "127.0.0.1"]
build = ["python3", "-c", "import time; time.sleep(61)", "{marker}"]
build_timeout = "1s"

[[target]]
name = "forks"
command = ["python3", "-m", "http.server", "{{port}}", "--bind", "127.0.0.1"]
build = ["sh", "-c", "setsid python3 -c 'import time; time.sleep(62)' {marker} >/dev/null 2>&1 < /dev/null & exit 0"]

[load]
path = "/"
rate = 20
duration = "1s"
"#
        ),
    )
    .unwrap();
    let started = std::time::Instant::now();
    let output = Command::new(LOADGEN)
        .args(["experiment", "run"])
        .arg(&file)
        .args(["--db", &db, "--no-report"])
        .current_dir(work.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{said}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(40),
        "{said}"
    );
    assert!(
        said.contains("did not finish within its build_timeout of 1s"),
        "{said}"
    );
    assert!(said.contains("2 cells run (1 failed)"), "{said}");
    let left = end_holding(&[&marker]);
    assert!(left.is_empty(), "still running: {left:?}");
}

/// `loadgen experiment ARGS FILE` in `dir` with `env` (and nothing of the test's shell that
/// names a secret): its exit, standard output and standard error.
fn experiment_in(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (bool, String, String) {
    let mut command = Command::new(LOADGEN);
    command
        .arg("experiment")
        .args(args)
        .current_dir(dir)
        .env_remove("SHOWDOWN_DB")
        .env_remove("DATABASE_URL")
        .stdin(Stdio::null());
    for (name, value) in env {
        command.env(name, value);
    }
    let out = command.output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `loadgen experiment run FILE --no-report --db STORE FLAGS` in `dir`, as [`experiment_in`].
fn run_in(
    dir: &Path,
    file: &str,
    store: &str,
    flags: &[&str],
    env: &[(&str, &str)],
) -> (bool, String, String) {
    let mut args = vec!["run", file, "--no-report", "--db", store];
    args.extend_from_slice(flags);
    experiment_in(dir, &args, env)
}

/// A file of one local target that runs nothing harmful, with `extra` TOML at its end.
fn copied_file(dir: &Path, extra: &str) -> String {
    let path = dir.join("copied.toml");
    std::fs::write(
        &path,
        format!(
            "name = \"copied\"\nquestion = \"Is a file from someone else data?\"\n[[target]]\nname = \"t\"\ncommand = [\"true\"]\nport = 9\n{extra}\n"
        ),
    )
    .unwrap();
    path.display().to_string()
}

/// A file's extra TOML, the flags given, the environment, and the refusal expected.
type Case<'a> = (String, &'a [&'a str], &'a [(&'a str, &'a str)], &'a str);

/// A copied file is data: it cannot read the store's variable, nor one whose name says it may
/// hold a secret unless the user names it too (`--pass-env`), nor use the store as its
/// targets' database. Each refusal is one line, before anything runs or is stored.
#[test]
fn a_copied_file_reads_no_secret_the_user_did_not_confirm() {
    let work = tempfile::tempdir().unwrap();
    let store = work.path().join("runs.db");
    let sqlite = format!("sqlite://{}", store.display());
    let load = "[load]\npath = \"/\"\nrate = 10\nduration = \"1s\"\n";
    let cases: [Case; 6] = [
        (
            format!("{load}headers_env = \"SHOWDOWN_DB\""),
            &[],
            &[("SHOWDOWN_DB", "postgres://runs:STOREPASS1@127.0.0.1:1/runs")],
            "names SHOWDOWN_DB, the store's URL",
        ),
        (
            format!("[database]\nurl_env = \"SHOWDOWN_DB\"\n{load}"),
            &["--pass-env", "SHOWDOWN_DB"],
            &[],
            "names SHOWDOWN_DB, the store's URL",
        ),
        (
            format!("[database]\nurl_env = \"DATABASE_URL\"\n{load}"),
            &[],
            &[("DATABASE_URL", "postgres://app:DBPASS2@127.0.0.1:1/app")],
            "run again with --pass-env DATABASE_URL",
        ),
        (
            format!("{load}headers_env = \"API_TOKEN\""),
            &[],
            &[("API_TOKEN", "Authorization: Bearer TOKEN3")],
            "run again with --pass-env API_TOKEN",
        ),
        (
            format!("{load}[[target]]\nname = \"u\"\ncommand = [\"true\"]\nport = 9\npass_env = [\"AWS_SECRET_ACCESS_KEY\"]"),
            &[],
            &[],
            "run again with --pass-env AWS_SECRET_ACCESS_KEY",
        ),
        // Confirmed, but the variable holds the store itself (spelt otherwise).
        (
            format!("[database]\nurl_env = \"DATABASE_URL\"\n{load}"),
            &["--pass-env", "DATABASE_URL", "--db", "postgres://runs@localhost/showdown_runs"],
            &[("DATABASE_URL", "postgresql://app:DBPASS2@127.0.0.1:5432/showdown_runs")],
            "names the store itself",
        ),
    ];
    for (extra, flags, env, refusal) in cases {
        let file = copied_file(work.path(), &extra);
        let mut args = vec!["run", file.as_str(), "--no-report"];
        if !flags.contains(&"--db") {
            args.extend(["--db", sqlite.as_str()]);
        }
        args.extend_from_slice(flags);
        let (ok, _, err) = experiment_in(work.path(), &args, env);
        assert!(!ok, "{extra}: ran: {err}");
        let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("Error:")).collect();
        assert_eq!(errors.len(), 1, "{extra}: {err}");
        assert!(errors[0].contains(refusal), "{extra}: {err}");
        for secret in ["STOREPASS1", "DBPASS2", "TOKEN3"] {
            assert!(!err.contains(secret), "{extra}: {err}");
        }
        assert!(
            !store.exists(),
            "{extra}: the store was opened before the refusal"
        );
    }
    // The plan says what the file would read, and what run will ask for.
    let file = copied_file(work.path(), &format!("{load}headers_env = \"API_TOKEN\""));
    let (ok, plan, err) = experiment_in(work.path(), &["plan", &file], &[]);
    assert!(ok, "{err}");
    assert!(
        plan.contains("reads   $API_TOKEN ([load] headers_env) (may hold a secret: run needs --pass-env API_TOKEN)"),
        "{plan}"
    );
    assert!(plan.contains("runs    t: `true`"), "{plan}");
}

/// A header line that cannot be sent is refused without its text: it may be the token itself,
/// and a cell's failure is kept and published.
#[test]
fn a_malformed_header_from_the_environment_is_refused_without_its_value() {
    let work = tempfile::tempdir().unwrap();
    let sqlite = format!("sqlite://{}/runs.db", work.path().display());
    let file = copied_file(
        work.path(),
        "[load]\npath = \"/\"\nrate = 10\nduration = \"1s\"\nheaders_env = \"API_HEADERS\"",
    );
    let (ok, out, err) = experiment_in(
        work.path(),
        &[
            "run",
            &file,
            "--no-report",
            "--db",
            &sqlite,
            "--pass-env",
            "API_HEADERS",
        ],
        &[("API_HEADERS", "X-Ok: fine\nBearer NAKEDTOKEN4")],
    );
    let said = format!("{out}{err}");
    assert!(!said.contains("NAKEDTOKEN4"), "{said}");
    assert!(
        said.contains("headers_env API_HEADERS: line 2 is not a header"),
        "{ok}: {said}"
    );
}

/// A file's Kubernetes guns too: the runner would render a Job, listen for its pods, and with
/// `apply` run the user's kubectl against their cluster. Untrusted, nothing is written or
/// listened on; the plan says what would be, and names kubectl when `apply` needs it.
#[test]
fn a_files_kubernetes_guns_are_used_only_once_the_user_trusts_them() {
    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("k8s.toml");
    let write = |apply: bool| {
        std::fs::write(
            &file,
            format!(
                "name = \"k8s\"\nquestion = \"Whose pods?\"\n[guns]\nkubernetes = {{ count = 3, image = \"me/loadgen:1\", listen = \"127.0.0.1:7411\", apply = {apply} }}\n[[target]]\nname = \"r\"\nurl = \"http://127.0.0.1:9\"\nprobe = \"127.0.0.1:9\"\ncontract = \"declared\"\n[load]\npath = \"/\"\nrate = 10\nduration = \"1s\"\n"
            ),
        )
        .unwrap()
    };
    write(false);
    let path = file.display().to_string();
    let db = "postgres://runs@127.0.0.1:1/showdown_runs";
    let (ok, _, err) = experiment_in(work.path(), &["run", &path, "--no-report", "--db", db], &[]);
    assert!(!ok, "{err}");
    assert!(
        err.contains("renders a Job of 3 gun pods of me/loadgen:1 in default/showdown-guns"),
        "{err}"
    );
    assert!(err.contains("--trust-guns"), "{err}");
    assert!(
        !work.path().join("showdown-guns.yaml").exists(),
        "a Job was written untrusted"
    );
    let (ok, plan, err) = experiment_in(work.path(), &["plan", &path], &[]);
    assert!(ok, "{err}");
    assert!(
        plan.contains("writes  the guns' Job (3 pods of me/loadgen:1, default/showdown-guns) to showdown-guns.yaml"),
        "{plan}"
    );
    assert!(
        plan.contains("listens on 127.0.0.1:7411 for the pods, which dial 127.0.0.1:7411"),
        "{plan}"
    );
    assert!(
        plan.contains("(run needs --trust-guns)") && !plan.contains("kubectl"),
        "{plan}"
    );
    // With apply, the plan names kubectl; where there is none, it says so and fails.
    write(true);
    let empty = tempfile::tempdir().unwrap();
    let (ok, plan, err) = experiment_in(
        work.path(),
        &["plan", &path],
        &[("PATH", &empty.path().display().to_string())],
    );
    assert!(
        plan.contains("applies it and its Secret with your kubectl, in its context (none: kubectl config use-context NAME)"),
        "{plan}"
    );
    assert!(!ok && err.contains("kubectl"), "{plan}\n{err}");
    // The trust refusal names what apply would do, and where.
    let (ok, _, err) = experiment_in(work.path(), &["run", &path, "--no-report", "--db", db], &[]);
    assert!(
        !ok && err.contains("applied with your kubectl in its current context, replacing Showdown's own Job of that name"),
        "{err}"
    );
}

/// A file's `[guns]` are used only once the user trusts them: its SSH config could run
/// commands on this machine (a ProxyCommand), and every order goes to its hosts. A destination
/// with a shell's characters is refused whatever the flags.
#[test]
fn a_files_guns_are_used_only_once_the_user_trusts_them() {
    let work = tempfile::tempdir().unwrap();
    let marker = work.path().join("proxy-command-ran");
    let config = work.path().join("lab.ssh");
    std::fs::write(
        &config,
        format!("Host *\n  ProxyCommand touch {}\n", marker.display()),
    )
    .unwrap();
    let remote = "[[target]]\nname = \"r\"\nurl = \"http://127.0.0.1:9\"\nprobe = \"127.0.0.1:9\"\ncontract = \"declared\"\n";
    let guns = |ssh: &str| {
        format!(
            "name = \"guns\"\nquestion = \"Whose guns?\"\n[guns]\nssh = [{ssh}]\nssh_config = \"{}\"\nstore_env_file = \"/etc/showdown/store.env\"\n{remote}[load]\npath = \"/\"\nrate = 10\nduration = \"1s\"\n",
            config.display()
        )
    };
    let file = work.path().join("guns.toml");
    std::fs::write(&file, guns("\"gun1\"")).unwrap();
    let file = file.display().to_string();
    let db = "postgres://runs@127.0.0.1:1/showdown_runs";
    let (ok, _, err) = experiment_in(work.path(), &["run", &file, "--no-report", "--db", db], &[]);
    assert!(!ok, "{err}");
    assert!(err.contains("run again with --trust-guns"), "{err}");
    assert!(
        err.contains("lab.ssh"),
        "the refusal names the SSH config: {err}"
    );
    assert!(!marker.exists(), "the file's ProxyCommand ran");
    // The plan shows where the orders would go, and with what.
    let (ok, plan, err) = experiment_in(work.path(), &["plan", &file], &[]);
    assert!(ok, "{err}");
    assert!(
        plan.contains("sends   every order over SSH to gun1, with the SSH config"),
        "{plan}"
    );
    assert!(plan.contains("(run needs --trust-guns)"), "{plan}");
    // And what the config does: checked as the run checks it, its proxy shown with its command.
    assert!(
        plan.contains("checks  the SSH config")
            && plan.contains("lab.ssh: it sets only who the guns are"),
        "{plan}"
    );
    assert!(
        plan.contains(&format!(
            "runs    `ProxyCommand touch {}`, the SSH config's proxy (run needs --trust-ssh-proxy)",
            marker.display()
        )),
        "{plan}"
    );
    assert!(!marker.exists(), "plan ran the file's ProxyCommand");
    // Guns with no store of their own do not get this runner's URL unless asked.
    std::fs::write(
        &file,
        guns("\"gun1\"").replace("store_env_file = \"/etc/showdown/store.env\"\n", ""),
    )
    .unwrap();
    let (ok, _, err) = experiment_in(
        work.path(),
        &["run", &file, "--no-report", "--trust-guns", "--db", db],
        &[],
    );
    assert!(!ok, "{err}");
    assert!(err.contains("--send-store-url"), "{err}");
    assert!(!marker.exists());
    // Trusted, the config's proxy still needs confirming, and what voids the hardening (a
    // known-hosts file of its choosing, a forward of the agent's socket) is refused outright.
    let (ok, _, err) = experiment_in(
        work.path(),
        &[
            "run",
            &file,
            "--no-report",
            "--trust-guns",
            "--send-store-url",
            "--db",
            db,
        ],
        &[],
    );
    assert!(!ok, "{err}");
    assert!(one_error(&err).contains("sets proxycommand"), "{err}");
    assert!(err.contains("--trust-ssh-proxy"), "{err}");
    assert!(!marker.exists());
    // So is a keyword ssh would read otherwise than it is written (it drops quotes inside a
    // keyword), a library ssh would load, and a directive past the first MiB: none runs, with
    // --trust-guns and --trust-ssh-proxy given, and plan refuses each too.
    let quoted = format!("Host *\n  \"Match\" exec \"touch {}\"\n", marker.display());
    let padded = format!(
        "Host *\n{}  RemoteForward /tmp/agent /run/agent.sock\n",
        "# padding\n".repeat(120_000)
    );
    for (config_text, said) in [
        (
            "Host *\n  UserKnownHostsFile /dev/null\n".to_string(),
            "does not take from a file",
        ),
        (
            "Host *\n  RemoteForward /tmp/agent /run/agent.sock\n".to_string(),
            "does not take from a file",
        ),
        (
            "Host *\n  PKCS11Provider /tmp/x.so\n".to_string(),
            "sets pkcs11provider",
        ),
        (
            "Host *\n  SecurityKeyProvider /tmp/x.so\n".to_string(),
            "sets securitykeyprovider",
        ),
        (quoted, "not plain letters and digits"),
        (
            format!("Host *\n  P\"roxyCommand\" touch {}\n", marker.display()),
            "not plain letters",
        ),
        (padded, "is over 1 MiB"),
    ] {
        std::fs::write(&config, &config_text).unwrap();
        let (ok, _, err) = experiment_in(
            work.path(),
            &[
                "run",
                &file,
                "--no-report",
                "--trust-guns",
                "--trust-ssh-proxy",
                "--send-store-url",
                "--db",
                db,
            ],
            &[],
        );
        assert!(!ok, "{err}");
        assert!(one_error(&err).contains(said), "{said}: {err}");
        let (ok, plan, err) = experiment_in(work.path(), &["plan", &file], &[]);
        assert!(
            !ok && plan.contains("refuses [guns] ssh_config") && one_error(&err).contains(said),
            "{said}: {plan}{err}"
        );
        assert!(!marker.exists());
    }
    for voiding in [
        "UserKnownHostsFile /dev/null",
        "RemoteForward /tmp/agent /run/agent.sock",
    ] {
        std::fs::write(&config, format!("Host *\n  {voiding}\n")).unwrap();
        let (ok, _, err) = experiment_in(
            work.path(),
            &[
                "run",
                &file,
                "--no-report",
                "--trust-guns",
                "--trust-ssh-proxy",
                "--send-store-url",
                "--db",
                db,
            ],
            &[],
        );
        assert!(!ok, "{err}");
        assert!(
            one_error(&err).contains("could void their hardening"),
            "{voiding}: {err}"
        );
    }
    std::fs::write(
        &config,
        format!("Host *\n  ProxyCommand touch {}\n", marker.display()),
    )
    .unwrap();
    // A destination a shell or an SSH config's %h could read as more than a host.
    for bad in ["\"gun1;touch x\"", "\"$(id)@gun\"", "\"-oProxyCommand=x\""] {
        std::fs::write(&file, guns(bad)).unwrap();
        let (ok, _, err) = experiment_in(
            work.path(),
            &["run", &file, "--no-report", "--trust-guns", "--db", db],
            &[],
        );
        assert!(
            !ok && err.contains("is not an SSH destination"),
            "{bad}: {err}"
        );
    }
}

/// A loadgen process that holds a secret cannot be read by another process of the same user
/// (its `/proc/PID/environ`, `mem`): a target or a build runs as that user. The built-in
/// target, which holds none and whose figures come from those files, can be (the reader works).
#[test]
fn a_loadgen_holding_a_secret_cannot_be_read_by_the_same_user() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipped: needs root to run both processes as another user");
        return;
    }
    let as_nobody = |args: &[&str]| {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .args(args);
        c
    };
    let read_environ = |pid: u32| {
        as_nobody(&["cat", &format!("/proc/{pid}/environ")])
            .output()
            .unwrap()
    };
    // `gun` waits for its request on its input: a loadgen that holds the store's URL in a cell.
    let mut gun = as_nobody(&[LOADGEN, "gun"])
        .env("SHOWDOWN_DB", "postgres://runs:STOREPASS1@127.0.0.1:1/runs")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut target = as_nobody(&[LOADGEN, "target"])
        .env("CONTROL_VALUE", "READABLE5")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    // Both have started loadgen (setpriv exec'd it) and set themselves up.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let exe = |pid: u32| std::fs::read_link(format!("/proc/{pid}/exe")).ok();
    while std::time::Instant::now() < until
        && !(exe(gun.id()).is_some_and(|e| e.ends_with("loadgen"))
            && exe(target.id()).is_some_and(|e| e.ends_with("loadgen")))
    {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let control = read_environ(target.id());
    let guarded = read_environ(gun.id());
    drop(gun.stdin.take());
    drop(target.stdin.take());
    let _ = gun.wait();
    let _ = target.wait();
    assert!(
        String::from_utf8_lossy(&control.stdout).contains("READABLE5"),
        "the reader cannot read a same-user process at all: {control:?}"
    );
    assert!(!guarded.status.success(), "{guarded:?}");
    assert!(
        !String::from_utf8_lossy(&guarded.stdout).contains("STOREPASS1"),
        "{guarded:?}"
    );
}

/// A TCP listener on the loopback that keeps every byte any peer sends it, for at most 60 s:
/// what a host named by a copied file would receive.
struct Recorder {
    addr: std::net::SocketAddr,
    got: Arc<std::sync::Mutex<Vec<u8>>>,
    connections: Arc<std::sync::atomic::AtomicUsize>,
}

impl Recorder {
    /// `greet` answers what a peer sends (a fake server's moves), chunk by chunk, if it has a word.
    fn start(greet: fn(&[u8]) -> Option<Vec<u8>>) -> Recorder {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let got = Arc::new(std::sync::Mutex::new(Vec::new()));
        let connections = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (g, c) = (got.clone(), connections.clone());
        std::thread::spawn(move || {
            let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
            for stream in listener.incoming().flatten() {
                if std::time::Instant::now() > until {
                    break;
                }
                c.fetch_add(1, Ordering::SeqCst);
                let g = g.clone();
                std::thread::spawn(move || {
                    let mut stream = stream;
                    let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(5)));
                    let mut buf = [0u8; 4096];
                    while let Ok(n) = stream.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        g.lock().unwrap().extend_from_slice(&buf[..n]);
                        if let Some(answer) = greet(&buf[..n]) {
                            let _ = stream.write_all(&answer);
                        }
                    }
                });
            }
        });
        Recorder {
            addr,
            got,
            connections,
        }
    }

    fn got(&self) -> String {
        // Let a peer's last bytes land.
        std::thread::sleep(std::time::Duration::from_millis(300));
        String::from_utf8_lossy(&self.got.lock().unwrap()).into_owned()
    }
}

/// The one `Error:` line of a refused run.
fn one_error(err: &str) -> String {
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("Error:")).collect();
    assert_eq!(errors.len(), 1, "{err}");
    errors[0].to_string()
}

/// A remote target's `probe_token_file` is never read from the file's word: linked to a
/// credentials file it would send those to the probe address the file chose. Only a token file
/// the user names (`--probe-token-file NAME=FILE`) is read, and only one line of printable
/// characters, not through a link.
#[test]
fn a_probe_token_file_is_read_only_when_the_user_names_it() {
    let work = tempfile::tempdir().unwrap();
    let sqlite = format!("sqlite://{}/runs.db", work.path().display());
    let server = Recorder::start(|_| None);
    let probe = Recorder::start(|_| None);
    let credentials = work.path().join("credentials");
    std::fs::write(
        &credentials,
        "[default]\naws_secret_access_key = AWSSECRET4\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(&credentials, work.path().join("probe.token")).unwrap();
    let file = work.path().join("remote.toml");
    std::fs::write(
        &file,
        format!(
            "name = \"remote\"\nquestion = \"Whose token?\"\n[[target]]\nname = \"r\"\nurl = \"http://{}\"\nprobe = \"{}\"\nprobe_fingerprint = \"{}\"\nprobe_token_file = \"probe.token\"\ncontract = \"declared\"\n[load]\npath = \"/\"\nrate = 10\nduration = \"1s\"\n",
            server.addr,
            probe.addr,
            "ab".repeat(32)
        ),
    )
    .unwrap();
    let file = file.display().to_string();
    let (ok, _, err) = run_in(work.path(), &file, &sqlite, &[], &[]);
    assert!(!ok, "{err}");
    let error = one_error(&err);
    assert!(
        error.contains("would send the contents of probe.token to")
            && error.contains("--probe-token-file r=probe.token"),
        "{error}"
    );
    // Confirmed, the link is still refused: the user named a link, not a token.
    let (ok, _, err) = run_in(
        work.path(),
        &file,
        &sqlite,
        &["--probe-token-file", "r=probe.token"],
        &[],
    );
    assert!(!ok, "{err}");
    assert!(one_error(&err).contains("symbolic link"), "{err}");
    // A file the user names that is no token (the credentials themselves) is refused unquoted.
    let (ok, _, err) = run_in(
        work.path(),
        &file,
        &sqlite,
        &["--probe-token-file", "r=credentials"],
        &[],
    );
    assert!(!ok, "{err}");
    assert!(one_error(&err).contains("is not a token"), "{err}");
    assert!(!err.contains("AWSSECRET4"), "{err}");
    assert_eq!(
        probe.connections.load(Ordering::SeqCst),
        0,
        "the probe was reached"
    );
    assert_eq!(
        server.connections.load(Ordering::SeqCst),
        0,
        "the server was reached"
    );
    assert!(!probe.got().contains("AWSSECRET4"));
    // The plan says what would be sent, and to where.
    let (ok, plan, err) = experiment_in(work.path(), &["plan", &file], &[]);
    assert!(ok, "{err}");
    assert!(
        plan.contains(&format!(
            "sends   the contents of probe.token to {}, as r's probe token (run needs --probe-token-file r=probe.token; never read otherwise)",
            probe.addr
        )),
        "{plan}"
    );
}

/// A PostgreSQL server that refuses TLS (`N` to an SSLRequest), then answers the startup
/// message by asking for the password in clear (AuthenticationCleartextPassword).
fn ask_cleartext(got: &[u8]) -> Option<Vec<u8>> {
    const SSL_REQUEST: [u8; 8] = [0, 0, 0, 8, 4, 210, 22, 47];
    if got == SSL_REQUEST {
        return Some(b"N".to_vec());
    }
    // The startup message: its length, protocol 3.0, then `user` and its value.
    (got.len() > 8 && got[4..8] == [0, 3, 0, 0]).then(|| vec![b'R', 0, 0, 0, 8, 0, 0, 0, 3])
}

/// A file's `[database]` is the user's to confirm (`--trust-database`): the runner would run
/// the file's SQL there. Confirmed, its password is the URL's alone: an exported `PGPASSWORD`
/// (or `~/.pgpass`) is never sent to the host the file names, even asked for in clear. The
/// file's `schema` is read only beside the file, not through a link.
#[test]
fn a_files_database_gets_nothing_of_the_users_and_only_once_confirmed() {
    let work = tempfile::tempdir().unwrap();
    let sqlite = format!("sqlite://{}/runs.db", work.path().display());
    let server = Recorder::start(|_| None);
    let postgres = Recorder::start(ask_cleartext);
    let home = work.path().join("home");
    std::fs::create_dir(&home).unwrap();
    std::fs::write(
        home.join(".pgpass"),
        format!("127.0.0.1:{}:*:*:PGPASSFILE7\n", postgres.addr.port()),
    )
    .unwrap();
    let write = |extra: &str| {
        let file = work.path().join("db.toml");
        std::fs::write(
            &file,
            format!(
                "name = \"db\"\nquestion = \"Whose database?\"\n[database]\nurl = \"postgres://me@{}/app\"\n{extra}\n[[target]]\nname = \"r\"\nurl = \"http://{}\"\nprobe = \"{}\"\ncontract = \"declared\"\n[load]\npath = \"/\"\nrate = 10\nduration = \"1s\"\n",
                postgres.addr, server.addr, server.addr
            ),
        )
        .unwrap();
        file.display().to_string()
    };
    let env: &[(&str, &str)] = &[
        ("PGPASSWORD", "PGSECRET3"),
        ("HOME", home.to_str().unwrap()),
    ];
    let file = write("");
    let (ok, _, err) = run_in(work.path(), &file, &sqlite, &[], env);
    assert!(!ok, "{err}");
    assert!(
        one_error(&err).contains("run again with --trust-database"),
        "{err}"
    );
    assert_eq!(
        postgres.connections.load(Ordering::SeqCst),
        0,
        "connected unconfirmed"
    );
    // A schema outside the file's directory, or through a link, is refused before any connection.
    std::fs::write(work.path().join("secret.sql"), "SELECT 'LINKEDFILE8'").unwrap();
    std::os::unix::fs::symlink(
        work.path().join("secret.sql"),
        work.path().join("schema.sql"),
    )
    .unwrap();
    for (schema, refusal) in [
        ("/etc/passwd", "outside the experiment file's directory"),
        ("../db.toml", "outside the experiment file's directory"),
        ("schema.sql", "symbolic link"),
    ] {
        let file = write(&format!("schema = \"{schema}\""));
        let (ok, _, err) = run_in(work.path(), &file, &sqlite, &["--trust-database"], env);
        assert!(!ok, "{err}");
        assert!(one_error(&err).contains(refusal), "{schema}: {err}");
    }
    assert_eq!(postgres.connections.load(Ordering::SeqCst), 0);
    // Confirmed: the runner connects to apply the schema, the server asks for the password in
    // clear, and gets the URL's (none), never PGPASSWORD's or .pgpass's.
    std::fs::write(work.path().join("own.sql"), "CREATE TABLE items (id int)").unwrap();
    let file = write("schema = \"own.sql\"");
    let (ok, _, err) = run_in(work.path(), &file, &sqlite, &["--trust-database"], env);
    assert!(!ok, "{err}");
    assert!(postgres.connections.load(Ordering::SeqCst) > 0, "{err}");
    let got = postgres.got();
    assert!(got.contains("user\0me\0"), "no startup message: {got:?}");
    // The password message came, and held nothing (the URL gives none).
    assert!(
        got.contains("p\0\0\0\u{5}\0"),
        "no password asked for and sent: {got:?}"
    );
    for secret in ["PGSECRET3", "PGPASSFILE7", "LINKEDFILE8"] {
        assert!(
            !got.contains(secret),
            "{secret} reached the file's host: {got:?}"
        );
    }
    // The plan lists the database and every SQL the file would run there.
    let file = write("reset = \"TRUNCATE items\"");
    let (ok, plan, err) = experiment_in(work.path(), &["plan", &file], &[]);
    assert!(ok, "{err}");
    assert!(plan.contains("(run needs --trust-database)"), "{plan}");
    assert!(
        plan.contains("runs    the SQL `TRUNCATE items` in the file's database, before every cell"),
        "{plan}"
    );
}

/// A variable a file reads is the user's to confirm, whatever its name: `HTTPS_PROXY` holds a
/// password as often as `API_TOKEN`. Confirmed, a URL is still no header: it is refused without
/// its text, and nothing of it is kept.
#[test]
fn every_variable_a_file_reads_is_confirmed_and_a_url_is_no_header() {
    let work = tempfile::tempdir().unwrap();
    let store = work.path().join("runs.db");
    let sqlite = format!("sqlite://{}", store.display());
    let file = copied_file(
        work.path(),
        "[load]\npath = \"/\"\nrate = 10\nduration = \"1s\"\nheaders_env = \"HTTPS_PROXY\"",
    );
    let proxy = [("HTTPS_PROXY", "http://user:PROXYPASS8@127.0.0.1:9/")];
    let (ok, _, err) = run_in(work.path(), &file, &sqlite, &[], &proxy);
    assert!(!ok, "{err}");
    assert!(
        one_error(&err).contains("run again with --pass-env HTTPS_PROXY"),
        "{err}"
    );
    assert!(!store.exists(), "the store was opened before the refusal");
    let (ok, out, err) = run_in(
        work.path(),
        &file,
        &sqlite,
        &["--pass-env", "HTTPS_PROXY"],
        &proxy,
    );
    assert!(!ok, "{out}{err}");
    assert!(
        err.contains("headers_env HTTPS_PROXY: line 1 is not a header"),
        "{err}"
    );
    assert!(!format!("{out}{err}").contains("PROXYPASS8"));
    assert!(files_holding(work.path(), &["PROXYPASS8"]).is_empty());
    // A name no rule knows as secret needs confirming too.
    let file = copied_file(
        work.path(),
        "[load]\npath = \"/\"\nrate = 10\nduration = \"1s\"\nheaders_env = \"EXTRA\"",
    );
    let (ok, _, err) = run_in(work.path(), &file, &sqlite, &[], &[]);
    assert!(
        !ok && one_error(&err).contains("run again with --pass-env EXTRA"),
        "{err}"
    );
}

/// A load's path is added to the target's URL: one that does not start with `/` could move
/// the requests, and their headers, to another port or host. Refused in one line.
#[test]
fn a_path_that_could_leave_the_target_is_refused() {
    let work = tempfile::tempdir().unwrap();
    let sqlite = format!("sqlite://{}/runs.db", work.path().display());
    for path in ["1/", "@evil.example/", ".evil.example/"] {
        let file = copied_file(
            work.path(),
            &format!("[load]\npath = \"{path}\"\nrate = 10\nduration = \"1s\""),
        );
        for args in [
            vec!["plan", file.as_str()],
            vec!["run", file.as_str(), "--no-report", "--db", &sqlite],
        ] {
            let (ok, _, err) = experiment_in(work.path(), &args, &[]);
            assert!(!ok, "{path}: {err}");
            assert!(
                one_error(&err).contains("does not start with /"),
                "{path}: {err}"
            );
        }
    }
}

/// `plan` cannot be made to lie: every control character of a file's strings (a carriage
/// return and an erase-line in a command, a conceal in the question, a newline in a name, a
/// right-to-left override) is shown escaped, and every line is there.
#[test]
fn plan_shows_a_files_escape_codes_instead_of_obeying_them() {
    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("escapes.toml");
    std::fs::write(
        &file,
        "name = \"escapes\"\nquestion = \"Harmless?\\u001b[8m hidden\"\n[[target]]\nname = \"t\\u202e\"\ncommand = [\"rm\", \"-rf\", \"/tmp/x\\r\\u001b[2Kruns    t: `true`\"]\nport = 9\n[database]\nreset = \"DROP TABLE users;\\u001b[1A\"\n[load]\npath = \"/\"\nrate = 10\nduration = \"1s\"\n",
    )
    .unwrap();
    let (ok, plan, err) = experiment_in(work.path(), &["plan", file.to_str().unwrap()], &[]);
    assert!(ok, "{err}");
    assert!(
        !plan.contains('\u{1b}') && !plan.contains('\r') && !plan.contains('\u{202e}'),
        "{plan:?}"
    );
    assert!(plan.contains("Harmless?\\u{1b}[8m hidden"), "{plan}");
    assert!(
        plan.contains("runs    t\\u{202e}: `rm -rf /tmp/x\\u{d}\\u{1b}[2Kruns    t: `true``"),
        "{plan}"
    );
    assert!(
        plan.contains("runs    the SQL `DROP TABLE users;\\u{1b}[1A` in the throwaway database, before every cell"),
        "{plan}"
    );
}

/// A program the host lacks, named with escape codes: the plan's error names it with its codes
/// written out, so that a file cannot draw a clean plan over the one it is (a clear-screen and a
/// cursor move in a program's name once did).
#[test]
fn a_missing_programs_name_is_shown_in_the_plans_error_not_obeyed() {
    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("escapes.toml");
    std::fs::write(
        &file,
        "name = \"escapes\"\nquestion = \"?\"\n[[target]]\nname = \"t\"\ncommand = [\"nope\\u001b[2J\\u001b[Hcurl x | sh\", \"{port}\"]\n[load]\npath = \"/\"\nrate = 10\nduration = \"1s\"\n",
    )
    .unwrap();
    let (ok, plan, err) = experiment_in(
        work.path(),
        &["plan", file.to_str().unwrap()],
        &[("PATH", "/usr/bin:/bin")],
    );
    assert!(!ok, "{plan}{err}");
    assert!(
        !err.contains('\u{1b}') && !plan.contains('\u{1b}'),
        "{err:?}"
    );
    let error = err
        .lines()
        .find(|l| l.starts_with("Error:"))
        .unwrap_or_default();
    assert!(
        error.contains(
            "this host lacks nope\\u{1b}[2J\\u{1b}[Hcurl x | sh (for t; not found on PATH)"
        ),
        "{err}"
    );
}

/// A comparison whose candidate does not build was not measured: the gate fails (exit 1, the
/// reason said), never "inconclusive" (exit 5, which CI jobs may let pass).
#[test]
fn a_gate_whose_candidate_does_not_build_fails() {
    let work = tempfile::tempdir().unwrap();
    let sqlite = format!("sqlite://{}/runs.db", work.path().display());
    std::fs::write(work.path().join("server.py"), SERVER).unwrap();
    let target = |name: &str, build: &str| {
        format!(
            "[[target]]\nname = \"{name}\"\ncommand = [\"python3\", \"server.py\", \"{{port}}\", \"{name}\"]\nready_timeout = \"10s\"\n{build}\n"
        )
    };
    let file = work.path().join("gate.toml");
    std::fs::write(
        &file,
        format!(
            "name = \"gate\"\nquestion = \"Slower?\"\nrepetitions = 3\n[compare]\nbaseline = \"base\"\ncandidate = \"pr\"\n{}{}[load]\npath = \"/\"\nrate = 20\nduration = \"1s\"\n",
            target("base", ""),
            target("pr", "build = [\"false\"]")
        ),
    )
    .unwrap();
    let junit = work.path().join("gate.xml");
    let out = Command::new(LOADGEN)
        .args([
            "experiment",
            "run",
            file.to_str().unwrap(),
            "--no-report",
            "--db",
            &sqlite,
        ])
        .args(["--junit", junit.to_str().unwrap()])
        .current_dir(work.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(1), "{said}");
    let error = one_error(&String::from_utf8_lossy(&out.stderr));
    assert!(error.contains("could not measure every build"), "{said}");
    assert!(error.contains("pr"), "{said}");
}

/// A gun fires the share it is given: an order of a search carrying guns of its own would go
/// on, over the gun host's SSH, to hosts its operator never named. Refused in one line.
#[test]
fn a_gun_refuses_a_search_with_guns_of_its_own() {
    let order = order::Order {
        version: order::VERSION,
        work: order::Work::Search(Box::new(order::Search {
            slo: vec!["p99<=10ms".parse().unwrap()],
            start: None,
            resolution: 0.05,
            p: 0.5,
            step_ns: 1_000_000_000,
            warmup_ns: 0,
            settle_ns: 0,
            min_rate: 1.0,
            max_rate: 10.0,
            max_steps: 2,
            searches: 1,
            until: 0.05,
            budget_ns: None,
            guns: Some(order::Guns {
                hosts: order::GunHosts::Ssh {
                    destinations: vec!["elsewhere".into()],
                    config: None,
                    from: None,
                    terraform_dir: None,
                },
                ..order::Guns::default()
            }),
            against: Vec::new(),
            rounds: 16,
            sequential: false,
            check: 0,
        })),
        requests: order::Requests {
            entries: vec![order::Request {
                url: order::Secret("http://127.0.0.1:9/".into()),
                weight: 1,
                method: None,
                headers: Default::default(),
                body: order::Secret(String::new()),
            }],
            headers: Vec::new(),
        },
        pacing: order::Pacing::default(),
        keeping: order::Keeping::default(),
        probes: None,
        shard: None,
    };
    let request = order::GunRequest::Fire {
        order: Box::new(order),
        cpus: None,
    };
    let mut gun = Command::new(LOADGEN)
        .arg("gun")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut input = gun.stdin.take().unwrap();
        input
            .write_all(format!("{}\n", serde_json::to_string(&request).unwrap()).as_bytes())
            .unwrap();
    }
    let out = gun.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        one_error(&err).contains("a search with guns of its own"),
        "{err}"
    );
}
