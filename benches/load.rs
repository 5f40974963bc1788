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

/// Adds `n` thoughts documents to `dir`; every tenth cites the title line of an agent file with a
/// correct excerpt, so the stale-evidence pass reads and verifies real citations.
fn thoughts(dir: &std::path::Path, n: usize) {
    let base = dir.join("thoughts/shared/research");
    std::fs::create_dir_all(&base).expect("mkdir");
    for i in 0..n {
        let mut doc = format!(
            "---\ndate: 2026-11-21\nstatus: active\ntopic: \"generated {i}\"\ntags: [bench]\n---\n\n# Generated {i}\n\n"
        );
        for s in 0..8 {
            let _ = writeln!(
                doc,
                "## Part {s}\n\nWe decided that part {s} of document {i} MUST stay small.\n"
            );
        }
        if i % 10 == 0 {
            let target = (i / 10) % 1000;
            let _ = writeln!(
                doc,
                "## Findings\n\n- **Evidence**: `agent/generated/agent-{target:04}.md:20-20`\n- **Excerpt**:\n  ```markdown\n  # Agent {target}\n  ```"
            );
        }
        std::fs::write(base.join(format!("2026-11-21-doc-{i:05}.md")), doc).expect("write");
    }
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

    // The prompt-author goal: 1,000 agents and 5,000 thoughts documents, everything lint does
    // (including the stale-evidence pass). `--watch` re-runs exactly this pass after a change.
    thoughts(dir.path(), 5000);
    let findings = switchboard::lint::lint_project(&project, &set);
    assert!(
        !findings
            .iter()
            .any(|d| d.code.starts_with("excerpt/") || d.code.starts_with("evidence/")),
        "generated citations must verify: {:?}",
        findings
            .iter()
            .find(|d| d.code.starts_with("excerpt/") || d.code.starts_with("evidence/"))
    );
    group.bench_function("lint_project_1000_agents_5000_documents", |b| {
        b.iter(|| {
            let set = agent::load(&project, &LoadOptions::default());
            switchboard::lint::lint_project(&project, &set).len()
        })
    });

    // `lint --watch`: after one document and one agent change, the re-lint of the same corpus
    // (a warm `Linter`, which re-parses only files whose stamp changed).
    let mut linter = switchboard::lint::Linter::new(project.clone(), LoadOptions::default());
    let before = linter.run().len();
    assert_eq!(before, findings.len(), "cached and one-shot passes agree");
    let doc = dir
        .path()
        .join("thoughts/shared/research/2026-11-21-doc-00007.md");
    let agent_file = dir.path().join("agent/generated/agent-0007.md");
    let (doc_text, agent_text) = (
        std::fs::read_to_string(&doc).expect("doc"),
        std::fs::read_to_string(&agent_file).expect("agent"),
    );
    let mut flip = false;
    group.bench_function("watch_relint_after_one_change", |b| {
        b.iter(|| {
            flip = !flip;
            let suffix = if flip { "\nEdited.\n" } else { "" };
            std::fs::write(&doc, format!("{doc_text}{suffix}")).expect("write");
            std::fs::write(&agent_file, format!("{agent_text}{suffix}")).expect("write");
            linter.run().len()
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
