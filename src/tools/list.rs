//! `list`: one directory's entries, sorted, directories marked with `/`, each written as its
//! path from the project root.
//!
//! Root-relative, not the bare entry names: every other tool takes and prints paths from the
//! root, and a model copies what it is shown. Qwen2.5-Coder-1.5B, shown `cli/` and
//! `config.rs` for `list src`, read `src/cli.rs` (not there) twice, and then cited
//! `agent/planner.md`, a file of the root's `agent/` folder that its own listing's `agent/`
//! (meaning `src/agent/`) had named.

use serde_json::Value;

use super::{opt_str, resolve, visible, ToolContext, ToolError, ToolOutput};

/// Entries shown at most; a larger folder says how many were left out.
pub const MAX_ENTRIES: usize = 1000;

pub fn run(ctx: ToolContext<'_>, args: &Value) -> Result<ToolOutput, ToolError> {
    let name = opt_str(args, "path").unwrap_or(".");
    let dir = resolve(ctx, "list", name)?;
    let entries = std::fs::read_dir(&dir).map_err(|e| ToolError::Failed {
        tool: "list".into(),
        message: format!("{name}: {e}"),
    })?;
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            if !visible(ctx.project, &e.path()) {
                return None;
            }
            let file = ctx.project.relative(&dir.join(e.file_name()));
            Some(if e.path().is_dir() {
                format!("{file}/")
            } else {
                file
            })
        })
        .collect();
    names.sort();
    let total = names.len();
    let mut out = names
        .into_iter()
        .take(MAX_ENTRIES)
        .collect::<Vec<_>>()
        .join("\n");
    if total > MAX_ENTRIES {
        out.push_str(&format!(
            "\n({} more entries not shown)",
            total - MAX_ENTRIES
        ));
    }
    if total == 0 {
        out = "(empty directory)".into();
    }
    Ok(ToolOutput::text(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::project::Project;

    #[test]
    fn entries_are_paths_from_the_root() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src/cli")).unwrap();
        std::fs::write(dir.path().join("src/cli/mod.rs"), "x\n").unwrap();
        std::fs::write(dir.path().join("src/lib.rs"), "x\n").unwrap();
        let project = Project::open(dir.path()).unwrap();
        let text = "---\ndescription: d\nmode: subagent\n---\nbody\n";
        let crate::agent::parse::Outcome::Loaded(agent) =
            crate::agent::parse::parse(text, "agent/a.md", "a").outcome
        else {
            panic!("the agent loads");
        };
        let ctx = ToolContext {
            project: &project,
            agent: &agent,
            known: &[],
            written: &[],
        };
        let src = run(ctx, &serde_json::json!({"path": "src"})).unwrap().text;
        assert_eq!(src, "src/cli/\nsrc/lib.rs");
        let root = run(ctx, &serde_json::json!({})).unwrap().text;
        assert_eq!(root, "src/");
    }
}
