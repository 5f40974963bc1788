//! Holding an agent to its `deliver:` declaration at its final answer.
//!
//! The answer of a primary is a chat reply; what the user came for is the file it leaves behind.
//! When that file is missing (no written file matches the glob) or too little of its evidence
//! verifies, the hop does not end COMPLETED: the agent gets a repair turn that names what is
//! missing and shows the shape to write, and after its repairs the hop ends PARTIAL.

use crate::agent::deliver::Deliver;
use crate::contract::{tally_evidence, verified_items, verify_document, CheckContext, FileCache};
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

/// What the agent reads after writing a file its `deliver:` glob matches: whether that file
/// delivers now, or what is still wrong with it. `None` when no written file matches.
pub fn written_note(owed: &Deliver, written: &[String], project: &Project) -> Option<String> {
    if !written.iter().any(|p| owed.matches(p)) {
        return None;
    }
    Some(match check(owed, written, project) {
        Ok((path, verified)) => format!(
            "\n\n[deliver] `{path}` delivers what you owe ({verified} verified Evidence \
             item(s)). Answer now with one line naming it."
        ),
        Err(missing @ Missing::Evidence { .. }) => {
            let mut note = format!(
                "\n\n[deliver] Not delivered yet: {}.",
                missing.summary(owed)
            );
            if let Missing::Evidence { problems, .. } = &missing {
                for p in problems {
                    note.push_str(&format!("\n- {p}"));
                }
            }
            note.push_str(
                "\nFix or remove the items that do not verify (copy each excerpt exactly from \
                 the lines cited) and write the file again.",
            );
            note
        }
        Err(Missing::NotWritten) => return None,
    })
}

/// The document an answer consists of, for `deliver.from_answer`: YAML frontmatter or a `# `
/// title first, and more than a few lines (one fence around it all is taken off, as the
/// contract gate does). `None` for a one-line answer naming a file, a call, a question.
///
/// A fenced document after a line or two of preface ("Here is the report:") is taken too, when
/// it opens with frontmatter: small models introduce what they were asked to write, and an
/// agent told to answer without tools (a stalled hop) has no other way to deliver.
pub fn document_in_answer(answer: &str) -> Option<&str> {
    let is_document = |text: &str| {
        (text.starts_with("---\n") || text.starts_with("# ")) && text.lines().count() >= 5
    };
    let text = crate::markdown::leading_fence(answer)
        .map_or(answer, |(document, _)| document)
        .trim();
    if is_document(text) {
        return Some(text);
    }
    const PREFACE_LINES: usize = 2;
    let mut at = 0;
    let mut prose = 0;
    for line in answer.split_inclusive('\n') {
        if line.starts_with("```") || line.starts_with("~~~") {
            let (fenced, _) = crate::markdown::leading_fence(&answer[at..])?;
            let fenced = fenced.trim();
            return (fenced.starts_with("---\n") && is_document(fenced)).then_some(fenced);
        }
        if !line.trim().is_empty() {
            prose += 1;
            if prose > PREFACE_LINES {
                return None;
            }
        }
        at += line.len();
    }
    None
}

/// The document made of an answer that holds a report's sections but not its frontmatter: the
/// answer from its first `## ` heading on, when an Evidence item follows, under frontmatter the
/// runtime knows (`date`, `status: active`, `topic` from the task, `tags: [research]`,
/// `correlation_id`) and the task's first line as its `# ` title. A fence line left unclosed at
/// the end (the rest of a fence opened before the sections) goes. Qwen2.5-Coder-1.5B, as the
/// researcher, answered twice with `## Findings` holding the two items its analyzer had verified,
/// after a `task(…)` line written as text and without the frontmatter, and the session ended with
/// no report: the sections are the agent's, the fields above are the runtime's own values.
/// `None` when the answer is a document already, or has no such section.
pub fn document_from_sections(
    answer: &str,
    today: &str,
    task: &str,
    correlation_id: &str,
) -> Option<String> {
    if document_in_answer(answer).is_some() {
        return None;
    }
    let start = if answer.starts_with("## ") {
        0
    } else {
        answer.find("\n## ")? + 1
    };
    let mut sections: Vec<&str> = answer[start..].trim_end().lines().collect();
    if !sections.iter().any(|l| l.contains("**Evidence**")) {
        return None;
    }
    let fences = sections
        .iter()
        .filter(|l| l.trim_start().starts_with("```"))
        .count();
    if fences % 2 == 1 && sections.last().is_some_and(|l| l.trim() == "```") {
        sections.pop();
    }
    let question = task.lines().find(|l| !l.trim().is_empty())?.trim();
    let topic = question.replace('"', "'");
    Some(format!(
        "---\ndate: {today}\nstatus: active\ntopic: \"{topic}\"\ntags: [research]\n\
         correlation_id: {correlation_id}\n---\n\n# {question}\n\n{}\n",
        sections.join("\n").trim_end()
    ))
}

/// Where the runtime saves an answer that is the document: the glob's `*` replaced by
/// `<today>-<slug>`, the slug from the frontmatter's `topic`/`title`, else the first `# `
/// heading, else `task`. `reuse` is the file this hop saved before, which a corrected answer
/// replaces. [`save`] moves on to `-2`, `-3`, … when the name is another file's.
pub fn answer_path(
    owed: &Deliver,
    today: &str,
    document: &str,
    task: &str,
    reuse: Option<&str>,
) -> String {
    if let Some(path) = reuse {
        return path.to_string();
    }
    let title = frontmatter_value(document, &["topic", "title"])
        .or_else(|| {
            document
                .lines()
                .find_map(|l| l.strip_prefix("# ").map(str::to_string))
        })
        .unwrap_or_else(|| task.to_string());
    let slug = slug(&title);
    let stem = if slug.is_empty() {
        today.to_string()
    } else {
        format!("{today}-{slug}")
    };
    owed.path_for(&stem)
}

/// Saves `document` at `path` (relative to the project root), or at the next free `-N` name
/// when another file has it, the way the `write` tool writes: confined to the project, never
/// through a link, never over a file this hop did not save (`earlier` is the one it did).
/// Returns the path taken; the error says why in one line.
///
/// Why the name is taken atomically: two researcher sessions on one question on one day make
/// the same name, and a check for a free name followed by a write lets both take it.
pub fn save(
    project: &Project,
    path: &str,
    document: &str,
    earlier: Option<&str>,
) -> Result<String, String> {
    let mut text = document.to_string();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    crate::tools::write::write_new(project, path, &text, earlier)
}

/// The first of `keys` in the document's YAML frontmatter, as a plain one-line value.
fn frontmatter_value(text: &str, keys: &[&str]) -> Option<String> {
    frontmatter_fields(text)
        .find_map(|(k, v)| {
            keys.contains(&k)
                .then(|| v.trim_matches(['"', '\'']).to_string())
        })
        .filter(|v| !v.is_empty())
}

/// Up to six lowercase ASCII words of `title` joined by hyphens.
fn slug(title: &str) -> String {
    title
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(6)
        .map(str::to_ascii_lowercase)
        .collect::<Vec<_>>()
        .join("-")
}

/// Whether the document's frontmatter says `findings: none`: the agent looked and found
/// nothing that answers the task, and claims nothing.
pub fn declares_no_findings(text: &str) -> bool {
    frontmatter_fields(text).any(|(k, v)| k == "findings" && v.trim_matches('"') == "none")
}

/// The `key: value` lines of a document's YAML frontmatter, trimmed, read as plain one-line
/// fields (enough for the flat keys the deliverable checks look at).
fn frontmatter_fields(text: &str) -> impl Iterator<Item = (&str, &str)> {
    text.trim_start()
        .strip_prefix("---")
        .into_iter()
        .flat_map(|rest| rest.lines().skip(1))
        .take_while(|l| l.trim_end() != "---")
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim(), v.trim()))
}

/// Findings shown in a repair turn at most.
pub const MAX_FINDINGS: usize = 6;

/// The Evidence items of `answers` (the subagents' answers this hop received) that verify now,
/// each under the title of the heading it stood under: `### Title` then the item's own lines,
/// unchanged. Offered in a report's repair turn to copy: a small model copies far better than it
/// retypes an excerpt, and an item that verified in the analyzer's answer verifies in the report.
/// At most [`MAX_FINDINGS`], each once.
pub fn verified_findings<'a>(
    answers: impl IntoIterator<Item = &'a str>,
    project: &Project,
) -> Vec<String> {
    let files = FileCache::new();
    let ctx = CheckContext::new(project, &files);
    let mut out: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for text in answers {
        for item in verified_items(text, &ctx) {
            // The whole lines of the item, from the start of its label's line, unindented.
            let start = text[..item.span.start].rfind('\n').map_or(0, |i| i + 1);
            let lines = text[start..item.span.end].trim_end();
            // Spaces and tabs only: they are one byte each, so the cut is on a char boundary.
            let lead = |l: &str| l.bytes().take_while(|b| *b == b' ' || *b == b'\t').count();
            let indent = lead(lines);
            let body: String = lines
                .lines()
                .map(|l| &l[indent.min(lead(l))..])
                .collect::<Vec<_>>()
                .join("\n");
            if !seen.insert(body.clone()) {
                continue;
            }
            let title = item.title.unwrap_or_else(|| "Finding".to_string());
            out.push(format!("### {title}\n{body}"));
            if out.len() == MAX_FINDINGS {
                return out;
            }
        }
    }
    out
}

/// The file an item of [`verified_findings`] cites first (`path` of its `path:N-M`).
fn finding_file(finding: &str) -> Option<&str> {
    let cite = finding.split_once("**Evidence**: `")?.1.split('`').next()?;
    cite.rsplit_once(':').map(|(path, _)| path)
}

/// The `findings` (from [`verified_findings`]) of files `report` cites nowhere: each a file
/// whose analysis verified and that the report leaves out. Qwen2.5-Coder-1.5B, as the
/// researcher on "What did we decide about the YAML parser, and why?", was offered six verified
/// items, three of the decision record and three of `src/agent/parse.rs`, and its report kept
/// the last three only: the record, the one document that answers the question, was not cited.
pub fn left_out<'f>(report: &str, findings: &'f [String]) -> Vec<&'f str> {
    findings
        .iter()
        .filter(|f| finding_file(f).is_some_and(|p| !report.contains(&format!("`{p}:"))))
        .map(String::as_str)
        .collect()
}

/// The heading of the section [`with_left_out`] adds to a report.
pub const LEFT_OUT_HEADING: &str = "## Also found by the subagents";

/// `report` with the `left` findings appended under [`LEFT_OUT_HEADING`], marked as added by the
/// runtime: the findings are the subagents' own items, verified against their lines; the
/// report's own text says nothing of them.
pub fn with_left_out(report: &str, left: &[&str]) -> String {
    format!(
        "{}\n\n{LEFT_OUT_HEADING}\n\n_Added by the runtime: verified Evidence from files the \
         subagents analyzed that the report above does not cite._\n\n{}\n",
        report.trim_end(),
        left.join("\n\n")
    )
}

/// The note after a subagent's answer when the hop's subagents have given verified Evidence
/// (`findings`, from [`verified_findings`]) and the agent's final answer is its document: write
/// it now, copying them. It names no further call and no delegation: a small model copies a
/// filled call over any advice around it, and delegated "delegate again only if …" itself.
pub fn report_now(findings: &[String]) -> String {
    format!(
        "Your subagents have found {} verified Evidence item(s), below. Write your report now: \
         your final answer is the whole document, frontmatter first, with these items under \
         `## Findings`, {REPORT_NOW_ITEMS}\n\n{}",
        findings.len(),
        findings.join("\n\n")
    )
}

/// The words that end the head of [`report_now`]'s note; its findings follow them.
const REPORT_NOW_ITEMS: &str = "each copied unchanged, title line included.";

/// The findings of the last [`report_now`] note in `text`, each as the note shows it (`### Title`,
/// the Evidence line, the Excerpt label and its fenced block); `None` when `text` holds none.
/// The `local` provider writes the report's grammar from them (`model::local::grammar`).
pub fn report_now_findings(text: &str) -> Option<Vec<String>> {
    let at = text.rfind(REPORT_NOW_ITEMS)?;
    let mut out = Vec::new();
    let mut item: Vec<&str> = Vec::new();
    let mut fences = 0;
    for line in text[at + REPORT_NOW_ITEMS.len()..].lines() {
        if item.is_empty() {
            if line.trim().is_empty() {
                continue;
            }
            if !line.starts_with("### ") {
                break;
            }
        }
        item.push(line);
        if line.trim_start().starts_with("```") {
            fences += 1;
            if fences == 2 {
                out.push(item.join("\n"));
                item.clear();
                fences = 0;
            }
        }
    }
    (!out.is_empty()).then_some(out)
}

/// The repair turn: what is missing, how to deliver it, and the shape of one evidence item.
/// `looks_like_call`: the answer holds a tool call written as text, which ran nothing.
/// `first_step`: what to do first when the agent has not started the work (its gate's plan) or
/// has nothing verified to cite (the delegation its gate names next).
pub fn repair_prompt(
    owed: &Deliver,
    missing: &Missing,
    workflow: Option<&str>,
    looks_like_call: bool,
    first_step: Option<&str>,
    findings: &[String],
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
        None if owed.from_answer => "answer with the whole document, frontmatter first (the \
                                     runtime saves it), or write it with the `write` tool"
            .to_string(),
        None => "write it with the `write` tool".to_string(),
    };
    let then = if owed.from_answer && workflow.is_none() {
        ""
    } else {
        " Then answer with one line naming the file."
    };
    match missing {
        Missing::NotWritten => out.push_str(&format!(
            "You have not delivered your document: no file matching `{}` was written. {}; \
             it needs at least {} Evidence item(s) whose excerpt is the exact text of the cited \
             lines. If nothing answers the task, deliver it with `findings: none` in its \
             frontmatter and no Evidence.{then}\n",
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
        // Nothing verified yet and a call to make: the call is the repair, and an item's shape
        // to fill in would only invite one made up. Over llama-server (no grammar) the 1.5B
        // researcher wrote its report before any analysis, and sent it back unchanged after
        // each repair that showed that shape.
        if findings.is_empty() && step.starts_with("Next, delegate") {
            out.push_str(
                "No subagent has read anything for it yet, so there is nothing to cite: \
                 delegate first. ",
            );
            out.push_str(step);
            out.push('\n');
            return out;
        }
        out.push_str(step);
        out.push('\n');
    }
    if workflow.is_none() && !findings.is_empty() {
        // For a report that is the answer, worded as the note to write it now ends, so the
        // `local` provider writes the report's grammar from these items too
        // (`report_now_findings`); a document written with `write` is no answer to constrain.
        out.push_str(&format!(
            "\nThe Evidence your subagents gave that verifies, ready for the `## Findings` \
             section, {}\n\n",
            if owed.from_answer {
                REPORT_NOW_ITEMS
            } else {
                "copy each item unchanged, title line included."
            }
        ));
        out.push_str(&findings.join("\n\n"));
        out.push('\n');
    } else if workflow.is_none() && owed.evidence > 0 {
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
            from_answer: true,
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

    /// A finding of a file the report cites is not left out, whatever lines it cites; one of a
    /// file it cites nowhere is, and goes under its own heading, the report kept as it was.
    #[test]
    fn findings_of_files_the_report_does_not_cite_are_left_out() {
        let record = "### Decision: serde-saphyr\n- **Evidence**: `thoughts/d.md:8-8`\n- **Excerpt**:\n```\n# Decision\n```".to_string();
        let code = "### Finding: parse\n- **Evidence**: `src/parse.rs:1`\n- **Excerpt**:\n```\n//! Parses.\n```".to_string();
        let other_lines = "### Finding: more\n- **Evidence**: `src/parse.rs:9-10`\n- **Excerpt**:\n```\nfn a()\n```".to_string();
        let findings = vec![record.clone(), code.clone(), other_lines];
        let report = "# Q\n\n## Findings\n\n### Finding: parse\n- **Evidence**: `src/parse.rs:1`\n- **Excerpt**:\n```\n//! Parses.\n```\n";
        assert_eq!(left_out(report, &findings), [record.as_str()]);
        let added = with_left_out(report, &left_out(report, &findings));
        assert!(added.starts_with(report.trim_end()), "{added}");
        assert!(
            added.contains(&format!("{LEFT_OUT_HEADING}\n\n_Added by the runtime")),
            "{added}"
        );
        assert!(added.ends_with(&format!("{record}\n")), "{added}");
        // Every file cited: nothing is left out.
        assert!(left_out(&added, &findings).is_empty());
        // A path alone in prose is no citation of its lines.
        assert_eq!(left_out("see `thoughts/d.md`", &findings[..1]).len(), 1);
    }

    /// t2 on 79dad23: the report wrapped in a bare fence with its excerpts' fences unindented
    /// was saved up to the first excerpt's opening line, and no Evidence was left to verify.
    #[test]
    fn a_wrapped_report_whose_excerpts_are_not_indented_is_saved_whole() {
        let (_dir, p) = project();
        let unindented = |lines: &str, excerpt: &str| {
            format!("- **Evidence**: `src.txt:{lines}`\n- **Excerpt**:\n```\n{excerpt}\n```\n\n")
        };
        let report = format!(
            "```\n---\ntopic: \"Alpha\"\n---\n\n# Alpha\n\n## Findings\n{}{}## Open Questions\n- none\n```\ndone\n```\n",
            unindented("1", "alpha"),
            unindented("2", "beta"),
        );
        let document = document_in_answer(&report).expect("the wrapped document");
        assert!(
            document.ends_with("## Open Questions\n- none"),
            "{document}"
        );
        let path = answer_path(&owed(2), "2026-11-29", document, "task", None);
        assert_eq!(save(&p, &path, document, None).expect("saved"), path);
        assert_eq!(
            check(&owed(2), std::slice::from_ref(&path), &p),
            Ok((path.clone(), 2))
        );
    }

    #[test]
    fn an_answer_that_is_the_document_is_saved_under_a_fresh_name() {
        let (dir, p) = project();
        let report = format!(
            "```markdown\n---\ntopic: \"What is Alpha, and why?\"\n---\n\n# Alpha\n\n{}```\n",
            item("1", "alpha")
        );
        let document = document_in_answer(&report).expect("a fenced document");
        assert!(document.starts_with("---\ntopic:"));
        // Text after the closing fence (Qwen copied the prompt's rules below its report).
        let trailed = format!("{report}\n- Copy Evidence and Excerpt exactly.\n");
        assert_eq!(document_in_answer(&trailed), Some(document));
        // After a line of preface (the offline model's answer on a turn without tools).
        let prefaced = format!("The report could not be written; here it is.\n\n{report}");
        assert_eq!(document_in_answer(&prefaced), Some(document));
        let essay = format!("One.\nTwo.\nThree.\n\n{report}");
        assert_eq!(document_in_answer(&essay), None, "more than a preface");
        let untitled =
            "Here:\n```\nfn main() {}\nfn a() {}\nfn b() {}\nfn c() {}\nfn d() {}\n```\n";
        assert_eq!(document_in_answer(untitled), None, "code is no document");
        for not_one in [
            "reports/a.md",
            "{\"name\": \"write\", \"arguments\": {}}",
            "# One\nline",
        ] {
            assert!(document_in_answer(not_one).is_none(), "{not_one}");
        }
        let path = answer_path(&owed(1), "2026-11-25", document, "task", None);
        assert_eq!(path, "reports/2026-11-25-what-is-alpha-and-why.md");
        assert_eq!(save(&p, &path, document, None).expect("saved"), path);
        assert_eq!(
            check(&owed(1), std::slice::from_ref(&path), &p),
            Ok((path.clone(), 1))
        );
        // Taken: the next answer of another hop gets a new name, and the first file is kept;
        // this hop's corrected answer replaces its own.
        let next = answer_path(&owed(1), "2026-11-25", document, "task", None);
        let other = save(&p, &next, "# Other\n", None).expect("saved");
        assert_eq!(other, "reports/2026-11-25-what-is-alpha-and-why-2.md");
        assert_eq!(
            std::fs::read_to_string(dir.path().join(&path)).unwrap(),
            format!("{document}\n")
        );
        let again = answer_path(&owed(1), "2026-11-25", "# Renamed\n", "t", Some(&path));
        assert_eq!(again, path);
        assert_eq!(
            save(&p, &again, "# Renamed\n", Some(&path)),
            Ok(path.clone())
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join(&path)).unwrap(),
            "# Renamed\n"
        );
        // The title from the heading, then the task, when the frontmatter has none.
        let headed = "# Beta and Gamma\n\na\nb\nc\n";
        assert_eq!(
            answer_path(&owed(1), "d", headed, "task", None),
            "reports/d-beta-and-gamma.md"
        );
        // Never through a link out of the project.
        let outside = tempfile::tempdir().expect("tempdir");
        std::os::unix::fs::symlink(outside.path(), dir.path().join("reports/out")).expect("link");
        assert!(save(&p, "reports/out/x.md", document, None).is_err());
        assert!(!outside.path().join("x.md").exists());
    }

    #[test]
    fn sections_answered_without_frontmatter_become_the_document() {
        let (_dir, project) = project();
        let answer = format!(
            "```\ntask({{\"description\":\"Report\"}})\n\n## Findings\n\n### Decision: x\n{}\n```\n",
            item("1", "alpha")
        );
        let doc = document_from_sections(
            &answer,
            "2026-11-26",
            "What did we decide?\nCorrelation: c",
            "c-1",
        )
        .expect("a document");
        assert!(
            doc.starts_with("---\ndate: 2026-11-26\nstatus: active\ntopic: \"What did we decide?\"\ntags: [research]\ncorrelation_id: c-1\n---\n\n# What did we decide?\n\n## Findings\n"),
            "{doc}"
        );
        assert!(
            !doc.contains("task("),
            "the call written as text is left out: {doc}"
        );
        assert!(
            !doc.trim_end().ends_with("```\n```"),
            "the outer fence's end goes: {doc}"
        );
        let owed = owed(1);
        let path = "reports/r.md";
        save(&project, path, &doc, None).expect("saved");
        assert!(check(&owed, &[path.to_string()], &project).is_ok(), "{doc}");
        // A document already, or sections with no Evidence: nothing is made.
        assert_eq!(document_from_sections(&doc, "d", "t", "c"), None);
        assert_eq!(
            document_from_sections("## Findings\nNone.\n", "d", "t", "c"),
            None
        );
    }

    #[test]
    fn a_written_deliverable_is_judged_in_the_write_result() {
        let (dir, p) = project();
        std::fs::write(
            dir.path().join("reports/r.md"),
            format!("# R\n\n{}", item("1", "alpha")),
        )
        .expect("write");
        std::fs::write(
            dir.path().join("reports/w.md"),
            format!("# R\n\n{}", item("1", "beta")),
        )
        .expect("write");
        let met = written_note(&owed(1), &["reports/r.md".into()], &p).expect("a note");
        assert!(met.contains("delivers what you owe"), "{met}");
        let wrong = written_note(&owed(1), &["reports/w.md".into()], &p).expect("a note");
        assert!(wrong.contains("Not delivered yet"), "{wrong}");
        assert!(wrong.contains("line "), "names the problem: {wrong}");
        assert!(written_note(&owed(1), &["other.md".into()], &p).is_none());
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
            &[],
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

    #[test]
    fn the_findings_of_a_report_now_note_are_read_back_as_written() {
        let findings = vec![
            "### The parser\n- **Evidence**: `a.md:3-4`\n- **Excerpt**:\n```\nWe parse YAML.\n\n### not a title\n```".to_string(),
            "### Errors\n- **Evidence**: `a.md:9`\n- **Excerpt**:\n```\nErrors say where.\n```".to_string(),
        ];
        let note = format!(
            "the locator's answer\n\n[runtime] {}",
            report_now(&findings)
        );
        assert_eq!(report_now_findings(&note), Some(findings));
        assert_eq!(report_now_findings("No note here."), None);
        // Text after the items is not an item.
        let cut = format!(
            "{}\n\nSomething else.",
            report_now(&[
                "### A\n- **Evidence**: `a.md:1`\n- **Excerpt**:\n```\nx\n```".to_string()
            ])
        );
        assert_eq!(report_now_findings(&cut).map(|f| f.len()), Some(1));
    }

    #[test]
    fn the_verified_items_of_the_answers_are_offered_under_their_titles_each_once() {
        let (_dir, p) = project();
        let analysis = format!(
            "---\nmessage_id: a\n---\n<answer>\n### Extracted Signal\n\n\
             #### Decision: Beta follows alpha\n{}\n#### Spec: Gamma\n{}</answer>\n",
            item("2", "beta"),
            item("3", "delta")
        );
        let found = verified_findings([analysis.as_str(), analysis.as_str(), "no items"], &p);
        assert_eq!(
            found,
            [format!(
                "### Decision: Beta follows alpha\n{}",
                item("2", "beta").trim_end()
            )],
            "the item whose excerpt is wrong is left out, and a repeat is shown once"
        );
        let text = repair_prompt(&owed(1), &Missing::NotWritten, None, false, None, &found);
        assert!(
            text.contains("ready for the `## Findings` section")
                && text.contains("### Decision: Beta follows alpha\n- **Evidence**: `src.txt:2`"),
            "{text}"
        );
        assert!(!text.contains("the exact text of lines 10 to 12"), "{text}");
        // The repair's items are read back as the note's are: the `local` provider writes the
        // report's grammar from them.
        assert_eq!(report_now_findings(&text).as_deref(), Some(&found[..]));
    }
}
