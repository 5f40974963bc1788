//! The one place the runtime calls the contract checker.
//!
//! The hop loop needs three things from a check: conformant or not, the violations to log, and the
//! repair prompt to send back. Keeping the call here means the checker's API can change without
//! touching the loop.

use crate::contract::Contract;
use crate::project::Project;

use super::events::ViolationRecord;

/// A check's result, as the hop loop uses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckOutcome {
    pub conformant: bool,
    pub violations: Vec<ViolationRecord>,
    /// The message that asks the agent to fix its answer.
    pub repair_prompt: String,
}

/// Checks `text` against `contract` with the ids the runtime gave the hop.
pub fn check_answer(
    text: &str,
    contract: &Contract,
    project: &Project,
    correlation_id: &str,
    message_id: &str,
) -> CheckOutcome {
    // Minimal interim checker until the `contract` branch's `contract::check` is merged: the
    // envelope's ids and its answer block.
    let _ = (contract, project);
    let mut violations = Vec::new();
    let mut expect = |key: &str, value: &str| {
        let found = text.lines().any(|l| {
            l.strip_prefix(key)
                .and_then(|r| r.strip_prefix(':'))
                .is_some_and(|v| v.trim() == value)
        });
        if !found {
            violations.push(ViolationRecord {
                rule: format!("envelope/{key}"),
                message: format!("frontmatter must carry `{key}: {value}`"),
                line: 0,
                column: 0,
            });
        }
    };
    expect("message_id", message_id);
    expect("correlation_id", correlation_id);
    if !(text.contains("<answer>") && text.contains("</answer>")) {
        violations.push(ViolationRecord {
            rule: "envelope/answer".into(),
            message: "the message needs one <answer> block".into(),
            line: 0,
            column: 0,
        });
    }
    let repair_prompt = repair_prompt(&violations);
    CheckOutcome {
        conformant: violations.is_empty(),
        violations,
        repair_prompt,
    }
}

fn repair_prompt(violations: &[ViolationRecord]) -> String {
    let mut s = String::from(
        "Your answer does not follow the required envelope contract. Fix these problems and send \
         the whole corrected answer again:\n",
    );
    for v in violations {
        if v.line > 0 {
            s.push_str(&format!("- line {}: [{}] {}\n", v.line, v.rule, v.message));
        } else {
            s.push_str(&format!("- [{}] {}\n", v.rule, v.message));
        }
    }
    s
}
