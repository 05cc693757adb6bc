//! Per-request values in bodies and URLs, compiled once and rendered per request.
//!
//! A template is text with placeholders in double braces:
//!
//! | placeholder   | becomes                                                   |
//! |---------------|-----------------------------------------------------------|
//! | `{{seq}}`     | the request's sequence number (0, 1, 2, … unique in a run) |
//! | `{{uuid}}`    | a random version-4 UUID, e.g. `0b9e…-4…`                   |
//! | `{{hex:N}}`   | `N` random lowercase hex digits (1 ≤ N ≤ 4096)             |
//! | `{{unix}}`    | the current Unix time in seconds                          |
//! | `{{unix_ms}}` | the current Unix time in milliseconds                     |
//!
//! so that `{"email":"user{{seq}}@example.com","password":"{{hex:16}}"}` creates a new user on
//! every request. Text without placeholders is sent as is, without a copy. The template is parsed
//! when the attack is set up; rendering only appends bytes.

use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::{BufMut, Bytes, BytesMut};
use rand::Rng;
use thiserror::Error;

/// Why a template could not be compiled.
#[derive(Debug, Error, PartialEq)]
pub enum TemplateError {
    #[error(
        "unknown placeholder {{{{{0}}}}}: use one of {{{{seq}}}}, {{{{uuid}}}}, {{{{hex:N}}}}, \
         {{{{unix}}}}, {{{{unix_ms}}}}"
    )]
    Unknown(String),
    #[error("placeholder {{{{{0}}}}} needs a length from 1 to 4096, e.g. {{{{hex:16}}}}")]
    BadHexLength(String),
    #[error("a placeholder opened with {{{{ is not closed with }}}}")]
    Unclosed,
}

#[derive(Debug, Clone, PartialEq)]
enum Part {
    Literal(Bytes),
    Seq,
    Uuid,
    Hex(usize),
    Unix,
    UnixMs,
}

/// A compiled template. Cheap to clone (literals are shared).
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    parts: Vec<Part>,
    /// Bytes a rendering needs at most, to allocate once per request.
    capacity: usize,
}

const MAX_HEX: usize = 4096;

impl Template {
    /// Parses `source`, or names the placeholder that is wrong.
    pub fn compile(source: &str) -> Result<Self, TemplateError> {
        let mut parts = Vec::new();
        let mut rest = source;
        let mut literal = String::new();
        while let Some(open) = rest.find("{{") {
            literal.push_str(&rest[..open]);
            let after = &rest[open + 2..];
            let close = after.find("}}").ok_or(TemplateError::Unclosed)?;
            let name = after[..close].trim();
            let part = match name {
                "seq" => Part::Seq,
                "uuid" => Part::Uuid,
                "unix" => Part::Unix,
                "unix_ms" => Part::UnixMs,
                _ => match name.strip_prefix("hex:") {
                    Some(n) => match n.trim().parse::<usize>() {
                        Ok(n) if (1..=MAX_HEX).contains(&n) => Part::Hex(n),
                        _ => return Err(TemplateError::BadHexLength(name.to_string())),
                    },
                    None => return Err(TemplateError::Unknown(name.to_string())),
                },
            };
            if !literal.is_empty() {
                parts.push(Part::Literal(Bytes::from(std::mem::take(&mut literal))));
            }
            parts.push(part);
            rest = &after[close + 2..];
        }
        literal.push_str(rest);
        if !literal.is_empty() {
            parts.push(Part::Literal(Bytes::from(literal)));
        }
        let capacity = parts
            .iter()
            .map(|p| match p {
                Part::Literal(b) => b.len(),
                Part::Seq | Part::Unix | Part::UnixMs => 20,
                Part::Uuid => uuid::fmt::Hyphenated::LENGTH,
                Part::Hex(n) => *n,
            })
            .sum();
        Ok(Template { parts, capacity })
    }

    /// The text itself when it has no placeholders: it can then be sent without rendering.
    pub fn as_static(&self) -> Option<Bytes> {
        match self.parts.as_slice() {
            [] => Some(Bytes::new()),
            [Part::Literal(b)] => Some(b.clone()),
            _ => None,
        }
    }

    /// Renders the template for request number `seq`.
    pub fn render(&self, seq: u64, rng: &mut impl Rng) -> Bytes {
        if let Some(fixed) = self.as_static() {
            return fixed;
        }
        let mut out = BytesMut::with_capacity(self.capacity);
        for part in &self.parts {
            match part {
                Part::Literal(b) => out.put_slice(b),
                Part::Seq => write_number(&mut out, seq),
                Part::Uuid => {
                    let mut random = [0u8; 16];
                    rng.fill_bytes(&mut random);
                    let id = uuid::Builder::from_random_bytes(random).into_uuid();
                    let mut text = [0u8; uuid::fmt::Hyphenated::LENGTH];
                    out.put_slice(id.hyphenated().encode_lower(&mut text).as_bytes());
                }
                Part::Hex(n) => {
                    let mut random = [0u8; MAX_HEX / 2 + 1];
                    let bytes = &mut random[..n.div_ceil(2)];
                    rng.fill_bytes(bytes);
                    let mut text = [0u8; MAX_HEX + 2];
                    let text = &mut text[..bytes.len() * 2];
                    // Cannot fail: the output slice is exactly twice the input.
                    if hex::encode_to_slice(bytes, text).is_ok() {
                        out.put_slice(&text[..*n]);
                    }
                }
                Part::Unix => write_number(&mut out, unix_time().as_secs()),
                Part::UnixMs => write_number(&mut out, unix_time().as_millis() as u64),
            }
        }
        out.freeze()
    }
}

fn unix_time() -> std::time::Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

fn write_number(out: &mut BytesMut, n: u64) {
    // Writing to a BytesMut cannot fail.
    let _ = write!(out, "{n}");
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    use super::*;

    fn rng() -> SmallRng {
        SmallRng::seed_from_u64(7)
    }

    #[test]
    fn text_without_placeholders_is_shared_not_copied() {
        let t = Template::compile(r#"{"a":{"b":1}}"#).unwrap();
        let fixed = t.as_static().unwrap();
        assert_eq!(&fixed[..], br#"{"a":{"b":1}}"#);
        assert_eq!(t.render(5, &mut rng()).as_ptr(), fixed.as_ptr());
    }

    #[test]
    fn sequence_numbers_are_substituted() {
        let t = Template::compile("user{{seq}}@x.io/{{ seq }}").unwrap();
        assert_eq!(&t.render(42, &mut rng())[..], b"user42@x.io/42");
    }

    #[test]
    fn uuids_are_version_4_and_unique() {
        let t = Template::compile("{{uuid}}").unwrap();
        let mut rng = rng();
        let mut seen = HashSet::new();
        for i in 0..10_000 {
            let text = String::from_utf8(t.render(i, &mut rng).to_vec()).unwrap();
            let id = uuid::Uuid::parse_str(&text).unwrap();
            assert_eq!(id.get_version_num(), 4);
            assert!(seen.insert(text), "duplicate uuid at {i}");
        }
    }

    #[test]
    fn hex_has_the_requested_length_and_alphabet() {
        for n in [1usize, 2, 7, 16, 33, 4096] {
            let t = Template::compile(&format!("<{{{{hex:{n}}}}}>")).unwrap();
            let out = t.render(0, &mut rng());
            assert_eq!(out.len(), n + 2);
            assert!(out[1..=n]
                .iter()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        }
    }

    #[test]
    fn unix_time_is_now() {
        let t = Template::compile("{{unix}} {{unix_ms}}").unwrap();
        let out = String::from_utf8(t.render(0, &mut rng()).to_vec()).unwrap();
        let (secs, millis) = out.split_once(' ').unwrap();
        let now = unix_time().as_secs();
        let secs: u64 = secs.parse().unwrap();
        let millis: u64 = millis.parse().unwrap();
        assert!(secs.abs_diff(now) <= 1);
        assert!((millis / 1000).abs_diff(now) <= 1);
    }

    #[test]
    fn mistakes_name_the_placeholder_and_the_fix() {
        let e = Template::compile("{{sequence}}").unwrap_err();
        assert_eq!(e, TemplateError::Unknown("sequence".into()));
        assert!(e.to_string().contains("{{sequence}}") && e.to_string().contains("{{seq}}"));
        assert_eq!(
            Template::compile("{{hex:0}}"),
            Err(TemplateError::BadHexLength("hex:0".into()))
        );
        assert_eq!(
            Template::compile("{{hex:abc}}"),
            Err(TemplateError::BadHexLength("hex:abc".into()))
        );
        assert_eq!(Template::compile("a {{seq"), Err(TemplateError::Unclosed));
    }
}
