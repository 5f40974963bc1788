//! Every tool against symlinks (dangling, chained, to a parent directory, to a directory outside,
//! pointing inside) and against the folders no tool may touch (`.git/`, `.switchboard/`).
#![cfg(unix)]

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use serde_json::json;
use switchboard::agent::parse::{parse, Outcome};
use switchboard::agent::Agent;
use switchboard::project::Project;
use switchboard::tools::{self, ToolContext, ToolError, ToolOutput};

/// A project `root/` beside a folder `outside/` that holds a secret, with the links under test.
struct Fixture {
    dir: tempfile::TempDir,
    project: Project,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("outside");
        std::fs::create_dir_all(out.join("dir")).unwrap();
        std::fs::write(out.join("secret.txt"), "SECRET outside\n").unwrap();
        std::fs::write(out.join("dir/inner.txt"), "SECRET inner\n").unwrap();
        let root = dir.path().join("root");
        for d in [
            "thoughts/shared",
            "docs",
            ".git",
            ".switchboard/ids",
            "sub/.git",
        ] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("docs/a.md"), "inside doc\n").unwrap();
        std::fs::write(root.join("thoughts/notes.md"), "old notes\n").unwrap();
        let config = "[remote \"origin\"]\n\turl = https://user:TOKEN123@example.com/r.git\n";
        std::fs::write(root.join(".git/config"), config).unwrap();
        std::fs::write(root.join("sub/.git/config"), config).unwrap();
        std::fs::write(root.join(".switchboard/ids/x"), "TOKEN123 state\n").unwrap();
        let link = |target: &Path, name: &str| symlink(target, root.join(name)).unwrap();
        // Dangling, target's parent exists / is missing.
        link(&out.join("new.md"), "thoughts/dangling.md");
        link(&out.join("missing/new.md"), "thoughts/dangling-deep.md");
        // Chained: link → link → outside (existing and not yet existing).
        link(Path::new("hop.md"), "thoughts/chain.md");
        link(&out.join("secret.txt"), "thoughts/hop.md");
        link(Path::new("hop-new.md"), "thoughts/chain-new.md");
        link(&out.join("new2.md"), "thoughts/hop-new.md");
        // To a parent directory: one outside the root, one that is the root itself.
        link(Path::new("../.."), "thoughts/up");
        link(Path::new(".."), "thoughts/root");
        // To a directory outside.
        link(&out.join("dir"), "thoughts/outdir");
        // Inside-pointing links.
        link(Path::new("../docs/a.md"), "thoughts/doc-link.md");
        link(Path::new("notes.md"), "thoughts/alias.md");
        // Into version control, from an ordinary name.
        link(Path::new("../.git/config"), "thoughts/gitcfg");
        let project = Project::open(&root).unwrap();
        Fixture { dir, project }
    }

    fn outside(&self, name: &str) -> PathBuf {
        self.dir.path().join("outside").join(name)
    }
}

fn agent(permission: &str) -> Agent {
    let text = format!(
        "---\nname: tester\ndescription: d\nmode: subagent\n\
         tools: {{read: true, list: true, glob: true, grep: true, write: true}}\n{permission}---\nbody\n"
    );
    match parse(&text, "agent/tester.md", "tester").outcome {
        Outcome::Loaded(a) => *a,
        other => panic!("{other:?}"),
    }
}

fn call(
    f: &Fixture,
    agent: &Agent,
    tool: &str,
    args: serde_json::Value,
) -> Result<ToolOutput, ToolError> {
    let ctx = ToolContext {
        project: &f.project,
        agent,
        known: &[],
        written: &[],
    };
    tools::invoke(ctx, tool, &args)
}

fn refused(result: Result<ToolOutput, ToolError>) -> String {
    match result {
        Err(e @ ToolError::Refused { .. }) => e.to_string(),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// Every tool refuses the folder link `dir` (and a file `inside` it): read and write a file
/// through it, list, glob and grep in it.
fn refused_by_every_tool(f: &Fixture, a: &Agent, dir: &str, inside: &str) {
    let file = format!("{dir}/{inside}");
    refused(call(f, a, "read", json!({ "path": file })));
    refused(call(f, a, "list", json!({ "path": dir })));
    refused(call(f, a, "glob", json!({"pattern": "**", "path": dir})));
    refused(call(
        f,
        a,
        "grep",
        json!({"pattern": "SECRET", "path": dir}),
    ));
    let new = format!("{}/new.md", file.rsplit_once('/').map_or(dir, |(d, _)| d));
    refused(call(f, a, "write", json!({"path": new, "content": "x"})));
}

#[test]
fn write_refuses_a_dangling_link_that_leads_out() {
    let f = Fixture::new();
    let a = agent("");
    let msg = refused(call(
        &f,
        &a,
        "write",
        json!({"path": "thoughts/dangling.md", "content": "x"}),
    ));
    assert!(msg.contains("thoughts/dangling.md"), "{msg}");
    assert!(msg.contains("symlink"), "{msg}");
    assert!(!f.outside("new.md").exists(), "the write went out");
}

#[test]
fn write_refuses_a_dangling_link_whose_target_folder_is_missing() {
    let f = Fixture::new();
    let a = agent("");
    let msg = refused(call(
        &f,
        &a,
        "write",
        json!({"path": "thoughts/dangling-deep.md", "content": "x"}),
    ));
    assert!(msg.contains("thoughts/dangling-deep.md"), "{msg}");
    assert!(!msg.contains("No such file"), "{msg}");
    assert!(!f.outside("missing").exists());
}

#[test]
fn chained_links_out_are_refused_by_read_and_write() {
    let f = Fixture::new();
    let a = agent("");
    let msg = refused(call(&f, &a, "read", json!({"path": "thoughts/chain.md"})));
    assert!(msg.contains("outside the project root"), "{msg}");
    refused(call(
        &f,
        &a,
        "write",
        json!({"path": "thoughts/chain.md", "content": "x"}),
    ));
    assert_eq!(
        std::fs::read_to_string(f.outside("secret.txt")).unwrap(),
        "SECRET outside\n"
    );
    let msg = refused(call(
        &f,
        &a,
        "write",
        json!({"path": "thoughts/chain-new.md", "content": "x"}),
    ));
    assert!(msg.contains("thoughts/chain-new.md"), "{msg}");
    assert!(!f.outside("new2.md").exists(), "the write went out");
}

#[test]
fn a_link_to_a_parent_directory_outside_is_refused_by_every_tool() {
    let f = Fixture::new();
    let a = agent("");
    refused_by_every_tool(&f, &a, "thoughts/up", "outside/secret.txt");
    assert!(!f.outside("new.md").exists());
}

#[test]
fn a_link_to_a_directory_outside_is_refused_and_hidden() {
    let f = Fixture::new();
    let a = agent("");
    refused_by_every_tool(&f, &a, "thoughts/outdir", "inner.txt");
    assert!(!f.outside("dir/new.md").exists());
    // Walking the whole project shows nothing from outside, nor the links that lead there.
    let grep = call(&f, &a, "grep", json!({"pattern": "SECRET"}))
        .unwrap()
        .text;
    assert!(grep.starts_with("no matches"), "{grep}");
    let glob = call(&f, &a, "glob", json!({"pattern": "**/*"}))
        .unwrap()
        .text;
    for hidden in ["secret", "inner", "outdir", "up", "dangling", "chain"] {
        assert!(!glob.contains(hidden), "glob shows {hidden}: {glob}");
    }
    let list = call(&f, &a, "list", json!({"path": "thoughts"}))
        .unwrap()
        .text;
    for hidden in ["outdir", "up", "dangling", "chain.md", "hop.md"] {
        assert!(!list.contains(hidden), "list shows {hidden}: {list}");
    }
}

#[test]
fn links_that_stay_inside_work() {
    let f = Fixture::new();
    let a = agent("");
    let read = call(&f, &a, "read", json!({"path": "thoughts/doc-link.md"})).unwrap();
    assert!(read.text.contains("inside doc"), "{}", read.text);
    let read = call(&f, &a, "read", json!({"path": "thoughts/root/docs/a.md"})).unwrap();
    assert!(read.text.contains("inside doc"));
    let list = call(&f, &a, "list", json!({"path": "thoughts"}))
        .unwrap()
        .text;
    assert!(
        list.contains("doc-link.md") && list.contains("alias.md"),
        "{list}"
    );
    let grep = call(
        &f,
        &a,
        "grep",
        json!({"pattern": "inside doc", "path": "thoughts"}),
    )
    .unwrap()
    .text;
    assert!(grep.contains("thoughts/doc-link.md:1:inside doc"), "{grep}");
    // A file the hop has not read is kept: the content goes to the next free name.
    let args = json!({"path": "thoughts/alias.md", "content": "new notes\n"});
    let out = call(&f, &a, "write", args.clone()).unwrap();
    assert_eq!(out.written.as_deref(), Some("thoughts/notes-2.md"));
    assert!(
        out.text.contains("`thoughts/notes.md` already exists"),
        "{}",
        out.text
    );
    let notes = |name: &str| std::fs::read_to_string(f.project.root().join(name)).unwrap();
    assert_eq!(notes("thoughts/notes.md"), "old notes\n");
    assert_eq!(notes("thoughts/notes-2.md"), "new notes\n");
    // Once read (or written by the session), the link's target is replaced in place.
    let known = ["thoughts/notes.md".to_string()];
    let ctx = ToolContext {
        project: &f.project,
        agent: &a,
        known: &known,
        written: &[],
    };
    let out = tools::invoke(ctx, "write", &args).unwrap();
    assert_eq!(out.written.as_deref(), Some("thoughts/notes.md"));
    assert_eq!(notes("thoughts/notes.md"), "new notes\n");
    // A numbered copy the hop only read (another session's) is not taken for the session's own:
    // a write to the unread base name goes past it.
    std::fs::write(f.project.root().join("thoughts/plan.md"), "base\n").unwrap();
    std::fs::write(f.project.root().join("thoughts/plan-2.md"), "theirs\n").unwrap();
    let read_only = ["thoughts/plan-2.md".to_string()];
    let plan = json!({"path": "thoughts/plan.md", "content": "mine\n"});
    let as_read = ToolContext {
        project: &f.project,
        agent: &a,
        known: &read_only,
        written: &[],
    };
    let out = tools::invoke(as_read, "write", &plan).unwrap();
    assert_eq!(out.written.as_deref(), Some("thoughts/plan-3.md"));
    assert_eq!(notes("thoughts/plan-2.md"), "theirs\n");
    // The session's own numbered copy is the one a later write to that name replaces.
    let own = ["thoughts/plan-3.md".to_string()];
    let as_written = ToolContext {
        project: &f.project,
        agent: &a,
        known: &own,
        written: &own,
    };
    let plan = json!({"path": "thoughts/plan.md", "content": "mine again\n"});
    let out = tools::invoke(as_written, "write", &plan).unwrap();
    assert_eq!(out.written.as_deref(), Some("thoughts/plan-3.md"));
    assert_eq!(notes("thoughts/plan-3.md"), "mine again\n");
    assert_eq!(notes("thoughts/plan.md"), "base\n");
    // An ordinary new file still works, folders included.
    call(
        &f,
        &a,
        "write",
        json!({"path": "thoughts/shared/r/new.md", "content": "n"}),
    )
    .unwrap();
    assert!(f.project.root().join("thoughts/shared/r/new.md").is_file());
}

#[test]
fn version_control_and_runtime_state_are_refused_by_read_and_write() {
    let f = Fixture::new();
    // May write anywhere, so only the hidden-folder policy can refuse.
    let a = agent("permission: {write: allow}\n");
    for path in [
        ".git/config",
        "./.git/config",
        "docs/../.git/config",
        "sub/.git/config",
        ".switchboard/ids/x",
        "thoughts/gitcfg",
    ] {
        let msg = refused(call(&f, &a, "read", json!({"path": path})));
        assert!(msg.contains("not open to tools"), "{path}: {msg}");
    }
    for path in [
        ".git/hooks/pre-commit",
        ".git/config",
        ".switchboard/ids/y",
        "sub/.git/x",
        "thoughts/gitcfg",
    ] {
        let msg = refused(call(&f, &a, "write", json!({"path": path, "content": "x"})));
        assert!(msg.contains("not open to tools"), "{path}: {msg}");
    }
    assert!(!f.project.root().join(".git/hooks/pre-commit").exists());
    assert!(!f.project.root().join(".switchboard/ids/y").exists());
    assert!(
        std::fs::read_to_string(f.project.root().join(".git/config"))
            .unwrap()
            .contains("TOKEN123")
    );
}

#[test]
fn version_control_and_runtime_state_are_hidden_from_list_glob_and_grep() {
    let f = Fixture::new();
    let a = agent("");
    let list = call(&f, &a, "list", json!({})).unwrap().text;
    assert!(list.contains("docs/") && list.contains("sub/"), "{list}");
    assert!(
        !list.contains(".git") && !list.contains(".switchboard"),
        "{list}"
    );
    let sub = call(&f, &a, "list", json!({"path": "sub"})).unwrap().text;
    assert!(!sub.contains(".git"), "{sub}");
    for path in [".git", ".switchboard", "sub/.git"] {
        refused(call(&f, &a, "list", json!({"path": path})));
        refused(call(&f, &a, "glob", json!({"pattern": "**", "path": path})));
        refused(call(
            &f,
            &a,
            "grep",
            json!({"pattern": "TOKEN", "path": path}),
        ));
    }
    let glob = call(&f, &a, "glob", json!({"pattern": "**/*"}))
        .unwrap()
        .text;
    assert!(glob.contains("docs/a.md"), "{glob}");
    assert!(
        !glob.contains(".git") && !glob.contains(".switchboard"),
        "{glob}"
    );
    let grep = call(&f, &a, "grep", json!({"pattern": "TOKEN123"}))
        .unwrap()
        .text;
    assert!(grep.starts_with("no matches"), "{grep}");
}

/// A small model's slips are tool errors it can fix, not refusals that block the session: a
/// file that does not exist, and the project's own absolute path. An absolute path outside the
/// root stays a refusal.
#[test]
fn a_missing_file_and_the_roots_own_absolute_path_are_errors_an_agent_can_fix() {
    let f = Fixture::new();
    let a = agent("");
    match call(&f, &a, "read", json!({"path": "docs/missing.md"})) {
        Err(ToolError::Failed { message, .. }) => {
            assert!(message.contains("does not exist"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    let absolute = f.project.root().join("docs/a.md");
    match call(
        &f,
        &a,
        "read",
        json!({"path": absolute.display().to_string()}),
    ) {
        Err(ToolError::Failed { message, .. }) => {
            assert!(
                message.contains("call it again with `docs/a.md`"),
                "{message}"
            )
        }
        other => panic!("{other:?}"),
    }
    refused(call(
        &f,
        &a,
        "read",
        json!({"path": f.outside("secret.txt").display().to_string()}),
    ));
    // Several joined with commas after the root (Qwen2.5-Coder-1.5B as codebase-locator): named
    // as such, each part relative; `grep` searches each part that is there, and says so;
    // joined after an outside path, still a refusal.
    let joined = format!(
        "{},docs/nope.md, {}",
        absolute.display(),
        absolute.display()
    );
    match call(&f, &a, "read", json!({"path": joined})) {
        Err(ToolError::Failed { message, .. }) => assert!(
            message.contains("make one `read` call for each of `docs/a.md`, `docs/a.md`"),
            "{message}"
        ),
        other => panic!("{other:?}"),
    }
    let found = call(&f, &a, "grep", json!({"pattern": "inside", "path": joined}))
        .expect("each part searched")
        .text;
    assert_eq!(
        found,
        "(`path` was read as 2 project path(s), each searched: docs/a.md, docs/a.md)\n\
         docs/a.md:1:inside doc",
        "the file once, though named twice"
    );
    // A project path written after a `/` (the 1.5B thoughts-locator: `/thoughts/shared/…`) is
    // a tool error naming the path to use, not a refusal; `grep` searches it and says so. One
    // the project does not hold stays refused.
    match call(&f, &a, "read", json!({"path": "/docs/a.md"})) {
        Err(ToolError::Failed { message, .. }) => {
            assert!(
                message.ends_with("call it again with `docs/a.md`"),
                "{message}"
            )
        }
        other => panic!("{other:?}"),
    }
    let found = call(
        &f,
        &a,
        "grep",
        json!({"pattern": "inside", "path": "/docs/"}),
    )
    .expect("searched as the project's docs/")
    .text;
    assert_eq!(
        found,
        "(`path` was read as 1 project path(s), each searched: docs/)\ndocs/a.md:1:inside doc"
    );
    refused(call(
        &f,
        &a,
        "grep",
        json!({"pattern": "x", "path": "/no-such-folder-here"}),
    ));
    // Joined with `;` or `:` (as the 1.5B locator did later) is read the same way.
    for sep in [";", ":"] {
        let found = call(
            &f,
            &a,
            "grep",
            json!({"pattern": "inside", "path": format!("docs/nope.md{sep}docs/a.md")}),
        )
        .expect("each part searched")
        .text;
        assert!(found.ends_with("docs/a.md:1:inside doc"), "{sep}: {found}");
    }
    let outside = format!("{},docs/a.md", f.outside("secret.txt").display());
    refused(call(
        &f,
        &a,
        "grep",
        json!({"pattern": "x", "path": outside}),
    ));
}

/// Issue #28 item 8: a hard link inside the root to a file outside shares its inode, so
/// canonicalizing it stays inside. Reading, searching, citing and writing it are refused by the
/// link count, and the outside file keeps its contents.
#[test]
fn a_hard_link_to_a_file_outside_is_refused_by_every_tool_and_by_citations() {
    let f = Fixture::new();
    let secret = f.outside("secret.txt");
    let root = f.project.root().to_path_buf();
    std::fs::hard_link(&secret, root.join("thoughts/hard.md")).unwrap();
    std::fs::hard_link(&secret, root.join("docs/hard.md")).unwrap();
    let a = agent("permission:\n  write: allow\n");
    for path in ["thoughts/hard.md", "docs/hard.md"] {
        let msg = refused(call(&f, &a, "read", json!({ "path": path })));
        assert!(msg.contains("hard link"), "{msg}");
        assert!(!msg.contains("SECRET"), "{msg}");
        let msg = refused(call(
            &f,
            &a,
            "write",
            json!({"path": path, "content": "overwritten\n"}),
        ));
        assert!(
            msg.contains("hard link") && msg.contains("put a copy"),
            "{msg}"
        );
        refused(call(
            &f,
            &a,
            "grep",
            json!({"pattern": "SECRET", "path": path}),
        ));
    }
    let grep = call(&f, &a, "grep", json!({"pattern": "SECRET"}))
        .unwrap()
        .text;
    assert!(grep.starts_with("no matches"), "{grep}");
    let listed = call(&f, &a, "glob", json!({"pattern": "**/hard.md"}))
        .unwrap()
        .text;
    assert!(listed.starts_with("no files match"), "{listed}");
    assert_eq!(
        std::fs::read_to_string(&secret).unwrap(),
        "SECRET outside\n"
    );

    let files = switchboard::contract::FileCache::new();
    let ctx = switchboard::contract::CheckContext::new(&f.project, &files);
    let doc = "# Notes\n\n- **Evidence**: `docs/hard.md:1-1`\n- **Excerpt**:\n  ```text\n  SECRET outside\n  ```\n";
    let problems = switchboard::contract::verify_evidence(doc, &ctx);
    let outside: Vec<_> = problems
        .iter()
        .filter(|p| p.code == "evidence/path-outside-root")
        .collect();
    assert_eq!(outside.len(), 1, "{problems:#?}");
    assert!(outside[0].message.contains("hard link"), "{outside:#?}");
    assert_eq!(files.reads(), 0, "the linked file is never read");
}

/// A folder given as grep's `glob` means the files under it (a 1.5B locator wrote
/// `glob: thoughts/shared/decisions/` and got "no matches" from a search of no file); a glob
/// that keeps no file says nothing was searched instead of "no matches".
#[test]
fn grep_takes_a_folder_glob_as_its_files_and_says_when_nothing_was_searched() {
    let f = Fixture::new();
    let a = agent("");
    for glob in ["docs/", "docs"] {
        let out = call(&f, &a, "grep", json!({"pattern": "inside", "glob": glob}))
            .expect("grep")
            .text;
        assert_eq!(out, "docs/a.md:1:inside doc", "{glob}: {out}");
    }
    let none = call(&f, &a, "grep", json!({"pattern": "inside", "glob": "*.rs"}))
        .expect("grep")
        .text;
    assert!(
        none.starts_with("no file under `.` matches the glob `*.rs`: nothing was searched"),
        "{none}"
    );
    // And a pattern that matches no line hears which of its words would.
    let words = call(
        &f,
        &a,
        "grep",
        json!({"pattern": "(# |date:)inside notes", "path": "docs"}),
    )
    .expect("grep")
    .text;
    assert!(words.starts_with("no matches for"), "{words}");
    assert!(
        words.contains("`inside` in 1 file(s) (e.g. `docs/a.md`)"),
        "{words}"
    );
}
