//! An accepted answer's item whose title repeats an earlier item's claim over lines that do not
//! say it takes the first line of its own excerpt as its claim, before the answer goes up.
//!
//! Qwen2.5-Coder-1.5B's thoughts-analyzer titled its first item with the decision record's title
//! over the title's own line, and its second, `#### Constraint: …`, with the same words over two
//! lines about symlinks and `../../.ssh`. Every excerpt verified; the evidence-validator rejected
//! the answer three times because the second item's claim "is not supported by any excerpt", and
//! the researcher's report went without the record it was asked about (t2, 2026-12-01). The
//! same model gives three items of one file one title in about half of its code analyses
//! (BENCHMARKS.md, twenty-ninth and thirtieth sessions), and the reports copy them.
//!
//! A repeated claim says nothing its first use did not; the lines under it are the item. So the
//! runtime writes those lines' own words as its claim, the way a plan's fact takes its lines'
//! comment (`workflow::check::own_words`): a claim the excerpt holds word for word. The item's
//! label (`Constraint:`) stays. Nothing else changes, and an item whose excerpt holds the claim
//! is left alone.

use super::envelope::Envelope;
use crate::knowledge::similar::normalise as words;

/// Words a claim needs before a repeat of it is rewritten: `Findings` or `Decision: None` under
/// several items is a heading, not a claim made twice.
const MIN_CLAIM_WORDS: usize = 3;

/// Characters of an excerpt's line kept as a claim, cut at a word.
const MAX_CLAIM_CHARS: usize = 120;

/// `answer` with each repeated claim rewritten (see the module doc) and how many were, or `None`
/// when there is none. The count goes into the `contract.edited` event, so a log says the edit
/// was made: without it a session's reader could not tell a rewritten title from the model's own.
pub fn repeated_claims(answer: &str) -> Option<(String, usize)> {
    let env = Envelope::parse_lenient(answer);
    let (start, end) = env
        .answer
        .as_ref()
        .map_or((0, answer.len()), |a| (a.inner.start, a.inner.end));
    let mut seen: Vec<String> = Vec::new();
    // (line to replace, its new text), in answer order.
    let mut edits: Vec<(std::ops::Range<usize>, String)> = Vec::new();
    for (i, h) in env.headings.iter().enumerate() {
        if h.span.start < start || h.span.start >= end {
            continue;
        }
        let (label, claim) = split_label(&h.text);
        let key = words(claim);
        if key.split(' ').count() < MIN_CLAIM_WORDS {
            continue;
        }
        let next = env
            .headings
            .get(i + 1)
            .map_or(end, |n| n.span.start)
            .min(end);
        let excerpt = env
            .evidence
            .iter()
            .find(|e| e.label.start > h.span.start && e.label.start < next)
            .and_then(|e| e.excerpt.as_ref())
            .and_then(|x| x.block.as_ref());
        let repeated = seen.contains(&key);
        seen.push(key.clone());
        let Some(block) = excerpt.filter(|_| repeated) else {
            continue;
        };
        if words(&block.content).contains(&key) {
            continue;
        }
        let Some(own) = block.lines().into_iter().find_map(own_words) else {
            continue;
        };
        let Some(line) = heading_line(answer, h.span.start, h.level) else {
            continue;
        };
        let hashes = "#".repeat(usize::from(h.level));
        edits.push((line, format!("{hashes} {label}{own}")));
    }
    if edits.is_empty() {
        return None;
    }
    let count = edits.len();
    let mut out = answer.to_string();
    for (span, text) in edits.into_iter().rev() {
        out.replace_range(span, &text);
    }
    Some((out, count))
}

/// A title split into its label, colon and space included (`Constraint: `), and its claim.
/// A colon past the first four words is the claim's own.
fn split_label(title: &str) -> (&str, &str) {
    match title.find(':') {
        Some(at) if title[..at].split_whitespace().count() <= 4 => {
            let claim = title[at + 1..].trim_start();
            (&title[..title.len() - claim.len()], claim)
        }
        _ => ("", title),
    }
}

/// An excerpt line's words as a claim: comment and heading markers off, cut at a word within
/// [`MAX_CLAIM_CHARS`]; `None` for a line with fewer than two words.
fn own_words(line: &str) -> Option<String> {
    let text = line
        .trim()
        .trim_start_matches(['/', '#', '*', '-', '>', '!'])
        .trim();
    if text.split_whitespace().count() < 2 {
        return None;
    }
    if text.chars().count() <= MAX_CLAIM_CHARS {
        return Some(text.to_string());
    }
    let cut: String = text.chars().take(MAX_CLAIM_CHARS).collect();
    let at = cut.rfind(' ').unwrap_or(cut.len());
    Some(format!("{}…", cut[..at].trim_end()))
}

/// The span of the ATX heading line (`#### …`) that holds `at`, without its line end; `None` for a
/// heading written another way.
fn heading_line(answer: &str, at: usize, level: u8) -> Option<std::ops::Range<usize>> {
    let start = answer.get(..at)?.rfind('\n').map_or(0, |i| i + 1);
    let end = answer[start..]
        .find('\n')
        .map_or(answer.len(), |i| start + i);
    let line = &answer[start..end];
    let hashes = line.len() - line.trim_start_matches('#').len();
    (hashes == usize::from(level) && line[hashes..].starts_with(' ')).then_some(start..end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(items: &[(&str, &str)]) -> String {
        let mut body = String::new();
        for (title, excerpt) in items {
            body.push_str(&format!(
                "#### {title}\n- **Evidence**: `a.md:1`\n- **Excerpt**:\n```\n{excerpt}\n```\n\n"
            ));
        }
        format!("<thinking>\nt\n</thinking>\n\n<answer>\n{body}</answer>\n")
    }

    #[test]
    fn a_claim_repeated_over_other_lines_takes_those_lines_words() {
        let text = answer(&[
            (
                "Decision: one module confines every path to the project root",
                "# Decision: one module confines every path to the project root",
            ),
            (
                "Constraint: one module confines every path to the project root",
                "A model can be talked into asking for `../../.ssh/id_ed25519` or for a symlink.",
            ),
        ]);
        let (fixed, count) = repeated_claims(&text).expect("the second claim is a repeat");
        assert_eq!(count, 1);
        assert!(
            fixed.contains("#### Decision: one module confines every path to the project root\n"),
            "{fixed}"
        );
        assert!(
            fixed.contains(
                "#### Constraint: A model can be talked into asking for `../../.ssh/id_ed25519` \
                 or for a symlink.\n- **Evidence**"
            ),
            "{fixed}"
        );
        // Only the heading changed.
        assert_eq!(fixed.lines().count(), text.lines().count());
    }

    #[test]
    fn a_repeat_whose_excerpt_holds_the_claim_and_short_titles_are_kept() {
        let text = answer(&[
            (
                "Finding: the parser is strict YAML",
                "// The parser is strict YAML.",
            ),
            (
                "Finding: the parser is strict YAML",
                "The parser is strict YAML, always.",
            ),
            ("Findings", "fn a() {}"),
            ("Findings", "fn b() {}"),
            ("Decision: None", "x y"),
            ("Decision: None", "z w"),
        ]);
        assert_eq!(repeated_claims(&text), None);
    }

    #[test]
    fn a_comment_line_gives_its_words_and_a_long_line_is_cut_at_a_word() {
        assert_eq!(
            own_words("    //! The project root and path confinement."),
            Some("The project root and path confinement.".into())
        );
        assert_eq!(own_words("    },"), None);
        let long = format!("// {}", "word ".repeat(40));
        let own = own_words(&long).unwrap();
        assert!(
            own.ends_with("word…") && own.chars().count() <= 121,
            "{own}"
        );
        assert_eq!(split_label("Constraint: a b c"), ("Constraint: ", "a b c"));
        assert_eq!(
            split_label("The flag is read at startup: see main"),
            ("", "The flag is read at startup: see main")
        );
    }

    #[test]
    fn the_second_of_three_repeats_and_the_third_are_both_rewritten() {
        let text = answer(&[
            ("Finding: the code does not parse YAML", "let a = 1;"),
            (
                "Finding: the code does not parse YAML",
                "/// Reads the frontmatter block.",
            ),
            (
                "Finding: the code does not parse YAML",
                "fn split(text: &str) -> Parts {",
            ),
        ]);
        let (fixed, count) = repeated_claims(&text).unwrap();
        assert_eq!(count, 2);
        assert!(
            fixed.contains("#### Finding: the code does not parse YAML\n"),
            "{fixed}"
        );
        assert!(
            fixed.contains("#### Finding: Reads the frontmatter block.\n"),
            "{fixed}"
        );
        assert!(
            fixed.contains("#### Finding: fn split(text: &str) -> Parts {\n"),
            "{fixed}"
        );
    }
}
