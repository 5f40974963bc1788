//! Asks made once after an answer is accepted: `evidence_goal:` (more verified items) and
//! `search_first:` (the file the runtime's search ranked first).
//!
//! Both exist because a small model's first acceptable answer is often thinner than it could be,
//! and a contract rule that refused it would, after its repairs, lose what was good in it. So the
//! hop accepts the answer, keeps it, asks once, and lets the second answer go up only if it is
//! accepted too and passes the ask's [`Test`]; otherwise the first answer stands. The events are
//! `hop.steered` `<why>` when asking, then `<why>_<won>` or `<why>_kept` (see [`Asked::outcome`]).

use crate::project::Project;

/// What the second answer must do to replace the first.
#[derive(Debug, Clone)]
pub enum Test {
    /// `evidence_goal:`: hold more verified Evidence items than the first answer's.
    Richer { verified: usize },
    /// `search_first:`: name this file. `added` is the answer that goes up instead when the
    /// second answer does not: the first with the file added by the runtime, when the file
    /// holds a word of the task that sets files apart (see [`Asked::kept`]).
    Names { file: String, added: Option<String> },
}

/// An ask made after an accepted answer, with that answer kept until the next one is judged.
#[derive(Debug, Clone)]
pub struct Asked {
    pub test: Test,
    pub answer: String,
    pub conformant: Option<bool>,
}

impl Asked {
    /// The ask's event name: `evidence_goal` or `search_first_left_out`.
    pub fn why(&self) -> &'static str {
        match self.test {
            Test::Richer { .. } => "evidence_goal",
            Test::Names { .. } => "search_first_left_out",
        }
    }

    /// The `count` of its events: the first answer's verified items, or 1.
    pub fn count(&self) -> u32 {
        match self.test {
            Test::Richer { verified } => verified as u32,
            Test::Names { .. } => 1,
        }
    }

    /// Whether `answer`, accepted, goes up instead of the kept one.
    pub fn won_by(&self, answer: &str, project: &Project) -> bool {
        match &self.test {
            Test::Richer { verified } => {
                super::evidence_goal::verified(answer, project) > *verified
            }
            Test::Names { file, .. } => super::search_first::names_file(answer, file),
        }
    }

    /// The answer that stands when the second answer did not win: the first, or for
    /// `search_first:` the first with the file added when that file holds a word of the task
    /// that sets files apart. Why: asked to add `src/lint/mod.rs` (ranked first for "Plan a
    /// lint warning for agents whose description is longer than 300 characters"), the 1.5B
    /// codebase-locator kept its answer naming only `src/agent/permission.rs`, found by
    /// `longer`, and the planner planned a change to permissions. The entry says the runtime
    /// added it; the caller checks that the contract still holds.
    pub fn kept(&self) -> (&str, bool) {
        match &self.test {
            Test::Names {
                added: Some(added), ..
            } => (added, true),
            _ => (&self.answer, false),
        }
    }

    /// The event name once the second answer is judged.
    pub fn outcome(&self, won: bool) -> &'static str {
        match (&self.test, won) {
            (Test::Richer { .. }, true) => "evidence_goal_richer",
            (Test::Richer { .. }, false) => "evidence_goal_kept",
            (Test::Names { .. }, true) => "search_first_named",
            (Test::Names { .. }, false) => "search_first_kept",
        }
    }
}

/// The asks a hop may still make, each at most once: taken when made.
#[derive(Debug, Default)]
pub struct Pending {
    /// `evidence_goal:` with the contract's signal headings.
    pub evidence_goal: Option<(u32, Vec<String>)>,
    /// The file `search_first:` ranked first, whether its name is named for the task (see
    /// `search_first::Listing::named_for_task`), and whether it holds a word that sets files
    /// apart at all.
    pub search_first: Option<(String, bool, bool)>,
}

/// What an accepted answer calls for.
#[derive(Debug)]
pub enum Next {
    /// Ask once, with this message, keeping the answer.
    Ask(Asked, String),
    /// Hand up this answer instead: the answer with the file `search_first:` ranked first
    /// added by the runtime, when the file's name holds the task's words. Qwen2.5-Coder-1.5B
    /// as thoughts-locator, asked to add such a file (`2026-11-02-yaml-parser-serde-saphyr.md`
    /// for "the YAML parser"), sent its first answer back word for word in every session, even
    /// when the ask showed only a ready copy with the file; the entry says the runtime added it.
    Added(String),
}

impl Pending {
    /// What `answer` calls for first: `None` when nothing. The ask is then spent.
    pub fn next(
        &mut self,
        answer: &str,
        conformant: Option<bool>,
        project: &Project,
    ) -> Option<Next> {
        if let Some((goal, headings)) = &self.evidence_goal {
            if let Some((have, note)) = super::evidence_goal::ask(answer, *goal, headings, project)
            {
                self.evidence_goal = None;
                let test = Test::Richer { verified: have };
                return Some(Next::Ask(Asked::new(test, answer, conformant), note));
            }
        }
        if let Some((file, named_for_task, sets_apart)) = self.search_first.clone() {
            let title = super::search_first::title(project, &file);
            let note = super::search_first::left_out_ask(answer, &file, title.as_deref())?;
            self.search_first = None;
            // An answer that names no file loses nothing by the addition of a file that holds a
            // word of the task few files hold. Asked, the 1.5B codebase-locator kept "Nothing in
            // the source tree matches --quiet flag run.", and the planner, given no file, quoted
            // a decision record its own prompt named.
            let why = if named_for_task {
                Some(super::search_first::ADDED)
            } else if sets_apart && super::search_first::names_no_file(answer) {
                Some(super::search_first::ADDED_TO_NONE)
            } else {
                None
            };
            // The answer with the file added, its entry the file's title and then `why`.
            let with_file = |why: &str| {
                let entry = match &title {
                    Some(t) => format!("{t} {why}"),
                    None => why.to_string(),
                };
                super::search_first::with_file(answer, &file, Some(&entry))
            };
            if let Some(added) = why.and_then(with_file) {
                return Some(Next::Added(added));
            }
            let added = sets_apart
                .then(|| with_file(super::search_first::ADDED_AFTER_ASK))
                .flatten();
            let test = Test::Names { file, added };
            return Some(Next::Ask(Asked::new(test, answer, conformant), note));
        }
        None
    }
}

impl Asked {
    fn new(test: Test, answer: &str, conformant: Option<bool>) -> Self {
        Asked {
            test,
            answer: answer.to_string(),
            conformant,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_ask_is_made_once_and_judged_by_its_own_test() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("thoughts")).unwrap();
        std::fs::write(dir.path().join("thoughts/a.md"), "# About A\n\ntext\n").unwrap();
        let project = Project::open(dir.path()).unwrap();
        // `search_first:` ranked `thoughts/a.md` first: named for every word that sets files
        // apart, and holding one such word at all.
        let ranked_first = |named_for_task: bool, sets_apart: bool| Pending {
            evidence_goal: None,
            search_first: Some(("thoughts/a.md".into(), named_for_task, sets_apart)),
        };
        let mut pending = ranked_first(false, true);
        assert!(pending
            .next("lists `thoughts/a.md`", Some(true), &project)
            .is_none());
        let Some(Next::Ask(asked, note)) = pending.next("nothing", Some(true), &project) else {
            panic!("asked")
        };
        assert!(note.contains("About A"), "{note}");
        assert_eq!(asked.why(), "search_first_left_out");
        assert!(asked.won_by("- `thoughts/a.md`", &project));
        assert!(!asked.won_by("nothing again", &project));
        assert_eq!(asked.outcome(false), "search_first_kept");
        assert_eq!(asked.answer, "nothing");
        assert!(pending.next("nothing", Some(true), &project).is_none());
        // A file named for every word searched is added, not asked, when the answer has a block.
        let mut pending = ranked_first(true, true);
        let answer = "<answer>\nNo documents under thoughts/ match A.\n</answer>";
        let Some(Next::Added(added)) = pending.next(answer, Some(true), &project) else {
            panic!("added")
        };
        assert_eq!(
            added,
            format!(
                "<answer>\n- `thoughts/a.md` — About A {}\n</answer>",
                crate::runtime::search_first::ADDED
            )
        );
        assert!(pending.next(answer, Some(true), &project).is_none());
        // Any file is added to an answer that names none; an answer naming another is asked.
        let mut pending = ranked_first(false, true);
        let Some(Next::Added(added)) = pending.next(answer, Some(true), &project) else {
            panic!("added to an answer naming no file")
        };
        assert!(
            added.contains(crate::runtime::search_first::ADDED_TO_NONE),
            "{added}"
        );
        // Nor to one naming none when the file holds no word that sets files apart.
        let mut pending = ranked_first(false, false);
        assert!(matches!(
            pending.next(answer, Some(true), &project),
            Some(Next::Ask(..))
        ));
        let mut pending = ranked_first(false, true);
        let other = "<answer>\nSuggested for analysis: `thoughts/b.md`.\n</answer>";
        let Some(Next::Ask(asked, _)) = pending.next(other, Some(true), &project) else {
            panic!("asked")
        };
        // Asked and left out again, the file is added after all: it holds a word that sets
        // files apart.
        let (kept, added) = asked.kept();
        assert!(added);
        let entry = format!(
            "- `thoughts/a.md` — About A {}",
            crate::runtime::search_first::ADDED_AFTER_ASK
        );
        assert!(
            kept.contains("analysis: `thoughts/a.md`, `thoughts/b.md`") && kept.contains(&entry),
            "{kept}"
        );
        // One holding no such word is not: the first answer stands as it was.
        let mut pending = ranked_first(false, false);
        let Some(Next::Ask(asked, _)) = pending.next(other, Some(true), &project) else {
            panic!("asked")
        };
        assert_eq!(asked.kept(), (other, false));
        // Without a block, it is asked.
        let mut pending = ranked_first(true, true);
        assert!(matches!(
            pending.next("nothing", Some(true), &project),
            Some(Next::Ask(..))
        ));
    }
}
