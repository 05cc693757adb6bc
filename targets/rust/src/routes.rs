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

use crate::failure::{Failure, MAX_BODY};
use crate::query::Query;
use crate::reply::{self, Reply};
use crate::settings::Settings;
use crate::{compute, db, encrypt};
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
    /// Fails only if the pool cannot be made from `DATABASE_URL` (it connects lazily: a
    /// database that is down at start is not an error).
    pub fn new(settings: Settings, rounds_per_ms: u64) -> Result<App, sqlx::Error> {
        let pool = match settings.database_url.as_deref() {
            Some(url) => Some(db::pool(url, settings.db_pool, settings.db_timeout)?),
            None => None,
        };
        let key = settings.secret.as_deref().map(encrypt::key);
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        let client = Client::builder(hyper_util::rt::TokioExecutor::new())
            .pool_max_idle_per_host(1024)
            .build(connector);
        Ok(App {
            settings,
            rounds_per_ms,
            pool,
            key,
            client,
        })
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
        result.unwrap_or_else(|failure| failure.reply())
    }

    async fn create_user(&self, request: Request<Incoming>) -> Result<Reply, Failure> {
        let body = json_object(request).await?;
        let email = text_field(&body, "email")?;
        let password = text_field(&body, "password")?;
        let pool = self.pool.as_ref().ok_or(Failure::NotConfigured {
            what: "database",
            variable: "DATABASE_URL",
        })?;
        let id = db::insert_user(pool, self.settings.db_timeout, email, password).await?;
        let mut reply = reply::json(StatusCode::CREATED, &json!({ "id": id }));
        if let Ok(location) = header::HeaderValue::from_str(&format!("/users/{id}")) {
            reply.headers_mut().insert(header::LOCATION, location);
        }
        Ok(reply)
    }

    async fn delay(&self, request: &Request<Incoming>) -> Result<Reply, Failure> {
        let ms = Query::of(request.uri()).ms("ms", 60_000)?;
        tokio::time::sleep(Duration::from_millis(ms)).await;
        Ok(reply::now())
    }

    /// The work runs on this worker thread, as a handler's own code does; `block_in_place`
    /// lets the runtime move this thread's other tasks to another while it does.
    async fn compute(&self, request: &Request<Incoming>) -> Result<Reply, Failure> {
        let query = Query::of(request.uri());
        let ms = query.ms("ms", 10_000)?;
        let wait = query.optional_ms("delay_ms", 60_000)?.unwrap_or(0);
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
        let key = self.key.as_ref().ok_or(Failure::NotConfigured {
            what: "key",
            variable: "SECRET",
        })?;
        Ok(reply::json(
            StatusCode::OK,
            &json!({
                "userId": encrypt::encrypt(key, user_id),
                "password": encrypt::encrypt(key, password),
            }),
        ))
    }

    async fn proxy(&self) -> Result<Reply, Failure> {
        let uri = self
            .settings
            .upstream_url
            .clone()
            .ok_or(Failure::NotConfigured {
                what: "upstream",
                variable: "UPSTREAM_URL",
            })?;
        let fetch = async {
            let response = self
                .client
                .get(uri)
                .await
                .map_err(|e| Failure::Upstream(e.to_string()))?;
            if !response.status().is_success() {
                return Err(Failure::UpstreamStatus(response.status()));
            }
            let content_type = response.headers().get(header::CONTENT_TYPE).cloned();
            let body = response
                .into_body()
                .collect()
                .await
                .map_err(|e| Failure::Upstream(e.to_string()))?
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
            .unwrap_or(Err(Failure::UpstreamTimeout(UPSTREAM_TIMEOUT)))
    }

    async fn health(&self) -> Result<Reply, Failure> {
        if let Some(pool) = &self.pool {
            db::ping(pool, self.settings.db_timeout).await?;
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

/// The body, at most 64 KiB, as a JSON object.
async fn json_object(request: Request<Incoming>) -> Result<Map<String, Value>, Failure> {
    let body = Limited::new(request.into_body(), MAX_BODY)
        .collect()
        .await
        .map_err(|e| {
            if e.is::<http_body_util::LengthLimitError>() {
                Failure::BodyTooLarge
            } else {
                Failure::Body(e.to_string())
            }
        })?
        .to_bytes();
    match serde_json::from_slice(&body) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(Failure::NotAnObject),
        Err(e) => Err(Failure::NotJson(e)),
    }
}

/// A required string field of 1 to 255 characters.
fn text_field<'a>(body: &'a Map<String, Value>, name: &'static str) -> Result<&'a str, Failure> {
    match body.get(name) {
        None | Some(Value::Null) => Err(Failure::MissingField(name)),
        Some(Value::String(s)) if s.is_empty() => Err(Failure::EmptyField(name)),
        Some(Value::String(s)) if s.chars().count() > 255 => Err(Failure::LongField(name)),
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(Failure::NotAString(name)),
    }
}
