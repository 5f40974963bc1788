//! The contract gate: the one place the runtime calls the contract checker, and the decision a
//! final answer gets from it (hand it up, send a repair turn, or give up per `on_violation`).
//!
//! The hop loop needs three things from a check: conformant or not, the violations to log, and the
//! repair prompt to send back. Keeping the call and the repair policy here means the checker's API
//! or the policy can change without touching the loop.

use crate::contract::{
    self, CheckContext, Contract, ContractFormat, FailureReason, FileCache, JsonCheck, OnViolation,
};
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

/// Checks `text` against `contract` with the ids the runtime gave the hop, and the prompt the
/// agent was given (`template`), whose answer template's placeholders must not come back.
pub fn check_answer(
    text: &str,
    contract: &Contract,
    project: &Project,
    ids: (&str, &str),
    template: Option<&str>,
) -> CheckOutcome {
    let (correlation_id, message_id) = ids;
    // A fresh cache per check: agents may write files during a session, and a check must see
    // the project as it is when the answer arrives.
    let files = FileCache::new();
    let mut ctx = CheckContext::new(project, &files)
        .with_correlation_id(correlation_id)
        .with_message_id(message_id);
    if let Some(template) = template {
        ctx = ctx.with_template(template);
    }
    outcome_of(&contract::check(text, contract, &ctx))
}

/// Checks a PARTIAL answer once, with no repair turns (its budget is spent): the caller still
/// never receives an unchecked answer, only one marked partial with its violations.
pub fn check_partial(
    text: &str,
    contract: &Contract,
    project: &Project,
    correlation_id: &str,
    message_id: &str,
) -> CheckOutcome {
    if contract.format == ContractFormat::Json {
        return outcome_of(&contract::check_json_detailed(text, contract, project).report);
    }
    check_answer(text, contract, project, (correlation_id, message_id), None)
}

/// Whether `changed`, a copy of the accepted `answer` that the runtime edited (a file it added),
/// breaks `contract` no more than `answer` does: the runtime's own edit goes up only then, so
/// it can never cost an answer its conformance.
pub fn holds_as_well(
    changed: &str,
    answer: &str,
    contract: &Contract,
    project: &Project,
    ids: (&str, &str),
) -> bool {
    let (correlation_id, message_id) = ids;
    let count = |text: &str| {
        check_partial(text, contract, project, correlation_id, message_id)
            .violations
            .len()
    };
    count(changed) <= count(answer)
}

/// What the gate decides about a final answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Hand the answer up; `conformant` is `None` when the agent declares no contract.
    /// `answer` replaces the model's text when a sanitize rule changed it.
    Accept {
        conformant: Option<bool>,
        answer: Option<String>,
    },
    /// Send the agent this message and let it answer again.
    Repair { prompt: String },
    /// Out of repair turns: `Failed`, `NonConformant` or `Fallback` (per `on_violation`), with a
    /// summary; `answer` is the rendered fallback for `Fallback`.
    Reject {
        status: HopStatus,
        summary: String,
        violations: Vec<Problem>,
        answer: Option<String>,
    },
}

/// The gate of one hop: its contract (if any), the ids answers must carry, and the repair turns
/// used so far.
pub struct Gate<'a> {
    pub contract: Option<&'a Contract>,
    pub project: &'a Project,
    pub correlation_id: &'a str,
    pub message_id: &'a str,
    /// The agent's rendered prompt: its answer template's placeholders must not come back.
    pub template: Option<&'a str>,
    pub repairs: u32,
    /// What a fallback template may use: `agent`, `task`.
    pub vars: serde_json::Value,
    /// The `contract.outcome` event of the last judged answer that settled the hop (valid,
    /// repaired, fallback, …); the hop loop takes and logs it after the verdict.
    pub settled: Option<EventKind>,
    /// Questions already asked in this session; a JSON answer that asks another is a violation.
    pub questions_asked: u32,
    /// The question of the last accepted answer, if it asked one.
    pub asked: Option<String>,
    /// The names of the tools the agent may call: an answer that is a call of one of them,
    /// written as text, is never put in an envelope for its repair ([`Self::enveloped`]).
    pub tools: Vec<String>,
}

/// Whose frontmatter a copy put in an envelope has ([`Gate::enveloped`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Front {
    /// The answer's own, closed.
    Own,
    /// The runtime's: the answer had none.
    Runtime,
}

/// A check's result with the JSON details the gate needs.
struct Judged {
    outcome: CheckOutcome,
    json: Option<JsonCheck>,
}

impl Gate<'_> {
    fn check(&self, answer: &str, contract: &Contract) -> Judged {
        if contract.format == ContractFormat::Json {
            let json = contract::check_json_detailed(answer, contract, self.project);
            let outcome = outcome_of(&json.report);
            return Judged {
                outcome,
                json: Some(json),
            };
        }
        Judged {
            outcome: check_answer(
                answer,
                contract,
                self.project,
                (self.correlation_id, self.message_id),
                self.template,
            ),
            json: None,
        }
    }

    /// Judges a final answer, emitting `contract.checked` (and `hop.repair` when it asks for one,
    /// `contract.outcome` when it settles).
    pub fn judge(&mut self, answer: &str, emit: &dyn Fn(EventKind)) -> Verdict {
        let Some(contract) = self.contract else {
            return Verdict::Accept {
                conformant: None,
                answer: None,
            };
        };
        // A markdown answer wrapped whole in one code fence (small models do this to every
        // answer) is judged, and handed up, without the fence: the fence carries nothing. So
        // is one that opens a fence and never closes it (`markdown::unclosed_fence`).
        let unfenced = (contract.format != ContractFormat::Json)
            .then(|| {
                crate::markdown::whole_fence(answer)
                    .or_else(|| crate::markdown::unclosed_fence(answer))
            })
            .flatten();
        let answer = unfenced.unwrap_or(answer);
        let Judged { mut outcome, json } = self.check(answer, contract);
        let question = json.as_ref().and_then(|j| j.question.clone());
        if outcome.conformant && question.is_some() && self.questions_asked > 0 {
            // One clarifying question per session: the user's answer is already in the task.
            let record = contract::Rule::JsonQuestion
                .problem(
                    0..0,
                    "a second clarifying question in one session; the user already answered \
                     one, and that answer is in your task",
                )
                .at(1, 1);
            outcome = CheckOutcome {
                conformant: false,
                repair_prompt: format!(
                    "Your answer asks the user another question, but only one is allowed per \
                     session and it was already asked and answered (see your task). Send the \
                     JSON object again with the question field empty, planning with what you \
                     know.\n\n1. [{}] {}\n",
                    record.code, record.message
                ),
                violations: vec![record],
            };
        }
        emit(EventKind::ContractChecked {
            contract: contract.name.clone(),
            message_id: self.message_id.to_string(),
            conformant: outcome.conformant,
            repair: self.repairs,
            violations: outcome.violations.clone(),
        });
        let sanitized =
            json.as_ref().map_or(0, |j| j.sanitized.len() as u32) + u32::from(unfenced.is_some());
        let repairs = self.repairs;
        let settle = |outcome: &str, reason: Option<&str>, question: bool| {
            Some(EventKind::ContractOutcome {
                contract: contract.name.clone(),
                outcome: outcome.to_string(),
                repairs,
                reason: reason.map(str::to_string),
                sanitized,
                question,
            })
        };
        // An answer the runtime edited into conformance: `repaired`, the edit counted as sanitized.
        let edited = |why: &str| {
            Some(EventKind::ContractOutcome {
                contract: contract.name.clone(),
                outcome: "repaired".into(),
                repairs,
                reason: Some(why.to_string()),
                sanitized: sanitized + 1,
                question: false,
            })
        };
        // What goes up cites exactly the lines it quotes (`contract::fix::narrow`), counted as
        // sanitized: a reviewer or caller shown `path:35-47` over two quoted lines took the
        // citation for a mistake.
        // And a claim an item repeats over lines that do not say it takes those lines' words
        // (`contract::retitle`): the evidence-validator rejected a 1.5B analysis three times
        // for one such repeat.
        // Each edit is logged as `contract.edited`.
        let narrow = |text: &str| {
            if json.is_some() {
                return None;
            }
            let narrowed = contract::fix::narrow(text, self.project);
            let base = narrowed.as_deref().unwrap_or(text);
            let retitled = contract::retitle::repeated_claims(base);
            if narrowed.is_some() || retitled.is_some() {
                emit(EventKind::ContractEdited {
                    contract: contract.name.clone(),
                    narrowed: narrowed.is_some(),
                    retitled: retitled
                        .as_ref()
                        .map_or(0, |(_, n)| u32::try_from(*n).unwrap_or(u32::MAX)),
                });
            }
            retitled.map(|(text, _)| text).or(narrowed)
        };
        if outcome.conformant {
            let narrowed = narrow(answer);
            self.settled = Some(EventKind::ContractOutcome {
                contract: contract.name.clone(),
                outcome: if self.repairs == 0 {
                    "valid"
                } else {
                    "repaired"
                }
                .to_string(),
                repairs,
                reason: None,
                sanitized: sanitized + u32::from(narrowed.is_some()),
                question: question.is_some(),
            });
            self.asked = question;
            // A sanitized answer is handed up as fixed, not as the model wrote it.
            let answer = json
                .filter(|j| !j.sanitized.is_empty())
                .and_then(|j| j.value)
                .and_then(|v| serde_json::to_string_pretty(&v).ok())
                .or(narrowed)
                .or_else(|| unfenced.map(str::to_string));
            return Verdict::Accept {
                conformant: Some(true),
                answer,
            };
        }
        // A copy with only the fixes that need no judgement made (`contract::fix`) that passes
        // whole is the answer, said so in `contract.outcome` (`reason: runtime_fix`), without a
        // repair turn: Qwen2.5-Coder-1.5B sent such an answer back byte for byte through every
        // repair that showed it the copy, at about a minute a turn.
        if json.is_none() {
            let fixed = contract::fix::apply(answer, &outcome.violations, self.project)
                .filter(|f| self.check(f, contract).outcome.conformant);
            if let Some(fixed) = fixed {
                self.settled = edited("runtime_fix");
                let fixed = narrow(&fixed).unwrap_or(fixed);
                return Verdict::Accept {
                    conformant: Some(true),
                    answer: Some(fixed),
                };
            }
        }
        if self.repairs < contract.max_repairs {
            self.repairs += 1;
            emit(EventKind::HopRepair {
                repair: self.repairs,
                violations: outcome.violations.len(),
            });
            let mut prompt = outcome.repair_prompt;
            if json.is_none() {
                match self.envelope_repair(answer, &outcome.violations, contract) {
                    Some(repair) => prompt = repair,
                    None => {
                        prompt.push_str(&self.fixed_copy(answer, &outcome.violations, contract))
                    }
                }
            }
            return Verdict::Repair { prompt };
        }
        let summary = format!(
            "answer violates contract `{}` after {} repair turn(s):\n{}",
            contract.name,
            self.repairs,
            list_violations(&outcome.violations)
        );
        let reason = json
            .as_ref()
            .and_then(|j| j.reason)
            .map(FailureReason::as_str);
        if contract.on_violation == OnViolation::DropItems && json.is_none() {
            // The `contract.checked` event above lists the problems of the items taken out;
            // the answer's last line says how many went.
            if let Some((trimmed, _)) = self.trimmed(answer, &outcome.violations, contract) {
                self.settled = edited("items_dropped");
                let trimmed = narrow(&trimmed).unwrap_or(trimmed);
                return Verdict::Accept {
                    conformant: Some(true),
                    answer: Some(trimmed),
                };
            }
        }
        let (status, answer) = match contract.on_violation {
            // Tier 3: the repairs are spent and the contract says fail, so the hop fails
            // closed (BLOCKED) and a person fixes the prompt or the contract. `drop_items`
            // comes here when taking items out left nothing that holds the contract.
            OnViolation::Fail | OnViolation::DropItems => (HopStatus::Blocked, None),
            OnViolation::Mark => (HopStatus::NonConformant, None),
            OnViolation::Fallback => match self.fallback(contract) {
                Ok(text) => (HopStatus::Fallback, Some(text)),
                Err(why) => {
                    self.settled = settle("failed", reason, false);
                    return Verdict::Reject {
                        status: HopStatus::Blocked,
                        summary: format!("{summary}\nand its fallback cannot be used: {why}"),
                        violations: outcome.violations,
                        answer: None,
                    };
                }
            },
        };
        // `stats` counts a blocked hop's contract as `failed`, as before BLOCKED existed.
        let word = match status {
            HopStatus::Blocked => "failed",
            other => other.as_str(),
        };
        self.settled = settle(word, reason, false);
        Verdict::Reject {
            status,
            summary: match (status, reason) {
                (HopStatus::Fallback, Some(r)) => format!("{r}: {summary}"),
                _ => summary,
            },
            violations: outcome.violations,
            answer,
        }
    }

    /// `answer` (with the fixes that need no judgement made first) without the items whose
    /// evidence does not verify, when that copy holds `contract` whole; with how many went.
    fn trimmed(
        &self,
        answer: &str,
        problems: &[Problem],
        contract: &Contract,
    ) -> Option<(String, usize)> {
        let fixed = contract::fix::apply(answer, problems, self.project);
        let base = fixed.as_deref().unwrap_or(answer);
        let left = match &fixed {
            Some(f) => self.check(f, contract).outcome.violations,
            None => problems.to_vec(),
        };
        let (trimmed, dropped) = contract::trim::drop_items(base, &left)?;
        self.check(&trimmed, contract)
            .outcome
            .conformant
            .then_some((trimmed, dropped))
    }

    /// The answer with the fixes that need no judgement made (`contract::fix`), offered to copy
    /// when the copy has fewer problems than the answer (a copy with none is taken at once, in
    /// [`Self::judge`]); empty otherwise.
    fn fixed_copy(&self, answer: &str, problems: &[Problem], contract: &Contract) -> String {
        let Some((fixed, left)) = self.with_fixes(answer, problems, contract) else {
            return String::new();
        };
        let left = left.violations.len();
        let fence = crate::markdown::fence_for(&fixed);
        format!(
            "\nYour answer with the fixes that could be made for you already made ({} of {} \
             problem(s) left): send it back as it stands if it says what you mean, after fixing \
             what is left.\n{fence}markdown\n{}\n{fence}\n",
            left,
            problems.len(),
            fixed.trim_end()
        )
    }

    /// `text` with the fixes that need no judgement made for `problems` (found on it), and that
    /// copy's check, when the copy has fewer problems; `None` otherwise.
    fn with_fixes(
        &self,
        text: &str,
        problems: &[Problem],
        contract: &Contract,
    ) -> Option<(String, CheckOutcome)> {
        let fixed = contract::fix::apply(text, problems, self.project)?;
        let left = self.check(&fixed, contract).outcome;
        (left.violations.len() < problems.len()).then_some((fixed, left))
    }

    /// For an answer whose envelope is swallowed or missing, the repair written from the copy
    /// the runtime can make of it (its problems, and the copy to fix), or `None`:
    ///
    /// * a frontmatter never closed, where `contract::fix` can close it, is closed. An open
    ///   frontmatter swallows the whole answer, so its one problem is all the check can report:
    ///   told only to close it, Qwen2.5-Coder-1.5B's codebase-analyzer (over llama-server) sent
    ///   the same answer back twice, which also had no `<thinking>` or `<answer>` block, and was
    ///   BLOCKED. Closed, the answer shows what else it lacks;
    /// * an answer with neither a `<thinking>` nor an `<answer>` block ([`Self::enveloped`]) is
    ///   put in one: its frontmatter (or the runtime's, when it wrote none), an empty
    ///   `<thinking>` for the model to fill, and its text as the `<answer>`. Told what an
    ///   envelope holds, the 1.5B codebase-analyzer and codebase-locator sent their plain
    ///   markdown back, and a small model copies text far better than it restructures it.
    fn envelope_repair(
        &self,
        answer: &str,
        problems: &[Problem],
        contract: &Contract,
    ) -> Option<String> {
        use contract::Rule;
        let unclosed = Rule::FrontmatterUnclosed.code();
        let closed = if problems.iter().any(|p| p.code == unclosed) {
            Some(contract::fix::apply(answer, problems, self.project)?)
        } else {
            None
        };
        let base = closed.as_deref().unwrap_or(answer);
        let wrapped = self.enveloped(base, contract);
        let (mut copy, front) = match (wrapped, &closed) {
            (Some((copy, front)), _) => (copy, Some(front)),
            (None, Some(copy)) => (copy.clone(), None),
            (None, None) => return None,
        };
        let mut left = self.check(&copy, contract).outcome;
        // The fixes that need no judgement, made in the wrapped copy too (`fixed_copy`).
        if front.is_some() {
            if let Some(fewer) = self.with_fixes(&copy, &left.violations, contract) {
                (copy, left) = fewer;
            }
        }
        let still_broken: &[&str] = if front.is_some() {
            &[unclosed, Rule::FrontmatterMissing.code(), Rule::Tags.code()]
        } else {
            &[unclosed]
        };
        if left.conformant
            || left
                .violations
                .iter()
                .any(|p| still_broken.contains(&&*p.code))
        {
            return None;
        }
        let what = match (closed.is_some(), front) {
            (true, None) => "with its frontmatter closed for you (the `---` line after its fields)",
            (true, Some(_)) => {
                "with its frontmatter closed and its text put in an `<answer>` block for you"
            }
            (false, Some(Front::Own)) => "with its text put in an `<answer>` block for you",
            (false, _) => {
                "put in an envelope for you (the frontmatter is the runtime's, your text the \
                 `<answer>`)"
            }
        };
        let thinking = if front.is_some() {
            "; write in the empty `<thinking>` block, in a sentence or two, how you found what \
             the answer says"
        } else {
            ""
        };
        let fence = crate::markdown::fence_for(&copy);
        Some(format!(
            "{}\nYour answer {what}, which is what the problems above are found in{thinking}: \
             fix them in it and send it whole.\n{fence}markdown\n{}\n{fence}\n",
            left.repair_prompt.trim_end(),
            copy.trim_end()
        ))
    }

    /// `text` put in an envelope, when it has neither a `<thinking>` nor an `<answer>` block:
    /// its own frontmatter if it opens with a closed one, else the runtime's (this hop's ids,
    /// now, the contract's first message type or `RESPONSE` when it names none), then an empty
    /// `<thinking>` block and the rest of the text as the `<answer>`; with whose frontmatter it
    /// is. `None` for a text that is not an answer to wrap: a call of one of the agent's tools
    /// written as text (at its start or as all of it), JSON objects only, or tool-call markup.
    fn enveloped(&self, text: &str, contract: &Contract) -> Option<(String, Front)> {
        const MARKUP: &[&str] = &[
            "<thinking>",
            "<answer>",
            "<tool_call>",
            "<tools>",
            "[TOOL_CALLS]",
            "<|python_tag|>",
            "<function",
        ];
        if MARKUP.iter().any(|tag| text.contains(tag)) {
            return None;
        }
        let (front, body, whose) = match crate::markdown::split_frontmatter(text) {
            Ok(fm) => (
                text[..fm.body.start].trim_end().to_string() + "\n",
                &text[fm.body],
                Front::Own,
            ),
            Err(crate::markdown::SplitError::Missing { .. }) => (
                format!(
                    "---\nmessage_id: {}\ncorrelation_id: {}\ntimestamp: {}\nmessage_type: {}\n---\n",
                    self.message_id,
                    self.correlation_id,
                    super::events::timestamp(chrono::Utc::now()),
                    contract
                        .message_types
                        .first()
                        .map_or("RESPONSE", String::as_str)
                ),
                text,
                Front::Runtime,
            ),
            Err(crate::markdown::SplitError::Unclosed { .. }) => return None,
        };
        let body = body.trim();
        if body.is_empty() || crate::model::recover::sole_objects(body).is_some() {
            return None;
        }
        let names: Vec<&str> = self.tools.iter().map(String::as_str).collect();
        let offered = crate::model::recover::Offered::names(&names);
        if crate::model::recover::recover(body, &offered, 0).is_some()
            || crate::model::recover::leading_call(body, &offered, 0).is_some()
        {
            return None;
        }
        Some((
            format!("{front}\n<thinking>\n\n</thinking>\n\n<answer>\n{body}\n</answer>\n"),
            whose,
        ))
    }

    /// The contract's fallback, rendered and checked against the contract itself.
    fn fallback(&self, contract: &Contract) -> Result<String, FallbackError> {
        let json = contract.json.as_ref().ok_or(FallbackError::NotJson)?;
        let value = json
            .render_fallback(&self.vars)?
            .ok_or(FallbackError::Undeclared)?;
        let text = serde_json::to_string_pretty(&value).map_err(FallbackError::Encode)?;
        let check = contract::check_json_detailed(&text, contract, self.project);
        if !check.report.is_conformant() {
            let problems: Vec<String> = check.report.errors().map(|v| v.message.clone()).collect();
            return Err(FallbackError::Violates(problems.join("; ")));
        }
        Ok(text)
    }
}

/// Why a contract's declared fallback cannot be handed up.
#[derive(Debug, thiserror::Error)]
enum FallbackError {
    #[error("the contract is not a JSON contract")]
    NotJson,
    #[error("the contract declares no `fallback`")]
    Undeclared,
    #[error(transparent)]
    Render(#[from] contract::SchemaError),
    #[error("it cannot be written as JSON: {0}")]
    Encode(serde_json::Error),
    #[error("it violates the contract: {0}")]
    Violates(String),
}

fn outcome_of(report: &contract::Report) -> CheckOutcome {
    CheckOutcome {
        conformant: report.is_conformant(),
        violations: report.errors().cloned().collect(),
        repair_prompt: report.repair_prompt(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    #[test]
    fn an_edit_of_the_runtimes_holds_only_if_it_breaks_nothing_more() {
        let dir = tempfile::tempdir().unwrap();
        let project = Project::open(dir.path()).unwrap();
        let contract = Contract::builtin("envelope").unwrap();
        let answer = "<thinking>\nt\n</thinking>\n\n<answer>\n## Found\n- one\n</answer>\n";
        let ids = ("c-1", "m-1");
        let added = answer.replace("- one\n", "- one\n- two (added)\n");
        assert!(holds_as_well(&added, answer, &contract, &project, ids));
        let broken = answer.replace("</answer>\n", "");
        assert!(!holds_as_well(&broken, answer, &contract, &project, ids));
    }

    /// A gate with no repairs made yet, expecting these ids.
    fn gate<'a>(
        contract: Option<&'a Contract>,
        project: &'a Project,
        correlation_id: &'a str,
        message_id: &'a str,
    ) -> Gate<'a> {
        Gate {
            contract,
            project,
            correlation_id,
            message_id,
            template: None,
            repairs: 0,
            vars: serde_json::Value::Null,
            settled: None,
            questions_asked: 0,
            asked: None,
            tools: Vec::new(),
        }
    }

    fn judge_twice_over(contract: &Contract) -> (Vec<Verdict>, Vec<&'static str>) {
        let dir = tempfile::tempdir().unwrap();
        let project = Project::open(dir.path()).unwrap();
        let mut gate = gate(Some(contract), &project, "c-1", "m-1");
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
            ..
        } = &verdicts[1]
        else {
            panic!("{verdicts:?}");
        };
        // Tier 3 since the outcome tiers: `on_violation: fail` fails closed.
        assert_eq!(*status, HopStatus::Blocked);
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
    fn a_valid_answer_goes_up_citing_exactly_the_lines_it_quotes() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("d.md"),
            "# D\nWe use serde-saphyr.\nNo more.\n",
        )
        .unwrap();
        let project = Project::open(dir.path()).unwrap();
        let contract = Contract::builtin("envelope").unwrap();
        let envelope = |reference: &str| {
            format!("---\nmessage_id: t-2026-11-25-001\ncorrelation_id: c-1\ntimestamp: 2026-11-25T01:00:00Z\nmessage_type: TEST\n---\n\n<thinking>\nt\n</thinking>\n\n<answer>\n### Decision: serde-saphyr\n- **Evidence**: `{reference}`\n- **Excerpt**:\n  ```\n  We use serde-saphyr.\n  ```\n</answer>\n")
        };
        let edits = std::cell::RefCell::new(Vec::new());
        let judge = |answer: &str| {
            let mut gate = gate(Some(&contract), &project, "c-1", "t-2026-11-25-001");
            (gate.judge(answer, &log_edits(&edits)), gate.settled)
        };
        let (verdict, settled) = judge(&envelope("d.md:1-3"));
        assert_eq!(edits.take(), [(true, 0)], "the narrowing is logged");
        let Verdict::Accept {
            conformant: Some(true),
            answer: Some(up),
        } = verdict
        else {
            panic!("{verdict:?}");
        };
        assert_eq!(up, envelope("d.md:2-2"));
        assert!(
            matches!(&settled, Some(EventKind::ContractOutcome { outcome, sanitized: 1, .. })
                if outcome == "valid"),
            "{settled:?}"
        );
        // Already exact: handed up as written.
        let (verdict, settled) = judge(&envelope("d.md:2"));
        assert!(
            matches!(
                verdict,
                Verdict::Accept {
                    conformant: Some(true),
                    answer: None
                }
            ),
            "{verdict:?}"
        );
        assert!(
            matches!(
                &settled,
                Some(EventKind::ContractOutcome { sanitized: 0, .. })
            ),
            "{settled:?}"
        );
        assert!(edits.take().is_empty(), "nothing edited, nothing logged");
    }

    /// An `emit` that keeps each `contract.edited` as (narrowed, retitled) in `edits`.
    fn log_edits(edits: &std::cell::RefCell<Vec<(bool, u32)>>) -> impl Fn(EventKind) + '_ {
        move |e| {
            if let EventKind::ContractEdited {
                narrowed, retitled, ..
            } = e
            {
                edits.borrow_mut().push((narrowed, retitled));
            }
        }
    }

    /// An item repeating an earlier item's claim over other lines goes up with those lines'
    /// words as its claim (`contract::retitle`), and the log says so: before `contract.edited`
    /// a session's reader could not tell the runtime's title from the model's.
    #[test]
    fn a_retitled_answer_goes_up_edited_and_the_edit_is_logged() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("d.md"),
            "# Paths stay inside the project root\nA symlink out of the tree is refused.\n",
        )
        .unwrap();
        let project = Project::open(dir.path()).unwrap();
        let contract = Contract::builtin("envelope").unwrap();
        let item = |title: &str, line: u32, text: &str| {
            format!("### {title}\n- **Evidence**: `d.md:{line}`\n- **Excerpt**:\n  ```\n  {text}\n  ```\n")
        };
        let claim = "Decision: paths stay inside the project root";
        let answer = format!(
            "---\nmessage_id: t-2026-11-25-001\ncorrelation_id: c-1\ntimestamp: 2026-11-25T01:00:00Z\nmessage_type: TEST\n---\n\n<thinking>\nt\n</thinking>\n\n<answer>\n{}\n{}</answer>\n",
            item(claim, 1, "# Paths stay inside the project root"),
            item(claim, 2, "A symlink out of the tree is refused."),
        );
        let edits = std::cell::RefCell::new(Vec::new());
        let mut gate = gate(Some(&contract), &project, "c-1", "t-2026-11-25-001");
        let verdict = gate.judge(&answer, &log_edits(&edits));
        let Verdict::Accept {
            conformant: Some(true),
            answer: Some(up),
        } = verdict
        else {
            panic!("{verdict:?}");
        };
        assert!(
            up.contains("### Decision: A symlink out of the tree is refused.\n"),
            "{up}"
        );
        assert_eq!(edits.take(), [(false, 1)]);
    }

    /// `drop_items`: after the repairs, an answer whose one bad item is taken out goes up with
    /// the items that verify, settled as `repaired` for `items_dropped`; with every item bad, the
    /// hop is BLOCKED as under `fail`. A locator's listed path that does not exist is such an item.
    #[test]
    fn drop_items_hands_up_what_verifies_once_the_repairs_are_spent() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("d.md"), "# D\nWe use serde-saphyr.\n").unwrap();
        let project = Project::open(dir.path()).unwrap();
        let mut contract = Contract::builtin("envelope").unwrap();
        contract.max_repairs = 1;
        contract.on_violation = OnViolation::DropItems;
        // Evidence items name their paths in references, which this does not check.
        contract.named_paths = crate::contract::spec::NamedPaths::Exist;
        std::fs::create_dir(dir.path().join("notes")).unwrap();
        std::fs::write(dir.path().join("notes/d.md"), "# D\n").unwrap();
        let item = |title: &str, excerpt: &str| {
            format!("### {title}\n- **Evidence**: `d.md:2-2`\n- **Excerpt**:\n  ```\n  {excerpt}\n  ```\n\n")
        };
        let envelope = |items: &str| {
            format!("---\nmessage_id: t-2026-11-25-001\ncorrelation_id: c-1\ntimestamp: 2026-11-25T01:00:00Z\nmessage_type: TEST\n---\n\n<thinking>\nt\n</thinking>\n\n<answer>\n{items}</answer>\n")
        };
        let good = item("Decision: serde-saphyr", "We use serde-saphyr.");
        let bad = item("Constraint: made up", "We never parse YAML at all.");
        let judge = |answer: &str| {
            let mut gate = gate(Some(&contract), &project, "c-1", "t-2026-11-25-001");
            let first = gate.judge(answer, &|_| {});
            assert!(matches!(first, Verdict::Repair { .. }), "{first:?}");
            (gate.judge(answer, &|_| {}), gate.settled)
        };
        let (verdict, settled) = judge(&envelope(&format!("{good}{bad}")));
        let Verdict::Accept {
            conformant: Some(true),
            answer: Some(kept),
        } = verdict
        else {
            panic!("{verdict:?}");
        };
        assert!(kept.contains(&good) && !kept.contains("made up"), "{kept}");
        assert!(kept.contains("took out 1 item(s)"), "{kept}");
        assert!(
            matches!(&settled, Some(EventKind::ContractOutcome { outcome, reason: Some(r), .. })
                if outcome == "repaired" && r == "items_dropped"),
            "{settled:?}"
        );
        let (verdict, _) = judge(&envelope(&bad));
        assert!(
            matches!(
                verdict,
                Verdict::Reject {
                    status: HopStatus::Blocked,
                    ..
                }
            ),
            "{verdict:?}"
        );

        // A locator's list: the invented path goes, the real one goes up.
        let listed = envelope("Suggested for analysis: `notes/d.md`, `plans/made-up.md`.\n");
        let Verdict::Accept {
            conformant: Some(true),
            answer: Some(kept),
        } = judge(&listed).0
        else {
            panic!("{listed}");
        };
        assert!(
            kept.contains("analysis: `notes/d.md`.") && !kept.contains("made-up"),
            "{kept}"
        );
        // The template's `path:<line>` left unfilled beside invented paths: the `:<line>` goes
        // (`contract::fix`), then the invented paths, and the list goes up (over llama-server
        // the 1.5B codebase-locator was BLOCKED on exactly this after both repairs).
        let template = "Add the line number (`src/<path>.rs:<line>`) when grep showed it.";
        let unfilled = envelope(
            "- `notes/d.md` — the record\n- `tests/made-up.rs` — tests\n\nStart with: `notes/d.md:<line>`\n",
        );
        let mut g = gate(Some(&contract), &project, "c-1", "t-2026-11-25-001");
        g.template = Some(template);
        assert!(matches!(
            g.judge(&unfilled, &|_| {}),
            Verdict::Repair { .. }
        ));
        let Verdict::Accept {
            conformant: Some(true),
            answer: Some(kept),
        } = g.judge(&unfilled, &|_| {})
        else {
            panic!("{unfilled}");
        };
        assert!(
            kept.contains("Start with: `notes/d.md`\n") && !kept.contains("made-up"),
            "{kept}"
        );
        let (verdict, _) = judge(&envelope("- `plans/made-up.md`\n"));
        assert!(
            matches!(
                verdict,
                Verdict::Reject {
                    status: HopStatus::Blocked,
                    ..
                }
            ),
            "{verdict:?}"
        );
    }

    /// The repair turn `answer` gets first from a gate with this hop's ids (`c-1`,
    /// `t-2026-11-25-001`) for an agent offered `tools`.
    fn first_repair(
        contract: &Contract,
        project: &Project,
        tools: &[&str],
        answer: &str,
    ) -> String {
        let mut g = gate(Some(contract), project, "c-1", "t-2026-11-25-001");
        g.tools = tools.iter().map(|t| t.to_string()).collect();
        match g.judge(answer, &|_| {}) {
            Verdict::Repair { prompt } => prompt,
            other => panic!("a repair, not {other:?}"),
        }
    }

    /// A frontmatter never closed hides everything after it from the check: the repair is
    /// written from the copy with it closed, listing what that copy lacks, and shows the copy.
    /// One that the fix cannot close (no blank line after its fields) keeps the plain repair.
    #[test]
    fn the_repair_of_an_unclosed_frontmatter_lists_what_the_closed_copy_lacks() {
        let contract = Contract::builtin("envelope").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let project = Project::open(dir.path()).unwrap();
        let fields = "---\nmessage_id: t-2026-11-25-001\ncorrelation_id: c-1\ntimestamp: 2026-11-25T01:00:00Z\nmessage_type: TEST\n";
        let open = format!("```\n{fields}\n### Overview\nThe policy retries 429s.\n");
        let prompt = first_repair(&contract, &project, &[], &open);
        assert!(
            prompt.contains("<thinking>")
                && prompt.contains("<answer>")
                && !prompt.contains("frontmatter-unclosed"),
            "{prompt}"
        );
        // Closed, the copy has no `<thinking>` or `<answer>`: its text goes in an `<answer>`.
        assert!(
            prompt.contains(&format!(
                "{fields}---\n\n<thinking>\n\n</thinking>\n\n<answer>\n### Overview"
            )),
            "the closed copy: {prompt}"
        );
        assert!(prompt.contains("envelope/thinking-empty"), "{prompt}");
        let unclosable = format!("{fields}### Overview\nThe policy retries 429s.\n");
        let prompt = first_repair(&contract, &project, &[], &unclosable);
        assert!(prompt.contains("frontmatter-unclosed"), "{prompt}");
    }

    /// An answer with no envelope at all gets a repair that shows it in one: the runtime's
    /// frontmatter (this hop's ids), an empty `<thinking>` to fill, its text as the `<answer>`,
    /// and the problems that copy has. A call written as text is not wrapped.
    #[test]
    fn the_repair_of_an_answer_without_an_envelope_shows_it_in_one() {
        let contract = Contract::builtin("envelope").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let project = Project::open(dir.path()).unwrap();
        let bare = "## Analysis\n\nThe policy retries 429s.\n";
        let prompt = first_repair(&contract, &project, &[], bare);
        assert!(
            prompt.contains("---\nmessage_id: t-2026-11-25-001\ncorrelation_id: c-1\ntimestamp: ")
                && prompt.contains(
                    "---\n\n<thinking>\n\n</thinking>\n\n<answer>\n## Analysis\n\nThe policy retries 429s.\n</answer>"
                ),
            "{prompt}"
        );
        // The copy's only problem is the empty `<thinking>`; the bare answer's are not listed.
        assert!(
            prompt.contains("envelope/thinking-empty")
                && !prompt.contains("envelope/frontmatter-missing"),
            "{prompt}"
        );
        let call = "```json\n{\"name\": \"read\", \"arguments\": {\"path\": \"a.md\"}}\n```\n";
        let prompt = first_repair(&contract, &project, &[], call);
        assert!(
            prompt.contains("envelope/frontmatter-missing") && !prompt.contains("<answer>\n{"),
            "{prompt}"
        );
        // Nor is a call of one of the agent's tools with a line of prose after it.
        let then = "```json\n{\"name\": \"read\", \"arguments\": {\"path\": \"a.md\"}}\n```\nThen I will answer from it.\n";
        let prompt = first_repair(&contract, &project, &["read"], then);
        assert!(!prompt.contains("<answer>\n```json"), "{prompt}");
        // An answer with its own closed frontmatter (CRLF, a space after `---`) keeps it.
        let own = "---\r\nmessage_id: t-2026-11-25-001\r\ncorrelation_id: c-1\r\ntimestamp: 2026-11-25T01:00:00Z\r\nmessage_type: TEST\r\n--- \r\n\r\n## Analysis\r\nThe policy retries 429s.\r\n";
        let prompt = first_repair(&contract, &project, &[], own);
        assert!(
            prompt.contains("with its text put in an `<answer>` block for you")
                && prompt.matches("correlation_id: c-1").count() == 1
                && prompt.contains("<answer>\n## Analysis"),
            "{prompt}"
        );
    }

    #[test]
    fn an_envelope_wrapped_in_one_fence_passes_first_time_and_goes_up_unwrapped() {
        let contract = Contract::builtin("envelope").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let project = Project::open(dir.path()).unwrap();
        let mut gate = gate(Some(&contract), &project, "c-1", "t-2026-11-25-001");
        let inner = "---\nmessage_id: t-2026-11-25-001\ncorrelation_id: c-1\ntimestamp: 2026-11-25T01:00:00Z\nmessage_type: TEST\n---\n\n<thinking>\nt\n</thinking>\n\n<answer>\nNothing found.\n</answer>";
        let verdict = gate.judge(&format!("```markdown\n{inner}\n```"), &|_| {});
        match verdict {
            Verdict::Accept {
                conformant: Some(true),
                answer: Some(a),
            } => assert_eq!(a, inner),
            other => panic!("{other:?}"),
        }
        assert_eq!(gate.repairs, 0);
        // A fence opened and never closed is taken off too.
        match gate.judge(&format!("```\n{inner}\n"), &|_| {}) {
            Verdict::Accept {
                conformant: Some(true),
                answer: Some(a),
            } => assert_eq!(a.trim_end(), inner),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn without_a_contract_every_answer_is_accepted_unchecked() {
        let dir = tempfile::tempdir().unwrap();
        let project = Project::open(dir.path()).unwrap();
        let mut gate = gate(None, &project, "c", "m");
        let emitted = RefCell::new(0);
        let verdict = gate.judge("anything", &|_| *emitted.borrow_mut() += 1);
        assert_eq!(
            verdict,
            Verdict::Accept {
                conformant: None,
                answer: None
            }
        );
        assert_eq!(
            *emitted.borrow(),
            0,
            "nothing was checked, so nothing is logged"
        );
    }

    fn plan_contract(on_violation: &str) -> Contract {
        let yaml = format!(
            "format: json\nname: plan\nmax_repairs: 1\non_violation: {on_violation}\n\
             schema:\n  type: object\n  required: [request_type, sources]\n  properties:\n    \
             request_type: {{enum: [STATUS, DESIGN]}}\n    sources: {{type: array}}\n\
             sanitize:\n  - {{remove: doc, from: /sources, when: {{/request_type: [STATUS]}}}}\n\
             fallback: {{request_type: DESIGN, sources: [\"{{{{ agent }}}}\"]}}\n"
        );
        let decl: contract::ContractDecl = serde_saphyr::from_str(&yaml).unwrap();
        Contract::resolve(&decl).unwrap()
    }

    fn json_gate<'a>(contract: &'a Contract, project: &'a Project) -> Gate<'a> {
        Gate {
            contract: Some(contract),
            project,
            correlation_id: "c",
            message_id: "m",
            template: None,
            repairs: 0,
            vars: serde_json::json!({"agent": "analyst"}),
            settled: None,
            questions_asked: 0,
            asked: None,
            tools: Vec::new(),
        }
    }

    fn outcome_of_event(e: &Option<EventKind>) -> (String, Option<String>, u32, u32) {
        match e {
            Some(EventKind::ContractOutcome {
                outcome,
                reason,
                repairs,
                sanitized,
                ..
            }) => (outcome.clone(), reason.clone(), *repairs, *sanitized),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_json_schema_failure_is_repaired_then_accepted() {
        let dir = tempfile::tempdir().unwrap();
        let project = Project::open(dir.path()).unwrap();
        let contract = plan_contract("fail");
        let mut gate = json_gate(&contract, &project);
        let Verdict::Repair { prompt } =
            gate.judge(r#"{"request_type": "OTHER", "sources": []}"#, &|_| {})
        else {
            panic!("expected a repair turn");
        };
        assert!(prompt.contains("/request_type"), "{prompt}");
        assert!(prompt.contains("exactly one JSON object"), "{prompt}");
        let v = gate.judge(r#"{"request_type": "DESIGN", "sources": ["doc"]}"#, &|_| {});
        assert_eq!(
            v,
            Verdict::Accept {
                conformant: Some(true),
                answer: None
            }
        );
        assert_eq!(
            outcome_of_event(&gate.settled),
            ("repaired".into(), None, 1, 0)
        );
    }

    #[test]
    fn a_parse_failure_ends_in_the_rendered_fallback() {
        let dir = tempfile::tempdir().unwrap();
        let project = Project::open(dir.path()).unwrap();
        let contract = plan_contract("fallback");
        let mut gate = json_gate(&contract, &project);
        assert!(matches!(
            gate.judge("not json", &|_| {}),
            Verdict::Repair { .. }
        ));
        let Verdict::Reject {
            status,
            answer,
            summary,
            ..
        } = gate.judge("still not json", &|_| {})
        else {
            panic!("expected the fallback");
        };
        assert_eq!(status, HopStatus::Fallback);
        assert!(summary.starts_with("parse: "), "{summary}");
        let value: serde_json::Value = serde_json::from_str(&answer.unwrap()).unwrap();
        assert_eq!(
            value,
            serde_json::json!({"request_type": "DESIGN", "sources": ["analyst"]})
        );
        assert_eq!(
            outcome_of_event(&gate.settled),
            ("fallback".into(), Some("parse".into()), 1, 0)
        );
    }

    #[test]
    fn a_sanitized_answer_is_handed_up_fixed() {
        let dir = tempfile::tempdir().unwrap();
        let project = Project::open(dir.path()).unwrap();
        let contract = plan_contract("fail");
        let mut gate = json_gate(&contract, &project);
        let Verdict::Accept {
            answer: Some(fixed),
            ..
        } = gate.judge(
            r#"{"request_type": "STATUS", "sources": ["db", "doc"]}"#,
            &|_| {},
        )
        else {
            panic!("expected a sanitized accept");
        };
        let value: serde_json::Value = serde_json::from_str(&fixed).unwrap();
        assert_eq!(value["sources"], serde_json::json!(["db"]));
        assert_eq!(
            outcome_of_event(&gate.settled),
            ("valid".into(), None, 0, 1)
        );
    }
}
