//! Stale-evidence lint: citations in thoughts/ whose cited lines moved, changed or vanished.

use switchboard::agent::{self, LoadOptions};
use switchboard::problem::Problem;
use switchboard::project::Project;

const CITED: &str = "# Cited\nWe will use serde-saphyr.\nIt reports line and column.\nThe end.\n";

const PLAN: &str = "---\ndate: 2026-11-21\nstatus: active\n---\n# Plan\n\n## Verified Current State\n\n- **Evidence**: `docs/cited.md:2-3`\n- **Excerpt**:\n  ```markdown\n  We will use serde-saphyr.\n  It reports line and column.\n  ```\n";

fn lint_with(cited: Option<&str>) -> Vec<Problem> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("docs")).unwrap();
    std::fs::create_dir_all(dir.path().join("thoughts/shared/plans")).unwrap();
    if let Some(c) = cited {
        std::fs::write(dir.path().join("docs/cited.md"), c).unwrap();
    }
    std::fs::write(
        dir.path().join("thoughts/shared/plans/2026-11-21-plan.md"),
        PLAN,
    )
    .unwrap();
    let project = Project::open(dir.path()).unwrap();
    let set = agent::load(&project, &LoadOptions::default());
    switchboard::lint::lint_project(&project, &set)
}

#[test]
fn current_citation_is_clean() {
    assert!(lint_with(Some(CITED)).is_empty());
}

#[test]
fn moved_lines_are_found_again() {
    let moved = format!("Preface line.\n{CITED}");
    let f = lint_with(Some(&moved));
    assert_eq!(f.len(), 1, "{f:#?}");
    let d = &f[0];
    assert_eq!(d.code, "excerpt/mismatch");
    assert_eq!(d.file, "thoughts/shared/plans/2026-11-21-plan.md");
    assert_eq!(d.line, 11);
    let help = d.help.as_deref().unwrap();
    assert!(help.contains("cite `docs/cited.md:3-4`"), "{help}");
    assert!(
        help.contains("docs/cited.md:3-4 now reads:\nWe will use serde-saphyr."),
        "shows the lines where they are now: {help}"
    );
}

#[test]
fn changed_lines_show_what_is_there_now() {
    let changed = CITED.replace("serde-saphyr", "serde_yaml");
    let f = lint_with(Some(&changed));
    assert_eq!(f.len(), 1, "{f:#?}");
    let help = f[0].help.as_deref().unwrap();
    assert!(help.contains("We will use serde_yaml."), "{help}");
    assert!(
        !help.contains("these lines are at"),
        "nothing moved: {help}"
    );
}

#[test]
fn vanished_file_or_lines() {
    let gone = lint_with(None);
    assert_eq!(gone.len(), 1, "{gone:#?}");
    assert_eq!(gone[0].code, "evidence/file-missing");
    let short = lint_with(Some("# Cited\n"));
    assert_eq!(short[0].code, "evidence/range-past-end");
    assert_eq!(switchboard::lint::exit_code(&short), 1);
}
