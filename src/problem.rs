//! A problem found in something the user (or a model) wrote: what is wrong, how bad, where, and
//! what to do. One type for all of them — the agent loader, lint, config, the contract checker
//! and the event log — so a finding reads the same whichever part of switchboard made it.
//!
//! Every problem has a stable `code` (`family/what`, e.g. `agent/unknown-key`,
//! `excerpt/mismatch`); docs/problems.md lists each one with what to do about it. Never rename a
//! code: prompts, tests and users' scripts match on them.
//!
//! Positions come from [`crate::markdown::LineIndex`] (byte offset → 1-based line, column in
//! characters), so "line 12, column 5" means the same thing everywhere.

use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::fmt;
use std::ops::Range;

use crate::markdown::LineIndex;

/// How bad a problem is: `note < warning < error`. Only errors fail a lint run or make an answer
/// non-conformant.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Note,
    Warning,
    /// The default when a stored problem names none: the event log of earlier versions kept
    /// only errors.
    #[default]
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Note => "note",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Real lines of a cited file offered for a quote (an Excerpt) that does not match its citation or
/// is too long: a range that would pass as it stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ActualLines {
    /// Where they come from, as `path:N-M`.
    pub from: String,
    /// The lines themselves, `\n`-separated.
    pub lines: String,
}

/// One problem at one place.
///
/// The serialized form (field order included) is what `lint --format json` prints and what the
/// event log stores; fields that are absent are left out. Older event logs, whose records had
/// `rule`, `message`, `line` and `column` only, still load: `rule` is read as `code` and the
/// severity defaults to error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Problem {
    #[serde(default)]
    pub severity: Severity,
    /// Stable code, e.g. `agent/unknown-key`; listed in docs/problems.md.
    #[serde(alias = "rule")]
    pub code: Cow<'static, str>,
    /// What is wrong, in one sentence.
    pub message: String,
    /// Path relative to the project root, `/`-separated; empty for text that is not a file (an
    /// answer checked in memory).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub file: String,
    /// 1-based; 0 when the problem concerns the whole file.
    #[serde(default)]
    pub line: usize,
    /// 1-based, in characters.
    #[serde(default)]
    pub column: usize,
    /// The offending source line, for rendering without the whole text at hand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_line: Option<String>,
    /// What to do about it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
    /// Byte range in the checked text, for problems found by checking a text (contract rules).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span: Option<Range<usize>>,
    /// For a quote that does not match its source: the lines that are really there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actual: Option<ActualLines>,
}

impl Problem {
    /// A problem in `file` concerning the whole file; [`Problem::at`] or
    /// [`Problem::at_line_of`] place it.
    pub fn new(
        severity: Severity,
        code: impl Into<Cow<'static, str>>,
        file: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Problem {
            severity,
            code: code.into(),
            message: message.into(),
            file: file.into(),
            line: 0,
            column: 0,
            source_line: None,
            help: None,
            span: None,
            actual: None,
        }
    }

    /// A problem at byte range `span` of a checked text; [`locate`] fills in line and column
    /// once the text's problems are all known.
    pub fn in_text(
        severity: Severity,
        code: impl Into<Cow<'static, str>>,
        span: Range<usize>,
        message: impl Into<String>,
    ) -> Self {
        let mut p = Problem::new(severity, code, String::new(), message);
        p.span = Some(span);
        p
    }

    pub fn at(mut self, line: usize, column: usize) -> Self {
        self.line = line;
        self.column = column;
        self
    }

    /// Points at `line` and remembers its text so renderers can show it.
    pub fn at_line_of(mut self, text: &str, line: usize, column: usize) -> Self {
        self.line = line;
        self.column = column;
        self.source_line = text
            .lines()
            .nth(line.saturating_sub(1))
            .map(|l| l.strip_suffix('\r').unwrap_or(l).to_string());
        self
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// Attaches the lines really at `from` (`path:N-M`), offered for a quote that does not match.
    pub fn with_actual(mut self, from: impl Into<String>, lines: impl Into<String>) -> Self {
        self.actual = Some(ActualLines {
            from: from.into(),
            lines: lines.into(),
        });
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// `file:line:col`, or just `file` when the problem has no line.
    pub fn location(&self) -> String {
        if self.line == 0 {
            self.file.clone()
        } else {
            format!("{}:{}:{}", self.file, self.line, self.column.max(1))
        }
    }
}

impl fmt::Display for Problem {
    /// The compiler-like plain rendering: header, location, source line with a caret, help.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}[{}]: {}", self.severity, self.code, self.message)?;
        write!(f, "  --> {}", self.location())?;
        if let Some(src) = &self.source_line {
            let gutter = self.line.to_string();
            let pad = " ".repeat(gutter.len());
            write!(f, "\n{pad} |\n{gutter} | {src}\n{pad} | ")?;
            write!(f, "{}^", " ".repeat(self.column.saturating_sub(1)))?;
        }
        if let Some(help) = &self.help {
            write!(f, "\n  = help: {help}")?;
        }
        Ok(())
    }
}

/// Clamps the spans of problems found in `text` onto char boundaries and fills in their line
/// and column. Problems without a span are left as they are.
pub fn locate(text: &str, problems: &mut [Problem]) {
    if problems.iter().all(|p| p.span.is_none()) {
        return;
    }
    let index = LineIndex::new(text);
    for p in problems {
        let Some(span) = &p.span else { continue };
        let start = floor_boundary(text, span.start);
        let end = floor_boundary(text, span.end.max(start));
        p.span = Some(start..end);
        let (line, column) = index.line_col(text, start);
        p.line = line;
        p.column = column;
    }
}

/// The largest char boundary of `text` at or below `at`.
pub(crate) fn floor_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// Edit distance counting a swap of neighbours as one edit (optimal string alignment), since
/// `mdoe` for `mode` is the commonest typo in keys.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[a.len()][b.len()]
}

/// The candidate nearest to `word`, if it is near enough to be a plausible typo.
pub fn nearest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let lower = word.to_ascii_lowercase();
    candidates
        .into_iter()
        .map(|c| (edit_distance(&lower, &c.to_ascii_lowercase()), c))
        .filter(|(d, c)| *d <= (c.len().max(word.len()) / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_near_names_only() {
        let known = ["permission", "description", "mode"];
        assert_eq!(nearest("permissions", known), Some("permission"));
        assert_eq!(nearest("descripton", known), Some("description"));
        assert_eq!(nearest("zzz", known), None);
    }

    #[test]
    fn renders_like_a_compiler() {
        let d = Problem::new(
            Severity::Warning,
            "agent/unknown-key",
            "agent/a.md",
            "unknown key",
        )
        .at_line_of("---\npermissions: {}\n", 2, 1)
        .with_help("did you mean `permission`?");
        let s = d.to_string();
        assert!(s.contains("warning[agent/unknown-key]"));
        assert!(s.contains("--> agent/a.md:2:1"));
        assert!(s.contains("2 | permissions: {}"));
    }

    #[test]
    fn severities_order_note_warning_error() {
        assert!(Severity::Note < Severity::Warning && Severity::Warning < Severity::Error);
    }

    #[test]
    fn locate_clamps_to_boundaries() {
        let text = "ab\néx";
        let mut v = [Problem::in_text(
            Severity::Error,
            "envelope/tags",
            4..99,
            "x",
        )];
        locate(text, &mut v);
        assert_eq!(v[0].span, Some(3..6));
        assert_eq!((v[0].line, v[0].column), (2, 1));
    }

    #[test]
    fn a_file_problem_serializes_with_the_lint_keys_only() {
        let p = Problem::new(Severity::Error, "agent/yaml", "agent/a.md", "bad").at(3, 4);
        assert_eq!(
            serde_json::to_string(&p).unwrap(),
            r#"{"severity":"error","code":"agent/yaml","message":"bad","file":"agent/a.md","line":3,"column":4}"#
        );
    }

    #[test]
    fn old_event_log_records_still_load() {
        let old = r#"{"rule":"excerpt/mismatch","message":"wrong lines","line":4,"column":1}"#;
        let p: Problem = serde_json::from_str(old).unwrap();
        assert_eq!(p.code, "excerpt/mismatch");
        assert_eq!(p.severity, Severity::Error);
        assert_eq!((p.line, p.column), (4, 1));
        assert_eq!(p.file, "");
        // And a record written now reads back as the same problem.
        let p = Problem::in_text(Severity::Warning, "envelope/tags", 1..2, "m")
            .with_actual("a.md:1-2", "x\ny")
            .with_help("h");
        let back: Problem = serde_json::from_str(&serde_json::to_string(&p).unwrap()).unwrap();
        assert_eq!(back, p);
    }
}
