//! Rendering an agent's body (a minijinja template) into the system prompt the model gets.
//!
//! Undefined variables are errors, not empty strings: a prompt that silently lost its
//! correlation id would make the model invent one. A body that is not a template at all (written
//! for a runtime that passes `{{` through) is used as plain text; the loader warns about it.

use minijinja::syntax::SyntaxConfig;
use minijinja::{Environment, UndefinedBehavior};
use serde::Serialize;

use super::definition::Agent;

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

/// Checks that `body` parses as a template; the error carries the template's own line.
pub fn parse_check(body: &str) -> Result<(), minijinja::Error> {
    environment().template_from_str(body).map(|_| ())
}

/// Variables the template reads that the runtime does not provide (lint's concern).
pub fn unknown_variables(body: &str, extra: &[String]) -> Vec<String> {
    let env = environment();
    let Ok(template) = env.template_from_str(body) else {
        return Vec::new();
    };
    let mut vars: Vec<String> = template
        .undeclared_variables(false)
        .into_iter()
        .filter(|v| !RUNTIME_VARIABLES.contains(&v.as_str()) && !extra.contains(v))
        .collect();
    vars.sort();
    vars
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
