//! The output guard of a `format: json` contract: the answer must be exactly one JSON object
//! (one ```json fence around it is tolerated, with a warning). Then the declared `sanitize`
//! rules run, then the schema. Every violation points at line:col in the answer and names the
//! JSON pointer of the field, so the repair prompt tells the model exactly what to change.

use super::report::Report;
use super::rule::Rule;
use super::schema::JsonContract;
use super::spec::Contract;
use crate::problem::{Problem, Severity};
use crate::project::Project;
use serde::Serialize;
use serde_json::Value;
use std::collections::HashMap;
use std::ops::Range;

/// Why an answer could not be used, as the fallback event names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FailureReason {
    /// Not exactly one JSON object.
    Parse,
    /// A JSON object that breaks the schema.
    Schema,
    /// A JSON object whose fields contradict each other (`if/then/else`, `dependentRequired`,
    /// `not`): e.g. a status request that asks for documents.
    Conflict,
}

impl FailureReason {
    pub fn as_str(self) -> &'static str {
        match self {
            FailureReason::Parse => "parse",
            FailureReason::Schema => "schema",
            FailureReason::Conflict => "conflict",
        }
    }
}

/// What checking a JSON answer found, beyond the report.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonCheck {
    pub report: Report,
    /// The object after sanitizing, when the text held one.
    pub value: Option<Value>,
    /// One sentence per sanitize rule that changed the answer.
    pub sanitized: Vec<String>,
    /// Why the answer is unusable; `None` when it conforms.
    pub reason: Option<FailureReason>,
    /// The clarifying question the answer asks, if the contract names a question field.
    pub question: Option<String>,
}

/// The JSON checker's entry for `contract::check`.
pub fn check_json(text: &str, contract: &Contract, project: &Project) -> Report {
    check_json_detailed(text, contract, project).report
}

/// Checks `text` against a JSON contract and says what it found.
pub fn check_json_detailed(text: &str, contract: &Contract, project: &Project) -> JsonCheck {
    let mut violations = Vec::new();
    let mut out = JsonCheck {
        report: Report::default(),
        value: None,
        sanitized: Vec::new(),
        reason: None,
        question: None,
    };
    let Some(json) = &contract.json else {
        violations.push(violation(
            Rule::JsonSchemaInvalid,
            0..0,
            "this contract has `format: json` but no `schema`",
        ));
        out.reason = Some(FailureReason::Schema);
        out.report = Report::new(text, contract.name.clone(), violations);
        return out;
    };
    match guard(text, &mut violations) {
        None => out.reason = Some(FailureReason::Parse),
        Some((mut value, body)) => {
            let spans = pointer_spans(text, body);
            for rule in &json.sanitize {
                if rule.apply(&mut value) > 0 {
                    let span = span_of(&spans, &rule.from);
                    out.sanitized.push(rule.describe());
                    violations.push(warning(
                        Rule::JsonSanitized,
                        span,
                        format!("sanitized: {}", rule.describe()),
                    ));
                }
            }
            validate(json, &value, &spans, project, &mut violations, &mut out);
            out.value = Some(value);
        }
    }
    out.report = Report::new(text, contract.name.clone(), violations);
    out.report.json = true;
    out
}

/// The rule at `schema_path` in words (`json_hint`), when the schema is inline and the rule's
/// shape is one it can say; the path is kept so a person can find the rule.
fn rule_hint(json: &JsonContract, value: &Value, schema_path: &str, field: &str) -> Option<String> {
    let super::schema::SchemaSource::Inline(schema) = &json.schema else {
        return None;
    };
    let asks = super::json_hint::hint(schema, value, schema_path, field)?;
    Some(format!("{asks} (the schema rule at `{schema_path}`)"))
}

/// The passing list nearest to the one at `pointer` (`json_hint::nearest_list`), for an inline
/// schema.
fn nearest_list(
    json: &JsonContract,
    value: &Value,
    pointer: &str,
    validator: &jsonschema::Validator,
) -> Option<Value> {
    let super::schema::SchemaSource::Inline(schema) = &json.schema else {
        return None;
    };
    super::json_hint::nearest_list(schema, value, pointer, |v| validator.is_valid(v))
}

fn validate(
    json: &JsonContract,
    value: &Value,
    spans: &HashMap<String, Range<usize>>,
    project: &Project,
    violations: &mut Vec<Problem>,
    out: &mut JsonCheck,
) {
    let validator = match json.validator(project) {
        Ok(v) => v,
        Err(e) => {
            violations.push(violation(
                Rule::JsonSchemaInvalid,
                0..0,
                format!("the contract's schema cannot be used: {e}"),
            ));
            out.reason = Some(FailureReason::Schema);
            return;
        }
    };
    let mut conflict = true;
    let mut any = false;
    for err in validator.0.iter_errors(value) {
        any = true;
        let pointer = err.instance_path().as_str().to_string();
        let schema_path = err.schema_path().as_str().to_string();
        let is_conflict = [
            "/then",
            "/else",
            "/not",
            "/dependentRequired",
            "/dependentSchemas",
        ]
        .iter()
        .any(|k| schema_path.contains(k));
        conflict &= is_conflict;
        let field = if pointer.is_empty() {
            "the top-level object".to_string()
        } else {
            format!("field `{pointer}`")
        };
        violations.push(
            violation(
                if is_conflict {
                    Rule::JsonConflict
                } else {
                    Rule::JsonSchema
                },
                span_of(spans, &pointer),
                format!("{field}: {err}"),
            )
            .with_help({
                let help = rule_hint(json, value, &schema_path, &field).unwrap_or_else(|| {
                    format!("change {field} so it satisfies the schema rule at `{schema_path}`")
                });
                // The value to copy first: a small model acts on the first thing it reads.
                match nearest_list(json, value, &pointer, &validator.0) {
                    Some(list) => format!("write {field} as `{list}`. Why: {help}"),
                    None => help,
                }
            }),
        );
    }
    // `conflict` only when every error is a cross-field rule: a wrong type is the deeper fault.
    if let Some(field) = &json.question {
        match value.get(field) {
            Some(Value::Array(items)) if items.len() > 1 => {
                any = true;
                conflict = false;
                violations.push(
                    violation(
                        Rule::JsonQuestion,
                        span_of(spans, &format!("/{field}")),
                        format!(
                            "field `/{field}` asks {} questions; at most one is allowed",
                            items.len()
                        ),
                    )
                    .with_help("keep only the one question you most need answered"),
                );
            }
            Some(Value::Array(items)) => {
                out.question = items.first().and_then(Value::as_str).map(str::to_string)
            }
            Some(Value::String(s)) if !s.trim().is_empty() => out.question = Some(s.clone()),
            _ => {}
        }
    }
    if any {
        out.reason = Some(if conflict {
            FailureReason::Conflict
        } else {
            FailureReason::Schema
        });
    }
}

fn warning(rule: Rule, span: Range<usize>, message: String) -> Problem {
    let mut v = violation(rule, span, message);
    v.severity = Severity::Warning;
    v
}

/// The span of `pointer`, or of its nearest ancestor that has one.
fn span_of(spans: &HashMap<String, Range<usize>>, pointer: &str) -> Range<usize> {
    let mut p = pointer;
    loop {
        if let Some(s) = spans.get(p) {
            return s.clone();
        }
        match p.rfind('/') {
            Some(i) => p = &p[..i],
            None => return spans.get("").cloned().unwrap_or(0..0),
        }
    }
}

/// Finds the one JSON object in `text`. Returns it and the byte offset where it starts, or
/// `None` after recording why there is none.
pub fn guard(text: &str, violations: &mut Vec<Problem>) -> Option<(Value, usize)> {
    let (body_start, body_end) = unfence(text, violations);
    let body = &text[body_start..body_end];
    let lead = body.len() - body.trim_start().len();
    let start = body_start + lead;
    if text[start..body_end].is_empty() {
        violations.push(
            violation(
                Rule::JsonParse,
                start..start,
                "the answer holds no JSON object",
            )
            .with_help("answer with one JSON object and nothing else"),
        );
        return None;
    }
    if !text[start..].starts_with(['{', '[']) {
        let found = text[start..body_end].find('{').map(|i| start + i);
        let end = found.unwrap_or(body_end);
        violations.push(
            violation(Rule::JsonProse, start..end, "text before the JSON object")
                .with_help("remove everything before the opening `{`; send only the object"),
        );
        return None;
    }
    let mut stream =
        serde_json::Deserializer::from_str(&text[start..body_end]).into_iter::<Value>();
    let value = match stream.next() {
        Some(Ok(v)) => v,
        Some(Err(e)) => {
            violations.push(parse_error(text, start, &e));
            return None;
        }
        None => return None,
    };
    let after = start + stream.byte_offset();
    let rest = &text[after..body_end];
    let trimmed = rest.trim_start();
    if !trimmed.is_empty() {
        let at = after + (rest.len() - trimmed.len());
        let (rule, message, help) = if trimmed.starts_with('{') {
            (
                Rule::JsonMultiple,
                "a second JSON object after the first",
                "merge everything into one object; send exactly one",
            )
        } else {
            (
                Rule::JsonProse,
                "text after the JSON object",
                "remove everything after the closing `}`",
            )
        };
        violations.push(violation(rule, at..body_end, message).with_help(help));
        return None;
    }
    if !value.is_object() {
        violations.push(
            violation(
                Rule::JsonParse,
                start..after,
                "the answer is not a JSON object",
            )
            .with_help("wrap the answer in `{ … }` with named fields"),
        );
        return None;
    }
    Some((value, start))
}

/// Strips one ```json fence around the whole answer (warning); returns the body's byte range.
fn unfence(text: &str, violations: &mut Vec<Problem>) -> (usize, usize) {
    let trimmed = text.trim();
    let lead = text.len() - text.trim_start().len();
    let Some(after_ticks) = trimmed.strip_prefix("```") else {
        return (0, text.len());
    };
    let Some(nl) = after_ticks.find('\n') else {
        return (0, text.len());
    };
    let info = after_ticks[..nl].trim();
    if !(info.is_empty() || info == "json") || !trimmed.ends_with("```") || trimmed.len() < 7 {
        return (0, text.len());
    }
    let body_start = lead + 3 + nl + 1;
    let body_end = lead + trimmed.len() - 3;
    if body_end < body_start {
        return (0, text.len());
    }
    violations.push(warning(
        Rule::JsonFenced,
        lead..lead + 3 + nl,
        "the JSON object is wrapped in a code fence".into(),
    ));
    (body_start, body_end)
}

/// A serde_json error as a violation at its line:col, with a hint for the usual mistakes.
fn parse_error(text: &str, start: usize, e: &serde_json::Error) -> Problem {
    // serde_json counts lines and columns from `start`; turn them into a byte offset.
    let body = &text[start..];
    let mut offset = start;
    for (i, line) in body.split_inclusive('\n').enumerate() {
        if i + 1 == e.line() {
            let col = e.column().saturating_sub(1).min(line.len());
            offset += col;
            break;
        }
        offset += line.len();
    }
    let msg = e.to_string();
    let at = text.get(offset.saturating_sub(1)..).unwrap_or("");
    let help = if msg.contains("trailing comma") {
        "remove the comma before the closing bracket or brace"
    } else if at.contains("NaN") || at.contains("Infinity") {
        "NaN and Infinity are not JSON: use null or a number"
    } else if msg.contains("EOF") {
        "the object is cut off: close every `[` and `{`"
    } else if msg.contains("key must be a string") {
        "put every key in double quotes"
    } else {
        "send valid JSON: double-quoted strings and keys, no comments, no trailing commas"
    };
    let message = match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg,
    };
    violation(
        Rule::JsonParse,
        offset..offset + 1,
        format!("invalid JSON: {message}"),
    )
    .with_help(help)
}

/// The byte span of every value in the (valid) JSON at `text[start..]`, by JSON pointer.
pub fn pointer_spans(text: &str, start: usize) -> HashMap<String, Range<usize>> {
    let mut spans = HashMap::new();
    let mut scanner = Scanner {
        bytes: text.as_bytes(),
        pos: start,
    };
    scanner.value(String::new(), &mut spans);
    spans
}

struct Scanner<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Scanner<'_> {
    fn ws(&mut self) {
        while self.pos < self.bytes.len() && self.bytes[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn value(&mut self, pointer: String, spans: &mut HashMap<String, Range<usize>>) {
        self.ws();
        let start = self.pos;
        match self.peek() {
            Some(b'{') => {
                self.pos += 1;
                loop {
                    self.ws();
                    match self.peek() {
                        Some(b'}') | None => break,
                        Some(b',') => self.pos += 1,
                        Some(b'"') => {
                            let key_start = self.pos;
                            self.string();
                            let key: String =
                                serde_json::from_slice(&self.bytes[key_start..self.pos])
                                    .unwrap_or_default();
                            self.ws();
                            if self.peek() == Some(b':') {
                                self.pos += 1;
                            }
                            let escaped = key.replace('~', "~0").replace('/', "~1");
                            self.value(format!("{pointer}/{escaped}"), spans);
                        }
                        Some(_) => self.pos += 1,
                    }
                }
                self.pos = (self.pos + 1).min(self.bytes.len());
            }
            Some(b'[') => {
                self.pos += 1;
                let mut i = 0;
                loop {
                    self.ws();
                    match self.peek() {
                        Some(b']') | None => break,
                        Some(b',') => self.pos += 1,
                        Some(_) => {
                            self.value(format!("{pointer}/{i}"), spans);
                            i += 1;
                        }
                    }
                }
                self.pos = (self.pos + 1).min(self.bytes.len());
            }
            Some(b'"') => self.string(),
            Some(_) => {
                while let Some(b) = self.peek() {
                    if matches!(b, b',' | b'}' | b']') || b.is_ascii_whitespace() {
                        break;
                    }
                    self.pos += 1;
                }
            }
            None => {}
        }
        spans.insert(pointer, start..self.pos);
    }

    fn string(&mut self) {
        self.pos += 1;
        while let Some(b) = self.peek() {
            self.pos += 1;
            match b {
                b'\\' => self.pos += 1,
                b'"' => break,
                _ => {}
            }
        }
        self.pos = self.pos.min(self.bytes.len());
    }
}

/// A contract rule broken at `span` of the answer (an error; [`warning`] for the others).
fn violation(rule: Rule, span: Range<usize>, message: impl Into<String>) -> Problem {
    rule.problem(span, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::locate;

    fn rules_of(text: &str) -> Vec<(Rule, usize, usize)> {
        let mut v = Vec::new();
        guard(text, &mut v);
        locate(text, &mut v);
        v.iter()
            .map(|v| (Rule::from_code(&v.code).unwrap(), v.line, v.column))
            .collect()
    }

    #[test]
    fn the_guard_accepts_one_object_and_warns_on_a_fence() {
        assert!(rules_of("  {\"a\": 1}\n").is_empty());
        assert_eq!(
            rules_of("```json\n{\"a\": 1}\n```"),
            [(Rule::JsonFenced, 1, 1)]
        );
    }

    #[test]
    fn the_guard_points_at_each_kind_of_bad_answer() {
        assert_eq!(
            rules_of("Here it is: {\"a\": 1}"),
            [(Rule::JsonProse, 1, 1)]
        );
        assert_eq!(rules_of("{\"a\": 1}\nThanks!"), [(Rule::JsonProse, 2, 1)]);
        assert_eq!(
            rules_of("{\"a\": 1}\n{\"b\": 2}"),
            [(Rule::JsonMultiple, 2, 1)]
        );
        assert_eq!(
            rules_of("{\n  \"a\": [1, 2,],\n}"),
            [(Rule::JsonParse, 2, 14)]
        );
        assert_eq!(rules_of("{\"a\": NaN}")[0].0, Rule::JsonParse);
        assert_eq!(rules_of("[1, 2]")[0].0, Rule::JsonParse);
        assert_eq!(rules_of("")[0].0, Rule::JsonParse);
        assert_eq!(rules_of("{\"a\": ")[0].0, Rule::JsonParse);
    }

    #[test]
    fn spans_follow_pointers() {
        let text = "{\"a\": {\"b/c\": [1, \"x\"]}, \"d\": null}";
        let spans = pointer_spans(text, 0);
        assert_eq!(&text[spans["/a/b~1c/1"].clone()], "\"x\"");
        assert_eq!(&text[spans["/d"].clone()], "null");
        assert_eq!(&text[span_of(&spans, "/a/b~1c/7")], "[1, \"x\"]");
    }
}
