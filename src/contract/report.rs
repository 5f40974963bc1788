//! The result of a check, and the three ways it is shown: to a person (like a compiler), to a
//! model (a repair prompt), and to a test (a panic with the rendered report).

use super::check::{check, CheckContext};
use super::rule::{locate, Severity, Violation};
use super::spec::Contract;
use crate::markdown::LineIndex;
use serde::Serialize;
use std::fmt::Write as _;

/// Everything one check found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Report {
    /// The name of the contract the answer was checked against.
    pub contract: String,
    /// In source order.
    pub violations: Vec<Violation>,
    /// The answer was checked as a JSON contract (changes the repair prompt's instructions).
    #[serde(skip)]
    pub json: bool,
}

impl Report {
    /// A report over `text`: fills in each violation's line and column and sorts them.
    pub fn new(text: &str, contract: impl Into<String>, mut violations: Vec<Violation>) -> Self {
        locate(text, &mut violations);
        violations.sort_by_key(|v| (v.span.start, v.rule));
        Report {
            contract: contract.into(),
            violations,
            json: false,
        }
    }

    /// True when nothing of error severity was found.
    pub fn is_conformant(&self) -> bool {
        self.errors().next().is_none()
    }

    pub fn errors(&self) -> impl Iterator<Item = &Violation> {
        self.violations.iter().filter(|v| v.is_error())
    }

    pub fn warnings(&self) -> impl Iterator<Item = &Violation> {
        self.violations
            .iter()
            .filter(|v| v.severity == Severity::Warning)
    }

    /// Plain text for a repair turn: what to fix, where, and for wrong excerpts the real lines.
    pub fn repair_prompt(&self) -> String {
        let errors: Vec<&Violation> = self.errors().collect();
        let mut out = String::new();
        if errors.is_empty() {
            return out;
        }
        if self.json {
            let _ = writeln!(
                out,
                "Your answer does not follow the `{}` JSON contract: {} problem{} to fix. Send the \
                 answer again as exactly one JSON object — no text before or after it, no code \
                 fence — with every problem below fixed and nothing else changed.",
                self.contract,
                errors.len(),
                if errors.len() == 1 { "" } else { "s" }
            );
        } else {
            let _ = writeln!(
            out,
            "Your answer does not follow the `{}` contract: {} problem{} to fix. Send the whole \
             answer again — the `---` frontmatter, then one <thinking> block, then one <answer> \
             block, nothing before or after — with every problem below fixed and nothing else \
             changed.",
            self.contract,
            errors.len(),
            if errors.len() == 1 { "" } else { "s" }
        );
        }
        for (i, v) in errors.iter().enumerate() {
            let place = if self.json {
                format!("line {}, column {}", v.line, v.column)
            } else {
                format!("line {}", v.line)
            };
            let _ = write!(out, "\n{}. [{}] {place}: {}\n", i + 1, v.rule, v.message);
            if let Some(help) = &v.help {
                let _ = writeln!(out, "   Fix: {help}");
            }
            if let (Some(actual), Some(from)) = (&v.actual, &v.actual_from) {
                let fence = fence_for(actual);
                let _ = writeln!(out, "   The lines really at `{from}` are:");
                let _ = writeln!(out, "   {fence}");
                for line in actual.lines() {
                    let _ = writeln!(out, "   {line}");
                }
                let _ = writeln!(out, "   {fence}");
            }
        }
        out
    }

    /// Renders the report like a compiler's diagnostics; `name` is the file shown in `-->` lines.
    pub fn render(&self, name: &str, text: &str, color: bool) -> String {
        let mut out = String::new();
        if self.violations.is_empty() {
            return out;
        }
        let index = LineIndex::new(text);
        for v in &self.violations {
            render_one(&mut out, v, name, text, &index, color);
        }
        out
    }
}

/// A code fence longer than any run of backticks in `text`.
fn fence_for(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    "`".repeat(longest.max(2) + 1)
}

struct Style {
    on: bool,
}

impl Style {
    fn paint(&self, code: &str, s: &str) -> String {
        if self.on {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
}

/// Lines of a violation's span shown at most.
const SPAN_LINES: usize = 4;

fn render_one(
    out: &mut String,
    v: &Violation,
    name: &str,
    text: &str,
    index: &LineIndex,
    color: bool,
) {
    let style = Style { on: color };
    let sev = match v.severity {
        Severity::Error => style.paint("1;31", &format!("error[{}]", v.rule)),
        Severity::Warning => style.paint("1;33", &format!("warning[{}]", v.rule)),
    };
    let _ = writeln!(out, "{sev}: {}", style.paint("1", &v.message));

    let first = v.line.max(1);
    let last_of_span = index.line(v.span.end.saturating_sub(1).max(v.span.start));
    let last = last_of_span.clamp(first, first + SPAN_LINES - 1);
    let width = last.to_string().len();
    let pad = " ".repeat(width);
    let bar = style.paint("1;34", "|");
    let _ = writeln!(
        out,
        "{pad}{} {name}:{}:{}",
        style.paint("1;34", "-->"),
        v.line,
        v.column
    );
    let _ = writeln!(out, "{pad} {bar}");
    for n in first..=last {
        let Some(line) = index.line_text(text, n) else {
            break;
        };
        let _ = writeln!(
            out,
            "{} {bar} {line}",
            style.paint("1;34", &format!("{n:>width$}"))
        );
        if n == first {
            let col = v.column.max(1);
            let lead: String = line
                .chars()
                .take(col - 1)
                .map(|c| if c == '\t' { '\t' } else { ' ' })
                .collect();
            let rest_len = line.chars().count().saturating_sub(col - 1);
            let span_len = text
                .get(v.span.clone())
                .map_or(1, |s| s.lines().next().unwrap_or("").chars().count());
            let carets = span_len.min(rest_len).max(1);
            let marks = "^".repeat(carets);
            let paint = if v.severity == Severity::Error {
                "1;31"
            } else {
                "1;33"
            };
            let _ = writeln!(out, "{pad} {bar} {lead}{}", style.paint(paint, &marks));
        }
    }
    if last < last_of_span {
        let _ = writeln!(out, "{pad} {bar} …");
    }
    if let (Some(actual), Some(from)) = (&v.actual, &v.actual_from) {
        let _ = writeln!(
            out,
            "{pad} {} {}: the lines at `{from}` are:",
            style.paint("1;34", "="),
            style.paint("1", "note")
        );
        let start = from
            .rsplit_once(':')
            .and_then(|(_, r)| r.split('-').next())
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap_or(1);
        let w = (start + actual.lines().count()).to_string().len();
        for (i, line) in actual.lines().enumerate() {
            let _ = writeln!(out, "{pad}   {:>w$} | {line}", start + i);
        }
    }
    if let Some(help) = &v.help {
        let _ = writeln!(
            out,
            "{pad} {} {}: {help}",
            style.paint("1;34", "="),
            style.paint("1", "help")
        );
    }
    out.push('\n');
}

/// Test helper: panics with the rendered report unless `text` conforms to `contract`.
#[track_caller]
pub fn assert_conforms(text: &str, contract: &Contract, ctx: &CheckContext) {
    let report = check(text, contract, ctx);
    if !report.is_conformant() {
        panic!(
            "the answer does not conform to the `{}` contract:\n\n{}",
            contract.name,
            report.render("<answer>", text, false)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::rule::Rule;

    fn sample() -> (String, Report) {
        let text = "---\nmessage_id: x\n---\nline two\n".to_string();
        let mut v = Violation::error(Rule::MessageIdFormat, 16..17, "bad id").with_help("fix it");
        v.line = 2;
        v.column = 13;
        let mut w = Violation::error(Rule::ExcerptMismatch, 20..28, "wrong lines")
            .with_actual("docs/a.md:3-4", "real three\nreal ```four");
        w.line = 4;
        w.column = 1;
        (
            text,
            Report {
                contract: "envelope".into(),
                violations: vec![v, w],
                json: false,
            },
        )
    }

    #[test]
    fn renders_like_a_compiler() {
        let (text, report) = sample();
        let out = report.render("a.md", &text, false);
        assert!(
            out.contains("error[envelope/message-id-format]: bad id"),
            "{out}"
        );
        assert!(out.contains(" --> a.md:2:13"), "{out}");
        assert!(
            out.contains("2 | message_id: x\n  |             ^"),
            "{out}"
        );
        assert!(
            out.contains("= note: the lines at `docs/a.md:3-4` are:"),
            "{out}"
        );
        assert!(out.contains("3 | real three"), "{out}");
        assert!(out.contains("= help: fix it"), "{out}");
        assert!(!out.contains('\x1b'));
        assert!(report.render("a.md", &text, true).contains('\x1b'));
    }

    #[test]
    fn repair_prompt_lists_everything() {
        let (_, report) = sample();
        let p = report.repair_prompt();
        assert!(p.contains("2 problems"), "{p}");
        assert!(
            p.contains("1. [envelope/message-id-format] line 2: bad id"),
            "{p}"
        );
        assert!(p.contains("   Fix: fix it"), "{p}");
        assert!(
            p.contains("   ````\n   real three\n   real ```four\n   ````"),
            "{p}"
        );
        assert!(!report.is_conformant());
        assert_eq!(Report::default().repair_prompt(), "");
    }
}
