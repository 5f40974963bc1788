//! `write`: a text file under `thoughts/`, or wherever the agent's `permission.write` allows.
//!
//! Agents produce notes and reports, not code: writes outside `thoughts/` need an explicit grant
//! (`permission: {write: {"docs/**": allow}}` or `write: allow`).

use serde_json::Value;

use super::{resolve_new, str_arg, ToolContext, ToolError, ToolOutput, WRITE_ROOT};
use crate::agent::grants::glob_matches;
use crate::agent::permission::PermissionRule;
use crate::agent::Action;

pub fn run(ctx: ToolContext<'_>, args: &Value) -> Result<ToolOutput, ToolError> {
    let name = str_arg("write", args, "path")?;
    let content = str_arg("write", args, "content")?;
    let refused = |reason: String| ToolError::Refused {
        tool: "write".into(),
        path: name.to_string(),
        reason,
    };
    let path = resolve_new(ctx, "write", name)?;
    let rel = ctx.project.relative(&path);
    if !allowed(ctx, &rel) {
        return Err(refused(format!(
            "agent `{}` may write only under `{WRITE_ROOT}`",
            ctx.agent.name
        )));
    }
    if path.is_dir() {
        return Err(refused("it is a directory".into()));
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| refused(e.to_string()))?;
    }
    // Re-check after creating folders: a racing symlink must not carry the write out.
    let checked = resolve_new(ctx, "write", &rel)?;
    write_no_follow(&checked, content).map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => {
            refused("a symlink appeared at this path while writing".into())
        }
        _ => ToolError::Failed {
            tool: "write".into(),
            message: format!("{rel}: {e}"),
        },
    })?;
    Ok(ToolOutput {
        text: format!("wrote {} bytes to {rel}", content.len()),
        written: Some(rel),
    })
}

fn allowed(ctx: ToolContext<'_>, rel: &str) -> bool {
    let rule = ctx.agent.permission.0.get("write");
    let action = ctx.agent.permission.action("write", rel);
    if rel.starts_with(WRITE_ROOT) {
        return action == Action::Allow;
    }
    match rule {
        Some(PermissionRule::Action(Action::Allow)) => true,
        Some(PermissionRule::Patterns(map)) => {
            map.iter()
                .any(|(p, a)| *a == Action::Allow && p != "*" && glob_matches(p, rel))
                && action == Action::Allow
        }
        _ => false,
    }
}

/// Writes `content` to `path` without following a symlink at the last component: `path` is
/// canonical when it exists, so a link there now was put there after the check; a new file is
/// created with `create_new` (O_EXCL), which fails on any entry, dangling links included.
fn write_no_follow(path: &std::path::Path, content: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut file = match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            return Err(std::io::ErrorKind::AlreadyExists.into())
        }
        Ok(_) => std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(path)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)?,
        Err(e) => return Err(e),
    };
    file.write_all(content.as_bytes())
}
