//! Rules for `format: json` contracts, which need the project (schemas and their `$ref`s are
//! files in it): the schema must compile, the declared fallback must itself pass the contract,
//! and the prompt should name every field the schema requires. Findings point at the key in
//! the agent's frontmatter.

use crate::agent::{Agent, AgentSet};
use crate::contract::{check_json_detailed, ContractFormat};
use crate::problem::{Problem, Severity};
use crate::project::Project;

pub fn check(project: &Project, set: &AgentSet, out: &mut Vec<Problem>) {
    for agent in set.iter() {
        let Some(contract) = &agent.contract else {
            continue;
        };
        if contract.format != ContractFormat::Json {
            continue;
        }
        let Some(json) = &contract.json else {
            continue;
        };
        let text = super::agent_text(project, agent);
        let at = |key: &str, d: Problem| super::place(&text, d, key_position(&text, key));
        if let Err(e) = json.validator(project) {
            {
                out.push(at(
                    "schema",
                    Problem::new(
                        Severity::Error,
                        "contract/json-schema",
                        &agent.file,
                        format!("contract `{}`: {e}", contract.name),
                    )
                    .with_help(
                        "write a JSON Schema 2020-12 object; `$ref` may only name files inside \
                         the project",
                    ),
                ));
                continue;
            }
        }
        if json.fallback.is_some() {
            let vars = serde_json::json!({"agent": agent.name, "task": ""});
            let problem = match json.render_fallback(&vars) {
                Err(e) => Some(e.to_string()),
                Ok(None) => None,
                Ok(Some(v)) => {
                    let text = serde_json::to_string_pretty(&v).unwrap_or_default();
                    let check = check_json_detailed(&text, contract, project);
                    let errors: Vec<String> =
                        check.report.errors().map(|v| v.message.clone()).collect();
                    (!errors.is_empty()).then(|| errors.join("; "))
                }
            };
            if let Some(problem) = problem {
                out.push(at(
                    "fallback",
                    Problem::new(
                        Severity::Error,
                        "contract/json-fallback",
                        &agent.file,
                        format!(
                            "the fallback of contract `{}` does not pass the contract itself: \
                             {problem}",
                            contract.name
                        ),
                    )
                    .with_help("make the fallback an object the schema accepts"),
                ));
            }
        }
        prompt_names_fields(agent, out);
    }
}

/// `contract/template-missing` for JSON: the prompt should name each required field.
fn prompt_names_fields(agent: &Agent, out: &mut Vec<Problem>) {
    let Some(json) = agent.contract.as_ref().and_then(|c| c.json.as_ref()) else {
        return;
    };
    let crate::contract::SchemaSource::Inline(schema) = &json.schema else {
        return;
    };
    let missing: Vec<String> = schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f.as_str())
        .filter(|f| !agent.body.contains(f))
        .map(|f| format!("`{f}`"))
        .collect();
    if !missing.is_empty() {
        out.push(
            Problem::new(
                Severity::Warning,
                "contract/template-missing",
                &agent.file,
                format!(
                    "the JSON contract requires {}, but the prompt never names {}",
                    missing.join(", "),
                    if missing.len() == 1 { "it" } else { "them" }
                ),
            )
            .with_help("describe every required field in the prompt so the model can fill it in"),
        );
    }
}

/// 1-based line and column of the first `key:` in the frontmatter, or (0, 0).
fn key_position(text: &str, key: &str) -> (usize, usize) {
    let mut lines = text.lines().enumerate();
    if lines.next().map(|(_, l)| l.trim_end()) != Some("---") {
        return (0, 0);
    }
    for (i, line) in lines {
        if line.trim_end() == "---" {
            break;
        }
        let trimmed = line.trim_start();
        if trimmed.starts_with(&format!("{key}:")) {
            return (i + 1, line.len() - trimmed.len() + 1);
        }
    }
    (0, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_found_in_the_frontmatter_only() {
        let text = "---\nname: a\ncontract:\n  schema: x.json\n---\nschema: not this\n";
        assert_eq!(key_position(text, "schema"), (4, 3));
        assert_eq!(key_position(text, "fallback"), (0, 0));
    }
}
