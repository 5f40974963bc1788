//! Checkpoint-workflow step validation cost (docs/workflows.md).
//!
//! - `submit/intent`: one step judged in memory: schema only.
//! - `submit/plan`: the plan step: schema, plan files within the scope, and the verification
//!   command parsed and its program looked up on `PATH`.
//! - `handle/intent`: the whole `step` call as the runtime makes it: load the workflow file and
//!   the state, judge, write a new run's state atomically (with `fsync`) and append the log
//!   line.
//!
//! `cargo bench --bench workflow -- --warm-up-time 1 --measurement-time 3`

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use serde_json::json;
use std::hint::black_box;
use switchboard::project::Project;
use switchboard::workflow::{self, engine, state::State, tool};

fn fixture() -> (tempfile::TempDir, Project) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("workflow")).unwrap();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/workflow/plan.yaml"),
        root.join("workflow/plan.yaml"),
    )
    .unwrap();
    std::fs::write(root.join("src/a.rs"), "fn a() {}\n").unwrap();
    std::fs::write(root.join("src/b.rs"), "fn b() {}\n").unwrap();
    let project = Project::open(root).unwrap();
    (dir, project)
}

fn bench(c: &mut Criterion) {
    let (_dir, project) = fixture();
    let wf = workflow::find(&project, "plan").unwrap();
    let intent = json!({"action": "PROCEED", "refined_intent": "Add retries to the client"});
    let fresh = State::new("bench", &wf, "planner", "s", "c", "task");
    let mut group = c.benchmark_group("submit");
    group.bench_function("intent", |b| {
        b.iter_batched(
            || fresh.clone(),
            |mut s| black_box(engine::submit(&wf, &mut s, &project, "intent", &intent)),
            BatchSize::SmallInput,
        )
    });
    // A state with every step before `plan` accepted.
    let mut ready = fresh.clone();
    for (name, result) in [
        ("intent", intent.clone()),
        ("clarify", json!({"action": "PROCEED", "assumptions": []})),
        (
            "scope",
            json!({"primary": ["src/a.rs"], "secondary": ["src/b.rs"],
            "evidence": [{"fact": "a is defined", "path": "src/a.rs", "start": 1, "end": 1, "excerpt": "fn a() {}"}]}),
        ),
        (
            "test_strategy",
            json!({"verdict": "NONE", "strategy": "none needed"}),
        ),
        ("complexity", json!({"domains": ["src"]})),
    ] {
        let o = engine::submit(&wf, &mut ready, &project, name, &result);
        assert_eq!(o.reply.action(), "PROCEED", "{name}: {:?}", o.reply);
    }
    let plan = json!({"goals": ["g"], "steps": [
        {"title": "change a", "files": ["src/a.rs"], "change": "edit it", "done_when": "tests pass"},
        {"title": "change b", "files": ["src/b.rs"], "change": "edit it", "done_when": "tests pass"}],
        "verification": "RUST_LOG=info cargo test --workspace 2>&1 | grep -c passed"});
    group.bench_function("plan", |b| {
        b.iter_batched(
            || ready.clone(),
            |mut s| {
                let o = engine::submit(&wf, &mut s, &project, "plan", &plan);
                assert_eq!(o.reply.action(), "PROCEED");
                black_box(o)
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();
    let call = tool::Call {
        project: &project,
        agent: "planner",
        declared: Some("plan"),
        run_id: "bench-handle",
        session_id: "s",
        correlation_id: "c",
        task: "task",
        found: &[],
    };
    let args = json!({"name": "intent", "result": intent});
    // Each call starts a fresh run (the folder is removed untimed), so the state does not grow
    // with every iteration's history.
    let run_dir = project.root().join(".switchboard/workflows/bench-handle");
    c.bench_function("handle/intent", |b| {
        b.iter_batched(
            || {
                let _ = std::fs::remove_dir_all(&run_dir);
            },
            |()| black_box(tool::handle(&call, &args)),
            BatchSize::SmallInput,
        )
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
