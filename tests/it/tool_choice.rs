//! `tool_choice: required`: an agent whose answer must come from its tools is asked for a call
//! on the wire until it has made one, and held to it by the runtime when the server lets an
//! answer through anyway (llama.cpp's server accepts the field on templates where it does not
//! enforce it). A 1.5B locator answered "nothing found" without a single search.

use crate::support;

use serde_json::json;

use support::mock::{answer, call, truncated, Mock};
use switchboard::project::Project;
use switchboard::runtime::EventKind;

const FINDER: &str = "---\nname: finder\ndescription: \"Finds files.\"\nmode: subagent\ntools: {grep: true, glob: true, read: false, write: false}\ntool_choice: required\n---\nYou are {{ agent }}.\n";

fn project() -> (tempfile::TempDir, Project) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("agent")).expect("mkdir");
    std::fs::create_dir_all(dir.path().join("thoughts")).expect("mkdir");
    std::fs::write(dir.path().join("agent/finder.md"), FINDER).expect("write");
    std::fs::write(
        dir.path().join("thoughts/yaml.md"),
        "We chose serde-saphyr.\n",
    )
    .expect("write");
    let project = Project::open(dir.path()).expect("project");
    (dir, project)
}

/// The `action` of each `model.truncated` event, in order.
fn truncated_actions(events: &[switchboard::runtime::Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ModelTruncated { action, .. } => Some(action.clone()),
            _ => None,
        })
        .collect()
}

fn steered(events: &[switchboard::runtime::Event]) -> Vec<(String, u32)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::HopSteered { why, count } => Some((why.clone(), *count)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_required_call_is_asked_for_until_the_first_call_then_the_choice_is_the_models() {
    let (_dir, project) = project();
    let mock = Mock::start().await;
    mock.push(answer("Nothing about YAML here.", vec![]))
        .push(answer(
            "",
            vec![call("g1", "grep", json!({"pattern": "saphyr"}))],
        ))
        .push(answer("`thoughts/yaml.md` decides it.", vec![]));
    let (outcome, events) =
        support::wire::session(&project, &mock, "finder", "find the YAML decision").await;
    assert_eq!(outcome.status, "completed", "{outcome:?}");
    assert!(outcome.answer.contains("thoughts/yaml.md"), "{outcome:?}");
    let bodies: Vec<serde_json::Value> = mock.requests().into_iter().map(|r| r.body).collect();
    assert_eq!(bodies.len(), 3, "{bodies:?}");
    // The task says it too: a server may not enforce the field.
    let task = bodies[0]["messages"][1]["content"]
        .as_str()
        .unwrap_or_default();
    assert!(
        task.starts_with("find the YAML decision\n\n[runtime] Start with a tool call (")
            && task.contains("`grep`"),
        "{task}"
    );
    // Required until the agent called a tool; then the model's choice again.
    assert_eq!(bodies[0]["tool_choice"], "required");
    assert_eq!(bodies[1]["tool_choice"], "required");
    assert!(bodies[2].get("tool_choice").is_none(), "{}", bodies[2]);
    assert!(bodies[2]["tools"].is_array());
    // The answer without a call was not taken: the agent was told what to call.
    let reminder = bodies[1]["messages"]
        .as_array()
        .and_then(|m| m.last())
        .map(|m| m["content"].to_string())
        .unwrap_or_default();
    assert!(
        reminder.contains("You answered without calling a tool")
            && reminder.contains("`grep`")
            && reminder.contains("`glob`"),
        "{reminder}"
    );
    assert_eq!(steered(&events), vec![("tool_required".to_string(), 1)]);
    // The model.request events say which turns had to be calls.
    let choices: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ModelRequest { tool_choice, .. } => Some(format!("{tool_choice:?}")),
            _ => None,
        })
        .collect();
    assert_eq!(choices, vec!["Required", "Required", "Auto"]);
}

#[tokio::test]
async fn an_agent_that_never_calls_ends_blocked_after_its_reminders() {
    let (_dir, project) = project();
    let mock = Mock::start().await;
    for _ in 0..3 {
        mock.push(answer("No documents found.", vec![]));
    }
    let (outcome, events) =
        support::wire::session(&project, &mock, "finder", "find the YAML decision").await;
    assert_eq!(outcome.status, "blocked", "{outcome:?}");
    let error = outcome.error.clone().unwrap_or_default();
    assert!(error.contains("without calling a tool 3 times"), "{error}");
    assert_eq!(mock.requests().len(), 3);
    assert_eq!(
        steered(&events),
        vec![
            ("tool_required".to_string(), 1),
            ("tool_required".to_string(), 2)
        ]
    );
}

#[test]
fn tool_choice_required_without_tools_is_a_warning_with_its_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("agent")).expect("mkdir");
    std::fs::write(
        dir.path().join("agent/talker.md"),
        "---\nname: talker\ndescription: \"Talks.\"\nmode: subagent\ntools: {read: false, write: false, grep: false, glob: false, list: false, task: false, webfetch: false, websearch: false, analyze_file: false}\ntool_choice: required\n---\nHi.\n",
    )
    .expect("write");
    let project = Project::open(dir.path()).expect("project");
    let agents = switchboard::agent::load(&project, &Default::default());
    let warning = agents
        .diagnostics
        .iter()
        .find(|d| d.code == "agent/tool-choice")
        .unwrap_or_else(|| panic!("{:?}", agents.diagnostics));
    assert_eq!((warning.line, warning.column), (6, 14), "{warning:?}");
}

/// Asked for a call through llama.cpp's server, Qwen2.5-Coder-1.5B wrote one fenced call over
/// and over until `max_tokens`: that cut answer is the call, and it runs.
#[tokio::test]
async fn a_cut_answer_looping_on_one_written_call_is_that_call() {
    let (_dir, project) = project();
    let mock = Mock::start().await;
    let written = "```json\n{\"name\": \"grep\", \"arguments\": {\"pattern\": \"saphyr\"}}\n```\n";
    let looping = format!(
        "Searching.\n{}```json\n{{\"name\": \"gr",
        written.repeat(10)
    );
    mock.push(truncated(answer(&looping, vec![])))
        .push(answer("`thoughts/yaml.md` decides it.", vec![]));
    let (outcome, events) =
        support::wire::session(&project, &mock, "finder", "find the YAML decision").await;
    assert_eq!(outcome.status, "completed", "{outcome:?}");
    assert_eq!(truncated_actions(&events), vec!["call_kept"]);
    let ran: Vec<(String, String)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolResult { tool, output, .. } => Some((tool.clone(), output.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(ran.len(), 1, "{ran:?}");
    assert_eq!(ran[0].0, "grep");
    assert!(ran[0].1.contains("thoughts/yaml.md"), "{ran:?}");
    // The model sees its call once, not the loop: in its text, as the call, in the result.
    let second = mock.requests()[1].body["messages"].to_string();
    assert_eq!(second.matches("saphyr").count(), 3, "{second}");
}

/// On a turn that had to be a call, the call an answer opens with is taken and what the model
/// made up after it (the result it did not have yet) is dropped.
#[tokio::test]
async fn a_required_turn_takes_the_leading_call_and_drops_the_made_up_rest() {
    let (_dir, project) = project();
    let mock = Mock::start().await;
    let written =
        "<tools>\n{\"name\": \"grep\", \"arguments\": {\"pattern\": \"saphyr\"}}\n</tools>";
    mock.push(answer(
        &format!("{written}\n\n<answer>\n- `thoughts/invented.md`\n</answer>\n"),
        vec![],
    ))
    .push(answer("`thoughts/yaml.md` decides it.", vec![]));
    let (outcome, events) =
        support::wire::session(&project, &mock, "finder", "find the YAML decision").await;
    assert_eq!(outcome.status, "completed", "{outcome:?}");
    assert!(steered(&events).is_empty(), "no reminder was needed");
    let second = mock.requests()[1].body["messages"].clone();
    let assistant = second[2]["content"].as_str().unwrap_or_default();
    assert_eq!(assistant, written);
    assert!(second[3]["content"]
        .as_str()
        .is_some_and(|r| r.contains("thoughts/yaml.md")));
}

/// The loop Qwen2.5-Coder-1.5B wrote after two searches found nothing: two calls alternating,
/// then one of them over and over, cut inside a block. The calls before the loop run once each.
#[tokio::test]
async fn a_loop_that_starts_inside_a_block_keeps_the_whole_calls_before_it() {
    let (_dir, project) = project();
    let mock = Mock::start().await;
    let block = |p: &str| {
        format!(
            "```json\n{{\n  \"name\": \"grep\",\n  \"arguments\": {{\n    \"path\": \"thoughts\",\n    \"pattern\": \"(# |date:){p} parser\"\n  }}\n}}\n```\n"
        )
    };
    let looping = format!(
        "{}{}{}{}{}```json\n{{\n  \"name\": \"gr",
        block("yaml"),
        block("YAML"),
        block("yaml"),
        block("YAML"),
        block("YAML").repeat(8)
    );
    mock.push(answer(
        "",
        vec![call("g1", "glob", json!({"pattern": "thoughts/*.md"}))],
    ))
    .push(truncated(answer(&looping, vec![])))
    .push(answer("`thoughts/yaml.md` decides it.", vec![]));
    let (outcome, events) =
        support::wire::session(&project, &mock, "finder", "find the YAML decision").await;
    assert_eq!(outcome.status, "completed", "{outcome:?}");
    assert_eq!(truncated_actions(&events), vec!["call_kept"]);
    let greps: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolCall {
                tool, arguments, ..
            } if tool == "grep" => Some(
                arguments["pattern"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            ),
            _ => None,
        })
        .collect();
    assert_eq!(
        greps,
        vec!["(# |date:)yaml parser", "(# |date:)YAML parser"]
    );
}

/// The shipped thoughts-locator (`search_first: thoughts`): the runtime greps the task's words
/// before the first turn, as logged tool calls, and the matches go with the task; a search
/// that found something is a look at the tools' results, so no call is required any more.
#[tokio::test]
async fn the_shipped_locator_starts_from_the_runtimes_search_of_its_task_words() {
    let doc = "thoughts/shared/decisions/2026-11-02-yaml-parser.md";
    let (_dir, project) = support::fs::shipped_agents_with(
        doc,
        "# YAML parser\n\nWe parse YAML with serde-saphyr.\n",
    );
    let mock = Mock::start().await;
    mock.push(answer("No documents.", vec![]))
        .push(answer("No documents.", vec![]))
        .push(answer("No documents.", vec![]));
    let (_outcome, events) = support::wire::session(
        &project,
        &mock,
        "thoughts-locator",
        "What did we decide about the YAML parser?",
    )
    .await;
    let searched: Vec<(String, String)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolCall {
                call_id, arguments, ..
            } => Some((call_id.clone(), arguments["pattern"].to_string())),
            _ => None,
        })
        .collect();
    assert_eq!(
        searched,
        vec![
            ("search_first_1".to_string(), "\"(?i)yaml\"".to_string()),
            ("search_first_2".to_string(), "\"(?i)parser\"".to_string())
        ]
    );
    let first = mock.requests()[0].body.clone();
    let task = first["messages"][1]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        task.contains("The runtime searched for `yaml`, `parser` for you")
            && task.contains(&format!("- `{doc}` (yaml ×2, parser ×1)")),
        "{task}"
    );
    assert!(first.get("tool_choice").is_none(), "{first}");
    assert!(!task.contains("Start with a tool call"), "{task}");
    // Its tools are offered with the files: the offline locator ranks what it greps itself.
    assert!(
        first["tools"].as_array().is_some_and(|t| !t.is_empty()),
        "{first}"
    );
}

/// A runtime search that found nothing is no look at any result: the locator still has to call.
#[tokio::test]
async fn a_runtime_search_that_found_nothing_leaves_the_call_required() {
    let doc = "thoughts/shared/decisions/2026-11-02-yaml-parser.md";
    let (_dir, project) = support::fs::shipped_agents_with(doc, "# YAML parser\n");
    let mock = Mock::start().await;
    for _ in 0..3 {
        mock.push(answer("No documents.", vec![]));
    }
    let (outcome, _events) = support::wire::session(
        &project,
        &mock,
        "thoughts-locator",
        "Which Kubernetes cluster runs production?",
    )
    .await;
    assert_eq!(outcome.status, "blocked", "{outcome:?}");
    let first = mock.requests()[0].body.clone();
    assert_eq!(first["tool_choice"], "required", "{first}");
    let task = first["messages"][1]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        task.contains("The runtime searched for `kubernet`, `cluster`, `run`, `product` for you (`grep`, any case): no file matches any of them."),
        "{task}"
    );
    assert!(task.contains("[runtime] Start with a tool call"), "{task}");
}

/// The shipped thoughts-locator, its search finding the decision `doc` first and a research note
/// second; its model answers `replies` in turn. Returns the asks the runtime made (hop.steered)
/// and what the hop answered.
async fn locator_left_out(doc: &str, replies: &[String]) -> (Vec<String>, String, Mock) {
    let (dir, project) = support::fs::shipped_agents_with(
        doc,
        "# YAML parser\n\nWe parse YAML with serde-saphyr; the parser never panics.\n",
    );
    let research = dir.path().join("thoughts/shared/research");
    std::fs::create_dir_all(&research).expect("research folder");
    std::fs::write(
        research.join("2026-11-10-parser-notes.md"),
        "# Notes\n\nA markdown parser.\n",
    )
    .expect("second document");
    let (mock, outcome, events) = crate::fixed_copy::run_locator(&project, replies).await;
    assert_eq!(outcome.status, "completed", "{outcome:?}");
    let asks = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::HopSteered { why, .. } if why.starts_with("search_first") => {
                Some(why.clone())
            }
            _ => None,
        })
        .collect();
    let answered = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::HopCompleted { answer, .. } => Some(answer.clone()),
            _ => None,
        })
        .unwrap_or_default();
    (asks, answered, mock)
}

/// The 1.5B locator under a grammar answered from lower in the runtime's list and left out
/// the file it ranked first: it is asked once, and the answer that names the file goes up.
#[tokio::test]
async fn an_answer_that_leaves_out_the_searchs_first_file_is_asked_once() {
    // Named for `yaml` only, not `parser`: asked, not added.
    let doc = "thoughts/shared/decisions/2026-11-02-yaml-choice.md";
    let notes = "thoughts/shared/research/2026-11-10-parser-notes.md";
    // The ask offers the answer with the file added; a model that sends it back is taken.
    let first = crate::fixed_copy::locator_answer(notes);
    let copy = switchboard::runtime::search_first::with_file(&first, doc, Some("YAML parser"))
        .expect("the answer has an <answer> block");
    let (asks, answered, mock) = locator_left_out(doc, &[first.clone(), copy.clone()]).await;
    assert_eq!(asks, ["search_first_left_out", "search_first_named"]);
    assert_eq!(answered.trim_end(), copy.trim_end());
    let ask = mock.requests()[1].last_content();
    assert!(
        ask.contains(&format!(
            "Your answer leaves out `{doc}` (its title: \"YAML parser\")"
        )),
        "{ask}"
    );
    assert!(ask.ends_with(&format!("{copy}\n```")), "{ask}");
    // A second answer that still leaves it out: the first one stands, with the file added by
    // the runtime (it holds `yaml`, which sets files apart), and no second ask.
    let (asks, answered, mock) = locator_left_out(
        doc,
        &[
            crate::fixed_copy::locator_answer(notes),
            crate::fixed_copy::locator_answer(notes),
        ],
    )
    .await;
    assert_eq!(
        asks,
        [
            "search_first_left_out",
            "search_first_kept",
            "search_first_added"
        ]
    );
    assert!(answered.contains(notes), "{answered}");
    assert!(
        answered.contains(&format!(
            "- `{doc}` — YAML parser {}",
            switchboard::runtime::search_first::ADDED_AFTER_ASK
        )),
        "{answered}"
    );
    assert_eq!(mock.requests().len(), 2);
    // An answer that names it is not asked.
    let (asks, _, mock) = locator_left_out(doc, &[crate::fixed_copy::locator_answer(doc)]).await;
    assert!(asks.is_empty(), "{asks:?}");
    assert_eq!(mock.requests().len(), 1);
}

/// A file whose name holds every word searched (`yaml`, `parser`) is added by the runtime, marked
/// as such, when the answer leaves it out: no ask (the 1.5B locator sent its first answer back
/// to every ask).
#[tokio::test]
async fn a_left_out_file_named_for_every_word_searched_is_added_by_the_runtime() {
    let doc = "thoughts/shared/decisions/2026-11-02-yaml-parser.md";
    let notes = "thoughts/shared/research/2026-11-10-parser-notes.md";
    let (asks, answered, mock) =
        locator_left_out(doc, &[crate::fixed_copy::locator_answer(notes)]).await;
    assert_eq!(asks, ["search_first_added"]);
    assert_eq!(mock.requests().len(), 1);
    assert!(
        answered.contains(&format!(
            "- `{doc}` — YAML parser {}",
            switchboard::runtime::search_first::ADDED
        )) && answered.contains(notes),
        "{answered}"
    );
}
