//! The answer's markdown: headings, bold labels, Evidence items with their references, and the
//! Excerpt code blocks that go with them. Also walks documents that are no envelope (plans and
//! reports under `thoughts/`), so citations are recognised the same way in both.

use super::{
    Citation, Envelope, EvidenceItem, Excerpt, ExcerptBlock, Heading, Label, NamedPath,
    MAX_EXCERPT_BYTES,
};
use crate::contract::rule::{sort, Rule, Tally};
use crate::markdown::split_frontmatter;
use crate::problem::locate;
use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Tag, TagEnd};
use std::ops::Range;

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
    super::report_forced_cut(slice, body.start, &mut env.problems);
    let mut walker = AnswerWalker::new(text, slice, body.start, &mut env);
    for (event, range) in super::offset_events(slice, body.start) {
        walker.event(&event, &range);
    }
    walker.finish();
    sort(&mut env.problems);
    locate(text, &mut env.problems);
    env
}

/// Headings, bold labels, Evidence items and citations an answer (or document) keeps, each. A
/// real answer has tens; past this the rest are counted, not kept or checked, and the answer gets
/// an `envelope/too-large` error, so an answer of a million Evidence items costs memory for a
/// thousand and cannot hide a false citation behind them either.
pub const MAX_ITEMS: usize = 1_000;

/// What was left out because a list reached [`MAX_ITEMS`]: how many, and where the first was.
#[derive(Debug, Default)]
struct Overflow {
    count: usize,
    first: Option<Range<usize>>,
}

impl Overflow {
    fn add(&mut self, span: &Range<usize>) {
        self.count += 1;
        self.first.get_or_insert_with(|| span.clone());
    }
}

/// Where an `**Excerpt**:` label waits for its code block.
#[derive(Debug, Clone)]
enum ExcerptTarget {
    Evidence(usize),
    Orphan,
}

pub(super) struct AnswerWalker<'a> {
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
    /// The excerpt block being captured: its start, content, and lines counted past the cap.
    capture: Option<(usize, String, usize)>,
    /// The Evidence item whose references are being collected.
    collecting: Option<usize>,
    /// The latest Evidence item, for pairing with an Excerpt.
    last_evidence: Option<usize>,
    awaiting: Option<(Range<usize>, ExcerptTarget)>,
    capture_target: Option<ExcerptTarget>,
    /// Evidence items that held a malformed reference.
    malformed: Vec<usize>,
    /// Evidence items whose text held a reference written without backticks, and that text:
    /// the repair shows it wrapped, ready to copy.
    bare: Vec<(usize, String)>,
    /// The latest Evidence item was left out (past [`MAX_ITEMS`]): its Excerpt is no orphan.
    skipped_evidence: bool,
    /// Citations kept so far, over all Evidence items.
    citations: usize,
    /// Left out past [`MAX_ITEMS`]: headings, labels, Evidence items, citations, named paths.
    overflow: [Overflow; 5],
    tally: Tally,
}

impl<'a> AnswerWalker<'a> {
    pub(super) fn new(text: &'a str, masked: &'a str, base: usize, env: &'a mut Envelope) -> Self {
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
            bare: Vec::new(),
            collecting: None,
            last_evidence: None,
            awaiting: None,
            capture_target: None,
            malformed: Vec::new(),
            skipped_evidence: false,
            citations: 0,
            overflow: Default::default(),
            tally: Tally::default(),
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
            self.tally.push(
                &mut self.env.problems,
                Rule::ExcerptNotFenced
                    .problem(label, "the Excerpt is not followed by a fenced code block")
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

    pub(super) fn event(&mut self, event: &Event, range: &Range<usize>) {
        if self.in_code_block {
            match event {
                Event::Text(t) if self.capture.is_some() => {
                    let orig = self.original(t, range);
                    if let Some((_, content, more)) = self.capture.as_mut() {
                        if *more == 0 && content.len() + orig.len() <= MAX_EXCERPT_BYTES {
                            content.push_str(orig);
                        } else {
                            *more += orig.lines().count().max(1);
                        }
                    }
                }
                Event::End(TagEnd::CodeBlock) => {
                    self.in_code_block = false;
                    if let (Some((start, content, more_lines)), Some(ExcerptTarget::Evidence(i))) =
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
                                more_lines,
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
                        self.capture = Some((range.start, String::new(), 0));
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
                self.skipped_evidence = false;
                self.line_start = false;
                self.heading = Some((heading_level(*level), range.start, String::new()));
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some((level, start, text)) = self.heading.take() {
                    let span = start..range.end;
                    if self.env.headings.len() < MAX_ITEMS {
                        self.env.headings.push(Heading {
                            level,
                            text: text.trim().to_string(),
                            span,
                        });
                    } else {
                        self.overflow[0].add(&span);
                    }
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
                    push_capped(h, t);
                }
                if let Some((_, s)) = self.strong.as_mut() {
                    push_capped(s, t);
                    return;
                }
                if let Some((name, span)) = self.pending.take() {
                    if t.trim_start().starts_with(':') {
                        self.label(name, span);
                    }
                }
                if let Some(i) = self.collecting {
                    if self.bare.last().is_none_or(|(j, _)| *j != i) {
                        let word = t.split_whitespace().find_map(|w| {
                            let w = w.trim_end_matches([',', ';', '.', ')']);
                            parse_reference(w).is_ok().then(|| w.to_string())
                        });
                        if let Some(w) = word {
                            self.bare.push((i, w));
                        }
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
                    push_capped(h, c);
                }
                if let Some((_, s)) = self.strong.as_mut() {
                    push_capped(s, c);
                }
                if let Some(i) = self.collecting {
                    self.reference(i, c, range.clone());
                } else if let Some(path) = named_path(c) {
                    if self.env.paths.len() < MAX_ITEMS {
                        self.env.paths.push(NamedPath {
                            path: path.to_string(),
                            span: range.clone(),
                        });
                    } else {
                        self.overflow[4].add(range);
                    }
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
            if i >= MAX_ITEMS {
                self.overflow[2].add(&span);
                self.last_evidence = None;
                self.skipped_evidence = true;
                return;
            }
            self.skipped_evidence = false;
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
                // The Excerpt of an Evidence item left out: not an orphan, not kept either.
                None if std::mem::take(&mut self.skipped_evidence) => ExcerptTarget::Orphan,
                Some(i) if self.env.evidence[i].excerpt.is_none() => {
                    self.env.evidence[i].excerpt = Some(Excerpt {
                        label: span.clone(),
                        block: None,
                    });
                    ExcerptTarget::Evidence(i)
                }
                _ => {
                    self.tally.push(
                        &mut self.env.problems,
                        Rule::ExcerptOrphan
                            .problem(span.clone(), "an Excerpt with no Evidence item before it")
                            .with_help("put `**Evidence**: `path:N-M`` right before each Excerpt"),
                    );
                    ExcerptTarget::Orphan
                }
            };
            self.awaiting = Some((span, target));
        } else if self.env.labels.len() < MAX_ITEMS {
            self.env.labels.push(Label { name, span });
        } else {
            self.overflow[1].add(&span);
        }
    }

    /// Parses the inline code `code` found in Evidence item `i`.
    fn reference(&mut self, i: usize, code: &str, span: Range<usize>) {
        match parse_reference(code) {
            Ok(_) if self.citations >= MAX_ITEMS => self.overflow[3].add(&span),
            Ok((path, first, last)) => {
                self.citations += 1;
                self.env.evidence[i].references.push(Citation {
                    path: path.to_string(),
                    first,
                    last,
                    span,
                })
            }
            Err(why) => {
                if self.malformed.last() != Some(&i) {
                    self.malformed.push(i);
                }
                self.tally.push(
                    &mut self.env.problems,
                    Rule::ReferenceFormat
                        .problem(
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

    pub(super) fn finish(mut self) {
        self.excerpt_not_fenced();
        for (i, item) in self.env.evidence.iter().enumerate() {
            if item.excerpt.is_none() {
                self.tally.push(
                    &mut self.env.problems,
                    Rule::MissingExcerpt
                        .problem(
                            item.label.clone(),
                            "this Evidence item has no Excerpt after it",
                        )
                        .with_help(
                            "follow it with `**Excerpt**:` and a fenced block of the cited lines",
                        ),
                );
            }
            if item.references.is_empty() && self.malformed.binary_search(&i).is_err() {
                let help = match self.bare.iter().find(|(j, _)| *j == i) {
                    Some((_, w)) => format!(
                        "the reference must be in backticks; write the line as: \
                         - **Evidence**: `{w}`"
                    ),
                    None => "write the reference in backticks: **Evidence**: `path:N-M`".into(),
                };
                self.tally.push(
                    &mut self.env.problems,
                    Rule::ReferenceFormat
                        .problem(item.label.clone(), "this Evidence item cites nothing")
                        .with_help(help),
                );
            }
        }
        let names = [
            "headings",
            "bold labels",
            "Evidence items",
            "citations",
            "named file paths",
        ];
        for (overflow, what) in self.overflow.iter().zip(names) {
            if let Some(first) = &overflow.first {
                self.env.problems.push(
                    Rule::TooLarge
                        .problem(
                            first.clone(),
                            format!(
                                "the answer holds {} {what}; the first {MAX_ITEMS} are checked \
                                 and the {} from here on are not",
                                MAX_ITEMS + overflow.count,
                                overflow.count
                            ),
                        )
                        .with_help(format!(
                            "keep to at most {MAX_ITEMS} {what}; split the work over several \
                             answers"
                        )),
                );
            }
        }
        self.tally.finish(&mut self.env.problems);
    }
}

/// The project file a backticked `code` outside Evidence names, if it reads as one: no spaces,
/// no glob or placeholder characters, a `/` in it, and a last part with an extension
/// (`src/config.rs`, `thoughts/shared/decisions/x.md`). A `path:N-M` keeps only its path. Words
/// such as `and/or`, globs such as `thoughts/**/*.md`, placeholders such as `<file>.md` and URLs
/// are no file names, so they are not held to exist.
pub(crate) fn named_path(code: &str) -> Option<&str> {
    let code = code.trim();
    let path = match parse_reference(code) {
        Ok((path, _, _)) => path,
        Err(_) => code,
    };
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '_' | '-');
    if path.is_empty() || !path.chars().all(allowed) || !path.contains('/') {
        return None;
    }
    let last = path.rsplit('/').next().unwrap_or_default();
    let (stem, ext) = last.rsplit_once('.')?;
    let ext_ok =
        !ext.is_empty() && ext.len() <= 8 && ext.chars().all(|c| c.is_ascii_alphanumeric());
    (!stem.is_empty() && ext_ok).then_some(path)
}

/// Bytes of a heading or bold label's text kept; a longer one is cut (a name, not a paragraph).
const MAX_NAME_BYTES: usize = 1_000;

/// Appends `more` to a heading or label text, up to [`MAX_NAME_BYTES`] (at a char boundary).
fn push_capped(text: &mut String, more: &str) {
    let room = MAX_NAME_BYTES.saturating_sub(text.len());
    if more.len() <= room {
        text.push_str(more);
    } else {
        let mut cut = room;
        while !more.is_char_boundary(cut) {
            cut -= 1;
        }
        text.push_str(&more[..cut]);
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
