//! A document as the `read` tool returned it, and what in it commits the project: sections
//! headed Decision / Constraint / Spec, MUST and "we will" sentences, and spec tables, found with
//! pulldown-cmark and each cut to an exact 1–N line range.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use regex::Regex;
use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::LazyLock;

use super::parse;
use crate::markdown::LineIndex;

/// Signal items per document at most: the analyzer is meant to be ruthless.
pub const MAX_ITEMS: usize = 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Decision,
    Constraint,
    Spec,
}

impl Kind {
    pub fn label(self) -> &'static str {
        match self {
            Kind::Decision => "Decision",
            Kind::Constraint => "Constraint",
            Kind::Spec => "Spec",
        }
    }
}

/// One signal item: a kind, a short title and the 1-based inclusive line range it quotes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    pub kind: Kind,
    pub title: String,
    pub start: usize,
    pub end: usize,
}

/// A document as rebuilt from the `read` output.
#[derive(Debug, Clone)]
pub struct Document {
    pub path: String,
    /// Index 0 is line 1; `None` for a line the output did not show.
    pub lines: Vec<Option<String>>,
    pub frontmatter: BTreeMap<String, String>,
    pub body_line: usize,
}

impl Document {
    pub fn from_read(path: &str, output: &str) -> Self {
        let lines = parse::numbered_lines(output);
        let (frontmatter, body_line) =
            parse::frontmatter(lines.iter().map(|l| l.as_deref().unwrap_or("")));
        Document {
            path: path.to_string(),
            lines,
            frontmatter,
            body_line,
        }
    }

    pub fn line(&self, n: usize) -> Option<&str> {
        n.checked_sub(1)
            .and_then(|i| self.lines.get(i))
            .and_then(|l| l.as_deref())
    }

    pub fn date(&self) -> Option<String> {
        self.frontmatter
            .get("date")
            .filter(|d| chrono::NaiveDate::parse_from_str(d, "%Y-%m-%d").is_ok())
            .cloned()
            .or_else(|| parse::date_in_name(&self.path).map(str::to_string))
    }

    pub fn status(&self) -> Option<String> {
        self.frontmatter
            .get("status")
            .filter(|s| !s.is_empty())
            .cloned()
    }

    pub fn title(&self) -> Option<String> {
        self.lines
            .iter()
            .skip(self.body_line.saturating_sub(1))
            .flatten()
            .find_map(|l| l.strip_prefix("# ").map(|t| t.trim().to_string()))
    }
}

/// Reliability from the document's status.
pub fn reliability(status: Option<&str>) -> (&'static str, String) {
    match status.map(str::to_ascii_lowercase).as_deref() {
        Some("active" | "accepted" | "approved" | "final" | "done") => {
            ("High", format!("status `{}`", status.unwrap_or_default()))
        }
        Some(s @ ("superseded" | "deprecated" | "rejected" | "obsolete" | "withdrawn")) => {
            ("Low", format!("status `{s}`: history, not current policy"))
        }
        Some(s) => ("Medium", format!("status `{s}`")),
        None => ("Medium", "the document states no status".to_string()),
    }
}

static CONSTRAINT_WORDS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(MUST|SHALL|REQUIRED|MUST NOT|SHALL NOT)\b").expect("static regex")
});
static DECISION_WORDS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(we will|we decided|we have decided|we chose|we choose|is decided|was decided|decided that|will use|we adopt|we use)\b")
        .expect("static regex")
});

/// What a heading makes of the blocks under it.
fn section_kind(heading: &str) -> Option<Kind> {
    let h = heading.to_lowercase();
    if h.contains("decision") || h.contains("recommendation") {
        Some(Kind::Decision)
    } else if h.contains("constraint") || h.contains("requirement") || h.contains("rules") {
        Some(Kind::Constraint)
    } else if h.contains("spec") || h.contains("format") || h.contains("default") {
        Some(Kind::Spec)
    } else {
        None
    }
}

/// A block of the document that may become an item.
#[derive(Debug, Clone)]
struct Unit {
    range: Range<usize>,
    table: bool,
    /// Headings (level ≥ 2) in force, outermost first.
    headings: Vec<String>,
}

fn heading_text(src: &str) -> String {
    src.trim()
        .trim_start_matches('#')
        .trim()
        .trim_end_matches('#')
        .trim()
        .to_string()
}

fn units(text: &str) -> (Vec<Unit>, Option<String>) {
    let mut out = Vec::new();
    let mut headings: Vec<(u8, String)> = Vec::new();
    let mut h1: Option<String> = None;
    let mut pending_heading: Option<(u8, usize)> = None;
    // Items open: (start, own end once a nested block starts).
    let mut items: Vec<(usize, Option<usize>)> = Vec::new();
    let current = |headings: &Vec<(u8, String)>| -> Vec<String> {
        headings
            .iter()
            .filter(|(l, _)| *l >= 2)
            .map(|(_, t)| t.clone())
            .collect()
    };
    for (event, range) in Parser::new_ext(text, Options::ENABLE_TABLES).into_offset_iter() {
        match event {
            Event::Start(Tag::Heading { level, .. }) => {
                pending_heading = Some((level as u8, range.start));
                let _ = range;
            }
            Event::End(TagEnd::Heading(level)) => {
                let level = level as u8;
                let start = pending_heading.take().map_or(range.start, |(_, s)| s);
                let t = heading_text(text.get(start..range.end).unwrap_or(""));
                if level == 1 && h1.is_none() {
                    h1 = Some(t.clone());
                }
                headings.retain(|(l, _)| *l < level);
                headings.push((level, t));
            }
            Event::Start(Tag::List(_))
            | Event::Start(Tag::CodeBlock(_))
            | Event::Start(Tag::Table(_))
                if !items.is_empty() =>
            {
                if let Some(top) = items.last_mut() {
                    top.1.get_or_insert(range.start);
                }
                if let Event::Start(Tag::Table(_)) = event {
                    out.push(Unit {
                        range: range.clone(),
                        table: true,
                        headings: current(&headings),
                    });
                }
            }
            Event::Start(Tag::Table(_)) => out.push(Unit {
                range: range.clone(),
                table: true,
                headings: current(&headings),
            }),
            Event::Start(Tag::Item) => items.push((range.start, None)),
            Event::End(TagEnd::Item) => {
                if let Some((start, own_end)) = items.pop() {
                    out.push(Unit {
                        range: start..own_end.unwrap_or(range.end),
                        table: false,
                        headings: current(&headings),
                    });
                }
            }
            Event::Start(Tag::Paragraph) if items.is_empty() => out.push(Unit {
                range: range.clone(),
                table: false,
                headings: current(&headings),
            }),
            _ => {}
        }
    }
    out.sort_by_key(|u| u.range.start);
    (out, h1)
}

/// Plain words of a markdown snippet: markup characters dropped, whitespace collapsed.
fn plain(src: &str) -> String {
    let mut s = String::new();
    for line in src.lines() {
        let t = line.trim_start();
        let t = t
            .trim_start_matches(['-', '*', '+', '>'])
            .trim_start_matches(|c: char| c.is_ascii_digit())
            .trim_start_matches(['.', ')'])
            .trim();
        s.push_str(t);
        s.push(' ');
    }
    s.replace(['*', '`', '|', '<', '>', '#'], "")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// A title of at most `words` words.
fn short_title(text: &str, words: usize) -> String {
    let all: Vec<&str> = text.split_whitespace().collect();
    let mut t = all
        .iter()
        .take(words)
        .copied()
        .collect::<Vec<_>>()
        .join(" ");
    t = t.trim_end_matches([',', ';', ':', '.']).to_string();
    if all.len() > words {
        t.push('…');
    }
    if t.is_empty() {
        "untitled".into()
    } else {
        t
    }
}

/// The sentence of `src` containing byte `at`: its start offset.
fn sentence_start(src: &str, at: usize) -> usize {
    let before = src.get(..at).unwrap_or("");
    let mut best = 0;
    for pat in [". ", ".\n", ": ", ":\n", "; "] {
        if let Some(i) = before.rfind(pat) {
            best = best.max(i + pat.len());
        }
    }
    best
}

/// The signal items of `doc`, in document order, each quoting at most `max_lines` lines.
pub fn extract(doc: &Document, max_lines: usize) -> Vec<Item> {
    let max_lines = max_lines.max(1);
    // The body as text, frontmatter blanked so line numbers stay those of the file.
    let mut text = String::new();
    for (i, l) in doc.lines.iter().enumerate() {
        if i + 1 >= doc.body_line {
            text.push_str(l.as_deref().unwrap_or(""));
        }
        text.push('\n');
    }
    let index = LineIndex::new(&text);
    let (units, h1) = units(&text);
    let doc_kind = h1.as_deref().and_then(section_kind);
    let mut items: Vec<Item> = Vec::new();
    for unit in units {
        let Some(src) = text.get(unit.range.clone()) else {
            continue;
        };
        let first = index.line(unit.range.start);
        let mut last = index.line(unit.range.end.saturating_sub(1).max(unit.range.start));
        while last > first && doc.line(last).is_none_or(|l| l.trim().is_empty()) {
            last -= 1;
        }
        let section = unit.headings.iter().rev().find_map(|h| section_kind(h));
        let section_title = unit.headings.last().cloned();
        let constraint = CONSTRAINT_WORDS.find(src);
        let decision = DECISION_WORDS.find(src);
        // A table is a spec when its section says so, or when it stands under the title of a
        // document that says so. Under any other heading (a list of related links, "Historical
        // Documentation") the title's word does not reach it.
        let table_kind = if unit.headings.is_empty() {
            section.or(doc_kind)
        } else {
            section
        };
        let (kind, hit) = if unit.table {
            match table_kind {
                Some(_) => (Kind::Spec, None),
                None => continue,
            }
        } else if let Some(m) = constraint {
            (Kind::Constraint, Some(m.start()))
        } else if let Some(m) = decision {
            (Kind::Decision, Some(m.start()))
        } else if let Some(k) = section {
            // A lead-in such as "What decided it:" says nothing by itself; the list after it is
            // extracted item by item.
            if !unit.table && plain(src).trim_end().ends_with(':') {
                continue;
            }
            (k, None)
        } else {
            continue;
        };
        if unit.table {
            // Header and delimiter with the first rows, then further rows in chunks.
            let mut start = first;
            while start <= last && items.len() < MAX_ITEMS {
                let end = (start + max_lines - 1).min(last);
                let cells: Vec<String> = (start..=end)
                    .filter_map(|n| doc.line(n))
                    .filter(|l| !l.contains("---"))
                    .skip(usize::from(start == first))
                    .filter_map(|l| {
                        l.trim()
                            .trim_start_matches('|')
                            .split('|')
                            .next()
                            .map(plain)
                    })
                    .filter(|c| !c.is_empty())
                    .collect();
                let heading = section_title.clone().unwrap_or_else(|| "table".into());
                let heading = heading
                    .split_once(':')
                    .map_or(heading.as_str(), |(_, t)| t.trim())
                    .to_string();
                let title = short_title(&format!("{heading}: {}", cells.join(", ")), 12);
                push(&mut items, doc, Kind::Spec, title, start, end);
                start = end + 1;
            }
            continue;
        }
        let (start, end) = if last - first < max_lines {
            (first, last)
        } else {
            let at = hit.unwrap_or(0);
            let s = unit.range.start + sentence_start(src, at);
            let mut start = index.line(s).max(first);
            let hit_line = index.line(unit.range.start + at);
            if hit_line >= start + max_lines {
                start = hit_line;
            }
            (start, (start + max_lines - 1).min(last))
        };
        let sentence_from = hit.map_or(0, |at| sentence_start(src, at));
        let title_src = src.get(sentence_from..).unwrap_or(src);
        let title = short_title(&plain(title_src), 10);
        push(&mut items, doc, kind, title, start, end);
        if items.len() >= MAX_ITEMS {
            break;
        }
    }
    items
}

fn push(
    items: &mut Vec<Item>,
    doc: &Document,
    kind: Kind,
    title: String,
    start: usize,
    end: usize,
) {
    let known = (start..=end).all(|n| doc.line(n).is_some());
    let blank = (start..=end).all(|n| doc.line(n).is_none_or(|l| l.trim().is_empty()));
    let overlaps = items.iter().any(|i| i.start <= end && start <= i.end);
    if start == 0 || !known || blank || overlaps || items.len() >= MAX_ITEMS {
        return;
    }
    // Another document's Evidence labels (a report's own citations) are no signal of this one:
    // the contract refuses them as an excerpt (`excerpt/citation`).
    let lines: Vec<&str> = (start..=end).filter_map(|n| doc.line(n)).collect();
    if crate::contract::quoted_citation(&lines).is_some() {
        return;
    }
    items.push(Item {
        kind,
        title,
        start,
        end,
    });
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(crate) const DOC: &str = "---\ndate: 2026-11-09\nstatus: accepted\ntopic: \"Delegation\"\n---\n\n# Decision: the dispatch policy\n\n## Context\n\nSome background that matters little.\nIt goes on for a while.\n\n## Decision\n\nWe decided that the runtime checks every `task()` call before it allocates ids or writes\n`hop.started`. A refused call does not start a hop.\n\n### Refusal rules\n\n| Rule | A call is refused when |\n| --- | --- |\n| Unknown agent | no agent |\n| Depth | too deep |\n\n- At most 8 siblings run at the same time by default.\n- Results come back in call order.\n\n## Constraints\n\n- The provider MUST NOT read files itself; like every model it sees only requests\n  and returns responses.\n";

    pub(crate) fn numbered(text: &str) -> String {
        text.lines()
            .enumerate()
            .map(|(i, l)| format!("{:>6}\t{l}\n", i + 1))
            .collect()
    }

    #[test]
    fn extracts_sections_sentences_and_tables_with_exact_lines() {
        let doc = Document::from_read("thoughts/d.md", &numbered(DOC));
        let items = extract(&doc, 6);
        let got: Vec<_> = items.iter().map(|i| (i.kind, i.start, i.end)).collect();
        assert_eq!(
            got,
            vec![
                (Kind::Decision, 16, 17),
                (Kind::Spec, 21, 24),
                (Kind::Constraint, 26, 26),
                (Kind::Constraint, 27, 27),
                (Kind::Constraint, 31, 32),
            ],
            "{items:#?}"
        );
        assert!(items[4]
            .title
            .starts_with("The provider MUST NOT read files itself"));
        assert!(
            items[1].title.contains("Unknown agent, Depth"),
            "{}",
            items[1].title
        );
    }

    #[test]
    fn lead_ins_ending_in_a_colon_are_not_items() {
        let text = "---\ndate: 2026-11-02\nstatus: accepted\n---\n# D\n\n## Decision\n\nWhat decided it:\n\n- It is panic-free on malformed input.\n";
        let doc = Document::from_read("d.md", &numbered(text));
        let items = extract(&doc, 6);
        let starts: Vec<usize> = items.iter().map(|i| i.start).collect();
        assert_eq!(starts, vec![11], "{items:?}");
    }

    #[test]
    fn long_blocks_are_cut_to_the_limit_around_the_sentence() {
        let mut text = String::from("# T\n\n## Decision\n\n");
        for i in 0..8 {
            text.push_str(&format!("Filler line {i} with words.\n"));
        }
        text.push_str("So we will use BM25 for ranking\nover three fields.\n");
        let doc = Document::from_read("d.md", &numbered(&text));
        let items = extract(&doc, 2);
        assert_eq!(items.len(), 1);
        assert_eq!((items[0].start, items[0].end), (13, 14));
        assert_eq!(items[0].kind, Kind::Decision);
    }
}
