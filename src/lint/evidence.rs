//! Stale evidence: every Evidence + Excerpt pair in `thoughts/**/*.md` re-verified against the
//! file it cites as that file is now.
//!
//! Plans and research reports quote lines (`agent/researcher.md:50-52` and the text seen there).
//! When the cited file changes, the quote silently stops being true; this rule notices, shows the
//! lines there now, and says where the quoted lines moved if they still exist.

use crate::contract::{verify_evidence, CheckContext, FileCache};
use crate::diagnostic::{Diagnostic, Severity};
use crate::project::Project;

/// The folder whose documents are checked.
pub const THOUGHTS_DIR: &str = "thoughts";

pub fn check(project: &Project, out: &mut Vec<Diagnostic>) {
    let files = FileCache::new();
    let ctx = CheckContext::new(project, &files);
    for path in crate::markdown::files_under(&project.root().join(THOUGHTS_DIR)) {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        // Most documents cite nothing; skip the markdown parse for them.
        if !text.contains("**Evidence**") {
            continue;
        }
        let file = project.relative(&path);
        for v in verify_evidence(&text, &ctx) {
            let mut help = v.help.clone().unwrap_or_default();
            if let (Some(actual), Some(from)) = (&v.actual, &v.actual_from) {
                if !help.is_empty() {
                    help.push_str("; ");
                }
                help.push_str(&format!("{from} now reads:\n{actual}"));
            }
            let mut d = Diagnostic::new(
                Severity::Error,
                v.rule.code(),
                &file,
                format!("stale evidence: {}", v.message),
            )
            .at_line_of(&text, v.line, v.column);
            if !help.is_empty() {
                d = d.help(help);
            }
            out.push(d);
        }
    }
}
