//! A primary that owes a document (`deliver:`) does not end COMPLETED without it: a final answer
//! with no matching file, or with too little verified evidence, gets repair turns that say what
//! is missing, then the hop ends PARTIAL. Over the wire, against the mock on 127.0.0.1.

use crate::support;

use serde_json::json;

use support::mock::{answer, call, Mock};
use switchboard::project::Project;
use switchboard::runtime::{Event, EventKind, SessionOutcome};

const LEAD: &str = "---\nname: lead\ndescription: \"Writes a report.\"\nmode: primary\ntools: {read: true, write: true}\ndeliver: {write: \"thoughts/reports/*.md\", evidence: 1}\n---\nYou are {{ agent }}. Write a report under thoughts/reports/.\n";

fn project() -> (tempfile::TempDir, Project) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("agent")).expect("mkdir");
    std::fs::create_dir_all(dir.path().join("thoughts/reports")).expect("mkdir");
    std::fs::write(dir.path().join("agent/lead.md"), LEAD).expect("write");
    std::fs::write(dir.path().join("a.md"), "hello\nworld\n").expect("write");
    let p = Project::open(dir.path()).expect("project");
    (dir, p)
}

/// The analyst's plan for the YAML question: the `doc` source only.
const PLAN: &str = r#"{"intent": "yaml_parser_decision", "request_type": "KNOWLEDGE_QA", "track": "QUALITY", "required_sources": ["doc"], "missing_info_questions": [], "expected_output_schema": "answer_v1_markdown"}"#;

async fn session(project: &Project, mock: &Mock) -> (SessionOutcome, Vec<Event>) {
    support::wire::session(project, mock, "lead", "What is in a.md?").await
}

fn checks(events: &[Event]) -> Vec<(String, u64)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::DeliverChecked {
                outcome, verified, ..
            } => Some((outcome.clone(), *verified)),
            _ => None,
        })
        .collect()
}

/// The last user message of request `i`.
fn last_user(mock: &Mock, i: usize) -> String {
    let body = &mock.requests()[i].body;
    body["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
        .map(|m| m["content"].to_string())
        .unwrap_or_default()
}

/// A `write` of `content` to `thoughts/reports/a.md`, call `id`.
fn write(id: &str, content: &str) -> support::mock::Call {
    call(
        id,
        "write",
        json!({"path": "thoughts/reports/a.md", "content": content}),
    )
}

const REPORT: &str = "# a.md\n\n- **Evidence**: `a.md:1`\n- **Excerpt**:\n  ```\n  hello\n  ```\n";

#[tokio::test]
async fn an_answer_without_the_document_is_repaired_then_partial_never_completed() {
    let (_dir, project) = project();
    let mock = Mock::start().await;
    // A delegation written as text, naming the subagent as if it were a tool: no offered tool,
    // so nothing runs, and the answer owes the document.
    let as_text =
        "```json\n{\"name\": \"codebase-analyzer\", \"arguments\": {\"prompt\": \"p\"}}\n```";
    mock.push(answer(as_text, vec![]))
        .push(answer("a.md says hello.", vec![]))
        .push(answer("a.md says hello.", vec![]));
    let (outcome, events) = session(&project, &mock).await;
    let kinds: Vec<_> = events.iter().map(|e| e.kind.name()).collect();
    assert_eq!(outcome.status, "partial", "{outcome:?} {kinds:?}");
    assert_eq!(
        checks(&events),
        [
            ("repair".to_string(), 0),
            ("repair".to_string(), 0),
            ("partial".to_string(), 0)
        ]
    );
    assert_eq!(mock.requests().len(), 3);
    let first = last_user(&mock, 1);
    assert!(first.contains("written as text"), "{first}");
    assert!(first.contains("thoughts/reports/*.md"), "{first}");
    assert!(first.contains("**Excerpt**"), "{first}");
    let second = last_user(&mock, 2);
    assert!(!second.contains("written as text"), "{second}");
}

/// Once the document owed as a file is written and holds up, the next turn offers no tools and
/// says where it is: the 1.5B planner, its plan rendered, reported steps to a closed workflow
/// until its steps ran out. A written document that does not hold up leaves the tools offered.
#[tokio::test]
async fn a_written_document_that_holds_up_leaves_only_the_answer() {
    let (_dir, project) = project();
    let mock = Mock::start().await;
    let unverified = REPORT.replace("  hello\n", "  hullo\n");
    mock.push(answer("", vec![write("w1", &unverified)]))
        .push(answer("", vec![write("w2", REPORT)]))
        .push(answer("The report is at thoughts/reports/a.md.", vec![]));
    let (outcome, events) = session(&project, &mock).await;
    assert_eq!(outcome.status, "completed", "{outcome:?}");
    let requests = mock.requests();
    assert_eq!(requests.len(), 3, "{requests:?}");
    assert!(
        requests[1].body["tools"].is_array(),
        "{:?}",
        requests[1].body
    );
    assert_eq!(requests[2].callable_tools(), 0, "{:?}", requests[2].body);
    // Held back, the tools are still described, so the prompt opens as before.
    assert_eq!(requests[2].body["tools"], requests[1].body["tools"]);
    let note = last_user(&mock, 2);
    assert!(
        note.contains("Your document is written: `thoughts/reports/a.md`"),
        "{note}"
    );
    let steered: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::HopSteered { why, .. } => Some(why.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(steered, ["delivered"]);
    assert_eq!(checks(&events), [("met".to_string(), 1)]);
}

/// Another session's report at the name the agent writes is kept: the write goes to the next
/// free name, which the tool result and the session's written files name. After a `read` of it,
/// the same write replaces it, as does a write of the session's own file.
#[tokio::test]
async fn a_write_over_a_file_the_hop_has_not_read_keeps_it() {
    let (dir, project) = project();
    let old = dir.path().join("thoughts/reports/a.md");
    std::fs::write(&old, "another session's report\n").expect("write");
    let mock = Mock::start().await;
    // Drafts whose excerpt does not verify, so the tools stay offered until the third write.
    let (draft, second) = (
        REPORT.replace("  hello\n", "  hullo\n"),
        REPORT.replace("  hello\n", "  hellp\n"),
    );
    let read = call("r1", "read", json!({"path": "thoughts/reports/a.md"}));
    mock.push(answer("", vec![write("w1", &draft)]))
        .push(answer("", vec![write("w2", &second)]))
        .push(answer("", vec![read]))
        .push(answer("", vec![write("w3", REPORT)]))
        .push(answer("Done.", vec![]));
    let (_outcome, events) = session(&project, &mock).await;
    let results: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolResult { tool, output, .. } if tool == "write" => Some(output.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 3, "{results:?}");
    assert!(
        results[0].contains("`thoughts/reports/a-2.md`"),
        "{results:?}"
    );
    // The session's own file is replaced in place, not numbered again.
    assert!(results[1].contains("wrote"), "{results:?}");
    assert!(!dir.path().join("thoughts/reports/a-3.md").exists());
    let on_disk = |name: &str| std::fs::read_to_string(dir.path().join(name)).expect("read");
    assert_eq!(on_disk("thoughts/reports/a-2.md"), second);
    // Read first, the other report is the agent's to replace.
    assert!(results[2].starts_with("wrote"), "{results:?}");
    assert_eq!(on_disk("thoughts/reports/a.md"), REPORT);
}

/// Qwen2.5-Coder-1.5B as the researcher: `## Findings` with its analyzer's verified item, after
/// a `task(…)` line written as text, and no frontmatter. The sections are saved under the
/// frontmatter the runtime knows, and the session completes with that report.
/// [`project`] with the lead owing its report as its answer (`from_answer: true`).
fn from_answer_project() -> (tempfile::TempDir, Project) {
    let (dir, project) = project();
    std::fs::write(
        dir.path().join("agent/lead.md"),
        LEAD.replace("evidence: 1}", "evidence: 1, from_answer: true}"),
    )
    .expect("write");
    (dir, project)
}

/// The text of the file the runtime saved from the answer (`deliver.saved`) under `root`.
fn saved_report(root: &std::path::Path, events: &[Event]) -> String {
    let saved = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::DeliverSaved { path, .. } => Some(path.clone()),
            _ => None,
        })
        .expect("deliver.saved");
    std::fs::read_to_string(root.join(saved)).expect("report")
}

#[tokio::test]
async fn sections_answered_without_frontmatter_are_saved_as_the_report() {
    let (dir, project) = from_answer_project();
    let mock = Mock::start().await;
    let sections = "## Findings\n\n### a.md greets\n- **Evidence**: `a.md:1`\n- **Excerpt**:\n  ```\n  hello\n  ```\n";
    mock.push(answer(
        &format!("```\ntask({{\"description\":\"Report\",\"prompt\":\"p\"}})\n\n{sections}```\n"),
        vec![],
    ));
    let (outcome, events) = session(&project, &mock).await;
    assert_eq!(outcome.status, "completed", "{outcome:?}");
    assert_eq!(checks(&events), [("met".to_string(), 1)]);
    assert!(events.iter().any(|e| matches!(&e.kind,
        EventKind::HopSteered { why, .. } if why == "report_frontmatter_added")));
    let report = saved_report(dir.path(), &events);
    assert!(
        report.starts_with("---\ndate: ") && report.contains("topic: \"What is in a.md?\""),
        "{report}"
    );
    assert!(report.contains(sections.trim_end()), "{report}");
    assert!(!report.contains("task("), "{report}");
}

/// A report answered with its frontmatter left open (fields, a blank line, the title) is saved
/// with the frontmatter closed after its fields.
#[tokio::test]
async fn a_report_whose_frontmatter_was_left_open_is_saved_closed() {
    let (dir, project) = from_answer_project();
    let mock = Mock::start().await;
    let open = format!("---\ndate: 2026-11-28\ntopic: \"a.md\"\n\n{REPORT}");
    mock.push(answer(&format!("```\n{open}```\n"), vec![]));
    let (outcome, events) = session(&project, &mock).await;
    assert_eq!(outcome.status, "completed", "{outcome:?}");
    assert!(events.iter().any(|e| matches!(&e.kind,
        EventKind::HopSteered { why, .. } if why == "report_frontmatter_closed")));
    let report = saved_report(dir.path(), &events);
    assert_eq!(
        report,
        format!("---\ndate: 2026-11-28\ntopic: \"a.md\"\n---\n\n{REPORT}")
    );
}

#[tokio::test]
async fn a_report_with_unverified_evidence_is_named_in_the_repair_and_a_fixed_one_completes() {
    let (dir, project) = project();
    let mock = Mock::start().await;
    let wrong = REPORT.replace("  hello\n", "  goodbye\n");
    mock.push(answer(
        "",
        vec![call(
            "w1",
            "write",
            json!({"path": "thoughts/reports/a.md", "content": wrong}),
        )],
    ))
    .push(answer("Report: thoughts/reports/a.md", vec![]))
    .push(answer(
        "",
        vec![call(
            "w2",
            "write",
            json!({"path": "thoughts/reports/a.md", "content": REPORT}),
        )],
    ))
    .push(answer("Report: thoughts/reports/a.md", vec![]));
    let (outcome, events) = session(&project, &mock).await;
    assert_eq!(outcome.status, "completed", "{outcome:?}");
    assert_eq!(
        checks(&events),
        [("repair".to_string(), 0), ("met".to_string(), 1)]
    );
    let repair = last_user(&mock, 2);
    assert!(repair.contains("thoughts/reports/a.md"), "{repair}");
    assert!(
        repair.contains("0 verified Evidence item(s) of 1"),
        "{repair}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("thoughts/reports/a.md")).expect("report"),
        REPORT
    );
}

/// The shipped planner (with the shipped `plan` workflow) on the `--quiet` request, its model
/// answering `replies` in turn.
/// The shipped planner on `replies`, all of them its own turns: its `delegate_first` line is
/// taken out (see `the_planner_hands_its_task_to_the_codebase_locator_first` for it).
async fn planner_session(replies: Vec<support::mock::Reply>) -> (SessionOutcome, Vec<Event>) {
    let (_dir, outcome, events) = planner_session_with(replies, false).await;
    (outcome, events)
}

/// The session's project folder comes back too, for reading its transcripts.
async fn planner_session_with(
    replies: Vec<support::mock::Reply>,
    delegate_first: bool,
) -> (tempfile::TempDir, SessionOutcome, Vec<Event>) {
    planner_session_in(replies, delegate_first, &[]).await
}

/// [`planner_session_with`] in a project that also holds `files` (path, text); the session's
/// correlation id is `corr-1`, so a scripted subagent answer can carry it.
async fn planner_session_in(
    replies: Vec<support::mock::Reply>,
    delegate_first: bool,
    files: &[(&str, &str)],
) -> (tempfile::TempDir, SessionOutcome, Vec<Event>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    support::fs::copy_tree(&repo.join("agent"), &dir.path().join("agent"));
    support::fs::copy_tree(&repo.join("workflow"), &dir.path().join("workflow"));
    for (path, text) in files {
        let at = dir.path().join(path);
        std::fs::create_dir_all(at.parent().expect("a folder")).expect("mkdir");
        std::fs::write(at, text).expect("write");
    }
    if !delegate_first {
        let planner = dir.path().join("agent/planner.md");
        let text = std::fs::read_to_string(&planner).expect("planner.md");
        let without = text.replace("delegate_first: codebase-locator\n", "");
        assert_ne!(without, text, "the shipped planner declares delegate_first");
        std::fs::write(&planner, without).expect("write planner.md");
    }
    let project = Project::open(dir.path()).expect("project");
    let mock = Mock::start().await;
    for reply in replies {
        mock.push(reply);
    }
    let (outcome, events) = support::wire::session_with(
        &project,
        &mock,
        "planner",
        "Plan adding a --quiet flag to the run command.",
        switchboard::runtime::RunOptions {
            correlation_id: Some("corr-1".into()),
            ..Default::default()
        },
    )
    .await;
    (dir, outcome, events)
}

/// `delegate_first: codebase-locator`: before the planner's first turn the runtime hands the
/// task, word for word, to the locator (a real `task` call and child hop), and the planner's
/// first request carries the locator's answer with its task, not as a call of its own (the 1.5B
/// planner made the runtime's call again, word for word, turn after turn).
#[tokio::test]
async fn the_planner_hands_its_task_to_the_codebase_locator_first() {
    let mut replies = vec![answer("The locator found src/cli/run.rs.", vec![])];
    replies.extend((0..6).map(|_| answer("I could not plan it.", vec![])));
    let (_dir, outcome, events) = planner_session_with(replies, true).await;
    // The locator's answer goes to the planner with the step its workflow starts with.
    let transcripts = std::fs::read_to_string(
        std::path::Path::new(&outcome.events).with_file_name("transcripts.jsonl"),
    )
    .expect("transcripts");
    let planner: serde_json::Value = transcripts
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|t| {
            t["agent_system_prompt"]
                .as_str()
                .is_some_and(|p| p.contains("# Planner"))
        })
        .expect("the planner's transcript");
    let messages = planner["messages"].as_array().expect("messages");
    let task = messages
        .iter()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .expect("the task");
    let locator = task
        .find("[runtime] The runtime gave your task to `codebase-locator` first")
        .expect("the locator's answer with the task");
    let owed = task
        .find("[runtime] Your workflow starts with its step `intent`")
        .expect("the step owed");
    assert!(
        locator < owed && task.contains(r#""name":"intent""#),
        "{task}"
    );
    // Here the scripted locator answers without a call, so the result is its failure.
    assert!(
        task[locator..owed].contains("it failed:\n```markdown\nsubagent `codebase-locator`"),
        "{task}"
    );
    assert!(
        !messages
            .iter()
            .any(|m| m["tool_calls"].to_string().contains("delegate_first")),
        "no call of the planner's own: {messages:?}"
    );
    let first_call = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::ToolCall {
                call_id,
                tool,
                arguments,
            } if e.agent.as_deref() == Some("planner") => {
                Some((call_id.clone(), tool.clone(), arguments.clone()))
            }
            _ => None,
        })
        .expect("a call of the planner");
    assert_eq!(first_call.0, "delegate_first");
    assert_eq!(first_call.1, "task");
    // The log holds the call's result.
    let logged =
        support::wire::tool_output(&events, "delegate_first").expect("the delegate_first result");
    assert!(logged.contains("subagent `codebase-locator`"), "{logged}");
    assert_eq!(first_call.2["subagent_type"], "codebase-locator");
    assert_eq!(
        first_call.2["prompt"],
        "Plan adding a --quiet flag to the run command."
    );
    let locator_hops = events
        .iter()
        .filter(|e| {
            matches!(e.kind, EventKind::HopStarted { .. })
                && e.agent.as_deref() == Some("codebase-locator")
        })
        .count();
    assert_eq!(locator_hops, 1);
    // The planner's first model request comes after the locator's last event.
    let of = |agent: &'static str| {
        events
            .iter()
            .enumerate()
            .filter(move |(_, e)| e.agent.as_deref() == Some(agent))
    };
    let locator_last = of("codebase-locator")
        .map(|(i, _)| i)
        .max()
        .expect("locator");
    let planner_first = of("planner")
        .find(|(_, e)| e.kind.name() == "model.request")
        .map(|(i, _)| i)
        .expect("the planner asked its model");
    assert!(locator_last < planner_first);
}

/// Lint names a `delegate_first:` the runtime would refuse; the shipped planner's is allowed.
#[test]
fn lint_reports_a_delegate_first_the_runtime_would_refuse() {
    use switchboard::agent::{load, LoadOptions};
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    support::fs::copy_tree(&repo.join("agent"), &dir.path().join("agent"));
    let project = Project::open(dir.path()).expect("project");
    let codes = |project: &Project| -> Vec<String> {
        switchboard::lint::lint(&load(project, &LoadOptions::default()))
            .into_iter()
            .filter(|d| d.code == "delegation/delegate-first-refused")
            .map(|d| d.message)
            .collect()
    };
    assert!(codes(&project).is_empty(), "{:?}", codes(&project));
    let planner = dir.path().join("agent/planner.md");
    let text = std::fs::read_to_string(&planner).expect("planner.md");
    for (target, why) in [("codebase-ghost", "ghost"), ("analyst", "analyst")] {
        std::fs::write(
            &planner,
            text.replace(
                "delegate_first: codebase-locator",
                &format!("delegate_first: {target}"),
            ),
        )
        .expect("write");
        let found = codes(&project);
        assert_eq!(found.len(), 1, "{target}: {found:?}");
        assert!(found[0].contains(why), "{found:?}");
    }
}

/// The results of the session's `step` calls, in order: whether each is an error, and its text.
/// The steps the workflow judged, with the action of each reply, in order.
fn judged_steps(events: &[Event]) -> Vec<(String, String)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::WorkflowStep { step, action, .. } => Some((step.clone(), action.clone())),
            _ => None,
        })
        .collect()
}

fn step_results(events: &[Event]) -> Vec<(bool, String)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolResult {
                tool,
                is_error,
                output,
                ..
            } if tool == "step" => Some((*is_error, output.clone())),
            _ => None,
        })
        .collect()
}

/// The shipped planner on a model that answers its first turn with the `intent` step's result
/// as a bare JSON object (as Qwen2.5-Coder-1.5B does): it is read as that step, and the workflow
/// goes on; without the plan document the session still ends PARTIAL.
#[tokio::test]
async fn a_step_result_written_as_the_answer_is_reported_as_the_next_step() {
    let intent = "```json\n{\n  \"action\": \"PROCEED\",\n  \"refined_intent\": \"Add a --quiet flag to the run command\",\n  \"questions\": [],\n  \"reason\": \"The request is clear.\"\n}\n```";
    // Then the runtime's reply copied back as the answer (Qwen did this 24 times in a row): an
    // echo, not the next step's result.
    let echo = "{\"action\":\"PROCEED\",\"step\":\"intent\",\"next\":\"clarify\"}";
    let (outcome, events) = planner_session(vec![
        answer(intent, vec![]),
        answer(echo, vec![]),
        answer("Done.", vec![]),
        answer("Done.", vec![]),
    ])
    .await;
    assert_eq!(outcome.status, "partial", "{outcome:?}");
    let recovered: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ModelToolCallRecovered { form, tools, .. } => {
                Some((form.clone(), tools.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        recovered,
        [("step_result".to_string(), vec!["step".to_string()])]
    );
    let reply = step_results(&events)
        .into_iter()
        .next()
        .map(|(_, output)| output)
        .expect("the step's reply");
    assert!(reply.contains("PROCEED"), "{reply}");
    assert!(reply.contains("clarify"), "{reply}");
}

/// The `step` call's own arguments written as the answer (the 1.5B planner copied its prompt's
/// example whole) are that call, not a result to wrap in another.
#[tokio::test]
async fn a_step_call_written_as_the_answer_is_that_call() {
    let whole = r#"{"name": "intent", "result": {"action": "PROCEED", "refined_intent": "Add a --quiet flag to switchboard run"}}"#;
    let mut replies = vec![answer(whole, vec![])];
    replies.extend((0..3).map(|_| answer("Done.", vec![])));
    let (_outcome, events) = planner_session(replies).await;
    let arguments = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::ToolCall {
                tool, arguments, ..
            } if tool == "step" => Some(arguments.clone()),
            _ => None,
        })
        .expect("a step call");
    assert_eq!(
        arguments,
        serde_json::from_str::<serde_json::Value>(whole).unwrap()
    );
    let reply = step_results(&events)
        .into_iter()
        .next()
        .map(|(_, output)| output)
        .expect("the step's reply");
    assert!(reply.contains("\"action\":\"PROCEED\""), "{reply}");
}

/// A step written as a call of a tool named after it (`{"name": "clarify", "arguments": {…}}`,
/// the 1.5B planner's second turn) is that step's call.
#[tokio::test]
async fn a_step_written_as_a_tool_named_after_it_is_that_step() {
    let intent = json!({"name": "intent", "result": {"action": "PROCEED", "refined_intent": "Add a --quiet flag to switchboard run"}});
    let clarify = r#"{"name": "clarify", "arguments": {"action": "PROCEED", "assumptions": ["The flag goes on `run`."]}}"#;
    let mut replies = vec![
        answer("", vec![call("c1", "step", intent)]),
        answer(clarify, vec![]),
    ];
    replies.extend((0..4).map(|_| answer("Done.", vec![])));
    let (_outcome, events) = planner_session(replies).await;
    assert_eq!(
        judged_steps(&events),
        [
            ("intent".to_string(), "PROCEED".to_string()),
            ("clarify".to_string(), "PROCEED".to_string())
        ]
    );
}

/// Two steps written as one answer, the one already reported and the one owed (the 1.5B planner
/// over llama-server wrote `intent` again and then `clarify`, as two fenced objects, three turns
/// running): the owed step and what follows it are reported, the earlier one is not sent again.
#[tokio::test]
async fn steps_written_together_as_the_answer_are_reported_from_the_one_owed() {
    let intent = json!({"name": "intent", "result": {"action": "PROCEED", "refined_intent": "Add a --quiet flag to switchboard run"}});
    let both = format!(
        "```json\n{}\n```\n```json\n{}\n```",
        serde_json::to_string_pretty(&intent).unwrap(),
        r#"{"name": "clarify", "result": {"action": "PROCEED", "assumptions": ["The flag goes on `run`."]}}"#
    );
    // `intent` reported by a real call, then `text` as the answer: the steps judged.
    let judged = |text: String| {
        let intent = intent.clone();
        async move {
            let mut replies = vec![
                answer("", vec![call("c1", "step", intent)]),
                answer(&text, vec![]),
            ];
            replies.extend((0..4).map(|_| answer("Done.", vec![])));
            judged_steps(&planner_session(replies).await.1)
        }
    };
    let step = |name: &str| (name.to_string(), "PROCEED".to_string());
    assert_eq!(
        judged(both.clone()).await,
        [step("intent"), step("clarify")]
    );
    // Two copies of the runtime's reply, each writing out a `clarify` call with other
    // questions (the 1.5B planner's answer after `intent` was accepted): the first `clarify`.
    let echo = |question: &str| json!({"action": "PROCEED", "step": "clarify", "next": "clarify", "next_call": {"name": "clarify", "result": {"action": "PROCEED", "assumptions": [], "questions": [question]}}});
    let echoes = format!(
        "```json\n{}\n```\n```json\n{}\n```",
        serde_json::to_string_pretty(&echo("Which flag name?")).unwrap(),
        serde_json::to_string_pretty(&echo("Which output is kept?")).unwrap()
    );
    assert_eq!(judged(echoes).await, [step("intent"), step("clarify")]);
    // With prose after them, or an object that is no step call, nothing is read as a step.
    for spoilt in [
        format!("{both}\nNext I will scope the change."),
        format!("{both}\n```json\n{{\"scope\": []}}\n```"),
    ] {
        assert_eq!(judged(spoilt.clone()).await, [step("intent")], "{spoilt}");
    }
}

/// An accepted step sent again with its very result (the 1.5B planner over llama-server sent
/// its accepted `intent` seventeen turns running, each accepted as a new attempt): each is
/// answered UNCHANGED with the step owed, stored as no attempt, and three such turns in a row end
/// the hop PARTIAL naming that step, where the model would have gone on until its limits.
#[tokio::test]
async fn an_accepted_step_sent_again_unchanged_three_turns_running_ends_the_hop() {
    let intent = json!({"name": "intent", "result": {"action": "PROCEED", "refined_intent": "Add a --quiet flag to switchboard run"}});
    let as_text = serde_json::to_string(&intent).unwrap();
    let mut replies = vec![
        answer("", vec![call("c1", "step", intent.clone())]),
        answer("", vec![call("c2", "step", intent.clone())]),
        answer(&as_text, vec![]),
        answer("", vec![call("c4", "step", intent.clone())]),
    ];
    // What the model would have said next, had the hop gone on: never asked for.
    replies.extend((0..6).map(|_| answer("", vec![call("cx", "step", intent.clone())])));
    let (outcome, events) = planner_session(replies).await;
    let step = |action: &str| ("intent".to_string(), action.to_string());
    assert_eq!(
        judged_steps(&events),
        [
            step("PROCEED"),
            step("UNCHANGED"),
            step("UNCHANGED"),
            step("UNCHANGED")
        ]
    );
    let attempts: Vec<u32> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::WorkflowStep { attempt, .. } => Some(*attempt),
            _ => None,
        })
        .collect();
    assert_eq!(attempts, [1, 0, 0, 0], "only the first report is stored");
    let reply = step_results(&events)[1].1.clone();
    assert!(
        reply.contains("UNCHANGED") && reply.contains("`clarify`"),
        "{reply}"
    );
    assert_eq!(outcome.status, "partial", "{outcome:?}");
    let error = outcome.error.clone().unwrap_or_default();
    assert!(
        error.contains("unchanged 3 turns") && error.contains("`clarify`"),
        "{error}"
    );
}

/// A workflow agent that answers without its document is told the step it owes, as the call to
/// make: told only to finish its workflow, the 1.5B planner over llama-server (`clarify` owed)
/// answered twice with a made-up reply of a `render` step.
#[tokio::test]
async fn the_repair_of_a_missing_plan_names_the_step_owed_as_its_call() {
    let intent = json!({"name": "intent", "result": {"action": "PROCEED", "refined_intent": "Add a --quiet flag to switchboard run"}});
    let made_up = r#"{"action": "PROCEED", "step": "render", "next": null}"#;
    let mut replies = vec![
        answer("", vec![call("c1", "step", intent)]),
        answer("The plan is ready.", vec![]),
    ];
    replies.extend((0..4).map(|_| answer(made_up, vec![])));
    let (dir, outcome, _events) = planner_session_with(replies, false).await;
    assert_eq!(outcome.status, "partial", "{outcome:?}");
    let transcripts = std::fs::read_to_string(
        std::fs::read_dir(dir.path().join(".switchboard/sessions"))
            .expect("sessions")
            .flatten()
            .next()
            .expect("one session")
            .path()
            .join("transcripts.jsonl"),
    )
    .expect("transcripts");
    let repair = transcripts
        .lines()
        .flat_map(|l| {
            let row: serde_json::Value = serde_json::from_str(l).expect("json");
            row["messages"].as_array().cloned().unwrap_or_default()
        })
        .filter_map(|m| m["content"].as_str().map(str::to_string))
        .find(|c| c.starts_with("You have not delivered your document"))
        .expect("a repair turn");
    assert!(
        repair
            .contains("Your workflow's next step is `clarify`: report it now with the `step` tool")
            && repair.contains(r#"{"name":"clarify","result":{"#),
        "{repair}"
    );
}

/// The file the locator's runtime search ranked first leads the files the planner's scope is
/// offered, wherever the locator's answer lists it: the 1.5B locator listed `src/cli/mod.rs`
/// first and `src/cli/run.rs` second, and the plan cited `mod.rs` only.
#[tokio::test]
async fn the_file_the_search_ranked_first_leads_the_offered_scope() {
    let files = [
        (
            "src/cli/run.rs",
            "//! `switchboard run`: runs one session of an agent.\n/// The flags of the run command.\npub struct Args {\n    pub verbose: bool,\n}\n",
        ),
        (
            "src/cli/mod.rs",
            "//! The command line, one module per command.\npub mod run;\n/// Runs the command the user named.\npub fn dispatch() {}\n",
        ),
    ];
    let today = chrono::Utc::now().format("%Y-%m-%d");
    let located = format!(
        "---\nmessage_id: locator-{today}-001\ncorrelation_id: corr-1\ntimestamp: {today}T10:00:00Z\nmessage_type: LOCATOR_RESPONSE\n---\n\n<thinking>\nCounted hits.\n</thinking>\n\n<answer>\n## Files\n\n- `src/cli/mod.rs` — most hits\n- `src/cli/run.rs` — the run command\n</answer>\n"
    );
    let intent = json!({"name": "intent", "result": {"action": "PROCEED", "refined_intent": "Add a --quiet flag to switchboard run"}});
    let clarify = json!({"name": "clarify", "result": {"action": "PROCEED", "assumptions": ["The flag goes on `run`."], "questions": []}});
    let mut replies = vec![
        answer(&located, vec![]),
        answer("", vec![call("c1", "step", intent)]),
        answer("", vec![call("c2", "step", clarify)]),
    ];
    replies.extend((0..4).map(|_| answer("Done.", vec![])));
    let (_dir, _outcome, events) = planner_session_in(replies, true, &files).await;
    let results = step_results(&events);
    let clarified: serde_json::Value = results
        .iter()
        .find_map(|(_, out)| {
            serde_json::from_str::<serde_json::Value>(out)
                .ok()
                .filter(|v| v["step"] == "clarify")
        })
        .unwrap_or_else(|| panic!("the clarify step's reply: {results:?}"));
    let offered: Vec<&str> = clarified["next_call"]["result"]["evidence"]
        .as_array()
        .unwrap_or_else(|| panic!("evidence offered: {clarified}"))
        .iter()
        .filter_map(|e| e["path"].as_str())
        .collect();
    assert_eq!(
        offered.first(),
        Some(&"src/cli/run.rs"),
        "{offered:?}: {clarified}"
    );
    assert!(offered.contains(&"src/cli/mod.rs"), "{offered:?}");
}

/// A locator BLOCKED on its answer's form (the 1.5B locators over llama-server, on a miscopied
/// id or a placeholder line) still leaves the file its runtime search ranked first: the planner
/// is told so and is offered it, instead of going on with nothing found.
#[tokio::test]
async fn a_blocked_locator_leaves_the_file_its_search_ranked_first() {
    let files = [
        (
            "src/cli/run.rs",
            "//! `switchboard run`: runs one session of an agent.\n/// The flags of the run command.\npub struct Args {\n    pub verbose: bool,\n}\n",
        ),
        ("src/cli/mod.rs", "//! The command line.\npub mod run;\n"),
    ];
    let intent = json!({"name": "intent", "result": {"action": "PROCEED", "refined_intent": "Add a --quiet flag to switchboard run"}});
    let clarify = json!({"name": "clarify", "result": {"action": "PROCEED", "assumptions": ["The flag goes on `run`."], "questions": []}});
    // The locator's answer and both repairs hold no envelope: BLOCKED.
    let mut replies: Vec<_> = (0..3).map(|_| answer("Nothing to list.", vec![])).collect();
    replies.push(answer("", vec![call("c1", "step", intent)]));
    replies.push(answer("", vec![call("c2", "step", clarify)]));
    replies.extend((0..4).map(|_| answer("Done.", vec![])));
    let (_dir, _outcome, events) = planner_session_in(replies, true, &files).await;
    let located = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::ToolResult {
                call_id, output, ..
            } if call_id == "delegate_first" => Some(output.clone()),
            _ => None,
        })
        .expect("the locator's result");
    assert!(located.contains("BLOCKED"), "{located}");
    assert!(
        located.contains("ranked `src/cli/run.rs` first"),
        "{located}"
    );
    let results = step_results(&events);
    let clarified: serde_json::Value = results
        .iter()
        .find_map(|(_, out)| {
            serde_json::from_str::<serde_json::Value>(out)
                .ok()
                .filter(|v| v["step"] == "clarify")
        })
        .unwrap_or_else(|| panic!("the clarify step's reply: {results:?}"));
    let offered = &clarified["next_call"]["result"]["evidence"][0]["path"];
    assert_eq!(offered, "src/cli/run.rs", "{clarified}");
}

/// The PROCEED reply sent back as the answer with its `next_call` filled in (the 1.5B planner,
/// its `action` still the shape's `PROCEED | CLARIFY`) is that call; the unfilled choice counts
/// as left out, so the step's default decides.
#[tokio::test]
async fn an_echoed_reply_with_its_next_call_filled_in_is_that_call() {
    let intent = json!({"name": "intent", "result": {"action": "PROCEED", "refined_intent": "Add a --quiet flag to switchboard run"}});
    let echoed = r#"{"action": "PROCEED", "step": "intent", "next": "clarify", "next_call": {"name": "clarify", "result": {"action": "PROCEED | CLARIFY", "assumptions": ["The flag goes on `run`."], "questions": []}}}"#;
    let mut replies = vec![
        answer("", vec![call("c1", "step", intent.clone())]),
        answer(echoed, vec![]),
    ];
    replies.extend((0..4).map(|_| answer("Done.", vec![])));
    let (_outcome, events) = planner_session(replies).await;
    assert_eq!(
        judged_steps(&events),
        [
            ("intent".to_string(), "PROCEED".to_string()),
            ("clarify".to_string(), "PROCEED".to_string())
        ]
    );
    let replies = step_results(&events);
    assert!(
        replies[1].1.contains(r#""defaults":{"action":"PROCEED"}"#),
        "{replies:?}"
    );
    // An echo whose next_call names another step than the one owed stays an echo.
    let wrong = echoed.replace(r#""name": "clarify""#, r#""name": "scope""#);
    let mut replies = vec![
        answer("", vec![call("c1", "step", intent)]),
        answer(&wrong, vec![]),
    ];
    replies.extend((0..4).map(|_| answer("Done.", vec![])));
    let (_outcome, events) = planner_session(replies).await;
    assert_eq!(judged_steps(&events).len(), 1, "only intent");
}

/// The shipped `plan` workflow as the 1.5B planner answered it: `intent` with PROCEED and three
/// questions (refused for `maxItems: 1` before), and `intent` with CLARIFY and a question but no
/// `refined_intent` (refused for the missing sentence). The first goes on; the second asks.
#[tokio::test]
async fn the_planner_is_not_refused_for_questions_it_did_not_need_or_a_sentence_it_could_not_write()
{
    let proceed = json!({"name": "intent", "result": {"action": "PROCEED", "refined_intent": "Add a --quiet flag to switchboard run", "questions": ["Which output?", "Short flag?", "Config too?"]}});
    let mut replies = vec![answer("", vec![call("c1", "step", proceed)])];
    replies.extend((0..4).map(|_| answer("Done.", vec![])));
    let (_outcome, events) = planner_session(replies).await;
    assert_eq!(
        judged_steps(&events).first(),
        Some(&("intent".to_string(), "PROCEED".to_string()))
    );
    let clarify = json!({"name": "intent", "result": {"action": "CLARIFY", "questions": ["Which command gets the flag?"]}});
    let mut replies = vec![answer("", vec![call("c1", "step", clarify)])];
    replies.extend((0..4).map(|_| answer("Which command gets the flag?", vec![])));
    let (_outcome, events) = planner_session(replies).await;
    assert_eq!(
        judged_steps(&events).first(),
        Some(&("intent".to_string(), "CLARIFY".to_string()))
    );
    let results = step_results(&events);
    assert!(
        results[0].1.contains("Which command gets the flag?"),
        "{results:?}"
    );
}

/// The shipped planner on a model that reports one wrong `intent` result again and again
/// (Qwen2.5-Coder-1.5B: 17 times): the runtime judges it INVALID once; the same call again is
/// not run, and after two such turns the planner is asked for its final answer, so the session
/// ends PARTIAL in a few turns instead of spending its steps.
#[tokio::test]
async fn a_step_refused_as_invalid_is_not_judged_again_unchanged() {
    let wrong = json!({"name": "intent", "result": {"action": "PROCEED", "questions": ["What is the command?"]}});
    let mut replies: Vec<_> = (1..=3)
        .map(|i| answer("", vec![call(&format!("c{i}"), "step", wrong.clone())]))
        .collect();
    replies.extend((0..3).map(|_| answer("I could not plan it.", vec![])));
    let (outcome, events) = planner_session(replies).await;
    assert_eq!(outcome.status, "partial", "{outcome:?}");
    assert_eq!(
        judged_steps(&events).len(),
        1,
        "only the first report of the result is judged"
    );
    let results = step_results(&events);
    assert_eq!(results.len(), 3, "{results:?}");
    assert!(results[0].1.contains("\"expected\""), "{results:?}");
    for (is_error, output) in &results[1..] {
        assert!(*is_error, "{output}");
        assert!(
            output.contains("INVALID: \"refined_intent\" is a required property"),
            "{output}"
        );
    }
    assert!(events.iter().any(|e| matches!(
        &e.kind,
        EventKind::HopSteered { why, .. } if why == "refused_calls"
    )));
}

/// The same for a step reported out of order: Qwen2.5-Coder-1.5B reported a `plan` result before
/// its `scope` 24 times, each answered STOP. Only the first is judged.
#[tokio::test]
async fn a_step_stopped_as_out_of_order_is_not_judged_again_unchanged() {
    let early = json!({"name": "plan", "result": {"verification": "cargo test"}});
    let mut replies: Vec<_> = (1..=3)
        .map(|i| answer("", vec![call(&format!("c{i}"), "step", early.clone())]))
        .collect();
    replies.extend((0..3).map(|_| answer("I could not plan it.", vec![])));
    let (outcome, events) = planner_session(replies).await;
    assert_eq!(outcome.status, "partial", "{outcome:?}");
    let judged = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::WorkflowStep { .. }))
        .count();
    assert_eq!(judged, 1, "only the first report of the result is judged");
    let results = step_results(&events);
    assert_eq!(results.len(), 3, "{results:?}");
    assert!(results[0].1.contains("\"action\":\"STOP\""), "{results:?}");
    for (is_error, output) in &results[1..] {
        assert!(*is_error, "{output}");
        assert!(output.contains("STOP: "), "{output}");
    }
}

/// The shipped researcher (`gate.ask: runtime`, `deliver.from_answer`) on a model that never
/// asks for the plan and answers with its report instead of writing it (Qwen2.5-Coder-1.5B's two
/// habits): the runtime asks `analyst` the question word for word before the first turn, a
/// repeated read is not run again, and the report in the answer is saved under
/// thoughts/shared/research/ and judged there.
#[tokio::test]
async fn the_runtime_asks_for_the_plan_and_saves_the_report_the_answer_is() {
    let (dir, project) = scripted_researcher(
        "thoughts/shared/decisions/yaml.md",
        "# YAML\n\nWe parse YAML with serde-saphyr.\nserde_yaml is archived.\n",
    );
    let mock = Mock::start().await;
    let question = "What did we decide about the YAML parser?";
    let read = || {
        call(
            "r1",
            "read",
            json!({"path": "thoughts/shared/decisions/yaml.md"}),
        )
    };
    let report = "```markdown\n---\ndate: 2026-11-25\nstatus: active\ntopic: \"The YAML parser decision\"\ntags: [research, yaml]\n---\n\n# The YAML parser\n\n## Findings\n\n### serde-saphyr\n- **Evidence**: `thoughts/shared/decisions/yaml.md:3-4`\n- **Excerpt**:\n  ```\n  We parse YAML with serde-saphyr.\n  serde_yaml is archived.\n  ```\n```";
    mock.push(answer(PLAN, vec![])) // analyst, asked by the runtime
        .push(answer("", vec![read()]))
        .push(answer("", vec![read()]))
        .push(answer(report, vec![]));
    let (outcome, events) = support::wire::session(&project, &mock, "researcher", question).await;
    let kinds: Vec<_> = events.iter().map(|e| e.kind.name()).collect();
    assert_eq!(outcome.status, "completed", "{outcome:?} {kinds:?}");
    // The first request is the analyst's, with the question word for word, before any turn of
    // the researcher; the researcher's first request carries the plan as a tool result.
    let requests = mock.requests();
    assert_eq!(requests.len(), 4, "{kinds:?}");
    let analyst = &requests[0].body["messages"];
    assert!(analyst.to_string().contains(question), "{analyst}");
    let first = requests[1].body["messages"].to_string();
    assert!(first.contains("Plan accepted"), "{first}");
    // … and the delegation to make next, filled in: the doc source's first subagent.
    assert!(first.contains("Next, delegate"), "{first}");
    assert!(first.contains("thoughts-locator"), "{first}");
    assert!(
        events.iter().any(|e| matches!(&e.kind,
            EventKind::GateAsked { plan_agent, .. } if plan_agent == "analyst")),
        "{kinds:?}"
    );
    // The same read again is not run: the model reads that it has the result already.
    let repeat = requests[3].body["messages"].to_string();
    assert!(
        repeat.contains("not run: you made this exact `read` call already"),
        "{repeat}"
    );
    // The report in the answer is saved, named after its topic, and meets the deliverable.
    let saved = "thoughts/shared/research/";
    let path = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::DeliverSaved { path, error, .. } => {
                assert_eq!(error, &None);
                Some(path.clone())
            }
            _ => None,
        })
        .expect("deliver.saved");
    assert!(path.starts_with(saved), "{path}");
    assert!(path.ends_with("-the-yaml-parser-decision.md"), "{path}");
    let text = std::fs::read_to_string(dir.path().join(&path)).expect("saved report");
    assert!(text.starts_with("---\ndate: 2026-11-25"), "{text}");
    assert_eq!(checks(&events), [("met".to_string(), 1)]);
}

/// The shipped researcher's analyst classes a question about the code as a status request,
/// whose contract requires `db`, a source this project cannot search (Qwen2.5-Coder-1.5B, "How
/// many repair turns…?" as `STATUS_SUMMARY`): the runtime asks once more, naming what can be
/// searched, and the researcher reads only the plan that stands.
#[tokio::test]
async fn a_plan_that_opens_nothing_is_asked_for_again_before_the_first_turn() {
    let (_dir, project) = scripted_researcher(
        "thoughts/shared/decisions/repairs.md",
        "# Repairs\n\nA hop gets two repair turns.\n",
    );
    let mock = Mock::start().await;
    let question = "How many repair turns does a hop get?";
    let status = r#"{"intent": "repair_turns", "request_type": "STATUS_SUMMARY", "track": "QUALITY", "required_sources": ["db"], "missing_info_questions": [], "expected_output_schema": "status_v1_json"}"#;
    mock.push(answer(status, vec![])) // analyst, asked by the runtime
        .push(answer(PLAN, vec![])) // analyst, asked again
        .push(answer("I cannot tell.", vec![]))
        .push(answer("I cannot tell.", vec![]))
        .push(answer("I cannot tell.", vec![]))
        .push(answer("I cannot tell.", vec![]));
    let (_outcome, events) = support::wire::session(&project, &mock, "researcher", question).await;
    let asked = events
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::GateAsked { plan_agent, .. } if plan_agent == "analyst"))
        .count();
    assert_eq!(asked, 2);
    // Each ask has its own call id: a journal keyed by it must not replay the first plan.
    let ids: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::GateAsked { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(ids, ["gate_plan", "gate_plan_again"]);
    let plans: Vec<Vec<String>> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::GatePlan { allowed, .. } => Some(allowed.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(plans.len(), 2, "{plans:?}");
    assert!(plans[0].is_empty(), "{plans:?}");
    assert!(
        plans[1].iter().any(|a| a == "thoughts-locator"),
        "{plans:?}"
    );
    let requests = mock.requests();
    let again = requests[1].body["messages"].to_string();
    assert!(again.contains(question), "{again}");
    assert!(
        again.contains("Your plan chose `db`, which this project cannot search"),
        "{again}"
    );
    // The researcher's first request holds the second plan, not the first.
    let first = requests[2].body["messages"].to_string();
    assert!(first.contains("Next, delegate"), "{first}");
    assert!(!first.contains("This plan opens nothing here"), "{first}");
    assert_eq!(first.matches("Plan accepted").count(), 1, "{first}");
}

/// A locator that copies its answer template unfilled, or lists a path that is not there
/// (Qwen2.5-Coder-1.5B did both without searching), is told which placeholder and which path,
/// through every repair; once it is BLOCKED, the researcher's identical call is not run again, and
/// the file the locator's runtime search ranked first is analysed for the researcher's
/// empty-handed answer by the plan's next subagent.
#[tokio::test]
async fn an_invented_path_blocks_the_locator_and_the_next_delegation_is_another_agent() {
    let (_dir, project) = scripted_researcher(
        "thoughts/shared/decisions/2026-11-02-yaml-parser.md",
        "# YAML\n\nWe parse YAML with serde-saphyr.\n",
    );
    let mock = Mock::start().await;
    let question = "What did we decide about the YAML parser?";
    let delegate = || {
        call(
            "t1",
            "task",
            json!({"subagent_type": "thoughts-locator", "description": "Find", "prompt": question}),
        )
    };
    let invented = "---\nmessage_id: locator-2026-11-25-001\ncorrelation_id: c\ntimestamp: 2026-11-25T10:00:00Z\nmessage_type: LOCATOR_RESPONSE\n---\n\n<thinking>\nknown\n</thinking>\n\n<answer>\n## Documents about the YAML parser\n\n### Decisions\n- `thoughts/shared/decisions/2026-11-25-decision-yaml-parser.md` — YAML parser\n</answer>\n";
    // The locator's prompt's answer template, copied unfilled (what the same model did next).
    let copied = invented.replace(
        "## Documents about the YAML parser",
        "## Documents about <topic>",
    );
    mock.push(answer(PLAN, vec![])) // analyst, asked by the runtime
        .push(answer("", vec![delegate()])) // researcher
        // locator (`tool_choice: required`): a search first, then its answer and two repairs
        .push(answer(
            "",
            vec![call("g1", "grep", json!({"pattern": "YAML"}))],
        ))
        .push(answer(&copied, vec![]))
        .push(answer(invented, vec![]))
        .push(answer(invented, vec![]))
        .push(answer("", vec![delegate()])) // researcher: the same call again
        .push(answer("Nothing found.", vec![])) // researcher's final answer, then repairs
        .push(answer("Nothing found.", vec![]))
        .push(answer("Nothing found.", vec![]));
    let (outcome, events) = support::wire::session(&project, &mock, "researcher", question).await;
    let kinds: Vec<_> = events.iter().map(|e| e.kind.name()).collect();
    assert_ne!(outcome.status, "completed", "{outcome:?} {kinds:?}");
    let requests = mock.requests();
    // The locator's first repair names the template's placeholder it left in …
    let repair = requests[4].body["messages"].to_string();
    assert!(repair.contains("envelope/placeholder"), "{repair}");
    assert!(repair.contains("`<topic>` is a placeholder"), "{repair}");
    // … and the invented path.
    let repair = requests[5].body["messages"].to_string();
    assert!(repair.contains("contract/named-path-missing"), "{repair}");
    assert!(
        repair.contains("2026-11-25-decision-yaml-parser.md` does not exist"),
        "{repair}"
    );
    // … and the real one whose name shares its words, to copy.
    assert!(
        repair
            .contains("share words with it: `thoughts/shared/decisions/2026-11-02-yaml-parser.md`"),
        "{repair}"
    );
    // The locator ran once: three requests of its own, none after the researcher's repeat.
    let locator_hops = events
        .iter()
        .filter(|e| e.agent.as_deref() == Some("thoughts-locator"))
        .filter(|e| e.kind.name() == "hop.started")
        .count();
    assert_eq!(locator_hops, 1, "{kinds:?}");
    let after_repeat = requests[7].body["messages"].to_string();
    assert!(
        after_repeat.contains("not run: you made this exact `task` call already"),
        "{after_repeat}"
    );
    // The locator is BLOCKED, but the file its runtime search ranked first is kept as found,
    // and the researcher is told so …
    let record = "thoughts/shared/decisions/2026-11-02-yaml-parser.md";
    let told = requests[6].body["messages"].to_string();
    assert!(told.contains(&format!("ranked `{record}` first")), "{told}");
    // … so when it answers empty-handed, the runtime has that file analysed (`delegate_owed`)
    // by the doc source's reader.
    let analysed = requests[8].body["messages"].to_string();
    assert!(
        analysed.contains("You are `thoughts-analyzer`"),
        "{analysed}"
    );
    assert!(
        analysed.contains(&format!("The runtime has read `{record}` for you")),
        "{analysed}"
    );
}

/// The shipped researcher on a mock: the plan, one `task` call (id `t1`) to thoughts-locator,
/// whose answer lists `DOC` and then holds `extra` in its `<answer>`. Returns `t1`'s result as
/// the researcher saw it.
async fn locator_result(extra: &str) -> String {
    locator_session(extra).await.0
}

/// [`locator_result`], with the session's events and how many tools each model request offered.
async fn locator_session(extra: &str) -> (String, Vec<switchboard::runtime::Event>, Vec<usize>) {
    let (_dir, project) = scripted_researcher(DOC, "# YAML\n\nWe parse YAML with serde-saphyr.\n");
    let mock = Mock::start().await;
    let question = "What did we decide about the YAML parser?";
    // The ids the runtime will allocate, so the locator's answer conforms first time.
    let today = chrono::Utc::now().format("%Y-%m-%d");
    let found = format!("---\nmessage_id: locator-{today}-001\ncorrelation_id: corr-1\ntimestamp: {today}T10:00:00Z\nmessage_type: LOCATOR_RESPONSE\n---\n\n<thinking>\ngrep yaml\n</thinking>\n\n<answer>\n## Documents about the YAML parser\n\n- `{DOC}` — YAML (2026-11-02, accepted)\n{extra}</answer>\n");
    mock.push(answer(PLAN, vec![]))
        .push(answer(
            "",
            vec![call(
                "t1",
                "task",
                json!({"subagent_type": "thoughts-locator", "description": "Find", "prompt": question}),
            )],
        ))
        .push(answer("", vec![call("g1", "grep", json!({"pattern": "YAML"}))]))
        .push(answer(&found, vec![]))
        .push(answer("Done.", vec![]))
        .push(answer("Done.", vec![]))
        .push(answer("Done.", vec![]));
    let (events, tools) = researcher_on(&project, &mock, question).await;
    let kinds: Vec<_> = events.iter().map(|e| e.kind.name()).collect();
    let result = support::wire::tool_output(&events, "t1")
        .unwrap_or_else(|| panic!("the locator's result: {kinds:?}"));
    (result, events, tools)
}

/// The shipped agents and one document, for a researcher whose every turn the test scripts:
/// its `delegate_first` line is taken out, so the runtime's two locator hops do not take the
/// scripted replies (`gate::the_offline_researcher_plans_with_the_analyst_before_it_searches`
/// covers them).
fn scripted_researcher(doc: &str, text: &str) -> (tempfile::TempDir, Project) {
    let (dir, project) = support::fs::shipped_agents_with(doc, text);
    let path = dir.path().join("agent/researcher.md");
    let shipped = std::fs::read_to_string(&path).expect("researcher.md");
    let without = shipped.replace("delegate_first: [thoughts-locator, codebase-locator]\n", "");
    assert_ne!(
        without, shipped,
        "the shipped researcher declares delegate_first"
    );
    std::fs::write(&path, without).expect("write researcher.md");
    (dir, project)
}

/// The shipped researcher's session on `mock` (correlation id `corr-1`): its events, and how
/// many tools each model request offered.
async fn researcher_on(project: &Project, mock: &Mock, question: &str) -> (Vec<Event>, Vec<usize>) {
    let options = switchboard::runtime::RunOptions {
        correlation_id: Some("corr-1".into()),
        ..Default::default()
    };
    let (_outcome, events) =
        support::wire::session_with(project, mock, "researcher", question, options).await;
    let tools = mock.requests().iter().map(|r| r.callable_tools()).collect();
    (events, tools)
}

/// The decision record the locator tests find.
const DOC: &str = "thoughts/shared/decisions/2026-11-02-yaml-parser.md";

/// A thoughts-locator answer (today's message `n`) listing [`DOC`] with one Evidence item of it
/// that verifies against the record `shipped_agents_with(DOC, …)` writes.
fn locator_with_verified_item(n: u32) -> String {
    let today = chrono::Utc::now().format("%Y-%m-%d");
    let item = format!("- **Evidence**: `{DOC}:3`\n- **Excerpt**:\n  ```\n  We parse YAML with serde-saphyr.\n  ```");
    format!("---\nmessage_id: locator-{today}-{n:03}\ncorrelation_id: corr-1\ntimestamp: {today}T10:00:00Z\nmessage_type: LOCATOR_RESPONSE\n---\n\n<thinking>\ngrep yaml\n</thinking>\n\n<answer>\n## Documents about the YAML parser\n\n- `{DOC}` — YAML (2026-11-02, accepted)\n\n### The parser\n{item}\n</answer>\n")
}

/// The researcher's turn that gives thoughts-locator `prompt`.
fn delegate_to_locator(id: &str, prompt: &str) -> support::mock::Reply {
    answer(
        "",
        vec![call(
            id,
            "task",
            json!({"subagent_type": "thoughts-locator", "description": "Find", "prompt": prompt}),
        )],
    )
}

/// Once a subagent's answer holds Evidence that verifies, the researcher (whose final answer is
/// its report) is told to write the report now with those items to copy, and offered no filled
/// call. A 1.5B researcher otherwise followed the plan to its next source and never wrote the
/// report.
#[tokio::test]
async fn verified_evidence_from_a_subagent_asks_for_the_report_now() {
    let item = format!("- **Evidence**: `{DOC}:3`\n- **Excerpt**:\n  ```\n  We parse YAML with serde-saphyr.\n  ```");
    let (result, events, tools) = locator_session(&format!("\n### The parser\n{item}\n")).await;
    let note = result
        .split("[runtime] ")
        .nth(1)
        .unwrap_or_else(|| panic!("no runtime note: {result}"));
    assert!(
        note.starts_with("Your subagents have found 1 verified Evidence item(s)"),
        "{note}"
    );
    assert!(note.contains("Write your report now"), "{note}");
    assert!(note.contains(&format!("### The parser\n{item}")), "{note}");
    // No filled call beside it: the 1.5B researcher copied one offered as the alternative.
    assert!(!note.contains("Next, delegate"), "{note}");
    assert!(!note.contains("subagent_type"), "{note}");
    // Nor a sentence about delegating: the 1.5B researcher delegated "Delegate again only if
    // they leave the question unanswered" itself. Its tools stay offered on the next turn
    // (requests: plan, the researcher's call, the locator's two turns, then that turn).
    assert!(!note.contains("Delegate again"), "{note}");
    assert!(!events.is_empty());
    assert!(tools[1] > 0 && tools[4] > 0, "{tools:?}");
}

/// A delegation after the note to write the report now that adds no verified Evidence leaves
/// the next turn no tools: the 1.5B researcher, shown three verified items, delegated to a
/// locator that found nothing new, then delegated again after the same note.
#[tokio::test]
async fn a_delegation_that_adds_nothing_after_the_note_leaves_only_the_report() {
    let (_dir, project) = scripted_researcher(DOC, "# YAML\n\nWe parse YAML with serde-saphyr.\n");
    let mock = Mock::start().await;
    let question = "What did we decide about the YAML parser?";
    let found = locator_with_verified_item;
    let delegate = delegate_to_locator;
    mock.push(answer(PLAN, vec![]))
        .push(delegate("t1", question))
        .push(answer(
            "",
            vec![call("g1", "grep", json!({"pattern": "YAML"}))],
        ))
        .push(answer(&found(1), vec![]))
        .push(delegate("t2", "Find more about the YAML parser."))
        .push(answer(
            "",
            vec![call("g1", "grep", json!({"pattern": "parser"}))],
        ))
        .push(answer(&found(2), vec![]))
        .push(answer("Done.", vec![]))
        .push(answer("Done.", vec![]))
        .push(answer("Done.", vec![]));
    let (events, tools) = researcher_on(&project, &mock, question).await;
    let kinds: Vec<_> = events.iter().map(|e| e.kind.name()).collect();
    let notes = events
        .iter()
        .filter(|e| {
            matches!(&e.kind, EventKind::ToolResult { output, .. }
            if output.contains("[runtime] Your subagents have found 1 verified"))
        })
        .count();
    assert_eq!(notes, 2, "{kinds:?}");
    // Requests: plan, researcher (t1), locator ×2, researcher (t2), locator ×2, then the turn
    // after the second note, which may only write; after the first, tools stayed offered.
    assert!(tools[4] > 0, "{tools:?}");
    assert_eq!(tools[7], 0, "{tools:?}");
    let steered: Vec<u32> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::HopSteered { why, count } if why == "write_now" => Some(*count),
            _ => None,
        })
        .collect();
    assert_eq!(steered, [1], "{kinds:?}");
}

/// After the note to write the report now, a turn that only gives a subagent the task it
/// answered (refused as a repeat) found nothing new either: the next turn may only write. The
/// 1.5B researcher, shown three verified items, sent the analyzer its task again, then a locator
/// a new one, a hop that added nothing.
#[tokio::test]
async fn a_task_given_again_after_the_note_leaves_only_the_report() {
    let (_dir, project) = scripted_researcher(DOC, "# YAML\n\nWe parse YAML with serde-saphyr.\n");
    let mock = Mock::start().await;
    let question = "What did we decide about the YAML parser?";
    let found = locator_with_verified_item(1);
    let delegate = |id: &str| delegate_to_locator(id, question);
    mock.push(answer(PLAN, vec![]))
        .push(delegate("t1"))
        .push(answer(
            "",
            vec![call("g1", "grep", json!({"pattern": "YAML"}))],
        ))
        .push(answer(&found, vec![]))
        .push(delegate("t2"))
        .push(answer("Done.", vec![]))
        .push(answer("Done.", vec![]))
        .push(answer("Done.", vec![]));
    let (events, tools) = researcher_on(&project, &mock, question).await;
    let kinds: Vec<_> = events.iter().map(|e| e.kind.name()).collect();
    let refused = events
        .iter()
        .filter(|e| {
            matches!(&e.kind, EventKind::ToolResult { output, is_error: true, .. }
            if output.starts_with("not run: you gave this same prompt"))
        })
        .count();
    assert_eq!(refused, 1, "{kinds:?}");
    // Requests: plan, researcher (t1), locator ×2, researcher (t2, refused), then the turn
    // after it, which may only write.
    assert!(tools[4] > 0, "{tools:?}");
    assert_eq!(tools[5], 0, "{tools:?}");
    let steered = events
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::HopSteered { why, .. } if why == "write_now"))
        .count();
    assert_eq!(steered, 1, "{kinds:?}");
    // That turn's conversation ends with the note and its item, after the refusal: the `local`
    // grammar writes the report from the last message's items, and the 1.5B researcher, the
    // note two messages back, wrote a `task` call as text (t0 on 46eb4dd).
    let requests = mock.requests();
    let last = |i: usize| requests[i].last_content();
    let written = last(5);
    assert!(
        written.contains("not run: you gave this same prompt"),
        "{written}"
    );
    assert_eq!(
        switchboard::runtime::deliver::report_now_findings(&written).map(|f| f.len()),
        Some(1),
        "{written}"
    );
    // "Done." is no report: its repair lists the item in hand, and with enough of them to
    // meet the report, the repair turn is offered no tools either.
    assert_eq!(tools[6], 0, "{tools:?}");
    assert!(
        switchboard::runtime::deliver::report_now_findings(&last(6)).is_some(),
        "{}",
        last(6)
    );
    let repairs = events
        .iter()
        .filter(
            |e| matches!(&e.kind, EventKind::HopSteered { why, .. } if why == "repair_write_now"),
        )
        .count();
    assert_eq!(repairs, 2, "{kinds:?}");
}

/// Once a subagent of the plan's source answered, its result tells the researcher the next
/// subagent to call, with the paths it found (Qwen2.5-Coder-1.5B called the locator four
/// times over, never the analyzer).
#[tokio::test]
async fn a_locators_answer_names_the_analyzer_to_call_next_with_what_it_found() {
    let result = locator_result("").await;
    assert!(!result.contains("is BLOCKED"), "{result}");
    assert!(result.contains("[runtime] Next, delegate"), "{result}");
    assert!(
        result.contains(r#""subagent_type":"thoughts-analyzer""#),
        "{result}"
    );
    assert!(result.contains(&format!("Read `{DOC}`.")), "{result}");
}

/// A plan over `doc` and `code`: when the code's finds verify but the document the
/// thoughts-locator found has not been read by any other subagent, the note after the verified
/// answer owes that source its analysis (the thoughts-analyzer, given the document) instead of
/// asking for the report. The 1.5B researcher, told to write its report once one analysis of
/// code verified, never had the decision record its question was about analyzed.
#[tokio::test]
async fn a_source_the_plan_chose_is_analyzed_before_the_report_is_asked_for() {
    let (dir, project) = scripted_researcher(DOC, "# YAML\n\nWe parse YAML with serde-saphyr.\n");
    let code = "src/frontmatter.rs";
    std::fs::create_dir_all(dir.path().join("src")).expect("mkdir");
    std::fs::write(
        dir.path().join(code),
        "// Splits the YAML frontmatter off and parses it.\npub fn parse() {}\n",
    )
    .expect("write");
    let mock = Mock::start().await;
    let question = "What did we decide about the YAML parser?";
    let plan = PLAN.replace(r#"["doc"]"#, r#"["doc", "code"]"#);
    assert_ne!(plan, PLAN);
    let today = chrono::Utc::now().format("%Y-%m-%d");
    let head = |n: u32| {
        format!("---\nmessage_id: locator-{today}-{n:03}\ncorrelation_id: corr-1\ntimestamp: {today}T10:00:00Z\nmessage_type: LOCATOR_RESPONSE\n---\n\n<thinking>\ngrep yaml\n</thinking>\n\n")
    };
    let doc_found = format!(
        "{}<answer>\n## Documents about the YAML parser\n\n- `{DOC}` — YAML (2026-11-02, accepted)\n</answer>\n",
        head(1)
    );
    let code_found = format!(
        "{}<answer>\n## Code\n\n- `{code}` — the frontmatter parser\n\n### The parser\n- **Evidence**: `{code}:1`\n- **Excerpt**:\n  ```\n  // Splits the YAML frontmatter off and parses it.\n  ```\n</answer>\n",
        head(2)
    );
    let delegate = |id: &str, to: &str| {
        answer(
            "",
            vec![call(
                id,
                "task",
                json!({"subagent_type": to, "description": "Find", "prompt": question}),
            )],
        )
    };
    let grep = || answer("", vec![call("g1", "grep", json!({"pattern": "YAML"}))]);
    mock.push(answer(&plan, vec![]))
        .push(delegate("t1", "thoughts-locator"))
        .push(grep())
        .push(answer(&doc_found, vec![]))
        .push(delegate("t2", "codebase-locator"))
        .push(grep())
        .push(answer(&code_found, vec![]))
        .push(answer("Done.", vec![]))
        .push(answer("Done.", vec![]))
        .push(answer("Done.", vec![]));
    let (events, _tools) = researcher_on(&project, &mock, question).await;
    let kinds: Vec<_> = events.iter().map(|e| e.kind.name()).collect();
    let t2 = support::wire::tool_output(&events, "t2")
        .unwrap_or_else(|| panic!("the code locator's result: {kinds:?}"));
    let note = t2
        .split("[runtime] ")
        .nth(1)
        .unwrap_or_else(|| panic!("no runtime note: {t2}"));
    assert!(
        note.starts_with("Your plan's source `doc` is not analyzed yet"),
        "{note}"
    );
    assert!(
        note.contains(&format!(
            r#""prompt":"{question} Read `{DOC}`. Correlation: corr-1","subagent_type":"thoughts-analyzer""#
        )),
        "{note}"
    );
    assert!(!note.contains("Write your report now"), "{note}");
    assert!(
        !note.contains("codebase-analyzer"),
        "the code's find verified: {note}"
    );
}

/// A gated primary that owes a document and answers with it before any subagent has read
/// anything (its locator answered; nothing verifies) does not get a repair first: the runtime
/// makes the analysis its gate names next (`delegate_owed`: the document the locator found, to
/// the thoughts-analyzer), after a note that the answer came before anything was read. When
/// that analysis brings nothing that verifies either, the repair names the next delegation and
/// says to delegate first, without an Evidence item's shape to fill in. Over llama-server the
/// 1.5B researcher wrote its report right after the runtime's locators and sent it back
/// unchanged after every repair.
#[tokio::test]
async fn a_report_before_anything_was_read_has_the_runtime_make_the_owed_analysis() {
    let (_dir, project) = scripted_researcher(DOC, "# YAML\n\nWe parse YAML with serde-saphyr.\n");
    let mock = Mock::start().await;
    let question = "What did we decide about the YAML parser?";
    let plan = PLAN.replace(r#"["doc"]"#, r#"["doc", "code"]"#);
    let today = chrono::Utc::now().format("%Y-%m-%d");
    let found = format!("---\nmessage_id: locator-{today}-001\ncorrelation_id: corr-1\ntimestamp: {today}T10:00:00Z\nmessage_type: LOCATOR_RESPONSE\n---\n\n<thinking>\ngrep yaml\n</thinking>\n\n<answer>\n## Documents\n\n- `{DOC}` — YAML (2026-11-02, accepted)\n</answer>\n");
    let report = format!("---\ndate: {today}\ntopic: YAML\n---\n\n# YAML\n\n## Findings\n\n### The parser\n- **Evidence**: `{DOC}:1`\n- **Excerpt**:\n  ```\n  We chose a YAML parser.\n  ```\n");
    mock.push(answer(&plan, vec![]))
        .push(delegate_to_locator("t1", question))
        .push(answer(
            "",
            vec![call("g1", "grep", json!({"pattern": "YAML"}))],
        ))
        .push(answer(&found, vec![]))
        .push(answer(&report, vec![]));
    // The thoughts-analyzer the runtime calls answers nothing usable through its repairs.
    for _ in 0..3 {
        mock.push(answer("I cannot say.", vec![]));
    }
    for _ in 0..3 {
        mock.push(answer(&report, vec![]));
    }
    let (events, _tools) = researcher_on(&project, &mock, question).await;
    let kinds: Vec<_> = events.iter().map(|e| e.kind.name()).collect();
    let owed = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::ToolCall {
                call_id, arguments, ..
            } if call_id == switchboard::runtime::hop::DELEGATE_OWED_ID => Some(arguments.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no delegate_owed call: {kinds:?}"));
    assert_eq!(owed["subagent_type"], "thoughts-analyzer", "{owed}");
    assert_eq!(
        owed["prompt"],
        format!("{question} Read `{DOC}`. Correlation: corr-1")
    );
    assert!(
        events.iter().any(|e| matches!(&e.kind,
            EventKind::HopSteered { why, count: 1 } if why == "delegate_owed")),
        "{kinds:?}"
    );
    let analyzer_hops = events
        .iter()
        .filter(|e| e.agent.as_deref() == Some("thoughts-analyzer"))
        .filter(|e| e.kind.name() == "hop.started")
        .count();
    assert_eq!(analyzer_hops, 1, "made once: {kinds:?}");
    let sent: Vec<String> = mock.requests().iter().map(|r| r.body.to_string()).collect();
    assert!(
        sent.iter()
            .any(|b| b.contains("That answer came before any subagent had read anything")),
        "{kinds:?}"
    );
    // Its analysis verified nothing: the repair names the plan's next delegation (the code's
    // locator, which has not run) and no Evidence item's shape.
    let repair = mock
        .requests()
        .iter()
        .map(|r| r.last_content())
        .find(|c| c.contains("has 0 verified Evidence item(s)"))
        .unwrap_or_else(|| panic!("no deliver repair: {kinds:?}"));
    assert!(
        repair.contains("No subagent has read anything for it yet"),
        "{repair}"
    );
    assert!(
        repair.contains(r#""subagent_type":"codebase-locator""#),
        "{repair}"
    );
    assert!(!repair.contains("Each Evidence item"), "{repair}");
}

/// A report that cites what the agent read itself, verified, is no answer before anything was
/// read: the runtime makes no analysis for it, and it is met as it is.
#[tokio::test]
async fn a_report_that_verifies_on_its_own_gets_no_owed_analysis() {
    let (_dir, project) = scripted_researcher(DOC, "# YAML\n\nWe parse YAML with serde-saphyr.\n");
    let mock = Mock::start().await;
    let question = "What did we decide about the YAML parser?";
    let today = chrono::Utc::now().format("%Y-%m-%d");
    let found = format!("---\nmessage_id: locator-{today}-001\ncorrelation_id: corr-1\ntimestamp: {today}T10:00:00Z\nmessage_type: LOCATOR_RESPONSE\n---\n\n<thinking>\ngrep yaml\n</thinking>\n\n<answer>\n## Documents\n\n- `{DOC}` — YAML (2026-11-02, accepted)\n</answer>\n");
    let report = format!("---\ndate: {today}\ntopic: YAML\n---\n\n# YAML\n\n## Findings\n\n### The parser\n- **Evidence**: `{DOC}:3`\n- **Excerpt**:\n  ```\n  We parse YAML with serde-saphyr.\n  ```\n");
    mock.push(answer(PLAN, vec![]))
        .push(delegate_to_locator("t1", question))
        .push(answer(
            "",
            vec![call("g1", "grep", json!({"pattern": "YAML"}))],
        ))
        .push(answer(&found, vec![]))
        .push(answer(&report, vec![]))
        .push(answer("Done.", vec![]));
    let (events, _tools) = researcher_on(&project, &mock, question).await;
    let kinds: Vec<_> = events.iter().map(|e| e.kind.name()).collect();
    assert!(
        !events.iter().any(|e| matches!(&e.kind,
            EventKind::HopSteered { why, .. } if why == "delegate_owed")),
        "{kinds:?}"
    );
    let met = events
        .iter()
        .any(|e| matches!(&e.kind, EventKind::DeliverChecked { outcome, .. } if outcome == "met"));
    assert!(met, "{kinds:?}");
}

/// Several processes running the offline researcher on one question at once, in one project:
/// each report takes a name of its own (`write_new`'s `create_new`), none is written over, and
/// each answer names the file its own session wrote.
#[test]
fn parallel_researcher_processes_each_keep_their_report() {
    use crate::support::fs::{copy_tree, sb, success_json};
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    copy_tree(&repo.join("agent"), &dir.path().join("agent"));
    copy_tree(
        &repo.join("tests/fixtures/runtime/project/thoughts"),
        &dir.path().join("thoughts"),
    );
    let research = dir.path().join("thoughts/shared/research");
    let before: Vec<_> = std::fs::read_dir(&research)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    let question = "What did we decide about the event log?";
    let children: Vec<_> = (0..4)
        .map(|_| {
            sb(dir.path())
                .args(["run", "researcher", question, "--json"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawn")
        })
        .collect();
    let mut written: Vec<String> = Vec::new();
    for child in children {
        let v = success_json(&child.wait_with_output().expect("wait"));
        assert_eq!(v["outcome"], "COMPLETED", "{v}");
        let own = v["written"][0]
            .as_str()
            .expect("one file written")
            .to_string();
        let answer = v["answer"].as_str().unwrap_or_default();
        assert!(
            answer.starts_with(&format!("Report written to `{own}`.")),
            "{own}: {answer}"
        );
        let text = std::fs::read_to_string(dir.path().join(&own)).expect("report");
        assert!(text.contains("## Summary"), "{own}: {text}");
        written.push(own);
    }
    written.sort();
    written.dedup();
    assert_eq!(written.len(), 4, "{written:?}");
    let after = std::fs::read_dir(&research).expect("research").count();
    assert_eq!(after, before.len() + 4, "{written:?}");
}

/// A report that holds up but cites none of a file whose Evidence a subagent verified gets that
/// file's items added under their own heading, marked as the runtime's: the 1.5B researcher,
/// offered three verified items of the decision record and three of `src/agent/parse.rs`, kept
/// the last three only, and its report did not cite the record it was asked about.
#[tokio::test]
async fn verified_findings_of_a_file_the_report_leaves_out_are_added_to_it() {
    let (dir, project) = project();
    std::fs::write(dir.path().join("b.md"), "why\nbecause\n").expect("write");
    std::fs::write(
        dir.path().join("agent/lead.md"),
        LEAD.replace("evidence: 1}", "evidence: 1, from_answer: true}")
            .replace(
                "tools: {read: true, write: true}",
                "tools: {read: true, write: true, task: true}\npermission: {task: {\"*\": deny, helper: allow}}",
            ),
    )
    .expect("write");
    std::fs::write(
        dir.path().join("agent/helper.md"),
        "---\nname: helper\ndescription: \"Reads files.\"\nmode: subagent\ntools: {read: true}\n---\nYou read.\n",
    )
    .expect("write");
    let project = Project::open(project.root()).expect("project");
    let item = |path: &str, text: &str| {
        format!("- **Evidence**: `{path}:1`\n- **Excerpt**:\n  ```\n  {text}\n  ```\n")
    };
    let mock = Mock::start().await;
    mock.push(answer(
        "",
        vec![call(
            "c1",
            "task",
            json!({"subagent_type": "helper", "description": "Read", "prompt": "Read a.md and b.md."}),
        )],
    ));
    mock.push(answer(
        &format!(
            "### a.md greets\n{}\n### b.md says why\n{}",
            item("a.md", "hello"),
            item("b.md", "why")
        ),
        vec![],
    ));
    let report = format!(
        "---\ntitle: a.md\n---\n\n# a.md\n\n## Findings\n\n### a.md greets\n{}",
        item("a.md", "hello")
    );
    mock.push(answer(&report, vec![]));
    let (outcome, events) = session(&project, &mock).await;
    assert_eq!(outcome.status, "completed", "{outcome:?}");
    let added: Vec<u32> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::HopSteered { why, count } if why == "report_findings_added" => Some(*count),
            _ => None,
        })
        .collect();
    assert_eq!(added, [1]);
    assert_eq!(checks(&events), [("met".to_string(), 2)]);
    let saved = saved_report(dir.path(), &events);
    let (own, extra) = saved
        .split_once(switchboard::runtime::deliver::LEFT_OUT_HEADING)
        .unwrap_or_else(|| panic!("no added section: {saved}"));
    assert!(own.contains("`a.md:1`") && !own.contains("b.md"), "{saved}");
    assert!(
        extra.contains("### b.md says why\n- **Evidence**: `b.md:1`") && !extra.contains("a.md"),
        "{saved}"
    );
}
