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
//!
//! A command line is read the way its parser reads it ([`Flags`]): `-kH 'Authorization: …'`,
//! `-H=…`, `-HAuthorization: …` and `--header=…` are all a header. An experiment file is read
//! as TOML ([`toml_file`]), so a secret in a multi-line string goes as well as a plain one.
//! Every function here is total: any text, in any script, gives a redacted text, never a panic.

/// What a secret is replaced by.
pub const REDACTED: &str = "<redacted>";

/// Whether a name (a header, a flag, an environment variable, a parameter, a JSON key) says
/// its value is secret. Read in segments (`-`, `_` and `.` separate them), so that `requirepass`,
/// `X-Session-Id` and `sig` are caught and `bypass-cache` is not.
pub fn is_secret_name(name: &str) -> bool {
    let name = name.trim().trim_start_matches('-').to_ascii_lowercase();
    let name = name.replace(['_', '.'], "-");
    if name.ends_with("-file") || name.ends_with("-path") || name.ends_with("-fingerprint") {
        return false;
    }
    const EXACT: [&str; 4] = [
        "authorization",
        "proxy-authorization",
        "cookie",
        "set-cookie",
    ];
    /// Anywhere in the name.
    const PARTS: [&str; 17] = [
        "password",
        "passwd",
        "passphrase",
        "passcode",
        "pwd",
        "secret",
        "token",
        "api-key",
        "apikey",
        "auth",
        "credential",
        "jwt",
        "session",
        "sessid",
        "signature",
        "private-key",
        "privatekey",
    ];
    /// A whole segment of the name.
    const SEGMENTS: [&str; 3] = ["pass", "sig", "otp"];
    /// Segments that end like a password's name and are not one.
    const NOT_PASS: [&str; 4] = ["bypass", "compass", "overpass", "underpass"];
    let segments = || name.split('-').filter(|s| !s.is_empty());
    EXACT.contains(&name.as_str())
        || PARTS.iter().any(|p| name.contains(p))
        || segments()
            .any(|s| SEGMENTS.contains(&s) || (s.ends_with("pass") && !NOT_PASS.contains(&s)))
        || name == "key"
        || name.ends_with("-key")
}

/// A header line (`Name: value`) with its value replaced when the name says it is secret, or
/// the value looks like a credential whatever the header is called.
pub fn header(line: &str) -> String {
    match line.split_once(':') {
        Some((name, value)) if is_secret_name(name) || is_credential(value) => {
            format!("{}: {REDACTED}", name.trim())
        }
        _ => text(line),
    }
}

/// Whether a value looks like a credential whatever names it: an HTTP authorization scheme
/// and its parameters (`Bearer …`, `Basic …`, `Token …`, `Digest …`, AWS's signature), a JSON
/// Web Token (`eyJ…` in three dotted parts), or a URL with a user in it.
pub fn is_credential(value: &str) -> bool {
    let value = value.trim();
    let lower = value.to_ascii_lowercase();
    const SCHEMES: [&str; 7] = [
        "bearer ",
        "basic ",
        "token ",
        "digest ",
        "negotiate ",
        "hoba ",
        "aws4-hmac-sha256 ",
    ];
    let jwt = value.starts_with("eyJ")
        && value.split('.').count() == 3
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '='));
    SCHEMES.iter().any(|s| lower.starts_with(s)) || jwt || userinfo(value) != value
}

/// Text from a file or a peer, made safe to print on a terminal or a page as one piece: every
/// control character (a newline, a carriage return, an escape sequence's ESC, DEL, the C1
/// range) and every character that reorders or hides text (bidirectional overrides and
/// isolates, zero-width joiners) shown as its escape (`\u{1b}`), so that a string cannot erase,
/// hide or forge the lines around it. Everything else is kept as it is.
pub fn printable(s: &str) -> String {
    let hidden = |c: char| {
        c.is_control()
            || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
    };
    if !s.chars().any(hidden) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if hidden(c) {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// Any free text (an argument, a URL, an error message, a configuration value): user-info in
/// URLs, secret `name=value` parameters, the values of secret JSON keys (`"password":"x"`) and
/// of secret headers (`Authorization: …`, to the end of the line) replaced.
pub fn text(s: &str) -> String {
    header_lines(&quoted_keys(&params(&userinfo(s))))
}

/// Where the next authority starts in `s` (just after its `//`): after a scheme's `:`, or a
/// scheme-relative `//` at the start of a word (`//user:pw@host`, what is left of a URL split at
/// its first `:`); not a `//` inside a path (`/a//b`).
fn next_authority(s: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(offset) = s[from..].find("//") {
        let at = from + offset;
        let starts_one = s[..at].chars().next_back().is_none_or(|c| {
            c == ':' || c.is_whitespace() || matches!(c, '"' | '\'' | '=' | '(' | '<' | ',')
        });
        if starts_one {
            return Some(at + 2);
        }
        from = at + 2;
    }
    None
}

/// Replaces the user-info of every `scheme://user:pass@host` (or `//user:pass@host`) in `s`, a
/// password written with an unescaped `/`, `?` or `#` in it included (`postgres://app:pa/ss@db/x`).
fn userinfo(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(after) = next_authority(rest) {
        let (head, tail) = rest.split_at(after);
        out.push_str(head);
        let url_end = tail
            .find(|c: char| c.is_whitespace() || c == '"' || c == '\'' || c == '<' || c == '>')
            .unwrap_or(tail.len());
        let url = &tail[..url_end];
        let authority_end = url.find(['/', '?', '#']).unwrap_or(url.len());
        let authority = &url[..authority_end];
        let user_end = authority
            .rfind('@')
            .or_else(|| unescaped_password_end(url, authority_end));
        let consumed = match user_end {
            Some(i) => {
                out.push_str(REDACTED);
                i
            }
            None => 0,
        };
        // What follows the user-info is looked at again: a URL may hold another.
        rest = &tail[consumed..];
        if user_end.is_none() {
            out.push_str(authority);
            rest = &tail[authority_end..];
        }
    }
    out.push_str(rest);
    out
}

/// Where the user-info ends when a password holds a `/`, `?` or `#` (so the authority seemed to
/// end early): the authority so far has a `:` that no port explains (`app:pa`, not `host:8080`)
/// and an `@` comes later in the URL (the last one: hiding too much beats hiding too little).
fn unescaped_password_end(url: &str, authority_end: usize) -> Option<usize> {
    let authority = &url[..authority_end];
    let (_, after_colon) = authority.split_once(':')?;
    let is_port = !after_colon.is_empty() && after_colon.bytes().all(|b| b.is_ascii_digit());
    if is_port {
        return None;
    }
    url[authority_end..].rfind('@').map(|i| authority_end + i)
}

/// Replaces the values of quoted keys that say secret, as JSON, Python or JavaScript write
/// them: `"password":"x"`, `'token': 'y'`, `"pin_code": 1234`.
fn quoted_keys(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut copied = 0;
    let mut from = 0;
    while let Some(offset) = s[from..].find(['"', '\'']) {
        let open = from + offset;
        let quote = &s[open..open + 1];
        let name_start = open + 1;
        let Some(len) = s[name_start..].find(quote) else {
            // A lone quote (an apostrophe in prose): look on after it.
            from = name_start;
            continue;
        };
        let name_end = name_start + len;
        let name = &s[name_start..name_end];
        from = name_end + 1;
        let after = &s[from..];
        let Some(value) = after.trim_start().strip_prefix(':') else {
            continue;
        };
        if name.is_empty() || name.contains(['\n', '\r']) || !is_secret_name(name) {
            continue;
        }
        let value_start = s.len() - value.trim_start().len();
        let rest = &s[value_start..];
        let value_end = match rest.chars().next() {
            Some(q @ ('"' | '\'')) => {
                // To the closing quote that no backslash escapes.
                let body = value_start + 1;
                let mut end = s.len();
                let mut escaped = false;
                for (i, c) in s[body..].char_indices() {
                    match c {
                        _ if escaped => escaped = false,
                        '\\' => escaped = true,
                        c if c == q => {
                            end = body + i;
                            break;
                        }
                        _ => {}
                    }
                }
                out.push_str(&s[copied..body]);
                out.push_str(REDACTED);
                copied = end;
                end
            }
            Some(c) if !matches!(c, '{' | '[') => {
                let end = rest
                    .find(|c: char| matches!(c, ',' | '}' | ']') || c.is_whitespace())
                    .map_or(s.len(), |p| value_start + p);
                if end > value_start {
                    out.push_str(&s[copied..value_start]);
                    out.push_str(REDACTED);
                    copied = end;
                }
                end
            }
            _ => continue,
        };
        from = value_end.max(from);
    }
    out.push_str(&s[copied..]);
    out
}

/// Whether `c` ends a `name=value` pair's name or value.
fn is_delimiter(c: char) -> bool {
    matches!(c, '&' | '?' | ';' | ',' | '{' | '}' | '#') || c.is_whitespace()
}

/// Replaces the values of `name=value` pairs with secret names, whether separated by `&`, `?`,
/// `;` or spaces (URL queries, libpq keyword strings, `KEY=value` arguments), and of TOML's
/// `name = "value"` (quoted names and values too, triple quotes included: the experiment
/// file's `env` and `headers`).
fn params(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut copied = 0;
    let mut from = 0;
    while let Some(offset) = s[from..].find('=') {
        let eq = from + offset;
        from = eq + 1;
        let name_end = s[..eq].trim_end().len();
        // After the delimiter, whatever its width (a non-breaking space is two bytes).
        let name_start = s[..name_end]
            .char_indices()
            .rev()
            .find(|&(_, c)| is_delimiter(c))
            .map_or(0, |(p, c)| p + c.len_utf8());
        let name = s[name_start..name_end].trim_matches(|c| c == '"' || c == '\'');
        if name.is_empty() || !is_secret_name(name) || s[eq + 1..].starts_with('=') {
            continue;
        }
        let value_start = eq + 1 + (s[eq + 1..].len() - s[eq + 1..].trim_start().len());
        let value = &s[value_start..];
        let quote = ["\"\"\"", "'''", "\"", "'"]
            .into_iter()
            .find(|q| value.starts_with(q));
        let (value_end, replacement) = match quote {
            Some(q) => {
                let body = value_start + q.len();
                let end = s[body..].find(q).map_or(s.len(), |p| body + p + q.len());
                (end, format!("{q}{REDACTED}{q}"))
            }
            None => {
                let end = value
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

/// Whether a name is a header's whose value is a credential: the ones HTTP defines
/// (`Authorization`, `Cookie`, …) and secret-named ones spelled like headers (`X-Api-Key`).
fn is_secret_header(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    let header_like = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    header_like
        && is_secret_name(name)
        && (lower.contains('-') || matches!(lower.as_str(), "authorization" | "cookie"))
}

/// Replaces what follows `Name:` to the end of its line (or quote) when `Name` is a secret
/// header's, wherever it stands: an error that echoes a request's headers, a target's output.
fn header_lines(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut copied = 0;
    let mut from = 0;
    while let Some(offset) = s[from..].find(':') {
        let colon = from + offset;
        from = colon + 1;
        let name_start = s[..colon]
            .char_indices()
            .rev()
            .find(|&(_, c)| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
            .map_or(0, |(p, c)| p + c.len_utf8());
        let name = &s[name_start..colon];
        // `scheme://` is a URL, not a header.
        if s[colon + 1..].starts_with("//") || !is_secret_header(name) {
            continue;
        }
        let value = &s[colon + 1..];
        let start = colon + 1 + (value.len() - value.trim_start_matches(' ').len());
        let end = s[start..]
            .find(['\n', '\r', '"', '\''])
            .map_or(s.len(), |p| start + p);
        if end == start || &s[start..end] == REDACTED {
            continue;
        }
        out.push_str(&s[copied..start]);
        out.push_str(REDACTED);
        copied = end;
        from = end;
    }
    out.push_str(&s[copied..]);
    out
}

/// How a command's flags are spelled, so that its command line is read as its parser (clap)
/// reads it: which short flags take a value, and which flags give a header.
#[derive(Debug, Clone, Copy)]
pub struct Flags<'a> {
    /// Short flags that take a value: in a cluster (`-kH`), the first of them takes the rest
    /// of the argument (`-kHvalue`, `-kH=value`) or, if nothing is left, the next argument.
    pub short_values: &'a [char],
    /// The short flags whose value is a header line (`Name: value`).
    pub short_headers: &'a [char],
    /// The long flags whose value is a header line (`--header`).
    pub long_headers: &'a [&'a str],
}

/// loadgen's flags (held to its command-line definition by a test of loadgen's).
pub const LOADGEN: Flags<'static> = Flags {
    short_values: &['H', 'm', 'r', 'c', 'd', 'n'],
    short_headers: &['H'],
    long_headers: &["header"],
};

/// Any other program's flags, when its parser is not known (a target's command line as the
/// probe sees it): no short flag is known to take a value; `--header` gives a header, and
/// header lines are caught wherever they stand.
pub const ANY_PROGRAM: Flags<'static> = Flags {
    short_values: &[],
    short_headers: &[],
    long_headers: &["header"],
};

/// What one argument says about the next.
#[derive(Debug, Clone, Copy)]
enum Next {
    Plain,
    /// The value of a header flag.
    Header,
    /// The value of a flag whose name says it is secret.
    Secret,
    /// The value of another flag.
    Value,
}

/// A command line as it may be kept and shown, read with loadgen's flags ([`LOADGEN`]).
pub fn command_line(args: &[String]) -> Vec<String> {
    command_line_with(args, &LOADGEN)
}

/// A command line as it may be kept and shown: header values, URL user-info, secret
/// parameters and the values of secret flags (`--password X`, `--token=X`) replaced, in every
/// spelling `flags` accept. One argument in gives one argument out.
pub fn command_line_with(args: &[String], flags: &Flags<'_>) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    let mut next = Next::Plain;
    let mut positional = false;
    for arg in args {
        let (kept, then) = match next {
            Next::Header => (header(arg), Next::Plain),
            Next::Secret => (REDACTED.to_string(), Next::Plain),
            Next::Value => (text(arg), Next::Plain),
            Next::Plain if positional || arg == "-" || !arg.starts_with('-') => {
                (text(arg), Next::Plain)
            }
            Next::Plain if arg == "--" => {
                positional = true;
                (arg.clone(), Next::Plain)
            }
            Next::Plain => match arg.strip_prefix("--") {
                Some(long) => long_flag(arg, long, flags),
                None => short_cluster(arg, flags),
            },
        };
        out.push(kept);
        next = then;
    }
    out
}

/// `--name=value` or `--name` (whose value, if any, is the next argument).
fn long_flag(arg: &str, long: &str, flags: &Flags<'_>) -> (String, Next) {
    match long.split_once('=') {
        Some((name, v)) if flags.long_headers.contains(&name) => {
            (format!("--{name}={}", header(v)), Next::Plain)
        }
        Some((name, _)) if is_secret_name(name) => (format!("--{name}={REDACTED}"), Next::Plain),
        Some((name, v)) => (format!("--{name}={}", text(v)), Next::Plain),
        None if flags.long_headers.contains(&long) => (arg.to_string(), Next::Header),
        None if is_secret_name(long) => (arg.to_string(), Next::Secret),
        None => (text(arg), Next::Plain),
    }
}

/// A cluster of short flags (`-k`, `-kH…`, `-H=…`): kept as is up to its first flag that takes
/// a value, whose value (the rest, or the next argument) is redacted as that flag's.
fn short_cluster(arg: &str, flags: &Flags<'_>) -> (String, Next) {
    let cluster = &arg[1..];
    for (at, c) in cluster.char_indices() {
        if !flags.short_values.contains(&c) {
            continue;
        }
        let is_header = flags.short_headers.contains(&c);
        let rest = &cluster[at + c.len_utf8()..];
        if rest.is_empty() {
            let then = if is_header { Next::Header } else { Next::Value };
            return (arg.to_string(), then);
        }
        let (eq, v) = match rest.strip_prefix('=') {
            Some(v) => ("=", v),
            None => ("", rest),
        };
        let kept = if is_header { header(v) } else { text(v) };
        return (format!("-{}{c}{eq}{kept}", &cluster[..at]), Next::Plain);
    }
    (text(arg), Next::Plain)
}

/// An experiment file (TOML) as it may be kept and shown, its layout and comments untouched:
/// the value of every key whose name says secret (in any table: `env`, `headers`, …) replaced,
/// and every other string passed through [`text`]. Read as TOML, so a multi-line or escaped
/// string goes whole; a file that is not TOML is redacted as [`text`].
pub fn toml_file(file: &str) -> String {
    use toml_edit::{DocumentMut, Item, Value};
    fn value(key: &str, v: &mut Value) {
        match v {
            Value::String(s) => {
                let kept = if is_secret_name(key) {
                    REDACTED.to_string()
                } else {
                    text(s.value())
                };
                if kept != *s.value() {
                    let decor = s.decor().clone();
                    *v = Value::from(kept);
                    *v.decor_mut() = decor;
                }
            }
            Value::Array(items) => {
                // A list of strings may be a command line (`command = ["srv", "--token",
                // "x"]`): read as one, so that a flag's value goes with its flag.
                let strings: Option<Vec<String>> = items
                    .iter()
                    .map(|i| i.as_str().map(str::to_string))
                    .collect();
                match strings {
                    Some(args) if !is_secret_name(key) => {
                        let kept = command_line_with(&args, &ANY_PROGRAM);
                        for (item, (arg, kept)) in items.iter_mut().zip(args.iter().zip(kept)) {
                            if *arg != kept {
                                let decor = item.decor().clone();
                                *item = Value::from(kept);
                                *item.decor_mut() = decor;
                            }
                        }
                    }
                    _ => items.iter_mut().for_each(|i| value(key, i)),
                }
            }
            Value::InlineTable(t) => t.iter_mut().for_each(|(k, i)| value(k.get(), i)),
            _ => {}
        }
    }
    fn item(key: &str, i: &mut Item) {
        match i {
            Item::Value(v) => value(key, v),
            Item::Table(t) => t.iter_mut().for_each(|(k, i)| item(k.get(), i)),
            Item::ArrayOfTables(a) => a
                .iter_mut()
                .for_each(|t| t.iter_mut().for_each(|(k, i)| item(k.get(), i))),
            Item::None => {}
        }
    }
    match file.parse::<DocumentMut>() {
        Ok(mut doc) => {
            doc.as_table_mut()
                .iter_mut()
                .for_each(|(k, i)| item(k.get(), i));
            doc.to_string()
        }
        Err(_) => text(file),
    }
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
        Value::Array(items) if items.iter().all(Value::is_string) => {
            // A command line: a flag's value goes with its flag.
            let args: Vec<String> = items
                .iter()
                .map(|i| i.as_str().unwrap_or_default().to_string())
                .collect();
            for (item, kept) in items.iter_mut().zip(command_line_with(&args, &ANY_PROGRAM)) {
                *item = Value::String(kept);
            }
        }
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

    #[test]
    fn a_url_split_at_its_scheme_keeps_no_user_info() {
        // `HTTPS_PROXY=http://user:pw@proxy:3128` read as a header line splits at its first `:`.
        assert_eq!(
            header("http: //user:PROXYPW@proxy:3128/"),
            format!("http: {REDACTED}")
        );
        assert_eq!(
            text("value //user:PROXYPW@proxy:3128/ sent"),
            format!("value //{REDACTED}@proxy:3128/ sent")
        );
        // A path's doubled slash is not an authority.
        assert_eq!(text("GET /a//b@c"), "GET /a//b@c");
    }

    #[test]
    fn printable_text_cannot_erase_hide_or_forge_lines() {
        assert_eq!(printable("plain: `true` é 日本"), "plain: `true` é 日本");
        assert_eq!(
            printable("\r\u{1b}[2Kruns x\nforged\u{202e}"),
            "\\u{d}\\u{1b}[2Kruns x\\u{a}forged\\u{202e}"
        );
        assert!(printable("\u{9b}\u{7f}\u{0}")
            .chars()
            .all(|c| !c.is_control()));
    }

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_credential_is_known_by_its_value_whatever_its_header_is_called() {
        for line in [
            "X-Upstream: Bearer abc.def",
            "X-Api: basic dXNlcjpwYXNz",
            "X-Forward: eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln",
            "X-Db: postgres://app:pw@db/x",
            "X-Sig: AWS4-HMAC-SHA256 Credential=AKIA/2026",
        ] {
            let kept = header(line);
            assert!(kept.ends_with(REDACTED), "{line} -> {kept}");
        }
        for plain in ["X-Tenant: acme", "Accept: application/json", "X-Id: eyJ"] {
            assert_eq!(header(plain), plain);
        }
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

    #[test]
    fn every_spelling_of_a_header_flag_loses_its_value() {
        let line = args(&[
            "loadgen",
            "attack",
            "-kH",
            "Authorization: Bearer one1",
            "-H=Authorization: Bearer two2",
            "-kHAuthorization: Bearer three3",
            "-kH=Cookie: four4",
            "--header=X-Api-Key: five5",
            "--header",
            "Proxy-Authorization: six6",
            "-m",
            "POST",
            "-mPOST",
            "http://h/",
        ]);
        let kept = command_line(&line);
        let joined = kept.join(" ");
        for secret in ["one1", "two2", "three3", "four4", "five5", "six6"] {
            assert!(!joined.contains(secret), "{secret} survived: {joined}");
        }
        assert_eq!(kept.len(), line.len());
        assert_eq!(kept[2], "-kH");
        assert_eq!(kept[3], "Authorization: <redacted>");
        assert_eq!(kept[4], "-H=Authorization: <redacted>");
        assert_eq!(kept[5], "-kHAuthorization: <redacted>");
        assert!(joined.contains("-m POST -mPOST http://h/"), "{joined}");
        // After `--` everything is an argument, still passed through the text rules.
        let kept = command_line(&args(&["--", "-H", "http://u:p@h/"]));
        assert_eq!(kept, args(&["--", "-H", "http://<redacted>@h/"]));
    }

    #[test]
    fn text_in_any_script_is_redacted_without_a_panic() {
        assert_eq!(
            text("name\u{a0}password=hunter2 x"),
            "name\u{a0}password=<redacted> x"
        );
        assert_eq!(text("\u{a0}=\u{a0}"), "\u{a0}=\u{a0}");
        assert_eq!(
            text("curl said: Authorization: Bearer abc\nnext line"),
            "curl said: Authorization: <redacted>\nnext line"
        );
        assert_eq!(
            text("see http://h:1/ and time 10:20"),
            "see http://h:1/ and time 10:20"
        );
    }

    #[test]
    fn an_experiment_file_loses_every_secret_string_and_keeps_its_layout() {
        let file = r#"# the showdown
name = "x"   # a comment
[[target]]
name = "go"
env = { SECRET = """multi
line""", CLUSTER = "2", API_TOKEN = 'lit' }

[database]
url = "postgres://app:pw9@db/app"

[load]
headers = { "Authorization" = "Bearer tri", "Accept" = "*/*" }
password = '''raw'''
"#;
        let kept = toml_file(file);
        for secret in ["multi", "line\"", "lit", "pw9", "tri", "raw", "app:"] {
            assert!(!kept.contains(secret), "{secret} survived: {kept}");
        }
        for layout in [
            "# the showdown",
            "name = \"x\"   # a comment",
            "CLUSTER = \"2\"",
            "\"*/*\"",
        ] {
            assert!(kept.contains(layout), "{layout} lost: {kept}");
        }
        // The text rules catch a triple-quoted value too, for text that is not TOML.
        assert_eq!(
            text("password = \"\"\"a\nb\"\"\" ["),
            "password = \"\"\"<redacted>\"\"\" ["
        );
    }

    /// The names a secret goes by beyond `password` and `token`: a Redis `requirepass`, a
    /// signed URL's `sig`, a `jwt`, a `session`; and names that only look like them.
    #[test]
    fn secret_names_are_read_by_segment() {
        for name in [
            "pass",
            "DB_PASS",
            "passphrase",
            "requirepass",
            "--requirepass",
            "sig",
            "X-Amz-Signature",
            "jwt",
            "id_jwt",
            "session",
            "X-Session-Id",
            "PHPSESSID",
            "otp",
            "private_key",
        ] {
            assert!(is_secret_name(name), "{name} is a secret's name");
        }
        for name in [
            "bypass",
            "--bypass-cache",
            "compass",
            "signal",
            "design",
            "passenger",
            "CLUSTER",
            "DB_POOL",
            "key_id_file",
        ] {
            assert!(!is_secret_name(name), "{name} is not a secret's name");
        }
    }

    #[test]
    fn json_keys_in_free_text_lose_their_values() {
        assert_eq!(
            text(r#"answered {"user":"ann","password":"hunter2","age":3}"#),
            r#"answered {"user":"ann","password":"<redacted>","age":3}"#
        );
        assert_eq!(
            text(r#"{'token': 'a\'b', "pin": 1} and "pass" : 12345, done"#),
            r#"{'token': '<redacted>', "pin": 1} and "pass" : <redacted>, done"#
        );
        // An apostrophe in prose does not hide what follows it.
        assert_eq!(
            text(r#"don't: {"jwt":"eyJx"}"#),
            r#"don't: {"jwt":"<redacted>"}"#
        );
        assert_eq!(
            text(r#"{"session": {"id": 1}}"#),
            r#"{"session": {"id": 1}}"#
        );
    }

    #[test]
    fn a_password_with_a_slash_loses_all_of_it() {
        assert_eq!(
            text("postgres://app:pa/ss?w#rd@db:5432/runs"),
            "postgres://<redacted>@db:5432/runs"
        );
        assert_eq!(text("http://h:8080/users/@me"), "http://h:8080/users/@me");
        assert_eq!(text("http://h/a@b"), "http://h/a@b");
        assert_eq!(
            text("see postgres://u:p@h/d and http://x:y/z@w/"),
            "see postgres://<redacted>@h/d and http://<redacted>@w/"
        );
    }

    #[test]
    fn a_command_line_in_a_file_loses_its_flags_values() {
        let kept =
            toml_file("[[target]]\ncommand = [\"srv\", \"--token\", \"abc1\", \"-p\", \"80\"]\n");
        assert!(!kept.contains("abc1"), "{kept}");
        assert!(
            kept.contains("\"--token\", \"<redacted>\", \"-p\", \"80\""),
            "{kept}"
        );
        let mut config = serde_json::json!({"command": ["srv", "--requirepass", "abc2", "x"]});
        json(&mut config);
        assert_eq!(
            config,
            serde_json::json!({"command": ["srv", "--requirepass", "<redacted>", "x"]})
        );
    }

    /// Every form a secret was seen to escape in, fed through every writer that may meet it.
    fn forms(v: &str) -> Vec<(&'static str, Vec<String>)> {
        let argv = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let mut out = vec![
            ("a check's name", vec![text(&format!("GET /x?api_key={v}"))]),
            (
                "a target's command line",
                vec![
                    command_line_with(&argv(&["srv", "--token", v]), &ANY_PROGRAM).join(" "),
                    toml_file(&format!("command = [\"srv\", \"--token\", \"{v}\"]")),
                    {
                        let mut j = serde_json::json!({"command": ["srv", "--token", v]});
                        json(&mut j);
                        j.to_string()
                    },
                ],
            ),
            (
                "JSON in free text",
                vec![
                    text(&format!(r#"{{"password":"{v}"}}"#)),
                    text(&format!(r#"{{"password": {v}}}"#)),
                ],
            ),
            (
                "loadgen's --body and a query",
                vec![command_line(&argv(&[
                    "attack",
                    "--body",
                    &format!(r#"{{"password":"{v}"}}"#),
                    &format!("http://h/x?token={v}"),
                ]))
                .join(" ")],
            ),
            (
                "a password with a slash",
                vec![
                    text(&format!("postgres://app:{v}/{v}@db/x")),
                    command_line(&argv(&["--db", &format!("postgres://app:a/{v}@db/x")])).join(" "),
                ],
            ),
        ];
        for name in ["pass", "passphrase", "requirepass", "sig", "jwt", "session"] {
            out.push((
                "a secret's name",
                vec![
                    text(&format!("{name}={v}")),
                    text(&format!("/x?{name}={v}&a=1")),
                    env(name, v),
                    env(&name.to_uppercase(), v),
                    header(&format!("X-{name}: {v}")),
                    text(&format!("X-{name}: {v}")),
                    command_line(&argv(&[&format!("--{name}"), v])).join(" "),
                    command_line_with(&argv(&[&format!("--{name}={v}")]), &ANY_PROGRAM).join(" "),
                    toml_file(&format!("[env]\n{name} = \"{v}\"\n")),
                    text(&format!(r#"{{"{name}":"{v}"}}"#)),
                    {
                        let mut j = serde_json::json!({ name: v });
                        json(&mut j);
                        j.to_string()
                    },
                ],
            ));
        }
        out
    }

    proptest::proptest! {
        #[test]
        fn no_secret_form_survives_any_writer(v in "[A-Za-z0-9]{8,16}") {
            for (form, outputs) in forms(&v) {
                for out in outputs {
                    proptest::prop_assert!(!out.contains(&v), "{}: {} survived in {}", form, v, out);
                }
            }
        }

        #[test]
        fn no_text_makes_the_rules_panic(s in "\\PC*", t in ".*") {
            let _ = text(&s);
            let _ = header(&s);
            let _ = toml_file(&s);
            let _ = env(&t, &s);
            let _ = command_line(&[s.clone(), t.clone(), s.clone()]);
            let _ = is_secret_name(&s);
        }

        #[test]
        fn no_secret_value_survives_a_header_flag(v in "[a-zA-Z0-9]{6,20}", flag in 0usize..5) {
            let spelled = match flag {
                0 => vec!["-H".to_string(), format!("Authorization: Bearer {v}")],
                1 => vec![format!("-H=Authorization: Bearer {v}")],
                2 => vec![format!("-kHAuthorization: Bearer {v}")],
                3 => vec!["-kH".to_string(), format!("Cookie: {v}")],
                _ => vec![format!("--header=X-Api-Key: {v}")],
            };
            let kept = command_line(&spelled).join(" ");
            proptest::prop_assert!(!kept.contains(&v), "{} survived", kept);
        }
    }
}
