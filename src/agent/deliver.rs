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
    /// The final answer may be the document itself: the runtime saves it under `write` (its
    /// `*` replaced by the date and a slug of the title). A small model writes its report as its
    /// answer far more reliably than as one JSON string inside a `write` call.
    #[serde(default)]
    pub from_answer: bool,
}

/// A checked declaration.
#[derive(Debug, Clone, Serialize)]
pub struct Deliver {
    pub write: String,
    pub evidence: u32,
    pub from_answer: bool,
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
        if decl.from_answer {
            let (folder, file) = write.rsplit_once('/').unwrap_or(("", &write));
            let meta = |t: &str| t.contains(['*', '?', '[', '{']);
            if meta(folder) || file.matches('*').count() != 1 || file.contains(['?', '[', '{']) {
                return Err(format!(
                    "`deliver.write: {write}` cannot name the file an answer is saved to \
                     (`from_answer: true`): write one folder and one `*` in the file name, such \
                     as `thoughts/shared/research/*.md`"
                ));
            }
        }
        Ok(Deliver {
            write,
            evidence: decl.evidence,
            from_answer: decl.from_answer,
            matcher,
        })
    }

    /// Whether `path` (relative to the project root, `/`-separated) is a file of this kind.
    pub fn matches(&self, path: &str) -> bool {
        self.matcher.is_match(path.trim_start_matches("./"))
    }

    /// The file an answer saved for `from_answer` goes to: the glob's `*` replaced by `stem`.
    pub fn path_for(&self, stem: &str) -> String {
        self.write.replacen('*', stem, 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decl(write: &str) -> DeliverDecl {
        DeliverDecl {
            write: write.into(),
            evidence: 3,
            from_answer: false,
        }
    }

    #[test]
    fn an_answer_is_saved_only_under_a_glob_that_names_one_file() {
        let with = |w: &str| {
            Deliver::settle(&DeliverDecl {
                from_answer: true,
                ..decl(w)
            })
        };
        let d = with("thoughts/shared/research/*.md").expect("one folder, one star");
        assert_eq!(
            d.path_for("2026-11-25-yaml"),
            "thoughts/shared/research/2026-11-25-yaml.md"
        );
        for bad in [
            "thoughts/**/*.md",
            "thoughts/shared/research/*-*.md",
            "thoughts/a.md",
        ] {
            assert!(with(bad).is_err(), "{bad}");
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
