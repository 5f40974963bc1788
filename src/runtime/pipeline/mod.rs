//! Event-driven pipelines (`switchboard pipeline run FILE "input"`): workers are agents; each
//! answers with the typed events it emits; an event that validates against its declared schema
//! wakes every worker subscribed to it (one hop each, in parallel under `--max-parallel`); an
//! event that does not validate ends its worker BLOCKED and wakes nobody.
//!
//! The whole pipeline is one session: its root hop is the pipeline (`pipeline:NAME`), every
//! worker hop is the root's child, so `trace`, the run folder and telemetry show it under one
//! correlation id. Each delivered or refused event is a `pipeline.event` in the log. Events no
//! worker subscribes to are the pipeline's output: its answer is their JSON.
//!
//! A worker's answer is `{"events": [{"type": "…", "data": {…}}]}` (prose around the object is
//! ignored); what it may emit, with each schema, follows [`PIPELINE_MARK`] in its task.

pub mod spec;

use chrono::Utc;
use serde_json::{json, Value};
use std::sync::Arc;
use tokio::task::JoinSet;

use super::ending::blocked_text;
use super::events::{timestamp, EventKind};
use super::handoff::{HopRequest, HopResult, ParentLink};
use super::hop::run_hop;
use super::session::{Session, SessionOutcome};
use super::shared::Shared;
use super::status::{HopStatus, Outcome};
use crate::model::{Usage, PIPELINE_MARK};
pub use spec::{Pipeline, PipelineError};

/// The task of `worker` on `input`.
fn task(pipeline: &Pipeline, worker: &str, input: &str) -> String {
    let allowed = serde_json::to_string_pretty(&pipeline.allowed(worker)).unwrap_or_default();
    format!(
        "{input}{PIPELINE_MARK}{allowed}\nAnswer with only one JSON object: {{\"events\": \
         [{{\"type\": \"<one of the types above>\", \"data\": {{…matching its schema…}}}}]}}. \
         Emit as many events as the work calls for; an empty list when there is nothing to emit."
    )
}

/// Why a worker's answer delivers no events. Its text goes into the `pipeline.event` problems
/// and the worker's BLOCKED reason.
#[derive(Debug, thiserror::Error)]
enum EmitError {
    #[error("the answer holds no JSON object")]
    NoObject,
    #[error("not JSON: {0}")]
    NotJson(#[source] serde_json::Error),
    #[error("no `events` list in the answer")]
    NoEvents,
    #[error("events[{0}] has no `type`")]
    NoType(usize),
    /// Events that the pipeline's declarations refuse (type not allowed, data off its schema).
    #[error("{}", .0.join("; "))]
    Refused(Vec<String>),
}

/// The events in a worker's answer, or why there are none.
fn events_of(answer: &str) -> Result<Vec<(String, Value)>, EmitError> {
    let (start, end) = match (answer.find('{'), answer.rfind('}')) {
        (Some(s), Some(e)) if s < e => (s, e),
        _ => return Err(EmitError::NoObject),
    };
    let v: Value = serde_json::from_str(&answer[start..=end]).map_err(EmitError::NotJson)?;
    let list = v
        .get("events")
        .and_then(Value::as_array)
        .ok_or(EmitError::NoEvents)?;
    list.iter()
        .enumerate()
        .map(|(i, e)| {
            let ty = e
                .get("type")
                .and_then(Value::as_str)
                .ok_or(EmitError::NoType(i))?;
            Ok((
                ty.to_string(),
                e.get("data").cloned().unwrap_or(Value::Null),
            ))
        })
        .collect()
}

/// Runs `pipeline` on `input` in `session` (made with `Session::for_pipeline`) to its end.
pub async fn run(session: &Session, pipeline: &Pipeline, input: &str) -> SessionOutcome {
    let (shared, root, label) = session.parts();
    let (shared, root, label) = (shared.clone(), root.to_string(), label.to_string());
    let emit_root = |kind: EventKind| shared.emit(Some(&root), None, Some(&label), kind);
    emit_root(EventKind::SessionStarted {
        prompt: input.to_string(),
        model: shared.options.model.clone(),
        max_parallel: shared.options.max_parallel,
        max_depth: shared.options.max_depth,
        resumed: false,
    });
    let started = Utc::now();
    shared.hop_started(&root, None, &label);
    emit_root(EventKind::HopStarted {
        depth: 0,
        attempt: 1,
        message_id: String::new(),
        model: "pipeline".into(),
        description: pipeline.file.name.clone(),
        prompt: input.to_string(),
        occurrence: 0,
        started_at: timestamp(started),
    });
    let clock = std::time::Instant::now();
    let parent_model = shared
        .options
        .model
        .clone()
        .unwrap_or_else(|| crate::config::BUILTIN_DEFAULT_MODEL.to_string());
    let spawn = |set: &mut JoinSet<(String, HopResult)>, worker: &str, prompt: String| {
        let agent = pipeline.file.workers[worker].agent.clone();
        let req = HopRequest {
            agent,
            prompt,
            description: format!("pipeline worker `{worker}`"),
            parent: Some(ParentLink {
                hop_id: root.clone(),
                agent: label.clone(),
                model: parent_model.clone(),
            }),
            depth: 1,
            chain: vec![label.clone()],
            hop_id: None,
        };
        let (shared, worker) = (shared.clone(), worker.to_string());
        set.spawn(async move { (worker, run_hop(shared, req).await) });
    };
    let mut set = JoinSet::new();
    let input_worker = pipeline.file.input.clone();
    spawn(
        &mut set,
        &input_worker,
        task(pipeline, &input_worker, input),
    );
    let mut hops = 1usize;
    let mut worst = Outcome::Completed;
    let mut reasons: Vec<String> = Vec::new();
    let mut outputs: Vec<Value> = Vec::new();
    let mut usage = Usage::default();
    while let Some(joined) = set.join_next().await {
        let Ok((worker, result)) = joined else {
            worst = worse(worst, Outcome::Failed);
            reasons.push("a worker's task ended abnormally".into());
            continue;
        };
        usage += result.usage;
        if result.status != HopStatus::Completed {
            worst = worse(worst, result.status.outcome());
            reasons.push(format!(
                "worker `{worker}` ended {}: {}",
                result.status,
                result.error.clone().unwrap_or_default()
            ));
            continue;
        }
        let emitted = events_of(&result.answer).and_then(|events| {
            let problems: Vec<String> = events
                .iter()
                .flat_map(|(ty, data)| pipeline.problems(&worker, ty, data))
                .collect();
            if problems.is_empty() {
                Ok(events)
            } else {
                Err(EmitError::Refused(problems))
            }
        });
        let hop_emit = |kind: EventKind| {
            shared.emit(Some(&result.hop_id), Some(&root), Some(&result.agent), kind)
        };
        let events = match emitted {
            Ok(events) => events,
            Err(problems) => {
                let problems = problems.to_string();
                // Tier 3: nothing this worker said is delivered.
                hop_emit(EventKind::PipelineEvent {
                    event_type: String::new(),
                    worker: worker.clone(),
                    valid: false,
                    problems: vec![problems.clone()],
                    data: Value::Null,
                    subscribers: Vec::new(),
                });
                let reason = format!("worker `{worker}` emitted invalid events: {problems}");
                hop_emit(EventKind::HopBlocked {
                    reason: reason.clone(),
                    action: format!(
                        "make `{}` emit events that match {} (its prompt, or the schema)",
                        result.agent, pipeline.path
                    ),
                });
                worst = worse(worst, Outcome::Blocked);
                reasons.push(reason);
                continue;
            }
        };
        for (ty, data) in events {
            let subscribers = pipeline.subscribers(&ty);
            hop_emit(EventKind::PipelineEvent {
                event_type: ty.clone(),
                worker: worker.clone(),
                valid: true,
                problems: Vec::new(),
                data: data.clone(),
                subscribers: subscribers.iter().map(|s| s.to_string()).collect(),
            });
            if subscribers.is_empty() {
                outputs.push(json!({"type": ty, "from": worker, "data": data}));
            }
            for sub in subscribers {
                if hops >= pipeline.max_hops() {
                    worst = worse(worst, Outcome::Blocked);
                    reasons.push(format!(
                        "the pipeline reached its {} worker hops (`max_hops`); `{sub}` was not \
                         woken for `{ty}`",
                        pipeline.max_hops()
                    ));
                    continue;
                }
                hops += 1;
                let event = serde_json::to_string_pretty(&data).unwrap_or_default();
                let prompt = format!("Event `{ty}` from `{worker}`:\n{event}");
                spawn(&mut set, sub, task(pipeline, sub, &prompt));
            }
        }
    }
    let answer = serde_json::to_string_pretty(&outputs).unwrap_or_default();
    let status = match worst {
        Outcome::Completed => HopStatus::Completed,
        Outcome::Partial => HopStatus::Partial,
        Outcome::Blocked => HopStatus::Blocked,
        Outcome::Failed | Outcome::NeedsInput => HopStatus::Failed,
    };
    let error = (!reasons.is_empty()).then(|| reasons.join("\n"));
    end_root(
        &shared,
        &root,
        &label,
        status,
        &answer,
        error.clone(),
        started,
        clock,
    );
    let result = HopResult {
        hop_id: root.clone(),
        agent: label.clone(),
        message_id: String::new(),
        status,
        answer,
        error: match (status, error) {
            (HopStatus::Blocked, Some(e)) => Some(blocked_text(&e, BLOCKED_ACTION)),
            (_, e) => e,
        },
        usage,
        violations: Vec::new(),
        written: shared.written(),
        reused: false,
        checkpoint: None,
    };
    session.complete(&result, None)
}

/// The outcome a pipeline reports when two workers ended differently: BLOCKED (a person must
/// act) over FAILED over PARTIAL over COMPLETED.
fn worse(a: Outcome, b: Outcome) -> Outcome {
    let rank = |o: Outcome| match o {
        Outcome::Completed => 0,
        Outcome::Partial => 1,
        Outcome::Failed | Outcome::NeedsInput => 2,
        Outcome::Blocked => 3,
    };
    if rank(b) > rank(a) {
        b
    } else {
        a
    }
}

const BLOCKED_ACTION: &str =
    "read the blocked workers' reasons in DECISIONS.md or the log; fix their prompts or the \
     pipeline's schemas, then run the pipeline again";

/// Logs the pipeline's root hop end (as the hop loop would).
#[allow(clippy::too_many_arguments)]
fn end_root(
    shared: &Arc<Shared>,
    root: &str,
    label: &str,
    status: HopStatus,
    answer: &str,
    error: Option<String>,
    started: chrono::DateTime<Utc>,
    clock: std::time::Instant,
) {
    shared.end_in_flight(root);
    let emit = |kind: EventKind| shared.emit(Some(root), None, Some(label), kind);
    let (started_at, ended_at) = (timestamp(started), timestamp(Utc::now()));
    let duration_us = clock.elapsed().as_micros() as u64;
    if status == HopStatus::Blocked {
        emit(EventKind::HopBlocked {
            reason: error.clone().unwrap_or_default(),
            action: BLOCKED_ACTION.into(),
        });
    }
    if matches!(status, HopStatus::Blocked | HopStatus::Failed) {
        emit(EventKind::HopFailed {
            error: error.unwrap_or_default(),
            usage: Usage::default(),
            started_at,
            ended_at,
            duration_us,
            violations: Vec::new(),
        });
    } else {
        emit(EventKind::HopCompleted {
            status,
            message_id: String::new(),
            answer: answer.to_string(),
            usage: Usage::default(),
            started_at,
            ended_at,
            duration_us,
            steps: 0,
            conformant: None,
            violations: Vec::new(),
            written: Vec::new(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::events_of;

    #[test]
    fn events_are_read_from_the_answer_or_refused_with_why() {
        let ok =
            events_of("Here:\n{\"events\": [{\"type\": \"a.b\", \"data\": {\"k\": 1}}]}").unwrap();
        assert_eq!(ok[0].0, "a.b");
        assert_eq!(ok[0].1["k"], 1);
        assert_eq!(events_of("{\"events\": []}").unwrap().len(), 0);
        assert_eq!(
            events_of("nothing").unwrap_err().to_string(),
            "the answer holds no JSON object"
        );
        assert_eq!(
            events_of("{\"x\": 1}").unwrap_err().to_string(),
            "no `events` list in the answer"
        );
        assert_eq!(
            events_of("{\"events\": [{\"data\": 1}]}")
                .unwrap_err()
                .to_string(),
            "events[0] has no `type`"
        );
    }
}
