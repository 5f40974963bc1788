//! The offline model at scale: a whole researcher run over a generated 1,000-document
//! `thoughts/` corpus, the locator's search alone, and ripgrep over the same files with the same
//! pattern (or, without `rg` on PATH, one grep-searcher scan of the files, as a stand-in).
//!
//! Run: `CARGO_TARGET_DIR=... taskset -c 0 cargo bench --bench offline`. The agents come from
//! `SWITCHBOARD_CORPUS` (default: this checkout) `agent/`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use switchboard::agent::render::{render, PromptContext};
use switchboard::agent::{load, LoadOptions};
use switchboard::model::offline::{bm25, locator, respond};
use switchboard::model::{Message, ModelRequest, ResponseContract};
use switchboard::project::Project;
use switchboard::runtime::RunOptions;
use switchboard::tools::{self, ToolContext};

/// The generated corpus, shared with `tests/it/offline_quality.rs` (the bench reads the planted
/// question, not its path).
#[path = "../tests/support/synth.rs"]
#[allow(dead_code)]
mod synth;

fn agents_dir() -> PathBuf {
    std::env::var_os("SWITCHBOARD_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
        .join("agent")
}

fn copy_agents(to: &Path) {
    let from = agents_dir();
    std::fs::create_dir_all(to).unwrap();
    for name in [
        "researcher.md",
        "thoughts-locator.md",
        "thoughts-analyzer.md",
    ] {
        std::fs::copy(from.join(name), to.join(name)).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (set SWITCHBOARD_CORPUS to a checkout with the agents)",
                from.join(name).display()
            )
        });
    }
}

/// The locator hop without the runtime: model turns and tool executions only.
fn locate(project: &Project, agent: &switchboard::agent::Agent, question: &str) -> String {
    let system = render(
        agent,
        &PromptContext {
            agent: agent.name.clone(),
            correlation_id: "bench".into(),
            message_id: "locator-2026-11-21-001".into(),
            hop_id: "h".into(),
            parent: "researcher".into(),
            depth: 1,
            now: "2026-11-21T00:00:00Z".into(),
            today: "2026-11-21".into(),
            project_root: project.root().display().to_string(),
            subagents: Vec::new(),
        },
    )
    .unwrap();
    let mut messages = vec![Message::user(format!(
        "Find every document about: {question}\nCorrelation: bench"
    ))];
    loop {
        let request = ModelRequest {
            model: "default".into(),
            agent: agent.name.clone(),
            system: system.clone(),
            messages: messages.clone(),
            tools: tools::specs_for(agent, &tools::Provided::default()),
            tool_choice: Default::default(),
            temperature: None,
            top_p: None,
            max_tokens: None,
            response_contract: agent.contract.clone().map(|contract| ResponseContract {
                contract,
                message_id: "locator-2026-11-21-001".into(),
                correlation_id: "bench".into(),
                timestamp: "2026-11-21T00:00:00Z".into(),
            }),
        };
        let response = respond(&request);
        if response.tool_calls.is_empty() {
            return response.content;
        }
        messages.push(Message::assistant("", response.tool_calls.clone()));
        for call in &response.tool_calls {
            let out = tools::invoke(
                ToolContext {
                    project,
                    agent,
                    known: &[],
                    written: &[],
                },
                &call.name,
                &call.arguments,
            )
            .map(|o| o.text)
            .unwrap_or_else(|e| e.to_string());
            messages.push(Message::tool(call.id.clone(), out, false));
        }
    }
}

/// One scan of every file with the pattern, as ripgrep would do it on one thread.
fn searcher_scan(root: &Path, pattern: &str) -> usize {
    use grep_regex::RegexMatcher;
    use grep_searcher::{sinks::UTF8, SearcherBuilder};
    let matcher = RegexMatcher::new_line_matcher(pattern).unwrap();
    let mut searcher = SearcherBuilder::new().line_number(true).build();
    let mut n = 0;
    for entry in ignore::WalkBuilder::new(root).build().flatten() {
        if entry.file_type().is_some_and(|t| t.is_file()) {
            let _ = searcher.search_path(
                &matcher,
                entry.path(),
                UTF8(|_, _| {
                    n += 1;
                    Ok(true)
                }),
            );
        }
    }
    n
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    copy_agents(&dir.path().join("agent"));
    let planted = synth::generate(dir.path(), 1000).unwrap();
    let project = Project::open(dir.path()).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();

    let mut group = c.benchmark_group("offline");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(8));
    group.bench_function("researcher_run_1000_docs", |b| {
        b.iter(|| {
            let outcome = rt
                .block_on(switchboard::runtime::run(
                    &project,
                    &LoadOptions::default(),
                    "researcher",
                    &planted.question,
                    RunOptions::default(),
                ))
                .unwrap();
            assert_eq!(outcome.status, "completed");
            assert!(
                outcome.answer.contains("Report written"),
                "{}",
                outcome.answer
            );
        })
    });

    let agents = load(&project, &LoadOptions::default());
    let locator_agent = agents.get("thoughts-locator").unwrap().clone();
    for (name, question) in [
        ("planted", planted.question.as_str()),
        (
            "common_terms",
            "How are session events and hop budgets handled?",
        ),
    ] {
        let answer = locate(&project, &locator_agent, question);
        assert!(answer.contains("LOCATOR_RESPONSE"));
        group.bench_function(format!("locator_search_{name}"), |b| {
            b.iter(|| locate(&project, &locator_agent, question))
        });
        let pattern = locator::terms_pattern(&bm25::query_terms(question));
        let thoughts = dir.path().join("thoughts");
        let rg = Command::new("rg").arg("--version").output().is_ok();
        if rg {
            group.bench_function(format!("ripgrep_j1_{name}"), |b| {
                b.iter(|| {
                    Command::new("rg")
                        .args(["-j1", "-n", "--no-heading", "-e", &pattern])
                        .arg(&thoughts)
                        .output()
                        .unwrap()
                })
            });
        } else {
            eprintln!("rg not on PATH: comparing with one grep-searcher scan instead");
        }
        group.bench_function(format!("searcher_scan_{name}"), |b| {
            b.iter(|| searcher_scan(&thoughts, &pattern))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
