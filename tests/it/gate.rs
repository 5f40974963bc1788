//! The retrieval gate (`gate:`, docs/gate.md) end to end: refusals before a plan, a plan
//! submitted with the `plan` tool (invalid, then valid), a plan from the planning agent (its
//! answer, and its declared fallback), what a plan opens and keeps closed, the events and the
//! trace, lint's rules, and the shipped researcher driven through its gate by the offline model.

use std::path::Path;
use std::sync::Arc;

use switchboard::agent::{load, LoadOptions};
use switchboard::config::Config;
use switchboard::model::{ProviderContext, Registry};
use switchboard::project::Project;
use switchboard::runtime::events::read_log;
use switchboard::runtime::{Event, EventKind, RunOptions, Session, SessionStatus};

use crate::support::{fs, scripted};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/runtime/project"
);

/// A gated primary: the analyst plans; `doc` opens the thoughts agents and `read`, `code` opens
/// `grep`, `policy` opens `read`.
const LEAD: &str = r#"---
description: "A gated lead for the gate tests."
mode: primary
tools: {task: true, read: true, grep: true, glob: true, write: false}
permission:
  task: {"*": deny, "analyst": allow, "thoughts-*": allow}
steps: 10
gate:
  plan: analyst
  sources:
    doc: [thoughts-locator, read]
    code: [grep]
    policy: [read]
---

# Lead

Plan with `analyst`, then delegate to `thoughts-locator`.
"#;

const DOC_PLAN: &str = r#"{"intent": "find_decisions", "request_type": "KNOWLEDGE_QA", "track": "QUALITY", "required_sources": ["doc"], "missing_info_questions": [], "expected_output_schema": "answer_v1_markdown"}"#;
const DB_PLAN: &str = r#"{"intent": "sprint_rate", "request_type": "STATUS_METRIC", "track": "QUALITY", "required_sources": ["db"], "missing_info_questions": [], "expected_output_schema": "status_v1_json"}"#;

fn project() -> (tempfile::TempDir, Project) {
    let (dir, project) = scripted::project_with_analyst();
    std::fs::write(dir.path().join("agent/lead.md"), LEAD).unwrap();
    (dir, project)
}

async fn run(
    project: &Project,
    script: &str,
    agent: &str,
    task: &str,
) -> (SessionStatus, Vec<Event>) {
    let (outcome, events) =
        scripted::run_agent(project, Config::default(), script, agent, task).await;
    let failures: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::HopFailed { error, .. } => Some(error.as_str()),
            _ => None,
        })
        .collect();
    assert!(failures.is_empty(), "hops failed: {failures:?}");
    (outcome.status, events)
}

/// `(tool, is_error, output)` of the lead's tool results, in order.
fn lead_results(events: &[Event]) -> Vec<(String, bool, String)> {
    events
        .iter()
        .filter(|e| e.agent.as_deref() == Some("lead"))
        .filter_map(|e| match &e.kind {
            EventKind::ToolResult {
                tool,
                is_error,
                output,
                ..
            } => Some((tool.clone(), *is_error, output.clone())),
            _ => None,
        })
        .collect()
}

/// The agents whose hops started, in order, the lead left out.
fn subagents_started(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::HopStarted { .. }))
        .filter_map(|e| e.agent.clone())
        .filter(|a| a != "lead")
        .collect()
}

fn refusals(events: &[Event]) -> Vec<(String, Option<String>)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::GateRefused { tool, target, .. } => Some((tool.clone(), target.clone())),
            _ => None,
        })
        .collect()
}

fn plans(events: &[Event]) -> Vec<(String, Vec<String>, Vec<String>, bool)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::GatePlan {
                via,
                sources,
                allowed,
                fallback,
                ..
            } => Some((via.clone(), sources.clone(), allowed.clone(), *fallback)),
            _ => None,
        })
        .collect()
}

fn call(name: &str, args: &str) -> String {
    format!("            - name: {name}\n              arguments: {args}\n")
}

#[tokio::test]
async fn nothing_is_retrieved_before_a_plan_and_the_plan_opens_only_its_sources() {
    let (dir, project) = project();
    let bad = DOC_PLAN.replace("KNOWLEDGE_QA", "WEATHER");
    let script = format!(
        "agents:\n  lead:\n    - turns:\n        - tool_calls:\n{}{}        - tool_calls:\n{}        - tool_calls:\n{}        - tool_calls:\n{}{}        - content: \"done\"\n",
        call("grep", "{pattern: decided}"),
        call("task", "{subagent_type: thoughts-locator, description: find, prompt: \"find it\"}"),
        call("plan", &bad),
        call("plan", DOC_PLAN),
        call("read", "{path: agent/lead.md}"),
        call("grep", "{pattern: decided}"),
    );
    let (status, events) = run(&project, &script, "lead", "What did we decide?").await;
    assert_eq!(status, SessionStatus::Completed);
    let results = lead_results(&events);
    let flags: Vec<(&str, bool)> = results.iter().map(|(t, e, _)| (t.as_str(), *e)).collect();
    assert_eq!(
        flags,
        [
            ("grep", true),
            ("task", true),
            ("plan", true),
            ("plan", false),
            ("read", false),
            ("grep", true),
        ]
    );
    assert!(
        results[0]
            .2
            .contains("no retrieval before a validated plan")
            && results[0].2.contains("delegate to `analyst` first"),
        "{}",
        results[0].2
    );
    assert!(
        results[2]
            .2
            .contains("does not pass contract `analyst-plan`"),
        "{}",
        results[2].2
    );
    assert!(results[2].2.contains("/request_type"), "{}", results[2].2);
    assert!(results[3].2.contains("Plan accepted"), "{}", results[3].2);
    assert!(
        results[5].2.contains("chose source(s) doc")
            && results[5].2.contains("only source(s) code open it"),
        "{}",
        results[5].2
    );
    assert_eq!(
        refusals(&events),
        [
            ("grep".to_string(), None),
            ("task".to_string(), Some("thoughts-locator".to_string())),
            ("grep".to_string(), None),
        ]
    );
    assert_eq!(
        plans(&events),
        [(
            "plan".to_string(),
            vec!["doc".to_string()],
            vec!["read".to_string(), "thoughts-locator".to_string()],
            false
        )]
    );
    // The validated plan stays in the conversation every later turn sends (the transcript has it).
    let session_dir = dir.path().join(".switchboard/sessions");
    let mut found = false;
    for entry in walk(&session_dir) {
        let text = std::fs::read_to_string(&entry).unwrap_or_default();
        if text.contains("Retrieval follows this validated plan") && text.contains("find_decisions")
        {
            found = true;
        }
    }
    assert!(
        found,
        "the accepted plan should be in the lead's conversation"
    );
}

#[tokio::test]
async fn the_planning_agents_answer_is_the_plan_and_a_status_plan_opens_no_documents() {
    let (_dir, project) = project();
    let script = format!(
        "agents:\n  lead:\n    - turns:\n        - tool_calls:\n{}        - tool_calls:\n{}        - content: \"no data source here\"\n  analyst:\n    - turns:\n        - content: {}\n",
        call("task", "{subagent_type: analyst, description: plan, prompt: \"What is the sprint completion rate for sprint 12?\"}"),
        call("task", "{subagent_type: thoughts-locator, description: find, prompt: \"find it\"}"),
        serde_json::to_string(DB_PLAN).unwrap(),
    );
    let (status, events) = run(&project, &script, "lead", "sprint 12 rate").await;
    assert_eq!(status, SessionStatus::Completed);
    let results = lead_results(&events);
    assert!(
        !results[0].1,
        "the delegation to the planning agent is open"
    );
    assert!(
        results[0].2.contains("[gate] Plan accepted"),
        "{}",
        results[0].2
    );
    assert!(
        results[1].1,
        "db opens nothing here, so the locator stays closed"
    );
    assert!(
        results[1].2.contains("chose source(s) db"),
        "{}",
        results[1].2
    );
    assert_eq!(
        plans(&events),
        [("analyst".to_string(), vec!["db".to_string()], vec![], false)]
    );
    // The locator never ran: no hop of it was started.
    assert!(!events
        .iter()
        .any(|e| matches!(e.kind, EventKind::HopStarted { .. })
            && e.agent.as_deref() == Some("thoughts-locator")));
}

#[tokio::test]
async fn a_planning_agent_that_falls_back_gives_the_gate_its_conservative_plan() {
    let (_dir, project) = project();
    // Three unusable answers: the first and two repair turns; then the declared fallback.
    let script = format!(
        "agents:\n  lead:\n    - turns:\n        - tool_calls:\n{}        - tool_calls:\n{}        - content: \"read it\"\n  analyst:\n    - turns:\n        - content: \"I think you want docs.\"\n        - content: \"Still prose.\"\n        - content: \"No JSON, sorry.\"\n",
        call("task", "{subagent_type: analyst, description: plan, prompt: \"Where is the event log described?\"}"),
        call("read", "{path: agent/lead.md}"),
    );
    let (status, events) = run(&project, &script, "lead", "event log").await;
    assert_eq!(status, SessionStatus::Completed);
    assert_eq!(
        plans(&events),
        [(
            "analyst".to_string(),
            vec!["policy".to_string()],
            vec!["read".to_string()],
            true
        )]
    );
    let results = lead_results(&events);
    assert!(!results[1].1, "policy opens read: {}", results[1].2);
}

#[tokio::test]
async fn lint_points_at_each_wrong_name_in_a_gate() {
    let (dir, project) = project();
    std::fs::write(
        dir.path().join("agent/lead.md"),
        LEAD.replace("plan: analyst", "plan: analist")
            .replace("code: [grep]", "code: [grepp, write]\n    web: [glob]"),
    )
    .unwrap();
    let set = load(&project, &LoadOptions::default());
    let problems = switchboard::lint::lint_project(&project, &set);
    let gate: Vec<(String, usize, usize)> = problems
        .iter()
        .filter(|p| p.code.starts_with("gate/"))
        .map(|p| (p.code.to_string(), p.line, p.column))
        .collect();
    assert!(
        gate.contains(&("gate/unknown-plan-agent".into(), 9, 9)),
        "{gate:?}"
    );
    assert!(
        gate.contains(&("gate/unknown-name".into(), 12, 12)),
        "{gate:?}"
    );
    assert!(
        gate.contains(&("gate/not-usable".into(), 12, 19)),
        "{gate:?}"
    );
    let unknown = problems
        .iter()
        .find(|p| p.code == "gate/unknown-plan-agent")
        .unwrap();
    assert_eq!(unknown.help.as_deref(), Some("did you mean `analyst`?"));
    // With the plan agent fixed, lint also sees that no plan can choose `web`.
    std::fs::write(
        dir.path().join("agent/lead.md"),
        LEAD.replace("code: [grep]", "code: [grep]\n    web: [glob]"),
    )
    .unwrap();
    let set = load(&project, &LoadOptions::default());
    let problems = switchboard::lint::lint_project(&project, &set);
    let never = problems
        .iter()
        .find(|p| p.code == "gate/source-never-chosen")
        .expect("web is not in the analyst's source enum");
    assert_eq!(never.line, 13);
    // A declaration that cannot be read is a load error where it is written.
    std::fs::write(
        dir.path().join("agent/lead.md"),
        LEAD.replace(
            "  sources:\n",
            "  sources_field: required_sources\n  sources:\n",
        ),
    )
    .unwrap();
    let set = load(&project, &LoadOptions::default());
    let d = set
        .diagnostics
        .iter()
        .find(|p| p.code == "agent/gate")
        .expect("a sources_field that is no JSON pointer is refused");
    assert_eq!((d.line, d.column), (10, 18));
}

#[tokio::test]
async fn the_offline_researcher_plans_with_the_analyst_before_it_searches() {
    // The shipped agents and a small corpus: the offline model has to find its way through the
    // researcher's gate on its own.
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    fs::copy_tree(&root.join("agent"), &dir.path().join("agent"));
    fs::copy_tree(
        &Path::new(FIXTURE).join("thoughts"),
        &dir.path().join("thoughts"),
    );
    let project = Project::open(dir.path()).unwrap();
    let agents = Arc::new(load(&project, &LoadOptions::default()));
    assert!(!agents.has_errors(), "{:?}", agents.diagnostics);
    let registry = Arc::new(Registry::with_builtins(ProviderContext::default()));
    let ask = |task: &'static str| {
        let (project, agents, registry) = (project.clone(), agents.clone(), registry.clone());
        async move {
            let session = Session::new(
                project,
                agents,
                Config::default(),
                registry,
                RunOptions::default(),
                "researcher",
                task,
            )
            .unwrap();
            let outcome = session.run().await;
            (outcome.status, read_log(&outcome.events).unwrap())
        }
    };
    let (status, events) = ask("What did we decide about the event log?").await;
    assert_eq!(status, SessionStatus::Completed);
    let p = plans(&events);
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].0, "analyst");
    assert!(p[0].1.contains(&"doc".to_string()), "{p:?}");
    assert!(refusals(&events).is_empty(), "{:?}", refusals(&events));
    let started: Vec<&str> = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::HopStarted { .. }))
        .filter_map(|e| e.agent.as_deref())
        .collect();
    assert_eq!(
        &started[..3],
        ["researcher", "analyst", "thoughts-locator"],
        "{started:?}"
    );
    // `delegate_first: [thoughts-locator, codebase-locator]`: the plan opens `doc` and `code`,
    // so the runtime gives the question to both locators, in one turn, before the researcher's
    // first model request.
    assert_eq!(
        runtime_first(&events),
        [
            ("delegate_first".to_string(), "thoughts-locator".to_string()),
            (
                "delegate_first_2".to_string(),
                "codebase-locator".to_string()
            )
        ]
    );
    let first_request = events
        .iter()
        .position(|e| e.agent.as_deref() == Some("researcher") && e.kind.name() == "model.request")
        .unwrap();
    let last_locator = events
        .iter()
        .rposition(|e| e.agent.as_deref().is_some_and(|a| a.ends_with("-locator")))
        .unwrap();
    assert!(last_locator < first_request);
    // `analyze_found: true`: the document the thoughts-locator found goes to the
    // thoughts-analyzer as the runtime's call, also before the researcher's first request.
    let analyses = runtime_calls(&events, "analyze_found");
    assert_eq!(
        analyses.first(),
        Some(&("analyze_found".to_string(), "thoughts-analyzer".to_string())),
        "{analyses:?}"
    );
    let first_analysis = events
        .iter()
        .position(|e| e.agent.as_deref().is_some_and(|a| a.ends_with("-analyzer")))
        .unwrap();
    let analysis_done = events
        .iter()
        .position(|e| {
            e.agent.as_deref() == Some("researcher")
                && matches!(&e.kind, EventKind::ToolResult { call_id, is_error: false, .. }
                    if call_id == "analyze_found")
        })
        .expect("the runtime's analysis has its result");
    assert!(last_locator < first_analysis && analysis_done < first_request);
    assert!(events.iter().any(|e| matches!(&e.kind,
        EventKind::HopSteered { why, count }
            if why == "analyze_found" && *count as usize == analyses.len())));
    // The researcher does not ask for the same document again: every analysis of it is the
    // runtime's.
    let analyzed_paths: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolCall {
                tool, arguments, ..
            } if tool == "task" => {
                let target = arguments["subagent_type"].as_str()?;
                target
                    .ends_with("-analyzer")
                    .then(|| arguments["prompt"].as_str().unwrap_or("").to_string())
            }
            _ => None,
        })
        .collect();
    let first_prompt = tool_call_prompt(&events, "analyze_found");
    assert_eq!(
        analyzed_paths
            .iter()
            .filter(|p| **p == first_prompt)
            .count(),
        1,
        "{analyzed_paths:?}"
    );
    // The plan's note names no delegation of its own: the runtime's come next, and the 1.5B
    // researcher copied the note's call to a locator that had just answered.
    let plan_note = crate::support::wire::tool_output(&events, "gate_plan").unwrap();
    assert!(plan_note.contains("Plan accepted"), "{plan_note}");
    assert!(!plan_note.contains("Next, delegate"), "{plan_note}");

    let (status, events) = ask("What is the sprint completion rate for sprint 12?").await;
    assert_eq!(status, SessionStatus::Completed);
    let p = plans(&events);
    assert_eq!(p[0].1, ["db"], "{p:?}");
    // Neither locator is open: the runtime passes over both rather than have them refused.
    assert!(runtime_first(&events).is_empty());
    // `db` opens nothing here: the knowledge store and the locator stay closed.
    assert_eq!(
        refusals(&events),
        [
            ("recall".to_string(), None),
            ("task".to_string(), Some("thoughts-locator".to_string()))
        ]
    );
    // The report says why nothing was searched instead of claiming the documents are silent.
    let report = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::ToolResult {
                written: Some(w), ..
            } => Some(w.clone()),
            _ => None,
        })
        .expect("the researcher writes its report");
    let text = std::fs::read_to_string(dir.path().join(report)).unwrap();
    assert!(
        text.contains("The documents were not searched: the gate of `researcher`"),
        "{text}"
    );
}

/// The runtime's `delegate_first` calls: (call id, subagent).
fn runtime_first(events: &[Event]) -> Vec<(String, String)> {
    runtime_calls(events, "delegate_first")
}

/// The prompt of the `task` call with id `id`.
fn tool_call_prompt(events: &[Event], id: &str) -> String {
    events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::ToolCall {
                call_id, arguments, ..
            } if call_id == id => arguments["prompt"].as_str().map(str::to_string),
            _ => None,
        })
        .unwrap_or_default()
}

/// The runtime's calls whose id starts with `prefix`: (call id, subagent).
fn runtime_calls(events: &[Event], prefix: &str) -> Vec<(String, String)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolCall {
                call_id, arguments, ..
            } if call_id.starts_with(prefix) => Some((
                call_id.clone(),
                arguments["subagent_type"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
            )),
            _ => None,
        })
        .collect()
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// A plan sent again unchanged while the gate stands where it did is not judged again: it
/// would be accepted again and change nothing, and the model is told to go on. (A call is
/// keyed with the gate's state, so the first repeat, made after the plan opened the gate, is
/// still judged; the 1.5B researcher over llama-server sent the plan its runtime-asked analyst
/// had already given seven turns running.)
#[tokio::test]
async fn an_accepted_plan_sent_again_unchanged_is_not_run_again() {
    let (_dir, project) = project();
    let script = format!(
        "agents:\n  lead:\n    - turns:\n        - tool_calls:\n{}        - tool_calls:\n{}        - tool_calls:\n{}        - content: \"done\"\n",
        call("plan", DOC_PLAN),
        call("plan", DOC_PLAN),
        call("plan", DOC_PLAN),
    );
    let (_, events) = run(&project, &script, "lead", "What did we decide?").await;
    let results = lead_results(&events);
    let flags: Vec<(&str, bool)> = results.iter().map(|(t, e, _)| (t.as_str(), *e)).collect();
    assert_eq!(
        flags,
        [("plan", false), ("plan", false), ("plan", true)],
        "{results:?}"
    );
    assert!(
        results[2]
            .2
            .contains("not run: you made this exact `plan` call already"),
        "{}",
        results[2].2
    );
    assert_eq!(plans(&events).len(), 2, "judged twice, not three times");
}

/// A task for a source's finder that names a file to read goes to the source's reader, and the
/// caller is told so beside the reader's answer (the 1.5B researcher sent "Read `…`" to a
/// locator, which searched for 17 minutes and read nothing). A task naming no file stays.
#[tokio::test]
async fn a_finder_handed_a_file_to_read_gives_the_task_to_its_reader() {
    let (dir, project) = project();
    let lead = LEAD
        .replace(
            "doc: [thoughts-locator, read]",
            "doc: [finder, reader, read]",
        )
        .replace(
            r#""thoughts-*": allow"#,
            r#""finder": allow, "reader": allow"#,
        );
    std::fs::write(dir.path().join("agent/lead.md"), lead).unwrap();
    let sub = "---\ndescription: \"A subagent of the gate tests.\"\nmode: subagent\ntools: {read: true}\n---\nS.\n";
    std::fs::write(dir.path().join("agent/finder.md"), sub).unwrap();
    std::fs::write(dir.path().join("agent/reader.md"), sub).unwrap();
    let project = Project::open(project.root()).unwrap();
    let doc = "thoughts/shared/decisions/2026-01-10-event-log.md";
    let script = format!(
        "agents:\n  lead:\n    - turns:\n        - tool_calls:\n{}        - tool_calls:\n{}        - tool_calls:\n{}        - content: \"done\"\n  reader:\n    - turns:\n        - content: \"the record says JSON lines\"\n  finder:\n    - turns:\n        - content: \"found nothing\"\n",
        call("plan", DOC_PLAN),
        call(
            "task",
            &format!("{{subagent_type: finder, description: read, prompt: \"Read `{doc}`.\"}}")
        ),
        call("task", "{subagent_type: finder, description: find, prompt: \"find the log decision\"}"),
    );
    let (status, events) = run(&project, &script, "lead", "What did we decide?").await;
    assert_eq!(status, SessionStatus::Completed);
    let started: Vec<(String, String)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::HopStarted { prompt, .. } if e.agent.as_deref() != Some("lead") => {
                Some((e.agent.clone().unwrap_or_default(), prompt.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        started,
        [
            ("reader".to_string(), format!("Read `{doc}`.")),
            ("finder".to_string(), "find the log decision".to_string()),
        ]
    );
    let results = lead_results(&events);
    assert!(
        results[1].2.starts_with(&format!(
            "[runtime] `finder` finds files; this task names `{doc}` to read, so `reader` read it."
        )) && results[1].2.contains("the record says JSON lines"),
        "{}",
        results[1].2
    );
    let steered = events
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::HopSteered { why, .. } if why == "task_to_reader"))
        .count();
    assert_eq!(steered, 1);
}

/// The gate tests' project with a lead whose `doc` source is `finder` then `reader` and whose
/// `code` source is `seeker` then `studier`; the finders search `thoughts` and `src` first
/// (`search_first:`).
fn two_source_project() -> tempfile::TempDir {
    let (dir, _) = project();
    let lead = LEAD
        .replace(
            "doc: [thoughts-locator, read]\n    code: [grep]",
            "doc: [finder, reader]\n    code: [seeker, studier]",
        )
        .replace(
            r#""thoughts-*": allow"#,
            r#""finder": allow, "reader": allow, "seeker": allow, "studier": allow"#,
        );
    std::fs::write(dir.path().join("agent/lead.md"), lead).unwrap();
    for (name, search) in [
        ("finder", "search_first: thoughts\n"),
        ("seeker", "search_first: src\n"),
        ("reader", ""),
        ("studier", ""),
    ] {
        std::fs::write(
            dir.path().join(format!("agent/{name}.md")),
            format!("---\ndescription: \"A subagent of the gate tests.\"\nmode: subagent\ntools: {{read: true, grep: true}}\n{search}---\nS.\n"),
        )
        .unwrap();
    }
    dir
}

/// Writes each `(path, text)` under `dir`, its folders made.
fn write_files(dir: &tempfile::TempDir, files: &[(&str, &str)]) {
    for (path, text) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

/// A document handed to the finder of another source goes to the reader of the source whose
/// finder searches its folder (`search_first:`); the same task sent to that reader before is a
/// repeat, not run again.
#[tokio::test]
async fn a_file_goes_to_the_reader_of_the_source_that_searches_its_folder() {
    let dir = two_source_project();
    let project = Project::open(dir.path()).unwrap();
    let doc_and_code = DOC_PLAN.replace(r#"["doc"]"#, r#"["doc", "code"]"#);
    let doc = "thoughts/shared/decisions/2026-01-10-event-log.md";
    let task = |to: &str| {
        call(
            "task",
            &format!("{{subagent_type: {to}, description: read, prompt: \"Read `{doc}`.\"}}"),
        )
    };
    let script = format!(
        "agents:\n  lead:\n    - turns:\n        - tool_calls:\n{}        - tool_calls:\n{}        - tool_calls:\n{}        - tool_calls:\n{}        - content: \"done\"\n  reader:\n    - turns:\n        - content: \"the record says JSON lines\"\n    - turns:\n        - content: \"it decides JSON lines\"\n",
        call("plan", &doc_and_code),
        task("seeker"),
        task("reader"),
        call(
            "task",
            &format!("{{subagent_type: studier, description: ask, prompt: \"What does `{doc}` decide?\"}}"),
        ),
    );
    let (status, events) = run(&project, &script, "lead", "What did we decide?").await;
    assert_eq!(status, SessionStatus::Completed);
    let started = subagents_started(&events);
    // The record sent to the code source's reader goes to the reader of its own source.
    assert_eq!(started, ["reader", "reader"]);
    let results = lead_results(&events);
    assert!(
        results[3].2.contains("so `reader` read it, not `studier`") && !results[3].1,
        "{}",
        results[3].2
    );
    assert!(
        results[1].2.contains("so `reader` read it") && !results[1].1,
        "{}",
        results[1].2
    );
    assert!(
        results[2].1 && results[2].2.contains("already"),
        "{}",
        results[2].2
    );
}

/// Two finders run at once, each after its own runtime search (`search_first:`): the file one
/// search ranked first leads only that finder's answer. Before, the ranked-first files were one
/// session-wide set, so a code file the other finder's search ranked first jumped ahead in the
/// thoughts finder's list and was handed to the thoughts reader. Run a few times: the two hops
/// race, and the answer must not depend on which search ends first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_finders_each_lead_with_their_own_searchs_first_file() {
    for round in 0..4 {
        let dir = two_source_project();
        let note = "thoughts/shared/notes/zebra.md";
        let code = "src/zebra.rs";
        let other = "thoughts/shared/research/2026-03-15-parallelism.md";
        write_files(
            &dir,
            &[
                (note, "# Zebra\n\nThe zebra crossing is decided.\n"),
                (code, "//! Zebra crossings.\npub fn zebra() {}\n"),
            ],
        );
        let project = Project::open(dir.path()).unwrap();
        let doc_and_code = DOC_PLAN.replace(r#"["doc"]"#, r#"["doc", "code"]"#);
        let task = |to: &str| {
            call(
                "task",
                &format!("{{subagent_type: {to}, description: find, prompt: \"Find zebra.\"}}"),
            )
        };
        // The thoughts finder lists the code file before its own search's file.
        let script = format!(
            "agents:\n  lead:\n    - turns:\n        - tool_calls:\n{}        - tool_calls:\n{}{}        - content: \"done\"\n        - content: \"done\"\n        - content: \"done\"\n  finder:\n    - turns:\n        - content: \"- `{other}`\\n- `{code}`\\n- `{note}`\"\n  seeker:\n    - turns:\n        - content: \"- `{code}`\"\n  reader:\n    - turns:\n        - content: \"it decides the crossing\"\n  studier:\n    - turns:\n        - content: \"it declares zebra\"\n",
            call("plan", &doc_and_code),
            task("finder"),
            task("seeker"),
        );
        let (status, events) = run(&project, &script, "lead", "What about zebra?").await;
        assert_eq!(status, SessionStatus::Completed, "round {round}");
        // The note after each answer names the next delegation: the thoughts reader is given
        // the thoughts finder's own first file, never the code file the other search ranked
        // first.
        let notes: Vec<String> = lead_results(&events)
            .into_iter()
            .filter(|(tool, _, _)| tool == "task")
            .map(|(_, _, output)| output)
            .collect();
        assert_eq!(notes.len(), 2, "round {round}: {notes:?}");
        for n in &notes {
            assert!(
                n.contains(&format!("Read `{note}`")) && !n.contains(&format!("Read `{code}`")),
                "round {round}: {n}"
            );
        }
    }
}

/// A task naming only files a reader of the gate was given and cited in verified Evidence is
/// refused, whichever finder or reader it is sent to and however it is worded; one that names
/// a file not analyzed yet still runs. The 1.5B researcher, both analyses in, sent a locator
/// "Read `…path-confinement.md` and `src/project.rs`": a third analysis of a record read
/// minutes before (t2 on 7c23773).
#[tokio::test]
async fn a_task_about_files_analyzed_already_is_refused() {
    let dir = two_source_project();
    let doc = "thoughts/shared/decisions/zebra.md";
    let code = "src/zebra.rs";
    write_files(
        &dir,
        &[
            (doc, "# Zebra\n\nZebra crossings are painted white.\n"),
            (code, "//! Zebra crossings.\npub fn zebra() {}\n"),
        ],
    );
    let project = Project::open(dir.path()).unwrap();
    let doc_and_code = DOC_PLAN.replace(r#"["doc"]"#, r#"["doc", "code"]"#);
    let task = |to: &str, prompt: &str| {
        call(
            "task",
            &format!("{{subagent_type: {to}, description: read, prompt: \"{prompt}\"}}"),
        )
    };
    let evidence = format!(
        "- **Evidence**: `{doc}:3`\\n- **Excerpt**:\\n```\\nZebra crossings are painted white.\\n```"
    );
    let script = format!(
        "agents:\n  lead:\n    - turns:\n        - tool_calls:\n{}        - tool_calls:\n{}        - tool_calls:\n{}        - tool_calls:\n{}        - tool_calls:\n{}        - content: \"done\"\n  reader:\n    - turns:\n        - content: \"{evidence}\"\n  studier:\n    - turns:\n        - content: \"it declares zebra\"\n    - turns:\n        - content: \"it declares zebra\"\n",
        call("plan", &doc_and_code),
        task("reader", &format!("Read `{doc}`.")),
        task("finder", &format!("What does `{doc}` say about crossings?")),
        task("studier", &format!("Read `{doc}` and `{code}`.")),
        task("seeker", &format!("Read `{code}`.")),
    );
    let (status, events) = run(&project, &script, "lead", "What about zebra?").await;
    assert_eq!(status, SessionStatus::Completed);
    // The reader once; the code's reader once, for the task that names the code alone. The
    // task naming both files is not refused: the code was not analyzed yet.
    assert_eq!(subagents_started(&events), ["reader", "studier", "studier"]);
    let results = lead_results(&events);
    assert!(!results[1].1, "{}", results[1].2);
    assert!(
        results[2].1
            && results[2].2.starts_with("not run:")
            && results[2]
                .2
                .contains(&format!("`{doc}` was read and cited")),
        "{}",
        results[2].2
    );
    assert!(!results[3].1 && !results[4].1, "{results:?}");
    let refused = events
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::HopSteered { why, .. } if why == "task_analyzed_already"))
        .count();
    assert_eq!(refused, 1);
}

/// When the reader of a source ended BLOCKED, a task naming that source's files is refused,
/// whichever finder or reader it was sent to: no other source's reader gets them. A task naming
/// a file of the other source still goes to that source's reader. The 1.5B researcher's
/// decision record, rejected by the thoughts-analyzer's validator, went to the codebase-analyzer
/// instead, which was still reading it when the session hit its wall-clock limit (t1, stop 58).
#[tokio::test]
async fn files_whose_reader_ended_blocked_go_to_no_other_reader() {
    let dir = two_source_project();
    std::fs::write(
        dir.path().join("agent/reader.md"),
        "---\ndescription: \"A subagent of the gate tests.\"\nmode: subagent\ntools: {read: true}\ncontract:\n  extends: envelope\n  message_types: [READER_RESPONSE]\n  message_id_prefix: reader\n  on_violation: fail\n  max_repairs: 1\n---\nS.\n",
    )
    .unwrap();
    let code = "src/zebra.rs";
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(
        dir.path().join(code),
        "//! Zebra crossings.\npub fn zebra() {}\n",
    )
    .unwrap();
    let project = Project::open(dir.path()).unwrap();
    let doc_and_code = DOC_PLAN.replace(r#"["doc"]"#, r#"["doc", "code"]"#);
    let doc = "thoughts/shared/decisions/2026-01-10-event-log.md";
    let task = |to: &str, prompt: &str| {
        call(
            "task",
            &format!("{{subagent_type: {to}, description: read, prompt: \"{prompt}\"}}"),
        )
    };
    let script = format!(
        "agents:\n  lead:\n    - turns:\n        - tool_calls:\n{}        - tool_calls:\n{}        - tool_calls:\n{}        - tool_calls:\n{}        - tool_calls:\n{}        - content: \"done\"\n  reader:\n    - turns:\n        - content: \"not an envelope\"\n        - content: \"still not one\"\n  studier:\n    - turns:\n        - content: \"it declares zebra\"\n",
        call("plan", &doc_and_code),
        task("reader", &format!("Read `{doc}`.")),
        task("seeker", &format!("Read `{doc}` and say what it decides.")),
        task("studier", &format!("What does `{doc}` decide?")),
        task("seeker", &format!("Read `{code}`.")),
    );
    // Not `run`: the reader's hop ends BLOCKED, which logs `hop.failed` too.
    let (outcome, events) = scripted::run_agent(
        &project,
        Config::default(),
        &script,
        "lead",
        "What did we decide?",
    )
    .await;
    assert_eq!(outcome.status, SessionStatus::Completed);
    let started = subagents_started(&events);
    assert_eq!(started, ["reader", "studier"]);
    let results = lead_results(&events);
    assert!(
        results[1].1 && results[1].2.contains("BLOCKED"),
        "{}",
        results[1].2
    );
    for r in &results[2..4] {
        assert!(
            r.1 && r.2.starts_with("not run:")
                && r.2.contains(&format!("`{doc}`"))
                && r.2.contains("`reader`, which reads them, ended BLOCKED"),
            "{}",
            r.2
        );
    }
    assert!(
        !results[4].1 && results[4].2.contains("so `studier` read it"),
        "{}",
        results[4].2
    );
    let steered: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::HopSteered { why, .. } if why.starts_with("task_") => Some(why.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        steered,
        [
            "task_reader_blocked",
            "task_reader_blocked",
            "task_to_reader"
        ]
    );
}
