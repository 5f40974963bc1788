//! `write`: a text file under `thoughts/`, or wherever the agent's `permission.write` allows.
//!
//! Agents produce notes and reports, not code: writes outside `thoughts/` need an explicit grant
//! (`permission: {write: {"docs/**": allow}}` or `write: allow`).

use serde_json::Value;

use super::{str_arg, ToolContext, ToolError, ToolOutput, WRITE_ROOT};
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
    let path = ctx
        .project
        .resolve_new(name)
        .map_err(|e| refused(e.to_string()))?;
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
    let checked = ctx
        .project
        .resolve_new(&rel)
        .map_err(|e| refused(e.to_string()))?;
    std::fs::write(&checked, content).map_err(|e| ToolError::Failed {
        tool: "write".into(),
        message: format!("{rel}: {e}"),
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
