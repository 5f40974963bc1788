//! Delegation-graph rules: who may call whom (each edge judged by the delegation policy,
//! [`crate::agent::policy`]), and whether the graph holds together.

use std::collections::{BTreeMap, BTreeSet};

use crate::agent::policy::{self, Refusal};
use crate::agent::{Action, Agent, AgentSet, DelegationRef};
use crate::problem::{nearest, Problem, Severity};

/// An edge of the delegation graph: `from` mentions `to` at `reference`.
#[derive(Debug, Clone)]
pub struct Edge<'a> {
    pub from: &'a Agent,
    pub to: &'a str,
    pub reference: &'a DelegationRef,
}

impl Edge<'_> {
    /// Every reason the runtime would refuse this delegation, as the delegation policy decides
    /// it statically (no chain, no depth): lint reports each, `graph` marks the edge.
    pub fn refusals(&self, set: &AgentSet) -> Vec<Refusal> {
        policy::refusals(set.by_name(), self.from, self.to, None)
    }
}

/// Every delegation reference, as edges (duplicates of one pair kept: each has its own line).
pub fn edges(set: &AgentSet) -> Vec<Edge<'_>> {
    set.iter()
        .flat_map(|a| {
            a.references.iter().map(move |r| Edge {
                from: a,
                to: r.target.as_str(),
                reference: r,
            })
        })
        .collect()
}

fn at(agent: &Agent, r: &DelegationRef, d: Problem) -> Problem {
    let mut d = d.at(r.line, r.column);
    d.source_line = agent
        .body
        .lines()
        .nth(r.line.saturating_sub(agent.body_line))
        .map(|l| l.trim_end_matches('\r').to_string());
    d
}

pub fn check(set: &AgentSet, out: &mut Vec<Problem>) {
    let names: Vec<&str> = set.iter().map(|a| a.name.as_str()).collect();
    let mut reported_tool: BTreeSet<&str> = BTreeSet::new();
    for e in edges(set) {
        let (from, r) = (e.from, e.reference);
        for refusal in e.refusals(set) {
            let (message, help) = match &refusal {
                Refusal::UnknownAgent { .. } => (
                    format!(
                        "`{}` delegates to `{}`, which is not an agent",
                        from.name, e.to
                    ),
                    match nearest(e.to, names.iter().copied()) {
                        Some(n) => format!("did you mean `{n}`?"),
                        None => format!("known agents: {}", names.join(", ")),
                    },
                ),
                Refusal::PrimaryOnly(_) => (
                    format!("`{}` is a primary agent and cannot be delegated to", e.to),
                    format!(
                        "set `mode: subagent` or `mode: all` in {}",
                        target_file(set, e.to)
                    ),
                ),
                Refusal::Disabled(_) => (
                    format!(
                        "`{}` delegates to `{}`, which is disabled (the runtime refuses the call)",
                        from.name, e.to
                    ),
                    format!(
                        "remove `disable: true` from {}, or remove the delegation",
                        target_file(set, e.to)
                    ),
                ),
                Refusal::NotGranted(_) => {
                    if !reported_tool.insert(from.name.as_str()) {
                        continue;
                    }
                    (
                        format!(
                            "`{}` delegates but is not granted the `task` tool",
                            from.name
                        ),
                        "add `task: true` under `tools:`, or remove the delegation".into(),
                    )
                }
                Refusal::Denied { action, .. } => (
                    format!(
                        "`{}` delegates to `{}`, but its `permission.task` says {}",
                        from.name,
                        e.to,
                        if *action == Action::Ask {
                            "ask (refused: sessions run unattended)"
                        } else {
                            "deny"
                        }
                    ),
                    format!("allow `{}` under `permission: task:`", e.to),
                ),
                // Statically only a delegation to oneself; longer cycles are `cycles`' finding.
                Refusal::Cycle { chain, .. } => {
                    (format!("delegation cycle: {chain}"), CYCLE_HELP.into())
                }
                // Not decided statically; the runtime's own text says it.
                Refusal::TooDeep { .. } | Refusal::BadArguments(_) => {
                    (refusal.to_string(), String::new())
                }
            };
            let mut d = Problem::new(Severity::Error, refusal.code(), &from.file, message);
            if !help.is_empty() {
                d = d.with_help(help);
            }
            out.push(at(from, r, d));
        }
    }
    cycles(set, out);
    reachability(set, out);
    validators(set, out);
    delegate_firsts(set, out);
}

const CYCLE_HELP: &str =
    "the runtime refuses a call to an agent already in its chain; break the cycle";

/// The file defining `name`, for help texts.
fn target_file<'a>(set: &'a AgentSet, name: &str) -> &'a str {
    set.get(name).map_or("", |a| a.file.as_str())
}

/// `delegation/cycle`: an agent that can reach itself through other agents.
fn cycles(set: &AgentSet, out: &mut Vec<Problem>) {
    let graph = adjacency(set);
    let mut reported: BTreeSet<Vec<&str>> = BTreeSet::new();
    for start in graph.keys().copied() {
        // Depth-first search for a path back to `start`.
        let mut stack: Vec<(&str, Vec<&str>)> = vec![(start, vec![start])];
        let mut seen: BTreeSet<&str> = BTreeSet::new();
        while let Some((node, path)) = stack.pop() {
            for &next in graph.get(node).map(Vec::as_slice).unwrap_or(&[]) {
                // A delegation to oneself is refused per edge (see `check`).
                if next == start && path.len() > 1 {
                    let mut key = path.clone();
                    key.sort_unstable();
                    if reported.insert(key) {
                        let agent = set.get(start);
                        let mut cycle = path.clone();
                        cycle.push(start);
                        let file = agent.map_or(String::new(), |a| a.file.clone());
                        let mut d = Problem::new(
                            Severity::Error,
                            "delegation/cycle",
                            file,
                            format!("delegation cycle: {}", cycle.join(" → ")),
                        )
                        .with_help(CYCLE_HELP);
                        if let Some(r) = agent.and_then(|a| {
                            a.references
                                .iter()
                                .find(|r| r.target == path.get(1).copied().unwrap_or(start))
                        }) {
                            d = d.at(r.line, r.column);
                        }
                        out.push(d);
                    }
                } else if next != start && seen.insert(next) {
                    let mut p = path.clone();
                    p.push(next);
                    stack.push((next, p));
                }
            }
        }
    }
}

/// `delegation/orphan` and `delegation/unreachable`: subagents nothing calls, and agents no
/// primary can reach.
fn reachability(set: &AgentSet, out: &mut Vec<Problem>) {
    let graph = adjacency(set);
    let called: BTreeSet<&str> = graph.values().flatten().copied().collect();
    let mut reachable: BTreeSet<&str> = BTreeSet::new();
    let mut stack: Vec<&str> = set
        .iter()
        .filter(|a| a.mode.can_be_primary() && !a.disable)
        .map(|a| a.name.as_str())
        .collect();
    while let Some(n) = stack.pop() {
        if reachable.insert(n) {
            stack.extend(graph.get(n).into_iter().flatten().copied());
        }
    }
    // The runtime itself runs the analyzer (for `analyze_file` and `switchboard knowledge
    // analyze`): no delegation names it, and none has to.
    let by_runtime = |name: &str| name == crate::knowledge::ANALYZER_AGENT;
    for a in set.iter().filter(|a| !a.disable && !by_runtime(&a.name)) {
        if a.mode == crate::agent::Mode::Subagent && !called.contains(a.name.as_str()) {
            out.push(
                Problem::new(
                    Severity::Warning,
                    "delegation/orphan",
                    &a.file,
                    format!("subagent `{}` is never delegated to", a.name),
                )
                .with_help(
                    "mention it in a primary's delegation list or task() example, or remove it",
                ),
            );
        } else if !reachable.contains(a.name.as_str()) {
            out.push(Problem::new(
                Severity::Warning,
                "delegation/unreachable",
                &a.file,
                format!("`{}` cannot be reached from any primary agent", a.name),
            ));
        }
    }
}

/// `delegation/missing-validator`: a `validator:` that names no agent the runtime could run as
/// one (unknown, primary-only, or disabled): every answer of the worker would end BLOCKED.
fn validators(set: &AgentSet, out: &mut Vec<Problem>) {
    for a in set.iter().filter(|a| !a.disable) {
        let Some(v) = &a.validator else { continue };
        let why = match set.get(v) {
            None => "names no agent of this project",
            Some(t) if t.disable => "names a disabled agent",
            Some(t) if t.mode == crate::agent::Mode::Primary => "names a primary-only agent",
            Some(_) => continue,
        };
        out.push(
            Problem::new(
                Severity::Error,
                "delegation/missing-validator",
                &a.file,
                format!("`validator: {v}` of `{}` {why}", a.name),
            )
            .with_help(
                "name an existing subagent that answers a verdict JSON, or remove `validator:`; \
                 until then every answer of this agent ends BLOCKED",
            ),
        );
    }
}

/// `delegation/delegate-first-refused`: a `delegate_first:` the runtime would refuse (an
/// unknown, primary-only or disabled agent, or one the agent's permission denies): the
/// runtime's first call of every session would be a tool error.
fn delegate_firsts(set: &AgentSet, out: &mut Vec<Problem>) {
    for a in set.iter().filter(|a| !a.disable) {
        for target in &a.delegate_first {
            if let Some(refusal) = policy::refusals(set.by_name(), a, target, None)
                .into_iter()
                .next()
            {
                out.push(
                    Problem::new(
                        Severity::Error,
                        "delegation/delegate-first-refused",
                        &a.file,
                        format!(
                            "`delegate_first: {target}` of `{}` would be refused: {refusal}",
                            a.name
                        ),
                    )
                    .with_help(
                        "name a subagent this agent may delegate to (see `permission.task`), or \
                     remove `delegate_first:`",
                    ),
                );
            }
        }
    }
}

/// name → names it may delegate to (existing targets only); a worker's `validator:` and an
/// agent's `delegate_first:` count as delegations, because the runtime runs them as its children.
pub fn adjacency(set: &AgentSet) -> BTreeMap<&str, Vec<&str>> {
    let mut graph: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for a in set.iter() {
        let entry = graph.entry(a.name.as_str()).or_default();
        let targets = a
            .references
            .iter()
            .map(|r| r.target.as_str())
            .chain(a.validator.as_deref())
            .chain(a.delegate_first.iter().map(String::as_str));
        for target in targets {
            if let Some(t) = set.get(target) {
                if !entry.contains(&t.name.as_str()) {
                    entry.push(t.name.as_str());
                }
            }
        }
    }
    graph
}
