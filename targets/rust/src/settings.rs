//! The environment of `targets/CONTRACT.md`, checked once at start: a value that cannot be used
//! is a one-line error naming the variable.

use std::net::IpAddr;
use std::time::Duration;

/// A variable that cannot be used; each message ends with the variable to fix.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("{name}={value:?} is not an integer in {min}..={max}: fix {name}")]
    Number {
        name: &'static str,
        value: String,
        min: u64,
        max: u64,
    },
    #[error("HOST={0:?} is not an IP address: fix HOST")]
    Host(String),
    #[error("DATABASE_URL is not a PostgreSQL URL (postgres://USER@HOST:PORT/DATABASE): fix DATABASE_URL")]
    DatabaseUrl,
    #[error("UPSTREAM_URL={0:?} is not a URL: fix UPSTREAM_URL")]
    UpstreamUrl(String),
    #[error("UPSTREAM_URL={0:?} must be an http:// URL with a host: fix UPSTREAM_URL")]
    UpstreamNotHttp(String),
}

#[derive(Debug, Clone)]
pub struct Settings {
    pub host: IpAddr,
    pub port: u16,
    pub database_url: Option<String>,
    pub db_pool: u32,
    pub db_timeout: Duration,
    pub upstream_url: Option<hyper::Uri>,
    pub secret: Option<String>,
}

impl Settings {
    pub fn from_env() -> Result<Settings, SettingsError> {
        Self::from_lookup(|name| std::env::var(name).ok().filter(|v| !v.is_empty()))
    }

    pub fn from_lookup(var: impl Fn(&str) -> Option<String>) -> Result<Settings, SettingsError> {
        let number = |name: &'static str, default: u64, min: u64, max: u64| match var(name) {
            None => Ok(default),
            Some(v) => v
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|n| (min..=max).contains(n))
                .ok_or(SettingsError::Number {
                    name,
                    value: v,
                    min,
                    max,
                }),
        };
        let host = match var("HOST") {
            None => IpAddr::from([127, 0, 0, 1]),
            Some(h) => h.parse().map_err(|_| SettingsError::Host(h))?,
        };
        let database_url = var("DATABASE_URL");
        if let Some(url) = &database_url {
            let scheme_ok = url.starts_with("postgres://") || url.starts_with("postgresql://");
            if !scheme_ok || url.parse::<sqlx::postgres::PgConnectOptions>().is_err() {
                return Err(SettingsError::DatabaseUrl);
            }
        }
        let upstream_url = match var("UPSTREAM_URL") {
            None => None,
            Some(u) => {
                let uri: hyper::Uri = u
                    .parse()
                    .map_err(|_| SettingsError::UpstreamUrl(u.clone()))?;
                if uri.scheme_str() != Some("http") || uri.host().is_none() {
                    return Err(SettingsError::UpstreamNotHttp(u));
                }
                Some(uri)
            }
        };
        Ok(Settings {
            host,
            port: number("PORT", 8080, 0, 65535)? as u16,
            database_url,
            db_pool: number("DB_POOL", 60, 1, 10_000)? as u32,
            db_timeout: Duration::from_millis(number("DB_TIMEOUT_MS", 5000, 1, 600_000)?),
            upstream_url,
            secret: var("SECRET"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(pairs: &[(&str, &str)]) -> Result<Settings, SettingsError> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Settings::from_lookup(|name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        })
    }

    #[test]
    fn defaults_are_the_contracts() {
        let s = with(&[]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((s.port, s.db_pool), (8080, 60));
        assert_eq!(s.db_timeout, Duration::from_secs(5));
        assert!(s.database_url.is_none() && s.secret.is_none());
    }

    #[test]
    fn bad_values_name_the_variable() {
        for (name, value) in [
            ("PORT", "http"),
            ("PORT", "70000"),
            ("DB_POOL", "0"),
            ("DATABASE_URL", "mysql://x"),
            ("UPSTREAM_URL", "https://example.com"),
            ("HOST", "localhost:1"),
        ] {
            let error = with(&[(name, value)])
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(error.contains(&format!("fix {name}")), "{name}: {error}");
        }
    }
}
