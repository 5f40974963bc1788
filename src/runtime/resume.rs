//! Resuming a session whose process died, from its event log.
//!
//! The session runs again from its primary hop with the same ids, but a hop whose `hop.completed`
//! is in the log does not run: its recorded answer is handed to its caller as if it had just
//! finished (logged as `hop.reused`). A hop is recognised by its parent hop, agent, prompt and
//! occurrence (the Nth identical call of that parent); hops that had started but not completed run
//! again under their old hop id and message id, with `attempt` one higher. Because an unfinished
//! hop keeps its id, its children recognise their parent in the log too.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::checkpoint::Checkpoint;
use super::events::EventKind;
use super::handoff::HopResult;
use super::status::{HopStatus, SessionStatus};
use super::store::{self, log_path, LogError};
use crate::project::Project;

/// Why a session cannot be resumed.
#[derive(Debug, thiserror::Error)]
pub enum ResumeError {
    #[error(transparent)]
    Log(#[from] LogError),
    #[error(
        "{} has no session.started event, so there is no prompt to run again; start a new \
         session with `switchboard run`",
        path.display()
    )]
    NoStart { path: PathBuf },
    #[error(
        "session {session_id} already ended ({status}); nothing to resume (`switchboard trace \
         {session_id}` shows how it went)"
    )]
    AlreadyEnded {
        session_id: String,
        status: SessionStatus,
    },
    #[error(
        "session {session_id} is waiting for an answer to: {question}\nanswer it with \
         `switchboard resume {session_id} --answer \"…\"`"
    )]
    NeedsAnswer {
        session_id: String,
        question: String,
    },
    #[error("session {session_id} asked no question, so there is nothing to --answer")]
    NoQuestion { session_id: String },
    #[error("--answer is empty: write the answer to the session's question")]
    EmptyAnswer,
    /// Tier 3: the log cannot be trusted, so nothing is resumed from it.
    #[error(
        "BLOCKED: {} is corrupt: line(s) {} are not events, so which hops finished cannot be \
         known. A person must repair or remove those lines (or start a new session with \
         `switchboard run`); nothing was run",
        path.display(),
        lines.iter().map(|l| l.to_string()).collect::<Vec<_>>().join(", ")
    )]
    CorruptLog { path: PathBuf, lines: Vec<usize> },
}

impl ResumeError {
    /// Whether this refusal is tier 3 (BLOCKED: a person must act) rather than a usage error.
    pub fn is_blocked(&self) -> bool {
        matches!(self, ResumeError::CorruptLog { .. })
    }
}

/// What the log says about one hop.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub hop_id: String,
    pub message_id: String,
    pub attempt: u32,
    /// Set when the hop completed (a `hop.failed` or PARTIAL hop runs again).
    pub completed: Option<HopResult>,
    /// The checkpoint of the hop's last PARTIAL attempt: the next attempt continues from it.
    pub checkpoint: Option<Checkpoint>,
}

/// Everything needed to continue a session.
#[derive(Debug, Clone)]
pub struct ResumePlan {
    pub session_id: String,
    pub correlation_id: String,
    pub agent: String,
    pub prompt: String,
    pub model: Option<String>,
    pub max_parallel: usize,
    pub max_depth: u32,
    pub root_hop_id: String,
    /// (parent hop id or "", agent, prompt, occurrence) → the hop.
    pub hops: HashMap<(String, String, String, u32), Recorded>,
    /// Hops that will be reused.
    pub completed_hops: usize,
    /// The clarifying question the session ended on (status `needs_input`), if any.
    pub question: Option<String>,
}

/// Reads `SESSION`'s log into a plan; refuses a session that already completed.
pub fn plan(project: &Project, session_id: &str) -> Result<ResumePlan, ResumeError> {
    plan_from_log(&log_path(project, session_id)?)
}

/// [`plan`] for the log at `path`.
pub fn plan_from_log(path: &Path) -> Result<ResumePlan, ResumeError> {
    let lines = store::corrupt_lines(path)?;
    if !lines.is_empty() {
        return Err(ResumeError::CorruptLog {
            path: path.to_path_buf(),
            lines,
        });
    }
    let events = store::read(path)?;
    let (first, prompt, model, max_parallel, max_depth) = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::SessionStarted {
                prompt,
                model,
                max_parallel,
                max_depth,
                ..
            } => Some((e, prompt, model, max_parallel, max_depth)),
            _ => None,
        })
        .ok_or_else(|| ResumeError::NoStart {
            path: path.to_path_buf(),
        })?;
    let mut question = None;
    if let Some((last, error)) = events.iter().rev().find_map(|e| match &e.kind {
        EventKind::SessionCompleted { status, error, .. } => Some((*status, error)),
        _ => None,
    }) {
        if last == SessionStatus::NeedsInput {
            question = Some(error.clone().unwrap_or_default());
        } else if !matches!(last, SessionStatus::Interrupted | SessionStatus::Partial) {
            return Err(ResumeError::AlreadyEnded {
                session_id: first.session_id.clone(),
                status: last,
            });
        }
    }
    let mut hops: HashMap<(String, String, String, u32), Recorded> = HashMap::new();
    // hop id → key, to attach completions to their start.
    let mut keys: HashMap<String, (String, String, String, u32)> = HashMap::new();
    for e in &events {
        let (Some(hop_id), Some(agent)) = (&e.hop_id, &e.agent) else {
            continue;
        };
        match &e.kind {
            EventKind::HopStarted {
                attempt,
                message_id,
                prompt,
                occurrence,
                ..
            } => {
                let key = (
                    e.parent_hop_id.clone().unwrap_or_default(),
                    agent.clone(),
                    prompt.clone(),
                    *occurrence,
                );
                keys.insert(hop_id.clone(), key.clone());
                let entry = hops.entry(key).or_insert_with(|| Recorded {
                    hop_id: hop_id.clone(),
                    message_id: message_id.clone(),
                    attempt: 0,
                    completed: None,
                    checkpoint: None,
                });
                entry.attempt = entry.attempt.max(*attempt);
            }
            EventKind::HopCheckpoint { checkpoint, .. } => {
                if let Some(r) = keys.get(hop_id).and_then(|k| hops.get_mut(k)) {
                    r.checkpoint = Some(checkpoint.clone());
                }
            }
            // A PARTIAL hop is not reused: it runs again from its checkpoint, fresh budget.
            EventKind::HopCompleted {
                status: HopStatus::Partial,
                ..
            } => {}
            EventKind::HopCompleted {
                status,
                message_id,
                answer,
                usage,
                violations,
                written,
                ..
            } => {
                if let Some(r) = keys.get(hop_id).and_then(|k| hops.get_mut(k)) {
                    r.completed = Some(HopResult {
                        hop_id: hop_id.clone(),
                        agent: agent.clone(),
                        message_id: message_id.clone(),
                        status: *status,
                        answer: answer.clone(),
                        error: None,
                        usage: *usage,
                        violations: violations.clone(),
                        written: written.clone(),
                        reused: false,
                        checkpoint: None,
                    });
                }
            }
            _ => {}
        }
    }
    let completed_hops = hops.values().filter(|r| r.completed.is_some()).count();
    Ok(ResumePlan {
        session_id: first.session_id.clone(),
        correlation_id: first.correlation_id.clone(),
        agent: first.agent.clone().unwrap_or_default(),
        prompt: prompt.clone(),
        model: model.clone(),
        max_parallel: *max_parallel,
        max_depth: *max_depth,
        root_hop_id: first.hop_id.clone().unwrap_or_default(),
        hops,
        completed_hops,
        question,
    })
}

impl ResumePlan {
    /// Continues a session that ended `needs_input` with the user's answer: the primary runs
    /// again on its task followed by its question and the answer, and may not ask again.
    pub fn answer(mut self, answer: &str) -> Result<Self, ResumeError> {
        let Some(question) = self.question.take() else {
            return Err(ResumeError::NoQuestion {
                session_id: self.session_id,
            });
        };
        if answer.trim().is_empty() {
            return Err(ResumeError::EmptyAnswer);
        }
        self.prompt = answered_prompt(&self.prompt, &question, answer);
        Ok(self)
    }
}

/// The task a primary gets after its question was answered. [`ANSWER_MARK`] starts the part
/// after the original task (the offline analyst reads the task up to it).
pub fn answered_prompt(task: &str, question: &str, answer: &str) -> String {
    format!(
        "{task}{ANSWER_MARK}{}\nThe user answered: {}\n\nYou may not ask another question.",
        question.trim(),
        answer.trim()
    )
}

pub use crate::model::ANSWER_MARK;
