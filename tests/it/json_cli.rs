//! JSON contracts at the command line: `check --agent` on JSON answers, lint errors for a schema
//! that does not compile and a fallback that does not pass, `run` with the offline analyst
//! through a question and `resume --answer`, and `stats`.

use std::path::Path;
use std::process::{Command, Output};

fn sb(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .current_dir(dir)
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("agent")).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("agent/analyst.md"),
        dir.path().join("agent/analyst.md"),
    )
    .unwrap();
    dir
}

#[test]
fn check_validates_json_answers_with_an_agents_contract() {
    let dir = project();
    std::fs::write(dir.path().join("bad.json"), "Plan: {\"intent\": \"x\"}\n").unwrap();
    let o = sb(dir.path(), &["check", "--agent", "analyst", "bad.json"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("error[json/prose]"), "{}", text(&o));
    assert!(text(&o).contains("bad.json:1:1"), "{}", text(&o));
}

#[test]
fn lint_reports_a_broken_schema_and_a_failing_fallback_at_their_keys() {
    let dir = project();
    let analyst = std::fs::read_to_string(dir.path().join("agent/analyst.md")).unwrap();
    let bad_fallback = analyst
        .replace("name: analyst\n", "name: a2\n")
        .replace("    track: QUALITY\n", "    track: SLOW\n");
    std::fs::write(dir.path().join("agent/a2.md"), bad_fallback).unwrap();
    let bad_schema = analyst
        .replace("name: analyst\n", "name: a3\n")
        .replace("    type: object\n", "    type: objectx\n");
    std::fs::write(dir.path().join("agent/a3.md"), bad_schema).unwrap();
    let o = sb(dir.path(), &["lint"]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    let fallback_line = analyst.lines().position(|l| l == "  fallback:").unwrap() + 1;
    let schema_line = analyst.lines().position(|l| l == "  schema:").unwrap() + 1;
    assert!(out.contains("error[contract/json-fallback]"), "{out}");
    assert!(
        out.contains(&format!("agent/a2.md:{fallback_line}:3")),
        "{out}"
    );
    assert!(out.contains("error[contract/json-schema]"), "{out}");
    assert!(
        out.contains(&format!("agent/a3.md:{schema_line}:3")),
        "{out}"
    );
    assert!(
        !out.contains("agent/analyst.md"),
        "the shipped analyst lints clean: {out}"
    );
}

#[test]
fn the_offline_analyst_asks_once_and_resume_answers() {
    let dir = project();
    let o = sb(
        dir.path(),
        &["run", "analyst", "How many tickets were closed?"],
    );
    let out = text(&o);
    assert_eq!(o.status.code(), Some(3), "{out}");
    assert!(out.contains("question: Which period"), "{out}");
    let id = std::fs::read_dir(dir.path().join(".switchboard/sessions"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .file_name()
        .to_string_lossy()
        .into_owned();
    let o = sb(dir.path(), &["resume", &id]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--answer"), "{}", text(&o));
    let o = sb(
        dir.path(),
        &["resume", &id, "--answer", "last week", "--json"],
    );
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["status"], "completed");
    assert_eq!(v["contracts"]["analyst"]["questions"], 1);
    let o = sb(dir.path(), &["stats", "--agent", "analyst", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["analyst"]["valid_first_pass"], 2, "{v}");
    assert_eq!(v["analyst"]["questions"], 1, "{v}");
    let o = sb(dir.path(), &["stats", "--since", "yesterday"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}
