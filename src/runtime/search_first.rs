//! `search_first: FOLDER`: the `grep` calls the runtime makes for an agent before its first
//! turn, one per content word of its task (at most [`MAX_WORDS`]), over that folder.
//!
//! A locator's job is to pick documents out of search results; a small model asked to search
//! first copies its prompt's answer template instead (Qwen2.5-Coder-1.5B: a codebase-locator
//! wrote the same invented list three times over its reminders), or searches with patterns it
//! copied from the prompt that match nothing. So the runtime makes the first searches, as real
//! `grep` calls (grants, permission, confinement, `tool.call`/`tool.result` with ids
//! `search_first_N`), and the files they found go with the task (see [`with_results`]), like
//! [`super::read_first`]'s reads.

use crate::agent::Agent;
use crate::model::{Message, ToolCall};
use crate::project::Project;

/// Words searched at most. Eight, not three: a planning task often names the feature to add
/// first and the thing to change last, and the thing to change is what a file is named for
/// (stop 48: one of the planner's main-job prompts named `src/config.rs` in its sixth word;
/// the first three ranked `src/model/local/grammar.rs` first). Each search is one `grep` of
/// the folder, a few milliseconds. The measurements are in
/// `thoughts/shared/decisions/2026-11-28-search-words-and-file-names.md`.
pub const MAX_WORDS: usize = 8;
/// How many more words a word counts for when the file's own name holds it (see [`own_name`]): with up
/// to [`MAX_WORDS`] words, a file that merely mentions four of them (a doc comment, an error
/// message) must not outrank the file named for the subject, and the feature a planning task
/// asks for is in no file yet. Weighed one, the CLI file named for the task's fourth word was
/// not among the files listed; weighed three, it is.
const NAME_WEIGHT: usize = 3;
/// Files listed in the task message. A small model copies the list whole, at a few tokens a
/// second, so it is short.
pub const MAX_FILES: usize = 8;
/// How the list of found files begins in the task message.
pub const HEADING: &str = "The runtime searched for ";
/// Call ids of these searches are `search_first_1`, `search_first_2`, …
pub const CALL_ID_PREFIX: &str = "search_first_";

/// Three-letter words that say nothing about a question's subject; other three-letter words
/// (`run`, `cli`, `log`, `toml`'s `key`) often are the subject.
const FILLER3: &[&str] = &[
    "add", "all", "and", "any", "are", "but", "can", "did", "etc", "for", "get", "has", "had",
    "how", "its", "let", "may", "new", "not", "now", "one", "own", "our", "out", "per", "see",
    "set", "the", "too", "two", "use", "via", "was", "way", "who", "why", "yet", "you",
];

/// Words of a question that say nothing about its subject. With eight words searched, English
/// function words (`than`, `whose`, `each`) would be searched too: the 1.5B codebase-locator,
/// given a list with `than` ×6 and `whose` ×7 beside the lint files, searched `longer` itself
/// and answered with the files that say "longer than".
const FILLER: &[&str] = &[
    "about",
    "adding",
    "analyse",
    "analyze",
    "after",
    "again",
    "also",
    "been",
    "being",
    "both",
    "correlation",
    "could",
    "decide",
    "decided",
    "decision",
    "decisions",
    "describe",
    "document",
    "documents",
    "does",
    "each",
    "every",
    "explain",
    "file",
    "files",
    "find",
    "from",
    "have",
    "into",
    "just",
    "list",
    "made",
    "make",
    "many",
    "more",
    "most",
    "much",
    "only",
    "other",
    "plan",
    "please",
    "read",
    "same",
    "should",
    "show",
    "some",
    "such",
    "tell",
    "than",
    "that",
    "their",
    "them",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "very",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "whom",
    "whose",
    "will",
    "with",
    "would",
    "your",
];

/// The content words of `task`: three letters or more, no digits, not [`FILLER`] or
/// [`FILLER3`], lowercase, each once, in order, at most [`MAX_WORDS`].
///
/// Three letters, since stop 38's planner question "Plan adding a --quiet flag to the run
/// command" lost `run` at four, and `src/cli/run.rs` was not ranked first.
///
/// A path the task names (a word holding `/`) gives no words unless nothing else does: the
/// 1.5B researcher's delegation "… the YAML parser, and why? Read
/// `thoughts/shared/decisions/…-yaml-parser-serde-saphyr.md`" searched for `thoughts`, which
/// that file's name lacks, so the runtime did not add the file and asked for it instead.
/// Alone, a path's words are those of its file's own name, not its folders': handed "Read
/// `thoughts/shared/decisions/2026-11-08-prompt-templates-minijinja.md` and
/// `src/model/local/template.rs`", the 1.5B thoughts-locator was shown the files matching
/// `thought`, `shared`, `src`, `model` and `local` (nearly every document) and then ran seven
/// `grep`s of those words over 17 minutes.
pub fn words(task: &str) -> Vec<String> {
    let (paths, prose): (Vec<&str>, Vec<&str>) =
        task.split_whitespace().partition(|w| w.contains('/'));
    let names: Vec<String> = paths
        .iter()
        .map(|p| p.trim_matches(|c: char| !c.is_alphanumeric()))
        .map(|p| p.rsplit('/').next().unwrap_or(p))
        .map(|name| name.rsplit_once('.').map_or(name, |(stem, _)| stem))
        .map(|name| name.replace(['-', '_'], " "))
        .collect();
    [prose.join(" "), names.join(" "), task.to_string()]
        .iter()
        .map(|text| words_of(text))
        .find(|words| !words.is_empty())
        .unwrap_or_default()
}

fn words_of(task: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in task.split(|c: char| !c.is_alphanumeric() && c != '-' && c != '_') {
        let word = word.trim_matches(['-', '_']).to_lowercase();
        let letters = word
            .chars()
            .all(|c| c.is_alphabetic() || c == '-' || c == '_');
        let n = word.chars().count();
        if !((n >= 4 || (n == 3 && !FILLER3.contains(&word.as_str())))
            && letters
            && !FILLER.contains(&word.as_str()))
        {
            continue;
        }
        let word = searched_as(&word);
        if !out.contains(&word) {
            out.push(word);
            if out.len() == MAX_WORDS {
                break;
            }
        }
    }
    out
}

/// What is searched for `word`: its stem where that is a prefix of it at least five letters
/// long, or the singular of a plural (`confined` → `confin`, `paths` → `path`), else the word.
/// Why: "Why are agent paths confined to the project root?" searched for `confined`, which
/// only a document about agent discovery holds; the decision it asks about is
/// `…-path-confinement.md`, which says "confinement". A stem shorter than five letters
/// (`retry` → `retr`) would match unrelated words, so the word is kept.
fn searched_as(word: &str) -> String {
    use crate::model::offline::bm25::{grep_prefix, stem};
    let stem = stem(word);
    let prefix = grep_prefix(&stem);
    let plural = word.strip_suffix('s') == Some(prefix);
    if word.starts_with(prefix) && (prefix.chars().count() >= 5 || plural) {
        prefix.to_string()
    } else {
        word.to_string()
    }
}

/// The `grep` calls to make before `agent`'s first turn on `task` (none unless it declares
/// `search_first:` and is granted `grep`).
pub fn calls(agent: &Agent, task: &str, project: &Project) -> Vec<ToolCall> {
    let Some(folder) = &agent.search_first else {
        return Vec::new();
    };
    if !agent.tools.allows("grep") || project.resolve_visible(folder).is_err() {
        return Vec::new();
    }
    grep_calls(folder, task)
}

/// One counting `grep` of `folder` per word of `task` ([`words`]), ids `search_first_N`.
pub fn grep_calls(folder: &str, task: &str) -> Vec<ToolCall> {
    words(task)
        .into_iter()
        .enumerate()
        .map(|(i, word)| ToolCall {
            id: format!("{CALL_ID_PREFIX}{}", i + 1),
            name: "grep".to_string(),
            // Counts per file, every file: the ranking below needs them all, and the model is
            // shown the ranking, not these results.
            arguments: serde_json::json!({"pattern": format!("(?i){}", regex::escape(&word)), "path": folder, "output": "count"}),
        })
        .collect()
}

/// `task` followed by the files the searches found, those matching the most of the words first
/// (in their lines or their path; then the most in their path, then the most matching lines), at
/// most [`MAX_FILES`], each with its counts of matching lines.
///
/// Files, not lines: a locator's answer is a list of files, and Qwen2.5-Coder-1.5B, shown the
/// first 15 `path:line:text` lines of each search, copied those lines as its list until its
/// output limit, three times over; shown files with their first matching line, it copied all
/// twelve, lines included (1,141 tokens, four minutes).
pub fn with_results(task: &str, calls: &[ToolCall], results: &[Message]) -> String {
    listing(task, calls, results).message
}

/// The task message of [`with_results`], and the file it lists first.
pub struct Listing {
    pub message: String,
    /// The file that matched the most words (`None` when nothing matched).
    pub first: Option<String>,
    /// Whether every search succeeded and the first file's own name (not its folders', see
    /// [`own_name`]) is named for two or more of the words searched that set files apart, or
    /// for every one of them when each word found files (see [`named_in`], [`everywhere`]): a
    /// locator that leaves it out has it added by the runtime, not asked (see [`with_file`]).
    pub named_for_task: bool,
    /// Whether the first file holds (in its lines or name) a word searched that sets files
    /// apart: one that only a word nearly every file holds does not answer anything, and is
    /// not added to an answer that names no file.
    pub sets_apart: bool,
}

/// [`with_results`], with the file it ranks first.
pub fn listing(task: &str, calls: &[ToolCall], results: &[Message]) -> Listing {
    let listing = |message: String, first: Option<String>| Listing {
        message,
        first,
        named_for_task: false,
        sets_apart: false,
    };
    struct Hits<'r> {
        path: &'r str,
        /// Matching lines per searched word, in the order of `searched`.
        lines: Vec<usize>,
    }
    let mut searched: Vec<String> = Vec::new();
    let mut unmatched: Vec<String> = Vec::new();
    let mut files: Vec<Hits> = Vec::new();
    let mut more = false;
    let mut failed = false;
    for (call, result) in calls.iter().zip(results) {
        if result.is_error {
            failed = true;
            continue;
        }
        let pattern = call.arguments["pattern"].as_str().unwrap_or_default();
        let word = pattern.trim_start_matches("(?i)").replace('\\', "");
        if result.content.starts_with("no ") {
            unmatched.push(format!("`{word}`"));
            continue;
        }
        let w = searched.len();
        searched.push(word);
        for line in result.content.lines() {
            // `path:N` (a count, as these calls ask for) or `path:N:text` (one matching line).
            let mut parts = line.splitn(3, ':');
            let (Some(path), Some(n), text) = (parts.next(), parts.next(), parts.next()) else {
                // grep's own closing note ("(N more lines)"): its counts are lower bounds.
                more |= line.starts_with('(');
                continue;
            };
            let Ok(n) = n.parse::<usize>() else {
                more |= line.starts_with('(');
                continue;
            };
            let n = if text.is_some() { 1 } else { n };
            let at = match files.iter().position(|f| f.path == path) {
                Some(i) => i,
                None => {
                    files.push(Hits {
                        path,
                        lines: Vec::new(),
                    });
                    files.len() - 1
                }
            };
            let hits = &mut files[at];
            hits.lines.resize(hits.lines.len().max(w + 1), 0);
            hits.lines[w] += n;
        }
    }
    if files.is_empty() {
        if unmatched.is_empty() {
            return listing(task.to_string(), None);
        }
        return listing(
            format!(
                "{task}\n\n{HEADING}{} for you (`grep`, any case): no file matches any of them.",
                unmatched.join(", ")
            ),
            None,
        );
    }
    // A word in a file's path counts as much as one in its lines: a decision record is named
    // for its subject (`2026-11-02-yaml-parser-serde-saphyr.md` never says "parser" inside).
    // Counted in halves: a word on one line only counts half, a passing mention rather than a
    // subject. "Plan logging the retry delay of each model retry in the trace view" ranked
    // `src/model/mod.rs` (`delay` and `view` once each) over `src/model/retry.rs` (`delay` on
    // 18 lines).
    let named = |f: &Hits, w: &str| named_in(f.path, w);
    let words = |f: &Hits| {
        (searched.iter().enumerate())
            .map(|(i, w)| match f.lines.get(i).copied().unwrap_or(0) {
                _ if named(f, w) => 2,
                0 => 0,
                1 => 1,
                _ => 2,
            })
            .sum::<usize>()
    };
    let in_path = |f: &Hits| searched.iter().filter(|w| named(f, w)).count();
    // The words a file holds at all, whole or half: among equal scores, more of the task's words
    // on a line each beat one word on many lines.
    let found = |f: &Hits| {
        (searched.iter().enumerate())
            .filter(|(i, w)| f.lines.get(*i).is_some_and(|&n| n > 0) || named(f, w))
            .count()
    };
    // A word the file's own name holds counts once more: a file named for the subject is about
    // it, where one that holds the words in a line may only mention them. "Plan adding a
    // --quiet flag to the run command" ranked `src/runtime/search_first.rs` first, whose doc
    // comment quotes that question, over `src/cli/run.rs` (`flag`, `run`, and named `run`).
    //
    // A file in a command folder is named for its command, which is the feature only when the
    // task is about a command ([`about_a_command`]): the planner's task of a new lint for
    // agent files ranked `src/cli/lint.rs`, the command that prints the findings, over
    // `src/lint/mod.rs`, where lints are made.
    let command_task = about_a_command(task, &searched);
    let own_named = |f: &Hits, w: &str| {
        own_name_holds(f.path, w) && (command_task || !in_command_folder(f.path))
    };
    let in_name = |f: &Hits| searched.iter().filter(|w| own_named(f, w)).count();
    // Among files named for as many words, the one named for the task's earlier word: "Plan
    // adding a --quiet flag to the run command" has `src/cli/run.rs` and
    // `src/workflow/command.rs` each named for one word and holding all four.
    let first_named = |f: &Hits| {
        searched
            .iter()
            .position(|w| own_named(f, w))
            .unwrap_or(usize::MAX)
    };
    let score = |f: &Hits| words(f) + 2 * NAME_WEIGHT * in_name(f);
    let total = |f: &Hits| f.lines.iter().sum::<usize>();
    // Stable: among equals, the order grep found them in.
    files.sort_by(|a, b| {
        score(b)
            .cmp(&score(a))
            .then(first_named(a).cmp(&first_named(b)))
            .then(found(b).cmp(&found(a)))
            .then(in_path(b).cmp(&in_path(a)))
            .then(total(b).cmp(&total(a)))
    });
    let list: Vec<String> = searched.iter().map(|w| format!("`{w}`")).collect();
    let mut out = format!(
        "{task}\n\n{HEADING}{} for you (`grep`, any case). The files with \
         matches, those with the most of these words first:\n",
        list.join(", ")
    );
    for f in files.iter().take(MAX_FILES) {
        let counts: Vec<String> = f
            .lines
            .iter()
            .zip(&searched)
            .filter(|(n, _)| **n > 0)
            .map(|(n, w)| format!("{w} ×{n}"))
            .collect();
        out.push_str(&format!("- `{}` ({})\n", f.path, counts.join(", ")));
    }
    if files.len() > MAX_FILES {
        out.push_str(&format!("({} more files)\n", files.len() - MAX_FILES));
    }
    if more {
        out.push_str("(some searches had more matches than they returned)\n");
    }
    if !unmatched.is_empty() {
        out.push_str(&format!("No file matches {}.\n", unmatched.join(", ")));
    }
    // Named for the task: every word of the task searched, each found, and each that sets files
    // apart in the file's own name (not a folder's: under `thoughts/shared/…` every file is
    // "named" for `shared`); or named for two words or more that set files apart, whatever the
    // other words found: with up to eight words searched, "How many repair turns does an agent
    // get, and what happens after them?" also searches `happens`, which
    // `2026-11-10-repair-turns.md` is not named for and is no less the answer.
    let apart: Vec<(usize, &String)> = (searched.iter().enumerate())
        .filter(|(w, _)| !everywhere(files.iter().map(|f| f.lines.get(*w) > Some(&0))))
        .collect();
    let sets_apart = files.first().is_some_and(|f| {
        apart
            .iter()
            .any(|(i, w)| f.lines.get(*i) > Some(&0) || named(f, w))
    });
    let apart: Vec<&String> = apart.into_iter().map(|(_, w)| w).collect();
    Listing {
        sets_apart,
        named_for_task: !failed
            && files.first().is_some_and(|f| {
                let named = apart.iter().filter(|w| own_named(f, w)).count();
                named >= 2 || (unmatched.is_empty() && !apart.is_empty() && named == apart.len())
            }),
        ..listing(
            out.trim_end().to_string(),
            files.first().map(|f| f.path.to_string()),
        )
    }
}

/// The folder names that hold a command-line tool's commands ([`named_in`]).
const COMMAND_FOLDERS: [&str; 2] = ["cli", "cmd"];

/// The words that make a task one about a command-line command rather than a feature.
const COMMAND_WORDS: [&str; 4] = ["command", "subcommand", "flag", "option"];

/// Whether the task is about a command: it writes a flag (`--since`), or one of its words, or
/// of the words searched for it, is a [`COMMAND_WORDS`] word or its plural (not a longer word
/// it begins: "optional" is no option).
fn about_a_command(task: &str, searched: &[String]) -> bool {
    let flag = task.match_indices("--").any(|(i, _)| {
        task[i + 2..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic())
    });
    let command = |w: &String| {
        let w = w.to_lowercase();
        COMMAND_WORDS
            .iter()
            .any(|c| w == *c || w.strip_suffix('s') == Some(c))
    };
    flag || words(task).iter().any(command) || searched.iter().any(command)
}

/// Whether one of `path`'s folders is a [`COMMAND_FOLDERS`] folder.
fn in_command_folder(path: &str) -> bool {
    let folders = path.rsplit_once('/').map_or("", |(dir, _)| dir);
    folders
        .to_lowercase()
        .split('/')
        .any(|part| COMMAND_FOLDERS.contains(&part))
}

/// Files matched before a word found in nearly all of them can be told to set none apart.
const EVERYWHERE_MIN_FILES: usize = 10;

/// Whether a word, matched in the files where `matched` is true (one flag per file any word
/// matched), is in nine of ten of them or more: it says nothing of which file is about the
/// task. "How many repair turns does an agent get" searched `agent`, which 37 of the 39
/// records hold, so `2026-11-10-repair-turns.md`, named for the other two words, was asked for
/// instead of added, and the 1.5B locator kept an answer without it.
fn everywhere(matched: impl Iterator<Item = bool>) -> bool {
    let (mut hit, mut all) = (0, 0);
    for m in matched {
        all += 1;
        hit += usize::from(m);
    }
    all >= EVERYWHERE_MIN_FILES && hit * 10 >= all * 9
}

/// Whether `path` is named for `word`: one of its parts (split at `/`, `.`, `-`, `_`) is the word
/// or its plural, or, for a word of five letters or more, begins with it (`session` in
/// `sessions.rs`, `parser` in `yaml-parser-serde-saphyr.md`), or is a part of five letters or
/// more the word begins with (`configurable`, searched as `configurabl`, in `config.rs`). Parts,
/// not any substring: `run` is in every path under `src/runtime/`, and only `src/cli/run.rs`
/// is named for it. A command-line tool often keeps its commands in a folder called `cli` or
/// `cmd` (Go's `cmd/` layout, our `src/cli`; cargo's `commands/` is a plural), so those name a
/// path for `command`: "Plan a `--since DATE` filter for the sessions command" ranked
/// `src/runtime/session.rs` over `src/cli/sessions.rs`, each named for `session` only. The
/// folder names the path, not a file's own name ([`own_name_holds`]): `src/cli/mod.rs` is not
/// the sessions command.
fn named_in(path: &str, word: &str) -> bool {
    path.to_lowercase().split(['/', '.', '-', '_']).any(|part| {
        part_named(part, word)
            || (COMMAND_FOLDERS.contains(&part) && ["command", "subcommand"].contains(&word))
    })
}

/// Whether the file's own name ([`own_name`]) holds `word`, as [`named_in`] reads a part,
/// without the command folders.
fn own_name_holds(path: &str, word: &str) -> bool {
    own_name(path)
        .to_lowercase()
        .split(['/', '.', '-', '_'])
        .any(|part| part_named(part, word))
}

/// One path part named for `word` (see [`named_in`]).
fn part_named(part: &str, word: &str) -> bool {
    part == word
        || part.strip_suffix('s') == Some(word)
        || part.strip_suffix("es") == Some(word)
        || word.strip_suffix('s') == Some(part)
        || word.strip_suffix("es") == Some(part)
        || (word.chars().count() >= 5 && part.starts_with(word))
        || (part.chars().count() >= 5 && word.starts_with(part))
}

/// The part of `path` that names the file itself: its file name, or, for a module's
/// `mod.rs`, the folder with it (`src/lint/mod.rs` is the `lint` module, `lint/mod.rs`).
fn own_name(path: &str) -> &str {
    let mut from = path.rfind('/').map_or(0, |i| i + 1);
    if &path[from..] == "mod.rs" && from > 0 {
        from = path[..from - 1].rfind('/').map_or(0, |i| i + 1);
    }
    &path[from..]
}

/// The ask for an answer that leaves out the file the runtime's search ranked `first`: `None`
/// when the answer names it (its path anywhere in the text). `title` is the file's first
/// heading, shown so the model can judge the file without reading it. When the answer has an
/// `<answer>` block, the ask ends with the answer with the file added ([`with_file`]), to send
/// back as it stands.
///
/// Why: Qwen2.5-Coder-1.5B, as thoughts-locator under a grammar, was given the list headed by
/// `2026-11-02-yaml-parser-serde-saphyr.md` (yaml ×12) for "What did we decide about the YAML
/// parser", listed the directory three times, then answered "No documents under thoughts/ match"
/// and suggested two files from lower in the list; the researcher passed those on and the report
/// never cited the decision. Asked to answer again with the file, with or without a way out, it
/// sent its answer back word for word: this model copies the last answer it sees. Offered the
/// copy with the file and, before it, the way out "send your answer again as it was", it took
/// the way out word for word. So the copy is the one answer shown, and the way out is an edit of
/// it (take the file out). The model's answer still decides: `ask_once` keeps the first answer
/// unless the second names the file.
pub fn left_out_ask(answer: &str, first: &str, title: Option<&str>) -> Option<String> {
    if names_file(answer, first) {
        return None;
    }
    let titled = title.map_or(String::new(), |t| format!(" (its title: \"{t}\")"));
    let mut ask = format!(
        "[runtime] Your answer leaves out `{first}`{titled}, the file the runtime's search in \
         your task ranked first: it matches the most of the task's words."
    );
    match with_file(answer, first, title) {
        Some(copy) => {
            let fence = crate::markdown::fence_for(&copy);
            ask.push_str(&format!(
                " Send back this copy of your answer, with the file added, as it stands (if its \
                 title shows it is about something else, take the file out of the copy \
                 first):\n{fence}markdown\n{}\n{fence}",
                copy.trim_end()
            ));
        }
        None => ask.push_str(
            " Answer again in the same format with that file listed first, and first among the \
             files you suggest, unless its title shows it is about something else.",
        ),
    }
    Some(ask)
}

/// Whether `answer` names `file`: in its `<answer>` block when it has one, since that is what
/// the caller takes from it, else anywhere. Qwen2.5-Coder-1.5B as codebase-locator listed
/// `src/cli/run.rs` in its `<thinking>` and answered "Nothing in the source tree matches
/// --quiet.": counted as named, the file was never asked for, and the planner had no file.
pub fn names_file(answer: &str, file: &str) -> bool {
    let env = crate::contract::Envelope::parse_lenient(answer);
    env.answer_text(answer).unwrap_or(answer).contains(file)
}

/// `answer` with `file` added inside its `<answer>` block: listed first (after the block's first
/// `##` heading), put first on the line that suggests files (one that is not a list item and
/// names a path after a colon: "Suggested for analysis: `…`", "Start with: `…`"), and with the
/// block's "nothing matches" line ("No documents … match …", "Nothing … matches …") taken out.
/// `None` without an `<answer>` block.
pub fn with_file(answer: &str, file: &str, title: Option<&str>) -> Option<String> {
    let lines: Vec<&str> = answer.lines().collect();
    let open = lines.iter().position(|l| l.trim() == "<answer>")?;
    let close = open + lines[open..].iter().position(|l| l.trim() == "</answer>")?;
    let entry = match title {
        Some(t) => format!("- `{file}` — {t}"),
        None => format!("- `{file}`"),
    };
    let heading = lines[open + 1..close]
        .iter()
        .position(|l| l.trim_start().starts_with("## "))
        .map(|i| open + 1 + i);
    let mut out: Vec<String> = Vec::with_capacity(lines.len() + 2);
    let mut suggested = false;
    for (i, line) in lines.iter().enumerate() {
        let inside = open < i && i < close;
        let t = line.trim();
        let nothing = (t.starts_with("No ") || t.starts_with("Nothing ")) && t.contains("match");
        if inside && nothing {
            continue;
        }
        let suggests = !t.starts_with('-') && !t.starts_with('#') && t.contains(": `");
        if inside && suggests && !suggested {
            suggested = true;
            let at = line.find(": `").unwrap_or(0) + 2;
            out.push(format!("{}`{file}`, {}", &line[..at], &line[at..]));
            continue;
        }
        out.push(line.to_string());
        if Some(i) == heading || (heading.is_none() && i == open) {
            out.push(entry.clone());
        }
    }
    Some(out.join("\n"))
}

/// What an entry the runtime added says after the file's title.
pub const ADDED: &str = "(added by the runtime: its search ranked this file first, and the \
                         file's name holds the words of the task that set files apart)";

/// What an entry the runtime added says after its title when the agent, asked, left it out.
pub const ADDED_AFTER_ASK: &str = "(added by the runtime: its search ranked this file first, \
                                   and the answer left it out when asked)";

/// What an entry the runtime added to an answer that named no file says after its title.
pub const ADDED_TO_NONE: &str = "(added by the runtime: its search ranked this file first, and \
                                 the answer named no file)";

/// Whether the `<answer>` block of `answer` (all of it, without one) names no file: no word
/// there is a path with a folder and an extension.
pub fn names_no_file(answer: &str) -> bool {
    let env = crate::contract::Envelope::parse_lenient(answer);
    let block = env.answer_text(answer).unwrap_or(answer);
    !crate::project::path_words(block).any(|w| w.contains('/') && w.contains('.'))
}

/// The first Markdown heading (`# …`) of `path` in `project`, for [`left_out_ask`]: at most
/// 120 characters.
pub fn title(project: &Project, path: &str) -> Option<String> {
    let full = project.resolve(path).ok()?;
    let text = std::fs::read_to_string(full).ok()?;
    let heading = text
        .lines()
        .find_map(|l| l.strip_prefix("# "))?
        .trim()
        .chars()
        .take(120)
        .collect::<String>();
    (!heading.is_empty()).then_some(heading)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The runtime's `i`th search for `word` over `folder`, as [`calls`] makes it.
    fn grep_call(i: usize, word: &str, folder: &str) -> ToolCall {
        ToolCall {
            id: format!("{CALL_ID_PREFIX}{i}"),
            name: "grep".into(),
            arguments: serde_json::json!({"pattern": format!("(?i){word}"), "path": folder}),
        }
    }

    /// One `grep` call per word over `src`, numbered from 1 in order.
    fn src_grep_calls<S: AsRef<str>>(words: &[S]) -> Vec<ToolCall> {
        (words.iter().enumerate())
            .map(|(i, w)| grep_call(i + 1, w.as_ref(), "src"))
            .collect()
    }

    /// The results of the calls [`src_grep_calls`] numbered, one text each, in order.
    fn grep_results(texts: &[&str]) -> Vec<Message> {
        (texts.iter().enumerate())
            .map(|(i, r)| Message::tool(format!("search_first_{}", i + 1), *r, false))
            .collect()
    }

    #[test]
    fn the_words_of_a_question_are_its_subject() {
        assert_eq!(
            words("What did we decide about the YAML parser, and why? Correlation: 01a2-bc"),
            vec!["yaml", "parser"]
        );
        assert_eq!(
            words("Where is the retry policy for model requests decided? retry"),
            vec!["retry", "polic", "model", "request"]
        );
        assert!(words("Why? How?").is_empty());
        // A named path gives no words beside a question's own; alone, it is the subject.
        assert_eq!(
            words("What about the YAML parser? Read `thoughts/shared/d/yaml-parser.md`."),
            vec!["yaml", "parser"]
        );
        assert_eq!(
            words("Read `thoughts/shared/d/yaml-parser.md`."),
            vec!["yaml", "parser"]
        );
        assert_eq!(
            words(
                "Read `thoughts/shared/decisions/2026-11-08-prompt-templates-minijinja.md` and \
                 `src/model/local/template.rs`. Correlation: 01a222da-5b9f"
            ),
            vec!["prompt", "templat", "minijinja"]
        );
        assert_eq!(
            words("Plan adding a --quiet flag to the run command."),
            vec!["quiet", "flag", "run", "command"]
        );
        assert_eq!(
            words("How many repair turns does an agent get, and why?"),
            vec!["repair", "turn", "agent"]
        );
        // Searched by stem, so `confined` finds "confinement" too; a short stem is not used.
        assert_eq!(
            words("Why are agent paths confined to the project root, and how?"),
            vec!["agent", "path", "confin", "project", "root"]
        );
        assert_eq!(words("retry logging"), vec!["retry", "logging"]);
        // Function words are no subject.
        assert_eq!(
            words("A notice for agents whose body is shorter than 30 lines, each"),
            vec!["notic", "agent", "body", "shorter", "line"]
        );
        // At most eight, in the task's order.
        assert_eq!(
            words("Plan making the default step limit of a hop configurable in switchboard.toml, per agent"),
            vec!["making", "default", "step", "limit", "hop", "configurabl", "switchboard", "toml"]
        );
    }

    #[test]
    fn the_files_matching_the_most_words_come_first_each_once() {
        let call = |i: usize, word: &str| grep_call(i, word, "thoughts");
        let calls = vec![call(1, "yaml"), call(2, "parser")];
        let mut yaml: Vec<String> = (1..=5).map(|i| format!("a.md:{i}:yaml {i}")).collect();
        yaml.push("b.md:7:  the YAML parser".into());
        yaml.push("(3 more lines)".into());
        let parser = "c.md:2:a parser\nb.md:7:  the YAML parser".to_string();
        let results = vec![
            Message::tool("search_first_1", yaml.join("\n"), false),
            Message::tool("search_first_2", parser, false),
        ];
        let text = with_results("Find YAML.", &calls, &results);
        let listed: Vec<&str> = text.lines().filter(|l| l.starts_with("- ")).collect();
        assert_eq!(
            listed,
            [
                "- `b.md` (yaml ×1, parser ×1)",
                "- `a.md` (yaml ×5)",
                "- `c.md` (parser ×1)",
            ],
            "{text}"
        );
        assert!(text.starts_with("Find YAML.\n\nThe runtime searched for `yaml`, `parser`"));
        assert!(text.ends_with("(some searches had more matches than they returned)"));
        let many: Vec<String> = (1..=20).map(|i| format!("f{i}.md:1:yaml")).collect();
        let text = with_results(
            "t",
            &calls[..1],
            &[Message::tool("search_first_1", many.join("\n"), false)],
        );
        assert_eq!(
            text.lines().filter(|l| l.starts_with("- ")).count(),
            MAX_FILES
        );
        assert!(text.ends_with("(12 more files)"), "{text}");
        // A file named for a word it never says ranks with the files that say it.
        let named = vec![
            Message::tool(
                "search_first_1",
                "a.md:1:yaml\nd/yaml-parser.md:3:yaml",
                false,
            ),
            Message::tool("search_first_2", "a.md:2:parser", false),
        ];
        let text = with_results("t", &calls, &named);
        let listed: Vec<&str> = text.lines().filter(|l| l.starts_with("- ")).collect();
        assert_eq!(
            listed,
            [
                "- `d/yaml-parser.md` (yaml ×1)",
                "- `a.md` (yaml ×1, parser ×1)"
            ]
        );
        // A file whose own name is one of the words outranks one that only says one word more
        // (a comment quoting the question), folders aside.
        let words3 = vec![call(1, "quiet"), call(2, "flag"), call(3, "run")];
        let quoted = vec![
            Message::tool("search_first_1", "src/runtime/search_first.rs:92", false),
            Message::tool(
                "search_first_2",
                "src/runtime/search_first.rs:1\nsrc/cli/run.rs:6",
                false,
            ),
            Message::tool(
                "search_first_3",
                "src/runtime/search_first.rs:3\nsrc/cli/run.rs:27",
                false,
            ),
        ];
        assert_eq!(
            listing("t", &words3, &quoted).first.as_deref(),
            Some("src/cli/run.rs")
        );
        let failed = vec![Message::tool("search_first_1", "bad", true)];
        assert_eq!(with_results("t", &calls[..1], &failed), "t");
        let none = vec![Message::tool(
            "search_first_1",
            "no matches for `yaml`",
            false,
        )];
        assert_eq!(
            with_results("t", &calls[..1], &none),
            "t\n\nThe runtime searched for `yaml` for you (`grep`, any case): no file matches \
             any of them."
        );
        let half = vec![
            Message::tool("search_first_1", "a.md:1:yaml", false),
            Message::tool("search_first_2", "no matches for `parser`", false),
        ];
        assert!(with_results("t", &calls, &half).ends_with("No file matches `parser`."));
        assert_eq!(listing("t", &calls, &half).first.as_deref(), Some("a.md"));
        assert!(!listing("t", &calls, &half).named_for_task);
        assert!(listing("t", &calls, &named).named_for_task);
        // Named by a folder only, or with a word that found nothing: not named for all.
        let in_folder = vec![
            Message::tool("search_first_1", "yaml/parser/a.md:1:yaml", false),
            Message::tool("search_first_2", "yaml/parser/a.md:2:parser", false),
        ];
        assert!(!listing("t", &calls, &in_folder).named_for_task);
        let one_found = vec![
            Message::tool("search_first_1", "d/yaml.md:1:yaml", false),
            Message::tool("search_first_2", "no matches for `parser`", false),
        ];
        assert!(!listing("t", &calls, &one_found).named_for_task);
        assert_eq!(listing("t", &calls[..1], &none).first, None);
        // A word in nearly every file matched sets none apart: a file named for the others is
        // named for all. Not so when that word is in fewer of them, nor when it is the only one.
        let words3 = vec![call(1, "repair"), call(2, "turn"), call(3, "agent")];
        let agents = |n: usize| {
            let mut lines = vec!["d/2026-repair-turns.md:7".to_string()];
            lines.extend((1..n).map(|i| format!("d/record-{i}.md:3")));
            lines.join("\n")
        };
        let matched = |agent_files: usize| {
            vec![
                Message::tool(
                    "search_first_1",
                    "d/2026-repair-turns.md:10\nd/record-1.md:2",
                    false,
                ),
                Message::tool("search_first_2", "d/2026-repair-turns.md:4", false),
                Message::tool("search_first_3", agents(agent_files), false),
            ]
        };
        let everywhere = listing("t", &words3, &matched(12));
        assert_eq!(everywhere.first.as_deref(), Some("d/2026-repair-turns.md"));
        assert!(everywhere.named_for_task, "`agent` is in all 12 files");
        assert!(everywhere.sets_apart, "`repair` and `turn`");
        let only_agent = vec![
            Message::tool("search_first_1", "no matches for `repair`", false),
            Message::tool("search_first_2", "no matches for `turn`", false),
            Message::tool("search_first_3", agents(12), false),
        ];
        let loose = listing("t", &words3, &only_agent);
        assert_eq!(loose.first.as_deref(), Some("d/2026-repair-turns.md"));
        assert!(
            !loose.sets_apart,
            "only `agent` matched, and it is in every file"
        );
        let mut fewer = matched(12);
        fewer.push(Message::tool("search_first_4", "d/other.md:1", false));
        let calls4 = [&words3[..], &[call(4, "other")]].concat();
        assert!(
            listing("t", &calls4, &fewer).named_for_task,
            "`other` is not in the first file's name, and two words that set files apart are"
        );
        assert!(
            listing("t", &words3, &matched(3)).named_for_task,
            "in three files `agent` still sets them apart, and two others name the file"
        );
        // Named for one of two words that set files apart: asked, not added.
        let one_of_two = vec![
            Message::tool(
                "search_first_1",
                "d/2026-repair.md:2
d/x.md:1",
                false,
            ),
            Message::tool(
                "search_first_2",
                "d/x.md:4
d/2026-repair.md:1",
                false,
            ),
        ];
        let calls2 = [call(1, "repair"), call(2, "turn")];
        let one = listing("t", &calls2, &one_of_two);
        assert_eq!(one.first.as_deref(), Some("d/2026-repair.md"));
        assert!(!one.named_for_task);
        let only = vec![Message::tool("search_first_3", agents(12), false)];
        assert!(!listing("t", &words3[2..], &only).named_for_task);
    }

    #[test]
    fn a_path_is_named_for_a_word_by_its_parts_not_any_substring() {
        assert!(named_in("src/cli/run.rs", "run"));
        assert!(!named_in("src/runtime/hop.rs", "run"));
        assert!(named_in("src/cli/sessions.rs", "session"));
        assert!(named_in("src/cli/sessions.rs", "sessions"));
        // A command lives under `cli/` or `cmd/`; the folder names no other word.
        assert!(named_in("src/cli/sessions.rs", "command"));
        assert!(named_in("cmd/serve/main.go", "subcommand"));
        assert!(!named_in("src/runtime/session.rs", "command"));
        assert!(!named_in("src/cli/sessions.rs", "client"));
        assert!(!own_name_holds("src/cli/mod.rs", "command"));
        assert!(own_name_holds("src/cli/mod.rs", "cli"));
        assert!(own_name_holds("src/cli/sessions.rs", "session"));
        assert!(named_in("src/lint/mod.rs", "lints"));
        assert!(named_in(
            "thoughts/shared/decisions/2026-11-02-yaml-parser-serde-saphyr.md",
            "parser"
        ));
        assert!(named_in("src/runtime/search_first.rs", "searches"));
        assert!(!named_in("src/config.rs", "con"));
        // A word that begins with a name part of five letters or more.
        assert!(named_in("src/config.rs", "configurabl"));
        assert!(
            !named_in("src/cli/run.rs", "running"),
            "`run` is under five letters"
        );
        assert_eq!(own_name("src/lint/mod.rs"), "lint/mod.rs");
        assert_eq!(own_name("src/cli/run.rs"), "run.rs");
        assert_eq!(own_name("mod.rs"), "mod.rs");
    }

    /// A planning task names the feature to add (in no file yet) before the thing to change:
    /// a file that only mentions the feature's words must not outrank the file named for the
    /// thing.
    #[test]
    fn a_file_named_for_the_subject_outranks_files_that_mention_more_words() {
        let call = |i: usize, word: &str| grep_call(i, word, "src");
        let task = "Plan an `--until DAY` bound for the runs command.";
        let searched = words(task);
        assert_eq!(searched, ["until", "day", "bound", "run", "command"]);
        let calls = src_grep_calls(&searched);
        let results = grep_results(&[
            "src/knowledge/store.rs:1",
            "src/knowledge/store.rs:13",
            "src/knowledge/store.rs:2",
            "src/cli/runs.rs:6",
            "no matches for `command`",
        ]);
        let ranked = listing(task, &calls, &results);
        assert_eq!(
            ranked.first.as_deref(),
            Some("src/cli/runs.rs"),
            "{}",
            ranked.message
        );
        assert!(!ranked.named_for_task, "named for one word of five");
        // Two files named for one word each and holding the same words: the earlier word's.
        let calls = [
            call(1, "quiet"),
            call(2, "flag"),
            call(3, "run"),
            call(4, "command"),
        ];
        let both = "src/workflow/command.rs:3\nsrc/cli/run.rs:2";
        let results: Vec<Message> = (1..=4)
            .map(|i| Message::tool(format!("search_first_{i}"), both, false))
            .collect();
        assert_eq!(
            listing("t", &calls, &results).first.as_deref(),
            Some("src/cli/run.rs")
        );
        // "the sessions command": the command's file, not the module named for the same word
        // that holds more of the others.
        let task = "Plan a `--since DATE` filter for the sessions command.";
        let searched = words(task);
        assert_eq!(searched, ["since", "date", "filter", "session", "command"]);
        let calls = src_grep_calls(&searched);
        let results = grep_results(&[
            "no matches for `since`",
            "no matches for `date`",
            "src/runtime/session.rs:40",
            "src/runtime/session.rs:1\nsrc/cli/sessions.rs:3\nsrc/cli/mod.rs:9",
            "src/workflow/command.rs:7\nsrc/cli/mod.rs:2",
        ]);
        assert_eq!(
            listing(task, &calls, &results).first.as_deref(),
            Some("src/cli/sessions.rs")
        );
        // A word on one line is a passing mention: the module that says `delay` and `view` once
        // each does not outrank the file named for `retry` that says `delay` on many lines.
        let calls = src_grep_calls(&["retry", "delay", "model", "view"]);
        let results = grep_results(&[
            "src/model/mod.rs:4\nsrc/model/retry.rs:33",
            "src/model/mod.rs:1\nsrc/model/retry.rs:18",
            "src/model/mod.rs:21\nsrc/model/retry.rs:22",
            "src/model/mod.rs:1",
        ]);
        let ranked = listing("t", &calls, &results);
        assert_eq!(
            ranked.first.as_deref(),
            Some("src/model/retry.rs"),
            "{}",
            ranked.message
        );
        // Not about a command: the command's file named for the subject does not outrank the
        // module named for it, though it holds more of the words.
        let task = "Plan a lint notice for agents with an empty body.";
        let searched = words(task);
        assert_eq!(searched, ["lint", "notic", "agent", "empty", "body"]);
        let calls = src_grep_calls(&searched);
        let results = grep_results(&[
            "src/cli/lint.rs:17\nsrc/lint/mod.rs:12\nsrc/cli/agents.rs:1",
            "src/cli/lint.rs:4\nsrc/cli/agents.rs:1",
            "src/cli/lint.rs:5\nsrc/lint/mod.rs:17\nsrc/cli/agents.rs:12",
            "src/cli/agents.rs:5",
            "no matches for `body`",
        ]);
        let ranked = listing(task, &calls, &results);
        assert_eq!(
            ranked.first.as_deref(),
            Some("src/lint/mod.rs"),
            "{}",
            ranked.message
        );
        // The same files for a task about the command: its file first.
        let task = "Plan a `--strict` flag for the lint command.";
        assert_eq!(
            listing(task, &calls, &results).first.as_deref(),
            Some("src/cli/lint.rs")
        );
        assert!(about_a_command("Plan `--since DATE`", &[]));
        assert!(about_a_command("Add a verbose option to runs", &[]));
        assert!(!about_a_command("Make the budget optional", &[]));
        assert!(!about_a_command("a -- b", &[]));
        assert!(!in_command_folder("src/cli.rs") && in_command_folder("src/cmd/x/y.rs"));
        // A module's `mod.rs` is named for its folder.
        let calls = [call(1, "lint"), call(2, "warning")];
        let results = [
            Message::tool(
                "search_first_1",
                "src/lint/mod.rs:12\nsrc/model/x.rs:1",
                false,
            ),
            Message::tool("search_first_2", "src/model/x.rs:3", false),
        ];
        assert_eq!(
            listing("t", &calls, &results).first.as_deref(),
            Some("src/lint/mod.rs")
        );
    }

    #[test]
    fn an_answer_is_asked_for_the_first_file_only_when_it_leaves_it_out() {
        let first = "thoughts/shared/decisions/2026-11-02-yaml-parser.md";
        assert_eq!(
            left_out_ask(&format!("- `{first}` (accepted)"), first, None),
            None
        );
        let ask = left_out_ask("No documents under thoughts/ match.", first, Some("YAML")).unwrap();
        assert!(
            ask.contains(&format!("leaves out `{first}` (its title: \"YAML\")")),
            "{ask}"
        );
        assert!(!ask.contains("exactly as before"), "{ask}");
        // Named only in the thinking, it is left out of what the caller takes: asked.
        let thought = format!(
            "<thinking>\n- {first} (yaml ×12)\n</thinking>\n<answer>\nNothing matches.\n</answer>"
        );
        assert!(left_out_ask(&thought, first, None).is_some());
        assert!(names_file(
            &thought.replace("Nothing matches.", first),
            first
        ));
    }

    #[test]
    fn the_ask_ends_with_the_answer_with_the_first_file_added() {
        let first = "thoughts/shared/decisions/2026-11-02-yaml-parser.md";
        let answer = "---\nmessage_id: m\n---\n\n<thinking>\nSuggested for analysis: `x`\n\
                      </thinking>\n\n<answer>\n## Documents about YAML\n\nNo documents under \
                      thoughts/ match YAML.\n\n### Specs\n- `thoughts/shared/specs/s.md`\n\n\
                      Suggested for analysis: `thoughts/shared/specs/s.md`\n</answer>";
        let copy = with_file(answer, first, Some("YAML parser")).unwrap();
        assert_eq!(
            copy,
            format!(
                "---\nmessage_id: m\n---\n\n<thinking>\nSuggested for analysis: `x`\n\
                 </thinking>\n\n<answer>\n## Documents about YAML\n- `{first}` — YAML parser\n\n\n\
                 ### Specs\n- `thoughts/shared/specs/s.md`\n\nSuggested for analysis: `{first}`, \
                 `thoughts/shared/specs/s.md`\n</answer>"
            )
        );
        let ask = left_out_ask(answer, first, Some("YAML parser")).unwrap();
        assert!(ask.ends_with(&format!("{copy}\n```")), "{ask}");
        // Without a heading the file goes first in the block; without a block, no copy.
        let bare = with_file("<answer>\nStart with: `a.rs`\n</answer>", "b.rs", None).unwrap();
        assert_eq!(
            bare,
            "<answer>\n- `b.rs`\nStart with: `b.rs`, `a.rs`\n</answer>"
        );
        assert_eq!(with_file("a list", first, None), None);
        assert!(left_out_ask("a list", first, None)
            .unwrap()
            .contains("Answer again in the same format"));
    }
}
