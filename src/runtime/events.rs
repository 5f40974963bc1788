//! The event log: one typed event per line in `.switchboard/sessions/<session_id>/events.jsonl`.
//!
//! Every event carries the session, correlation, hop and parent-hop ids and the agent, so any line
//! can be placed in the hop tree on its own. Events are buffered and written out at hop boundaries
//! (hop.started, hop.completed, hop.failed, session events): after that write a crash of the process
//! loses at most the hops in flight. `fsync` costs milliseconds on ordinary disks, far above the
//! per-hop budget, so by default a background thread syncs after each boundary (group commit: one
//! sync covers every boundary that happened meanwhile) and the log is synced inline when the
//! session ends; [`FsyncPolicy::Inline`] syncs inside every boundary instead.
//!
//! Secrets never reach the log: providers keep their credentials, and nothing here serializes
//! configuration or the environment.

use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex};

use crate::model::Usage;

pub use super::status::{HopStatus, SessionStatus};

/// One contract violation as the log keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ViolationRecord {
    pub rule: String,
    pub message: String,
    #[serde(default)]
    pub line: usize,
    #[serde(default)]
    pub column: usize,
}

/// One line of the log.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Event {
    /// RFC 3339 UTC with microseconds.
    pub timestamp: String,
    pub session_id: String,
    pub correlation_id: String,
    pub hop_id: Option<String>,
    pub parent_hop_id: Option<String>,
    pub agent: Option<String>,
    #[serde(flatten)]
    pub kind: EventKind,
}

/// What happened; serialized as `"type": "hop.started"` and so on, with the fields beside it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum EventKind {
    #[serde(rename = "session.started")]
    SessionStarted {
        prompt: String,
        /// `--model` as given (resume uses it again unless told otherwise).
        model: Option<String>,
        max_parallel: usize,
        max_depth: u32,
        #[serde(default)]
        resumed: bool,
    },
    #[serde(rename = "hop.started")]
    HopStarted {
        depth: u32,
        attempt: u32,
        message_id: String,
        model: String,
        description: String,
        prompt: String,
        /// Nth call of this agent with this prompt by this parent (0-based): resume's key.
        occurrence: u32,
        started_at: String,
    },
    #[serde(rename = "model.request")]
    ModelRequest {
        step: u32,
        messages: usize,
        tools: usize,
    },
    #[serde(rename = "model.response")]
    ModelResponse {
        step: u32,
        usage: Usage,
        tool_calls: usize,
        elapsed_us: u64,
    },
    #[serde(rename = "model.error")]
    ModelError {
        step: u32,
        error: String,
        retry: bool,
    },
    /// A provider attempt that failed transiently and will be retried after `delay_ms`; the
    /// last attempt shows as `model.response` or `model.error`.
    #[serde(rename = "model.retry")]
    ModelRetry {
        step: u32,
        provider: String,
        /// 1-based number of the attempt that failed.
        attempt: u32,
        max_attempts: u32,
        error: String,
        delay_ms: u64,
        elapsed_us: u64,
    },
    /// An answer cut off at the output limit (`max_tokens`). `action` is `continue` (the model
    /// is asked for the rest) or `partial` (too many cuts in a row: the hop ends PARTIAL).
    #[serde(rename = "model.truncated")]
    ModelTruncated {
        step: u32,
        output_tokens: u64,
        /// Native tool calls of the cut-off answer, not run (a call may be cut mid-way).
        dropped_tool_calls: usize,
        action: String,
    },
    /// The model was switched to textual task() calls for the rest of the session, because
    /// its server's chat template cannot do tools.
    #[serde(rename = "model.tools_fallback")]
    ModelToolsFallback {
        step: u32,
        provider: String,
        model: String,
        reason: String,
    },
    #[serde(rename = "tool.call")]
    ToolCall {
        call_id: String,
        tool: String,
        arguments: serde_json::Value,
    },
    #[serde(rename = "tool.result")]
    ToolResult {
        call_id: String,
        tool: String,
        is_error: bool,
        /// The result, cut to a few KiB (the transcript has it whole).
        output: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        written: Option<String>,
        /// For `task`: the child hop that produced the result.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        child_hop_id: Option<String>,
    },
    /// One `webfetch`: where it went, what came back, whether it was cut or served from cache.
    #[serde(rename = "web.fetch")]
    WebFetch(crate::tools::webfetch::FetchRecord),
    /// An MCP server at session start: its tools, or why it has none (a warning).
    #[serde(rename = "mcp.server")]
    McpServer(crate::mcp::ServerReport),
    /// One MCP tool call: server, tool, time, and whether the server was restarted for it.
    #[serde(rename = "mcp.call")]
    McpCall(crate::mcp::CallRecord),
    #[serde(rename = "contract.checked")]
    ContractChecked {
        contract: String,
        message_id: String,
        conformant: bool,
        /// 0 for the first answer, N for the answer after the Nth repair turn.
        repair: u32,
        violations: Vec<ViolationRecord>,
    },
    #[serde(rename = "hop.repair")]
    HopRepair { repair: u32, violations: usize },
    #[serde(rename = "hop.budget")]
    HopBudget {
        used_tokens: u64,
        budget_tokens: u64,
        action: String,
    },
    #[serde(rename = "hop.completed")]
    HopCompleted {
        status: HopStatus,
        message_id: String,
        answer: String,
        usage: Usage,
        started_at: String,
        ended_at: String,
        duration_us: u64,
        steps: u32,
        /// `None` when the agent declares no contract.
        conformant: Option<bool>,
        #[serde(default)]
        violations: Vec<ViolationRecord>,
        #[serde(default)]
        written: Vec<String>,
    },
    #[serde(rename = "hop.failed")]
    HopFailed {
        error: String,
        usage: Usage,
        started_at: String,
        ended_at: String,
        duration_us: u64,
        #[serde(default)]
        violations: Vec<ViolationRecord>,
    },
    /// A hop that completed in an earlier run of the session, reused by `resume` without running.
    #[serde(rename = "hop.reused")]
    HopReused { message_id: String },
    #[serde(rename = "session.completed")]
    SessionCompleted {
        status: SessionStatus,
        answer: String,
        error: Option<String>,
        usage: Usage,
        duration_us: u64,
        #[serde(default)]
        written: Vec<String>,
    },
}

impl EventKind {
    /// The `type` string.
    pub fn name(&self) -> &'static str {
        match self {
            EventKind::SessionStarted { .. } => "session.started",
            EventKind::HopStarted { .. } => "hop.started",
            EventKind::ModelRequest { .. } => "model.request",
            EventKind::ModelResponse { .. } => "model.response",
            EventKind::ModelError { .. } => "model.error",
            EventKind::ModelRetry { .. } => "model.retry",
            EventKind::ModelTruncated { .. } => "model.truncated",
            EventKind::ModelToolsFallback { .. } => "model.tools_fallback",
            EventKind::ToolCall { .. } => "tool.call",
            EventKind::ToolResult { .. } => "tool.result",
            EventKind::WebFetch(_) => "web.fetch",
            EventKind::McpServer(_) => "mcp.server",
            EventKind::McpCall(_) => "mcp.call",
            EventKind::ContractChecked { .. } => "contract.checked",
            EventKind::HopRepair { .. } => "hop.repair",
            EventKind::HopBudget { .. } => "hop.budget",
            EventKind::HopCompleted { .. } => "hop.completed",
            EventKind::HopFailed { .. } => "hop.failed",
            EventKind::HopReused { .. } => "hop.reused",
            EventKind::SessionCompleted { .. } => "session.completed",
        }
    }

    /// Whether the log is written out after this event.
    pub fn is_boundary(&self) -> bool {
        matches!(
            self,
            EventKind::SessionStarted { .. }
                | EventKind::HopStarted { .. }
                | EventKind::HopCompleted { .. }
                | EventKind::HopFailed { .. }
                | EventKind::HopReused { .. }
                | EventKind::SessionCompleted { .. }
        )
    }
}

/// When the log reaches the disk platter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FsyncPolicy {
    /// A background thread syncs after boundaries (group commit); the session end syncs inline.
    #[default]
    Background,
    /// Every boundary syncs before the hop goes on.
    Inline,
}

/// Something that wants to see events as they happen (the live view).
pub type Observer = Arc<dyn Fn(&Event) + Send + Sync>;

/// The appending writer of one session's `events.jsonl`.
pub struct EventLog {
    path: PathBuf,
    inner: Mutex<Inner>,
    policy: FsyncPolicy,
    syncer: Option<mpsc::Sender<()>>,
    observer: Option<Observer>,
}

struct Inner {
    file: std::fs::File,
    buf: Vec<u8>,
    error: Option<String>,
}

impl EventLog {
    /// Opens (appending) `dir/events.jsonl`, creating `dir`.
    pub fn open(
        dir: &Path,
        policy: FsyncPolicy,
        observer: Option<Observer>,
    ) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join("events.jsonl");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)?;
        let syncer = match policy {
            FsyncPolicy::Inline => None,
            FsyncPolicy::Background => {
                let (tx, rx) = mpsc::channel::<()>();
                let sync_file = file.try_clone()?;
                std::thread::Builder::new()
                    .name("switchboard-fsync".into())
                    .spawn(move || {
                        while rx.recv().is_ok() {
                            while rx.try_recv().is_ok() {}
                            let _ = sync_file.sync_data();
                        }
                    })?;
                Some(tx)
            }
        };
        Ok(EventLog {
            path,
            inner: Mutex::new(Inner {
                file,
                buf: Vec::with_capacity(64 * 1024),
                error: None,
            }),
            policy,
            syncer,
            observer,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one event; writes the buffer out (and syncs, per policy) at boundaries.
    pub fn append(&self, event: &Event) {
        if let Some(observer) = &self.observer {
            observer(event);
        }
        let mut line = match serde_json::to_vec(event) {
            Ok(l) => l,
            Err(_) => return,
        };
        line.push(b'\n');
        let boundary = event.kind.is_boundary();
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        inner.buf.extend_from_slice(&line);
        if boundary {
            Self::write_out(&mut inner);
            match self.policy {
                FsyncPolicy::Inline => {
                    if let Err(e) = inner.file.sync_data() {
                        inner.error.get_or_insert(e.to_string());
                    }
                }
                FsyncPolicy::Background => {
                    if let Some(tx) = &self.syncer {
                        let _ = tx.send(());
                    }
                }
            }
        }
    }

    /// Writes everything out and syncs inline (the session's end).
    pub fn sync(&self) -> std::io::Result<()> {
        let mut inner = self
            .inner
            .lock()
            .map_err(|_| std::io::Error::other("event log lock poisoned"))?;
        Self::write_out(&mut inner);
        inner.file.sync_data()?;
        match inner.error.take() {
            Some(e) => Err(std::io::Error::other(e)),
            None => Ok(()),
        }
    }

    fn write_out(inner: &mut Inner) {
        if inner.buf.is_empty() {
            return;
        }
        let buf = std::mem::take(&mut inner.buf);
        if let Err(e) = inner.file.write_all(&buf) {
            inner.error.get_or_insert(e.to_string());
        }
        inner.buf = buf;
        inner.buf.clear();
    }
}

impl Drop for EventLog {
    fn drop(&mut self) {
        let _ = self.sync();
    }
}

/// Reads a log back; a torn last line (the process died mid-write) is skipped.
pub fn read_log(path: &Path) -> std::io::Result<Vec<Event>> {
    let text = std::fs::read_to_string(path)?;
    Ok(text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect())
}

/// `2026-11-21T10:00:00.123456Z`.
pub fn timestamp(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}
