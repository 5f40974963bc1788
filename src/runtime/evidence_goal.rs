//! `evidence_goal: N`: an accepted answer with fewer than N verified Evidence items, but at least
//! one, is asked once for more, shown lines of the file it cites that it has not cited.
//!
//! Why: Qwen2.5-Coder-1.5B, as thoughts-analyzer, read a whole decision record and reported one
//! Decision with its Evidence and `Constraint: No constraints in this document.` for the rest;
//! the researcher's report then held one verified item, and `eval` asks for three. A contract
//! rule would refuse such an answer and, after its repairs, lose the one good item too; the ask
//! is made once, after the answer is accepted, and the hop keeps whichever of the two answers
//! holds more verified items ([`super::ask_once`]). The lines offered are the document's own, so a
//! model that copies one quotes it exactly.

use crate::contract::{verified_items, CheckContext, FileCache};
use crate::project::Project;

/// The words of the ask before its goal: [`asked_goal`] reads the goal back after them.
const GOAL_WORDS: &str = "this agent's answers should hold ";

/// Lines offered at most, beyond the number of items missing.
const SPARE_OFFERS: usize = 2;
/// A line shorter than this (trimmed) says too little to be an item of its own.
const MIN_LINE_CHARS: usize = 24;

/// The verified Evidence items of `answer`.
pub fn verified(answer: &str, project: &Project) -> usize {
    let files = FileCache::new();
    verified_items(answer, &CheckContext::new(project, &files)).len()
}

/// The ask, and how many items `answer` verifies: `None` when it meets `goal`, verifies none
/// (nothing to build on: the contract judges such an answer), or its cited file has no
/// uncited line left to offer. `headings` are the contract's signal names (`Decision`, …),
/// used for the example item.
pub fn ask(
    answer: &str,
    goal: u32,
    headings: &[String],
    project: &Project,
) -> Option<(usize, String)> {
    let files = FileCache::new();
    let ctx = CheckContext::new(project, &files);
    let items = verified_items(answer, &ctx);
    let have = items.len();
    if have == 0 || have >= goal as usize {
        return None;
    }
    let path = items.first()?.references.first()?.path.clone();
    let cited: Vec<(usize, usize)> = items
        .iter()
        .flat_map(|i| i.references.iter())
        .filter(|r| r.path == path)
        .map(|r| (r.first, r.last))
        .collect();
    let file = files.get(project, &path).ok()?;
    let body_from = file.frontmatter_end().map_or(1, |end| end + 1);
    let missing = goal as usize - have;
    let mut in_fence = false;
    let offers: Vec<(usize, String)> = (body_from..=file.line_count())
        .filter_map(|n| {
            let line = file.line(n)?;
            let t = line.trim();
            if t.starts_with("```") {
                in_fence = !in_fence;
                return None;
            }
            let fit = !in_fence
                && t.chars().count() >= MIN_LINE_CHARS
                && !t.starts_with('#')
                && !t.starts_with('|')
                && !cited.iter().any(|&(a, b)| a <= n && n <= b);
            fit.then(|| (n, line.trim_end().to_string()))
        })
        .take(missing + SPARE_OFFERS)
        .collect();
    let (first_n, first_line) = offers.first()?.clone();
    let listed: Vec<String> = offers
        .iter()
        .map(|(n, line)| format!("- `{path}:{n}`: {}", line.trim()))
        .collect();
    let heading = headings.last().map_or("Finding", String::as_str);
    let names = if headings.is_empty() {
        "a `####` heading".to_string()
    } else {
        headings
            .iter()
            .map(|h| format!("`#### {h}:`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let title: String = first_line
        .trim()
        .trim_start_matches(['-', '*', ' '])
        .chars()
        .take(70)
        .collect();
    let note = format!(
        "[runtime] Your answer is accepted with {have} verified Evidence item(s); {GOAL_WORDS}\
         {goal}. These lines of `{path}` are not cited yet:\n\n{}\n\nSend \
         your whole answer again with {missing} more item(s) from them (an item that says \
         `None` may become one): each under {names} with a title in your words, then its \
         Evidence and Excerpt, the line copied exactly. For example:\n\n#### {heading}: \
         {title}\n- **Evidence**: `{path}:{first_n}`\n- **Excerpt**:\n  ```\n  {}\n  ```\n\n\
         If none of these lines states a decision, constraint or spec, send the same answer \
         again.",
        listed.join("\n"),
        first_line.trim_end()
    );
    Some((have, note))
}

/// The goal of the last ask in `text` (a turn's message), `None` when it holds none. The `local`
/// provider makes the answer to the ask hold that many Evidence items under its grammar
/// (`model::local::grammar`): Qwen2.5-Coder-1.5B, asked for one more item and shown the lines,
/// sent its two-item answer back unchanged.
pub fn asked_goal(text: &str) -> Option<u32> {
    if !text.starts_with("[runtime] ") {
        return None;
    }
    let at = text.rfind(GOAL_WORDS)? + GOAL_WORDS.len();
    let digits: String = text[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok().filter(|&n| n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "---\ndate: 2026-11-02\nstatus: accepted\n---\n# Parser\n\n## Decision\nWe parse YAML with serde-saphyr behind our own splitter.\n\n## Why\n- It never panics on malformed input from users.\n- It reports the line and column of every error.\n- ok\n";

    fn answer(line: usize, text: &str) -> String {
        format!(
            "### Decision: serde-saphyr\n- **Evidence**: `d.md:{line}`\n- **Excerpt**:\n  ```\n  {text}\n  ```\n"
        )
    }

    #[test]
    fn a_short_answer_is_shown_uncited_body_lines_and_a_richer_one_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("d.md"), DOC).unwrap();
        let p = Project::open(dir.path()).unwrap();
        let one = answer(
            8,
            "We parse YAML with serde-saphyr behind our own splitter.",
        );
        let heads = vec!["Decision".to_string(), "Spec".to_string()];
        let (have, note) = ask(&one, 3, &heads, &p).expect("asked");
        assert_eq!(have, 1);
        // The goal reads back from the note, and from nothing else.
        assert_eq!(asked_goal(&note), Some(3));
        assert_eq!(
            asked_goal("What did we decide about prompt templates?"),
            None
        );
        // Body lines only (no frontmatter, headings or the cited line), short lines left out.
        assert!(note.contains("`d.md:11`: - It never panics"), "{note}");
        assert!(note.contains("`d.md:12`: - It reports"), "{note}");
        assert!(!note.contains("d.md:8`:"), "{note}");
        assert!(!note.contains("d.md:2`"), "{note}");
        assert!(!note.contains("d.md:13"), "{note}");
        assert!(note.contains("#### Spec: It never panics"), "{note}");
        // The example it shows verifies as written.
        let example = &note[note.find("#### Spec:").unwrap()..note.find("\n\nIf none").unwrap()];
        assert_eq!(verified(example, &p), 1, "{example}");
        // Met, or nothing verified: no ask.
        let three = format!(
            "{one}{}{}",
            answer(11, "- It never panics on malformed input from users."),
            answer(12, "- It reports the line and column of every error.")
        );
        assert!(ask(&three, 3, &heads, &p).is_none());
        assert!(ask(&answer(8, "made up"), 3, &heads, &p).is_none());
        // The next answer goes up only if it verifies more.
        let kept = super::super::ask_once::Asked {
            test: super::super::ask_once::Test::Richer { verified: 1 },
            answer: one.clone(),
            conformant: Some(true),
        };
        assert!(kept.won_by(&three, &p));
        assert!(!kept.won_by(&one, &p));
        assert!(!kept.won_by("no evidence", &p));
    }
}
