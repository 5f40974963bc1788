//! `task()` dispatch: reading a call's arguments and asking the delegation policy
//! ([`crate::agent::policy`]) with the live call chain, before any id is allocated.

use serde_json::Value;

use crate::agent::{policy, Agent, AgentSet};

pub use crate::agent::policy::Refusal;

/// The arguments of one `task` call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskCall {
    pub subagent_type: String,
    pub description: String,
    pub prompt: String,
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
                Refusal::BadArguments(
                    "missing string argument `subagent_type`: the name of the agent to delegate \
                     to (see the list of subagents in your instructions), beside `description` \
                     and `prompt`"
                        .into(),
                )
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

/// Checks a `task` call before any id is allocated: the caller's grant first (so an agent
/// without `task` hears that, not complaints about its arguments), then the arguments, then the
/// delegation policy with the live chain. `chain` is the agents from the session's primary down
/// to `caller` (inclusive); `caller_depth` is the caller's depth (the primary is 0).
pub fn accept<'a>(
    caller: &Agent,
    args: &Value,
    chain: &[String],
    caller_depth: u32,
    max_depth: u32,
    agents: &'a AgentSet,
) -> Result<(TaskCall, &'a Agent), Refusal> {
    policy::check_caller(caller)?;
    let call = TaskCall::parse(args)?;
    let target = check(
        caller,
        chain,
        caller_depth,
        max_depth,
        &call.subagent_type,
        agents,
    )?;
    Ok((call, target))
}

/// The delegation policy for a call to `target` at this point of the session.
pub fn check<'a>(
    caller: &Agent,
    chain: &[String],
    caller_depth: u32,
    max_depth: u32,
    target: &str,
    agents: &'a AgentSet,
) -> Result<&'a Agent, Refusal> {
    let chain = policy::Chain {
        agents: chain,
        caller_depth,
        max_depth,
    };
    policy::check(agents.by_name(), caller, target, Some(chain))
}
