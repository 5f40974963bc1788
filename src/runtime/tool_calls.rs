//! One model turn's tool calls, before anything waits: built-in tools (`read`, `grep`, …) run
//! here and now; a `task` call is checked (grant, arguments, delegation policy) and becomes the
//! request for a child hop, or a tool error that tells the calling model why not.
//!
//! Spawning and awaiting the children stays in the hop loop (`hop/turn.rs`), which owns the
//! semaphore permit that waiting gives back and asks the hop's journal to start them.

use super::dispatch::{self, Refusal};
use super::handoff::{HopRequest, ParentLink};
use super::shared::Shared;
use crate::agent::Agent;
use crate::model::{Message, ToolCall};
use crate::tools::{self, ToolContext, ToolError};

/// A built-in tool's result: the tool message, the file it wrote (if any), and why a path was
/// refused (the hop ends BLOCKED after the turn). Serializable: a durable journal records it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Done {
    pub message: Message,
    pub written: Option<String>,
    pub refused: Option<String>,
}

/// Runs a built-in tool (`read`, `grep`, `write`, ...) for `agent`; `read` are the files the
/// hop read (with the session's written ones, `ToolContext::known`).
pub(crate) fn builtin(shared: &Shared, agent: &Agent, call: &ToolCall, read: &[String]) -> Done {
    let tool = crate::agent::grants::canonical_tool_name(&call.name);
    let written = shared.written();
    let mut known = read.to_vec();
    known.extend(written.iter().cloned());
    let ctx = ToolContext {
        project: &shared.project,
        agent,
        known: &known,
        written: &written,
    };
    match tools::invoke(ctx, &tool, &call.arguments) {
        Ok(out) => Done {
            message: Message::tool(&call.id, out.text, false),
            written: out.written,
            refused: None,
        },
        Err(e) => Done {
            // A path outside the root (or a hidden folder) is fatal for the hop: it ends
            // BLOCKED after this turn instead of letting the model probe further.
            refused: matches!(e, ToolError::Refused { .. }).then(|| e.to_string()),
            message: Message::tool(&call.id, e.to_string(), true),
            written: None,
        },
    }
}

/// Runs `webfetch`/`websearch`, the tools that wait on the network; the record of a fetch
/// (when one was tried) is for the caller to log. Owned-friendly arguments: a durable journal
/// runs it as a step.
pub(crate) async fn web(
    shared: &Shared,
    agent: &Agent,
    call: &ToolCall,
    tool: &str,
) -> (Message, Option<crate::tools::webfetch::FetchRecord>) {
    let ctx = ToolContext {
        project: &shared.project,
        agent,
        known: &[],
        written: &[],
    };
    let (result, record) = match shared.web() {
        Ok(web) => web.invoke(ctx, tool, &call.arguments).await,
        Err(e) => (
            Err(ToolError::Failed {
                tool: tool.to_string(),
                message: e.to_string(),
            }),
            None,
        ),
    };
    let message = match result {
        Ok(out) => Message::tool(&call.id, out.text, false),
        Err(e) => Message::tool(&call.id, e.to_string(), true),
    };
    (message, record)
}

/// Runs a call of one of the session's MCP tools (`server_tool`); the record is for the caller
/// to log. `None` when `name` is not an MCP tool of this session.
pub(crate) async fn mcp(
    shared: &Shared,
    agent: &Agent,
    call: &ToolCall,
) -> Option<(Message, crate::mcp::CallRecord)> {
    let mcp = shared.mcp.get()?;
    let (server, tool) = mcp.resolve(&call.name)?;
    let (result, record) = mcp.call(agent, &server, &tool, &call.arguments).await;
    let message = match result {
        Ok(text) => Message::tool(&call.id, text, false),
        Err(e) => Message::tool(&call.id, format!("`{}`: {e}", call.name), true),
    };
    Some((message, record))
}

/// The hop making the calls: who it is and where it sits in the call chain.
pub(crate) struct Caller<'a> {
    pub shared: &'a Shared,
    pub agent: &'a Agent,
    /// The request the calling hop runs (its depth and chain).
    pub request: &'a HopRequest,
    pub hop_id: &'a str,
    pub model_spec: &'a str,
    /// The hop's message id: the id of the checkpoint workflow run it reports `step`s to.
    pub message_id: &'a str,
    /// Files the hop's subagents found so far (see `workflow::tool::Call::found`).
    pub found: &'a [String],
}

impl Caller<'_> {
    /// Runs a `step` call of the agent's checkpoint workflow (src/workflow/tool.rs): the reply,
    /// the document written by the last step, and the event to log. `None` when the agent runs
    /// no workflow.
    pub fn step(
        &self,
        call: &ToolCall,
    ) -> Option<(Message, Option<String>, Option<super::events::EventKind>)> {
        if call.name != crate::workflow::tool::TOOL {
            return None;
        }
        let h = crate::workflow::tool::handle(&self.workflow_call(), &call.arguments)?;
        let message = Message::tool(&call.id, h.text, h.is_error);
        let event = super::events::EventKind::WorkflowStep {
            workflow: h.workflow,
            run_id: self.message_id.to_string(),
            step: h.step,
            action: h.action,
            attempt: h.attempt,
            errors: h.errors,
            document: h.written.clone(),
        };
        Some((message, h.written, Some(event)))
    }

    /// Who calls the `step` tool, and for which run.
    pub fn workflow_call(&self) -> crate::workflow::tool::Call<'_> {
        crate::workflow::tool::Call {
            project: &self.shared.project,
            agent: &self.agent.name,
            declared: self.agent.workflow.as_deref(),
            run_id: self.message_id,
            session_id: &self.shared.session_id,
            correlation_id: &self.shared.correlation_id,
            task: &self.request.prompt,
            found: self.found,
        }
    }

    /// Checks a `task` call and builds the child hop, or says why not.
    pub fn task_request(&self, args: &serde_json::Value) -> Result<HopRequest, Refusal> {
        let shared = self.shared;
        let mut chain = self.request.chain.clone();
        chain.push(self.agent.name.clone());
        // Grant, arguments and the delegation policy, in that order: one decision (agent::policy).
        let (call, _target) = dispatch::accept(
            self.agent,
            args,
            &chain,
            self.request.depth,
            shared.options.max_depth,
            &shared.agents,
        )?;
        Ok(HopRequest {
            agent: call.subagent_type,
            prompt: call.prompt,
            description: call.description,
            parent: Some(ParentLink {
                hop_id: self.hop_id.to_string(),
                agent: self.agent.name.clone(),
                model: self.model_spec.to_string(),
            }),
            depth: self.request.depth + 1,
            chain,
            hop_id: None,
        })
    }
}

/// `s` cut to at most `max` bytes (on a character boundary), saying how long it was.
pub(crate) fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [{} bytes]", &s[..end], s.len())
}

#[cfg(test)]
mod tests {
    use super::cut;

    #[test]
    fn cut_keeps_short_text_and_marks_long_text_on_a_char_boundary() {
        assert_eq!(cut("short", 10), "short");
        // `é` is two bytes: a cut at 2 would split it, so it backs off to 1.
        assert_eq!(cut("aé€xyz", 2), "a… [9 bytes]");
    }
}
