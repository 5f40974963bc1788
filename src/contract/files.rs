//! The cited files of a check run, each resolved and read at most once.
//!
//! A run that checks ten thousand answers citing the same twenty documents reads twenty files.
//! Names go through [`Project::resolve`] (the one confinement rule), and a name that resolves
//! outside the root is never opened.

use crate::markdown::LineIndex;
use crate::project::{PathError, Project};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};

/// Files larger than this are not read; citing them is reported as unreadable.
pub const MAX_CITED_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// A cited file's text and its line index.
#[derive(Debug)]
pub struct SourceFile {
    /// The path relative to the project root, for messages.
    pub name: String,
    text: String,
    index: LineIndex,
}

impl SourceFile {
    fn new(name: String, bytes: Vec<u8>) -> Self {
        let text = match String::from_utf8(bytes) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        };
        let index = LineIndex::new(&text);
        SourceFile { name, text, index }
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn line_count(&self) -> usize {
        self.index.line_count()
    }

    /// 1-based line `n` without its line ending, if the file has it.
    pub fn line(&self, n: usize) -> Option<&str> {
        if n == 0 || n > self.line_count() {
            return None;
        }
        self.index.line_text(&self.text, n)
    }

    /// The line of the `---` that closes a YAML frontmatter opened on line 1, if the file has
    /// one: lines up to it are the document's metadata, never its content.
    pub fn frontmatter_end(&self) -> Option<usize> {
        frontmatter_close(|n| self.line(n), self.line_count())
    }
}

/// [`SourceFile::frontmatter_end`] over any `count` lines that `line` gives by 1-based number:
/// the local sampler holds an item to a body line by the same rule as the checker, on the
/// lines the conversation showed (`model::local::fresh`).
pub(crate) fn frontmatter_close<'a>(
    line: impl Fn(usize) -> Option<&'a str>,
    count: usize,
) -> Option<usize> {
    if line(1).map(str::trim_end) != Some("---") {
        return None;
    }
    (2..=count.min(FRONTMATTER_MAX_LINES)).find(|&n| line(n).map(str::trim_end) == Some("---"))
}

/// Lines looked through for the end of a frontmatter block.
const FRONTMATTER_MAX_LINES: usize = 200;

/// Why a cited name has no readable file behind it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CitedFileError {
    /// The name resolves outside the root (absolute, `..`, or a symlink leading out).
    Outside(PathError),
    /// Nothing is there, or it is not a regular file.
    Missing(String),
    /// It is there but cannot be read.
    Unreadable(String),
}

impl std::fmt::Display for CitedFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CitedFileError::Outside(e) => write!(f, "{e}"),
            CitedFileError::Missing(m) | CitedFileError::Unreadable(m) => f.write_str(m),
        }
    }
}

type Resolved = Result<PathBuf, CitedFileError>;
type Loaded = Result<Arc<SourceFile>, CitedFileError>;

/// Cited files shared by every check of a run. Thread-safe; all methods take `&self`.
#[derive(Debug, Default)]
pub struct FileCache {
    /// Project root → cited name → canonical path (or why there is none).
    names: RwLock<HashMap<PathBuf, HashMap<String, Resolved>>>,
    /// Canonical path → contents; the `OnceLock` makes concurrent first reads wait for one read.
    files: Mutex<HashMap<PathBuf, Arc<OnceLock<Loaded>>>>,
    reads: std::sync::atomic::AtomicUsize,
}

impl FileCache {
    pub fn new() -> Self {
        Self::default()
    }

    /// How many files were read from disk so far.
    pub fn reads(&self) -> usize {
        self.reads.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The file a cited `name` stands for, resolved inside `project` and read once.
    pub fn get(&self, project: &Project, name: &str) -> Result<Arc<SourceFile>, CitedFileError> {
        let path = self.resolve(project, name)?;
        let cell = {
            let mut files = self.files.lock().unwrap_or_else(PoisonError::into_inner);
            match files.get(&path) {
                Some(cell) => Arc::clone(cell),
                None => {
                    let cell = Arc::new(OnceLock::new());
                    files.insert(path.clone(), Arc::clone(&cell));
                    cell
                }
            }
        };
        cell.get_or_init(|| self.load(project, &path)).clone()
    }

    /// Resolves `name` to a canonical path inside the root, caching the answer.
    pub fn resolve(&self, project: &Project, name: &str) -> Resolved {
        let root = project.root();
        {
            let names = self.names.read().unwrap_or_else(PoisonError::into_inner);
            if let Some(hit) = names.get(root).and_then(|m| m.get(name)) {
                return hit.clone();
            }
        }
        let resolved = match project.resolve_visible(name) {
            Ok(path) => Ok(path),
            Err(PathError::NotFound(n)) => Err(CitedFileError::Missing(format!(
                "`{n}` does not exist under the project root"
            ))),
            Err(PathError::Io { path, reason }) => Err(CitedFileError::Unreadable(format!(
                "cannot resolve `{path}`: {reason}"
            ))),
            Err(e) => Err(CitedFileError::Outside(e)),
        };
        let mut names = self.names.write().unwrap_or_else(PoisonError::into_inner);
        names
            .entry(root.to_path_buf())
            .or_default()
            .insert(name.to_string(), resolved.clone());
        resolved
    }

    fn load(&self, project: &Project, path: &Path) -> Loaded {
        let name = project.relative(path);
        let meta = std::fs::metadata(path)
            .map_err(|e| CitedFileError::Unreadable(format!("cannot read `{name}`: {e}")))?;
        if !meta.is_file() {
            return Err(CitedFileError::Missing(format!(
                "`{name}` is not a regular file"
            )));
        }
        if meta.len() > MAX_CITED_FILE_BYTES {
            return Err(CitedFileError::Unreadable(format!(
                "`{name}` is larger than {} MiB; cite a smaller file",
                MAX_CITED_FILE_BYTES / (1024 * 1024)
            )));
        }
        self.reads
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let bytes = std::fs::read(path)
            .map_err(|e| CitedFileError::Unreadable(format!("cannot read `{name}`: {e}")))?;
        Ok(Arc::new(SourceFile::new(name, bytes)))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_frontmatter_ends_at_its_closing_rule_and_only_one_opened_on_line_1_counts() {
        let doc = super::SourceFile::new("d.md".into(), b"---\ndate: x\n---\n\n# T\n".to_vec());
        assert_eq!(doc.frontmatter_end(), Some(3));
        let rule = super::SourceFile::new("r.md".into(), b"# T\n---\nx\n---\n".to_vec());
        assert_eq!(rule.frontmatter_end(), None);
        let open = super::SourceFile::new("o.md".into(), b"---\ndate: x\n".to_vec());
        assert_eq!(open.frontmatter_end(), None);
    }

    use super::*;

    #[test]
    fn reads_each_file_once_across_spellings() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("d")).unwrap();
        std::fs::write(dir.path().join("d/a.md"), "one\r\ntwo\n").unwrap();
        let project = Project::open(dir.path()).unwrap();
        let cache = FileCache::new();
        let a = cache.get(&project, "d/a.md").unwrap();
        let b = cache.get(&project, "./d/a.md").unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(cache.reads(), 1);
        assert_eq!(a.line_count(), 2);
        assert_eq!(a.line(1), Some("one"));
        assert_eq!(a.line(2), Some("two"));
        assert_eq!(a.line(3), None);
        assert_eq!(a.line(0), None);
        assert_eq!(a.name, "d/a.md");
        assert!(matches!(
            cache.get(&project, "d"),
            Err(CitedFileError::Missing(_))
        ));
        assert!(matches!(
            cache.get(&project, "../x"),
            Err(CitedFileError::Outside(_))
        ));
        assert!(matches!(
            cache.get(&project, "nope.md"),
            Err(CitedFileError::Missing(_))
        ));
    }

    /// Citations follow the tools' policy: `.git/` (credentials) and `.switchboard/` are never
    /// read, so an excerpt mismatch cannot quote them back to the model.
    #[test]
    fn hidden_folders_are_not_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".git")).unwrap();
        std::fs::create_dir_all(dir.path().join(".switchboard")).unwrap();
        std::fs::write(dir.path().join(".git/config"), "url = https://u:T@h\n").unwrap();
        std::fs::write(dir.path().join(".switchboard/x"), "state\n").unwrap();
        let project = Project::open(dir.path()).unwrap();
        let cache = FileCache::new();
        for name in [".git/config", "./.git/config", ".switchboard/x"] {
            assert!(
                matches!(
                    cache.get(&project, name),
                    Err(CitedFileError::Outside(PathError::Hidden { .. }))
                ),
                "{name}"
            );
        }
        assert_eq!(cache.reads(), 0);
    }

    #[test]
    fn huge_files_are_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let big = std::fs::File::create(dir.path().join("big.log")).unwrap();
        big.set_len(MAX_CITED_FILE_BYTES + 1).unwrap(); // sparse: no disk used
        let project = Project::open(dir.path()).unwrap();
        let cache = FileCache::new();
        assert!(matches!(
            cache.get(&project, "big.log"),
            Err(CitedFileError::Unreadable(_))
        ));
        assert_eq!(cache.reads(), 0);
    }
}
