//! The files an answer may cite: those the conversation has named (the task, the tools'
//! output) that exist inside the project, and the files directly inside a folder it named. The envelope grammar spells them out as the only
//! Evidence paths, so a small model cannot cite a file that is not there; when the
//! conversation names none, any well-formed path is admitted and the checker judges it.

use crate::project::{hidden_dir, Project};

/// Most files spelled out in one grammar: past this the alternation stops paying for itself.
pub const NAMED_FILES_MAX: usize = 200;

/// Most files whose lines the grammar spells out for excerpts, and most lines and bytes of
/// them all: each quotable line costs a few rules per excerpt line, and llama.cpp's grammar
/// sampler tracks one stack per line an excerpt could still be.
pub const QUOTABLE_FILES_MAX: usize = 6;
pub const QUOTABLE_LINES_MAX: usize = 1500;
pub const QUOTABLE_BYTES_MAX: u64 = 96 * 1024;

/// What an answer may cite: the named files, and those whose lines an excerpt must copy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cited {
    /// `named_files`: the only Evidence paths (empty: any well-formed path).
    pub files: Vec<String>,
    /// Named files read whole, the ones the conversation named last first.
    pub quotable: Vec<Quotable>,
}

/// A file whose excerpts the grammar writes as runs of its own lines. Qwen2.5-Coder-1.5B
/// quoted paragraphs it had reworded or made up (`excerpt/mismatch` after two repairs, a whole
/// analysis lost); decoding that can only copy a run of the cited file's lines leaves the model
/// to choose *which* lines, and the runtime fixes the line numbers (`contract::fix`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quotable {
    pub path: String,
    /// The file's lines, without their line ends.
    pub lines: Vec<String>,
}

impl Cited {
    /// `named_files(project, texts)` with the quotable ones among them read
    /// ([`QUOTABLE_FILES_MAX`] at most, the last named first, within the line and byte bounds).
    pub fn gather<'a>(project: &Project, texts: impl IntoIterator<Item = &'a str> + Clone) -> Self {
        let files = named_files(project, texts.clone());
        let texts: Vec<&str> = texts.into_iter().collect();
        let last_named = |f: &String| texts.iter().rposition(|t| t.contains(f.as_str()));
        let mut order: Vec<&String> = files.iter().collect();
        order.sort_by_key(|f| std::cmp::Reverse(last_named(f)));
        let (mut lines_left, mut bytes_left) = (QUOTABLE_LINES_MAX, QUOTABLE_BYTES_MAX);
        let mut quotable = Vec::new();
        for path in order {
            if quotable.len() == QUOTABLE_FILES_MAX {
                break;
            }
            let Ok(full) = project.resolve(path) else {
                continue;
            };
            let fits = std::fs::metadata(&full).is_ok_and(|m| m.len() <= bytes_left);
            let Some(text) = fits.then(|| std::fs::read_to_string(&full).ok()).flatten() else {
                continue;
            };
            let lines: Vec<String> = text.lines().map(str::to_string).collect();
            if lines.is_empty() || lines.len() > lines_left {
                continue;
            }
            lines_left -= lines.len();
            // The file may have grown since its size was read.
            bytes_left = bytes_left.saturating_sub(text.len() as u64);
            quotable.push(Quotable {
                path: path.clone(),
                lines,
            });
        }
        Self { files, quotable }
    }
}

/// The project files named in `texts`, sorted, as root-relative `/`-separated paths: each
/// word made of path characters that resolves (symlinks followed) to a file inside the root
/// and outside its hidden folders (`.git`, `.switchboard`), or to a folder there, whose own
/// files count as named ("analyse thoughts/shared/decisions/").
pub fn named_files<'a>(project: &Project, texts: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut words: Vec<&str> = texts
        .into_iter()
        .flat_map(crate::project::path_words)
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

    #[test]
    fn the_files_named_last_are_read_for_quoting_within_the_bounds() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.md"), "one\ntwo\r\n").unwrap();
        std::fs::write(dir.path().join("b.md"), "three\n").unwrap();
        std::fs::write(dir.path().join("empty.md"), "").unwrap();
        let big = "x\n".repeat(QUOTABLE_LINES_MAX + 1);
        std::fs::write(dir.path().join("big.md"), big).unwrap();
        let project = Project::open(dir.path()).unwrap();
        let cited = Cited::gather(&project, ["read a.md, big.md and empty.md", "now b.md"]);
        assert_eq!(cited.files, ["a.md", "b.md", "big.md", "empty.md"]);
        let read: Vec<(&str, Vec<&str>)> = cited
            .quotable
            .iter()
            .map(|q| {
                (
                    q.path.as_str(),
                    q.lines.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        assert_eq!(
            read,
            [("b.md", vec!["three"]), ("a.md", vec!["one", "two"])]
        );
    }
}
