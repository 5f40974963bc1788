//! One positive and one negative case per lint rule, each over a small agent folder built in a
//! temporary directory, plus the project's own agents, which must lint clean.

use switchboard::agent::{self, LoadOptions};
use switchboard::problem::Problem;
use switchboard::project::Project;

/// Builds a project whose `agent/` holds `files` (name → content) and lints it.
fn lint(files: &[(&str, &str)]) -> Vec<Problem> {
    lint_project_of(files, None)
}

/// The project builder behind `lint` and `lint_with_config`; `config` is `switchboard.toml`.
fn lint_project_of(files: &[(&str, &str)], config: Option<&str>) -> Vec<Problem> {
    let dir = tempfile::tempdir().unwrap();
    if let Some(config) = config {
        std::fs::write(dir.path().join("switchboard.toml"), config).unwrap();
    }
    for (name, content) in files {
        let path = dir.path().join("agent").join(format!("{name}.md"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
    let project = Project::open(dir.path()).unwrap();
    let set = agent::load(&project, &LoadOptions::default());
    switchboard::lint::lint_project(&project, &set)
}

fn codes(findings: &[Problem]) -> Vec<&str> {
    findings.iter().map(|d| d.code.as_ref()).collect()
}

const ENVELOPE_TEMPLATE: &str = "```\n---\nmessage_id: {{ message_id }}\ncorrelation_id: {{ correlation_id }}\ntimestamp: {{ now }}\nmessage_type: HELP_RESPONSE\n---\n<thinking>\n</thinking>\n<answer>\n</answer>\n```\n";

fn primary(body: &str, extra: &str) -> String {
    format!("---\ndescription: \"lead\"\nmode: primary\n{extra}---\n{body}")
}

fn helper() -> String {
    format!(
        "---\ndescription: \"helps\"\nmode: subagent\ncontract:\n  message_types: [HELP_RESPONSE]\n---\n{ENVELOPE_TEMPLATE}"
    )
}

/// `lead` (primary, with `extra` frontmatter lines) delegating to a well-formed `helper`.
fn lead_calls_helper(extra: &str) -> Vec<Problem> {
    lint(&[
        ("lead", &primary("Delegate to `helper`.\n", extra)),
        ("helper", &helper()),
    ])
}

#[test]
fn clean_pair_has_no_findings() {
    let f = lead_calls_helper("");
    assert!(f.is_empty(), "{f:#?}");
}

#[test]
fn missing_target() {
    let f = lint(&[
        ("lead", &primary("Delegate to `helpr`.\n", "")),
        ("helper", &helper()),
    ]);
    let d = f
        .iter()
        .find(|d| d.code == "delegation/missing-target")
        .expect("reported");
    assert_eq!(
        (d.file.as_str(), d.line, d.column),
        ("agent/lead.md", 5, 14)
    );
    assert_eq!(d.help.as_deref(), Some("did you mean `helper`?"));
}

#[test]
fn orphan_and_unreachable() {
    let f = lint(&[
        ("lead", &primary("Works alone.\n", "")),
        ("helper", &helper()),
        (
            "middle",
            "---\ndescription: \"both\"\nmode: all\ncontract: envelope\n---\n"
                .to_string()
                .as_str(),
        ),
    ]);
    assert!(codes(&f).contains(&"delegation/orphan"), "{f:#?}");
    // `middle` (mode all) is a primary itself, so it is reachable; only the orphan is reported.
    assert!(!codes(&f).contains(&"delegation/unreachable"));
}

#[test]
fn unreachable_from_any_primary() {
    let lonely =
        "---\ndescription: \"x\"\nmode: subagent\ncontract: envelope\n---\nDelegate to `helper`.\n";
    let f = lint(&[
        ("lead", &primary("Alone.\n", "")),
        ("lonely", lonely),
        ("helper", &helper()),
    ]);
    let unreachable: Vec<_> = f
        .iter()
        .filter(|d| d.code == "delegation/unreachable")
        .collect();
    assert_eq!(unreachable.len(), 1, "{f:#?}");
    assert_eq!(unreachable[0].file, "agent/helper.md");
}

#[test]
fn delegation_to_primary() {
    let other = primary("Alone.\n", "");
    let f = lint(&[
        ("lead", &primary("Delegate to `other`.\n", "")),
        ("other", &other),
    ]);
    assert!(codes(&f).contains(&"delegation/primary-target"), "{f:#?}");
}

#[test]
fn delegating_without_task_tool() {
    let f = lead_calls_helper("tools: {read: true, task: false}\n");
    assert!(codes(&f).contains(&"delegation/no-task-tool"), "{f:#?}");
}

#[test]
fn delegation_to_disabled_agent() {
    let disabled = helper().replacen("mode: subagent\n", "mode: subagent\ndisable: true\n", 1);
    let f = lint(&[
        ("lead", &primary("Delegate to `helper`.\n", "")),
        ("helper", &disabled),
    ]);
    let d = f
        .iter()
        .find(|d| d.code == "delegation/disabled")
        .expect("reported");
    assert_eq!(d.severity, switchboard::problem::Severity::Error);
    assert_eq!(
        (d.file.as_str(), d.line, d.column),
        ("agent/lead.md", 5, 14)
    );
    assert!(
        d.help.as_deref().unwrap_or("").contains("agent/helper.md"),
        "{d:?}"
    );
    // The same pair with the target enabled is clean.
    assert!(!codes(&lead_calls_helper("")).contains(&"delegation/disabled"));
}

#[test]
fn delegating_to_oneself_is_a_cycle_on_that_line() {
    let f = lint(&[("lead", &primary("Delegate to `lead`.\n", ""))]);
    let cycles: Vec<_> = f.iter().filter(|d| d.code == "delegation/cycle").collect();
    assert_eq!(cycles.len(), 1, "{f:#?}");
    assert_eq!((cycles[0].line, cycles[0].column), (5, 14));
    assert!(cycles[0].message.contains("lead → lead"));
}

#[test]
fn permission_denies_target() {
    let f = lead_calls_helper("permission:\n  task:\n    \"*\": deny\n");
    let d = f
        .iter()
        .find(|d| d.code == "delegation/permission-denied")
        .expect("reported");
    assert!(d.message.contains("deny"));
    let allowed =
        lead_calls_helper("permission:\n  task:\n    \"*\": deny\n    \"help*\": allow\n");
    assert!(!codes(&allowed).contains(&"delegation/permission-denied"));
}

#[test]
fn cycles_are_reported_once() {
    let a = "---\ndescription: \"a\"\nmode: all\ncontract: envelope\n---\nDelegate to `b`.\n";
    let b = "---\ndescription: \"b\"\nmode: all\ncontract: envelope\n---\nDelegate to `a`.\n";
    let f = lint(&[("a", a), ("b", b)]);
    let cycles: Vec<_> = f.iter().filter(|d| d.code == "delegation/cycle").collect();
    assert_eq!(cycles.len(), 1, "{f:#?}");
    assert!(cycles[0].message.contains("a → b → a"));
}

#[test]
fn template_variable_the_runtime_lacks() {
    let f = lint(&[(
        "lead",
        &primary("Hello {{ user_name }} and {{ correlation_id }}.\n", ""),
    )]);
    let d = f
        .iter()
        .find(|d| d.code == "template/unknown-variable")
        .expect("reported");
    assert_eq!((d.line, d.column), (5, 10));
    let ok = lint(&[("lead", &primary("Hello {{ correlation_id }}.\n", ""))]);
    assert!(!codes(&ok).contains(&"template/unknown-variable"));
}

#[test]
fn contract_template_missing_parts() {
    let sub =
        "---\ndescription: \"x\"\nmode: subagent\ncontract: document-analysis\n---\nJust answer.\n";
    let f = lint(&[("lead", &primary("Delegate to `sub`.\n", "")), ("sub", sub)]);
    let d = f
        .iter()
        .find(|d| d.code == "contract/template-missing")
        .expect("reported");
    for part in [
        "message_id",
        "<thinking>",
        "**Evidence**",
        "source_document",
        "DOCUMENT_ANALYSIS_RESPONSE",
    ] {
        assert!(
            d.message.contains(part),
            "{part} missing from: {}",
            d.message
        );
    }
}

#[test]
fn subagent_without_contract_gets_a_note() {
    let sub = "---\ndescription: \"x\"\nmode: subagent\n---\nAnswer.\n";
    let f = lint(&[("lead", &primary("Delegate to `sub`.\n", "")), ("sub", sub)]);
    assert!(codes(&f).contains(&"contract/none"));
    assert_eq!(
        switchboard::lint::exit_code(&f),
        0,
        "a note does not fail lint"
    );
}

#[test]
fn consumer_expects_evidence_the_producer_does_not_owe() {
    let body = "Delegate to `helper`.\n\n## What helper returns\n\n`message_type: HELP_RESPONSE` with\n- **Evidence**: `path:1-2`\n";
    let f = lint(&[("lead", &primary(body, "")), ("helper", &helper())]);
    let d = f
        .iter()
        .find(|d| d.code == "contract/evidence-not-required")
        .expect("reported");
    assert_eq!(d.line, 9);
    let strict = helper().replace(
        "message_types: [HELP_RESPONSE]",
        "message_types: [HELP_RESPONSE]\n  evidence: required",
    );
    let strict = strict.replace(
        "<answer>\n",
        "<answer>\n- **Evidence**: x\n- **Excerpt**: y\n",
    );
    let ok = lint(&[("lead", &primary(body, "")), ("helper", &strict)]);
    assert!(
        !codes(&ok).contains(&"contract/evidence-not-required"),
        "{ok:#?}"
    );
    let unknown = lint(&[
        (
            "lead",
            &primary(&body.replace("HELP_RESPONSE", "NOPE_RESPONSE"), ""),
        ),
        ("helper", &helper()),
    ]);
    assert!(codes(&unknown).contains(&"contract/unknown-message-type"));
}

#[test]
fn sarif_has_rule_ids_and_regions() {
    let f = lint(&[("lead", &primary("Delegate to `ghost`.\n", ""))]);
    let sarif = switchboard::lint::sarif::to_sarif(&f);
    let result = &sarif["runs"][0]["results"][0];
    assert_eq!(result["ruleId"], "delegation/missing-target");
    assert_eq!(
        result["locations"][0]["physicalLocation"]["region"]["startLine"],
        5
    );
    assert_eq!(sarif["version"], "2.1.0");
}

#[test]
fn diff_reports_added_and_fixed() {
    let before = lint(&[("lead", &primary("Delegate to `ghost`.\n", ""))]);
    let after = lint(&[("lead", &primary("Delegate to `phantom`.\n", ""))]);
    let (added, fixed) = switchboard::lint::diff(&before, &after);
    assert_eq!((added.len(), fixed.len()), (1, 1));
    assert!(added[0].message.contains("phantom") && fixed[0].message.contains("ghost"));
}

/// Like `lint`, with a `switchboard.toml` beside the agents.
fn lint_with_config(files: &[(&str, &str)], config: &str) -> Vec<Problem> {
    lint_project_of(files, Some(config))
}

#[test]
fn model_the_config_does_not_know() {
    let with_model = |m: &str| primary("Alone.\n", &format!("model: \"{m}\"\n"));
    let config =
        "[aliases]\nfast = \"openai/gpt-4o-mini\"\n\n[providers.ollama]\nprotocol = \"openai\"\n";
    for known in [
        "offline/default",
        "sonnet",
        "inherit",
        "fast",
        "ollama/llama3.1",
        "anthropic/claude-x",
    ] {
        let f = lint_with_config(&[("lead", &with_model(known))], config);
        assert!(
            !codes(&f).contains(&"agent/unknown-model"),
            "{known}: {f:#?}"
        );
    }
    for unknown in ["sonet", "vertex/gemini", "gpt-4o"] {
        let f = lint_with_config(&[("lead", &with_model(unknown))], config);
        let d = f
            .iter()
            .find(|d| d.code == "agent/unknown-model")
            .unwrap_or_else(|| panic!("{unknown}: {f:#?}"));
        assert_eq!((d.file.as_str(), d.line), ("agent/lead.md", 4));
        assert!(
            d.help.as_deref().unwrap().contains("fast"),
            "aliases listed"
        );
    }
}

#[test]
fn broken_config_is_a_located_error() {
    let f = lint_with_config(
        &[("lead", &primary("Alone.\n", ""))],
        "[model]\ndefault = \n",
    );
    let d = f
        .iter()
        .find(|d| d.code == "config/invalid")
        .expect("reported");
    assert_eq!((d.file.as_str(), d.line), ("switchboard.toml", 2));
    assert_eq!(switchboard::lint::exit_code(&f), 1);
}

/// The loader's fixture folders in the layouts of opencode and Claude Code.
fn fixture_findings(name: &str) -> Vec<Problem> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/loader")
        .join(name);
    let project = Project::open(root).unwrap();
    let set = agent::load(&project, &LoadOptions::default());
    switchboard::lint::lint_project(&project, &set)
}

#[test]
fn opencode_style_folder_lints_without_errors() {
    let f = fixture_findings("opencode");
    assert_eq!(switchboard::lint::exit_code(&f), 0, "{f:#?}");
    // reviewer is named in prose and team/helper in a task() example: neither is an orphan.
    assert!(!codes(&f).contains(&"delegation/orphan"), "{f:#?}");
    assert!(
        codes(&f).contains(&"contract/none"),
        "plain opencode agents declare no contract"
    );
}

#[test]
fn claude_style_folder_lints_with_its_known_quirks() {
    let f = fixture_findings("claude");
    assert_eq!(switchboard::lint::exit_code(&f), 0, "{f:#?}");
    let c = codes(&f);
    assert!(
        c.contains(&"agent/foreign-key"),
        "permissionMode is Claude's own key"
    );
    assert!(c.contains(&"agent/name-mismatch"));
    assert!(
        !c.contains(&"agent/unknown-model"),
        "`model: inherit` is understood"
    );
}

#[test]
fn granted_tools_switchboard_does_not_provide() {
    let lead = |tools: &str| primary("Alone.\n", &format!("tools: {tools}\n"));
    // A foreign runtime's tool, in an opencode map: warned at the name, with what to do.
    let f = lint(&[("lead", &lead("{read: true, bash: true}"))]);
    let d = f
        .iter()
        .find(|d| d.code == "agent/tool-not-provided")
        .expect("reported");
    assert_eq!(
        (d.file.as_str(), d.line, d.column),
        ("agent/lead.md", 4, 21)
    );
    assert!(d.message.contains("`bash`"), "{}", d.message);
    assert!(d.help.as_deref().unwrap().contains("remove the grant"));
    // websearch with no endpoint: warned, naming the setting; with one, not.
    let f = lint(&[("lead", &lead("[Read, WebSearch]"))]);
    let d = f
        .iter()
        .find(|d| d.code == "agent/tool-not-provided")
        .expect("reported");
    assert!(d
        .help
        .as_deref()
        .unwrap()
        .contains("[websearch] searxng_url"));
    assert_eq!((d.line, d.column), (4, 15));
    let f = lint_with_config(
        &[("lead", &lead("[Read, WebSearch]"))],
        "[websearch]\nsearxng_url = \"http://127.0.0.1:8888\"\n",
    );
    assert!(!codes(&f).contains(&"agent/tool-not-provided"), "{f:#?}");
    // Provided tools, denied tools and typos are not this rule's business.
    for tools in [
        "{webfetch: true, read: true}",
        "{bash: false}",
        "[Read, Grpe]",
    ] {
        let f = lint(&[("lead", &lead(tools))]);
        assert!(
            !codes(&f).contains(&"agent/tool-not-provided"),
            "{tools}: {f:#?}"
        );
    }
}

/// A `task(...)` call written in a sentence (as prompts for other tools do) is a delegation:
/// a missing target is reported at the target's line and column.
#[test]
fn task_call_written_in_prose_is_checked() {
    let f = lint(&[
        (
            "lead",
            &primary(
                "Hand each file over with task(subagent_type=\"helpr\", prompt=\"check it\").\n",
                "",
            ),
        ),
        ("helper", &helper()),
    ]);
    let d = f
        .iter()
        .find(|d| d.code == "delegation/missing-target")
        .unwrap_or_else(|| panic!("not reported: {f:#?}"));
    assert_eq!(
        (d.file.as_str(), d.line, d.column),
        ("agent/lead.md", 5, 46)
    );
}

/// `lint --deny warnings` fails CI on warnings: exit 1 where plain `lint` exits 0, and still 0
/// when there is nothing to report.
#[test]
fn deny_warnings_turns_warnings_into_a_failing_exit_code() {
    let run = |agent: &str, deny: bool| {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("agent")).unwrap();
        std::fs::write(dir.path().join("agent/solo.md"), agent).unwrap();
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_switchboard"));
        cmd.arg("--root")
            .arg(dir.path())
            .arg("lint")
            .env("NO_COLOR", "1");
        if deny {
            cmd.args(["--deny", "warnings"]);
        }
        let out = cmd.output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let warned = primary("Works alone.\n", "modle: x\n");
    let (code, stderr) = run(&warned, false);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("agent/unknown-key"), "{stderr}");
    let (code, stderr) = run(&warned, true);
    assert_eq!(code, Some(1), "{stderr}");
    let (code, stderr) = run(&primary("Works alone.\n", ""), true);
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn analyze_file_without_the_analyzer_agent() {
    let grants = "tools:\n  read: true\n  analyze_file: true\n";
    let f = lint(&[("lead", &primary("Read files.\n", grants))]);
    let found: Vec<&Problem> = f
        .iter()
        .filter(|d| d.code == "delegation/missing-analyzer")
        .collect();
    assert_eq!(found.len(), 1, "{f:#?}");
    assert_eq!(found[0].file, "agent/lead.md");
    assert_eq!(
        (found[0].line, found[0].column),
        (6, 3),
        "placed on the grant: {:?}",
        found[0]
    );
    assert!(
        found[0].message.contains("file-analyzer"),
        "{}",
        found[0].message
    );

    // The shipped analyzer makes the grant good; an agent that is not granted the tool is never
    // flagged, and neither is one whose permission denies it.
    let analyzer = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("agent/file-analyzer.md"),
    )
    .unwrap();
    let f = lint(&[
        ("lead", &primary("Read files.\n", grants)),
        ("file-analyzer", &analyzer),
    ]);
    assert!(
        !codes(&f).contains(&"delegation/missing-analyzer"),
        "{f:#?}"
    );
    let f = lint(&[("lead", &primary("Read files.\n", "tools:\n  read: true\n"))]);
    assert!(
        !codes(&f).contains(&"delegation/missing-analyzer"),
        "{f:#?}"
    );
    let denied = format!("{grants}permission:\n  analyze_file: deny\n");
    let f = lint(&[("lead", &primary("Read files.\n", &denied))]);
    assert!(
        !codes(&f).contains(&"delegation/missing-analyzer"),
        "{f:#?}"
    );
}

/// The shapes of scameronde/rpi-qpi (#28 item 6), rebuilt in tests/fixtures/foreign/rpi-shapes:
/// subagents without `task` whose prompts show callers how to call them, and grants of MCP
/// servers that opencode.json (`mcp`, local command arrays and a remote URL with headers) and
/// .mcp.json (`mcpServers`) declare, and of an opencode custom tool (`.opencode/tool/*.ts`).
/// Before: 3 `delegation/cycle` errors and 8 `agent/unknown-tool` warnings; the documentation is
/// not a delegation, a declared server's name is a tool grant, and a custom tool is known (but
/// not provided).
#[test]
fn a_foreign_projects_examples_and_declared_mcp_servers_are_not_findings() {
    let root =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/foreign/rpi-shapes");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["lint", "--format", "json", "--root"])
        .arg(&root)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let findings: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    let count = |code: &str| findings.iter().filter(|f| f["code"] == code).count();
    assert_eq!(count("delegation/cycle"), 0, "{findings:#?}");
    assert_eq!(count("agent/unknown-tool"), 0, "{findings:#?}");
    assert_eq!(count("config/foreign-mcp"), 0, "{findings:#?}");
    // The primary's delegations are still edges: every subagent is called, none is an orphan.
    assert_eq!(count("delegation/orphan"), 0, "{findings:#?}");
    // `bash` and the custom tool stay what they are: tools of another runtime that switchboard
    // does not provide.
    let not_provided: Vec<&str> = findings
        .iter()
        .filter(|f| f["code"] == "agent/tool-not-provided")
        .filter_map(|f| f["message"].as_str())
        .collect();
    assert_eq!(not_provided.len(), 2, "{not_provided:?}");
    assert!(not_provided[0].contains("`bash`"), "{not_provided:?}");
    assert!(not_provided[1].contains("`web-crawl`"), "{not_provided:?}");
    assert_eq!(out.status.code(), Some(0), "{findings:#?}");
}

/// A server name granted in `tools:` is still an unknown tool when nothing declares it, and a
/// declaration another tool's file gets wrong is a warning at its line, not a failed lint.
#[test]
fn an_undeclared_server_name_is_unknown_and_a_bad_declaration_is_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("agent")).unwrap();
    std::fs::write(
        dir.path().join("agent/lead.md"),
        "---\ndescription: lead\nmode: primary\ntools:\n  read: true\n  context7: true\n  docs: true\n---\nWork.\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("opencode.json"),
        "{\n  \"mcp\": {\n    \"docs\": {\"type\": \"local\", \"command\": []}\n  }\n}\n",
    )
    .unwrap();
    let project = Project::open(dir.path()).unwrap();
    let set = agent::load(&project, &LoadOptions::default());
    let findings = switchboard::lint::lint_project(&project, &set);
    let unknown: Vec<&str> = findings
        .iter()
        .filter(|d| d.code == "agent/unknown-tool")
        .map(|d| d.message.as_str())
        .collect();
    // `docs` is declared (badly, so it is skipped): unknown too, like `context7`.
    assert_eq!(
        unknown,
        vec!["unknown tool `context7`", "unknown tool `docs`"],
        "{findings:#?}"
    );
    let bad = findings
        .iter()
        .find(|d| d.code == "config/foreign-mcp")
        .expect("the bad entry is reported");
    assert_eq!(
        (bad.file.as_str(), bad.line),
        ("opencode.json", 3),
        "{bad:?}"
    );
    assert!(
        bad.message.contains("`docs` has an empty `command` array"),
        "{bad:?}"
    );
    assert_eq!(bad.severity, switchboard::problem::Severity::Warning);
}
