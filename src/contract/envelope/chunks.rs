//! Cuts a large answer into pieces that pulldown-cmark parses one at a time.
//!
//! pulldown-cmark builds a tree of the whole document before it yields the first event, about
//! 50 bytes per node and a dozen nodes per Evidence block: 50 MB of Evidence blocks made a tree of
//! 1.5 GB. Parsing piece by piece keeps one piece's tree in memory at a time.
//!
//! A piece ends only where a top-level block ends for certain: at a blank line followed by a line
//! that starts in column 1, outside a fenced code block and outside the HTML blocks that run past
//! blank lines (comments, `<pre>`, `<script>`, …). Blocks after such a line are parsed the same
//! way whether the document is parsed whole or from there on. The one difference is that a list
//! whose items are separated by blank lines becomes several lists, which the answer walker treats
//! the same way (each item starts a block either way). A run of text longer than [`MAX_PIECE`]
//! without such a place is cut at a line end, which can change how that text parses; the caller
//! reports it (see [`first_forced_cut`]). A fenced code block longer than that is cut as well, and
//! the next piece is marked to be parsed behind the fence's opening line ([`Piece::reopen`]), so
//! its lines stay code; the caller joins the pieces' code blocks back into one.

use std::ops::Range;

/// Below this a piece is not cut (parsing many tiny pieces costs time for no memory).
const MIN_PIECE: usize = 64 * 1024;
/// Above this a piece is cut at the next line end outside code, even inside a paragraph.
pub(super) const MAX_PIECE: usize = 256 * 1024;

/// One piece: its byte range in the text, and whether it was cut inside a block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Piece {
    pub(super) range: Range<usize>,
    pub(super) forced: bool,
    /// The piece starts inside a fenced code block longer than [`MAX_PIECE`]: the range of that
    /// block's opening fence line, to parse in front of the piece so its lines stay code.
    pub(super) reopen: Option<Range<usize>>,
    /// The piece ends inside such a fence (the next piece reopens it).
    pub(super) continues: bool,
}

/// Where a line that is not a block boundary has us.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Inside {
    Nothing,
    /// A fenced code block: its fence character and length, and its opening line.
    Fence(u8, usize, Range<usize>),
    /// An HTML block that ends at the first line containing this marker.
    Html(&'static str),
}

/// The pieces of `text`, in order, covering it exactly.
pub(super) fn pieces(text: &str) -> impl Iterator<Item = Piece> + '_ {
    let mut start = 0;
    let mut pos = 0;
    let mut inside = Inside::Nothing;
    let mut after_blank = false;
    let mut reopen = None;
    let mut free_from = 0;
    std::iter::from_fn(move || {
        if start >= text.len() {
            return None;
        }
        while pos < text.len() {
            let end = text[pos..].find('\n').map_or(text.len(), |i| pos + i + 1);
            let line = &text[pos..end];
            let blank = line.trim().is_empty();
            let size = pos - start;
            if inside == Inside::Nothing && pos > start {
                let boundary = after_blank && !blank && !line.starts_with([' ', '\t']);
                // Text after a long fence counts from the fence's end: the fence was cut already.
                let run = pos - start.max(free_from);
                if (boundary && size >= MIN_PIECE) || run >= MAX_PIECE {
                    let piece = Piece {
                        range: start..pos,
                        forced: !boundary,
                        reopen: reopen.take(),
                        continues: false,
                    };
                    start = pos;
                    return Some(piece);
                }
            }
            // A fence itself longer than a piece is cut too; the next piece reopens it, so its
            // lines stay code. (A short one just delays the cut until it closes.)
            if let Inside::Fence(_, _, open) = &inside {
                if pos > start && size >= MAX_PIECE && pos - open.start >= MAX_PIECE {
                    let piece = Piece {
                        range: start..pos,
                        forced: false,
                        reopen: reopen.replace(open.clone()),
                        continues: true,
                    };
                    start = pos;
                    return Some(piece);
                }
            }
            let next = next_state(&inside, line, pos);
            if let (Inside::Fence(_, _, open), Inside::Nothing) = (&inside, &next) {
                if end - open.start >= MAX_PIECE {
                    free_from = end;
                }
            }
            inside = next;
            after_blank = blank;
            pos = end;
        }
        let piece = Piece {
            range: start..text.len(),
            forced: false,
            reopen: reopen.take(),
            continues: false,
        };
        start = text.len();
        Some(piece)
    })
}

/// Where the first piece cut inside a block ends, if any piece is.
pub(super) fn first_forced_cut(text: &str) -> Option<usize> {
    pieces(text).find(|p| p.forced).map(|p| p.range.end)
}

/// The state after `line` (which starts at byte `at`), given the state before it.
fn next_state(inside: &Inside, line: &str, at: usize) -> Inside {
    let trimmed = line.trim_end_matches(['\n', '\r']);
    let indent = trimmed.len() - trimmed.trim_start_matches(' ').len();
    let rest = &trimmed[indent..];
    match inside {
        Inside::Fence(c, n, _) => {
            let run = rest.bytes().take_while(|b| b == c).count();
            if indent < 4 && run >= *n && rest[run..].trim().is_empty() {
                Inside::Nothing
            } else {
                inside.clone()
            }
        }
        Inside::Html(end) => {
            if trimmed.to_ascii_lowercase().contains(end) {
                Inside::Nothing
            } else {
                inside.clone()
            }
        }
        Inside::Nothing if indent < 4 => {
            for c in [b'`', b'~'] {
                let run = rest.bytes().take_while(|&b| b == c).count();
                // A backtick fence's info string holds no backtick (``` `x` ``` is inline code).
                if run >= 3 && !(c == b'`' && rest[run..].contains('`')) {
                    return Inside::Fence(c, run, at..at + line.len());
                }
            }
            match html_block_end(rest) {
                Some(end) if !rest[1..].to_ascii_lowercase().contains(end) => Inside::Html(end),
                _ => Inside::Nothing,
            }
        }
        Inside::Nothing => Inside::Nothing,
    }
}

/// For a line opening an HTML block that may run past blank lines (CommonMark kinds 1 to 5), the
/// marker that ends it.
fn html_block_end(rest: &str) -> Option<&'static str> {
    let lower = rest.get(..rest.len().min(12))?.to_ascii_lowercase();
    if lower.starts_with("<!--") {
        return Some("-->");
    }
    if lower.starts_with("<![cdata[") {
        return Some("]]>");
    }
    if lower.starts_with("<?") {
        return Some("?>");
    }
    if lower.starts_with("<!") && lower.as_bytes().get(2).is_some_and(u8::is_ascii_alphabetic) {
        return Some(">");
    }
    for (tag, end) in [
        ("<script", "</script>"),
        ("<pre", "</pre>"),
        ("<style", "</style>"),
        ("<textarea", "</textarea>"),
    ] {
        if let Some(after) = lower.strip_prefix(tag) {
            if after.is_empty() || after.starts_with([' ', '\t', '>', '\r', '\n']) {
                return Some(end);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cuts(text: &str) -> Vec<usize> {
        let pieces: Vec<Piece> = pieces(text).collect();
        assert_eq!(pieces.first().map(|p| p.range.start), Some(0));
        for w in pieces.windows(2) {
            assert_eq!(w[0].range.end, w[1].range.start, "pieces are contiguous");
        }
        assert_eq!(pieces.last().map(|p| p.range.end), Some(text.len()));
        pieces[..pieces.len() - 1]
            .iter()
            .map(|p| p.range.end)
            .collect()
    }

    #[test]
    fn small_texts_are_one_piece() {
        assert_eq!(cuts("# a\n\nb\n\nc\n"), Vec::<usize>::new());
    }

    #[test]
    fn cuts_only_between_top_level_blocks() {
        let para = "word ".repeat(20_000) + "\n";
        let fence_body = "x\n\ny\n".repeat(20_000);
        let text = format!(
            "{para}\n```text\n{fence_body}```\n\n<!--\n\n{fence_body}-->\n\n- a\n\n  {para}\nend\n"
        );
        for at in cuts(&text) {
            let before = &text[..at];
            assert!(before.ends_with("\n\n"), "cut after a blank line");
            assert!(!text[at..].starts_with([' ', '\t']), "at column 1");
            assert_eq!(before.matches("```").count() % 2, 0, "not inside the fence");
            assert!(
                before.matches("<!--").count() == before.matches("-->").count(),
                "not inside the comment"
            );
        }
        assert!(!cuts(&text).is_empty());
    }

    #[test]
    fn a_run_past_the_maximum_is_cut_at_a_line_end_and_said_so() {
        let text = "a line of text\n".repeat(2 * MAX_PIECE / 15);
        let pieces: Vec<Piece> = pieces(&text).collect();
        assert!(pieces.len() >= 2);
        assert!(pieces[0].forced);
        assert!(text[..pieces[0].range.end].ends_with('\n'));
        assert_eq!(first_forced_cut(&text), Some(pieces[0].range.end));
    }

    #[test]
    fn a_long_fence_is_cut_and_reopened() {
        let fenced = format!(
            "- x\n  ```text\n{}  ```\nafter\n",
            "  a line\n".repeat(MAX_PIECE / 5)
        );
        let pieces: Vec<Piece> = pieces(&fenced).collect();
        assert!(pieces.len() >= 2, "{}", pieces.len());
        assert!(
            pieces.iter().all(|p| !p.forced),
            "not reported as a cut block"
        );
        assert_eq!(pieces[0].reopen, None);
        assert!(pieces[..pieces.len() - 1].iter().all(|p| p.continues));
        assert!(!pieces[pieces.len() - 1].continues);
        for p in &pieces[1..] {
            assert_eq!(p.reopen.clone().map(|r| &fenced[r]), Some("  ```text\n"));
        }
    }
}
