//! Rules for `gate:` declarations (docs/gate.md), which need the whole agent set: the agent that
//! plans must exist and owe JSON, and every tool or subagent a source opens must be something
//! the gated agent can actually use, or the gate would open a door that is not there. Findings
//! point at the name in the frontmatter.

use crate::agent::gate::{Gate, GateName, PlanFrom};
use crate::agent::grants::{BUILTIN_TOOLS, FOREIGN_TOOLS};
use crate::agent::{policy, Agent, AgentSet};
use crate::contract::{Contract, SchemaSource};
use crate::problem::{nearest, Problem, Severity};
use crate::project::Project;

pub fn check(project: &Project, set: &AgentSet, out: &mut Vec<Problem>) {
    for agent in set.iter() {
        let Some(gate) = &agent.gate else {
            continue;
        };
        let text = super::agent_text(project, agent);
        let place = |d: Problem, at: (usize, usize)| super::place(&text, d, at);
        let contract = plan_contract(agent, gate, set, out, &place);
        for (source, names) in &gate.sources {
            for name in names {
                if let Some(d) = judge_name(agent, set, source, name) {
                    out.push(place(d, (name.line, name.col)));
                }
            }
        }
        if let Some(choosable) = contract.and_then(|c| choosable_sources(c, &gate.sources_field)) {
            for source in gate.sources.keys() {
                if !choosable.iter().any(|c| c == source) {
                    let at = gate.sources[source]
                        .first()
                        .map_or(gate.plan_at, |n| (n.line, 1));
                    out.push(place(
                        Problem::new(
                            Severity::Warning,
                            "gate/source-never-chosen",
                            &agent.file,
                            format!(
                                "source `{source}` can never be chosen: the plan's schema allows \
                                 only {} at `{}`",
                                choosable.join(", "),
                                gate.sources_field
                            ),
                        )
                        .with_help("rename the source to one the plan can choose, or add it to the plan's schema"),
                        at,
                    ));
                }
            }
        }
    }
}

/// The plan's contract, reporting a planning agent that is missing or owes no JSON.
fn plan_contract<'a>(
    agent: &Agent,
    gate: &'a Gate,
    set: &'a AgentSet,
    out: &mut Vec<Problem>,
    place: &dyn Fn(Problem, (usize, usize)) -> Problem,
) -> Option<&'a Contract> {
    let name = match &gate.plan {
        PlanFrom::Contract(c) => return Some(c),
        PlanFrom::Agent(name) => name,
    };
    let Some(planner) = set.get(name) else {
        let names = set.iter().map(|a| a.name.as_str());
        out.push(place(
            Problem::new(
                Severity::Error,
                "gate/unknown-plan-agent",
                &agent.file,
                format!("the gate of `{}` names `{name}` as the agent that plans, but there is no such agent", agent.name),
            )
            .with_help(match nearest(name, names) {
                Some(n) => format!("did you mean `{n}`?"),
                None => "name an agent whose contract is `format: json`, or write the plan's contract inline".into(),
            }),
            gate.plan_at,
        ));
        return None;
    };
    match planner.contract.as_ref().filter(|c| c.json.is_some()) {
        Some(c) => Some(c),
        None => {
            out.push(place(
                Problem::new(
                    Severity::Error,
                    "gate/plan-not-json",
                    &agent.file,
                    format!(
                        "the gate of `{}` takes its plan from `{name}`, whose answers owe no \
                         `format: json` contract; the runtime refuses to start it",
                        agent.name
                    ),
                )
                .with_help(format!(
                    "give `{name}` a `format: json` contract with a schema, or write the plan's contract inline"
                )),
                gate.plan_at,
            ));
            None
        }
    }
}

/// What is wrong with one name a source opens, if anything.
fn judge_name(agent: &Agent, set: &AgentSet, source: &str, name: &GateName) -> Option<Problem> {
    let n = name.name.as_str();
    let is_tool = BUILTIN_TOOLS.contains(&n) || FOREIGN_TOOLS.contains(&n) || n.contains('_');
    let not_usable = |message: String, help: String| {
        Some(
            Problem::new(Severity::Warning, "gate/not-usable", &agent.file, message)
                .with_help(help),
        )
    };
    if set.get(n).is_some() {
        let refusals = policy::refusals(set.by_name(), agent, n, None);
        let first = refusals.first()?;
        return not_usable(
            format!(
                "source `{source}` opens delegating to `{n}`, but the runtime would refuse it: \
                 {first}"
            ),
            "allow the delegation (tools: task, permission) or remove the name from the source"
                .into(),
        );
    }
    if !is_tool {
        let candidates = set
            .iter()
            .map(|a| a.name.as_str())
            .chain(BUILTIN_TOOLS.iter().copied());
        return Some(
            Problem::new(
                Severity::Error,
                "gate/unknown-name",
                &agent.file,
                format!("source `{source}` opens `{n}`, which is neither an agent nor a tool"),
            )
            .with_help(match nearest(n, candidates) {
                Some(s) => format!("did you mean `{s}`?"),
                None => format!(
                    "name an agent, or one of the tools: {}",
                    BUILTIN_TOOLS.join(", ")
                ),
            }),
        );
    }
    if !agent.tools.allows(n) || agent.permission.refuses_tool(n) {
        return not_usable(
            format!(
                "source `{source}` opens `{n}`, but `{}` is not granted `{n}`; the plan can open \
                 it, the agent still cannot call it",
                agent.name
            ),
            format!("grant `{n}` under `tools:` or remove it from the source"),
        );
    }
    None
}

/// The values the plan's schema allows at `field` (a one-segment pointer to an array of enum
/// items, or to an enum), when the schema says so inline; `None` when it cannot be told.
fn choosable_sources(contract: &Contract, field: &str) -> Option<Vec<String>> {
    let SchemaSource::Inline(schema) = &contract.json.as_ref()?.schema else {
        return None;
    };
    let key = field.strip_prefix('/')?;
    if key.contains('/') {
        return None;
    }
    let property = schema.get("properties")?.get(key)?;
    let values = property
        .get("items")
        .and_then(|i| i.get("enum"))
        .or_else(|| property.get("enum"))?
        .as_array()?;
    Some(
        values
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
    )
}
