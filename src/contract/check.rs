//! The checker: an envelope against a contract, with the project's files as the ground truth.
//!
//! This file holds the context, the entry points and the signal and section rules; the jobs live
//! beside it: `fields` checks the frontmatter fields (ids, timestamp, message type, the contract's
//! own fields), `evidence` verifies Evidence references and Excerpts against the cited files,
//! `paths` checks the file paths an answer lists (`named_paths: exist`), `placeholders` finds the
//! answer template's `<placeholders>` left unfilled.

mod evidence;
pub(crate) use evidence::quoted_citation;
mod fields;
mod paths;
mod placeholders;

pub use evidence::has_word;
pub(crate) use evidence::narrowings;
use evidence::{check_evidence, stating_line};
pub(crate) use evidence::{most_stating, words};

pub(crate) use evidence::{CUT_DOWN, PART_FOUND, RELOCATED, SHORTENED};
use fields::check_fields;
pub use fields::{is_date, is_token, parse_message_id};
use paths::check_named_paths;
pub(crate) use paths::{same_name_files, similar_files};
use placeholders::check_placeholders;
pub(crate) use placeholders::path_item;

use super::envelope::{Citation, Envelope};
use super::files::FileCache;
use super::report::Report;
use super::rule::{sort, Rule};
use super::spec::{Contract, EvidencePolicy, NamedPaths};
use crate::problem::{locate, Problem};
use crate::project::Project;
use std::ops::Range;

/// What the checker knows beyond the text: where the project is, which ids to expect, and the
/// cache of cited files shared by a whole run.
#[derive(Debug, Clone, Copy)]
pub struct CheckContext<'a> {
    pub project: &'a Project,
    /// The correlation id the caller expects; the envelope's must be equal when `Some`.
    pub correlation_id: Option<&'a str>,
    /// The message id the runtime allocated; the envelope's must be equal when `Some`.
    pub message_id: Option<&'a str>,
    /// Cited files, each read at most once per run.
    pub files: &'a FileCache,
    /// The instructions the answer was asked with (the agent's rendered prompt), when known: a
    /// `<placeholder>` of its answer template left in the answer is a violation.
    pub template: Option<&'a str>,
}

impl<'a> CheckContext<'a> {
    /// A context that expects no particular ids.
    pub fn new(project: &'a Project, files: &'a FileCache) -> Self {
        CheckContext {
            project,
            correlation_id: None,
            message_id: None,
            files,
            template: None,
        }
    }

    pub fn with_correlation_id(mut self, id: &'a str) -> Self {
        self.correlation_id = Some(id);
        self
    }

    pub fn with_message_id(mut self, id: &'a str) -> Self {
        self.message_id = Some(id);
        self
    }

    pub fn with_template(mut self, prompt: &'a str) -> Self {
        self.template = Some(prompt);
        self
    }
}

/// Checks `text` against `contract`: parse, then every rule. Never panics.
pub fn check(text: &str, contract: &Contract, ctx: &CheckContext) -> Report {
    if contract.format == super::spec::ContractFormat::Json {
        return super::json::check_json(text, contract, ctx.project);
    }
    let env = Envelope::parse_lenient(text);
    check_envelope(text, &env, contract, ctx)
}

/// Checks an envelope already parsed from `text` (so a caller that needed the parse first, e.g.
/// to pick the contract by `message_type`, does not parse twice).
pub fn check_envelope(
    text: &str,
    env: &Envelope,
    contract: &Contract,
    ctx: &CheckContext,
) -> Report {
    let mut own = Vec::new();
    let yaml_ok = env.frontmatter.is_some()
        && !env
            .problems
            .iter()
            .any(|p| p.code == Rule::FrontmatterYaml.code());
    if yaml_ok {
        check_fields(env, contract, ctx, &mut own);
    }
    check_evidence(env, contract, ctx, &mut own);
    if env.answer.is_some() {
        check_signals(env, contract, ctx, &mut own);
        check_sections(env, contract, &mut own);
        if contract.named_paths == NamedPaths::Exist {
            check_named_paths(env, ctx, &mut own);
        }
        if let Some(template) = ctx.template {
            check_placeholders(text, env, template, &mut own);
        }
    }
    locate(text, &mut own);
    let mut violations = env.problems.clone();
    violations.extend(own);
    sort(&mut violations);
    Report {
        contract: contract.name.clone(),
        violations,
        json: false,
    }
}

/// Re-verifies only the Evidence + Excerpt pairs of any markdown `text` (a plan or research
/// report under `thoughts/`, which is no envelope): the same rules the checker applies to
/// answers, so a citation that was true when written and went stale reads the same way.
/// Structural problems of an envelope are not reported.
pub fn verify_evidence(text: &str, ctx: &CheckContext) -> Vec<Problem> {
    verify_document(text, ctx).violations
}

/// What [`verify_document`] found: the problems, and every path the document cites (so a caller
/// that caches the result knows which files invalidate it).
#[derive(Debug, Clone, Default)]
pub struct DocumentCheck {
    pub violations: Vec<Problem>,
    pub cited: Vec<String>,
}

/// The Evidence items of `text` as a reader sees them: an agent's envelope answer is read
/// through its tags (what `<answer>` holds), any other markdown document (a report, a plan) is
/// walked whole. Walked whole, an envelope would hide every item that follows `<answer>` on the
/// next line: CommonMark reads such a tag as an HTML block that runs to the next blank line.
pub(crate) fn evidence_view(text: &str) -> Envelope {
    let env = Envelope::parse_lenient(text);
    if env.answer.is_some() {
        env
    } else {
        crate::contract::envelope::parse_document(text)
    }
}

/// [`verify_evidence`], also returning the cited paths.
pub fn verify_document(text: &str, ctx: &CheckContext) -> DocumentCheck {
    let env = evidence_view(text);
    let mut cited: Vec<String> = env
        .evidence
        .iter()
        .flat_map(|e| e.references.iter().map(|r| r.path.clone()))
        .collect();
    cited.sort();
    cited.dedup();
    let mut out: Vec<Problem> = env
        .problems
        .iter()
        .filter(|p| {
            let code = p.code.as_ref();
            // `envelope/too-large` too: past 1,000 Evidence items the rest go unchecked, and a
            // document must be told so as an answer is.
            code.starts_with("evidence/")
                || code.starts_with("excerpt/")
                || code == Rule::TooLarge.code()
        })
        .cloned()
        .collect();
    let mut own = Vec::new();
    check_evidence(&env, &Contract::envelope(), ctx, &mut own);
    locate(text, &mut own);
    out.extend(own);
    sort(&mut out);
    DocumentCheck {
        violations: out,
        cited,
    }
}

/// How many Evidence items an answer holds, and how many of them hold up: a reference, an
/// excerpt, and no evidence or excerpt problem inside the item (`switchboard eval`'s
/// "evidence verified").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EvidenceTally {
    pub items: u64,
    pub verified: u64,
}

/// [`EvidenceTally`] of any markdown `text`, by the rules [`verify_evidence`] applies.
pub fn tally_evidence(text: &str, ctx: &CheckContext) -> EvidenceTally {
    let env = evidence_view(text);
    EvidenceTally {
        items: env.evidence.len() as u64,
        verified: verified_in(&env, text, ctx).len() as u64,
    }
}

/// An Evidence item of a text that holds up (see [`EvidenceTally`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedItem {
    /// The text of the last heading before the item, if any.
    pub title: Option<String>,
    /// From the item's `**Evidence**` label to the end of its excerpt's code block.
    pub span: Range<usize>,
    /// The lines it cites, as written.
    pub references: Vec<Citation>,
}

/// The Evidence items of any markdown `text` that hold up, by the rules [`verify_evidence`]
/// applies, each set of cited lines once: an item that cites the same lines as one before it
/// is no new evidence. Qwen2.5-Coder-1.5B, as thoughts-analyzer under a grammar, wrote one
/// Decision three times over, word for word; counted three times it met `evidence_goal: 3`,
/// and the report built on it held one item.
pub fn verified_items(text: &str, ctx: &CheckContext) -> Vec<VerifiedItem> {
    let env = evidence_view(text);
    verified_in(&env, text, ctx)
}

fn verified_in(env: &Envelope, text: &str, ctx: &CheckContext) -> Vec<VerifiedItem> {
    if env.evidence.is_empty() {
        return Vec::new();
    }
    let problems = verify_document(text, ctx).violations;
    let mut out = Vec::new();
    for item in &env.evidence {
        let end = item
            .excerpt
            .as_ref()
            .and_then(|e| e.block.as_ref())
            .map(|b| b.span.end);
        let Some(end) = end else { continue };
        let span = item.label.start..end;
        let clean = !problems.iter().any(|p| {
            p.span
                .as_ref()
                .is_some_and(|s| s.start >= span.start && s.start < span.end)
        });
        let cites = |o: &VerifiedItem| {
            o.references.len() == item.references.len()
                && o.references.iter().zip(&item.references).all(|(a, b)| {
                    (a.path.as_str(), a.first, a.last) == (b.path.as_str(), b.first, b.last)
                })
        };
        if clean && !item.references.is_empty() && !out.iter().any(cites) {
            let title = env
                .headings
                .iter()
                .rfind(|h| h.span.start < span.start)
                .map(|h| h.text.clone());
            out.push(VerifiedItem {
                title,
                span,
                references: item.references.clone(),
            });
        }
    }
    out
}

/// One finding of an answer as its reviewer reads it: an Evidence item, numbered from 1 in the
/// order the answer gives them, with what the answer says of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The text of the last heading before the item (`Decision: …`), if any.
    pub title: Option<String>,
    /// What the answer claims with it: from that heading (or the end of the item before) to
    /// the item's `**Evidence**` label, heading text included.
    pub said: String,
    /// The item's excerpt, as quoted (empty when it has none).
    pub excerpt: String,
    /// The files it cites, as written.
    pub cites: Vec<String>,
}

/// The findings of any markdown `text`, each Evidence item once, in order (see [`Finding`]).
/// A validator's objection names one by its number (`runtime::validator`), and the runtime
/// weighs the words it objects to against that finding's own excerpt.
pub fn findings(text: &str) -> Vec<Finding> {
    let env = evidence_view(text);
    let mut out = Vec::new();
    let mut previous_end = env
        .answer
        .as_ref()
        .map_or(env.body.start, |a| a.inner.start);
    for item in &env.evidence {
        let heading = env
            .headings
            .iter()
            .rfind(|h| h.span.start < item.label.start);
        // A heading before the item before belongs to that one: this item's claim starts where
        // that item ended.
        let from = match heading {
            Some(h) if h.span.start >= previous_end => h.span.start,
            _ => previous_end,
        };
        let said = text
            .get(from..item.label.start)
            .unwrap_or("")
            .trim()
            .to_string();
        let block = item.excerpt.as_ref().and_then(|e| e.block.as_ref());
        previous_end = block.map_or(item.label.end, |b| b.span.end);
        out.push(Finding {
            title: heading.map(|h| h.text.clone()),
            said,
            excerpt: block.map(|b| b.content.clone()).unwrap_or_default(),
            cites: item.references.iter().map(|r| r.path.clone()).collect(),
        });
    }
    out
}

/// Test helper: panics with the rendered report unless `text` conforms to `contract`.
#[track_caller]
pub fn assert_conforms(text: &str, contract: &Contract, ctx: &CheckContext) {
    let report = check(text, contract, ctx);
    if !report.is_conformant() {
        panic!(
            "the answer does not conform to the `{}` contract:\n\n{}",
            contract.name,
            report.render("<answer>", text, false)
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Signals and sections

/// `Decision: …` (case-insensitive name, then a colon).
fn signal_name<'c>(text: &str, names: &'c [String]) -> Option<&'c str> {
    names.iter().map(String::as_str).find(|name| {
        text.get(..name.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(name))
            && text[name.len()..].trim_start().starts_with(':')
    })
}

/// Items looked up in their sources (see `stating_line`) per answer: those without Evidence, to
/// offer a line, and those with, to find one their excerpt does not say (`stated_elsewhere`).
const MAX_OFFERS: usize = 5;

fn check_signals(env: &Envelope, contract: &Contract, ctx: &CheckContext, out: &mut Vec<Problem>) {
    if contract.evidence != EvidencePolicy::Required || contract.signal_headings.is_empty() {
        return;
    }
    let answer_end = env.answer.as_ref().map_or(usize::MAX, |a| a.inner.end);
    // (span, heading level or None for a bold label, title, what it states after `Name:`)
    let mut signals: Vec<(Range<usize>, Option<u8>, &str, &str)> = Vec::new();
    for h in &env.headings {
        if let Some(name) = signal_name(&h.text, &contract.signal_headings) {
            let statement = h.text[name.len()..].trim_start().trim_start_matches(':');
            signals.push((h.span.clone(), Some(h.level), &h.text, statement));
        }
    }
    for l in &env.labels {
        if contract
            .signal_headings
            .iter()
            .any(|n| n.eq_ignore_ascii_case(&l.name))
        {
            // A bold label's statement is not kept: it has no title words to look for.
            signals.push((l.span.clone(), None, &l.name, ""));
        }
    }
    signals.sort_by_key(|s| s.0.start);
    let mut offered = 0;
    // The lines `stated_elsewhere` has pointed an item at so far (`path:N-N`).
    let mut stated: Vec<String> = Vec::new();
    for (i, &(ref span, level, title, statement)) in signals.iter().enumerate() {
        let next_signal = signals.get(i + 1).map_or(answer_end, |s| s.0.start);
        let next_heading = env
            .headings
            .iter()
            .filter(|h| h.span.start > span.start && level.is_none_or(|l| h.level <= l))
            .map(|h| h.span.start)
            .next()
            .unwrap_or(answer_end);
        let end = next_signal.min(next_heading);
        let items: Vec<_> = env
            .evidence
            .iter()
            .filter(|e| e.label.start > span.start && e.label.start < end)
            .collect();
        let has_evidence = !items.is_empty();
        if has_evidence && cites_only_frontmatter(&items, ctx) {
            // Qwen2.5-Coder-1.5B cited lines 1-6 of a decision record (its frontmatter) for the
            // record's decision; the validator then rejected the whole analysis.
            let v = Rule::SignalFrontmatterOnly.problem(
                span.clone(),
                format!(
                    "`{title}` cites only the document's frontmatter, which holds its metadata \
                     (date, status, topic), not what it decided"
                ),
            );
            out.push(match stating_line(env, ctx, statement) {
                Some((from, line)) => v
                    .with_help(format!(
                        "cite the lines of the document's body that state the item; `{from}` \
                         shares the most words with the title: cite it if it states the item"
                    ))
                    .with_actual(from, line),
                None => v.with_help(
                    "cite the lines of the document's body, after its closing `---`, that \
                     state the item",
                ),
            });
        }
        if has_evidence && !cites_only_frontmatter(&items, ctx) {
            for item in &items {
                // Each look reads the sources line by line, as an offer does: a few per answer.
                if offered >= MAX_OFFERS {
                    break;
                }
                if let Some(v) = stated_elsewhere(env, ctx, item, title, statement, &mut stated) {
                    out.push(v);
                }
                offered += 1;
            }
        }
        // `#### Constraint: None` says there is no such item: there is nothing to cite. So does
        // `No constraints in this document.` (Qwen2.5-Coder-1.5B's way of saying it).
        let none = || {
            let said = statement.trim().trim_end_matches('.').to_ascii_lowercase();
            matches!(said.as_str(), "none" | "n/a" | "nothing" | "-")
                || ["none ", "no constraint", "no decision", "no spec"]
                    .iter()
                    .any(|p| said.starts_with(p))
        };
        if !has_evidence && !none() {
            let v = Rule::SignalMissingEvidence.problem(
                span.clone(),
                format!("`{title}` has no Evidence of its own"),
            );
            // Offers are looked for on the first few items only: each reads the sources line
            // by line, and an answer of a hundred bare items must not cost a hundred scans.
            offered += 1;
            let offer = (offered <= MAX_OFFERS)
                .then(|| stating_line(env, ctx, statement))
                .flatten();
            out.push(match offer {
                Some((from, line)) => v
                    .with_help(format!(
                        "add `- **Evidence**: `path:N-M`` and `- **Excerpt**:` with the cited \
                         lines under it, or drop the item; `{from}` shares the most words with \
                         the title: cite it if it states the item"
                    ))
                    .with_actual(from, line),
                None => v.with_help(
                    "add `- **Evidence**: `path:N-M`` and `- **Excerpt**:` with the cited lines \
                     under it, or drop the item",
                ),
            });
        }
    }
}

/// Opens the help of a `contract/signal-stated-elsewhere`; its attached line is the one that
/// states the item. [`crate::contract::fix`] cites it there.
pub(crate) const STATED_AT: &str = "the line that states it is";

/// Words an item's statement needs before its excerpt is weighed against it: a title of two or
/// three words shares them with too many lines to point at one.
pub(crate) const MIN_STATEMENT_WORDS: usize = 4;

/// A problem for `item` (of the signal `title`, stating `statement`) when its excerpt does not
/// say what the statement says and one line of the answer's sources does: that line shares at
/// least two more of the statement's words than the excerpt, and at least 60 % of them
/// ([`stating_line`]). Qwen2.5-Coder-1.5B titled an item with the decision record's own
/// title, word for word, and quoted the header row of the record's options table for it; the excerpt verified, and the evidence-validator rejected the whole analysis because
/// the lines did not carry the decision. The line that states it is attached, so the runtime
/// cites it (`contract::fix`); the model's statement is kept as written.
///
/// Only one item is pointed at each line (`stated` holds those pointed at so far), and none at
/// a line another item cites: the same
/// model gave three items the record's title and quoted three different real lines under
/// them; all three were moved to the title's line, and the answer kept one verified item of
/// three.
fn stated_elsewhere(
    env: &Envelope,
    ctx: &CheckContext,
    item: &crate::contract::envelope::EvidenceItem,
    title: &str,
    statement: &str,
    stated: &mut Vec<String>,
) -> Option<Problem> {
    let want = words(statement);
    if want.len() < MIN_STATEMENT_WORDS {
        return None;
    }
    let [_] = item.references.as_slice() else {
        return None;
    };
    let block = item.excerpt.as_ref()?.block.as_ref()?;
    let quoted = words(&block.content).intersection(&want).count();
    // Whether the line lies in the cited range does not matter: an excerpt that is a run of
    // the cited lines and holds that line has its words. The 1.5B analyzer cited 8-34 for the
    // record's title (line 8) and quoted lines of its own making.
    let (from, line) = stating_line(env, ctx, statement)?;
    // Another item already cites that line: it is that item's.
    let cited_by_another = from.rsplit_once(':').is_some_and(|(path, range)| {
        let n: usize = range
            .split('-')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        env.evidence
            .iter()
            .filter(|e| !std::ptr::eq(*e, item))
            .flat_map(|e| e.references.iter())
            .any(|r| r.path == path && r.first <= n && n <= r.last)
    });
    if cited_by_another || stated.contains(&from) {
        return None;
    }
    let shared = words(&line).intersection(&want).count();
    if shared < quoted + 2 {
        return None;
    }
    stated.push(from.clone());
    Some(
        Rule::SignalStatedElsewhere
            .problem(
                block.span.clone(),
                format!(
                    "the excerpt of `{title}` does not say it: it holds {quoted} of the title's \
                     {} words, `{from}` holds {shared}",
                    want.len()
                ),
            )
            .with_help(format!(
                "{STATED_AT} `{from}`: cite `{from}` and quote that line, or reword the title to \
                 what your excerpt says"
            ))
            .with_actual(from, line),
    )
}

/// Whether every reference of `items` lies inside its file's YAML frontmatter (and there is at
/// least one): such Evidence shows the document's metadata, not the item it is given for.
fn cites_only_frontmatter(
    items: &[&crate::contract::envelope::EvidenceItem],
    ctx: &CheckContext,
) -> bool {
    let mut refs = items.iter().flat_map(|e| e.references.iter()).peekable();
    refs.peek().is_some()
        && refs.all(|r| {
            ctx.files
                .get(ctx.project, &r.path)
                .ok()
                .and_then(|f| f.frontmatter_end())
                .is_some_and(|end| r.last <= end)
        })
}

fn check_sections(env: &Envelope, contract: &Contract, out: &mut Vec<Problem>) {
    let Some(answer) = &env.answer else { return };
    for section in &contract.required_sections {
        let found = env.headings.iter().any(|h| {
            h.text.eq_ignore_ascii_case(section)
                || (h
                    .text
                    .get(..section.len())
                    .is_some_and(|head| head.eq_ignore_ascii_case(section))
                    && h.text[section.len()..].trim_start().starts_with(':'))
        });
        if !found {
            out.push(
                Rule::SectionMissing
                    .problem(
                        answer.open.clone(),
                        format!("the answer has no `{section}` section"),
                    )
                    .with_help(format!(
                    "add a heading such as `### {section}` (write `None.` under it if it is empty)"
                )),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unreadable_cited_files_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let big = std::fs::File::create(dir.path().join("big.log")).unwrap();
        big.set_len(super::super::files::MAX_CITED_FILE_BYTES + 1)
            .unwrap();
        let project = Project::open(dir.path()).unwrap();
        let files = FileCache::new();
        let ctx = CheckContext::new(&project, &files);
        let text = "---\nmessage_id: a-2026-01-19-001\ncorrelation_id: c\n\
            timestamp: 2026-01-19T10:00:00Z\nmessage_type: X\n---\n<thinking>\nt\n</thinking>\n\
            <answer>\n- **Evidence**: `big.log:1`\n- **Excerpt**:\n  ```\n  x\n  ```\n</answer>\n";
        let report = check(text, &Contract::envelope(), &ctx);
        let codes: Vec<_> = report.violations.iter().map(|v| v.code.as_ref()).collect();
        assert_eq!(codes, ["evidence/file-unreadable"]);
        assert_eq!(report.violations[0].line, 11);
    }

    #[test]
    fn evidence_tally_counts_items_and_those_that_hold_up() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\nthree\n").unwrap();
        let project = Project::open(dir.path()).unwrap();
        let files = FileCache::new();
        let ctx = CheckContext::new(&project, &files);
        let text = "- **Evidence**: `a.txt:2`\n- **Excerpt**:\n  ```\n  two\n  ```\n\
            - **Evidence**: `a.txt:1-2`\n- **Excerpt**:\n  ```\n  three\n  ```\n\
            - **Evidence**: `gone.txt:1`\n- **Excerpt**:\n  ```\n  x\n  ```\n\
            - **Evidence**: `a.txt:3`\n";
        let t = tally_evidence(text, &ctx);
        assert_eq!(
            t,
            EvidenceTally {
                items: 4,
                verified: 1
            }
        );
        // An agent's envelope answer is read through its tags: `<answer>` followed at once by an
        // item (no blank line) would otherwise open an HTML block that hides it.
        let answer = "---\nmessage_id: a-2026-01-19-001\ncorrelation_id: c\n\
            timestamp: 2026-01-19T10:00:00Z\nmessage_type: X\n---\n<thinking>\nt\n</thinking>\n\
            <answer>\n### Decision\n- **Evidence**: `a.txt:2`\n- **Excerpt**:\n  ```\n  two\n  ```\n\
            </answer>\n";
        assert_eq!(
            tally_evidence(answer, &ctx),
            EvidenceTally {
                items: 1,
                verified: 1
            }
        );
        let items = verified_items(answer, &ctx);
        assert_eq!(items.len(), 1);
        assert_eq!(items[0].title.as_deref(), Some("Decision"));
        assert_eq!(items[0].references[0].path, "a.txt");
        // The same lines cited again, under another title, are no second item; other lines are.
        let item = "- **Evidence**: `a.txt:2`\n- **Excerpt**:\n  ```\n  two\n  ```\n";
        let same = item.replace(":2`", ":2-2`");
        let other = item.replace(":2`", ":3`").replace("two", "three");
        let again = answer.replace(
            "</answer>",
            &format!("### Spec\n{item}### Again\n{same}### Other\n{other}</answer>"),
        );
        let tally = tally_evidence(&again, &ctx);
        assert_eq!((tally.items, tally.verified), (4, 2), "{again}");
    }

    #[test]
    fn named_paths_that_do_not_exist_are_named_in_the_violation() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("thoughts/d")).unwrap();
        std::fs::write(dir.path().join("thoughts/d/real.md"), "x\n").unwrap();
        let project = Project::open(dir.path()).unwrap();
        let files = FileCache::new();
        let ctx = CheckContext::new(&project, &files);
        let text = "---\nmessage_id: a-2026-01-19-001\ncorrelation_id: c\n\
            timestamp: 2026-01-19T10:00:00Z\nmessage_type: X\n---\n<thinking>\n\
            `thoughts/d/tried.md` was not there\n</thinking>\n<answer>\n\
            - `thoughts/d/real.md` — Real\n- `thoughts/d/invented.md` — Made up\n\
            - `../outside/x.md`, `thoughts/**/*.md`, `<file>.md`, `and/or`\n\
            Suggested for analysis: `thoughts/d/real.md:1`\n</answer>\n";
        let mut contract = Contract::envelope();
        let codes = |c: &Contract| -> Vec<(String, usize)> {
            check(text, c, &ctx)
                .violations
                .iter()
                .map(|v| (v.code.to_string(), v.line))
                .collect()
        };
        assert!(codes(&contract).is_empty(), "unchecked by default");
        contract.named_paths = NamedPaths::Exist;
        assert_eq!(
            codes(&contract),
            [
                ("contract/named-path-missing".to_string(), 12),
                ("contract/named-path-missing".to_string(), 13),
            ]
        );
        let report = check(text, &contract, &ctx);
        assert!(report.violations[0]
            .message
            .contains("`thoughts/d/invented.md` does not exist"));
        assert!(
            report.violations[1].message.contains("../outside/x.md"),
            "{}",
            report.violations[1].message
        );
    }

    #[test]
    fn an_item_without_evidence_is_offered_the_line_of_its_source_that_states_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("d")).unwrap();
        let doc = "---\nstatus: accepted\n---\n# Decision: parse YAML with serde-saphyr\n\n\
                   We parse agent frontmatter with serde-saphyr, not serde_yaml.\n";
        std::fs::write(dir.path().join("d/yaml.md"), doc).unwrap();
        let project = Project::open(dir.path()).unwrap();
        let files = FileCache::new();
        let ctx = CheckContext::new(&project, &files);
        let answer = |item: &str| {
            format!(
                "---\nmessage_id: a-2026-01-19-001\ncorrelation_id: c\n\
                 timestamp: 2026-01-19T10:00:00Z\nmessage_type: DOCUMENT_ANALYSIS_RESPONSE\n\
                 source_document: d/yaml.md\ndocument_date: 2026-11-02\n\
                 document_status: accepted\nreliability: High\n---\n<thinking>\nt\n</thinking>\n\
                 <answer>\n## Analysis: yaml.md\n\n### Metadata\n- **Date**: 2026-11-02\n\n\
                 ### Extracted Signal\n\n#### Decision: Parse agent frontmatter with serde-saphyr\n\
                 {item}\n#### Constraint: None\n#### Constraint: No constraints in this document.\n\n\
                 ### Verification Notes\n- None.\n</answer>\n"
            )
        };
        let contract = Contract::document_analysis();
        let report = check(&answer(""), &contract, &ctx);
        let offers: Vec<_> = report
            .violations
            .iter()
            .filter(|v| v.code == "contract/signal-missing-evidence")
            .map(|v| v.actual.clone().map(|a| (a.from, a.lines)))
            .collect();
        assert_eq!(
            offers,
            [Some((
                "d/yaml.md:6-6".to_string(),
                "We parse agent frontmatter with serde-saphyr, not serde_yaml.".to_string()
            )),],
            "`Constraint: None` is no item, so it owes no Evidence"
        );
        // Copied as offered, the item has its evidence and it verifies.
        let item = "- **Evidence**: `d/yaml.md:6-6`\n- **Excerpt**:\n  ```\n  \
                    We parse agent frontmatter with serde-saphyr, not serde_yaml.\n  ```\n";
        let codes: Vec<_> = check(&answer(item), &contract, &ctx)
            .violations
            .iter()
            .map(|v| v.code.to_string())
            .collect();
        assert!(codes.is_empty(), "{codes:?}");
    }

    #[test]
    fn an_item_citing_only_the_frontmatter_is_sent_to_the_body_line_that_states_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("d")).unwrap();
        let doc = "---\nstatus: accepted\ntopic: \"Which YAML library parses frontmatter\"\n---\n\
                   # Decision: parse YAML with serde-saphyr\n\n\
                   We parse agent frontmatter with serde-saphyr, not serde_yaml.\n";
        std::fs::write(dir.path().join("d/yaml.md"), doc).unwrap();
        let project = Project::open(dir.path()).unwrap();
        let files = FileCache::new();
        let ctx = CheckContext::new(&project, &files);
        let answer = |range: &str, excerpt: &str| {
            format!(
                "---\nmessage_id: a-2026-01-19-001\ncorrelation_id: c\n\
                 timestamp: 2026-01-19T10:00:00Z\nmessage_type: DOCUMENT_ANALYSIS_RESPONSE\n\
                 source_document: d/yaml.md\ndocument_date: 2026-11-02\n\
                 document_status: accepted\nreliability: High\n---\n<thinking>\nt\n</thinking>\n\
                 <answer>\n## Analysis: yaml.md\n\n### Extracted Signal\n\n\
                 #### Decision: Parse agent frontmatter with serde-saphyr\n\
                 - **Evidence**: `d/yaml.md:{range}`\n- **Excerpt**:\n  ```\n{excerpt}  ```\n\n\
                 ### Verification Notes\n- None.\n</answer>\n"
            )
        };
        let contract = Contract::document_analysis();
        let report = check(
            &answer("1-4", "  ---\n  status: accepted\n  topic: \"Which YAML library parses frontmatter\"\n  ---\n"),
            &contract,
            &ctx,
        );
        let found: Vec<_> = report
            .violations
            .iter()
            .map(|v| (v.code.to_string(), v.actual.clone().map(|a| a.from)))
            .collect();
        assert_eq!(
            found,
            [(
                "contract/signal-frontmatter-only".to_string(),
                Some("d/yaml.md:7-7".to_string())
            )],
            "the excerpt itself matches; the offer is a body line, never the topic line"
        );
        // Evidence reaching into the body is not frontmatter-only.
        let body = check(
            &answer(
                "7-7",
                "  We parse agent frontmatter with serde-saphyr, not serde_yaml.\n",
            ),
            &contract,
            &ctx,
        );
        assert!(body.violations.is_empty(), "{:?}", body.violations);
    }

    #[test]
    fn signal_names() {
        let names = vec!["Decision".to_string(), "Spec".to_string()];
        assert_eq!(signal_name("decision : x", &names), Some("Decision"));
        assert_eq!(signal_name("Specification: x", &names), None);
        assert_eq!(signal_name("Déc", &names), None);
    }
}
