//! Rule codes, severities and violations: the vocabulary every report is written in.
//!
//! Codes are stable strings (`area/what`); docs/envelope.md lists each one. Never rename a code:
//! prompts, tests and users' scripts match on them.

use serde::Serialize;
use std::fmt;
use std::ops::Range;

/// How bad a violation is. Only errors make an answer non-conformant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

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
    /// A signal item (`#### Decision:` …) without its own Evidence.
    SignalMissingEvidence => "contract/signal-missing-evidence",
    /// A heading the contract requires is absent from the answer.
    SectionMissing => "contract/section-missing",
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

/// One way an answer breaks its contract.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    pub rule: Rule,
    pub severity: Severity,
    /// What is wrong, in one sentence.
    pub message: String,
    /// Byte range in the checked text.
    pub span: Range<usize>,
    /// 1-based line of `span.start`.
    pub line: usize,
    /// 1-based column (in characters) of `span.start`.
    pub column: usize,
    /// How to fix it, when there is something specific to say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
    /// For excerpt problems: the lines that are really in the cited file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actual: Option<String>,
    /// Where `actual` comes from, as `path:N-M`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actual_from: Option<String>,
}

impl Violation {
    /// An error at `span`; line and column are filled in when the report is finished.
    pub fn error(rule: Rule, span: Range<usize>, message: impl Into<String>) -> Self {
        Violation {
            rule,
            severity: Severity::Error,
            message: message.into(),
            span,
            line: 0,
            column: 0,
            help: None,
            actual: None,
            actual_from: None,
        }
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    pub fn with_actual(mut self, from: impl Into<String>, lines: impl Into<String>) -> Self {
        self.actual_from = Some(from.into());
        self.actual = Some(lines.into());
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// Clamps spans into `text` on char boundaries and fills in line and column.
pub(crate) fn locate(text: &str, violations: &mut [Violation]) {
    if violations.is_empty() {
        return;
    }
    let index = crate::markdown::LineIndex::new(text);
    for v in violations {
        let start = floor_boundary(text, v.span.start);
        let end = floor_boundary(text, v.span.end.max(start));
        v.span = start..end;
        let (line, column) = index.line_col(text, start);
        v.line = line;
        v.column = column;
    }
}

/// The largest char boundary of `text` at or below `at`.
pub(crate) fn floor_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
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
    fn locate_clamps_to_boundaries() {
        let text = "ab\néx";
        let mut v = [Violation::error(Rule::Tags, 4..99, "x")];
        locate(text, &mut v);
        assert_eq!(v[0].span, 3..6);
        assert_eq!((v[0].line, v[0].column), (2, 1));
    }
}
