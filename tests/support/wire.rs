//! One session of a project's agent against the in-process mock provider (OpenAI wire), for the
//! tests of what the runtime makes of a model's answers.

use std::sync::Arc;

use switchboard::agent::{load, LoadOptions};
use switchboard::config::Config;
use switchboard::model::{ProviderContext, Registry};
use switchboard::project::Project;
use switchboard::runtime::events::read_log;
use switchboard::runtime::{Event, EventKind, RunOptions, Session, SessionOutcome};

use super::mock::{Mock, Proto};

/// Runs `agent` on `prompt` with `mock/m1` as the model; returns the outcome and its log. A
/// subagent runs as the root hop, as `eval` runs it.
pub async fn session(
    project: &Project,
    mock: &Mock,
    agent: &str,
    prompt: &str,
) -> (SessionOutcome, Vec<Event>) {
    session_with(project, mock, agent, prompt, RunOptions::default()).await
}

/// [`session`] with `options` (its model is set to `mock/m1`).
pub async fn session_with(
    project: &Project,
    mock: &Mock,
    agent: &str,
    prompt: &str,
    options: RunOptions,
) -> (SessionOutcome, Vec<Event>) {
    let config = format!(
        "[providers.mock]\nprotocol = \"openai\"\nbase_url = \"{}\"\nretry_base_ms = 5\nrequest_timeout_secs = 5\n",
        mock.base_url(Proto::OpenAi)
    );
    let config = Config::parse(&config, "switchboard.toml").expect("config");
    let agents = Arc::new(load(project, &LoadOptions::default()));
    assert!(!agents.has_errors(), "{:?}", agents.diagnostics);
    let registry = Registry::with_builtins(ProviderContext {
        project_root: project.root().to_path_buf(),
        providers: config.providers.clone(),
        stream: None,
    });
    let options = RunOptions {
        model: Some("mock/m1".into()),
        ..options
    };
    let session = Session::for_agent(
        project.clone(),
        agents,
        config,
        Arc::new(registry),
        options,
        agent,
        prompt,
    )
    .expect("session");
    let outcome = session.run().await;
    let events = read_log(&outcome.events).expect("log");
    (outcome, events)
}

/// The output of the tool result logged for `call_id`, if there is one.
pub fn tool_output(events: &[Event], call_id: &str) -> Option<String> {
    events.iter().find_map(|e| match &e.kind {
        EventKind::ToolResult {
            call_id: id,
            output,
            ..
        } if id == call_id => Some(output.clone()),
        _ => None,
    })
}
