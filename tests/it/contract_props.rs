//! Property tests: the parser and checker never panic and always produce a consistent report, on
//! arbitrary text, on soups of envelope tokens, and on mutations of the valid corpus.
//!
//! The case count comes from `PROPTEST_CASES` (default 256). The recorded million-case run:
//! `PROPTEST_CASES=1000000 cargo test --release --test contract_props` (see BENCHMARKS.md).

use proptest::prelude::*;
use std::path::Path;
use std::sync::OnceLock;
use switchboard::contract::{check, parse, CheckContext, Contract, Envelope, FileCache, Report};
use switchboard::markdown::LineIndex;
use switchboard::problem::Severity;
use switchboard::project::Project;

fn corpus() -> &'static Path {
    static DIR: OnceLock<std::path::PathBuf> = OnceLock::new();
    DIR.get_or_init(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance"))
}

fn project() -> &'static Project {
    static P: OnceLock<Project> = OnceLock::new();
    P.get_or_init(|| Project::open(corpus().join("root")).unwrap())
}

fn files() -> &'static FileCache {
    static F: OnceLock<FileCache> = OnceLock::new();
    F.get_or_init(FileCache::new)
}

/// The valid corpus, as seeds for mutation.
fn seeds() -> &'static [String] {
    static S: OnceLock<Vec<String>> = OnceLock::new();
    S.get_or_init(|| {
        let mut names: Vec<_> = std::fs::read_dir(corpus().join("valid"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "md"))
            .collect();
        names.sort();
        names
            .iter()
            .map(|p| std::fs::read_to_string(p).unwrap())
            .collect()
    })
}

/// Checks `text` against both built-ins, with and without expected ids, and asserts the report
/// is consistent with the text and with itself.
fn check_consistent(text: &str) {
    let strict = parse(text);
    let env = Envelope::parse_lenient(text);
    assert_eq!(strict.is_ok(), env.problems.iter().all(|p| !p.is_error()));
    for contract in [Contract::envelope(), Contract::document_analysis()] {
        let ctx = CheckContext::new(project(), files())
            .with_correlation_id("research-auth-2026-01-19")
            .with_message_id("thoughts-2026-01-19-001");
        for ctx in [CheckContext::new(project(), files()), ctx] {
            let report = check(text, &contract, &ctx);
            assert_report(text, &report);
            // Structural problems are part of every report.
            for p in &env.problems {
                assert!(report.violations.contains(p), "missing {p:?}");
            }
            // Deterministic.
            assert_eq!(report, check(text, &contract, &ctx));
        }
    }
}

fn assert_report(text: &str, report: &Report) {
    let index = LineIndex::new(text);
    for v in &report.violations {
        let span = v
            .span
            .clone()
            .expect("a checked text's problems carry a span");
        assert!(span.start <= span.end, "{v:?}");
        assert!(span.end <= text.len(), "{v:?}");
        assert!(text.is_char_boundary(span.start), "{v:?}");
        assert!(text.is_char_boundary(span.end), "{v:?}");
        assert_eq!(
            (v.line, v.column),
            index.line_col(text, span.start),
            "{v:?}"
        );
        assert!(!v.message.is_empty());
    }
    let errors = report
        .violations
        .iter()
        .filter(|v| v.severity == Severity::Error)
        .count();
    assert_eq!(report.is_conformant(), errors == 0);
    assert_eq!(report.errors().count(), errors);
    let rendered = report.render("answer.md", text, false);
    assert_eq!(rendered.is_empty(), report.violations.is_empty());
    let prompt = report.repair_prompt();
    assert_eq!(prompt.is_empty(), errors == 0);
    // Sorted by position.
    assert!(report
        .violations
        .windows(2)
        .all(|w| w[0].span.as_ref().map(|s| s.start) <= w[1].span.as_ref().map(|s| s.start)));
}

/// Pieces of envelopes, to build texts that get past the first checks.
const TOKENS: &[&str] = &[
    "---\n",
    "---\r\n",
    "\u{feff}",
    "\n",
    "\r\n",
    "message_id: thoughts-2026-01-19-001\n",
    "correlation_id: research-auth-2026-01-19\n",
    "timestamp: 2026-01-19T14:30:00Z\n",
    "timestamp: 2026-01-20T01:30:00+02:00\n",
    "message_type: DOCUMENT_ANALYSIS_RESPONSE\n",
    "source_document: thoughts/shared/specs/2026-01-15-auth-system.md\n",
    "reliability: High\n",
    "key: [a, {b: c}]\n",
    "&a x: *a\n",
    "<thinking>",
    "</thinking>",
    "<answer>",
    "</answer>",
    "<thinking>\nreasons\n</thinking>\n",
    "<answer>\n",
    "\n</answer>\n",
    "```",
    "```markdown\n",
    "~~~\n",
    "    ",
    "  ",
    "\t",
    "`",
    "- ",
    "1. ",
    "> ",
    "#### Decision: JWT\n",
    "### Spec: x\n",
    "- **Evidence**: ",
    "**Evidence:** ",
    "- **Excerpt**:\n",
    "**Decision**: ",
    "`thoughts/shared/specs/2026-01-15-auth-system.md:45-47`",
    "`docs/short.md:3`",
    "`docs/short.md:0-99999999999999999999`",
    "`../outside.md:1`",
    "`/etc/passwd:1`",
    "`src/auth/token.ts:7-11`",
    "We will use JWT tokens for stateless authentication. This decision\n",
    "<!-- ",
    " -->",
    "<div>\n",
    "é",
    "🔑",
    "\u{0}",
    "\\",
    ":",
    "*",
    "**",
    "[",
    "](",
];

fn token_soup() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            4 => prop::sample::select(TOKENS).prop_map(str::to_string),
            1 => ".{0,12}",
        ],
        0..60,
    )
    .prop_map(|parts| parts.concat())
}

#[derive(Debug, Clone)]
enum Mutation {
    FlipByte(usize, u8),
    DeleteLine(usize),
    DuplicateLine(usize),
    SwapLines(usize, usize),
    Truncate(usize),
    Insert(usize, &'static str),
    DeleteRange(usize, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::FlipByte(i, b)),
        any::<usize>().prop_map(Mutation::DeleteLine),
        any::<usize>().prop_map(Mutation::DuplicateLine),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), prop::sample::select(TOKENS)).prop_map(|(i, t)| Mutation::Insert(i, t)),
        (any::<usize>(), 0usize..64).prop_map(|(i, n)| Mutation::DeleteRange(i, n)),
    ]
}

fn apply(text: &str, m: &Mutation) -> String {
    let mut bytes = text.as_bytes().to_vec();
    let len = bytes.len().max(1);
    match *m {
        Mutation::FlipByte(i, b) => {
            if !bytes.is_empty() {
                bytes[i % len] ^= b.max(1);
            }
        }
        Mutation::Truncate(i) => bytes.truncate(i % len),
        Mutation::Insert(i, t) => {
            let at = i % (bytes.len() + 1);
            bytes.splice(at..at, t.bytes());
        }
        Mutation::DeleteRange(i, n) => {
            let at = i % len;
            let end = (at + n).min(bytes.len());
            if at < end {
                bytes.drain(at..end);
            }
        }
        Mutation::DeleteLine(_) | Mutation::DuplicateLine(_) | Mutation::SwapLines(..) => {
            let mut lines: Vec<&str> = text.split_inclusive('\n').collect();
            if lines.is_empty() {
                return text.to_string();
            }
            let n = lines.len();
            match *m {
                Mutation::DeleteLine(i) => {
                    lines.remove(i % n);
                }
                Mutation::DuplicateLine(i) => {
                    let l = lines[i % n];
                    lines.insert(i % n, l);
                }
                Mutation::SwapLines(a, b) => lines.swap(a % n, b % n),
                _ => unreachable!(),
            }
            return lines.concat();
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

proptest! {
    #[test]
    fn arbitrary_text_never_panics(text in any::<String>()) {
        check_consistent(&text);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        check_consistent(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn token_soups_never_panic(text in token_soup()) {
        check_consistent(&text);
    }

    #[test]
    fn mutated_envelopes_never_panic(
        seed in any::<prop::sample::Index>(),
        mutations in prop::collection::vec(mutation(), 1..6),
    ) {
        let seeds = seeds();
        let mut text = seeds[seed.index(seeds.len())].clone();
        for m in &mutations {
            text = apply(&text, m);
        }
        check_consistent(&text);
    }
}

#[test]
fn the_seeds_are_valid_envelopes() {
    // Mutating from valid envelopes only explores the interesting space if they parse.
    assert!(seeds().len() >= 40);
    for s in seeds() {
        assert!(parse(s).is_ok());
    }
}
