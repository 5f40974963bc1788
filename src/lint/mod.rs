//! Lint: everything that can be wrong in an agent folder before a session runs, with file:line.
//!
//! Rule families, each in its own file: loading (the loader's own problems), definitions
//! (template variables), the delegation graph, contracts, retrieval gates. Codes are stable; docs/problems.md
//! lists them.

pub mod contracts;
pub mod definitions;
pub mod evidence;
pub mod gates;
pub mod graph;
pub mod json_contracts;
pub mod sarif;
pub mod workflows;

use crate::agent::AgentSet;
use crate::problem::{Problem, Severity};

/// Every finding for a loaded set, sorted by file and line.
pub fn lint(set: &AgentSet) -> Vec<Problem> {
    let mut out = set.diagnostics.clone();
    definitions::check(set, &mut out);
    graph::check(set, &mut out);
    contracts::check(set, &mut out);
    out.sort_by(|a, b| {
        (&a.file, a.line, a.column, &a.code).cmp(&(&b.file, b.line, b.column, &b.code))
    });
    out.dedup();
    out
}

/// Every finding for the project: the agent rules plus stale evidence under `thoughts/`.
pub fn lint_project(project: &crate::project::Project, set: &AgentSet) -> Vec<Problem> {
    let mut out = lint(set);
    config_rules(project, set, &mut out);
    json_contracts::check(project, set, &mut out);
    gates::check(project, set, &mut out);
    evidence::check(project, &mut out);
    workflows::check(project, &mut out);
    workflows::agents(project, set, &mut out);
    out
}

/// Lint passes that remember what they parsed, for `lint --watch`: agent files and thoughts
/// documents are parsed again only when their stamp (mtime, length) or a file they cite changed.
/// One-shot `lint` uses the same type, so both paths run the same rules.
pub struct Linter {
    project: crate::project::Project,
    options: crate::agent::LoadOptions,
    agents: crate::agent::ParseCache,
    evidence: evidence::EvidenceCache,
}

impl Linter {
    pub fn new(project: crate::project::Project, options: crate::agent::LoadOptions) -> Self {
        Linter {
            project,
            options,
            agents: Default::default(),
            evidence: Default::default(),
        }
    }

    /// Every finding for the project as it is on disk now.
    pub fn run(&mut self) -> Vec<Problem> {
        let set = crate::agent::load_cached(&self.project, &self.options, &mut self.agents);
        let mut out = lint(&set);
        config_rules(&self.project, &set, &mut out);
        json_contracts::check(&self.project, &set, &mut out);
        gates::check(&self.project, &set, &mut out);
        evidence::check_cached(&self.project, &mut self.evidence, &mut out);
        workflows::check(&self.project, &mut out);
        workflows::agents(&self.project, &set, &mut out);
        out
    }
}

/// An agent's file as text, to place findings in it (empty when it cannot be read: the finding
/// then carries no position rather than a wrong one).
pub(crate) fn agent_text(project: &crate::project::Project, agent: &crate::agent::Agent) -> String {
    project
        .resolve(&agent.file)
        .ok()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .unwrap_or_default()
}

/// `d` placed at 1-based `line:col` of `text`; left unplaced when `line` is 0 (not found).
pub(crate) fn place(text: &str, d: Problem, (line, col): (usize, usize)) -> Problem {
    if line == 0 {
        d
    } else {
        d.at_line_of(text, line, col)
    }
}

fn config_rules(project: &crate::project::Project, set: &AgentSet, out: &mut Vec<Problem>) {
    match crate::config::Config::load(project) {
        Ok(config) => {
            out.extend(config.problems.iter().cloned());
            let registry = crate::model::Registry::for_project(project, &config);
            definitions::models(set, &config, &registry, out);
            let provided = crate::tools::Provided::from_config(&config);
            definitions::ungranted_tools(project, set, &provided, out);
        }
        Err(e) => out.push(e.into_problem()),
    }
    definitions::analyzer_grants(project, set, out);
}

/// What changed between two lint passes: findings that are new, and ones that went away.
/// Positions are part of a finding, so a finding that moved shows as fixed + added.
pub fn diff<'a>(
    before: &'a [Problem],
    after: &'a [Problem],
) -> (Vec<&'a Problem>, Vec<&'a Problem>) {
    let added = after.iter().filter(|d| !before.contains(d)).collect();
    let fixed = before.iter().filter(|d| !after.contains(d)).collect();
    (added, fixed)
}

/// Exit code for a lint run: 1 when any finding is an error, else 0.
pub fn exit_code(findings: &[Problem]) -> u8 {
    u8::from(findings.iter().any(|d| d.severity == Severity::Error))
}
