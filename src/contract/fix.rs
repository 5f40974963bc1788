//! The fixes of an envelope answer's problems that need no judgement, made on a copy that is
//! the answer when it passes whole, and is otherwise offered in the repair turn. Qwen2.5-Coder-1.5B sent one locator answer back byte for
//! byte through both repairs: the problem list said the file it named sat in `decisions/`, not
//! `specs/`, and the answer stayed wrong. A small model copies text far better than it edits
//! it, so the runtime makes these edits itself:
//!
//! * a named path that does not exist, when exactly one visible file has its file name (the
//!   folder was wrong), becomes that file's path;
//! * a list item whose only blanks are the template's title/date/status placeholders becomes
//!   its path alone;
//! * an Evidence line whose reference is not in backticks becomes the line its problem's help
//!   writes out (``- **Evidence**: `path:N-M` ``);
//! * text after the closing `</answer>` goes.
//!
//! Nothing else is touched; the copy is checked again before it is taken or offered
//! (`runtime::check`).

use super::check::{path_item, similar_files};
use super::rule::Rule;
use crate::problem::Problem;
use crate::project::Project;

/// `answer` with the fixes above applied for `problems` (found on this very text), or `None`
/// when none applies.
pub fn apply(answer: &str, problems: &[Problem], project: &Project) -> Option<String> {
    let mut edits: Vec<(std::ops::Range<usize>, String)> = Vec::new();
    for p in problems {
        let Some(span) = p.span.clone().filter(|s| s.end <= answer.len()) else {
            continue;
        };
        if p.code == Rule::NamedPathMissing.code() {
            let named = answer[span.clone()].trim_matches('`');
            let name = named.rsplit('/').next().unwrap_or(named);
            let same: Vec<String> = similar_files(project, named)
                .into_iter()
                .filter(|f| f.rsplit('/').next() == Some(name))
                .collect();
            if let [only] = same.as_slice() {
                let at = answer[span.clone()].find(named).unwrap_or(0) + span.start;
                edits.push((at..at + named.len(), only.clone()));
            }
        } else if p.code == Rule::Placeholder.code() {
            let start = answer[..span.start].rfind('\n').map_or(0, |i| i + 1);
            let end = answer[span.start..]
                .find('\n')
                .map_or(answer.len(), |i| span.start + i);
            if let Some(item) = path_item(answer, span.start) {
                let indent = &answer[start
                    ..start + (answer[start..end].len() - answer[start..end].trim_start().len())];
                edits.push((start..end, format!("{indent}{item}")));
            }
        } else if p.code == Rule::ReferenceFormat.code() {
            let wrapped = p
                .help
                .as_deref()
                .and_then(|h| h.split_once("write the line as: "))
                .map(|(_, line)| line.trim());
            if let Some(line) = wrapped {
                let start = answer[..span.start].rfind('\n').map_or(0, |i| i + 1);
                let end = answer[span.start..]
                    .find('\n')
                    .map_or(answer.len(), |i| span.start + i);
                let indent_len = answer[start..end].len() - answer[start..end].trim_start().len();
                let indent = &answer[start..start + indent_len];
                edits.push((start..end, format!("{indent}{line}")));
            }
        } else if p.code == Rule::StrayText.code() {
            if let Some(close) = answer.rfind("</answer>") {
                let after = close + "</answer>".len();
                if span.start >= after {
                    edits.push((after..answer.len(), "\n".to_string()));
                }
            }
        }
    }
    if edits.is_empty() {
        return None;
    }
    // Later edits first, so earlier offsets hold; an edit inside one already made is dropped.
    edits.sort_by(|a, b| b.0.start.cmp(&a.0.start).then(b.0.end.cmp(&a.0.end)));
    let mut fixed = answer.to_string();
    let mut floor = usize::MAX;
    for (range, text) in edits {
        if range.end > floor {
            continue;
        }
        fixed.replace_range(range.clone(), &text);
        floor = range.start;
    }
    (fixed != answer).then_some(fixed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_mechanical_fix_is_made_and_nothing_else() {
        let dir = tempfile::tempdir().expect("tempdir");
        let decisions = dir.path().join("thoughts/shared/decisions");
        std::fs::create_dir_all(&decisions).expect("mkdir");
        std::fs::write(decisions.join("2026-11-02-yaml-parser.md"), "# YAML\n").expect("write");
        let project = Project::open(dir.path()).expect("project");
        let answer = "<answer>\n- `thoughts/shared/specs/2026-11-02-yaml-parser.md` — YAML\n- `thoughts/shared/decisions/2026-11-02-yaml-parser.md` — <title> (<YYYY-MM-DD>, <status>)\n- `thoughts/other.md` — gone\n</answer>\n```\n";
        let span = |needle: &str| {
            let at = answer.find(needle).expect(needle);
            Some(at..at + needle.len())
        };
        let problem = |rule: Rule, needle: &str| Problem {
            span: span(needle),
            ..rule.problem(0..0, "m")
        };
        let problems = vec![
            problem(
                Rule::NamedPathMissing,
                "`thoughts/shared/specs/2026-11-02-yaml-parser.md`",
            ),
            problem(Rule::Placeholder, "<title>"),
            problem(Rule::Placeholder, "<YYYY-MM-DD>"),
            problem(Rule::NamedPathMissing, "`thoughts/other.md`"),
            problem(Rule::StrayText, "```\n"),
        ];
        let fixed = apply(answer, &problems, &project).expect("fixed");
        assert_eq!(
            fixed,
            "<answer>\n- `thoughts/shared/decisions/2026-11-02-yaml-parser.md` — YAML\n- `thoughts/shared/decisions/2026-11-02-yaml-parser.md`\n- `thoughts/other.md` — gone\n</answer>\n"
        );
        assert_eq!(apply(answer, &[], &project), None);
        // A bare reference, wrapped as its help writes it.
        let bare = "<answer>\n- **Evidence**: d/x.md:1-2\n</answer>\n";
        let mut problem = problem(Rule::ReferenceFormat, "YAML");
        let label = bare.find("- **Evidence**").expect("label");
        problem.span = Some(label..label + 14);
        problem.help = Some(
            "the reference must be in backticks; write the line as: - **Evidence**: `d/x.md:1-2`"
                .into(),
        );
        assert_eq!(
            apply(bare, &[problem], &project).as_deref(),
            Some("<answer>\n- **Evidence**: `d/x.md:1-2`\n</answer>\n")
        );
    }
}
