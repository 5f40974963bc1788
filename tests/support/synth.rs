//! A generated `thoughts/` corpus for benchmarks and scale tests: documents shaped like the
//! project's own (frontmatter, title, Context / Decision / Constraints / Spec sections, MUST
//! sentences, a spec table), deterministic for a given size, with one planted document that a
//! known question should find.
//!
//! Test and bench tooling, not product: `tests/it/offline_quality.rs` and `benches/offline.rs`
//! include it with `#[path]`.

use std::path::Path;

const KINDS: &[(&str, &str)] = &[
    ("decisions", "Decision"),
    ("specs", "Spec"),
    ("research", "Research"),
    ("plans", "Plan"),
    ("qa", "QA"),
    ("epics", "Epic"),
    ("missions", "Mission"),
];

const MODIFIERS: &[&str] = &[
    "incremental",
    "bounded",
    "lazy",
    "cached",
    "streaming",
    "atomic",
    "sharded",
    "versioned",
    "signed",
    "compressed",
    "batched",
    "ordered",
    "scoped",
    "typed",
    "layered",
    "pluggable",
    "retryable",
    "idempotent",
    "encrypted",
    "audited",
    "throttled",
    "pooled",
    "mirrored",
    "deferred",
    "checked",
    "pinned",
    "rotated",
    "tiered",
    "weighted",
    "cold",
    "warm",
    "portable",
    "minimal",
    "nested",
    "flat",
    "declarative",
    "hashed",
    "journaled",
    "replicated",
    "sealed",
];

const NOUNS: &[&str] = &[
    "session",
    "hop",
    "event",
    "contract",
    "envelope",
    "excerpt",
    "locator",
    "analyzer",
    "planner",
    "prompt",
    "template",
    "frontmatter",
    "permission",
    "budget",
    "retry",
    "timeout",
    "registry",
    "provider",
    "config",
    "alias",
    "workspace",
    "snapshot",
    "index",
    "cache",
    "queue",
    "scheduler",
    "worker",
    "socket",
    "buffer",
    "checksum",
    "manifest",
    "archive",
    "lockfile",
    "migration",
    "schema",
    "report",
    "trace",
    "metric",
    "counter",
    "histogram",
    "exporter",
    "plugin",
    "hook",
    "sandbox",
    "quota",
    "token",
    "cursor",
    "page",
    "batch",
    "window",
    "stream",
    "channel",
    "signal",
    "watcher",
    "ledger",
    "journal",
    "replica",
    "shard",
    "tenant",
    "profile",
];

const FILLER: &[&str] = &[
    "The team discussed several options before settling on the approach described here.",
    "Earlier prototypes showed that the simple version was fast enough for our corpus.",
    "This note records the reasoning so that later readers can follow the trade-offs.",
    "Related work in other runtimes informed the shape of the interface.",
    "We measured the behaviour on the sample project and on a larger generated tree.",
    "Nothing in this section binds the implementation; it is background only.",
];

/// Deterministic pseudo-random numbers (a 64-bit LCG), so every run builds the same corpus.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) as usize
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.next() % from.len()]
    }
}

/// The question whose answer is the planted document, and that document's path.
#[derive(Debug, Clone)]
pub struct Planted {
    pub question: String,
    pub path: String,
}

/// Writes `n` documents under `root/thoughts/shared/<kind>/` and returns the planted one.
pub fn generate(root: &Path, n: usize) -> std::io::Result<Planted> {
    let mut rng = Lcg(0x005e_ed0f_f11e);
    let planted_at = n / 2;
    let mut planted = None;
    for i in 0..n {
        let (folder, kind) = KINDS[i % KINDS.len()];
        let month = 1 + (i / 28) % 12;
        let day = 1 + i % 28;
        let date = format!("2026-{month:02}-{day:02}");
        let (m, a, b) = if i == planted_at {
            ("quasar", "ledger", "reconciliation")
        } else {
            (rng.pick(MODIFIERS), rng.pick(NOUNS), rng.pick(NOUNS))
        };
        let slug = format!("{m}-{a}-{b}-{i:04}");
        let rel = format!("thoughts/shared/{folder}/{date}-{slug}.md");
        let status = ["accepted", "active", "draft", "superseded"][rng.next() % 4];
        let mut text = format!(
            "---\ndate: {date}\nstatus: {status}\ntopic: \"{m} {a} {b}\"\ntags: [{folder}, {a}, {b}]\n---\n\n# {kind}: {m} {a} for the {b}\n\n## Context\n\n"
        );
        for _ in 0..6 {
            text.push_str(rng.pick(FILLER));
            text.push('\n');
        }
        let x = rng.pick(NOUNS);
        let y = rng.pick(MODIFIERS);
        text.push_str(&format!(
            "\n## Decision\n\nWe will use a {m} {a} for every {b}, kept beside the {x}.\nThe {y} variant was considered and rejected because it needs a daemon.\n\n## Constraints\n\n- The {a} MUST NOT grow beyond 64 entries per {b}.\n- Every {x} MUST name its {a} in the event log.\n- A {y} {b} is refused with a tool error, never silently dropped.\n\n## Spec\n\n| Setting | Default |\n| --- | --- |\n| {a} limit | 64 |\n| {b} timeout | 30 s |\n| {x} retries | 3 |\n\n## Consequences\n\n"
        ));
        for _ in 0..8 {
            text.push_str(rng.pick(FILLER));
            text.push('\n');
        }
        text.push_str("\n## Open Questions\n\n- Whether the defaults suit larger projects.\n");
        let path = root.join(&rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&path, text)?;
        if i == planted_at {
            planted = Some(Planted {
                question: "How do we do quasar ledger reconciliation?".to_string(),
                path: rel,
            });
        }
    }
    planted.ok_or_else(|| std::io::Error::other("an empty corpus has no planted document"))
}
