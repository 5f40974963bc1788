//! Event logs written before problems had one type still load: their contract records had `rule`,
//! `message`, `line` and `column` only. `read_log` skips lines it cannot parse, so a record that
//! stopped parsing would vanish silently; these tests make that visible.

use switchboard::problem::{Problem, Severity};
use switchboard::runtime::events::{read_log, Event, EventKind};

/// Lines as the earlier code wrote them (`ViolationRecord { rule, message, line, column }`).
const OLD_LOG: &str = r#"{"timestamp":"2026-11-21T10:00:00.000001Z","session_id":"s1","correlation_id":"c1","hop_id":"h1","parent_hop_id":null,"agent":"marker","type":"contract.checked","contract":"envelope","message_id":"thoughts-2026-11-21-001","conformant":false,"repair":0,"violations":[{"rule":"envelope/message-id-format","message":"bad id","line":2,"column":13},{"rule":"envelope/tags","message":"no answer"}]}
{"timestamp":"2026-11-21T10:00:00.000002Z","session_id":"s1","correlation_id":"c1","hop_id":"h1","parent_hop_id":null,"agent":"marker","type":"hop.failed","error":"still violating","usage":{"input_tokens":1,"output_tokens":2},"started_at":"2026-11-21T10:00:00.000000Z","ended_at":"2026-11-21T10:00:00.000002Z","duration_us":2,"violations":[{"rule":"excerpt/mismatch","message":"wrong lines","line":7,"column":1}]}
"#;

fn write_log(text: &str) -> (tempfile::TempDir, Vec<Event>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.jsonl");
    std::fs::write(&path, text).unwrap();
    let events = read_log(&path).unwrap();
    (dir, events)
}

#[test]
fn old_contract_records_load_as_problems() {
    let (_dir, events) = write_log(OLD_LOG);
    assert_eq!(events.len(), 2, "an old record was skipped");
    let EventKind::ContractChecked { violations, .. } = &events[0].kind else {
        panic!("expected contract.checked, got {:?}", events[0].kind);
    };
    assert_eq!(violations.len(), 2);
    assert_eq!(violations[0].code, "envelope/message-id-format");
    assert_eq!(violations[0].severity, Severity::Error);
    assert_eq!((violations[0].line, violations[0].column), (2, 13));
    assert_eq!(violations[0].message, "bad id");
    // Position was optional in the old record too.
    assert_eq!((violations[1].line, violations[1].column), (0, 0));
    let EventKind::HopFailed { violations, .. } = &events[1].kind else {
        panic!("expected hop.failed, got {:?}", events[1].kind);
    };
    assert_eq!(violations[0].code, "excerpt/mismatch");
}

#[test]
fn new_records_round_trip() {
    let (_dir, events) = write_log(OLD_LOG);
    let mut event = events[0].clone();
    if let EventKind::ContractChecked { violations, .. } = &mut event.kind {
        violations.push(
            Problem::in_text(Severity::Error, "excerpt/mismatch", 4..9, "wrong lines")
                .at(3, 1)
                .with_help("copy the lines")
                .with_actual("docs/a.md:1-2", "one\ntwo"),
        );
    }
    let line = serde_json::to_string(&event).unwrap();
    assert!(line.contains(r#""code":"excerpt/mismatch""#), "{line}");
    let (_dir, back) = write_log(&format!("{line}\n"));
    let (
        EventKind::ContractChecked { violations: a, .. },
        EventKind::ContractChecked { violations: b, .. },
    ) = (&event.kind, &back[0].kind)
    else {
        panic!("not a contract.checked event");
    };
    assert_eq!(a, b);
}
