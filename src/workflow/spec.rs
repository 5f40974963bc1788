//! Workflow files as data: `workflow/<name>.yaml` parsed into a [`Workflow`] whose every step,
//! dependency, schema and template keeps the line and column it was written at, so a loading
//! error or a lint finding points at the place to fix.
//!
//! A step's `requires` defaults to the step before it: the list is ordered, and spelling the
//! chain out on every step would only invite mistakes. `requires: []` opts out.

use serde::Deserialize;
use serde_json::Value;
use serde_saphyr::Spanned;

use super::check::Check;
use crate::contract::{JsonContract, SchemaSource};
use crate::problem::{Problem, Severity};

/// The folder workflow files live in, relative to the project root.
pub const WORKFLOW_DIR: &str = "workflow";

/// A 1-based line and column in a workflow file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pos {
    pub line: usize,
    pub column: usize,
}

impl Pos {
    fn of<T>(s: &Spanned<T>) -> Self {
        Pos {
            line: s.referenced.line() as usize,
            column: s.referenced.column() as usize,
        }
    }
}

/// One loaded workflow.
#[derive(Debug, Clone)]
pub struct Workflow {
    pub name: String,
    pub description: String,
    /// Project-relative path of the file.
    pub file: String,
    /// Agents that get the `step` tool for this workflow without naming it themselves.
    pub agents: Vec<String>,
    pub steps: Vec<Step>,
    pub output: Output,
}

/// One step: what its result must look like, what must come before it, what the runtime checks.
#[derive(Debug, Clone)]
pub struct Step {
    pub name: String,
    pub description: String,
    pub requires: Vec<String>,
    /// The JSON Schema of the result (`{"type": "object"}` when the file gives none).
    pub schema: Value,
    /// A result field whose value picks the reply: `CLARIFY` asks, `AMBIGUOUS`/`STOP` stop.
    pub decides: Option<String>,
    /// The result field that holds the question for a `CLARIFY` reply (a string or a list).
    pub question: Option<String>,
    /// The result field that says why, for a stopping reply.
    pub reason: Option<String>,
    pub checks: Vec<Check>,
    /// The tools the agent may call while this step is the one it owes, besides `step`: `None`
    /// for any it is granted. The 1.5B planner, owing `intent`, delegated to thoughts-analyzer
    /// instead of restating its request.
    pub tools: Option<Vec<String>>,
    /// Where `tools:` is written (the step's name when it is not).
    pub tools_at: Pos,
    pub at: Pos,
    pub requires_at: Vec<Pos>,
    pub schema_at: Pos,
    pub checks_at: Pos,
    /// The compiled schema, shared by clones (compiled once, on first use).
    pub contract: JsonContract,
}

/// Where the final document goes and what it looks like.
#[derive(Debug, Clone)]
pub struct Output {
    /// A minijinja template for the project-relative path of the document.
    pub path: String,
    /// The minijinja template of the document.
    pub template: String,
    pub path_at: Pos,
    pub template_at: Pos,
}

impl Workflow {
    pub fn step(&self, name: &str) -> Option<&Step> {
        self.steps.iter().find(|s| s.name == name)
    }

    pub fn index(&self, name: &str) -> Option<usize> {
        self.steps.iter().position(|s| s.name == name)
    }

    /// Names of the steps, in order.
    pub fn names(&self) -> Vec<&str> {
        self.steps.iter().map(|s| s.name.as_str()).collect()
    }

    /// Every step `name` depends on, directly or not, in workflow order (cycles tolerated).
    pub fn prerequisites(&self, name: &str) -> Vec<&str> {
        let mut seen: Vec<&str> = Vec::new();
        let mut todo: Vec<&str> = self
            .step(name)
            .map(|s| s.requires.iter().map(String::as_str).collect())
            .unwrap_or_default();
        while let Some(n) = todo.pop() {
            if n == name || seen.contains(&n) {
                continue;
            }
            seen.push(n);
            if let Some(s) = self.step(n) {
                todo.extend(s.requires.iter().map(String::as_str));
            }
        }
        let mut ordered: Vec<&str> = self
            .names()
            .into_iter()
            .filter(|n| seen.contains(n))
            .collect();
        // Names of no step (a lint error) still count as missing, after the known ones.
        ordered.extend(seen.iter().filter(|n| self.step(n).is_none()));
        ordered
    }

    /// Every step that depends on `name`, directly or not.
    pub fn dependents(&self, name: &str) -> Vec<&str> {
        self.names()
            .into_iter()
            .filter(|n| *n != name && self.prerequisites(n).contains(&name))
            .collect()
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorkflow {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: String,
    #[serde(default)]
    agents: Vec<String>,
    steps: Vec<RawStep>,
    output: RawOutput,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep {
    name: Spanned<String>,
    #[serde(default)]
    description: String,
    #[serde(default)]
    requires: Option<Vec<Spanned<String>>>,
    #[serde(default)]
    schema: Option<Spanned<Value>>,
    #[serde(default)]
    decides: Option<String>,
    #[serde(default)]
    question: Option<String>,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    checks: Option<Spanned<Vec<Check>>>,
    #[serde(default)]
    tools: Option<Spanned<Vec<String>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOutput {
    path: Spanned<String>,
    template: Spanned<String>,
}

/// Parses the text of workflow file `file` (project-relative). A file that does not parse is
/// one `workflow/yaml` problem at the place serde-saphyr stopped.
pub fn parse(file: &str, text: &str) -> Result<Workflow, Box<Problem>> {
    let raw: RawWorkflow = crate::yaml::from_str(text).map_err(|err| -> Box<Problem> {
        let (line, col) = err
            .location()
            .map(|l| (l.line() as usize, l.column() as usize))
            .unwrap_or((1, 1));
        let msg = err.without_snippet().to_string();
        let first = msg.lines().next().unwrap_or("").trim();
        let first = first.split(" at line ").next().unwrap_or(first);
        Box::new(
        Problem::new(
            Severity::Error,
            "workflow/yaml",
            file,
            format!("invalid workflow file: {first}"),
        )
        .at_line_of(text, line.max(1), col.max(1))
        .with_help(
            "a workflow file has `steps:` (each with `name:`, optional `requires:`, `schema:`, \
             `decides:`, `checks:`, `tools:`) and `output:` with `path:` and `template:`; see docs/workflows.md",
        )
        )
    })?;
    let default_name = std::path::Path::new(file)
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default();
    let mut steps: Vec<Step> = Vec::with_capacity(raw.steps.len());
    for (i, s) in raw.steps.into_iter().enumerate() {
        let (requires, requires_at) = match s.requires {
            Some(list) => (
                list.iter().map(|r| r.value.clone()).collect(),
                list.iter().map(Pos::of).collect(),
            ),
            None if i > 0 => (vec![steps[i - 1].name.clone()], vec![Pos::of(&s.name)]),
            None => (Vec::new(), Vec::new()),
        };
        let (schema, schema_at) = match s.schema {
            Some(sp) => (sp.value.clone(), Pos::of(&sp)),
            None => (serde_json::json!({"type": "object"}), Pos::of(&s.name)),
        };
        let (checks, checks_at) = match s.checks {
            Some(c) => (c.value.clone(), Pos::of(&c)),
            None => (Vec::new(), Pos::of(&s.name)),
        };
        let (tools, tools_at) = match s.tools {
            Some(t) => (Some(t.value.clone()), Pos::of(&t)),
            None => (None, Pos::of(&s.name)),
        };
        steps.push(Step {
            name: s.name.value.clone(),
            description: s.description,
            requires,
            contract: JsonContract::new(SchemaSource::Inline(schema.clone()), vec![], None, None),
            schema,
            decides: s.decides,
            question: s.question,
            reason: s.reason,
            checks,
            tools,
            tools_at,
            at: Pos::of(&s.name),
            requires_at,
            schema_at,
            checks_at,
        });
    }
    Ok(Workflow {
        name: raw.name.unwrap_or(default_name),
        description: raw.description,
        file: file.to_string(),
        agents: raw.agents,
        steps,
        output: Output {
            path: raw.output.path.value.clone(),
            template: raw.output.template.value.clone(),
            path_at: Pos::of(&raw.output.path),
            template_at: Pos::of(&raw.output.template),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "name: demo\nsteps:\n  - name: a\n    schema: {type: object}\n  - name: b\n  - name: c\n    requires: [a]\noutput:\n  path: out.md\n  template: \"{{ a.x }}\"\n";

    #[test]
    fn requires_default_to_the_previous_step_and_positions_are_kept() {
        let wf = parse("workflow/demo.yaml", TEXT).unwrap();
        assert_eq!(wf.names(), vec!["a", "b", "c"]);
        assert_eq!(wf.steps[1].requires, vec!["a"]);
        assert_eq!(wf.steps[2].requires, vec!["a"]);
        assert_eq!(wf.steps[0].at.line, 3);
        assert_eq!(wf.steps[2].requires_at[0].line, 7);
        assert_eq!(wf.prerequisites("c"), vec!["a"]);
        assert_eq!(wf.dependents("a"), vec!["b", "c"]);
    }

    #[test]
    fn a_bad_file_is_one_located_problem() {
        let p = parse(
            "workflow/x.yaml",
            "steps:\n  - nam: a\noutput: {path: a, template: b}\n",
        )
        .unwrap_err();
        assert_eq!(p.code, "workflow/yaml");
        assert_eq!(p.line, 2, "{p}");
        assert!(p.message.contains("nam"), "{}", p.message);
    }
}
