//! `evidence_goal:`: a checked answer with fewer verified Evidence items than the goal (but at
//! least one) is asked once for more, shown uncited lines of its file; the richer answer goes
//! up, and a second answer that fails its contract never costs the first.

use std::path::Path;

use switchboard::config::Config;
use switchboard::project::Project;
use switchboard::runtime::{Event, EventKind, Outcome, SessionOutcome};

const LEAD: &str = "---\nname: lead\ndescription: \"Delegates to worker.\"\nmode: primary\ntools: {task: true}\n---\nYou are {{ agent }}.\n";
const WORKER: &str = "---\nname: worker\ndescription: \"Answers in an envelope.\"\nmode: subagent\ntools: {read: true}\nevidence_goal: 3\ncontract:\n  extends: envelope\n  message_types: [WORKER_RESPONSE]\n  message_id_prefix: worker\n  max_repairs: 2\n---\nYou are {{ agent }}.\n";
const DOC: &str = "---\nstatus: accepted\n---\n# Parser\n\nWe parse YAML with serde-saphyr behind our own splitter.\n\n- It never panics on malformed input from users.\n- It reports the line and column of every error.\n";

fn project() -> (tempfile::TempDir, Project) {
    let dir = tempfile::tempdir().unwrap();
    let agents = dir.path().join("agent");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(agents.join("lead.md"), LEAD).unwrap();
    std::fs::write(agents.join("worker.md"), WORKER).unwrap();
    std::fs::write(dir.path().join("d.md"), DOC).unwrap();
    let p = Project::open(dir.path()).unwrap();
    (dir, p)
}

/// One item citing `d.md` line `n`, quoting `text`.
fn item(title: &str, n: usize, text: &str) -> String {
    format!("### {title}\n- **Evidence**: `d.md:{n}`\n- **Excerpt**:\n  ```\n  {text}\n  ```\n")
}

const DECISION: (usize, &str) = (
    6,
    "We parse YAML with serde-saphyr behind our own splitter.",
);
const PANICS: (usize, &str) = (8, "- It never panics on malformed input from users.");
const LINES: (usize, &str) = (9, "- It reports the line and column of every error.");

/// A worker turn whose envelope passes the contract, its answer `text`.
fn envelope(text: &str) -> String {
    let body = format!("---\nmessage_id: {{{{ message_id }}}}\nmessage_type: WORKER_RESPONSE\ncorrelation_id: {{{{ correlation_id }}}}\ntimestamp: {{{{ timestamp }}}}\n---\n<thinking>\nread it\n</thinking>\n<answer>\n{text}</answer>\n");
    format!(
        "        - content: |\n{}",
        body.lines()
            .map(|l| format!("            {l}\n"))
            .collect::<String>()
    )
}

async fn run(p: &Project, answers: &[String]) -> (SessionOutcome, Vec<Event>) {
    let worker: String = answers.iter().map(|a| envelope(a)).collect();
    let script = format!(
        "agents:\n  lead:\n    - turns:\n        - tool_calls: [{{name: task, arguments: {{subagent_type: worker, description: w, prompt: go}}}}]\n        - content: lead done\n  worker:\n    - turns:\n{worker}"
    );
    crate::support::scripted::run_agent(p, Config::default(), &script, "lead", "x").await
}

/// What the lead got back from the worker.
fn handed_up(events: &[Event]) -> String {
    events
        .iter()
        .filter(|e| e.agent.as_deref() == Some("lead"))
        .find_map(|e| match &e.kind {
            EventKind::ToolResult { output, .. } => Some(output.clone()),
            _ => None,
        })
        .expect("the task result")
}

fn steered(events: &[Event]) -> Vec<(String, u32)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::HopSteered { why, count } if why.starts_with("evidence_goal") => {
                Some((why.clone(), *count))
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_short_answer_is_asked_once_and_the_richer_one_goes_up() {
    let (_d, p) = project();
    let one = item("Decision: serde-saphyr", DECISION.0, DECISION.1);
    let three = format!(
        "{one}{}{}",
        item("Constraint: no panics", PANICS.0, PANICS.1),
        item("Spec: positions", LINES.0, LINES.1)
    );
    let (outcome, events) = run(&p, &[one, three]).await;
    assert_eq!(outcome.outcome, Outcome::Completed, "{outcome:?}");
    assert_eq!(
        steered(&events),
        [
            ("evidence_goal".to_string(), 1),
            ("evidence_goal_richer".to_string(), 1)
        ]
    );
    let up = handed_up(&events);
    assert!(up.contains("Spec: positions"), "{up}");
    // The ask showed the worker the uncited lines, exactly as the file has them.
    let transcripts =
        std::fs::read_to_string(Path::new(&outcome.events).with_file_name("transcripts.jsonl"))
            .unwrap();
    let worker = transcripts
        .lines()
        .find(|l| l.contains("You are worker") && l.contains("[runtime] Your answer is accepted"))
        .expect("the ask in the worker's transcript");
    assert!(worker.contains("`d.md:8`: - It never panics"), "{worker}");
    assert!(
        worker.contains("with 1 verified Evidence item(s)"),
        "{worker}"
    );
}

#[tokio::test]
async fn a_second_answer_that_breaks_the_contract_never_costs_the_first() {
    let (_d, p) = project();
    let one = item("Decision: serde-saphyr", DECISION.0, DECISION.1);
    let broken = item("Spec: invented", 8, "a line this file never had");
    let (outcome, events) = run(&p, &[one, broken.clone(), broken.clone(), broken]).await;
    assert_eq!(outcome.outcome, Outcome::Completed, "{outcome:?}");
    assert_eq!(
        steered(&events),
        [
            ("evidence_goal".to_string(), 1),
            ("evidence_goal_kept".to_string(), 1)
        ]
    );
    let up = handed_up(&events);
    assert!(up.contains("Decision: serde-saphyr"), "{up}");
    assert!(!up.contains("invented"), "{up}");
}

#[tokio::test]
async fn an_answer_at_the_goal_or_with_nothing_verified_is_not_asked() {
    let (_d, p) = project();
    let three = format!(
        "{}{}{}",
        item("Decision: serde-saphyr", DECISION.0, DECISION.1),
        item("Constraint: no panics", PANICS.0, PANICS.1),
        item("Spec: positions", LINES.0, LINES.1)
    );
    let (outcome, events) = run(&p, &[three]).await;
    assert_eq!(outcome.outcome, Outcome::Completed, "{outcome:?}");
    assert!(steered(&events).is_empty());
    let (outcome, events) = run(&p, &["No evidence here.\n".to_string()]).await;
    assert_eq!(outcome.outcome, Outcome::Completed, "{outcome:?}");
    assert!(steered(&events).is_empty());
}

/// Over the wire: the answer to the ask cut off at the output limit three times in a row never
/// costs the accepted answer before it; that one goes up (`evidence_goal_kept`), not a PARTIAL.
#[tokio::test]
async fn an_asked_answer_cut_off_too_often_never_costs_the_first() {
    use crate::support::mock::{answer, truncated, Mock};
    let (_d, p) = project();
    let today = chrono::Utc::now().format("%Y-%m-%d");
    let one = item("Decision: serde-saphyr", DECISION.0, DECISION.1);
    let first = format!(
        "---\nmessage_id: worker-{today}-001\nmessage_type: WORKER_RESPONSE\ncorrelation_id: corr-1\ntimestamp: {today}T10:00:00Z\n---\n<thinking>\nread it\n</thinking>\n<answer>\n{one}</answer>\n"
    );
    let mock = Mock::start().await;
    mock.push(answer(&first, vec![]));
    // Different text each time: no loop to find, only cuts.
    for n in 0..3 {
        let rambling = format!("### More {n}\n{}", "The parser reads. ".repeat(20 + n));
        mock.push(truncated(answer(&rambling, vec![])));
    }
    let options = switchboard::runtime::RunOptions {
        correlation_id: Some("corr-1".into()),
        ..Default::default()
    };
    let (outcome, events) =
        crate::support::wire::session_with(&p, &mock, "worker", "Read d.md.", options).await;
    let kinds: Vec<_> = events.iter().map(|e| e.kind.name()).collect();
    assert_eq!(outcome.status, "completed", "{outcome:?} {kinds:?}");
    assert_eq!(
        steered(&events),
        [
            ("evidence_goal".to_string(), 1),
            ("evidence_goal_kept".to_string(), 1)
        ]
    );
    let up = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::HopCompleted { answer, .. } => Some(answer.clone()),
            _ => None,
        })
        .unwrap_or_default();
    assert!(up.contains("Decision: serde-saphyr"), "{up}");
    assert!(!up.contains("More 0"), "{up}");
}
