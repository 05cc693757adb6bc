//! A history in words, for a terminal, and in Markdown, for a CI job's summary or a PR.

use super::{Change, History, Series};

/// "2026-11-26 20:41 UTC".
pub fn when(ns: i64) -> String {
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_nanos(ns.max(0) as u64);
    let text = humantime::format_rfc3339_seconds(at).to_string();
    format!("{} UTC", text.get(..16).unwrap_or(&text).replace('T', " "))
}

impl History {
    /// How the changes were found, in one paragraph.
    pub fn method(&self) -> String {
        let n = self.series.len();
        let each = self.config.level / n.max(1) as f64;
        let least = if self.config.min_change > 0.0 {
            format!(
                "; a change smaller than {:.1} % is not called one",
                self.config.min_change * 100.0
            )
        } else {
            String::new()
        };
        let null = match (self.config.null, self.serial) {
            (super::divisive::Null::Normal, Some(s)) if s.rho > 0.0 => format!(
                "draws of normal sittings correlated {:.2} one to the next (the lag-1 correlation read within the series' segments, over {} sittings)",
                s.rho, s.sittings
            ),
            (super::divisive::Null::Normal, _) => "draws of normal sittings".to_string(),
            (super::divisive::Null::Permutation, _) => {
                "permutations of each segment's sittings".to_string()
            }
        };
        format!(
            "Change points by E-divisive means on each series' logarithm (Matteson and James 2014, \
             as Apache Otava finds them), each split held against {} {null} at {:.2} % ({:.0} % \
             over {n} series, Bonferroni), with at least {} sittings either side{least}. A change's \
             size is the ratio of the random-effects levels of the sittings either side of it, \
             with its 95 % interval (Student's t on the larger of the modified Hartung–Knapp error and the sittings' spread).",
            self.permutations,
            each * 100.0,
            self.config.level * 100.0,
            self.config.min_segment,
        )
    }

    /// The sitting `i` named for a reader: its revisions, else when it began.
    pub fn sitting_text(&self, i: usize) -> String {
        match self.sittings.get(i) {
            Some(s) if !s.revisions.is_empty() => {
                format!("#{} ({})", i + 1, s.revisions.join(", "))
            }
            Some(s) => format!("#{} ({})", i + 1, when(s.started_at_ns)),
            None => format!("#{}", i + 1),
        }
    }

    /// Where a change happened: "between sitting #5 (origin/main at 1a2b3c) and #6 (…)".
    pub fn between(&self, c: &Change) -> String {
        let side = |sitting: usize, revision: &Option<String>| match revision {
            Some(r) => format!("#{} ({r})", sitting + 1),
            None => self.sitting_text(sitting),
        };
        format!(
            "between sitting {} and {}",
            side(c.before_sitting, &c.before_revision),
            side(c.after_sitting, &c.after_revision)
        )
    }

    /// The history for a terminal.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        match (self.sittings.first(), self.sittings.last()) {
            (Some(first), Some(last)) => out.push_str(&format!(
                "History of {}: {} sittings, {} to {}.\n",
                self.experiment,
                self.sittings.len(),
                when(first.started_at_ns),
                when(last.started_at_ns)
            )),
            _ => out.push_str(&format!(
                "History of {}: no sitting kept yet.\n",
                self.experiment
            )),
        }
        if self.unplaced > 0 {
            out.push_str(&format!(
                "{} runs or searches of it are in no sitting (kept before sittings were labelled, \
                 with no revision label): not in the history.\n",
                self.unplaced
            ));
        }
        out.push_str(&self.method());
        out.push_str("\n\n");
        for s in &self.series {
            out.push_str(&self.series_text(s));
        }
        if self.sittings.iter().any(|s| s.host.is_some()) {
            out.push_str("\nThe host in each sitting (a change in every series at once, with one here, is the host's):\n");
            for (i, s) in self.sittings.iter().enumerate() {
                if let Some(h) = &s.host {
                    out.push_str(&format!("  {}: {}\n", self.sitting_text(i), h.text()));
                }
            }
        }
        out
    }

    fn series_text(&self, s: &Series) -> String {
        let mut out = format!(
            "{}: {} sittings, {}\n",
            s.key.text(),
            s.points.len(),
            match s.changes.len() {
                0 => "no change".to_string(),
                1 => "1 change".to_string(),
                n => format!("{n} changes"),
            }
        );
        if let Some(n) = &s.normalised {
            out.push_str(&format!("  {}\n", n.text()));
        }
        for c in &s.changes {
            out.push_str(&format!(
                "  {} {}: ×{:.3} ({:.3}–{:.3}), p = {:.4}\n",
                if c.worse { "worse " } else { "better" },
                self.between(c),
                c.ratio,
                c.low,
                c.high,
                c.p
            ));
        }
        if let Some(p) = &s.possible {
            let c = &p.change;
            out.push_str(&format!(
                "  possibly {} {}: ×{:.3} ({:.3}–{:.3}), p = {:.4}; {}\n",
                if c.worse { "worse" } else { "better" },
                self.between(c),
                c.ratio,
                c.low,
                c.high,
                c.p,
                confirm(p.more)
            ));
        }
        let unit = |v: f64| s.value_text(v);
        match s.level() {
            Some(super::Level {
                value: level,
                low,
                high,
                predict,
            }) => {
                let since = s.changes.last().map_or(String::new(), |c| {
                    format!(" since sitting #{}", c.after_sitting + 1)
                });
                out.push_str(&format!(
                    "  level{since}: {} ({}–{})",
                    unit(level),
                    unit(low),
                    unit(high)
                ));
                if let Some((lo, hi)) = predict {
                    out.push_str(&format!(
                        "; a new sitting falls within {}–{}",
                        unit(lo),
                        unit(hi)
                    ));
                }
                out.push('\n');
            }
            None => out.push_str("  too few sittings for a level\n"),
        }
        out
    }

    /// The history in Markdown.
    pub fn to_markdown(&self) -> String {
        let mut out = format!("### History of {}\n\n", md(&self.experiment));
        out.push_str(&format!(
            "{} sittings. {}\n\n",
            self.sittings.len(),
            self.method()
        ));
        out.push_str(&self.changes_markdown());
        out.push_str(&self.levels_markdown());
        out.push_str(&self.hosts_markdown());
        out
    }

    /// The change points of every series, confirmed and possible, as a Markdown table.
    fn changes_markdown(&self) -> String {
        let mut out = String::new();
        let changes: Vec<(&Series, &Change, Option<usize>)> = self
            .series
            .iter()
            .flat_map(|s| {
                let confirmed = s.changes.iter().map(move |c| (s, c, None));
                let possible = s.possible.iter().map(move |p| (s, &p.change, Some(p.more)));
                confirmed.chain(possible)
            })
            .collect();
        if changes.is_empty() {
            out.push_str("No change point in any series.\n\n");
        } else {
            out.push_str("| series | change | where | after ÷ before (95 %) | p |\n");
            out.push_str("|---|---|---|---|---|\n");
            for (s, c, more) in changes {
                let verdict = match (c.worse, more) {
                    (true, None) => "❌ worse".to_string(),
                    (false, None) => "✅ better".to_string(),
                    (true, Some(more)) => format!("⚠️ possibly worse: {}", confirm(more)),
                    (false, Some(more)) => format!("possibly better: {}", confirm(more)),
                };
                out.push_str(&format!(
                    "| {} | {} | {} | ×{:.3} ({:.3}–{:.3}) | {:.4} |\n",
                    md(&s.key.text()),
                    verdict,
                    md(&self.between(c)),
                    c.ratio,
                    c.low,
                    c.high,
                    c.p
                ));
            }
            out.push('\n');
        }
        out
    }

    /// Every series' level now and what a new sitting would read, as a Markdown table.
    fn levels_markdown(&self) -> String {
        let mut out = String::new();
        out.push_str(
            "| series | sittings | level now (95 %) | a new sitting (95 %) | across sittings |\n",
        );
        out.push_str("|---|---|---|---|---|\n");
        for s in &self.series {
            let unit = |v: f64| s.value_text(v);
            let (level, predict) = match s.level() {
                Some(l) => (
                    format!("{} ({}–{})", unit(l.value), unit(l.low), unit(l.high)),
                    l.predict
                        .map_or("—".into(), |(a, b)| format!("{}–{}", unit(a), unit(b))),
                ),
                None => ("—".into(), "—".into()),
            };
            let across = s
                .normalised
                .as_ref()
                .map_or("raw".to_string(), |n| md(&n.text()));
            out.push_str(&format!(
                "| {} | {} | {level} | {predict} | {across} |\n",
                md(&s.key.text()),
                s.points.len()
            ));
        }
        out
    }

    /// The host in each sitting, folded away (nothing where no sitting read its host).
    fn hosts_markdown(&self) -> String {
        let mut out = String::new();
        if self.sittings.iter().any(|s| s.host.is_some()) {
            out.push_str("\n<details><summary>The host in each sitting</summary>\n\n");
            out.push_str(
                "| sitting | steal | clock | a load from memory | over |\n|---|---|---|---|---|\n",
            );
            let or_dash = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map_or("—".into(), f);
            for (i, s) in self.sittings.iter().enumerate() {
                if let Some(h) = &s.host {
                    out.push_str(&format!(
                        "| {} | {} | {} | {} | {} |\n",
                        md(&self.sitting_text(i)),
                        or_dash(h.steal_pct, &|v| format!("{v:.1} %")),
                        or_dash(h.cpu_mhz, &|v| format!("{v:.0} MHz")),
                        or_dash(h.chase_ns, &|v| format!("{v:.0} ns")),
                        h.over
                    ));
                }
            }
            out.push_str("\n</details>\n");
        }
        out
    }
}

/// "needs 2 more sittings to confirm".
fn confirm(more: usize) -> String {
    match more {
        1 => "needs 1 more sitting to confirm".to_string(),
        n => format!("needs {n} more sittings to confirm"),
    }
}

/// Text from the store (a target's name, a revision) safe in a Markdown table cell: one line,
/// no control character, and nothing Markdown, HTML or the host's own links would read as
/// markup (the comparison's escaping, `ab::text`).
fn md(text: &str) -> String {
    crate::ab::text::markdown_literal(text)
}
