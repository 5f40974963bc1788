//! The step protocol: one reported step in, one reply out, the state updated in memory.
//!
//! Order of judgement: a closed run refuses everything; an unknown step is INVALID; a step whose
//! prerequisites are not all accepted is refused with STOP naming the first missing one and is
//! not stored; then the result is held to the step's schema and its checks (INVALID lists every
//! problem); then the step's deciding field may turn the reply into CLARIFY or STOP; otherwise
//! a result that passes and is the very one the step was accepted with, while no step that
//! depends on it is accepted, is UNCHANGED (nothing stored: accepting it again would change
//! nothing); otherwise the result is accepted, the steps that depend on it are invalidated (it
//! may be a redo), and the reply names the next step, or, after the last one, the run is ready
//! to render.
//!
//! Nothing here touches the disk except the checks (which read the files they verify) and
//! [`render`]; [`super::tool`] saves the state and appends the log.

use serde::Serialize;
use serde_json::Value;

use super::check::{self, Subject};
use super::state::{now, Attempt, RunStatus, State, StepStatus};
use super::Workflow;
use crate::project::Project;

/// What the model is told after a `step` call.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "action", rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Reply {
    /// Accepted: go on with `next` (`None` after the last step, with the document's path).
    Proceed {
        step: String,
        next: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        document: Option<String>,
        /// What the runtime computed for this step (e.g. the complexity score).
        #[serde(skip_serializing_if = "serde_json::Map::is_empty")]
        computed: serde_json::Map<String, Value>,
        /// Fields the result left out that the step's schema gives a `default`, with the value
        /// taken, so the model (and the log) sees what was assumed for it.
        #[serde(skip_serializing_if = "serde_json::Map::is_empty")]
        defaults: serde_json::Map<String, Value>,
        /// Evidence the runtime re-cited where its excerpt stands ([`check::relocate`]).
        #[serde(skip_serializing_if = "Vec::is_empty")]
        corrected: Vec<String>,
        /// The `step` call that reports `next`, its result the shape of that step's result
        /// (see [`super::shape`]): a 1.5B planner told only `"next": "clarify"` delegated
        /// again instead, four times.
        #[serde(skip_serializing_if = "Option::is_none")]
        next_call: Option<Value>,
    },
    /// The step was accepted already with this very result, and no step that depends on it
    /// is accepted: reporting it again changes nothing, so nothing is stored, and the reply
    /// names the step owed instead (`next`, `next_call` as in [`Reply::Proceed`]).
    /// Answered PROCEED each time, the 1.5B planner over llama-server sent its accepted
    /// `intent` seventeen turns running and never `clarify`: every reply was the same as the
    /// one before, and it copied its own turn again.
    Unchanged {
        step: String,
        note: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        next: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        next_call: Option<Value>,
    },
    /// Ask the user this one question and stop.
    Clarify { step: String, question: String },
    /// Fix the result and report the same step again. `expected` is the shape of the step's
    /// result (see [`super::shape`]) when the result broke its schema.
    Invalid {
        step: String,
        errors: Vec<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        expected: Option<Value>,
    },
    /// The run cannot go on here: tell the user why and stop.
    Stop { step: String, error: String },
}

impl Reply {
    pub fn action(&self) -> &'static str {
        match self {
            Reply::Proceed { .. } => "PROCEED",
            Reply::Unchanged { .. } => "UNCHANGED",
            Reply::Clarify { .. } => "CLARIFY",
            Reply::Invalid { .. } => "INVALID",
            Reply::Stop { .. } => "STOP",
        }
    }

    pub fn errors(&self) -> Vec<String> {
        match self {
            Reply::Invalid { errors, .. } => errors.clone(),
            Reply::Stop { error, .. } => vec![error.clone()],
            _ => Vec::new(),
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self)
            .unwrap_or_else(|_| format!("{{\"action\":\"{}\"}}", self.action()))
    }
}

/// Whether the reply was stored as an attempt (refusals before validation are only logged).
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub reply: Reply,
    /// The attempt number stored, or 0 when nothing was stored.
    pub attempt: u32,
    /// True when every step is now accepted: the document should be rendered.
    pub complete: bool,
}

/// Judges `result` reported for step `name` and updates `state`.
pub fn submit(
    wf: &Workflow,
    state: &mut State,
    project: &Project,
    name: &str,
    result: &Value,
) -> Outcome {
    let refuse = |reply: Reply| Outcome {
        reply,
        attempt: 0,
        complete: false,
    };
    match state.status {
        RunStatus::Open | RunStatus::Waiting => {}
        RunStatus::Done => {
            return refuse(Reply::Stop {
                step: name.into(),
                error: format!(
                    "This workflow is closed: its document was rendered to `{}`. Do not report \
                     more steps.",
                    state.document.as_deref().unwrap_or("?")
                ),
            })
        }
        RunStatus::Stopped | RunStatus::Aborted => {
            return refuse(Reply::Stop {
                step: name.into(),
                error: format!(
                    "This workflow was {}: {}. Tell the user and stop.",
                    state.status.as_str(),
                    state.reason.as_deref().unwrap_or("no reason recorded")
                ),
            })
        }
    }
    let Some(step) = wf.step(name) else {
        return refuse(Reply::Invalid {
            step: name.into(),
            expected: None,
            errors: vec![format!(
                "`{name}` is not a step of workflow `{}`; its steps are: {}",
                wf.name,
                wf.names().join(", ")
            )],
        });
    };
    if let Some(missing) = wf
        .prerequisites(name)
        .into_iter()
        .find(|p| !state.is_accepted(p))
    {
        return refuse(Reply::Stop {
            step: name.into(),
            error: format!("Missing {missing}. Run step '{missing}' first."),
        });
    }
    let (mut filled, defaults) = with_defaults(&step.schema, result);
    let mut errors = schema_errors(step, project, &filled);
    // The schema's refusal is answered with the result's shape to fill in (`expected`).
    let schema_refused = !errors.is_empty();
    let mut computed = serde_json::Map::new();
    let mut corrected = if errors.is_empty() {
        let mut notes = check::relocate(&step.checks, project, &mut filled);
        notes.extend(check::own_words(&step.checks, project, &mut filled));
        notes
    } else {
        Vec::new()
    };
    if errors.is_empty() {
        let accepted = state.accepted();
        let checked = |result: &Value| {
            let subject = Subject {
                project,
                result,
                accepted: &accepted,
            };
            check::run(&step.checks, &subject)
        };
        (errors, computed) = checked(&filled);
        // Refused, perhaps only for items that repeat others: without them, does it pass?
        if !errors.is_empty() {
            let mut fewer = filled.clone();
            let dropped = check::drop_repeated(&step.checks, project, &mut fewer);
            if !dropped.is_empty() && schema_errors(step, project, &fewer).is_empty() {
                let (e, c) = checked(&fewer);
                if e.is_empty() {
                    (errors, computed, filled) = (e, c, fewer);
                    corrected.extend(dropped);
                }
            }
        }
    }
    if errors.is_empty() {
        if let Some(reply) = unchanged(wf, state, name, &filled) {
            return refuse(reply);
        }
    }
    let result = &filled;
    let at = now();
    let record = state.record(name);
    record.attempts += 1;
    let attempt = record.attempts;
    let mut history = Attempt {
        attempt,
        at,
        action: String::new(),
        errors: Vec::new(),
        result: result.clone(),
    };
    let reply = if !errors.is_empty() {
        if record.status != StepStatus::Accepted {
            record.status = StepStatus::Invalid;
        }
        // Evidence is offered filled in from the files whenever the result is refused, a
        // schema error or a check's (see `check::offer_evidence`).
        let mut shape = super::shape::shape(&step.schema);
        super::shape::keep_given(&mut shape, result, &errors);
        let offered = check::offer_evidence(&step.checks, project, result, &mut shape);
        if offered {
            errors.push(
                "`expected` quotes lines of the files as they are now: keep those items or \
                 cite other lines the same way; a `fact` that is still `…` you write from the \
                 lines, one the runtime took from a file's own comment you may keep"
                    .to_string(),
            );
        }
        Reply::Invalid {
            step: name.into(),
            errors,
            expected: (schema_refused || offered).then_some(shape),
        }
    } else {
        let decision = step
            .decides
            .as_deref()
            .and_then(|f| result.get(f))
            .and_then(Value::as_str)
            .map(str::to_ascii_uppercase);
        match decision.as_deref() {
            Some("CLARIFY") => {
                record.status = StepStatus::Clarify;
                record.result = Some(result.clone());
                state.status = RunStatus::Waiting;
                Reply::Clarify {
                    step: name.into(),
                    question: question(step, result),
                }
            }
            Some("AMBIGUOUS") | Some("STOP") => {
                let why = step
                    .reason
                    .as_deref()
                    .and_then(|f| result.get(f))
                    .and_then(Value::as_str)
                    .unwrap_or("the request is too ambiguous to plan")
                    .to_string();
                record.status = StepStatus::Stopped;
                record.result = Some(result.clone());
                state.status = RunStatus::Stopped;
                state.reason = Some(why.clone());
                Reply::Stop {
                    step: name.into(),
                    error: why,
                }
            }
            _ => {
                let mut stored = result.clone();
                if let Value::Object(map) = &mut stored {
                    map.extend(computed.clone());
                }
                record.status = StepStatus::Accepted;
                record.result = Some(stored);
                state.status = RunStatus::Open;
                for dependent in wf.dependents(name) {
                    let r = state.record(dependent);
                    if r.status == StepStatus::Accepted {
                        r.status = StepStatus::Invalidated;
                    }
                }
                let next = next_step(wf, state).map(str::to_string);
                let next_call = next.as_deref().and_then(|n| step_call(wf, n));
                Reply::Proceed {
                    step: name.into(),
                    next,
                    document: None,
                    computed,
                    defaults,
                    corrected,
                    next_call,
                }
            }
        }
    };
    history.action = reply.action().to_string();
    history.errors = reply.errors();
    state.record(name).history.push(history);
    let complete = matches!(&reply, Reply::Proceed { next: None, .. });
    Outcome {
        reply,
        attempt,
        complete,
    }
}

/// [`Reply::Unchanged`] when `name` is accepted, `filled` (the result as it would be stored,
/// defaults and re-cited evidence in) is the result it was accepted with, and no step that
/// depends on it is accepted. A redo that would invalidate something, or one with any
/// difference, is judged as any report is.
fn unchanged(wf: &Workflow, state: &State, name: &str, filled: &Value) -> Option<Reply> {
    let record = state.steps.get(name)?;
    if record.status != StepStatus::Accepted {
        return None;
    }
    let accepted = record
        .history
        .iter()
        .rev()
        .find(|a| a.action == "PROCEED")?;
    if accepted.result != *filled || wf.dependents(name).iter().any(|d| state.is_accepted(d)) {
        return None;
    }
    let next = next_step(wf, state).map(str::to_string);
    let next_call = next.as_deref().and_then(|n| step_call(wf, n));
    let note = match &next {
        Some(n) => format!(
            "`{name}` is accepted already, with this very result: reporting it again changes \
             nothing. The step owed now is `{n}`: call `step` with `next_call` filled in."
        ),
        None => format!(
            "`{name}` is accepted already, with this very result: reporting it again changes \
             nothing."
        ),
    };
    Some(Reply::Unchanged {
        step: name.into(),
        note,
        next,
        next_call,
    })
}

/// `result` with every top-level property it leaves out (or gives as the expected shape's
/// unfilled text for it, see [`super::shape`]) that `schema` gives a `default`, and those
/// defaults. JSON Schema's `default` is only an annotation; filling it in before
/// validation is what Ajv's `useDefaults` does, and it lets a workflow say what silence means
/// (the 1.5B planner reported `clarify` with its assumptions and no `action` five times in a
/// row: in that step, no decision is PROCEED). Only objects are filled, and only at the top.
pub fn with_defaults(schema: &Value, result: &Value) -> (Value, serde_json::Map<String, Value>) {
    let mut filled = result.clone();
    let mut defaults = serde_json::Map::new();
    if let (Value::Object(map), Some(Value::Object(props))) =
        (&mut filled, schema.get("properties"))
    {
        for (key, prop) in props {
            if let Some(value) = prop.get("default") {
                // The expected shape's own text for the field (`"PROCEED | CLARIFY"`, `"…"`)
                // copied back unfilled says no more than leaving it out.
                let unfilled = map
                    .get(key)
                    .is_none_or(|given| *given == super::shape::shape(prop));
                if unfilled {
                    map.insert(key.clone(), value.clone());
                    defaults.insert(key.clone(), value.clone());
                }
            }
        }
    }
    (filled, defaults)
}

/// The schema's complaints about `result`, each with the place in the result it concerns.
pub fn schema_errors(step: &super::Step, project: &Project, result: &Value) -> Vec<String> {
    let waived = waived_fields(step, result);
    // A placeholder is reported once, as one (below): "`…` is shorter than 3 characters" beside
    // it told the 1.5B planner the same thing twice about its `fact`.
    let unfilled = super::shape::placeholders(result);
    let mut errors: Vec<String> = match step.contract.validator(project) {
        Ok(v) => {
            v.0.iter_errors(result)
                .filter(|e| !unfilled.contains(&e.instance_path().to_string()))
                .filter(|e| match e.kind() {
                    jsonschema::error::ValidationErrorKind::Required { property } => {
                        !(e.instance_path().as_str().is_empty()
                            && property.as_str().is_some_and(|p| waived.contains(&p)))
                    }
                    _ => true,
                })
                .map(|e| {
                    let at = e.instance_path().to_string();
                    if at.is_empty() {
                        e.to_string()
                    } else {
                        format!("{at}: {e}")
                    }
                })
                .collect()
        }
        Err(e) => return vec![format!("step `{}` has a broken schema: {e}", step.name)],
    };
    // A reply sent back as the result: the 1.5B planner reported `{"errors": […], "expected": …}`
    // as its `scope`. Its schema errors name only what is missing; say what was sent instead.
    let echoed: Vec<&str> = REPLY_FIELDS
        .iter()
        .copied()
        .filter(|k| result.get(k).is_some() && step.schema["properties"].get(k).is_none())
        .collect();
    if !echoed.is_empty() {
        errors.push(format!(
            "the result holds the runtime's reply ({}), not the step's own result: send the \
             fields of `expected`, filled in with what you found",
            echoed.join(", ")
        ));
    }
    // A shape sent back unfilled passes a schema that only asks for a string.
    errors.extend(unfilled.into_iter().map(|at| {
        format!(
            "{at}: still the placeholder \"{}\" of the expected shape; write the value itself",
            super::shape::PLACEHOLDER
        )
    }));
    errors
}

/// The required fields a result need not hold because it does not go on: a step that asks
/// (CLARIFY) owes its decision and its question, one that stops (AMBIGUOUS, STOP) its decision
/// and its reason; neither owes the result it could not give. The 1.5B planner answered `intent`
/// with CLARIFY and its question but no `refined_intent`, and was refused for the sentence it had
/// just said it could not write.
fn waived_fields<'a>(step: &'a super::Step, result: &Value) -> Vec<&'a str> {
    let Some(decides) = step.decides.as_deref() else {
        return Vec::new();
    };
    let decision = result
        .get(decides)
        .and_then(Value::as_str)
        .map(str::to_ascii_uppercase);
    let owed = match decision.as_deref() {
        Some("CLARIFY") => step.question.as_deref(),
        Some("AMBIGUOUS" | "STOP") => step.reason.as_deref(),
        _ => return Vec::new(),
    };
    let kept = [Some(decides), owed];
    step.schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|f| !kept.contains(&Some(*f)))
        .collect()
}

/// The fields of an INVALID or STOP reply, which no result of a step holds unless its schema
/// declares them.
const REPLY_FIELDS: [&str; 3] = ["errors", "expected", "error"];

/// The one question a CLARIFY reply carries.
fn question(step: &super::Step, result: &Value) -> String {
    let field = step.question.as_deref().unwrap_or("question");
    match result.get(field) {
        Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .find(|s| !s.trim().is_empty())
            .unwrap_or("What is missing from the request?")
            .to_string(),
        _ => "What is missing from the request?".to_string(),
    }
}

/// Why `workflow retry` cannot reopen a step.
#[derive(Debug, thiserror::Error)]
pub enum RetryError {
    #[error("`{step}` is not a step of workflow `{workflow}`; its steps are: {}", .steps.join(", "))]
    UnknownStep {
        step: String,
        workflow: String,
        steps: Vec<String>,
    },
    #[error("run `{0}` was aborted; start a new run")]
    Aborted(String),
}

/// Resets `step` and every step after it that depends on it, keeping their history: the next
/// report of `step` is taken as new. Reopens a stopped or finished run.
pub fn retry(wf: &Workflow, state: &mut State, step: &str) -> Result<(), RetryError> {
    if wf.step(step).is_none() {
        return Err(RetryError::UnknownStep {
            step: step.to_string(),
            workflow: wf.name.clone(),
            steps: wf.names().iter().map(|n| n.to_string()).collect(),
        });
    }
    if state.status == RunStatus::Aborted {
        return Err(RetryError::Aborted(state.id.clone()));
    }
    let mut names = vec![step];
    names.extend(wf.dependents(step));
    for n in names {
        let r = state.record(n);
        if r.status == StepStatus::Pending {
            continue;
        }
        r.status = if n == step {
            StepStatus::Pending
        } else {
            StepStatus::Invalidated
        };
        r.history.push(Attempt {
            attempt: r.attempts,
            at: now(),
            action: "RETRY".into(),
            errors: Vec::new(),
            result: Value::Null,
        });
    }
    state.status = RunStatus::Open;
    state.reason = None;
    Ok(())
}

/// Stops the run for good.
pub fn abort(state: &mut State, why: &str) {
    state.status = RunStatus::Aborted;
    state.reason = Some(why.to_string());
}

/// The next step to report: the first one not accepted, or `None` when all are.
pub fn next_step<'w>(wf: &'w Workflow, state: &State) -> Option<&'w str> {
    wf.names().into_iter().find(|n| !state.is_accepted(n))
}

/// The `step` call that reports step `name` of `wf`, its result the shape of that step's
/// result (see [`super::shape`]): a reply's `next_call`, and the call a note shows.
pub fn step_call(wf: &Workflow, name: &str) -> Option<Value> {
    let step = wf.step(name)?;
    Some(serde_json::json!({"name": name, "result": super::shape::shape(&step.schema)}))
}

/// The variables a template sees: every accepted result under its step's name, and the run's
/// own facts.
pub fn template_vars(state: &State) -> Value {
    let mut vars = serde_json::Map::new();
    for (k, v) in state.accepted() {
        vars.insert(k, v);
    }
    vars.insert("task".into(), Value::String(state.task.clone()));
    vars.insert("workflow_id".into(), Value::String(state.id.clone()));
    vars.insert("agent".into(), Value::String(state.agent.clone()));
    vars.insert(
        "correlation_id".into(),
        Value::String(state.correlation_id.clone()),
    );
    vars.insert(
        "today".into(),
        Value::String(state.created_at.get(..10).unwrap_or("").to_string()),
    );
    Value::Object(vars)
}

/// Variables the runtime gives every template besides the step results.
pub const RUN_VARIABLES: &[&str] = &["task", "workflow_id", "agent", "correlation_id", "today"];

/// Which of the workflow's two templates failed to render, and minijinja's reason.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("the output path template: {0}")]
    Path(#[source] minijinja::Error),
    #[error("the document template: {0}")]
    Document(#[source] minijinja::Error),
}

/// The `undated` filter: `text` without a leading `YYYY-MM-DD` date and the `-` after it.
///
/// Why: a path template that writes `{{ today }}-{{ render.slug }}` named a 1.5B model's plan
/// `2026-11-28-2026-11-28-add-since.md`, because the model, seeing dated plans, put the date in
/// its slug too. `{{ render.slug | undated }}` keeps the date the runtime adds and only that.
pub fn undated(text: String) -> String {
    let b = text.as_bytes();
    let is_date = b.len() >= 10
        && b[..10].iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            _ => c.is_ascii_digit(),
        });
    if !is_date {
        return text;
    }
    let rest = text[10..].trim_start_matches(['-', '_', ' ']);
    if rest.is_empty() {
        text
    } else {
        rest.to_string()
    }
}

/// Renders the document: its project-relative path and its text.
pub fn render(wf: &Workflow, state: &State) -> Result<(String, String), RenderError> {
    let vars = template_vars(state);
    let mut env = minijinja::Environment::new();
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    env.add_filter("undated", undated);
    let path = env
        .render_str(&wf.output.path, minijinja::value::Serde(&vars))
        .map_err(RenderError::Path)?;
    let mut text = env
        .render_str(&wf.output.template, minijinja::value::Serde(&vars))
        .map_err(RenderError::Document)?;
    if !text.ends_with('\n') {
        text.push('\n');
    }
    Ok((path.trim().to_string(), text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const TEXT: &str = "steps:\n  - name: ask\n    decides: go\n    question: q\n    schema: {type: object, required: [go]}\n  - name: do\n  - name: end\noutput: {path: \"o-{{ ask.go }}.md\", template: \"{{ do.x }}\"}\n";

    fn setup() -> (tempfile::TempDir, Project, Workflow, State) {
        setup_with(TEXT)
    }

    /// A project, the workflow `text`, and a fresh run of it.
    fn setup_with(text: &str) -> (tempfile::TempDir, Project, Workflow, State) {
        let dir = tempfile::tempdir().unwrap();
        let p = Project::open(dir.path()).unwrap();
        let wf = super::super::spec::parse("workflow/t.yaml", text).unwrap();
        let s = State::new("t", &wf, "a", "s", "c", "task");
        (dir, p, wf, s)
    }

    /// Items that repeat others are left out when the rest passes the step, with a note each;
    /// when too few would remain, the result is refused as it was.
    #[test]
    fn repeated_evidence_is_left_out_only_when_the_rest_passes() {
        let text = "steps:\n  - name: scope\n    schema:\n      type: object\n      \
                    properties:\n        evidence: {type: array, minItems: 2}\n    checks:\n      \
                    - evidence: /evidence/*\noutput: {path: o.md, template: x}\n";
        let (dir, p, wf, mut s) = setup_with(text);
        // Lines that say nothing of themselves (no comment, no declaration), so a repeated
        // fact on them has no words of the file's to take instead.
        std::fs::write(dir.path().join("a.rs"), "a();\nb();\nc();\n").unwrap();
        let item = |n: u64, fact: &str| {
            let excerpt = ["a();", "b();", "c();"][n as usize - 1];
            json!({"fact": fact, "path": "a.rs", "start": n, "end": n, "excerpt": excerpt})
        };
        let three = json!({"evidence": [item(1, "a is here"), item(2, "b is here"), item(3, "A is  here")]});
        let o = submit(&wf, &mut s, &p, "scope", &three);
        assert_eq!(o.reply.action(), "PROCEED", "{}", o.reply.to_json());
        let reply: Value = serde_json::from_str(&o.reply.to_json()).unwrap();
        assert_eq!(
            reply["corrected"],
            json!(["evidence `a.rs:3-3`: it repeats an item before it; left out"])
        );
        let stored = s.steps["scope"].result.clone().unwrap();
        assert_eq!(
            stored["evidence"],
            json!([item(1, "a is here"), item(2, "b is here")])
        );
        // Two items, one a repeat: one alone is too few, so both stay and the step is refused.
        let mut fresh = State::new("t2", &wf, "a", "s", "c", "task");
        let two = json!({"evidence": [item(1, "a is here"), item(2, "a is here")]});
        let o = submit(&wf, &mut fresh, &p, "scope", &two);
        assert_eq!(o.reply.action(), "INVALID");
        assert!(
            o.reply.errors()[0].contains("states the fact of an item before it"),
            "{:?}",
            o.reply.errors()
        );
    }

    #[test]
    fn undated_takes_a_leading_date_off_and_nothing_else() {
        assert_eq!(undated("2026-11-28-add-since".into()), "add-since");
        assert_eq!(undated("2026-11-28_add".into()), "add");
        assert_eq!(
            undated("add-since-2026-11-28".into()),
            "add-since-2026-11-28"
        );
        assert_eq!(undated("2026-1-28-add".into()), "2026-1-28-add");
        // A slug that is only a date keeps it: an empty file name is worse than a doubled date.
        assert_eq!(undated("2026-11-28".into()), "2026-11-28");
        assert_eq!(undated("é".into()), "é");
    }

    /// An accepted step sent again with its very result while no step after it is accepted
    /// changes nothing: UNCHANGED, nothing stored, the step owed named. A different result,
    /// or the same one once a step that depends on it is accepted, is judged as a redo.
    #[test]
    fn an_accepted_step_sent_again_unchanged_stores_nothing_and_names_the_step_owed() {
        let (_d, p, wf, mut s) = setup();
        let go = json!({"go": "PROCEED"});
        assert_eq!(submit(&wf, &mut s, &p, "ask", &go).attempt, 1);
        let before = s.clone();
        let o = submit(&wf, &mut s, &p, "ask", &go);
        assert_eq!((o.reply.action(), o.attempt), ("UNCHANGED", 0));
        assert_eq!(s, before, "nothing stored");
        let Reply::Unchanged {
            next, next_call, ..
        } = &o.reply
        else {
            panic!("{:?}", o.reply)
        };
        assert_eq!(next.as_deref(), Some("do"));
        assert_eq!(
            next_call.as_ref().map(|c| c["name"].clone()),
            Some(json!("do"))
        );
        assert!(o.reply.to_json().contains("`do`"), "{}", o.reply.to_json());

        let other = json!({"go": "PROCEED", "why": "more"});
        let o = submit(&wf, &mut s, &p, "ask", &other);
        assert_eq!((o.reply.action(), o.attempt), ("PROCEED", 2));
        assert_eq!(submit(&wf, &mut s, &p, "do", &json!({"x": 1})).attempt, 1);
        let o = submit(&wf, &mut s, &p, "ask", &other);
        assert_eq!((o.reply.action(), o.attempt), ("PROCEED", 3));
        assert_eq!(s.steps["do"].status, StepStatus::Invalidated);
    }

    #[test]
    fn decides_orders_and_completes() {
        let (_d, p, wf, mut s) = setup();
        let o = submit(&wf, &mut s, &p, "end", &json!({}));
        assert_eq!(o.reply.errors(), vec!["Missing ask. Run step 'ask' first."]);
        assert_eq!(o.attempt, 0);
        let o = submit(
            &wf,
            &mut s,
            &p,
            "ask",
            &json!({"go": "clarify", "q": "which?"}),
        );
        assert_eq!(
            o.reply,
            Reply::Clarify {
                step: "ask".into(),
                question: "which?".into()
            }
        );
        let o = submit(&wf, &mut s, &p, "ask", &json!({"go": "PROCEED"}));
        assert_eq!(o.reply.action(), "PROCEED");
        submit(&wf, &mut s, &p, "do", &json!({"x": 1}));
        let o = submit(&wf, &mut s, &p, "end", &json!({}));
        assert!(o.complete);
        assert_eq!(
            render(&wf, &s).unwrap(),
            ("o-PROCEED.md".into(), "1\n".into())
        );
    }

    #[test]
    fn a_left_out_field_with_a_default_is_filled_and_named_in_the_reply() {
        let text = "steps:\n  - name: ask\n    decides: go\n    question: q\n    schema: {type: object, required: [go, a], properties: {go: {enum: [PROCEED, CLARIFY], default: PROCEED}, a: {type: array}}}\n  - name: end\noutput: {path: o.md, template: \"{{ ask.go }}\"}\n";
        let (_dir, p, wf, mut s) = setup_with(text);
        // A default does not stand in for a required field without one.
        let o = submit(&wf, &mut s, &p, "ask", &json!({}));
        assert_eq!(o.reply.action(), "INVALID");
        assert!(
            o.reply.errors().iter().any(|e| e.contains("\"a\"")),
            "{:?}",
            o.reply
        );
        assert!(!o.reply.errors().iter().any(|e| e.contains("\"go\"")));
        let o = submit(&wf, &mut s, &p, "ask", &json!({"a": []}));
        let Reply::Proceed { defaults, .. } = &o.reply else {
            panic!("{:?}", o.reply)
        };
        assert_eq!(defaults.get("go"), Some(&json!("PROCEED")));
        assert!(o
            .reply
            .to_json()
            .contains("\"defaults\":{\"go\":\"PROCEED\"}"));
        // The stored result holds the default, so the template sees it.
        submit(&wf, &mut s, &p, "end", &json!({}));
        assert_eq!(render(&wf, &s).unwrap().1, "PROCEED\n");
        // A given value is never replaced.
        let (filled, d) = with_defaults(&wf.steps[0].schema, &json!({"go": "CLARIFY"}));
        assert_eq!(filled["go"], "CLARIFY");
        assert!(d.is_empty());
        // The expected shape's choice text copied back unfilled counts as left out.
        let (filled, d) = with_defaults(&wf.steps[0].schema, &json!({"go": "PROCEED | CLARIFY"}));
        assert_eq!(filled["go"], "PROCEED");
        assert_eq!(d.len(), 1);
    }

    #[test]
    fn a_step_that_asks_or_stops_owes_only_its_decision_and_its_question_or_reason() {
        let text = "steps:\n  - name: ask\n    decides: go\n    question: q\n    reason: why\n    schema: {type: object, required: [go, sentence, q], properties: {go: {enum: [PROCEED, CLARIFY, AMBIGUOUS]}, sentence: {type: string, minLength: 3}, q: {type: array, items: {type: string}}, why: {type: string}}}\n  - name: end\noutput: {path: o.md, template: x}\n";
        let (_dir, p, wf, _) = setup_with(text);
        let fresh = || State::new("t", &wf, "a", "s", "c", "task");
        let ask = |s: &mut State, result: Value| submit(&wf, s, &p, "ask", &result);
        // CLARIFY without the sentence: asked, with the first of several questions.
        let o = ask(
            &mut fresh(),
            json!({"go": "CLARIFY", "q": ["", "which file?", "why?"]}),
        );
        assert_eq!(
            o.reply,
            Reply::Clarify {
                step: "ask".into(),
                question: "which file?".into()
            }
        );
        // The question field itself is still owed, and other keywords still apply.
        let mut s = fresh();
        let o = ask(&mut s, json!({"go": "CLARIFY"}));
        assert_eq!(o.reply.action(), "INVALID", "{:?}", o.reply);
        assert!(o.reply.errors().iter().any(|e| e.contains("\"q\"")));
        let o = ask(
            &mut s,
            json!({"go": "CLARIFY", "q": ["x"], "sentence": "no"}),
        );
        assert!(o.reply.errors().iter().any(|e| e.contains("/sentence")));
        // AMBIGUOUS stops without the sentence or the question.
        let o = ask(
            &mut fresh(),
            json!({"go": "AMBIGUOUS", "why": "two commands"}),
        );
        assert_eq!(o.reply.action(), "STOP");
        assert_eq!(o.reply.errors(), vec!["two commands"]);
        // PROCEED still owes everything.
        let o = ask(&mut fresh(), json!({"go": "PROCEED", "q": []}));
        assert_eq!(o.reply.action(), "INVALID");
        assert!(o.reply.errors().iter().any(|e| e.contains("\"sentence\"")));
    }

    #[test]
    fn retry_resets_the_step_and_its_dependents_only() {
        let (_d, p, wf, mut s) = setup();
        for (n, r) in [
            ("ask", json!({"go": "PROCEED"})),
            ("do", json!({})),
            ("end", json!({})),
        ] {
            submit(&wf, &mut s, &p, n, &r);
        }
        retry(&wf, &mut s, "do").unwrap();
        assert_eq!(s.steps["ask"].status, StepStatus::Accepted);
        assert_eq!(s.steps["do"].status, StepStatus::Pending);
        assert_eq!(s.steps["end"].status, StepStatus::Invalidated);
        assert_eq!(next_step(&wf, &s), Some("do"));
        assert!(retry(&wf, &mut s, "nope").is_err());
    }
}
