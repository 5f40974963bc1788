//! Each session of a suite starts from the tree the suite started from. The files a session
//! wrote that were not there before it are set aside in its run folder once it is judged
//! (`runtime::runs::keep_written`), so a later session's locator cannot find an earlier
//! session's report and cite it, and a task's score does not depend on the tasks before it.
//! (On the 1.5B model every measured session was run from a suite of one task, with the
//! reports of the sessions before it moved out by hand, for this reason.)

use std::collections::HashSet;

use crate::project::Project;

/// The files a session could see before it ran, project-relative.
pub struct Before(HashSet<String>);

/// Lists the project's files as the tools see them (`tools::walk_files`: `.gitignore`d files
/// and the hidden folders are not listed, so nothing there is ever set aside).
pub fn before(project: &Project) -> Before {
    Before(visible(project))
}

fn visible(project: &Project) -> HashSet<String> {
    crate::tools::walk_files(project, project.root())
        .map(|(rel, _)| rel)
        .collect()
}

/// Of the files the session says it wrote, the ones to set aside: listed now and not before.
/// A file that was there before (read, then replaced) stays: moving it would take from the
/// project what it had. One the walk does not list stays too.
pub fn to_set_aside(project: &Project, before: &Before, written: &[String]) -> Vec<String> {
    let now = visible(project);
    let mut out: Vec<String> = written
        .iter()
        .filter(|w| now.contains(*w) && !before.0.contains(*w))
        .cloned()
        .collect();
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_new_visible_files_the_session_wrote_are_set_aside() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("thoughts/reports")).unwrap();
        std::fs::create_dir_all(root.join("build")).unwrap();
        // `ignore` reads `.gitignore` inside a git work tree only.
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(root.join(".gitignore"), "build/\n").unwrap();
        std::fs::write(root.join("thoughts/reports/old.md"), "old").unwrap();
        let project = Project::open(root).unwrap();
        let before = before(&project);
        // The session replaces a file it read, writes two new ones (one into an ignored
        // folder), and something else writes a file the session does not name.
        std::fs::write(root.join("thoughts/reports/old.md"), "replaced").unwrap();
        std::fs::write(root.join("thoughts/reports/new.md"), "new").unwrap();
        std::fs::write(root.join("build/out.md"), "ignored").unwrap();
        std::fs::write(root.join("thoughts/reports/other.md"), "not the session's").unwrap();
        let written = [
            "thoughts/reports/old.md",
            "thoughts/reports/new.md",
            "build/out.md",
            "thoughts/reports/new.md",
        ]
        .map(String::from);
        assert_eq!(
            to_set_aside(&project, &before, &written),
            ["thoughts/reports/new.md"]
        );
    }
}
