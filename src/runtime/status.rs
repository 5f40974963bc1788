//! How hops and sessions end, as enums rather than strings.
//!
//! Each serializes to the snake_case word the event log and `--json` have always carried
//! (`completed`, `partial`, `non_conformant`, `failed`, `interrupted`), so logs written before
//! these types existed still read, and a typo in a status is a compile error instead of a log
//! nobody can resume. The two `*Progress` types add the states only a reader of a possibly
//! unfinished log sees (`running`, `incomplete`).

use serde::{Deserialize, Serialize, Serializer};
use std::fmt;

/// How a hop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
        }
    }
}

/// How a session ended: as its primary hop did, or `interrupted` (Ctrl-C), which `resume` can
/// continue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
        }
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
