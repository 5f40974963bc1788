//! A pipeline file (`pipeline/*.yaml`) as data, and the checks that make it runnable: the input
//! worker exists, every event a worker emits or subscribes to is declared, every event schema
//! compiles, every worker's agent exists.
//!
//! ```yaml
//! name: research
//! input: scout                 # the worker that gets the pipeline's input
//! max_hops: 32                 # a bound on worker hops (default 32): cycles cannot run forever
//! events:
//!   source.discovered:
//!     schema: {type: object, required: [path], properties: {path: {type: string}}}
//! workers:
//!   scout:   {agent: pipeline-scout, emits: [source.discovered]}
//!   analyst: {agent: pipeline-analyst, on: [source.discovered], emits: [analysis.complete]}
//! ```

use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use crate::agent::AgentSet;
use crate::contract::{schema::compile, SchemaSource};
use crate::project::Project;

/// Worker hops a pipeline may start when its file does not say.
pub const DEFAULT_MAX_HOPS: usize = 32;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PipelineFile {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub input: String,
    #[serde(default)]
    pub max_hops: Option<usize>,
    pub events: BTreeMap<String, EventSpec>,
    pub workers: BTreeMap<String, WorkerSpec>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventSpec {
    pub schema: Value,
    #[serde(default)]
    pub description: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerSpec {
    pub agent: String,
    /// Event types that wake this worker (one hop per event).
    #[serde(default)]
    pub on: Vec<String>,
    /// Event types this worker may emit.
    #[serde(default)]
    pub emits: Vec<String>,
}

/// A checked pipeline, schemas compiled.
pub struct Pipeline {
    pub file: PipelineFile,
    pub path: String,
    pub validators: BTreeMap<String, Arc<jsonschema::Validator>>,
}

/// Why a pipeline file cannot run.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error("{path}: {reason}")]
    Unreadable { path: String, reason: String },
    #[error("{path}: {problems}", problems = problems.join("\n"))]
    Invalid { path: String, problems: Vec<String> },
}

impl Pipeline {
    /// Reads and checks the pipeline file `name` (inside the project root).
    pub fn load(project: &Project, name: &str, agents: &AgentSet) -> Result<Self, PipelineError> {
        let unreadable = |reason: String| PipelineError::Unreadable {
            path: name.to_string(),
            reason,
        };
        let path: PathBuf = project
            .resolve(name)
            .map_err(|e| unreadable(e.to_string()))?;
        let text = std::fs::read_to_string(&path).map_err(|e| unreadable(e.to_string()))?;
        let file: PipelineFile =
            crate::yaml::from_str(&text).map_err(|e| unreadable(e.to_string()))?;
        Self::check(file, name, project, agents)
    }

    fn check(
        file: PipelineFile,
        path: &str,
        project: &Project,
        agents: &AgentSet,
    ) -> Result<Self, PipelineError> {
        let mut problems = Vec::new();
        if !file.workers.contains_key(&file.input) {
            problems.push(format!(
                "input: no worker `{}` (workers: {})",
                file.input,
                file.workers.keys().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
        for (name, w) in &file.workers {
            if agents.get(&w.agent).is_none() {
                problems.push(format!(
                    "workers.{name}.agent: {}",
                    agents.why_missing(&w.agent)
                ));
            }
            for (key, list) in [("on", &w.on), ("emits", &w.emits)] {
                for ev in list {
                    if !file.events.contains_key(ev) {
                        problems.push(format!(
                            "workers.{name}.{key}: event `{ev}` is not declared under `events:`"
                        ));
                    }
                }
            }
        }
        let mut validators = BTreeMap::new();
        for (name, ev) in &file.events {
            match compile(&SchemaSource::Inline(ev.schema.clone()), project) {
                Ok(v) => {
                    validators.insert(name.clone(), Arc::new(v));
                }
                Err(e) => problems.push(format!("events.{name}.schema: {e}")),
            }
        }
        if !problems.is_empty() {
            return Err(PipelineError::Invalid {
                path: path.to_string(),
                problems,
            });
        }
        Ok(Pipeline {
            file,
            path: path.to_string(),
            validators,
        })
    }

    pub fn max_hops(&self) -> usize {
        self.file.max_hops.unwrap_or(DEFAULT_MAX_HOPS)
    }

    /// Workers woken by `event`, in name order.
    pub fn subscribers(&self, event: &str) -> Vec<&str> {
        self.file
            .workers
            .iter()
            .filter(|(_, w)| w.on.iter().any(|e| e == event))
            .map(|(n, _)| n.as_str())
            .collect()
    }

    /// The problems of `data` as event `event` emitted by `worker` (empty: valid).
    pub fn problems(&self, worker: &str, event: &str, data: &Value) -> Vec<String> {
        let allowed = self
            .file
            .workers
            .get(worker)
            .is_some_and(|w| w.emits.iter().any(|e| e == event));
        if !allowed {
            return vec![format!("`{worker}` may not emit `{event}`")];
        }
        match self.validators.get(event) {
            Some(v) => v
                .iter_errors(data)
                .map(|e| {
                    let at = e.instance_path().to_string();
                    format!("{event}{at}: {e}")
                })
                .collect(),
            None => vec![format!("`{event}` is not declared")],
        }
    }

    /// The `emits` part of a worker's task: type → schema.
    pub fn allowed(&self, worker: &str) -> Value {
        let mut map = serde_json::Map::new();
        if let Some(w) = self.file.workers.get(worker) {
            for e in &w.emits {
                if let Some(spec) = self.file.events.get(e) {
                    map.insert(e.clone(), spec.schema.clone());
                }
            }
        }
        Value::Object(map)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, Project, AgentSet) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("agent")).unwrap();
        std::fs::write(
            dir.path().join("agent/w.md"),
            "---\nname: w\ndescription: d\nmode: subagent\n---\nx\n",
        )
        .unwrap();
        let p = Project::open(dir.path()).unwrap();
        let a = crate::agent::load(&p, &Default::default());
        (dir, p, a)
    }

    #[test]
    fn a_pipeline_with_undeclared_events_and_agents_says_each_problem() {
        let (dir, p, a) = setup();
        std::fs::write(
            dir.path().join("p.yaml"),
            "name: x\ninput: nope\nevents:\n  a.b: {schema: {type: objectx}}\nworkers:\n  one: {agent: ghost, on: [c.d], emits: [a.b]}\n",
        )
        .unwrap();
        let Err(PipelineError::Invalid { problems, .. }) = Pipeline::load(&p, "p.yaml", &a) else {
            panic!()
        };
        let text = problems.join("\n");
        for want in [
            "input: no worker `nope`",
            "workers.one.agent: unknown agent `ghost`",
            "workers.one.on: event `c.d` is not declared",
            "events.a.b.schema:",
        ] {
            assert!(text.contains(want), "{want} in {text}");
        }
        assert!(matches!(
            Pipeline::load(&p, "../p.yaml", &a),
            Err(PipelineError::Unreadable { .. })
        ));
    }

    #[test]
    fn emitted_events_are_checked_against_emits_and_schema() {
        let (dir, p, a) = setup();
        std::fs::write(
            dir.path().join("p.yaml"),
            "name: x\ninput: one\nevents:\n  a.b: {schema: {type: object, required: [k], properties: {k: {type: string}}}}\nworkers:\n  one: {agent: w, emits: [a.b]}\n  two: {agent: w, on: [a.b]}\n",
        )
        .unwrap();
        let pl = Pipeline::load(&p, "p.yaml", &a).unwrap();
        assert!(pl
            .problems("one", "a.b", &serde_json::json!({"k": "v"}))
            .is_empty());
        let bad = pl.problems("one", "a.b", &serde_json::json!({"k": 1}));
        assert!(bad[0].starts_with("a.b/k:"), "{bad:?}");
        assert_eq!(
            pl.problems("two", "a.b", &serde_json::json!({})),
            ["`two` may not emit `a.b`"]
        );
        assert_eq!(pl.subscribers("a.b"), ["two"]);
    }
}
