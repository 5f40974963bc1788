//! `openai/MODEL`: the Chat Completions protocol, as OpenAI, Ollama, vLLM, llama.cpp's server and
//! LM Studio speak it.
//!
//! Tools go out as JSON-schema functions; tool calls (parallel ones too) come back and are paired
//! with their results by id. Streaming (SSE) is the default; `stream = false` or `--no-stream`
//! asks for one JSON body instead. Usage is read from the answer (`stream_options.include_usage`
//! when streaming).

use serde::Deserialize;
use serde_json::{json, Value};
use std::borrow::Cow;

use super::client::{encode, ClientError, HttpClient};
use super::retry;
use super::settings::HttpConfig;
use super::sse::SseEvent;
use super::{
    BoxFuture, Message, Model, ModelError, ModelRequest, ModelResponse, Role, ToolCall, ToolChoice,
    Usage,
};

/// A Chat Completions provider.
#[derive(Debug, Clone)]
pub struct OpenAi {
    http: HttpClient,
}

impl OpenAi {
    pub fn new(config: HttpConfig) -> Result<OpenAi, ClientError> {
        Ok(OpenAi {
            http: HttpClient::new(config)?,
        })
    }

    pub fn config(&self) -> &HttpConfig {
        &self.http.config
    }

    /// Whether the server says its chat template supports tools (`None`: it does not say).
    pub async fn server_supports_tools(&self) -> Option<bool> {
        self.http.server_supports_tools().await
    }

    /// The request body for `request`, as JSON.
    pub fn body(&self, request: &ModelRequest, stream: bool) -> Value {
        let mut messages = Vec::with_capacity(request.messages.len() + 1);
        if !request.system.is_empty() {
            messages.push(json!({"role": "system", "content": request.system}));
        }
        for m in &request.messages {
            messages.push(message_json(m));
        }
        let mut body = json!({
            "model": request.model,
            "messages": messages,
            "stream": stream,
        });
        let obj = match body.as_object_mut() {
            Some(o) => o,
            None => return body,
        };
        if stream {
            obj.insert("stream_options".into(), json!({"include_usage": true}));
        }
        // A server that takes no `tool_choice` could call a tool only described: none go.
        let described = request.tool_choice == ToolChoice::None && self.http.config.tool_choice;
        if !request.callable_tools().is_empty() || described {
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|t| {
                    json!({
                        "type": "function",
                        "function": {
                            "name": t.name,
                            "description": t.description,
                            "parameters": t.parameters,
                        }
                    })
                })
                .collect();
            obj.insert("tools".into(), Value::Array(tools));
            if request.tool_choice == ToolChoice::Required && self.http.config.tool_choice {
                obj.insert("tool_choice".into(), json!("required"));
            }
            if described {
                obj.insert("tool_choice".into(), json!("none"));
            }
        }
        if let Some(t) = request.temperature {
            obj.insert("temperature".into(), json!(t));
        }
        if let Some(p) = request.top_p {
            obj.insert("top_p".into(), json!(p));
        }
        if let Some(n) = request.max_tokens.or(self.http.config.max_tokens) {
            obj.insert("max_tokens".into(), json!(n));
        }
        body
    }

    async fn attempt(&self, body: &[u8]) -> Result<ModelResponse, ModelError> {
        let auth = self.http.bearer();
        let headers: Vec<(&str, &str)> =
            auth.iter().map(|a| ("authorization", a.as_str())).collect();
        self.http
            .exchange::<StreamAccumulator>("/chat/completions", &headers, body, |bytes| {
                self.parse_body(bytes)
            })
            .await
    }

    /// Parses a whole SSE stream held in memory (tests and benches; the client streams).
    pub fn parse_sse(&self, bytes: &[u8]) -> Result<ModelResponse, ModelError> {
        self.http.parse_sse::<StreamAccumulator>(bytes)
    }

    /// Parses a non-streamed Chat Completions body.
    pub fn parse_body(&self, bytes: &[u8]) -> Result<ModelResponse, ModelError> {
        let parsed: Completion = serde_json::from_slice(bytes).map_err(|e| {
            self.http
                .not_protocol("a Chat Completions response", &e.to_string(), bytes)
        })?;
        if let Some(err) = parsed.error {
            let text = self.http.redact(&super::client::snippet(&err.to_string()));
            let message = format!(
                "{}: the server answered with an error: {text}",
                self.http.config.provider
            );
            return Err(retry::error_for(
                retry::classify(None, &text),
                message,
                None,
            ));
        }
        let Some(choice) = parsed.choices.into_iter().next() else {
            return Err(self
                .http
                .not_protocol("a Chat Completions response", "no choices", bytes));
        };
        let tool_calls = choice
            .message
            .tool_calls
            .into_iter()
            .enumerate()
            .map(|(i, c)| ToolCall {
                id: c.id.unwrap_or_else(|| format!("call_{i}")),
                name: c.function.name,
                arguments: parse_arguments(c.function.arguments),
            })
            .collect();
        Ok(ModelResponse {
            content: choice.message.content.unwrap_or_default(),
            tool_calls,
            usage: parsed.usage.map(Usage::from).unwrap_or_default(),
            truncated: choice.finish_reason.as_deref() == Some(LENGTH),
        })
    }
}

impl Model for OpenAi {
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

fn message_json(m: &Message) -> Value {
    match m.role {
        Role::User => json!({"role": "user", "content": m.content}),
        Role::Assistant => {
            let mut v = json!({"role": "assistant", "content": m.content});
            if !m.tool_calls.is_empty() {
                let calls: Vec<Value> = m
                    .tool_calls
                    .iter()
                    .map(|c| {
                        json!({
                            "id": c.id,
                            "type": "function",
                            "function": {
                                "name": c.name,
                                "arguments": arguments_string(&c.arguments),
                            }
                        })
                    })
                    .collect();
                if let Some(o) = v.as_object_mut() {
                    o.insert("tool_calls".into(), Value::Array(calls));
                }
            }
            v
        }
        Role::Tool => {
            let content = if m.is_error && !m.content.starts_with("Error") {
                format!("Error: {}", m.content)
            } else {
                m.content.clone()
            };
            json!({
                "role": "tool",
                "tool_call_id": m.tool_call_id.clone().unwrap_or_default(),
                "content": content,
            })
        }
    }
}

/// Arguments travel as a JSON string in this protocol.
fn arguments_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "{}".to_string(),
        other => other.to_string(),
    }
}

/// The model's argument string as JSON; a string the model garbled stays a string, so the
/// runtime can tell the model what went wrong rather than failing the hop.
fn parse_arguments(raw: String) -> Value {
    if raw.trim().is_empty() {
        return json!({});
    }
    serde_json::from_str(&raw).unwrap_or(Value::String(raw))
}

#[derive(Deserialize)]
struct Completion {
    #[serde(default)]
    choices: Vec<Choice>,
    usage: Option<WireUsage>,
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    message: WireMessage,
    finish_reason: Option<String>,
}

/// The finish reason of an answer cut off by `max_tokens`.
const LENGTH: &str = "length";

#[derive(Deserialize)]
struct WireMessage {
    content: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    tool_calls: Vec<WireToolCall>,
}

#[derive(Deserialize)]
struct WireToolCall {
    id: Option<String>,
    function: WireFunction,
}

#[derive(Deserialize)]
struct WireFunction {
    name: String,
    #[serde(default, deserialize_with = "arguments_any")]
    arguments: String,
}

#[derive(Deserialize, Clone, Copy, Default)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    /// `prompt_tokens_details.cached_tokens`: OpenAI's prompt cache, and llama-server's
    /// reuse of a slot's KV cache.
    #[serde(default, deserialize_with = "null_as_default")]
    prompt_tokens_details: PromptTokensDetails,
}

#[derive(Deserialize, Clone, Copy, Default)]
struct PromptTokensDetails {
    #[serde(default, deserialize_with = "null_as_default")]
    cached_tokens: u64,
}

impl From<WireUsage> for Usage {
    fn from(u: WireUsage) -> Usage {
        Usage {
            input_tokens: u.prompt_tokens,
            output_tokens: u.completion_tokens,
            cached_input_tokens: u.prompt_tokens_details.cached_tokens,
        }
    }
}

fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// Arguments are a string in the protocol; some local servers send an object instead.
fn arguments_any<'de, D>(d: D) -> Result<String, D::Error>
where
    D: serde::Deserializer<'de>,
{
    Ok(match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s,
        Some(other) => other.to_string(),
    })
}

/// One stream chunk; text borrows from the event where it can (no escapes), since a streamed
/// answer is hundreds of these.
#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(default, borrow)]
    choices: Vec<ChunkChoice<'a>>,
    usage: Option<WireUsage>,
    error: Option<Value>,
}

#[derive(Deserialize)]
struct ChunkChoice<'a> {
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    #[serde(borrow)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Default)]
struct Delta<'a> {
    #[serde(borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default, deserialize_with = "null_as_default")]
    tool_calls: Vec<DeltaToolCall>,
}

#[derive(Deserialize)]
struct DeltaToolCall {
    index: Option<usize>,
    id: Option<String>,
    function: Option<DeltaFunction>,
}

#[derive(Deserialize)]
struct DeltaFunction {
    name: Option<String>,
    #[serde(default, deserialize_with = "arguments_any")]
    arguments: String,
}

/// Builds the answer from stream chunks.
#[derive(Default)]
struct StreamAccumulator {
    content: String,
    calls: Vec<(Option<String>, String, String)>,
    usage: Usage,
    finish_reason: Option<String>,
    done: bool,
}

impl super::client::StreamAccumulator for StreamAccumulator {
    fn event(&mut self, event: &SseEvent, http: &HttpClient) -> Result<(), ModelError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        if data.is_empty() {
            return Ok(());
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(|e| {
            http.not_protocol(
                "a Chat Completions stream chunk",
                &e.to_string(),
                data.as_bytes(),
            )
        })?;
        if let Some(err) = chunk.error {
            let text = http.redact(&super::client::snippet(&err.to_string()));
            let message = format!(
                "{}: the server reported an error mid-stream: {text}",
                http.config.provider
            );
            // By its words: a grammar mismatch says `server_error` too but fails every time.
            return Err(retry::error_for(
                retry::classify(None, &text),
                message,
                None,
            ));
        }
        if let Some(u) = chunk.usage {
            self.usage = u.into();
        }
        for choice in chunk.choices {
            if let Some(delta) = choice.delta {
                if let Some(text) = delta.content {
                    self.content.push_str(&text);
                }
                for tc in delta.tool_calls {
                    let slot = match tc.index {
                        Some(i) => i,
                        None => match &tc.id {
                            // No index: a new id starts a call, no id continues the last one.
                            Some(id) => self
                                .calls
                                .iter()
                                .position(|c| c.0.as_deref() == Some(id))
                                .unwrap_or(self.calls.len()),
                            None => self.calls.len().saturating_sub(1),
                        },
                    };
                    if slot > 1024 {
                        return Err(http.not_protocol(
                            "a Chat Completions stream chunk",
                            "tool call index out of range",
                            data.as_bytes(),
                        ));
                    }
                    while self.calls.len() <= slot {
                        self.calls.push((None, String::new(), String::new()));
                    }
                    let call = &mut self.calls[slot];
                    if let Some(id) = tc.id {
                        call.0 = Some(id);
                    }
                    if let Some(f) = tc.function {
                        if let Some(name) = f.name {
                            call.1.push_str(&name);
                        }
                        call.2.push_str(&f.arguments);
                    }
                }
            }
            if let Some(reason) = choice.finish_reason {
                self.finish_reason = Some(reason.into_owned());
            }
        }
        Ok(())
    }

    fn stopped(&self) -> bool {
        self.done
    }

    /// Servers that send no `[DONE]` still end the answer with a finish reason.
    fn complete(&self) -> bool {
        self.done || self.finish_reason.is_some()
    }

    fn into_response(self, _http: &HttpClient) -> Result<ModelResponse, ModelError> {
        Ok(ModelResponse {
            content: self.content,
            tool_calls: self
                .calls
                .into_iter()
                .enumerate()
                .filter(|(_, c)| !c.1.is_empty())
                .map(|(i, (id, name, args))| ToolCall {
                    id: id.unwrap_or_else(|| format!("call_{i}")),
                    name,
                    arguments: parse_arguments(args),
                })
                .collect(),
            usage: self.usage,
            truncated: self.finish_reason.as_deref() == Some(LENGTH),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::settings::Protocol;
    use crate::model::ToolSpec;

    fn provider() -> OpenAi {
        OpenAi::new(HttpConfig::local(
            "openai",
            Protocol::Openai,
            "http://127.0.0.1:1/v1",
        ))
        .expect("client")
    }

    #[test]
    fn body_carries_system_tools_and_history() {
        let req = ModelRequest {
            model: "gpt-x".into(),
            agent: "a".into(),
            system: "sys".into(),
            messages: vec![
                Message::user("hi"),
                Message::assistant(
                    "",
                    vec![ToolCall {
                        id: "c1".into(),
                        name: "task".into(),
                        arguments: json!({"prompt": "p"}),
                    }],
                ),
                Message::tool("c1", "denied", true),
            ],
            tools: vec![ToolSpec {
                name: "task".into(),
                description: "d".into(),
                parameters: json!({"type": "object"}),
            }],
            tool_choice: ToolChoice::Required,
            temperature: Some(0.2),
            top_p: None,
            max_tokens: None,
            response_contract: None,
        };
        let body = provider().body(&req, true);
        assert_eq!(body["messages"][0]["role"], "system");
        assert_eq!(
            body["messages"][2]["tool_calls"][0]["function"]["arguments"],
            "{\"prompt\":\"p\"}"
        );
        assert_eq!(body["messages"][3]["tool_call_id"], "c1");
        assert_eq!(body["messages"][3]["content"], "Error: denied");
        assert_eq!(body["tools"][0]["function"]["name"], "task");
        assert_eq!(body["tool_choice"], "required");
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert_eq!(body["temperature"], 0.2);
        assert!(body.get("top_p").is_none());
        // `[providers.NAME] tool_choice = false`: the tools go, the field does not.
        let mut config = HttpConfig::local("llamacpp", Protocol::Openai, "http://127.0.0.1:1/v1");
        config.tool_choice = false;
        let body = OpenAi::new(config.clone())
            .expect("client")
            .body(&req, true);
        assert!(body["tools"].is_array());
        assert!(body.get("tool_choice").is_none(), "{body}");
        // Held back: described with `tool_choice: none`, or not sent to a server that takes
        // no `tool_choice` (it could call them).
        let held = ModelRequest {
            tool_choice: ToolChoice::None,
            ..req.clone()
        };
        let body = provider().body(&held, true);
        assert_eq!(body["tools"][0]["function"]["name"], "task");
        assert_eq!(body["tool_choice"], "none");
        let body = OpenAi::new(config).expect("client").body(&held, true);
        assert!(body.get("tools").is_none(), "{body}");
        assert!(body.get("tool_choice").is_none(), "{body}");
        // Without tools there is nothing to choose from.
        let bare = ModelRequest {
            tools: Vec::new(),
            ..req
        };
        assert!(provider().body(&bare, true).get("tool_choice").is_none());
    }

    #[test]
    fn parses_body_with_parallel_calls_and_null_content() {
        let body = br#"{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[
            {"id":"a","type":"function","function":{"name":"read","arguments":"{\"path\":\"x\"}"}},
            {"id":"b","type":"function","function":{"name":"grep","arguments":{"pattern":"y"}}}]}}],
            "usage":{"prompt_tokens":7,"completion_tokens":3}}"#;
        let r = provider().parse_body(body).expect("parse");
        assert_eq!(r.content, "");
        assert_eq!(r.tool_calls.len(), 2);
        assert_eq!(r.tool_calls[0].arguments, json!({"path": "x"}));
        assert_eq!(r.tool_calls[1].arguments, json!({"pattern": "y"}));
        assert_eq!(r.usage.total(), 10);
        assert!(matches!(
            provider().parse_body(b"<html>"),
            Err(ModelError::Fatal(_))
        ));
    }

    /// OpenAI and llama-server say how much of the prompt their cache served; a server that
    /// sends the details as `null`, or not at all, served none that it knows of.
    #[test]
    fn cached_prompt_tokens_are_read_from_the_usage_details() {
        let body = |details: &str| {
            format!(
                r#"{{"choices":[{{"message":{{"role":"assistant","content":"hi"}}}}],
                "usage":{{"prompt_tokens":900,"completion_tokens":3{details}}}}}"#
            )
        };
        let cached = provider()
            .parse_body(body(r#","prompt_tokens_details":{"cached_tokens":870}"#).as_bytes())
            .expect("parse");
        assert_eq!(cached.usage.input_tokens, 900);
        assert_eq!(cached.usage.cached_input_tokens, 870);
        for none in ["", r#","prompt_tokens_details":null"#] {
            let r = provider().parse_body(body(none).as_bytes()).expect("parse");
            assert_eq!(r.usage.cached_input_tokens, 0, "{none}");
        }
    }
}
