//! The endpoints of `targets/CONTRACT.md`, one function each, and the dispatch by path and
//! method.

use std::time::Duration;

use bytes::Bytes;
use http::{header, Method, Request, StatusCode};
use http_body_util::{BodyExt, Empty, Limited};
use hyper::body::Incoming;
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use serde_json::{json, Map, Value};
use sqlx::postgres::PgPool;

use crate::reply::{self, Reply};
use crate::settings::Settings;
use crate::{compute, db, encrypt};

/// Request bodies over this are answered `413`.
const MAX_BODY: usize = 64 * 1024;
/// `/proxy` gives the upstream this long.
const UPSTREAM_TIMEOUT: Duration = Duration::from_secs(10);

/// What every request shares.
pub struct App {
    settings: Settings,
    rounds_per_ms: u64,
    pool: Option<PgPool>,
    key: Option<[u8; 32]>,
    client: Client<HttpConnector, Empty<Bytes>>,
}

impl App {
    pub fn new(settings: Settings, rounds_per_ms: u64) -> App {
        let pool = settings.database_url.as_deref().and_then(|url| {
            // The URL was checked when the settings were read.
            db::pool(url, settings.db_pool, settings.db_timeout).ok()
        });
        let key = settings.secret.as_deref().map(encrypt::key);
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        let client = Client::builder(hyper_util::rt::TokioExecutor::new())
            .pool_max_idle_per_host(1024)
            .build(connector);
        App {
            settings,
            rounds_per_ms,
            pool,
            key,
            client,
        }
    }

    pub async fn handle(&self, request: Request<Incoming>) -> Reply {
        let method = request.method().clone();
        let allowed = |m: Method, allow: &'static str| (method == m).then_some(()).ok_or(allow);
        let routed = match request.uri().path() {
            "/users" | "/user" => allowed(Method::POST, "POST").map(|()| Route::Users),
            "/now" => allowed(Method::GET, "GET").map(|()| Route::Now),
            "/delay" => allowed(Method::GET, "GET").map(|()| Route::Delay),
            "/compute" => allowed(Method::GET, "GET").map(|()| Route::Compute),
            "/encrypt" => allowed(Method::POST, "POST").map(|()| Route::Encrypt),
            "/proxy" => allowed(Method::GET, "GET").map(|()| Route::Proxy),
            "/healthz" => allowed(Method::GET, "GET").map(|()| Route::Health),
            _ => return reply::error(StatusCode::NOT_FOUND, "not found"),
        };
        let route = match routed {
            Ok(route) => route,
            Err(allow) => return reply::method_not_allowed(allow),
        };
        let result = match route {
            Route::Users => self.create_user(request).await,
            Route::Now => Ok(reply::now()),
            Route::Delay => self.delay(&request).await,
            Route::Compute => self.compute(&request).await,
            Route::Encrypt => self.encrypt(request).await,
            Route::Proxy => self.proxy().await,
            Route::Health => self.health().await,
        };
        result.unwrap_or_else(|(status, message)| reply::error(status, message))
    }

    async fn create_user(&self, request: Request<Incoming>) -> Result<Reply, Failure> {
        let body = json_object(request).await?;
        let email = text_field(&body, "email")?;
        let password = text_field(&body, "password")?;
        let pool = self.pool.as_ref().ok_or((
            StatusCode::SERVICE_UNAVAILABLE,
            "no database configured (set DATABASE_URL)".to_string(),
        ))?;
        let id = db::insert_user(pool, self.settings.db_timeout, email, password)
            .await
            .map_err(|e| (StatusCode::SERVICE_UNAVAILABLE, e))?;
        let mut reply = reply::json(StatusCode::CREATED, &json!({ "id": id }));
        if let Ok(location) = header::HeaderValue::from_str(&format!("/users/{id}")) {
            reply.headers_mut().insert(header::LOCATION, location);
        }
        Ok(reply)
    }

    async fn delay(&self, request: &Request<Incoming>) -> Result<Reply, Failure> {
        let ms = ms_parameter(request, "ms", 60_000)?;
        tokio::time::sleep(Duration::from_millis(ms)).await;
        Ok(reply::now())
    }

    /// The work runs on this worker thread, as a handler's own code does; `block_in_place`
    /// lets the runtime move this thread's other tasks to another while it does.
    async fn compute(&self, request: &Request<Incoming>) -> Result<Reply, Failure> {
        let ms = ms_parameter(request, "ms", 10_000)?;
        let wait = match ms_parameter(request, "delay_ms", 60_000) {
            Err((_, message)) if message.contains("missing") => 0,
            other => other?,
        };
        if wait > 0 {
            tokio::time::sleep(Duration::from_millis(wait)).await;
        }
        let rounds_per_ms = self.rounds_per_ms;
        tokio::task::block_in_place(|| compute::spend(ms, rounds_per_ms));
        Ok(reply::now())
    }

    async fn encrypt(&self, request: Request<Incoming>) -> Result<Reply, Failure> {
        let body = json_object(request).await?;
        let user_id = text_field(&body, "userId")?;
        let password = text_field(&body, "password")?;
        let key = self.key.as_ref().ok_or((
            StatusCode::SERVICE_UNAVAILABLE,
            "no key configured (set SECRET)".to_string(),
        ))?;
        Ok(reply::json(
            StatusCode::OK,
            &json!({
                "userId": encrypt::encrypt(key, user_id),
                "password": encrypt::encrypt(key, password),
            }),
        ))
    }

    async fn proxy(&self) -> Result<Reply, Failure> {
        let uri = self.settings.upstream_url.clone().ok_or((
            StatusCode::SERVICE_UNAVAILABLE,
            "no upstream configured (set UPSTREAM_URL)".to_string(),
        ))?;
        let bad_gateway = |e: String| (StatusCode::BAD_GATEWAY, format!("upstream: {e}"));
        let fetch = async {
            let response = self
                .client
                .get(uri)
                .await
                .map_err(|e| bad_gateway(e.to_string()))?;
            if !response.status().is_success() {
                return Err(bad_gateway(format!("answered {}", response.status())));
            }
            let content_type = response.headers().get(header::CONTENT_TYPE).cloned();
            let body = response
                .into_body()
                .collect()
                .await
                .map_err(|e| bad_gateway(e.to_string()))?
                .to_bytes();
            let mut reply = hyper::Response::new(http_body_util::Full::new(body));
            if let Some(content_type) = content_type {
                reply
                    .headers_mut()
                    .insert(header::CONTENT_TYPE, content_type);
            }
            Ok(reply)
        };
        tokio::time::timeout(UPSTREAM_TIMEOUT, fetch)
            .await
            .unwrap_or_else(|_| {
                Err(bad_gateway(format!(
                    "no answer within {UPSTREAM_TIMEOUT:?}"
                )))
            })
    }

    async fn health(&self) -> Result<Reply, Failure> {
        if let Some(pool) = &self.pool {
            db::ping(pool, self.settings.db_timeout)
                .await
                .map_err(|e| (StatusCode::SERVICE_UNAVAILABLE, e))?;
        }
        Ok(reply::json(StatusCode::OK, &json!({ "status": "ok" })))
    }
}

enum Route {
    Users,
    Now,
    Delay,
    Compute,
    Encrypt,
    Proxy,
    Health,
}

/// A status and the message of its `{"error": …}`.
type Failure = (StatusCode, String);

fn bad_request(message: impl Into<String>) -> Failure {
    (StatusCode::BAD_REQUEST, message.into())
}

/// The body, at most 64 KiB, as a JSON object.
async fn json_object(request: Request<Incoming>) -> Result<Map<String, Value>, Failure> {
    let body = Limited::new(request.into_body(), MAX_BODY)
        .collect()
        .await
        .map_err(|e| {
            if e.is::<http_body_util::LengthLimitError>() {
                (
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("body over {MAX_BODY} bytes"),
                )
            } else {
                bad_request(format!("cannot read the body: {e}"))
            }
        })?
        .to_bytes();
    match serde_json::from_slice(&body) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(bad_request("the body must be a JSON object")),
        Err(e) => Err(bad_request(format!("the body is not JSON: {e}"))),
    }
}

/// A required string field of 1 to 255 characters.
fn text_field<'a>(body: &'a Map<String, Value>, name: &str) -> Result<&'a str, Failure> {
    match body.get(name) {
        None | Some(Value::Null) => Err(bad_request(format!("{name} is missing"))),
        Some(Value::String(s)) if s.is_empty() => Err(bad_request(format!("{name} is empty"))),
        Some(Value::String(s)) if s.chars().count() > 255 => {
            Err(bad_request(format!("{name} is over 255 characters")))
        }
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(bad_request(format!("{name} must be a string"))),
    }
}

/// A query parameter that is an integer in `0..=max`.
fn ms_parameter(request: &Request<Incoming>, name: &str, max: u64) -> Result<u64, Failure> {
    let query = request.uri().query().unwrap_or("");
    let value = query
        .split('&')
        .filter_map(|pair| pair.split_once('=').or(Some((pair, ""))))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value);
    match value.map(str::parse::<u64>) {
        Some(Ok(ms)) if ms <= max => Ok(ms),
        Some(_) => Err(bad_request(format!(
            "{name} must be an integer in 0..={max}"
        ))),
        None => Err(bad_request(format!(
            "{name} is missing: ask for ?{name}=N with N in 0..={max}"
        ))),
    }
}
