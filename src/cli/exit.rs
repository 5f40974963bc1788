//! The exit codes of every command, in one place. README's "Exit codes" table lists the same;
//! a new outcome (say, a session that needs input) is a new variant here and a row there.

use std::process::ExitCode;

/// How a command ended, as the process exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// 0: it ran and found nothing wrong (or the session completed).
    Clean,
    /// 1: it ran and found problems: contract violations, lint errors, a session that did not
    /// complete.
    Findings,
    /// 2: it could not run: bad arguments, a project, agent, session or file that is not there or
    /// cannot be read. The error was printed on stderr.
    CouldNotRun,
    /// 3: the session stopped to ask the user one question (status `needs_input`); continue it
    /// with `switchboard resume SESSION --answer "…"`.
    NeedsInput,
}

impl Code {
    /// The number the process exits with.
    pub fn as_u8(self) -> u8 {
        match self {
            Code::Clean => 0,
            Code::Findings => 1,
            Code::CouldNotRun => 2,
            Code::NeedsInput => 3,
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
        assert_eq!(Code::findings_if(true), Code::Findings);
        assert_eq!(Code::findings_if(false), Code::Clean);
    }

    #[test]
    fn the_readme_table_lists_every_code() {
        let readme = include_str!("../../README.md");
        for row in ["| 0 |", "| 1 |", "| 2 |", "| 3 |"] {
            assert!(
                readme.contains(row),
                "README's exit code table lacks `{row}`"
            );
        }
    }
}
