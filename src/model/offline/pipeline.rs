//! The pipeline-worker role: a task the runtime built with [`PIPELINE_MARK`] lists the event
//! types the worker may emit, each with its JSON Schema. Offline, the worker cannot judge
//! anything, so it does the one deterministic thing the contract allows: for each allowed type it
//! emits one event per document its input names (or one for the whole input), filling the
//! declared shape from that input: strings get the document (or the input's first line), enums
//! their first value, numbers their minimum (or 1), arrays one item. The output always matches
//! the schema's shape, so the pipeline's fan-out and validation can run offline; it carries no
//! insight.

use serde_json::{json, Map, Value};

use super::validator::NAMED;
use super::History;
use crate::model::PIPELINE_MARK;

/// Whether the task is a pipeline worker's.
pub fn applies(history: &History) -> bool {
    history.task.contains(PIPELINE_MARK)
}

/// The worker's answer: `{"events": [...]}`.
pub fn answer(history: &History) -> String {
    let (input, rest) = history
        .task
        .split_once(PIPELINE_MARK)
        .unwrap_or((history.task, "{}"));
    let allowed_text = rest
        .split_once("\nAnswer with only")
        .map_or(rest, |(a, _)| a);
    let allowed: Map<String, Value> = serde_json::from_str(allowed_text).unwrap_or_default();
    let mut seeds: Vec<String> = Vec::new();
    for m in NAMED.find_iter(input) {
        if !seeds.iter().any(|s| s == m.as_str()) {
            seeds.push(m.as_str().to_string());
        }
    }
    if seeds.is_empty() {
        let first = input
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with("Event `"))
            .unwrap_or("the input");
        seeds.push(first.chars().take(200).collect());
    }
    let events: Vec<Value> = allowed
        .iter()
        .flat_map(|(ty, schema)| {
            seeds
                .iter()
                .map(move |seed| json!({"type": ty, "data": fill(schema, seed)}))
        })
        .collect();
    json!({ "events": events }).to_string()
}

/// A value of `schema`'s shape, seeded with `seed`.
fn fill(schema: &Value, seed: &str) -> Value {
    if let Some(c) = schema.get("const") {
        return c.clone();
    }
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
    {
        return first.clone();
    }
    match schema
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("string")
    {
        "object" => {
            let props = schema.get("properties").and_then(Value::as_object);
            let mut out = Map::new();
            for (k, s) in props.into_iter().flatten() {
                out.insert(k.clone(), fill(s, seed));
            }
            Value::Object(out)
        }
        "array" => {
            let items = schema.get("items").cloned().unwrap_or(json!({}));
            json!([fill(&items, seed)])
        }
        "integer" | "number" => schema.get("minimum").cloned().unwrap_or(json!(1)),
        "boolean" => json!(true),
        "null" => Value::Null,
        _ => json!(seed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Message;

    #[test]
    fn one_event_per_named_document_in_the_declared_shape() {
        let allowed = json!({"source.discovered": {"type": "object", "required": ["path"],
            "properties": {"path": {"type": "string"}, "kind": {"enum": ["doc", "code"]},
                           "score": {"type": "integer", "minimum": 0}}}});
        let task = format!(
            "Plan from thoughts/a.md and thoughts/b.md{PIPELINE_MARK}{allowed}\nAnswer with only one JSON object"
        );
        let messages = vec![Message::user(task)];
        let h = History::new(&messages);
        assert!(applies(&h));
        let v: Value = serde_json::from_str(&answer(&h)).unwrap();
        let events = v["events"].as_array().unwrap();
        assert_eq!(events.len(), 2);
        assert_eq!(events[0]["type"], "source.discovered");
        assert_eq!(
            events[0]["data"],
            json!({"path": "thoughts/a.md", "kind": "doc", "score": 0})
        );
        assert_eq!(events[1]["data"]["path"], "thoughts/b.md");
    }
}
