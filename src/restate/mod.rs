//! Sessions as durable workflows on a Restate server (feature `restate`; docs/restate.md).
//!
//! A worker (`switchboard worker`) serves two Restate handlers: the session workflow
//! `SwitchboardSession/run`, keyed by the session id, and the hop service `SwitchboardHop/run`.
//! Both run the runtime's own code: the session's start and end (`Session::begin`/`end`) and the
//! one agent loop (`runtime::hop`), whose steps go through the [`Journal`] seam. Here the seam
//! is Restate's journal: each model turn and each built-in tool call is a `ctx.run` step, each
//! `task` delegation a durable call to the hop service (siblings are started before any is
//! awaited, so they run in parallel, possibly on other workers). A worker killed mid-session is
//! replaced by any worker serving the same deployment address: Restate replays the journal, so
//! finished model calls are not sent again and ids (hop, message, correlation) stay the same.
//!
//! `run --on restate://HOST:PORT` submits a session to the ingress and waits for its outcome
//! ([`client`]). Workers share the project folder, so the session's event log is the same file
//! the local runtime writes and `trace`, `stats` and `resume` read it unchanged.
//!
//! [`Journal`]: crate::runtime::journal::Journal

pub mod client;
mod worker;

pub use worker::{listen, serve, Worker};

use serde::{Deserialize, Serialize};

use crate::runtime::handoff::HopRequest;

/// The Restate name of the session workflow.
pub const SESSION_SERVICE: &str = "SwitchboardSession";
/// The Restate name of the hop service.
pub const HOP_SERVICE: &str = "SwitchboardHop";

/// What a session workflow is started with: every id is chosen by the submitter, so a replay
/// (or a second submission of the same session) cannot make new ones.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SessionSpec {
    pub session_id: String,
    pub correlation_id: String,
    pub root_hop_id: String,
    pub agent: String,
    pub prompt: String,
    /// `--model`, for every hop.
    pub model: Option<String>,
    pub max_parallel: usize,
    pub max_depth: u32,
    /// Wall-clock limit of a hop whose agent sets none, in seconds.
    pub hop_timeout_secs: u64,
}

/// One hop for the hop service: the session it belongs to and the request.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HopCall {
    pub session: SessionSpec,
    pub req: HopRequest,
}

/// Why the Restate backend could not do what was asked. Each message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum RestateError {
    #[error("`{0}` is not a Restate address; write restate://HOST:PORT (the server's ingress, 8080 by default)")]
    BadAddress(String),
    #[error("cannot reach the Restate server at {url}: {error}; is restate-server running there?")]
    Unreachable { url: String, error: String },
    #[error("the Restate server at {url} answered {status}: {body}")]
    Refused {
        url: String,
        status: u16,
        body: String,
    },
    #[error("cannot listen on {addr}: {error}")]
    Listen { addr: String, error: std::io::Error },
    #[error("the Restate server sent an outcome that is not one: {0}")]
    BadOutcome(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_spec_round_trips_through_json() {
        let spec = SessionSpec {
            session_id: "s".into(),
            correlation_id: "c".into(),
            root_hop_id: "h".into(),
            agent: "orchestrator".into(),
            prompt: "p".into(),
            model: Some("openai/x".into()),
            max_parallel: 2,
            max_depth: 3,
            hop_timeout_secs: crate::runtime::DEFAULT_HOP_TIMEOUT.as_secs(),
        };
        let text = serde_json::to_string(&spec).unwrap();
        assert_eq!(serde_json::from_str::<SessionSpec>(&text).unwrap(), spec);
    }
}
