//! One-off HTTP exchanges for checking targets (not for load: that is loadgen's job): the
//! status, headers, body and time of one request, bounded in time.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::{connect::HttpConnector, Client};

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
    pub fn json(&self) -> Result<serde_json::Value, String> {
        serde_json::from_slice(&self.body).map_err(|e| {
            format!(
                "the body is not JSON ({e}): {:?}",
                String::from_utf8_lossy(&self.body[..self.body.len().min(200)])
            )
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
    pub async fn call(&self, method: Method, url: &str, body: &[u8]) -> Result<Exchange, String> {
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
    ) -> Result<Exchange, String> {
        let what = format!(
            "{} {}",
            request.method_ref().cloned().unwrap_or_default(),
            request
                .uri_ref()
                .map(ToString::to_string)
                .unwrap_or_default()
        );
        let request = request
            .body(Full::new(Bytes::copy_from_slice(body)))
            .map_err(|e| format!("{what}: {e}"))?;
        let started = Instant::now();
        let exchange = async {
            let response = self.client.request(request).await.map_err(|e| {
                let mut text = e.to_string();
                let mut source = std::error::Error::source(&e);
                while let Some(s) = source {
                    text = format!("{text}: {s}");
                    source = s.source();
                }
                text
            })?;
            let (parts, body) = response.into_parts();
            let body = body
                .collect()
                .await
                .map_err(|e| format!("reading the body: {e}"))?
                .to_bytes();
            Ok::<_, String>(Exchange {
                status: parts.status,
                headers: parts.headers,
                body,
                elapsed: started.elapsed(),
            })
        };
        tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| format!("{what}: no answer within {:?}", self.timeout))?
            .map_err(|e| format!("{what}: {e}"))
    }

    pub async fn get(&self, url: &str) -> Result<Exchange, String> {
        self.call(Method::GET, url, b"").await
    }

    pub async fn post(&self, url: &str, body: &[u8]) -> Result<Exchange, String> {
        self.call(Method::POST, url, body).await
    }
}

/// Waits until `GET ready` answers 2xx (200 for `/healthz`, the contract's), or without a
/// path, until the URL's port accepts a connection.
pub async fn reachable(base: &str, ready: Option<&str>, within: Duration) -> Result<(), String> {
    let http = Http::new(Duration::from_secs(5));
    let deadline = Instant::now() + within;
    let mut last = String::new();
    while Instant::now() < deadline {
        match ready {
            Some(path) => match http.get(&format!("{base}{path}")).await {
                Ok(x) if x.status.is_success() => return Ok(()),
                Ok(x) => last = format!("GET {path}: status {}", x.status),
                Err(e) => last = e,
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
                    .ok_or(format!("{base} is not a URL with a host"))?;
                match tokio::time::timeout(
                    Duration::from_secs(2),
                    tokio::net::TcpStream::connect((authority.0.as_str(), authority.1)),
                )
                .await
                {
                    Ok(Ok(_)) => return Ok(()),
                    Ok(Err(e)) => last = format!("connecting: {e}"),
                    Err(_) => last = "connecting: no answer within 2s".into(),
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Err(last)
}
