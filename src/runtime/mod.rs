//! Sessions and hops: ids, the agent loop (model ↔ tools, repair turns), `task()` dispatch policy
//! (permission, depth, cycles, parallelism), the event log, trace and resume.
//!
//! Start here: [`session::Session::new`] then [`session::Session::run`]; or [`run`] for the
//! common case of a project on disk.

pub mod check;
pub mod dispatch;
pub mod events;
pub mod hop;
pub mod ids;
pub mod resume;
pub mod session;
pub mod trace;
pub mod truncation;
pub mod view;

pub use events::{Event, EventKind, FsyncPolicy, HopStatus};
pub use session::{RunOptions, RuntimeError, Session, SessionOutcome};

use std::sync::Arc;

use crate::agent::{load, LoadOptions};
use crate::config::Config;
use crate::model::Registry;
use crate::project::Project;

/// The registry for a project: built-in providers with the config's provider tables.
pub fn registry_for(project: &Project, config: &Config) -> Registry {
    Registry::for_project(project, config)
}

/// Loads the project's agents and config and runs `agent` on `prompt`.
pub async fn run(
    project: &Project,
    load_options: &LoadOptions,
    agent: &str,
    prompt: &str,
    options: RunOptions,
) -> Result<SessionOutcome, String> {
    let config = Config::load(project).map_err(|e| e.to_string())?;
    let agents = Arc::new(load(project, load_options));
    let models = Arc::new(registry_for(project, &config));
    let session = Session::new(
        project.clone(),
        agents,
        config,
        models,
        options,
        agent,
        prompt,
    )
    .map_err(|e| e.to_string())?;
    Ok(session.run().await)
}
