//! `grep`: a regular expression over files, with ripgrep's own crates; `path:line:text` results.

use globset::GlobBuilder;
use grep_regex::RegexMatcher;
use grep_searcher::sinks::UTF8;
use grep_searcher::{BinaryDetection, SearcherBuilder};
use serde_json::Value;

use super::{opt_str, opt_usize, resolve, str_arg, walk_files, ToolContext, ToolError, ToolOutput};

/// Result lines returned at most unless the call asks for more (`limit`); the rest are
/// counted. opencode's grep stops at 100 too.
pub const MAX_RESULTS: usize = 100;
/// The most result lines a call may ask for with `limit`.
pub const MAX_LIMIT: usize = 500;
/// Bytes of result lines returned at most. The 1.5B codebase-locator grepped all of `src` for
/// `quiet|flag|run`: 500 lines made a 14,774-token prompt, 23 minutes of prompt evaluation on
/// two cores, twice, until the session's limit. A call's result must fit the small context
/// it goes into beside the prompt; what is left out is counted per file instead. A call that
/// sets `limit` asked for that many lines, and gets them whatever their bytes.
pub const MAX_OUTPUT_BYTES: usize = 8 * 1024;
/// Files listed with their match counts when results were left out.
const MAX_COUNTED_FILES: usize = 10;
/// Matched lines are cut at this many characters.
pub const MAX_LINE_CHARS: usize = 300;

pub fn run(ctx: ToolContext<'_>, args: &Value) -> Result<ToolOutput, ToolError> {
    let pattern = str_arg("grep", args, "pattern")?;
    // `output: "count"` (the runtime's own searches, `search_first`): one `path:N` line per
    // file with matches, every file, instead of the lines; not offered to models.
    let count_only = opt_str(args, "output") == Some("count");
    let asked = opt_usize("grep", args, "limit")?;
    let (max_lines, max_bytes) = match asked {
        Some(n) => (n.clamp(1, MAX_LIMIT), usize::MAX),
        None => (MAX_RESULTS, MAX_OUTPUT_BYTES),
    };
    let asked_path = opt_str(args, "path").unwrap_or(".");
    // A glob written as the path (`src/**/*.rs`, as the 1.5B codebase-locator sent it four
    // times, each "does not exist"): its folder is searched, and the whole of it is the glob
    // unless the call gave one.
    let as_glob = (opt_str(args, "glob").is_none())
        .then(|| glob_in_path(asked_path))
        .flatten()
        .filter(|_| !ctx.project.root().join(asked_path).exists());
    let base = as_glob.map_or(asked_path, |(folder, _)| folder);
    let bad = |message: String| ToolError::BadArguments {
        tool: "grep".into(),
        message,
    };
    let matcher = RegexMatcher::new_line_matcher(pattern)
        .map_err(|e| bad(format!("bad regex `{pattern}`: {e}")))?;
    // A folder given as the glob (`thoughts/shared/decisions/`, as a 1.5B model wrote it) means
    // the files under it; as written it would match no file, and nothing would be searched.
    let glob = opt_str(args, "glob").or(as_glob.map(|(_, g)| g)).map(|g| {
        let folder = g.trim_end_matches('/');
        let is_folder = g.ends_with('/')
            || ctx
                .project
                .resolve_visible(folder)
                .is_ok_and(|p| p.is_dir());
        if is_folder && !folder.is_empty() {
            format!("{folder}/**")
        } else {
            g.to_string()
        }
    });
    let filter = match &glob {
        Some(g) => Some(
            GlobBuilder::new(g)
                .build()
                .map_err(|e| bad(format!("bad glob `{g}`: {e}")))?
                .compile_matcher(),
        ),
        None => None,
    };
    // Several paths joined (commas, semicolons, colons, blanks) are searched each: the 1.5B
    // codebase-locator sent `src/cli/run.rs,src/cli/eval.rs,…` as one `path` again after being
    // told to split it, so the search it means is made, and the output says how it was read.
    // So is a project path written after a `/`: the 1.5B thoughts-locator sent
    // `/thoughts/shared/decisions/` three times after being told the relative path.
    let (starts, joined) = match resolve(ctx, "grep", base) {
        Ok(start) => (vec![start], None),
        // Only a path that is not there; a refused one stays refused.
        Err(e @ ToolError::Failed { .. }) => {
            let parts = (!ctx.project.root().join(base).exists())
                .then(|| super::split_joined(ctx.project, base))
                .flatten()
                .ok_or(e)?;
            let starts = parts
                .iter()
                .map(|p| resolve(ctx, "grep", p))
                .collect::<Result<Vec<_>, _>>()?;
            (starts, Some(parts))
        }
        Err(e) => return Err(e),
    };
    let mut searcher = SearcherBuilder::new()
        .binary_detection(BinaryDetection::quit(b'\x00'))
        .line_number(true)
        .build();
    let mut results = Vec::new();
    let mut bytes = 0usize;
    let mut total = 0usize;
    // Matches per file, in search order (files are searched once each, sorted).
    let mut per_file: Vec<(String, usize)> = Vec::new();
    let mut paths = Vec::new();
    for (rel, entry) in starts
        .iter()
        .flat_map(|start| walk_files(ctx.project, start))
    {
        if let Some(f) = &filter {
            let file_name = entry.file_name().to_string_lossy();
            if !f.is_match(&rel) && !f.is_match(file_name.as_ref()) {
                continue;
            }
        }
        paths.push((rel, entry.into_path()));
    }
    paths.sort();
    paths.dedup();
    for (rel, path) in &paths {
        let _ = searcher.search_path(
            &matcher,
            path,
            UTF8(|line_no, line| {
                total += 1;
                match per_file.last_mut() {
                    Some((f, n)) if f == rel => *n += 1,
                    _ => per_file.push((rel.clone(), 1)),
                }
                if results.len() < max_lines && bytes < max_bytes {
                    let line = line.trim_end_matches(['\n', '\r']);
                    let shown = match line.char_indices().nth(MAX_LINE_CHARS) {
                        Some((cut, _)) => format!("{}…", &line[..cut]),
                        None => line.to_string(),
                    };
                    let result = format!("{rel}:{line_no}:{shown}");
                    if bytes.saturating_add(result.len()) <= max_bytes {
                        bytes += result.len() + 1;
                        results.push(result);
                    } else {
                        bytes = max_bytes;
                    }
                }
                Ok(true)
            }),
        );
    }
    if count_only {
        per_file.sort();
        results = per_file.iter().map(|(f, n)| format!("{f}:{n}")).collect();
    }
    let mut out = results.join("\n");
    if !count_only && total > results.len() {
        out.push_str(&format!(
            "\n({} more matches not shown; narrow the pattern or path)",
            total - results.len()
        ));
        out.push_str(&counted(per_file));
    }
    if let (Some(g), true) = (&glob, paths.is_empty()) {
        return Ok(ToolOutput::text(format!(
            "no file under `{base}` matches the glob `{g}`: nothing was searched. `glob` keeps \
             files whose path matches it (e.g. `thoughts/**/*.md`); to search a folder, give it \
             as `path`."
        )));
    }
    if total == 0 {
        out = format!("no matches for `{pattern}`");
        if let Some(hint) = word_hints(pattern, &paths) {
            out.push_str(&hint);
        }
    }
    if as_glob.is_some() {
        out =
            format!("(`path` was read as the folder `{base}` and the glob `{asked_path}`)\n{out}");
    }
    if let Some(parts) = joined {
        out = format!(
            "(`path` was read as {} project path(s), each searched: {})\n{out}",
            parts.len(),
            parts.join(", ")
        );
    }
    Ok(ToolOutput::text(out))
}

/// A path that holds a glob (`*`, `?`, `[`, `{`): the folder before its first glob part (`.`
/// when there is none) and the path as the glob. `None` for a plain path.
fn glob_in_path(path: &str) -> Option<(&str, &str)> {
    let at = path.find(['*', '?', '[', '{'])?;
    let folder = path[..at].rfind('/').map_or(".", |slash| &path[..slash]);
    let folder = if folder.is_empty() { "." } else { folder };
    Some((folder, path.strip_prefix("./").unwrap_or(path)))
}

/// Words of a pattern tried on their own, at most this many.
const MAX_HINT_WORDS: usize = 4;

/// For a pattern that matched nothing: which of its words (three letters or more, any case)
/// do occur on their own in the files searched, with a file for each, so the next search can
/// be one that finds something. Qwen2.5-Coder-1.5B searched `(# |date:|status:)yaml parser`
/// over the decisions folder twice, got "no matches" twice, and went on writing the same calls
/// until its output limit, with the file it wanted named `…-yaml-parser-serde-saphyr.md`.
/// `None` when the pattern has no such word or none occurs.
fn word_hints(pattern: &str, paths: &[(String, std::path::PathBuf)]) -> Option<String> {
    let mut words: Vec<String> = Vec::new();
    for word in pattern
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().filter(|c| c.is_alphabetic()).count() >= 3)
    {
        let word = word.to_lowercase();
        if !words.contains(&word) {
            words.push(word);
        }
    }
    words.truncate(MAX_HINT_WORDS);
    let mut searcher = SearcherBuilder::new()
        .binary_detection(BinaryDetection::quit(b'\x00'))
        .build();
    let mut found = Vec::new();
    for word in &words {
        let Ok(matcher) = RegexMatcher::new_line_matcher(&format!("(?i){}", regex::escape(word)))
        else {
            continue;
        };
        let mut files = Vec::new();
        for (rel, path) in paths {
            let mut hit = false;
            let _ = searcher.search_path(
                &matcher,
                path,
                UTF8(|_, _| {
                    hit = true;
                    Ok(false)
                }),
            );
            if hit || rel.to_lowercase().contains(word.as_str()) {
                files.push(rel.as_str());
            }
        }
        if let Some(first) = files.first() {
            found.push((files.len(), word.as_str(), *first));
        }
    }
    // The rarest word first: it tells the files apart.
    found.sort_by_key(|(n, _, _)| *n);
    let (_, rarest, _) = found.first()?;
    let listed: Vec<String> = found
        .iter()
        .map(|(n, word, first)| format!("`{word}` in {n} file(s) (e.g. `{first}`)"))
        .collect();
    Some(format!(
        "\nThe whole pattern matches no line, but single words of it do: {}. Search for one of \
         them, e.g. `(?i){rarest}`.",
        listed.join(", ")
    ))
}

/// The files with the most matches, as `path (N)`, when results were left out: the locator's
/// real question (which files?) answered without the lines.
fn counted(mut per_file: Vec<(String, usize)>) -> String {
    // Most matches first; equal counts keep the search's (path) order.
    per_file.sort_by_key(|f| std::cmp::Reverse(f.1));
    let files = per_file.len();
    let shown: Vec<String> = per_file
        .into_iter()
        .take(MAX_COUNTED_FILES)
        .map(|(f, n)| format!("{f} ({n})"))
        .collect();
    let more = files.saturating_sub(MAX_COUNTED_FILES);
    format!(
        "\nmatches per file, most first: {}{}",
        shown.join(", "),
        if more > 0 {
            format!(", and {more} more file(s)")
        } else {
            String::new()
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pattern_that_matches_nothing_is_told_which_of_its_words_do_rarest_first() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut paths = Vec::new();
        for (name, text) in [
            (
                "2026-11-02-yaml-parser-serde-saphyr.md",
                "# YAML parser\ndate: 2026-11-02\n",
            ),
            (
                "2026-11-06-path-confinement.md",
                "# Paths\ndate: 2026-11-06\n",
            ),
            (
                "2026-11-08-prompt-templates.md",
                "# Templates\ndate: 2026-11-08\n",
            ),
        ] {
            std::fs::write(dir.path().join(name), text).expect("write");
            paths.push((format!("thoughts/{name}"), dir.path().join(name)));
        }
        let hint = word_hints("(# |date:|status:)yaml parser", &paths).expect("a hint");
        assert!(
            hint.contains(
                "`yaml` in 1 file(s) (e.g. `thoughts/2026-11-02-yaml-parser-serde-saphyr.md`)"
            ),
            "{hint}"
        );
        assert!(hint.contains("`date` in 3 file(s)"), "{hint}");
        assert!(!hint.contains("`status`"), "no file has it: {hint}");
        assert!(hint.ends_with("e.g. `(?i)yaml`."), "{hint}");
        assert!(hint.find("`yaml`") < hint.find("`date`"), "{hint}");
        assert_eq!(word_hints("kubernetes", &paths), None);
        assert_eq!(word_hints("a|b", &paths), None);
    }
}
