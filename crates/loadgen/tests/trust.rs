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
use common::{command_lines_holding, end_holding};

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
    // Watch every command line while the experiment runs.
    let running = Arc::new(AtomicBool::new(true));
    let watcher = std::thread::spawn({
        let running = running.clone();
        move || {
            let mut seen = Vec::new();
            while running.load(Ordering::Relaxed) {
                seen.extend(command_lines_holding(&[
                    QUERY_SECRET,
                    BODY_SECRET,
                    "APIKEY321",
                ]));
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            seen
        }
    });
    let output = command.output().unwrap();
    running.store(false, Ordering::Relaxed);
    let on_command_lines = watcher.join().unwrap();
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
