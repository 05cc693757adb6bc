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

mod common;
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
rate = 50
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
        assert!(lines.len() >= 150, "{name}: {} requests", lines.len());
        assert!(!headers.contains("LEAKED7"), "{name} got SHOWDOWN_HEADERS");
        let load: Vec<&&str> = lines
            .iter()
            .filter(|l| l.to_ascii_lowercase().contains("x-visible"))
            .collect();
        assert!(load.len() >= 150, "{name}: {} load requests", load.len());
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
        &["run", &file, "--no-report", "--db", &sqlite],
        &[("API_HEADERS", "X-Ok: fine\nBearer NAKEDTOKEN4")],
    );
    let said = format!("{out}{err}");
    assert!(!said.contains("NAKEDTOKEN4"), "{said}");
    assert!(
        said.contains("headers_env API_HEADERS: line 2 is not a header"),
        "{ok}: {said}"
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
