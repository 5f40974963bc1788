//! The llama.cpp side of the `local` provider (cargo feature `local`): loading a GGUF once per
//! process, laying out the prompt, and decoding under the contract's grammar.
//!
//! Each model has one decoding thread, which owns its llama.cpp context and runs one completion
//! at a time (llama.cpp computes on the CPU threads it is given; two completions would compete
//! for them). The context's KV cache is kept between completions, and a prompt that starts with
//! the tokens already cached decodes only the rest: the next turn of a tool loop, a repair turn
//! or the same agent again reads just what is new. The tokens after the shared prefix are
//! dropped first, so a completion attends to exactly its own prompt, as with a fresh context.
//! A prompt that has outgrown the window of the context holding its prefix gets a larger
//! context with that prefix's cache copied in, not read again.
//!
//! A caller that stops waiting (a hop past its time limit, a command ending) cancels its
//! completion: the decoding thread checks between tokens, so the next completion, or the end of
//! the process, does not wait for an answer nobody reads.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::time::Instant;

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::context::LlamaContext;
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
use super::{
    grammar, LocalError, LocalSettings, DEFAULT_CACHE_SLOTS, DEFAULT_CONTEXT, DEFAULT_MAX_TOKENS,
    PROVIDER,
};
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
    /// The model's decoding thread, which owns its llama.cpp context: one completion at a time
    /// per model (two would compete for the same cores), in the order asked.
    jobs: OnceLock<mpsc::Sender<Job>>,
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
        jobs: OnceLock::new(),
    });
    let (send, receive) = mpsc::channel();
    let serving = loaded.clone();
    std::thread::Builder::new()
        .name("switchboard-local".into())
        .spawn(move || serve(&serving, receive))
        .map_err(|e| engine(format!("cannot start the decoding thread: {e}")))?;
    // Only this function sets it, once, before anyone else sees `loaded`.
    let _ = loaded.jobs.set(send);
    models.insert(key, loaded.clone());
    Ok(loaded)
}

/// What one completion asks of the engine.
#[derive(Debug, Clone)]
pub struct Generate {
    pub prompt: String,
    pub grammar: Option<String>,
    pub grammar_mode: GrammarMode,
    pub max_tokens: u32,
    pub temperature: f32,
    pub top_p: f32,
    pub seed: u32,
    pub stop: Vec<String>,
    /// The largest context window (tokens) the completion may use.
    pub context: u32,
    /// The smallest window to allocate: the window is the prompt plus `max_tokens`, rounded
    /// up, between the two. Equal to `context` for a fixed window.
    pub min_context: u32,
    pub threads: i32,
    /// Keep the KV cache of the previous completion's tokens and decode only what follows the
    /// longest prefix this prompt shares with them (a tool loop's next turn, a repair turn, the
    /// same agent again). `false` reads the whole prompt, as the prompt-speed benchmark needs.
    pub reuse_prefix: bool,
    /// Contexts the decoding thread keeps (at least 1): parallel hops take turns on the model,
    /// and each turn goes to the context whose cache shares most of its prompt.
    pub slots: u32,
    /// The files the grammar quotes line by line (empty without a grammar): the sampler keeps
    /// a later excerpt of one from opening on a line an earlier one quoted.
    pub quoted: Quoted,
}

/// The files a grammar quotes line by line, shared by the request and the decoding thread.
pub type Quoted = Arc<super::fresh::Quoting>;

impl Generate {
    /// The context window for a prompt of `prompt_tokens`.
    fn window(&self, prompt_tokens: u32) -> u32 {
        let want = prompt_tokens.saturating_add(self.max_tokens);
        let rounded = want.div_ceil(WINDOW_STEP).saturating_mul(WINDOW_STEP);
        rounded.clamp(self.min_context.min(self.context), self.context)
    }
}

/// What one completion produced, with its timings.
#[derive(Debug, Clone, PartialEq)]
pub struct Generated {
    pub text: String,
    pub prompt_tokens: u32,
    /// Prompt tokens whose KV cache was kept from the previous completion, not decoded again.
    pub cached_tokens: u32,
    pub output_tokens: u32,
    /// Stopped at `max_tokens` or the end of the context, not at the end of the answer.
    pub truncated: bool,
    pub prompt_seconds: f64,
    pub generate_seconds: f64,
    /// From the start of reading the prompt to the first token chosen.
    pub first_token_seconds: f64,
    pub grammar: GrammarStats,
}

/// Window sizes are multiples of this many tokens, so nearby prompts share a context.
const WINDOW_STEP: u32 = 1024;

/// A completion for the decoding thread, and where its pieces and result go.
struct Job {
    generate: Generate,
    reply: mpsc::Sender<Reply>,
    /// Set when the caller no longer wants the answer.
    cancel: Arc<AtomicBool>,
}

enum Reply {
    Piece(String),
    Done(Result<Generated, EngineError>),
}

/// The decoding thread's one context and the tokens its KV cache holds, in order.
struct Slot<'m> {
    ctx: LlamaContext<'m>,
    window: u32,
    threads: i32,
    kv: Vec<LlamaToken>,
}

/// The decoding thread: runs the jobs in order, keeping the context between them. A failed
/// completion drops the context (its cache is in an unknown state); the next builds a new one.
fn serve(loaded: &Loaded, jobs: mpsc::Receiver<Job>) {
    // Least recently used first.
    let mut slots: Vec<Slot<'_>> = Vec::new();
    for job in jobs {
        let reply = job.reply;
        let mut piece = |text: &str| {
            // A caller that went away no longer wants the pieces; the answer still finishes.
            let _ = reply.send(Reply::Piece(text.to_string()));
        };
        let done = loaded.decode(&mut slots, &job.generate, &job.cancel, &mut piece);
        let _ = reply.send(Reply::Done(done));
    }
}

/// The least shared prefix worth keeping a context for: below it a prompt shares only the
/// chat template's opening (or a few words more) and reading it again costs a second or two,
/// while taking the context would cost its owner the whole cache.
const MIN_REUSED_PREFIX: usize = 64;

/// Copies `from`'s cache (sequence 0) into `to`, returning the tokens it holds; `None` when
/// llama.cpp cannot move it (`to` then starts empty and the prompt is read in full).
fn move_cache(from: &Slot<'_>, to: &mut Slot<'_>) -> Option<Vec<LlamaToken>> {
    let flags = llama_cpp_2::context::session::LlamaStateSeqFlags::empty();
    let state = from.ctx.state_seq_get(0, flags).ok()?;
    match to.ctx.state_seq_set(&state, 0) {
        Ok(()) => Some(from.kv.clone()),
        Err(_) => {
            to.ctx.clear_kv_cache();
            None
        }
    }
}

/// How many leading tokens `a` and `b` share.
fn common_prefix(a: &[LlamaToken], b: &[LlamaToken]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
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

    /// Decodes one answer on the model's decoding thread, handing its text to `sink` as it
    /// comes. Blocking: call it from a blocking thread.
    pub fn generate(
        &self,
        g: &Generate,
        sink: Option<&mut dyn FnMut(&str)>,
    ) -> Result<Generated, EngineError> {
        self.generate_until(g, sink, Arc::new(AtomicBool::new(false)))
    }

    /// [`Self::generate`], ended early with [`EngineError::Cancelled`] once `cancel` is set
    /// (checked between prompt batches and between tokens). The cache keeps what was decoded.
    pub fn generate_until(
        &self,
        g: &Generate,
        mut sink: Option<&mut dyn FnMut(&str)>,
        cancel: Arc<AtomicBool>,
    ) -> Result<Generated, EngineError> {
        let stopped = || EngineError::Backend("the model's decoding thread has stopped".into());
        let (reply, replies) = mpsc::channel();
        self.jobs
            .get()
            .ok_or_else(stopped)?
            .send(Job {
                generate: g.clone(),
                reply,
                cancel,
            })
            .map_err(|_| stopped())?;
        loop {
            match replies.recv().map_err(|_| stopped())? {
                Reply::Piece(text) => {
                    if let Some(sink) = sink.as_mut() {
                        sink(&text);
                    }
                }
                Reply::Done(done) => return done,
            }
        }
    }

    /// The context for a prompt of `tokens` needing `window`: the kept one sharing the longest
    /// prefix with it when that prefix is worth keeping ([`MIN_REUSED_PREFIX`]), else a new one
    /// while there is room, else the least recently used one. Every prompt opens with the chat
    /// template's few tokens: counting those as a shared prefix let parallel hops take each
    /// other's contexts turn after turn, so none kept its own cache (stop 60: a locator's second
    /// turn found 4 of its 1,472 tokens cached). When the prefix sits in a context too small for
    /// `window`, a new context of `window` takes over that prefix's cache: a tool loop's prompt
    /// grows past its window every few turns, and reading 10k tokens again costs minutes on two
    /// cores.
    fn take_slot<'m>(
        &'m self,
        slots: &mut Vec<Slot<'m>>,
        g: &Generate,
        tokens: &[LlamaToken],
        window: u32,
    ) -> Result<Slot<'m>, EngineError> {
        let room = g.slots.max(1) as usize;
        // The longest shared prefix; of equal ones, a context large enough.
        let best = slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.threads == g.threads)
            .map(|(i, s)| (common_prefix(&s.kv, tokens), s.window >= window, i))
            .max()
            .filter(|(shared, _, _)| g.reuse_prefix && *shared >= MIN_REUSED_PREFIX);
        match best {
            Some((_, true, i)) => return Ok(slots.remove(i)),
            Some((_, false, i)) => {
                let old = slots.remove(i);
                let mut slot = self.new_slot(g, window)?;
                if let Some(kv) = move_cache(&old, &mut slot) {
                    slot.kv = kv;
                }
                return Ok(slot);
            }
            None => {}
        }
        if slots.len() >= room {
            // Least recently used first: its context serves again when it is large enough.
            let lru = slots.remove(0);
            if lru.threads == g.threads && lru.window >= window {
                return Ok(lru);
            }
        }
        self.new_slot(g, window)
    }

    /// A fresh context of `window` tokens with an empty cache.
    fn new_slot(&self, g: &Generate, window: u32) -> Result<Slot<'_>, EngineError> {
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(window))
            .with_n_batch(PROMPT_BATCH as u32)
            .with_n_ubatch(PROMPT_BATCH as u32)
            .with_n_threads(g.threads)
            .with_n_threads_batch(g.threads);
        let ctx = self
            .model
            .new_context(backend()?, params)
            .map_err(|e| EngineError::Context {
                context: window,
                reason: e.to_string(),
            })?;
        Ok(Slot {
            ctx,
            window,
            threads: g.threads,
            kv: Vec::new(),
        })
    }

    /// One completion on the decoding thread, reusing a kept context and its cached prefix.
    fn decode<'m>(
        &'m self,
        slots: &mut Vec<Slot<'m>>,
        g: &Generate,
        cancel: &AtomicBool,
        sink: &mut dyn FnMut(&str),
    ) -> Result<Generated, EngineError> {
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
        let window = g.window(prompt_tokens);
        let max_tokens = g.max_tokens.min(window - prompt_tokens);
        // Taken out: put back only after a completion that left the cache in a known state.
        let mut s = self.take_slot(slots, g, &tokens, window)?;
        let mut picker = Picker::new(
            &self.model,
            g.grammar.as_deref(),
            g.grammar_mode,
            g.temperature,
            g.top_p,
            g.seed,
            g.quoted.clone(),
        )?;
        let decode = |step: &'static str| {
            move |e: &dyn std::fmt::Display| EngineError::Decode {
                step,
                reason: e.to_string(),
            }
        };

        let started = Instant::now();
        // At least the last prompt token is decoded again: its logits choose the first token.
        let mut keep = if g.reuse_prefix {
            common_prefix(&s.kv, &tokens).min(tokens.len() - 1)
        } else {
            0
        };
        let removed = s
            .ctx
            .clear_kv_cache_seq(Some(0), Some(keep as u32), None)
            .unwrap_or(false);
        if !removed {
            // A model whose cache cannot drop a tail (recurrent state) starts over.
            s.ctx.clear_kv_cache();
            keep = 0;
        }
        s.kv.truncate(keep);
        let mut batch = LlamaBatch::new(PROMPT_BATCH, 1);
        let last = tokens.len() - 1;
        for (chunk_no, chunk) in tokens[keep..].chunks(PROMPT_BATCH).enumerate() {
            if cancel.load(Ordering::Relaxed) {
                // The cache holds exactly `s.kv`: keep it for the next prompt.
                slots.push(s);
                return Err(EngineError::Cancelled);
            }
            batch.clear();
            for (i, token) in chunk.iter().enumerate() {
                let pos = keep + chunk_no * PROMPT_BATCH + i;
                batch
                    .add(*token, pos as i32, &[0], pos == last)
                    .map_err(|e| decode("batch the prompt")(&e))?;
            }
            s.ctx
                .decode(&mut batch)
                .map_err(|e| decode("read the prompt")(&e))?;
            s.kv.extend_from_slice(chunk);
        }
        let prompt_seconds = started.elapsed().as_secs_f64();

        let generating = Instant::now();
        let mut first_token_seconds = None;
        let mut stream = Streamer::new(&g.stop, Some(sink));
        let mut bytes: Vec<u8> = Vec::new();
        let mut output_tokens = 0u32;
        let mut truncated = true;
        let mut pos = prompt_tokens as i32;
        let mut logits_at = batch.n_tokens() - 1;
        while output_tokens < max_tokens {
            if cancel.load(Ordering::Relaxed) {
                slots.push(s);
                return Err(EngineError::Cancelled);
            }
            let token = picker.next(&s.ctx, logits_at, &bytes)?;
            first_token_seconds.get_or_insert_with(|| started.elapsed().as_secs_f64());
            if vocab.is_eog(token) {
                truncated = false;
                break;
            }
            output_tokens += 1;
            // Special tokens as their text, as llama.cpp's grammar sampler and the guards read
            // them: copying `<|im_start|>assistant\n` from `src/model/local/template.rs` under
            // the report grammar, the 1.5B researcher emitted the special token, the grammar took
            // it for the quoted text, and the answer lost it (rendered without specials), so
            // an item the grammar had held to the file's lines failed to verify, twice (t4,
            // 2026-12-01).
            vocab.token_to_piece_into(token, &mut bytes, true, None);
            if let Some(cut) = stop_at(&bytes, &g.stop) {
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
            s.ctx
                .decode(&mut batch)
                .map_err(|e| decode("decode the answer")(&e))?;
            s.kv.push(token);
        }
        stream.finish(&bytes);
        slots.push(s);
        Ok(Generated {
            text: String::from_utf8_lossy(&bytes).into_owned(),
            prompt_tokens,
            cached_tokens: keep as u32,
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
    /// `grammar = false`), and the files it quotes line by line. A schema nothing could match
    /// is named with its place.
    fn grammar(&self, request: &ModelRequest) -> Result<(Option<String>, Quoted), ModelError> {
        if !self.settings.grammar.unwrap_or(true) {
            return Ok((None, Quoted::default()));
        }
        let schema = self.schema(request)?;
        // The files the conversation named are the only ones an Evidence item may cite.
        // Those read whole are quoted line by line.
        let cited = crate::project::Project::open(&self.project_root)
            .map(|project| {
                let texts = std::iter::once(request.system.as_str())
                    .chain(request.messages.iter().map(|m| m.content.as_str()));
                super::cited::Cited::gather(&project, texts)
            })
            .unwrap_or_default();
        let max_tokens = self.max_tokens(request);
        let grammar = grammar::with_openings(request, schema.as_ref(), max_tokens, &cited);
        let quoted = |openings| {
            Quoted::new(super::fresh::Quoting {
                files: cited.quotable.clone(),
                openings,
            })
        };
        grammar
            .map(|g| match g {
                Some((g, openings)) => (Some(g), quoted(openings)),
                None => (None, Quoted::default()),
            })
            .map_err(|e| {
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

    /// The answer's token limit: the agent's, else `[providers.local]`'s, else the default.
    fn max_tokens(&self, request: &ModelRequest) -> u32 {
        request
            .max_tokens
            .or(self.settings.max_tokens)
            .unwrap_or(DEFAULT_MAX_TOKENS)
    }

    /// What the engine is asked for `request` and its `prompt`.
    fn generate_params(
        &self,
        request: &ModelRequest,
        prompt: String,
        grammar: Option<String>,
        quoted: Quoted,
        n_ctx_train: u32,
    ) -> Generate {
        let most = n_ctx_train.max(MIN_ANSWER_ROOM * 2);
        // A window set in switchboard.toml is used as is; otherwise it grows from the default
        // to what the prompt and answer need, up to the model's training context.
        let (min_context, context) = match self.settings.context {
            Some(fixed) => (fixed.min(most), fixed.min(most)),
            None => (DEFAULT_CONTEXT.min(most), most),
        };
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
            max_tokens: self.max_tokens(request),
            temperature: request
                .temperature
                .or(self.settings.temperature)
                .unwrap_or(0.0) as f32,
            top_p: request.top_p.unwrap_or(0.95) as f32,
            seed: self.settings.seed.unwrap_or(0),
            stop: self.settings.stop.clone(),
            context,
            min_context,
            threads,
            reuse_prefix: self.settings.prompt_cache_slots != Some(0),
            slots: self
                .settings
                .prompt_cache_slots
                .unwrap_or(DEFAULT_CACHE_SLOTS)
                .max(1),
            quoted,
        }
    }

    fn complete_blocking(
        &self,
        request: &ModelRequest,
        sink: Option<PieceObserver>,
        cancel: Arc<AtomicBool>,
    ) -> Result<ModelResponse, ModelError> {
        let fatal = |e: EngineError| ModelError::Fatal(format!("{}: {e}", self.path.display()));
        let loaded = load(&self.path).map_err(|e| ModelError::Fatal(e.to_string()))?;
        let (grammar, quoted) = self.grammar(request)?;
        let constrained = grammar.is_some();
        let textual = TextualTools::textual_request(request);
        let prompt = loaded
            .prompt(&textual.system, &textual.messages)
            .map_err(fatal)?;
        let params = self.generate_params(request, prompt, grammar, quoted, loaded.n_ctx_train());
        let mut send = |piece: &str| {
            if let Some(sink) = &sink {
                sink(piece)
            }
        };
        let generated = loaded
            .generate_until(&params, Some(&mut send), cancel)
            .map_err(|e| match e {
                EngineError::Overflow {
                    prompt_tokens,
                    context,
                } => ModelError::ContextOverflow {
                    message: if context < loaded.n_ctx_train() {
                        format!(
                            "{}: the prompt of agent `{}` is {prompt_tokens} tokens and the \
                             context window {context} (raise [providers.local] context, up to \
                             the model's {} training tokens)",
                            self.path.display(),
                            request.agent,
                            loaded.n_ctx_train()
                        )
                    } else {
                        format!(
                            "{}: the prompt of agent `{}` is {prompt_tokens} tokens, beyond the \
                             model's {context}-token training context (shorten the agent's \
                             prompt or its tools' output, or use a model with a longer context)",
                            self.path.display(),
                            request.agent,
                        )
                    },
                },
                other => fatal(other),
            })?;
        let mut response = ModelResponse {
            content: generated.text,
            tool_calls: Vec::new(),
            usage: Usage {
                input_tokens: generated.prompt_tokens as u64,
                output_tokens: generated.output_tokens as u64,
                cached_input_tokens: generated.cached_tokens as u64,
            },
            truncated: generated.truncated,
        };
        if !request.callable_tools().is_empty()
            && !response.truncated
            // Under the grammar a call is the whole answer (its `tool-call` branch, which opens
            // with the fence and names an offered tool, or a callable agent); a free answer that
            // writes a call further down escaped the grammar's lists (SmolLM2 copied the
            // prompt's placeholder `NAME` thirty times in a row that way): it is an answer, not
            // a call.
            && (!constrained || response.content.starts_with("```"))
        {
            response.tool_calls = TextualTools::calls_in_answer(request, &response.content);
        }
        Ok(response)
    }
}

/// Sets its flag when dropped: the completion it guards is no longer wanted.
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
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
            // Dropped with this future (a hop past its limit, a runtime shutting down): the
            // decoding thread stops at its next token instead of finishing an unread answer,
            // which would hold the next hop's turn and keep the process alive.
            let cancel = CancelOnDrop(Arc::new(AtomicBool::new(false)));
            let flag = cancel.0.clone();
            let done =
                tokio::task::spawn_blocking(move || this.complete_blocking(&request, sink, flag))
                    .await
                    .map_err(|e| ModelError::Fatal(format!("local model thread: {e}")))?;
            drop(cancel);
            done
        })
    }
}
