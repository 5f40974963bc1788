//! Running a session of the runtime fixture project on a scripted model, for the runtime tests.

use std::path::Path;
use std::sync::Arc;

use switchboard::agent::{load, LoadOptions};
use switchboard::config::Config;
use switchboard::model::{Model, ProviderContext, Registry, ScriptedModel};
use switchboard::project::Project;
use switchboard::runtime::events::read_log;
use switchboard::runtime::{Event, RunOptions, Session, SessionOutcome};

use super::fs;

pub const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/runtime");

/// A fresh copy of the fixture project.
pub fn project() -> (tempfile::TempDir, Project) {
    let dir = tempfile::tempdir().unwrap();
    fs::copy_tree(&Path::new(FIXTURE).join("project"), dir.path());
    let p = Project::open(dir.path()).unwrap();
    (dir, p)
}

/// A fresh copy of the fixture project with the shipped `agent/analyst.md` beside its agents
/// (the JSON-contract and gate tests plan with it).
pub fn project_with_analyst() -> (tempfile::TempDir, Project) {
    let (dir, _) = project();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("agent/analyst.md"),
        dir.path().join("agent/analyst.md"),
    )
    .unwrap();
    let p = Project::open(dir.path()).unwrap();
    (dir, p)
}

/// Runs `researcher` on `prompt` with `script` as the model; returns the outcome and its log.
pub async fn run_with(
    project: &Project,
    script: &str,
    prompt: &str,
    options: RunOptions,
) -> (SessionOutcome, Vec<Event>) {
    let agents = Arc::new(load(project, &LoadOptions::default()));
    assert!(!agents.has_errors(), "{:?}", agents.diagnostics);
    let registry = Registry::with_builtins(ProviderContext::default());
    let model: Arc<dyn Model> = Arc::new(ScriptedModel::from_yaml(script).unwrap());
    registry.insert("scripted/test", model);
    let options = RunOptions {
        model: Some("scripted/test".into()),
        ..options
    };
    let session = Session::new(
        project.clone(),
        agents,
        Config::default(),
        Arc::new(registry),
        options,
        "researcher",
        prompt,
    )
    .unwrap();
    let outcome = session.run().await;
    let events = read_log(&outcome.events).unwrap();
    (outcome, events)
}

/// The built-in providers plus `script` (a scripted model's YAML) as `scripted/test`.
pub fn registry(script: &str) -> Arc<Registry> {
    let registry = Registry::with_builtins(ProviderContext::default());
    let model: Arc<dyn Model> = Arc::new(ScriptedModel::from_yaml(script).unwrap());
    registry.insert("scripted/test", model);
    Arc::new(registry)
}

/// Runs `agent` on `task` in `project` with `config`, the model being `script` (a scripted
/// model's YAML); returns the outcome and its event log. `agent` may be of any mode: a subagent
/// runs as the root hop with its contract enforced (`Session::for_agent`).
pub async fn run_agent(
    project: &Project,
    config: Config,
    script: &str,
    agent: &str,
    task: &str,
) -> (SessionOutcome, Vec<Event>) {
    let agents = Arc::new(load(project, &LoadOptions::default()));
    assert!(!agents.has_errors(), "{:?}", agents.diagnostics);
    let options = RunOptions {
        model: Some("scripted/test".into()),
        ..RunOptions::default()
    };
    let session = Session::for_agent(
        project.clone(),
        agents,
        config,
        registry(script),
        options,
        agent,
        task,
    )
    .unwrap();
    let outcome = session.run().await;
    let events = read_log(&outcome.events).unwrap();
    (outcome, events)
}
