//! The one place the runtime calls the contract checker.
//!
//! The hop loop needs three things from a check: conformant or not, the violations to log, and the
//! repair prompt to send back. Keeping the call here means the checker's API can change without
//! touching the loop.

use crate::contract::{self, CheckContext, Contract, FileCache};
use crate::project::Project;

use crate::problem::Problem;

/// A check's result, as the hop loop uses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckOutcome {
    pub conformant: bool,
    /// The errors, as the event log records them.
    pub violations: Vec<Problem>,
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
    // A fresh cache per check: agents may write files during a session, and a check must see
    // the project as it is when the answer arrives.
    let files = FileCache::new();
    let ctx = CheckContext::new(project, &files)
        .with_correlation_id(correlation_id)
        .with_message_id(message_id);
    let report = contract::check(text, contract, &ctx);
    CheckOutcome {
        conformant: report.is_conformant(),
        violations: report.errors().cloned().collect(),
        repair_prompt: report.repair_prompt(),
    }
}
