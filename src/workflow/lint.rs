//! Lint for workflow files: what would make a run fail or a document render wrong, found before
//! any session starts, each at the file:line:col to fix.
//!
//! - `workflow/duplicate-step`: two steps share a name;
//! - `workflow/unknown-step`: `requires` (or a check's `step:/pointer`) names no earlier step;
//! - `workflow/cycle`: steps require each other, so none can run first;
//! - `workflow/schema`: a step's schema is not a valid JSON Schema;
//! - `workflow/default`: a property's `default` (filled in when a result leaves the property
//!   out) is refused by the property's own schema, so every result relying on it is INVALID;
//! - `workflow/template`: the output template (or path) does not parse;
//! - `workflow/unknown-variable`: the template reads a variable no step provides.

use std::collections::BTreeSet;

use super::check::split_pointer;
use super::engine::RUN_VARIABLES;
use super::spec::{Pos, Workflow};
use crate::markdown::LineIndex;
use crate::problem::{Problem, Severity};
use crate::project::Project;

/// Every problem in workflow `wf`, whose file text is `text`.
pub fn check(wf: &Workflow, text: &str, project: &Project) -> Vec<Problem> {
    let mut out = Vec::new();
    let at = |code: &'static str, pos: Pos, message: String, help: &str| {
        Problem::new(Severity::Error, code, wf.file.clone(), message)
            .at_line_of(text, pos.line.max(1), pos.column.max(1))
            .with_help(help.to_string())
    };
    let mut seen = BTreeSet::new();
    for step in &wf.steps {
        if !seen.insert(step.name.as_str()) {
            out.push(at(
                "workflow/duplicate-step",
                step.at,
                format!("step `{}` is defined twice", step.name),
                "rename one of the two steps; step names are how results are reported",
            ));
        }
    }
    for (i, step) in wf.steps.iter().enumerate() {
        for (j, req) in step.requires.iter().enumerate() {
            let pos = step.requires_at.get(j).copied().unwrap_or(step.at);
            match wf.index(req) {
                None => out.push(at(
                    "workflow/unknown-step",
                    pos,
                    format!(
                        "step `{}` requires `{req}`, which is no step of this workflow",
                        step.name
                    ),
                    &nearest_help(req, wf),
                )),
                Some(k) if k >= i && !in_cycle(wf, &step.name) => out.push(at(
                    "workflow/unknown-step",
                    pos,
                    format!(
                        "step `{}` requires `{req}`, which comes after it",
                        step.name
                    ),
                    "list the steps in the order they run; a step may require earlier steps only",
                )),
                _ => {}
            }
        }
        if in_cycle(wf, &step.name) {
            out.push(at(
                "workflow/cycle",
                step.requires_at.first().copied().unwrap_or(step.at),
                format!(
                    "step `{}` requires itself through its `requires` chain",
                    step.name
                ),
                "break the cycle: a step may require earlier steps only",
            ));
        }
        let before = wf.prerequisites(&step.name);
        for c in &step.checks {
            for p in c.pointers() {
                if let (Some(other), _) = split_pointer(p) {
                    if !before.contains(&other) {
                        out.push(at(
                            "workflow/unknown-step",
                            step.checks_at,
                            format!(
                                "a check of step `{}` reads `{p}`, but `{other}` is not a step it requires",
                                step.name
                            ),
                            "add the step to `requires`, or fix the name before `:/`",
                        ));
                    }
                }
            }
        }
        for tool in step.tools.iter().flatten() {
            let known =
                crate::agent::grants::BUILTIN_TOOLS.contains(&tool.as_str()) || tool.contains('_');
            if !known || tool == super::tool::TOOL {
                out.push(at(
                    "workflow/tools",
                    step.tools_at,
                    format!(
                        "step `{}` opens `{tool}`, which is no tool a step can open",
                        step.name
                    ),
                    "name built-in tools (`read`, `grep`, `task`, …) or MCP tools \
                     (`server_tool`, `mcp__server__tool`); `step` is always open",
                ));
            }
        }
        if let Err(e) = crate::contract::schema::compile(
            &crate::contract::SchemaSource::Inline(step.schema.clone()),
            project,
        ) {
            out.push(at(
                "workflow/schema",
                step.schema_at,
                format!("the schema of step `{}` is not valid: {e}", step.name),
                "write a JSON Schema (draft 2020-12), e.g. `{type: object, required: [x]}`",
            ));
        }
        out.extend(
            default_problems(step, project)
                .into_iter()
                .map(|(key, why)| {
                    at(
                "workflow/default",
                step.schema_at,
                format!(
                    "the default of `{key}` in step `{}` breaks its own schema: {why}",
                    step.name
                ),
                "give a default the property accepts (one of its `enum` values, its `type`), or \
                 remove it",
            )
                }),
        );
    }
    template_rules(wf, text, &mut out);
    out
}

/// The top-level properties of `step`'s schema whose `default` their own schema refuses, with
/// the first reason ([`super::engine::with_defaults`] fills these in before validation).
fn default_problems(step: &super::Step, project: &Project) -> Vec<(String, String)> {
    let Some(props) = step.schema.get("properties").and_then(|p| p.as_object()) else {
        return Vec::new();
    };
    props
        .iter()
        .filter_map(|(key, prop)| {
            let value = prop.get("default")?;
            let source = crate::contract::SchemaSource::Inline(prop.clone());
            let validator = crate::contract::schema::compile(&source, project).ok()?;
            let why = validator.iter_errors(value).next()?.to_string();
            Some((key.clone(), why))
        })
        .collect()
}

fn nearest_help(name: &str, wf: &Workflow) -> String {
    match crate::problem::nearest(name, wf.names()) {
        Some(n) => format!(
            "did you mean `{n}`? The steps are: {}",
            wf.names().join(", ")
        ),
        None => format!("the steps are: {}", wf.names().join(", ")),
    }
}

/// Whether `name` can reach itself through `requires`.
fn in_cycle(wf: &Workflow, name: &str) -> bool {
    let mut todo: Vec<&str> = wf
        .step(name)
        .map(|s| s.requires.iter().map(String::as_str).collect())
        .unwrap_or_default();
    let mut seen: Vec<&str> = Vec::new();
    while let Some(n) = todo.pop() {
        if n == name {
            return true;
        }
        if seen.contains(&n) {
            continue;
        }
        seen.push(n);
        if let Some(s) = wf.step(n) {
            todo.extend(s.requires.iter().map(String::as_str));
        }
    }
    false
}

fn template_rules(wf: &Workflow, text: &str, out: &mut Vec<Problem>) {
    let index = LineIndex::new(text);
    for (source, pos) in [
        (&wf.output.path, wf.output.path_at),
        (&wf.output.template, wf.output.template_at),
    ] {
        let env = minijinja::Environment::new();
        let tmpl = match env.template_from_str(source) {
            Ok(t) => t,
            Err(e) => {
                let line = pos.line + e.line().unwrap_or(1).saturating_sub(1);
                out.push(
                    Problem::new(
                        Severity::Error,
                        "workflow/template",
                        wf.file.clone(),
                        format!(
                            "the output template does not parse: {}",
                            e.detail().unwrap_or("syntax error")
                        ),
                    )
                    .at_line_of(text, line.max(1), 1)
                    .with_help(
                        "fix the minijinja syntax; wrap literal `{{` in `{% raw %}…{% endraw %}`",
                    ),
                );
                continue;
            }
        };
        let mut vars: Vec<String> = tmpl.undeclared_variables(true).into_iter().collect();
        vars.sort();
        for var in vars {
            let mut parts = var.split('.');
            let root = parts.next().unwrap_or("");
            let field = parts.next();
            let problem = if RUN_VARIABLES.contains(&root) {
                None
            } else if let Some(step) = wf.step(root) {
                field.and_then(|f| {
                    let props = step.schema.get("properties")?.as_object()?;
                    let computed = step.checks.iter().any(|c| {
                        matches!(c, super::check::Check::Complexity { .. }) && f == "computed_complexity"
                    });
                    (!props.contains_key(f) && !computed).then(|| {
                        format!("the template reads `{var}`, but step `{root}`'s schema has no property `{f}`")
                    })
                })
            } else {
                Some(format!(
                    "the template reads `{var}`, which no step provides"
                ))
            };
            if let Some(message) = problem {
                // Place it at the variable's first use, searching from the template's start.
                let start = index.line_start(pos.line).unwrap_or(0);
                let (line, col) = text[start..]
                    .find(var.as_str())
                    .map(|o| index.line_col(text, start + o))
                    .unwrap_or((pos.line, pos.column));
                out.push(
                    Problem::new(
                        Severity::Error,
                        "workflow/unknown-variable",
                        wf.file.clone(),
                        message,
                    )
                    .at_line_of(text, line.max(1), col.max(1))
                    .with_help(format!(
                        "use a step's result (`{}`) or one of {}",
                        wf.names().join("`, `"),
                        RUN_VARIABLES.join(", ")
                    )),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lint(text: &str) -> Vec<Problem> {
        let dir = tempfile::tempdir().unwrap();
        let p = Project::open(dir.path()).unwrap();
        let wf = super::super::spec::parse("workflow/t.yaml", text).unwrap();
        check(&wf, text, &p)
    }

    #[test]
    fn a_step_that_opens_an_unknown_tool_or_step_is_located() {
        let text = "steps:\n  - name: a\n    tools: [read, task, fs_read, step]\n  - name: b\n    tools: [raed]\noutput: {path: o.md, template: x}\n";
        let found: Vec<(String, usize, usize)> = lint(text)
            .iter()
            .map(|p| (p.message.clone(), p.line, p.column))
            .collect();
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(
            found[0].0.contains("`step`") && found[0].1 == 3,
            "{found:?}"
        );
        assert!(
            found[1].0.contains("`raed`") && found[1].1 == 5,
            "{found:?}"
        );
    }

    #[test]
    fn unknown_requires_cycles_schemas_and_variables_are_located() {
        let text = "steps:\n  - name: a\n    requires: [c]\n  - name: b\n    requires: [zz]\n    schema: {type: nope}\n  - name: c\n    requires: [a]\n    schema: {type: object, properties: {x: {type: string}}}\noutput:\n  path: out.md\n  template: |\n    {{ c.x }} {{ c.y }}\n    {{ nobody }}\n";
        let found = lint(text);
        let codes: Vec<(&str, usize)> = found.iter().map(|p| (p.code.as_ref(), p.line)).collect();
        assert!(codes.contains(&("workflow/unknown-step", 5)), "{codes:?}");
        assert!(codes.contains(&("workflow/cycle", 3)), "{codes:?}");
        assert!(codes.contains(&("workflow/cycle", 8)), "{codes:?}");
        assert!(codes.contains(&("workflow/schema", 6)), "{codes:?}");
        assert!(
            codes.contains(&("workflow/unknown-variable", 13)),
            "{codes:?}"
        );
        assert!(
            codes.contains(&("workflow/unknown-variable", 14)),
            "{codes:?}"
        );
        assert!(
            !found.iter().any(|p| p.message.contains("`c.x`")),
            "{found:?}"
        );
    }

    #[test]
    fn a_default_its_property_refuses_is_located() {
        let text = "steps:\n  - name: a\n    schema:\n      properties:\n        go: {enum: [YES, NO], default: MAYBE}\n        ok: {enum: [YES], default: YES}\noutput: {path: o.md, template: x}\n";
        let found = lint(text);
        let defaults: Vec<_> = found
            .iter()
            .filter(|p| p.code == "workflow/default")
            .collect();
        assert_eq!(defaults.len(), 1, "{found:?}");
        assert!(defaults[0].message.contains("`go`"), "{found:?}");
        assert_eq!(defaults[0].line, 4, "the schema's own line");
    }

    #[test]
    fn a_clean_file_has_no_problems() {
        let text = "steps:\n  - name: a\n  - name: b\noutput:\n  path: \"{{ today }}.md\"\n  template: \"{{ a }} {{ b.z }} {{ task }}\"\n";
        assert!(lint(text).is_empty(), "{:?}", lint(text));
    }
}
