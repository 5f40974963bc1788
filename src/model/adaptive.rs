//! Falling back to textual `task(...)` calls when a server's chat template has no tool support.
//!
//! Such a server accepts the tool definitions and silently drops them: the model never sees the
//! tools, never makes a native call, and (prompted by our agent bodies) writes its delegations as
//! text, which would otherwise be taken as a final answer. [`AdaptiveTools`] wraps a provider
//! whose model is configured with tools and switches that model, for the rest of the session, to
//! [`TextualTools`] the first time it sees either sign:
//!
//! * the server says so: llama.cpp's `GET /props` reports `chat_template_caps.supports_tools =
//!   false` (newer builds; an older server, or any other, answers nothing usable and is left
//!   alone). Asked once, before the first request that carries tools;
//! * the model says so: tools (with `task`) were sent, the answer has no native call, this model
//!   has never made one, and the text holds a `task(...)` call. That answer is read the textual
//!   way at once, so the delegation is not lost.
//!
//! The switch is announced once, as a [`Notice::ToolsFallback`] (a `model.tools_fallback` event).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::notice::{self, Notice};
use super::openai::OpenAi;
use super::textual::{TextualTools, TASK_TOOL};
use super::{BoxFuture, Model, ModelError, ModelRequest, ModelResponse};

/// A provider that drops to textual task() calls when its server cannot do tools.
pub struct AdaptiveTools {
    native: Arc<dyn Model>,
    textual: TextualTools,
    /// Set for OpenAI-compatible servers, which may answer `GET /props`.
    probe: Option<Arc<OpenAi>>,
    probed: tokio::sync::OnceCell<()>,
    textual_mode: AtomicBool,
    seen_native_calls: AtomicBool,
}

impl AdaptiveTools {
    pub fn new(native: Arc<dyn Model>, probe: Option<Arc<OpenAi>>) -> Self {
        AdaptiveTools {
            textual: TextualTools::new(native.clone()),
            native,
            probe,
            probed: tokio::sync::OnceCell::new(),
            textual_mode: AtomicBool::new(false),
            seen_native_calls: AtomicBool::new(false),
        }
    }

    /// Whether the model has been switched to textual calls.
    pub fn is_textual(&self) -> bool {
        self.textual_mode.load(Ordering::Acquire)
    }

    /// Switches to textual calls; only the first switch is announced.
    fn switch(&self, model: &str, reason: &str) {
        if !self.textual_mode.swap(true, Ordering::AcqRel) {
            notice::send(Notice::ToolsFallback {
                provider: self.native.provider().to_string(),
                model: model.to_string(),
                reason: reason.to_string(),
            });
        }
    }

    async fn complete_adaptive(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        let delegates = request.callable_tools().iter().any(|t| t.name == TASK_TOOL);
        if !request.callable_tools().is_empty() && !self.is_textual() {
            if let Some(openai) = &self.probe {
                self.probed
                    .get_or_init(|| async {
                        if openai.server_supports_tools().await == Some(false) {
                            self.switch(
                                &request.model,
                                "the server reports that its chat template has no tool support \
                                 (GET /props: chat_template_caps.supports_tools = false); \
                                 delegations are now read from task(...) calls in the text",
                            );
                        }
                    })
                    .await;
            }
        }
        if self.is_textual() {
            return self.textual.complete(request).await;
        }
        let mut response = self.native.complete(request).await?;
        if !response.tool_calls.is_empty() {
            self.seen_native_calls.store(true, Ordering::Release);
            return Ok(response);
        }
        if delegates && !response.truncated && !self.seen_native_calls.load(Ordering::Acquire) {
            let calls = TextualTools::calls_in_answer(request, &response.content);
            if !calls.is_empty() {
                self.switch(
                    &request.model,
                    "tools were sent but the model wrote its task(...) calls as text: the \
                     server's chat template probably drops tools (llama.cpp: start it with \
                     --jinja); delegations are now read from the text",
                );
                response.tool_calls = calls;
            }
        }
        Ok(response)
    }
}

impl Model for AdaptiveTools {
    fn provider(&self) -> &str {
        self.native.provider()
    }

    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(self.complete_adaptive(request))
    }
}
