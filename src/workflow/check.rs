//! The checks a step declares and the runtime runs itself, so their outcome does not depend on
//! the model's honesty: files named exist inside the root, plan steps stay inside the scope, the
//! verification command is safe, the complexity score is computed, and quoted evidence matches
//! the lines it cites.
//!
//! Checks select values with JSON pointers whose segments may be `*` (every item of an array or
//! object): `/steps/*/files/*`. A pointer may name another step's result: `scope:/primary/*`.

use super::file_inside;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

use crate::project::Project;

/// A check as written in a workflow file.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Check {
    /// Every selected string is a file that exists inside the project root.
    FilesExist(Vec<String>),
    /// Every path selected by `files` is one of the paths selected by `scope`.
    InScope {
        files: Vec<String>,
        scope: Vec<String>,
    },
    /// Every selected string is a safe verification command whose program exists.
    SafeCommand(Vec<String>),
    /// Computes the complexity of the selected files and stores it in the result as
    /// `computed_complexity` (the model's own estimate is not asked for).
    Complexity { files: Vec<String> },
    /// Every selected item `{path, start, end, excerpt}` quotes exactly lines `start..=end`.
    Evidence(String),
}

impl Check {
    /// Every pointer the check reads, for lint.
    pub fn pointers(&self) -> Vec<&str> {
        match self {
            Check::FilesExist(p) | Check::SafeCommand(p) => p.iter().map(String::as_str).collect(),
            Check::InScope { files, scope } => files
                .iter()
                .chain(scope.iter())
                .map(String::as_str)
                .collect(),
            Check::Complexity { files } => files.iter().map(String::as_str).collect(),
            Check::Evidence(p) => vec![p.as_str()],
        }
    }
}

/// Splits `step:/pointer` into the step and the pointer; `None` for the current result.
pub fn split_pointer(p: &str) -> (Option<&str>, &str) {
    match p.find(":/") {
        Some(i) if i > 0 && !p[..i].contains('/') => (Some(&p[..i]), &p[i + 1..]),
        _ => (None, p),
    }
}

/// The segments of a JSON `pointer`, unescaped (`~1` is `/`, `~0` is `~`); `*` stays `*`.
pub fn segments(pointer: &str) -> impl Iterator<Item = String> + '_ {
    pointer
        .split('/')
        .skip(1)
        .map(|raw| raw.replace("~1", "/").replace("~0", "~"))
}

/// The values `pointer` selects in `root`; `*` selects every child.
pub fn select<'a>(root: &'a Value, pointer: &str) -> Vec<&'a Value> {
    let mut current = vec![root];
    for seg in segments(pointer) {
        let mut next = Vec::new();
        for v in current {
            match (v, seg.as_str()) {
                (Value::Array(items), "*") => next.extend(items.iter()),
                (Value::Object(map), "*") => next.extend(map.values()),
                (Value::Array(items), s) => {
                    next.extend(s.parse::<usize>().ok().and_then(|i| items.get(i)))
                }
                (Value::Object(map), s) => next.extend(map.get(s)),
                _ => {}
            }
        }
        current = next;
    }
    current
}

/// [`select`], for changing what it selects.
fn select_mut<'a>(root: &'a mut Value, pointer: &str) -> Vec<&'a mut Value> {
    let mut current = vec![root];
    for seg in segments(pointer) {
        let mut next = Vec::new();
        for v in current {
            match (v, seg.as_str()) {
                (Value::Array(items), "*") => next.extend(items.iter_mut()),
                (Value::Object(map), "*") => next.extend(map.values_mut()),
                (Value::Array(items), s) => {
                    next.extend(s.parse::<usize>().ok().and_then(|i| items.get_mut(i)))
                }
                (Value::Object(map), s) => next.extend(map.get_mut(s)),
                _ => {}
            }
        }
        current = next;
    }
    current
}

/// Re-cites each evidence item of `result` (the `evidence` checks' own pointers) whose excerpt
/// is not at its cited lines but stands, whole and exactly, at other lines of the same file:
/// `start` and `end` become those lines. One note per item changed, for the reply. The text was
/// right and the numbers were not (a small model counts lines badly; the contract checker makes
/// the same fix, docs/envelope.md); an excerpt found nowhere is left for the check to refuse.
pub fn relocate(checks: &[Check], project: &Project, result: &mut Value) -> Vec<String> {
    let mut notes = Vec::new();
    for check in checks {
        let Check::Evidence(pointer) = check else {
            continue;
        };
        let (None, ptr) = split_pointer(pointer) else {
            continue;
        };
        for item in select_mut(result, ptr) {
            if evidence(project, item).is_ok() {
                continue;
            }
            let Some(path) = item["path"].as_str().map(str::to_string) else {
                continue;
            };
            let quoted: Vec<String> = item["excerpt"]
                .as_str()
                .unwrap_or("")
                .lines()
                .map(|l| l.trim_end().to_string())
                .collect();
            if quoted.is_empty()
                || quoted.len() as u64 > MAX_CITED_LINES
                || quoted.iter().all(|l| l.trim().is_empty())
            {
                continue;
            }
            let Some(text) = text_inside(project, &path) else {
                continue;
            };
            let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
            let Some(at) = lines
                .windows(quoted.len())
                .position(|w| w.iter().zip(&quoted).all(|(a, b)| a == b))
            else {
                continue;
            };
            let (start, end) = (at + 1, at + quoted.len());
            notes.push(format!(
                "evidence `{path}:{}-{}`: the excerpt stands at lines {start}-{end}; cited there",
                item["start"], item["end"]
            ));
            item["start"] = Value::from(start);
            item["end"] = Value::from(end);
        }
    }
    notes
}

/// Takes out of `result` each evidence item (of the `evidence` checks' own arrays) that cites
/// the lines of an item before it or states its fact word for word: the items the check
/// refuses as repeats. An item that repeats only a fact, on lines that say something of their
/// own (a comment's words, or what they declare: `own_fact`, marked `path:` as the file's own),
/// keeps its lines with that as its fact, unless that too was stated before. One note per item
/// taken out or given its lines' own words; none when nothing repeats. The caller keeps the
/// corrected result only when it then passes the whole step, so a result left with too few
/// items is still refused as it was.
///
/// Why: refused for its repeated facts, the 1.5B planner sent its scope again with four
/// distinct facts and two repeats, then the same call again, until its turns ran out; asked to
/// plan a flag that does not exist yet, it gave seven doc comments of `src/cli/run.rs` the one
/// fact "the run command does not have a --quiet flag", and sent that back unchanged after the
/// INVALID reply offered the comments' own words.
pub fn drop_repeated(checks: &[Check], project: &Project, result: &mut Value) -> Vec<String> {
    let mut notes = Vec::new();
    for array in checks.iter().filter_map(evidence_array) {
        for items in select_mut(result, array) {
            let Value::Array(items) = items else {
                continue;
            };
            let mut seen = Seen::default();
            let mut kept = Vec::with_capacity(items.len());
            for mut item in std::mem::take(items) {
                let at = Seen::at(&item);
                let fact = item["fact"].as_str().unwrap_or("").to_string();
                let place = format!("evidence `{}:{}-{}`", at.0, at.1, at.2);
                let left_out = |notes: &mut Vec<String>| {
                    notes.push(format!("{place}: it repeats an item before it; left out"));
                };
                match seen.repeat(&at, &fact) {
                    None => seen.record(at, &fact),
                    Some(Repeat::Fact) => {
                        // The comment as the file has it at those lines, not as the item quotes it.
                        let own = quoted_text(project, &item)
                            .and_then(|excerpt| own_fact(&at.0, &excerpt))
                            .filter(|own| seen.repeat(&at, own).is_none());
                        let Some(own) = own else {
                            left_out(&mut notes);
                            continue;
                        };
                        notes.push(format!(
                            "{place}: its fact repeats an item before it; what its lines say \
                             of themselves (a comment, a declaration) is its fact"
                        ));
                        seen.record(at, &own);
                        item["fact"] = Value::from(own);
                    }
                    Some(Repeat::Lines) => {
                        left_out(&mut notes);
                        continue;
                    }
                }
                kept.push(item);
            }
            *items = kept;
        }
    }
    notes
}

/// Gives each evidence item (of the `evidence` checks' own arrays) whose `fact` is written as
/// its file's own words (`path: …`, the form `own_fact` makes) the words its own lines say of
/// themselves, when they say something and it is not that. One note per item changed.
///
/// Why: the 1.5B planner, offered three items each with its lines' own words, kept the facts
/// and shifted the lines under them (`--since DATE`, binary AG): "declares `struct Args`" stood
/// on `pub fn run(`. A fact marked as what the file says must be what the file says there.
pub fn own_words(checks: &[Check], project: &Project, result: &mut Value) -> Vec<String> {
    let mut notes = Vec::new();
    for array in checks.iter().filter_map(evidence_array) {
        for item in select_mut(result, &format!("{array}/*")) {
            let Some(path) = item["path"].as_str().map(str::to_string) else {
                continue;
            };
            let Some(fact) = item["fact"].as_str() else {
                continue;
            };
            let marked = [path.as_str(), normal(&path).as_str()]
                .iter()
                .any(|p| fact.starts_with(&format!("{p}:")));
            if !marked {
                continue;
            }
            let own = quoted_text(project, item).and_then(|lines| own_fact(&normal(&path), &lines));
            let Some(own) = own.filter(|own| fact_key(own) != fact_key(fact)) else {
                continue;
            };
            let (_, start, end) = Seen::at(item);
            notes.push(format!(
                "evidence `{}:{start}-{end}`: its fact is written as the file's own words, which \
                 at its lines are \"{own}\"; taken",
                normal(&path)
            ));
            item["fact"] = Value::from(own);
        }
    }
    notes
}

/// The lines `item` cites, as the file has them (trailing blanks aside), when its range is
/// one the check accepts; `None` otherwise.
fn quoted_text(project: &Project, item: &Value) -> Option<String> {
    let (start, end) = cited_range(item).ok()??;
    let text = text_inside(project, item["path"].as_str()?)?;
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    Some(lines.get(start as usize - 1..end as usize)?.join("\n"))
}

/// What an evidence item repeats of the items before it in its array.
#[derive(Debug, PartialEq)]
enum Repeat {
    /// The same file and lines as an item before it.
    Lines,
    /// Other lines, with an earlier item's fact word for word (case and spacing aside).
    Fact,
}

/// The lines cited and facts stated so far in one evidence array: one record, so the check
/// that refuses repeats and the correction that leaves them out agree on what a repeat is.
#[derive(Default)]
struct Seen {
    cited: Vec<(String, u64, u64)>,
    facts: Vec<String>,
}

impl Seen {
    /// Where `item` points: its path (normalized), first and last line.
    fn at(item: &Value) -> (String, u64, u64) {
        (
            normal(item["path"].as_str().unwrap_or("")),
            item["start"].as_u64().unwrap_or(0),
            item["end"].as_u64().unwrap_or(0),
        )
    }

    /// The repeat an item at `at` stating `fact` would be; lines are looked at first.
    fn repeat(&self, at: &(String, u64, u64), fact: &str) -> Option<Repeat> {
        let key = fact_key(fact);
        if self.cited.contains(at) {
            Some(Repeat::Lines)
        } else if !key.is_empty() && self.facts.contains(&key) {
            Some(Repeat::Fact)
        } else {
            None
        }
    }

    /// Notes `at` as cited and `fact` as stated; a fact already stated is not noted twice.
    fn record(&mut self, at: (String, u64, u64), fact: &str) {
        let key = fact_key(fact);
        if !key.is_empty() && !self.facts.contains(&key) {
            self.facts.push(key);
        }
        if !self.cited.contains(&at) {
            self.cited.push(at);
        }
    }
}

/// Evidence items offered at most in an INVALID reply's `expected`, the lines each quotes at
/// most, and the characters of its excerpt at most. Few and short: the 1.5B planner, offered
/// three items of up to three lines, copied the first whole and broke off inside the second's
/// 180-character excerpt, where the local engine's grammar ends a JSON string (160 characters
/// at its loosest, `model::local::grammar::Limits`). Three items, as many as the shipped plan's
/// scope asks for (`minItems: 3`), but each short enough for that grammar.
const OFFERED: usize = 3;
const OFFERED_LINES: usize = 2;
const OFFERED_CHARS: usize = 120;
/// Lines searched from the top of a file for a first line short enough to offer.
const SCANNED_LINES: usize = 40;

/// Fills the evidence arrays of `expected` (the step's shape, for an INVALID reply) with items
/// the runtime can vouch for: the lines each item of `result` cites, as the file has them, or,
/// for an item without usable lines and for the files `files_exist` selects, the file's first
/// lines. Only `fact` is left to write. Qwen2.5-Coder-1.5B, shown the shape's placeholders,
/// reported the planner's `scope` with `"excerpt": "…"` until its turns ran out: a small model
/// copies lines it is shown, and does not go to fetch them. Returns whether anything was filled.
pub fn offer_evidence(
    checks: &[Check],
    project: &Project,
    result: &Value,
    expected: &mut Value,
) -> bool {
    // The files `files_exist` selects in this result (no other step's result is looked at).
    let subject = Subject {
        project,
        result,
        accepted: &BTreeMap::new(),
    };
    let named: Vec<String> = checks
        .iter()
        .filter_map(|c| match c {
            Check::FilesExist(pointers) => Some(subject.strings(pointers)),
            _ => None,
        })
        .flatten()
        .collect();
    let mut filled = false;
    for array in checks.iter().filter_map(evidence_array) {
        let ptr = format!("{array}/*");
        let ptr = ptr.as_str();
        let mut offered: Vec<Value> = Vec::new();
        let push = |offered: &mut Vec<Value>, item: Value| {
            let same = |o: &Value| o["path"] == item["path"] && o["start"] == item["start"];
            if offered.len() < OFFERED && !offered.iter().any(same) {
                offered.push(item);
            }
        };
        // A fact offered again for other lines is left to write: the check refuses it.
        let mut facts: Vec<String> = Vec::new();
        for item in select(result, ptr) {
            let Some(path) = item["path"].as_str() else {
                continue;
            };
            let fact = item["fact"]
                .as_str()
                .filter(|f| super::shape::placeholders(&Value::from(*f)).is_empty())
                .filter(|f| {
                    let key = fact_key(f);
                    let new = !facts.contains(&key);
                    facts.push(key);
                    new
                })
                .unwrap_or(super::shape::PLACEHOLDER);
            let Some(text) = text_inside(project, path) else {
                continue;
            };
            let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
            let span = match cited_range(item) {
                Ok(Some((s, e))) => quoted_lines(&lines, s as usize, e as usize),
                _ => None,
            }
            .or_else(|| first_lines(&lines));
            // Lines with nothing of their own to say, and no fact written for them: the
            // nearest lines of the file that have (a comment, a declaration) instead.
            let span = match span {
                Some(l) if fact == super::shape::PLACEHOLDER && own_fact(path, &l.2).is_none() => {
                    let taken = taken_in(&offered, path);
                    let stated = |own: &str| {
                        let key = fact_key(own);
                        facts.contains(&key) || offered.iter().any(|o| o["fact"] == own)
                    };
                    nearest_own(&lines, path, l.0 - 1, &taken, stated).or(Some(l))
                }
                other => other,
            };
            if let Some(item) = span.map(|l| offered_item(fact, path, l)) {
                push(&mut offered, item);
            }
        }
        // A file named but not cited yet: its first lines.
        for path in &named {
            if offered.iter().any(|o| o["path"] == path.as_str()) {
                continue;
            }
            let text = text_inside(project, path).unwrap_or_default();
            let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
            if let Some(l) = first_lines(&lines) {
                push(
                    &mut offered,
                    offered_item(super::shape::PLACEHOLDER, path, l),
                );
            }
        }
        // Short of items (one file named): further lines of the files already offered, each
        // after the last offered of its file, so no two items cite the same lines.
        let files: Vec<String> = offered
            .iter()
            .filter_map(|o| o["path"].as_str().map(str::to_string))
            .collect();
        for path in files.iter().cycle().take(files.len() * OFFERED) {
            if offered.len() >= OFFERED {
                break;
            }
            let after = offered
                .iter()
                .filter(|o| o["path"] == path.as_str())
                .filter_map(|o| o["end"].as_u64())
                .max()
                .unwrap_or(0) as usize;
            let text = text_inside(project, path).unwrap_or_default();
            let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
            if let Some(l) = lines_from(&lines, after) {
                push(
                    &mut offered,
                    offered_item(super::shape::PLACEHOLDER, path, l),
                );
            }
        }
        // Only what the check itself would accept is offered.
        offered.retain(|item| evidence(project, item).is_ok());
        if offered.is_empty() {
            continue;
        }
        if let Some(slot) = select_mut(expected, array).into_iter().next() {
            *slot = Value::Array(offered);
            filled = true;
        }
    }
    filled
}

/// The lines (1-based, inclusive) of `path` that `offered` already quotes.
fn taken_in(offered: &[Value], path: &str) -> Vec<(usize, usize)> {
    offered
        .iter()
        .filter(|o| o["path"] == path)
        .filter_map(|o| Some((o["start"].as_u64()? as usize, o["end"].as_u64()? as usize)))
        .collect()
}

/// The offerable lines of a file nearest line `near` (0-based) that say something of their own
/// (`own_fact`) not yet `stated`, overlapping none of `taken`; the earlier line on a tie.
fn nearest_own(
    lines: &[&str],
    path: &str,
    near: usize,
    taken: &[(usize, usize)],
    stated: impl Fn(&str) -> bool,
) -> Option<Span> {
    let mut order: Vec<usize> = (0..lines.len()).collect();
    order.sort_by_key(|&i| (i.abs_diff(near), i));
    order
        .into_iter()
        .filter(|&i| lines[i].chars().any(char::is_alphanumeric))
        .filter_map(|i| fitting(lines, i, lines.len()))
        .filter(|span| !taken.iter().any(|t| span.0 <= t.1 && t.0 <= span.1))
        .find(|span| own_fact(path, &span.2).is_some_and(|own| !stated(&own)))
}

/// Lines of a file offered as one evidence item: (first line, last line, excerpt), 1-based.
type Span = (usize, usize, String);

/// Fills the evidence arrays of `expected` (the next step's shape, in a PROCEED reply's
/// `next_call`) before the step is reported: up to [`OFFERED`] items quoting `files` (what the
/// agent's subagents found, in that order), each file's lines that hold the most of `words`
/// (the task's), taken in turn from each file, no line twice. Only `fact` is left to write.
/// Returns whether anything was filled; nothing is when no file can be read.
///
/// Why: Qwen2.5-Coder-1.5B as the planner, shown the scope's placeholder shape, quoted the
/// two lines of `src/cli/run.rs` it had seen, then one of them six times more, and reported
/// that again after its INVALID reply offered three items: its context held no other line of
/// the file. Offered `run.rs`'s lines with the call it was about to write, it wrote three items
/// on lines of that file (one of them twice, which the `evidence` check still refuses).
pub fn prefill_evidence(
    checks: &[Check],
    project: &Project,
    files: &[String],
    words: &[String],
    expected: &mut Value,
) -> bool {
    // Per file, its quotable lines, those holding more of the words first, then in file order.
    let mut ranked: Vec<(&String, Vec<Span>)> = Vec::new();
    for path in files {
        let Some(text) = text_inside(project, path) else {
            continue;
        };
        let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
        let body = first_lines(&lines).map_or(0, |(start, _, _)| start - 1);
        let holds = |line: &str| {
            let lower = line.to_lowercase();
            words.iter().filter(|w| lower.contains(w.as_str())).count()
        };
        // Lines that say something of their own (a comment, a declaration: `own_fact`) first,
        // then those holding more of the words, a comment before a declaration: their words are
        // offered as the item's fact (`offered_item`), and a repeated fact on them can be mended
        // (`drop_repeated`). Offered one comment and two other code lines, the 1.5B planner
        // gave all three the comment's words, and the code items, left out, left too few
        // (`--since DATE` and lint, binary AD).
        let mut scored: Vec<((bool, usize, bool), Span)> = (body..lines.len())
            .filter(|&i| lines[i].chars().any(char::is_alphanumeric))
            .filter_map(|i| fitting(&lines, i, lines.len()))
            .map(|span| {
                let comment = fact_of_comment(path, &span.2).is_some();
                let own = comment || fact_of_declaration(path, &span.2).is_some();
                ((own, holds(&span.2), comment), span)
            })
            .collect();
        // Stable: among equals the earlier line, so lines no word is in come in file order
        // after those that hold one.
        scored.sort_by_key(|s| std::cmp::Reverse(s.0));
        let mut kept: Vec<Span> = Vec::new();
        for (_, span) in scored {
            if kept.len() >= OFFERED {
                break;
            }
            if !kept.iter().any(|k| span.0 <= k.1 && k.0 <= span.1) {
                kept.push(span);
            }
        }
        // Reversed, so `pop` gives the best first.
        ranked.push((path, kept.into_iter().rev().collect()));
    }
    let mut offered: Vec<Value> = Vec::new();
    while offered.len() < OFFERED && ranked.iter().any(|(_, r)| !r.is_empty()) {
        for (path, spans) in ranked.iter_mut() {
            if offered.len() >= OFFERED {
                break;
            }
            if let Some(span) = spans.pop() {
                offered.push(offered_item(super::shape::PLACEHOLDER, path, span));
            }
        }
    }
    offered.retain(|item| evidence(project, item).is_ok());
    if offered.is_empty() {
        return false;
    }
    let mut filled = false;
    for array in checks.iter().filter_map(evidence_array) {
        if let Some(slot) = select_mut(expected, array).into_iter().next() {
            *slot = Value::Array(offered.clone());
            filled = true;
        }
    }
    filled
}

/// The array an `evidence` check of the result itself selects (`/evidence` for
/// `/evidence/*`); `None` for any other check, or one over another step's result.
fn evidence_array(check: &Check) -> Option<&str> {
    let Check::Evidence(pointer) = check else {
        return None;
    };
    let (None, ptr) = split_pointer(pointer) else {
        return None;
    };
    ptr.strip_suffix("/*")
}

/// The text of `path` when it is a file inside the root that can be read.
fn text_inside(project: &Project, path: &str) -> Option<String> {
    std::fs::read_to_string(file_inside(project, path).ok()?).ok()
}

/// The first lines of `start..=end` (1-based) of a file's `lines` that fit an offer; `None`
/// when the file is shorter, or its line `start` alone is too long to offer.
fn quoted_lines(lines: &[&str], start: usize, end: usize) -> Option<(usize, usize, String)> {
    lines.get(start - 1..end)?;
    fitting(lines, start - 1, end)
}

/// The first of a file's `lines` that fit an offer, from a line near its top that is not blank,
/// after its YAML frontmatter if it opens with one: `date: 2026-11-09` / `status: accepted`,
/// offered for a decision record, is its metadata, not what it says.
fn first_lines(lines: &[&str]) -> Option<(usize, usize, String)> {
    let body = match lines.first() {
        Some(&"---") => lines
            .iter()
            .skip(1)
            .position(|l| *l == "---")
            .map_or(0, |end| end + 2),
        _ => 0,
    };
    lines_from(lines, body)
}

/// The first of `lines` from index `from` (0-based) on that fit an offer, opening on a line
/// with a letter or digit (a lone `}` states nothing), within [`SCANNED_LINES`] of `from`.
fn lines_from(lines: &[&str], from: usize) -> Option<(usize, usize, String)> {
    (from..lines.len().min(from + SCANNED_LINES))
        .filter(|&i| lines[i].chars().any(char::is_alphanumeric))
        .find_map(|i| fitting(lines, i, lines.len()))
}

/// Lines from `from` (0-based) up to `upto` (exclusive): at most [`OFFERED_LINES`], while the
/// excerpt stays within [`OFFERED_CHARS`].
fn fitting(lines: &[&str], from: usize, upto: usize) -> Option<(usize, usize, String)> {
    let mut to = from;
    let mut chars = 0;
    while to < upto && to - from < OFFERED_LINES {
        let more = lines[to].chars().count() + usize::from(to > from);
        if chars + more > OFFERED_CHARS {
            break;
        }
        chars += more;
        to += 1;
    }
    cited(lines, from, to)
}

/// Lines `from..to` (0-based, end exclusive) without the blank ones at the end, which an
/// excerpt cannot show: (first line, last line, excerpt), 1-based; `None` when all are blank.
fn cited(lines: &[&str], from: usize, mut to: usize) -> Option<(usize, usize, String)> {
    while to > from && lines[to - 1].trim().is_empty() {
        to -= 1;
    }
    (to > from).then(|| (from + 1, to, lines[from..to].join("\n")))
}

/// An offered item. A `fact` still to be written is taken from the quoted lines when they are
/// the file's own comment or heading (`//! Runs a session…`, `# Decision: …`): what the file says
/// of itself, in its author's words, with the path before it. The 1.5B planner copied an offered
/// excerpt exactly and left the `fact` beside it as the placeholder through every INVALID
/// reply: it copies what it is shown and writes little of its own.
fn offered_item(fact: &str, path: &str, (start, end, excerpt): (usize, usize, String)) -> Value {
    let own = (fact == super::shape::PLACEHOLDER)
        .then(|| own_fact(path, &excerpt))
        .flatten();
    let fact = own.as_deref().unwrap_or(fact);
    serde_json::json!({"fact": fact, "path": path, "start": start, "end": end, "excerpt": excerpt})
}

/// Characters of a fact taken from a comment at most: one JSON string of the local grammar
/// holds it with room to spare (`OFFERED_CHARS`).
const FACT_CHARS: usize = 100;

/// `path: <the words>` when `excerpt` opens with comment or heading lines that say at least three
/// words; `None` for code, so no fact is made up from it. Code after the opening comment is the
/// thing it documents (`/// Runs a session…` above `pub fn run(`), so the comment still speaks
/// for the excerpt; a Rust attribute (`#[…]`) is code, not a heading.
fn fact_of_comment(path: &str, excerpt: &str) -> Option<String> {
    const MARKS: &[&str] = &["//!", "///", "//", "#", "--", "/*", "*", "<!--"];
    let mut words: Vec<&str> = Vec::new();
    for line in excerpt.lines() {
        let line = line.trim();
        let mark = MARKS
            .iter()
            .find(|m| line.starts_with(**m))
            .filter(|_| !line.starts_with("#[") && !line.starts_with("#!["));
        let Some(mark) = mark else {
            break;
        };
        let text = line
            .trim_start_matches(*mark)
            .trim_start_matches(['#', '!', '/'])
            .trim_end_matches("-->")
            .trim_end_matches("*/");
        words.extend(text.split_whitespace());
    }
    if words.len() < 3 {
        return None;
    }
    let mut fact = format!("{path}:");
    for word in words {
        if fact.chars().count() + 1 + word.chars().count() > FACT_CHARS {
            break;
        }
        fact.push(' ');
        fact.push_str(word);
    }
    Some(fact)
}

/// `path: declares `fn run`` when `excerpt` opens (attributes aside) on a declaration: a Rust
/// item (`fn`, `struct`, `enum`, `trait`, `mod`, `type`, `const`, `static`, `impl`, after any
/// `pub`/`async`/`unsafe`), or a Python `def`/`class`. `None` for any other line.
///
/// Why: the 1.5B planner, offered one comment's words as a fact and two code items with the fact
/// still to write, gave every item the comment's words (`--since DATE`, lint, binary AD); the
/// repeats were refused and the items left out left too few. What a line declares is a fact the
/// runtime can state of it without making anything up.
fn fact_of_declaration(path: &str, excerpt: &str) -> Option<String> {
    const SKIP: &[&str] = &[
        "pub",
        "pub(crate)",
        "pub(super)",
        "async",
        "unsafe",
        "extern",
    ];
    const KINDS: &[&str] = &[
        "fn", "struct", "enum", "trait", "mod", "type", "const", "static", "impl", "def", "class",
    ];
    let line = excerpt
        .lines()
        .map(str::trim)
        .find(|l| !l.starts_with("#[") && !l.starts_with("@"))?;
    let mut words = line
        .split_whitespace()
        .skip_while(|w| SKIP.contains(w))
        .peekable();
    let mut kind = words.next().filter(|k| KINDS.contains(k))?;
    // `const fn` and `const unsafe fn` are functions.
    while kind == "const"
        && words
            .peek()
            .is_some_and(|w| ["fn", "unsafe", "async"].contains(w))
    {
        kind = words.next()?;
    }
    if ["unsafe", "async"].contains(&kind) {
        kind = words.next().filter(|k| *k == "fn")?;
    }
    let name: String = words
        .next()?
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    if name.is_empty() {
        return None;
    }
    Some(format!("{path}: declares `{kind} {name}`"))
}

/// What the file itself says of `excerpt`: its opening comment's words, else what it declares.
fn own_fact(path: &str, excerpt: &str) -> Option<String> {
    fact_of_comment(path, excerpt).or_else(|| fact_of_declaration(path, excerpt))
}

/// What the checks work on: the project, the result being checked, accepted results by step.
pub struct Subject<'a> {
    pub project: &'a Project,
    pub result: &'a Value,
    pub accepted: &'a BTreeMap<String, Value>,
}

impl Subject<'_> {
    fn strings(&self, pointers: &[String]) -> Vec<String> {
        strings(self.result, self.accepted, pointers)
    }
}

/// The strings `pointers` select: in `result`, or, for a `step:/pointer`, in that step's
/// accepted result.
pub fn strings(
    result: &Value,
    accepted: &BTreeMap<String, Value>,
    pointers: &[String],
) -> Vec<String> {
    let mut out = Vec::new();
    for p in pointers {
        let (step, ptr) = split_pointer(p);
        let root = match step {
            None => Some(result),
            Some(s) => accepted.get(s),
        };
        if let Some(root) = root {
            out.extend(
                select(root, ptr)
                    .into_iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string),
            );
        }
    }
    out
}

/// Runs `checks`; returns the problems (for an INVALID reply) and what the runtime computed
/// (merged into the stored result).
pub fn run(checks: &[Check], subject: &Subject) -> (Vec<String>, serde_json::Map<String, Value>) {
    let mut errors = Vec::new();
    let mut computed = serde_json::Map::new();
    for check in checks {
        match check {
            Check::FilesExist(pointers) => {
                for path in subject.strings(pointers) {
                    if let Err(e) = file_inside(subject.project, &path) {
                        errors.push(e.to_string());
                    }
                }
            }
            Check::InScope { files, scope } => {
                let allowed: Vec<String> =
                    subject.strings(scope).iter().map(|s| normal(s)).collect();
                for path in subject.strings(files) {
                    if !allowed.contains(&normal(&path)) {
                        errors.push(format!(
                            "`{path}` is not in the scope ({}); add it to the scope step or \
                             change the plan",
                            if allowed.is_empty() {
                                "empty".to_string()
                            } else {
                                allowed.join(", ")
                            }
                        ));
                    }
                }
            }
            Check::SafeCommand(pointers) => {
                let commands = subject.strings(pointers);
                if commands.is_empty() {
                    errors.push("no verification command was given".into());
                }
                for c in commands {
                    if let Err(e) = super::command::check_command(&c, subject.project) {
                        errors.extend(e);
                    }
                }
            }
            Check::Complexity { files } => {
                let files = subject.strings(files);
                match super::complexity::measure(subject.project, &files) {
                    Ok(c) => {
                        computed.insert(
                            "computed_complexity".into(),
                            serde_json::to_value(c).unwrap_or(Value::Null),
                        );
                    }
                    Err(e) => errors.push(e.to_string()),
                }
            }
            Check::Evidence(pointer) => {
                let (step, ptr) = split_pointer(pointer);
                let root = match step {
                    None => Some(subject.result),
                    Some(s) => subject.accepted.get(s),
                };
                // The same lines cited twice are one fact shown twice: under a grammar that
                // can only copy a file's lines, the 1.5B analyzer repeated one item three times.
                // One fact stated for other lines is a claim those lines were never shown to
                // hold: the 1.5B planner gave eight items on eight runs of `run.rs` one fact,
                // "The --quiet flag is not currently used in the run command."
                let mut seen = Seen::default();
                for item in root.map(|r| select(r, ptr)).unwrap_or_default() {
                    if let Err(e) = evidence(subject.project, item) {
                        errors.push(e.to_string());
                        continue;
                    }
                    let at = Seen::at(item);
                    let fact = item["fact"].as_str().unwrap_or("");
                    let (path, start, end) = (at.0.clone(), at.1, at.2);
                    match seen.repeat(&at, fact) {
                        Some(Repeat::Lines) => {
                            errors.push(EvidenceError::Repeated { path, start, end }.to_string());
                        }
                        Some(Repeat::Fact) => {
                            errors
                                .push(EvidenceError::FactRepeated { path, start, end }.to_string());
                            seen.record(at, "");
                        }
                        None => seen.record(at, fact),
                    }
                }
            }
        }
    }
    (once_each(errors), computed)
}

/// Each error once, in first-seen order, with how often it was found when more than once:
/// the 1.5B planner wrote one excerpt into eight evidence items, and the reply repeated the
/// same sentence seven times into the context it reads next.
fn once_each(errors: Vec<String>) -> Vec<String> {
    let mut counted: Vec<(String, usize)> = Vec::new();
    for e in errors {
        match counted.iter_mut().find(|(seen, _)| *seen == e) {
            Some((_, n)) => *n += 1,
            None => counted.push((e, 1)),
        }
    }
    counted
        .into_iter()
        .map(|(e, n)| if n > 1 { format!("{e} ({n} times)") } else { e })
        .collect()
}

fn normal(path: &str) -> String {
    path.trim().trim_start_matches("./").to_string()
}

/// Why one evidence item does not hold (the step check reports it to the model).
#[derive(Debug, thiserror::Error)]
enum EvidenceError {
    #[error("evidence for `{0}` needs numeric `start` and `end` lines")]
    NoLines(String),
    #[error("evidence `{path}:{start}-{end}`: cite 1 to 6 lines, `start` ≤ `end`, 1-based")]
    Range { path: String, start: u64, end: u64 },
    #[error(transparent)]
    Scope(#[from] super::ScopeFileError),
    #[error("evidence `{path}`: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "evidence `{path}:{start}-{end}` is cited by an item before it: each item quotes other \
         lines, of this file or another"
    )]
    Repeated { path: String, start: u64, end: u64 },
    #[error(
        "evidence `{path}:{start}-{end}` states the fact of an item before it, word for word: \
         each item's fact says what its own excerpt shows"
    )]
    FactRepeated { path: String, start: u64, end: u64 },
    #[error(
        "evidence `{path}:{start}-{end}`: the excerpt does not match the file; lines there \
         now: {actual:?}"
    )]
    Mismatch {
        path: String,
        start: u64,
        end: u64,
        actual: String,
    },
}

/// A fact as compared with the facts before it: its words, lowercased, in one run.
fn fact_key(fact: &str) -> String {
    fact.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// Most lines one evidence item may cite.
const MAX_CITED_LINES: u64 = 6;

/// The `(start, end)` lines `item` cites: `None` when it names no `start`/`end`, an error
/// `(start, end)` when they are no range the check accepts (1-based, `end ≥ start`, at most
/// [`MAX_CITED_LINES`] lines). One rule for the check, the offer and the correction.
fn cited_range(item: &Value) -> Result<Option<(u64, u64)>, (u64, u64)> {
    let (Some(start), Some(end)) = (item["start"].as_u64(), item["end"].as_u64()) else {
        return Ok(None);
    };
    if start == 0 || end < start || end - start >= MAX_CITED_LINES {
        return Err((start, end));
    }
    Ok(Some((start, end)))
}

/// One evidence item: the excerpt is exactly the cited lines (trailing blanks aside).
fn evidence(project: &Project, item: &Value) -> Result<(), EvidenceError> {
    let path = item["path"].as_str().unwrap_or("");
    let (start, end) = match cited_range(item) {
        Ok(Some(range)) => range,
        Ok(None) => return Err(EvidenceError::NoLines(path.to_string())),
        Err((start, end)) => {
            return Err(EvidenceError::Range {
                path: path.to_string(),
                start,
                end,
            })
        }
    };
    let excerpt = item["excerpt"].as_str().unwrap_or("");
    let file = file_inside(project, path)?;
    let text = std::fs::read_to_string(&file).map_err(|source| EvidenceError::Read {
        path: path.to_string(),
        source,
    })?;
    let actual: Vec<&str> = text
        .lines()
        .skip(start as usize - 1)
        .take((end - start + 1) as usize)
        .map(str::trim_end)
        .collect();
    let quoted: Vec<&str> = excerpt.lines().map(str::trim_end).collect();
    if actual == quoted {
        Ok(())
    } else {
        Err(EvidenceError::Mismatch {
            path: path.to_string(),
            start,
            end,
            actual: actual.join("\n"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pointers_select_with_wildcards_and_other_steps() {
        let v = json!({"steps": [{"files": ["a", "b"]}, {"files": ["c"]}]});
        let got: Vec<&str> = select(&v, "/steps/*/files/*")
            .into_iter()
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(got, vec!["a", "b", "c"]);
        assert_eq!(
            split_pointer("scope:/primary/*"),
            (Some("scope"), "/primary/*")
        );
        assert_eq!(split_pointer("/primary/*"), (None, "/primary/*"));
    }

    #[test]
    fn in_scope_names_the_stray_file() {
        let dir = tempfile::tempdir().unwrap();
        let project = Project::open(dir.path()).unwrap();
        let mut accepted = BTreeMap::new();
        accepted.insert("scope".to_string(), json!({"primary": ["src/a.rs"]}));
        let result = json!({"steps": [{"files": ["./src/a.rs", "src/b.rs"]}]});
        let subject = Subject {
            project: &project,
            result: &result,
            accepted: &accepted,
        };
        let check = Check::InScope {
            files: vec!["/steps/*/files/*".into()],
            scope: vec!["scope:/primary/*".into()],
        };
        let (errors, _) = run(&[check], &subject);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].contains("src/b.rs"));
    }

    /// Two items citing the same lines are one fact shown twice: the second is refused.
    #[test]
    fn evidence_citing_lines_an_item_before_it_cites_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.rs"), "fn a() {}\nfn b() {}\n").unwrap();
        let project = Project::open(dir.path()).unwrap();
        let item = |start: u64, excerpt: &str| json!({"fact": format!("line {start}"), "path": "a.rs", "start": start, "end": start, "excerpt": excerpt});
        let result =
            json!({"evidence": [item(1, "fn a() {}"), item(2, "fn b() {}"), item(1, "fn a() {}")]});
        let errors_of = |result: &Value| {
            let subject = Subject {
                project: &project,
                result,
                accepted: &BTreeMap::new(),
            };
            run(&[Check::Evidence("/evidence/*".into())], &subject).0
        };
        let errors = errors_of(&result);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0].contains("`a.rs:1-1` is cited by an item before it"),
            "{errors:?}"
        );
        // Cited a third time: the error is said once, with its count.
        let result =
            json!({"evidence": [item(1, "fn a() {}"), item(1, "fn a() {}"), item(1, "fn a() {}")]});
        let errors = errors_of(&result);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].ends_with("(2 times)"), "{errors:?}");
    }

    /// One fact given to other lines is refused, however it is spaced or capitalised, and the
    /// INVALID reply's offer gives that item what its lines say of themselves (here, what they
    /// declare) instead.
    #[test]
    fn evidence_stating_the_fact_of_an_item_before_it_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.rs"), "fn a() {}\nfn b() {}\nfn c() {}\n").unwrap();
        let project = Project::open(dir.path()).unwrap();
        let item = |start: u64, fact: &str| {
            let excerpt = ["fn a() {}", "fn b() {}", "fn c() {}"][start as usize - 1];
            json!({"fact": fact, "path": "a.rs", "start": start, "end": start, "excerpt": excerpt})
        };
        let result = json!({"evidence": [
            item(1, "The flag is not used."),
            item(2, "b is defined."),
            item(3, "  the flag is NOT   used. "),
        ]});
        let checks = [Check::Evidence("/evidence/*".into())];
        let subject = Subject {
            project: &project,
            result: &result,
            accepted: &BTreeMap::new(),
        };
        let errors = run(&checks, &subject).0;
        assert_eq!(
            errors,
            [
                "evidence `a.rs:3-3` states the fact of an item before it, word for word: each \
              item's fact says what its own excerpt shows"
            ],
        );
        let mut expected = json!({"evidence": []});
        assert!(offer_evidence(&checks, &project, &result, &mut expected));
        let facts: Vec<&str> = expected["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["fact"].as_str().unwrap())
            .collect();
        assert_eq!(
            facts,
            [
                "The flag is not used.",
                "b is defined.",
                "a.rs: declares `fn c`"
            ]
        );
        // Three facts of their own pass.
        let result = json!({"evidence": [item(1, "a"), item(2, "b"), item(3, "c")]});
        let subject = Subject {
            project: &project,
            result: &result,
            accepted: &BTreeMap::new(),
        };
        assert!(run(&checks, &subject).0.is_empty());
    }

    /// A fact written as the file's own words stands on the lines that say it: the words its
    /// lines say of themselves replace it; a fact of the model's own, or lines saying nothing
    /// of themselves, are left as they are.
    #[test]
    fn a_fact_given_as_the_file_s_own_words_is_what_its_lines_say() {
        let dir = tempfile::tempdir().unwrap();
        let file = "//! Sessions, newest first.\npub struct Args;\npub fn run() {}\n    x();\n";
        std::fs::write(dir.path().join("a.rs"), file).unwrap();
        let project = Project::open(dir.path()).unwrap();
        let lines: Vec<&str> = file.lines().collect();
        let item = |n: u64, fact: &str| json!({"fact": fact, "path": "./a.rs", "start": n, "end": n, "excerpt": lines[n as usize - 1]});
        let mut result = json!({"evidence": [
            item(1, "a.rs: Sessions, newest first."),
            item(3, "a.rs: declares `struct Args`"),
            item(2, "The arguments of the command."),
            item(4, "a.rs: declares `fn run`"),
        ]});
        let checks = [Check::Evidence("/evidence/*".into())];
        let notes = own_words(&checks, &project, &mut result);
        assert_eq!(
            notes,
            [
                "evidence `a.rs:3-3`: its fact is written as the file's own words, which at its \
              lines are \"a.rs: declares `fn run`\"; taken"
            ]
        );
        let facts: Vec<&str> = result["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["fact"].as_str().unwrap())
            .collect();
        assert_eq!(
            facts,
            [
                "a.rs: Sessions, newest first.",
                "a.rs: declares `fn run`",
                "The arguments of the command.",
                "a.rs: declares `fn run`"
            ]
        );
    }

    /// The correction before a refusal: a fact repeated on a comment's lines becomes the
    /// comment's words as the file has them (not as the item quotes them), one on a
    /// declaration what it declares; one repeated on other code, or whose own words were stated
    /// already, is left out, as are repeated lines.
    #[test]
    fn a_repeated_fact_takes_what_its_lines_say_of_themselves_or_is_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let file =
            "/// Reads the flags of the run command.\nfn a() {}\n/// The hop timeout's default.\n\
                    fn b() {}\n// Reads the flags of the run command.\n    let x = 1;\n";
        std::fs::write(dir.path().join("a.rs"), file).unwrap();
        let project = Project::open(dir.path()).unwrap();
        let lines: Vec<&str> = file.lines().collect();
        let item = |n: u64, fact: &str| json!({"fact": fact, "path": "./a.rs", "start": n, "end": n, "excerpt": lines[n as usize - 1]});
        let no_flag = "The run command has no --quiet flag.";
        let flags = "a.rs: Reads the flags of the run command.";
        let mut result = json!({"evidence": [
            item(1, flags),
            item(2, no_flag),
            item(4, no_flag),
            item(3, &format!("  {}", no_flag.to_uppercase())),
            item(3, "Another fact."),
            item(5, no_flag),
            item(6, no_flag),
        ]});
        // The item at line 3 quotes other words than the file has: the file's are taken.
        result["evidence"][3]["excerpt"] = json!("/// Something else.");
        let checks = [Check::Evidence("/evidence/*".into())];
        let notes = drop_repeated(&checks, &project, &mut result);
        assert_eq!(
            notes,
            [
                "evidence `a.rs:4-4`: its fact repeats an item before it; what its lines say of \
                 themselves (a comment, a declaration) is its fact",
                "evidence `a.rs:3-3`: its fact repeats an item before it; what its lines say of \
                 themselves (a comment, a declaration) is its fact",
                "evidence `a.rs:3-3`: it repeats an item before it; left out",
                "evidence `a.rs:5-5`: it repeats an item before it; left out",
                "evidence `a.rs:6-6`: it repeats an item before it; left out",
            ]
        );
        let facts: Vec<(u64, &str)> = result["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| (i["start"].as_u64().unwrap(), i["fact"].as_str().unwrap()))
            .collect();
        assert_eq!(
            facts,
            [
                (1, flags),
                (2, no_flag),
                (4, "a.rs: declares `fn b`"),
                (3, "a.rs: The hop timeout's default.")
            ]
        );
        // Nothing repeats: nothing changes.
        let before = result.clone();
        assert!(drop_repeated(&checks, &project, &mut result).is_empty());
        assert_eq!(result, before);
    }

    #[test]
    fn the_next_step_is_offered_the_lines_of_the_found_files_that_hold_the_tasks_words() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src/cli")).unwrap();
        std::fs::write(
            dir.path().join("src/cli/run.rs"),
            "//! `run`: one session.\nuse x;\n\npub struct Args {\n    pub verbose: bool,\n}\n\
             /// Runs the session.\npub fn run(args: Args) {}\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("src/cli/mod.rs"),
            "---\ntitle: x\n---\npub mod run;\n",
        )
        .unwrap();
        let project = Project::open(dir.path()).unwrap();
        let checks = [Check::Evidence("/evidence/*".into())];
        let shape = || json!({"primary": ["…"], "evidence": [{"fact": "…", "path": "…", "start": 1, "end": 1, "excerpt": "…"}]});
        let files = [
            "src/cli/run.rs".to_string(),
            "src/cli/mod.rs".to_string(),
            "gone.rs".to_string(),
        ];
        let words = ["quiet".to_string(), "run".to_string()];
        let mut expected = shape();
        assert!(prefill_evidence(
            &checks,
            &project,
            &files,
            &words,
            &mut expected
        ));
        let at: Vec<(String, u64, u64)> = expected["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["path"].as_str().unwrap().to_string(),
                    e["start"].as_u64().unwrap(),
                    e["end"].as_u64().unwrap(),
                )
            })
            .collect();
        // The best lines of each file in turn: run.rs's first that says `run` (lines 1-2),
        // mod.rs's body (past its frontmatter), then run.rs's next (lines 7-8); none overlap.
        assert_eq!(
            at,
            [
                ("src/cli/run.rs".to_string(), 1, 2),
                ("src/cli/mod.rs".to_string(), 4, 4),
                ("src/cli/run.rs".to_string(), 7, 8)
            ],
            "{expected}"
        );
        assert!(expected["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| evidence(&project, e).is_ok()));
        assert_eq!(expected["primary"], json!(["…"]), "only evidence is filled");
        // Lines holding as many of the words: the comment first, with its words as the fact.
        std::fs::write(
            dir.path().join("src/tie.rs"),
            "fn run() {}\n\n// runs the one session here\nfn x() {}\n",
        )
        .unwrap();
        let mut expected = shape();
        let tie = ["src/tie.rs".to_string()];
        assert!(prefill_evidence(
            &checks,
            &project,
            &tie,
            &words,
            &mut expected
        ));
        assert_eq!(expected["evidence"][0]["start"], 3, "{expected}");
        assert_eq!(
            expected["evidence"][0]["fact"],
            "src/tie.rs: runs the one session here"
        );
        assert_eq!(expected["evidence"][1]["start"], 1, "{expected}");
        // Lines that say something of their own come before code holding more of the words.
        std::fs::write(
            dir.path().join("src/own.rs"),
            "    let run = quiet;\n\n/// Holds the flags.\npub struct Flags;\n",
        )
        .unwrap();
        let mut expected = shape();
        let own = ["src/own.rs".to_string()];
        assert!(prefill_evidence(
            &checks,
            &project,
            &own,
            &words,
            &mut expected
        ));
        let facts: Vec<&str> = expected["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["fact"].as_str().unwrap())
            .collect();
        assert_eq!(facts, ["src/own.rs: Holds the flags.", "…"], "{expected}");
        // Nothing found, or nothing readable: the shape stays as it is.
        let mut expected = shape();
        assert!(!prefill_evidence(
            &checks,
            &project,
            &[],
            &words,
            &mut expected
        ));
        assert!(!prefill_evidence(
            &checks,
            &project,
            &files[2..],
            &words,
            &mut expected
        ));
        assert_eq!(expected, shape());
    }

    #[test]
    fn a_refused_scope_is_offered_evidence_quoting_the_files_as_they_are() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src/cli")).unwrap();
        std::fs::write(
            dir.path().join("src/cli/run.rs"),
            "\n//! `run`: one session.\nuse x;\n\nfn run() {}\nfn quiet() {}\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("src/lib.rs"), "pub mod cli;\n").unwrap();
        let project = Project::open(dir.path()).unwrap();
        let checks = [
            Check::FilesExist(vec!["/primary/*".into(), "/secondary/*".into()]),
            Check::Evidence("/evidence/*".into()),
        ];
        let shape = || json!({"primary": ["…"], "evidence": [{"fact": "…", "path": "…", "start": 1, "end": 1, "excerpt": "…"}]});
        // The shape copied back, the path aside: its file's lines are offered at the lines
        // cited, the fact kept when written; then the first lines of each other file named
        // (blank lines at either end left out), each file once; then the next lines of a file
        // offered, up to three items.
        let result = json!({
            "primary": ["src/cli/run.rs"], "secondary": ["src/lib.rs", "src/gone.rs"],
            "evidence": [
                {"fact": "lib declares cli", "path": "src/lib.rs", "start": 1, "end": 1, "excerpt": "…"},
                {"fact": "…", "path": "…", "start": 1, "end": 1, "excerpt": "…"}
            ]
        });
        let mut expected = shape();
        assert!(offer_evidence(&checks, &project, &result, &mut expected));
        assert_eq!(
            expected["evidence"],
            json!([
                {"fact": "lib declares cli", "path": "src/lib.rs", "start": 1, "end": 1,
                 "excerpt": "pub mod cli;"},
                {"fact": "src/cli/run.rs: `run`: one session.", "path": "src/cli/run.rs",
                 "start": 2, "end": 3, "excerpt": "//! `run`: one session.\nuse x;"},
                {"fact": "src/cli/run.rs: declares `fn run`", "path": "src/cli/run.rs",
                 "start": 5, "end": 6, "excerpt": "fn run() {}\nfn quiet() {}"}
            ])
        );
        // One file named and cited: its next lines make the second item, not the same ones.
        let result = json!({"primary": ["src/cli/run.rs"],
            "evidence": [{"fact": "f", "path": "src/cli/run.rs", "start": 2, "end": 3}]});
        let mut expected = shape();
        assert!(offer_evidence(&checks, &project, &result, &mut expected));
        let at: Vec<(u64, u64)> = expected["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e["start"].as_u64().unwrap(), e["end"].as_u64().unwrap()))
            .collect();
        assert_eq!(at, [(2, 3), (5, 6)], "{expected}");
        // Lines cited are kept as cited (the check accepts them as offered).
        let result =
            json!({"evidence": [{"fact": "f", "path": "src/cli/run.rs", "start": 5, "end": 6}]});
        let mut expected = shape();
        assert!(offer_evidence(&checks, &project, &result, &mut expected));
        assert_eq!(
            expected["evidence"][0]["excerpt"],
            "fn run() {}\nfn quiet() {}"
        );
        assert_eq!(expected["primary"], json!(["…"]), "only evidence is filled");
        // A file that opens with a YAML frontmatter is offered from its body.
        std::fs::write(
            dir.path().join("src/d.md"),
            "---\ndate: 2026-11-09\nstatus: accepted\n---\n\n# Delegation\n",
        )
        .unwrap();
        let result =
            json!({"primary": ["src/d.md"], "evidence": [{"fact": "f", "path": "src/d.md"}]});
        let mut expected = shape();
        assert!(offer_evidence(&checks, &project, &result, &mut expected));
        assert_eq!(expected["evidence"][0]["excerpt"], "# Delegation");
        // Lines past the end, or a range too long to cite, fall back to the first lines.
        let result =
            json!({"evidence": [{"fact": "f", "path": "src/lib.rs", "start": 3, "end": 4}]});
        let mut expected = shape();
        assert!(offer_evidence(&checks, &project, &result, &mut expected));
        assert_eq!(expected["evidence"][0]["start"], 1);
        // A line too long to copy whole in one JSON string is passed over for a short one.
        let long = format!("//! {}\nshort line\n", "x".repeat(200));
        std::fs::write(dir.path().join("src/long.rs"), long).unwrap();
        let result = json!({"primary": ["src/long.rs"], "evidence": [{"path": "src/long.rs", "start": 1, "end": 2}]});
        let mut expected = shape();
        assert!(offer_evidence(&checks, &project, &result, &mut expected));
        assert_eq!(
            expected["evidence"],
            json!([{"fact": "…", "path": "src/long.rs", "start": 2, "end": 2, "excerpt": "short line"}])
        );
        // A file whose first lines are its own comment: the fact is that comment's words.
        std::fs::write(
            dir.path().join("src/doc.rs"),
            "//! `switchboard run`: runs a session\n//! and shows its hop tree.\nfn x() {}\n",
        )
        .unwrap();
        let result = json!({"primary": ["src/doc.rs"]});
        let mut expected = shape();
        assert!(offer_evidence(&checks, &project, &result, &mut expected));
        assert_eq!(
            expected["evidence"][0]["fact"],
            "src/doc.rs: `switchboard run`: runs a session and shows its hop tree."
        );
        assert_eq!(
            fact_of_comment("a.rs", "# Decision: parse YAML"),
            Some("a.rs: Decision: parse YAML".into())
        );
        assert_eq!(
            fact_of_comment("a.rs", "// two words"),
            None,
            "too few words"
        );
        assert_eq!(
            fact_of_comment("a.rs", "fn main() { run(); }"),
            None,
            "code is no fact"
        );
        assert_eq!(
            fact_of_comment("a.rs", "/// Runs one session to its end.\npub fn run() {"),
            Some("a.rs: Runs one session to its end.".into()),
            "the comment speaks for the code it documents"
        );
        assert_eq!(
            fact_of_comment(
                "a.rs",
                "fn run() {} // runs one session\n// and more words here"
            ),
            None,
            "a comment after code is no opening comment"
        );
        assert_eq!(
            fact_of_comment("a.rs", "#[error(\"the path is outside the root\")]\nPath,"),
            None,
            "an attribute is code"
        );
        for (line, fact) in [
            (
                "pub fn run(args: Args) -> Result<()> {",
                Some("a.rs: declares `fn run`"),
            ),
            (
                "#[derive(Debug)]\npub(crate) struct Args {",
                Some("a.rs: declares `struct Args`"),
            ),
            ("pub async fn fetch<T>(", Some("a.rs: declares `fn fetch`")),
            (
                "pub const fn new() -> Self {",
                Some("a.rs: declares `fn new`"),
            ),
            ("const unsafe fn raw() {", Some("a.rs: declares `fn raw`")),
            (
                "pub const MAX: usize = 3;",
                Some("a.rs: declares `const MAX`"),
            ),
            ("def main():", Some("a.rs: declares `def main`")),
            ("impl<T> From<T> for X {", None),
            ("let run = fn_of(x);", None),
            ("pub fn", None),
        ] {
            assert_eq!(fact_of_declaration("a.rs", line).as_deref(), fact, "{line}");
        }
        // An item with a fact still to write on lines that say nothing of their own: the
        // nearest lines of its file that do, unless their words were stated already.
        std::fs::write(
            dir.path().join("src/near.rs"),
            "//! Near: the module.\nuse a;\nuse b;\n\n/// Builds the thing.\nfn build() {\n    let x = 1;\n}\n",
        )
        .unwrap();
        let result = json!({"evidence": [
            {"fact": "src/near.rs: Near: the module.", "path": "src/near.rs", "start": 7, "end": 7},
            {"fact": "src/near.rs: Near: the module.", "path": "src/near.rs", "start": 2, "end": 2},
        ]});
        let mut expected = shape();
        assert!(offer_evidence(&checks, &project, &result, &mut expected));
        let at: Vec<(u64, &str)> = expected["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e["start"].as_u64().unwrap(), e["fact"].as_str().unwrap()))
            .collect();
        assert_eq!(
            at,
            [
                (7, "src/near.rs: Near: the module."),
                (5, "src/near.rs: Builds the thing."),
            ],
            "{expected}"
        );
        let long = fact_of_comment("a.rs", &format!("//! {}", "word ".repeat(40))).unwrap();
        assert!(
            long.chars().count() <= FACT_CHARS && long.ends_with("word"),
            "{long}"
        );
        // Nothing that names a file inside the root: nothing offered, the shape unchanged.
        let result = json!({"primary": ["../outside.rs"], "evidence": [{"path": "src/none.rs"}]});
        let mut expected = shape();
        assert!(!offer_evidence(&checks, &project, &result, &mut expected));
        assert_eq!(expected, shape());
    }
}
