//! Splitting a markdown file into YAML frontmatter and body, keeping byte offsets.
//!
//! Offsets matter: every later error (YAML, template, delegation reference) is reported as a
//! line of the original file, which only works if nothing is rebuilt or trimmed on the way.

use std::ops::Range;

use crate::markdown::{self, LineIndex};

/// Where the parts of a file are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    /// The YAML between the fences, as a byte range of the file.
    pub yaml: Range<usize>,
    /// Everything after the closing fence's line.
    pub body: Range<usize>,
    /// 1-based line of the first YAML line (line after the opening fence).
    pub yaml_line: usize,
    /// 1-based line where the body starts.
    pub body_line: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SplitError {
    /// The file does not start with a `---` fence (after an optional BOM and blank lines).
    #[error("no frontmatter")]
    Missing,
    /// The opening fence has no closing partner.
    #[error("frontmatter opened at line {line} is never closed with `---`")]
    Unclosed { line: usize },
}

/// Splits `text` with the splitter the contract checker shares ([`markdown::split_frontmatter`])
/// and adds the line numbers the loader reports against.
pub fn split(text: &str) -> Result<Split, SplitError> {
    let index = LineIndex::new(text);
    let line_of = |offset: usize| index.line(offset.min(text.len()));
    match markdown::split_frontmatter(text) {
        Ok(fm) => Ok(Split {
            yaml_line: line_of(fm.yaml.start),
            body_line: line_of(fm.body.start),
            yaml: fm.yaml,
            body: fm.body,
        }),
        Err(markdown::SplitError::Missing { .. }) => Err(SplitError::Missing),
        Err(markdown::SplitError::Unclosed { open }) => Err(SplitError::Unclosed {
            line: line_of(open.start),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_lf_crlf_and_bom() {
        let t = "---\na: 1\n---\nbody\n";
        let s = split(t).unwrap();
        assert_eq!(&t[s.yaml.clone()], "a: 1\n");
        assert_eq!(&t[s.body.clone()], "body\n");
        assert_eq!((s.yaml_line, s.body_line), (2, 4));

        let t = "\u{feff}\r\n---\r\na: 1\r\n---\r\nbody";
        let s = split(t).unwrap();
        assert_eq!(&t[s.yaml.clone()], "a: 1\r\n");
        assert_eq!(&t[s.body], "body");
        assert_eq!((s.yaml_line, s.body_line), (3, 5));
    }

    #[test]
    fn missing_and_unclosed() {
        assert_eq!(split("# README\n"), Err(SplitError::Missing));
        assert_eq!(split(""), Err(SplitError::Missing));
        assert_eq!(split("---\na: 1\n"), Err(SplitError::Unclosed { line: 1 }));
        assert_eq!(split("---"), Err(SplitError::Unclosed { line: 1 }));
    }
}
