//! The answer with its mechanical fixes made (`contract::fix`) is the answer when it passes, and
//! is offered in the repair turn when it does not yet: a 1.5B locator sent the same answer back
//! three times, naming its file under the wrong folder.

use crate::support;

use support::mock::{answer, Mock};
use switchboard::runtime::EventKind;

const DOC: &str = "thoughts/shared/decisions/2026-11-02-yaml-parser.md";

/// A conformant locator answer listing `listed` as its one document, with the ids the runtime
/// allocates for a session with correlation id `corr-1`.
pub(crate) fn locator_answer(listed: &str) -> String {
    let today = chrono::Utc::now().format("%Y-%m-%d");
    format!(
        "---\nmessage_id: locator-{today}-001\ncorrelation_id: corr-1\ntimestamp: {today}T10:00:00Z\nmessage_type: LOCATOR_RESPONSE\n---\n\n<thinking>\ngrep yaml\n</thinking>\n\n<answer>\n## Documents about the YAML parser\n\n- `{listed}` — YAML parser\n</answer>\n"
    )
}

/// The shipped thoughts-locator on the YAML question, its model answering `replies` in turn.
async fn locator_session(
    replies: &[String],
) -> (
    Mock,
    switchboard::runtime::SessionOutcome,
    Vec<switchboard::runtime::Event>,
) {
    let (_dir, project) = support::fs::shipped_agents_with(
        DOC,
        "# YAML parser\n\nWe parse YAML with serde-saphyr.\n",
    );
    run_locator(&project, replies).await
}

/// The shipped thoughts-locator of `project` on the YAML question (correlation id `corr-1`),
/// its model answering `replies` in turn.
pub(crate) async fn run_locator(
    project: &switchboard::project::Project,
    replies: &[String],
) -> (
    Mock,
    switchboard::runtime::SessionOutcome,
    Vec<switchboard::runtime::Event>,
) {
    let mock = Mock::start().await;
    for reply in replies {
        mock.push(answer(reply, vec![]));
    }
    let options = switchboard::runtime::RunOptions {
        correlation_id: Some("corr-1".into()),
        ..Default::default()
    };
    let (outcome, events) = support::wire::session_with(
        project,
        &mock,
        "thoughts-locator",
        "What did we decide about the YAML parser?",
        options,
    )
    .await;
    (mock, outcome, events)
}

/// A copy that still has a problem the runtime cannot fix (here a wrong correlation id) is shown
/// in the repair turn, for the model to send back with the rest fixed.
#[tokio::test]
async fn a_repair_offers_the_answer_with_the_wrong_folder_fixed_when_a_problem_is_left() {
    let wrong = format!(
        "{}```\n",
        locator_answer("thoughts/shared/specs/2026-11-02-yaml-parser.md")
    )
    .replace("correlation_id: corr-1", "correlation_id: corr-9");
    let right = locator_answer(DOC);
    let (mock, outcome, events) = locator_session(&[wrong, right]).await;
    assert_eq!(outcome.status, "completed", "{outcome:?}");
    let repair = mock.requests()[1].last_content();
    assert!(
        repair.contains("Your answer with the fixes that could be made for you already made (1 of 3 problem(s) left)"),
        "{repair}"
    );
    let copy = repair.split("```markdown\n").nth(1).unwrap_or_default();
    assert!(
        copy.contains(&format!("- `{DOC}` — YAML parser\n</answer>")),
        "{copy}"
    );
    assert!(!copy.contains("specs/"), "{copy}");
    assert!(
        copy.contains("corr-9"),
        "the copy fixes nothing else: {copy}"
    );
    let settled: Vec<(String, Option<String>)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ContractOutcome {
                outcome, reason, ..
            } => Some((outcome.clone(), reason.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(settled, vec![("repaired".to_string(), None)]);
}

/// A copy with the mechanical fixes made that passes whole is the answer at once, with no repair
/// turn, and the log says the runtime made it.
#[tokio::test]
async fn a_passing_fixed_copy_is_the_answer_without_a_repair_turn_and_the_log_says_so() {
    let wrong = locator_answer("thoughts/shared/plans/2026-11-02-yaml-parser.md");
    let (mock, outcome, events) = locator_session(&[wrong.clone(), wrong]).await;
    assert_eq!(outcome.status, "completed", "{outcome:?}");
    assert_eq!(mock.requests().len(), 1, "no repair turn");
    assert!(
        outcome.answer.contains(&format!("- `{DOC}` — YAML parser")),
        "{}",
        outcome.answer
    );
    assert!(!outcome.answer.contains("plans/"), "{}", outcome.answer);
    assert!(!events
        .iter()
        .any(|e| matches!(e.kind, EventKind::HopRepair { .. })));
    let settled: Vec<(String, Option<String>, u32, u32)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ContractOutcome {
                outcome,
                reason,
                repairs,
                sanitized,
                ..
            } => Some((outcome.clone(), reason.clone(), *repairs, *sanitized)),
            _ => None,
        })
        .collect();
    assert_eq!(
        settled,
        vec![(
            "repaired".to_string(),
            Some("runtime_fix".to_string()),
            0,
            1
        )]
    );
}

/// An accepted answer whose second item repeats the first one's claim over lines that do not say
/// it goes up with those lines' words as that item's claim (`contract::retitle`); the first item
/// and every Evidence line stay as they were. The evidence-validator rejected a 1.5B analysis
/// three times for one such repeat (t2, 2026-12-01).
#[tokio::test]
async fn a_claim_repeated_over_other_lines_goes_up_in_those_lines_words() {
    let (_dir, project) = support::fs::shipped_agents_with(
        DOC,
        "# YAML parser\n\nWe parse YAML with serde-saphyr.\nWe never depend on serde_yaml, which is archived.\n",
    );
    let item = |claim: &str, line: u32, excerpt: &str| {
        format!("### Decision: {claim}\n- **Evidence**: `{DOC}:{line}`\n- **Excerpt**:\n  ```\n  {excerpt}\n  ```\n")
    };
    let claim = "we parse YAML with serde-saphyr";
    let items = format!(
        "{}\n{}",
        item(claim, 3, "We parse YAML with serde-saphyr."),
        item(
            claim,
            4,
            "We never depend on serde_yaml, which is archived."
        )
    );
    let reply = locator_answer(DOC).replace(
        "- `thoughts/shared/decisions/2026-11-02-yaml-parser.md` — YAML parser\n",
        &format!("- `{DOC}` — YAML parser\n\n{items}"),
    );
    assert!(reply.contains("### Decision"), "{reply}");
    let (_mock, outcome, events) = run_locator(&project, &[reply]).await;
    assert_eq!(outcome.status, "completed", "{outcome:?}");
    let answer = &outcome.answer;
    assert!(
        answer.contains("### Decision: we parse YAML with serde-saphyr\n"),
        "{answer}"
    );
    assert!(
        answer.contains("### Decision: We never depend on serde_yaml, which is archived.\n"),
        "{answer}"
    );
    assert_eq!(answer.matches("- **Evidence**:").count(), 2, "{answer}");
    // No repair turn: the answer passed as written, and went up edited.
    let repairs: Vec<u32> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ContractChecked { repair, .. } => Some(*repair),
            _ => None,
        })
        .collect();
    assert_eq!(repairs, [0], "{events:#?}");
}
