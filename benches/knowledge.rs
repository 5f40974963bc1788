//! The knowledge store: analyse-and-store throughput on the offline model (through the runtime,
//! as `switchboard knowledge analyze` runs it), recall latency on a store of 100,000 notes
//! (p50/p99 printed from 2,000 timed queries, plus criterion's estimate), and the unchanged-file
//! check `analyze_file` makes before anything else (read, hash, indexed lookup).
//!
//! Run: `cargo bench --bench knowledge -- --warm-up-time 1 --measurement-time 3`.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use switchboard::agent::{load, LoadOptions};
use switchboard::config::Config;
use switchboard::knowledge::extraction::{Extraction, Lines, Note};
use switchboard::knowledge::source::prepare;
use switchboard::knowledge::{Limits, Store};
use switchboard::model::{ProviderContext, Registry};
use switchboard::project::Project;
use switchboard::runtime::{RunOptions, Session};

const NOTES: usize = 100_000;
const NOTES_PER_SOURCE: usize = 100;

/// A deterministic pseudo-random sequence (no dependency, same store every run).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

/// A made-up word: syllables from `n`, so 50k distinct words.
fn word(n: u64) -> String {
    const SYL: &[&str] = &[
        "ka", "lo", "mi", "ne", "su", "ta", "ri", "po", "ve", "da", "gu", "ze", "bo", "fi", "ha",
        "ju", "xe", "wa", "yo", "qi",
    ];
    let mut n = n;
    let mut w = String::new();
    for _ in 0..4 {
        w.push_str(SYL[(n % 20) as usize]);
        n /= 20;
    }
    w
}

fn project_with_analyzer() -> (tempfile::TempDir, Project) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("agent")).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("agent/file-analyzer.md"),
        dir.path().join("agent/file-analyzer.md"),
    )
    .unwrap();
    let p = Project::open(dir.path()).unwrap();
    (dir, p)
}

/// Markdown and Rust files, about 1 MB together.
fn write_corpus(root: &Path) -> (Vec<String>, u64) {
    let mut names = Vec::new();
    let mut bytes = 0;
    for i in 0..20 {
        let md: String = (0..60)
            .map(|s| {
                format!(
                    "## Section {s} of doc {i}\n\nThe {w} component keeps {x} records. We chose {w} because it is simple.\n\n| term | meaning |\n| --- | --- |\n| `{x}` | a record of {w} |\n\n{}\n\n",
                    "Plain prose follows here to fill the section. ".repeat(6),
                    w = word(i * 100 + s),
                    x = word(i * 1000 + s + 7),
                )
            })
            .collect();
        let rs: String = (0..200)
            .map(|s| {
                format!(
                    "/// Handles {w} for the store.\npub fn handle_{s}(input: &str) -> Result<u32, Error> {{\n    let n = input.len();\n    Ok(n as u32 + {s})\n}}\n\n",
                    w = word(i * 500 + s)
                )
            })
            .collect();
        for (name, text) in [(format!("docs/d{i}.md"), md), (format!("src/m{i}.rs"), rs)] {
            let path = root.join(&name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            bytes += text.len() as u64;
            std::fs::write(path, text).unwrap();
            names.push(name);
        }
    }
    (names, bytes)
}

fn session(p: &Project) -> Session {
    let agents = Arc::new(load(p, &LoadOptions::default()));
    let registry = Arc::new(Registry::with_builtins(ProviderContext::default()));
    Session::for_agent(
        p.clone(),
        agents,
        Config::default(),
        registry,
        RunOptions::default(),
        "file-analyzer",
        "bench",
    )
    .unwrap()
}

fn analyse_throughput(c: &mut Criterion) {
    let (dir, p) = project_with_analyzer();
    let (names, bytes) = write_corpus(dir.path());
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut g = c.benchmark_group("knowledge");
    g.throughput(Throughput::Bytes(bytes));
    g.sample_size(10);
    g.bench_function("analyse_and_store_1MB_offline", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                // A fresh store each time, so every file is analysed (not answered from the store).
                let _ = std::fs::remove_dir_all(dir.path().join(".switchboard"));
                let s = session(&p);
                let clock = Instant::now();
                let (results, _) = rt.block_on(s.analyse_files(&names, "", &|_, _, _| {}));
                total += clock.elapsed();
                assert!(results.iter().all(|r| r.as_ref().is_ok_and(|f| !f.reused)));
            }
            total
        })
    });
    g.finish();
    eprintln!("corpus: {} files, {bytes} bytes", names.len());
}

/// A store of [`NOTES`] distinct notes over 1,000 sources.
fn big_store() -> (tempfile::TempDir, Project, Store) {
    let dir = tempfile::tempdir().unwrap();
    let p = Project::open(dir.path()).unwrap();
    let mut store = Store::open(&p).unwrap();
    std::fs::write(dir.path().join("seed.txt"), "seed\n").unwrap();
    let mut file = prepare(&p, "seed.txt", &Limits::default(), None).unwrap();
    let mut rng = Lcg(42);
    let clock = Instant::now();
    for s in 0..NOTES / NOTES_PER_SOURCE {
        file.path = format!("corpus/f{s}.md");
        file.checksum = format!("sha256:{s:064x}");
        let notes = (0..NOTES_PER_SOURCE)
            .map(|i| Note {
                kind: ["fact", "heading", "symbol", "decision"][i % 4].into(),
                text: (0..12)
                    .map(|_| word(rng.next() % 50_000))
                    .collect::<Vec<_>>()
                    .join(" "),
                lines: Lines {
                    start: i as u32 + 1,
                    end: i as u32 + 1,
                },
            })
            .collect();
        let ex = Extraction {
            notes,
            ..Default::default()
        };
        store
            .record(
                &file,
                "",
                "offline/default",
                "2026-11-23T00:00:00Z",
                &ex,
                None,
                "",
            )
            .unwrap();
    }
    eprintln!(
        "built a store of {NOTES} notes in {:.1} s",
        clock.elapsed().as_secs_f64()
    );
    (dir, p, store)
}

fn recall_latency(c: &mut Criterion) {
    let (_dir, _p, store) = big_store();
    let mut rng = Lcg(7);
    let mut query = || {
        (0..3)
            .map(|_| word(rng.next() % 50_000))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut times: Vec<Duration> = (0..2_000)
        .map(|_| {
            let q = query();
            let clock = Instant::now();
            let hits = store.recall(&q, None, None, 8).unwrap();
            let t = clock.elapsed();
            assert!(hits.len() <= 8);
            t
        })
        .collect();
    times.sort();
    let pct = |p: f64| times[((times.len() as f64 * p) as usize).min(times.len() - 1)];
    eprintln!(
        "recall over {NOTES} notes, 2000 queries of 3 words: p50 {:?}, p99 {:?}, max {:?}",
        pct(0.50),
        pct(0.99),
        times[times.len() - 1]
    );
    c.bench_function("knowledge/recall_100k_notes", |b| {
        b.iter(|| store.recall(&query(), None, None, 8).unwrap())
    });
}

fn unchanged_check(c: &mut Criterion) {
    let (dir, p) = project_with_analyzer();
    let text: String = (0..300)
        .map(|i| format!("line {i} of a 10 kB file\n"))
        .collect();
    std::fs::write(dir.path().join("f.md"), &text).unwrap();
    let limits = Limits::default();
    let mut store = Store::open(&p).unwrap();
    let file = prepare(&p, "f.md", &limits, None).unwrap();
    store
        .record(
            &file,
            "",
            "offline/default",
            "2026-11-23T00:00:00Z",
            &Extraction::default(),
            None,
            "s",
        )
        .unwrap();
    c.bench_function("knowledge/unchanged_file_check_10kB", |b| {
        b.iter(|| {
            let f = prepare(&p, "f.md", &limits, None).unwrap();
            assert!(store.hit(&f.path, &f.checksum, "").unwrap().is_some());
        })
    });
}

criterion_group!(benches, unchanged_check, recall_latency, analyse_throughput);
criterion_main!(benches);
