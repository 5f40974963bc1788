//! HTTP providers through the real runtime: config tables → registry → sessions, against the
//! in-process mock on 127.0.0.1. Retries show in the event log as `model.retry`; a model
//! configured with `tools = false` delegates through textual task() calls.

use crate::support;

use serde_json::json;
use std::sync::Arc;

use support::mock::{answer, call, Mock, Proto, Reply};
use switchboard::agent::{load, LoadOptions};
use switchboard::config::Config;
use switchboard::model::{ProviderContext, Registry};
use switchboard::project::Project;
use switchboard::runtime::events::read_log;
use switchboard::runtime::{Event, EventKind, RunOptions, Session};

const BOSS: &str = "---\nname: boss\ndescription: \"Delegates to helper.\"\nmode: primary\ntools: {task: true}\n---\nYou are {{ agent }}. Delegate to `helper`.\n";
const HELPER: &str = "---\nname: helper\ndescription: \"Answers one question.\"\nmode: subagent\ntools: {read: true}\n---\nYou are {{ agent }}.\n";

fn project() -> (tempfile::TempDir, Project) {
    let dir = tempfile::tempdir().expect("tempdir");
    let agents = dir.path().join("agent");
    std::fs::create_dir_all(&agents).expect("mkdir");
    std::fs::write(agents.join("boss.md"), BOSS).expect("write");
    std::fs::write(agents.join("helper.md"), HELPER).expect("write");
    let p = Project::open(dir.path()).expect("project");
    (dir, p)
}

async fn session(
    project: &Project,
    config_toml: &str,
    model: &str,
) -> (switchboard::runtime::SessionOutcome, Vec<Event>) {
    session_with_env(project, config_toml, model, None).await
}

/// As [`session`]; `env` (if given) stands in for the process environment of provider `mock`.
async fn session_with_env(
    project: &Project,
    config_toml: &str,
    model: &str,
    env: Option<fn(&str) -> Option<String>>,
) -> (switchboard::runtime::SessionOutcome, Vec<Event>) {
    let config = Config::parse(config_toml, "switchboard.toml").expect("config");
    let agents = Arc::new(load(project, &LoadOptions::default()));
    assert!(!agents.has_errors(), "{:?}", agents.diagnostics);
    let mut registry = Registry::with_builtins(ProviderContext {
        project_root: project.root().to_path_buf(),
        providers: config.providers.clone(),
        stream: None,
    });
    if let Some(env) = env {
        registry.register(
            "mock",
            Arc::new(move |ctx: &ProviderContext, model: &str| {
                switchboard::model::registry::build_http(ctx, "mock", model, &env)
            }),
        );
    }
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
        "What is in a.md?",
    )
    .expect("session");
    let outcome = session.run().await;
    let events = read_log(&outcome.events).expect("log");
    (outcome, events)
}

fn config(mock: &Mock, proto: Proto, extra: &str) -> String {
    let protocol = match proto {
        Proto::OpenAi => "openai",
        Proto::Anthropic => "anthropic",
    };
    // A named provider, so OPENAI_BASE_URL in the developer's environment cannot redirect it.
    format!(
        "[providers.mock]\nprotocol = \"{protocol}\"\nbase_url = \"{}\"\nretry_base_ms = 5\nrequest_timeout_secs = 5\nstream_idle_timeout_secs = 5\n{extra}",
        mock.base_url(proto)
    )
}

#[tokio::test]
async fn session_delegates_through_http_provider_and_logs_retries() {
    for proto in [Proto::OpenAi, Proto::Anthropic] {
        let (_dir, project) = project();
        let mock = Mock::start().await;
        mock.push(answer(
            "",
            vec![call(
                "call_boss_1",
                "task",
                json!({"subagent_type": "helper", "description": "read a.md",
                       "prompt": "What is in a.md?"}),
            )],
        ))
        .push(Reply::Status {
            status: 429,
            body: "{\"error\":\"slow down\"}".into(),
            headers: vec![("retry-after".into(), "0.01".into())],
        })
        .push(answer("a.md holds the word hello", vec![]))
        .push(answer("Final: a.md holds the word hello.", vec![]));
        let (outcome, events) = session(&project, &config(&mock, proto, ""), "mock/m1").await;
        assert_eq!(outcome.status, "completed", "{proto:?} {outcome:?}");
        assert_eq!(outcome.answer, "Final: a.md holds the word hello.");

        let retries: Vec<_> = events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::ModelRetry {
                    provider,
                    attempt,
                    error,
                    delay_ms,
                    ..
                } => Some((
                    e.agent.clone(),
                    provider.clone(),
                    *attempt,
                    error.clone(),
                    *delay_ms,
                )),
                _ => None,
            })
            .collect();
        assert_eq!(retries.len(), 1, "{events:?}");
        assert_eq!(retries[0].0.as_deref(), Some("helper"));
        assert_eq!(retries[0].1, "mock");
        assert_eq!(retries[0].2, 1);
        assert!(retries[0].3.contains("429"), "{}", retries[0].3);
        assert_eq!(retries[0].4, 10);

        let seen = mock.requests();
        assert_eq!(seen.len(), 4);
        // the boss's second request carries the helper's answer as the task result
        let last = seen[3].body.to_string();
        assert!(last.contains("call_boss_1"), "{last}");
        assert!(last.contains("a.md holds the word hello"), "{last}");
    }
}

#[tokio::test]
async fn session_with_textual_task_calls_for_a_model_without_tools() {
    let (_dir, project) = project();
    let mock = Mock::start().await;
    mock.push(answer(
        "I'll ask.\n\n```\ntask({ subagent_type: \"helper\", description: \"read a.md\", prompt: \"What is in a.md?\" })\n```\n",
        vec![],
    ))
    .push(answer("hello", vec![]))
    .push(answer("Final: hello.", vec![]));
    let extra = "[providers.mock.models.\"small\"]\ntools = false\n";
    let (outcome, events) =
        session(&project, &config(&mock, Proto::OpenAi, extra), "mock/small").await;
    assert_eq!(outcome.status, "completed", "{outcome:?}");
    assert_eq!(outcome.answer, "Final: hello.");
    let started: Vec<_> = events
        .iter()
        .filter(|e| e.kind.name() == "hop.started")
        .filter_map(|e| e.agent.clone())
        .collect();
    assert_eq!(started, ["boss", "helper"]);
    for r in mock.requests() {
        assert!(r.body.get("tools").is_none());
    }
}

/// The field report's shapes: a delegation written as text, over the wire, by a model that
/// was offered tools natively. Each is read back, run, and logged with its form.
#[tokio::test]
async fn tool_calls_written_as_text_are_recovered_and_logged() {
    let cases = [
        (
            "I will delegate.\n\n```json\n{\"name\": \"task\", \"arguments\": {\"description\": \"read a.md\", \"prompt\": \"What is in a.md?\"}, \"subagent_type\": \"helper\"}\n```",
            "flattened",
        ),
        (
            "<tool_call>\n{\"name\": \"task\", \"arguments\": {\"subagent_type\": \"helper\", \"description\": \"read a.md\", \"prompt\": \"What is in a.md?\"}}\n</tool_call>",
            "hermes",
        ),
        (
            "{\"name\": \"task\", \"arguments\": {\"subagent_type\": \"helper\", \"description\": \"read a.md\", \"prompt\": \"What is in a.md?\"}}",
            "json",
        ),
    ];
    for proto in [Proto::OpenAi, Proto::Anthropic] {
        for (text, form) in cases {
            let (_dir, project) = project();
            let mock = Mock::start().await;
            mock.push(answer(text, vec![]))
                .push(answer("hello", vec![]))
                .push(answer("Final: hello.", vec![]));
            let (outcome, events) = session(&project, &config(&mock, proto, ""), "mock/m1").await;
            assert_eq!(outcome.status, "completed", "{proto:?} {form} {outcome:?}");
            assert_eq!(outcome.answer, "Final: hello.", "{proto:?} {form}");
            let started: Vec<_> = events
                .iter()
                .filter(|e| e.kind.name() == "hop.started")
                .filter_map(|e| e.agent.clone())
                .collect();
            assert_eq!(started, ["boss", "helper"], "{proto:?} {form}");
            let recovered: Vec<_> = events
                .iter()
                .filter_map(|e| match &e.kind {
                    EventKind::ModelToolCallRecovered {
                        form,
                        tools,
                        call_ids,
                        ..
                    } => Some((form.clone(), tools.clone(), call_ids.clone())),
                    _ => None,
                })
                .collect();
            assert_eq!(
                recovered,
                [(
                    form.to_string(),
                    vec!["task".to_string()],
                    vec!["recovered_t1_1".to_string()]
                )],
                "{proto:?} {form}"
            );
            // The boss's next request carries the helper's answer for the recovered call.
            let last = mock.requests()[2].body.to_string();
            assert!(last.contains("recovered_t1_1"), "{last}");
        }
    }
}

/// An answer that only talks about the tool, or quotes a call as an example, stays an answer.
#[tokio::test]
async fn answers_that_mention_a_tool_are_not_calls() {
    let texts = [
        "I would use the task tool to ask helper, but a.md is small: it holds hello.",
        "For example:\n```json\n{\"name\": \"task\", \"arguments\": {\"subagent_type\": \"helper\", \"prompt\": \"p\"}}\n```",
    ];
    for text in texts {
        let (_dir, project) = project();
        let mock = Mock::start().await;
        mock.push(answer(text, vec![]));
        let (outcome, events) =
            session(&project, &config(&mock, Proto::OpenAi, ""), "mock/m1").await;
        assert_eq!(outcome.answer, text);
        assert!(
            !events
                .iter()
                .any(|e| e.kind.name() == "model.tool_call_recovered"),
            "{text}"
        );
        assert_eq!(mock.requests().len(), 1);
    }
}

#[tokio::test]
async fn bad_provider_config_is_a_clear_error() {
    let (_dir, project) = project();
    let (outcome, _) = session(
        &project,
        "[providers.mock]\nprotocol = \"openai\"\nbase_urll = \"http://127.0.0.1:1\"\n",
        "mock/m",
    )
    .await;
    assert_ne!(outcome.status, "completed");
    let text = format!("{outcome:?}");
    assert!(text.contains("base_urll"), "{text}");
}

#[tokio::test]
async fn api_key_never_reaches_the_log_transcripts_or_outcome() {
    const KEY: &str = "sk-e2e-SECRET-7f3a9";
    fn env(var: &str) -> Option<String> {
        (var == "SWITCHBOARD_TEST_E2E_KEY").then(|| KEY.to_string())
    }
    for proto in [Proto::OpenAi, Proto::Anthropic] {
        let (_dir, project) = project();
        let mock = Mock::start().await;
        mock.push(answer(
            "",
            vec![call(
                "c1",
                "task",
                json!({"subagent_type": "helper", "description": "d", "prompt": "p"}),
            )],
        ))
        .push(Reply::Status {
            status: 503,
            body: "{\"error\":\"busy; you sent {auth}\"}".into(),
            headers: vec![],
        })
        .push(Reply::Status {
            status: 401,
            body: "{\"error\":\"bad key {auth}\"}".into(),
            headers: vec![],
        })
        .push(answer("Final: the helper failed.", vec![]));
        let extra = "api_key_env = \"SWITCHBOARD_TEST_E2E_KEY\"\n";
        let (outcome, events) =
            session_with_env(&project, &config(&mock, proto, extra), "mock/m", Some(env)).await;
        let seen = mock.requests();
        let sent = seen[0]
            .header("authorization")
            .or_else(|| seen[0].header("x-api-key"))
            .unwrap_or("");
        assert!(sent.contains(KEY), "the key is sent to the server");
        assert!(
            events.iter().any(|e| e.kind.name() == "model.retry"),
            "{events:?}"
        );
        let mut produced = format!("{outcome:?}\n{events:?}\n");
        let session_dir = outcome.events.parent().expect("session dir");
        for entry in std::fs::read_dir(session_dir).expect("session dir") {
            let path = entry.expect("entry").path();
            if path.is_file() {
                produced.push_str(&String::from_utf8_lossy(
                    &std::fs::read(&path).expect("read"),
                ));
            }
        }
        assert!(
            produced.contains("401"),
            "the failure is logged: {produced}"
        );
        assert!(!produced.contains(KEY), "key leaked: {produced}");
        assert!(!produced.contains("SECRET"), "key leaked: {produced}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_run_with_no_stream_and_config_alias() {
    let (dir, _project) = project();
    let mock = Mock::start().await;
    mock.push(answer("Final: nothing to delegate.", vec![]));
    let toml = format!(
        "[aliases]\nlocal = \"mock/m1\"\n\n{}",
        config(&mock, Proto::OpenAi, "")
    );
    std::fs::write(dir.path().join("switchboard.toml"), toml).expect("write config");
    let root = dir.path().to_path_buf();
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_switchboard"))
            .arg("--root")
            .arg(&root)
            .args([
                "run",
                "boss",
                "hello",
                "--json",
                "--no-stream",
                "--model",
                "local",
            ])
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .output()
    })
    .await
    .expect("join")
    .expect("run the binary");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("Final: nothing to delegate."), "{stdout}");
    let seen = mock.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0].body["stream"], false,
        "--no-stream reaches the provider"
    );
    assert_eq!(seen[0].body["model"], "m1", "the alias expands to mock/m1");
}
