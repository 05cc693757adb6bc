//! No secret passed to loadgen is kept or drawn: a run with a password in the store's URL and
//! in the target's, secret headers, a secret query parameter, a secret label and a probe token
//! (over TLS, pinned), then every row of the store and every file of the report searched for
//! each of them.
#![allow(clippy::unwrap_used)]

mod common;

#[path = "../../store/tests/support/postgres.rs"]
mod postgres;

use common::{exclusive, local_probe_with};
use loadgen::target::{TargetConfig, TargetServer};
use probe::selector::Selector;
use sqlx::Row;

const SECRETS: [&str; 8] = [
    "PgPassw0rdSecret",
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
    let (scheme, rest) = pg.url.split_once("://").unwrap();
    let user_end = rest.find(['@', ':']).unwrap();
    let db = format!(
        "{scheme}://{}:PgPassw0rdSecret@{}",
        &rest[..user_end],
        &rest[rest.find('@').unwrap() + 1..]
    );
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
    for secret in SECRETS {
        assert!(!stderr.contains(secret), "{secret} printed: {stderr}");
    }

    // Every row of every table, as text.
    let rows: Vec<String> = rt.block_on(async {
        let pool = sqlx::PgPool::connect(&pg.url).await.unwrap();
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
    let stored = rows.join("\n");
    assert!(
        !stored.contains("ProbeTokenSecret") && stored.contains("probe.token"),
        "the token file's name is kept, its content is not"
    );
    assert!(
        stored.contains("<redacted>"),
        "the redacted places are marked"
    );
    assert!(stored.contains("\"kind\""), "probe samples were stored");
    for secret in SECRETS {
        assert!(!stored.contains(secret), "{secret} was stored");
    }

    // Every file of the report.
    let mut files = 0;
    let mut stack = vec![site];
    while let Some(path) = stack.pop() {
        for entry in std::fs::read_dir(&path).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            files += 1;
            let bytes = std::fs::read(&path).unwrap();
            let text = String::from_utf8_lossy(&bytes);
            for secret in SECRETS {
                assert!(
                    !text.contains(secret),
                    "{secret} drawn in {}",
                    path.display()
                );
            }
        }
    }
    assert!(files >= 2, "the report wrote its pages");
}
