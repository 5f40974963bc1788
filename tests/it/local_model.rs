//! The `local` provider against a real model: SmolLM2-135M-Instruct (GGUF, fetched by
//! `bash scripts/fetch-test-model.sh` into .cache/models/). A missing model fails these tests:
//! it is never a quiet skip.
#![cfg(feature = "local")]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use switchboard::agent::{load, LoadOptions};
use switchboard::config::Config;
use switchboard::contract::{check, CheckContext, Contract, FileCache};
use switchboard::model::{
    Message, ModelError, ModelRequest, ProviderContext, Registry, ResponseContract,
};
use switchboard::runtime::events::read_log;
use switchboard::runtime::{EventKind, RunOptions, Session};

use crate::support::scripted;

const MODEL: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/.cache/models/smollm2-135m-instruct.gguf"
);

fn model_path() -> PathBuf {
    let path = PathBuf::from(MODEL);
    assert!(
        path.is_file(),
        "the test model {MODEL} is missing: run `bash scripts/fetch-test-model.sh`"
    );
    path
}

fn context(root: &Path, local: &str) -> ProviderContext {
    let mut providers = std::collections::BTreeMap::new();
    providers.insert("local".to_string(), toml::from_str(local).unwrap());
    ProviderContext {
        project_root: root.to_path_buf(),
        providers,
        stream: None,
    }
}

/// What the runtime's prompt says about the envelope, in short.
const ENVELOPE_SYSTEM: &str = "You are `reader`. Reply with YAML frontmatter (message_id, \
    correlation_id, timestamp, message_type) between `---` lines, then one short <thinking> \
    block with your reasoning and one <answer> block with the answer in one sentence.";

fn request(contract: Option<ResponseContract>, system: &str, prompt: &str) -> ModelRequest {
    ModelRequest {
        model: String::new(),
        agent: "tester".into(),
        system: system.into(),
        messages: vec![Message::user(prompt)],
        tools: Vec::new(),
        tool_choice: Default::default(),
        temperature: Some(0.0),
        top_p: None,
        max_tokens: Some(700),
        response_contract: contract,
    }
}

#[tokio::test]
async fn the_shipped_analyst_plans_under_its_json_grammar() {
    let model = model_path();
    let (dir, project) = scripted::project_with_analyst();
    let agents = Arc::new(load(&project, &LoadOptions::default()));
    assert!(!agents.has_errors(), "{:?}", agents.diagnostics);
    let spec = format!("local/{}", model.display());
    let registry = Registry::with_builtins(context(dir.path(), "seed = 1"));
    let options = RunOptions {
        model: Some(spec),
        ..RunOptions::default()
    };
    let session = Session::new(
        project.clone(),
        agents,
        Config::default(),
        Arc::new(registry),
        options,
        "analyst",
        "How do we rotate the API keys of the billing service?",
    )
    .unwrap();
    let outcome = session.run().await;
    let events = read_log(&outcome.events).unwrap();
    // Every answer has the schema's shape: it parses, has every required key, and each value
    // has its type, enum and pattern. What the grammar leaves to the checker (the conditional
    // rules under `allOf`, `uniqueItems`) may still be repaired or fall back.
    let mut checked = 0;
    for e in &events {
        if let EventKind::ContractChecked { violations, .. } = &e.kind {
            checked += 1;
            for v in violations {
                let left_to_checker = v.code == "json/conflict"
                    || v.help.as_deref().is_some_and(|h| h.contains("uniqueItems"));
                assert!(left_to_checker, "a shape violation under grammar: {v:#?}");
            }
        }
    }
    assert!(checked >= 1, "{events:#?}");
    let outcomes: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ContractOutcome { outcome, .. } => Some(outcome.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(outcomes.len(), 1, "{events:#?}");
    assert!(
        ["valid", "repaired", "fallback"].contains(&outcomes[0].as_str()),
        "{outcomes:?}\n{events:#?}"
    );
    let plan: serde_json::Value = serde_json::from_str(outcome.answer.trim()).unwrap();
    for key in ["intent", "request_type", "track", "required_sources"] {
        assert!(plan.get(key).is_some(), "{key} missing in {plan}");
    }
}

#[tokio::test]
async fn an_envelope_answer_under_grammar_has_the_envelope_shape() {
    let model = model_path();
    let (dir, project) = scripted::project();
    let registry = Registry::with_builtins(context(dir.path(), "seed = 1"));
    let (m, _) = registry.get(&format!("local/{}", model.display())).unwrap();
    let contract = ResponseContract {
        contract: Contract::envelope(),
        message_id: "reader-2026-11-23-001".into(),
        correlation_id: "local-test-1".into(),
        timestamp: "2026-11-23T12:00:00Z".into(),
    };
    let started = std::time::Instant::now();
    let response = m
        .complete(&request(
            Some(contract.clone()),
            ENVELOPE_SYSTEM,
            "What is a README file for? Answer in one sentence.",
        ))
        .await
        .unwrap();
    eprintln!(
        "envelope under grammar: {:?}, {:?} tokens\n{}",
        started.elapsed(),
        response.usage,
        response.content
    );
    assert!(
        !response.truncated,
        "cut off after {:?}:\n{}",
        started.elapsed(),
        response.content
    );
    assert!(response.usage.input_tokens > 0 && response.usage.output_tokens > 0);
    let files = FileCache::default();
    let ctx = CheckContext::new(&project, &files)
        .with_correlation_id(&contract.correlation_id)
        .with_message_id(&contract.message_id);
    let report = check(&response.content, &contract.contract, &ctx);
    assert!(
        report.violations.is_empty(),
        "{:#?}\n{}",
        report.violations,
        response.content
    );
}

/// A locator's first turn (`tool_choice: required`) under the grammar is one call of an
/// offered tool, read back as a native call: even a 135M model searches before it answers.
#[tokio::test]
async fn a_required_call_under_grammar_is_a_call_of_an_offered_tool() {
    let model = model_path();
    let (dir, _project) = scripted::project();
    let registry = Registry::with_builtins(context(dir.path(), "seed = 1"));
    let (m, _) = registry.get(&format!("local/{}", model.display())).unwrap();
    let mut req = request(
        Some(ResponseContract {
            contract: Contract::envelope(),
            message_id: "locator-2026-11-25-001".into(),
            correlation_id: "local-test-2".into(),
            timestamp: "2026-11-25T12:00:00Z".into(),
        }),
        "You are `finder`. You find documents under thoughts/ with your tools.",
        "Find the documents about the YAML parser.",
    );
    req.tools = ["grep", "glob"]
        .iter()
        .map(|t| switchboard::tools::spec(t).unwrap())
        .collect();
    req.tool_choice = switchboard::model::ToolChoice::Required;
    req.max_tokens = Some(120);
    let response = m.complete(&req).await.unwrap();
    eprintln!(
        "required call: {:?}\n{}",
        response.tool_calls, response.content
    );
    assert_eq!(response.tool_calls.len(), 1, "{}", response.content);
    let call = &response.tool_calls[0];
    assert!(call.name == "grep" || call.name == "glob", "{call:?}");
    assert!(call.arguments["pattern"].is_string(), "{call:?}");
}

/// llama.cpp loads the grammar of the shipped plan workflow's `plan` step, whose verification
/// command opens on an installed program, and the call decoded under it is one. A pattern
/// llama.cpp refused once failed a whole planner session on the 1.5B model: the translation's
/// unit tests had passed, since none of them loaded the grammar into llama.cpp.
#[tokio::test]
async fn the_plan_steps_grammar_loads_and_its_command_opens_on_a_program() {
    use switchboard::workflow::{state::StepStatus, State};
    let model = model_path();
    let (dir, _project) = scripted::project();
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/workflow/plan.yaml"))
        .unwrap();
    let wf = switchboard::workflow::spec::parse("workflow/plan.yaml", &text).unwrap();
    let mut state = State::new("r1", &wf, "planner", "s", "c", "Plan a --quiet flag.");
    for name in ["intent", "clarify", "scope", "test_strategy", "complexity"] {
        let record = state.record(name);
        record.status = StepStatus::Accepted;
        record.result = Some(serde_json::json!({"primary": ["src/cli/run.rs"], "secondary": []}));
    }
    let tool = switchboard::workflow::tool::spec(&wf, Some(&state), "r1");
    let pattern = tool.parameters["properties"]["result"]["properties"]["verification"]["pattern"]
        .as_str()
        .expect("the verification string has a pattern")
        .to_string();
    let registry = Registry::with_builtins(context(dir.path(), "seed = 1"));
    let (m, _) = registry.get(&format!("local/{}", model.display())).unwrap();
    let mut req = request(
        None,
        "You are `planner`. Report the `plan` step with the `step` tool.",
        "Plan adding a --quiet flag to the run command in src/cli/run.rs.",
    );
    req.tools = vec![tool];
    req.tool_choice = switchboard::model::ToolChoice::Required;
    req.max_tokens = Some(600);
    let response = m.complete(&req).await.expect("llama.cpp takes the grammar");
    eprintln!("plan call: {:?}\n{}", response.tool_calls, response.content);
    assert_eq!(response.tool_calls.len(), 1, "{}", response.content);
    let call = &response.tool_calls[0];
    assert_eq!(call.name, "step", "{call:?}");
    let verification = call.arguments["result"]["verification"]
        .as_str()
        .unwrap_or_else(|| panic!("no verification in {call:?}"));
    let re = regex::Regex::new(&pattern).unwrap();
    assert!(
        re.is_match(verification),
        "{verification:?} against {pattern}"
    );
}

/// The runs of consecutive lines of `file` that the excerpt blocks of `answer` quote: `None`
/// for a block that is not one.
fn quoted_runs(answer: &str, file: &str) -> Vec<Option<usize>> {
    let lines: Vec<&str> = file.lines().collect();
    answer
        .split("- **Excerpt**:\n```\n")
        .skip(1)
        .map(|rest| {
            let block: Vec<&str> = rest.split("```").next().unwrap_or("").lines().collect();
            (0..lines.len()).find(|&at| lines[at..].starts_with(&block))
        })
        .collect()
}

/// The line ranges (`N` or `N-M`, 1-based) the Evidence references of `answer` name.
fn cited_lines(answer: &str) -> Vec<(usize, usize)> {
    answer
        .split("- **Evidence**: `")
        .skip(1)
        .filter_map(|rest| {
            let reference = rest.split('`').next()?;
            let lines = reference.rsplit(':').next()?;
            let (from, to) = lines.split_once('-').unwrap_or((lines, lines));
            Some((from.parse().ok()?, to.parse().ok()?))
        })
        .collect()
}

/// Writes `text` to `thoughts/yaml.md` under `root` and returns its lines numbered as `read`
/// prints them.
fn write_record(root: &Path, text: &str) -> String {
    std::fs::create_dir_all(root.join("thoughts")).unwrap();
    std::fs::write(root.join("thoughts/yaml.md"), text).unwrap();
    text.lines()
        .enumerate()
        .map(|(i, l)| format!("{:>6}\t{l}\n", i + 1))
        .collect()
}

/// An Evidence item decoded under the envelope grammar quotes a run of the cited file's lines,
/// the run its reference names, whatever the model meant to write. The grammar is the one `local` builds for a
/// document-analysis answer whose conversation showed the file; its root is narrowed to two
/// Evidence items, because SmolLM2-135M left to itself writes prose and no item at all.
#[test]
fn under_grammar_every_excerpt_copies_a_run_of_the_files_lines() {
    use switchboard::model::local::cited::Cited;
    use switchboard::model::local::{engine, grammar};
    let (dir, project) = scripted::project();
    let decision = "# Decision: parse YAML with serde-saphyr\n\n\
        We chose serde-saphyr over serde_yaml because serde_yaml is archived.\n\
        Errors from serde-saphyr carry the line and column of the bad value.\n\
        The frontmatter splitter stays our own code.\n";
    let numbered = write_record(dir.path(), decision);
    let system = "You cite the lines of a file that state each decision: \
        `- **Evidence**: `path:N-M``, then `- **Excerpt**:` and those lines in a fenced block.";
    let prompt =
        format!("What did we decide about YAML, and why? Cite thoughts/yaml.md:\n\n{numbered}");
    let mut contract = Contract::document_analysis();
    contract.excerpt_max_lines = 3;
    let mut req = request(
        Some(ResponseContract {
            contract,
            message_id: "thoughts-2026-11-27-001".into(),
            correlation_id: "local-test-3".into(),
            timestamp: "2026-11-27T12:00:00Z".into(),
        }),
        system,
        &prompt,
    );
    req.max_tokens = Some(300);
    let two_items = |cited: &Cited| {
        let g = grammar::for_request(&req, None, 300, cited)
            .unwrap()
            .unwrap();
        let rest: String = g.lines().skip(1).map(|l| format!("{l}\n")).collect();
        assert!(g.starts_with("root ::= "), "{g}");
        format!("root ::= evidence-item \"\\n\" evidence-item\n{rest}")
    };
    let loaded = engine::load(&model_path()).unwrap();
    let text = loaded.prompt(system, &[Message::user(&prompt)]).unwrap();
    let decode = |grammar: String| {
        let mut g = generate(&text, false);
        g.grammar = Some(grammar);
        g.max_tokens = 200;
        loaded.generate(&g, None).unwrap().text
    };
    let cited = Cited::gather(&project, [system, prompt.as_str()]);
    assert_eq!(cited.files, ["thoughts/yaml.md"]);
    assert_eq!(cited.quotable.len(), 1);
    let quoted = decode(two_items(&cited));
    eprintln!("quoted under grammar:\n{quoted}");
    let runs = quoted_runs(&quoted, decision);
    assert_eq!(runs.len(), 2, "{quoted}");
    assert!(runs.iter().all(Option::is_some), "{runs:?}\n{quoted}");
    // And each run is the one its reference names (`grammar::tied_cites`).
    let named = cited_lines(&quoted);
    let blocks: Vec<usize> = quoted
        .split("- **Excerpt**:\n```\n")
        .skip(1)
        .map(|rest| rest.split("```").next().unwrap_or("").lines().count())
        .collect();
    assert_eq!(named.len(), 2, "{quoted}");
    for ((run, (from, to)), len) in runs.iter().zip(&named).zip(&blocks) {
        assert_eq!(*run, Some(from - 1), "{quoted}");
        assert_eq!(to - from + 1, *len, "{quoted}");
    }
    // The grammar before quoting: the same model, the same file and prompt, free excerpt lines.
    let unquoted = Cited {
        files: cited.files.clone(),
        quotable: Vec::new(),
    };
    let free = decode(two_items(&unquoted));
    eprintln!("free excerpt lines:\n{free}");
    let free_runs = quoted_runs(&free, decision);
    assert!(
        free_runs.iter().any(Option::is_none),
        "{free_runs:?}\n{free}"
    );
}

/// Under the grammar of a contract that checks listed paths (`named_paths: exist`, the
/// locators'), every path in inline code is one the conversation named, whatever the model
/// meant to list. The task names a record that does not exist beside two that do; the same
/// decoding without the grammar is shown beside it. Under the whole answer's grammar the model
/// wrote its paths bare, which that grammar now refuses (no `/` outside inline code); here
/// the root is narrowed to three list lines of one inline code each, to see which paths the
/// code can hold.
#[test]
fn under_grammar_a_listed_path_is_one_the_conversation_named() {
    use switchboard::contract::spec::NamedPaths;
    use switchboard::model::local::cited::Cited;
    use switchboard::model::local::{engine, grammar};
    let (dir, project) = scripted::project();
    let decisions = dir.path().join("thoughts/shared/decisions");
    std::fs::create_dir_all(&decisions).unwrap();
    for name in ["2026-11-02-yaml-parser.md", "2026-11-20-retry-policy.md"] {
        std::fs::write(decisions.join(name), "# A decision\n").unwrap();
    }
    let invented = "thoughts/shared/plans/2026-11-17-switchboard-pipeline.md";
    let system = "You list documents. Write each path in backticks on its own line: \
        `- `path``.";
    let prompt = format!(
        "List these three documents, one per line, in backticks:\n\
         {invented}\n\
         thoughts/shared/decisions/2026-11-02-yaml-parser.md\n\
         thoughts/shared/decisions/2026-11-20-retry-policy.md\n"
    );
    let mut contract = Contract::envelope();
    contract.named_paths = NamedPaths::Exist;
    let req = request(
        Some(ResponseContract {
            contract,
            message_id: "locator-2026-11-27-001".into(),
            correlation_id: "local-test-5".into(),
            timestamp: "2026-11-27T12:00:00Z".into(),
        }),
        system,
        &prompt,
    );
    let cited = Cited::gather(&project, [system, prompt.as_str()]);
    assert_eq!(cited.files.len(), 2, "{:?}", cited.files);
    let g = grammar::for_request(&req, None, 300, &cited)
        .unwrap()
        .unwrap();
    let rest: String = g.lines().skip(1).map(|l| format!("{l}\n")).collect();
    assert!(
        g.contains("prose-plain ::= [^<`#*\\n/]"),
        "plain text holds no path: {g}"
    );
    let lines = format!("root ::= ( \"- \" prose-code \"\\n\" ){{3}}\n{rest}");
    let loaded = engine::load(&model_path()).unwrap();
    let text = loaded.prompt(system, &[Message::user(&prompt)]).unwrap();
    let decode = |grammar: Option<String>| {
        let mut g = generate(&text, false);
        g.grammar = grammar;
        g.max_tokens = 120;
        loaded.generate(&g, None).unwrap().text
    };
    let paths = |answer: &str| -> Vec<String> {
        answer
            .split('`')
            .skip(1)
            .step_by(2)
            .filter(|code| code.contains('/'))
            .map(str::to_string)
            .collect()
    };
    let listed = decode(Some(lines));
    eprintln!("listed under grammar:\n{listed}");
    let under = paths(&listed);
    assert!(!under.is_empty(), "{listed}");
    for path in &under {
        assert!(cited.files.contains(path), "{path} in {listed}");
    }
    let free = decode(None);
    eprintln!("listed freely:\n{free}");
}

/// Under the grammar, a second Evidence item never opens on a line the first one quoted: the
/// sampler reads the answer so far (`fresh.rs`). The same decoding without the files passed to
/// the sampler is shown beside it; SmolLM2-135M tends to quote the line it quoted before.
#[test]
fn under_grammar_a_later_excerpt_opens_on_a_line_no_earlier_one_quoted() {
    use switchboard::model::local::cited::Cited;
    use switchboard::model::local::fresh::Quoting;
    use switchboard::model::local::{engine, grammar};
    let (dir, project) = scripted::project();
    let decision = "# Decision: parse YAML with serde-saphyr\n\n\
        We chose serde-saphyr over serde_yaml because serde_yaml is archived.\n\
        Errors from serde-saphyr carry the line and column of the bad value.\n\
        The frontmatter splitter stays our own code.\n";
    write_record(dir.path(), decision);
    let system = "You cite the one line of a file that states the decision, as \
        `- **Evidence**: `path:N-N``, then `- **Excerpt**:` and that line in a fenced block.";
    let prompt = "What did we decide about YAML? Cite thoughts/yaml.md, line 3:\n\n     \
        3\tWe chose serde-saphyr over serde_yaml because serde_yaml is archived.\n";
    let mut contract = Contract::document_analysis();
    contract.excerpt_max_lines = 1;
    let req = request(
        Some(ResponseContract {
            contract,
            message_id: "thoughts-2026-11-27-001".into(),
            correlation_id: "local-test-4".into(),
            timestamp: "2026-11-27T12:00:00Z".into(),
        }),
        system,
        prompt,
    );
    let cited = Cited::gather(&project, [system, prompt]);
    assert_eq!(cited.quotable.len(), 1);
    let (g, openings) = grammar::with_openings(&req, None, 300, &cited)
        .unwrap()
        .unwrap();
    let rest: String = g.lines().skip(1).map(|l| format!("{l}\n")).collect();
    let three =
        format!("root ::= evidence-item \"\\n\" evidence-item \"\\n\" evidence-item\n{rest}");
    let loaded = engine::load(&model_path()).unwrap();
    let text = loaded.prompt(system, &[Message::user(prompt)]).unwrap();
    let decode = |quoted: engine::Quoted| {
        let mut g = generate(&text, false);
        g.grammar = Some(three.clone());
        g.max_tokens = 200;
        g.quoted = quoted;
        loaded.generate(&g, None).unwrap().text
    };
    let first_lines = |answer: &str| -> Vec<String> {
        answer
            .split("- **Excerpt**:\n```\n")
            .skip(1)
            .map(|rest| rest.lines().next().unwrap_or("").to_string())
            .collect()
    };
    let held = decode(std::sync::Arc::new(Quoting {
        files: cited.quotable.clone(),
        openings,
    }));
    eprintln!("with the guard:\n{held}");
    let opened = first_lines(&held);
    assert_eq!(opened.len(), 3, "{held}");
    for (i, line) in opened.iter().enumerate() {
        assert!(
            decision.lines().any(|l| l == line),
            "{line:?} is not a line"
        );
        assert!(
            !opened[..i].contains(line),
            "{line:?} opened twice:\n{held}"
        );
    }
    let free = decode(Default::default());
    eprintln!("without it:\n{free}");
}

/// The answer to an `evidence_goal` ask holds the goal's Evidence items under the grammar, each
/// a run of the file's lines and each opening on a line of its own. Asked for one more item and
/// shown the lines, Qwen2.5-Coder-1.5B sent its two-item answer back unchanged; decoded freely,
/// SmolLM2-135M does not write three items from the ask either.
#[tokio::test]
async fn under_grammar_the_answer_to_an_evidence_goal_ask_holds_the_goal() {
    let model = model_path();
    let (dir, project) = scripted::project();
    let decision = "# Decision: parse YAML with serde-saphyr\n\n\
        We chose serde-saphyr over serde_yaml because serde_yaml is archived.\n\
        Errors from serde-saphyr carry the line and column of the bad value.\n\
        The frontmatter splitter stays our own code, about forty lines long.\n";
    let numbered = write_record(dir.path(), decision);
    let system = "You cite the lines of a file that state each decision: `#### Decision: title`, \
        `- **Evidence**: `path:N``, then `- **Excerpt**:` and that line in a fenced block.";
    let prompt = format!("What did we decide about YAML? Read thoughts/yaml.md:\n\n{numbered}");
    let one = "#### Decision: serde-saphyr\n- **Evidence**: `thoughts/yaml.md:3`\n\
        - **Excerpt**:\n```\nWe chose serde-saphyr over serde_yaml because serde_yaml is archived.\n```\n";
    let (have, note) = switchboard::runtime::evidence_goal::ask(
        one,
        3,
        &["Decision".to_string(), "Spec".to_string()],
        &project,
    )
    .expect("one verified item of three is asked for more");
    assert_eq!(have, 1);
    let mut contract = Contract::document_analysis();
    contract.excerpt_max_lines = 1;
    let rc = ResponseContract {
        contract,
        message_id: "thoughts-2026-11-27-002".into(),
        correlation_id: "local-test-5".into(),
        timestamp: "2026-11-27T12:00:00Z".into(),
    };
    let mut req = request(Some(rc.clone()), system, &prompt);
    req.messages.push(Message::assistant(
        format!("<answer>\n{one}</answer>"),
        Vec::new(),
    ));
    req.messages.push(Message::user(&note));
    let registry = Registry::with_builtins(context(dir.path(), "seed = 1"));
    let (m, _) = registry.get(&format!("local/{}", model.display())).unwrap();
    let response = m.complete(&req).await.unwrap();
    eprintln!("the answer to the ask:\n{}", response.content);
    assert!(!response.truncated, "{}", response.content);
    let runs = quoted_runs(&response.content, decision);
    assert!(runs.len() >= 3, "{runs:?}\n{}", response.content);
    assert!(
        runs.iter().all(Option::is_some),
        "{runs:?}\n{}",
        response.content
    );
    let mut opened: Vec<usize> = runs.iter().flatten().copied().collect();
    opened.dedup();
    assert_eq!(opened.len(), runs.len(), "{runs:?}\n{}", response.content);
    // The contract judges the answer as for any provider: whatever line numbers it wrote, each
    // item quotes the file, so the checker's fix places them and all of them verify.
    let files = FileCache::default();
    let ctx = CheckContext::new(&project, &files)
        .with_correlation_id(&rc.correlation_id)
        .with_message_id(&rc.message_id);
    let report = check(&response.content, &rc.contract, &ctx);
    let fixed = switchboard::contract::fix::apply(&response.content, &report.violations, &project)
        .unwrap_or_else(|| response.content.clone());
    assert!(
        switchboard::runtime::evidence_goal::verified(&fixed, &project) >= 3,
        "{:#?}\n{fixed}",
        report.violations
    );
}

#[tokio::test]
async fn without_grammar_the_same_request_is_decoded_freely() {
    // The comparison the grammar is for: the same request, decoded without it, is not held to
    // the envelope (SmolLM2 does not write one from the prompt alone).
    let model = model_path();
    let (dir, project) = scripted::project();
    let registry = Registry::with_builtins(context(dir.path(), "grammar = false\nseed = 1"));
    let (m, _) = registry.get(&format!("local/{}", model.display())).unwrap();
    let contract = ResponseContract {
        contract: Contract::envelope(),
        message_id: "reader-2026-11-23-001".into(),
        correlation_id: "local-test-1".into(),
        timestamp: "2026-11-23T12:00:00Z".into(),
    };
    let started = std::time::Instant::now();
    let response = m
        .complete(&request(
            Some(contract.clone()),
            ENVELOPE_SYSTEM,
            "What is a README file for? Answer in one sentence.",
        ))
        .await
        .unwrap();
    eprintln!(
        "without grammar: {:?}, {:?} tokens\n{}",
        started.elapsed(),
        response.usage,
        response.content
    );
    let files = FileCache::default();
    let ctx = CheckContext::new(&project, &files);
    let report = check(&response.content, &contract.contract, &ctx);
    assert!(!report.violations.is_empty(), "{}", response.content);
}

#[tokio::test]
async fn missing_and_corrupt_model_files_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let registry = Registry::with_builtins(context(dir.path(), ""));
    let e = registry
        .get("local/models/nope.gguf")
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("models/nope.gguf") && e.contains("does not exist"),
        "{e}"
    );
    // GGUF magic, then garbage: llama.cpp refuses it and we say so, naming the file.
    let bad = dir.path().join("bad.gguf");
    let mut bytes = b"GGUF".to_vec();
    bytes.extend(std::iter::repeat_n(0xAB_u8, 4096));
    std::fs::write(&bad, bytes).unwrap();
    let (m, _) = registry.get("local/bad.gguf").unwrap();
    let e = m
        .complete(&request(None, "", "hi"))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("bad.gguf") && e.contains("could not load"),
        "{e}"
    );
}

#[tokio::test]
async fn a_prompt_larger_than_the_context_is_an_overflow_naming_the_file() {
    let model = model_path();
    let dir = tempfile::tempdir().unwrap();
    let registry = Registry::with_builtins(context(dir.path(), "context = 64"));
    let (m, _) = registry.get(&format!("local/{}", model.display())).unwrap();
    let long = "Tell me about the weather. ".repeat(40);
    let e = m.complete(&request(None, "", &long)).await.unwrap_err();
    assert!(matches!(e, ModelError::ContextOverflow { .. }), "{e:?}");
    let text = e.to_string();
    assert!(
        text.contains("smollm2-135m-instruct.gguf") && text.contains("[providers.local] context"),
        "{text}"
    );
}

#[test]
fn the_model_is_configured_by_name() {
    let model = model_path();
    let dir = tempfile::tempdir().unwrap();
    let registry = Registry::with_builtins(context(
        dir.path(),
        &format!("[models]\nsmol = {:?}\n", model.display().to_string()),
    ));
    let (m, name) = registry.get("local/smol").unwrap();
    assert_eq!((m.provider(), name.as_str()), ("local", "smol"));
}

#[tokio::test]
async fn the_answer_is_streamed_piece_by_piece_to_the_observer() {
    let model = model_path();
    let dir = tempfile::tempdir().unwrap();
    let registry = Registry::with_builtins(context(dir.path(), "seed = 1"));
    let (m, _) = registry.get(&format!("local/{}", model.display())).unwrap();
    let pieces = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let sink = pieces.clone();
    let observer: switchboard::model::local::stream::PieceObserver =
        Arc::new(move |p: &str| sink.lock().unwrap().push(p.to_string()));
    let mut req = request(None, "", "Name three colours.");
    req.max_tokens = Some(24);
    let response = switchboard::model::local::stream::observe(observer, m.complete(&req))
        .await
        .unwrap();
    let pieces = pieces.lock().unwrap();
    assert!(pieces.len() > 1, "one piece per token or so: {pieces:?}");
    assert_eq!(pieces.concat(), response.content);
    // max_tokens is honoured: the answer stops there, reported as cut off.
    assert!(response.usage.output_tokens <= 24);
    if response.usage.output_tokens == 24 {
        assert!(response.truncated);
    }
}

#[tokio::test]
async fn a_stop_text_ends_the_answer_before_it_and_is_never_streamed() {
    let model = model_path();
    let dir = tempfile::tempdir().unwrap();
    // Greedy: the free answer first, then the same answer cut at its first "e".
    let registry = Registry::with_builtins(context(dir.path(), "seed = 1"));
    let (m, _) = registry.get(&format!("local/{}", model.display())).unwrap();
    let mut req = request(None, "", "Name three colours.");
    req.max_tokens = Some(24);
    let free = m.complete(&req).await.unwrap().content;
    let cut = free.find('e').expect("an `e` in the answer");
    let registry = Registry::with_builtins(context(dir.path(), "seed = 1\nstop = [\"e\"]"));
    let (m, _) = registry.get(&format!("local/{}", model.display())).unwrap();
    let pieces = Arc::new(std::sync::Mutex::new(String::new()));
    let sink = pieces.clone();
    let observer: switchboard::model::local::stream::PieceObserver =
        Arc::new(move |p: &str| sink.lock().unwrap().push_str(p));
    let stopped = switchboard::model::local::stream::observe(observer, m.complete(&req))
        .await
        .unwrap();
    assert_eq!(stopped.content, free[..cut]);
    assert!(!stopped.truncated);
    assert_eq!(*pieces.lock().unwrap(), stopped.content);
}

#[tokio::test]
async fn a_schema_no_grammar_can_match_is_an_error_naming_its_place() {
    use switchboard::contract::{ContractFormat, JsonContract, SchemaSource};
    let model = model_path();
    let dir = tempfile::tempdir().unwrap();
    let registry = Registry::with_builtins(context(dir.path(), ""));
    let (m, _) = registry.get(&format!("local/{}", model.display())).unwrap();
    let mut contract = Contract::envelope();
    contract.format = ContractFormat::Json;
    contract.json = Some(JsonContract::new(
        SchemaSource::Inline(serde_json::json!({
            "type": "object", "required": ["kind"], "properties": {"kind": {"enum": []}}
        })),
        Vec::new(),
        None,
        None,
    ));
    let rc = ResponseContract {
        contract,
        message_id: String::new(),
        correlation_id: String::new(),
        timestamp: String::new(),
    };
    let e = m
        .complete(&request(Some(rc), "", "hi"))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("agent `tester`")
            && e.contains("/properties/kind")
            && e.contains("empty `enum`"),
        "{e}"
    );
    assert!(e.contains("fix the schema"), "{e}");
}

/// A GGUF file whose header is well formed but names an architecture no llama.cpp knows.
fn gguf_with_architecture(arch: &str) -> Vec<u8> {
    let mut b = b"GGUF".to_vec();
    b.extend(3u32.to_le_bytes()); // version
    b.extend(0u64.to_le_bytes()); // tensors
    b.extend(1u64.to_le_bytes()); // metadata entries
    let key = "general.architecture";
    b.extend((key.len() as u64).to_le_bytes());
    b.extend(key.as_bytes());
    b.extend(8u32.to_le_bytes()); // string
    b.extend((arch.len() as u64).to_le_bytes());
    b.extend(arch.as_bytes());
    b
}

#[tokio::test]
async fn an_unsupported_architecture_is_a_clear_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("odd.gguf"),
        gguf_with_architecture("nosucharch"),
    )
    .unwrap();
    let registry = Registry::with_builtins(context(dir.path(), ""));
    let (m, _) = registry.get("local/odd.gguf").unwrap();
    let e = m
        .complete(&request(None, "", "hi"))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("odd.gguf") && e.contains("could not load"),
        "{e}"
    );
    assert!(e.contains("nosucharch"), "{e}");
}

fn generate(prompt: &str, reuse_prefix: bool) -> switchboard::model::local::engine::Generate {
    switchboard::model::local::engine::Generate {
        prompt: prompt.to_string(),
        grammar: None,
        grammar_mode: switchboard::model::local::sample::GrammarMode::Shortlist,
        max_tokens: 12,
        temperature: 0.0,
        top_p: 1.0,
        seed: 0,
        stop: Vec::new(),
        context: 2048,
        min_context: 1024,
        threads: 2,
        reuse_prefix,
        slots: 1,
        quoted: Default::default(),
    }
}

/// The model loaded from a file of its own, so the model (and its decoding thread) is not
/// shared with the tests running beside this one, whose prompts would take the cache over.
fn own_model() -> (
    tempfile::TempDir,
    std::sync::Arc<switchboard::model::local::engine::Loaded>,
) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let own = dir.path().join("smollm2.gguf");
    if std::fs::hard_link(model_path(), &own).is_err() {
        std::fs::copy(model_path(), &own).unwrap();
    }
    let loaded = switchboard::model::local::engine::load(&own).unwrap();
    (dir, loaded)
}

#[test]
fn a_prompt_that_repeats_the_cached_prefix_decodes_only_what_is_new() {
    let (_dir, loaded) = own_model();
    let system = "You answer in one short sentence. ".repeat(20);
    let first = loaded
        .prompt(&system, &[Message::user("Name a colour.")])
        .unwrap();
    let fresh = loaded.generate(&generate(&first, false), None).unwrap();
    assert_eq!(fresh.cached_tokens, 0);
    // The same prompt again: everything but its last token is in the cache.
    let again = loaded.generate(&generate(&first, true), None).unwrap();
    assert_eq!(again.cached_tokens, again.prompt_tokens - 1);
    let third = loaded.generate(&generate(&first, true), None).unwrap();
    assert_eq!(third.cached_tokens, third.prompt_tokens - 1);
    assert_eq!(
        again.text, third.text,
        "the same cache state, the same greedy answer"
    );
    // The next turn of the conversation extends the prompt: the shared turns are not read
    // again, only what follows them.
    let next = loaded
        .prompt(
            &system,
            &[
                Message::user("Name a colour."),
                Message::assistant(again.text.clone(), Vec::new()),
                Message::user("And another one."),
            ],
        )
        .unwrap();
    let turn = loaded.generate(&generate(&next, true), None).unwrap();
    assert!(
        turn.cached_tokens > fresh.prompt_tokens / 2 && turn.cached_tokens < turn.prompt_tokens,
        "cached {} of {} (the first prompt had {})",
        turn.cached_tokens,
        turn.prompt_tokens,
        fresh.prompt_tokens
    );
    // A prompt that shares nothing past the template's opening reads (nearly) all of itself.
    let other = loaded
        .prompt("Reply in French.", &[Message::user("Bonjour.")])
        .unwrap();
    let other = loaded.generate(&generate(&other, true), None).unwrap();
    assert!(other.cached_tokens < 8, "{}", other.cached_tokens);
}

#[test]
fn a_prompt_that_outgrows_its_window_keeps_its_cached_prefix() {
    let (_dir, loaded) = own_model();
    let system = "You answer in one short sentence. ".repeat(60);
    let first = loaded
        .prompt(&system, &[Message::user("Name a colour.")])
        .unwrap();
    let small = loaded.generate(&generate(&first, true), None).unwrap();
    assert!(
        small.prompt_tokens > 256 && small.prompt_tokens + 12 <= 1024,
        "the first prompt fits the smallest window: {}",
        small.prompt_tokens
    );
    // The next turn adds a tool's output that takes the prompt past that window.
    let next = loaded
        .prompt(
            &system,
            &[
                Message::user("Name a colour."),
                Message::assistant(small.text.clone(), Vec::new()),
                Message::user(format!(
                    "Here is a list:\n{}\nName one more colour.",
                    "red, green, blue, yellow, orange, purple\n".repeat(60)
                )),
            ],
        )
        .unwrap();
    let grown = loaded.generate(&generate(&next, true), None).unwrap();
    assert!(grown.prompt_tokens > 1024, "{}", grown.prompt_tokens);
    assert!(
        grown.cached_tokens + 1 >= small.prompt_tokens,
        "the larger context took over the cached prefix: {} of {} cached (the first prompt had \
         {})",
        grown.cached_tokens,
        grown.prompt_tokens,
        small.prompt_tokens
    );
    // The moved cache answers as the prompt read in full does.
    let read_again = loaded.generate(&generate(&next, false), None).unwrap();
    assert_eq!(read_again.cached_tokens, 0);
    assert_eq!(grown.text, read_again.text);
}

/// Two agents taking turns on one model, as parallel hops do: each turn finds its own agent's
/// cache, although every prompt opens with the same template tokens.
#[test]
fn hops_taking_turns_each_keep_their_own_cache() {
    let (_dir, loaded) = own_model();
    let agents = [
        "You list files that match a topic, one path per line. ".repeat(12),
        "You read one document and report what it decided, with quotes. ".repeat(12),
    ];
    let with_slots = |prompt: &str| {
        let mut g = generate(prompt, true);
        g.slots = 2;
        g
    };
    let turn = |system: &str, asks: &[&str]| {
        let messages: Vec<Message> = asks.iter().map(|a| Message::user(*a)).collect();
        let prompt = loaded.prompt(system, &messages).unwrap();
        loaded.generate(&with_slots(&prompt), None).unwrap()
    };
    let first: Vec<_> = agents
        .iter()
        .map(|system| turn(system, &["Find the notes about parsing."]))
        .collect();
    for (system, before) in agents.iter().zip(&first) {
        let next = turn(
            system,
            &[
                "Find the notes about parsing.",
                "And the ones about retries.",
            ],
        );
        assert!(
            next.cached_tokens as f64 >= 0.8 * before.prompt_tokens as f64,
            "the second turn found {} of its {} tokens cached (its first had {})",
            next.cached_tokens,
            next.prompt_tokens,
            before.prompt_tokens
        );
    }
}

#[test]
fn a_cancelled_completion_stops_between_tokens_and_keeps_the_cache() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let (_dir, loaded) = own_model();
    let prompt = loaded
        .prompt(
            "You follow instructions exactly.",
            &[Message::user(
                "Count from 1 to 300, one number per line, and nothing else.",
            )],
        )
        .unwrap();
    let mut long = generate(&prompt, true);
    long.max_tokens = 600;
    let cancel = std::sync::Arc::new(AtomicBool::new(false));
    let mut pieces = 0;
    let mut sink = |_: &str| {
        pieces += 1;
        cancel.store(true, Ordering::Relaxed);
    };
    let e = loaded
        .generate_until(&long, Some(&mut sink), cancel.clone())
        .unwrap_err();
    assert_eq!(e, switchboard::model::local::engine::EngineError::Cancelled);
    assert!(
        (1..20).contains(&pieces),
        "it stopped soon after the flag: {pieces} pieces"
    );
    // What was decoded stays in the cache for the next completion.
    let again = loaded.generate(&generate(&prompt, true), None).unwrap();
    assert_eq!(again.cached_tokens, again.prompt_tokens - 1);
}

#[tokio::test]
async fn without_a_set_window_the_context_grows_to_the_prompt() {
    let model = model_path();
    let dir = tempfile::tempdir().unwrap();
    let registry = Registry::with_builtins(context(dir.path(), ""));
    let (m, _) = registry.get(&format!("local/{}", model.display())).unwrap();
    // Over 4,096 tokens (the smallest window), under the model's 8,192 training tokens.
    let long = "Tell me about the weather in the hills. ".repeat(520);
    let mut req = request(None, "", &long);
    req.max_tokens = Some(8);
    let response = m.complete(&req).await.unwrap();
    assert!(
        response.usage.input_tokens > 4096,
        "{}",
        response.usage.input_tokens
    );
    // Past the training context it is an overflow that says so.
    let longer = long.repeat(2);
    let e = m.complete(&request(None, "", &longer)).await.unwrap_err();
    assert!(matches!(e, ModelError::ContextOverflow { .. }), "{e:?}");
    assert!(e.to_string().contains("training context"), "{e}");
}
