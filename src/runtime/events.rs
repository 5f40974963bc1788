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
use crate::problem::Problem;

pub use super::status::{HopStatus, SessionStatus};

/// One line of the log.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
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
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
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
        /// `required` when the turn must be a tool call (the agent's `tool_choice:`); `none` when
        /// the agent's tools are held back for a final answer (still described, not callable:
        /// `tools` is then 0).
        #[serde(default, skip_serializing_if = "crate::model::ToolChoice::is_auto")]
        tool_choice: crate::model::ToolChoice,
        /// The temperature this turn is sampled at, when it is warmer than the agent's because
        /// the turn before had all its calls refused as repeats.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        warmed: Option<f64>,
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
    /// is asked for the rest), `retry_loop` (the cut answer ended in a loop of repeats: the
    /// model is asked for the whole answer again), `retry_json` (an answer due as one JSON
    /// object was cut before the object began: it is asked for again, the object only),
    /// `call_kept` (what loops is a tool call
    /// written as text: the answer up to its first repeat is taken, and the call read from it)
    /// or `partial` (too many cuts in a row: the hop ends PARTIAL).
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
    /// Tool calls the model wrote as text (a JSON object, `<tool_call>`, `[TOOL_CALLS]`,
    /// `<|python_tag|>`, `task(...)`) although tools were offered: read back and run like native
    /// calls (see `model::recover`). `form` names how they were written.
    #[serde(rename = "model.tool_call_recovered")]
    ModelToolCallRecovered {
        step: u32,
        form: String,
        tools: Vec<String>,
        call_ids: Vec<String>,
    },
    /// A final answer held to the agent's `deliver:` declaration: `outcome` is `met` (with the
    /// file), `repair` (a repair turn says what is missing) or `partial` (repairs used up: the
    /// hop ends PARTIAL). `verified` counts the best matching file's verified evidence.
    #[serde(rename = "deliver.checked")]
    DeliverChecked {
        write: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
        verified: u64,
        required: u32,
        outcome: String,
        repair: u32,
    },
    /// A final answer that is the document itself, saved by the runtime at `path` for
    /// `deliver.from_answer` (before `deliver.checked` judges it), or that document saved again
    /// with the subagents' verified findings it left out added (`report_findings_added`);
    /// `error` when it could not be.
    #[serde(rename = "deliver.saved")]
    DeliverSaved {
        path: String,
        bytes: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
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
    /// A plan passed the gate of the hop's agent (`gate:`): what it says, which sources it chose
    /// and what they opened. `via` is `plan` (the agent's `plan` tool) or the planning agent's
    /// name; `fallback` when that agent's declared fallback stood in for its answer.
    #[serde(rename = "gate.plan")]
    GatePlan {
        via: String,
        contract: String,
        plan: serde_json::Value,
        sources: Vec<String>,
        allowed: Vec<String>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        fallback: bool,
    },
    /// The runtime asked the plan agent itself (`gate.ask: runtime`) before the agent's first
    /// turn; the `tool.call` with `call_id` follows, and its result is the agent's first read.
    #[serde(rename = "gate.asked")]
    GateAsked { call_id: String, plan_agent: String },
    /// A call the gate refused (before a plan, or outside the plan's sources); the model got
    /// `reason` as the tool error.
    #[serde(rename = "gate.refused")]
    GateRefused {
        call_id: String,
        tool: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target: Option<String>,
        reason: String,
    },
    #[serde(rename = "contract.checked")]
    ContractChecked {
        contract: String,
        message_id: String,
        conformant: bool,
        /// 0 for the first answer, N for the answer after the Nth repair turn.
        repair: u32,
        violations: Vec<Problem>,
    },
    #[serde(rename = "hop.repair")]
    HopRepair { repair: u32, violations: usize },
    /// How a contract check of a final answer came out, for `switchboard stats`: `valid` (first
    /// pass), `repaired` (after `repairs` turns), `fallback` (with `reason`), `non_conformant`,
    /// `failed`. `sanitized` counts sanitize rules that changed the answer; `question` is set
    /// when the answer asks the caller a clarifying question.
    #[serde(rename = "contract.outcome")]
    ContractOutcome {
        contract: String,
        outcome: String,
        repairs: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        #[serde(default)]
        sanitized: u32,
        #[serde(default)]
        question: bool,
    },
    /// The runtime edited an accepted answer before handing it up: `narrowed` when a reference
    /// was cut to the lines its excerpt quotes (`contract::fix::narrow`), `retitled` the items
    /// whose repeated claim took their own lines' words (`contract::retitle`). `contract.outcome`
    /// counts such edits in `sanitized`; this says which were made.
    #[serde(rename = "contract.edited")]
    ContractEdited {
        contract: String,
        narrowed: bool,
        retitled: u32,
    },
    /// A budget limit reached: `wrap_up` when a declared limit hit its threshold and the agent
    /// was asked for a checkpoint (`budget_tokens` is 0 when that limit was turns or wall time),
    /// `stop` at 100 % of the tokens.
    #[serde(rename = "hop.budget")]
    HopBudget {
        used_tokens: u64,
        budget_tokens: u64,
        action: String,
    },
    /// The runtime steered the hop's next turn. `why` is `refused_calls` when every call of
    /// the last `count` turns was refused as a repeat of an earlier call: the next
    /// turn offers no tools and asks for the final answer; `observed_again` is the same after
    /// one turn, for a subagent that writes nothing and follows no workflow, when every call of
    /// that turn repeated a read or search that had succeeded. It is `tool_required` when an agent
    /// with `tool_choice: required` answered before calling any tool: it is told to call one
    /// (`count` is that reminder's number). The asks made once after an accepted answer
    /// (`runtime::ask_once`) are `evidence_goal` (then `evidence_goal_richer` or
    /// `evidence_goal_kept`; `count` is the first answer's verified items) and
    /// `search_first_left_out` (then `search_first_named` or `search_first_kept`), and
    /// `search_first_added` when the runtime added the search's first file itself
    /// (`search_first_not_added` when that copy broke the contract more than the answer did,
    /// which then goes up as it was).
    /// `workflow_step_owed` is a call refused because the step owed does not open its tool.
    /// `read_first_shown` is a `read` of lines `read_first` put in the task message, answered
    /// with where they are instead of running; `read_first_rest` is one that began among those
    /// lines and ran on past them, run for the lines after them only; `read_first_whole` is a first turn offered no
    /// tools because `read_first` showed every file the task names whole (`count` files).
    /// `write_now` is a turn offered no tools because the note to write the owed document now
    /// came after two turns in a row and the second showed no verified Evidence item more
    /// than the first (`count` items).
    /// `delegate_owed` is the runtime making the analyses a gated agent's plan owed (`count`
    /// calls) because it answered with the document it owes before any subagent had read
    /// anything (`HopState::delegate_owed`).
    /// `analyze_found` is the runtime making, before the agent's first turn, the analyses its
    /// plan names next for what its `delegate_first` subagents found (`count` calls;
    /// `analyze_found: true`, `HopState::found_analyses`).
    /// `repair_write_now` is a repair turn of a report that is the agent's answer offered no
    /// tools because its subagents' verified Evidence already holds the items it needs.
    /// `delivered` is a turn offered no tools because the document the agent owes as a file
    /// is written and meets its `deliver:` declaration.
    /// `report_frontmatter_added` is a final answer
    /// saved as the deliverable with the frontmatter the runtime knows put above its sections
    /// (`deliver::document_from_sections`); `report_frontmatter_closed` one whose frontmatter
    /// was left open, saved with its `---` put after its fields (`contract::fix::close_frontmatter`).
    /// `task_to_reader` is a `task` that names files given to their source's reader, and
    /// `task_reader_blocked` one refused because that reader ended BLOCKED, and
    /// `task_analyzed_already` one refused because a reader read and cited every file it names
    /// already (`count` files; docs/gate.md).
    /// `reject_revised` is a validator's `reject` of an answer whose every Evidence item
    /// verifies, sent back to the worker as a revision (docs/outcomes.md).
    /// `time_short` is a turn offered no tools, and every turn after it, because it started in
    /// the last fifth of the hop's wall-clock limit, the part kept for its answer (`count` is
    /// the seconds left; `runtime::deadline`).
    #[serde(rename = "hop.steered")]
    HopSteered { why: String, count: u32 },
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
        violations: Vec<Problem>,
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
        violations: Vec<Problem>,
    },
    /// A hop failed closed (tier 3): why, and what a person must do before running it again.
    /// Logged just before the hop's `hop.failed`; nothing retries it automatically.
    #[serde(rename = "hop.blocked")]
    HopBlocked { reason: String, action: String },
    /// A hop stopped early (tier 2) left this checkpoint: what is done, what remains, the next
    /// steps. `source` is `agent` (asked for and validated) or `runtime` (the agent could not be
    /// asked, or its checkpoint did not validate). `path` is the copy under the session folder.
    /// `resume` hands it to the hop's next attempt.
    #[serde(rename = "hop.checkpoint")]
    HopCheckpoint {
        reason: String,
        checkpoint: super::checkpoint::Checkpoint,
        path: String,
    },
    /// A validator's verdict on a worker's checked answer (`validator:` in the worker's
    /// frontmatter), logged on the worker's hop. `verdict` is `accept`, `revise`, `reject`, or
    /// `none` when the validator gave no usable one; `feedback` went to the worker only.
    /// `overruled` is why the runtime did not follow a `revise` or `reject` and handed the
    /// answer to its caller: the objection named a finding but no words of it that its excerpt
    /// lacks (`runtime::validator`).
    #[serde(rename = "validator.verdict")]
    ValidatorVerdict {
        validator: String,
        verdict: String,
        round: u32,
        feedback: String,
        child_hop_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        overruled: Option<String>,
    },
    /// A pipeline event a worker emitted (`runtime::pipeline`), logged on the worker's hop:
    /// delivered to `subscribers` when `valid`, else refused with `problems` (and the worker
    /// BLOCKED; `event_type` is empty when the answer held no readable events).
    #[serde(rename = "pipeline.event")]
    PipelineEvent {
        event_type: String,
        worker: String,
        valid: bool,
        #[serde(default)]
        problems: Vec<String>,
        data: serde_json::Value,
        #[serde(default)]
        subscribers: Vec<String>,
    },
    /// A hop that completed in an earlier run of the session, reused by `resume` without running.
    #[serde(rename = "hop.reused")]
    HopReused { message_id: String },
    /// The log ended in a torn line (the process died mid-write) and was cut back to its last
    /// complete line before this run appended to it.
    #[serde(rename = "log.repaired")]
    LogRepaired { dropped_bytes: u64 },
    /// One `step` call of a checkpoint workflow (src/workflow/): the step, the reply's action
    /// (`PROCEED`, `UNCHANGED`, `CLARIFY`, `INVALID`, `STOP`, or `ERROR` when it could not be
    /// judged), the attempt stored (0: refused or unchanged, not stored) and, after the last
    /// step, the document written.
    #[serde(rename = "workflow.step")]
    WorkflowStep {
        workflow: String,
        run_id: String,
        step: String,
        action: String,
        attempt: u32,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        errors: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        document: Option<String>,
    },
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
            EventKind::ModelToolCallRecovered { .. } => "model.tool_call_recovered",
            EventKind::DeliverChecked { .. } => "deliver.checked",
            EventKind::DeliverSaved { .. } => "deliver.saved",
            EventKind::ToolCall { .. } => "tool.call",
            EventKind::ToolResult { .. } => "tool.result",
            EventKind::WebFetch(_) => "web.fetch",
            EventKind::McpServer(_) => "mcp.server",
            EventKind::McpCall(_) => "mcp.call",
            EventKind::GatePlan { .. } => "gate.plan",
            EventKind::GateRefused { .. } => "gate.refused",
            EventKind::GateAsked { .. } => "gate.asked",
            EventKind::ContractChecked { .. } => "contract.checked",
            EventKind::HopRepair { .. } => "hop.repair",
            EventKind::ContractOutcome { .. } => "contract.outcome",
            EventKind::ContractEdited { .. } => "contract.edited",
            EventKind::HopBudget { .. } => "hop.budget",
            EventKind::HopSteered { .. } => "hop.steered",
            EventKind::HopCompleted { .. } => "hop.completed",
            EventKind::HopFailed { .. } => "hop.failed",
            EventKind::HopBlocked { .. } => "hop.blocked",
            EventKind::HopCheckpoint { .. } => "hop.checkpoint",
            EventKind::ValidatorVerdict { .. } => "validator.verdict",
            EventKind::PipelineEvent { .. } => "pipeline.event",
            EventKind::HopReused { .. } => "hop.reused",
            EventKind::LogRepaired { .. } => "log.repaired",
            EventKind::WorkflowStep { .. } => "workflow.step",
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
    repaired: u64,
}

struct Inner {
    file: std::fs::File,
    buf: Vec<u8>,
    error: Option<String>,
    /// Set by `session.completed`: nothing is appended after it (see [`EventLog::append`]).
    closed: bool,
}

impl EventLog {
    /// Opens (appending) `dir/events.jsonl`, creating `dir`. A torn last line is cut off first
    /// (see [`repair_torn_tail`]); [`EventLog::repaired_bytes`] says how much.
    pub fn open(
        dir: &Path,
        policy: FsyncPolicy,
        observer: Option<Observer>,
    ) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join("events.jsonl");
        let repaired = repair_torn_tail(&path)?;
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
                closed: false,
            }),
            policy,
            syncer,
            observer,
            repaired,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes of a torn last line cut off when the log was opened (0: it ended cleanly).
    pub fn repaired_bytes(&self) -> u64 {
        self.repaired
    }

    /// Appends one event; writes the buffer out (and syncs, per policy) at boundaries.
    ///
    /// `session.completed` is the last line a log gets while open: an event appended after it
    /// is dropped, for the log and for the observer. A session stopped by a signal writes its
    /// end (`Session::interrupt`) while the hop tasks it aborted may still be inside a poll on
    /// another worker thread; one such task's `model.request` once landed after the end
    /// (CI, stop 63), and a reader takes the last line for the session's outcome. The check
    /// and the write share the lock, so no event slips in between.
    pub fn append(&self, event: &Event) {
        let mut line = match serde_json::to_vec(event) {
            Ok(l) => l,
            Err(_) => return,
        };
        line.push(b'\n');
        let boundary = event.kind.is_boundary();
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        if inner.closed {
            return;
        }
        inner.closed = matches!(event.kind, EventKind::SessionCompleted { .. });
        // Under the lock, so the live view sees the log's order.
        if let Some(observer) = &self.observer {
            observer(event);
        }
        inner.buf.extend_from_slice(&line);
        // After a model turn the buffer is written out but not synced: one write per turn (a
        // turn takes seconds to minutes), so `tail -f` on a long hop shows each turn as it
        // ends instead of nothing until the hop does.
        if !boundary && matches!(event.kind, EventKind::ModelResponse { .. }) {
            Self::write_out(&mut inner);
        }
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

    /// Writes the buffered events out without syncing: a durable step calls it before it runs,
    /// so a worker killed during the step leaves every event logged before it on disk.
    pub fn flush(&self) {
        if let Ok(mut inner) = self.inner.lock() {
            Self::write_out(&mut inner);
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

/// Makes the log at `path` end on a complete line before anything is appended, returning the
/// bytes dropped. A process that dies mid-write leaves a torn last line; appending to it would
/// glue the next event onto the fragment and lose both. A last line without its newline that
/// still parses as an event only gets the newline. A missing file is fine (0).
pub fn repair_torn_tail(path: &Path) -> std::io::Result<u64> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let len = file.metadata()?.len();
    // Scan back from the end in chunks for the last newline: only the tail is read.
    let mut tail: Vec<u8> = Vec::new();
    let mut pos = len;
    let keep = loop {
        if pos == 0 {
            break 0;
        }
        let step = pos.min(64 * 1024);
        pos -= step;
        let mut chunk = vec![0u8; step as usize];
        file.seek(SeekFrom::Start(pos))?;
        file.read_exact(&mut chunk)?;
        chunk.extend_from_slice(&tail);
        tail = chunk;
        if let Some(i) = memchr::memrchr(b'\n', &tail) {
            break pos + i as u64 + 1;
        }
    };
    if keep == len {
        return Ok(0);
    }
    let fragment = &tail[tail.len() - (len - keep) as usize..];
    if serde_json::from_slice::<Event>(fragment).is_ok() {
        file.seek(SeekFrom::End(0))?;
        file.write_all(b"\n")?;
        return Ok(0);
    }
    file.set_len(keep)?;
    file.sync_data()?;
    Ok(len - keep)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn line(n: u32) -> String {
        let e = Event {
            timestamp: "2026-11-21T10:00:00.000000Z".into(),
            session_id: "s".into(),
            correlation_id: "c".into(),
            hop_id: None,
            parent_hop_id: None,
            agent: None,
            kind: EventKind::HopRepair {
                repair: n,
                violations: 1,
            },
        };
        serde_json::to_string(&e).unwrap() + "\n"
    }

    #[test]
    fn a_torn_tail_is_cut_to_the_last_complete_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        assert_eq!(repair_torn_tail(&path).unwrap(), 0, "no file yet");
        let good = format!("{}{}", line(1), line(2));
        let torn = &line(3)[..20];
        std::fs::write(&path, format!("{good}{torn}")).unwrap();
        assert_eq!(repair_torn_tail(&path).unwrap(), 20);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), good);
        assert_eq!(repair_torn_tail(&path).unwrap(), 0, "already clean");
        // Only a fragment: nothing survives.
        std::fs::write(&path, torn).unwrap();
        assert_eq!(repair_torn_tail(&path).unwrap(), 20);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "");
        // A whole event that only lost its newline keeps its place.
        let whole = line(4);
        std::fs::write(&path, format!("{good}{}", whole.trim_end())).unwrap();
        assert_eq!(repair_torn_tail(&path).unwrap(), 0);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            format!("{good}{whole}")
        );
    }

    /// Nothing lands after `session.completed` while the log is open (a hop task aborted by a
    /// signal may still emit), and neither does the observer hear it; a log opened again (a
    /// resumed session) takes events again.
    #[test]
    fn nothing_is_appended_after_the_session_completed() {
        let dir = tempfile::tempdir().unwrap();
        let event = |kind: EventKind| Event {
            timestamp: "2026-12-02T22:00:00.000000Z".into(),
            session_id: "s".into(),
            correlation_id: "c".into(),
            hop_id: None,
            parent_hop_id: None,
            agent: None,
            kind,
        };
        let repair = |n| EventKind::HopRepair {
            repair: n,
            violations: 1,
        };
        let heard = Arc::new(Mutex::new(Vec::new()));
        let h = heard.clone();
        let observer: Observer = Arc::new(move |e: &Event| h.lock().unwrap().push(e.kind.name()));
        let log = EventLog::open(dir.path(), FsyncPolicy::Inline, Some(observer)).unwrap();
        log.append(&event(repair(1)));
        log.append(&event(EventKind::SessionCompleted {
            status: SessionStatus::Interrupted,
            answer: String::new(),
            error: Some("interrupted".into()),
            usage: Usage::default(),
            duration_us: 0,
            written: Vec::new(),
        }));
        log.append(&event(repair(2)));
        log.sync().unwrap();
        drop(log);
        let names = |events: Vec<Event>| events.iter().map(|e| e.kind.name()).collect::<Vec<_>>();
        let path = dir.path().join("events.jsonl");
        assert_eq!(
            names(read_log(&path).unwrap()),
            ["hop.repair", "session.completed"]
        );
        assert_eq!(*heard.lock().unwrap(), ["hop.repair", "session.completed"]);
        let log = EventLog::open(dir.path(), FsyncPolicy::Inline, None).unwrap();
        log.append(&event(repair(3)));
        log.sync().unwrap();
        assert_eq!(
            names(read_log(&path).unwrap()),
            ["hop.repair", "session.completed", "hop.repair"]
        );
    }

    #[test]
    fn a_tail_longer_than_one_chunk_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let torn = "x".repeat(200_000);
        std::fs::write(&path, format!("{}{torn}", line(1))).unwrap();
        assert_eq!(repair_torn_tail(&path).unwrap(), 200_000);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), line(1));
    }
}
