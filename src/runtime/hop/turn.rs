//! One turn's work beside the loop: the model call (a step of the hop's journal) and the
//! turn's tool calls, with built-in tools as journaled steps and `task` calls as children the
//! journal starts (tokio tasks locally, durable calls on Restate). Split from `hop.rs` so the
//! loop reads on its own.

use std::sync::Arc;

use super::super::events::EventKind;
use super::super::handoff::HopResult;
use super::super::journal::Child;
use super::super::plan_gate::{self, Admission, PLAN_TOOL};
use super::super::read_first::Ahead;
use super::super::shared::HopCtx;
use super::super::status::HopStatus;
use super::super::tool_calls::{builtin, cut, mcp, web, Caller, Done};
use super::{run_hop, HopState, LOGGED_OUTPUT};
use crate::model::notice::{self, Notice, NoticeObserver};
use crate::model::retry::{self, AttemptEvent, AttemptObserver, AttemptOutcome, RetryPolicy};
use crate::model::{Message, Model, ModelError, ModelRequest, ModelResponse, ToolCall};

/// One completion under the one retry policy ([`RetryPolicy::run`]). HTTP providers retry
/// inside `complete` with their configured policy and give up with a fatal error, so this
/// layer only retries transient errors of models that do not retry themselves. Every
/// retried attempt is a `model.retry` event; the final failure a `model.error`. Owned
/// arguments: a durable journal runs it as a step of its own.
pub(super) async fn complete(
    hop: HopCtx,
    model: Arc<dyn Model>,
    request: ModelRequest,
    step: u32,
) -> Result<ModelResponse, ModelError> {
    let request = &request;
    {
        let ctx = hop.clone();
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
        let call = policy.run(model.provider(), &request.model, None, || {
            model.complete(request)
        });
        let ctx = hop.clone();
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
            hop.emit(EventKind::ModelError {
                step,
                error: e.to_string(),
                retry: false,
            });
        }
        result
    }
}

/// How the refusal of a `task` its subagent already answered begins.
const TASK_ANSWERED: &str = "not run: you gave this same prompt to this subagent already";

/// What makes two `task` calls the same task: the subagent and the prompt, its whitespace
/// evened out. The description is only a label: in t4 the 1.5B researcher sent the decision
/// record's "Read …" prompt again under another description, it was not taken for a repeat,
/// and the record was read a second time (about three minutes). `None` for other tools and for
/// a task whose arguments do not parse (its refusal is remembered by its arguments as sent).
fn task_key(tool: &str, arguments: &serde_json::Value) -> Option<String> {
    if tool != "task" {
        return None;
    }
    let task = super::super::dispatch::TaskCall::parse(arguments).ok()?;
    let prompt: Vec<&str> = task.prompt.split_whitespace().collect();
    Some(format!(
        "{}\u{0}{}",
        task.subagent_type.trim(),
        prompt.join(" ")
    ))
}

impl HopState {
    /// Runs one turn's tool calls, made `by` the agent or the runtime: built-ins inline, `task`
    /// calls as concurrent child hops; results come back in call order.
    pub(super) async fn tools_turn(&mut self, calls: &[ToolCall], by: super::By) -> Vec<Message> {
        enum Pending {
            Done(Message, Option<String>),
            Child(Child),
        }
        // Tasks the runtime gave to another subagent (`HopState::reader_for`), by call id: the
        // call as it ran (for the memory of calls made) and what the caller is told beside the
        // answer.
        let mut redirects: std::collections::HashMap<String, (ToolCall, String)> =
            Default::default();
        let shared = self.ctx.shared.clone();
        let found = self.found_paths.clone();
        let caller = Caller {
            shared: &shared,
            agent: &self.agent,
            request: &self.req,
            hop_id: &self.ctx.hop_id,
            model_spec: &self.model_spec,
            message_id: &self.message_id,
            found: &found,
        };
        let mut pending = Vec::with_capacity(calls.len());
        // Calls refused as repeats of earlier ones. A gate refusal is not one: it says what the
        // plan opens, and a model that tries another source next is finding its way.
        let mut refused = 0usize;
        // `step` calls judged this turn, and how many of them came back UNCHANGED.
        let (mut steps_reported, mut unchanged) = (0usize, 0usize);
        // Of those, `task` calls whose subagent answered before: nothing new can come of them.
        let mut answered_again = 0usize;
        // Of those, reads and searches that succeeded before: their results are above as they
        // were, so the agent has what its tools can give it.
        let mut observed_again = 0usize;
        for call in calls {
            self.ctx.emit(EventKind::ToolCall {
                call_id: call.id.clone(),
                tool: call.name.clone(),
                arguments: call.arguments.clone(),
            });
            let tool = crate::agent::grants::canonical_tool_name(&call.name);
            // A task for a finder that names files goes to their reader, before the repeat
            // check: the same task sent to that reader before is a repeat. The model's own tasks
            // only: the runtime's `delegate_first` searches are meant.
            let redirected;
            let reader = (by == super::By::Agent)
                .then(|| self.reader_for(&tool, call))
                .flatten();
            let call = match reader {
                // Nothing new can come of it, as of a task answered before.
                Some(ReaderFor::Refuse(msg)) => {
                    pending.push(Pending::Done(Message::tool(&call.id, msg, true), None));
                    refused += 1;
                    answered_again += 1;
                    continue;
                }
                Some(ReaderFor::Reader(arguments, note)) => {
                    redirected = ToolCall {
                        arguments,
                        ..call.clone()
                    };
                    redirects.insert(call.id.clone(), (redirected.clone(), note));
                    &redirected
                }
                None => call,
            };
            let key = self.call_key(&tool, call);
            // A `read` of lines `read_first` put in the task message is answered with where
            // they are, whatever its `limit`; one that runs on past them reads only the lines
            // after them (see `read_first::already_shown`). Asked before the repeat check: the
            // runtime's own read may have had the same arguments, and where the lines are is
            // the better answer. Counted as a read made again (`observed_again`).
            let ahead = (tool == "read" && by == super::By::Agent)
                .then(|| {
                    super::super::read_first::already_shown(
                        &self.read_ahead,
                        &call.arguments,
                        &shared.project,
                    )
                })
                .flatten();
            if let Some(Ahead::Shown(msg)) = &ahead {
                self.ctx.emit(EventKind::HopSteered {
                    why: "read_first_shown".into(),
                    count: 1,
                });
                pending.push(Pending::Done(
                    Message::tool(&call.id, msg.clone(), true),
                    None,
                ));
                refused += 1;
                observed_again += 1;
                continue;
            }
            // A call that failed, made again unchanged, fails the same way: a small model caught
            // in a loop repeats one refused call for its whole budget. A `task` is remembered
            // when it was refused before any subagent ran (bad arguments, policy), when its
            // subagent ended BLOCKED (it broke its contract through every repair turn, and
            // Qwen2.5-Coder-1.5B called it again with the same prompt, three model turns to the
            // same answer), and when it COMPLETED: its answer is in the conversation, and the
            // 1.5B planner copied the runtime's `delegate_first` call word for word, a second
            // six-minute locator hop to the same list. One that failed otherwise (a timeout, a
            // model error) may be tried again. A write clears the memory.
            if let Some((mut msg, answered, observed)) = self.seen_calls.get(&key).and_then(|s| {
                Some((
                    s.repeat_message(&tool)?,
                    s.answered_task(&tool),
                    s.observed(&tool),
                ))
            }) {
                // "The next step of your task" names nothing a small model can act on; a
                // workflow agent is shown the step call it owes. The 1.5B planner, given its
                // locator's answer, sent the same `task` three times and ended PARTIAL without
                // ever reporting `intent`.
                if tool != "step" && self.follows_workflow {
                    if let Some(step) =
                        crate::workflow::tool::next_step_call(&self.workflow_call(&shared))
                    {
                        msg.push_str(&format!(
                            " Your workflow's next step is `{}`: report it with {}",
                            step["name"].as_str().unwrap_or_default(),
                            crate::workflow::tool::how_to_report(&step)
                        ));
                    }
                }
                if answered {
                    answered_again += 1;
                }
                if observed {
                    observed_again += 1;
                }
                pending.push(Pending::Done(Message::tool(&call.id, msg, true), None));
                refused += 1;
                continue;
            }
            // A workflow step that opens only some tools (`tools:`) while it is owed: the
            // others are refused with the `step` call owed (the 1.5B planner, owing `intent`,
            // delegated to thoughts-analyzer instead). Not counted toward the stall: a stalled
            // hop is offered no tools, `step` included, and the step is what it owes.
            let closed = (self.follows_workflow && by == super::By::Agent)
                .then(|| {
                    let wf = self.workflow_call(&shared);
                    crate::workflow::tool::closed_tool(&wf, &tool, &call.name)
                })
                .flatten();
            if let Some(why) = closed {
                self.ctx.emit(EventKind::HopSteered {
                    why: "workflow_step_owed".into(),
                    count: 1,
                });
                pending.push(Pending::Done(Message::tool(&call.id, why, true), None));
                continue;
            }
            let narrowed;
            let mut rest_note = None;
            let call = match ahead {
                Some(Ahead::Rest { arguments, note }) => {
                    self.ctx.emit(EventKind::HopSteered {
                        why: "read_first_rest".into(),
                        count: 1,
                    });
                    rest_note = Some(note);
                    narrowed = ToolCall {
                        arguments,
                        ..call.clone()
                    };
                    &narrowed
                }
                _ => call,
            };
            self.seen_calls
                .entry(key)
                .or_insert_with(|| SeenCall::pending(self.steps));
            if let Some(gate) = self.plan_gate.as_mut() {
                let target = (tool == "task")
                    .then(|| super::super::dispatch::TaskCall::parse(&call.arguments).ok())
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
                // A step: a replay does not fetch again.
                let work = {
                    let (shared, agent) = (shared.clone(), self.agent.clone());
                    let (call, tool) = (call.clone(), tool.clone());
                    async move { web(&shared, &agent, &call, &tool).await }
                };
                let (message, record) = match self
                    .ctx
                    .journal
                    .step(&format!("tool:{}", call.id), work)
                    .await
                {
                    Ok(done) => done,
                    Err(e) => (Message::tool(&call.id, e.to_string(), true), None),
                };
                if let Some(record) = record {
                    self.ctx.emit(EventKind::WebFetch(record));
                }
                pending.push(Pending::Done(message, None));
                continue;
            }
            if call.name == crate::workflow::tool::TOOL {
                // A step: a replay does not report the workflow step again.
                let work = {
                    let (shared, agent, req) =
                        (shared.clone(), self.agent.clone(), self.req.clone());
                    let (hop_id, model_spec, message_id, call, found) = (
                        self.ctx.hop_id.clone(),
                        self.model_spec.clone(),
                        self.message_id.clone(),
                        call.clone(),
                        found.clone(),
                    );
                    async move {
                        let caller = Caller {
                            shared: &shared,
                            agent: &agent,
                            request: &req,
                            hop_id: &hop_id,
                            model_spec: &model_spec,
                            message_id: &message_id,
                            found: &found,
                        };
                        caller.step(&call)
                    }
                };
                let done = match self
                    .ctx
                    .journal
                    .step(&format!("tool:{}", call.id), work)
                    .await
                {
                    Ok(done) => done,
                    Err(e) => Some((Message::tool(&call.id, e.to_string(), true), None, None)),
                };
                if let Some((message, written, event)) = done {
                    if let Some(event) = event {
                        if let EventKind::WorkflowStep { action, .. } = &event {
                            steps_reported += 1;
                            unchanged += usize::from(action == "UNCHANGED");
                        }
                        if let Some(question) = clarifying_question(&event, &message.content) {
                            if self.req.parent.is_none() {
                                self.asked_user = Some(question);
                            }
                        }
                        self.ctx.emit(event);
                    }
                    pending.push(Pending::Done(message, written));
                    continue;
                }
            }
            if tool == "analyze_file" {
                // Its chunks are child hops: give the slot back while they run.
                self.permit = None;
                let message =
                    super::super::analyze::tool(&caller, shared.clone(), call, run_hop).await;
                if self.req.depth > 0 {
                    self.permit = shared.semaphore.clone().acquire_owned().await.ok();
                }
                pending.push(Pending::Done(message, None));
                continue;
            }
            let is_mcp = shared
                .mcp
                .get()
                .is_some_and(|m| m.resolve(&call.name).is_some());
            let mcp_done = if is_mcp {
                // A step: a replay does not call the MCP server again.
                let work = {
                    let (shared, agent, call) = (shared.clone(), self.agent.clone(), call.clone());
                    async move { mcp(&shared, &agent, &call).await }
                };
                match self
                    .ctx
                    .journal
                    .step(&format!("tool:{}", call.id), work)
                    .await
                {
                    Ok(done) => done,
                    Err(e) => {
                        let message = Message::tool(&call.id, e.to_string(), true);
                        pending.push(Pending::Done(message, None));
                        continue;
                    }
                }
            } else {
                None
            };
            if let Some((message, record)) = mcp_done {
                self.ctx.emit(EventKind::McpCall(record));
                pending.push(Pending::Done(message, None));
                continue;
            }
            if tool == "task" {
                match caller.task_request(&call.arguments) {
                    Ok(child) => pending.push(Pending::Child(
                        self.ctx
                            .journal
                            .spawn_child(child, |req| run_hop(shared.clone(), req)),
                    )),
                    Err(e) => pending.push(Pending::Done(
                        Message::tool(&call.id, e.to_string(), true),
                        None,
                    )),
                }
                continue;
            }
            // A built-in tool is a step: a replay reads its recorded result, and never writes
            // a file twice.
            let work = {
                let (shared, agent, call) = (shared.clone(), self.agent.clone(), call.clone());
                let read = self.read_files.clone();
                async move { builtin(&shared, &agent, &call, &read) }
            };
            let mut done = match self
                .ctx
                .journal
                .step(&format!("tool:{}", call.id), work)
                .await
            {
                Ok(done) => done,
                Err(e) => Done {
                    message: Message::tool(&call.id, e.to_string(), true),
                    written: None,
                    refused: None,
                },
            };
            if let Some(note) = rest_note.filter(|_| !done.message.is_error) {
                done.message.content = format!("{note}\n{}", done.message.content);
            }
            if let Some(reason) = done.refused {
                shared.refuse_path(&self.ctx.hop_id, reason);
            }
            if tool == "read" && !done.message.is_error {
                let read = crate::tools::str_arg("read", &call.arguments, "path")
                    .ok()
                    .and_then(|name| shared.project.resolve(name).ok());
                if let Some(path) = read {
                    self.read_files.push(shared.project.relative(&path));
                }
            }
            pending.push(Pending::Done(done.message, done.written));
        }
        // A turn whose every `step` call was UNCHANGED (see `Hop::unchanged_steps`).
        if steps_reported > 0 {
            self.unchanged_steps = if unchanged == steps_reported {
                self.unchanged_steps + 1
            } else {
                0
            };
        }
        self.refused_turns = if !calls.is_empty() && refused == calls.len() {
            self.refused_turns + 1
        } else {
            0
        };
        // A subagent that only read or searched again what it had read or searched is done
        // gathering: its next turn is the answer (`Hop::stall_now`). Warmer sampling did not
        // move Qwen2.5-Coder-1.5B off such a repeat once: in one researcher session both
        // locators and the codebase-analyzer each sent their refused call a second time, three
        // turns (~13k input tokens of ~81k) that ended as the tools-free turn would have.
        self.observed_again = !calls.is_empty() && observed_again == calls.len();
        // After the note to write the owed document now, a turn that only gave subagents tasks
        // they had answered found nothing new: like a delegation that added no verified item,
        // the next turn may only write (`Hop::write_now`). The 1.5B researcher, shown three
        // verified items, sent the analyzer its task again and then a locator a new one: one
        // more locator hop before the report.
        if answered_again > 0 && refused == calls.len() && self.noted_findings.is_none() {
            self.noted_findings = self.last_note;
        }
        let has_children = pending.iter().any(|p| matches!(p, Pending::Child(_)));
        if has_children {
            // Give the slot back while waiting, so children (and their children) can run.
            self.permit = None;
        }
        let mut out = Vec::with_capacity(calls.len());
        for (call, p) in calls.iter().zip(pending) {
            let redirect = redirects.remove(&call.id);
            let call = redirect.as_ref().map_or(call, |(ran, _)| ran);
            let (message, written, child, remember) = match p {
                Pending::Done(m, w) => (m, w.into_iter().collect::<Vec<_>>(), None, false),
                Pending::Child(child) => {
                    let result = match child.wait().await {
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
                    if let Some((_, note)) = &redirect {
                        message.content = format!("{note}\n\n{}", message.content);
                    }
                    if let Some(note) = self.offer_plan(&result) {
                        message.content.push_str(&note);
                    } else if result.status == HopStatus::Completed {
                        // What a subagent found goes into the gate's next delegation and a
                        // workflow step's offered evidence (`workflow::tool::Call::found`).
                        self.note_found_paths(&result.agent, &result.hop_id, &result.answer);
                        self.note_analyzed(&result.agent, call, &result.answer);
                        if self.plan_gate.is_some() {
                            self.answered.insert(result.agent.clone());
                            // The runtime's own delegations (`delegate_first`) get one note
                            // after all their answers, where they are folded into the task.
                            let note = (by == super::By::Agent)
                                .then(|| self.after_answer(&result.answer))
                                .flatten();
                            if let Some(note) = note {
                                message.content.push_str("\n\n[runtime] ");
                                message.content.push_str(&note);
                            }
                        }
                    }
                    let blocked = result.status == HopStatus::Blocked;
                    if blocked {
                        self.blocked.insert(result.agent.clone());
                        if let Some(note) = self.note_searched_first(&result.agent, &result.hop_id)
                        {
                            message.content.push_str("\n\n[runtime] ");
                            message.content.push_str(&note);
                        }
                    }
                    let remember = blocked || result.status == HopStatus::Completed;
                    (
                        message,
                        result.written.clone(),
                        Some(result.hop_id),
                        remember,
                    )
                }
            };
            if child.is_none() {
                shared.add_written(&written);
            }
            // A write changes files, which makes an earlier answer stale (a change of what the
            // gate opens is in the key already); the write itself is remembered, so the same
            // write again is not run (Qwen2.5-Coder-1.5B wrote one file 22 times in a row).
            let key = (child.is_none() || remember).then(|| {
                let tool = crate::agent::grants::canonical_tool_name(&call.name);
                self.call_key(&tool, call)
            });
            if !written.is_empty() {
                self.seen_calls.retain(|k, _| Some(k) == key.as_ref());
                self.read_ahead.clear();
            }
            if let Some(seen) = key.and_then(|k| self.seen_calls.get_mut(&k)) {
                seen.settle(&message);
            }
            // Whether a file this hop wrote is the deliverable, said while the agent can act.
            let mut message = message;
            if let (Some(owed), None) = (&self.agent.deliver, &child) {
                if let Some(note) =
                    super::super::deliver::written_note(owed, &written, &shared.project)
                {
                    message.content.push_str(&note);
                }
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

    /// Records the files a completed hop of a gate's reader was given (named in its task's
    /// prompt) and cited in Evidence that verifies: those it read for this hop's question.
    fn note_analyzed(&mut self, agent: &str, call: &ToolCall, answer: &str) {
        let Some(gate) = self.plan_gate.as_ref() else {
            return;
        };
        if !gate
            .readers(&Default::default())
            .iter()
            .any(|(_, r)| r == agent)
        {
            return;
        }
        let Ok(task) = super::super::dispatch::TaskCall::parse(&call.arguments) else {
            return;
        };
        let project = &self.ctx.shared.project;
        let given = super::super::read_first::named_files(&task.prompt, project, 6);
        let files = crate::contract::FileCache::new();
        let ctx = crate::contract::CheckContext::new(project, &files);
        let cited: Vec<String> = crate::contract::verified_items(answer, &ctx)
            .into_iter()
            .flat_map(|i| i.references.into_iter().map(|r| r.path))
            .collect();
        for file in given {
            if cited.iter().any(|c| c.trim_start_matches("./") == file) {
                self.analyzed.insert(file);
            }
        }
    }

    /// Keeps the first few file paths a subagent's answer named that exist in the project,
    /// for the next delegation's prompt and a workflow step's offered evidence: those in
    /// backticks, or, when the answer has none, the bare words of its `<answer>` block that
    /// are project files (Qwen2.5-Coder-1.5B's locator: "Start with: src/runtime/search_first.rs").
    /// A few per subagent: two locators answering in one turn each get their paths kept. A
    /// file the subagent's own runtime search ranked first (`search_first:`) is kept first
    /// among them: the 1.5B codebase-locator, asked to plan a `--quiet` flag for the run
    /// command, listed `src/cli/mod.rs` (48 hits) before `src/cli/run.rs`, which the search
    /// ranked first, and the planner's scope then cited `mod.rs` only.
    fn note_found_paths(&mut self, agent: &str, hop_id: &str, answer: &str) {
        const KEEP: usize = 3;
        let (mut named, bare) = answered_paths(answer);
        let shared = self.ctx.shared.clone();
        let first = shared.ranked_first(hop_id);
        // Stable: the rest keep the answer's order.
        named.sort_by_key(|p| first.as_ref() != Some(p));
        for path in named {
            if self.found_by.iter().filter(|by| *by == agent).count() >= KEEP {
                break;
            }
            let found = shared
                .project
                .resolve_visible(&path)
                .is_ok_and(|p| !bare || p.is_file());
            if found && !self.found_paths.contains(&path) {
                self.found_paths.push(path);
                self.found_by.push(agent.to_string());
            }
        }
    }

    /// For a subagent that ended BLOCKED: the file its runtime search (`search_first:`) ranked
    /// first is kept as found, as an accepted answer's paths are (see [`Self::note_found_paths`]),
    /// and the note saying so. The answer failed its contract, but the search was the runtime's
    /// own `grep` of the tree, no claim of the model's. Over llama-server the 1.5B locators were
    /// BLOCKED on one slip of form with the right file ranked first, and with nothing found the
    /// planner asked the user "What files does `codebase-locator` need to read first?" and the
    /// researcher's record went unread. `None` when the subagent searched nothing first.
    fn note_searched_first(&mut self, agent: &str, hop_id: &str) -> Option<String> {
        let path = self.ctx.shared.ranked_first(hop_id)?;
        if !self.found_paths.contains(&path) {
            self.found_paths.push(path.clone());
            self.found_by.push(agent.to_string());
        }
        Some(format!(
            "`{agent}`'s answer did not hold, but the runtime's own search for this task ranked \
             `{path}` first: it counts as found. Go on with it."
        ))
    }

    /// What makes two calls the same for [`SeenCall`]: the tool, its arguments, and what the
    /// gate opens at the time.
    fn call_key(&self, tool: &str, call: &ToolCall) -> String {
        let gate = self
            .plan_gate
            .as_ref()
            .map(|g| g.state_key())
            .unwrap_or_default();
        // A workflow step is judged against the steps accepted so far: once one more is
        // accepted, a result refused before may pass, so the call is a new one.
        let workflow = if tool == crate::workflow::tool::TOOL {
            let shared = self.ctx.shared.clone();
            crate::workflow::tool::next_step_name(&self.workflow_call(&shared)).unwrap_or_default()
        } else {
            String::new()
        };
        format!(
            "{tool}\u{0}{}\u{0}{gate}\u{0}{workflow}",
            task_key(tool, &call.arguments).unwrap_or_else(|| call.arguments.to_string())
        )
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
                let mut note = format!("\n\n[gate] {}", plan_gate::accepted_note(&accepted));
                // Before the first turn, with `delegate_first` calls the plan opens still to
                // come, the runtime delegates next, and its note follows their answers: the
                // 1.5B researcher copied this note's call to the thoughts-locator after the
                // runtime's own had answered.
                let runtime_next = self.steps == 0 && !self.delegate_first_calls().is_empty();
                if let Some(next) = self.next_delegation().filter(|_| !runtime_next) {
                    note.push_str("\n\n");
                    note.push_str(&next);
                }
                Some(note)
            }
            Err(why) => Some(format!("\n\n[gate] Not accepted as the plan: {why}")),
        }
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

impl HopState {
    /// A `task` for a source's finder (a locator) whose prompt names project files goes to a
    /// reader (`PlanGate::readers`): the reader of the source whose finder searches the folder
    /// holding every named file (its `search_first:`), else the called finder's own. A task for
    /// a source's reader goes to another source's reader only when that source's folder holds
    /// every named file. Returns the new arguments and the note for the caller; `None` for any
    /// other call, an ungated agent, a task naming no file, or one already with its reader.
    /// The 1.5B researcher sent a decision record to the codebase-locator, and (stop 55, and
    /// again in the twenty-third session) straight to the codebase-analyzer: the
    /// thoughts-analyzer reads records.
    ///
    /// When the source whose folder holds the files has no reader left (each ended BLOCKED),
    /// the task is refused: [`ReaderFor::Refuse`]. Handing the files to another source's reader
    /// instead is what sent a decision record to the codebase-analyzer after the
    /// thoughts-analyzer's validator rejected it (t1, stop 58): it was still reading the record
    /// when the session hit its 3000 s limit, and the code file the plan needed was never read.
    fn reader_for(&self, tool: &str, call: &ToolCall) -> Option<ReaderFor> {
        if tool != "task" {
            return None;
        }
        let gate = self.plan_gate.as_ref()?;
        let task = super::super::dispatch::TaskCall::parse(&call.arguments).ok()?;
        let shared = &self.ctx.shared;
        let files = super::super::read_first::named_files(&task.prompt, &shared.project, 6);
        if files.is_empty() {
            return None;
        }
        let skip: std::collections::BTreeSet<String> = self.blocked.iter().cloned().collect();
        let readers = gate.readers(&skip);
        let to_finder = readers.iter().any(|(f, _)| *f == task.subagent_type);
        let to_reader = readers.iter().any(|(_, r)| *r == task.subagent_type);
        if !to_finder && !to_reader {
            return None;
        }
        // Every file it names was read and cited already: a reworded task about them gets the
        // same answer. The 1.5B researcher, its two analyses in (both verified), sent "Read
        // `…path-confinement.md` and `src/project.rs`" to a locator: a third analysis of a
        // record read minutes before (t2 on 7c23773), as in t0 on 79dad23.
        if files.iter().all(|f| self.analyzed.contains(f)) {
            self.ctx.emit(EventKind::HopSteered {
                why: "task_analyzed_already".into(),
                count: files.len() as u32,
            });
            let (was, its) = if files.len() == 1 {
                ("was", "its")
            } else {
                ("were", "their")
            };
            return Some(ReaderFor::Refuse(format!(
                "not run: {} {was} read and cited by one of your subagents already; {its} \
                 verified Evidence is in the answers above, and a new task about {} would give the same \
                 answer. Delegate about another file, or write your document from the evidence \
                 you have.",
                quoted(&files),
                if files.len() == 1 { "it" } else { "them" }
            )));
        }
        let searches_all = |finder: &str| {
            let folder = shared
                .agents
                .get(finder)
                .and_then(|a| a.search_first.clone());
            folder.is_some_and(|folder| {
                let folder = format!("{}/", folder.trim_end_matches('/'));
                files.iter().all(|f| f.starts_with(&folder))
            })
        };
        // The home source is looked for among all readers, BLOCKED ones too: one whose
        // readers all ended BLOCKED has none left in `readers`.
        let home = gate
            .readers(&Default::default())
            .into_iter()
            .find(|(finder, _)| searches_all(finder));
        let (finder, reader) = match home {
            Some((home, home_reader)) => match readers.iter().find(|(f, _)| *f == home) {
                Some(pair) => pair,
                None => {
                    self.ctx.emit(EventKind::HopSteered {
                        why: "task_reader_blocked".into(),
                        count: 1,
                    });
                    return Some(ReaderFor::Refuse(format!(
                        "not run: this task names {}, files of the source `{home}` searches, \
                         and `{home_reader}`, which reads them, ended BLOCKED in this session; \
                         no other subagent reads them. Delegate about a file of another \
                         source, or answer from the evidence you have.",
                        quoted(&files)
                    )));
                }
            },
            None if to_finder => readers.iter().find(|(f, _)| *f == task.subagent_type)?,
            None => return None,
        };
        if *reader == task.subagent_type {
            return None;
        }
        let reader = reader.clone();
        self.ctx.emit(EventKind::HopSteered {
            why: "task_to_reader".into(),
            count: 1,
        });
        let mut arguments = call.arguments.clone();
        arguments["subagent_type"] = serde_json::Value::from(reader.as_str());
        let named = quoted(&files);
        let them = if files.len() == 1 { "it" } else { "them" };
        let note = if to_finder {
            format!(
                "[runtime] `{}` finds files; this task names {named} to read, so `{reader}` \
                 read {them}. Its answer:",
                task.subagent_type
            )
        } else {
            format!(
                "[runtime] this task names {named}, files of the source `{finder}` searches, \
                 so `{reader}` read {them}, not `{}`. Its answer:",
                task.subagent_type
            )
        };
        Some(ReaderFor::Reader(arguments, note))
    }
}

/// `files` as inline code, joined by commas.
fn quoted(files: &[String]) -> String {
    files
        .iter()
        .map(|f| format!("`{f}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What [`HopState::reader_for`] does with a `task` that names files to read.
enum ReaderFor {
    /// Give it to another subagent: the call's new arguments, and the note for the caller.
    Reader(serde_json::Value, String),
    /// Refuse it, with this message: the reader of those files ended BLOCKED.
    Refuse(String),
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

/// Built-in tools whose identical successful call would only do the same again while no file
/// changed (every write forgets the earlier calls but itself).
/// `plan` too: an accepted plan sent again is accepted again and changes nothing. The 1.5B
/// researcher over llama-server sent its accepted plan seven turns running.
const SAME_AGAIN: &[&str] = &[
    "read",
    "grep",
    "glob",
    "list",
    "write",
    crate::agent::gate::PLAN_TOOL,
];
/// The tools of [`SAME_AGAIN`] that only look: their result is all they do.
const OBSERVING: &[&str] = &["read", "grep", "glob", "list"];

/// A workflow `step` reply that refused the result, as `ACTION: why`: `INVALID` (the result
/// broke its schema or a check; its errors joined) or `STOP` (a step reported out of order; its
/// error). `None` for any other reply. The same result gets the same reply while no other step
/// is accepted, and the call's key holds the step to report next (see `call_key`), so a result
/// refused before is judged again once the workflow has moved.
fn step_refusal(content: &str) -> Option<String> {
    let reply: serde_json::Value = serde_json::from_str(content.trim()).ok()?;
    let text = |v: &serde_json::Value| v.as_str().map(str::to_string);
    match reply.get("action")?.as_str()? {
        "INVALID" => {
            let errors: Vec<&str> = reply
                .get("errors")
                .and_then(serde_json::Value::as_array)
                .map(|e| e.iter().filter_map(serde_json::Value::as_str).collect())
                .unwrap_or_default();
            Some(format!("INVALID: {}", errors.join("; ")))
        }
        "STOP" => Some(format!(
            "STOP: {}",
            reply.get("error").and_then(text).unwrap_or_default()
        )),
        _ => None,
    }
}

/// A tool call this hop made, for refusing an identical one (see [`HopState::tools_turn`]).
#[derive(Debug, Clone)]
pub(super) struct SeenCall {
    turn: u32,
    /// The first line of its error; `None` when it succeeded (or has not answered yet).
    error: Option<String>,
    settled: bool,
}

impl SeenCall {
    fn pending(turn: u32) -> Self {
        SeenCall {
            turn,
            error: None,
            settled: false,
        }
    }

    /// Records the result of the first call; a repeat's refusal never overwrites it.
    fn settle(&mut self, result: &Message) {
        if self.settled {
            return;
        }
        self.settled = true;
        if result.is_error {
            let line = result.content.lines().next().unwrap_or("").to_string();
            self.error = Some(cut(&line, 300));
        } else if let Some(refusal) = step_refusal(&result.content) {
            // A workflow step the runtime refused is refused the same way when reported
            // unchanged: Qwen2.5-Coder-1.5B reported one wrong `intent` result 17 times, and
            // one `plan` result before its `scope` 24 times.
            self.error = Some(cut(&refusal, 300));
        }
    }

    /// A `task` whose subagent answered: giving it again can bring nothing new.
    fn answered_task(&self, tool: &str) -> bool {
        self.settled && self.error.is_none() && tool == "task"
    }

    /// Whether this is a read or search that succeeded: made again, it shows what is above.
    fn observed(&self, tool: &str) -> bool {
        self.settled && self.error.is_none() && OBSERVING.contains(&tool)
    }

    /// What the model reads instead of running the call again: for a call that failed, for
    /// a successful one of a tool that would only do the same again (a read of unchanged
    /// files, the same write), and for a `task` that completed (its answer is above); other
    /// tools may be repeated on purpose (an MCP tool may have effects).
    fn repeat_message(&self, tool: &str) -> Option<String> {
        if self.answered_task(tool) {
            return Some(format!(
                "{TASK_ANSWERED} (turn {}) and it answered; its answer is above. Use it: do the \
                 next step of your task, or delegate something different.",
                self.turn
            ));
        }
        if self.settled && self.error.is_none() && SAME_AGAIN.contains(&tool) {
            return Some(format!(
                "not run: you made this exact `{tool}` call already (turn {}) and it \
                 succeeded; its result is above and has not changed. Do the next step of your \
                 task, or give your final answer if you are done.",
                self.turn
            ));
        }
        let error = self.error.as_ref()?;
        Some(format!(
            "not run: you made this exact `{tool}` call already (turn {}), and it failed: \
             {error}. Repeating it gives the same answer. Call something different, or do the \
             next step of your task.",
            self.turn
        ))
    }
}

/// The paths a subagent's answer names: those in backticks (`true` beside them: none were, so
/// these are the bare words), else the words of its `<answer>` block (the whole text without
/// one) that look like a file path (a `/` and a `.`). Whether they exist is the caller's to ask.
/// The question of a `step` reply that said CLARIFY (`{"action":"CLARIFY", …, "question":
/// "…"}`), `None` for any other reply.
fn clarifying_question(event: &EventKind, reply: &str) -> Option<String> {
    let EventKind::WorkflowStep { action, .. } = event else {
        return None;
    };
    if action != "CLARIFY" {
        return None;
    }
    let reply: serde_json::Value = serde_json::from_str(reply).ok()?;
    reply["question"]
        .as_str()
        .filter(|q| !q.trim().is_empty())
        .map(str::to_string)
}

fn answered_paths(answer: &str) -> (Vec<String>, bool) {
    let env = crate::contract::Envelope::parse_lenient(answer);
    if !env.paths.is_empty() {
        return (env.paths.into_iter().map(|n| n.path).collect(), false);
    }
    let block = env.answer_text(answer).unwrap_or(answer);
    let words = crate::project::path_words(block)
        .filter(|w| w.contains('/') && w.contains('.'))
        .map(str::to_string)
        .collect();
    (words, true)
}

#[cfg(test)]
mod tests {
    use super::answered_paths;

    #[test]
    fn an_answer_names_paths_in_backticks_or_else_as_bare_words_of_its_block() {
        let ticked = "<answer>\n- `src/a.rs` — a\nsee src/b.rs\n</answer>";
        assert_eq!(
            answered_paths(ticked),
            (vec!["src/a.rs".to_string()], false)
        );
        let bare = "<thinking>\nsrc/c.rs\n</thinking>\n<answer>\nStart with: src/runtime/search_first.rs.\n</answer>";
        assert_eq!(
            answered_paths(bare),
            (vec!["src/runtime/search_first.rs".to_string()], true)
        );
        assert_eq!(
            answered_paths("<answer>\nNothing matches.\n</answer>").0,
            Vec::<String>::new()
        );
    }
}
