use super::*;
use crate::runtime::events::{timestamp, Event, EventKind, HopStatus};
use crate::runtime::SessionStatus;

fn at(ms: i64) -> String {
    let base = chrono::DateTime::parse_from_rfc3339("2026-11-23T10:00:00Z")
        .unwrap()
        .with_timezone(&chrono::Utc);
    timestamp(base + chrono::Duration::milliseconds(ms))
}

fn ev(ms: i64, hop: Option<&str>, parent: Option<&str>, agent: &str, kind: EventKind) -> Event {
    Event {
        timestamp: at(ms),
        session_id: "s1".into(),
        correlation_id: "c1".into(),
        hop_id: hop.map(String::from),
        parent_hop_id: parent.map(String::from),
        agent: Some(agent.into()),
        kind,
    }
}

/// A hop from `t0` to `t1` ms, with `prompt` and `answer`.
fn hop(
    (t0, t1): (i64, i64),
    id: &str,
    parent: Option<&str>,
    agent: &str,
    depth: u32,
    prompt: &str,
    answer: &str,
) -> Vec<Event> {
    vec![
        ev(
            t0,
            Some(id),
            parent,
            agent,
            EventKind::HopStarted {
                depth,
                attempt: 1,
                message_id: format!("m-{id}"),
                model: "offline/default".into(),
                description: String::new(),
                prompt: prompt.into(),
                occurrence: 0,
                started_at: at(t0),
            },
        ),
        ev(
            t1,
            Some(id),
            parent,
            agent,
            EventKind::HopCompleted {
                status: HopStatus::Completed,
                message_id: format!("m-{id}"),
                answer: answer.into(),
                usage: Default::default(),
                started_at: at(t0),
                ended_at: at(t1),
                duration_us: ((t1 - t0) * 1000) as u64,
                steps: 1,
                conformant: None,
                violations: vec![],
                written: vec![],
            },
        ),
    ]
}

fn write_log(events: &[Event]) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.jsonl");
    let text: String = events
        .iter()
        .map(|e| serde_json::to_string(e).unwrap() + "\n")
        .collect();
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

fn sample() -> Vec<Event> {
    let mut events = vec![ev(
        0,
        None,
        None,
        "boss",
        EventKind::SessionStarted {
            prompt: "go".into(),
            model: None,
            max_parallel: 2,
            max_depth: 3,
            resumed: false,
        },
    )];
    let mut a = hop((0, 1000), "h1", None, "boss", 0, "top", "done");
    let done = a.pop().unwrap();
    events.extend(a);
    events.extend(hop(
        (100, 400),
        "h2",
        Some("h1"),
        "worker",
        1,
        "<script>alert(1)</script>",
        "a & b",
    ));
    events.extend(hop(
        (500, 900),
        "h3",
        Some("h1"),
        "worker",
        1,
        "second",
        "ok",
    ));
    events.push(done);
    events.push(ev(
        1000,
        None,
        None,
        "boss",
        EventKind::SessionCompleted {
            status: SessionStatus::Completed,
            answer: "done".into(),
            error: None,
            usage: Default::default(),
            duration_us: 1_000_000,
            written: vec![],
        },
    ));
    events
}

#[test]
fn rows_follow_the_tree_and_are_placed_on_the_session_time_axis() {
    let (_d, path) = write_log(&sample());
    let trace = crate::runtime::trace::from_log(&path).unwrap();
    let (rows, total) = rows(&trace, &store::read(&path).unwrap());
    assert_eq!(total, 1000.0);
    let summary: Vec<_> = rows
        .iter()
        .map(|r| (r.hop_id.as_str(), r.parent_index, r.left_pct, r.width_pct))
        .collect();
    assert_eq!(
        summary,
        vec![
            ("h1", None, 0.0, 100.0),
            ("h2", Some(0), 10.0, 30.0),
            ("h3", Some(0), 50.0, 40.0),
        ]
    );
    assert_eq!(rows[1].prompt, "<script>alert(1)</script>");
}

#[test]
fn the_page_escapes_what_agents_wrote_and_needs_nothing_from_the_network() {
    let (_d, path) = write_log(&sample());
    let html = render_log(&path).unwrap();
    assert!(!html.contains("<script>alert(1)"), "prompt not escaped");
    assert!(
        html.contains("&lt;script&gt;alert(1)&lt;&#x2f;script&gt;"),
        "{html}"
    );
    assert!(html.contains("a &amp; b"));
    assert_eq!(html.matches("class=\"bar ").count(), 3);
    for external in ["http://", "https://", "src=\"//"] {
        assert!(!html.contains(external), "page refers to {external}");
    }
}

#[test]
fn a_hop_with_no_end_in_the_log_lasts_until_the_log_ends() {
    let events: Vec<Event> = sample()
        .into_iter()
        .filter(|e| {
            !(e.hop_id.as_deref() == Some("h3") && matches!(e.kind, EventKind::HopCompleted { .. }))
        })
        .collect();
    let (_d, path) = write_log(&events);
    let trace = crate::runtime::trace::from_log(&path).unwrap();
    let (rows, _) = rows(&trace, &events);
    let h3 = rows.iter().find(|r| r.hop_id == "h3").unwrap();
    assert_eq!(h3.status, "running");
    assert_eq!((h3.start_ms, h3.duration_ms), (500.0, 500.0));
}
