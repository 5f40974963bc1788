//! The offline model serving agents written for another tool, in another project's style: other
//! names, other headings, opencode `tools:` maps that only switch some tools off (so `task` and
//! `write` stay granted). The role must come from what the agent is granted and owes, and an
//! agent the offline model cannot play gets a plain answer saying so, never invented content.

use std::path::Path;

use switchboard::agent::render::{render, PromptContext};
use switchboard::agent::{load, Agent, AgentSet, LoadOptions};
use switchboard::model::offline::respond;
use switchboard::model::{Message, ModelRequest};
use switchboard::project::Project;
use switchboard::tools::{self, ToolContext};

use crate::support::fs as support_fs;
use support_fs::copy_tree;

struct Foreign {
    _dir: tempfile::TempDir,
    project: Project,
    agents: AgentSet,
}

/// The fixture in a temporary copy, so a misbehaving agent cannot write into the checkout.
fn foreign() -> Foreign {
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/foreign");
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&from, dir.path());
    let project = Project::open(dir.path()).unwrap();
    let agents = load(&project, &LoadOptions::default());
    assert!(!agents.has_errors(), "{:#?}", agents.diagnostics);
    Foreign {
        _dir: dir,
        project,
        agents,
    }
}

/// What one hop did: its final answer and the names of the tools it called.
struct Run {
    answer: String,
    called: Vec<String>,
}

/// Runs `agent` on the offline model with the real read-only tools. `task` and `write` are
/// recorded and refused, so a test sees an agent that tries to delegate or write a report.
fn run(f: &Foreign, name: &str, prompt: &str) -> Run {
    let agent: &Agent = f.agents.get(name).unwrap();
    let system = render(agent, &PromptContext::preview(&f.project, &f.agents, agent)).unwrap();
    let mut messages = vec![Message::user(prompt)];
    let mut called = Vec::new();
    for _ in 0..12 {
        let request = ModelRequest {
            model: "default".into(),
            agent: agent.name.clone(),
            system: system.clone(),
            messages: messages.clone(),
            tools: tools::specs_for(agent, &tools::Provided::default()),
            tool_choice: Default::default(),
            temperature: None,
            top_p: None,
            max_tokens: None,
            response_contract: None,
        };
        let response = respond(&request);
        if response.tool_calls.is_empty() {
            return Run {
                answer: response.content,
                called,
            };
        }
        messages.push(Message::assistant(
            response.content.clone(),
            response.tool_calls.clone(),
        ));
        for call in &response.tool_calls {
            called.push(call.name.clone());
            let result = if matches!(call.name.as_str(), "task" | "write") {
                Err(format!("{} is not available in this test", call.name))
            } else {
                let ctx = ToolContext {
                    project: &f.project,
                    agent,
                    known: &[],
                    written: &[],
                };
                tools::invoke(ctx, &call.name, &call.arguments)
                    .map(|o| o.text)
                    .map_err(|e| e.to_string())
            };
            match result {
                Ok(out) => messages.push(Message::tool(call.id.clone(), out, false)),
                Err(e) => messages.push(Message::tool(call.id.clone(), e, true)),
            }
        }
    }
    panic!("{name} did not answer within 12 steps");
}

/// The paths an answer names in backticks that exist in the project.
fn existing_paths(f: &Foreign, answer: &str) -> Vec<String> {
    answer
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|p| p.ends_with(".md") && f.project.root().join(p).is_file())
        .map(str::to_string)
        .collect()
}

/// A finder granted search tools (and, by opencode's rules, `task`, which its map does not
/// mention) is a locator: it lists the notes that exist, writes nothing, and does not
/// copy its prompt's output template.
#[test]
fn foreign_finder_lists_real_notes_instead_of_writing_a_report() {
    let f = foreign();
    let finder = f.agents.get("doc-finder").unwrap();
    assert!(
        finder.tools.allows("task") && !finder.tools.allows("read"),
        "the fixture must grant task implicitly and deny read"
    );
    let out = run(
        &f,
        "doc-finder",
        "Find notes about session tokens and deploys",
    );
    assert!(
        !out.called.iter().any(|c| c == "write" || c == "task"),
        "a finder must not delegate or write: {:?}\n{}",
        out.called,
        out.answer
    );
    let paths = existing_paths(&f, &out.answer);
    assert!(
        paths.contains(&"thoughts/team/research/2026-03-02-session-tokens.md".to_string())
            && paths.contains(&"thoughts/team/tickets/auth-12.md".to_string()),
        "{paths:?}\n{}",
        out.answer
    );
    assert!(
        !paths.contains(&"thoughts/team/notes/cache-sizes.md".to_string()),
        "{}",
        out.answer
    );
    for copied in ["[Subject]", "Historical Documentation", "Nothing found"] {
        assert!(!out.answer.contains(copied), "{copied}:\n{}", out.answer);
    }
}

/// A reader granted `read` (with search tools too, and no contract) is an analyzer: it quotes
/// what the note agreed with the note's own line numbers, and a table of links under a heading
/// that is no decision is not made into a finding.
#[test]
fn foreign_reader_quotes_the_note_and_not_its_link_table() {
    let f = foreign();
    let out = run(
        &f,
        "doc-reader",
        "Read thoughts/team/research/2026-03-02-session-tokens.md and report what was agreed.",
    );
    assert!(
        !out.called.iter().any(|c| c == "write" || c == "task"),
        "{:?}\n{}",
        out.called,
        out.answer
    );
    assert_eq!(out.called, ["read"], "{}", out.answer);
    let doc = "thoughts/team/research/2026-03-02-session-tokens.md";
    assert!(
        out.answer.contains(&format!("`{doc}:14-15`")),
        "{}",
        out.answer
    );
    assert!(out
        .answer
        .contains("We decided that session tokens are signed with a rotating key"));
    assert!(
        !out.answer.contains("Historical Documentation"),
        "{}",
        out.answer
    );
}

/// An agent whose only tools are ones the offline model cannot use is told so plainly.
#[test]
fn agent_with_only_web_tools_gets_a_plain_cannot_serve_answer() {
    let f = foreign();
    let out = run(&f, "web-helper", "What is the latest stable Rust release?");
    assert!(out.called.is_empty(), "{:?}", out.called);
    assert!(
        out.answer
            .contains("The offline model cannot serve agent `web-helper`"),
        "{}",
        out.answer
    );
    assert!(out.answer.contains("--model"), "{}", out.answer);
}

/// A primary that may delegate but documents no `task(...)` workflow cannot be followed: no
/// report is invented, the answer says why.
#[test]
fn primary_without_a_documented_workflow_gets_a_plain_cannot_serve_answer() {
    let f = foreign();
    let out = run(
        &f,
        "coordinator",
        "How are session tokens kept across deploys?",
    );
    assert!(out.called.is_empty(), "{:?}\n{}", out.called, out.answer);
    assert!(
        out.answer
            .contains("The offline model cannot serve agent `coordinator`"),
        "{}",
        out.answer
    );
    assert!(out.answer.contains("task("), "{}", out.answer);
    assert!(!out.answer.contains("## Findings"), "{}", out.answer);
}
