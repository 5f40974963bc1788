//! The envelope parser: frontmatter fields, `<thinking>`/`<answer>` blocks, and the answer's
//! headings, labels, Evidence references and Excerpt blocks — each with its byte span.
//!
//! Parsing is contract-independent. It reports what is structurally wrong (no frontmatter, broken
//! tags, malformed references, an Excerpt without a code block) and leaves everything that needs a
//! contract or the disk to [`super::check`].
//!
//! This file holds the parsed types and the entry points; the jobs live beside it: `tags` finds
//! the `<thinking>`/`<answer>` blocks and stray text, `answer` walks the answer's markdown for
//! headings, labels, Evidence and Excerpts (also for documents that are no envelope).

mod answer;
mod chunks;
mod tags;
#[cfg(test)]
mod tests;

pub(crate) use answer::named_path;
use answer::AnswerWalker;
pub use answer::{parse_document, parse_reference};
use tags::{alone_on_line, tag_candidates, TagScan};

use super::fields::parse_fields;
use super::rule::{sort, Rule, Tally};
use crate::markdown::{split_frontmatter, Frontmatter, SplitError};
use crate::problem::{locate, Problem};
use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use std::fmt;
use std::ops::Range;

/// A parsed envelope. Every span is a byte range in the text that was parsed.
#[derive(Debug, Clone, Default)]
pub struct Envelope {
    /// Where the frontmatter is, when it could be split off.
    pub frontmatter: Option<Frontmatter>,
    /// The frontmatter's top-level fields in source order (empty when it is not a valid mapping).
    pub fields: Vec<Field>,
    /// Everything after the frontmatter (the whole text when there is none).
    pub body: Range<usize>,
    pub thinking: Option<TagBlock>,
    pub answer: Option<TagBlock>,
    /// Headings inside the answer.
    pub headings: Vec<Heading>,
    /// Bold labels (`**Name**:`) that start a paragraph, list item or line inside the answer,
    /// other than Evidence and Excerpt.
    pub labels: Vec<Label>,
    /// Evidence items inside the answer, in order, each with its Excerpt.
    pub evidence: Vec<EvidenceItem>,
    /// File paths the answer names in backticks outside Evidence items (a locator's list, a
    /// "Suggested for analysis" line), for contracts that declare `named_paths: exist`.
    pub paths: Vec<NamedPath>,
    /// What is structurally wrong; empty for a well-formed envelope.
    pub problems: Vec<Problem>,
}

/// One top-level frontmatter entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    pub key: String,
    pub key_span: Range<usize>,
    pub value: FieldValue,
    pub value_span: Range<usize>,
}

/// A frontmatter value as far as the contract cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldValue {
    /// A string scalar (plain or quoted), as YAML reads it.
    Str(String),
    /// A scalar YAML reads as a number or boolean, kept as its source text.
    Scalar(String),
    /// `null`, `~` or nothing.
    Null,
    /// A sequence.
    Seq,
    /// A mapping.
    Map,
}

impl FieldValue {
    /// The scalar's text, for strings, numbers and booleans.
    pub fn as_scalar(&self) -> Option<&str> {
        match self {
            FieldValue::Str(s) | FieldValue::Scalar(s) => Some(s),
            _ => None,
        }
    }
}

/// A `<tag>…</tag>` block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagBlock {
    /// The opening tag.
    pub open: Range<usize>,
    /// The closing tag; empty (at the point where the block was cut off) when it is missing.
    pub close: Range<usize>,
    /// Between the tags.
    pub inner: Range<usize>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heading {
    pub level: u8,
    /// The heading's text without markup, trimmed.
    pub text: String,
    pub span: Range<usize>,
}

/// A bold label such as `**Decision**:` at the start of a paragraph, list item or line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Label {
    /// The label without stars and colon, e.g. `Decision`.
    pub name: String,
    pub span: Range<usize>,
}

/// An `**Evidence**:` item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvidenceItem {
    /// The `**Evidence**` label.
    pub label: Range<usize>,
    /// The well-formed references it holds (malformed ones are in `problems`).
    pub references: Vec<Citation>,
    /// The `**Excerpt**:` that follows it, if any.
    pub excerpt: Option<Excerpt>,
}

/// A project file an answer names in backticks, outside any Evidence item: `src/config.rs`,
/// `thoughts/shared/decisions/x.md`, or `src/config.rs:12-14` (the line part is dropped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedPath {
    pub path: String,
    /// The code span, backticks included.
    pub span: Range<usize>,
}

/// An evidence citation: a backticked `path:N` or `path:N-M` (not a delegation reference,
/// which is `agent::DelegationRef`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Citation {
    pub path: String,
    /// First cited line (1-based).
    pub first: usize,
    /// Last cited line, `>= first`.
    pub last: usize,
    /// The code span, backticks included.
    pub span: Range<usize>,
}

impl fmt::Display for Citation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.first == self.last {
            write!(f, "{}:{}", self.path, self.first)
        } else {
            write!(f, "{}:{}-{}", self.path, self.first, self.last)
        }
    }
}

/// An `**Excerpt**:` label and the fenced block after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Excerpt {
    pub label: Range<usize>,
    /// The fenced code block; `None` when none follows (reported as `excerpt/not-fenced`).
    pub block: Option<ExcerptBlock>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExcerptBlock {
    /// The whole block, fences included.
    pub span: Range<usize>,
    /// The block's lines with the container's and fence's indentation removed: the first
    /// [`MAX_EXCERPT_BYTES`] of them.
    pub content: String,
    /// Lines after `content` that were counted, not kept (the block is longer than
    /// [`MAX_EXCERPT_BYTES`], far past any contract's excerpt limit).
    pub more_lines: usize,
}

/// Bytes of an Excerpt block kept; the lines after are counted. A contract allows a few lines.
pub const MAX_EXCERPT_BYTES: usize = 64 * 1024;

impl ExcerptBlock {
    /// The excerpt's lines without leading and trailing blank lines.
    pub fn lines(&self) -> Vec<&str> {
        let mut lines: Vec<&str> = self.content.lines().collect();
        while lines.last().is_some_and(|l| l.trim().is_empty()) {
            lines.pop();
        }
        let skip = lines.iter().take_while(|l| l.trim().is_empty()).count();
        lines.drain(..skip);
        lines
    }

    /// How many lines the excerpt has: those of [`Self::lines`] and those not kept.
    pub fn line_count(&self) -> usize {
        self.lines().len() + self.more_lines
    }
}

impl Envelope {
    /// Parses `text`, keeping whatever could be understood; structural problems are in
    /// [`Envelope::problems`] with line and column filled in.
    pub fn parse_lenient(text: &str) -> Envelope {
        let mut env = Envelope {
            body: 0..text.len(),
            ..Default::default()
        };
        match split_frontmatter(text) {
            Ok(fm) => {
                env.body = fm.body.clone();
                parse_fields(text, &fm, &mut env);
                env.frontmatter = Some(fm);
            }
            Err(SplitError::Missing { at }) => {
                let end = text[at..].find('\n').map_or(text.len(), |i| at + i);
                env.problems.push(
                    Rule::FrontmatterMissing
                        .problem(at..end, "the answer does not start with `---` frontmatter")
                        .with_help(
                            "start with a `---` line, the fields `message_id`, `correlation_id`, \
                         `timestamp`, `message_type`, then another `---` line",
                        ),
                );
            }
            Err(SplitError::Unclosed { open }) => {
                env.problems.push(
                    Rule::FrontmatterUnclosed
                        .problem(open, "the frontmatter opened here is never closed")
                        .with_help("end the frontmatter with a line holding only `---`"),
                );
                // The body cannot be told apart from YAML; nothing more to find.
                env.body = text.len()..text.len();
                locate(text, &mut env.problems);
                return env;
            }
        }
        parse_body(text, &mut env);
        sort(&mut env.problems);
        locate(text, &mut env.problems);
        env
    }

    /// The first field named `key`.
    pub fn field(&self, key: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.key == key)
    }

    /// The scalar text of field `key`.
    pub fn scalar(&self, key: &str) -> Option<&str> {
        self.field(key).and_then(|f| f.value.as_scalar())
    }

    pub fn message_id(&self) -> Option<&str> {
        self.scalar("message_id")
    }

    pub fn correlation_id(&self) -> Option<&str> {
        self.scalar("correlation_id")
    }

    pub fn timestamp(&self) -> Option<&str> {
        self.scalar("timestamp")
    }

    pub fn message_type(&self) -> Option<&str> {
        self.scalar("message_type")
    }

    /// The text between `<answer>` and `</answer>`, trimmed.
    pub fn answer_text<'t>(&self, text: &'t str) -> Option<&'t str> {
        self.answer
            .as_ref()
            .and_then(|a| text.get(a.inner.clone()))
            .map(str::trim)
    }

    /// The text between `<thinking>` and `</thinking>`, trimmed.
    pub fn thinking_text<'t>(&self, text: &'t str) -> Option<&'t str> {
        self.thinking
            .as_ref()
            .and_then(|a| text.get(a.inner.clone()))
            .map(str::trim)
    }
}

/// Parses an envelope; `Err` holds the structural problems when there are any.
pub fn parse(text: &str) -> Result<Envelope, Vec<Problem>> {
    let env = Envelope::parse_lenient(text);
    if env.problems.iter().any(Problem::is_error) {
        Err(env.problems)
    } else {
        Ok(env)
    }
}

// ---------------------------------------------------------------------------------------------
// Body

fn parse_body(text: &str, env: &mut Envelope) {
    let body = env.body.clone();

    // Mask the tags so pulldown-cmark sees the answer as markdown: a tag alone on its line becomes
    // a blank line (a block boundary, as if the answer were its own document); any other tag loses
    // its `<` so it cannot open an HTML block that would swallow fences and headings.
    let mut masked = text[body.clone()].as_bytes().to_vec();
    for c in tag_candidates(text, &body) {
        match alone_on_line(text, &c.span, &body) {
            Some(line) => masked[line.start - body.start..line.end - body.start].fill(b' '),
            None => masked[c.span.start - body.start] = b'X',
        }
    }
    // Only ASCII bytes were replaced by ASCII bytes, so this stays valid UTF-8.
    let masked = match String::from_utf8(masked) {
        Ok(s) => s,
        Err(_) => return,
    };

    // The tags again, each judged as it comes against the code spans the markdown parse yields
    // beside it: no list of tags, events or code spans is kept, so memory stays a small multiple
    // of the answer however many tags it repeats.
    // A body of one piece (every real answer) is parsed once and its events replayed for the
    // second walk; a larger one is parsed again rather than kept.
    let kept: Option<Vec<(Event, Range<usize>)>> =
        (masked.len() <= chunks::MAX_PIECE).then(|| offset_events(&masked, body.start).collect());
    let events = || -> Box<dyn Iterator<Item = (Event, Range<usize>)> + '_> {
        match &kept {
            Some(events) => Box::new(events.iter().cloned()),
            None => Box::new(offset_events(&masked, body.start)),
        }
    };
    let mut tally = Tally::default();
    let mut scan = TagScan::new(text, &body);
    let mut code = code_spans(events()).peekable();
    for c in tag_candidates(text, &body) {
        while code.next_if(|r| r.end <= c.span.start).is_some() {}
        if code.peek().is_some_and(|r| r.start <= c.span.start) {
            scan.in_code(c);
        } else {
            scan.tag(c, &mut env.problems, &mut tally);
        }
    }
    let scan = scan.finish(&mut env.problems, &mut tally);
    report_forced_cut(&masked, body.start, &mut env.problems);
    tally.finish(&mut env.problems);
    if let Some(t) = &scan.thinking {
        if text[t.inner.clone()].trim().is_empty() {
            env.problems.push(
                Rule::ThinkingEmpty.problem(t.open.clone(), "the `<thinking>` block is empty"),
            );
        }
    }
    if let Some(a) = &scan.answer {
        if text[a.inner.clone()].trim().is_empty() {
            env.problems
                .push(Rule::AnswerEmpty.problem(a.open.clone(), "the `<answer>` block is empty"));
        } else {
            // A second parse, walked over the answer only (parsing is cheaper than keeping every
            // event of a large answer).
            let inner = a.inner.clone();
            let mut walker = AnswerWalker::new(text, &masked, body.start, env);
            for (event, range) in events()
                .skip_while(|(_, r)| r.start < inner.start)
                .take_while(|(_, r)| r.start < inner.end)
            {
                walker.event(&event, &range);
            }
            walker.finish();
        }
    }
    env.thinking = scan.thinking;
    env.answer = scan.answer;
}

/// The markdown events of `masked` (which starts at byte `base` of the text), with ranges in the
/// text's offsets.
/// Parsed piece by piece ([`chunks`]), so only one piece's parse tree is in memory at a time.
pub(super) fn offset_events(
    masked: &str,
    base: usize,
) -> impl Iterator<Item = (Event<'_>, Range<usize>)> {
    chunks::pieces(masked).flat_map(move |piece| {
        let at = base + piece.range.start;
        if piece.reopen.is_none() && !piece.continues {
            let events: Box<dyn Iterator<Item = (Event<'_>, Range<usize>)>> = Box::new(
                Parser::new_ext(&masked[piece.range], Options::empty())
                    .into_offset_iter()
                    .map(move |(e, r)| (e, r.start + at..r.end + at)),
            );
            return events;
        }
        // A piece cut inside a fence longer than a piece: parsed behind a copy of the fence's
        // opening line. The events of that copy, and the end of the block where a piece stops
        // inside it, are left out, so the pieces read as one code block.
        let prefix = piece.reopen.clone().map_or("", |r| &masked[r]);
        let shift = prefix.len();
        let own = format!("{prefix}{}", &masked[piece.range.clone()]);
        let mut events: Vec<(Event<'_>, Range<usize>)> = Parser::new_ext(&own, Options::empty())
            .into_offset_iter()
            .enumerate()
            .filter(|(i, (e, _))| !(*i == 0 && shift > 0 && matches!(e, Event::Start(_))))
            .map(|(_, (e, r))| {
                let range = r.start.saturating_sub(shift) + at..r.end.saturating_sub(shift) + at;
                (e.into_static(), range)
            })
            .collect();
        if piece.continues {
            if let Some(i) = events
                .iter()
                .rposition(|(e, _)| matches!(e, Event::End(TagEnd::CodeBlock)))
            {
                events.remove(i);
            }
        }
        Box::new(events.into_iter())
    })
}

/// An `envelope/too-large` error when [`chunks`] had to cut `masked` inside a block.
pub(super) fn report_forced_cut(masked: &str, base: usize, problems: &mut Vec<Problem>) {
    if let Some(cut) = chunks::first_forced_cut(masked) {
        let at = base + cut;
        problems.push(
            Rule::TooLarge
                .problem(
                    at..at,
                    format!(
                        "more than {} KiB of text without a blank line between blocks; it is \
                         checked in pieces from here on, which can misread a construct that \
                         spans a cut",
                        chunks::MAX_PIECE / 1024
                    ),
                )
                .with_help("separate paragraphs and list items with blank lines, or shorten it"),
        );
    }
}

/// The code spans and blocks among `events`, in document order (they never nest or overlap).
fn code_spans<'e>(
    events: impl Iterator<Item = (Event<'e>, Range<usize>)> + 'e,
) -> impl Iterator<Item = Range<usize>> + 'e {
    let mut block_start = None;
    events.filter_map(move |(event, range)| match event {
        Event::Start(Tag::CodeBlock(_)) => {
            block_start = Some(range.start);
            None
        }
        Event::End(TagEnd::CodeBlock) => block_start.take().map(|s| s..range.end),
        Event::Code(_) => Some(range),
        _ => None,
    })
}
