//! `read_first: named`: the `read` calls the runtime makes for an agent before its first turn,
//! one per existing project file its task names.
//!
//! The calls are ordinary tool calls: they go through the agent's grants and permission rules,
//! are confined to the project root like any `read`, and are logged as `tool.call`/`tool.result`
//! (call ids `read_first_N`). Their output goes into the task message, after the task, rather
//! than into a tool turn: Qwen2.5-Coder-1.5B, given the same lines as a `read` result, answered
//! in JSON on every turn of two sessions (it had answered in the markdown envelope without one).
//! Paths are taken only from the task text; a name that does not resolve to a visible file
//! inside the root is left for the agent (and its contract) to deal with.

use crate::agent::definition::ReadFirst;
use crate::agent::Agent;
use crate::contract::named_path;
use crate::markdown::fence_for;
use crate::model::{Message, ToolCall};
use crate::project::Project;

/// Files read ahead at most: the task's subject. An analysis covers one `source_document`, and
/// two files of [`MAX_LINES`] lines with the analyzer's prompt overflowed a 12,288-token context
/// (Qwen2.5-Coder-1.5B, three decision records named by its researcher: 12,323 tokens).
pub const MAX_FILES: usize = 1;
/// Lines of each file read ahead. A longer file ends with `read`'s own "read on with offset"
/// note. Sized for a small model's context: 250 short lines are ~4k tokens.
pub const MAX_LINES: usize = 250;
/// A file of at most this many bytes is read ahead whole, however many lines it has. The
/// 1.5B codebase-analyzer, shown lines 1-250 of the 371-line `src/model/retry.rs` (13,915
/// bytes, ~5.4k tokens whole), read the whole file again in its first turn and answered in its
/// fourth, on 10k-token contexts; shown all of it, its first turn is its answer. 16,000 bytes
/// of numbered source are ~6.5k tokens, which leaves a 12,288-token context room for the
/// prompt, the answer and a repair.
pub const WHOLE_BYTES: u64 = 16_000;
/// Call ids of these reads are `read_first_1`, `read_first_2`, …
pub const CALL_ID_PREFIX: &str = "read_first_";

/// The `read` calls to make before `agent`'s first turn on `task` (none unless it declares
/// `read_first: named` and is granted `read`).
pub fn calls(agent: &Agent, task: &str, project: &Project) -> Vec<ToolCall> {
    if !reads_ahead(agent) {
        return Vec::new();
    }
    read_calls(&named_files(task, project, MAX_FILES), project)
}

/// Whether `agent` reads ahead: it declares `read_first: named` and is granted `read`.
pub fn reads_ahead(agent: &Agent) -> bool {
    agent.read_first == ReadFirst::Named && agent.tools.allows("read")
}

/// The folder `task` names when it names no file, for an agent that [`reads_ahead`] and may
/// `grep`: its task is about one document in there, which the runtime finds by the task's
/// words (`search_first::grep_calls` over the folder) and reads ahead like a named file. The
/// 1.5B thoughts-analyzer, asked to "Analyse thoughts/shared/decisions/ for decisions about
/// model providers", listed the folder, picked the agent-discovery record, and had its answer
/// rejected by its validator three times as not about model providers.
pub fn named_folder(agent: &Agent, task: &str, project: &Project) -> Option<String> {
    if !reads_ahead(agent) || !agent.tools.allows("grep") || !calls(agent, task, project).is_empty()
    {
        return None;
    }
    task.split_whitespace().find_map(|word| {
        let written = trim_word(word);
        if !written.contains('/') || written.contains("://") {
            return None;
        }
        let dir =
            (project.resolve_visible(written.trim_end_matches('/')).ok()).filter(|d| d.is_dir())?;
        let rel = project.relative(&dir);
        (!rel.is_empty()).then_some(rel)
    })
}

/// The note put before the reads of the file the runtime chose in `folder` for `words`.
pub fn chosen_note(folder: &str, words: &[String], file: &str) -> String {
    let words: Vec<String> = words.iter().map(|w| format!("`{w}`")).collect();
    format!(
        "\n\nYour task names the folder `{folder}/`, not one file. The runtime searched it for \
         {} (`grep`, any case), and `{file}` matched them best: it is the document your task is about.",
        words.join(", ")
    )
}

/// `read` calls for `paths` (files of the project), as [`calls`] makes them: a small file
/// whole, a longer one's first [`MAX_LINES`] lines.
pub fn read_calls(paths: &[String], project: &Project) -> Vec<ToolCall> {
    paths
        .iter()
        .enumerate()
        .map(|(i, path)| {
            let small = project
                .resolve_visible(path)
                .ok()
                .and_then(|file| std::fs::metadata(file).ok())
                .is_some_and(|m| m.len() <= WHOLE_BYTES);
            let limit = if small {
                crate::tools::read::DEFAULT_LIMIT
            } else {
                MAX_LINES
            };
            ToolCall {
                id: format!("{CALL_ID_PREFIX}{}", i + 1),
                name: "read".to_string(),
                arguments: serde_json::json!({"path": path, "limit": limit}),
            }
        })
        .collect()
}

/// The first `max` project files `task` names (existing, visible, inside the root), each once,
/// relative to the root: the documents a task is about.
pub fn named_files(task: &str, project: &Project, max: usize) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for name in task.split_whitespace().filter_map(path_in_word) {
        if seen.len() == max {
            break;
        }
        let Ok(path) = project.resolve_visible(name) else {
            continue;
        };
        let rel = project.relative(&path);
        if path.is_file() && !seen.contains(&rel) {
            seen.push(rel);
        }
    }
    seen
}

/// How a read's block in the task message begins, the path following.
const SHOWN: &str = "The runtime has read `";

/// The reads [`with_reads`] put in `message`: (path, `read`'s output) in order. For a model
/// that reads the task message itself (the built-in offline model).
pub fn shown_in(message: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (at, _) in message.match_indices(SHOWN) {
        let rest = &message[at + SHOWN.len()..];
        let Some((path, rest)) = rest.split_once('`') else {
            continue;
        };
        let Some((_, rest)) = rest.split_once('\n') else {
            continue;
        };
        let Some((fence, body)) = rest.split_once('\n') else {
            continue;
        };
        if fence.len() < 3 || !fence.chars().all(|c| c == '`') {
            continue;
        }
        let mut text = String::new();
        for line in body.lines() {
            if line == fence {
                out.push((path.to_string(), text));
                break;
            }
            text.push_str(line);
            text.push('\n');
        }
    }
    out
}

/// `task` followed by the output of each read that succeeded (a failed one is left out: the
/// agent can still `read` the file itself and see why).
pub fn with_reads(task: &str, calls: &[ToolCall], results: &[Message]) -> String {
    let mut out = task.to_string();
    for (call, result) in calls.iter().zip(results) {
        if result.is_error {
            continue;
        }
        let path = call.arguments["path"].as_str().unwrap_or_default();
        let fence = fence_for(&result.content);
        out.push_str(&format!(
            "\n\n{SHOWN}{path}` for you; its numbered lines, as `read` prints \
             them (cite these numbers):\n{fence}\n{}{}{fence}",
            result.content,
            if result.content.ends_with('\n') {
                ""
            } else {
                "\n"
            }
        ));
    }
    out
}

/// What one `read_first` read put in the task message: the file and how many of its lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shown {
    /// The file, canonical (as the project resolves it).
    file: std::path::PathBuf,
    /// As the task message names it.
    path: String,
    /// Lines 1..=`last` were shown, of `total`.
    last: usize,
    total: usize,
}

impl Shown {
    /// Whether every line of the file was shown.
    pub fn whole(&self) -> bool {
        self.last == self.total
    }
}

/// Whether `shown` holds every file `calls` read, each whole: then the agent has all the task
/// named, and its first turn is offered no tools (`runtime::hop`).
pub fn all_whole(calls: &[ToolCall], shown: &[Shown]) -> bool {
    !calls.is_empty() && shown.len() == calls.len() && shown.iter().all(Shown::whole)
}

/// The lines each successful read showed (a failed one showed nothing).
pub fn shown(calls: &[ToolCall], results: &[Message], project: &Project) -> Vec<Shown> {
    calls
        .iter()
        .zip(results)
        .filter(|(_, r)| !r.is_error)
        .filter_map(|(call, _)| {
            let path = call.arguments["path"].as_str()?;
            let limit = call.arguments["limit"]
                .as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .unwrap_or(crate::tools::read::DEFAULT_LIMIT);
            let file = project.resolve_visible(path).ok()?;
            let total = std::fs::read_to_string(&file).ok()?.lines().count();
            Some(Shown {
                file,
                path: path.to_string(),
                last: total.min(limit),
                total,
            })
        })
        .collect()
}

/// What becomes of an agent's `read` of a file a `read_first` read showed it.
#[derive(Debug, Clone, PartialEq)]
pub enum Ahead {
    /// Every line it asks for is in the task message: not run, this answer instead.
    Shown(String),
    /// It starts among the lines shown and runs past them: run with `arguments` (the same
    /// read from the first line not shown, at most [`MAX_LINES`] lines: `read`'s own note
    /// then says where to read on), its output after `note`.
    Rest {
        arguments: serde_json::Value,
        note: String,
    },
}

/// What becomes of an agent's `read` (arguments `args`) of lines a `read_first` read showed it
/// already; `None` for any other call, which runs as usual: another file, lines that start
/// past those shown, or arguments `read` itself should judge. The 1.5B thoughts-analyzer, its
/// document's lines in its task, read the same file again with another `limit` (so it was no
/// repeat of an earlier call) and spent a turn and ~4k tokens of context on lines it had; the
/// 1.5B codebase-analyzer, shown 250 of 371 lines, read all 371 again, and every later turn
/// carried the 250 twice.
///
/// The rest is capped as the first read was: the 1.5B codebase-analyzer, shown 250 of the
/// 1,043 lines of `src/runtime/hop/turn.rs`, read the whole file, and the 793 lines after
/// them made one 16,818-token prompt (796 s on two cores) while another hop's validator
/// waited 12 minutes behind it for the engine (BENCHMARKS.md, "Twenty-eighth session").
pub fn already_shown(
    shown: &[Shown],
    args: &serde_json::Value,
    project: &Project,
) -> Option<Ahead> {
    let file = project.resolve_visible(args["path"].as_str()?).ok()?;
    let seen = shown.iter().find(|s| s.file == file)?;
    let number = |key: &str, default: usize| match args.get(key) {
        None | Some(serde_json::Value::Null) => Some(default),
        Some(v) => v.as_u64().and_then(|n| usize::try_from(n).ok()),
    };
    let offset = number("offset", 1)?;
    let limit = number("limit", crate::tools::read::DEFAULT_LIMIT)?;
    if offset == 0 || limit == 0 || offset > seen.last {
        return None;
    }
    let path = &seen.path;
    let end = (offset - 1).saturating_add(limit).min(seen.total);
    if end > seen.last {
        return Some(Ahead::Rest {
            arguments: serde_json::json!({
                "path": args["path"],
                "offset": seen.last + 1,
                "limit": (end - seen.last).min(MAX_LINES),
            }),
            note: format!(
                "(lines 1-{} of `{path}` are in your task message, numbered: the runtime read \
                 them for you before your first turn. Here are the lines after them.)",
                seen.last
            ),
        });
    }
    Some(Ahead::Shown(if seen.last == seen.total {
        format!(
            "not run: the runtime read all of `{path}` (lines 1-{}) for you before your first \
             turn; its numbered lines are in your task message. Cite those line numbers, and \
             do the next step of your task.",
            seen.total
        )
    } else {
        format!(
            "not run: the runtime read lines 1-{} of `{path}` for you before your first turn; \
             they are in your task message, numbered. Cite those line numbers; `read` with \
             offset {} only for the lines after them.",
            seen.last,
            seen.last + 1
        )
    }))
}

/// The file path one whitespace-separated word of a task names, without the quotes, brackets
/// and sentence punctuation around it (`"Analyze x/y.md:"` names `x/y.md`; `x/y.md:3-9` too).
fn path_in_word(word: &str) -> Option<&str> {
    named_path(trim_word(word))
}

/// `word` without the quotes, brackets and punctuation a path is written between.
fn trim_word(word: &str) -> &str {
    word.trim_start_matches(['(', '[', '"', '\'', '`', '<'])
        .trim_end_matches([')', ']', '"', '\'', '`', '>', ',', ';', '!', '?', '.', ':'])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::parse::{parse, Outcome};

    fn agent(frontmatter: &str) -> Agent {
        let text = format!("---\ndescription: d\nmode: subagent\n{frontmatter}---\nbody\n");
        match parse(&text, "agent/a.md", "a").outcome {
            Outcome::Loaded(a) => *a,
            other => panic!("{other:?}"),
        }
    }

    fn project() -> (tempfile::TempDir, Project) {
        let dir = tempfile::tempdir().unwrap();
        for f in [
            "thoughts/d/one.md",
            "src/lib.rs",
            "src/two.rs",
            ".git/config",
        ] {
            let p = dir.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x\n").unwrap();
        }
        let project = Project::open(dir.path()).unwrap();
        (dir, project)
    }

    fn paths(calls: &[ToolCall]) -> Vec<&str> {
        calls
            .iter()
            .map(|c| c.arguments["path"].as_str().unwrap())
            .collect()
    }

    #[test]
    fn a_task_naming_only_a_folder_has_it_searched_by_a_reader_that_may_grep() {
        let (_dir, project) = project();
        let reader = agent("tools: {read: true, grep: true}\nread_first: named\n");
        let task = "Analyse `thoughts/d/` for decisions about parsers.";
        assert_eq!(
            named_folder(&reader, task, &project).as_deref(),
            Some("thoughts/d")
        );
        assert_eq!(
            named_folder(&reader, "Look in thoughts/d for it", &project).as_deref(),
            Some("thoughts/d")
        );
        // A named file is read as before; no folder, a hidden one, or one outside: nothing.
        for task in [
            "Analyse thoughts/d/one.md in thoughts/d/",
            "Analyse the decisions about parsers.",
            "Analyse .git/ for it",
            "Analyse ../ for it",
            "See https://example.com/docs/ for it",
        ] {
            assert_eq!(named_folder(&reader, task, &project), None, "{task}");
        }
        // Without `grep`, or without `read_first: named`, the agent finds the file itself.
        let no_grep = agent("tools: {read: true, grep: false}\nread_first: named\n");
        assert_eq!(named_folder(&no_grep, task, &project), None);
        let no_read_first = agent("tools: {read: true, grep: true}\n");
        assert_eq!(named_folder(&no_read_first, task, &project), None);
        let note = chosen_note("thoughts/d", &["parser".into()], "thoughts/d/one.md");
        assert!(
            note.contains("`thoughts/d/`") && note.contains("`parser`"),
            "{note}"
        );
        assert_eq!(
            paths(&read_calls(&["thoughts/d/one.md".into()], &project)),
            ["thoughts/d/one.md"]
        );
    }

    #[test]
    fn words_name_paths_without_their_punctuation() {
        assert_eq!(
            path_in_word("thoughts/d/one.md:"),
            Some("thoughts/d/one.md")
        );
        assert_eq!(path_in_word("(`src/lib.rs:3-9`)."), Some("src/lib.rs"));
        assert_eq!(path_in_word("\"src/lib.rs\","), Some("src/lib.rs"));
        assert_eq!(path_in_word("and/or"), None);
        assert_eq!(path_in_word("thoughts/**/*.md"), None);
        assert_eq!(path_in_word("https://example.com/a.md"), None);
    }

    #[test]
    fn only_the_first_existing_visible_file_inside_the_root() {
        let (_dir, project) = project();
        let a = agent("tools: {read: true}\nread_first: named\n");
        let task = "Analyze thoughts/d/one.md: compare with src/missing.rs, \
                    ../outside/x.md, .git/config, `thoughts/d/one.md:1-1`, src/lib.rs and src/two.rs";
        let calls = calls(&a, task, &project);
        assert_eq!(paths(&calls), ["thoughts/d/one.md"]);
        assert_eq!(calls[0].id, "read_first_1");
        assert_eq!(calls[0].name, "read");
        // A file this small is read whole (see `WHOLE_BYTES`).
        assert_eq!(
            calls[0].arguments["limit"],
            crate::tools::read::DEFAULT_LIMIT
        );
        let later = "Analyze src/missing.rs, ../outside/x.md, .git/config, then src/lib.rs";
        assert_eq!(paths(&super::calls(&a, later, &project)), ["src/lib.rs"]);
    }

    #[test]
    fn successful_reads_follow_the_task_in_a_fence_longer_than_their_backticks() {
        let calls = [
            ToolCall {
                id: "read_first_1".into(),
                name: "read".into(),
                arguments: serde_json::json!({"path": "a.md"}),
            },
            ToolCall {
                id: "read_first_2".into(),
                name: "read".into(),
                arguments: serde_json::json!({"path": "b.md"}),
            },
        ];
        let results = [
            Message::tool("read_first_1", "     1\t```rust\n", false),
            Message::tool("read_first_2", "refused", true),
        ];
        let text = with_reads("Analyze a.md and b.md", &calls, &results);
        assert_eq!(
            shown_in(&text),
            [("a.md".to_string(), "     1\t```rust\n".to_string())]
        );
        assert_eq!(
            text,
            "Analyze a.md and b.md\n\nThe runtime has read `a.md` for you; its numbered lines, \
             as `read` prints them (cite these numbers):\n````\n     1\t```rust\n````"
        );
    }

    #[test]
    fn nothing_is_read_unless_declared_and_granted() {
        let (_dir, project) = project();
        let task = "Analyze src/lib.rs";
        assert!(calls(&agent("tools: {read: true}\n"), task, &project).is_empty());
        let ungranted = "tools: {read: false}\nread_first: named\n";
        assert!(calls(&agent(ungranted), task, &project).is_empty());
        let text = format!("---\ndescription: d\n{ungranted}---\nbody\n");
        let warned = parse(&text, "agent/a.md", "a").diagnostics;
        assert!(
            warned.iter().any(|d| d.code == "agent/read-first"),
            "{warned:?}"
        );
    }

    fn read(path: &str) -> ToolCall {
        ToolCall {
            id: "read_first_1".into(),
            name: "read".into(),
            arguments: serde_json::json!({"path": path, "limit": MAX_LINES}),
        }
    }

    /// A file of at most [`WHOLE_BYTES`] is read whole, however many lines it has; a larger one
    /// [`MAX_LINES`] lines at a time.
    #[test]
    fn a_small_file_is_read_whole_and_a_large_one_in_part() {
        let (dir, project) = project();
        let short_lines: String = (1..=400).map(|n| format!("{n}\n")).collect();
        assert!(short_lines.len() as u64 <= WHOLE_BYTES);
        std::fs::write(dir.path().join("src/many.rs"), &short_lines).unwrap();
        let big: String = (1..=300).map(|n| format!("{n:>80}\n")).collect();
        assert!(big.len() as u64 > WHOLE_BYTES);
        std::fs::write(dir.path().join("src/big.rs"), &big).unwrap();
        let a = agent("tools: {read: true}\nread_first: named\n");
        let limit = |task: &str| calls(&a, task, &project)[0].arguments["limit"].clone();
        assert_eq!(limit("Read src/many.rs"), crate::tools::read::DEFAULT_LIMIT);
        assert_eq!(limit("Read src/big.rs"), MAX_LINES);
        // What was shown follows the call's limit.
        let many = calls(&a, "Read src/many.rs", &project);
        let results = [Message::tool("read_first_1", "lines", false)];
        let seen = shown(&many, &results, &project);
        assert!(all_whole(&many, &seen), "{seen:?}");
        let big = calls(&a, "Read src/big.rs", &project);
        let seen = shown(&big, &results, &project);
        assert!(!all_whole(&big, &seen), "{seen:?}");
    }

    #[test]
    fn a_read_of_lines_already_shown_is_answered_from_the_task() {
        let (dir, project) = project();
        let long: String = (1..=700).map(|n| format!("line {n}\n")).collect();
        std::fs::write(dir.path().join("src/long.rs"), long).unwrap();
        let calls = [
            read("thoughts/d/one.md"),
            read("src/long.rs"),
            read("src/two.rs"),
        ];
        let results = [
            Message::tool("read_first_1", "     1\tx\n", false),
            Message::tool("read_first_2", "lines", false),
            Message::tool("read_first_3", "refused", true),
        ];
        let shown = shown(&calls, &results, &project);
        assert_eq!(shown.len(), 2, "a failed read showed nothing: {shown:?}");
        let ask = |args: serde_json::Value| already_shown(&shown, &args, &project);
        let answered = |args: serde_json::Value| match ask(args) {
            Some(Ahead::Shown(text)) => text,
            other => panic!("{other:?}"),
        };

        // The whole short file was shown: any read of it, however spelled, is answered.
        let whole = answered(serde_json::json!({"path": "thoughts/d/one.md", "limit": 2000}));
        assert!(
            whole.contains("all of `thoughts/d/one.md` (lines 1-1)"),
            "{whole}"
        );
        answered(serde_json::json!({"path": "./thoughts/d/../d/one.md"}));
        // Of the long one, lines 1-250 were: a read within them is answered and points past
        // them; one that reaches past line 250 runs for the lines after 250 only, at most
        // another 250 of them; one that starts past them runs as asked.
        let part = answered(serde_json::json!({"path": "src/long.rs", "offset": 10, "limit": 20}));
        assert!(part.contains("lines 1-250 of `src/long.rs`"), "{part}");
        assert!(part.contains("offset 251"), "{part}");
        let Some(Ahead::Rest { arguments, note }) = ask(serde_json::json!({"path": "src/long.rs"}))
        else {
            panic!("a read of the whole long file runs for the rest")
        };
        assert_eq!(
            arguments,
            serde_json::json!({"path": "src/long.rs", "offset": 251, "limit": MAX_LINES})
        );
        assert!(note.contains("lines 1-250 of `src/long.rs`"), "{note}");
        let Some(Ahead::Rest { arguments, .. }) =
            ask(serde_json::json!({"path": "src/long.rs", "offset": 1, "limit": 300}))
        else {
            panic!("a read past line 250 runs for the rest")
        };
        assert_eq!(
            arguments,
            serde_json::json!({"path": "src/long.rs", "offset": 251, "limit": 50})
        );
        let Some(Ahead::Rest { arguments, .. }) =
            ask(serde_json::json!({"path": "src/long.rs", "offset": 200, "limit": 60}))
        else {
            panic!("a read across line 250 runs for the lines after it")
        };
        assert_eq!(
            arguments,
            serde_json::json!({"path": "src/long.rs", "offset": 251, "limit": 9})
        );
        assert_eq!(
            ask(serde_json::json!({"path": "src/long.rs", "offset": 251})),
            None
        );
        // Other files, a failed read's file and arguments `read` must judge run as usual.
        assert_eq!(ask(serde_json::json!({"path": "src/two.rs"})), None);
        assert_eq!(ask(serde_json::json!({"path": "src/lib.rs"})), None);
        assert_eq!(
            ask(serde_json::json!({"path": "thoughts/d/one.md", "offset": "x"})),
            None
        );
        assert_eq!(
            ask(serde_json::json!({"path": "thoughts/d/one.md", "offset": 0})),
            None
        );
        assert_eq!(ask(serde_json::json!({"limit": 5})), None);
    }
}
