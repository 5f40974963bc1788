//! An answer that copies its prompt's answer template without filling it in: a 1.5B locator,
//! repaired once, sent back `## Documents about <topic>` and `` `thoughts/shared/decisions/<file>.md` ``,
//! which has every part the envelope asks for and says nothing. A `<…>` token of the answer that
//! also stands in the instructions the answer was asked with is such a placeholder; one the
//! prompt does not hold (`Vec<String>`, `<br>`) is the answer's own text and is left alone.

use crate::contract::envelope::Envelope;
use crate::contract::rule::Rule;
use crate::problem::Problem;

/// Placeholders reported per answer; the rest of an answer full of them adds nothing to fix.
const MAX_REPORTED: usize = 20;
/// A placeholder's text is short; past this a `<` … `>` pair is prose, not a blank.
const MAX_PLACEHOLDER_BYTES: usize = 120;

pub(super) fn check_placeholders(
    text: &str,
    env: &Envelope,
    template: &str,
    out: &mut Vec<Problem>,
) {
    let mut reported = 0;
    for block in [&env.thinking, &env.answer].into_iter().flatten() {
        let Some(inner) = text.get(block.inner.clone()) else {
            continue;
        };
        for (at, token) in placeholders(inner) {
            if reported == MAX_REPORTED {
                return;
            }
            if !template.contains(token) {
                continue;
            }
            reported += 1;
            let start = block.inner.start + at;
            let mut help = "write what it stands for, taken from your tool results (a real path, \
                            title, date, topic), or leave the line out; the template shows the \
                            shape of an answer, not its content"
                .to_string();
            if let Some(item) = path_item(inner, at) {
                help.push_str(&format!(
                    ". To keep the entry without what you did not look up, write the line as \
                     `{item}`"
                ));
            }
            out.push(
                Rule::Placeholder
                    .problem(
                        start..start + token.len(),
                        format!(
                            "`{token}` is a placeholder of the answer template in your \
                             instructions, left unfilled"
                        ),
                    )
                    .with_help(help),
            );
        }
    }
}

/// The list item a placeholder at `at` stands in, reduced to its path: `- \`path\`` when the
/// line is a list item whose first code span is a path without placeholders. A 1.5B locator
/// listed the real decision file as ``- `….md` — <title> (<YYYY-MM-DD>, <status>)`` through
/// both repairs: it had grepped no title, date or status to fill in.
pub(crate) fn path_item(text: &str, at: usize) -> Option<String> {
    let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let end = text[at..].find('\n').map_or(text.len(), |i| at + i);
    let line = text[start..end].trim_start();
    let rest = line
        .strip_prefix("- ")
        .or_else(|| line.strip_prefix("* "))?;
    let path = rest.split('`').nth(1)?;
    let looks_like_path = path.contains('/') && !path.contains(['<', '>', ' ']);
    looks_like_path.then(|| format!("- `{path}`"))
}

/// Every `<…>` token of `text` outside fenced code blocks (an Excerpt copies a file, and its
/// lines are verified against it), with its offset: one line, no nested `<`, not a tag of the
/// envelope (`<thinking>`, `</answer>`), not an autolink (`<https://…>`).
fn placeholders(text: &str) -> Vec<(usize, &str)> {
    let mut found = Vec::new();
    let mut fence: Option<(char, usize)> = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let here = offset;
        offset += line.len();
        let trimmed = line.trim_start();
        let marker = trimmed.chars().next().filter(|c| *c == '`' || *c == '~');
        if let Some(ch) = marker {
            let width = trimmed.chars().take_while(|c| *c == ch).count();
            if width >= 3 {
                fence = match fence {
                    None => Some((ch, width)),
                    Some((open, w)) if open == ch && width >= w => None,
                    still => still,
                };
                continue;
            }
        }
        if fence.is_some() {
            continue;
        }
        let mut from = 0;
        while let Some(open) = line[from..].find('<').map(|i| from + i) {
            let Some(close) = line[open + 1..].find(['<', '>']).map(|i| open + 1 + i) else {
                break;
            };
            if line.as_bytes()[close] == b'<' {
                from = close;
                continue;
            }
            let token = &line[open..=close];
            let body = &token[1..token.len() - 1];
            let tag = body.trim_start_matches('/');
            let is_envelope_tag = tag == "thinking" || tag == "answer";
            let is_link = body.contains("://") || body.contains('@');
            if !body.trim().is_empty()
                && token.len() <= MAX_PLACEHOLDER_BYTES
                && !is_envelope_tag
                && !is_link
            {
                found.push((here + open, token));
            }
            from = close + 1;
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_item_with_a_real_path_is_offered_without_its_placeholders() {
        let text = "## Docs\n- `thoughts/a/b.md` — <title> (<YYYY-MM-DD>, <status>)\n- `thoughts/<file>.md` — <title>\nSee <title>.\n";
        let at = text.find("<title>").unwrap();
        assert_eq!(path_item(text, at), Some("- `thoughts/a/b.md`".to_string()));
        let second = text.find("<file>").unwrap();
        assert_eq!(path_item(text, second), None, "the path is the placeholder");
        let prose = text.rfind("<title>").unwrap();
        assert_eq!(path_item(text, prose), None, "not a list item");
    }

    const TEMPLATE: &str = "Answer like this:\n<answer>\n## Documents about <topic>\n\
        - `thoughts/shared/decisions/<file>.md` — <title> (<YYYY-MM-DD>, <status>)\n</answer>\n\
        Use `Vec<String>` nowhere.";

    fn found(answer: &str) -> Vec<String> {
        let text = format!(
            "---\nmessage_id: m\n---\n<thinking>\nt\n</thinking>\n<answer>\n{answer}\n</answer>\n"
        );
        let env = Envelope::parse_lenient(&text);
        let mut out = Vec::new();
        check_placeholders(&text, &env, TEMPLATE, &mut out);
        out.iter()
            .map(|p| {
                assert_eq!(p.code, Rule::Placeholder.code());
                text[p.span.clone().expect("span")].to_string()
            })
            .collect()
    }

    #[test]
    fn the_templates_own_blanks_are_found_where_they_stand() {
        assert_eq!(
            found("## Documents about <topic>\n- `thoughts/shared/decisions/<file>.md` — <title> (<YYYY-MM-DD>, <status>)"),
            ["<topic>", "<file>", "<title>", "<YYYY-MM-DD>", "<status>"]
        );
    }

    #[test]
    fn angle_brackets_the_template_does_not_hold_are_the_answers_own() {
        assert!(found(
            "## Documents about the YAML parser\n- `a/b.md` — YAML (2026-11-02, accepted)\n\
            `HashMap<K, V>` and <br> and <https://example.com/a> and a < b > c"
        )
        .is_empty());
        // `Vec<String>` is in the template, but an Excerpt's code block is the file's text.
        assert!(found("- **Excerpt**:\n  ```\n  let v: Vec<String> = x;\n  ```").is_empty());
    }

    #[test]
    fn placeholders_skip_fences_and_envelope_tags() {
        let text = "a <topic>\n```\n<topic>\n```\n~~~~\n<title>\n~~~~\n</answer> <status>\n";
        let got: Vec<&str> = placeholders(text).into_iter().map(|(_, t)| t).collect();
        assert_eq!(got, ["<topic>", "<status>"]);
    }
}
