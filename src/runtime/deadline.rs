//! When a hop's wall-clock limit runs out, and how much of it the hop keeps for its own answer.
//!
//! A child can never outlive its caller: when the caller's limit ends, the caller's loop is
//! dropped and the child with it. Before this module a child ran to its own limit regardless, so
//! a caller whose child ran long was cut off while it waited, with the verified answers of its
//! other children in hand and no turn left to use them: the 1.5B researcher's session on the
//! retry question waited 33 minutes for a thoughts-analyzer whose validator rejected it twice, and
//! ended at its 3,000 s limit without a report although the code analysis had verified three
//! items half an hour earlier (BENCHMARKS.md, "Thirtieth session", t1).
//!
//! So each hop's limit is the earlier of its own (`budget.wall_seconds`, else `--hop-timeout`)
//! and what its caller has left less the caller's *reserve*, a fifth of the caller's own limit.
//! In its own reserve a hop's turns are offered no tools (`HopState::run`): a child started then
//! would get no time, and the turn that is left is for the answer.
//!
//! A validator is the one child that may run into its worker's reserve (`HopState::review`): its
//! review is part of the worker's answer, and an answer given in the reserve would otherwise never
//! be judged.
//!
//! Deadlines are known within one process (the embedded runtime): a hop run by a durable backend's
//! worker whose caller ran elsewhere keeps its own limit.

use std::time::{Duration, Instant};

/// The share of a hop's wall-clock limit kept for its own last turn: its children must end by
/// the time only this much is left. A fifth: the 1.5B researcher's report turn after its
/// children took 2–4 minutes of its 50 (BENCHMARKS.md, "Thirtieth session").
pub const RESERVE_SHARE: f64 = 0.2;

/// A running hop's limit: the instant it runs out and the part of it kept for the hop's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadline {
    pub at: Instant,
    pub reserve: Duration,
}

impl Deadline {
    /// Whether a turn starting `now` falls in the reserve: what is left of it, when so.
    pub fn in_reserve(&self, now: Instant) -> Option<Duration> {
        let left = self.at.saturating_duration_since(now);
        (left <= self.reserve).then_some(left)
    }
}

/// A hop's limit as set when it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    /// How long the hop may run from `now`.
    pub wall: Duration,
    /// Whether the caller's deadline, not the hop's own limit, set `wall`: its timeout says so.
    pub by_caller: bool,
    pub deadline: Deadline,
}

/// The limit of a hop starting `now` whose own limit is `own`, called by a hop whose deadline
/// is `caller` (`None` for the primary, or a caller this process does not know).
pub fn for_hop(own: Duration, caller: Option<Deadline>, now: Instant) -> Limit {
    let left = caller.map(|c| {
        c.at.saturating_duration_since(now)
            .saturating_sub(c.reserve)
    });
    let (wall, by_caller) = match left {
        Some(left) if left < own => (left, true),
        _ => (own, false),
    };
    Limit {
        wall,
        by_caller,
        deadline: Deadline {
            at: now + wall,
            reserve: wall.mul_f64(RESERVE_SHARE),
        },
    }
}

/// What a hop that ran out of time ends with, in words: whose limit it was.
pub fn timed_out(limit: &Limit, caller: Option<&str>) -> String {
    match (limit.by_caller, caller) {
        (true, Some(caller)) => format!(
            "timed out after {:.1} s (the wall-clock limit of its caller `{caller}`, less the \
             part `{caller}` keeps for its answer)",
            limit.wall.as_secs_f64()
        ),
        _ => format!(
            "timed out after {} s (wall-clock limit)",
            limit.wall.as_secs_f64()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(non_snake_case)]
    fn S(secs: u64) -> Duration {
        Duration::from_secs(secs)
    }

    #[test]
    fn a_primary_keeps_its_own_limit_and_a_fifth_of_it_as_reserve() {
        let now = Instant::now();
        let limit = for_hop(S(3000), None, now);
        assert_eq!(limit.wall, S(3000));
        assert!(!limit.by_caller);
        assert_eq!(limit.deadline.at, now + S(3000));
        assert_eq!(limit.deadline.reserve, S(600));
    }

    #[test]
    fn a_child_ends_before_its_caller_reserve_begins() {
        let start = Instant::now();
        let caller = for_hop(S(3000), None, start).deadline;
        // Started 1,000 s into its caller's 3,000: 2,000 s left, 600 of them kept.
        let child = for_hop(S(3000), Some(caller), start + S(1000));
        assert_eq!(child.wall, S(1400));
        assert!(child.by_caller);
        assert_eq!(child.deadline.at, caller.at - caller.reserve);
        assert_eq!(child.deadline.reserve, S(280));
        // A grandchild is held to the child's deadline the same way.
        let grandchild = for_hop(S(3000), Some(child.deadline), start + S(1000));
        assert_eq!(grandchild.wall, S(1120));
    }

    #[test]
    fn a_child_whose_own_limit_is_shorter_keeps_it() {
        let start = Instant::now();
        let caller = for_hop(S(600), None, start).deadline;
        let child = for_hop(S(1), Some(caller), start);
        assert_eq!(child.wall, S(1));
        assert!(!child.by_caller);
        assert_eq!(
            timed_out(&child, Some("researcher")),
            "timed out after 1 s (wall-clock limit)"
        );
    }

    #[test]
    fn a_child_started_in_its_caller_reserve_gets_no_time() {
        let start = Instant::now();
        let caller = for_hop(S(100), None, start).deadline;
        let child = for_hop(S(100), Some(caller), start + S(90));
        assert_eq!(child.wall, Duration::ZERO);
        assert!(child.by_caller);
        assert_eq!(
            timed_out(&child, Some("researcher")),
            "timed out after 0.0 s (the wall-clock limit of its caller `researcher`, less the \
             part `researcher` keeps for its answer)"
        );
    }

    #[test]
    fn the_reserve_is_the_last_fifth_of_the_limit() {
        let start = Instant::now();
        let d = for_hop(S(100), None, start).deadline;
        assert_eq!(d.in_reserve(start), None);
        assert_eq!(d.in_reserve(start + S(79)), None);
        assert_eq!(d.in_reserve(start + S(80)), Some(S(20)));
        assert_eq!(d.in_reserve(start + S(150)), Some(Duration::ZERO));
    }
}
