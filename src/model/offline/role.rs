//! Which part the offline model plays, from what the agent declares: its tools, its contract and
//! the structure of its prompt. Never from its name.

use super::History;
use crate::contract::EvidencePolicy;
use crate::model::ModelRequest;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Has `task`: follows the delegation workflow its prompt documents and writes a report.
    Primary,
    /// Has `read` and a contract that demands evidence: reads a document and quotes it.
    Analyzer,
    /// Has `webfetch` or `websearch` (and no `task`): its work is on the web, which the offline
    /// model cannot reach, so it says exactly that.
    Web,
    /// Has search tools (`grep`, `glob`, `list`) and no `read`: ranks and lists paths.
    Locator,
    /// Anything else: an honest short answer that says what the offline model cannot do.
    Plain,
}

pub fn has_tool(request: &ModelRequest, name: &str) -> bool {
    request.tools.iter().any(|t| t.name == name)
}

/// Chooses the role for `request`. On a turn where the runtime withdrew the tools (the last
/// step), the steps already taken say which role this conversation has been playing.
pub fn infer(request: &ModelRequest, history: &History) -> Role {
    if request.tools.is_empty() {
        if ["locate", "analyze", "write"]
            .iter()
            .any(|s| history.did(s))
        {
            return Role::Primary;
        }
        if history.did("read") {
            return Role::Analyzer;
        }
        if history.did("search") || history.did("meta") {
            return Role::Locator;
        }
    }
    let evidence_required = request.response_contract.as_ref().is_some_and(|rc| {
        rc.contract.evidence == EvidencePolicy::Required || !rc.contract.signal_headings.is_empty()
    });
    let searches = has_tool(request, "grep") || has_tool(request, "glob");
    if has_tool(request, "task") {
        Role::Primary
    } else if has_tool(request, "webfetch") || has_tool(request, "websearch") {
        Role::Web
    } else if has_tool(request, "read") && evidence_required {
        Role::Analyzer
    } else if searches {
        Role::Locator
    } else if has_tool(request, "read") {
        // Read without an evidence contract: still the best we can do is to quote.
        Role::Analyzer
    } else {
        Role::Plain
    }
}
