//! Stale evidence: every Evidence + Excerpt pair in `thoughts/**/*.md` re-verified against the
//! file it cites as that file is now.
//!
//! Plans and research reports quote lines (`agent/researcher.md:50-52` and the text seen there).
//! When the cited file changes, the quote silently stops being true; this rule notices, shows the
//! lines there now, and says where the quoted lines moved if they still exist.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use crate::agent::discovery::{stamp, FileStamp};
use crate::contract::{verify_document, CheckContext, FileCache};
use crate::problem::{Problem, Severity};
use crate::project::Project;

/// The folder whose documents are checked.
pub const THOUGHTS_DIR: &str = "thoughts";

/// One document's result and what it depended on.
#[derive(Debug, Clone)]
struct Entry {
    stamp: FileStamp,
    /// Each cited file as resolved, with its stamp when checked (`None`: it did not exist).
    cited: Vec<(PathBuf, Option<FileStamp>)>,
    findings: Vec<Problem>,
}

/// Results kept between passes (`lint --watch`): a document is verified again only when it, or a
/// file it cites, changed.
#[derive(Debug, Default)]
pub struct EvidenceCache {
    entries: HashMap<PathBuf, Entry>,
}

impl EvidenceCache {
    fn fresh(&self, path: &PathBuf, now: Option<FileStamp>) -> Option<&Entry> {
        let entry = self.entries.get(path)?;
        let unchanged =
            now == Some(entry.stamp) && entry.cited.iter().all(|(p, then)| stamp(p) == *then);
        unchanged.then_some(entry)
    }
}

/// One pass without a cache.
pub fn check(project: &Project, out: &mut Vec<Problem>) {
    check_cached(project, &mut EvidenceCache::default(), out);
}

pub fn check_cached(project: &Project, cache: &mut EvidenceCache, out: &mut Vec<Problem>) {
    let files = FileCache::new();
    let ctx = CheckContext::new(project, &files);
    let mut seen = HashSet::new();
    for path in crate::markdown::files_under(&project.root().join(THOUGHTS_DIR)) {
        let now = stamp(&path);
        seen.insert(path.clone());
        if let Some(entry) = cache.fresh(&path, now) {
            out.extend(entry.findings.iter().cloned());
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let (findings, cited) = verify(project, &ctx, &path, &text);
        out.extend(findings.iter().cloned());
        if let Some(stamp) = now {
            cache.entries.insert(
                path,
                Entry {
                    stamp,
                    cited,
                    findings,
                },
            );
        }
    }
    cache.entries.retain(|p, _| seen.contains(p));
}

fn verify(
    project: &Project,
    ctx: &CheckContext,
    path: &std::path::Path,
    text: &str,
) -> (Vec<Problem>, Vec<(PathBuf, Option<FileStamp>)>) {
    // Most documents cite nothing; skip the markdown parse for them.
    if !text.contains("**Evidence**") {
        return (Vec::new(), Vec::new());
    }
    let file = project.relative(path);
    let result = verify_document(text, ctx);
    let cited = result
        .cited
        .iter()
        .map(|name| {
            // A name that does not resolve (yet) is watched at its lexical place, so creating
            // the file invalidates the result.
            let p = project
                .resolve(name)
                .unwrap_or_else(|_| project.root().join(name));
            let s = stamp(&p);
            (p, s)
        })
        .collect();
    // The checker's problem, restated for a file on disk: placed in `file` with its source line
    // shown, and the lines there now folded into the help (lint output has no separate field).
    let findings = result
        .violations
        .into_iter()
        .map(|v| {
            let mut help = v.help.clone().unwrap_or_default();
            if let Some(actual) = &v.actual {
                if !help.is_empty() {
                    help.push_str("; ");
                }
                help.push_str(&format!("{} now reads:\n{}", actual.from, actual.lines));
            }
            let mut d = Problem::new(
                Severity::Error,
                v.code,
                &file,
                format!("stale evidence: {}", v.message),
            )
            .at_line_of(text, v.line, v.column);
            if !help.is_empty() {
                d = d.with_help(help);
            }
            d
        })
        .collect();
    (findings, cited)
}
