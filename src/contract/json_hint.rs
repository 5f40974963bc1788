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
///
/// The other rules of the same `allOf` on the same field whose `if` holds for `value` are said
/// too, as "; it must also …": told only that `/required_sources` must contain `code`, the 1.5B
/// analyst sent `["code"]` and broke the rule that wants `doc` or `policy`, then sent
/// `["doc", "policy"]` and broke the first again, until its repairs ran out.
pub fn hint(schema: &Value, value: &Value, schema_path: &str, field: &str) -> Option<String> {
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
    let also: String = siblings(schema, value, schema_path)
        .into_iter()
        .map(|(asks, because)| format!("; it must also {asks}{because}"))
        .collect();
    Some(format!("{field} must {asks}{because}{also}"))
}

/// The list nearest to the one at `pointer` (a top-level property whose items are one of an
/// `enum`) that makes the whole `value` pass `valid`: one item added, else one taken out, else
/// one swapped for another, else two added; its items in the enum's order, the order the local
/// grammar writes them in. `None` when the field is no such list or no near list passes.
///
/// Why: told the rules in words, the 1.5B analyst kept the one it was told last and dropped what
/// it had right (`["doc"]` became `["code", "policy"]`); a value it can copy keeps both.
pub fn nearest_list(
    schema: &Value,
    value: &Value,
    pointer: &str,
    valid: impl Fn(&Value) -> bool,
) -> Option<Value> {
    let name = pointer.strip_prefix('/').filter(|n| !n.contains('/'))?;
    let choices = schema
        .pointer(&format!("/properties/{name}/items/enum"))?
        .as_array()?;
    let now: Vec<&Value> = value.get(name)?.as_array()?.iter().collect();
    let rank = |v: &Value| choices.iter().position(|c| c == v).unwrap_or(usize::MAX);
    let absent: Vec<&Value> = choices.iter().filter(|c| !now.contains(c)).collect();
    let mut candidates: Vec<Vec<&Value>> = Vec::new();
    candidates.extend(absent.iter().map(|a| [now.as_slice(), &[*a]].concat()));
    candidates.extend((0..now.len()).map(|i| {
        let mut fewer = now.clone();
        fewer.remove(i);
        fewer
    }));
    for i in 0..now.len() {
        for a in &absent {
            let mut swapped = now.clone();
            swapped[i] = a;
            candidates.push(swapped);
        }
    }
    for (i, a) in absent.iter().enumerate() {
        for b in &absent[i + 1..] {
            candidates.push([now.as_slice(), &[*a, *b]].concat());
        }
    }
    candidates.into_iter().find_map(|mut list| {
        list.sort_by_key(|v| rank(v));
        let list = Value::Array(list.into_iter().cloned().collect());
        let mut whole = value.clone();
        *whole.get_mut(name)? = list.clone();
        valid(&whole).then_some(list)
    })
}

/// The other `then` rules of the `allOf` that `schema_path` runs through that constrain the
/// same property and whose `if` holds for `value`, each as (what it asks, ", because …").
fn siblings(schema: &Value, value: &Value, schema_path: &str) -> Vec<(String, String)> {
    let Some(at) = schema_path.find("/then/") else {
        return Vec::new();
    };
    let (rule, rest) = (&schema_path[..at], &schema_path[at + "/then".len()..]);
    // `rest` is `/properties/NAME/KEYWORD`: the property's subschema is all but the keyword.
    let Some((property, _keyword)) = rest.rsplit_once('/') else {
        return Vec::new();
    };
    let Some((list, index)) = rule.rsplit_once('/') else {
        return Vec::new();
    };
    let Some(rules) = schema.pointer(list).and_then(Value::as_array) else {
        return Vec::new();
    };
    rules
        .iter()
        .enumerate()
        .filter(|(i, _)| index.parse::<usize>() != Ok(*i))
        .filter_map(|(_, other)| {
            let asks = describe(other.get("then")?.pointer(property)?)?;
            let condition = other.get("if");
            if let Some(condition) = condition {
                let holds = jsonschema::validator_for(condition).ok()?.is_valid(value);
                if !holds {
                    return None;
                }
            }
            let because = condition
                .and_then(self::condition)
                .map(|c| format!(", because {c}"))
                .unwrap_or_default();
            Some((asks, because))
        })
        .collect()
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
            "anyOf" | "oneOf" => {
                let each: Option<Vec<String>> = value.as_array()?.iter().map(describe).collect();
                each?.join(", or ")
            }
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
    use super::{hint, nearest_list};
    use serde_json::{json, Value};

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
                &json!({"request_type": "DESIGN_ARCH"}),
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
                &json!({"request_type": "STATUS_METRIC"}),
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
                &json!({"track": "FAST"}),
                "/allOf/2/then/properties/missing_info_questions/maxItems",
                "`/q`"
            )
            .as_deref(),
            Some("`/q` must have at most 0 item(s), because `/track` is `FAST`")
        );
        // A shape it cannot say in words gives no hint.
        let pattern = json!({"properties": {"intent": {"pattern": "^[a-z]+$"}}});
        assert_eq!(
            hint(
                &pattern,
                &json!({}),
                "/properties/intent/pattern",
                "`/intent`"
            ),
            None
        );
        assert_eq!(
            hint(&schema, &json!({}), "/allOf/9/then/anyOf", field),
            None
        );
    }

    #[test]
    fn the_nearest_list_that_passes_keeps_what_was_right() {
        let schema = json!({
        "properties": {"required_sources": {"type": "array", "uniqueItems": true,
            "items": {"enum": ["db", "doc", "code", "policy"]}}},
        "allOf": [
            {"if": {"properties": {"request_type": {"const": "DESIGN_ARCH"}}},
             "then": {"properties": {"required_sources": {
                 "contains": {"const": "code"},
                 "anyOf": [{"contains": {"const": "doc"}}, {"contains": {"const": "policy"}}]}}}},
            {"if": {"properties": {"request_type": {"const": "STATUS_METRIC"}}},
             "then": {"properties": {"required_sources": {
                 "contains": {"const": "db"}, "not": {"contains": {"const": "doc"}}}}}}
        ]});
        let validator = jsonschema::validator_for(&schema).unwrap();
        let valid = |v: &Value| validator.is_valid(v);
        let near = |value: Value| nearest_list(&schema, &value, "/required_sources", valid);
        // One added, in the enum's order.
        assert_eq!(
            near(json!({"request_type": "DESIGN_ARCH", "required_sources": ["doc"]})),
            Some(json!(["doc", "code"]))
        );
        // One taken out.
        assert_eq!(
            near(json!({"request_type": "STATUS_METRIC", "required_sources": ["db", "doc"]})),
            Some(json!(["db"]))
        );
        // One swapped.
        assert_eq!(
            near(json!({"request_type": "STATUS_METRIC", "required_sources": ["doc"]})),
            Some(json!(["db"]))
        );
        // Two added.
        assert_eq!(
            near(json!({"request_type": "DESIGN_ARCH", "required_sources": []})),
            Some(json!(["doc", "code"]))
        );
        // Not a list of enum items, or not a top-level field: nothing to offer.
        assert_eq!(nearest_list(&schema, &json!({"x": [1]}), "/x", valid), None);
        assert_eq!(
            nearest_list(&schema, &json!({}), "/required_sources/0", valid),
            None
        );
    }

    #[test]
    fn the_other_rules_on_the_field_that_apply_are_said_too() {
        // Two rules on one field for one request type: told one, the 1.5B analyst broke the
        // other, back and forth, until its repairs ran out.
        let schema = json!({"allOf": [
            {"if": {"properties": {"request_type": {"enum": ["DESIGN_ARCH", "HOWTO_POLICY"]}}},
             "then": {"properties": {"required_sources": {"anyOf": [{"contains": {"const": "doc"}}, {"contains": {"const": "policy"}}]}}}},
            {"if": {"properties": {"request_type": {"const": "DESIGN_ARCH"}}},
             "then": {"properties": {"required_sources": {"contains": {"const": "code"}}}}},
            {"if": {"properties": {"track": {"const": "FAST"}}},
             "then": {"properties": {"required_sources": {"maxItems": 1}}}}
        ]});
        let field = "`/required_sources`";
        let design = json!({"request_type": "DESIGN_ARCH", "track": "QUALITY"});
        assert_eq!(
            hint(
                &schema,
                &design,
                "/allOf/1/then/properties/required_sources/contains",
                field
            )
            .as_deref(),
            Some(
                "`/required_sources` must contain `code`, because `/request_type` is \
                 `DESIGN_ARCH`; it must also contain `doc`, or contain `policy`, because \
                 `/request_type` is one of `DESIGN_ARCH`, `HOWTO_POLICY`"
            )
        );
        // A rule whose `if` does not hold for the value is not said.
        let howto = json!({"request_type": "HOWTO_POLICY", "track": "FAST"});
        assert_eq!(
            hint(
                &schema,
                &howto,
                "/allOf/0/then/properties/required_sources/anyOf",
                field
            )
            .as_deref(),
            Some(
                "`/required_sources` must contain `doc`, or contain `policy`, because \
                 `/request_type` is one of `DESIGN_ARCH`, `HOWTO_POLICY`; it must also have \
                 at most 1 item(s), because `/track` is `FAST`"
            )
        );
    }
}
