//! `recall`: notes that `analyze_file` stored, ranked by full-text match and importance, each
//! with its provenance and whether the file changed since (`stale`). `analyze_file` itself runs
//! in the runtime (it runs the analyzer agent); its description lives here beside `recall`'s.

use serde_json::{json, Value};

use super::{opt_str, opt_usize, str_arg, ToolContext, ToolError, ToolOutput};
use crate::knowledge::{Recalled, Store};

/// Notes returned when the call does not say.
const DEFAULT_LIMIT: usize = 8;
/// Most notes one call returns.
const MAX_LIMIT: usize = 50;

pub fn recall_parameters() -> Value {
    json!({"type": "object", "properties": {
        "query": {"type": "string", "description": "words to look for, e.g. `event log fsync`"},
        "path": {"type": "string", "description": "only notes from this file or folder"},
        "kind": {"type": "string", "description": "only this kind: heading, definition, symbol, decision, fact, focus"},
        "limit": {"type": "integer", "minimum": 1, "description": "most notes returned (default 8, at most 50)"}},
        "required": ["query"]})
}

pub fn analyze_parameters() -> Value {
    json!({"type": "object", "properties": {
        "path": {"type": "string", "description": "a text file, relative to the project root"},
        "focus": {"type": "string", "description": "optional: what to look for, e.g. `error handling`"}},
        "required": ["path"]})
}

pub fn run(ctx: ToolContext<'_>, args: &Value) -> Result<ToolOutput, ToolError> {
    let query = str_arg("recall", args, "query")?;
    let path = opt_str(args, "path");
    if let Some(p) = path {
        // The filter names a path: it must be one a tool could name (no `..`, nothing hidden).
        if p.contains("..") || p.starts_with('/') || crate::project::hidden_dir(p).is_some() {
            return Err(ToolError::Refused {
                tool: "recall".into(),
                path: p.into(),
                reason: "the path filter must be a project-relative path".into(),
            });
        }
    }
    let limit = opt_usize("recall", args, "limit")?
        .unwrap_or(DEFAULT_LIMIT)
        .min(MAX_LIMIT);
    let failed = |e: crate::knowledge::KnowledgeError| ToolError::Failed {
        tool: "recall".into(),
        message: e.to_string(),
    };
    // No store yet: say so, rather than create an empty database as a side effect of a query.
    if !ctx.project.root().join(crate::knowledge::DB_PATH).exists() {
        return Ok(ToolOutput::text(render(query, &[])));
    }
    let store = Store::open(ctx.project).map_err(failed)?;
    let notes = store
        .recall(query, path, opt_str(args, "kind"), limit)
        .map_err(failed)?;
    Ok(ToolOutput::text(render(query, &notes)))
}

/// The notes as the model reads them: one block per note, provenance on its own line.
pub fn render(query: &str, notes: &[Recalled]) -> String {
    if notes.is_empty() {
        return format!(
            "No stored knowledge matches `{query}`. Use `analyze_file` on the files that should \
             know, then recall again."
        );
    }
    let mut out = format!("{} note(s) for `{query}`, best first:\n", notes.len());
    for (i, n) in notes.iter().enumerate() {
        let p = &n.provenance;
        out.push_str(&format!(
            "\n{}. [{}] {}\n   from {}:{} ({}; analysed {}{}{}){}\n",
            i + 1,
            n.kind,
            n.text,
            p.path,
            p.lines,
            p.checksum,
            p.analysed_at,
            p.git_commit
                .as_deref()
                .map_or(String::new(), |c| format!(", commit {}", &c[..c.len().min(12)])),
            if p.focus.is_empty() {
                String::new()
            } else {
                format!(", focus `{}`", p.focus)
            },
            if n.stale {
                "\n   STALE: the file changed since it was analysed; re-run analyze_file before relying on this"
            } else {
                ""
            },
        ));
    }
    out
}
