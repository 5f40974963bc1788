//! Frontmatter fields: a fast path for the plain `key: value` lines nearly every answer has, and
//! serde-saphyr for everything else, with positions mapped back into the answer.

use super::envelope::{Envelope, Field, FieldValue};
use super::rule::Rule;
use crate::markdown::Frontmatter;
use crate::problem::floor_boundary;
use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::fmt;
use std::ops::Range;

/// A YAML value with its location, as serde-saphyr hands it over.
type SpannedValue = serde_saphyr::Spanned<RawValue>;

struct RawValue(FieldValue);

impl<'de> Deserialize<'de> for RawValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(RawVisitor).map(RawValue)
    }
}

struct RawVisitor;

impl<'de> Visitor<'de> for RawVisitor {
    type Value = FieldValue;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a YAML value")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<FieldValue, E> {
        Ok(FieldValue::Str(v.to_string()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<FieldValue, E> {
        Ok(FieldValue::Str(v))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<FieldValue, E> {
        Ok(FieldValue::Scalar(v.to_string()))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<FieldValue, E> {
        Ok(FieldValue::Scalar(v.to_string()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<FieldValue, E> {
        Ok(FieldValue::Scalar(v.to_string()))
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<FieldValue, E> {
        Ok(FieldValue::Scalar(v.to_string()))
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<FieldValue, E> {
        Ok(FieldValue::Scalar(v.to_string()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<FieldValue, E> {
        Ok(FieldValue::Scalar(v.to_string()))
    }
    fn visit_char<E: de::Error>(self, v: char) -> Result<FieldValue, E> {
        Ok(FieldValue::Str(v.to_string()))
    }
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<FieldValue, E> {
        Ok(FieldValue::Str(String::from_utf8_lossy(v).into_owned()))
    }
    fn visit_unit<E: de::Error>(self) -> Result<FieldValue, E> {
        Ok(FieldValue::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<FieldValue, E> {
        Ok(FieldValue::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<FieldValue, D::Error> {
        d.deserialize_any(RawVisitor)
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<FieldValue, D::Error> {
        d.deserialize_any(RawVisitor)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<FieldValue, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(FieldValue::Seq)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<FieldValue, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(FieldValue::Map)
    }
}

/// The frontmatter's top-level mapping, in order.
struct TopLevel(Vec<(SpannedValue, SpannedValue)>);

impl<'de> Deserialize<'de> for TopLevel {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(TopVisitor)
    }
}

struct TopVisitor;

impl<'de> Visitor<'de> for TopVisitor {
    type Value = TopLevel;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a mapping of fields")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TopLevel, A::Error> {
        let mut entries = Vec::new();
        while let Some(entry) = map.next_entry::<SpannedValue, SpannedValue>()? {
            entries.push(entry);
        }
        Ok(TopLevel(entries))
    }
    fn visit_unit<E: de::Error>(self) -> Result<TopLevel, E> {
        Ok(TopLevel(Vec::new()))
    }
    fn visit_none<E: de::Error>(self) -> Result<TopLevel, E> {
        Ok(TopLevel(Vec::new()))
    }
}

/// Byte range in the whole text of a saphyr location inside the YAML.
fn location_span(
    text: &str,
    yaml: &Range<usize>,
    yaml_index: &crate::markdown::LineIndex,
    loc: &serde_saphyr::Location,
) -> Range<usize> {
    let yaml_text = &text[yaml.clone()];
    let span = loc.span();
    let start = match span.byte_offset() {
        Some(off) => usize::try_from(off).unwrap_or(usize::MAX),
        None => {
            // Fall back to line and column (both 1-based, the column in characters).
            let line = usize::try_from(loc.line()).unwrap_or(usize::MAX);
            let col = usize::try_from(loc.column()).unwrap_or(1).max(1);
            match yaml_index.line_start(line) {
                Some(s) => {
                    let rest = yaml_text.get(s..).unwrap_or("");
                    s + rest
                        .char_indices()
                        .nth(col - 1)
                        .map_or(rest.len(), |(i, _)| i)
                }
                None => 0,
            }
        }
    };
    let start = floor_boundary(yaml_text, start);
    let len = span
        .byte_len()
        .and_then(|l| usize::try_from(l).ok())
        .unwrap_or(0);
    let end = floor_boundary(yaml_text, start.saturating_add(len));
    yaml.start + start..yaml.start + end
}

pub(super) fn parse_fields(text: &str, fm: &Frontmatter, env: &mut Envelope) {
    let yaml_text = &text[fm.yaml.clone()];
    if yaml_text.trim().is_empty() {
        return;
    }
    if let Some(fields) = simple_fields(text, &fm.yaml) {
        env.fields = fields;
        return;
    }
    yaml_fields(text, fm, env);
}

/// The fast path for the frontmatter nearly every answer has: `key: value` lines of printable
/// ASCII with plain or simply quoted string values. Anything it is not sure YAML reads the same
/// way (numbers, flow collections, escapes, comments after values, indentation, tabs, duplicate
/// keys, …) returns `None`, and serde-saphyr parses the frontmatter instead. A unit test checks
/// that both paths agree wherever the fast one answers.
fn simple_fields(text: &str, yaml: &Range<usize>) -> Option<Vec<Field>> {
    let mut fields: Vec<Field> = Vec::new();
    let mut pos = yaml.start;
    while pos < yaml.end {
        let rest = &text[pos..yaml.end];
        let (line_end, next) = match rest.find('\n') {
            Some(i) => (pos + i, pos + i + 1),
            None => (yaml.end, yaml.end),
        };
        let line = &text[pos..line_end];
        let line = line.strip_suffix('\r').unwrap_or(line);
        if !line.bytes().all(|b| (b' '..=b'~').contains(&b)) {
            return None;
        }
        let content = line.trim_start_matches(' ');
        if content.is_empty() || content.starts_with('#') {
            pos = next;
            continue;
        }
        if content.len() != line.len() {
            return None;
        }
        let colon = line.find(':')?;
        let key = &line[..colon];
        let key_ok = key
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
            && key
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            && !matches!(key, "null" | "Null" | "NULL");
        if !key_ok || fields.iter().any(|f| f.key == key) {
            return None;
        }
        let after = &line[colon + 1..];
        if !after.is_empty() && !after.starts_with(' ') {
            return None;
        }
        let raw = after.trim_matches(' ');
        let value_start = pos + colon + 1 + (after.len() - after.trim_start_matches(' ').len());
        let value = simple_value(raw)?;
        fields.push(Field {
            key: key.to_string(),
            key_span: pos..pos + colon,
            value,
            value_span: value_start..value_start + raw.len(),
        });
        pos = next;
    }
    (!fields.is_empty()).then_some(fields)
}

/// How YAML reads a one-line value of printable ASCII, when that is certain.
fn simple_value(raw: &str) -> Option<FieldValue> {
    let first = raw.bytes().next();
    match first {
        None => return Some(FieldValue::Null),
        Some(q @ (b'"' | b'\'')) => {
            let inner = raw.strip_prefix(q as char)?.strip_suffix(q as char)?;
            let plain = !inner.contains(q as char) && (q == b'\'' || !inner.contains('\\'));
            return plain.then(|| FieldValue::Str(inner.to_string()));
        }
        Some(b) if b"-?:,[]{}#&*!|>%@`".contains(&b) => return None,
        _ => {}
    }
    if raw.contains(" #") || raw.contains(": ") || raw.ends_with(':') {
        return None;
    }
    if matches!(raw, "~" | "null" | "Null" | "NULL") {
        return Some(FieldValue::Null);
    }
    let bool_word = ["true", "false", "yes", "no", "y", "n", "on", "off"]
        .iter()
        .any(|w| raw.eq_ignore_ascii_case(w));
    if bool_word {
        return Some(FieldValue::Scalar(raw.to_string()));
    }
    if first.is_some_and(|b| b.is_ascii_digit() || b == b'+' || b == b'.') {
        // Numbers are YAML's business; dates and timestamps stay strings.
        let dated = raw.get(..10).is_some_and(|d| {
            let b = d.as_bytes();
            b[4] == b'-'
                && b[7] == b'-'
                && b.iter()
                    .enumerate()
                    .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
        });
        if !dated {
            return None;
        }
    }
    Some(FieldValue::Str(raw.to_string()))
}

/// The frontmatter through serde-saphyr, positions mapped back into the file.
fn yaml_fields(text: &str, fm: &Frontmatter, env: &mut Envelope) {
    let yaml_text = &text[fm.yaml.clone()];
    let yaml_index = crate::markdown::LineIndex::new(yaml_text);
    match serde_saphyr::from_str::<TopLevel>(yaml_text) {
        Ok(TopLevel(entries)) => {
            for (key, value) in entries {
                let key_span = location_span(text, &fm.yaml, &yaml_index, &key.referenced);
                let value_span = location_span(text, &fm.yaml, &yaml_index, &value.referenced);
                let key_text = match key.value.0 {
                    FieldValue::Str(s) => s,
                    FieldValue::Scalar(_) => text[key_span.clone()].to_string(),
                    _ => continue,
                };
                let value = match value.value.0 {
                    // Numbers and booleans: keep what was written, not what YAML made of it.
                    FieldValue::Scalar(parsed) => {
                        let raw = text[value_span.clone()].trim();
                        FieldValue::Scalar(if raw.is_empty() {
                            parsed
                        } else {
                            raw.to_string()
                        })
                    }
                    other => other,
                };
                env.fields.push(Field {
                    key: key_text,
                    key_span,
                    value,
                    value_span,
                });
            }
        }
        Err(err) => {
            let span = match err.location() {
                Some(loc) => {
                    let s = location_span(text, &fm.yaml, &yaml_index, &loc);
                    s.start..s.end.max(s.start)
                }
                None => fm.open.clone(),
            };
            let message = yaml_message(&err.to_string());
            env.problems.push(
                Rule::FrontmatterYaml
                    .problem(
                        span,
                        format!("the frontmatter is not a valid YAML mapping: {message}"),
                    )
                    .with_help(
                        "write one `key: value` per line; quote values that hold `: ` or `#`",
                    ),
            );
        }
    }
}

/// serde-saphyr's message without its own position (relative to the YAML, not the file) and
/// without advice about its options.
fn yaml_message(s: &str) -> String {
    let mut line = s.lines().next().unwrap_or("").trim();
    line = line.strip_prefix("error: ").unwrap_or(line);
    if let Some(rest) = line.strip_prefix("line ") {
        if let Some((_, msg)) = rest.split_once(": ") {
            line = msg;
        }
    }
    if let Some((msg, _)) = line.split_once(", set DuplicateKeyPolicy") {
        line = msg;
    }
    let mut out: String = line.chars().take(200).collect();
    if out.len() < line.len() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::markdown::split_frontmatter;

    /// Both frontmatter paths on the same YAML: the fast one must agree when it answers.
    fn both_paths(yaml: &str) -> (Option<Vec<Field>>, Envelope) {
        let text = format!("---\n{yaml}---\n");
        let fm = split_frontmatter(&text).unwrap();
        let fast = simple_fields(&text, &fm.yaml);
        let mut slow = Envelope::default();
        yaml_fields(&text, &fm, &mut slow);
        (fast, slow)
    }

    fn assert_paths_agree(yaml: &str) -> bool {
        let (fast, slow) = both_paths(yaml);
        let Some(fast) = fast else { return false };
        assert!(
            slow.problems.is_empty(),
            "{yaml:?}: fast path accepted what YAML refuses: {:?}",
            slow.problems
        );
        assert_eq!(fast.len(), slow.fields.len(), "{yaml:?}");
        for (f, s) in fast.iter().zip(&slow.fields) {
            assert_eq!((&f.key, &f.key_span), (&s.key, &s.key_span), "{yaml:?}");
            assert_eq!(f.value, s.value, "{yaml:?}");
            if f.value != FieldValue::Null {
                assert_eq!(f.value_span, s.value_span, "{yaml:?}");
            }
        }
        true
    }

    #[test]
    fn fast_frontmatter_path_agrees_with_yaml() {
        let typical = "message_id: thoughts-2026-01-19-001\ncorrelation_id: research-auth\n\
            timestamp: 2026-01-20T01:30:00+02:00\nmessage_type: DOCUMENT_ANALYSIS_RESPONSE\n\
            source_document: 'thoughts/a b.md'\ndocument_date: \"2026-01-15\"\n\
            document_status:\n# a comment\n\nreliability: High   \nflag: Yes\nnothing: ~\n";
        assert!(assert_paths_agree(typical));
        for yaml in [
            "a: 1\n",
            "a: -1\n",
            "a: .5\n",
            "a: [x]\n",
            "a: x # c\n",
            "a: \"x\\ny\"\n",
            "a: 'it''s'\n",
            "a:\n  b: c\n",
            "a: x\na: y\n",
            "a:x\n",
            "a: b: c\n",
            " a: x\n",
            "a: x\n  y\n",
            "a\tb: x\n",
            "a: é\n",
            "? a\n: b\n",
            "a: &x y\n",
            "a: !t y\n",
            "a: |\n  y\n",
            "a: >\n  y\n",
            "a: @x\n",
            "null: x\n",
            "- a\n",
            "a: x:\n",
            "a: 0x1F\n",
            "a: 1e3\n",
            "a: 12:30\n",
            "a: +1\n",
            "\"a\": x\n",
        ] {
            let _ = assert_paths_agree(yaml);
        }
    }

    proptest::proptest! {
        #[test]
        fn fast_frontmatter_path_agrees_on_soups(
            lines in proptest::collection::vec(
                (
                    proptest::sample::select(&["a", "b_c", "d-e", "Key9", "null", "_x", "y", "on"][..]),
                    proptest::sample::select(&[
                        "", " ", ": ", ":", " #", "#", "'", "\"", "\\", "~", "x", "2026-01-15",
                        "2026-01-19T14:30:00Z", "+02:00", "12", "0", "-", ".", "yes", "No", "[",
                        "]", "{", ",", "&", "*", "!", "|", ">", "%", "@", "`", "?", "é", "\t",
                        "null", "true", "1e5", "0x1", "_", " x y ", "a:b", "http://x.y/z",
                    ][..]),
                    proptest::collection::vec(0usize..44, 0..4),
                ),
                1..6,
            )
        ) {
            const PIECES: [&str; 44] = [
                "", " ", ": ", ":", " #", "#", "'", "\"", "\\", "~", "x", "2026-01-15",
                "2026-01-19T14:30:00Z", "+02:00", "12", "0", "-", ".", "yes", "No", "[",
                "]", "{", ",", "&", "*", "!", "|", ">", "%", "@", "`", "?", "é", "\t",
                "null", "true", "1e5", "0x1", "_", " x y ", "a:b", "http://x.y/z", "\r",
            ];
            let mut yaml = String::new();
            for (key, first, rest) in &lines {
                yaml.push_str(key);
                yaml.push_str(": ");
                yaml.push_str(first);
                for i in rest {
                    yaml.push_str(PIECES[*i]);
                }
                yaml.push('\n');
            }
            let _ = assert_paths_agree(&yaml);
        }
    }
}
