//! Event-driven pipelines: fan-out in parallel under one correlation id, an invalid event that
//! blocks its worker and wakes nobody, and the shipped scout → analyst → planner pipeline
//! offline through the binary, its log valid against `schema events`.

use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use switchboard::agent::{load, LoadOptions};
use switchboard::config::Config;
use switchboard::project::Project;
use switchboard::runtime::events::read_log;
use switchboard::runtime::pipeline::{self, Pipeline};
use switchboard::runtime::{Event, EventKind, Outcome, RunOptions, Session, SessionOutcome};

const BIN: &str = env!("CARGO_BIN_EXE_switchboard");

const PIPE: &str = "name: t\ninput: scout\nevents:\n  found: {schema: {type: object, required: [path], properties: {path: {type: string}}}}\n  done: {schema: {type: object, required: [ok], properties: {ok: {type: boolean}}}}\nworkers:\n  scout: {agent: s, emits: [found]}\n  analyst: {agent: a, on: [found], emits: [done]}\n";

fn project() -> (tempfile::TempDir, Project) {
    let dir = tempfile::tempdir().unwrap();
    let agents = dir.path().join("agent");
    std::fs::create_dir_all(&agents).unwrap();
    for n in ["s", "a"] {
        std::fs::write(
            agents.join(format!("{n}.md")),
            format!(
                "---\nname: {n}\ndescription: d\nmode: subagent\n---\nYou are {{{{ agent }}}}.\n"
            ),
        )
        .unwrap();
    }
    std::fs::write(dir.path().join("p.yaml"), PIPE).unwrap();
    let p = Project::open(dir.path()).unwrap();
    (dir, p)
}

async fn run(p: &Project, script: &str) -> (SessionOutcome, Vec<Event>) {
    let agents = Arc::new(load(p, &LoadOptions::default()));
    let spec = Pipeline::load(p, "p.yaml", &agents).unwrap();
    let options = RunOptions {
        model: Some("scripted/test".into()),
        correlation_id: Some("corr-p".into()),
        max_parallel: 4,
        ..RunOptions::default()
    };
    let s = Session::for_pipeline(
        p.clone(),
        agents,
        Config::default(),
        crate::support::scripted::registry(script),
        options,
        "pipeline:t",
        "go",
    )
    .unwrap();
    let outcome = pipeline::run(&s, &spec, "go").await;
    let events = read_log(&outcome.events).unwrap();
    (outcome, events)
}

fn names<'a>(events: &'a [Event], ty: &str, agent: &str) -> Vec<&'a Event> {
    events
        .iter()
        .filter(|e| e.kind.name() == ty && e.agent.as_deref() == Some(agent))
        .collect()
}

#[tokio::test]
async fn a_valid_event_wakes_its_subscribers_in_parallel_under_one_correlation_id() {
    let (_d, p) = project();
    let found = r#"{"events": [{"type": "found", "data": {"path": "x"}}, {"type": "found", "data": {"path": "y"}}, {"type": "found", "data": {"path": "z"}}]}"#;
    let script = format!(
        "agents:\n  s:\n    - turns: [{{content: '{found}'}}]\n  a:\n    - repeat: true\n      turns: [{{delay_ms: 300, content: '{{\"events\": [{{\"type\": \"done\", \"data\": {{\"ok\": true}}}}]}}'}}]\n"
    );
    let (outcome, events) = run(&p, &script).await;
    assert_eq!(outcome.outcome, Outcome::Completed, "{outcome:?}");
    assert!(events.iter().all(|e| e.correlation_id == "corr-p"));
    let started = names(&events, "hop.started", "a");
    assert_eq!(started.len(), 3, "one analyst hop per event");
    // All three started before the first finished: they ran in parallel.
    let first_end = events
        .iter()
        .position(|e| e.kind.name() == "hop.completed" && e.agent.as_deref() == Some("a"))
        .unwrap();
    let last_start = events
        .iter()
        .rposition(|e| e.kind.name() == "hop.started" && e.agent.as_deref() == Some("a"))
        .unwrap();
    assert!(last_start < first_end, "fan-out ran in parallel");
    // Every worker hop is the pipeline root's child.
    let root = events[0].hop_id.clone();
    assert!(started.iter().all(|e| e.parent_hop_id == root));
    let delivered: Vec<Vec<String>> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::PipelineEvent {
                event_type,
                valid: true,
                subscribers,
                ..
            } if event_type == "found" => Some(subscribers.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(delivered, vec![vec!["analyst".to_string()]; 3]);
    let out: Value = serde_json::from_str(&outcome.answer).unwrap();
    assert_eq!(
        out.as_array().unwrap().len(),
        3,
        "unsubscribed `done` events are the output"
    );
}

#[tokio::test]
async fn an_invalid_event_blocks_its_worker_and_wakes_nobody() {
    let (_d, p) = project();
    let bad = r#"{"events": [{"type": "found", "data": {"path": 7}}, {"type": "found", "data": {"path": "ok"}}]}"#;
    let script = format!("agents:\n  s:\n    - turns: [{{content: '{bad}'}}]\n");
    let (outcome, events) = run(&p, &script).await;
    assert_eq!(outcome.outcome, Outcome::Blocked, "{outcome:?}");
    assert!(
        names(&events, "hop.started", "a").is_empty(),
        "nothing delivered"
    );
    let blocked = names(&events, "hop.blocked", "s");
    let EventKind::HopBlocked { reason, .. } = &blocked[0].kind else {
        unreachable!()
    };
    assert!(reason.contains("found/path"), "{reason}");
    let err = outcome.error.unwrap();
    assert!(err.contains("what a person must do"), "{err}");
}

#[test]
fn the_shipped_pipeline_runs_offline_and_its_log_matches_the_event_schema() {
    let dir = tempfile::tempdir().unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    for d in ["agent", "thoughts", "pipeline"] {
        crate::support::fs::copy_tree(&repo.join(d), &dir.path().join(d));
    }
    let out = Command::new(BIN)
        .arg("--root")
        .arg(dir.path())
        .args([
            "pipeline",
            "run",
            "pipeline/research.yaml",
            "Plan from thoughts/shared/decisions/2026-11-10-repair-turns.md and thoughts/shared/decisions/2026-11-11-error-tiers-and-token-budgets.md",
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
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["outcome"], "COMPLETED");
    let tasks: Value = serde_json::from_str(v["answer"].as_str().unwrap()).unwrap();
    assert_eq!(
        tasks.as_array().unwrap().len(),
        2,
        "one task per source: {tasks}"
    );
    assert!(tasks
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["type"] == "tasks.new"));
    let schema: Value = serde_json::from_slice(
        &Command::new(BIN)
            .args(["schema", "events"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    let log = std::fs::read_to_string(v["events"].as_str().unwrap()).unwrap();
    let mut agents = std::collections::BTreeSet::new();
    for line in log.lines() {
        let e: Value = serde_json::from_str(line).unwrap();
        assert!(validator.is_valid(&e), "{line}");
        if e["type"] == "hop.started" {
            agents.insert(e["agent"].as_str().unwrap().to_string());
        }
    }
    assert_eq!(
        agents.into_iter().collect::<Vec<_>>(),
        [
            "pipeline/analyst",
            "pipeline/planner",
            "pipeline/scout",
            "pipeline:research"
        ]
    );
}
