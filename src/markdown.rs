//! Shared markdown helpers: byte offsets to line:col, and the code spans that make `<answer>` or
//! `task(...)` inside code mean text rather than structure.
//!
//! Everything that reports a position goes through [`LineIndex`], so "line 12, column 5" means the
//! same thing in the loader, the contract checker and lint.

use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};
use std::ops::Range;

/// Maps byte offsets in a text to 1-based line and column numbers (columns count characters).
///
/// Counting a column's characters from the start of its line would make locating N positions on
/// one long line cost N × its length (an answer with thousands of tags on one line took
/// seconds), so lines longer than [`CHECKPOINT_BYTES`] carry checkpoints: every that many bytes,
/// the character count so far. A column then costs a binary search plus at most one block.
#[derive(Debug, Clone)]
pub struct LineIndex {
    starts: Vec<usize>,
    len: usize,
    /// (byte offset, characters from its line's start to it), ascending, for long lines only.
    checkpoints: Vec<(usize, usize)>,
}

/// Bytes between column checkpoints on a long line.
const CHECKPOINT_BYTES: usize = 1024;

impl LineIndex {
    pub fn new(text: &str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        let mut checkpoints = Vec::new();
        let ends = starts.iter().skip(1).copied().chain([text.len()]);
        for (start, end) in starts.iter().copied().zip(ends) {
            if end - start <= CHECKPOINT_BYTES {
                continue;
            }
            let mut next = start + CHECKPOINT_BYTES;
            for (chars, (i, _)) in text[start..end].char_indices().enumerate() {
                if start + i >= next {
                    checkpoints.push((start + i, chars));
                    next = start + i + CHECKPOINT_BYTES;
                }
            }
        }
        Self {
            starts,
            len: text.len(),
            checkpoints,
        }
    }

    /// Number of lines; a trailing newline does not open a new line.
    pub fn line_count(&self) -> usize {
        match self.starts.last() {
            Some(&last) if last == self.len => self.starts.len() - 1,
            _ => self.starts.len(),
        }
    }

    /// 1-based line of a byte offset.
    pub fn line(&self, offset: usize) -> usize {
        match self.starts.binary_search(&offset) {
            Ok(i) => i + 1,
            Err(i) => i,
        }
    }

    /// 1-based (line, column) of a byte offset; the column counts chars, not bytes.
    pub fn line_col(&self, text: &str, offset: usize) -> (usize, usize) {
        let offset = offset.min(text.len());
        let line = self.line(offset);
        let mut start = self.starts[line - 1];
        let mut before = 0;
        if offset - start > CHECKPOINT_BYTES {
            let i = self.checkpoints.partition_point(|&(at, _)| at <= offset);
            if let Some(&(at, chars)) = i.checked_sub(1).and_then(|i| self.checkpoints.get(i)) {
                if at >= start {
                    (start, before) = (at, chars);
                }
            }
        }
        let col = before
            + text
                .get(start..offset)
                .map(|s| s.chars().count())
                .unwrap_or(offset - start);
        (line, col + 1)
    }

    /// Byte offset where 1-based `line` starts.
    pub fn line_start(&self, line: usize) -> Option<usize> {
        line.checked_sub(1)
            .and_then(|i| self.starts.get(i))
            .copied()
    }

    /// The text of 1-based `line` without its line ending.
    pub fn line_text<'t>(&self, text: &'t str, line: usize) -> Option<&'t str> {
        let start = self.line_start(line)?;
        if start > text.len() || (start == text.len() && line > 1) {
            return None;
        }
        let end = self.starts.get(line).map(|&e| e - 1).unwrap_or(text.len());
        let s = text.get(start..end)?;
        Some(s.strip_suffix('\r').unwrap_or(s))
    }
}

/// A fenced or indented code block: where it is and what it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeBlock {
    /// Byte range of the whole block, fences included.
    pub range: Range<usize>,
    /// The info string after the opening fence (empty for indented blocks).
    pub info: String,
    /// The block's content as pulldown-cmark gives it (container indentation removed).
    pub content: String,
    pub fenced: bool,
}

/// The code inside a markdown text: blocks and inline code spans.
#[derive(Debug, Clone, Default)]
pub struct CodeMap {
    pub blocks: Vec<CodeBlock>,
    /// Byte ranges of inline code spans, backticks included.
    pub inline: Vec<Range<usize>>,
}

impl CodeMap {
    pub fn new(text: &str) -> Self {
        let mut map = CodeMap::default();
        let mut current: Option<(usize, String, bool, String)> = None;
        for (event, range) in Parser::new_ext(text, Options::empty()).into_offset_iter() {
            match event {
                Event::Start(Tag::CodeBlock(kind)) => {
                    let (info, fenced) = match kind {
                        CodeBlockKind::Fenced(info) => (info.to_string(), true),
                        CodeBlockKind::Indented => (String::new(), false),
                    };
                    current = Some((range.start, info, fenced, String::new()));
                }
                Event::Text(t) => {
                    if let Some((_, _, _, content)) = current.as_mut() {
                        content.push_str(&t);
                    }
                }
                Event::End(TagEnd::CodeBlock) => {
                    if let Some((start, info, fenced, content)) = current.take() {
                        map.blocks.push(CodeBlock {
                            range: start..range.end,
                            info,
                            content,
                            fenced,
                        });
                    }
                }
                Event::Code(_) => map.inline.push(range),
                _ => {}
            }
        }
        map
    }

    /// True when `offset` falls inside a code block or an inline code span.
    pub fn in_code(&self, offset: usize) -> bool {
        self.blocks.iter().any(|b| b.range.contains(&offset))
            || self.inline.iter().any(|r| r.contains(&offset))
    }
}

/// Where a document's YAML frontmatter and body are.
///
/// All ranges are byte offsets into the text given to [`split_frontmatter`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frontmatter {
    /// The opening `---` line, without its line ending.
    pub open: Range<usize>,
    /// The YAML between the two `---` lines (may be empty).
    pub yaml: Range<usize>,
    /// The closing `---` line, without its line ending.
    pub close: Range<usize>,
    /// Everything after the closing line's line ending.
    pub body: Range<usize>,
}

/// Why a text has no usable frontmatter.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SplitError {
    /// The first non-blank line is not `---`; `at` is where that line starts (or the text's end).
    #[error("the text does not start with a `---` frontmatter line")]
    Missing { at: usize },
    /// An opening `---` with no closing `---` line after it.
    #[error("the frontmatter opened by `---` is never closed by another `---` line")]
    Unclosed { open: Range<usize> },
}

/// Splits YAML frontmatter from the body.
///
/// Accepted: an optional UTF-8 byte-order mark, blank (whitespace-only) lines, then a line that is
/// exactly `---` (trailing spaces allowed), the YAML, and a closing `---` line. Both LF and CRLF
/// line endings work. This is the one splitter the agent loader and the contract checker share.
pub fn split_frontmatter(text: &str) -> Result<Frontmatter, SplitError> {
    let mut pos = if text.starts_with('\u{feff}') { 3 } else { 0 };
    // Skip blank lines.
    let open = loop {
        let (line, next) = next_line(text, pos);
        if line.start >= text.len() {
            return Err(SplitError::Missing { at: text.len() });
        }
        let content = &text[line.clone()];
        if content.trim().is_empty() {
            pos = next;
            continue;
        }
        if !is_fence(content) {
            return Err(SplitError::Missing { at: line.start });
        }
        break line;
    };
    let (_, mut pos) = next_line(text, open.start);
    let yaml_start = pos;
    while pos < text.len() {
        let (line, next) = next_line(text, pos);
        if is_fence(&text[line.clone()]) {
            return Ok(Frontmatter {
                open: open.start..open.start + 3,
                yaml: yaml_start..line.start,
                close: line.start..line.start + 3,
                body: next..text.len(),
            });
        }
        pos = next;
    }
    Err(SplitError::Unclosed {
        open: open.start..open.start + 3,
    })
}

/// The line starting at `pos` without its line ending, and where the next line starts.
fn next_line(text: &str, pos: usize) -> (Range<usize>, usize) {
    let rest = text.get(pos..).unwrap_or("");
    match rest.find('\n') {
        Some(i) => {
            let end = if i > 0 && rest.as_bytes()[i - 1] == b'\r' {
                pos + i - 1
            } else {
                pos + i
            };
            (pos..end, pos + i + 1)
        }
        None => (pos..text.len(), text.len()),
    }
}

/// A `---` line: three dashes, then only spaces or tabs.
fn is_fence(line: &str) -> bool {
    line.strip_prefix("---")
        .is_some_and(|rest| rest.bytes().all(|b| b == b' ' || b == b'\t' || b == b'\r'))
}

/// The code fence a line opens: its character (`` ` `` or `~`) and width (3 or more), when the
/// rest of the line is an info string without that character.
fn fence_opening(line: &str) -> Option<(char, usize)> {
    let line = line.trim_end();
    let ch = line.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let width = line.chars().take_while(|c| *c == ch).count();
    // `ch` is ASCII, so `width` characters are `width` bytes.
    (width >= 3 && !line[width..].contains(ch)).then_some((ch, width))
}

/// A code fence longer than any run of backticks in `text`, so the block cannot close early.
pub fn fence_for(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    "`".repeat(longest.max(2) + 1)
}

/// A code fence that opens `text` (after leading whitespace): its content, and the text after
/// its closing line. `None` when the text does not open with a fence or the fence never closes.
///
/// Small models wrap their whole answer in a fence (` ```markdown `), or open a fenced report
/// and copy the instructions below it; the runtime's readers of answers (the contract gate, the
/// deliverable, tool-call recovery) take the fence off through this one function so they agree
/// on what is inside. Fences within (an excerpt's) are indented in our formats, so a line at
/// column 0 made of the fence character alone closes it, with two exceptions for blocks a
/// model opened inside without indenting them: a line right after an Excerpt label
/// (`- **Excerpt**:`) opens that excerpt's block, and a fence line with an info string
/// (` ```rust `) opens a block, each closed by the next bare fence line. Why: the 1.5B
/// researcher wrapped its whole report in ```` ``` ```` with its excerpts' fences unindented;
/// the runtime saved the report up to the first excerpt's opening line, with no Evidence left
/// to verify, and the session ended PARTIAL (BENCHMARKS.md, "Twenty-eighth session"). When
/// that reading finds no closing line, the first bare fence line closes, as before.
pub fn leading_fence(text: &str) -> Option<(&str, &str)> {
    let text = text.trim_start();
    let (open, body) = text.split_once('\n')?;
    let (ch, width) = fence_opening(open)?;
    let split =
        |at: usize, line: &str| (body[..at].trim_end_matches('\n'), &body[at + line.len()..]);
    let mut first = None;
    let mut inner = false;
    let mut last = "";
    let mut at = 0;
    for line in body.split_inclusive('\n') {
        let bare = line.trim_end();
        let closes = bare.len() >= width && bare.chars().all(|c| c == ch);
        if closes && first.is_none() {
            first = Some(split(at, line));
        }
        if inner {
            inner = !closes;
        } else if closes && !is_excerpt_label(last) {
            return Some(split(at, line));
        } else if closes || fence_opening(bare).is_some_and(|(c, _)| c == ch) {
            inner = true;
        }
        if !bare.trim().is_empty() {
            last = bare;
        }
        at += line.len();
    }
    first
}

/// Whether `line` is an Excerpt label (`- **Excerpt**:`), after which our formats put a block.
fn is_excerpt_label(line: &str) -> bool {
    let line = line.trim();
    line.ends_with(':') && line.to_ascii_lowercase().contains("**excerpt**")
}

/// The content of a code fence around the whole of `text` (only whitespace outside it).
pub fn whole_fence(text: &str) -> Option<&str> {
    let (content, after) = leading_fence(text)?;
    after.trim().is_empty().then_some(content)
}

/// The text after a fence that opens `text` and never closes (an answer cut off at its token
/// limit, or one whose closing line was left out): what the fence holds runs to the end. The
/// 1.5B analyzer opened its answer with ```` ``` ````, ran out of tokens, and was told through
/// all its repairs that its frontmatter was missing, which it was not.
pub fn unclosed_fence(text: &str) -> Option<&str> {
    let trimmed = text.trim_start();
    let (open, body) = trimmed.split_once('\n')?;
    fence_opening(open)?;
    leading_fence(text).is_none().then_some(body)
}

/// Every `*.md` file under `dir`, recursively, sorted so results are deterministic. A symlink to a
/// file is listed (dotfile setups link agent files in); a symlinked folder is not entered, so a
/// walk cannot loop or wander out of the tree. A missing `dir` is empty.
pub fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            match entry.file_type() {
                Ok(t) if t.is_dir() => stack.push(path),
                Ok(t)
                    if (t.is_file() || (t.is_symlink() && path.is_file()))
                        && path.extension().is_some_and(|e| e == "md") =>
                {
                    out.push(path)
                }
                _ => {}
            }
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod fence_tests {
    use super::{leading_fence, whole_fence};

    #[test]
    fn one_fence_around_the_whole_text_is_taken_off() {
        let inner = "---\nmessage_id: m\n---\n\n<thinking>\nt\n</thinking>\n\n<answer>\n- **Excerpt**:\n  ```\n  x\n  ```\n</answer>";
        for open in ["```markdown", "```", "```md", "~~~", "````json"] {
            let close = &open[..open.chars().take_while(|c| !c.is_alphabetic()).count()];
            let wrapped = format!("  {open}\n{inner}\n{close}\n");
            assert_eq!(whole_fence(&wrapped), Some(inner), "{open}");
        }
    }

    #[test]
    fn a_fence_with_text_after_it_is_leading_not_whole() {
        let text = "```markdown\n# Report\n\nbody\n```\n\nNow the instructions again\n";
        assert_eq!(
            leading_fence(text),
            Some(("# Report\n\nbody", "\nNow the instructions again\n"))
        );
        assert_eq!(whole_fence(text), None);
    }

    /// A report wrapped in a bare fence whose excerpt blocks are not indented: the wrapper
    /// closes at the end, not at the first excerpt's opening line; a block with an info string
    /// inside is kept whole too.
    #[test]
    fn blocks_opened_inside_without_indent_do_not_close_the_wrapper() {
        let report = "---\ntopic: t\n---\n\n## Findings\n- **Evidence**: `a.rs:1`\n- **Excerpt**:\n```\nfn a() {}\n```\n\n- **Evidence**: `b.rs:2`\n- **Excerpt**:\n```rust\nfn b() {}\n```\n\n## Open Questions\n- none";
        let wrapped = format!("```\n{report}\n```\ndone\n");
        assert_eq!(leading_fence(&wrapped), Some((report, "done\n")));
        assert_eq!(
            whole_fence(&format!("```markdown\n{report}\n```\n")),
            Some(report)
        );
        // An excerpt label whose block never closes: the first bare line closes, as before.
        let cut = "```\n- **Excerpt**:\n```\nx\n";
        assert_eq!(leading_fence(cut), Some(("- **Excerpt**:", "x\n")));
    }

    #[test]
    fn anything_else_is_no_fence() {
        for text in [
            "---\nmessage_id: m\n---\n<answer>\nx\n</answer>",
            "```\na\n```\ntext after\n",
            "```\na\n```\n\n```\nb\n```",
            "```\nunclosed",
            "``\ntwo\n``",
            "```a`b\nx\n```",
            "~~~\nx\n```",
        ] {
            assert_eq!(whole_fence(text), None, "{text}");
        }
        assert_eq!(leading_fence("```\nunclosed"), None);
        assert_eq!(leading_fence("text\n```\nx\n```"), None);
    }

    #[test]
    fn an_opening_fence_that_never_closes_runs_to_the_end() {
        use super::unclosed_fence;
        let text = "```markdown\n---\nid: m\n---\n<answer>\n  ```\n  x\n  ```\ncut off";
        assert_eq!(
            unclosed_fence(text),
            Some("---\nid: m\n---\n<answer>\n  ```\n  x\n  ```\ncut off")
        );
        assert_eq!(unclosed_fence("```\nclosed\n```\n"), None);
        assert_eq!(unclosed_fence("no fence\n```\n"), None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_on_long_lines_matches_counting_from_the_line_start() {
        let line: String = (0..3000)
            .map(|i| if i % 7 == 0 { "é<a>" } else { "xy" })
            .collect();
        let text = format!("first\n{line}\n{line}");
        let idx = LineIndex::new(&text);
        for offset in (0..text.len())
            .filter(|&o| text.is_char_boundary(o))
            .step_by(37)
        {
            let start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
            let line_no = text[..offset].matches('\n').count() + 1;
            let col = text[start..offset].chars().count() + 1;
            assert_eq!(
                idx.line_col(&text, offset),
                (line_no, col),
                "offset {offset}"
            );
        }
    }

    #[test]
    fn line_col_counts_chars() {
        let text = "ab\nçd\r\nx";
        let idx = LineIndex::new(text);
        assert_eq!(idx.line_col(text, 0), (1, 1));
        assert_eq!(idx.line_col(text, 3), (2, 1));
        assert_eq!(idx.line_col(text, 5), (2, 2));
        assert_eq!(idx.line_text(text, 2), Some("çd"));
        assert_eq!(idx.line_text(text, 3), Some("x"));
        assert_eq!(idx.line_text(text, 4), None);
        assert_eq!(idx.line_count(), 3);
        assert_eq!(LineIndex::new("a\n").line_count(), 1);
        assert_eq!(LineIndex::new("").line_count(), 0);
    }

    #[test]
    fn code_map_sees_fences_and_inline() {
        let text = "x `<answer>` y\n\n```md\n<answer>\n```\n- item\n  ```\n  in list\n  ```\n";
        let map = CodeMap::new(text);
        assert_eq!(map.blocks.len(), 2);
        assert_eq!(map.blocks[1].content, "in list\n");
        assert!(map.in_code(text.find("<answer>").unwrap()));
        assert!(!map.in_code(0));
    }

    #[test]
    fn frontmatter_splits_with_bom_blank_lines_and_crlf() {
        let text = "\u{feff}\n  \r\n---\r\na: 1\r\n---  \r\nbody\r\n";
        let fm = split_frontmatter(text).unwrap();
        assert_eq!(&text[fm.open.clone()], "---");
        assert_eq!(&text[fm.yaml.clone()], "a: 1\r\n");
        assert_eq!(&text[fm.close.clone()], "---");
        assert_eq!(&text[fm.body.clone()], "body\r\n");

        let fm = split_frontmatter("---\n---").unwrap();
        assert!(fm.yaml.is_empty() && fm.body.is_empty());
    }

    #[test]
    fn frontmatter_errors() {
        assert_eq!(
            split_frontmatter("\n\nhello\n"),
            Err(SplitError::Missing { at: 2 })
        );
        assert_eq!(split_frontmatter(""), Err(SplitError::Missing { at: 0 }));
        assert_eq!(
            split_frontmatter("----\n"),
            Err(SplitError::Missing { at: 0 })
        );
        assert_eq!(
            split_frontmatter("\n---\na: 1\n"),
            Err(SplitError::Unclosed { open: 1..4 })
        );
        assert_eq!(
            split_frontmatter("---"),
            Err(SplitError::Unclosed { open: 0..3 })
        );
    }
}
