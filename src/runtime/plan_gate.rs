//! The retrieval gate of one hop (`gate:` in the agent's frontmatter, see `agent/gate.rs` and
//! docs/gate.md): until the agent has a plan that passed the plan contract, every retrieval tool
//! and every delegation (but the one to the planning agent) is refused with a tool error that
//! says why and what to do; once a plan passed, only the tools and subagents of the sources it
//! chose are open.
//!
//! The gate belongs to the hop, not the session: a subagent's own tools are its gate's business.
//! It is enforced on the call, not by hiding tools, so a model that tries learns why it cannot,
//! and the refusal is in the event log for `trace` and the run's decisions.

use serde_json::{json, Value};
use std::collections::BTreeSet;

use crate::agent::gate::{AskedBy, Gate, GateName, PlanFrom};
use crate::agent::{Agent, AgentSet};
use crate::contract::{check_json_detailed, Contract, SchemaSource};
use crate::model::{ToolCall, ToolSpec};
use crate::project::Project;

pub use crate::agent::gate::PLAN_TOOL;

/// Subagents to call next, each with the path it is given if any.
type Calls<'f> = Vec<(String, Option<&'f str>)>;

/// Built-in tools that change nothing and fetch nothing: everything else built in reads the
/// project, the knowledge store or the web. They stay open before a plan.
const NOT_RETRIEVAL: &[&str] = &["write", "task"];

/// Whether a built-in tool reads something. Derived from the built-in list, so a reading tool
/// added later is closed before a plan without anyone remembering to list it here; the built-in
/// retrieval tools stay closed until a plan passes even when no source names them, so a gate
/// cannot be walked around by a tool the author forgot.
fn is_retrieval_tool(name: &str) -> bool {
    crate::agent::grants::BUILTIN_TOOLS.contains(&name) && !NOT_RETRIEVAL.contains(&name)
}

/// Why a gated hop cannot start: its gate names a plan agent that is not there or owes no JSON.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GateSetupError {
    #[error(
        "the gate of `{agent}` names `{plan}` as the agent that plans, but no such agent is loaded"
    )]
    UnknownPlanAgent { agent: String, plan: String },
    #[error(
        "the gate of `{agent}` names `{plan}` as the agent that plans, but its answers owe no \
         `format: json` contract, so no plan of it could be validated"
    )]
    PlanAgentNotJson { agent: String, plan: String },
}

/// Why a submitted plan opened nothing, in words the model can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanRejected {
    #[error("the plan does not pass contract `{contract}`; nothing is open yet.\n{repair}")]
    Contract { contract: String, repair: String },
    #[error(
        "the plan passed contract `{contract}` but has no list of sources at `{field}`, which \
         the gate reads to decide what opens"
    )]
    NoSources { contract: String, field: String },
}

/// A plan that passed, and what it opened.
#[derive(Debug, Clone, PartialEq)]
pub struct Accepted {
    /// The plan after the contract's sanitize rules.
    pub plan: Value,
    pub contract: String,
    /// The sources the plan chose, in its order.
    pub sources: Vec<String>,
    /// The tools and subagents those sources open.
    pub allowed: BTreeSet<String>,
    /// The clarifying question the plan asks, if any.
    pub question: Option<String>,
}

/// One hop's gate and the plan it accepted so far.
/// The call id of the plan request the runtime makes itself ([`PlanGate::runtime_call`]).
pub(crate) const RUNTIME_CALL_ID: &str = "gate_plan";
/// The call id of the runtime's second plan request ([`PlanGate::reask`]): its own, since a
/// hop's journal (a recorded step on Restate) keys each tool call by its id, and the same id
/// would replay the first plan.
pub(crate) const REASK_CALL_ID: &str = "gate_plan_again";

pub(crate) struct PlanGate {
    agent: String,
    gate: Gate,
    contract: Contract,
    accepted: Option<Accepted>,
}

/// What the gate says of one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Admission {
    Open,
    /// Refused; the text is the tool error the model reads.
    Refused(String),
}

impl PlanGate {
    /// The gate of `agent`, if it declares one.
    pub fn new(agent: &Agent, agents: &AgentSet) -> Result<Option<Self>, GateSetupError> {
        let Some(gate) = &agent.gate else {
            return Ok(None);
        };
        let contract = match &gate.plan {
            PlanFrom::Contract(c) => (**c).clone(),
            PlanFrom::Agent(name) => {
                let planner = agents
                    .get(name)
                    .ok_or_else(|| GateSetupError::UnknownPlanAgent {
                        agent: agent.name.clone(),
                        plan: name.clone(),
                    })?;
                planner
                    .contract
                    .clone()
                    .filter(|c| c.json.is_some())
                    .ok_or_else(|| GateSetupError::PlanAgentNotJson {
                        agent: agent.name.clone(),
                        plan: name.clone(),
                    })?
            }
        };
        Ok(Some(PlanGate {
            agent: agent.name.clone(),
            gate: gate.clone(),
            contract,
            accepted: None,
        }))
    }

    /// The `plan` tool: its parameters are the plan's top-level shape (properties and required
    /// fields). The full schema (conditionals included) is checked here on submission; providers
    /// differ in how much JSON Schema a tool declaration may carry.
    pub fn tool_spec(&self, project: &Project) -> ToolSpec {
        let schema = self
            .contract
            .json
            .as_ref()
            .and_then(|j| match &j.schema {
                SchemaSource::Inline(v) => Some(v.clone()),
                SchemaSource::Path(p) => project
                    .resolve(p)
                    .ok()
                    .and_then(|path| std::fs::read_to_string(path).ok())
                    .and_then(|text| crate::yaml::from_str::<Value>(&text).ok()),
            })
            .unwrap_or_else(|| json!({}));
        let mut parameters = json!({"type": "object"});
        for key in ["properties", "required"] {
            if let Some(v) = schema.get(key) {
                parameters[key] = v.clone();
            }
        }
        let how = match self.gate.plan_agent() {
            Some(a) => format!(
                " You may instead delegate to `{a}` (task); its validated answer becomes the plan."
            ),
            None => String::new(),
        };
        ToolSpec {
            name: PLAN_TOOL.into(),
            description: format!(
                "Submit your plan before any retrieval: a JSON object that must pass contract \
                 `{}`. Its `{}` decides which tools and subagents you may use afterwards.{how}",
                self.contract.name,
                self.gate.sources_field.trim_start_matches('/'),
            ),
            parameters,
        }
    }

    /// Whether `name` is the agent that plans (a delegation to it is always open, and its
    /// answer is offered as the plan).
    pub fn is_plan_agent(&self, name: &str) -> bool {
        self.gate.plan_agent() == Some(name)
    }

    /// Before a plan is accepted: the call that starts the work, for a repair turn to show a
    /// model that answered without it. `None` once a plan passed, or when the plan comes from a
    /// contract rather than an agent.
    pub fn first_step(&self) -> Option<String> {
        if self.accepted.is_some() {
            return None;
        }
        let plan = self.gate.plan_agent()?;
        Some(format!(
            "Nothing is open before a plan: start with it. Call the `task` tool with \
             {{\"subagent_type\": \"{plan}\", \"description\": \"Plan the question\", \
             \"prompt\": \"<the user's question, word for word>\"}}."
        ))
    }

    /// The delegation the runtime makes itself before the first turn when the gate says
    /// `ask: runtime`: the task, word for word, to the plan agent. `None` otherwise, and once a
    /// plan passed (a resumed hop that has one does not ask again).
    pub fn runtime_call(&self, task: &str) -> Option<ToolCall> {
        if self.accepted.is_some() || self.gate.ask != AskedBy::Runtime {
            return None;
        }
        let plan = self.gate.plan_agent()?;
        Some(ToolCall {
            id: RUNTIME_CALL_ID.to_string(),
            name: "task".to_string(),
            arguments: serde_json::json!({
                "subagent_type": plan,
                "description": "Plan the task",
                "prompt": task,
            }),
        })
    }

    /// After the runtime's own plan request: one more, when the plan it got passed its contract
    /// but opens nothing here (it chose only sources this gate does not map, such as `db`),
    /// while other sources would open something. The prompt is the task again, naming the
    /// sources the project can search. `None` otherwise. Qwen2.5-Coder-1.5B as the analyst
    /// classed "How many repair turns does a hop get…?" as `STATUS_SUMMARY`, whose contract
    /// then requires `db`, and every delegation of the researcher was refused; the plan says
    /// where to look, so a plan that can look nowhere is asked again rather than obeyed.
    /// Once only: a second plan that opens nothing stands, and its note says so.
    pub fn reask(&self, task: &str) -> Option<ToolCall> {
        let accepted = self.accepted.as_ref()?;
        if self.gate.ask != AskedBy::Runtime || !accepted.allowed.is_empty() {
            return None;
        }
        let plan = self.gate.plan_agent()?;
        let searchable: Vec<&str> = self
            .gate
            .sources
            .iter()
            .filter(|(_, names)| !names.is_empty())
            .map(|(s, _)| s.as_str())
            .collect();
        if searchable.is_empty() {
            return None;
        }
        let quoted = |items: &[&str]| {
            items
                .iter()
                .map(|s| format!("`{s}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let chose: Vec<&str> = accepted.sources.iter().map(String::as_str).collect();
        let chose = if chose.is_empty() {
            "no source".to_string()
        } else {
            quoted(&chose)
        };
        Some(ToolCall {
            id: REASK_CALL_ID.to_string(),
            name: "task".to_string(),
            arguments: json!({
                "subagent_type": plan,
                "description": "Plan the task again",
                "prompt": format!(
                    "{}\n\n[runtime] Your plan chose {chose}, which this project cannot \
                     search; it can search {}. A question about what this project's code does \
                     or what it decided is answered from those: plan again with them, unless \
                     the answer can only come from live data.",
                    task.trim(),
                    quoted(&searchable),
                ),
            }),
        })
    }

    /// After a plan passed: the delegations to make next, filled in for a model to copy. For
    /// each source the plan chose, in its order, the first subagent that source opens (the
    /// gate's sources list them in the order of the work, locators first, then analyzers),
    /// passing over those in `skip` (they answered already, or broke their contract on this
    /// task; the identical call is refused), given the first path in `found` that a member of
    /// the same source found: a document a thoughts-locator listed goes to the thoughts-analyzer,
    /// a file the codebase-locator listed to the codebase-analyzer. A small model called the
    /// locator again and again once it had answered, never the analyzer it was meant to feed;
    /// and sent every path to the first analyzer named, a source file to the thoughts-analyzer.
    ///
    /// Before anything was found, one call: the first such subagent with the bare task. A path
    /// no source's subagent found (another agent's) goes, as before, to the first subagent.
    /// `found` is (path, the subagent that found it), in the order found.
    /// `None` before a plan, or when the plan opens no other subagent.
    pub fn next_delegation(
        &self,
        task: &str,
        correlation_id: &str,
        skip: &std::collections::BTreeSet<String>,
        found: &[(String, String)],
    ) -> Option<String> {
        let (calls, _) = self.next_calls(skip, found)?;
        Some(delegation_note(&calls, task, correlation_id))
    }

    /// The `task` arguments of [`Self::next_delegation`]'s calls that give a subagent a path
    /// its own source found (an analysis), for the runtime to make itself; empty when there are
    /// none. The fallback call is never one: it hands the first path found to the first open
    /// subagent, which may be a locator, and the runtime would then send a document path to a
    /// subagent that searches instead of one that reads.
    pub fn next_analyses(
        &self,
        task: &str,
        correlation_id: &str,
        skip: &std::collections::BTreeSet<String>,
        found: &[(String, String)],
    ) -> Vec<Value> {
        let Some((calls, false)) = self.next_calls(skip, found) else {
            return Vec::new();
        };
        calls
            .into_iter()
            .filter(|(_, path)| path.is_some())
            .map(|(agent, path)| task_arguments(&agent, path, task, correlation_id))
            .collect()
    }

    /// The subagents [`Self::next_delegation`] names, each with the path it is given if any,
    /// and whether they are the fallback (one call, no source's own find behind it).
    fn next_calls<'f>(
        &self,
        skip: &std::collections::BTreeSet<String>,
        found: &'f [(String, String)],
    ) -> Option<(Calls<'f>, bool)> {
        let accepted = self.accepted.as_ref()?;
        let lists = self.chosen_lists(accepted);
        let mut calls: Calls = Vec::new();
        for (_, list) in &lists {
            let Some(agent) = self.first_open(accepted, list, skip) else {
                continue;
            };
            let path = found
                .iter()
                .find(|(_, by)| list.iter().any(|n| n.name == *by))
                .map(|(p, _)| p.as_str());
            if let Some(path) = path {
                if !calls.iter().any(|(a, _)| *a == agent) {
                    calls.push((agent, Some(path)));
                }
            }
        }
        if calls.is_empty() {
            let agent = lists
                .iter()
                .find_map(|(_, l)| self.first_open(accepted, l, skip))?;
            calls.push((agent, found.first().map(|(p, _)| p.as_str())));
            return Some((calls, true));
        }
        Some((calls, false))
    }

    /// After an analysis verified: the delegations still owed to the sources the plan chose
    /// where a path was found and none of the source's subagents but its first (the one that
    /// finds) has answered yet, as in [`Self::next_delegation`]; `None` when every such source
    /// has been analyzed, or `verified` (Evidence items that verify) cites one of its paths.
    /// Why: told to write its report once one analysis held verified Evidence, the 1.5B
    /// researcher, its plan opening `doc` and `code`, sent only the code's file to an analyzer
    /// and was never shown the decision record its thoughts-locator had found.
    /// `answered` are the subagents that answered, `skip` those not to be named again, `found`
    /// as for [`Self::next_delegation`].
    pub fn unanalyzed_delegation(
        &self,
        task: &str,
        correlation_id: &str,
        skip: &std::collections::BTreeSet<String>,
        answered: &std::collections::BTreeSet<String>,
        found: &[(String, String)],
        verified: &[String],
    ) -> Option<String> {
        let accepted = self.accepted.as_ref()?;
        let mut calls: Vec<(String, Option<&str>)> = Vec::new();
        let mut owed: Vec<&str> = Vec::new();
        for (source, list) in self.chosen_lists(accepted) {
            let in_list = |name: &str| list.iter().any(|n| n.name == name);
            let Some((path, _)) = found.iter().find(|(_, by)| in_list(by)) else {
                continue;
            };
            // The gate lists a source's subagents in the order of the work: the first finds,
            // the others read what it found. Any of those others answering is an analysis.
            let finder = list.iter().map(|n| n.name.as_str()).find(|n| {
                !crate::agent::grants::BUILTIN_TOOLS.contains(n) && !self.is_plan_agent(n)
            });
            let analyzed = list
                .iter()
                .any(|n| answered.contains(&n.name) && Some(n.name.as_str()) != finder);
            // So is a verified Evidence item citing one of its finds (a locator that quoted it).
            let cited = found
                .iter()
                .filter(|(_, by)| in_list(by))
                .any(|(p, _)| verified.iter().any(|v| v.contains(&format!("`{p}:"))));
            if analyzed || cited {
                continue;
            }
            let Some(agent) = self.first_open(accepted, list, skip) else {
                continue;
            };
            if !calls.iter().any(|(a, _)| *a == agent) {
                calls.push((agent, Some(path.as_str())));
                owed.push(source);
            }
        }
        if calls.is_empty() {
            return None;
        }
        Some(format!(
            "Your plan's {} not analyzed yet: what was found there is still to be read. {}",
            match owed.as_slice() {
                [one] => format!("source `{one}` is"),
                many => format!(
                    "sources {} are",
                    many.iter()
                        .map(|s| format!("`{s}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            },
            delegation_note(&calls, task, correlation_id)
        ))
    }

    /// The subagent lists of the sources `accepted` chose, in its order, with their names.
    fn chosen_lists<'a>(&'a self, accepted: &'a Accepted) -> Vec<(&'a str, &'a Vec<GateName>)> {
        accepted
            .sources
            .iter()
            .filter_map(|s| self.gate.sources.get(s).map(|l| (s.as_str(), l)))
            .collect()
    }

    /// For each source the plan chose, in its order: its finder (its first subagent) and its
    /// reader (the next one that may be delegated to now and is not in `skip`), when it has
    /// both. The gate lists a source's subagents in the order of the work.
    ///
    /// Why: the 1.5B researcher handed "Read `thoughts/shared/decisions/…md` and
    /// `src/model/local/template.rs`" to the thoughts-locator, which searched for 17 minutes
    /// and read nothing (t4, stop 55); it sent a path to a locator where an analyzer was owed
    /// in other sessions too (t1, t3). The runtime gives such a task to a reader
    /// (`HopState::reader_for`).
    pub fn readers(&self, skip: &std::collections::BTreeSet<String>) -> Vec<(String, String)> {
        let Some(accepted) = self.accepted.as_ref() else {
            return Vec::new();
        };
        let is_agent =
            |n: &str| !crate::agent::grants::BUILTIN_TOOLS.contains(&n) && !self.is_plan_agent(n);
        self.chosen_lists(accepted)
            .into_iter()
            .filter_map(|(_, list)| {
                let mut agents = list.iter().map(|n| n.name.as_str()).filter(|n| is_agent(n));
                let finder = agents.next()?;
                let reader =
                    agents.find(|n| accepted.allowed.contains(*n) && !skip.contains(*n))?;
                Some((finder.to_string(), reader.to_string()))
            })
            .collect()
    }

    /// The first subagent of `list` that may be delegated to now and is not in `skip`.
    fn first_open(
        &self,
        accepted: &Accepted,
        list: &[GateName],
        skip: &std::collections::BTreeSet<String>,
    ) -> Option<String> {
        list.iter()
            .map(|n| n.name.as_str())
            .find(|n| {
                accepted.allowed.contains(*n)
                    && !crate::agent::grants::BUILTIN_TOOLS.contains(n)
                    && !self.is_plan_agent(n)
                    && !skip.contains(*n)
            })
            .map(str::to_string)
    }

    /// What the gate opens now, as a key: a call refused under one state may pass under the
    /// next (the hop's memory of failed calls is keyed by it).
    pub fn state_key(&self) -> String {
        match &self.accepted {
            None => "no plan".to_string(),
            Some(a) => a.allowed.iter().cloned().collect::<Vec<_>>().join(","),
        }
    }

    #[cfg(test)]
    pub fn accepted(&self) -> Option<&Accepted> {
        self.accepted.as_ref()
    }

    /// Says whether a call may run. `tool` is the canonical tool name, `target` the subagent of
    /// a `task` call, `mcp` whether the tool comes from an MCP server (all of which read
    /// something the gate cannot see into, so they count as retrieval).
    pub fn admit(&self, tool: &str, target: Option<&str>, mcp: bool) -> Admission {
        if tool == PLAN_TOOL {
            return Admission::Open;
        }
        let name = match (tool, target) {
            ("task", Some(t)) if self.is_plan_agent(t) => return Admission::Open,
            ("task", Some(t)) => t,
            // A task call without a target is refused by dispatch with the right words.
            ("task", None) => return Admission::Open,
            (t, _) => t,
        };
        let retrieval = tool == "task"
            || mcp
            || is_retrieval_tool(name)
            || self.gate.gated_names().any(|n| n == name);
        if !retrieval {
            return Admission::Open;
        }
        let what = if tool == "task" {
            format!("delegating to `{name}`")
        } else {
            format!("`{name}`")
        };
        let Some(accepted) = &self.accepted else {
            let first = match self.gate.plan_agent() {
                Some(a) => format!(
                    "delegate to `{a}` first (task with subagent_type `{a}`; its validated \
                     answer becomes the plan) or submit a plan yourself with the `{PLAN_TOOL}` tool"
                ),
                None => format!("submit a plan first with the `{PLAN_TOOL}` tool"),
            };
            return Admission::Refused(format!(
                "the gate of `{}` refuses {what}: no retrieval before a validated plan. {first}; \
                 the plan's `{}` then decides which tools and subagents open.",
                self.agent,
                self.gate.sources_field.trim_start_matches('/'),
            ));
        };
        if accepted.allowed.contains(name) {
            return Admission::Open;
        }
        let opening = self.gate.sources_opening(name);
        let belongs = if opening.is_empty() {
            "no source of this gate opens it".to_string()
        } else {
            format!("only source(s) {} open it", opening.join(", "))
        };
        Admission::Refused(format!(
            "the gate of `{}` refuses {what}: the validated plan chose source(s) {}, and {belongs}. \
             Open now: {}.",
            self.agent,
            list_or_none(&accepted.sources),
            list_or_none(&accepted.allowed.iter().cloned().collect::<Vec<_>>()),
        ))
    }

    /// Judges `text` as the plan. On success the plan is accepted (replacing an earlier one);
    /// on failure the error is what the model must fix, in the contract's own words.
    pub fn submit(&mut self, text: &str, project: &Project) -> Result<Accepted, PlanRejected> {
        let check = check_json_detailed(text, &self.contract, project);
        if !check.report.is_conformant() {
            return Err(PlanRejected::Contract {
                contract: self.contract.name.clone(),
                repair: check.report.repair_prompt(),
            });
        }
        let plan = check.value.unwrap_or(Value::Null);
        let sources: Vec<String> = match plan.pointer(&self.gate.sources_field) {
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect(),
            Some(Value::String(one)) => vec![one.clone()],
            _ => {
                return Err(PlanRejected::NoSources {
                    contract: self.contract.name.clone(),
                    field: self.gate.sources_field.clone(),
                })
            }
        };
        let allowed = sources
            .iter()
            .filter_map(|s| self.gate.sources.get(s))
            .flatten()
            .map(|n| n.name.clone())
            .collect();
        let accepted = Accepted {
            plan,
            contract: self.contract.name.clone(),
            sources,
            allowed,
            question: check.question,
        };
        self.accepted = Some(accepted.clone());
        Ok(accepted)
    }
}

/// What the model reads after its plan passed: the plan itself and what it opened. It is the
/// tool result, so it stays in the conversation every later turn sends: the plan is in each
/// later prompt without touching the system prompt, whose stable prefix providers cache.
pub(crate) fn accepted_note(a: &Accepted) -> String {
    let plan = serde_json::to_string_pretty(&a.plan).unwrap_or_default();
    let mut note = format!(
        "Plan accepted (contract `{}`): sources {}. You may now use: {}. Retrieval follows \
         this validated plan:\n```json\n{plan}\n```",
        a.contract,
        list_or_none(&a.sources),
        list_or_none(&a.allowed.iter().cloned().collect::<Vec<_>>()),
    );
    if a.allowed.is_empty() {
        // A plan whose sources this project cannot search (`db`, `neo4j`): planning again gives
        // the same plan, so say what is left to do.
        note.push_str(
            " This plan opens nothing here: the project cannot search its sources. Do not plan \
             again; finish with what the plan allows: if you owe a document, write it saying \
             that the question needs sources this project does not have (`findings: none`).",
        );
    }
    if let Some(q) = &a.question {
        note.push_str(&format!(
            " The plan asks a question: \"{q}\". If you cannot go on without its answer, say so \
             in your final answer."
        ));
    }
    note
}

fn list_or_none(items: &[String]) -> String {
    if items.is_empty() {
        "none".into()
    } else {
        items.join(", ")
    }
}

/// The `task` arguments that give `agent` the task, and `path` to read when there is one.
fn task_arguments(agent: &str, path: Option<&str>, task: &str, correlation_id: &str) -> Value {
    // One path a call: an analysis covers one document, and three named at once had the
    // analyzer read all three into a context they overflowed.
    let (description, prompt) = match path {
        None => ("Find what answers the task", task.trim().to_string()),
        Some(path) => (
            "Read what was found",
            format!("{} Read `{path}`.", task.trim()),
        ),
    };
    json!({
        "subagent_type": agent,
        "description": description,
        "prompt": format!("{prompt} Correlation: {correlation_id}"),
    })
}

/// The note that asks for `calls` (a subagent, and the path it is given if any), each a `task`
/// call filled in for a model to copy.
fn delegation_note(calls: &[(String, Option<&str>)], task: &str, correlation_id: &str) -> String {
    let calls: Vec<String> = calls
        .iter()
        .map(|(agent, path)| task_arguments(agent, *path, task, correlation_id).to_string())
        .collect();
    let what = match calls.as_slice() {
        [one] => format!("call the `task` tool with {one}"),
        many => format!(
            "call the `task` tool {} times in one turn, with {}",
            many.len(),
            many.join(", and with ")
        ),
    };
    format!(
        "Next, delegate: {what}. Your answer must come from what your subagents find, never \
         from memory."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(files: &[(&str, &str)]) -> (tempfile::TempDir, Project, AgentSet) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("agent")).unwrap();
        for (name, text) in files {
            std::fs::write(dir.path().join("agent").join(format!("{name}.md")), text).unwrap();
        }
        let project = Project::open(dir.path()).unwrap();
        let set = crate::agent::load(&project, &crate::agent::LoadOptions::default());
        (dir, project, set)
    }

    const PLANNER: &str = "---\ndescription: plans\nmode: subagent\ncontract:\n  format: json\n  \
        schema:\n    type: object\n    required: [sources]\n    properties:\n      sources: \
        {type: array, items: {enum: [doc, code]}}\n---\nPlan.\n";
    const LEAD: &str = "---\ndescription: leads\nmode: primary\ngate:\n  plan: planner\n  \
        sources_field: /sources\n  sources:\n    doc: [finder, read]\n    code: [grep]\n---\nLead.\n";

    fn gate() -> (tempfile::TempDir, Project, PlanGate) {
        let (dir, project, set) = set(&[("planner", PLANNER), ("lead", LEAD)]);
        let lead = set.get("lead").expect("lead loads");
        let gate = PlanGate::new(lead, &set).unwrap().expect("lead is gated");
        (dir, project, gate)
    }

    #[test]
    fn before_a_plan_retrieval_and_delegation_are_refused_but_planning_is_open() {
        let (_d, _p, g) = gate();
        assert_eq!(g.admit("task", Some("planner"), false), Admission::Open);
        assert_eq!(g.admit(PLAN_TOOL, None, false), Admission::Open);
        assert_eq!(g.admit("write", None, false), Admission::Open);
        for (tool, target, mcp) in [
            ("read", None, false),
            ("grep", None, false),
            ("webfetch", None, false),
            ("task", Some("finder"), false),
            ("task", Some("anyone"), false),
            ("srv_query", None, true),
        ] {
            let Admission::Refused(why) = g.admit(tool, target, mcp) else {
                panic!("{tool} {target:?} should be refused before the plan");
            };
            assert!(
                why.contains("no retrieval before a validated plan"),
                "{why}"
            );
            assert!(why.contains("delegate to `planner` first"), "{why}");
        }
    }

    /// [`gate`] with subagents `finder` and `reader`, its `doc` source listed as `doc`.
    fn finder_reader_gate(doc: &str) -> (tempfile::TempDir, Project, PlanGate) {
        let sub = "---\ndescription: d\nmode: subagent\n---\nS.\n";
        let lead = LEAD.replace("doc: [finder, read]", doc);
        let (d, project, set) = set(&[
            ("planner", PLANNER),
            ("lead", &lead),
            ("finder", sub),
            ("reader", sub),
        ]);
        let g = PlanGate::new(set.get("lead").unwrap(), &set)
            .unwrap()
            .unwrap();
        (d, project, g)
    }

    #[test]
    fn the_next_delegation_passes_over_subagents_done_with_and_names_what_was_found() {
        let (_d, project, mut g) = finder_reader_gate("doc: [finder, reader, read]");
        let mut blocked = std::collections::BTreeSet::new();
        assert_eq!(
            g.next_delegation("q", "c", &blocked, &[]),
            None,
            "no plan yet"
        );
        g.submit(r#"{"sources": ["doc"]}"#, &project).unwrap();
        let next = g.next_delegation("q", "c", &blocked, &[]).unwrap();
        assert!(next.contains(r#""subagent_type":"finder""#), "{next}");
        assert!(next.contains(r#""prompt":"q Correlation: c""#), "{next}");
        blocked.insert("finder".to_string());
        let next = g.next_delegation("q", "c", &blocked, &[]).unwrap();
        assert!(next.contains(r#""subagent_type":"reader""#), "{next}");
        blocked.insert("reader".to_string());
        assert_eq!(g.next_delegation("q", "c", &blocked, &[]), None);
        // With what an earlier subagent found, the prompt names it.
        blocked.remove("reader");
        let found = [("docs/a.md".to_string(), "finder".to_string())];
        let next = g.next_delegation("q", "c", &blocked, &found).unwrap();
        assert!(
            next.contains(r#""prompt":"q Read `docs/a.md`. Correlation: c""#),
            "{next}"
        );
    }

    /// A task for a source's finder goes to the source's next subagent, unless it is done with.
    #[test]
    fn a_source_s_reader_is_the_subagent_after_its_finder() {
        let (_d, project, mut g) = finder_reader_gate("doc: [finder, read, reader]");
        let none = std::collections::BTreeSet::new();
        assert!(g.readers(&none).is_empty(), "no plan yet");
        g.submit(r#"{"sources": ["doc"]}"#, &project).unwrap();
        let pair = ("finder".to_string(), "reader".to_string());
        assert_eq!(g.readers(&none), [pair]);
        // A reader done with leaves its finder none.
        let blocked = std::collections::BTreeSet::from(["reader".to_string()]);
        assert!(g.readers(&blocked).is_empty());
    }

    /// A gate over `doc` (finder, then reader) and `code` (seeker, then studier) whose plan
    /// chose both.
    fn two_source_gate() -> (tempfile::TempDir, PlanGate) {
        let sub = "---\ndescription: d\nmode: subagent\n---\nS.\n";
        let lead = LEAD.replace(
            "doc: [finder, read]\n    code: [grep]",
            "doc: [finder, reader, read]\n    code: [seeker, studier, read]",
        );
        assert_ne!(lead, LEAD);
        let (d, project, set) = set(&[
            ("planner", PLANNER),
            ("lead", &lead),
            ("finder", sub),
            ("reader", sub),
            ("seeker", sub),
            ("studier", sub),
        ]);
        let mut g = PlanGate::new(set.get("lead").unwrap(), &set)
            .unwrap()
            .unwrap();
        g.submit(r#"{"sources": ["doc", "code"]}"#, &project)
            .unwrap();
        (d, g)
    }

    #[test]
    fn each_source_s_finds_go_to_that_source_s_next_subagent() {
        let (_d, g) = two_source_gate();
        let done: BTreeSet<String> = ["finder", "seeker"].map(String::from).into();
        let found = [
            ("thoughts/a.md".to_string(), "finder".to_string()),
            ("thoughts/b.md".to_string(), "finder".to_string()),
            ("src/retry.rs".to_string(), "seeker".to_string()),
        ];
        let next = g.next_delegation("q", "c", &done, &found).unwrap();
        assert!(next.contains("2 times in one turn"), "{next}");
        assert!(
            next.contains(
                r#"{"description":"Read what was found","prompt":"q Read `thoughts/a.md`. Correlation: c","subagent_type":"reader"}, and with {"description":"Read what was found","prompt":"q Read `src/retry.rs`. Correlation: c","subagent_type":"studier"}"#
            ),
            "{next}"
        );
        // Only the code locator found something: one call, to the code's analyzer.
        let next = g.next_delegation("q", "c", &done, &found[2..]).unwrap();
        assert!(next.contains(r#""subagent_type":"studier""#), "{next}");
        assert!(
            !next.contains("reader") && !next.contains("times"),
            "{next}"
        );
        // A path no source's subagent found goes to the first subagent, as one call.
        let other = [("src/x.rs".to_string(), "someone".to_string())];
        let next = g.next_delegation("q", "c", &done, &other).unwrap();
        assert!(
            next.contains(
                r#""prompt":"q Read `src/x.rs`. Correlation: c","subagent_type":"reader""#
            ),
            "{next}"
        );
        // The runtime makes the analyses its own sources found, and never that fallback: with
        // no locator done with, it would send the path to `finder`, which searches.
        let made = g.next_analyses("q", "c", &done, &found);
        let agents: Vec<&str> = made
            .iter()
            .filter_map(|a| a["subagent_type"].as_str())
            .collect();
        assert_eq!(agents, ["reader", "studier"]);
        assert!(g.next_analyses("q", "c", &done, &other).is_empty());
        let none_done = BTreeSet::new();
        let next = g.next_delegation("q", "c", &none_done, &other).unwrap();
        assert!(next.contains(r#""subagent_type":"finder""#), "{next}");
        assert!(g.next_analyses("q", "c", &none_done, &other).is_empty());
    }

    #[test]
    fn a_source_whose_finds_no_other_subagent_read_is_still_owed() {
        let (_d, g) = two_source_gate();
        let names = |n: &[&str]| -> BTreeSet<String> { n.iter().map(|s| s.to_string()).collect() };
        // Both finders answered; the code's analyzer read its file (and named it in turn).
        let answered = names(&["finder", "seeker", "studier"]);
        let found = [
            ("thoughts/a.md".to_string(), "finder".to_string()),
            ("src/retry.rs".to_string(), "seeker".to_string()),
            ("src/retry.rs".to_string(), "studier".to_string()),
        ];
        let owed = g
            .unanalyzed_delegation("q", "c", &answered, &answered, &found, &[])
            .unwrap();
        assert!(
            owed.starts_with("Your plan's source `doc` is not analyzed yet"),
            "{owed}"
        );
        assert!(
            owed.contains(
                r#""prompt":"q Read `thoughts/a.md`. Correlation: c","subagent_type":"reader""#
            ),
            "{owed}"
        );
        assert!(
            !owed.contains("studier") && !owed.contains("times"),
            "{owed}"
        );
        // Once the document's reader answered too, nothing is owed.
        let all = names(&["finder", "seeker", "studier", "reader"]);
        assert_eq!(
            g.unanalyzed_delegation("q", "c", &all, &all, &found, &[]),
            None
        );
        // A source where nothing was found owes nothing; both unread: one call each.
        let finders = names(&["finder", "seeker"]);
        assert_eq!(
            g.unanalyzed_delegation("q", "c", &finders, &finders, &found[..0], &[]),
            None
        );
        let both = g
            .unanalyzed_delegation("q", "c", &finders, &finders, &found[..2], &[])
            .unwrap();
        assert!(both.contains("sources `doc`, `code` are"), "{both}");
        assert!(both.contains("2 times in one turn"), "{both}");
        // A verified item citing the document is its analysis (a finder that quoted it).
        let quoted = ["### The parser\n- **Evidence**: `thoughts/a.md:3`".to_string()];
        assert_eq!(
            g.unanalyzed_delegation("q", "c", &answered, &answered, &found, &quoted),
            None
        );
        // A reader that ended BLOCKED is not named again: nothing else reads documents.
        let blocked = names(&["finder", "seeker", "studier", "reader"]);
        assert_eq!(
            g.unanalyzed_delegation("q", "c", &blocked, &answered, &found, &[]),
            None
        );
    }

    #[test]
    fn a_plan_opens_exactly_its_sources() {
        let (_d, project, mut g) = gate();
        let a = g.submit(r#"{"sources": ["doc"]}"#, &project).unwrap();
        assert_eq!(a.sources, vec!["doc"]);
        assert_eq!(g.admit("task", Some("finder"), false), Admission::Open);
        assert_eq!(g.admit("read", None, false), Admission::Open);
        let Admission::Refused(why) = g.admit("grep", None, false) else {
            panic!("grep belongs to code, which the plan did not choose");
        };
        assert!(why.contains("only source(s) code open it"), "{why}");
        assert!(why.contains("Open now: finder, read"), "{why}");
        // A retrieval tool no source names stays closed after the plan too.
        let Admission::Refused(why) = g.admit("glob", None, false) else {
            panic!("glob is opened by no source");
        };
        assert!(why.contains("no source of this gate opens it"), "{why}");
        assert!(
            accepted_note(&a).contains("\"sources\": ["),
            "{}",
            accepted_note(&a)
        );
    }

    #[test]
    fn an_invalid_plan_is_refused_in_the_contracts_words_and_opens_nothing() {
        let (_d, project, mut g) = gate();
        let why = g
            .submit(r#"{"sources": ["db"]}"#, &project)
            .unwrap_err()
            .to_string();
        assert!(why.contains("does not pass contract"), "{why}");
        assert!(why.contains("/sources/0"), "{why}");
        assert!(g.accepted().is_none());
        assert!(matches!(
            g.admit("read", None, false),
            Admission::Refused(_)
        ));
        let why = g.submit("not json", &project).unwrap_err().to_string();
        assert!(why.contains("does not pass contract"), "{why}");
    }

    #[test]
    fn a_runtime_plan_that_opens_nothing_is_asked_again_naming_what_can_be_searched() {
        let planner = PLANNER.replace("enum: [doc, code]", "enum: [db, doc, code]");
        let lead = LEAD.replace(
            "sources_field: /sources",
            "sources_field: /sources\n  ask: runtime",
        );
        let (_d, project, agents) = set(&[("planner", planner.as_str()), ("lead", lead.as_str())]);
        let mut g = PlanGate::new(agents.get("lead").unwrap(), &agents)
            .unwrap()
            .unwrap();
        assert!(g.reask("q").is_none(), "no plan yet");
        let a = g.submit(r#"{"sources": ["db"]}"#, &project).unwrap();
        assert!(a.allowed.is_empty());
        let call = g
            .reask("How many turns?")
            .expect("a plan that opens nothing is asked again");
        assert_eq!(call.id, REASK_CALL_ID);
        assert_eq!(call.arguments["subagent_type"], "planner");
        let prompt = call.arguments["prompt"].as_str().unwrap();
        assert!(
            prompt.starts_with("How many turns?\n\n[runtime] "),
            "{prompt}"
        );
        assert!(prompt.contains("Your plan chose `db`"), "{prompt}");
        assert!(prompt.contains("it can search `code`, `doc`"), "{prompt}");
        // A plan that opens something stands.
        g.submit(r#"{"sources": ["code"]}"#, &project).unwrap();
        assert!(g.reask("q").is_none());
        // Asked by the model, the plan note says what to do; the runtime does not ask.
        let (_d, project, agents) = set(&[("planner", planner.as_str()), ("lead", LEAD)]);
        let mut g = PlanGate::new(agents.get("lead").unwrap(), &agents)
            .unwrap()
            .unwrap();
        g.submit(r#"{"sources": ["db"]}"#, &project).unwrap();
        assert!(g.reask("q").is_none());
    }

    #[test]
    fn every_built_in_tool_but_write_and_task_is_retrieval() {
        let retrieval: Vec<&str> = crate::agent::grants::BUILTIN_TOOLS
            .iter()
            .copied()
            .filter(|t| is_retrieval_tool(t))
            .collect();
        assert_eq!(
            retrieval,
            [
                "read",
                "list",
                "glob",
                "grep",
                "webfetch",
                "websearch",
                "analyze_file",
                "recall"
            ]
        );
    }

    #[test]
    fn a_plan_agent_that_owes_no_json_cannot_gate() {
        let plain = "---\ndescription: plans\nmode: subagent\n---\nPlan.\n";
        let (_d, _p, set) = set(&[("planner", plain), ("lead", LEAD)]);
        let lead = set.get("lead").unwrap();
        assert!(matches!(
            PlanGate::new(lead, &set),
            Err(GateSetupError::PlanAgentNotJson { .. })
        ));
    }
}
