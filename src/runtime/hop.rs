//! (Over 600 lines: the loop is one function whose steps — hard budget stop, truncation, the
//! checkpoint reply, the gate, tools, a refused path, the threshold — read in the order they
//! happen; tier-2 endings live in `partial.rs`, tier-3 actions in `ending.rs`.)
//!
//! The agent loop for one hop: render the prompt, ask the model, run the tools it calls, repeat
//! until a final answer; check that answer against the agent's contract, with repair turns; stop
//! at the steps limit, the token budget or the wall-clock limit.
//!
//! A hop is one agent working on one task. Its `task` calls become child hops, run concurrently
//! (each on its own tokio task, bounded by the session's semaphore) and answered in call order.
//! While a hop waits for its children it gives its semaphore permit back, so a chain of
//! delegations deeper than `--max-parallel` cannot deadlock.

//!
//! The jobs around the loop live beside it: what caller and child exchange in
//! [`super::handoff`], running one turn's tool calls and checking `task` calls in
//! [`super::tool_calls`], the contract gate and its repair turns in [`super::check`], logging the
//! hop's end exactly once in [`super::ending`].

use chrono::Utc;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::OwnedSemaphorePermit;

use super::check::{Gate, Verdict};
use super::checkpoint::{self, Checkpoint};
use super::deadline::{self, Deadline};
use super::deliver;
use super::ending::{action, cancel_descendants, finish, never_started, Ending, Finished};
use super::events::{timestamp, EventKind};
use super::handoff::{HopRequest, HopResult};
use super::journal::Journal;
use super::partial;
use super::plan_gate::PlanGate;
use super::shared::{HopCtx, Shared};
use super::status::HopStatus;
use super::truncation::{Next, Pieces};
use super::validator::{self, Review};
use crate::agent::deliver::Deliver;
use crate::agent::render::{render, PromptContext};
use crate::agent::Agent;
use crate::model::recover;
use crate::model::{
    BoxFuture, Message, Model, ModelError, ModelRequest, ModelResponse, ResponseContract,
    ToolChoice, Usage,
};
use crate::tools;

/// Model turns a hop gets when its agent does not set `steps`.
pub const DEFAULT_STEPS: u32 = 50;
/// Share of a budget at which the agent is asked for a checkpoint and the hop ends PARTIAL,
/// when its `budget.threshold` does not say otherwise.
pub const BUDGET_NUDGE: f64 = crate::agent::definition::DEFAULT_THRESHOLD as f64 / 100.0;
/// The call id of the runtime's `delegate_first` delegation.
pub const DELEGATE_FIRST_ID: &str = "delegate_first";

/// The call id of the analyses the runtime makes for a gated agent that owes a document and
/// answered before any subagent had read anything (`HopState::delegate_owed`); the second is
/// `delegate_owed_2`, …
pub const DELEGATE_OWED_ID: &str = "delegate_owed";

/// The call id of the analyses the runtime makes after the `delegate_first` answers when the
/// agent declares `analyze_found: true` (`HopState::analyze_found`); the second is
/// `analyze_found_2`, …
pub const ANALYZE_FOUND_ID: &str = "analyze_found";

/// The call ids of the delegations the runtime makes for an agent rather than the agent itself
/// (each followed by `_2`, `_3`, … when there are several).
pub const RUNTIME_DELEGATION_IDS: [&str; 3] =
    [DELEGATE_FIRST_ID, DELEGATE_OWED_ID, ANALYZE_FOUND_ID];

/// `task` calls with the given arguments, as the runtime makes them: the first has the id
/// `prefix`, the others `prefix_2`, `prefix_3`, … (one of [`RUNTIME_DELEGATION_IDS`]).
fn numbered_tasks(
    prefix: &str,
    arguments: impl IntoIterator<Item = serde_json::Value>,
) -> Vec<crate::model::ToolCall> {
    arguments
        .into_iter()
        .enumerate()
        .map(|(i, arguments)| crate::model::ToolCall {
            id: match i {
                0 => prefix.to_string(),
                n => format!("{prefix}_{}", n + 1),
            },
            name: "task".to_string(),
            arguments,
        })
        .collect()
}

/// How the answer of a `delegate_first` subagent begins in the task message.
pub const DELEGATED_FIRST: &str = "[runtime] The runtime gave your task to ";

/// A `delegate_first` subagent's answer (or failure) as it goes with the task.
fn delegated_first(target: &str, result: &Message) -> String {
    let fence = crate::markdown::fence_for(&result.content);
    let how = if result.is_error {
        "it failed"
    } else {
        "its answer"
    };
    format!(
        "\n\n{DELEGATED_FIRST}`{target}` first (a `task` call with your task word for word); \
         {how}:\n{fence}markdown\n{}\n{fence}",
        result.content.trim_end()
    )
}

/// Who made a turn's tool calls. The runtime's own, before the agent's first turn
/// (`delegate_first`, `gate_plan`, `read_first`, `search_first`), were not the agent's choice:
/// no step of its workflow closes them, and none is answered as already shown. Told apart by
/// the caller, not by call ids, which a model's server may choose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum By {
    Runtime,
    Agent,
}

/// Turns in a row whose every tool call was refused as a repeat of an earlier one, after which
/// the hop's next turn offers no tools and asks for the final answer. A refusal says why and
/// what to do instead; a model that repeats refused calls anyway is not going to get anything
/// new from its tools. Qwen2.5-Coder-1.5B, its subagents all BLOCKED, made 17 refused `task` calls in
/// a row until the session's wall-clock limit; two are enough to tell.
pub const STALLED_TURNS: u32 = 2;
/// Turns in a row whose every `step` call was an accepted step sent again unchanged, after
/// which the hop ends PARTIAL. Not a stall: a stalled hop is offered no tools, and the step it
/// owes is a tool call. Over llama-server the 1.5B planner sent its accepted `intent`
/// seventeen turns running (77k tokens) and never the step after it; each UNCHANGED reply
/// names that step and its call, and the turns after it are sampled warmer, so three in a
/// row say the model is not going to report it.
pub const UNCHANGED_TURNS: u32 = 3;
/// How much warmer a turn is sampled for each turn of refused repeats, unchanged step reports
/// or final answers sent back word for word before it, up to
/// [`WARMEST`]. Asked again as before, a model gives the same call again: the 1.5B planner
/// (temperature 0.2, one seed) sent a refused `step` call three times over. Whisper's decoder
/// retries a failed segment the same way, warmer each time.
const WARMING: f64 = 0.4;
const WARMEST: f64 = 0.8;

/// The temperature of a turn after `refused_turns` turns of refused repeats in a row: the
/// agent's own until one, then warmer ([`WARMING`]); never colder than the agent's. An agent
/// that sets none keeps its provider's default, which the runtime does not know.
fn turn_temperature(agent: Option<f64>, refused_turns: u32) -> Option<f64> {
    agent.map(|t| {
        if refused_turns == 0 {
            t
        } else {
            (t + WARMING * f64::from(refused_turns)).min(WARMEST.max(t))
        }
    })
}
/// What an agent with `tool_choice: required` reads after an answer without a call: what it
/// can call, and that its answer comes from the results.
fn tool_reminder(specs: &[crate::model::ToolSpec]) -> String {
    format!(
        "[runtime] You answered without calling a tool. Your answer must come from what your \
         tools show you: call one now ({}), with the words of your task as its arguments, and \
         answer from its results on the next turn.",
        tool_names(specs)
    )
}

/// The first few tools' names, for what the runtime tells the model: `` `grep`, `glob` ``.
fn tool_names(specs: &[crate::model::ToolSpec]) -> String {
    let names: Vec<String> = specs
        .iter()
        .take(6)
        .map(|s| format!("`{}`", s.name))
        .collect();
    names.join(", ")
}

/// Tool output kept in the event log (the transcript keeps everything).
const LOGGED_OUTPUT: usize = 4096;

mod turn;

/// Runs one hop to its end in the embedded runtime; never panics on model, tool or user errors.
pub(crate) fn run_hop(shared: Arc<Shared>, req: HopRequest) -> BoxFuture<'static, HopResult> {
    run_hop_on(shared, req, Journal::Local)
}

/// Runs one hop to its end with its steps kept by `journal` (see [`super::journal`]): the one
/// agent loop of every backend.
pub(crate) fn run_hop_on(
    shared: Arc<Shared>,
    req: HopRequest,
    journal: Journal,
) -> BoxFuture<'static, HopResult> {
    Box::pin(async move {
        let parent_hop_id = req.parent.as_ref().map(|p| p.hop_id.clone());
        let occurrence = shared.next_occurrence(parent_hop_id.as_deref(), &req.agent, &req.prompt);
        let recorded = shared.resume_lookup(
            parent_hop_id.as_deref(),
            &req.agent,
            &req.prompt,
            occurrence,
        );
        if let Some(done) = recorded.as_ref().and_then(|r| r.completed.clone()) {
            let ctx = HopCtx {
                shared: shared.clone(),
                hop_id: done.hop_id.clone(),
                parent_hop_id,
                agent: req.agent.clone(),
                journal: journal.clone(),
            };
            ctx.emit(EventKind::HopReused {
                message_id: done.message_id.clone(),
            });
            shared.add_written(&done.written);
            return HopResult {
                reused: true,
                ..done
            };
        }
        let hop_id = recorded
            .as_ref()
            .map(|r| r.hop_id.clone())
            .or_else(|| req.hop_id.clone())
            .unwrap_or_else(super::ids::new_id);
        let attempt = recorded.as_ref().map_or(1, |r| r.attempt + 1);
        let ctx = HopCtx {
            shared: shared.clone(),
            hop_id: hop_id.clone(),
            parent_hop_id,
            agent: req.agent.clone(),
            journal: journal.clone(),
        };
        // A missing agent or a model that cannot be chosen is fatal (tier 3): BLOCKED.
        let Some(agent) = shared.agents.get(&req.agent).cloned() else {
            return never_started(
                &ctx,
                String::new(),
                format!("unknown agent `{}`", req.agent),
                Some(action::missing_agent(&req.agent)),
            );
        };
        let fix_model = || Some(action::FIX_MODEL.to_string());
        let model_spec =
            match shared.model_spec(&agent, req.parent.as_ref().map(|p| p.model.as_str())) {
                Ok(s) => s,
                Err(e) => return never_started(&ctx, String::new(), e.to_string(), fix_model()),
            };
        let model = match shared.models.get(&model_spec) {
            Ok(m) => m,
            Err(e) => return never_started(&ctx, String::new(), e.to_string(), fix_model()),
        };
        // Children wait for a slot; the primary hop does not take one.
        let permit = if req.depth > 0 {
            shared.semaphore.clone().acquire_owned().await.ok()
        } else {
            None
        };
        // The hop's duration runs from the same instant as its `started_at`: a clock started
        // after the id allocation and the first log write (a flush) made a parent look shorter
        // than the children it waited for, by however long those took under load.
        let clock = Instant::now();
        // The start time and message id are one step: a replay gets the same ones.
        let begin = {
            let (shared, prefix) = (shared.clone(), agent.message_id_prefix());
            let known = recorded.as_ref().map(|r| r.message_id.clone());
            journal.step("hop.begin", async move {
                let started = Utc::now();
                let id = match known {
                    Some(id) => Ok(id),
                    None => shared
                        .ids
                        .allocate(&prefix, started)
                        .map_err(|e| format!("cannot allocate a message id: {e}")),
                };
                id.map(|id| (started, id))
            })
        };
        let (started, message_id) = match begin.await.map_err(|e| e.to_string()).flatten() {
            Ok(begun) => begun,
            Err(e) => return never_started(&ctx, String::new(), e, None),
        };
        shared.hop_started(&hop_id, ctx.parent_hop_id.as_deref(), &ctx.agent);
        ctx.emit(EventKind::HopStarted {
            depth: req.depth,
            attempt,
            message_id: message_id.clone(),
            model: model_spec.clone(),
            description: req.description.clone(),
            prompt: req.prompt.clone(),
            occurrence,
            started_at: timestamp(started),
        });
        // The hop's wall-clock limit: its own, or what its caller has left before the part the
        // caller keeps for its answer, whichever ends first (see `deadline`).
        let own = agent
            .budget
            .wall_seconds
            .map(Duration::from_secs)
            .unwrap_or(shared.options.hop_timeout);
        let caller_deadline = ctx
            .parent_hop_id
            .as_deref()
            .and_then(|p| shared.deadline(p));
        let limit = deadline::for_hop(own, caller_deadline, clock);
        shared.set_deadline(&hop_id, limit.deadline);
        let mut state = HopState {
            ctx: ctx.clone(),
            deadline: limit.deadline,
            agent,
            req,
            model: model.0,
            model_name: model.1,
            model_spec,
            message_id: message_id.clone(),
            started,
            permit,
            system: String::new(),
            messages: Vec::new(),
            usage: Usage::default(),
            steps: 0,
            last_content: String::new(),
            written: Vec::new(),
            saved_answer: None,
            blocked: Default::default(),
            answered: Default::default(),
            analyzed: Default::default(),
            found_paths: Vec::new(),
            found_by: Vec::new(),
            seen_calls: Default::default(),
            read_ahead: Vec::new(),
            read_files: Vec::new(),
            refused_turns: 0,
            unchanged_steps: 0,
            same_answers: 0,
            last_answer: None,
            observed_again: false,
            asked_user: None,
            noted_findings: None,
            last_note: None,
            delivered_noted: false,
            repair_writes: false,
            follows_workflow: false,
            stalled: false,
            delegated_owed: false,
            called_tool: false,
            tool_reminders: 0,
            plan_gate: None,
            resumed_from: recorded.as_ref().and_then(|r| r.checkpoint.clone()),
        };
        let caller = state.req.parent.as_ref().map(|p| p.agent.clone());
        let caller = caller.as_deref();
        let ending = if limit.wall.is_zero() {
            // Started in its caller's reserve: no time is left for it (see `deadline`).
            Ending::failed(deadline::timed_out(&limit, caller))
        } else {
            match tokio::time::timeout(limit.wall, state.run()).await {
                Ok(ending) => ending,
                Err(_) => {
                    // Dropping the loop aborted the children it was waiting for; they cannot
                    // log their own end, so log it here.
                    cancel_descendants(&shared, &hop_id, &state.agent.name);
                    Ending::failed(deadline::timed_out(&limit, caller))
                }
            }
        };
        shared.end_deadline(&hop_id);
        state.finish(ending, clock.elapsed())
    })
}

struct HopState {
    ctx: HopCtx,
    /// When this hop's wall-clock limit runs out, and the part of it kept for its answer: a
    /// turn in that part is offered no tools (see [`super::deadline`]).
    deadline: Deadline,
    agent: Agent,
    req: HopRequest,
    model: Arc<dyn Model>,
    model_name: String,
    model_spec: String,
    message_id: String,
    started: chrono::DateTime<Utc>,
    permit: Option<OwnedSemaphorePermit>,
    system: String,
    messages: Vec<Message>,
    usage: Usage,
    steps: u32,
    last_content: String,
    written: Vec<String>,
    /// The file this hop saved its answer to (`deliver.from_answer`), replaced by a corrected
    /// answer instead of a new file each time.
    saved_answer: Option<String>,
    /// Subagents that ended BLOCKED for this hop: the next delegation named is another.
    blocked: std::collections::BTreeSet<String>,
    /// Subagents that completed for this hop, and the file paths their answers named (at most
    /// a few): the next delegation named is another subagent, given those paths.
    answered: std::collections::BTreeSet<String>,
    /// Files a reader of the gate was given and cited in verified Evidence, in a completed
    /// hop: a task naming only such files is refused (`HopState::reader_for`).
    analyzed: std::collections::BTreeSet<String>,
    found_paths: Vec<String>,
    /// The subagent that found each of `found_paths`, at the same index: a gate's next
    /// delegation sends a path to the analyzer of the source whose locator found it.
    found_by: Vec<String>,
    /// Turns in a row whose every call was refused as a repeat (see [`STALLED_TURNS`]).
    refused_turns: u32,
    /// Turns in a row whose every `step` call came back UNCHANGED (an accepted step sent again
    /// with its very result): each is sampled warmer, and [`UNCHANGED_TURNS`] end the hop.
    unchanged_steps: u32,
    /// Final answers in a row that were the very text of the final answer before them (see
    /// [`Self::note_answer`]): each is sampled warmer, like a turn of refused calls.
    same_answers: u32,
    /// The last final answer (no tool calls) this hop gave, trimmed.
    last_answer: Option<String>,
    /// Whether the last turn's every call repeated a read or search that had succeeded (see
    /// [`Self::stall_now`]).
    observed_again: bool,
    /// The question a primary's workflow step asked (`CLARIFY`): the hop ends NEEDS_INPUT with
    /// it after this turn (see [`Self::tools_turn`]).
    asked_user: Option<String>,
    /// The most verified Evidence items a note to write the report now showed in this turn's
    /// results (`after_answer`), and in the last earlier turn that had one: a turn after two
    /// notes where the second showed nothing new is offered no tools (see [`Self::write_now`]).
    noted_findings: Option<usize>,
    last_note: Option<usize>,
    /// The written deliverable was found met and the turn after it offered no tools.
    delivered_noted: bool,
    /// The next turn is a repair of the owed report with enough verified items in hand to
    /// meet it: offered no tools ([`Self::report_in_hand`]).
    repair_writes: bool,
    /// Whether the agent is offered `step` (it follows a checkpoint workflow): only then is a
    /// call checked against the step it owes, which reads the workflow's files.
    follows_workflow: bool,
    /// Set once the hop stalled on refused calls: no more tools, the final answer now.
    stalled: bool,
    /// Set once the runtime made the analyses the plan owed for the agent (`delegate_owed`).
    delegated_owed: bool,
    /// Whether the agent has made a tool call in this hop (the runtime's own reads aside), for
    /// `tool_choice: required`.
    called_tool: bool,
    /// Reminders sent to an agent with `tool_choice: required` that answered without a call.
    tool_reminders: u32,
    /// Tool calls made so far (tool and arguments), to refuse identical repeats.
    seen_calls: std::collections::HashMap<String, turn::SeenCall>,
    /// What `read_first` showed in the task message: a `read` of those lines is answered
    /// with where they are (until a write may have changed them).
    read_ahead: Vec<super::read_first::Shown>,
    /// Project-relative files this hop's `read` calls returned: with the session's written
    /// files, the existing files its `write` may replace (`ToolContext::known`).
    read_files: Vec<String>,
    /// The agent's retrieval gate (`gate:`), and the plan it accepted so far.
    plan_gate: Option<PlanGate>,
    /// The checkpoint of this hop's earlier PARTIAL attempt, when `resume` runs it again.
    resumed_from: Option<Checkpoint>,
}

impl HopState {
    /// Whether `added` (the answer with a file `search_first:` ranked first, added by the
    /// runtime) meets the agent's contract as well as `answer` did: the runtime's edit must not
    /// break what the answer met. Logs `hop.steered` `search_first_added` or `_not_added`.
    fn holds_with(&self, added: &str, answer: &str) -> bool {
        let shared = &self.ctx.shared;
        let holds = self.agent.contract.as_ref().is_none_or(|c| {
            super::check::holds_as_well(
                added,
                answer,
                c,
                &shared.project,
                (&shared.correlation_id, &self.message_id),
            )
        });
        let why = if holds {
            "search_first_added"
        } else {
            "search_first_not_added"
        };
        self.ctx.emit(EventKind::HopSteered {
            why: why.into(),
            count: 1,
        });
        holds
    }

    async fn run(&mut self) -> Ending {
        let shared = self.ctx.shared.clone();
        let context = PromptContext {
            agent: self.agent.name.clone(),
            correlation_id: shared.correlation_id.clone(),
            message_id: self.message_id.clone(),
            hop_id: self.ctx.hop_id.clone(),
            parent: self
                .req
                .parent
                .as_ref()
                .map_or(String::new(), |p| p.agent.clone()),
            depth: self.req.depth,
            now: timestamp(self.started),
            today: self.started.format("%Y-%m-%d").to_string(),
            project_root: shared.project.root().display().to_string(),
            subagents: PromptContext::callable_subagents(&shared.agents, &self.agent),
        };
        self.system = match render(&self.agent, &context) {
            Ok(s) => s,
            Err(e) => return Ending::failed(format!("cannot render the prompt: {e}")),
        };
        let mut tool_specs =
            tools::specs_for(&self.agent, &tools::Provided::from_config(&shared.config));
        let callable: Vec<String> = context.subagents.iter().map(|s| s.name.clone()).collect();
        tools::narrow_task(&mut tool_specs, &callable);
        if let Some(mcp) = shared.mcp.get() {
            tool_specs.extend(mcp.specs_for(&self.agent));
        }
        self.plan_gate = match PlanGate::new(&self.agent, &shared.agents) {
            Ok(gate) => gate,
            Err(e) => return Ending::failed(format!("cannot enforce the gate: {e}")),
        };
        if let Some(gate) = &self.plan_gate {
            tool_specs.push(gate.tool_spec(&shared.project));
        }
        // An agent that follows a checkpoint workflow reports its steps with `step`.
        let step_spec = crate::workflow::tool::offer(&self.workflow_call(&shared));
        self.follows_workflow = step_spec.is_some();
        tool_specs.extend(step_spec);
        let response_contract = self
            .agent
            .contract
            .clone()
            .map(|contract| ResponseContract {
                contract,
                message_id: self.message_id.clone(),
                correlation_id: shared.correlation_id.clone(),
                timestamp: context.now.clone(),
            });
        // A hop that stopped PARTIAL before continues from its checkpoint (`resume`).
        let task = match &self.resumed_from {
            Some(c) => format!("{}{}", self.req.prompt, checkpoint::continuation(c)),
            None => self.req.prompt.clone(),
        };
        // `read_first: named`: the files the task names are read before the first turn and
        // their numbered lines go with the task, so a small model starts from the lines it has
        // to cite (see `read_first`).
        let mut reads = super::read_first::calls(&self.agent, &self.req.prompt, &shared.project);
        // A task that names a folder and no file: the runtime finds the document in there by
        // the task's words, and reads that one ahead (`read_first::named_folder`).
        let mut task = task;
        let folder = reads.is_empty().then(|| {
            super::read_first::named_folder(&self.agent, &self.req.prompt, &shared.project)
        });
        if let Some(folder) = folder.flatten() {
            let searches = super::search_first::grep_calls(&folder, &self.req.prompt);
            if !searches.is_empty() {
                let results = self.tools_turn(&searches, By::Runtime).await;
                let listing = super::search_first::listing("", &searches, &results);
                if let Some(first) = listing.first.filter(|_| listing.sets_apart) {
                    let words = super::search_first::words(&self.req.prompt);
                    task.push_str(&super::read_first::chosen_note(&folder, &words, &first));
                    reads = super::read_first::read_calls(&[first], &shared.project);
                }
            }
        }
        // When every named file was shown whole, the first turn is offered no tools: the 1.5B
        // thoughts-analyzer, its whole document in its task, spent its first three turns
        // reading it again (each refused) before it answered.
        let mut answer_first: Option<(&str, u32)> = None;
        let task = if reads.is_empty() {
            task
        } else {
            let results = self.tools_turn(&reads, By::Runtime).await;
            self.read_ahead = super::read_first::shown(&reads, &results, &shared.project);
            answer_first = super::read_first::all_whole(&reads, &self.read_ahead)
                .then_some(("read_first_whole", self.read_ahead.len() as u32));
            super::read_first::with_reads(&task, &reads, &results)
        };
        // `search_first: FOLDER`: the task's words are grepped there first (`search_first`). A
        // search that found something is the agent's first look at its tools' results, so
        // `tool_choice: required` asks for no more.
        let searches = super::search_first::calls(&self.agent, &self.req.prompt, &shared.project);
        // The file those searches ranked first: an answer that leaves it out is asked once.
        let mut search_first_file: Option<(String, bool, bool)> = None;
        let task = if searches.is_empty() {
            task
        } else {
            let results = self.tools_turn(&searches, By::Runtime).await;
            // `grep` says "no matches …" or "no file under … matches the glob …" for nothing.
            self.called_tool = results
                .iter()
                .any(|r| !r.is_error && !r.content.starts_with("no "));
            let listing = super::search_first::listing(&task, &searches, &results);
            if let Some(first) = &listing.first {
                shared.note_ranked_first(&self.ctx.hop_id, first);
            }
            search_first_file = listing
                .first
                .map(|f| (f, listing.named_for_task, listing.sets_apart));
            listing.message
        };
        // `tool_choice: required`: said with the task too, since a server may not enforce it and a
        // small model otherwise copies the prompt's answer template at once (Qwen2.5-Coder-1.5B
        // wrote a locator's envelope until it looped, twice, before any search).
        let task = if self.agent.tool_choice == ToolChoice::Required
            && !tool_specs.is_empty()
            && !self.called_tool
        {
            format!(
                "{task}\n\n[runtime] Start with a tool call ({}), with the words of your task \
                 as its arguments. Your answer comes after, from what the tools show.",
                tool_names(&tool_specs)
            )
        } else {
            task
        };
        let task_at = self.messages.len();
        self.messages.push(Message::user(task));
        // `gate.ask: runtime`: the plan request is the runtime's to make, word for word; the
        // agent's first turn reads its result (the plan, or why it failed).
        let asked = self
            .plan_gate
            .as_ref()
            .and_then(|g| g.runtime_call(&self.req.prompt));
        if let Some(call) = asked {
            let at = self.messages.len();
            let mut results = self.ask_plan(call).await;
            // A plan that opens nothing here is asked for once more (`PlanGate::reask`); the
            // agent reads only the plan that stands, the event log holds both.
            let again = self
                .plan_gate
                .as_ref()
                .and_then(|g| g.reask(&self.req.prompt));
            if let Some(call) = again {
                self.messages.truncate(at);
                results = self.ask_plan(call).await;
            }
            self.messages.extend(results);
        }
        // `delegate_first`: the delegation the agent's prompt asks for first, made by the
        // runtime with the task word for word; the first turn reads its answer. A 1.5B planner
        // never delegated: it invented its scope's files (`src/bin/run.rs`) and looped on them.
        // Several run in one turn, as the researcher's prompt asks of its locators ("in one
        // turn"): the 1.5B researcher, its plan opening `doc` and `code`, called only the
        // thoughts-locator, and the code that answered "where is the retry policy decided?"
        // was never searched.
        let calls = self.delegate_first_calls();
        if !calls.is_empty() {
            let results = self.tools_turn(&calls, By::Runtime).await;
            // A workflow agent is told which step it owes first: shown the locator's files, the
            // planner reported `scope` before `intent`.
            let owed = crate::workflow::tool::next_step_call(&self.workflow_call(&shared));
            let note = owed.map_or(String::new(), |step| {
                format!(
                    "\n\n[runtime] Your workflow starts with its step `{}`: report it now with {}",
                    step["name"].as_str().unwrap_or_default(),
                    crate::workflow::tool::how_to_report(&step)
                )
            });
            // With the task, not as a call of the agent's own: the 1.5B planner, shown the
            // runtime's `task` call as its own last turn, made it again word for word, turn
            // after turn, and never reported `intent`.
            let mut folded = String::new();
            for (call, result) in calls.iter().zip(&results) {
                let target = call.arguments["subagent_type"].as_str().unwrap_or_default();
                folded.push_str(&delegated_first(target, result));
            }
            // `analyze_found`: the analyses the note below would ask for, made by the runtime.
            let analyses = self.found_analyses();
            // One note after every answer: what to delegate next, each path to its source's
            // analyzer (`PlanGate::next_delegation`); after the runtime's analyses instead.
            if analyses.is_empty() {
                if let Some(next) = self.next_delegation() {
                    folded.push_str("\n\n[runtime] ");
                    folded.push_str(&next);
                }
            }
            folded.push_str(&note);
            if let Some(task) = self.messages.get_mut(task_at) {
                task.content.push_str(&folded);
            }
            if !analyses.is_empty() {
                self.runtime_delegations("analyze_found", analyses).await;
            }
        }
        let max_steps = self.agent.steps.unwrap_or(DEFAULT_STEPS).max(1);
        let (contract, message_id) = (self.agent.contract.clone(), self.message_id.clone());
        let template = self.system.clone();
        let mut gate = Gate {
            contract: contract.as_ref(),
            project: &shared.project,
            correlation_id: &shared.correlation_id,
            message_id: &message_id,
            template: Some(&template),
            repairs: 0,
            vars: serde_json::json!({"agent": self.agent.name, "task": self.req.prompt}),
            settled: None,
            questions_asked: if self.req.parent.is_none() {
                shared.options.questions_asked
            } else {
                0
            },
            asked: None,
            tools: tool_specs.iter().map(|t| t.name.clone()).collect(),
        };
        let mut pieces = Pieces::default();
        let mut nudged = false;
        // Set once a checkpoint was asked for: why, and the answer the hop had then.
        let mut checkpointing: Option<(String, String)> = None;
        // Validator reviews so far, bounded like repair turns.
        let mut reviews = 0u32;
        // Repair turns for a missing deliverable, bounded like the contract's.
        let mut deliver_repairs = 0u32;
        // Asks made once after an accepted answer, and the one awaiting its second answer.
        let mut asks = super::ask_once::Pending {
            evidence_goal: self.agent.evidence_goal.map(|goal| {
                let headings = contract.as_ref().map(|c| c.signal_headings.clone());
                (goal, headings.unwrap_or_default())
            }),
            search_first: search_first_file,
        };
        let mut asked: Option<super::ask_once::Asked> = None;
        let max_reviews = contract.as_ref().map_or(2, |c| c.max_repairs);
        let hop_clock = Instant::now();
        let mut turn = 0u32;
        loop {
            self.steps += 1;
            turn += 1;
            let last_step = self.steps >= max_steps;
            if last_step && !tool_specs.is_empty() && !pieces.waiting() && !self.stalled {
                self.messages.push(Message::user(
                    "This is your last step: give your final answer now, with what you have. \
                     No more tool calls.",
                ));
            }
            if self.unchanged_steps >= UNCHANGED_TURNS && !pieces.waiting() {
                let owed = crate::workflow::tool::next_step_name(&self.workflow_call(&shared))
                    .unwrap_or_default();
                return self.partial(format!(
                    "workflow step reported again unchanged {} turns running; `{owed}` was \
                     never reported",
                    self.unchanged_steps
                ));
            }
            if !self.stalled && !pieces.waiting() {
                if self.refused_turns >= STALLED_TURNS {
                    let note = format!(
                        "[runtime] Every call of your last {} turns repeated one you had made \
                         already: repeating them will not change their answers. No more tool calls: give \
                         your final answer now, with what the results above gave you, and say \
                         what is still open.",
                        self.refused_turns
                    );
                    self.stall("refused_calls", self.refused_turns, note);
                } else if self.stall_now() {
                    self.stall(
                        "observed_again",
                        1,
                        "[runtime] Your last turn only made again reads or searches that had \
                         succeeded: their results are above, and they are all your tools have for \
                         this task. No more tool calls: give your final answer now, with what those \
                         results gave you, and say what is still open."
                            .into(),
                    );
                } else if let Some(left) = (!tool_specs.is_empty())
                    .then(|| self.deadline.in_reserve(Instant::now()))
                    .flatten()
                {
                    // In the part of its wall-clock limit kept for its answer, a hop's turns are
                    // offered no tools: a child started now would get no time (see `deadline`).
                    let note = format!(
                        "[runtime] {} s of your wall-clock limit are left: too few for another \
                         tool call or delegation. No more tool calls: give your final answer \
                         now, with what the results above gave you, and say what is still open.",
                        left.as_secs()
                    );
                    self.stall("time_short", left.as_secs() as u32, note);
                }
            }
            // The `step` tool names the step owed now and its result's schema (a local model's
            // grammar is written from it), so it is written again from the run's state before
            // every turn: made once per hop, it held the 1.5B planner to `intent`, accepted,
            // for nine turns.
            if self.follows_workflow {
                if let Some(fresh) = crate::workflow::tool::offer(&self.workflow_call(&shared)) {
                    if let Some(spec) = tool_specs.iter_mut().find(|t| t.name == fresh.name) {
                        *spec = fresh;
                    }
                }
            }
            let held_back = turn == 1 && !tool_specs.is_empty() && answer_first.is_some();
            if let (true, Some((why, count))) = (held_back, answer_first) {
                self.ctx.emit(EventKind::HopSteered {
                    why: why.into(),
                    count,
                });
            }
            let write_now = self.write_now() && !tool_specs.is_empty();
            if write_now {
                self.ctx.emit(EventKind::HopSteered {
                    why: "write_now".into(),
                    count: self.last_note.unwrap_or(0) as u32,
                });
            }
            let delivered = match self.delivered_written() {
                Some(path) if !tool_specs.is_empty() => {
                    self.ctx.emit(EventKind::HopSteered {
                        why: "delivered".into(),
                        count: 1,
                    });
                    self.messages.push(Message::user(format!(
                        "[runtime] Your document is written: `{path}`. No more tool calls: \
                         answer in two or three sentences with where it is and what it holds."
                    )));
                    true
                }
                _ => false,
            };
            let write_repair = std::mem::take(&mut self.repair_writes) && !tool_specs.is_empty();
            let held_back = held_back || write_now || delivered || write_repair;

            let offer_tools = !(last_step
                || checkpointing.is_some()
                || self.stalled
                || held_back
                || tool_specs.is_empty());
            // `tool_choice: required` holds until the agent's first call (see `ToolChoice`).
            // Held back, the tools are still described (`ToolChoice::None`), so the prompt opens
            // as on the turns before and the provider's cache serves it.
            let tool_choice = if offer_tools && !self.called_tool {
                self.agent.tool_choice
            } else if !offer_tools && !tool_specs.is_empty() {
                ToolChoice::None
            } else {
                ToolChoice::Auto
            };
            if !offer_tools && checkpointing.is_none() {
                self.restate_report_now();
            }
            let request = ModelRequest {
                model: self.model_name.clone(),
                agent: self.agent.name.clone(),
                system: self.system.clone(),
                messages: self.messages.clone(),
                tools: tool_specs.clone(),
                tool_choice,
                temperature: turn_temperature(
                    self.agent.temperature,
                    self.refused_turns + self.unchanged_steps + self.same_answers,
                ),
                top_p: self.agent.top_p,
                max_tokens: self.agent.max_tokens,
                response_contract: response_contract.clone(),
            };
            // An agent whose contract asks for a JSON object answers with one: it is never read
            // as a tool's arguments by their shape (names must be written out).
            let json_answers = self
                .agent
                .contract
                .as_ref()
                .is_some_and(|c| c.format == crate::contract::ContractFormat::Json);
            let callable = request.callable_tools();
            let offered = if json_answers {
                let names: Vec<&str> = callable.iter().map(|t| t.name.as_str()).collect();
                recover::Offered::names(&names)
            } else {
                recover::Offered::from_specs(callable)
            };
            self.ctx.emit(EventKind::ModelRequest {
                step: turn,
                messages: request.messages.len(),
                tools: callable.len(),
                tool_choice: request.tool_choice,
                warmed: request
                    .temperature
                    .filter(|&t| Some(t) != self.agent.temperature),
            });
            let clock = Instant::now();
            let turn_call = turn::complete(self.ctx.clone(), self.model.clone(), request, turn);
            let mut response = match self.ctx.journal.model_turn(turn, turn_call).await {
                Ok(r) => r,
                // Tier 2: the same request would overflow again, and so would asking for a
                // checkpoint; the runtime writes one and the hop ends PARTIAL.
                Err(e @ ModelError::ContextOverflow { .. }) => {
                    return self
                        .partial(format!("context overflow: model {}: {e}", self.model_spec))
                }
                Err(e) => return Ending::failed(format!("model {}: {e}", self.model_spec)),
            };
            self.ctx.emit(EventKind::ModelResponse {
                step: turn,
                usage: response.usage,
                tool_calls: response.tool_calls.len(),
                elapsed_us: clock.elapsed().as_micros() as u64,
            });
            self.usage += response.usage;
            if !response.content.trim().is_empty() {
                self.last_content = response.content.clone();
            }
            if let Some(budget) = self.agent.budget.tokens {
                if self.usage.total() >= budget {
                    self.ctx.emit(EventKind::HopBudget {
                        used_tokens: self.usage.total(),
                        budget_tokens: budget,
                        action: "stop".into(),
                    });
                    self.messages
                        .push(Message::assistant(response.content, response.tool_calls));
                    return self.partial(format!(
                        "token budget exhausted ({} of {budget} tokens)",
                        self.usage.total()
                    ));
                }
            }
            if let Some((why, answer)) = checkpointing.take() {
                // This reply is the checkpoint the runtime asked for; its tool calls do not run.
                return self.checkpointed(why, answer, &response.content);
            }
            // A cut-off answer that loops on a call it wrote as text is that call: Qwen2.5-Coder-
            // 1.5B, asked for a call (`tool_choice: required`) through llama.cpp's server,
            // wrote one fenced `grep` call over and over until `max_tokens`.
            if response.truncated && response.tool_calls.is_empty() && !pieces.waiting() {
                let found = super::truncation::before_loop(&response.content).and_then(|kept| {
                    [Some(kept), super::truncation::through_closed_fence(kept)]
                        .into_iter()
                        .flatten()
                        .find_map(|text| {
                            recover::recover(text, &offered, turn).map(|f| (text.to_string(), f))
                        })
                });
                if let Some((kept, found)) = found {
                    self.ctx.emit(EventKind::ModelTruncated {
                        step: turn,
                        output_tokens: response.usage.output_tokens,
                        dropped_tool_calls: 0,
                        action: "call_kept".into(),
                    });
                    response.content = kept;
                    response.truncated = false;
                    self.take_recovered(&mut response, found, turn);
                }
            }
            // A cut-off answer is continued, never taken as final (runtime/truncation.rs).
            match pieces.take(&mut response, &mut self.messages, turn, json_answers, |e| {
                self.ctx.emit(e)
            }) {
                Next::Continue => {
                    // Asking for the rest is not a step of the agent's own.
                    self.steps -= 1;
                    continue;
                }
                // The answer to a once-only ask (`evidence_goal:`, `search_first:`) cut off too
                // often never costs the accepted answer before it: that one stands in for it and
                // is judged below as a second answer that does not win, so the first is kept
                // (`ask_once`). Over llama-server the 1.5B thoughts-analyzer, asked for more
                // Evidence, looped until its limit three times, and its verified answer was
                // lost with the hop (PARTIAL).
                Next::GiveUp { answer, why } => match asked.as_ref() {
                    Some(first) => {
                        response.content = first.answer.clone();
                        response.truncated = false;
                    }
                    None => {
                        self.last_content = answer;
                        return self.partial(why);
                    }
                },
                Next::Proceed => {}
            }
            if !response.content.trim().is_empty() {
                // Again: the answer may now be joined from pieces.
                self.last_content = response.content.clone();
            }
            if response.tool_calls.is_empty() {
                self.recover_calls(&mut response, &offered, turn);
            }
            if response.tool_calls.is_empty() && tool_choice == ToolChoice::Required {
                self.leading_call(&mut response, &offered, turn);
            }
            if !response.tool_calls.is_empty() {
                self.called_tool = true;
            } else if tool_choice == ToolChoice::Required {
                // The provider could not force the call (a server that ignores `tool_choice`,
                // tools written into the prompt): the runtime holds the agent to it.
                self.messages
                    .push(Message::assistant(response.content.clone(), Vec::new()));
                self.tool_reminders += 1;
                let max = contract.as_ref().map_or(2, |c| c.max_repairs);
                if self.tool_reminders > max {
                    return Ending::blocked(
                        format!(
                            "answered without calling a tool {} times, although its \
                             `tool_choice: required` asks for a call first",
                            self.tool_reminders
                        ),
                        action::call_tools(&self.agent.name),
                    );
                }
                self.ctx.emit(EventKind::HopSteered {
                    why: "tool_required".into(),
                    count: self.tool_reminders,
                });
                self.messages
                    .push(Message::user(tool_reminder(&tool_specs)));
                self.steps -= 1;
                continue;
            }
            if response.tool_calls.is_empty() {
                self.note_answer(&response.content);
                self.messages
                    .push(Message::assistant(response.content.clone(), Vec::new()));
                let verdict = gate.judge(&response.content, &|kind| self.ctx.emit(kind));
                if let Some(outcome) = gate.settled.take() {
                    self.ctx.emit(outcome);
                }
                let mut answer = response.content;
                let (mut status, mut error, mut conformant, mut violations) = match verdict {
                    Verdict::Accept {
                        conformant,
                        answer: fixed,
                    } => {
                        if let Some(fixed) = fixed {
                            answer = fixed;
                        }
                        match gate.asked.take() {
                            // A primary's question goes to the user: the session waits for
                            // `resume --answer`. A subagent's goes to its caller as its result.
                            Some(q) if self.req.parent.is_none() => {
                                (HopStatus::NeedsInput, Some(q), conformant, Vec::new())
                            }
                            _ => (HopStatus::Completed, None, conformant, Vec::new()),
                        }
                    }
                    Verdict::Repair { prompt } => {
                        // Repair turns do not count against `steps`.
                        self.steps -= 1;
                        self.messages.push(Message::user(prompt));
                        continue;
                    }
                    Verdict::Reject {
                        status,
                        summary,
                        violations,
                        answer: fallback,
                    } => {
                        if let Some(fallback) = fallback {
                            answer = fallback;
                        }
                        (status, Some(summary), Some(false), violations)
                    }
                };
                // An ask made once after an accepted answer (`evidence_goal:`, `search_first:`):
                // the second answer goes up only if it is accepted and passes the ask's test, so
                // it never costs the first one (`ask_once`).
                if let Some(first) = asked.take() {
                    let won =
                        status == HopStatus::Completed && first.won_by(&answer, &shared.project);
                    self.ctx.emit(EventKind::HopSteered {
                        why: first.outcome(won).into(),
                        count: first.count(),
                    });
                    if !won {
                        (answer, conformant) = (first.answer.clone(), first.conformant);
                        (status, error, violations) = (HopStatus::Completed, None, Vec::new());
                        // The file asked for, added by the runtime after all (`Asked::kept`).
                        if let (added, true) = first.kept() {
                            if self.holds_with(added, &answer) {
                                answer = added.to_string();
                            }
                        }
                    }
                }
                // Then the next ask not yet made, if the answer that stands calls for it.
                if status == HopStatus::Completed {
                    match asks.next(&answer, conformant, &shared.project) {
                        Some(super::ask_once::Next::Ask(ask, note)) => {
                            self.ctx.emit(EventKind::HopSteered {
                                why: ask.why().into(),
                                count: ask.count(),
                            });
                            asked = Some(ask);
                            // Like a repair turn: not a step of the agent's own.
                            self.steps -= 1;
                            self.messages.push(Message::user(note));
                            continue;
                        }
                        Some(super::ask_once::Next::Added(added))
                            if self.holds_with(&added, &answer) =>
                        {
                            answer = added;
                        }
                        Some(super::ask_once::Next::Added(_)) | None => {}
                    }
                }
                // What the agent owes besides its answer (`deliver:`): repair, then PARTIAL.
                if status == HopStatus::Completed {
                    if let Some(owed) = self.agent.deliver.clone() {
                        // An answer before anything was read: the analyses first, once.
                        if self.delegate_owed(&answer).await {
                            self.steps -= 1;
                            continue;
                        }
                        let repair = deliver_repairs + 1;
                        match self.owed(&owed, &answer, repair, max_reviews) {
                            Owed::Met => {}
                            Owed::Repair(prompt) => {
                                deliver_repairs = repair;
                                self.steps -= 1;
                                self.messages.push(Message::user(prompt));
                                self.repair_writes = self.report_in_hand(&owed);
                                if self.repair_writes {
                                    self.ctx.emit(EventKind::HopSteered {
                                        why: "repair_write_now".into(),
                                        count: 1,
                                    });
                                }
                                continue;
                            }
                            Owed::Partial(why) => {
                                self.last_content = answer;
                                return self.partial(why);
                            }
                        }
                    }
                }
                // A contract's declared fallback stands in for a failed answer, not for the
                // document a primary owes: without it the hop ends PARTIAL, with no repair turn
                // (the contract's repairs are spent). FALLBACK counts as completed, exit 0.
                if let (HopStatus::Fallback, Some(owed)) = (status, self.agent.deliver.clone()) {
                    if let Owed::Partial(why) = self.owed(&owed, "", 1, 0) {
                        self.last_content = answer;
                        return self.partial(why);
                    }
                }
                // A checked answer of a worker with a validator is reviewed before it goes up.
                if let (HopStatus::Completed, Some(v)) = (status, self.agent.validator.clone()) {
                    reviews += 1;
                    match self.review(&v, &answer, reviews, max_reviews).await {
                        Review::Accept => {}
                        Review::Revise(feedback) => {
                            // Like a repair turn: private to the worker, not a step of its own.
                            self.steps -= 1;
                            self.messages.push(Message::user(feedback));
                            continue;
                        }
                        Review::Block { reason, action } => return Ending::blocked(reason, action),
                    }
                }
                let action =
                    (status == HopStatus::Blocked).then(|| action::fit_contract(&self.agent.name));
                return Ending {
                    status,
                    answer,
                    error,
                    conformant,
                    violations,
                    checkpoint: None,
                    action,
                };
            }
            self.messages.push(Message::assistant(
                response.content.clone(),
                response.tool_calls.clone(),
            ));
            if last_step {
                return self.partial(format!("steps limit reached ({max_steps})"));
            }
            self.same_answers = 0;
            let results = self.tools_turn(&response.tool_calls, By::Agent).await;
            self.messages.extend(results);
            // A workflow step said CLARIFY: its question goes to the user, as docs/workflows.md
            // says. Left to go on, the 1.5B planner reported the same CLARIFY again and again.
            if let Some(question) = self.asked_user.take() {
                return Ending::needs_input(question);
            }
            // Tier 3: a tool was refused a path (outside the root, a hidden folder).
            if let Some(reason) = shared.take_refusal(&self.ctx.hop_id) {
                return Ending::blocked(
                    format!("a tool call was refused: {reason}"),
                    action::REFUSED_PATH.into(),
                );
            }
            // Tier 2: a budget at its threshold asks for a checkpoint, then ends PARTIAL.
            let over = if nudged {
                None
            } else {
                partial::over_threshold(
                    &self.agent.budget,
                    self.usage.total(),
                    self.steps,
                    hop_clock.elapsed(),
                )
            };
            if let Some(why) = over {
                nudged = true;
                self.ctx.emit(EventKind::HopBudget {
                    used_tokens: self.usage.total(),
                    budget_tokens: self.agent.budget.tokens.unwrap_or(0),
                    action: "wrap_up".into(),
                });
                self.messages.push(Message::user(checkpoint::request(&why)));
                checkpointing = Some((why, self.last_content.clone()));
            }
        }
    }

    /// Reads tool calls the model wrote as text into `response` (only tools offered this turn)
    /// and logs how they were written, so the turn goes on as if they were native calls.
    fn recover_calls(&self, response: &mut ModelResponse, offered: &recover::Offered, turn: u32) {
        let found = recover::recover(&response.content, offered, turn)
            .or_else(|| self.step_result(&response.content, offered, turn));
        if let Some(found) = found {
            self.take_recovered(response, found, turn);
        }
    }

    /// Makes calls read from the text the response's calls, and logs how they were written.
    fn take_recovered(&self, response: &mut ModelResponse, found: recover::Recovered, turn: u32) {
        self.ctx.emit(EventKind::ModelToolCallRecovered {
            step: turn,
            form: found.form.as_str().to_string(),
            tools: found.calls.iter().map(|c| c.name.clone()).collect(),
            call_ids: found.calls.iter().map(|c| c.id.clone()).collect(),
        });
        response.tool_calls = found.calls;
    }

    /// On a turn that had to be a call: the call the answer opens with, its made-up rest cut
    /// off (`recover::leading_call`).
    fn leading_call(&self, response: &mut ModelResponse, offered: &recover::Offered, turn: u32) {
        if let Some((found, end)) = recover::leading_call(&response.content, offered, turn) {
            response.content.truncate(end);
            self.take_recovered(response, found, turn);
        }
    }

    /// This hop as the `step` tool sees it: its workflow run is keyed by the hop's message id.
    fn workflow_call<'a>(&'a self, shared: &'a Shared) -> crate::workflow::tool::Call<'a> {
        crate::workflow::tool::Call {
            project: &shared.project,
            agent: &self.agent.name,
            declared: self.agent.workflow.as_deref(),
            run_id: &self.message_id,
            session_id: &shared.session_id,
            correlation_id: &shared.correlation_id,
            task: &self.req.prompt,
            found: &self.found_paths,
        }
    }

    /// A workflow agent's answer that is one JSON object, while a step is still to be reported:
    /// the result of that step, written without the `step` call around it (the planner on a
    /// 1.5B model answered its first turn with the `intent` result this way).
    fn step_result(
        &self,
        answer: &str,
        offered: &recover::Offered,
        turn: u32,
    ) -> Option<recover::Recovered> {
        let tool = crate::workflow::tool::TOOL;
        if !offered.contains(tool) {
            return None;
        }
        let mut objects = recover::sole_objects(answer)?;
        let next = crate::workflow::tool::next_step_name(&self.workflow_call(&self.ctx.shared))?;
        if objects.len() > 1 {
            return owed_step_calls(objects, &next, tool, turn);
        }
        let result = objects.remove(0);
        // The runtime's own reply to a step (`{"action", "step", "errors"|"next"}`) copied back
        // as the answer is an echo, not a result: no step schema has a `step` field. Unless its
        // `next_call` (the call the reply wrote out) is the step owed: the 1.5B planner sent
        // the PROCEED reply back with that call's result filled in.
        let arguments = if result.contains_key("step") {
            let call = result.get("next_call").and_then(|c| c.as_object())?;
            let named = call.get("name").and_then(|n| n.as_str()) == Some(next.as_str());
            if !named || !call.get("result").is_some_and(|r| r.is_object()) || call.len() != 2 {
                return None;
            }
            serde_json::Value::Object(call.clone())
        } else {
            // The `step` call's own arguments (`{"name", "result"}`, as the planner's prompt
            // shows them) are that call, not a result to wrap in another: the 1.5B planner
            // copied the prompt's example whole.
            // Written as a call of a tool named after the step (`{"name": "clarify",
            // "arguments": {…}}`), as the planner did once it had reported `intent`: the same
            // step call.
            match (
                result.get("name"),
                result.get("result"),
                result.get("arguments"),
            ) {
                (Some(serde_json::Value::String(_)), Some(serde_json::Value::Object(_)), None)
                    if result.len() == 2 =>
                {
                    serde_json::Value::Object(result)
                }
                (
                    Some(serde_json::Value::String(name)),
                    None,
                    Some(serde_json::Value::Object(a)),
                ) if result.len() == 2 && name != tool => {
                    serde_json::json!({"name": name, "result": a})
                }
                _ => serde_json::json!({"name": next, "result": result}),
            }
        };
        Some(recover::Recovered {
            calls: vec![crate::model::ToolCall {
                id: format!("recovered_t{turn}_1"),
                name: tool.to_string(),
                arguments,
            }],
            form: recover::Form::StepResult,
        })
    }

    /// Holds a final answer to `deliver:` (see [`deliver`]) and logs `deliver.checked`. `repair`
    /// is the number this repair turn would have; past `max` the hop ends PARTIAL.
    fn owed(&mut self, owed: &Deliver, answer: &str, repair: u32, max: u32) -> Owed {
        let shared = self.ctx.shared.clone();
        let mut found = deliver::check(owed, &self.written, &shared.project);
        if found.is_err() && owed.from_answer {
            if let Some(document) = deliver::document_in_answer(answer) {
                let closed = crate::contract::fix::close_frontmatter(document);
                if closed.is_some() {
                    self.ctx.emit(EventKind::HopSteered {
                        why: "report_frontmatter_closed".into(),
                        count: 1,
                    });
                }
                self.save_answer(owed, closed.as_deref().unwrap_or(document));
                found = deliver::check(owed, &self.written, &shared.project);
            } else if let Some(document) = deliver::document_from_sections(
                answer,
                &self.started.format("%Y-%m-%d").to_string(),
                &self.req.prompt,
                &shared.correlation_id,
            ) {
                self.ctx.emit(EventKind::HopSteered {
                    why: "report_frontmatter_added".into(),
                    count: 1,
                });
                self.save_answer(owed, &document);
                found = deliver::check(owed, &self.written, &shared.project);
            }
        }
        // A report that holds up but leaves out a file its subagents' verified Evidence cites
        // gets those items added (`deliver::left_out`).
        if let (true, Ok((path, _))) = (owed.from_answer, &found) {
            if let Some(n) = self.add_left_out(path) {
                self.ctx.emit(EventKind::HopSteered {
                    why: "report_findings_added".into(),
                    count: n,
                });
                found = deliver::check(owed, &self.written, &shared.project);
            }
        }
        let (path, verified) = match &found {
            Ok((path, verified)) => (Some(path.clone()), *verified),
            Err(deliver::Missing::Evidence { path, verified, .. }) => {
                (Some(path.clone()), *verified)
            }
            Err(deliver::Missing::NotWritten) => (None, 0),
        };
        let (next, outcome) = match found {
            Ok(_) => (Owed::Met, "met"),
            Err(missing) if repair <= max => (
                Owed::Repair(deliver::repair_prompt(
                    owed,
                    &missing,
                    self.agent.workflow.as_deref(),
                    deliver::looks_like_call(answer),
                    self.next_step().as_deref(),
                    &deliver::verified_findings(self.task_answers(), &shared.project),
                )),
                "repair",
            ),
            Err(missing) => (Owed::Partial(missing.summary(owed)), "partial"),
        };
        self.ctx.emit(EventKind::DeliverChecked {
            write: owed.write.clone(),
            path,
            verified,
            required: owed.evidence,
            outcome: outcome.to_string(),
            repair: if outcome == "repair" {
                repair
            } else {
                repair - 1
            },
        });
        next
    }

    /// What the hop's subagents answered (the results of its `task` calls that are no error).
    fn task_answers(&self) -> impl Iterator<Item = &str> {
        let task_ids: std::collections::HashSet<&str> = self
            .messages
            .iter()
            .flat_map(|m| m.tool_calls.iter())
            .filter(|c| c.name == "task")
            .map(|c| c.id.as_str())
            .collect();
        self.messages
            .iter()
            .filter(move |m| {
                !m.is_error
                    && m.tool_call_id
                        .as_deref()
                        .is_some_and(|id| task_ids.contains(id))
            })
            .map(|m| m.content.as_str())
    }

    /// Whether the hop stops gathering after one turn of repeated reads and searches
    /// (`observed_again`) rather than [`STALLED_TURNS`] turns of repeats: for a subagent that
    /// writes nothing and follows no workflow, whose only work left is its answer. A primary
    /// or a writer still owes a document, and a workflow agent a `step` call, which a turn
    /// without tools could not make.
    fn stall_now(&self) -> bool {
        self.observed_again
            && self.req.parent.is_some()
            && !self.follows_workflow
            && !self.agent.tools.allows("write")
    }

    /// For a gated agent that owes a document and gave its final answer (`answer`) while
    /// neither that answer nor its subagents' answers hold verified Evidence (an agent that
    /// read and cited files itself is left alone): the runtime makes, once, the analyses its
    /// gate names next (each path a locator found, to its source's analyzer; calls
    /// `delegate_owed`, `delegate_owed_2`, …), after a note that the answer came before
    /// anything was read, with the usual note after their answers. `false` (nothing done) when
    /// there is no such analysis to make: nothing was found, or it was done already.
    ///
    /// Why: over llama-server (no grammar) the 1.5B researcher, its plan made and its locators'
    /// answers in its task with the filled calls to make next, wrote a report of nothing read
    /// instead, and sent it back word for word after two repairs that named the call
    /// (BENCHMARKS.md, "Nineteenth session"). The answer stays in the conversation, and the
    /// calls are the runtime's, as the plan request of `gate.ask: runtime` is.
    async fn delegate_owed(&mut self, answer: &str) -> bool {
        if self.delegated_owed || self.agent.workflow.is_some() {
            return false;
        }
        let Some(gate) = self.plan_gate.as_ref() else {
            return false;
        };
        let shared = self.ctx.shared.clone();
        let answers = self.task_answers().chain(std::iter::once(answer));
        if !deliver::verified_findings(answers, &shared.project).is_empty() {
            return false;
        }
        let analyses = gate.next_analyses(
            &self.req.prompt,
            &shared.correlation_id,
            &self.done_with(),
            &self.found(),
        );
        if analyses.is_empty() {
            return false;
        }
        self.delegated_owed = true;
        self.messages.push(Message::user(
            "[runtime] That answer came before any subagent had read anything for it, so it \
             cannot be your document: nothing in it is evidence. The runtime now makes the \
             delegation your plan owes; write your document from what it finds.",
        ));
        self.runtime_delegations("delegate_owed", numbered_tasks(DELEGATE_OWED_ID, analyses))
            .await;
        true
    }

    /// The `task` calls `analyze_found: true` makes after the `delegate_first` answers: the
    /// analyses the plan gate names next (`PlanGate::next_analyses`: for each source the plan
    /// chose, the first path its finder listed, to the source's first reader), with the ids
    /// `analyze_found`, `analyze_found_2`, … None without the key, without a gate, or when
    /// nothing was found.
    fn found_analyses(&self) -> Vec<crate::model::ToolCall> {
        if !self.agent.analyze_found {
            return Vec::new();
        }
        let Some(gate) = self.plan_gate.as_ref() else {
            return Vec::new();
        };
        numbered_tasks(
            ANALYZE_FOUND_ID,
            gate.next_analyses(
                &self.req.prompt,
                &self.ctx.shared.correlation_id,
                &self.done_with(),
                &self.found(),
            ),
        )
    }

    /// Runs `calls` as the runtime's own turn, the `hop.steered` event saying `why`: the calls
    /// as an assistant turn and their results as tool results, so the agent's checks count
    /// their Evidence as its subagents', then the note after the last answer (`after_answer`:
    /// write the report now with the verified items, or what is still owed). For the analyses
    /// of `analyze_found` (before the agent's first turn, from [`Self::found_analyses`]) and
    /// of `delegate_owed`.
    async fn runtime_delegations(&mut self, why: &str, calls: Vec<crate::model::ToolCall>) {
        self.ctx.emit(EventKind::HopSteered {
            why: why.into(),
            count: calls.len() as u32,
        });
        self.messages
            .push(Message::assistant(String::new(), calls.clone()));
        let mut results = self.tools_turn(&calls, By::Runtime).await;
        self.messages.append(&mut results);
        if let Some(note) = self.after_answer("") {
            self.note_on_last(&note);
        }
    }

    /// Appends a `[runtime]` note to the conversation's last message (a tool result or the
    /// runtime's own message), where the model reads it last.
    fn note_on_last(&mut self, note: &str) {
        if let Some(last) = self.messages.last_mut() {
            last.content.push_str("\n\n[runtime] ");
            last.content.push_str(note);
        }
    }

    /// What a repair turn tells a gated agent to do first: plan; or, with a plan, delegate (a
    /// filled call to copy) while its subagents' answers hold no verified Evidence, or while
    /// a source of the plan is not analyzed yet (as the note after an answer says). Not only
    /// before the agent's first delegation: the runtime's own `delegate_first` calls count as
    /// delegations, and the 1.5B researcher over llama-server, its locators answered, wrote a
    /// report with nothing read and was shown no call in its repairs.
    fn next_step(&self) -> Option<String> {
        if self.stalled {
            // Its tools are gone: a call to copy would only be refused.
            return None;
        }
        // A workflow's document is written by its last step: the step owed is what to do next,
        // as its call. Told only "finish the `plan` workflow", the 1.5B planner over
        // llama-server, `clarify` owed, answered twice with a made-up `render` reply.
        if self.follows_workflow {
            if let Some(step) =
                crate::workflow::tool::next_step_call(&self.workflow_call(&self.ctx.shared))
            {
                return Some(format!(
                    "Your workflow's next step is `{}`: report it now with {}",
                    step["name"].as_str().unwrap_or_default(),
                    crate::workflow::tool::how_to_report(&step)
                ));
            }
        }
        let gate = self.plan_gate.as_ref()?;
        gate.first_step().or_else(|| {
            let findings =
                deliver::verified_findings(self.task_answers(), &self.ctx.shared.project);
            if findings.is_empty() {
                self.next_delegation()
            } else {
                self.unanalyzed_delegation(&findings)
            }
        })
    }

    /// The runtime's own request to the plan agent (`gate.ask: runtime`): a `gate.asked` event,
    /// the call as the agent's turn, and its result (the plan note) for the caller to keep.
    async fn ask_plan(&mut self, call: crate::model::ToolCall) -> Vec<Message> {
        if let Some(plan_agent) = call.arguments["subagent_type"].as_str() {
            self.ctx.emit(EventKind::GateAsked {
                call_id: call.id.clone(),
                plan_agent: plan_agent.to_string(),
            });
        }
        let calls = vec![call];
        self.messages
            .push(Message::assistant(String::new(), calls.clone()));
        self.tools_turn(&calls, By::Runtime).await
    }

    /// The `task` calls of `delegate_first:`, made once, before the hop's first turn: one per
    /// subagent the plan gate (if any) admits now. The first has the id `delegate_first`, the
    /// others `delegate_first_2`, … A subagent the plan's sources close is passed over, not
    /// called to be refused: a plan that chose `doc` alone owes no code search.
    fn delegate_first_calls(&self) -> Vec<crate::model::ToolCall> {
        let calls = self
            .agent
            .delegate_first
            .iter()
            .filter(|target| {
                self.plan_gate.as_ref().is_none_or(|g| {
                    matches!(
                        g.admit("task", Some(target), false),
                        super::plan_gate::Admission::Open
                    )
                })
            })
            .map(|target| {
                serde_json::json!({
                    "subagent_type": target,
                    "description": "Find what the task needs",
                    "prompt": self.req.prompt,
                })
            });
        numbered_tasks(DELEGATE_FIRST_ID, calls)
    }

    /// What a gated agent is told after a subagent's `answer`. One that owes a document written
    /// from its answer, once its subagents' answers (this one included) hold verified Evidence,
    /// is told to write it now with those items to copy, and offered no filled call; otherwise
    /// it gets the next delegation.
    ///
    /// Why: a 1.5B researcher followed the note to the plan's next source (`code`) after an
    /// analysis verified, to a codebase-locator that invented paths, and never wrote its report
    /// (BENCHMARKS.md, "Second evening"). Offered both, the report first and the filled call
    /// "only if these do not answer the question", it copied the call.
    ///
    /// The note names no delegation either: told "delegate again only if they leave the
    /// question unanswered" beside the items, the 1.5B researcher delegated that very sentence.
    /// Its tools stay offered: a question several documents answer needs more than one
    /// analysis, and the offline researcher covers four for the YAML question; until a
    /// delegation after the note adds no verified item ([`Self::write_now`]).
    fn after_answer(&mut self, answer: &str) -> Option<String> {
        if !self.owes_answer_report() {
            return self.next_delegation();
        }
        let findings = deliver::verified_findings(
            self.task_answers().chain(std::iter::once(answer)),
            &self.ctx.shared.project,
        );
        if findings.is_empty() {
            return self.next_delegation();
        }
        // Every source the plan chose is read before the report: one analysis verifying is
        // not the question answered when the plan named two sources.
        if let Some(next) = self.unanalyzed_delegation(&findings) {
            return Some(next);
        }
        self.noted_findings = Some(self.noted_findings.unwrap_or(0).max(findings.len()));
        Some(deliver::report_now(&findings))
    }

    /// The delegations owed to sources of the plan not analyzed yet (see
    /// `PlanGate::unanalyzed_delegation`).
    fn unanalyzed_delegation(&self, verified: &[String]) -> Option<String> {
        let gate = self.plan_gate.as_ref()?;
        gate.unanalyzed_delegation(
            &self.req.prompt,
            &self.ctx.shared.correlation_id,
            &self.done_with(),
            &self.answered,
            &self.found(),
            verified,
        )
    }

    /// The subagents a next delegation passes over: those that answered or ended BLOCKED.
    fn done_with(&self) -> std::collections::BTreeSet<String> {
        self.blocked.union(&self.answered).cloned().collect()
    }

    /// The paths subagents found, each with the subagent that found it.
    fn found(&self) -> Vec<(String, String)> {
        self.found_paths
            .iter()
            .cloned()
            .zip(self.found_by.iter().cloned())
            .collect()
    }

    /// Ends the hop's tool use: `note` tells the agent to give its final answer, and every turn
    /// from now on is offered no tools (`hop.steered` `why`, with `count`).
    fn stall(&mut self, why: &str, count: u32, note: String) {
        self.stalled = true;
        self.ctx.emit(EventKind::HopSteered {
            why: why.into(),
            count,
        });
        self.messages.push(Message::user(note));
    }

    /// Whether this turn writes the owed document with no tools offered: the last turn's
    /// results ended with the note to write it now and showed no verified Evidence item the
    /// note before had not. Called once per turn, before its request.
    ///
    /// Why: a 1.5B researcher shown three verified items and told to write its report delegated
    /// again, to a locator that found nothing new, and again after the same note; tools taken
    /// away after every note, the offline researcher wrote its report after one analysis where
    /// the YAML question takes four. A delegation that adds nothing is the sign the evidence is
    /// all there is to find.
    fn write_now(&mut self) -> bool {
        let Some(now) = self.noted_findings.take() else {
            return false;
        };
        let before = self.last_note.replace(now);
        before.is_some_and(|before| now <= before)
    }

    /// Whether the document this agent owes is its final answer (`deliver.from_answer`, no
    /// workflow): a report the runtime saves, which the notes and repairs ask it to write.
    fn owes_answer_report(&self) -> bool {
        self.agent
            .deliver
            .as_ref()
            .is_some_and(|d| d.from_answer && self.agent.workflow.is_none())
    }

    /// Whether this agent's owed document is its answer ([`Self::owes_answer_report`])
    /// and its subagents' verified Evidence already holds the items `owed` asks for: then a
    /// repair turn is offered no tools, and writing the report is all it can do. Why: the 1.5B
    /// researcher, six verified items in its repair message, answered with a `task` call
    /// written as text on every turn, and one the repair turn offered tools for sent a task
    /// about a file analyzed already; it ended PARTIAL with no report (t0 on 46eb4dd).
    fn report_in_hand(&self, owed: &crate::agent::deliver::Deliver) -> bool {
        self.owes_answer_report()
            && deliver::verified_findings(self.task_answers(), &self.ctx.shared.project).len()
                >= owed.evidence.max(1) as usize
    }

    /// Before a turn offered no tools, for an agent whose owed document is its answer and whose
    /// subagents gave verified Evidence: the note to write the report now, with those items,
    /// ends the conversation, unless its last message holds one already (the note after an
    /// answer, or a repair that lists them). The `local` provider writes the report's grammar
    /// from the last message's items (`model::local::grammar`); a turn after a refused call
    /// ended on the refusal, and the 1.5B researcher, its note two messages back, decoded
    /// freely and wrote a `task` call as text (t0 on 46eb4dd).
    fn restate_report_now(&mut self) {
        let Some(last) = self.messages.last() else {
            return;
        };
        if !self.owes_answer_report()
            || last.role == crate::model::Role::Assistant
            || deliver::report_now_findings(&last.content).is_some()
        {
            return;
        }
        let findings = deliver::verified_findings(self.task_answers(), &self.ctx.shared.project);
        if findings.is_empty() {
            return;
        }
        self.note_on_last(&deliver::report_now(&findings));
    }

    /// The path of the document this agent owes as a file it writes (`deliver.write`, not
    /// `from_answer`) once it is written and holds up, the first time only: nothing is left to call
    /// tools for. Once per hop (`delivered_noted`). Why: the 1.5B planner, its plan rendered
    /// and the workflow closed, reported `render` again and then `intent`, each answered STOP,
    /// until its steps ran out.
    fn delivered_written(&mut self) -> Option<String> {
        if self.delivered_noted || self.written.is_empty() {
            return None;
        }
        let owed = self.agent.deliver.as_ref().filter(|d| !d.from_answer)?;
        let (path, _) = deliver::check(owed, &self.written, &self.ctx.shared.project).ok()?;
        self.delivered_noted = true;
        Some(path)
    }

    /// The delegation a gated agent is told to make next (see `PlanGate::next_delegation`).
    fn next_delegation(&self) -> Option<String> {
        let gate = self.plan_gate.as_ref()?;
        gate.next_delegation(
            &self.req.prompt,
            &self.ctx.shared.correlation_id,
            &self.done_with(),
            &self.found(),
        )
    }

    /// Appends to the report at `path` the verified findings of this hop's subagents whose files
    /// it cites nowhere (`deliver::left_out`), replacing the file in place; how many were added,
    /// or `None` when none were left out (or the file could not be read or written).
    fn add_left_out(&mut self, path: &str) -> Option<u32> {
        let shared = self.ctx.shared.clone();
        let file = shared.project.resolve(path).ok()?;
        let text = std::fs::read_to_string(file).ok()?;
        let findings = deliver::verified_findings(self.task_answers(), &shared.project);
        let left = deliver::left_out(&text, &findings);
        if left.is_empty() {
            return None;
        }
        let added = deliver::with_left_out(&text, &left);
        let saved = deliver::save(&shared.project, path, &added, Some(path));
        self.ctx.emit(EventKind::DeliverSaved {
            path: path.to_string(),
            bytes: added.len() as u64,
            error: saved.as_ref().err().cloned(),
        });
        saved.ok().map(|_| left.len() as u32)
    }

    /// Saves an answer that is the document (`deliver.from_answer`) under the deliver glob and
    /// counts it as written by this hop; a corrected answer replaces the file saved before.
    fn save_answer(&mut self, owed: &Deliver, document: &str) {
        let shared = self.ctx.shared.clone();
        let today = self.started.format("%Y-%m-%d").to_string();
        let path = deliver::answer_path(
            owed,
            &today,
            document,
            &self.req.prompt,
            self.saved_answer.as_deref(),
        );
        let saved = deliver::save(
            &shared.project,
            &path,
            document,
            self.saved_answer.as_deref(),
        );
        let (path, error) = match saved {
            Ok(taken) => (taken, None),
            Err(e) => (path, Some(e)),
        };
        self.ctx.emit(EventKind::DeliverSaved {
            path: path.clone(),
            bytes: document.len() as u64,
            error: error.clone(),
        });
        if error.is_none() {
            let written = vec![path.clone()];
            shared.add_written(&written);
            self.written.retain(|p| *p != path);
            self.written.extend(written);
            self.saved_answer = Some(path);
        }
    }

    /// Counts a final answer that is the very text of the one before it (`same_answers`), so
    /// that the turn after it is sampled warmer; a turn with tool calls sets the count back
    /// (not the answer it is compared with). Asked to repair it, Qwen2.5-Coder-1.5B's
    /// codebase-analyzer and codebase-pattern-finder (over llama-server, temperature 0.1, one
    /// seed) sent their failing answer back unchanged three times and were BLOCKED.
    fn note_answer(&mut self, content: &str) {
        let content = content.trim();
        self.same_answers = if self.last_answer.as_deref() == Some(content) {
            self.same_answers + 1
        } else {
            0
        };
        self.last_answer = Some(content.to_string());
    }

    /// Runs the validator's hop on `answer` (giving the semaphore slot back while it runs, as
    /// for any child) and judges its verdict; logs `validator.verdict` on this hop.
    async fn review(&mut self, validator: &str, answer: &str, round: u32, max: u32) -> Review {
        let shared = self.ctx.shared.clone();
        let req = validator::request(
            validator,
            &self.req,
            &self.agent.name,
            &self.ctx.hop_id,
            &self.model_spec,
            answer,
            &shared.project,
        );
        self.permit = None;
        // The review is part of this hop's answer: the validator may use the reserve this hop
        // keeps for it (see `deadline`), or an answer given in the reserve could never be judged.
        let whole = Deadline {
            reserve: Duration::ZERO,
            ..self.deadline
        };
        shared.set_deadline(&self.ctx.hop_id, whole);
        let spawned = self
            .ctx
            .journal
            .spawn_child(req, |req| run_hop(shared.clone(), req))
            .wait()
            .await;
        shared.set_deadline(&self.ctx.hop_id, self.deadline);
        let result = match spawned {
            Ok(r) => r,
            Err(e) => {
                return Review::Block {
                    reason: format!("the validator `{validator}` ended abnormally: {e}"),
                    action: action::FIX_MODEL.to_string(),
                }
            }
        };
        if self.req.depth > 0 {
            self.permit = shared.semaphore.clone().acquire_owned().await.ok();
        }
        let (review, verdict, overruled) = validator::judge(
            &result,
            &self.req.prompt,
            answer,
            &shared.project,
            round,
            max,
        );
        let revised = verdict.as_ref().is_some_and(|v| v.verdict == "reject")
            && matches!(review, Review::Revise(_));
        self.ctx.emit(EventKind::ValidatorVerdict {
            validator: validator.to_string(),
            verdict: verdict
                .as_ref()
                .map_or_else(|| "none".to_string(), |v| v.verdict.clone()),
            round,
            feedback: verdict.map(|v| v.feedback).unwrap_or_default(),
            child_hop_id: result.hop_id,
            overruled,
        });
        if revised {
            self.ctx.emit(EventKind::HopSteered {
                why: "reject_revised".into(),
                count: 1,
            });
        }
        review
    }

    /// Ends the hop PARTIAL on the checkpoint the agent replied with, or on one the runtime
    /// writes when the reply does not validate (see [`super::partial`]).
    fn checkpointed(&mut self, why: String, answer: String, reply: &str) -> Ending {
        self.last_content = answer;
        let (why, c) = partial::from_reply(
            &self.ctx.shared.project,
            &self.req.prompt,
            &self.last_content,
            self.steps,
            &why,
            reply,
        );
        self.partial_with(why, c)
    }

    /// The answer so far, ended PARTIAL with a checkpoint the runtime writes.
    fn partial(&self, why: String) -> Ending {
        let c = checkpoint::by_runtime(&self.req.prompt, &self.last_content, self.steps, &why);
        self.partial_with(why, c)
    }

    /// The answer so far (the last thing the agent said), ended PARTIAL with `checkpoint` and
    /// held to the agent's contract once.
    fn partial_with(&self, why: String, checkpoint: Checkpoint) -> Ending {
        partial::ending(
            &self.ctx,
            self.agent.contract.as_ref(),
            &self.message_id,
            self.last_content.clone(),
            why,
            checkpoint,
        )
    }

    /// Ends the hop (see [`super::ending::finish`]), giving its semaphore slot back first.
    fn finish(mut self, ending: Ending, elapsed: Duration) -> HopResult {
        self.permit = None;
        let finished = Finished {
            agent: self.agent.name,
            message_id: self.message_id,
            started: self.started,
            system: self.system,
            messages: self.messages,
            usage: self.usage,
            steps: self.steps,
            written: self.written,
        };
        finish(&self.ctx, ending, finished, elapsed)
    }
}

/// What [`HopState::owed`] decided about a final answer.
enum Owed {
    Met,
    Repair(String),
    Partial(String),
}

/// Several `step` calls' arguments written as one answer (`{"name", "result"}` each, bare or
/// fenced): the calls from the step owed (`next`) on, in order; `None` when any object is not
/// such a call or none is the step owed. Over llama-server the 1.5B planner wrote the `intent`
/// step it had already reported and then the `clarify` step it owed, as two fenced objects, three
/// turns running, and its session ended PARTIAL with neither read. A step before the one owed is
/// one already reported: sent again, it would reopen the workflow there.
///
/// An object in the shape of the runtime's own reply (`{"action", "step", …, "next_call"}`)
/// stands for the call its `next_call` writes out, and a call naming the same step as the one
/// before it is left out (the first is the report; a second would be a redo of it): after
/// `intent` was accepted, the 1.5B planner answered with two such replies, each a `clarify`
/// call with other questions in its `next_call`.
fn owed_step_calls(
    objects: Vec<serde_json::Map<String, serde_json::Value>>,
    next: &str,
    tool: &str,
    turn: u32,
) -> Option<recover::Recovered> {
    let is_call = |o: &serde_json::Map<String, serde_json::Value>| {
        o.len() == 2
            && o.get("name").is_some_and(serde_json::Value::is_string)
            && o.get("result").is_some_and(serde_json::Value::is_object)
    };
    let mut objects: Vec<_> = objects
        .into_iter()
        .map(|o| match (o.contains_key("step"), o.get("next_call")) {
            (true, Some(serde_json::Value::Object(call))) => call.clone(),
            _ => o,
        })
        .collect();
    objects.dedup_by(|b, a| a.get("name") == b.get("name"));
    if !objects.iter().all(is_call) {
        return None;
    }
    let from = objects
        .iter()
        .position(|o| o.get("name").and_then(serde_json::Value::as_str) == Some(next))?;
    let calls = objects
        .into_iter()
        .skip(from)
        .enumerate()
        .map(|(i, o)| crate::model::ToolCall {
            id: format!("recovered_t{turn}_{}", i + 1),
            name: tool.to_string(),
            arguments: serde_json::Value::Object(o),
        })
        .collect();
    Some(recover::Recovered {
        calls,
        form: recover::Form::StepResult,
    })
}
