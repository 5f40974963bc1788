//! A JSON Schema for agent frontmatter, so editors with a YAML language server validate agent
//! files while they are typed. It mirrors `RawFrontmatter`; a test loads every key the schema
//! names through the real loader, so the two cannot drift apart unnoticed.

use serde_json::{json, Value};

fn contract_spec() -> Value {
    let field_rule = json!({
        "oneOf": [
            { "enum": ["string", "date", "timestamp", "path"] },
            { "type": "object", "required": ["one_of"], "additionalProperties": false,
              "properties": { "one_of": { "type": "array", "items": { "type": "string" } } } }
        ]
    });
    json!({
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "extends": { "enum": crate::contract::spec::BUILTIN_NAMES, "description": "Built-in contract to start from" },
            "name": { "type": "string" },
            "format": { "enum": ["envelope", "json"] },
            "message_types": { "type": "array", "items": { "type": "string", "pattern": "^[A-Z][A-Z0-9_]*$" } },
            "message_id_prefix": { "type": "string", "pattern": "^[a-z0-9-]+$" },
            "fields": { "type": "object", "additionalProperties": field_rule },
            "evidence": { "enum": ["required", "optional"] },
            "excerpt_max_lines": { "type": "integer", "minimum": 1, "maximum": crate::contract::spec::MAX_EXCERPT_LINES },
            "signal_headings": { "type": "array", "items": { "type": "string" } },
            "required_sections": { "type": "array", "items": { "type": "string" } },
            "named_paths": { "enum": ["unchecked", "exist"] },
            "on_violation": { "enum": ["fail", "mark", "fallback", "drop_items"] },
            "max_repairs": { "type": "integer", "minimum": 0 },
            "schema": {
                "description": "format: json: a JSON Schema 2020-12 (inline) or the path of a .json/.yaml schema file in the project",
                "oneOf": [ { "type": "string" }, { "type": "object" } ]
            },
            "sanitize": {
                "description": "format: json: remove `remove` from the array at pointer `from` when every pointer in `when` holds one of its values",
                "type": "array",
                "items": {
                    "type": "object", "required": ["remove", "from"], "additionalProperties": false,
                    "properties": {
                        "remove": {},
                        "from": { "type": "string", "pattern": "^/" },
                        "when": { "type": "object", "additionalProperties": { "type": "array" } }
                    }
                }
            },
            "fallback": { "description": "format: json: the object handed up under on_violation: fallback", "type": "object" },
            "question": { "description": "format: json: the field holding the one clarifying question", "type": "string" }
        }
    })
}

/// `gate:` (docs/gate.md): a function of its own, as `contract_spec`, so the frontmatter's
/// `json!` stays within the macro's recursion limit.
fn gate_spec() -> Value {
    json!({
        "description": "No retrieval before a validated plan; the plan's sources decide which tools and subagents open (docs/gate.md)",
        "type": "object", "required": ["plan", "sources"], "additionalProperties": false,
        "properties": {
            "plan": {
                "description": "The agent that plans (its JSON answer is the plan), or an inline format: json contract the `plan` tool call must pass",
                "oneOf": [ { "type": "string", "minLength": 1 }, contract_spec() ]
            },
            "sources_field": { "type": "string", "pattern": "^/", "default": "/required_sources" },
            "ask": {
                "description": "Who asks the plan agent for the plan: the model (default), or the runtime, with the task word for word, before the first turn",
                "enum": ["model", "runtime"], "default": "model"
            },
            "sources": {
                "type": "object", "minProperties": 1,
                "additionalProperties": { "type": "array", "items": { "type": "string" } }
            }
        }
    })
}

/// The schema for `agent/*.md` frontmatter.
pub fn agent_schema() -> Value {
    let action = json!({ "enum": ["allow", "ask", "deny"] });
    let permission_rule = json!({
        "oneOf": [ action, { "type": "object", "additionalProperties": action } ]
    });
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://switchboard.dev/schema/agent.json",
        "title": "switchboard agent frontmatter",
        "type": "object",
        "required": ["description"],
        "properties": {
            "name": { "type": "string", "description": "Overrides the name taken from the file path" },
            "description": { "type": "string", "minLength": 1, "description": "What the agent does and when to delegate to it" },
            "mode": { "enum": ["primary", "subagent", "all"], "default": "all" },
            "model": { "type": "string", "description": "provider/model, an alias from switchboard.toml, or `inherit`" },
            "temperature": { "type": "number", "minimum": 0, "maximum": 2 },
            "top_p": { "type": "number", "minimum": 0, "maximum": 1 },
            "max_tokens": { "type": "integer", "minimum": 1, "description": "Longest answer per model turn; over [providers.NAME] max_tokens" },
            "tools": {
                "description": "opencode map of tool (or glob) to bool, or Claude Code's list",
                "oneOf": [
                    { "type": "object", "additionalProperties": { "type": "boolean" } },
                    { "type": "string" },
                    { "type": "array", "items": { "type": "string" } }
                ]
            },
            "permission": { "type": "object", "additionalProperties": permission_rule },
            "steps": { "type": "integer", "minimum": 1, "description": "Model turns per hop" },
            "maxSteps": { "type": "integer", "minimum": 1, "description": "Alias of steps" },
            "maxTurns": { "type": "integer", "minimum": 1, "description": "Alias of steps" },
            "disable": { "type": "boolean" },
            "hidden": { "type": "boolean" },
            "color": { "type": "string" },
            "contract": {
                "description": "The envelope every answer must honour: a built-in name or an inline contract",
                "oneOf": [ { "enum": crate::contract::spec::BUILTIN_NAMES }, contract_spec() ]
            },
            "validator": { "type": "string", "minLength": 1,
                "description": "A subagent that reviews each checked answer: accept, revise (private feedback to this agent, bounded by its repair turns) or reject (BLOCKED)" },
            "workflow": { "type": "string", "description": "The checkpoint workflow (workflow/<name>.yaml) the agent reports its steps to with the `step` tool" },
            "deliver": { "type": "object", "additionalProperties": false, "required": ["write"],
                "description": "What the agent owes besides its answer: a file matching `write` (a glob relative to the project root) with at least `evidence` verified Evidence items; checked at its final answer (repair turns, then PARTIAL)",
                "properties": {
                    "write": { "type": "string", "minLength": 1 },
                    "evidence": { "type": "integer", "minimum": 0 },
                    "from_answer": { "type": "boolean", "default": false,
                        "description": "The final answer may be the document itself: the runtime saves it under `write` (its `*` replaced by the date and a slug of the title)" }
                } },
            "budget": {
                "oneOf": [
                    { "type": "integer", "minimum": 1 },
                    { "type": "object", "additionalProperties": false, "properties": {
                        "tokens": { "type": "integer", "minimum": 1 },
                        "wall_seconds": { "type": "integer", "minimum": 1 },
                        "turns": { "type": "integer", "minimum": 1 },
                        "threshold": { "type": "integer", "minimum": 1, "maximum": 100,
                            "description": "Percent of each limit at which a checkpoint is asked for and the hop ends PARTIAL (default 60)" }
                    } }
                ]
            },
            "gate": gate_spec(),
            "read_first": read_first_spec(),
            "search_first": { "type": "string", "minLength": 1,
                "description": "A project folder: before the first turn the runtime greps it (with `grep`) for up to 3 words of the task and hands the matches over with the task" },
            "delegate_first": {
                "oneOf": [
                    { "type": "string", "minLength": 1 },
                    { "type": "array", "items": { "type": "string", "minLength": 1 }, "minItems": 1, "uniqueItems": true }
                ],
                "description": "A subagent, or a list of them: before the first turn the runtime delegates the task to each word for word (`task` calls, in one turn; under a `gate:`, only those the plan opens), and the first turn reads their answers" },
            "analyze_found": { "type": "boolean", "default": false,
                "description": "With `delegate_first:` and `gate:`: once the first delegations have answered, the runtime also gives each path they found to its source's analyzer (the delegation the plan names next, in one turn), and the first turn reads those answers too" },
            "evidence_goal": { "type": "integer", "minimum": 1,
                "description": "Verified Evidence items a checked answer should hold: an accepted answer with fewer (but at least one) is asked once for more, with uncited lines of the file it cites; the richer answer goes up" },
            "tool_choice": { "enum": ["auto", "required"], "default": "auto",
                "description": "`required`: each turn must be a tool call until the agent has made one (then `auto`)" }
        }
    })
}

fn read_first_spec() -> Value {
    json!({ "enum": ["none", "named"], "default": "none",
        "description": "`named`: before the first turn the runtime reads (with `read`) up to 2 existing project files the task names" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_names_exactly_the_known_keys() {
        let schema = agent_schema();
        let mut keys: Vec<&str> = schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        let mut known = super::super::definition::KNOWN_KEYS.to_vec();
        known.sort_unstable();
        assert_eq!(keys, known);
    }

    #[test]
    fn the_shipped_analyst_frontmatter_fits_the_schema() {
        let text = include_str!("../../agent/analyst.md");
        let yaml = text
            .strip_prefix("---\n")
            .and_then(|t| t.split_once("\n---\n"))
            .unwrap()
            .0;
        let fm: Value = serde_saphyr::from_str(yaml).unwrap();
        let validator = jsonschema::validator_for(&agent_schema()).unwrap();
        let errors: Vec<String> = validator.iter_errors(&fm).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:?}");
    }
}
