//! The CLI's edge: a command that cannot run prints its error once, on stderr, and exits 2;
//! findings exit 1; clean runs exit 0 (README's "Exit codes" table).

use std::path::Path;
use std::process::{Command, Output};

const LEAD: &str = "---\ndescription: lead\nmode: primary\n---\nWorks alone.\n";
const HELPER: &str = "---\ndescription: helper\nmode: subagent\n---\nHelps.\n";

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("agent")).unwrap();
    std::fs::write(dir.path().join("agent/lead.md"), LEAD).unwrap();
    std::fs::write(dir.path().join("agent/helper.md"), HELPER).unwrap();
    dir
}

fn sb(root: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .arg("--root")
        .arg(root)
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

/// Exit 2, nothing on stdout, and `phrase` exactly once on stderr (the one printer, no echo).
#[track_caller]
fn could_not_run(out: &Output, phrase: &str) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    assert!(
        out.stdout.is_empty(),
        "stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    // miette wraps long lines; join them back before counting.
    let joined = err
        .lines()
        .map(|l| l.trim_start_matches([' ', '│', '×']).trim_end())
        .collect::<Vec<_>>()
        .join(" ");
    assert_eq!(
        joined.matches(phrase).count(),
        1,
        "`{phrase}` once in: {err}"
    );
    err
}

#[test]
fn errors_are_printed_once_with_exit_code_2() {
    let dir = project();
    let root = dir.path();
    let err = could_not_run(&sb(root, &["trace", "nope"]), "no session `nope`");
    assert!(
        err.contains("switchboard sessions"),
        "says where to look: {err}"
    );
    could_not_run(&sb(root, &["resume", "nope"]), "no session `nope`");
    let err = could_not_run(&sb(root, &["render", "leda"]), "no agent named `leda`");
    assert!(err.contains("did you mean `lead`?"), "{err}");
    assert!(err.contains("known agents: helper, lead"), "{err}");
    could_not_run(&sb(root, &["run", "ghost", "hi"]), "unknown agent `ghost`");
    // An agent whose file does not parse is named with the file's first error, not as unknown.
    std::fs::write(
        root.join("agent/broken.md"),
        "---\ndescription: broken\nmode: primary\nsteps: [\n---\nBody.\n",
    )
    .unwrap();
    for args in [
        &["run", "broken", "hi"][..],
        &["render", "broken"],
        &["check", "--agent", "broken", "-"],
    ] {
        let err = could_not_run(&sb(root, args), "agent `broken` did not load");
        assert!(
            err.contains("agent/broken.md:"),
            "{args:?} names the file: {err}"
        );
        assert!(
            err.contains("[agent/yaml]"),
            "{args:?} gives the error: {err}"
        );
        assert!(!err.contains("unknown agent"), "{args:?}: {err}");
    }
    std::fs::remove_file(root.join("agent/broken.md")).unwrap();
    could_not_run(
        &sb(root, &["run", "helper", "hi"]),
        "cannot start a session",
    );
    let outside = tempfile::tempdir().unwrap();
    let err = could_not_run(
        &sb(root, &["lint", outside.path().to_str().unwrap()]),
        "is outside the project root",
    );
    assert!(err.contains("help:"), "says what to do: {err}");
}

#[test]
fn a_session_that_already_ended_is_not_resumed_and_says_why() {
    let dir = project();
    let session = dir.path().join(".switchboard/sessions/s-1");
    std::fs::create_dir_all(&session).unwrap();
    let usage = r#""usage":{"input_tokens":0,"output_tokens":0}"#;
    let log = format!(
        concat!(
            r#"{{"timestamp":"t","session_id":"s-1","correlation_id":"c","hop_id":"h","parent_hop_id":null,"agent":"lead","type":"session.started","prompt":"p","model":null,"max_parallel":8,"max_depth":3}}"#,
            "\n",
            r#"{{"timestamp":"t","session_id":"s-1","correlation_id":"c","hop_id":"h","parent_hop_id":null,"agent":"lead","type":"session.completed","status":"non_conformant","answer":"","error":null,{},"duration_us":1}}"#,
            "\n"
        ),
        usage
    );
    std::fs::write(session.join("events.jsonl"), log).unwrap();

    let err = could_not_run(
        &sb(dir.path(), &["resume", "s-1"]),
        "session s-1 already ended (non_conformant); nothing to resume",
    );
    assert!(err.contains("switchboard trace s-1"), "{err}");

    // The same log reads back with its status word unchanged.
    let out = sb(dir.path(), &["sessions", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v[0]["status"], "non_conformant", "{v}");
    let out = sb(dir.path(), &["trace", "s-1"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("session s-1 (non_conformant)"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn findings_exit_1_and_clean_runs_exit_0() {
    let dir = project();
    assert_eq!(sb(dir.path(), &["agents"]).status.code(), Some(0));
    std::fs::write(
        dir.path().join("agent/lead.md"),
        LEAD.replace("Works alone.", "Delegate to `ghost`."),
    )
    .unwrap();
    let out = sb(dir.path(), &["lint"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A missing `--agents` folder stops every command with exit 2 and one message naming the folder,
/// where it was looked for and what to do (#28 item 5): `mcp --agents thoughts-analyzer` used to
/// serve every agent, `run` to run without the folder, and only `agents` said anything.
#[test]
fn a_missing_agents_folder_is_an_error_in_every_command() {
    let dir = project();
    let root = dir.path();
    std::fs::write(root.join("notes.txt"), "not a folder").unwrap();
    std::fs::write(root.join("answer.json"), "{}").unwrap();
    std::fs::write(root.join("suite.yaml"), "tasks: []\n").unwrap();
    let families: &[&[&str]] = &[
        &["agents"],
        &["lint"],
        &["render", "lead"],
        &["graph"],
        &["check", "answer.json"],
        &["run", "lead", "hi"],
        &["mcp"],
        &["resume", "nope"],
        &["sessions"],
        &["trace", "nope"],
        &["stats"],
        &["runs", "list"],
        &["workflow", "list"],
        &["pipeline", "run", "nope.yaml", "x"],
        &["knowledge", "search", "x"],
        &["eval", "suite.yaml", "--model", "offline/default"],
        &["schema", "agent"],
    ];
    for args in families {
        let mut argv = vec!["--agents", "thoughts-analyzer"];
        argv.extend_from_slice(args);
        let err = could_not_run(&sb(root, &argv), "`--agents thoughts-analyzer`");
        // miette wraps anywhere, paths included: compare without white space.
        let flat = |s: &str| {
            s.replace(['│', '×'], "")
                .split_whitespace()
                .collect::<String>()
        };
        let canonical = root.canonicalize().unwrap();
        let looked = canonical.join("thoughts-analyzer").display().to_string();
        assert!(
            flat(&err).contains(&flat(&format!("{looked} does not exist"))),
            "{args:?} names where it looked: {err}"
        );
        assert!(
            flat(&err).contains(&flat("use `--agent NAME`")),
            "{args:?} says what to do: {err}"
        );
    }
    // The issue's own case, written as a user types it, and a file given as a folder.
    could_not_run(
        &sb(root, &["mcp", "--agents", "thoughts-analyzer"]),
        "does not exist",
    );
    let err = could_not_run(
        &sb(root, &["run", "lead", "hi", "--agents", "notes.txt"]),
        "is not a folder",
    );
    assert!(err.contains("`--agents notes.txt`"), "{err}");
    // An existing folder still works.
    std::fs::create_dir_all(root.join("extra")).unwrap();
    let out = sb(root, &["agents", "--agents", "extra"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}
