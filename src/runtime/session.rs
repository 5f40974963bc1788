//! A session: one run of a primary agent on one prompt, with everything it delegates.
//!
//! The session starts the primary hop and ends the session (normally or on Ctrl-C); what its hops
//! share (ids, log, semaphore, models) lives in [`super::shared`].

use chrono::Utc;
use serde::Serialize;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use super::analyze::{AnalyzeError, FileReport};
use super::checkpoint::Checkpoint;
use super::events::{timestamp, EventKind, EventLog};
use super::handoff::{HopRequest, HopResult};
use super::hop::run_hop;
use super::ids::new_id;
use super::resume::ResumePlan;
use super::shared::{ResumeRecord, Shared};
use super::status::{HopStatus, Outcome, SessionStatus};
use crate::agent::AgentSet;
use crate::config::Config;
use crate::model::{Registry, Usage};
use crate::project::Project;

pub use super::options::RunOptions;
pub use super::store::SESSIONS_DIR;

/// Why a session could not start.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// No loaded agent has this name; `why` says so, or which file meant to define it failed
    /// to load (see [`AgentSet::why_missing`]).
    #[error("{why}")]
    UnknownAgent { name: String, why: String },
    #[error(
        "`{0}` is a subagent (mode: subagent) and cannot start a session; run a primary agent, or \
         set `mode: primary` (or `all`) in its frontmatter"
    )]
    NotPrimary(String),
    #[error("cannot write the session log in {}: {error}", dir.display())]
    Log { dir: PathBuf, error: std::io::Error },
}

impl RuntimeError {
    /// The error for `name` not being an agent of `agents`.
    pub fn unknown(agents: &AgentSet, name: &str) -> Self {
        RuntimeError::UnknownAgent {
            name: name.to_string(),
            why: agents.why_missing(name),
        }
    }
}

/// What `run` hands back (and `--json` prints); a durable backend sends it back from a worker.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct SessionOutcome {
    pub session_id: String,
    pub correlation_id: String,
    pub status: SessionStatus,
    /// Which of the five outcomes `status` is (the exit code follows it).
    pub outcome: Outcome,
    pub answer: String,
    pub error: Option<String>,
    /// Project-relative paths of files the session's agents wrote.
    pub written: Vec<String>,
    /// The event log.
    pub events: PathBuf,
    pub usage: Usage,
    /// A PARTIAL session's checkpoint: what `resume` continues from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<Checkpoint>,
    /// The run folder (`.switchboard/runs/<id>`), when it could be written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_folder: Option<PathBuf>,
}

/// A running (or resumable) session.
pub struct Session {
    shared: Arc<Shared>,
    agent: String,
    prompt: String,
    root_hop_id: String,
    resumed: bool,
    clock: Instant,
}

impl Session {
    /// Prepares a new session of `agent` on `prompt`: checks the agent, allocates the ids and
    /// opens the log. Nothing runs until [`Session::run`].
    pub fn new(
        project: Project,
        agents: Arc<AgentSet>,
        config: Config,
        models: Arc<Registry>,
        options: RunOptions,
        agent: &str,
        prompt: &str,
    ) -> Result<Self, RuntimeError> {
        if agents.get(agent).is_some_and(|a| !a.mode.can_be_primary()) {
            return Err(RuntimeError::NotPrimary(agent.to_string()));
        }
        Self::for_agent(project, agents, config, models, options, agent, prompt)
    }

    /// Prepares a session whose root is `agent` whatever its mode: a subagent runs as the root
    /// hop with its contract enforced, as if a primary had delegated the prompt to it. For
    /// callers that serve single agents (`switchboard mcp`); `run` keeps refusing subagents.
    pub fn for_agent(
        project: Project,
        agents: Arc<AgentSet>,
        config: Config,
        models: Arc<Registry>,
        options: RunOptions,
        agent: &str,
        prompt: &str,
    ) -> Result<Self, RuntimeError> {
        if agents.get(agent).is_none() {
            return Err(RuntimeError::unknown(&agents, agent));
        }
        let session_id = new_id();
        let correlation_id = options.correlation_id.clone().unwrap_or_else(new_id);
        Self::build(
            project,
            agents,
            config,
            models,
            options,
            agent,
            prompt,
            session_id,
            correlation_id,
            new_id(),
            None,
        )
    }

    /// Prepares the continuation of a session whose process died (see [`super::resume`]).
    pub fn resume(
        project: Project,
        agents: Arc<AgentSet>,
        config: Config,
        models: Arc<Registry>,
        mut options: RunOptions,
        plan: ResumePlan,
    ) -> Result<Self, RuntimeError> {
        if agents.get(&plan.agent).is_none() {
            return Err(RuntimeError::unknown(&agents, &plan.agent));
        }
        if options.model.is_none() {
            options.model = plan.model.clone();
        }
        options.max_parallel = plan.max_parallel;
        options.max_depth = plan.max_depth;
        let mut s = Self::build(
            project,
            agents,
            config,
            models,
            options,
            &plan.agent,
            &plan.prompt,
            plan.session_id,
            plan.correlation_id,
            plan.root_hop_id,
            Some(plan.hops),
        )?;
        s.resumed = true;
        Ok(s)
    }

    #[allow(clippy::too_many_arguments)]
    fn build(
        project: Project,
        agents: Arc<AgentSet>,
        config: Config,
        models: Arc<Registry>,
        options: RunOptions,
        agent: &str,
        prompt: &str,
        session_id: String,
        correlation_id: String,
        root_hop_id: String,
        resume: Option<ResumeRecord>,
    ) -> Result<Self, RuntimeError> {
        let dir = project.root().join(SESSIONS_DIR).join(&session_id);
        let log = match EventLog::open(&dir, options.fsync, options.observer.clone()) {
            Ok(log) => log,
            Err(error) => return Err(RuntimeError::Log { dir, error }),
        };
        Ok(Session {
            shared: Arc::new(Shared::new(
                project,
                agents,
                config,
                models,
                options,
                session_id,
                correlation_id,
                dir,
                log,
                resume,
            )),
            agent: agent.to_string(),
            prompt: prompt.to_string(),
            root_hop_id,
            resumed: false,
            clock: Instant::now(),
        })
    }

    pub fn id(&self) -> &str {
        &self.shared.session_id
    }

    pub fn correlation_id(&self) -> &str {
        &self.shared.correlation_id
    }

    /// The session's folder (`.switchboard/sessions/<id>`).
    pub fn dir(&self) -> &std::path::Path {
        &self.shared.dir
    }

    /// A session whose shared state `shared` a durable backend opened for ids it was given
    /// (`src/restate/`): the same session, started and ended by the backend.
    #[cfg_attr(not(feature = "restate"), allow(dead_code))]
    pub(crate) fn attach(
        shared: Arc<Shared>,
        agent: &str,
        prompt: &str,
        root_hop_id: &str,
    ) -> Self {
        Session {
            shared,
            agent: agent.to_string(),
            prompt: prompt.to_string(),
            root_hop_id: root_hop_id.to_string(),
            resumed: false,
            clock: Instant::now(),
        }
    }

    /// The request of the session's root hop.
    pub(crate) fn root_request(&self) -> HopRequest {
        HopRequest {
            agent: self.agent.clone(),
            prompt: self.prompt.clone(),
            description: String::new(),
            parent: None,
            depth: 0,
            chain: Vec::new(),
            hop_id: Some(self.root_hop_id.clone()),
        }
    }

    /// Runs the primary hop (and everything it delegates) to its end.
    pub async fn run(&self) -> SessionOutcome {
        self.begin().await;
        let result = run_hop(self.shared.clone(), self.root_request()).await;
        self.end(&result).await
    }

    /// Logs `session.started` (and a repaired log) and starts the MCP servers.
    pub(crate) async fn begin(&self) {
        let shared = &self.shared;
        shared.emit(
            Some(&self.root_hop_id),
            None,
            Some(&self.agent),
            EventKind::SessionStarted {
                prompt: self.prompt.clone(),
                model: shared.options.model.clone(),
                max_parallel: shared.options.max_parallel,
                max_depth: shared.options.max_depth,
                resumed: self.resumed,
            },
        );
        let dropped_bytes = shared.log.repaired_bytes();
        if dropped_bytes > 0 {
            shared.emit(
                Some(&self.root_hop_id),
                None,
                Some(&self.agent),
                EventKind::LogRepaired { dropped_bytes },
            );
        }
        self.start_mcp().await;
    }

    /// Stops the MCP servers and ends the session with the root hop's result.
    pub(crate) async fn end(&self, result: &HopResult) -> SessionOutcome {
        if let Some(mcp) = self.shared.mcp.get() {
            mcp.shutdown().await;
        }
        self.complete(result, None)
    }

    /// Starts the MCP servers the session's agents grant tools of; each one's outcome is an
    /// `mcp.server` event (with `error` when it brings no tools).
    async fn start_mcp(&self) {
        let shared = &self.shared;
        if shared.config.mcp.is_empty() {
            return;
        }
        let (tools, reports) = crate::mcp::McpTools::start_for(
            &shared.config.mcp,
            shared.project.root(),
            &shared.agents,
        )
        .await;
        for report in reports {
            shared.emit(
                Some(&self.root_hop_id),
                None,
                Some(&self.agent),
                EventKind::McpServer(report),
            );
        }
        let _ = shared.mcp.set(tools);
    }

    /// A session whose root is not an agent but a pipeline (`runtime::pipeline`): `label` names
    /// it in the log (`pipeline:NAME`); its workers run as the root's children.
    #[allow(clippy::too_many_arguments)]
    pub fn for_pipeline(
        project: Project,
        agents: Arc<AgentSet>,
        config: Config,
        models: Arc<Registry>,
        options: RunOptions,
        label: &str,
        input: &str,
    ) -> Result<Self, RuntimeError> {
        let correlation_id = options.correlation_id.clone().unwrap_or_else(new_id);
        Self::build(
            project,
            agents,
            config,
            models,
            options,
            label,
            input,
            new_id(),
            correlation_id,
            new_id(),
            None,
        )
    }

    /// What every hop of this session shares, and the root hop's id and label.
    pub(crate) fn parts(&self) -> (&Arc<Shared>, &str, &str) {
        (&self.shared, &self.root_hop_id, &self.agent)
    }

    pub(crate) fn complete(
        &self,
        result: &HopResult,
        status: Option<SessionStatus>,
    ) -> SessionOutcome {
        let status = status.unwrap_or(result.status.into());
        let written = self.shared.written();
        let usage = self.shared.usage();
        self.shared.emit(
            Some(&self.root_hop_id),
            None,
            Some(&self.agent),
            EventKind::SessionCompleted {
                status,
                answer: result.answer.clone(),
                error: result.error.clone(),
                usage,
                duration_us: self.clock.elapsed().as_micros() as u64,
                written: written.clone(),
            },
        );
        let sync_error = self.shared.log.sync().err();
        let run_folder = super::runs::write(
            &self.shared.project,
            &self.shared.session_id,
            self.shared.log.path(),
        )
        .ok();
        SessionOutcome {
            session_id: self.shared.session_id.clone(),
            correlation_id: self.shared.correlation_id.clone(),
            status,
            outcome: status.outcome(),
            answer: result.answer.clone(),
            error: result
                .error
                .clone()
                .or_else(|| sync_error.map(|e| format!("event log: {e}"))),
            written,
            events: self.shared.log.path().to_path_buf(),
            usage,
            checkpoint: result.checkpoint.clone(),
            run_folder,
        }
    }

    /// `switchboard knowledge analyze`: analyses `names` one after another, each chunk a hop of
    /// the `file-analyzer` agent in this session (runtime/analyze.rs), and ends the session.
    pub async fn analyse_files(
        &self,
        names: &[String],
        focus: &str,
        progress: &super::analyze::Progress,
    ) -> (Vec<Result<FileReport, AnalyzeError>>, SessionOutcome) {
        let out = super::analyze::analyse_files(
            &self.shared,
            &self.root_hop_id,
            run_hop,
            names,
            focus,
            progress,
        )
        .await;
        let failed = out.iter().filter(|r| r.is_err()).count();
        let result = HopResult {
            hop_id: self.root_hop_id.clone(),
            agent: self.agent.clone(),
            message_id: String::new(),
            status: if failed == 0 {
                HopStatus::Completed
            } else {
                HopStatus::Failed
            },
            answer: format!("{} file(s) analysed, {failed} failed", out.len() - failed),
            error: None,
            usage: Usage::default(),
            violations: Vec::new(),
            written: Vec::new(),
            reused: false,
            checkpoint: None,
        };
        (out, self.complete(&result, None))
    }

    /// Ends the session after Ctrl-C (call it once the `run` future has been dropped): every hop
    /// still in flight is logged as failed with `interrupted`, then the session, and the log is
    /// synced. `resume` can continue it.
    pub fn interrupt(&self) -> SessionOutcome {
        let hops = self.shared.drain_in_flight();
        let now = timestamp(Utc::now());
        for (hop, (parent, agent)) in hops {
            self.shared.emit(
                Some(&hop),
                parent.as_deref(),
                Some(&agent),
                EventKind::HopFailed {
                    error: "interrupted".into(),
                    usage: Usage::default(),
                    started_at: now.clone(),
                    ended_at: now.clone(),
                    duration_us: 0,
                    violations: Vec::new(),
                },
            );
        }
        let result = HopResult {
            hop_id: self.root_hop_id.clone(),
            agent: self.agent.clone(),
            message_id: String::new(),
            status: HopStatus::Failed,
            answer: String::new(),
            error: Some("interrupted".into()),
            usage: Usage::default(),
            violations: Vec::new(),
            written: Vec::new(),
            reused: false,
            checkpoint: None,
        };
        self.complete(&result, Some(SessionStatus::Interrupted))
    }
}
