//! The `<thinking>` and `<answer>` blocks of an envelope's body: where the tags are (outside code),
//! whether they pair up in order, and any text outside the two blocks.

use super::TagBlock;
use crate::contract::rule::Rule;
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

/// Every literal tag in `body` (absolute offsets), code or not.
pub(super) fn tag_candidates(text: &str, body: &Range<usize>) -> Vec<TagRef> {
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

/// Finds the real tags (outside code) and validates their order.
pub(super) struct TagScan {
    pub(super) thinking: Option<TagBlock>,
    pub(super) answer: Option<TagBlock>,
    /// Real tags.
    tags: Vec<TagRef>,
    /// Repeated blocks (already reported): not stray text.
    extra: Vec<Range<usize>>,
}

pub(super) fn scan_tags(
    text: &str,
    body: &Range<usize>,
    candidates: Vec<TagRef>,
    code: &[Range<usize>],
    problems: &mut Vec<Problem>,
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
                problems.push(Rule::Tags.problem(
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
                    Rule::Tags
                        .problem(
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
            (Some((w, _)), true) => problems.push(Rule::Tags.problem(
                t.span.clone(),
                format!("{} while `<{}>` is open", tag_text(t), w.name()),
            )),
            (None, true) => problems.push(Rule::Tags.problem(
                t.span.clone(),
                format!("{} without a matching `<{}>`", tag_text(t), t.which.name()),
            )),
        }
    }
    if let Some((w, o)) = open {
        problems.push(
            Rule::Tags
                .problem(o.clone(), format!("`<{}>` is never closed", w.name()))
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
            problems.push(Rule::Tags.problem(
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
        let line = LineIndex::new(text).line(t.span.start);
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
            problems.push(v);
        }
    }
    if let (Some(t), Some(a)) = (&thinking, &answer) {
        if a.open.start < t.open.start {
            problems.push(Rule::Tags.problem(
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

pub(super) fn check_stray(
    text: &str,
    body: &Range<usize>,
    scan: &TagScan,
    problems: &mut Vec<Problem>,
) {
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
            Rule::StrayText
                .problem(
                    span.start..line_end,
                    "text outside the frontmatter, `<thinking>` and `<answer>`",
                )
                .with_help("move it into `<thinking>` or `<answer>`, or delete it"),
        );
    }
}
