//! Lint: problems in agent definitions and the delegations between them, with file:line.
//!
//! Loading problems come first (they are the loader's diagnostics, unchanged); then rules that
//! need the whole set, such as a delegation to an agent that does not exist.

use crate::agent::AgentSet;
use crate::diagnostic::{nearest, Diagnostic, Severity};

/// Every finding for a loaded set, sorted by file and line.
pub fn lint(set: &AgentSet) -> Vec<Diagnostic> {
    let mut out = set.diagnostics.clone();
    out.extend(missing_targets(set));
    out.sort_by(|a, b| (&a.file, a.line, a.column).cmp(&(&b.file, b.line, b.column)));
    out
}

/// `agent/missing-target`: a delegation reference to a name no agent has.
fn missing_targets(set: &AgentSet) -> Vec<Diagnostic> {
    let names: Vec<&str> = set.iter().map(|a| a.name.as_str()).collect();
    let mut out = Vec::new();
    for agent in set.iter() {
        for r in &agent.references {
            if set.get(&r.target).is_some() {
                continue;
            }
            let d = Diagnostic::new(
                Severity::Error,
                "delegation/missing-target",
                &agent.file,
                format!(
                    "`{}` delegates to `{}`, which is not an agent",
                    agent.name, r.target
                ),
            )
            .at(r.line, r.column);
            let mut d = match nearest(&r.target, names.iter().copied()) {
                Some(n) => d.help(format!("did you mean `{n}`?")),
                None => d.help(format!("known agents: {}", names.join(", "))),
            };
            d.source_line = agent
                .body
                .lines()
                .nth(r.line - agent.body_line)
                .map(|l| l.trim_end_matches('\r').to_string());
            out.push(d);
        }
    }
    out
}

/// Exit code for a lint run: 1 when any finding is an error, else 0.
pub fn exit_code(findings: &[Diagnostic]) -> u8 {
    u8::from(findings.iter().any(|d| d.severity == Severity::Error))
}
