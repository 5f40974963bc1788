//! The scripted provider: plays a YAML script of responses, for deterministic tests and benches.
//!
//! ```yaml
//! delay_ms: 0                 # default latency of every turn (optional)
//! agents:
//!   researcher:               # a list of hops; each hop plays its turns in order
//!     - turns:
//!         - tool_calls:
//!             - name: task
//!               arguments: {subagent_type: thoughts-locator, description: find, prompt: "…"}
//!         - content: "final answer"
//!   thoughts-analyzer:
//!     - when: "2025-03-01-event-log.md"   # this hop is the one whose task mentions this text
//!       turns:
//!         - delay_ms: 100
//!           content: |
//!             ---
//!             message_id: {{ message_id }}
//!             …
//!   worker:
//!     - repeat: true          # never used up: every hop of `worker` plays these turns
//!       turns: [{content: done}]
//! ```
//!
//! Why hops and not one queue per agent: parallel hops of one agent ask for their turns in an order
//! the scheduler decides, and a resumed session skips hops that already completed. A hop therefore
//! claims a hop script when it makes its first request (the first unclaimed one whose `when` its task
//! contains, in file order), and its turn number is the number of assistant turns in the request, so
//! consumption does not depend on timing. A hop is recognised by its agent, system prompt and task.
//!
//! `{{ message_id }}`, `{{ correlation_id }}` and `{{ timestamp }}` in `content` are replaced with
//! the ids the runtime allocated for the hop (from the request's response contract), so scripted
//! envelopes pass the contract check. A script that runs out is a `ModelError::Fatal` naming the
//! agent and the turn.

use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use super::{BoxFuture, Model, ModelError, ModelRequest, ModelResponse, Role, ToolCall, Usage};

/// A whole script.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// Latency of every turn that does not set its own.
    #[serde(default)]
    pub delay_ms: u64,
    #[serde(default)]
    pub agents: BTreeMap<String, Vec<HopScript>>,
}

/// The turns of one hop.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HopScript {
    /// Claimed only by a hop whose task (first user message) contains this text.
    #[serde(default)]
    pub when: Option<String>,
    /// Never used up: every matching hop plays these turns.
    #[serde(default)]
    pub repeat: bool,
    pub turns: Vec<Turn>,
}

/// One model response.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    #[serde(default)]
    pub content: String,
    #[serde(default)]
    pub tool_calls: Vec<ScriptedCall>,
    #[serde(default)]
    pub delay_ms: Option<u64>,
    /// Reported usage; estimated from text length (4 bytes a token) when absent.
    #[serde(default)]
    pub usage: Option<Usage>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedCall {
    pub name: String,
    #[serde(default)]
    pub arguments: serde_json::Value,
}

/// A scripted model over one script.
pub struct ScriptedModel {
    script: Script,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// (agent, index) of hop scripts already claimed (repeat scripts are never recorded).
    claimed: std::collections::HashSet<(String, usize)>,
    /// Hop key → the hop script it claimed.
    hops: HashMap<u64, usize>,
}

impl ScriptedModel {
    pub fn new(script: Script) -> Self {
        ScriptedModel {
            script,
            state: Mutex::new(State::default()),
        }
    }

    pub fn from_yaml(text: &str) -> Result<Self, ModelError> {
        serde_saphyr::from_str::<Script>(text)
            .map(Self::new)
            .map_err(|e| ModelError::Fatal(format!("scripted: invalid script: {e}")))
    }

    pub fn from_path(path: &Path) -> Result<Self, ModelError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            ModelError::Fatal(format!("scripted: cannot read {}: {e}", path.display()))
        })?;
        Self::from_yaml(&text).map_err(|e| ModelError::Fatal(format!("{} ({})", e, path.display())))
    }

    /// Picks the turn for `request`, claiming a hop script on the hop's first request.
    fn turn_for(&self, request: &ModelRequest) -> Result<Turn, ModelError> {
        let agent = request.agent.as_str();
        let hops = self.script.agents.get(agent).ok_or_else(|| {
            ModelError::Fatal(format!(
                "scripted: the script has no entry for agent `{agent}`"
            ))
        })?;
        let task = request
            .messages
            .iter()
            .find(|m| m.role == Role::User)
            .map_or("", |m| m.content.as_str());
        let turn_no = request
            .messages
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .count();
        let key = hop_key(agent, &request.system, task);
        let mut state = self
            .state
            .lock()
            .map_err(|_| ModelError::Fatal("scripted: state poisoned".into()))?;
        let index = match (turn_no, state.hops.get(&key).copied()) {
            (n, Some(i)) if n > 0 => i,
            _ => {
                let found = hops.iter().enumerate().position(|(i, h)| {
                    h.when.as_deref().is_none_or(|w| task.contains(w))
                        && (h.repeat || !state.claimed.contains(&(agent.to_string(), i)))
                });
                let Some(i) = found else {
                    return Err(ModelError::Fatal(format!(
                        "scripted: script ran out for agent `{agent}`: no hop script left for a \
                         new hop (turn 1) with task {:?}",
                        truncate(task, 80)
                    )));
                };
                if !hops[i].repeat {
                    state.claimed.insert((agent.to_string(), i));
                }
                state.hops.insert(key, i);
                i
            }
        };
        drop(state);
        let hop = &hops[index];
        hop.turns.get(turn_no).cloned().ok_or_else(|| {
            ModelError::Fatal(format!(
                "scripted: script ran out for agent `{agent}` at turn {} (hop script {} has {} turns)",
                turn_no + 1,
                index + 1,
                hop.turns.len()
            ))
        })
    }
}

impl Model for ScriptedModel {
    fn provider(&self) -> &str {
        "scripted"
    }

    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(async move {
            let request = &*request.callable_only();
            let turn = self.turn_for(request)?;
            let delay = turn.delay_ms.unwrap_or(self.script.delay_ms);
            if delay > 0 {
                tokio::time::sleep(Duration::from_millis(delay)).await;
            }
            let turn_no = request
                .messages
                .iter()
                .filter(|m| m.role == Role::Assistant)
                .count();
            let content = substitute(&turn.content, request);
            let tool_calls = turn
                .tool_calls
                .iter()
                .enumerate()
                .map(|(i, c)| ToolCall {
                    id: format!("call_{}_{}", turn_no + 1, i + 1),
                    name: c.name.clone(),
                    arguments: c.arguments.clone(),
                })
                .collect();
            let usage = turn.usage.unwrap_or_else(|| Usage {
                input_tokens: estimate(&request.system)
                    + request
                        .messages
                        .iter()
                        .map(|m| estimate(&m.content))
                        .sum::<u64>(),
                output_tokens: estimate(&content),
                ..Default::default()
            });
            Ok(ModelResponse {
                content,
                tool_calls,
                usage,
                truncated: false,
            })
        })
    }
}

fn estimate(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

fn hop_key(agent: &str, system: &str, task: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (agent, system, task).hash(&mut h);
    h.finish()
}

fn truncate(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// Fills the runtime ids into scripted content.
fn substitute(content: &str, request: &ModelRequest) -> String {
    let Some(rc) = &request.response_contract else {
        return content.to_string();
    };
    if !content.contains("{{") {
        return content.to_string();
    }
    let mut out = content.to_string();
    for (name, value) in [
        ("message_id", rc.message_id.as_str()),
        ("correlation_id", rc.correlation_id.as_str()),
        ("timestamp", rc.timestamp.as_str()),
    ] {
        out = out
            .replace(&format!("{{{{ {name} }}}}"), value)
            .replace(&format!("{{{{{name}}}}}"), value);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Message;

    fn request(agent: &str, task: &str, assistant_turns: usize) -> ModelRequest {
        let mut messages = vec![Message::user(task)];
        for _ in 0..assistant_turns {
            messages.push(Message::assistant("x", vec![]));
        }
        ModelRequest {
            model: "s".into(),
            agent: agent.into(),
            system: "sys".into(),
            messages,
            tools: vec![],
            tool_choice: Default::default(),
            temperature: None,
            top_p: None,
            max_tokens: None,
            response_contract: None,
        }
    }

    #[tokio::test]
    async fn hops_claim_scripts_by_when_and_turns_run_out_clearly() {
        let m = ScriptedModel::from_yaml(
            "agents:\n  a:\n    - when: two\n      turns: [{content: second}]\n    - turns: [{content: first}, {content: again}]\n",
        )
        .unwrap();
        let r = m.complete(&request("a", "task two", 0)).await.unwrap();
        assert_eq!(r.content, "second");
        let r = m.complete(&request("a", "task one", 0)).await.unwrap();
        assert_eq!(r.content, "first");
        let r = m.complete(&request("a", "task one", 1)).await.unwrap();
        assert_eq!(r.content, "again");
        let e = m.complete(&request("a", "task one", 2)).await.unwrap_err();
        assert!(e.to_string().contains("agent `a` at turn 3"), "{e}");
        let e = m
            .complete(&request("a", "task three", 0))
            .await
            .unwrap_err();
        assert!(e.to_string().contains("ran out for agent `a`"), "{e}");
        let e = m.complete(&request("b", "x", 0)).await.unwrap_err();
        assert!(e.to_string().contains("no entry for agent `b`"), "{e}");
    }
}
