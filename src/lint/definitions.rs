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
        aliases.extend(crate::config::BUILTIN_ALIASES.iter().map(|(a, _)| *a));
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

/// `agent/tool-not-provided`: a tool the frontmatter grants that switchboard does not provide with
/// this configuration (a foreign runtime's `bash`, `websearch` with no search endpoint, an MCP
/// tool). The agent would run without it and nobody would be told; lint says so on the line that
/// grants it, with what to configure.
pub fn ungranted_tools(
    project: &crate::project::Project,
    set: &AgentSet,
    provided: &crate::tools::Provided,
    out: &mut Vec<Problem>,
) {
    // opencode's custom tools (`.opencode/tool/NAME.ts`): granted, known, never provided here.
    let custom = crate::config::foreign_tools::opencode_custom_tools(project);
    for agent in set.iter() {
        let missing: Vec<&str> = agent
            .tools
            .rules
            .iter()
            .filter(|r| r.allow && !r.pattern.contains(['*', '?', '[']))
            .map(|r| r.pattern.as_str())
            // Names nobody provides are typos, which `agent/unknown-tool` already reports.
            .filter(|t| {
                crate::agent::grants::BUILTIN_TOOLS.contains(t)
                    || crate::agent::grants::FOREIGN_TOOLS.contains(t)
                    || t.starts_with("mcp__")
                    || t.contains('_')
                    || custom.iter().any(|c| c == t)
            })
            .filter(|t| !provided.provides(t))
            .collect();
        if missing.is_empty() {
            continue;
        }
        let text = std::fs::read_to_string(project.root().join(&agent.file)).unwrap_or_default();
        for tool in missing {
            let mut d = Problem::new(
                Severity::Warning,
                "agent/tool-not-provided",
                &agent.file,
                format!(
                    "`{}` grants `{tool}`, which switchboard does not provide here; the agent will run without it",
                    agent.name
                ),
            )
            .with_help(crate::tools::Provided::how_to_provide(tool));
            if agent.tools_line > 0 {
                let (line, column) = grant_position(&text, agent.tools_line, tool);
                d = d.at_line_of(&text, line, column);
            }
            out.push(d);
        }
    }
}

/// `delegation/missing-analyzer`: an agent granted `analyze_file` in a project without the
/// `file-analyzer` agent. `analyze_file` runs that agent on every chunk, so each call would fail
/// with a tool error; lint says so on the line that grants it.
pub fn analyzer_grants(project: &crate::project::Project, set: &AgentSet, out: &mut Vec<Problem>) {
    let analyzer = crate::knowledge::ANALYZER_AGENT;
    if set.get(analyzer).is_some() {
        return;
    }
    let granted = set.iter().filter(|a| {
        !a.disable && a.tools.allows("analyze_file") && !a.permission.refuses_tool("analyze_file")
    });
    for agent in granted {
        let mut d = Problem::new(
            Severity::Error,
            "delegation/missing-analyzer",
            &agent.file,
            format!(
                "`{}` is granted `analyze_file`, but this project has no `{analyzer}` agent to \
                 run on the file",
                agent.name
            ),
        )
        .with_help(format!(
            "add agent/{analyzer}.md (switchboard ships one in its agent/ folder), or remove the \
             `analyze_file` grant; until then every analyze_file call fails"
        ));
        if agent.tools_line > 0 {
            let text = super::agent_text(project, agent);
            let (line, column) = grant_position(&text, agent.tools_line, "analyze_file");
            d = d.at_line_of(&text, line, column);
        }
        out.push(d);
    }
}

/// Where `tool` is written in the `tools:` entry that starts at `tools_line`: its own line and
/// column when it can be found (a flow map, or a block list below the key), else the key's line.
fn grant_position(text: &str, tools_line: usize, tool: &str) -> (usize, usize) {
    let lower = tool.to_ascii_lowercase();
    for (i, line) in text.lines().enumerate().skip(tools_line - 1) {
        let n = i + 1;
        if n > tools_line && !line.starts_with([' ', '\t', '-']) {
            break;
        }
        let hay = line.to_ascii_lowercase();
        let mut from = 0;
        while let Some(at) = hay[from..].find(&lower).map(|a| a + from) {
            let before = hay[..at].chars().next_back();
            let after = hay[at + lower.len()..].chars().next();
            let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
            if !word(before) && !word(after) {
                return (n, line[..at].chars().count() + 1);
            }
            from = at + lower.len();
        }
    }
    (tools_line, 1)
}
