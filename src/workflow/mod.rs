//! Checkpoint workflows: an agent reports each step of its work as JSON through the `step` tool,
//! and the runtime, not the model, decides whether that step stands.
//!
//! A workflow is data (`workflow/<name>.yaml`, [`spec`]): ordered steps, each with the JSON
//! Schema of its result, the steps it requires and the checks the runtime runs itself
//! ([`check`], [`command`], [`complexity`]). [`engine`] judges one reported step and answers
//! PROCEED, CLARIFY, INVALID or STOP; [`state`] keeps the run in
//! `.switchboard/workflows/<id>/` (the state file is the truth, the execution log the record);
//! after the last step the document is rendered from the workflow's template. [`tool`] is what
//! the runtime calls; [`lint`] checks workflow files before anything runs.

pub mod check;
pub mod command;
pub mod complexity;
pub mod engine;
pub mod lint;
pub mod shape;
pub mod spec;
pub mod state;
pub mod tool;

pub use engine::{Outcome, Reply};
pub use spec::{Step, Workflow, WORKFLOW_DIR};
pub use state::{RunStatus, State, StepStatus};

use crate::problem::Problem;
use crate::project::Project;

/// Why a workflow could not be used.
#[derive(Debug, thiserror::Error)]
pub enum WorkflowError {
    #[error("no workflow `{name}` (looked for {WORKFLOW_DIR}/{name}.yaml and .yml)")]
    NotFound { name: String },
    #[error("workflow `{name}` has errors; run `switchboard lint`:\n{problems}")]
    Broken { name: String, problems: String },
    #[error(transparent)]
    State(#[from] state::StateError),
    #[error("{0}")]
    Refused(String),
}

/// One workflow file as loaded: the file, its text, and the workflow or why it did not parse.
#[derive(Debug)]
pub struct Loaded {
    pub file: String,
    pub text: String,
    pub workflow: Result<Workflow, Problem>,
}

/// Every `workflow/*.yaml` and `*.yml` file of the project, sorted by path.
pub fn load_all(project: &Project) -> Vec<Loaded> {
    let dir = project.root().join(WORKFLOW_DIR);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut files: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.ends_with(".yaml") || n.ends_with(".yml"))
        .map(|n| format!("{WORKFLOW_DIR}/{n}"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|file| {
            match project.resolve(&file).and_then(|p| {
                std::fs::read_to_string(&p).map_err(|e| crate::project::PathError::Io {
                    path: file.clone(),
                    reason: e.to_string(),
                })
            }) {
                Ok(text) => Loaded {
                    workflow: spec::parse(&file, &text).map_err(|p| *p),
                    file,
                    text,
                },
                Err(e) => Loaded {
                    workflow: Err(Problem::new(
                        crate::problem::Severity::Error,
                        "workflow/yaml",
                        file.clone(),
                        format!("cannot read the workflow file: {e}"),
                    )),
                    file,
                    text: String::new(),
                },
            }
        })
        .collect()
}

/// The workflow called `name`, refusing one that lint finds errors in: a run must not start on
/// a workflow whose steps cannot all be reached.
pub fn find(project: &Project, name: &str) -> Result<Workflow, WorkflowError> {
    let loaded = load_all(project);
    let Some(l) = loaded.into_iter().find(|l| match &l.workflow {
        Ok(w) => w.name == name,
        Err(_) => std::path::Path::new(&l.file)
            .file_stem()
            .is_some_and(|s| s == name),
    }) else {
        return Err(WorkflowError::NotFound { name: name.into() });
    };
    let broken = |problems: Vec<Problem>| WorkflowError::Broken {
        name: name.into(),
        problems: problems
            .iter()
            .map(|p| format!("  {}: {}", p.location(), p.message))
            .collect::<Vec<_>>()
            .join("\n"),
    };
    let wf = l.workflow.map_err(|p| broken(vec![p]))?;
    let errors: Vec<Problem> = lint::check(&wf, &l.text, project)
        .into_iter()
        .filter(Problem::is_error)
        .collect();
    if errors.is_empty() {
        Ok(wf)
    } else {
        Err(broken(errors))
    }
}

/// The workflow an agent runs: the one its frontmatter names, else one whose `agents:` lists it.
pub fn for_agent(
    project: &Project,
    agent: &str,
    declared: Option<&str>,
) -> Option<Result<Workflow, WorkflowError>> {
    if let Some(name) = declared {
        return Some(find(project, name));
    }
    let name = load_all(project).into_iter().find_map(|l| {
        l.workflow
            .ok()
            .filter(|w| w.agents.iter().any(|a| a == agent))
            .map(|w| w.name)
    })?;
    Some(find(project, &name))
}

/// Why a file the workflow names (a scope file, cited evidence) cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScopeFileError {
    /// Outside the root, a link that leads out, or in a hidden folder.
    #[error("scope file `{path}`: {reason}")]
    Refused { path: String, reason: String },
    #[error("scope file `{path}` is not a file")]
    NotAFile { path: String },
}

/// `path` names an existing file inside the root (canonicalized: `..` and symlinks cannot lead
/// out, and the hidden folders are refused). Here, not in `check.rs`, because both the checks and
/// the complexity score ask it.
pub(crate) fn file_inside(
    project: &crate::project::Project,
    path: &str,
) -> Result<std::path::PathBuf, ScopeFileError> {
    let refused = |e: &dyn std::fmt::Display| ScopeFileError::Refused {
        path: path.to_string(),
        reason: e.to_string(),
    };
    let resolved = project.resolve(path).map_err(|e| match e {
        // A model that invents a path (a 1.5B planner scoped `src/bin/run.rs` for the `run`
        // command) needs the real names to correct it, as a contract's missing path offers them.
        crate::project::PathError::NotFound(_) => {
            let near = crate::contract::similar_files(project, path);
            if near.is_empty() {
                refused(&e)
            } else {
                refused(&format!(
                    "{e}; files with similar names: {} (name one of them, or find the file first)",
                    near.join(", ")
                ))
            }
        }
        e => refused(&e),
    })?;
    project
        .refuse_hidden(path, &resolved)
        .map_err(|e| refused(&e))?;
    if resolved.is_file() {
        Ok(resolved)
    } else {
        Err(ScopeFileError::NotAFile {
            path: path.to_string(),
        })
    }
}
