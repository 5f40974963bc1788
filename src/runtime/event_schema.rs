//! The JSON Schema of every event-log line (`switchboard schema events`), derived from
//! [`Event`] and [`super::EventKind`] themselves, so the published schema cannot drift from what
//! the runtime writes. It describes lines as they are written (serialization: a field left out
//! when empty is optional); the integration tests validate real logs of scripted sessions
//! against it.

use serde_json::Value;

use super::events::Event;

/// The schema of one line of `events.jsonl`, as a JSON value (Draft 2020-12).
pub fn events_schema() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator();
    let schema = generator.into_root_schema_for::<Event>();
    let mut value = serde_json::to_value(schema).unwrap_or(Value::Null);
    if let Some(map) = value.as_object_mut() {
        map.insert(
            "description".into(),
            Value::String(
                "One line of a switchboard session log (.switchboard/sessions/<id>/events.jsonl): \
                 the ids every event carries, and `type` with that event's fields."
                    .into(),
            ),
        );
    }
    value
}

/// Every event `type` the schema knows, in declaration order.
pub fn event_types(schema: &Value) -> Vec<String> {
    let mut out = Vec::new();
    collect_types(schema, &mut out);
    out
}

fn collect_types(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            if let Some(Value::Object(props)) = map.get("properties") {
                if let Some(ty) = props.get("type") {
                    let names = ty.get("const").into_iter().chain(
                        ty.get("enum")
                            .and_then(Value::as_array)
                            .into_iter()
                            .flatten(),
                    );
                    for n in names.filter_map(Value::as_str) {
                        if !out.iter().any(|o| o == n) {
                            out.push(n.to_string());
                        }
                    }
                }
            }
            for x in map.values() {
                collect_types(x, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| collect_types(x, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_compiles_and_names_every_event_type() {
        let schema = events_schema();
        jsonschema::draft202012::new(&schema).expect("a valid Draft 2020-12 schema");
        let types = event_types(&schema);
        for t in [
            "session.started",
            "hop.started",
            "hop.completed",
            "hop.failed",
            "hop.blocked",
            "hop.checkpoint",
            "contract.outcome",
            "web.fetch",
            "mcp.call",
            "session.completed",
        ] {
            assert!(types.iter().any(|x| x == t), "{t} missing from {types:?}");
        }
    }

    #[test]
    fn a_line_with_a_wrong_field_type_is_rejected() {
        let schema = events_schema();
        let v = jsonschema::draft202012::new(&schema).unwrap();
        let ok = serde_json::json!({"timestamp": "t", "session_id": "s", "correlation_id": "c",
            "hop_id": null, "parent_hop_id": null, "agent": null,
            "type": "hop.repair", "repair": 1, "violations": 2});
        assert!(
            v.is_valid(&ok),
            "{:?}",
            v.iter_errors(&ok)
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
        );
        let mut bad = ok.clone();
        bad["repair"] = serde_json::json!("one");
        assert!(!v.is_valid(&bad));
        let mut unknown = ok;
        unknown["type"] = serde_json::json!("hop.exploded");
        assert!(!v.is_valid(&unknown));
    }
}
