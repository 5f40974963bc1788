//! Evidence and excerpts: every cited `path:N-M` resolved inside the project root and read once
//! per run, and every Excerpt compared with the lines really there (a contiguous run, whitespace
//! at line ends ignored, indentation relative). A wrong or too long excerpt gets a replacement
//! attached: a range of at most `excerpt_max_lines` real lines that would pass as it stands.

use super::CheckContext;
use crate::contract::envelope::{Citation, Envelope};
use crate::contract::files::{CitedFileError, SourceFile};
use crate::contract::rule::Rule;
use crate::contract::spec::Contract;
use crate::problem::Problem;
use crate::project::PathError;
use std::sync::Arc;

/// `Some` when every line of an excerpt that says anything is the scaffolding of an Evidence
/// item (`- **Evidence**: `path:N-M``, `- **Excerpt**:`, a fence), with the first reference it
/// holds, if any. Qwen2.5-Coder-1.5B as codebase-analyzer, sent a plan, quoted the plan's own
/// Evidence lines as three findings; each excerpt was the plan's text at its lines, so all three
/// verified, and the report built on them cited no line of the code they pointed to.
pub(crate) fn quoted_citation(lines: &[&str]) -> Option<Option<String>> {
    let mut first = None;
    let mut any = false;
    for line in lines.iter().map(|l| l.trim()).filter(|l| !l.is_empty()) {
        let bare = ["- ", "* ", "+ "]
            .iter()
            .find_map(|m| line.strip_prefix(m))
            .unwrap_or(line)
            .trim_start();
        // A label, then nothing but code spans (the references): words beside it are content.
        let label = ["**Evidence**:", "**Excerpt**:"]
            .iter()
            .filter_map(|l| bare.strip_prefix(l))
            .any(|rest| rest.split('`').step_by(2).all(|out| out.trim().is_empty()));
        let fence = bare.starts_with("```") || bare.starts_with("~~~");
        if !label && !fence {
            return None;
        }
        any |= label;
        if first.is_none() && bare.starts_with("**Evidence**") {
            first = bare
                .split('`')
                .nth(1)
                .filter(|r| !r.is_empty())
                .map(str::to_string);
        }
    }
    any.then_some(first)
}

/// Whether `text` holds a word: three letters in a row. An excerpt without one (`},`, `}`,
/// `Ok(())`) quotes a real line and says nothing; Qwen2.5-Coder-1.5B's codebase-analyzer, asked
/// for more Evidence, cited `src/agent/parse.rs:114`, `},`, under "There were no issues with
/// the YAML parser", and the item counted toward the researcher's report (BENCHMARKS.md,
/// "Twenty-seventh session"). The local grammar opens no excerpt on such a line either.
pub fn has_word(text: &str) -> bool {
    let mut run = 0;
    for c in text.chars() {
        if c.is_alphabetic() {
            run += 1;
            if run == 3 {
                return true;
            }
        } else {
            run = 0;
        }
    }
    false
}

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
        if let Some(cited) = quoted_citation(&lines) {
            // Matching or not, it is no evidence of anything: checked before the comparison.
            out.push(
                Rule::ExcerptCitation
                    .problem(
                        block.span.clone(),
                        "the excerpt is only another document's Evidence/Excerpt labels: it \
                         quotes a citation, not what the cited lines say",
                    )
                    .with_help(match cited {
                        Some(r) => format!("cite `{r}` itself and quote its lines"),
                        None => "cite and quote the lines that carry the point".to_string(),
                    }),
            );
            continue;
        }
        let max = contract.excerpt_max_lines as usize;
        let count = block.line_count();
        let cite = |file: &SourceFile, a: usize, b: usize, shown: String| {
            (format!("{}:{a}-{b}", file.name), shown)
        };
        if count > max {
            // One problem per block: the replacement below also settles whether it matches.
            let mut v = Rule::ExcerptTooLong.problem(
                block.span.clone(),
                format!(
                    "the excerpt has {count} lines; the `{}` contract allows at most {max}",
                    contract.name
                ),
            );
            // Word for word the file's own lines: its first `max` lines are offered, and
            // `contract::fix` may take them (a quote cut down, nothing put in).
            let exact = (block.more_lines == 0)
                .then(|| {
                    good.iter().find_map(|(file, r)| {
                        find_run(file, r.first, r.last, &lines).map(|s| (file, s))
                    })
                })
                .flatten();
            v = match (exact, good.first()) {
                (Some((file, s)), _) => {
                    let (a, b, shown) = citable(file, s, s + lines.len() - 1, &lines, max);
                    let (from, shown) = cite(file, a, b, shown);
                    v.with_help(format!(
                        "{CUT_DOWN} `{from}` below: cite and quote only the 1–{max} lines that \
                         carry the point"
                    ))
                    .with_actual(from, shown)
                }
                (None, Some((file, r))) => {
                    let (a, b, shown) = citable(file, r.first, r.last, &lines, max);
                    let (from, shown) = cite(file, a, b, shown);
                    v.with_help(format!(
                        "cite and quote only the 1–{max} lines that carry the point, such as `{from}` below"
                    ))
                    .with_actual(from, shown)
                }
                (None, None) => v.with_help(format!(
                    "cite and quote only the 1–{max} lines that carry the point"
                )),
            };
            out.push(v);
            continue;
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
            // The cited lines, word for word; still no evidence when they say nothing.
            if !lines.iter().any(|l| has_word(l)) {
                let shown = lines.iter().map(|l| l.trim()).collect::<Vec<_>>().join(" ");
                out.push(
                    Rule::ExcerptNoWords
                        .problem(
                            block.span.clone(),
                            format!(
                                "the excerpt `{shown}` holds no word: punctuation cannot carry a \
                                 finding, even when it is the cited line"
                            ),
                        )
                        .with_help(
                            "cite and quote the lines that state the finding: a sentence, a \
                             comment, a signature or a condition",
                        ),
                );
            }
            continue;
        }
        let (file, r) = &good[0];
        let message = if count > r.last - r.first + 1 {
            format!(
                "the excerpt has {count} lines but `{r}` cites {}",
                r.last - r.first + 1
            )
        } else {
            format!("the excerpt is not a run of the lines `{r}` cites")
        };
        // The excerpt's own lines found elsewhere in a cited file: most often the text was
        // right and the numbers were not, so that range is the replacement offered.
        let elsewhere = good
            .iter()
            .find_map(|(file, _)| find_run(file, 1, file.line_count(), &lines).map(|s| (file, s)));
        // Only outside the cited range: a run inside it means the citation was right and the
        // copy sloppy (a line shortened), so the cited lines are the ones to offer.
        let part = || {
            good.iter().find_map(|(file, r)| {
                longest_part(file, &lines)
                    .filter(|(at, _, n)| at + n - 1 < r.first || *at > r.last)
                    .map(|p| (file, p))
            })
        };
        let part = if elsewhere.is_none() { part() } else { None };
        // Each line a piece of the cited line at its place: the quote was cut short (Qwen2.5-
        // Coder-1.5B dropped `envelopes. ` from the start of a line that went on from the line
        // before). The whole lines are what it quoted from.
        let short = (elsewhere.is_none() && part.is_none())
            .then(|| {
                good.iter().find_map(|(file, r)| {
                    shortened_run(file, r.first, r.last, &lines).map(|s| (file, s))
                })
            })
            .flatten();
        let (help, (from, shown)) = match (elsewhere, part, short) {
            (None, None, Some((file, s))) => {
                let (a, b, shown) = citable(file, s, s + lines.len() - 1, &lines, max);
                let (from, shown) = cite(file, a, b, shown);
                (
                    format!("{SHORTENED} `{from}`: quote those lines whole, as they stand"),
                    (from, shown),
                )
            }
            (Some((file, s)), _, _) => {
                let (a, b, shown) = citable(file, s, s + lines.len() - 1, &lines, max);
                let (from, shown) = cite(file, a, b, shown);
                (
                    format!("{RELOCATED} `{from}`, not at `{r}`: cite `{from}`"),
                    (from, shown),
                )
            }
            // Part of it, word for word: a small model quoted four real lines under a heading
            // it had reworded, and cited lines 1–10 for them (they stand at 28–31).
            (None, Some((file, (at, i, n))), _) => {
                let part = &lines[i..i + n];
                let (a, b, shown) = citable(file, at, at + n - 1, part, max);
                let (from, shown) = cite(file, a, b, shown);
                (
                    format!(
                        "{PART_FOUND} (lines {}–{} of it) stands at `{from}`, the rest is not in \
                         the file: cite `{from}` and quote those lines only",
                        i + 1,
                        i + n
                    ),
                    (from, shown),
                )
            }
            (None, None, None) => {
                let (a, b, shown) = citable(file, r.first, r.last, &lines, max);
                (
                    "copy the cited lines exactly as they are, no fixing, shortening or \
                     reflowing; if they do not carry the point, cite the lines that do"
                        .to_string(),
                    cite(file, a, b, shown),
                )
            }
        };
        out.push(
            Rule::ExcerptMismatch
                .problem(block.span.clone(), message)
                .with_help(help)
                .with_actual(from, shown),
        );
    }
}

/// The references of `env` whose excerpt is a run of fewer lines than they cite, each with
/// the run as `path:A-B`: the span of the reference (backticks included) and its narrowed text.
pub(crate) fn narrowings(
    env: &Envelope,
    ctx: &CheckContext,
) -> Vec<(std::ops::Range<usize>, String)> {
    let mut out = Vec::new();
    for item in &env.evidence {
        let [r] = item.references.as_slice() else {
            continue;
        };
        let Some(block) = item.excerpt.as_ref().and_then(|e| e.block.as_ref()) else {
            continue;
        };
        let lines = block.lines();
        if lines.is_empty() || block.more_lines > 0 {
            continue;
        }
        let Ok(file) = ctx.files.get(ctx.project, &r.path) else {
            continue;
        };
        if r.last > file.line_count() {
            continue;
        }
        let Some(a) = find_run(&file, r.first, r.last, &lines) else {
            continue;
        };
        let b = a + lines.len() - 1;
        if (a, b) != (r.first, r.last) {
            out.push((r.span.clone(), format!("`{}:{a}-{b}`", r.path)));
        }
    }
    out
}

/// Opens the help of an `excerpt/mismatch` whose excerpt stands, whole, at other lines of a
/// cited file; its attached lines are that range. [`crate::contract::fix`] takes it as it is.
pub(crate) const RELOCATED: &str = "your excerpt is at";
/// Opens the help of an `excerpt/mismatch` whose excerpt holds a run of a cited file's lines
/// word for word (see [`longest_part`]); its attached lines are that run.
pub(crate) const PART_FOUND: &str = "only part of your excerpt";
/// Opens the help of an `excerpt/mismatch` whose every line is a piece of the cited line at its
/// place (see [`shortened_run`]); its attached lines are those lines whole.
pub(crate) const SHORTENED: &str = "your excerpt cuts short the lines at";
/// Opens the help of an `excerpt/too-long` whose excerpt is, word for word, a run of the cited
/// lines; its attached lines are the first of that run that fit. Over llama-server (no grammar)
/// Qwen2.5-Coder-1.5B's thoughts-analyzer quoted a 10-line paragraph of the record, exactly,
/// where 6 lines are allowed, through both repairs, and the item was lost.
pub(crate) const CUT_DOWN: &str = "your excerpt is the file's own text; its first lines are";
/// Characters (trimmed) a partial run must hold to be offered: a blank line, a `---` or a
/// closing brace alone is found in every file and proves nothing.
const MIN_PART_CHARS: usize = 40;
/// Excerpt lines looked through for a partial run (the search is quadratic in them).
const MAX_PART_LINES: usize = 24;

/// The longest run of `excerpt`'s consecutive lines that stands word for word in `file`'s body
/// (its YAML frontmatter is metadata, never the carrier of a finding), as (first line in the
/// file, index of the run's first line in the excerpt, run length). Only a run shorter than the
/// excerpt and holding at least [`MIN_PART_CHARS`]; the first found of the longest.
fn longest_part(file: &SourceFile, excerpt: &[&str]) -> Option<(usize, usize, usize)> {
    let k = excerpt.len().min(MAX_PART_LINES);
    let body = file.frontmatter_end().map_or(1, |end| end + 1);
    let last = file.line_count();
    for n in (1..k.min(excerpt.len().saturating_sub(1)) + 1).rev() {
        for i in 0..=k - n {
            let part = &excerpt[i..i + n];
            let chars: usize = part.iter().map(|l| l.trim().chars().count()).sum();
            if chars < MIN_PART_CHARS || part[0].trim().is_empty() || part[n - 1].trim().is_empty()
            {
                continue;
            }
            if let Some(at) = find_run(file, body, last, part) {
                return Some((at, i, n));
            }
        }
    }
    None
}

/// The first line `s` in `first..=last` from which each line of `excerpt` is contained in line
/// `s + i` of `file` (trimmed; a blank line only against a blank line), when the pieces hold at
/// least [`MIN_PART_CHARS`] / 2 characters: a verbatim quote cut short at either end of a line,
/// never a rewording.
fn shortened_run(file: &SourceFile, first: usize, last: usize, excerpt: &[&str]) -> Option<usize> {
    let k = excerpt.len();
    let chars: usize = excerpt.iter().map(|l| l.trim().chars().count()).sum();
    if k == 0 || last < first || k > last - first + 1 || chars * 2 < MIN_PART_CHARS {
        return None;
    }
    (first..=last + 1 - k).find(|&s| {
        excerpt.iter().enumerate().all(|(i, e)| {
            let (e, w) = (e.trim(), file.line(s + i).unwrap_or("").trim());
            if e.is_empty() || w.is_empty() {
                e.is_empty() && w.is_empty()
            } else {
                w.contains(e)
            }
        })
    })
}

/// Files an answer's items are about: its `source_document` field, then the files its Evidence
/// cites, at most this many.
const MAX_SOURCE_FILES: usize = 4;
/// Lines of each source file looked through for a title.
const MAX_SCAN_LINES: usize = 20_000;

/// The line of one of the answer's own source files that shares the most words with `title`
/// (an item left without Evidence), as `path:N-N` and the line: offered in its repair so a small
/// model copies a real line instead of composing one. Never a line of a YAML frontmatter. Only a
/// line holding at least two and at least 60 % of the title's words, so a stray word never
/// counts; the model is still the one to judge whether the line states the item.
pub(super) fn stating_line(
    env: &Envelope,
    ctx: &CheckContext,
    title: &str,
) -> Option<(String, String)> {
    let want = words(title);
    if want.len() < 2 {
        return None;
    }
    let mut names: Vec<&str> = env
        .scalar("source_document")
        .into_iter()
        .chain(
            env.evidence
                .iter()
                .flat_map(|e| e.references.iter().map(|r| r.path.as_str())),
        )
        .collect();
    let mut seen = std::collections::HashSet::new();
    names.retain(|n| seen.insert(*n));
    let mut best: Option<(usize, Arc<SourceFile>, usize)> = None;
    for name in names.into_iter().take(MAX_SOURCE_FILES) {
        let Ok(file) = ctx.files.get(ctx.project, name) else {
            continue;
        };
        // The frontmatter is metadata: its `topic:` line shares words with every title.
        let body = file.frontmatter_end().map_or(1, |end| end + 1);
        let lines = (body..=file.line_count().min(MAX_SCAN_LINES))
            .filter_map(|n| file.line(n).map(|line| (n, line)));
        if let Some((shared, n)) = most_stating(&want, lines) {
            if best.as_ref().is_none_or(|(b, _, _)| shared > *b) {
                best = Some((shared, file.clone(), n));
            }
        }
    }
    let (_, file, n) = best?;
    let line = file.line(n)?.to_string();
    Some((format!("{}:{n}-{n}", file.name), line))
}

/// Among `lines` (number, text), the first that shares the most of `want`'s words with it, as
/// (words shared, number): only one holding at least two and at least 60 % of them, so a stray
/// word never counts. [`stating_line`] offers it in a repair; the local sampler's number guard
/// (`model::local::fresh`) has an item cite it while the item is written.
pub(crate) fn most_stating<'l>(
    want: &std::collections::BTreeSet<String>,
    lines: impl IntoIterator<Item = (usize, &'l str)>,
) -> Option<(usize, usize)> {
    let mut best: Option<(usize, usize)> = None;
    for (n, line) in lines {
        let shared = words(line).intersection(want).count();
        if shared >= 2 && shared * 5 >= want.len() * 3 && best.is_none_or(|(b, _)| shared > b) {
            best = Some((shared, n));
        }
    }
    best
}

/// The words of `text` that carry meaning: lowercase runs of letters and digits, three or more
/// long, without the commonest English ones.
pub(crate) fn words(text: &str) -> std::collections::BTreeSet<String> {
    const COMMON: &[&str] = &[
        "the", "and", "for", "with", "from", "that", "this", "are", "was", "not", "our", "its",
        "into", "over", "use", "uses", "used",
    ];
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3)
        .map(str::to_lowercase)
        .filter(|w| !COMMON.contains(&w.as_str()))
        .collect()
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

/// A citation the Evidence item can take as it is: at most `max` lines of `file` inside
/// `first..=last`, starting where the excerpt's first line is (else at `first`), without blank
/// lines at either end. Quoting these lines under this range passes the check, so a repair can
/// offer them to be copied rather than asking a small model to count lines.
fn citable(
    file: &SourceFile,
    first: usize,
    last: usize,
    excerpt: &[&str],
    max: usize,
) -> (usize, usize, String) {
    let last = last.min(file.line_count()).max(first);
    let blank = |n: usize| file.line(n).is_none_or(|l| l.trim().is_empty());
    let lead = excerpt.iter().map(|l| l.trim()).find(|l| !l.is_empty());
    let mut a = lead
        .and_then(|lead| (first..=last).find(|&n| file.line(n).is_some_and(|l| l.trim() == lead)))
        .unwrap_or(first);
    while a < last && blank(a) {
        a += 1;
    }
    let mut b = (a + max.max(1) - 1).min(last);
    while b > a && blank(b) {
        b -= 1;
    }
    let shown: Vec<&str> = (a..=b).filter_map(|n| file.line(n)).collect();
    (a, b, shown.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::super::{check, CheckContext};
    use crate::contract::files::FileCache;
    use crate::contract::spec::Contract;
    use crate::project::Project;

    /// Twelve numbered lines with a blank line 7.
    const DOC: &str = "one\ntwo\nthree\nfour\nfive\nsix\n\neight\nnine\nten\neleven\ntwelve\n";

    fn answer(cite: &str, excerpt: &[&str]) -> String {
        let block: String = excerpt.iter().map(|l| format!("  {l}\n")).collect();
        format!(
            "---\nmessage_id: a-2026-01-19-001\ncorrelation_id: c\n\
             timestamp: 2026-01-19T10:00:00Z\nmessage_type: X\n---\n<thinking>\nt\n</thinking>\n\
             <answer>\n- **Evidence**: `{cite}`\n- **Excerpt**:\n  ```\n{block}  ```\n</answer>\n"
        )
    }

    /// `f` on a project holding `doc.md` ([`DOC`]), its check context and the envelope contract.
    fn with_doc<R>(f: impl FnOnce(&Project, &CheckContext, &Contract) -> R) -> R {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("doc.md"), DOC).unwrap();
        let project = Project::open(dir.path()).unwrap();
        let files = FileCache::new();
        let ctx = CheckContext::new(&project, &files);
        f(&project, &ctx, &Contract::envelope())
    }

    /// Checks `text`, then takes the replacement the problem offers (if any) and checks again.
    fn offered(excerpt: &[&str], cite: &str) -> (Vec<String>, Option<(String, String)>, bool) {
        with_doc(|_, ctx, contract| {
            let report = check(&answer(cite, excerpt), contract, ctx);
            let codes = report
                .violations
                .iter()
                .map(|v| v.code.to_string())
                .collect();
            let Some(actual) = report.violations.iter().find_map(|v| v.actual.clone()) else {
                return (codes, None, false);
            };
            let lines: Vec<&str> = actual.lines.lines().collect();
            let passes = check(&answer(&actual.from, &lines), contract, ctx).is_conformant();
            (codes, Some((actual.from, actual.lines)), passes)
        })
    }

    #[test]
    fn a_too_long_excerpt_is_offered_the_limit_from_where_it_starts_and_that_passes() {
        let ten = [
            "two", "three", "four", "five", "six", "", "eight", "nine", "ten", "eleven",
        ];
        let (codes, offer, passes) = offered(&ten, "doc.md:2-11");
        assert_eq!(
            codes,
            ["excerpt/too-long"],
            "one problem, not also a mismatch"
        );
        let (from, lines) = offer.unwrap();
        assert_eq!(
            from, "doc.md:2-6",
            "six lines but the blank seventh dropped"
        );
        assert_eq!(lines, "two\nthree\nfour\nfive\nsix");
        assert!(passes);
    }

    /// Word for word the file's lines, only too many of them: the runtime cuts the quote down
    /// itself (`contract::fix`) and the copy passes. Made-up lines are never swapped for real
    /// ones: that help is not offered for the fix to take.
    #[test]
    fn a_too_long_quote_of_the_file_is_cut_down_and_a_made_up_one_is_not() {
        with_doc(|project, ctx, contract| {
            let quote = |eighth: &str| {
                answer(
                    "doc.md:2-11",
                    &[
                        "two", "three", "four", "five", "six", "", eighth, "nine", "ten", "eleven",
                    ],
                )
            };
            let exact = quote("eight");
            let problems = check(&exact, contract, ctx).violations;
            assert!(
                problems[0]
                    .help
                    .as_deref()
                    .is_some_and(|h| h.starts_with(super::CUT_DOWN)),
                "{problems:?}"
            );
            let fixed = crate::contract::fix::apply(&exact, &problems, project).expect("cut down");
            assert!(check(&fixed, contract, ctx).is_conformant(), "{fixed}");
            assert!(
                fixed.contains("`doc.md:2-6`") && !fixed.contains("eleven"),
                "{fixed}"
            );

            let made_up = quote("EIGHT");
            let problems = check(&made_up, contract, ctx).violations;
            assert_eq!(problems[0].code, "excerpt/too-long");
            assert_eq!(
                crate::contract::fix::apply(&made_up, &problems, project),
                None
            );
        });
    }

    /// A real line of punctuation (`},`) is refused and not counted; a line with a word, even a
    /// `use` line, is the checker's to accept (what it proves is the reader's to judge).
    #[test]
    fn an_excerpt_without_a_word_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("a.rs"),
            "use super::definition::{\n    Agent,\n},\nOk(())\n",
        )
        .unwrap();
        let project = Project::open(dir.path()).unwrap();
        let files = FileCache::new();
        let ctx = CheckContext::new(&project, &files);
        for (lines, excerpt) in [("a.rs:3", vec!["},"]), ("a.rs:4", vec!["Ok(())"])] {
            let text = answer(lines, &excerpt);
            let problems = check(&text, &Contract::envelope(), &ctx).violations;
            let codes: Vec<&str> = problems.iter().map(|p| p.code.as_ref()).collect();
            assert_eq!(codes, ["excerpt/no-words"], "{problems:?}");
            assert!(crate::contract::verified_items(&text, &ctx).is_empty());
        }
        for (lines, excerpt) in [
            ("a.rs:1", vec!["use super::definition::{"]),
            ("a.rs:2-3", vec!["    Agent,", "},"]),
        ] {
            let text = answer(lines, &excerpt);
            assert!(
                check(&text, &Contract::envelope(), &ctx).is_conformant(),
                "{text}"
            );
        }
        assert!(super::has_word("fn run()") && !super::has_word("fn a() {} b2 ;"));
    }

    /// A plan's own Evidence lines quoted as evidence: they are the plan's text at those lines,
    /// and still no evidence of what they cite, so the item is refused and not counted.
    #[test]
    fn an_excerpt_that_quotes_another_document_s_citation_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let plan =
            "# Plan\n- **Evidence**: `src/retry.rs:4-5`\n- **Excerpt**:\n```\nlet n = 3;\n```\n";
        std::fs::write(dir.path().join("plan.md"), plan).unwrap();
        let project = Project::open(dir.path()).unwrap();
        let files = FileCache::new();
        let ctx = CheckContext::new(&project, &files);
        let text = answer(
            "plan.md:2-3",
            &["- **Evidence**: `src/retry.rs:4-5`", "- **Excerpt**:"],
        );
        let problems = check(&text, &Contract::envelope(), &ctx).violations;
        let codes: Vec<&str> = problems.iter().map(|p| p.code.as_ref()).collect();
        assert_eq!(codes, ["excerpt/citation"], "{problems:?}");
        assert_eq!(
            problems[0].help.as_deref(),
            Some("cite `src/retry.rs:4-5` itself and quote its lines")
        );
        assert!(crate::contract::verified_items(&text, &ctx).is_empty());
        // The plan's quoted line itself is content: quoting it is evidence.
        let content = answer("plan.md:5-5", &["let n = 3;"]);
        assert!(check(&content, &Contract::envelope(), &ctx).is_conformant());
        // A label with words of its own beside it is not scaffolding alone.
        assert_eq!(
            super::quoted_citation(&["**Evidence**: `a.rs:1` holds the retry limit"]),
            None
        );
        assert_eq!(
            super::quoted_citation(&["```", "- **Excerpt**:"]),
            Some(None)
        );
    }

    #[test]
    fn a_mismatch_whose_lines_are_elsewhere_is_offered_that_range() {
        let (codes, offer, passes) = offered(&["nine", "ten"], "doc.md:2-3");
        assert_eq!(codes, ["excerpt/mismatch"]);
        assert_eq!(offer.unwrap(), ("doc.md:9-10".into(), "nine\nten".into()));
        assert!(passes);
    }

    #[test]
    fn a_reworded_excerpt_is_offered_the_cited_lines_within_the_limit() {
        let (codes, offer, passes) = offered(&["Six!", "(blank)"], "doc.md:6-12");
        assert_eq!(codes, ["excerpt/mismatch"]);
        let (from, lines) = offer.unwrap();
        assert_eq!(
            from, "doc.md:6-11",
            "at most six lines of a seven-line range"
        );
        assert_eq!(lines, "six\n\neight\nnine\nten\neleven");
        assert!(passes);
        // A range that only holds blank lines at its ends is trimmed to its text.
        let (_, offer, passes) = offered(&["x"], "doc.md:7-8");
        assert_eq!(offer.unwrap(), ("doc.md:8-8".into(), "eight".into()));
        assert!(passes);
    }
}
