//! Runtime benchmarks (numbers in BENCHMARKS.md, `## Runtime`).
//!
//! - `hop_overhead_1000_hops`: a primary delegating 1,000 hops (8 at a time) to a zero-latency scripted subagent with a real
//!   prompt template and envelope contract; throughput is per hop, event log
//!   included (session start and the final inline fsync amortised over 1,001 hops).
//! - `parallel_64x100ms`: 64 subagents at 100 ms scripted latency, `--max-parallel 64`; wall time.
//! - before the criterion groups, a 1,000-hop session's peak RSS (VmHWM) is printed.
//!
//! Run: `cargo bench --bench runtime`.

use criterion::{Criterion, Throughput};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use switchboard::agent::{load, LoadOptions};
use switchboard::config::Config;
use switchboard::model::{Model, ProviderContext, Registry, ScriptedModel};
use switchboard::project::Project;
use switchboard::runtime::{RunOptions, Session};

const LOCATOR: &str = include_str!("../tests/fixtures/runtime/project/agent/thoughts-locator.md");

fn project() -> (tempfile::TempDir, Project) {
    let dir = tempfile::tempdir().expect("tempdir");
    let agent = dir.path().join("agent");
    std::fs::create_dir_all(&agent).expect("agent dir");
    std::fs::write(
        agent.join("boss.md"),
        "---\nname: boss\ndescription: b\nmode: primary\ntools: {task: true}\n---\nYou are {{ agent }}.\n{% for s in subagents %}- {{ s.name }}\n{% endfor %}",
    )
    .expect("boss");
    std::fs::write(agent.join("thoughts-locator.md"), LOCATOR).expect("locator");
    let p = Project::open(dir.path()).expect("project");
    (dir, p)
}

fn script(hops: usize, delay_ms: u64) -> String {
    let mut s = String::from("agents:\n  boss:\n    - turns:\n        - tool_calls:\n");
    for i in 0..hops {
        s.push_str(&format!(
            "            - {{name: task, arguments: {{subagent_type: thoughts-locator, prompt: \"find {i}\"}}}}\n"
        ));
    }
    s.push_str("        - content: done\n  thoughts-locator:\n    - repeat: true\n      turns:\n");
    s.push_str(&format!(
        "        - delay_ms: {delay_ms}\n          content: |\n"
    ));
    for line in [
        "---",
        "message_id: {{ message_id }}",
        "correlation_id: {{ correlation_id }}",
        "timestamp: {{ timestamp }}",
        "message_type: LOCATOR_RESPONSE",
        "---",
        "",
        "<thinking>",
        "Searched.",
        "</thinking>",
        "",
        "<answer>",
        "No documents under thoughts/ match the topic.",
        "</answer>",
    ] {
        s.push_str(&format!("            {line}\n"));
    }
    s
}

async fn session(p: &Project, script: &str, max_parallel: usize) -> String {
    let agents = Arc::new(load(p, &LoadOptions::default()));
    let registry = Registry::with_builtins(ProviderContext::default());
    let model: Arc<dyn Model> = Arc::new(ScriptedModel::from_yaml(script).expect("script"));
    registry.insert("scripted/bench", model);
    let options = RunOptions {
        model: Some("scripted/bench".into()),
        max_parallel,
        ..RunOptions::default()
    };
    let s = Session::new(
        p.clone(),
        agents,
        Config::default(),
        Arc::new(registry),
        options,
        "boss",
        "go",
    )
    .expect("session");
    let outcome = s.run().await;
    assert_eq!(outcome.status, "completed", "{outcome:?}");
    outcome.status.to_string()
}

fn vm_hwm_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).map(str::to_string))
        })
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn memory_report(rt: &tokio::runtime::Runtime) {
    let (_d, p) = project();
    let before = vm_hwm_kib();
    let clock = std::time::Instant::now();
    rt.block_on(session(&p, &script(1000, 0), 8));
    let elapsed = clock.elapsed();
    let after = vm_hwm_kib();
    let log = std::fs::read_dir(Path::new(p.root()).join(".switchboard/sessions"))
        .ok()
        .and_then(|mut d| d.next())
        .and_then(|e| e.ok())
        .and_then(|e| std::fs::metadata(e.path().join("events.jsonl")).ok())
        .map_or(0, |m| m.len());
    println!(
        "1000-hop session: {:.1} ms wall, {:.1} µs/hop, peak RSS (VmHWM) {:.1} MiB (before: {:.1} MiB), log {:.1} MiB",
        elapsed.as_secs_f64() * 1e3,
        elapsed.as_secs_f64() * 1e6 / 1001.0,
        after as f64 / 1024.0,
        before as f64 / 1024.0,
        log as f64 / (1024.0 * 1024.0)
    );
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    memory_report(&rt);
    let mut c = Criterion::default().configure_from_args();
    {
        let (_d, p) = project();
        let s = script(1000, 0);
        let mut g = c.benchmark_group("runtime");
        g.throughput(Throughput::Elements(1001));
        g.sample_size(10);
        g.measurement_time(Duration::from_secs(4));
        g.bench_function("hop_overhead_1000_hops", |b| {
            b.iter(|| rt.block_on(session(&p, &s, 8)))
        });
        g.finish();
    }
    {
        let (_d, p) = project();
        let s = script(64, 100);
        let mut g = c.benchmark_group("runtime");
        g.sample_size(10);
        g.measurement_time(Duration::from_secs(3));
        g.bench_function("parallel_64x100ms", |b| {
            b.iter(|| rt.block_on(session(&p, &s, 64)))
        });
        g.finish();
    }
    c.final_summary();
}
