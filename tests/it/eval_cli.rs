//! `switchboard eval` at the command line on the offline model: the JSON report's per-agent
//! counts (shape and whole-contract conformance, evidence verified) come from real sessions.

use std::path::Path;
use std::process::Command;

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
