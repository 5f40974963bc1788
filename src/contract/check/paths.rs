//! `named_paths: exist`: every file path an answer lists in backticks resolves inside the
//! project root. A locator's list is what its caller reads next, so an invented entry sends the
//! next hop to a file that is not there. The problem names the path, and, like a compiler's
//! "a similarly named item exists", the files whose names share words with it, so a repair turn
//! can be fixed from the message alone.

use super::CheckContext;
use crate::contract::envelope::Envelope;
use crate::contract::files::CitedFileError;
use crate::contract::rule::Rule;
use crate::problem::Problem;
use crate::project::Project;

/// Files a suggestion search looks at, at most: a project far larger costs no more than this.
const MAX_SCANNED: usize = 20_000;
/// Suggestions per missing path.
const MAX_SUGGESTIONS: usize = 3;

pub(super) fn check_named_paths(env: &Envelope, ctx: &CheckContext, out: &mut Vec<Problem>) {
    for named in &env.paths {
        let why = match ctx.files.resolve(ctx.project, &named.path) {
            Ok(_) => continue,
            Err(CitedFileError::Outside(e)) => e.to_string(),
            Err(CitedFileError::Missing(m) | CitedFileError::Unreadable(m)) => m,
        };
        let quoted = |files: Vec<String>| -> String {
            let names: Vec<String> = files.iter().map(|p| format!("`{p}`")).collect();
            names.join(", ")
        };
        let same = same_name_files(ctx.project, &named.path);
        let help = if !same.is_empty() {
            format!(
                "a file with this name is at {}: write the path as it is there, or leave the \
                 entry out",
                quoted(same)
            )
        } else {
            let similar = similar_files(ctx.project, &named.path);
            if similar.is_empty() {
                "list only paths a `grep`, `glob` or `list` result showed you in this session; \
                 search for the file again, or leave the entry out"
                    .to_string()
            } else {
                format!(
                    "files whose names share words with it: {}. List one of them if it is the \
                     document you mean; otherwise list only paths a `grep`, `glob` or `list` \
                     result showed you, or leave the entry out",
                    quoted(similar)
                )
            }
        };
        out.push(
            Rule::NamedPathMissing
                .problem(named.span.clone(), why)
                .with_help(help),
        );
    }
}

/// Up to [`MAX_SUGGESTIONS`] files anywhere in the project (the walk `glob` and `list` use)
/// whose file name is the missing path's own, or, when none is, the same once a leading date is
/// left out of both ([`undated`]). The 1.5B thoughts-locator listed
/// `thoughts/shared/research/2026-11-05-agent-discovery-precedence.md` three times over two
/// repairs, each shown only a file of that folder sharing one word with it, while the file is
/// under `thoughts/shared/decisions/`: the right folder is the one fix the message must show,
/// and, when it is the only such file, the one `contract::fix` makes itself.
pub(crate) fn same_name_files(project: &Project, missing: &str) -> Vec<String> {
    let Some(name) = missing.rsplit('/').next().filter(|n| !n.is_empty()) else {
        return Vec::new();
    };
    let root = project.root().to_path_buf();
    let (mut same, mut undated_same) = (Vec::new(), Vec::new());
    for (rel, _) in crate::tools::walk_files(project, &root).take(MAX_SCANNED) {
        let Some(own) = rel.rsplit('/').next().filter(|_| rel != missing) else {
            continue;
        };
        if own == name {
            same.push(rel);
        } else if undated(own) == undated(name) {
            undated_same.push(rel);
        }
    }
    let mut found = if same.is_empty() { undated_same } else { same };
    found.truncate(MAX_SUGGESTIONS);
    found
}

/// A file name without the `YYYY-MM-DD-` its record folder puts before it: the 1.5B
/// thoughts-locator listed `thoughts/shared/plans/small-models-drive-the-main-job.md` at its answer
/// and both repairs, for `thoughts/shared/decisions/2026-11-25-small-models-drive-the-main-job.md`.
fn undated(name: &str) -> &str {
    let b = name.as_bytes();
    let dated = b.len() > 11
        && b[..10].iter().enumerate().all(|(i, c)| {
            if i == 4 || i == 7 {
                *c == b'-'
            } else {
                c.is_ascii_digit()
            }
        })
        && b[10] == b'-';
    if dated {
        &name[11..]
    } else {
        name
    }
}

/// The words of a file name that say what it is about: lowercase runs of letters and digits,
/// without dates, numbers and words shorter than three letters.
fn words(name: &str) -> Vec<String> {
    let stem = name.rsplit('/').next().unwrap_or(name);
    let stem = stem.rsplit_once('.').map_or(stem, |(s, _)| s);
    stem.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| w.len() >= 3 && !w.chars().all(|c| c.is_ascii_digit()))
        .map(str::to_ascii_lowercase)
        .collect()
}

/// Up to [`MAX_SUGGESTIONS`] files a tool could show (the same walk as `glob` and `list`, so
/// nothing hidden or outside the root) whose names share the most words with `missing`: looked
/// for under the nearest folder of `missing` that exists, then under its top folder, then, if
/// none matches there, in the whole project. The top folder comes before the whole project
/// because a locator lists one tree: the 1.5B thoughts-locator, offered
/// `src/cli/pipeline.rs` and `switchboard.toml` for an invented
/// `thoughts/shared/plans/…-switchboard-pipeline.md`, copied a header for them into its answer,
/// when records under `thoughts/` share the word too.
pub(crate) fn similar_files(project: &Project, missing: &str) -> Vec<String> {
    let wanted = words(missing);
    if wanted.is_empty() {
        return Vec::new();
    }
    let mut folder = missing;
    let start = loop {
        let Some((parent, _)) = folder.rsplit_once('/') else {
            break None;
        };
        folder = parent;
        if let Ok(dir) = project.resolve(folder) {
            if dir.is_dir() {
                break Some(dir);
            }
        }
    };
    let root = project.root().to_path_buf();
    let top = missing
        .split_once('/')
        .and_then(|(first, _)| project.resolve(first).ok())
        .filter(|dir| dir.is_dir());
    let mut places = Vec::new();
    for dir in [start, top].into_iter().flatten() {
        if dir != root && !places.contains(&dir) {
            places.push(dir);
        }
    }
    places.push(root);
    for dir in places {
        let mut scored: Vec<(usize, String)> = crate::tools::walk_files(project, &dir)
            .take(MAX_SCANNED)
            .filter_map(|(rel, _)| {
                let have = words(&rel);
                let shared = wanted.iter().filter(|w| have.contains(w)).count();
                (shared > 0 && rel != missing).then_some((shared, rel))
            })
            .collect();
        if scored.is_empty() {
            continue;
        }
        scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        return scored
            .into_iter()
            .take(MAX_SUGGESTIONS)
            .map(|(_, rel)| rel)
            .collect();
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_name_found_in_another_folder_is_offered_first() {
        let dir = tempfile::tempdir().unwrap();
        let decisions = dir.path().join("thoughts/shared/decisions");
        let research = dir.path().join("thoughts/shared/research");
        std::fs::create_dir_all(&decisions).unwrap();
        std::fs::create_dir_all(&research).unwrap();
        std::fs::write(decisions.join("2026-11-05-agent-discovery.md"), "x\n").unwrap();
        std::fs::write(research.join("2026-11-01-agent-formats.md"), "x\n").unwrap();
        let project = Project::open(dir.path()).unwrap();
        let missing = "thoughts/shared/research/2026-11-05-agent-discovery.md";
        assert_eq!(
            same_name_files(&project, missing),
            ["thoughts/shared/decisions/2026-11-05-agent-discovery.md"]
        );
        // The word search alone stops at the nearest folder and misses it.
        assert_eq!(
            similar_files(&project, missing),
            ["thoughts/shared/research/2026-11-01-agent-formats.md"]
        );
        assert!(same_name_files(&project, "thoughts/none.md").is_empty());
        // A record's name without its date, or with another date, is the record's: when no
        // file has the name as written.
        assert_eq!(
            same_name_files(&project, "thoughts/shared/plans/agent-discovery.md"),
            ["thoughts/shared/decisions/2026-11-05-agent-discovery.md"]
        );
        assert_eq!(
            same_name_files(
                &project,
                "thoughts/shared/research/2026-11-09-agent-formats.md"
            ),
            ["thoughts/shared/research/2026-11-01-agent-formats.md"]
        );
        assert!(same_name_files(&project, "thoughts/shared/discovery.md").is_empty());
        assert_eq!(
            undated("2026-11-05-agent-discovery.md"),
            "agent-discovery.md"
        );
        assert_eq!(undated("2026-11-05.md"), "2026-11-05.md");
        assert_eq!(undated("v2026-11-05-x.md"), "v2026-11-05-x.md");
        assert!(same_name_files(&project, "thoughts/").is_empty());
    }

    #[test]
    fn words_leave_out_dates_numbers_and_short_parts() {
        assert_eq!(
            words("thoughts/shared/decisions/2026-11-25-decision-yaml-parser.md"),
            ["decision", "yaml", "parser"]
        );
        assert_eq!(words("src/a/b_c.rs"), Vec::<String>::new());
    }

    #[test]
    fn similar_files_prefer_more_shared_words_near_the_missing_path() {
        let dir = tempfile::tempdir().unwrap();
        let decisions = dir.path().join("thoughts/shared/decisions");
        std::fs::create_dir_all(&decisions).unwrap();
        std::fs::create_dir_all(dir.path().join("docs")).unwrap();
        for name in [
            "2026-11-02-yaml-parser-serde-saphyr.md",
            "2026-11-03-parser-errors.md",
            "2026-11-04-unrelated.md",
        ] {
            std::fs::write(decisions.join(name), "x\n").unwrap();
        }
        std::fs::write(dir.path().join("docs/yaml.md"), "x\n").unwrap();
        let project = Project::open(dir.path()).unwrap();
        assert_eq!(
            similar_files(
                &project,
                "thoughts/shared/decisions/2026-11-25-decision-yaml-parser.md"
            ),
            [
                "thoughts/shared/decisions/2026-11-02-yaml-parser-serde-saphyr.md",
                "thoughts/shared/decisions/2026-11-03-parser-errors.md",
            ]
        );
        // The nearest folder that exists is `thoughts/shared`, and it has one.
        assert_eq!(
            similar_files(&project, "thoughts/shared/research/yaml-notes.md"),
            ["thoughts/shared/decisions/2026-11-02-yaml-parser-serde-saphyr.md"]
        );
        // Nothing alike under `docs/`, or no folder of the path exists: the whole project.
        assert_eq!(
            similar_files(&project, "docs/parser-guide.md"),
            [
                "thoughts/shared/decisions/2026-11-02-yaml-parser-serde-saphyr.md",
                "thoughts/shared/decisions/2026-11-03-parser-errors.md",
            ]
        );
        assert_eq!(
            similar_files(&project, "src/yaml.md"),
            [
                "docs/yaml.md",
                "thoughts/shared/decisions/2026-11-02-yaml-parser-serde-saphyr.md",
            ]
        );
        // Nothing alike in its own folder: the path's top folder before the whole project, so
        // a record is offered for a record, not `docs/yaml.md`.
        std::fs::create_dir_all(dir.path().join("thoughts/shared/plans")).unwrap();
        std::fs::write(
            dir.path().join("thoughts/shared/plans/2026-11-01-other.md"),
            "x\n",
        )
        .unwrap();
        assert_eq!(
            similar_files(&project, "thoughts/shared/plans/2026-11-17-yaml.md"),
            ["thoughts/shared/decisions/2026-11-02-yaml-parser-serde-saphyr.md"]
        );
        assert!(similar_files(&project, "thoughts/nothing-alike.md").is_empty());
        // A path outside the root: nothing is walked there, only the project.
        assert_eq!(
            similar_files(&project, "../yaml/yaml.md"),
            [
                "docs/yaml.md",
                "thoughts/shared/decisions/2026-11-02-yaml-parser-serde-saphyr.md",
            ]
        );
    }
}
