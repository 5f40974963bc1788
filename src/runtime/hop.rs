//! The agent loop for one hop: render the prompt, ask the model, run the tools it calls, repeat
//! until a final answer; check that answer against the agent's contract, with repair turns; stop
//! at the steps limit, the token budget or the wall-clock limit.
//!
//! A hop is one agent working on one task. Its `task` calls become child hops, run concurrently
//! (each on its own tokio task, bounded by the session's semaphore) and answered in call order.
//! While a hop waits for its children it gives its semaphore permit back, so a chain of
//! delegations deeper than `--max-parallel` cannot deadlock.

use chrono::Utc;
use serde::Serialize;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::OwnedSemaphorePermit;

use super::check::check_answer;
use super::dispatch;
use super::events::{timestamp, EventKind, HopStatus, ViolationRecord};
use super::session::Shared;
use crate::agent::render::{render, PromptContext};
use crate::agent::Agent;
use crate::contract::OnViolation;
use crate::model::{
    BoxFuture, Message, Model, ModelError, ModelRequest, ModelResponse, ResponseContract, ToolCall,
    Usage,
};
use crate::tools::{self, ToolContext};

/// Model turns a hop gets when its agent does not set `steps`.
pub const DEFAULT_STEPS: u32 = 50;
/// Retries of a transient model failure before the hop fails.
pub const MODEL_RETRIES: u32 = 3;
/// Share of the token budget at which the agent is told to wrap up.
pub const BUDGET_NUDGE: f64 = 0.6;
/// Tool output kept in the event log (the transcript keeps everything).
const LOGGED_OUTPUT: usize = 4096;

/// The hop that made a `task` call.
#[derive(Debug, Clone)]
pub struct ParentLink {
    pub hop_id: String,
    pub agent: String,
    pub model: String,
}

/// A hop to run.
#[derive(Debug, Clone)]
pub struct HopRequest {
    pub agent: String,
    pub prompt: String,
    pub description: String,
    pub parent: Option<ParentLink>,
    pub depth: u32,
    /// Agents from the primary down to this hop's caller.
    pub chain: Vec<String>,
    /// A preassigned id (the primary hop's, announced in `session.started`).
    pub hop_id: Option<String>,
}

/// How a hop ended, as its caller sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HopResult {
    pub hop_id: String,
    pub agent: String,
    pub message_id: String,
    pub status: HopStatus,
    pub answer: String,
    pub error: Option<String>,
    pub usage: Usage,
    pub violations: Vec<ViolationRecord>,
    /// Files written by this hop and its descendants.
    pub written: Vec<String>,
    pub reused: bool,
}

impl HopResult {
    /// The tool message the caller receives: the answer, marked when partial or non-conformant,
    /// or an error that says why.
    pub fn to_tool_message(&self, call_id: &str) -> Message {
        match self.status {
            HopStatus::Completed => Message::tool(call_id, self.answer.clone(), false),
            HopStatus::Partial => Message::tool(
                call_id,
                format!(
                    "[PARTIAL: `{}` stopped before finishing ({}); this is what it had]\n\n{}",
                    self.agent,
                    self.error.as_deref().unwrap_or("limit reached"),
                    self.answer
                ),
                false,
            ),
            HopStatus::NonConformant => Message::tool(
                call_id,
                format!(
                    "[NON-CONFORMANT: `{}`'s answer still violates its contract]\n{}\n\n{}",
                    self.agent,
                    list_violations(&self.violations),
                    self.answer
                ),
                false,
            ),
            HopStatus::Failed => Message::tool(
                call_id,
                format!(
                    "subagent `{}` failed: {}",
                    self.agent,
                    self.error.as_deref().unwrap_or("unknown error")
                ),
                true,
            ),
        }
    }
}

fn list_violations(v: &[ViolationRecord]) -> String {
    v.iter()
        .map(|v| {
            if v.line > 0 {
                format!("- line {}: [{}] {}", v.line, v.rule, v.message)
            } else {
                format!("- [{}] {}", v.rule, v.message)
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The ids and links every event of a hop carries.
#[derive(Clone)]
pub(crate) struct HopCtx {
    pub shared: Arc<Shared>,
    pub hop_id: String,
    pub parent_hop_id: Option<String>,
    pub agent: String,
}

impl HopCtx {
    pub fn emit(&self, kind: EventKind) {
        self.shared.emit(
            Some(&self.hop_id),
            self.parent_hop_id.as_deref(),
            Some(&self.agent),
            kind,
        );
    }
}

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
        let fail = |ctx: &HopCtx, message_id: String, error: String| {
            let now = timestamp(Utc::now());
            ctx.emit(EventKind::HopFailed {
                error: error.clone(),
                usage: Usage::default(),
                started_at: now.clone(),
                ended_at: now,
                duration_us: 0,
                violations: Vec::new(),
            });
            HopResult {
                hop_id: ctx.hop_id.clone(),
                agent: ctx.agent.clone(),
                message_id,
                status: HopStatus::Failed,
                answer: String::new(),
                error: Some(error),
                usage: Usage::default(),
                violations: Vec::new(),
                written: Vec::new(),
                reused: false,
            }
        };
        let Some(agent) = shared.agents.get(&req.agent).cloned() else {
            return fail(
                &ctx,
                String::new(),
                format!("unknown agent `{}`", req.agent),
            );
        };
        let model_spec =
            match shared.model_spec(&agent, req.parent.as_ref().map(|p| p.model.as_str())) {
                Ok(s) => s,
                Err(e) => return fail(&ctx, String::new(), e),
            };
        let model = match shared.models.get(&model_spec) {
            Ok(m) => m,
            Err(e) => return fail(&ctx, String::new(), e.to_string()),
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
                    return fail(
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
                let now = timestamp(Utc::now());
                for (hop, parent, agent) in shared.take_descendants(&hop_id) {
                    shared.emit(
                        Some(&hop),
                        parent.as_deref(),
                        Some(&agent),
                        EventKind::HopFailed {
                            error: format!("cancelled: `{}` timed out", state.agent.name),
                            usage: Usage::default(),
                            started_at: now.clone(),
                            ended_at: now.clone(),
                            duration_us: 0,
                            violations: Vec::new(),
                        },
                    );
                }
                Ending::failed(format!(
                    "timed out after {} s (wall-clock limit)",
                    wall.as_secs_f64()
                ))
            }
        };
        state.finish(ending, clock.elapsed())
    })
}

/// How the loop ended.
struct Ending {
    status: HopStatus,
    answer: String,
    error: Option<String>,
    conformant: Option<bool>,
    violations: Vec<ViolationRecord>,
}

impl Ending {
    fn failed(error: String) -> Self {
        Ending {
            status: HopStatus::Failed,
            answer: String::new(),
            error: Some(error),
            conformant: None,
            violations: Vec::new(),
        }
    }
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
        let tool_specs = tools::specs_for(&self.agent);
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
        let mut repairs = 0u32;
        let mut nudged = false;
        let mut turn = 0u32;
        loop {
            self.steps += 1;
            turn += 1;
            let last_step = self.steps >= max_steps;
            if last_step && !tool_specs.is_empty() {
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
                response_contract: response_contract.clone(),
            };
            self.ctx.emit(EventKind::ModelRequest {
                step: turn,
                messages: request.messages.len(),
                tools: request.tools.len(),
            });
            let clock = Instant::now();
            let response = match self.complete(&request, turn).await {
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
            if response.tool_calls.is_empty() {
                self.messages
                    .push(Message::assistant(response.content.clone(), Vec::new()));
                let Some(contract) = self.agent.contract.clone() else {
                    return Ending {
                        status: HopStatus::Completed,
                        answer: response.content,
                        error: None,
                        conformant: None,
                        violations: Vec::new(),
                    };
                };
                let outcome = check_answer(
                    &response.content,
                    &contract,
                    &shared.project,
                    &shared.correlation_id,
                    &self.message_id,
                );
                self.ctx.emit(EventKind::ContractChecked {
                    contract: contract.name.clone(),
                    message_id: self.message_id.clone(),
                    conformant: outcome.conformant,
                    repair: repairs,
                    violations: outcome.violations.clone(),
                });
                if outcome.conformant {
                    return Ending {
                        status: HopStatus::Completed,
                        answer: response.content,
                        error: None,
                        conformant: Some(true),
                        violations: Vec::new(),
                    };
                }
                if repairs < contract.max_repairs {
                    repairs += 1;
                    // Repair turns do not count against `steps`.
                    self.steps -= 1;
                    self.ctx.emit(EventKind::HopRepair {
                        repair: repairs,
                        violations: outcome.violations.len(),
                    });
                    self.messages.push(Message::user(outcome.repair_prompt));
                    continue;
                }
                let summary = format!(
                    "answer violates contract `{}` after {repairs} repair turn(s):\n{}",
                    contract.name,
                    list_violations(&outcome.violations)
                );
                return match contract.on_violation {
                    OnViolation::Fail => Ending {
                        status: HopStatus::Failed,
                        answer: response.content,
                        error: Some(summary),
                        conformant: Some(false),
                        violations: outcome.violations,
                    },
                    OnViolation::Mark => Ending {
                        status: HopStatus::NonConformant,
                        answer: response.content,
                        error: Some(summary),
                        conformant: Some(false),
                        violations: outcome.violations,
                    },
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

    /// One completion, with retries for transient failures.
    async fn complete(
        &self,
        request: &ModelRequest,
        step: u32,
    ) -> Result<ModelResponse, ModelError> {
        let mut attempt = 0;
        // HTTP providers retry transient failures themselves; each failed attempt is logged.
        let ctx = self.ctx.clone();
        let observer: crate::model::http::AttemptObserver =
            Arc::new(move |e: &crate::model::http::AttemptEvent| {
                if let crate::model::http::AttemptOutcome::Retrying { error, delay } = &e.outcome {
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
        loop {
            let call = self.model.complete(request);
            match crate::model::http::observe(observer.clone(), call).await {
                Ok(r) => return Ok(r),
                Err(ModelError::Transient {
                    message,
                    retry_after,
                }) if attempt < MODEL_RETRIES => {
                    attempt += 1;
                    self.ctx.emit(EventKind::ModelError {
                        step,
                        error: message,
                        retry: true,
                    });
                    let backoff = Duration::from_millis(250 * 2u64.pow(attempt));
                    tokio::time::sleep(retry_after.unwrap_or(backoff)).await;
                }
                Err(e) => {
                    self.ctx.emit(EventKind::ModelError {
                        step,
                        error: e.to_string(),
                        retry: false,
                    });
                    return Err(e);
                }
            }
        }
    }

    /// Runs one turn's tool calls: built-ins inline, `task` calls as concurrent child hops;
    /// results come back in call order.
    async fn run_tools(&mut self, calls: &[ToolCall]) -> Vec<Message> {
        enum Pending {
            Done(Message, Option<String>),
            Child(AbortOnDrop),
        }
        let shared = self.ctx.shared.clone();
        let mut pending = Vec::with_capacity(calls.len());
        for call in calls {
            self.ctx.emit(EventKind::ToolCall {
                call_id: call.id.clone(),
                tool: call.name.clone(),
                arguments: call.arguments.clone(),
            });
            let tool = crate::agent::grants::canonical_tool_name(&call.name);
            if tool == "task" {
                match self.task_request(&call.arguments) {
                    Ok(child) => {
                        let handle = tokio::spawn(run_hop(shared.clone(), child));
                        pending.push(Pending::Child(AbortOnDrop(handle)));
                    }
                    Err(e) => pending.push(Pending::Done(Message::tool(&call.id, e, true), None)),
                }
                continue;
            }
            let ctx = ToolContext {
                project: &shared.project,
                agent: &self.agent,
            };
            match tools::invoke(ctx, &tool, &call.arguments) {
                Ok(out) => pending.push(Pending::Done(
                    Message::tool(&call.id, out.text, false),
                    out.written,
                )),
                Err(e) => pending.push(Pending::Done(
                    Message::tool(&call.id, e.to_string(), true),
                    None,
                )),
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

    /// Checks a `task` call and builds the child hop, or says why not.
    fn task_request(&self, args: &serde_json::Value) -> Result<HopRequest, String> {
        let shared = &self.ctx.shared;
        let mut chain = self.req.chain.clone();
        chain.push(self.agent.name.clone());
        let (call, _target) = dispatch::accept(
            &self.agent,
            args,
            &chain,
            self.req.depth,
            shared.options.max_depth,
            &shared.agents,
        )
        .map_err(|e| e.to_string())?;
        Ok(HopRequest {
            agent: call.subagent_type,
            prompt: call.prompt,
            description: call.description,
            parent: Some(ParentLink {
                hop_id: self.ctx.hop_id.clone(),
                agent: self.agent.name.clone(),
                model: self.model_spec.clone(),
            }),
            depth: self.req.depth + 1,
            chain,
            hop_id: None,
        })
    }

    /// Logs the end of the hop, writes its transcript and builds the caller's result.
    fn finish(mut self, ending: Ending, elapsed: Duration) -> HopResult {
        self.permit = None;
        let shared = self.ctx.shared.clone();
        let ended = Utc::now();
        shared.write_transcript(&self.ctx.hop_id, &self.system, &self.messages);
        let duration_us = elapsed.as_micros() as u64;
        // A hop an ancestor's timeout or Ctrl-C already ended (while it was finishing) is not
        // ended twice: only the one that takes it out of the in-flight set logs its end.
        let ended_here = shared.end_in_flight(&self.ctx.hop_id);
        if ended_here && ending.status == HopStatus::Failed {
            self.ctx.emit(EventKind::HopFailed {
                error: ending.error.clone().unwrap_or_default(),
                usage: self.usage,
                started_at: timestamp(self.started),
                ended_at: timestamp(ended),
                duration_us,
                violations: ending.violations.clone(),
            });
        } else if ended_here {
            self.ctx.emit(EventKind::HopCompleted {
                status: ending.status,
                message_id: self.message_id.clone(),
                answer: ending.answer.clone(),
                usage: self.usage,
                started_at: timestamp(self.started),
                ended_at: timestamp(ended),
                duration_us,
                steps: self.steps,
                conformant: ending.conformant,
                violations: ending.violations.clone(),
                written: self.written.clone(),
            });
        }
        shared.add_usage(self.usage);
        HopResult {
            hop_id: self.ctx.hop_id.clone(),
            agent: self.agent.name.clone(),
            message_id: self.message_id,
            status: ending.status,
            answer: ending.answer,
            error: ending.error,
            usage: self.usage,
            violations: ending.violations,
            written: self.written,
            reused: false,
        }
    }
}

fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [{} bytes]", &s[..end], s.len())
}
