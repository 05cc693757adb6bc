//! One-off HTTP exchanges for checking targets (not for load: that is loadgen's job): the
//! status, headers, body and time of one request, bounded in time.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::{connect::HttpConnector, Client};

/// Why one exchange brought no answer, or no JSON; each names the request (`GET URL`).
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("{what}: {source}")]
    Request {
        what: String,
        #[source]
        source: http::Error,
    },
    /// The connection or the exchange failed: the client's error and each of its causes.
    #[error("{what}: {}", causes(.source))]
    Send {
        what: String,
        #[source]
        source: hyper_util::client::legacy::Error,
    },
    #[error("{what}: reading the body: {source}")]
    Body {
        what: String,
        #[source]
        source: hyper::Error,
    },
    #[error("{what}: no answer within {after:?}")]
    Timeout { what: String, after: Duration },
    /// `body` is the first 200 bytes of the answer.
    #[error("the body is not JSON ({source}): {body:?}")]
    NotJson {
        body: String,
        #[source]
        source: serde_json::Error,
    },
}

/// An error and its sources, `error: cause: cause`.
fn causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text = format!("{text}: {s}");
        source = s.source();
    }
    text
}

/// Why a target was not reachable in time: the last attempt's answer.
#[derive(Debug, thiserror::Error)]
pub enum ReachError {
    #[error("GET {path}: status {status}")]
    Status { path: String, status: StatusCode },
    #[error(transparent)]
    Http(#[from] HttpError),
    #[error("{0} is not a URL with a host")]
    NotAUrl(String),
    #[error("connecting: {0}")]
    Connect(#[source] std::io::Error),
    #[error("connecting: no answer within 2s")]
    ConnectTimeout,
    /// No attempt was made: the time given was already over.
    #[error("no attempt within {0:?}")]
    NoTime(Duration),
}

/// What came back.
#[derive(Debug, Clone)]
pub struct Exchange {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// From sending the request to the end of the body.
    pub elapsed: Duration,
}

impl Exchange {
    /// The body as JSON, or why it is not.
    pub fn json(&self) -> Result<serde_json::Value, HttpError> {
        serde_json::from_slice(&self.body).map_err(|source| HttpError::NotJson {
            body: String::from_utf8_lossy(&self.body[..self.body.len().min(200)]).into_owned(),
            source,
        })
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// A keep-alive HTTP/1.1 client.
#[derive(Debug, Clone)]
pub struct Http {
    client: Client<HttpConnector, Full<Bytes>>,
    timeout: Duration,
}

impl Http {
    pub fn new(timeout: Duration) -> Http {
        Http {
            client: Client::builder(hyper_util::rt::TokioExecutor::new()).build_http(),
            timeout,
        }
    }

    /// Sends one request (JSON by content type) and reads the whole answer.
    pub async fn call(
        &self,
        method: Method,
        url: &str,
        body: &[u8],
    ) -> Result<Exchange, HttpError> {
        let request = Request::builder()
            .method(method)
            .uri(url)
            .header("content-type", "application/json");
        self.send(request, body).await
    }

    /// Sends a request as built (its headers as given) and reads the whole answer.
    pub async fn send(
        &self,
        request: http::request::Builder,
        body: &[u8],
    ) -> Result<Exchange, HttpError> {
        let what = format!(
            "{} {}",
            request.method_ref().cloned().unwrap_or_default(),
            request
                .uri_ref()
                .map(ToString::to_string)
                .unwrap_or_default()
        );
        let request = match request.body(Full::new(Bytes::copy_from_slice(body))) {
            Ok(request) => request,
            Err(source) => return Err(HttpError::Request { what, source }),
        };
        let started = Instant::now();
        let exchange = async {
            let response = match self.client.request(request).await {
                Ok(response) => response,
                Err(source) => {
                    return Err(HttpError::Send {
                        what: what.clone(),
                        source,
                    })
                }
            };
            let (parts, body) = response.into_parts();
            let body = match body.collect().await {
                Ok(body) => body.to_bytes(),
                Err(source) => {
                    return Err(HttpError::Body {
                        what: what.clone(),
                        source,
                    })
                }
            };
            Ok(Exchange {
                status: parts.status,
                headers: parts.headers,
                body,
                elapsed: started.elapsed(),
            })
        };
        match tokio::time::timeout(self.timeout, exchange).await {
            Ok(answer) => answer,
            Err(_) => Err(HttpError::Timeout {
                what,
                after: self.timeout,
            }),
        }
    }

    pub async fn get(&self, url: &str) -> Result<Exchange, HttpError> {
        self.call(Method::GET, url, b"").await
    }

    pub async fn post(&self, url: &str, body: &[u8]) -> Result<Exchange, HttpError> {
        self.call(Method::POST, url, body).await
    }
}

/// Waits until `GET ready` answers 2xx (200 for `/healthz`, the contract's), or without a
/// path, until the URL's port accepts a connection.
pub async fn reachable(
    base: &str,
    ready: Option<&str>,
    within: Duration,
) -> Result<(), ReachError> {
    let http = Http::new(Duration::from_secs(5));
    let deadline = Instant::now() + within;
    let mut last = ReachError::NoTime(within);
    while Instant::now() < deadline {
        match ready {
            Some(path) => match http.get(&format!("{base}{path}")).await {
                Ok(x) if x.status.is_success() => return Ok(()),
                Ok(x) => {
                    last = ReachError::Status {
                        path: path.to_string(),
                        status: x.status,
                    }
                }
                Err(e) => last = e.into(),
            },
            None => {
                let authority = base
                    .parse::<http::Uri>()
                    .ok()
                    .and_then(|u| {
                        let port = u.port_u16().unwrap_or(match u.scheme_str() {
                            Some("https") => 443,
                            _ => 80,
                        });
                        u.host()
                            .map(|h| (h.trim_matches(['[', ']']).to_string(), port))
                    })
                    .ok_or_else(|| ReachError::NotAUrl(base.to_string()))?;
                match tokio::time::timeout(
                    Duration::from_secs(2),
                    tokio::net::TcpStream::connect((authority.0.as_str(), authority.1)),
                )
                .await
                {
                    Ok(Ok(_)) => return Ok(()),
                    Ok(Err(e)) => last = ReachError::Connect(e),
                    Err(_) => last = ReachError::ConnectTimeout,
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Err(last)
}
