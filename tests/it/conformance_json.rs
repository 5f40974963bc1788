//! The JSON half of the conformance corpus: every answer under `tests/conformance/json` must
//! yield exactly the rule codes its MANIFEST line lists (errors and warnings), and an unusable
//! answer must give the fallback reason the line names. The default contract is the one
//! agent/analyst.md ships, so the corpus also pins the analyst's rules.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use switchboard::contract::{check_json_detailed, Contract, ContractDecl};
use switchboard::project::Project;

use crate::support::fs as support_fs;
use support_fs::copy_tree;

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance")
}

fn project() -> (tempfile::TempDir, Project) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    copy_tree(&corpus().join("root"), &root);
    let project = Project::open(&root).unwrap();
    (dir, project)
}

/// The contract agent/analyst.md declares.
fn analyst_contract() -> Contract {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("agent/analyst.md"))
            .unwrap();
    let yaml = text
        .strip_prefix("---\n")
        .and_then(|t| t.split_once("\n---\n"))
        .unwrap()
        .0;
    let fm: serde_json::Value = serde_saphyr::from_str(yaml).unwrap();
    let decl: ContractDecl = serde_json::from_value(fm["contract"].clone()).unwrap();
    Contract::resolve(&decl).unwrap()
}

fn contract(name: &str) -> Contract {
    if name == "analyst" {
        return analyst_contract();
    }
    let yaml = std::fs::read_to_string(corpus().join(name)).unwrap();
    let decl: ContractDecl = serde_saphyr::from_str(&yaml).unwrap();
    Contract::resolve(&decl).unwrap()
}

struct Case {
    file: String,
    contract: String,
    fallback: Option<String>,
    expect: BTreeSet<String>,
}

fn manifest() -> Vec<Case> {
    crate::support::manifest::read(&corpus().join("json"), ".json")
        .into_iter()
        .map(|line| {
            let mut case = Case {
                file: line.file,
                contract: "analyst".into(),
                fallback: None,
                expect: line.expect,
            };
            for (k, v) in line.options {
                match k.as_str() {
                    "contract" => case.contract = v,
                    "fallback" => case.fallback = Some(v),
                    other => panic!("unknown MANIFEST option {other}"),
                }
            }
            case
        })
        .collect()
}

#[test]
fn json_answers_yield_their_codes_and_fallback_reasons() {
    let (_dir, project) = project();
    let cases = manifest();
    assert!(cases.len() >= 30, "only {} JSON cases", cases.len());
    let mut failures = String::new();
    for case in &cases {
        let text = std::fs::read_to_string(corpus().join("json").join(&case.file)).unwrap();
        let contract = contract(&case.contract);
        let check = check_json_detailed(&text, &contract, &project);
        let got: BTreeSet<String> = check
            .report
            .violations
            .iter()
            .map(|v| v.code.to_string())
            .collect();
        let reason = check.reason.map(|r| r.as_str().to_string());
        if got != case.expect || reason != case.fallback {
            failures.push_str(&format!(
                "\n=== json/{}: expected {:?} (fallback {:?}), got {:?} (fallback {:?})\n{}",
                case.file,
                case.expect,
                case.fallback,
                got,
                reason,
                check.report.render(&case.file, &text, false)
            ));
        }
        assert_eq!(
            check.report.is_conformant(),
            case.fallback.is_none(),
            "{}",
            case.file
        );
        for v in &check.report.violations {
            assert!(v.line >= 1 && v.column >= 1, "{}: {v:?}", case.file);
            let span = v
                .span
                .clone()
                .expect("a checked answer's problem has a span");
            assert!(text.get(span).is_some(), "{}: {v:?}", case.file);
        }
        let first = check.report.errors().next().map(|v| v.code.clone());
        if let Some(first) = first {
            let prompt = check.report.repair_prompt();
            assert!(prompt.contains(&format!("[{first}]")), "{prompt}");
            assert!(prompt.contains("exactly one JSON object"), "{prompt}");
        }
    }
    assert!(failures.is_empty(), "{failures}");
}

#[test]
fn the_analysts_fallback_validates_against_its_own_contract() {
    let (_dir, project) = project();
    let contract = analyst_contract();
    let json = contract.json.as_ref().unwrap();
    let value = json
        .render_fallback(&serde_json::json!({"agent": "analyst", "task": "t"}))
        .unwrap()
        .unwrap();
    assert!(value["note"].as_str().unwrap().contains("`analyst`"));
    let text = serde_json::to_string_pretty(&value).unwrap();
    let check = check_json_detailed(&text, &contract, &project);
    assert!(check.report.violations.is_empty(), "{:?}", check.report);
}

/// The seed's source rules, one request type at a time: status requests must use `db` and never
/// `doc` (a `doc` next to `db` is sanitized away, `doc` alone conflicts); design, how-to and
/// definition requests need `doc` or `policy`, design ones `code` too; casual requests need none.
#[test]
fn every_request_types_source_rules() {
    let (_dir, project) = project();
    let contract = analyst_contract();
    let judge = |request_type: &str, sources: &[&str]| {
        let track = if request_type == "CASUAL" {
            "FAST"
        } else {
            "QUALITY"
        };
        let text = serde_json::json!({
            "intent": "x", "request_type": request_type, "track": track,
            "required_sources": sources, "missing_info_questions": [],
            "expected_output_schema": "answer_v1_markdown"
        })
        .to_string();
        let c = check_json_detailed(&text, &contract, &project);
        let kept = c.value.as_ref().map(|v| v["required_sources"].clone());
        (c.reason.map(|r| r.as_str()), kept, c.sanitized.len())
    };
    for t in ["STATUS_METRIC", "STATUS_SUMMARY", "STATUS_LIST"] {
        assert_eq!(judge(t, &["db"]).0, None, "{t}");
        let (reason, kept, sanitized) = judge(t, &["db", "doc"]);
        assert_eq!((reason, sanitized), (None, 1), "{t}");
        assert_eq!(kept.unwrap(), serde_json::json!(["db"]));
        assert_eq!(judge(t, &["doc"]).0, Some("conflict"), "{t}");
        assert_eq!(judge(t, &["policy"]).0, Some("conflict"), "{t}");
    }
    for t in ["HOWTO_POLICY", "DATA_DEFINITION"] {
        assert_eq!(judge(t, &["doc"]).0, None, "{t}");
        assert_eq!(judge(t, &["policy"]).0, None, "{t}");
        assert_eq!(judge(t, &["code"]).0, Some("conflict"), "{t}");
    }
    // A design question about the project is answered from its code as well as its records:
    // the 1.5B analyst sent "Where is the retry policy for model requests decided?" to `doc`
    // alone, and the researcher could not reach the code that decides it.
    assert_eq!(judge("DESIGN_ARCH", &["doc", "code"]).0, None);
    assert_eq!(judge("DESIGN_ARCH", &["code", "policy"]).0, None);
    for wrong in [&["doc"][..], &["policy"], &["code"], &["doc", "policy"]] {
        assert_eq!(judge("DESIGN_ARCH", wrong).0, Some("conflict"), "{wrong:?}");
    }
    for t in ["TROUBLESHOOTING", "KNOWLEDGE_QA"] {
        assert_eq!(judge(t, &["code", "db"]).0, None, "{t}");
        assert_eq!(judge(t, &["doc", "neo4j"]).0, None, "{t}");
        assert_eq!(judge(t, &["web"]).0, Some("schema"), "{t}");
    }
    assert_eq!(judge("CASUAL", &[]).0, None);
    assert_eq!(judge("CASUAL", &["doc"]).0, Some("conflict"));
    // The repair says which sources would pass and why, not only where the rule is (the 1.5B
    // analyst sent `["code"]` back three times under the bare schema path).
    let text = r#"{"intent": "x", "request_type": "DESIGN_ARCH", "track": "QUALITY", "required_sources": ["code"], "missing_info_questions": [], "expected_output_schema": "answer_v1_markdown"}"#;
    let repair = check_json_detailed(text, &contract, &project)
        .report
        .repair_prompt();
    assert!(
        repair.contains(
            "field `/required_sources` must contain `doc`, or contain `policy`, because \
             `/request_type` is one of `DESIGN_ARCH`, `HOWTO_POLICY`, `DATA_DEFINITION`; it \
             must also contain `code`, because `/request_type` is `DESIGN_ARCH`"
        ),
        "{repair}"
    );
}
