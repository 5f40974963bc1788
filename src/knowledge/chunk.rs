//! Splitting a whole file into chunks the analyzer can take in one turn.
//!
//! `text-splitter` cuts on the largest structure that fits the budget: markdown on headings,
//! then blocks, then sentences; other text on blank lines, lines, sentences, words and, for a
//! single enormous line, graphemes. Chunks are not trimmed, so they cover the file exactly and
//! every chunk knows the lines it spans in the whole file. Budgets are in characters (not bytes),
//! so a cut never falls inside a UTF-8 sequence or between `\r` and `\n`.

use text_splitter::{ChunkConfig, MarkdownSplitter, TextSplitter};

/// Characters a token stands for, roughly, in English prose and code.
const CHARS_PER_TOKEN: usize = 4;
/// Smallest chunk budget, whatever the context size.
const MIN_BUDGET: usize = 1_000;

/// One piece of a file, with where it lies in the whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// 1-based position among `total` chunks.
    pub index: usize,
    pub total: usize,
    pub start_byte: usize,
    pub end_byte: usize,
    /// 1-based, inclusive lines of the whole file this chunk touches.
    pub line_start: u32,
    pub line_end: u32,
    pub text: String,
}

impl Chunk {
    /// "chunk 3/7 of src/x.rs, lines 200–310": how the analyzer is told where it is.
    pub fn label(&self, path: &str) -> String {
        format!(
            "chunk {}/{} of {path}, lines {}–{}",
            self.index, self.total, self.line_start, self.line_end
        )
    }

    /// The chunk's text with whole-file line numbers, formatted as `read` numbers lines, so the
    /// model can cite `lines` without doing arithmetic.
    pub fn numbered(&self) -> String {
        let mut out = String::with_capacity(self.text.len() + self.text.len() / 8);
        for (i, line) in self.text.lines().enumerate() {
            out.push_str(&format!("{:>6}\t{line}\n", self.line_start as usize + i));
        }
        out
    }
}

/// The character budget of one chunk for a model with `context_tokens` of context: half the
/// window for the chunk, the rest for the prompt, the numbering and the answer.
pub fn budget(context_tokens: usize) -> usize {
    (context_tokens * CHARS_PER_TOKEN / 2).max(MIN_BUDGET)
}

/// Splits `text` (the file at `path`; markdown is split on its structure) into chunks of at most
/// `budget` characters.
pub fn split(text: &str, path: &str, budget: usize) -> Vec<Chunk> {
    // Two characters kept back so a line break moved onto the previous chunk still fits.
    let capacity = budget.saturating_sub(2).max(1);
    let config = || ChunkConfig::new(capacity).with_trim(false);
    let mut starts: Vec<usize> = if is_markdown(path) {
        MarkdownSplitter::new(config())
            .chunk_indices(text)
            .map(|(o, _)| o)
            .collect()
    } else {
        TextSplitter::new(config())
            .chunk_indices(text)
            .map(|(o, _)| o)
            .collect()
    };
    // The splitter puts the line break that separates two chunks at the start of the second;
    // it belongs to the end of the first, so each chunk starts on a line of its own.
    for start in starts.iter_mut().skip(1) {
        let rest = &text.as_bytes()[*start..];
        if rest.starts_with(b"\r\n") {
            *start += 2;
        } else if rest.starts_with(b"\n") {
            *start += 1;
        }
    }
    starts.dedup();
    starts.retain(|&s| s < text.len());
    let pieces: Vec<(usize, &str)> = starts
        .iter()
        .enumerate()
        .map(|(i, &s)| {
            let end = starts.get(i + 1).copied().unwrap_or(text.len());
            (s, &text[s..end])
        })
        .collect();
    let total = pieces.len();
    let mut line = 1u32;
    let mut counted_to = 0usize;
    let mut out = Vec::with_capacity(total);
    for (i, (offset, piece)) in pieces.into_iter().enumerate() {
        line += newlines(&text[counted_to..offset]);
        counted_to = offset;
        let inner = piece.strip_suffix('\n').unwrap_or(piece);
        out.push(Chunk {
            index: i + 1,
            total,
            start_byte: offset,
            end_byte: offset + piece.len(),
            line_start: line,
            line_end: line + newlines(inner),
            text: piece.to_string(),
        });
    }
    out
}

fn newlines(s: &str) -> u32 {
    memchr::memchr_iter(b'\n', s.as_bytes()).count() as u32
}

fn is_markdown(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    lower.ends_with(".md") || lower.ends_with(".markdown")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Chunks cover the text exactly, in order, each within budget.
    fn assert_covers(text: &str, chunks: &[Chunk], budget: usize) {
        let joined: String = chunks.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(joined, text);
        for c in chunks {
            assert!(
                c.text.chars().count() <= budget,
                "chunk {} too big",
                c.index
            );
            assert_eq!(&text[c.start_byte..c.end_byte], c.text);
            assert_eq!(c.total, chunks.len());
        }
    }

    #[test]
    fn a_one_megabyte_file_splits_within_budget_with_true_line_numbers() {
        let text: String = (1..=20_000)
            .map(|i| format!("fn item_{i}() -> u32 {{ {i} }} // line {i}\n"))
            .collect();
        assert!(text.len() > 800_000);
        let chunks = split(&text, "big.rs", 16_000);
        assert!(chunks.len() > 40);
        assert_covers(&text, &chunks, 16_000);
        for c in &chunks {
            // The first line of each chunk names its own line number.
            let first = c.text.lines().next().unwrap();
            assert!(
                first.ends_with(&format!("// line {}", c.line_start)),
                "{first}"
            );
        }
        assert_eq!(chunks.last().unwrap().line_end, 20_000);
    }

    #[test]
    fn one_forty_kilobyte_line_is_cut_on_one_line_number() {
        let text = format!("{}\n", "word ".repeat(8_000));
        let chunks = split(&text, "long.txt", 5_000);
        assert!(chunks.len() >= 8);
        assert_covers(&text, &chunks, 5_000);
        assert!(chunks.iter().all(|c| c.line_start == 1 && c.line_end == 1));
    }

    #[test]
    fn crlf_lines_are_counted_and_never_split_inside_the_pair() {
        let text: String = (1..=500).map(|i| format!("line number {i}\r\n")).collect();
        let chunks = split(&text, "dos.txt", 1_000);
        assert_covers(&text, &chunks, 1_000);
        for c in &chunks {
            assert!(
                !c.text.starts_with('\n'),
                "a chunk starts between \\r and \\n"
            );
            let first = c.text.lines().next().unwrap().trim_end();
            assert_eq!(first, format!("line number {}", c.line_start));
        }
    }

    #[test]
    fn multibyte_characters_across_a_boundary_stay_whole() {
        // No spaces or newlines: the splitter must fall back to characters, and every cut must
        // land on a character boundary (slicing would panic otherwise).
        let text = "é€😀".repeat(2_000);
        let chunks = split(&text, "utf8.txt", 1_001);
        assert!(chunks.len() >= 6);
        assert_covers(&text, &chunks, 1_001);
    }

    #[test]
    fn markdown_is_split_on_headings() {
        let section = |n: usize| format!("# Section {n}\n\n{}\n\n", "Some prose here. ".repeat(40));
        let text: String = (1..=6).map(section).collect();
        let chunks = split(&text, "doc.md", 1_500);
        assert_covers(&text, &chunks, 1_500);
        assert!(chunks.iter().all(|c| c.text.starts_with("# Section")));
        assert_eq!(
            chunks[1].label("doc.md"),
            format!(
                "chunk 2/{} of doc.md, lines {}–{}",
                chunks.len(),
                chunks[1].line_start,
                chunks[1].line_end
            )
        );
    }

    #[test]
    fn numbering_uses_whole_file_lines() {
        let text = "a\nb\nc\nd\n";
        let chunks = split(text, "x.txt", 4);
        let last = chunks.last().unwrap();
        assert!(last
            .numbered()
            .starts_with(&format!("{:>6}\t", last.line_start)));
        assert_eq!(budget(8192), 16_384);
        assert_eq!(budget(10), MIN_BUDGET);
    }
}
