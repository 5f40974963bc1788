//! End-to-end sessions with the scripted provider, through the library API.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use switchboard::project::Project;
use switchboard::runtime::{Event, EventKind, RunOptions, SessionOutcome};

use crate::support::scripted;
use scripted::{project, run_with, FIXTURE};

fn fixture_script(name: &str) -> String {
    std::fs::read_to_string(Path::new(FIXTURE).join("scripts").join(name)).unwrap()
}

async fn run(project: &Project, script: &str) -> (SessionOutcome, Vec<Event>) {
    run_with(
        project,
        script,
        "research the runtime",
        RunOptions::default(),
    )
    .await
}

fn of_type<'a>(events: &'a [Event], ty: &str) -> Vec<&'a Event> {
    events.iter().filter(|e| e.kind.name() == ty).collect()
}

/// Tool results the given agent received, in order: (is_error, output).
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

/// Every event carries session/correlation ids; hop ids are unique and parent links form one tree.
fn assert_one_tree(events: &[Event], outcome: &SessionOutcome) {
    let mut parents: HashMap<String, Option<String>> = HashMap::new();
    for e in events {
        assert_eq!(e.session_id, outcome.session_id);
        assert_eq!(e.correlation_id, outcome.correlation_id);
        assert!(e.hop_id.is_some(), "{e:?}");
        assert!(e.agent.is_some(), "{e:?}");
        if let EventKind::HopStarted { .. } = e.kind {
            let id = e.hop_id.clone().unwrap();
            assert!(!parents.contains_key(&id) || parents[&id] == e.parent_hop_id);
            parents.insert(id, e.parent_hop_id.clone());
        }
    }
    let roots: Vec<_> = parents.iter().filter(|(_, p)| p.is_none()).collect();
    assert_eq!(roots.len(), 1, "one root: {parents:?}");
    for (id, p) in &parents {
        if let Some(p) = p {
            assert!(parents.contains_key(p), "{id}'s parent {p} is a hop");
        }
    }
}

#[tokio::test]
async fn researcher_locator_three_analyzers_report() {
    let (_d, p) = project();
    let (outcome, events) = run(&p, &fixture_script("research.yaml")).await;
    assert_eq!(outcome.status, "completed", "{outcome:?}");
    assert_eq!(outcome.written, vec!["thoughts/shared/research/report.md"]);
    assert!(p
        .root()
        .join("thoughts/shared/research/report.md")
        .is_file());
    assert_one_tree(&events, &outcome);

    let started = of_type(&events, "hop.started");
    let agents: Vec<_> = started.iter().map(|e| e.agent.clone().unwrap()).collect();
    assert_eq!(
        agents.iter().filter(|a| *a == "thoughts-analyzer").count(),
        3
    );
    assert_eq!(agents.len(), 5);
    assert_eq!(of_type(&events, "hop.completed").len(), 5);
    // Message ids: runtime-allocated, per prefix, unique.
    let ids: Vec<String> = started
        .iter()
        .map(|e| match &e.kind {
            EventKind::HopStarted { message_id, .. } => message_id.clone(),
            _ => unreachable!(),
        })
        .collect();
    let unique: HashSet<_> = ids.iter().collect();
    assert_eq!(unique.len(), 5);
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    for n in 1..=3 {
        assert!(ids.contains(&format!("thoughts-{today}-{n:03}")), "{ids:?}");
    }
    assert!(ids.contains(&format!("locator-{today}-001")));
    // The analyzers are the researcher's children, checked and conformant.
    let root = started[0].hop_id.clone();
    for e in started
        .iter()
        .filter(|e| e.agent.as_deref() == Some("thoughts-analyzer"))
    {
        assert_eq!(e.parent_hop_id, root);
    }
    let checks = of_type(&events, "contract.checked");
    assert_eq!(checks.len(), 4);
    assert!(checks.iter().all(|e| matches!(
        e.kind,
        EventKind::ContractChecked {
            conformant: true,
            ..
        }
    )));
    // Results return in call order: the researcher's 2nd..4th tool results are the analyses of
    // the three documents in the order it asked for them.
    let results = tool_results(&events, "researcher");
    assert!(results[1].1.contains("2026-01-10-event-log.md"));
    assert!(results[2].1.contains("2026-02-03-message-ids.md"));
    assert!(results[3].1.contains("2026-03-15-parallelism.md"));
    // Every required event type is there, and transcripts sit beside the log.
    for ty in [
        "session.started",
        "hop.started",
        "model.request",
        "model.response",
        "tool.call",
        "tool.result",
        "contract.checked",
        "hop.completed",
        "session.completed",
    ] {
        assert!(!of_type(&events, ty).is_empty(), "{ty}");
    }
    let transcripts = outcome.events.parent().unwrap().join("transcripts.jsonl");
    assert_eq!(
        std::fs::read_to_string(transcripts)
            .unwrap()
            .lines()
            .count(),
        5
    );
}

fn researcher_calls(calls: &str, then: &str) -> String {
    format!("agents:\n  researcher:\n    - turns:\n        - tool_calls:\n{calls}        - content: \"{then}\"\n")
}

fn task(agent: &str, prompt: &str) -> String {
    format!("            - {{name: task, arguments: {{subagent_type: {agent}, description: d, prompt: \"{prompt}\"}}}}\n")
}

#[tokio::test]
async fn parallel_subagents_overlap_and_answer_in_call_order() {
    let (_d, p) = project();
    let mut script = researcher_calls(
        &[
            task("ping", "slow"),
            task("ping", "medium"),
            task("ping", "fast"),
        ]
        .concat(),
        "done",
    );
    script.push_str(
        "  ping:\n    - {when: slow, turns: [{delay_ms: 300, content: slow answer}]}\n    - {when: medium, turns: [{delay_ms: 200, content: medium answer}]}\n    - {when: fast, turns: [{delay_ms: 100, content: fast answer}]}\n",
    );
    let (outcome, events) = run(&p, &script).await;
    assert_eq!(outcome.status, "completed");
    // Concurrent: all three hops started before the first of them (the fast one) answered.
    // Event order, not wall time, so a loaded machine cannot fail it.
    let ping: Vec<&str> = events
        .iter()
        .filter(|e| e.agent.as_deref() == Some("ping"))
        .filter_map(|e| match e.kind {
            switchboard::runtime::EventKind::HopStarted { .. } => Some("started"),
            switchboard::runtime::EventKind::HopCompleted { .. } => Some("completed"),
            _ => None,
        })
        .collect();
    assert_eq!(
        ping,
        [
            "started",
            "started",
            "started",
            "completed",
            "completed",
            "completed"
        ],
        "ran concurrently"
    );
    let results: Vec<String> = tool_results(&events, "researcher")
        .into_iter()
        .map(|r| r.1)
        .collect();
    assert_eq!(results, ["slow answer", "medium answer", "fast answer"]);
    assert_one_tree(&events, &outcome);
}

#[tokio::test]
async fn max_parallel_bounds_concurrency() {
    let (_d, p) = project();
    let calls: String = (0..4).map(|i| task("ping", &format!("job {i}"))).collect();
    let mut script = researcher_calls(&calls, "done");
    script.push_str("  ping:\n    - {repeat: true, turns: [{delay_ms: 100, content: ok}]}\n");
    let clock = std::time::Instant::now();
    let options = RunOptions {
        max_parallel: 2,
        ..RunOptions::default()
    };
    let (outcome, _) = run_with(&p, &script, "x", options).await;
    assert_eq!(outcome.status, "completed");
    assert!(clock.elapsed().as_millis() >= 200, "{:?}", clock.elapsed());
}

#[tokio::test]
async fn depth_over_the_limit_is_refused() {
    let (_d, p) = project();
    let mut script = researcher_calls(&task("ping", "go deeper"), "done");
    script.push_str("  ping:\n    - turns:\n        - tool_calls:\n");
    script.push_str(&task("pong", "deeper still"));
    script.push_str("        - content: ping done\n");
    let options = RunOptions {
        max_depth: 1,
        ..RunOptions::default()
    };
    let (outcome, events) = run_with(&p, &script, "x", options).await;
    assert_eq!(outcome.status, "completed");
    let r = tool_results(&events, "ping");
    assert!(r[0].0, "{r:?}");
    assert!(r[0].1.contains("depth 2, over the limit of 1"), "{r:?}");
    assert!(of_type(&events, "hop.started")
        .iter()
        .all(|e| e.agent.as_deref() != Some("pong")));
}

#[tokio::test]
async fn a_cycle_is_refused() {
    let (_d, p) = project();
    let mut script = researcher_calls(&task("ping", "a"), "done");
    script.push_str("  ping:\n    - turns:\n        - tool_calls:\n");
    script.push_str(&task("pong", "b"));
    script.push_str("        - content: ping done\n  pong:\n    - turns:\n        - tool_calls:\n");
    script.push_str(&task("ping", "c"));
    script.push_str("        - content: pong done\n");
    let (outcome, events) = run(&p, &script).await;
    assert_eq!(outcome.status, "completed");
    let r = tool_results(&events, "pong");
    assert!(r[0].0 && r[0].1.contains("cycle"), "{r:?}");
    assert!(r[0].1.contains("researcher → ping → pong → ping"), "{r:?}");
}

#[tokio::test]
async fn refusals_say_why() {
    let (_d, p) = project();
    let calls = [
        task("codebase-analyzer", "x"),
        task("planner", "x"),
        task("nobody", "x"),
    ]
    .concat();
    let (outcome, events) = run(&p, &researcher_calls(&calls, "done")).await;
    assert_eq!(outcome.status, "completed");
    let r = tool_results(&events, "researcher");
    assert!(r.iter().all(|(err, _)| *err), "{r:?}");
    assert!(
        r[0].1
            .contains("permission.task denies `codebase-analyzer`"),
        "{r:?}"
    );
    assert!(r[1].1.contains("primary agent"), "{r:?}");
    assert!(r[2].1.contains("unknown agent `nobody`"), "{r:?}");
    assert!(
        r[2].1.contains("thoughts-analyzer"),
        "lists callable agents: {r:?}"
    );
    assert_eq!(of_type(&events, "hop.started").len(), 1);
}

#[tokio::test]
async fn a_subagent_without_task_is_refused_the_tool() {
    let (_d, p) = project();
    let mut script = researcher_calls(&task("thoughts-locator", "find"), "done");
    script.push_str("  thoughts-locator:\n    - turns:\n        - tool_calls:\n");
    script.push_str(&task("thoughts-analyzer", "analyse"));
    script.push_str("        - tool_calls: [{name: read, arguments: {path: thoughts}}]\n");
    script.push_str("        - content: no envelope\n");
    let (_outcome, events) = run(&p, &script).await;
    let r = tool_results(&events, "thoughts-locator");
    assert_eq!(
        r[0],
        (
            true,
            "tool `task` is not granted to agent `thoughts-locator`".to_string()
        )
    );
    assert!(r[1].0 && r[1].1.contains("`read` is not granted"), "{r:?}");
}

/// A locator envelope whose message id is `id` (`{{ message_id }}` for the right one).
fn locator_answer(id: &str) -> String {
    format!(
        "        - content: |\n            ---\n            message_id: {id}\n            correlation_id: {{{{ correlation_id }}}}\n            timestamp: {{{{ timestamp }}}}\n            message_type: LOCATOR_RESPONSE\n            ---\n\n            <thinking>\n            Searched.\n            </thinking>\n\n            <answer>\n            No documents under thoughts/ match x.\n            </answer>\n"
    )
}

#[tokio::test]
async fn a_violation_is_repaired() {
    let (_d, p) = project();
    let mut script = researcher_calls(&task("thoughts-locator", "find"), "done");
    script.push_str("  thoughts-locator:\n    - turns:\n");
    script.push_str(&locator_answer("locator-1999-01-01-001"));
    script.push_str(&locator_answer("{{ message_id }}"));
    let (outcome, events) = run(&p, &script).await;
    assert_eq!(outcome.status, "completed");
    let checks: Vec<bool> = of_type(&events, "contract.checked")
        .iter()
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
    assert_eq!(checks, [false, true]);
    assert_eq!(of_type(&events, "hop.repair").len(), 1);
    let r = tool_results(&events, "researcher");
    assert!(!r[0].0 && r[0].1.contains("LOCATOR_RESPONSE"), "{r:?}");
}

#[tokio::test]
async fn a_persistent_violation_fails_the_hop() {
    let (_d, p) = project();
    let mut script = researcher_calls(&task("thoughts-locator", "find"), "done");
    script.push_str("  thoughts-locator:\n    - turns:\n");
    for _ in 0..3 {
        script.push_str(&locator_answer("locator-1999-01-01-001"));
    }
    let (_outcome, events) = run(&p, &script).await;
    assert_eq!(of_type(&events, "hop.repair").len(), 2, "max_repairs 2");
    let failed = of_type(&events, "hop.failed");
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].agent.as_deref(), Some("thoughts-locator"));
    let r = tool_results(&events, "researcher");
    assert!(r[0].0, "the caller gets a tool error: {r:?}");
    assert!(r[0].1.contains("violates contract"), "{r:?}");
    assert!(
        !r[0].1.contains("No documents"),
        "never an unchecked answer: {r:?}"
    );
}

#[tokio::test]
async fn a_persistent_violation_is_marked_when_declared() {
    let (_d, p) = project();
    let mut script = researcher_calls(&task("marker", "answer"), "done");
    script.push_str(
        "  marker:\n    - turns: [{content: no envelope at all}, {content: still none}]\n",
    );
    let (_outcome, events) = run(&p, &script).await;
    assert_eq!(of_type(&events, "hop.repair").len(), 1, "max_repairs 1");
    let done = of_type(&events, "hop.completed");
    assert!(done.iter().any(|e| matches!(
        &e.kind,
        EventKind::HopCompleted {
            status: switchboard::runtime::HopStatus::NonConformant,
            ..
        }
    )));
    let r = tool_results(&events, "researcher");
    assert!(!r[0].0 && r[0].1.starts_with("[NON-CONFORMANT"), "{r:?}");
    assert!(r[0].1.contains("still none"), "{r:?}");
}

#[tokio::test]
async fn a_script_that_runs_out_fails_clearly() {
    let (_d, p) = project();
    let script =
        researcher_calls(&task("ping", "x"), "done").replace("        - content: \"done\"\n", "");
    let script = format!("{script}  ping:\n    - turns: [{{content: ok}}]\n");
    let (outcome, _) = run(&p, &script).await;
    assert_eq!(outcome.status, "failed");
    let err = outcome.error.unwrap();
    assert!(
        err.contains("ran out for agent `researcher` at turn 2"),
        "{err}"
    );
}

#[tokio::test]
async fn the_token_budget_nudges_then_stops_partial() {
    let (_d, p) = project();
    std::fs::write(
        p.root().join("agent/budgeted.md"),
        "---\nname: budgeted\ndescription: b\nmode: subagent\ntools: {read: true}\nbudget: {tokens: 100}\n---\nYou are {{ agent }}.\n",
    )
    .unwrap();
    let perm = "permission:\n  task: {\"*\": deny, \"thoughts-*\": allow, \"ping\": allow, \"marker\": allow, \"planner\": allow, budgeted: allow}";
    let researcher = std::fs::read_to_string(p.root().join("agent/researcher.md")).unwrap();
    let researcher = researcher.replace(
        "permission:\n  task: {\"*\": deny, \"thoughts-*\": allow, \"ping\": allow, \"marker\": allow, \"planner\": allow}",
        perm,
    );
    std::fs::write(p.root().join("agent/researcher.md"), researcher).unwrap();
    let mut script = researcher_calls(&task("budgeted", "work"), "done");
    script.push_str(
        "  budgeted:\n    - turns:\n        - {content: step one, tool_calls: [{name: read, arguments: {path: agent/ping.md}}], usage: {input_tokens: 60, output_tokens: 5}}\n        - {content: step two, tool_calls: [{name: read, arguments: {path: agent/ping.md}}], usage: {input_tokens: 40, output_tokens: 5}}\n",
    );
    let (_outcome, events) = run(&p, &script).await;
    let budget: Vec<String> = of_type(&events, "hop.budget")
        .iter()
        .map(|e| match &e.kind {
            EventKind::HopBudget { action, .. } => action.clone(),
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(budget, ["wrap_up", "stop"]);
    let r = tool_results(&events, "researcher");
    assert!(r[0].1.starts_with("[PARTIAL"), "{r:?}");
    assert!(r[0].1.contains("step two"), "{r:?}");
}

#[tokio::test]
async fn message_ids_are_unique_across_concurrent_sessions() {
    let (_d, p) = project();
    let script = fixture_script("research.yaml");
    let runs = (0..3).map(|_| {
        let p = p.clone();
        let script = script.clone();
        tokio::spawn(async move { run(&p, &script).await })
    });
    let mut ids = HashSet::new();
    for r in runs {
        let (outcome, events) = r.await.unwrap();
        assert_eq!(outcome.status, "completed");
        for e in of_type(&events, "hop.started") {
            if let EventKind::HopStarted { message_id, .. } = &e.kind {
                assert!(ids.insert(message_id.clone()), "duplicate {message_id}");
            }
        }
    }
    assert_eq!(ids.len(), 15);
}

/// Sixteen delegations of one turn run at once in one process and share the session's id
/// allocator; every hop must still get its own message id. Several worker threads, as `run` has.
#[tokio::test(flavor = "multi_thread", worker_threads = 8)]
async fn sixteen_parallel_delegations_get_unique_message_ids() {
    for round in 0..40 {
        let (_d, p) = project();
        let calls: String = (0..16).map(|i| task("ping", &format!("job {i}"))).collect();
        let mut script = researcher_calls(&calls, "done");
        script.push_str("  ping:\n    - {repeat: true, turns: [{content: ok}]}\n");
        let options = RunOptions {
            max_parallel: 16,
            ..RunOptions::default()
        };
        let (outcome, events) = run_with(&p, &script, "x", options).await;
        assert_eq!(outcome.status, "completed", "{outcome:?}");
        let ids: Vec<String> = of_type(&events, "hop.started")
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::HopStarted { message_id, .. } => Some(message_id.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(ids.len(), 17, "the researcher and 16 pings");
        let unique: HashSet<_> = ids.iter().collect();
        assert_eq!(
            unique.len(),
            17,
            "round {round}: duplicate message ids {ids:?}"
        );
    }
}
