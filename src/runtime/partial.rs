//! Tier 2 in the hop loop: when a declared budget reaches its threshold, and how a hop that
//! stops early ends PARTIAL: with a checkpoint (the agent's, validated, or one the runtime
//! writes) and its answer so far held to its contract once, without repairs, so a caller never
//! receives an unchecked answer even from a hop that ran out.
//!
//! Apart from `hop.rs` so the loop keeps to its turns, and so the threshold rule can be tested
//! without a model.

use std::time::Duration;

use super::check::check_partial;
use super::checkpoint::{self, Checkpoint};
use super::ending::Ending;
use super::events::EventKind;
use super::shared::HopCtx;
use super::status::HopStatus;
use crate::agent::Budget;
use crate::contract::Contract;
use crate::project::Project;

/// Which declared limit (tokens, turns, wall time) has reached `budget`'s threshold, said in
/// words for the checkpoint request and the hop's reason; `None` while all are below it.
pub(crate) fn over_threshold(
    budget: &Budget,
    used_tokens: u64,
    turns_used: u32,
    elapsed: Duration,
) -> Option<String> {
    let share = budget.threshold_fraction();
    let pct = (share * 100.0).round();
    if let Some(tokens) = budget.tokens {
        if used_tokens as f64 >= tokens as f64 * share {
            return Some(format!(
                "{used_tokens} of {tokens} tokens used (threshold {pct} %)"
            ));
        }
    }
    if let Some(turns) = budget.turns {
        if f64::from(turns_used) >= f64::from(turns) * share {
            return Some(format!(
                "{turns_used} of {turns} turns used (threshold {pct} %)"
            ));
        }
    }
    if let Some(wall) = budget.wall_seconds {
        let secs = elapsed.as_secs_f64();
        if secs >= wall as f64 * share {
            return Some(format!("{secs:.1} of {wall} s used (threshold {pct} %)"));
        }
    }
    None
}

/// The reason and checkpoint of a hop that answered the checkpoint request with `reply`: the
/// agent's when it validates, else the runtime's with the validation error in the reason.
pub(crate) fn from_reply(
    project: &Project,
    task: &str,
    answer: &str,
    steps: u32,
    why: &str,
    reply: &str,
) -> (String, Checkpoint) {
    match checkpoint::parse(reply, project) {
        Ok(c) => (format!("budget threshold: {why}"), c),
        Err(e) => {
            let why = format!("budget threshold: {why}; its checkpoint was not usable: {e}");
            let c = checkpoint::by_runtime(task, answer, steps, &why);
            (why, c)
        }
    }
}

/// Ends a hop PARTIAL with `answer` and `checkpoint`, checking the answer against `contract`
/// once (a `contract.checked` event) so the caller learns whether it conforms.
pub(crate) fn ending(
    ctx: &HopCtx,
    contract: Option<&Contract>,
    message_id: &str,
    answer: String,
    why: String,
    checkpoint: Checkpoint,
) -> Ending {
    let (conformant, violations) = match contract {
        Some(contract) if !answer.trim().is_empty() => {
            let shared = &ctx.shared;
            let outcome = check_partial(
                &answer,
                contract,
                &shared.project,
                &shared.correlation_id,
                message_id,
            );
            ctx.emit(EventKind::ContractChecked {
                contract: contract.name.clone(),
                message_id: message_id.to_string(),
                conformant: outcome.conformant,
                repair: 0,
                violations: outcome.violations.clone(),
            });
            (Some(outcome.conformant), outcome.violations)
        }
        // Nothing to check: an empty answer conforms to no contract.
        Some(_) => (Some(false), Vec::new()),
        None => (None, Vec::new()),
    };
    Ending {
        status: HopStatus::Partial,
        answer,
        error: Some(why),
        conformant,
        violations,
        checkpoint: Some(checkpoint),
        action: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(tokens: Option<u64>, turns: Option<u32>, wall: Option<u64>, t: Option<u8>) -> Budget {
        Budget {
            tokens,
            wall_seconds: wall,
            turns,
            threshold: t,
        }
    }

    #[test]
    fn the_default_threshold_is_sixty_percent_of_each_declared_limit() {
        let zero = Duration::ZERO;
        let b = budget(Some(1000), None, None, None);
        assert_eq!(over_threshold(&b, 599, 1, zero), None);
        let why = over_threshold(&b, 600, 1, zero).unwrap();
        assert_eq!(why, "600 of 1000 tokens used (threshold 60 %)");
        let b = budget(None, Some(10), None, None);
        assert_eq!(
            over_threshold(&b, 1_000_000, 5, zero),
            None,
            "tokens undeclared"
        );
        assert!(over_threshold(&b, 0, 6, zero)
            .unwrap()
            .starts_with("6 of 10 turns"));
        let b = budget(None, None, Some(10), None);
        assert_eq!(over_threshold(&b, 0, 0, Duration::from_secs(5)), None);
        assert!(over_threshold(&b, 0, 0, Duration::from_secs(6)).is_some());
        assert_eq!(
            over_threshold(&Budget::default(), u64::MAX, u32::MAX, zero),
            None
        );
    }

    #[test]
    fn a_declared_threshold_moves_the_trigger() {
        let b = budget(Some(1000), None, None, Some(90));
        assert_eq!(over_threshold(&b, 899, 0, Duration::ZERO), None);
        assert_eq!(
            over_threshold(&b, 900, 0, Duration::ZERO).unwrap(),
            "900 of 1000 tokens used (threshold 90 %)"
        );
    }

    #[test]
    fn an_unusable_reply_gets_a_runtime_checkpoint_and_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let p = Project::open(dir.path()).unwrap();
        let (why, c) = from_reply(&p, "task", "so far", 3, "x", "no json");
        assert!(
            why.ends_with("not usable: the reply holds no JSON object"),
            "{why}"
        );
        assert_eq!(c.source, "runtime");
        let reply = r#"{"done": ["a"], "remaining": [], "next_steps": ["b"]}"#;
        let (why, c) = from_reply(&p, "task", "so far", 3, "x", reply);
        assert_eq!(why, "budget threshold: x");
        assert_eq!(c.source, "agent");
    }
}
