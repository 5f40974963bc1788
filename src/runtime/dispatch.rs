//! `task()` policy: whether a caller may delegate to a target, decided before any id is allocated.
//!
//! Each refusal is its own variant with its own message, because the message is what the calling
//! model reads to change course: "unknown agent" wants a different name, "denied" wants a different
//! plan, "too deep" wants the caller to do the work itself.

use serde_json::Value;

use crate::agent::{Action, Agent, AgentSet};

/// The arguments of one `task` call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskCall {
    pub subagent_type: String,
    pub description: String,
    pub prompt: String,
}

/// Why a `task` call was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("task: {0}")]
    BadArguments(String),
    #[error("task refused: unknown agent `{name}`; agents you may call: {available}")]
    UnknownAgent { name: String, available: String },
    #[error("task refused: `{0}` is a primary agent (mode: primary) and cannot be delegated to")]
    PrimaryOnly(String),
    #[error("task refused: `{0}` is disabled")]
    Disabled(String),
    #[error("task refused: `{caller}`'s permission.task {verdict} `{target}`")]
    Denied {
        caller: String,
        target: String,
        verdict: &'static str,
    },
    #[error("task refused: delegating to `{target}` would reach depth {depth}, over the limit of {max} (--max-depth); do this part yourself")]
    TooDeep {
        target: String,
        depth: u32,
        max: u32,
    },
    #[error("task refused: `{target}` is already in this call chain ({chain}); delegating to it again would be a cycle")]
    Cycle { target: String, chain: String },
}

impl TaskCall {
    /// Reads `{subagent_type, description, prompt}` (`agent`/`subagent` accepted for the name).
    pub fn parse(args: &Value) -> Result<Self, Refusal> {
        let field = |keys: &[&str]| {
            keys.iter()
                .find_map(|k| args.get(*k).and_then(Value::as_str))
                .map(str::to_string)
        };
        let subagent_type = field(&["subagent_type", "agent", "subagent"])
            .filter(|s| !s.trim().is_empty())
            .ok_or_else(|| {
                Refusal::BadArguments("missing string argument `subagent_type`".into())
            })?;
        let prompt = field(&["prompt"])
            .filter(|s| !s.trim().is_empty())
            .ok_or_else(|| Refusal::BadArguments("missing string argument `prompt`".into()))?;
        Ok(TaskCall {
            subagent_type: subagent_type.trim().to_string(),
            description: field(&["description"]).unwrap_or_default(),
            prompt,
        })
    }
}

/// The agents `caller` may delegate to (for the prompt's `subagents` and for error messages).
pub fn callable<'a>(caller: &Agent, agents: &'a AgentSet) -> Vec<&'a Agent> {
    agents
        .iter()
        .filter(|a| {
            a.name != caller.name
                && !a.disable
                && a.mode.can_be_delegated_to()
                && caller.permission.task(&a.name) == Action::Allow
        })
        .collect()
}

/// Checks a call. `chain` is the agents from the session's primary down to `caller` (inclusive);
/// `caller_depth` is the caller's depth (the primary is 0).
pub fn check<'a>(
    caller: &Agent,
    chain: &[String],
    caller_depth: u32,
    max_depth: u32,
    target: &str,
    agents: &'a AgentSet,
) -> Result<&'a Agent, Refusal> {
    let Some(agent) = agents.get(target) else {
        let names: Vec<&str> = callable(caller, agents)
            .iter()
            .map(|a| a.name.as_str())
            .collect();
        return Err(Refusal::UnknownAgent {
            name: target.to_string(),
            available: if names.is_empty() {
                "none".into()
            } else {
                names.join(", ")
            },
        });
    };
    if !agent.mode.can_be_delegated_to() {
        return Err(Refusal::PrimaryOnly(target.to_string()));
    }
    if agent.disable {
        return Err(Refusal::Disabled(target.to_string()));
    }
    match caller.permission.task(target) {
        Action::Allow => {}
        Action::Deny => {
            return Err(Refusal::Denied {
                caller: caller.name.clone(),
                target: target.to_string(),
                verdict: "denies",
            })
        }
        Action::Ask => {
            return Err(Refusal::Denied {
                caller: caller.name.clone(),
                target: target.to_string(),
                verdict: "requires approval (ask), which an unattended run cannot give, for",
            })
        }
    }
    if chain.iter().any(|a| a == target) {
        return Err(Refusal::Cycle {
            target: target.to_string(),
            chain: format!("{} → {target}", chain.join(" → ")),
        });
    }
    let depth = caller_depth + 1;
    if depth > max_depth {
        return Err(Refusal::TooDeep {
            target: target.to_string(),
            depth,
            max: max_depth,
        });
    }
    Ok(agent)
}
