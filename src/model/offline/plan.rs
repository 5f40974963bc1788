//! The offline model as an analyst: turns a request into a small JSON plan (intent, request
//! type, track, required sources, at most one question) by keyword rules, so an agent with a
//! plan contract (agent/analyst.md) runs with no network. It plays this role only when the
//! agent owes a `format: json` contract whose schema describes a plan (`request_type` and
//! `required_sources` properties); any other JSON contract is beyond what it can fill in.

use super::Turn;
use crate::model::ANSWER_MARK;
use crate::model::{ModelRequest, Role as MsgRole};
use serde_json::{json, Value};

/// Whether `request` owes a plan this role can write.
pub fn applies(request: &ModelRequest) -> bool {
    super::json_contract_properties(request)
        .is_some_and(|p| p.get("request_type").is_some() && p.get("required_sources").is_some())
}

/// Request types, tried in order; the first whose words occur in the request wins.
const TYPES: &[(&str, &[&str])] = &[
    (
        "CASUAL",
        &["hello", "hi there", "thanks", "thank you", "good morning"],
    ),
    (
        "TROUBLESHOOTING",
        &[
            "error",
            "fails",
            "failing",
            "crash",
            "broken",
            "bug",
            "panic",
            "not working",
        ],
    ),
    (
        "STATUS_METRIC",
        &[
            "rate",
            "how many",
            "count",
            "percentage",
            "metric",
            "number of",
            "velocity",
        ],
    ),
    (
        "STATUS_LIST",
        &[
            "list all",
            "list the",
            "which tickets",
            "open issues",
            "show all",
        ],
    ),
    ("STATUS_SUMMARY", &["status", "progress", "summary of"]),
    (
        "DESIGN_ARCH",
        &["design", "architecture", "structure", "module", "component"],
    ),
    (
        "HOWTO_POLICY",
        &[
            "how do i",
            "how to",
            "how should",
            "policy",
            "allowed",
            "convention",
        ],
    ),
    (
        "DATA_DEFINITION",
        &["definition", "define", "what does", "meaning of", "field"],
    ),
];

/// Sources each request type starts from (the plan schema may forbid some of them).
fn sources_for(request_type: &str) -> &'static [&'static str] {
    match request_type {
        "STATUS_METRIC" | "STATUS_SUMMARY" | "STATUS_LIST" => &["db"],
        "HOWTO_POLICY" | "DATA_DEFINITION" => &["policy", "doc"],
        "DESIGN_ARCH" => &["doc", "code"],
        "TROUBLESHOOTING" => &["code", "doc"],
        "CASUAL" => &[],
        _ => &["doc", "code"],
    }
}

/// Words that pin a status request to a period; without one the analyst asks which.
const PERIOD_WORDS: &[&str] = &[
    "sprint ",
    "week",
    "month",
    "quarter",
    "today",
    "yesterday",
    "release",
    "since",
    "20",
];

/// The plan for the request in `request`'s conversation.
pub fn turn(request: &ModelRequest) -> Turn {
    let first = request
        .messages
        .iter()
        .find(|m| m.role == MsgRole::User)
        .map_or("", |m| m.content.as_str());
    // After `resume --answer` the task carries the question and the user's answer: plan from
    // the original task and never ask again.
    let (task, answered) = match first.split_once(ANSWER_MARK) {
        Some((task, rest)) => (task, Some(rest)),
        None => (first, None),
    };
    let plan = plan_for(task, answered.is_some());
    Turn::Answer(serde_json::to_string_pretty(&plan).unwrap_or_default())
}

/// The plan for `task`; `answered` when the user already answered the one question.
pub fn plan_for(task: &str, answered: bool) -> Value {
    let lower = task.to_lowercase();
    let request_type = TYPES
        .iter()
        .find(|(_, words)| words.iter().any(|w| lower.contains(w)))
        .map_or("KNOWLEDGE_QA", |(t, _)| t);
    let track = if request_type == "CASUAL" {
        "FAST"
    } else {
        "QUALITY"
    };
    let mut questions = Vec::new();
    if request_type.starts_with("STATUS_")
        && !answered
        && !PERIOD_WORDS.iter().any(|w| lower.contains(w))
    {
        questions.push("Which period (sprint, week or release) should the numbers cover?");
    }
    let plan: Value = json!({
        "intent": intent(task),
        "request_type": request_type,
        "track": track,
        "required_sources": sources_for(request_type),
        "missing_info_questions": questions,
        "expected_output_schema": if questions.is_empty() {
            if request_type.starts_with("STATUS_") { "status_v1_json" } else { "answer_v1_markdown" }
        } else {
            "clarification_v1"
        },
    });
    plan
}

/// A snake_case label from the request's first few content words.
fn intent(task: &str) -> String {
    const STOP: &[&str] = &[
        "the", "a", "an", "of", "is", "are", "what", "whats", "what's", "how", "do", "does", "i",
        "we", "to", "in", "for", "on", "and", "our", "my", "me", "please", "can", "you",
    ];
    let words: Vec<String> = task
        .split(|c: char| !c.is_ascii_alphanumeric())
        .map(str::to_ascii_lowercase)
        .filter(|w| w.len() > 1 && !STOP.contains(&w.as_str()))
        .filter(|w| w.as_bytes()[0].is_ascii_alphabetic())
        .take(5)
        .collect();
    if words.is_empty() {
        "answer_request".into()
    } else {
        words.join("_")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intents_are_snake_case_labels() {
        assert_eq!(
            intent("What's the sprint completion rate?"),
            "sprint_completion_rate"
        );
        assert_eq!(intent("???"), "answer_request");
    }
}
