//! The project root and path confinement.
//!
//! Every path an agent, a tool or an answer names is turned into a path on disk here and nowhere
//! else, so the confinement rule (canonical, inside the root, symlinks included) has exactly one
//! implementation to audit.

use std::path::{Component, Path, PathBuf};

/// Why a name could not become a path inside the project.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum PathError {
    #[error("`{0}` is an absolute path; name files relative to the project root")]
    Absolute(String),
    #[error("`{0}` leaves the project root through `..`")]
    Escapes(String),
    #[error("`{0}` resolves outside the project root (through a symlink)")]
    SymlinkEscape(String),
    #[error(
        "`{name}` goes through `{link}`, a symlink whose target does not exist; writing through \
         it could create a file outside the project root, so it is refused (remove the link or \
         name a real path)"
    )]
    DanglingSymlink { name: String, link: String },
    #[error(
        "`{name}` is a hard link: the file has {links} names on disk, and another one may lie \
         outside the project root, so it is not read, cited or written (put a copy of the file \
         in the project instead of a link)"
    )]
    HardLink { name: String, links: u64 },
    #[error("`{name}` is inside `{dir}/`, which is not open to tools or citations ({why})")]
    Hidden {
        name: String,
        dir: &'static str,
        why: &'static str,
    },
    #[error("`{0}` does not exist under the project root")]
    NotFound(String),
    #[error("`{0}` is empty")]
    Empty(String),
    #[error("cannot resolve `{path}`: {reason}")]
    Io { path: String, reason: String },
}

/// Folders inside the root that no tool reads, writes, lists or searches and no answer may cite,
/// at any depth, with why: one list, so every consumer follows one policy.
pub const HIDDEN_DIRS: &[(&str, &str)] = &[
    (
        ".git",
        "version control; `.git/config` can hold credentials in remote URLs",
    ),
    (".switchboard", "the runtime's own state"),
];

/// The hidden folder a root-relative, `/`-separated path lies in (or is), with the reason.
pub fn hidden_dir(rel: &str) -> Option<(&'static str, &'static str)> {
    rel.split('/')
        .find_map(|part| HIDDEN_DIRS.iter().find(|(dir, _)| *dir == part).copied())
}

/// The words of `text` that could be paths: runs of letters, digits and `_./-`, without a
/// sentence's closing `.`. Which of them name project files is the caller's to ask.
pub fn path_words(text: &str) -> impl Iterator<Item = &str> {
    let path_char = |c: char| c.is_ascii_alphanumeric() || "_./-".contains(c);
    text.split(move |c: char| !path_char(c))
        .map(|w| w.trim_end_matches('.'))
}

/// [`PathError::HardLink`] when `path` is a regular file with more than one name on disk.
///
/// A hard link shares the inode of its other names, so canonicalizing it proves nothing: a link
/// inside the root to `~/.ssh/id_rsa` canonicalizes inside. Whether the other names are inside
/// the root cannot be told without searching the whole file system, so every multiply-linked
/// regular file is refused. Directories (whose link count is their subfolders plus two) and
/// missing paths pass; the caller handles those.
pub fn refuse_hard_link(name: &str, path: &Path) -> Result<(), PathError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let Ok(meta) = std::fs::metadata(path) {
            if meta.is_file() && meta.nlink() > 1 {
                return Err(PathError::HardLink {
                    name: name.to_string(),
                    links: meta.nlink(),
                });
            }
        }
    }
    #[cfg(not(unix))]
    let _ = (name, path);
    Ok(())
}

/// A project: the canonical root every relative name is resolved against.
#[derive(Debug, Clone)]
pub struct Project {
    root: PathBuf,
}

impl Project {
    /// Opens `root`, canonicalizing it once so later containment checks compare like with like.
    pub fn open(root: impl AsRef<Path>) -> std::io::Result<Self> {
        let root = std::fs::canonicalize(root.as_ref())?;
        Ok(Self { root })
    }

    /// Finds the project root from `start`: the nearest ancestor with an agent folder, a
    /// `switchboard.toml` or a `.git`, else `start` itself.
    pub fn discover(start: impl AsRef<Path>) -> std::io::Result<Self> {
        let start = std::fs::canonicalize(start.as_ref())?;
        let markers = [
            "switchboard.toml",
            "agent",
            "agents",
            ".opencode",
            ".claude",
            ".git",
        ];
        let found = start
            .ancestors()
            .find(|dir| markers.iter().any(|m| dir.join(m).exists()))
            .map(Path::to_path_buf);
        Ok(Self {
            root: found.unwrap_or(start),
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves an existing file or directory named relative to the root.
    ///
    /// The lexical checks come first so that a name like `../../etc/passwd` is refused without
    /// touching the disk; canonicalization then catches symlinks that lead out, and
    /// [`refuse_hard_link`] the hard links canonicalization cannot see.
    pub fn resolve(&self, name: &str) -> Result<PathBuf, PathError> {
        let joined = self.lexical(name)?;
        let canonical = std::fs::canonicalize(&joined).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => PathError::NotFound(name.to_string()),
            _ => PathError::Io {
                path: name.to_string(),
                reason: e.to_string(),
            },
        })?;
        if !canonical.starts_with(&self.root) {
            return Err(PathError::SymlinkEscape(name.to_string()));
        }
        refuse_hard_link(name, &canonical)?;
        Ok(canonical)
    }

    /// Resolves a path that may not exist yet (a file about to be written): its nearest existing
    /// ancestor must canonicalize inside the root, and the rest must hold no `..`.
    ///
    /// "Existing" means present as a directory entry (`symlink_metadata`), not "its target
    /// exists": a dangling symlink is an entry, and treating it as absent would let the write
    /// follow it wherever it points. A dangling link is therefore refused outright, even one
    /// pointing inside, since nothing needs to create files through a link. An existing file with
    /// more than one hard link is refused like in [`Self::resolve`].
    pub fn resolve_new(&self, name: &str) -> Result<PathBuf, PathError> {
        let joined = self.lexical(name)?;
        let mut existing = joined.as_path();
        let mut rest = Vec::new();
        while existing.symlink_metadata().is_err() {
            match (existing.parent(), existing.file_name()) {
                (Some(parent), Some(file)) => {
                    rest.push(file.to_os_string());
                    existing = parent;
                }
                _ => return Err(PathError::Escapes(name.to_string())),
            }
        }
        let mut canonical = std::fs::canonicalize(existing).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                PathError::DanglingSymlink {
                    name: name.to_string(),
                    link: self.relative(existing),
                }
            } else {
                PathError::Io {
                    path: name.to_string(),
                    reason: e.to_string(),
                }
            }
        })?;
        if !canonical.starts_with(&self.root) {
            return Err(PathError::SymlinkEscape(name.to_string()));
        }
        for part in rest.iter().rev() {
            canonical.push(part);
        }
        refuse_hard_link(name, &canonical)?;
        Ok(canonical)
    }

    /// [`Self::resolve`], refusing a path in a [`HIDDEN_DIRS`] folder: a file an answer may
    /// cite or name.
    pub fn resolve_visible(&self, name: &str) -> Result<PathBuf, PathError> {
        let path = self.resolve(name)?;
        self.refuse_hidden(name, &path)?;
        Ok(path)
    }

    /// [`PathError::Hidden`] when the resolved `path` lies in a [`HIDDEN_DIRS`] folder.
    pub fn refuse_hidden(&self, name: &str, path: &Path) -> Result<(), PathError> {
        match hidden_dir(&self.relative(path)) {
            None => Ok(()),
            Some((dir, why)) => Err(PathError::Hidden {
                name: name.to_string(),
                dir,
                why,
            }),
        }
    }

    /// The name of `path` relative to the root, with `/` separators, for messages and citations.
    pub fn relative(&self, path: &Path) -> String {
        let rel = path.strip_prefix(&self.root).unwrap_or(path);
        rel.components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/")
    }

    fn lexical(&self, name: &str) -> Result<PathBuf, PathError> {
        let trimmed = name.trim();
        if trimmed.is_empty() {
            return Err(PathError::Empty(name.to_string()));
        }
        let path = Path::new(trimmed);
        if path.is_absolute() || trimmed.starts_with('\\') || trimmed.starts_with('~') {
            return Err(PathError::Absolute(name.to_string()));
        }
        let mut depth: usize = 0;
        for component in path.components() {
            match component {
                Component::Normal(_) => depth += 1,
                Component::CurDir => {}
                Component::ParentDir => {
                    depth = depth
                        .checked_sub(1)
                        .ok_or_else(|| PathError::Escapes(name.to_string()))?;
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(PathError::Absolute(name.to_string()))
                }
            }
        }
        Ok(self.root.join(path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> (tempfile::TempDir, Project) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("root/docs")).unwrap();
        std::fs::write(dir.path().join("root/docs/a.md"), "a\n").unwrap();
        std::fs::write(dir.path().join("secret.txt"), "s\n").unwrap();
        let project = Project::open(dir.path().join("root")).unwrap();
        (dir, project)
    }

    #[test]
    fn resolves_inside_names() {
        let (_d, p) = fixture();
        assert!(p.resolve("docs/a.md").unwrap().ends_with("docs/a.md"));
        assert!(p.resolve("./docs/../docs/a.md").is_ok());
    }

    #[test]
    fn refuses_absolute_and_dotdot() {
        let (_d, p) = fixture();
        assert!(matches!(
            p.resolve("/etc/passwd"),
            Err(PathError::Absolute(_))
        ));
        assert!(matches!(
            p.resolve("../secret.txt"),
            Err(PathError::Escapes(_))
        ));
        assert!(matches!(
            p.resolve("docs/../../secret.txt"),
            Err(PathError::Escapes(_))
        ));
        assert!(matches!(
            p.resolve("missing.md"),
            Err(PathError::NotFound(_))
        ));
    }

    #[cfg(unix)]
    #[test]
    fn refuses_symlinks_that_lead_out() {
        let (d, p) = fixture();
        std::os::unix::fs::symlink(d.path().join("secret.txt"), p.root().join("link.txt")).unwrap();
        assert!(matches!(
            p.resolve("link.txt"),
            Err(PathError::SymlinkEscape(_))
        ));
        std::os::unix::fs::symlink(d.path(), p.root().join("out")).unwrap();
        assert!(matches!(
            p.resolve_new("out/new.md"),
            Err(PathError::SymlinkEscape(_))
        ));
        assert!(p.resolve_new("docs/new/deeper.md").is_ok());
    }

    /// Issue #28 item 8: a hard link inside the root to a file outside canonicalizes inside, so
    /// the link count is what refuses it, for reading and for writing.
    #[cfg(unix)]
    #[test]
    fn refuses_hard_links_to_any_file() {
        let (d, p) = fixture();
        std::fs::hard_link(
            d.path().join("secret.txt"),
            p.root().join("docs/linked.txt"),
        )
        .unwrap();
        for result in [
            p.resolve("docs/linked.txt"),
            p.resolve_new("docs/linked.txt"),
        ] {
            assert_eq!(
                result,
                Err(PathError::HardLink {
                    name: "docs/linked.txt".into(),
                    links: 2
                })
            );
        }
        let message = p.resolve("docs/linked.txt").unwrap_err().to_string();
        assert!(message.contains("hard link"), "{message}");
        assert!(message.contains("put a copy"), "{message}");
        // Directories have several links as a matter of course, and a lone file has one.
        std::fs::create_dir_all(p.root().join("docs/sub/deeper")).unwrap();
        assert!(p.resolve("docs/sub").is_ok());
        assert!(p.resolve("docs").is_ok());
        assert!(p.resolve("docs/a.md").is_ok());
        assert!(p.resolve_new("docs/a.md").is_ok());
    }

    #[cfg(unix)]
    #[test]
    fn resolve_new_refuses_dangling_links_and_names_them() {
        let (d, p) = fixture();
        std::os::unix::fs::symlink(d.path().join("new.txt"), p.root().join("out.md")).unwrap();
        std::os::unix::fs::symlink("gone/x", p.root().join("docs/in.md")).unwrap();
        for (name, link) in [
            ("out.md", "out.md"),
            ("docs/in.md", "docs/in.md"),
            ("docs/in.md/below.md", "docs/in.md"),
        ] {
            assert_eq!(
                p.resolve_new(name),
                Err(PathError::DanglingSymlink {
                    name: name.into(),
                    link: link.into()
                })
            );
        }
    }
}
