//! The catalogue of contract rules: each with a stable code. A check reports a broken rule as a
//! [`Problem`] carrying that code.
//!
//! Codes are stable strings (`area/what`); docs/envelope.md explains each rule and
//! docs/problems.md lists them with every other code. Never rename a code: prompts, tests and
//! users' scripts match on them.

use serde::Serialize;
use std::fmt;
use std::ops::Range;

use crate::problem::{Problem, Severity};

macro_rules! rules {
    ($($(#[doc = $doc:literal])* $variant:ident => $code:literal,)*) => {
        /// A rule of the envelope contract. [`Rule::code`] is its stable name.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Rule {
            $($(#[doc = $doc])* $variant,)*
        }

        impl Rule {
            /// Every rule, in documentation order.
            pub const ALL: &'static [Rule] = &[$(Rule::$variant,)*];

            /// The stable code, e.g. `excerpt/mismatch`.
            pub fn code(self) -> &'static str {
                match self {
                    $(Rule::$variant => $code,)*
                }
            }

            /// The rule with this code.
            pub fn from_code(code: &str) -> Option<Rule> {
                match code {
                    $($code => Some(Rule::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

rules! {
    /// The answer is not valid UTF-8 (reported by callers that read bytes).
    Encoding => "envelope/encoding",
    /// No `---` frontmatter at the start of the answer.
    FrontmatterMissing => "envelope/frontmatter-missing",
    /// An opening `---` without a closing one.
    FrontmatterUnclosed => "envelope/frontmatter-unclosed",
    /// The frontmatter is not valid YAML, not a mapping, or repeats a key.
    FrontmatterYaml => "envelope/frontmatter-yaml",
    /// A required frontmatter field is absent.
    FieldMissing => "envelope/field-missing",
    /// A contract field has a value of the wrong kind or outside its allowed set.
    FieldValue => "envelope/field-value",
    /// `message_id` is not `<prefix>-YYYY-MM-DD-NNN`.
    MessageIdFormat => "envelope/message-id-format",
    /// `message_id`'s date is not the UTC date of `timestamp`.
    MessageIdDate => "envelope/message-id-date",
    /// `message_id` differs from the id the runtime allocated.
    MessageIdMismatch => "envelope/message-id-mismatch",
    /// `timestamp` is not RFC 3339 with a zone.
    Timestamp => "envelope/timestamp",
    /// `correlation_id` is empty or holds characters outside letters, digits and `. _ : -`.
    CorrelationId => "envelope/correlation-id",
    /// `correlation_id` differs from the expected one.
    CorrelationMismatch => "envelope/correlation-mismatch",
    /// `message_type` is not UPPER_SNAKE_CASE or not allowed by the contract.
    MessageType => "envelope/message-type",
    /// `<thinking>`/`<answer>` tags missing, unclosed, repeated, nested or out of order.
    Tags => "envelope/tags",
    /// The `<thinking>` block holds only whitespace.
    ThinkingEmpty => "envelope/thinking-empty",
    /// The `<answer>` block holds only whitespace.
    AnswerEmpty => "envelope/answer-empty",
    /// Text outside the frontmatter, `<thinking>` and `<answer>`.
    StrayText => "envelope/stray-text",
    /// More headings, bold labels, Evidence items or citations than a check keeps; the rest are
    /// not checked.
    TooLarge => "envelope/too-large",
    /// An Evidence item without a well-formed `path:N` / `path:N-M` reference.
    ReferenceFormat => "evidence/reference-format",
    /// A cited path is absolute, escapes through `..`, or is a symlink leading out of the root.
    PathOutsideRoot => "evidence/path-outside-root",
    /// A cited file does not exist (or is not a regular file).
    FileMissing => "evidence/file-missing",
    /// A cited file exists but cannot be read.
    FileUnreadable => "evidence/file-unreadable",
    /// A cited line is past the end of the file.
    RangePastEnd => "evidence/range-past-end",
    /// An Evidence item with no Excerpt after it.
    MissingExcerpt => "evidence/missing-excerpt",
    /// An Excerpt with no Evidence item before it.
    ExcerptOrphan => "excerpt/orphan",
    /// An Excerpt that is not followed by a fenced code block.
    ExcerptNotFenced => "excerpt/not-fenced",
    /// An Excerpt whose code block has no non-blank line.
    ExcerptEmpty => "excerpt/empty",
    /// An Excerpt longer than the contract allows.
    ExcerptTooLong => "excerpt/too-long",
    /// An Excerpt that is not a contiguous run of the cited lines.
    ExcerptMismatch => "excerpt/mismatch",
    /// An Excerpt made only of another document's Evidence/Excerpt labels: a quoted citation.
    ExcerptCitation => "excerpt/citation",
    /// An Excerpt without a word of three letters (`},`, `Ok(())`): punctuation carries no
    /// finding.
    ExcerptNoWords => "excerpt/no-words",
    /// A signal item (`#### Decision:` …) without its own Evidence.
    SignalMissingEvidence => "contract/signal-missing-evidence",
    /// A signal item whose Evidence cites only the source's YAML frontmatter (its metadata).
    SignalFrontmatterOnly => "contract/signal-frontmatter-only",
    /// A signal item whose excerpt does not say what its title states, while one line of its
    /// sources does (see `check::STATED_AT`).
    SignalStatedElsewhere => "contract/signal-stated-elsewhere",
    /// A heading the contract requires is absent from the answer.
    SectionMissing => "contract/section-missing",
    /// A `<placeholder>` of the answer template in the agent's prompt, left in the answer.
    Placeholder => "envelope/placeholder",
    /// A file path the answer names does not exist (contracts with `named_paths: exist`).
    NamedPathMissing => "contract/named-path-missing",
    /// A JSON answer that is not valid JSON, empty, or not an object (NaN, trailing commas, …).
    JsonParse => "json/parse",
    /// Text before or after the JSON object.
    JsonProse => "json/prose",
    /// More than one JSON object in the answer.
    JsonMultiple => "json/multiple",
    /// The JSON object is wrapped in a code fence (a warning: the fence is stripped).
    JsonFenced => "json/fenced",
    /// A field breaks the contract's JSON Schema (type, enum, required, maxItems, …).
    JsonSchema => "json/schema",
    /// Fields contradict each other (a schema `if/then/else`, `not` or `dependentRequired`).
    JsonConflict => "json/conflict",
    /// A declared `sanitize` rule changed the answer (a warning).
    JsonSanitized => "json/sanitized",
    /// More than one clarifying question, or a second question in one session.
    JsonQuestion => "json/question",
    /// The contract's schema cannot be loaded or compiled.
    JsonSchemaInvalid => "json/schema-invalid",
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

impl Serialize for Rule {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.code())
    }
}

impl Rule {
    /// Whether the rule concerns the answer's shape, which a grammar derived from the contract
    /// can force (tags, frontmatter, ids, sections, the Evidence/Excerpt form, JSON syntax,
    /// types, enums, patterns, required keys), rather than its content, which only the checker
    /// can judge (that a cited file exists and the excerpt matches it, cross-field JSON rules,
    /// a second question). `switchboard eval` reports first answers free of shape violations as
    /// the grammar's own figure.
    pub fn is_shape(self) -> bool {
        !matches!(
            self,
            Rule::PathOutsideRoot
                | Rule::FileMissing
                | Rule::FileUnreadable
                | Rule::RangePastEnd
                | Rule::ExcerptMismatch
                | Rule::ExcerptCitation
                | Rule::ExcerptNoWords
                | Rule::SignalFrontmatterOnly
                | Rule::SignalStatedElsewhere
                | Rule::JsonConflict
                | Rule::JsonSanitized
                | Rule::JsonQuestion
                | Rule::JsonSchemaInvalid
        )
    }

    /// An error of this rule at byte range `span` of the checked text; line and column are
    /// filled in when the report is finished.
    pub fn problem(self, span: Range<usize>, message: impl Into<String>) -> Problem {
        Problem::in_text(Severity::Error, self.code(), span, message)
    }
}

/// Problems of one code a parse keeps; the rest are counted and summed up in one closing problem
/// (see [`Tally`]).
pub const MAX_PER_RULE: usize = 100;

/// Caps the problems of each code at [`MAX_PER_RULE`] while they are found. An answer repeating
/// one mistake millions of times (50 MB of `<thinking>` tags) otherwise holds a `Problem`, about
/// 300 bytes, per 11 bytes of input, and renders it too: 80 times the input in memory. A reader
/// needs the first few of a kind and the count, not the millionth.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    /// Code → how many were kept and left out, and the first one left out.
    counts: std::collections::HashMap<std::borrow::Cow<'static, str>, Count>,
}

#[derive(Debug, Clone)]
struct Count {
    kept: usize,
    left_out: usize,
    first_left_out: Range<usize>,
    severity: Severity,
}

impl Tally {
    /// Pushes `problem` onto `out` unless [`MAX_PER_RULE`] of its code are kept already; then it
    /// is only counted.
    pub fn push(&mut self, out: &mut Vec<Problem>, problem: Problem) {
        let count = self.count(problem.code.clone(), problem.severity);
        if count.kept < MAX_PER_RULE {
            count.kept += 1;
            out.push(problem);
        } else {
            if count.left_out == 0 {
                count.first_left_out = problem.span.clone().unwrap_or(0..0);
                count.severity = problem.severity;
            }
            count.left_out += 1;
        }
    }

    /// Counts `n` problems of `code` (errors) left out without building them, the first at `at`.
    pub fn left_out(&mut self, code: &'static str, n: usize, at: Range<usize>) {
        let count = self.count(std::borrow::Cow::Borrowed(code), Severity::Error);
        if count.left_out == 0 {
            count.first_left_out = at;
        }
        count.left_out += n;
    }

    fn count(&mut self, code: std::borrow::Cow<'static, str>, severity: Severity) -> &mut Count {
        self.counts.entry(code).or_insert(Count {
            kept: 0,
            left_out: 0,
            first_left_out: 0..0,
            severity,
        })
    }

    /// Adds one problem per capped code, at the first one left out, saying how many were.
    pub fn finish(self, out: &mut Vec<Problem>) {
        let mut capped: Vec<_> = self
            .counts
            .into_iter()
            .filter(|(_, count)| count.left_out > 0)
            .collect();
        capped.sort_by(|a, b| a.0.cmp(&b.0));
        for (code, count) in capped {
            let n = count.left_out;
            let message = format!(
                "{n} more `{code}` problem{} from here on {} not listed (a report lists the \
                 first {MAX_PER_RULE} of each kind)",
                if n == 1 { "" } else { "s" },
                if n == 1 { "is" } else { "are" }
            );
            out.push(
                Problem::in_text(count.severity, code, count.first_left_out, message)
                    .with_help("fix the problems listed, then check again to see the rest"),
            );
        }
    }
}

/// Sorts a text's problems into report order: by position, then by rule in documentation order
/// (codes that are no contract rule after those that are).
pub(crate) fn sort(problems: &mut [Problem]) {
    problems.sort_by_key(|p| {
        let start = p.span.as_ref().map_or(0, |s| s.start);
        let rule = Rule::from_code(&p.code);
        (start, rule.is_none(), rule)
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for &rule in Rule::ALL {
            assert!(seen.insert(rule.code()), "duplicate code {}", rule.code());
            assert_eq!(Rule::from_code(rule.code()), Some(rule));
            assert!(rule.code().contains('/'));
        }
        assert_eq!(Rule::from_code("nope"), None);
    }

    #[test]
    fn shape_rules_are_the_ones_a_grammar_can_force() {
        assert!(Rule::Tags.is_shape());
        assert!(Rule::ReferenceFormat.is_shape());
        assert!(Rule::JsonParse.is_shape());
        assert!(Rule::JsonSchema.is_shape());
        assert!(!Rule::FileMissing.is_shape());
        assert!(!Rule::ExcerptMismatch.is_shape());
        assert!(!Rule::JsonConflict.is_shape());
    }

    #[test]
    fn sorts_by_position_then_rule_order() {
        let mut v = [
            Rule::StrayText.problem(5..6, "b"),
            Rule::Tags.problem(5..6, "a"),
            Rule::FrontmatterMissing.problem(0..1, "c"),
        ];
        sort(&mut v);
        let codes: Vec<&str> = v.iter().map(|p| p.code.as_ref()).collect();
        assert_eq!(
            codes,
            [
                "envelope/frontmatter-missing",
                "envelope/tags",
                "envelope/stray-text"
            ]
        );
        assert_eq!(Rule::Tags.problem(1..2, "x").severity, Severity::Error);
    }
}
