//! `search_first: FOLDER`: the `grep` calls the runtime makes for an agent before its first
//! turn, one per content word of its task (at most [`MAX_WORDS`]), over that folder.
//!
//! A locator's job is to pick documents out of search results; a small model asked to search
//! first copies its prompt's answer template instead (Qwen2.5-Coder-1.5B: a codebase-locator
//! wrote the same invented list three times over its reminders), or searches with patterns it
//! copied from the prompt that match nothing. So the runtime makes the first searches, as real
//! `grep` calls (grants, permission, confinement, `tool.call`/`tool.result` with ids
//! `search_first_N`), and the matches go with the task, like [`super::read_first`]'s reads.

use crate::agent::Agent;
use crate::markdown::fence_for;
use crate::model::{Message, ToolCall};
use crate::project::Project;

/// Words searched at most.
pub const MAX_WORDS: usize = 3;
/// Result lines of each search kept in the task message.
pub const MAX_LINES: usize = 15;
/// Call ids of these searches are `search_first_1`, `search_first_2`, …
pub const CALL_ID_PREFIX: &str = "search_first_";

/// Words of a question that say nothing about its subject.
const FILLER: &[&str] = &[
    "about",
    "after",
    "again",
    "also",
    "correlation",
    "could",
    "decide",
    "decided",
    "decision",
    "decisions",
    "does",
    "document",
    "documents",
    "file",
    "files",
    "find",
    "from",
    "have",
    "into",
    "list",
    "make",
    "made",
    "more",
    "should",
    "that",
    "their",
    "them",
    "there",
    "these",
    "they",
    "this",
    "those",
    "what",
    "when",
    "where",
    "which",
    "while",
    "will",
    "with",
    "would",
    "your",
];

/// The content words of `task`: four letters or more, no digits, not [`FILLER`], lowercase,
/// each once, in order, at most [`MAX_WORDS`].
pub fn words(task: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in task.split(|c: char| !c.is_alphanumeric() && c != '-' && c != '_') {
        let word = word.trim_matches(['-', '_']).to_lowercase();
        let letters = word
            .chars()
            .all(|c| c.is_alphabetic() || c == '-' || c == '_');
        if word.chars().count() >= 4
            && letters
            && !FILLER.contains(&word.as_str())
            && !out.contains(&word)
        {
            out.push(word);
            if out.len() == MAX_WORDS {
                break;
            }
        }
    }
    out
}

/// The `grep` calls to make before `agent`'s first turn on `task` (none unless it declares
/// `search_first:` and is granted `grep`).
pub fn calls(agent: &Agent, task: &str, project: &Project) -> Vec<ToolCall> {
    let Some(folder) = &agent.search_first else {
        return Vec::new();
    };
    if !agent.tools.allows("grep") || project.resolve_visible(folder).is_err() {
        return Vec::new();
    }
    words(task)
        .into_iter()
        .enumerate()
        .map(|(i, word)| ToolCall {
            id: format!("{CALL_ID_PREFIX}{}", i + 1),
            name: "grep".to_string(),
            arguments: serde_json::json!({"pattern": format!("(?i){}", regex::escape(&word)), "path": folder}),
        })
        .collect()
}

/// `task` followed by the first [`MAX_LINES`] lines of each search's result.
pub fn with_results(task: &str, calls: &[ToolCall], results: &[Message]) -> String {
    let mut out = task.to_string();
    for (call, result) in calls.iter().zip(results) {
        if result.is_error {
            continue;
        }
        let pattern = call.arguments["pattern"].as_str().unwrap_or_default();
        let lines: Vec<&str> = result.content.lines().collect();
        let mut shown = lines[..lines.len().min(MAX_LINES)].join("\n");
        if lines.len() > MAX_LINES {
            shown.push_str(&format!("\n({} more lines)", lines.len() - MAX_LINES));
        }
        let fence = fence_for(&shown);
        out.push_str(&format!(
            "\n\nThe runtime searched with `grep` `{pattern}` for you (`path:line:text`):\n\
             {fence}\n{shown}\n{fence}"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_words_of_a_question_are_its_subject() {
        assert_eq!(
            words("What did we decide about the YAML parser, and why? Correlation: 01a2-bc"),
            vec!["yaml", "parser"]
        );
        assert_eq!(
            words("Where is the retry policy for model requests decided? retry"),
            vec!["retry", "policy", "model"]
        );
        assert!(words("Why? How?").is_empty());
    }

    #[test]
    fn each_result_is_cut_to_its_first_lines() {
        let calls = vec![ToolCall {
            id: "search_first_1".into(),
            name: "grep".into(),
            arguments: serde_json::json!({"pattern": "(?i)yaml", "path": "thoughts"}),
        }];
        let many: Vec<String> = (1..=20).map(|i| format!("a.md:{i}:yaml")).collect();
        let results = vec![Message::tool("search_first_1", many.join("\n"), false)];
        let text = with_results("Find YAML.", &calls, &results);
        assert!(text.starts_with("Find YAML.\n\nThe runtime searched with `grep` `(?i)yaml`"));
        assert!(text.contains("a.md:15:yaml\n(5 more lines)"), "{text}");
        assert!(!text.contains("a.md:16:"), "{text}");
        let failed = vec![Message::tool("search_first_1", "bad", true)];
        assert_eq!(with_results("t", &calls, &failed), "t");
    }
}
