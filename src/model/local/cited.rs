//! The files an answer may cite: those the conversation has named (the task, the tools'
//! output) that exist inside the project, and the files directly inside a folder it named. The envelope grammar spells them out as the only
//! Evidence paths, so a small model cannot cite a file that is not there; when the
//! conversation names none, any well-formed path is admitted and the checker judges it.

use crate::project::{hidden_dir, Project};

/// Most files spelled out in one grammar: past this the alternation stops paying for itself.
pub const NAMED_FILES_MAX: usize = 200;

/// The project files named in `texts`, sorted, as root-relative `/`-separated paths: each
/// word made of path characters that resolves (symlinks followed) to a file inside the root
/// and outside its hidden folders (`.git`, `.switchboard`), or to a folder there, whose own
/// files count as named ("analyse thoughts/shared/decisions/").
pub fn named_files<'a>(project: &Project, texts: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let path_char = |c: char| c.is_ascii_alphanumeric() || "_./-".contains(c);
    let mut words: Vec<&str> = texts
        .into_iter()
        .flat_map(|t| t.split(|c: char| !path_char(c)))
        .map(|w| w.trim_end_matches('.'))
        .filter(|w| (w.contains('/') || w.contains('.')) && w.len() <= 240)
        .collect();
    words.sort_unstable();
    words.dedup();
    let mut files: Vec<String> = words
        .into_iter()
        .flat_map(|w| {
            let Ok(path) = project.resolve(w) else {
                return Vec::new();
            };
            if path.is_dir() {
                let Ok(entries) = std::fs::read_dir(&path) else {
                    return Vec::new();
                };
                let mut inside: Vec<std::path::PathBuf> = entries
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.is_file())
                    .collect();
                inside.sort();
                inside.truncate(NAMED_FILES_MAX);
                inside
            } else {
                vec![path]
            }
        })
        .filter_map(|path| {
            // A file reached through a folder may be a link leading out: resolve it again.
            let rel = project.relative(&path);
            let path = project.resolve(&rel).ok()?;
            if !path.is_file() {
                return None;
            }
            let rel = project.relative(&path);
            hidden_dir(&rel).is_none().then_some(rel)
        })
        .collect();
    files.sort();
    files.dedup();
    files.truncate(NAMED_FILES_MAX);
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_existing_files_inside_the_root_are_named() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::create_dir_all(dir.path().join(".git")).unwrap();
        std::fs::write(dir.path().join("src/a.rs"), "x").unwrap();
        std::fs::write(dir.path().join("README.md"), "x").unwrap();
        std::fs::write(dir.path().join(".git/config"), "x").unwrap();
        let project = Project::open(dir.path()).unwrap();
        let texts = [
            "Read src/a.rs:12 and README.md.",
            "src/a.rs:3:fn x() also ./src/a.rs, not src/gone.rs, src (a folder), \
             ../etc/passwd or .git/config",
        ];
        assert_eq!(named_files(&project, texts), ["README.md", "src/a.rs"]);
        std::fs::write(dir.path().join("src/b.rs"), "x").unwrap();
        assert_eq!(
            named_files(&project, ["Analyse src/ and .git/"]),
            ["src/a.rs", "src/b.rs"]
        );
        assert!(named_files(&project, ["nothing here"]).is_empty());
    }
}
