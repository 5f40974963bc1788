//! Loading real-world agent folders: opencode and Claude Code layouts, and the ways files break.

use std::path::{Path, PathBuf};
use switchboard::agent::{self, Action, LoadOptions, Mode};
use switchboard::problem::Severity;
use switchboard::project::Project;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/loader")
        .join(name)
}

fn load(name: &str) -> agent::AgentSet {
    let project = Project::open(fixture(name)).expect("fixture exists");
    agent::load(&project, &LoadOptions::default())
}

fn codes<'a>(set: &'a agent::AgentSet, file: &'a str) -> Vec<(&'a str, usize, usize)> {
    set.diagnostics_for(file)
        .map(|d| (d.code.as_ref(), d.line, d.column))
        .collect()
}

#[test]
fn opencode_folder_loads_with_nested_names() {
    let set = load("opencode");
    let names: Vec<_> = set.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["reviewer", "team/helper", "team/lead"]);

    let reviewer = set.get("reviewer").unwrap();
    assert_eq!(reviewer.mode, Mode::Subagent);
    assert!(!reviewer.tools.allows("write"));
    assert!(reviewer.tools.allows("read"), "unlisted tools stay allowed");
    assert_eq!(
        reviewer.permission.action("bash", "git diff"),
        Action::Allow
    );
    assert_eq!(reviewer.permission.action("bash", "rm -rf /"), Action::Ask);

    let lead = set.get("team/lead").unwrap();
    assert_eq!(lead.steps, Some(20), "maxSteps is an alias of steps");
    assert_eq!(lead.tools.granted_builtins(), ["read", "task"]);
    assert_eq!(lead.permission.task("team/helper"), Action::Allow);
    assert_eq!(lead.permission.task("stranger"), Action::Deny);
    let targets: Vec<_> = lead
        .references
        .iter()
        .map(|r| (r.target.as_str(), r.line))
        .collect();
    assert_eq!(targets, [("reviewer", 15), ("team/helper", 18)]);

    let readme = set
        .files
        .iter()
        .find(|f| f.file.ends_with("README.md"))
        .expect("README is reported, not dropped");
    assert_eq!(readme.status, "skipped");
    assert!(!set.has_errors(), "{:#?}", set.diagnostics);
}

#[test]
fn claude_folder_loads_with_crlf_bom_and_name_override() {
    let set = load("claude");
    let reviewer = set.get("code-reviewer").unwrap();
    assert_eq!(reviewer.tools.granted_builtins(), ["read", "glob", "grep"]);
    assert!(
        !reviewer.tools.allows("task"),
        "a Claude list allows only what it names"
    );
    assert_eq!(reviewer.model.as_deref(), Some("inherit"));
    assert_eq!(
        codes(&set, ".claude/agents/code-reviewer.md"),
        [("agent/foreign-key", 7, 1)]
    );

    let crlf = set.get("crlf").unwrap();
    assert_eq!(crlf.description, "Written on Windows");
    assert_eq!(crlf.body_line, 5);
    assert!(crlf.body.starts_with("Body line one."));

    let bom = set.get("bom").unwrap();
    assert_eq!(bom.description, "Has a byte order mark");
    assert_eq!(bom.body, "BOM body\n");

    assert!(set.get("renamed").is_none());
    let renamed = set.get("other-name").expect("frontmatter name wins");
    assert_eq!(renamed.file, ".claude/agents/renamed.md");
    assert_eq!(
        codes(&set, ".claude/agents/renamed.md"),
        [("agent/name-mismatch", 2, 7)]
    );
}

#[test]
fn one_name_in_two_files_is_an_error_naming_both() {
    let set = load("conflict");
    let d = set
        .diagnostics
        .iter()
        .find(|d| d.code == "agent/duplicate-name")
        .expect("conflict reported");
    assert_eq!(d.severity, Severity::Error);
    assert!(d.message.contains("agent/twin.md") && d.message.contains("agents/twin.md"));
    assert_eq!(set.get("twin").unwrap().description, "First twin");
}

#[test]
fn agents_flag_replaces_with_a_note() {
    let project = Project::open(fixture("conflict")).unwrap();
    let options = LoadOptions {
        extra_dirs: vec![fixture("claude/.claude/agents")],
        only_extra: false,
    };
    let set = agent::load(&project, &options);
    assert!(
        set.get("code-reviewer").is_some(),
        "extra folder adds agents"
    );
    let only = agent::load(
        &project,
        &LoadOptions {
            extra_dirs: vec![fixture("claude/.claude/agents")],
            only_extra: true,
        },
    );
    assert!(
        only.get("twin").is_none(),
        "--only-agents drops project folders"
    );
    assert!(!only.has_errors(), "{:#?}", only.diagnostics);
}

#[test]
fn broken_files_report_exact_positions() {
    let set = load("broken");
    // mode: [primary  — an unclosed flow sequence; serde-saphyr points into line 3 of the file.
    let yaml = codes(&set, "agent/bad-yaml.md");
    assert_eq!(yaml.len(), 1, "{yaml:?}");
    assert_eq!(yaml[0].0, "agent/yaml");
    assert!(yaml[0].1 >= 3 && yaml[0].1 <= 5, "line {}", yaml[0].1);
    let bad = set.diagnostics_for("agent/bad-yaml.md").next().unwrap();
    assert!(bad.source_line.is_some(), "the offending line is shown");

    assert_eq!(
        codes(&set, "agent/colon.md"),
        [("agent/unquoted-colon", 2, 1)]
    );
    assert_eq!(
        set.get("colon").unwrap().description,
        "Use this agent when: the user asks for a review"
    );

    let typo: Vec<_> = set.diagnostics_for("agent/typo.md").collect();
    assert_eq!(typo.len(), 2);
    assert_eq!(
        (typo[0].code.as_ref(), typo[0].line),
        ("agent/unknown-key", 3)
    );
    assert_eq!(typo[0].help.as_deref(), Some("did you mean `permission`?"));
    assert_eq!(typo[1].help.as_deref(), Some("did you mean `mode`?"));

    assert_eq!(
        codes(&set, "agent/unclosed.md"),
        [("agent/frontmatter-unclosed", 1, 1)]
    );

    let mode = codes(&set, "agent/bad-mode.md");
    assert_eq!(mode.len(), 1);
    assert_eq!((mode[0].0, mode[0].1), ("agent/yaml", 3));

    let literal = set
        .get("literal-braces")
        .expect("plain-text bodies still load");
    assert!(!literal.body_is_template);
    assert_eq!(
        codes(&set, "agent/literal-braces.md")[0].0,
        "agent/template"
    );

    assert_eq!(
        codes(&set, "agent/no-description.md")[0].0,
        "agent/missing-description"
    );

    // Every file is accounted for.
    assert_eq!(set.files.len(), 8);
    for f in &set.files {
        assert!(matches!(f.status, "loaded" | "skipped" | "error"), "{f:?}");
    }
}

#[test]
fn lint_reports_missing_delegation_targets() {
    let set = load("broken");
    let findings = switchboard::lint::lint(&set);
    let ghost: Vec<_> = findings
        .iter()
        .filter(|d| d.code == "delegation/missing-target")
        .collect();
    assert_eq!(ghost.len(), 1, "{ghost:#?}");
    assert_eq!(ghost[0].file, "agent/ghost-ref.md");
    assert_eq!((ghost[0].line, ghost[0].column), (8, 24));
    assert_eq!(switchboard::lint::exit_code(&findings), 1);
}

#[test]
fn project_agents_load_and_lint_clean() {
    let project = Project::open(env!("CARGO_MANIFEST_DIR")).unwrap();
    let set = agent::load(&project, &LoadOptions::default());
    for name in [
        "researcher",
        "planner",
        "thoughts-locator",
        "thoughts-analyzer",
        "codebase-locator",
        "codebase-analyzer",
        "codebase-pattern-finder",
        "web-search-researcher",
    ] {
        let a = set.get(name).unwrap_or_else(|| panic!("{name} missing"));
        let ctx = switchboard::agent::render::PromptContext::preview(&project, &set, a);
        switchboard::agent::render::render(a, &ctx).unwrap_or_else(|e| panic!("{e}"));
    }
    let findings = switchboard::lint::lint(&set);
    assert!(findings.is_empty(), "{findings:#?}");
}

/// A project carrying the same agents in `agent/` and `.opencode/agent/` (as projects migrating
/// between tools do) loads without errors: our own folder wins, and each shadowed file is noted
/// once, with a pointer to the flags that pick the other folder.
#[test]
fn same_agents_in_our_folder_and_opencode_folder_shadow_with_one_note_each() {
    let set = load("both");
    assert!(!set.has_errors(), "{:#?}", set.diagnostics);
    assert_eq!(
        set.get("scout").unwrap().description,
        "Scout from our own folder"
    );
    assert_eq!(
        set.get("judge").unwrap().description,
        "Judge from our own folder"
    );
    assert_eq!(
        set.get("solo").unwrap().file,
        ".opencode/agent/solo.md",
        "agents only the opencode folder has still load"
    );
    let notes: Vec<_> = set
        .diagnostics
        .iter()
        .filter(|d| d.code == "agent/shadowed")
        .collect();
    let files: Vec<_> = notes.iter().map(|d| d.file.as_str()).collect();
    assert_eq!(
        files,
        [".opencode/agent/judge.md", ".opencode/agent/scout.md"],
        "one note per shadowed file: {:#?}",
        set.diagnostics
    );
    for n in &notes {
        assert_eq!(n.severity, Severity::Note);
        assert!(n.message.contains("agent/"), "{}", n.message);
        let help = n.help.as_deref().unwrap_or_default();
        assert!(
            help.contains("--agents .opencode/agent") && help.contains("--only-agents"),
            "{help}"
        );
    }
    assert_eq!(set.diagnostics.len(), 2, "{:#?}", set.diagnostics);
    let shadowed = set
        .files
        .iter()
        .find(|f| f.file == ".opencode/agent/scout.md")
        .unwrap();
    assert_eq!(shadowed.status, "shadowed");
    assert_eq!(
        shadowed.reason.as_deref(),
        Some("shadowed by agent/scout.md")
    );
}

/// `--agents .opencode/agent` picks the opencode copies: the folder is then read only as the
/// override folder, so its agents replace ours and none replaces itself.
#[test]
fn agents_flag_naming_the_opencode_folder_makes_it_win() {
    let project = Project::open(fixture("both")).unwrap();
    let set = agent::load(
        &project,
        &LoadOptions {
            extra_dirs: vec![PathBuf::from(".opencode/agent")],
            only_extra: false,
        },
    );
    assert!(!set.has_errors(), "{:#?}", set.diagnostics);
    assert_eq!(
        set.get("scout").unwrap().description,
        "Scout from the opencode folder"
    );
    assert_eq!(set.get("solo").unwrap().file, ".opencode/agent/solo.md");
    let replaced: Vec<_> = set
        .diagnostics
        .iter()
        .filter(|d| d.code == "agent/overridden")
        .map(|d| d.file.as_str())
        .collect();
    assert_eq!(replaced, ["agent/judge.md", "agent/scout.md"]);
    assert!(
        set.diagnostics.iter().all(|d| d.code != "agent/shadowed"),
        "{:#?}",
        set.diagnostics
    );
}

/// Two files of one folder family (`.opencode/agent/` and `.opencode/agents/`) defining one name
/// stay an error even when our own folder also defines it.
#[test]
fn one_name_twice_inside_one_folder_family_is_still_an_error() {
    let set = load("both-twice");
    let dup: Vec<_> = set
        .diagnostics
        .iter()
        .filter(|d| d.code == "agent/duplicate-name")
        .collect();
    assert_eq!(dup.len(), 1, "{:#?}", set.diagnostics);
    assert_eq!(dup[0].severity, Severity::Error);
    assert!(
        dup[0].message.contains(".opencode/agent/scout.md")
            && dup[0].message.contains(".opencode/agents/scout.md"),
        "{}",
        dup[0].message
    );
    assert_eq!(
        set.get("scout").unwrap().description,
        "Scout from our own folder"
    );
}

/// Loads one agent file `agent/a.md` with `frontmatter` lines after `description`.
fn load_one(frontmatter: &str) -> agent::AgentSet {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("agent")).unwrap();
    std::fs::write(
        dir.path().join("agent/a.md"),
        format!("---\ndescription: \"an agent\"\n{frontmatter}\n---\nBody.\n"),
    )
    .unwrap();
    let project = Project::open(dir.path()).unwrap();
    agent::load(&project, &LoadOptions::default())
}

/// A value of the wrong shape is explained in the user's terms: which key, what it must be,
/// what was written, and where. serde's vocabulary ("externally tagged enum", "expected mapping
/// start") never reaches the user.
#[test]
fn yaml_shape_errors_say_what_was_written_and_what_was_expected() {
    for (line, key, expected, found) in [
        (
            "tools: 5",
            "tools",
            "a map of name: true/false",
            "a number (`5`)",
        ),
        (
            "mode: [primary, subagent]",
            "mode",
            "`primary`, `subagent` or `all`",
            "a list (`[primary, subagent]`)",
        ),
        (
            "permission: [edit]",
            "permission",
            "a map of tool to allow/ask/deny",
            "a list (`[edit]`)",
        ),
        ("steps: many", "steps", "a whole number", "text (`many`)"),
    ] {
        let set = load_one(line);
        let d: Vec<_> = set.diagnostics_for("agent/a.md").collect();
        assert_eq!(d.len(), 1, "{line}: {d:#?}");
        let d = d[0];
        assert_eq!(d.code, "agent/yaml", "{line}");
        // Points at the value: line 3 of the file, the column after `key: `.
        assert_eq!((d.line, d.column), (3, key.len() + 3), "{line}: {d:?}");
        assert!(
            d.message.contains(&format!("`{key}` must be")) && d.message.contains(expected),
            "{line}: {}",
            d.message
        );
        assert!(
            d.message.contains(&format!("found {found}")),
            "{line}: {}",
            d.message
        );
        for jargon in [
            "externally tagged",
            "mapping start",
            "invalid u32",
            "invalid type",
        ] {
            assert!(!d.message.contains(jargon), "{line}: {}", d.message);
        }
    }
}

/// Metadata keys that catalogues and other tools put in agent files load silently; a typo of a
/// key switchboard reads still warns.
#[test]
fn common_metadata_keys_are_accepted_silently() {
    let set = load_one("author: \"Ada\"\ntags: [review, docs]\nversion: 1.2.0\nlicense: MIT\ncategory: review\nkeywords: [a]\ncreated: 2026-01-01\nupdated: 2026-02-01");
    assert!(set.get("a").is_some());
    assert!(set.diagnostics.is_empty(), "{:#?}", set.diagnostics);
    let set = load_one("modle: x");
    assert_eq!(
        set.diagnostics
            .iter()
            .map(|d| d.code.clone())
            .collect::<Vec<_>>(),
        ["agent/unknown-key"]
    );
}

/// A "billion laughs" frontmatter: nine anchors, each a list of nine aliases of the one before.
#[test]
fn a_yaml_bomb_is_refused_quickly_in_words() {
    let mut text = String::from("---\nname: bomb\ndescription: d\n");
    text.push_str("a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for (prev, name) in "abcdefgh".chars().zip("bcdefghi".chars()) {
        let refs = vec![format!("*{prev}"); 9].join(", ");
        text.push_str(&format!("{name}: &{name} [{refs}]\n"));
    }
    text.push_str("---\nbody\n");
    // CPU time of this thread: the bound is on the parser's work, not on how busy the machine is.
    let start = crate::support::clock::thread_cpu();
    let parsed = agent::parse::parse(&text, "agent/bomb.md", "bomb");
    let used = crate::support::clock::thread_cpu() - start;
    assert!(used.as_secs() < 5, "took {used:?} of CPU");
    assert!(matches!(parsed.outcome, agent::parse::Outcome::Failed));
    let d = parsed
        .diagnostics
        .iter()
        .find(|d| d.severity == Severity::Error)
        .expect("an error");
    assert_eq!(d.code, "agent/yaml");
    assert!(d.message.contains("250,000 YAML nodes"), "{}", d.message);
    assert!(d.message.contains("billion laughs"), "{}", d.message);
    assert!(!d.message.contains("Nodes {"), "{}", d.message);
    let help = d.help.as_deref().unwrap_or("");
    assert!(
        help.contains("anchors") && help.contains("aliases"),
        "{help}"
    );
    // Located in the frontmatter, at the anchors.
    assert_eq!(d.file, "agent/bomb.md");
    assert!((4..=12).contains(&d.line), "line {}", d.line);
    assert!(d.column >= 1);
    let shown = d.to_string();
    assert!(shown.contains("agent/bomb.md:"), "{shown}");
}
