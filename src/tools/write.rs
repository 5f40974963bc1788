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
    write_replacing(&checked, content).map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => {
            refused("a symlink appeared at this path while writing".into())
        }
        std::io::ErrorKind::IsADirectory => refused("it is a directory".into()),
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

/// Writes `content` to a new temporary file in `path`'s folder, then renames it over `path`.
///
/// Renaming replaces the directory entry instead of writing into the file it names, so neither a
/// symlink nor a hard link put at `path` after [`resolve_new`] checked it can carry the write to
/// another file: the other names keep the old contents. The temporary is created with
/// `create_new` (O_EXCL) so it cannot be a link either, and is removed when anything fails. An
/// existing file's permission bits are kept.
pub(crate) fn write_replacing(path: &std::path::Path, content: &str) -> std::io::Result<()> {
    use std::io::Write;
    let existing = match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            return Err(std::io::ErrorKind::AlreadyExists.into())
        }
        Ok(meta) if meta.is_dir() => return Err(std::io::ErrorKind::IsADirectory.into()),
        Ok(meta) => Some(meta.permissions()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    let dir = path
        .parent()
        .ok_or_else(|| std::io::Error::other("the path has no parent folder"))?;
    let file_name = path
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
    let (tmp, mut file) = create_temporary(dir, &file_name)?;
    let written = (|| {
        file.write_all(content.as_bytes())?;
        if let Some(permissions) = existing {
            file.set_permissions(permissions)?;
        }
        file.sync_all()?;
        drop(file);
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// A fresh file next to the target, named `.NAME.switchboard-PID-N.tmp`; a name already taken (a
/// leftover, or a concurrent write) moves on to the next N.
fn create_temporary(
    dir: &std::path::Path,
    file_name: &str,
) -> std::io::Result<(std::path::PathBuf, std::fs::File)> {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    for _ in 0..1000 {
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = dir.join(format!(
            ".{file_name}.switchboard-{}-{n}.tmp",
            std::process::id()
        ));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
        {
            Ok(file) => return Ok((tmp, file)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other(
        "could not create a temporary file next to it (1000 names taken)",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The race `resolve_new` cannot close: a hard link put at the path after the check. The
    /// write replaces the directory entry, so the other name keeps its contents.
    #[cfg(unix)]
    #[test]
    fn a_hard_link_appearing_after_the_check_is_replaced_not_written_through() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside.txt");
        std::fs::write(&outside, "outside\n").unwrap();
        std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o640)).unwrap();
        std::fs::create_dir(dir.path().join("root")).unwrap();
        let target = dir.path().join("root/notes.md");
        std::fs::hard_link(&outside, &target).unwrap();
        write_replacing(&target, "new\n").unwrap();
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "outside\n");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new\n");
        let meta = std::fs::metadata(&target).unwrap();
        assert_eq!(meta.nlink(), 1);
        assert_eq!(meta.permissions().mode() & 0o777, 0o640, "mode kept");
        // No temporary is left behind, and a new file is created the same way.
        write_replacing(&dir.path().join("root/new.md"), "fresh\n").unwrap();
        let mut names: Vec<String> = std::fs::read_dir(dir.path().join("root"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["new.md", "notes.md"]);
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_or_a_folder_at_the_path_is_not_replaced() {
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("elsewhere", dir.path().join("link.md")).unwrap();
        std::fs::create_dir(dir.path().join("folder")).unwrap();
        let kind = |name: &str| {
            write_replacing(&dir.path().join(name), "x")
                .unwrap_err()
                .kind()
        };
        assert_eq!(kind("link.md"), std::io::ErrorKind::AlreadyExists);
        assert_eq!(kind("folder"), std::io::ErrorKind::IsADirectory);
    }
}
