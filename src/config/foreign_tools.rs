//! Tools other runtimes define in the project: opencode's custom tools, one TypeScript or
//! JavaScript file each in `.opencode/tool/` (or `.opencode/tools/`), named after the file.
//!
//! Agent files written for opencode grant them (`searxng-search: true` in scameronde/rpi-qpi,
//! whose `.opencode/tool/searxng-search.ts` defines it). switchboard cannot run them, but they
//! are not typos: a grant of one is no `agent/unknown-tool`, and lint says the tool is not
//! provided here (`agent/tool-not-provided`), as it does for opencode's `bash`. A file that
//! exports several tools defines `file_export` names, which grants already accept.

use crate::project::Project;

/// The folders read, relative to the project root.
pub const DIRS: &[&str] = &[".opencode/tool", ".opencode/tools"];

/// The custom tool names the project defines, sorted, without duplicates.
pub fn opencode_custom_tools(project: &Project) -> Vec<String> {
    let mut names: Vec<String> = DIRS
        .iter()
        .filter_map(|d| std::fs::read_dir(project.root().join(d)).ok())
        .flatten()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| {
            let path = e.path();
            let ext = path.extension()?.to_str()?;
            matches!(ext, "ts" | "js" | "mts" | "mjs")
                .then(|| path.file_stem()?.to_str().map(str::to_ascii_lowercase))
                .flatten()
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_files_name_tools() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".opencode/tool")).unwrap();
        std::fs::create_dir_all(dir.path().join(".opencode/tools")).unwrap();
        for f in ["searxng-search.ts", "crawl4ai.ts", "README.md"] {
            std::fs::write(dir.path().join(".opencode/tool").join(f), "x").unwrap();
        }
        std::fs::write(dir.path().join(".opencode/tools/crawl4ai.js"), "x").unwrap();
        let project = Project::open(dir.path()).unwrap();
        assert_eq!(
            opencode_custom_tools(&project),
            vec!["crawl4ai", "searxng-search"]
        );
    }
}
