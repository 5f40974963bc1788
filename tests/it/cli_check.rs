//! `switchboard check` end to end: exit codes, human and JSON output, stdin.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::support::fs as support_fs;
use support_fs::copy_tree;

fn corpus(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/conformance")
        .join(rel)
}

fn check(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_switchboard"));
    cmd.arg("check")
        .arg("--root")
        .arg(corpus("root"))
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.unwrap_or_default()).unwrap();
    drop(input);
    child.wait_with_output().unwrap()
}

fn path(rel: &str) -> String {
    corpus(rel).to_string_lossy().into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn valid_files_exit_zero() {
    let o = check(
        &[
            &path("valid/v01-seed-example.md"),
            &path("valid/v03-crlf.md"),
            &path("valid/v22-generic-unknown-type.md"),
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("checked 3 files: 3 conform"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn violations_exit_one_and_read_like_a_compiler() {
    let file = path("invalid/i47-excerpt-from-other-lines.md");
    let o = check(&[&file, &path("valid/v01-seed-example.md")], None);
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(out.contains("error[excerpt/mismatch]: "), "{out}");
    assert!(out.contains(&format!(" --> {file}:31:3")), "{out}");
    assert!(
        out.contains(
            "= note: the lines at `thoughts/shared/specs/2026-01-15-auth-system.md:89-89` are:"
        ),
        "{out}"
    );
    assert!(
        out.contains("89 | Security Requirement: Token lifetime MUST NOT exceed 24 hours"),
        "the quoted line, found where it really is: {out}"
    );
    assert!(
        out.contains("not at `thoughts/shared/specs/2026-01-15-auth-system.md:45-46`"),
        "{out}"
    );
    assert!(
        out.contains("checked 2 files: 1 conform, 1 does not (1 error)"),
        "{out}"
    );
    assert!(!out.contains('\x1b'), "NO_COLOR must turn colour off");
}

#[test]
fn json_output_has_stable_fields() {
    let file = path("invalid/i57-many-problems.md");
    let o = check(&["--format", "json", &file], None);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let files = v["files"].as_array().unwrap();
    assert_eq!(files.len(), 1);
    assert_eq!(files[0]["conformant"], false);
    assert_eq!(files[0]["contract"], "document-analysis");
    let violations = v["violations"].as_array().unwrap();
    assert_eq!(violations.len(), 5);
    for x in violations {
        for key in ["file", "line", "column", "rule", "severity", "message"] {
            assert!(!x[key].is_null(), "{key} missing in {x}");
        }
        assert_eq!(x["file"], file.as_str());
        assert_eq!(x["severity"], "error");
    }
    let mismatch = violations
        .iter()
        .find(|x| x["rule"] == "excerpt/mismatch")
        .unwrap();
    assert!(mismatch["actual"]
        .as_str()
        .unwrap()
        .contains("Tokens are signed with RS256"));
}

#[test]
fn stdin_and_expected_ids() {
    let text = std::fs::read(corpus("valid/v01-seed-example.md")).unwrap();
    let o = check(&["-"], Some(&text));
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let o = check(&["--correlation-id", "other", "-"], Some(&text));
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("error[envelope/correlation-mismatch]"));
    assert!(stdout(&o).contains(" --> <stdin>:3:17"), "{}", stdout(&o));
    let o = check(
        &[
            "--message-id",
            "thoughts-2026-01-19-001",
            "--correlation-id",
            "research-auth-2026-01-19",
            "-",
        ],
        Some(&text),
    );
    assert_eq!(o.status.code(), Some(0));
}

#[test]
fn contracts_by_name_and_file() {
    let file = path("valid/v01-seed-example.md");
    assert_eq!(
        check(&["--contract", "envelope", &file], None)
            .status
            .code(),
        Some(0)
    );
    let strict = path("contracts/strict-analysis.yaml");
    let o = check(
        &[
            "--contract",
            &strict,
            &path("invalid/i61-section-missing.md"),
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("contract/section-missing"));
    let o = check(&["--contract", "nope", &file], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown contract"));
}

#[test]
fn could_not_run_exits_two() {
    let o = check(&["/nonexistent/answer.md"], None);
    assert_eq!(o.status.code(), Some(2));
    let o = check(&[], None);
    assert_eq!(o.status.code(), Some(2), "clap refuses a missing FILE");
    // A readable file next to an unreadable one is still checked.
    let o = check(
        &[
            "--format",
            "json",
            "/nonexistent/a.md",
            &path("valid/v01-seed-example.md"),
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["files"][0]["error"].is_string());
    assert_eq!(v["files"][1]["conformant"], true);
}

#[test]
fn invalid_utf8_is_a_violation() {
    let mut text = std::fs::read(corpus("valid/v01-seed-example.md")).unwrap();
    text.insert(30, 0xff);
    let o = check(&["-"], Some(&text));
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).contains("error[envelope/encoding]"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn agent_contracts() {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&corpus("root"), dir.path());
    std::fs::create_dir_all(dir.path().join("agent")).unwrap();
    std::fs::write(
        dir.path().join("agent/analyzer.md"),
        "---\ndescription: Extracts decisions from one document.\nmode: subagent\n\
         contract:\n  extends: document-analysis\n  excerpt_max_lines: 2\n---\nAnalyze.\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("agent/helper.md"),
        "---\ndescription: Helps.\nmode: subagent\n---\nHelp.\n",
    )
    .unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_switchboard"))
            .arg("check")
            .arg("--root")
            .arg(dir.path())
            .args(args)
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    };
    // The seed example quotes three lines; this agent's contract allows two.
    let o = run(&["--agent", "analyzer", &path("valid/v01-seed-example.md")]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("error[excerpt/too-long]"),
        "{}",
        stdout(&o)
    );
    let o = run(&[
        "--agent",
        "analyzer",
        &path("valid/v14-single-line-reference.md"),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let o = run(&["--agent", "helper", &path("valid/v01-seed-example.md")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("declares no contract"));
    let o = run(&["--agent", "analyzr", &path("valid/v01-seed-example.md")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("did you mean `analyzer`"));
    let o = run(&["--agent", "analyzer", "--contract", "envelope", "-"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "--agent and --contract exclude each other"
    );
}
