//! Where each page of the site lives, relative to its root. A run's id is a file name only
//! when it is one Showdown makes (a UUID); any other text becomes a slug with a hash, so that
//! nothing from a store leaves its folder.

use crate::figures::RunFigures;

/// A name for a file: lowercase letters, digits and dashes, then 128 bits of SHA-256 of the
/// full text, so that two names that differ only in punctuation get two files, and no name
/// from a store can be made to land on another's page (a 32-bit hash could be, by search).
pub fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
        if out.len() >= 48 {
            break;
        }
    }
    let trimmed = out.trim_end_matches('-');
    use sha2::Digest;
    let hash = sha2::Sha256::digest(text.as_bytes());
    format!(
        "{trimmed}-{}",
        hex::encode(hash.get(..16).unwrap_or_default())
    )
}

/// A run's page: its id as the file name when the id is one Showdown makes (a UUID), else a
/// slug of it, so that an id from a foreign store (`../../x`) never leaves `runs/`.
pub fn run_path(id: &str) -> String {
    let plain = !id.is_empty()
        && id.len() <= 64
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        && !id.starts_with('-');
    if plain {
        format!("runs/{id}.html")
    } else {
        format!("runs/{}.html", slug(id))
    }
}

pub fn group_path(group: &str) -> String {
    format!("groups/{}.html", slug(group))
}

/// The page of a run as figures have it: a merged run group's, or a run's.
pub fn page_of(run: &RunFigures) -> String {
    match &run.shard {
        Some(s) if s.group == run.id => group_path(&s.group),
        _ => run_path(&run.id),
    }
}

pub fn label_path(key: &str, value: &str) -> String {
    format!("labels/{}.html", slug(&format!("{key}={value}")))
}

pub fn comparison_path(title: &str) -> String {
    format!("compare/{}.html", slug(title))
}

/// A capacity search's page.
pub fn search_path(id: &str) -> String {
    format!("searches/{}.html", slug(id))
}

pub fn experiment_path(name: &str) -> String {
    format!("experiments/{}.html", slug(name))
}

/// An experiment's history across its sittings.
pub fn history_path(name: &str) -> String {
    format!("history/{}.html", slug(name))
}

/// The title of an experiment's automatic comparison.
pub fn experiment_comparison_title(experiment: &str) -> String {
    format!("experiment {experiment}")
}
