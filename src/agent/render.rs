//! Rendering an agent's body (a minijinja template) into the system prompt the model gets.
//!
//! Undefined variables are errors, not empty strings: a prompt that silently lost its
//! correlation id would make the model invent one. A body that is not a template at all (written
//! for a runtime that passes `{{` through) is used as plain text; the loader warns about it.

use minijinja::syntax::SyntaxConfig;
use minijinja::{Environment, UndefinedBehavior};
use serde::Serialize;

use super::definition::Agent;
use super::discovery::AgentSet;
use crate::project::Project;

/// The variables the runtime puts into every prompt's context.
pub const RUNTIME_VARIABLES: &[&str] = &[
    "agent",
    "correlation_id",
    "message_id",
    "hop_id",
    "parent",
    "depth",
    "now",
    "today",
    "project_root",
    "subagents",
];

/// A subagent as a primary's prompt lists it.
#[derive(Debug, Clone, Serialize)]
pub struct SubagentInfo {
    pub name: String,
    pub description: String,
}

/// The context every prompt is rendered with; the field names are [`RUNTIME_VARIABLES`].
#[derive(Debug, Clone, Serialize)]
pub struct PromptContext {
    pub agent: String,
    pub correlation_id: String,
    pub message_id: String,
    pub hop_id: String,
    /// The calling agent's name; empty for the session's primary.
    pub parent: String,
    pub depth: u32,
    pub now: String,
    pub today: String,
    pub project_root: String,
    pub subagents: Vec<SubagentInfo>,
}

impl PromptContext {
    /// The subagents `agent` may delegate to, as the delegation policy decides
    /// ([`AgentSet::delegable_from`]): what the prompt lists is what dispatch accepts.
    pub fn callable_subagents(set: &AgentSet, agent: &Agent) -> Vec<SubagentInfo> {
        set.delegable_from(agent)
            .into_iter()
            .map(|t| SubagentInfo {
                name: t.name.clone(),
                description: t.description.clone(),
            })
            .collect()
    }

    /// Placeholder ids for `switchboard render` and lint, shaped like the real ones so a prompt
    /// renders exactly as it would in a session.
    pub fn preview(project: &Project, set: &AgentSet, agent: &Agent) -> Self {
        let now = chrono::Utc::now();
        let today = now.format("%Y-%m-%d").to_string();
        PromptContext {
            agent: agent.name.clone(),
            correlation_id: "preview-correlation".into(),
            message_id: format!("{}-{today}-001", agent.message_id_prefix()),
            hop_id: "00000000-0000-7000-8000-000000000000".into(),
            parent: String::new(),
            depth: 0,
            now: now.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
            today,
            project_root: project.root().display().to_string(),
            subagents: Self::callable_subagents(set, agent),
        }
    }

    pub fn into_json(self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

/// Why a body could not be rendered, located in the agent's file.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{file}:{line}: {message}")]
pub struct RenderError {
    pub file: String,
    /// 1-based file line (0 when minijinja did not say).
    pub line: usize,
    pub message: String,
}

fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    // Prompts are markdown: keep the final newline and do not HTML-escape anything.
    if let Ok(syntax) = SyntaxConfig::builder().keep_trailing_newline(true).build() {
        env.set_syntax(syntax);
    }
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
    env
}

/// Parses `body` as a template and returns the variables it reads that the runtime does not
/// provide (lint's concern), sorted. One parse serves both the validity check and lint.
pub fn parse_check(body: &str) -> Result<Vec<String>, minijinja::Error> {
    let env = environment();
    let template = env.template_from_str(body)?;
    let mut vars: Vec<String> = template
        .undeclared_variables(false)
        .into_iter()
        .filter(|v| !RUNTIME_VARIABLES.contains(&v.as_str()))
        .collect();
    vars.sort();
    Ok(vars)
}

/// Renders the agent's body with `context`; plain-text bodies come back unchanged.
pub fn render(agent: &Agent, context: &impl Serialize) -> Result<String, RenderError> {
    if !agent.body_is_template {
        return Ok(agent.body.clone());
    }
    let env = environment();
    let located = |e: minijinja::Error| RenderError {
        file: agent.file.clone(),
        line: e.line().map_or(0, |l| l + agent.body_line - 1),
        message: match e.detail() {
            Some(d) => format!("{}: {d}", e.kind()),
            None => e.kind().to_string(),
        },
    };
    let template = env.template_from_str(&agent.body).map_err(located)?;
    template
        .render(minijinja::value::Serde(context))
        .map_err(located)
}
