//! The `local` provider: a GGUF model run in-process by llama.cpp, decoding under a grammar
//! derived from the agent's contract (docs/local-model.md).
//!
//! `--model local/PATH.gguf` (a path inside the project, or absolute) or `--model local/NAME`
//! with `NAME = "PATH.gguf"` under `[providers.local.models]` in switchboard.toml. The model
//! file is loaded once per process and shared by every hop. The prompt is laid out with the
//! model's own chat template (`template.rs`); the answer's shape is forced by a grammar
//! (`grammar.rs`, written with `gbnf.rs`) and decoded by llama.cpp's grammar sampler
//! (`engine.rs`, only in builds with the cargo feature `local`). Delegation is textual: the
//! grammar admits a `task(...)` call, which `textual.rs` reads back as a tool call.
//!
//! The grammar and template code is plain Rust and always compiled (so its tests run in every
//! build); only the engine needs llama.cpp.

pub mod cited;
pub mod fresh;
pub mod gbnf;
pub mod grammar;
pub mod stream;
pub mod template;

#[cfg(feature = "local")]
pub mod engine;
#[cfg(feature = "local")]
mod error;
#[cfg(feature = "local")]
pub mod sample;

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::Model;

/// The provider's name, the part before `/` in `local/…`.
pub const PROVIDER: &str = "local";

/// Output limit when neither the agent nor `[providers.local]` sets one.
pub const DEFAULT_MAX_TOKENS: u32 = 1024;
/// The smallest context window when `[providers.local] context` does not set one; it grows to
/// what a prompt and its answer need, up to the model's training context.
pub const DEFAULT_CONTEXT: u32 = 4096;

/// Contexts kept for prompt caching when `[providers.local] prompt_cache_slots` is unset: two
/// hops in parallel each keep their cache (more would hold more memory; sibling hops of one
/// agent share their system prompt, so they reuse each other's prefix anyway).
pub const DEFAULT_CACHE_SLOTS: u32 = 2;

/// `[providers.local]` in switchboard.toml.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LocalSettings {
    /// Model names for `local/NAME`: `NAME = "path/to/model.gguf"`.
    #[serde(default)]
    pub models: BTreeMap<String, String>,
    /// Context window in tokens (prompt plus answer). Unset, the window grows from
    /// [`DEFAULT_CONTEXT`] to what each prompt and answer need, up to the model's training
    /// context.
    pub context: Option<u32>,
    /// CPU threads; the machine's available parallelism when absent.
    pub threads: Option<u32>,
    /// Output limit when the agent sets none.
    pub max_tokens: Option<u32>,
    /// Sampling temperature when the agent sets none; 0 is greedy.
    pub temperature: Option<f64>,
    /// Sampling seed, so runs repeat.
    pub seed: Option<u32>,
    /// Texts that end the answer where they first appear (not included).
    #[serde(default)]
    pub stop: Vec<String>,
    /// Decode under the contract's grammar (default true). `false` is for comparison only.
    pub grammar: Option<bool>,
    /// Check the grammar against the best-scoring tokens first, the whole vocabulary only when
    /// none is admitted (default true; same greedy choice, far fewer checks). `false` checks
    /// every token at every step, as llama.cpp's own sampler chain does: for comparison only.
    pub grammar_shortlist: Option<bool>,
    /// Contexts kept between completions, each with the KV cache of its last prompt and
    /// answer, so a prompt decodes only what it adds to the longest cached prefix (default
    /// [`DEFAULT_CACHE_SLOTS`]; each holds a window's KV cache in memory). `0` reads every
    /// prompt whole.
    pub prompt_cache_slots: Option<u32>,
}

impl LocalSettings {
    /// Reads `[providers.local]` (`None` when switchboard.toml has none).
    pub fn from_table(table: Option<&toml::Table>) -> Result<Self, LocalError> {
        match table {
            None => Ok(Self::default()),
            Some(table) => table
                .clone()
                .try_into::<LocalSettings>()
                .map_err(|e| LocalError::Settings(e.message().to_string())),
        }
    }
}

/// Why a local model cannot be used. Every message names the file and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LocalError {
    #[error(
        "model file `{0}` does not exist; give a path to a .gguf file (inside the project or \
         absolute), or a name from [providers.local.models]; the test model is fetched with \
         `bash scripts/fetch-test-model.sh`"
    )]
    Missing(PathBuf),
    #[error("model file `{path}` cannot be read: {reason}")]
    Unreadable { path: PathBuf, reason: String },
    #[error(
        "`{0}` is not a GGUF file (it does not start with the GGUF magic bytes); the local \
         provider loads llama.cpp's GGUF format: convert the model or download its .gguf"
    )]
    NotGguf(PathBuf),
    #[error(
        "llama.cpp could not load `{}`{}: the file is truncated or corrupt, or its architecture \
         is one this llama.cpp does not support; download the .gguf again or pick another model",
        path.display(),
        architecture.as_ref().map(|a| format!(" (architecture `{a}`)")).unwrap_or_default()
    )]
    Load {
        path: PathBuf,
        /// `general.architecture` from the file's header, when it can be read.
        architecture: Option<String>,
    },
    #[error("`{path}`: {reason}")]
    Engine { path: PathBuf, reason: String },
    #[error("[providers.{PROVIDER}] in switchboard.toml: {0}")]
    Settings(String),
    #[error("{NOT_BUILT}")]
    NotBuilt,
}

/// Where `local/NAME` points: a configured name, else a path (relative to the project root
/// unless absolute).
pub fn resolve_path(root: &Path, settings: &LocalSettings, name: &str) -> PathBuf {
    let named = settings
        .models
        .get(name)
        .map(String::as_str)
        .unwrap_or(name);
    let path = PathBuf::from(named);
    if path.is_absolute() {
        path
    } else {
        root.join(path)
    }
}

/// Checks that `path` is a readable GGUF file before llama.cpp sees it: llama.cpp's own errors
/// go to its log, not to us, so the common mistakes are named here.
pub fn check_file(path: &Path) -> Result<(), LocalError> {
    use std::io::Read;
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(LocalError::Missing(path.to_path_buf()))
        }
        Err(e) => {
            return Err(LocalError::Unreadable {
                path: path.to_path_buf(),
                reason: e.to_string(),
            })
        }
    };
    if file.metadata().map(|m| m.is_dir()).unwrap_or(false) {
        return Err(LocalError::Unreadable {
            path: path.to_path_buf(),
            reason: "it is a directory".into(),
        });
    }
    let mut magic = [0u8; 4];
    match file.read_exact(&mut magic) {
        Ok(()) if &magic == b"GGUF" => Ok(()),
        Ok(()) => Err(LocalError::NotGguf(path.to_path_buf())),
        Err(_) => Err(LocalError::NotGguf(path.to_path_buf())),
    }
}

/// `general.architecture` from a GGUF header, so a model llama.cpp refuses can be named by
/// what it is. Best effort: only the first few metadata entries are looked at (the
/// architecture comes first in files written by llama.cpp's tools).
pub fn gguf_architecture(path: &Path) -> Option<String> {
    use std::io::Read;
    const LOOK_AT: u64 = 8;
    const MAX_TEXT: u64 = 1 << 16;
    let mut r = std::io::BufReader::new(std::fs::File::open(path).ok()?);
    let u32_ = |r: &mut dyn Read| -> Option<u32> {
        let mut b = [0u8; 4];
        r.read_exact(&mut b).ok()?;
        Some(u32::from_le_bytes(b))
    };
    let u64_ = |r: &mut dyn Read| -> Option<u64> {
        let mut b = [0u8; 8];
        r.read_exact(&mut b).ok()?;
        Some(u64::from_le_bytes(b))
    };
    let text = |r: &mut dyn Read| -> Option<String> {
        let n = u64_(r)?;
        if n > MAX_TEXT {
            return None;
        }
        let mut b = vec![0u8; n as usize];
        r.read_exact(&mut b).ok()?;
        String::from_utf8(b).ok()
    };
    if u32_(&mut r)? != u32::from_le_bytes(*b"GGUF") {
        return None;
    }
    let _version = u32_(&mut r)?;
    let _tensors = u64_(&mut r)?;
    let entries = u64_(&mut r)?;
    for _ in 0..entries.min(LOOK_AT) {
        let key = text(&mut r)?;
        let kind = u32_(&mut r)?;
        if key == "general.architecture" {
            return (kind == 8).then(|| text(&mut r)).flatten();
        }
        // Skip the value: fixed-size scalars and strings only (an array ends the search).
        let size = match kind {
            0 | 1 | 7 => 1,
            2 | 3 => 2,
            4..=6 => 4,
            10..=12 => 8,
            8 => {
                text(&mut r)?;
                0
            }
            _ => return None,
        };
        std::io::copy(&mut (&mut r).take(size), &mut std::io::sink()).ok()?;
    }
    None
}

/// The model `local/NAME` names: settings from `[providers.local]` (`table`), the file checked,
/// then loaded (once per process). The registry wraps this as the `local` provider's factory;
/// this module does not know the registry, which imports it.
pub fn build(
    project_root: &Path,
    table: Option<&toml::Table>,
    name: &str,
) -> Result<Arc<dyn Model>, LocalError> {
    if !cfg!(feature = "local") {
        return Err(LocalError::NotBuilt);
    }
    let settings = LocalSettings::from_table(table)?;
    let path = resolve_path(project_root, &settings, name);
    check_file(&path)?;
    build_model(project_root, path, settings)
}

#[cfg(feature = "local")]
fn build_model(
    project_root: &Path,
    path: PathBuf,
    settings: LocalSettings,
) -> Result<Arc<dyn Model>, LocalError> {
    Ok(Arc::new(engine::LocalModel::new(
        path,
        settings,
        project_root.to_path_buf(),
    )))
}

#[cfg(not(feature = "local"))]
fn build_model(
    _project_root: &Path,
    _path: PathBuf,
    _settings: LocalSettings,
) -> Result<Arc<dyn Model>, LocalError> {
    Err(LocalError::NotBuilt)
}

/// What a build without the feature says when asked for a local model.
pub const NOT_BUILT: &str = "this switchboard was built without the `local` feature, which runs \
     GGUF models in-process; rebuild with `cargo build --release --features local` (it builds \
     llama.cpp, which needs cmake and libclang: `bash scripts/install-local-build-deps.sh`); see \
     docs/local-model.md";

#[cfg(test)]
mod tests {
    use super::*;

    /// `[providers.local]` of a switchboard.toml text.
    fn table(toml_text: &str) -> Option<toml::Table> {
        let table: toml::Table = toml::from_str(toml_text).unwrap();
        table
            .get("providers")
            .and_then(|p| p.get(PROVIDER))
            .and_then(|t| t.as_table())
            .cloned()
    }

    #[test]
    fn names_resolve_through_the_config_and_paths_against_the_root() {
        let root = Path::new("/proj");
        let s: LocalSettings = toml::from_str("models = { smol = \"m/smol.gguf\" }").unwrap();
        assert_eq!(
            resolve_path(root, &s, "smol"),
            Path::new("/proj/m/smol.gguf")
        );
        assert_eq!(
            resolve_path(root, &s, "x/y.gguf"),
            Path::new("/proj/x/y.gguf")
        );
        assert_eq!(
            resolve_path(root, &s, "/abs/y.gguf"),
            Path::new("/abs/y.gguf")
        );
    }

    #[test]
    fn bad_files_are_named_with_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let check = |name: &str| check_file(&dir.path().join(name)).unwrap_err().to_string();
        let e = check("nope.gguf");
        assert!(
            e.contains("nope.gguf") && e.contains("does not exist"),
            "{e}"
        );
        assert!(e.contains("fetch-test-model.sh"), "{e}");
        std::fs::write(dir.path().join("bad.gguf"), "not a model").unwrap();
        let e = check("bad.gguf");
        assert!(
            e.contains("bad.gguf") && e.contains("not a GGUF file"),
            "{e}"
        );
        std::fs::write(dir.path().join("empty.gguf"), "").unwrap();
        assert!(check("empty.gguf").contains("not a GGUF file"));
        assert!(check(".").contains("directory"));
        std::fs::write(dir.path().join("ok.gguf"), b"GGUF\x03\0\0\0").unwrap();
        assert_eq!(check_file(&dir.path().join("ok.gguf")), Ok(()));
    }

    #[test]
    fn the_architecture_is_read_from_the_gguf_header() {
        let dir = tempfile::tempdir().unwrap();
        let mut b = b"GGUF".to_vec();
        b.extend(3u32.to_le_bytes());
        b.extend(0u64.to_le_bytes());
        b.extend(2u64.to_le_bytes());
        for (key, kind, value) in [
            ("general.alignment", 4u32, 32u32.to_le_bytes().to_vec()),
            ("general.architecture", 8, {
                let mut v = 5u64.to_le_bytes().to_vec();
                v.extend(b"llama");
                v
            }),
        ] {
            b.extend((key.len() as u64).to_le_bytes());
            b.extend(key.as_bytes());
            b.extend(kind.to_le_bytes());
            b.extend(value);
        }
        let path = dir.path().join("m.gguf");
        std::fs::write(&path, &b).unwrap();
        assert_eq!(gguf_architecture(&path).as_deref(), Some("llama"));
        std::fs::write(&path, &b[..b.len() - 2]).unwrap();
        assert_eq!(gguf_architecture(&path), None, "truncated");
        std::fs::write(&path, b"nope").unwrap();
        assert_eq!(gguf_architecture(&path), None);
    }

    #[cfg(feature = "local")]
    #[test]
    fn building_reports_bad_files_and_settings() {
        let dir = tempfile::tempdir().unwrap();
        let e = build(dir.path(), table("").as_ref(), "nope.gguf")
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("nope.gguf") && e.contains("does not exist"),
            "{e}"
        );
        let t = table("[providers.local]\ncontxt = 10\n");
        let e = build(dir.path(), t.as_ref(), "x.gguf")
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("[providers.local]") && e.contains("contxt"),
            "{e}"
        );
    }

    #[test]
    fn unknown_settings_are_refused() {
        let t = table("[providers.local]\ncontxt = 10\n");
        let e = LocalSettings::from_table(t.as_ref())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("[providers.local]") && e.contains("contxt"),
            "{e}"
        );
    }

    #[cfg(not(feature = "local"))]
    #[test]
    fn without_the_feature_local_models_say_how_to_enable_it() {
        let dir = tempfile::tempdir().unwrap();
        let e = build(dir.path(), None, "m.gguf").err().unwrap().to_string();
        assert!(e.contains("--features local"), "{e}");
    }
}
