//! Models: the one trait the runtime talks to, and its request and response types.
//!
//! Providers see requests and responses only, never agent files or the event log, so a provider
//! can be swapped (scripted for tests, offline by default, real APIs) without the runtime
//! noticing. Anything a provider needs to know about the agent travels in the request.

pub mod adaptive;
pub mod anthropic;
pub mod client;
pub mod embeddings;
pub mod local;
pub mod notice;
pub mod openai;
pub mod recover;
pub mod retry;
pub mod secrets;
pub mod settings;
pub mod sse;
pub mod textual;

use serde::{Deserialize, Serialize};
use std::future::Future;
use std::pin::Pin;

use crate::contract::Contract;

pub mod offline;

pub use offline::OfflineModel;

/// Who said a message in the conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Assistant,
    Tool,
}

/// A tool call the model asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Provider-assigned id, echoed back on the result so parallel calls pair up.
    pub id: String,
    pub name: String,
    pub arguments: serde_json::Value,
}

/// One turn of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    #[serde(default)]
    pub content: String,
    /// Calls an assistant turn made.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// The call a tool turn answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// A tool turn that reports a refusal or failure rather than a result.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
}

impl Message {
    pub fn user(content: impl Into<String>) -> Self {
        Message {
            role: Role::User,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            is_error: false,
        }
    }

    pub fn assistant(content: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        Message {
            role: Role::Assistant,
            content: content.into(),
            tool_calls,
            tool_call_id: None,
            is_error: false,
        }
    }

    pub fn tool(call_id: impl Into<String>, content: impl Into<String>, is_error: bool) -> Self {
        Message {
            role: Role::Tool,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: Some(call_id.into()),
            is_error,
        }
    }
}

/// A JSON Schema annotation (an unknown keyword to validators, which 2020-12 keeps as an
/// annotation): `true` on a string schema says its value names a file inside the project that
/// the runtime will check exists. The `local` grammar writes such a string as one of the files
/// the conversation named, so a small model cannot fill it with a shape's placeholder (the
/// 1.5B planner put `...` and `src/workflow/command/...` into its `scope`). Hosted providers
/// pass it on as the annotation it is.
pub const PROJECT_FILE_KEYWORD: &str = "x-project-file";

/// A tool the model may call, described as a JSON schema (the shape both wire protocols use).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: serde_json::Value,
}

/// The envelope the answer must honour, with the ids the runtime allocated for this hop.
///
/// Real providers may put it into the prompt or ignore it (the rendered system prompt already
/// says the same in words); the offline provider builds its answer from it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResponseContract {
    pub contract: Contract,
    pub message_id: String,
    pub correlation_id: String,
    /// RFC 3339 UTC time the runtime stamped on the hop.
    pub timestamp: String,
}

/// Whether a turn may end without a tool call: the `tool_choice` of the OpenAI wire (`auto`,
/// `required`), Anthropic's `auto`/`any`. An agent's frontmatter `tool_choice: required` asks for
/// it until the agent has made its first call; then it is `auto` again, as the OpenAI Agents
/// SDK's `reset_tool_choice` does, or the agent could never give its answer.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum ToolChoice {
    /// The model decides (the default).
    #[default]
    Auto,
    /// The turn must be a tool call.
    Required,
    /// The tools are described as on the turns before, but this turn must not call one (the
    /// OpenAI wire's `none`, Anthropic's `none`): the runtime holds them back for a final
    /// answer. Described rather than dropped so that the prompt opens as it did, and the
    /// provider's prompt cache (a local model's KV cache, llama-server's slot) serves it; dropped,
    /// the tools' text changed the system prompt and a 7k-token conversation was read again.
    None,
}

impl ToolChoice {
    pub fn is_auto(&self) -> bool {
        *self == ToolChoice::Auto
    }
}

/// Everything a provider gets for one completion.
#[derive(Debug, Clone, Serialize)]
pub struct ModelRequest {
    /// The model name after the provider prefix (`offline/default` → `default`).
    pub model: String,
    /// The agent's name, for scripted providers that play per-agent scripts and for logs.
    pub agent: String,
    pub system: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
    /// `Required` only when `tools` is not empty; a provider that cannot force a call sends
    /// the tools alone and the runtime holds the agent to it.
    #[serde(skip_serializing_if = "ToolChoice::is_auto")]
    pub tool_choice: ToolChoice,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// The agent's own output limit (frontmatter `max_tokens:`); wins over the provider's
    /// configured or default limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_contract: Option<ResponseContract>,
}

impl ModelRequest {
    /// The tools this turn may call: none under [`ToolChoice::None`], whose tools are only
    /// described.
    pub fn callable_tools(&self) -> &[ToolSpec] {
        if self.tool_choice == ToolChoice::None {
            &[]
        } else {
            &self.tools
        }
    }

    /// The request without the tools it may not call, for a provider that cannot describe
    /// tools without offering them.
    pub fn callable_only(&self) -> std::borrow::Cow<'_, ModelRequest> {
        if self.tool_choice == ToolChoice::None {
            std::borrow::Cow::Owned(ModelRequest {
                tools: Vec::new(),
                tool_choice: ToolChoice::Auto,
                ..self.clone()
            })
        } else {
            std::borrow::Cow::Borrowed(self)
        }
    }
}

/// Token counts as the provider reported them (or estimated them, for local providers).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Of `input_tokens`, those read from the provider's prompt cache rather than computed
    /// again (OpenAI's `prompt_tokens_details.cached_tokens`, Anthropic's
    /// `cache_read_input_tokens`, the local engine's kept KV cache): how much of each turn's
    /// prompt the cache spared. Zero when the provider does not say.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_input_tokens: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Usage {
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cached_input_tokens += other.cached_input_tokens;
    }
}

/// What a provider answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelResponse {
    pub content: String,
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default)]
    pub usage: Usage,
    /// The answer stopped at the output limit (OpenAI's `finish_reason: "length"`, Anthropic's
    /// `stop_reason: "max_tokens"`): it is not whole, and the runtime must not take it as final.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

/// What the runtime says after a cut-off answer to get the rest. Textual tool parsing
/// recognises it, so a `task(` call split across the cut is read as one call.
pub const CONTINUE_PROMPT: &str = "Your previous answer was cut off at the output token limit. \
     Continue exactly where it stopped, without repeating anything or starting over.";

/// Why a completion failed; the tier decides whether the runtime retries.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ModelError {
    /// Worth retrying: connection errors, timeouts, rate limits, 5xx.
    #[error("transient model failure: {message}")]
    Transient {
        message: String,
        /// Server-requested delay before the next attempt.
        retry_after: Option<std::time::Duration>,
    },
    /// Not worth retrying: bad request, bad credentials, a body that is not the protocol, a
    /// script that ran out.
    #[error("{0}")]
    Fatal(String),
    /// The prompt plus the room asked for the answer does not fit the model's context window.
    /// Not retried (the same request overflows again), and not a wrong model name or missing
    /// tool support either: the user has to make the conversation fit.
    #[error(
        "{message}. The conversation does not fit the model's context window: give the agent a \
         shorter task (or split it across subagents), start the server with a larger context \
         (llama.cpp --ctx-size, Ollama num_ctx, vLLM --max-model-len), or lower max_tokens \
         (agent frontmatter `max_tokens:` or [providers.NAME] max_tokens)"
    )]
    ContextOverflow { message: String },
}

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A language model, as the runtime sees it.
pub trait Model: Send + Sync {
    /// The provider's name (`scripted`, `offline`, `openai`, `anthropic`), for events.
    fn provider(&self) -> &str;

    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>>;
}

pub mod registry;
pub mod scripted;

pub use registry::{ProviderContext, ProviderFactory, Registry, RegistryError};
pub use scripted::ScriptedModel;

/// Separates a primary's task from the clarifying question it asked and the user's answer, which
/// `switchboard resume --answer` appends (the offline analyst reads the task up to it). Defined
/// here, not in the runtime, because providers read it and must not depend on the runtime.
pub const ANSWER_MARK: &str = "\n\n---\nYou asked the user: ";

/// Starts the worker's answer in the task the runtime gives a validator (`validator:`); the
/// task the worker was given comes before it. Providers (the offline validator) split on it.
pub const VALIDATION_MARK: &str = "\n\n---\nThe answer to review:\n";

/// Starts the part of a pipeline worker's task that says which events it may emit (a JSON
/// object: event type → schema); what came before is its input.
pub const PIPELINE_MARK: &str = "\n\n---\nEmit pipeline events. Allowed (type -> JSON Schema):\n";
