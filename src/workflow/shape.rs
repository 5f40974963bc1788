//! The shape of a step's result, written from its schema as a JSON value to fill in: what an
//! INVALID reply shows beside its errors.
//!
//! Qwen2.5-Coder-1.5B reported the planner's `intent` step three times with the fields of the
//! runtime's own reply (`action`, `next`, `questions`) while the errors said only
//! `"refined_intent" is a required property`; a small model copies a shape far better than it
//! builds one from an error message. The placeholders are [`PLACEHOLDER`] strings, which
//! [`placeholders`] finds in a result (with `<…>` blanks copied from a prompt) so a shape sent
//! back unfilled is never accepted.

use serde_json::{Map, Value};

/// What a string to be written stands as in a shape.
pub const PLACEHOLDER: &str = "…";

/// Nesting followed at most: deeper schemas show as `{}`.
const MAX_DEPTH: usize = 4;

/// A value of `schema`'s shape: each property with a placeholder (in serde_json's key order); an enum
/// as its choices joined with ` | `; an array as one item; numbers as their minimum.
pub fn shape(schema: &Value) -> Value {
    shape_at(schema, 0)
}

fn shape_at(schema: &Value, depth: usize) -> Value {
    if let Some(choices) = schema.get("enum").and_then(Value::as_array) {
        let names: Vec<String> = choices
            .iter()
            .map(|c| match c {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect();
        return Value::String(names.join(" | "));
    }
    let kind = schema.get("type").and_then(Value::as_str).unwrap_or(
        if schema.get("properties").is_some() {
            "object"
        } else {
            "string"
        },
    );
    match kind {
        "object" if depth < MAX_DEPTH => {
            let mut out = Map::new();
            let props = schema.get("properties").and_then(Value::as_object);
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            for name in &required {
                let sub = props.and_then(|p| p.get(*name)).unwrap_or(&Value::Null);
                out.insert((*name).to_string(), shape_at(sub, depth + 1));
            }
            for (name, sub) in props.into_iter().flatten() {
                out.entry(name.clone())
                    .or_insert_with(|| shape_at(sub, depth + 1));
            }
            Value::Object(out)
        }
        "object" => Value::Object(Map::new()),
        "array" => {
            let item = schema.get("items").unwrap_or(&Value::Null);
            Value::Array(vec![shape_at(item, depth + 1)])
        }
        "integer" | "number" => schema
            .get("minimum")
            .cloned()
            .unwrap_or_else(|| Value::from(0)),
        "boolean" => Value::Bool(false),
        _ => Value::String(PLACEHOLDER.to_string()),
    }
}

/// Puts into `expected` (a shape, for an INVALID reply) each top-level field of `result` that
/// no error in `errors` concerns and that holds no placeholder, so the shape to copy keeps what
/// was right. The 1.5B planner, shown a bare shape beside one error about its evidence,
/// copied the shape whole, the files it had scoped gone back to `…`. An error concerns a field
/// when it begins with its pointer (`/primary/0: …`) or quotes one of its strings in backticks
/// (a check's "`src/x.rs` does not exist").
pub fn keep_given(expected: &mut Value, result: &Value, errors: &[String]) {
    let (Some(shape), Some(given)) = (expected.as_object_mut(), result.as_object()) else {
        return;
    };
    for (key, value) in given {
        let Some(slot) = shape.get_mut(key) else {
            continue;
        };
        let pointer = format!("/{key}");
        let mut strings = Vec::new();
        strings_in(value, &mut strings);
        let concerned = errors.iter().any(|e| {
            e.strip_prefix(&pointer)
                .is_some_and(|rest| rest.starts_with(['/', ':']))
                || strings
                    .iter()
                    .any(|s| !s.is_empty() && e.contains(&format!("`{s}`")))
        });
        if !concerned && placeholders(value).is_empty() {
            *slot = value.clone();
        }
    }
}

fn strings_in<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::String(s) => out.push(s),
        Value::Array(items) => items.iter().for_each(|v| strings_in(v, out)),
        Value::Object(map) => map.values().for_each(|v| strings_in(v, out)),
        _ => {}
    }
}

/// The JSON pointers of `result`'s strings that are still a shape's placeholder (or an enum's
/// `A | B` choices, which the schema rejects on its own).
pub fn placeholders(result: &Value) -> Vec<String> {
    let mut out = Vec::new();
    walk(result, String::new(), &mut out);
    out
}

/// [`PLACEHOLDER`], or a `<…>` blank as prompts write them (`<the request in one sentence>`).
fn is_placeholder(s: &str) -> bool {
    let s = s.trim();
    s == PLACEHOLDER
        || (s.len() > 2 && s.starts_with('<') && s.ends_with('>') && !s[1..].contains('<'))
}

fn walk(value: &Value, at: String, out: &mut Vec<String>) {
    match value {
        Value::String(s) if is_placeholder(s) => out.push(at),
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                walk(v, format!("{at}/{i}"), out);
            }
        }
        Value::Object(map) => {
            for (k, v) in map {
                walk(v, format!("{at}/{k}"), out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_schema_becomes_a_value_to_fill_in() {
        let schema = json!({
            "type": "object",
            "required": ["action", "refined_intent"],
            "properties": {
                "questions": {"type": "array", "items": {"type": "string"}},
                "action": {"enum": ["PROCEED", "CLARIFY"]},
                "refined_intent": {"type": "string", "minLength": 3},
                "evidence": {"type": "array", "items": {"type": "object",
                    "required": ["path", "start"],
                    "properties": {"path": {"type": "string"}, "start": {"type": "integer", "minimum": 1}}}}
            }
        });
        let shaped = shape(&schema);
        assert_eq!(
            serde_json::to_string(&shaped).unwrap(),
            r#"{"action":"PROCEED | CLARIFY","evidence":[{"path":"…","start":1}],"questions":["…"],"refined_intent":"…"}"#
        );
        assert_eq!(
            placeholders(&shaped),
            ["/evidence/0/path", "/questions/0", "/refined_intent"]
        );
        assert!(placeholders(&json!({"refined_intent": "Add --quiet to run"})).is_empty());
        assert_eq!(
            placeholders(&json!({"a": "<the request in one sentence>", "b": "<a> or <b>"})),
            ["/a"]
        );
    }

    #[test]
    fn the_shape_keeps_the_fields_no_error_concerns() {
        let mut expected =
            json!({"primary": ["…"], "secondary": ["…"], "goal": "…", "evidence": [{"fact": "…"}]});
        let result = json!({
            "primary": ["src/a.rs"], "secondary": ["src/gone.rs"], "goal": "…",
            "evidence": [{"fact": "f"}], "extra": 1
        });
        let errors = [
            "/evidence/0/excerpt: \"…\" is shorter than 3 characters".to_string(),
            "`src/gone.rs` does not exist under the project root".to_string(),
        ];
        keep_given(&mut expected, &result, &errors);
        assert_eq!(
            expected,
            json!({"primary": ["src/a.rs"], "secondary": ["…"], "goal": "…", "evidence": [{"fact": "…"}]}),
            "kept: primary; not: what an error names, a placeholder, a field the shape lacks"
        );
    }
}
