//! Loading and linting 1,000 generated agent files (the foundation's speed goal: < 50 ms).

use criterion::{criterion_group, criterion_main, Criterion};
use std::fmt::Write as _;
use switchboard::agent::{self, LoadOptions};
use switchboard::project::Project;

/// Writes `n` agents that look like real ones: frontmatter with tools, permission and a contract,
/// a body of ~80 lines with delegation examples in code and prose.
fn corpus(n: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let agent_dir = dir.path().join("agent/generated");
    std::fs::create_dir_all(&agent_dir).expect("mkdir");
    for i in 0..n {
        let mut body = String::new();
        let primary = i % 10 == 0;
        let _ = write!(
            body,
            "---\ndescription: \"Generated agent number {i} that does one job well\"\nmode: {}\n\
             temperature: 0.2\nsteps: 12\ntools:\n  read: true\n  grep: true\n  glob: true\n  task: {}\n\
             permission:\n  task:\n    \"*\": deny\n    \"generated/*\": allow\n\
             contract:\n  extends: envelope\n  message_types: [GENERATED_RESPONSE]\n  evidence: optional\n---\n",
            if primary { "primary" } else { "subagent" },
            primary
        );
        let _ = writeln!(
            body,
            "# Agent {i}\n\nYou are `{{{{ agent }}}}`. Correlation: `{{{{ correlation_id }}}}`.\n"
        );
        for s in 0..20 {
            let _ = writeln!(body, "## Section {s}\n\nSome prose about step {s}, with **emphasis** and `code`.\n- a list item\n- another item\n");
        }
        if primary {
            let target = (i + 1) % n;
            let _ = writeln!(
                body,
                "Delegate to `generated/agent-{target:04}` when needed.\n\n```\ntask({{\n  subagent_type: \"generated/agent-{target:04}\",\n  description: \"d\",\n  prompt: \"p\"\n}})\n```"
            );
        }
        std::fs::write(agent_dir.join(format!("agent-{i:04}.md")), body).expect("write");
    }
    dir
}

fn bench(c: &mut Criterion) {
    let dir = corpus(1000);
    let project = Project::open(dir.path()).expect("project");
    let set = agent::load(&project, &LoadOptions::default());
    assert_eq!(set.len(), 1000, "{:?}", set.diagnostics.first());
    // Warnings are expected (orphans, prompts without an envelope template): the rules do real work.
    assert_eq!(
        switchboard::lint::exit_code(&switchboard::lint::lint(&set)),
        0
    );
    let mut group = c.benchmark_group("load");
    group.sample_size(20);
    group.bench_function("load_and_lint_1000_agents", |b| {
        b.iter(|| {
            let set = agent::load(&project, &LoadOptions::default());
            switchboard::lint::lint(&set).len()
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
