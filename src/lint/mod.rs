//! Lint: everything that can be wrong in an agent folder before a session runs, with file:line.
//!
//! Rule families, each in its own file: loading (the loader's own diagnostics), definitions
//! (template variables), the delegation graph, contracts. Codes are stable; the README lists them.

pub mod contracts;
pub mod definitions;
pub mod evidence;
pub mod graph;
pub mod sarif;

use crate::agent::AgentSet;
use crate::diagnostic::{Diagnostic, Severity};

/// Every finding for a loaded set, sorted by file and line.
pub fn lint(set: &AgentSet) -> Vec<Diagnostic> {
    let mut out = set.diagnostics.clone();
    definitions::check(set, &mut out);
    graph::check(set, &mut out);
    contracts::check(set, &mut out);
    out.sort_by(|a, b| {
        (&a.file, a.line, a.column, a.code).cmp(&(&b.file, b.line, b.column, b.code))
    });
    out.dedup();
    out
}

/// Every finding for the project: the agent rules plus stale evidence under `thoughts/`.
pub fn lint_project(project: &crate::project::Project, set: &AgentSet) -> Vec<Diagnostic> {
    let mut out = lint(set);
    evidence::check(project, &mut out);
    out
}

/// What changed between two lint passes: findings that are new, and ones that went away.
/// Positions are part of a finding, so a finding that moved shows as fixed + added.
pub fn diff<'a>(
    before: &'a [Diagnostic],
    after: &'a [Diagnostic],
) -> (Vec<&'a Diagnostic>, Vec<&'a Diagnostic>) {
    let added = after.iter().filter(|d| !before.contains(d)).collect();
    let fixed = before.iter().filter(|d| !after.contains(d)).collect();
    (added, fixed)
}

/// Exit code for a lint run: 1 when any finding is an error, else 0.
pub fn exit_code(findings: &[Diagnostic]) -> u8 {
    u8::from(findings.iter().any(|d| d.severity == Severity::Error))
}
