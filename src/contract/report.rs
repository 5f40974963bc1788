//! The result of a check, and the three ways it is shown: to a person (like a compiler), to a
//! model (a repair prompt), and to a test (a panic with the rendered report).

use super::rule::sort;
use crate::markdown::{fence_for, LineIndex};
use crate::problem::{locate, ActualLines, Problem, Severity};
use serde::Serialize;
use std::fmt::Write as _;

/// Everything one check found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Report {
    /// The name of the contract the answer was checked against.
    pub contract: String,
    /// In source order.
    pub violations: Vec<Problem>,
    /// The answer was checked as a JSON contract (changes the repair prompt's instructions).
    #[serde(skip)]
    pub json: bool,
}

impl Report {
    /// A report over `text`: fills in each violation's line and column and sorts them.
    pub fn new(text: &str, contract: impl Into<String>, mut violations: Vec<Problem>) -> Self {
        locate(text, &mut violations);
        sort(&mut violations);
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

    pub fn errors(&self) -> impl Iterator<Item = &Problem> {
        self.violations.iter().filter(|v| v.is_error())
    }

    pub fn warnings(&self) -> impl Iterator<Item = &Problem> {
        self.violations
            .iter()
            .filter(|v| v.severity == Severity::Warning)
    }

    /// Plain text for a repair turn: what to fix, where, and for wrong excerpts the real lines.
    pub fn repair_prompt(&self) -> String {
        let errors: Vec<&Problem> = self.errors().collect();
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
            let _ = write!(out, "\n{}. [{}] {place}: {}\n", i + 1, v.code, v.message);
            if let Some(help) = &v.help {
                let _ = writeln!(out, "   Fix: {help}");
            }
            if let Some(ActualLines {
                from,
                lines: actual,
            }) = &v.actual
            {
                // A filled item to copy: small models repair by copying far better than by
                // counting lines or trimming a quote to a limit.
                let fence = fence_for(actual);
                let _ = writeln!(
                    out,
                    "   To keep this item, write its Evidence and Excerpt exactly so:"
                );
                let _ = writeln!(out, "   - **Evidence**: `{from}`");
                let _ = writeln!(out, "   - **Excerpt**:");
                let _ = writeln!(out, "     {fence}");
                for line in actual.lines() {
                    let _ = writeln!(out, "     {line}");
                }
                let _ = writeln!(out, "     {fence}");
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
    v: &Problem,
    name: &str,
    text: &str,
    index: &LineIndex,
    color: bool,
) {
    let style = Style { on: color };
    let sev = match v.severity {
        Severity::Error => style.paint("1;31", &format!("error[{}]", v.code)),
        Severity::Warning => style.paint("1;33", &format!("warning[{}]", v.code)),
        Severity::Note => style.paint("1;36", &format!("note[{}]", v.code)),
    };
    // A problem without a span (none of the checker's) is shown at its line and column.
    let span = v.span.clone().unwrap_or_else(|| {
        let at = index.line_start(v.line).unwrap_or(0) + v.column.saturating_sub(1);
        at..at
    });
    let _ = writeln!(out, "{sev}: {}", style.paint("1", &v.message));

    let first = v.line.max(1);
    let last_of_span = index.line(span.end.saturating_sub(1).max(span.start));
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
        let Some(full) = index.line_text(text, n) else {
            break;
        };
        // A long line is shown as a window around the violation, so rendering N violations on
        // one line stays linear instead of printing the whole line N times.
        let line_start = index.line_start(n).unwrap_or(0);
        let at = if n == first {
            span.start.saturating_sub(line_start).min(full.len())
        } else {
            0
        };
        let (line, col) = window(full, at);
        let _ = writeln!(
            out,
            "{} {bar} {line}",
            style.paint("1;34", &format!("{n:>width$}"))
        );
        if n == first {
            let lead: String = line
                .chars()
                .take(col - 1)
                .map(|c| if c == '\t' { '\t' } else { ' ' })
                .collect();
            let rest_len = line.chars().count().saturating_sub(col - 1);
            let span_len = text.get(span.clone()).map_or(1, |s| {
                let first_line = s.split('\n').next().unwrap_or("");
                first_line
                    .trim_end_matches('\r')
                    .chars()
                    .take(rest_len)
                    .count()
            });
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
    if let Some(ActualLines {
        from,
        lines: actual,
    }) = &v.actual
    {
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

/// Bytes of a source line shown around a violation; longer lines are cut with `…`.
const WINDOW_BYTES: usize = 160;

/// The part of `line` shown for a violation at byte `at` of it, and the 1-based column of `at`
/// in what is shown. Short lines come back whole.
fn window(line: &str, at: usize) -> (std::borrow::Cow<'_, str>, usize) {
    let floor = |mut i: usize| {
        i = i.min(line.len());
        while !line.is_char_boundary(i) {
            i -= 1;
        }
        i
    };
    let at = floor(at);
    if line.len() <= WINDOW_BYTES {
        return (line.into(), line[..at].chars().count() + 1);
    }
    let from = floor(at.saturating_sub(WINDOW_BYTES / 4));
    let to = floor(from + WINDOW_BYTES).max(at);
    let lead = if from > 0 { "…" } else { "" };
    let tail = if to < line.len() { "…" } else { "" };
    let col = lead.chars().count() + line[from..at].chars().count() + 1;
    (format!("{lead}{}{tail}", &line[from..to]).into(), col)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::rule::Rule;

    fn sample() -> (String, Report) {
        let text = "---\nmessage_id: x\n---\nline two\n".to_string();
        let mut v = Rule::MessageIdFormat
            .problem(16..17, "bad id")
            .with_help("fix it");
        v.line = 2;
        v.column = 13;
        let mut w = Rule::ExcerptMismatch
            .problem(20..28, "wrong lines")
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
    fn a_long_line_is_shown_as_a_window_around_the_violation() {
        let text = format!("{}<answer>{}\n", "é".repeat(1000), "x".repeat(1000));
        let report = Report::new(
            &text,
            "envelope",
            vec![Rule::Tags.problem(2000..2008, "a second tag")],
        );
        assert_eq!(report.violations[0].column, 1001);
        let out = report.render("a.md", &text, false);
        assert!(out.contains(" --> a.md:1:1001"), "{out}");
        let shown = out.lines().find(|l| l.starts_with("1 | ")).unwrap();
        assert!(shown.len() < 200, "{shown}");
        assert!(
            shown.starts_with("1 | …é") && shown.ends_with("x…"),
            "{shown}"
        );
        let marks = out.lines().find(|l| l.contains('^')).unwrap();
        let caret_col = marks.chars().position(|c| c == '^').unwrap();
        let tag_col = shown.chars().collect::<Vec<_>>();
        assert_eq!(
            tag_col[caret_col..caret_col + 8].iter().collect::<String>(),
            "<answer>",
            "{shown}\n{marks}"
        );
        assert_eq!(marks.matches('^').count(), 8);
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
            p.contains(
                "   - **Evidence**: `docs/a.md:3-4`\n   - **Excerpt**:\n     ````\n     real \
                 three\n     real ```four\n     ````"
            ),
            "{p}"
        );
        assert!(!report.is_conformant());
        assert_eq!(Report::default().repair_prompt(), "");
    }
}
