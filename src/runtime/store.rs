//! Where a session's files live (`.switchboard/sessions/<id>/`) and reading its event log back,
//! for `trace`, `sessions` and `resume`.
//!
//! Kept apart from the session itself so the readers of old logs do not depend on the code that
//! runs new ones.

use std::path::{Path, PathBuf};

use super::events::{read_log, Event};
use crate::project::{PathError, Project};

/// Where sessions live, relative to the project root.
pub const SESSIONS_DIR: &str = ".switchboard/sessions";

/// Why a session's log could not be read.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error(
        "no session `{session_id}`: {reason}; `switchboard sessions` lists this project's sessions"
    )]
    NoSession {
        session_id: String,
        reason: PathError,
    },
    #[error("cannot read {}: {error}", path.display())]
    Unreadable {
        path: PathBuf,
        error: std::io::Error,
    },
}

/// Where session `session_id`'s event log is, resolved through the project like any other path
/// (so an id such as `../x` cannot name a file outside the sessions folder's project).
pub fn log_path(project: &Project, session_id: &str) -> Result<PathBuf, LogError> {
    let rel = format!("{SESSIONS_DIR}/{session_id}/events.jsonl");
    project.resolve(&rel).map_err(|reason| LogError::NoSession {
        session_id: session_id.to_string(),
        reason,
    })
}

/// [`read_log`], failing with an error that names the file.
pub fn read(path: &Path) -> Result<Vec<Event>, LogError> {
    read_log(path).map_err(|error| LogError::Unreadable {
        path: path.to_path_buf(),
        error,
    })
}

/// The 1-based numbers of lines of the log at `path` that are not events, except a torn last
/// line (no newline: the process died mid-write, which `resume` repairs). Anything else means
/// the log was damaged or edited, and resuming from it would trust what cannot be read.
pub fn corrupt_lines(path: &Path) -> Result<Vec<usize>, LogError> {
    let text = std::fs::read_to_string(path).map_err(|error| LogError::Unreadable {
        path: path.to_path_buf(),
        error,
    })?;
    let torn_tail = !text.is_empty() && !text.ends_with('\n');
    let count = text.lines().count();
    Ok(text
        .lines()
        .enumerate()
        .filter(|(i, l)| {
            let torn = torn_tail && i + 1 == count;
            !torn && !l.trim().is_empty()
        })
        .filter(|(_, l)| serde_json::from_str::<Event>(l).is_err())
        .map(|(i, _)| i + 1)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_session_says_which_and_where_to_look() {
        let dir = tempfile::tempdir().unwrap();
        let project = Project::open(dir.path()).unwrap();
        let err = log_path(&project, "nope").unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("no session `nope`: "), "{text}");
        assert!(text.contains("switchboard sessions"), "{text}");
        assert!(matches!(err, LogError::NoSession { .. }));
    }

    #[test]
    fn only_damage_inside_the_log_counts_as_corrupt() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let good = r#"{"timestamp":"t","session_id":"s","correlation_id":"c","hop_id":null,"parent_hop_id":null,"agent":null,"type":"log.repaired","dropped_bytes":1}"#;
        std::fs::write(&path, format!("{good}\n{good}\n{{\"torn")).unwrap();
        assert_eq!(corrupt_lines(&path).unwrap(), Vec::<usize>::new());
        std::fs::write(&path, format!("{good}\nnot json\n{good}\n")).unwrap();
        assert_eq!(corrupt_lines(&path).unwrap(), [2]);
    }

    #[test]
    fn an_unreadable_log_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("events.jsonl");
        let err = read(&missing).unwrap_err();
        assert!(
            err.to_string()
                .starts_with(&format!("cannot read {}: ", missing.display())),
            "{err}"
        );
    }
}
