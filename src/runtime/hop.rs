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
use super::ending::{cancel_descendants, finish, never_started, Ending, Finished};
use super::events::{timestamp, EventKind};
use super::handoff::{HopRequest, HopResult};
use super::shared::{HopCtx, Shared};
use super::status::HopStatus;
use super::tool_calls::{cut, Caller, Prepared};
use super::truncation::{Next, Pieces};
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
/// Share of the token budget at which the agent is told to wrap up.
pub const BUDGET_NUDGE: f64 = 0.6;
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
        let Some(agent) = shared.agents.get(&req.agent).cloned() else {
            return never_started(
                &ctx,
                String::new(),
                format!("unknown agent `{}`", req.agent),
            );
        };
        let model_spec =
            match shared.model_spec(&agent, req.parent.as_ref().map(|p| p.model.as_str())) {
                Ok(s) => s,
                Err(e) => return never_started(&ctx, String::new(), e.to_string()),
            };
        let model = match shared.models.get(&model_spec) {
            Ok(m) => m,
            Err(e) => return never_started(&ctx, String::new(), e.to_string()),
        };
        // Children wait for a slot; the primary hop does not take one.
        let permit = if req.depth > 0 {
            shared.semaphore.clone().acquire_owned().await.ok()
        } else {
            None
        };
        let started = Utc::now();
        let message_id = match recorded.as_ref() {
            Some(r) => r.message_id.clone(),
            None => match shared.ids.allocate(&agent.message_id_prefix(), started) {
                Ok(id) => id,
                Err(e) => {
                    return never_started(
                        &ctx,
                        String::new(),
                        format!("cannot allocate a message id: {e}"),
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
        };
        let wall = state
            .agent
            .budget
            .wall_seconds
            .map(Duration::from_secs)
            .unwrap_or(shared.options.hop_timeout);
        let clock = Instant::now();
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
        self.messages.push(Message::user(self.req.prompt.clone()));
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
                tools: if last_step {
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
                return Ending {
                    status,
                    answer,
                    error,
                    conformant,
                    violations,
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
            if let Some(budget) = self.agent.budget.tokens {
                let used = self.usage.total();
                if !nudged && used as f64 >= budget as f64 * BUDGET_NUDGE {
                    nudged = true;
                    self.ctx.emit(EventKind::HopBudget {
                        used_tokens: used,
                        budget_tokens: budget,
                        action: "wrap_up".into(),
                    });
                    self.messages.push(Message::user(format!(
                        "You have used {used} of your {budget} tokens. Wrap up: finish the step \
                         you are on and give your final answer soon."
                    )));
                }
            }
        }
    }

    /// The answer so far, ended PARTIAL: the last thing the agent said.
    fn partial(&self, why: String) -> Ending {
        Ending {
            status: HopStatus::Partial,
            answer: self.last_content.clone(),
            error: Some(why),
            conformant: None,
            violations: Vec::new(),
        }
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
        };
        let mut pending = Vec::with_capacity(calls.len());
        for call in calls {
            self.ctx.emit(EventKind::ToolCall {
                call_id: call.id.clone(),
                tool: call.name.clone(),
                arguments: call.arguments.clone(),
            });
            let tool = crate::agent::grants::canonical_tool_name(&call.name);
            if tool == "webfetch" || tool == "websearch" {
                let (message, record) = caller.web(call, &tool).await;
                if let Some(record) = record {
                    self.ctx.emit(EventKind::WebFetch(record));
                }
                pending.push(Pending::Done(message, None));
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
                    (
                        result.to_tool_message(&call.id),
                        result.written.clone(),
                        Some(result.hop_id),
                    )
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
