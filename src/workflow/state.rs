//! A workflow run's state: `.switchboard/workflows/<id>/state.json`, the single source of truth
//! (what each step produced, every attempt with its time and reply), and `execution.log`, an
//! append-only JSON-lines record of every `step` call, refused ones included.
//!
//! The state file is replaced atomically (written beside it, synced, renamed over it), so a
//! process killed mid-write leaves the previous state, never half of one; a resumed run starts
//! from the last step the file says was accepted.

use chrono::Utc;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::project::Project;

/// The schema version of `state.json`; bumped when its shape changes incompatibly.
pub const STATE_VERSION: u32 = 1;

/// Where workflow runs live, relative to the project root.
pub const WORKFLOWS_DIR: &str = ".switchboard/workflows";

/// How a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Steps are being reported.
    Open,
    /// A step asked the user a question; the run goes on when it is answered.
    Waiting,
    /// A step stopped the run (the request is ambiguous, or cannot be planned).
    Stopped,
    /// Stopped by `switchboard workflow abort`.
    Aborted,
    /// The document was rendered; the run is closed.
    Done,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Open => "open",
            RunStatus::Waiting => "waiting",
            RunStatus::Stopped => "stopped",
            RunStatus::Aborted => "aborted",
            RunStatus::Done => "done",
        }
    }
}

/// How one step stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    Pending,
    Accepted,
    /// Its last attempt was rejected (schema or checks).
    Invalid,
    /// It asked a question.
    Clarify,
    /// It stopped the run.
    Stopped,
    /// An earlier step it depends on was reported again (or retried): it must be redone.
    Invalidated,
}

/// One attempt at a step (or a retry): when, what came back, and the result as reported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attempt {
    pub attempt: u32,
    pub at: String,
    /// `PROCEED`, `CLARIFY`, `INVALID`, `STOP`, or `RETRY` for a retry from the command line.
    pub action: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub result: Value,
}

/// One step's record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    pub status: StepStatus,
    pub attempts: u32,
    /// The accepted result (with what the runtime computed merged in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(default)]
    pub history: Vec<Attempt>,
}

impl Default for StepRecord {
    fn default() -> Self {
        StepRecord {
            status: StepStatus::Pending,
            attempts: 0,
            result: None,
            history: Vec::new(),
        }
    }
}

/// The whole state of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct State {
    pub version: u32,
    pub id: String,
    pub workflow: String,
    /// The workflow file, project-relative.
    pub file: String,
    pub agent: String,
    pub session_id: String,
    pub correlation_id: String,
    /// The task the agent was given.
    pub task: String,
    pub status: RunStatus,
    pub created_at: String,
    pub updated_at: String,
    pub steps: BTreeMap<String, StepRecord>,
    /// Project-relative path of the rendered document, once there is one. A retried run keeps
    /// it: its next rendering replaces that file instead of taking a new name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub document: Option<String>,
    /// Why the run stopped or was aborted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Why a state could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("workflow id `{0}` is not valid: use letters, digits, `-`, `_` and `.` only")]
    BadId(String),
    #[error("no workflow run `{0}` (no {WORKFLOWS_DIR}/{0}/state.json)")]
    NotFound(String),
    #[error("{path}: {reason}")]
    Io { path: String, reason: String },
    #[error("{path}: not a workflow state: {reason}")]
    Corrupt { path: String, reason: String },
    #[error(
        "{path}: state version {found} is newer than this switchboard reads ({STATE_VERSION})"
    )]
    Version { path: String, found: u32 },
}

/// The current time as the state records it (RFC 3339 UTC, microseconds).
pub fn now() -> String {
    Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

impl State {
    pub fn new(
        id: &str,
        workflow: &super::Workflow,
        agent: &str,
        session_id: &str,
        correlation_id: &str,
        task: &str,
    ) -> Self {
        let at = now();
        State {
            version: STATE_VERSION,
            id: id.to_string(),
            workflow: workflow.name.clone(),
            file: workflow.file.clone(),
            agent: agent.to_string(),
            session_id: session_id.to_string(),
            correlation_id: correlation_id.to_string(),
            task: task.to_string(),
            status: RunStatus::Open,
            created_at: at.clone(),
            updated_at: at,
            steps: workflow
                .steps
                .iter()
                .map(|s| (s.name.clone(), StepRecord::default()))
                .collect(),
            document: None,
            reason: None,
        }
    }

    /// The record of `step` (created pending when the file predates the step).
    pub fn record(&mut self, step: &str) -> &mut StepRecord {
        self.steps.entry(step.to_string()).or_default()
    }

    pub fn is_accepted(&self, step: &str) -> bool {
        self.steps
            .get(step)
            .is_some_and(|r| r.status == StepStatus::Accepted)
    }

    /// Accepted results by step name.
    pub fn accepted(&self) -> BTreeMap<String, Value> {
        self.steps
            .iter()
            .filter(|(_, r)| r.status == StepStatus::Accepted)
            .filter_map(|(n, r)| r.result.clone().map(|v| (n.clone(), v)))
            .collect()
    }
}

/// The folder of run `id`, refusing ids that could name anything else.
pub fn run_dir(project: &Project, id: &str) -> Result<PathBuf, StateError> {
    let ok = !id.is_empty()
        && id != "."
        && id != ".."
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !ok {
        return Err(StateError::BadId(id.to_string()));
    }
    Ok(project.root().join(WORKFLOWS_DIR).join(id))
}

fn io(path: &Path, e: impl std::fmt::Display) -> StateError {
    StateError::Io {
        path: path.display().to_string(),
        reason: e.to_string(),
    }
}

/// Reads run `id`'s state.
pub fn load(project: &Project, id: &str) -> Result<State, StateError> {
    let path = run_dir(project, id)?.join("state.json");
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(StateError::NotFound(id.to_string()))
        }
        Err(e) => return Err(io(&path, e)),
    };
    let version = serde_json::from_str::<Value>(&text)
        .ok()
        .and_then(|v| v["version"].as_u64())
        .unwrap_or(0) as u32;
    if version > STATE_VERSION {
        return Err(StateError::Version {
            path: path.display().to_string(),
            found: version,
        });
    }
    serde_json::from_str(&text).map_err(|e| StateError::Corrupt {
        path: path.display().to_string(),
        reason: e.to_string(),
    })
}

/// Reads run `id`'s state, or `None` when there is none yet.
pub fn load_existing(project: &Project, id: &str) -> Result<Option<State>, StateError> {
    match load(project, id) {
        Ok(s) => Ok(Some(s)),
        Err(StateError::NotFound(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Writes `state` atomically: a temporary file beside it, synced, then renamed over it.
pub fn save(project: &Project, state: &mut State) -> Result<(), StateError> {
    let dir = run_dir(project, &state.id)?;
    std::fs::create_dir_all(&dir).map_err(|e| io(&dir, e))?;
    state.updated_at = now();
    let path = dir.join("state.json");
    let tmp = dir.join(format!("state.json.tmp-{}", std::process::id()));
    let text = serde_json::to_string_pretty(state).map_err(|e| io(&path, e))?;
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.write_all(b"\n")?;
        f.sync_all()?;
        std::fs::rename(&tmp, &path)
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io(&path, e)
    })
}

/// One line of `execution.log`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogLine {
    pub at: String,
    pub step: String,
    pub action: String,
    /// The attempt number for a stored attempt; 0 for a call that was refused unstored.
    pub attempt: u32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Appends one line to run `id`'s execution log.
pub fn append_log(project: &Project, id: &str, line: &LogLine) -> Result<(), StateError> {
    let dir = run_dir(project, id)?;
    std::fs::create_dir_all(&dir).map_err(|e| io(&dir, e))?;
    let path = dir.join("execution.log");
    let mut text = serde_json::to_string(line).map_err(|e| io(&path, e))?;
    text.push('\n');
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(|e| io(&path, e))?;
    f.write_all(text.as_bytes()).map_err(|e| io(&path, e))
}

/// Run `id`'s execution log, line by line (a torn last line is skipped).
pub fn read_log(project: &Project, id: &str) -> Result<Vec<LogLine>, StateError> {
    let path = run_dir(project, id)?.join("execution.log");
    match std::fs::read_to_string(&path) {
        Ok(t) => Ok(t
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(io(&path, e)),
    }
}

/// Every run's state, oldest first (ids of unreadable runs are skipped).
pub fn list(project: &Project) -> Vec<State> {
    let dir = project.root().join(WORKFLOWS_DIR);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out: Vec<State> = entries
        .filter_map(Result::ok)
        .filter_map(|e| load(project, &e.file_name().to_string_lossy()).ok())
        .collect();
    out.sort_by(|a, b| (&a.created_at, &a.id).cmp(&(&b.created_at, &b.id)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wf() -> super::super::Workflow {
        super::super::spec::parse(
            "workflow/t.yaml",
            "steps:\n  - name: a\noutput: {path: o.md, template: x}\n",
        )
        .unwrap()
    }

    #[test]
    fn state_round_trips_and_the_write_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = Project::open(dir.path()).unwrap();
        let mut s = State::new("run-1", &wf(), "planner", "s", "c", "task");
        s.record("a").attempts = 2;
        save(&p, &mut s).unwrap();
        let back = load(&p, "run-1").unwrap();
        assert_eq!(back, s);
        let names: Vec<String> = std::fs::read_dir(run_dir(&p, "run-1").unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .collect();
        assert_eq!(names, vec!["state.json"]);
        assert!(matches!(load(&p, "nope"), Err(StateError::NotFound(_))));
        assert!(matches!(run_dir(&p, "../x"), Err(StateError::BadId(_))));
    }

    #[test]
    fn a_newer_version_is_refused_not_misread() {
        let dir = tempfile::tempdir().unwrap();
        let p = Project::open(dir.path()).unwrap();
        let d = run_dir(&p, "r").unwrap();
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("state.json"), r#"{"version": 99}"#).unwrap();
        assert!(matches!(
            load(&p, "r"),
            Err(StateError::Version { found: 99, .. })
        ));
    }
}
