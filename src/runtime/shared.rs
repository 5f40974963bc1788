//! What every hop of a session shares: the ids, the event log, the `--max-parallel` semaphore, the
//! model registry, the files written, the in-flight set (for timeouts and Ctrl-C) and, when
//! resuming, the record of hops that already completed.
//!
//! Apart from `session` so the hop loop can use it without importing the session that runs it.

use chrono::Utc;
use serde::Serialize;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tokio::sync::Semaphore;

use super::deadline::Deadline;
use super::events::{timestamp, Event, EventKind, EventLog};
use super::ids::MessageIds;
use super::options::RunOptions;
use super::resume::Recorded;
use crate::agent::{Agent, AgentSet};
use crate::config::{Config, BUILTIN_DEFAULT_MODEL};
use crate::model::{Message, Registry, Usage};
use crate::project::Project;
use crate::tools::webfetch::{SetupError, Web};

/// Why no model could be chosen for a hop. The message is what the hop fails with (and what the
/// event log keeps), so it says how to fix the choice.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "agent `{agent}` asks for model `{chosen}`, which is not `provider/model`; map it in \
     switchboard.toml under [aliases] (e.g. {chosen} = \"anthropic/...\") or pass --model"
)]
pub struct ModelChoiceError {
    pub agent: String,
    pub chosen: String,
}

/// The ids and links every event of a hop carries.
#[derive(Clone)]
pub(crate) struct HopCtx {
    pub shared: Arc<Shared>,
    pub hop_id: String,
    pub parent_hop_id: Option<String>,
    pub agent: String,
    /// Where the hop's steps are kept (`journal.rs`): the local runtime or a durable backend.
    pub journal: super::journal::Journal,
}

impl HopCtx {
    /// Logs `kind` for this hop; held back while a durable hop replays steps it logged before.
    pub fn emit(&self, kind: EventKind) {
        if self.journal.replaying() {
            return;
        }
        self.shared.emit(
            Some(&self.hop_id),
            self.parent_hop_id.as_deref(),
            Some(&self.agent),
            kind,
        );
    }
}

/// The resume record: (parent hop id or "", agent, prompt, occurrence) → the hop.
pub(crate) type ResumeRecord = HashMap<(String, String, String, u32), Recorded>;

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
    /// Hop id → the file the runtime's own search (`search_first:`) ranked first for that hop:
    /// its caller keeps it first among the paths that hop's answer names. By hop, because the
    /// researcher runs two locators at once and each one's file leads only its own answer.
    ranked_first: Mutex<HashMap<String, String>>,
    /// Hop id → when that hop's wall-clock limit runs out: its children are held to it
    /// (see [`super::deadline`]).
    deadlines: Mutex<HashMap<String, Deadline>>,
    /// Tokens of every hop of the session.
    usage: Mutex<Usage>,
    occurrences: Mutex<HashMap<(String, String, String), u32>>,
    in_flight: Mutex<HashMap<String, (Option<String>, String)>>,
    /// Hop id → why a tool call of that hop was refused a path (tier 3: the hop ends BLOCKED
    /// once its turn's calls are answered).
    refusals: Mutex<HashMap<String, String>>,
    resume: Option<ResumeRecord>,
    /// `webfetch`/`websearch`, set up on first use so sessions that never fetch pay nothing.
    web: std::sync::OnceLock<Result<Web, SetupError>>,
    /// The session's MCP servers, started by the session before its root hop.
    pub mcp: std::sync::OnceLock<crate::mcp::McpTools>,
}

impl Shared {
    /// The session's web tools, built from `[webfetch]`/`[websearch]` on first use.
    pub fn web(&self) -> &Result<Web, SetupError> {
        self.web
            .get_or_init(|| Web::new(&self.config.webfetch, &self.config.websearch))
    }

    /// The shared state of a session whose log `log` is open in `dir`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        project: Project,
        agents: Arc<AgentSet>,
        config: Config,
        models: Arc<Registry>,
        options: RunOptions,
        session_id: String,
        correlation_id: String,
        dir: PathBuf,
        log: EventLog,
        resume: Option<ResumeRecord>,
    ) -> Self {
        let ids = MessageIds::for_project(project.root());
        let transcripts = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("transcripts.jsonl"))
            .ok();
        let semaphore = Arc::new(Semaphore::new(options.max_parallel.max(1)));
        Shared {
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
            ranked_first: Mutex::new(HashMap::new()),
            deadlines: Mutex::new(HashMap::new()),
            usage: Mutex::new(Usage::default()),
            occurrences: Mutex::new(HashMap::new()),
            in_flight: Mutex::new(HashMap::new()),
            refusals: Mutex::new(HashMap::new()),
            resume,
            web: std::sync::OnceLock::new(),
            mcp: std::sync::OnceLock::new(),
        }
    }

    /// Tokens of every hop so far.
    pub fn usage(&self) -> Usage {
        self.usage.lock().map(|u| *u).unwrap_or_default()
    }

    /// Project-relative paths of the files written so far, in order.
    pub fn written(&self) -> Vec<String> {
        self.written.lock().map(|w| w.clone()).unwrap_or_default()
    }

    /// Notes `path` as the file the runtime's search for hop `hop_id` ranked first.
    pub fn note_ranked_first(&self, hop_id: &str, path: &str) {
        if let Ok(mut r) = self.ranked_first.lock() {
            r.insert(hop_id.to_string(), path.to_string());
        }
    }

    /// The file the runtime's search for hop `hop_id` ranked first, if it searched.
    pub fn ranked_first(&self, hop_id: &str) -> Option<String> {
        self.ranked_first
            .lock()
            .ok()
            .and_then(|r| r.get(hop_id).cloned())
    }

    /// Notes when hop `hop_id`'s wall-clock limit runs out, for the children it starts.
    pub fn set_deadline(&self, hop_id: &str, deadline: Deadline) {
        if let Ok(mut d) = self.deadlines.lock() {
            d.insert(hop_id.to_string(), deadline);
        }
    }

    /// When hop `hop_id`'s wall-clock limit runs out, while it runs in this process.
    pub fn deadline(&self, hop_id: &str) -> Option<Deadline> {
        self.deadlines
            .lock()
            .ok()
            .and_then(|d| d.get(hop_id).copied())
    }

    /// Forgets an ended hop's deadline.
    pub fn end_deadline(&self, hop_id: &str) {
        if let Ok(mut d) = self.deadlines.lock() {
            d.remove(hop_id);
        }
    }

    /// Takes every in-flight hop out of the set, as (hop, (parent, agent)) (Ctrl-C).
    pub fn drain_in_flight(&self) -> Vec<(String, (Option<String>, String))> {
        self.in_flight
            .lock()
            .map(|mut s| s.drain().collect())
            .unwrap_or_default()
    }

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

    /// Sets the session's totals (a durable backend counts them from the log: its hops ran on
    /// several workers, each with a `Shared` of its own).
    #[cfg_attr(not(feature = "restate"), allow(dead_code))]
    pub fn set_totals(&self, usage: Usage, written: Vec<String>) {
        if let Ok(mut u) = self.usage.lock() {
            *u = usage;
        }
        if let Ok(mut w) = self.written.lock() {
            *w = written;
        }
    }

    pub fn add_usage(&self, u: Usage) {
        if let Ok(mut total) = self.usage.lock() {
            *total += u;
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

    /// Records that a tool call of `hop_id` was refused a path (the first refusal is kept).
    pub fn refuse_path(&self, hop_id: &str, reason: String) {
        if let Ok(mut r) = self.refusals.lock() {
            r.entry(hop_id.to_string()).or_insert(reason);
        }
    }

    /// The path refusal of `hop_id`'s last turn, if any, taken out.
    pub fn take_refusal(&self, hop_id: &str) -> Option<String> {
        self.refusals.lock().ok().and_then(|mut r| r.remove(hop_id))
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
    pub fn model_spec(
        &self,
        agent: &Agent,
        caller_model: Option<&str>,
    ) -> Result<String, ModelChoiceError> {
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
            Err(ModelChoiceError {
                agent: agent.name.clone(),
                chosen,
            })
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
