//! The analyzer role: read the document the task names, find what commits the project
//! (sections headed Decision / Constraint / Spec, MUST and "we will" sentences, spec tables) with
//! pulldown-cmark, and quote each as an exact 1–N line excerpt in the declared envelope.
//!
//! Steps: `read` the named document (or, when the task names none and the agent can search, a
//! locator-style `search` first and then `read` the best-ranked file), then answer.
//!
//! What counts as a finding is [`super::extract`]'s job; this module plays the role and writes
//! the envelope.

use serde_json::json;
use std::collections::BTreeMap;

use super::envelope::{fence_for, Envelope};
use super::extract::{extract, reliability, Document, Item, Kind};
use super::role::has_tool;
use super::{bm25, call, locator, parse, rank, strip_boilerplate, History, Turn};
use crate::contract::spec::MAX_EXCERPT_LINES;
use crate::contract::{FieldKind, FieldRule};
use crate::model::ModelRequest;

pub fn turn(request: &ModelRequest, history: &History) -> Turn {
    let task = strip_boilerplate(history.task);
    let named = parse::paths_in(&task).into_iter().next();
    let reads = history.step("read");
    let target = match (&named, reads.first()) {
        (_, Some(done)) => done.arg("path").map(str::to_string),
        (Some(p), None) => Some(p.clone()),
        (None, None) => {
            // No document named: find the best one first, as a locator would.
            let search = history.step("search");
            let terms = bm25::query_terms(&task);
            if search.is_empty() && !terms.is_empty() && has_tool(request, "grep") {
                let scope = locator::scope(history.task, &request.system);
                return Turn::Calls(locator::search_calls(request, &terms, &scope));
            }
            let ranked = rank::rank(&terms, &task, &search);
            rank::keep(&ranked).first().map(|s| s.path.clone())
        }
    };
    let Some(path) = target else {
        return Turn::Answer(no_document(
            request,
            "The task names no document, and no search found one.",
        ));
    };
    // `read_first`: the document's numbered lines are in the task message already. Lines
    // past those shown are read on from where they stop.
    let ahead = crate::runtime::read_first::shown_in(history.task)
        .into_iter()
        .find(|(p, _)| *p == path)
        .map(|(_, output)| output)
        .filter(|output| !parse::numbered_lines(output).is_empty());
    let Some(read) = reads.first() else {
        if let Some(output) = &ahead {
            return match crate::tools::read::read_on_offset(output) {
                Some(offset) if has_tool(request, "read") => Turn::Calls(vec![call(
                    "read",
                    0,
                    "read",
                    json!({ "path": path, "offset": offset }),
                )]),
                _ => Turn::Answer(analysis(request, &Document::from_read(&path, output))),
            };
        }
        if !has_tool(request, "read") {
            return Turn::Answer(no_document(request, "This agent has no `read` tool."));
        }
        return Turn::Calls(vec![call("read", 0, "read", json!({ "path": path }))]);
    };
    match (read.ok(), ahead) {
        (Some(output), ahead) if !parse::numbered_lines(output).is_empty() => {
            let whole = format!("{}{output}", ahead.unwrap_or_default());
            Turn::Answer(analysis(request, &Document::from_read(&path, &whole)))
        }
        (_, Some(ahead)) => Turn::Answer(analysis(request, &Document::from_read(&path, &ahead))),
        _ => {
            let why = read
                .result
                .map(|m| super::first_line(&m.content).to_string())
                .unwrap_or_default();
            Turn::Answer(unreadable(request, &path, &why))
        }
    }
}

fn max_lines(request: &ModelRequest) -> usize {
    request
        .response_contract
        .as_ref()
        .map_or(MAX_EXCERPT_LINES, |rc| rc.contract.excerpt_max_lines)
        .clamp(1, MAX_EXCERPT_LINES) as usize
}

/// The kind label the contract allows for `kind` (its first signal heading when it names others).
fn heading_for(request: &ModelRequest, kind: Kind) -> String {
    let headings = request
        .response_contract
        .as_ref()
        .map(|rc| rc.contract.signal_headings.clone())
        .unwrap_or_default();
    if headings.is_empty() || headings.iter().any(|h| h == kind.label()) {
        kind.label().to_string()
    } else {
        headings[0].clone()
    }
}

/// The frontmatter fields the contract declares, filled from the document.
fn fields(request: &ModelRequest, doc: Option<&Document>, path: &str) -> Vec<(String, String)> {
    let Some(rc) = request.response_contract.as_ref() else {
        return Vec::new();
    };
    let date = doc
        .and_then(Document::date)
        .or_else(|| parse::date_in_name(path).map(str::to_string))
        .unwrap_or_else(|| super::date_of(Some(&rc.timestamp)));
    let status = doc
        .and_then(Document::status)
        .unwrap_or_else(|| "unknown".to_string());
    let (rel, _) = match doc {
        Some(d) => reliability(d.status().as_deref()),
        None => ("Low", String::new()),
    };
    let subject = doc
        .and_then(|d| d.frontmatter.get("topic").cloned().or_else(|| d.title()))
        .unwrap_or_else(|| path.to_string());
    let mut out: Vec<(u8, String, String)> = Vec::new();
    for (key, rule) in &rc.contract.fields {
        let (order, value) = match rule {
            FieldRule::Kind(FieldKind::Path) => (0, path.to_string()),
            FieldRule::Kind(FieldKind::Date) => (1, date.clone()),
            FieldRule::Kind(FieldKind::Timestamp) => (4, rc.timestamp.clone()),
            FieldRule::Kind(FieldKind::String) if key.contains("status") => (2, status.clone()),
            FieldRule::Kind(FieldKind::String) => (4, subject.clone()),
            FieldRule::OneOf { one_of } => {
                let v = one_of
                    .iter()
                    .find(|v| v.as_str() == rel)
                    .or_else(|| one_of.first())
                    .cloned()
                    .unwrap_or_default();
                (3, v)
            }
        };
        out.push((order, key.clone(), value));
    }
    out.sort();
    out.into_iter().map(|(_, k, v)| (k, v)).collect()
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The answer for a document that could be read.
pub fn analysis(request: &ModelRequest, doc: &Document) -> String {
    let items = extract(doc, max_lines(request));
    let date = doc.date().unwrap_or_else(|| "unknown".into());
    let status = doc.status().unwrap_or_else(|| "unknown".into());
    let (rel, why) = reliability(doc.status().as_deref());
    let mut answer = format!(
        "## Analysis: {}\n\n### Metadata\n- **Date**: {date}\n- **Status**: {status}\n- **Reliability**: {rel} ({why})\n",
        file_name(&doc.path)
    );
    if let Some(next) = doc
        .frontmatter
        .get("superseded_by")
        .or_else(|| doc.frontmatter.get("superseded-by"))
    {
        answer.push_str(&format!("- **Superseded by**: `{next}`\n"));
    }
    // The contract's required sections, when it names any, hold the answer: the first gets
    // what was extracted, the others say they are empty.
    let required = request
        .response_contract
        .as_ref()
        .map(|rc| rc.contract.required_sections.clone())
        .unwrap_or_default();
    let first = required
        .first()
        .cloned()
        .unwrap_or_else(|| "Extracted Signal".to_string());
    answer.push_str(&format!("\n### {first}\n\n"));
    // Code states no decisions: its definitions are what can be quoted.
    let definitions = if items.is_empty() {
        definitions(doc)
    } else {
        Vec::new()
    };
    if items.is_empty() && definitions.is_empty() {
        answer.push_str("No decisions, constraints or specs in this document.\n\n");
    }
    for item in items.iter().chain(&definitions) {
        answer.push_str(&render_item(request, doc, item));
    }
    for section in required.iter().skip(1) {
        answer.push_str(&format!("### {section}\n\nNone.\n\n"));
    }
    answer.push_str("### Verification Notes\n- Not checked against code: the offline model quotes the document only.\n");
    let mut counts: BTreeMap<Kind, usize> = BTreeMap::new();
    for i in &items {
        *counts.entry(i.kind).or_default() += 1;
    }
    let summary: Vec<String> = counts
        .iter()
        .map(|(k, n)| format!("{n} {}", k.label().to_lowercase()))
        .collect();
    let thinking = format!(
        "`{}` is dated {date} with status {status}. Read {} lines. {} Context, motivation and rejected alternatives left out.",
        doc.path,
        doc.lines.len(),
        if items.is_empty() && !definitions.is_empty() {
            format!(
                "No decisions in it; quoted its first {} definition(s).",
                definitions.len()
            )
        } else if items.is_empty() {
            "Nothing in it commits the project: no Decision, Constraint or Spec section and no MUST or \"we will\" sentence.".to_string()
        } else {
            format!("Kept {} item(s): {}.", items.len(), summary.join(", "))
        }
    );
    Envelope {
        fields: fields(request, Some(doc), &doc.path),
        thinking,
        answer,
    }
    .render(request.response_contract.as_ref())
}

/// Most definitions quoted from a file with no decisions in it.
const MAX_DEFINITIONS: usize = 5;

/// The first definitions of a code file (`fn`, `struct`, `class`…), each its own line.
fn definitions(doc: &Document) -> Vec<Item> {
    (1..=doc.lines.len())
        .filter_map(|n| {
            let line = doc.line(n)?;
            let c = super::file_analysis::symbol_re().captures(line)?;
            Some(Item {
                kind: Kind::Spec,
                title: format!("`{} {}` is defined at line {n}", &c[1], &c[2]),
                start: n,
                end: n,
            })
        })
        .take(MAX_DEFINITIONS)
        .collect()
}

fn render_item(request: &ModelRequest, doc: &Document, item: &Item) -> String {
    let lines: Vec<&str> = (item.start..=item.end)
        .map(|n| doc.line(n).unwrap_or(""))
        .collect();
    let fence = fence_for(lines.iter().copied());
    let mut out = format!(
        "#### {}: {}\n- **Evidence**: `{}:{}-{}`\n- **Excerpt**:\n  {fence}markdown\n",
        heading_for(request, item.kind),
        item.title,
        doc.path,
        item.start,
        item.end
    );
    for l in lines {
        let l = l.trim_end();
        if l.is_empty() {
            out.push('\n');
        } else {
            out.push_str("  ");
            out.push_str(l);
            out.push('\n');
        }
    }
    out.push_str(&format!("  {fence}\n\n"));
    out
}

fn unreadable(request: &ModelRequest, path: &str, why: &str) -> String {
    let reason = if why.is_empty() {
        "the read returned nothing".to_string()
    } else {
        why.replace(['<', '>'], "")
    };
    Envelope {
        fields: fields(request, None, path),
        thinking: format!("Could not read `{path}`: {reason}. No content is guessed."),
        answer: format!(
            "## Analysis: {}\n\n### Metadata\n- **Date**: unknown\n- **Status**: unknown\n- **Reliability**: Low (the document could not be read)\n\n### Extracted Signal\n\nNo decisions, constraints or specs: `{path}` could not be read ({reason}).\n\n### Verification Notes\n- Not checked.\n",
            file_name(path)
        ),
    }
    .render(request.response_contract.as_ref())
}

fn no_document(request: &ModelRequest, why: &str) -> String {
    Envelope {
        fields: fields(request, None, "."),
        thinking: format!("{why} No content is guessed."),
        answer: format!(
            "## Analysis: no document\n\n### Metadata\n- **Date**: unknown\n- **Status**: unknown\n- **Reliability**: Low (no document)\n\n### Extracted Signal\n\nNo decisions, constraints or specs: {why}\n\n### Verification Notes\n- Not checked.\n"
        ),
    }
    .render(request.response_contract.as_ref())
}

#[cfg(test)]
mod tests {
    use super::super::extract::tests::{numbered, DOC};
    use super::super::testing::{play, request};
    use crate::contract::Contract;
    use crate::model::Message;

    fn drive(task: &str, files: &[(&str, &str)]) -> String {
        let mut messages = vec![Message::user(task)];
        for _ in 0..4 {
            let req = request(
                "Analyze the document.",
                &["read", "grep", "glob", "list"],
                Some(Contract::document_analysis()),
                messages.clone(),
            );
            let resp = super::super::respond(&req);
            if resp.tool_calls.is_empty() {
                return resp.content;
            }
            play(&mut messages, &resp, |c| {
                let p = c.arguments["path"].as_str().unwrap_or("");
                files
                    .iter()
                    .find(|(name, _)| *name == p)
                    .map(|(_, t)| numbered(t))
                    .ok_or_else(|| format!("`{p}` does not exist under the project root").into())
            });
        }
        panic!("analyzer did not finish")
    }

    #[test]
    fn writes_the_full_envelope_with_evidence() {
        let out = drive(
            "Extract the decisions in thoughts/d.md. Correlation: corr-test-1",
            &[("thoughts/d.md", DOC)],
        );
        assert!(out.starts_with("---\nmessage_id: thoughts-2026-11-21-001\ncorrelation_id: corr-test-1\ntimestamp: 2026-11-21T09:30:00Z\nmessage_type: DOCUMENT_ANALYSIS_RESPONSE\nsource_document: thoughts/d.md\ndocument_date: 2026-11-09\ndocument_status: accepted\nreliability: High\n---\n"), "{out}");
        assert!(out.contains("#### Decision: We decided that the runtime checks every task() call before…\n- **Evidence**: `thoughts/d.md:16-17`\n- **Excerpt**:\n  ```markdown\n  We decided that the runtime checks every `task()` call before it allocates ids or writes\n  `hop.started`. A refused call does not start a hop.\n  ```\n"), "{out}");
    }

    #[test]
    fn empty_and_missing_documents_get_short_honest_answers() {
        let out = drive(
            "Analyze thoughts/empty.md",
            &[(
                "thoughts/empty.md",
                "---\ndate: 2026-01-01\nstatus: draft\n---\n# Notes\n\nJust musing.\n",
            )],
        );
        assert!(out.contains("No decisions, constraints or specs in this document."));
        assert!(out.contains("reliability: Medium"));
        assert!(!out.contains("**Evidence**"));
        let out = drive("Analyze thoughts/missing.md", &[]);
        assert!(out.contains("could not be read"), "{out}");
        assert!(!out.contains("**Evidence**"));
    }

    /// The task message as `read_first` leaves it: the task, then the lines `read` showed.
    fn with_ahead(task: &str, path: &str, shown: &str) -> String {
        let call = crate::model::ToolCall {
            id: "read_first_1".into(),
            name: "read".into(),
            arguments: serde_json::json!({ "path": path }),
        };
        let result = Message::tool("read_first_1", shown, false);
        crate::runtime::read_first::with_reads(task, &[call], &[result])
    }

    #[test]
    fn lines_the_runtime_read_ahead_are_used_and_only_the_rest_is_read() {
        // The whole document shown: no `read` at all (the drive has no file to give).
        let task = with_ahead(
            "Extract the decisions in thoughts/d.md.",
            "thoughts/d.md",
            &numbered(DOC),
        );
        let out = drive(&task, &[]);
        assert!(
            out.contains("- **Evidence**: `thoughts/d.md:16-17`"),
            "{out}"
        );
        // Only its first ten lines shown: the rest is read from line 11, and both make the
        // document.
        let first: String = numbered(DOC)
            .lines()
            .take(10)
            .map(|l| format!("{l}\n"))
            .collect();
        let total = DOC.lines().count();
        let shown = format!("{first}(lines 1-10 of {total}; read on with offset 11)\n");
        let task = with_ahead(
            "Extract the decisions in thoughts/d.md.",
            "thoughts/d.md",
            &shown,
        );
        assert_eq!(crate::tools::read::read_on_offset(&shown), Some(11));
        let mut messages = vec![Message::user(&task)];
        let req = request(
            "Analyze.",
            &["read"],
            Some(Contract::document_analysis()),
            messages.clone(),
        );
        let resp = super::super::respond(&req);
        assert_eq!(resp.tool_calls.len(), 1, "{resp:?}");
        assert_eq!(
            resp.tool_calls[0].arguments,
            serde_json::json!({"path": "thoughts/d.md", "offset": 11})
        );
        let rest: String = numbered(DOC)
            .lines()
            .skip(10)
            .map(|l| format!("{l}\n"))
            .collect();
        play(&mut messages, &resp, |_| Ok(rest.clone()));
        let req = request(
            "Analyze.",
            &["read"],
            Some(Contract::document_analysis()),
            messages,
        );
        let out = super::super::respond(&req).content;
        assert!(
            out.contains("- **Evidence**: `thoughts/d.md:16-17`"),
            "{out}"
        );
        assert!(
            out.contains("document_status: accepted"),
            "frontmatter from the shown lines: {out}"
        );
    }
}
