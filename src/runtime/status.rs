//! How hops and sessions end, as enums rather than strings.
//!
//! Each serializes to the snake_case word the event log and `--json` have always carried
//! (`completed`, `partial`, `non_conformant`, `failed`, `interrupted`), so logs written before
//! these types existed still read, and a typo in a status is a compile error instead of a log
//! nobody can resume. The two `*Progress` types add the states only a reader of a possibly
//! unfinished log sees (`running`, `incomplete`).
//!
//! The detailed status keeps every word old logs carry; [`Outcome`] sorts each into the five
//! outcomes a person or a script acts on (COMPLETED, PARTIAL, BLOCKED, FAILED, NEEDS_INPUT), and
//! the CLI turns an outcome into its exit code (`cli/exit.rs`). The mapping is written once, in
//! [`HopStatus::outcome`] and [`SessionStatus::outcome`], and decided in
//! `thoughts/shared/decisions/2026-11-23-outcome-tiers.md`.

use serde::{Deserialize, Serialize, Serializer};
use std::fmt;

/// How a hop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HopStatus {
    /// A final answer that passed its contract (or had none to pass).
    Completed,
    /// Budget or steps ran out; the answer is what the agent had.
    Partial,
    /// Still violating after the repair turns, handed up marked (`on_violation: mark`).
    NonConformant,
    Failed,
    /// Unusable after the repair turns; the contract's declared fallback was handed up instead
    /// (`on_violation: fallback`). The reason is in the `contract.outcome` event.
    Fallback,
    /// The primary asked the user a clarifying question (its contract's `question` field); the
    /// question is the hop's `error` text, and `resume --answer` continues the session.
    NeedsInput,
    /// Fail closed (tier 3): a contract still violated after the repairs with `on_violation:
    /// fail`, a refused path, an agent or model that cannot be used. A person must act; nothing
    /// retries it. The reason and the action are in the `hop.blocked` event.
    Blocked,
}

impl HopStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            HopStatus::Completed => "completed",
            HopStatus::Partial => "partial",
            HopStatus::NonConformant => "non_conformant",
            HopStatus::Failed => "failed",
            HopStatus::Fallback => "fallback",
            HopStatus::NeedsInput => "needs_input",
            HopStatus::Blocked => "blocked",
        }
    }

    /// Which of the five outcomes this status is.
    pub fn outcome(self) -> Outcome {
        SessionStatus::from(self).outcome()
    }
}

/// How a session ended: as its primary hop did, or `interrupted` (Ctrl-C), which `resume` can
/// continue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SessionStatus {
    Completed,
    Partial,
    NonConformant,
    Failed,
    Interrupted,
    /// The primary's answer was replaced by its contract's fallback.
    Fallback,
    /// The primary asked the user one question; `resume SESSION --answer "…"` continues.
    NeedsInput,
    /// The primary hop ended BLOCKED, or the session could not go on without a person.
    Blocked,
}

impl SessionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            SessionStatus::Completed => "completed",
            SessionStatus::Partial => "partial",
            SessionStatus::NonConformant => "non_conformant",
            SessionStatus::Failed => "failed",
            SessionStatus::Interrupted => "interrupted",
            SessionStatus::Fallback => "fallback",
            SessionStatus::NeedsInput => "needs_input",
            SessionStatus::Blocked => "blocked",
        }
    }

    /// Which of the five outcomes this status is:
    /// - `completed` and `fallback` are COMPLETED: a fallback is the answer the contract itself
    ///   declares for an unusable one, checked against the contract like any answer;
    /// - `partial` and `non_conformant` are PARTIAL: there is an answer, but not a whole checked
    ///   one (a marked answer is evidence of nothing);
    /// - `failed` and `interrupted` are FAILED: no answer, for a reason a second run may not
    ///   share (a provider down, a timeout, Ctrl-C);
    /// - `blocked` is BLOCKED, `needs_input` NEEDS_INPUT.
    pub fn outcome(self) -> Outcome {
        match self {
            SessionStatus::Completed | SessionStatus::Fallback => Outcome::Completed,
            SessionStatus::Partial | SessionStatus::NonConformant => Outcome::Partial,
            SessionStatus::Failed | SessionStatus::Interrupted => Outcome::Failed,
            SessionStatus::Blocked => Outcome::Blocked,
            SessionStatus::NeedsInput => Outcome::NeedsInput,
        }
    }
}

/// The five ways a hop or a session ends, as a person or a script acts on them. Serialized in
/// capitals (`"PARTIAL"`), as RESULTS.md and `--json` write them.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Outcome {
    /// The work is done and its answer passed its contract (or the contract's fallback stood in).
    Completed,
    /// Stopped early with what it had: a budget threshold, a context overflow, the steps limit,
    /// or an answer handed up marked non-conformant. `resume` continues it.
    Partial,
    /// Fail closed: a person must act (the reason says what); never retried automatically.
    Blocked,
    /// No answer: the provider failed after its retries, a timeout, Ctrl-C.
    Failed,
    /// The primary asked the user one question; `resume --answer` continues.
    NeedsInput,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Completed => "COMPLETED",
            Outcome::Partial => "PARTIAL",
            Outcome::Blocked => "BLOCKED",
            Outcome::Failed => "FAILED",
            Outcome::NeedsInput => "NEEDS_INPUT",
        }
    }

    /// Every outcome, in the order the docs list them.
    pub const ALL: [Outcome; 5] = [
        Outcome::Completed,
        Outcome::Partial,
        Outcome::Blocked,
        Outcome::Failed,
        Outcome::NeedsInput,
    ];
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl From<HopStatus> for SessionStatus {
    /// A session ends as its primary hop did.
    fn from(s: HopStatus) -> Self {
        match s {
            HopStatus::Completed => SessionStatus::Completed,
            HopStatus::Partial => SessionStatus::Partial,
            HopStatus::NonConformant => SessionStatus::NonConformant,
            HopStatus::Failed => SessionStatus::Failed,
            HopStatus::Fallback => SessionStatus::Fallback,
            HopStatus::NeedsInput => SessionStatus::NeedsInput,
            HopStatus::Blocked => SessionStatus::Blocked,
        }
    }
}

/// A hop as a log that may still be growing tells it: no end logged yet, or ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HopProgress {
    Running,
    Ended(HopStatus),
}

impl HopProgress {
    pub fn as_str(self) -> &'static str {
        match self {
            HopProgress::Running => "running",
            HopProgress::Ended(s) => s.as_str(),
        }
    }
}

/// A session as its log tells it: `incomplete` until `session.completed` is logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionProgress {
    Incomplete,
    Ended(SessionStatus),
}

impl SessionProgress {
    pub fn as_str(self) -> &'static str {
        match self {
            SessionProgress::Incomplete => "incomplete",
            SessionProgress::Ended(s) => s.as_str(),
        }
    }
}

/// `Display` pads (`{:<12}` in tables), `Serialize` writes the bare word, and comparing with a
/// string compares the word, for every status type.
macro_rules! as_word {
    ($($t:ty),*) => {$(
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.pad(self.as_str())
            }
        }
        impl PartialEq<str> for $t {
            fn eq(&self, other: &str) -> bool {
                self.as_str() == other
            }
        }
        impl PartialEq<&str> for $t {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }
    )*};
}
as_word!(HopStatus, SessionStatus, HopProgress, SessionProgress);

impl Serialize for HopProgress {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl Serialize for SessionProgress {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_serializes_to_its_word_and_back() {
        for s in [
            SessionStatus::Completed,
            SessionStatus::Partial,
            SessionStatus::NonConformant,
            SessionStatus::Failed,
            SessionStatus::Interrupted,
            SessionStatus::Fallback,
            SessionStatus::NeedsInput,
            SessionStatus::Blocked,
        ] {
            let json = serde_json::to_string(&s).unwrap();
            assert_eq!(json, format!("\"{}\"", s.as_str()));
            assert_eq!(serde_json::from_str::<SessionStatus>(&json).unwrap(), s);
        }
        for h in [
            HopStatus::Completed,
            HopStatus::Partial,
            HopStatus::NonConformant,
            HopStatus::Failed,
            HopStatus::Fallback,
            HopStatus::NeedsInput,
            HopStatus::Blocked,
        ] {
            let json = serde_json::to_string(&h).unwrap();
            assert_eq!(serde_json::from_str::<HopStatus>(&json).unwrap(), h);
            assert_eq!(SessionStatus::from(h).as_str(), h.as_str());
            assert_eq!(
                serde_json::to_string(&HopProgress::Ended(h)).unwrap(),
                json,
                "an ended hop in a trace reads as in the log"
            );
        }
        assert_eq!(
            serde_json::to_string(&HopProgress::Running).unwrap(),
            "\"running\""
        );
        assert_eq!(
            serde_json::to_string(&SessionProgress::Incomplete).unwrap(),
            "\"incomplete\""
        );
        assert!(serde_json::from_str::<SessionStatus>("\"done\"").is_err());
    }

    #[test]
    fn every_status_has_exactly_one_outcome_and_every_outcome_a_status() {
        use std::collections::BTreeSet;
        let statuses = [
            SessionStatus::Completed,
            SessionStatus::Partial,
            SessionStatus::NonConformant,
            SessionStatus::Failed,
            SessionStatus::Interrupted,
            SessionStatus::Fallback,
            SessionStatus::NeedsInput,
            SessionStatus::Blocked,
        ];
        let reached: BTreeSet<Outcome> = statuses.iter().map(|s| s.outcome()).collect();
        assert_eq!(reached.len(), Outcome::ALL.len(), "{reached:?}");
        assert_eq!(SessionStatus::Fallback.outcome(), Outcome::Completed);
        assert_eq!(SessionStatus::NonConformant.outcome(), Outcome::Partial);
        assert_eq!(SessionStatus::Interrupted.outcome(), Outcome::Failed);
        assert_eq!(HopStatus::Blocked.outcome(), Outcome::Blocked);
        assert_eq!(
            serde_json::to_string(&Outcome::NeedsInput).unwrap(),
            "\"NEEDS_INPUT\""
        );
    }

    #[test]
    fn display_pads_like_a_string_and_compares_with_one() {
        assert_eq!(format!("{:<12}|", SessionStatus::Failed), "failed      |");
        assert_eq!(
            format!("{:<12}|", SessionProgress::Incomplete),
            "incomplete  |"
        );
        assert_eq!(SessionStatus::NonConformant, "non_conformant");
        assert!(HopStatus::Partial != "completed");
    }
}
