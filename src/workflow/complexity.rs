//! The complexity of a change, computed from what it touches and the repository around it,
//! never guessed by the model: how many files, how many lines they hold, how many folders they
//! span, and how large the repository is.

use serde::Serialize;

use crate::project::Project;

/// Files counted at most when sizing the repository (a bound on time, not a limit of meaning).
const REPO_WALK_LIMIT: usize = 20_000;

/// The computed score and the facts it comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Complexity {
    /// `low`, `medium` or `high`.
    pub level: &'static str,
    pub score: u64,
    pub files: usize,
    pub lines: usize,
    pub folders: usize,
    pub repo_files: usize,
}

/// Why the change could not be measured (the step check reports it to the model).
#[derive(Debug, thiserror::Error)]
pub enum ComplexityError {
    #[error("the complexity needs the scope's files, and the scope names none")]
    NoFiles,
    #[error(transparent)]
    Scope(#[from] super::ScopeFileError),
    #[error("`{file}`: {source}")]
    Read {
        file: String,
        #[source]
        source: std::io::Error,
    },
}

/// Measures the change to `files` (project-relative; each must exist inside the root).
///
/// score = 2 per file + 1 per 250 lines they hold + 1 per folder beyond the first
///         + 1 when the repository has over 200 files, + 1 more over 2,000.
/// Levels: under 6 low, under 12 medium, else high.
pub fn measure(project: &Project, files: &[String]) -> Result<Complexity, ComplexityError> {
    if files.is_empty() {
        return Err(ComplexityError::NoFiles);
    }
    let mut lines = 0usize;
    let mut folders: Vec<String> = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for f in files {
        if seen.contains(&f.as_str()) {
            continue;
        }
        seen.push(f);
        let path = super::file_inside(project, f)?;
        let text = std::fs::read(&path).map_err(|source| ComplexityError::Read {
            file: f.clone(),
            source,
        })?;
        lines += text.iter().filter(|b| **b == b'\n').count();
        let folder = f.rsplit_once('/').map_or(".", |(d, _)| d).to_string();
        if !folders.contains(&folder) {
            folders.push(folder);
        }
    }
    let repo_files = ignore::WalkBuilder::new(project.root())
        .build()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .take(REPO_WALK_LIMIT)
        .count();
    let score = 2 * seen.len() as u64
        + (lines / 250) as u64
        + folders.len().saturating_sub(1) as u64
        + u64::from(repo_files > 200)
        + u64::from(repo_files > 2_000);
    let level = match score {
        0..=5 => "low",
        6..=11 => "medium",
        _ => "high",
    };
    Ok(Complexity {
        level,
        score,
        files: seen.len(),
        lines,
        folders: folders.len(),
        repo_files,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn score_grows_with_files_lines_and_folders() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a")).unwrap();
        std::fs::write(dir.path().join("a/x.rs"), "x\n".repeat(600)).unwrap();
        std::fs::write(dir.path().join("y.rs"), "y\n").unwrap();
        let p = Project::open(dir.path()).unwrap();
        let one = measure(&p, &["y.rs".into()]).unwrap();
        assert_eq!((one.score, one.level), (2, "low"));
        let two = measure(&p, &["y.rs".into(), "a/x.rs".into()]).unwrap();
        // 2 files (4) + 601 lines (2) + a second folder (1).
        assert_eq!((two.score, two.level, two.lines), (7, "medium", 601));
        assert!(measure(&p, &[]).is_err());
        assert!(measure(&p, &["../etc/passwd".into()]).is_err());
    }
}
