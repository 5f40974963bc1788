//! The exit codes of every command, in one place. README's "Exit codes" table lists the same;
//! a new outcome (say, a session that needs input) is a new variant here and a row there.

use std::process::ExitCode;

/// How a command ended, as the process exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// 0: it ran and found nothing wrong (or the session completed).
    Clean,
    /// 1: it ran and found problems: contract violations, lint errors; a session that FAILED
    /// (a provider down after its retries, a timeout, Ctrl-C).
    Findings,
    /// 2: it could not run: bad arguments, a project, agent, session or file that is not there or
    /// cannot be read. The error was printed on stderr.
    CouldNotRun,
    /// 3: the session stopped to ask the user one question (status `needs_input`); continue it
    /// with `switchboard resume SESSION --answer "…"`.
    NeedsInput,
    /// 4: the session ended PARTIAL (a budget threshold, a context overflow, the steps limit,
    /// a marked answer) with a checkpoint; `switchboard resume SESSION` continues it.
    Partial,
    /// 5: the session is BLOCKED (fail closed): a person must act on the reason printed (a
    /// contract still violated, a refused path, a corrupt log, a missing agent). Never retried.
    Blocked,
}

impl Code {
    /// The number the process exits with.
    pub fn as_u8(self) -> u8 {
        match self {
            Code::Clean => 0,
            Code::Findings => 1,
            Code::CouldNotRun => 2,
            Code::NeedsInput => 3,
            Code::Partial => 4,
            Code::Blocked => 5,
        }
    }

    /// The exit code of a session that ended with `outcome`.
    pub fn of_outcome(outcome: crate::runtime::Outcome) -> Self {
        use crate::runtime::Outcome;
        match outcome {
            Outcome::Completed => Code::Clean,
            Outcome::Failed => Code::Findings,
            Outcome::NeedsInput => Code::NeedsInput,
            Outcome::Partial => Code::Partial,
            Outcome::Blocked => Code::Blocked,
        }
    }

    /// `Findings` when there are some, else `Clean`.
    pub fn findings_if(found: bool) -> Self {
        if found {
            Code::Findings
        } else {
            Code::Clean
        }
    }
}

impl From<Code> for ExitCode {
    fn from(code: Code) -> Self {
        ExitCode::from(code.as_u8())
    }
}

#[cfg(test)]
mod tests {
    use super::Code;

    #[test]
    fn codes_are_the_documented_numbers() {
        assert_eq!(Code::Clean.as_u8(), 0);
        assert_eq!(Code::Findings.as_u8(), 1);
        assert_eq!(Code::CouldNotRun.as_u8(), 2);
        assert_eq!(Code::NeedsInput.as_u8(), 3);
        assert_eq!(Code::Partial.as_u8(), 4);
        assert_eq!(Code::Blocked.as_u8(), 5);
        use crate::runtime::Outcome;
        let codes: std::collections::BTreeSet<u8> = Outcome::ALL
            .iter()
            .map(|o| Code::of_outcome(*o).as_u8())
            .collect();
        assert_eq!(codes.len(), 5, "each outcome has its own code: {codes:?}");
        assert_eq!(Code::of_outcome(Outcome::Completed), Code::Clean);
        assert_eq!(Code::findings_if(true), Code::Findings);
        assert_eq!(Code::findings_if(false), Code::Clean);
    }

    #[test]
    fn the_readme_table_lists_every_code() {
        let readme = include_str!("../../README.md");
        for row in ["| 0 |", "| 1 |", "| 2 |", "| 3 |", "| 4 |", "| 5 |"] {
            assert!(
                readme.contains(row),
                "README's exit code table lacks `{row}`"
            );
        }
    }
}
