//! `analyze_file` inside the runtime: the file is prepared and split by `knowledge`, each chunk
//! is a hop of the `file-analyzer` agent (so it gets the contract gate, repair turns, events and
//! the semaphore like any subagent), and the checked answers are merged and stored.
//!
//! Used two ways: as a tool call inside a hop (chunks are child hops, run concurrently under
//! `--max-parallel`), and by `switchboard knowledge analyze` (chunks are root hops of a session
//! of their own, run one after another). The hop runner is passed in as a function so this file
//! does not import `hop.rs`, which calls it.

use chrono::Utc;
use std::sync::Arc;

use super::events::{timestamp, EventKind};
use super::handoff::{HopRequest, HopResult, ParentLink};
use super::shared::{ModelChoiceError, Shared};
use super::status::HopStatus;
use super::tool_calls::Caller;
use crate::knowledge::analyze::{chunk_prompt, parse_answer, reused, summary};
use crate::knowledge::dedup::DEFAULT_EMBEDDINGS_THRESHOLD;
use crate::knowledge::provenance::GitProbe;
use crate::knowledge::store::StoreOutcome;
use crate::knowledge::{
    chunk, source, Extraction, KnowledgeError, Limits, NoteVectors, Store, ANALYZER_AGENT,
};
use crate::model::embeddings::Embedder;
use crate::model::{BoxFuture, Message, ToolCall};
use crate::tools::{self, ToolError};

/// Runs one hop to its end (`hop::run_hop`).
pub(crate) type HopRunner = fn(Arc<Shared>, HopRequest) -> BoxFuture<'static, HopResult>;

/// Where the analyzer's hops hang in the session's tree.
pub(crate) struct Placement {
    pub parent: Option<ParentLink>,
    pub depth: u32,
    pub chain: Vec<String>,
    /// Spawn every chunk at once (children wait on the semaphore) or run them in turn.
    pub concurrent: bool,
}

/// Why a file could not be analysed.
#[derive(Debug, thiserror::Error)]
pub enum AnalyzeError {
    #[error(transparent)]
    Knowledge(#[from] KnowledgeError),
    #[error(
        "no `{ANALYZER_AGENT}` agent in this project; add agent/{ANALYZER_AGENT}.md (switchboard \
         ships one in its agent/ folder) so analyze_file has an analyzer to run"
    )]
    NoAnalyzer,
    #[error("cannot choose the analyzer's model: {0}")]
    Model(#[from] ModelChoiceError),
    #[error("{chunk}: the analyzer did not give a usable answer ({why}); nothing was stored")]
    Chunk {
        chunk: String,
        #[source]
        why: ChunkFailure,
    },
    #[error("analyze_file would exceed the delegation depth limit ({0}); analyse from a shallower agent")]
    Depth(u32),
}

/// Why one chunk's hop gave no answer that could be stored.
#[derive(Debug, thiserror::Error)]
pub enum ChunkFailure {
    /// The spawned hop panicked or was aborted.
    #[error("analyzer hop ended abnormally: {0}")]
    Aborted(#[source] tokio::task::JoinError),
    /// Another chunk's hop ended abnormally first and the set was dropped before this one.
    #[error("analyzer hop did not run to its end")]
    NotRun,
    #[error(
        "its hop ended {status:?}{}",
        error.as_deref().map_or(String::new(), |e| format!(": {e}"))
    )]
    Ended {
        status: HopStatus,
        error: Option<String>,
    },
    #[error("not the JSON the contract promises: {0}")]
    NotJson(#[source] serde_json::Error),
}

/// Told after each file of [`analyse_files`]: files done, files in all, and how it went.
pub type Progress = dyn Fn(usize, usize, &Result<FileReport, AnalyzeError>) + Sync;

/// One file's result.
#[derive(Debug, Clone)]
pub struct FileReport {
    pub path: String,
    /// The stored analysis was returned; nothing ran.
    pub reused: bool,
    pub chunks: usize,
    pub outcome: Option<StoreOutcome>,
    /// What the caller is told.
    pub text: String,
    /// Why `[knowledge] embeddings` gave no vectors for this file (the notes were stored and
    /// matched by text instead); `None` when it worked or is not configured.
    pub embeddings_error: Option<String>,
}

/// Analyses `name` (or returns its stored analysis when path, checksum and focus match).
pub(crate) async fn analyse(
    shared: &Arc<Shared>,
    run: HopRunner,
    place: &Placement,
    name: &str,
    focus: &str,
    probe: Option<&GitProbe>,
) -> Result<FileReport, AnalyzeError> {
    let limits = Limits::from_config(&shared.config);
    let file = source::prepare(&shared.project, name, &limits, probe)?;
    let mut store = Store::open(&shared.project)?;
    if let Some(stored) = store.hit(&file.path, &file.checksum, focus)? {
        return Ok(FileReport {
            path: file.path,
            reused: true,
            chunks: 0,
            outcome: None,
            text: reused(&stored),
            embeddings_error: None,
        });
    }
    let agent = shared
        .agents
        .get(ANALYZER_AGENT)
        .ok_or(AnalyzeError::NoAnalyzer)?;
    if place.depth > shared.options.max_depth {
        return Err(AnalyzeError::Depth(shared.options.max_depth));
    }
    let model = shared.model_spec(agent, place.parent.as_ref().map(|p| p.model.as_str()))?;
    let context = context_tokens(&shared.config, &model);
    let chunks = chunk::split(&file.text, &file.path, chunk::budget(context));
    let requests: Vec<HopRequest> = chunks
        .iter()
        .map(|c| HopRequest {
            agent: ANALYZER_AGENT.to_string(),
            prompt: chunk_prompt(&file, c, focus),
            description: c.label(&file.path),
            parent: place.parent.clone(),
            depth: place.depth,
            chain: place.chain.clone(),
            hop_id: None,
        })
        .collect();
    let results = run_all(shared, run, requests, place.concurrent).await;
    let mut parts = Vec::with_capacity(chunks.len());
    for (c, result) in chunks.iter().zip(results) {
        let label = c.label(&file.path);
        let result = result.map_err(|why| AnalyzeError::Chunk {
            chunk: label.clone(),
            why,
        })?;
        if result.status != HopStatus::Completed {
            return Err(AnalyzeError::Chunk {
                chunk: label,
                why: ChunkFailure::Ended {
                    status: result.status,
                    error: result.error,
                },
            });
        }
        let answer = parse_answer(&result.answer).map_err(|e| AnalyzeError::Chunk {
            chunk: label,
            why: ChunkFailure::NotJson(e),
        })?;
        parts.push((c.clone(), answer));
    }
    let extraction = Extraction::merge(&parts);
    let analysed_at = timestamp(Utc::now());
    let (vectors, embeddings_error) = embed_notes(&shared.config, &extraction).await;
    let outcome = store.record(
        &file,
        focus,
        &model,
        &analysed_at,
        &extraction,
        vectors.as_ref(),
        "",
    )?;
    let mut text = summary(&file, focus, chunks.len(), &extraction, &outcome);
    store.set_summary(outcome.source_id, &text)?;
    // Said to this caller only: a later hit returns the stored summary without it.
    if let Some(e) = &embeddings_error {
        text.push_str(&format!(
            "\nEmbeddings: none ({e}); near-duplicate notes were found by text similarity."
        ));
    }
    Ok(FileReport {
        path: file.path,
        reused: false,
        chunks: chunks.len(),
        outcome: Some(outcome),
        text,
        embeddings_error,
    })
}

/// The analyzer's context size in tokens, which sizes the chunks: `[knowledge] context_tokens`
/// when set, else what `[providers.P]` says of the chosen model (its own `context_tokens`, else
/// the provider's), else [`crate::knowledge::DEFAULT_CONTEXT_TOKENS`].
fn context_tokens(config: &crate::config::Config, model: &str) -> usize {
    if let Some(n) = config.knowledge.context_tokens {
        return n;
    }
    let from_provider =
        crate::model::registry::parse_spec(model)
            .ok()
            .and_then(|(provider, name)| {
                let table = config.providers.get(provider)?;
                let settings: crate::model::settings::ProviderSettings =
                    table.clone().try_into().ok()?;
                settings
                    .models
                    .get(name)
                    .and_then(|m| m.context_tokens)
                    .or(settings.context_tokens)
            });
    from_provider.map_or(crate::knowledge::DEFAULT_CONTEXT_TOKENS, |n| n as usize)
}

/// Vectors for the extraction's notes when `[knowledge] embeddings` names a model. A failure
/// (a bad setting, an unreachable server, an odd answer) does not lose the analysis: the notes
/// are stored without vectors and matched by text, and the error is handed back to be told.
async fn embed_notes(
    config: &crate::config::Config,
    extraction: &Extraction,
) -> (Option<NoteVectors>, Option<String>) {
    let Some(spec) = config.knowledge.embeddings.as_deref() else {
        return (None, None);
    };
    if extraction.notes.is_empty() {
        return (None, None);
    }
    let threshold = config
        .knowledge
        .embeddings_threshold
        .unwrap_or(DEFAULT_EMBEDDINGS_THRESHOLD);
    if !(threshold > 0.0 && threshold <= 1.0) {
        return (
            None,
            Some(format!(
                "[knowledge] embeddings_threshold = {threshold} in switchboard.toml must be \
                 above 0 and at most 1"
            )),
        );
    }
    let embedder = match Embedder::resolve(
        spec,
        &config.providers,
        &crate::model::registry::process_env,
    ) {
        Ok(e) => e,
        Err(e) => return (None, Some(e.to_string())),
    };
    let texts: Vec<String> = extraction.notes.iter().map(|n| n.text.clone()).collect();
    match embedder.embed(&texts).await {
        Ok(raw) => (
            Some(NoteVectors::new(embedder.spec(), threshold, raw)),
            None,
        ),
        Err(e) => (None, Some(e.to_string())),
    }
}

/// Runs the chunk hops; results in request order. A spawned hop that panicked or was aborted is
/// an `Err` saying so.
async fn run_all(
    shared: &Arc<Shared>,
    run: HopRunner,
    requests: Vec<HopRequest>,
    concurrent: bool,
) -> Vec<Result<HopResult, ChunkFailure>> {
    if !concurrent {
        let mut out = Vec::with_capacity(requests.len());
        for r in requests {
            out.push(Ok(run(shared.clone(), r).await));
        }
        return out;
    }
    // Dropping the set (the caller timed out or was interrupted) aborts every chunk hop.
    let mut set = tokio::task::JoinSet::new();
    let total = requests.len();
    for (i, r) in requests.into_iter().enumerate() {
        let fut = run(shared.clone(), r);
        set.spawn(async move { (i, fut.await) });
    }
    let mut out: Vec<Result<HopResult, ChunkFailure>> =
        (0..total).map(|_| Err(ChunkFailure::NotRun)).collect();
    while let Some(joined) = set.join_next().await {
        match joined {
            Ok((i, result)) => out[i] = Ok(result),
            Err(e) => {
                // Which chunk it was is lost with the task; the first one still waiting takes it.
                if let Some(slot) = out
                    .iter_mut()
                    .find(|s| matches!(s, Err(ChunkFailure::NotRun)))
                {
                    *slot = Err(ChunkFailure::Aborted(e));
                }
            }
        }
    }
    out
}

/// The `analyze_file` tool call of `caller`: its grant, its arguments, the analysis; the tool
/// message says what was learned or why nothing was.
pub(crate) async fn tool(
    caller: &Caller<'_>,
    shared: Arc<Shared>,
    call: &ToolCall,
    run: HopRunner,
) -> Message {
    let result = async {
        tools::check_grant(caller.agent, "analyze_file")?;
        let path = tools::str_arg("analyze_file", &call.arguments, "path")?;
        let focus = tools::opt_str(&call.arguments, "focus").unwrap_or("");
        let mut chain = caller.request.chain.clone();
        chain.push(caller.agent.name.clone());
        let place = Placement {
            parent: Some(ParentLink {
                hop_id: caller.hop_id.to_string(),
                agent: caller.agent.name.clone(),
                model: caller.model_spec.to_string(),
            }),
            depth: caller.request.depth + 1,
            chain,
            concurrent: true,
        };
        let probe = GitProbe::open(shared.project.root());
        analyse(&shared, run, &place, path, focus, probe.as_ref())
            .await
            .map_err(|e| tool_error(path, e))
    }
    .await;
    match result {
        Ok(report) => Message::tool(&call.id, report.text, false),
        Err(e) => Message::tool(&call.id, e.to_string(), true),
    }
}

fn tool_error(path: &str, e: AnalyzeError) -> ToolError {
    match e {
        AnalyzeError::Knowledge(KnowledgeError::Refused { reason, .. }) => ToolError::Refused {
            tool: "analyze_file".into(),
            path: path.into(),
            reason,
        },
        other => ToolError::Failed {
            tool: "analyze_file".into(),
            message: other.to_string(),
        },
    }
}

/// `switchboard knowledge analyze`: every file of `names`, one after another, as root hops of
/// the session whose state is `shared`, each reported to `progress` as it finishes. A file that
/// fails does not stop the others. [`super::Session::analyse_files`] wraps this.
pub(crate) async fn analyse_files(
    shared: &Arc<Shared>,
    root_hop_id: &str,
    run: HopRunner,
    names: &[String],
    focus: &str,
    progress: &Progress,
) -> Vec<Result<FileReport, AnalyzeError>> {
    shared.emit(
        Some(root_hop_id),
        None,
        Some(ANALYZER_AGENT),
        EventKind::SessionStarted {
            prompt: format!("knowledge analyze {}", names.join(" ")),
            model: shared.options.model.clone(),
            max_parallel: shared.options.max_parallel,
            max_depth: shared.options.max_depth,
            resumed: false,
        },
    );
    let place = Placement {
        parent: None,
        depth: 0,
        chain: Vec::new(),
        concurrent: false,
    };
    let probe = GitProbe::open(shared.project.root());
    let mut out = Vec::with_capacity(names.len());
    for (i, name) in names.iter().enumerate() {
        let r = analyse(shared, run, &place, name, focus, probe.as_ref()).await;
        progress(i + 1, names.len(), &r);
        out.push(r);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_are_sized_from_the_knowledge_setting_else_the_model_else_the_default() {
        let parse = |t: &str| crate::config::Config::parse(t, "switchboard.toml").unwrap();
        let providers = "[providers.local]\nprotocol = \"openai\"\ncontext_tokens = 4096\n\
                         [providers.local.models.big]\ncontext_tokens = 32768\n";
        let c = parse(providers);
        assert_eq!(context_tokens(&c, "local/big"), 32768);
        assert_eq!(context_tokens(&c, "local/small"), 4096);
        assert_eq!(
            context_tokens(&c, "offline/default"),
            crate::knowledge::DEFAULT_CONTEXT_TOKENS
        );
        let c = parse(&format!("[knowledge]\ncontext_tokens = 2048\n{providers}"));
        assert_eq!(context_tokens(&c, "local/big"), 2048);
    }
}
