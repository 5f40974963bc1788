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
//! * a line of the answer that says nothing but the template's placeholders (at most a short
//!   label such as `Start with:` beside them) is left out;
//! * the template's `path:<line>` left unfilled inside a code span loses its `:<line>`;
//! * an Evidence line whose reference is not in backticks becomes the line its problem's help
//!   writes out (``- **Evidence**: `path:N-M` ``);
//! * a frontmatter never closed gets its `---` after its `key: value` lines, when a blank line
//!   or `<thinking>` follows them;
//! * a `correlation_id` within two characters of the caller's UUID becomes the caller's;
//! * a `message_id` with the runtime's prefix and date but another sequence number (or within
//!   two characters of the runtime's id) becomes the runtime's: over llama-server the 1.5B
//!   thoughts-locator wrote `locator-…-002` where its prompt said `-001`, three times, and a
//!   list naming the right record was BLOCKED on that alone;
//! * text after the closing `</answer>` goes;
//! * an `<answer>` never closed, with no `</answer>` anywhere, is closed at the end of the text
//!   (over llama-server, no grammar, the 1.5B codebase-locator left it open in two sessions of
//!   three and ended BLOCKED on it);
//! * an excerpt that stands word for word at other lines of its cited file (whole, or a run of
//!   its lines when the rest is not in the file) is cited there: its reference becomes that
//!   range and its block those lines. The quote was the model's own and the lines are really
//!   there; only the numbers (and any line it had reworded) change;
//! * an excerpt whose every line is a piece of the cited line at its place (a quote cut short)
//!   becomes those lines whole;
//! * an excerpt longer than the contract allows that is, word for word, a run of the cited
//!   lines keeps the first lines that fit (blank ends left off), cited as such;
//! * an item whose excerpt does not say what its title states, while one line of its sources
//!   does (`contract/signal-stated-elsewhere`), is cited at that line, quoted whole.
//!
//! Nothing else is touched; the copy is checked again before it is taken or offered
//! (`runtime::check`).

use super::check::{
    path_item, same_name_files, CUT_DOWN, PART_FOUND, RELOCATED, SHORTENED, STATED_AT,
};
use super::rule::Rule;
use crate::problem::Problem;
use crate::project::Project;

/// Characters a `correlation_id` may differ by from the caller's UUID and still be its copy,
/// slipped: the 1.5B codebase-locator over llama-server dropped one character of a 36-character
/// UUID and was BLOCKED on it. Another session's UUID differs in far more.
const MAX_ID_SLIP: usize = 2;

/// The message of `envelope/tags` for an `<answer>` block that is never closed.
const UNCLOSED_ANSWER: &str = "`<answer>` is never closed";

/// `answer` with the fixes above applied for `problems` (found on this very text), or `None`
/// when none applies.
pub fn apply(answer: &str, problems: &[Problem], project: &Project) -> Option<String> {
    let mut edits: Vec<(std::ops::Range<usize>, String)> = Vec::new();
    // A block whose item's title is stated at another line is cited there, whatever its own
    // mismatch would have offered: the line that says the item beats the lines that match the quote.
    let stated: Vec<std::ops::Range<usize>> = problems
        .iter()
        .filter(|p| p.code == Rule::SignalStatedElsewhere.code())
        .filter_map(|p| p.span.clone())
        .collect();
    for p in problems {
        let Some(span) = p.span.clone().filter(|s| s.end <= answer.len()) else {
            continue;
        };
        if p.code == Rule::NamedPathMissing.code() {
            let named = answer[span.clone()].trim_matches('`');
            // The whole project, not only the missing path's nearest folder: the 1.5B
            // thoughts-locator named `research/…-agent-discovery-precedence.md`, `research/`
            // held a file sharing a word with it, and the word search never looked in
            // `decisions/`, where the file is.
            if let [only] = same_name_files(project, named).as_slice() {
                let at = answer[span.clone()].find(named).unwrap_or(0) + span.start;
                edits.push((at..at + named.len(), only.clone()));
            }
        } else if p.code == Rule::Placeholder.code() {
            let start = answer[..span.start].rfind('\n').map_or(0, |i| i + 1);
            let end = answer[span.start..]
                .find('\n')
                .map_or(answer.len(), |i| span.start + i);
            if let Some(suffix) = line_suffix(answer, span.clone()) {
                edits.push((suffix, String::new()));
            } else if let Some(item) = path_item(answer, span.start) {
                let indent = &answer[start
                    ..start + (answer[start..end].len() - answer[start..end].trim_start().len())];
                edits.push((start..end, format!("{indent}{item}")));
            } else if let Some(line) = blank_line(answer, span.clone()) {
                edits.push((line, String::new()));
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
        } else if p.code == Rule::SignalStatedElsewhere.code() {
            let at = p.help.as_deref().is_some_and(|h| h.starts_with(STATED_AT));
            if let (true, Some(actual)) = (at, p.actual.as_ref()) {
                edits.extend(cite_elsewhere(answer, span, &actual.from, &actual.lines));
            }
        } else if p.code == Rule::ExcerptMismatch.code() && !stated.contains(&span) {
            let relocated = p.help.as_deref().is_some_and(|h| {
                [RELOCATED, PART_FOUND, SHORTENED]
                    .iter()
                    .any(|start| h.starts_with(start))
            });
            if let (true, Some(actual)) = (relocated, p.actual.as_ref()) {
                edits.extend(cite_elsewhere(answer, span, &actual.from, &actual.lines));
            }
        } else if p.code == Rule::CorrelationMismatch.code() {
            let expected = id_to_copy(p, "copy it exactly: `correlation_id: ");
            let written = &answer[span.clone()];
            // Only a UUID (the runtime's own ids): no other is within two characters of it,
            // while a name such as `corr-1` or `research-2026-01-19` has neighbours that are
            // other ids.
            let slip = expected.is_some_and(|e| {
                uuid::Uuid::parse_str(e).is_ok()
                    && !written.is_empty()
                    && strsim::levenshtein(written, e) <= MAX_ID_SLIP
            });
            if let (true, Some(expected)) = (slip, expected) {
                edits.push((span, expected.to_string()));
            }
        } else if p.code == Rule::MessageIdMismatch.code() {
            let expected = id_to_copy(p, "copy the id exactly: `message_id: ");
            if let Some(expected) = expected.filter(|e| id_slip(&answer[span.clone()], e)) {
                edits.push((span, expected.to_string()));
            }
        } else if p.code == Rule::FrontmatterUnclosed.code() {
            if let Some(at) = frontmatter_end(answer) {
                edits.push((at..at, "---\n".to_string()));
            }
        } else if p.code == Rule::ExcerptTooLong.code() {
            let cut_down = p.help.as_deref().is_some_and(|h| h.starts_with(CUT_DOWN));
            if let (true, Some(actual)) = (cut_down, p.actual.as_ref()) {
                edits.extend(cite_elsewhere(answer, span, &actual.from, &actual.lines));
            }
        } else if p.code == Rule::Tags.code()
            && p.message == UNCLOSED_ANSWER
            && !answer.contains("</answer>")
        {
            let end = answer.trim_end().len();
            edits.push((end..answer.len(), "\n</answer>\n".to_string()));
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

/// The id a mismatch's help tells the model to copy (`<lead>ID\``), as the checker writes it.
fn id_to_copy<'p>(p: &'p Problem, lead: &str) -> Option<&'p str> {
    p.help
        .as_deref()
        .and_then(|h| h.strip_prefix(lead))
        .and_then(|rest| rest.strip_suffix('`'))
}

/// Whether `written` is the runtime's message id `expected` copied with a slip: the same
/// `<prefix>-YYYY-MM-DD` and another sequence number, or at most [`MAX_ID_SLIP`] characters
/// off. A subagent's conversation shows it no id of that prefix and day but its own, so such an
/// id can only be its own miscopied; one of another prefix or day is left to the repair turn.
fn id_slip(written: &str, expected: &str) -> bool {
    use super::check::parse_message_id;
    let same_day = matches!(
        (parse_message_id(written), parse_message_id(expected)),
        (Ok(w), Ok(e)) if w == e
    );
    !written.is_empty() && (same_day || strsim::levenshtein(written, expected) <= MAX_ID_SLIP)
}

/// `text` with its frontmatter closed where [`frontmatter_end`] finds it left open, or `None`.
/// The researcher's report over llama-server had the same open frontmatter as its locator's
/// answer and was saved that way.
pub fn close_frontmatter(text: &str) -> Option<String> {
    let at = frontmatter_end(text)?;
    Some(format!("{}---\n{}", &text[..at], &text[at..]))
}

/// Where the closing `---` of a frontmatter left open belongs: after its `key: value` lines, when
/// the first line after them is blank or opens `<thinking>`. Over llama-server the 1.5B
/// codebase-locator wrote its four fields, then a blank line and `<thinking>`, with no `---`
/// between, through both repairs.
fn frontmatter_end(answer: &str) -> Option<usize> {
    let mut at = answer.strip_prefix("---\n").map(|_| 4)?;
    let start = at;
    for line in answer[start..].split_inclusive('\n') {
        let bare = line.trim_end();
        let field = bare.split_once(':').is_some_and(|(k, _)| {
            !k.is_empty() && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        });
        if !field {
            let opens = bare.is_empty() || bare == "<thinking>";
            return (at > start && opens).then_some(at);
        }
        at += line.len();
    }
    None
}

/// The `:<line>` of a path written as the template's `path:<line>` inside a code span
/// (`` `src/agent/parse.rs:<line>` ``), when the placeholder at `span` is one: the path alone is
/// what the model knew. Qwen2.5-Coder-1.5B's codebase-locator, over llama-server, ended its list
/// with ``Start with: `src/agent/parse.rs:<line>` `` through both repairs and was BLOCKED on it.
fn line_suffix(answer: &str, span: std::ops::Range<usize>) -> Option<std::ops::Range<usize>> {
    let colon = span.start.checked_sub(1)?;
    let closed = answer[span.end..].starts_with('`');
    if answer.as_bytes().get(colon) != Some(&b':') || !closed {
        return None;
    }
    let line_start = answer[..colon].rfind('\n').map_or(0, |i| i + 1);
    let opened = answer[line_start..colon].rfind('`')? + line_start;
    let path = &answer[opened + 1..colon];
    let is_path = path.contains(['/', '.']) && !path.contains(['<', '>', ' ']);
    is_path.then_some(colon..span.end)
}

/// The whole line (its line end included) that the placeholder at `span` stands on, when the line
/// says nothing but the template's placeholders: no letter or digit outside them but at most a
/// short label (`Start with:`, up to four words and one colon, at its end), inside `<answer>`.
/// Leaving such a line out is what the placeholder's help offers; over llama-server the 1.5B
/// codebase-locator ended a list of real paths with ``Start with: `<the two or three files an
/// analyzer should read first>` `` through both repairs and was BLOCKED on that line alone.
fn blank_line(answer: &str, span: std::ops::Range<usize>) -> Option<std::ops::Range<usize>> {
    let open = answer.find("<answer>")? + "<answer>".len();
    let start = answer[..span.start].rfind('\n').map_or(0, |i| i + 1);
    if start < open {
        return None;
    }
    let end = answer[span.start..]
        .find('\n')
        .map_or(answer.len(), |i| span.start + i + 1);
    let line = &answer[start..end];
    if line.contains("answer>") {
        return None;
    }
    let mut left = String::new();
    let mut rest = line;
    while let Some(lt) = rest.find('<') {
        left.push_str(&rest[..lt]);
        let gt = rest[lt..].find('>')? + lt;
        rest = &rest[gt + 1..];
    }
    left.push_str(rest);
    let bare: String = left.chars().filter(|c| *c != '`').collect();
    let bare = bare.trim().trim_start_matches(['-', '*']).trim();
    let says_nothing = !bare.chars().any(char::is_alphanumeric);
    let label = bare.strip_suffix(':').is_some_and(|words| {
        words.split_whitespace().count() <= 4
            && words.chars().all(|c| c.is_alphabetic() || c == ' ')
    });
    (says_nothing || label).then_some(start..end)
}

/// `answer` with each Evidence reference that cites more lines than its excerpt quotes narrowed
/// to the quoted run (`path:35-47` quoting lines 35–36 becomes `path:35-36`), or `None` when
/// none does. A run inside the cited range verifies, so this is no repair: it makes what goes
/// up say exactly which lines carry the item. evidence-validator, reviewing a 1.5B analyzer's
/// item citing 35–47 with two lines quoted, rejected it because "the excerpt should be the
/// lines 35-47".
pub fn narrow(answer: &str, project: &Project) -> Option<String> {
    let env = super::check::evidence_view(answer);
    let files = super::FileCache::new();
    let ctx = super::CheckContext::new(project, &files);
    let mut edits = super::check::narrowings(&env, &ctx);
    if edits.is_empty() {
        return None;
    }
    edits.sort_by_key(|e| std::cmp::Reverse(e.0.start));
    let mut out = answer.to_string();
    for (span, text) in edits {
        out.replace_range(span, &text);
    }
    Some(out)
}

/// The two edits that cite an excerpt block (at `block`, fences included) at `from` with
/// `lines`: the reference of the Evidence line above it, and the block's content. None when the
/// item's Evidence line or its one reference cannot be found.
fn cite_elsewhere(
    answer: &str,
    block: std::ops::Range<usize>,
    from: &str,
    lines: &str,
) -> Vec<(std::ops::Range<usize>, String)> {
    let before = &answer[..block.start];
    let Some(label) = before.rfind("**Evidence**") else {
        return Vec::new();
    };
    let line_end = before[label..]
        .find('\n')
        .map_or(before.len(), |i| label + i);
    let evidence = &answer[label..line_end];
    let ticks: Vec<usize> = evidence
        .match_indices('`')
        .map(|(i, _)| label + i)
        .collect();
    let [open, close] = ticks[..] else {
        return Vec::new();
    };
    let line_start = answer[..block.start].rfind('\n').map_or(0, |i| i + 1);
    let indent = &answer[line_start..block.start];
    if !indent.chars().all(|c| c == ' ' || c == '\t') {
        return Vec::new();
    }
    let opening = answer[block.start..block.end]
        .lines()
        .next()
        .unwrap_or("```");
    let info = opening.trim_start_matches(['`', '~']).trim();
    let longest = lines.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat((longest + 1).max(3));
    let mut text = format!("{fence}{info}\n");
    for l in lines.lines() {
        text.push_str(indent);
        text.push_str(l);
        text.push('\n');
    }
    text.push_str(indent);
    text.push_str(&fence);
    // The block's span may or may not take the closing fence's line end; keep what follows.
    vec![(open + 1..close, from.to_string()), (block, text)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_block_left_open_is_closed_at_the_end() {
        let dir = tempfile::tempdir().expect("tempdir");
        let project = Project::open(dir.path()).expect("project");
        let answer = "<thinking>\nx\n</thinking>\n\n<answer>\n- `a.md` — A\n\n";
        let problems = crate::contract::envelope::parse(answer)
            .err()
            .unwrap_or_default();
        assert!(
            problems.iter().any(|p| p.message == UNCLOSED_ANSWER),
            "{problems:?}"
        );
        let fixed = apply(answer, &problems, &project).expect("closed");
        assert_eq!(
            fixed,
            "<thinking>\nx\n</thinking>\n\n<answer>\n- `a.md` — A\n</answer>\n"
        );
        // Closed somewhere (a tag problem of another kind): nothing is added.
        let closed = "<answer>\nx\n</answer>\n</answer>\n";
        let unclosed = Problem {
            span: Some(0..8),
            ..Rule::Tags.problem(0..8, UNCLOSED_ANSWER)
        };
        assert_eq!(apply(closed, &[unclosed], &project), None);
    }

    #[test]
    fn a_correlation_id_copied_with_a_slip_is_the_caller_s_and_another_is_not() {
        let dir = tempfile::tempdir().expect("tempdir");
        let project = Project::open(dir.path()).expect("project");
        let uuid = "01a22154-48e5-746c-949a-266814d44f97";
        let mismatch = |caller: &str, written: &str| {
            let answer = format!("---\nmessage_id: m\ncorrelation_id: {written}\n---\n");
            let at = answer.find(written).expect("written");
            let p = Problem {
                span: Some(at..at + written.len()),
                ..Rule::CorrelationMismatch
                    .problem(0..0, "m")
                    .with_help(format!("copy it exactly: `correlation_id: {caller}`"))
            };
            apply(&answer, &[p], &project)
        };
        assert_eq!(
            mismatch(uuid, "01a22154-48e5-746c-949a-266814d4f97").as_deref(),
            Some(format!("---\nmessage_id: m\ncorrelation_id: {uuid}\n---\n").as_str())
        );
        assert_eq!(mismatch(uuid, "01a22154-48e5-746c-949a-2668141a2b3c"), None);
        // A caller's id that is no UUID is never taken for a slip: `corr-9` is another id.
        assert_eq!(mismatch("corr-1", "corr-9"), None);
    }

    #[test]
    fn a_message_id_miscopied_in_its_number_is_the_runtime_s_and_another_is_not() {
        use crate::contract::{check, CheckContext, Contract, FileCache};
        let dir = tempfile::tempdir().expect("tempdir");
        let project = Project::open(dir.path()).expect("project");
        let files = FileCache::new();
        let own = "locator-2026-12-07-001";
        let ctx = CheckContext::new(&project, &files).with_message_id(own);
        let answer = |id: &str| {
            format!(
                "---\nmessage_id: {id}\ncorrelation_id: c-1\ntimestamp: 2026-12-07T16:06:00Z\n\
                 message_type: LOCATOR_RESPONSE\n---\n\n<thinking>\nt\n</thinking>\n\n\
                 <answer>\n- `a.md`\n</answer>\n"
            )
        };
        // What the checker reports is what the fix reads: the help that names the id to copy.
        let fixed = |id: &str| {
            let text = answer(id);
            let problems = check(&text, &Contract::envelope(), &ctx).violations;
            assert!(
                problems
                    .iter()
                    .any(|p| p.code == Rule::MessageIdMismatch.code()),
                "{id}: {problems:?}"
            );
            apply(&text, &problems, &project)
        };
        // Another number of the same prefix and day (the 1.5B locator's `-002`), or a dropped
        // digit: the runtime's own id.
        for slip in ["locator-2026-12-07-002", "locator-2026-12-07-01"] {
            assert_eq!(fixed(slip), Some(answer(own)), "{slip}");
        }
        // Another prefix or another day is no slip of this id: left to the repair turn.
        for other in ["thoughts-2026-12-07-001", "locator-2026-11-30-004", "x"] {
            assert_eq!(fixed(other), None, "{other}");
        }
    }

    #[test]
    fn a_frontmatter_left_open_is_closed_after_its_fields() {
        let dir = tempfile::tempdir().expect("tempdir");
        let project = Project::open(dir.path()).expect("project");
        let answer = "---\nmessage_id: m-1\nmessage_type: LOCATOR_RESPONSE\n\n<thinking>\nt\n</thinking>\n\n<answer>\n- `a.md`\n</answer>\n";
        let problems = crate::contract::envelope::parse(answer)
            .err()
            .unwrap_or_default();
        assert!(
            problems
                .iter()
                .any(|p| p.code == Rule::FrontmatterUnclosed.code()),
            "{problems:?}"
        );
        let fixed = apply(answer, &problems, &project).expect("closed");
        assert!(
            fixed.starts_with(
                "---\nmessage_id: m-1\nmessage_type: LOCATOR_RESPONSE\n---\n\n<thinking>"
            ),
            "{fixed}"
        );
        assert!(crate::contract::envelope::parse(&fixed).is_ok(), "{fixed}");
        // Prose after the fields, or no field at all: where it ends is a judgement.
        for other in [
            "---\nmessage_id: m-1\nHere is my answer.\n<answer>\nx\n</answer>\n",
            "---\n\n<thinking>\nt\n</thinking>\n",
        ] {
            let problems = crate::contract::envelope::parse(other)
                .err()
                .unwrap_or_default();
            assert_eq!(apply(other, &problems, &project), None, "{other}");
        }
    }

    #[test]
    fn a_line_left_as_the_template_s_placeholder_leaves_the_path_alone() {
        let dir = tempfile::tempdir().expect("tempdir");
        let project = Project::open(dir.path()).expect("project");
        let placeholder = |answer: &str| {
            let at = answer.find("<line>").expect("placeholder");
            Problem {
                span: Some(at..at + "<line>".len()),
                ..Rule::Placeholder.problem(0..0, "m")
            }
        };
        let answer = "<answer>\nStart with: `src/agent/parse.rs:<line>`\n</answer>\n";
        assert_eq!(
            apply(answer, &[placeholder(answer)], &project).as_deref(),
            Some("<answer>\nStart with: `src/agent/parse.rs`\n</answer>\n")
        );
        // Not after a path's colon, or outside a code span: left for the model.
        for other in [
            "<answer>\nStart with: `src/agent/parse.rs` at <line>\n</answer>\n",
            "<answer>\nStart with: src/agent/parse.rs:<line>\n</answer>\n",
            "<answer>\nStart with: `the parser:<line>`\n</answer>\n",
        ] {
            assert_eq!(
                apply(other, &[placeholder(other)], &project),
                None,
                "{other}"
            );
        }
    }

    #[test]
    fn a_line_that_is_only_the_template_s_placeholder_is_left_out() {
        let dir = tempfile::tempdir().expect("tempdir");
        let project = Project::open(dir.path()).expect("project");
        let fix = |answer: &str, token: &str| {
            let at = answer.find(token).expect("placeholder");
            let p = Problem {
                span: Some(at..at + token.len()),
                ..Rule::Placeholder.problem(0..0, "m")
            };
            apply(answer, &[p], &project)
        };
        // The 1.5B codebase-locator's last line over llama-server, through both repairs.
        let start = "<the two or three files an analyzer should read first>";
        let answer =
            format!("<answer>\n- `src/cli/sessions.rs`\n\nStart with: `{start}`\n</answer>\n");
        assert_eq!(
            fix(&answer, start).as_deref(),
            Some("<answer>\n- `src/cli/sessions.rs`\n\n</answer>\n")
        );
        // A list item of nothing but blanks goes too.
        let item = "<answer>\n- `a/b.md`\n- `<path>` — <why>\n</answer>\n";
        assert_eq!(
            fix(item, "<path>").as_deref(),
            Some("<answer>\n- `a/b.md`\n</answer>\n")
        );
        // A line that says something besides the blank, or stands outside the answer, stays.
        for (other, token) in [
            (
                "<answer>\nStart with: the parser, then <file>\n</answer>\n",
                "<file>",
            ),
            (
                "<answer>\nThe parser reads <file> first.\n</answer>\n",
                "<file>",
            ),
            (
                "<thinking>\nStart with: <file>\n</thinking>\n<answer>\nx\n</answer>\n",
                "<file>",
            ),
            ("<answer>\nStart with: <file></answer>\n", "<file>"),
        ] {
            assert_eq!(fix(other, token), None, "{other}");
        }
    }

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
        // The file is in another branch of the tree, and the missing path's own folder holds a
        // file that shares a word with it: still moved to the one file of that name.
        let research = dir.path().join("thoughts/shared/research");
        std::fs::create_dir_all(&research).expect("mkdir");
        std::fs::write(research.join("2026-11-01-yaml-notes.md"), "# notes\n").expect("write");
        let elsewhere =
            "<answer>\n- `thoughts/shared/research/2026-11-02-yaml-parser.md` — YAML\n</answer>\n";
        // The first backticked path of `answer`, reported missing.
        let first_path_missing = |answer: &str| {
            let at = answer.find('`').expect("path");
            let end = answer[at + 1..].find('`').expect("path") + at + 2;
            Problem {
                span: Some(at..end),
                ..Rule::NamedPathMissing.problem(0..0, "m")
            }
        };
        assert_eq!(
            apply(elsewhere, &[first_path_missing(elsewhere)], &project).as_deref(),
            Some("<answer>\n- `thoughts/shared/decisions/2026-11-02-yaml-parser.md` — YAML\n</answer>\n")
        );
        // Named without its date, in another folder: the one record of that name.
        let undated = "<answer>\n- `thoughts/shared/plans/yaml-parser.md` — YAML\n</answer>\n";
        assert_eq!(
            apply(undated, &[first_path_missing(undated)], &project).as_deref(),
            Some("<answer>\n- `thoughts/shared/decisions/2026-11-02-yaml-parser.md` — YAML\n</answer>\n")
        );
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

    /// The 1.5B analyzer's answer: four real lines under a heading it reworded, cited at 1–10
    /// (they stand at 9–10 here). The checker finds the run; the fix cites it there.
    #[test]
    fn an_excerpt_found_elsewhere_whole_or_in_part_is_cited_there() {
        use crate::contract::{verify_evidence, CheckContext, FileCache};
        let dir = tempfile::tempdir().expect("tempdir");
        let doc = "---\ndate: 2026-11-02\nstatus: accepted\n---\n\n# Decision: parse YAML with serde-saphyr\n\n## Why\n- serde-saphyr is panic-free on malformed input.\n- It reports an exact line and column for errors.\n";
        std::fs::write(dir.path().join("d.md"), doc).expect("write");
        let project = Project::open(dir.path()).expect("project");
        let files = FileCache::new();
        let ctx = CheckContext::new(&project, &files);
        let answer = |reference: &str, excerpt: &str| {
            format!("<answer>\n### Decision\n- **Evidence**: `{reference}`\n- **Excerpt**:\n  ```markdown\n{excerpt}  ```\n\nAfter.\n</answer>\n")
        };
        let real = "  - serde-saphyr is panic-free on malformed input.\n  - It reports an exact line and column for errors.\n";
        for (excerpt, note) in [
            (real.to_string(), "whole"),
            (
                format!("  ## Decision: parse YAML with serde-saphyr behind our splitter\n{real}"),
                "in part",
            ),
        ] {
            let text = answer("d.md:1-4", &excerpt);
            let problems = verify_evidence(&text, &ctx);
            assert_eq!(problems.len(), 1, "{note}: {problems:?}");
            let fixed = apply(&text, &problems, &project).expect(note);
            assert_eq!(fixed, answer("d.md:9-10", real), "{note}");
            assert!(verify_evidence(&fixed, &ctx).is_empty(), "{note}: {fixed}");
        }
        // Nothing of it in the file: no fix (replacing the quote would change what it says).
        let text = answer(
            "d.md:1-4",
            "  - serde-saphyr never panics, say the docs of its authors.\n",
        );
        let problems = verify_evidence(&text, &ctx);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(apply(&text, &problems, &project), None);
    }

    /// The 1.5B analyzer's items, from a real session: the record's own title as the decision,
    /// quoted with the header row of its options table (cited at other lines), and a
    /// constraint quoted with the paragraph before the list that states it. Each is cited at
    /// the line that states it; an item whose excerpt says what it claims is left alone.
    #[test]
    fn an_item_is_cited_at_the_line_that_states_its_title() {
        use crate::contract::{check, CheckContext, Contract, FileCache};
        let dir = tempfile::tempdir().expect("tempdir");
        let doc = "---\ndate: 2026-11-02\nstatus: accepted\n---\n\n\
                   # Decision: parse YAML with serde-saphyr behind our own frontmatter splitter\n\n\
                   | Option | What counts against it |\n| --- | --- |\n\
                   | `serde_yaml` | archived by its author |\n\n\
                   ## Our own frontmatter splitter\n\n\
                   YAML parsing starts after the frontmatter has been cut out of the file. We keep a small splitter of our own\n\
                   instead of a frontmatter crate. It MUST:\n\n\
                   - accept and skip a UTF-8 byte order mark at the start of the file;\n\
                   - accept CRLF line endings as well as LF.\n";
        std::fs::write(dir.path().join("d.md"), doc).expect("write");
        let project = Project::open(dir.path()).expect("project");
        let files = FileCache::new();
        let ctx = CheckContext::new(&project, &files);
        let item = |title: &str, reference: &str, excerpt: &str| {
            format!("#### {title}\n- **Evidence**: `{reference}`\n- **Excerpt**:\n```\n{excerpt}\n```\n\n")
        };
        let answer = |items: &str| {
            format!(
                "---\nmessage_id: a-2026-01-19-001\ncorrelation_id: c\n\
                 timestamp: 2026-01-19T10:00:00Z\nmessage_type: DOCUMENT_ANALYSIS_RESPONSE\n\
                 source_document: d.md\ndocument_date: 2026-11-02\n\
                 document_status: accepted\nreliability: High\n---\n<thinking>\nt\n</thinking>\n\
                 <answer>\n{items}</answer>\n"
            )
        };
        let decision = "Decision: parse YAML with serde-saphyr behind our own frontmatter splitter";
        let bom = "Constraint: Our own frontmatter splitter MUST accept and skip a UTF-8 byte order mark at the start of the file";
        let splitter = "YAML parsing starts after the frontmatter has been cut out of the file. We keep a small splitter of our own\ninstead of a frontmatter crate. It MUST:";
        let text = answer(&format!(
            "{}{}",
            item(
                decision,
                "d.md:10-12",
                "| Option | What counts against it |\n| --- | --- |"
            ),
            item(bom, "d.md:14-15", splitter)
        ));
        let contract = Contract::document_analysis();
        let problems = check(&text, &contract, &ctx).violations;
        let mut codes: Vec<_> = problems.iter().map(|p| p.code.to_string()).collect();
        codes.sort();
        assert_eq!(
            codes,
            [
                "contract/signal-stated-elsewhere",
                "contract/signal-stated-elsewhere",
                "excerpt/mismatch"
            ],
            "{problems:?}"
        );
        let fixed = apply(&text, &problems, &project).expect("fixed");
        assert_eq!(
            fixed,
            answer(&format!(
                "{}{}",
                item(
                    decision,
                    "d.md:6-6",
                    "# Decision: parse YAML with serde-saphyr behind our own frontmatter splitter"
                ),
                item(
                    bom,
                    "d.md:17-17",
                    "- accept and skip a UTF-8 byte order mark at the start of the file;"
                )
            ))
        );
        let left = check(&fixed, &contract, &ctx).violations;
        assert!(left.is_empty(), "{left:?}");
        // The line inside the cited range, the excerpt of the model's own making: cited there.
        let wide = answer(&item(
            decision,
            "d.md:6-12",
            "We chose serde-saphyr for YAML.",
        ));
        let problems = check(&wide, &contract, &ctx).violations;
        let fixed = apply(&wide, &problems, &project).expect("fixed");
        assert_eq!(
            fixed,
            answer(&item(
                decision,
                "d.md:6-6",
                "# Decision: parse YAML with serde-saphyr behind our own frontmatter splitter"
            ))
        );
        // Three items under the record's title, each quoting other real lines (the 1.5B
        // analyzer): only the first is moved to the title's line; the others keep their lines,
        // cited where they stand, so three items verify, not one.
        let bom_line = "- accept and skip a UTF-8 byte order mark at the start of the file;";
        let same = answer(&format!(
            "{}{}{}",
            item(decision, "d.md:6-15", splitter),
            item(decision, "d.md:12-16", bom_line),
            item(
                decision,
                "d.md:16-18",
                "- accept CRLF line endings as well as LF."
            ),
        ));
        let problems = check(&same, &contract, &ctx).violations;
        let fixed = apply(&same, &problems, &project).expect("fixed");
        // As the gate passes it on: each reference narrowed to the lines it quotes.
        let fixed = narrow(&fixed, &project).unwrap_or(fixed);
        let cited: Vec<&str> = fixed
            .lines()
            .filter_map(|l| l.strip_prefix("- **Evidence**: `"))
            .collect();
        assert_eq!(
            cited,
            ["d.md:6-6`", "d.md:17-17`", "d.md:18-18`"],
            "{fixed}"
        );
        assert!(
            check(&fixed, &contract, &ctx).violations.is_empty(),
            "{fixed}"
        );
        // The excerpt says it: nothing to move, though the title's words stand elsewhere too.
        let said = answer(&item(
            "Constraint: the splitter must accept CRLF line endings as well as LF",
            "d.md:18",
            "- accept CRLF line endings as well as LF.",
        ));
        let left = check(&said, &contract, &ctx).violations;
        assert!(left.is_empty(), "{left:?}");
    }

    /// A reference wider than its quote is narrowed to the quoted run; an exact one, or one
    /// whose quote is not a run of it, is left alone.
    #[test]
    fn a_reference_wider_than_its_quote_is_narrowed_to_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let doc =
            "# D\n\nYAML parsing starts after the frontmatter.\nIt MUST:\n\n- record offsets;\n";
        std::fs::write(dir.path().join("d.md"), doc).expect("write");
        let project = Project::open(dir.path()).expect("project");
        let answer = |reference: &str, excerpt: &str| {
            format!("<answer>\n#### Constraint: offsets\n- **Evidence**: `{reference}`\n- **Excerpt**:\n```\n{excerpt}\n```\n</answer>\n")
        };
        let quote = "\nYAML parsing starts after the frontmatter.\nIt MUST:\n";
        assert_eq!(
            narrow(&answer("d.md:2-6", quote), &project),
            Some(answer("d.md:3-4", quote))
        );
        assert_eq!(narrow(&answer("d.md:3-4", quote), &project), None);
        assert_eq!(narrow(&answer("d.md:5-6", quote), &project), None);
        assert_eq!(
            narrow(&answer("d.md:2-6", "Not in the file."), &project),
            None
        );
    }

    /// The 1.5B analyzer quoted line 25 of a decision record without its first word, which
    /// ended the sentence of line 24. The whole line is what it quoted from; a reworded line is
    /// left alone.
    #[test]
    fn an_excerpt_cut_short_becomes_its_whole_lines() {
        use crate::contract::{verify_evidence, CheckContext, FileCache};
        let dir = tempfile::tempdir().expect("tempdir");
        let doc = "# Decision
We will use serde-saphyr for all YAML we parse, in answer
envelopes. We will not depend on `serde_yaml` or on `gray_matter`.
";
        std::fs::write(dir.path().join("d.md"), doc).expect("write");
        let project = Project::open(dir.path()).expect("project");
        let files = FileCache::new();
        let ctx = CheckContext::new(&project, &files);
        let answer = |reference: &str, excerpt: &str| {
            format!("<answer>\n### Decision: no serde_yaml\n- **Evidence**: `{reference}`\n- **Excerpt**:\n  ```\n  {excerpt}\n  ```\n</answer>\n")
        };
        let text = answer(
            "d.md:3",
            "We will not depend on `serde_yaml` or on `gray_matter`.",
        );
        let problems = verify_evidence(&text, &ctx);
        assert_eq!(problems.len(), 1, "{problems:?}");
        let fixed = apply(&text, &problems, &project).expect("fixed");
        assert_eq!(
            fixed,
            answer(
                "d.md:3-3",
                "envelopes. We will not depend on `serde_yaml` or on `gray_matter`."
            )
        );
        assert!(verify_evidence(&fixed, &ctx).is_empty(), "{fixed}");
        // A word changed inside the line is no cut: no fix.
        let text = answer(
            "d.md:3",
            "We shall not depend on `serde_yaml` or on `gray_matter`.",
        );
        let problems = verify_evidence(&text, &ctx);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(apply(&text, &problems, &project), None);
    }
}
