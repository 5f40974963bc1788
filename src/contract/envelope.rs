//! The envelope parser: frontmatter fields, `<thinking>`/`<answer>` blocks, and the answer's
//! headings, labels, Evidence references and Excerpt blocks — each with its byte span.
//!
//! Parsing is contract-independent. It reports what is structurally wrong (no frontmatter, broken
//! tags, malformed references, an Excerpt without a code block) and leaves everything that needs a
//! contract or the disk to [`super::check`].

use super::fields::parse_fields;
use super::rule::{locate, Rule, Violation};
use crate::markdown::{split_frontmatter, Frontmatter, SplitError};
use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
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
    /// What is structurally wrong; empty for a well-formed envelope.
    pub problems: Vec<Violation>,
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
    pub references: Vec<Reference>,
    /// The `**Excerpt**:` that follows it, if any.
    pub excerpt: Option<Excerpt>,
}

/// A backticked `path:N` or `path:N-M`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    pub path: String,
    /// First cited line (1-based).
    pub first: usize,
    /// Last cited line, `>= first`.
    pub last: usize,
    /// The code span, backticks included.
    pub span: Range<usize>,
}

impl fmt::Display for Reference {
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
    /// The block's lines with the container's and fence's indentation removed.
    pub content: String,
}

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
                    Violation::error(
                        Rule::FrontmatterMissing,
                        at..end,
                        "the answer does not start with `---` frontmatter",
                    )
                    .with_help(
                        "start with a `---` line, the fields `message_id`, `correlation_id`, \
                         `timestamp`, `message_type`, then another `---` line",
                    ),
                );
            }
            Err(SplitError::Unclosed { open }) => {
                env.problems.push(
                    Violation::error(
                        Rule::FrontmatterUnclosed,
                        open,
                        "the frontmatter opened here is never closed",
                    )
                    .with_help("end the frontmatter with a line holding only `---`"),
                );
                // The body cannot be told apart from YAML; nothing more to find.
                env.body = text.len()..text.len();
                locate(text, &mut env.problems);
                return env;
            }
        }
        parse_body(text, &mut env);
        env.problems.sort_by_key(|v| (v.span.start, v.rule));
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
pub fn parse(text: &str) -> Result<Envelope, Vec<Violation>> {
    let env = Envelope::parse_lenient(text);
    if env.problems.iter().any(Violation::is_error) {
        Err(env.problems)
    } else {
        Ok(env)
    }
}

// ---------------------------------------------------------------------------------------------
// Body: tags

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Which {
    Thinking,
    Answer,
}

impl Which {
    fn name(self) -> &'static str {
        match self {
            Which::Thinking => "thinking",
            Which::Answer => "answer",
        }
    }
}

#[derive(Debug, Clone)]
struct TagRef {
    which: Which,
    close: bool,
    span: Range<usize>,
}

const TAGS: [(&str, Which, bool); 4] = [
    ("<thinking>", Which::Thinking, false),
    ("</thinking>", Which::Thinking, true),
    ("<answer>", Which::Answer, false),
    ("</answer>", Which::Answer, true),
];

/// Every literal tag in `body` (absolute offsets), code or not.
fn tag_candidates(text: &str, body: &Range<usize>) -> Vec<TagRef> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut pos = body.start;
    while let Some(i) = text[pos..body.end].find('<') {
        let at = pos + i;
        let rest = &bytes[at..body.end];
        for (tag, which, close) in TAGS {
            if rest.starts_with(tag.as_bytes()) {
                out.push(TagRef {
                    which,
                    close,
                    span: at..at + tag.len(),
                });
                break;
            }
        }
        pos = at + 1;
    }
    out
}

/// The line around `span` (without its line ending) when the tag is alone on it with less than
/// four columns of indentation; such lines are blanked so the tag acts as a block boundary.
///
/// Both scans stop at the first byte that rules the line out, so many tags on one long line
/// cost time in proportion to the line once, not once per tag.
fn alone_on_line(text: &str, span: &Range<usize>, body: &Range<usize>) -> Option<Range<usize>> {
    let bytes = text.as_bytes();
    let blank = |b: u8| matches!(b, b' ' | b'\t' | b'\r');
    let mut start = span.start;
    let mut indent = 0usize;
    while start > body.start && bytes[start - 1] != b'\n' {
        let b = bytes[start - 1];
        indent += if b == b'\t' { 4 } else { 1 };
        if !blank(b) || indent >= 4 {
            return None;
        }
        start -= 1;
    }
    let mut end = span.end;
    while end < body.end && bytes[end] != b'\n' {
        if !blank(bytes[end]) {
            return None;
        }
        end += 1;
    }
    Some(start..end)
}

/// Finds the real tags (outside code) and validates their order.
struct TagScan {
    thinking: Option<TagBlock>,
    answer: Option<TagBlock>,
    /// Real tags.
    tags: Vec<TagRef>,
    /// Repeated blocks (already reported): not stray text.
    extra: Vec<Range<usize>>,
}

fn scan_tags(
    text: &str,
    body: &Range<usize>,
    candidates: Vec<TagRef>,
    code: &[Range<usize>],
    problems: &mut Vec<Violation>,
) -> TagScan {
    let mut in_code_tags = Vec::new();
    let mut tags = Vec::new();
    for c in candidates {
        if in_ranges(code, c.span.start) {
            in_code_tags.push(c);
        } else {
            tags.push(c);
        }
    }

    let tag_text = |t: &TagRef| -> String {
        format!("`<{}{}>`", if t.close { "/" } else { "" }, t.which.name())
    };
    // Every block closed (or cut off), in order; duplicates are reported after the walk.
    let mut blocks: Vec<(Which, TagBlock)> = Vec::new();
    // The open block: which, and where it opened.
    let mut open: Option<(Which, Range<usize>)> = None;
    for t in &tags {
        match (&open, t.close) {
            (None, false) => open = Some((t.which, t.span.clone())),
            (Some((w, _)), false) if *w == t.which => {
                problems.push(Violation::error(
                    Rule::Tags,
                    t.span.clone(),
                    format!(
                        "{} inside another `<{}>` block; tags do not nest",
                        tag_text(t),
                        w.name()
                    ),
                ));
            }
            (Some((w, o)), false) => {
                problems.push(
                    Violation::error(
                        Rule::Tags,
                        o.clone(),
                        format!("`<{}>` is not closed before {}", w.name(), tag_text(t)),
                    )
                    .with_help(format!("close it with `</{}>`", w.name())),
                );
                blocks.push((
                    *w,
                    TagBlock {
                        open: o.clone(),
                        close: t.span.start..t.span.start,
                        inner: o.end..t.span.start,
                    },
                ));
                open = Some((t.which, t.span.clone()));
            }
            (Some((w, o)), true) if *w == t.which => {
                blocks.push((
                    *w,
                    TagBlock {
                        open: o.clone(),
                        close: t.span.clone(),
                        inner: o.end..t.span.start,
                    },
                ));
                open = None;
            }
            (Some((w, _)), true) => problems.push(Violation::error(
                Rule::Tags,
                t.span.clone(),
                format!("{} while `<{}>` is open", tag_text(t), w.name()),
            )),
            (None, true) => problems.push(Violation::error(
                Rule::Tags,
                t.span.clone(),
                format!("{} without a matching `<{}>`", tag_text(t), t.which.name()),
            )),
        }
    }
    if let Some((w, o)) = open {
        problems.push(
            Violation::error(
                Rule::Tags,
                o.clone(),
                format!("`<{}>` is never closed", w.name()),
            )
            .with_help(format!("close it with `</{}>`", w.name())),
        );
        blocks.push((
            w,
            TagBlock {
                open: o.clone(),
                close: body.end..body.end,
                inner: o.end..body.end,
            },
        ));
    }
    let mut thinking: Option<TagBlock> = None;
    let mut answer: Option<TagBlock> = None;
    let mut extra = Vec::new();
    for (which, block) in blocks {
        let slot = match which {
            Which::Thinking => &mut thinking,
            Which::Answer => &mut answer,
        };
        if slot.is_none() {
            *slot = Some(block);
        } else {
            problems.push(Violation::error(
                Rule::Tags,
                block.open.clone(),
                format!(
                    "a second `<{}>` block; an envelope has exactly one",
                    which.name()
                ),
            ));
            extra.push(block.open.start..block.close.end.max(block.open.end));
        }
    }
    let hint = in_code_tags.first().map(|t| {
        let line = text[..t.span.start].matches('\n').count() + 1;
        format!(
            "the {} on line {line} is inside code (a fence or backticks), where tags are text; \
             check for an unclosed ``` fence",
            tag_text(t)
        )
    });
    // A missing block is reported at the body's first line of text (or where the body starts).
    let body_text = &text[body.clone()];
    let lead = body_text.len() - body_text.trim_start().len();
    let anchor = body.start + lead;
    let anchor = anchor
        ..text[anchor..body.end]
            .find(['\r', '\n'])
            .map_or(body.end, |i| anchor + i);
    for (which, slot) in [(Which::Thinking, &thinking), (Which::Answer, &answer)] {
        if slot.is_none() {
            let mut v = Violation::error(
                Rule::Tags,
                anchor.clone(),
                format!(
                    "no `<{0}>…</{0}>` block after the frontmatter",
                    which.name()
                ),
            );
            v = match &hint {
                Some(h) => v.with_help(h.clone()),
                None => v.with_help(format!(
                    "write `<{0}>` and `</{0}>` on lines of their own",
                    which.name()
                )),
            };
            problems.push(v);
        }
    }
    if let (Some(t), Some(a)) = (&thinking, &answer) {
        if a.open.start < t.open.start {
            problems.push(Violation::error(
                Rule::Tags,
                t.open.clone(),
                "`<thinking>` comes after `<answer>`; thinking goes first",
            ));
        }
    }
    TagScan {
        thinking,
        answer,
        tags,
        extra,
    }
}

/// Whether `offset` lies in one of the sorted, non-overlapping-by-start `ranges`.
fn in_ranges(ranges: &[Range<usize>], offset: usize) -> bool {
    // Ranges are in document order; nested ranges (inline code never nests) do not occur.
    let i = ranges.partition_point(|r| r.start <= offset);
    i > 0 && ranges[i - 1].contains(&offset)
}

fn check_stray(text: &str, body: &Range<usize>, scan: &TagScan, problems: &mut Vec<Violation>) {
    if scan.thinking.is_none() && scan.answer.is_none() {
        return;
    }
    let mut covered: Vec<Range<usize>> = scan.tags.iter().map(|t| t.span.clone()).collect();
    covered.extend(scan.extra.iter().cloned());
    for b in [&scan.thinking, &scan.answer].into_iter().flatten() {
        covered.push(b.open.start..b.close.end.max(b.open.end));
    }
    covered.sort_by_key(|r| r.start);
    let mut pos = body.start;
    let mut gaps = Vec::new();
    for r in &covered {
        if r.start > pos {
            gaps.push(pos..r.start);
        }
        pos = pos.max(r.end);
    }
    if pos < body.end {
        gaps.push(pos..body.end);
    }
    for gap in gaps {
        let s = &text[gap.clone()];
        let lead = s.len() - s.trim_start().len();
        let trail = s.len() - s.trim_end().len();
        if lead == s.len() {
            continue;
        }
        let span = gap.start + lead..gap.end - trail;
        let line_end = text[span.clone()]
            .find('\n')
            .map_or(span.end, |i| span.start + i);
        problems.push(
            Violation::error(
                Rule::StrayText,
                span.start..line_end,
                "text outside the frontmatter, `<thinking>` and `<answer>`",
            )
            .with_help("move it into `<thinking>` or `<answer>`, or delete it"),
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Body: markdown

fn parse_body(text: &str, env: &mut Envelope) {
    let body = env.body.clone();
    let candidates = tag_candidates(text, &body);

    // Mask the tags so pulldown-cmark sees the answer as markdown: a tag alone on its line becomes
    // a blank line (a block boundary, as if the answer were its own document); any other tag loses
    // its `<` so it cannot open an HTML block that would swallow fences and headings.
    let mut masked = text[body.clone()].as_bytes().to_vec();
    for c in &candidates {
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

    let events: Vec<(Event, Range<usize>)> = Parser::new_ext(&masked, Options::empty())
        .into_offset_iter()
        .map(|(e, r)| (e, r.start + body.start..r.end + body.start))
        .collect();

    let mut code: Vec<Range<usize>> = Vec::new();
    let mut block_start = None;
    for (event, range) in &events {
        match event {
            Event::Start(Tag::CodeBlock(_)) => block_start = Some(range.start),
            Event::End(TagEnd::CodeBlock) => {
                if let Some(s) = block_start.take() {
                    code.push(s..range.end);
                }
            }
            Event::Code(_) => code.push(range.clone()),
            _ => {}
        }
    }

    let scan = scan_tags(text, &body, candidates, &code, &mut env.problems);
    check_stray(text, &body, &scan, &mut env.problems);
    if let Some(t) = &scan.thinking {
        if text[t.inner.clone()].trim().is_empty() {
            env.problems.push(Violation::error(
                Rule::ThinkingEmpty,
                t.open.clone(),
                "the `<thinking>` block is empty",
            ));
        }
    }
    if let Some(a) = &scan.answer {
        if text[a.inner.clone()].trim().is_empty() {
            env.problems.push(Violation::error(
                Rule::AnswerEmpty,
                a.open.clone(),
                "the `<answer>` block is empty",
            ));
        } else {
            let inner = a.inner.clone();
            let first = events.partition_point(|(_, r)| r.start < inner.start);
            let last = events.partition_point(|(_, r)| r.start < inner.end);
            let mut walker = AnswerWalker::new(text, &masked, body.start, env);
            for (event, range) in events.get(first..last).unwrap_or(&[]) {
                walker.event(event, range);
            }
            walker.finish();
        }
    }
    env.thinking = scan.thinking;
    env.answer = scan.answer;
}

/// Reads the Evidence + Excerpt pairs of a markdown document that is not an envelope (a plan or
/// report under `thoughts/`): the optional frontmatter is skipped and the whole body is walked as
/// an answer would be, so citations are recognised exactly as in answers.
pub fn parse_document(text: &str) -> Envelope {
    let mut env = Envelope {
        body: 0..text.len(),
        ..Default::default()
    };
    if let Ok(fm) = split_frontmatter(text) {
        env.body = fm.body.clone();
    }
    let body = env.body.clone();
    let Some(slice) = text.get(body.clone()) else {
        return env;
    };
    let events: Vec<(Event, Range<usize>)> = Parser::new_ext(slice, Options::empty())
        .into_offset_iter()
        .map(|(e, r)| (e, r.start + body.start..r.end + body.start))
        .collect();
    let mut walker = AnswerWalker::new(text, slice, body.start, &mut env);
    for (event, range) in &events {
        walker.event(event, range);
    }
    walker.finish();
    env.problems.sort_by_key(|v| (v.span.start, v.rule));
    locate(text, &mut env.problems);
    env
}

/// Where an `**Excerpt**:` label waits for its code block.
#[derive(Debug, Clone)]
enum ExcerptTarget {
    Evidence(usize),
    Orphan,
}

struct AnswerWalker<'a> {
    text: &'a str,
    masked: &'a str,
    base: usize,
    env: &'a mut Envelope,
    /// At the start of a paragraph, list item or line: a bold label may begin here.
    line_start: bool,
    /// A bold span that began at a line start: its start and text so far.
    strong: Option<(usize, String)>,
    /// A bold span without a colon inside; a label if the next text starts with `:`.
    pending: Option<(String, Range<usize>)>,
    heading: Option<(u8, usize, String)>,
    in_code_block: bool,
    /// The excerpt block being captured: its start and content.
    capture: Option<(usize, String)>,
    /// The Evidence item whose references are being collected.
    collecting: Option<usize>,
    /// The latest Evidence item, for pairing with an Excerpt.
    last_evidence: Option<usize>,
    awaiting: Option<(Range<usize>, ExcerptTarget)>,
    capture_target: Option<ExcerptTarget>,
    /// Evidence items that held a malformed reference.
    malformed: Vec<usize>,
}

impl<'a> AnswerWalker<'a> {
    fn new(text: &'a str, masked: &'a str, base: usize, env: &'a mut Envelope) -> Self {
        AnswerWalker {
            text,
            masked,
            base,
            env,
            line_start: false,
            strong: None,
            pending: None,
            heading: None,
            in_code_block: false,
            capture: None,
            collecting: None,
            last_evidence: None,
            awaiting: None,
            capture_target: None,
            malformed: Vec::new(),
        }
    }

    /// The original text of an event whose masked text is `t` at `range`.
    fn original<'s>(&self, t: &'s str, range: &Range<usize>) -> &'s str
    where
        'a: 's,
    {
        let local = range.start - self.base..range.end - self.base;
        if self.masked.get(local) == Some(t) {
            if let Some(orig) = self.text.get(range.clone()) {
                return orig;
            }
        }
        t
    }

    /// A block that is not the awaited code block arrived: the excerpt is not fenced.
    fn excerpt_not_fenced(&mut self) {
        if let Some((label, _)) = self.awaiting.take() {
            self.env.problems.push(
                Violation::error(
                    Rule::ExcerptNotFenced,
                    label,
                    "the Excerpt is not followed by a fenced code block",
                )
                .with_help(
                    "put the cited lines in a ``` fenced block right after `**Excerpt**:`, \
                     indented like the list item",
                ),
            );
        }
    }

    fn block_boundary(&mut self) {
        self.collecting = None;
        self.pending = None;
        self.strong = None;
    }

    fn event(&mut self, event: &Event, range: &Range<usize>) {
        if self.in_code_block {
            match event {
                Event::Text(t) if self.capture.is_some() => {
                    let orig = self.original(t, range);
                    if let Some((_, content)) = self.capture.as_mut() {
                        content.push_str(orig);
                    }
                }
                Event::End(TagEnd::CodeBlock) => {
                    self.in_code_block = false;
                    if let (Some((start, content)), Some(ExcerptTarget::Evidence(i))) =
                        (self.capture.take(), self.capture_target.take())
                    {
                        if let Some(ex) = self
                            .env
                            .evidence
                            .get_mut(i)
                            .and_then(|e| e.excerpt.as_mut())
                        {
                            ex.block = Some(ExcerptBlock {
                                span: start..range.end,
                                content,
                            });
                        }
                    }
                }
                _ => {}
            }
            return;
        }
        match event {
            Event::Start(Tag::CodeBlock(kind)) => {
                self.block_boundary();
                self.in_code_block = true;
                match (kind, self.awaiting.take()) {
                    (CodeBlockKind::Fenced(_), Some((_, target))) => {
                        self.capture = Some((range.start, String::new()));
                        self.capture_target = Some(target);
                    }
                    (CodeBlockKind::Indented, Some(awaited)) => {
                        self.awaiting = Some(awaited);
                        self.excerpt_not_fenced();
                    }
                    _ => {}
                }
            }
            Event::Start(Tag::Paragraph) | Event::Start(Tag::Item) => {
                self.block_boundary();
                self.excerpt_not_fenced();
                self.line_start = true;
            }
            Event::Start(Tag::Heading { level, .. }) => {
                self.block_boundary();
                self.excerpt_not_fenced();
                self.last_evidence = None;
                self.line_start = false;
                self.heading = Some((heading_level(*level), range.start, String::new()));
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some((level, start, text)) = self.heading.take() {
                    self.env.headings.push(Heading {
                        level,
                        text: text.trim().to_string(),
                        span: start..range.end,
                    });
                }
            }
            Event::Start(Tag::List(_) | Tag::BlockQuote(_) | Tag::HtmlBlock | Tag::Table(_))
            | Event::Rule => {
                self.block_boundary();
                self.excerpt_not_fenced();
                self.line_start = false;
            }
            Event::End(TagEnd::Paragraph | TagEnd::Item) => {
                self.block_boundary();
                self.line_start = false;
            }
            Event::Start(Tag::Strong) => {
                self.pending = None;
                if self.line_start && self.heading.is_none() {
                    self.strong = Some((range.start, String::new()));
                }
                self.line_start = false;
            }
            Event::End(TagEnd::Strong) => {
                if let Some((start, label)) = self.strong.take() {
                    let trimmed = label.trim();
                    if let Some(name) = trimmed.strip_suffix(':') {
                        self.label(name.trim().to_string(), start..range.end);
                    } else {
                        self.pending = Some((trimmed.to_string(), start..range.end));
                    }
                }
            }
            Event::Text(t) => {
                if let Some((_, _, h)) = self.heading.as_mut() {
                    h.push_str(t);
                }
                if let Some((_, s)) = self.strong.as_mut() {
                    s.push_str(t);
                    return;
                }
                if let Some((name, span)) = self.pending.take() {
                    if t.trim_start().starts_with(':') {
                        self.label(name, span);
                    }
                }
                if !t.trim().is_empty() {
                    self.line_start = false;
                }
            }
            Event::Code(c) => {
                self.pending = None;
                self.line_start = false;
                if let Some((_, _, h)) = self.heading.as_mut() {
                    h.push_str(c);
                }
                if let Some((_, s)) = self.strong.as_mut() {
                    s.push_str(c);
                }
                if let Some(i) = self.collecting {
                    self.reference(i, c, range.clone());
                }
            }
            Event::SoftBreak | Event::HardBreak => {
                self.pending = None;
                self.line_start = true;
            }
            _ => {
                self.pending = None;
                self.line_start = false;
            }
        }
    }

    fn label(&mut self, name: String, span: Range<usize>) {
        self.collecting = None;
        if name.eq_ignore_ascii_case("evidence") {
            self.excerpt_not_fenced();
            let i = self.env.evidence.len();
            self.env.evidence.push(EvidenceItem {
                label: span,
                references: Vec::new(),
                excerpt: None,
            });
            self.collecting = Some(i);
            self.last_evidence = Some(i);
        } else if name.eq_ignore_ascii_case("excerpt") {
            self.excerpt_not_fenced();
            let target = match self.last_evidence.take() {
                Some(i) if self.env.evidence[i].excerpt.is_none() => {
                    self.env.evidence[i].excerpt = Some(Excerpt {
                        label: span.clone(),
                        block: None,
                    });
                    ExcerptTarget::Evidence(i)
                }
                _ => {
                    self.env.problems.push(
                        Violation::error(
                            Rule::ExcerptOrphan,
                            span.clone(),
                            "an Excerpt with no Evidence item before it",
                        )
                        .with_help("put `**Evidence**: `path:N-M`` right before each Excerpt"),
                    );
                    ExcerptTarget::Orphan
                }
            };
            self.awaiting = Some((span, target));
        } else {
            self.env.labels.push(Label { name, span });
        }
    }

    /// Parses the inline code `code` found in Evidence item `i`.
    fn reference(&mut self, i: usize, code: &str, span: Range<usize>) {
        match parse_reference(code) {
            Ok((path, first, last)) => self.env.evidence[i].references.push(Reference {
                path: path.to_string(),
                first,
                last,
                span,
            }),
            Err(why) => {
                self.malformed.push(i);
                self.env.problems.push(
                    Violation::error(
                        Rule::ReferenceFormat,
                        span,
                        format!(
                            "`{}` is not a `path:N` or `path:N-M` reference: {why}",
                            code.trim()
                        ),
                    )
                    .with_help(
                        "cite a file relative to the project root and its lines, \
                     e.g. `docs/spec.md:12-14`",
                    ),
                )
            }
        }
    }

    fn finish(mut self) {
        self.excerpt_not_fenced();
        for (i, item) in self.env.evidence.iter().enumerate() {
            if item.excerpt.is_none() {
                self.env.problems.push(
                    Violation::error(
                        Rule::MissingExcerpt,
                        item.label.clone(),
                        "this Evidence item has no Excerpt after it",
                    )
                    .with_help(
                        "follow it with `**Excerpt**:` and a fenced block of the cited lines",
                    ),
                );
            }
            if item.references.is_empty() && !self.malformed.contains(&i) {
                self.env.problems.push(
                    Violation::error(
                        Rule::ReferenceFormat,
                        item.label.clone(),
                        "this Evidence item cites nothing",
                    )
                    .with_help("write the reference in backticks: **Evidence**: `path:N-M`"),
                );
            }
        }
    }
}

fn heading_level(level: HeadingLevel) -> u8 {
    match level {
        HeadingLevel::H1 => 1,
        HeadingLevel::H2 => 2,
        HeadingLevel::H3 => 3,
        HeadingLevel::H4 => 4,
        HeadingLevel::H5 => 5,
        HeadingLevel::H6 => 6,
    }
}

/// Splits `path:N` / `path:N-M`; the error says what is wrong.
pub fn parse_reference(code: &str) -> Result<(&str, usize, usize), &'static str> {
    let code = code.trim();
    let (path, lines) = code
        .rsplit_once(':')
        .ok_or("it has no `:` before the line numbers")?;
    if path.trim().is_empty() {
        return Err("the path is empty");
    }
    let (first, last) = match lines.split_once('-') {
        Some((a, b)) => (a, b),
        None => (lines, lines),
    };
    let number = |s: &str| -> Result<usize, &'static str> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err("line numbers are digits, as in `path:12` or `path:12-14`");
        }
        s.parse::<usize>()
            .map_err(|_| "the line number is too large")
    };
    let (first, last) = (number(first)?, number(last)?);
    if first == 0 {
        return Err("lines are numbered from 1");
    }
    if last < first {
        return Err("the range ends before it starts");
    }
    Ok((path, first, last))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "---\nmessage_id: thoughts-2026-01-19-001\ncorrelation_id: c-1\n\
        timestamp: 2026-01-19T14:30:00Z\nmessage_type: DOCUMENT_ANALYSIS_RESPONSE\n---\n\n\
        <thinking>\nwhy\n</thinking>\n\n<answer>\n## Analysis\n\n#### Decision: JWT\n\
        - **Evidence**: `docs/a.md:2-3`\n- **Excerpt**:\n  ```markdown\n  line two\n  line three\n  ```\n\
        </answer>\n";

    fn codes(env: &Envelope) -> Vec<&'static str> {
        env.problems.iter().map(|p| p.rule.code()).collect()
    }

    #[test]
    fn parses_a_good_envelope() {
        let env = parse(GOOD).unwrap();
        assert_eq!(env.message_id(), Some("thoughts-2026-01-19-001"));
        assert_eq!(env.timestamp(), Some("2026-01-19T14:30:00Z"));
        let f = env.field("correlation_id").unwrap();
        assert_eq!(&GOOD[f.key_span.clone()], "correlation_id");
        assert_eq!(&GOOD[f.value_span.clone()], "c-1");
        assert_eq!(env.headings.len(), 2);
        assert_eq!(env.headings[1].text, "Decision: JWT");
        assert_eq!(env.evidence.len(), 1);
        let ev = &env.evidence[0];
        assert_eq!(ev.references[0].to_string(), "docs/a.md:2-3");
        assert_eq!(&GOOD[ev.references[0].span.clone()], "`docs/a.md:2-3`");
        let block = ev.excerpt.as_ref().unwrap().block.as_ref().unwrap();
        assert_eq!(block.lines(), vec!["line two", "line three"]);
        assert_eq!(
            env.answer_text(GOOD).unwrap().lines().next(),
            Some("## Analysis")
        );
        assert_eq!(env.thinking_text(GOOD), Some("why"));
    }

    #[test]
    fn numbers_keep_their_source_text() {
        let text = "---\ncorrelation_id: 0012\nflag: yes\n---\n";
        let env = Envelope::parse_lenient(text);
        assert_eq!(env.correlation_id(), Some("0012"));
        assert_eq!(env.scalar("flag"), Some("yes"));
    }

    #[test]
    fn frontmatter_problems() {
        assert_eq!(
            codes(&Envelope::parse_lenient(
                "<thinking>t</thinking><answer>a</answer>"
            )),
            ["envelope/frontmatter-missing"]
        );
        assert_eq!(
            codes(&Envelope::parse_lenient("hello")),
            [
                "envelope/frontmatter-missing",
                "envelope/tags",
                "envelope/tags"
            ]
        );
        assert_eq!(
            codes(&Envelope::parse_lenient("---\na: 1\n")),
            ["envelope/frontmatter-unclosed"]
        );
        let env =
            Envelope::parse_lenient("---\na: [1\n---\n<thinking>x</thinking><answer>y</answer>");
        assert_eq!(codes(&env), ["envelope/frontmatter-yaml"]);
        let env = Envelope::parse_lenient(
            "---\na: 1\na: 2\n---\n<thinking>x</thinking><answer>y</answer>",
        );
        assert_eq!(codes(&env), ["envelope/frontmatter-yaml"]);
        let env =
            Envelope::parse_lenient("---\n- a\n---\n<thinking>x</thinking><answer>y</answer>");
        assert_eq!(codes(&env), ["envelope/frontmatter-yaml"]);
    }

    #[test]
    fn tags_in_code_are_text() {
        let text = "---\na: 1\n---\n<thinking>\nsee `<answer>`\n</thinking>\n<answer>\n```md\n<answer>\n</answer>\n```\nok\n</answer>\n";
        let env = parse(text).unwrap();
        assert!(env.answer_text(text).unwrap().ends_with("ok"));
    }

    #[test]
    fn tag_order_problems() {
        let fm = "---\na: 1\n---\n";
        let cases = [
            ("<answer>\na\n</answer>\n<thinking>\nt\n</thinking>\n", 1),
            ("<thinking>\nt\n<answer>\na\n</answer>\n", 1),
            ("<thinking>\nt\n</thinking>\n<answer>\na\n", 1),
            (
                "<thinking>\nt\n</thinking>\n<thinking>\nt\n</thinking>\n<answer>\na\n</answer>\n",
                1,
            ),
            (
                "<thinking>\nt\n</thinking>\n<answer>\n<answer>\na\n</answer>\n</answer>\n",
                2,
            ),
            ("<thinking>\nt\n</thinking>\n", 1),
        ];
        for (body, n) in cases {
            let text = format!("{fm}{body}");
            let env = Envelope::parse_lenient(&text);
            let tags = env.problems.iter().filter(|p| p.rule == Rule::Tags).count();
            assert_eq!(tags, n, "{body:?}: {:?}", env.problems);
        }
    }

    #[test]
    fn stray_and_empty() {
        let text = "---\na: 1\n---\nhello\n<thinking>\n \n</thinking>\n<answer>\n\n</answer>\nbye";
        let env = Envelope::parse_lenient(text);
        assert_eq!(
            codes(&env),
            [
                "envelope/stray-text",
                "envelope/thinking-empty",
                "envelope/answer-empty",
                "envelope/stray-text"
            ]
        );
    }

    #[test]
    fn references_parse() {
        assert_eq!(parse_reference("a.md:3"), Ok(("a.md", 3, 3)));
        assert_eq!(parse_reference(" a:b.md:3-5 "), Ok(("a:b.md", 3, 5)));
        assert!(parse_reference("a.md").is_err());
        assert!(parse_reference("a.md:0").is_err());
        assert!(parse_reference("a.md:5-3").is_err());
        assert!(parse_reference(":5").is_err());
        assert!(parse_reference("a.md:x").is_err());
        assert!(parse_reference("a.md:99999999999999999999999").is_err());
    }

    #[test]
    fn evidence_structure_problems() {
        let text = "---\na: 1\n---\n<thinking>\nt\n</thinking>\n<answer>\n\
            - **Evidence**: `a.md:0`\n\
            - **Excerpt**: nothing\n\
            - **Excerpt**:\n  ```\n  x\n  ```\n\
            - **Evidence:** `a.md:1`\n\n\
            **Evidence**: `b.md:2`\n\n**Excerpt**:\n\n    indented\n\n</answer>\n";
        let env = Envelope::parse_lenient(text);
        assert_eq!(
            codes(&env),
            [
                "evidence/reference-format",
                "excerpt/not-fenced",
                "excerpt/orphan",
                "evidence/missing-excerpt",
                "excerpt/not-fenced",
            ],
            "{:#?}",
            env.problems
        );
        assert_eq!(env.evidence.len(), 3);
    }

    #[test]
    fn fence_at_column_zero_after_list_item() {
        let text = "---\na: 1\n---\n<thinking>\nt\n</thinking>\n<answer>\n\
            - **Evidence**: `a.md:1`\n- **Excerpt**:\n```\nfirst\n```\n</answer>\n";
        let env = parse(text).unwrap();
        let block = env.evidence[0]
            .excerpt
            .as_ref()
            .unwrap()
            .block
            .as_ref()
            .unwrap();
        assert_eq!(block.lines(), ["first"]);
    }
}
