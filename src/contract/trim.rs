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
//!
//! A locator's items are its list entries: under `named_paths: exist`, an entry whose path does
//! not exist after the repairs goes the same way. The 1.5B thoughts-locator put an invented
//! `thoughts/shared/plans/…-switchboard-pipeline.md` on its "Suggested for analysis" line beside
//! a real record, and sent it back through both repairs: the hop was BLOCKED and the real record
//! was lost with it. A list line goes whole; a path in running text goes with the `, ` that
//! joined it to the next (or the line, when it was the line's only path).

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
    Rule::ExcerptCitation,
    Rule::ExcerptNoWords,
    Rule::SignalMissingEvidence,
    // An item citing only a record's frontmatter (Qwen2.5-Coder-1.5B's codebase-analyzer, its
    // "Finding: The runtime has read …" cited lines 1-4 through two repairs).
    Rule::SignalFrontmatterOnly,
    Rule::SignalStatedElsewhere,
];

/// `answer` without the items (`#`-headed sections inside `<answer>`) that `problems` (found on
/// this very text) fall in, nor the listed paths that do not exist ([`path_cuts`]), with a
/// closing line saying how many went, and how many went; `None` when a problem is not about an
/// item's evidence or a listed path, lies outside every item, or when nothing would be left: no
/// Evidence item in an answer that had some, no listed path in one that had none.
pub fn drop_items(answer: &str, problems: &[Problem]) -> Option<(String, usize)> {
    let envelope = super::Envelope::parse_lenient(answer);
    let inner = envelope.answer.as_ref()?.inner.clone();
    let mut headings: Vec<_> = envelope
        .headings
        .iter()
        .filter(|h| inner.start <= h.span.start && h.span.end <= inner.end)
        .collect();
    headings.sort_by_key(|h| h.span.start);
    let mut items: Vec<Range<usize>> = Vec::new();
    let mut missing: Vec<Range<usize>> = Vec::new();
    for p in problems {
        let span = p.span.clone().filter(|s| inner.start <= s.start)?;
        if p.code == Rule::NamedPathMissing.code() {
            let sound = span.end <= inner.end
                && answer.is_char_boundary(span.start)
                && answer.is_char_boundary(span.end);
            if !sound {
                return None;
            }
            if !missing.contains(&span) {
                missing.push(span);
            }
            continue;
        }
        if !DROPPABLE.iter().any(|r| r.code() == p.code) {
            return None;
        }
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
        if !items.contains(&item) {
            items.push(item);
        }
    }
    // A path inside an item that goes anyway is not counted twice.
    let within = |r: &Range<usize>, o: &Range<usize>| o.start <= r.start && r.end <= o.end;
    missing.retain(|m| !items.iter().any(|i| within(m, i)));
    let all = items.clone();
    items.retain(|r| !all.iter().any(|o| o != r && within(r, o)));
    let n = items.len() + missing.len();
    if n == 0 {
        return None;
    }
    let paths: Vec<Range<usize>> = envelope.paths.iter().map(|p| p.span.clone()).collect();
    let mut cuts = items;
    cuts.extend(path_cuts(answer, &inner, &paths, &missing));
    // Cuts that meet or overlap are made as one.
    cuts.sort_by_key(|r| r.start);
    let mut merged: Vec<Range<usize>> = Vec::with_capacity(cuts.len());
    for r in cuts {
        match merged.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => merged.push(r),
        }
    }
    let gone = |at: usize| merged.iter().any(|d| d.contains(&at));
    let kept_evidence = envelope
        .evidence
        .iter()
        .filter(|e| !gone(e.label.start))
        .count();
    let kept_paths = paths
        .iter()
        .filter(|p| inner.start <= p.start && p.end <= inner.end && !gone(p.start))
        .count();
    // An answer made of Evidence items keeps one at least (a listed path in its prose is no
    // claim that verifies); a list of paths keeps one path.
    let holds = if envelope.evidence.is_empty() {
        kept_paths > 0
    } else {
        kept_evidence > 0
    };
    if !holds {
        return None;
    }
    let mut out = answer.to_string();
    for range in merged.into_iter().rev() {
        if !out.is_char_boundary(range.start) || !out.is_char_boundary(range.end) {
            return None;
        }
        out.replace_range(range, "");
    }
    // The note goes last inside `<answer>`, after the last item kept.
    let close = out.rfind("</answer>")?;
    let end = out[..close].trim_end().len();
    out.replace_range(
        end..close,
        &format!(
            "\n\n_The runtime took out {n} item(s) whose evidence did not verify, or whose path does \
             not exist, after the repairs._\n"
        ),
    );
    Some((out, n))
}

/// What joins two paths listed in running text.
const JOINTS: [&str; 3] = [", ", " and ", " or "];

/// The text to cut for the listed paths that do not exist (`missing`, code spans inside
/// `<answer>`'s `inner`), line by line. A line goes whole (never past `inner`) when it is a list
/// entry (`- `, `* `, `+ `, `1. `) or every path on it is missing. Otherwise each run of missing
/// paths joined by [`JOINTS`] goes with one joint: the one before it when a kept path precedes it,
/// else the one after it (`a, x, y, b` → `a, b`; `x, y, b` → `b`), so the line still reads as a
/// list.
fn path_cuts(
    answer: &str,
    inner: &Range<usize>,
    paths: &[Range<usize>],
    missing: &[Range<usize>],
) -> Vec<Range<usize>> {
    let line_of = |span: &Range<usize>| {
        let start = answer[..span.start]
            .rfind('\n')
            .map_or(0, |i| i + 1)
            .max(inner.start);
        let stop = answer[span.end..inner.end]
            .find('\n')
            .map_or(inner.end, |i| span.end + i + 1);
        start..stop
    };
    let mut lines: Vec<Range<usize>> = missing.iter().map(line_of).collect();
    lines.sort_by_key(|l| l.start);
    lines.dedup();
    let mut cuts = Vec::new();
    for line in lines {
        let on_line = |s: &&Range<usize>| line.start <= s.start && s.end <= line.end;
        let mut spans: Vec<Range<usize>> = paths
            .iter()
            .chain(missing)
            .filter(on_line)
            .cloned()
            .collect();
        spans.sort_by_key(|s| s.start);
        spans.dedup();
        let gone: Vec<bool> = spans.iter().map(|s| missing.contains(s)).collect();
        let body = answer[line.clone()].trim_start();
        let listed = ["- ", "* ", "+ "].iter().any(|m| body.starts_with(m)) || {
            let digits = body.len() - body.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            digits > 0 && body[digits..].starts_with(". ")
        };
        if listed || gone.iter().all(|g| *g) {
            cuts.push(line);
            continue;
        }
        let joined = |a: &Range<usize>, b: &Range<usize>| {
            a.end <= b.start && JOINTS.contains(&&answer[a.end..b.start])
        };
        let mut i = 0;
        while i < spans.len() {
            if !gone[i] {
                i += 1;
                continue;
            }
            let mut j = i;
            while j + 1 < spans.len() && gone[j + 1] && joined(&spans[j], &spans[j + 1]) {
                j += 1;
            }
            let cut = if i > 0 && !gone[i - 1] && joined(&spans[i - 1], &spans[i]) {
                spans[i - 1].end..spans[j].end
            } else if j + 1 < spans.len() && joined(&spans[j], &spans[j + 1]) {
                spans[i].start..spans[j + 1].start
            } else {
                spans[i].start..spans[j].end
            };
            cuts.push(cut);
            i = j + 1;
        }
    }
    cuts
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

        // Every item failing: nothing is left to hand up, so nothing is dropped, even with a
        // path named in the prose beside it.
        let answer = format!("<answer>\n{bad}</answer>\n");
        let problems = verify_evidence(&answer, &ctx);
        assert_eq!(drop_items(&answer, &problems), None);
        let answer = format!("<answer>\nSee `notes/d.md`.\n\n{bad}</answer>\n");
        let problems = verify_evidence(&answer, &ctx);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(drop_items(&answer, &problems), None);
        // A problem that is not about evidence (here the envelope's) is never dropped around.
        let mut other = Rule::MessageIdMismatch.problem(0..0, "m");
        other.span = Some(answer.find("####").expect("heading")..answer.len());
        assert_eq!(drop_items(&answer, &[other]), None);
    }

    /// An item whose evidence is only a record's frontmatter goes like one that does not verify.
    #[test]
    fn an_item_citing_only_frontmatter_goes() {
        let good = item("Decision: serde-saphyr", "d.md:6-6", "We use serde-saphyr.");
        let meta = item("Finding: The runtime has read d.md", "d.md:1-3", "---");
        let answer = format!("<answer>\n{good}{meta}</answer>\n");
        let at = answer.find("#### Finding").expect("heading");
        let problem = Rule::SignalFrontmatterOnly.problem(at..at + 12, "frontmatter only");
        let (kept, n) = drop_items(&answer, &[problem]).expect("trimmed");
        assert_eq!(n, 1);
        assert!(kept.contains(&good) && !kept.contains("has read"), "{kept}");
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

    #[test]
    fn listed_paths_that_do_not_exist_go_and_real_ones_stay() {
        use crate::contract::spec::{Contract, NamedPaths};
        let dir = tempfile::tempdir().expect("tempdir");
        let decisions = dir.path().join("thoughts/shared/decisions");
        std::fs::create_dir_all(&decisions).expect("mkdir");
        std::fs::write(decisions.join("2026-11-25-yaml.md"), "# YAML\n").expect("write");
        std::fs::write(decisions.join("2026-11-26-retry.md"), "# Retry\n").expect("write");
        let project = Project::open(dir.path()).expect("project");
        let files = FileCache::new();
        let ctx = CheckContext::new(&project, &files);
        let mut contract = Contract::builtin("envelope").expect("builtin");
        contract.named_paths = NamedPaths::Exist;
        let problems = |answer: &str| {
            crate::contract::check(answer, &contract, &ctx)
                .violations
                .into_iter()
                .filter(|p| p.code == Rule::NamedPathMissing.code())
                .collect::<Vec<_>>()
        };
        let real = "thoughts/shared/decisions/2026-11-25-yaml.md";
        let other = "thoughts/shared/decisions/2026-11-26-retry.md";
        let made_up = "thoughts/shared/plans/2026-11-17-pipeline.md";
        let answer = format!(
            "<answer>\n### Decisions\n- `{real}` — YAML\n- `{made_up}` — Pipeline\n\n\
             Suggested for analysis: `{real}`, `{made_up}`, `{other}`.\n\n\
             Also `{made_up}` and `{other}`.\n</answer>\n"
        );
        let found = problems(&answer);
        assert_eq!(found.len(), 3, "{found:?}");
        let (kept, n) = drop_items(&answer, &found).expect("trimmed");
        assert_eq!(n, 3, "{kept}");
        assert!(!kept.contains(made_up), "{kept}");
        assert!(
            kept.contains(&format!("- `{real}` — YAML\n\n"))
                && kept.contains(&format!("analysis: `{real}`, `{other}`."))
                && kept.contains(&format!("Also `{other}`.")),
            "{kept}"
        );
        assert!(kept.contains("took out 3 item(s)"), "{kept}");
        assert!(problems(&kept).is_empty(), "{kept}");

        // Two missing paths side by side, a character of several bytes after them: the `, `
        // between them goes once, and nothing else.
        let second = "thoughts/shared/plans/2026-11-18-other.md";
        let answer = format!(
            "<answer>\nSuggested: `{real}`, `{made_up}`, `{second}`…\n\n\
             Also `{real}` and `{made_up}` and `{second}`.\n</answer>\n"
        );
        let found = problems(&answer);
        assert_eq!(found.len(), 4, "{found:?}");
        let (kept, n) = drop_items(&answer, &found).expect("trimmed");
        assert_eq!(n, 4, "{kept}");
        assert!(
            kept.contains(&format!("Suggested: `{real}`…\n"))
                && kept.contains(&format!("Also `{real}`.\n")),
            "{kept}"
        );
        // A missing path on the line that opens `<answer>`: the tag stays.
        let answer = format!("<answer>Suggested: `{made_up}`.\n- `{real}`\n</answer>\n");
        let (kept, _) = drop_items(&answer, &problems(&answer)).expect("trimmed");
        assert!(
            kept.starts_with("<answer>") && kept.contains(real),
            "{kept}"
        );
        assert!(problems(&kept).is_empty(), "{kept}");

        // A line whose one path goes, goes whole.
        let answer = format!("<answer>\n- `{real}`\n\nSuggested: `{made_up}`.\n</answer>\n");
        let (kept, n) = drop_items(&answer, &problems(&answer)).expect("trimmed");
        assert_eq!(n, 1);
        assert!(!kept.contains("Suggested") && kept.contains(real), "{kept}");
        // With no real path left there is nothing to hand up.
        let answer = format!("<answer>\n- `{made_up}`\n</answer>\n");
        assert_eq!(drop_items(&answer, &problems(&answer)), None);
    }
}
