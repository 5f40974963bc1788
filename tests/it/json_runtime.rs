//! JSON contracts in the runtime, end to end with the scripted provider and the shipped
//! agent/analyst.md: repair turns, the fallback, one clarifying question with `resume --answer`,
//! and the contract counters read back from the event log.

use std::sync::Arc;

use switchboard::agent::{load, LoadOptions};
use switchboard::config::Config;
use switchboard::model::{ProviderContext, Registry};
use switchboard::project::Project;
use switchboard::runtime::events::read_log;
use switchboard::runtime::resume::plan_from_log;
use switchboard::runtime::stats::{tally, StatsFilter};
use switchboard::runtime::{Event, EventKind, RunOptions, Session, SessionOutcome, SessionStatus};

use crate::support::scripted;

fn project() -> (tempfile::TempDir, Project) {
    scripted::project_with_analyst()
}

use scripted::registry;

async fn run_analyst(project: &Project, script: &str, task: &str) -> (SessionOutcome, Vec<Event>) {
    scripted::run_agent(project, Config::default(), script, "analyst", task).await
}

fn outcomes(events: &[Event]) -> Vec<(String, u32, Option<String>, bool)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ContractOutcome {
                outcome,
                repairs,
                reason,
                question,
                ..
            } => Some((outcome.clone(), *repairs, reason.clone(), *question)),
            _ => None,
        })
        .collect()
}

const GOOD: &str = r#"{"intent": "sprint_rate", "request_type": "STATUS_METRIC", "track": "QUALITY", "required_sources": ["db"], "missing_info_questions": [], "expected_output_schema": "status_v1_json"}"#;
const ASKS: &str = r#"{"intent": "sprint_rate", "request_type": "STATUS_METRIC", "track": "QUALITY", "required_sources": ["db"], "missing_info_questions": ["Which sprint do you mean?"], "expected_output_schema": "clarification_v1"}"#;

fn script(turns: &[&str]) -> String {
    let mut s = String::from("agents:\n  analyst:\n    - turns:\n");
    for t in turns {
        s.push_str(&format!(
            "        - content: {}\n",
            serde_json::to_string(t).unwrap()
        ));
    }
    s
}

#[tokio::test]
async fn a_schema_failure_is_repaired_and_counted() {
    let (_dir, project) = project();
    let bad = GOOD.replace("STATUS_METRIC", "WEATHER");
    let (outcome, events) = run_analyst(&project, &script(&[&bad, GOOD]), "sprint rate").await;
    assert_eq!(outcome.status, SessionStatus::Completed, "{outcome:?}");
    assert_eq!(outcomes(&events), [("repaired".into(), 1, None, false)]);
    let counts = tally(&events, &StatsFilter::default());
    assert_eq!(counts["analyst"].repaired.get(&1), Some(&1));
    assert_eq!(counts["analyst"].total(), 1);
}

#[tokio::test]
async fn a_parse_failure_ends_in_the_declared_fallback() {
    let (_dir, project) = project();
    let (outcome, events) = run_analyst(
        &project,
        &script(&[
            "Sure! Here is my plan.",
            "{\"intent\": NaN}",
            "```\nnot json\n```",
        ]),
        "sprint rate",
    )
    .await;
    assert_eq!(outcome.status, SessionStatus::Fallback, "{outcome:?}");
    let plan: serde_json::Value = serde_json::from_str(&outcome.answer).unwrap();
    assert_eq!(plan["intent"], "fallback_plan");
    assert_eq!(plan["required_sources"], serde_json::json!(["policy"]));
    assert!(plan["note"].as_str().unwrap().contains("`analyst`"));
    assert!(outcome.error.as_deref().unwrap().starts_with("parse: "));
    assert_eq!(
        outcomes(&events),
        [("fallback".into(), 2, Some("parse".into()), false)]
    );
    let counts = tally(&events, &StatsFilter::default());
    assert_eq!(counts["analyst"].fallback.get("parse"), Some(&1));
}

/// A fallback stands in for an answer that failed its contract, not for a document the agent
/// owes: an agent with both ends PARTIAL (exit 4), not FALLBACK (which counts as completed).
#[tokio::test]
async fn a_fallback_does_not_stand_in_for_an_owed_document() {
    let (dir, _) = project();
    let path = dir.path().join("agent/analyst.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let owing = text.replacen(
        "steps: 4\n",
        "steps: 4\ndeliver: {write: \"thoughts/plans/*.md\"}\n",
        1,
    );
    assert_ne!(
        owing, text,
        "the analyst's frontmatter has no `steps: 4` line"
    );
    std::fs::write(&path, owing).unwrap();
    let project = Project::open(dir.path()).unwrap();
    let failing = script(&["Sure! Here is my plan.", "{\"intent\": NaN}", "not json"]);
    let (outcome, events) = run_analyst(&project, &failing, "sprint rate").await;
    assert_eq!(outcome.status, SessionStatus::Partial, "{outcome:?}");
    assert_eq!(
        outcomes(&events),
        [("fallback".into(), 2, Some("parse".into()), false)]
    );
    let checked: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::DeliverChecked { outcome, path, .. } => {
                Some((outcome.clone(), path.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(checked, [("partial".to_string(), None)]);
}

#[tokio::test]
async fn a_question_waits_for_the_user_and_resume_answers_it() {
    let (_dir, project) = project();
    // The first run asks. The resumed run asks again (a violation), then plans.
    let (outcome, events) =
        run_analyst(&project, &script(&[ASKS]), "What's the completion rate?").await;
    assert_eq!(outcome.status, SessionStatus::NeedsInput, "{outcome:?}");
    assert_eq!(outcome.error.as_deref(), Some("Which sprint do you mean?"));
    assert_eq!(outcomes(&events), [("valid".into(), 0, None, true)]);

    let plan = plan_from_log(&outcome.events).unwrap();
    assert_eq!(plan.question.as_deref(), Some("Which sprint do you mean?"));
    let plan = plan.answer("sprint 42").unwrap();
    assert!(plan.prompt.contains("The user answered: sprint 42"));
    let agents = Arc::new(load(&project, &LoadOptions::default()));
    let options = RunOptions {
        model: Some("scripted/test".into()),
        questions_asked: 1,
        ..RunOptions::default()
    };
    let session = Session::resume(
        project.clone(),
        agents,
        Config::default(),
        registry(&script(&[ASKS, GOOD])),
        options,
        plan,
    )
    .unwrap();
    let resumed = session.run().await;
    assert_eq!(resumed.status, SessionStatus::Completed, "{resumed:?}");
    let events = read_log(&resumed.events).unwrap();
    let second_question = events.iter().any(|e| {
        matches!(&e.kind, EventKind::ContractChecked { violations, .. }
            if violations.iter().any(|v| v.code == "json/question"))
    });
    assert!(second_question, "a second question is a violation");
    let counts = tally(&events, &StatsFilter::default());
    assert_eq!(counts["analyst"].questions, 1);
    assert_eq!(counts["analyst"].repaired.get(&1), Some(&1));
}

#[tokio::test]
async fn the_offline_model_drives_the_analyst_through_a_question() {
    let (_dir, project) = project();
    let agents = Arc::new(load(&project, &LoadOptions::default()));
    let session = Session::new(
        project.clone(),
        agents.clone(),
        Config::default(),
        Arc::new(Registry::with_builtins(ProviderContext::default())),
        RunOptions::default(),
        "analyst",
        "How many tickets were closed?",
    )
    .unwrap();
    let outcome = session.run().await;
    assert_eq!(outcome.status, SessionStatus::NeedsInput, "{outcome:?}");
    let plan = plan_from_log(&outcome.events)
        .unwrap()
        .answer("last week")
        .unwrap();
    let session = Session::resume(
        project.clone(),
        agents,
        Config::default(),
        Arc::new(Registry::with_builtins(ProviderContext::default())),
        RunOptions {
            questions_asked: 1,
            ..RunOptions::default()
        },
        plan,
    )
    .unwrap();
    let resumed = session.run().await;
    assert_eq!(resumed.status, SessionStatus::Completed, "{resumed:?}");
    let plan: serde_json::Value = serde_json::from_str(&resumed.answer).unwrap();
    assert_eq!(plan["request_type"], "STATUS_METRIC");
    assert_eq!(plan["missing_info_questions"], serde_json::json!([]));
}

#[tokio::test]
async fn a_subagents_question_goes_to_its_caller_not_the_user() {
    let (dir, project) = project();
    let researcher = dir.path().join("agent/researcher.md");
    let text = std::fs::read_to_string(&researcher).unwrap();
    std::fs::write(
        &researcher,
        text.replace(
            "\"planner\": allow}",
            "\"planner\": allow, \"analyst\": allow}",
        ),
    )
    .unwrap();
    let yaml = format!(
        "agents:\n  researcher:\n    - turns:\n        - tool_calls:\n            - name: task\n              arguments: {{subagent_type: analyst, description: plan, prompt: \"What is the completion rate?\"}}\n        - content: \"The analyst asked which sprint; answering with all sprints.\"\n  analyst:\n    - turns:\n        - content: {}\n",
        serde_json::to_string(ASKS).unwrap()
    );
    let agents = Arc::new(load(&project, &LoadOptions::default()));
    assert!(!agents.has_errors(), "{:?}", agents.diagnostics);
    let session = Session::new(
        project.clone(),
        agents,
        Config::default(),
        registry(&yaml),
        RunOptions {
            model: Some("scripted/test".into()),
            ..RunOptions::default()
        },
        "researcher",
        "Find the completion rate",
    )
    .unwrap();
    let outcome = session.run().await;
    assert_eq!(outcome.status, SessionStatus::Completed, "{outcome:?}");
    let events = read_log(&outcome.events).unwrap();
    let analyst_status = events.iter().find_map(|e| match &e.kind {
        EventKind::HopCompleted { status, .. } if e.agent.as_deref() == Some("analyst") => {
            Some(*status)
        }
        _ => None,
    });
    assert_eq!(
        analyst_status.map(|s| s.as_str()),
        Some("completed"),
        "the question is an ordinary result for the caller"
    );
    assert_eq!(outcomes(&events), [("valid".into(), 0, None, true)]);
}
