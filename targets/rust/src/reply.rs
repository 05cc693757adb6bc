//! Responses: JSON with its length (a `Full` body, never chunked); hyper adds `Date`.

use bytes::Bytes;
use http::{header, Response, StatusCode};
use http_body_util::Full;

pub type Reply = Response<Full<Bytes>>;

/// A JSON response.
pub fn json(status: StatusCode, value: &serde_json::Value) -> Reply {
    let body = serde_json::to_vec(value).unwrap_or_default();
    let mut reply = Response::new(Full::new(Bytes::from(body)));
    *reply.status_mut() = status;
    reply.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    reply
}

/// `{"error": message}`.
pub fn error(status: StatusCode, message: impl Into<String>) -> Reply {
    json(status, &serde_json::json!({ "error": message.into() }))
}

/// `405`, saying which method the path takes.
pub fn method_not_allowed(allow: &'static str) -> Reply {
    let mut reply = error(
        StatusCode::METHOD_NOT_ALLOWED,
        format!("method not allowed: use {allow}"),
    );
    reply
        .headers_mut()
        .insert(header::ALLOW, header::HeaderValue::from_static(allow));
    reply
}

/// `{"now": "…Z"}`: UTC, RFC 3339 with milliseconds.
pub fn now() -> Reply {
    let now = humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string();
    json(StatusCode::OK, &serde_json::json!({ "now": now }))
}
