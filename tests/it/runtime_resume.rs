//! The binary end to end: `run --json`, a session killed mid-flight, `resume`, `trace`.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use switchboard::runtime::events::read_log;
use switchboard::runtime::EventKind;

use crate::support::fs as support_fs;
use support_fs::copy_tree;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/runtime");

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&Path::new(FIXTURE).join("project"), dir.path());
    for s in ["research.yaml", "research-blocking.yaml"] {
        std::fs::copy(
            Path::new(FIXTURE).join("scripts").join(s),
            dir.path().join(s),
        )
        .unwrap();
    }
    dir
}

use crate::support::fs::{sb, success_json};

#[test]
fn run_json_prints_one_object_and_trace_shows_the_tree() {
    let dir = project();
    let out = sb(dir.path())
        .args(["run", "researcher", "research the runtime", "--model"])
        .arg("scripted/research.yaml")
        .args(["--correlation-id", "corr-42", "--json"])
        .output()
        .unwrap();
    let v = success_json(&out);
    assert_eq!(v["status"], "completed");
    assert_eq!(v["correlation_id"], "corr-42");
    assert_eq!(v["written"][0], "thoughts/shared/research/report.md");
    let session = v["session_id"].as_str().unwrap().to_string();

    let out = sb(dir.path())
        .args(["trace", &session, "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let t: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(t["hops"], 5);
    assert_eq!(t["roots"][0]["agent"], "researcher");
    assert_eq!(t["roots"][0]["children"].as_array().unwrap().len(), 4);
    assert_eq!(t["roots"][0]["children"][1]["conformant"], true);

    let out = sb(dir.path()).args(["trace", &session]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("  thoughts-analyzer [thoughts-"), "{text}");
    let out = sb(dir.path()).arg("sessions").output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains(&session));

    // Not a terminal: plain lines, one per hop start and end.
    let out = sb(dir.path())
        .args([
            "run",
            "researcher",
            "again",
            "--model",
            "scripted/research.yaml",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("thoughts-locator running") && text.contains("researcher completed"),
        "{text}"
    );
}

/// Starts a session that blocks in its third analyzer, kills it there; returns its log and id.
fn killed_session(dir: &Path) -> (std::path::PathBuf, String) {
    let mut child = sb(dir)
        .args([
            "run",
            "researcher",
            "research the runtime",
            "--json",
            "--model",
        ])
        .arg("scripted/research-blocking.yaml")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the locator and two analyzers completed and the third analyzer is blocked.
    let sessions = dir.join(".switchboard/sessions");
    let deadline = Instant::now() + Duration::from_secs(30);
    let log = loop {
        assert!(
            Instant::now() < deadline,
            "the session never reached the blocking hop"
        );
        std::thread::sleep(Duration::from_millis(20));
        let Some(entry) = std::fs::read_dir(&sessions).ok().and_then(|mut d| d.next()) else {
            continue;
        };
        let log = entry.unwrap().path().join("events.jsonl");
        let events = read_log(&log).unwrap_or_default();
        let completed = events
            .iter()
            .filter(|e| e.kind.name() == "hop.completed")
            .count();
        let started = events
            .iter()
            .filter(|e| e.kind.name() == "hop.started")
            .count();
        if completed >= 3 && started >= 5 {
            break log;
        }
    };
    child.kill().unwrap();
    child.wait().unwrap();
    let before = read_log(&log).unwrap();
    assert!(before.iter().all(|e| e.kind.name() != "session.completed"));
    let session = before[0].session_id.clone();
    (log, session)
}

#[test]
fn a_killed_session_resumes_without_rerunning_completed_hops() {
    let dir = project();
    let (log, session) = killed_session(dir.path());
    let out = sb(dir.path())
        .args([
            "resume",
            &session,
            "--json",
            "--model",
            "scripted/research.yaml",
        ])
        .output()
        .unwrap();
    let v = success_json(&out);
    assert_eq!(v["status"], "completed");
    assert_eq!(v["session_id"], session.as_str());

    let events = read_log(&log).unwrap();
    // No hop completed twice, by id or by (agent, prompt).
    let mut by_id = HashSet::new();
    let mut by_task = HashSet::new();
    let mut prompts: HashMap<String, (String, String)> = HashMap::new();
    for e in &events {
        if let EventKind::HopStarted { prompt, .. } = &e.kind {
            prompts.insert(
                e.hop_id.clone().unwrap(),
                (e.agent.clone().unwrap(), prompt.clone()),
            );
        }
    }
    for e in events.iter().filter(|e| e.kind.name() == "hop.completed") {
        let id = e.hop_id.clone().unwrap();
        assert!(by_id.insert(id.clone()), "hop {id} completed twice");
        assert!(
            by_task.insert(prompts[&id].clone()),
            "{:?} ran twice",
            prompts[&id]
        );
    }
    assert_eq!(by_id.len(), 5);
    assert_eq!(
        events
            .iter()
            .filter(|e| e.kind.name() == "hop.reused")
            .count(),
        3
    );
    // The blocked analyzer and the researcher ran again under their old ids, attempt 2.
    let second: Vec<_> = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::HopStarted { attempt: 2, .. }))
        .map(|e| e.agent.clone().unwrap())
        .collect();
    assert_eq!(second.len(), 2, "{second:?}");
    assert!(second.contains(&"researcher".to_string()));
    assert!(second.contains(&"thoughts-analyzer".to_string()));
    let started_ids: HashSet<_> = events
        .iter()
        .filter(|e| e.kind.name() == "hop.started")
        .map(|e| e.hop_id.clone())
        .collect();
    assert_eq!(started_ids.len(), 5, "resumed hops kept their ids");

    let again = sb(dir.path()).args(["resume", &session]).output().unwrap();
    assert_eq!(
        again.status.code(),
        Some(2),
        "a completed session is not resumed"
    );
}

/// A crash in the middle of writing a line leaves a torn last line; resume must cut it off (and
/// say so) rather than glue its own first event onto it.
#[test]
fn resume_repairs_a_torn_last_line_before_appending() {
    let dir = project();
    let (log, session) = killed_session(dir.path());
    let text = std::fs::read_to_string(&log).unwrap();
    let first = text.lines().next().unwrap();
    let torn = &first[..first.len() / 2];
    std::fs::write(&log, format!("{text}{torn}")).unwrap();

    let out = sb(dir.path())
        .args([
            "resume",
            &session,
            "--json",
            "--model",
            "scripted/research.yaml",
        ])
        .output()
        .unwrap();
    assert_eq!(success_json(&out)["status"], "completed");

    let after = std::fs::read_to_string(&log).unwrap();
    assert!(
        after.starts_with(&text),
        "complete lines are kept as they were"
    );
    for (n, line) in after.lines().enumerate() {
        assert!(
            serde_json::from_str::<switchboard::runtime::Event>(line).is_ok(),
            "line {} does not parse: {line}",
            n + 1
        );
    }
    let events = read_log(&log).unwrap();
    assert!(
        events
            .iter()
            .any(|e| matches!(e.kind, EventKind::SessionStarted { resumed: true, .. })),
        "the resumed session.started is in the log"
    );
    let repaired: Vec<u64> = events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::LogRepaired { dropped_bytes } => Some(dropped_bytes),
            _ => None,
        })
        .collect();
    assert_eq!(repaired, [torn.len() as u64]);

    let out = sb(dir.path()).args(["trace", &session]).output().unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains(&format!("dropped a torn last line ({} bytes)", torn.len())),
        "{shown}"
    );
}
