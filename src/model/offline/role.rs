//! Which part the offline model plays, from what the agent declares: its tools, its contract and
//! the structure of its prompt. Never from its name.
//!
//! Agents written for other tools grant more than they use: an opencode `tools:` map that only
//! switches `write` off still grants `task`. So `task` alone does not make a lead; the lead's
//! workflow must be documented in its prompt (`task(...)` examples), because that is what the
//! offline model follows. When no role fits, [`why_not`] says why, in words for the user.

use super::History;
use crate::contract::EvidencePolicy;
use crate::model::ModelRequest;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Has `task` and a prompt that documents the delegation workflow: follows it and writes a
    /// report.
    Primary,
    /// Has `read`, and either owes evidence or owes no contract at all: reads a document and
    /// quotes it.
    Analyzer,
    /// Has `webfetch` or `websearch` (and is no lead): its work is on the web, which the offline
    /// model cannot reach, so it says exactly that.
    Web,
    /// Has search tools (`grep`, `glob`) and no reading job: ranks and lists paths.
    Locator,
    /// Owes a JSON plan contract (agent/analyst.md): writes the plan (offline/plan.rs).
    Planner,
    /// Reviews a worker's answer the runtime handed it (`validator:`): answers a verdict JSON
    /// (offline/validator.rs). Known from the task, which carries the answer to review.
    Validator,
    /// A pipeline worker (`switchboard pipeline run`): emits events in the declared shapes
    /// (offline/pipeline.rs). Known from the task, which lists the events it may emit.
    PipelineWorker,
    /// Has the `step` tool of a checkpoint workflow: reports the steps the runtime asks for
    /// (offline/checkpoint.rs).
    Checkpoint,
    /// Owes a JSON file-analysis contract (agent/file-analyzer.md): extracts from the chunk
    /// (offline/file_analysis.rs).
    FileAnalyzer,
    /// Anything else: a plain answer saying the offline model cannot serve this agent and why.
    Plain,
}

pub fn has_tool(request: &ModelRequest, name: &str) -> bool {
    request.tools.iter().any(|t| t.name == name)
}

/// Whether the prompt documents a delegation workflow the primary role can follow.
fn documents_workflow(request: &ModelRequest) -> bool {
    !super::workflow::examples(&request.system).is_empty()
}

/// Chooses the role for `request`. On a turn where the runtime withdrew the tools (the last
/// step), the steps already taken say which role this conversation has been playing.
pub fn infer(request: &ModelRequest, history: &History) -> Role {
    if super::pipeline::applies(history) {
        return Role::PipelineWorker;
    }
    if super::validator::applies(history) {
        return Role::Validator;
    }
    if super::plan::applies(request) {
        return Role::Planner;
    }
    if super::checkpoint::applies(request) || history.did("wfstep") {
        return Role::Checkpoint;
    }
    if super::file_analysis::applies(request) {
        return Role::FileAnalyzer;
    }
    if request.tools.is_empty() {
        if ["locate", "analyze", "write"]
            .iter()
            .any(|s| history.did(s))
        {
            return Role::Primary;
        }
        // The runtime's `read_first` put whole files in the task and held the tools back for
        // this first turn: reading is what this conversation is for.
        if history.did("read") || !crate::runtime::read_first::shown_in(history.task).is_empty() {
            return Role::Analyzer;
        }
        if history.did("search") || history.did("meta") {
            return Role::Locator;
        }
    }
    let evidence_required = request.response_contract.as_ref().is_some_and(|rc| {
        rc.contract.evidence == EvidencePolicy::Required || !rc.contract.signal_headings.is_empty()
    });
    let owes_contract = request.response_contract.is_some();
    let reads = has_tool(request, "read");
    let searches = has_tool(request, "grep") || has_tool(request, "glob");
    let lead = has_tool(request, "task") && has_tool(request, "write");
    if has_tool(request, "task") && documents_workflow(request) {
        Role::Primary
    } else if lead {
        // May delegate and write, but documents no workflow: nothing to follow.
        Role::Plain
    } else if has_tool(request, "webfetch") || has_tool(request, "websearch") {
        Role::Web
    } else if reads && (evidence_required || !owes_contract) {
        Role::Analyzer
    } else if searches {
        Role::Locator
    } else if reads {
        // Read under a contract that owes no evidence: still the best we can do is to quote.
        Role::Analyzer
    } else {
        Role::Plain
    }
}

/// Why the offline model plays no role for `request` (for a [`Role::Plain`] answer).
pub fn why_not(request: &ModelRequest) -> String {
    if has_tool(request, "task") && !documents_workflow(request) {
        "it may delegate (`task`), but its prompt documents no delegation workflow: no \
         `task(subagent_type: …, prompt: …)` example in a code block shows which agent to call \
         for what, and the offline model only follows documented workflows"
            .to_string()
    } else {
        let granted: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
        format!(
            "it is granted none of the tools the offline model works with (`read`, `grep`, \
             `glob`, `list`); granted here: {}",
            if granted.is_empty() {
                "none of switchboard's tools".to_string()
            } else {
                granted
                    .iter()
                    .map(|t| format!("`{t}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        )
    }
}
