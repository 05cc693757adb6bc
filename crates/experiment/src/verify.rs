//! Holding a running target to `targets/CONTRACT.md` before it is measured, as TechEmpower's
//! toolset does before it benchmarks a framework: status codes, headers, body shapes, bad input
//! answered `400`, and the database work really done (rows counted around a burst of inserts).
//! A target that fails is not measured; the checks say why.

use std::time::{Duration, SystemTime};

use aes::cipher::{block_padding::Pkcs7, BlockDecryptMut, KeyIvInit};
use bytes::Bytes;
use http::StatusCode;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::http::{Exchange, Http, HttpError};

/// Why a check of a target failed: what came back, against what the contract or the file's
/// check wants. Kept as the check's outcome, in words.
#[derive(Debug, thiserror::Error)]
pub enum CheckFailure {
    #[error(transparent)]
    Http(#[from] HttpError),
    #[error(transparent)]
    Reach(#[from] crate::http::ReachError),
    #[error(transparent)]
    Database(#[from] crate::database::DatabaseError),
    /// `body`: the answer's first 200 bytes, as the check shows them.
    #[error("status {got}, not {want}: {body}")]
    Status {
        got: StatusCode,
        want: String,
        body: String,
    },
    #[error("Content-Type {0:?}, not application/json")]
    ContentType(String),
    #[error("Content-Length does not match the {0}-byte body")]
    ContentLength(usize),
    #[error("no Content-Length (a chunked body?)")]
    NoContentLength,
    #[error("Date header {0:?} is not an HTTP date")]
    Date(Option<String>),
    #[error("no string {name:?} in {json}")]
    NoString { name: String, json: Box<Value> },
    #[error("{name} is {got:?}, not {want:?}")]
    Field {
        name: String,
        got: String,
        want: String,
    },
    #[error("now {now:?}: {source}")]
    Now {
        now: String,
        #[source]
        source: humantime::TimestampError,
    },
    #[error("now {0:?} is not UTC RFC 3339 with milliseconds")]
    NowShape(String),
    #[error("now {now:?} is {off:?} away from this host's clock")]
    NowOff { now: String, off: Duration },
    /// `wanted`: how long it should have taken, in words.
    #[error("answered after {ms:.1} ms, not {wanted}")]
    Time { ms: f64, wanted: &'static str },
    #[error(transparent)]
    Decrypt(#[from] DecryptError),
    #[error("{got} decrypts to {plain:?}, not {sent:?}")]
    Decrypts {
        got: String,
        plain: String,
        sent: String,
    },
    #[error("the two values share an IV: each needs a random one")]
    SharedIv,
    #[error("the body ({got} bytes) is not the upstream's ({want} bytes)")]
    NotUpstream { got: usize, want: usize },
    #[error("GET /users: Allow header {0:?}, not POST")]
    Allow(Option<String>),
    #[error("POST {path}: no integer id in {json}")]
    NoId { path: String, json: Box<Value> },
    #[error("POST {path}: Location {location:?}, not /users/{id}")]
    Location {
        path: String,
        location: String,
        id: i64,
    },
    #[error("{BURST} requests answered 201 but {inserted} rows were inserted")]
    Inserted { inserted: i64 },
    /// A check of several requests: which one failed (`GET /delay`, `request 3 of 20`).
    #[error("{what}: {source}")]
    At {
        what: String,
        #[source]
        source: Box<CheckFailure>,
    },
    #[error("no database to count rows in: add a [database] table")]
    NoDatabase,
    #[error(
        "{burst} requests were answered as expected but {query:?} grew by {added}, not {burst}"
    )]
    Grew {
        burst: u32,
        query: String,
        added: i64,
    },
    #[error(transparent)]
    Method(#[from] http::method::InvalidMethod),
    #[error(transparent)]
    HeaderName(#[from] http::header::InvalidHeaderName),
    #[error(transparent)]
    HeaderValue(#[from] http::header::InvalidHeaderValue),
    #[error("no field {field:?} in {body}")]
    NoField { field: String, body: String },
    #[error("{field} is {got}, not {want}")]
    Equals {
        field: String,
        got: Box<Value>,
        want: Box<toml::Value>,
    },
}

impl CheckFailure {
    /// This failure, said of `what` (one request of several).
    pub fn at(self, what: impl Into<String>) -> CheckFailure {
        CheckFailure::At {
            what: what.into(),
            source: Box::new(self),
        }
    }
}

/// Why a value `/encrypt` returned does not decrypt.
#[derive(Debug, thiserror::Error)]
pub enum DecryptError {
    #[error("{0:?} is not IVHEX:CIPHERHEX")]
    Shape(String),
    #[error("{0:?}: the IV is not 16 bytes of hex")]
    Iv(String),
    #[error("{value:?}: {source}")]
    Hex {
        value: String,
        #[source]
        source: hex::FromHexError,
    },
    #[error("{0:?} does not decrypt under SHA-256(SECRET)")]
    Key(String),
    #[error(transparent)]
    Utf8(#[from] std::string::FromUtf8Error),
}

/// What the checks can rely on: what the runner gave the target.
#[derive(Debug, Clone, Default)]
pub struct Expect {
    /// The target's database, to count the rows its inserts made.
    pub database_url: Option<String>,
    /// The target's `SECRET`, to decrypt what `/encrypt` returns.
    pub secret: Option<String>,
    /// What the upstream of `/proxy` serves.
    pub upstream_body: Option<Bytes>,
}

/// How one check went: the vocabulary's (skipped: not checked, and why, e.g. no database).
pub use store::vocabulary::Outcome;

#[derive(Debug, Clone)]
pub struct Check {
    pub name: String,
    pub outcome: Outcome,
}

/// Every check's outcome.
#[derive(Debug, Clone, Default)]
pub struct Verdict {
    pub checks: Vec<Check>,
}

impl Verdict {
    pub fn passed(&self) -> bool {
        !self
            .checks
            .iter()
            .any(|c| matches!(c.outcome, Outcome::Failed(_)))
    }

    /// The failures in one line: `check: why; check: why`.
    pub fn failures(&self) -> String {
        self.checks
            .iter()
            .filter_map(|c| match &c.outcome {
                Outcome::Failed(why) => Some(format!("{}: {why}", c.name)),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// `result`'s failure is kept in words.
    pub(crate) fn record<E: std::fmt::Display>(
        &mut self,
        name: impl Into<String>,
        result: Result<(), E>,
    ) {
        let outcome = match result {
            Ok(()) => Outcome::Passed,
            Err(why) => Outcome::Failed(why.to_string()),
        };
        self.checks.push(Check {
            name: name.into(),
            outcome,
        });
    }

    fn skip(&mut self, name: &'static str, why: &str) {
        self.checks.push(Check {
            name: name.into(),
            outcome: Outcome::Skipped(why.to_string()),
        });
    }
}

/// Requests of the burst whose rows are counted.
const BURST: i64 = 20;

/// Runs every check against the target at `base` (`http://HOST:PORT`).
pub async fn verify(base: &str, expect: &Expect) -> Verdict {
    let http = Http::new(Duration::from_secs(10));
    let mut verdict = Verdict::default();

    answers(&http, base, &mut verdict).await;
    refusals(&http, base, &mut verdict).await;
    match &expect.database_url {
        Some(db) => verdict.record("POST /users inserts a row", inserts(&http, base, db).await),
        None => verdict.skip("POST /users inserts a row", "no database was given"),
    }
    match &expect.secret {
        Some(secret) => verdict.record(
            "POST /encrypt decrypts with the key",
            encrypts(&http, base, secret).await,
        ),
        None => verdict.skip("POST /encrypt decrypts with the key", "no SECRET was given"),
    }
    match &expect.upstream_body {
        Some(upstream) => verdict.record(
            "GET /proxy returns the upstream's body",
            proxies(&http, base, upstream).await,
        ),
        None => verdict.skip(
            "GET /proxy returns the upstream's body",
            "no upstream was given",
        ),
    }
    verdict
}

/// `POST /encrypt`: both fields decrypt with `secret` to what was sent, each with an IV of
/// its own.
async fn encrypts(http: &Http, base: &str, secret: &str) -> Result<(), CheckFailure> {
    let url = |path: &str| format!("{base}{path}");
    let body = br#"{"userId":"user-42","password":"correct horse"}"#;
    let x = http.post(&url("/encrypt"), body).await?;
    status(&x, StatusCode::OK)?;
    json_headers(&x)?;
    let v = x.json()?;
    let (first, second) = (text(&v, "userId")?, text(&v, "password")?);
    for (sent, got) in [("user-42", first), ("correct horse", second)] {
        let plain = decrypt(secret, got)?;
        if plain != sent {
            return Err(CheckFailure::Decrypts {
                got: got.to_string(),
                plain,
                sent: sent.to_string(),
            });
        }
    }
    if first.split(':').next() == second.split(':').next() {
        return Err(CheckFailure::SharedIv);
    }
    Ok(())
}

/// `GET /proxy`: the upstream's body, byte for byte.
async fn proxies(http: &Http, base: &str, upstream: &Bytes) -> Result<(), CheckFailure> {
    let url = |path: &str| format!("{base}{path}");
    let x = http.get(&url("/proxy")).await?;
    status(&x, StatusCode::OK)?;
    if x.body != *upstream {
        return Err(CheckFailure::NotUpstream {
            got: x.body.len(),
            want: upstream.len(),
        });
    }
    Ok(())
}

/// What the contract's endpoints answer to requests that are right.
async fn answers(http: &Http, base: &str, verdict: &mut Verdict) {
    let url = |path: &str| format!("{base}{path}");
    verdict.record(
        "GET /healthz",
        async {
            let x = http.get(&url("/healthz")).await?;
            status(&x, StatusCode::OK)?;
            json_headers(&x)?;
            field_is(&x.json()?, "status", "ok")
        }
        .await,
    );
    verdict.record(
        "GET /now",
        async {
            let x = http.get(&url("/now")).await?;
            status(&x, StatusCode::OK)?;
            json_headers(&x)?;
            now_body(&x)
        }
        .await,
    );
    verdict.record("GET /delay?ms=100", delay_answer(http, base).await);
    verdict.record(
        "GET /delay?ms=%35%30 (percent-encoded)",
        percent_delay_answer(http, base).await,
    );
    verdict.record(
        "GET /compute?ms=5",
        async {
            let x = http.get(&url("/compute?ms=5")).await?;
            status(&x, StatusCode::OK)?;
            json_headers(&x)?;
            now_body(&x)
        }
        .await,
    );
    verdict.record(
        "GET /compute?ms=1&delay_ms=50",
        compute_delay_answer(http, base).await,
    );
}

/// What they refuse, and how.
async fn refusals(http: &Http, base: &str, verdict: &mut Verdict) {
    let url = |path: &str| format!("{base}{path}");
    verdict.record("bad ms is 400", bad_ms_refused(http, base).await);
    verdict.record("bad bodies are 400", bad_bodies_refused(http, base).await);
    verdict.record(
        "a body over 64 KiB is 413",
        async {
            let big = format!(r#"{{"email":"{}","password":"p"}}"#, "x".repeat(70 * 1024));
            let x = http.post(&url("/users"), big.as_bytes()).await?;
            error_body(&x, StatusCode::PAYLOAD_TOO_LARGE)
        }
        .await,
    );
    verdict.record(
        "unknown path is 404, wrong method 405",
        async {
            let x = http.get(&url("/no/such/path")).await?;
            error_body(&x, StatusCode::NOT_FOUND)?;
            let x = http.get(&url("/users")).await?;
            error_body(&x, StatusCode::METHOD_NOT_ALLOWED)?;
            match x.header("allow") {
                Some(allow) if allow.contains("POST") => Ok(()),
                other => Err(CheckFailure::Allow(other.map(str::to_string))),
            }
        }
        .await,
    );
}

/// `GET /delay?ms=100`: the time, after about 100 ms.
async fn delay_answer(http: &Http, base: &str) -> Result<(), CheckFailure> {
    let url = |path: &str| format!("{base}{path}");
    let x = http.get(&url("/delay?ms=100")).await?;
    status(&x, StatusCode::OK)?;
    json_headers(&x)?;
    now_body(&x)?;
    let ms = x.elapsed.as_secs_f64() * 1e3;
    if !(99.0..600.0).contains(&ms) {
        return Err(CheckFailure::Time {
            ms,
            wanted: "about 100",
        });
    }
    Ok(())
}

/// `GET /delay?ms=%35%30`: after about 50 ms, the query percent-decoded.
async fn percent_delay_answer(http: &Http, base: &str) -> Result<(), CheckFailure> {
    let url = |path: &str| format!("{base}{path}");
    let x = http.get(&url("/delay?ms=%35%30")).await?;
    status(&x, StatusCode::OK)?;
    let ms = x.elapsed.as_secs_f64() * 1e3;
    if !(49.0..550.0).contains(&ms) {
        return Err(CheckFailure::Time {
            ms,
            wanted: "about 50: is the query percent-decoded?",
        });
    }
    Ok(())
}

/// `GET /compute?ms=1&delay_ms=50`: the time, after 50 ms or more.
async fn compute_delay_answer(http: &Http, base: &str) -> Result<(), CheckFailure> {
    let url = |path: &str| format!("{base}{path}");
    let x = http.get(&url("/compute?ms=1&delay_ms=50")).await?;
    status(&x, StatusCode::OK)?;
    now_body(&x)?;
    let ms = x.elapsed.as_secs_f64() * 1e3;
    if !(50.0..600.0).contains(&ms) {
        return Err(CheckFailure::Time {
            ms,
            wanted: "50 or more",
        });
    }
    Ok(())
}

/// Every bad `ms` (missing, negative, not a whole number, too large) answered 400.
async fn bad_ms_refused(http: &Http, base: &str) -> Result<(), CheckFailure> {
    let url = |path: &str| format!("{base}{path}");
    for path in [
        "/delay",
        "/delay?ms=-1",
        "/delay?ms=abc",
        "/delay?ms=60001",
        "/delay?ms=1.5",
        "/compute?ms=x",
        "/compute?ms=10001",
        "/compute?ms=1&delay_ms=-5",
    ] {
        let x = http.get(&url(path)).await?;
        error_body(&x, StatusCode::BAD_REQUEST).map_err(|e| e.at(format!("GET {path}")))?;
    }
    Ok(())
}

/// Every bad body of `/users`, `/user` and `/encrypt` answered 400.
async fn bad_bodies_refused(http: &Http, base: &str) -> Result<(), CheckFailure> {
    let url = |path: &str| format!("{base}{path}");
    let long = "x".repeat(256);
    let cases: Vec<(&str, String)> = vec![
        ("/users", "not json".into()),
        ("/users", "[1,2]".into()),
        ("/users", "{}".into()),
        ("/users", r#"{"email":"a@b.c"}"#.into()),
        ("/users", r#"{"email":1,"password":"p"}"#.into()),
        ("/users", r#"{"email":"","password":"p"}"#.into()),
        ("/users", format!(r#"{{"email":"{long}","password":"p"}}"#)),
        ("/user", r#"{"password":"p"}"#.into()),
        ("/encrypt", r#"{"userId":"u"}"#.into()),
        (
            "/encrypt",
            format!(r#"{{"userId":"u","password":"{long}"}}"#),
        ),
    ];
    for (path, body) in cases {
        let x = http.post(&url(path), body.as_bytes()).await?;
        error_body(&x, StatusCode::BAD_REQUEST)
            .map_err(|e| e.at(format!("POST {path} {body:.40}")))?;
    }
    // 255 characters of four bytes each is within the limit: characters, not bytes.
    Ok(())
}

/// A burst of inserts, and the rows counted around it.
async fn inserts(http: &Http, base: &str, db: &str) -> Result<(), CheckFailure> {
    let before = crate::database::count_users(db).await?;
    for i in 0..BURST {
        let path = if i % 2 == 0 { "/users" } else { "/user" };
        let body = format!(r#"{{"email":"verify{i}@example.com","password":"p{i}"}}"#);
        let x = http.post(&format!("{base}{path}"), body.as_bytes()).await?;
        status(&x, StatusCode::CREATED).map_err(|e| e.at(format!("POST {path}")))?;
        json_headers(&x)?;
        let v = x.json()?;
        let Some(id) = v.get("id").and_then(Value::as_i64) else {
            return Err(CheckFailure::NoId {
                path: path.to_string(),
                json: Box::new(v),
            });
        };
        let location = x.header("location").unwrap_or_default();
        if location != format!("/users/{id}") {
            return Err(CheckFailure::Location {
                path: path.to_string(),
                location: location.to_string(),
                id,
            });
        }
    }
    let after = crate::database::count_users(db).await?;
    if after - before != BURST {
        return Err(CheckFailure::Inserted {
            inserted: after - before,
        });
    }
    Ok(())
}

fn status(x: &Exchange, want: StatusCode) -> Result<(), CheckFailure> {
    if x.status == want {
        return Ok(());
    }
    Err(CheckFailure::Status {
        got: x.status,
        want: want.to_string(),
        body: String::from_utf8_lossy(&x.body[..x.body.len().min(200)]).into_owned(),
    })
}

/// `Content-Type: application/json`, a `Content-Length` equal to the body's, and a `Date`.
fn json_headers(x: &Exchange) -> Result<(), CheckFailure> {
    let content_type = x.header("content-type").unwrap_or_default();
    if !content_type.starts_with("application/json") {
        return Err(CheckFailure::ContentType(content_type.to_string()));
    }
    match x.header("content-length").map(str::parse::<usize>) {
        Some(Ok(n)) if n == x.body.len() => {}
        Some(_) => return Err(CheckFailure::ContentLength(x.body.len())),
        None => return Err(CheckFailure::NoContentLength),
    }
    match x.header("date") {
        Some(date) if date.ends_with(" GMT") && date.len() == 29 => Ok(()),
        other => Err(CheckFailure::Date(other.map(str::to_string))),
    }
}

fn text<'a>(v: &'a Value, name: &str) -> Result<&'a str, CheckFailure> {
    v.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| CheckFailure::NoString {
            name: name.to_string(),
            json: Box::new(v.clone()),
        })
}

fn field_is(v: &Value, name: &str, want: &str) -> Result<(), CheckFailure> {
    match text(v, name)? {
        got if got == want => Ok(()),
        got => Err(CheckFailure::Field {
            name: name.to_string(),
            got: got.to_string(),
            want: want.to_string(),
        }),
    }
}

/// `{"now": "YYYY-MM-DDTHH:MM:SS.mmmZ"}`, within 5 s of this host's clock.
fn now_body(x: &Exchange) -> Result<(), CheckFailure> {
    let v = x.json()?;
    let now = text(&v, "now")?;
    let shape = now.len() == 24
        && now.ends_with('Z')
        && now.as_bytes()[10] == b'T'
        && now.as_bytes()[19] == b'.';
    let when = humantime::parse_rfc3339(now).map_err(|source| CheckFailure::Now {
        now: now.to_string(),
        source,
    })?;
    if !shape {
        return Err(CheckFailure::NowShape(now.to_string()));
    }
    let off = match SystemTime::now().duration_since(when) {
        Ok(d) => d,
        Err(e) => e.duration(),
    };
    if off > Duration::from_secs(5) {
        return Err(CheckFailure::NowOff {
            now: now.to_string(),
            off,
        });
    }
    Ok(())
}

/// A JSON `{"error": "…"}` with the status wanted.
fn error_body(x: &Exchange, want: StatusCode) -> Result<(), CheckFailure> {
    status(x, want)?;
    json_headers(x)?;
    text(&x.json()?, "error").map(|_| ())
}

/// `IVHEX:CIPHERHEX` decrypted under `SHA-256(secret)`.
pub fn decrypt(secret: &str, value: &str) -> Result<String, DecryptError> {
    let (iv, cipher) = value
        .split_once(':')
        .ok_or_else(|| DecryptError::Shape(value.to_string()))?;
    let iv: [u8; 16] = hex::decode(iv)
        .ok()
        .and_then(|v| v.try_into().ok())
        .ok_or_else(|| DecryptError::Iv(value.to_string()))?;
    let mut cipher = hex::decode(cipher).map_err(|source| DecryptError::Hex {
        value: value.to_string(),
        source,
    })?;
    let key: [u8; 32] = Sha256::digest(secret.as_bytes()).into();
    let plain = cbc::Decryptor::<aes::Aes256>::new(&key.into(), &iv.into())
        .decrypt_padded_mut::<Pkcs7>(&mut cipher)
        .map_err(|_| DecryptError::Key(value.to_string()))?;
    Ok(String::from_utf8(plain.to_vec())?)
}
