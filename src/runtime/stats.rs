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
pub fn tally<'a>(
    events: impl IntoIterator<Item = &'a Event>,
    filter: &StatsFilter,
) -> BTreeMap<String, ContractCounts> {
    let mut out: BTreeMap<String, ContractCounts> = BTreeMap::new();
    for e in events {
        if !matches!(e.kind, EventKind::ContractOutcome { .. }) {
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
        out.entry(agent).or_default().add(&e.kind);
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

    #[test]
    fn outcomes_are_counted_per_agent_and_filtered() {
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
        ];
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
