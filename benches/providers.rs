//! Client overhead per request against the in-process mock on 127.0.0.1: serialize the request,
//! send it, and parse a 4 kB streamed answer (SSE), for both wire protocols; plus the same
//! without the network (body encoding and SSE parsing alone).
//!
//! `providers/first_request_byte_http` measures a cold start: from building a provider for a
//! plain-http server to the first byte of its first request arriving at that server (a raw TCP
//! listener on 127.0.0.1 that stamps the moment); the target is < 2 ms. Building no TLS roots
//! for http is what keeps it there; `client_build_with_platform_roots` shows what they cost.
//!
//! Run: `cargo bench --bench providers`. Numbers go into BENCHMARKS.md under `## Providers`.

#[path = "../tests/support/mock.rs"]
mod mock;

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};
use serde_json::json;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use mock::{answer, call, Mock, Proto, Reply};
use switchboard::model::anthropic::Anthropic;
use switchboard::model::openai::OpenAi;
use switchboard::model::registry;
use switchboard::model::settings::{BuildOptions, HttpConfig, Protocol, ProviderSettings};
use switchboard::model::{Message, Model, ModelRequest, ToolSpec};

/// A 4 kB answer with one tool call, and a request with a realistic system prompt and history.
fn fixture() -> (Reply, ModelRequest) {
    let text: String = "The locator found the auth code in src/auth.rs and src/session.rs. "
        .repeat(70)
        .chars()
        .take(4096)
        .collect();
    let reply = answer(
        &text,
        vec![call(
            "call_1",
            "task",
            json!({"subagent_type": "analyzer", "description": "read it", "prompt": "Explain src/auth.rs"}),
        )],
    );
    let request = ModelRequest {
        model: "bench".into(),
        agent: "researcher".into(),
        system: "You are a researcher. ".repeat(100),
        messages: vec![
            Message::user("Where is auth handled?"),
            Message::assistant("Looking.", vec![]),
            Message::user("Go on."),
        ],
        tools: ["task", "read", "grep", "glob"]
            .iter()
            .map(|n| ToolSpec {
                name: n.to_string(),
                description: format!("The {n} tool."),
                parameters: json!({"type": "object", "properties": {"path": {"type": "string"}},
                                   "required": ["path"]}),
            })
            .collect(),
        tool_choice: Default::default(),
        temperature: Some(0.0),
        top_p: None,
        max_tokens: None,
        response_contract: None,
    };
    (reply, request)
}

/// The client's work alone for one provider: `encode` the request, then `parse` the stream, once
/// with token-sized deltas (`sse`) and once with the same answer in 16 large deltas (`coarse`).
fn bench_client<E, P, R>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    label: &str,
    [sse, coarse]: [&String; 2],
    encode: impl Fn() -> E,
    parse: P,
) where
    P: Fn(&[u8]) -> R,
{
    group.bench_function(format!("{label}/encode_and_parse_sse_4k"), |b| {
        b.iter(|| (encode(), parse(black_box(sse.as_bytes()))))
    });
    group.bench_function(format!("{label}/encode_and_parse_sse_4k_16_deltas"), |b| {
        b.iter(|| (encode(), parse(black_box(coarse.as_bytes()))))
    });
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let (reply, request) = fixture();
    let mut group = c.benchmark_group("providers");
    group.throughput(Throughput::Bytes(4096));

    for proto in [Proto::OpenAi, Proto::Anthropic] {
        let label = match proto {
            Proto::OpenAi => "openai",
            Proto::Anthropic => "anthropic",
        };
        // one delta per ~4 bytes, as a server streaming token by token sends them
        let sse = mock::answer_sse_with(&reply, proto, 1024);
        let json_body = mock::answer_json(&reply, proto).to_string();
        for stream in [true, false] {
            let mock = rt.block_on(Mock::start());
            // pre-rendered, so the mock's own cost stays small
            mock.repeat(if stream {
                Reply::Raw {
                    content_type: "text/event-stream".into(),
                    body: sse.clone(),
                }
            } else {
                Reply::Raw {
                    content_type: "application/json".into(),
                    body: json_body.clone(),
                }
            });
            let settings = ProviderSettings {
                base_url: Some(mock.base_url(proto)),
                ..ProviderSettings::default()
            };
            let options = BuildOptions {
                stream: Some(stream),
                observer: None,
            };
            let model: Arc<dyn Model> =
                registry::build(label, "bench", Some(&settings), &options, &|_| None)
                    .expect("http provider")
                    .expect("builds");
            let check = rt.block_on(model.complete(&request)).expect("answer");
            assert_eq!(check.content.len(), 4096);
            assert_eq!(check.tool_calls.len(), 1);
            let name = format!(
                "{label}/{}_4k_roundtrip",
                if stream { "stream" } else { "json" }
            );
            group.bench_function(name, |b| {
                b.iter(|| rt.block_on(model.complete(black_box(&request))))
            });
        }

        // client work alone: encode the request, parse the stream (token-sized deltas, and the
        // same answer in 16 large deltas)
        let coarse = mock::answer_sse(&reply, proto);
        match proto {
            Proto::OpenAi => {
                let p = OpenAi::new(HttpConfig::local(
                    label,
                    Protocol::Openai,
                    "http://127.0.0.1:9",
                ))
                .expect("client");
                bench_client(
                    &mut group,
                    label,
                    [&sse, &coarse],
                    || serde_json::to_vec(&p.body(black_box(&request), true)),
                    |bytes| p.parse_sse(bytes),
                );
            }
            Proto::Anthropic => {
                let p = Anthropic::new(HttpConfig::local(
                    label,
                    Protocol::Anthropic,
                    "http://127.0.0.1:9",
                ))
                .expect("client");
                bench_client(
                    &mut group,
                    label,
                    [&sse, &coarse],
                    || serde_json::to_vec(&p.body(black_box(&request), true)),
                    |bytes| p.parse_sse(bytes),
                );
            }
        }
    }
    group.finish();
}

/// A one-request-per-connection HTTP server on 127.0.0.1 that sends, for every request, the
/// moment its first byte arrived, then answers with a minimal Chat Completions body.
fn stamping_server() -> (std::net::SocketAddr, std::sync::mpsc::Receiver<Instant>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    let addr = listener.local_addr().expect("addr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let body = r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}"#;
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = Vec::new();
            let mut chunk = [0u8; 8192];
            let mut stamped = false;
            loop {
                let n = match stream.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                if !stamped {
                    stamped = true;
                    let _ = tx.send(Instant::now());
                }
                buf.extend_from_slice(&chunk[..n]);
                let text = String::from_utf8_lossy(&buf);
                if let Some(end) = text.find("\r\n\r\n") {
                    let length = text[..end]
                        .lines()
                        .find_map(|l| {
                            let (k, v) = l.split_once(':')?;
                            k.eq_ignore_ascii_case("content-length")
                                .then(|| v.trim().parse::<usize>().ok())?
                        })
                        .unwrap_or(0);
                    if buf.len() >= end + 4 + length {
                        break;
                    }
                }
            }
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (addr, rx)
}

/// Cold start to the first request byte at a plain-http server, and the platform-roots client
/// that a plain-http provider no longer builds.
fn bench_cold_start(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (addr, stamps) = stamping_server();
    let settings = ProviderSettings {
        base_url: Some(format!("http://{addr}/v1")),
        stream: Some(false),
        ..ProviderSettings::default()
    };
    let request = ModelRequest {
        model: "bench".into(),
        agent: "a".into(),
        system: "You are a.".into(),
        messages: vec![Message::user("hi")],
        tools: Vec::new(),
        tool_choice: Default::default(),
        temperature: None,
        top_p: None,
        max_tokens: None,
        response_contract: None,
    };
    let mut group = c.benchmark_group("providers");
    group.bench_function("first_request_byte_http", |b| {
        b.iter_custom(|iters| {
            let mut total = std::time::Duration::ZERO;
            for _ in 0..iters {
                let start = Instant::now();
                let model = registry::build(
                    "openai",
                    "bench",
                    Some(&settings),
                    &BuildOptions::default(),
                    &|_| None,
                )
                .expect("http provider")
                .expect("builds");
                let answer = rt.block_on(model.complete(&request)).expect("answer");
                assert_eq!(answer.content, "ok");
                let first_byte = stamps.recv().expect("stamp");
                total += first_byte.duration_since(start);
            }
            total
        })
    });
    group.bench_function("client_build_with_platform_roots", |b| {
        b.iter(|| reqwest::Client::builder().build().expect("client"))
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(50)
        .warm_up_time(std::time::Duration::from_secs(1))
        .measurement_time(std::time::Duration::from_secs(3));
    targets = bench, bench_cold_start
}
criterion_main!(benches);
