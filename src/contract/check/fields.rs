//! Frontmatter field rules: `message_id` (format, date, the allocated id), `timestamp`,
//! `correlation_id`, `message_type`, and the fields a contract adds (kind, allowed values).
//! The fields themselves were read by the parser (`contract/fields.rs`).

use super::CheckContext;
use crate::contract::envelope::{Envelope, Field, FieldValue};
use crate::contract::rule::Rule;
use crate::contract::spec::{is_upper_snake, Contract, FieldKind, FieldRule};
use crate::problem::Problem;
use chrono::{DateTime, NaiveDate, Utc};
use std::ops::Range;

pub(super) fn check_fields(
    env: &Envelope,
    contract: &Contract,
    ctx: &CheckContext,
    out: &mut Vec<Problem>,
) {
    let at = env.frontmatter.as_ref().map_or(0..0, |fm| fm.open.clone());
    let missing = |key: &str, out: &mut Vec<Problem>| {
        let mut v =
            Rule::FieldMissing.problem(at.clone(), format!("the frontmatter has no `{key}` field"));
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
        Some(f) => {
            match f.value.as_scalar() {
                Some(id) => {
                    match parse_message_id(id) {
                    Ok((_, date)) => id_date = Some(date),
                    Err(why) => out.push(
                        Rule::MessageIdFormat.problem(f.value_span.clone(),
                            format!("`message_id: {id}` is not `<prefix>-YYYY-MM-DD-NNN`: {why}"),
                        )
                        .with_help("e.g. `thoughts-2026-01-19-001`"),
                    ),
                }
                    if let Some(expected) = ctx.message_id {
                        if id != expected {
                            out.push(
                                Rule::MessageIdMismatch
                                    .problem(
                                        f.value_span.clone(),
                                        format!(
                                    "`message_id` is `{id}`, but this answer's id is `{expected}`"
                                ),
                                    )
                                    .with_help(format!(
                                        "copy the id exactly: `message_id: {expected}`"
                                    )),
                            );
                        }
                    }
                }
                None => out.push(Rule::MessageIdFormat.problem(
                    value_or_key(f),
                    "`message_id` must be a single value such as `thoughts-2026-01-19-001`",
                )),
            }
        }
    }

    // timestamp
    let mut ts_date = None;
    match env.field("timestamp") {
        None => missing("timestamp", out),
        Some(f) => match f.value.as_scalar().map(str::trim) {
            Some(ts) => match DateTime::parse_from_rfc3339(ts) {
                Ok(t) => ts_date = Some((t.with_timezone(&Utc).date_naive(), ts)),
                Err(e) => out.push(
                    Rule::Timestamp
                        .problem(
                            f.value_span.clone(),
                            format!("`timestamp: {ts}` is not an RFC 3339 time with a zone ({e})"),
                        )
                        .with_help("e.g. `2026-01-19T14:30:00Z` or `2026-01-19T16:30:00+02:00`"),
                ),
            },
            None => out.push(Rule::Timestamp.problem(
                value_or_key(f),
                "`timestamp` must be an RFC 3339 time such as `2026-01-19T14:30:00Z`",
            )),
        },
    }
    if let (Some(date), Some((utc, ts)), Some(f)) = (id_date, ts_date, env.field("message_id")) {
        if date != utc {
            out.push(
                Rule::MessageIdDate
                    .problem(
                        f.value_span.clone(),
                        format!(
                            "`message_id` is dated {date}, but `timestamp: {ts}` is {utc} in UTC"
                        ),
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
                    Rule::CorrelationId
                        .problem(
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
                        Rule::CorrelationMismatch
                            .problem(
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
                out.push(Rule::MessageType.problem(
                    value_or_key(f),
                    format!("`message_type: {value}` is not UPPER_SNAKE_CASE"),
                ));
            } else if !contract.message_types.is_empty()
                && !contract.message_types.iter().any(|t| t == value)
            {
                out.push(
                    Rule::MessageType
                        .problem(
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
            out.push(Rule::FieldValue.problem(value_or_key(f), message));
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
fn value_or_key(f: &Field) -> Range<usize> {
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
    crate::problem::edit_distance(a, b) <= 2
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
    }
}
