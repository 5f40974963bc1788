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
    // A file already there that this hop has not read, nor its session written, is someone
    // else's (a decision record, another session's report): it is kept, and the content goes
    // to the next free name, which the result names. Replacing it needs a `read` first, as
    // the hosted runtimes ask before an overwrite; a small model does not lose a turn to it.
    // The session's own file under a numbered name (a write before this one was moved aside)
    // is the one replaced, not numbered again.
    let exists = std::fs::symlink_metadata(&path).is_ok();
    let known = ctx.known.contains(&rel);
    let own = match known {
        true => Some(rel.as_str()),
        false => ctx
            .written
            .iter()
            .rev()
            .find(|k| numbered_from(&rel, k))
            .map(String::as_str),
    };
    if exists && !known && !allowed(ctx, &numbered(&rel, 2)) {
        return Err(ToolError::Failed {
            tool: "write".into(),
            message: format!(
                "`{rel}` exists and this session has not read it; `read` it first to replace \
                 it, or write to a new name"
            ),
        });
    }
    let taken =
        write_new(ctx.project, &rel, content, own).map_err(|message| ToolError::Failed {
            tool: "write".into(),
            message,
        })?;
    let text = if taken == rel {
        format!("wrote {} bytes to {rel}", content.len())
    } else {
        format!(
            "`{rel}` already exists and was not read in this session, so it is kept; wrote {} \
             bytes to `{taken}` instead: name that path",
            content.len()
        )
    };
    Ok(ToolOutput {
        text,
        written: Some(taken),
    })
}

/// `NAME-N.EXT` for `NAME.EXT`: the names [`write_new`] tries after the first.
fn numbered(path: &str, n: u32) -> String {
    let (stem, ext) = split_ext(path);
    format!("{stem}-{n}{ext}")
}

/// Whether `name` is `path` numbered (`NAME-N.EXT`).
fn numbered_from(path: &str, name: &str) -> bool {
    let (stem, ext) = split_ext(path);
    name.strip_prefix(stem)
        .and_then(|rest| rest.strip_suffix(ext))
        .and_then(|rest| rest.strip_prefix('-'))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// `(NAME, ".EXT")`, or `(path, "")` when the last part has no extension.
fn split_ext(path: &str) -> (&str, &str) {
    match path.rfind('.') {
        Some(i) if !path[i..].contains('/') && !path[..i].ends_with('/') => path.split_at(i),
        _ => (path, ""),
    }
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

/// Writes `content` at `path` (project-relative), or at `NAME-2.EXT`, `NAME-3.EXT`, … when
/// another file has that name, never replacing a file it did not write; returns the name taken.
/// `earlier` is the caller's own file from before (a retried run's document, a corrected
/// answer), which is replaced in place.
///
/// A name is taken with `create_new` (O_EXCL), so two sessions finishing at once, in one process
/// or several, cannot take the same one, and a link put at the name is never written through;
/// the content then goes in with [`write_replacing`]. A name taken and not written is given
/// back. The error says which path and why, in one line.
pub(crate) fn write_new(
    project: &crate::project::Project,
    path: &str,
    content: &str,
    earlier: Option<&str>,
) -> Result<String, String> {
    for n in 1..1000 {
        let candidate = if n == 1 {
            path.to_string()
        } else {
            numbered(path, n)
        };
        let at = |e: &dyn std::fmt::Display| format!("`{candidate}`: {e}");
        let target = project.resolve_new(&candidate).map_err(|e| at(&e))?;
        project
            .refuse_hidden(&candidate, &target)
            .map_err(|e| at(&e))?;
        if let Some(dir) = target.parent() {
            std::fs::create_dir_all(dir).map_err(|e| at(&e))?;
        }
        // Again after creating folders: a link raced in must not carry the write out.
        let target = project.resolve_new(&candidate).map_err(|e| at(&e))?;
        let created = earlier != Some(candidate.as_str());
        if created {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&target)
            {
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(at(&e)),
            }
        }
        return match write_replacing(&target, content) {
            Ok(()) => Ok(candidate),
            Err(e) => {
                if created {
                    let _ = std::fs::remove_file(&target);
                }
                Err(at(&e))
            }
        };
    }
    Err(format!(
        "`{path}`: it and 998 numbered names after it are taken"
    ))
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

    /// Eight writers at once on one name, as eight sessions finishing together: each takes its
    /// own name and every content survives; a writer's own earlier file is replaced in place.
    #[test]
    fn writers_racing_for_one_name_each_take_their_own() {
        let dir = tempfile::tempdir().unwrap();
        let project = crate::project::Project::open(dir.path()).unwrap();
        let barrier = std::sync::Barrier::new(8);
        let mut taken: Vec<String> = std::thread::scope(|s| {
            let writers: Vec<_> = (0..8)
                .map(|i| {
                    let (project, barrier, root) = (&project, &barrier, dir.path());
                    s.spawn(move || {
                        barrier.wait();
                        let text = format!("writer {i}\n");
                        let path = write_new(project, "out/plan.md", &text, None).unwrap();
                        let on_disk = std::fs::read_to_string(root.join(&path)).unwrap();
                        assert_eq!(on_disk, text, "{path}");
                        path
                    })
                })
                .collect();
            writers.into_iter().map(|w| w.join().unwrap()).collect()
        });
        taken.sort();
        let mut names: Vec<String> = (2..=8).map(|n| format!("out/plan-{n}.md")).collect();
        names.push("out/plan.md".into());
        names.sort();
        assert_eq!(taken, names);
        // A writer whose own file is `plan-3.md` comes to it before any free name.
        let own = write_new(&project, "out/plan.md", "mine\n", Some("out/plan-3.md"));
        assert_eq!(own.unwrap(), "out/plan-3.md");
        let own = std::fs::read_to_string(dir.path().join("out/plan-3.md")).unwrap();
        assert_eq!(own, "mine\n");
    }

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
