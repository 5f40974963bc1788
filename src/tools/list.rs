//! `list`: one directory's entries, sorted, directories marked with `/`.

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
            let file = e.file_name().to_string_lossy().into_owned();
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
