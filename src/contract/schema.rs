//! The data half of a `format: json` contract: the JSON Schema (inline or a file in the
//! project), compiled once and shared by every clone of the contract; the declared `sanitize`
//! rules that fix an answer instead of rejecting it; the `fallback` object; the question field.
//!
//! Schemas are JSON Schema 2020-12. A `$ref` may only reach files inside the project root
//! (resolved through [`Project`], so `..` and symlinks cannot lead out); anything remote is
//! refused, because a contract check must never touch the network.

use crate::project::Project;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

/// Where a contract's schema comes from: a path (a string) or the schema itself (a mapping).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum SchemaSource {
    /// A `.json`, `.yaml` or `.yml` file named relative to the project root.
    Path(String),
    /// The schema written inline in the frontmatter.
    Inline(Value),
}

/// A rule that repairs an answer rather than rejecting it: remove `remove` from the array at
/// the JSON pointer `from`, when every pointer of `when` holds one of its listed values.
///
/// ```yaml
/// sanitize:
///   - remove: doc
///     from: /required_sources
///     when: {/request_type: [STATUS_METRIC, STATUS_SUMMARY, STATUS_LIST]}
/// ```
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SanitizeRule {
    pub remove: Value,
    pub from: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub when: BTreeMap<String, Vec<Value>>,
}

impl SanitizeRule {
    /// Applies the rule to `answer`; returns how many items it removed.
    pub fn apply(&self, answer: &mut Value) -> usize {
        let applies = self.when.iter().all(|(pointer, values)| {
            answer
                .pointer(pointer)
                .is_some_and(|v| values.iter().any(|want| want == v))
        });
        if !applies {
            return 0;
        }
        match answer.pointer_mut(&self.from) {
            Some(Value::Array(items)) => {
                let before = items.len();
                items.retain(|item| item != &self.remove);
                before - items.len()
            }
            _ => 0,
        }
    }

    /// A sentence for the warning that says what the rule did.
    pub fn describe(&self) -> String {
        let mut s = format!("removed {} from {}", self.remove, self.from);
        if !self.when.is_empty() {
            let conds: Vec<String> = self
                .when
                .iter()
                .map(|(p, vs)| {
                    let vs: Vec<String> = vs.iter().map(Value::to_string).collect();
                    format!("{p} is {}", vs.join(" or "))
                })
                .collect();
            s.push_str(&format!(" because {}", conds.join(" and ")));
        }
        s
    }
}

/// Why a schema could not be compiled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    #[error("schema file `{path}`: {reason}")]
    File { path: String, reason: String },
    #[error("invalid JSON Schema: {0}")]
    Invalid(String),
    #[error("fallback template `{template}`: {reason}")]
    Fallback { template: String, reason: String },
}

/// A compiled validator, shared by every clone of the contract that owns it.
pub struct Compiled(pub jsonschema::Validator);

impl std::fmt::Debug for Compiled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Compiled(..)")
    }
}

type CompileCell = OnceLock<Result<Arc<Compiled>, SchemaError>>;

/// The settled JSON part of a contract.
#[derive(Debug, Clone, Serialize)]
pub struct JsonContract {
    pub schema: SchemaSource,
    pub sanitize: Vec<SanitizeRule>,
    /// A template object: its strings are rendered with minijinja before use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback: Option<Value>,
    /// The top-level field that holds the agent's clarifying question (at most one item).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    /// Compiled on first use, once per contract (clones share it).
    #[serde(skip)]
    compiled: Arc<CompileCell>,
}

impl PartialEq for JsonContract {
    fn eq(&self, other: &Self) -> bool {
        self.schema == other.schema
            && self.sanitize == other.sanitize
            && self.fallback == other.fallback
            && self.question == other.question
    }
}

impl JsonContract {
    pub fn new(
        schema: SchemaSource,
        sanitize: Vec<SanitizeRule>,
        fallback: Option<Value>,
        question: Option<String>,
    ) -> Self {
        JsonContract {
            schema,
            sanitize,
            fallback,
            question,
            compiled: Arc::default(),
        }
    }

    /// The validator, compiled the first time it is asked for.
    pub fn validator(&self, project: &Project) -> Result<Arc<Compiled>, SchemaError> {
        self.compiled
            .get_or_init(|| compile(&self.schema, project).map(|v| Arc::new(Compiled(v))))
            .clone()
    }

    /// The fallback with its strings rendered against `vars` (e.g. `task`, `agent`).
    pub fn render_fallback(&self, vars: &Value) -> Result<Option<Value>, SchemaError> {
        let Some(template) = &self.fallback else {
            return Ok(None);
        };
        let env = minijinja::Environment::new();
        render_strings(template, &env, vars).map(Some)
    }
}

fn render_strings(
    v: &Value,
    env: &minijinja::Environment,
    vars: &Value,
) -> Result<Value, SchemaError> {
    Ok(match v {
        Value::String(s) if s.contains("{{") || s.contains("{%") => Value::String(
            env.render_str(s, minijinja::value::Serde(vars))
                .map_err(|e| SchemaError::Fallback {
                    template: s.clone(),
                    reason: e.to_string(),
                })?,
        ),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|i| render_strings(i, env, vars))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, i)| Ok((k.clone(), render_strings(i, env, vars)?)))
                .collect::<Result<_, SchemaError>>()?,
        ),
        other => other.clone(),
    })
}

/// The schema a `schema:` path names, read from the project (JSON or YAML by extension), for
/// code that needs the schema itself rather than a validator (the local provider's grammar).
pub fn read_schema(project: &Project, name: &str) -> Result<Value, SchemaError> {
    read_schema_file(project, name).map(|(v, _)| v)
}

/// Reads a schema file (JSON or YAML by extension) inside the project.
fn read_schema_file(
    project: &Project,
    name: &str,
) -> Result<(Value, std::path::PathBuf), SchemaError> {
    let err = |reason: String| SchemaError::File {
        path: name.to_string(),
        reason,
    };
    let path = project.resolve(name).map_err(|e| err(e.to_string()))?;
    let text = std::fs::read_to_string(&path).map_err(|e| err(e.to_string()))?;
    let value = if name.ends_with(".yaml") || name.ends_with(".yml") {
        crate::yaml::from_str::<Value>(&text).map_err(|e| err(e.to_string()))?
    } else if name.ends_with(".json") {
        serde_json::from_str::<Value>(&text).map_err(|e| err(e.to_string()))?
    } else {
        return Err(err("a schema file must end in .json, .yaml or .yml".into()));
    };
    Ok((value, path))
}

/// Compiles `source` as a Draft 2020-12 schema; `$ref`s load only files inside `project`.
pub fn compile(
    source: &SchemaSource,
    project: &Project,
) -> Result<jsonschema::Validator, SchemaError> {
    let (schema, base) = match source {
        SchemaSource::Inline(v) => (v.clone(), project.root().join("agent").join("inline.json")),
        SchemaSource::Path(name) => read_schema_file(project, name)?,
    };
    let base_uri = format!("file://{}", base.to_string_lossy());
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .with_base_uri(base_uri)
        .with_retriever(ProjectRetriever {
            project: project.clone(),
        })
        .build(&schema)
        .map_err(|e| SchemaError::Invalid(e.to_string()))
}

/// Loads `$ref` targets from files inside the project root, and nothing else.
struct ProjectRetriever {
    project: Project,
}

impl jsonschema::Retrieve for ProjectRetriever {
    fn retrieve(
        &self,
        uri: &jsonschema::Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        let text = uri.as_str();
        let Some(path) = text.strip_prefix("file://") else {
            return Err(format!(
                "remote $ref `{text}` refused: schemas may only reference files inside the project"
            )
            .into());
        };
        let path = path.split('#').next().unwrap_or(path);
        if path.contains('%') {
            return Err(format!("$ref `{text}`: percent-encoded paths are not supported").into());
        }
        let rel = std::path::Path::new(path)
            .strip_prefix(self.project.root())
            .map_err(|_| format!("$ref `{text}` points outside the project root"))?;
        let name = rel.to_string_lossy().to_string();
        read_schema_file(&self.project, &name)
            .map(|(v, _)| v)
            .map_err(|e| e.to_string().into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn project() -> (tempfile::TempDir, Project) {
        let dir = tempfile::tempdir().unwrap();
        let project = Project::open(dir.path()).unwrap();
        (dir, project)
    }

    #[test]
    fn sanitize_removes_only_when_the_condition_holds() {
        let rule: SanitizeRule = serde_saphyr::from_str(
            "remove: doc\nfrom: /required_sources\nwhen: {/request_type: [STATUS_METRIC]}\n",
        )
        .unwrap();
        let mut a = json!({"request_type": "STATUS_METRIC", "required_sources": ["db", "doc"]});
        assert_eq!(rule.apply(&mut a), 1);
        assert_eq!(a["required_sources"], json!(["db"]));
        let mut b = json!({"request_type": "DESIGN_ARCH", "required_sources": ["doc"]});
        assert_eq!(rule.apply(&mut b), 0);
        assert_eq!(b["required_sources"], json!(["doc"]));
        assert!(rule
            .describe()
            .contains("/request_type is \"STATUS_METRIC\""));
    }

    #[test]
    fn local_refs_load_and_remote_refs_are_refused() {
        let (dir, project) = project();
        std::fs::create_dir_all(dir.path().join("schemas")).unwrap();
        std::fs::write(
            dir.path().join("schemas/source.yaml"),
            "type: string\nenum: [db, doc]\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("schemas/plan.json"),
            r#"{"type":"object","properties":{"s":{"$ref":"source.yaml"}}}"#,
        )
        .unwrap();
        let v = compile(&SchemaSource::Path("schemas/plan.json".into()), &project).unwrap();
        assert!(v.is_valid(&json!({"s": "db"})));
        assert!(!v.is_valid(&json!({"s": "web"})));

        let remote = SchemaSource::Inline(json!({"$ref": "https://example.com/s.json"}));
        let err = compile(&remote, &project).unwrap_err().to_string();
        assert!(err.contains("remote $ref"), "{err}");

        let outside = SchemaSource::Inline(json!({"$ref": "../../../etc/passwd.json"}));
        assert!(compile(&outside, &project).is_err());
    }

    #[test]
    fn the_schema_is_compiled_once_and_shared_by_clones() {
        let (_dir, project) = project();
        let c = JsonContract::new(
            SchemaSource::Inline(json!({"type": "object"})),
            vec![],
            None,
            None,
        );
        let clone = c.clone();
        let a = c.validator(&project).unwrap();
        let b = clone.validator(&project).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
    }

    #[test]
    fn invalid_schemas_and_fallback_templates() {
        let (_dir, project) = project();
        let bad = SchemaSource::Inline(json!({"type": "no-such-type"}));
        assert!(matches!(
            compile(&bad, &project),
            Err(SchemaError::Invalid(_))
        ));
        let c = JsonContract::new(
            SchemaSource::Inline(json!({})),
            vec![],
            Some(json!({"intent": "fallback for {{ task }}", "n": [1]})),
            None,
        );
        let v = c.render_fallback(&json!({"task": "x"})).unwrap().unwrap();
        assert_eq!(v, json!({"intent": "fallback for x", "n": [1]}));
    }
}
