//! Both wire protocols against an in-process mock on 127.0.0.1: delegation round trips,
//! parallel tool calls, streaming and not, retries, failures, timeouts, textual task() calls,
//! and that the API key never leaks.

use crate::support;

use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use support::mock::{answer, call, status, Mock, Proto, Reply};
use switchboard::model::registry;
use switchboard::model::retry::{AttemptEvent, AttemptOutcome};
use switchboard::model::settings::{self, BuildOptions, ModelSettings, ProviderSettings};
use switchboard::model::{Message, Model, ModelError, ModelRequest, ModelResponse, ToolSpec};

const KEY: &str = "sk-test-SECRET-key-4242";
const PROTOS: [Proto; 2] = [Proto::OpenAi, Proto::Anthropic];

type Events = Arc<Mutex<Vec<AttemptEvent>>>;

fn name(proto: Proto) -> &'static str {
    match proto {
        Proto::OpenAi => "openai",
        Proto::Anthropic => "anthropic",
    }
}

fn key_env(proto: Proto) -> &'static str {
    match proto {
        Proto::OpenAi => "OPENAI_API_KEY",
        Proto::Anthropic => "ANTHROPIC_API_KEY",
    }
}

/// Settings with millisecond retries and short timeouts, so no test sleeps seconds.
fn settings(mock: &Mock, proto: Proto) -> ProviderSettings {
    ProviderSettings {
        base_url: Some(mock.base_url(proto)),
        retry_base_ms: Some(5),
        retry_max_delay_ms: Some(2_000),
        retry_jitter: Some(0.0),
        request_timeout_secs: Some(3.0),
        stream_idle_timeout_secs: Some(3.0),
        connect_timeout_secs: Some(2.0),
        ..ProviderSettings::default()
    }
}

fn build(
    proto: Proto,
    model: &str,
    settings: &ProviderSettings,
    stream: bool,
) -> (Arc<dyn Model>, Events) {
    let events: Events = Arc::default();
    let sink = events.clone();
    let options = BuildOptions {
        stream: Some(stream),
        observer: Some(Arc::new(move |e: &AttemptEvent| {
            sink.lock().expect("events").push(e.clone())
        })),
    };
    let env = |var: &str| (var == key_env(proto)).then(|| KEY.to_string());
    let model = registry::build(name(proto), model, Some(settings), &options, &env)
        .expect("an HTTP provider")
        .expect("provider builds");
    (model, events)
}

fn provider(mock: &Mock, proto: Proto, stream: bool) -> (Arc<dyn Model>, Events) {
    build(proto, "mock-model", &settings(mock, proto), stream)
}

fn tool(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: format!("the {name} tool"),
        parameters: json!({"type": "object", "properties": {"x": {"type": "string"}}}),
    }
}

fn request(agent: &str, messages: Vec<Message>, tools: &[&str]) -> ModelRequest {
    ModelRequest {
        model: "mock-model".into(),
        agent: agent.into(),
        system: format!("You are {agent}."),
        messages,
        tools: tools.iter().map(|t| tool(t)).collect(),
        tool_choice: Default::default(),
        temperature: Some(0.0),
        top_p: None,
        max_tokens: None,
        response_contract: None,
    }
}

/// The conversation turns the mock saw, with tool results lifted out, for either protocol.
fn tool_results(body: &serde_json::Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for m in body["messages"].as_array().into_iter().flatten() {
        if m["role"] == "tool" {
            out.push((
                m["tool_call_id"].as_str().unwrap_or("").to_string(),
                m["content"].as_str().unwrap_or("").to_string(),
            ));
        }
        for block in m["content"].as_array().into_iter().flatten() {
            if block["type"] == "tool_result" {
                out.push((
                    block["tool_use_id"].as_str().unwrap_or("").to_string(),
                    block["content"].as_str().unwrap_or("").to_string(),
                ));
            }
        }
    }
    out
}

fn outcomes(events: &Events) -> Vec<String> {
    events
        .lock()
        .expect("events")
        .iter()
        .map(|e| match &e.outcome {
            AttemptOutcome::Succeeded => format!("{}:ok", e.attempt),
            AttemptOutcome::Retrying { .. } => format!("{}:retry", e.attempt),
            AttemptOutcome::Failed { .. } => format!("{}:failed", e.attempt),
        })
        .collect()
}

fn fatal(result: Result<ModelResponse, ModelError>) -> String {
    match result {
        Err(ModelError::Fatal(m)) => m,
        other => panic!("expected a fatal error, got {other:?}"),
    }
}

#[tokio::test]
async fn delegation_round_trip_researcher_subagent_researcher() {
    for proto in PROTOS {
        for stream in [true, false] {
            let mock = Mock::start().await;
            let (model, _) = provider(&mock, proto, stream);
            let task_args = json!({"subagent_type": "locator", "description": "find",
                                   "prompt": "Find the auth code"});
            mock.push(answer(
                "Delegating.",
                vec![call("call_r1", "task", task_args.clone())],
            ))
            .push(answer(
                "",
                vec![call("call_s1", "grep", json!({"pattern": "auth"}))],
            ))
            .push(answer("auth lives in src/auth.rs", vec![]))
            .push(answer("Report: auth is in src/auth.rs — done.", vec![]));

            // researcher asks for the subagent
            let mut researcher = request(
                "researcher",
                vec![Message::user("Where is auth?")],
                &["task"],
            );
            let r1 = model
                .complete(&researcher)
                .await
                .expect("researcher turn 1");
            assert_eq!(r1.content, "Delegating.");
            assert_eq!(r1.tool_calls.len(), 1, "{proto:?} stream={stream}");
            assert_eq!(r1.tool_calls[0].name, "task");
            assert_eq!(r1.tool_calls[0].arguments, task_args);
            assert_eq!(r1.usage.input_tokens, 11);
            assert_eq!(r1.usage.output_tokens, 7);

            // the subagent runs its own conversation with a tool call
            let prompt = r1.tool_calls[0].arguments["prompt"].as_str().unwrap_or("");
            let mut sub = request("locator", vec![Message::user(prompt)], &["grep"]);
            let s1 = model.complete(&sub).await.expect("subagent turn 1");
            assert_eq!(s1.tool_calls[0].name, "grep");
            sub.messages
                .push(Message::assistant(s1.content, s1.tool_calls.clone()));
            sub.messages.push(Message::tool(
                &s1.tool_calls[0].id,
                "src/auth.rs:1: fn auth",
                false,
            ));
            let s2 = model.complete(&sub).await.expect("subagent turn 2");
            assert_eq!(s2.content, "auth lives in src/auth.rs");

            // the researcher gets the subagent's answer as the task result
            researcher
                .messages
                .push(Message::assistant(r1.content, r1.tool_calls.clone()));
            researcher
                .messages
                .push(Message::tool(&r1.tool_calls[0].id, &s2.content, false));
            let r2 = model
                .complete(&researcher)
                .await
                .expect("researcher turn 2");
            assert_eq!(r2.content, "Report: auth is in src/auth.rs — done.");
            assert!(r2.tool_calls.is_empty());

            let seen = mock.requests();
            assert_eq!(seen.len(), 4);
            for r in &seen {
                assert_eq!(r.body["stream"].as_bool().unwrap_or(false), stream);
                assert_eq!(r.body["model"], "mock-model");
            }
            assert_eq!(
                tool_results(&seen[2].body),
                vec![("call_s1".to_string(), "src/auth.rs:1: fn auth".to_string())]
            );
            assert_eq!(
                tool_results(&seen[3].body),
                vec![(
                    "call_r1".to_string(),
                    "auth lives in src/auth.rs".to_string()
                )]
            );
            match proto {
                Proto::OpenAi => {
                    assert_eq!(seen[0].path, "/v1/chat/completions");
                    assert_eq!(seen[0].body["tools"][0]["type"], "function");
                    assert_eq!(seen[0].body["tools"][0]["function"]["name"], "task");
                    assert_eq!(seen[0].body["messages"][0]["role"], "system");
                }
                Proto::Anthropic => {
                    assert_eq!(seen[0].path, "/v1/messages");
                    assert_eq!(seen[0].body["tools"][0]["name"], "task");
                    assert_eq!(seen[0].body["system"], "You are researcher.");
                    assert_eq!(seen[0].header("anthropic-version"), Some("2023-06-01"));
                    assert_eq!(
                        seen[3].body["messages"][1]["content"][1]["type"],
                        "tool_use"
                    );
                }
            }
        }
    }
}

#[tokio::test]
async fn two_parallel_tool_calls_in_one_turn() {
    for proto in PROTOS {
        for stream in [true, false] {
            let mock = Mock::start().await;
            let (model, _) = provider(&mock, proto, stream);
            mock.push(answer(
                "Reading both.",
                vec![
                    call("call_a", "read", json!({"path": "a.md"})),
                    call("call_b", "read", json!({"path": "b.md", "lines": [1, 2]})),
                ],
            ))
            .push(answer("Both read.", vec![]));
            let mut req = request("researcher", vec![Message::user("read a and b")], &["read"]);
            let r = model.complete(&req).await.expect("turn 1");
            let ids: Vec<_> = r.tool_calls.iter().map(|c| c.id.as_str()).collect();
            assert_eq!(ids, ["call_a", "call_b"], "{proto:?} stream={stream}");
            assert_eq!(
                r.tool_calls[1].arguments,
                json!({"path": "b.md", "lines": [1, 2]})
            );
            req.messages
                .push(Message::assistant(r.content, r.tool_calls));
            req.messages.push(Message::tool("call_a", "A", false));
            req.messages.push(Message::tool("call_b", "B", true));
            model.complete(&req).await.expect("turn 2");
            let seen = mock.requests();
            let results = tool_results(&seen[1].body);
            assert_eq!(results.len(), 2);
            assert_eq!(results[0].0, "call_a");
            assert_eq!(results[1].0, "call_b");
            if proto == Proto::Anthropic {
                // both results in one user turn, right after the assistant's two tool_use blocks
                let msgs = seen[1].body["messages"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                assert_eq!(msgs.len(), 3);
                assert_eq!(msgs[2]["content"][1]["is_error"], true);
            }
        }
    }
}

#[tokio::test]
async fn streaming_and_non_streaming_record_usage() {
    for proto in PROTOS {
        for stream in [true, false] {
            let mock = Mock::start().await;
            let (model, events) = provider(&mock, proto, stream);
            let text = "Ünïcödé — split across chunks ✓ ".repeat(20);
            mock.push(Reply::Answer {
                text: text.clone(),
                calls: vec![],
                input_tokens: 1234,
                output_tokens: 567,
            });
            let r = model
                .complete(&request("a", vec![Message::user("hi")], &[]))
                .await
                .expect("answer");
            assert_eq!(r.content, text);
            assert_eq!(r.usage.input_tokens, 1234, "{proto:?} stream={stream}");
            assert_eq!(r.usage.output_tokens, 567);
            let seen = mock.requests();
            assert_eq!(seen[0].body["stream"].as_bool().unwrap_or(false), stream);
            if proto == Proto::OpenAi && stream {
                assert_eq!(seen[0].body["stream_options"]["include_usage"], true);
            }
            assert!(seen[0].body.get("tools").is_none());
            assert_eq!(outcomes(&events), ["1:ok"]);
        }
    }
}

#[tokio::test]
async fn rate_limit_with_retry_after_then_success() {
    for proto in PROTOS {
        let mock = Mock::start().await;
        let (model, events) = provider(&mock, proto, true);
        mock.push(Reply::Status {
            status: 429,
            body: r#"{"error":{"message":"slow down"}}"#.into(),
            headers: vec![("retry-after".into(), "0.25".into())],
        })
        .push(answer("ok", vec![]));
        let started = Instant::now();
        let r = model
            .complete(&request("a", vec![Message::user("hi")], &[]))
            .await
            .expect("success after the retry");
        assert_eq!(r.content, "ok");
        assert!(
            started.elapsed() >= Duration::from_millis(250),
            "Retry-After honoured"
        );
        assert_eq!(outcomes(&events), ["1:retry", "2:ok"]);
        let first = events.lock().expect("events")[0].clone();
        match first.outcome {
            AttemptOutcome::Retrying { error, delay } => {
                assert_eq!(delay, Duration::from_millis(250));
                assert!(error.contains("429"), "{error}");
                assert!(error.contains("slow down"), "{error}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(first.provider, name(proto));
        assert_eq!(first.model, "mock-model");
        assert_eq!(first.max_attempts, 4);
        assert_eq!(mock.requests().len(), 2);
    }
}

#[tokio::test]
async fn server_error_four_times_then_clear_failure() {
    for proto in PROTOS {
        let mock = Mock::start().await;
        let (model, events) = provider(&mock, proto, true);
        for _ in 0..4 {
            mock.push(status(500, r#"{"error":"database on fire"}"#));
        }
        mock.push(answer("never reached", vec![]));
        let started = Instant::now();
        let err = fatal(
            model
                .complete(&request("a", vec![Message::user("hi")], &[]))
                .await,
        );
        assert!(err.contains("500"), "{err}");
        assert!(err.contains("database on fire"), "{err}");
        assert!(err.contains("gave up after 4 attempts"), "{err}");
        assert!(err.contains("max_retries"), "{err}");
        assert_eq!(mock.requests().len(), 4);
        assert_eq!(
            outcomes(&events),
            ["1:retry", "2:retry", "3:retry", "4:failed"]
        );
        // backoff 5, 10, 20 ms: doubling, and no seconds-long sleeps
        let delays: Vec<_> = events
            .lock()
            .expect("events")
            .iter()
            .filter_map(|e| match e.outcome {
                AttemptOutcome::Retrying { delay, .. } => Some(delay),
                _ => None,
            })
            .collect();
        assert_eq!(
            delays,
            [5, 10, 20].map(Duration::from_millis).to_vec(),
            "{proto:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(2));
    }
}

#[tokio::test]
async fn client_errors_fail_at_once_with_what_to_check() {
    for proto in PROTOS {
        let mock = Mock::start().await;
        let (model, events) = provider(&mock, proto, true);
        mock.push(status(
            400,
            r#"{"error":{"message":"model does not support tools"}}"#,
        ));
        let err = fatal(
            model
                .complete(&request("a", vec![Message::user("hi")], &["task"]))
                .await,
        );
        assert!(err.contains("400"), "{err}");
        assert!(err.contains("model does not support tools"), "{err}");
        assert!(err.contains("tools = false"), "{err}");
        assert_eq!(outcomes(&events), ["1:failed"]);
        assert_eq!(mock.requests().len(), 1);
    }
}

#[tokio::test]
async fn malformed_json_fails_at_once() {
    for proto in PROTOS {
        for (content_type, body) in [
            ("application/json", "{\"choices\": [oops"),
            ("text/html", "<html>Welcome to nginx</html>"),
            ("text/event-stream", "data: {\"type\": oops\n\n"),
        ] {
            let mock = Mock::start().await;
            let (model, events) = provider(&mock, proto, true);
            mock.push(Reply::Raw {
                content_type: content_type.into(),
                body: body.into(),
            });
            let err = fatal(
                model
                    .complete(&request("a", vec![Message::user("hi")], &[]))
                    .await,
            );
            assert!(err.contains("is not"), "{err}");
            assert!(err.contains("Check that the base URL"), "{err}");
            assert_eq!(mock.requests().len(), 1, "no retry for {content_type}");
            assert_eq!(outcomes(&events), ["1:failed"]);
        }
    }
}

#[tokio::test]
async fn stream_cut_mid_way_is_retried() {
    for proto in PROTOS {
        let full = answer(
            "a fairly long answer that streams in several chunks",
            vec![],
        );
        let sse = support::mock::answer_sse(&full, proto);
        let mock = Mock::start().await;
        let (model, events) = provider(&mock, proto, true);
        // an error mid-body, then a clean close before the end marker, then the whole answer
        mock.push(Reply::CutStream {
            answer: Box::new(full.clone()),
            keep: sse.len() / 2,
        })
        .push(Reply::Raw {
            content_type: "text/event-stream".into(),
            body: sse[..sse.len() * 2 / 3].to_string(),
        })
        .push(full);
        let r = model
            .complete(&request("a", vec![Message::user("hi")], &[]))
            .await
            .expect("third attempt succeeds");
        assert_eq!(
            r.content,
            "a fairly long answer that streams in several chunks"
        );
        assert_eq!(
            outcomes(&events),
            ["1:retry", "2:retry", "3:ok"],
            "{proto:?}"
        );
        let errors: Vec<String> = events
            .lock()
            .expect("events")
            .iter()
            .filter_map(|e| match &e.outcome {
                AttemptOutcome::Retrying { error, .. } => Some(error.clone()),
                _ => None,
            })
            .collect();
        assert!(
            errors.iter().all(|e| e.contains("cut mid-way")),
            "{errors:?}"
        );
    }
}

#[tokio::test]
async fn server_that_never_answers_times_out() {
    for proto in PROTOS {
        let mock = Mock::start().await;
        let mut s = settings(&mock, proto);
        s.request_timeout_secs = Some(0.2);
        s.stream_idle_timeout_secs = Some(0.2);
        s.max_retries = Some(1);
        let (model, events) = build(proto, "mock-model", &s, true);
        mock.push(Reply::Hang).push(Reply::Hang);
        let started = Instant::now();
        let err = fatal(
            model
                .complete(&request("a", vec![Message::user("hi")], &[]))
                .await,
        );
        assert!(err.contains("no answer within"), "{err}");
        assert!(err.contains("request_timeout_secs"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(2), "never hang");
        assert_eq!(outcomes(&events), ["1:retry", "2:failed"]);

        // a stream that starts, then goes silent
        let full = answer("some streamed text", vec![]);
        mock.push(Reply::StallStream {
            answer: Box::new(full.clone()),
            keep: 120,
        })
        .push(full);
        let r = model
            .complete(&request("a", vec![Message::user("hi")], &[]))
            .await
            .expect("retry after the stall");
        assert_eq!(r.content, "some streamed text");
        let last = events.lock().expect("events")[2].clone();
        match last.outcome {
            AttemptOutcome::Retrying { error, .. } => {
                assert!(error.contains("went silent"), "{error}")
            }
            other => panic!("{other:?}"),
        }
    }
}

#[tokio::test]
async fn connection_refused_is_transient_then_fails() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    drop(listener);
    let s = ProviderSettings {
        base_url: Some(format!("http://{addr}/v1")),
        retry_base_ms: Some(1),
        max_retries: Some(2),
        ..ProviderSettings::default()
    };
    let (model, events) = build(Proto::OpenAi, "m", &s, true);
    let err = fatal(
        model
            .complete(&request("a", vec![Message::user("hi")], &[]))
            .await,
    );
    assert!(err.contains("cannot connect"), "{err}");
    assert!(err.contains("OPENAI_BASE_URL"), "{err}");
    assert_eq!(outcomes(&events), ["1:retry", "2:retry", "3:failed"]);
}

#[tokio::test]
async fn textual_task_calls_for_model_without_tools() {
    for proto in PROTOS {
        for stream in [true, false] {
            let mock = Mock::start().await;
            let mut s = settings(&mock, proto);
            s.models.insert(
                "llama3.1".into(),
                ModelSettings {
                    tools: Some(false),
                    ..ModelSettings::default()
                },
            );
            let (model, _) = build(proto, "llama3.1", &s, stream);
            let text = "I will ask the locator.\n\n```js\ntask({\n  subagent_type: \"codebase-locator\",\n  description: \"Find auth\",\n  prompt: \"List files about auth\"\n})\n```\n\nAnd also:\n\n```python\ntask(subagent_type=\"web-search-researcher\", description=\"docs\", prompt=\"\"\"Find the\nOAuth docs\"\"\")\n```\n";
            mock.push(answer(text, vec![]))
                .push(answer("All done.", vec![]));
            let mut req = request(
                "researcher",
                vec![Message::user("Where is auth?")],
                &["task", "read"],
            );
            req.model = "llama3.1".into();
            let r = model.complete(&req).await.expect("textual answer");
            assert_eq!(r.tool_calls.len(), 2, "{proto:?} stream={stream}");
            assert_eq!(r.tool_calls[0].name, "task");
            assert_eq!(
                r.tool_calls[0].arguments,
                json!({"subagent_type": "codebase-locator", "description": "Find auth",
                       "prompt": "List files about auth"})
            );
            assert_eq!(r.tool_calls[1].arguments["prompt"], "Find the\nOAuth docs");
            assert_ne!(r.tool_calls[0].id, r.tool_calls[1].id);

            req.messages
                .push(Message::assistant(r.content.clone(), r.tool_calls.clone()));
            req.messages
                .push(Message::tool(&r.tool_calls[0].id, "src/auth.rs", false));
            req.messages
                .push(Message::tool(&r.tool_calls[1].id, "no docs found", true));
            let r2 = model.complete(&req).await.expect("second turn");
            assert!(r2.tool_calls.is_empty());

            let seen = mock.requests();
            for r in &seen {
                assert!(
                    r.body.get("tools").is_none(),
                    "no tool definitions are sent"
                );
            }
            let second = seen[1].body.to_string();
            assert!(second.contains("src/auth.rs"), "{second}");
            assert!(second.contains("[failed of call"), "{second}");
            assert!(
                tool_results(&seen[1].body).is_empty(),
                "results travel as text"
            );
            let system = match proto {
                Proto::OpenAi => seen[0].body["messages"][0]["content"].to_string(),
                Proto::Anthropic => seen[0].body["system"].to_string(),
            };
            assert!(
                system.contains("You cannot call tools directly"),
                "{system}"
            );
        }
    }
}

#[tokio::test]
async fn api_key_never_leaks() {
    for proto in PROTOS {
        let mock = Mock::start().await;
        let (model, events) = provider(&mock, proto, true);
        // the server echoes the credentials in its error body
        mock.push(status(401, r#"{"error":{"message":"invalid key {auth}"}}"#))
            .push(status(503, r#"{"error":"busy, your key was {auth}"}"#))
            .push(Reply::Raw {
                content_type: "application/json".into(),
                body: "not json {auth}".into(),
            });
        let mut produced = Vec::new();
        let err = fatal(
            model
                .complete(&request("a", vec![Message::user("hi")], &[]))
                .await,
        );
        assert!(err.contains("401"), "{err}");
        assert!(err.contains(key_env(proto)), "{err}");
        produced.push(err);
        produced.push(format!(
            "{:?}",
            model
                .complete(&request("a", vec![Message::user("hi")], &[]))
                .await
        ));
        produced.push(format!("{:?}", events.lock().expect("events")));

        let seen = mock.requests();
        match proto {
            Proto::OpenAi => {
                assert_eq!(
                    seen[0].header("authorization"),
                    Some(format!("Bearer {KEY}").as_str())
                )
            }
            Proto::Anthropic => assert_eq!(seen[0].header("x-api-key"), Some(KEY)),
        }
        // the settings and a resolved config print without the key too
        let env = |var: &str| (var == key_env(proto)).then(|| KEY.to_string());
        let kind = match proto {
            Proto::OpenAi => settings::Protocol::Openai,
            Proto::Anthropic => settings::Protocol::Anthropic,
        };
        let config = settings::HttpConfig::resolve(
            name(proto),
            kind,
            &settings(&mock, proto),
            &BuildOptions::default(),
            &env,
        )
        .expect("config");
        produced.push(format!("{config:?}"));
        assert!(config.api_key.is_some());
        for text in &produced {
            assert!(!text.contains(KEY), "key leaked: {text}");
            assert!(!text.contains("SECRET"), "key leaked: {text}");
        }
        assert!(produced.iter().any(|t| t.contains("***")), "{produced:?}");
    }
}
