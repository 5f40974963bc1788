//! What a JSON schema rule asks, in words a model can act on: the help of a `json/schema` or
//! `json/conflict` problem. The validator's own message says what failed ("… is not valid under
//! any of the schemas listed in the 'anyOf' keyword") and the schema path says where; neither
//! says which values would pass. Qwen2.5-Coder-1.5B as the analyst, told to "change field
//! `/required_sources` so it satisfies the schema rule at
//! `/allOf/1/then/properties/required_sources/anyOf`", sent `["code"]` back three times; the
//! rule wanted `doc` or `policy`.
//!
//! Only the common shapes are spelled out (`const`, `enum`, `contains`, `not`, `anyOf`/`oneOf`
//! of those, `maxItems`/`minItems`, and an `if` over `const`/`enum` properties as the reason);
//! any other rule gives no hint and the caller keeps its generic help.

use serde_json::Value;

/// The hint for the rule at `schema_path` (a JSON pointer into `schema`, as the validator
/// reports it) failing on `field`: "`/required_sources` must contain `doc`, or contain
/// `policy`, because `/request_type` is one of `DESIGN_ARCH`, …". `None` when the rule's shape
/// is not one of those above.
pub fn hint(schema: &Value, schema_path: &str, field: &str) -> Option<String> {
    let (parent, keyword) = schema_path.rsplit_once('/')?;
    let at = schema.pointer(parent)?;
    let asks = match keyword {
        "anyOf" | "oneOf" => {
            let alternatives = at.get(keyword)?.as_array()?;
            let each: Option<Vec<String>> = alternatives.iter().map(describe).collect();
            each?.join(", or ")
        }
        "contains" | "not" | "const" | "enum" | "maxItems" | "minItems" => {
            let mut one = serde_json::Map::new();
            one.insert(keyword.to_string(), at.get(keyword)?.clone());
            describe(&Value::Object(one))?
        }
        _ => return None,
    };
    let because = schema_path
        .find("/then/")
        .and_then(|i| schema.pointer(&format!("{}/if", &schema_path[..i])))
        .and_then(condition)
        .map(|c| format!(", because {c}"))
        .unwrap_or_default();
    Some(format!("{field} must {asks}{because}"))
}

/// What one subschema asks, as a verb phrase: "contain `doc`", "be one of `a`, `b`".
fn describe(schema: &Value) -> Option<String> {
    let obj = schema.as_object()?;
    let mut parts = Vec::new();
    for (key, value) in obj {
        parts.push(match key.as_str() {
            "const" => format!("be {}", quoted(value)),
            "enum" => format!("be one of {}", listed(value)?),
            "contains" => match (value.get("const"), value.get("enum")) {
                (Some(c), _) => format!("contain {}", quoted(c)),
                (None, Some(e)) => format!("contain one of {}", listed(e)?),
                _ => return None,
            },
            "not" => format!("not {}", describe(value)?),
            "maxItems" => format!("have at most {} item(s)", value.as_u64()?),
            "minItems" => format!("have at least {} item(s)", value.as_u64()?),
            _ => return None,
        });
    }
    (!parts.is_empty()).then(|| parts.join(" and "))
}

/// An `if` whose properties each must be a `const` or one of an `enum`: "`/track` is `FAST`".
fn condition(schema: &Value) -> Option<String> {
    let props = schema.get("properties")?.as_object()?;
    let each: Option<Vec<String>> = props
        .iter()
        .map(|(name, rule)| match (rule.get("const"), rule.get("enum")) {
            (Some(c), _) => Some(format!("`/{name}` is {}", quoted(c))),
            (None, Some(e)) => Some(format!("`/{name}` is one of {}", listed(e)?)),
            _ => None,
        })
        .collect();
    let each = each?;
    (!each.is_empty()).then(|| each.join(" and "))
}

fn quoted(value: &Value) -> String {
    match value {
        Value::String(s) => format!("`{s}`"),
        other => format!("`{other}`"),
    }
}

fn listed(values: &Value) -> Option<String> {
    let items: Vec<String> = values.as_array()?.iter().map(quoted).collect();
    Some(items.join(", "))
}

#[cfg(test)]
mod tests {
    use super::hint;
    use serde_json::json;

    #[test]
    fn a_rule_says_which_values_pass_and_why() {
        let schema = json!({"allOf": [
            {"if": {"properties": {"request_type": {"enum": ["STATUS_METRIC"]}}},
             "then": {"properties": {"required_sources": {"contains": {"const": "db"}, "not": {"contains": {"const": "doc"}}}}}},
            {"if": {"properties": {"request_type": {"enum": ["DESIGN_ARCH", "HOWTO_POLICY"]}}},
             "then": {"properties": {"required_sources": {"anyOf": [{"contains": {"const": "doc"}}, {"contains": {"const": "policy"}}]}}}},
            {"if": {"properties": {"track": {"const": "FAST"}}},
             "then": {"properties": {"missing_info_questions": {"maxItems": 0}}}}
        ]});
        let field = "`/required_sources`";
        assert_eq!(
            hint(
                &schema,
                "/allOf/1/then/properties/required_sources/anyOf",
                field
            )
            .as_deref(),
            Some(
                "`/required_sources` must contain `doc`, or contain `policy`, because \
                  `/request_type` is one of `DESIGN_ARCH`, `HOWTO_POLICY`"
            )
        );
        assert_eq!(
            hint(
                &schema,
                "/allOf/0/then/properties/required_sources/not",
                field
            )
            .as_deref(),
            Some(
                "`/required_sources` must not contain `doc`, because `/request_type` is one \
                  of `STATUS_METRIC`"
            )
        );
        assert_eq!(
            hint(
                &schema,
                "/allOf/2/then/properties/missing_info_questions/maxItems",
                "`/q`"
            )
            .as_deref(),
            Some("`/q` must have at most 0 item(s), because `/track` is `FAST`")
        );
        // A shape it cannot say in words gives no hint.
        let pattern = json!({"properties": {"intent": {"pattern": "^[a-z]+$"}}});
        assert_eq!(
            hint(&pattern, "/properties/intent/pattern", "`/intent`"),
            None
        );
        assert_eq!(hint(&schema, "/allOf/9/then/anyOf", field), None);
    }
}
