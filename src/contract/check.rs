//! The checker: an envelope against a contract, with the project's files as the ground truth.

use super::envelope::{Envelope, FieldValue, Reference};
use super::files::{CitedFileError, FileCache, SourceFile};
use super::report::Report;
use super::rule::{locate, Rule, Violation};
use super::spec::{is_upper_snake, Contract, EvidencePolicy, FieldKind, FieldRule};
use crate::project::Project;
use chrono::{DateTime, NaiveDate, Utc};
use std::ops::Range;
use std::sync::Arc;

/// What the checker knows beyond the text: where the project is, which ids to expect, and the
/// cache of cited files shared by a whole run.
#[derive(Debug, Clone, Copy)]
pub struct CheckContext<'a> {
    pub project: &'a Project,
    /// The correlation id the caller expects; the envelope's must be equal when `Some`.
    pub correlation_id: Option<&'a str>,
    /// The message id the runtime allocated; the envelope's must be equal when `Some`.
    pub message_id: Option<&'a str>,
    /// Cited files, each read at most once per run.
    pub files: &'a FileCache,
}

impl<'a> CheckContext<'a> {
    /// A context that expects no particular ids.
    pub fn new(project: &'a Project, files: &'a FileCache) -> Self {
        CheckContext {
            project,
            correlation_id: None,
            message_id: None,
            files,
        }
    }

    pub fn with_correlation_id(mut self, id: &'a str) -> Self {
        self.correlation_id = Some(id);
        self
    }

    pub fn with_message_id(mut self, id: &'a str) -> Self {
        self.message_id = Some(id);
        self
    }
}

/// Checks `text` against `contract`: parse, then every rule. Never panics.
pub fn check(text: &str, contract: &Contract, ctx: &CheckContext) -> Report {
    if contract.format == super::spec::ContractFormat::Json {
        return super::json::check_json(text, contract, ctx.project);
    }
    let env = Envelope::parse_lenient(text);
    check_envelope(text, &env, contract, ctx)
}

/// Checks an envelope already parsed from `text` (so a caller that needed the parse first, e.g.
/// to pick the contract by `message_type`, does not parse twice).
pub fn check_envelope(
    text: &str,
    env: &Envelope,
    contract: &Contract,
    ctx: &CheckContext,
) -> Report {
    let mut own = Vec::new();
    let yaml_ok =
        env.frontmatter.is_some() && !env.problems.iter().any(|p| p.rule == Rule::FrontmatterYaml);
    if yaml_ok {
        check_fields(env, contract, ctx, &mut own);
    }
    check_evidence(env, contract, ctx, &mut own);
    if env.answer.is_some() {
        check_signals(env, contract, &mut own);
        check_sections(env, contract, &mut own);
    }
    locate(text, &mut own);
    let mut violations = env.problems.clone();
    violations.extend(own);
    violations.sort_by_key(|v| (v.span.start, v.rule));
    Report {
        contract: contract.name.clone(),
        violations,
        json: false,
    }
}

/// Re-verifies only the Evidence + Excerpt pairs of any markdown `text` (a plan or research
/// report under `thoughts/`, which is no envelope): the same rules the checker applies to
/// answers, so a citation that was true when written and went stale reads the same way.
/// Structural problems of an envelope are not reported.
pub fn verify_evidence(text: &str, ctx: &CheckContext) -> Vec<Violation> {
    verify_document(text, ctx).violations
}

/// What [`verify_document`] found: the problems, and every path the document cites (so a caller
/// that caches the result knows which files invalidate it).
#[derive(Debug, Clone, Default)]
pub struct DocumentCheck {
    pub violations: Vec<Violation>,
    pub cited: Vec<String>,
}

/// [`verify_evidence`], also returning the cited paths.
pub fn verify_document(text: &str, ctx: &CheckContext) -> DocumentCheck {
    let env = crate::contract::envelope::parse_document(text);
    let mut cited: Vec<String> = env
        .evidence
        .iter()
        .flat_map(|e| e.references.iter().map(|r| r.path.clone()))
        .collect();
    cited.sort();
    cited.dedup();
    let mut out: Vec<Violation> = env
        .problems
        .iter()
        .filter(|p| {
            let code = p.rule.code();
            code.starts_with("evidence/") || code.starts_with("excerpt/")
        })
        .cloned()
        .collect();
    let mut own = Vec::new();
    check_evidence(&env, &Contract::envelope(), ctx, &mut own);
    locate(text, &mut own);
    out.extend(own);
    out.sort_by_key(|v| (v.span.start, v.rule));
    DocumentCheck {
        violations: out,
        cited,
    }
}

// ---------------------------------------------------------------------------------------------
// Frontmatter fields

fn check_fields(env: &Envelope, contract: &Contract, ctx: &CheckContext, out: &mut Vec<Violation>) {
    let at = env.frontmatter.as_ref().map_or(0..0, |fm| fm.open.clone());
    let missing = |key: &str, out: &mut Vec<Violation>| {
        let mut v = Violation::error(
            Rule::FieldMissing,
            at.clone(),
            format!("the frontmatter has no `{key}` field"),
        );
        v = match env.fields.iter().find(|f| similar(&f.key, key)) {
            Some(near) => v.with_help(format!(
                "`{}` looks like a misspelling of `{key}`",
                near.key
            )),
            None => v.with_help(format!("add `{key}: {}`", field_example(key, contract))),
        };
        out.push(v);
    };

    // message_id
    let mut id_date = None;
    match env.field("message_id") {
        None => missing("message_id", out),
        Some(f) => match f.value.as_scalar() {
            Some(id) => {
                match parse_message_id(id) {
                    Ok((_, date)) => id_date = Some(date),
                    Err(why) => out.push(
                        Violation::error(
                            Rule::MessageIdFormat,
                            f.value_span.clone(),
                            format!("`message_id: {id}` is not `<prefix>-YYYY-MM-DD-NNN`: {why}"),
                        )
                        .with_help("e.g. `thoughts-2026-01-19-001`"),
                    ),
                }
                if let Some(expected) = ctx.message_id {
                    if id != expected {
                        out.push(
                            Violation::error(
                                Rule::MessageIdMismatch,
                                f.value_span.clone(),
                                format!(
                                    "`message_id` is `{id}`, but this answer's id is `{expected}`"
                                ),
                            )
                            .with_help(format!("copy the id exactly: `message_id: {expected}`")),
                        );
                    }
                }
            }
            None => out.push(Violation::error(
                Rule::MessageIdFormat,
                value_or_key(f),
                "`message_id` must be a single value such as `thoughts-2026-01-19-001`",
            )),
        },
    }

    // timestamp
    let mut ts_date = None;
    match env.field("timestamp") {
        None => missing("timestamp", out),
        Some(f) => match f.value.as_scalar().map(str::trim) {
            Some(ts) => match DateTime::parse_from_rfc3339(ts) {
                Ok(t) => ts_date = Some((t.with_timezone(&Utc).date_naive(), ts)),
                Err(e) => out.push(
                    Violation::error(
                        Rule::Timestamp,
                        f.value_span.clone(),
                        format!("`timestamp: {ts}` is not an RFC 3339 time with a zone ({e})"),
                    )
                    .with_help("e.g. `2026-01-19T14:30:00Z` or `2026-01-19T16:30:00+02:00`"),
                ),
            },
            None => out.push(Violation::error(
                Rule::Timestamp,
                value_or_key(f),
                "`timestamp` must be an RFC 3339 time such as `2026-01-19T14:30:00Z`",
            )),
        },
    }
    if let (Some(date), Some((utc, ts)), Some(f)) = (id_date, ts_date, env.field("message_id")) {
        if date != utc {
            out.push(
                Violation::error(
                    Rule::MessageIdDate,
                    f.value_span.clone(),
                    format!("`message_id` is dated {date}, but `timestamp: {ts}` is {utc} in UTC"),
                )
                .with_help("the id's date is the UTC date of the timestamp"),
            );
        }
    }

    // correlation_id
    match env.field("correlation_id") {
        None => missing("correlation_id", out),
        Some(f) => {
            let value = f.value.as_scalar().map(str::trim).unwrap_or("");
            if !is_token(value) {
                out.push(
                    Violation::error(
                        Rule::CorrelationId,
                        value_or_key(f),
                        if value.is_empty() {
                            "`correlation_id` is empty".to_string()
                        } else {
                            format!(
                                "`correlation_id: {value}` holds characters other than letters, \
                                 digits and `. _ : -`"
                            )
                        },
                    )
                    .with_help("use the caller's workflow id, e.g. `research-auth-2026-01-19`"),
                );
            }
            if let Some(expected) = ctx.correlation_id {
                if value != expected {
                    out.push(
                        Violation::error(
                            Rule::CorrelationMismatch,
                            value_or_key(f),
                            format!(
                                "`correlation_id` is `{value}`, but the caller's is `{expected}`"
                            ),
                        )
                        .with_help(format!("copy it exactly: `correlation_id: {expected}`")),
                    );
                }
            }
        }
    }

    // message_type
    match env.field("message_type") {
        None => missing("message_type", out),
        Some(f) => {
            let value = f.value.as_scalar().map(str::trim).unwrap_or("");
            if !is_upper_snake(value) {
                out.push(Violation::error(
                    Rule::MessageType,
                    value_or_key(f),
                    format!("`message_type: {value}` is not UPPER_SNAKE_CASE"),
                ));
            } else if !contract.message_types.is_empty()
                && !contract.message_types.iter().any(|t| t == value)
            {
                out.push(
                    Violation::error(
                        Rule::MessageType,
                        f.value_span.clone(),
                        format!(
                            "`message_type: {value}` is not allowed by the `{}` contract",
                            contract.name
                        ),
                    )
                    .with_help(format!(
                        "use {}",
                        one_of(contract.message_types.iter().map(String::as_str))
                    )),
                );
            }
        }
    }

    // The contract's own fields.
    for (key, rule) in &contract.fields {
        let Some(f) = env.field(key) else {
            missing(key, out);
            continue;
        };
        let value = f.value.as_scalar().map(str::trim);
        let problem = match (rule, value) {
            (_, None) if f.value == FieldValue::Null => Some(format!("`{key}` is empty")),
            (_, None) => Some(format!(
                "`{key}` must be a single value, not a list or mapping"
            )),
            (_, Some("")) => Some(format!("`{key}` is empty")),
            (FieldRule::Kind(FieldKind::String), Some(_)) => None,
            (FieldRule::Kind(FieldKind::Date), Some(v)) => {
                (!is_date(v)).then(|| format!("`{key}: {v}` is not a date written `YYYY-MM-DD`"))
            }
            (FieldRule::Kind(FieldKind::Timestamp), Some(v)) => DateTime::parse_from_rfc3339(v)
                .err()
                .map(|e| format!("`{key}: {v}` is not an RFC 3339 time with a zone ({e})")),
            (FieldRule::Kind(FieldKind::Path), Some(v)) => match ctx.files.get(ctx.project, v) {
                Ok(_) => None,
                Err(e) => Some(format!("`{key}: {v}`: {e}")),
            },
            (FieldRule::OneOf { one_of: allowed }, Some(v)) => (!allowed.iter().any(|a| a == v))
                .then(|| {
                    format!(
                        "`{key}: {v}` is not one of {}",
                        one_of(allowed.iter().map(String::as_str))
                    )
                }),
        };
        if let Some(message) = problem {
            out.push(Violation::error(Rule::FieldValue, value_or_key(f), message));
        }
    }
}

/// What a missing field's line looks like, for the help text.
fn field_example(key: &str, contract: &Contract) -> String {
    match key {
        "message_id" => "<prefix>-YYYY-MM-DD-NNN".into(),
        "correlation_id" => "<the caller's workflow id>".into(),
        "timestamp" => "<RFC 3339 time, e.g. 2026-01-19T14:30:00Z>".into(),
        "message_type" => match contract.message_types.as_slice() {
            [one] => one.clone(),
            _ => "<UPPER_SNAKE_CASE type>".into(),
        },
        _ => match contract.fields.get(key) {
            Some(FieldRule::Kind(FieldKind::Date)) => "<YYYY-MM-DD>".into(),
            Some(FieldRule::Kind(FieldKind::Timestamp)) => "<RFC 3339 time>".into(),
            Some(FieldRule::Kind(FieldKind::Path)) => "<path relative to the project root>".into(),
            Some(FieldRule::OneOf { one_of }) => format!("<{}>", one_of.join(" | ")),
            _ => "<value>".into(),
        },
    }
}

/// The value's span, or the key's when the value is empty.
fn value_or_key(f: &super::envelope::Field) -> Range<usize> {
    if f.value_span.is_empty() {
        f.key_span.clone()
    } else {
        f.value_span.clone()
    }
}

fn one_of<'s>(items: impl Iterator<Item = &'s str>) -> String {
    let items: Vec<String> = items.map(|s| format!("`{s}`")).collect();
    match items.len() {
        0 => "nothing".into(),
        1 => items[0].clone(),
        n => format!("{} or {}", items[..n - 1].join(", "), items[n - 1]),
    }
}

/// `<prefix>-YYYY-MM-DD-NNN`: the prefix and the date.
pub fn parse_message_id(id: &str) -> Result<(&str, NaiveDate), &'static str> {
    let (rest, seq) = id
        .rsplit_once('-')
        .ok_or("it has no `-NNN` sequence number")?;
    if seq.len() < 3 || !seq.bytes().all(|b| b.is_ascii_digit()) {
        return Err("the sequence number after the date must be three or more digits");
    }
    let split = rest
        .len()
        .checked_sub(11)
        .filter(|&i| rest.is_char_boundary(i))
        .ok_or("it has no `-YYYY-MM-DD` date before the sequence number")?;
    let (prefix, dashed_date) = rest.split_at(split);
    let date = dashed_date
        .strip_prefix('-')
        .filter(|d| is_date_shaped(d))
        .ok_or("it has no `-YYYY-MM-DD` date before the sequence number")?;
    let mut chars = prefix.chars();
    let prefix_ok = matches!(chars.next(), Some(c) if c.is_ascii_lowercase())
        && prefix
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !prefix.ends_with('-');
    if !prefix_ok {
        return Err("the prefix must be lowercase letters, digits and `-`, starting with a letter");
    }
    let date = NaiveDate::parse_from_str(date, "%Y-%m-%d")
        .map_err(|_| "the date is not a calendar date")?;
    Ok((prefix, date))
}

/// Exactly `YYYY-MM-DD`, and a real calendar date.
pub fn is_date(s: &str) -> bool {
    is_date_shaped(s) && NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok()
}

/// Four digits, `-`, two digits, `-`, two digits.
fn is_date_shaped(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}

/// A correlation id: letters, digits and `. _ : -`, not empty.
pub fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'))
}

/// Two field names that are probably the same name misspelt.
fn similar(a: &str, b: &str) -> bool {
    if a == b {
        return false;
    }
    if a.eq_ignore_ascii_case(b) || a.replace('-', "_") == b {
        return true;
    }
    let (la, lb) = (a.chars().count(), b.chars().count());
    if la.abs_diff(lb) > 2 || la > 64 || lb > 64 {
        return false;
    }
    // The same edit distance the loader's "did you mean" uses (a swap of neighbours is one edit).
    crate::diagnostic::edit_distance(a, b) <= 2
}

// ---------------------------------------------------------------------------------------------
// Evidence and excerpts

/// Lines an excerpt note shows at most.
const SHOW_LINES: usize = 12;

fn check_evidence(
    env: &Envelope,
    contract: &Contract,
    ctx: &CheckContext,
    out: &mut Vec<Violation>,
) {
    for item in &env.evidence {
        let mut good: Vec<(Arc<SourceFile>, &Reference)> = Vec::new();
        for r in &item.references {
            match ctx.files.get(ctx.project, &r.path) {
                Err(CitedFileError::Outside(e)) => out.push(
                    Violation::error(Rule::PathOutsideRoot, r.span.clone(), e.to_string())
                        .with_help("cite the file by its path relative to the project root"),
                ),
                Err(CitedFileError::Missing(m)) => {
                    out.push(Violation::error(Rule::FileMissing, r.span.clone(), m))
                }
                Err(CitedFileError::Unreadable(m)) => {
                    out.push(Violation::error(Rule::FileUnreadable, r.span.clone(), m))
                }
                Ok(file) => {
                    let n = file.line_count();
                    if r.last > n {
                        out.push(
                            Violation::error(
                                Rule::RangePastEnd,
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
                Violation::error(
                    Rule::ExcerptEmpty,
                    block.span.clone(),
                    "the excerpt is empty",
                )
                .with_help("copy the cited lines into the block"),
            );
            continue;
        }
        let max = contract.excerpt_max_lines as usize;
        if lines.len() > max {
            let mut v = Violation::error(
                Rule::ExcerptTooLong,
                block.span.clone(),
                format!(
                    "the excerpt has {} lines; the `{}` contract allows at most {max}",
                    lines.len(),
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
        if good
            .iter()
            .any(|(file, r)| find_run(file, r.first, r.last, &lines).is_some())
        {
            continue;
        }
        let (file, r) = &good[0];
        let (a, b, shown) = actual_lines(file, r, &lines);
        let message = if lines.len() > r.last - r.first + 1 {
            format!(
                "the excerpt has {} lines but `{r}` cites {}",
                lines.len(),
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
                Reference {
                    path: file.name.clone(),
                    first: s,
                    last: s + lines.len() - 1,
                    span: 0..0,
                }
            ),
            None => "copy the cited lines verbatim: no fixing, shortening or reflowing".to_string(),
        };
        out.push(
            Violation::error(Rule::ExcerptMismatch, block.span.clone(), message)
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
fn actual_lines(file: &SourceFile, r: &Reference, excerpt: &[&str]) -> (usize, usize, String) {
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

// ---------------------------------------------------------------------------------------------
// Signals and sections

/// `Decision: …` (case-insensitive name, then a colon).
fn signal_name<'c>(text: &str, names: &'c [String]) -> Option<&'c str> {
    names.iter().map(String::as_str).find(|name| {
        text.get(..name.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(name))
            && text[name.len()..].trim_start().starts_with(':')
    })
}

fn check_signals(env: &Envelope, contract: &Contract, out: &mut Vec<Violation>) {
    if contract.evidence != EvidencePolicy::Required || contract.signal_headings.is_empty() {
        return;
    }
    let answer_end = env.answer.as_ref().map_or(usize::MAX, |a| a.inner.end);
    // (span, heading level or None for a bold label, title)
    let mut signals: Vec<(Range<usize>, Option<u8>, String)> = Vec::new();
    for h in &env.headings {
        if signal_name(&h.text, &contract.signal_headings).is_some() {
            signals.push((h.span.clone(), Some(h.level), h.text.clone()));
        }
    }
    for l in &env.labels {
        if contract
            .signal_headings
            .iter()
            .any(|n| n.eq_ignore_ascii_case(&l.name))
        {
            signals.push((l.span.clone(), None, l.name.clone()));
        }
    }
    signals.sort_by_key(|s| s.0.start);
    for (i, (span, level, title)) in signals.iter().enumerate() {
        let next_signal = signals.get(i + 1).map_or(answer_end, |s| s.0.start);
        let next_heading = env
            .headings
            .iter()
            .filter(|h| h.span.start > span.start && level.is_none_or(|l| h.level <= l))
            .map(|h| h.span.start)
            .next()
            .unwrap_or(answer_end);
        let end = next_signal.min(next_heading);
        let has_evidence = env
            .evidence
            .iter()
            .any(|e| e.label.start > span.start && e.label.start < end);
        if !has_evidence {
            out.push(
                Violation::error(
                    Rule::SignalMissingEvidence,
                    span.clone(),
                    format!("`{title}` has no Evidence of its own"),
                )
                .with_help(
                    "add `- **Evidence**: `path:N-M`` and `- **Excerpt**:` with the cited lines \
                     under it, or drop the item",
                ),
            );
        }
    }
}

fn check_sections(env: &Envelope, contract: &Contract, out: &mut Vec<Violation>) {
    let Some(answer) = &env.answer else { return };
    for section in &contract.required_sections {
        let found = env.headings.iter().any(|h| {
            h.text.eq_ignore_ascii_case(section)
                || (h
                    .text
                    .get(..section.len())
                    .is_some_and(|head| head.eq_ignore_ascii_case(section))
                    && h.text[section.len()..].trim_start().starts_with(':'))
        });
        if !found {
            out.push(
                Violation::error(
                    Rule::SectionMissing,
                    answer.open.clone(),
                    format!("the answer has no `{section}` section"),
                )
                .with_help(format!(
                    "add a heading such as `### {section}` (write `None.` under it if it is empty)"
                )),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_ids() {
        let (p, d) = parse_message_id("thoughts-2026-01-19-001").unwrap();
        assert_eq!((p, d.to_string().as_str()), ("thoughts", "2026-01-19"));
        let (p, _) = parse_message_id("codebase-locator-2026-01-19-1234").unwrap();
        assert_eq!(p, "codebase-locator");
        for bad in [
            "thoughts-2026-01-19-01",
            "Thoughts-2026-01-19-001",
            "thoughts-2026-02-30-001",
            "thoughts-2026-1-19-001",
            "2026-01-19-001",
            "-2026-01-19-001",
            "thoughts_2026-01-19-001",
            "thoughts-20260119-001",
            "é-2026-01-19-001",
            "",
            "ééééééééééééé-001",
            "x\u{fffd}26-01-19-001",
        ] {
            assert!(parse_message_id(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn unreadable_cited_files_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let big = std::fs::File::create(dir.path().join("big.log")).unwrap();
        big.set_len(super::super::files::MAX_CITED_FILE_BYTES + 1)
            .unwrap();
        let project = Project::open(dir.path()).unwrap();
        let files = FileCache::new();
        let ctx = CheckContext::new(&project, &files);
        let text = "---\nmessage_id: a-2026-01-19-001\ncorrelation_id: c\n\
            timestamp: 2026-01-19T10:00:00Z\nmessage_type: X\n---\n<thinking>\nt\n</thinking>\n\
            <answer>\n- **Evidence**: `big.log:1`\n- **Excerpt**:\n  ```\n  x\n  ```\n</answer>\n";
        let report = check(text, &Contract::envelope(), &ctx);
        let codes: Vec<_> = report.violations.iter().map(|v| v.rule.code()).collect();
        assert_eq!(codes, ["evidence/file-unreadable"]);
        assert_eq!(report.violations[0].line, 11);
    }

    #[test]
    fn dates_tokens_and_names() {
        assert!(is_date("2026-01-15"));
        assert!(!is_date("2026-1-15"));
        assert!(!is_date("2026-13-01"));
        assert!(!is_date("２０２６-01-15"));
        assert!(is_token("research-auth_2026.01:x"));
        assert!(!is_token("a b"));
        assert!(!is_token(""));
        assert!(similar("reliabilty", "reliability"));
        assert!(similar("Message_ID", "message_id"));
        assert!(!similar("reliability", "reliability"));
        assert!(!similar("status", "document_status"));
        let names = vec!["Decision".to_string(), "Spec".to_string()];
        assert_eq!(signal_name("decision : x", &names), Some("Decision"));
        assert_eq!(signal_name("Specification: x", &names), None);
        assert_eq!(signal_name("Déc", &names), None);
    }
}
