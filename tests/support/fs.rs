//! File-system helpers the integration tests share.

use std::path::Path;

/// Copies the tree at `from` into `to` (created if missing), recursively. Symlinks are copied as
/// the files they point to; none are committed in the fixtures.
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A project holding the repository's shipped agents and one document `doc` (a path under
/// `thoughts/shared/decisions/`) with `text`.
pub fn shipped_agents_with(
    doc: &str,
    text: &str,
) -> (tempfile::TempDir, switchboard::project::Project) {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    copy_tree(&repo.join("agent"), &dir.path().join("agent"));
    std::fs::create_dir_all(dir.path().join("thoughts/shared/decisions")).expect("mkdir");
    std::fs::write(dir.path().join(doc), text).expect("write");
    let project = switchboard::project::Project::open(dir.path()).expect("project");
    (dir, project)
}

/// The switchboard binary, run in `root` without colour.
pub fn sb(root: &Path) -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_switchboard"));
    c.arg("--root").arg(root).env("NO_COLOR", "1");
    c
}

/// The stdout of a command that must have succeeded, as JSON (its stderr and stdout shown if
/// it did not).
#[track_caller]
pub fn success_json(out: &std::process::Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Runs `cmd`, which must succeed, and reads its stdout as JSON.
#[track_caller]
pub fn json_out(cmd: &mut std::process::Command) -> serde_json::Value {
    success_json(&cmd.output().unwrap())
}
