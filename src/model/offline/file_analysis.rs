//! The offline model as a file analyzer: fills the file-analysis contract (agent/file-analyzer.md)
//! by extraction, so `analyze_file` and `switchboard knowledge analyze` work with no network.
//!
//! It plays this role only when the agent owes a `format: json` contract whose schema has
//! `notes`, `entities` and `relations` properties. From the chunk's numbered lines it takes:
//! markdown headings (with the first sentence under them), definitions (table rows, `**term**:`
//! and `` `term`: `` list items), declarations of code symbols (with the doc comment above them),
//! sentences that state a decision or a rule, and lines that mention the focus. Every item
//! carries the lines it was taken from; nothing is made up.

use regex::Regex;
use serde_json::{json, Value};
use std::sync::OnceLock;

use super::Turn;
use crate::model::{ModelRequest, Role as MsgRole};

/// Most items of each kind in one answer (the contract allows 80).
const MAX_ITEMS: usize = 60;
/// Longest note text, in characters (the contract allows 600).
const MAX_TEXT: usize = 300;

/// Whether `request` owes a file analysis this role can write.
pub fn applies(request: &ModelRequest) -> bool {
    super::json_contract_properties(request).is_some_and(|p| {
        ["notes", "entities", "relations"]
            .iter()
            .all(|k| p.get(k).is_some())
    })
}

/// The analysis of the chunk in the task (the first user message).
pub fn turn(request: &ModelRequest) -> Turn {
    let task = request
        .messages
        .iter()
        .find(|m| m.role == MsgRole::User)
        .map(|m| m.content.as_str())
        .unwrap_or("");
    Turn::Answer(serde_json::to_string_pretty(&analyse(task)).unwrap_or_default())
}

/// The task's header fields and numbered lines.
struct Task<'a> {
    path: &'a str,
    language: &'a str,
    focus: Vec<String>,
    lines: Vec<(u32, &'a str)>,
}

fn parse_task(task: &str) -> Task<'_> {
    let mut t = Task {
        path: "",
        language: "",
        focus: Vec::new(),
        lines: Vec::new(),
    };
    let mut inside = false;
    for line in task.lines() {
        if inside {
            if line == crate::knowledge::analyze::FILE_END {
                inside = false;
                continue;
            }
            if let Some((n, text)) = line.split_once('\t') {
                if let Ok(n) = n.trim().parse::<u32>() {
                    t.lines.push((n, text.trim_end_matches('\r')));
                }
            }
        } else if line == crate::knowledge::analyze::FILE_START {
            inside = true;
        } else if let Some(rest) = line.strip_prefix("File: ") {
            let (path, meta) = rest.split_once(" (").unwrap_or((rest, ""));
            t.path = path;
            t.language = meta
                .strip_prefix("language: ")
                .and_then(|m| m.split(',').next())
                .unwrap_or("");
        } else if let Some(rest) = line.strip_prefix("Focus: ") {
            if rest != "none" {
                t.focus = rest
                    .split(|c: char| !c.is_alphanumeric())
                    .filter(|w| w.chars().count() >= 3)
                    .map(str::to_lowercase)
                    .collect();
            }
        }
    }
    t
}

fn re(cell: &'static OnceLock<Regex>, pattern: &str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(pattern).expect("a valid literal pattern"))
}

fn heading_re() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    re(&R, r"^(#{1,6})\s+(.+?)\s*#*\s*$")
}

/// A definition line in code: `fn`, `struct`, `class`, `def`… and its name.
pub(super) fn symbol_re() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    re(
        &R,
        r"^\s*(?:pub(?:\([^)]*\))?\s+|export\s+)?(?:async\s+|unsafe\s+|const\s+(?:fn\s)?)?(fn|struct|enum|trait|type|const|static|mod|class|def|function|interface)\s+([A-Za-z_][A-Za-z0-9_]*)",
    )
}

fn impl_re() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    re(
        &R,
        r"^\s*impl(?:<[^>]*>)?\s+([A-Za-z_][A-Za-z0-9_:]*)(?:<[^>]*>)?\s+for\s+([A-Za-z_][A-Za-z0-9_]*)",
    )
}

fn definition_re() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    re(
        &R,
        r"^\s*(?:[-*]\s+)?(?:\*\*([^*]{1,80})\*\*|`([^`]{1,80})`)\s*(?::|—|–| - )\s*(.{3,})$",
    )
}

fn decision_re() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    re(
        &R,
        r"(?i)\b(decided|decision|we chose|chosen|instead of|because|so that|must not|must|never|always)\b",
    )
}

fn clip(s: &str) -> String {
    let s = s.trim();
    if s.chars().count() <= MAX_TEXT {
        return s.to_string();
    }
    let cut: String = s.chars().take(MAX_TEXT - 1).collect();
    format!("{cut}…")
}

/// Markdown inline marks removed, for note text.
fn plain(s: &str) -> String {
    s.replace("**", "").replace('`', "")
}

/// The first sentence of `s`.
fn first_sentence(s: &str) -> &str {
    s.find(". ").map_or(s, |i| &s[..=i])
}

fn lines_of(a: u32, b: u32) -> String {
    if a == b {
        a.to_string()
    } else {
        format!("{a}-{b}")
    }
}

/// The extraction for one chunk task.
pub fn analyse(task: &str) -> Value {
    let t = parse_task(task);
    let markdown = t.language == "markdown";
    let mut notes: Vec<Value> = Vec::new();
    let mut entities: Vec<Value> = Vec::new();
    let mut relations: Vec<Value> = Vec::new();
    let mut focus_points: Vec<Value> = Vec::new();
    let mut purpose = String::new();
    // Open headings by level, for `part_of` relations.
    let mut open: Vec<(usize, String)> = Vec::new();
    let mut in_code = false;
    let mut doc: Vec<&str> = Vec::new();
    for (i, &(n, line)) in t.lines.iter().enumerate() {
        let trimmed = line.trim();
        if trimmed.starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if !t.focus.is_empty() && focus_points.len() < 20 {
            let lower = trimmed.to_lowercase();
            if t.focus.iter().any(|w| lower.contains(w.as_str())) && trimmed.len() > 3 {
                focus_points.push(json!({"text": clip(&plain(trimmed)), "lines": n.to_string()}));
            }
        }
        if markdown && !in_code {
            if let Some(c) = heading_re().captures(trimmed) {
                let level = c[1].len();
                let title = plain(&c[2]);
                // The first prose line under the heading says what the section is about.
                let next = t.lines[i + 1..]
                    .iter()
                    .take(6)
                    .find(|(_, l)| {
                        let l = l.trim();
                        !l.is_empty() && !l.starts_with('#') && !l.starts_with('|')
                    })
                    .filter(|(_, l)| !heading_re().is_match(l.trim()));
                let (text, end) = match next {
                    Some(&(m, l)) => (format!("{title}: {}", first_sentence(&plain(l.trim()))), m),
                    None => (title.clone(), n),
                };
                if purpose.is_empty() {
                    purpose = clip(&text);
                }
                notes.push(
                    json!({"kind": "heading", "text": clip(&text), "lines": lines_of(n, end)}),
                );
                entities.push(json!({"name": clip(&title), "kind": "section", "description": "", "lines": n.to_string()}));
                open.retain(|(l, _)| *l < level);
                if let Some((_, parent)) = open.last() {
                    relations.push(json!({"from": clip(&title), "to": parent, "kind": "part_of", "lines": n.to_string()}));
                }
                open.push((level, clip(&title)));
                continue;
            }
            if trimmed.starts_with('|') && !trimmed.contains("---") {
                let cells: Vec<&str> = trimmed
                    .trim_matches('|')
                    .split('|')
                    .map(str::trim)
                    .collect();
                let header_next = t
                    .lines
                    .get(i + 1)
                    .is_some_and(|(_, l)| l.trim().starts_with('|') && l.contains("---"));
                if cells.len() >= 2 && !header_next && !cells[0].is_empty() && !cells[1].is_empty()
                {
                    let term = plain(cells[0]);
                    notes.push(json!({"kind": "definition", "text": clip(&format!("{term}: {}", plain(&cells[1..].join("; ")))), "lines": n.to_string()}));
                    entities.push(json!({"name": clip(&term), "kind": "term", "description": clip(&plain(cells[1])), "lines": n.to_string()}));
                    if let Some((_, section)) = open.last() {
                        relations.push(json!({"from": clip(&term), "to": section, "kind": "part_of", "lines": n.to_string()}));
                    }
                }
                continue;
            }
        }
        if !markdown {
            let is_doc = trimmed.starts_with("///") || trimmed.starts_with("//!");
            if trimmed.starts_with("//!") && purpose.is_empty() {
                purpose = clip(trimmed.trim_start_matches("//!"));
            }
            if is_doc || trimmed.starts_with("#[") {
                if is_doc {
                    doc.push(trimmed.trim_start_matches('/').trim_start_matches('!'));
                }
                continue;
            }
            if let Some(c) = impl_re().captures(line) {
                relations.push(json!({"from": &c[2], "to": &c[1], "kind": "implements", "lines": n.to_string()}));
            } else if let Some(c) = symbol_re().captures(line) {
                let (kind, name) = (&c[1], &c[2]);
                let signature = trimmed.trim_end_matches('{').trim_end();
                let about = doc.first().map(|d| first_sentence(d.trim())).unwrap_or("");
                let start = n.saturating_sub(doc.len() as u32);
                let text = if about.is_empty() {
                    format!("`{signature}`")
                } else {
                    format!("`{signature}`: {about}")
                };
                notes.push(json!({"kind": "symbol", "text": clip(&text), "lines": lines_of(start.max(1), n)}));
                entities.push(json!({"name": name, "kind": kind, "description": clip(about), "lines": n.to_string()}));
                if !t.path.is_empty() {
                    relations.push(json!({"from": t.path, "to": name, "kind": "defines", "lines": n.to_string()}));
                }
            }
            doc.clear();
        }
        if let Some(c) = (!in_code)
            .then(|| definition_re().captures(trimmed))
            .flatten()
        {
            let term = c.get(1).or(c.get(2)).map_or("", |m| m.as_str());
            notes.push(json!({"kind": "definition", "text": clip(&format!("{term}: {}", plain(&c[3]))), "lines": n.to_string()}));
            entities.push(json!({"name": clip(term), "kind": "term", "description": clip(&plain(&c[3])), "lines": n.to_string()}));
            continue;
        }
        let is_prose = markdown || trimmed.starts_with("//") || trimmed.starts_with('#');
        if is_prose && !in_code && decision_re().is_match(trimmed) && trimmed.len() > 20 {
            let text = plain(trimmed.trim_start_matches(['/', '#', '-', '*', ' ']));
            notes.push(json!({"kind": "decision", "text": clip(&text), "lines": n.to_string()}));
        }
        if purpose.is_empty() && markdown && trimmed.starts_with("description:") {
            purpose = clip(
                trimmed
                    .trim_start_matches("description:")
                    .trim()
                    .trim_matches('"'),
            );
        }
    }
    if purpose.is_empty() {
        purpose = t
            .lines
            .iter()
            .map(|(_, l)| l.trim())
            .find(|l| l.len() > 3 && *l != "---")
            .map(clip)
            .unwrap_or_default();
    }
    notes.truncate(MAX_ITEMS);
    entities.truncate(MAX_ITEMS);
    relations.truncate(MAX_ITEMS);
    let mut out = json!({
        "purpose": purpose,
        "language": t.language,
        "notes": notes,
        "entities": entities,
        "relations": relations,
    });
    if !t.focus.is_empty() {
        out["focus_points"] = Value::Array(focus_points);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(language: &str, focus: &str, body: &str) -> String {
        let numbered: String = body
            .lines()
            .enumerate()
            .map(|(i, l)| format!("{:>6}\t{l}\n", i + 10))
            .collect();
        format!(
            "Analyse chunk 1/1 of x, lines 10–99.\nFile: x (language: {language}, 1 bytes, 1 lines)\nFocus: {focus}\n\n<file>\n{numbered}</file>\n"
        )
    }

    #[test]
    fn markdown_headings_definitions_and_decisions_are_extracted_with_lines() {
        let body = "# The store\n\nThe store keeps notes. More text.\n\n## Tables\n\n| table | holds |\n| --- | --- |\n| sources | one file version |\n\nWe chose SQLite because it is embedded.\n";
        let v = analyse(&task("markdown", "none", body));
        assert_eq!(v["purpose"], "The store: The store keeps notes.");
        let notes = v["notes"].as_array().unwrap();
        assert!(notes
            .iter()
            .any(|n| n["kind"] == "heading" && n["lines"] == "10-12"));
        assert!(notes.iter().any(|n| n["kind"] == "definition"
            && n["text"] == "sources: one file version"
            && n["lines"] == "18"));
        assert!(notes
            .iter()
            .any(|n| n["kind"] == "decision" && n["lines"] == "20"));
        let rel = v["relations"].as_array().unwrap();
        assert!(rel
            .iter()
            .any(|r| r["from"] == "Tables" && r["to"] == "The store"));
        assert!(v.get("focus_points").is_none());
    }

    #[test]
    fn code_symbols_carry_their_doc_comment_and_focus_lines_are_found() {
        let body = "//! Parses things.\n\n/// Opens the store. Creates it.\npub fn open(path: &Path) -> Result<Store, Error> {\n    Err(Error::Busy)\n}\nimpl Display for Store {\n";
        let v = analyse(&task("rust", "error", body));
        assert_eq!(v["purpose"], "Parses things.");
        let notes = v["notes"].as_array().unwrap();
        let sym = notes.iter().find(|n| n["kind"] == "symbol").unwrap();
        assert_eq!(sym["lines"], "12-13");
        assert!(sym["text"].as_str().unwrap().contains("Opens the store."));
        let rel = v["relations"].as_array().unwrap();
        assert!(rel
            .iter()
            .any(|r| r["kind"] == "implements" && r["from"] == "Store"));
        let focus = v["focus_points"].as_array().unwrap();
        assert!(focus.iter().any(|f| f["lines"] == "14"));
    }
}
