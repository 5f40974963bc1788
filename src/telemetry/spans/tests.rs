use super::*;
use crate::model::Usage;
use crate::runtime::events::Event;
use crate::runtime::SessionStatus;

const SESSION: &str = "0195f3a0-0000-7000-8000-000000000001";
const PRIMARY: &str = "0195f3a0-0000-7000-8000-0000000000aa";
const CHILD: &str = "0195f3a0-0000-7000-8000-0000000000bb";

fn ev(t: u32, hop: Option<&str>, parent: Option<&str>, agent: &str, kind: EventKind) -> Event {
    Event {
        timestamp: format!("2026-11-23T10:00:{t:02}.000000Z"),
        session_id: SESSION.into(),
        correlation_id: "corr-1".into(),
        hop_id: hop.map(String::from),
        parent_hop_id: parent.map(String::from),
        agent: Some(agent.into()),
        kind,
    }
}

fn started(t: u32, hop: &str, parent: Option<&str>, agent: &str, depth: u32) -> Event {
    ev(
        t,
        Some(hop),
        parent,
        agent,
        EventKind::HopStarted {
            depth,
            attempt: 1,
            message_id: format!("{agent}-msg"),
            model: "scripted/x.yaml".into(),
            description: String::new(),
            prompt: "p".into(),
            occurrence: 0,
            started_at: format!("2026-11-23T10:00:{t:02}.000000Z"),
        },
    )
}

fn completed(t0: u32, t: u32, hop: &str, parent: Option<&str>, agent: &str) -> Event {
    ev(
        t,
        Some(hop),
        parent,
        agent,
        EventKind::HopCompleted {
            status: HopStatus::Completed,
            message_id: format!("{agent}-msg"),
            answer: "a".into(),
            usage: Usage {
                input_tokens: 10,
                output_tokens: 5,
                ..Default::default()
            },
            started_at: format!("2026-11-23T10:00:{t0:02}.000000Z"),
            ended_at: format!("2026-11-23T10:00:{t:02}.000000Z"),
            duration_us: 1,
            steps: 1,
            conformant: None,
            violations: vec![],
            written: vec![],
        },
    )
}

fn session_log() -> Vec<Event> {
    vec![
        ev(
            0,
            None,
            None,
            "boss",
            EventKind::SessionStarted {
                prompt: "p".into(),
                model: None,
                max_parallel: 1,
                max_depth: 3,
                resumed: false,
            },
        ),
        started(1, PRIMARY, None, "boss", 0),
        ev(
            2,
            Some(PRIMARY),
            None,
            "boss",
            EventKind::ModelRequest {
                step: 1,
                messages: 2,
                tools: 1,
                tool_choice: Default::default(),
                warmed: None,
            },
        ),
        ev(
            3,
            Some(PRIMARY),
            None,
            "boss",
            EventKind::ModelResponse {
                step: 1,
                usage: Usage {
                    input_tokens: 7,
                    output_tokens: 3,
                    ..Default::default()
                },
                tool_calls: 1,
                elapsed_us: 1_000_000,
            },
        ),
        ev(
            4,
            Some(PRIMARY),
            None,
            "boss",
            EventKind::ToolCall {
                call_id: "c1".into(),
                tool: "task".into(),
                arguments: serde_json::json!({}),
            },
        ),
        started(5, CHILD, Some(PRIMARY), "worker", 1),
        completed(5, 6, CHILD, Some(PRIMARY), "worker"),
        ev(
            7,
            Some(PRIMARY),
            None,
            "boss",
            EventKind::ToolResult {
                call_id: "c1".into(),
                tool: "task".into(),
                is_error: false,
                output: "ok".into(),
                written: None,
                child_hop_id: Some(CHILD.into()),
            },
        ),
        completed(1, 8, PRIMARY, None, "boss"),
        ev(
            9,
            None,
            None,
            "boss",
            EventKind::SessionCompleted {
                status: SessionStatus::Completed,
                answer: "a".into(),
                error: None,
                usage: Usage::default(),
                duration_us: 9,
                written: vec![],
            },
        ),
    ]
}

fn assemble(events: &[Event]) -> Vec<SpanRecord> {
    let mut a = SpanAssembler::new();
    let mut out: Vec<SpanRecord> = events.iter().flat_map(|e| a.push(e)).collect();
    out.extend(a.finish());
    out
}

fn by_name<'s>(spans: &'s [SpanRecord], name: &str) -> &'s SpanRecord {
    spans
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no span {name}: {spans:#?}"))
}

#[test]
fn a_session_becomes_one_trace_with_hops_under_their_callers() {
    let spans = assemble(&session_log());
    assert_eq!(spans.len(), 5, "{spans:#?}");
    let session = by_name(&spans, "session boss");
    let primary = by_name(&spans, "invoke_agent boss");
    let child = by_name(&spans, "invoke_agent worker");
    let chat = by_name(&spans, "chat x.yaml");
    let tool = by_name(&spans, "execute_tool task");
    assert!(spans.iter().all(|s| s.trace_id == trace_id(SESSION)));
    assert_eq!(session.parent_span_id, None);
    assert_eq!(primary.parent_span_id, Some(session.span_id));
    assert_eq!(child.parent_span_id, Some(primary.span_id));
    assert_eq!(chat.parent_span_id, Some(primary.span_id));
    assert_eq!(tool.parent_span_id, Some(primary.span_id));
    assert_eq!(primary.span_id, hop_span_id(PRIMARY, 1));
    assert_eq!(
        child.attr("switchboard.parent_hop.id"),
        Some(&AttrValue::Str(PRIMARY.into()))
    );
    assert_eq!(
        chat.attr("gen_ai.usage.input_tokens"),
        Some(&AttrValue::Int(7))
    );
    assert_eq!(
        chat.attr("gen_ai.provider.name"),
        Some(&AttrValue::Str("scripted".into()))
    );
    assert_eq!(
        tool.attr("switchboard.tool.child_hop.id"),
        Some(&AttrValue::Str(CHILD.into()))
    );
    let secs = |s: &SpanRecord| {
        s.end
            .duration_since(s.start)
            .map(|d| d.as_secs())
            .unwrap_or(999)
    };
    assert_eq!(secs(primary), 7);
    assert_eq!(secs(child), 1);
    assert!(spans.iter().all(|s| s.error.is_none()), "{spans:#?}");
}

#[test]
fn a_log_cut_off_mid_hop_still_closes_every_span_marked_unfinished() {
    let log = session_log();
    let spans = assemble(&log[..6]);
    assert_eq!(spans.len(), 5, "{spans:#?}");
    let child = by_name(&spans, "invoke_agent worker");
    assert!(child.error.as_deref().unwrap().contains("unfinished"));
    let session = by_name(&spans, "session boss");
    assert!(session.error.is_some());
}

#[test]
fn span_ids_are_the_same_on_every_replay() {
    let a = assemble(&session_log());
    let b = assemble(&session_log());
    let ids = |v: &[SpanRecord]| {
        v.iter()
            .map(|s| (s.span_id, s.parent_span_id))
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(&a), ids(&b));
    let mut unique: Vec<_> = a.iter().map(|s| s.span_id).collect();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), a.len());
}

#[test]
fn a_failed_hop_and_a_tool_error_are_error_spans_with_the_reason() {
    let mut log = session_log();
    // The task call comes back as a tool error and the child hop failed.
    log[6] = ev(
        6,
        Some(CHILD),
        Some(PRIMARY),
        "worker",
        EventKind::HopFailed {
            error: "contract violated twice".into(),
            usage: Usage::default(),
            started_at: "2026-11-23T10:00:05.000000Z".into(),
            ended_at: "2026-11-23T10:00:06.000000Z".into(),
            duration_us: 1_000_000,
            violations: vec![],
        },
    );
    if let EventKind::ToolResult { is_error, .. } = &mut log[7].kind {
        *is_error = true;
    }
    let spans = assemble(&log);
    let child = by_name(&spans, "invoke_agent worker");
    assert_eq!(child.error.as_deref(), Some("contract violated twice"));
    assert_eq!(
        child.attr("error.type"),
        Some(&AttrValue::Str("hop_failed".into()))
    );
    let tool = by_name(&spans, "execute_tool task");
    assert!(tool.error.is_some());
    assert!(by_name(&spans, "invoke_agent boss").error.is_none());
}

#[test]
fn a_resumed_session_ends_the_dead_run_spans_and_gives_the_new_attempt_its_own_span() {
    let log = session_log();
    // The first run died inside the child hop; the resumed run starts it again as attempt 2.
    let mut events: Vec<Event> = log[..6].to_vec();
    let mut resumed = log[0].clone();
    resumed.timestamp = "2026-11-23T10:00:30.000000Z".into();
    if let EventKind::SessionStarted { resumed: r, .. } = &mut resumed.kind {
        *r = true;
    }
    events.push(resumed);
    let mut again = started(31, CHILD, Some(PRIMARY), "worker", 1);
    if let EventKind::HopStarted { attempt, .. } = &mut again.kind {
        *attempt = 2;
    }
    events.push(again);
    events.push(completed(31, 32, CHILD, Some(PRIMARY), "worker"));
    let spans = assemble(&events);
    let workers: Vec<&SpanRecord> = spans
        .iter()
        .filter(|s| s.name == "invoke_agent worker")
        .collect();
    assert_eq!(workers.len(), 2, "{spans:#?}");
    assert_ne!(workers[0].span_id, workers[1].span_id);
    assert!(workers[0].error.as_deref().unwrap().contains("unfinished"));
    assert!(workers[1].error.is_none());
    let sessions = spans.iter().filter(|s| s.name == "session boss").count();
    assert_eq!(sessions, 2);
    let mut ids: Vec<_> = spans.iter().map(|s| s.span_id).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), spans.len(), "span ids are unique");
}
