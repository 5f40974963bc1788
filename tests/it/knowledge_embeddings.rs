//! Near-duplicate notes by meaning: `[knowledge] embeddings` names an OpenAI-compatible
//! embeddings endpoint (here a mock on 127.0.0.1 that returns vectors the test controls), and a
//! note whose vector is close to a stored note's reinforces it even when the words differ. An
//! endpoint that fails costs the vectors, never the analysis.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use switchboard::agent::{load, LoadOptions};
use switchboard::config::Config;
use switchboard::knowledge::extraction::{Extraction, Lines, Note};
use switchboard::knowledge::similar::{normalise, similarity, DUPLICATE};
use switchboard::knowledge::source::prepare;
use switchboard::knowledge::{Limits, NoteVectors, Store};
use switchboard::model::{ProviderContext, Registry};
use switchboard::project::Project;
use switchboard::runtime::analyze::{AnalyzeError, FileReport};
use switchboard::runtime::{RunOptions, Session};

use crate::support::mock::Mock;

/// Two statements of one fact in different words: text similarity alone keeps them apart.
const FIRST: &str = "The event log only ever grows at its end.";
const SECOND: &str = "Appending is the sole way records enter the journal.";
const OTHER: &str = "Sessions resume from the last completed hop.";

fn note(text: &str, line: u32) -> Note {
    Note {
        kind: "fact".into(),
        text: text.into(),
        lines: Lines {
            start: line,
            end: line,
        },
    }
}

fn project(files: &[(&str, &str)], config: &str) -> (tempfile::TempDir, Project) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("agent")).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("agent/file-analyzer.md"),
        root.join("agent/file-analyzer.md"),
    )
    .unwrap();
    for (name, text) in files {
        std::fs::write(root.join(name), text).unwrap();
    }
    std::fs::write(root.join("switchboard.toml"), config).unwrap();
    let p = Project::open(root).unwrap();
    (dir, p)
}

/// Stores `notes` (with `vectors`, when given) as the analysis of `path`.
fn store(p: &Project, s: &mut Store, path: &str, notes: Vec<Note>, vectors: Option<NoteVectors>) {
    std::fs::write(p.root().join(path), format!("{path}\n")).unwrap();
    let file = prepare(p, path, &Limits::default(), None).unwrap();
    let ex = Extraction {
        notes,
        ..Default::default()
    };
    s.record(
        &file,
        "",
        "offline/default",
        "2026-11-23T00:00:00Z",
        &ex,
        vectors.as_ref(),
        "",
    )
    .unwrap();
}

#[test]
fn near_vectors_reinforce_differently_worded_notes_and_far_vectors_add() {
    assert!(
        similarity(&normalise(FIRST), &normalise(SECOND)) < DUPLICATE,
        "the fixture must not be a text duplicate"
    );
    let (_dir, p) = project(&[], "");
    let mut s = Store::open(&p).unwrap();
    let v = |raw: Vec<Vec<f32>>| Some(NoteVectors::new("mock/e", 0.9, raw));
    store(
        &p,
        &mut s,
        "a.md",
        vec![note(FIRST, 1)],
        v(vec![vec![1.0, 0.0, 0.0]]),
    );
    // cos = 0.98 / |(0.98, 0.2, 0)| ≈ 0.98: the same note.
    store(
        &p,
        &mut s,
        "b.md",
        vec![note(SECOND, 1)],
        v(vec![vec![0.98, 0.2, 0.0]]),
    );
    // cos = 0: another note.
    store(
        &p,
        &mut s,
        "c.md",
        vec![note(OTHER, 1)],
        v(vec![vec![0.0, 1.0, 0.0]]),
    );
    let first = s.recall("event log grows", None, None, 10).unwrap();
    assert_eq!(first.len(), 1, "{first:?}");
    assert_eq!(first[0].text, FIRST);
    assert_eq!(first[0].reinforced, 1, "{first:?}");
    assert!(s
        .recall("journal appending", None, None, 10)
        .unwrap()
        .is_empty());
    assert_eq!(
        s.recall("sessions resume", None, None, 10).unwrap().len(),
        1
    );

    // The same paraphrase with a vector of another model, or with none, is not matched by
    // meaning: it is added.
    store(&p, &mut s, "d.md", vec![note(SECOND, 1)], None);
    let other_model = Some(NoteVectors::new(
        "mock/other",
        0.9,
        vec![vec![1.0, 0.0, 0.0]],
    ));
    store(&p, &mut s, "e.md", vec![note(SECOND, 2)], other_model);
    let second = s.recall("journal appending", None, None, 10).unwrap();
    assert_eq!(
        second.len(),
        1,
        "d.md adds it, e.md reinforces it by text: {second:?}"
    );
    assert_eq!(second[0].reinforced, 1);
}

/// A mock embeddings endpoint: texts mentioning how the log grows share one direction; every
/// other text gets a direction of its own, so no two other notes are near.
fn embedder(mock: &Mock) {
    let seen: Mutex<HashMap<String, usize>> = Mutex::new(HashMap::new());
    mock.set_embeddings(move |text| {
        let mut v = vec![0.0f32; 256];
        if text.contains("grows at its end") || text.contains("sole way records enter") {
            v[0] = 1.0;
            v[1] = if text.contains("journal") { 0.1 } else { 0.0 };
        } else {
            let mut seen = seen.lock().unwrap();
            let next = seen.len() + 2;
            let i = *seen.entry(text.to_string()).or_insert(next);
            v[i % 256] = 1.0;
        }
        v
    });
}

fn config(mock: &Mock, embeddings: bool) -> String {
    let knowledge = if embeddings {
        "[knowledge]\nembeddings = \"mock/embed-small\"\n\n"
    } else {
        ""
    };
    format!(
        "{knowledge}[providers.mock]\nprotocol = \"openai\"\nbase_url = \"{}\"\nmax_retries = 0\n",
        mock.base_url(crate::support::mock::Proto::OpenAi)
    )
}

async fn analyse(p: &Project, names: &[&str]) -> Vec<Result<FileReport, AnalyzeError>> {
    let agents = Arc::new(load(p, &LoadOptions::default()));
    let registry = Arc::new(Registry::with_builtins(ProviderContext::default()));
    let s = Session::for_agent(
        p.clone(),
        agents,
        Config::load(p).unwrap(),
        registry,
        RunOptions::default(),
        "file-analyzer",
        "analyse",
    )
    .unwrap();
    let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    s.analyse_files(&names, "", &|_, _, _| {}).await.0
}

const A: &str = "# Log\n\nThe event log only ever grows at its end.\n";
const B: &str = "# Journal\n\nAppending is the sole way records enter the journal.\n";

#[tokio::test]
async fn analyze_file_reinforces_by_meaning_when_embeddings_are_configured() {
    for embeddings in [true, false] {
        let mock = Mock::start().await;
        embedder(&mock);
        let (_dir, p) = project(&[("a.md", A), ("b.md", B)], &config(&mock, embeddings));
        let reports = analyse(&p, &["a.md", "b.md"]).await;
        let b = reports[1].as_ref().expect("b.md analysed");
        assert_eq!(b.embeddings_error, None);
        let reinforced = b.outcome.as_ref().unwrap().notes_reinforced;
        let requests = mock.requests();
        if embeddings {
            assert_eq!(reinforced, 1, "{}", b.text);
            assert_eq!(requests.len(), 2, "one request per file: {requests:?}");
            assert_eq!(requests[0].path, "/v1/embeddings");
            assert_eq!(requests[0].body["model"], "embed-small");
            assert!(requests[1].body["input"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t.as_str().unwrap().contains("sole way records enter")));
            let store = Store::open(&p).unwrap();
            let hit = &store.recall("event log grows", None, None, 5).unwrap()[0];
            assert_eq!(hit.reinforced, 1);
            assert_eq!(hit.provenance.path, "a.md");
        } else {
            assert_eq!(reinforced, 0, "text similarity alone keeps them apart");
            assert!(requests.is_empty(), "no embeddings configured, no request");
        }
    }
}

#[tokio::test]
async fn a_failing_endpoint_is_reported_and_the_notes_are_still_stored() {
    let mock = Mock::start().await;
    mock.push(crate::support::mock::status(
        500,
        "{\"error\": {\"message\": \"embedding model not loaded\"}}",
    ));
    let (_dir, p) = project(&[("a.md", A)], &config(&mock, true));
    let reports = analyse(&p, &["a.md"]).await;
    let a = reports[0].as_ref().expect("the analysis survives");
    let error = a.embeddings_error.as_deref().expect("the failure is told");
    assert!(error.contains("mock/embed-small"), "{error}");
    assert!(error.contains("embedding model not loaded"), "{error}");
    assert!(a.text.contains("found by text similarity"), "{}", a.text);
    assert!(a.outcome.as_ref().unwrap().notes_new > 0);
    let store = Store::open(&p).unwrap();
    assert!(!store.recall("event log", None, None, 5).unwrap().is_empty());
    // The stored summary, which an unchanged-file hit returns, does not carry the warning.
    assert!(!store.sources().unwrap()[0].summary.contains("Embeddings"));

    // A setting that cannot work is reported the same way.
    let (_dir, p) = project(
        &[("a.md", A)],
        "[knowledge]\nembeddings = \"anthropic/claude\"\n",
    );
    let reports = analyse(&p, &["a.md"]).await;
    let a = reports[0].as_ref().unwrap();
    let error = a.embeddings_error.as_deref().unwrap();
    assert!(
        error.contains("not an OpenAI-compatible provider"),
        "{error}"
    );
}
