//! A session: one run of a primary agent on one prompt, with everything it delegates.
//!
//! The session owns what hops share: the ids (session, correlation, message-id allocator), the
//! event log, the `--max-parallel` semaphore, the model registry, the files written, and (when
//! resuming) the record of hops that already completed.

use chrono::Utc;
use serde::Serialize;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

use super::events::{timestamp, Event, EventKind, EventLog, FsyncPolicy, HopStatus, Observer};
use super::hop::{run_hop, HopRequest, HopResult};
use super::ids::{new_id, MessageIds};
use super::resume::{Recorded, ResumePlan};
use crate::agent::{Agent, AgentSet};
use crate::config::{Config, BUILTIN_DEFAULT_MODEL};
use crate::model::{Message, Registry, Usage};
use crate::project::Project;

/// Where sessions live, relative to the project root.
pub const SESSIONS_DIR: &str = ".switchboard/sessions";

/// Where session `session_id`'s event log is, resolved through the project like any other path.
pub(crate) fn log_path(project: &Project, session_id: &str) -> Result<PathBuf, String> {
    let rel = format!("{SESSIONS_DIR}/{session_id}/events.jsonl");
    project
        .resolve(&rel)
        .map_err(|e| format!("no session `{session_id}`: {e}"))
}

/// How a session runs.
#[derive(Clone)]
pub struct RunOptions {
    /// `--model`: wins over every other choice, for every hop.
    pub model: Option<String>,
    pub correlation_id: Option<String>,
    pub max_parallel: usize,
    pub max_depth: u32,
    /// Wall-clock limit of a hop whose agent sets no `budget.wall_seconds`.
    pub hop_timeout: Duration,
    pub fsync: FsyncPolicy,
    /// Sees every event as it is logged (the live view).
    pub observer: Option<Observer>,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            model: None,
            correlation_id: None,
            max_parallel: 8,
            max_depth: 3,
            hop_timeout: Duration::from_secs(600),
            fsync: FsyncPolicy::Background,
            observer: None,
        }
    }
}

/// Why a session could not start.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RuntimeError {
    #[error("unknown agent `{0}`")]
    UnknownAgent(String),
    #[error("`{0}` is a subagent (mode: subagent) and cannot start a session")]
    NotPrimary(String),
    #[error("cannot write the session log: {0}")]
    Log(String),
    #[error("{0}")]
    Resume(String),
}

/// What `run` hands back (and `--json` prints).
#[derive(Debug, Clone, Serialize)]
pub struct SessionOutcome {
    pub session_id: String,
    pub correlation_id: String,
    /// `completed`, `partial`, `non_conformant`, `failed` or `interrupted`.
    pub status: String,
    pub answer: String,
    pub error: Option<String>,
    /// Project-relative paths of files the session's agents wrote.
    pub written: Vec<String>,
    /// The event log.
    pub events: PathBuf,
    pub usage: Usage,
}

/// State every hop of a session shares.
pub(crate) struct Shared {
    pub project: Project,
    pub agents: Arc<AgentSet>,
    pub config: Config,
    pub models: Arc<Registry>,
    pub options: RunOptions,
    pub session_id: String,
    pub correlation_id: String,
    pub dir: PathBuf,
    pub log: EventLog,
    pub ids: MessageIds,
    pub semaphore: Arc<Semaphore>,
    /// `transcripts.jsonl`, appended once per hop.
    transcripts: Mutex<Option<std::fs::File>>,
    written: Mutex<Vec<String>>,
    /// Tokens of every hop of the session.
    usage: Mutex<Usage>,
    occurrences: Mutex<HashMap<(String, String, String), u32>>,
    in_flight: Mutex<HashMap<String, (Option<String>, String)>>,
    resume: Option<HashMap<(String, String, String, u32), Recorded>>,
}

impl Shared {
    pub fn emit(
        &self,
        hop_id: Option<&str>,
        parent: Option<&str>,
        agent: Option<&str>,
        kind: EventKind,
    ) {
        self.log.append(&Event {
            timestamp: timestamp(Utc::now()),
            session_id: self.session_id.clone(),
            correlation_id: self.correlation_id.clone(),
            hop_id: hop_id.map(str::to_string),
            parent_hop_id: parent.map(str::to_string),
            agent: agent.map(str::to_string),
            kind,
        });
    }

    pub fn add_usage(&self, u: Usage) {
        if let Ok(mut total) = self.usage.lock() {
            total.input_tokens += u.input_tokens;
            total.output_tokens += u.output_tokens;
        }
    }

    pub fn add_written(&self, files: &[String]) {
        if let Ok(mut w) = self.written.lock() {
            for f in files {
                if !w.contains(f) {
                    w.push(f.clone());
                }
            }
        }
    }

    /// Marks a hop running (with its parent and agent), for `interrupt` and timeouts.
    pub fn hop_started(&self, hop_id: &str, parent: Option<&str>, agent: &str) {
        if let Ok(mut s) = self.in_flight.lock() {
            s.insert(
                hop_id.to_string(),
                (parent.map(str::to_string), agent.to_string()),
            );
        }
    }

    /// Takes a hop out of the in-flight set; true if it was there. Only the taker logs the hop's
    /// end, so a hop that an ancestor's timeout or Ctrl-C already ended is not ended twice.
    pub fn end_in_flight(&self, hop_id: &str) -> bool {
        self.in_flight
            .lock()
            .map(|mut s| s.remove(hop_id).is_some())
            .unwrap_or(false)
    }

    /// Takes the in-flight descendants of `hop_id` out of the set, as (hop, parent, agent).
    pub fn take_descendants(&self, hop_id: &str) -> Vec<(String, Option<String>, String)> {
        let Ok(mut s) = self.in_flight.lock() else {
            return Vec::new();
        };
        let below = |hop: &String| {
            let mut hop = hop.as_str();
            while let Some((Some(parent), _)) = s.get(hop) {
                if parent == hop_id {
                    return true;
                }
                hop = parent.as_str();
            }
            false
        };
        let ids: Vec<String> = s.keys().filter(|h| below(h)).cloned().collect();
        ids.into_iter()
            .filter_map(|h| s.remove(&h).map(|(parent, agent)| (h, parent, agent)))
            .collect()
    }

    /// How many times this parent already called this agent with this prompt (0 the first time).
    pub fn next_occurrence(&self, parent: Option<&str>, agent: &str, prompt: &str) -> u32 {
        let key = (
            parent.unwrap_or("").to_string(),
            agent.to_string(),
            prompt.to_string(),
        );
        let Ok(mut map) = self.occurrences.lock() else {
            return 0;
        };
        let n = map.entry(key).or_insert(0);
        let current = *n;
        *n += 1;
        current
    }

    pub fn resume_lookup(
        &self,
        parent: Option<&str>,
        agent: &str,
        prompt: &str,
        occurrence: u32,
    ) -> Option<Recorded> {
        let key = (
            parent.unwrap_or("").to_string(),
            agent.to_string(),
            prompt.to_string(),
            occurrence,
        );
        self.resume.as_ref()?.get(&key).cloned()
    }

    /// The model for a hop: `--model`, then the agent's `model` (`inherit` = the caller's), then
    /// the config (`[agents.NAME]`, then `[model] default`), then the built-in default. Short
    /// names go through `[aliases]`.
    pub fn model_spec(&self, agent: &Agent, caller_model: Option<&str>) -> Result<String, String> {
        if let Some(m) = &self.options.model {
            return Ok(self.config.expand_alias(m).to_string());
        }
        let from_agent = agent
            .model
            .as_deref()
            .map(str::trim)
            .filter(|m| !m.is_empty());
        let chosen = match from_agent {
            Some("inherit") => caller_model.map(str::to_string),
            Some(m) => Some(m.to_string()),
            None => None,
        };
        let chosen = chosen
            .or_else(|| self.config.model_for(&agent.name).map(str::to_string))
            .unwrap_or_else(|| BUILTIN_DEFAULT_MODEL.to_string());
        let expanded = self.config.expand_alias(&chosen).to_string();
        if expanded.contains('/') {
            Ok(expanded)
        } else {
            Err(format!(
                "agent `{}` asks for model `{chosen}`, which is not `provider/model`; map it in \
                 switchboard.toml under [aliases] (e.g. {chosen} = \"anthropic/...\") or pass --model",
                agent.name
            ))
        }
    }

    /// Appends a hop's conversation to `transcripts.jsonl` beside the log (one line per hop).
    ///
    /// One open file rather than a file per hop: creating files is a journaled metadata operation
    /// that stalls behind the event log's fsync.
    pub fn write_transcript(&self, hop_id: &str, system: &str, messages: &[Message]) {
        #[derive(Serialize)]
        struct Transcript<'a> {
            hop_id: &'a str,
            agent_system_prompt: &'a str,
            messages: &'a [Message],
        }
        let Ok(mut line) = serde_json::to_vec(&Transcript {
            hop_id,
            agent_system_prompt: system,
            messages,
        }) else {
            return;
        };
        line.push(b'\n');
        if let Ok(mut f) = self.transcripts.lock() {
            if let Some(f) = f.as_mut() {
                let _ = std::io::Write::write_all(f, &line);
            }
        }
    }
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
        let a = agents
            .get(agent)
            .ok_or_else(|| RuntimeError::UnknownAgent(agent.to_string()))?;
        if !a.mode.can_be_primary() {
            return Err(RuntimeError::NotPrimary(agent.to_string()));
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
            return Err(RuntimeError::UnknownAgent(plan.agent.clone()));
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
        resume: Option<HashMap<(String, String, String, u32), Recorded>>,
    ) -> Result<Self, RuntimeError> {
        let dir = project.root().join(SESSIONS_DIR).join(&session_id);
        let log = EventLog::open(&dir, options.fsync, options.observer.clone())
            .map_err(|e| RuntimeError::Log(format!("{}: {e}", dir.display())))?;
        let ids = MessageIds::for_project(project.root());
        let transcripts = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("transcripts.jsonl"))
            .ok();
        let semaphore = Arc::new(Semaphore::new(options.max_parallel.max(1)));
        Ok(Session {
            shared: Arc::new(Shared {
                project,
                agents,
                config,
                models,
                options,
                session_id,
                correlation_id,
                dir,
                log,
                ids,
                semaphore,
                transcripts: Mutex::new(transcripts),
                written: Mutex::new(Vec::new()),
                usage: Mutex::new(Usage::default()),
                occurrences: Mutex::new(HashMap::new()),
                in_flight: Mutex::new(HashMap::new()),
                resume,
            }),
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

    /// Runs the primary hop (and everything it delegates) to its end.
    pub async fn run(&self) -> SessionOutcome {
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
        let result = run_hop(
            shared.clone(),
            HopRequest {
                agent: self.agent.clone(),
                prompt: self.prompt.clone(),
                description: String::new(),
                parent: None,
                depth: 0,
                chain: Vec::new(),
                hop_id: Some(self.root_hop_id.clone()),
            },
        )
        .await;
        self.complete(&result, None)
    }

    fn complete(&self, result: &HopResult, status: Option<&str>) -> SessionOutcome {
        let status = status.unwrap_or(result.status.as_str()).to_string();
        let written = self.written();
        let usage = self.shared.usage.lock().map(|u| *u).unwrap_or_default();
        self.shared.emit(
            Some(&self.root_hop_id),
            None,
            Some(&self.agent),
            EventKind::SessionCompleted {
                status: status.clone(),
                answer: result.answer.clone(),
                error: result.error.clone(),
                usage,
                duration_us: self.clock.elapsed().as_micros() as u64,
                written: written.clone(),
            },
        );
        let sync_error = self.shared.log.sync().err();
        SessionOutcome {
            session_id: self.shared.session_id.clone(),
            correlation_id: self.shared.correlation_id.clone(),
            status,
            answer: result.answer.clone(),
            error: result
                .error
                .clone()
                .or_else(|| sync_error.map(|e| format!("event log: {e}"))),
            written,
            events: self.shared.log.path().to_path_buf(),
            usage,
        }
    }

    /// Ends the session after Ctrl-C (call it once the `run` future has been dropped): every hop
    /// still in flight is logged as failed with `interrupted`, then the session, and the log is
    /// synced. `resume` can continue it.
    pub fn interrupt(&self) -> SessionOutcome {
        let hops: Vec<(String, (Option<String>, String))> = self
            .shared
            .in_flight
            .lock()
            .map(|mut s| s.drain().collect())
            .unwrap_or_default();
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
        };
        self.complete(&result, Some("interrupted"))
    }

    fn written(&self) -> Vec<String> {
        self.shared
            .written
            .lock()
            .map(|w| w.clone())
            .unwrap_or_default()
    }
}
