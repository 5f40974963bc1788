//! Knowledge kept across sessions: what `analyze_file` learned from whole files, with the
//! provenance of every item, in `.switchboard/knowledge.db` (SQLite, WAL, FTS5), and recall over
//! it. See docs/knowledge.md.
//!
//! The store is the one writer of `knowledge.db`, as `runtime` is of the session folders. The
//! analysis itself (running the file-analyzer agent per chunk) belongs to the runtime; this module
//! prepares the file ([`source::prepare`]), splits it ([`chunk`]), merges the answers
//! ([`extraction`]) and stores them ([`store`]).

pub mod analyze;
pub mod chunk;
pub mod dedup;
pub mod export;
pub mod extraction;
pub mod provenance;
pub mod schema;
pub mod similar;
pub mod source;
pub mod store;

pub use dedup::NoteVectors;
pub use extraction::{ChunkAnswer, Extraction};
pub use source::{Prepared, SourceFile};
pub use store::{Recalled, Store, Stored};

/// The store, relative to the project root.
pub const DB_PATH: &str = ".switchboard/knowledge.db";
/// Default largest file analysed.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// Default analyzer context, in tokens, when `[knowledge] context_tokens` is not set.
pub const DEFAULT_CONTEXT_TOKENS: usize = 8192;
/// The agent `analyze_file` runs per chunk (agent/file-analyzer.md).
pub const ANALYZER_AGENT: &str = "file-analyzer";

/// Why knowledge could not be read, analysed or stored. Messages say what to do.
#[derive(Debug, thiserror::Error)]
pub enum KnowledgeError {
    #[error("knowledge store: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("cannot open the knowledge store {}: {error}", path.display())]
    Open {
        path: std::path::PathBuf,
        error: std::io::Error,
    },
    #[error(
        "the knowledge store has schema version {found}, newer than this switchboard supports \
         ({supported}); upgrade switchboard or move .switchboard/knowledge.db aside"
    )]
    NewerSchema { found: i64, supported: i64 },
    #[error("`{path}` is refused: {reason}")]
    Refused { path: String, reason: String },
    #[error("cannot read `{path}`: {error}")]
    Read { path: String, error: std::io::Error },
    #[error("`{path}` is a binary file (it is not UTF-8 text or contains NUL bytes); analyze_file reads text only")]
    Binary { path: String },
    #[error(
        "`{path}` is {size} bytes, over the {max}-byte limit; raise [knowledge] max_file_bytes in \
         switchboard.toml or analyse a smaller file"
    )]
    TooLarge { path: String, size: u64, max: u64 },
    #[error("`{path}` is not a regular file")]
    NotAFile { path: String },
}

/// Settings from `[knowledge]`, with defaults filled in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_file_bytes: u64,
    pub context_tokens: usize,
}

impl Limits {
    pub fn from_config(config: &crate::config::Config) -> Self {
        Limits {
            max_file_bytes: config
                .knowledge
                .max_file_bytes
                .unwrap_or(DEFAULT_MAX_FILE_BYTES),
            context_tokens: config
                .knowledge
                .context_tokens
                .unwrap_or(DEFAULT_CONTEXT_TOKENS),
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            context_tokens: DEFAULT_CONTEXT_TOKENS,
        }
    }
}
