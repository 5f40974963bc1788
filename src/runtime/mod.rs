//! Sessions and hops: ids, the agent loop (model ↔ tools, repair turns), `task()` dispatch policy
//! (permission, depth, cycles, parallelism), the event log, trace and resume.
//!
//! Start here: [`session::Session::new`] then [`session::Session::run`]; or [`run`] for the
//! common case of a project on disk.

pub mod analyze;
pub mod ask_once;
pub mod check;
pub mod checkpoint;
pub mod deadline;
pub mod deliver;
pub mod dispatch;
pub(crate) mod ending;
pub mod event_schema;
pub mod events;
pub mod evidence_goal;
pub mod handoff;
pub mod hop;
pub mod ids;
pub mod journal;
pub mod options;
pub(crate) mod partial;
pub mod pipeline;
pub(crate) mod plan_gate;
pub mod read_first;
pub mod resume;
pub mod runs;
pub mod search_first;
pub mod session;
pub mod shared;
pub mod stats;
pub mod status;
pub mod store;
pub mod tool_calls;
pub mod trace;
pub mod truncation;
pub mod validator;

pub use events::{Event, EventKind, FsyncPolicy, Observer};
pub use options::{RunOptions, DEFAULT_HOP_TIMEOUT};
pub use session::{RuntimeError, Session, SessionOutcome};
pub use status::{HopStatus, Outcome, SessionStatus};

use std::sync::Arc;

use crate::agent::{load, LoadOptions};
use crate::config::Config;
use crate::model::Registry;
use crate::project::Project;

/// The registry for a project: built-in providers with the config's provider tables.
pub fn registry_for(project: &Project, config: &Config) -> Registry {
    Registry::for_project(project, config)
}

/// Why [`run`] could not start a session.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Config(#[from] crate::config::Error),
    #[error(transparent)]
    Start(#[from] RuntimeError),
}

/// Loads the project's agents and config and runs `agent` on `prompt`.
pub async fn run(
    project: &Project,
    load_options: &LoadOptions,
    agent: &str,
    prompt: &str,
    options: RunOptions,
) -> Result<SessionOutcome, RunError> {
    let config = Config::load(project)?;
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
    )?;
    Ok(session.run().await)
}
