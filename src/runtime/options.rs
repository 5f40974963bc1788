//! How a session runs: the knobs `switchboard run` and the library's callers set.

use std::time::Duration;

use super::events::{FsyncPolicy, Observer};

/// A hop's wall-clock limit when neither its agent (`budget.wall_seconds`) nor the caller says.
pub const DEFAULT_HOP_TIMEOUT: Duration = Duration::from_secs(600);

/// How a session runs.
#[derive(Clone)]
pub struct RunOptions {
    /// `--model`: wins over every other choice, for every hop.
    pub model: Option<String>,
    pub correlation_id: Option<String>,
    pub max_parallel: usize,
    pub max_depth: u32,
    /// Wall-clock limit of a hop whose agent sets no `budget.wall_seconds`.
    pub hop_timeout: Duration,
    pub fsync: FsyncPolicy,
    /// Sees every event as it is logged (the live view).
    pub observer: Option<Observer>,
    /// Clarifying questions the primary already asked in this session (1 after `resume
    /// --answer`): a primary may ask one, so another is a contract violation.
    pub questions_asked: u32,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            model: None,
            correlation_id: None,
            max_parallel: 8,
            max_depth: 3,
            hop_timeout: DEFAULT_HOP_TIMEOUT,
            fsync: FsyncPolicy::Background,
            observer: None,
            questions_asked: 0,
        }
    }
}
