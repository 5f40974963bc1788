//! Client overhead per request against the in-process mock on 127.0.0.1: serialize the request,
//! send it, and parse a 4 kB streamed answer (SSE), for both wire protocols; plus the same
//! without the network (body encoding and SSE parsing alone).
//!
//! Run: `cargo bench --bench providers`. Numbers go into BENCHMARKS.md under `## Providers`.

#[path = "../tests/support/mock.rs"]
mod mock;

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};
use serde_json::json;
use std::hint::black_box;
use std::sync::Arc;

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

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(50)
        .warm_up_time(std::time::Duration::from_secs(1))
        .measurement_time(std::time::Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
