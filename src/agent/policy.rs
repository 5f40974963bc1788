//! The delegation policy: whether `caller` may delegate to `target`, and if not, why.
//!
//! One decision serves every place that asks: the runtime's dispatch (with the live call chain
//! and depth), lint's delegation rules and `graph` (statically), and the list of callable
//! subagents a prompt shows (`AgentSet::delegable_from`). Before this module each of them
//! decided on its own, and they drifted apart (lint accepted a delegation to a disabled agent
//! that the runtime refused). A new reason to refuse is one variant and one check here.
//!
//! The reasons are checked in a fixed order (the caller's `task` grant, the target's existence,
//! its mode, `disable`, the caller's `permission.task`, cycles, depth). The runtime tells the
//! model the first; lint reports every one.
//!
//! This module reads agents only, never the runtime; it takes agents by name rather than an
//! `AgentSet` so that discovery can call it without the two importing each other.

use std::collections::BTreeMap;

use super::definition::Agent;
use super::permission::Action;

/// Why a delegation (a `task` call) is refused. The message is what the calling model reads to
/// change course: "unknown agent" wants a different name, "denied" wants a different plan,
/// "too deep" wants the caller to do the work itself.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The call's arguments could not be read (dispatch's concern; never a static verdict).
    #[error("task: {0}")]
    BadArguments(String),
    /// The caller is not granted the `task` tool.
    #[error("tool `task` is not granted to agent `{0}`")]
    NotGranted(String),
    #[error("task refused: unknown agent `{name}`; agents you may call: {available}")]
    UnknownAgent { name: String, available: String },
    #[error("task refused: `{0}` is a primary agent (mode: primary) and cannot be delegated to")]
    PrimaryOnly(String),
    #[error("task refused: `{0}` is disabled")]
    Disabled(String),
    #[error("task refused: `{caller}`'s permission.task {} `{target}`", verdict(*.action))]
    Denied {
        caller: String,
        target: String,
        /// `Deny` or `Ask` (an unattended run cannot give approval).
        action: Action,
    },
    #[error("task refused: `{target}` is already in this call chain ({chain}); delegating to it again would be a cycle")]
    Cycle { target: String, chain: String },
    #[error("task refused: delegating to `{target}` would reach depth {depth}, over the limit of {max} (--max-depth); do this part yourself")]
    TooDeep {
        target: String,
        depth: u32,
        max: u32,
    },
}

fn verdict(action: Action) -> &'static str {
    match action {
        Action::Ask => "requires approval (ask), which an unattended run cannot give, for",
        _ => "denies",
    }
}

impl Refusal {
    /// The stable lint code for this reason (README lists them); `graph` marks edges with it.
    pub fn code(&self) -> &'static str {
        match self {
            Refusal::BadArguments(_) => "delegation/bad-arguments",
            Refusal::NotGranted(_) => "delegation/no-task-tool",
            Refusal::UnknownAgent { .. } => "delegation/missing-target",
            Refusal::PrimaryOnly(_) => "delegation/primary-target",
            Refusal::Disabled(_) => "delegation/disabled",
            Refusal::Denied { .. } => "delegation/permission-denied",
            Refusal::Cycle { .. } => "delegation/cycle",
            Refusal::TooDeep { .. } => "delegation/too-deep",
        }
    }
}

/// Where in a session a call is made; only the runtime knows it.
#[derive(Debug, Clone, Copy)]
pub struct Chain<'c> {
    /// The agents from the session's primary down to the caller, inclusive.
    pub agents: &'c [String],
    /// The caller's depth (the session's primary is 0).
    pub caller_depth: u32,
    /// `--max-depth`.
    pub max_depth: u32,
}

/// Every agent of a project by name, as `AgentSet::by_name` hands them out.
pub type Agents = BTreeMap<String, Agent>;

/// Whether `caller` may delegate to `target`; the target when it may, else the first reason it
/// may not. `chain` is `None` for a static verdict (lint, the prompt's list): then the only
/// chain is the caller itself, so delegating to oneself is a cycle, and depth is not checked.
pub fn check<'a>(
    agents: &'a Agents,
    caller: &Agent,
    target: &str,
    chain: Option<Chain<'_>>,
) -> Result<&'a Agent, Refusal> {
    match decide(agents, caller, target, chain, false)
        .into_iter()
        .next()
    {
        Some(refusal) => Err(refusal),
        None => agents
            .get(target)
            .ok_or_else(|| unknown(agents, caller, target)),
    }
}

/// Every reason `check` would give, in its order (lint reports them all). Empty when allowed.
pub fn refusals(
    agents: &Agents,
    caller: &Agent,
    target: &str,
    chain: Option<Chain<'_>>,
) -> Vec<Refusal> {
    decide(agents, caller, target, chain, true)
}

/// The caller's half of the decision, which needs no target: dispatch asks it before reading a
/// call's arguments, so an agent without the grant hears that rather than argument complaints.
pub fn check_caller(caller: &Agent) -> Result<(), Refusal> {
    if caller.tools.allows("task") {
        Ok(())
    } else {
        Err(Refusal::NotGranted(caller.name.clone()))
    }
}

/// The agents `caller` may delegate to (statically), sorted by name.
pub fn callable<'a>(agents: &'a Agents, caller: &Agent) -> Vec<&'a Agent> {
    agents
        .values()
        .filter(|t| decide(agents, caller, &t.name, None, false).is_empty())
        .collect()
}

/// The one derivation behind `check` and `refusals`; stops at the first reason unless `all`.
fn decide(
    agents: &Agents,
    caller: &Agent,
    target: &str,
    chain: Option<Chain<'_>>,
    all: bool,
) -> Vec<Refusal> {
    let mut out = Vec::new();
    let refuse = |r: Refusal, out: &mut Vec<Refusal>| {
        out.push(r);
        !all
    };
    if let Err(r) = check_caller(caller) {
        if refuse(r, &mut out) {
            return out;
        }
    }
    let Some(agent) = agents.get(target) else {
        out.push(unknown(agents, caller, target));
        return out;
    };
    if !agent.mode.can_be_delegated_to() && refuse(Refusal::PrimaryOnly(target.into()), &mut out) {
        return out;
    }
    if agent.disable && refuse(Refusal::Disabled(target.into()), &mut out) {
        return out;
    }
    let action = caller.permission.task(target);
    if action != Action::Allow {
        let denied = Refusal::Denied {
            caller: caller.name.clone(),
            target: target.into(),
            action,
        };
        if refuse(denied, &mut out) {
            return out;
        }
    }
    let in_chain =
        target == caller.name || chain.is_some_and(|c| c.agents.iter().any(|a| a == target));
    if in_chain {
        let above = match chain {
            Some(c) if !c.agents.is_empty() => c.agents.join(" → "),
            _ => caller.name.clone(),
        };
        let cycle = Refusal::Cycle {
            target: target.into(),
            chain: format!("{above} → {target}"),
        };
        if refuse(cycle, &mut out) {
            return out;
        }
    }
    if let Some(c) = chain {
        let depth = c.caller_depth + 1;
        if depth > c.max_depth {
            out.push(Refusal::TooDeep {
                target: target.into(),
                depth,
                max: c.max_depth,
            });
        }
    }
    out
}

/// `UnknownAgent`, listing what the caller may call instead.
fn unknown(agents: &Agents, caller: &Agent, target: &str) -> Refusal {
    let names: Vec<&str> = callable(agents, caller)
        .iter()
        .map(|a| a.name.as_str())
        .collect();
    Refusal::UnknownAgent {
        name: target.to_string(),
        available: if names.is_empty() {
            "none".into()
        } else {
            names.join(", ")
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::parse::{parse, Outcome};

    /// Agents from `(name, frontmatter lines)`.
    fn agents(defs: &[(&str, &str)]) -> Agents {
        defs.iter()
            .map(|(name, fm)| {
                let text = format!("---\ndescription: x\n{fm}---\nbody\n");
                match parse(&text, &format!("agent/{name}.md"), name).outcome {
                    Outcome::Loaded(a) => (name.to_string(), *a),
                    _ => panic!("{name} did not load"),
                }
            })
            .collect()
    }

    fn set() -> Agents {
        agents(&[
            (
                "lead",
                "mode: primary\npermission:\n  task:\n    \"*\": allow\n    secret: deny\n    careful: ask\n",
            ),
            ("helper", "mode: subagent\n"),
            ("off", "mode: subagent\ndisable: true\n"),
            ("other", "mode: primary\n"),
            ("secret", "mode: subagent\n"),
            ("careful", "mode: subagent\n"),
            ("mute", "mode: subagent\ntools: {task: false}\n"),
        ])
    }

    fn first(set: &Agents, caller: &str, target: &str) -> Result<String, Refusal> {
        check(set, &set[caller], target, None).map(|a| a.name.clone())
    }

    #[test]
    fn each_reason_with_the_text_the_model_reads() {
        let s = set();
        assert_eq!(first(&s, "lead", "helper"), Ok("helper".into()));
        let text = |caller, target| first(&s, caller, target).unwrap_err().to_string();
        assert_eq!(text("lead", "off"), "task refused: `off` is disabled");
        assert_eq!(
            text("lead", "other"),
            "task refused: `other` is a primary agent (mode: primary) and cannot be delegated to"
        );
        assert_eq!(
            text("lead", "secret"),
            "task refused: `lead`'s permission.task denies `secret`"
        );
        assert_eq!(
            text("lead", "careful"),
            "task refused: `lead`'s permission.task requires approval (ask), which an unattended run cannot give, for `careful`"
        );
        assert_eq!(
            text("lead", "nobody"),
            "task refused: unknown agent `nobody`; agents you may call: helper, mute"
        );
        assert_eq!(
            text("mute", "helper"),
            "tool `task` is not granted to agent `mute`"
        );
        assert_eq!(
            text("helper", "helper"),
            "task refused: `helper` is already in this call chain (helper → helper); delegating to it again would be a cycle"
        );
    }

    #[test]
    fn the_live_chain_adds_cycles_and_depth() {
        let s = set();
        let chain = [
            "lead".to_string(),
            "secret".to_string(),
            "helper".to_string(),
        ];
        let live = |max_depth| Chain {
            agents: &chain,
            caller_depth: 2,
            max_depth,
        };
        let helper = &s["helper"];
        // `careful` is not in the chain; lead's `ask` for it does not bind helper.
        assert!(check(&s, helper, "careful", Some(live(3))).is_ok());
        assert_eq!(
            check(&s, helper, "careful", Some(live(2))).unwrap_err(),
            Refusal::TooDeep {
                target: "careful".into(),
                depth: 3,
                max: 2
            }
        );
        let cycle = check(&s, helper, "secret", Some(live(5))).unwrap_err();
        assert_eq!(cycle.to_string(), "task refused: `secret` is already in this call chain (lead → secret → helper → secret); delegating to it again would be a cycle");
        // `lead` is also primary-only, which comes first; `refusals` has both.
        assert_eq!(
            refusals(&s, helper, "lead", Some(live(2)))
                .iter()
                .map(Refusal::code)
                .collect::<Vec<_>>(),
            [
                "delegation/primary-target",
                "delegation/cycle",
                "delegation/too-deep"
            ]
        );
    }

    #[test]
    fn refusals_lists_every_reason_and_check_gives_the_first() {
        let s = agents(&[
            ("mute", "tools: {task: false}\npermission:\n  task: deny\n"),
            ("lead", "mode: primary\n"),
        ]);
        let mute = &s["mute"];
        let all: Vec<_> = refusals(&s, mute, "lead", None)
            .iter()
            .map(Refusal::code)
            .collect();
        assert_eq!(
            all,
            [
                "delegation/no-task-tool",
                "delegation/primary-target",
                "delegation/permission-denied"
            ]
        );
        assert_eq!(
            check(&s, mute, "lead", None).unwrap_err(),
            Refusal::NotGranted("mute".into())
        );
        // A missing target ends the list: nothing else about it can be known.
        let missing: Vec<_> = refusals(&s, mute, "ghost", None)
            .iter()
            .map(Refusal::code)
            .collect();
        assert_eq!(
            missing,
            ["delegation/no-task-tool", "delegation/missing-target"]
        );
    }

    #[test]
    fn callable_is_what_check_accepts() {
        let s = set();
        for caller in s.values() {
            let listed: Vec<&str> = callable(&s, caller)
                .iter()
                .map(|a| a.name.as_str())
                .collect();
            for target in s.keys() {
                assert_eq!(
                    listed.contains(&target.as_str()),
                    check(&s, caller, target, None).is_ok(),
                    "{} -> {target}",
                    caller.name
                );
            }
        }
        assert_eq!(
            callable(&s, &s["lead"])
                .iter()
                .map(|a| a.name.as_str())
                .collect::<Vec<_>>(),
            ["helper", "mute"]
        );
    }
}
