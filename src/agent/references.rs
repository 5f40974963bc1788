//! Delegations an agent's prompt mentions: `task(...)` calls (in code or written in a sentence)
//! and "Delegate to `x`" prose.
//!
//! pulldown-cmark tells code from prose, so an example inside a fenced block counts as a call
//! example and a word in a paragraph does not pretend to be one. A `task(subagent_type=…)` call
//! written in plain prose counts too: prompts written for other tools do that, and a model copies
//! it as readily as a fenced example. Lint uses these to build the
//! delegation graph; the runtime tells primaries which subagents exist from the same data.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use regex::Regex;
use serde::Serialize;
use std::sync::LazyLock;

use crate::markdown::LineIndex;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DelegationRefKind {
    /// `task({ subagent_type: "x", ... })` (JS-object form), in code or prose.
    TaskObject,
    /// `task(subagent_type="x", ...)` (keyword form), in code or prose.
    TaskKeyword,
    /// "Delegate to `x`" in prose.
    Prose,
}

/// One mention of a delegation target in a prompt body (not an evidence citation, which is
/// `contract::Citation`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DelegationRef {
    pub target: String,
    pub kind: DelegationRefKind,
    /// 1-based line in the file the body came from.
    pub line: usize,
    pub column: usize,
}

static TASK_CALL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"task\s*\(\s*(\{)?[^)]*?\bsubagent_type\s*(:|=)\s*["']([A-Za-z0-9_./-]+)["']"#)
        .expect("static regex")
});

static DELEGATE_TO: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\bdelegat\w*\s+(?:\w+\s+)?to\s*$").expect("static regex"));

/// Separators allowed between names in "Delegate to `a` / `b` or `c`".
fn is_separator(text: &str) -> bool {
    let t = text.trim();
    t.is_empty() || matches!(t, "/" | "," | "or" | "and" | ", or" | ", and" | "|")
}

/// Whether the delegation mentions of an agent's prompt are delegations (edges of the graph) or
/// documentation. A subagent that cannot delegate shows callers how to call it
/// (`task({subagent_type: "codebase-locator", …})` inside codebase-locator.md): read as calls,
/// those made seven `delegation/cycle` errors in scameronde/rpi-qpi (#28 item 6). A subagent
/// cannot delegate when its grants refuse `task`, when `permission:` refuses `task` outright, or
/// when it is an opencode subagent whose `tools:` map leaves `task` out and whose `permission:`
/// names no `task` rule: opencode runs subagents with `task` denied unless their permission
/// mentions it. Primaries keep their mentions whatever their grants: an orchestrator without
/// `task` is a real finding (`delegation/not-granted`), not documentation.
pub fn are_delegations(
    mode: super::Mode,
    tools: &super::ToolGrants,
    tools_is_map: bool,
    permission: &super::Permission,
) -> bool {
    if mode.can_be_primary() {
        return true;
    }
    if !tools.allows("task") || permission.refuses_tool("task") {
        return false;
    }
    let names_task = tools
        .rules
        .iter()
        .any(|r| r.pattern != "*" && super::grants::glob_matches(&r.pattern, "task"));
    !(tools_is_map && !names_task && !permission.0.contains_key("task"))
}

/// Finds the references in `body`, whose first line is line `body_line` of its file.
pub fn extract(body: &str, body_line: usize) -> Vec<DelegationRef> {
    // Most bodies delegate nothing; skip the markdown parse when no form can match.
    if !body.contains("subagent_type") && !contains_ascii_ci(body, "delegat") {
        return Vec::new();
    }
    let index = LineIndex::new(body);
    let mut out = Vec::new();
    let at = |offset: usize| {
        let (line, col) = index.line_col(body, offset);
        (line + body_line - 1, col)
    };
    let scan_code = |start: usize, code: &str, out: &mut Vec<DelegationRef>| {
        for cap in TASK_CALL.captures_iter(code) {
            let (Some(sep), Some(name)) = (cap.get(2), cap.get(3)) else {
                continue;
            };
            let kind = if cap.get(1).is_some() || sep.as_str() == ":" {
                DelegationRefKind::TaskObject
            } else {
                DelegationRefKind::TaskKeyword
            };
            let (line, column) = at(start + name.start());
            out.push(DelegationRef {
                target: name.as_str().to_string(),
                kind,
                line,
                column,
            });
        }
    };

    // In prose: after text ending in "delegate to", collect the inline-code names that follow.
    let mut after_delegate = false;
    let mut in_code_block = false;
    // Code blocks and spans already scanned; a call outside them is a call written in prose.
    let mut code_ranges: Vec<std::ops::Range<usize>> = Vec::new();
    for (event, range) in Parser::new_ext(body, Options::empty()).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(_)) => {
                in_code_block = true;
                code_ranges.push(range.clone());
                // Scan the raw source so offsets stay exact even inside indented list items.
                scan_code(range.start, &body[range.clone()], &mut out);
            }
            Event::End(TagEnd::CodeBlock) => in_code_block = false,
            Event::Text(t) if !in_code_block => {
                if DELEGATE_TO.is_match(&t) {
                    after_delegate = true;
                } else if !(after_delegate && is_separator(&t)) {
                    after_delegate = false;
                }
            }
            Event::Code(code) => {
                code_ranges.push(range.clone());
                if code.contains("task") && code.contains("subagent_type") {
                    scan_code(range.start, &body[range.clone()], &mut out);
                } else if after_delegate {
                    let name = code.trim();
                    if !name.is_empty()
                        && name
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
                    {
                        let (line, column) = at(range.start + 1);
                        out.push(DelegationRef {
                            target: name.to_string(),
                            kind: DelegationRefKind::Prose,
                            line,
                            column,
                        });
                    }
                }
            }
            // Emphasis around a name ("Delegate to **`x`**") keeps the run going.
            Event::Start(Tag::Emphasis | Tag::Strong)
            | Event::End(TagEnd::Emphasis | TagEnd::Strong) => {}
            Event::End(_) | Event::Start(_) | Event::SoftBreak | Event::HardBreak => {
                after_delegate = false;
            }
            _ => {}
        }
    }
    let before = out.len();
    for cap in TASK_CALL.captures_iter(body) {
        let Some(whole) = cap.get(0) else { continue };
        if code_ranges.iter().any(|r| r.contains(&whole.start())) {
            continue;
        }
        let mut prose = Vec::new();
        scan_code(whole.start(), whole.as_str(), &mut prose);
        out.extend(prose);
    }
    if out.len() > before {
        out.sort_by_key(|r| (r.line, r.column));
    }
    out
}

/// Case-insensitive ASCII substring test without allocating a lowercased copy.
fn contains_ascii_ci(haystack: &str, needle: &str) -> bool {
    haystack
        .as_bytes()
        .windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_all_three_forms_with_lines() {
        let body = concat!(
            "intro\n",
            "- **Find files**: Delegate to `codebase-locator` / `codebase-pattern-finder`.\n",
            "\n",
            "```\n",
            "task({\n",
            "  subagent_type: \"thoughts-locator\",\n",
            "  prompt: \"x\"\n",
            "})\n",
            "```\n",
            "\n",
            "    task(subagent_type=\"web-search-researcher\", prompt=\"y\")\n",
            "\n",
            "Prose mentioning `thoughts-analyzer` is not a delegation.\n",
        );
        let refs = extract(body, 10);
        let got: Vec<_> = refs
            .iter()
            .map(|r| (r.target.as_str(), r.kind, r.line))
            .collect();
        assert_eq!(
            got,
            vec![
                ("codebase-locator", DelegationRefKind::Prose, 11),
                ("codebase-pattern-finder", DelegationRefKind::Prose, 11),
                ("thoughts-locator", DelegationRefKind::TaskObject, 15),
                ("web-search-researcher", DelegationRefKind::TaskKeyword, 20),
            ]
        );
    }

    /// Prompts written for other tools often call `task(` in a sentence, not in code. Those
    /// delegations are real (the model copies them) and must reach lint with their position.
    #[test]
    fn finds_task_calls_written_in_prose_with_line_and_column() {
        let body = concat!(
            "# Lead\n",
            "\n",
            "When the map is ready, call task(subagent_type=\"doc-reader\", prompt=\"read it\") once per note.\n",
            "Otherwise task({subagent_type: \"doc-finder\", description: \"d\"}) finds them first.\n",
            "\n",
            "- In a list: task(subagent_type='scribe', prompt='write')\n",
            "\n",
            "A span `task(subagent_type=\"spanned\")` is found once.\n",
        );
        let refs = extract(body, 5);
        let got: Vec<_> = refs
            .iter()
            .map(|r| (r.target.as_str(), r.kind, r.line, r.column))
            .collect();
        assert_eq!(
            got,
            vec![
                ("doc-reader", DelegationRefKind::TaskKeyword, 7, 49),
                ("doc-finder", DelegationRefKind::TaskObject, 8, 33),
                ("scribe", DelegationRefKind::TaskKeyword, 10, 34),
                ("spanned", DelegationRefKind::TaskKeyword, 12, 29),
            ]
        );
    }

    #[test]
    fn a_subagent_that_cannot_delegate_has_no_delegations() {
        use crate::agent::grants::ToolsDecl;
        use crate::agent::{Mode, Permission, ToolGrants};
        let map = |pairs: &[(&str, bool)]| {
            ToolGrants::from_decl(&ToolsDecl::Map(
                pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            ))
        };
        let none = Permission::default();
        let task_rule: Permission =
            serde_json::from_value(serde_json::json!({"task": {"*": "allow"}})).unwrap();
        let denied: Permission =
            serde_json::from_value(serde_json::json!({"task": "deny"})).unwrap();
        let listed = ToolGrants::from_decl(&ToolsDecl::Csv("Read, Grep".into()));
        // rpi-qpi's codebase-locator: an opencode map without `task`, no permission.
        let locator = map(&[("read", true), ("bash", true)]);
        assert!(!are_delegations(Mode::Subagent, &locator, true, &none));
        assert!(!are_delegations(Mode::Subagent, &listed, false, &none));
        assert!(!are_delegations(
            Mode::Subagent,
            &ToolGrants::default(),
            false,
            &denied
        ));
        // A subagent that names `task`, or whose permission does, delegates.
        assert!(are_delegations(
            Mode::Subagent,
            &map(&[("task", true)]),
            true,
            &none
        ));
        assert!(are_delegations(Mode::Subagent, &locator, true, &task_rule));
        assert!(are_delegations(
            Mode::Subagent,
            &ToolGrants::default(),
            false,
            &none
        ));
        // Primaries keep their mentions: a missing grant is a finding there.
        assert!(are_delegations(Mode::Primary, &listed, false, &none));
        assert!(are_delegations(Mode::All, &locator, true, &none));
    }

    #[test]
    fn fenced_block_in_list_item_keeps_lines() {
        let body = "1. Step\n   ```\n   task({ subagent_type: \"a\" })\n   ```\n";
        let refs = extract(body, 1);
        assert_eq!(refs.len(), 1);
        assert_eq!((refs[0].line, refs[0].column), (3, 27));
    }
}
