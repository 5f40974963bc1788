//! `grep`'s output is bounded for the context it goes into: at most `MAX_RESULTS` lines and
//! `MAX_OUTPUT_BYTES` bytes, the rest counted per file; `output: "count"` (the runtime's own
//! searches) gives every file's count instead of lines, and `limit` asks for more lines.

use serde_json::json;
use switchboard::agent::parse::{parse, Outcome};
use switchboard::project::Project;
use switchboard::tools::grep::{MAX_OUTPUT_BYTES, MAX_RESULTS};
use switchboard::tools::{self, ToolContext};

fn grep(project: &Project, args: serde_json::Value) -> String {
    let text = "---\nname: t\ndescription: d\nmode: subagent\ntools: {grep: true}\n---\nbody\n";
    let Outcome::Loaded(agent) = parse(text, "agent/t.md", "t").outcome else {
        panic!("agent");
    };
    let ctx = ToolContext {
        project,
        agent: &agent,
        known: &[],
        written: &[],
    };
    tools::invoke(ctx, "grep", &args)
        .map(|o| o.text)
        .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn many_matches_are_cut_to_what_a_small_context_holds_and_counted_per_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    // 60 files: `a00.rs` has 60 matching lines, each later file one fewer, 1,830 in all;
    // long lines, so the byte limit comes before the line limit.
    for i in 0..60 {
        let line = format!("let run_{i} = run(\"{}\");\n", "x".repeat(120));
        std::fs::write(
            dir.path().join(format!("src/a{i:02}.rs")),
            line.repeat(60 - i),
        )
        .unwrap();
    }
    let project = Project::open(dir.path()).unwrap();
    let out = grep(&project, json!({"pattern": "run", "path": "src"}));
    let lines: Vec<&str> = out.lines().collect();
    let results: Vec<&&str> = lines.iter().filter(|l| l.starts_with("src/")).collect();
    assert!(
        !results.is_empty() && results.len() <= MAX_RESULTS,
        "{}",
        results.len()
    );
    let bytes: usize = results.iter().map(|l| l.len() + 1).sum();
    assert!(bytes <= MAX_OUTPUT_BYTES, "{bytes}");
    assert!(out.len() < MAX_OUTPUT_BYTES + 1024, "{}", out.len());
    let left = 1830 - results.len();
    assert!(
        out.contains(&format!(
            "({left} more matches not shown; narrow the pattern or path)"
        )),
        "{out}"
    );
    assert!(
        out.ends_with(
            "matches per file, most first: src/a00.rs (60), src/a01.rs (59), src/a02.rs (58), \
             src/a03.rs (57), src/a04.rs (56), src/a05.rs (55), src/a06.rs (54), \
             src/a07.rs (53), src/a08.rs (52), src/a09.rs (51), and 50 more file(s)"
        ),
        "{out}"
    );

    // A call that asks for more lines gets them, up to `MAX_LIMIT`.
    let asked = grep(
        &project,
        json!({"pattern": "run", "path": "src", "limit": 100_000}),
    );
    let n = asked.lines().filter(|l| l.starts_with("src/")).count();
    assert_eq!(n, switchboard::tools::grep::MAX_LIMIT, "{}", asked.len());

    // Counts: every file once, sorted by path, no lines.
    let counts = grep(
        &project,
        json!({"pattern": "run", "path": "src", "output": "count"}),
    );
    let rows: Vec<&str> = counts.lines().collect();
    assert_eq!(rows.len(), 60, "{counts}");
    assert_eq!(rows[0], "src/a00.rs:60");
    assert_eq!(rows[59], "src/a59.rs:1");

    // Few matches: all of them, and no counts.
    let few = grep(&project, json!({"pattern": "run_59", "path": "src"}));
    assert!(few.starts_with("src/a59.rs:1:let run_59"), "{few}");
    assert!(!few.contains("matches per file"), "{few}");
}

/// A glob written as `path` searches its folder with the path as the glob, and says so; a
/// glob whose folder is outside the project is still refused.
#[test]
fn a_glob_written_as_the_path_searches_its_folder() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("src/cli")).unwrap();
    std::fs::create_dir_all(dir.path().join("outside")).unwrap();
    std::fs::write(root.join("src/cli/sessions.rs"), "fn since() {}\n").unwrap();
    std::fs::write(root.join("src/cli/notes.md"), "since\n").unwrap();
    std::fs::write(root.join("README.md"), "since\n").unwrap();
    std::fs::write(dir.path().join("outside/secret.rs"), "since SECRET\n").unwrap();
    let project = Project::open(&root).unwrap();
    let out = grep(&project, json!({"pattern": "since", "path": "src/**/*.rs"}));
    assert!(
        out.starts_with("(`path` was read as the folder `src` and the glob `src/**/*.rs`)"),
        "{out}"
    );
    assert!(out.contains("src/cli/sessions.rs:1:fn since() {}"), "{out}");
    assert!(
        !out.contains("notes.md") && !out.contains("README"),
        "{out}"
    );
    let all = grep(&project, json!({"pattern": "since", "path": "**/*.md"}));
    assert!(
        all.contains("README.md:1:") && all.contains("src/cli/notes.md:1:"),
        "{all}"
    );
    let args = json!({"pattern": "since", "path": "../outside/*.rs"});
    let text = "---\nname: t\ndescription: d\nmode: subagent\ntools: {grep: true}\n---\nbody\n";
    let Outcome::Loaded(agent) = parse(text, "agent/t.md", "t").outcome else {
        panic!("agent");
    };
    let refused = tools::invoke(
        ToolContext {
            project: &project,
            agent: &agent,
            known: &[],
            written: &[],
        },
        "grep",
        &args,
    );
    match refused {
        Err(e) => assert!(!e.to_string().contains("SECRET"), "{e}"),
        Ok(o) => panic!("searched outside the root: {}", o.text),
    }
}
