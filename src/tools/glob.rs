//! `glob`: files whose project-relative path matches a pattern, walked with `ignore` so
//! `.gitignore`d files stay out.

use globset::GlobBuilder;
use serde_json::Value;

use super::{
    is_internal, opt_str, resolve, str_arg, walk_entry_inside, ToolContext, ToolError, ToolOutput,
};

/// Matches returned at most.
pub const MAX_MATCHES: usize = 1000;

pub fn run(ctx: ToolContext<'_>, args: &Value) -> Result<ToolOutput, ToolError> {
    let pattern = str_arg("glob", args, "pattern")?;
    let base = opt_str(args, "path").unwrap_or(".");
    let matcher = GlobBuilder::new(pattern.trim_start_matches("./"))
        .literal_separator(true)
        .build()
        .map_err(|e| ToolError::BadArguments {
            tool: "glob".into(),
            message: format!("bad glob `{pattern}`: {e}"),
        })?
        .compile_matcher();
    let dir = resolve(ctx, "glob", base)?;
    let base_rel = ctx.project.relative(&dir);
    let mut found = Vec::new();
    for entry in ignore::WalkBuilder::new(&dir)
        .hidden(false)
        .build()
        .flatten()
    {
        if !entry
            .file_type()
            .is_some_and(|t| t.is_file() || t.is_symlink())
        {
            continue;
        }
        let rel = ctx.project.relative(entry.path());
        if is_internal(&rel) || !walk_entry_inside(ctx.project, &entry) {
            continue;
        }
        // The pattern may be written relative to the root or to `path`.
        let under_base = rel
            .strip_prefix(&base_rel)
            .map(|r| r.trim_start_matches('/'))
            .unwrap_or(&rel);
        if matcher.is_match(&rel) || matcher.is_match(under_base) {
            found.push(rel);
        }
    }
    found.sort();
    let total = found.len();
    found.truncate(MAX_MATCHES);
    let mut out = found.join("\n");
    if total > MAX_MATCHES {
        out.push_str(&format!(
            "\n({} more matches not shown)",
            total - MAX_MATCHES
        ));
    }
    if total == 0 {
        out = format!("no files match `{pattern}`");
    }
    Ok(ToolOutput::text(out))
}
