//! The contract gate: the one place the runtime calls the contract checker, and the decision a
//! final answer gets from it (hand it up, send a repair turn, or give up per `on_violation`).
//!
//! The hop loop needs three things from a check: conformant or not, the violations to log, and the
//! repair prompt to send back. Keeping the call and the repair policy here means the checker's API
//! or the policy can change without touching the loop.

use crate::contract::{self, CheckContext, Contract, FileCache, OnViolation};
use crate::project::Project;

use super::events::EventKind;
use super::handoff::list_violations;
use super::status::HopStatus;
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

/// What the gate decides about a final answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Hand the answer up; `conformant` is `None` when the agent declares no contract.
    Accept { conformant: Option<bool> },
    /// Send the agent this message and let it answer again.
    Repair { prompt: String },
    /// Out of repair turns: `Failed` or `NonConformant` (per `on_violation`), with a summary.
    Reject {
        status: HopStatus,
        summary: String,
        violations: Vec<Problem>,
    },
}

/// The gate of one hop: its contract (if any), the ids answers must carry, and the repair turns
/// used so far.
pub struct Gate<'a> {
    pub contract: Option<&'a Contract>,
    pub project: &'a Project,
    pub correlation_id: &'a str,
    pub message_id: &'a str,
    pub repairs: u32,
}

impl Gate<'_> {
    /// Judges a final answer, emitting `contract.checked` (and `hop.repair` when it asks for one).
    pub fn judge(&mut self, answer: &str, emit: &dyn Fn(EventKind)) -> Verdict {
        let Some(contract) = self.contract else {
            return Verdict::Accept { conformant: None };
        };
        let outcome = check_answer(
            answer,
            contract,
            self.project,
            self.correlation_id,
            self.message_id,
        );
        emit(EventKind::ContractChecked {
            contract: contract.name.clone(),
            message_id: self.message_id.to_string(),
            conformant: outcome.conformant,
            repair: self.repairs,
            violations: outcome.violations.clone(),
        });
        if outcome.conformant {
            return Verdict::Accept {
                conformant: Some(true),
            };
        }
        if self.repairs < contract.max_repairs {
            self.repairs += 1;
            emit(EventKind::HopRepair {
                repair: self.repairs,
                violations: outcome.violations.len(),
            });
            return Verdict::Repair {
                prompt: outcome.repair_prompt,
            };
        }
        let summary = format!(
            "answer violates contract `{}` after {} repair turn(s):\n{}",
            contract.name,
            self.repairs,
            list_violations(&outcome.violations)
        );
        Verdict::Reject {
            status: match contract.on_violation {
                OnViolation::Fail => HopStatus::Failed,
                OnViolation::Mark => HopStatus::NonConformant,
            },
            summary,
            violations: outcome.violations,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    fn judge_twice_over(contract: &Contract) -> (Vec<Verdict>, Vec<&'static str>) {
        let dir = tempfile::tempdir().unwrap();
        let project = Project::open(dir.path()).unwrap();
        let mut gate = Gate {
            contract: Some(contract),
            project: &project,
            correlation_id: "c-1",
            message_id: "m-1",
            repairs: 0,
        };
        let events = RefCell::new(Vec::new());
        let emit = |k: EventKind| events.borrow_mut().push(k.name());
        let verdicts = (0..=contract.max_repairs)
            .map(|_| gate.judge("not an envelope at all", &emit))
            .collect();
        (verdicts, events.into_inner())
    }

    #[test]
    fn a_violating_answer_gets_repair_turns_then_the_on_violation_verdict() {
        let mut contract = Contract::builtin("envelope").unwrap();
        contract.max_repairs = 1;
        contract.on_violation = OnViolation::Fail;
        let (verdicts, events) = judge_twice_over(&contract);
        assert!(
            matches!(verdicts[0], Verdict::Repair { .. }),
            "{verdicts:?}"
        );
        let Verdict::Reject {
            status,
            summary,
            violations,
        } = &verdicts[1]
        else {
            panic!("{verdicts:?}");
        };
        assert_eq!(*status, HopStatus::Failed);
        assert!(!violations.is_empty());
        assert!(
            summary.starts_with("answer violates contract `envelope` after 1 repair turn(s):"),
            "{summary}"
        );
        assert_eq!(
            events,
            ["contract.checked", "hop.repair", "contract.checked"],
            "the last check asks for no repair"
        );

        contract.on_violation = OnViolation::Mark;
        let (verdicts, _) = judge_twice_over(&contract);
        assert!(
            matches!(
                verdicts[1],
                Verdict::Reject {
                    status: HopStatus::NonConformant,
                    ..
                }
            ),
            "{verdicts:?}"
        );
    }

    #[test]
    fn without_a_contract_every_answer_is_accepted_unchecked() {
        let dir = tempfile::tempdir().unwrap();
        let project = Project::open(dir.path()).unwrap();
        let mut gate = Gate {
            contract: None,
            project: &project,
            correlation_id: "c",
            message_id: "m",
            repairs: 0,
        };
        let emitted = RefCell::new(0);
        let verdict = gate.judge("anything", &|_| *emitted.borrow_mut() += 1);
        assert_eq!(verdict, Verdict::Accept { conformant: None });
        assert_eq!(
            *emitted.borrow(),
            0,
            "nothing was checked, so nothing is logged"
        );
    }
}
