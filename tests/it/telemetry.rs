//! OpenTelemetry export end to end: the binary runs a session with `--otel` against an OTLP/HTTP
//! receiver this test starts on 127.0.0.1, which decodes the protobuf with the official proto types.
//! The span tree, names, attributes and ids are checked against the session's event log; `trace
//! --otlp` must send the same spans; a collector that is not there costs one warning.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Output;
use std::sync::{Arc, Mutex};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use switchboard::runtime::events::read_log;
use switchboard::runtime::{Event, EventKind};

use crate::support::fs as support_fs;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/runtime");

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    support_fs::copy_tree(&Path::new(FIXTURE).join("project"), dir.path());
    std::fs::copy(
        Path::new(FIXTURE).join("scripts/research.yaml"),
        dir.path().join("research.yaml"),
    )
    .unwrap();
    dir
}

use crate::support::fs::sb;

/// An OTLP/HTTP receiver on 127.0.0.1: every span it decodes, and the resource's service.name.
struct Receiver {
    addr: SocketAddr,
    spans: Arc<Mutex<Vec<Span>>>,
    services: Arc<Mutex<Vec<String>>>,
    _rt: tokio::runtime::Runtime,
}

impl Receiver {
    fn start() -> Receiver {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let spans: Arc<Mutex<Vec<Span>>> = Arc::default();
        let services: Arc<Mutex<Vec<String>>> = Arc::default();
        let (s, v) = (spans.clone(), services.clone());
        let app = axum::Router::new().route(
            "/v1/traces",
            axum::routing::post(move |body: bytes::Bytes| {
                let (s, v) = (s.clone(), v.clone());
                async move {
                    let req = ExportTraceServiceRequest::decode(body).expect("OTLP protobuf");
                    for rs in req.resource_spans {
                        for kv in rs.resource.iter().flat_map(|r| r.attributes.iter()) {
                            if kv.key == "service.name" {
                                v.lock().unwrap().push(text(kv.value.as_ref()));
                            }
                        }
                        for ss in rs.scope_spans {
                            s.lock().unwrap().extend(ss.spans);
                        }
                    }
                    (
                        [("content-type", "application/x-protobuf")],
                        Vec::<u8>::new(),
                    )
                }
            }),
        );
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        rt.spawn(async move { axum::serve(listener, app).await });
        Receiver {
            addr,
            spans,
            services,
            _rt: rt,
        }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn spans(&self) -> Vec<Span> {
        self.spans.lock().unwrap().clone()
    }
}

fn text(v: Option<&opentelemetry_proto::tonic::common::v1::AnyValue>) -> String {
    match v.and_then(|v| v.value.as_ref()) {
        Some(Value::StringValue(s)) => s.clone(),
        Some(Value::IntValue(i)) => i.to_string(),
        Some(Value::BoolValue(b)) => b.to_string(),
        other => format!("{other:?}"),
    }
}

fn attr(s: &Span, key: &str) -> Option<String> {
    s.attributes
        .iter()
        .find(|kv| kv.key == key)
        .map(|kv| text(kv.value.as_ref()))
}

fn run_session(root: &Path, otel: &str) -> (Output, String, Vec<Event>) {
    let out = sb(root)
        .args(["run", "researcher", "research the runtime", "--model"])
        .arg("scripted/research.yaml")
        .args(["--correlation-id", "corr-otel", "--json"])
        .arg(format!("--otel={otel}"))
        .output()
        .unwrap();
    let v = crate::support::fs::success_json(&out);
    assert_eq!(v["status"], "completed");
    let events = read_log(Path::new(v["events"].as_str().unwrap())).unwrap();
    (out, v["session_id"].as_str().unwrap().to_string(), events)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Checks the received spans against the log; returns (span id, parent id, name) sorted.
fn check_against_log(
    spans: &[Span],
    session: &str,
    events: &[Event],
) -> Vec<(String, String, String)> {
    let trace_id = uuid::Uuid::parse_str(session).unwrap().as_bytes().to_vec();
    assert!(
        spans.iter().all(|s| s.trace_id == trace_id),
        "one trace per session"
    );
    let by_id: HashMap<Vec<u8>, &Span> = spans.iter().map(|s| (s.span_id.clone(), s)).collect();
    assert_eq!(by_id.len(), spans.len(), "span ids are unique");

    // The session span is the one root.
    let roots: Vec<&Span> = spans
        .iter()
        .filter(|s| s.parent_span_id.is_empty())
        .collect();
    assert_eq!(roots.len(), 1, "{roots:#?}");
    assert_eq!(roots[0].name, "session researcher");
    assert_eq!(
        attr(roots[0], "switchboard.session.id").as_deref(),
        Some(session)
    );

    // One hop span per hop, named after its agent, under its caller's span.
    let hop_span: HashMap<String, &Span> = spans
        .iter()
        .filter(|s| attr(s, "gen_ai.operation.name").as_deref() == Some("invoke_agent"))
        .map(|s| (attr(s, "switchboard.hop.id").unwrap(), s))
        .collect();
    let started: Vec<&Event> = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::HopStarted { .. }))
        .collect();
    assert_eq!(hop_span.len(), started.len());
    assert_eq!(started.len(), 5);
    for e in &started {
        let EventKind::HopStarted { message_id, .. } = &e.kind else {
            unreachable!()
        };
        let hop = e.hop_id.clone().unwrap();
        let s = hop_span[&hop];
        let agent = e.agent.clone().unwrap();
        assert_eq!(s.name, format!("invoke_agent {agent}"));
        assert_eq!(attr(s, "gen_ai.agent.name"), Some(agent));
        assert_eq!(attr(s, "switchboard.message.id").as_ref(), Some(message_id));
        assert_eq!(
            attr(s, "switchboard.correlation.id").as_deref(),
            Some("corr-otel")
        );
        assert_eq!(attr(s, "gen_ai.provider.name").as_deref(), Some("scripted"));
        assert_eq!(
            attr(s, "gen_ai.request.model").as_deref(),
            Some("research.yaml")
        );
        let expected_parent = match &e.parent_hop_id {
            Some(p) => hop_span[p].span_id.clone(),
            None => roots[0].span_id.clone(),
        };
        assert_eq!(s.parent_span_id, expected_parent, "{}", s.name);
        assert_eq!(attr(s, "switchboard.parent_hop.id"), e.parent_hop_id);
        assert!(s.end_time_unix_nano >= s.start_time_unix_nano);
    }

    // Model calls and tool calls are children of their hop, with tokens as the log has them.
    let responses: Vec<&Event> = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::ModelResponse { .. }))
        .collect();
    let chats: Vec<&Span> = spans
        .iter()
        .filter(|s| attr(s, "gen_ai.operation.name").as_deref() == Some("chat"))
        .collect();
    assert_eq!(chats.len(), responses.len());
    let mut log_tokens = 0u64;
    for e in &responses {
        if let EventKind::ModelResponse { usage, .. } = &e.kind {
            log_tokens += usage.input_tokens + usage.output_tokens;
        }
    }
    let span_tokens: u64 = chats
        .iter()
        .map(|s| {
            attr(s, "gen_ai.usage.input_tokens")
                .unwrap()
                .parse::<u64>()
                .unwrap()
                + attr(s, "gen_ai.usage.output_tokens")
                    .unwrap()
                    .parse::<u64>()
                    .unwrap()
        })
        .sum();
    assert_eq!(span_tokens, log_tokens);
    assert!(log_tokens > 0);
    let tool_calls = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::ToolCall { .. }))
        .count();
    let tools: Vec<&Span> = spans
        .iter()
        .filter(|s| attr(s, "gen_ai.operation.name").as_deref() == Some("execute_tool"))
        .collect();
    assert_eq!(tools.len(), tool_calls);
    assert!(tools.iter().any(|s| s.name == "execute_tool task"));
    for s in chats.iter().chain(tools.iter()) {
        let hop = attr(s, "switchboard.hop.id").unwrap();
        assert_eq!(s.parent_span_id, hop_span[&hop].span_id, "{}", s.name);
    }
    // A task call's span names the hop it started.
    for s in tools.iter().filter(|s| s.name == "execute_tool task") {
        let child = attr(s, "switchboard.tool.child_hop.id").unwrap();
        assert_eq!(
            hop_span[&child].parent_span_id, s.parent_span_id,
            "the child hop hangs under the calling hop"
        );
    }
    assert_eq!(spans.len(), 1 + hop_span.len() + chats.len() + tools.len());

    let mut tree: Vec<(String, String, String)> = spans
        .iter()
        .map(|s| (hex(&s.span_id), hex(&s.parent_span_id), s.name.clone()))
        .collect();
    tree.sort();
    tree
}

#[test]
fn a_session_exports_one_trace_whose_spans_match_the_log_and_trace_otlp_resends_it() {
    let receiver = Receiver::start();
    let dir = project();
    let (_out, session, events) = run_session(dir.path(), &receiver.url());
    let live = check_against_log(&receiver.spans(), &session, &events);
    assert!(receiver
        .services
        .lock()
        .unwrap()
        .iter()
        .all(|s| s == "switchboard"));

    let again = Receiver::start();
    let out = sb(dir.path())
        .args(["trace", &session])
        .arg(format!("--otlp={}", again.url()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let replayed = check_against_log(&again.spans(), &session, &events);
    assert_eq!(replayed, live, "re-export sends the same span tree");
}

#[test]
fn a_dead_collector_costs_one_warning_and_the_session_still_completes() {
    // A port that was free a moment ago: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = project();
    let url = format!("http://127.0.0.1:{port}");
    let (out, _session, events) = run_session(dir.path(), &url);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.matches("warning: cannot export traces").count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains(&url), "{stderr}");
    assert!(
        stderr.contains(": cannot connect: "),
        "plain words: {stderr}"
    );
    assert!(
        !stderr.contains("reqwest::Error"),
        "no struct dump: {stderr}"
    );
    assert!(events
        .iter()
        .any(|e| matches!(e.kind, EventKind::SessionCompleted { .. })));
}

#[test]
fn many_failed_exports_still_warn_once() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let receiver = Receiver::start();
    let dir = project();
    let (_out, _session, events) = run_session(dir.path(), &receiver.url());
    let warnings = Arc::new(Mutex::new(Vec::<String>::new()));
    let w = warnings.clone();
    let telemetry = switchboard::telemetry::Telemetry::start(
        &format!("http://127.0.0.1:{port}"),
        Arc::new(move |m: &str| w.lock().unwrap().push(m.to_string())),
    )
    .unwrap();
    for _ in 0..3 {
        telemetry.replay(&events);
        telemetry.flush();
    }
    let failed = telemetry.shutdown();
    assert!(failed >= 3, "{failed} failed exports");
    assert_eq!(warnings.lock().unwrap().len(), 1, "{warnings:?}");
}

#[test]
fn a_bad_endpoint_is_refused_before_the_session_starts() {
    let dir = project();
    let out = sb(dir.path())
        .args([
            "run",
            "researcher",
            "x",
            "--model",
            "scripted/research.yaml",
        ])
        .arg("--otel=ftp://example")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--otel: bad OTLP endpoint `ftp://example`"),
        "{stderr}"
    );
    assert!(!dir.path().join(".switchboard/sessions").exists());
}

#[test]
fn the_config_endpoint_exports_without_the_flag_and_a_bad_one_is_named() {
    let receiver = Receiver::start();
    let dir = project();
    std::fs::write(
        dir.path().join("switchboard.toml"),
        format!("[telemetry]\notlp_endpoint = \"{}\"\n", receiver.url()),
    )
    .unwrap();
    let out = sb(dir.path())
        .args(["run", "researcher", "research the runtime", "--json"])
        .args(["--model", "scripted/research.yaml"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let spans = receiver.spans();
    assert_eq!(
        spans
            .iter()
            .filter(|s| s.name.starts_with("invoke_agent "))
            .count(),
        5
    );

    std::fs::write(
        dir.path().join("switchboard.toml"),
        "[telemetry]\notlp_endpoint = \"localhost:4318\"\n",
    )
    .unwrap();
    let out = sb(dir.path())
        .args([
            "run",
            "researcher",
            "x",
            "--model",
            "scripted/research.yaml",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("switchboard.toml [telemetry] otlp_endpoint: bad OTLP endpoint")
            && stderr.contains("`localhost:4318`")
            && stderr.contains("the scheme must be http or https"),
        "{stderr}"
    );
}
