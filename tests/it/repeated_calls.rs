//! A model that repeats an identical tool call that failed gets a refusal that points back at
//! the first error instead of running it again (a small model otherwise loops on one refused call
//! for its whole budget); a successful read or write is not run again either, a write in between
//! clears the memory, and a `task` whose subagent completed is answered with a pointer to its
//! answer instead of a second hop.

use crate::support;

use serde_json::json;

use support::mock::{answer, call, Mock};
use switchboard::project::Project;
use switchboard::runtime::EventKind;

const LEAD: &str = "---\nname: lead\ndescription: \"Reads.\"\nmode: primary\ntools: {read: true, write: true}\n---\nYou are {{ agent }}.\n";

/// A project with the `lead` agent, and `thoughts/b.md` ("bee") when `with_b`.
fn lead_project(with_b: bool) -> (tempfile::TempDir, Project) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("agent")).expect("mkdir");
    std::fs::write(dir.path().join("agent/lead.md"), LEAD).expect("write");
    if with_b {
        std::fs::create_dir_all(dir.path().join("thoughts")).expect("mkdir");
        std::fs::write(dir.path().join("thoughts/b.md"), "bee\n").expect("write");
    }
    let project = Project::open(dir.path()).expect("project");
    (dir, project)
}

#[tokio::test]
async fn an_identical_failed_call_is_not_run_again_until_a_write() {
    let (_dir, project) = lead_project(true);
    let mock = Mock::start().await;
    let read = |id: &str, path: &str| call(id, "read", json!({"path": path}));
    mock.push(answer(
        "",
        vec![read("r", "thoughts/a.md"), read("b", "thoughts/b.md")],
    ))
    .push(answer(
        "",
        vec![read("r2", "thoughts/a.md"), read("b2", "thoughts/b.md")],
    ))
    .push(answer(
        "",
        vec![call(
            "w",
            "write",
            json!({"path": "thoughts/a.md", "content": "two\n"}),
        )],
    ))
    .push(answer("", vec![read("r3", "thoughts/a.md")]))
    .push(answer("done", vec![]));
    let (outcome, events) = support::wire::session(&project, &mock, "lead", "read a").await;
    assert_eq!(outcome.status, "completed", "{outcome:?}");
    let results: Vec<(String, bool, String)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolResult {
                call_id,
                is_error,
                output,
                ..
            } => Some((call_id.clone(), *is_error, output.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 6, "{results:?}");
    // a.md does not exist yet: the read fails, and the same read is not run again.
    assert!(results[0].1, "{results:?}");
    assert!(results[2].1, "{results:?}");
    assert!(
        results[2].2.contains("made this exact `read` call already"),
        "{results:?}"
    );
    // A read that succeeded is not run again either while no file changed: its result stands.
    assert!(!results[1].1 && results[1].2.contains("bee"), "{results:?}");
    assert!(
        results[3]
            .2
            .contains("call already (turn 1) and it succeeded"),
        "{results:?}"
    );
    // After the write, the failed read runs again and sees the file.
    assert!(!results[5].1 && results[5].2.contains("two"), "{results:?}");
}

/// A `task` refused before any subagent ran (here: no `subagent_type`, as Qwen2.5-Coder-1.5B
/// wrote 25 times in a row) is not run again either; the error says what the argument is.
#[tokio::test]
async fn a_task_call_refused_for_its_arguments_is_not_repeated() {
    let (_dir, project) = lead_project(false);
    let mock = Mock::start().await;
    let bad = |id: &str| call(id, "task", json!({"description": "Plan", "prompt": "p"}));
    mock.push(answer("", vec![bad("t1")]))
        .push(answer("", vec![bad("t2")]))
        .push(answer("done", vec![]));
    let (outcome, events) = support::wire::session(&project, &mock, "lead", "plan").await;
    assert_eq!(outcome.status, "completed", "{outcome:?}");
    let results: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolResult { output, .. } => Some(output.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(
        results[0].contains("`subagent_type`: the name of the agent"),
        "{results:?}"
    );
    assert!(
        results[1].contains("made this exact `task` call already"),
        "{results:?}"
    );
}

/// A model that makes only refused calls turn after turn is not left to do so until its
/// limits: after `STALLED_TURNS` such turns its next request offers no tools and asks for the
/// final answer, and the event log says why (`hop.steered`).
#[tokio::test]
async fn turns_of_refused_calls_only_end_in_a_turn_without_tools() {
    let (_dir, project) = lead_project(false);
    let mock = Mock::start().await;
    let missing = |id: &str| call(id, "read", json!({"path": "thoughts/none.md"}));
    mock.push(answer("", vec![missing("r1")]))
        .push(answer("", vec![missing("r2")]))
        .push(answer("", vec![missing("r3")]))
        .push(answer("I could not read thoughts/none.md.", vec![]));
    let (outcome, events) = support::wire::session(&project, &mock, "lead", "read it").await;
    assert_eq!(outcome.status, "completed", "{outcome:?}");
    let requests = mock.requests();
    assert_eq!(requests.len(), 4, "{requests:?}");
    // The first call ran and failed; the two repeats were refused; then no tools.
    for r in &requests[..3] {
        assert!(r.body["tools"].is_array(), "{:?}", r.body);
    }
    assert!(requests[3].callable_tools() == 0, "{:?}", requests[3].body);
    let last_user = requests[3].body["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
        .map(|m| m["content"].to_string())
        .unwrap_or_default();
    assert!(
        last_user.contains("Every call of your last 2 turns repeated one"),
        "{last_user}"
    );
    let steered: Vec<(String, u32)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::HopSteered { why, count } => Some((why.clone(), *count)),
            _ => None,
        })
        .collect();
    assert_eq!(steered, vec![("refused_calls".to_string(), 2)]);
}

/// The temperature each request was sent at, and what each `model.request` event logged as
/// `warmed`.
fn temperatures(
    mock: &Mock,
    events: &[switchboard::runtime::Event],
) -> (Vec<f64>, Vec<Option<f64>>) {
    let sent = mock
        .requests()
        .iter()
        .map(|r| r.body["temperature"].as_f64().unwrap_or(-1.0))
        .collect();
    let warmed = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ModelRequest { warmed, .. } => Some(*warmed),
            _ => None,
        })
        .collect();
    (sent, warmed)
}

/// A turn after refused repeats is sampled warmer than the agent's temperature (asked the same
/// way, a model gives the same call again), and the event log says at what temperature.
#[tokio::test]
async fn a_turn_after_refused_repeats_is_sampled_warmer() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("agent")).expect("mkdir");
    std::fs::write(
        dir.path().join("agent/lead.md"),
        LEAD.replace("mode: primary\n", "mode: primary\ntemperature: 0.2\n"),
    )
    .expect("write");
    let project = Project::open(dir.path()).expect("project");
    let mock = Mock::start().await;
    let missing = |id: &str| call(id, "read", json!({"path": "thoughts/none.md"}));
    mock.push(answer("", vec![missing("r1")]))
        .push(answer("", vec![missing("r2")]))
        .push(answer("", vec![missing("r3")]))
        .push(answer("I could not read thoughts/none.md.", vec![]));
    let (outcome, events) = support::wire::session(&project, &mock, "lead", "read it").await;
    assert_eq!(outcome.status, "completed", "{outcome:?}");
    let (sent, warmed) = temperatures(&mock, &events);
    // The failed first call ran (no refusal); then one and two turns of refused repeats.
    let near = |a: f64, b: f64| (a - b).abs() < 1e-9;
    assert_eq!(sent.len(), 4, "{sent:?}");
    assert!(near(sent[0], 0.2) && near(sent[1], 0.2), "{sent:?}");
    assert!(near(sent[2], 0.6) && near(sent[3], 0.8), "{sent:?}");
    assert_eq!(warmed[..2], [None, None], "{warmed:?}");
    assert!(warmed[2].is_some_and(|t| near(t, 0.6)), "{warmed:?}");
    assert!(warmed[3].is_some_and(|t| near(t, 0.8)), "{warmed:?}");
}

/// A final answer sent back word for word after a repair turn is sampled warmer on the turn
/// after it (asked to fix it, a small model at a low temperature sends the same text again), and
/// one that differs is not.
#[tokio::test]
async fn an_answer_sent_back_unchanged_after_a_repair_is_answered_warmer() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("agent")).expect("mkdir");
    std::fs::write(
        dir.path().join("agent/worker.md"),
        "---\nname: worker\ndescription: \"Answers in an envelope.\"\nmode: subagent\ntemperature: 0.1\ntools: {read: true}\ncontract:\n  extends: envelope\n  message_types: [WORKER_RESPONSE]\n  message_id_prefix: worker\n  max_repairs: 5\n---\nYou are {{ agent }}.\n",
    )
    .expect("write");
    let project = Project::open(dir.path()).expect("project");
    let mock = Mock::start().await;
    mock.push(answer("The file says hello.", vec![]))
        .push(answer("The file says hello.", vec![]))
        .push(answer("It says hello.", vec![]))
        .push(answer("It says hello, I think.", vec![]))
        .push(answer("It says hello, I think.", vec![]))
        .push(answer("", vec![call("r", "read", json!({"path": "a.md"}))]))
        .push(answer("It says hello, I think.", vec![]));
    let (outcome, events) = support::wire::session(&project, &mock, "worker", "read a").await;
    assert_eq!(outcome.status, "blocked", "{outcome:?}");
    let (sent, warmed) = temperatures(&mock, &events);
    let near = |a: f64, b: f64| (a - b).abs() < 1e-9;
    // The second answer repeats the first: the third turn is warmer. The third differs: the
    // fourth is back at the agent's temperature. The fifth repeats the fourth (a warmer sixth);
    // the sixth is a call, so the seventh is back at 0.1 though it repeats the fifth.
    let expected = [0.1, 0.1, 0.5, 0.1, 0.1, 0.5, 0.1];
    assert_eq!(sent.len(), expected.len(), "{sent:?}");
    for (got, want) in sent.iter().zip(expected) {
        assert!(near(*got, want), "{sent:?}");
    }
    assert_eq!(warmed.len(), expected.len(), "{warmed:?}");
    for (got, want) in warmed.iter().zip(expected) {
        assert_eq!(got.is_some(), want > 0.1, "{warmed:?}");
    }
}

/// One turn of refused calls between calls that run is not a stall.
#[tokio::test]
async fn a_refused_call_between_calls_that_run_is_no_stall() {
    let (_dir, project) = lead_project(true);
    let mock = Mock::start().await;
    let read = |id: &str, path: &str| call(id, "read", json!({"path": path}));
    mock.push(answer("", vec![read("r1", "thoughts/none.md")]))
        .push(answer("", vec![read("r2", "thoughts/none.md")]))
        .push(answer("", vec![read("b1", "thoughts/b.md")]))
        .push(answer("", vec![read("r3", "thoughts/none.md")]))
        .push(answer("done", vec![]));
    let (outcome, events) = support::wire::session(&project, &mock, "lead", "read").await;
    assert_eq!(outcome.status, "completed", "{outcome:?}");
    let requests = mock.requests();
    assert_eq!(requests.len(), 5, "{requests:?}");
    assert!(
        requests[4].body["tools"].is_array(),
        "{:?}",
        requests[4].body
    );
    assert!(!events
        .iter()
        .any(|e| matches!(e.kind, EventKind::HopSteered { .. })));
}

/// A project with a primary `boss` that may delegate (its frontmatter plus `boss_extra`) and a
/// subagent `helper`.
fn boss_and_helper(boss_extra: &str) -> (tempfile::TempDir, Project) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("agent")).expect("mkdir");
    std::fs::write(
        dir.path().join("agent/boss.md"),
        format!("---\nname: boss\ndescription: \"Delegates.\"\nmode: primary\ntools: {{task: true}}\n{boss_extra}---\nYou are {{{{ agent }}}}.\n"),
    )
    .expect("write");
    std::fs::write(
        dir.path().join("agent/helper.md"),
        "---\nname: helper\ndescription: \"Helps.\"\nmode: subagent\n---\nYou are {{ agent }}.\n",
    )
    .expect("write");
    let project = Project::open(dir.path()).expect("project");
    (dir, project)
}

/// A `task` whose subagent completed, asked again with the same prompt (the 1.5B planner copied
/// the runtime's `delegate_first` call; the 1.5B researcher changed only the description), is
/// not a second hop: the model is pointed at the answer it has. The same subagent with another
/// prompt still runs.
#[tokio::test]
async fn a_completed_task_asked_again_unchanged_is_not_a_second_hop() {
    let (_dir, project) = boss_and_helper("");
    let ask = |d: &str, p: &str| {
        format!(
            "{{name: task, arguments: {{subagent_type: helper, description: {d}, prompt: \"{p}\"}}}}"
        )
    };
    // The second call is the first's prompt under another description, spaced differently:
    // the 1.5B researcher sent one "Read …" prompt again that way.
    let script = format!(
        "agents:\n  boss:\n    - turns:\n        - tool_calls: [{}]\n        - tool_calls: [{}]\n        - tool_calls: [{}]\n        - content: done\n  helper:\n    - turns: [{{content: first answer}}]\n    - turns: [{{content: second answer}}]\n",
        ask("d", "read p1"),
        ask("another label", " read  p1 "),
        ask("d", "read p2")
    );
    let (outcome, events) = crate::support::scripted::run_agent(
        &project,
        switchboard::config::Config::default(),
        &script,
        "boss",
        "x",
    )
    .await;
    assert_eq!(
        outcome.outcome,
        switchboard::runtime::Outcome::Completed,
        "{outcome:?}"
    );
    let helper_hops = events
        .iter()
        .filter(|e| {
            matches!(e.kind, EventKind::HopStarted { .. }) && e.agent.as_deref() == Some("helper")
        })
        .count();
    assert_eq!(helper_hops, 2, "p1 once, p2 once");
    let results: Vec<(bool, String)> = events
        .iter()
        .filter(|e| e.agent.as_deref() == Some("boss"))
        .filter_map(|e| match &e.kind {
            EventKind::ToolResult {
                is_error, output, ..
            } => Some((*is_error, output.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 3, "{results:?}");
    assert!(results[0].1.contains("first answer"), "{results:?}");
    assert!(
        results[1].0
            && results[1]
                .1
                .contains("gave this same prompt to this subagent already"),
        "{results:?}"
    );
    assert!(results[2].1.contains("second answer"), "{results:?}");
}

/// The boss of [`boss_and_helper`] on workflow `w` (steps `ask`, with `ask_extra` in its
/// definition, then `end`), its turns `boss_turns` (YAML list items); the helper answers
/// "first answer". Returns the boss's events.
async fn workflow_boss(ask_extra: &str, boss_turns: &[&str]) -> Vec<switchboard::runtime::Event> {
    let (dir, project) = boss_and_helper("workflow: w\n");
    std::fs::create_dir_all(dir.path().join("workflow")).expect("mkdir");
    std::fs::write(
        dir.path().join("workflow/w.yaml"),
        format!("name: w\ndescription: \"Two steps.\"\nsteps:\n  - name: ask\n{ask_extra}    schema: {{type: object, required: [goal], properties: {{goal: {{type: string}}}}}}\n  - name: end\noutput: {{path: o.md, template: \"{{{{ ask.goal }}}}\"}}\n"),
    )
    .expect("write");
    let turns: String = boss_turns
        .iter()
        .map(|t| format!("        - {t}\n"))
        .collect();
    let script = format!(
        "agents:\n  boss:\n    - turns:\n{turns}  helper:\n    - turns: [{{content: first answer}}]\n"
    );
    let (_outcome, events) = crate::support::scripted::run_agent(
        &project,
        switchboard::config::Config::default(),
        &script,
        "boss",
        "x",
    )
    .await;
    events
        .into_iter()
        .filter(|e| e.agent.as_deref() == Some("boss"))
        .collect()
}

/// A workflow agent's repeated call is refused with the step call it owes written out: "do the
/// next step of your task" names nothing a small model acts on (the 1.5B planner sent its
/// locator's task three times and never reported `intent`).
#[tokio::test]
async fn a_workflow_agents_refused_repeat_names_the_step_it_owes() {
    let ask = "tool_calls: [{name: task, arguments: {subagent_type: helper, description: d, prompt: p1}}]";
    let done = "content: done";
    let events = workflow_boss("", &[ask, ask, done, done, done]).await;
    let refused = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolResult {
                is_error: true,
                output,
                ..
            } => Some(output.clone()),
            _ => None,
        })
        .next()
        .expect("the refused repeat");
    assert!(
        refused.contains("gave this same prompt to this subagent already")
            && refused.contains("Your workflow's next step is `ask`")
            && refused.contains(r#""name":"ask""#),
        "{refused}"
    );
}

/// A step that opens only some tools (`tools:`) refuses the others while it is owed, naming
/// the `step` call owed; once it is accepted, the next step's tools are open (the 1.5B planner,
/// owing `intent`, delegated to thoughts-analyzer instead).
#[tokio::test]
async fn a_step_that_opens_no_tools_refuses_a_task_until_it_is_reported() {
    let task = "tool_calls: [{name: task, arguments: {subagent_type: helper, description: d, prompt: p1}}]";
    let step = "tool_calls: [{name: step, arguments: {name: ask, result: {goal: g}}}]";
    let done = "content: done";
    let boss = workflow_boss("    tools: []\n", &[task, step, task, done, done, done]).await;
    let results: Vec<(bool, String)> = boss
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolResult {
                is_error, output, ..
            } => Some((*is_error, output.clone())),
            _ => None,
        })
        .collect();
    assert!(results.len() >= 3, "{results:?}");
    let (refused, why) = &results[0];
    assert!(
        *refused
            && why.contains("`task` is not open yet: your workflow's step `ask` comes first")
            && why.contains("it opens only `step`")
            && why.contains(r#""name":"ask""#),
        "{why}"
    );
    assert!(!results[1].0, "the step: {:?}", results[1]);
    assert!(
        !results[2].0 && results[2].1.contains("first answer"),
        "the task once `ask` is accepted: {:?}",
        results[2]
    );
    let steered = boss
        .iter()
        .filter(
            |e| matches!(&e.kind, EventKind::HopSteered { why, .. } if why == "workflow_step_owed"),
        )
        .count();
    assert_eq!(steered, 1);
}

/// The `step` tool a workflow agent is offered names the step owed at each turn, with that
/// step's result schema: written once per hop, it kept naming the first step after it was
/// accepted (the 1.5B planner, under a grammar written from it, reported `intent` nine times).
#[tokio::test]
async fn the_step_tool_names_the_step_owed_at_each_turn() {
    use crate::support::mock::{answer, call, Mock};
    let (dir, project) = boss_and_helper("workflow: w\n");
    std::fs::create_dir_all(dir.path().join("workflow")).expect("mkdir");
    std::fs::write(
        dir.path().join("workflow/w.yaml"),
        "name: w\ndescription: \"Two steps.\"\nsteps:\n  - name: ask\n    schema: {type: object, required: [goal], properties: {goal: {type: string}}}\n  - name: end\n    schema: {type: object, required: [summary], properties: {summary: {type: string}}}\noutput: {path: thoughts/o.md, template: \"{{ ask.goal }}\"}\n",
    )
    .expect("write");
    let project = switchboard::project::Project::open(project.root()).expect("project");
    let mock = Mock::start().await;
    mock.push(answer(
        "",
        vec![call(
            "c1",
            "step",
            serde_json::json!({"name": "ask", "result": {"goal": "g"}}),
        )],
    ))
    .push(answer("done", vec![]))
    .push(answer("done", vec![]))
    .push(answer("done", vec![]));
    let _ = crate::support::wire::session(&project, &mock, "boss", "x").await;
    let requests = mock.requests();
    let step = |i: usize| {
        requests[i].body["tools"]
            .as_array()
            .and_then(|tools| {
                tools
                    .iter()
                    .find(|t| t["function"]["name"] == "step")
                    .map(|t| t["function"]["parameters"].clone())
            })
            .unwrap_or_else(|| panic!("no step tool in request {i}: {}", requests[i].body))
    };
    let first = step(0);
    assert_eq!(
        first["properties"]["name"]["enum"],
        serde_json::json!(["ask"]),
        "{first}"
    );
    assert_eq!(
        first["properties"]["result"]["required"],
        serde_json::json!(["goal"])
    );
    let second = step(1);
    assert_eq!(
        second["properties"]["name"]["enum"],
        serde_json::json!(["end"]),
        "{second}"
    );
    assert_eq!(
        second["properties"]["result"]["required"],
        serde_json::json!(["summary"])
    );
}

/// A primary whose workflow step says CLARIFY asks the user its question and stops: the session
/// waits for `resume --answer` (NEEDS_INPUT) instead of going on. The 1.5B planner, left to go
/// on after its `intent` CLARIFY, reported the same CLARIFY again turn after turn.
#[tokio::test]
async fn a_primarys_clarify_step_asks_the_user_and_stops() {
    let (dir, project) = boss_and_helper("workflow: w\n");
    std::fs::create_dir_all(dir.path().join("workflow")).expect("mkdir");
    std::fs::write(
        dir.path().join("workflow/w.yaml"),
        "name: w\ndescription: \"Two steps.\"\nsteps:\n  - name: ask\n    decides: go\n    question: q\n    schema: {type: object, required: [go, goal], properties: {go: {enum: [PROCEED, CLARIFY]}, goal: {type: string}, q: {type: array, items: {type: string}}}}\n  - name: end\noutput: {path: o.md, template: \"{{ ask.goal }}\"}\n",
    )
    .expect("write");
    let clarify =
        "{name: step, arguments: {name: ask, result: {go: CLARIFY, q: [\"Which date format?\"]}}}";
    let script = format!(
        "agents:\n  boss:\n    - turns:\n        - tool_calls: [{clarify}]\n        - tool_calls: [{clarify}]\n        - content: done\n"
    );
    let (outcome, events) = crate::support::scripted::run_agent(
        &project,
        switchboard::config::Config::default(),
        &script,
        "boss",
        "x",
    )
    .await;
    assert_eq!(
        outcome.outcome,
        switchboard::runtime::Outcome::NeedsInput,
        "{outcome:?}"
    );
    assert!(
        format!("{outcome:?}").contains("Which date format?"),
        "{outcome:?}"
    );
    let requests = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::ModelRequest { .. }))
        .count();
    assert_eq!(requests, 1, "no turn after the question");
}

/// A subagent that only reads again what it read (its call succeeded) has what its tools can
/// give it: its next turn offers no tools and asks for the answer (`observed_again`), after one
/// such turn rather than two. A primary doing the same keeps its tools for another turn: it may
/// still owe a document.
#[tokio::test]
async fn a_subagent_that_reads_again_what_it_read_answers_next() {
    let (dir, project) = boss_and_helper("");
    std::fs::write(
        dir.path().join("agent/helper.md"),
        "---\nname: helper\ndescription: \"Helps.\"\nmode: subagent\ntools: {read: true, grep: true, write: false}\n---\nYou are {{ agent }}.\n",
    )
    .expect("write");
    std::fs::create_dir_all(dir.path().join("thoughts")).expect("mkdir");
    std::fs::write(dir.path().join("thoughts/b.md"), "bee\n").expect("write");
    let read = "{name: read, arguments: {path: thoughts/b.md}}";
    let script = format!(
        "agents:\n  boss:\n    - turns:\n        - tool_calls: [{{name: task, arguments: {{subagent_type: helper, description: d, prompt: p}}}}]\n        - content: done\n  helper:\n    - turns:\n        - tool_calls: [{read}]\n        - tool_calls: [{read}]\n        - content: it says bee\n"
    );
    let (outcome, events) = crate::support::scripted::run_agent(
        &project,
        switchboard::config::Config::default(),
        &script,
        "boss",
        "x",
    )
    .await;
    assert_eq!(
        outcome.outcome,
        switchboard::runtime::Outcome::Completed,
        "{outcome:?}"
    );
    let of = |agent: &str| -> Vec<&EventKind> {
        events
            .iter()
            .filter(|e| e.agent.as_deref() == Some(agent))
            .map(|e| &e.kind)
            .collect()
    };
    let offered: Vec<usize> = of("helper")
        .into_iter()
        .filter_map(|k| match k {
            EventKind::ModelRequest { tools, .. } => Some(*tools),
            _ => None,
        })
        .collect();
    assert_eq!(offered.len(), 3, "{offered:?}");
    assert!(offered[0] > 0 && offered[1] > 0, "{offered:?}");
    assert_eq!(offered[2], 0, "the turn after the repeat offers no tools");
    let steered: Vec<(String, u32)> = of("helper")
        .into_iter()
        .filter_map(|k| match k {
            EventKind::HopSteered { why, count } => Some((why.clone(), *count)),
            _ => None,
        })
        .collect();
    assert_eq!(steered, vec![("observed_again".to_string(), 1)]);
    let answered = of("boss").into_iter().any(|k| {
        matches!(k, EventKind::ToolResult { output, is_error: false, .. } if output.contains("it says bee"))
    });
    assert!(answered, "the helper's answer reached the boss");

    // The primary `lead` reading `thoughts/b.md` twice is offered its tools again.
    let (_dir, project) = lead_project(true);
    let mock = Mock::start().await;
    let read = |id: &str| call(id, "read", json!({"path": "thoughts/b.md"}));
    mock.push(answer("", vec![read("r1")]))
        .push(answer("", vec![read("r2")]))
        .push(answer("done", vec![]));
    let (outcome, events) = support::wire::session(&project, &mock, "lead", "read").await;
    assert_eq!(outcome.status, "completed", "{outcome:?}");
    let requests = mock.requests();
    assert_eq!(requests.len(), 3, "{requests:?}");
    assert!(
        requests[2].body["tools"].is_array(),
        "{:?}",
        requests[2].body
    );
    assert!(!events
        .iter()
        .any(|e| matches!(e.kind, EventKind::HopSteered { .. })));
}
