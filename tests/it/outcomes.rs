//! The five outcomes end to end (COMPLETED, PARTIAL, BLOCKED, FAILED, NEEDS_INPUT is in
//! json_cli): each error tier with the scripted model or the faulty HTTP mock on 127.0.0.1,
//! checkpoints and `resume` of a PARTIAL session, BLOCKED reasons, run folders, exit codes, and
//! every line of the logs these sessions write validated against `schema events`.

use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use crate::support::mock::{answer, call, Mock, Proto, Reply};
use switchboard::agent::{load, LoadOptions};
use switchboard::config::Config;
use switchboard::model::{ProviderContext, Registry};
use switchboard::project::Project;
use switchboard::runtime::events::read_log;
use switchboard::runtime::{
    resume, Event, EventKind, HopStatus, Outcome, RunOptions, Session, SessionOutcome,
};

const BIN: &str = env!("CARGO_BIN_EXE_switchboard");

const LEAD: &str = "---\nname: lead\ndescription: \"Delegates to worker.\"\nmode: primary\ntools: {task: true, read: true}\nBUDGET---\nYou are {{ agent }}.\n";
const WORKER: &str = "---\nname: worker\ndescription: \"Answers in an envelope.\"\nmode: subagent\ntools: {read: true}\ncontract:\n  extends: envelope\n  message_types: [WORKER_RESPONSE]\n  message_id_prefix: worker\n  on_violation: fail\n  max_repairs: 1\nBUDGET---\nYou are {{ agent }}; message_id {{ message_id }}.\n";

/// A project with `lead` and `worker`, each with the given `budget:` line (or none), and a.md.
fn project(lead_budget: &str, worker_budget: &str) -> (tempfile::TempDir, Project) {
    let dir = tempfile::tempdir().unwrap();
    let agents = dir.path().join("agent");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(agents.join("lead.md"), LEAD.replace("BUDGET", lead_budget)).unwrap();
    std::fs::write(
        agents.join("worker.md"),
        WORKER.replace("BUDGET", worker_budget),
    )
    .unwrap();
    std::fs::write(dir.path().join("a.md"), "hello\n").unwrap();
    let p = Project::open(dir.path()).unwrap();
    (dir, p)
}

use crate::support::scripted::{registry, run_agent};

/// Runs `root` (any mode) on `prompt` with `script`; returns the outcome and its log.
async fn session(
    project: &Project,
    root: &str,
    script: &str,
    prompt: &str,
) -> (SessionOutcome, Vec<Event>) {
    run_agent(project, Config::default(), script, root, prompt).await
}

/// Resumes `session_id` with `script`.
async fn resume_session(
    project: &Project,
    session_id: &str,
    script: &str,
) -> (SessionOutcome, Vec<Event>, usize) {
    let plan = resume::plan(project, session_id).unwrap();
    let reused = plan.completed_hops;
    let agents = Arc::new(load(project, &LoadOptions::default()));
    let options = RunOptions {
        model: Some("scripted/test".into()),
        ..RunOptions::default()
    };
    let s = Session::resume(
        project.clone(),
        agents,
        Config::default(),
        registry(script),
        options,
        plan,
    )
    .unwrap();
    let outcome = s.run().await;
    let events = read_log(&outcome.events).unwrap();
    (outcome, events, reused)
}

fn of_type<'a>(events: &'a [Event], ty: &str) -> Vec<&'a Event> {
    events.iter().filter(|e| e.kind.name() == ty).collect()
}

fn blocked(events: &[Event]) -> Vec<(String, String, String)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::HopBlocked { reason, action } => {
                Some((e.agent.clone().unwrap(), reason.clone(), action.clone()))
            }
            _ => None,
        })
        .collect()
}

fn tool_results(events: &[Event], agent: &str) -> Vec<(bool, String)> {
    events
        .iter()
        .filter(|e| e.agent.as_deref() == Some(agent))
        .filter_map(|e| match &e.kind {
            EventKind::ToolResult {
                is_error, output, ..
            } => Some((*is_error, output.clone())),
            _ => None,
        })
        .collect()
}

fn worker_task(prompt: &str) -> String {
    format!(
        "{{name: task, arguments: {{subagent_type: worker, description: work, prompt: \"{prompt}\"}}}}"
    )
}

const CHECKPOINT: &str = r#"{\"done\": [\"read a.md\"], \"remaining\": [\"write the summary\"], \"next_steps\": [\"summarise a.md\"]}"#;

// ---- tier 3: BLOCKED ----

#[tokio::test]
async fn a_contract_still_violated_after_its_repairs_blocks_the_hop_and_the_caller_is_told() {
    let (_d, p) = project("", "");
    let script = format!(
        "agents:\n  lead:\n    - turns:\n        - tool_calls: [{}]\n        - content: worked around it\n  worker:\n    - turns:\n        - content: not an envelope\n        - content: still not one\n",
        worker_task("go")
    );
    let (outcome, events) = session(&p, "lead", &script, "do it").await;
    // The caller worked around the blocked child, so the session completed.
    assert_eq!(outcome.outcome, Outcome::Completed, "{outcome:?}");
    let b = blocked(&events);
    assert_eq!(b.len(), 1, "{b:?}");
    assert_eq!(b[0].0, "worker");
    assert!(b[0].1.contains("violates contract"), "{b:?}");
    assert!(b[0].2.contains("on_violation: mark"), "{b:?}");
    assert_eq!(of_type(&events, "hop.repair").len(), 1, "repairs first");
    let r = tool_results(&events, "lead");
    assert!(r[0].0, "a tool error: {r:?}");
    assert!(r[0].1.contains("is BLOCKED"), "{r:?}");
    assert!(r[0].1.contains("what a person must do"), "{r:?}");
    assert!(!r[0].1.contains("still not one"), "never unchecked: {r:?}");
}

#[tokio::test]
async fn a_blocked_root_blocks_the_session_and_is_not_retried() {
    let (_d, p) = project("", "");
    let script = "agents:\n  worker:\n    - turns:\n        - content: not an envelope\n        - content: still not one\n";
    let (outcome, events) = session(&p, "worker", script, "go").await;
    assert_eq!(outcome.status, "blocked");
    assert_eq!(outcome.outcome, Outcome::Blocked);
    let err = outcome.error.unwrap();
    assert!(err.contains("what a person must do"), "{err}");
    // Exactly the two scripted turns ran: nothing retried the blocked hop.
    assert_eq!(of_type(&events, "model.request").len(), 2);
    assert!(matches!(
        resume::plan(&p, &outcome.session_id),
        Err(resume::ResumeError::AlreadyEnded { .. })
    ));
}

#[tokio::test]
async fn a_refused_path_blocks_the_hop_before_its_next_turn() {
    let (dir, p) = project("", "");
    std::fs::write(dir.path().join("../outside-secret.txt"), "s").ok();
    let script = "agents:\n  lead:\n    - turns:\n        - tool_calls: [{name: read, arguments: {path: ../outside-secret.txt}}]\n        - content: never played\n";
    let (outcome, events) = session(&p, "lead", script, "read it").await;
    assert_eq!(outcome.outcome, Outcome::Blocked, "{outcome:?}");
    let b = blocked(&events);
    assert!(b[0].1.contains("refused"), "{b:?}");
    assert!(b[0].2.contains("outside the project"), "{b:?}");
    assert_eq!(of_type(&events, "model.request").len(), 1, "no second turn");
}

#[tokio::test]
async fn a_model_that_cannot_be_had_blocks_the_hop_with_what_to_fix() {
    let (_d, p) = project("", "");
    let agents = Arc::new(load(&p, &LoadOptions::default()));
    let options = RunOptions {
        model: Some("scripted/no-such-script.yaml".into()),
        ..RunOptions::default()
    };
    let registry = Registry::with_builtins(ProviderContext {
        project_root: p.root().to_path_buf(),
        ..ProviderContext::default()
    });
    let s = Session::new(
        p.clone(),
        agents,
        Config::default(),
        Arc::new(registry),
        options,
        "lead",
        "x",
    )
    .unwrap();
    let outcome = s.run().await;
    assert_eq!(outcome.outcome, Outcome::Blocked, "{outcome:?}");
    let events = read_log(&outcome.events).unwrap();
    let b = blocked(&events);
    assert!(b[0].2.contains("--model"), "{b:?}");
}

// ---- tier 2: PARTIAL with a checkpoint ----

#[tokio::test]
async fn the_token_threshold_asks_for_a_checkpoint_and_ends_partial() {
    let (_d, p) = project("budget: {tokens: 1000}\n", "");
    let script = format!(
        "agents:\n  lead:\n    - turns:\n        - {{content: reading, tool_calls: [{{name: read, arguments: {{path: a.md}}}}], usage: {{input_tokens: 600, output_tokens: 10}}}}\n        - {{content: \"{CHECKPOINT}\", tool_calls: [{{name: read, arguments: {{path: a.md}}}}], usage: {{input_tokens: 50, output_tokens: 10}}}}\n"
    );
    let (outcome, events) = session(&p, "lead", &script, "summarise a.md").await;
    assert_eq!(outcome.outcome, Outcome::Partial, "{outcome:?}");
    assert_eq!(outcome.answer, "reading", "the answer it had, not the JSON");
    let c = outcome.checkpoint.clone().unwrap();
    assert_eq!(c.source, "agent");
    assert_eq!(c.next_steps, ["summarise a.md"]);
    assert!(outcome.error.unwrap().contains("610 of 1000 tokens"));
    // The checkpoint turn's tool call did not run, and the request offered no tools.
    assert_eq!(of_type(&events, "tool.call").len(), 1);
    let cp = of_type(&events, "hop.checkpoint");
    let EventKind::HopCheckpoint { path, .. } = &cp[0].kind else {
        unreachable!()
    };
    let file = p
        .root()
        .join(".switchboard/sessions")
        .join(&outcome.session_id)
        .join(path);
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    assert_eq!(stored["remaining"][0], "write the summary");
}

#[tokio::test]
async fn a_declared_turn_threshold_applies_and_a_bad_checkpoint_is_replaced() {
    let (_d, p) = project("budget: {turns: 4, threshold: 50}\n", "");
    let read = "{content: step, tool_calls: [{name: read, arguments: {path: a.md}}]}";
    let script = format!(
        "agents:\n  lead:\n    - turns:\n        - {read}\n        - {read}\n        - {{content: \"I am not JSON\"}}\n"
    );
    let (outcome, events) = session(&p, "lead", &script, "loop").await;
    assert_eq!(outcome.outcome, Outcome::Partial, "{outcome:?}");
    assert_eq!(of_type(&events, "tool.call").len(), 2, "stopped at 2 of 4");
    let c = outcome.checkpoint.unwrap();
    assert_eq!(c.source, "runtime");
    let err = outcome.error.unwrap();
    assert!(err.contains("2 of 4 turns"), "{err}");
    assert!(
        err.contains("not usable: the reply holds no JSON object"),
        "{err}"
    );
}

#[tokio::test]
async fn a_partial_subagent_answer_is_contract_checked_and_its_caller_told() {
    let (_d, p) = project("", "budget: {tokens: 100}\n");
    let script = format!(
        "agents:\n  lead:\n    - turns:\n        - tool_calls: [{}]\n        - content: used what it had\n  worker:\n    - turns:\n        - {{content: half an answer, tool_calls: [{{name: read, arguments: {{path: a.md}}}}], usage: {{input_tokens: 70, output_tokens: 1}}}}\n        - {{content: \"{CHECKPOINT}\", usage: {{input_tokens: 5, output_tokens: 1}}}}\n",
        worker_task("go")
    );
    let (outcome, events) = session(&p, "lead", &script, "do it").await;
    assert_eq!(outcome.outcome, Outcome::Completed, "{outcome:?}");
    let checked: Vec<bool> = of_type(&events, "contract.checked")
        .iter()
        .filter(|e| e.agent.as_deref() == Some("worker"))
        .map(|e| {
            matches!(
                e.kind,
                EventKind::ContractChecked {
                    conformant: true,
                    ..
                }
            )
        })
        .collect();
    assert_eq!(checked, [false], "the partial answer was checked once");
    let r = tool_results(&events, "lead");
    assert!(!r[0].0, "{r:?}");
    assert!(r[0].1.starts_with("[PARTIAL: `worker`"), "{r:?}");
    assert!(r[0].1.contains("does not conform"), "{r:?}");
    assert!(r[0].1.contains("still to do: write the summary"), "{r:?}");
}

#[tokio::test]
async fn partial_then_resume_completes_without_rerunning_finished_hops() {
    let (_d, p) = project("budget: {tokens: 1000}\n", "");
    let worker_answer = "---\nmessage_id: {{ message_id }}\nmessage_type: WORKER_RESPONSE\ncorrelation_id: {{ correlation_id }}\ntimestamp: {{ timestamp }}\n---\n<thinking>\nfound it\n</thinking>\n<answer>\na.md says hello\n</answer>\n";
    let worker = format!(
        "  worker:\n    - turns:\n        - content: |\n{}",
        worker_answer
            .lines()
            .map(|l| format!("            {l}\n"))
            .collect::<String>()
    );
    let first = format!(
        "agents:\n  lead:\n    - turns:\n        - {{tool_calls: [{}], usage: {{input_tokens: 700, output_tokens: 1}}}}\n        - {{content: \"{CHECKPOINT}\"}}\n{worker}",
        worker_task("go")
    );
    let (outcome, events) = session(&p, "lead", &first, "summarise a.md").await;
    assert_eq!(outcome.outcome, Outcome::Partial, "{outcome:?}");
    assert_eq!(of_type(&events, "hop.completed").len(), 2, "worker + lead");
    let run_dir = outcome.run_folder.clone().unwrap();
    let results = std::fs::read_to_string(run_dir.join("RESULTS.md")).unwrap();
    assert!(results.contains("outcome: \"PARTIAL\""), "{results}");
    assert!(results.contains("  - \"summarise a.md\""), "{results}");

    // The second run has no worker script: re-running the worker would fail the session. The
    // lead's hop script is claimed only by a task that carries the checkpoint.
    let second = format!(
        "agents:\n  lead:\n    - when: \"[Continuing\"\n      turns:\n        - tool_calls: [{}]\n        - content: a.md says hello\n",
        worker_task("go")
    );
    let (done, events, reused) = resume_session(&p, &outcome.session_id, &second).await;
    assert_eq!(reused, 1, "the worker's completed hop");
    assert_eq!(done.outcome, Outcome::Completed, "{done:?}");
    assert_eq!(done.answer, "a.md says hello");
    assert_eq!(done.session_id, outcome.session_id);
    let worker_starts = of_type(&events, "hop.started")
        .iter()
        .filter(|e| e.agent.as_deref() == Some("worker"))
        .count();
    assert_eq!(worker_starts, 1, "the worker ran once, in the first run");
    assert_eq!(of_type(&events, "hop.reused").len(), 1);
    // The lead ran again under its old hop id, attempt 2.
    let attempts: Vec<u32> = of_type(&events, "hop.started")
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::HopStarted { attempt, .. } if e.agent.as_deref() == Some("lead") => {
                Some(attempt)
            }
            _ => None,
        })
        .collect();
    assert_eq!(attempts, [1, 2]);
    let results = std::fs::read_to_string(run_dir.join("RESULTS.md")).unwrap();
    assert!(results.contains("outcome: \"COMPLETED\""), "{results}");
    assert!(results.contains("runs: 2"), "{results}");
}

// ---- tier 1 and context overflow, against the faulty HTTP mock ----

fn mock_config(mock: &Mock, extra: &str) -> Config {
    let text = format!(
        "[providers.mock]\nprotocol = \"openai\"\nbase_url = \"{}\"\nretry_base_ms = 5\nrequest_timeout_secs = 1\nstream_idle_timeout_secs = 1\n{extra}",
        mock.base_url(Proto::OpenAi)
    );
    Config::parse(&text, "switchboard.toml").unwrap()
}

async fn http_session(project: &Project, config: Config) -> (SessionOutcome, Vec<Event>) {
    let agents = Arc::new(load(project, &LoadOptions::default()));
    let registry = Registry::with_builtins(ProviderContext {
        project_root: project.root().to_path_buf(),
        providers: config.providers.clone(),
        stream: None,
    });
    let options = RunOptions {
        model: Some("mock/m1".into()),
        ..RunOptions::default()
    };
    let s = Session::new(
        project.clone(),
        agents,
        config,
        Arc::new(registry),
        options,
        "lead",
        "read a.md",
    )
    .unwrap();
    let outcome = s.run().await;
    let events = read_log(&outcome.events).unwrap();
    (outcome, events)
}

fn retries(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ModelRetry { error, .. } => Some(error.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn transient_failures_are_retried_each_as_an_event_and_the_session_completes() {
    let (_d, p) = project("", "");
    let mock = Mock::start().await;
    let ok = answer("", vec![call("c1", "read", json!({"path": "a.md"}))]);
    mock.push(Reply::Status {
        status: 429,
        body: "{\"error\":\"slow down\"}".into(),
        headers: vec![("retry-after".into(), "0.01".into())],
    })
    .push(Reply::Status {
        status: 500,
        body: "{\"error\":\"boom\"}".into(),
        headers: vec![],
    })
    .push(ok)
    .push(Reply::CutStream {
        answer: Box::new(answer("a.md says hello", vec![])),
        keep: 20,
    })
    .push(answer("a.md says hello", vec![]));
    let (outcome, events) = http_session(&p, mock_config(&mock, "")).await;
    assert_eq!(outcome.outcome, Outcome::Completed, "{outcome:?}");
    assert_eq!(outcome.answer, "a.md says hello");
    let r = retries(&events);
    assert_eq!(r.len(), 3, "429, 500 and the cut stream: {r:?}");
    assert_eq!(mock.requests().len(), 5);
}

#[tokio::test]
async fn a_provider_that_hangs_past_every_retry_fails_the_session_not_blocks_it() {
    let (_d, p) = project("", "");
    let mock = Mock::start().await;
    mock.repeat(Reply::Hang);
    let (outcome, events) = http_session(&p, mock_config(&mock, "max_retries = 1\n")).await;
    assert_eq!(outcome.outcome, Outcome::Failed, "{outcome:?}");
    assert_eq!(retries(&events).len(), 1);
    assert!(blocked(&events).is_empty());
    let err = outcome.error.unwrap();
    assert!(err.contains("model mock/m1"), "{err}");
}

#[tokio::test]
async fn a_context_overflow_ends_partial_with_a_runtime_checkpoint() {
    let (_d, p) = project("", "");
    let mock = Mock::start().await;
    mock.push(answer("", vec![call("c1", "read", json!({"path": "a.md"}))]))
        .push(Reply::Status {
            status: 400,
            body: r#"{"error":{"message":"This model's maximum context length is 8192 tokens.","code":"context_length_exceeded"}}"#.into(),
            headers: vec![],
        });
    let (outcome, events) = http_session(&p, mock_config(&mock, "")).await;
    assert_eq!(outcome.outcome, Outcome::Partial, "{outcome:?}");
    assert!(outcome.error.unwrap().starts_with("context overflow"));
    let c = outcome.checkpoint.unwrap();
    assert_eq!(c.source, "runtime");
    assert!(c.remaining[0].contains("read a.md"), "{c:?}");
    assert!(retries(&events).is_empty(), "an overflow is not retried");
    assert_eq!(mock.requests().len(), 2);
}

// ---- the binary: exit codes, run folders, BLOCKED resumes, the events schema ----

fn sb(root: &Path) -> Command {
    let mut c = Command::new(BIN);
    c.arg("--root").arg(root).env("NO_COLOR", "1");
    c
}

fn run_json(root: &Path, agent: &str, script: &str) -> (Option<i32>, Value) {
    std::fs::write(root.join("script.yaml"), script).unwrap();
    let out = sb(root)
        .args([
            "run",
            agent,
            "go",
            "--model",
            "scripted/script.yaml",
            "--json",
        ])
        .output()
        .unwrap();
    let v = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code(), v)
}

#[test]
fn each_outcome_exits_with_its_own_code_and_leaves_a_run_folder() {
    let (dir, _p) = project("budget: {tokens: 1000}\n", "");
    let root = dir.path();
    let (code, v) = run_json(
        root,
        "lead",
        "agents:\n  lead:\n    - turns: [{content: done}]\n",
    );
    assert_eq!((code, v["outcome"].as_str()), (Some(0), Some("COMPLETED")));
    let completed = v["session_id"].as_str().unwrap().to_string();
    let partial_script = format!(
        "agents:\n  lead:\n    - turns:\n        - {{content: r, tool_calls: [{{name: read, arguments: {{path: a.md}}}}], usage: {{input_tokens: 650, output_tokens: 1}}}}\n        - {{content: \"{CHECKPOINT}\"}}\n"
    );
    let (code, v) = run_json(root, "lead", &partial_script);
    assert_eq!((code, v["outcome"].as_str()), (Some(4), Some("PARTIAL")));
    assert_eq!(v["checkpoint"]["next_steps"][0], "summarise a.md");
    let partial = v["session_id"].as_str().unwrap().to_string();
    let (code, v) = run_json(
        root,
        "lead",
        "agents:\n  lead:\n    - turns: [{tool_calls: [{name: read, arguments: {path: ../x}}]}]\n",
    );
    assert_eq!((code, v["outcome"].as_str()), (Some(5), Some("BLOCKED")));
    let (code, v) = run_json(root, "lead", "agents:\n  lead: []\n");
    assert_eq!((code, v["outcome"].as_str()), (Some(1), Some("FAILED")));

    let out = sb(root).args(["runs", "list", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    let outcomes: std::collections::BTreeSet<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(
        outcomes,
        ["BLOCKED", "COMPLETED", "FAILED", "PARTIAL"].into(),
        "{list}"
    );
    let out = sb(root).args(["runs", "show", &partial]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("# PARTIAL — lead"), "{text}");
    assert!(
        text.contains(&format!("switchboard resume {partial}")),
        "{text}"
    );
    for f in [
        "THOUGHTS.md",
        "DECISIONS.md",
        "metadata.yaml",
        "events.jsonl",
    ] {
        assert!(
            root.join(".switchboard/runs")
                .join(&partial)
                .join(f)
                .is_file(),
            "{f}"
        );
    }
    let out = sb(root)
        .args(["runs", "gc", "--keep", "1", "--json"])
        .output()
        .unwrap();
    let gc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(gc["removed"].as_array().unwrap().len(), 3, "{gc}");
    assert!(
        root.join(".switchboard/sessions").join(&completed).is_dir(),
        "logs stay"
    );
}

#[test]
fn resume_refuses_a_corrupt_log_or_a_missing_agent_as_blocked() {
    let (dir, _p) = project("budget: {tokens: 1000}\n", "");
    let root = dir.path();
    let script = format!(
        "agents:\n  lead:\n    - turns:\n        - {{content: r, tool_calls: [{{name: read, arguments: {{path: a.md}}}}], usage: {{input_tokens: 650, output_tokens: 1}}}}\n        - {{content: \"{CHECKPOINT}\"}}\n"
    );
    let (_, v) = run_json(root, "lead", &script);
    let id = v["session_id"].as_str().unwrap().to_string();
    let log = root
        .join(".switchboard/sessions")
        .join(&id)
        .join("events.jsonl");
    let good = std::fs::read_to_string(&log).unwrap();

    std::fs::remove_file(root.join("agent/lead.md")).unwrap();
    let out = sb(root).args(["resume", &id]).output().unwrap();
    assert_eq!(out.status.code(), Some(5));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("BLOCKED") && err.contains("restore agent/lead.md"),
        "{err}"
    );
    std::fs::write(
        root.join("agent/lead.md"),
        LEAD.replace("BUDGET", "budget: {tokens: 1000}\n"),
    )
    .unwrap();

    let mut lines: Vec<&str> = good.lines().collect();
    lines.insert(2, "{\"this is\": not an event");
    std::fs::write(&log, lines.join("\n") + "\n").unwrap();
    let out = sb(root).args(["resume", &id]).output().unwrap();
    assert_eq!(out.status.code(), Some(5));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is corrupt: line(s) 3"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&log).unwrap().lines().count(),
        lines.len(),
        "nothing appended"
    );
}

#[test]
fn every_line_of_real_logs_validates_against_the_published_event_schema() {
    let (dir, _p) = project("budget: {tokens: 1000}\n", "");
    let root = dir.path();
    let out = sb(root).args(["schema", "events"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let schema: Value = serde_json::from_slice(&out.stdout).unwrap();
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    // Sessions that log most event kinds: delegation, contract checks and repairs, a blocked
    // child, a checkpoint, a refused path.
    let scripts = [
        format!(
            "agents:\n  lead:\n    - turns:\n        - tool_calls: [{}]\n        - content: ok\n  worker:\n    - turns:\n        - content: no\n        - content: no\n",
            worker_task("go")
        ),
        format!(
            "agents:\n  lead:\n    - turns:\n        - {{content: r, tool_calls: [{{name: read, arguments: {{path: a.md}}}}], usage: {{input_tokens: 650, output_tokens: 1}}}}\n        - {{content: \"{CHECKPOINT}\"}}\n"
        ),
        "agents:\n  lead:\n    - turns: [{tool_calls: [{name: read, arguments: {path: ../x}}]}]\n".into(),
    ];
    for s in &scripts {
        run_json(root, "lead", s);
    }
    // And the fixture project's research session (locator, analyzers, a written report).
    let fixture = tempfile::tempdir().unwrap();
    let base = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/runtime");
    crate::support::fs::copy_tree(&Path::new(base).join("project"), fixture.path());
    std::fs::copy(
        Path::new(base).join("scripts/research.yaml"),
        fixture.path().join("research.yaml"),
    )
    .unwrap();
    let out = sb(fixture.path())
        .args([
            "run",
            "researcher",
            "research the runtime",
            "--model",
            "scripted/research.yaml",
            "--json",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut types = std::collections::BTreeSet::new();
    let mut lines = 0;
    for base in [root, fixture.path()] {
        for entry in std::fs::read_dir(base.join(".switchboard/sessions")).unwrap() {
            let log = entry.unwrap().path().join("events.jsonl");
            for line in std::fs::read_to_string(&log).unwrap().lines() {
                let v: Value = serde_json::from_str(line).unwrap();
                let errors: Vec<String> =
                    validator.iter_errors(&v).map(|e| e.to_string()).collect();
                assert!(errors.is_empty(), "{line}\n{errors:?}");
                types.insert(v["type"].as_str().unwrap().to_string());
                lines += 1;
            }
        }
    }
    assert!(lines > 50, "{lines}");
    for t in [
        "hop.blocked",
        "hop.checkpoint",
        "contract.checked",
        "hop.repair",
        "tool.result",
        "session.completed",
    ] {
        assert!(types.contains(t), "{t} not exercised: {types:?}");
    }
}

#[test]
fn hop_status_blocked_reads_back_from_trace() {
    let (dir, _p) = project("", "");
    let (_, v) = run_json(
        dir.path(),
        "lead",
        "agents:\n  lead:\n    - turns: [{tool_calls: [{name: read, arguments: {path: ../x}}]}]\n",
    );
    let id = v["session_id"].as_str().unwrap();
    let out = sb(dir.path())
        .args(["trace", id, "--json"])
        .output()
        .unwrap();
    let t: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(t["roots"][0]["status"], HopStatus::Blocked.as_str(), "{t}");
}
