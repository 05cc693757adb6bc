//! Secrets out of everything Showdown keeps or shows: one set of rules, used by every writer of
//! a command line, a configuration or an error that names a URL (loadgen's runs, the
//! experiment runner's definitions, the store's own errors, the report's pages).
//!
//! What counts as secret: the user-info of any URL (`postgres://user:PASSWORD@host`, also the
//! user name, which is half a credential); query and keyword parameters named like a password
//! or a token (`?password=…`, libpq's `password=…`); the values of `Authorization`,
//! `Proxy-Authorization`, `Cookie`, `Set-Cookie` and API-key or token headers; flags and
//! environment values whose names say secret, password, token or key (`--password X`,
//! `SECRET=…`). Names of files holding secrets (`--token-file`) are kept: they are not secret,
//! and say where the secret came from.

/// What a secret is replaced by.
pub const REDACTED: &str = "<redacted>";

/// Whether a name (a header, a flag, an environment variable, a parameter) says its value is
/// secret.
pub fn is_secret_name(name: &str) -> bool {
    let name = name.trim().trim_start_matches('-').to_ascii_lowercase();
    let name = name.replace('_', "-");
    if name.ends_with("-file") || name.ends_with("-path") || name.ends_with("-fingerprint") {
        return false;
    }
    const EXACT: [&str; 4] = [
        "authorization",
        "proxy-authorization",
        "cookie",
        "set-cookie",
    ];
    const PARTS: [&str; 9] = [
        "password",
        "passwd",
        "pwd",
        "secret",
        "token",
        "api-key",
        "apikey",
        "auth",
        "credential",
    ];
    EXACT.contains(&name.as_str())
        || PARTS.iter().any(|p| name.contains(p))
        || name == "key"
        || name.ends_with("-key")
}

/// A header line (`Name: value`) with its value replaced when the name says it is secret.
pub fn header(line: &str) -> String {
    match line.split_once(':') {
        Some((name, _)) if is_secret_name(name) => format!("{}: {REDACTED}", name.trim()),
        _ => text(line),
    }
}

/// Any free text (an argument, a URL, an error message, a configuration value): user-info in
/// URLs and secret `name=value` parameters replaced.
pub fn text(s: &str) -> String {
    params(&userinfo(s))
}

/// Replaces the user-info of every `scheme://user:pass@host` in `s`.
fn userinfo(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find("://") {
        let (head, tail) = rest.split_at(at + 3);
        out.push_str(head);
        let authority_end = tail
            .find(|c: char| {
                matches!(c, '/' | '?' | '#') || c.is_whitespace() || c == '"' || c == '\''
            })
            .unwrap_or(tail.len());
        let authority = &tail[..authority_end];
        match authority.rfind('@') {
            Some(i) => {
                out.push_str(REDACTED);
                out.push_str(&authority[i..]);
            }
            None => out.push_str(authority),
        }
        rest = &tail[authority_end..];
    }
    out.push_str(rest);
    out
}

/// Replaces the values of `name=value` pairs with secret names, whether separated by `&`, `?`,
/// `;` or spaces (URL queries, libpq keyword strings, `KEY=value` arguments), and of TOML's
/// `name = "value"` (quoted names and values too: the experiment file's `env` and `headers`).
fn params(s: &str) -> String {
    let is_delimiter =
        |c: char| matches!(c, '&' | '?' | ';' | ',' | '{' | '}' | '#') || c.is_whitespace();
    let mut out = String::with_capacity(s.len());
    let mut copied = 0;
    let mut from = 0;
    while let Some(offset) = s[from..].find('=') {
        let eq = from + offset;
        from = eq + 1;
        let name_end = s[..eq].trim_end().len();
        let name_start = s[..name_end].rfind(is_delimiter).map_or(0, |p| p + 1);
        let name = s[name_start..name_end].trim_matches(|c| c == '"' || c == '\'');
        if name.is_empty() || !is_secret_name(name) || s[eq + 1..].starts_with('=') {
            continue;
        }
        let value_start = eq + 1 + (s[eq + 1..].len() - s[eq + 1..].trim_start().len());
        let quote = s[value_start..]
            .chars()
            .next()
            .filter(|c| *c == '"' || *c == '\'');
        let (value_end, replacement) = match quote {
            Some(q) => {
                let end = s[value_start + 1..]
                    .find(q)
                    .map_or(s.len(), |p| value_start + 1 + p + 1);
                (end, format!("{q}{REDACTED}{q}"))
            }
            None => {
                let end = s[value_start..]
                    .find(|c: char| {
                        matches!(c, '&' | ';' | ',' | '#' | '}' | '"') || c.is_whitespace()
                    })
                    .map_or(s.len(), |p| value_start + p);
                (end, REDACTED.to_string())
            }
        };
        out.push_str(&s[copied..value_start]);
        out.push_str(&replacement);
        copied = value_end;
        from = value_end.max(from);
    }
    out.push_str(&s[copied..]);
    out
}

/// A command line as it may be kept and shown: header values, URL user-info, secret
/// parameters and the values of secret flags (`--password X`, `--token=X`) replaced.
pub fn command_line(args: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    // What the previous argument says about this one.
    enum Next {
        Plain,
        Header,
        Secret,
    }
    let mut next = Next::Plain;
    for arg in args {
        let kept = match next {
            Next::Header => header(arg),
            Next::Secret => REDACTED.to_string(),
            Next::Plain => {
                if let Some(value) = arg
                    .strip_prefix("-H")
                    .filter(|v| !v.is_empty() && !v.starts_with('='))
                {
                    format!("-H{}", header(value))
                } else if let Some((flag, value)) =
                    arg.split_once('=').filter(|(f, _)| f.starts_with("--"))
                {
                    if flag == "--header" {
                        format!("{flag}={}", header(value))
                    } else if is_secret_name(flag) {
                        format!("{flag}={REDACTED}")
                    } else {
                        format!("{flag}={}", text(value))
                    }
                } else {
                    text(arg)
                }
            }
        };
        next = if arg == "-H" || arg == "--header" {
            Next::Header
        } else if arg.starts_with("--") && !arg.contains('=') && is_secret_name(arg) {
            Next::Secret
        } else {
            Next::Plain
        };
        out.push(kept);
    }
    out
}

/// An environment value as it may be kept and shown.
pub fn env(name: &str, value: &str) -> String {
    if is_secret_name(name) {
        REDACTED.to_string()
    } else {
        text(value)
    }
}

/// A configuration (JSON) as it may be kept and shown: values under secret keys replaced,
/// every string passed through [`text`], headers under a `headers` object by their names.
pub fn json(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::String(s) => *s = text(s),
        Value::Array(items) => items.iter_mut().for_each(json),
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                if is_secret_name(key) && !v.is_object() && !v.is_array() {
                    *v = Value::String(REDACTED.into());
                } else {
                    json(v);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    const SECRETS: [&str; 9] = [
        "PGPASSW0RD",
        "s3cretBearer",
        "id=7cookie",
        "apikeyvalue",
        "tok3n",
        "proxyp4ss",
        "envsecret",
        "flagpass",
        "querypass",
    ];

    #[test]
    fn no_secret_survives_a_command_line() {
        let line = args(&[
            "loadgen",
            "attack",
            "--db",
            "postgres://showdown:PGPASSW0RD@db.example:5432/runs",
            "-H",
            "Authorization: Bearer s3cretBearer",
            "--header=Cookie: id=7cookie",
            "-HX-Api-Key: apikeyvalue",
            "--header",
            "X-Auth-Token: tok3n",
            "-H",
            "Proxy-Authorization: Basic proxyp4ss",
            "SECRET=envsecret",
            "--password",
            "flagpass",
            "http://target:8080/users?api_key=querypass&page=2",
            "--probe-token-file",
            "/etc/showdown/probe.token",
            "-H",
            "Accept: */*",
        ]);
        let kept = command_line(&args(&line.iter().map(String::as_str).collect::<Vec<_>>()));
        let joined = kept.join(" ");
        for secret in SECRETS {
            assert!(!joined.contains(secret), "{secret} survived: {joined}");
        }
        assert!(
            !joined.contains("showdown:"),
            "the user-info goes too: {joined}"
        );
        assert_eq!(kept.len(), line.len(), "one argument for one");
        for kept_as_is in [
            "db.example:5432/runs",
            "Authorization: <redacted>",
            "Accept: */*",
            "/etc/showdown/probe.token",
            "page=2",
            "http://target:8080/users",
        ] {
            assert!(joined.contains(kept_as_is), "{kept_as_is} lost: {joined}");
        }
    }

    #[test]
    fn libpq_keyword_strings_and_inline_flags_lose_their_passwords() {
        assert_eq!(
            text("host=db user=app password=hunter2 dbname=x"),
            "host=db user=app password=<redacted> dbname=x"
        );
        assert_eq!(
            command_line(&args(&["--token=abc", "--db=postgresql://u:p@h/d"])),
            args(&["--token=<redacted>", "--db=postgresql://<redacted>@h/d"])
        );
        assert_eq!(
            text("no secret here: http://h:1/p"),
            "no secret here: http://h:1/p"
        );
        assert_eq!(
            text("env = { SECRET = \"s3\", CLUSTER = \"2\" }\nheaders = { \"X-Api-Key\" = 'k9' }"),
            "env = { SECRET = \"<redacted>\", CLUSTER = \"2\" }\nheaders = { \"X-Api-Key\" = '<redacted>' }"
        );
    }

    #[test]
    fn environment_and_configuration_values_are_redacted_by_name() {
        assert_eq!(env("SECRET", "x"), REDACTED);
        assert_eq!(env("DB_PASSWORD", "x"), REDACTED);
        assert_eq!(env("GITHUB_TOKEN", "x"), REDACTED);
        assert_eq!(env("CLUSTER", "3"), "3");
        assert_eq!(
            env("DATABASE_URL", "postgres://u:pw@h/db"),
            "postgres://<redacted>@h/db"
        );
        let mut config = serde_json::json!({
            "env": {"SECRET": "abc", "DB_POOL": "60", "DATABASE_URL": "postgres://u:pw@h/db"},
            "headers": {"Authorization": "Bearer xyz", "Accept": "*/*"},
            "probe_token_file": "probe.token",
            "list": ["http://u:pw@h/"],
        });
        json(&mut config);
        let text = config.to_string();
        for secret in ["abc", "pw@", "xyz"] {
            assert!(!text.contains(secret), "{secret} survived: {text}");
        }
        assert!(
            text.contains("\"DB_POOL\":\"60\"")
                && text.contains("*/*")
                && text.contains("probe.token"),
            "{text}"
        );
    }
}
