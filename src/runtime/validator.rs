//! Worker/validator pairs: an agent that declares `validator: <agent>` has each answer that
//! passed its contract reviewed by that agent before its caller sees it.
//!
//! The validator gets the worker's task and answer (joined by [`VALIDATION_MARK`]) and answers
//! with a verdict, JSON validated like every other runtime-read JSON:
//! `{"verdict": "accept" | "revise" | "reject", "feedback": "…"}`.
//!
//! - `accept`: the answer goes to the caller;
//! - `revise`: the feedback goes back to the worker as a private message (its caller never sees
//!   it) and the worker answers again, at most as many times as its repair turns;
//! - `reject`, a validator that gives no usable verdict, or revisions that never end: the worker's
//!   hop is BLOCKED (tier 3), with the feedback as the reason.
//!
//! The hop loop runs the validator's hop (it owns `run_hop` and the semaphore permit); this
//! module builds its request and judges its result, so neither imports the other back.

use serde::Deserialize;
use serde_json::json;

use super::handoff::{HopRequest, HopResult, ParentLink};
use super::read_first;
use super::status::HopStatus;
use crate::contract::{
    findings, schema::compile, tally_evidence, verified_items, words, CheckContext, FileCache,
    Finding, SchemaSource,
};
use crate::model::VALIDATION_MARK;
use crate::project::Project;
use std::collections::BTreeSet;

/// What the hop loop does after a review.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Review {
    Accept,
    /// Send this message to the worker and let it answer again.
    Revise(String),
    /// Fail closed: the reason and what a person must do.
    Block {
        reason: String,
        action: String,
    },
}

/// One verdict as the validator wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Verdict {
    pub verdict: String,
    #[serde(default)]
    pub feedback: String,
    /// The finding a `revise` or `reject` objects to, numbered from 1 as the runtime's note
    /// lists them ([`checked_note`]). Absent for a validator whose answers have no findings to
    /// name; an `accept` gives 0.
    #[serde(default)]
    pub finding: Option<u64>,
    /// The words of that finding its excerpt does not support, as the validator quotes them.
    #[serde(default)]
    pub claim: Option<String>,
}

/// The schema a verdict must satisfy.
pub fn verdict_schema() -> serde_json::Value {
    json!({
        "type": "object",
        "required": ["verdict"],
        "properties": {
            "verdict": {"enum": ["accept", "revise", "reject"]},
            "finding": {"type": "integer", "minimum": 0},
            "claim": {"type": "string"},
            "feedback": {"type": "string"}
        },
        "additionalProperties": false,
        "if": {"properties": {"verdict": {"enum": ["revise", "reject"]}}},
        "then": {"required": ["feedback"], "properties": {"feedback": {"minLength": 1}}}
    })
}

/// Why a validator's answer gives no usable verdict. The hop loop quotes it in the worker's
/// BLOCKED reason, so each message says what was wrong with the answer.
#[derive(Debug, thiserror::Error)]
pub enum VerdictError {
    #[error("its answer holds no JSON object")]
    NoObject,
    #[error("not JSON: {0}")]
    NotJson(#[source] serde_json::Error),
    /// The built-in verdict schema did not compile (a defect of ours, not the validator's).
    #[error(transparent)]
    Schema(#[from] crate::contract::schema::SchemaError),
    #[error("the verdict breaks its schema: {}", .0.join("; "))]
    BreaksSchema(Vec<String>),
    #[error("{0}")]
    Shape(#[source] serde_json::Error),
}

/// Reads a verdict out of the validator's answer (a JSON object, possibly with prose around).
pub fn parse_verdict(text: &str, project: &Project) -> Result<Verdict, VerdictError> {
    let (start, end) = match (text.find('{'), text.rfind('}')) {
        (Some(s), Some(e)) if s < e => (s, e),
        _ => return Err(VerdictError::NoObject),
    };
    let value: serde_json::Value =
        serde_json::from_str(&text[start..=end]).map_err(VerdictError::NotJson)?;
    let validator = compile(&SchemaSource::Inline(verdict_schema()), project)?;
    let problems: Vec<String> = validator
        .iter_errors(&value)
        .map(|e| e.to_string())
        .collect();
    if !problems.is_empty() {
        return Err(VerdictError::BreaksSchema(problems));
    }
    serde_json::from_value(value).map_err(VerdictError::Shape)
}

/// Opens the runtime's note after the answer under review (see [`checked_note`]).
pub const CHECKED_HEADING: &str = "[runtime] Checked before your review";

/// What the runtime has proved about `answer`'s Evidence, for the validator to build on: how
/// many items verify (each excerpt equals the lines it cites) and, for each cited range, whether
/// it is in a document `task` names. `None` when the answer has no Evidence item.
///
/// Why: measured with a 1.5B model as the evidence-validator (BENCHMARKS.md, "Second evening"),
/// it rejected an analysis for "not citing the document it names" when its one Evidence item
/// cited exactly that document. Reading citations is the checker's job and it never errs at
/// it; stating its result leaves the model the judgment only it can make (does each finding say
/// what its lines say?). The note names paths without backticks or `:N`, so nothing in it reads
/// as a citation of the answer's own.
pub(crate) fn checked_note(task: &str, answer: &str, project: &Project) -> Option<String> {
    let files = FileCache::new();
    let ctx = CheckContext::new(project, &files);
    let items = tally_evidence(answer, &ctx).items;
    if items == 0 {
        return None;
    }
    let verified = verified_items(answer, &ctx);
    let named = named_files(task, project);
    let mut out = format!(
        "\n\n{CHECKED_HEADING} (facts; do not check them again):\n- {} of {items} Evidence \
         item(s) verify: each excerpt is exactly the lines it cites.\n",
        verified.len()
    );
    let mut seen = std::collections::HashSet::new();
    for c in verified.iter().flat_map(|v| &v.references) {
        let path = as_named(&c.path, project);
        let line = format!("{path} lines {}-{}", c.first, c.last);
        if !seen.insert(line.clone()) {
            continue;
        }
        let whose = match (named.is_empty(), named.contains(&path)) {
            (true, _) => "",
            (false, true) => ": the document the task names",
            (false, false) => ": a file the task does NOT name",
        };
        out.push_str(&format!("- cited: {line}{whose}\n"));
    }
    out.push_str("- findings, by the number an objection gives as its finding:");
    for (n, f) in findings(answer).iter().enumerate() {
        let title = f.title.as_deref().unwrap_or("(no heading)");
        out.push_str(&format!(" {}. {title};", n + 1));
    }
    out.pop();
    out.push_str(".\n");
    Some(out)
}

/// The project files `task` names, relative to the root.
fn named_files(task: &str, project: &Project) -> Vec<String> {
    read_first::named_files(task, project, usize::MAX)
}

/// A cited `path` as [`named_files`] spells it (relative to the root), or as written when it
/// does not resolve.
fn as_named(path: &str, project: &Project) -> String {
    project
        .resolve_visible(path)
        .map_or_else(|_| path.to_string(), |p| project.relative(&p))
}

/// Whether `set` holds `word`, or a word one of the two begins with (4 letters at least):
/// `parser` holds `parse`, `decisions` holds `decision`.
fn holds(set: &BTreeSet<String>, word: &str) -> bool {
    set.contains(word)
        || set.iter().any(|w| {
            let (short, long) = if w.len() <= word.len() {
                (w.as_str(), word)
            } else {
                (word, w.as_str())
            };
            short.chars().count() >= 4 && long.starts_with(short)
        })
}

/// Why the runtime does not follow a `revise` or `reject` that names one of the findings `all`,
/// or `None` when the objection stands, or names no finding (a validator of answers without
/// Evidence has none to name).
///
/// An objection is to what a finding says beyond its excerpt, so it must quote words of that
/// finding its excerpt does not hold. Measured on Qwen2.5-Coder-1.5B as the evidence-validator
/// (2026-12-03, thoughts/shared/decisions/2026-12-03-an-objection-names-its-finding.md): it
/// rejected four answers of four, a clean one among them, with "introduces new information that
/// is not supported by the given excerpts" and no finding named; as a yes/no judge per finding
/// it marked titles false over excerpts that state them word for word. The words are weighed
/// by the runtime, which never errs at it; the model still chooses which finding to doubt.
/// A finding that cites a file the task does not name is a drift the runtime knows of: an
/// objection to it stands whatever it quotes.
fn unfounded(verdict: &Verdict, task: &str, all: &[Finding], project: &Project) -> Option<String> {
    if !matches!(verdict.verdict.as_str(), "revise" | "reject") {
        return None;
    }
    let n = verdict.finding?;
    if all.is_empty() {
        return None;
    }
    let Some(f) = named_finding(verdict, all) else {
        return Some(format!(
            "it names finding {n}; the answer has {} (numbered from 1)",
            all.len()
        ));
    };
    let named = named_files(task, project);
    if !named.is_empty()
        && f.cites
            .iter()
            .any(|c| !named.contains(&as_named(c, project)))
    {
        return None;
    }
    let Weighed {
        objected,
        missing,
        standing,
    } = weigh(verdict, f);
    if !standing.is_empty() {
        return None;
    }
    Some(if objected == 0 {
        format!("it quotes no words of finding {n}")
    } else if missing.is_empty() {
        format!("the excerpt of finding {n} holds every word it objects to")
    } else {
        format!(
            "finding {n} does not say the words it objects to ({})",
            missing.join(", ")
        )
    })
}

/// The finding a verdict names, if the answer has it.
fn named_finding<'a>(verdict: &Verdict, all: &'a [Finding]) -> Option<&'a Finding> {
    let i = verdict.finding?.checked_sub(1)?;
    all.get(usize::try_from(i).ok()?)
}

/// An objection's words weighed against the finding it names: those of its `claim` and
/// `feedback` together that the excerpt does not hold (`missing`), and of those, the ones the
/// finding says in its title or text (`standing`), which the objection stands on. The claim
/// alone is not enough: the 1.5B validator wrote a sentence of its own as `claim` ("The excerpt
/// does not support the claim that …") and named the word it meant, `infers`, in its feedback.
struct Weighed {
    /// How many words the objection has at all.
    objected: usize,
    missing: Vec<String>,
    standing: Vec<String>,
}

fn weigh(verdict: &Verdict, f: &Finding) -> Weighed {
    let objected = words(&format!(
        "{} {}",
        verdict.claim.as_deref().unwrap_or(""),
        verdict.feedback
    ));
    let excerpt = words(&f.excerpt);
    let own = words(&format!("{} {}", f.title.as_deref().unwrap_or(""), f.said));
    let count = objected.len();
    let missing: Vec<String> = objected
        .into_iter()
        .filter(|w| !holds(&excerpt, w))
        .collect();
    let standing = missing.iter().filter(|w| holds(&own, w)).cloned().collect();
    Weighed {
        objected: count,
        missing,
        standing,
    }
}

/// The last words of the validator's task, after the answer under review: what to send. Without
/// them the review ends on the worker's own answer, and Qwen2.5-Coder-1.5B over llama-server (no
/// grammar) went on writing that answer instead of a verdict, cut off three times at its limit.
pub const VERDICT_ASK: &str = "\n\n[runtime] Your review ends with one JSON object and \
     nothing else: {\"verdict\": \"accept\" | \"revise\" | \"reject\", \"feedback\": \"one \
     sentence\"}. Do not write the answer above again.\n";

/// [`VERDICT_ASK`] for an answer with findings: an objection names the one it means and the
/// words of it that its excerpt does not support, which the runtime weighs ([`unfounded`]).
pub const FINDING_VERDICT_ASK: &str = "\n\n[runtime] Your review ends with one JSON object \
     and nothing else: {\"verdict\": \"accept\" | \"revise\" | \"reject\", \"finding\": the \
     number of the finding you object to (0 to accept), \"claim\": \"the words of that finding \
     its excerpt does not support\" (\"\" to accept), \"feedback\": \"one sentence\"}. An \
     objection whose words are not in that finding, or are in its excerpt, is overruled. Do not \
     write the answer above again.\n";

/// The validator's hop: a child of the worker's, on the worker's task and answer, followed by
/// what the runtime has checked of it ([`checked_note`]) and what to send ([`VERDICT_ASK`], or
/// [`FINDING_VERDICT_ASK`] when the answer has Evidence).
pub(crate) fn request(
    validator: &str,
    worker: &HopRequest,
    worker_agent: &str,
    worker_hop_id: &str,
    model_spec: &str,
    answer: &str,
    project: &Project,
) -> HopRequest {
    let mut chain = worker.chain.clone();
    chain.push(worker_agent.to_string());
    let note = checked_note(&worker.prompt, answer, project);
    let ask = if note.is_some() {
        FINDING_VERDICT_ASK
    } else {
        VERDICT_ASK
    };
    let note = note.unwrap_or_default();
    HopRequest {
        agent: validator.to_string(),
        prompt: format!("{}{VALIDATION_MARK}{answer}{note}{ask}", worker.prompt),
        description: format!("review the answer of `{worker_agent}`"),
        parent: Some(ParentLink {
            hop_id: worker_hop_id.to_string(),
            agent: worker_agent.to_string(),
            model: model_spec.to_string(),
        }),
        depth: worker.depth + 1,
        chain,
        hop_id: None,
    }
}

/// Whether `answer` has Evidence items and every one verifies (each excerpt is exactly the
/// lines it cites): what [`judge`] needs to take a `reject` as a `revise`.
fn all_evidence_verifies(answer: &str, project: &Project) -> bool {
    let files = FileCache::new();
    let ctx = CheckContext::new(project, &files);
    let tally = tally_evidence(answer, &ctx);
    tally.items > 0 && tally.verified == tally.items
}

/// Judges the validator's hop on the worker's `answer`: `round` is this review's number
/// (1-based), `max_rounds` the worker's repair turns. Returns the review and the verdict word
/// for the event log.
///
/// A `reject` of an answer whose every Evidence item verifies is taken as a `revise` while
/// rounds are left: its quotes are real, so what the reviewer objects to is what a finding
/// says of them, which the reviewer's own prompt sends back for revision. The 1.5B
/// evidence-validator rejected a thoughts-analyzer answer whose one title ran two headings of
/// the record together (t1, stop 58); the worker's hop ended BLOCKED, its verified items with it,
/// and the record was never cited.
///
/// A `revise` or `reject` that names a finding but objects to nothing the runtime can find
/// there ([`unfounded`]) is overruled when every Evidence item verifies: the answer goes to its
/// caller, and the reason is the third value, for the `validator.verdict` event.
pub(crate) fn judge(
    result: &HopResult,
    task: &str,
    answer: &str,
    project: &Project,
    round: u32,
    max_rounds: u32,
) -> (Review, Option<Verdict>, Option<String>) {
    let who = &result.agent;
    let fix = format!(
        "make validator `{who}` answer with {{\"verdict\": \"accept\"|\"revise\"|\"reject\", \
         \"feedback\": \"…\"}} (its prompt or model), then run the worker again"
    );
    if result.status != HopStatus::Completed {
        let why = result
            .error
            .clone()
            .unwrap_or_else(|| result.status.to_string());
        return (
            Review::Block {
                reason: format!(
                    "validator `{who}` gave no verdict ({}): {why}",
                    result.status
                ),
                action: fix,
            },
            None,
            None,
        );
    }
    let verdict = match parse_verdict(&result.answer, project) {
        Ok(v) => v,
        Err(e) => {
            return (
                Review::Block {
                    reason: format!("validator `{who}` gave no usable verdict: {e}"),
                    action: fix,
                },
                None,
                None,
            )
        }
    };
    let all = findings(answer);
    if let Some(why) = unfounded(&verdict, task, &all, project) {
        if all_evidence_verifies(answer, project) {
            return (Review::Accept, Some(verdict), Some(why));
        }
    }
    let pointed = pointed_at(&verdict, &all);
    let review = match verdict.verdict.as_str() {
        "accept" => Review::Accept,
        "revise" if round <= max_rounds => Review::Revise(format!(
            "A reviewer read your answer and asks for a revision (round {round} of \
             {max_rounds}):\n{}{pointed}\n\nAnswer again, in full, in the same format.",
            verdict.feedback
        )),
        "revise" => Review::Block {
            reason: format!(
                "validator `{who}` still asks for revisions after {max_rounds} round(s): {}",
                verdict.feedback
            ),
            action: "read the feedback; narrow the task or improve the worker's prompt, then \
                     run it again"
                .into(),
        },
        "reject" if round <= max_rounds && all_evidence_verifies(answer, project) => {
            Review::Revise(format!(
                "A reviewer rejected your answer (round {round} of {max_rounds}):\n{}{pointed}\n\n\
                 Every excerpt in it is exactly the lines it cites, so the runtime asks for a \
                 revision instead: make each finding say only what its excerpt says, drop a \
                 finding its excerpt does not support, and answer again, in full, in the same \
                 format.",
                verdict.feedback
            ))
        }
        _ => Review::Block {
            reason: format!(
                "validator `{who}` rejected the answer: {}",
                verdict.feedback
            ),
            action: "read the feedback; fix the task or the worker's prompt, then run it again"
                .into(),
        },
    };
    (review, Some(verdict), None)
}

/// The finding a standing objection names, for the worker: its number, title and the words
/// the reviewer quoted. Empty when the verdict names none.
fn pointed_at(verdict: &Verdict, all: &[Finding]) -> String {
    let (Some(n), Some(f)) = (verdict.finding, named_finding(verdict, all)) else {
        return String::new();
    };
    let title = f.title.as_deref().unwrap_or("(no heading)");
    let standing = weigh(verdict, f).standing;
    if standing.is_empty() {
        return format!("\nIt means finding {n}, `{title}`.");
    }
    let quoted: Vec<String> = standing.iter().map(|w| format!("\"{w}\"")).collect();
    format!(
        "\nIt means finding {n}, `{title}`: its excerpt does not say {}.",
        quoted.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Usage;

    fn result(status: HopStatus, answer: &str) -> HopResult {
        HopResult {
            hop_id: "h".into(),
            agent: "checker".into(),
            message_id: "m".into(),
            status,
            answer: answer.into(),
            error: None,
            usage: Usage::default(),
            violations: Vec::new(),
            written: Vec::new(),
            reused: false,
            checkpoint: None,
        }
    }

    fn project() -> (tempfile::TempDir, Project) {
        let d = tempfile::tempdir().unwrap();
        let p = Project::open(d.path()).unwrap();
        (d, p)
    }

    #[test]
    fn each_verdict_maps_to_its_review() {
        let (_d, p) = project();
        let ok = result(HopStatus::Completed, r#"{"verdict": "accept"}"#);
        assert_eq!(judge(&ok, "", "", &p, 1, 2).0, Review::Accept);
        let revise = result(
            HopStatus::Completed,
            r#"Here: {"verdict": "revise", "feedback": "cite line 4"}"#,
        );
        let Review::Revise(msg) = judge(&revise, "", "", &p, 2, 2).0 else {
            panic!()
        };
        assert!(
            msg.contains("cite line 4") && msg.contains("round 2 of 2"),
            "{msg}"
        );
        let Review::Block { reason, .. } = judge(&revise, "", "", &p, 3, 2).0 else {
            panic!()
        };
        assert!(reason.contains("after 2 round(s): cite line 4"), "{reason}");
        let reject = result(
            HopStatus::Completed,
            r#"{"verdict": "reject", "feedback": "invented"}"#,
        );
        let Review::Block { reason, .. } = judge(&reject, "", "", &p, 1, 2).0 else {
            panic!()
        };
        assert_eq!(reason, "validator `checker` rejected the answer: invented");
    }

    #[test]
    fn a_reject_of_an_answer_whose_evidence_all_verifies_is_a_revision_while_rounds_last() {
        let (d, p) = project();
        std::fs::write(d.path().join("a.md"), "alpha one\nalpha two\n").unwrap();
        let item = |lines: &str| {
            format!("#### Finding: alpha\n- **Evidence**: `a.md:1`\n- **Excerpt**:\n  ```\n  {lines}\n  ```\n")
        };
        let reject = result(
            HopStatus::Completed,
            r#"{"verdict": "reject", "feedback": "the title says more"}"#,
        );
        let Review::Revise(msg) = judge(&reject, "", &item("alpha one"), &p, 1, 2).0 else {
            panic!("a verified answer is revised")
        };
        assert!(
            msg.contains("the title says more") && msg.contains("round 1 of 2"),
            "{msg}"
        );
        // Past the rounds, or with an excerpt that is not its lines, a reject stands.
        assert!(matches!(
            judge(&reject, "", &item("alpha one"), &p, 3, 2).0,
            Review::Block { .. }
        ));
        let mixed = format!("{}{}", item("alpha one"), item("not in the file"));
        assert!(matches!(
            judge(&reject, "", &mixed, &p, 1, 2).0,
            Review::Block { .. }
        ));
    }

    #[test]
    fn an_objection_stands_only_on_words_of_its_finding_that_its_excerpt_lacks() {
        let (d, p) = project();
        std::fs::create_dir_all(d.path().join("docs")).unwrap();
        std::fs::write(
            d.path().join("docs/a.md"),
            "We chose serde-saphyr as the YAML parser.\nIt reads YAML 1.2.\n",
        )
        .unwrap();
        std::fs::write(d.path().join("docs/b.md"), "We chose serde-saphyr.\n").unwrap();
        let item = |title: &str, cite: &str, line: &str| {
            format!(
                "#### {title}\n- **Evidence**: `{cite}`\n- **Excerpt**:\n  ```\n  {line}\n  ```\n"
            )
        };
        let answer = format!(
            "<answer>\n{}{}</answer>\n",
            item(
                "Decision: serde-saphyr is the YAML parser",
                "docs/a.md:1",
                "We chose serde-saphyr as the YAML parser."
            ),
            item(
                "Spec: the parser caches files for 30 days",
                "docs/a.md:2",
                "It reads YAML 1.2."
            ),
        );
        let task = "Analyze docs/a.md.";
        let objection = |finding: u64, claim: &str| {
            result(
                HopStatus::Completed,
                &serde_json::json!({"verdict": "reject", "finding": finding, "claim": claim,
                    "feedback": "it introduces information the excerpts do not support"})
                .to_string(),
            )
        };
        let judged = |r: &HopResult, answer: &str| judge(r, task, answer, &p, 1, 2);
        // The words are the excerpt's own: overruled, the answer goes on.
        let own_words = result(
            HopStatus::Completed,
            r#"{"verdict": "reject", "finding": 1, "claim": "serde-saphyr is the YAML parsers",
                "feedback": "YAML parser: serde-saphyr"}"#,
        );
        let (review, verdict, why) = judged(&own_words, &answer);
        assert_eq!(review, Review::Accept);
        assert_eq!(verdict.map(|v| v.verdict).as_deref(), Some("reject"));
        assert!(
            why.as_deref().unwrap_or("").contains("holds every word"),
            "{why:?}"
        );
        // The same with a generic sentence beside: its words are not the finding's.
        let (review, _, why) = judged(&objection(1, "serde-saphyr is the YAML parsers"), &answer);
        assert_eq!(review, Review::Accept);
        assert!(
            why.as_deref()
                .unwrap_or("")
                .contains("does not say the words"),
            "{why:?}"
        );
        // A claim of the model's own words, and the finding's word it means in the feedback:
        // the objection stands on that word (the 1.5B validator, 2026-12-03).
        let in_feedback = result(
            HopStatus::Completed,
            r#"{"verdict": "revise", "finding": 2, "claim": "The excerpt does not support the claim",
                "feedback": "The excerpt says nothing about how long files are cached."}"#,
        );
        let (review, _, why) = judged(&in_feedback, &answer);
        assert_eq!(why, None);
        let Review::Revise(msg) = review else {
            panic!("{review:?}")
        };
        assert!(msg.contains("its excerpt does not say \"files\""), "{msg}");
        // Words the finding says and its excerpt does not: the objection stands, and the
        // worker is told which finding and which words.
        let (review, _, why) = judged(&objection(2, "caches files for 30 days"), &answer);
        assert_eq!(why, None);
        let Review::Revise(msg) = review else {
            panic!("a founded reject of verified quotes is a revision: {review:?}")
        };
        assert!(
            msg.contains("finding 2, `Spec: the parser caches files for 30 days`")
                && msg.contains("\"caches\", \"days\", \"files\""),
            "{msg}"
        );
        // A finding the answer does not have, words it does not say, or no words: overruled.
        for (finding, claim, said) in [
            (3, "caches", "names finding 3; the answer has 2"),
            (0, "caches", "names finding 0"),
            (
                2,
                "written in Rust",
                "does not say the words it objects to (excerpts, information, introduces, rust, support, written)",
            ),
            (2, " ", "does not say the words it objects to (excerpts,"),
        ] {
            let (review, _, why) = judged(&objection(finding, claim), &answer);
            assert_eq!(review, Review::Accept, "{claim}");
            assert!(why.as_deref().unwrap_or("").contains(said), "{why:?}");
        }
        // An objection that names no finding is taken as written (a reject of verified
        // quotes is a revision while rounds last).
        let plain = result(
            HopStatus::Completed,
            r#"{"verdict": "reject", "feedback": "no"}"#,
        );
        assert!(matches!(
            judged(&plain, &answer),
            (Review::Revise(_), _, None)
        ));
        // A finding from a file the task does not name has drifted: the objection stands.
        let drifted = format!(
            "<answer>\n{}</answer>\n",
            item(
                "Decision: serde-saphyr",
                "docs/b.md:1",
                "We chose serde-saphyr."
            )
        );
        assert!(matches!(
            judged(&objection(1, "serde-saphyr"), &drifted),
            (Review::Revise(_), _, None)
        ));
        // Quotes that do not all verify: nothing is overruled, the reject stands.
        let unverified = answer.replace(
            "</answer>",
            &format!(
                "{}</answer>",
                item("Spec: YAML 1.2", "docs/a.md:2", "It reads YAML 1.1.")
            ),
        );
        assert!(matches!(
            judged(&objection(1, "serde-saphyr"), &unverified),
            (Review::Block { .. }, _, None)
        ));
    }

    #[test]
    fn a_word_holds_its_longer_forms_from_four_letters() {
        let set: BTreeSet<String> = ["parser", "decisions", "yaml"].map(String::from).into();
        assert!(holds(&set, "parse") && holds(&set, "decision") && holds(&set, "yamls"));
        assert!(!holds(&set, "par") && !holds(&set, "deciding"));
    }

    #[test]
    fn the_checked_note_states_what_verifies_and_whose_file_it_cites() {
        let (d, p) = project();
        std::fs::create_dir_all(d.path().join("docs")).unwrap();
        std::fs::write(d.path().join("docs/a.md"), "alpha one\nalpha two\n").unwrap();
        std::fs::write(d.path().join("docs/b.md"), "beta one\n").unwrap();
        let item = |path: &str, range: &str, lines: &str| {
            format!("- **Evidence**: `{path}:{range}`\n- **Excerpt**:\n  ```\n{lines}  ```\n")
        };
        let answer = format!(
            "<answer>\n### Findings\n{}{}{}</answer>\n",
            item("docs/a.md", "1-2", "  alpha one\n  alpha two\n"),
            item("docs/b.md", "1", "  beta one\n"),
            item("docs/b.md", "1", "  not what line 1 says\n"),
        );
        let note = checked_note("Analyze docs/a.md.", &answer, &p).unwrap();
        assert!(note.contains(CHECKED_HEADING), "{note}");
        assert!(note.contains("- 2 of 3 Evidence item(s) verify"), "{note}");
        assert!(
            note.contains("- cited: docs/a.md lines 1-2: the document the task names"),
            "{note}"
        );
        assert!(
            note.contains("- cited: docs/b.md lines 1-1: a file the task does NOT name"),
            "{note}"
        );
        assert_eq!(
            note.matches("docs/b.md").count(),
            1,
            "each range once: {note}"
        );
        // Nothing in it reads as a citation: no backticks.
        assert!(!note.contains('`'), "{note}");
        // A task that names no file: ranges without a verdict on whose they are.
        let plain = checked_note("Summarize the docs.", &answer, &p).unwrap();
        assert!(plain.contains("- cited: docs/a.md lines 1-2\n"), "{plain}");
        // No Evidence, no note.
        assert_eq!(checked_note("x", "<answer>\nfine\n</answer>", &p), None);
    }

    /// The review's task ends on what to send, after the answer and the runtime's note, and
    /// the verdict it asks for parses.
    #[test]
    fn the_review_ends_with_the_verdict_it_asks_for() {
        let (_d, p) = project();
        let worker = HopRequest {
            agent: "thoughts-analyzer".into(),
            prompt: "Read docs/a.md.".into(),
            description: String::new(),
            parent: None,
            depth: 1,
            chain: vec!["researcher".into()],
            hop_id: None,
        };
        let answer = "<answer>\n## Analysis: docs/a.md\n</answer>";
        let req = request(
            "checker",
            &worker,
            "thoughts-analyzer",
            "h",
            "m",
            answer,
            &p,
        );
        assert!(req.prompt.ends_with(VERDICT_ASK), "{}", req.prompt);
        let (task, rest) = req.prompt.split_once(VALIDATION_MARK).expect("marked");
        assert_eq!(task, "Read docs/a.md.");
        assert!(rest.starts_with(answer), "{rest}");
        assert_eq!(req.chain, ["researcher", "thoughts-analyzer"]);
        let asked = r#"{"verdict": "accept", "feedback": "one sentence"}"#;
        assert!(parse_verdict(asked, &p).is_ok());
        // An answer with findings: the ask names them, and a verdict that does parses.
        std::fs::write(p.root().join("a.md"), "alpha\n").unwrap();
        let cited = "<answer>\n#### Spec: alpha\n- **Evidence**: `a.md:1`\n- **Excerpt**:\n  ```\n  alpha\n  ```\n</answer>";
        let req = request("checker", &worker, "thoughts-analyzer", "h", "m", cited, &p);
        assert!(req.prompt.ends_with(FINDING_VERDICT_ASK), "{}", req.prompt);
        assert!(req.prompt.contains("1. Spec: alpha."), "{}", req.prompt);
        let asked = r#"{"verdict": "revise", "finding": 1, "claim": "alpha", "feedback": "x"}"#;
        let v = parse_verdict(asked, &p).unwrap();
        assert_eq!((v.finding, v.claim.as_deref()), (Some(1), Some("alpha")));
    }

    #[test]
    fn a_verdict_that_breaks_its_schema_or_a_failed_validator_blocks() {
        let (_d, p) = project();
        for bad in [
            r#"{"verdict": "maybe"}"#,
            r#"{"verdict": "reject"}"#,
            "looks fine to me",
        ] {
            let (review, verdict, _) = judge(&result(HopStatus::Completed, bad), "", "", &p, 1, 2);
            assert!(matches!(review, Review::Block { .. }), "{bad}");
            assert!(verdict.is_none());
        }
        let (review, _, _) = judge(&result(HopStatus::Failed, ""), "", "", &p, 1, 2);
        let Review::Block { reason, action } = review else {
            panic!()
        };
        assert!(reason.contains("gave no verdict (failed)"), "{reason}");
        assert!(action.contains("\"verdict\""), "{action}");
    }
}
