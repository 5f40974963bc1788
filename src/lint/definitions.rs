//! Definition rules beyond what loading reports: template variables the runtime never provides.

use crate::agent::render;
use crate::agent::AgentSet;
use crate::diagnostic::{Diagnostic, Severity};

pub fn check(set: &AgentSet, out: &mut Vec<Diagnostic>) {
    for agent in set.iter().filter(|a| a.body_is_template) {
        for var in &agent.unknown_variables {
            let needle = var.as_str();
            let found = agent.body.lines().enumerate().find(|(_, l)| {
                l.contains("{{") && l.contains(needle) || l.contains("{%") && l.contains(needle)
            });
            let mut d = Diagnostic::new(
                Severity::Error,
                "template/unknown-variable",
                &agent.file,
                format!("the prompt uses `{var}`, which the runtime does not provide"),
            )
            .help(format!(
                "the runtime provides: {}; escape literal braces with {{% raw %}}…{{% endraw %}}",
                render::RUNTIME_VARIABLES.join(", ")
            ));
            if let Some((i, line)) = found {
                let col = line
                    .find(needle)
                    .map_or(1, |c| line[..c].chars().count() + 1);
                d = d.at(agent.body_line + i, col);
                d.source_line = Some(line.trim_end_matches('\r').to_string());
            }
            out.push(d);
        }
    }
}
