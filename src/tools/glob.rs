//! `glob`: files whose project-relative path matches a pattern, walked with `ignore` so
//! `.gitignore`d files stay out (see [`super::walk_files`]).

use globset::GlobBuilder;
use serde_json::Value;

use super::{opt_str, resolve, str_arg, walk_files, ToolContext, ToolError, ToolOutput};

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
    for (rel, _) in walk_files(ctx.project, &dir) {
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
