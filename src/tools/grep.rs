//! `grep`: a regular expression over files, with ripgrep's own crates; `path:line:text` results.

use globset::GlobBuilder;
use grep_regex::RegexMatcher;
use grep_searcher::sinks::UTF8;
use grep_searcher::{BinaryDetection, SearcherBuilder};
use serde_json::Value;

use super::{opt_str, resolve, str_arg, walk_files, ToolContext, ToolError, ToolOutput};

/// Result lines returned at most; the rest are counted.
pub const MAX_RESULTS: usize = 500;
/// Matched lines are cut at this many characters.
pub const MAX_LINE_CHARS: usize = 300;

pub fn run(ctx: ToolContext<'_>, args: &Value) -> Result<ToolOutput, ToolError> {
    let pattern = str_arg("grep", args, "pattern")?;
    let base = opt_str(args, "path").unwrap_or(".");
    let bad = |message: String| ToolError::BadArguments {
        tool: "grep".into(),
        message,
    };
    let matcher = RegexMatcher::new_line_matcher(pattern)
        .map_err(|e| bad(format!("bad regex `{pattern}`: {e}")))?;
    let filter = match opt_str(args, "glob") {
        Some(g) => Some(
            GlobBuilder::new(g)
                .build()
                .map_err(|e| bad(format!("bad glob `{g}`: {e}")))?
                .compile_matcher(),
        ),
        None => None,
    };
    let start = resolve(ctx, "grep", base)?;
    let mut searcher = SearcherBuilder::new()
        .binary_detection(BinaryDetection::quit(b'\x00'))
        .line_number(true)
        .build();
    let mut results = Vec::new();
    let mut total = 0usize;
    let mut paths = Vec::new();
    for (rel, entry) in walk_files(ctx.project, &start) {
        if let Some(f) = &filter {
            let file_name = entry.file_name().to_string_lossy();
            if !f.is_match(&rel) && !f.is_match(file_name.as_ref()) {
                continue;
            }
        }
        paths.push((rel, entry.into_path()));
    }
    paths.sort();
    for (rel, path) in paths {
        let _ = searcher.search_path(
            &matcher,
            &path,
            UTF8(|line_no, line| {
                total += 1;
                if results.len() < MAX_RESULTS {
                    let line = line.trim_end_matches(['\n', '\r']);
                    let shown = match line.char_indices().nth(MAX_LINE_CHARS) {
                        Some((cut, _)) => format!("{}…", &line[..cut]),
                        None => line.to_string(),
                    };
                    results.push(format!("{rel}:{line_no}:{shown}"));
                }
                Ok(true)
            }),
        );
    }
    let mut out = results.join("\n");
    if total > MAX_RESULTS {
        out.push_str(&format!(
            "\n({} more matches not shown; narrow the pattern or path)",
            total - MAX_RESULTS
        ));
    }
    if total == 0 {
        out = format!("no matches for `{pattern}`");
    }
    Ok(ToolOutput::text(out))
}
