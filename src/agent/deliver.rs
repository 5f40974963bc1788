//! `deliver:` — what an agent owes besides its answer: a file it must write, and how much of that
//! file's evidence must verify.
//!
//! A primary's job is a document (the researcher's report, the planner's rendered plan), not
//! the chat reply. A small model readily ends with a fluent answer, or with a delegation written
//! as text, and nothing on disk; without a declaration the runtime would call that COMPLETED.
//! The runtime holds the agent to this at its final answer (`runtime::deliver`): repair turns that
//! say what is missing, then PARTIAL.

use serde::{Deserialize, Serialize};

/// As written in frontmatter: `deliver: {write: "thoughts/shared/research/*.md", evidence: 3}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeliverDecl {
    /// A glob, relative to the project root, that the written file's path must match.
    pub write: String,
    /// Evidence items of that file that must verify (`Evidence` + `Excerpt` matching the cited
    /// lines); 0 asks only for the file.
    #[serde(default)]
    pub evidence: u32,
}

/// A checked declaration.
#[derive(Debug, Clone, Serialize)]
pub struct Deliver {
    pub write: String,
    pub evidence: u32,
    #[serde(skip)]
    matcher: globset::GlobMatcher,
}

impl Deliver {
    /// Checks the glob: relative, inside the project, and a valid pattern.
    pub fn settle(decl: &DeliverDecl) -> Result<Deliver, String> {
        let write = decl.write.trim().trim_start_matches("./").to_string();
        if write.is_empty() {
            return Err(
                "`deliver.write` is empty; name the file the agent must write, as a glob \
                        such as `thoughts/shared/research/*.md`"
                    .into(),
            );
        }
        if write.starts_with('/') || write.split('/').any(|part| part == "..") {
            return Err(format!(
                "`deliver.write: {write}` leaves the project; use a path relative to the project root"
            ));
        }
        let matcher = globset::GlobBuilder::new(&write)
            .literal_separator(true)
            .build()
            .map_err(|e| format!("`deliver.write: {write}` is not a valid glob: {e}"))?
            .compile_matcher();
        Ok(Deliver {
            write,
            evidence: decl.evidence,
            matcher,
        })
    }

    /// Whether `path` (relative to the project root, `/`-separated) is a file of this kind.
    pub fn matches(&self, path: &str) -> bool {
        self.matcher.is_match(path.trim_start_matches("./"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decl(write: &str) -> DeliverDecl {
        DeliverDecl {
            write: write.into(),
            evidence: 3,
        }
    }

    #[test]
    fn a_glob_matches_files_of_its_folder_only() {
        let d = Deliver::settle(&decl("thoughts/shared/research/*.md")).expect("valid");
        assert!(d.matches("thoughts/shared/research/2026-11-25-yaml.md"));
        assert!(d.matches("./thoughts/shared/research/a.md"));
        assert!(!d.matches("thoughts/shared/research/old/a.md"));
        assert!(!d.matches("thoughts/shared/plans/a.md"));
    }

    #[test]
    fn paths_that_leave_the_project_or_do_not_parse_are_refused() {
        for bad in ["/etc/*.md", "../x/*.md", "thoughts/[.md", "  "] {
            assert!(Deliver::settle(&decl(bad)).is_err(), "{bad}");
        }
    }
}
