//! What tracing costs a hop, and what the trace page costs for a big session.
//!
//! - `otel_hop/{live,dead,off}`: feeding one hop's six events (hop.started, model.request,
//!   model.response, tool.call, tool.result, hop.completed) to the exporter, as the runtime's
//!   observer does, with a collector that answers (an OTLP receiver on 127.0.0.1), with nothing
//!   listening, and with no exporter at all (the assembler alone). The network work happens on the
//!   exporter's thread; this is the time the hop's own thread spends.
//! - `trace_page/render_500`: `report::render_log` for a generated 500-hop session (page size is
//!   printed once).

use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
use switchboard::model::Usage;
use switchboard::runtime::events::{timestamp, Event, EventKind, HopStatus};
use switchboard::runtime::SessionStatus;
use switchboard::telemetry::spans::SpanAssembler;
use switchboard::telemetry::Telemetry;

fn at(ms: i64) -> String {
    let base = chrono::DateTime::parse_from_rfc3339("2026-11-23T10:00:00Z")
        .unwrap()
        .with_timezone(&chrono::Utc);
    timestamp(base + chrono::Duration::milliseconds(ms))
}

fn ev(ms: i64, hop: &str, parent: Option<&str>, agent: &str, kind: EventKind) -> Event {
    Event {
        timestamp: at(ms),
        session_id: "0195f3a0-0000-7000-8000-000000000001".into(),
        correlation_id: "bench".into(),
        hop_id: Some(hop.into()),
        parent_hop_id: parent.map(String::from),
        agent: Some(agent.into()),
        kind,
    }
}

/// One hop's events: started, one model call with one tool call, completed.
fn hop_events(t0: i64, t1: i64, hop: &str, parent: Option<&str>, depth: u32) -> Vec<Event> {
    let agent = if depth == 0 { "researcher" } else { "worker" };
    let usage = Usage {
        input_tokens: 120,
        output_tokens: 40,
        ..Default::default()
    };
    vec![
        ev(
            t0,
            hop,
            parent,
            agent,
            EventKind::HopStarted {
                depth,
                attempt: 1,
                message_id: format!("m-{hop}"),
                model: "offline/default".into(),
                description: "look".into(),
                prompt: format!("Find what {hop} needs <and> report it."),
                occurrence: 0,
                started_at: at(t0),
            },
        ),
        ev(
            t0,
            hop,
            parent,
            agent,
            EventKind::ModelRequest {
                step: 1,
                messages: 2,
                tools: 3,
                tool_choice: Default::default(),
                warmed: None,
            },
        ),
        ev(
            t0 + 1,
            hop,
            parent,
            agent,
            EventKind::ModelResponse {
                step: 1,
                usage,
                tool_calls: 1,
                elapsed_us: 1000,
            },
        ),
        ev(
            t0 + 1,
            hop,
            parent,
            agent,
            EventKind::ToolCall {
                call_id: "c1".into(),
                tool: "read".into(),
                arguments: serde_json::json!({"path": "README.md"}),
            },
        ),
        ev(
            t0 + 2,
            hop,
            parent,
            agent,
            EventKind::ToolResult {
                call_id: "c1".into(),
                tool: "read".into(),
                is_error: false,
                output: "text".into(),
                written: None,
                child_hop_id: None,
            },
        ),
        ev(
            t1,
            hop,
            parent,
            agent,
            EventKind::HopCompleted {
                status: HopStatus::Completed,
                message_id: format!("m-{hop}"),
                answer: "## Summary\nfound it".into(),
                usage,
                started_at: at(t0),
                ended_at: at(t1),
                duration_us: ((t1 - t0) * 1000) as u64,
                steps: 1,
                conformant: Some(true),
                violations: vec![],
                written: vec![],
            },
        ),
    ]
}

/// A session of `n` hops: one primary, the rest its children and grandchildren.
fn session(n: usize) -> Vec<Event> {
    let primary = "0195f3a0-0000-7000-8000-00000000ffff".to_string();
    let mut events = vec![ev(
        0,
        &primary,
        None,
        "researcher",
        EventKind::SessionStarted {
            prompt: "go".into(),
            model: None,
            max_parallel: 8,
            max_depth: 3,
            resumed: false,
        },
    )];
    let total = 10 * n as i64 + 10;
    let mut primary_events = hop_events(0, total, &primary, None, 0);
    let primary_end = primary_events.pop().unwrap();
    events.extend(primary_events);
    let mut parent = primary.clone();
    for i in 1..n {
        let id = format!("0195f3a0-0000-7000-8000-{i:012x}");
        let t0 = 10 * i as i64;
        let (p, depth) = if i % 5 == 1 {
            (primary.clone(), 1)
        } else {
            (parent.clone(), 2)
        };
        events.extend(hop_events(t0, t0 + 8, &id, Some(&p), depth));
        if i % 5 == 1 {
            parent = id;
        }
    }
    events.push(primary_end);
    events.push(ev(
        total,
        &primary,
        None,
        "researcher",
        EventKind::SessionCompleted {
            status: SessionStatus::Completed,
            answer: "done".into(),
            error: None,
            usage: Usage::default(),
            duration_us: total as u64 * 1000,
            written: vec![],
        },
    ));
    events
}

fn receiver(rt: &tokio::runtime::Runtime) -> String {
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(|_body: bytes::Bytes| async { Vec::<u8>::new() }),
    );
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    rt.spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

fn bench_otel(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let live = receiver(&rt);
    let dead_port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dead = format!("http://127.0.0.1:{dead_port}");
    let hop = hop_events(0, 10, "0195f3a0-0000-7000-8000-0000000000aa", None, 0);
    let mut group = c.benchmark_group("otel_hop");
    for (name, url) in [("live", &live), ("dead", &dead)] {
        let t = Telemetry::start(url, Arc::new(|_: &str| {})).unwrap();
        group.bench_function(name, |b| {
            b.iter(|| {
                for e in &hop {
                    t.record(e);
                }
            })
        });
        let failed = t.shutdown();
        eprintln!("otel_hop/{name}: {failed} failed export(s)");
    }
    let mut assembler = SpanAssembler::new();
    group.bench_function("assemble_only", |b| {
        b.iter(|| {
            for e in &hop {
                std::hint::black_box(assembler.push(e));
            }
        })
    });
    group.finish();
}

fn bench_page(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events.jsonl");
    let text: String = session(500)
        .iter()
        .map(|e| serde_json::to_string(e).unwrap() + "\n")
        .collect();
    std::fs::write(&log, text).unwrap();
    let page = switchboard::report::render_log(&log).unwrap();
    assert_eq!(page.matches("class=\"bar ").count(), 500);
    eprintln!("trace_page/render_500: page {} bytes", page.len());
    c.bench_function("trace_page/render_500", |b| {
        b.iter(|| switchboard::report::render_log(&log).unwrap().len())
    });
}

criterion_group!(benches, bench_otel, bench_page);
criterion_main!(benches);
