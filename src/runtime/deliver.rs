//! Holding an agent to its `deliver:` declaration at its final answer.
//!
//! The answer of a primary is a chat reply; what the user came for is the file it leaves behind.
//! When that file is missing (no written file matches the glob) or too little of its evidence
//! verifies, the hop does not end COMPLETED: the agent gets a repair turn that names what is
//! missing and shows the shape to write, and after its repairs the hop ends PARTIAL.

use crate::agent::deliver::Deliver;
use crate::contract::{tally_evidence, verify_document, CheckContext, FileCache};
use crate::project::Project;

/// What the agent still owes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Missing {
    /// No file written by the hop (or its subagents) matches the glob.
    NotWritten,
    /// The best matching file, and how much of its evidence verified.
    Evidence {
        path: String,
        verified: u64,
        items: u64,
        problems: Vec<String>,
    },
}

impl Missing {
    /// One line for the PARTIAL reason and the eval.
    pub fn summary(&self, owed: &Deliver) -> String {
        match self {
            Missing::NotWritten => format!(
                "deliverable missing: no file matching `{}` was written",
                owed.write
            ),
            Missing::Evidence {
                path,
                verified,
                items,
                ..
            } => format!(
                "deliverable incomplete: `{path}` has {verified} verified evidence item(s) of \
                 {items}; at least {} required, and every item must verify",
                owed.evidence
            ),
        }
    }
}

/// The written file that meets `owed`, or what is missing. `written` are the files the hop and
/// its subagents wrote, relative to the project root; the latest matching file that meets the
/// bar wins.
pub fn check(
    owed: &Deliver,
    written: &[String],
    project: &Project,
) -> Result<(String, u64), Missing> {
    let files = FileCache::new();
    let ctx = CheckContext::new(project, &files);
    let mut best: Option<Missing> = None;
    for path in written.iter().rev().filter(|p| owed.matches(p)) {
        let Some(text) = project
            .resolve(path)
            .ok()
            .and_then(|p| std::fs::read_to_string(p).ok())
        else {
            continue;
        };
        let tally = tally_evidence(&text, &ctx);
        let all_verify = tally.verified == tally.items;
        if all_verify && tally.verified >= u64::from(owed.evidence) {
            return Ok((path.clone(), tally.verified));
        }
        // An honest empty result: declared, and with nothing in it that could be false.
        if tally.items == 0 && declares_no_findings(&text) {
            return Ok((path.clone(), 0));
        }
        let better = match &best {
            Some(Missing::Evidence { verified, .. }) => tally.verified > *verified,
            _ => true,
        };
        if better {
            let problems = verify_document(&text, &ctx)
                .violations
                .into_iter()
                .take(5)
                .map(|p| format!("line {}: {}", p.line, p.message))
                .collect();
            best = Some(Missing::Evidence {
                path: path.clone(),
                verified: tally.verified,
                items: tally.items,
                problems,
            });
        }
    }
    Err(best.unwrap_or(Missing::NotWritten))
}

/// Whether the document's frontmatter says `findings: none`: the agent looked and found
/// nothing that answers the task, and claims nothing.
pub fn declares_no_findings(text: &str) -> bool {
    let Some(rest) = text.trim_start().strip_prefix("---") else {
        return false;
    };
    rest.lines()
        .skip(1)
        .take_while(|l| l.trim_end() != "---")
        .any(|l| {
            l.split_once(':').is_some_and(|(k, v)| {
                k.trim() == "findings" && v.trim().trim_matches('"') == "none"
            })
        })
}

/// The repair turn: what is missing, how to deliver it, and the shape of one evidence item.
/// `looks_like_call`: the answer holds a tool call written as text, which ran nothing.
/// `first_step`: what to do first when the agent has not started the work (its gate's plan).
pub fn repair_prompt(
    owed: &Deliver,
    missing: &Missing,
    workflow: Option<&str>,
    looks_like_call: bool,
    first_step: Option<&str>,
) -> String {
    let mut out = String::new();
    if looks_like_call {
        out.push_str(
            "Your answer is a tool call written as text: it ran nothing. Call the tool itself \
             (the tool-call channel), not in your answer.\n\n",
        );
    }
    let how = match workflow {
        Some(w) => {
            format!("finish the `{w}` workflow with the `step` tool: its last step writes the file")
        }
        None => "write it with the `write` tool".to_string(),
    };
    match missing {
        Missing::NotWritten => out.push_str(&format!(
            "You have not delivered your document: no file matching `{}` was written. {}; \
             it needs at least {} Evidence item(s) whose excerpt is the exact text of the cited \
             lines. If nothing answers the task, write the file with `findings: none` in its \
             frontmatter and no Evidence. Then answer with one line naming the file.\n",
            owed.write,
            capitalize(&how),
            owed.evidence
        )),
        Missing::Evidence {
            path,
            verified,
            items,
            problems,
        } => {
            out.push_str(&format!(
                "Your document `{path}` has {verified} verified Evidence item(s) of {items}; \
                 every item must verify, and at least {} must be there. Fix or remove the items \
                 that do not verify and {how} again.\n",
                owed.evidence
            ));
            if !problems.is_empty() {
                out.push_str("Problems found:\n");
                for p in problems {
                    out.push_str(&format!("- {p}\n"));
                }
            }
        }
    }
    if let Some(step) = first_step {
        out.push('\n');
        out.push_str(step);
        out.push('\n');
    }
    if workflow.is_none() && owed.evidence > 0 {
        out.push_str(
            "\nEach Evidence item, copied from lines you read (`read` shows line numbers):\n\n\
             - **Evidence**: `src/file.rs:10-12`\n\
             - **Excerpt**:\n  ```\n  the exact text of lines 10 to 12\n  ```\n",
        );
    }
    out
}

/// Whether an answer holds something that reads as a tool call: the runtime did not run it
/// (a tool not offered, or quoted as an example), and the agent should know it ran nothing.
pub fn looks_like_call(answer: &str) -> bool {
    let markers = ["<tool_call>", "[TOOL_CALLS]", "<|python_tag|>", "task("];
    markers.iter().any(|m| answer.contains(m))
        || (answer.contains("\"name\"")
            && ["\"arguments\"", "\"parameters\"", "\"subagent_type\""]
                .iter()
                .any(|k| answer.contains(k)))
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(first) => first.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::deliver::DeliverDecl;

    fn owed(evidence: u32) -> Deliver {
        Deliver::settle(&DeliverDecl {
            write: "reports/*.md".into(),
            evidence,
        })
        .expect("valid")
    }

    fn project() -> (tempfile::TempDir, Project) {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("reports")).expect("mkdir");
        std::fs::write(dir.path().join("src.txt"), "alpha\nbeta\ngamma\n").expect("write");
        let p = Project::open(dir.path()).expect("project");
        (dir, p)
    }

    fn item(lines: &str, excerpt: &str) -> String {
        format!("- **Evidence**: `src.txt:{lines}`\n- **Excerpt**:\n  ```\n  {excerpt}\n  ```\n\n")
    }

    #[test]
    fn nothing_written_or_nothing_matching_is_missing() {
        let (dir, p) = project();
        std::fs::write(dir.path().join("other.md"), "x").expect("write");
        assert_eq!(check(&owed(0), &[], &p), Err(Missing::NotWritten));
        assert_eq!(
            check(&owed(0), &["other.md".into()], &p),
            Err(Missing::NotWritten)
        );
    }

    #[test]
    fn a_report_meets_the_bar_only_with_enough_verified_evidence() {
        let (dir, p) = project();
        let good = format!(
            "# R\n\n{}{}",
            item("1", "alpha"),
            item("2-3", "beta\n  gamma")
        );
        let bad = format!("# R\n\n{}{}", item("1", "alpha"), item("2", "not the line"));
        std::fs::write(dir.path().join("reports/good.md"), good).expect("write");
        std::fs::write(dir.path().join("reports/bad.md"), bad).expect("write");
        assert_eq!(
            check(&owed(2), &["reports/good.md".into()], &p),
            Ok(("reports/good.md".to_string(), 2))
        );
        match check(&owed(2), &["reports/bad.md".into()], &p) {
            Err(Missing::Evidence {
                verified,
                items,
                problems,
                ..
            }) => {
                assert_eq!((verified, items), (1, 2));
                assert!(!problems.is_empty());
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_unverified_item_spoils_the_report_and_an_empty_one_must_say_so() {
        let (dir, p) = project();
        let mixed = format!("# R\n\n{}{}", item("1", "alpha"), item("2", "not the line"));
        std::fs::write(dir.path().join("reports/mixed.md"), mixed).expect("write");
        assert!(check(&owed(1), &["reports/mixed.md".into()], &p).is_err());
        let silent = "---\ndate: 2026-11-25\n---\n# R\n\nNothing.\n";
        let declared = "---\ndate: 2026-11-25\nfindings: none\n---\n# R\n\nNothing.\n";
        std::fs::write(dir.path().join("reports/silent.md"), silent).expect("write");
        std::fs::write(dir.path().join("reports/declared.md"), declared).expect("write");
        assert!(check(&owed(1), &["reports/silent.md".into()], &p).is_err());
        assert_eq!(
            check(&owed(1), &["reports/declared.md".into()], &p),
            Ok(("reports/declared.md".to_string(), 0))
        );
        // Declaring none while citing something is not an empty report.
        let both = format!("---\nfindings: none\n---\n# R\n\n{}", item("2", "wrong"));
        std::fs::write(dir.path().join("reports/both.md"), both).expect("write");
        assert!(check(&owed(1), &["reports/both.md".into()], &p).is_err());
    }

    #[test]
    fn the_repair_prompt_names_the_glob_and_the_call_written_as_text() {
        let text = repair_prompt(
            &owed(3),
            &Missing::NotWritten,
            None,
            true,
            Some("Start here."),
        );
        assert!(text.contains("Start here."), "{text}");
        assert!(text.contains("reports/*.md"), "{text}");
        assert!(text.contains("written as text"), "{text}");
        assert!(text.contains("**Excerpt**"), "{text}");
        assert!(looks_like_call(
            "```json\n{\"name\": \"task\", \"arguments\": {}}\n```"
        ));
        assert!(!looks_like_call("The report is in reports/a.md."));
    }
}
