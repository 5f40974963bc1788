//! Worker/validator pairs: `validator:` reviews each checked answer; `revise` feedback reaches
//! the worker only, bounded by its repair turns; `reject` (or endless revisions) ends the worker
//! BLOCKED. And the shipped pair (thoughts-analyzer + evidence-validator) on the offline model.

use std::path::Path;

use switchboard::agent::{load, LoadOptions};
use switchboard::config::Config;
use switchboard::project::Project;
use switchboard::runtime::events::read_log;
use switchboard::runtime::{Event, EventKind, Outcome, RunOptions, SessionOutcome};

const LEAD: &str = "---\nname: lead\ndescription: \"Delegates to worker.\"\nmode: primary\ntools: {task: true}\n---\nYou are {{ agent }}.\n";
const WORKER: &str = "---\nname: worker\ndescription: \"Answers in an envelope.\"\nmode: subagent\ntools: {read: true}\nvalidator: checker\ncontract:\n  extends: envelope\n  message_types: [WORKER_RESPONSE]\n  message_id_prefix: worker\n  max_repairs: 2\n---\nYou are {{ agent }}.\n";
const CHECKER: &str = "---\nname: checker\ndescription: \"Reviews worker answers.\"\nmode: subagent\ntools: {read: true}\ncontract:\n  name: verdict\n  format: json\n  max_repairs: 0\n  on_violation: fail\n  schema:\n    type: object\n    required: [verdict]\n    properties:\n      verdict: {enum: [accept, revise, reject]}\n      feedback: {type: string}\n---\nYou review.\n";

fn project() -> (tempfile::TempDir, Project) {
    let dir = tempfile::tempdir().unwrap();
    let agents = dir.path().join("agent");
    std::fs::create_dir_all(&agents).unwrap();
    for (name, text) in [("lead", LEAD), ("worker", WORKER), ("checker", CHECKER)] {
        std::fs::write(agents.join(format!("{name}.md")), text).unwrap();
    }
    let p = Project::open(dir.path()).unwrap();
    (dir, p)
}

/// A worker turn whose envelope passes the contract, saying `text`.
fn envelope(text: &str) -> String {
    let body = format!("---\nmessage_id: {{{{ message_id }}}}\nmessage_type: WORKER_RESPONSE\ncorrelation_id: {{{{ correlation_id }}}}\ntimestamp: {{{{ timestamp }}}}\n---\n<thinking>\nlooked\n</thinking>\n<answer>\n{text}\n</answer>\n");
    format!(
        "        - content: |\n{}",
        body.lines()
            .map(|l| format!("            {l}\n"))
            .collect::<String>()
    )
}

fn verdicts(v: &[&str]) -> String {
    if v.is_empty() {
        return "    []\n".into();
    }
    v.iter()
        .map(|j| format!("    - turns: [{{content: '{j}'}}]\n"))
        .collect()
}

async fn run(
    p: &Project,
    worker_answers: &[&str],
    checker: &[&str],
) -> (SessionOutcome, Vec<Event>) {
    let worker: String = worker_answers.iter().map(|a| envelope(a)).collect();
    let script = format!(
        "agents:\n  lead:\n    - turns:\n        - tool_calls: [{{name: task, arguments: {{subagent_type: worker, description: w, prompt: go}}}}]\n        - content: lead done\n  worker:\n    - turns:\n{worker}  checker:\n{}",
        verdicts(checker)
    );
    crate::support::scripted::run_agent(p, Config::default(), &script, "lead", "x").await
}

fn verdict_events(events: &[Event]) -> Vec<(String, u32)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ValidatorVerdict { verdict, round, .. } => Some((verdict.clone(), *round)),
            _ => None,
        })
        .collect()
}

fn lead_results(events: &[Event]) -> Vec<(bool, String)> {
    events
        .iter()
        .filter(|e| e.agent.as_deref() == Some("lead"))
        .filter_map(|e| match &e.kind {
            EventKind::ToolResult {
                is_error, output, ..
            } => Some((*is_error, output.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn an_accepted_answer_goes_to_the_caller_after_one_review() {
    let (_d, p) = project();
    let (outcome, events) = run(
        &p,
        &["first"],
        &[r#"{"verdict": "accept", "feedback": "fine"}"#],
    )
    .await;
    assert_eq!(outcome.outcome, Outcome::Completed, "{outcome:?}");
    assert_eq!(verdict_events(&events), [("accept".to_string(), 1)]);
    let r = lead_results(&events);
    assert!(!r[0].0 && r[0].1.contains("first"), "{r:?}");
    // The validator ran as the worker's child hop.
    let worker_hop = events
        .iter()
        .find(|e| e.agent.as_deref() == Some("worker"))
        .and_then(|e| e.hop_id.clone());
    let checker_parent = events
        .iter()
        .find(|e| e.agent.as_deref() == Some("checker"))
        .and_then(|e| e.parent_hop_id.clone());
    assert_eq!(checker_parent, worker_hop);
}

#[tokio::test]
async fn revise_feedback_reaches_only_the_worker_which_answers_again() {
    let (_d, p) = project();
    let (outcome, events) = run(
        &p,
        &["first", "second"],
        &[
            r#"{"verdict": "revise", "feedback": "PRIVATE-NOTE cite more"}"#,
            r#"{"verdict": "accept", "feedback": "ok"}"#,
        ],
    )
    .await;
    assert_eq!(outcome.outcome, Outcome::Completed, "{outcome:?}");
    assert_eq!(
        verdict_events(&events),
        [("revise".to_string(), 1), ("accept".to_string(), 2)]
    );
    let r = lead_results(&events);
    assert!(
        r[0].1.contains("second") && !r[0].1.contains("first"),
        "{r:?}"
    );
    assert!(
        !r[0].1.contains("PRIVATE-NOTE"),
        "the caller never sees feedback: {r:?}"
    );
    // The worker's transcript has the feedback as a user message.
    let transcripts =
        std::fs::read_to_string(Path::new(&outcome.events).with_file_name("transcripts.jsonl"))
            .unwrap();
    let worker_line = transcripts
        .lines()
        .find(|l| l.contains("\"agent\":\"worker\"") || l.contains("WORKER_RESPONSE"))
        .unwrap_or("");
    assert!(worker_line.contains("PRIVATE-NOTE"), "{worker_line}");
}

#[tokio::test]
async fn reject_and_endless_revisions_block_the_worker() {
    let (_d, p) = project();
    let (outcome, events) = run(
        &p,
        &["first"],
        &[r#"{"verdict": "reject", "feedback": "invented a decision"}"#],
    )
    .await;
    assert_eq!(
        outcome.outcome,
        Outcome::Completed,
        "the lead worked around it"
    );
    let r = lead_results(&events);
    assert!(r[0].0, "{r:?}");
    assert!(
        r[0].1.contains("is BLOCKED")
            && r[0].1.contains("rejected the answer: invented a decision"),
        "{r:?}"
    );
    assert!(
        !r[0].1.contains("first"),
        "a rejected answer never goes up: {r:?}"
    );

    let (_d, p) = project();
    let revise = r#"{"verdict": "revise", "feedback": "again"}"#;
    let (_, events) = run(&p, &["a", "b", "c"], &[revise, revise, revise]).await;
    assert_eq!(
        verdict_events(&events).len(),
        3,
        "max_repairs 2: two revisions, then blocked"
    );
    let r = lead_results(&events);
    assert!(
        r[0].1.contains("still asks for revisions after 2 round(s)"),
        "{r:?}"
    );
}

#[tokio::test]
async fn a_validator_without_a_usable_verdict_blocks_the_worker() {
    let (_d, p) = project();
    let (_, events) = run(&p, &["first"], &["looks fine"]).await;
    let r = lead_results(&events);
    assert!(r[0].0 && r[0].1.contains("gave no verdict"), "{r:?}");
    assert_eq!(verdict_events(&events), [("none".to_string(), 1)]);
}

#[tokio::test]
async fn the_shipped_pair_runs_on_the_offline_model() {
    let dir = tempfile::tempdir().unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    crate::support::fs::copy_tree(&repo.join("agent"), &dir.path().join("agent"));
    crate::support::fs::copy_tree(&repo.join("thoughts"), &dir.path().join("thoughts"));
    let p = Project::open(dir.path()).unwrap();
    let analyzer = load(&p, &LoadOptions::default());
    assert_eq!(
        analyzer
            .get("thoughts-analyzer")
            .and_then(|a| a.validator.clone())
            .as_deref(),
        Some("evidence-validator")
    );
    let outcome = switchboard::runtime::run(
        &p,
        &LoadOptions::default(),
        "researcher",
        "What did we decide about error tiers and token budgets?",
        RunOptions::default(),
    )
    .await
    .unwrap();
    assert_eq!(outcome.outcome, Outcome::Completed, "{outcome:?}");
    let events = read_log(&outcome.events).unwrap();
    let v = verdict_events(&events);
    assert!(
        !v.is_empty() && v.iter().all(|(w, _)| w == "accept"),
        "{v:?}"
    );
    let analyzers = events
        .iter()
        .filter(|e| {
            matches!(e.kind, EventKind::HopStarted { .. })
                && e.agent.as_deref() == Some("thoughts-analyzer")
        })
        .count();
    assert_eq!(
        v.len(),
        analyzers,
        "every analyzer answer was reviewed once"
    );
    // Every subagent played its part: a turn the offline model cannot serve (a locator offered
    // no tools, say) answers "cannot serve", which a contract may still accept.
    for e in &events {
        if let EventKind::HopCompleted { answer, .. } = &e.kind {
            assert!(!answer.contains("cannot serve"), "{:?}: {answer}", e.agent);
        }
    }
    assert!(
        analyzers >= 2,
        "the locator's documents were analyzed: {analyzers}"
    );
    // Each review's task ends with what the runtime proved of the answer's Evidence.
    let reviews: Vec<&str> = events
        .iter()
        .filter(|e| e.agent.as_deref() == Some("evidence-validator"))
        .filter_map(|e| match &e.kind {
            EventKind::HopStarted { prompt, .. } => Some(prompt.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(reviews.len(), v.len());
    for r in reviews {
        let note = r
            .split("[runtime] Checked before your review")
            .nth(1)
            .unwrap_or_else(|| panic!("no runtime note: {r}"));
        assert!(note.contains("Evidence item(s) verify"), "{note}");
        assert!(note.contains(": the document the task names"), "{note}");
    }
}

#[tokio::test]
async fn a_validator_that_names_no_agent_blocks_the_worker_with_what_to_restore() {
    let (dir, p) = project();
    std::fs::write(
        dir.path().join("agent/worker.md"),
        WORKER.replace("validator: checker", "validator: ghost"),
    )
    .unwrap();
    let (_, events) = run(&p, &["first"], &[]).await;
    let r = lead_results(&events);
    assert!(r[0].0, "{r:?}");
    assert!(r[0].1.contains("unknown agent `ghost`"), "{r:?}");
    assert!(r[0].1.contains("restore agent/ghost.md"), "{r:?}");
    let lint = switchboard::lint::lint(&load(&p, &LoadOptions::default()));
    assert!(
        lint.iter()
            .any(|d| d.code == "delegation/missing-validator"),
        "{lint:?}"
    );
}

/// A `reject` of an answer whose every Evidence item verifies goes back to the worker as a
/// revision while its repair turns last (`hop.steered` `reject_revised`); the revised answer is
/// reviewed again. The 1.5B evidence-validator rejected a thoughts-analyzer answer over one
/// title, and the verified items were lost with the BLOCKED hop (t1, stop 58).
#[tokio::test]
async fn a_reject_of_verified_evidence_is_a_revision_first() {
    let (d, p) = project();
    std::fs::write(d.path().join("a.md"), "alpha one\nalpha two\n").unwrap();
    let item = |title: &str| {
        format!(
            "#### Finding: {title}\n- **Evidence**: `a.md:1`\n- **Excerpt**:\n```\nalpha one\n```"
        )
    };
    let (first, second) = (item("alpha and beta"), item("alpha"));
    let (outcome, events) = run(
        &p,
        &[&first, &second],
        &[
            r#"{"verdict": "reject", "feedback": "beta is not in the excerpt"}"#,
            r#"{"verdict": "accept", "feedback": "ok"}"#,
        ],
    )
    .await;
    assert_eq!(outcome.outcome, Outcome::Completed, "{outcome:?}");
    assert_eq!(
        verdict_events(&events),
        [("reject".to_string(), 1), ("accept".to_string(), 2)]
    );
    let r = lead_results(&events);
    assert!(
        !r[0].0 && r[0].1.contains("Finding: alpha\n") && !r[0].1.contains("beta"),
        "{r:?}"
    );
    let revised = events
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::HopSteered { why, .. } if why == "reject_revised"))
        .count();
    assert_eq!(revised, 1);

    // Rejected in every round: BLOCKED once the rounds are spent.
    let (d, p) = project();
    std::fs::write(d.path().join("a.md"), "alpha one\nalpha two\n").unwrap();
    let reject = r#"{"verdict": "reject", "feedback": "no"}"#;
    let (_, events) = run(&p, &[&first, &first, &first], &[reject, reject, reject]).await;
    assert_eq!(verdict_events(&events).len(), 3);
    let r = lead_results(&events);
    assert!(
        r[0].0 && r[0].1.contains("rejected the answer: no"),
        "{r:?}"
    );
}

/// An objection names a finding and the words of it its excerpt does not support; one whose
/// words the excerpt holds is overruled and the answer goes up on its first review
/// (`validator.verdict` with `overruled`, counted as an accept by `stats`), while one whose
/// words the excerpt lacks goes back to the worker naming that finding. The 1.5B
/// evidence-validator rejected every answer it reviewed, clean ones too (2026-12-03).
#[tokio::test]
async fn an_objection_the_excerpt_answers_is_overruled_and_one_it_does_not_stands() {
    let (d, p) = project();
    std::fs::write(d.path().join("a.md"), "alpha one\nalpha two\n").unwrap();
    let item = |title: &str| {
        format!(
            "#### Finding: {title}\n- **Evidence**: `a.md:1`\n- **Excerpt**:\n```\nalpha one\n```"
        )
    };
    let clean = item("alpha one");
    let objection = |claim: &str| {
        format!(
            r#"{{"verdict": "reject", "finding": 1, "claim": "{claim}", "feedback": "it introduces information the excerpt does not support"}}"#
        )
    };
    let answered = objection("alpha one");
    let (outcome, events) = run(&p, &[&clean], &[&answered]).await;
    assert_eq!(outcome.outcome, Outcome::Completed, "{outcome:?}");
    let overruled: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ValidatorVerdict { overruled, .. } => overruled.as_deref(),
            _ => None,
        })
        .collect();
    assert_eq!(overruled.len(), 1, "{events:?}");
    assert!(
        overruled[0].contains("does not say the words"),
        "{overruled:?}"
    );
    let r = lead_results(&events);
    assert!(!r[0].0 && r[0].1.contains("Finding: alpha one"), "{r:?}");
    let counts = &switchboard::runtime::stats::tally(&events, &Default::default())["worker"];
    assert_eq!(
        (counts.valid_first_pass, counts.total()),
        (1, 1),
        "{counts:?}"
    );

    // Words the finding says and its excerpt lacks: sent back, naming the finding.
    let (d, p) = project();
    std::fs::write(d.path().join("a.md"), "alpha one\nalpha two\n").unwrap();
    let (bold, fixed) = (item("alpha one beats gamma"), item("alpha one"));
    let standing = objection("beats gamma");
    let (outcome, events) = run(
        &p,
        &[&bold, &fixed],
        &[
            &standing,
            r#"{"verdict": "accept", "finding": 0, "claim": "", "feedback": "ok"}"#,
        ],
    )
    .await;
    assert_eq!(outcome.outcome, Outcome::Completed, "{outcome:?}");
    assert_eq!(
        verdict_events(&events),
        [("reject".to_string(), 1), ("accept".to_string(), 2)]
    );
    let told = events
        .iter()
        .filter(|e| e.agent.as_deref() == Some("worker"))
        .any(|e| match &e.kind {
            EventKind::HopSteered { why, .. } => why == "reject_revised",
            _ => false,
        });
    assert!(told, "{events:?}");
}
