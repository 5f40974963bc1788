//! Problems found in files the user wrote, with where they are and what to do.
//!
//! The loader and lint produce these; the CLI renders them (human, JSON, SARIF). Keeping one type
//! means a problem found while loading looks the same as one lint finds.

use serde::Serialize;
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Note,
    Warning,
    Error,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Note => "note",
            Severity::Warning => "warning",
            Severity::Error => "error",
        })
    }
}

/// One problem at one place.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    pub severity: Severity,
    /// Stable code, e.g. `agent/unknown-key`; documented in README's lint table.
    pub code: &'static str,
    pub message: String,
    /// Path relative to the project root, `/`-separated.
    pub file: String,
    /// 1-based; 0 when the problem concerns the whole file.
    pub line: usize,
    /// 1-based, in characters.
    pub column: usize,
    /// The offending source line, for rendering.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_line: Option<String>,
    /// What to do about it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
}

impl Diagnostic {
    pub fn new(
        severity: Severity,
        code: &'static str,
        file: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Diagnostic {
            severity,
            code,
            message: message.into(),
            file: file.into(),
            line: 0,
            column: 0,
            source_line: None,
            help: None,
        }
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

    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
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

impl fmt::Display for Diagnostic {
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
        let d = Diagnostic::new(
            Severity::Warning,
            "agent/unknown-key",
            "agent/a.md",
            "unknown key",
        )
        .at_line_of("---\npermissions: {}\n", 2, 1)
        .help("did you mean `permission`?");
        let s = d.to_string();
        assert!(s.contains("warning[agent/unknown-key]"));
        assert!(s.contains("--> agent/a.md:2:1"));
        assert!(s.contains("2 | permissions: {}"));
    }
}
