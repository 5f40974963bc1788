//! The `local` provider against a real model: SmolLM2-135M-Instruct (GGUF, fetched by
//! `bash scripts/fetch-test-model.sh` into .cache/models/). A missing model fails these tests:
//! it is never a quiet skip.
#![cfg(feature = "local")]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use switchboard::agent::{load, LoadOptions};
use switchboard::config::Config;
use switchboard::contract::{check, CheckContext, Contract, FileCache};
use switchboard::model::{
    Message, ModelError, ModelRequest, ProviderContext, Registry, ResponseContract,
};
use switchboard::project::Project;
use switchboard::runtime::events::read_log;
use switchboard::runtime::{EventKind, RunOptions, Session};

use crate::support::scripted;

const MODEL: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/.cache/models/smollm2-135m-instruct.gguf"
);

fn model_path() -> PathBuf {
    let path = PathBuf::from(MODEL);
    assert!(
        path.is_file(),
        "the test model {MODEL} is missing: run `bash scripts/fetch-test-model.sh`"
    );
    path
}

fn context(root: &Path, local: &str) -> ProviderContext {
    let mut providers = std::collections::BTreeMap::new();
    providers.insert("local".to_string(), toml::from_str(local).unwrap());
    ProviderContext {
        project_root: root.to_path_buf(),
        providers,
        stream: None,
    }
}

fn request(contract: Option<ResponseContract>, system: &str, prompt: &str) -> ModelRequest {
    ModelRequest {
        model: String::new(),
        agent: "tester".into(),
        system: system.into(),
        messages: vec![Message::user(prompt)],
        tools: Vec::new(),
        temperature: Some(0.0),
        top_p: None,
        max_tokens: Some(300),
        response_contract: contract,
    }
}

#[tokio::test]
async fn the_shipped_analyst_plans_under_its_json_grammar() {
    let model = model_path();
    let (dir, project) = scripted::project_with_analyst();
    let agents = Arc::new(load(&project, &LoadOptions::default()));
    assert!(!agents.has_errors(), "{:?}", agents.diagnostics);
    let spec = format!("local/{}", model.display());
    let registry = Registry::with_builtins(context(dir.path(), "seed = 1"));
    let options = RunOptions {
        model: Some(spec),
        ..RunOptions::default()
    };
    let session = Session::new(
        project.clone(),
        agents,
        Config::default(),
        Arc::new(registry),
        options,
        "analyst",
        "How do we rotate the API keys of the billing service?",
    )
    .unwrap();
    let outcome = session.run().await;
    let events = read_log(&outcome.events).unwrap();
    let outcomes: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ContractOutcome { outcome, .. } => Some(outcome.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(outcomes.len(), 1, "{events:#?}");
    assert!(
        outcomes[0] == "valid" || outcomes[0] == "repaired",
        "the plan did not conform: {outcomes:?}\n{events:#?}"
    );
    // The answer handed back is the model's own plan, not the declared fallback.
    let answer = outcome.answer;
    let plan: serde_json::Value = serde_json::from_str(answer.trim()).unwrap();
    assert_ne!(plan["intent"], "fallback_plan", "{plan}");
    for key in [
        "request_type",
        "track",
        "required_sources",
        "expected_output_schema",
    ] {
        assert!(plan.get(key).is_some(), "{key} missing in {plan}");
    }
}

#[tokio::test]
async fn an_envelope_answer_under_grammar_has_the_envelope_shape() {
    let model = model_path();
    let (dir, project) = scripted::project();
    let registry = Registry::with_builtins(context(dir.path(), "seed = 1"));
    let (m, _) = registry.get(&format!("local/{}", model.display())).unwrap();
    let contract = ResponseContract {
        contract: Contract::envelope(),
        message_id: "reader-2026-11-23-001".into(),
        correlation_id: "local-test-1".into(),
        timestamp: "2026-11-23T12:00:00Z".into(),
    };
    let started = std::time::Instant::now();
    let response = m
        .complete(&request(
            Some(contract.clone()),
            "You are `reader`. Answer in the envelope format.",
            "What is a README file for? Answer in one sentence.",
        ))
        .await
        .unwrap();
    assert!(
        !response.truncated,
        "cut off after {:?}:\n{}",
        started.elapsed(),
        response.content
    );
    assert!(response.usage.input_tokens > 0 && response.usage.output_tokens > 0);
    let files = FileCache::default();
    let ctx = CheckContext::new(&project, &files)
        .with_correlation_id(&contract.correlation_id)
        .with_message_id(&contract.message_id);
    let report = check(&response.content, &contract.contract, &ctx);
    assert!(
        report.violations.is_empty(),
        "{:#?}\n{}",
        report.violations,
        response.content
    );
}

#[tokio::test]
async fn without_grammar_the_same_request_is_decoded_freely() {
    // The comparison the grammar is for: the same request, decoded without it, is not held to
    // the envelope (SmolLM2 does not write one from the prompt alone).
    let model = model_path();
    let (dir, project) = scripted::project();
    let registry = Registry::with_builtins(context(dir.path(), "grammar = false\nseed = 1"));
    let (m, _) = registry.get(&format!("local/{}", model.display())).unwrap();
    let contract = ResponseContract {
        contract: Contract::envelope(),
        message_id: "reader-2026-11-23-001".into(),
        correlation_id: "local-test-1".into(),
        timestamp: "2026-11-23T12:00:00Z".into(),
    };
    let response = m
        .complete(&request(
            Some(contract.clone()),
            "You are `reader`. Answer in the envelope format.",
            "What is a README file for? Answer in one sentence.",
        ))
        .await
        .unwrap();
    let files = FileCache::default();
    let ctx = CheckContext::new(&project, &files);
    let report = check(&response.content, &contract.contract, &ctx);
    assert!(!report.violations.is_empty(), "{}", response.content);
}

#[tokio::test]
async fn missing_and_corrupt_model_files_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let registry = Registry::with_builtins(context(dir.path(), ""));
    let e = registry
        .get("local/models/nope.gguf")
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("models/nope.gguf") && e.contains("does not exist"),
        "{e}"
    );
    // GGUF magic, then garbage: llama.cpp refuses it and we say so, naming the file.
    let bad = dir.path().join("bad.gguf");
    let mut bytes = b"GGUF".to_vec();
    bytes.extend(std::iter::repeat_n(0xAB_u8, 4096));
    std::fs::write(&bad, bytes).unwrap();
    let (m, _) = registry.get("local/bad.gguf").unwrap();
    let e = m
        .complete(&request(None, "", "hi"))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("bad.gguf") && e.contains("could not load"),
        "{e}"
    );
}

#[tokio::test]
async fn a_prompt_larger_than_the_context_is_an_overflow_naming_the_file() {
    let model = model_path();
    let dir = tempfile::tempdir().unwrap();
    let registry = Registry::with_builtins(context(dir.path(), "context = 64"));
    let (m, _) = registry.get(&format!("local/{}", model.display())).unwrap();
    let long = "Tell me about the weather. ".repeat(40);
    let e = m.complete(&request(None, "", &long)).await.unwrap_err();
    assert!(matches!(e, ModelError::ContextOverflow { .. }), "{e:?}");
    let text = e.to_string();
    assert!(
        text.contains("smollm2-135m-instruct.gguf") && text.contains("[providers.local] context"),
        "{text}"
    );
}

#[test]
fn the_model_is_configured_by_name() {
    let model = model_path();
    let dir = tempfile::tempdir().unwrap();
    let registry = Registry::with_builtins(context(
        dir.path(),
        &format!("[models]\nsmol = {:?}\n", model.display().to_string()),
    ));
    let (m, name) = registry.get("local/smol").unwrap();
    assert_eq!((m.provider(), name.as_str()), ("local", "smol"));
}
