//! The locator role: turn the task into a query, search the scope through the agent's tools,
//! rank with BM25F, and list the best real paths grouped by kind with title, date and status.
//!
//! Steps (each one turn): `search` (a glob of the scope and one grep for the query terms, in
//! parallel), `meta` (one grep per kept document for its title, date and status lines), answer.

use crate::tools::grep::MAX_LIMIT;
use regex::Regex;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::LazyLock;

use super::bm25;
use super::envelope::Envelope;
use super::parse;
// Kept reachable here: the locator's search pattern and list size are its public face.
use super::rank::{headings_pattern, keep, name_words, rank, refine_plan};
pub use super::rank::{terms_pattern, TOP_K};
use super::role::has_tool;
use super::{call, first_line, strip_boilerplate, History, Turn};
use crate::model::ModelRequest;

/// Documents suggested for analysis at most.
pub const SUGGEST: usize = 3;
/// A document the locator lists.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Listed {
    pub path: String,
    pub title: Option<String>,
    pub date: Option<String>,
    pub status: Option<String>,
}

pub fn turn(request: &ModelRequest, history: &History) -> Turn {
    let query_text = query_text(history.task);
    let terms = bm25::query_terms(&query_text);
    let scope = scope(history.task, &request.system);
    let search = history.step("search");
    if search.is_empty() {
        if terms.is_empty() {
            return answer(request, &query_text, &scope, &terms, &[], "no search terms");
        }
        let calls = search_calls(request, &terms, &scope);
        if calls.is_empty() {
            return answer(
                request,
                &query_text,
                &scope,
                &terms,
                &[],
                "no search tool available",
            );
        }
        return Turn::Calls(calls);
    }
    let refine = history.step("refine");
    if refine.is_empty() && has_tool(request, "grep") {
        if let Some(plan) = refine_plan(&terms, &search) {
            let mut calls = vec![call(
                "refine",
                0,
                "grep",
                json!({"pattern": headings_pattern(&terms), "path": scope, "limit": MAX_LIMIT}),
            )];
            if !plan.kept.is_empty() && plan.kept.len() < terms.len() {
                calls.push(call(
                    "refine",
                    1,
                    "grep",
                    json!({"pattern": terms_pattern(&plan.kept), "path": scope, "limit": MAX_LIMIT}),
                ));
            }
            return Turn::Calls(calls);
        }
    }
    let searched: Vec<super::Exchange> = search.iter().chain(refine.iter()).copied().collect();
    let ranked = rank(&terms, &query_text, &searched);
    let kept = keep(&ranked);
    let meta = history.step("meta");
    if meta.is_empty() && !kept.is_empty() && has_tool(request, "grep") {
        let calls = kept
            .iter()
            .enumerate()
            .map(|(i, s)| {
                call(
                    "meta",
                    i,
                    "grep",
                    json!({"pattern": "^(# |date:|status:)", "path": s.path}),
                )
            })
            .collect();
        return Turn::Calls(calls);
    }
    let mut listed: Vec<Listed> = kept
        .iter()
        .map(|s| Listed {
            path: s.path.clone(),
            ..Default::default()
        })
        .collect();
    fill_meta(&mut listed, &searched, &meta);
    let note = format!(
        "{} candidate files scored, {} kept",
        ranked.len(),
        listed.len()
    );
    answer(request, &query_text, &scope, &terms, &listed, &note)
}

/// The task without boilerplate and without the paths it names.
pub fn query_text(task: &str) -> String {
    strip_boilerplate(task)
}

static DIR_TOKEN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"`\.?/?([A-Za-z0-9_.-]+)/[^`\s]*`").expect("static regex"));
static BARE_DIR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:^|\s)([a-z0-9_.-]+(?:/[a-z0-9_.-]+)*/)(?:\s|$|[.,;:)])").expect("static regex")
});

/// The folder to search: one the task names, else the top folder the agent's prompt names most
/// often in code spans (`thoughts/` for a thoughts locator), else the project root.
pub fn scope(task: &str, system: &str) -> String {
    if let Some(cap) = BARE_DIR.captures(&strip_boilerplate(task)) {
        if let Some(m) = cap.get(1) {
            return m.as_str().to_string();
        }
    }
    let mut counts: Vec<(String, usize)> = Vec::new();
    for cap in DIR_TOKEN.captures_iter(system) {
        let Some(top) = cap.get(1) else { continue };
        let top = top.as_str();
        if top == "." || top == ".." || top.contains('{') {
            continue;
        }
        match counts.iter_mut().find(|(t, _)| t == top) {
            Some((_, n)) => *n += 1,
            None => counts.push((top.to_string(), 1)),
        }
    }
    let best = counts
        .iter()
        .fold(None::<&(String, usize)>, |best, c| match best {
            Some(b) if b.1 >= c.1 => Some(b),
            _ => Some(c),
        });
    match best {
        Some((top, _)) => format!("{top}/"),
        None => ".".to_string(),
    }
}
pub fn search_calls(
    request: &ModelRequest,
    terms: &[String],
    scope: &str,
) -> Vec<crate::model::ToolCall> {
    let mut calls = Vec::new();
    if has_tool(request, "glob") {
        calls.push(call(
            "search",
            calls.len(),
            "glob",
            json!({"pattern": "**/*", "path": scope}),
        ));
    } else if has_tool(request, "list") {
        calls.push(call("search", calls.len(), "list", json!({"path": scope})));
    }
    if has_tool(request, "grep") {
        calls.push(call(
            "search",
            calls.len(),
            "grep",
            json!({"pattern": terms_pattern(terms), "path": scope, "limit": MAX_LIMIT}),
        ));
    }
    calls
}
fn fill_meta(listed: &mut [Listed], search: &[super::Exchange], meta: &[super::Exchange]) {
    /// Title, date and status of one document, as far as grep showed them.
    type Meta = (Option<String>, Option<String>, Option<String>);
    let mut seen: BTreeMap<&str, Meta> = BTreeMap::new();
    let sources = search
        .iter()
        .chain(meta.iter())
        .filter(|e| e.call.name == "grep");
    for ex in sources {
        let Some(out) = ex.ok() else { continue };
        for hit in parse::grep_lines(out) {
            let entry = seen.entry(hit.path).or_default();
            if let Some(t) = hit.text.strip_prefix("# ") {
                entry.0.get_or_insert_with(|| t.trim().to_string());
            } else if hit.line < 30 {
                if let Some(d) = hit.text.strip_prefix("date:") {
                    entry.1.get_or_insert_with(|| unquote(d));
                } else if let Some(s) = hit.text.strip_prefix("status:") {
                    entry.2.get_or_insert_with(|| unquote(s));
                }
            }
        }
    }
    for doc in listed.iter_mut() {
        if let Some((title, date, status)) = seen.get(doc.path.as_str()) {
            doc.title = title.clone();
            doc.date = date.clone();
            doc.status = status.clone();
        }
        if doc.date.is_none() {
            doc.date = parse::date_in_name(&doc.path).map(str::to_string);
        }
    }
}

fn unquote(v: &str) -> String {
    v.trim().trim_matches(|c| c == '"' || c == '\'').to_string()
}

static ASK_PREFIX: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)^(?:please\s+)?(?:find|locate|list|search for)\b[^:]*?\b(?:about|on|for)\b:?\s*",
    )
    .expect("static regex")
});

static KIND_ROW: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)^\|\s*([^|`]+?)\s*\|\s*`([^`]+/)`\s*\|").expect("static regex")
});

/// The groups the prompt documents as a `| Kind | `folder/` |` table, in its order.
pub fn groups(system: &str) -> Vec<(String, String)> {
    KIND_ROW
        .captures_iter(system)
        .filter_map(|c| {
            Some((
                c.get(1)?.as_str().to_string(),
                c.get(2)?.as_str().to_string(),
            ))
        })
        .collect()
}

fn group_of(path: &str, groups: &[(String, String)]) -> (usize, String) {
    let best = groups
        .iter()
        .enumerate()
        .filter(|(_, (_, folder))| path.starts_with(folder.as_str()))
        .max_by_key(|(_, (_, folder))| folder.len());
    match best {
        Some((i, (kind, _))) => (i, kind.clone()),
        None => {
            let parent = path.rsplit_once('/').map_or("", |(p, _)| p);
            let name = parent.rsplit('/').next().unwrap_or("");
            let mut label: String = name.to_string();
            if let Some(first) = label.get(..1) {
                label = first.to_uppercase() + label.get(1..).unwrap_or("");
            }
            if label.is_empty() {
                label = "Other".into();
            }
            (groups.len(), label)
        }
    }
}

/// Renders the grouped list (newest first within a group) and the suggestion line.
pub fn render_list(system: &str, listed: &[Listed]) -> String {
    let groups = groups(system);
    let mut grouped: BTreeMap<(usize, String), Vec<&Listed>> = BTreeMap::new();
    for doc in listed {
        grouped
            .entry(group_of(&doc.path, &groups))
            .or_default()
            .push(doc);
    }
    let mut out = String::new();
    for ((_, label), mut docs) in grouped {
        docs.sort_by(|a, b| b.date.cmp(&a.date).then_with(|| a.path.cmp(&b.path)));
        out.push_str(&format!("### {label}\n"));
        for d in docs {
            let title = d.title.clone().unwrap_or_else(|| name_words(&d.path));
            let mut meta: Vec<&str> = Vec::new();
            if let Some(date) = &d.date {
                meta.push(date);
            }
            if let Some(status) = &d.status {
                meta.push(status);
            }
            if meta.is_empty() {
                out.push_str(&format!("- `{}` — {title}\n", d.path));
            } else {
                out.push_str(&format!("- `{}` — {title} ({})\n", d.path, meta.join(", ")));
            }
        }
        out.push('\n');
    }
    let suggested: Vec<String> = listed
        .iter()
        .take(SUGGEST)
        .map(|d| format!("`{}`", d.path))
        .collect();
    out.push_str(&format!(
        "Suggested for analysis: {}\n",
        suggested.join(", ")
    ));
    out
}

fn answer(
    request: &ModelRequest,
    query: &str,
    scope: &str,
    terms: &[String],
    listed: &[Listed],
    note: &str,
) -> Turn {
    let topic = topic_line(query);
    let thinking = format!(
        "Search terms: {}. Scope: `{scope}`. Ranked with BM25 over titles, headings and text; {note}.",
        if terms.is_empty() {
            "(none)".to_string()
        } else {
            terms.join(", ")
        }
    );
    let body = if listed.is_empty() {
        format!("## Documents about {topic}\n\nNo documents under {scope} match {topic}.")
    } else {
        format!(
            "## Documents about {topic}\n\n{}",
            render_list(&request.system, listed)
        )
    };
    let env = Envelope {
        fields: Vec::new(),
        thinking,
        answer: body,
    };
    Turn::Answer(env.render(request.response_contract.as_ref()))
}

/// The topic as one line without markup that could be mistaken for structure.
fn topic_line(query: &str) -> String {
    let line = first_line(query).replace(['<', '>', '`'], "");
    let line = ASK_PREFIX.replace(&line, "");
    let line = line.trim().trim_end_matches(['.', ':']).to_string();
    let mut out: String = line.chars().take(120).collect();
    if out.len() < line.len() {
        out.push('…');
    }
    if out.is_empty() {
        "the topic".into()
    } else {
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{play, request};
    use super::*;
    use crate::contract::{Contract, ContractDecl, ContractSpec};
    use crate::model::Message;

    const SYSTEM: &str = "Find docs in the project's `thoughts/` tree.\n\n| Kind | Folder |\n| --- | --- |\n| Research | `thoughts/shared/research/` |\n| Decisions | `thoughts/shared/decisions/` |\n";

    fn contract() -> Contract {
        Contract::resolve(&ContractDecl::Inline(ContractSpec {
            extends: Some("envelope".into()),
            message_types: Some(vec!["LOCATOR_RESPONSE".into()]),
            message_id_prefix: Some("locator".into()),
            ..Default::default()
        }))
        .unwrap()
    }

    const FILES: &[(&str, &str)] = &[
        (
            "thoughts/shared/decisions/2026-11-08-event-log.md",
            "---\ndate: 2026-11-08\nstatus: active\n---\n# Decision: the event log\n\nEvents are appended to events.jsonl.\n",
        ),
        (
            "thoughts/shared/research/2026-11-01-yaml.md",
            "---\ndate: 2026-11-01\nstatus: draft\n---\n# Research: YAML parsers\n\nWe compare parsers. The log is unrelated.\n",
        ),
    ];

    fn run(c: &crate::model::ToolCall) -> Result<String, super::super::testing::ToolFailed> {
        let path = c.arguments["path"].as_str().unwrap_or(".");
        match c.name.as_str() {
            "glob" => Ok(FILES.iter().map(|(p, _)| format!("{p}\n")).collect()),
            "grep" => {
                let re = Regex::new(c.arguments["pattern"].as_str().unwrap()).unwrap();
                let mut out = String::new();
                for (p, text) in FILES {
                    if !p.starts_with(path.trim_end_matches('/')) {
                        continue;
                    }
                    for (i, l) in text.lines().enumerate() {
                        if re.is_match(l) {
                            out.push_str(&format!("{p}:{}:{l}\n", i + 1));
                        }
                    }
                }
                Ok(out)
            }
            _ => Err("no such tool".into()),
        }
    }

    fn drive(question: &str) -> String {
        let mut messages = vec![Message::user(question)];
        for _ in 0..5 {
            let req = request(
                SYSTEM,
                &["grep", "glob", "list"],
                Some(contract()),
                messages.clone(),
            );
            let resp = super::super::respond(&req);
            if resp.tool_calls.is_empty() {
                return resp.content;
            }
            play(&mut messages, &resp, run);
        }
        panic!("locator did not finish");
    }

    #[test]
    fn scope_comes_from_the_prompt() {
        assert_eq!(
            scope("Find the event log. Correlation: x", SYSTEM),
            "thoughts/"
        );
        assert_eq!(scope("look under src/agent/ please", SYSTEM), "src/agent/");
        assert_eq!(scope("q", "no paths"), ".");
    }

    #[test]
    fn lists_real_paths_grouped_with_title_date_status() {
        let answer = drive("Find every document about the event log. Correlation: corr-1");
        assert!(
            answer.starts_with("---\nmessage_id: locator-2026-11-21-001\n"),
            "{answer}"
        );
        assert!(answer.contains("message_type: LOCATOR_RESPONSE"));
        assert!(answer.contains(
            "### Decisions\n- `thoughts/shared/decisions/2026-11-08-event-log.md` — Decision: the event log (2026-11-08, active)"
        ), "{answer}");
        assert!(answer.contains(
            "Suggested for analysis: `thoughts/shared/decisions/2026-11-08-event-log.md`"
        ));
    }

    #[test]
    fn unrelated_question_finds_nothing() {
        let answer = drive("Which GPU kernels does the tokenizer use? Correlation: c");
        assert!(
            answer.contains("No documents under thoughts/ match"),
            "{answer}"
        );
        assert!(!answer.contains("`thoughts/shared"));
    }
}
