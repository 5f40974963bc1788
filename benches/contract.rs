//! Contract checker benchmarks (numbers in BENCHMARKS.md).
//!
//! - `parse_validate/*`: throughput of parse + validate on answers without evidence (no disk).
//! - `check_with_evidence/10k_answers`: 10,000 typical analyzer answers, each with evidence, over
//!   a generated fixture tree; every iteration uses a fresh `FileCache`, so each cited file is read
//!   once per iteration, as in one `switchboard check` run.
//! - `repeated_tags/check_and_render/{10000,80000}`: an answer with that many extra `<answer>`
//!   tags on one line, checked and rendered for a person; the two must scale linearly.
//!
//! Each group runs twice: `wall/…` measures wall-clock time, `cpu/…` the benchmark thread's CPU
//! time (`CLOCK_THREAD_CPUTIME_ID`), which is what "per core" means on a shared, busy machine.
//!
//! - `json_contract/*`: a 2 KB JSON plan against a compiled Draft 2020-12 schema: the validator
//!   alone, and the whole `format: json` check (guard, spans, sanitize, schema).
//!
//! `cargo bench --bench contract -- --warm-up-time 1 --measurement-time 3`

use criterion::measurement::{Measurement, ValueFormatter, WallTime};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::fmt::Write as _;
use std::hint::black_box;
use switchboard::contract::{
    check, check_json_detailed, parse, CheckContext, Contract, ContractDecl, FileCache,
};
use switchboard::project::Project;

const DOCS: usize = 20;
const DOC_LINES: usize = 200;

fn doc_line(doc: usize, line: usize) -> String {
    match line % 7 {
        0 => String::new(),
        3 => format!("  - item {line} of document {doc}: keep the indentation"),
        _ => format!("Document {doc}, line {line}: the service MUST keep tokens for 24 hours."),
    }
}

/// A project with `DOCS` documents of `DOC_LINES` lines each.
fn fixture() -> (tempfile::TempDir, Project) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("thoughts/shared/specs")).unwrap();
    for d in 0..DOCS {
        let mut text = String::new();
        for l in 1..=DOC_LINES {
            text.push_str(&doc_line(d, l));
            text.push('\n');
        }
        std::fs::write(
            dir.path()
                .join(format!("thoughts/shared/specs/doc-{d:02}.md")),
            text,
        )
        .unwrap();
    }
    let project = Project::open(dir.path()).unwrap();
    (dir, project)
}

fn frontmatter(i: usize, doc: usize) -> String {
    format!(
        "---\nmessage_id: thoughts-2026-01-19-{:03}\ncorrelation_id: research-auth-2026-01-19\n\
         timestamp: 2026-01-19T14:30:00Z\nmessage_type: DOCUMENT_ANALYSIS_RESPONSE\n\
         source_document: thoughts/shared/specs/doc-{doc:02}.md\ndocument_date: 2026-01-15\n\
         document_status: active\nreliability: High\n---\n\n",
        i % 1000 + 1
    )
}

const THINKING: &str =
    "<thinking>\nThe document is active and recent. Signal density is moderate: \
    three items in two hundred lines.\nI checked the lifetime against the code; it matches.\n\
    </thinking>\n\n";

/// A typical analyzer answer: metadata, three signal items with evidence, verification notes.
fn answer_with_evidence(i: usize) -> String {
    let doc = i % DOCS;
    let mut s = frontmatter(i, doc);
    s.push_str(THINKING);
    let _ = write!(
        s,
        "<answer>\n## Analysis: doc-{doc:02}.md\n\n### Metadata\n- **Date**: 2026-01-15\n\
         - **Status**: active\n- **Reliability**: High (checked against the code)\n\n\
         ### Extracted Signal\n\n"
    );
    for (k, kind) in ["Decision", "Constraint", "Spec"].iter().enumerate() {
        let first = 1 + (i * 7 + k * 53) % (DOC_LINES - 6);
        let last = first + 2;
        let _ = write!(
            s,
            "#### {kind}: item {k}\n- **Evidence**: `thoughts/shared/specs/doc-{doc:02}.md:{first}-{last}`\n\
             - **Excerpt**:\n  ```markdown\n"
        );
        for l in first..=last {
            let line = doc_line(doc, l);
            if line.is_empty() {
                s.push('\n');
            } else {
                let _ = writeln!(s, "  {line}");
            }
        }
        s.push_str("  ```\n\n");
    }
    s.push_str("### Verification Notes\n- Lifetime checked against `src/auth/token.ts:3`: matches.\n</answer>\n");
    s
}

/// The same shape without Evidence items: the signal is summarised in prose.
fn answer_without_evidence(i: usize, paragraphs: usize) -> String {
    let mut s = frontmatter(i, 0);
    s.push_str(THINKING);
    s.push_str(
        "<answer>\n## Analysis: doc-00.md\n\n### Metadata\n- **Date**: 2026-01-15\n\
        - **Status**: active\n- **Reliability**: Medium (not checked against code)\n\n\
        ### Extracted Signal\n\n",
    );
    for p in 0..paragraphs {
        let _ = write!(
            s,
            "Paragraph {p}: the service issues *stateless* tokens, signed with `RS256`, valid for \
             at most 24 hours; refresh tokens live up to **30 days** and are stored hashed.\n\n\
             - point one about `jwks.json`\n- point two about key rotation\n\n"
        );
        if p % 4 == 3 {
            s.push_str("```json\n{\"sub\": \"user-id\", \"exp\": 1700000000}\n```\n\n");
        }
    }
    s.push_str("### Verification Notes\n- Not checked against code.\n</answer>\n");
    s
}

/// CPU time of the calling thread (`CLOCK_THREAD_CPUTIME_ID`), in nanoseconds.
struct CpuTime {
    wall: WallTime,
}

fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant the kernel knows.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

impl Measurement for CpuTime {
    type Intermediate = u64;
    type Value = u64;

    fn start(&self) -> u64 {
        thread_cpu_ns()
    }
    fn end(&self, start: u64) -> u64 {
        thread_cpu_ns().saturating_sub(start)
    }
    fn add(&self, a: &u64, b: &u64) -> u64 {
        a + b
    }
    fn zero(&self) -> u64 {
        0
    }
    fn to_f64(&self, v: &u64) -> f64 {
        *v as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        self.wall.formatter()
    }
}

fn bench_parse_validate<M: Measurement>(c: &mut Criterion<M>, clock: &str) {
    let (_dir, project) = fixture();
    let files = FileCache::new();
    let ctx = CheckContext::new(&project, &files);
    let generic = Contract::envelope();
    let mut group = c.benchmark_group(format!("{clock}/parse_validate"));
    for paragraphs in [4usize, 64] {
        let text = answer_without_evidence(1, paragraphs);
        assert!(check(&text, &generic, &ctx).is_conformant());
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_with_input(BenchmarkId::new("parse", text.len()), &text, |b, text| {
            b.iter(|| parse(black_box(text)).is_ok())
        });
        group.bench_with_input(
            BenchmarkId::new("check_envelope_contract", text.len()),
            &text,
            |b, text| b.iter(|| check(black_box(text), &generic, &ctx).is_conformant()),
        );
    }
    group.finish();
}

fn bench_with_evidence<M: Measurement>(c: &mut Criterion<M>, clock: &str) {
    let (_dir, project) = fixture();
    let answers: Vec<String> = (0..10_000).map(answer_with_evidence).collect();
    let bytes: usize = answers.iter().map(String::len).sum();
    let contract = Contract::document_analysis();
    {
        let files = FileCache::new();
        let ctx = CheckContext::new(&project, &files);
        for a in &answers {
            let report = check(a, &contract, &ctx);
            assert!(
                report.is_conformant(),
                "{}",
                report.render("bench", a, false)
            );
        }
        assert_eq!(files.reads(), DOCS);
    }
    let mut group = c.benchmark_group(format!("{clock}/check_with_evidence"));
    group.sample_size(10);
    group.throughput(Throughput::Bytes(bytes as u64));
    group.bench_function("10k_answers", |b| {
        b.iter(|| {
            let files = FileCache::new();
            let ctx = CheckContext::new(&project, &files);
            let ok = answers
                .iter()
                .filter(|a| check(a, &contract, &ctx).is_conformant())
                .count();
            assert_eq!(ok, answers.len());
        })
    });
    group.finish();
}

/// An answer with `n` extra `<answer>` tags on one line: every one is a violation on the same
/// long line, the case that used to be quadratic (issue 17, item 16).
fn repeated_tags(n: usize) -> String {
    format!(
        "{}<thinking>\nt\n</thinking>\n\n<answer>\nx\n</answer>\n{}\n",
        frontmatter(0, 0),
        "<answer>".repeat(n)
    )
}

fn bench_repeated_tags<M: Measurement>(c: &mut Criterion<M>, clock: &str) {
    let (_dir, project) = fixture();
    let generic = Contract::envelope();
    let mut group = c.benchmark_group(format!("{clock}/repeated_tags"));
    group.sample_size(10);
    for n in [10_000usize, 80_000] {
        let text = repeated_tags(n);
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::new("check_and_render", n), &text, |b, text| {
            b.iter(|| {
                let files = FileCache::new();
                let ctx = CheckContext::new(&project, &files);
                let report = check(black_box(text), &generic, &ctx);
                report.render("answer.md", text, false).len()
            })
        });
    }
    group.finish();
}

/// A `format: json` plan contract like agent/analyst.md's (if/then source rules, enums,
/// maxItems, a sanitize rule), compiled once before measuring, as the runtime does per agent.
fn json_contract() -> Contract {
    let yaml = r#"
format: json
name: plan
sanitize:
  - {remove: doc, from: /required_sources, when: {/request_type: [STATUS_METRIC]}}
schema:
  type: object
  additionalProperties: false
  required: [intent, request_type, track, required_sources, missing_info_questions, expected_output_schema]
  properties:
    intent: {type: string, pattern: "^[a-z][a-z0-9_]*$"}
    request_type: {enum: [STATUS_METRIC, STATUS_SUMMARY, STATUS_LIST, HOWTO_POLICY, DESIGN_ARCH, DATA_DEFINITION, TROUBLESHOOTING, KNOWLEDGE_QA, CASUAL]}
    track: {enum: [FAST, QUALITY]}
    required_sources: {type: array, uniqueItems: true, items: {enum: [db, doc, code, policy, neo4j]}}
    missing_info_questions: {type: array, maxItems: 1, items: {type: string, minLength: 5}}
    expected_output_schema: {type: string}
    notes: {type: array, items: {type: string, maxLength: 200}}
  allOf:
    - if: {properties: {request_type: {enum: [STATUS_METRIC, STATUS_SUMMARY, STATUS_LIST]}}, required: [request_type]}
      then: {properties: {required_sources: {contains: {const: db}, not: {contains: {const: doc}}}}}
    - if: {properties: {track: {const: FAST}}, required: [track]}
      then: {properties: {missing_info_questions: {maxItems: 0}}}
"#;
    let decl: ContractDecl = serde_saphyr::from_str(yaml).expect("bench contract");
    Contract::resolve(&decl).expect("bench contract resolves")
}

/// A plan of about 2 KB: the six fields and 25 short notes.
fn json_answer() -> String {
    let notes: Vec<String> = (0..25)
        .map(|i| format!("note {i}: the numbers come from the sprint board, not from the docs"))
        .collect();
    let v = serde_json::json!({
        "intent": "sprint_completion_rate",
        "request_type": "STATUS_METRIC",
        "track": "QUALITY",
        "required_sources": ["db"],
        "missing_info_questions": [],
        "expected_output_schema": "status_v1_json",
        "notes": notes,
    });
    serde_json::to_string_pretty(&v).expect("serializable")
}

fn bench_json<M: Measurement>(c: &mut Criterion<M>, clock: &str) {
    let (_dir, project) = fixture();
    let contract = json_contract();
    let text = json_answer();
    assert!((1900..2300).contains(&text.len()), "{} bytes", text.len());
    let first = check_json_detailed(&text, &contract, &project);
    assert!(first.report.violations.is_empty(), "{:?}", first.report);
    let value = first.value.expect("parsed");
    let validator = contract
        .json
        .as_ref()
        .expect("json contract")
        .validator(&project)
        .expect("compiles");
    let mut group = c.benchmark_group(format!("{clock}/json_contract"));
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.bench_function("validate_compiled_2kb", |b| {
        b.iter(|| validator.0.is_valid(black_box(&value)))
    });
    group.bench_function("check_json_2kb", |b| {
        b.iter(|| {
            check_json_detailed(black_box(&text), &contract, &project)
                .report
                .is_conformant()
        })
    });
    group.finish();
}

fn wall_benches(c: &mut Criterion) {
    bench_parse_validate(c, "wall");
    bench_with_evidence(c, "wall");
    bench_repeated_tags(c, "wall");
    bench_json(c, "wall");
}

fn cpu_benches(c: &mut Criterion<CpuTime>) {
    bench_parse_validate(c, "cpu");
    bench_with_evidence(c, "cpu");
    bench_repeated_tags(c, "cpu");
    bench_json(c, "cpu");
}

fn cpu_criterion() -> Criterion<CpuTime> {
    Criterion::default().with_measurement(CpuTime { wall: WallTime })
}

criterion_group!(wall, wall_benches);
criterion_group! {
    name = cpu;
    config = cpu_criterion();
    targets = cpu_benches
}
criterion_main!(wall, cpu);
