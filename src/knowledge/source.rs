//! A file about to be analysed: resolved inside the root (symlinks included), refused when it is
//! not a text file or too big, read once, and described (checksum, lines, language, git).

use std::path::{Path, PathBuf};

use super::provenance::{checksum, GitInfo, GitProbe};
use super::{KnowledgeError, Limits};
use crate::project::Project;

/// One file version, read and described.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// Relative to the project root, `/`-separated.
    pub path: String,
    pub abs: PathBuf,
    pub text: String,
    pub checksum: String,
    pub size: u64,
    pub lines: u64,
    /// A guess from the file name (`rust`, `markdown`, …), empty when unknown.
    pub language: String,
    /// `None` outside a git checkout.
    pub git: Option<GitInfo>,
}

/// What [`prepare`] found.
pub type Prepared = SourceFile;

/// Resolves `name` through the project (so `..`, absolute paths, symlinks that lead out and the
/// hidden folders are refused), then reads it if it is a regular text file within the limit.
pub fn prepare(
    project: &Project,
    name: &str,
    limits: &Limits,
    git: Option<&GitProbe>,
) -> Result<SourceFile, KnowledgeError> {
    let refused = |reason: String| KnowledgeError::Refused {
        path: name.to_string(),
        reason,
    };
    let abs = project.resolve(name).map_err(|e| refused(e.to_string()))?;
    project
        .refuse_hidden(name, &abs)
        .map_err(|e| refused(e.to_string()))?;
    let path = project.relative(&abs);
    let meta = std::fs::metadata(&abs).map_err(|error| KnowledgeError::Read {
        path: path.clone(),
        error,
    })?;
    if !meta.is_file() {
        return Err(KnowledgeError::NotAFile { path });
    }
    if meta.len() > limits.max_file_bytes {
        return Err(KnowledgeError::TooLarge {
            path,
            size: meta.len(),
            max: limits.max_file_bytes,
        });
    }
    let bytes = std::fs::read(&abs).map_err(|error| KnowledgeError::Read {
        path: path.clone(),
        error,
    })?;
    if memchr::memchr(0, &bytes).is_some() {
        return Err(KnowledgeError::Binary { path });
    }
    let sum = checksum(&bytes);
    let git = git.map(|g| g.info(&abs, &bytes));
    let size = bytes.len() as u64;
    let text =
        String::from_utf8(bytes).map_err(|_| KnowledgeError::Binary { path: path.clone() })?;
    let lines = text.lines().count() as u64;
    Ok(SourceFile {
        language: language(&path).to_string(),
        path,
        abs,
        text,
        checksum: sum,
        size,
        lines,
        git,
    })
}

/// The checksum of the file at `name` now, or `None` when it cannot be read (gone, refused).
/// This is the unchanged-file check: one read and one hash.
pub fn current_checksum(project: &Project, name: &str) -> Option<String> {
    let abs = project.resolve(name).ok()?;
    let bytes = std::fs::read(abs).ok()?;
    Some(checksum(&bytes))
}

/// A language name from the file's extension.
pub fn language(path: &str) -> &'static str {
    let ext = Path::new(path)
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    match ext.as_str() {
        "rs" => "rust",
        "md" | "markdown" => "markdown",
        "py" => "python",
        "js" | "mjs" | "cjs" => "javascript",
        "ts" | "tsx" => "typescript",
        "go" => "go",
        "java" => "java",
        "c" | "h" => "c",
        "cc" | "cpp" | "hpp" | "cxx" => "c++",
        "toml" => "toml",
        "yaml" | "yml" => "yaml",
        "json" => "json",
        "sh" | "bash" => "shell",
        "html" | "htm" => "html",
        "css" => "css",
        "sql" => "sql",
        "txt" => "text",
        _ => "",
    }
}
