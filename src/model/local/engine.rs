//! The llama.cpp side of the `local` provider (cargo feature `local`): loading a GGUF once per
//! process, laying out the prompt, and decoding under the contract's grammar.
//!
//! Decoding runs on a blocking thread (llama.cpp computes on the CPU threads it is given), one
//! completion per model at a time. Each completion gets a fresh llama.cpp context (its KV
//! cache), so hops never see each other's tokens.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;
use serde_json::Value;

pub use super::error::EngineError;
use super::sample::{stop_at, GrammarMode, GrammarStats, Picker, Streamer};
use super::stream::PieceObserver;
use super::template::{self, Specials};
use super::{grammar, LocalError, LocalSettings, DEFAULT_CONTEXT, DEFAULT_MAX_TOKENS, PROVIDER};
use crate::contract::schema::SchemaSource;
use crate::model::textual::TextualTools;
use crate::model::{BoxFuture, Model, ModelError, ModelRequest, ModelResponse, Usage};

/// Tokens decoded per llama.cpp batch while reading the prompt.
const PROMPT_BATCH: usize = 512;
/// The least room for an answer worth starting.
const MIN_ANSWER_ROOM: u32 = 16;

/// llama.cpp's process-wide backend, initialised once (a second init is an error), with its
/// log silenced: the library never prints, and the errors that matter are named by us.
fn backend() -> Result<&'static LlamaBackend, EngineError> {
    static BACKEND: OnceLock<Result<LlamaBackend, EngineError>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            llama_cpp_2::send_logs_to_tracing(
                llama_cpp_2::LogOptions::default().with_logs_enabled(false),
            );
            LlamaBackend::init().map_err(|e| EngineError::Backend(e.to_string()))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// A loaded model and what the prompt needs from its metadata.
pub struct Loaded {
    model: LlamaModel,
    chat_template: String,
    specials: Specials,
    /// One completion at a time per model: two would compete for the same cores.
    busy: Mutex<()>,
}

/// Loads `path` once per process; later calls get the same model.
pub fn load(path: &Path) -> Result<Arc<Loaded>, LocalError> {
    static MODELS: OnceLock<Mutex<HashMap<PathBuf, Arc<Loaded>>>> = OnceLock::new();
    let key = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let models = MODELS.get_or_init(Default::default);
    // Held while loading, so two hops asking at once load the file once.
    let mut models = models.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(m) = models.get(&key) {
        return Ok(m.clone());
    }
    super::check_file(path)?;
    let engine = |reason: String| LocalError::Engine {
        path: path.to_path_buf(),
        reason,
    };
    let backend = backend().map_err(|e| engine(e.to_string()))?;
    let model =
        LlamaModel::load_from_file(backend, path, &LlamaModelParams::default()).map_err(|_| {
            LocalError::Load {
                path: path.to_path_buf(),
                architecture: super::gguf_architecture(path),
            }
        })?;
    let chat_template = model.meta_val_str("tokenizer.chat_template").map_err(|_| {
        engine(
            "the model has no chat template (GGUF metadata `tokenizer.chat_template`); use an \
             instruction-tuned model whose GGUF carries one"
                .into(),
        )
    })?;
    let piece = |t: LlamaToken| {
        String::from_utf8_lossy(&model.vocab().token_to_piece(t, true, None)).into_owned()
    };
    let specials = Specials {
        bos_token: piece(model.vocab().bos()),
        eos_token: piece(model.vocab().eos()),
    };
    let loaded = Arc::new(Loaded {
        model,
        chat_template,
        specials,
        busy: Mutex::new(()),
    });
    models.insert(key, loaded.clone());
    Ok(loaded)
}

/// What one completion asks of the engine.
#[derive(Debug, Clone)]
pub struct Generate<'a> {
    pub prompt: &'a str,
    pub grammar: Option<&'a str>,
    pub grammar_mode: GrammarMode,
    pub max_tokens: u32,
    pub temperature: f32,
    pub top_p: f32,
    pub seed: u32,
    pub stop: &'a [String],
    pub context: u32,
    pub threads: i32,
}

/// What one completion produced, with its timings.
#[derive(Debug, Clone, PartialEq)]
pub struct Generated {
    pub text: String,
    pub prompt_tokens: u32,
    pub output_tokens: u32,
    /// Stopped at `max_tokens` or the end of the context, not at the end of the answer.
    pub truncated: bool,
    pub prompt_seconds: f64,
    pub generate_seconds: f64,
    /// From the start of reading the prompt to the first token chosen.
    pub first_token_seconds: f64,
    pub grammar: GrammarStats,
}

impl Loaded {
    /// The model's training context, the most a context window can usefully be.
    pub fn n_ctx_train(&self) -> u32 {
        self.model.n_ctx_train()
    }

    /// The chat prompt for `system` and the turns, laid out by the model's template.
    pub fn prompt(
        &self,
        system: &str,
        messages: &[crate::model::Message],
    ) -> Result<String, EngineError> {
        Ok(template::render(
            &self.chat_template,
            system,
            messages,
            &self.specials,
        )?)
    }

    /// Decodes one answer, handing its text to `sink` as it comes. Blocking: call it from a
    /// blocking thread.
    pub fn generate(
        &self,
        g: &Generate<'_>,
        sink: Option<&mut dyn FnMut(&str)>,
    ) -> Result<Generated, EngineError> {
        let _busy = self.busy.lock().unwrap_or_else(|p| p.into_inner());
        let backend = backend()?;
        let vocab = self.model.vocab();
        // The template writes the special tokens (BOS included when the model wants one).
        let tokens = vocab.tokenize(g.prompt.as_bytes(), false, true);
        let prompt_tokens = tokens.len() as u32;
        if prompt_tokens == 0 {
            return Err(EngineError::EmptyPrompt);
        }
        if prompt_tokens + MIN_ANSWER_ROOM > g.context {
            return Err(EngineError::Overflow {
                prompt_tokens,
                context: g.context,
            });
        }
        let max_tokens = g.max_tokens.min(g.context - prompt_tokens);
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(g.context))
            .with_n_batch(PROMPT_BATCH as u32)
            .with_n_ubatch(PROMPT_BATCH as u32)
            .with_n_threads(g.threads)
            .with_n_threads_batch(g.threads);
        let mut ctx =
            self.model
                .new_context(backend, params)
                .map_err(|e| EngineError::Context {
                    context: g.context,
                    reason: e.to_string(),
                })?;
        let mut picker = Picker::new(
            &self.model,
            g.grammar,
            g.grammar_mode,
            g.temperature,
            g.top_p,
            g.seed,
        )?;
        let decode = |step: &'static str| {
            move |e: &dyn std::fmt::Display| EngineError::Decode {
                step,
                reason: e.to_string(),
            }
        };

        let started = Instant::now();
        let mut batch = LlamaBatch::new(PROMPT_BATCH, 1);
        let last = tokens.len() - 1;
        for (chunk_no, chunk) in tokens.chunks(PROMPT_BATCH).enumerate() {
            batch.clear();
            for (i, token) in chunk.iter().enumerate() {
                let pos = chunk_no * PROMPT_BATCH + i;
                batch
                    .add(*token, pos as i32, &[0], pos == last)
                    .map_err(|e| decode("batch the prompt")(&e))?;
            }
            ctx.decode(&mut batch)
                .map_err(|e| decode("read the prompt")(&e))?;
        }
        let prompt_seconds = started.elapsed().as_secs_f64();

        let generating = Instant::now();
        let mut first_token_seconds = None;
        let mut stream = Streamer::new(g.stop, sink);
        let mut bytes: Vec<u8> = Vec::new();
        let mut output_tokens = 0u32;
        let mut truncated = true;
        let mut pos = prompt_tokens as i32;
        let mut logits_at = batch.n_tokens() - 1;
        while output_tokens < max_tokens {
            let token = picker.next(&ctx, logits_at)?;
            first_token_seconds.get_or_insert_with(|| started.elapsed().as_secs_f64());
            if vocab.is_eog(token) {
                truncated = false;
                break;
            }
            output_tokens += 1;
            vocab.token_to_piece_into(token, &mut bytes, false, None);
            if let Some(cut) = stop_at(&bytes, g.stop) {
                bytes.truncate(cut);
                truncated = false;
                break;
            }
            stream.feed(&bytes);
            if output_tokens == max_tokens {
                break;
            }
            batch.clear();
            batch
                .add(token, pos, &[0], true)
                .map_err(|e| decode("batch the answer")(&e))?;
            pos += 1;
            logits_at = 0;
            ctx.decode(&mut batch)
                .map_err(|e| decode("decode the answer")(&e))?;
        }
        stream.finish(&bytes);
        Ok(Generated {
            text: String::from_utf8_lossy(&bytes).into_owned(),
            prompt_tokens,
            output_tokens,
            truncated,
            prompt_seconds,
            generate_seconds: generating.elapsed().as_secs_f64(),
            first_token_seconds: first_token_seconds.unwrap_or(prompt_seconds),
            grammar: picker.stats,
        })
    }
}

/// The `local` provider's model: a GGUF file, its settings, the project it serves.
pub struct LocalModel {
    path: PathBuf,
    settings: LocalSettings,
    project_root: PathBuf,
}

impl LocalModel {
    pub fn new(path: PathBuf, settings: LocalSettings, project_root: PathBuf) -> Self {
        LocalModel {
            path,
            settings,
            project_root,
        }
    }

    /// The JSON contract's schema, loaded (a path is read from the project).
    fn schema(&self, request: &ModelRequest) -> Result<Option<Value>, ModelError> {
        let Some(json) = request
            .response_contract
            .as_ref()
            .and_then(|c| c.contract.json.as_ref())
        else {
            return Ok(None);
        };
        match &json.schema {
            SchemaSource::Inline(v) => Ok(Some(v.clone())),
            SchemaSource::Path(name) => {
                let project = crate::project::Project::open(&self.project_root)
                    .map_err(|e| ModelError::Fatal(e.to_string()))?;
                crate::contract::schema::read_schema(&project, name)
                    .map(Some)
                    .map_err(|e| ModelError::Fatal(e.to_string()))
            }
        }
    }

    /// The grammar for `request`, `None` when decoding is free (no contract, or
    /// `grammar = false`). A schema nothing could match is named with its place.
    fn grammar(&self, request: &ModelRequest) -> Result<Option<String>, ModelError> {
        if !self.settings.grammar.unwrap_or(true) {
            return Ok(None);
        }
        let schema = self.schema(request)?;
        grammar::for_request(request, schema.as_ref()).map_err(|e| {
            let file = match request
                .response_contract
                .as_ref()
                .and_then(|c| c.contract.json.as_ref())
                .map(|j| &j.schema)
            {
                Some(SchemaSource::Path(name)) => format!("schema file `{name}`"),
                _ => format!("the contract in agent `{}`'s frontmatter", request.agent),
            };
            ModelError::Fatal(format!(
                "{file}: no grammar can be derived from it: {e}; fix the schema (or set \
                 [providers.local] grammar = false to decode without one)"
            ))
        })
    }

    /// What the engine is asked for `request` and its `prompt`.
    fn generate_params<'a>(
        &'a self,
        request: &ModelRequest,
        prompt: &'a str,
        grammar: Option<&'a str>,
        n_ctx_train: u32,
    ) -> Generate<'a> {
        let context = self
            .settings
            .context
            .unwrap_or(DEFAULT_CONTEXT)
            .min(n_ctx_train.max(MIN_ANSWER_ROOM * 2));
        let threads = self.settings.threads.map(|t| t as i32).unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get() as i32)
                .unwrap_or(1)
        });
        Generate {
            prompt,
            grammar,
            grammar_mode: if self.settings.grammar_shortlist.unwrap_or(true) {
                GrammarMode::Shortlist
            } else {
                GrammarMode::Full
            },
            max_tokens: request
                .max_tokens
                .or(self.settings.max_tokens)
                .unwrap_or(DEFAULT_MAX_TOKENS),
            temperature: request
                .temperature
                .or(self.settings.temperature)
                .unwrap_or(0.0) as f32,
            top_p: request.top_p.unwrap_or(0.95) as f32,
            seed: self.settings.seed.unwrap_or(0),
            stop: &self.settings.stop,
            context,
            threads,
        }
    }

    fn complete_blocking(
        &self,
        request: &ModelRequest,
        sink: Option<PieceObserver>,
    ) -> Result<ModelResponse, ModelError> {
        let fatal = |e: EngineError| ModelError::Fatal(format!("{}: {e}", self.path.display()));
        let loaded = load(&self.path).map_err(|e| ModelError::Fatal(e.to_string()))?;
        let grammar = self.grammar(request)?;
        let textual = TextualTools::textual_request(request);
        let prompt = loaded
            .prompt(&textual.system, &textual.messages)
            .map_err(fatal)?;
        let params =
            self.generate_params(request, &prompt, grammar.as_deref(), loaded.n_ctx_train());
        let mut send = |piece: &str| {
            if let Some(sink) = &sink {
                sink(piece)
            }
        };
        let generated = loaded
            .generate(&params, Some(&mut send))
            .map_err(|e| match e {
                EngineError::Overflow {
                    prompt_tokens,
                    context,
                } => ModelError::ContextOverflow {
                    message: format!(
                        "{}: the prompt of agent `{}` is {prompt_tokens} tokens and the context \
                         window {context} (raise [providers.local] context, up to the model's \
                         {} training tokens)",
                        self.path.display(),
                        request.agent,
                        loaded.n_ctx_train()
                    ),
                },
                other => fatal(other),
            })?;
        let mut response = ModelResponse {
            content: generated.text,
            tool_calls: Vec::new(),
            usage: Usage {
                input_tokens: generated.prompt_tokens as u64,
                output_tokens: generated.output_tokens as u64,
            },
            truncated: generated.truncated,
        };
        if request
            .tools
            .iter()
            .any(|t| t.name == crate::model::textual::TASK_TOOL)
            && !response.truncated
        {
            response.tool_calls = TextualTools::calls_in_answer(request, &response.content);
        }
        Ok(response)
    }
}

impl Model for LocalModel {
    fn provider(&self) -> &str {
        PROVIDER
    }

    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(async move {
            let this = LocalModel {
                path: self.path.clone(),
                settings: self.settings.clone(),
                project_root: self.project_root.clone(),
            };
            let request = request.clone();
            // The observer is task-local: take it along to the blocking thread.
            let sink = super::stream::current();
            tokio::task::spawn_blocking(move || this.complete_blocking(&request, sink))
                .await
                .map_err(|e| ModelError::Fatal(format!("local model thread: {e}")))?
        })
    }
}
