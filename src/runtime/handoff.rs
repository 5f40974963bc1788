//! What passes between a caller and a child hop: the request (who to run, on what, from where in
//! the call chain) and the result, with the tool message the caller's model reads.
//!
//! Its own module because the session, the hop loop, `task` dispatch and `resume` all speak these
//! types while none of them should depend on another just to name them.

use serde::{Deserialize, Serialize};

use super::checkpoint::Checkpoint;
use super::status::HopStatus;
use crate::model::{Message, Usage};
use crate::problem::Problem;

/// The hop that made a `task` call.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ParentLink {
    pub hop_id: String,
    pub agent: String,
    pub model: String,
}

/// A hop to run (serializable: a durable backend sends it to the hop service).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HopRequest {
    pub agent: String,
    pub prompt: String,
    pub description: String,
    pub parent: Option<ParentLink>,
    pub depth: u32,
    /// Agents from the primary down to this hop's caller.
    pub chain: Vec<String>,
    /// A preassigned id (the primary hop's, announced in `session.started`).
    pub hop_id: Option<String>,
}

/// How a hop ended, as its caller sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HopResult {
    pub hop_id: String,
    pub agent: String,
    pub message_id: String,
    pub status: HopStatus,
    pub answer: String,
    pub error: Option<String>,
    pub usage: Usage,
    pub violations: Vec<Problem>,
    /// Files written by this hop and its descendants.
    pub written: Vec<String>,
    pub reused: bool,
    /// A PARTIAL hop's checkpoint (what is done, what remains).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<Checkpoint>,
}

impl HopResult {
    /// The tool message the caller receives: the answer, marked when partial or non-conformant,
    /// or an error that says why.
    pub fn to_tool_message(&self, call_id: &str) -> Message {
        match self.status {
            HopStatus::Completed => Message::tool(call_id, self.answer.clone(), false),
            HopStatus::Partial => Message::tool(
                call_id,
                format!(
                    "[PARTIAL: `{}` stopped before finishing ({}); this is what it had]{}{}\n\n{}",
                    self.agent,
                    self.error.as_deref().unwrap_or("limit reached"),
                    self.partial_check(),
                    self.remaining(),
                    self.partial_leads()
                ),
                false,
            ),
            HopStatus::NonConformant => Message::tool(
                call_id,
                format!(
                    "[NON-CONFORMANT: `{}`'s answer still violates its contract]\n{}\n\n{}",
                    self.agent,
                    list_violations(&self.violations),
                    self.answer
                ),
                false,
            ),
            HopStatus::Fallback => Message::tool(
                call_id,
                format!(
                    "[FALLBACK: `{}`'s answer could not be used ({}); this is its declared \
                     fallback]\n\n{}",
                    self.agent,
                    self.error.as_deref().unwrap_or("contract violated"),
                    self.answer
                ),
                false,
            ),
            // Only a primary ends needing input; should a child ever report it, its caller gets
            // the question as an ordinary result to answer or pass on.
            HopStatus::NeedsInput => Message::tool(call_id, self.answer.clone(), false),
            // The action in a BLOCKED error is for the person running the session; said
            // plainly to the calling model it reads as an order (a 1.5B researcher, told to
            // "fix the contract", delegated "Fix the contract for `thoughts-analyzer`" to the
            // analyzer). So it is marked as not the model's, and the model gets its own step.
            HopStatus::Blocked => {
                let error = self.error.as_deref().unwrap_or("blocked");
                let (reason, action) = match error.split_once(super::ending::ACTION_PREFIX) {
                    Some((reason, action)) => (
                        reason,
                        format!("\n(what a person must do, not you: {action})"),
                    ),
                    None => (error, String::new()),
                };
                Message::tool(
                    call_id,
                    format!(
                        "subagent `{agent}` is BLOCKED (not retried): {reason}{action}\nYou: do \
                         not call `{agent}` again for this. Delegate to another subagent, or \
                         give your answer with what you have and say what is missing.",
                        agent = self.agent,
                    ),
                    true,
                )
            }
            HopStatus::Failed => Message::tool(
                call_id,
                format!(
                    "subagent `{}` failed: {}",
                    self.agent,
                    self.error.as_deref().unwrap_or("unknown error")
                ),
                true,
            ),
        }
    }
}

impl HopResult {
    /// For a PARTIAL answer: how its contract check came out (a partial answer is checked too,
    /// without repair turns, which its budget no longer allows).
    fn partial_check(&self) -> String {
        if self.violations.is_empty() {
            return String::new();
        }
        format!(
            "\n[its answer does not conform to its contract; treat it as leads only]\n{}",
            list_violations(&self.violations)
        )
    }

    /// For a PARTIAL answer: the answer, or, when it breaks its contract, its first
    /// [`PARTIAL_LEADS_BYTES`] up to a line's end and a note of how much was left out. Over
    /// llama-server the 1.5B codebase-analyzer, cut off three times, wrote the same six
    /// paragraphs over and over; handed up whole, the researcher copied them as its own answer
    /// until its context overflowed. The whole answer stays in the transcript and the event log.
    fn partial_leads(&self) -> String {
        if self.violations.is_empty() || self.answer.len() <= PARTIAL_LEADS_BYTES {
            return self.answer.clone();
        }
        let mut end = PARTIAL_LEADS_BYTES;
        while !self.answer.is_char_boundary(end) {
            end -= 1;
        }
        let end = self.answer[..end].rfind('\n').unwrap_or(end);
        format!(
            "{}\n[… {} more bytes of this answer not shown]",
            self.answer[..end].trim_end(),
            self.answer.len() - end
        )
    }

    /// For a PARTIAL answer: what its checkpoint says remains.
    fn remaining(&self) -> String {
        let Some(c) = &self.checkpoint else {
            return String::new();
        };
        if c.remaining.is_empty() {
            return String::new();
        }
        format!("\n[still to do: {}]", c.remaining.join("; "))
    }
}

/// What a caller is shown at most of a PARTIAL answer that breaks its contract.
pub const PARTIAL_LEADS_BYTES: usize = 1_500;

pub(crate) fn list_violations(v: &[Problem]) -> String {
    v.iter()
        .map(|v| {
            if v.line > 0 {
                format!("- line {}: [{}] {}", v.line, v.code, v.message)
            } else {
                format!("- [{}] {}", v.code, v.message)
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::Rule;

    fn partial(answer: &str, violations: Vec<Problem>) -> HopResult {
        HopResult {
            hop_id: "h".into(),
            agent: "codebase-analyzer".into(),
            message_id: "m".into(),
            status: HopStatus::Partial,
            answer: answer.into(),
            error: Some("cut off".into()),
            usage: Usage::default(),
            violations,
            written: Vec::new(),
            reused: false,
            checkpoint: None,
        }
    }

    /// A partial answer that breaks its contract reaches its caller cut to its first lines,
    /// saying how much is left out; one that holds its contract, or is short, reaches it whole.
    #[test]
    fn a_long_partial_answer_that_breaks_its_contract_is_cut_for_its_caller() {
        let para = "The parser also handles the case where a key is missing.\n\n";
        let looped = para.repeat(100);
        let bad = vec![Rule::FrontmatterMissing.problem(0..1, "no frontmatter")];
        let shown = partial(&looped, bad.clone()).to_tool_message("c").content;
        assert!(shown.len() < PARTIAL_LEADS_BYTES + 600, "{}", shown.len());
        assert!(
            shown.contains("more bytes of this answer not shown]"),
            "{shown}"
        );
        assert!(shown.contains("[its answer does not conform"), "{shown}");
        let kept = shown
            .split("this is what it had]")
            .nth(1)
            .unwrap_or_default();
        assert!(kept.contains(para.trim_end()), "{kept}");
        // Holds its contract: whole. Short: whole.
        let whole = partial(&looped, Vec::new()).to_tool_message("c").content;
        assert!(whole.ends_with(&looped), "whole when conformant");
        let short = partial(para, bad).to_tool_message("c").content;
        assert!(
            short.ends_with(para) && !short.contains("not shown"),
            "{short}"
        );
    }
}
