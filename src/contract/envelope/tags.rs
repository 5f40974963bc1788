//! The `<thinking>` and `<answer>` blocks of an envelope's body: where the tags are (outside code),
//! whether they pair up in order, and any text outside the two blocks.

use super::TagBlock;
use crate::contract::rule::{Rule, Tally, MAX_PER_RULE};
use crate::markdown::LineIndex;
use crate::problem::Problem;
use std::ops::Range;

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
pub(super) struct TagRef {
    which: Which,
    close: bool,
    pub(super) span: Range<usize>,
}

const TAGS: [(&str, Which, bool); 4] = [
    ("<thinking>", Which::Thinking, false),
    ("</thinking>", Which::Thinking, true),
    ("<answer>", Which::Answer, false),
    ("</answer>", Which::Answer, true),
];

/// Every literal tag in `body` (absolute offsets), code or not, in order. An iterator, run once
/// to mask the tags and once to judge them, so that millions of tags cost no memory.
pub(super) fn tag_candidates<'t>(
    text: &'t str,
    body: &Range<usize>,
) -> impl Iterator<Item = TagRef> + 't {
    let end = body.end;
    let mut pos = body.start;
    std::iter::from_fn(move || loop {
        let at = pos + text.get(pos..end)?.find('<')?;
        // `<` is one byte, so the next position is a char boundary.
        pos = at + 1;
        let rest = &text.as_bytes()[at..end];
        for (tag, which, close) in TAGS {
            if rest.starts_with(tag.as_bytes()) {
                return Some(TagRef {
                    which,
                    close,
                    span: at..at + tag.len(),
                });
            }
        }
    })
}

/// The line around `span` (without its line ending) when the tag is alone on it with less than
/// four columns of indentation; such lines are blanked so the tag acts as a block boundary.
///
/// Both scans stop at the first byte that rules the line out, so many tags on one long line
/// cost time in proportion to the line once, not once per tag.
pub(super) fn alone_on_line(
    text: &str,
    span: &Range<usize>,
    body: &Range<usize>,
) -> Option<Range<usize>> {
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

/// Judges the tags one at a time, in document order: whether they pair up, which blocks they
/// make, and the text outside every block. Nothing is kept per tag (only the first `<thinking>`
/// and `<answer>` blocks and the first tag in code), and problems go through a [`Tally`], so an
/// answer of millions of tags is judged in constant memory.
pub(super) struct TagScan<'t> {
    text: &'t str,
    body: Range<usize>,
    pub(super) thinking: Option<TagBlock>,
    pub(super) answer: Option<TagBlock>,
    /// The open block: which, and where it opened.
    open: Option<(Which, Range<usize>)>,
    /// The first tag inside code, for the hint when a block is missing.
    first_in_code: Option<TagRef>,
    /// Text before this offset is covered (by a tag or an open block) or already judged.
    pos: usize,
    /// Stray text found before any block opened: reported only once one does, since an answer
    /// without blocks gets the missing-block problems instead. At most [`MAX_PER_RULE`] spans are
    /// kept; `pending_more` counts the rest.
    pending: Vec<Range<usize>>,
    pending_more: usize,
}

fn tag_text(t: &TagRef) -> String {
    format!("`<{}{}>`", if t.close { "/" } else { "" }, t.which.name())
}

impl<'t> TagScan<'t> {
    pub(super) fn new(text: &'t str, body: &Range<usize>) -> Self {
        TagScan {
            text,
            body: body.clone(),
            thinking: None,
            answer: None,
            open: None,
            first_in_code: None,
            pos: body.start,
            pending: Vec::new(),
            pending_more: 0,
        }
    }

    /// A tag inside code: text, not a tag; only the first is remembered, for a hint.
    pub(super) fn in_code(&mut self, t: TagRef) {
        self.first_in_code.get_or_insert(t);
    }

    fn any_block(&self) -> bool {
        self.thinking.is_some() || self.answer.is_some() || self.open.is_some()
    }

    /// Text in `gap` (outside every block and tag): stray unless blank.
    fn gap(&mut self, gap: Range<usize>, out: &mut Vec<Problem>, tally: &mut Tally) {
        let s = &self.text[gap.clone()];
        let lead = s.len() - s.trim_start().len();
        if lead == s.len() {
            return;
        }
        let trail = s.len() - s.trim_end().len();
        let span = gap.start + lead..gap.end - trail;
        if !self.any_block() {
            if self.pending.len() < MAX_PER_RULE {
                self.pending.push(span);
            } else {
                self.pending_more += 1;
            }
            return;
        }
        self.stray(span, out, tally);
    }

    fn stray(&self, span: Range<usize>, out: &mut Vec<Problem>, tally: &mut Tally) {
        let line_end = self.text[span.clone()]
            .find('\n')
            .map_or(span.end, |i| span.start + i);
        tally.push(
            out,
            Rule::StrayText
                .problem(
                    span.start..line_end,
                    "text outside the frontmatter, `<thinking>` and `<answer>`",
                )
                .with_help("move it into `<thinking>` or `<answer>`, or delete it"),
        );
    }

    /// The stray text held back until a block opened.
    fn flush_pending(&mut self, out: &mut Vec<Problem>, tally: &mut Tally) {
        for span in std::mem::take(&mut self.pending) {
            self.stray(span, out, tally);
        }
        if self.pending_more > 0 {
            let at = self.pos..self.pos;
            tally.left_out(Rule::StrayText.code(), self.pending_more, at);
            self.pending_more = 0;
        }
    }

    /// A real tag (outside code), in document order.
    pub(super) fn tag(&mut self, t: TagRef, out: &mut Vec<Problem>, tally: &mut Tally) {
        if self.open.is_none() {
            self.gap(self.pos..t.span.start.max(self.pos), out, tally);
        }
        self.pos = self.pos.max(t.span.end);
        match (self.open.clone(), t.close) {
            (None, false) => {
                self.open = Some((t.which, t.span.clone()));
                self.flush_pending(out, tally);
            }
            (Some((w, _)), false) if w == t.which => tally.push(
                out,
                Rule::Tags.problem(
                    t.span.clone(),
                    format!(
                        "{} inside another `<{}>` block; tags do not nest",
                        tag_text(&t),
                        w.name()
                    ),
                ),
            ),
            (Some((w, o)), false) => {
                tally.push(
                    out,
                    Rule::Tags
                        .problem(
                            o.clone(),
                            format!("`<{}>` is not closed before {}", w.name(), tag_text(&t)),
                        )
                        .with_help(format!("close it with `</{}>`", w.name())),
                );
                let block = TagBlock {
                    open: o.clone(),
                    close: t.span.start..t.span.start,
                    inner: o.end..t.span.start,
                };
                self.open = Some((t.which, t.span.clone()));
                self.block(w, block, out, tally);
            }
            (Some((w, o)), true) if w == t.which => {
                self.open = None;
                let block = TagBlock {
                    open: o.clone(),
                    close: t.span.clone(),
                    inner: o.end..t.span.start,
                };
                self.block(w, block, out, tally);
            }
            (Some((w, _)), true) => tally.push(
                out,
                Rule::Tags.problem(
                    t.span.clone(),
                    format!("{} while `<{}>` is open", tag_text(&t), w.name()),
                ),
            ),
            (None, true) => tally.push(
                out,
                Rule::Tags.problem(
                    t.span.clone(),
                    format!("{} without a matching `<{}>`", tag_text(&t), t.which.name()),
                ),
            ),
        }
    }

    /// A block closed (or cut off): the first of its kind is the envelope's, a later one is a
    /// repeat.
    fn block(&mut self, which: Which, block: TagBlock, out: &mut Vec<Problem>, tally: &mut Tally) {
        let slot = match which {
            Which::Thinking => &mut self.thinking,
            Which::Answer => &mut self.answer,
        };
        if slot.is_none() {
            *slot = Some(block);
        } else {
            tally.push(
                out,
                Rule::Tags.problem(
                    block.open.clone(),
                    format!(
                        "a second `<{}>` block; an envelope has exactly one",
                        which.name()
                    ),
                ),
            );
        }
    }

    /// After the last tag: a block still open, the text after the last tag, missing blocks and
    /// their order.
    pub(super) fn finish(mut self, out: &mut Vec<Problem>, tally: &mut Tally) -> Self {
        let body = self.body.clone();
        match self.open.take() {
            Some((w, o)) => {
                // Once per answer, like the missing-block problems below: these pass the tally,
                // so a capped run of repeats cannot hide them.
                out.push(
                    Rule::Tags
                        .problem(o.clone(), format!("`<{}>` is never closed", w.name()))
                        .with_help(format!("close it with `</{}>`", w.name())),
                );
                let block = TagBlock {
                    open: o.clone(),
                    close: body.end..body.end,
                    inner: o.end..body.end,
                };
                self.block(w, block, out, tally);
            }
            None => self.gap(self.pos..body.end.max(self.pos), out, tally),
        }
        let text = self.text;
        let hint = self.first_in_code.as_ref().map(|t| {
            let line = LineIndex::new(text).line(t.span.start);
            format!(
                "the {} on line {line} is inside code (a fence or backticks), where tags are \
                 text; check for an unclosed ``` fence",
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
        for (which, missing) in [
            (Which::Thinking, self.thinking.is_none()),
            (Which::Answer, self.answer.is_none()),
        ] {
            if missing {
                let mut v = Rule::Tags.problem(
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
                out.push(v);
            }
        }
        if let (Some(t), Some(a)) = (&self.thinking, &self.answer) {
            if a.open.start < t.open.start {
                out.push(Rule::Tags.problem(
                    t.open.clone(),
                    "`<thinking>` comes after `<answer>`; thinking goes first",
                ));
            }
        }
        self
    }
}
