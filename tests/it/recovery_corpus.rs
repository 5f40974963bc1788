//! Tool-call recovery on real answers of Qwen2.5-Coder-1.5B-Instruct (Q4_K_M, llama-server
//! `--jinja`, tools offered natively), harvested with scripts/harvest-tool-call-corpus.py and
//! labelled by hand: which answers are tool calls written as text (and which tools they call),
//! and which are answers that only talk about tools, quote them, or are plain answers.

use serde::Deserialize;
use switchboard::model::recover::{recover, Offered};

#[derive(Deserialize)]
struct Case {
    agent: String,
    tools: Vec<String>,
    text: String,
    /// The tools called, in order; empty when the answer is not a call.
    calls: Vec<String>,
}

const CORPUS: &str = include_str!("../data/tool-call-corpus.jsonl");

#[test]
fn real_answers_are_recovered_exactly_when_they_are_calls() {
    let cases: Vec<Case> = CORPUS
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("corpus line"))
        .collect();
    let calls = cases.iter().filter(|c| !c.calls.is_empty()).count();
    let none = cases.len() - calls;
    assert!(calls >= 30 && none >= 30, "{calls} calls, {none} non-calls");
    let mut wrong = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let specs: Vec<_> = case
            .tools
            .iter()
            .map(|t| switchboard::tools::spec(t).expect("a built-in tool"))
            .collect();
        let got: Vec<String> = recover(&case.text, &Offered::from_specs(&specs), 1)
            .map(|r| r.calls.into_iter().map(|c| c.name).collect())
            .unwrap_or_default();
        if got != case.calls {
            wrong.push(format!(
                "line {} ({}): expected {:?}, recovered {:?}\n{}",
                i + 1,
                case.agent,
                case.calls,
                got,
                case.text.chars().take(300).collect::<String>()
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{}\n\n{}",
        wrong.len(),
        wrong.join("\n\n")
    );
}
