//! Why the engine could not produce an answer: one type for the engine and its sampler (kept
//! apart from both, so neither imports the other back).

use super::template;

/// Why the engine could not produce an answer. `LocalModel` turns each into a
/// [`crate::model::ModelError`] naming the model file.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EngineError {
    #[error("llama.cpp could not start: {0}")]
    Backend(String),
    #[error(transparent)]
    Template(#[from] template::TemplateError),
    #[error("the prompt is empty")]
    EmptyPrompt,
    /// The prompt leaves no room for an answer in the context window.
    #[error("the prompt is {prompt_tokens} tokens and the context window {context}")]
    Overflow { prompt_tokens: u32, context: u32 },
    #[error("llama.cpp could not make a context of {context} tokens: {reason}")]
    Context { context: u32, reason: String },
    #[error("llama.cpp could not {step}: {reason}")]
    Decode { step: &'static str, reason: String },
    #[error(
        "llama.cpp rejected the grammar derived from the contract ({0}); run with \
         [providers.local] grammar = false to decode without it, and report the contract"
    )]
    Grammar(String),
    #[error(
        "the grammar admits no next token (the contract's grammar cannot be completed from \
         here); run with [providers.local] grammar = false and report the contract"
    )]
    NoAdmissibleToken,
    /// The caller stopped waiting (its hop timed out, its command ended) before the answer.
    #[error("the completion was cancelled: nobody waits for its answer any more")]
    Cancelled,
}
