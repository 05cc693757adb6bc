//! The environment of every process Showdown starts (a `build`, a target, `targets/build`,
//! the generator, `ssh` to a gun): built from nothing, never inherited. A build runs `npm ci`'s install scripts
//! and a target may be anyone's server: what the user's shell holds (the store's URL with its
//! password, `DATABASE_URL`, `PG*`, `AWS_*`, `SSH_AUTH_SOCK`, `SHOWDOWN_HEADERS`) is not theirs
//! to read.
//!
//! A started process gets [`BASE`] (what finding programs, a home, a locale, a temporary
//! directory, the toolchains and TLS trust need), then what the experiment file gives it, then
//! the variables the file passes through by name (`pass_env`). A base variable that is a URL
//! with a user and password in it (a proxy's) is left out, and the runner says so.

use std::ffi::{OsStr, OsString};

/// The variables every started process gets from the runner's environment, when set.
pub const BASE: [&str; 45] = [
    // Finding programs, a home, who runs them.
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TMPDIR",
    "TERM",
    // Locale and time.
    "LANG",
    "LANGUAGE",
    "TZ",
    // Where the toolchains live and keep their caches (paths, not credentials).
    "GOPATH",
    "GOROOT",
    "GOCACHE",
    "GOMODCACHE",
    "GOFLAGS",
    "GOPROXY",
    "GOPRIVATE",
    "GONOPROXY",
    "GONOSUMDB",
    "GOSUMDB",
    "GOTOOLCHAIN",
    "CARGO_HOME",
    "CARGO_TARGET_DIR",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "NVM_DIR",
    "PYENV_ROOT",
    "VIRTUAL_ENV",
    "JAVA_HOME",
    // TLS trust: where the CA certificates are.
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "GIT_SSL_CAINFO",
    "PIP_CERT",
    // Proxies, left out when they carry a user and password.
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "all_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    // Rust's own diagnostics, for the generator.
    "RUST_BACKTRACE",
];

/// Prefixes of base variables: the locale's categories (`LC_ALL`, `LC_CTYPE`, …).
const BASE_PREFIXES: [&str; 1] = ["LC_"];

/// Variables no file may pass to a started process, even by name: the store's URL and the
/// headers of hand-typed attacks are Showdown's own.
pub const NEVER: [&str; 2] = [STORE, "SHOWDOWN_HEADERS"];

/// The store's URL: no file reads it, by any field.
pub const STORE: &str = "SHOWDOWN_DB";

/// Prefixes of variables that hold credentials by convention: cloud and CI accounts, libpq's
/// `PGPASSWORD` and its kin, an SSH agent, Showdown's own.
const SECRET_PREFIXES: [&str; 14] = [
    "AWS_",
    "AZURE_",
    "GOOGLE_",
    "GCP_",
    "GCLOUD_",
    "GITHUB_",
    "GH_",
    "GITLAB_",
    "PG",
    "SSH_",
    "VAULT_",
    "DOCKER_",
    "NPM_",
    "SHOWDOWN_",
];

/// Suffixes of variables that hold a URL or a connection string (often with a password in it).
const SECRET_SUFFIXES: [&str; 6] = ["_URL", "_URI", "_DSN", "_CONNECTION_STRING", "_PW", "_PAT"];

/// Parts that say a variable holds an address with credentials, or a credential itself, wherever
/// they stand in its name (`HTTPS_PROXY`, `SLACK_WEBHOOK`, `DSN`, `MY_CREDS`).
const SECRET_PARTS: [&str; 6] = ["PROXY", "WEBHOOK", "DSN", "CONNECTION", "CRED", "PASS"];

/// Whether a variable's name says it may hold a secret: the rules of [`redact::is_secret_name`]
/// (token, password, key, auth, …), a cloud's or a tool's credentials (`AWS_*`, `PG*`,
/// `GITHUB_*`, …) and any URL or connection string (`*_URL`, `*_DSN`, …). A file may read such a
/// variable only when the user names it on the command line too (`--pass-env NAME`), as any
/// other: these rules only word the plan's and the refusal's reason.
pub fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    redact::is_secret_name(name)
        || SECRET_PREFIXES.iter().any(|p| upper.starts_with(p))
        || SECRET_SUFFIXES.iter().any(|s| upper.ends_with(s))
        || SECRET_PARTS.iter().any(|p| upper.contains(p))
}

/// Whether `name` is a base variable.
pub fn is_base(name: &str) -> bool {
    BASE.contains(&name) || BASE_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// The base taken from an environment (the runner's, or a test's).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Base {
    pub vars: Vec<(OsString, OsString)>,
    /// Base variables left out because they hold a credential (a proxy URL with a password).
    pub withheld: Vec<String>,
}

impl Base {
    /// The base of `env`.
    pub fn of(env: impl IntoIterator<Item = (OsString, OsString)>) -> Base {
        let mut base = Base::default();
        for (name, value) in env {
            let Some(text) = name.to_str() else { continue };
            if !is_base(text) {
                continue;
            }
            if carries_a_credential(&value) {
                base.withheld.push(text.to_string());
            } else {
                base.vars.push((name, value));
            }
        }
        base.vars.sort();
        base.withheld.sort();
        base
    }

    /// The base of this process's environment.
    pub fn current() -> Base {
        Base::of(std::env::vars_os())
    }
}

/// Whether a value holds a secret the redaction would hide (a URL's user and password).
fn carries_a_credential(value: &OsStr) -> bool {
    let text = value.to_string_lossy();
    redact::text(&text) != text
}

/// What a process is given: the base, then `given` (the file's values, which win), then the
/// variables of the runner's environment `pass` names. Names in [`NEVER`] are never passed.
pub fn build(
    base: &Base,
    given: &[(String, String)],
    pass: &[String],
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = base.vars.clone();
    let mut set = |name: OsString, value: OsString| {
        env.retain(|(n, _)| *n != name);
        env.push((name, value));
    };
    for name in pass {
        if NEVER.contains(&name.as_str()) {
            continue;
        }
        if let Some(value) = std::env::var_os(name) {
            set(name.into(), value);
        }
    }
    for (name, value) in given {
        set(name.into(), value.into());
    }
    env
}

/// Gives `command` exactly `env`, nothing inherited (a tokio command's: `as_std_mut()`).
pub fn apply(command: &mut std::process::Command, env: &[(OsString, OsString)]) {
    command.env_clear();
    command.envs(env.iter().map(|(k, v)| (k, v)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_hold_secrets_by_convention_are_told_apart() {
        for secret in [
            "SHOWDOWN_DB",
            "SHOWDOWN_HEADERS",
            "DATABASE_URL",
            "REDIS_URI",
            "API_TOKEN",
            "GITHUB_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_PROFILE",
            "PGPASSWORD",
            "PGSERVICEFILE",
            "STRIPE_API_KEY",
            "MY_PASSWORD_2",
            "SSH_AUTH_SOCK",
            "SENTRY_DSN",
            "session_secret",
            "HTTPS_PROXY",
            "all_proxy",
            "SLACK_WEBHOOK",
            "DSN",
            "CONNECTION_STRING",
            "DB_PW",
            "MY_CREDS",
            "GL_PAT",
        ] {
            assert!(looks_secret(secret), "{secret}");
        }
        for plain in [
            "API_HEADERS",
            "WORKERS",
            "NODE_ENV",
            "GOMAXPROCS",
            "PORT",
            "LOG_LEVEL",
        ] {
            assert!(!looks_secret(plain), "{plain}");
        }
    }

    fn env(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs.iter().map(|(k, v)| (k.into(), v.into())).collect()
    }

    #[test]
    fn only_the_base_is_taken_and_credentials_are_withheld() {
        let base = Base::of(env(&[
            ("PATH", "/usr/bin"),
            ("HOME", "/home/ann"),
            ("LC_ALL", "C.UTF-8"),
            ("SHOWDOWN_DB", "postgres://u:pw@db/x"),
            ("DATABASE_URL", "postgres://u:pw@db/y"),
            ("PGPASSWORD", "pw"),
            ("AWS_SECRET_ACCESS_KEY", "k"),
            ("SSH_AUTH_SOCK", "/tmp/ssh-x/agent.1"),
            ("SHOWDOWN_HEADERS", "Authorization: Bearer t"),
            ("HTTPS_PROXY", "http://ann:pw@proxy:3128"),
            ("NO_PROXY", "localhost"),
        ]));
        let names: Vec<&str> = base.vars.iter().filter_map(|(k, _)| k.to_str()).collect();
        assert_eq!(names, ["HOME", "LC_ALL", "NO_PROXY", "PATH"]);
        assert_eq!(base.withheld, ["HTTPS_PROXY"]);
    }

    #[test]
    fn the_file_wins_and_never_means_never() {
        let base = Base::of(env(&[("PATH", "/usr/bin"), ("HOME", "/h")]));
        let built = build(
            &base,
            &[
                ("PATH".into(), "/opt/bin".into()),
                ("PORT".into(), "8080".into()),
            ],
            &["SHOWDOWN_DB".into(), "SHOWDOWN_HEADERS".into()],
        );
        assert_eq!(
            built,
            env(&[("HOME", "/h"), ("PATH", "/opt/bin"), ("PORT", "8080")])
        );
    }
}
