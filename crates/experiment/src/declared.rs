//! The checks an experiment file declares (`[[check]]`, `[[target.check]]`): for servers
//! Showdown did not write, what the file says they must answer, as TechEmpower's toolset
//! verifies what each framework's config declares. A request, the status wanted, JSON fields
//! present or equal, and rows counted around a burst when the check writes to the database.

use std::time::Duration;

use http::{HeaderName, HeaderValue, Method, Request};
use serde_json::Value;

use crate::file::{CheckSpec, DEFAULT_BURST};
use crate::http::{Exchange, Http};
use crate::verify::{CheckFailure, Verdict};

/// Runs `checks` against the server at `base` (`http://HOST:PORT`); `db` is the database the
/// `rows_added` queries count in.
pub async fn check(base: &str, checks: &[CheckSpec], db: Option<&str>) -> Verdict {
    let http = Http::new(Duration::from_secs(10));
    let mut verdict = Verdict::default();
    for c in checks {
        verdict.record(c.title(), one(&http, base, c, db).await);
    }
    verdict
}

async fn one(http: &Http, base: &str, c: &CheckSpec, db: Option<&str>) -> Result<(), CheckFailure> {
    let Some(query) = &c.rows_added else {
        return answer(&send(http, base, c).await?, c);
    };
    let db = db.ok_or(CheckFailure::NoDatabase)?;
    let before = crate::database::count(db, query).await?;
    let burst = c.burst.unwrap_or(DEFAULT_BURST);
    for i in 0..burst {
        let x = send(http, base, c).await?;
        answer(&x, c).map_err(|e| e.at(format!("request {} of {burst}", i + 1)))?;
    }
    let added = crate::database::count(db, query).await? - before;
    if added != i64::from(burst) {
        return Err(CheckFailure::Grew {
            burst,
            query: query.clone(),
            added,
        });
    }
    Ok(())
}

async fn send(http: &Http, base: &str, c: &CheckSpec) -> Result<Exchange, CheckFailure> {
    let method = c.method.as_deref().unwrap_or("GET").parse::<Method>()?;
    let mut request = Request::builder()
        .method(method)
        .uri(format!("{base}{}", c.path));
    for (name, value) in &c.headers {
        let name = HeaderName::try_from(name.as_str())?;
        let value = HeaderValue::try_from(value.as_str())?;
        request = request.header(name, value);
    }
    Ok(http
        .send(request, c.body.as_deref().unwrap_or("").as_bytes())
        .await?)
}

/// Whether an answer is the one the check wants.
fn answer(x: &Exchange, c: &CheckSpec) -> Result<(), CheckFailure> {
    let status_ok = match c.status {
        Some(want) => x.status.as_u16() == want,
        None => x.status.is_success(),
    };
    if !status_ok {
        let want = c.status.map(|s| s.to_string()).unwrap_or("2xx".into());
        return Err(CheckFailure::Status {
            got: x.status,
            want,
            body: snippet(&x.body),
        });
    }
    if c.json_has.is_empty() && c.json_equals.is_empty() {
        return Ok(());
    }
    let v = x.json()?;
    for field in &c.json_has {
        if lookup(&v, field).is_none() {
            return Err(CheckFailure::NoField {
                field: field.clone(),
                body: snippet(&x.body),
            });
        }
    }
    for (field, want) in &c.json_equals {
        let got = lookup(&v, field).ok_or_else(|| CheckFailure::NoField {
            field: field.clone(),
            body: snippet(&x.body),
        })?;
        if !equal(got, want) {
            return Err(CheckFailure::Equals {
                field: field.clone(),
                got: Box::new(got.clone()),
                want: Box::new(want.clone()),
            });
        }
    }
    Ok(())
}

/// `a.b.c` in nested objects (and `items.0` in arrays).
fn lookup<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(v, |v, key| match v {
        Value::Object(m) => m.get(key),
        Value::Array(a) => key.parse::<usize>().ok().and_then(|i| a.get(i)),
        _ => None,
    })
}

/// A JSON value against the TOML value the file wrote: numbers by value, strings and booleans
/// as they are.
fn equal(got: &Value, want: &toml::Value) -> bool {
    match (got, want) {
        (Value::String(g), toml::Value::String(w)) => g == w,
        (Value::Bool(g), toml::Value::Boolean(w)) => g == w,
        (Value::Number(g), toml::Value::Integer(w)) => g.as_i64() == Some(*w),
        (Value::Number(g), toml::Value::Float(w)) => g.as_f64() == Some(*w),
        _ => false,
    }
}

fn snippet(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(200)]);
    format!("{text:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_found_in_nested_objects_and_arrays() {
        let v: Value = serde_json::json!({"user": {"id": 7, "tags": ["a", "b"]}, "ok": true});
        assert_eq!(lookup(&v, "user.id"), Some(&Value::from(7)));
        assert_eq!(lookup(&v, "user.tags.1"), Some(&Value::from("b")));
        assert_eq!(lookup(&v, "user.name"), None);
        assert_eq!(lookup(&v, "ok.x"), None);
        assert!(equal(&Value::from(7), &toml::Value::Integer(7)));
        assert!(equal(&Value::from(true), &toml::Value::Boolean(true)));
        assert!(!equal(&Value::from("7"), &toml::Value::Integer(7)));
    }
}
