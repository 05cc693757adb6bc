//! What to send: one request from the command line, or a weighted mix from a targets file.
//!
//! A targets file is TOML, one `[[request]]` table per kind of request:
//!
//! ```toml
//! [[request]]
//! url = "http://127.0.0.1:8080/now"
//! weight = 99
//!
//! [[request]]
//! url = "http://127.0.0.1:8080/compute"
//! weight = 1
//!
//! [[request]]
//! method = "POST"
//! url = "http://127.0.0.1:8080/users"
//! headers = { "Content-Type" = "application/json" }
//! body = '{"email":"u{{seq}}@example.com","password":"{{hex:16}}"}'
//! # or: body_file = "user.json"   (relative to the targets file)
//! ```
//!
//! Weights are turned into a fixed cycle by smooth weighted round-robin (the algorithm nginx uses
//! for upstreams): with weights 99 and 1, every run of 100 consecutive requests holds exactly 99
//! and 1, spread out rather than bunched. Request `i` takes entry `i mod cycle length`, so the mix
//! is exact and the same on every run and every thread. All requests of one attack go to the same
//! origin (scheme, host and port), since they share one connection pool.

use std::path::{Path, PathBuf};

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue, CONNECTION, CONTENT_LENGTH, HOST, USER_AGENT};
use http::{HeaderMap, Method, Request, Uri};
use http_body_util::Full;
use rand::Rng;
use serde::Deserialize;
use thiserror::Error;

use crate::engine::template::{Template, TemplateError};

/// Why the requests to send could not be set up; each message names what to fix.
#[derive(Debug, Error)]
pub enum RequestError {
    #[error("URL {url:?} is not an absolute http:// or https:// URL: write it like http://127.0.0.1:8080/path")]
    BadUrl { url: String },
    #[error("URL {url:?} carries a user name or password: send credentials as a header instead (-H 'Authorization: Basic …'), which is kept out of the store")]
    UserInfo { url: String },
    /// The header as shown: its name, never its value (which may be a secret).
    #[error(
        "header {0} is not a valid 'Name: value' (its value is not shown: it may be a secret), e.g. -H 'Content-Type: application/json'"
    )]
    BadHeader(String),
    #[error("method {0:?} is not an HTTP method: use e.g. GET or POST")]
    BadMethod(String),
    #[error("in {what}: {source}")]
    Template {
        what: String,
        #[source]
        source: TemplateError,
    },
    #[error("cannot read the body file {path}: {source}")]
    BodyFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read the targets file {path}: {source}")]
    TargetsFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the targets file {path} is not valid: {message}")]
    TargetsSyntax { path: PathBuf, message: String },
    #[error("the targets file {0} has no [[request]] table: add at least one, with a url")]
    NoTargets(PathBuf),
    #[error(
        "all requests must go to one origin, but {first} and {other} differ: run one loadgen per host"
    )]
    MixedOrigins { first: String, other: String },
    #[error("request weights must be whole numbers above 0 that add up to at most {max}: use e.g. percentages")]
    BadWeights { max: u64 },
    #[error("give both a body and a body file for one request, not both: keep one of them")]
    TwoBodies,
    #[error("the order names no request: give at least one, with a url")]
    NoRequests,
}

/// Where requests go: one scheme, host and port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub tls: bool,
    pub host: String,
    pub port: u16,
    /// `host:port` as written in the URL (the Host header and the HTTP/2 `:authority`).
    pub authority: http::uri::Authority,
}

impl Origin {
    fn scheme(&self) -> &'static str {
        if self.tls {
            "https"
        } else {
            "http"
        }
    }
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}://{}", self.scheme(), self.authority)
    }
}

/// One kind of request, ready to be instantiated many times.
#[derive(Debug, Clone)]
pub struct RequestSpec {
    pub method: Method,
    pub origin: Origin,
    /// Path and query, possibly with placeholders.
    path: Template,
    /// The path's text, for display.
    pub path_text: String,
    pub headers: HeaderMap,
    body: Template,
    /// HTTP/1.1's `Host`, made once rather than per request.
    host: Option<HeaderValue>,
    /// The path as a URI when it has no placeholders: cloned (reference counts), not re-parsed,
    /// per request.
    fixed_uri: Option<Uri>,
}

/// What a request needs besides its URL; the command line's `-m`, `-H`, `--body`.
#[derive(Debug, Clone, Default)]
pub struct RequestOptions {
    pub method: Option<String>,
    pub headers: Vec<String>,
    pub body: Option<String>,
    pub body_file: Option<PathBuf>,
}

impl RequestSpec {
    /// Builds a spec from a URL and the command line's options.
    pub fn new(url: &str, options: &RequestOptions) -> Result<Self, RequestError> {
        let request = one_request(url, options)?;
        let headers: Vec<(String, String)> = options
            .headers
            .iter()
            .map(|h| parse_header_line(h))
            .collect::<Result<_, _>>()?;
        Self::from_parts(
            request.method.as_deref().unwrap_or("GET"),
            url,
            &headers,
            request.body.expose(),
        )
    }

    fn from_parts(
        method: &str,
        url: &str,
        headers: &[(String, String)],
        body: &str,
    ) -> Result<Self, RequestError> {
        let method = Method::from_bytes(method.trim().to_ascii_uppercase().as_bytes())
            .map_err(|_| RequestError::BadMethod(method.to_string()))?;
        let (origin, path_text) = parse_url(url)?;
        let path = Template::compile(&path_text).map_err(|source| RequestError::Template {
            what: format!("the URL {url}"),
            source,
        })?;
        // A path rendered from a template must still be a valid URI: try it once now, so that a
        // bad character is reported before the attack rather than on every request.
        let sample = path.render(0, &mut rand::rng());
        if Uri::from_maybe_shared(sample).is_err() {
            return Err(RequestError::BadUrl {
                url: redact::text(url),
            });
        }
        let mut map = HeaderMap::new();
        map.insert(
            USER_AGENT,
            HeaderValue::from_static(concat!("showdown-loadgen/", env!("CARGO_PKG_VERSION"))),
        );
        for (name, value) in headers {
            let line = format!("{name}: {value}");
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad_header(&line))?;
            let value = HeaderValue::from_str(value).map_err(|_| bad_header(&line))?;
            if name == USER_AGENT {
                map.insert(name, value);
            } else {
                map.append(name, value);
            }
        }
        let body = Template::compile(body).map_err(|source| RequestError::Template {
            what: "the body".into(),
            source,
        })?;
        let host = HeaderValue::from_str(origin.authority.as_str()).ok();
        let fixed_uri = path
            .as_static()
            .and_then(|p| Uri::from_maybe_shared(p).ok());
        Ok(RequestSpec {
            method,
            origin,
            path,
            path_text,
            headers: map,
            body,
            host,
            fixed_uri,
        })
    }

    /// Builds request number `seq`. `h2` selects the absolute URI that HTTP/2 needs;
    /// `keepalive: false` asks the server to close the connection after the response.
    /// Returns the request and the size of its body.
    pub fn build(
        &self,
        seq: u64,
        h2: bool,
        keepalive: bool,
        rng: &mut impl Rng,
    ) -> (Request<Full<Bytes>>, u64) {
        let body = self.body.render(seq, rng);
        let body_len = body.len() as u64;
        let uri = if let (false, Some(fixed)) = (h2, &self.fixed_uri) {
            fixed.clone()
        } else if h2 {
            let path = self.path.render(seq, rng);
            let mut full = String::with_capacity(path.len() + 32);
            full.push_str(self.origin.scheme());
            full.push_str("://");
            full.push_str(self.origin.authority.as_str());
            full.push_str(std::str::from_utf8(&path).unwrap_or("/"));
            Uri::try_from(full).unwrap_or_default()
        } else {
            Uri::from_maybe_shared(self.path.render(seq, rng)).unwrap_or_default()
        };
        let mut request = Request::new(Full::new(body));
        *request.method_mut() = self.method.clone();
        *request.uri_mut() = uri;
        let headers = request.headers_mut();
        *headers = self.headers.clone();
        if !h2 {
            if let Some(host) = &self.host {
                headers.insert(HOST, host.clone());
            }
            if !keepalive {
                headers.insert(CONNECTION, HeaderValue::from_static("close"));
            }
        }
        (request, body_len)
    }

    /// Writes request number `seq` as HTTP/1.1 bytes (the event loop's path), the same request
    /// that [`build`](Self::build) makes for hyper. Returns the size of its body.
    pub fn write_h1(
        &self,
        seq: u64,
        keepalive: bool,
        rng: &mut impl Rng,
        out: &mut Vec<u8>,
    ) -> u64 {
        let body = self.body.render(seq, rng);
        out.extend_from_slice(self.method.as_str().as_bytes());
        out.push(b' ');
        match self.path.as_static() {
            Some(path) => out.extend_from_slice(&path),
            None => out.extend_from_slice(&self.path.render(seq, rng)),
        }
        out.extend_from_slice(b" HTTP/1.1\r\nhost: ");
        out.extend_from_slice(self.origin.authority.as_str().as_bytes());
        out.extend_from_slice(b"\r\n");
        for (name, value) in &self.headers {
            if name == HOST || (!keepalive && name == CONNECTION) {
                continue;
            }
            out.extend_from_slice(name.as_str().as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(value.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        if !keepalive {
            out.extend_from_slice(b"connection: close\r\n");
        }
        // As hyper does: a length for any body, and for an empty one where a body is expected.
        let expects_body = matches!(self.method, Method::POST | Method::PUT | Method::PATCH);
        if !self.headers.contains_key(CONTENT_LENGTH) && (!body.is_empty() || expects_body) {
            out.extend_from_slice(b"content-length: ");
            out.extend_from_slice(body.len().to_string().as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&body);
        body.len() as u64
    }

    /// Whether every request of this kind is the same bytes (no placeholders): its bytes can
    /// then be written once per run.
    pub fn is_fixed(&self) -> bool {
        self.path.as_static().is_some() && self.body.as_static().is_some()
    }

    /// `GET http://host:port/path`, for display.
    pub fn describe(&self) -> String {
        format!("{} {}{}", self.method, self.origin, self.path_text)
    }
}

fn read_body_file(path: &Path) -> Result<String, RequestError> {
    std::fs::read_to_string(path).map_err(|source| RequestError::BodyFile {
        path: path.to_path_buf(),
        source,
    })
}

/// A header that cannot be sent, named by what of it is not secret: the name before its `:`
/// (up to 40 characters), or only its length when it has none.
fn bad_header(line: &str) -> RequestError {
    RequestError::BadHeader(match line.split_once(':') {
        Some((name, _)) => format!("{:?}", name.trim().chars().take(40).collect::<String>()),
        None => format!("of {} characters with no ':'", line.chars().count()),
    })
}

/// Splits `Name: value`.
fn parse_header_line(line: &str) -> Result<(String, String), RequestError> {
    let (name, value) = line.split_once(':').ok_or_else(|| bad_header(line))?;
    let name = name.trim();
    if name.is_empty() {
        return Err(bad_header(line));
    }
    Ok((name.to_string(), value.trim().to_string()))
}

/// Splits an absolute URL into its origin and its path-and-query (placeholders allowed in the
/// path: they are checked when the template is compiled).
fn parse_url(url: &str) -> Result<(Origin, String), RequestError> {
    let bad = || RequestError::BadUrl {
        url: redact::text(url),
    };
    let (tls, rest) = if let Some(rest) = url.strip_prefix("http://") {
        (false, rest)
    } else if let Some(rest) = url.strip_prefix("https://") {
        (true, rest)
    } else {
        return Err(bad());
    };
    let (authority, path) = match rest.find(['/', '?']) {
        Some(at) => (&rest[..at], &rest[at..]),
        None => (rest, "/"),
    };
    let path = if path.starts_with('?') {
        format!("/{path}")
    } else {
        path.to_string()
    };
    if authority.contains('@') {
        return Err(RequestError::UserInfo {
            url: redact::text(url),
        });
    }
    let authority: http::uri::Authority = authority.parse().map_err(|_| bad())?;
    if authority.host().is_empty() {
        return Err(bad());
    }
    let port = authority.port_u16().unwrap_or(if tls { 443 } else { 80 });
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    Ok((
        Origin {
            tls,
            host,
            port,
            authority,
        },
        path,
    ))
}

/// The requests of one attack and the order in which their kinds are sent.
#[derive(Debug, Clone)]
pub struct RequestMix {
    specs: Vec<RequestSpec>,
    weights: Vec<u64>,
    /// Index into `specs` for request `i mod cycle.len()`.
    cycle: Vec<u32>,
}

/// The longest weight cycle: weights adding up to more would make the table large for nothing.
const MAX_CYCLE: u64 = 1_000_000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TargetsFile {
    #[serde(default)]
    request: Vec<TargetEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TargetEntry {
    url: String,
    #[serde(default)]
    method: Option<String>,
    #[serde(default = "one")]
    weight: u64,
    #[serde(default)]
    headers: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    body_file: Option<PathBuf>,
}

fn one() -> u64 {
    1
}

/// A targets file's requests, each body read (a `body_file` relative to the file), `method`
/// where an entry names none.
pub fn read_targets(
    path: &Path,
    method: Option<&str>,
) -> Result<Vec<order::Request>, RequestError> {
    let text = std::fs::read_to_string(path).map_err(|source| RequestError::TargetsFile {
        path: path.to_path_buf(),
        source,
    })?;
    let file: TargetsFile = toml::from_str(&text).map_err(|e| RequestError::TargetsSyntax {
        path: path.to_path_buf(),
        message: e.message().to_string(),
    })?;
    if file.request.is_empty() {
        return Err(RequestError::NoTargets(path.to_path_buf()));
    }
    let base = path.parent().unwrap_or(Path::new("."));
    file.request
        .into_iter()
        .map(|entry| {
            let body = match (entry.body, entry.body_file) {
                (Some(_), Some(_)) => return Err(RequestError::TwoBodies),
                (Some(text), None) => text,
                (None, Some(file)) => read_body_file(&base.join(file))?,
                (None, None) => String::new(),
            };
            Ok(order::Request {
                url: order::Secret(entry.url),
                weight: entry.weight,
                method: entry.method.or_else(|| method.map(str::to_string)),
                headers: entry
                    .headers
                    .into_iter()
                    .map(|(k, v)| (k, order::Secret(v)))
                    .collect(),
                body: order::Secret(body),
            })
        })
        .collect()
}

/// One URL's request, as `loadgen attack URL` with `-m`, `--body`, `--body-file` sends it.
pub fn one_request(url: &str, options: &RequestOptions) -> Result<order::Request, RequestError> {
    let body = match (&options.body, &options.body_file) {
        (Some(_), Some(_)) => return Err(RequestError::TwoBodies),
        (Some(text), None) => text.clone(),
        (None, Some(path)) => read_body_file(path)?,
        (None, None) => String::new(),
    };
    Ok(order::Request {
        url: order::Secret(url.to_string()),
        weight: 1,
        method: options.method.clone(),
        headers: Default::default(),
        body: order::Secret(body),
    })
}

impl RequestMix {
    /// A single kind of request.
    pub fn single(spec: RequestSpec) -> Self {
        RequestMix {
            specs: vec![spec],
            weights: vec![1],
            cycle: vec![0],
        }
    }

    /// Reads a targets file. Headers given on the command line (`-H`) apply to every request,
    /// before the file's own.
    pub fn from_targets_file(path: &Path, options: &RequestOptions) -> Result<Self, RequestError> {
        Self::from_order(&order::Requests {
            entries: read_targets(path, options.method.as_deref())?,
            headers: options.headers.iter().cloned().map(order::Secret).collect(),
        })
    }

    /// The requests of an order: the common headers before each request's own, GET where no
    /// method is given.
    pub fn from_order(requests: &order::Requests) -> Result<Self, RequestError> {
        if requests.entries.is_empty() {
            return Err(RequestError::NoRequests);
        }
        let common: Vec<(String, String)> = requests
            .headers
            .iter()
            .map(|h| parse_header_line(h.expose()))
            .collect::<Result<_, _>>()?;
        let mut specs = Vec::with_capacity(requests.entries.len());
        let mut weights = Vec::with_capacity(requests.entries.len());
        for entry in &requests.entries {
            let mut headers = common.clone();
            headers.extend(
                entry
                    .headers
                    .iter()
                    .map(|(k, v)| (k.clone(), v.expose().to_string())),
            );
            let method = entry.method.as_deref().unwrap_or("GET");
            specs.push(RequestSpec::from_parts(
                method,
                entry.url.expose(),
                &headers,
                entry.body.expose(),
            )?);
            weights.push(entry.weight);
        }
        Self::weighted(specs, weights)
    }

    fn weighted(specs: Vec<RequestSpec>, weights: Vec<u64>) -> Result<Self, RequestError> {
        if let Some(other) = specs.iter().find(|s| s.origin != specs[0].origin) {
            return Err(RequestError::MixedOrigins {
                first: specs[0].origin.to_string(),
                other: other.origin.to_string(),
            });
        }
        let gcd = weights.iter().copied().fold(0, gcd);
        // Added with a check: weights near 2⁶⁴ must not wrap around to a small total.
        let total = weights
            .iter()
            .try_fold(0u64, |sum, w| sum.checked_add(w / gcd.max(1)));
        if weights.contains(&0) || total.is_none_or(|t| t == 0 || t > MAX_CYCLE) {
            return Err(RequestError::BadWeights { max: MAX_CYCLE });
        }
        let reduced: Vec<i64> = weights.iter().map(|w| (w / gcd) as i64).collect();
        let cycle = smooth_weighted_cycle(&reduced);
        Ok(RequestMix {
            specs,
            weights,
            cycle,
        })
    }

    /// The spec of request number `seq`.
    pub fn pick(&self, seq: u64) -> &RequestSpec {
        &self.specs[self.pick_index(seq)]
    }

    /// Which of the [`specs`](Self::specs) request `seq` is.
    pub fn pick_index(&self, seq: u64) -> usize {
        self.cycle[(seq % self.cycle.len() as u64) as usize] as usize
    }

    /// The kinds of request, in the order of the targets file.
    pub fn specs(&self) -> &[RequestSpec] {
        &self.specs
    }

    /// The one origin all requests go to.
    pub fn origin(&self) -> &Origin {
        &self.specs[0].origin
    }

    /// Each kind of request with its weight, for the summary.
    pub fn entries(&self) -> impl Iterator<Item = (&RequestSpec, u64)> {
        self.specs.iter().zip(self.weights.iter().copied())
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// nginx's smooth weighted round-robin: each step adds every weight to its running score, picks
/// the highest score and takes the total off it. Over `Σw` steps kind `k` is picked exactly `wₖ`
/// times, evenly spread.
fn smooth_weighted_cycle(weights: &[i64]) -> Vec<u32> {
    let total: i64 = weights.iter().sum();
    let mut score = vec![0i64; weights.len()];
    let mut cycle = Vec::with_capacity(total as usize);
    for _ in 0..total {
        for (s, w) in score.iter_mut().zip(weights) {
            *s += w;
        }
        let mut best = 0;
        for k in 1..score.len() {
            if score[k] > score[best] {
                best = k;
            }
        }
        score[best] -= total;
        cycle.push(best as u32);
    }
    cycle
}

#[cfg(test)]
mod tests {
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    use super::*;

    fn spec(url: &str) -> RequestSpec {
        RequestSpec::new(url, &RequestOptions::default()).unwrap()
    }

    #[test]
    fn urls_split_into_origin_and_path() {
        let s = spec("http://127.0.0.1:8080/users?x=1");
        assert_eq!(s.origin.host, "127.0.0.1");
        assert_eq!(s.origin.port, 8080);
        assert!(!s.origin.tls);
        assert_eq!(s.path_text, "/users?x=1");
        let s = spec("https://example.com");
        assert_eq!(
            (s.origin.port, s.origin.tls, s.path_text.as_str()),
            (443, true, "/")
        );
        let s = spec("http://[::1]:9000?q");
        assert_eq!(
            (s.origin.host.as_str(), s.path_text.as_str()),
            ("::1", "/?q")
        );
    }

    #[test]
    fn bad_urls_headers_and_methods_are_refused() {
        let o = RequestOptions::default();
        for url in ["127.0.0.1:8080/x", "ftp://host/", "http://"] {
            let e = RequestSpec::new(url, &o).unwrap_err();
            assert!(matches!(e, RequestError::BadUrl { .. }), "{url}: {e}");
        }
        let e = RequestSpec::new("http://user:hunter2@host/", &o).unwrap_err();
        assert!(matches!(e, RequestError::UserInfo { .. }), "{e}");
        assert!(!e.to_string().contains("hunter2"), "{e}");
        // A header that cannot be sent is refused without its value: a token pasted without
        // its name, or a value with a newline, is not echoed into an error that is kept.
        for line in ["Bearer s3cr3t-token", "X-Key: s3cr3t\u{7f}", ": s3cr3t"] {
            let o = RequestOptions {
                headers: vec![line.into()],
                ..Default::default()
            };
            let e = RequestSpec::new("http://h/", &o).unwrap_err();
            assert!(matches!(e, RequestError::BadHeader(_)), "{line}: {e}");
            assert!(!e.to_string().contains("s3cr3t"), "{e}");
        }
        let o = RequestOptions {
            method: Some("GE T".into()),
            ..Default::default()
        };
        assert!(matches!(
            RequestSpec::new("http://h/", &o),
            Err(RequestError::BadMethod(_))
        ));
    }

    #[test]
    fn http1_requests_carry_host_and_origin_form() {
        let o = RequestOptions {
            method: Some("post".into()),
            headers: vec![
                "Content-Type: application/json".into(),
                "X-Id: {{seq}}".into(),
            ],
            body: Some(r#"{"n":{{seq}}}"#.into()),
            body_file: None,
        };
        let s = RequestSpec::new("http://127.0.0.1:8080/users/{{seq}}", &o).unwrap();
        let (req, len) = s.build(7, false, false, &mut SmallRng::seed_from_u64(1));
        assert_eq!(req.method(), Method::POST);
        assert_eq!(req.uri(), "/users/7");
        assert_eq!(req.headers()[HOST], "127.0.0.1:8080");
        assert_eq!(req.headers()[CONNECTION], "close");
        assert_eq!(req.headers()["content-type"], "application/json");
        // Header values are sent as written: templates apply to the URL and the body only.
        assert_eq!(req.headers()["x-id"], "{{seq}}");
        assert_eq!(len, br#"{"n":7}"#.len() as u64);
        let (req, _) = s.build(7, true, true, &mut SmallRng::seed_from_u64(1));
        assert_eq!(req.uri(), "http://127.0.0.1:8080/users/7");
        assert!(req.headers().get(HOST).is_none());
        // The event loop's bytes: the same request on the wire.
        let mut wire = Vec::new();
        let len = s.write_h1(7, false, &mut SmallRng::seed_from_u64(1), &mut wire);
        assert_eq!(len, 7);
        let text = String::from_utf8(wire).unwrap();
        assert!(text.starts_with("POST /users/7 HTTP/1.1\r\nhost: 127.0.0.1:8080\r\n"));
        assert!(text.contains("\r\ncontent-type: application/json\r\n"));
        assert!(text.contains("\r\nconnection: close\r\n"));
        assert!(
            text.ends_with("\r\ncontent-length: 7\r\n\r\n{\"n\":7}"),
            "{text}"
        );
        assert!(!s.is_fixed());
        let get = RequestSpec::new("http://[::1]:81/now", &RequestOptions::default()).unwrap();
        let mut wire = Vec::new();
        get.write_h1(0, true, &mut SmallRng::seed_from_u64(1), &mut wire);
        let text = String::from_utf8(wire).unwrap();
        assert!(text
            .starts_with("GET /now HTTP/1.1\r\nhost: [::1]:81\r\nuser-agent: showdown-loadgen/"));
        assert!(!text.contains("content-length") && !text.contains("connection"));
        assert!(get.is_fixed());
    }

    #[test]
    fn weights_whose_sum_would_wrap_around_are_refused() {
        let spec = || RequestSpec::new("http://127.0.0.1:9/", &RequestOptions::default()).unwrap();
        let huge = [(1u64 << 63) + 1, (1u64 << 63) - 1];
        assert!(matches!(
            RequestMix::weighted(vec![spec(), spec()], huge.to_vec()),
            Err(RequestError::BadWeights { .. })
        ));
    }

    #[test]
    fn weights_give_an_exact_evenly_spread_mix() {
        let cycle = smooth_weighted_cycle(&[99, 1]);
        assert_eq!(cycle.len(), 100);
        assert_eq!(cycle.iter().filter(|&&k| k == 1).count(), 1);
        let cycle = smooth_weighted_cycle(&[5, 1, 1]);
        assert_eq!(cycle, vec![0, 0, 1, 0, 2, 0, 0]);
    }

    #[test]
    fn targets_file_builds_a_weighted_mix() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("user.json"), r#"{"email":"u{{seq}}@x.io"}"#).unwrap();
        let path = dir.path().join("targets.toml");
        std::fs::write(
            &path,
            r#"
[[request]]
url = "http://127.0.0.1:8080/now"
weight = 990

[[request]]
url = "http://127.0.0.1:8080/compute"
weight = 10

[[request]]
method = "POST"
url = "http://127.0.0.1:8080/users"
headers = { "Content-Type" = "application/json" }
body_file = "user.json"
weight = 0
"#,
        )
        .unwrap();
        let o = RequestOptions::default();
        assert!(matches!(
            RequestMix::from_targets_file(&path, &o),
            Err(RequestError::BadWeights { .. })
        ));
        let text = std::fs::read_to_string(&path)
            .unwrap()
            .replace("weight = 0", "weight = 20");
        std::fs::write(&path, text).unwrap();
        let mix = RequestMix::from_targets_file(&path, &o).unwrap();
        let mut counts = [0; 3];
        let mut rng = SmallRng::seed_from_u64(1);
        for i in 0..102_000u64 {
            let s = mix.pick(i);
            let k = ["/now", "/compute", "/users"]
                .iter()
                .position(|p| *p == s.path_text)
                .unwrap();
            counts[k] += 1;
            if k == 2 && i < 1020 {
                let (req, len) = s.build(i, false, true, &mut rng);
                assert_eq!(req.method(), Method::POST);
                let body = format!(r#"{{"email":"u{i}@x.io"}}"#);
                assert_eq!(len, body.len() as u64);
                assert_eq!(&s.body.render(i, &mut rng)[..], body.as_bytes());
            }
        }
        assert_eq!(counts, [99_000, 1_000, 2_000]);
    }

    #[test]
    fn targets_file_mistakes_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.toml");
        std::fs::write(&path, "[[request]]\nurl = 5\n").unwrap();
        let e = RequestMix::from_targets_file(&path, &RequestOptions::default()).unwrap_err();
        assert!(e.to_string().contains("t.toml"), "{e}");
        std::fs::write(
            &path,
            "[[request]]\nurl='http://a/'\n[[request]]\nurl='http://b/'\n",
        )
        .unwrap();
        let e = RequestMix::from_targets_file(&path, &RequestOptions::default()).unwrap_err();
        assert!(matches!(e, RequestError::MixedOrigins { .. }), "{e}");
        let missing = dir.path().join("missing.toml");
        let e = RequestMix::from_targets_file(&missing, &RequestOptions::default()).unwrap_err();
        assert!(e.to_string().contains("missing.toml"), "{e}");
    }
}
