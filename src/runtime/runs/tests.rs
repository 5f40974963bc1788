//! Run folders written from hand-made logs: frontmatter, lists, gate events, gc order.

use super::*;

fn line(v: Value) -> String {
    v.to_string() + "\n"
}

fn log(status: &str, extra: &[Value]) -> String {
    let base = serde_json::json!({"session_id": "s1", "correlation_id": "c1",
        "hop_id": "h1", "parent_hop_id": null, "agent": "lead"});
    let with = |mut v: Value, more: Value| {
        for (k, x) in more.as_object().unwrap() {
            v[k] = x.clone();
        }
        v
    };
    let mut out = line(with(
        base.clone(),
        serde_json::json!({"timestamp": "2026-11-23T10:00:00Z", "type": "session.started",
            "prompt": "say \"hi\": now", "model": null, "max_parallel": 8, "max_depth": 3}),
    ));
    for e in extra {
        out.push_str(&line(with(base.clone(), e.clone())));
    }
    out.push_str(&line(with(
        base,
        serde_json::json!({"timestamp": "2026-11-23T10:00:05Z", "type": "session.completed",
            "status": status, "answer": "the answer", "error": "stopped",
            "usage": {"input_tokens": 3, "output_tokens": 4}, "duration_us": 5}),
    )));
    out
}

#[test]
fn a_partial_run_folder_has_its_checkpoint_and_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let project = Project::open(dir.path()).unwrap();
    let log_path = dir.path().join("events.jsonl");
    let events = [
        serde_json::json!({"timestamp": "t", "type": "hop.checkpoint", "reason": "budget",
            "path": "checkpoints/h1.json", "checkpoint": {"done": ["a"],
            "remaining": ["b"], "next_steps": ["do b"], "source": "agent"}}),
        serde_json::json!({"timestamp": "t", "type": "hop.completed", "status": "partial",
            "answer": "<thinking>I read a</thinking><answer>x</answer>"}),
        serde_json::json!({"timestamp": "t", "type": "gate.plan", "via": "analyst",
            "contract": "analyst-plan", "plan": {"intent": "find"}, "sources": ["doc"],
            "allowed": ["read", "thoughts-locator"]}),
        serde_json::json!({"timestamp": "t", "type": "gate.refused", "call_id": "c1",
            "tool": "grep", "reason": "no source opens it"}),
        serde_json::json!({"timestamp": "t", "type": "tool.result", "call_id": "c1",
            "tool": "grep", "is_error": true, "output": "no source opens it"}),
        serde_json::json!({"timestamp": "t", "type": "gate.other", "intent": "find"}),
    ];
    std::fs::write(&log_path, log("partial", &events)).unwrap();
    let out = write(&project, "s1", &log_path).unwrap();
    let results = std::fs::read_to_string(out.join("RESULTS.md")).unwrap();
    let front = results.split("---\n").nth(1).unwrap();
    let v: serde_json::Value = serde_saphyr::from_str(front).unwrap();
    assert_eq!(v["outcome"], "PARTIAL");
    assert_eq!(v["prompt"], "say \"hi\": now");
    assert_eq!(v["remaining"][0], "b");
    assert_eq!(v["next_steps"][0], "do b");
    assert_eq!(v["next_steps"][1], "switchboard resume s1");
    assert_eq!(v["hops"]["PARTIAL"], 1);
    let thoughts = std::fs::read_to_string(out.join("THOUGHTS.md")).unwrap();
    assert!(thoughts.contains("I read a"), "{thoughts}");
    let decisions = std::fs::read_to_string(out.join("DECISIONS.md")).unwrap();
    assert!(
        decisions.contains(
            "gate: plan from `analyst` passed contract `analyst-plan`; sources doc open read, \
             thoughts-locator; plan {\"intent\":\"find\"}"
        ),
        "{decisions}"
    );
    // The refusal is one line, not two (its tool error would repeat it).
    assert_eq!(
        decisions.matches("no source opens it").count(),
        1,
        "{decisions}"
    );
    // A gate event this writer does not know still lands, as its fields.
    assert!(
        decisions.contains("gate.other: {\"intent\":\"find\"}"),
        "{decisions}"
    );
    assert!(
        decisions.contains("checkpoint (PARTIAL): budget"),
        "{decisions}"
    );
    let listed = list(&project).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].meta.session_id, "s1");
    assert_eq!(listed[0].meta.input_tokens, 3);
}

#[test]
fn gc_keeps_the_newest_and_show_refuses_unknown_runs() {
    let dir = tempfile::tempdir().unwrap();
    let project = Project::open(dir.path()).unwrap();
    for (id, end) in [
        ("a", "2026-11-23T10:00:01Z"),
        ("b", "2026-11-23T10:00:03Z"),
        ("c", "2026-11-23T10:00:02Z"),
    ] {
        let log_path = dir.path().join(format!("{id}.jsonl"));
        let text = log("completed", &[])
            .replace("2026-11-23T10:00:05Z", end)
            .replace("\"s1\"", &format!("\"{id}\""));
        std::fs::write(&log_path, text).unwrap();
        write(&project, id, &log_path).unwrap();
    }
    let order: Vec<String> = list(&project)
        .unwrap()
        .into_iter()
        .map(|r| r.meta.session_id)
        .collect();
    assert_eq!(order, ["b", "c", "a"]);
    assert_eq!(gc(&project, 1).unwrap(), ["c", "a"]);
    assert_eq!(list(&project).unwrap().len(), 1);
    assert!(matches!(show(&project, "a"), Err(RunsError::NoRun(_))));
    assert!(matches!(
        show(&project, "../../x"),
        Err(RunsError::NoRun(_))
    ));
    assert_eq!(show(&project, "b").unwrap().0.meta.outcome, "COMPLETED");
}
