//! A gate in words: for a terminal, a pull request's Markdown summary, JUnit XML.
//!
//! A gate's names, refs, load and pages come from a user's experiment file. In the Markdown
//! each is set as literal text ([`markdown_literal`]), so a name cannot add a link, an image,
//! HTML, a mention, a line or a table cell; in the XML each is escaped ([`xml`]) so that the
//! document is well-formed whatever the name holds.

use std::borrow::Cow;
use std::fmt::Write;

use super::{Gate, Judged, Measure, Outcome, Processes, Verdict};

impl Outcome {
    /// "pass", "regression", "inconclusive".
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Regression => "regression",
            Outcome::Inconclusive => "inconclusive",
        }
    }
}

impl Judged {
    /// "regression: 1.083× (95 % interval 1.061–1.105), beyond the 5 % allowed".
    pub fn verdict_text(&self) -> String {
        let said = self.said();
        if self.note.is_empty() {
            said
        } else {
            format!("{said}; {}", self.note)
        }
    }

    /// The verdict in words, without what was looked into beside it.
    fn said(&self) -> String {
        let change = self.change.as_ref().map(|c| c.text()).unwrap_or_default();
        let allowed = self
            .allowed
            .map(|a| format!("{:.0} %", a * 100.0))
            .unwrap_or_default();
        match &self.verdict {
            Verdict::Regression => format!("regression: {change}, beyond the {allowed} allowed"),
            Verdict::Improvement => format!("improvement: {change}"),
            Verdict::Within => format!("a change within the {allowed} allowed: {change}"),
            Verdict::NoChange => match &self.change {
                Some(c) => format!(
                    "no change detected (could see ≥ {:.1} %): {change}",
                    c.could_see * 100.0
                ),
                None => "no change detected".into(),
            },
            Verdict::TooNoisy { why } => format!("too noisy to tell: {change}; {why}"),
            Verdict::Changed => format!("changed (not gated): {change}"),
            Verdict::Unmeasured { why } => format!("not measured: {why}"),
        }
    }

    /// The change allowed: "+5 %", a capacity's "−5 %", or "not gated".
    pub fn allowed_text(&self) -> String {
        match self.allowed {
            Some(a) if self.measure == Measure::Capacity => format!("−{:.0} %", a * 100.0),
            Some(a) => format!("+{:.0} %", a * 100.0),
            None => "not gated".into(),
        }
    }

    /// The baseline's and the candidate's typical values in the measure's unit ("–" where none).
    pub fn values(&self) -> (String, String) {
        let v = |x: Option<f64>| x.map_or("–".into(), |x| self.measure.value_text(x));
        (v(self.baseline), v(self.candidate))
    }
}

/// How text from a user's file (a build's name, its ref, the load, where the pages are) is set
/// among the gate's own words.
#[derive(Debug, Clone, Copy)]
enum Form {
    /// As it is: for a terminal, a page that escapes what it draws, or XML escaped whole.
    Plain,
    /// As literal Markdown text ([`markdown_literal`]).
    Markdown,
}

impl Form {
    fn field(self, text: &str) -> Cow<'_, str> {
        match self {
            Form::Plain => Cow::Borrowed(text),
            Form::Markdown => Cow::Owned(markdown_literal(text)),
        }
    }
}

impl Gate {
    /// A build's name, with what it was built from where its target had a `ref`
    /// ("main (origin/main at 1a2b3c4d5e6f)").
    pub fn named(&self, name: &str) -> String {
        self.named_as(name, Form::Plain)
    }

    fn named_as(&self, name: &str, form: Form) -> String {
        let said = form.field(name);
        match self.revisions.get(name) {
            Some(revision) => format!("{said} ({})", form.field(revision)),
            None => said.into_owned(),
        }
    }

    /// The first line: "regression: beta against main, 8 rounds at …".
    pub fn headline(&self) -> String {
        self.headline_as(Form::Plain)
    }

    fn headline_as(&self, form: Form) -> String {
        if self.load.is_empty() {
            return format!(
                "{}: {} against {}: no round ran both (the failed cells say why)",
                self.outcome().as_str(),
                self.named_as(&self.candidate, form),
                self.named_as(&self.baseline, form)
            );
        }
        let processes = match self.processes {
            Processes::Fresh => "each run a fresh process",
            Processes::Kept => "each build one process kept up",
        };
        format!(
            "{}: {} against {}, {} interleaved rounds of {} ({processes})",
            self.outcome().as_str(),
            self.named_as(&self.candidate, form),
            self.named_as(&self.baseline, form),
            self.rounds,
            form.field(&self.load)
        )
    }

    /// Every measure on a line of its own, for a terminal.
    pub fn text(&self) -> String {
        let mut out = self.headline();
        out.push('\n');
        if let Some(stopped) = &self.stopped {
            let _ = writeln!(out, "  {stopped}");
        }
        for j in &self.measures {
            let (a, b) = j.values();
            let _ = writeln!(
                out,
                "  {:<18} {a} → {b}: {}",
                j.measure.title(),
                j.verdict_text()
            );
        }
        if let Some(control) = &self.control {
            let _ = writeln!(out, "  {}", self.control_line(control, Form::Plain));
        }
        for line in self.by_function() {
            let _ = writeln!(out, "  {line}");
        }
        for w in &self.warnings {
            let _ = writeln!(out, "  {w}");
        }
        out
    }

    /// Where the CPU per request went, function by function, when the runs were profiled: the
    /// candidate's sentence, then the A/A control's.
    pub fn by_function(&self) -> Vec<String> {
        let Some(f) = &self.functions else {
            return Vec::new();
        };
        let mut lines = vec![format!(
            "CPU per request by function: {}",
            f.candidate.sentence()
        )];
        if let Some(control) = &f.control {
            lines.push(format!("A/A control by function: {}", control.sentence()));
        }
        lines
    }

    fn control_line(&self, control: &str, form: Form) -> String {
        let read: Vec<String> = self
            .measures
            .iter()
            .filter_map(|j| Some(format!("{} {}", j.measure, j.control.as_ref()?.text())))
            .collect();
        format!(
            "A/A control ({} against {}): {}",
            self.named_as(control, form),
            form.field(&self.baseline),
            if read.is_empty() {
                "no measure held".into()
            } else {
                read.join("; ")
            }
        )
    }

    /// A summary for a pull request's comment or `$GITHUB_STEP_SUMMARY`.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let mark = match self.outcome() {
            Outcome::Pass => "✅",
            Outcome::Regression => "❌",
            Outcome::Inconclusive => "⚠️",
        };
        let _ = writeln!(
            out,
            "### {mark} Showdown: {}\n",
            self.headline_as(Form::Markdown)
        );
        if let Some(stopped) = &self.stopped {
            let _ = writeln!(out, "{}\n", markdown_literal(stopped));
        }
        out.push_str(
            "| measure | baseline | candidate | candidate ÷ baseline (95 % interval) | allowed | verdict |\n",
        );
        out.push_str("|---|---:|---:|---|---:|---|\n");
        for j in &self.measures {
            let (a, b) = j.values();
            let ratio = j.change.as_ref().map_or("–".into(), |c| {
                format!("{:.3}× ({:.3}–{:.3})", c.ratio, c.low, c.high)
            });
            let allowed = j.allowed_text();
            // A verdict's reason can name a build (a search not bounded by its server).
            let _ = writeln!(
                out,
                "| {} | {a} | {b} | {ratio} | {allowed} | {} |",
                j.measure.title(),
                markdown_literal(&j.verdict_text())
            );
        }
        out.push('\n');
        if let Some(control) = &self.control {
            let _ = writeln!(out, "{}\n", self.control_line(control, Form::Markdown));
        }
        // Function names are the target's symbols: literal text, like every name from outside.
        for line in self.by_function() {
            let _ = writeln!(out, "{}\n", markdown_literal(&line));
        }
        // A build's name is the user's: literal text.
        for w in &self.warnings {
            let _ = writeln!(out, "⚠️ {}\n", markdown_literal(w));
        }
        let _ = writeln!(out, "{}", self.method());
        if let Some(pages) = &self.pages {
            let _ = writeln!(out, "\nThe runs, drawn: {}", markdown_literal(pages));
        }
        out
    }

    /// How the rounds ran and what each ratio is, in a sentence or two.
    pub fn method(&self) -> String {
        if self.measures.iter().any(|j| j.measure == Measure::Capacity) {
            return "Each round ran one step of every build's capacity search, in a random order, each build one process kept up through the rounds; a capacity is the fit of all of its search's steps, and the ratio's 95 % interval the profile likelihood of the ratio over the rounds. \"Could see\" is read off that interval's width.".into();
        }
        let processes = match self.processes {
            Processes::Fresh => "each run a process of its own, started and warmed for it",
            Processes::Kept => "each build one process, kept up through the rounds",
        };
        let interval = match self.reading {
            super::Reading::Once => "with Student's t over rounds",
            super::Reading::Sequential => "with a 95 % confidence sequence over rounds (read after every round, it holds at every look at once: Lai's, for normal log-ratios of unknown spread)",
        };
        format!("Each round ran both builds once, in a random order, at the same rate ({processes}); each ratio is the geometric mean of the rounds' ratios {interval}. \"Could see\" is the smallest change these rounds would show 80 % of the time.")
    }

    fn failures(&self) -> (usize, usize) {
        let gated = || self.gated();
        (
            gated().filter(|j| j.verdict.fails()).count(),
            gated().filter(|j| j.verdict.undecided()).count(),
        )
    }

    /// This gate's `<testsuite>`: a test case per measure, a gated regression a failure, a
    /// gated undecided one skipped with its reason, the others passing with their figures.
    fn junit_suite(&self, out: &mut String) {
        let cases: Vec<&Judged> = self.measures.iter().collect();
        let (failures, skipped) = self.failures();
        let suite = format!(
            "showdown compare {} against {}: {}",
            self.named(&self.candidate),
            self.named(&self.baseline),
            self.load
        );
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" skipped=\"{skipped}\">",
            xml(&suite),
            cases.len()
        );
        for j in cases {
            let _ = write!(
                out,
                "    <testcase classname=\"showdown.compare\" name=\"{}\">",
                xml(j.measure.title())
            );
            let mut said = j.verdict_text();
            if j.measure == Measure::Cpu {
                if let Some(f) = &self.functions {
                    said = format!("{said}; by function: {}", f.candidate.sentence());
                }
            }
            let text = xml(&said);
            if j.allowed.is_some() && j.verdict.fails() {
                let _ = write!(out, "<failure message=\"{text}\">{text}</failure>");
            } else if j.allowed.is_some() && j.verdict.undecided() {
                let _ = write!(out, "<skipped message=\"{text}\"/>");
            } else {
                let _ = write!(out, "<system-out>{text}</system-out>");
            }
            out.push_str("</testcase>\n");
        }
        out.push_str("  </testsuite>\n");
    }
}

/// JUnit XML of `gates` (one suite each, a setting's comparison), for CI systems that read it.
pub fn junit(gates: &[Gate]) -> String {
    let tests: usize = gates.iter().map(|g| g.measures.len()).sum();
    let (failures, skipped) = gates
        .iter()
        .map(Gate::failures)
        .fold((0, 0), |(f, s), (a, b)| (f + a, s + b));
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"showdown\" tests=\"{tests}\" failures=\"{failures}\" skipped=\"{skipped}\">"
    );
    for gate in gates {
        gate.junit_suite(&mut out);
    }
    out.push_str("</testsuites>\n");
    out
}

/// Text from a user's file as Markdown that GitHub and GitLab show as it is, in a line or a
/// table cell:
/// - the punctuation that can open or close an inline construct (emphasis, a code span, a link
///   or image, an entity, a table's cell, GitHub's `$` maths) is backslash-escaped, and `<`
///   and `>` (HTML, an autolink) are written `&lt;` and `&gt;`, so that no tag is in the text.
///   `-`, `+`, `.` and `=` are not: they mean something only at the start of a line (a list, a
///   heading's underline), and a field never starts one, its line's start being the gate's own
///   words and its own line breaks escaped; so `go-1.2` reads as it is.
/// - a reference's sigil (`@user`, `#12`, GitLab's `!12`, `~label`, `%milestone`, `$12`,
///   `&12`) before what would complete it, `://` and `www.` are broken by a zero-width joiner
///   (U+200D): both hosts find those in the rendered text, where a backslash is already gone.
/// - a control character (a line break among them) or an invisible one (a bidirectional
///   override, a zero-width space) is shown as its escape, `\u{1b}`.
///
/// An emoji's `:shortcode:` is left to be drawn.
pub(crate) fn markdown_literal(text: &str) -> String {
    const ESCAPED: &str = "\\`*_{}[]()#!|~&$";
    const JOINER: char = '\u{200D}';
    let push = |out: &mut String, c: char| match c {
        '<' => out.push_str("&lt;"),
        '>' => out.push_str("&gt;"),
        c => {
            if ESCAPED.contains(c) {
                out.push('\\');
            }
            out.push(c);
        }
    };
    let mut out = String::with_capacity(text.len());
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if unseen(c) {
            visible(c).chars().for_each(|e| push(&mut out, e));
            continue;
        }
        push(&mut out, c);
        let next = chars.peek().map(|&(_, n)| n);
        let broken = match c {
            '@' | '#' | '!' | '~' | '%' | '$' | '&' => {
                next.is_some_and(|n| n.is_alphanumeric() || n == '_' || n == '"')
            }
            ':' => next == Some('/'),
            '.' => {
                i >= 3
                    && text
                        .get(i - 3..i)
                        .is_some_and(|w| w.eq_ignore_ascii_case("www"))
            }
            _ => false,
        };
        if broken {
            out.push(JOINER);
        }
    }
    out
}

/// Whether `c` would not be seen as itself: a control character (C0, DEL, C1), a zero-width
/// or bidirectional formatting one, a line or paragraph separator, or a noncharacter XML 1.0
/// refuses (U+FFFE, U+FFFF).
fn unseen(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{200B}'..='\u{200F}'
                | '\u{2028}'..='\u{202E}'
                | '\u{2060}'..='\u{2069}'
                | '\u{FEFF}'
                | '\u{FFFE}'
                | '\u{FFFF}'
        )
}

/// An unseen character's escape, as Rust writes it: `\u{1b}`.
fn visible(c: char) -> String {
    format!("\\u{{{:x}}}", u32::from(c))
}

/// Text escaped for an XML 1.0 attribute or element, well-formed whatever it holds: the markup
/// characters as entities; a tab, line feed or carriage return as a character reference, so
/// that an attribute's normalisation keeps it; any other character XML refuses (or that would
/// not be seen) as its escape, `\u{1b}`.
fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => {
                let _ = write!(out, "&#{};", u32::from(c));
            }
            c if unseen(c) => out.push_str(&visible(c)),
            c => out.push(c),
        }
    }
    out
}
