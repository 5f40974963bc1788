//! Definition rules beyond what loading reports: template variables the runtime never provides.

use crate::agent::render;
use crate::agent::AgentSet;
use crate::markdown::LineIndex;
use crate::problem::{Problem, Severity};

pub fn check(set: &AgentSet, out: &mut Vec<Problem>) {
    for agent in set.iter().filter(|a| a.body_is_template) {
        for var in &agent.unknown_variables {
            let needle = var.as_str();
            let mut offset = 0;
            let found = agent.body.split_inclusive('\n').find_map(|l| {
                let at = offset;
                offset += l.len();
                let templated = l.contains("{{") || l.contains("{%");
                templated.then(|| l.find(needle)).flatten().map(|c| at + c)
            });
            let mut d = Problem::new(
                Severity::Error,
                "template/unknown-variable",
                &agent.file,
                format!("the prompt uses `{var}`, which the runtime does not provide"),
            )
            .with_help(format!(
                "the runtime provides: {}; escape literal braces with {{% raw %}}…{{% endraw %}}",
                render::RUNTIME_VARIABLES.join(", ")
            ));
            if let Some(offset) = found {
                let index = LineIndex::new(&agent.body);
                let (line, col) = index.line_col(&agent.body, offset);
                d = d.at(agent.body_line + line - 1, col);
                d.source_line = index.line_text(&agent.body, line).map(str::to_string);
            }
            out.push(d);
        }
    }
}

/// `agent/unknown-model`: a frontmatter `model` that is neither `inherit`, an alias the config or
/// the built-ins define, nor `provider/model` with a provider the registry knows. At run time such
/// a model fails the hop; lint says so while the file is being edited.
pub fn models(
    set: &AgentSet,
    config: &crate::config::Config,
    registry: &crate::model::Registry,
    out: &mut Vec<Problem>,
) {
    for agent in set.iter() {
        let Some(model) = agent.model.as_deref() else {
            continue;
        };
        if model == "inherit" {
            continue;
        }
        let expanded = config.expand_alias(model);
        let known = crate::model::registry::parse_spec(expanded)
            .is_ok_and(|(provider, _)| registry.knows_provider(provider));
        if known {
            continue;
        }
        let mut aliases: Vec<&str> = config.aliases.keys().map(String::as_str).collect();
        aliases.extend(
            crate::model::anthropic::BUILTIN_ALIASES
                .iter()
                .map(|(a, _)| *a),
        );
        let mut d = Problem::new(
            Severity::Warning,
            "agent/unknown-model",
            &agent.file,
            format!("model `{model}` is not known to the project's configuration"),
        )
        .with_help(format!(
            "use `provider/model` with a provider of {}, an alias ({}), or `inherit`; or define it under [aliases] in switchboard.toml",
            registry.provider_names().join(", "),
            aliases.join(", ")
        ));
        if agent.model_line > 0 {
            d = d.at(agent.model_line, 1);
            d.source_line = Some(format!("model: {model}"));
        }
        out.push(d);
    }
}
