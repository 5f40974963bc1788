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
use super::ending::{action, cancel_descendants, finish, never_started, Ending, Finished};
use super::events::{timestamp, EventKind};
use super::handoff::{HopRequest, HopResult};
use super::partial;
use super::plan_gate::{self, Admission, PlanGate, PLAN_TOOL};
use super::shared::{HopCtx, Shared};
use super::status::HopStatus;
use super::tool_calls::{cut, Caller, Prepared};
use super::truncation::{Next, Pieces};
use super::validator::{self, Review};
use crate::agent::render::{render, PromptContext};
use crate::agent::Agent;
use crate::model::notice::{self, Notice, NoticeObserver};
use crate::model::retry::{self, AttemptEvent, AttemptObserver, AttemptOutcome, RetryPolicy};
use crate::model::{
    BoxFuture, Message, Model, ModelError, ModelRequest, ModelResponse, ResponseContract, ToolCall,
    Usage,
};
use crate::tools;

/// Model turns a hop gets when its agent does not set `steps`.
pub const DEFAULT_STEPS: u32 = 50;
/// Share of a budget at which the agent is asked for a checkpoint and the hop ends PARTIAL,
/// when its `budget.threshold` does not say otherwise.
pub const BUDGET_NUDGE: f64 = crate::agent::definition::DEFAULT_THRESHOLD as f64 / 100.0;
/// Tool output kept in the event log (the transcript keeps everything).
const LOGGED_OUTPUT: usize = 4096;

/// A spawned child hop, aborted if the waiting caller is dropped (timeout, Ctrl-C).
struct AbortOnDrop(tokio::task::JoinHandle<HopResult>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Runs one hop to its end; never panics on model, tool or user errors.
pub(crate) fn run_hop(shared: Arc<Shared>, req: HopRequest) -> BoxFuture<'static, HopResult> {
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
        let started = Utc::now();
        // The hop's duration runs from the same instant as its `started_at`: a clock started
        // after the id allocation and the first log write (a flush) made a parent look shorter
        // than the children it waited for, by however long those took under load.
        let clock = Instant::now();
        let message_id = match recorded.as_ref() {
            Some(r) => r.message_id.clone(),
            None => match shared.ids.allocate(&agent.message_id_prefix(), started) {
                Ok(id) => id,
                Err(e) => {
                    return never_started(
                        &ctx,
                        String::new(),
                        format!("cannot allocate a message id: {e}"),
                        None,
                    )
                }
            },
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
        let mut state = HopState {
            ctx: ctx.clone(),
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
            plan_gate: None,
            resumed_from: recorded.as_ref().and_then(|r| r.checkpoint.clone()),
        };
        let wall = state
            .agent
            .budget
            .wall_seconds
            .map(Duration::from_secs)
            .unwrap_or(shared.options.hop_timeout);
        let ending = match tokio::time::timeout(wall, state.run()).await {
            Ok(ending) => ending,
            Err(_) => {
                // Dropping the loop aborted the children it was waiting for; they cannot log
                // their own end, so log it here.
                cancel_descendants(&shared, &hop_id, &state.agent.name);
                Ending::failed(format!(
                    "timed out after {} s (wall-clock limit)",
                    wall.as_secs_f64()
                ))
            }
        };
        state.finish(ending, clock.elapsed())
    })
}

struct HopState {
    ctx: HopCtx,
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
    /// The agent's retrieval gate (`gate:`), and the plan it accepted so far.
    plan_gate: Option<PlanGate>,
    /// The checkpoint of this hop's earlier PARTIAL attempt, when `resume` runs it again.
    resumed_from: Option<Checkpoint>,
}

impl HopState {
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
        tool_specs.extend(crate::workflow::tool::offer(&crate::workflow::tool::Call {
            project: &shared.project,
            agent: &self.agent.name,
            declared: self.agent.workflow.as_deref(),
            run_id: &self.message_id,
            session_id: &shared.session_id,
            correlation_id: &shared.correlation_id,
            task: &self.req.prompt,
        }));
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
        self.messages.push(Message::user(task));
        let max_steps = self.agent.steps.unwrap_or(DEFAULT_STEPS).max(1);
        let (contract, message_id) = (self.agent.contract.clone(), self.message_id.clone());
        let mut gate = Gate {
            contract: contract.as_ref(),
            project: &shared.project,
            correlation_id: &shared.correlation_id,
            message_id: &message_id,
            repairs: 0,
            vars: serde_json::json!({"agent": self.agent.name, "task": self.req.prompt}),
            settled: None,
            questions_asked: if self.req.parent.is_none() {
                shared.options.questions_asked
            } else {
                0
            },
            asked: None,
        };
        let mut pieces = Pieces::default();
        let mut nudged = false;
        // Set once a checkpoint was asked for: why, and the answer the hop had then.
        let mut checkpointing: Option<(String, String)> = None;
        // Validator reviews so far, bounded like repair turns.
        let mut reviews = 0u32;
        let max_reviews = contract.as_ref().map_or(2, |c| c.max_repairs);
        let hop_clock = Instant::now();
        let mut turn = 0u32;
        loop {
            self.steps += 1;
            turn += 1;
            let last_step = self.steps >= max_steps;
            if last_step && !tool_specs.is_empty() && !pieces.waiting() {
                self.messages.push(Message::user(
                    "This is your last step: give your final answer now, with what you have. \
                     No more tool calls.",
                ));
            }
            let request = ModelRequest {
                model: self.model_name.clone(),
                agent: self.agent.name.clone(),
                system: self.system.clone(),
                messages: self.messages.clone(),
                tools: if last_step || checkpointing.is_some() {
                    Vec::new()
                } else {
                    tool_specs.clone()
                },
                temperature: self.agent.temperature,
                top_p: self.agent.top_p,
                max_tokens: self.agent.max_tokens,
                response_contract: response_contract.clone(),
            };
            self.ctx.emit(EventKind::ModelRequest {
                step: turn,
                messages: request.messages.len(),
                tools: request.tools.len(),
            });
            let clock = Instant::now();
            let mut response = match self.complete(&request, turn).await {
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
            self.usage.input_tokens += response.usage.input_tokens;
            self.usage.output_tokens += response.usage.output_tokens;
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
            // A cut-off answer is continued, never taken as final (runtime/truncation.rs).
            match pieces.take(&mut response, &mut self.messages, turn, |e| {
                self.ctx.emit(e)
            }) {
                Next::Continue => {
                    // Asking for the rest is not a step of the agent's own.
                    self.steps -= 1;
                    continue;
                }
                Next::GiveUp { answer, why } => {
                    self.last_content = answer;
                    return self.partial(why);
                }
                Next::Proceed => {}
            }
            if !response.content.trim().is_empty() {
                // Again: the answer may now be joined from pieces.
                self.last_content = response.content.clone();
            }
            if response.tool_calls.is_empty() {
                self.messages
                    .push(Message::assistant(response.content.clone(), Vec::new()));
                let verdict = gate.judge(&response.content, &|kind| self.ctx.emit(kind));
                if let Some(outcome) = gate.settled.take() {
                    self.ctx.emit(outcome);
                }
                let mut answer = response.content;
                let (status, error, conformant, violations) = match verdict {
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
            let results = self.run_tools(&response.tool_calls).await;
            self.messages.extend(results);
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
        );
        self.permit = None;
        let result = run_hop(shared.clone(), req).await;
        if self.req.depth > 0 {
            self.permit = shared.semaphore.clone().acquire_owned().await.ok();
        }
        let (review, verdict) = validator::judge(&result, &shared.project, round, max);
        self.ctx.emit(EventKind::ValidatorVerdict {
            validator: validator.to_string(),
            verdict: verdict
                .as_ref()
                .map_or_else(|| "none".to_string(), |v| v.verdict.clone()),
            round,
            feedback: verdict.map(|v| v.feedback).unwrap_or_default(),
            child_hop_id: result.hop_id,
        });
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

    /// One completion under the one retry policy ([`RetryPolicy::run`]). HTTP providers retry
    /// inside `complete` with their configured policy and give up with a fatal error, so this
    /// layer only retries transient errors of models that do not retry themselves. Every
    /// retried attempt is a `model.retry` event; the final failure a `model.error`.
    async fn complete(
        &self,
        request: &ModelRequest,
        step: u32,
    ) -> Result<ModelResponse, ModelError> {
        let ctx = self.ctx.clone();
        let observer: AttemptObserver = Arc::new(move |e: &AttemptEvent| {
            if let AttemptOutcome::Retrying { error, delay } = &e.outcome {
                ctx.emit(EventKind::ModelRetry {
                    step,
                    provider: e.provider.clone(),
                    attempt: e.attempt,
                    max_attempts: e.max_attempts,
                    error: error.clone(),
                    delay_ms: delay.as_millis() as u64,
                    elapsed_us: e.elapsed.as_micros() as u64,
                });
            }
        });
        let policy = RetryPolicy::default();
        let call = policy.run(self.model.provider(), &request.model, None, || {
            self.model.complete(request)
        });
        let ctx = self.ctx.clone();
        let notices: NoticeObserver = Arc::new(move |n: &Notice| match n {
            Notice::ToolsFallback {
                provider,
                model,
                reason,
            } => ctx.emit(EventKind::ModelToolsFallback {
                step,
                provider: provider.clone(),
                model: model.clone(),
                reason: reason.clone(),
            }),
        });
        let result = notice::observe(notices, retry::observe(observer, call)).await;
        if let Err(e) = &result {
            self.ctx.emit(EventKind::ModelError {
                step,
                error: e.to_string(),
                retry: false,
            });
        }
        result
    }

    /// Runs one turn's tool calls: built-ins inline, `task` calls as concurrent child hops;
    /// results come back in call order.
    async fn run_tools(&mut self, calls: &[ToolCall]) -> Vec<Message> {
        enum Pending {
            Done(Message, Option<String>),
            Child(AbortOnDrop),
        }
        let shared = self.ctx.shared.clone();
        let caller = Caller {
            shared: &shared,
            agent: &self.agent,
            request: &self.req,
            hop_id: &self.ctx.hop_id,
            model_spec: &self.model_spec,
            message_id: &self.message_id,
        };
        let mut pending = Vec::with_capacity(calls.len());
        for call in calls {
            self.ctx.emit(EventKind::ToolCall {
                call_id: call.id.clone(),
                tool: call.name.clone(),
                arguments: call.arguments.clone(),
            });
            let tool = crate::agent::grants::canonical_tool_name(&call.name);
            if let Some(gate) = self.plan_gate.as_mut() {
                let target = (tool == "task")
                    .then(|| super::dispatch::TaskCall::parse(&call.arguments).ok())
                    .flatten()
                    .map(|c| c.subagent_type);
                let mcp = shared
                    .mcp
                    .get()
                    .is_some_and(|m| m.resolve(&call.name).is_some());
                if let Admission::Refused(reason) = gate.admit(&tool, target.as_deref(), mcp) {
                    self.ctx.emit(EventKind::GateRefused {
                        call_id: call.id.clone(),
                        tool: tool.clone(),
                        target,
                        reason: reason.clone(),
                    });
                    pending.push(Pending::Done(Message::tool(&call.id, reason, true), None));
                    continue;
                }
                if tool == PLAN_TOOL {
                    let text = plan_text(&call.arguments);
                    let message = match gate.submit(&text, &shared.project) {
                        Ok(accepted) => {
                            self.ctx.emit(gate_plan_event(&accepted, PLAN_TOOL, false));
                            Message::tool(&call.id, plan_gate::accepted_note(&accepted), false)
                        }
                        Err(why) => Message::tool(&call.id, why.to_string(), true),
                    };
                    pending.push(Pending::Done(message, None));
                    continue;
                }
            }
            if tool == "webfetch" || tool == "websearch" {
                let (message, record) = caller.web(call, &tool).await;
                if let Some(record) = record {
                    self.ctx.emit(EventKind::WebFetch(record));
                }
                pending.push(Pending::Done(message, None));
                continue;
            }
            if let Some((message, written, event)) = caller.step(call) {
                self.ctx.emit(event);
                pending.push(Pending::Done(message, written));
                continue;
            }
            if tool == "analyze_file" {
                // Its chunks are child hops: give the slot back while they run.
                self.permit = None;
                let message = super::analyze::tool(&caller, shared.clone(), call, run_hop).await;
                if self.req.depth > 0 {
                    self.permit = shared.semaphore.clone().acquire_owned().await.ok();
                }
                pending.push(Pending::Done(message, None));
                continue;
            }
            if let Some((message, record)) = caller.mcp(call).await {
                self.ctx.emit(EventKind::McpCall(record));
                pending.push(Pending::Done(message, None));
                continue;
            }
            match caller.prepare(call) {
                Prepared::Done(message, written) => pending.push(Pending::Done(message, written)),
                Prepared::Child(child) => {
                    let handle = tokio::spawn(run_hop(shared.clone(), child));
                    pending.push(Pending::Child(AbortOnDrop(handle)));
                }
            }
        }
        let has_children = pending.iter().any(|p| matches!(p, Pending::Child(_)));
        if has_children {
            // Give the slot back while waiting, so children (and their children) can run.
            self.permit = None;
        }
        let mut out = Vec::with_capacity(calls.len());
        for (call, p) in calls.iter().zip(pending) {
            let (message, written, child) = match p {
                Pending::Done(m, w) => (m, w.into_iter().collect::<Vec<_>>(), None),
                Pending::Child(mut handle) => {
                    let result = match (&mut handle.0).await {
                        Ok(r) => r,
                        Err(e) => {
                            let msg = format!("subagent task ended abnormally: {e}");
                            out.push(Message::tool(&call.id, msg.clone(), true));
                            self.ctx.emit(EventKind::ToolResult {
                                call_id: call.id.clone(),
                                tool: call.name.clone(),
                                is_error: true,
                                output: msg,
                                written: None,
                                child_hop_id: None,
                            });
                            continue;
                        }
                    };
                    let mut message = result.to_tool_message(&call.id);
                    if let Some(note) = self.offer_plan(&result) {
                        message.content.push_str(&note);
                    }
                    (message, result.written.clone(), Some(result.hop_id))
                }
            };
            if child.is_none() {
                shared.add_written(&written);
            }
            self.written.extend(written.iter().cloned());
            self.ctx.emit(EventKind::ToolResult {
                call_id: call.id.clone(),
                tool: call.name.clone(),
                is_error: message.is_error,
                output: cut(&message.content, LOGGED_OUTPUT),
                written: written.first().cloned(),
                child_hop_id: child,
            });
            out.push(message);
        }
        if has_children && self.req.depth > 0 {
            self.permit = shared.semaphore.clone().acquire_owned().await.ok();
        }
        out
    }

    /// Offers a planning agent's answer to the gate as the plan; the note tells the calling
    /// model whether it was accepted and what is open now. `None` when the answer is not from
    /// the agent that plans (or the hop has no gate).
    fn offer_plan(&mut self, result: &HopResult) -> Option<String> {
        let gate = self.plan_gate.as_mut()?;
        if !gate.is_plan_agent(&result.agent) {
            return None;
        }
        let fallback = result.status == HopStatus::Fallback;
        if !matches!(result.status, HopStatus::Completed | HopStatus::Fallback) {
            return Some(format!(
                "\n\n[gate] `{}` ended {}, so this is not a plan; nothing is open yet.",
                result.agent,
                result.status.as_str()
            ));
        }
        match gate.submit(&result.answer, &self.ctx.shared.project) {
            Ok(accepted) => {
                self.ctx
                    .emit(gate_plan_event(&accepted, &result.agent, fallback));
                Some(format!(
                    "\n\n[gate] {}",
                    plan_gate::accepted_note(&accepted)
                ))
            }
            Err(why) => Some(format!("\n\n[gate] Not accepted as the plan: {why}")),
        }
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

/// The plan of a `plan` tool call as text for the contract check. A model may wrap the object
/// in a `plan` field; the gate takes the object either way.
fn plan_text(arguments: &serde_json::Value) -> String {
    let plan = match arguments.get("plan") {
        Some(inner @ serde_json::Value::Object(_))
            if arguments.as_object().is_some_and(|o| o.len() == 1) =>
        {
            inner
        }
        _ => arguments,
    };
    serde_json::to_string_pretty(plan).unwrap_or_default()
}

fn gate_plan_event(accepted: &plan_gate::Accepted, via: &str, fallback: bool) -> EventKind {
    EventKind::GatePlan {
        via: via.to_string(),
        contract: accepted.contract.clone(),
        plan: accepted.plan.clone(),
        sources: accepted.sources.clone(),
        allowed: accepted.allowed.iter().cloned().collect(),
        fallback,
    }
}
