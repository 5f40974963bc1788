//! Sessions as durable workflows on a real restate-server (feature `restate`): a worker killed
//! with SIGKILL in the middle of a delegation, and the server itself killed and restarted
//! mid-session. The server comes from scripts/fetch-test-deps.sh; a missing one fails.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use switchboard::runtime::events::read_log;
use switchboard::runtime::{Event, EventKind};

use crate::support::durable::{free_port, project, wait_for, Model, Server, Worker};

/// Starts `run lead … --on restate://… --json` in the background.
fn submit(root: &Path, server: &Server) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .current_dir(root)
        .args(["run", "lead", "find out", "--json", "--on", &server.on()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start run --on")
}

async fn finish(child: std::process::Child) -> serde_json::Value {
    let out = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "run --on failed: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

/// Whether the project's (one) session log has `agent`'s `hop.completed`.
fn hop_completed(root: &Path, agent: &str) -> bool {
    let Ok(dirs) = std::fs::read_dir(root.join(".switchboard/sessions")) else {
        return false;
    };
    dirs.flatten().any(|d| {
        read_log(&d.path().join("events.jsonl")).is_ok_and(|events| {
            events.iter().any(|e| {
                e.agent.as_deref() == Some(agent)
                    && matches!(e.kind, EventKind::HopCompleted { .. })
            })
        })
    })
}

const ANSWER: &str = "lead heard: fast says hello | slow says hello";

/// The log's hops: each hop id started once and ended once, in one tree under the root.
fn assert_hops_once(events: &[Event], outcome: &serde_json::Value) -> HashMap<String, String> {
    let mut started: HashMap<String, String> = HashMap::new();
    let mut ended: HashSet<String> = HashSet::new();
    let mut message_ids = HashSet::new();
    for e in events {
        assert_eq!(e.session_id, outcome["session_id"].as_str().unwrap());
        assert_eq!(
            e.correlation_id,
            outcome["correlation_id"].as_str().unwrap()
        );
        let hop = e.hop_id.clone().unwrap_or_default();
        match &e.kind {
            EventKind::HopStarted { message_id, .. } => {
                let agent = e.agent.clone().unwrap_or_default();
                assert!(
                    started.insert(hop.clone(), agent).is_none(),
                    "hop {hop} started twice"
                );
                assert!(
                    message_ids.insert(message_id.clone()),
                    "message id {message_id} twice"
                );
            }
            EventKind::HopCompleted { .. } | EventKind::HopFailed { .. } => {
                assert!(ended.insert(hop.clone()), "hop {hop} ended twice");
            }
            _ => {}
        }
    }
    let agents: HashSet<&str> = started.values().map(String::as_str).collect();
    assert_eq!(
        agents,
        HashSet::from(["lead", "fast", "slow"]),
        "{started:?}"
    );
    assert_eq!(started.len(), 3, "no hop lost or added: {started:?}");
    assert_eq!(ended.len(), 3, "every hop ended once");
    let sessions_done = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::SessionCompleted { .. }))
        .count();
    assert_eq!(sessions_done, 1);
    started
}

fn events_of(outcome: &serde_json::Value) -> Vec<Event> {
    read_log(Path::new(outcome["events"].as_str().unwrap())).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_delegation_is_replaced_without_repeating_finished_model_calls() {
    let model = Model::start().await;
    model.set_delay("slow", Duration::from_secs(3));
    let dir = project(model.addr());
    let server = Server::start();
    let port = free_port();
    let first = Worker::start(dir.path(), &server, port);
    let run = submit(dir.path(), &server);
    // Both children started in parallel; `fast` answered, `slow` is still thinking.
    assert!(
        wait_for(Duration::from_secs(30), || model.count("slow") == 1
            && model.count("fast") == 1)
        .await,
        "the delegation never got under way: {:?}\n{}",
        model.counts(),
        server.log()
    );
    // `fast`'s hop ended (its model turn is journaled: the loop goes on only once Restate has
    // it) while `slow` still waits for its answer: kill the worker mid-delegation.
    assert!(
        wait_for(Duration::from_secs(20), || hop_completed(
            dir.path(),
            "fast"
        ))
        .await,
        "`fast` never ended"
    );
    assert_eq!(model.count("slow"), 1, "{:?}", model.counts());
    first.kill9();
    let _second = Worker::start(dir.path(), &server, port);
    let outcome = finish(run).await;
    assert_eq!(outcome["status"], "completed", "{outcome}");
    assert_eq!(outcome["answer"], ANSWER);
    // Finished model calls were not sent again; only the one cut off by the kill was.
    assert_eq!(model.count("lead:1"), 1, "{:?}", model.counts());
    assert_eq!(model.count("fast"), 1, "{:?}", model.counts());
    assert_eq!(model.count("slow"), 2, "{:?}", model.counts());
    assert_eq!(model.count("lead:2"), 1, "{:?}", model.counts());
    let events = events_of(&outcome);
    assert_hops_once(&events, &outcome);
    // The replayed hops' events were held back: each model turn is logged once.
    let mut turns = HashSet::new();
    for e in &events {
        if let EventKind::ModelResponse { step, .. } = &e.kind {
            let turn = (e.hop_id.clone(), *step);
            assert!(
                turns.insert(turn.clone()),
                "model.response logged twice: {turn:?}"
            );
        }
    }
    assert_eq!(turns.len(), 4, "lead's two turns, fast's and slow's");
    // The CLI a user knows reads the same log.
    let trace = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .current_dir(dir.path())
        .args(["trace", outcome["session_id"].as_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&trace.stdout);
    assert!(trace.status.success(), "{text}");
    for agent in ["lead", "fast", "slow"] {
        assert!(text.contains(agent), "{text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_survives_a_restart_of_the_restate_server() {
    let model = Model::start().await;
    model.set_delay("slow", Duration::from_secs(2));
    let dir = project(model.addr());
    let mut server = Server::start();
    let _worker = Worker::start(dir.path(), &server, free_port());
    let run = submit(dir.path(), &server);
    assert!(
        wait_for(Duration::from_secs(30), || model.count("slow") == 1).await,
        "the delegation never got under way: {:?}",
        model.counts()
    );
    server.restart();
    let outcome = finish(run).await;
    assert_eq!(outcome["status"], "completed", "{outcome}");
    assert_eq!(outcome["answer"], ANSWER);
    assert_eq!(model.count("lead:1"), 1, "{:?}", model.counts());
    assert_eq!(model.count("lead:2"), 1, "{:?}", model.counts());
    assert_hops_once(&events_of(&outcome), &outcome);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_are_the_local_runtimes_kinds_delegations_run_in_parallel_and_a_bad_address_says_how_to_write_one(
) {
    let model = Model::start().await;
    // Both children take a second: only calls started together overlap at the model.
    model.set_delay("fast", Duration::from_secs(1));
    model.set_delay("slow", Duration::from_secs(1));
    let dir = project(model.addr());
    let server = Server::start();
    let _worker = Worker::start(dir.path(), &server, free_port());
    let outcome = finish(submit(dir.path(), &server)).await;
    assert_eq!(outcome["answer"], ANSWER);
    assert_eq!(
        model.most_at_once(),
        2,
        "the two delegations did not run in parallel"
    );
    let events = events_of(&outcome);
    let hops = assert_hops_once(&events, &outcome);
    // Children link to the root hop, whose id `session.started` announced.
    let root = events
        .iter()
        .find(|e| matches!(e.kind, EventKind::SessionStarted { .. }))
        .and_then(|e| e.hop_id.clone())
        .unwrap();
    assert_eq!(hops[&root], "lead");
    for e in &events {
        if let EventKind::HopStarted { message_id, .. } = &e.kind {
            assert!(message_id.contains('-'), "{message_id}");
            if e.hop_id.as_deref() != Some(&root) {
                assert_eq!(e.parent_hop_id.as_deref(), Some(root.as_str()));
            }
        }
    }
    let bad = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .current_dir(dir.path())
        .args(["run", "lead", "x", "--on", "127.0.0.1:1"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("restate://HOST:PORT"));
}
