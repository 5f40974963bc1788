//! The shipped thoughts-analyzer (`read_first: named`) starts from the document its task names,
//! already read (its numbered lines follow the task), and a too long excerpt is repaired by copying the item the repair offers. Over
//! the wire, against the mock on 127.0.0.1.

use crate::support;

use support::mock::{answer, Mock};
use switchboard::runtime::{Event, EventKind, RunOptions};

const DOC: &str = "thoughts/shared/decisions/2026-11-02-yaml.md";

/// Twelve lines; the decision is lines 5-10.
const TEXT: &str = "---\ndate: 2026-11-02\nstatus: accepted\n---\n\
    # Decision: serde-saphyr parses YAML\n\
    We parse agent frontmatter with serde-saphyr.\n\
    serde_yaml is archived and unmaintained.\n\
    Positions of errors come from its spans.\n\
    A splitter of our own finds the frontmatter.\n\
    Nothing else parses YAML.\n\
    \n\
    ## Consequences\n";

/// An analysis of [`DOC`] citing `range` and quoting `excerpt`, with the ids the runtime
/// allocates (correlation id `corr-1`), so only the excerpt can be wrong.
fn analysis(range: &str, excerpt: &str) -> String {
    let today = chrono::Utc::now().format("%Y-%m-%d");
    let block: String = excerpt.lines().map(|l| format!("  {l}\n")).collect();
    format!(
        "---\nmessage_id: thoughts-{today}-001\ncorrelation_id: corr-1\n\
         timestamp: {today}T10:00:00Z\nmessage_type: DOCUMENT_ANALYSIS_RESPONSE\n\
         source_document: {DOC}\ndocument_date: 2026-11-02\ndocument_status: accepted\n\
         reliability: High\n---\n\n<thinking>\nOne decision.\n</thinking>\n\n<answer>\n\
         ## Analysis: 2026-11-02-yaml.md\n\n### Metadata\n- **Date**: 2026-11-02\n\
         - **Status**: accepted\n- **Reliability**: High (accepted)\n\n### Extracted Signal\n\n\
         #### Decision: serde-saphyr parses YAML\n- **Evidence**: `{DOC}:{range}`\n\
         - **Excerpt**:\n  ```markdown\n{block}  ```\n\n### Verification Notes\n\
         - Not checked against code.\n</answer>\n"
    )
}

/// Lines 5-12 of [`TEXT`] with the last one reworded: too long, and not the file's own text
/// word for word, so the runtime cannot cut it down itself and the repair turn asks.
fn reworded_tail(lines: &[&str]) -> String {
    let mut eight = lines[4..12].to_vec();
    eight[7] = "## What follows";
    eight.join("\n")
}

/// A thoughts-analyzer session on [`DOC`] over the wire: the model answers `replies` in turn,
/// the validator's acceptance last; correlation id `corr-1`. The mock, the task, the outcome
/// and the events, once the session has completed.
async fn analyze(replies: Vec<support::mock::Reply>) -> (Mock, String, Vec<Event>) {
    analyze_text(TEXT, replies).await
}

/// [`analyze`] with `text` as the document.
async fn analyze_text(
    text: &str,
    replies: Vec<support::mock::Reply>,
) -> (Mock, String, Vec<Event>) {
    let (_dir, project) = support::fs::shipped_agents_with(DOC, text);
    let mock = Mock::start().await;
    for reply in replies {
        mock.push(reply);
    }
    mock.push(answer(
        r#"{"verdict": "accept", "finding": 0, "claim": "", "feedback": "quotes hold"}"#,
        vec![],
    ));
    let options = RunOptions {
        correlation_id: Some("corr-1".into()),
        ..Default::default()
    };
    let task = format!("Analyze {DOC}: what was decided about the YAML parser?");
    let (outcome, events) =
        support::wire::session_with(&project, &mock, "thoughts-analyzer", &task, options).await;
    let kinds: Vec<_> = events.iter().map(|e| e.kind.name()).collect();
    assert_eq!(outcome.status, "completed", "{outcome:?} {kinds:?}");
    (mock, task, events)
}

#[tokio::test]
async fn the_named_document_is_read_first_and_a_too_long_excerpt_is_repaired_by_copying() {
    let lines: Vec<&str> = TEXT.lines().collect();
    // Eight lines (5-12) against a limit of six, the last reworded; then the item the repair
    // offers, copied: lines 5-10; then the agent's validator accepts.
    let too_long = analysis("5-12", &reworded_tail(&lines));
    let offered = analysis("5-10", &lines[4..10].join("\n"));
    let (mock, task, events) =
        analyze(vec![answer(&too_long, vec![]), answer(&offered, vec![])]).await;
    let kinds: Vec<_> = events.iter().map(|e| e.kind.name()).collect();

    // The read is a logged tool call made before the model's first request.
    let read_at = events
        .iter()
        .position(|e| matches!(&e.kind, EventKind::ToolCall { call_id, tool, .. } if call_id == "read_first_1" && tool == "read"))
        .unwrap_or_else(|| panic!("no read_first call: {kinds:?}"));
    let first_request = events
        .iter()
        .position(|e| matches!(e.kind, EventKind::ModelRequest { .. }))
        .expect("a model request");
    assert!(read_at < first_request, "{kinds:?}");

    // The model's first request holds the numbered lines in the task message, after the task;
    // no tool turn.
    let requests = mock.requests();
    let messages = requests[0].body["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let roles: Vec<_> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(roles, ["system", "user"], "{messages:?}");
    // The whole document is there, so the first turn is offered no tools; the repair turn is.
    let tools = |i: usize| requests[i].callable_tools();
    assert_eq!(tools(0), 0, "{}", requests[0].body);
    assert!(tools(1) > 0, "{}", requests[1].body);
    assert!(
        events.iter().any(|e| matches!(&e.kind,
            EventKind::HopSteered { why, count } if why == "read_first_whole" && *count == 1)),
        "{kinds:?}"
    );
    let user = messages[1]["content"].as_str().unwrap_or_default();
    assert!(user.starts_with(&task), "{user}");
    assert!(
        user.contains("     6\tWe parse agent frontmatter with serde-saphyr."),
        "{user}"
    );

    // The repair offers lines 5-10 as a filled item: exactly what the second answer copied.
    let repair = requests[1].last_content();
    assert!(repair.contains("[excerpt/too-long]"), "{repair}");
    let item = format!(
        "   - **Evidence**: `{DOC}:5-10`\n   - **Excerpt**:\n     ```\n     {}\n     ```",
        lines[4..10].join("\n     ")
    );
    assert!(repair.contains(&item), "{repair}");
}

/// A too long excerpt that is the document's own lines word for word is cut down by the
/// runtime (`contract::fix`): no repair turn, and the caller gets lines 5-10 cited as such.
#[tokio::test]
async fn a_too_long_quote_of_the_document_itself_is_cut_down_without_a_repair() {
    let lines: Vec<&str> = TEXT.lines().collect();
    let too_long = analysis("5-12", &lines[4..12].join("\n"));
    let (mock, _task, events) = analyze(vec![answer(&too_long, vec![])]).await;
    let kinds: Vec<_> = events.iter().map(|e| e.kind.name()).collect();
    assert!(
        events.iter().any(|e| matches!(&e.kind,
            EventKind::ContractOutcome { outcome, reason: Some(r), .. }
                if outcome == "repaired" && r == "runtime_fix")),
        "{kinds:?}"
    );
    assert!(!kinds.contains(&"hop.repair"), "no repair turn: {kinds:?}");
    let answer = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::HopCompleted { answer, .. }
                if e.agent.as_deref() == Some("thoughts-analyzer") =>
            {
                Some(answer.clone())
            }
            _ => None,
        })
        .unwrap_or_default();
    assert!(answer.contains(&format!("`{DOC}:5-10`")), "{answer}");
    assert!(!answer.contains("## Consequences"), "{answer}");
    // The analyzer's one request, then its validator's.
    assert_eq!(mock.requests().len(), 2);
}

#[tokio::test]
async fn a_read_of_the_lines_read_first_showed_is_answered_with_where_they_are() {
    let lines: Vec<&str> = TEXT.lines().collect();
    // Asked to repair a too long excerpt (the first turn has no tools), the model reads its
    // document again with another `limit` (no repeat of `read_first_1`'s call), is told where
    // the lines are, and answers from them.
    let reread = support::mock::call(
        "c1",
        "read",
        serde_json::json!({"path": DOC, "limit": 2000}),
    );
    let (mock, _task, events) = analyze(vec![
        answer(&analysis("5-12", &reworded_tail(&lines)), vec![]),
        answer("", vec![reread]),
        answer(&analysis("5-10", &lines[4..10].join("\n")), vec![]),
    ])
    .await;
    let kinds: Vec<_> = events.iter().map(|e| e.kind.name()).collect();

    // The call is logged and answered as an error that says where the lines are.
    let result = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::ToolResult {
                call_id, is_error, ..
            } if call_id == "c1" => Some(*is_error),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no result for c1: {kinds:?}"));
    assert!(result, "answered as a refusal");
    assert!(
        events.iter().any(|e| matches!(&e.kind,
            EventKind::HopSteered { why, .. } if why == "read_first_shown")),
        "{kinds:?}"
    );
    let requests = mock.requests();
    let told = requests[2].last_content();
    assert!(
        told.contains(&format!(
            "not run: the runtime read all of `{DOC}` (lines 1-12)"
        )),
        "{told}"
    );
    assert!(
        !told.contains("serde-saphyr"),
        "the lines are not sent again: {told}"
    );
}

/// A document too large to be read ahead whole shows its first 250 lines; a `read` of the
/// whole file then runs for the lines after them only, said so before them, rather than
/// sending the 250 again.
#[tokio::test]
async fn a_read_past_the_lines_shown_reads_only_the_rest() {
    let filler: String = (1..=300)
        .map(|n| format!("- note {n}: {}\n", "words of the record ".repeat(4)))
        .collect();
    let text = format!("{TEXT}{filler}");
    let total = text.lines().count();
    assert!(text.len() > 16_000 && total > 250, "{}", text.len());
    let lines: Vec<&str> = text.lines().collect();
    let whole = support::mock::call("c1", "read", serde_json::json!({"path": DOC}));
    let (mock, _task, events) = analyze_text(
        &text,
        vec![
            answer("", vec![whole]),
            answer(&analysis("5-10", &lines[4..10].join("\n")), vec![]),
            // The evidence goal's ask, and the repair of an answer sent back unchanged.
            answer(&analysis("5-10", &lines[4..10].join("\n")), vec![]),
            answer(&analysis("5-10", &lines[4..10].join("\n")), vec![]),
        ],
    )
    .await;
    let kinds: Vec<_> = events.iter().map(|e| e.kind.name()).collect();
    let (is_error, output) = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::ToolResult {
                call_id,
                is_error,
                output,
                ..
            } if call_id == "c1" => Some((*is_error, output.clone())),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no result for c1: {kinds:?}"));
    assert!(!is_error, "{output}");
    // What the model is sent (the event's copy of a long output is cut).
    let sent = mock.requests()[1].last_content();
    assert!(
        sent.starts_with(&format!("(lines 1-250 of `{DOC}` are in your task message")),
        "{sent}"
    );
    assert!(sent.contains("   251\t"), "{sent}");
    assert!(sent.contains(&format!("{total:>6}\t")), "{sent}");
    assert!(
        !sent.contains("     1\t"),
        "the shown lines are not sent again"
    );
    assert!(
        events.iter().any(|e| matches!(&e.kind,
            EventKind::HopSteered { why, .. } if why == "read_first_rest")),
        "{kinds:?}"
    );
}
