//! The conformance corpus: every envelope under `tests/conformance/valid` must conform, every one
//! under `tests/conformance/invalid` must yield exactly the rule codes its MANIFEST line lists.
//!
//! The fixture tree `tests/conformance/root` is copied into a temporary directory first, and the
//! symlinks the corpus needs are created there (none are committed):
//! - `alias.md` → the auth spec, inside the root (fine to cite);
//! - `link-out.md` → `../outside/secret.md` and `linked-dir` → `../outside` (never to be read).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use switchboard::contract::{
    check_envelope, CheckContext, Contract, ContractDecl, Envelope, FileCache, Report, Rule,
};
use switchboard::project::Project;

use crate::support::fs as support_fs;
use support_fs::copy_tree;

const SPEC: &str = "thoughts/shared/specs/2026-01-15-auth-system.md";

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance")
}

/// A temporary copy of the fixture root with the corpus's symlinks, and the project on it.
pub fn fixture() -> (tempfile::TempDir, Project) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    copy_tree(&corpus().join("root"), &root);
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(
        outside.join("secret.md"),
        "secret line one\nsecret line two\n",
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::symlink;
        symlink(outside.join("secret.md"), root.join("link-out.md")).unwrap();
        symlink(&outside, root.join("linked-dir")).unwrap();
        symlink(SPEC, root.join("alias.md")).unwrap();
    }
    let project = Project::open(&root).unwrap();
    (dir, project)
}

#[derive(Debug, Default)]
struct Case {
    file: String,
    contract: Option<String>,
    correlation_id: Option<String>,
    message_id: Option<String>,
    /// The prompt the answer was asked with (`template=FILE`), whose placeholders it must fill.
    template: Option<String>,
    expect: BTreeSet<String>,
}

fn manifest(dir: &str) -> Vec<Case> {
    crate::support::manifest::read(&corpus().join(dir), ".md")
        .into_iter()
        .map(|line| {
            let mut case = Case {
                file: line.file,
                expect: line.expect,
                ..Case::default()
            };
            for (k, v) in line.options {
                match k.as_str() {
                    "contract" => case.contract = Some(v),
                    "correlation-id" => case.correlation_id = Some(v),
                    "message-id" => case.message_id = Some(v),
                    "template" => case.template = Some(v),
                    other => panic!("unknown MANIFEST option {other}"),
                }
            }
            case
        })
        .collect()
}

fn contract_for(case: &Case, env: &Envelope) -> Contract {
    match &case.contract {
        None => Contract::for_message_type(env.message_type().unwrap_or("")),
        Some(name) if name.ends_with(".yaml") => {
            let yaml = std::fs::read_to_string(corpus().join(name)).unwrap();
            let decl: ContractDecl = serde_saphyr::from_str(&yaml).unwrap();
            Contract::resolve(&decl).unwrap()
        }
        Some(name) => Contract::builtin(name).unwrap(),
    }
}

fn run(dir: &str, case: &Case, project: &Project, files: &FileCache) -> (String, Report) {
    let text = std::fs::read_to_string(corpus().join(dir).join(&case.file)).unwrap();
    let env = Envelope::parse_lenient(&text);
    let contract = contract_for(case, &env);
    let template = case
        .template
        .as_ref()
        .map(|t| std::fs::read_to_string(corpus().join(t)).unwrap());
    let mut ctx = CheckContext::new(project, files);
    ctx.correlation_id = case.correlation_id.as_deref();
    ctx.message_id = case.message_id.as_deref();
    ctx.template = template.as_deref();
    let report = check_envelope(&text, &env, &contract, &ctx);
    (text, report)
}

#[test]
fn valid_envelopes_conform() {
    let (_dir, project) = fixture();
    let files = FileCache::new();
    let cases = manifest("valid");
    assert!(cases.len() >= 40, "only {} valid cases", cases.len());
    let mut failures = String::new();
    for case in &cases {
        let (text, report) = run("valid", case, &project, &files);
        if !report.violations.is_empty() {
            failures.push_str(&format!(
                "\n=== valid/{} should conform:\n{}",
                case.file,
                report.render(&case.file, &text, false)
            ));
        }
    }
    assert!(failures.is_empty(), "{failures}");
}

#[test]
fn invalid_envelopes_yield_their_codes() {
    let (_dir, project) = fixture();
    let files = FileCache::new();
    let cases = manifest("invalid");
    assert!(cases.len() >= 40, "only {} invalid cases", cases.len());
    let mut failures = String::new();
    for case in &cases {
        assert!(!case.expect.is_empty(), "{} expects no codes", case.file);
        let (text, report) = run("invalid", case, &project, &files);
        let got: BTreeSet<String> = report
            .violations
            .iter()
            .map(|v| v.code.to_string())
            .collect();
        if got != case.expect || report.is_conformant() {
            failures.push_str(&format!(
                "\n=== invalid/{}: expected {:?}, got {:?}\n{}",
                case.file,
                case.expect,
                got,
                report.render(&case.file, &text, false)
            ));
        }
        // Wrong excerpts always show the real lines; every report can be turned into a prompt.
        for v in &report.violations {
            assert!(v.line >= 1 && v.column >= 1, "{}: {v:?}", case.file);
            let span = v
                .span
                .clone()
                .expect("a checked text's problems carry a span");
            assert!(text.get(span).is_some(), "{}: {v:?}", case.file);
            if v.code == Rule::ExcerptMismatch.code() {
                assert!(v.actual.is_some(), "{}: mismatch without lines", case.file);
            }
        }
        assert!(report
            .repair_prompt()
            .contains(&format!("[{}]", report.violations[0].code)));
    }
    assert!(failures.is_empty(), "{failures}");
}

#[test]
fn cited_files_are_read_once_per_run() {
    let (_dir, project) = fixture();
    let files = FileCache::new();
    for case in &manifest("valid") {
        run("valid", case, &project, &files);
    }
    let first = files.reads();
    for case in &manifest("valid") {
        run("valid", case, &project, &files);
    }
    assert_eq!(files.reads(), first, "a second pass read files again");
    // The corpus cites 8 distinct regular files (alias.md is the spec again).
    assert!(first <= 8, "{first} reads");
}

#[test]
fn the_test_helper_passes_and_fails() {
    let (_dir, project) = fixture();
    let files = FileCache::new();
    let ctx = CheckContext::new(&project, &files);
    let good = std::fs::read_to_string(corpus().join("valid/v01-seed-example.md")).unwrap();
    switchboard::contract::assert_conforms(&good, &Contract::document_analysis(), &ctx);
    let bad =
        std::fs::read_to_string(corpus().join("invalid/i47-excerpt-from-other-lines.md")).unwrap();
    let panic = std::panic::catch_unwind(|| {
        switchboard::contract::assert_conforms(&bad, &Contract::document_analysis(), &ctx)
    })
    .unwrap_err();
    let message = panic.downcast_ref::<String>().unwrap();
    assert!(message.contains("error[excerpt/mismatch]"), "{message}");
    assert!(message.contains("= note: the lines at"), "{message}");
}

#[test]
fn every_rule_code_is_documented_and_covered() {
    let docs =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/envelope.md"))
            .unwrap();
    // JSON-contract codes are covered by the JSON corpus (tests/conformance_json.rs).
    let json_manifest = std::fs::read_to_string(corpus().join("json/MANIFEST")).unwrap();
    let expected: BTreeSet<String> = manifest("invalid")
        .into_iter()
        .flat_map(|c| c.expect)
        .chain(
            json_manifest
                .lines()
                .filter(|l| !l.trim_start().starts_with('#'))
                .filter_map(|l| l.split_once("->"))
                .flat_map(|(_, codes)| codes.split_whitespace().map(str::to_string)),
        )
        .collect();
    let problems = documented_problems();
    for rule in Rule::ALL {
        let code = rule.code();
        assert!(
            docs.contains(&format!("| `{code}` |")),
            "docs/envelope.md does not document {code}"
        );
        // A contract check reports every rule as an error, except the two JSON rules that fix
        // instead of reject (a stripped fence, a declared sanitize rule): those warn.
        let severity = if matches!(rule, Rule::JsonFenced | Rule::JsonSanitized) {
            "warning"
        } else {
            "error"
        };
        assert_eq!(
            problems.get(code).map(String::as_str),
            Some(severity),
            "docs/problems.md does not list {code} as {severity}"
        );
        // Every rule the checker can report on text is exercised by the corpus, except two that
        // need conditions a fixture cannot hold: bytes that are not UTF-8 (the CLI's rule, tested
        // in cli_check.rs) and an unreadable cited file (tested beside FileCache).
        if !matches!(rule, Rule::Encoding | Rule::FileUnreadable) {
            assert!(
                expected.contains(code),
                "no invalid envelope expects {code}"
            );
        }
    }
}

/// The rows of docs/problems.md's tables: code → severity.
fn documented_problems() -> std::collections::BTreeMap<String, String> {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/problems.md"))
            .unwrap();
    let row =
        regex::Regex::new(r"(?m)^\| `([a-z]+/[a-z0-9-]+)` \| (error|warning|note) \| \S").unwrap();
    let mut out = std::collections::BTreeMap::new();
    for cap in row.captures_iter(&text) {
        let previous = out.insert(cap[1].to_string(), cap[2].to_string());
        assert!(
            previous.is_none(),
            "docs/problems.md lists {} twice",
            &cap[1]
        );
    }
    out
}

/// Every `.rs` file under `dir`, with its text.
fn rust_sources(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            out.push((path, text));
        }
    }
}

/// Every problem code written in `src/` — the contract catalogue, the loader's and lint's codes,
/// config's — has a row in docs/problems.md, with the severity the code reports it at; and every
/// row names a code that exists.
#[test]
fn every_problem_code_in_src_is_in_problems_md() {
    let documented = documented_problems();
    let mut sources = Vec::new();
    rust_sources(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut sources,
    );

    // A code given with its severity (`Problem::new(Severity::Warning, "agent/unknown-key", …)`),
    // in any family: this is how a new family shows up.
    let with_severity = regex::Regex::new(
        r#"Severity::(Error|Warning|Note),\s*"([a-z]+/[a-z0-9]+(?:-[a-z0-9]+)*)""#,
    )
    .unwrap();
    let mut found: BTreeSet<String> = BTreeSet::new();
    for (path, text) in &sources {
        for cap in with_severity.captures_iter(text) {
            let code = &cap[2];
            let severity = cap[1].to_ascii_lowercase();
            // Test code builds problems at whatever severity it needs.
            if !text[..cap.get(0).unwrap().start()].contains("#[cfg(test)]") {
                assert_eq!(
                    documented.get(code),
                    Some(&severity),
                    "{}: {code} is reported as {severity}; docs/problems.md must list it so",
                    path.display()
                );
            }
            found.insert(code.to_string());
        }
    }
    // Any other string literal in a known family (codes chosen by a match, e.g. the delegation
    // refusals, or held in a constant, e.g. `config/invalid`).
    let families: BTreeSet<String> = documented
        .keys()
        .map(String::as_str)
        .chain(Rule::ALL.iter().map(|r| r.code()))
        .filter_map(|c| c.split('/').next())
        .map(regex::escape)
        .collect();
    let literal = regex::Regex::new(&format!(
        r#""((?:{})/[a-z0-9]+(?:-[a-z0-9]+)*)""#,
        families.into_iter().collect::<Vec<_>>().join("|")
    ))
    .unwrap();
    for (_, text) in &sources {
        found.extend(literal.captures_iter(text).map(|c| c[1].to_string()));
    }
    found.extend(Rule::ALL.iter().map(|r| r.code().to_string()));

    let missing: Vec<&String> = found
        .iter()
        .filter(|c| !documented.contains_key(*c))
        .collect();
    assert!(
        missing.is_empty(),
        "codes in src/ without a row in docs/problems.md: {missing:?}"
    );
    let stale: Vec<&String> = documented.keys().filter(|c| !found.contains(*c)).collect();
    assert!(
        stale.is_empty(),
        "docs/problems.md lists codes no longer in src/: {stale:?}"
    );
    // The scan really sees the codes of each origin.
    for code in [
        "agent/yaml",
        "delegation/missing-target",
        "config/invalid",
        "excerpt/mismatch",
    ] {
        assert!(found.contains(code), "the scan missed {code}");
    }
}
