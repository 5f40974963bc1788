//! Delegation-graph rules: who may call whom, and whether the graph holds together.

use std::collections::{BTreeMap, BTreeSet};

use crate::agent::{Action, Agent, AgentSet, Reference};
use crate::problem::{nearest, Problem, Severity};

/// An edge of the delegation graph: `from` mentions `to` at `reference`.
#[derive(Debug, Clone)]
pub struct Edge<'a> {
    pub from: &'a Agent,
    pub to: &'a str,
    pub reference: &'a Reference,
}

/// Why a delegation would be refused at run time.
#[derive(Debug, Clone, Copy)]
pub enum Refusal<'a> {
    MissingTarget,
    PrimaryTarget(&'a Agent),
    NoTaskTool,
    PermissionDenied(Action),
}

impl Refusal<'_> {
    pub fn code(&self) -> &'static str {
        match self {
            Refusal::MissingTarget => "delegation/missing-target",
            Refusal::PrimaryTarget(_) => "delegation/primary-target",
            Refusal::NoTaskTool => "delegation/no-task-tool",
            Refusal::PermissionDenied(_) => "delegation/permission-denied",
        }
    }
}

impl<'a> Edge<'a> {
    /// Every reason this delegation would be refused, in the order lint reports them; one
    /// derivation serves lint's findings and `graph`'s highlighted edges.
    pub fn refusals(&self, set: &'a AgentSet) -> Vec<Refusal<'a>> {
        let Some(target) = set.get(self.to) else {
            return vec![Refusal::MissingTarget];
        };
        let mut out = Vec::new();
        if !target.mode.can_be_delegated_to() {
            out.push(Refusal::PrimaryTarget(target));
        }
        if !self.from.tools.allows("task") {
            out.push(Refusal::NoTaskTool);
        }
        match self.from.permission.task(self.to) {
            Action::Allow => {}
            action => out.push(Refusal::PermissionDenied(action)),
        }
        out
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

fn at(agent: &Agent, r: &Reference, d: Problem) -> Problem {
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
        for problem in e.refusals(set) {
            let d = match problem {
                Refusal::MissingTarget => {
                    let d = Problem::new(
                        Severity::Error,
                        problem.code(),
                        &from.file,
                        format!(
                            "`{}` delegates to `{}`, which is not an agent",
                            from.name, e.to
                        ),
                    );
                    match nearest(e.to, names.iter().copied()) {
                        Some(n) => d.with_help(format!("did you mean `{n}`?")),
                        None => d.with_help(format!("known agents: {}", names.join(", "))),
                    }
                }
                Refusal::PrimaryTarget(target) => Problem::new(
                    Severity::Error,
                    problem.code(),
                    &from.file,
                    format!("`{}` is a primary agent and cannot be delegated to", e.to),
                )
                .with_help(format!(
                    "set `mode: subagent` or `mode: all` in {}",
                    target.file
                )),
                Refusal::NoTaskTool => {
                    if !reported_tool.insert(from.name.as_str()) {
                        continue;
                    }
                    Problem::new(
                        Severity::Error,
                        problem.code(),
                        &from.file,
                        format!(
                            "`{}` delegates but is not granted the `task` tool",
                            from.name
                        ),
                    )
                    .with_help("add `task: true` under `tools:`, or remove the delegation")
                }
                Refusal::PermissionDenied(action) => Problem::new(
                    Severity::Error,
                    problem.code(),
                    &from.file,
                    format!(
                        "`{}` delegates to `{}`, but its `permission.task` says {}",
                        from.name,
                        e.to,
                        if action == Action::Ask {
                            "ask (refused: sessions run unattended)"
                        } else {
                            "deny"
                        }
                    ),
                )
                .with_help(format!("allow `{}` under `permission: task:`", e.to)),
            };
            out.push(at(from, r, d));
        }
    }
    cycles(set, out);
    reachability(set, out);
}

/// `delegation/cycle`: an agent that can reach itself through delegations.
fn cycles(set: &AgentSet, out: &mut Vec<Problem>) {
    let graph = adjacency(set);
    let mut reported: BTreeSet<Vec<&str>> = BTreeSet::new();
    for start in graph.keys().copied() {
        // Depth-first search for a path back to `start`.
        let mut stack: Vec<(&str, Vec<&str>)> = vec![(start, vec![start])];
        let mut seen: BTreeSet<&str> = BTreeSet::new();
        while let Some((node, path)) = stack.pop() {
            for &next in graph.get(node).map(Vec::as_slice).unwrap_or(&[]) {
                if next == start {
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
                        .with_help("the runtime refuses a call to an agent already in its chain; break the cycle");
                        if let Some(r) = agent.and_then(|a| {
                            a.references
                                .iter()
                                .find(|r| r.target == path.get(1).copied().unwrap_or(start))
                        }) {
                            d = d.at(r.line, r.column);
                        }
                        out.push(d);
                    }
                } else if seen.insert(next) {
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
    for a in set.iter().filter(|a| !a.disable) {
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

/// name → names it may delegate to (existing targets only).
pub fn adjacency(set: &AgentSet) -> BTreeMap<&str, Vec<&str>> {
    let mut graph: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for a in set.iter() {
        let entry = graph.entry(a.name.as_str()).or_default();
        for r in &a.references {
            if let Some(t) = set.get(&r.target) {
                if !entry.contains(&t.name.as_str()) {
                    entry.push(t.name.as_str());
                }
            }
        }
    }
    graph
}
