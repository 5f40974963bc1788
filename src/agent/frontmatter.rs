//! Splitting a markdown file into YAML frontmatter and body, keeping byte offsets.
//!
//! Offsets matter: every later error (YAML, template, delegation reference) is reported as a
//! line of the original file, which only works if nothing is rebuilt or trimmed on the way.

use std::ops::Range;

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

/// Splits `text`. A UTF-8 BOM and blank lines before the opening fence are allowed; both LF and
/// CRLF line endings are; the closing fence may be `---` or `...`.
pub fn split(text: &str) -> Result<Split, SplitError> {
    let mut pos = if text.starts_with('\u{feff}') { 3 } else { 0 };
    let mut line = 1;
    // Skip blank lines before the opening fence.
    loop {
        let (content, next) = next_line(text, pos);
        if content.trim().is_empty() && next > pos && next < text.len() {
            pos = next;
            line += 1;
            continue;
        }
        if content.trim_end() != "---" {
            return Err(SplitError::Missing);
        }
        pos = next;
        break;
    }
    let open_line = line;
    let yaml_start = pos;
    line += 1;
    while pos < text.len() {
        let (content, next) = next_line(text, pos);
        let trimmed = content.trim_end();
        if trimmed == "---" || trimmed == "..." {
            return Ok(Split {
                yaml: yaml_start..pos,
                body: next..text.len(),
                yaml_line: open_line + 1,
                body_line: line + 1,
            });
        }
        pos = next;
        line += 1;
    }
    Err(SplitError::Unclosed { line: open_line })
}

/// The line starting at `pos` without its ending, and where the next line starts.
fn next_line(text: &str, pos: usize) -> (&str, usize) {
    let rest = &text[pos..];
    match rest.find('\n') {
        Some(i) => {
            let l = &rest[..i];
            (l.strip_suffix('\r').unwrap_or(l), pos + i + 1)
        }
        None => (rest, text.len()),
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
