//! `anthropic/MODEL`: the Messages API.
//!
//! The system prompt goes in `system`; tool calls are `tool_use` blocks in assistant turns and
//! their results `tool_result` blocks in the next user turn (consecutive results merge into one
//! turn, as the API wants). Streaming reads `message_start`, `content_block_*`, `message_delta`
//! and `message_stop` events; an `error` event mid-stream is transient when the API says it is
//! overloaded.

use serde::Deserialize;
use serde_json::{json, Value};
use std::borrow::Cow;

use super::client::{encode, ClientError, HttpClient};
use super::retry::Verdict;
use super::settings::HttpConfig;
use super::sse::SseEvent;
use super::{
    BoxFuture, Model, ModelError, ModelRequest, ModelResponse, Role, ToolCall, ToolChoice, Usage,
};

/// The API version sent in `anthropic-version`.
pub const API_VERSION: &str = "2023-06-01";

/// `max_tokens` is required by the API; this is used when the config names none.
pub const DEFAULT_MAX_TOKENS: u32 = super::settings::ANTHROPIC_DEFAULT_MAX_TOKENS;

/// A Messages API provider.
#[derive(Debug, Clone)]
pub struct Anthropic {
    http: HttpClient,
}

impl Anthropic {
    pub fn new(config: HttpConfig) -> Result<Anthropic, ClientError> {
        Ok(Anthropic {
            http: HttpClient::new(config)?,
        })
    }

    pub fn config(&self) -> &HttpConfig {
        &self.http.config
    }

    /// The request body for `request`, as JSON.
    pub fn body(&self, request: &ModelRequest, stream: bool) -> Value {
        // Turns alternate user/assistant; tool results ride in user turns.
        let mut messages: Vec<(Role, Vec<Value>)> = Vec::new();
        for m in &request.messages {
            let (role, blocks) = match m.role {
                Role::User => (
                    Role::User,
                    if m.content.is_empty() {
                        Vec::new()
                    } else {
                        vec![json!({"type": "text", "text": m.content})]
                    },
                ),
                Role::Tool => {
                    let mut block = json!({
                        "type": "tool_result",
                        "tool_use_id": m.tool_call_id.clone().unwrap_or_default(),
                        "content": m.content,
                    });
                    if m.is_error {
                        if let Some(o) = block.as_object_mut() {
                            o.insert("is_error".into(), Value::Bool(true));
                        }
                    }
                    (Role::User, vec![block])
                }
                Role::Assistant => {
                    let mut blocks = Vec::new();
                    if !m.content.trim().is_empty() {
                        blocks.push(json!({"type": "text", "text": m.content}));
                    }
                    for c in &m.tool_calls {
                        let input = match &c.arguments {
                            Value::Object(_) => c.arguments.clone(),
                            Value::Null => json!({}),
                            other => json!({ "value": other }),
                        };
                        blocks.push(json!({
                            "type": "tool_use", "id": c.id, "name": c.name, "input": input,
                        }));
                    }
                    (Role::Assistant, blocks)
                }
            };
            if blocks.is_empty() {
                continue;
            }
            match messages.last_mut() {
                Some((last, existing)) if *last == role => existing.extend(blocks),
                _ => messages.push((role, blocks)),
            }
        }
        let messages: Vec<Value> = messages
            .into_iter()
            .map(|(role, content)| {
                json!({
                    "role": if role == Role::Assistant { "assistant" } else { "user" },
                    "content": content,
                })
            })
            .collect();
        let mut body = json!({
            "model": request.model,
            "max_tokens": request
                .max_tokens
                .or(self.http.config.max_tokens)
                .unwrap_or(DEFAULT_MAX_TOKENS),
            "messages": messages,
        });
        let Some(obj) = body.as_object_mut() else {
            return body;
        };
        if stream {
            obj.insert("stream".into(), Value::Bool(true));
        }
        if !request.system.is_empty() {
            obj.insert("system".into(), json!(request.system));
        }
        // A server that takes no `tool_choice` could call a tool only described: none go.
        let described = request.tool_choice == ToolChoice::None && self.http.config.tool_choice;
        if !request.callable_tools().is_empty() || described {
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|t| {
                    json!({
                        "name": t.name,
                        "description": t.description,
                        "input_schema": t.parameters,
                    })
                })
                .collect();
            obj.insert("tools".into(), Value::Array(tools));
            if request.tool_choice == ToolChoice::Required && self.http.config.tool_choice {
                // Anthropic's "any": one of the tools, the model's pick.
                obj.insert("tool_choice".into(), json!({"type": "any"}));
            }
            if described {
                obj.insert("tool_choice".into(), json!({"type": "none"}));
            }
        }
        if let Some(t) = request.temperature {
            obj.insert("temperature".into(), json!(t));
        }
        if let Some(p) = request.top_p {
            obj.insert("top_p".into(), json!(p));
        }
        body
    }

    async fn attempt(&self, body: &[u8]) -> Result<ModelResponse, ModelError> {
        let mut headers: Vec<(&str, &str)> = vec![("anthropic-version", API_VERSION)];
        if let Some(key) = &self.http.config.api_key {
            headers.push(("x-api-key", key.expose()));
        }
        self.http
            .exchange::<StreamAccumulator>("/v1/messages", &headers, body, |bytes| {
                self.parse_body(bytes)
            })
            .await
    }

    /// Parses a whole SSE stream held in memory (tests and benches; the client streams).
    pub fn parse_sse(&self, bytes: &[u8]) -> Result<ModelResponse, ModelError> {
        self.http.parse_sse::<StreamAccumulator>(bytes)
    }

    /// Parses a non-streamed Messages body.
    pub fn parse_body(&self, bytes: &[u8]) -> Result<ModelResponse, ModelError> {
        let parsed: WireMessage = serde_json::from_slice(bytes).map_err(|e| {
            self.http
                .not_protocol("a Messages API response", &e.to_string(), bytes)
        })?;
        if parsed.kind.as_deref() == Some("error") {
            return Err(api_error(&self.http, parsed.error.as_ref()));
        }
        let Some(blocks) = parsed.content else {
            return Err(self
                .http
                .not_protocol("a Messages API response", "no content", bytes));
        };
        let mut content = String::new();
        let mut tool_calls = Vec::new();
        for block in blocks {
            match block.kind.as_str() {
                "text" => content.push_str(block.text.as_deref().unwrap_or("")),
                "tool_use" => tool_calls.push(ToolCall {
                    id: block.id.unwrap_or_default(),
                    name: block.name.unwrap_or_default(),
                    arguments: block.input.unwrap_or_else(|| json!({})),
                }),
                _ => {}
            }
        }
        Ok(ModelResponse {
            content,
            tool_calls,
            usage: parsed.usage.map(WireUsage::usage).unwrap_or_default(),
            truncated: parsed.stop_reason.as_deref() == Some(MAX_TOKENS),
        })
    }
}

impl Model for Anthropic {
    fn provider(&self) -> &str {
        &self.http.config.provider
    }

    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(async move {
            let body = encode(&self.body(request, self.http.config.stream))?;
            self.http
                .with_retries(&request.model, || self.attempt(&body))
                .await
        })
    }
}

/// An API error object: overloaded and server errors are transient, the rest fatal.
fn api_error(http: &HttpClient, error: Option<&Value>) -> ModelError {
    let kind = error
        .and_then(|e| e.get("type"))
        .and_then(Value::as_str)
        .unwrap_or("unknown_error");
    let text = error
        .and_then(|e| e.get("message"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let message = http.redact(&format!(
        "{}: the API reported {kind}: {}",
        http.config.provider,
        super::client::snippet(text)
    ));
    let verdict = match super::retry::classify(None, text) {
        Verdict::ContextOverflow => Verdict::ContextOverflow,
        _ if matches!(
            kind,
            "overloaded_error" | "api_error" | "rate_limit_error" | "timeout_error"
        ) =>
        {
            Verdict::Transient
        }
        _ => Verdict::Permanent,
    };
    super::retry::error_for(verdict, message, None)
}

#[derive(Deserialize)]
struct WireMessage {
    #[serde(rename = "type")]
    kind: Option<String>,
    stop_reason: Option<String>,
    content: Option<Vec<WireBlock>>,
    usage: Option<WireUsage>,
    error: Option<Value>,
}

#[derive(Deserialize)]
struct WireBlock {
    #[serde(rename = "type")]
    kind: String,
    text: Option<String>,
    id: Option<String>,
    name: Option<String>,
    input: Option<Value>,
}

#[derive(Deserialize, Default, Clone, Copy)]
struct WireUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
}

impl WireUsage {
    fn input(&self) -> Option<u64> {
        let parts = [
            self.input_tokens,
            self.cache_creation_input_tokens,
            self.cache_read_input_tokens,
        ];
        parts
            .iter()
            .any(Option::is_some)
            .then(|| parts.iter().flatten().sum())
    }

    fn usage(self) -> Usage {
        Usage {
            input_tokens: self.input().unwrap_or(0),
            output_tokens: self.output_tokens.unwrap_or(0),
            cached_input_tokens: self.cache_read_input_tokens.unwrap_or(0),
        }
    }
}

/// One stream event; delta text borrows from the event where it can (no escapes).
#[derive(Deserialize)]
struct StreamEvent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    index: Option<usize>,
    message: Option<WireMessage>,
    content_block: Option<WireBlock>,
    #[serde(borrow)]
    delta: Option<StreamDelta<'a>>,
    usage: Option<WireUsage>,
    error: Option<Value>,
}

#[derive(Deserialize)]
struct StreamDelta<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow)]
    partial_json: Option<Cow<'a, str>>,
    #[serde(borrow)]
    stop_reason: Option<Cow<'a, str>>,
}

/// The stop reason of an answer cut off by `max_tokens`.
const MAX_TOKENS: &str = "max_tokens";

enum Block {
    Text(String),
    ToolUse {
        id: String,
        name: String,
        json: String,
        input: Option<Value>,
    },
    Other,
}

#[derive(Default)]
struct StreamAccumulator {
    blocks: Vec<Block>,
    usage: Usage,
    stopped: bool,
    truncated: bool,
}

impl super::client::StreamAccumulator for StreamAccumulator {
    fn event(&mut self, event: &SseEvent, http: &HttpClient) -> Result<(), ModelError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(());
        }
        let parsed: StreamEvent = serde_json::from_str(data).map_err(|e| {
            http.not_protocol(
                "a Messages API stream event",
                &e.to_string(),
                data.as_bytes(),
            )
        })?;
        let bad =
            |why: &str| http.not_protocol("a Messages API stream event", why, data.as_bytes());
        match &*parsed.kind {
            "message_start" => {
                if let Some(u) = parsed.message.and_then(|m| m.usage) {
                    self.usage.input_tokens = u.input().unwrap_or(0);
                    self.usage.output_tokens = u.output_tokens.unwrap_or(0);
                }
            }
            "content_block_start" => {
                let index = parsed
                    .index
                    .ok_or_else(|| bad("content_block_start without index"))?;
                let block = parsed
                    .content_block
                    .ok_or_else(|| bad("content_block_start without content_block"))?;
                if index > 1024 {
                    return Err(bad("block index out of range"));
                }
                while self.blocks.len() <= index {
                    self.blocks.push(Block::Other);
                }
                self.blocks[index] = match block.kind.as_str() {
                    "text" => Block::Text(block.text.unwrap_or_default()),
                    "tool_use" => Block::ToolUse {
                        id: block.id.unwrap_or_default(),
                        name: block.name.unwrap_or_default(),
                        json: String::new(),
                        // An empty object here is a placeholder that the deltas replace.
                        input: block
                            .input
                            .filter(|v| v.as_object().is_none_or(|o| !o.is_empty())),
                    },
                    _ => Block::Other,
                };
            }
            "content_block_delta" => {
                let index = parsed
                    .index
                    .ok_or_else(|| bad("content_block_delta without index"))?;
                let delta = parsed
                    .delta
                    .ok_or_else(|| bad("content_block_delta without delta"))?;
                match (self.blocks.get_mut(index), delta.kind.as_deref()) {
                    (Some(Block::Text(text)), _) => {
                        text.push_str(delta.text.as_deref().unwrap_or(""))
                    }
                    (Some(Block::ToolUse { json, .. }), _) => {
                        json.push_str(delta.partial_json.as_deref().unwrap_or(""))
                    }
                    (Some(Block::Other), _) => {}
                    (None, _) => return Err(bad("delta for a block that never started")),
                }
            }
            "message_delta" => {
                if let Some(reason) = parsed.delta.as_ref().and_then(|d| d.stop_reason.as_deref()) {
                    self.truncated = reason == MAX_TOKENS;
                }
                if let Some(u) = parsed.usage {
                    if let Some(out) = u.output_tokens {
                        self.usage.output_tokens = out;
                    }
                    if let Some(input) = u.input().filter(|n| *n > 0) {
                        self.usage.input_tokens = input;
                    }
                }
            }
            "message_stop" => self.stopped = true,
            "error" => return Err(api_error(http, parsed.error.as_ref())),
            // ping, content_block_stop, and kinds added later.
            _ => {}
        }
        Ok(())
    }

    fn stopped(&self) -> bool {
        self.stopped
    }

    /// The stream is whole only with its `message_stop`.
    fn complete(&self) -> bool {
        self.stopped
    }

    fn into_response(self, http: &HttpClient) -> Result<ModelResponse, ModelError> {
        let mut content = String::new();
        let mut tool_calls = Vec::new();
        for block in self.blocks {
            match block {
                Block::Text(t) => content.push_str(&t),
                Block::ToolUse {
                    id,
                    name,
                    json,
                    input,
                } => {
                    let arguments = if json.trim().is_empty() {
                        input.unwrap_or_else(|| json!({}))
                    } else {
                        serde_json::from_str(&json).map_err(|e| {
                            http.not_protocol("a tool_use input", &e.to_string(), json.as_bytes())
                        })?
                    };
                    tool_calls.push(ToolCall {
                        id,
                        name,
                        arguments,
                    });
                }
                Block::Other => {}
            }
        }
        Ok(ModelResponse {
            content,
            tool_calls,
            usage: self.usage,
            truncated: self.truncated,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::settings::Protocol;
    use crate::model::{Message, ToolSpec};

    fn provider() -> Anthropic {
        Anthropic::new(HttpConfig::local(
            "anthropic",
            Protocol::Anthropic,
            "http://127.0.0.1:1",
        ))
        .expect("client")
    }

    #[test]
    fn body_merges_tool_results_into_one_user_turn() {
        let call = |id: &str| ToolCall {
            id: id.into(),
            name: "read".into(),
            arguments: json!({"path": id}),
        };
        let req = ModelRequest {
            model: "claude-x".into(),
            agent: "a".into(),
            system: "sys".into(),
            messages: vec![
                Message::user("hi"),
                Message::assistant("looking", vec![call("a"), call("b")]),
                Message::tool("a", "A", false),
                Message::tool("b", "nope", true),
            ],
            tools: vec![ToolSpec {
                name: "read".into(),
                description: "d".into(),
                parameters: json!({"type": "object"}),
            }],
            tool_choice: ToolChoice::Required,
            temperature: None,
            top_p: None,
            max_tokens: None,
            response_contract: None,
        };
        let body = provider().body(&req, true);
        assert_eq!(body["system"], "sys");
        assert_eq!(body["max_tokens"], DEFAULT_MAX_TOKENS);
        let msgs = body["messages"].as_array().expect("messages");
        assert_eq!(msgs.len(), 3);
        assert_eq!(msgs[1]["content"][1]["type"], "tool_use");
        assert_eq!(msgs[2]["role"], "user");
        assert_eq!(msgs[2]["content"][1]["is_error"], true);
        assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
        assert_eq!(body["tool_choice"], json!({"type": "any"}));
        // Held back, the tools are still defined (a conversation with `tool_use` blocks needs
        // them) and none may be called.
        let held = ModelRequest {
            tool_choice: ToolChoice::None,
            ..req
        };
        let body = provider().body(&held, true);
        assert_eq!(body["tools"][0]["name"], "read");
        assert_eq!(body["tool_choice"], json!({"type": "none"}));
    }

    #[test]
    fn parses_body_and_errors() {
        let p = provider();
        let r = p
            .parse_body(
                br#"{"type":"message","content":[{"type":"text","text":"hi"},
                {"type":"tool_use","id":"t1","name":"read","input":{"path":"x"}}],
                "usage":{"input_tokens":5,"output_tokens":2}}"#,
            )
            .expect("parse");
        assert_eq!(r.content, "hi");
        assert_eq!(r.tool_calls[0].arguments, json!({"path": "x"}));
        assert_eq!(r.usage.total(), 7);
        let err = p.parse_body(
            br#"{"type":"error","error":{"type":"overloaded_error","message":"busy"}}"#,
        );
        assert!(matches!(err, Err(ModelError::Transient { .. })));
        assert!(matches!(p.parse_body(b"nope"), Err(ModelError::Fatal(_))));
    }

    /// Cache reads count as input (the prompt was that long) and are also named as cached.
    #[test]
    fn cache_reads_are_input_and_named_as_cached() {
        let r = provider()
            .parse_body(
                br#"{"type":"message","content":[{"type":"text","text":"hi"}],
                "usage":{"input_tokens":5,"cache_creation_input_tokens":10,
                "cache_read_input_tokens":800,"output_tokens":2}}"#,
            )
            .expect("parse");
        assert_eq!(r.usage.input_tokens, 815);
        assert_eq!(r.usage.cached_input_tokens, 800);
    }
}
