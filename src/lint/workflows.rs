//! Workflow files (`workflow/*.yaml`): the rules of [`crate::workflow::lint`] for every file, a
//! file that does not parse as one located problem, and agents whose `workflow:` names no workflow
//! (`workflow/not-found`: the agent would get a `step` tool that refuses every call).

use crate::problem::{Problem, Severity};
use crate::project::Project;

pub fn check(project: &Project, out: &mut Vec<Problem>) {
    for loaded in crate::workflow::load_all(project) {
        match &loaded.workflow {
            Ok(wf) => out.extend(crate::workflow::lint::check(wf, &loaded.text, project)),
            Err(p) => out.push(p.clone()),
        }
    }
}

/// Agents whose `workflow:` names a workflow the project does not have.
pub fn agents(project: &Project, set: &crate::agent::AgentSet, out: &mut Vec<Problem>) {
    let loaded = crate::workflow::load_all(project);
    let names: Vec<String> = loaded
        .iter()
        .map(|l| match &l.workflow {
            Ok(w) => w.name.clone(),
            Err(_) => std::path::Path::new(&l.file)
                .file_stem()
                .map(|s| s.to_string_lossy().to_string())
                .unwrap_or_default(),
        })
        .collect();
    for agent in set.iter() {
        let Some(name) = &agent.workflow else {
            continue;
        };
        if names.contains(name) {
            continue;
        }
        let text = std::fs::read_to_string(project.root().join(&agent.file)).unwrap_or_default();
        let line = text
            .lines()
            .position(|l| l.starts_with("workflow:"))
            .map_or(1, |i| i + 1);
        out.push(
            Problem::new(
                Severity::Error,
                "workflow/not-found",
                agent.file.clone(),
                format!(
                    "agent `{}` follows workflow `{name}`, which is not in workflow/",
                    agent.name
                ),
            )
            .at_line_of(&text, line, 11)
            .with_help(
                match crate::problem::nearest(name, names.iter().map(String::as_str)) {
                    Some(n) => format!("did you mean `{n}`? Or create workflow/{name}.yaml"),
                    None => format!(
                        "create workflow/{name}.yaml (docs/workflows.md), or remove the key"
                    ),
                },
            ),
        );
    }
}
