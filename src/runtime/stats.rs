//! Contract outcome counters, per agent, read back from event logs: how often an agent's answer
//! passed on the first try, needed repair turns (and how many), was sanitized, was replaced by
//! its fallback (by reason), failed, or asked a clarifying question. The log is the only
//! source: `switchboard stats` and `run --json` both tally `contract.outcome` events here.

use super::events::{Event, EventKind};
use super::store::SESSIONS_DIR;
use crate::project::Project;
use serde::Serialize;
use std::collections::BTreeMap;

/// One agent's counts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ContractCounts {
    /// Answers that conformed on the first check.
    pub valid_first_pass: u64,
    /// Answers that conformed after repair turns, by how many turns it took.
    pub repaired: BTreeMap<u32, u64>,
    /// Answers a sanitize rule changed (they are also counted as valid or repaired).
    pub sanitized: u64,
    /// Answers replaced by the contract's fallback, by reason (`parse`, `schema`, `conflict`).
    pub fallback: BTreeMap<String, u64>,
    /// Answers still violating after the repair turns, handed up marked non-conformant.
    pub non_conformant: u64,
    /// Answers that failed the hop.
    pub failed: u64,
    /// Conforming answers that asked the caller a clarifying question.
    pub questions: u64,
}

impl ContractCounts {
    /// Every settled answer counted once.
    pub fn total(&self) -> u64 {
        self.valid_first_pass
            + self.repaired.values().sum::<u64>()
            + self.fallback.values().sum::<u64>()
            + self.non_conformant
            + self.failed
    }

    fn add(&mut self, kind: &EventKind) {
        let EventKind::ContractOutcome {
            outcome,
            repairs,
            reason,
            sanitized,
            question,
            ..
        } = kind
        else {
            return;
        };
        match outcome.as_str() {
            "valid" => self.valid_first_pass += 1,
            "repaired" => *self.repaired.entry(*repairs).or_default() += 1,
            "fallback" => {
                let reason = reason.clone().unwrap_or_else(|| "unknown".into());
                *self.fallback.entry(reason).or_default() += 1
            }
            "non_conformant" => self.non_conformant += 1,
            _ => self.failed += 1,
        }
        if *sanitized > 0 {
            self.sanitized += 1;
        }
        if *question {
            self.questions += 1;
        }
    }
}

/// Which events to count.
#[derive(Debug, Clone, Default)]
pub struct StatsFilter {
    pub agent: Option<String>,
    /// RFC 3339 (or any prefix of it, e.g. `2026-11-23`): events at or after this time.
    pub since: Option<String>,
}

/// Counts the `contract.outcome` events of `events` per agent.
///
/// A hop whose answers a validator reviewed (`validator.verdict`) counts once, by how its
/// review ended: each answer the reviewer sent back (`revise`, or a `reject` taken as one) is
/// checked again and logs another `contract.outcome`, but it is one hop whose first answer did
/// not pass. Counted per outcome, the 1.5B thoughts-analyzer whose three answers its validator
/// rejected three times scored three answers valid on the first pass. A hop that had an answer
/// checked and ended without any settled counts as failed.
pub fn tally<'a>(
    events: impl IntoIterator<Item = &'a Event>,
    filter: &StatsFilter,
) -> BTreeMap<String, ContractCounts> {
    /// A hop's outcomes and verdicts, in log order.
    #[derive(Default)]
    struct Hop<'e> {
        agent: String,
        outcomes: Vec<&'e EventKind>,
        /// Each verdict, and how many outcomes came before it.
        verdicts: Vec<(&'e str, usize)>,
        /// Whether an answer of it was checked (`contract.checked`), and whether it ended.
        checked: bool,
        ended: bool,
    }
    let mut hops: Vec<Hop> = Vec::new();
    let mut at: BTreeMap<(String, String), usize> = BTreeMap::new();
    for e in events {
        if !matches!(
            e.kind,
            EventKind::ContractOutcome { .. }
                | EventKind::ValidatorVerdict { .. }
                | EventKind::ContractChecked { .. }
                | EventKind::HopCompleted { .. }
                | EventKind::HopFailed { .. }
        ) {
            continue;
        }
        let agent = e.agent.clone().unwrap_or_default();
        if filter.agent.as_ref().is_some_and(|a| a != &agent) {
            continue;
        }
        // Timestamps are RFC 3339 UTC with a fixed width, so text order is time order.
        if filter
            .since
            .as_ref()
            .is_some_and(|s| e.timestamp.as_str() < s.as_str())
        {
            continue;
        }
        // Events without a hop id (older logs, tests) each stand alone.
        let i = match &e.hop_id {
            Some(id) => *at.entry((agent.clone(), id.clone())).or_insert_with(|| {
                hops.push(Hop::default());
                hops.len() - 1
            }),
            None => {
                hops.push(Hop::default());
                hops.len() - 1
            }
        };
        let hop = &mut hops[i];
        hop.agent = agent;
        match &e.kind {
            EventKind::ContractChecked { .. } => hop.checked = true,
            EventKind::HopCompleted { .. } | EventKind::HopFailed { .. } => hop.ended = true,
            // An objection the runtime overruled handed the answer on: the review ended as an
            // `accept` would have.
            EventKind::ValidatorVerdict {
                verdict, overruled, ..
            } => {
                let said = if overruled.is_some() {
                    "accept"
                } else {
                    verdict.as_str()
                };
                hop.verdicts.push((said, hop.outcomes.len()))
            }
            _ => hop.outcomes.push(&e.kind),
        }
    }
    let mut out: BTreeMap<String, ContractCounts> = BTreeMap::new();
    for hop in hops {
        let counts = out.entry(hop.agent).or_default();
        // Checked, then ended with no settled answer: cut off (a budget, the clock) between a
        // check and its repair. Left out, the 1.5B pipeline planner that spent its budget
        // before a conformant answer counted as no hop at all.
        if hop.outcomes.is_empty() && hop.checked && hop.ended {
            counts.failed += 1;
            continue;
        }
        let sent_back = hop.verdicts.iter().filter(|(v, _)| *v != "accept").count();
        // Not sent back: its first settled answer, and each answer to a question it asked (the
        // user's reply is a new turn). Any other later answer is the runtime asking an accepted
        // one again (`search_first` for a file it left out, `evidence_goal` for more items);
        // counted each, the 1.5B codebase-locator's one hop stood as two first-pass answers in
        // the eval's subagent suite (2026-12-04).
        if sent_back == 0 {
            let mut after_question = true;
            for kind in hop.outcomes {
                if after_question {
                    counts.add(kind);
                }
                after_question = matches!(kind, EventKind::ContractOutcome { question: true, .. });
            }
            continue;
        }
        // Reviewed and sent back at least once: one hop, judged by its last answer's check
        // and the verdict on it.
        let Some(last) = hop.outcomes.last() else {
            continue;
        };
        let accepted = hop
            .verdicts
            .last()
            .is_some_and(|(v, n)| *v == "accept" && *n == hop.outcomes.len());
        let EventKind::ContractOutcome {
            outcome,
            sanitized,
            question,
            ..
        } = last
        else {
            continue;
        };
        let first_repairs = match hop.outcomes.first() {
            Some(EventKind::ContractOutcome { repairs, .. }) => *repairs,
            _ => 0,
        };
        match outcome.as_str() {
            "valid" | "repaired" if accepted => {
                let turns = first_repairs + sent_back as u32;
                *counts.repaired.entry(turns).or_default() += 1;
            }
            "valid" | "repaired" => counts.non_conformant += 1,
            _ => counts.add(last),
        }
        if matches!(outcome.as_str(), "valid" | "repaired") {
            counts.sanitized += u64::from(*sanitized > 0);
            counts.questions += u64::from(*question && accepted);
        }
    }
    out
}

/// Counts over every session log of the project; unreadable logs are skipped and named.
pub fn project_stats(
    project: &Project,
    filter: &StatsFilter,
) -> (BTreeMap<String, ContractCounts>, Vec<String>) {
    let dir = project.root().join(SESSIONS_DIR);
    let mut events = Vec::new();
    let mut skipped = Vec::new();
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path().join("events.jsonl");
            match super::events::read_log(&path) {
                Ok(mut e) => events.append(&mut e),
                Err(err) => skipped.push(format!("{}: {err}", path.display())),
            }
        }
    }
    (tally(&events, filter), skipped)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(agent: &str, at: &str, outcome: &str, repairs: u32, reason: Option<&str>) -> Event {
        Event {
            timestamp: at.into(),
            session_id: "s".into(),
            correlation_id: "c".into(),
            hop_id: Some("h".into()),
            parent_hop_id: None,
            agent: Some(agent.into()),
            kind: EventKind::ContractOutcome {
                contract: "plan".into(),
                outcome: outcome.into(),
                repairs,
                reason: reason.map(str::to_string),
                sanitized: u32::from(outcome == "valid"),
                question: outcome == "repaired",
            },
        }
    }

    fn on_hop(hop: &str, mut e: Event) -> Event {
        e.hop_id = Some(hop.into());
        e
    }

    fn verdict(agent: &str, hop: &str, verdict: &str) -> Event {
        Event {
            kind: EventKind::ValidatorVerdict {
                validator: "v".into(),
                verdict: verdict.into(),
                round: 1,
                feedback: String::new(),
                child_hop_id: "child".into(),
                overruled: None,
            },
            ..on_hop(
                hop,
                outcome(agent, "2026-11-20T10:00:00Z", "valid", 0, None),
            )
        }
    }

    #[test]
    fn a_reviewed_hop_counts_once_by_how_its_review_ended() {
        let at = "2026-11-20T10:00:00Z";
        // One answer checked valid, and the verdict on it.
        let round = |hop, v| {
            [
                on_hop(hop, outcome("w", at, "valid", 0, None)),
                verdict("w", hop, v),
            ]
        };
        let rounds = [
            // Accepted at once: valid on the first pass.
            ("a", "accept"),
            // Sent back once, then accepted: one hop, repaired by one turn.
            ("b", "revise"),
            ("b", "accept"),
            // Rejected three times: one hop that never passed its review.
            ("c", "reject"),
            ("c", "reject"),
            ("c", "reject"),
        ];
        let mut events: Vec<Event> = rounds.iter().flat_map(|(h, v)| round(h, v)).collect();
        // Rejected, and the objection overruled by the runtime: the answer went on at once.
        let [checked, mut overruled] = round("d", "reject");
        if let EventKind::ValidatorVerdict { overruled: o, .. } = &mut overruled.kind {
            *o = Some("the excerpt of finding 1 holds every word it objects to".into());
        }
        events.extend([checked, overruled]);
        let w = &tally(&events, &StatsFilter::default())["w"];
        assert_eq!(w.valid_first_pass, 2, "{w:?}");
        assert_eq!(w.repaired, BTreeMap::from([(1, 1)]));
        assert_eq!(w.non_conformant, 1);
        assert_eq!(w.total(), 4);
    }

    /// The runtime asking an accepted answer again (no validator involved) makes no second hop;
    /// the hop stands by its first answer. An answer after a question is a new one.
    #[test]
    fn a_hop_asked_again_by_the_runtime_counts_once_by_its_first_answer() {
        let at = "2026-11-20T10:00:00Z";
        let events = [
            on_hop("a", outcome("w", at, "valid", 0, None)),
            on_hop("a", outcome("w", at, "valid", 0, None)),
            on_hop("b", outcome("w", at, "valid", 0, None)),
            on_hop("b", outcome("w", at, "repaired", 1, None)),
        ];
        let w = &tally(&events, &StatsFilter::default())["w"];
        assert_eq!(w.valid_first_pass, 2, "{w:?}");
        assert!(w.repaired.is_empty(), "{w:?}");
        assert_eq!(w.total(), 2);
        // `outcome` marks a repaired answer as a question: the valid answer after it counts.
        let asked = [
            on_hop("q", outcome("w", at, "repaired", 1, None)),
            on_hop("q", outcome("w", at, "valid", 0, None)),
        ];
        let w = &tally(&asked, &StatsFilter::default())["w"];
        assert_eq!((w.valid_first_pass, w.questions, w.total()), (1, 1, 2));
    }

    #[test]
    fn a_hop_checked_and_ended_with_nothing_settled_counts_as_failed() {
        let base = on_hop("p", outcome("w", "2026-11-20T10:00:00Z", "valid", 0, None));
        let checked = Event {
            kind: EventKind::ContractChecked {
                contract: "c".into(),
                message_id: "m".into(),
                conformant: false,
                repair: 0,
                violations: Vec::new(),
            },
            ..base.clone()
        };
        let failed = Event {
            kind: EventKind::HopFailed {
                error: "token budget exhausted".into(),
                usage: Default::default(),
                started_at: String::new(),
                ended_at: String::new(),
                duration_us: 0,
                violations: Vec::new(),
            },
            ..base.clone()
        };
        let w = &tally(&[checked.clone(), failed], &StatsFilter::default())["w"];
        assert_eq!((w.failed, w.total()), (1, 1));
        // Still running (no end logged): not counted yet.
        assert!(tally(&[checked], &StatsFilter::default())["w"].total() == 0);
    }

    #[test]
    fn outcomes_are_counted_per_agent_and_filtered() {
        // Five hops, one settled answer each.
        let events = [
            outcome("analyst", "2026-11-20T10:00:00Z", "valid", 0, None),
            outcome("analyst", "2026-11-21T10:00:00Z", "repaired", 2, None),
            outcome(
                "analyst",
                "2026-11-22T10:00:00Z",
                "fallback",
                2,
                Some("parse"),
            ),
            outcome(
                "analyst",
                "2026-11-22T11:00:00Z",
                "fallback",
                2,
                Some("conflict"),
            ),
            outcome("other", "2026-11-22T11:00:00Z", "failed", 1, Some("schema")),
        ]
        .into_iter()
        .enumerate()
        .map(|(i, e)| on_hop(&format!("h{i}"), e))
        .collect::<Vec<_>>();
        let all = tally(&events, &StatsFilter::default());
        let a = &all["analyst"];
        assert_eq!(a.valid_first_pass, 1);
        assert_eq!(a.repaired, BTreeMap::from([(2, 1)]));
        assert_eq!(a.fallback.len(), 2);
        assert_eq!((a.sanitized, a.questions, a.total()), (1, 1, 4));
        assert_eq!(all["other"].failed, 1);
        let recent = tally(
            &events,
            &StatsFilter {
                agent: Some("analyst".into()),
                since: Some("2026-11-22".into()),
            },
        );
        assert_eq!(recent.len(), 1);
        assert_eq!(recent["analyst"].total(), 2);
    }
}
