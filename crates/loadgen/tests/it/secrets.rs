//! No secret passed to loadgen is kept or drawn: a run with a password in the store's URL and
//! in the target's, secret headers, a secret query parameter, a secret label and a probe token
//! (over TLS, pinned), then every row of the store and every file of the report searched for
//! each of them.
#![allow(clippy::unwrap_used)]

use crate::common;

use crate::postgres;

use common::{exclusive, local_probe_with};
use loadgen::commands::target::{TargetConfig, TargetServer};
use probe::selector::Selector;
use sqlx::Row;

const SECRETS: [&str; 9] = [
    "KhSecret",
    "EqSecret",
    "UrlPassw0rdSecret",
    "BearerSecret",
    "CookieSecret",
    "ProxySecret",
    "ApiKeySecret",
    "QuerySecret",
    "ProbeTokenSecret",
];

#[test]
fn no_secret_from_the_command_line_reaches_the_store_or_the_pages() {
    let _cpu = exclusive();
    let target = TargetServer::start(TargetConfig::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("probe.token");
    std::fs::write(&token, "ProbeTokenSecret\n").unwrap();
    let (tls, _) =
        probe::tls::ServerTls::generate_or_load(&dir.path().join("tls"), &["localhost".into()])
            .unwrap();
    let probe = local_probe_with(
        Selector::Pid(std::process::id() as i32),
        probe::server::ServeConfig {
            token: Some("ProbeTokenSecret".into()),
            tls: Some(tls.config.clone()),
            ..Default::default()
        },
        10_000,
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let pg = rt.block_on(postgres::TestPostgres::start());
    // The test cluster trusts local connections: a password in the URL is sent and ignored,
    // which is all this test needs.
    let (db, password) = with_password(&pg.url, "PgPassw0rdSecret");
    let url = target.url("/now?access_token=QuerySecret");
    // A password in the target's URL is refused, and the refusal does not print it.
    let refused = std::process::Command::new(env!("CARGO_BIN_EXE_loadgen"))
        .args(["attack", "--rate", "10", "--duration", "1s", "--db", &db])
        .arg(url.replace("http://", "http://showdown:UrlPassw0rdSecret@"))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success() && said.contains("Authorization"),
        "{said}"
    );
    assert!(!said.contains("UrlPassw0rdSecret"), "{said}");
    let site = dir.path().join("site");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_loadgen"))
        .args(["attack", "--rate", "200", "--duration", "1s", "--db", &db])
        .args(["-H", "Authorization: Bearer BearerSecret"])
        .args(["--header=Cookie: session=CookieSecret"])
        .args([
            "-H",
            "Proxy-Authorization: Basic ProxySecret",
            "-HX-Api-Key: ApiKeySecret",
            // Every spelling clap accepts: a cluster, and `=`.
            "-kH",
            "X-Session-Token: KhSecret",
            "-H=X-Auth-Token: EqSecret",
        ])
        .args([
            "--probe",
            &probe.addr.to_string(),
            "--probe-token-file",
            token.to_str().unwrap(),
        ])
        .args(["--probe-fingerprint", &tls.fingerprint])
        .args(["--report", site.to_str().unwrap(), "--output", "json", &url])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["requests"]["ok"], 200, "{summary}");
    assert!(
        summary["warnings"].as_array().is_none_or(|w| w.is_empty()),
        "{summary}"
    );
    assert_eq!(
        summary["status_codes"]["200"], 200,
        "every request answered: {summary}"
    );
    for secret in SECRETS.iter().copied().chain([password.as_str()]) {
        assert!(!stderr.contains(secret), "{secret} printed: {stderr}");
    }

    let stored = stored_text(&rt, &pg.url);
    assert!(
        !stored.contains("ProbeTokenSecret") && stored.contains("probe.token"),
        "the token file's name is kept, its content is not"
    );
    assert!(
        stored.contains("<redacted>"),
        "the redacted places are marked"
    );
    assert!(stored.contains("\"kind\""), "probe samples were stored");
    for secret in SECRETS.iter().copied().chain([password.as_str()]) {
        assert!(!stored.contains(secret), "{secret} was stored");
    }

    let files = site_texts(&site);
    for (path, text) in &files {
        for secret in SECRETS.iter().copied().chain([password.as_str()]) {
            assert!(!text.contains(secret), "{secret} drawn in {path}");
        }
    }
    assert!(files.len() >= 2, "the report wrote its pages");
}

/// Every row of every table of the store at `url`, as text.
fn stored_text(rt: &tokio::runtime::Runtime, url: &str) -> String {
    let rows: Vec<String> = rt.block_on(async {
        let pool = sqlx::PgPool::connect(url).await.unwrap();
        let tables: Vec<String> = sqlx::query(
            "SELECT table_name::text FROM information_schema.tables WHERE table_schema = current_schema()",
        )
        .fetch_all(&pool)
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
        assert!(tables.iter().any(|t| t == "runs"), "{tables:?}");
        let mut rows = Vec::new();
        for table in tables {
            let q = format!("SELECT CAST(t AS text) FROM \"{table}\" t");
            for row in sqlx::query(sqlx::AssertSqlSafe(q)).fetch_all(&pool).await.unwrap() {
                rows.push(row.get::<String, _>(0));
            }
        }
        rows
    });
    rows.join("\n")
}

/// Every file under `site`, as (path, text).
fn site_texts(site: &std::path::Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![site.to_path_buf()];
    while let Some(path) = stack.pop() {
        for entry in std::fs::read_dir(&path).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
            out.push((path.display().to_string(), text));
        }
    }
    out
}

/// The test server's URL with a password in it, and that password: its own when it has one (a
/// cluster of the test's own), else `password` (the test script's server trusts local
/// connections and ignores it: all this needs).
fn with_password(url: &str, password: &str) -> (String, String) {
    let (scheme, rest) = url.split_once("://").unwrap();
    let (userinfo, host) = rest.split_once('@').unwrap();
    match userinfo.split_once(':') {
        Some((_, own)) => (url.to_string(), own.to_string()),
        None => (
            format!("{scheme}://{userinfo}:{password}@{host}"),
            password.to_string(),
        ),
    }
}

/// The experiment runner keeps its secrets too: the store's password and the headers reach
/// each cell's loadgen through its environment, never its command line (which every local user
/// can read), and neither they nor a triple-quoted secret of the file are kept or drawn.
#[test]
fn an_experiments_secrets_stay_off_command_lines_the_store_and_the_pages() {
    let _cpu = exclusive();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let pg = rt.block_on(postgres::TestPostgres::start());
    let (db, password) = with_password(&pg.url, "StorePassw0rdSecret");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("secret.toml");
    std::fs::write(
        &file,
        r#"
name = "secrets"
question = "Does any secret leak?"
pre_roll = "500ms"
post_roll = "500ms"
[[target]]
name = "rust"
env = { API_TOKEN = """Triple
QuotedSecret""" }
[load]
path = "/now"
headers = { Authorization = "Bearer HeaderSecret", "X-Api-Key" = 'KeySecret' }
rate = 100
duration = "3s"
"#,
    )
    .unwrap();
    let site = dir.path().join("site");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_loadgen"))
        .args(["experiment", "run", file.to_str().unwrap(), "--report"])
        .arg(&site)
        .env("SHOWDOWN_DB", &db)
        .env_remove("DATABASE_URL")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Every generator seen while the experiment runs (`loadgen order`): its command line.
    let mut argvs = Vec::new();
    while std::fs::metadata(format!("/proc/{}", child.id())).is_ok_and(|_| {
        std::fs::read_to_string(format!("/proc/{}/stat", child.id()))
            .is_ok_and(|s| !s.contains(") Z "))
    }) {
        argvs.extend(common::command_lines_holding(&["loadgen order"]));
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let out = child.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{said}");
    assert!(!argvs.is_empty(), "the cell's loadgen was seen");
    let secrets = [
        password.as_str(),
        "HeaderSecret",
        "KeySecret",
        "QuotedSecret",
    ];
    for argv in &argvs {
        for secret in secrets {
            assert!(!argv.contains(secret), "{secret} on a command line: {argv}");
        }
    }
    for secret in secrets {
        assert!(!said.contains(secret), "{secret} printed: {said}");
    }
    let stored = stored_text(&rt, &pg.url);
    assert!(stored.contains("API_TOKEN"), "the file is kept, redacted");
    for secret in secrets {
        assert!(!stored.contains(secret), "{secret} was stored");
    }
    for (path, text) in site_texts(&site) {
        for secret in secrets {
            assert!(!text.contains(secret), "{secret} drawn in {path}");
        }
    }
}
