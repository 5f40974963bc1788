//! Evidence and excerpts: every cited `path:N-M` resolved inside the project root and read once
//! per run, and every Excerpt compared with the lines really there (a contiguous run, whitespace
//! at line ends ignored, indentation relative), with the real lines attached when it differs.

use super::CheckContext;
use crate::contract::envelope::{Citation, Envelope};
use crate::contract::files::{CitedFileError, SourceFile};
use crate::contract::rule::Rule;
use crate::contract::spec::Contract;
use crate::problem::Problem;
use crate::project::PathError;
use std::sync::Arc;

/// Lines an excerpt note shows at most.
const SHOW_LINES: usize = 12;

pub(super) fn check_evidence(
    env: &Envelope,
    contract: &Contract,
    ctx: &CheckContext,
    out: &mut Vec<Problem>,
) {
    for item in &env.evidence {
        let mut good: Vec<(Arc<SourceFile>, &Citation)> = Vec::new();
        for r in &item.references {
            match ctx.files.get(ctx.project, &r.path) {
                Err(CitedFileError::Outside(e)) => out.push(
                    Rule::PathOutsideRoot
                        .problem(r.span.clone(), e.to_string())
                        .with_help(match e {
                            PathError::HardLink { .. } => {
                                "cite a file of the project itself, not a hard link to a file \
                                 that may live elsewhere"
                            }
                            _ => "cite the file by its path relative to the project root",
                        }),
                ),
                Err(CitedFileError::Missing(m)) => {
                    out.push(Rule::FileMissing.problem(r.span.clone(), m))
                }
                Err(CitedFileError::Unreadable(m)) => {
                    out.push(Rule::FileUnreadable.problem(r.span.clone(), m))
                }
                Ok(file) => {
                    let n = file.line_count();
                    if r.last > n {
                        out.push(
                            Rule::RangePastEnd
                                .problem(
                                    r.span.clone(),
                                    format!(
                                        "`{r}` is past the end of the file: `{}` has {n} line{}",
                                        file.name,
                                        if n == 1 { "" } else { "s" }
                                    ),
                                )
                                .with_help("take the line numbers from the `read` output"),
                        );
                    } else {
                        good.push((file, r));
                    }
                }
            }
        }
        let Some(block) = item.excerpt.as_ref().and_then(|e| e.block.as_ref()) else {
            continue;
        };
        let lines = block.lines();
        if lines.is_empty() {
            out.push(
                Rule::ExcerptEmpty
                    .problem(block.span.clone(), "the excerpt is empty")
                    .with_help("copy the cited lines into the block"),
            );
            continue;
        }
        let max = contract.excerpt_max_lines as usize;
        let count = block.line_count();
        if count > max {
            let mut v = Rule::ExcerptTooLong
                .problem(
                    block.span.clone(),
                    format!(
                        "the excerpt has {count} lines; the `{}` contract allows at most {max}",
                        contract.name
                    ),
                )
                .with_help(format!(
                    "cite and quote only the 1–{max} lines that carry the point"
                ));
            if let Some((file, r)) = good.first() {
                let (a, b, shown) = actual_lines(file, r, &lines);
                v = v.with_actual(format!("{}:{a}-{b}", file.name), shown);
            }
            out.push(v);
        }
        if good.is_empty() {
            continue;
        }
        // A block cut at MAX_EXCERPT_BYTES is longer than what was kept, so it matches nothing.
        if block.more_lines == 0
            && good
                .iter()
                .any(|(file, r)| find_run(file, r.first, r.last, &lines).is_some())
        {
            continue;
        }
        let (file, r) = &good[0];
        let (a, b, shown) = actual_lines(file, r, &lines);
        let message = if count > r.last - r.first + 1 {
            format!(
                "the excerpt has {count} lines but `{r}` cites {}",
                r.last - r.first + 1
            )
        } else {
            format!("the excerpt is not a run of the lines `{r}` cites")
        };
        let elsewhere = good
            .iter()
            .find_map(|(file, _)| find_run(file, 1, file.line_count(), &lines).map(|s| (file, s)));
        let help = match elsewhere {
            Some((file, s)) => format!(
                "these lines are at `{}`; cite that range, or quote the lines that are at `{r}`",
                Citation {
                    path: file.name.clone(),
                    first: s,
                    last: s + lines.len() - 1,
                    span: 0..0,
                }
            ),
            None => "copy the cited lines verbatim: no fixing, shortening or reflowing".to_string(),
        };
        out.push(
            Rule::ExcerptMismatch
                .problem(block.span.clone(), message)
                .with_help(help)
                .with_actual(format!("{}:{a}-{b}", file.name), shown),
        );
    }
}

/// The leading whitespace (spaces and tabs) of a line, in bytes.
fn indent(line: &str) -> usize {
    line.len() - line.trim_start_matches([' ', '\t']).len()
}

/// The smallest indentation among the non-blank lines.
fn common_indent<'s>(lines: impl Iterator<Item = &'s str>) -> usize {
    lines
        .filter(|l| !l.trim().is_empty())
        .map(indent)
        .min()
        .unwrap_or(0)
}

/// The first line `s` in `first..=last` from which `excerpt` is a run of `file`'s lines.
///
/// Trailing whitespace is ignored; indentation is compared relative to each side's smallest
/// indentation, so an excerpt re-indented as a whole still matches but inner indentation counts.
fn find_run(file: &SourceFile, first: usize, last: usize, excerpt: &[&str]) -> Option<usize> {
    let k = excerpt.len();
    if k == 0 || last < first || k > last - first + 1 {
        return None;
    }
    let e_indent = common_indent(excerpt.iter().copied());
    let first_line = excerpt[0].trim();
    'start: for s in first..=last + 1 - k {
        // Cheap rejection on the first line before the full comparison.
        match file.line(s) {
            Some(l) if l.trim() == first_line => {}
            _ => continue,
        }
        let window: Vec<&str> = (s..s + k).filter_map(|n| file.line(n)).collect();
        if window.len() != k {
            continue;
        }
        let s_indent = common_indent(window.iter().copied());
        for (e, w) in excerpt.iter().zip(&window) {
            let (e_blank, w_blank) = (e.trim().is_empty(), w.trim().is_empty());
            if e_blank || w_blank {
                if e_blank != w_blank {
                    continue 'start;
                }
                continue;
            }
            if e[e_indent..].trim_end() != w[s_indent..].trim_end() {
                continue 'start;
            }
        }
        return Some(s);
    }
    None
}

/// The real lines to show next to a wrong excerpt: the cited range when short, otherwise a
/// window where the excerpt's first line appears (or the range's start).
fn actual_lines(file: &SourceFile, r: &Citation, excerpt: &[&str]) -> (usize, usize, String) {
    let (mut a, mut b) = (r.first, r.last.min(file.line_count()));
    if b + 1 - a > SHOW_LINES {
        let want = excerpt.len().clamp(1, SHOW_LINES);
        let first = excerpt.first().map_or("", |l| l.trim());
        a = (r.first..=b)
            .find(|&n| file.line(n).is_some_and(|l| l.trim() == first))
            .unwrap_or(r.first);
        b = (a + want - 1).min(b);
    }
    let shown: Vec<&str> = (a..=b).filter_map(|n| file.line(n)).collect();
    (a, b, shown.join("\n"))
}
