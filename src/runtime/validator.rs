//! Worker/validator pairs: an agent that declares `validator: <agent>` has each answer that
//! passed its contract reviewed by that agent before its caller sees it.
//!
//! The validator gets the worker's task and answer (joined by [`VALIDATION_MARK`]) and answers
//! with a verdict, JSON validated like every other runtime-read JSON:
//! `{"verdict": "accept" | "revise" | "reject", "feedback": "…"}`.
//!
//! - `accept`: the answer goes to the caller;
//! - `revise`: the feedback goes back to the worker as a private message (its caller never sees
//!   it) and the worker answers again, at most as many times as its repair turns;
//! - `reject`, a validator that gives no usable verdict, or revisions that never end: the worker's
//!   hop is BLOCKED (tier 3), with the feedback as the reason.
//!
//! The hop loop runs the validator's hop (it owns `run_hop` and the semaphore permit); this
//! module builds its request and judges its result, so neither imports the other back.

use serde::Deserialize;
use serde_json::json;

use super::handoff::{HopRequest, HopResult, ParentLink};
use super::status::HopStatus;
use crate::contract::{schema::compile, SchemaSource};
use crate::model::VALIDATION_MARK;
use crate::project::Project;

/// What the hop loop does after a review.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Review {
    Accept,
    /// Send this message to the worker and let it answer again.
    Revise(String),
    /// Fail closed: the reason and what a person must do.
    Block {
        reason: String,
        action: String,
    },
}

/// One verdict as the validator wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Verdict {
    pub verdict: String,
    #[serde(default)]
    pub feedback: String,
}

/// The schema a verdict must satisfy.
pub fn verdict_schema() -> serde_json::Value {
    json!({
        "type": "object",
        "required": ["verdict"],
        "properties": {
            "verdict": {"enum": ["accept", "revise", "reject"]},
            "feedback": {"type": "string"}
        },
        "additionalProperties": false,
        "if": {"properties": {"verdict": {"enum": ["revise", "reject"]}}},
        "then": {"required": ["feedback"], "properties": {"feedback": {"minLength": 1}}}
    })
}

/// Why a validator's answer gives no usable verdict. The hop loop quotes it in the worker's
/// BLOCKED reason, so each message says what was wrong with the answer.
#[derive(Debug, thiserror::Error)]
pub enum VerdictError {
    #[error("its answer holds no JSON object")]
    NoObject,
    #[error("not JSON: {0}")]
    NotJson(#[source] serde_json::Error),
    /// The built-in verdict schema did not compile (a defect of ours, not the validator's).
    #[error(transparent)]
    Schema(#[from] crate::contract::schema::SchemaError),
    #[error("the verdict breaks its schema: {}", .0.join("; "))]
    BreaksSchema(Vec<String>),
    #[error("{0}")]
    Shape(#[source] serde_json::Error),
}

/// Reads a verdict out of the validator's answer (a JSON object, possibly with prose around).
pub fn parse_verdict(text: &str, project: &Project) -> Result<Verdict, VerdictError> {
    let (start, end) = match (text.find('{'), text.rfind('}')) {
        (Some(s), Some(e)) if s < e => (s, e),
        _ => return Err(VerdictError::NoObject),
    };
    let value: serde_json::Value =
        serde_json::from_str(&text[start..=end]).map_err(VerdictError::NotJson)?;
    let validator = compile(&SchemaSource::Inline(verdict_schema()), project)?;
    let problems: Vec<String> = validator
        .iter_errors(&value)
        .map(|e| e.to_string())
        .collect();
    if !problems.is_empty() {
        return Err(VerdictError::BreaksSchema(problems));
    }
    serde_json::from_value(value).map_err(VerdictError::Shape)
}

/// The validator's hop: a child of the worker's, on the worker's task and answer.
pub(crate) fn request(
    validator: &str,
    worker: &HopRequest,
    worker_agent: &str,
    worker_hop_id: &str,
    model_spec: &str,
    answer: &str,
) -> HopRequest {
    let mut chain = worker.chain.clone();
    chain.push(worker_agent.to_string());
    HopRequest {
        agent: validator.to_string(),
        prompt: format!("{}{VALIDATION_MARK}{}", worker.prompt, answer),
        description: format!("review the answer of `{worker_agent}`"),
        parent: Some(ParentLink {
            hop_id: worker_hop_id.to_string(),
            agent: worker_agent.to_string(),
            model: model_spec.to_string(),
        }),
        depth: worker.depth + 1,
        chain,
        hop_id: None,
    }
}

/// Judges the validator's hop: `round` is this review's number (1-based), `max_rounds` the
/// worker's repair turns. Returns the review and the verdict word for the event log.
pub(crate) fn judge(
    result: &HopResult,
    project: &Project,
    round: u32,
    max_rounds: u32,
) -> (Review, Option<Verdict>) {
    let who = &result.agent;
    let fix = format!(
        "make validator `{who}` answer with {{\"verdict\": \"accept\"|\"revise\"|\"reject\", \
         \"feedback\": \"…\"}} (its prompt or model), then run the worker again"
    );
    if result.status != HopStatus::Completed {
        let why = result
            .error
            .clone()
            .unwrap_or_else(|| result.status.to_string());
        return (
            Review::Block {
                reason: format!(
                    "validator `{who}` gave no verdict ({}): {why}",
                    result.status
                ),
                action: fix,
            },
            None,
        );
    }
    let verdict = match parse_verdict(&result.answer, project) {
        Ok(v) => v,
        Err(e) => {
            return (
                Review::Block {
                    reason: format!("validator `{who}` gave no usable verdict: {e}"),
                    action: fix,
                },
                None,
            )
        }
    };
    let review = match verdict.verdict.as_str() {
        "accept" => Review::Accept,
        "revise" if round <= max_rounds => Review::Revise(format!(
            "A reviewer read your answer and asks for a revision (round {round} of \
             {max_rounds}):\n{}\n\nAnswer again, in full, in the same format.",
            verdict.feedback
        )),
        "revise" => Review::Block {
            reason: format!(
                "validator `{who}` still asks for revisions after {max_rounds} round(s): {}",
                verdict.feedback
            ),
            action: "read the feedback; narrow the task or improve the worker's prompt, then \
                     run it again"
                .into(),
        },
        _ => Review::Block {
            reason: format!(
                "validator `{who}` rejected the answer: {}",
                verdict.feedback
            ),
            action: "read the feedback; fix the task or the worker's prompt, then run it again"
                .into(),
        },
    };
    (review, Some(verdict))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Usage;

    fn result(status: HopStatus, answer: &str) -> HopResult {
        HopResult {
            hop_id: "h".into(),
            agent: "checker".into(),
            message_id: "m".into(),
            status,
            answer: answer.into(),
            error: None,
            usage: Usage::default(),
            violations: Vec::new(),
            written: Vec::new(),
            reused: false,
            checkpoint: None,
        }
    }

    fn project() -> (tempfile::TempDir, Project) {
        let d = tempfile::tempdir().unwrap();
        let p = Project::open(d.path()).unwrap();
        (d, p)
    }

    #[test]
    fn each_verdict_maps_to_its_review() {
        let (_d, p) = project();
        let ok = result(HopStatus::Completed, r#"{"verdict": "accept"}"#);
        assert_eq!(judge(&ok, &p, 1, 2).0, Review::Accept);
        let revise = result(
            HopStatus::Completed,
            r#"Here: {"verdict": "revise", "feedback": "cite line 4"}"#,
        );
        let Review::Revise(msg) = judge(&revise, &p, 2, 2).0 else {
            panic!()
        };
        assert!(
            msg.contains("cite line 4") && msg.contains("round 2 of 2"),
            "{msg}"
        );
        let Review::Block { reason, .. } = judge(&revise, &p, 3, 2).0 else {
            panic!()
        };
        assert!(reason.contains("after 2 round(s): cite line 4"), "{reason}");
        let reject = result(
            HopStatus::Completed,
            r#"{"verdict": "reject", "feedback": "invented"}"#,
        );
        let Review::Block { reason, .. } = judge(&reject, &p, 1, 2).0 else {
            panic!()
        };
        assert_eq!(reason, "validator `checker` rejected the answer: invented");
    }

    #[test]
    fn a_verdict_that_breaks_its_schema_or_a_failed_validator_blocks() {
        let (_d, p) = project();
        for bad in [
            r#"{"verdict": "maybe"}"#,
            r#"{"verdict": "reject"}"#,
            "looks fine to me",
        ] {
            let (review, verdict) = judge(&result(HopStatus::Completed, bad), &p, 1, 2);
            assert!(matches!(review, Review::Block { .. }), "{bad}");
            assert!(verdict.is_none());
        }
        let (review, _) = judge(&result(HopStatus::Failed, ""), &p, 1, 2);
        let Review::Block { reason, action } = review else {
            panic!()
        };
        assert!(reason.contains("gave no verdict (failed)"), "{reason}");
        assert!(action.contains("\"verdict\""), "{action}");
    }
}
