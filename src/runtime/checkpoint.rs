//! Checkpoints: what a hop that stopped early (tier 2, PARTIAL) has done, what remains and what
//! to do next, so `resume` can continue it with a fresh budget instead of starting over.
//!
//! The runtime asks the agent for one when a budget reaches its threshold; the reply is JSON,
//! validated against [`schema`] with the same JSON Schema machinery contracts use
//! (`contract::schema::compile`). When the agent cannot be asked (its context overflowed, the
//! hard limit came first) or its reply does not validate, the runtime writes one itself from
//! what it knows, marked `source: runtime`, so every PARTIAL hop has a checkpoint to resume from.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::path::Path;

use crate::contract::{schema::compile, SchemaSource};
use crate::project::Project;

/// Where checkpoints are written, inside the session folder.
pub const CHECKPOINTS_DIR: &str = "checkpoints";

/// One checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Checkpoint {
    /// What is finished.
    pub done: Vec<String>,
    /// What is still to do.
    pub remaining: Vec<String>,
    /// What the next attempt should do first.
    pub next_steps: Vec<String>,
    /// `agent` (the agent wrote it) or `runtime` (written for it).
    #[serde(default = "agent_source")]
    pub source: String,
}

fn agent_source() -> String {
    "agent".into()
}

/// The JSON Schema an agent's checkpoint must satisfy.
pub fn schema() -> Value {
    let list = json!({"type": "array", "items": {"type": "string", "minLength": 1}});
    json!({
        "type": "object",
        "required": ["done", "remaining", "next_steps"],
        "properties": {
            "done": list,
            "remaining": list,
            "next_steps": list,
        },
        "additionalProperties": false
    })
}

/// How [`request`]'s message ends its first sentence's instruction: what [`is_request`] knows it by.
const REQUEST_MARK: &str =
    "Do not call any tool. Reply with only a JSON object recording where you are";

/// Whether `message` is [`request`]'s: the local engine answers it with the checkpoint's
/// grammar, not the agent's contract.
pub fn is_request(message: &str) -> bool {
    message.starts_with("Stop here: ") && message.contains(REQUEST_MARK)
}

/// The message that asks an agent for its checkpoint.
pub fn request(why: &str) -> String {
    format!(
        "Stop here: {why}. Do not call any tool. Reply with only a JSON object recording where \
         you are, so the work can be continued later with a fresh budget:\n\
         {{\"done\": [\"what you have finished\"], \"remaining\": [\"what is still to do\"], \
         \"next_steps\": [\"what to do first when continuing\"]}}\n\
         Each value is a list of short strings; `next_steps` must not be empty."
    )
}

/// Why an agent's reply is not a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointError {
    #[error("the reply holds no JSON object")]
    NoJson,
    #[error("the reply is not valid JSON: {0}")]
    Json(String),
    #[error("the checkpoint does not match its schema: {0}")]
    Schema(String),
    #[error("the checkpoint names no next step")]
    NoNextStep,
}

/// Reads and validates an agent's checkpoint reply (a JSON object, possibly fenced or with prose
/// around it).
pub fn parse(reply: &str, project: &Project) -> Result<Checkpoint, CheckpointError> {
    let start = reply.find('{').ok_or(CheckpointError::NoJson)?;
    let end = reply.rfind('}').ok_or(CheckpointError::NoJson)?;
    if end < start {
        return Err(CheckpointError::NoJson);
    }
    let value: Value = serde_json::from_str(&reply[start..=end])
        .map_err(|e| CheckpointError::Json(e.to_string()))?;
    let validator = compile(&SchemaSource::Inline(schema()), project)
        .map_err(|e| CheckpointError::Schema(e.to_string()))?;
    let problems: Vec<String> = validator
        .iter_errors(&value)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("{at}: {e}")
            }
        })
        .collect();
    if !problems.is_empty() {
        return Err(CheckpointError::Schema(problems.join("; ")));
    }
    let mut checkpoint: Checkpoint =
        serde_json::from_value(value).map_err(|e| CheckpointError::Json(e.to_string()))?;
    if checkpoint.next_steps.is_empty() {
        return Err(CheckpointError::NoNextStep);
    }
    checkpoint.source = agent_source();
    Ok(checkpoint)
}

/// The checkpoint the runtime writes when the agent could not give one: the task remains, and
/// the last thing the agent said is its progress.
pub fn by_runtime(task: &str, last_answer: &str, steps: u32, why: &str) -> Checkpoint {
    let mut done = vec![format!("{steps} model turn(s) before it stopped ({why})")];
    let said = last_answer.trim();
    if !said.is_empty() {
        let short: String = said.chars().take(400).collect();
        done.push(format!("last said: {short}"));
    }
    Checkpoint {
        done,
        remaining: vec![format!("the task: {}", task.trim())],
        next_steps: vec![
            "continue the task from where the last answer left off; do not repeat finished work"
                .into(),
        ],
        source: "runtime".into(),
    }
}

/// Writes `checkpoint` to `<session dir>/checkpoints/<hop_id>.json`; returns the path relative
/// to the session folder.
pub fn store(session_dir: &Path, hop_id: &str, checkpoint: &Checkpoint) -> std::io::Result<String> {
    let dir = session_dir.join(CHECKPOINTS_DIR);
    std::fs::create_dir_all(&dir)?;
    let rel = format!("{CHECKPOINTS_DIR}/{hop_id}.json");
    let text = serde_json::to_string_pretty(checkpoint).map_err(std::io::Error::other)?;
    std::fs::write(session_dir.join(&rel), text + "\n")?;
    Ok(rel)
}

/// The text a resumed hop's task gets appended, so it continues instead of starting over.
pub fn continuation(checkpoint: &Checkpoint) -> String {
    let list = |items: &[String]| {
        if items.is_empty() {
            "- (nothing recorded)".to_string()
        } else {
            items
                .iter()
                .map(|i| format!("- {i}"))
                .collect::<Vec<_>>()
                .join("\n")
        }
    };
    format!(
        "\n\n[Continuing: an earlier attempt at this task stopped PARTIAL. Its checkpoint:]\n\
         Done:\n{}\nRemaining:\n{}\nNext steps:\n{}\n\
         Continue from there with a fresh budget; do not redo what is done.",
        list(&checkpoint.done),
        list(&checkpoint.remaining),
        list(&checkpoint.next_steps)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project() -> (tempfile::TempDir, Project) {
        let dir = tempfile::tempdir().unwrap();
        let p = Project::open(dir.path()).unwrap();
        (dir, p)
    }

    #[test]
    fn a_fenced_checkpoint_with_prose_around_it_parses() {
        let (_d, p) = project();
        let reply = "Here it is:\n```json\n{\"done\": [\"read a.md\"], \"remaining\": [\"b.md\"], \
                     \"next_steps\": [\"read b.md\"]}\n```";
        let c = parse(reply, &p).unwrap();
        assert_eq!(c.done, ["read a.md"]);
        assert_eq!(c.next_steps, ["read b.md"]);
        assert_eq!(c.source, "agent");
    }

    #[test]
    fn a_checkpoint_that_breaks_its_schema_says_where() {
        let (_d, p) = project();
        let err = parse(
            "{\"done\": \"all\", \"remaining\": [], \"next_steps\": [\"x\"]}",
            &p,
        )
        .unwrap_err();
        assert!(
            matches!(&err, CheckpointError::Schema(m) if m.contains("/done")),
            "{err}"
        );
        assert_eq!(parse("no json here", &p), Err(CheckpointError::NoJson));
        assert_eq!(
            parse("{\"done\": [], \"remaining\": [], \"next_steps\": []}", &p),
            Err(CheckpointError::NoNextStep)
        );
        assert!(matches!(
            parse(
                "{\"done\": [], \"remaining\": [], \"next_steps\": [\"a\"], \"extra\": 1}",
                &p
            ),
            Err(CheckpointError::Schema(_))
        ));
    }

    #[test]
    fn a_stored_checkpoint_reads_back_and_continues() {
        let dir = tempfile::tempdir().unwrap();
        let c = by_runtime("summarise b.md", "half done", 3, "context overflow");
        let rel = store(dir.path(), "h1", &c).unwrap();
        assert_eq!(rel, "checkpoints/h1.json");
        let back: Checkpoint =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join(rel)).unwrap()).unwrap();
        assert_eq!(back, c);
        assert_eq!(back.source, "runtime");
        let text = continuation(&back);
        assert!(text.contains("- the task: summarise b.md"), "{text}");
        assert!(text.contains("Next steps:\n- continue"), "{text}");
    }
}
