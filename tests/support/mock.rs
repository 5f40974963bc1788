//! An in-process mock of both wire protocols on 127.0.0.1, for tests and benches.
//!
//! Tests queue replies; each request takes the next one. An [`Reply::Answer`] is rendered in the
//! protocol the request used (path `/v1/chat/completions` or `/v1/messages`) and as SSE or one
//! JSON body depending on the request's `stream` flag, so one scenario runs four ways.

#![allow(dead_code)]

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use axum::Router;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

/// Which wire protocol a test speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proto {
    OpenAi,
    Anthropic,
}

/// A tool call the mock model makes.
#[derive(Debug, Clone)]
pub struct Call {
    pub id: String,
    pub name: String,
    pub arguments: Value,
}

pub fn call(id: &str, name: &str, arguments: Value) -> Call {
    Call {
        id: id.into(),
        name: name.into(),
        arguments,
    }
}

#[derive(Debug, Clone)]
pub enum Reply {
    /// A model answer, rendered per protocol and stream flag.
    Answer {
        text: String,
        calls: Vec<Call>,
        input_tokens: u64,
        output_tokens: u64,
    },
    /// An HTTP status with a body and extra headers.
    Status {
        status: u16,
        body: String,
        headers: Vec<(String, String)>,
    },
    /// 200 with this body verbatim and this content type.
    Raw { content_type: String, body: String },
    /// The streamed answer, broken off after `keep` bytes (the connection errors out).
    CutStream { answer: Box<Reply>, keep: usize },
    /// The streamed answer's first `keep` bytes, then silence forever.
    StallStream { answer: Box<Reply>, keep: usize },
    /// Never answers at all.
    Hang,
    /// The answer cut off by the output limit: OpenAI's `finish_reason: "length"`, Anthropic's
    /// `stop_reason: "max_tokens"`, streamed or not.
    Truncated(Box<Reply>),
}

/// `reply` as the server sends it when the answer hit `max_tokens`.
pub fn truncated(reply: Reply) -> Reply {
    Reply::Truncated(Box::new(reply))
}

/// 200 with this SSE text verbatim (wire bytes copied from a real server).
pub fn raw_sse(body: &str) -> Reply {
    Reply::Raw {
        content_type: "text/event-stream".into(),
        body: body.into(),
    }
}

pub fn answer(text: &str, calls: Vec<Call>) -> Reply {
    Reply::Answer {
        text: text.into(),
        calls,
        input_tokens: 11,
        output_tokens: 7,
    }
}

pub fn status(code: u16, body: &str) -> Reply {
    Reply::Status {
        status: code,
        body: body.into(),
        headers: Vec::new(),
    }
}

/// One request the mock received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Recorded {
    /// How many tools the request lets the model call: those it sends, or none when its
    /// `tool_choice` is `none` (the runtime holding the tools back for a final answer still
    /// describes them, so the prompt and the server's cache stay as they were).
    pub fn callable_tools(&self) -> usize {
        if self.body["tool_choice"] == "none" {
            return 0;
        }
        self.body["tools"].as_array().map_or(0, |t| t.len())
    }

    /// The text of the request's last message (what the runtime said last: a repair, an ask,
    /// a tool result); empty when there is none.
    pub fn last_content(&self) -> String {
        self.body["messages"]
            .as_array()
            .and_then(|m| m.last())
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default()
            .to_string()
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Default)]
struct State {
    replies: VecDeque<Reply>,
    /// Served when the queue is empty (benches reuse one answer).
    repeat: Option<Reply>,
    requests: Vec<Recorded>,
    record: bool,
    /// What `GET …/props` answers (llama.cpp's server info); 404 when unset.
    props: Option<Value>,
    /// How many `GET …/props` came.
    props_requests: usize,
    /// Answers `POST …/embeddings` (OpenAI shape) with one vector per input; unset, such a
    /// request takes the next queued reply like any other.
    embedder: Option<Embedder>,
}

/// A text's vector, for [`Mock::set_embeddings`].
pub type Embedder = Arc<dyn Fn(&str) -> Vec<f32> + Send + Sync>;

#[derive(Clone)]
pub struct Mock {
    pub addr: SocketAddr,
    state: Arc<Mutex<State>>,
}

impl Mock {
    /// Starts a mock on an ephemeral 127.0.0.1 port in the current tokio runtime.
    pub async fn start() -> Mock {
        let state = Arc::new(Mutex::new(State {
            record: true,
            ..State::default()
        }));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1");
        let addr = listener.local_addr().expect("local addr");
        let shared = state.clone();
        let app = Router::new().fallback(
            move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
                let state = shared.clone();
                async move { handle(state, method, uri, headers, body).await }
            },
        );
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Mock { addr, state }
    }

    /// Base URL for the protocol: OpenAI's includes `/v1`, Anthropic's does not.
    pub fn base_url(&self, proto: Proto) -> String {
        match proto {
            Proto::OpenAi => format!("http://{}/v1", self.addr),
            Proto::Anthropic => format!("http://{}", self.addr),
        }
    }

    pub fn push(&self, reply: Reply) -> &Self {
        self.state
            .lock()
            .expect("mock state")
            .replies
            .push_back(reply);
        self
    }

    pub fn repeat(&self, reply: Reply) {
        let mut s = self.state.lock().expect("mock state");
        s.repeat = Some(reply);
        s.record = false;
    }

    /// Makes `GET /props` answer `props`, as llama.cpp's server does.
    pub fn set_props(&self, props: Value) {
        self.state.lock().expect("mock state").props = Some(props);
    }

    /// Makes `POST …/embeddings` answer `{"data": [{"embedding": f(input), "index": i}, …]}`.
    pub fn set_embeddings(&self, f: impl Fn(&str) -> Vec<f32> + Send + Sync + 'static) {
        self.state.lock().expect("mock state").embedder = Some(Arc::new(f));
    }

    /// How many times `GET /props` was asked.
    pub fn props_requests(&self) -> usize {
        self.state.lock().expect("mock state").props_requests
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.state.lock().expect("mock state").requests.clone()
    }
}

async fn handle(
    state: Arc<Mutex<State>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if method == Method::GET && uri.path().ends_with("/props") {
        // Server info, as llama.cpp serves it; never takes a queued reply.
        let mut s = state.lock().expect("mock state");
        s.props_requests += 1;
        return match &s.props {
            Some(props) => plain(200, "application/json", &props.to_string()),
            None => plain(404, "text/plain", "Not Found"),
        };
    }
    let proto = if uri.path().ends_with("/messages") {
        Proto::Anthropic
    } else {
        Proto::OpenAi
    };
    let parsed: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let stream = parsed["stream"].as_bool().unwrap_or(false);
    let reply = {
        let mut s = state.lock().expect("mock state");
        if s.record {
            s.requests.push(Recorded {
                path: uri.path().to_string(),
                headers: headers
                    .iter()
                    .map(|(n, v)| {
                        (
                            n.as_str().to_string(),
                            String::from_utf8_lossy(v.as_bytes()).into_owned(),
                        )
                    })
                    .collect(),
                body: parsed.clone(),
            });
        }
        if uri.path().ends_with("/embeddings") {
            if let Some(embed) = &s.embedder {
                let inputs: Vec<&str> = match &parsed["input"] {
                    Value::String(one) => vec![one.as_str()],
                    Value::Array(many) => many.iter().filter_map(Value::as_str).collect(),
                    _ => Vec::new(),
                };
                let data: Vec<Value> = inputs
                    .iter()
                    .enumerate()
                    .map(|(i, text)| json!({"object": "embedding", "index": i, "embedding": embed(text)}))
                    .collect();
                let body = json!({"object": "list", "data": data, "model": parsed["model"]});
                return plain(200, "application/json", &body.to_string());
            }
        }
        s.replies.pop_front().or_else(|| s.repeat.clone())
    };
    let Some(reply) = reply else {
        return plain(
            500,
            "application/json",
            "{\"error\":\"mock ran out of replies\"}",
        );
    };
    render(reply, proto, stream, &headers).await
}

fn plain(code: u16, content_type: &str, body: &str) -> Response {
    Response::builder()
        .status(StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .header("content-type", content_type)
        .body(Body::from(body.to_string()))
        .expect("response")
}

async fn render(reply: Reply, proto: Proto, stream: bool, headers: &HeaderMap) -> Response {
    match reply {
        Reply::Truncated(_) | Reply::Answer { .. } if !stream => plain(
            200,
            "application/json",
            &answer_json(&reply, proto).to_string(),
        ),
        Reply::Truncated(_) | Reply::Answer { .. } => {
            let text = answer_sse(&reply, proto);
            sse_response(chunks(text.into_bytes(), 64), None)
        }
        Reply::Status {
            status,
            body,
            headers: extra,
        } => {
            // Echo the credentials back, as a careless server might: the client must redact.
            let echoed = headers
                .get("authorization")
                .or_else(|| headers.get("x-api-key"))
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            let body = body.replace("{auth}", echoed);
            let mut builder = Response::builder()
                .status(StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
                .header("content-type", "application/json");
            for (n, v) in extra {
                builder = builder.header(n, v);
            }
            builder.body(Body::from(body)).expect("response")
        }
        Reply::Raw { content_type, body } => plain(200, &content_type, &body),
        Reply::CutStream { answer, keep } => {
            let mut bytes = answer_sse(&answer, proto).into_bytes();
            bytes.truncate(keep);
            sse_response(chunks(bytes, 64), Some(false))
        }
        Reply::StallStream { answer, keep } => {
            let mut bytes = answer_sse(&answer, proto).into_bytes();
            bytes.truncate(keep);
            sse_response(chunks(bytes, 64), Some(true))
        }
        Reply::Hang => std::future::pending().await,
    }
}

fn chunks(bytes: Vec<u8>, size: usize) -> Vec<Bytes> {
    bytes.chunks(size).map(Bytes::copy_from_slice).collect()
}

/// `end`: None ends cleanly, Some(false) errors out (a cut), Some(true) stalls forever.
fn sse_response(parts: Vec<Bytes>, end: Option<bool>) -> Response {
    use futures_util::stream::{self, StreamExt};
    let items = stream::iter(parts.into_iter().map(Ok::<Bytes, std::io::Error>));
    let body = match end {
        None => Body::from_stream(items),
        Some(false) => Body::from_stream(items.chain(stream::once(async {
            Err(std::io::Error::other("mock cut the stream"))
        }))),
        Some(true) => Body::from_stream(items.chain(stream::pending())),
    };
    Response::builder()
        .status(200)
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(body)
        .expect("response")
}

fn parts(reply: &Reply) -> (&str, &[Call], u64, u64) {
    match reply {
        Reply::Truncated(inner) => parts(inner),
        Reply::Answer {
            text,
            calls,
            input_tokens,
            output_tokens,
        } => (text, calls, *input_tokens, *output_tokens),
        _ => ("", &[], 0, 0),
    }
}

/// Why the answer ended, in the protocol's words.
fn finish_reason(reply: &Reply, proto: Proto) -> &'static str {
    let calls = !parts(reply).1.is_empty();
    match (proto, reply, calls) {
        (Proto::OpenAi, Reply::Truncated(_), _) => "length",
        (Proto::Anthropic, Reply::Truncated(_), _) => "max_tokens",
        (Proto::OpenAi, _, true) => "tool_calls",
        (Proto::OpenAi, _, false) => "stop",
        (Proto::Anthropic, _, true) => "tool_use",
        (Proto::Anthropic, _, false) => "end_turn",
    }
}

/// The non-streamed body of an answer.
pub fn answer_json(reply: &Reply, proto: Proto) -> Value {
    let (text, calls, input, output) = parts(reply);
    match proto {
        Proto::OpenAi => {
            let tool_calls: Vec<Value> = calls
                .iter()
                .map(|c| {
                    json!({"id": c.id, "type": "function",
                           "function": {"name": c.name, "arguments": c.arguments.to_string()}})
                })
                .collect();
            let mut message = json!({"role": "assistant",
                "content": if text.is_empty() { Value::Null } else { json!(text) }});
            if !tool_calls.is_empty() {
                message["tool_calls"] = Value::Array(tool_calls);
            }
            json!({
                "id": "chatcmpl-1", "object": "chat.completion", "model": "mock",
                "choices": [{"index": 0, "message": message,
                    "finish_reason": finish_reason(reply, proto)}],
                "usage": {"prompt_tokens": input, "completion_tokens": output,
                          "total_tokens": input + output}
            })
        }
        Proto::Anthropic => {
            let mut content = Vec::new();
            if !text.is_empty() {
                content.push(json!({"type": "text", "text": text}));
            }
            for c in calls {
                content.push(
                    json!({"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}),
                );
            }
            json!({
                "id": "msg_1", "type": "message", "role": "assistant", "model": "mock",
                "content": content,
                "stop_reason": finish_reason(reply, proto),
                "usage": {"input_tokens": input, "output_tokens": output}
            })
        }
    }
}

/// Splits `s` into about `n` pieces on char boundaries.
fn pieces(s: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    if chars.is_empty() {
        return Vec::new();
    }
    let size = chars.len().div_ceil(n.max(1));
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

/// The SSE text of an answer, its text in 16 deltas.
pub fn answer_sse(reply: &Reply, proto: Proto) -> String {
    answer_sse_with(reply, proto, 16)
}

/// The SSE text of an answer, its text in `deltas` deltas (a real server sends about one per
/// token).
pub fn answer_sse_with(reply: &Reply, proto: Proto, deltas: usize) -> String {
    let (text, calls, input, output) = parts(reply);
    let mut out = String::new();
    let mut data = |event: Option<&str>, v: Value| {
        if let Some(e) = event {
            out.push_str("event: ");
            out.push_str(e);
            out.push('\n');
        }
        out.push_str("data: ");
        out.push_str(&v.to_string());
        out.push_str("\n\n");
    };
    match proto {
        Proto::OpenAi => {
            let chunk = |delta: Value, finish: Value| {
                json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "mock",
                       "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
            };
            data(
                None,
                chunk(json!({"role": "assistant", "content": ""}), Value::Null),
            );
            for p in pieces(text, deltas) {
                data(None, chunk(json!({"content": p}), Value::Null));
            }
            for (i, c) in calls.iter().enumerate() {
                data(
                    None,
                    chunk(
                        json!({"tool_calls": [{"index": i, "id": c.id, "type": "function",
                               "function": {"name": c.name, "arguments": ""}}]}),
                        Value::Null,
                    ),
                );
                for p in pieces(&c.arguments.to_string(), 3) {
                    data(
                        None,
                        chunk(
                            json!({"tool_calls": [{"index": i, "function": {"arguments": p}}]}),
                            Value::Null,
                        ),
                    );
                }
            }
            data(None, chunk(json!({}), json!(finish_reason(reply, proto))));
            data(
                None,
                json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [],
                       "usage": {"prompt_tokens": input, "completion_tokens": output,
                                 "total_tokens": input + output}}),
            );
            out.push_str("data: [DONE]\n\n");
        }
        Proto::Anthropic => {
            data(
                Some("message_start"),
                json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
                    "role": "assistant", "model": "mock", "content": [], "stop_reason": null,
                    "usage": {"input_tokens": input, "output_tokens": 1}}}),
            );
            data(Some("ping"), json!({"type": "ping"}));
            let mut index = 0;
            if !text.is_empty() {
                data(
                    Some("content_block_start"),
                    json!({"type": "content_block_start", "index": index,
                           "content_block": {"type": "text", "text": ""}}),
                );
                for p in pieces(text, deltas) {
                    data(
                        Some("content_block_delta"),
                        json!({"type": "content_block_delta", "index": index,
                               "delta": {"type": "text_delta", "text": p}}),
                    );
                }
                data(
                    Some("content_block_stop"),
                    json!({"type": "content_block_stop", "index": index}),
                );
                index += 1;
            }
            for c in calls {
                data(
                    Some("content_block_start"),
                    json!({"type": "content_block_start", "index": index,
                           "content_block": {"type": "tool_use", "id": c.id, "name": c.name,
                                             "input": {}}}),
                );
                for p in pieces(&c.arguments.to_string(), 3) {
                    data(
                        Some("content_block_delta"),
                        json!({"type": "content_block_delta", "index": index,
                               "delta": {"type": "input_json_delta", "partial_json": p}}),
                    );
                }
                data(
                    Some("content_block_stop"),
                    json!({"type": "content_block_stop", "index": index}),
                );
                index += 1;
            }
            data(
                Some("message_delta"),
                json!({"type": "message_delta", "delta": {"stop_reason": finish_reason(reply, proto)},
                       "usage": {"output_tokens": output}}),
            );
            data(Some("message_stop"), json!({"type": "message_stop"}));
        }
    }
    out
}
