//! How a hop ends: the loop's [`Ending`], logged as `hop.completed` or `hop.failed` exactly once
//! (a hop an ancestor's timeout or Ctrl-C already ended is not ended twice), its transcript
//! written, and the [`HopResult`] its caller receives.

use chrono::{DateTime, Utc};
use std::time::Duration;

use super::checkpoint::{self, Checkpoint};
use super::events::{timestamp, EventKind};
use super::handoff::HopResult;
use super::shared::{HopCtx, Shared};
use super::status::HopStatus;
use crate::model::{Message, Usage};
use crate::problem::Problem;

/// How the loop ended.
pub(crate) struct Ending {
    pub status: HopStatus,
    pub answer: String,
    pub error: Option<String>,
    /// `None` when the agent declares no contract.
    pub conformant: Option<bool>,
    pub violations: Vec<Problem>,
    /// A PARTIAL hop's checkpoint (tier 2), stored and logged when the hop ends.
    pub checkpoint: Option<Checkpoint>,
    /// A BLOCKED hop's action: what a person must do (tier 3); `error` holds the reason.
    pub action: Option<String>,
}

impl Ending {
    pub fn failed(error: String) -> Self {
        Ending {
            status: HopStatus::Failed,
            answer: String::new(),
            error: Some(error),
            conformant: None,
            violations: Vec::new(),
            checkpoint: None,
            action: None,
        }
    }

    /// A primary's question to the user: the session waits for `resume --answer`.
    pub fn needs_input(question: String) -> Self {
        Ending {
            status: HopStatus::NeedsInput,
            answer: question.clone(),
            ..Ending::failed(question)
        }
    }

    /// Fail closed: `reason` says what happened, `action` what a person must do.
    pub fn blocked(reason: String, action: String) -> Self {
        Ending {
            status: HopStatus::Blocked,
            action: Some(action),
            ..Ending::failed(reason)
        }
    }
}

/// What a person must do about each BLOCKED cause, in one place so the docs' table and the
/// messages agree.
pub(crate) mod action {
    /// An agent that a session or a `task` call names is gone.
    pub fn missing_agent(name: &str) -> String {
        format!(
            "restore agent/{name}.md (or fix the name that calls it); `switchboard agents` lists \
             the agents this project defines"
        )
    }

    /// No model can be chosen or built for the hop.
    pub const FIX_MODEL: &str = "fix the agent's `model:` or switchboard.toml ([aliases], \
                                 [providers.*]), or pass --model";

    /// A tool was refused a path outside the root or in a hidden folder.
    pub const REFUSED_PATH: &str = "check why the agent reached outside the project (its \
                                    prompt, its task, a file that points it there); fix that, \
                                    then run it again";

    /// An agent with `tool_choice: required` kept answering without a call.
    pub fn call_tools(agent: &str) -> String {
        format!(
            "check that the model of `{agent}` can call tools (a chat template with tools; \
             `tool_choice` on its server), or remove `tool_choice: required` from the agent"
        )
    }

    /// A contract still violated after the repairs, with `on_violation: fail`.
    pub fn fit_contract(agent: &str) -> String {
        format!(
            "make the answer of `{agent}` fit its contract: sharpen its prompt, fix the contract, \
             or declare `on_violation: mark` or a fallback"
        )
    }
}

/// What separates a BLOCKED hop's reason from its action in [`blocked_text`].
pub(crate) const ACTION_PREFIX: &str = "\nwhat a person must do: ";

/// The text a BLOCKED hop's caller (or the user) reads: the reason, then what to do.
pub(crate) fn blocked_text(reason: &str, action: &str) -> String {
    format!("{reason}{ACTION_PREFIX}{action}")
}

/// What the loop leaves behind for the log and the transcript.
pub(crate) struct Finished {
    pub agent: String,
    pub message_id: String,
    pub started: DateTime<Utc>,
    pub system: String,
    pub messages: Vec<Message>,
    pub usage: Usage,
    pub steps: u32,
    pub written: Vec<String>,
}

/// Fails a hop before its loop started (unknown agent, no model, no message id): logs
/// `hop.failed` and returns the caller's result. With an `action` the hop is BLOCKED (a missing
/// agent or a model that cannot be chosen needs a person), logged as `hop.blocked` first.
pub(crate) fn never_started(
    ctx: &HopCtx,
    message_id: String,
    error: String,
    action: Option<String>,
) -> HopResult {
    let now = timestamp(Utc::now());
    let status = match &action {
        Some(action) => {
            ctx.emit(EventKind::HopBlocked {
                reason: error.clone(),
                action: action.clone(),
            });
            HopStatus::Blocked
        }
        None => HopStatus::Failed,
    };
    let error = match &action {
        Some(action) => blocked_text(&error, action),
        None => error,
    };
    ctx.emit(EventKind::HopFailed {
        error: error.clone(),
        usage: Usage::default(),
        started_at: now.clone(),
        ended_at: now,
        duration_us: 0,
        violations: Vec::new(),
    });
    HopResult {
        hop_id: ctx.hop_id.clone(),
        agent: ctx.agent.clone(),
        message_id,
        status,
        answer: String::new(),
        error: Some(error),
        usage: Usage::default(),
        violations: Vec::new(),
        written: Vec::new(),
        reused: false,
        checkpoint: None,
    }
}

/// Logs `hop.failed` for every in-flight descendant of `hop_id`, whose loop `agent`'s timeout
/// dropped: aborted, they cannot log their own end.
pub(crate) fn cancel_descendants(shared: &Shared, hop_id: &str, agent: &str) {
    let now = timestamp(Utc::now());
    for (hop, parent, child_agent) in shared.take_descendants(hop_id) {
        shared.emit(
            Some(&hop),
            parent.as_deref(),
            Some(&child_agent),
            EventKind::HopFailed {
                error: format!("cancelled: `{agent}` timed out"),
                usage: Usage::default(),
                started_at: now.clone(),
                ended_at: now.clone(),
                duration_us: 0,
                violations: Vec::new(),
            },
        );
    }
}

/// Logs the end of the hop, writes its transcript and builds the caller's result.
pub(crate) fn finish(ctx: &HopCtx, ending: Ending, done: Finished, elapsed: Duration) -> HopResult {
    let shared = &ctx.shared;
    let ended = Utc::now();
    shared.write_transcript(&ctx.hop_id, &done.system, &done.messages);
    let duration_us = elapsed.as_micros() as u64;
    // A hop an ancestor's timeout or Ctrl-C already ended (while it was finishing) is not
    // ended twice: only the one that takes it out of the in-flight set logs its end.
    let ended_here = shared.end_in_flight(&ctx.hop_id);
    let mut ending = ending;
    if let (true, Some(action)) = (ended_here, &ending.action) {
        let reason = ending.error.clone().unwrap_or_default();
        ctx.emit(EventKind::HopBlocked {
            reason: reason.clone(),
            action: action.clone(),
        });
        ending.error = Some(blocked_text(&reason, action));
    }
    if let (true, Some(c)) = (ended_here, &ending.checkpoint) {
        // The file is a convenience copy; the event is the record `resume` reads.
        let path = checkpoint::store(&shared.dir, &ctx.hop_id, c)
            .unwrap_or_else(|e| format!("(not written: {e})"));
        ctx.emit(EventKind::HopCheckpoint {
            reason: ending.error.clone().unwrap_or_default(),
            checkpoint: c.clone(),
            path,
        });
    }
    let failed = matches!(ending.status, HopStatus::Failed | HopStatus::Blocked);
    if ended_here && failed {
        ctx.emit(EventKind::HopFailed {
            error: ending.error.clone().unwrap_or_default(),
            usage: done.usage,
            started_at: timestamp(done.started),
            ended_at: timestamp(ended),
            duration_us,
            violations: ending.violations.clone(),
        });
    } else if ended_here {
        ctx.emit(EventKind::HopCompleted {
            status: ending.status,
            message_id: done.message_id.clone(),
            answer: ending.answer.clone(),
            usage: done.usage,
            started_at: timestamp(done.started),
            ended_at: timestamp(ended),
            duration_us,
            steps: done.steps,
            conformant: ending.conformant,
            violations: ending.violations.clone(),
            written: done.written.clone(),
        });
    }
    shared.add_usage(done.usage);
    HopResult {
        hop_id: ctx.hop_id.clone(),
        agent: done.agent,
        message_id: done.message_id,
        status: ending.status,
        answer: ending.answer,
        error: ending.error,
        usage: done.usage,
        violations: ending.violations,
        written: done.written,
        reused: false,
        checkpoint: ending.checkpoint,
    }
}
