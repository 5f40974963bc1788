//! What a `path` that is not there may have meant, for the error a tool returns: the module
//! folder a file name stands for, or the real entries of the nearest folder that exists.
//!
//! A bare "does not exist" leaves a small model to guess again. Qwen2.5-Coder-1.5B, as
//! codebase-pattern-finder, read `src/cli.rs` (the CLI is the folder `src/cli/`), was told to
//! `list` the folder, listed `src`, and read `src/cli.rs` again; after both were refused as
//! repeats it answered from nothing it had read. Told `src/cli/mod.rs`, it has a path to copy.

use std::path::Path;

use super::visible;
use crate::project::Project;

/// Entries of the nearest folder named at most: enough to hold the right one in a source
/// folder, few enough to read at a few tokens a second.
pub const MAX_NAMED: usize = 16;

/// The hint for `name`, which the project does not hold: `None` when nothing near it exists.
pub fn hint(project: &Project, name: &str) -> Option<String> {
    let trimmed = name.trim().trim_end_matches('/');
    let path = Path::new(trimmed);
    let stem = path.file_stem()?.to_string_lossy().into_owned();
    let parent = path.parent().unwrap_or(Path::new(""));
    // `src/cli.rs` for the folder `src/cli/`: a module named by its file name.
    if let Some(ext) = path.extension() {
        let folder = project.relative(&parent.join(&stem));
        if let Some(dir) = folder_of(project, &folder) {
            let module = dir.join(format!("mod.{}", ext.to_string_lossy()));
            if module.is_file() && visible(project, &module) {
                return Some(format!(
                    "`{folder}/` is a folder; its module file is `{}`",
                    project.relative(&module)
                ));
            }
            return Some(holds(project, &dir, &stem));
        }
    }
    // The nearest folder above `name` that exists, the root at the last.
    let mut up = parent;
    loop {
        let folder = project.relative(up);
        if let Some(dir) = folder_of(project, if folder.is_empty() { "." } else { &folder }) {
            return Some(holds(project, &dir, &stem));
        }
        up = up.parent()?;
    }
}

/// `folder` resolved, when it is a visible folder of the project.
fn folder_of(project: &Project, folder: &str) -> Option<std::path::PathBuf> {
    project.resolve_visible(folder).ok().filter(|d| d.is_dir())
}

/// "`F/` holds `F/a`, `F/b/`, …": entries named like `stem` first, then the rest in order.
fn holds(project: &Project, dir: &Path, stem: &str) -> String {
    let mut entries: Vec<(bool, String)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| visible(project, p))
        .map(|p| {
            let like = p
                .file_stem()
                .is_some_and(|s| s.to_string_lossy().eq_ignore_ascii_case(stem));
            let slash = if p.is_dir() { "/" } else { "" };
            (!like, format!("`{}{slash}`", project.relative(&p)))
        })
        .collect();
    entries.sort();
    let total = entries.len();
    let shown: Vec<String> = entries
        .into_iter()
        .take(MAX_NAMED)
        .map(|(_, e)| e)
        .collect();
    let folder = project.relative(dir);
    let folder = if folder.is_empty() {
        "the project root".to_string()
    } else {
        format!("`{folder}/`")
    };
    match total {
        0 => format!("{folder} is empty"),
        n if n > MAX_NAMED => format!(
            "{folder} holds {} (and {} more)",
            shown.join(", "),
            n - MAX_NAMED
        ),
        _ => format!("{folder} holds {}", shown.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(files: &[&str]) -> (tempfile::TempDir, Project) {
        let dir = tempfile::tempdir().unwrap();
        for f in files {
            let path = dir.path().join(f);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x\n").unwrap();
        }
        let project = Project::open(dir.path()).unwrap();
        (dir, project)
    }

    #[test]
    fn a_file_named_for_a_module_folder_points_at_its_module() {
        let (_d, p) = project(&["src/cli/mod.rs", "src/cli/run.rs", "src/lib.rs"]);
        assert_eq!(
            hint(&p, "src/cli.rs").as_deref(),
            Some("`src/cli/` is a folder; its module file is `src/cli/mod.rs`")
        );
    }

    #[test]
    fn a_folder_without_a_module_file_is_listed() {
        let (_d, p) = project(&["docs/guide/a.md", "docs/guide/b.md"]);
        assert_eq!(
            hint(&p, "docs/guide.md").as_deref(),
            Some("`docs/guide/` holds `docs/guide/a.md`, `docs/guide/b.md`")
        );
    }

    #[test]
    fn the_nearest_existing_folder_is_listed_with_look_alikes_first() {
        let (_d, p) = project(&["src/config.toml", "src/agent/mod.rs", "src/zeta.rs"]);
        assert_eq!(
            hint(&p, "src/nowhere/config.rs").as_deref(),
            Some("`src/` holds `src/config.toml`, `src/agent/`, `src/zeta.rs`")
        );
        assert_eq!(
            hint(&p, "nothing.md").as_deref(),
            Some("the project root holds `src/`")
        );
    }

    #[test]
    fn a_long_folder_is_cut_and_hidden_folders_are_left_out() {
        let names: Vec<String> = (0..20).map(|i| format!("notes/n{i:02}.md")).collect();
        let mut files: Vec<&str> = names.iter().map(String::as_str).collect();
        files.push(".git/config");
        let (_d, p) = project(&files);
        let h = hint(&p, "notes/gone.md").unwrap();
        assert!(h.ends_with("(and 4 more)"), "{h}");
        let root = hint(&p, "gone.md").unwrap();
        assert!(!root.contains(".git"), "{root}");
    }
}
