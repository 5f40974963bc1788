//! The validator role: reviews a worker's answer (a task the runtime built with
//! [`VALIDATION_MARK`]) and answers with a verdict JSON. Offline it checks one thing it can know
//! for certain: that every Evidence item cites a document the worker's task named (when the task
//! names any), because an analyzer quoting some other file has drifted from its task. An empty
//! answer is rejected; anything else is accepted.

use regex::Regex;
use std::sync::LazyLock;

use super::History;
use crate::model::VALIDATION_MARK;

/// Whether the task is a review the runtime asked for.
pub fn applies(history: &History) -> bool {
    history.task.contains(VALIDATION_MARK)
}

static CITED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"`([^`\s:]+):\d+(?:-\d+)?`").unwrap_or_else(|_| unreachable!()));
pub(crate) static NAMED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"[A-Za-z0-9_][A-Za-z0-9_./-]*/[A-Za-z0-9_.-]+\.[A-Za-z0-9]+")
        .unwrap_or_else(|_| unreachable!())
});

/// The verdict JSON for the review in `history`'s task.
pub fn verdict(history: &History) -> String {
    let (task, answer) = history
        .task
        .split_once(VALIDATION_MARK)
        .unwrap_or((history.task, ""));
    if answer.trim().is_empty() {
        return serde_json::json!({"verdict": "reject", "finding": 0, "claim": "",
            "feedback": "the answer is empty"})
        .to_string();
    }
    let named: Vec<&str> = NAMED.find_iter(task).map(|m| m.as_str()).collect();
    // Each Evidence line is one finding, numbered from 1 as the runtime's note numbers them.
    let items: Vec<Vec<&str>> = answer
        .lines()
        .filter(|l| l.contains("Evidence"))
        .map(|l| {
            CITED
                .captures_iter(l)
                .filter_map(|c| c.get(1))
                .map(|m| m.as_str())
                .collect()
        })
        .collect();
    let cited: Vec<&str> = items.iter().flatten().copied().collect();
    if !named.is_empty() {
        let stray: Vec<&str> = cited
            .iter()
            .filter(|c| !named.contains(c))
            .copied()
            .collect();
        let first = items
            .iter()
            .position(|item| item.iter().any(|c| !named.contains(c)));
        if let Some(i) = first {
            return serde_json::json!({
                "verdict": "revise",
                "finding": i + 1,
                "claim": stray[0],
                "feedback": format!(
                    "Evidence must come from the document(s) your task names ({}); these are \
                     other files: {}. Quote the named document instead.",
                    named.join(", "),
                    stray.join(", ")
                ),
            })
            .to_string();
        }
    }
    serde_json::json!({
        "verdict": "accept",
        "finding": 0,
        "claim": "",
        "feedback": format!("{} Evidence item(s), each from a document the task names", cited.len()),
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Message;

    fn review(task: &str, answer: &str) -> serde_json::Value {
        let messages = vec![Message::user(format!("{task}{VALIDATION_MARK}{answer}"))];
        let h = History::new(&messages);
        assert!(applies(&h));
        serde_json::from_str(&verdict(&h)).unwrap()
    }

    #[test]
    fn evidence_from_the_named_document_is_accepted_and_from_another_revised() {
        let task = "Analyze thoughts/shared/decisions/a.md for the event log";
        let good = "<answer>\n- x\n  **Evidence**: `thoughts/shared/decisions/a.md:3-4`\n</answer>";
        assert_eq!(review(task, good)["verdict"], "accept");
        let bad = "<answer>\n- x\n  **Evidence**: `thoughts/shared/other.md:3`\n</answer>";
        let v = review(task, bad);
        assert_eq!(v["verdict"], "revise");
        assert_eq!(
            (v["finding"].as_u64(), v["claim"].as_str()),
            (Some(1), Some("thoughts/shared/other.md"))
        );
        assert!(v["feedback"]
            .as_str()
            .unwrap()
            .contains("thoughts/shared/other.md"));
        assert_eq!(review(task, "  ")["verdict"], "reject");
        assert_eq!(review("no paths here", bad)["verdict"], "accept");
    }
}
