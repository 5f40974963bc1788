//! Frontmatter values of the wrong shape, explained in the user's terms.
//!
//! serde reports a wrong shape in its own vocabulary ("externally tagged enum expected scalar or
//! mapping", "expected mapping start", "invalid u32"), which names neither the key nor what to
//! write. When the YAML itself is well formed, the key the error points into and the kind of
//! value found there are known, so the message can say: "`tools` must be …; found a number (`5`)".

use serde_json::Value;

/// What one key accepts: the value kinds, in words, and an example.
struct Shape {
    key: &'static str,
    kinds: &'static [&'static str],
    expected: &'static str,
    example: &'static str,
}

const SHAPES: &[Shape] = &[
    Shape {
        key: "tools",
        kinds: &["text", "a list", "a map"],
        expected:
            "a list of tool names (`[read, grep]` or `Read, Grep`) or a map of name: true/false",
        example: "tools: {read: true, write: false}",
    },
    Shape {
        key: "mode",
        kinds: &["text"],
        expected: "one of `primary`, `subagent` or `all`",
        example: "mode: subagent",
    },
    Shape {
        key: "permission",
        kinds: &["a map"],
        expected: "a map of tool to allow/ask/deny",
        example: "permission: {edit: deny, task: {\"*\": allow}}",
    },
    Shape {
        key: "steps",
        kinds: &["a number"],
        expected: "a whole number",
        example: "steps: 12",
    },
    Shape {
        key: "maxSteps",
        kinds: &["a number"],
        expected: "a whole number",
        example: "maxSteps: 12",
    },
    Shape {
        key: "maxTurns",
        kinds: &["a number"],
        expected: "a whole number",
        example: "maxTurns: 12",
    },
    Shape {
        key: "temperature",
        kinds: &["a number"],
        expected: "a number",
        example: "temperature: 0.2",
    },
    Shape {
        key: "top_p",
        kinds: &["a number"],
        expected: "a number",
        example: "top_p: 0.9",
    },
    Shape {
        key: "disable",
        kinds: &["true/false"],
        expected: "`true` or `false`",
        example: "disable: true",
    },
    Shape {
        key: "hidden",
        kinds: &["true/false"],
        expected: "`true` or `false`",
        example: "hidden: true",
    },
    Shape {
        key: "contract",
        kinds: &["text", "a map"],
        expected: "the name of a built-in contract or a contract map",
        example: "contract: document-analysis",
    },
    Shape {
        key: "budget",
        kinds: &["a number", "a map"],
        expected: "a token count or a map of limits",
        example: "budget: {tokens: 80000}",
    },
];

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "nothing",
        Value::Bool(_) => "true/false",
        Value::Number(_) => "a number",
        Value::String(_) => "text",
        Value::Array(_) => "a list",
        Value::Object(_) => "a map",
    }
}

/// A wrong-shape explanation for an error at 1-based `error_line` of `yaml`: the message, the
/// 1-based line and column of the value in `yaml`, and a help line with an example. `None` when
/// the YAML is not well formed or the value has an accepted shape (serde's message is then the
/// more precise one).
pub(super) fn explain(
    yaml: &str,
    keys: &[(&str, usize)],
    error_line: usize,
) -> Option<(String, usize, usize, String)> {
    let (key, line) = keys
        .iter()
        .rev()
        .find(|(_, l)| *l < error_line.max(1))
        .copied()?;
    let shape = SHAPES.iter().find(|s| s.key == key)?;
    let doc: Value = crate::yaml::from_str(yaml).ok()?;
    let found = kind(doc.get(key)?);
    if shape.kinds.contains(&found) {
        return None;
    }
    let text = yaml.lines().nth(line)?;
    let value_at = text.find(':')? + 1;
    let written = text[value_at..].trim();
    let value_start = value_at + (text[value_at..].len() - text[value_at..].trim_start().len());
    let column = text[..value_start].chars().count() + 1;
    let shown = if written.is_empty() {
        String::new()
    } else {
        let short: String = written.chars().take(60).collect();
        format!(" (`{short}`)")
    };
    Some((
        format!("`{key}` must be {}; found {found}{shown}", shape.expected),
        line + 1,
        column,
        format!("for example `{}`", shape.example),
    ))
}
