//! `switchboard eval` at the command line on the offline model: the JSON report's per-agent
//! counts (shape and whole-contract conformance, evidence verified) come from real sessions.

use std::path::Path;
use std::process::Command;

use crate::support::fs::{json_out, sb};

#[test]
fn eval_reports_shape_conformance_and_verified_evidence_per_agent() {
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::create_dir_all(dir.path().join("agent")).unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::copy(
        root.join("agent/codebase-analyzer.md"),
        dir.path().join("agent/codebase-analyzer.md"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("src/retry.rs"),
        "//! Retries.\npub const MAX: u32 = 3;\n\npub fn backoff(n: u32) -> u64 {\n    100 * 2u64.pow(n)\n}\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("suite.yaml"),
        "tasks:\n  - agent: codebase-analyzer\n    prompt: Explain how src/retry.rs computes the backoff.\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .current_dir(dir.path())
        .args([
            "eval",
            "suite.yaml",
            "--model",
            "offline/default",
            "--runs",
            "2",
            "--json",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_str(&text).unwrap();
    let a = &report["agents"]["codebase-analyzer"];
    assert_eq!(a["sessions"], 2, "{report:#}");
    assert_eq!(a["hops"], 2, "{report:#}");
    assert_eq!(a["shape_first_time"], 2, "{report:#}");
    assert_eq!(a["first_time"], 2, "{report:#}");
    // Both definitions of the file, quoted with their lines, in each of the two runs.
    assert_eq!(a["evidence_items"], 4, "{report:#}");
    assert_eq!(a["evidence_verified"], 4, "{report:#}");
}

const LEAD: &str = "---\nname: lead\ndescription: \"Writes a report.\"\nmode: primary\ndeliver: {write: \"thoughts/reports/*.md\", from_answer: true}\n---\nYou are {{ agent }}. Write a report.\n";

/// Every hop of `lead` answers with the same small report.
const LEAD_SCRIPT: &str = "agents:\n  lead:\n    - repeat: true\n      turns:\n        - content: \"# Nothing to report\\n\\nThe task asked for nothing.\\n\\nNo file was read.\\n\\nDone.\\n\"\n";

/// Each session starts from the tree the suite started from: the report a session wrote is set
/// aside in its run folder once judged, so the next session saves its own under the same name
/// and cannot find the first; `--keep-written` leaves it, and the next one takes the `-2` name.
/// A file that was there before the suite is never moved.
#[test]
fn each_session_starts_from_the_tree_the_suite_started_from() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("agent")).unwrap();
    std::fs::create_dir_all(root.join("thoughts/reports")).unwrap();
    std::fs::write(root.join("thoughts/reports/kept.md"), "there before\n").unwrap();
    std::fs::write(root.join("agent/lead.md"), LEAD).unwrap();
    std::fs::write(root.join("script.yaml"), LEAD_SCRIPT).unwrap();
    std::fs::write(
        root.join("suite.yaml"),
        "tasks:\n  - agent: lead\n    prompt: Report on nothing.\n",
    )
    .unwrap();
    let eval = |extra: &[&str]| {
        json_out(
            sb(root)
                .current_dir(root)
                .args(["eval", "suite.yaml", "--model", "scripted/script.yaml"])
                .args(["--runs", "2", "--json"])
                .args(extra),
        )
    };
    let reports = || {
        let mut names: Vec<String> = std::fs::read_dir(root.join("thoughts/reports"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };

    let report = eval(&[]);
    assert_eq!(report["primaries"]["lead"]["delivered"], 2, "{report}");
    assert_eq!(reports(), ["kept.md"], "{report}");
    let set_aside = report["set_aside"].as_array().expect("set_aside");
    assert_eq!(set_aside.len(), 2, "{report}");
    let mut names = Vec::new();
    for s in set_aside {
        let files = s["files"].as_array().unwrap();
        assert_eq!(files.len(), 1, "{s}");
        let file = files[0].as_str().unwrap();
        let folder = s["folder"].as_str().unwrap();
        assert!(folder.starts_with(".switchboard/runs/"), "{s}");
        let kept = std::fs::read_to_string(root.join(folder).join(file)).unwrap();
        assert!(kept.starts_with("# Nothing to report"), "{kept}");
        names.push(file.to_string());
    }
    // The second session did not see the first one's report: the same name, not `-2`.
    assert_eq!(names[0], names[1]);
    assert!(names[0].starts_with("thoughts/reports/"), "{names:?}");

    let report = eval(&["--keep-written"]);
    assert!(report.get("set_aside").is_none(), "{report}");
    let saved = names[0].trim_start_matches("thoughts/reports/");
    let second = saved.replace(".md", "-2.md");
    let mut expected = vec!["kept.md".to_string(), saved.to_string(), second];
    expected.sort();
    assert_eq!(reports(), expected);
}
