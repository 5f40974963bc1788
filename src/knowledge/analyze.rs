//! The parts of an analysis that need no model: the prompt each chunk is sent with, reading the
//! analyzer's JSON answer, and the short summary `analyze_file` hands back. The runtime
//! (`runtime/analyze.rs`) runs the analyzer between these steps.

use super::chunk::Chunk;
use super::extraction::{ChunkAnswer, Extraction};
use super::source::SourceFile;
use super::store::{StoreOutcome, Stored};

/// The marker lines around the numbered chunk text in a prompt.
pub const FILE_START: &str = "<file>";
pub const FILE_END: &str = "</file>";

/// The task one chunk is analysed with: where it lies, the focus, and its numbered lines.
pub fn chunk_prompt(file: &SourceFile, chunk: &Chunk, focus: &str) -> String {
    format!(
        "Analyse {label}.\nFile: {path} (language: {lang}, {size} bytes, {lines} lines)\n\
         Focus: {focus}\n\n\
         Lines are numbered as in the whole file; cite them in `lines` as `N-M`.\n\n\
         {FILE_START}\n{body}{FILE_END}\n",
        label = chunk.label(&file.path),
        path = file.path,
        lang = if file.language.is_empty() {
            "unknown"
        } else {
            &file.language
        },
        size = file.size,
        lines = file.lines,
        focus = if focus.is_empty() { "none" } else { focus },
        body = chunk.numbered(),
    )
}

/// The analyzer's answer as data. The contract gate has already checked it against the schema;
/// this only tolerates a code fence around the object.
pub fn parse_answer(text: &str) -> Result<ChunkAnswer, serde_json::Error> {
    let t = text.trim();
    let t = t
        .strip_prefix("```json")
        .or_else(|| t.strip_prefix("```"))
        .map(|rest| rest.trim_end().trim_end_matches("```"))
        .unwrap_or(t);
    serde_json::from_str(t.trim())
}

/// What `analyze_file` returns for a fresh analysis.
pub fn summary(
    file: &SourceFile,
    focus: &str,
    chunks: usize,
    extraction: &Extraction,
    outcome: &StoreOutcome,
) -> String {
    let mut out = format!(
        "Analyzed {} ({} lines, {} bytes, {}; {} chunk{})\n",
        file.path,
        file.lines,
        file.size,
        language_of(&extraction.language, &file.language),
        chunks,
        if chunks == 1 { "" } else { "s" }
    );
    if !extraction.purpose.is_empty() {
        out.push_str(&format!("Purpose: {}\n", extraction.purpose));
    }
    out.push_str(&format!(
        "Stored: {} notes ({} new, {} reinforced), {} entities, {} relations{}\n",
        outcome.notes_new + outcome.notes_reinforced,
        outcome.notes_new,
        outcome.notes_reinforced,
        outcome.entities,
        outcome.relations,
        if outcome.superseded.is_some() {
            "; the previous analysis of this file is superseded"
        } else {
            ""
        }
    ));
    if extraction.dropped > 0 {
        out.push_str(&format!(
            "Dropped: {} items whose lines were outside their chunk\n",
            extraction.dropped
        ));
    }
    let findings: Vec<String> = extraction
        .notes
        .iter()
        .filter(|n| n.kind != "focus")
        .take(5)
        .map(|n| format!("- {} ({}: lines {})", n.text, n.kind, n.lines))
        .collect();
    if !findings.is_empty() {
        out.push_str("Key findings:\n");
        out.push_str(&findings.join("\n"));
        out.push('\n');
    }
    if !focus.is_empty() {
        let points: Vec<String> = extraction
            .notes
            .iter()
            .filter(|n| n.kind == "focus")
            .take(5)
            .map(|n| format!("- {} (lines {})", n.text, n.lines))
            .collect();
        out.push_str(&format!("Focus `{focus}`:"));
        if points.is_empty() {
            out.push_str(" nothing specific found\n");
        } else {
            out.push('\n');
            out.push_str(&points.join("\n"));
            out.push('\n');
        }
    }
    out.push_str(&format!(
        "Provenance: {}{}\nRecall it with `recall` (query, path: {}).",
        file.checksum,
        git_note(file),
        file.path
    ));
    out
}

/// What `analyze_file` returns when the file is unchanged since its stored analysis.
pub fn reused(stored: &Stored) -> String {
    format!(
        "Unchanged since {} ({}): not analysed again; this is the stored analysis (asked for {} \
         time{}).\n{}",
        stored.analysed_at,
        stored.checksum,
        stored.hits,
        if stored.hits == 1 { "" } else { "s" },
        stored.summary
    )
}

fn language_of<'a>(said: &'a str, guessed: &'a str) -> &'a str {
    match (said.is_empty(), guessed.is_empty()) {
        (false, _) => said,
        (true, false) => guessed,
        _ => "language unknown",
    }
}

fn git_note(file: &SourceFile) -> String {
    match &file.git {
        None => " (not in a git checkout)".into(),
        Some(g) => format!(
            ", git {}{}{}",
            g.commit
                .as_deref()
                .map_or("(no commit)".to_string(), |c| c.chars().take(12).collect()),
            g.branch
                .as_deref()
                .map_or(String::new(), |b| format!(" on {b}")),
            if g.dirty { ", file modified" } else { "" }
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_in_a_code_fence_are_read() {
        let a = parse_answer("```json\n{\"purpose\": \"p\", \"notes\": []}\n```").unwrap();
        assert_eq!(a.purpose, "p");
        assert!(parse_answer("not json").is_err());
    }
}
