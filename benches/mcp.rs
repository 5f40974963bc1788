//! MCP tool-call overhead over stdio: one `echo` call on the reference server
//! (`@modelcontextprotocol/server-everything`, installed by scripts/fetch-test-deps.sh) through
//! switchboard's MCP client (`McpTools::call`: name resolution, grant check, restart bookkeeping,
//! result rendering) against the same call made directly with rmcp's client. Besides criterion's
//! estimates it prints the p50 and p95 of 500 timed calls each, the figure BENCHMARKS.md keeps.

use criterion::{criterion_group, criterion_main, Criterion};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::CallToolRequestParams;
use rmcp::ServiceExt;
use switchboard::agent::{load, Agent, LoadOptions};
use switchboard::config::Config;
use switchboard::mcp::McpTools;
use switchboard::project::Project;

fn server_bin() -> std::path::PathBuf {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(".cache/npm/node_modules/.bin/mcp-server-everything");
    assert!(bin.exists(), "run scripts/fetch-test-deps.sh first");
    bin
}

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort();
    samples[((samples.len() - 1) as f64 * p).round() as usize]
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("agent")).unwrap();
    std::fs::write(
        dir.path().join("agent/lead.md"),
        "---\ndescription: d\nmode: primary\ntools: [every_echo]\n---\nx\n",
    )
    .unwrap();
    let project = Project::open(dir.path()).unwrap();
    let agents = load(&project, &LoadOptions::default());
    let agent: Agent = agents.get("lead").unwrap().clone();
    let config = Config::parse(
        &format!(
            "[mcp.every]\ncommand = \"{}\"\nargs = [\"stdio\"]\nstartup_timeout_secs = 60\n",
            server_bin().display()
        ),
        "switchboard.toml",
    )
    .unwrap();
    let (tools, reports) = rt.block_on(McpTools::start(&config.mcp, project.root(), |_| true));
    assert!(reports[0].error.is_none(), "{reports:?}");
    let tools = Arc::new(tools);
    let args = serde_json::json!({"message": "ping"});

    let mut cmd = tokio::process::Command::new(server_bin());
    cmd.arg("stdio").stderr(std::process::Stdio::null());
    let direct = rt
        .block_on(async { ().serve(rmcp::transport::TokioChildProcess::new(cmd).unwrap()).await })
        .unwrap();
    let peer = direct.peer().clone();
    let mut params = CallToolRequestParams::new("echo");
    params.arguments = args.as_object().cloned();

    let via_switchboard = || {
        rt.block_on(async {
            let (result, _) = tools.call(&agent, "every", "echo", &args).await;
            assert!(result.unwrap().contains("ping"));
        })
    };
    let via_rmcp = || {
        rt.block_on(async {
            let r = peer.call_tool(params.clone()).await.unwrap();
            assert!(!r.content.is_empty());
        })
    };
    for (name, f) in [
        ("switchboard", &via_switchboard as &dyn Fn()),
        ("rmcp direct", &via_rmcp as &dyn Fn()),
    ] {
        for _ in 0..50 {
            f();
        }
        let mut samples: Vec<Duration> = (0..500)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed()
            })
            .collect();
        let p50 = percentile(&mut samples, 0.5);
        let p95 = percentile(&mut samples, 0.95);
        eprintln!("mcp echo over stdio, {name}: p50 {p50:?}, p95 {p95:?} (500 calls)");
    }
    let mut group = c.benchmark_group("mcp_stdio_echo");
    group.bench_function("switchboard", |b| b.iter(via_switchboard));
    group.bench_function("rmcp_direct", |b| b.iter(via_rmcp));
    group.finish();
    rt.block_on(tools.shutdown());
    let _ = rt.block_on(direct.cancel());
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(50).measurement_time(Duration::from_secs(5));
    targets = bench
}
criterion_main!(benches);
