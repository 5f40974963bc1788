//! The last resort of an envelope answer whose repairs are spent, for a contract that declares
//! `on_violation: drop_items`: the items whose evidence still does not verify leave the answer,
//! and what is left goes up if it holds the contract whole.
//!
//! Qwen2.5-Coder-1.5B's thoughts-analyzer fixed two of its three items at the first repair and
//! sent the third, a 14-line paragraph it cited as six lines, back unchanged through the second:
//! the hop was BLOCKED and the two verified items were lost with it. The caller is better served
//! by the claims that verify than by none; a claim that does not verify never goes up. Only an
//! item under its own heading inside `<answer>` can go, only for evidence and excerpt problems,
//! and the answer says in its last line how many items the runtime took out, so the caller
//! knows the answer is not all the agent wrote.

use std::ops::Range;

use super::rule::Rule;
use crate::problem::Problem;

/// The problems an item can be dropped for: its evidence, not the envelope around it.
const DROPPABLE: &[Rule] = &[
    Rule::ReferenceFormat,
    Rule::PathOutsideRoot,
    Rule::FileMissing,
    Rule::FileUnreadable,
    Rule::RangePastEnd,
    Rule::MissingExcerpt,
    Rule::ExcerptOrphan,
    Rule::ExcerptNotFenced,
    Rule::ExcerptEmpty,
    Rule::ExcerptTooLong,
    Rule::ExcerptMismatch,
    Rule::SignalMissingEvidence,
    Rule::SignalStatedElsewhere,
];

/// `answer` without the items (`#`-headed sections inside `<answer>`) that `problems` (found on
/// this very text) fall in, with a closing line saying how many went, and how many went; `None`
/// when a problem is not about an item's evidence, lies outside every item, or when no item
/// with evidence would be left.
pub fn drop_items(answer: &str, problems: &[Problem]) -> Option<(String, usize)> {
    let envelope = super::Envelope::parse_lenient(answer);
    let inner = envelope.answer.as_ref()?.inner.clone();
    let mut headings: Vec<_> = envelope
        .headings
        .iter()
        .filter(|h| inner.start <= h.span.start && h.span.end <= inner.end)
        .collect();
    headings.sort_by_key(|h| h.span.start);
    let mut dropped: Vec<Range<usize>> = Vec::new();
    for p in problems {
        if !DROPPABLE.iter().any(|r| r.code() == p.code) {
            return None;
        }
        let span = p.span.clone().filter(|s| inner.start <= s.start)?;
        let at = headings.iter().rposition(|h| h.span.start <= span.start)?;
        let level = headings[at].level;
        let end = headings[at + 1..]
            .iter()
            .find(|h| h.level <= level)
            .map_or(inner.end, |h| h.span.start);
        if span.end > end {
            return None;
        }
        let item = headings[at].span.start..end;
        if !dropped.contains(&item) {
            dropped.push(item);
        }
    }
    if dropped.is_empty() {
        return None;
    }
    let kept_evidence = envelope
        .evidence
        .iter()
        .filter(|e| !dropped.iter().any(|d| d.contains(&e.label.start)))
        .count();
    if kept_evidence == 0 {
        return None;
    }
    dropped.sort_by_key(|r| std::cmp::Reverse(r.start));
    let mut out = answer.to_string();
    let n = dropped.len();
    for range in dropped {
        out.replace_range(range, "");
    }
    // The note goes last inside `<answer>`, after the last item kept.
    let close = out.rfind("</answer>")?;
    let end = out[..close].trim_end().len();
    out.replace_range(
        end..close,
        &format!(
            "\n\n_The runtime took out {n} item(s) whose evidence did not verify after the repairs._\n"
        ),
    );
    Some((out, n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::{verify_evidence, CheckContext, FileCache};
    use crate::project::Project;

    fn item(title: &str, reference: &str, excerpt: &str) -> String {
        format!("#### {title}\n- **Evidence**: `{reference}`\n- **Excerpt**:\n  ```\n  {excerpt}\n  ```\n\n")
    }

    #[test]
    fn items_whose_evidence_fails_go_and_the_answer_says_so() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            dir.path().join("d.md"),
            "# D\nWe use serde-saphyr.\nWe drop serde_yaml.\nThe splitter keeps offsets.\n",
        )
        .expect("write");
        let project = Project::open(dir.path()).expect("project");
        let files = FileCache::new();
        let ctx = CheckContext::new(&project, &files);
        let good = item("Decision: serde-saphyr", "d.md:2-2", "We use serde-saphyr.");
        let bad = item(
            "Constraint: offsets",
            "d.md:3-3",
            "The splitter MUST keep every offset.",
        );
        let last = item("Decision: no serde_yaml", "d.md:3-3", "We drop serde_yaml.");
        let answer =
            format!("<thinking>\nt\n</thinking>\n\n<answer>\n{good}{bad}{last}</answer>\n");
        let problems = verify_evidence(&answer, &ctx);
        assert_eq!(problems.len(), 1, "{problems:?}");
        let (kept, n) = drop_items(&answer, &problems).expect("trimmed");
        assert_eq!(n, 1);
        assert!(!kept.contains("Constraint: offsets"), "{kept}");
        assert!(
            kept.contains(&good) && kept.contains("Decision: no serde_yaml"),
            "{kept}"
        );
        assert!(
            kept.contains("took out 1 item(s)") && kept.trim_end().ends_with("</answer>"),
            "{kept}"
        );
        assert!(verify_evidence(&kept, &ctx).is_empty(), "{kept}");

        // Every item failing: nothing is left to hand up, so nothing is dropped.
        let answer = format!("<answer>\n{bad}</answer>\n");
        let problems = verify_evidence(&answer, &ctx);
        assert_eq!(drop_items(&answer, &problems), None);
        // A problem that is not about evidence (here the envelope's) is never dropped around.
        let mut other = Rule::MessageIdMismatch.problem(0..0, "m");
        other.span = Some(answer.find("####").expect("heading")..answer.len());
        assert_eq!(drop_items(&answer, &[other]), None);
    }

    #[test]
    fn evidence_outside_any_heading_is_not_dropped() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("d.md"), "one\ntwo\n").expect("write");
        let project = Project::open(dir.path()).expect("project");
        let files = FileCache::new();
        let ctx = CheckContext::new(&project, &files);
        let answer =
            "<answer>\n- **Evidence**: `d.md:1-1`\n- **Excerpt**:\n  ```\n  three\n  ```\n</answer>\n";
        let problems = verify_evidence(answer, &ctx);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(drop_items(answer, &problems), None);
    }
}
