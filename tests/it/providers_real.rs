//! What broke when switchboard met a real local model (issue 17, items 1–7), reproduced byte
//! for byte by the in-process mock on 127.0.0.1: truncated answers, the default `max_tokens`,
//! context overflow, chat templates without tool support, errors classified by body, `trace`
//! showing whole errors, and a client that loads no TLS roots for a plain-http server.

use crate::support;

use serde_json::json;
use std::sync::Arc;

use support::mock::{answer, call, raw_sse, status, truncated, Mock, Proto, Reply};
use switchboard::agent::{load, LoadOptions};
use switchboard::config::Config;
use switchboard::model::registry;
use switchboard::model::settings::{BuildOptions, ProviderSettings};
use switchboard::model::{Message, Model, ModelError, ModelRequest, ToolSpec};
use switchboard::model::{ProviderContext, Registry};
use switchboard::project::Project;
use switchboard::runtime::events::read_log;
use switchboard::runtime::{Event, EventKind, RunOptions, Session, SessionOutcome};

const PROTOS: [Proto; 2] = [Proto::OpenAi, Proto::Anthropic];

const BOSS: &str = "---\nname: boss\ndescription: \"Delegates to helper.\"\nmode: primary\ntools: {task: true}\n---\nYou are {{ agent }}. Delegate to `helper`.\n";
const HELPER: &str = "---\nname: helper\ndescription: \"Answers one question.\"\nmode: subagent\ntools: {read: true}\n---\nYou are {{ agent }}.\n";

fn project_with(agents: &[(&str, &str)]) -> (tempfile::TempDir, Project) {
    let dir = tempfile::tempdir().expect("tempdir");
    let folder = dir.path().join("agent");
    std::fs::create_dir_all(&folder).expect("mkdir");
    for (name, text) in agents {
        std::fs::write(folder.join(format!("{name}.md")), text).expect("write");
    }
    let p = Project::open(dir.path()).expect("project");
    (dir, p)
}

fn project() -> (tempfile::TempDir, Project) {
    project_with(&[("boss", BOSS), ("helper", HELPER)])
}

fn protocol(proto: Proto) -> &'static str {
    match proto {
        Proto::OpenAi => "openai",
        Proto::Anthropic => "anthropic",
    }
}

/// `[providers.mock]` for the mock, fast retries, plus `extra` lines.
fn config(mock: &Mock, proto: Proto, extra: &str) -> String {
    format!(
        "[providers.mock]\nprotocol = \"{}\"\nbase_url = \"{}\"\nretry_base_ms = 5\nretry_jitter = 0.0\nrequest_timeout_secs = 5\nstream_idle_timeout_secs = 5\n{extra}",
        protocol(proto),
        mock.base_url(proto)
    )
}

async fn session(
    project: &Project,
    config_toml: &str,
    model: &str,
    prompt: &str,
) -> (SessionOutcome, Vec<Event>) {
    let config = Config::parse(config_toml, "switchboard.toml").expect("config");
    let agents = Arc::new(load(project, &LoadOptions::default()));
    assert!(!agents.has_errors(), "{:?}", agents.diagnostics);
    let registry = Registry::with_builtins(ProviderContext {
        project_root: project.root().to_path_buf(),
        providers: config.providers.clone(),
        stream: None,
    });
    let options = RunOptions {
        model: Some(model.into()),
        ..RunOptions::default()
    };
    let session = Session::new(
        project.clone(),
        agents,
        config,
        Arc::new(registry),
        options,
        "boss",
        prompt,
    )
    .expect("session");
    let outcome = session.run().await;
    let events = read_log(&outcome.events).expect("log");
    (outcome, events)
}

fn named<'a>(events: &'a [Event], name: &str) -> Vec<&'a Event> {
    events.iter().filter(|e| e.kind.name() == name).collect()
}

/// A provider built straight from settings (no runtime), no key.
fn provider(mock: &Mock, proto: Proto, stream: bool) -> Arc<dyn Model> {
    let settings = ProviderSettings {
        base_url: Some(mock.base_url(proto)),
        retry_base_ms: Some(5),
        retry_jitter: Some(0.0),
        request_timeout_secs: Some(3.0),
        stream_idle_timeout_secs: Some(3.0),
        ..ProviderSettings::default()
    };
    let options = BuildOptions {
        stream: Some(stream),
        observer: None,
    };
    registry::build(protocol(proto), "m", Some(&settings), &options, &|_| None)
        .expect("an HTTP provider")
        .expect("builds")
}

fn request(tools: &[&str]) -> ModelRequest {
    ModelRequest {
        model: "m".into(),
        agent: "a".into(),
        system: "You are a.".into(),
        messages: vec![Message::user("hello")],
        tools: tools
            .iter()
            .map(|t| ToolSpec {
                name: t.to_string(),
                description: format!("the {t} tool"),
                parameters: json!({"type": "object"}),
            })
            .collect(),
        tool_choice: Default::default(),
        temperature: None,
        top_p: None,
        max_tokens: None,
        response_contract: None,
    }
}

// ---- 1. truncation ------------------------------------------------------------------------

#[tokio::test]
async fn truncated_answer_is_an_event_and_is_continued() {
    for proto in PROTOS {
        let (_dir, project) = project();
        let mock = Mock::start().await;
        mock.push(truncated(answer("The event log is appended to ", vec![])))
            .push(answer("events.jsonl, one line per event.", vec![]));
        let (outcome, events) = session(
            &project,
            &config(&mock, proto, ""),
            "mock/m",
            "Explain the log",
        )
        .await;
        assert_eq!(outcome.status, "completed", "{proto:?} {outcome:?}");
        assert_eq!(
            outcome.answer, "The event log is appended to events.jsonl, one line per event.",
            "{proto:?}: the continuation is joined to the cut-off part"
        );
        assert_eq!(named(&events, "model.truncated").len(), 1, "{proto:?}");
        let seen = mock.requests();
        assert_eq!(seen.len(), 2, "{proto:?}: the rest was asked for");
        let second = seen[1].body.to_string();
        assert!(second.contains("The event log is appended to "), "{second}");
        assert!(second.contains("cut off"), "{second}");
    }
}

#[tokio::test]
async fn both_protocols_report_the_cut_streamed_or_not() {
    for proto in PROTOS {
        for stream in [true, false] {
            let mock = Mock::start().await;
            mock.push(truncated(answer("cut here", vec![])))
                .push(answer("whole", vec![]));
            let model = provider(&mock, proto, stream);
            let r = model.complete(&request(&[])).await.expect("answer");
            assert!(r.truncated, "{proto:?} stream={stream}");
            assert_eq!(r.content, "cut here");
            let r = model.complete(&request(&[])).await.expect("answer");
            assert!(!r.truncated, "{proto:?} stream={stream}");
        }
    }
}

#[tokio::test]
async fn truncated_unclosed_textual_task_call_is_continued_not_dropped() {
    let (_dir, project) = project();
    let mock = Mock::start().await;
    mock.push(truncated(answer(
        "I'll delegate.\n```\ntask({ subagent_type: \"helper\", description: \"read\", prompt: \"What is in",
        vec![],
    )))
    .push(answer(" a.md?\" })\n```\n", vec![]))
    .push(answer("a.md holds hello", vec![]))
    .push(answer("Final: hello.", vec![]));
    let extra = "[providers.mock.models.\"m\"]\ntools = false\n";
    let (outcome, events) = session(
        &project,
        &config(&mock, Proto::OpenAi, extra),
        "mock/m",
        "What is in a.md?",
    )
    .await;
    assert_eq!(outcome.status, "completed", "{outcome:?}");
    assert_eq!(outcome.answer, "Final: hello.");
    let prompts: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::HopStarted { prompt, depth, .. } if *depth == 1 => Some(prompt.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(prompts, ["What is in a.md?"], "the call made whole ran");
}

#[tokio::test]
async fn cut_on_the_last_step_is_continued_without_a_second_last_step_note() {
    let boss = BOSS.replace("mode: primary\n", "mode: primary\nsteps: 1\n");
    let (_dir, project) = project_with(&[("boss", &boss), ("helper", HELPER)]);
    let mock = Mock::start().await;
    mock.push(truncated(answer("part ", vec![])))
        .push(answer("rest", vec![]));
    let (outcome, _) = session(&project, &config(&mock, Proto::OpenAi, ""), "mock/m", "go").await;
    assert_eq!(outcome.status, "completed", "{outcome:?}");
    assert_eq!(outcome.answer, "part rest");
    let seen = mock.requests();
    let messages = seen[1].body["messages"]
        .as_array()
        .expect("messages")
        .clone();
    let last = messages.last().expect("a last message");
    assert!(
        last["content"].as_str().unwrap_or("").contains("cut off"),
        "{last}"
    );
    let notes = seen[1]
        .body
        .to_string()
        .matches("This is your last step")
        .count();
    assert_eq!(notes, 1);
}

#[tokio::test]
async fn answer_still_cut_off_after_the_continuations_ends_partial() {
    let (_dir, project) = project();
    let mock = Mock::start().await;
    mock.repeat(truncated(answer("and then ", vec![])));
    let (outcome, events) = session(
        &project,
        &config(&mock, Proto::OpenAi, ""),
        "mock/m",
        "Tell a long story",
    )
    .await;
    assert_eq!(outcome.status, "partial", "{outcome:?}");
    let error = outcome.error.unwrap_or_default();
    assert!(error.contains("max_tokens"), "{error}");
    assert!(named(&events, "model.truncated").len() >= 2);
}

// ---- 2. max_tokens --------------------------------------------------------------------------

#[tokio::test]
async fn every_request_carries_max_tokens_agent_over_model_over_default() {
    let cases: [(&str, &str, u64); 4] = [
        ("", "", 4096),
        ("context_tokens = 2048\n", "", 512),
        (
            "[providers.mock.models.\"m\"]\nmax_tokens = 1000\n",
            "",
            1000,
        ),
        (
            "[providers.mock.models.\"m\"]\nmax_tokens = 1000\n",
            "max_tokens: 300\n",
            300,
        ),
    ];
    for (extra, frontmatter, expected) in cases {
        let boss = BOSS.replace("mode: primary\n", &format!("mode: primary\n{frontmatter}"));
        let (_dir, project) = project_with(&[("boss", &boss), ("helper", HELPER)]);
        let mock = Mock::start().await;
        mock.push(answer("done", vec![]));
        let (outcome, _) = session(
            &project,
            &config(&mock, Proto::OpenAi, extra),
            "mock/m",
            "hi",
        )
        .await;
        assert_eq!(outcome.status, "completed", "{outcome:?}");
        let seen = mock.requests();
        assert_eq!(
            seen[0].body["max_tokens"],
            json!(expected),
            "config {extra:?}, frontmatter {frontmatter:?}"
        );
    }
}

// ---- 3. context overflow ------------------------------------------------------------------

#[tokio::test]
async fn context_overflow_is_its_own_error_with_what_to_do() {
    let bodies: [(Proto, &str); 3] = [
        // llama.cpp's llama-server, byte for byte
        (
            Proto::OpenAi,
            r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":4173,"n_ctx":4096}}"#,
        ),
        (
            Proto::OpenAi,
            r#"{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
        ),
        (
            Proto::Anthropic,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"}}"#,
        ),
    ];
    for (proto, body) in bodies {
        let mock = Mock::start().await;
        mock.push(status(400, body));
        let model = provider(&mock, proto, true);
        let err = model.complete(&request(&["task"])).await.unwrap_err();
        assert!(
            matches!(err, ModelError::ContextOverflow { .. }),
            "{proto:?}: {err:?}"
        );
        let text = err.to_string();
        assert!(text.contains("context"), "{text}");
        assert!(text.contains("max_tokens"), "{text}");
        assert!(text.contains("shorter task"), "{text}");
        assert!(!text.contains("check the model name"), "{text}");
        assert_eq!(mock.requests().len(), 1, "not retried");
    }
}

// ---- 4. chat templates without tool support -------------------------------------------------

const TEXTUAL_CALL: &str = "I will ask the helper.\n```\ntask({ subagent_type: \"helper\", description: \"read\", prompt: \"What is in a.md?\" })\n```";

#[tokio::test]
async fn tools_dropped_by_the_server_fall_back_to_textual_calls_once() {
    let (_dir, project) = project();
    let mock = Mock::start().await;
    // The template dropped the tools: the model writes its call as text.
    mock.push(answer(TEXTUAL_CALL, vec![]))
        .push(answer("a.md holds hello", vec![]))
        .push(answer("Final: hello.", vec![]));
    let (outcome, events) = session(
        &project,
        &config(&mock, Proto::OpenAi, ""),
        "mock/m",
        "What is in a.md?",
    )
    .await;
    assert_eq!(outcome.status, "completed", "{outcome:?}");
    assert_eq!(outcome.answer, "Final: hello.");
    assert_eq!(
        named(&events, "model.tools_fallback").len(),
        1,
        "warned once"
    );
    let seen = mock.requests();
    assert_eq!(seen.len(), 3);
    assert!(seen[0].body.get("tools").is_some(), "tools were sent first");
    assert!(
        seen[2].body.get("tools").is_none(),
        "after the fallback the model gets the textual protocol: {}",
        seen[2].body
    );
    assert!(seen[2].body.to_string().contains("[result of call"));
}

#[tokio::test]
async fn server_without_tool_support_gets_textual_calls_from_the_start() {
    let (_dir, project) = project();
    let mock = Mock::start().await;
    mock.set_props(json!({"chat_template_caps": {"supports_tools": false}, "n_ctx": 4096}));
    mock.push(answer(TEXTUAL_CALL, vec![]))
        .push(answer("a.md holds hello", vec![]))
        .push(answer("Final: hello.", vec![]));
    let (outcome, events) = session(
        &project,
        &config(&mock, Proto::OpenAi, ""),
        "mock/m",
        "What is in a.md?",
    )
    .await;
    assert_eq!(outcome.status, "completed", "{outcome:?}");
    assert_eq!(named(&events, "model.tools_fallback").len(), 1);
    let seen = mock.requests();
    assert!(seen[0].body.get("tools").is_none(), "{}", seen[0].body);
    assert_eq!(mock.props_requests(), 1, "asked once per model");
}

#[tokio::test]
async fn server_with_tool_support_or_without_props_keeps_native_tools() {
    for props in [
        Some(json!({"chat_template_caps": {"supports_tools": true}})),
        Some(json!({"default_generation_settings": {}})),
        None,
    ] {
        let mock = Mock::start().await;
        if let Some(p) = props.clone() {
            mock.set_props(p);
        }
        mock.push(answer("", vec![call("c1", "task", json!({"x": "y"}))]));
        let model = provider(&mock, Proto::OpenAi, true);
        let r = model.complete(&request(&["task"])).await.expect("answer");
        assert_eq!(r.tool_calls.len(), 1, "{props:?}");
        assert!(mock.requests()[0].body.get("tools").is_some(), "{props:?}");
    }
}

// ---- 5. errors classified by body -----------------------------------------------------------

const GRAMMAR_ERROR: &str = r#"{"error":{"code":500,"message":"Failed to parse input at pos 71: <tool_call>\n{\"name\": \"task\"","type":"server_error"}}"#;

#[tokio::test]
async fn format_mismatch_500_is_not_retried() {
    let mock = Mock::start().await;
    mock.push(status(500, GRAMMAR_ERROR))
        .push(answer("would succeed", vec![]));
    let model = provider(&mock, Proto::OpenAi, true);
    let err = model.complete(&request(&["task"])).await.unwrap_err();
    assert!(matches!(err, ModelError::Fatal(_)), "{err:?}");
    assert!(err.to_string().contains("Failed to parse input"), "{err}");
    assert_eq!(mock.requests().len(), 1, "a format mismatch is not retried");
}

#[tokio::test]
async fn format_mismatch_mid_stream_is_not_retried_but_overload_is() {
    // llama.cpp streams a few chunks, then reports the parse failure as an error chunk.
    let grammar = format!(
        "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"<tool_call>\"}},\"finish_reason\":null}}],\"object\":\"chat.completion.chunk\"}}\n\ndata: {GRAMMAR_ERROR}\n\n"
    );
    let mock = Mock::start().await;
    mock.push(raw_sse(&grammar)).push(answer("never", vec![]));
    let model = provider(&mock, Proto::OpenAi, true);
    let err = model.complete(&request(&["task"])).await.unwrap_err();
    assert!(matches!(err, ModelError::Fatal(_)), "{err:?}");
    assert_eq!(mock.requests().len(), 1);

    let overloaded = "data: {\"error\":{\"code\":503,\"message\":\"Loading model\",\"type\":\"unavailable_error\"}}\n\n";
    let mock = Mock::start().await;
    mock.push(raw_sse(overloaded)).push(answer("back", vec![]));
    let model = provider(&mock, Proto::OpenAi, true);
    let r = model.complete(&request(&[])).await.expect("retried");
    assert_eq!(r.content, "back");
    assert_eq!(mock.requests().len(), 2);
}

// ---- 6. trace shows whole errors and every violation ---------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trace_shows_the_whole_error_and_every_violation() {
    let helper = "---\nname: helper\ndescription: \"Answers one question.\"\nmode: subagent\ntools: {read: true}\ncontract:\n  extends: envelope\n  message_types: [HELPER_RESPONSE]\n  on_violation: fail\n  max_repairs: 0\n---\nYou are {{ agent }}.\n";
    let (dir, project) = project_with(&[("boss", BOSS), ("helper", helper)]);
    let mock = Mock::start().await;
    mock.push(answer(
        "",
        vec![call(
            "c1",
            "task",
            json!({"subagent_type": "helper", "description": "d", "prompt": "p"}),
        )],
    ))
    .push(answer("no envelope at all", vec![]))
    .push(answer("Final: the helper failed.", vec![]));
    let (outcome, events) =
        session(&project, &config(&mock, Proto::OpenAi, ""), "mock/m", "hi").await;
    let violations: Vec<String> = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::HopFailed { violations, .. } if !violations.is_empty() => Some(
                violations
                    .iter()
                    .map(|v| v.message.clone())
                    .collect::<Vec<_>>(),
            ),
            _ => None,
        })
        .expect("a failed hop with violations");
    assert!(!violations.is_empty(), "{violations:?}");
    let root = dir.path().to_path_buf();
    let id = outcome.session_id.clone();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_switchboard"))
            .arg("--root")
            .arg(&root)
            .args(["trace", &id])
            .env("NO_COLOR", "1")
            .output()
    })
    .await
    .expect("join")
    .expect("run trace");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("answer violates contract"), "{text}");
    for v in &violations {
        assert!(
            text.contains(v.as_str()),
            "violation {v:?} missing from:\n{text}"
        );
    }
}

// ---- 7. no TLS roots for a plain-http server --------------------------------------------------

#[tokio::test]
async fn plain_http_server_loads_no_tls_roots() {
    for proto in PROTOS {
        let mock = Mock::start().await;
        mock.push(answer("hi", vec![]));
        let model = provider(&mock, proto, true);
        let r = model.complete(&request(&[])).await.expect("answer");
        assert_eq!(r.content, "hi");
        // A redirect to https would need the roots this client never loaded: refused, once.
        mock.push(Reply::Status {
            status: 307,
            body: String::new(),
            headers: vec![(
                "location".into(),
                "https://127.0.0.1:9/v1/chat/completions".into(),
            )],
        });
        let err = model.complete(&request(&[])).await.unwrap_err();
        assert!(matches!(err, ModelError::Fatal(_)), "{err:?}");
        assert!(
            err.to_string()
                .contains("set base_url to the https address"),
            "{err}"
        );
        // No test in this binary talks https, so no TLS client config may exist at all.
        assert_eq!(
            switchboard::model::client::tls_configs_built(),
            0,
            "{proto:?}"
        );
    }
}

// ---- docs: the "Run with llama.cpp / Ollama / vLLM" lines -----------------------------------

/// The ```toml blocks of the docs section, each with the server it is for.
fn documented_local_configs() -> Vec<(String, String)> {
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/providers.md"))
        .expect("docs/providers.md");
    let start = docs
        .find("## Run with llama.cpp / Ollama / vLLM")
        .expect("the section exists");
    let rest = &docs[start + 3..];
    let section = &rest[..rest.find("\n## ").unwrap_or(rest.len())];
    let mut out = Vec::new();
    let mut server = String::new();
    let mut lines = section.lines();
    while let Some(line) = lines.next() {
        if let Some(name) = line.strip_prefix("### ") {
            server = name.to_string();
        } else if line == "```toml" {
            let block: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
            out.push((server.clone(), block.join("\n")));
        }
    }
    out
}

#[tokio::test]
async fn docs_run_with_local_servers_config_lines_work() {
    let configs = documented_local_configs();
    let servers: Vec<&str> = configs.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(servers, ["llama.cpp", "Ollama", "vLLM"]);
    for (server, toml) in configs {
        let (_dir, project) = project();
        let mock = Mock::start().await;
        // The documented lines, only the server's address swapped for the fake one.
        let port = toml
            .split("http://localhost:")
            .nth(1)
            .and_then(|r| r.split('/').next())
            .expect("a localhost base_url");
        let toml = toml.replace(
            &format!("http://localhost:{port}"),
            &format!("http://{}", mock.addr),
        );
        let config = Config::parse(&toml, "switchboard.toml").expect("the documented lines parse");
        let spec = config.model.default.clone().expect("a default model");
        let model_name = spec.split_once('/').map(|(_, m)| m.to_string()).unwrap();
        mock.push(answer("Final: served locally.", vec![]));
        let (outcome, _) = session(&project, &toml, &spec, "hi").await;
        assert_eq!(outcome.status, "completed", "{server}: {outcome:?}");
        assert_eq!(outcome.answer, "Final: served locally.", "{server}");
        let seen = mock.requests();
        assert_eq!(seen.len(), 1, "{server}");
        assert_eq!(seen[0].path, "/v1/chat/completions", "{server}");
        assert_eq!(seen[0].body["model"], json!(model_name), "{server}");
        let expected_max = if toml.contains("context_tokens = 4096") {
            1024
        } else {
            4096
        };
        assert_eq!(seen[0].body["max_tokens"], json!(expected_max), "{server}");
    }
}
